# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at:
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.


"""The fabric's agent on one switch (ovs-daqfabric-agent --node,
ovs-daqfabric-agent(8); the daemon's options and main loop are
cmd/ovs_daqfabric_agent.py).

It watches the fabric database through an IDL (any cluster member), computes
its switch's slice (fabric/slice.py) from the desired state and the
planner's assignments, and applies it with the reconcile core of
'ovs-daqctl apply' (one local OVSDB transaction for the daqrings, one
OpenFlow bundle for the flows, cookie-scoped).  It keeps the last slice it
applied on disk and holds its switch to it whether or not the fabric
database is reachable: it checks the switch every --interval and applies
again what differs (ovs-vswitchd restarted and lost its flows, say).  It
writes its Node row (the generation it applied, its fabric ports' link
states, its rings' occupancy, high watermark and drops) every --interval,
never more often.  With --planner it also contends for the planner lock
and, while it holds it, is the fabric's planner (fabric/plannerd.py).
This module reads the fabric database and runs the rounds; holding the
switch to its slice is fabric/switchhold.py, the slice on the disk
fabric/statefile.py, the slice as flows fabric/flows.py."""

import argparse
import json
import math
import time
from typing import Any, Dict, List, Optional, Tuple

import ovs.poller

from ..daqctl.dcmmap import default_db
from ..daqctl.model import DaqctlError
from .db import now_ms
from .flows import slice_json
from .idl import DESIRED_TABLES
from .node import INTERVAL_MIN, vlog
from .plannerd import Planner
from .slice import Slice, slices
from .statefile import CACHE_VERSION
from .switchhold import SwitchHold

PLAN_TICK = 1.0             # s: planner rounds without changes (hold-down)
# The tables a node's slice is computed from.
SLICE_TABLES = DESIRED_TABLES + ("Assignment",)
# How long an agent waits for a planner's plan of a new generation before
# it reads the generation without it (plan_pending()).
PLAN_WAIT_S = 2.0
# The prefix of the log lines that trace a failover's critical path, from
# a link's change to the last switch's new flows (fabric.rst, "Where a
# failover's time goes"; daq-bench reads them: bench/fabric_path.py).
PATH = "fabric path: "


# ========================================================== the switch's ports
def link_ports(state: Any, node: str) -> List[str]:
    """The ports of switch 'node' cabled to another switch (where BFD
    runs)."""
    return sorted({p for p in (lk.port_of(node) for lk in state.links)
                   if p is not None})


def fabric_ports(state: Any, node: str) -> List[str]:
    """The ports of switch 'node' that the planner judges paths by: its
    links' and its hosts'."""
    ports = set()
    for lk in state.links:
        p = lk.port_of(node)
        if p is not None:
            ports.add(p)
    for h in state.hosts:
        for _, leaf, port in h.attachments:
            if leaf == node:
                ports.add(port)
    return sorted(ports)


# ===================================================================== agent
class Agent(SwitchHold):
    """A switch's agent (--node): the slice the fabric database gives its
    switch (read_fabric()), the Node row it writes (report()) and, with
    --planner, the planner it may be (plan()), one round at a time
    (run(), wait()); SwitchHold holds the switch to the slice."""

    # The critical path (PATH lines): when (time.monotonic()) the agent
    # first saw its switch's links differ from those it reported; that
    # of the report in flight; when the planner's round that sent its
    # plan began; when the agent read a slice that changed its routes.
    links_seen: Optional[float] = None
    links_sent: Optional[float] = None
    plan_round: Optional[float] = None
    slice_read: Optional[float] = None
    reported_links_written: Optional[Dict[str, str]] = None
    # When (time.monotonic()) a report last changed the links.
    last_links_report = 0.0

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args, args.node)
        # Of the DCMs and assignments, those its slice is computed from
        # (FabricDb.watch_slice()): at thousands of DCMs, an HLT leaf's
        # agent would otherwise parse every row of both tables.  Its
        # planner (another IDL) monitors everything.
        self.fabric.watch_slice(self.node)
        self.planner: Optional[Planner] = None
        if args.planner:
            self.planner = Planner(args.db, self.node, args.timeout,
                                   wait=False)
        # read_fabric()'s slice and what goes with it, and the
        # FabricDb.slice_changes() it was computed at.
        self.sliced: Optional[Tuple[Any, ...]] = None
        self.seqno = -1
        self.next_check = 0.0
        self.next_plan = 0.0
        self.plan_key: Any = None
        self.plan_again = True
        self.plan_what = ""
        self.reported_links: Optional[Dict[str, str]] = None
        # (generation, until when to wait for its plan) of a generation
        # not planned yet (plan_pending()).
        self.unplanned: Optional[Tuple[int, float]] = None

    def close(self) -> None:
        if self.exiting:
            # Told to exit: a switch left waiting for this agent at its
            # next start would wait for ever (SwitchHold.restore_wait()).
            self.frw_disarm()
        self.close_switch()
        self.fabric.close()
        if self.planner is not None:
            self.planner.close()

    # ------------------------------------------------------------- fabric
    def read_fabric(self) -> None:
        """The slice the fabric database gives this node now."""
        db = self.fabric
        fab = self.fabric_root()
        if fab is None:
            return
        # Its Switch row as checked (rows are input, fabric/rows.py): a
        # bad one is not in the state, and its switch keeps the slice it
        # holds (its bridge, its OpenFlow target are not known).
        sw = db.state().switch(self.node)
        own = db.row_error("Switch", self.node)
        self.note_rows(db.row_errors(), own, int(fab.planned_generation))
        if own is not None:
            self._note(None)
            return
        if sw is None:
            # A typo in --node must not empty a switch: leave it as it is.
            self._note("no switch %s in the fabric (generation %d): the "
                       "switch is left as it is" % (self.node,
                                                    int(fab.generation)))
            return
        self._note(None)
        key = db.slice_changes()
        if self.sliced is None or self.sliced[0] != key:
            # Computed again only when what it depends on changed: a new
            # generation that leaves the map as it is for this node (its
            # DCMs, their assignments, the switches, links and hosts)
            # leaves its slice as it is too.
            state = db.state()
            sl = slices(state, db.assignments(), self.node).get(
                self.node, Slice(self.node))
            sl_json = slice_json(sl)
            if (self.sliced is not None
                    and self.sliced[4]["routes"] != sl_json["routes"]):
                self.slice_read = time.monotonic()
                vlog.info("%snew routes read: %s" % (
                    PATH, routes_diff(self.sliced[4]["routes"],
                                      sl_json["routes"])))
            if (self.sliced is not None
                    and self.sliced[4]["rings"] == sl_json["rings"]):
                # The same rings (most new slices change routes only):
                # the same object, which apply() and the rings' counters
                # (local_view()) take as unchanged without comparing.
                sl_json["rings"] = self.sliced[4]["rings"]
            self.sliced = (key, fabric_ports(state, self.node),
                           dict(state.bfd), link_ports(state, self.node),
                           sl_json, json.dumps(sl_json, sort_keys=True))
        _, ports, bfd, bfd_ports, sl_json, _ = self.sliced
        a = self.args
        want = {
            "version": CACHE_VERSION, "node": self.node,
            # The generation whose plan the slice is (the planner's
            # assignments are part of it): what --wait waits for.
            "generation": int(fab.planned_generation),
            "target": {"db": a.ovsdb or sw.db or default_db(),
                       "bridge": a.bridge or sw.bridge or "br0",
                       "of": a.of or sw.of},
            "ports": ports,
            # Interface:bfd of the link ports ({}: BFD off).
            "bfd": bfd,
            "bfd_ports": bfd_ports,
            "slice": sl_json}
        if want != self.want:
            old, self.want = self.want, want
            if (old is not None and self.error is None
                    and self.applied_gen == old["generation"]
                    and dict(old, generation=0) == dict(want, generation=0)
                    and self.applied == self.slice_text(old)):
                # A generation that leaves this switch's slice as it is
                # (most of a fabric's switches, when one DCM changes):
                # the switch holds it, as checked at the last interval,
                # and goes on being checked every interval.
                self.held(want, self.applied)
            else:
                self.next_check = 0.0

    def slice_text(self, want: Dict[str, Any]) -> str:
        """want's slice as JSON text (read_fabric()'s, if it is that
        one: a ROS leaf's slice routes every DCM)."""
        if self.sliced is not None and want["slice"] is self.sliced[4]:
            return str(self.sliced[5])
        return super().slice_text(want)

    # ------------------------------------------------------------- report
    def report(self) -> None:
        """The Node row, every interval (a transaction in flight is
        finished first; none is waited for)."""
        sent = self.report_txn is not None
        if self.report_busy():
            return
        now = time.monotonic()
        if sent and self.report_txn is None:
            self.path_links_committed(now)
        if not self.fabric_up():
            return
        self.path_links_seen(now)
        if now < self.next_report:
            # A link that changes state (its carrier, its BFD session) is
            # reported at once, not an interval later: the planner moves
            # the DCMs that crossed it.  At most one such report per
            # INTERVAL_MIN (a flapping link), counted from the last
            # report that changed the links, not from any report (a ring
            # counter's or a heartbeat just before would hold a failure
            # back: until the next interval, as wait() had no deadline
            # for it).
            if (self.reported_links is None
                    or now < self.last_links_report + INTERVAL_MIN
                    or self.links_now() == self.reported_links):
                return
        self.next_report = now + self.interval
        links, rings = self.local_view()
        self.reported_links = links
        # Whether it has looked at its switch yet: an agent that starts
        # does in its first round, and the row keeps the links it has
        # till then rather than saying them unknown for a moment (the
        # planner would move DCMs off them, and back a hold-down later).
        looked = self.rec is not None or self.error is not None
        err = self.error or self.fabric_note
        if (err is None and self.planner is not None
                and self.planner.db.down_for() > 3 * self.interval):
            # This agent reaches a member, its planner not the leader
            # (not just while it connects).
            err = "planner: %s" % self.planner_state()
        cols = self.node_columns(self.applied_gen, err, self.failed_gen)
        cols.update({
            "bfd": {p: st.get("state", "down")
                    for p, st in self.bfd.items()},
            "ring_occupancy": {r: v["occupancy"] for r, v in rings.items()},
            "ring_high_watermark": {r: v["high_watermark"]
                                    for r, v in rings.items()},
            "ring_drops": {r: v["drops"] for r, v in rings.items()}})
        old = self.reported_links_written
        self.write_report(cols, links if looked else None, now)
        if looked and old is not None and links != old:
            self.last_links_report = now
            vlog.info("%slinks reported: %s (seen %s)" % (
                PATH, links_diff(old, links), _ago(self.links_seen, now)))
            self.links_sent = (self.links_seen if self.links_seen
                               is not None else now)
            if self.report_txn is None:
                self.path_links_committed(time.monotonic())
        if looked:
            self.reported_links_written = links
        self.links_seen = None

    def path_links_seen(self, now: float) -> None:
        """Notes when the switch's links first differed from those
        reported (a PATH line when they are reported)."""
        if (self.links_seen is None and self.reported_links is not None
                and self.links_now() != self.reported_links):
            self.links_seen = now

    def path_links_committed(self, now: float) -> None:
        if self.links_sent is not None:
            vlog.info("%slinks report committed (%s)"
                      % (PATH, _ago(self.links_sent, now, "seen")))
            self.links_sent = None

    # ------------------------------------------------------------ planner
    def plan(self) -> None:
        p = self.planner
        if p is None:
            return
        p.db.run()
        now = time.monotonic()
        # A round when what the plan depends on changed (not the nodes'
        # reports), when a DCM away from home may go back (its hold-down
        # ends), and every PLAN_TICK while a round did not get to plan.
        due = self.plan_again and now >= self.next_plan
        # Its transaction in flight: a look at every round (it never
        # waits), at its answer and its timeout (wait()).
        if not p.in_flight() and (not p.db.connected() or (
                p.db.plan_key() == self.plan_key and not due)):
            return
        self.next_plan = now + PLAN_TICK
        in_flight = p.in_flight()
        try:
            what = p.step()
        except DaqctlError as e:
            what = "failed: %s" % e
        if what == "committing":
            # Sent, not answered yet: the next round looks at it.
            if not in_flight and p.sent is not None:
                self.plan_round = now
                vlog.info("%splanner: plan sent: %d assignments changed "
                          "(round %s)" % (PATH, p.sent,
                                          _ms(time.monotonic() - now)))
            return
        if what == "planned":
            if self.plan_round is not None:
                vlog.info("%splanner: plan committed (%s)" % (
                    PATH, _ago(self.plan_round, time.monotonic(),
                               "round began")))
                self.plan_round = None
            for n in p.notes:
                vlog.info("planner: %s" % n)
        if what != self.plan_what and what not in ("planned", "unchanged"):
            vlog.info("planner: %s" % what)
        elif what == "planned":
            vlog.info("planner: planned generation %d (epoch %s)"
                      % (int(p.db.root().planned_generation), p.epoch))
        self.plan_what = what
        # With the nodes' reports as the round read them: one that
        # changed, fell silent or was heard again during the round (its
        # commit runs the IDL) makes the next round plan again.
        self.plan_key = p.db.plan_key(p.seen)
        if what not in ("planned", "unchanged"):
            # Not planned (no lock yet, a failed round): again a tick
            # later.
            self.plan_again = True
        elif p.next_due is not None:
            # A DCM away from home goes back when its hold-down ends:
            # a round then, not at every tick until then (each plans
            # every DCM: seconds of a shared core at thousands).
            self.plan_again = True
            self.next_plan = now + max(0.0, (p.next_due - now_ms()) / 1000.0)
        else:
            # Nothing changes until what the plan depends on does.
            self.plan_again = False

    # --------------------------------------------------------------- loop
    def run(self) -> None:
        """One round: the fabric's news, the link states, the planner,
        the switch, the report.  The planner and a link's change come
        before this switch's own apply (which waits for ovs-vswitchd,
        seconds at thousands of daqrings): every other switch waits for
        the plan, and the plan for the link states."""
        self.fabric.run()
        if self.rec is not None:
            # Waited on in wait(): it must run every round.
            self.rec.db.idl.run()
        self.report()
        self.plan()
        # Never a slice from rows selected by conditions the server has
        # not acknowledged (FabricDb.narrow()): it could lack rows it
        # needs, and the switch would lose their rings or routes until
        # the rows arrive.  The switch holds the last slice meanwhile;
        # self.seqno stays, so the slice is read once they are in.
        if (self.fabric_up() and self.fabric.narrow()
                and self.fabric.changes(*SLICE_TABLES) != self.seqno
                and not self.plan_pending()):
            # Only what the slice depends on: not the nodes' reports.
            self.seqno = self.fabric.changes(*SLICE_TABLES)
            self.read_fabric()
        if (self.watch is not None and self.watch.ready
                and self.watch.news()):
            # Someone changed the switch's flows (this agent too, at its
            # last apply): a look now, not an interval later.
            self.next_check = min(self.next_check, time.monotonic())
        if self.want is not None and time.monotonic() >= self.next_check:
            t = time.monotonic()
            self.apply()
            self.next_check = time.monotonic() + self.interval
            if self.slice_read is not None and self.applied is not None \
                    and self.applied == self.slice_text(self.want):
                vlog.info("%snew routes applied (apply %s, %s)" % (
                    PATH, _ms(self.next_check - self.interval - t),
                    _ago(self.slice_read, time.monotonic(), "read")))
                self.slice_read = None
        # A generation held (applied, or one that leaves the slice as it
        # was), in this round; then on the disk.
        if self.next_report == 0.0:
            self.report()
        self.keep()

    def plan_pending(self) -> bool:
        """Whether the newest generation waits for its plan: it is not
        planned yet, a planner has the fabric, and the agent saw it less
        than PLAN_WAIT_S ago.  Most switches' slices depend on the plan
        (their routes follow the assignments), so every agent would read
        the generation twice, before and after the plan, and on a
        machine that runs many agents (an emulated fabric) their first
        reading takes the CPU the planner needs.  HLT leaves wait too,
        although their rings need no plan: adding a DCM's ring while the
        planner plans (a commit, and ovs-vswitchd's reconfiguration of a
        DPDK datapath) took the planner's CPU and made a one-DCM change
        slower (Documentation/topics/bench-results.md as of cb0ff10,
        "Issue 26: what the agents compute on a change of routes").
        Bounded: without a planner, or with one that does not plan, the
        agent applies the generation as it is (its rings, the links'
        BFD) after that."""
        fab = self.fabric.root()
        if (fab is None or not fab.planner
                or int(fab.planned_generation) >= int(fab.generation)):
            self.unplanned = None
            return False
        now = time.monotonic()
        if self.unplanned is None or self.unplanned[0] != int(fab.generation):
            self.unplanned = (int(fab.generation), now + PLAN_WAIT_S)
        return now < self.unplanned[1]

    def plan_wait_until(self) -> Optional[float]:
        """When plan_pending() stops waiting for the plan it waits for;
        None if it does not wait, or no more (a deadline in the past
        would make every round end at once: an agent spinning until the
        planner plans, on the core the planner needs)."""
        if self.unplanned is None or self.unplanned[1] <= time.monotonic():
            return None
        return self.unplanned[1]

    def wait(self, poller: Any) -> None:
        self.fabric.idl.wait(poller)
        if self.rec is not None:
            # The switch's link states (report() reads them).
            self.rec.db.idl.wait(poller)
        fd = self.watch.fd() if self.watch is not None else None
        if fd is not None:
            # A change of the switch's flows (run() looks at once).
            poller.fd_wait(fd, ovs.poller.POLLIN)
        deadlines = [self.report_deadline(poller)]
        if self.links_seen is not None and self.report_txn is None:
            # A link's change held back by INTERVAL_MIN (report()).
            deadlines.append(self.last_links_report + INTERVAL_MIN)
        if self.want is not None:
            deadlines.append(self.next_check)
        due = self.plan_wait_until()
        if due is not None:
            # Read without its plan then (plan_pending()).
            deadlines.append(due)
        if self.planner is not None:
            # A change wakes the planner through its IDL (and its
            # transaction in flight, answered or timed out); the tick only
            # while it has to look again (plan()'s 'due'), else an idle
            # planner would spin on a tick in the past.
            self.planner.wait(poller)
            if self.plan_again and self.planner.db.connected():
                deadlines.append(self.next_plan)
            # A node whose report becomes too old changes what the plan
            # depends on (FabricDb.plan_key()) by the clock alone.
            silence = self.planner.db.idl.next_silence()
            if silence is not None and self.planner.epoch is not None:
                deadlines.append(silence)
        # Rounded up: a deadline less than 1 ms away is not due yet, and
        # a 0 ms wait would make one more round that finds nothing to do.
        left = min(deadlines) - time.monotonic()
        poller.timer_wait(max(0, math.ceil(left * 1000)))

    def status(self) -> Dict[str, Any]:
        w = self.want
        out = self.status_head()
        out.update({
            "wanted_generation": w["generation"] if w else None,
            "rings": len(w["slice"]["rings"]) if w else 0,
            "routes": len(w["slice"]["routes"]) if w else 0,
            "switch": ("%s bridge %s" % (w["target"]["db"],
                                         w["target"]["bridge"]) if w
                       else "-"),
            "state_file": self.cache_path,
            "applies": self.n_applies,
            "checks": dict(self.n_checks),
            # Bundles through an ovs-ofctl started ahead, and not
            # (warmofctl.py).
            "bundles": self.bundle_counts(),
            "flow_monitor": ("-" if self.watch is None else "%s (started "
                             "%d times)" % ("up" if self.watch.ready
                                            else "starting",
                                            self.watch.started)),
            "monitored": self.monitored(),
            "bfd": {p: bfd_text(st) for p, st in sorted(self.bfd.items())},
            "flow_restore_wait": self.frw_text(),
            "reports": self.reports,
            "error": self.error or self.fabric_note or "-"})
        if self.planner is not None:
            out["planner"] = self.planner_state()
        return out

    def planner_state(self) -> str:
        """The planner's state in a few words ("epoch 3", "not
        connected: the fabric database is unreachable...")."""
        p = self.planner
        assert p is not None
        if not p.db.connected():
            return "not connected: %s" % p.db.unreachable()
        if p.epoch is not None:
            return "epoch %d" % p.epoch
        return self.plan_what or "starting"


def _ms(s: float) -> str:
    return "%.1f ms" % (s * 1000)


def _ago(since: Optional[float], now: float, what: str = "") -> str:
    """"12.3 ms ago" (or "WHAT 12.3 ms before"): a PATH line's delay."""
    if since is None:
        return "now"
    if what:
        return "%s %s before" % (what, _ms(now - since))
    return "%s ago" % _ms(now - since)


def links_diff(old: Dict[str, str], new: Dict[str, str]) -> str:
    """The ports whose state changed, "up1 down, dn2 up" (PATH)."""
    out = ["%s %s" % (p, new.get(p, "gone")) for p in sorted(set(old)
                                                             | set(new))
           if old.get(p) != new.get(p)]
    return ", ".join(out) or "none changed"


def routes_diff(old: List[Any], new: List[Any]) -> str:
    """How many routes a new slice changes (PATH)."""
    o = {json.dumps(r, sort_keys=True) for r in old}
    n = {json.dumps(r, sort_keys=True) for r in new}
    return "%d routes new or changed, %d gone" % (len(n - o), len(o - n))


def bfd_text(st: Dict[str, str]) -> str:
    """A BFD session in a few words: "up", "down (Control Detection Time
    Expired)", "init"... (the diagnostic, which OVS keeps after the
    session is up again, only while it is not up)."""
    text = st.get("state", "down")
    if text != "up" and st.get("diagnostic") not in (None, "",
                                                     "No Diagnostic"):
        text += " (%s)" % st["diagnostic"]
    if st.get("forwarding") != "true" and text.startswith("up"):
        text += ", not forwarding"
    return text
