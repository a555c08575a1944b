# Benchmarks (Documentation/topics/bench.rst).
#
# "make bench" builds (target all) and two more ovs-vswitchd binaries to
# compare with, each only when missing or out of date:
#   $(BENCH_O3_DIR)    a copy of ovs/ reconfigured with -O3 (optimisation);
#   $(BENCH_BASE_DIR)  the pinned base tarball, unpatched, configured like
#                      ovs/ (what the patches alone cost);
# then runs utilities/daq-bench, which writes $(BENCH_DIR)/bench.json and
# $(BENCH_DIR)/summary.md.  About 11 minutes on two cores, plus about 6 for
# the two extra builds the first time.
#
# "make bench-quick" (or BENCH_QUICK=1) is the short version (about 4
# minutes); it uses the extra builds only if up-to-date ones are there.
#
#   BENCH_O3=0        skip the -O3 build and comparison (noted in the summary)
#   BENCH_BASE=0      skip the unpatched base build and comparison
#   BENCH_DIR=DIR     results directory (default bench-results)
#   BENCH_ARGS=...    more daq-bench options, e.g. '--parts hop,scale',
#                     '--pmd-cpu-mask 0x4', '--doc /tmp/bench-summary.md'
#                     (a copy of the summary: it replaces that file, so
#                     not Documentation/topics/bench-results.md, whose
#                     figures are kept by hand; see utilities/daq-bench
#                     --help)

BENCH_DIR ?= bench-results
BENCH_O3 ?= 1
BENCH_QUICK ?=
BENCH_ARGS ?=
BENCH_O3_DIR = $(BENCH_DIR)/build-O3
BENCH_O3_STAMP = $(BENCH_O3_DIR)/.built
# The default CFLAGS with the optimisation level replaced by -O3.
BENCH_O3_CFLAGS = $(strip $(if $(filter -O%,$(DAQ_OPT_CFLAGS)), \
	$(patsubst -O%,-O3,$(DAQ_OPT_CFLAGS)),$(DAQ_OPT_CFLAGS) -O3))
BENCH_DEFAULT_IS_O3 = $(filter -O3,$(lastword $(filter -O%,$(DAQ_OPT_CFLAGS))))
BENCH_WANT_O3 = $(and $(filter 1,$(BENCH_O3)),$(if $(BENCH_QUICK),,1), \
	$(if $(BENCH_DEFAULT_IS_O3),,1))
BENCH_BASE ?= 1
BENCH_BASE_DIR = $(BENCH_DIR)/build-base
BENCH_BASE_STAMP = $(BENCH_BASE_DIR)/.built
BENCH_WANT_BASE = $(and $(filter 1,$(BENCH_BASE)),$(if $(BENCH_QUICK),,1), \
	$(filter tarball deb,$(OVS_BASE_KIND)))

bench: all $(if $(BENCH_WANT_O3),$(BENCH_O3_STAMP)) \
	$(if $(BENCH_WANT_BASE),$(BENCH_BASE_STAMP))
	@if [ "$(BENCH_O3)" != 1 ]; then \
	    o3="--o3-note=skipped (BENCH_O3=$(BENCH_O3))"; \
	elif [ -n "$(BENCH_DEFAULT_IS_O3)" ]; then \
	    o3="--o3-note=skipped: the default build is already -O3 ($(DAQ_OPT_CFLAGS))"; \
	elif [ -f $(BENCH_O3_STAMP) ] && \
	     [ ! $(OVS)/vswitchd/ovs-vswitchd -nt $(BENCH_O3_STAMP) ]; then \
	    o3="--o3-build=$(BENCH_O3_DIR)"; \
	else \
	    o3="--o3-note=skipped in the quick run (no up-to-date -O3 build in $(BENCH_O3_DIR); 'make bench' makes one)"; \
	fi; \
	if [ "$(BENCH_BASE)" != 1 ]; then \
	    base="--base-note=skipped (BENCH_BASE=$(BENCH_BASE))"; \
	elif [ "$(OVS_BASE_KIND)" = source ]; then \
	    base="--base-note=skipped: the base is a source tree, not the pinned tarball"; \
	elif [ -f $(BENCH_BASE_STAMP) ] && \
	     [ ! $(or $(OVS_TARBALL),$(OVS_DEB)) -nt $(BENCH_BASE_STAMP) ]; then \
	    base="--base-build=$(BENCH_BASE_DIR)"; \
	else \
	    base="--base-note=skipped in the quick run (no base build in $(BENCH_BASE_DIR); 'make bench' makes one)"; \
	fi; \
	set -x; \
	$(PYTHON3) utilities/daq-bench --out $(BENCH_DIR) \
	    $(if $(BENCH_QUICK),--quick) "$$o3" "$$base" $(BENCH_ARGS)

bench-quick:
	@$(MAKE) bench BENCH_QUICK=1

# "make bench-fabric": the fabric's scale (Documentation/topics/bench.rst,
# "The Fabric's Scale"): 32 switches, 2048 DCMs, per-node convergence
# times from an empty fabric, for a one-DCM change and after a link
# failure; $(BENCH_DIR)/fabric.json and fabric.md.  About 5 minutes here.
#   BENCH_FABRIC_ARGS=...  more options, e.g. '--fabric-runs 3' or a
#                          smaller fabric: '--fabric-leaves 2
#                          --fabric-dcms 128' (utilities/daq-bench --help)
BENCH_FABRIC_ARGS ?=

bench-fabric: all
	$(PYTHON3) utilities/daq-bench --fabric --out $(BENCH_DIR) \
	    $(BENCH_FABRIC_ARGS)

# The -O3 variant: a copy of the prepared tree (same base, patches and
# overlay) reconfigured with -O3 (build-aux/build-variant); only
# ovs-vswitchd is built.
$(BENCH_O3_STAMP): $(OVS)/vswitchd/ovs-vswitchd
	@echo "bench: building ovs-vswitchd with CFLAGS '$(BENCH_O3_CFLAGS)' in $(BENCH_O3_DIR) (log: $(BENCH_O3_DIR).log)"
	@JOBS=$(JOBS) MAKE=$(MAKE) build-aux/build-variant $(OVS) \
	    $(BENCH_O3_DIR) '$(BENCH_O3_CFLAGS)' vswitchd/ovs-vswitchd || { \
	    echo "bench: the -O3 build failed (BENCH_O3=0 skips it)" >&2; \
	    exit 1; }
	@touch $@

# The unpatched base: the pinned tarball (base 3.5: the tree of the pinned
# .deb) as it is, configured like ovs/ (config.status --config keeps
# PKG_CONFIG_PATH, so base 3.5's static DPDK is found again).
# It depends on the tarball only: a changed configuration of ovs/ does not
# rebuild it (rm -rf $(BENCH_BASE_DIR) does).
$(BENCH_BASE_STAMP): $(or $(OVS_TARBALL),$(OVS_DEB)) | $(OVS)/Makefile
	@echo "bench: building the unpatched base in $(BENCH_BASE_DIR) (log: $(BENCH_BASE_DIR).log)"
	@rm -rf $(BENCH_BASE_DIR) $(BENCH_BASE_DIR).log $(BENCH_BASE_DIR).tmp
	@mkdir -p $(BENCH_BASE_DIR).tmp
	@( if [ -n "$(OVS_DEB)" ]; then \
	      dpkg-deb -x $(OVS_DEB) $(BENCH_BASE_DIR).tmp/deb && \
	      mv $(BENCH_BASE_DIR).tmp/deb/usr/src/openvswitch \
	         $(BENCH_BASE_DIR).tmp/ && \
	      rm -rf $(BENCH_BASE_DIR).tmp/deb; \
	  else \
	      tar -C $(BENCH_BASE_DIR).tmp -xzf $(OVS_TARBALL); \
	  fi && \
	  mv $(BENCH_BASE_DIR).tmp/* $(BENCH_BASE_DIR) && \
	  rmdir $(BENCH_BASE_DIR).tmp && \
	  args=$$(cd $(OVS) && ./config.status --config) && \
	  cd $(BENCH_BASE_DIR) && \
	  echo "configure $$args" && eval "./configure $$args" && \
	  $(MAKE) -j$(JOBS) ) > $(BENCH_BASE_DIR).log 2>&1 || { \
	    tail -20 $(BENCH_BASE_DIR).log; \
	    echo "bench: the base build failed (BENCH_BASE=0 skips it)" >&2; \
	    exit 1; }
	@touch $@

CLEAN_LOCAL += $(BENCH_DIR)
PHONY += bench bench-quick bench-fabric
