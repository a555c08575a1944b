PATCHES = $(addprefix patches/,$(shell sed -e "s/\#.*//" patches/series 2>/dev/null)) \
	$(wildcard patches/[0-9]*/*.patch)

# Other pinned bases, built and tested from the same clone in base-BASE/
# (build-aux/base-tree): "make base-3.5" builds it, "make check-base-3.5"
# runs make check there (CHECK_PARTS and TESTSUITEFLAGS pass through;
# BASE_PYTEST_MARK, a pytest -m expression, instead of "every_base").
# The README's commands and ovs/ stay on the configured base (3.1 unless
# ./configure --with-ovs-base says otherwise).
$(addprefix base-,$(EXTRA_BASES)): base-%: FORCE
	@build-aux/base-tree $* all

$(addprefix check-base-,$(EXTRA_BASES)): check-base-%: FORCE
	@build-aux/base-tree $* check \
		PYTEST_MARK="$(or $(BASE_PYTEST_MARK),every_base)" \
		$(if $(CHECK_PARTS),CHECK_PARTS="$(CHECK_PARTS)") \
		$(if $(TESTSUITEFLAGS),TESTSUITEFLAGS="$(TESTSUITEFLAGS)") \
		$(if $(OVS_TESTSUITEFLAGS),OVS_TESTSUITEFLAGS="$(OVS_TESTSUITEFLAGS)")
