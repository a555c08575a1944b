# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The machine and source tree a run is measured on."""

import os
import platform
import re
from typing import Any, Dict, List, Sequence

from .. import TOP
from ..process import RunError, read_text, run


# ================================================================ machine
def rel(path: str) -> str:
    """path relative to the current directory if it is below it."""
    r = os.path.relpath(path)
    return path if r.startswith("..") else r


def rel_top(path: str) -> str:
    """path relative to the source tree if it is inside it."""
    r = os.path.relpath(os.path.abspath(path), TOP)
    return path if r.startswith("..") else r


def source_state() -> Dict[str, Any]:
    """The git commit of the source tree and whether it has changes."""
    out: Dict[str, Any] = {"commit": None, "dirty": None}
    try:
        out["commit"] = run(["git", "-C", TOP, "rev-parse", "--short=12",
                             "HEAD"]).strip()
        out["dirty"] = bool(run(["git", "-C", TOP, "status", "--porcelain",
                                 "--untracked-files=no"]).strip())
        out["untracked"] = run(["git", "-C", TOP, "ls-files", "--others",
                                "--exclude-standard"]).split()
    except RunError:
        pass
    return out


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
