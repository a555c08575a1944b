# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The fabric's processes: its database (a Raft cluster of
ovsdb-servers), its switches (an ovs-vswitchd without DPDK each, the HLT
leaves' with DPDK) and their ovs-daqfabric-agents, every one of them
pinned off the PMD's core."""

import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

from ... import tool_path
from ...fabric import SCHEMA_NAME, schema_path
from ...process import (Cleanup, RunError, die_with_parent, read_text, run,
                        stop_process)
from ...sandbox import Sandbox
from ..config import Config
from ..switch import ModeUnavailable, Switch
from .plan import BRIDGE, HLT_LEAF, FabricPlan, FabricSwitch, plane_name

AGENT_INTERVAL = "1"
# The socket receive buffer of a system port (ovs-vswitchd's netdev-linux
# reads it through an AF_PACKET socket of net.core.rmem_default bytes,
# 208 KiB: about 90 full-size frames).  A spine that gets an incast burst
# from a ROS leaf at memory speed while its main thread waits for core 0
# lost 8% of the frames there (uncounted) with the default; a switch
# port of a real fabric buffers megabytes.  The sockets take the default
# when their port is added; it is put back right after.
SYSTEM_PORT_RCVBUF = 8 << 20
RMEM_DEFAULT = "net.core.rmem_default"


def pin(pid: int, cpus: Sequence[int], skip_pmd: bool = False) -> None:
    """Every thread of process PID onto CPUS (its PMD threads aside)."""
    task = "/proc/%d/task" % pid
    for tid in os.listdir(task):
        if skip_pmd and read_text("%s/%s/comm" % (task, tid)).startswith(
                "pmd"):
            continue
        try:
            os.sched_setaffinity(int(tid), set(cpus))
        except (ProcessLookupError, PermissionError):
            pass


# The fabric's control plane (the agents, the fabric database's members,
# the switches' OVSDB servers) runs at this nice on the emulator's
# shared core.  On real nodes each has its switch's CPU; here it shares
# one core with the incast's hosts and their TCP stacks, and a failover's
# critical path (fabric.rst, "Where a failover's time goes") waited for
# the scheduler between its steps (a step logged 14 ms after it ended).
# Not ovs-vswitchd: its main thread forwards the system ports' traffic.
CONTROL_NICE = -5


def control_priority(pid: int) -> None:
    """Every thread of process PID at CONTROL_NICE."""
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            os.setpriority(os.PRIO_PROCESS, int(tid), CONTROL_NICE)
        except (ProcessLookupError, PermissionError):
            pass


def _preexec(cpus: Sequence[int], nice: Optional[int] = None) -> Any:
    def fn() -> None:
        die_with_parent()
        os.sched_setaffinity(0, set(cpus))
        if nice is not None:
            try:
                os.setpriority(os.PRIO_PROCESS, 0, nice)
            except PermissionError:
                pass
    return fn


class FabricDatabase:
    """The fabric database: a Raft cluster of N ovsdb-servers (unix
    sockets under DIR), stopped by the Cleanup."""

    def __init__(self, cfg: Config, d: str, n: int,
                 cleanup: Cleanup) -> None:
        self.cfg = cfg
        self.dir = d
        self.n = n
        self.cleanup = cleanup
        self.procs: List["subprocess.Popen[bytes]"] = []

    def path(self, i: int, ext: str) -> str:
        return os.path.join(self.dir, "s%d.%s" % (i, ext))

    def remotes(self) -> str:
        return ",".join("unix:" + self.path(i, "sock")
                        for i in range(1, self.n + 1))

    def start(self) -> None:
        b = self.cfg.binaries
        os.makedirs(self.dir, exist_ok=True)
        run([b.ovsdb_tool, "create-cluster", self.path(1, "db"),
             schema_path(), "unix:" + self.path(1, "raft")])
        for i in range(2, self.n + 1):
            run([b.ovsdb_tool, "join-cluster", self.path(i, "db"),
                 SCHEMA_NAME, "unix:" + self.path(i, "raft"),
                 "unix:" + self.path(1, "raft")])
        self.cleanup.push("stop the fabric database", self.stop)
        for i in range(1, self.n + 1):
            with open(self.path(i, "out"), "w") as out:
                self.procs.append(subprocess.Popen(
                    [b.ovsdb_server, "--no-chdir", "-vconsole:off",
                     "--log-file=" + self.path(i, "log"),
                     "--unixctl=" + self.path(i, "ctl"),
                     "--remote=punix:" + self.path(i, "sock"),
                     self.path(i, "db")], stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=_preexec(self.cfg.agent_cpus,
                                        CONTROL_NICE)))
        deadline = time.monotonic() + 60
        while True:
            st = [self.status(i) for i in range(1, self.n + 1)]
            if (all("Status: cluster member" in s for s in st)
                    and any("Role: leader" in s for s in st)):
                return
            if time.monotonic() > deadline:
                raise RunError("the fabric database's %d members did not "
                               "form a cluster within 60 s (see %s)"
                               % (self.n, self.dir))
            time.sleep(0.2)

    def status(self, i: int) -> str:
        p = self.procs[i - 1]
        if p.poll() is not None:
            raise RunError("fabric database member %d exited: %s"
                           % (i, read_text(self.path(i, "out"))[-1000:]))
        return run([self.cfg.binaries.appctl, "-t", self.path(i, "ctl"),
                    "cluster/status", SCHEMA_NAME], check=False)

    def stop(self) -> None:
        for p in self.procs:
            stop_process(p)


class SystemSwitch(Sandbox):
    """A switch without DPDK: the userspace datapath with the veths as
    system ports, polled by ovs-vswitchd's main thread."""

    def __init__(self, cfg: Config, fsw: FabricSwitch, workdir: str,
                 cleanup: Cleanup) -> None:
        super().__init__(cfg.binaries, workdir, netns=fsw.ns,
                         label=fsw.name)
        self.cfg = cfg
        self.fsw = fsw
        self.bridge = BRIDGE
        self.cleanup = cleanup

    def start(self) -> None:  # type: ignore[override]
        os.makedirs(self.dir, exist_ok=True)
        self.cleanup.push("stop %s" % self.label,
                          lambda: self.stop(fast=True))
        super().start([])
        pin(self.pid(), self.cfg.agent_cpus)
        assert self.ovsdb is not None
        pin(self.ovsdb.pid, self.cfg.agent_cpus)
        control_priority(self.ovsdb.pid)
        self.add_bridge(self.bridge)

    def add_ports(self) -> None:
        """The ports; those with an access link's tbf (an HLT host's,
        when the HLT leaf runs without DPDK) get QoS linux-noop, else
        ovs-vswitchd replaces the veth's root qdisc with the default
        one."""
        args: List[str] = []
        hlt = self.fsw.name == plane_name(self.fsw.plane, HLT_LEAF)
        for p in self.fsw.ports:
            args += ["--", "add-port", self.bridge, p.name, "--", "set",
                     "Interface", p.name, "ofport_request=%d" % p.ofport]
            if p.to_host and hlt:
                args += ["--", "set", "Port", p.name, "qos=@noop"]
        if hlt:
            args += ["--", "--id=@noop", "create", "QoS", "type=linux-noop"]
        self.vsctl(*args, timeout=60)
        check_ports(self, [p.name for p in self.fsw.ports])

    def stats(self) -> Dict[str, Dict[str, int]]:
        return Switch.stats(self)  # type: ignore[arg-type]


def check_ports(sw: Sandbox, names: List[str]) -> None:
    deadline = time.monotonic() + 30
    while True:
        ifs = sw.interfaces()
        bad = [n for n in names if not isinstance(ifs.get(n, {}).get(
            "ofport"), int) or ifs[n]["ofport"] <= 0]  # type: ignore
        if not bad:
            return
        errs = ["%s: %s" % (n, ifs.get(n, {}).get("error")) for n in bad
                if ifs.get(n, {}).get("error") not in (None, [], "")]
        if errs or time.monotonic() > deadline:
            raise RunError("%s: ports not added: %s" % (
                sw.label, "; ".join(errs) or " ".join(bad)))
        time.sleep(0.2)


class rcvbuf:
    """Within: net.core.rmem_default at least BYTES (the whole machine's
    default socket receive buffer, so only while sockets that need it are
    made); put back on leaving, or by the Cleanup if the run dies."""

    def __init__(self, nbytes: int, cleanup: Cleanup) -> None:
        self.nbytes = nbytes
        self.cleanup = cleanup
        self.old: Optional[int] = None

    def restore(self) -> None:
        if self.old is not None:
            run(["sysctl", "-q", "-w", "%s=%d" % (RMEM_DEFAULT, self.old)])
            self.old = None

    def __enter__(self) -> "rcvbuf":
        old = int(run(["sysctl", "-n", RMEM_DEFAULT]))
        if old < self.nbytes:
            self.old = old
            self.cleanup.push("restore " + RMEM_DEFAULT, self.restore)
            run(["sysctl", "-q", "-w",
                 "%s=%d" % (RMEM_DEFAULT, self.nbytes)])
        return self

    def __exit__(self, *exc: Any) -> None:
        self.restore()


class _LeafPlan:
    """What incast.switch.Switch needs of a plan: its namespace and the
    tag of its DPDK file prefix."""

    def __init__(self, ns: str, tag: str) -> None:
        self.switch_ns = ns
        self.tag = tag


def start_switch(cfg: Config, plan: FabricPlan, s: FabricSwitch, d: str,
                 cleanup: Cleanup, switches: Dict[str, Sandbox]) -> Sandbox:
    """Switch S of PLAN started with its ports, its files in D: an
    ovs-vswitchd without DPDK (SystemSwitch), or with DPDK (the HLT
    leaf's incast.switch.Switch, its PMD on the PMD core), or a bridge
    of that one (in SWITCHES, the switches started so far)."""
    if s.dpdk and s.host_switch:
        # A bridge of another switch's ovs-vswitchd (the HLT
        # leaves of several planes: see make_fabric_plan()).
        sw = switches[s.host_switch]
        assert isinstance(sw, Switch)
        sw.add_bridge(s.bridge)
        try:
            sw.add_ports([p.dpdk_host(s.ns) for p in s.ports],
                         bridge=s.bridge)
        except ModeUnavailable as e:
            raise RunError("%s: ports failed: %s\n%s"
                           % (s.name, e, sw.log_tail()))
        pin(sw.pid(), cfg.agent_cpus, skip_pmd=True)
        return sw
    if s.dpdk:
        sw = Switch(cfg, _LeafPlan(s.ns, plan.tag),  # type: ignore
                    d, cleanup)
        sw.label = s.name
        sw.start()
        try:
            sw.add_ports([p.dpdk_host(s.ns) for p in s.ports])
        except ModeUnavailable as e:
            raise RunError("%s: ports failed: %s\n%s"
                           % (s.name, e, sw.log_tail()))
        pin(sw.pid(), cfg.agent_cpus, skip_pmd=True)
        assert sw.ovsdb is not None
        pin(sw.ovsdb.pid, cfg.agent_cpus)
        control_priority(sw.ovsdb.pid)
        return sw
    ssw = SystemSwitch(cfg, s, d, cleanup)
    ssw.start()
    with rcvbuf(SYSTEM_PORT_RCVBUF, cleanup):
        ssw.add_ports()
    return ssw


def agent_path() -> str:
    """ovs-daqfabric-agent, next to daq-incast or on PATH."""
    agent = tool_path("ovs-daqfabric-agent")
    if not agent:
        raise RunError("ovs-daqfabric-agent not found next to "
                       "daq-incast or on PATH")
    return agent


def start_agent(cfg: Config, name: str, sw: Sandbox, bridge: str,
                db: str, d: str, planner: bool
                ) -> "subprocess.Popen[bytes]":
    """The ovs-daqfabric-agent of switch NAME (its ovs-vswitchd SW, its
    bridge BRIDGE), on the fabric database DB, its files in D; PLANNER:
    the one that plans too."""
    agent = agent_path()
    os.makedirs(d, exist_ok=True)
    cmd = [sys.executable, agent, "--node", name,
           "--db", db, "--ovsdb", sw.db,
           "--bridge", bridge,
           "--interval", AGENT_INTERVAL,
           "--timeout", "60", "--state-file",
           os.path.join(d, "agent.json"),
           "--unixctl", os.path.join(d, "agent.ctl"),
           "--log-file=" + os.path.join(d, "agent.log"),
           "--ofctl", sw.bin.ofctl, "-vconsole:off", "--no-chdir"]
    if planner:
        cmd.append("--planner")
    with open(os.path.join(d, "agent.out"), "w") as out:
        return subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=sw.env,
            start_new_session=True,
            preexec_fn=_preexec(cfg.agent_cpus, CONTROL_NICE))


def start_host_agent(cfg: Config, ns: str, name: str, devs: List[str],
                     db: str, d: str, env: Dict[str, str]
                     ) -> "subprocess.Popen[bytes]":
    """With several planes, the agent of a host (ovs-daqfabric-agent
    --host) in its namespace NS, on the fabric database DB, its files
    in D: it routes each DCM's traffic out of the host's interface to
    the DCM's plane (DEVS, one per plane), as the planner assigns it
    (thesis 6.3.1, where OVS on the hosts did it)."""
    agent = agent_path()
    os.makedirs(d, exist_ok=True)
    cmd = ["ip", "netns", "exec", ns, sys.executable, agent,
           "--host", name, "--db", db,
           "--interval", AGENT_INTERVAL, "--timeout", "60",
           "--unixctl", os.path.join(d, "agent.ctl"),
           "--log-file=" + os.path.join(d, "agent.log"),
           "-vconsole:off", "--no-chdir"]
    for p, dev in enumerate(devs):
        cmd += ["--plane-dev", "%d=%s" % (p, dev)]
    with open(os.path.join(d, "agent.out"), "w") as out:
        return subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
            preexec_fn=_preexec(cfg.agent_cpus, CONTROL_NICE))
