"""Set-up shared by the pytest tests: DPDK memory for the tests that start
a switch of their own (test_ovs_daqctl's).

A fresh machine has no hugepages and no hugetlbfs mount.  As root, the
hugepages those switches need are reserved (and a hugetlbfs mounted if none
is) before the first test marked "machine" runs, and given back when the
session ends, with the same code daq-incast and daq-bench use for their
own runs (ovs_daqring.hugepages): a run of tests that need nothing of the
machine takes nothing of it.  daq-incast and daq-bench reserve what they
need themselves, so their end-to-end tests check that too.

The tests are laid out by what they test: tests/<package>/test_<module>.py
for a module of python/ovs_daqring/<package>/, tests/cmd/test_<program>.py
for an executable as a whole, tests/common/ for the modules the tools
share, tests/packaging/ for the RPMs, pins and manual pages.  Three markers
(pytest.ini) say what a file needs besides its own temporary directories,
processes and ephemeral ports:

  machine     it uses what the machine has once (hugepages, DPDK and its
              PMD's core, network namespaces, the RPM database, or checks
              what is left of those);
  every_base  it drives the base's own ovs-vswitchd, ovsdb-server or
              ovs-ofctl: "make check-base-BASE" runs these only
              (tests/local.mk), the others test only our Python;
  ovsdb_only  (with every_base) of the base's daemons, it drives only
              ovsdb-server (a fabric database cluster: Raft, locks),
              which only patch 0025 changes (test_rbac.py, not so
              marked, checks that on every base): CI runs it on the
              default base only (.ci/run), "make check-base-BASE" on
              every base;
  default_base_in_ci  (with every_base) it drives the base's
              ovs-vswitchd too, but checks only our control plane over
              it (the fabric agents' locks, reconnects, SSL, options,
              a node the map does not know): what of the base it meets
              the other every_base tests check on every base, so CI runs
              it on the default base only, as the system suite's incast
              tests so keyworded (.ci/run); "make check-base-BASE" runs
              it on every base.

With pytest-xdist (build-aux/run-checks runs "-n 2 --dist loadgroup"),
the tests marked "machine" stay one at a time, in order, on one worker;
the others run beside them on the other worker.  Only the worker that runs
the "machine" tests reserves the hugepages."""

import os
import shutil
import sys
import tempfile
from typing import Any, Iterator, List

import pytest

from ovs_daqring import hugepages
from ovs_daqring.process import Cleanup

# What the switches started by the tests ask DPDK for (dpdk-socket-mem).
SWITCH_HUGEPAGES_MB = 512


@pytest.fixture(scope="session")
def machine_hugepages() -> Iterator[None]:
    """The hugepages of the tests' switches, for the session: reserved
    once, at the first test that needs the machine, given back at its
    end."""
    cleanup = Cleanup()
    try:
        if os.geteuid() == 0:
            mount_dir = tempfile.mkdtemp(prefix="daq-pytest-hugepages.")
            cleanup.push("remove " + mount_dir,
                         lambda: shutil.rmtree(mount_dir, ignore_errors=True))
            why = hugepages.reserve(SWITCH_HUGEPAGES_MB, mount_dir, cleanup)
            if why is not None:
                sys.stderr.write("conftest: no hugepages for the tests' "
                                 "switches: %s\n" % why)
        yield
    finally:
        cleanup.run()


@pytest.fixture(autouse=True)
def _machine(request: Any) -> None:
    """Gives a test marked "machine" what the machine has for it."""
    if request.node.get_closest_marker("machine"):
        request.getfixturevalue("machine_hugepages")


# Before pytest-xdist's worker reads the marks (it names each test after
# its group there).  Without xdist, no mark (xdist registers it).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: Any, items: List[Any]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("machine"):
            item.add_marker(pytest.mark.xdist_group("machine"))
