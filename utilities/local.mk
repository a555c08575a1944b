# Python tools and the incast demonstration.

DEMO_DIR = demo-results
# Arguments for daq-incast in "make demo"; its defaults are the ATLAS-like
# scenario of the README (30 ROS x 32 KiB into one DCM behind 200 Mbit/s).
# The modes: stock, credits and daqring on the DPDK switch, and the
# deep-buffer peer (a Linux bridge with deep FIFOs, the daqring's memory
# as limit), which daq-incast runs first.
DEMO_MODES ?= stock,credits,daqring,deep-fifo
DEMO_ARGS ?=

demo: all
	@mkdir -p $(DEMO_DIR)
	$(PYTHON3) utilities/daq-incast --json $(DEMO_DIR)/incast.json \
		--plot-dir $(DEMO_DIR) --log-dir $(DEMO_DIR)/logs \
		--modes $(DEMO_MODES) $(DEMO_ARGS)
	@echo "demo: results in $(DEMO_DIR)/ (incast.json, plots)"

# "make demo-fabric": the same incast through an emulated leaf-spine
# fabric (Documentation/topics/daq-incast.rst, "A Leaf-Spine Fabric"):
# every mode, and a leaf-spine link down and up again under load.
DEMO_FABRIC_DIR = demo-fabric-results
# The DCMs' rings share their host's link work-conservingly, their bursts
# bounded by its port's buffer (daq-incast.rst, "A Leaf-Spine Fabric").
DEMO_FABRIC_ARGS ?= --ros 12 --dcms 4 --spines 2 --events 150 \
	--failover 2/5 --modes stock,credits,daqring,daqring-unshaped \
	--ring-sharing shared --max-burst-bytes auto
# "make demo-fabric DEMO_FABRIC_PLANES=2": two planes (daq-incast.rst,
# "Two planes"), at 50 Mbit/s links: the limit of one plane at 100, what
# this machine's emulator carries with twice the switches (daq-bench's
# two-plane points).
DEMO_FABRIC_PLANES ?= 1
ifneq ($(DEMO_FABRIC_PLANES),1)
DEMO_FABRIC_ARGS += --planes $(DEMO_FABRIC_PLANES) --link-rate 50mbit
endif

demo-fabric: all
	@mkdir -p $(DEMO_FABRIC_DIR)
	@$(PYTHON3) utilities/daq-incast --topology fabric \
		--json $(DEMO_FABRIC_DIR)/incast.json \
		--plot-dir $(DEMO_FABRIC_DIR) --log-dir $(DEMO_FABRIC_DIR)/logs \
		$(DEMO_FABRIC_ARGS) > $(DEMO_FABRIC_DIR)/summary.txt; \
	rc=$$?; cat $(DEMO_FABRIC_DIR)/summary.txt; exit $$rc
	@echo "demo-fabric: results in $(DEMO_FABRIC_DIR)/ (summary.txt," \
		"incast.json, plots)"

CLEAN_LOCAL += $(DEMO_DIR) $(DEMO_FABRIC_DIR) tests/check-logs .pytest_cache
PHONY += demo demo-fabric

# "make sandbox": the built switch with DPDK in a private directory, a
# bridge br0 (datapath_type=netdev) with sink ports p1..p4, and a shell
# whose PATH and OVS_RUNDIR lead to it; everything is stopped and given
# back when the shell exits (utilities/ovs-daqring-sandbox --help; like
# OVS's own "make sandbox").  SANDBOX_ARGS: more options, e.g.
# "--ports 8" or "-- ovs-vsctl show" for a command instead of the shell.
# A source-tree tool, not installed: it runs the switch of ovs/.
SANDBOX_ARGS ?=

sandbox: all
	@$(PYTHON3) utilities/ovs-daqring-sandbox $(SANDBOX_ARGS)

PHONY += sandbox

# "make install" installs OVS (make -C ovs install) and, with
# "make install-tools" (no configuration needed; the RPM spec uses it),
# the Python tools: the executables, the ovs_daqring package into
# PYTHON_SITELIB, ovs-daqring-setup and the manual pages.  The installed
# executables find the package in PYTHON_SITELIB, which must be on the
# Python path: the default is the interpreter's own directory for the
# prefix (Debian: /usr/local/lib/python3.N/dist-packages for /usr/local).
prefix ?= /usr/local
bindir ?= $(prefix)/bin
sbindir ?= $(prefix)/sbin
mandir ?= $(prefix)/share/man
datadir ?= $(prefix)/share
PYTHON_SITELIB ?= $(shell $(PYTHON3) build-aux/python-sitelib $(prefix))
PY_TOOLS = ovs-daqctl daq-incast daq-bench

install-tools: man
	install -d $(DESTDIR)$(bindir) $(DESTDIR)$(sbindir)
	for t in $(PY_TOOLS); do \
	    install -p -m 0755 utilities/$$t $(DESTDIR)$(bindir)/$$t || exit 1; \
	done
	install -p -m 0755 rhel/usr_sbin_ovs-daqring-setup \
	    $(DESTDIR)$(sbindir)/ovs-daqring-setup
	install -p -m 0755 utilities/ovs-daqfabric-agent \
	    $(DESTDIR)$(sbindir)/ovs-daqfabric-agent
	install -p -m 0755 utilities/ovs-daqring-exporter \
	    $(DESTDIR)$(sbindir)/ovs-daqring-exporter
	for f in daqring-alerts.yml daqring-dashboard.json; do \
	    install -p -D -m 0644 utilities/prometheus/$$f \
	        $(DESTDIR)$(datadir)/ovs-daqring/prometheus/$$f || exit 1; \
	done
	cd python && find ovs_daqring -name '*.py' -o -name '*.ovsschema' | \
	LC_ALL=C sort | while read -r f; do \
	    install -p -D -m 0644 $$f $(DESTDIR)$(PYTHON_SITELIB)/$$f || exit 1; \
	done
	install -p -D -m 0644 python/ovs_daqring/fabric/daqfabric.ovsschema \
	    $(DESTDIR)$(datadir)/openvswitch/daqfabric.ovsschema
	for m in $(MAN_PAGES); do \
	    install -p -D -m 0644 $$m \
	        $(DESTDIR)$(mandir)/man$${m##*.}/$${m##*/} || exit 1; \
	done

install: all install-tools
	$(MAKE) -C $(OVS) install

PHONY += install install-tools
