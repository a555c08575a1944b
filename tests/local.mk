# Tests.
#
# "make check" runs, and counts into one closing line:
#   1. our system testsuite (tests/system-daqring-*.at: the DPDK harness,
#      daqring ports, incast), as root, -j1;
#   2. the OVS regression tests of the areas our patches touch;
#   3. OVS's DPDK system testsuite;
#   4. pytest (tests/*/test_*.py, tests/conftest.py) and flake8 over our
#      Python.
# "make check-ovs" runs OVS's whole testsuite (an hour or more here).
#
# TESTSUITEFLAGS go to our suite (e.g. TESTSUITEFLAGS='-k daqring -v');
# OVS_TESTSUITEFLAGS to the OVS suites.  CHECK_PARTS selects parts, e.g.
# CHECK_PARTS='daqring pytest'.

# The patches change dpif-netdev's rx polling and output flushing, which
# every ofproto-dpif.at test goes through (with dummy ports), its EMC, and
# the port configuration that ofproto gives new ports (no-flood for
# daqrings).  Those tests mostly wait, so they run OVS_REGRESSION_JOBS at a
# time: about 4 minutes for the ~300 here.
#
# OVS_REGRESSION_TESTS="N..." runs only those tests (numbers in OVS's
# testsuite, as a failed run names them) instead of the areas' tests.
#
# OVS_REGRESSION_SET picks part of them: "pmd" the areas whose tests run
# dummy PMD threads (dpif-netdev.at, pmd.at: they wait for those threads
# to poll, so they want a CPU that is not busy elsewhere), "rest" the
# others, "all" (default) both.  CI runs both in the background beside
# another base's tests, "pmd" two at a time first (.ci/run).
OVS_REGRESSION_PMD_AREAS = \
	dpif-netdev.at \
	pmd.at
OVS_REGRESSION_REST_AREAS = \
	ofproto-dpif.at \
	'ovs-ofctl.at:tcp.flags' \
	'ofproto.at:mod-port' \
	ovsdb-rbac.at \
	ovsdb-lock.at
OVS_REGRESSION_SET ?= all
ifeq ($(OVS_REGRESSION_SET),pmd)
OVS_REGRESSION_AREAS = $(OVS_REGRESSION_PMD_AREAS)
else ifeq ($(OVS_REGRESSION_SET),rest)
OVS_REGRESSION_AREAS = $(OVS_REGRESSION_REST_AREAS)
else ifeq ($(OVS_REGRESSION_SET),all)
OVS_REGRESSION_AREAS = $(OVS_REGRESSION_PMD_AREAS) \
	$(OVS_REGRESSION_REST_AREAS)
else
$(error OVS_REGRESSION_SET must be all, pmd or rest, not '$(OVS_REGRESSION_SET)')
endif
OVS_REGRESSION_JOBS ?= 8
CHECK_PARTS ?= daqring ovs-regression ovs-dpdk pytest
PYTHON_SOURCES = utilities/daq-incast utilities/ovs-daqctl \
	utilities/ovs-daqfabric-agent utilities/ovs-daqring-sandbox \
	utilities/ovs-daqring-exporter \
	utilities/daq-bench build-aux/ovs-test-select build-aux/python-sitelib \
	build-aux/pytest-times \
	python/ovs_daqring \
	$(wildcard tests/*.py tests/*/*.py rhel/*.py)

# What runs on which base.  Every part that tests code the base changes
# runs on every base: our system tests (the provider and the patches, per
# base), OVS's DPDK suite, and the pytest files that drive this base's
# ovs-vswitchd, ovsdb-server or ovs-ofctl, marked "every_base"
# (pytest.ini, tests/conftest.py): "make check-base-BASE" passes
# PYTEST_MARK=every_base.  The other pytest files test only our Python and
# scripts, which are the same whatever the base, and flake8 likewise: they
# run on the default base only.  So do daq-incast's: its runs through a
# switch of the base (a fabric without DPDK, every mode but daqring) test
# the emulator; the base's switches carry the incast, through one switch
# and through a fabric, in the system suite's incast tests on every base.
# And ovs-daqctl's: what of it meets the base (its reconcile core with the
# base's Python IDL, ovsdb-server and ovs-vswitchd, DPDK daqrings and
# OpenFlow bundles) the fabric agent's tests drive on every base, and the
# daqrings themselves the system suite.  OVS's regression areas run on
# every base with "make check"; CI runs each on one base (.ci/run).  CI
# also leaves to the default base the system suite's incast tests
# keyworded default_base_in_ci and the pytest files and tests marked
# ovsdb_only or default_base_in_ci (.ci/run says why); "make
# check-base-BASE" runs them.
PYTEST_MARK ?=

check: all
	@JOBS=$(JOBS) PYTHON3=$(PYTHON3) \
	 PYTEST_MARK="$(PYTEST_MARK)" \
	 TESTSUITEFLAGS="$(TESTSUITEFLAGS)" \
	 OVS_TESTSUITEFLAGS="$(OVS_TESTSUITEFLAGS)" \
	 OVS_REGRESSION_AREAS="$(OVS_REGRESSION_AREAS)" \
	 OVS_REGRESSION_JOBS="$(OVS_REGRESSION_JOBS)" \
	 OVS_REGRESSION_TESTS="$(OVS_REGRESSION_TESTS)" \
	 PYTHON_SOURCES="$(PYTHON_SOURCES)" \
	 build-aux/run-checks $(CHECK_PARTS)

check-daqring: all
	@$(MAKE) CHECK_PARTS=daqring check

check-ovs: all
	$(MAKE) -C $(OVS) -j$(JOBS) check \
		TESTSUITEFLAGS="-j$(JOBS) $(OVS_TESTSUITEFLAGS)"

checkpatch: prepare
	$(PYTHON3) $(OVS)/utilities/checkpatch.py -q -f \
		$(wildcard lib/*.c lib/*.h tests/test-*.c)
	@for p in $(PATCHES); do \
	    grep -q '^--- ' $$p || continue; \
	    echo "checkpatch: $$p"; \
	    $(PYTHON3) $(OVS)/utilities/checkpatch.py -q $$p || exit 1; \
	done

# "make check-sanitizers": our system suite (TESTSUITEFLAGS apply) run on
# a copy of the tree built with AddressSanitizer and UndefinedBehavior-
# Sanitizer (SAN_DIR; rebuilt when ovs-vswitchd is newer; the test files
# are copied in at every run).  OVS's test
# macros fail a test whose daemons wrote an asan.* or ubsan.* report
# (tests/atlocal sets ASAN_OPTIONS and UBSAN_OPTIONS).  The DPDK libraries
# are Debian's, not instrumented.  Not part of make check: the build and
# the slower run add about 20 minutes on two cores.
SAN_DIR = build-sanitizers
SAN_CFLAGS = $(DAQ_OPT_CFLAGS) -fsanitize=address,undefined \
	-fno-omit-frame-pointer -fno-common
$(SAN_DIR)/.built: $(OVS)/vswitchd/ovs-vswitchd
	@echo "check-sanitizers: building $(SAN_DIR) with CFLAGS '$(SAN_CFLAGS)' (log: $(SAN_DIR).log)"
	@JOBS=$(JOBS) MAKE=$(MAKE) build-aux/build-variant $(OVS) \
	    $(SAN_DIR) '$(SAN_CFLAGS)'
	@touch $@

check-sanitizers: all $(SAN_DIR)/.built
	@cp -p $(OVS)/tests/system-daqring*.at $(OVS)/tests/daqring-units.at \
	    $(SAN_DIR)/tests/
	@OVS_TREE=$(SAN_DIR) TESTSUITEFLAGS="$(TESTSUITEFLAGS)" \
	 build-aux/run-checks daqring

# "make check-valgrind": ovs-vswitchd under valgrind (DPDK --no-huge) while
# ovs-daqctl creates, changes and removes daqrings (build-aux/valgrind-
# daqctl); fails on invalid accesses, uninitialised memory or a leak
# through daqring code.  About a minute.
check-valgrind: all
	@PYTHON3=$(PYTHON3) build-aux/valgrind-daqctl

# "make check-soak": a bounded incast run (daq-incast, daqring mode) with
# ring resizes, reshapes, add/delete of other DCMs' daqrings and
# ovs-daqctl apply of changed maps while traffic flows (tests/soak.py);
# fails on a packet the counters do not explain, mbuf or RSS growth, a
# failed change or an incomplete event.  SOAK_SECONDS (30..600, default
# 600) bounds it; results in tests/check-logs/soak.json.  Not part of
# make check.  Starts a DPDK switch: run it under the systest lock.
SOAK_SECONDS ?= 600
check-soak: all
	@SOAK_SECONDS=$(SOAK_SECONDS) $(PYTHON3) tests/soak.py

CLEAN_LOCAL += $(SAN_DIR) $(SAN_DIR).log
PHONY += check check-daqring check-ovs check-sanitizers check-soak \
	check-valgrind checkpatch
