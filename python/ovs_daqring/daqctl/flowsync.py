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

"""The OpenFlow side of bringing a switch to its DCMs (FlowSync, mixed
into reconcile.Reconciler): each DCM's daqring no-flood, then the DCMs'
steering flows and the routes besides them (the fabric agent's, with
their fast_failover groups) in one ovs-ofctl bundle, and what it
learnt of the switch, which the next sync() may take as still true.
It uses the reconciler's db (Ovsdb), of (OpenFlow), spec, current()
and progress()."""

import time
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from .model import DaqctlError, Dcm, Problem
from .idlutil import opt
from .openflow import (DumpedFlow, Flow, Group, dcm_flows, failover_group,
                       flow_text, group_ids, group_text, is_ours,
                       ofport_text, port_actions, port_name, set_dl_dst)

# Flows besides the DCMs' (the fabric agent's routes): cookie ->
# [(priority, match, output ports, primary first, the destination MAC
# set before the output or "")].  A match's "in_port=NAME" names a port
# (route_match()); a port may carry actions (openflow.port_actions());
# no ports: the packets are dropped (a flow that counts them).
Routes = Dict[int, List[Tuple[int, List[str], Tuple[str, ...], str]]]


class FlowSync:
    """A reconciler's flows, groups and no-flood (see the module)."""

    def __init__(self) -> None:
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
                gid: route_group(ports, ofports)
                for ports, gid in groups.items()}
        for c, route in sorted(self.routes.items()):
            if c in wanted:
                continue
            flows = self.route_flows(route, ofports, groups)
            if flows is None:
                continue
            wanted.add(c)
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

    @classmethod
    def route_flows(cls, route: List[Tuple[int, List[str], Tuple[str, ...],
                                           str]],
                    ofports: Dict[str, int],
                    groups: Dict[Tuple[str, ...], int]
                    ) -> Optional[List[Tuple[int, List[str], str]]]:
        """A cookie's flows (priority, match, actions), or None if a port
        it needs (a primary port, an in_port) is not on the bridge."""
        flows = []
        for prio, match, ports, mac in route:
            m = route_match(match, ofports)
            if m is None or (ports and port_name(ports[0]) not in ofports):
                return None
            flows.append((prio, m, cls.route_action(ports, ofports, groups,
                                                    mac)))
        return flows

    @staticmethod
    def route_action(ports: Tuple[str, ...], ofports: Dict[str, int],
                     groups: Dict[Tuple[str, ...], int],
                     mac: str = "") -> str:
        """A route's actions: an output, or its group, after setting the
        destination MAC to 'mac' if given (and the port's own actions:
        openflow.port_actions()); no port: a drop."""
        live = tuple(p for p in ports if port_name(p) in ofports)
        if not live:
            return "drop"
        if len(live) == 1:
            pre, name = port_actions(live[0])
            return set_dl_dst(mac) + pre + "output:%s" % ofport_text(
                ofports[name])
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
            live = tuple(p for p in ports if port_name(p) in ofports)
            if len(live) > 1 and port_name(ports[0]) in ofports:
                lists.add(live)
    ids = group_ids(lists)
    if installed is None:
        return ids, []
    lines = []
    for ports, gid in sorted(ids.items(), key=lambda x: x[1]):
        g = route_group(ports, ofports)
        have = installed.get(gid)
        if have is None:
            lines.append("group add " + group_text(gid, g))
        elif have != g:
            lines.append("group modify " + group_text(gid, g))
    wanted = set(ids.values())
    lines += ["group delete group_id=%d" % gid
              for gid in sorted(installed) if gid not in wanted]
    return ids, lines


def route_group(ports: Tuple[str, ...], ofports: Dict[str, int]) -> Group:
    """The fast_failover group of a route's live 'ports', in order."""
    acts = [port_actions(p) for p in ports]
    return failover_group([ofport_text(ofports[n]) for _, n in acts],
                          [a for a, _ in acts])


def route_match(match: List[str],
                ofports: Dict[str, int]) -> Optional[List[str]]:
    """A route's match with an "in_port=NAME" as the port's number, as
    ovs-ofctl prints it (None: the port is not on the bridge)."""
    out = []
    for f in match:
        if f.startswith("in_port="):
            name = f[len("in_port="):]
            if not name.isdigit():
                if name not in ofports:
                    return None
                f = "in_port=" + ofport_text(ofports[name])
        out.append(f)
    return out
