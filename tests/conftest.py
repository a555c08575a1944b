"""Set-up shared by the pytest tests: DPDK memory for the tests that start
a switch of their own (test_ovs_daqctl's).

A fresh machine has no hugepages and no hugetlbfs mount.  As root, the
hugepages those switches need are reserved (and a hugetlbfs mounted if none
is) before the tests are collected, and given back when pytest ends, with
the same code daq-incast and daq-bench use for their own runs
(ovs_daqring.hugepages).  daq-incast and daq-bench reserve what they
need themselves, so their end-to-end tests check that too.

With pytest-xdist (build-aux/run-checks runs "-n 2 --dist loadgroup"),
the tests that use what the machine has once (hugepages, DPDK and its
PMD's core, network namespaces, the RPM database, or that check what is
left of those) stay one at a time, in order, on one worker: every file
but MACHINE_FREE's.  Those files need only their own temporary
directories, processes and ephemeral ports, and run beside them on the
other worker.  Only the controller reserves the hugepages."""

import os
import shutil
import sys
import tempfile
from typing import Any, List

import pytest

from ovs_daqring import hugepages
from ovs_daqring.process import Cleanup

# What the switches started by the tests ask DPDK for (dpdk-socket-mem).
SWITCH_HUGEPAGES_MB = 512

# Test files that touch nothing of the machine's but their own temporary
# directories, processes (ovsdb-servers, agents without a switch) and
# ephemeral ports.
MACHINE_FREE = {
    "test_daq_bench_fabric.py", "test_daqctl_fuzz.py",
    "test_executables.py", "test_fabric_cluster.py",
    "test_fabric_condmon.py", "test_fabric_groups.py",
    "test_fabric_hostnet.py", "test_fabric_idle.py",
    "test_fabric_planner.py", "test_man.py",
    "test_pins.py",
}

_cleanup = Cleanup()


def pytest_configure(config: Any) -> None:
    if os.geteuid() != 0 or hasattr(config, "workerinput"):
        return
    mount_dir = tempfile.mkdtemp(prefix="daq-pytest-hugepages.")
    _cleanup.push("remove " + mount_dir,
                  lambda: shutil.rmtree(mount_dir, ignore_errors=True))
    why = hugepages.reserve(SWITCH_HUGEPAGES_MB, mount_dir, _cleanup)
    if why is not None:
        sys.stderr.write("conftest: no hugepages for the tests' switches: "
                         "%s\n" % why)


def pytest_unconfigure(config: Any) -> None:
    _cleanup.run()


# Before pytest-xdist's worker reads the marks (it names each test after
# its group there).  Without xdist, no mark (xdist registers it).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: Any, items: List[Any]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.path.name not in MACHINE_FREE:
            item.add_marker(pytest.mark.xdist_group("machine"))
