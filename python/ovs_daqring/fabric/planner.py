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


"""The planner's plan: which plane and spine each DCM's flows take.

Pure and deterministic functions of the desired state, the current
assignments, the ports known to be down and the time: the same inputs
give the same plan, on any planner.  The planner's role that runs them
(the lock, the epoch, the rounds that write the plan) is
fabric/plannerd.py.

- First assignment (thesis Algorithm 6.1): DCMs in name order go round-
  robin over the paths, planes first (plane 0 spine 0, plane 1 spine 0,
  ..., plane 0 spine 1, ...).  It is the least-loaded rule with ties
  broken by that order, so DCMs added later go where the fewest are.
- A failure (Algorithm 6.2, §6.2.4): only the DCMs whose path is no
  longer usable move, each to the least-loaded usable path; they remember
  the path they left (their home).
- A return: a moved DCM goes back home once its home path has been up
  for the hold-down and it has stayed where it is for the hold-down; a
  path that fails again within the hold-down restarts it, so nothing
  flaps.
"""

from dataclasses import replace
from typing import Dict, Iterable, List, Optional, Set, Tuple

from .model import Assignment, FabricDcm, FabricState, Path

# A switch port known to be down: (switch, port).
Endpoint = Tuple[str, str]


def path_order(state: FabricState) -> List[Path]:
    """The paths in round-robin order: the first spine of every plane,
    then the second of every plane, ..."""
    spines = state.spines()
    order: List[Path] = []
    k = 0
    while True:
        row = [(plane, names[k]) for plane, names in sorted(spines.items())
               if k < len(names)]
        if not row:
            return order
        order += row
        k += 1


def path_endpoints(state: FabricState, d: FabricDcm, path: Path,
                   down: Set[Endpoint]
                   ) -> Optional[List[Endpoint]]:
    """The switch ports the DCM's traffic needs on 'path' (ROS attachments,
    a leaf-spine link for every leaf involved, the DCM host's attachment),
    or None if the path is not usable: not in the fabric, or some hop has
    no port up."""
    plane, spine = path
    sw = state.switch(spine)
    host = state.host(d.host)
    if sw is None or sw.role != "spine" or sw.plane != plane or host is None:
        return None
    att = host.leaf(plane)
    if att is None or att in down:
        return None
    need: List[Endpoint] = [att]
    leaves = {att[0]}
    for ros in sorted((h for h in state.hosts if h.role == "ros"),
                      key=lambda h: h.name):
        a = ros.leaf(plane)
        if a is None or a in down:
            return None
        need.append(a)
        leaves.add(a[0])
    if len(leaves) > 1:
        # Traffic crosses the spine: each leaf needs an up link to it.
        for leaf in sorted(leaves):
            up = [lk for lk in sorted(state.links, key=lambda lk: lk.name)
                  if lk.joins(leaf, spine)
                  and (lk.a_switch, lk.a_port) not in down
                  and (lk.b_switch, lk.b_port) not in down]
            if not up:
                return None
            need += [(up[0].a_switch, up[0].a_port),
                     (up[0].b_switch, up[0].b_port)]
    return need


def usable(state: FabricState, d: FabricDcm, path: Path,
           down: Set[Endpoint]) -> bool:
    return path_endpoints(state, d, path, down) is not None


def _up_since(endpoints: Iterable[Endpoint],
              up_since: Dict[Endpoint, int]) -> int:
    return max((up_since.get(e, 0) for e in endpoints), default=0)


def plan(state: FabricState, current: Dict[str, Assignment],
         down: Set[Endpoint], up_since: Dict[Endpoint, int], now: int,
         epoch: int = 0, generation: int = 0
         ) -> Tuple[Dict[str, Assignment], List[str]]:
    """The assignment of every DCM of 'state' (by name) and what moved
    and why.  'current': the assignments in force; 'down': ports known to
    be down; 'up_since': when (ms) each port last came up (absent: long
    ago); 'now' in ms.  A DCM without any usable path keeps its assignment
    (or, if new, gets none) and is reported."""
    order = path_order(state)
    index = {p: i for i, p in enumerate(order)}
    hold_ms = state.hold_down * 1000
    # What a path needs depends on the DCM's host only: once per host and
    # path, not per DCM (thousands of DCMs share a few hosts).
    known: Dict[Tuple[str, Path], Optional[List[Endpoint]]] = {}

    def endpoints(d: FabricDcm, path: Path) -> Optional[List[Endpoint]]:
        k = (d.host, path)
        if k not in known:
            known[k] = path_endpoints(state, d, path, down)
        return known[k]

    # Whether the path exists for the DCM at all (every port up).
    exists: Dict[Tuple[str, Path], bool] = {}

    def structural(d: FabricDcm, path: Path) -> bool:
        k = (d.host, path)
        if k not in exists:
            exists[k] = path_endpoints(state, d, path, set()) is not None
        return exists[k]

    out: Dict[str, Assignment] = {}
    notes: List[str] = []
    # (DCM, why, home to remember, assignment in force)
    pending: List[Tuple[FabricDcm, str, Optional[Path],
                        Optional[Assignment]]] = []
    for d in sorted(state.dcms, key=lambda d: d.name):
        a = current.get(d.name)
        if a is None:
            pending.append((d, "new", None, None))
            continue
        home = a.home if a.home in index else None
        if home is not None and home != a.path:
            need = endpoints(d, home)
            if (need is not None and now - a.moved_at >= hold_ms
                    and now - _up_since(need, up_since) >= hold_ms):
                out[d.name] = Assignment(
                    d.name, home[0], home[1], epoch, generation, None, now,
                    "back home after the hold-down (%d s)"
                    % state.hold_down)
                notes.append("%s: plane %d spine %s -> plane %d spine %s "
                             "(home again)" % (d.name, a.plane, a.spine,
                                               home[0], home[1]))
                continue
        if a.path in index and endpoints(d, a.path) is not None:
            out[d.name] = replace(a, home=None if home == a.path else home)
            continue
        if a.path in index:
            pending.append((d, "path down", home or a.path, a))
        else:
            pending.append((d, "path removed", home, a))
    load: Dict[Path, int] = {p: 0 for p in order}
    # Where the DCMs belong (their home, else where they are): a new DCM
    # belongs where Algorithm 6.1 would put it with every port up.
    belong: Dict[Path, int] = {p: 0 for p in order}
    for a in out.values():
        load[a.path] = load.get(a.path, 0) + 1
        b = a.home or a.path
        belong[b] = belong.get(b, 0) + 1
    for d, why, home, old in pending:
        if home is not None:
            belong[home] += 1
    for d, why, home, old in pending:
        cands = [p for p in order if endpoints(d, p) is not None]
        if old is None:
            # A new DCM whose own path is down now (a fabric planned while
            # a link is still coming up) takes another one and goes home
            # after the hold-down, as a moved DCM does: else the paths up
            # late would stay empty.
            ideal = [p for p in order if structural(d, p)]
            if ideal:
                home = min(ideal, key=lambda p: (belong[p], index[p]))
                belong[home] += 1
        if not cands:
            if old is not None:
                out[d.name] = old
                notes.append("%s: no usable path; stays on plane %d spine "
                             "%s" % (d.name, old.plane, old.spine))
            else:
                notes.append("%s: no usable path; not assigned" % d.name)
            continue
        if home in cands and old is None:
            best = home
        else:
            best = min(cands, key=lambda p: (load[p], index[p]))
        load[best] += 1
        if old is not None and home is None:
            belong[best] += 1
        out[d.name] = Assignment(d.name, best[0], best[1], epoch, generation,
                                 home if home != best else None, now,
                                 "first assignment" if old is None
                                 else why)
        if old is not None:
            notes.append("%s: plane %d spine %s -> plane %d spine %s (%s)"
                         % (d.name, old.plane, old.spine, best[0], best[1],
                            why))
    return out, notes


def next_return(state: FabricState, current: Dict[str, Assignment],
                down: Set[Endpoint], up_since: Dict[Endpoint, int]
                ) -> Optional[int]:
    """When (ms) plan() would first move a DCM of 'current' back home
    given the same inputs (the same ports down, up since the same
    times): the earliest end of a hold-down over the DCMs away from a
    home path that is usable now.  None if no DCM can go home without a
    change of its inputs (a port that comes up, or goes down, changes
    them: the planner plans again then anyway).  A planner that looked
    again only then, instead of at every tick, would plan the same."""
    order = path_order(state)
    hold_ms = state.hold_down * 1000
    dcms = {d.name: d for d in state.dcms}
    known: Dict[Tuple[str, Path], Optional[List[Endpoint]]] = {}
    first: Optional[int] = None
    for a in current.values():
        d = dcms.get(a.dcm)
        if d is None or a.home is None or a.home == a.path:
            continue
        if a.home not in order:
            continue
        k = (d.host, a.home)
        if k not in known:
            known[k] = path_endpoints(state, d, a.home, down)
        need = known[k]
        if need is None:
            continue
        t = max(a.moved_at, _up_since(need, up_since)) + hold_ms
        first = t if first is None else min(first, t)
    return first


def changed(old: Dict[str, Assignment], new: Dict[str, Assignment]
            ) -> Tuple[List[Assignment], List[str]]:
    """What a planner writes: the assignments that differ, and the DCMs
    whose assignment goes."""
    upd = [a for n, a in sorted(new.items())
           if n not in old or old[n].key() != a.key()]
    gone = sorted(n for n in old if n not in new)
    return upd, gone
