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

"""A new generation with the assignments of an older one (no plan yet,
or no planner): fabric/stale.py keeps what the generation can route,
moves a DCM off a spine or link it removed, leaves out the rest, so that
no host steers a DCM into a plane the map removed; a switch's agent that
applies a generation without its plan routes every DCM over switches and
links of that generation (nothing black-holed).

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_stale.py
"""

import dataclasses
from pathlib import Path
from typing import Any, Dict, List

import pytest

from ovs_daqring.cmd import ovs_daqfabric_agent as agent_cmd
from ovs_daqring.fabric import agent as fa
from ovs_daqring.fabric.db import FabricDb
from ovs_daqring.fabric.fabmap import FabricMapReader, state_digest
from ovs_daqring.fabric.hostnet import host_routes
from ovs_daqring.fabric.model import Assignment, FabricState
from ovs_daqring.fabric.planner import switch_ports
from ovs_daqring.fabric.plannerd import Planner
from ovs_daqring.fabric.slice import slices
from ovs_daqring.fabric.stale import current_assignments

from fabric_helpers import TWO_PLANES_FABRIC, Cluster, report_up, wait_for
from fabric_helpers import one_member_cluster  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLE = ROOT / "utilities" / "fabric-map.example.yaml"


def _example(drop: str = "") -> FabricState:
    """The example map (a ROS leaf, an HLT leaf, spine1 and spine2 in
    plane 0, 4 DCMs on hlt1) without the lines that name 'drop'."""
    text = EXAMPLE.read_text()
    if drop:
        text = "\n".join(ln for ln in text.splitlines()
                         if drop not in ln) + "\n"
    return FabricMapReader("m.yaml").parse(text)


def _asg(dcm: str, plane: int, spine: str) -> Assignment:
    return Assignment(dcm, plane, spine, epoch=3, generation=1,
                      home=(0, "spine9"), moved_at=5, reason="test")


def black_holes(state: FabricState, asg: Dict[str, Assignment]) -> List[str]:
    """Where the slices of 'state' with 'asg' lose a DCM's traffic: a
    ROS leaf without a route towards it, a route port that no link of
    'state' cables, a spine it leads to without a route down."""
    sl = slices(state, asg)
    ends = {}
    for lk in state.links:
        ends[(lk.a_switch, lk.a_port)] = lk.b_switch
        ends[(lk.b_switch, lk.b_port)] = lk.a_switch
    out = []
    for d in state.dcms:
        for r in [r for r in sl["ros-leaf1"].routes if r.dcm == d.name
                  and not r.match.startswith("from ")] or [None]:
            if r is None:
                out.append("%s: no route at ros-leaf1" % d.name)
                continue
            for port in r.ports:
                spine = ends.get(("ros-leaf1", port))
                if spine is None:
                    out.append("%s: ros-leaf1:%s cabled to nothing"
                               % (d.name, port))
                elif not any(x.dcm == d.name for x in sl[spine].routes):
                    out.append("%s: %s has no route down" % (d.name, spine))
    return out


def test_current_assignments_of_a_new_generation() -> None:
    old = {"dcm1": _asg("dcm1", 0, "spine2"),
           "dcm2": _asg("dcm2", 0, "spine1"),
           "gone": _asg("gone", 0, "spine1")}
    # spine2 removed: dcm1 moves to spine1, its other columns kept; dcm2
    # is as it was (the same object); a DCM not in the map is left out.
    st = _example(drop="spine2")
    got = current_assignments(st, old)
    assert sorted(got) == ["dcm1", "dcm2"]
    assert got["dcm1"] == dataclasses.replace(old["dcm1"], spine="spine1")
    assert got["dcm2"] is old["dcm2"]
    assert black_holes(st, got) == []
    # The HLT leaf's link to spine2 removed, or the ROS leaf's: spine2
    # can carry dcm1 no more (down to it, or up from the ROS hosts).  (A
    # map is refused without them; the database's rows are checked one
    # by one.)
    for link in ("hlt-leaf1:up2", "ros-leaf1:up2"):
        st = _example()
        st = dataclasses.replace(st, links=[
            lk for lk in st.links
            if "%s:%s" % (lk.a_switch, lk.a_port) != link])
        got = current_assignments(st, old)
        assert got["dcm1"].spine == "spine1", link
        assert black_holes(st, got) == [], link
    # Nothing removed: the assignments as they are.
    st = _example()
    got = current_assignments(st, old)
    assert got["dcm1"] is old["dcm1"] and got["dcm2"] is old["dcm2"]
    # A plane its host is not cabled to, or without any spine linked to
    # its leaf: left out (unassigned until the plan comes).
    assert current_assignments(st, {"dcm1": _asg("dcm1", 1, "spine1")}) == {}
    st = dataclasses.replace(st, links=[lk for lk in st.links
                                        if lk.a_switch != "hlt-leaf1"])
    assert current_assignments(st, old) == {}


def test_hosts_steer_no_dcm_into_a_plane_the_map_removed() -> None:
    """Plane 1 removed from a fabric of two: a DCM still assigned to it
    (no plan yet) would be steered by the hosts into their plane-1
    devices, which lead nowhere now; with current_assignments() it is
    not steered (the main table's routes stand) until the plan comes."""
    two = FabricMapReader("m.yaml").parse(
        TWO_PLANES_FABRIC + "dcms:\n  - {name: d0, host: hlt1, tuples: "
        "[\"*:*->10.1.0.1:9000\"]}\n")
    one = dataclasses.replace(
        two, switches=[s for s in two.switches if s.plane == 0],
        links=[lk for lk in two.links if lk.a_switch.endswith("1")],
        hosts=[dataclasses.replace(h, attachments=tuple(
            a for a in h.attachments if a[0] == 0)) for h in two.hosts])
    old = {"d0": _asg("d0", 1, "spine3")}
    devs = {0: "p0", 1: "p1"}
    for host in ("ros1", "hlt1"):
        raw = host_routes(one, old, host, devs)
        assert raw is not None and raw.planes == {"d0": 1}, host
        now = host_routes(one, current_assignments(one, old), host, devs)
        assert now is not None and now.planes == {}, host
    # In the fabric of two planes, it is steered to plane 1.
    assert current_assignments(two, old) == old


@pytest.mark.every_base
def test_agent_applies_a_generation_without_its_plan_routed(
        cluster: Cluster, tmp_path: Path) -> None:
    """The planner planned the example (DCMs on spine1 and spine2), then
    plans no more; a map without spine2 is applied.  The ROS leaf's
    agent, once it stopped waiting for the plan (PLAN_WAIT_S), routes
    every DCM, and only over links the new map has (the standing routes
    of fabric/slice.py: before them, the DCMs of spine2 had no route)."""
    remotes = cluster.remotes()
    full = _example()
    report_up(remotes, switch_ports(full))
    db = FabricDb(remotes, 30)
    planner = Planner(remotes, "test-planner", 30)
    try:
        db.apply(full, state_digest(full), "test", "example")
        wait_for(lambda: planner.step() == "unchanged", "the plan")
        db.run_until(lambda: int(db.root().planned_generation) == 1
                     and len(db.assignments()) == 4, "the plan")
        spines = {a.spine for a in db.assignments().values()}
        assert spines == {"spine1", "spine2"}, spines
        new = _example(drop="spine2")
        assert db.apply(new, state_digest(new), "test", "no spine2") == 2
    finally:
        planner.close()
        db.close()
    d = str(tmp_path)
    p = agent_cmd.build_parser()
    # No switch behind --ovsdb: its applies fail, which does not matter
    # here (what it wants is its slice).
    args = p.parse_args(["--node", "ros-leaf1", "--db", remotes,
                         "--interval", "10",
                         "--state-file", d + "/state.json",
                         "--ovsdb", "unix:%s/none.sock" % d])
    agent_cmd.check_args(p, args)
    agent = fa.Agent(args)
    agent.report = lambda: None                 # type: ignore
    try:
        def routed() -> Any:
            agent.run()
            w = agent.want
            return (w is not None and w["ports"] == ["h1", "h2", "up1"]
                    and w["slice"]["routes"])

        wait_for(routed, "ros-leaf1's slice of generation 2", 60)
        routes = agent.want["slice"]["routes"]
        assert int(agent.fabric.root().planned_generation) == 1
    finally:
        agent.close()
    to_dcm = [r for r in routes if r["dcm"]]
    assert sorted(r["dcm"] for r in to_dcm) == [
        "dcm1", "dcm2", "dcm3", "dcm4"], routes
    for r in to_dcm:
        assert [r["port"]] + r["backups"] == ["up1"], r
