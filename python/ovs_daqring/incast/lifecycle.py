# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The life of a daq-incast run: its work directory, the emulated hosts
(namespaces, veths, access links), the switch and the agent processes
(the ROS agents, and the DCM and --pmd-preempt agents a mode starts),
set up before the first mode, their output read, and everything stopped
and removed by the Cleanup at the end."""

import datetime
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

from ..process import Cleanup, RunError, die_with_parent, stop_process
from .config import Config
from .limits import DEEP_FIFO
from .stats import (ideal_collection_time, ideal_goodput,
                    payload_efficiency)
from .switch import ModeUnavailable, Switch
from .topology import ROS_PORT, Plan, Topology


AGENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "agents.py")


class ModeFailed(Exception):
    """A mode started but could not finish (an agent failed)."""


class Progress:
    """One line on stderr, rewritten with a carriage return."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.width = 0

    def show(self, text: str) -> None:
        if self.enabled:
            sys.stderr.write("\r" + text.ljust(self.width))
            sys.stderr.flush()
            self.width = len(text)

    def done(self, text: str) -> None:
        if self.enabled:
            self.show(text)
            sys.stderr.write("\n")
            self.width = 0
        else:
            sys.stderr.write(text + "\n")


class RunnerBase:
    """A run's life on one topology: its work directory, hosts,
    switch and agent processes, set up before the first mode and
    removed by the Cleanup after the last (runner.Runner runs the
    modes on it)."""

    def __init__(self, cfg: Config, plan: Plan, cleanup: Cleanup) -> None:
        self.cfg = cfg
        self.plan = plan
        self.cleanup = cleanup
        self.procs: List["subprocess.Popen[bytes]"] = []
        self.agent_ns: Dict[int, str] = {}
        self.modes: List[Dict[str, Any]] = []
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.t0 = time.monotonic()
        self.progress = Progress(cfg.progress)
        self.last_traffic = 0.0
        self.workdir = ""
        self.topo: Optional[Topology] = None
        # Each host namespace's TCP congestion control, as read back.
        self.hosts_cc: Dict[str, str] = {}
        self.switch: Optional[Switch] = None
        # A deep-fifo run's bridge is up (its counters, not the switch's).
        self.bridge = False
        ideal_bps = ideal_goodput(cfg.link_rate_bps, cfg.fragment_size,
                                  cfg.mss, cfg.link_overhead)
        # One access link's (a DCM host's) ideal goodput: the "link busy"
        # figure's (stats.link_split()), also where the ideal is a
        # fabric's limit over several links.
        self.link_goodput_bps = ideal_bps
        self.ideal = {
            "efficiency": payload_efficiency(cfg.fragment_size, cfg.mss,
                                             cfg.link_overhead),
            "goodput_bps": ideal_bps,
            "collection_time_s": ideal_collection_time(
                cfg.link_rate_bps, cfg.ros, cfg.fragment_size, cfg.mss,
                cfg.link_overhead),
            "event_bytes": cfg.ros * cfg.fragment_size,
        }

    def setup(self) -> None:
        cfg = self.cfg
        self.workdir = tempfile.mkdtemp(prefix="daq-incast.%s." %
                                        self.plan.tag)
        self.cleanup.push("remove " + self.workdir,
                          lambda: shutil.rmtree(self.workdir, True))
        if cfg.log_dir:
            self.cleanup.push("save logs", self._save_logs)
        self.progress.show("creating %d namespaces" % len(self.plan.hosts))
        self.topo = Topology(self.plan, self.cleanup)
        self.topo.create(cfg.link_rate_bps, cfg.link_burst, cfg.link_limit,
                         cfg.link_overhead, cfg.rps_cpus, cfg.rps_kinds,
                         cfg.congestion_control)
        self.hosts_cc = self.topo.congestion_control()
        if DEEP_FIFO not in cfg.modes:
            self.start_switch()
        self.cleanup.push("stop agents", self._stop_agents)
        self._start_ros()

    def start_switch(self) -> None:
        """The DPDK switch with every host's port, before the first run of
        a mode other than deep-fifo (whose runs come first)."""
        assert self.topo is not None and not self.bridge
        self.progress.show("starting ovs-vswitchd (DPDK)")
        self.switch = Switch(self.cfg, self.plan, self.workdir, self.cleanup)
        self.switch.start()
        self.progress.show("adding %d DPDK af_packet ports"
                           % len(self.plan.hosts))
        try:
            self.switch.add_ports(self.plan.hosts)
        except ModeUnavailable as e:
            raise RunError("ports failed: %s\n%s"
                           % (e, self.switch.log_tail()))
        self.switch.pin_macs(self.plan.hosts)

    def _save_logs(self) -> None:
        assert self.cfg.log_dir
        if self.switch:
            self.switch.save_logs(self.cfg.log_dir)
        for name in os.listdir(self.workdir):
            if name.startswith("agent-"):
                shutil.copy(os.path.join(self.workdir, name),
                            self.cfg.log_dir)

    def _stop_agents(self) -> None:
        for p in self.procs:
            if p.stdin and not p.stdin.closed:
                try:
                    p.stdin.close()
                except OSError:
                    pass
        for p in self.procs:
            stop_process(p, grace=3)

    def _agent(self, ns: str, args: List[str], log: str
               ) -> "subprocess.Popen[bytes]":
        with open(os.path.join(self.workdir, "agent-%s.log" % log),
                  "ab") as err:
            p = subprocess.Popen(
                ["ip", "netns", "exec", ns, sys.executable, AGENTS] + args,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                start_new_session=True, preexec_fn=die_with_parent)
        self.procs.append(p)
        self.agent_ns[p.pid] = ns
        return p

    def _read_lines(self, procs: Sequence["subprocess.Popen[bytes]"],
                    until: str, timeout: float) -> None:
        """Wait until every process printed a line starting with `until`;
        raise ModeFailed on ERROR or exit."""
        pending: Dict[int, "subprocess.Popen[bytes]"] = {}
        for p in procs:
            assert p.stdout is not None
            pending[p.stdout.fileno()] = p
        bufs = {fd: b"" for fd in pending}
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            for fd in pending:
                sel.register(fd, selectors.EVENT_READ)
            while pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ModeFailed("agents not %s after %g s"
                                     % (until, timeout))
                for key, _ in sel.select(left):
                    fd = key.fd
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        raise ModeFailed("agent in %s exited (see its log)"
                                         % self.agent_ns[pending[fd].pid])
                    bufs[fd] += chunk
                    for line in bufs[fd].split(b"\n")[:-1]:
                        text = line.decode()
                        if text.startswith("ERROR"):
                            raise ModeFailed(text[6:])
                        if text.startswith(until):
                            sel.unregister(fd)
                            del pending[fd]
                            break
                    bufs[fd] = bufs[fd].rsplit(b"\n", 1)[-1]

    def _start_ros(self) -> None:
        cfg = self.cfg
        size = cfg.fragment_size * max(1, cfg.hog)
        biggest = {"fixed": size, "uniform": size * 3 // 2 + 1,
                   "exponential": size * 4}[cfg.fragment_dist]
        cpus = ",".join(map(str, cfg.agent_cpus))
        procs = [self._agent(h.ns, ["ros", ",".join(h.ips), str(ROS_PORT),
                                    str(biggest), cpus,
                                    "1" if cfg.tcp_nodelay else "0"], h.ns)
                 for h in self.plan.ros_hosts]
        self.progress.show("starting %d ROS agents" % len(procs))
        try:
            self._read_lines(procs, "READY", 60)
        except ModeFailed as e:
            raise RunError("ROS agents: %s" % e)

    def _hog(self) -> "subprocess.Popen[bytes]":
        """The --pmd-preempt thread on the PMD's core (root namespace)."""
        busy, period = self.cfg.preempt_us
        with open(os.path.join(self.workdir, "agent-hog.log"), "ab") as err:
            p = subprocess.Popen(
                [sys.executable, AGENTS, "hog", str(self.cfg.pmd_cpus[0]),
                 str(busy), str(period)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                start_new_session=True, preexec_fn=die_with_parent)
        self.procs.append(p)
        self.agent_ns[p.pid] = "(root namespace)"
        self._read_lines([p], "READY", 10)
        return p
