"""Set-up shared by the pytest tests: DPDK memory for the tests that start
a switch of their own (test_ovs_daqctl's).

A fresh machine has no hugepages and no hugetlbfs mount.  As root, the
hugepages those switches need are reserved (and a hugetlbfs mounted if none
is) before the tests are collected, and given back when pytest ends, with
the same code daq-incast and daq-bench use for their own runs
(ovs_daqring.hugepages).  daq-incast and daq-bench reserve what they
need themselves, so their end-to-end tests check that too."""

import os
import shutil
import sys
import tempfile
from typing import Any

from ovs_daqring import hugepages
from ovs_daqring.process import Cleanup

# What the switches started by the tests ask DPDK for (dpdk-socket-mem).
SWITCH_HUGEPAGES_MB = 512

_cleanup = Cleanup()


def pytest_configure(config: Any) -> None:
    if os.geteuid() != 0:
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
