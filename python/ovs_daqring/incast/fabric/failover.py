# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""--failover: a leaf-spine link of the fabric taken down and up again,
or a whole spine (its ovs-vswitchd killed and started again), during a
mode's events (--failover-target chooses which: resolve_target()); what
the fabric did meanwhile (the routes moved off the failed spine and
back, the retransmissions, a loss probe's count: probe.py), and the
goodput's timeline and recovery judged on the events."""

import datetime
import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...hosts import ConfigError
from ...process import Cleanup, RunError, read_text, run
from ...sandbox import Sandbox
from ..topology import parse_snmp
from .plan import HLT_LEAF, NET, FabricPlan, plane_name
from .probe import LossProbe
from .procs import SYSTEM_PORT_RCVBUF, rcvbuf
from ...daqctl.openflow import BOUNCE_VID
from .routes import detour_counts, fabric_flows, no_flood_ports

# --failover: seconds between samples of the TCP counters and the routes,
# and the width of the goodput timeline's bins.
FAILOVER_SAMPLE = 0.1
# --failover: seconds after the failure before the first sample of the
# routes.  Each sample runs two ovs-ofctl per watched leaf (six in all)
# on the shared core: at once after the failure, they took the CPU that
# the reroute they measure needed (the planner's target is 100 ms).
ROUTES_QUIET = 0.15
# --failover: seconds past the hold-down that a mode whose events ended
# waits for the DCMs to be routed home again.
FAILOVER_SETTLE = 15
# --failover: the recovery targets are judged on the goodput over
# RECOVERY_WINDOW seconds reaching RECOVERY_FRACTION of the limit.
RECOVERY_WINDOW = 1.0
RECOVERY_FRACTION = 0.95
TIMELINE_BIN = 0.25
# --failover-target spine:NAME: BFD on every link of the fabric map (the
# fabric map's keys, milliseconds): a killed ovs-vswitchd leaves its
# veths' carrier up, so only BFD tells the leaves (and, through their
# agents, the planner) that the spine is gone: after mult x min-rx.  A
# multiplier of 5, not OVS's 3: the 2-core machine's loaded switches
# flapped sessions of 100 ms x 3 (fabric.rst).
SPINE_BFD = {"min-rx": 100, "min-tx": 100, "mult": 5}
# Seconds a restarted spine's ovs-vswitchd may take to open its ports.
RESTART_TIMEOUT = 30
# Seconds the kernel may take to tell a failed link's leaf (CarrierWatch).
CARRIER_TIMEOUT = 2.0

Link = Tuple[str, str, str, str]

# `ip -ts -o monitor link`: "[TIME] INDEX: NAME[@PEER]: <FLAGS> ...", TIME
# local, to the microsecond.
MONITOR_LINE = re.compile(
    r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{1,6})\]\s+\d+:\s+"
    r"([^:@\s]+)(?:@\S+)?:\s+<([^>]*)>")


def carrier_down_at(line: str, port: str) -> Optional[float]:
    """When (time.time()) a line of `ip -ts -o monitor link` says that
    PORT's carrier is down (NO-CARRIER, or no LOWER_UP), or None (also
    for a line it cannot read: the reader thread must not die of one)."""
    m = MONITOR_LINE.match(line)
    if not m or m.group(2) != port:
        return None
    flags = m.group(3).split(",")
    if "NO-CARRIER" not in flags and "LOWER_UP" in flags:
        return None
    try:
        return datetime.datetime.strptime(
            m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp()
    except ValueError:
        return None


class CarrierWatch:
    """When the kernel tells a switch that its PORT (in namespace NS)
    lost its carrier: a netlink link message, which is all a leaf's
    ovs-vswitchd learns a link failure by (its system ports' carrier, its
    DPDK af_packet and tap ports' link state).  Setting the far end of a
    veth down takes the near end's carrier off at once, but the kernel
    sends the message only after its link watch has run (tens of
    milliseconds here): frames the leaf sends meanwhile are lost in the
    link whatever the switch does.  `ip monitor` in NS from start() on;
    seen(): the first such message at or after SINCE (time.time())."""

    def __init__(self, ns: str, port: str) -> None:
        self.ns, self.port = ns, port
        self.proc: Optional[subprocess.Popen] = None
        self.times: List[float] = []
        self.lock = threading.Lock()
        self.thread: Optional[threading.Thread] = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["ip", "-n", self.ns, "-ts", "-o", "monitor", "link"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            universal_newlines=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            t = carrier_down_at(line, self.port)
            if t is not None:
                with self.lock:
                    self.times.append(t)

    def seen(self, since: float, timeout: float) -> Optional[float]:
        """The first carrier loss at or after SINCE, waiting up to
        TIMEOUT seconds for it; None if there was none."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                after = [t for t in self.times if t >= since]
            if after or time.monotonic() >= deadline:
                return min(after) if after else None
            time.sleep(0.01)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def failover_link(plan: FabricPlan) -> Link:
    """The link --failover takes down by default: the HLT leaf's to the
    second spine (leaf, its port, spine, its port)."""
    return next(lk for lk in plan.links
                if lk[0] == HLT_LEAF and lk[2] == "spine1")


@dataclass(frozen=True)
class FailTarget:
    """What --failover fails: a leaf-spine LINK (leaf, its port, spine,
    its port; its spine end is set down), or a SPINE (link None: its
    ovs-vswitchd is killed)."""
    kind: str                   # "link" or "spine"
    spine: str
    link: Optional[Link] = None

    @property
    def name(self) -> str:
        if self.link is not None:
            return "%s:%s-%s:%s" % self.link
        return "spine:%s" % self.spine

    @property
    def leaf(self) -> Optional[str]:
        """The leaf at the failed link's other end (None: a spine)."""
        return self.link[0] if self.link is not None else None


def leaf_role(plan: FabricPlan, leaf: Optional[str]) -> Optional[str]:
    """LEAF's role in PLAN: "hlt" (its hosts are HLT hosts), "ros", or
    None (no leaf: a spine failed)."""
    if leaf is None:
        return None
    return "hlt" if leaf in plan.hlt_leaves else "ros"


def _links_text(plan: FabricPlan) -> str:
    return ", ".join("link:%s:%s (= link:%s:%s)" % (lf, lp, sp, spp)
                     for lf, lp, sp, spp in plan.links)


def resolve_target(plan: FabricPlan, text: str) -> FailTarget:
    """--failover-target TEXT against PLAN: "" (the default, the HLT
    leaf's link to the second spine: failover_link()), "link:SWITCH:PORT"
    (a leaf-spine link of PLAN, named by either end) or "spine:NAME" (a
    spine of PLAN).  ConfigError naming what is valid otherwise."""
    text = text.strip()
    if not any(s.name == "spine1" for s in plan.switches):
        raise ConfigError("--failover needs --spines 2 (a path to move "
                          "the DCMs to)")
    if not text:
        lk = failover_link(plan)
        return FailTarget("link", lk[2], lk)
    kind, _, rest = text.partition(":")
    if kind == "link":
        sw, sep, port = rest.rpartition(":")
        if not sep or not sw or not port:
            raise ConfigError("--failover-target %r: link:SWITCH:PORT, a "
                              "leaf-spine link by either end; the plan's "
                              "links: %s" % (text, _links_text(plan)))
        for lk in plan.links:
            if (sw, port) in ((lk[0], lk[1]), (lk[2], lk[3])):
                return FailTarget("link", lk[2], lk)
        raise ConfigError("--failover-target %s: %s:%s is not an end of a "
                          "leaf-spine link of this fabric; its links: %s"
                          % (text, sw, port, _links_text(plan)))
    spines = [s.name for s in plan.switches if s.role == "spine"]
    if kind == "spine":
        if rest in spines:
            return FailTarget("spine", rest)
        raise ConfigError("--failover-target %s: no spine %r in this "
                          "fabric; its spines: %s"
                          % (text, rest, ", ".join(spines)))
    raise ConfigError("--failover-target %r: link:SWITCH:PORT (a "
                      "leaf-spine link, e.g. link:ros-leaf0:up1) or "
                      "spine:NAME (e.g. spine:%s)"
                      % (text, spines[-1] if spines else "spine1"))


def target_plane(plan: FabricPlan, target: FailTarget) -> int:
    return plan.switch(target.spine).plane


def watched_leaves(plan: FabricPlan, target: FailTarget) -> List[str]:
    """The leaves whose routes through the failed spine --failover
    samples: the failed link's leaf, the first ROS leaf and the HLT
    leaf of its plane."""
    p = target_plane(plan, target)
    out = [plane_name(p, "ros-leaf0"), plan.hlt_leaves[p]]
    if target.leaf and target.leaf not in out:
        out.insert(0, target.leaf)
    return out


def spine_port(plan: FabricPlan, leaf: str, spine: str) -> str:
    """LEAF's port to SPINE."""
    return next(lk[1] for lk in plan.links
                if lk[0] == leaf and lk[2] == spine)


def dcms_on(plan: FabricPlan, target: FailTarget,
            assignments: Dict[str, str]) -> List[str]:
    """The addresses of the DCMs ASSIGNMENTS (DCM -> "plane/spine") put
    on TARGET's spine."""
    want = "%d/%s" % (target_plane(plan, target), target.spine)
    return [d.ips[0] for d in plan.dcms
            if assignments.get(plan.dcm_name(d)) == want]


def probe_ends(plan: FabricPlan, target: FailTarget,
               assignments: Dict[str, str]
               ) -> Tuple[Tuple[str, str], Tuple[str, str], bool]:
    """The loss probe's ends, (namespace, address) of a ROS host and of
    a DCM, whose path crosses TARGET: a ROS host on the failed link's
    leaf (if a ROS leaf; else the first), a DCM ASSIGNMENTS (DCM ->
    "plane/spine") put on the failed spine (else the first DCM: False
    says its path does not cross it)."""
    plane = target_plane(plan, target)
    hosts = [h for h in plan.ros_hosts
             if target.leaf == plan.ros_leaf(h.ns, plane)] or plan.ros_hosts
    want = "%d/%s" % (plane, target.spine)
    dcms = [d for d in plan.dcms
            if assignments.get(plan.dcm_name(d)) == want]
    d = (dcms or plan.dcms)[0]
    return ((hosts[0].ns, hosts[0].ips[0]), (d.ns, d.ips[0]), bool(dcms))


def _on_cpus(cpus: Sequence[int]) -> Any:
    """A restarted ovs-vswitchd's preexec_fn: on CPUS.  Not
    die_with_parent(): its signal follows the *thread* that started the
    process (the failover's, which ends with the mode), and the switch
    must outlive it; the run's Cleanup stops it (Sandbox.stop(), by its
    pid) as it stops the first one."""
    def fn() -> None:
        os.sched_setaffinity(0, set(cpus))
    return fn


def timeline(spans: Sequence[Tuple[float, float]], nbytes: Sequence[int],
             samples: Sequence[Tuple[float, int]], end: float,
             width: float = TIMELINE_BIN) -> List[Dict[str, float]]:
    """Goodput and retransmitted segments per bin of WIDTH seconds: the
    bytes of the events that completed in the bin, and the growth of the
    retransmission count (SAMPLES: (time, RetransSegs so far))."""
    n = max(1, int(end / width) + 1)
    got = [0] * n
    for (_, z), b in zip(spans, nbytes):
        got[min(n - 1, max(0, int(z / width)))] += b
    re_ = [0] * n
    last = samples[0][1] if samples else 0
    for t, v in samples:
        re_[min(n - 1, max(0, int(t / width)))] += v - last
        last = v
    return [{"t_s": i * width, "goodput_bps": got[i] * 8 / width,
             "retrans_segs": re_[i]} for i in range(n)]


def recovery(spans: Sequence[Tuple[float, float]], nbytes: Sequence[int],
             since: float, target_bps: float,
             window: float = RECOVERY_WINDOW) -> Optional[float]:
    """Seconds from SINCE to the first moment T from which the events
    completed in [T, T + WINDOW] carried at least TARGET_BPS (0 if at
    once); None if no such window ends before the last event does."""
    ends = sorted((z, b) for (_, z), b in zip(spans, nbytes))
    if not ends:
        return None
    step = 0.05
    t = since
    while t + window <= ends[-1][0] + 1e-9:
        got = sum(b for z, b in ends if t < z <= t + window)
        if got * 8 / window >= target_bps:
            return t - since
        t += step
    return None


class Failover(threading.Thread):
    """--failover in one mode: TARGET fails at DOWN and comes back at UP
    (DOWN_UP: seconds from the DCMs' go); meanwhile the retransmissions
    of every host and, on the leaves of watched_leaves(), the routes out
    of their uplinks to the failed spine are sampled (when the fabric
    moved the DCMs away, and back).  PLAN: the fabric's; AGENT_NS: the
    agents' namespaces by pid (one process per host namespace is read);
    SWITCHES: each switch's ovs-vswitchd by name; CPUS: where a
    restarted ovs-vswitchd runs; CLEANUP: the run's."""

    def __init__(self, down_up: Tuple[float, float], plan: FabricPlan,
                 agent_ns: Dict[int, str], switches: Dict[str, Sandbox],
                 target: FailTarget, cpus: Sequence[int],
                 cleanup: Cleanup) -> None:
        super().__init__(daemon=True)
        self.plan = plan
        self.switches = switches
        self.down_at, self.up_at = down_up
        self.target = target
        self.cpus = list(cpus)
        self.cleanup = cleanup
        self.t0 = time.monotonic()
        self.halt = threading.Event()
        self.samples: List[Tuple[float, int]] = []
        self.routes: List[Tuple[float, int]] = []
        self.events: Dict[str, float] = {}
        self.down_wall: Optional[float] = None
        # A link's: when the leaf's kernel told it of the failure.
        self.carrier: Optional[CarrierWatch] = None
        self.notified_wall: Optional[float] = None
        self.error: Optional[str] = None
        self.probe: Optional[LossProbe] = None
        # The addresses of the DCMs on the failed spine when the mode
        # started (None: every DCM's): the routes sampled are theirs (in
        # another plane, a DCM's standing routes may put the failed
        # spine first too, and the planner does not move it).
        self.dcm_ips: Optional[List[str]] = None
        # The DCMs' flows through the failed spine before it failed.
        self.before = 0
        self.back = threading.Event()
        # One process per host namespace: /proc/PID/net/snmp is that
        # namespace's (no fork per sample).
        seen: Dict[str, int] = {}
        for pid, ns in agent_ns.items():
            if ns in plan.hosts_ns and ns not in seen and \
                    os.path.exists("/proc/%d" % pid):
                seen[ns] = pid
        self.pids = list(seen.values())
        self.last: Dict[int, int] = {}

    def retrans(self) -> int:
        """Retransmitted segments of every host so far (a namespace whose
        process has exited counts as when it was last read)."""
        for pid in self.pids:
            c = parse_snmp(read_text("/proc/%d/net/snmp" % pid))
            if "Tcp.RetransSegs" in c:
                self.last[pid] = c["Tcp.RetransSegs"]
        return sum(self.last.values())

    def uplink_routes(self) -> int:
        """The DCMs' flows through the failed spine: on each watched
        leaf, those whose first choice (a fast_failover group's first
        bucket) is its uplink to the spine, towards the DCMs (the ROS
        leaves) or from them (the HLT leaf)."""
        n = 0
        for name in watched_leaves(self.plan, self.target):
            sw = self.switches[name]
            fsw = self.plan.switch(name)
            up = spine_port(self.plan, name, self.target.spine)
            flows = fabric_flows(fsw, sw.ofctl("--names", "dump-flows",
                                               fsw.bridge),
                                 sw.ofctl("--names", "dump-groups",
                                          fsw.bridge))
            n += sum(1 for f in flows
                     if f[2] == up and f[1].startswith(NET + ".0.")
                     and (self.dcm_ips is None or f[1] in self.dcm_ips))
        return n

    def detours(self) -> Dict[str, Dict[str, int]]:
        """Per leaf, the packets its detour flows carried (bounced to it
        by a spine and sent up again) and dropped (a second bounce), as
        its flows count them now (routes.detour_counts())."""
        out: Dict[str, Dict[str, int]] = {}
        for s in self.plan.switches:
            if s.role == "spine" or s.name not in self.switches:
                continue
            try:
                out[s.name] = detour_counts(self.switches[s.name].ofctl(
                    "dump-flows", s.bridge, "dl_vlan=%d" % BOUNCE_VID))
            except RunError:
                continue
        return out

    def set_link(self, up: bool) -> None:
        assert self.target.link is not None
        _, _, spine, port = self.target.link
        run(["ip", "-n", self.plan.switch(spine).ns, "link", "set", port,
             "up" if up else "down"])

    def kill_spine(self) -> None:
        """The spine's ovs-vswitchd killed (SIGKILL: a crash, nothing
        cleaned up; its OVSDB, its veths and its agent stay)."""
        p = self.switches[self.target.spine].vswitchd
        if p is None or p.poll() is not None:
            raise RunError("%s: ovs-vswitchd is not running"
                           % self.target.spine)
        p.send_signal(signal.SIGKILL)
        p.wait(30)

    def restart_spine(self) -> None:
        """The spine's ovs-vswitchd started again on its database (as the
        Sandbox started it, in the spine's namespace), its system ports'
        sockets with their receive buffer (procs.rcvbuf), until it has
        opened every port; then the ports' no-flood of daq-incast's
        basic connectivity (the agent puts back the rest: its flows,
        groups and BFD)."""
        sw = self.switches[self.target.spine]
        fsw = self.plan.switch(self.target.spine)
        if os.path.exists(sw.ctl):
            os.unlink(sw.ctl)
        with rcvbuf(SYSTEM_PORT_RCVBUF, self.cleanup):
            with open(os.path.join(sw.dir, "ovs-vswitchd.out"), "a") as out:
                sw.vswitchd = subprocess.Popen(
                    ["ip", "netns", "exec", fsw.ns, sw.bin.vswitchd,
                     sw.db, "--unixctl=" + sw.ctl, "--log-file="
                     + os.path.join(sw.dir, "ovs-vswitchd.log"),
                     "-vconsole:off"], env=sw.env, stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=_on_cpus(self.cpus))
            deadline = time.monotonic() + RESTART_TIMEOUT
            names = [p.name for p in fsw.ports]
            while True:
                sw.alive()
                try:
                    shown = sw.ofctl("show", fsw.bridge, timeout=5)
                    if all("(%s)" % n in shown for n in names):
                        break
                except RunError:
                    pass
                if time.monotonic() > deadline:
                    raise RunError("%s: restarted ovs-vswitchd did not "
                                   "open its ports within %d s:\n%s"
                                   % (fsw.name, RESTART_TIMEOUT,
                                      sw.log_tail()))
                time.sleep(0.1)
        for port in no_flood_ports(self.plan).get(fsw.name, []):
            sw.ofctl("mod-port", fsw.bridge, port, "no-flood")

    def fail(self, down: bool) -> None:
        """The target down (DOWN) or back."""
        if self.target.kind == "spine":
            if down:
                self.kill_spine()
            else:
                self.restart_spine()
        else:
            self.set_link(not down)

    def run(self) -> None:
        try:
            if self.target.link is not None:
                leaf, port = self.target.link[:2]
                self.carrier = CarrierWatch(self.plan.switch(leaf).ns, port)
                self.cleanup.push("stop ip monitor", self.carrier.stop)
                self.carrier.start()
            self._run()
        except Exception as e:              # reported, not raised
            self.error = str(e)
        finally:
            if "down" in self.events and "up" not in self.events:
                self.events["up"] = time.monotonic() - self.t0
                try:
                    self.fail(False)
                except (RunError, OSError) as e:
                    self.error = "%s; back up: %s" % (self.error or "", e)

    def _run(self) -> None:
        next_routes = 0.0
        while not self.halt.wait(FAILOVER_SAMPLE):
            t = time.monotonic() - self.t0
            self.samples.append((t, self.retrans()))
            # (Each event at the moment it happened: the reads before it
            # take tenths of a second.)
            if "down" not in self.events and t >= self.down_at:
                self.before = self.uplink_routes()
                t = self.events["down"] = time.monotonic() - self.t0
                # (The agents' logs have wall-clock times: the critical
                # path's, bench/fabric_path.py.)
                self.down_wall = time.time()
                self.fail(True)
                next_routes = t + ROUTES_QUIET
            elif ("down" in self.events and "up" not in self.events
                  and t >= self.up_at):
                t = self.events["up"] = time.monotonic() - self.t0
                self.fail(False)
                self.events["up_done"] = time.monotonic() - self.t0
            if "down" in self.events and t >= next_routes and (
                    "rerouted" not in self.events
                    or ("up" in self.events and "back" not in self.events)):
                next_routes = t + 0.25
                n = self.uplink_routes()
                # When the flows were read: the reads (ovs-ofctl on the
                # loaded core) take tenths of a second, and the agents
                # may reprogram meanwhile.
                t = time.monotonic() - self.t0
                self.routes.append((t, n))
                if n == 0 and "rerouted" not in self.events:
                    self.events["rerouted"] = t
                elif (n == self.before and "up" in self.events
                      and "rerouted" in self.events):
                    self.events["back"] = t
                    self.back.set()

    def settle(self, timeout: float) -> None:
        """After the events: until the routes are back through the
        recovered link (the DCMs home after the hold-down), at most
        TIMEOUT seconds, so that a run whose events end early still
        sees the reprogramming."""
        if "down" in self.events and "rerouted" in self.events:
            self.back.wait(timeout)

    def result(self) -> Dict[str, Any]:
        ev = self.events
        if self.carrier is not None and self.down_wall is not None:
            self.notified_wall = self.carrier.seen(self.down_wall,
                                                   CARRIER_TIMEOUT)
        out: Dict[str, Any] = {
            "target": self.target.name, "kind": self.target.kind,
            "spine": self.target.spine,
            # (As before targets: what failed, for the plots and the
            # bench; a spine's is "spine:NAME".)
            "link": self.target.name,
            # The failed link's leaf and its role ("ros", "hlt"; None
            # for a spine): which direction its own groups reroute.
            "leaf": self.target.leaf,
            "leaf_role": leaf_role(self.plan, self.target.leaf),
            "down_at_s": ev.get("down"), "up_at_s": ev.get("up"),
            # The same moment by the wall clock (time.time()).
            "down_wall": self.down_wall,
            # A link's: when the kernel told its leaf that the link's
            # carrier was lost (CarrierWatch), from the failure; None if
            # it did not (within CARRIER_TIMEOUT of this result).
            "leaf_notified_after_s": (
                round(self.notified_wall - self.down_wall, 4)
                if self.notified_wall is not None
                and self.down_wall is not None else None),
            # (A spine: when its restarted ovs-vswitchd had its ports.)
            "up_done_at_s": ev.get("up_done"),
            "rerouted_after_s": (ev["rerouted"] - ev["down"]
                                 if "rerouted" in ev else None),
            "back_after_s": (ev["back"] - ev["up"]
                             if "back" in ev and "up" in ev else None),
            "flows_via_failed_spine_before": self.before,
            "routes_watched_on": watched_leaves(self.plan, self.target),
            "routes_via_failed_spine": [
                {"t_s": t, "flows": n} for t, n in self.routes],
            "retrans_samples": [{"t_s": t, "retrans_segs": n}
                                for t, n in self.samples]}
        out["detours"] = self.detours()
        if self.probe is not None:
            out["probe"] = self.probe.result()
        if self.error:
            out["error"] = self.error
        return out
