# Manual pages, all from reStructuredText by one tool: docutils' rst2man
# (Debian and EL: python3-docutils).  Their sources are
# Documentation/ref/NAME.SECTION.rst; ovs-daqring(7) includes the text of
# Documentation/topics/daqring.rst.  OVS's own pages come from OVS's build.

RST2MAN ?= rst2man
MAN_PAGES = \
	Documentation/ref/ovs-daqctl.8 \
	Documentation/ref/ovs-daqfabric-agent.8 \
	Documentation/ref/ovs-daqring-exporter.8 \
	Documentation/ref/daq-incast.1 \
	Documentation/ref/daq-bench.1 \
	Documentation/ref/ovs-daqring-setup.8 \
	Documentation/ref/ovs-daqring.7

$(MAN_PAGES): %: %.rst
	$(RST2MAN) --strict $< $@.tmp && mv $@.tmp $@
Documentation/ref/ovs-daqring.7: Documentation/topics/daqring.rst

man: $(MAN_PAGES)
all: man

CLEAN_LOCAL += $(MAN_PAGES)
PHONY += man
