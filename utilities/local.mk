# Python tools and the incast demonstration.

DEMO_DIR = demo-results
# Arguments for daq-incast in "make demo"; its defaults are the ATLAS-like
# scenario of the README (30 ROS x 32 KiB into one DCM behind 200 Mbit/s).
DEMO_ARGS ?=

demo: all
	@mkdir -p $(DEMO_DIR)
	$(PYTHON3) utilities/daq-incast --json $(DEMO_DIR)/incast.json \
		--plot-dir $(DEMO_DIR) --log-dir $(DEMO_DIR)/logs $(DEMO_ARGS)
	@echo "demo: results in $(DEMO_DIR)/ (incast.json, plots)"

CLEAN_LOCAL += $(DEMO_DIR) tests/check-logs .pytest_cache
PHONY += demo

# Man pages of the Python tools, from their reStructuredText sources.
MAN_PAGES = utilities/ovs-daqctl.8
utilities/%.8: utilities/%.8.rst
	rst2man --strict $< $@.tmp && mv $@.tmp $@

all: $(MAN_PAGES)
CLEAN_LOCAL += $(MAN_PAGES)
