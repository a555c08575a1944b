# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The nodes of daq-bench --fabric's fabric: a switch (its ovsdb-server
and ovs-vswitchd), its agent (ovs-daqfabric-agent) and the flow monitor
on its bridge; and the thread that reads every monitor and keeps when
each node's flows last changed."""

import argparse
import os
import select
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Protocol, Sequence, Tuple

from ... import hugepages, tool_path
from ...process import Cleanup, RunError, stop_process
from ...sandbox import Binaries, Sandbox, dpdk_settings
from .check import SwitchView, read_switch

BRIDGE = "br0"


class NodeOwner(Protocol):
    """What a node takes from the run that starts it (the FabricBench of
    runner.py): its work directory, options, clean-up stack and
    binaries, the fabric database's remotes, and where its processes
    run (preexec(), observer_preexec())."""
    workdir: str
    args: argparse.Namespace
    cleanup: Cleanup
    bins: Binaries

    def remotes(self) -> str:
        ...

    def preexec(self) -> None:
        ...

    def observer_preexec(self) -> None:
        ...


class Node:
    """A switch of the fabric (its ovsdb-server and ovs-vswitchd), its
    agent and the flow monitor on its bridge."""

    def __init__(self, bench: NodeOwner, name: str, role: str,
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
