# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The builds compared (and where they are by default) and daq-bench's
switch: the sandbox (ovs_daqring.sandbox) with null ports, flows and
snapshots."""

import argparse
import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple

from .. import TOP, hugepages
from ..process import Cleanup, RunError, read_text, signals_held
from ..sandbox import Binaries, Sandbox, dpdk_settings, tree_binaries
from .parse import (parse_configure_cflags, parse_dump_ports,
                    parse_malloc_stats, parse_rxq_show)
from .runlog import RunLog
from .source import rel_top

DEFAULT_OVS_BUILD = os.path.join(TOP, "ovs")
STOCK_VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
STOCK_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"


# ================================================================ binaries
@dataclass
class Build(Binaries):
    """One ovs-vswitchd and the tools and schema used with it.  The tools
    and ovsdb-server are always those of the patched build (the protocols
    are the same); the schema is the one that came with the vswitchd."""
    label: str = ""
    desc: str = ""
    daqring: bool = True


def build(label: str, vswitchd: str, tools: str, schema: str, desc: str,
          daqring: bool) -> Build:
    return Build(**vars(tree_binaries(tools, vswitchd, schema)),
                 label=label, desc=desc, daqring=daqring)


def tree_build(label: str, tree: str, tools: str) -> Build:
    cflags = parse_configure_cflags(
        read_text(os.path.join(tree, "config.log")))
    desc = "%s (CFLAGS '%s')" % (rel_top(tree), cflags if cflags is not None
                                 else "?")
    return build(label, os.path.join(tree, "vswitchd", "ovs-vswitchd"),
                 tools, os.path.join(tree, "vswitchd", "vswitch.ovsschema"),
                 desc, True)


def opt_level(cflags: Optional[str]) -> str:
    found = re.findall(r"-O(\S*)", cflags or "")
    return "-O" + found[-1] if found else "-O?"


# ================================================================ switch
class SwitchOwner(Protocol):
    """What a switch takes from the run that starts it (the Bench of
    runner.py): its work directory, its options (pmd_cpu_mask, dpdk_extra,
    other_config, socket_mem_text), the switches running, the DPDK memory
    (hugepages or not, MB), the run's clean-up stack and its log."""
    workdir: str
    args: argparse.Namespace
    live: List["Switch"]
    hugepages: bool
    socket_mem_mb: int
    cleanup: Cleanup
    log: RunLog


class Switch(Sandbox):
    """The sandbox (ovs_daqring.sandbox: userspace datapath, DPDK --no-pci
    --in-memory with a file prefix of its own) in a network namespace of
    its own, with one bridge br0 whose default NORMAL flow is removed.
    Everything lives under `workdir`."""

    def __init__(self, bench: SwitchOwner, build: Build, tag: str) -> None:
        super().__init__(build, os.path.join(bench.workdir, tag), netns=tag,
                         own_netns=True, label=build.label,
                         ofctl_args=["--no-names"])
        self.bench = bench
        self.b = build
        self.tag = tag
        self.mgmt = "unix:%s/br0.mgmt" % self.dir
        self.ofports: Dict[str, int] = {}

    # ---------------------------------------------------------- life
    def start(self) -> None:   # type: ignore[override]
        cfg = self.bench.args
        os.makedirs(self.dir, exist_ok=True)
        self.bench.live.append(self)
        memory, extra = hugepages.dpdk_memory_config(
            self.bench.hugepages, cfg.socket_mem_text,
            self.bench.socket_mem_mb, self.tag, self.bench.cleanup)
        super().start(dpdk_settings(cfg.pmd_cpu_mask, memory,
                                    "%s %s" % (cfg.dpdk_extra, extra),
                                    cfg.other_config))
        self.add_bridge("br0", "fail_mode=secure")
        self.ofctl("del-flows", self.mgmt)

    def stop(self, fast: bool = False,  # type: ignore[override]
             grace: float = 30) -> None:
        """Sandbox.stop(), signals held off, with the bench's notes and
        the switch's logs kept."""
        with signals_held():
            try:
                super().stop(fast, grace)
            except subprocess.TimeoutExpired:
                self.bench.log.note("%s: ovs-vswitchd (pid %d) did not "
                                    "exit after SIGKILL"
                                    % (self.tag, self.pid()))
            except RunError as e:
                self.bench.log.note("cleanup: %s" % e)
            if self in self.bench.live:
                self.bench.live.remove(self)
            self.bench.log.keep_logs(self.tag, self.dir)

    # ---------------------------------------------------------- ports
    def add_ports(self, specs: Sequence[Tuple[str, int, List[str]]],
                  timeout: float = 120) -> float:
        """One transaction adding (name, ofport, [Interface settings]);
        returns the seconds ovs-vsctl took.  Raises RunError naming the
        ports that got an error or no OpenFlow number."""
        args: List[str] = []
        for name, ofport, sets in specs:
            args += ["--", "add-port", "br0", name, "--", "set",
                     "Interface", name, "ofport_request=%d" % ofport] + sets
        t0 = time.monotonic()
        self.vsctl(*args, timeout=timeout)
        took = time.monotonic() - t0
        names = {s[0] for s in specs}
        out = json.loads(self.vsctl("-f", "json", "--columns=name,ofport,"
                                    "error", "list", "Interface",
                                    timeout=timeout))
        bad = []
        for name, ofport, err in out["data"]:
            if name in names:
                if err not in ("", ["set", []]) or ofport in (-1, ["set",
                                                                   []]):
                    bad.append("%s: %s" % (name, err))
                names.discard(name)
        if bad or names:
            raise RunError("%s: ports not created: %s"
                           % (self.b.label, "; ".join(bad + sorted(names))))
        for name, ofport, _ in specs:
            self.ofports[name] = ofport
        return took

    def del_ports(self, names: Sequence[str], timeout: float = 120) -> float:
        args: List[str] = []
        for n in names:
            args += ["--", "--if-exists", "del-port", "br0", n]
        t0 = time.monotonic()
        self.vsctl(*args, timeout=timeout)
        for n in names:
            self.ofports.pop(n, None)
        return time.monotonic() - t0

    def add_null(self, name: str, ofport: int, index: int, size: int = 64,
                 sink: bool = False, devargs: Optional[str] = None) -> None:
        if devargs is None:
            devargs = "net_null%d" % index
            if sink:
                devargs += ",no-rx=1"
            elif size != 64:
                devargs += ",size=%d" % size
        self.add_ports([(name, ofport, ["type=dpdk",
                                        "options:dpdk-devargs=%s"
                                        % devargs])])

    def flows(self, *flows: str) -> None:
        self.ofctl("add-flows", self.mgmt, "-", input="\n".join(flows) + "\n")

    def set_iface(self, name: str, *kv: str) -> None:
        self.vsctl("set", "Interface", name, *kv)

    # ---------------------------------------------------------- readings
    def ports(self) -> Dict[str, Dict[str, Optional[int]]]:
        return parse_dump_ports(self.ofctl("dump-ports", self.mgmt))

    def snapshot(self) -> Dict[str, Any]:
        """Schedstat and every port's counters at (about) one instant; the
        dump-ports reply is built in one go by ovs-vswitchd."""
        t0 = time.monotonic_ns()
        run_ns, wait_ns = self.pmd_schedstat()
        ports = self.ports()
        t1 = time.monotonic_ns()
        run2, wait2 = self.pmd_schedstat()
        return {"t_ns": (t0 + t1) // 2, "run_ns": (run_ns + run2) // 2,
                "wait_ns": (wait_ns + wait2) // 2, "ports": ports,
                "n_pmd": len(self.pmd_tids())}

    def memory(self) -> Dict[str, int]:
        """vswitchd RSS, hugetlb mappings (kB) and DPDK heap use (B)."""
        assert self.vswitchd is not None
        pid = self.vswitchd.pid
        rss = re.search(r"VmRSS:\s+(\d+)", read_text("/proc/%d/status" % pid))
        huge = 0
        for m in re.finditer(r"(?:Private|Shared)_Hugetlb:\s+(\d+)",
                             read_text("/proc/%d/smaps" % pid)):
            huge += int(m.group(1))
        heap = 0
        try:
            heap = parse_malloc_stats(self.appctl("dpdk/get-malloc-stats"))
        except RunError:
            pass
        return {"rss_kib": int(rss.group(1)) if rss else 0,
                "hugetlb_kib": huge, "dpdk_heap_bytes": heap}

    def polled(self) -> List[str]:
        """Names of the ports whose rx queues the PMD threads poll."""
        out: List[str] = []
        for names in parse_rxq_show(
                self.appctl("dpif-netdev/pmd-rxq-show")).values():
            out += names
        return out
