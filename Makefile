# ovs-daqring: top-level build driver.
#
# The OVS tree in ovs/ is prepared from the pinned base (see configure.ac),
# the patch series in patches/ and our real files (lib/, tests/,
# vswitchd-overrides/), then built with its own build system.  The README's
# two commands, "make demo" and "make check", work on a fresh machine: they
# install missing Debian packages and configure with defaults.
#
# Each directory owns its part of the build in a fragment (local.mk)
# included at the end, as OVN does with its automake.mk files.

SHELL = /bin/bash
.DEFAULT_GOAL := all
MAKEFLAGS += --no-print-directory

# Goals that must work before (or without) configuration.
# The other pinned bases, built in base-BASE/ (build-aux/local.mk).
EXTRA_BASES = 3.5 4.0
NOCONFIG_GOALS = deps clean distclean help man install-tools \
	$(addprefix base-,$(EXTRA_BASES)) $(addprefix check-base-,$(EXTRA_BASES))
# OVS_SOURCE=DIR in the environment or on the command line selects an
# upstream OVS v3.1.x tree instead of the pinned tarball; when it differs
# from the configured one, configure runs again.
REQUESTED_OVS_SOURCE := $(OVS_SOURCE)
ifeq ($(filter-out $(NOCONFIG_GOALS),$(or $(MAKECMDGOALS),all)),)
else
-include config.mk
endif
ifneq ($(REQUESTED_OVS_SOURCE),)
ifneq ($(abspath $(REQUESTED_OVS_SOURCE)),$(OVS_SOURCE))
CONFIGURE_FLAGS += --with-ovs-source=$(abspath $(REQUESTED_OVS_SOURCE))
config.mk: FORCE
endif
endif

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON3 ?= /usr/bin/python3
OVS = ovs
OVS_STATE = $(OVS)/.daqring
export DAQ_BASE OVS_BASE_KIND OVS_BASE_ID OVS_BASE_DESC OVS_SOURCE OVS_TARBALL OVS_DEB \
	PATCH PYTHON3

# Lists the fragments add to.
CHECK_TARGETS =
CLEAN_LOCAL =
PHONY = all build deps help prepare ovs-configure check clean distclean

help:
	@echo "ovs-daqring $(PACKAGE_VERSION)"
	@echo "  make deps        install missing Debian packages (root)"
	@echo "  make             prepare ovs/ and build it"
	@echo "  make demo        incast demo: stock, credits, daqring, deep FIFO (root)"
	@echo "  make sandbox     the built switch, bridge br0 and a shell to try it (root)"
	@echo "  make demo-fabric the incast through a leaf-spine fabric (root)"
	@echo "  make check       our tests, OVS regressions, pytest (root)"
	@echo "  make check-ovs   OVS's full testsuite (an hour or more)"
	@echo "  make check-soak  incast soak with churn (SOAK_SECONDS, max 600; root)"
	@echo "  make checkpatch  OVS checkpatch over our C files and patches"
	@echo "  make man         the manual pages (Documentation/ref/)"
	@echo "  make install     OVS, the Python tools and the manual pages"
	@echo "  make bench       benchmarks, results in bench-results/ (bench-quick: ~4 min)"
	@echo "  make bench-fabric the fabric's scale, 32 switches (bench-results/fabric.md)"
	@echo "  make rpm         binary and source RPMs (make check-rpm: verify them)"

deps:
	@build-aux/install-deps

configure: configure.ac acinclude.m4 | deps
	./boot.sh

config.mk: configure config.mk.in | deps
	./configure $(CONFIGURE_FLAGS)

# Stamps: the base is extracted once per base id; the series is applied
# incrementally; the overlay copies only changed files.
prepare: $(OVS)/Makefile
	@build-aux/prepare-ovs all

$(OVS)/Makefile: config.mk
	@build-aux/prepare-ovs all
	cd $(OVS) && $(AUTORECONF) --install --force
	cd $(OVS) && $(if $(DAQ_DPDK_PKG_CONFIG_PATH),PKG_CONFIG_PATH=$(DAQ_DPDK_PKG_CONFIG_PATH)) \
		./configure --with-dpdk=$(or $(DAQ_DPDK_MODE),shared) \
		--localstatedir=/var --sysconfdir=/etc \
		PYTHON3=$(PYTHON3) CFLAGS="$(DAQ_OPT_CFLAGS)" \
		$(OVS_CONFIGURE_FLAGS)

ovs-configure: $(OVS)/Makefile

build all: prepare
	$(MAKE) -C $(OVS) -j$(JOBS)

clean:
	if [ -f $(OVS)/Makefile ]; then $(MAKE) -C $(OVS) clean; fi
	rm -rf $(CLEAN_LOCAL)
	find python tests -name __pycache__ -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(OVS) .ovs.tmp $(addprefix base-,$(EXTRA_BASES)) \
		config.mk config.log config.status configure \
		autom4te.cache

include build-aux/local.mk
include tests/local.mk
include utilities/local.mk
include Documentation/local.mk
include rhel/local.mk
include bench/local.mk

FORCE:
.PHONY: $(PHONY) FORCE
