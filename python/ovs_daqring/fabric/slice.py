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
forwards each DCM's packets on, from the desired state and the planner's
assignments.  Pure functions."""

import zlib
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Set, Tuple

from ..daqctl.model import Dcm
from .model import Assignment, FabricState


@dataclass(frozen=True)
class Route:
    """Packets of a DCM leave this switch through 'port' or, while that
    port is not live (its link or BFD session down), through the first
    live one of 'backups': an OpenFlow fast_failover group, the thesis's
    backup flows (§6.2.4).  No backups: a plain output."""
    dcm: str
    match: str
    port: str
    backups: Tuple[str, ...] = ()

    @property
    def ports(self) -> Tuple[str, ...]:
        return (self.port,) + self.backups


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


def slices(state: FabricState, assignments: Dict[str, Assignment],
           only: Optional[str] = None) -> Dict[str, Slice]:
    """Every switch's slice (switches without anything have empty
    ones).  With 'only', that switch's alone (the others are left empty):
    what an agent needs, in a fraction of the time at thousands of DCMs."""
    out = {s.name: Slice(s.name) for s in state.switches}
    hosts = {h.name: h for h in state.hosts}
    ros = [h for h in state.hosts if h.role == "ros"]
    ros_leaves_of: Dict[int, Set[str]] = {}
    cabled = _links_between(state)
    spines = state.spines()
    for d in sorted(state.dcms, key=lambda d: d.name):
        a = assignments.get(d.name)
        host = hosts.get(d.host)
        if a is None or host is None:
            continue
        att = host.leaf(a.plane)
        if att is None:
            continue
        leaf, port = att
        if leaf in out and only in (None, leaf):
            out[leaf].rings.append(replace(d.dcm, egress=port))
        if a.plane not in ros_leaves_of:
            ros_leaves_of[a.plane] = {r.leaf(a.plane)[0] for r in ros
                                      if r.leaf(a.plane) is not None}
        ros_leaves = sorted(ros_leaves_of[a.plane] - {leaf})
        if only is not None and only != a.spine and only not in ros_leaves:
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
    return out
