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


"""The planner's assignments as a generation that is not planned yet can
use them.  An agent that waited PLAN_WAIT_S for the plan of a new
generation (or runs without a planner) applies it with the assignments
in force, which the planner made for an older one.  The switches route
every DCM whatever the assignments say (standing routes, fabric/slice.py:
an assigned spine the generation removed is skipped), but a host steers
a DCM into the plane of its assignment (fabric/hostnet.py): a plane the
new map removed, or no longer cables the host to, leads nowhere, and the
DCM would be black-holed until the plan comes, or for good without a
planner.  current_assignments() keeps the assignments the new
generation can route, moves those on a spine it removed (or no longer
links to the DCM's leaf) to a spine of the same plane that carries them,
and leaves out those it cannot place: the DCM is then unassigned until
the planner plans (its standby routes; its hosts' main table).  A pure
function: every agent that holds an assignment computes the same from
the same generation."""

import zlib
from dataclasses import replace
from typing import Dict, List, Optional, Set, Tuple

from .model import Assignment, FabricDcm, FabricState


def _linked(state: FabricState) -> Set[Tuple[str, str]]:
    """(switch, other) for every link of 'state', both ways."""
    out = set()
    for lk in state.links:
        out.add((lk.a_switch, lk.b_switch))
        out.add((lk.b_switch, lk.a_switch))
    return out


def _ros_leaves(state: FabricState) -> Dict[int, Set[str]]:
    """Per plane, the leaves of the ROS hosts."""
    out: Dict[int, Set[str]] = {}
    for h in state.hosts:
        if h.role == "ros":
            for plane, leaf, _ in h.attachments:
                out.setdefault(plane, set()).add(leaf)
    return out


def best_spines(leaf: str, candidates: List[str],
                linked: Set[Tuple[str, str]], ros: Set[str]) -> List[str]:
    """Of 'candidates' (the spines of a plane linked to a DCM's 'leaf'),
    those linked to the most ROS leaves of the plane ('ros'), sorted."""
    reach = {sp: sum(1 for rl in ros - {leaf} if (rl, sp) in linked)
             for sp in candidates}
    most = max(reach.values(), default=0)
    return sorted(sp for sp in candidates if reach[sp] == most)


def stand_in(d: FabricDcm, spine: str, best: List[str]) -> Optional[str]:
    """The spine DCM 'd', assigned to 'spine', takes until the plan
    comes, of 'best' (best_spines()): 'spine' if it is one, else one
    chosen by the DCM's name (so that the DCMs of a removed spine
    spread); None if there is none."""
    if spine in best:
        return spine
    if not best:
        return None
    return best[zlib.crc32(d.name.encode()) % len(best)]


def current_assignments(state: FabricState,
                        assignments: Dict[str, Assignment]
                        ) -> Dict[str, Assignment]:
    """'assignments' (by DCM) as generation 'state' can route them: an
    assignment whose plane the DCM's host is cabled to, and whose spine
    is a spine of that plane linked to the host's leaf there and to as
    many of the plane's ROS leaves as any, as it is (the same object);
    one whose spine is not, on a spine of that plane that is
    (stand_in()), its other columns as they are; the others, and those
    of DCMs not in 'state', left out."""
    spines = state.spines()
    linked = _linked(state)
    ros = _ros_leaves(state)
    hosts = {h.name: h for h in state.hosts}
    # (plane, leaf) -> best_spines(): computed once per leaf.
    best: Dict[Tuple[int, str], List[str]] = {}
    out: Dict[str, Assignment] = {}
    for d in state.dcms:
        a = assignments.get(d.name)
        h = hosts.get(d.host)
        if a is None or h is None:
            continue
        at = h.leaf(a.plane)
        if at is None:
            # The plane is gone, or its host is no longer cabled to it.
            continue
        key = (a.plane, at[0])
        if key not in best:
            best[key] = best_spines(
                at[0], [sp for sp in spines.get(a.plane, [])
                        if (at[0], sp) in linked],
                linked, ros.get(a.plane, set()))
        spine = stand_in(d, a.spine, best[key])
        if spine == a.spine:
            out[d.name] = a
        elif spine is not None:
            out[d.name] = replace(a, spine=spine)
    return out
