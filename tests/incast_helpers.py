"""Helpers shared by the pytest files of daq-incast's options (not a test
file itself)."""

import argparse

from ovs_daqring.hosts import HostInfo
from ovs_daqring.incast import config, options, validation


def cfg(*argv: str) -> config.Config:
    """daq-incast's configuration for ARGV on a root host with 2 CPUs and
    hugepages, without looking at the machine it runs on."""
    h = HostInfo(is_root=True, cpus=[0, 1], hugepages_free_mb=4096,
                 hugetlbfs_mounted=True)
    ns: argparse.Namespace = options.parse_args(list(argv))
    return validation.validate(ns, h, check_env=False)
