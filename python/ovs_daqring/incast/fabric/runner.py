# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The FabricRunner: daq-incast's modes and measurements (runner.Runner's)
on the emulated fabric.  It sets up the fabric's network, database,
switches and agents, programs every mode by applying its fabric map
through the fabric database and checks the switches' outcome, reads the
fabric's counters, runs --failover, and holds the fabric up after the
modes with --hold."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

from ...fabric import SCHEMA_NAME
from ...process import Cleanup, RunError, run, stop_process
from ...sandbox import Sandbox
from ..config import Config
from ..modes import ring_params
from ..runner import Runner
from ..stats import busy_time, ideal_collection_time
from ..switch import STATS_INTERVAL, ModeUnavailable, Switch, daqctl_path
from ..topology import parse_snmp
from .control import ControlFrames
from .counters import (dump_ports_packets, fabric_drops, link_counters,
                       qdisc_counters)
from .failover import (FAILOVER_SETTLE, RECOVERY_FRACTION, SPINE_BFD,
                       Failover, FailTarget, dcms_on, probe_ends, recovery,
                       resolve_target, timeline)
from .limit import fabric_limit
from .maps import HOLD_DOWN, fabric_map
from .netns import GARP, access_links, create_topology, host_arp_state
from .plan import HLT_LEAF, FabricPlan
from .probe import LossProbe
from .procs import (FabricDatabase, pin, start_agent, start_host_agent,
                    start_switch)
from .routes import (bound_drains, check_routes, fabric_flows,
                     normal_packets, no_flood_ports)

# Seconds a mode's fabric map may take to be applied (and the hosts to
# route the DCMs by their planes).
APPLY_TIMEOUT = 120


class FabricRunner(Runner):
    """Runner's modes and measurements on the fabric: its own topology,
    switches, database and agents; modes programmed by fabric maps."""

    def __init__(self, cfg: Config, plan: FabricPlan,
                 cleanup: Cleanup,
                 target: Optional[FailTarget] = None) -> None:
        super().__init__(cfg, plan, cleanup)  # type: ignore[arg-type]
        self.fplan = plan
        # --failover-target (resolve_target(): the default link if None).
        self.target = (target if target is not None or cfg.spines < 2
                       else resolve_target(plan, ""))
        self.limit = fabric_limit(cfg, plan)
        # The BFD packets' counter, while BFD runs (program()).
        self.control: Optional[ControlFrames] = None
        self.ideal["goodput_bps"] = self.limit["goodput_bps"]
        self.ideal["per_dcm_goodput_bps"] = (
            self.limit["goodput_bps"] / cfg.dcms)
        # The ideal event time of a DCM: its share of its host's link.
        # (With several planes, a host has a link on each and the
        # planner spreads its DCMs over them.)
        self.ideal["collection_time_s"] = ideal_collection_time(
            cfg.link_rate_bps * cfg.planes / cfg.dcms_per_host, cfg.ros,
            cfg.fragment_size, cfg.mss, cfg.link_overhead)
        # Switch name -> its ovs-vswitchd (one for the HLT leaves of all
        # planes, self.switch).
        self.switches: Dict[str, Sandbox] = {}
        self.agents: Dict[str, "subprocess.Popen[bytes]"] = {}
        self.db: Optional[FabricDatabase] = None
        self.generations: List[Dict[str, Any]] = []
        self.failover: Optional[Failover] = None
        self.failovers: Dict[str, Dict[str, Any]] = {}
        # Whether the loss probe's path crosses the failed element.
        self.probe_crosses = False

    def setup(self) -> None:
        cfg = self.cfg
        plan = self.fplan
        # This process and every process it starts (tc, ovs-ofctl, the
        # samplers of --failover) off the PMD's core: nothing of ours but
        # the PMD thread runs there.
        pin(os.getpid(), cfg.agent_cpus)
        # Short: unix socket paths hold 108 bytes.
        self.workdir = tempfile.mkdtemp(prefix="daq-incast.%s." % plan.tag,
                                        dir="/tmp")
        self.cleanup.push("remove " + self.workdir,
                          lambda: shutil.rmtree(self.workdir, True))
        if cfg.log_dir:
            self.cleanup.push("save logs", self._save_logs)
        self.progress.show("creating %d namespaces"
                           % len(plan.namespaces()))
        create_topology(cfg, plan, self.cleanup)
        self.hosts_cc = {ns: run(["ip", "netns", "exec", ns, "sysctl", "-n",
                                  "net.ipv4.tcp_congestion_control"]).strip()
                         for ns in plan.hosts_ns}
        self.progress.show("starting the fabric database (%d members)"
                           % cfg.fabric_db_members)
        self.db = FabricDatabase(cfg, os.path.join(self.workdir, "db"),
                                 cfg.fabric_db_members, self.cleanup)
        self.db.start()
        for s in plan.switches:
            self.progress.show("starting %s%s" % (s.name, " (DPDK)"
                                                  if s.dpdk else ""))
            sw = start_switch(cfg, plan, s,
                              os.path.join(self.workdir, s.name),
                              self.cleanup, self.switches)
            if s.dpdk and not s.host_switch:
                assert isinstance(sw, Switch)
                self.switch = sw
            self.switches[s.name] = sw
        access_links(cfg, plan)
        self.basic_connectivity()
        self.cleanup.push("stop the fabric agents", self._stop_fabric_agents)
        for s in plan.switches:
            self._start_agent(s.name, planner=(s.name == HLT_LEAF))
        if plan.planes > 1:
            for ns, name in self.host_names():
                self._start_host_agent(ns, name)
        self.cleanup.push("stop agents", self._stop_agents)
        self._start_ros()

    def basic_connectivity(self) -> None:
        """The fabric's default forwarding, as the thesis installs it
        before the controller programs any DCM (§6.2.3): NORMAL over a
        tree, the first spine.  Every port towards another spine is
        no-flood, so that NORMAL neither loops nor learns a host behind
        it; the DCMs' routes (the agents') use every spine all the same.
        NORMAL is a flow of its own (priority 0) on a bridge in secure
        mode, which the agents keep (issue 47 A4): a bridge they find
        standalone they make secure, and ovs-vswitchd then flushes its
        flows, NORMAL's implicit one too."""
        for s in self.fplan.switches:
            sw = self.switches[s.name]
            # (ovs-vsctl waits until ovs-vswitchd has flushed the
            # bridge: the flow comes after.)
            sw.vsctl("set", "Bridge", s.bridge, "fail_mode=secure")
            sw.ofctl("add-flow", s.bridge, "priority=0,actions=NORMAL")
        for name, ports in no_flood_ports(self.fplan).items():
            for port in ports:
                self.switches[name].ofctl("mod-port",
                                          self.fplan.switch(name).bridge,
                                          port,
                                          "no-flood")

    def _start_agent(self, name: str, planner: bool) -> None:
        assert self.db is not None
        self.agents[name] = start_agent(
            self.cfg, name, self.switches[name],
            self.fplan.switch(name).bridge, self.db.remotes(),
            os.path.join(self.workdir, name), planner)

    def host_names(self) -> List[Tuple[str, str]]:
        """(namespace, name in the fabric map) of every host."""
        return ([(h.ns, self.fplan.ros_name(h))
                 for h in self.fplan.ros_hosts]
                + [(h.ns, h.name) for h in self.fplan.hlt_hosts])

    def _start_host_agent(self, ns: str, name: str) -> None:
        """With several planes, the agent of host NAME in its namespace
        NS (start_host_agent())."""
        assert self.db is not None
        self.agents["host:" + name] = start_host_agent(
            self.cfg, ns, name, self.fplan.host_devs, self.db.remotes(),
            os.path.join(self.workdir, "host-" + name),
            self.switches[HLT_LEAF].env)

    def _stop_fabric_agents(self) -> None:
        for p in self.agents.values():
            stop_process(p)

    def _save_logs(self) -> None:
        assert self.cfg.log_dir
        os.makedirs(self.cfg.log_dir, exist_ok=True)
        for top, _, files in os.walk(self.workdir):
            for f in files:
                if f.endswith((".log", ".out", ".json")):
                    rel = os.path.relpath(os.path.join(top, f),
                                          self.workdir)
                    shutil.copy(os.path.join(top, f), os.path.join(
                        self.cfg.log_dir, rel.replace("/", "-")))

    def program(self, mode: str, params: Dict[str, Any]) -> None:
        """Every mode is a fabric map applied through the fabric database
        (ovs-daqctl fabric apply --wait): the daqring modes with the DCMs,
        stock and credits without (no rings, no routes).  Then checks the
        outcome on the switches: the HLT leaf has exactly the rings of the
        map, and every other switch a route per DCM."""
        ring_mode = mode.startswith("daqring")
        doc = fabric_map(self.fplan, params if ring_mode else None,
                         db=self.switch.db if self.fplan.shared_hlt
                         and self.switch else "")
        if (self.cfg.failover[0] and self.target is not None
                and self.target.kind == "spine"):
            # A killed ovs-vswitchd leaves its links' carrier up: BFD
            # tells the leaves (SPINE_BFD).
            doc["fabric"]["bfd"] = dict(SPINE_BFD)
            if self.control is None:
                # Its packets are not the hosts' frames: counted apart
                # (control.py).
                self.control = ControlFrames(self.fplan)
                self.control.start(self.cleanup)
        path = os.path.join(self.workdir, "fabric-map.%s.json" % mode)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        assert self.db is not None
        t0 = time.monotonic()
        try:
            out = run([sys.executable, daqctl_path(), "--db",
                       self.db.remotes(), "--timeout", str(APPLY_TIMEOUT),
                       "fabric", "apply", path, "--wait"],
                      timeout=APPLY_TIMEOUT + 30)
        except RunError as e:
            raise ModeUnavailable("fabric apply failed: %s" % e)
        applied_s = time.monotonic() - t0
        got = self.settled_outcome(ring_mode, "bfd" in doc["fabric"])
        got["routes"] = {sw: len(f) for sw, f in got["flows"].items()}
        if self.fplan.planes > 1:
            got["host_planes"] = self.wait_host_planes(
                got["assignments"] if ring_mode else {})
        self.generations.append({"mode": mode, "apply_s": applied_s,
                                 "outcome": got,
                                 "output": out.strip().splitlines()[-3:]})
        self.announce()

    def settled_outcome(self, ring_mode: bool, bfd: bool) -> Dict[str, Any]:
        """outcome() with the assignments, checked: the HLT leaves hold
        the mode's rings and every switch the routes of the assignments
        (ModeUnavailable otherwise).  With BFD on the links (BFD: a
        --failover of a spine), the planner moves DCMs while the
        sessions come up after the apply (a path is usable once its BFD
        is up, a DCM goes home after the hold-down): until the routes
        match assignments that stayed the same for the hold-down and a
        second, APPLY_TIMEOUT s at most."""
        deadline = time.monotonic() + APPLY_TIMEOUT
        stable: Optional[Tuple[float, Dict[str, str]]] = None
        while True:
            got = self.outcome()
            for leaf in self.fplan.hlt_leaves:
                want = sorted(self.fplan.ring_on(d, leaf)
                              for d in self.fplan.dcms) if ring_mode else []
                if got["rings_of"][leaf] != want:
                    raise ModeUnavailable(
                        "after fabric apply, %s holds rings %s, not %s"
                        % (leaf, got["rings_of"][leaf], want))
            got["assignments"] = self.assignments()
            wrong = check_routes(self.fplan, got["flows"],
                                 got["assignments"] if ring_mode else {})
            now = time.monotonic()
            if wrong:
                stable = None
                if not bfd or now > deadline:
                    raise ModeUnavailable(
                        "after fabric apply, the switches' routes are not "
                        "the fabric's: %s" % "; ".join(wrong))
            elif not bfd:
                return got
            else:
                if stable is None or stable[1] != got["assignments"]:
                    stable = (now, got["assignments"])
                if now - stable[0] >= HOLD_DOWN + 1 or now > deadline:
                    return got
            time.sleep(0.5)

    def host_planes(self) -> Dict[str, Dict[str, int]]:
        """Per host, the plane its kernel sends each DCM's traffic on
        (ip route get): a ROS host's towards the DCM, an HLT host's from
        the DCM to its first ROS host's first address.  DCM name ->
        plane (-1: not out of a plane's interface)."""
        plan = self.fplan
        devs = plan.host_devs
        out: Dict[str, Dict[str, int]] = {}

        def plane(ns: str, *where: str) -> int:
            r = json.loads(run(["ip", "-n", ns, "-j", "route", "get"]
                               + list(where)) or "[]")
            dev = r[0].get("dev") if r else None
            return devs.index(dev) if dev in devs else -1
        ros = {h.ns for h in plan.ros_hosts}
        for ns, name in self.host_names():
            if ns in ros:
                out[name] = {plan.dcm_name(d): plane(ns, d.ips[0])
                             for d in plan.dcms}
            else:
                out[name] = {plan.dcm_name(d): plane(
                    ns, plan.ros_hosts[0].ips[0], "from", d.ips[0])
                    for d in plan.dcms if d.ns == ns}
        return out

    def wait_host_planes(self, assignments: Dict[str, str]
                         ) -> Dict[str, Dict[str, int]]:
        """Until every host sends each DCM's traffic on the DCM's plane
        (ASSIGNMENTS, DCM -> "plane/spine"), as its agent routes it
        (ovs-daqfabric-agent --host); DCMs without an assignment are not
        checked.  ModeUnavailable after APPLY_TIMEOUT s, naming the
        hosts that do not."""
        want = {n: int(a.split("/", 1)[0]) for n, a in assignments.items()}
        deadline = time.monotonic() + APPLY_TIMEOUT
        while True:
            got = self.host_planes()
            wrong = ["%s: %s on plane %d, not %d" % (h, n, p, want[n])
                     for h, v in sorted(got.items())
                     for n, p in sorted(v.items())
                     if n in want and p != want[n]]
            if not wrong:
                return got
            if time.monotonic() > deadline:
                raise ModeUnavailable(
                    "after fabric apply, the hosts do not send the DCMs' "
                    "traffic on their planes: %s" % "; ".join(wrong[:8]))
            time.sleep(0.5)

    def assignments(self) -> Dict[str, str]:
        """DCM -> "plane/spine", as ovs-daqctl fabric status has it (the
        DCMs with one)."""
        assert self.db is not None
        doc = json.loads(run([sys.executable, daqctl_path(), "--db",
                              self.db.remotes(), "fabric", "status",
                              "--json", "--listen", "0"]))
        # (A DCM the planner has not assigned yet, no path being usable,
        # has none: a fabric with BFD before its sessions are up.)
        return {d["name"]: "%s/%s" % (d["plane"], d["spine"])
                for d in doc.get("fabric", {}).get("dcms", [])
                if isinstance(d, dict) and isinstance(d.get("name"), str)
                and isinstance(d.get("plane"), int)
                and isinstance(d.get("spine"), str)}

    def outcome(self) -> Dict[str, Any]:
        """The rings on the HLT leaf and the fabric's flows (cookie
        0xdac7...) of every switch, read from the switches themselves:
        per switch, [direction, address, output port name] (see
        fabric_flows)."""
        flows = {}
        for name, sw in self.switches.items():
            fsw = self.fplan.switch(name)
            flows[name] = fabric_flows(
                fsw, sw.ofctl("--names", "dump-flows", fsw.bridge),
                sw.ofctl("--names", "dump-groups", fsw.bridge))
        rings_of = {}
        for leaf in self.fplan.hlt_leaves:
            ifaces = self.own(leaf, self.switches[leaf].interfaces(
                "name,type,options"))
            rings_of[leaf] = sorted(n for n, row in ifaces.items()
                                    if row.get("type") == "daqring")
            flows[leaf] = sorted(flows[leaf] + bound_drains(ifaces))
        return {"rings": rings_of[HLT_LEAF], "rings_of": rings_of,
                "flows": flows}

    def announce(self) -> None:
        """A gratuitous ARP from every host (see GARP).  The counters read
        next wait for ovs-vswitchd to have written its statistics after
        them (the kernel's count them at once): otherwise a DPDK port's
        ARPs would seem sent and never seen by its veth."""
        for dev in self.fplan.host_devs:
            for h in self.fplan.ros_hosts:
                run(["ip", "netns", "exec", h.ns, sys.executable, "-c",
                     GARP, dev, h.mac] + h.ips)
            for hh in self.fplan.hlt_hosts:
                run(["ip", "netns", "exec", hh.ns, sys.executable, "-c",
                     GARP, dev, hh.mac] + hh.ips)
        self.last_traffic = time.monotonic()

    def hold_text(self) -> str:
        """--hold: how to reach the fabric while it stays up (the build's
        programs by their paths: the tree is not installed)."""
        assert self.db is not None
        b = self.cfg.binaries
        # Found already: every mode was applied with it.
        daqctl = daqctl_path()
        out = ["", "daq-incast: the fabric stays up (--hold) with the "
               "map of its last mode; Ctrl-C (or SIGTERM) stops it and "
               "removes everything.  From another shell (root):", "",
               "  export OVS_DAQFABRIC_DB=%s" % self.db.remotes(),
               "  %s fabric status -v" % daqctl,
               "  %s -t %s cluster/status %s"
               % (b.appctl, self.db.path(1, "ctl"), SCHEMA_NAME), "",
               "  switch: its OVSDB, its bridge's flows, its agent:"]
        for s in self.fplan.switches:
            sw = self.switches[s.name]
            out.append("  %-14s %s --db=%s show" % (s.name, b.vsctl, sw.db))
            out.append("  %-14s %s --names dump-flows unix:%s" % (
                "", b.ofctl, os.path.join(sw.dir, s.bridge + ".mgmt")))
            out.append("  %-14s %s -t %s netdev-daqring/show" % (
                "", b.appctl, sw.ctl))
            out.append("  %-14s %s -t %s status" % (
                "", b.appctl, os.path.join(self.workdir, s.name,
                                           "agent.ctl")))
        hosts = ([h.ns for h in self.fplan.ros_hosts]
                 + [h.ns for h in self.fplan.hlt_hosts])
        out += ["", "  hosts (network namespaces): %s" % " ".join(hosts)]
        target = self.target
        if target is not None and target.link is None:
            # --failover-target spine:NAME: the failure it injects.
            p = self.switches[target.spine].vswitchd
            if p is not None and p.poll() is None:
                out += ["", "  a spine failure (%s's ovs-vswitchd killed; "
                        "only BFD tells the leaves):" % target.spine,
                        "  kill -9 %d" % p.pid]
        elif self.fplan.links:
            # The link of --failover-target, else its default
            # (failover_link()), else the only one.
            leaf, lport, spine, sport = (
                target.link if target is not None and target.link
                else self.fplan.links[0])
            ns = self.fplan.switch(spine).ns
            out += ["", "  a link failure (%s:%s - %s:%s), and its repair:"
                    % (leaf, lport, spine, sport),
                    "  ip -n %s link set %s down" % (ns, sport),
                    "  ip -n %s link set %s up" % (ns, sport)]
        return "\n".join(out) + "\n"

    def hold(self) -> None:
        """--hold: prints hold_text() and waits for a signal (the
        handlers of install_signal_handlers() raise Interrupted); the
        run's --timeout no longer applies."""
        signal.alarm(0)
        sys.stdout.write(self.hold_text())
        sys.stdout.flush()
        while True:
            signal.pause()

    def unprogram(self, mode: str) -> None:
        """The next mode's apply replaces this one's rings and routes."""

    def ring_status(self, mode: str) -> Optional[Dict[str, object]]:
        if not mode.startswith("daqring"):
            return None
        out: Dict[str, object] = {}
        for leaf in self.fplan.hlt_leaves:
            out.update(Switch.status(
                self.switches[leaf],  # type: ignore
                [self.fplan.ring_on(d, leaf) for d in self.fplan.dcms]))
        return out

    def is_ring_mode(self, mode: str) -> bool:
        return mode.startswith("daqring")

    def collecting(self, label: str, started: bool) -> None:
        if not self.cfg.failover[0]:
            return
        if started:
            assert self.target is not None
            fo = self.failover = Failover(
                self.cfg.failover, self.fplan, self.agent_ns,
                self.switches, self.target, self.cfg.agent_cpus,
                self.cleanup)
            # The loss probe, on a path through the failed element (the
            # DCMs where the mode's apply left them).
            last = self.generations[-1]["outcome"] if self.generations \
                else {}
            ros, dcm, self.probe_crosses = probe_ends(
                self.fplan, self.target, last.get("assignments") or {})
            if self.fplan.planes > 1:
                fo.dcm_ips = dcms_on(self.fplan, self.target,
                                     last.get("assignments") or {})
            fo.probe = LossProbe(ros, dcm, self.cfg.agent_cpus, fo.t0)
            self.cleanup.push("stop the loss probe", fo.probe.stop)
            fo.probe.start()
            fo.start()
        elif self.failover is not None:
            self.failover.settle(HOLD_DOWN + FAILOVER_SETTLE)
            self.failover.halt.set()
            self.failover.join(30)
            if self.failover.probe is not None:
                self.failover.probe.stop()
            res = self.failover.result()
            if "probe" in res:
                res["probe"]["path_crosses_target"] = self.probe_crosses
            # Where the planner left the DCMs (home again, after the
            # hold-down, if "back_after_s" is set).
            res["assignments_after"] = self.assignments()
            self.failovers[label] = res
            self.failover = None

    def host_arp(self) -> Dict[str, Any]:
        """Per host (its name in the map), after a mode's events, what
        its kernel holds of ARP (host_arp_state())."""
        macs = {h.ns: h.mac for h in self.fplan.ros_hosts}
        macs.update({h.ns: h.mac for h in self.fplan.hlt_hosts})
        out = {}
        for ns, name in self.host_names():
            out[name] = host_arp_state(
                json.loads(run(["ip", "-n", ns, "-j", "link", "show"])
                           or "[]"),
                json.loads(run(["ip", "-n", ns, "-j", "neigh", "show",
                                "nud", "all"]) or "[]"),
                self.fplan.host_devs, macs[ns])
        return out

    def host_namespaces(self) -> List[str]:
        return list(self.fplan.hosts_ns)

    def _snapshot(self) -> Dict[str, Any]:
        wait = self.last_traffic + STATS_INTERVAL - time.monotonic()
        if wait > 0:
            self.progress.show("waiting %.1f s for switch counters" % wait)
            time.sleep(wait)
        ports = {}
        normal = {}
        for name, sw in self.switches.items():
            for port, st in self.own(
                    name, Switch.stats(sw)).items():  # type: ignore
                ports["%s:%s" % (name, port)] = st
            normal[name] = normal_packets(sw.ofctl(
                "dump-flows", self.fplan.switch(name).bridge))
        tcp = {}
        for ns in self.fplan.hosts_ns:
            tcp[ns] = parse_snmp(run(["ip", "netns", "exec", ns, "cat",
                                      "/proc/net/snmp",
                                      "/proc/net/netstat"]))
        links = link_counters(self.fplan)
        if self.control is not None:
            # BFD runs: the DPDK leaves' uplinks' packets as they are
            # now, and their veths' read right after
            # (dump_ports_packets()).
            for leaf in self.fplan.hlt_leaves:
                fsw = self.fplan.switch(leaf)
                if not fsw.dpdk:
                    continue
                live = dump_ports_packets(self.switches[leaf].ofctl(
                    "--names", "dump-ports", fsw.bridge))
                now = link_counters(self.fplan, {fsw.ns})
                for p in fsw.ports:
                    name = "%s:%s" % (leaf, p.name)
                    if (not p.to_host and p.name in live and name in ports
                            and name in now):
                        ports[name] = dict(ports[name], **live[p.name])
                        links[name] = now[name]
        snap = {"ports": ports, "qdisc": qdisc_counters(self.fplan),
                "tcp": tcp, "links": links, "normal": normal}
        if self.control is not None:
            # The BFD packets of the switches without DPDK, apart, and
            # their veths' counters read again right before.
            links.update(link_counters(self.fplan, {
                s.ns for s in self.fplan.switches if not s.dpdk}))
            snap["control"] = self.control.read()
        return snap

    def own(self, name: str, ifaces: Dict[str, Any]) -> Dict[str, Any]:
        """Of IFACES (interface name -> row or statistics, of switch
        NAME's ovs-vswitchd), those of NAME: all of them, but in an
        ovs-vswitchd whose bridges are several switches (the HLT leaves
        of several planes), its ports, its rings and its bridge's
        interface."""
        fsw = self.fplan.switch(name)
        if not self.fplan.shared_hlt or name not in self.fplan.hlt_leaves:
            return ifaces
        mine = ({p.name for p in fsw.ports} | {fsw.bridge}
                | {self.fplan.ring_on(d, name) for d in self.fplan.dcms})
        return {k: v for k, v in ifaces.items() if k in mine}

    def failover_port(self) -> Optional[Tuple[str, str]]:
        """The switch port --failover sets down (spine, port), or None."""
        if (not self.cfg.failover[0] or self.target is None
                or self.target.link is None):
            return None
        _, _, spine, port = self.target.link
        return spine, port

    def _drops(self, before: Dict[str, Any],  # type: ignore[override]
               after: Dict[str, Any]) -> Dict[str, Any]:
        """The fabric's account of the mode's frames (fabric_drops())."""
        return fabric_drops(self.fplan, self.failover_port(), before,
                            after)

    def run_mode(self, mode: str, params: Dict[str, Any], label: str
                 ) -> Dict[str, Any]:
        if mode.startswith("daqring"):
            # Each ring's options with the sharing policy (not one ring
            # per link, as on one switch).
            params = ring_params(self.cfg, mode)
        r = super().run_mode(mode, params, label)
        if r.get("status") != "ok":
            return r
        # Goodput of the whole fabric: every DCM's bytes over the time at
        # least one event was being collected anywhere (the union of all
        # events' intervals), against the fabric's limit.
        spans = r.pop("spans_all", None)
        if spans:
            busy = busy_time(spans)
            r["per_dcm_goodput_bps"] = r["goodput_bps"]
            r["goodput_bps"] = sum(r["event_bytes"]) * 8 / busy
            r["busy_s"] = busy
            r["ideal_ratio"] = r["goodput_bps"] / self.ideal["goodput_bps"]
        r["limit_ratio"] = r["ideal_ratio"]
        fo = self.failovers.get(label)
        if fo is not None:
            samples = [(x["t_s"], x["retrans_segs"])
                       for x in fo.pop("retrans_samples")]
            end = max([z for _, z in spans or []] + [t for t, _ in samples]
                      + [0.0])
            fo["timeline"] = timeline(spans or [], r["event_bytes"],
                                      samples, end)
            degraded = fabric_limit(self.cfg, self.fplan,
                                    spines=self.cfg.spines - 1)
            fo["limit_goodput_bps"] = self.limit["goodput_bps"]
            fo["degraded_limit_goodput_bps"] = degraded["goodput_bps"]
            fo["degraded_limit"] = degraded
            # The failover targets, from the events themselves:
            # how long after the loss the goodput was back to 95% of the
            # degraded limit, and after the recovery to 95% of the full
            # one (over RECOVERY_WINDOW seconds; None: never, before the
            # events ended).
            for key, at, lim in (
                    ("recovered_after_s", fo["down_at_s"],
                     degraded["goodput_bps"]),
                    ("restored_after_s", fo["up_at_s"],
                     self.limit["goodput_bps"])):
                fo[key] = (None if at is None else recovery(
                    spans or [], r["event_bytes"], at,
                    RECOVERY_FRACTION * lim))
            r["failover"] = fo
            if fo.get("error"):
                r.update(status="error", error="failover: %s"
                         % fo["error"])
        r["host_arp"] = self.host_arp()
        r["valid"] = (self.switch is not None and r["pmd_cpu_share"] >= 0.9)
        if self.switch is None:
            r["invalid_reason"] = "no PMD (--fabric-dpdk off)"
        elif not r["valid"]:
            r["invalid_reason"] = ("the PMD had %.0f%% of its core"
                                   % (100 * r["pmd_cpu_share"]))
        return r

    def document(self) -> Dict[str, Any]:
        doc = super().document()
        plan = self.fplan
        doc["topology"] = {
            "kind": "fabric",
            "congestion_control": {"configured": self.cfg.congestion_control,
                                   "hosts": dict(self.hosts_cc)},
            "ros": self.cfg.ros, "dcms": self.cfg.dcms,
            "ros_per_host": self.cfg.ros_per_host,
            "ros_hosts": len(plan.ros_hosts),
            "planes": plan.planes,
            "hlt_hosts": [{"name": h.name, "ns": h.ns, "ips": h.ips,
                           "port": "%s:%s" % (HLT_LEAF, h.port),
                           "ports": ["%s:%s" % (leaf, h.port_in(p))
                                     for p, leaf in enumerate(
                                         plan.hlt_leaves)]}
                          for h in plan.hlt_hosts],
            "switches": [{"name": s.name, "role": s.role, "ns": s.ns,
                          "dpdk": s.dpdk,
                          "ports": [p.name for p in s.ports]}
                         for s in plan.switches],
            "links": ["%s:%s-%s:%s" % lk for lk in plan.links],
            "fabric_db_members": self.cfg.fabric_db_members,
            "host_arp": self.cfg.host_arp,
            "cpu_plan": {
                "pmd_cpus": self.cfg.pmd_cpus if self.switch else [],
                "other_cpus": self.cfg.agent_cpus,
                "dpdk_switch": HLT_LEAF if self.switch else None,
                "dpdk_bridges": {s.name: s.bridge for s in plan.switches
                                 if s.dpdk}}}
        doc["fabric"] = {"limit": self.limit,
                         "hold_down_s": HOLD_DOWN,
                         "sharing": ring_params(self.cfg,
                                                "daqring")["sharing"],
                         "programming": self.generations}
        return doc
