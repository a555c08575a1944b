# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The machine the tools run on: its CPUs, hugepages, other ovs-vswitchd
processes, and what a report says about it (daq-incast's validation and
results, daq-bench's machine section)."""

import os
import platform
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence

from . import hugepages as _hugepages
from .process import RunError, read_text, run


class ConfigError(Exception):
    """A bad parameter or an unusable machine; exit status 2."""


def parse_cpu_mask(text: str) -> List[int]:
    try:
        mask = int(text, 16)
    except ValueError:
        raise ConfigError("bad --pmd-cpu-mask %r (hex, e.g. 0x2)" % text)
    cpus = [i for i in range(mask.bit_length()) if mask >> i & 1]
    if not cpus:
        raise ConfigError("--pmd-cpu-mask selects no CPU")
    return cpus


def loadavg() -> str:
    return " ".join(read_text("/proc/loadavg", "? ? ?").split()[:3])


def other_vswitchd(own: Sequence[int] = ()) -> List[str]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) not in own:
            comm = read_text("/proc/%s/comm" % pid).strip()
            if comm.startswith("ovs-vswitchd"):
                out.append("%s (%s)" % (pid, comm))
    return sorted(out)


def build_dpdk_version(vswitchd: str) -> str:
    """The DPDK version that 'vswitchd --version' reports, or ''.  Base 3.5
    links its own DPDK statically, so pkg-config's answer is not it."""
    try:
        out = run([vswitchd, "--version"])
    except (RunError, OSError):
        return ""
    m = re.search(r"^DPDK (\S+)", out, re.M)
    return m.group(1) if m else ""


@dataclass
class HostInfo:
    """What validate() needs to know about the machine."""
    is_root: bool
    cpus: List[int]
    hugepages_free_mb: int
    hugetlbfs_mounted: bool
    other_vswitchd: List[str] = field(default_factory=list)
    wmem_default: int = 212992


def probe_host() -> HostInfo:
    try:
        with open("/proc/sys/net/core/wmem_default") as f:
            wmem = int(f.read())
    except (OSError, ValueError):
        wmem = 212992
    return HostInfo(is_root=os.geteuid() == 0, wmem_default=wmem,
                    cpus=sorted(os.sched_getaffinity(0)),
                    hugepages_free_mb=_hugepages.free_mb(),
                    hugetlbfs_mounted=_hugepages.hugetlbfs_mounted(),
                    other_vswitchd=other_vswitchd())


def machine(pmd_cpus: List[int], other_cpus: List[int],
            hugepages: str) -> Dict[str, Any]:
    cpuinfo = read_text("/proc/cpuinfo")
    model = re.search(r"model name\s*:\s*(.*)", cpuinfo)
    flags = re.search(r"flags\s*:\s*(.*)", cpuinfo)
    mem = re.search(r"MemTotal:\s+(\d+)", read_text("/proc/meminfo"))
    osr = re.search(r'PRETTY_NAME="([^"]*)"', read_text("/etc/os-release"))
    dpdk = ""
    try:
        dpdk = run(["pkg-config", "--modversion", "libdpdk"]).strip()
    except RunError:
        pass
    return {
        "cpu_model": model.group(1).strip() if model else "?",
        "cpus": os.cpu_count() or 0,
        "hypervisor": ("virtual machine" if flags and "hypervisor"
                       in flags.group(1).split() else "bare metal"),
        "mem_gib": "%.0f" % (int(mem.group(1)) / 2**20) if mem else "?",
        "kernel": platform.release(),
        "os": osr.group(1) if osr else "?",
        "dpdk": dpdk or "?",
        "hugepages": hugepages,
        "pmd_cpus": ",".join(map(str, pmd_cpus)),
        "other_cpus": ",".join(map(str, other_cpus)) or "(none left)",
        "loadavg_start": loadavg(),
        "other_vswitchd": other_vswitchd(),
    }
