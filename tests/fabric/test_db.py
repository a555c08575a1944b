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

"""Conditional monitoring of the fabric database by the agents
(FabricDb.watch_slice()): every node's slice computed from the rows its
conditions select is the one computed from the whole database, on a
fabric of 2 planes of 2 spines, a ROS leaf and HLT leaves, and after a
DCM is added, removed, moved to another host and after a link fails and
the planner moves the DCMs that crossed it, and after the views
reconnect while they change their conditions; a condition that drops rows
a slice needs is caught; and an agent never computes its slice from
rows selected by a condition the server has not acknowledged yet.
Against a real (1-member) clustered ovsdb-server.

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_db.py
"""

import dataclasses
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from ovs_daqring.bench.fabric_scale.shape import Shape, map_text
from ovs_daqring.cmd import ovs_daqfabric_agent as agent_cmd
from ovs_daqring.daqctl.mapfile import parse_tuple
from ovs_daqring.fabric import agent as fa
from ovs_daqring.fabric import db as fdb
from ovs_daqring.fabric import flows
from ovs_daqring.fabric.db import FabricDb
from ovs_daqring.fabric.fabmap import FabricMapReader, state_digest
from ovs_daqring.fabric.model import FabricState
from ovs_daqring.fabric.planner import switch_ports
from ovs_daqring.fabric.plannerd import Planner
from ovs_daqring.fabric.slice import Slice, monitored, slices

from fabric_helpers import Cluster, report_up, wait_for
from fabric_helpers import one_member_cluster  # noqa: F401

pytestmark = [pytest.mark.every_base, pytest.mark.ovsdb_only]

SHAPE = Shape(planes=2, spines=2, ros_leaves=1, leaves=3, hosts=2, ros=2,
              dcms=24, ring_size=64)
WAIT_S = 30.0


class Fabric:
    """The whole database through a full view, a planner, and one
    narrowed view (watch_slice()) per switch; every switch's ports up in
    a stand-in report (no agents run here)."""

    def __init__(self, cluster: Cluster) -> None:
        self.remotes = cluster.remotes()
        report_up(self.remotes, switch_ports(
            FabricMapReader("m").parse(map_text(SHAPE))))
        self.full = FabricDb(self.remotes, WAIT_S)
        self.planner = Planner(self.remotes, "test-planner", WAIT_S)
        self.views: Dict[str, FabricDb] = {}

    def close(self) -> None:
        for v in self.views.values():
            v.close()
        self.planner.close()
        self.full.close()

    def apply(self, state: FabricState) -> None:
        self.full.apply(state, state_digest(state), "test", "test")
        self.plan()

    def plan(self) -> None:
        """Once the planner holds what the full view does (the
        generation, the links down): until it has nothing to change."""
        self.full.run()
        gen, down = self.full.generation(), self.full.down_ports()
        pdb = self.planner.db
        wait_for(lambda: pdb.run() is None and pdb.generation() == gen
                 and pdb.down_ports() == down, "the planner's view", WAIT_S)
        wait_for(lambda: self.planner.step() == "unchanged",
                 "the planner to have planned", WAIT_S)
        planned = {d: a.key() for d, a in pdb.assignments().items()}
        wait_for(lambda: self.full.run() is None
                 and {d: a.key() for d, a in self.full.assignments().items()}
                 == planned, "the plan to reach the full view", WAIT_S)

    def watch(self) -> None:
        for s in self.full.state().switches:
            v = FabricDb(self.remotes, WAIT_S, leader_only=False, wait=False)
            v.watch_slice(s.name)
            self.views[s.name] = v

    def mismatches(self) -> List[str]:
        """The nodes whose narrowed view is not ready or gives another
        slice than the full view."""
        self.full.run()
        fab = self.full.root()
        want = slices(self.full.state(), self.full.assignments())
        out = []
        for name, v in sorted(self.views.items()):
            v.run()
            if not (v.connected() and v.narrow()):
                out.append("%s: not ready" % name)
                continue
            vfab = v.root()
            if (vfab is None or vfab.planned_generation
                    != fab.planned_generation):
                out.append("%s: generation behind" % name)
                continue
            got = slices(v.state(), v.assignments(), name).get(
                name, Slice(name))
            if flows.slice_json(got) != flows.slice_json(want[name]):
                w = flows.slice_json(want[name])
                g = flows.slice_json(got)
                out.append("%s: %d rings, %d routes instead of %d, %d"
                           % (name, len(g["rings"]), len(g["routes"]),
                              len(w["rings"]), len(w["routes"])))
        return out

    def check(self, timeout: float = WAIT_S) -> None:
        """Every node's narrowed slice is the full view's (waits for the
        views to catch up)."""
        deadline = time.monotonic() + timeout
        while True:
            bad = self.mismatches()
            if not bad:
                break
            if time.monotonic() > deadline:
                raise AssertionError("narrowed slices differ: %s"
                                     % "; ".join(bad))
            time.sleep(0.05)
        # Not vacuous: every DCM has its ring on its host's leaf in every
        # plane, and the views hold less than the whole database.
        st = self.full.state()
        want = slices(st, self.full.assignments())
        planes = {h.name: len(h.attachments) for h in st.hosts}
        assert (sum(len(s.rings) for s in want.values())
                == sum(planes[d.host] for d in st.dcms) > 0)
        n_dcms = len(self.full.rows("DCM"))
        for name, v in self.views.items():
            held = len(v.rows("DCM"))
            if "-leaf" in name:
                # An HLT leaf: the DCMs of its hosts, no more.
                hosts = {h.name for h in self.full.state().hosts
                         if any(leaf == name
                                for _, leaf, _ in h.attachments)}
                assert held == sum(1 for d in self.full.state().dcms
                                   if d.host in hosts) < n_dcms, name


def _link_of(state: FabricState, leaf: str, port: str) -> Any:
    return next(lk for lk in sorted(state.links, key=lambda lk: lk.name)
                if lk.port_of(leaf) == port
                and leaf in (lk.a_switch, lk.b_switch))


def _link_down(f: Fabric, lk: Any) -> None:
    """Both ends of link 'lk' reported down, as their agents would."""
    ends = [(lk.a_switch, lk.a_port), (lk.b_switch, lk.b_port)]

    def build(txn: Any) -> None:
        rows = {r.name: r for r in f.full.rows("Node")}
        for sw, port in ends:
            r = rows[sw]
            links = dict(r.links)
            links[port] = "down"
            r.links = links
        return None

    status, _ = f.full.commit(build, "test: link %s down" % lk.name)
    assert status == fdb.Txn.SUCCESS, status


def test_narrowed_slices_are_the_full_views(cluster: Cluster) -> None:
    state = FabricMapReader("m").parse(map_text(SHAPE))
    f = Fabric(cluster)
    try:
        f.apply(state)
        f.watch()
        f.check()

        # A DCM added, one removed, one moved to a host on another leaf.
        dcms = list(state.dcms)
        new = dataclasses.replace(
            dcms[0], dcm=dataclasses.replace(
                dcms[0].dcm, name="dcm-new", ring="dq-new",
                tuples=(parse_tuple("*:*->10.1.1.1:9999"),),
                ip=None))
        moved = dcms[2]
        assert moved.host != "hlt3-2"
        dcms = ([d for d in dcms if d.name not in ("dcm0005", moved.name)]
                + [new, dataclasses.replace(moved, host="hlt3-2")])
        state = dataclasses.replace(state, dcms=dcms)
        f.apply(state)
        f.check()

        # A link fails: the planner moves the DCMs that crossed it to
        # the other spine (the spines' and the leaf's slices change).
        before = f.full.assignments()
        _link_down(f, _link_of(state, "p0-leaf1", "up1"))
        f.plan()
        after = f.full.assignments()
        assert any(before[d].spine != a.spine for d, a in after.items())
        f.check()

        # The views reconnect while they change their conditions (a DCM
        # moved to another leaf's host: the leaves' DCM rows and their
        # conditions on Assignment change): they monitor by the
        # conditions the server had acknowledged, then change them again.
        d = next(d for d in state.dcms if d.host == "hlt1-1")
        state = dataclasses.replace(state, dcms=[
            dataclasses.replace(d, host="hlt2-2") if d is x else x
            for x in state.dcms])
        f.apply(state)
        for v in f.views.values():
            v.run()
            v.narrow()
            v.run()
            v.idl.force_reconnect()
        f.check()
    finally:
        f.close()


def test_too_narrow_condition_is_caught(cluster: Cluster,
                                        monkeypatch: Any) -> None:
    """The check above fails if the conditions drop rows a slice needs:
    here every assignment of a ROS leaf's plane (its routes towards the
    plane's DCMs)."""
    def too_narrow(node: str, hosts: Any, dcms: Any,
                   assigned: Any) -> Dict[str, List[Any]]:
        got = monitored(node, hosts, dcms, assigned)
        got["Assignment"] = [c for c in got["Assignment"]
                             if not isinstance(c, list) or c[0] != "plane"]
        return got

    monkeypatch.setattr(fdb, "monitored", too_narrow)
    state = FabricMapReader("m").parse(map_text(SHAPE))
    f = Fabric(cluster)
    try:
        f.apply(state)
        f.watch()
        with pytest.raises(AssertionError,
                           match=r"p0-ros1: 0 rings, \d+ routes instead"):
            f.check(5)
    finally:
        f.close()


def test_agent_waits_for_its_conditions(cluster: Cluster,
                                        tmp_path: Path) -> None:
    """A DCM added on a host of an HLT leaf reaches the leaf's agent
    before its assignment (which the agent's new condition on Assignment
    selects): the agent does not compute its slice from that view (a
    generation with the DCM's ring but without its way back) but waits
    for the server to acknowledge the condition, then has both."""
    node = "p0-leaf1"
    state = FabricMapReader("m").parse(map_text(SHAPE))
    f = Fabric(cluster)
    d = str(tmp_path)
    p = agent_cmd.build_parser()
    # No switch behind --ovsdb: its applies fail, which does not matter
    # here (what it wants is its slice).
    args = p.parse_args(["--node", node, "--db", f.remotes,
                         "--interval", "10",
                         "--state-file", d + "/state.json",
                         "--ovsdb", "unix:%s/none.sock" % d])
    agent_cmd.check_args(p, args)
    agent = fa.Agent(args)
    # Its reports would say its ports unknown (it has no switch), and the
    # planner would put no DCM of its hosts on plane 0: its stand-in
    # report says them up.
    agent.report = lambda: None                 # type: ignore
    try:
        f.apply(state)
        gen = int(f.full.root().planned_generation)

        def caught_up(g: int) -> bool:
            agent.run()
            return (agent.want is not None
                    and agent.want["generation"] == g)

        wait_for(lambda: caught_up(gen), "the agent's slice", WAIT_S)
        rings = {r["name"] for r in agent.want["slice"]["rings"]}

        # A DCM on hlt1-1 (cabled to p0-leaf1), planned on plane 0.
        host = next(h for h in state.hosts if h.name == "hlt1-1")
        new = dataclasses.replace(
            state.dcms[0], host=host.name, dcm=dataclasses.replace(
                state.dcms[0].dcm, name="dcm-new", ring="dq-new",
                tuples=(parse_tuple("*:*->10.1.1.1:9999"),),
                ip=None))
        state = dataclasses.replace(state, dcms=state.dcms + [new])
        f.apply(state)
        assert f.full.assignments()["dcm-new"].plane == 0
        gen2 = int(f.full.root().planned_generation)
        assert gen2 > gen
        # The agent's IDL alone (not a round of the agent, which would
        # change its conditions): the DCM and the new generation arrive,
        # its assignment does not.
        idl = agent.fabric
        wait_for(lambda: idl.run() is None
                 and any(r.name == "dcm-new" for r in idl.rows("DCM"))
                 and int(idl.root().planned_generation) == gen2,
                 "the new DCM to reach the agent", WAIT_S)
        assert "dcm-new" not in idl.assignments()
        partial = slices(idl.state(), idl.assignments(), node)[node]
        # Its ring and its way back need no assignment (rings are on
        # every plane, routes are standing); which spine the way back
        # takes first does.
        assert "dq-new" in {r.ring for r in partial.rings}
        assert "dcm-new" in {r.dcm for r in partial.routes}
        # A round: its condition on Assignment changes (the new DCM's),
        # so it does not compute its slice from this view.
        agent.run()
        assert not idl.narrowed()
        assert agent.want["generation"] == gen, \
            "a slice computed from an unacknowledged condition"
        # Once the server has acknowledged it: the DCM's ring.
        wait_for(lambda: caught_up(gen2), "the agent's new slice", WAIT_S)
        assert ({r["name"] for r in agent.want["slice"]["rings"]}
                == rings | {"dcm-new"})
        assert "dcm-new" in {r["dcm"] for r in agent.want["slice"]["routes"]}
        assert "assignments" in agent.status()["monitored"]
    finally:
        agent.close()
        f.close()
