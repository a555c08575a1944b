# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""--failover: a link of the fabric taken down and up again during a
mode's events, what the fabric did meanwhile (the routes moved off the
failed spine and back, the retransmissions), and the goodput's timeline
and recovery judged on the events."""

import os
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...process import RunError, read_text, run
from ...sandbox import Sandbox
from ..topology import parse_snmp
from .plan import HLT_LEAF, NET, FabricPlan
from .routes import fabric_flows

# --failover: seconds between samples of the TCP counters and the routes,
# and the width of the goodput timeline's bins.
FAILOVER_SAMPLE = 0.1
# --failover: seconds past the hold-down that a mode whose events ended
# waits for the DCMs to be routed home again.
FAILOVER_SETTLE = 15
# --failover: the recovery targets are judged on the goodput over
# RECOVERY_WINDOW seconds reaching RECOVERY_FRACTION of the limit.
RECOVERY_WINDOW = 1.0
RECOVERY_FRACTION = 0.95
TIMELINE_BIN = 0.25


def failover_link(plan: FabricPlan) -> Tuple[str, str, str, str]:
    """The link --failover takes down: the HLT leaf's to the second
    spine (leaf, its port, spine, its port)."""
    return next(lk for lk in plan.links
                if lk[0] == HLT_LEAF and lk[2] == "spine1")


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
    """--failover in one mode: the link goes down at DOWN and up at UP
    (DOWN_UP: seconds from the DCMs' go); meanwhile the retransmissions
    of every host and, on the first ROS leaf, the routes out of its
    uplink to the failed spine are sampled (when the fabric moved the
    DCMs away, and back).  PLAN: the fabric's; AGENT_NS: the agents'
    namespaces by pid (one process per host namespace is read);
    SWITCHES: each switch's ovs-vswitchd by name."""

    def __init__(self, down_up: Tuple[float, float], plan: FabricPlan,
                 agent_ns: Dict[int, str],
                 switches: Dict[str, Sandbox]) -> None:
        super().__init__(daemon=True)
        self.plan = plan
        self.switches = switches
        self.down_at, self.up_at = down_up
        self.link = failover_link(plan)
        self.t0 = time.monotonic()
        self.halt = threading.Event()
        self.samples: List[Tuple[float, int]] = []
        self.routes: List[Tuple[float, int]] = []
        self.events: Dict[str, float] = {}
        self.error: Optional[str] = None
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
        """The DCMs' flows through the failed spine: on ros-leaf0 out of
        its uplink to spine1 (towards the DCMs), on the HLT leaf out of
        its uplink to spine1 (from the DCMs)."""
        n = 0
        for name in ("ros-leaf0", HLT_LEAF):
            sw = self.switches[name]
            fsw = self.plan.switch(name)
            flows = fabric_flows(fsw, sw.ofctl("--names", "dump-flows",
                                               fsw.bridge),
                                 sw.ofctl("--names", "dump-groups",
                                          fsw.bridge))
            n += sum(1 for f in flows
                     if f[2] == "up1" and f[1].startswith(NET + ".0."))
        return n

    def set_link(self, up: bool) -> None:
        _, _, spine, port = self.link
        run(["ip", "-n", self.plan.switch(spine).ns, "link", "set", port,
             "up" if up else "down"])

    def run(self) -> None:
        try:
            self._run()
        except Exception as e:              # reported, not raised
            self.error = str(e)
        finally:
            if "down" in self.events and "up" not in self.events:
                try:
                    self.set_link(True)
                    self.events["up"] = time.monotonic() - self.t0
                except RunError as e:
                    self.error = (self.error or "") + "; link up: %s" % e

    def _run(self) -> None:
        next_routes = 0.0
        while not self.halt.wait(FAILOVER_SAMPLE):
            t = time.monotonic() - self.t0
            self.samples.append((t, self.retrans()))
            # (Each event at the moment it happened: the reads before it
            # take tenths of a second.)
            if "down" not in self.events and t >= self.down_at:
                self.before = self.uplink_routes()
                self.set_link(False)
                t = self.events["down"] = time.monotonic() - self.t0
            elif ("down" in self.events and "up" not in self.events
                  and t >= self.up_at):
                self.set_link(True)
                t = self.events["up"] = time.monotonic() - self.t0
            if "down" in self.events and t >= next_routes and (
                    "rerouted" not in self.events
                    or ("up" in self.events and "back" not in self.events)):
                next_routes = t + 0.25
                n = self.uplink_routes()
                # When the flows were read: the reads (four ovs-ofctl on
                # the loaded core) take tenths of a second, and the
                # agents may reprogram meanwhile.
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
        out: Dict[str, Any] = {
            "link": "%s:%s-%s:%s" % self.link,
            "down_at_s": ev.get("down"), "up_at_s": ev.get("up"),
            "rerouted_after_s": (ev["rerouted"] - ev["down"]
                                 if "rerouted" in ev else None),
            "back_after_s": (ev["back"] - ev["up"]
                             if "back" in ev and "up" in ev else None),
            "flows_via_failed_spine_before": self.before,
            "routes_via_failed_spine": [
                {"t_s": t, "flows": n} for t, n in self.routes],
            "retrans_samples": [{"t_s": t, "retrans_segs": n}
                                for t, n in self.samples]}
        if self.error:
            out["error"] = self.error
        return out
