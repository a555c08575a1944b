# RPM packaging (Documentation/intro/install/rpm.rst).
#
# "make rpm" builds binary and source RPMs for EL9 with rpmbuild in
# $(RPM_TOPDIR), always from base 3.5 (Open vSwitch 3.5.0, DPDK 24.11 linked
# statically), whatever base this tree is configured with:
#   SOURCES/ovs-daqring-VERSION-RELEASE.tar.gz    Source0: this tree (its
#       tracked files and untracked ones that are not ignored, as they are
#       in the work tree), made reproducibly;
#   SOURCES/openvswitch-source_DEBVERSION_all.deb Source1: the pinned OVS
#       base (Debian 13), checked by sha256 here and again in %prep;
#   SOURCES/libdpdk-dev_DEBVERSION_amd64.deb      Source2: the pinned DPDK
#       (Debian 13's static archives), likewise;
#   SPECS/ovs-daqring.spec   from rhel/ovs-daqring.spec.in: version, pins,
#       DPDK drivers, tools present, test areas and a %changelog from NEWS.
# "make srpm" makes only the source RPM (rpmbuild -bs), which rebuilds on
# EL9 with mock (Documentation/intro/install/rpm.rst).
# Each is rewritten only when its content changes, so a second "make rpm"
# with nothing changed does not rebuild.  "make check-rpm" builds if needed
# and runs tests/packaging/test_rpm.py on the result.
#
# On Debian hosts rpmbuild cannot see the installed Debian packages as RPM
# dependencies, so BuildRequires are not checked (rpmbuild --nodeps); "make
# deps" installs the Debian equivalents.  RPMBUILD_FLAGS passes more options
# (e.g. '--with check', or "--define 'daq_extra_cflags -O3'").

RPM_TOPDIR ?= $(CURDIR)/rpmbuild
RPMBUILD ?= rpmbuild
RPMBUILD_FLAGS ?=
RPM_NAME = ovs-daqring
RPM_VERSION = $(DAQ_RPM_BASE_VERSION)
RPM_TARNAME = $(RPM_NAME)-$(RPM_VERSION)-$(DAQ_RELEASE)
RPM_SOURCE0 = $(RPM_TOPDIR)/SOURCES/$(RPM_TARNAME).tar.gz
# Source1 and Source2 are named by the versions used, which are the pins
# or, once Debian no longer serves a pin, the newest of its upstream
# series (build-aux/fetch-deb): RPM_DEBS records which, and their sha256.
RPM_DEBS = $(RPM_TOPDIR)/SOURCES/debs.pins
RPM_SOURCES = $(RPM_SOURCE0) $(RPM_DEBS)
RPM_SPEC = $(RPM_TOPDIR)/SPECS/$(RPM_NAME).spec
RPM_STAMP = $(RPM_TOPDIR)/.rpm-built
RPM_NODEPS = $(if $(wildcard /etc/debian_version),--nodeps)
# %changelog entries are signed by the author of the last commit.
RPM_CHANGELOG_WHO ?= $(or $(shell git log -1 --format='%an <%ae>' 2>/dev/null),ovs-daqring maintainers <ovs-daqring@localhost>)

rpm: $(RPM_STAMP)
	@ls -l $(RPM_TOPDIR)/RPMS/*/$(RPM_NAME)*-$(RPM_VERSION)-$(DAQ_RELEASE)*.rpm \
	    $(RPM_TOPDIR)/RPMS/*/python3-$(RPM_NAME)-$(RPM_VERSION)-$(DAQ_RELEASE)*.rpm \
	    $(RPM_TOPDIR)/SRPMS/$(RPM_NAME)-$(RPM_VERSION)-$(DAQ_RELEASE)*.src.rpm

srpm: $(RPM_SOURCES) $(RPM_SPEC)
	$(RPMBUILD) -bs $(RPM_NODEPS) --define "_topdir $(RPM_TOPDIR)" \
	    $(RPMBUILD_FLAGS) $(RPM_SPEC)

$(RPM_STAMP): $(RPM_SOURCES) $(RPM_SPEC)
	@command -v $(RPMBUILD) >/dev/null || { \
	    echo "rpm: $(RPMBUILD) not found (Debian package rpm; run 'make deps')" >&2; \
	    exit 1; }
	@if [ -n "$(RPM_NODEPS)" ]; then \
	    echo "rpm: Debian host: rpmbuild --nodeps (BuildRequires are RPM names; 'make deps' installs the Debian packages)"; \
	    for t in sphinx-build:python3-sphinx autoreconf:autoconf \
	             pkg-config:pkg-config patch:patch find-debuginfo:debugedit \
	             eu-strip:elfutils cpio:cpio; do \
	        command -v $${t%%:*} >/dev/null || { \
	            echo "rpm: $${t%%:*} not found (Debian package $${t#*:})" >&2; \
	            exit 1; }; \
	    done; \
	fi
	rm -f $@
	$(RPMBUILD) -ba $(RPM_NODEPS) \
	    --define "_topdir $(RPM_TOPDIR)" \
	    --define "_smp_mflags -j$(JOBS)" \
	    $(RPMBUILD_FLAGS) $(RPM_SPEC)
	touch $@

# Source0, rewritten only if its content changed.  Reproducible: sorted,
# owned by root, every file dated by the last commit, gzip without a name
# or time stamp.
$(RPM_SOURCE0): FORCE
	@git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "rpm: Source0 is made with git; this is not a git work tree" >&2; exit 1; }
	@if [ -n "$$(git status --porcelain --untracked-files=no)" ]; then \
	    echo "rpm: warning: uncommitted changes: Source0 includes them"; fi
	@mkdir -p $(RPM_TOPDIR)/SOURCES
	@git ls-files -z --cached --others --exclude-standard \
	    | LC_ALL=C sort -z | xargs -0 -r sh -c 'for f; do [ -f "$$f" ] && printf "%s\0" "$$f"; done' sh \
	    | LC_ALL=C tar --null -T - --sort=name --owner=0 --group=0 --numeric-owner \
	        --mtime="@$$(git log -1 --format=%ct)" \
	        --transform='s,^,$(RPM_TARNAME)/,' -cf - \
	    | gzip -n -9 > $(RPM_SOURCE0).tmp
	@if cmp -s $(RPM_SOURCE0).tmp $(RPM_SOURCE0); then rm -f $(RPM_SOURCE0).tmp; \
	 else mv $(RPM_SOURCE0).tmp $(RPM_SOURCE0); echo "rpm: wrote $(RPM_SOURCE0)"; fi

# Source1 and Source2: base 3.5's pinned Debian 13 packages, fetched into
# the machine's cache by build-aux/fetch-deb (which checks the sha256, or
# takes the newest of the series from the signed index and says so), and
# copied under the name of the version used.
$(RPM_DEBS): config.mk
	@mkdir -p $(@D)
	set -e; \
	ovs=$$(build-aux/fetch-deb $(DAQ_RPM_OVS_DEB_PACKAGE) \
	    $(DAQ_RPM_OVS_DEB_VERSION) $(DAQ_RPM_OVS_SHA256)); \
	dpdk=$$(build-aux/fetch-deb $(DAQ_RPM_DPDK_DEB_PACKAGE) \
	    $(DAQ_RPM_DPDK_DEB_VERSION) $(DAQ_RPM_DPDK_SHA256)); \
	ov=$$(dpkg-deb -f "$$ovs" Version); dv=$$(dpkg-deb -f "$$dpdk" Version); \
	rm -f $(@D)/$(DAQ_RPM_OVS_DEB_PACKAGE)_*_all.deb \
	    $(@D)/$(DAQ_RPM_DPDK_DEB_PACKAGE)_*_amd64.deb; \
	cp "$$ovs" $(@D)/$(DAQ_RPM_OVS_DEB_PACKAGE)_$${ov}_all.deb; \
	cp "$$dpdk" $(@D)/$(DAQ_RPM_DPDK_DEB_PACKAGE)_$${dv}_amd64.deb; \
	{ echo "ovs_version=$$ov"; \
	  echo "ovs_sha256=$$(sha256sum "$$ovs" | cut -d' ' -f1)"; \
	  echo "dpdk_version=$$dv"; \
	  echo "dpdk_sha256=$$(sha256sum "$$dpdk" | cut -d' ' -f1)"; } > $@.tmp
	mv $@.tmp $@

# The spec, rewritten only if its content changed.
$(RPM_SPEC): $(RPM_DEBS) FORCE
	@mkdir -p $(RPM_TOPDIR)/SPECS
	@. $(RPM_DEBS) && \
	 sed -e 's|@DAQ_BASE_VERSION@|$(RPM_VERSION)|g' \
	     -e 's|@DAQ_RELEASE@|$(DAQ_RELEASE)|g' \
	     -e 's|@DAQ_PIN_DEB_PACKAGE@|$(DAQ_RPM_OVS_DEB_PACKAGE)|g' \
	     -e "s|@DAQ_PIN_DEB_VERSION@|$$ovs_version|g" \
	     -e "s|@DAQ_PIN_SHA256@|$$ovs_sha256|g" \
	     -e 's|@DAQ_DPDK_DEB_PACKAGE@|$(DAQ_RPM_DPDK_DEB_PACKAGE)|g' \
	     -e "s|@DAQ_DPDK_DEB_VERSION@|$$dpdk_version|g" \
	     -e "s|@DAQ_DPDK_SHA256@|$$dpdk_sha256|g" \
	     -e 's|@DAQ_DPDK_DRIVERS@|$(DAQ_RPM_DPDK_DRIVERS)|g' \
	     -e "s#@OVS_REGRESSION_AREAS@#$(OVS_REGRESSION_AREAS)#g" \
	     rhel/$(RPM_NAME).spec.in > $(RPM_SPEC).tmp
	@$(PYTHON3) rhel/news2changelog.py NEWS "$(RPM_CHANGELOG_WHO)" \
	    "$$(git log -1 --format=%cd --date=short 2>/dev/null || date +%F)" \
	    $(RPM_VERSION)-$(DAQ_RELEASE) >> $(RPM_SPEC).tmp
	@if grep -n '@[A-Z_0-9]*@' $(RPM_SPEC).tmp; then \
	    echo "rpm: unsubstituted variables in the spec" >&2; exit 1; fi
	@if cmp -s $(RPM_SPEC).tmp $(RPM_SPEC); then rm -f $(RPM_SPEC).tmp; \
	 else mv $(RPM_SPEC).tmp $(RPM_SPEC); echo "rpm: wrote $(RPM_SPEC)"; fi

# The Python tools are checked with a Python 3.9 like EL9's /usr/bin/python3:
# this machine's pyenv one (DAQ_PYTHON39 overrides); without it the check
# fails, it is not skipped.
DAQ_PYTHON39 ?= /root/.pyenv/versions/3.9.18/bin/python3.9
check-rpm: rpm
	DAQ_RPM_DIR=$(RPM_TOPDIR) DAQ_PYTHON39=$(DAQ_PYTHON39) \
	    $(PYTHON3) -m pytest -v -rs tests/packaging/test_rpm.py

# Just the sources and the spec (rpmbuild -bs or a build elsewhere).
rpm-sources: $(RPM_SOURCES) $(RPM_SPEC)

rpm-clean:
	rm -rf $(RPM_TOPDIR)

FORCE:

PHONY += rpm srpm rpm-sources check-rpm rpm-clean
