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


"""ovs-daqfabric-agent: the fabric's agent on one switch
(ovs-daqfabric-agent(8)).

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
and, while it holds it, is the fabric's planner."""

import argparse
import json
import math
import os
import time
from typing import Any, Dict, List, Optional, Tuple

import ovs.poller

from ..daqctl.dcmmap import default_db
from ..daqctl.model import DaqctlError, SwitchSpec
from ..daqctl.openflow import FlowWatch
from ..daqctl.reconcile import Reconciler
from .db import now_ms
from .flows import dcm_of_json, route_ports, route_table, slice_json
from .idl import DESIRED_TABLES
from .node import INTERVAL_MIN, PROG, NodeBase, vlog
from .plannerd import Planner
from .slice import Slice, slices

CACHE_VERSION = 1
PLAN_TICK = 1.0             # s: planner rounds without changes (hold-down)
# --full-check-every's default: of the switch's checks every --interval,
# one in this many dumps and compares every flow, group and port; those
# between compare its daqrings (its OVSDB, which the agent monitors) and
# its bridge's flow count (Reconciler.holds()).  A restart of
# ovs-vswitchd or flows added or deleted by someone else are put right at
# the next interval, a flow modified in place or a port's config or a
# group changed by hand within this many (an apply of a new slice dumps
# the flows but takes the daqrings' no-flood and the groups as the last
# full check left them, unless the switch went away since).  (At 2048
# DCMs, 32 agents on one core spent it on their dumps.)
FULL_CHECK_EVERY = 10
# The tables a node's slice is computed from.
SLICE_TABLES = DESIRED_TABLES + ("Assignment",)
# How long an agent waits for a planner's plan of a new generation before
# it reads the generation without it (plan_pending()).
PLAN_WAIT_S = 2.0


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


# ===================================================================== cache
def load_cache(path: str, node: str) -> Optional[Dict[str, Any]]:
    """The last slice applied, or None (no file, or one that is not this
    node's or not readable: said in the log)."""
    try:
        with open(path) as f:
            c = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        vlog.warn("%s: cannot read the last applied slice: %s" % (path, e))
        return None
    try:
        if c.get("version") != CACHE_VERSION or c.get("node") != node:
            raise ValueError("it is not node %s's (version %d)"
                             % (node, CACHE_VERSION))
        for d in c["slice"]["rings"]:
            dcm_of_json(d)
        route_table(c["slice"]["routes"])
        int(c["generation"])
        c["target"]["bridge"]
    except (KeyError, TypeError, ValueError) as e:
        vlog.warn("%s: ignoring the last applied slice: %s" % (path, e))
        return None
    return c


def save_cache(path: str, text: str) -> None:
    """Writes 'text' (a want as JSON) to 'path' atomically: a crash
    leaves the old file or the new one."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# ===================================================================== agent
class _Log:
    """The reconciler's messages, to the log ("no changes" only at dbg:
    the switch is checked every interval)."""

    def write(self, text: str) -> None:
        for line in text.splitlines():
            if line.endswith(": no changes"):
                vlog.dbg(line)
            elif line:
                vlog.info(line)

    def flush(self) -> None:
        pass


class Agent(NodeBase):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args, args.node)
        self.cache_path: str = args.state_file
        # Of the DCMs and assignments, those its slice is computed from
        # (FabricDb.watch_slice()): at thousands of DCMs, an HLT leaf's
        # agent would otherwise parse every row of both tables.  Its
        # planner (another IDL) monitors everything.
        self.fabric.watch_slice(self.node)
        self.planner: Optional[Planner] = None
        if args.planner:
            self.planner = Planner(args.db, self.node, args.timeout,
                                   wait=False)
        self.rec: Optional[Reconciler] = None
        # The flow monitor on the switch's bridge (with self.rec).
        self.watch: Optional[FlowWatch] = None
        # Its FlowWatch.started at the last full check that succeeded: a
        # monitor started again since means the switch went away (a
        # restart of ovs-vswitchd: its ports' no-flood and its groups are
        # gone too).
        self.watch_since: Optional[int] = None
        # What the switch must hold: the cache's format (target, ports,
        # generation, slice).  From the disk at start: switching never
        # waits for the fabric database.
        self.want = load_cache(self.cache_path, self.node)
        self.saved = json.dumps(self.want, sort_keys=True)
        # The want (the object) that self.saved is.
        self.saved_want: Optional[Dict[str, Any]] = None
        if self.want is not None:
            vlog.info("%s: last applied slice of generation %d: %d rings, "
                      "%d routes" % (self.cache_path,
                                     self.want["generation"],
                                     len(self.want["slice"]["rings"]),
                                     len(self.want["slice"]["routes"])))
        # The slice (JSON text) the switch was last brought to, and its
        # generation: what the Node row reports.
        self.applied: Optional[str] = None
        self.applied_at: Optional[float] = None
        self.n_applies = 0
        # The switch's checks (apply()): full ones, and those between
        # (Reconciler.holds()) since the last full one; the bridge's flow
        # count after the last full one (None: the next is full).
        # "counted": the quick ones that counted the bridge's flows
        # (the flow monitor had news, or was not up).
        self.n_checks = {"full": 0, "quick": 0, "counted": 0}
        self.quick_since_full = 0
        self.flow_count: Optional[int] = None
        # What the last full check brought the switch to (self.want but
        # its generation, as JSON: its slice's, and the rest's).
        self.full_want: Optional[Tuple[str, str]] = None
        # What apply() derives from self.want, kept until it changes: the
        # want, its slice as JSON, its rings as DCMs, its routes, the
        # ports those go through, the want but its generation as JSON
        # (as full_want).
        self.prepared: Optional[Tuple[Any, ...]] = None
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
        # local_view()'s last ring counters: (the switch IDL's
        # change_seqno, the slice, the counters).
        self.counted: Optional[Tuple[Any, ...]] = None
        # links_now()'s: (the switch IDL's change_seqno, the want, the
        # link states).
        self.linked: Optional[Tuple[Any, ...]] = None
        # The BFD sessions of the link ports, as local_view() last read
        # them: port -> Interface:bfd_status.
        self.bfd: Dict[str, Dict[str, str]] = {}
        # (generation, until when to wait for its plan) of a generation
        # not planned yet (plan_pending()).
        self.unplanned: Optional[Tuple[int, float]] = None
        # The want held() has to keep on the disk, once reported
        # (keep()).
        self.to_keep: Optional[Dict[str, Any]] = None

    def close(self) -> None:
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
        sw = next((s for s in db.rows("Switch") if s.name == self.node),
                  None)
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
        sw_db = sw.db[0] if sw.db else None
        sw_of = sw.of[0] if sw.of else None
        want = {
            "version": CACHE_VERSION, "node": self.node,
            # The generation whose plan the slice is (the planner's
            # assignments are part of it): what --wait waits for.
            "generation": int(fab.planned_generation),
            "target": {"db": a.ovsdb or sw_db or default_db(),
                       "bridge": a.bridge or sw.bridge or "br0",
                       "of": a.of or sw_of},
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
        return json.dumps(want["slice"], sort_keys=True)

    # -------------------------------------------------------------- apply
    def reconciler(self) -> Reconciler:
        t = self.want["target"]
        spec = SwitchSpec(name=self.node, db=t["db"], of=t["of"],
                          bridge=t["bridge"], where="fabric slice")
        if self.rec is not None and (self.rec.spec.db, self.rec.spec.of,
                                     self.rec.spec.bridge) != (
                spec.db, spec.of, spec.bridge):
            self.close_switch()
        if self.rec is None:
            # Nothing known of this switch yet: the next check is full.
            self.flow_count = self.full_want = None
            self.watch_since = None
            self.rec = Reconciler(spec, self.args, _Log(),
                                  {"Interface": ["bfd", "bfd_status"]})
            self.rec.manage_groups = True
            self.watch = FlowWatch(self.rec.of)
        return self.rec

    def close_switch(self) -> None:
        """Forgets the connection to the switch (connected again at the
        next check)."""
        if self.watch is not None:
            self.watch.stop()
            self.watch = None
        if self.rec is not None:
            self.rec.close()
            self.rec = None

    def set_bfd(self, rec: Reconciler) -> None:
        """Makes Interface:bfd of the switch's link ports the fabric's
        (the agent owns it: {} when the fabric has BFD off), in a
        transaction of its own when it differs."""
        want = self.want.get("bfd", {})
        names = self.want.get("bfd_ports", [])

        def todo() -> List[Any]:
            ports = rec.db.ports(rec.db.bridge(rec.spec.bridge))
            out = []
            for n in names:
                p = ports.get(n)
                ifaces = list(p.interfaces) if p is not None else []
                if len(ifaces) == 1 and dict(ifaces[0].bfd) != want:
                    out.append(ifaces[0])
            return out

        if not todo():
            return

        def build(txn: Any) -> None:
            for iface in todo():
                iface.verify("bfd")
                iface.bfd = want
        rec.db.transact(build, "%s: BFD %s on %s" % (
            PROG, "on" if want else "off", ", ".join(names)))
        vlog.info("switch %s: BFD %s on %s" % (
            self.node, " ".join("%s=%s" % kv for kv in sorted(want.items()))
            if want else "off", ", ".join(names)))

    def apply(self) -> None:
        """Brings the switch to self.want (usually a check that finds
        nothing to do)."""
        want = self.want
        if self.prepared is None or self.prepared[0] is not want:
            # Once per slice, not per check (a ROS leaf's routes are a
            # DCM each); the rings of the last slice if the new one has
            # them (read_fabric() keeps them: a DCM moved changes the
            # routes only).
            old = self.prepared
            text = self.slice_text(want)
            self.prepared = (
                want, text,
                old[2] if (old is not None and old[0]["slice"]["rings"]
                           is want["slice"]["rings"])
                else [dcm_of_json(d) for d in want["slice"]["rings"]],
                route_table(want["slice"]["routes"]),
                {p for r in want["slice"]["routes"] for p in route_ports(r)},
                # The slice (as its text) and the rest but the generation.
                (text, json.dumps({k: v for k, v in want.items()
                                   if k not in ("generation", "slice")},
                                  sort_keys=True)))
        _, text, rings, routes, route_ports_, whole = self.prepared
        try:
            rec = self.reconciler()
            rec.result["messages"] = []
            rec.routes = routes
            self.set_bfd(rec)
            br = rec.db.bridge(rec.spec.bridge)
            missing = sorted(route_ports_ - set(rec.db.ports(br)))
            # Whether the flows may have changed since the last check
            # (the flow monitor's news, taken before the check: a change
            # during it is news at the next one).
            assert self.watch is not None
            self.watch.start()
            flows_news = self.watch.take()
            # Whether the switch may have gone away since the last full
            # check (then this one is full, and asks the switch about
            # everything).
            restarted = self.watch.started != self.watch_since
            new_slice = text != self.applied or whole != self.full_want
            if (not missing and self.error is None and not new_slice
                    and not restarted and self.flow_count is not None
                    and self.quick_since_full < self.args.full_check_every - 1
                    and rec.holds(rings, self.flow_count, flows_news)):
                self.quick_since_full += 1
                self.n_checks["quick"] += 1
                if flows_news:
                    self.n_checks["counted"] += 1
                self.held(want, text)
                return
            if not (new_slice and not restarted and self.error is None
                    and self.flow_count is not None
                    and self.watch.proc is not None):
                # A periodic full check, or one after news of the flows
                # or of a failure: the daqrings' no-flood and our groups
                # are asked from the switch.  A new slice on a switch
                # checked since (the monitor up throughout) takes them
                # as the last apply left them, and the flows too unless
                # the monitor saw them change: a change of routes only
                # (a DCM moved, rings on every plane) then costs a
                # bundle, not a dump of a thousand flows first.
                rec.forget()
            elif flows_news:
                # Flows changed since the check after the last apply
                # (which took that apply's own news): someone else's
                # change, which the flows as that apply left them would
                # not show.  Dumped.
                rec.forget_flows()
            self.flow_count = self.full_want = None
            rec.apply(lambda _cur: rings, "%s: fabric generation %d"
                      % (PROG, want["generation"]), False, False)
            self.n_checks["full"] += 1
            self.quick_since_full = 0
            self.full_want = whole
            # The count the flows the apply left give (one ovs-ofctl less
            # before the report), else the switch's; a flow someone else
            # changed meanwhile makes the next check's count differ.
            count = rec.expected_flow_count()
            self.flow_count = (count if count is not None
                               else rec.of.flow_count())
            self.watch_since = self.watch.started
        except DaqctlError as e:
            self._failed(str(e), want["generation"])
            # Connect again next time (ovs-vswitchd's management socket
            # may be back, the database restarted).
            self.close_switch()
            return
        if missing:
            self._failed("ports missing on bridge %s (routes through them "
                         "not installed, or without them as backups): %s"
                         % (want["target"]["bridge"], ", ".join(missing)),
                         want["generation"])
            return
        self.held(want, text)

    def held(self, want: Dict[str, Any], text: str) -> None:
        """The switch holds slice 'want' ('text': its slice as JSON)."""
        if text != self.applied or want["generation"] != self.applied_gen:
            vlog.info("switch %s holds the slice of generation %d: %d "
                      "rings, %d routes" % (self.node, want["generation"],
                                            len(want["slice"]["rings"]),
                                            len(want["slice"]["routes"])))
            self.n_applies += 1
            # Said at once, not an interval later ('fabric apply --wait'
            # and the other nodes wait for it).
            self.next_report = 0.0
            self.applied_at = time.time()
        if self.error is not None:
            vlog.info("switch %s: recovered" % self.node)
        self.error = None
        self.failed_gen = None
        self.applied = text
        self.applied_gen = want["generation"]
        # Kept on the disk after the round's report (run()): the other
        # nodes and 'fabric apply --wait' wait for the report, not for
        # the file.
        self.to_keep = want

    def keep(self) -> None:
        """Keeps the slice the switch holds (held()) on the disk, for a
        start while the fabric database is unreachable."""
        want, self.to_keep = self.to_keep, None
        if want is None or want is self.saved_want:
            # Kept already (every check of the switch comes here).
            return
        old = self.saved_want
        if (old is not None and old["slice"] is want["slice"]
                and dict(old, generation=0) == dict(want, generation=0)):
            # A new generation that leaves this switch's slice as it was
            # (most switches, when one DCM changes): the file keeps the
            # slice the switch holds, which is what it is for (its
            # generation is reported once the fabric is reachable again).
            self.saved_want = want
            return
        saved = json.dumps(want, sort_keys=True)
        if saved != self.saved:
            try:
                save_cache(self.cache_path, saved)
                self.saved = saved
            except OSError as e:
                vlog.warn("%s: cannot keep the applied slice: %s"
                          % (self.cache_path, e))
                return
        self.saved_want = want

    def _failed(self, why: str, generation: int) -> None:
        """The switch could not be brought to the slice of 'generation'
        (it refused it and was rolled back, or it could not be reached):
        the switch holds what it held, and the agent tries again every
        interval.  A failure of a generation is reported at once, not an
        interval later: 'fabric apply --wait' ends on it."""
        if why != self.error:
            vlog.warn("switch %s: generation %d: %s"
                      % (self.node, generation, why))
        if generation != self.failed_gen:
            self.next_report = 0.0
        self.error = why
        self.failed_gen = generation

    # ------------------------------------------------------------- report
    def local_view(self, counters: bool = True
                   ) -> Tuple[Dict[str, str], Dict[str, Dict[str, int]]]:
        """The fabric ports' link states and (if 'counters') the rings'
        counters, as the local database has them (nothing if it is not
        reachable).  A port with BFD on is up only while its BFD session
        forwards (what its fast_failover buckets watch); self.bfd gets
        the sessions.  (Each counter read converts the Interface's whole
        statistics column: the rounds between reports, which look at the
        links only, skip them.)"""
        links: Dict[str, str] = {}
        rings: Dict[str, Dict[str, int]] = {}
        self.bfd = {}
        if self.rec is None or self.want is None:
            return links, rings
        db = self.rec.db
        try:
            db.idl.run()
            br = db.bridge(self.rec.spec.bridge)
        except DaqctlError:
            return links, rings
        ports = db.ports(br)
        for name in self.want["ports"]:
            p = ports.get(name)
            ifaces = list(p.interfaces) if p is not None else []
            if p is None or len(ifaces) != 1:
                links[name] = "down"
                continue
            iface = ifaces[0]
            if iface.link_state:
                state = iface.link_state[0]
                links[name] = state if state in ("up", "down") else "down"
            if iface.bfd.get("enable") == "true":
                st = dict(iface.bfd_status)
                self.bfd[name] = st
                if st.get("forwarding") != "true":
                    links[name] = "down"
        if not counters:
            return links, rings
        seqno, sl = db.idl.change_seqno, self.want["slice"]["rings"]
        if (self.counted is not None and self.counted[0] == seqno
                and self.counted[1] is sl):
            # Nothing changed in the switch's database since the last
            # read (an idle ring's statistics do not change).
            return links, self.counted[2]
        for d in self.want["slice"]["rings"]:
            p = ports.get(d["ring"])
            if p is None or len(p.interfaces) != 1:
                continue
            st = list(p.interfaces)[0].statistics
            rings[d["ring"]] = {"occupancy": int(st.get("occupancy", 0)),
                                "high_watermark":
                                int(st.get("high_watermark", 0)),
                                "drops": int(st.get("ring_full_drops", 0))}
        self.counted = (seqno, sl, rings)
        return links, rings

    def links_now(self) -> Dict[str, str]:
        """local_view()'s link states, read again only after the
        switch's database changed (every commit to the fabric database
        wakes the agent: most rounds have nothing else to do)."""
        if self.rec is None:
            return self.local_view(False)[0]
        seqno, want = self.rec.db.idl.change_seqno, self.want
        if (self.linked is None or self.linked[0] != seqno
                or self.linked[1] is not want):
            self.linked = (seqno, want, self.local_view(False)[0])
        return dict(self.linked[2])

    def report(self) -> None:
        """The Node row, every interval (a transaction in flight is
        finished first; none is waited for)."""
        if self.report_busy():
            return
        now = time.monotonic()
        if not self.fabric_up():
            return
        if now < self.next_report:
            # A link that changes state (its carrier, its BFD session) is
            # reported at once, not an interval later: the planner moves
            # the DCMs that crossed it.
            if (self.reported_links is None
                    or now < self.last_report + INTERVAL_MIN
                    or self.links_now() == self.reported_links):
                return
        self.next_report = now + self.interval
        links, rings = self.local_view()
        self.reported_links = links
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
        self.write_report(cols, links, now)

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
        if not p.db.connected() or (p.db.plan_key() == self.plan_key
                                    and not due):
            return
        self.next_plan = now + PLAN_TICK
        try:
            what = p.step()
        except DaqctlError as e:
            what = "failed: %s" % e
        if what == "planned":
            for n in p.notes:
                vlog.info("planner: %s" % n)
        if what != self.plan_what and what not in ("planned", "unchanged"):
            vlog.info("planner: %s" % what)
        elif what == "planned":
            vlog.info("planner: planned generation %d (epoch %s)"
                      % (int(p.db.root().planned_generation), p.epoch))
        self.plan_what = what
        self.plan_key = p.db.plan_key()
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
            self.apply()
            self.next_check = time.monotonic() + self.interval
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
        slower (bench-results.md).  Bounded: without a planner, or with
        one that does not plan, the agent applies the generation as it
        is (its rings, the links' BFD) after that."""
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
        if self.want is not None:
            deadlines.append(self.next_check)
        due = self.plan_wait_until()
        if due is not None:
            # Read without its plan then (plan_pending()).
            deadlines.append(due)
        if self.planner is not None:
            # A change wakes the planner through its IDL; the tick only
            # while it has to look again (plan()'s 'due'), else an idle
            # planner would spin on a tick in the past.
            self.planner.db.idl.wait(poller)
            if self.plan_again and self.planner.db.connected():
                deadlines.append(self.next_plan)
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
            "flow_monitor": ("-" if self.watch is None else "%s (started "
                             "%d times)" % ("up" if self.watch.ready
                                            else "starting",
                                            self.watch.started)),
            "monitored": self.monitored(),
            "bfd": {p: bfd_text(st) for p, st in sorted(self.bfd.items())},
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
