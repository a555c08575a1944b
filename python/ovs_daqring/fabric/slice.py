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
needed.

Detours (the invariant that makes the failure a leaf cannot see, a
spine's link down to a leaf, lose nothing but what was in flight on it):
every spine can reach every leaf of its plane while that leaf has a
live link to another spine: down, or bounced through another leaf.  A
spine's route down to leaf L (a DCM's, a ROS host's) is a fast_failover
group: its links to L, then a bucket per other leaf X of the plane that
has uplinks to other spines (detour_leaves()), which tags the packet
(openflow.BOUNCE) and sends it to X, even if X is where it came from.
X takes the tag off, marks the source MAC and sends it up over its
uplinks to the plane's other spines (a route per uplink, "bounced"),
and that spine routes it down to L as it routes everything.  A packet
bounced a second time (L unreachable from the second spine too) comes
to a leaf tagged and marked and is dropped there by a flow of its own
("rebounced"), which counts it: nothing circles, nothing vanishes
uncounted.  The spine's groups are per (spine, leaf), shared by every
route down to that leaf; a leaf has two flows per uplink.  The planner
still moves the DCMs off the failed link (a detour costs a second
crossing of the fabric), but nothing waits for it.

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
from ..daqctl.openflow import BOUNCE, RESUME
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
# four-tuples (towards the DCM), or FROM + a DCM's match text (from it);
# at a leaf, BOUNCED or REBOUNCED + an uplink's port: what a spine
# bounced to this leaf through that port (slice docstring, "Detours"),
# for the first time, or again.
FROM = "from "
BOUNCED = "bounced "
REBOUNCED = "rebounced "
# A detour's flows at a leaf are above every other flow of the fabric's
# (a tagged packet from a spine is a bounced one, whatever it matches).
PRIO_BOUNCED = PRIO_ROUTE + 10
PRIO_REBOUNCED = PRIO_BOUNCED + 1


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
    port: str                   # "": the packets are dropped (counted)
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
        routes on this switch, or its host's, or a detour's other flow
        from the same uplink."""
        return route_key(self.dcm, self.host, self.match)


def route_key(dcm: str, host: str, match: str) -> str:
    """Route.key of a route with these fields."""
    for prefix in (BOUNCED, REBOUNCED):
        if match.startswith(prefix):
            return "detour/" + match[len(prefix):]
    return dcm or "host/" + host


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
                 only: Optional[str] = None,
                 detours: Optional[Dict[Tuple[str, str],
                                        Tuple[str, ...]]] = None) -> None:
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
                        "", match, down[0], tuple(down[1:])
                        + (detours or {}).get((spine, leaf), ()),
                        host=h.name))


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
    # (spine, leaf) -> the detour buckets after the spine's links down to
    # the leaf (detours()).
    detours: Dict[Tuple[str, str], Tuple[str, ...]] = field(
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
                out[sp].routes.append(Route(
                    d.name, match, down[0],
                    tuple(down[1:]) + ctx.detours.get((sp, leaf), ())))
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


def plane_leaves(spines: Dict[int, List[str]],
                 cabled: Dict[Tuple[str, str], List[str]]
                 ) -> Dict[int, List[str]]:
    """Per plane, its leaves (the switches cabled to its spines),
    sorted."""
    spine_set = {sp for v in spines.values() for sp in v}
    out: Dict[int, List[str]] = {}
    for plane, sps in spines.items():
        out[plane] = sorted({b for (a, b) in cabled
                             if a in sps and b not in spine_set})
    return out


def _uplinks(leaf: str, spines: List[str],
             cabled: Dict[Tuple[str, str], List[str]]) -> List[str]:
    """The spines of 'spines' that 'leaf' is cabled to, in order."""
    return [sp for sp in spines if cabled.get((leaf, sp))]


def detour_leaves(spines: List[str], leaves: List[str], spine: str,
                  leaf: str, cabled: Dict[Tuple[str, str], List[str]]
                  ) -> List[str]:
    """The leaves through which 'spine' detours what it routes down to
    'leaf' while its links there are down, in order: the plane's other
    leaves cabled to it that have uplinks to another spine, starting at
    one chosen by the leaf's name (the detours of one spine's failed
    links spread over the others)."""
    got = [x for x in leaves
           if x != leaf and cabled.get((spine, x))
           and len(_uplinks(x, spines, cabled)) > 1]
    if not got:
        return []
    k = zlib.crc32(leaf.encode()) % len(got)
    return got[k:] + got[:k]


def detours(spines: Dict[int, List[str]], planes: Dict[int, List[str]],
            cabled: Dict[Tuple[str, str], List[str]]
            ) -> Dict[Tuple[str, str], Tuple[str, ...]]:
    """(spine, leaf) -> the ports a spine's route down to the leaf takes
    after its links to it (openflow.BOUNCE and the port, see the
    module's "Detours"): one group per (spine, leaf), whatever the number
    of routes down to it."""
    out: Dict[Tuple[str, str], Tuple[str, ...]] = {}
    for plane, sps in spines.items():
        leaves = planes.get(plane, [])
        for sp in sps:
            for leaf in leaves:
                if not cabled.get((sp, leaf)):
                    continue
                out[(sp, leaf)] = tuple(
                    BOUNCE + p
                    for x in detour_leaves(sps, leaves, sp, leaf, cabled)
                    for p in cabled[(sp, x)])
    return out


def _bounce_routes(spines: Dict[int, List[str]],
                   planes: Dict[int, List[str]],
                   cabled: Dict[Tuple[str, str], List[str]],
                   out: Dict[str, Slice], only: Optional[str]) -> None:
    """At every leaf cabled to more than one spine of its plane, for each
    uplink: what a spine bounced to it through that uplink goes up over
    its uplinks to the plane's other spines (those after the spine
    first, in the plane's order: the detours of one spine spread over the
    others), the tag off and the source MAC marked (openflow.RESUME);
    what comes bounced a second time is dropped (and counted)."""
    for plane, sps in spines.items():
        for leaf in planes.get(plane, []):
            if leaf not in out or only not in (None, leaf):
                continue
            ups = _uplinks(leaf, sps, cabled)
            if len(ups) < 2:
                continue
            for i, sp in enumerate(ups):
                others = [RESUME + p for o in ups[i + 1:] + ups[:i]
                          for p in cabled[(leaf, o)]]
                for port in cabled[(leaf, sp)]:
                    out[leaf].routes.append(Route(
                        "", BOUNCED + port, others[0], tuple(others[1:]),
                        priority=PRIO_BOUNCED))
                    out[leaf].routes.append(Route(
                        "", REBOUNCED + port, "",
                        priority=PRIO_REBOUNCED))


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
    spines = state.spines()
    planes = plane_leaves(spines, cabled)
    detour = detours(spines, planes, cabled)
    _host_routes(state, out, ros, cabled, only, detour)
    _bounce_routes(spines, planes, cabled, out, only)
    back_leaves: Dict[int, Set[str]] = {}
    for r in ros:
        for plane, rleaf, _ in r.attachments:
            if r.ip:
                back_leaves.setdefault(plane, set()).add(rleaf)
    ctx = _Cabling(out, cabled, spines, ros, back_leaves, detours=detour)
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
