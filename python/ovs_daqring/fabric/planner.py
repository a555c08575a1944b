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
assignments, the ports that may not carry a path and the time: the same
inputs give the same plan, on any planner.  The planner's role that runs
them (the lock, the epoch, the rounds that write the plan, which ports
its fresh reports say are up) is fabric/plannerd.py.

- Usable ports: a port carries a DCM's path only while a fresh report of
  its switch says it is up (unusable_ports()); down, unknown, left out of
  the report, or of a switch without a fresh report, it does not.
- A path's score (path_reach()): the ROS hosts whose traffic reaches the
  DCM on it.  One ROS host's port down in a plane costs that plane's
  paths that host, not every path of the plane.
- First assignment (thesis Algorithm 6.1): DCMs in name order go round-
  robin over the paths, planes first (plane 0 spine 0, plane 1 spine 0,
  ..., plane 0 spine 1, ...).  It is the least-loaded rule with ties
  broken by that order, so DCMs added later go where the fewest are.
- A failure (Algorithm 6.2, §6.2.4): only the DCMs whose path now reaches
  fewer ROS hosts than the best path of their host move, each to the
  least-loaded of the best paths; they remember the path they left
  (their home).
- A return: a moved DCM goes back home once its home path reaches as
  many ROS hosts as the best path, its ports have been up for the
  hold-down and it has stayed where it is for the hold-down; a path that
  fails again within the hold-down restarts it, so nothing flaps.
"""

from dataclasses import replace
from typing import Dict, Iterable, List, Optional, Set, Tuple

from .model import Assignment, FabricDcm, FabricLink, FabricState, Path

# A switch port: (switch, port).
Endpoint = Tuple[str, str]
# What a path gives a DCM (path_reach()): how many ROS hosts reach it
# there, and the switch ports that takes.
Reach = Tuple[int, List[Endpoint]]


def switch_ports(state: FabricState) -> Dict[str, Set[str]]:
    """Each switch's fabric ports: its ends of the links and the ports
    its hosts are cabled to (what its agent reports, what paths need)."""
    out: Dict[str, Set[str]] = {s.name: set() for s in state.switches}
    for lk in state.links:
        out.setdefault(lk.a_switch, set()).add(lk.a_port)
        out.setdefault(lk.b_switch, set()).add(lk.b_port)
    for h in state.hosts:
        for _, leaf, port in h.attachments:
            out.setdefault(leaf, set()).add(port)
    return out


def unusable_ports(state: FabricState,
                   reports: Dict[str, Dict[str, str]]) -> Set[Endpoint]:
    """The fabric ports that may not carry a DCM's path: all but those
    that a fresh report says are up.  'reports': per switch, the link
    states of its fresh report (a switch without one is not in it: all
    its ports are unknown).  A port reported down or unknown, or left
    out of its switch's report, is not usable."""
    return {(sw, p) for sw, ports in switch_ports(state).items()
            for p in ports if reports.get(sw, {}).get(p) != "up"}


def unheard_ports(state: FabricState,
                  reports: Dict[str, Dict[str, str]]) -> Dict[str, List[str]]:
    """Per switch with a fresh report, the fabric ports that report does
    not mention (its agent has not read the generation that cabled
    them yet); switches that mention all of theirs are left out."""
    out = {}
    for sw, ports in switch_ports(state).items():
        if sw in reports:
            missing = sorted(ports - set(reports[sw]))
            if missing:
                out[sw] = missing
    return out


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


def path_reach(state: FabricState, d: FabricDcm, path: Path,
               down: Set[Endpoint]) -> Optional[Reach]:
    """How many ROS hosts reach DCM 'd' on 'path', and the switch ports
    that takes (the DCM host's attachment, those ROS hosts' and, where
    traffic crosses the spine, a link up to the spine from each leaf
    involved); None if the path reaches the DCM from no ROS host: not in
    the fabric, the DCM host's port not usable, no ROS host reached.  A
    ROS host reaches it when its port in the plane is usable and, on
    another leaf, both leaves have a link to the spine whose two ends
    are.  ('down': the ports that are not usable.)"""
    plane, spine = path
    sw = state.switch(spine)
    host = state.host(d.host)
    if sw is None or sw.role != "spine" or sw.plane != plane or host is None:
        return None
    att = host.leaf(plane)
    if att is None or att in down:
        return None
    uplinks: Dict[str, Optional[FabricLink]] = {}

    def uplink(leaf: str) -> Optional[FabricLink]:
        if leaf not in uplinks:
            uplinks[leaf] = next(
                (lk for lk in sorted(state.links, key=lambda lk: lk.name)
                 if lk.joins(leaf, spine)
                 and (lk.a_switch, lk.a_port) not in down
                 and (lk.b_switch, lk.b_port) not in down), None)
        return uplinks[leaf]

    need: List[Endpoint] = [att]
    crossing = set()
    ros_hosts = sorted((h for h in state.hosts if h.role == "ros"),
                       key=lambda h: h.name)
    reached = 0
    for ros in ros_hosts:
        a = ros.leaf(plane)
        if a is None or a in down:
            continue
        if a[0] != att[0]:
            # Traffic crosses the spine.
            if uplink(a[0]) is None or uplink(att[0]) is None:
                continue
            crossing.add(a[0])
        need.append(a)
        reached += 1
    if ros_hosts and not reached:
        return None
    if crossing:
        for leaf in sorted(crossing | {att[0]}):
            lk = uplink(leaf)
            assert lk is not None
            need += [(lk.a_switch, lk.a_port), (lk.b_switch, lk.b_port)]
    return reached, need


def path_endpoints(state: FabricState, d: FabricDcm, path: Path,
                   down: Set[Endpoint]) -> Optional[List[Endpoint]]:
    """The switch ports the DCM's traffic needs on 'path' (path_reach()),
    or None if it reaches the DCM from no ROS host."""
    got = path_reach(state, d, path, down)
    return None if got is None else got[1]


def usable(state: FabricState, d: FabricDcm, path: Path,
           down: Set[Endpoint]) -> bool:
    return path_reach(state, d, path, down) is not None


def _up_since(endpoints: Iterable[Endpoint],
              up_since: Dict[Endpoint, int]) -> int:
    return max((up_since.get(e, 0) for e in endpoints), default=0)


class _Scores:
    """path_reach() of each host's paths, computed once per host and path
    (thousands of DCMs share a few hosts), and the best score of each
    host: how many ROS hosts its best path reaches (-1: none reaches
    any)."""

    def __init__(self, state: FabricState, order: List[Path],
                 down: Set[Endpoint]) -> None:
        self.state = state
        self.order = order
        self.down = down
        self.known: Dict[Tuple[str, Path], Optional[Reach]] = {}
        self.best_of: Dict[str, int] = {}

    def reach(self, d: FabricDcm, path: Path) -> Optional[Reach]:
        k = (d.host, path)
        if k not in self.known:
            self.known[k] = path_reach(self.state, d, path, self.down)
        return self.known[k]

    def score(self, d: FabricDcm, path: Path) -> int:
        got = self.reach(d, path)
        return -1 if got is None else got[0]

    def best(self, d: FabricDcm) -> int:
        if d.host not in self.best_of:
            self.best_of[d.host] = max(
                (self.score(d, p) for p in self.order), default=-1)
        return self.best_of[d.host]

    def good(self, d: FabricDcm, path: Path) -> bool:
        """Whether 'path' is one of the best for DCM 'd' (and usable)."""
        got = self.reach(d, path)
        return got is not None and got[0] == self.best(d)


def plan(state: FabricState, current: Dict[str, Assignment],
         down: Set[Endpoint], up_since: Dict[Endpoint, int], now: int,
         epoch: int = 0, generation: int = 0
         ) -> Tuple[Dict[str, Assignment], List[str]]:
    """The assignment of every DCM of 'state' (by name) and what moved
    and why.  'current': the assignments in force; 'down': the ports that
    may not carry a path (unusable_ports()); 'up_since': when (ms) each
    port last came up (absent: long ago); 'now' in ms.  A DCM without any
    usable path keeps its assignment (or, if new, gets none) and is
    reported."""
    order = path_order(state)
    index = {p: i for i, p in enumerate(order)}
    hold_ms = state.hold_down * 1000
    n_ros = sum(1 for h in state.hosts if h.role == "ros")
    scores = _Scores(state, order, down)
    # Where the DCM belongs with every port up (Algorithm 6.1's paths).
    ideal = _Scores(state, order, set())

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
        if home is not None and home != a.path and scores.good(d, home):
            need = scores.reach(d, home)[1]     # type: ignore[index]
            if (now - a.moved_at >= hold_ms
                    and now - _up_since(need, up_since) >= hold_ms):
                out[d.name] = Assignment(
                    d.name, home[0], home[1], epoch, generation, None, now,
                    "back home after the hold-down (%d s)"
                    % state.hold_down)
                notes.append("%s: plane %d spine %s -> plane %d spine %s "
                             "(home again)" % (d.name, a.plane, a.spine,
                                               home[0], home[1]))
                continue
        if a.path in index and scores.good(d, a.path):
            out[d.name] = replace(a, home=None if home == a.path else home)
            continue
        if a.path in index:
            # Its path reaches no ROS host now, or fewer than another.
            got = scores.reach(d, a.path)
            why = ("path down" if got is None else "reaches %d of %d ROS "
                   "hosts" % (got[0], n_ros))
            pending.append((d, why, home or a.path, a))
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
        cands = [p for p in order if scores.good(d, p)]
        if old is None:
            # A new DCM whose own path is down now (a fabric planned while
            # a link is still coming up) takes another one and goes home
            # after the hold-down, as a moved DCM does: else the paths up
            # late would stay empty.
            homes = [p for p in order if ideal.good(d, p)]
            if homes:
                home = min(homes, key=lambda p: (belong[p], index[p]))
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
    home path that is one of their best now.  None if no DCM can go home
    without a change of its inputs (a port that comes up, or goes down,
    changes them: the planner plans again then anyway).  A planner that
    looked again only then, instead of at every tick, would plan the
    same."""
    order = path_order(state)
    hold_ms = state.hold_down * 1000
    dcms = {d.name: d for d in state.dcms}
    scores = _Scores(state, order, down)
    first: Optional[int] = None
    for a in current.values():
        d = dcms.get(a.dcm)
        if d is None or a.home is None or a.home == a.path:
            continue
        if a.home not in order:
            continue
        if not scores.good(d, a.home):
            continue
        need = scores.reach(d, a.home)[1]       # type: ignore[index]
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
