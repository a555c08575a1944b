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

"""A fabric node's metrics, served by ovs-daqfabric-agent
--metrics-address (Documentation/topics/monitoring.rst): the node's
generations, links and BFD sessions, its last error and, while its agent
is the fabric's planner, the planner's state (DCMs per plane and spine,
away from home, hold-downs pending, epoch).  Read from what the agent
holds already (its fabric database replica, its switch's replica):
a scrape asks nothing of the fabric database, the switch or its PMDs.

FabricCollector.collect() runs on prometheus_client's thread; the agent's
main loop runs the IDLs.  Both take the same lock (AgentLock), so a
scrape never reads a replica halfway through an update."""

import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    Metric)

from ..fabric.db import COMMITTED_AT_KEY
from .rings import MetricDoc

# The generations whose commit time a node remembers (applied later).
COMMITS_KEPT = 64
# The longest error text a label carries (the log has it whole).
ERROR_LABEL_MAX = 200
LINK_STATES = ("up", "down", "unknown")
BFD_STATES = ("admin_down", "down", "init", "up")

NODE = ("node",)
PORT = ("node", "port")

FABRIC_METRICS = [
    MetricDoc("daqfabric_node_generation_applied", "gauge", NODE,
              "The fabric generation whose slice the switch holds (Node "
              "generation); absent until it holds one."),
    MetricDoc("daqfabric_node_generation_failed", "gauge", NODE,
              "The generation the switch refused or could not be brought "
              "to (Node failed_generation); absent while none failed."),
    MetricDoc("daqfabric_fabric_generation", "gauge", NODE + ("kind",),
              "The fabric database's generations as this node's replica "
              "has them: kind committed (Fabric generation, the last map "
              "applied) and planned (Fabric planned_generation, the last "
              "one the planner planned, which the slices are of).  "
              "planned less daqfabric_node_generation_applied is how far "
              "the node lags."),
    MetricDoc("daqfabric_node_generation_apply_delay_seconds", "gauge",
              NODE, "From the commit of the generation the switch holds "
              "(Fabric external_ids:generation-committed-at, the "
              "applying client's clock) to the moment the switch first "
              "held it (this node's clock), as OVN's nb_cfg_timestamp "
              "and hv_cfg_timestamp; absent if the commit time is not "
              "known (a generation committed before the agent saw it, or "
              "by an older ovs-daqctl)."),
    MetricDoc("daqfabric_node_generation_applied_timestamp_seconds",
              "gauge", NODE,
              "When (Unix time) the switch last took a new slice."),
    MetricDoc("daqfabric_node_applies", "counter", NODE,
              "Slices the switch took (new generations and new plans)."),
    MetricDoc("daqfabric_node_link_state", "gauge", PORT + ("state",),
              "Each fabric port (a link's or a host's) of the switch, as "
              "the agent reports it in its Node row: 1 for its state "
              "(up, down, unknown), 0 for the others.  A port with BFD "
              "on is up only while its session forwards."),
    MetricDoc("daqfabric_node_bfd_state", "gauge", PORT + ("state",),
              "Each BFD session of the switch's link ports (Interface "
              "bfd_status:state): 1 for its state (admin_down, down, "
              "init, up), 0 for the others; no series while BFD is "
              "off."),
    MetricDoc("daqfabric_node_bfd_forwarding", "gauge", PORT,
              "1 while the port's BFD session forwards (bfd_status:"
              "forwarding), else 0."),
    MetricDoc("daqfabric_node_error", "gauge", NODE,
              "1 while the agent has an error (the switch refused the "
              "slice or cannot be reached, its Switch row is bad, ...: "
              "Node error), else 0."),
    MetricDoc("daqfabric_node_error_info", "gauge", NODE + ("error",),
              "1, while the agent has an error, with the error's text "
              "(its first %d characters) as a label." % ERROR_LABEL_MAX),
    MetricDoc("daqfabric_node_fabric_db_up", "gauge", NODE,
              "1 while the agent is connected to the fabric database, "
              "else 0 (it holds its switch to the last slice)."),
    MetricDoc("daqfabric_planner", "gauge", NODE,
              "Only for an agent run with --planner: 1 while it is the "
              "fabric's planner (it holds the planner lock and has taken "
              "over), else 0.  The daqfabric_planner_* series are "
              "served only while it is 1."),
    MetricDoc("daqfabric_planner_epoch", "gauge", (),
              "The planner's epoch (Fabric planner_epoch of its "
              "take-over)."),
    MetricDoc("daqfabric_planner_dcms", "gauge", ("plane", "spine"),
              "DCMs the planner assigned to each plane and spine "
              "(Assignment rows)."),
    MetricDoc("daqfabric_planner_dcms_away_from_home", "gauge", (),
              "DCMs the planner moved away from their home path (a link "
              "or a spine failed); they go back after the hold-down."),
    MetricDoc("daqfabric_planner_hold_downs_pending", "gauge", (),
              "DCMs away from home whose home path is usable again: each "
              "goes back when its hold-down (Fabric hold_down) ends."),
    MetricDoc("daqfabric_planner_dcms_unassigned", "gauge", (),
              "DCMs of the map without an assignment (no usable path)."),
    MetricDoc("daqfabric_planner_away_longest_seconds", "gauge", (),
              "How long the DCM away from home the longest has been away "
              "(since the planner moved it: Assignment moved_at); 0 "
              "while none is away."),
    MetricDoc("daqfabric_planner_hold_down_seconds", "gauge", (),
              "The fabric's hold-down (Fabric hold_down): how long a DCM "
              "stays away after its home path is usable again."),
]
BY_NAME = {m.name: m for m in FABRIC_METRICS}


def _family(name: str) -> Metric:
    m = BY_NAME[name]
    cls = CounterMetricFamily if m.kind == "counter" else GaugeMetricFamily
    return cls(m.name, m.help, labels=list(m.labels))


@dataclass
class _Applied:
    generation: int
    delay: Optional[float]


class AgentLock:
    """A daemon (run(), wait(), close(), exiting) whose rounds hold
    'lock': what the scrapes' thread reads of it under the same lock is
    never halfway through a round.  after_run(), if given, is called at
    the end of each round, the lock held."""

    def __init__(self, daemon: Any, lock: Any,
                 after_run: Any = None) -> None:
        self.daemon = daemon
        self.lock = lock
        self.after_run = after_run

    @property
    def exiting(self) -> bool:
        return bool(self.daemon.exiting)

    def run(self) -> None:
        with self.lock:
            self.daemon.run()
            if self.after_run is not None:
                self.after_run()

    def wait(self, poller: Any) -> None:
        with self.lock:
            self.daemon.wait(poller)

    def close(self) -> None:
        with self.lock:
            self.daemon.close()


class FabricCollector:
    """The node's and (while it plans) the planner's metrics, from the
    agent (fabric/agent.py's Agent).  observe() is called after each of
    the agent's rounds (AgentLock's after_run): it notes the commit times
    of the generations the agent sees, and the delay of each generation
    the switch takes."""

    def __init__(self, agent: Any, lock: Optional[Any] = None) -> None:
        self.agent = agent
        self.lock = lock if lock is not None else threading.Lock()
        # generation -> commit time (s), as the Fabric row said.
        self.commits: Dict[int, float] = {}
        self.applied: Optional[_Applied] = None
        self._held: Optional[Tuple[int, Optional[float]]] = None
        # The planner's hold-downs: (key, away, pending) of the last
        # count (counted again only once its inputs change).
        self._holds: Optional[Tuple[Any, Tuple[int, int, Optional[int]]]] \
            = None

    # ------------------------------------------------------ the agent's side
    def observe(self) -> None:
        a = self.agent
        fab = a.fabric.root() if a.fabric_up() else None
        if fab is not None:
            gen = int(fab.generation)
            if gen not in self.commits:
                ms = dict(fab.external_ids).get(COMMITTED_AT_KEY, "")
                if ms.isdigit():
                    self.commits[gen] = int(ms) / 1000.0
                    if len(self.commits) > COMMITS_KEPT:
                        del self.commits[min(self.commits)]
        gen = a.applied_gen
        held = (gen, a.applied_at)
        if gen is None or held == self._held:
            return
        first = self.applied is None or self.applied.generation != gen
        self._held = held
        if first:
            # The first time the switch holds this generation (a new plan
            # of the same generation is no new commit).
            t = self.commits.get(gen)
            delay = (max(0.0, a.applied_at - t)
                     if t is not None and a.applied_at is not None
                     else None)
            self.applied = _Applied(gen, delay)

    # -------------------------------------------------------------- scrape
    def describe(self) -> List[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            fams = self._node() + self._planner()
        yield from fams

    def _node(self) -> List[Metric]:
        a = self.agent
        node = [a.node]
        out = []
        up = a.fabric_up()
        f = _family("daqfabric_node_fabric_db_up")
        f.add_metric(node, 1 if up else 0)
        out.append(f)
        f = _family("daqfabric_fabric_generation")
        fab = a.fabric.root() if up else None
        if fab is not None:
            f.add_metric(node + ["committed"], int(fab.generation))
            f.add_metric(node + ["planned"], int(fab.planned_generation))
        out.append(f)
        f = _family("daqfabric_node_generation_applied")
        if a.applied_gen is not None:
            f.add_metric(node, a.applied_gen)
        out.append(f)
        f = _family("daqfabric_node_generation_failed")
        if a.failed_gen is not None:
            f.add_metric(node, a.failed_gen)
        out.append(f)
        f = _family("daqfabric_node_generation_apply_delay_seconds")
        if (self.applied is not None and self.applied.delay is not None
                and self.applied.generation == a.applied_gen):
            f.add_metric(node, self.applied.delay)
        out.append(f)
        f = _family("daqfabric_node_generation_applied_timestamp_seconds")
        if a.applied_at is not None:
            f.add_metric(node, a.applied_at)
        out.append(f)
        f = _family("daqfabric_node_applies")
        f.add_metric(node, a.n_applies)
        out.append(f)
        # What its last report said (at once when a link changes): a
        # scrape runs no IDL of the agent's.
        links = dict(a.reported_links or {})
        f = _family("daqfabric_node_link_state")
        for port, state in sorted(links.items()):
            for s in LINK_STATES:
                f.add_metric(node + [port, s], 1 if state == s else 0)
        out.append(f)
        bfd_state = _family("daqfabric_node_bfd_state")
        bfd_fwd = _family("daqfabric_node_bfd_forwarding")
        for port, st in sorted(a.bfd.items()):
            state = st.get("state", "down")
            for s in BFD_STATES:
                bfd_state.add_metric(node + [port, s],
                                     1 if state == s else 0)
            bfd_fwd.add_metric(node + [port],
                               1 if st.get("forwarding") == "true" else 0)
        out += [bfd_state, bfd_fwd]
        err = a.error or a.fabric_note
        f = _family("daqfabric_node_error")
        f.add_metric(node, 1 if err else 0)
        out.append(f)
        f = _family("daqfabric_node_error_info")
        if err:
            f.add_metric(node + [str(err)[:ERROR_LABEL_MAX]], 1)
        out.append(f)
        return out

    def _planner(self) -> List[Metric]:
        a = self.agent
        p = a.planner
        if p is None:
            return []
        f = _family("daqfabric_planner")
        planning = p.epoch is not None and p.db.connected()
        f.add_metric([a.node], 1 if planning else 0)
        if not planning:
            return [f]
        out = [f]
        f = _family("daqfabric_planner_epoch")
        f.add_metric([], p.epoch)
        out.append(f)
        state = p.db.state()
        current = p.db.assignments()
        per: Dict[Tuple[int, str], int] = {}
        for asg in current.values():
            per[asg.path] = per.get(asg.path, 0) + 1
        f = _family("daqfabric_planner_dcms")
        for (plane, spine), n in sorted(per.items()):
            f.add_metric([str(plane), spine], n)
        out.append(f)
        away, pending, moved = self._hold_downs(p, state, current)
        longest = (max(0.0, time.time() - moved / 1000.0)
                   if moved is not None else 0.0)
        for name, v in (("daqfabric_planner_dcms_away_from_home", away),
                        ("daqfabric_planner_hold_downs_pending", pending),
                        ("daqfabric_planner_dcms_unassigned",
                         sum(1 for d in state.dcms
                             if d.name not in current)),
                        ("daqfabric_planner_away_longest_seconds", longest),
                        ("daqfabric_planner_hold_down_seconds",
                         state.hold_down)):
            f = _family(name)
            f.add_metric([], v)
            out.append(f)
        return out

    def _hold_downs(self, p: Any, state: Any, current: Dict[str, Any]
                    ) -> Tuple[int, int, Optional[int]]:
        """DCMs away from home, those of them whose home is usable with
        the ports the planner's last round found down (planner.py's
        usable()), and when (ms) the first of them moved: counted again
        only when the database or those ports changed."""
        from ..fabric.planner import usable
        down: Set[Any] = set(p.down or ())
        key = (p.db.idl.change_seqno, frozenset(down))
        if self._holds is not None and self._holds[0] == key:
            return self._holds[1]
        dcms = {d.name: d for d in state.dcms}
        away = pending = 0
        first: Optional[int] = None
        for asg in current.values():
            if asg.home is None or asg.home == asg.path:
                continue
            away += 1
            first = (asg.moved_at if first is None
                     else min(first, asg.moved_at))
            d = dcms.get(asg.dcm)
            if d is not None and usable(state, d, asg.home, down):
                pending += 1
        self._holds = (key, (away, pending, first))
        return away, pending, first
