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

"""Reconciling a switch to its DCMs: the plan (what to create, update,
remove), its application and the rollback of a failure."""

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, FrozenSet, List, Optional, Sequence,
                    Set, Tuple)

from .model import (DaqctlError, Dcm, EXIT_ROLLBACK_FAILED, EXT_DCM, MapError,
                    Problem, RING_OPTIONS, STATES, SwitchSpec,
                    grouped_notes as _grouped)
from .idlutil import opt
from .ovsdb import Ovsdb, Ring
from .openflow import (ssl_args, DumpedFlow, Flow, Group, OpenFlow,
                       dcm_flows, failover_group, flow_text, group_ids,
                       group_text, is_ours, of_target, ofport_text,
                       set_dl_dst)

# Flows besides the DCMs' (the fabric agent's routes): cookie ->
# [(priority, match, output ports, primary first, the destination MAC
# set before the output or "")].
Routes = Dict[int, List[Tuple[int, List[str], Tuple[str, ...], str]]]


# ================================================================ reconciler
@dataclass
class RingState:
    """What a daqring was before a change: what a rollback restores."""
    port_ids: Dict[str, str]
    iface_name: str
    iface_type: str
    options: Dict[str, str]
    ofport_request: List[int]
    managed: bool
    # The OpenFlow port it had (not configuration: ovs-vswitchd's choice).
    ofport: Optional[int] = None

    @staticmethod
    def of(r: Ring) -> "RingState":
        return RingState(dict(r.port.external_ids), r.iface.name,
                         r.iface.type, dict(r.iface.options),
                         list(r.iface.ofport_request), r.dcm is not None,
                         opt(r.iface.ofport))

    @staticmethod
    def of_port(port: Any) -> Optional["RingState"]:
        """A port's state, or None if it has no single interface."""
        ifaces = list(port.interfaces)
        if len(ifaces) != 1:
            return None
        i = ifaces[0]
        return RingState(dict(port.external_ids), i.name, i.type,
                         dict(i.options), list(i.ofport_request),
                         EXT_DCM in port.external_ids, opt(i.ofport))

    def config(self) -> Tuple[Any, ...]:
        """What a client configures (what a rollback compares)."""
        return (self.port_ids, self.iface_name, self.iface_type,
                self.options, self.ofport_request)


@dataclass
class Plan:
    create: List[Dcm] = field(default_factory=list)
    update: List[Tuple[Ring, Dcm]] = field(default_factory=list)
    delete: List[Ring] = field(default_factory=list)
    adopt: List[str] = field(default_factory=list)
    # status:config_error of the updated rings before the change.
    old_errors: Dict[str, Optional[str]] = field(default_factory=dict)
    # Each ring the plan touches, as it was (None: the plan creates it).
    before: Dict[str, Optional[RingState]] = field(default_factory=dict)
    # ... and as the committed transaction made it (None: removed).
    after: Dict[str, Optional[RingState]] = field(default_factory=dict)

    def empty(self) -> bool:
        return not (self.create or self.update or self.delete)

    def summary(self) -> Dict[str, List[str]]:
        return {"create": [d.name for d in self.create],
                "update": [d.name for r, d in self.update
                           if r.dcm is not None],
                "adopt": [d.name for r, d in self.update if r.dcm is None],
                "remove": [r.dcm.name if r.dcm else str(r.port.name)
                           for r in self.delete]}


class Reconciler:
    """Brings one switch to a list of DCMs."""

    def __init__(self, spec: SwitchSpec, args: argparse.Namespace,
                 out: Any, columns: Optional[Dict[str, List[str]]] = None
                 ) -> None:
        """columns: Open_vSwitch columns to monitor besides those
        ovs-daqctl reads (the fabric agent's BFD columns)."""
        self.spec = spec
        self.args = args
        self.out = out
        self.json = getattr(args, "format", "table") == "json"
        # What happened, for -f json.
        self.result: Dict[str, Any] = {
            "switch": spec.name, "db": spec.db, "bridge": spec.bridge,
            "dry_run": False, "changed": False, "messages": []}
        self.db = Ovsdb(spec.db, args.timeout, columns)
        self.of = OpenFlow(of_target(args, spec), args.ofctl, args.timeout,
                           ssl_args(args))
        self.t_commit = 0.0
        self.t_bundle = 0.0
        # Where the change is, for a report if it is interrupted (see
        # STATES): in the result, so that -f json has it too.
        self.result["state"] = "unchanged"
        self._next_progress = 0.0
        # Flows that are no DCM's ring steering, kept by sync() with the
        # DCMs' (the fabric agent's routes): cookie -> [(priority, match,
        # output port names, MAC)].  One port: an output to it; more: to the
        # first of them that is live, through a fast_failover group of
        # ours (GROUP_PREFIX), shared by the routes with the same ports.
        # A port that is not on the bridge is left out (the first one:
        # the cookie has no flows).  A MAC: the destination MAC is set to
        # it first (the fabric's last hop: its hosts do no ARP).
        self.routes: Routes = {}
        # Whether sync() keeps our groups (those of 'routes', no others).
        self.manage_groups = False
        # plan_unless_held(): the configuration count and 'want' with
        # which the switch's daqrings were found as wanted last.
        self.held_config: Any = None
        # What sync() learnt of the switch beyond its flows, which a
        # caller that keeps this reconciler may let the next sync() take
        # as still true instead of asking the switch again (one ovs-ofctl
        # each): the daqrings found or set no-flood, and our groups as
        # the last bundle left them.  forget() drops both: a caller that
        # cannot vouch that nobody changed the switch's ports or groups
        # since (and that ovs-vswitchd did not restart) calls it before
        # apply().  A one-shot ovs-daqctl never has them.
        self.known_flood: Optional[Set[str]] = None
        self.known_groups: Optional[Dict[int, Group]] = None
        # And the flows: ours by cookie, as the last bundle left them (a
        # bundle replaces each cookie's flows whole: "delete cookie=C/-1"
        # and its adds), and the others' (what conflicts() compares),
        # as the last dump found them.  A caller that keeps them spares a
        # dump of every flow when a slice changes (a ROS leaf's thousand
        # routes: the longest step of a failover); what they may miss (a
        # flow someone else changed meanwhile under a cookie the bundle
        # does not touch) is the caller's to catch (the fabric agent's
        # flow monitor and flow count, and its periodic full checks).
        self.known_flows: Optional[Dict[int, Set[Flow]]] = None
        self.known_theirs: Optional[List[DumpedFlow]] = None
        # flow_changes()'s groups and flows once its bundle is sent (if
        # manage_groups).
        self._groups_after: Optional[Dict[int, Group]] = None
        self._flows_after: Dict[int, Set[Flow]] = {}

    def close(self) -> None:
        self.db.close()

    def forget(self) -> None:
        """The next sync() asks the switch which daqrings are no-flood,
        which groups and which flows it has (see known_flood)."""
        self.known_flood = None
        self.known_groups = None
        self.forget_flows()

    def forget_flows(self) -> None:
        """The next sync() dumps the switch's flows (see known_flows)."""
        self.known_flows = None
        self.known_theirs = None

    def expected_flow_count(self) -> Optional[int]:
        """How many flows the bridge has if nobody but this reconciler
        changed them since its last sync() (None: not known)."""
        if self.known_flows is None or self.known_theirs is None:
            return None
        return (sum(len(v) for v in self.known_flows.values())
                + len(self.known_theirs))

    def set_state(self, state: str) -> None:
        assert state in STATES, state
        self.result["state"] = state

    def progress(self, waited: float) -> None:
        """While ovs-vswitchd applies a change (tens of seconds for 1000
        daqrings): a line on standard error after 2 s, then every 5 s."""
        if waited < 2:
            self._next_progress = 2
            return
        if waited < self._next_progress:
            return
        self._next_progress = waited + 5
        sys.stderr.write("ovs-daqctl: %s: waiting for ovs-vswitchd to apply "
                         "the change (next_cfg %s): %.0f s so far (it needs "
                         "about 20 s to add 1000 daqrings, 40 s to remove "
                         "them)\n" % (self.spec.label(),
                                      self.result.get("next_cfg", "?"),
                                      waited))
        sys.stderr.flush()

    def say(self, msg: str) -> None:
        self.result["messages"].append(msg)
        if not self.json:
            self.out.write(msg + "\n")
            self.out.flush()

    def current(self) -> List[Dcm]:
        br = self.db.bridge(self.spec.bridge)
        return [r.dcm for r in self.db.rings(br) if r.dcm is not None]

    # --------------------------------------------------------------- plan
    def plan(self, dcms: List[Dcm]) -> Plan:
        """What to change, from the IDL's current replica.  Rings are
        matched by port name: a daqring of the wanted name is updated (or
        adopted, if no ovs-daqctl made it), a missing one is created, and
        a managed one that no DCM wants is removed.  Raises MapError for
        what the switch refuses (unknown egress ports, names or ofports
        taken by other ports)."""
        if "daqring" not in self.db.iface_types():
            raise DaqctlError("switch %s: ovs-vswitchd does not support "
                              "type=daqring (is it the ovs-daqring build, "
                              "with other_config:dpdk-init=true?)"
                              % self.spec.name)
        br = self.db.bridge(self.spec.bridge)
        ports = self.db.ports(br)
        rings = {r.port.name: r for r in self.db.rings(br)}
        all_names = self.db.all_iface_names()
        wanted = {d.ring for d in dcms}
        plan = Plan()
        for r in rings.values():
            if r.dcm is not None and r.port.name not in wanted:
                plan.delete.append(r)
        going = {r.port.name for r in plan.delete}
        ofports: Dict[int, str] = {}
        for p in ports.values():
            for i in p.interfaces:
                for o in (opt(i.ofport), opt(i.ofport_request)):
                    if o is not None and o > 0 and p.name not in going:
                        ofports.setdefault(o, p.name)
        problems: List[Problem] = []

        def bad(d: Dcm, reason: str) -> None:
            problems.append(Problem(d.where or self.spec.where,
                                    "DCM %s: %s" % (d.name, reason)))

        for d in dcms:
            eg = ports.get(d.egress)
            if eg is None or d.egress in going:
                bad(d, "egress port %s is not on bridge %s (it has: %s)"
                    % (d.egress, self.spec.bridge,
                       ", ".join(sorted(n for n in ports
                                        if n not in rings)) or "no ports"))
            elif len(eg.interfaces) != 1:
                bad(d, "egress %s is a bond; give one of its interfaces"
                    % d.egress)
            if d.ofport is not None and ofports.get(d.ofport) not in (
                    None, d.ring):
                bad(d, "ofport %d is taken by %s" % (d.ofport,
                                                     ofports[d.ofport]))
            found = rings.get(d.ring)
            if found is None:
                if d.ring in all_names:
                    bad(d, "a port or interface named %s exists and is not "
                        "a daqring of bridge %s" % (d.ring,
                                                    self.spec.bridge))
                else:
                    plan.create.append(d)
            elif found.dcm is None:
                plan.update.append((found, d))
                plan.adopt.append(d.ring)
            elif found.dcm.key() != d.key():
                plan.update.append((found, d))
        if problems:
            raise MapError(problems)
        for r, d in plan.update:
            plan.old_errors[d.ring] = r.iface.status.get("config_error")
            plan.before[d.ring] = RingState.of(r)
        for r in plan.delete:
            plan.before[r.port.name] = RingState.of(r)
        for d in plan.create:
            plan.before[d.ring] = None
        return plan

    # -------------------------------------------------------------- ovsdb
    def commit(self, want: Callable[[List[Dcm]], List[Dcm]],
               comment: str) -> Tuple[Plan, float]:
        """One transaction for the whole plan: the DCMs are want(the DCMs
        on the switch), planned again if the database changed meanwhile,
        so that another ovs-daqctl's change made meanwhile is kept.  Waits
        until ovs-vswitchd has applied it.  Returns the plan and the
        duration."""
        t0 = time.monotonic()
        plans: List[Plan] = []

        def build(txn: Any) -> None:
            plan = self.plan(want(self.current()))
            plans.append(plan)
            br = self.db.bridge(self.spec.bridge)
            # What the plan rests on: which ports the bridge has (the
            # managed rings, the names taken) and each ring it changes or
            # removes.  If another client changed any of it meanwhile, the
            # server refuses the transaction and it is planned again.
            br.verify("ports")
            for r in [r for r, _ in plan.update] + plan.delete:
                for col in ("external_ids", "interfaces"):
                    r.port.verify(col)
                for col in ("type", "options", "ofport_request"):
                    r.iface.verify(col)
            for r in plan.delete:
                plan.after[r.port.name] = None
                br.delvalue("ports", r.port)
                r.port.delete()
                r.iface.delete()
            for r, d in plan.update:
                opts = ring_options(r.iface.options, d)
                if opts != dict(r.iface.options):
                    r.iface.options = opts
                if r.iface.type != "daqring":
                    r.iface.type = "daqring"
                ext = {k: v for k, v in r.port.external_ids.items()
                       if not k.startswith("daqctl-")}
                ext.update(d.external_ids())
                if ext != dict(r.port.external_ids):
                    r.port.external_ids = ext
                req = [d.ofport] if d.ofport is not None else []
                if list(r.iface.ofport_request) != req:
                    r.iface.ofport_request = req
                plan.after[d.ring] = RingState(ext, r.iface.name, "daqring",
                                               opts, req, True)
            for d in plan.create:
                iface = txn.insert(self.db.idl.tables["Interface"])
                iface.name = d.ring
                iface.type = "daqring"
                iface.options = d.options()
                if d.ofport is not None:
                    iface.ofport_request = [d.ofport]
                port = txn.insert(self.db.idl.tables["Port"])
                port.name = d.ring
                port.interfaces = [iface]
                port.external_ids = d.external_ids()
                br.addvalue("ports", port)
                plan.after[d.ring] = RingState(
                    d.external_ids(), d.ring, "daqring", d.options(),
                    [d.ofport] if d.ofport is not None else [], True)

        self.set_state("committing")
        # A ring created, changed (a new type may make ovs-vswitchd add
        # its port again, flooding) or removed (it may come back under
        # its name) is asked about again.
        self.known_flood = None
        cfg = self.db.transact(build, comment)
        self.result["next_cfg"] = cfg
        self.set_state("committed")
        self.t_commit = time.monotonic() - t0
        self.db.wait_applied(cfg, self.progress)
        self.set_state("applied")
        return plans[-1], time.monotonic() - t0

    def restore(self, plan: Plan, comment: str,
                flood_before: Dict[str, bool]) -> List[str]:
        """Undoes 'plan' (already committed): the rings it created are
        removed, those it changed or adopted get back their options, marks
        and ofport_request (and an adopted ring its flooding), those it
        removed are created again (empty), with their old OpenFlow port
        numbers.  A ring is restored only if it is still as the plan made
        it: one that another client changed, created or removed meanwhile
        is left as it is.  Then the flows are made those of the DCMs in the
        database.  Returns the names of the rings left alone."""
        left: List[str] = []
        # Created again, and those of them with a borrowed ofport_request.
        again: List[str] = []
        borrowed: List[str] = []

        def build(txn: Any) -> None:
            del left[:], again[:], borrowed[:]
            br = self.db.bridge(self.spec.bridge)
            br.verify("ports")
            ports = self.db.ports(br)
            for name, st in sorted(plan.before.items()):
                port = ports.get(name)
                now = RingState.of_port(port) if port is not None else None
                made = plan.after.get(name)
                if (port is not None and now is None) or (
                        (now.config() if now else None)
                        != (made.config() if made else None)):
                    left.append(name)
                    continue
                if port is not None:
                    iface = list(port.interfaces)[0]
                    for col in ("external_ids", "interfaces"):
                        port.verify(col)
                    for col in ("type", "options", "ofport_request"):
                        iface.verify(col)
                if st is None:
                    # Created by the plan: removed.
                    br.delvalue("ports", port)
                    port.delete()
                    iface.delete()
                elif port is None:
                    # Removed by the plan: created again.  ovs-vswitchd
                    # does not reuse an OpenFlow port number for an hour:
                    # without a request the ring would get a new one, and
                    # its DCM's flows point at the old one.
                    req = st.ofport_request
                    if not req and st.ofport is not None and st.ofport > 0:
                        req = [st.ofport]
                        borrowed.append(name)
                    iface = txn.insert(self.db.idl.tables["Interface"])
                    iface.name = st.iface_name
                    iface.type = st.iface_type
                    iface.options = st.options
                    iface.ofport_request = req
                    port = txn.insert(self.db.idl.tables["Port"])
                    port.name = name
                    port.interfaces = [iface]
                    port.external_ids = st.port_ids
                    br.addvalue("ports", port)
                    again.append(name)
                else:
                    if dict(port.external_ids) != st.port_ids:
                        port.external_ids = st.port_ids
                    if iface.type != st.iface_type:
                        iface.type = st.iface_type
                    if dict(iface.options) != st.options:
                        iface.options = st.options
                    if list(iface.ofport_request) != st.ofport_request:
                        iface.ofport_request = st.ofport_request

        def give_back(txn: Any) -> None:
            """The borrowed ofport_requests, once the ports have their
            numbers (which they keep)."""
            ports = self.db.ports(self.db.bridge(self.spec.bridge))
            for name in borrowed:
                st = plan.before[name]
                port = ports.get(name)
                now = RingState.of_port(port) if port is not None else None
                if (st is not None and now is not None
                        and now.ofport_request == [st.ofport]):
                    iface = list(port.interfaces)[0]
                    iface.verify("ofport_request")
                    iface.ofport_request = st.ofport_request

        if plan.empty():
            return []
        # The rings created again are new ports (flooding).
        self.forget()
        cfg = self.db.transact(build, comment + " (rollback)")
        self.db.wait_applied(cfg, self.progress)
        if borrowed:
            cfg = self.db.transact(give_back, comment + " (rollback)")
            self.db.wait_applied(cfg, self.progress)
        if self.of.written or again:
            # The flows of the restored DCMs, and those of rings created
            # again (if their old number was taken meanwhile).  (If
            # nothing was sent and no ring came back, the flows are still
            # those of before.)
            self.sync()
        # An adopted ring is a hand-made one again: as it was.
        if any(not flood_before.get(n, True) for n in plan.adopt
               if n not in left):
            now_flood = self.of.no_flood()
            for n in plan.adopt:
                if (n not in left and flood_before.get(n) is False
                        and now_flood.get(n)):
                    self.of.set_no_flood(n, False)
        return list(left)

    def failures(self, plan: Plan) -> List[str]:
        """Rings that ovs-vswitchd refused (error column, no ofport, or a
        config_error in status after a resize)."""
        br = self.db.bridge(self.spec.bridge)
        by_name = {r.port.name: r for r in self.db.rings(br)}
        errs = []
        changed = [d for d in plan.create] + [d for _, d in plan.update]
        for d in changed:
            r = by_name.get(d.ring)
            if r is None:
                errs.append("%s: ring %s vanished" % (d.name, d.ring))
                continue
            err = opt(r.iface.error)
            of = opt(r.iface.ofport)
            if err:
                errs.append(err if err.startswith(d.ring + ":")
                            else "%s: %s" % (d.ring, err))
            elif of is None or of <= 0:
                errs.append("%s: ring %s got no OpenFlow port" % (d.name,
                                                                  d.ring))
        if errs:
            return errs
        # A ring in use keeps its old ring when a resize fails, and says
        # so in status:config_error (refreshed about once a second).
        resized = [d for r, d in plan.update
                   if r.dcm is None or (r.dcm.ring_size, r.dcm.numa_id)
                   != (d.ring_size, d.numa_id)]
        if not resized:
            return []

        def verdict(d: Dcm) -> Optional[bool]:
            """True: in place; False: refused; None: not known yet."""
            st = by_name[d.ring].iface.status
            err = st.get("config_error")
            if err and err != plan.old_errors.get(d.ring):
                return False
            if (not err and st.get("ring_size") == str(d.ring_size)
                    and (d.numa_id is None
                         or st.get("numa_id") == str(d.numa_id))):
                return True
            return None

        deadline = time.monotonic() + 3
        while (any(verdict(d) is None for d in resized)
               and time.monotonic() < deadline):
            time.sleep(0.1)
            self.db._run_until(lambda: True, "refresh")
            by_name = {r.port.name: r for r in self.db.rings(br)}
        for d in resized:
            v = verdict(d)
            err = by_name[d.ring].iface.status.get("config_error")
            if v is False or (v is None and err):
                errs.append(err if err.startswith(d.ring + ":")
                            else "%s: %s" % (d.ring, err))
        return errs

    # -------------------------------------------------------------- flows
    def floodable(self, rings: Sequence[str]) -> List[str]:
        """Those of 'rings' that are on the switch and floodable."""
        return self._floodable(rings)[0]

    def _floodable(self, rings: Sequence[str]) -> Tuple[List[str], Set[str]]:
        """floodable(), and those of 'rings' that are on the switch."""
        if not rings:
            # A switch with routes only (a spine): nothing to ask it.
            return [], set()
        config = self.of.no_flood()
        return (sorted(n for n in rings if config.get(n) is False),
                {n for n in rings if n in config})

    def sync(self) -> Tuple[int, int, int, List[str]]:
        """Makes the OpenFlow side follow the DCMs recorded in OVSDB (not a
        list in memory: another ovs-daqctl may have added a DCM meanwhile):
        each DCM's daqring no-flood (a flooded copy would come out of the
        ring a second time), then the flows, in one bundle.  The flows are
        read before the database is, so that the flows of a DCM that
        another ovs-daqctl has just added are not taken for stale ones;
        and if the database changed while this ran, it runs again, so that
        the last of several concurrent ovs-daqctl leaves the flows of all
        their DCMs.  Returns (DCMs whose flows changed, flows deleted,
        flows added, rings set no-flood).  self.t_bundle: the time its
        bundles took (this call's, not a running total: an agent keeps its
        reconciler from one apply to the next)."""
        n = n_del = n_add = 0
        fixed: List[str] = []
        self.t_bundle = 0.0
        for k in range(10):
            if (k == 0 and self.known_flows is not None
                    and self.known_theirs is not None):
                # As the last bundle left them, if the caller vouches
                # for them (the first round only: a round again is for
                # another client's change).
                dumped = list(self.known_theirs)
                installed = {c: set(v) for c, v in self.known_flows.items()}
            else:
                dumped = self.of.flows(ours=False)
                installed = self.of.installed(dumped)
            self.known_flows = self.known_theirs = None
            groups: Optional[Dict[int, Group]] = None
            if self.manage_groups:
                # Those the last bundle left, if the caller vouches
                # for them (known_groups), else the switch's.
                groups = (dict(self.known_groups)
                          if self.known_groups is not None
                          else self.of.groups())
                self.known_groups = None
            cfg = self.db.catch_up()
            if self.db.root().cur_cfg < cfg:
                # Another client's change (a ring it created) that
                # ovs-vswitchd has not applied yet: its port has no
                # ofport, and so no flows, until it has.  A plan empty
                # from the start (that client's ring is what this one
                # wants) must not end before they exist.
                self.db.wait_applied(cfg, self.progress)
            dcms = self.current()
            problems = self.conflicts(dcms, dumped)
            if problems:
                raise DaqctlError("\n".join(
                    "%s: %s" % (self.spec.label(), p.reason)
                    for p in problems))
            rings = [d.ring for d in dcms]
            flood: List[str] = []
            if self.known_flood is None or not set(rings) <= self.known_flood:
                # Rings not known to be no-flood: ask the switch (a
                # change of routes only, on a switch whose rings were
                # checked, does not).
                self.known_flood = None
                flood, seen = self._floodable(rings)
                if flood:
                    self.of.set_no_flood_all(flood)
                self.known_flood = seen
            fixed += [r for r in flood if r not in fixed]
            lines, counts = self.flow_changes(dcms, False, installed,
                                              groups)
            if lines:
                t0 = time.monotonic()
                self.of.bundle(lines)
                self.t_bundle += time.monotonic() - t0
                n, n_del, n_add = (n + counts[0], n_del + counts[1],
                                   n_add + counts[2])
            # The bundle went through (or there was nothing to change):
            # our groups and flows are those it wanted.
            self.known_groups = self._groups_after
            self.known_flows = self._flows_after
            self.known_theirs = [f for f in dumped if not is_ours(f.cookie)]
            if not (lines or flood) or self.db.next_cfg() == cfg:
                break
        return n, n_del, n_add, fixed

    def conflicts(self, dcms: List[Dcm],
                  dumped: Optional[List[DumpedFlow]] = None
                  ) -> List[Problem]:
        """The DCMs' flows that have the table (0), priority and match of a
        flow that is not ovs-daqctl's (its cookie is not 0xdac7...):
        adding ours would replace it, and a later del-dcm would delete
        it.  A ring not created yet has no in_port flow to compare."""
        if dumped is None:
            dumped = self.of.flows(ours=False)
        theirs: Dict[Tuple[int, FrozenSet[str]], DumpedFlow] = {}
        for f in dumped:
            if f.table == "0" and not is_ours(f.cookie):
                theirs.setdefault((f.priority, frozenset(f.match)), f)
        if not theirs:
            return []
        ofports: Dict[str, str] = {}
        for p in self.db.bridge(self.spec.bridge).ports:
            for i in p.interfaces:
                o = opt(i.ofport)
                if o is not None and o > 0:
                    ofports[p.name] = ofport_text(o)
        problems = []
        for d in dcms:
            for prio, match, _ in dcm_flows(d, ofports.get(d.ring, "?"),
                                            ofports.get(d.egress, "?")):
                f = theirs.get((prio, frozenset(match)))
                if f is not None and "in_port=?" not in match:
                    problems.append(Problem(
                        d.where or self.spec.where,
                        "DCM %s: its flow priority=%d,%s would replace a "
                        "flow that is not ovs-daqctl's (cookie %#x, "
                        "actions=%s), which a later del-dcm would then "
                        "delete: remove that flow, or change the DCM's "
                        "match" % (d.name, prio, ",".join(match), f.cookie,
                                   f.actions)))
        return problems

    def flow_changes(self, dcms: List[Dcm], dry_run: bool,
                     installed: Optional[Dict[int, Set[Flow]]] = None,
                     groups_installed: Optional[Dict[int, Group]] = None
                     ) -> Tuple[List[str], Tuple[int, int, int]]:
        """The bundle that gives 'dcms' their flows: for each DCM whose
        flows differ, "delete cookie=C/-1" and its adds; for each of our
        cookies that no DCM has, its delete; with 'manage_groups', the
        group mods of the routes' groups.  With 'dry_run', rings not
        created yet count as adds."""
        br = self.db.bridge(self.spec.bridge)
        ofports: Dict[str, int] = {}
        for p in br.ports:
            for i in p.interfaces:
                o = opt(i.ofport)
                if o is not None and o > 0:
                    ofports[p.name] = o
        if installed is None:
            installed = self.of.installed()
        lines: List[str] = []
        n_changed = n_del = n_add = 0
        wanted: Set[int] = set()
        # Our flows once the bundle is through.
        after: Dict[int, Set[Flow]] = {}
        for d in dcms:
            if d.ring not in ofports or d.egress not in ofports:
                if dry_run:
                    n_changed += 1
                    n_add += len(dcm_flows(d, d.ring, d.egress))
                continue
            c = d.cookie()
            wanted.add(c)
            flows = dcm_flows(d, ofport_text(ofports[d.ring]),
                              ofport_text(ofports[d.egress]))
            want = {(p, frozenset(m), a) for p, m, a in flows}
            have = installed.get(c, set())
            after[c] = want
            if want == have:
                continue
            n_changed += 1
            if have:
                lines.append("delete cookie=%#x/-1" % c)
                n_del += len(have)
            for f in flows:
                lines.append("add " + flow_text(c, f))
                n_add += 1
        groups, group_lines = self.route_groups(ofports, groups_installed)
        self._groups_after = None
        if self.manage_groups:
            self._groups_after = {
                gid: failover_group([ofport_text(ofports[p]) for p in ports])
                for ports, gid in groups.items()}
        for c, route in sorted(self.routes.items()):
            if c in wanted or any(ports[0] not in ofports
                                  for _, _, ports, _ in route):
                continue
            wanted.add(c)
            flows = [(prio, match,
                      self.route_action(ports, ofports, groups, mac))
                     for prio, match, ports, mac in route]
            want = {(p, frozenset(m), a) for p, m, a in flows}
            have = installed.get(c, set())
            after[c] = want
            if want != have:
                n_changed += 1
                if have:
                    lines.append("delete cookie=%#x/-1" % c)
                    n_del += len(have)
                lines += ["add " + flow_text(c, f) for f in flows]
                n_add += len(flows)
        for c, have in sorted(installed.items()):
            if c not in wanted:
                lines.append("delete cookie=%#x/-1" % c)
                n_del += len(have)
                n_changed += 1
        # Every other cookie's flows are deleted (a DCM's whose ring or
        # egress is not on the bridge too).
        self._flows_after = after
        # Groups first (a flow's group must exist), stale groups last
        # (deleting a group deletes the flows that use it).
        lines = ([ln for ln in group_lines if not ln.startswith(
            "group delete")] + lines
            + [ln for ln in group_lines if ln.startswith("group delete")])
        return lines, (n_changed, n_del, n_add)

    @staticmethod
    def route_action(ports: Tuple[str, ...], ofports: Dict[str, int],
                     groups: Dict[Tuple[str, ...], int],
                     mac: str = "") -> str:
        """A route's actions: an output, or its group, after setting the
        destination MAC to 'mac' if given."""
        live = tuple(p for p in ports if p in ofports)
        if len(live) == 1:
            return set_dl_dst(mac) + "output:%s" % ofport_text(
                ofports[live[0]])
        return set_dl_dst(mac) + "group:%d" % groups[live]

    def route_groups(self, ofports: Dict[str, int],
                     installed: Optional[Dict[int, Group]]
                     ) -> Tuple[Dict[Tuple[str, ...], int], List[str]]:
        """The routes' groups and, with 'manage_groups', the group mods
        that make our groups on the switch exactly those."""
        if self.manage_groups and installed is None:
            installed = self.of.groups()
        return route_groups(self.routes, ofports,
                            installed if self.manage_groups else None)

    # -------------------------------------------------------------- apply
    def holds(self, dcms: List[Dcm], flow_count: int,
              count_flows: bool = True) -> bool:
        """Whether the switch's daqrings are those of 'dcms', as
        its database says (the IDL has it: nothing to dump), and its
        bridge holds 'flow_count' flows (one short OpenFlow request): the
        check between two apply()s of the fabric agent, which dump every
        flow, group and port.  A restarted ovs-vswitchd, or flows added
        or deleted by someone else, change the count.  The daqrings are
        compared again only when the switch's configuration changed
        (Ovsdb.config_seqno) or 'dcms' are not the last ones: they are
        the same from one full check to the next.  Without
        'count_flows' (the caller knows that no flow changed since it
        counted them: openflow.FlowWatch), the daqrings alone."""
        if not self.plan_unless_held(dcms).empty():
            return False
        return not count_flows or self.of.flow_count() == flow_count

    def plan_unless_held(self, dcms: List[Dcm]) -> Plan:
        """plan(dcms), or an empty plan without reading the rings again
        if a plan found the switch holding 'dcms' at this configuration
        (Ovsdb.config_seqno): a new slice of the fabric agent that
        changes routes only does not read every ring's row (160 on an
        HLT leaf, on a shared core)."""
        seqno = self.db.config_seqno
        if (seqno, dcms) == self.held_config:
            return Plan()
        plan = self.plan(dcms)
        if plan.empty():
            self.held_config = (seqno, dcms)
        return plan

    def apply(self, want: Callable[[List[Dcm]], List[Dcm]], comment: str,
              dry_run: bool, verbose: bool) -> bool:
        """Makes the switch's DCMs want(its current DCMs).  Returns True if
        something changed (would change, with 'dry_run')."""
        dcms = want(self.current())
        plan = self.plan(dcms) if dry_run else self.plan_unless_held(dcms)
        label = self.spec.label()
        res = self.result
        res["dry_run"] = dry_run
        res["notes"] = _grouped(self.spec.rate_notes)
        for note in res["notes"]:
            self.say("%s: %s" % (self.spec.name, note))
        if dry_run:
            dumped = self.of.flows(ours=False)
            problems = self.conflicts(dcms, dumped)
            if problems:
                raise MapError(problems)
            self._report_plan(plan, verbose, "would ")
            _, (n, n_del, n_add) = self.flow_changes(
                dcms, True, self.of.installed(dumped))
            flood = self.floodable([d.ring for d in dcms])
            res.update(plan.summary())
            res.update(no_flood=flood, flows={"dcms": n, "deleted": n_del,
                                              "added": n_add})
            if flood:
                self.say("%s: would set no-flood on %d daqrings%s"
                         % (label, len(flood), _names(flood, verbose)))
            if n:
                self.say("%s: would change the flows of %d DCMs (%d "
                         "deleted, %d added)" % (label, n, n_del, n_add))
            res["changed"] = not plan.empty() or bool(n) or bool(flood)
            if not res["changed"]:
                self.say("%s: no changes" % label)
            return res["changed"]
        flood_before: Dict[str, bool] = {}
        if plan.adopt:
            # What a rollback gives back to a hand-made daqring.
            flood_before = self.of.no_flood()
        if not plan.empty():
            plan, t_db = self.commit(want, comment)
            res.update(plan.summary())
            res.update(t_commit=round(self.t_commit, 6),
                       t_applied=round(t_db, 6))
            res["changed"] = not plan.empty()
            errs = self.failures(plan)
            if errs:
                res["refused"] = errs
                self._rollback(plan, comment, flood_before,
                               "switch %s refused the change"
                               % self.spec.name,
                               "switch %s refused the change, rolled back"
                               % self.spec.name, errs)
            self._report_plan(plan, verbose, "")
            if not plan.empty():
                # (Planned again to nothing, after another client made
                # the change meanwhile: no transaction was sent.)
                self.say("%s: one OVSDB transaction: %d created, %d "
                         "updated, %d removed (committed in %.3f s, "
                         "applied by ovs-vswitchd in %.3f s)"
                         % (label, len(plan.create), len(plan.update),
                            len(plan.delete), self.t_commit, t_db))
        self.set_state("flows")
        try:
            n, n_del, n_add, flood = self.sync()
        except DaqctlError as e:
            if not plan.empty():
                self._rollback(plan, comment, flood_before, str(e),
                               "%s; daqrings rolled back" % e, [])
            raise
        res.update(no_flood=flood, flows={"dcms": n, "deleted": n_del,
                                          "added": n_add})
        if flood:
            self.say("%s: set no-flood on %d daqrings%s"
                     % (label, len(flood), _names(flood, verbose)))
        if n:
            self.say("%s: one OpenFlow bundle: flows of %d DCMs changed "
                     "(%d deleted, %d added) in %.3f s"
                     % (label, n, n_del, n_add, self.t_bundle))
        res["changed"] = res["changed"] or bool(n) or bool(flood)
        self.set_state("done" if res["changed"] else "unchanged")
        if not res["changed"]:
            self.say("%s: no changes" % label)
        return res["changed"]

    def _rollback(self, plan: Plan, comment: str,
                  flood_before: Dict[str, bool], failed: str,
                  rolled_back: str, details: List[str]) -> None:
        """Restores what 'plan' changed and raises: EXIT_FAILED if the
        switch is as it was, EXIT_ROLLBACK_FAILED if it is not."""
        more = "".join("\n  " + d for d in details)
        self.set_state("rolling back")
        try:
            left = self.restore(plan, comment, flood_before)
        except DaqctlError as e:
            self.result["rollback"] = "failed"
            self.set_state("rollback failed")
            raise DaqctlError(
                "%s%s\nROLLBACK FAILED: %s\nswitch %s is in neither its "
                "old nor its new state: look at 'ovs-daqctl show' and "
                "'ovs-daqctl flows', then run the command again (or apply "
                "the previous map)" % (failed, ":" + more if more else "",
                                       e, self.spec.name),
                EXIT_ROLLBACK_FAILED)
        self.result["rollback"] = "done"
        self.set_state("rolled back")
        if left:
            # Rings that another client changed after our commit: theirs.
            self.result["left_alone"] = left
            more += ("\n(not rolled back: %s, changed by another client "
                     "since this change was committed; left as they are: "
                     "look at them with 'ovs-daqctl show')"
                     % ", ".join(left))
        raise DaqctlError(rolled_back + (":" + more if more else ""))

    def _report_plan(self, plan: Plan, verbose: bool, prefix: str) -> None:
        lines = []
        for d in plan.create:
            lines.append("%screate %s: ring %s of %d, %s, %s -> %s"
                         % (prefix, d.name, d.ring, d.ring_size,
                            d.shaping_text(), d.match_summary(), d.egress))
        for r, d in plan.update:
            what = ("adopt" if r.dcm is None else "update")
            lines.append("%s%s %s: %s" % (prefix, what, d.name,
                                          describe_update(r.dcm, d)))
        for r in plan.delete:
            lines.append("%sremove %s (ring %s)" % (
                prefix, r.dcm.name if r.dcm else "?", r.port.name))
        if verbose or len(lines) <= 20:
            for ln in lines:
                self.say("%s: %s" % (self.spec.name, ln))
        elif lines:
            self.say("%s: %s%d changes (-v lists them)"
                     % (self.spec.name, prefix, len(lines)))


def route_groups(routes: Routes, ofports: Dict[str, int],
                 installed: Optional[Dict[int, Group]]
                 ) -> Tuple[Dict[Tuple[str, ...], int], List[str]]:
    """The groups that 'routes' need (their ports on the bridge, in
    order -> group id) and, unless 'installed' (our groups on the switch)
    is None, the group mods that make those exactly the switch's groups
    of ours: "group add", "group modify", "group delete" lines of an
    ovs-ofctl bundle."""
    lists = set()
    for route in routes.values():
        for _, _, ports, _ in route:
            live = tuple(p for p in ports if p in ofports)
            if len(live) > 1 and ports[0] in ofports:
                lists.add(live)
    ids = group_ids(lists)
    if installed is None:
        return ids, []
    lines = []
    for ports, gid in sorted(ids.items(), key=lambda x: x[1]):
        g = failover_group([ofport_text(ofports[p]) for p in ports])
        have = installed.get(gid)
        if have is None:
            lines.append("group add " + group_text(gid, g))
        elif have != g:
            lines.append("group modify " + group_text(gid, g))
    wanted = set(ids.values())
    lines += ["group delete group_id=%d" % gid
              for gid in sorted(installed) if gid not in wanted]
    return ids, lines


def ring_options(current: Dict[str, str], d: Dcm) -> Dict[str, str]:
    """The Interface options of DCM 'd''s daqring, whose options are
    'current': d's, and those of 'current' that ovs-daqctl does not own
    (RING_OPTIONS); an option that d no longer sets is removed."""
    opts = {k: v for k, v in current.items() if k not in RING_OPTIONS}
    opts.update(d.options())
    return opts


def describe_update(old: Optional[Dcm], new: Dcm) -> str:
    if old is None:
        return "existing daqring %s, %s" % (new.ring, new.shaping_text())
    diffs = []
    for attr, label in (("ring_size", "ring-size"), ("max_burst",
                                                     "max-burst"),
                        ("poll_interval", "poll-interval"),
                        ("max_rate", "max-rate"),
                        ("max_burst_bytes", "max-burst-bytes"),
                        ("egress_max_rate", "egress-max-rate"),
                        ("egress_max_burst_bytes", "egress-max-burst-bytes"),
                        ("frame_overhead", "frame-overhead"),
                        ("numa_id", "numa-id"),
                        ("flow_buckets", "flow-buckets"), ("egress", "egress"),
                        ("ofport", "ofport"), ("rate", "rate"),
                        ("ring", "ring"), ("dl_dst", "dl-dst")):
        a, b = getattr(old, attr), getattr(new, attr)
        if a != b:
            diffs.append("%s %s -> %s" % (label, a, b))
    if old.match_text() != new.match_text():
        diffs.append("match %s -> %s" % (old.match_summary(),
                                         new.match_summary()))
    return ", ".join(diffs) or "marks"


def _names(names: List[str], verbose: bool) -> str:
    """': a, b, c' (at most 20 names unless 'verbose')."""
    if len(names) > 20 and not verbose:
        return " (-v lists them)"
    return ": " + ", ".join(names)
