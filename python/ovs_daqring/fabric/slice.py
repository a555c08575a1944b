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
    # The ROS leaves that route towards the DCMs on a (plane, leaf).
    ros_leaves_at: Dict[Tuple[int, str], List[str]] = {}
    cabled = _links_between(state)
    spines = state.spines()
    _host_routes(state, out, ros, cabled, only)
    # Per plane, the leaves of the ROS hosts the way back can be routed
    # to (those with an address).
    back_leaves: Dict[int, Set[str]] = {}
    for r in ros:
        for plane, rleaf, _ in r.attachments:
            if r.ip:
                back_leaves.setdefault(plane, set()).add(rleaf)
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
        if a is None:
            continue
        att = host.leaf(a.plane)
        if att is None:
            continue
        leaf, port = att
        ros_leaves = ros_leaves_at.get((a.plane, leaf))
        if ros_leaves is None:
            ros_leaves = ros_leaves_at[(a.plane, leaf)] = sorted(
                {r.leaf(a.plane)[0] for r in ros
                 if r.leaf(a.plane) is not None} - {leaf})
        if (only is not None and only not in (a.spine, leaf)
                and only not in ros_leaves):
            continue
        match = d.dcm.match_text()
        if ros_leaves and a.spine in out and only in (None, a.spine):
            down = cabled.get((a.spine, leaf))
            if down:
                out[a.spine].routes.append(Route(d.name, match, down[0],
                                                 tuple(down[1:])))
        order = [a.spine] + backup_spines(spines.get(a.plane, []), a.spine,
                                          d.name)
        for rl in ros_leaves:
            if rl not in out or only not in (None, rl):
                continue
            ups = [p for sp in order for p in cabled.get((rl, sp), [])]
            if ups and cabled.get((rl, a.spine)):
                out[rl].routes.append(Route(d.name, match, ups[0],
                                            tuple(ups[1:])))
        # The way back, if some ROS host it can be routed to is on
        # another leaf of the plane: up to the DCM's spine, or while that
        # uplink is not live to the next spine's (as the ROS leaves).
        back = back_leaves.get(a.plane, set()) - {leaf}
        ups = [p for sp in order for p in cabled.get((leaf, sp), [])]
        if (back and ups and cabled.get((leaf, a.spine)) and leaf in out
                and only in (None, leaf)):
            out[leaf].routes.append(Route(d.name, FROM + match, ups[0],
                                          tuple(ups[1:]),
                                          priority=PRIO_FROM_DCM))
    return out


def monitored(node: str, hosts: Iterable[FabricHost],
              dcms: Iterable[FabricDcm], assigned: Iterable[Assignment]
              ) -> Dict[str, List[Any]]:
    """The OVSDB conditions (monitor_cond's "where") on the DCM and
    Assignment tables that select every row slices(..., only=node) reads,
    given every host and the DCMs and assignments a client holds now
    (those its conditions selected so far).  slices() reads, of a DCM
    and its assignment (both, or it skips the DCM):

    - those of a DCM on a host cabled to 'node' (its ring and its way
      back are on the host's leaf): the DCMs by host, their assignments
      by DCM;
    - every assignment of a plane in which 'node' is a ROS host's leaf
      (it routes towards every DCM of the plane), and their DCMs by name;
    - the assignments naming 'node' as their spine, and their DCMs by
      name.

    A switch that routes DCMs by name (a ROS host's leaf, a spine: one
    that holds such assignments) monitors every DCM instead: which DCMs
    it routes follows the assignments, and a condition per DCM would
    cost a round trip to the server before each new DCM (at the ROS
    leaves) and each move (at the spine the DCMs move to, in a
    failover) could be routed.  The HLT leaves, most of a fabric's
    switches, hold the DCMs of their hosts only.

    The Assignment clauses follow the DCMs held: a client has every row
    it needs once the conditions it holds rows by (acknowledged by the
    server) are the ones this returns for those rows
    (FabricDb.narrow()).  Every clause is an equality (ovsdb-server
    hashes those), sorted, so that the same rows give the same
    conditions; no clause: [False]."""
    hosts = list(hosts)
    assigned = list(assigned)
    mine = sorted({h.name for h in hosts
                   for _, leaf, _ in h.attachments if leaf == node})
    ros_planes = sorted({p for h in hosts if h.role == "ros"
                         for p, leaf, _ in h.attachments if leaf == node})
    cabled = set(mine)
    on_mine = {d.name for d in dcms if d.host in cabled}
    asg: List[Any] = ([["spine", "==", node]]
                      + [["plane", "==", p] for p in ros_planes]
                      + [["dcm", "==", n] for n in sorted(on_mine)])
    if ros_planes or any(a.spine == node for a in assigned):
        return {"DCM": [True], "Assignment": asg}
    by_name = {a.dcm for a in assigned} - on_mine
    dcm: List[Any] = ([["host", "==", h] for h in mine]
                      + [["name", "==", n] for n in sorted(by_name)])
    return {"DCM": dcm or [False], "Assignment": asg}
