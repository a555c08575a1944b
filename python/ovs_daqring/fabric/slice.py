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


"""A switch's slice of the fabric: the daqrings it holds (on the leaf
ports that face HLT hosts, where the incast fans in) and the routes it
forwards on, from the desired state and the planner's assignments.  Pure
functions.

A DCM's daqring is on its host's leaf in every plane the host is cabled
to, bound to the host's port there, whatever plane the planner assigned
it (and before it has an assignment; named RING.BRIDGE on a switch that
shares its OVSDB with others, model.switch_ring()): the rings of the
planes it is not assigned to are standby rings, which no route leads
to.  A move between planes therefore changes flows only, never ports
(adding a daqring reconfigures the datapath and reloads its PMD
threads); and packets a ring still holds when its DCM moves away keep
its egress and drain.  An
idle ring takes no share of its egress: the rings bound to one port
share its egress-max-rate work-conservingly.

Routes go both ways.  Towards a DCM (the fragments): each ROS leaf sends
the DCM's match up to the DCM's spine, the spine down to the DCM's leaf,
where its ring is.  Towards the ROS (the DCM's requests and its TCP
ACKs): the DCM's leaf sends what comes from the DCM (its match reversed)
up to the same spine, so that both directions of a DCM's connections take
its path and move together on a failure; every spine and every ROS leaf
routes each ROS host's address (a /32 or the prefix of its addresses,
thesis section 6.2.3) down to the host's leaf and out of its port.  A ROS
host without an address in the map gets no routes towards it.

Routes are standing (the invariant that lets a failure or a move lose
nothing the switches can avoid losing): in every plane its host is
cabled to, whatever the planner assigned and before it assigns, every
spine routes a DCM down to its leaf, and every ROS leaf and the DCM's
leaf send it up over every spine of the plane, as one fast_failover
group.  The assignment chooses only the group's first bucket at those
leaves (the assigned spine; in the other planes an order by the DCM's
name) and, at the hosts, the plane.  So a leaf whose uplink dies moves
the traffic to another spine that already routes it, in the time the
link's state takes to reach ovs-vswitchd; a spine's flows depend on the
map alone; and a move changes only which bucket comes first, on a path
that already carries the DCM, so no order of updates between switches is
needed.  What needs the planner is a failure a leaf cannot see: a
spine's link down to the DCM's leaf (the spine has no other way down).

The hosts do no ARP (thesis section 6.2.3): the switches forward on the
addresses alone, and the last hop, a host's leaf, sets the destination
MAC to the host's in that plane, into a DCM's ring and on the route
towards a ROS host, whatever MAC the sender gave (a host with ARP off
addresses every frame to itself).  A host without a MAC in the map gets
its frames as they were sent."""

import zlib
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from ..daqctl.model import PRIO_TO_RING, Dcm
from .model import (Assignment, FabricDcm, FabricHost, FabricState,
                    switch_ring)

# A route's flows are at the priority of the flows into a ring (a switch
# holds either a DCM's ring or a route towards it, never both; a ROS
# host's address is no DCM's).  The way back from a DCM is one below:
# what a DCM sends to another DCM's ring or to a ROS host on its own leaf
# takes those flows, the rest goes up to the DCM's spine.
PRIO_ROUTE = PRIO_TO_RING
PRIO_FROM_DCM = PRIO_ROUTE - 1
# Route.match: "ip:ADDR[/LEN]" (towards an address or prefix), a DCM's
# four-tuples (towards the DCM), or FROM + a DCM's match text (from it).
FROM = "from "


@dataclass(frozen=True)
class Route:
    """Packets of 'match' leave this switch through 'port' or, while
    that port is not live (its link or BFD session down), through the
    first live one of 'backups': an OpenFlow fast_failover group, the
    thesis's backup flows (section 6.2.4).  No backups: a plain output.
    'dcm': the DCM whose path the route is part of (either way), or ""
    for a route towards a ROS host ('host').  'dl_dst': the destination
    MAC set first, at the last hop (the host's leaf), or ""."""
    dcm: str
    match: str
    port: str
    backups: Tuple[str, ...] = ()
    priority: int = PRIO_ROUTE
    host: str = ""
    dl_dst: str = ""

    @property
    def ports(self) -> Tuple[str, ...]:
        return (self.port,) + self.backups

    @property
    def key(self) -> str:
        """What the route's flows share a cookie with: its DCM's other
        routes on this switch, or its host's."""
        return self.dcm or "host/" + self.host


@dataclass
class Slice:
    switch: str
    rings: List[Dcm] = field(default_factory=list)
    routes: List[Route] = field(default_factory=list)


def _links_between(state: FabricState) -> Dict[Tuple[str, str], List[str]]:
    """(switch, other switch) -> the ports of 'switch' cabled to 'other',
    in link name order."""
    out: Dict[Tuple[str, str], List[str]] = {}
    for lk in sorted(state.links, key=lambda lk: lk.name):
        out.setdefault((lk.a_switch, lk.b_switch), []).append(lk.a_port)
        out.setdefault((lk.b_switch, lk.a_switch), []).append(lk.b_port)
    return out


def backup_spines(spines: List[str], spine: str, dcm: str) -> List[str]:
    """The spines of a plane that a DCM on 'spine' falls back on, in
    order: the others, starting at one chosen by the DCM's name, so that
    the DCMs of a failed spine spread over the rest until the planner
    moves them (it moves them too, to the least loaded paths)."""
    others = [s for s in spines if s != spine]
    if not others:
        return []
    k = zlib.crc32(dcm.encode()) % len(others)
    return others[k:] + others[:k]


def _host_routes(state: FabricState, out: Dict[str, Slice],
                 ros: List[FabricHost],
                 cabled: Dict[Tuple[str, str], List[str]],
                 only: Optional[str] = None) -> None:
    """Towards each ROS host with an address, in each plane it is cabled
    to: its leaf out of its port, every spine of the plane linked to that
    leaf down to it (over its other links to the leaf while that one is
    not live).  With 'only', that switch's alone."""
    for h in sorted(ros, key=lambda h: h.name):
        if not h.ip:
            continue
        match = "ip:" + h.ip
        for plane, leaf, port in h.attachments:
            if leaf in out and only in (None, leaf):
                out[leaf].routes.append(Route("", match, port, host=h.name,
                                              dl_dst=h.mac(plane) or ""))
            for spine in state.spines().get(plane, []):
                down = cabled.get((spine, leaf))
                if down and spine in out and only in (None, spine):
                    out[spine].routes.append(Route(
                        "", match, down[0], tuple(down[1:]), host=h.name))


@dataclass
class _Cabling:
    """What slices() reads of the fabric's cabling, computed once."""
    out: Dict[str, Slice]
    cabled: Dict[Tuple[str, str], List[str]]
    spines: Dict[int, List[str]]
    ros: List[FabricHost]
    # Per plane, the leaves of the ROS hosts the way back can be routed
    # to (those with an address).
    back_leaves: Dict[int, Set[str]]
    # (plane, leaf) -> the ROS leaves that route towards the DCMs there.
    ros_leaves_at: Dict[Tuple[int, str], List[str]] = field(
        default_factory=dict)

    def ros_leaves(self, plane: int, leaf: str) -> List[str]:
        got = self.ros_leaves_at.get((plane, leaf))
        if got is None:
            got = self.ros_leaves_at[(plane, leaf)] = sorted(
                {r.leaf(plane)[0] for r in self.ros   # type: ignore[index]
                 if r.leaf(plane) is not None} - {leaf})
        return got


def spine_order(spines: List[str], first: Optional[str],
                dcm: str) -> List[str]:
    """The spines of a plane in the order a DCM's traffic takes them
    up: its assigned spine ('first', if the DCM is assigned to this
    plane) then backup_spines(); in a plane it is not assigned to, every
    spine in backup_spines()'s order (a standby plane: only what was in
    flight when the DCM moved, or what a host still sends there, takes
    it)."""
    if first is not None and first in spines:
        return [first] + backup_spines(spines, first, dcm)
    return backup_spines(spines + [""], "", dcm)


def _dcm_routes(d: FabricDcm, plane: int, leaf: str, first: Optional[str],
                ctx: _Cabling, only: Optional[str]) -> None:
    """A DCM's routes in one plane its host is cabled to (at 'leaf'):
    standing routes, the same whatever the assignment but for the order
    of the uplinks.  Every spine of the plane cabled to 'leaf' routes the
    DCM down to it; every ROS leaf of the plane sends it up over every
    spine, the assigned one ('first') first; the DCM's leaf sends what
    comes from the DCM up the same way.  So a spine never needs the
    planner to carry a DCM: a ROS leaf's fast_failover group that takes
    another spine finds the route there, and a move changes only the
    order of buckets at the leaves (no order of updates between
    switches is needed for a move to lose nothing)."""
    out, cabled = ctx.out, ctx.cabled
    spines = [sp for sp in ctx.spines.get(plane, [])
              if cabled.get((sp, leaf))]
    ros_leaves = ctx.ros_leaves(plane, leaf)
    if (only is not None and only != leaf and only not in ros_leaves
            and only not in spines):
        return
    match = d.dcm.match_text()
    if ros_leaves:
        for sp in spines:
            if sp in out and only in (None, sp):
                down = cabled[(sp, leaf)]
                out[sp].routes.append(Route(d.name, match, down[0],
                                            tuple(down[1:])))
    order = spine_order(spines, first, d.name)
    for rl in ros_leaves:
        if rl not in out or only not in (None, rl):
            continue
        ups = [p for sp in order for p in cabled.get((rl, sp), [])]
        if ups:
            out[rl].routes.append(Route(d.name, match, ups[0],
                                        tuple(ups[1:])))
    # The way back, if some ROS host it can be routed to is on another
    # leaf of the plane: up over the same spines, in the same order.
    back = ctx.back_leaves.get(plane, set()) - {leaf}
    ups = [p for sp in order for p in cabled.get((leaf, sp), [])]
    if back and ups and leaf in out and only in (None, leaf):
        out[leaf].routes.append(Route(d.name, FROM + match, ups[0],
                                      tuple(ups[1:]),
                                      priority=PRIO_FROM_DCM))


def slices(state: FabricState, assignments: Dict[str, Assignment],
           only: Optional[str] = None) -> Dict[str, Slice]:
    """Every switch's slice (switches without anything have empty
    ones).  With 'only', that switch's alone (the others are left empty):
    what an agent needs, in a fraction of the time at thousands of DCMs."""
    out = {s.name: Slice(s.name) for s in state.switches}
    hosts = {h.name: h for h in state.hosts}
    sharing = {s: state.switch(s).bridge  # type: ignore[union-attr]
               for s in state.sharing_db()}
    ros = [h for h in state.hosts if h.role == "ros"]
    cabled = _links_between(state)
    _host_routes(state, out, ros, cabled, only)
    back_leaves: Dict[int, Set[str]] = {}
    for r in ros:
        for plane, rleaf, _ in r.attachments:
            if r.ip:
                back_leaves.setdefault(plane, set()).add(rleaf)
    ctx = _Cabling(out, cabled, state.spines(), ros, back_leaves)
    for d in sorted(state.dcms, key=lambda d: d.name):
        a = assignments.get(d.name)
        host = hosts.get(d.host)
        if host is None:
            continue
        # Its rings: on its host's leaf in every plane, the assigned one
        # or not (standby rings), and before it has an assignment.
        for hplane, hleaf, hport in host.attachments:
            if hleaf in out and only in (None, hleaf):
                mac = host.mac(hplane)
                out[hleaf].rings.append(
                    replace(d.dcm, egress=hport, dl_dst=mac,
                            ring=switch_ring(d.dcm.ring, sharing[hleaf]))
                    if hleaf in sharing else
                    replace(d.dcm, egress=hport, dl_dst=mac))
        for hplane, hleaf, _ in host.attachments:
            first = a.spine if a is not None and a.plane == hplane else None
            _dcm_routes(d, hplane, hleaf, first, ctx, only)
    return out


def monitored(node: str, hosts: Iterable[FabricHost],
              dcms: Iterable[FabricDcm], assigned: Iterable[Assignment]
              ) -> Dict[str, List[Any]]:
    """The OVSDB conditions (monitor_cond's "where") on the DCM and
    Assignment tables that select every row slices(..., only=node) reads,
    given every host and the DCMs a client holds now (those its
    conditions selected so far).  slices() reads:

    - every DCM on a host cabled to 'node' (its rings and its way back
      are on the host's leaf), and their assignments (which spine the
      way back takes first): the DCMs by host, the assignments by DCM;
    - at a ROS host's leaf, every DCM (it routes towards every DCM of
      its planes, standing routes) and the assignments of its planes
      (which spine each DCM takes first);
    - at a switch no host is cabled to (a spine), every DCM (it routes
      every DCM of its plane down to its leaf) and no assignment: a
      spine's slice follows the map alone, so that no move and no
      failover changes it.

    A condition per DCM at the switches that route every DCM would cost
    a round trip to the server before a new DCM is routed; the HLT
    leaves, most of a fabric's switches, hold the DCMs of their hosts
    only.  'assigned' is not read (the conditions no longer follow the
    assignments held: FabricDb.narrow() still reaches its fixed point
    at once).

    Every clause is an equality (ovsdb-server hashes those), sorted, so
    that the same rows give the same conditions; no clause: [False]."""
    hosts = list(hosts)
    mine = sorted({h.name for h in hosts
                   for _, leaf, _ in h.attachments if leaf == node})
    ros_planes = sorted({p for h in hosts if h.role == "ros"
                         for p, leaf, _ in h.attachments if leaf == node})
    cabled = set(mine)
    on_mine = {d.name for d in dcms if d.host in cabled}
    asg: List[Any] = ([["plane", "==", p] for p in ros_planes]
                      + [["dcm", "==", n] for n in sorted(on_mine)])
    if ros_planes or not mine:
        return {"DCM": [True], "Assignment": asg or [False]}
    dcm: List[Any] = [["host", "==", h] for h in mine]
    return {"DCM": dcm, "Assignment": asg or [False]}
