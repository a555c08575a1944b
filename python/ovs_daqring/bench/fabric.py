# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-bench --fabric: the fabric's scale ("make bench-fabric").

A parallel leaf-spine of N switches (default 32: 2 planes of 2 spines,
1 ROS leaf and 13 HLT leaves) with 2048 DCMs, run on one machine: a
3-member clustered fabric database, one ovs-vswitchd and ovsdb-server per
switch, one ovs-daqfabric-agent per switch.  Switches without daqrings
(spines, ROS leaves) run without DPDK (OVS's dummy datapath and ports);
HLT leaves, which hold the DCMs' daqrings, run DPDK with a small
--no-huge memory and their PMD thread on the PMD core.  Everything else
runs on the other core(s).

Converged: every agent reports the generation (its Node row), and every
switch's daqrings (its own OVSDB) and flows and groups (ovs-ofctl
dump-flows / dump-groups) are what the plan in the fabric database says
(fabric/slice.py over the planner's assignments).  A node's time is when
the last of these became true, measured from the trigger: its agent's
report as the bench's IDL received it, and the last change of its flows
as an OpenFlow flow monitor (ovs-ofctl monitor) on the switch delivered
it; the switches are read after the fact to check that they match.

Scenarios, in one run: from an empty fabric database to the whole map; a
one-DCM change (a DCM added); a leaf-spine link failure written into the
fabric database as the two agents at its ends would report it (and the
two ports set down on the switches, so that their agents agree), until
the last switch is reprogrammed.  See Documentation/topics/bench.rst,
"The fabric's scale".
"""

import argparse
import datetime
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from .. import VERSION, hugepages, tool_path
from ..hosts import loadavg, machine, parse_cpu_mask
from ..process import (Cleanup, Interrupted, RunError, die_with_parent,
                       install_signal_handlers, read_text, run, signals_held,
                       stop_process)
from ..sandbox import Sandbox, dpdk_settings, ovs_json_value, tree_binaries
from .source import source_state

SCHEMA = "daq-bench-fabric/1"
SCENARIOS = ("empty", "one_dcm", "failure")
# Targets of the issue (seconds, the slowest node of a run).
TARGETS = {
    "empty": ("from an empty fabric: every node converged <= 60 s", 60.0),
    "one_dcm": ("a one-DCM change: every node converged <= 2 s", 2.0),
    "failure": ("a link failure: the last switch reprogrammed <= 1 s", 1.0),
}
BRIDGE = "br0"
# Our flows' cookies (ovs-daqctl's and the agents'): 0xdac7 on top.
COOKIE_MATCH = "cookie=0xdac7000000000000/0xffff000000000000"
QUIET_S = 1.0          # no flow change for this long before checking
REST_S = 10.0          # the converged fabric's CPU is measured this long


# ================================================================ the map
@dataclass
class Shape:
    """The fabric: per plane 'spines' spines, 'ros_leaves' ROS leaves (each
    with 'ros' ROS hosts) and 'leaves' HLT leaves (each with 'hosts' HLT
    hosts); every host is cabled to its leaf in every plane; 'dcms' DCMs
    spread round-robin over the HLT hosts."""
    planes: int = 2
    spines: int = 2
    ros_leaves: int = 1
    leaves: int = 13
    hosts: int = 4
    ros: int = 4
    dcms: int = 2048
    ring_size: int = 1024

    def n_switches(self) -> int:
        return self.planes * (self.spines + self.ros_leaves + self.leaves)

    def text(self) -> str:
        return ("%d planes x (%d spines + %d ROS leaves + %d HLT leaves) = "
                "%d switches, %d HLT hosts x %d planes, %d ROS hosts, "
                "%d DCMs (ring-size %d)"
                % (self.planes, self.spines, self.ros_leaves, self.leaves,
                   self.n_switches(), self.leaves * self.hosts, self.planes,
                   self.ros_leaves * self.ros, self.dcms, self.ring_size))


def check_shape(s: Shape) -> Optional[str]:
    """Why the shape cannot be built, or None."""
    for k, lo, hi in (("planes", 1, 8), ("spines", 1, 16),
                      ("ros_leaves", 1, 16), ("leaves", 1, 64),
                      ("hosts", 1, 64), ("ros", 1, 64),
                      ("dcms", 1, 65000), ("ring_size", 1, 1048576)):
        v = getattr(s, k)
        if not lo <= v <= hi:
            return "--fabric-%s %d: must be within %d..%d" % (
                k.replace("_", "-"), v, lo, hi)
    if s.leaves * s.hosts > 250:
        return ("--fabric-leaves x --fabric-hosts: at most 250 HLT hosts "
                "(one address each in 10.1.0.0/16, 250 per leaf)")
    return None


def leaf_names(s: Shape, plane: int) -> List[str]:
    return (["p%d-ros%d" % (plane, r) for r in range(1, s.ros_leaves + 1)]
            + ["p%d-leaf%d" % (plane, k) for k in range(1, s.leaves + 1)])


def _macs(s: Shape, kind: int, leaf: int, i: int) -> str:
    """A host's 'macs' (the last hop sets them, as on real nodes): a
    locally administered MAC per plane, unique in the fabric."""
    return ", ".join('%d: "02:%02x:%02x:%02x:%02x:%02x"'
                     % (p, kind << 6 | p, leaf >> 8 & 0xff, leaf & 0xff,
                        i >> 8 & 0xff, i & 0xff)
                     for p in range(s.planes))


def map_text(s: Shape, dcms: Optional[int] = None,
             db: Optional[Dict[str, str]] = None) -> str:
    """The fabric map (YAML) of shape 's' with 'dcms' DCMs (default
    s.dcms); 'db' gives switches their own OVSDB remotes."""
    n_dcms = s.dcms if dcms is None else dcms
    out = ["# daq-bench --fabric: %s" % s.text(), "fabric:",
           "  hold_down: 30", "  switches:"]
    links = []
    for p in range(s.planes):
        for k in range(1, s.spines + 1):
            out.append(_switch("p%d-spine%d" % (p, k), "spine", p, False,
                               db))
        for i, leaf in enumerate(leaf_names(s, p)):
            out.append(_switch(leaf, "leaf", p, "-leaf" in leaf, db))
            for k in range(1, s.spines + 1):
                links.append('    - {a: "%s:up%d", b: "p%d-spine%d:d%d"}'
                             % (leaf, k, p, k, i + 1))
    out += ["  links:"] + links + ["  hosts:"]
    for r in range(1, s.ros_leaves + 1):
        for i in range(1, s.ros + 1):
            ports = ", ".join('%d: "p%d-ros%d:r%d"' % (p, p, r, i)
                              for p in range(s.planes))
            out.append("    - {name: ros%d-%d, role: ros, ip: 10.0.%d.%d, "
                       "ports: {%s}, macs: {%s}}"
                       % (r, i, r, i, ports, _macs(s, 0, r, i)))
    hlt = []
    for k in range(1, s.leaves + 1):
        for i in range(1, s.hosts + 1):
            name, ip = "hlt%d-%d" % (k, i), "10.1.%d.%d" % (k, i)
            ports = ", ".join('%d: "p%d-leaf%d:h%d"' % (p, p, k, i)
                              for p in range(s.planes))
            out.append("    - {name: %s, role: hlt, ip: %s, ports: {%s}, "
                       "macs: {%s}}" % (name, ip, ports, _macs(s, 1, k, i)))
            hlt.append((name, ip))
    out += ["defaults:", "  ring-size: %d" % s.ring_size, "  rate: 1gbit",
            "  steering: bound", "dcms:"]
    for n in range(n_dcms):
        host, ip = hlt[n % len(hlt)]
        out.append('  - {name: dcm%04d, host: %s, tuples: ["*:*->%s:%d"]}'
                   % (n, host, ip, 10000 + n))
    return "\n".join(out) + "\n"


def _switch(name: str, role: str, plane: int, dpdk: bool,
            db: Optional[Dict[str, str]]) -> str:
    extra = ", dpdk: true" if dpdk else ""
    if db and name in db:
        extra += ', db: "%s"' % db[name]
    return "    - {name: %s, role: %s, plane: %d%s}" % (
        name, role, plane, extra)


# ===================================================== the convergence check
# A flow as compared: (cookie, priority, match fields, actions).
CFlow = Tuple[int, int, FrozenSet[str], str]


@dataclass
class SwitchView:
    """What a switch holds, read from its OVSDB and with ovs-ofctl."""
    rings: Dict[str, Dict[str, str]]    # daqring interface -> options
    ofports: Dict[str, int]             # interface -> OpenFlow port
    errors: Dict[str, str]              # interface -> its error column
    flows: Set[CFlow]                   # our flows (cookie 0xdac7...)
    groups: Dict[int, Any]              # groups on the bridge


def parse_interfaces(text: str) -> Tuple[Dict[str, Dict[str, str]],
                                         Dict[str, int], Dict[str, str]]:
    """ovs-vsctl -f json -d json --columns=name,type,options,ofport,error
    list Interface: (daqrings' options, ofports, errors)."""
    out = json.loads(text)
    cols = out["headings"]
    rings: Dict[str, Dict[str, str]] = {}
    ofports: Dict[str, int] = {}
    errors: Dict[str, str] = {}
    for row in out["data"]:
        r = {c: ovs_json_value(v) for c, v in zip(cols, row)}
        name = str(r["name"])
        of = r.get("ofport")
        if isinstance(of, int) and of > 0:
            ofports[name] = of
        err = r.get("error")
        if isinstance(err, str) and err:
            errors[name] = err
        if r.get("type") == "daqring":
            opts = r.get("options")
            rings[name] = dict(opts) if isinstance(opts, dict) else {}
    return rings, ofports, errors


def parse_flows(text: str) -> Set[CFlow]:
    """ovs-ofctl --no-names --no-stats dump-flows: our flows."""
    from ..daqctl.openflow import is_ours, parse_flow
    out: Set[CFlow] = set()
    for line in text.splitlines():
        f = parse_flow(line)
        if f is not None and is_ours(f.cookie):
            prio, match, actions = f.compared()
            out.add((f.cookie, prio, match, actions))
    return out


def parse_groups(text: str) -> Dict[int, Any]:
    """ovs-ofctl --no-names dump-groups: every group by id, as the
    reconcile core compares them (fast_failover routes), else as
    printed."""
    from ..daqctl import openflow
    out: Dict[int, Any] = {}
    parse = getattr(openflow, "parse_group", None)
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("group_id="):
            continue
        g = parse(line) if parse is not None else None
        if g is not None:
            out[g[0]] = g[1]
        else:
            head, _, rest = line.partition(",")
            out[int(head.split("=", 1)[1], 0)] = rest
    return out


def read_switch(sb: Sandbox, target: str) -> SwitchView:
    """What switch 'sb' holds: its interfaces from its OVSDB, our flows and
    its groups from bridge 'target' (ovs-ofctl)."""
    rings, ofports, errors = parse_interfaces(sb.vsctl(
        "-f", "json", "-d", "json",
        "--columns=name,type,options,ofport,error", "list", "Interface"))
    flows = parse_flows(sb.ofctl("--no-names", "--no-stats", "dump-flows",
                                 target, COOKIE_MATCH))
    groups = parse_groups(sb.ofctl("-O", "OpenFlow13", "--no-names",
                                   "dump-groups", target))
    return SwitchView(rings, ofports, errors, flows, groups)


def expected(sl: Any, ofports: Dict[str, int]
             ) -> Tuple[Dict[str, Dict[str, str]], Set[CFlow],
                        Dict[int, Any], List[str]]:
    """What a switch must hold for slice 'sl' (fabric/slice.py): its
    daqrings' options, its flows and groups (with the switch's OpenFlow
    port numbers), and the problems that keep flows from being known (a
    port missing).  The routes' flows and groups are those of the agent's
    reconcile core: an output, or a fast_failover group over the route's
    ports that are on the bridge."""
    from ..daqctl import openflow, reconcile
    from ..fabric.agent import route_table, slice_json
    rings = {d.ring: d.options() for d in sl.rings}
    flows: Set[CFlow] = set()
    groups: Dict[int, Any] = {}
    problems: List[str] = []

    def port(name: str) -> Optional[str]:
        if name not in ofports:
            problems.append("port %s has no OpenFlow port number" % name)
            return None
        return openflow.ofport_text(ofports[name])

    for d in sl.rings:
        ring, egress = port(d.ring), port(d.egress)
        if ring is None or egress is None:
            continue
        for prio, match, actions in openflow.dcm_flows(d, ring, egress):
            flows.add((d.cookie(), prio, frozenset(match), actions))
    # The routes as the agent keeps them (their priorities, hosts and
    # backups: a route back from a DCM is one priority below the others).
    table: Dict[int, List[Any]] = route_table(slice_json(sl)["routes"])
    route_groups = getattr(reconcile, "route_groups", None)
    ids: Dict[Tuple[str, ...], int] = {}
    if route_groups is not None:
        ids, _ = route_groups(table, ofports, None)
        for ports, gid in ids.items():
            groups[gid] = getattr(openflow, "failover_group")(
                [openflow.ofport_text(ofports[p]) for p in ports])
    for cookie, specs in table.items():
        for prio, match, out, mac in specs:
            ports = (out,) if isinstance(out, str) else tuple(out)
            if port(ports[0]) is None:
                continue
            action = reconcile.Reconciler.route_action(ports, ofports, ids,
                                                       mac)
            flows.add((cookie, prio, frozenset(match), action))
    return rings, flows, groups, problems


def _flow_text(f: CFlow) -> str:
    return "cookie=%#x,priority=%d,%s,actions=%s" % (
        f[0], f[1], ",".join(sorted(f[2])), f[3])


def check_switch(sl: Any, view: SwitchView, limit: int = 3) -> List[str]:
    """Why switch 'view' does not hold slice 'sl' (empty: it does): each
    difference in its daqrings (missing, extra, other options, in error),
    its flows (missing, extra) and its groups, the first 'limit' of each
    kind."""
    want_rings, want_flows, want_groups, problems = expected(
        sl, view.ofports)
    out = list(problems[:limit])

    def some(what: str, items: List[str]) -> None:
        if items:
            out.append("%s %d: %s%s" % (what, len(items),
                                        "; ".join(items[:limit]),
                                        " ..." if len(items) > limit
                                        else ""))

    some("daqrings missing", sorted(n for n in want_rings
                                    if n not in view.rings))
    some("daqrings not in the plan", sorted(n for n in view.rings
                                            if n not in want_rings))
    some("daqrings with other options", sorted(
        "%s (%s, want %s)" % (n, view.rings[n], o)
        for n, o in want_rings.items()
        if n in view.rings and _options_differ(view.rings[n], o)))
    some("daqrings in error", sorted("%s: %s" % (n, e)
                                     for n, e in view.errors.items()
                                     if n in want_rings))
    some("flows missing", sorted(_flow_text(f)
                                 for f in want_flows - view.flows))
    some("flows not in the plan", sorted(_flow_text(f)
                                         for f in view.flows - want_flows))
    some("groups missing or different", sorted(
        "group_id=%d %s" % (g, v) for g, v in want_groups.items()
        if view.groups.get(g) != v))
    some("groups not in the plan", sorted(
        "group_id=%d %s" % (g, v) for g, v in view.groups.items()
        if g not in want_groups))
    return out


def _options_differ(have: Dict[str, str], want: Dict[str, str]) -> bool:
    """The ring's options the plan sets differ (an option the plan does
    not set, such as one another tool added, is not compared)."""
    return any(have.get(k) != v for k, v in want.items())


def check_plan(state: Any, assignments: Dict[str, Any],
               sls: Dict[str, Any]) -> List[str]:
    """What is wrong with the plan itself, from the assignments alone:
    every DCM assigned, its daqring on the leaf of its host in each plane
    (its own plane's among them) and nowhere else, a route on its
    spine."""
    problems = []
    ring_at: Dict[str, List[str]] = {}
    routed: Dict[str, Set[str]] = {}
    for name, sl in sls.items():
        for d in sl.rings:
            ring_at.setdefault(d.name, []).append(name)
        for r in sl.routes:
            routed.setdefault(r.dcm, set()).add(name)
    hosts = {h.name: h for h in state.hosts}
    for d in state.dcms:
        a = assignments.get(d.name)
        if a is None:
            problems.append("DCM %s is not assigned" % d.name)
            continue
        att = hosts[d.host].leaf(a.plane)
        want = sorted(leaf for _, leaf, _ in hosts[d.host].attachments)
        if att is None or sorted(ring_at.get(d.name, [])) != want:
            problems.append("DCM %s: daqring on %s, its host's leaves are "
                            "%s (in plane %d: %s)"
                            % (d.name, ring_at.get(d.name), want, a.plane,
                               att[0] if att else None))
        if a.spine not in routed.get(d.name, set()):
            problems.append("DCM %s: no route on its spine %s"
                            % (d.name, a.spine))
    return problems


# =================================================================== nodes
class Node:
    """A switch of the fabric (its ovsdb-server and ovs-vswitchd), its
    agent and the flow monitor on its bridge."""

    def __init__(self, bench: "FabricBench", name: str, role: str,
                 plane: int, dpdk: bool, ports: List[str]) -> None:
        self.bench = bench
        self.name = name
        self.role = role
        self.plane = plane
        self.dpdk = dpdk
        self.ports = ports
        self.dir = os.path.join(bench.workdir, name)
        self.sb = Sandbox(bench.bins, self.dir, label=name)
        self.agent: Optional["subprocess.Popen[bytes]"] = None
        self.monitor: Optional["subprocess.Popen[bytes]"] = None
        self.mgmt = "unix:" + os.path.join(self.dir, BRIDGE + ".mgmt")
        self.ctl = os.path.join(self.dir, "agent.ctl")

    def start_switch(self) -> None:
        b = self.bench
        b.cleanup.push("stop %s" % self.name,
                       lambda: self.sb.stop(fast=True))
        if self.dpdk:
            prefix = "dqf%d-%s" % (os.getpid(), self.name)
            memory, extra = hugepages.dpdk_memory_config(
                False, "", b.args.fabric_dpdk_mem, prefix, b.cleanup)
            settings = dpdk_settings(
                b.args.pmd_cpu_mask, memory, "--no-pci " + extra,
                # Idle PMD threads sleep (3.1: pmd-maxsleep, 3.5:
                # pmd-sleep-max): the PMD core is shared by every leaf.
                ["pmd-maxsleep=10000", "pmd-sleep-max=10000"])
            self.sb.start(settings, vswitchd_args=["--enable-dummy",
                                                   "--disable-system"])
        else:
            self.sb.start([], dummy=True, vswitchd_args=["--disable-system"])
        args = ["add-br", BRIDGE, "--", "set", "Bridge", BRIDGE,
                "datapath_type=dummy", "fail_mode=secure"]
        for p in self.ports:
            args += ["--", "add-port", BRIDGE, p, "--", "set", "Interface",
                     p, "type=dummy"]
        self.sb.vsctl(*args, timeout=120)

    def start_agent(self, planner: bool) -> None:
        b = self.bench
        agent = tool_path("ovs-daqfabric-agent")
        if agent is None:
            raise RunError("ovs-daqfabric-agent not found")
        cmd = [sys.executable, agent, "--node", self.name,
               "--db", b.remotes(), "--ovsdb", self.sb.db,
               "--bridge", BRIDGE, "--interval", str(b.args.fabric_interval),
               "--timeout", "120", "--state-file",
               os.path.join(self.dir, "agent.json"),
               "--unixctl", self.ctl,
               "--log-file=" + os.path.join(self.dir, "agent.log"),
               "--ofctl", b.bins.ofctl, "-vconsole:off", "--no-chdir"]
        if planner:
            cmd.append("--planner")
        with open(os.path.join(self.dir, "agent.out"), "w") as out:
            self.agent = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=self.sb.env,
                start_new_session=True, preexec_fn=b.preexec)
        a = self.agent
        b.cleanup.push("stop the agent of %s" % self.name,
                       lambda: stop_process(a))

    def start_monitor(self) -> None:
        """ovs-ofctl monitor: every later change of the bridge's flows, as
        it happens (it prints them on its standard error, unbuffered)."""
        b = self.bench
        self.monitor = subprocess.Popen(
            [b.bins.ofctl, "monitor", self.mgmt, "watch:!initial"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env=self.sb.env, start_new_session=True,
            preexec_fn=b.observer_preexec)
        m = self.monitor
        b.cleanup.push("stop the flow monitor of %s" % self.name,
                       lambda: stop_process(m))

    def view(self) -> SwitchView:
        return read_switch(self.sb, self.mgmt)

    def set_port_down(self, port: str) -> None:
        self.sb.appctl("netdev-dummy/set-admin-state", port, "down")


class FlowEvents(threading.Thread):
    """Reads every node's flow monitor and keeps, per node, when the last
    change of one of our flows arrived (time.monotonic())."""

    def __init__(self, nodes: Sequence[Node],
                 cpus: Optional[Sequence[int]] = None) -> None:
        super().__init__(daemon=True)
        # Where the thread runs (the bench's observer CPUs).
        self.cpus = cpus
        self.by_fd = {n.monitor.stdout.fileno(): n  # type: ignore
                      for n in nodes}
        self.lock = threading.Lock()
        self.last: Dict[str, float] = {}
        self.count: Dict[str, int] = {}
        self.stopping = False
        self.buf: Dict[int, bytes] = {fd: b"" for fd in self.by_fd}

    def run(self) -> None:
        if self.cpus:
            # This thread's alone (Linux: the calling thread's).
            os.sched_setaffinity(0, set(self.cpus))
        fds = list(self.by_fd)
        while fds and not self.stopping:
            ready, _, _ = select.select(fds, [], [], 0.2)
            now = time.monotonic()
            for fd in ready:
                data = os.read(fd, 65536)
                if not data:
                    fds.remove(fd)
                    continue
                lines = (self.buf[fd] + data).split(b"\n")
                self.buf[fd] = lines.pop()
                n = sum(1 for ln in lines if b"event=" in ln
                        and b"cookie=0xdac7" in ln)
                if n:
                    name = self.by_fd[fd].name
                    with self.lock:
                        self.last[name] = now
                        self.count[name] = self.count.get(name, 0) + n

    def snapshot(self) -> Tuple[Dict[str, float], Dict[str, int]]:
        with self.lock:
            return dict(self.last), dict(self.count)


# =================================================================== bench
def proc_cpu_s(pid: int) -> float:
    """CPU seconds of process 'pid' (every thread), plus those of the
    children it has reaped (an agent's ovs-ofctl runs): utime, stime,
    cutime and cstime of /proc/PID/stat.  0 for a process gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            # After the command's name, which may hold spaces and ")":
            # field 3 (the state) on; utime is field 14.
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


# What cpu_snapshot() adds up, in the order the results list it.
CPU_CLASSES = ("agents", "switch ovsdb-servers", "ovs-vswitchd",
               "fabric database", "flow monitors", "bench")


def cpu_delta(before: Dict[str, float], after: Dict[str, float],
              wall_s: float) -> Dict[str, Any]:
    """The CPU seconds of each class of process between two
    cpu_snapshot()s over 'wall_s' seconds, and their sum as cores busy
    on average."""
    cpu = {c: max(0.0, after.get(c, 0.0) - before.get(c, 0.0))
           for c in CPU_CLASSES}
    return {"wall_s": wall_s, "cpu_s": cpu,
            "cores": sum(cpu.values()) / wall_s if wall_s > 0 else None}


def cpu_text(c: Dict[str, Any]) -> str:
    return ("CPU over its %.1f s: %s (%.2f cores busy on average)"
            % (c["wall_s"], ", ".join("%s %.1f s" % (k, c["cpu_s"][k])
                                      for k in CPU_CLASSES),
               c["cores"] or 0.0))


def _stats(values: List[float]) -> Dict[str, Any]:
    v = sorted(values)
    if not v:
        return {"n": 0, "max": None, "p50": None, "min": None}
    return {"n": len(v), "max": v[-1], "min": v[0],
            "p50": v[(len(v) - 1) // 2] if len(v) % 2
            else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2}


class FabricBench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.shape = Shape(args.fabric_planes, args.fabric_spines,
                           args.fabric_ros_leaves, args.fabric_leaves,
                           args.fabric_hosts, args.fabric_ros,
                           args.fabric_dcms, args.fabric_ring_size)
        self.bins = tree_binaries(os.path.abspath(args.ovs_build))
        self.out = os.path.abspath(args.out)
        self.pmd_cpus = parse_cpu_mask(args.pmd_cpu_mask)
        self.other_cpus = sorted(set(os.sched_getaffinity(0))
                                 - set(self.pmd_cpus)) or [0]
        # What observes the fabric (the flow monitors, the thread that
        # times their events, the loop that waits for the nodes) runs on
        # the PMD CPU(s), idle here (the HLT leaves' PMDs poll dummy
        # ports and sleep): on the control plane's core it took CPU from
        # the processes it timed, and its timestamps waited for that
        # core too.  What the bench sets up and checks runs with the
        # fabric.
        self.observer_cpus = self.pmd_cpus or self.other_cpus
        self.workdir = ""
        self.cleanup = Cleanup()
        self.nodes: Dict[str, Node] = {}
        self.db_procs: List["subprocess.Popen[bytes]"] = []
        self.fdb: Any = None
        self.events: Optional[FlowEvents] = None
        self.t_start = time.monotonic()
        self.notes: List[str] = []

    # ----------------------------------------------------------- misc
    def say(self, text: str) -> None:
        if not self.args.quiet:
            sys.stderr.write("daq-bench --fabric [%4.0fs] %s\n"
                             % (time.monotonic() - self.t_start, text))
            sys.stderr.flush()

    def preexec(self) -> None:
        die_with_parent()
        os.sched_setaffinity(0, set(self.other_cpus))

    def observer_preexec(self) -> None:
        """The bench's own flow monitors run where its observing thread
        and loop do (observer_cpus)."""
        die_with_parent()
        os.sched_setaffinity(0, set(self.observer_cpus))

    def remotes(self) -> str:
        return ",".join("unix:" + self.db_path(i, "sock")
                        for i in range(1, 4))

    def db_path(self, i: int, ext: str) -> str:
        return os.path.join(self.workdir, "db", "s%d.%s" % (i, ext))

    # ---------------------------------------------------------- set-up
    def start_database(self) -> None:
        from ..fabric import SCHEMA_NAME, schema_path
        os.makedirs(os.path.join(self.workdir, "db"))
        b = self.bins
        run([b.ovsdb_tool, "--election-timer=%d"
             % self.args.fabric_election_timer, "create-cluster",
             self.db_path(1, "db"), schema_path(),
             "unix:" + self.db_path(1, "raft")])
        for i in (2, 3):
            run([b.ovsdb_tool, "join-cluster", self.db_path(i, "db"),
                 SCHEMA_NAME, "unix:" + self.db_path(i, "raft"),
                 "unix:" + self.db_path(1, "raft")])
        for i in (1, 2, 3):
            with open(self.db_path(i, "out"), "w") as out:
                p = subprocess.Popen(
                    [b.ovsdb_server, "--no-chdir", "-vconsole:off",
                     "--log-file=" + self.db_path(i, "log"),
                     "--unixctl=" + self.db_path(i, "ctl"),
                     "--remote=punix:" + self.db_path(i, "sock"),
                     self.db_path(i, "db")], stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=self.preexec)
            self.db_procs.append(p)
            self.cleanup.push("stop fabric database member %d" % i,
                              lambda p=p: stop_process(p))
        deadline = time.monotonic() + 60
        while True:
            st = [run([b.appctl, "-t", self.db_path(i, "ctl"),
                       "cluster/status", SCHEMA_NAME], check=False)
                  for i in (1, 2, 3)]
            if (all("Status: cluster member" in s for s in st)
                    and any("Role: leader" in s for s in st)):
                return
            if time.monotonic() > deadline:
                raise RunError("the fabric database did not form a cluster "
                               "within 60 s (see %s)" % self.db_path(1,
                                                                     "log"))
            time.sleep(0.2)

    def make_nodes(self) -> None:
        from ..fabric.fabmap import FabricMapReader
        state = FabricMapReader("fabric map").parse(map_text(self.shape))
        for s in state.switches:
            ports = set()
            for lk in state.links:
                p = lk.port_of(s.name)
                if p is not None:
                    ports.add(p)
            for h in state.hosts:
                for _, leaf, port in h.attachments:
                    if leaf == s.name:
                        ports.add(port)
            self.nodes[s.name] = Node(self, s.name, s.role, s.plane,
                                      s.dpdk, sorted(ports))

    def setup(self) -> None:
        self.workdir = tempfile.mkdtemp(prefix="dqf.", dir="/tmp")
        wd = self.workdir
        self.cleanup.push("remove " + wd,
                          lambda: shutil.rmtree(wd, ignore_errors=True))
        self.cleanup.push("keep the logs", self.keep_logs)
        self.say("fabric database: 3-member cluster, election timer %d ms"
                 % self.args.fabric_election_timer)
        self.start_database()
        self.make_nodes()
        for i, n in enumerate(sorted(self.nodes.values(),
                                     key=lambda n: n.name)):
            self.say("switch %d/%d: %s (%s)" % (
                i + 1, len(self.nodes), n.name,
                "DPDK --no-huge -m %d" % self.args.fabric_dpdk_mem
                if n.dpdk else "no DPDK, dummy datapath"))
            n.start_switch()
        from ..fabric.db import FabricDb
        self.fdb = FabricDb(self.remotes(), 120)
        spines = sorted(n for n, x in self.nodes.items()
                        if x.role == "spine")
        planners = set(spines[:self.args.fabric_planners])
        for n in self.nodes.values():
            n.start_agent(n.name in planners)
            n.start_monitor()
        self.events = FlowEvents(list(self.nodes.values()),
                                 self.observer_cpus)
        self.events.start()
        self.say("%d agents started (planner candidates: %s); waiting for "
                 "their Node rows" % (len(self.nodes),
                                      ", ".join(sorted(planners))))
        self.fdb.run_until(lambda: {r.name for r in self.fdb.rows("Node")}
                           >= set(self.nodes), "every agent to report",
                           120)

    def keep_logs(self) -> None:
        dest = os.path.join(self.out, "fabric-logs")
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest, exist_ok=True)
        for top, _, files in os.walk(self.workdir):
            for f in files:
                if f.endswith((".log", ".out", ".err")):
                    src = os.path.join(top, f)
                    rel = os.path.relpath(src, self.workdir).replace("/", "-")
                    text = read_text(src)
                    with open(os.path.join(dest, rel), "w") as g:
                        g.write(text[-200000:])

    # ------------------------------------------------------- measuring
    def cpu_snapshot(self) -> Dict[str, float]:
        """CPU seconds so far of each class of process (CPU_CLASSES):
        the bench runs every process of the fabric's control plane on
        the same core(s), and the one that takes them sets its pace."""
        def total(procs: Sequence[Any]) -> float:
            return sum(proc_cpu_s(p.pid) for p in procs if p is not None)
        nodes = list(self.nodes.values())
        return {
            "agents": total([n.agent for n in nodes]),
            "switch ovsdb-servers": total([n.sb.ovsdb for n in nodes]),
            "ovs-vswitchd": total([n.sb.vswitchd for n in nodes]),
            "fabric database": total(self.db_procs),
            "flow monitors": total([n.monitor for n in nodes]),
            "bench": proc_cpu_s(os.getpid())}

    def asg_changes(self) -> int:
        """A number that changes with the Assignment table (the fabric
        IDL's count, or any change where it has none)."""
        if hasattr(self.fdb, "changes"):
            return int(self.fdb.changes("Assignment"))
        return int(self.fdb.idl.change_seqno)

    def gen_reports(self, gen: int) -> Dict[str, bool]:
        return {r.name: int(r.generation) >= gen
                for r in self.fdb.rows("Node")}

    def plan_now(self) -> Tuple[Any, Dict[str, Any], Dict[str, Any]]:
        from ..fabric.slice import Slice, slices
        state = self.fdb.state()
        asg = self.fdb.assignments()
        sls = slices(state, asg)
        for n in self.nodes:
            sls.setdefault(n, Slice(n))
        return state, asg, sls

    def verify(self, names: Sequence[str]) -> Dict[str, List[str]]:
        """Each node's problems against the plan now (empty lists: all
        match), plus the plan's own under '(plan)'."""
        state, asg, sls = self.plan_now()
        out: Dict[str, List[str]] = {"(plan)": check_plan(state, asg, sls)}
        for n in names:
            try:
                out[n] = check_switch(sls[n], self.nodes[n].view())
            except RunError as e:
                out[n] = ["cannot read the switch: %s" % e]
        return out

    def wait(self, t0: float, gen: Optional[int], what: str,
             before: Optional[Tuple[Dict[str, Any], Dict[str, Any],
                                    int]] = None) -> Dict[str, Any]:
        """_wait() on the observer CPUs (see observer_cpus)."""
        os.sched_setaffinity(0, set(self.observer_cpus))
        try:
            return self._wait(t0, gen, what, before)
        finally:
            os.sched_setaffinity(0, set(self.other_cpus))

    def _wait(self, t0: float, gen: Optional[int], what: str,
              before: Optional[Tuple[Dict[str, Any], Dict[str, Any],
                                     int]] = None) -> Dict[str, Any]:
        """Until converged (or the timeout): per node, seconds from t0 to
        its agent's report of 'gen' and to the last change of its flows;
        the switches read after that match the plan.  Without 'gen' (a
        failure), 'before' is (the assignments, the slices, the count of
        Assignment changes) before it: the planner has planned when the
        assignments differ, and the nodes whose slice that changed must
        have had their flows changed."""
        assert self.events is not None
        deadline = t0 + self.args.fabric_timeout
        reported: Dict[str, float] = {}
        t_plan: Optional[float] = None
        seqno = -1
        asg0, sls0, n_asg = before if before is not None else ({}, {}, 0)
        changed: Optional[Set[str]] = None
        problems: Dict[str, List[str]] = {}
        next_check = 0.0
        while True:
            self.fdb.run()
            now = time.monotonic()
            if self.fdb.idl.change_seqno != seqno:
                seqno = self.fdb.idl.change_seqno
                fab = self.fdb.root()
                if gen is not None:
                    for name, ok in self.gen_reports(gen).items():
                        if ok and name not in reported:
                            reported[name] = now
                    if (t_plan is None and fab is not None
                            and int(fab.planned_generation) >= gen):
                        t_plan = now
                elif (t_plan is None
                      and self.asg_changes() != n_asg
                      and self.fdb.assignments() != asg0):
                    t_plan = now
            last, _ = self.events.snapshot()
            quiet = now - max([t for t in last.values()] + [t0]) >= QUIET_S
            if (gen is None and t_plan is not None and quiet
                    and changed is None):
                # Which slices the plan changed: computed (every node's
                # slice, a second of CPU) only once the flows are quiet,
                # not on the core the agents need while they reprogram.
                _, _, sls = self.plan_now()
                changed = {n for n in self.nodes
                           if _slice_key(sls.get(n))
                           != _slice_key(sls0.get(n))}
            # The switches are read (3 dumps each, on the core the
            # fabric's control plane shares) only once every node said
            # it is done: every report, or the flows of every node whose
            # slice the plan changed.
            ready = (t_plan is not None and quiet and now >= next_check
                     and (len(reported) >= len(self.nodes) if gen is not None
                          else changed is not None
                          and all(last.get(n, 0) > t0 for n in changed)))
            if ready:
                problems = self.verify(sorted(self.nodes))
                if not any(problems.values()):
                    break
                next_check = time.monotonic() + 1.0
            if time.monotonic() > deadline:
                if not problems:
                    problems = self.verify(sorted(self.nodes))
                bad = {n: p for n, p in problems.items() if p}
                missing = sorted(set(self.nodes) - set(reported))
                why = []
                if t_plan is None:
                    why.append("the planner did not plan")
                if gen is not None and missing:
                    why.append("no report of generation %d from %s"
                               % (gen, ", ".join(missing)))
                for n, p in sorted(bad.items()):
                    why.append("%s: %s" % (n, "; ".join(p)))
                raise RunError("%s: not converged within %g s: %s"
                               % (what, self.args.fabric_timeout,
                                  " | ".join(why) or "?"))
            time.sleep(0.02)
        last, count = self.events.snapshot()
        nodes = {}
        for n in sorted(self.nodes):
            t_rep = reported.get(n)
            t_flow = last.get(n) if last.get(n, 0) > t0 else None
            ts = [t for t in (t_rep, t_flow) if t is not None]
            nodes[n] = {
                "role": self.nodes[n].role,
                "report_s": None if t_rep is None else t_rep - t0,
                "flows_s": None if t_flow is None else t_flow - t0,
                "converged_s": max(ts) - t0 if ts else None,
            }
        res: Dict[str, Any] = {
            "plan_s": None if t_plan is None else t_plan - t0,
            "nodes": nodes}
        if gen is None:
            # A failure: the nodes whose flows changed; the others hold
            # their slice already (checked above like every node).
            times = [v["flows_s"] for v in nodes.values()
                     if v["flows_s"] is not None]
            res["reprogrammed"] = sorted(n for n, v in nodes.items()
                                         if v["flows_s"] is not None)
            res["changed_in_plan"] = sorted(changed or ())
            unmoved = sorted((changed or set()) - set(res["reprogrammed"]))
            if unmoved:
                raise RunError("%s: the plan changed the slices of %s, but "
                               "their flows did not change"
                               % (what, ", ".join(unmoved)))
        else:
            times = [v["converged_s"] for v in nodes.values()]
        res["stats"] = _stats([t for t in times if t is not None])
        return res

    def apply_map(self, dcms: int, what: str, comment: str
                  ) -> Dict[str, Any]:
        """A scenario of applying the map with 'dcms' DCMs (as 'ovs-daqctl
        fabric apply' does) and waiting for every node."""
        from ..fabric.fabmap import FabricMapReader, state_digest
        state = FabricMapReader("fabric map").parse(
            map_text(self.shape, dcms))
        cpu0 = self.cpu_snapshot()
        t0 = time.monotonic()
        gen = self.fdb.apply(state, state_digest(state), "daq-bench",
                             "daq-bench --fabric: " + comment)
        t_commit = time.monotonic() - t0
        res = self.wait(t0, gen, what)
        res.update(generation=gen, commit_s=t_commit, rows=self.fdb.applied,
                   cpu=cpu_delta(cpu0, self.cpu_snapshot(),
                                 time.monotonic() - t0))
        return res

    def rest(self) -> Dict[str, Any]:
        """The CPU the converged fabric's processes use while nothing
        changes (REST_S): what every change of the next scenarios
        competes with on the shared core."""
        time.sleep(QUIET_S)
        cpu0 = self.cpu_snapshot()
        t0 = time.monotonic()
        time.sleep(REST_S)
        return cpu_delta(cpu0, self.cpu_snapshot(), time.monotonic() - t0)

    def scenario_empty(self) -> Dict[str, Any]:
        self.say("from an empty fabric: applying %d DCMs" % self.shape.dcms)
        return self.apply_map(self.shape.dcms, "from an empty fabric",
                              "from empty")

    def scenario_one_dcm(self) -> Dict[str, Any]:
        self.say("a one-DCM change: adding dcm%04d" % self.shape.dcms)
        return self.apply_map(self.shape.dcms + 1, "a one-DCM change",
                              "one DCM more")

    def scenario_failure(self) -> Dict[str, Any]:
        from ..fabric.db import Txn
        leaf = "p0-leaf1"
        n_asg = self.asg_changes()
        state, asg, before = self.plan_now()
        lk = next(lk for lk in sorted(state.links, key=lambda lk: lk.name)
                  if leaf in (lk.a_switch, lk.b_switch)
                  and lk.port_of(leaf) == "up1")
        ends = [(lk.a_switch, lk.a_port), (lk.b_switch, lk.b_port)]
        self.say("a link failure: %s" % lk.name)
        # The link fails: its ports go down on the switches (so that the
        # agents' next reports agree), and the bench writes them down
        # into the fabric database as the agents would report it.
        cpu0 = self.cpu_snapshot()
        t0 = time.monotonic()
        for sw, port in ends:
            self.nodes[sw].set_port_down(port)

        def build(txn: Any) -> None:
            rows = {r.name: r for r in self.fdb.rows("Node")}
            for sw, port in ends:
                links = dict(rows[sw].links)
                links[port] = "down"
                rows[sw].links = links
            return None

        t1 = time.monotonic()
        status, _ = self.fdb.commit(build, "daq-bench --fabric: link %s "
                                    "down" % lk.name)
        if status not in (Txn.SUCCESS, Txn.UNCHANGED):
            raise RunError("writing the link failure: %s" % status)
        t_commit = time.monotonic() - t1
        res = self.wait(t0, None, "a link failure", (asg, before, n_asg))
        moved = sum(1 for d, a in self.fdb.assignments().items()
                    if asg.get(d) is not None and asg[d].path != a.path)
        res.update(link=lk.name, commit_s=t_commit, moved=moved,
                   cpu=cpu_delta(cpu0, self.cpu_snapshot(),
                                 time.monotonic() - t0))
        return res

    def run_once(self, k: int) -> Dict[str, Any]:
        """One run: set-up, the three scenarios, tear-down."""
        res: Dict[str, Any] = {"run": k, "scenarios": {}}
        t = time.monotonic()
        try:
            self.setup()
            res["setup_s"] = time.monotonic() - t
            for sc in SCENARIOS:
                try:
                    r = getattr(self, "scenario_" + sc)()
                except RunError as e:
                    res["scenarios"][sc] = {"error": str(e)}
                    self.say("%s: FAILED: %s" % (sc, e))
                    # The later scenarios start from this one's end.
                    break
                res["scenarios"][sc] = r
                st = r["stats"]
                self.say("%s: max %.3f s, p50 %.3f s over %d nodes; %s"
                         % (sc, st["max"] or 0, st["p50"] or 0, st["n"],
                            cpu_text(r["cpu"])))
                if sc == "empty":
                    res["rest_cpu"] = self.rest()
                    self.say("at rest: " + cpu_text(res["rest_cpu"]))
        except RunError as e:
            res["error"] = str(e)
            self.say("run %d FAILED: %s" % (k, e))
        finally:
            self.teardown()
        return res

    def teardown(self) -> None:
        if self.events is not None:
            self.events.stopping = True
        if self.fdb is not None:
            self.fdb.close()
            self.fdb = None
        with signals_held():
            self.cleanup.run()
        self.cleanup = Cleanup()
        self.nodes = {}
        self.events = None

    def main(self, argv: List[str]) -> int:
        started = datetime.datetime.now()
        os.sched_setaffinity(0, set(self.other_cpus))
        runs: List[Dict[str, Any]] = []
        info = machine(self.pmd_cpus, self.other_cpus,
                       "none: DPDK switches run --no-huge --legacy-mem -m "
                       "%d" % self.args.fabric_dpdk_mem)
        interrupted = False
        try:
            for k in range(1, self.args.fabric_runs + 1):
                self.say("run %d of %d: %s" % (k, self.args.fabric_runs,
                                               self.shape.text()))
                runs.append(self.run_once(k))
        except Interrupted as e:
            interrupted = True
            self.teardown()
            self.notes.append("interrupted (signal %d)" % e.signum)
        info["loadavg_end"] = loadavg()
        res = {
            "schema": SCHEMA, "version": VERSION,
            "command": " ".join(["utilities/daq-bench"] + argv),
            "started": started.isoformat(timespec="seconds"),
            "duration_s": time.monotonic() - self.t_start,
            "machine": info, "source": source_state(),
            "shape": vars(self.shape), "shape_text": self.shape.text(),
            "config": {"runs": self.args.fabric_runs,
                       "agent_interval_s": self.args.fabric_interval,
                       "election_timer_ms": self.args.fabric_election_timer,
                       "dpdk_mem_mb": self.args.fabric_dpdk_mem,
                       "planners": self.args.fabric_planners,
                       "timeout_s": self.args.fabric_timeout,
                       "pmd_cpu_mask": self.args.pmd_cpu_mask},
            "interrupted": interrupted, "notes": self.notes,
            "runs": runs}
        res["verdicts"] = verdicts(res)
        self.write(res)
        for v in res["verdicts"]:
            self.say("%-6s %s: %s" % (v["met_text"], v["target"],
                                      v["value"]))
        if interrupted:
            return 130
        failed = any(r.get("error") or any(
            "error" in s for s in r["scenarios"].values()) for r in runs)
        return 1 if failed else 0

    def write(self, res: Dict[str, Any]) -> None:
        os.makedirs(self.out, exist_ok=True)
        with open(os.path.join(self.out, "fabric.json"), "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)
            f.write("\n")
        with open(os.path.join(self.out, "fabric.md"), "w") as f:
            f.write(markdown(res))
        if self.args.doc:
            with open(self.args.doc, "w") as f:
                f.write(markdown(res))
        self.say("results in %s (fabric.json, fabric.md)" % self.out)


def _slice_key(sl: Any) -> Any:
    if sl is None:
        return ((), ())
    return (tuple(sorted((d.name, d.ring, d.egress) for d in sl.rings)),
            tuple(sorted((r.dcm, r.match, r.port) for r in sl.routes)))


# ================================================================ verdicts
def verdicts(res: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One row per target: every run asked for counts; a run that failed
    or did not get to the scenario is FAILED, never left out."""
    out = []
    asked = res["config"]["runs"]
    runs = res["runs"]
    for sc in SCENARIOS:
        text, limit = TARGETS[sc]
        maxes: List[float] = []
        failed: List[str] = []
        for k in range(1, asked + 1):
            r = next((x for x in runs if x["run"] == k), None)
            s = (r or {}).get("scenarios", {}).get(sc)
            if r is None:
                failed.append("run %d: not run" % k)
            elif s is None:
                failed.append("run %d: not reached (%s)"
                              % (k, r.get("error") or "an earlier "
                                 "scenario failed"))
            elif "error" in s:
                failed.append("run %d: %s" % (k, s["error"][:300]))
            elif s["stats"]["max"] is None:
                failed.append("run %d: no node changed" % k)
            else:
                maxes.append(s["stats"]["max"])
        if failed:
            met: Optional[bool] = False
            value = "%d of %d runs FAILED (%s)" % (
                len(failed), asked, "; ".join(failed))
            if maxes:
                value += "; the others: max %s s" % ", ".join(
                    "%.3f" % m for m in maxes)
        else:
            met = all(m <= limit for m in maxes)
            value = "max over nodes %s s in %d run%s" % (
                ", ".join("%.3f" % m for m in maxes), asked,
                "s" if asked != 1 else "")
        out.append({"key": sc, "target": text, "limit_s": limit,
                    "value": value, "met": met,
                    "met_text": "FAILED" if failed else
                    ("MET" if met else "NOT")})
    return out


def _f(v: Optional[float]) -> str:
    return "-" if v is None else "%.3f" % v


def markdown(res: Dict[str, Any]) -> str:
    m = res["machine"]
    lines = [
        "# ovs-daqring fabric scale results", "",
        "`%s`, %s, %.0f s." % (res["command"], res["started"],
                               res["duration_s"]), "",
        "Machine: %s, %d CPUs (%s), %s GiB RAM, kernel %s, %s.  PMD threads "
        "and the bench's observer (its flow monitors and the loop that "
        "times them) on CPU(s) %s; everything else on %s.  Load average "
        "at start %s, at end %s." % (
            m["cpu_model"], m["cpus"], m["hypervisor"], m["mem_gib"],
            m["kernel"], m["os"], m["pmd_cpus"], m["other_cpus"],
            m["loadavg_start"], m.get("loadavg_end", "?")), "",
        "Source: commit %s%s." % (res["source"].get("commit"),
                                  " with uncommitted changes"
                                  if res["source"].get("dirty") else ""),
        "",
        "Fabric: %s.  A 3-member clustered fabric database (election timer "
        "%d ms); per switch one ovsdb-server, one ovs-vswitchd and one "
        "ovs-daqfabric-agent (--interval %g s; %d planner candidates).  "
        "Spines and ROS leaves: no DPDK (dummy datapath and ports); HLT "
        "leaves: DPDK --no-huge --legacy-mem -m %d, dummy ports, idle PMDs "
        "sleeping." % (res["shape_text"], res["config"]["election_timer_ms"],
                       res["config"]["agent_interval_s"],
                       res["config"]["planners"],
                       res["config"]["dpdk_mem_mb"]), "",
        "Converged: every agent reports the generation and every switch's "
        "daqrings (its OVSDB), flows and groups (ovs-ofctl) match the plan "
        "in the fabric database.  A node's time: from the trigger to the "
        "later of its agent's report and the last change of its flows "
        "(flow monitor); for a link failure, to the last change of its "
        "flows (nodes whose slice did not change have none).", "",
        "## Targets", "", "| target | result | met |", "|---|---|---|"]
    for v in res["verdicts"]:
        lines.append("| %s | %s | **%s** |" % (
            v["target"], v["value"], {"MET": "yes", "NOT": "no",
                                      "FAILED": "FAILED"}[v["met_text"]]))
    for r in res["runs"]:
        lines += ["", "## Run %d" % r["run"], ""]
        if r.get("error"):
            lines.append("FAILED: %s" % r["error"])
        if "setup_s" in r:
            lines.append("Set-up (database, switches, agents): %.0f s."
                         % r["setup_s"])
        if r.get("rest_cpu"):
            lines += ["", "At rest, once converged from empty: %s."
                      % cpu_text(r["rest_cpu"])]
        for sc in SCENARIOS:
            s = r["scenarios"].get(sc)
            if s is None:
                continue
            lines += ["", "### %s" % TARGETS[sc][0].split(":")[0], ""]
            if "error" in s:
                lines.append("FAILED: %s" % s["error"])
                continue
            st = s["stats"]
            extra = ""
            if sc == "failure":
                extra = ("; link %s; %d DCMs moved; reprogrammed: %s"
                         % (s["link"], s["moved"],
                            ", ".join(s["reprogrammed"]) or "none"))
            elif s.get("rows"):
                from ..fabric.cli import rows_text
                extra = "; written: " + rows_text(s["rows"])
            lines.append("Commit %.3f s; planner %s s; over %d nodes: max "
                         "%s s, p50 %s s%s." % (s["commit_s"],
                                                _f(s["plan_s"]), st["n"],
                                                _f(st["max"]),
                                                _f(st["p50"]), extra))
            if s.get("cpu"):
                lines += ["", cpu_text(s["cpu"]) + "."]
            lines += ["", "| node | role | report s | flows s | converged "
                      "s |", "|---|---|---|---|---|"]
            for n, v in sorted(s["nodes"].items()):
                lines.append("| %s | %s | %s | %s | %s |" % (
                    n, v["role"], _f(v["report_s"]), _f(v["flows_s"]),
                    _f(v["converged_s"])))
    if res["notes"]:
        lines += ["", "Notes:", ""] + ["- " + n for n in res["notes"]]
    return "\n".join(lines) + "\n"


# ===================================================================== CLI
def add_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "the fabric's scale (--fabric; Documentation/topics/bench.rst)")
    g.add_argument("--fabric", action="store_true",
                   help="measure the fabric's convergence instead of the "
                   "parts: from an empty fabric, a one-DCM change, a link "
                   "failure; writes OUT/fabric.json and OUT/fabric.md")
    g.add_argument("--fabric-runs", type=int, default=1, metavar="N",
                   help="runs, each with its own switches (default "
                   "%(default)s)")
    for k, v, what in (("planes", 2, "planes"),
                       ("spines", 2, "spines per plane"),
                       ("ros-leaves", 1, "ROS leaves per plane"),
                       ("leaves", 13, "HLT leaves per plane"),
                       ("hosts", 4, "HLT hosts per HLT leaf"),
                       ("ros", 4, "ROS hosts per ROS leaf"),
                       ("dcms", 2048, "DCMs"),
                       ("ring-size", 1024, "ring size of each DCM")):
        g.add_argument("--fabric-" + k, type=int, default=v, metavar="N",
                       help="%s (default %%(default)s)" % what)
    g.add_argument("--fabric-dpdk-mem", type=int, default=128, metavar="MB",
                   help="DPDK memory of an HLT leaf (--no-huge -m MB; "
                   "default %(default)s)")
    for k, t, v, mv, what in (
            ("interval", float, 2.0, "SECS", "the agents' --interval"),
            ("election-timer", int, 30000, "MS",
             "the fabric database's Raft election timer"),
            ("planners", int, 3, "N", "agents that are planner candidates "
             "(the first N spines;"),
            ("timeout", float, 300, "SECS",
             "bound on each scenario's convergence")):
        g.add_argument("--fabric-" + k, type=t, default=v, metavar=mv,
                       help="%s%sdefault %%(default)s)"
                       % (what, " " if what.endswith(";") else " ("))


def check_args(p: argparse.ArgumentParser, ns: argparse.Namespace) -> None:
    why = check_shape(Shape(ns.fabric_planes, ns.fabric_spines,
                            ns.fabric_ros_leaves, ns.fabric_leaves,
                            ns.fabric_hosts, ns.fabric_ros, ns.fabric_dcms,
                            ns.fabric_ring_size))
    if why:
        p.error(why)
    if ns.fabric_runs < 1:
        p.error("--fabric-runs must be >= 1")
    if ns.fabric_dpdk_mem < 16:
        p.error("--fabric-dpdk-mem must be >= 16 MB")
    if not ns.fabric_interval >= 0.1:
        p.error("--fabric-interval must be >= 0.1 s")
    if not 100 <= ns.fabric_election_timer <= 600000:
        p.error("--fabric-election-timer must be within 100..600000 ms")
    if ns.fabric_planners < 1:
        p.error("--fabric-planners must be >= 1")
    if not ns.fabric_timeout > 0:
        p.error("--fabric-timeout must be > 0")


def main(args: argparse.Namespace, argv: List[str]) -> int:
    if os.geteuid() != 0:
        sys.stderr.write("daq-bench: error: --fabric must run as root (DPDK "
                         "switches)\n")
        return 2
    bench = FabricBench(args)
    install_signal_handlers(args.timeout)
    return bench.main(argv)
