# Benchmarks (Documentation/topics/bench.rst).
#
# "make bench" builds (target all), makes an -O3 variant of the prepared and
# built tree in $(BENCH_O3_DIR) (a copy of ovs/ reconfigured with -O3; only
# ovs-vswitchd is built, and only again when ovs/'s ovs-vswitchd changes),
# then runs utilities/daq-bench, which writes $(BENCH_DIR)/bench.json and
# $(BENCH_DIR)/summary.md.  About 25 minutes on two cores, plus 3-5 for the
# first -O3 build.
#
# "make bench-quick" (or BENCH_QUICK=1) is the short version (about 6
# minutes); it uses an -O3 build only if an up-to-date one is already there.
#
#   BENCH_O3=0        skip the -O3 build and comparison (noted in the summary)
#   BENCH_DIR=DIR     results directory (default bench-results)
#   BENCH_ARGS=...    more daq-bench options, e.g. '--parts hop,scale',
#                     '--pmd-cpu-mask 0x4', '--doc Documentation/topics/
#                     bench-results.md' (see utilities/daq-bench --help)

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

bench: all $(if $(BENCH_WANT_O3),$(BENCH_O3_STAMP))
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
	set -x; \
	$(PYTHON3) utilities/daq-bench --out $(BENCH_DIR) \
	    $(if $(BENCH_QUICK),--quick) "$$o3" $(BENCH_ARGS)

bench-quick:
	@$(MAKE) bench BENCH_QUICK=1

# The -O3 variant: a copy of the prepared tree (same base, patches and
# overlay), cleaned and reconfigured with the same options but -O3.
$(BENCH_O3_STAMP): $(OVS)/vswitchd/ovs-vswitchd
	@echo "bench: building ovs-vswitchd with CFLAGS '$(BENCH_O3_CFLAGS)' in $(BENCH_O3_DIR) (log: $(BENCH_O3_DIR).log)"
	@rm -rf $(BENCH_O3_DIR) $(BENCH_O3_DIR).log
	@mkdir -p $(BENCH_DIR)
	@cp -a $(OVS) $(BENCH_O3_DIR)
	@( $(MAKE) -C $(BENCH_O3_DIR) clean && \
	  cd $(BENCH_O3_DIR) && \
	  ./configure --with-dpdk=shared --localstatedir=/var --sysconfdir=/etc \
		PYTHON3=$(PYTHON3) CFLAGS="$(BENCH_O3_CFLAGS)" \
		$(OVS_CONFIGURE_FLAGS) && \
	  $(MAKE) -j$(JOBS) vswitchd/ovs-vswitchd ) \
	    > $(BENCH_O3_DIR).log 2>&1 || { \
	    tail -20 $(BENCH_O3_DIR).log; \
	    echo "bench: the -O3 build failed (BENCH_O3=0 skips it)" >&2; \
	    exit 1; }
	@touch $@

PYTHON_SOURCES += utilities/daq-bench
CLEAN_LOCAL += $(BENCH_DIR)
PHONY += bench bench-quick
