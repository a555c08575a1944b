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

"""Unit tests of the fabric agent's fast_failover groups as the reconcile
core makes them (daqctl/openflow.py, daqctl/reconcile.py): parsing
ovs-ofctl dump-groups, our group ids, the group mods of a set of
routes, and what a sync asks of the switch again.  Pure: no daemons.
The groups on real switches are tested in
tests/cmd/test_ovs_daqfabric_agent.py.

Run: /usr/bin/python3 -m pytest -q tests/daqctl/test_flowsync.py
"""

from types import SimpleNamespace
from typing import Any, Dict, List, Tuple

import pytest

from ovs_daqring.daqctl.model import DaqctlError, Dcm
from ovs_daqring.daqctl.openflow import (GROUP_PREFIX, failover_group,
                                         group_ids, group_text,
                                         is_our_group, parse_group)
from ovs_daqring.daqctl.flowsync import route_groups
from ovs_daqring.daqctl.reconcile import Reconciler

# ovs-ofctl dump-groups of the same group over OpenFlow 1.3 and 1.5.
DUMP_13 = (" group_id=3670540289,type=ff,bucket=watch_port:2,"
           "actions=output:2,bucket=watch_port:3,actions=output:3")
DUMP_15 = (" group_id=3670540289,type=ff,bucket=bucket_id:0,watch_port:2,"
           "actions=output:2,bucket=bucket_id:1,watch_port:3,"
           "actions=output:3")


def test_parse_group_any_version() -> None:
    want = (3670540289, ("ff", (("2", "output:2"), ("3", "output:3"))))
    assert parse_group(DUMP_13) == want
    assert parse_group(DUMP_15) == want
    assert parse_group("OFPST_GROUP_DESC reply (OF1.5) (xid=0x2):") is None
    assert parse_group(" group_id=1,type=all,bucket=actions=drop") == (
        1, ("all", (("", "drop"),)))


def test_group_text_is_what_dump_groups_gives_back() -> None:
    g = failover_group(["2", "3"])
    text = group_text(3670540289, g)
    assert text == ("group_id=3670540289,type=ff,bucket=watch_port:2,"
                    "actions=output:2,bucket=watch_port:3,actions=output:3")
    assert parse_group(text) == (3670540289, g)


def test_group_ids_are_ours_stable_and_distinct() -> None:
    lists = [("up%d" % i, "up%d" % j) for i in range(40) for j in range(40)
             if i != j]
    ids = group_ids(lists)
    assert len(set(ids.values())) == len(lists)
    assert all(is_our_group(g) for g in ids.values())
    assert not is_our_group(1) and not is_our_group(0xffffff00)
    # A list keeps its id whatever else there is (unless it collided).
    alone = group_ids([("up1", "up2")])
    assert alone[("up1", "up2")] == ids[("up1", "up2")]
    assert alone[("up1", "up2")] & 0xffff0000 == GROUP_PREFIX


Routes = Dict[int, List[Tuple[int, List[str], Tuple[str, ...], str]]]


def routes() -> Routes:
    return {1: [(100, ["ip", "nw_dst=10.1.0.1"], ("up1", "up2"), "")],
            2: [(100, ["ip", "nw_dst=10.1.0.2"], ("up2", "up1"), "")],
            3: [(100, ["ip", "nw_dst=10.1.0.3"], ("up1", "up2"), "")],
            4: [(100, ["ip", "nw_dst=10.1.0.4"], ("down2",), "")]}


OFPORTS = {"up1": 3, "up2": 4, "down2": 5}


def test_route_groups_one_group_per_port_list() -> None:
    ids, lines = route_groups(routes(), OFPORTS, {})
    assert sorted(ids) == [("up1", "up2"), ("up2", "up1")]
    g12, g21 = ids[("up1", "up2")], ids[("up2", "up1")]
    assert sorted(lines) == sorted([
        "group add " + group_text(g12, failover_group(["3", "4"])),
        "group add " + group_text(g21, failover_group(["4", "3"]))])
    assert Reconciler.route_action(("up1", "up2"), OFPORTS, ids) == \
        "group:%d" % g12
    assert Reconciler.route_action(("down2",), OFPORTS, ids) == "output:5"


def test_route_groups_modify_and_delete_only_what_differs() -> None:
    ids, _ = route_groups(routes(), OFPORTS, {})
    g12, g21 = ids[("up1", "up2")], ids[("up2", "up1")]
    stale = GROUP_PREFIX | ((g12 + 1) & 0xffff)
    if stale in (g12, g21):
        stale = GROUP_PREFIX | ((g12 + 2) & 0xffff)
    installed = {g12: failover_group(["3", "4"]),
                 # Its port numbers changed (the port was added again).
                 g21: failover_group(["4", "9"]),
                 # A group no route needs any more.
                 stale: failover_group(["3"])}
    _, lines = route_groups(routes(), OFPORTS, installed)
    assert lines == [
        "group modify " + group_text(g21, failover_group(["4", "3"])),
        "group delete group_id=%d" % stale]
    _, lines = route_groups(routes(), OFPORTS, {
        g12: failover_group(["3", "4"]), g21: failover_group(["4", "3"])})
    assert lines == []


def test_route_groups_leave_out_ports_not_on_the_bridge() -> None:
    """A backup port that is not on the bridge is left out of the group
    (a route left with one port is a plain output); a route whose first
    port is missing has no flows, and so no group."""
    ofports = {"up1": 3, "down2": 5}
    ids, lines = route_groups(routes(), ofports, {})
    assert ids == {} and lines == []
    assert Reconciler.route_action(("up1", "up2"), ofports, ids) == \
        "output:3"
    # Not managed: the ids, no group mods.
    ids, lines = route_groups(routes(), OFPORTS, None)
    assert len(ids) == 2 and lines == []


class FakeSwitch:
    """What Reconciler.sync() asks of a switch: its flows (a dump
    starts empty, then holds what the bundles added), its groups and its
    ports' no-flood, each ask counted."""

    def __init__(self) -> None:
        self.asked = {"flows": 0, "groups": 0, "no_flood": 0}
        self.bundles: List[List[str]] = []
        self.flood = {"dcm0": True, "dcm1": True}      # floodable
        self.fail = False

    def flows(self, ours: bool = True) -> List[Any]:
        self.asked["flows"] += 1
        return []

    def installed(self, flows: Any = None) -> Dict[int, Any]:
        return {}

    def groups(self) -> Dict[int, Any]:
        self.asked["groups"] += 1
        return {}

    def no_flood(self) -> Dict[str, bool]:
        self.asked["no_flood"] += 1
        return {n: not f for n, f in self.flood.items()}

    def set_no_flood_all(self, ports: List[str]) -> None:
        for p in ports:
            self.flood[p] = False

    def bundle(self, lines: List[str]) -> None:
        if self.fail:
            raise DaqctlError("bundle failed")
        self.bundles.append(lines)


def test_sync_asks_again_only_what_it_cannot_vouch_for() -> None:
    """sync() keeps the daqrings it found or set no-flood and the groups
    and flows its bundle left: a change of routes only, on rings already
    checked, asks the switch nothing and changes only the routes that
    changed; a new ring, forget() and a failed bundle make it ask
    again."""
    sw = FakeSwitch()
    ports = [SimpleNamespace(name=n, interfaces=[SimpleNamespace(ofport=o)])
             for n, o in dict(OFPORTS, h1=1, dcm0=6, dcm1=7).items()]
    dcms = [Dcm("dcm0", "dcm0", "h1", ip="10.1.0.1")]
    rec = Reconciler.__new__(Reconciler)
    rec.spec = SimpleNamespace(bridge="br0", label=lambda: "sw")
    rec.db = SimpleNamespace(catch_up=lambda: 1, next_cfg=lambda: 1,
                             root=lambda: SimpleNamespace(cur_cfg=1),
                             bridge=lambda _: SimpleNamespace(ports=ports))
    rec.of = sw
    rec.current = lambda: list(dcms)
    rec.conflicts = lambda dcms, dumped=None: []
    rec.routes = routes()
    rec.manage_groups = True
    rec.known_flood = rec.known_groups = None
    rec.known_flows = rec.known_theirs = None
    n, _, _, fixed = rec.sync()
    assert sw.asked == {"flows": 1, "groups": 1, "no_flood": 1}
    assert fixed == ["dcm0"] and n == 5
    assert sum(ln.startswith("group add") for ln in sw.bundles[-1]) == 2
    # The flows as the bundle left them: the DCM's and 4 routes' (the
    # switch had no other flow).
    assert sorted(rec.known_flows) == sorted(
        [dcms[0].cookie()] + list(routes()))
    assert rec.expected_flow_count() == sum(
        len(v) for v in rec.known_flows.values())
    # Routes only: no dump-flows, no show, no dump-groups; only the new
    # route's flows are added.
    rec.routes = routes()
    rec.routes[5] = [(100, ["ip", "nw_dst=10.1.0.5"], ("up2", "up1"), "")]
    assert rec.sync()[0] == 1
    assert sw.asked == {"flows": 1, "groups": 1, "no_flood": 1}
    assert sw.bundles[-1] == ["add cookie=0x5,priority=100,ip,"
                              "nw_dst=10.1.0.5,actions=group:%d"
                              % group_ids([("up2", "up1")])[("up2", "up1")]]
    # A route gone: its cookie's flows are deleted, nothing else.
    del rec.routes[5]
    assert rec.sync()[:3] == (1, 1, 0)
    assert sw.bundles[-1] == ["delete cookie=0x5/-1"]
    # Nothing changed: no bundle, nothing asked.
    n_bundles = len(sw.bundles)
    assert rec.sync()[0] == 0 and len(sw.bundles) == n_bundles
    assert sw.asked == {"flows": 1, "groups": 1, "no_flood": 1}
    # The flows alone forgotten (someone else changed some): a dump.
    rec.forget_flows()
    assert rec.expected_flow_count() is None
    rec.sync()
    assert sw.asked == {"flows": 2, "groups": 1, "no_flood": 1}
    # A ring not checked yet: show.
    dcms.append(Dcm("dcm1", "dcm1", "h1", ip="10.1.0.2"))
    assert rec.sync()[3] == ["dcm1"]
    assert sw.asked == {"flows": 2, "groups": 1, "no_flood": 2}
    # The caller cannot vouch for the switch: all three.
    rec.forget()
    rec.sync()
    assert sw.asked == {"flows": 3, "groups": 2, "no_flood": 3}
    # A bundle that failed leaves the groups and flows unknown: the next
    # sync asks.
    rec.routes = routes()
    rec.routes[6] = [(100, ["ip", "nw_dst=10.1.0.6"], ("up1",), "")]
    sw.fail = True
    with pytest.raises(DaqctlError):
        rec.sync()
    assert rec.known_groups is None and sw.asked["groups"] == 2
    assert rec.known_flows is None and sw.asked["flows"] == 3
    sw.fail = False
    rec.sync()
    assert sw.asked["groups"] == 3 and sw.asked["flows"] == 4


def test_sync_waits_until_the_switch_applied_what_the_database_holds(
        ) -> None:
    """A plan empty from the start (another client has just committed
    the ring this one wants) goes straight to sync(): the DCMs it reads
    must be those ovs-vswitchd has applied (the new ring's port has an
    ofport only then, and so flows), not the committed ones it has not
    applied yet; otherwise a racing identical add-dcm ends with "no
    changes" before the DCM's flows exist."""
    sw = FakeSwitch()
    applied = {"cfg": 4}
    calls: List[str] = []
    ports = [SimpleNamespace(name=n, interfaces=[SimpleNamespace(ofport=o)])
             for n, o in dict(OFPORTS, h1=1, dcm0=6).items()]
    dcm = Dcm("dcm0", "dcm0", "h1", ip="10.1.0.1")

    def wait_applied(cfg: int, _progress: Any = None) -> None:
        calls.append("wait %d" % cfg)
        applied["cfg"] = cfg

    def current() -> List[Dcm]:
        # The ring's port is there (an ofport) once ovs-vswitchd has
        # applied next_cfg 5; before, it has none and so no flows.
        calls.append("current at %d" % applied["cfg"])
        return [dcm] if applied["cfg"] >= 5 else []

    rec = Reconciler.__new__(Reconciler)
    rec.spec = SimpleNamespace(bridge="br0", label=lambda: "sw")
    rec.db = SimpleNamespace(
        catch_up=lambda: 5, next_cfg=lambda: 5, wait_applied=wait_applied,
        root=lambda: SimpleNamespace(cur_cfg=applied["cfg"]),
        bridge=lambda _: SimpleNamespace(ports=ports))
    rec.progress = lambda _waited: None
    rec.of = sw
    rec.current = current
    rec.conflicts = lambda dcms, dumped=None: []
    rec.routes = {}
    rec.manage_groups = False
    rec.known_flood = rec.known_groups = None
    rec.known_flows = rec.known_theirs = None
    n, _, n_add, _ = rec.sync()
    assert calls == ["wait 5", "current at 5"]
    assert n == 1 and n_add > 0
    assert any("nw_dst=10.1.0.1" in ln for ln in sw.bundles[-1])
    # Applied already: no wait.
    calls.clear()
    rec.sync()
    assert calls == ["current at 5"]
