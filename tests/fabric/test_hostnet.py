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

"""Tests of fabric/hostnet.py, what the host agent (ovs-daqfabric-agent
--host) holds the kernel to, and of the 'ip' text it reads and writes:
pure functions, no machine.

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_hostnet.py
"""

import json
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from ovs_daqring.daqctl.mapfile import parse_tuple
from ovs_daqring.daqctl.model import Dcm
from ovs_daqring.fabric.hostnet import (
    PRIO_ADDR, PRIO_PORTS, RT_PROTO, TABLE_MAIN, HostNet, Kernel, Route,
    Rule, apply_batch, batch, host_monitored, host_routes, json_arrays,
    parse_kernel, plane_table, read_kernel)
from ovs_daqring.fabric.model import (Assignment, FabricDcm, FabricHost,
                                      FabricState)

pytestmark = pytest.mark.every_base

T0, T1 = plane_table(0), plane_table(1)
DEVS = {0: "e0", 1: "e1"}


def fabric(dcms: List[Tuple[str, str, Optional[str], List[str]]]
           ) -> FabricState:
    """Two ROS hosts (one a prefix), two HLT hosts, on planes 0 and 1;
    'dcms': (name, host, ip, tuples)."""
    def host(name: str, role: str, ip: str, k: int) -> FabricHost:
        return FabricHost(name, role, ((0, "leaf0", "h%d" % k),
                                       (1, "leaf1", "h%d" % k)), ip)
    st = FabricState()
    st.hosts = [host("ros1", "ros", "10.0.0.1", 1),
                host("ros2", "ros", "10.0.1.0/24", 2),
                host("hlt1", "hlt", "10.1.0.1", 3),
                host("hlt2", "hlt", "10.1.0.2", 4)]
    st.dcms = [FabricDcm(Dcm(name=n, ring=n, egress="", ip=ip,
                             tuples=tuple(parse_tuple(t) for t in tuples)),
                         h) for n, h, ip, tuples in dcms]
    return st


def assign(**planes: int) -> Dict[str, Assignment]:
    return {d: Assignment(d, p, "spine%d" % p) for d, p in planes.items()}


# dcm1 and dcm2 share hlt1's address and differ by port; dcm3 is hlt2's
# address; dcm4 (hlt1) has a tuple with a source and a UDP one.
DCMS = [("dcm1", "hlt1", None, ["*:*->10.1.0.1:9001"]),
        ("dcm2", "hlt1", None, ["*:*->10.1.0.1:9002"]),
        ("dcm3", "hlt2", "10.1.0.2", []),
        ("dcm4", "hlt1", None, ["10.0.0.1:5000->10.1.0.1:9004",
                                "udp:*:*->10.1.0.1:9005"])]


def test_ros_host_routes_every_dcm_by_its_plane() -> None:
    st = fabric(DCMS)
    net = host_routes(st, assign(dcm1=0, dcm2=1, dcm3=1, dcm4=0), "ros1",
                      DEVS)
    assert net is not None and net.errors == []
    assert net.planes == {"dcm1": 0, "dcm2": 1, "dcm3": 1, "dcm4": 0}
    assert net.rules == {
        Rule(PRIO_PORTS, None, "10.1.0.1/32", "tcp", None, 9001, T0),
        Rule(PRIO_PORTS, None, "10.1.0.1/32", "tcp", None, 9002, T1),
        Rule(PRIO_PORTS, "10.0.0.1/32", "10.1.0.1/32", "tcp", 5000, 9004,
             T0),
        Rule(PRIO_PORTS, None, "10.1.0.1/32", "udp", None, 9005, T0)}
    assert net.routes == {Route(TABLE_MAIN, "10.1.0.2/32", "e1"),
                          Route(T0, "10.1.0.1/32", "e0"),
                          Route(T1, "10.1.0.1/32", "e1")}
    # Both ROS hosts hold the same (a ROS host sends to every DCM).
    assert host_routes(st, assign(dcm1=0, dcm2=1, dcm3=1, dcm4=0), "ros2",
                       DEVS) == net


def test_hlt_host_routes_its_own_dcms_back_to_every_ros_host() -> None:
    st = fabric(DCMS)
    asg = assign(dcm1=0, dcm2=1, dcm3=1, dcm4=0)
    net = host_routes(st, asg, "hlt1", DEVS)
    assert net is not None and net.errors == []
    assert net.planes == {"dcm1": 0, "dcm2": 1, "dcm4": 0}
    assert net.rules == {
        Rule(PRIO_PORTS, "10.1.0.1/32", None, "tcp", 9001, None, T0),
        Rule(PRIO_PORTS, "10.1.0.1/32", None, "tcp", 9002, None, T1),
        Rule(PRIO_PORTS, "10.1.0.1/32", "10.0.0.1/32", "tcp", 9004, 5000,
             T0),
        Rule(PRIO_PORTS, "10.1.0.1/32", None, "udp", 9005, None, T0)}
    assert net.routes == {Route(t, p, d) for t, d in ((T0, "e0"),
                                                      (T1, "e1"))
                          for p in ("10.0.0.1/32", "10.0.1.0/24")}
    # hlt2's DCM is given by its address: a rule by source.
    net2 = host_routes(st, asg, "hlt2", DEVS)
    assert net2 is not None
    assert net2.rules == {Rule(PRIO_ADDR, "10.1.0.2/32", None, None, None,
                               None, T1)}
    assert net2.routes == {Route(T1, "10.0.0.1/32", "e1"),
                           Route(T1, "10.0.1.0/24", "e1")}


def test_a_move_between_planes_changes_rules_and_routes() -> None:
    st = fabric(DCMS)
    before = assign(dcm1=0, dcm2=1, dcm3=0, dcm4=0)
    after = assign(dcm1=1, dcm2=1, dcm3=1, dcm4=0)
    for host in ("ros1", "hlt1"):
        old = host_routes(st, before, host, DEVS)
        new = host_routes(st, after, host, DEVS)
        assert old is not None and new is not None
        assert new.planes["dcm1"] == 1
        lines = batch(Kernel(list(old.routes), list(old.rules)), new)
        # dcm1's rule: the new one added before the old one goes.
        adds = [i for i, ln in enumerate(lines) if ln.startswith(
            "rule add") and ("9001" in ln)]
        dels = [i for i, ln in enumerate(lines) if ln.startswith(
            "rule del") and ("9001" in ln)]
        assert len(adds) == 1 and len(dels) == 1 and adds[0] < dels[0]
        assert "lookup %d" % T1 in lines[adds[0]]
        assert "lookup %d" % T0 in lines[dels[0]]
    ros = batch(Kernel(list(host_routes(st, before, "ros1", DEVS).routes),
                       list(host_routes(st, before, "ros1", DEVS).rules)),
                host_routes(st, after, "ros1", DEVS))
    # dcm3's route in the main table changes its device in place.
    assert ("route replace 10.1.0.2/32 dev e1 table %d proto %d"
            % (TABLE_MAIN, RT_PROTO)) in ros
    assert not any(ln.startswith("route del 10.1.0.2/32") for ln in ros)


def test_unassigned_dcm_gets_nothing_and_unknown_host_none() -> None:
    st = fabric(DCMS)
    net = host_routes(st, assign(dcm1=0), "ros1", DEVS)
    assert net is not None and net.planes == {"dcm1": 0}
    assert len(net.rules) == 1 and net.errors == []
    net = host_routes(st, {}, "hlt1", DEVS)
    assert net == HostNet(frozenset(), frozenset(), [], {})
    assert host_routes(st, {}, "nosuch", DEVS) is None


def test_plane_without_a_device_names_its_dcms() -> None:
    st = fabric(DCMS)
    asg = assign(dcm1=0, dcm2=1, dcm3=1, dcm4=0)
    net = host_routes(st, asg, "ros1", {0: "e0"})
    assert net is not None
    assert net.errors == ["plane 1 has no --plane-dev: DCMs dcm2, dcm3 not "
                          "steered (the main table's routes stand)"]
    # The others are.
    assert net.planes == {"dcm1": 0, "dcm4": 0}
    assert all(r.table == T0 for r in net.rules)
    assert net.routes == {Route(T0, "10.1.0.1/32", "e0")}


def test_hlt_host_without_ros_addresses_says_so() -> None:
    st = fabric(DCMS[:1])
    st.hosts = [h for h in st.hosts if h.role == "hlt"]
    net = host_routes(st, assign(dcm1=0), "hlt1", DEVS)
    assert net is not None and len(net.errors) == 1
    assert "no ROS host has an address" in net.errors[0]


# What 'ip -j' printed on a host holding some of the agent's routes and
# rules, one of them someone else's (protocol 4) and a link down.
IP_ROUTES = [{"dst": "10.1.0.1/32", "dev": "e0", "table": str(T0),
              "scope": "link", "flags": []},
             {"dst": "10.1.0.2", "dev": "e0", "scope": "link",
              "flags": []},
             {"dst": "10.9.0.0/16", "dev": "e1", "table": str(T1),
              "scope": "link", "flags": ["linkdown"]}]
IP_RULES = [{"priority": 0, "src": "all", "table": "local"},
            {"priority": 5300, "src": "all", "dst": "10.1.0.1",
             "ipproto": "tcp", "dport": 9001, "table": str(T0),
             "protocol": str(RT_PROTO)},
            {"priority": 5300, "src": "10.0.0.1", "dst": "10.1.0.1",
             "ipproto": "ipproto-17", "sport": 5, "dport": 9002,
             "table": str(T0), "protocol": str(RT_PROTO)},
            {"priority": 100, "src": "10.7.0.0", "srclen": 16,
             "table": "main", "protocol": "static"},
            {"priority": 32766, "src": "all", "table": "254"}]
IP_LINKS = [{"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP",
                                                     "LOWER_UP"],
             "operstate": "UNKNOWN"},
            {"ifindex": 3, "ifname": "e0", "flags": ["BROADCAST", "UP",
                                                     "LOWER_UP"],
             "operstate": "UP"},
            {"ifindex": 5, "ifname": "e1", "flags": ["NO-CARRIER", "UP"],
             "operstate": "LOWERLAYERDOWN"}]


def test_parse_kernel_reads_only_its_own() -> None:
    k = parse_kernel(IP_ROUTES, IP_RULES, IP_LINKS)
    assert k.routes == [Route(T0, "10.1.0.1/32", "e0"),
                        Route(TABLE_MAIN, "10.1.0.2/32", "e0"),
                        Route(T1, "10.9.0.0/16", "e1")]
    assert k.rules == [
        Rule(5300, None, "10.1.0.1/32", "tcp", None, 9001, T0),
        Rule(5300, "10.0.0.1/32", "10.1.0.1/32", "udp", 5, 9002, T0)]
    assert k.links == {"lo": "up", "e0": "up", "e1": "down"}


def test_batch_brings_the_kernel_to_what_is_wanted() -> None:
    st = fabric(DCMS)
    want = host_routes(st, assign(dcm1=0, dcm3=0), "ros1", DEVS)
    assert want is not None
    k = parse_kernel(IP_ROUTES, IP_RULES, IP_LINKS)
    assert batch(k, want) == [
        # dcm1's rule and route are there, dcm3's route on its plane's
        # device (already: e0): only what is no longer wanted goes.
        "rule del pref 5300 from 10.0.0.1/32 to 10.1.0.1/32 ipproto udp "
        "sport 5 dport 9002 lookup %d protocol %d" % (T0, RT_PROTO),
        "route del 10.9.0.0/16 table %d proto %d" % (T1, RT_PROTO)]
    # Applied: nothing more to do.
    done = Kernel(list(want.routes), list(want.rules))
    assert batch(done, want) == []
    # Someone deleted a route: it is put back, nothing else.
    gone = Kernel([r for r in want.routes if r.table != TABLE_MAIN],
                  list(want.rules))
    assert batch(gone, want) == ["route replace 10.1.0.2/32 dev e0 table "
                                 "%d proto %d" % (TABLE_MAIN, RT_PROTO)]
    # A rule added twice by hand: one goes.
    rule = next(iter(want.rules))
    twice = Kernel(list(want.routes), list(want.rules) + [rule])
    assert batch(twice, want) == [rule.line("del")]


def test_reading_and_writing_through_one_ip_each() -> None:
    calls: List[Tuple[List[str], str]] = []
    out = "\n".join(json.dumps(a) for a in (IP_ROUTES, IP_RULES, IP_LINKS))

    def run(argv: List[str], stdin: str) -> Tuple[int, str, str]:
        calls.append((argv, stdin))
        if "-j" in argv:
            return 0, out + "\n", ""
        return 2, "", "Error: Nexthop device is not up.\nCommand failed -:1\n"
    k = read_kernel(run)
    assert len(k.routes) == 3 and len(calls) == 1
    assert calls[0][1].splitlines() == [
        "route show table all proto %d" % RT_PROTO, "rule show",
        "link show"]
    why = apply_batch(run, ["route replace 1.2.3.4/32 dev e9 table 254 "
                            "proto %d" % RT_PROTO])
    assert why == ("ip -batch: Error: Nexthop device is not up. Command "
                   "failed -:1")
    assert calls[1][0] == ["ip", "-force", "-batch", "-"]
    with pytest.raises(OSError):
        read_kernel(lambda argv, stdin: (0, "[]", ""))
    assert json_arrays(" [1]\n[2, 3]\n\n{}") == [[1], [2, 3], {}]


def test_host_monitored_conditions() -> None:
    st = fabric(DCMS)
    assert host_monitored("ros1", st.hosts, st.dcms, []) == {
        "DCM": [True], "Assignment": [True]}
    assert host_monitored("hlt1", st.hosts, st.dcms, []) == {
        "DCM": [["host", "==", "hlt1"]],
        "Assignment": [["dcm", "==", n]
                       for n in ("dcm1", "dcm2", "dcm4")]}
    assert host_monitored("nosuch", st.hosts, st.dcms, []) == {
        "DCM": [], "Assignment": []}


def test_batch_summary_counts_what_a_batch_does() -> None:
    from ovs_daqring.fabric.hostagent import batch_summary
    st = fabric(DCMS)
    want = host_routes(st, assign(dcm1=0, dcm2=1, dcm3=1, dcm4=0), "ros1",
                       DEVS)
    assert want is not None
    assert batch_summary(batch(Kernel(), want)) == (
        "3 routes replaced, 4 rules added")
    old = Kernel(list(want.routes), list(want.rules))
    assert batch_summary(batch(old, HostNet())) == (
        "3 routes deleted, 4 rules deleted")


def test_reverse_path_filter_is_found(tmp_path: Path) -> None:
    from ovs_daqring.fabric.hostagent import rp_filtered
    for name, v in (("all", "0"), ("e0", "1"), ("e1", "2"), ("e2", "0")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "rp_filter").write_text(v + "\n")
    assert rp_filtered(["e0", "e1", "e2", "e9"], str(tmp_path)) == [
        "e0", "e1"]
    (tmp_path / "all" / "rp_filter").write_text("2\n")
    assert rp_filtered(["e0", "e1", "e2"], str(tmp_path)) == [
        "e0", "e1", "e2"]
