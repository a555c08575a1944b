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

from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional

from ..daqctl.model import Dcm
from .model import Assignment, FabricState


@dataclass(frozen=True)
class Route:
    """Packets of a DCM leave this switch through 'port'."""
    dcm: str
    match: str
    port: str


@dataclass
class Slice:
    switch: str
    rings: List[Dcm] = field(default_factory=list)
    routes: List[Route] = field(default_factory=list)


def _uplink(state: FabricState, leaf: str, spine: str) -> Optional[str]:
    for lk in sorted(state.links, key=lambda lk: lk.name):
        if lk.joins(leaf, spine):
            return lk.port_of(leaf)
    return None


def slices(state: FabricState, assignments: Dict[str, Assignment]
           ) -> Dict[str, Slice]:
    """Every switch's slice (switches without anything have empty
    ones)."""
    out = {s.name: Slice(s.name) for s in state.switches}
    ros = [h for h in state.hosts if h.role == "ros"]
    for d in sorted(state.dcms, key=lambda d: d.name):
        a = assignments.get(d.name)
        host = state.host(d.host)
        if a is None or host is None:
            continue
        att = host.leaf(a.plane)
        if att is None:
            continue
        leaf, port = att
        match = d.dcm.match_text()
        if leaf in out:
            out[leaf].rings.append(replace(d.dcm, egress=port))
        ros_leaves = sorted({r.leaf(a.plane)[0] for r in ros
                             if r.leaf(a.plane) is not None} - {leaf})
        if ros_leaves and a.spine in out:
            down = _uplink(state, a.spine, leaf)
            if down is not None:
                out[a.spine].routes.append(Route(d.name, match, down))
        for rl in ros_leaves:
            up = _uplink(state, rl, a.spine)
            if up is not None and rl in out:
                out[rl].routes.append(Route(d.name, match, up))
    return out
