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

"""Unit tests of the fabric map (the 'fabric' section of a DCM map), the
planner (thesis Algorithms 6.1 and 6.2) and the slices it gives each
switch.  Pure: no daemons.

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_planner.py
"""

import textwrap
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List, Set, Tuple

import pytest

from ovs_daqring.daqctl.dcmmap import validate_dcms
from ovs_daqring.daqctl.model import NAME_RE, PRIO_TO_RING, MapError
from ovs_daqring.daqctl.openflow import BOUNCE, dcm_flows, parse_flow
from ovs_daqring.fabric.fabmap import FabricMapReader, state_json
from ovs_daqring.fabric.model import Assignment, FabricDcm, FabricState
from ovs_daqring.fabric.planner import (changed, next_return, path_order,
                                        plan)
from ovs_daqring.fabric import agent as fa
from ovs_daqring.fabric.flows import route_matches, route_table, slice_json
from ovs_daqring.fabric.slice import (FROM, PRIO_FROM_DCM, PRIO_ROUTE,
                                      Slice, backup_spines, monitored,
                                      slices)

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLE = ROOT / "utilities" / "fabric-map.example.yaml"


def fabric_yaml(planes: int = 2, spines: int = 2, hlt: int = 2,
                dcms_per_host: int = 4, hold_down: int = 10,
                ros: int = 2) -> str:
    """A parallel leaf-spine: per plane, a ROS leaf, an HLT leaf and
    'spines' spines; 'ros' ROS hosts and 'hlt' HLT hosts on every
    plane."""
    sw, links, hosts, dcms = [], [], [], []
    for p in range(planes):
        sw.append("    - {name: rl%d, role: leaf, plane: %d}" % (p, p))
        sw.append("    - {name: hl%d, role: leaf, plane: %d}" % (p, p))
        for s in range(spines):
            sw.append("    - {name: sp%d-%d, role: spine, plane: %d}"
                      % (p, s, p))
            for leaf in ("rl%d" % p, "hl%d" % p):
                links.append('    - {a: "%s:u%d", b: "sp%d-%d:%s"}'
                             % (leaf, s, p, s, leaf))
    for r in range(ros):
        ports = ", ".join('%d: "rl%d:h%d"' % (p, p, r)
                          for p in range(planes))
        hosts.append("    - {name: ros%d, role: ros, ports: {%s}}"
                     % (r, ports))
    for h in range(hlt):
        ports = ", ".join('%d: "hl%d:h%d"' % (p, p, h)
                          for p in range(planes))
        hosts.append("    - {name: hlt%d, role: hlt, ports: {%s}}"
                     % (h, ports))
        for k in range(dcms_per_host):
            dcms.append("  - {name: d%d-%d, host: hlt%d, ip: 10.1.%d.%d}"
                        % (h, k, h, h, k + 1))
    return ("fabric:\n  hold-down: %d\n  switches:\n%s\n  links:\n%s\n"
            "  hosts:\n%s\ndcms:\n%s\n"
            % (hold_down, "\n".join(sw), "\n".join(links),
               "\n".join(hosts), "\n".join(dcms)))


def parse(text: str) -> FabricState:
    return FabricMapReader("m.yaml").parse(textwrap.dedent(text))


def refused(text: str) -> List[str]:
    with pytest.raises(MapError) as e:
        parse(text)
    return [str(p) for p in e.value.problems]


# ======================================================================= map
def test_example_map_parses() -> None:
    st = FabricMapReader(str(EXAMPLE)).read()
    assert [s.name for s in st.switches] == ["ros-leaf1", "hlt-leaf1",
                                             "spine1", "spine2"]
    assert len(st.links) == 4 and len(st.hosts) == 3
    assert [d.name for d in st.dcms] == ["dcm1", "dcm2", "dcm3", "dcm4"]
    assert st.dcms[0].dcm.max_rate == 190000000
    assert st.hold_down == 30


def test_generated_map_parses() -> None:
    st = parse(fabric_yaml())
    assert st.spines() == {0: ["sp0-0", "sp0-1"], 1: ["sp1-0", "sp1-1"]}
    assert st.host("hlt1").leaf(1) == ("hl1", "h1")


BAD_MAPS = [
    # (what is wrong, the map, a piece of the message)
    ("unknown key", fabric_yaml().replace("hold-down", "hold-dwn"),
     "unknown fabric key 'hold_dwn'"),
    ("no spine in a plane",
     fabric_yaml(planes=1, spines=1).replace(
         "    - {name: sp0-0, role: spine, plane: 0}\n", "").replace(
             '    - {a: "rl0:u0", b: "sp0-0:rl0"}\n', "").replace(
                 '    - {a: "hl0:u0", b: "sp0-0:hl0"}\n', ""),
     "plane 0 has hosts but no spine"),
    ("leaf to leaf", fabric_yaml(planes=1, spines=1).replace(
        '{a: "rl0:u0", b: "sp0-0:rl0"}', '{a: "rl0:u0", b: "hl0:x"}'),
     "a link joins a leaf and a spine"),
    ("port cabled twice", fabric_yaml(planes=1, spines=1).replace(
        '{a: "hl0:u0", b: "sp0-0:hl0"}', '{a: "hl0:u0", b: "sp0-0:rl0"}'),
     "already cabled"),
    ("link to a missing switch", fabric_yaml(planes=1, spines=1).replace(
        'b: "sp0-0:hl0"', 'b: "nosuch:p1"'), "no switch nosuch"),
    ("host named as a switch", fabric_yaml(planes=1, spines=1).replace(
        "{name: ros0,", "{name: rl0,"), "host rl0: a switch has that name"),
    ("link between planes", fabric_yaml(planes=2, spines=1).replace(
        'b: "sp1-0:hl1"', 'b: "sp0-0:x9"'), "planes are independent"),
    ("DCM on a missing host", fabric_yaml(planes=1, spines=1).replace(
        "host: hlt0", "host: hltX", 1), "no host hltX"),
    ("DCM on a ROS host", fabric_yaml(planes=1, spines=1).replace(
        "host: hlt0", "host: ros0", 1), "DCMs run on HLT hosts"),
    ("DCM with an egress", fabric_yaml(planes=1, spines=1).replace(
        "host: hlt0,", "host: hlt0, egress: p1,", 1),
     "unknown DCM key 'egress'"),
    ("duplicate DCM ip", fabric_yaml(planes=1, spines=1).replace(
        "ip: 10.1.0.2", "ip: 10.1.0.1"), "10.1.0.1"),
    ("bad plane", fabric_yaml(planes=1, spines=1).replace(
        "plane: 0}", "plane: 64}", 1), "out of range"),
    ("bad role", fabric_yaml(planes=1, spines=1).replace(
        "role: spine", "role: core"), "leaf or spine"),
    ("host on a spine", fabric_yaml(planes=1, spines=1).replace(
        '0: "hl0:h0"', '0: "sp0-0:h0"'), "not a leaf"),
    ("leaf without its uplink", fabric_yaml(planes=1, spines=2).replace(
        '    - {a: "hl0:u1", b: "sp0-1:hl0"}\n', ""),
     "leaf hl0 has no link to spine sp0-1"),
    ("bad rate", fabric_yaml(planes=1, spines=1).replace(
        "ip: 10.1.0.1}", "ip: 10.1.0.1, rate: fast}"), "bad rate"),
    ("ring named like a port", fabric_yaml(planes=1, spines=1).replace(
        "ip: 10.1.0.1}", "ip: 10.1.0.1, ring: h0}"), "name of a cabled"),
    ("bfd not a mapping", fabric_yaml().replace(
        "  hold-down: 10\n", "  hold-down: 10\n  bfd: fast\n"),
     "'bfd' must be true, false or a mapping of min-rx, min-tx, mult"),
    ("bfd unknown key", fabric_yaml().replace(
        "  hold-down: 10\n", "  hold-down: 10\n  bfd: {min-rxx: 50}\n"),
     "unknown bfd key 'min_rxx'"),
    ("bfd out of range", fabric_yaml().replace(
        "  hold-down: 10\n", "  hold-down: 10\n  bfd: {mult: 0}\n"),
     "bfd: mult 0 out of range 1..255"),
    ("bfd not a number", fabric_yaml().replace(
        "  hold-down: 10\n", "  hold-down: 10\n  bfd: {min-tx: 1ms}\n"),
     "bfd: min-tx must be an integer"),
    ("ROS prefix with host bits", fabric_yaml(planes=1, spines=1).replace(
        "{name: ros0, role: ros,", "{name: ros0, role: ros, ip: 10.2.0.1/24,"),
     "ip 10.2.0.1/24 is not a prefix"),
    ("ROS prefix too wide", fabric_yaml(planes=1, spines=1).replace(
        "{name: ros0, role: ros,", "{name: ros0, role: ros, ip: 10.0.0.0/7,"),
     "at least /8"),
    ("HLT host prefix", fabric_yaml(planes=1, spines=1).replace(
        "{name: hlt0, role: hlt,", "{name: hlt0, role: hlt, ip: 10.3.0.0/24,"),
     "only a ROS host's addresses may be a prefix"),
    ("ROS prefixes overlap", fabric_yaml(planes=1, spines=1).replace(
        "{name: ros0, role: ros,", "{name: ros0, role: ros, ip: 10.2.0.0/16,"
    ).replace("{name: ros1, role: ros,",
              "{name: ros1, role: ros, ip: 10.2.3.4,"),
     "hosts ros0 and ros1: addresses 10.2.0.0/16 and 10.2.3.4 overlap"),
    ("ROS prefix holds a DCM", fabric_yaml(planes=1, spines=1).replace(
        "{name: ros0, role: ros,", "{name: ros0, role: ros, ip: 10.1.0.0/16,"),
     "host ros0: its addresses 10.1.0.0/16 hold DCM d0-0's 10.1.0.1"),
    ("MAC not a mapping", fabric_yaml(planes=1, spines=1).replace(
        "{name: hlt0, role: hlt,", '{name: hlt0, role: hlt, macs: '
        '"02:00:00:00:00:01",'), "host hlt0: 'macs' must map each plane"),
    ("MAC of a plane not cabled", fabric_yaml(planes=1, spines=1).replace(
        "{name: hlt0, role: hlt,", '{name: hlt0, role: hlt, macs: '
        '{1: "02:00:00:00:00:01"},'),
     "host hlt0: macs: plane 1 is not one of its ports' planes"),
    ("MAC malformed", fabric_yaml(planes=1, spines=1).replace(
        "{name: hlt0, role: hlt,", '{name: hlt0, role: hlt, macs: '
        '{0: "02:00:00:00:01"},'),
     "host hlt0, plane 0: MAC '02:00:00:00:01' is not six hexadecimal"),
    ("MAC multicast", fabric_yaml(planes=1, spines=1).replace(
        "{name: hlt0, role: hlt,", '{name: hlt0, role: hlt, macs: '
        '{0: "01:00:5e:00:00:01"},'), "is a multicast address"),
    ("MAC unquoted, read as a number", fabric_yaml(planes=1, spines=1)
     .replace("{name: hlt0, role: hlt,", "{name: hlt0, role: hlt, macs: "
              "{0: 12:34:56:00:00:01},"), "give it in quotes"),
    ("MAC of two hosts in a plane", fabric_yaml(planes=1, spines=1).replace(
        "{name: hlt0, role: hlt,", '{name: hlt0, role: hlt, macs: '
        '{0: "02:00:00:00:00:01"},').replace(
            "{name: ros1, role: ros,", '{name: ros1, role: ros, macs: '
            '{0: "02:00:00:00:00:01"},'),
     "MAC 02:00:00:00:00:01 is host ros1's too"),
    ("not a fabric map", "dcms: []\n", "a fabric map is a mapping"),
    ("malformed YAML", "fabric: [\n", "malformed YAML"),
]


@pytest.mark.parametrize("what,text,msg", BAD_MAPS,
                         ids=[b[0] for b in BAD_MAPS])
def test_bad_map_refused(what: str, text: str, msg: str) -> None:
    probs = refused(text)
    assert any(msg in p for p in probs), probs
    # Every problem says where.
    assert all(p.startswith("m.yaml") for p in probs), probs


def test_bad_map_lists_every_problem_with_its_line() -> None:
    text = fabric_yaml(planes=1, spines=1).replace(
        "role: spine", "role: core").replace("host: hlt0", "host: hltX", 1)
    probs = refused(text)
    assert len(probs) >= 2
    lines = text.splitlines()
    for p in probs:
        if "core" in p:
            n = int(p.split(":")[1])
            assert "role: core" in lines[n - 1]


def two_hlt_leaves(dcms: str) -> str:
    """One plane, one spine, two HLT leaves whose hosts' ports have the
    same name (h0)."""
    return textwrap.dedent("""\
        fabric:
          switches:
            - {name: rl0, role: leaf, plane: 0}
            - {name: hl0, role: leaf, plane: 0}
            - {name: hl1, role: leaf, plane: 0}
            - {name: sp0, role: spine, plane: 0}
          links:
            - {a: "rl0:u0", b: "sp0:rl0"}
            - {a: "hl0:u0", b: "sp0:hl0"}
            - {a: "hl1:u0", b: "sp0:hl1"}
          hosts:
            - {name: ros0, role: ros, ports: {0: "rl0:h0"}}
            - {name: hlt0, role: hlt, ports: {0: "hl0:h0"}}
            - {name: hlt1, role: hlt, ports: {0: "hl1:h0"}}
        dcms:
        """) + dcms


def test_egress_shares_are_per_host() -> None:
    """The DCMs of one host share its ports' egress-max-rate; those of
    hosts on other leaves do not, even where their ports have the same
    name.  At most 64 share one (the switch refuses the 65th)."""
    st = parse(two_hlt_leaves(
        "  - {name: a, host: hlt0, ip: 10.1.0.1, steering: bound,\n"
        "     egress-max-rate: 1gbit}\n"
        "  - {name: b, host: hlt1, ip: 10.1.1.1, steering: bound,\n"
        "     egress-max-rate: 500mbit}\n"))
    assert [d.dcm.egress_max_rate for d in st.dcms] == [10**9, 5 * 10**8]
    probs = refused(two_hlt_leaves(
        "  - {name: a, host: hlt0, ip: 10.1.0.1, steering: bound,\n"
        "     egress-max-rate: 1gbit}\n"
        "  - {name: b, host: hlt0, ip: 10.1.0.2, steering: bound,\n"
        "     egress-max-rate: 500mbit}\n"))
    assert any("DCM b: the DCMs of host hlt0's port must share it alike"
               in p for p in probs), probs

    def many(n: int) -> str:
        return "".join("  - {name: d%d, host: hlt0, ip: 10.1.%d.%d, "
                       "steering: bound, egress-max-rate: 1gbit}\n"
                       % (i, i // 200, i % 200 + 1) for i in range(n))

    assert len(parse(two_hlt_leaves(many(64))).dcms) == 64
    probs = refused(two_hlt_leaves(many(65)))
    assert any("DCM d64: 65 DCMs share host hlt0's port (egress-max-rate), "
               "at most 64 daqrings may share one egress port" in p
               for p in probs), probs


def test_egress_before_slicing_is_per_host() -> None:
    """Until slice.py binds each ring to its host's port on its leaf, a
    fabric DCM's egress is a placeholder, the same for the DCMs of one
    host and unlike any other host's, even where their ports have the
    same name, and no port's name: whatever groups DCMs by egress (the
    checks of a plain map) groups a fabric's by host.  So is that of a
    DCM read back from the fabric database."""
    from types import SimpleNamespace
    from ovs_daqring.fabric.rows import dcm_columns, dcm_from_fabric_row
    st = parse(two_hlt_leaves("".join(
        "  - {name: d%d-%d, host: hlt%d, ip: 10.1.%d.%d, steering: bound,"
        " egress-max-rate: %s}\n"
        % (h, i, h, h, i + 1, ("1gbit", "500mbit")[h])
        for h in range(2) for i in range(40))))
    egress = {d.dcm.egress for d in st.dcms if d.host == "hlt0"}
    assert len(egress) == 1
    assert egress.isdisjoint(d.dcm.egress for d in st.dcms
                             if d.host == "hlt1")
    assert not any(NAME_RE.match(d.dcm.egress) for d in st.dcms)
    # By egress: 40 DCMs on each of two shares, alike.
    assert validate_dcms([d.dcm for d in st.dcms], "m.yaml") == []
    d = st.dcms[0]
    back = FabricDcm(dcm=dcm_from_fabric_row(
        SimpleNamespace(name=d.name, **dcm_columns(d)), "h0"), host=d.host)
    assert back.dcm.key() == d.dcm.key()        # the egress too
    # Slicing gives each ring its port.
    sl = slices(st, {})
    assert {r.egress for s in sl.values() for r in s.rings} == {"h0"}


@pytest.mark.parametrize("bfd,want", [
    (None, {}),
    ("false", {}),
    ("true", {"enable": "true", "min_rx": "100", "min_tx": "100",
              "mult": "3"}),
    ("{min-rx: 300, mult: 5}", {"enable": "true", "min_rx": "300",
                                "min_tx": "100", "mult": "5"}),
])
def test_bfd_of_the_map(bfd: str, want: Dict[str, str]) -> None:
    """'bfd' in the fabric section gives the Interface:bfd of every link
    port (OVS's keys); it is part of the digest only when set."""
    text = fabric_yaml()
    if bfd is not None:
        text = text.replace("  hold-down: 10\n",
                            "  hold-down: 10\n  bfd: %s\n" % bfd)
    st = parse(text)
    assert st.bfd == want
    assert ("bfd" in state_json(st)) == bool(want)


# =================================================================== planner
def assign(st: FabricState, current: Dict[str, Assignment],
           down: Set[Tuple[str, str]] = frozenset(),  # type: ignore
           up_since: Dict[Tuple[str, str], int] = {},  # noqa: B006
           now: int = 1000000) -> Dict[str, Assignment]:
    new, _ = plan(st, current, set(down), dict(up_since), now)
    return new


def load(asg: Dict[str, Assignment]) -> Dict[Tuple[int, str], int]:
    out: Dict[Tuple[int, str], int] = {}
    for a in asg.values():
        out[a.path] = out.get(a.path, 0) + 1
    return out


def test_path_order_is_round_robin_over_planes_then_spines() -> None:
    st = parse(fabric_yaml(planes=2, spines=3))
    assert path_order(st) == [(0, "sp0-0"), (1, "sp1-0"), (0, "sp0-1"),
                              (1, "sp1-1"), (0, "sp0-2"), (1, "sp1-2")]


def test_first_assignment_is_algorithm_6_1() -> None:
    st = parse(fabric_yaml(planes=2, spines=2, hlt=2, dcms_per_host=5))
    asg = assign(st, {})
    order = path_order(st)
    names = sorted(d.name for d in st.dcms)
    # DCM i (in name order) takes path i mod n.
    for i, n in enumerate(names):
        assert asg[n].path == order[i % len(order)], n
    assert sorted(load(asg).values()) == [2, 2, 3, 3]
    assert all(a.home is None for a in asg.values())


def test_plan_is_deterministic_and_stable() -> None:
    st = parse(fabric_yaml())
    a1 = assign(st, {})
    assert assign(st, {}) == a1
    # Nothing changed: nothing to write.
    again = assign(st, a1, now=2000000)
    assert changed(a1, again) == ([], [])


def test_new_dcm_goes_to_least_loaded_and_nobody_moves() -> None:
    st = parse(fabric_yaml(planes=1, spines=2, hlt=1, dcms_per_host=3))
    a1 = assign(st, {})
    st2 = parse(fabric_yaml(planes=1, spines=2, hlt=1, dcms_per_host=4))
    a2 = assign(st2, a1)
    for n, a in a1.items():
        assert a2[n].path == a.path
    assert load(a2) == {(0, "sp0-0"): 2, (0, "sp0-1"): 2}


def test_removed_dcm_loses_its_assignment() -> None:
    st = parse(fabric_yaml(planes=1, spines=2, hlt=1, dcms_per_host=3))
    a1 = assign(st, {})
    st2 = parse(fabric_yaml(planes=1, spines=2, hlt=1, dcms_per_host=2))
    a2 = assign(st2, a1)
    upd, gone = changed(a1, a2)
    assert gone == ["d0-2"] and upd == []


def test_link_failure_moves_only_affected_dcms_balanced() -> None:
    st = parse(fabric_yaml(planes=2, spines=2, hlt=2, dcms_per_host=4))
    a1 = assign(st, {})
    # The HLT leaf of plane 0 loses its link to spine sp0-0.
    down = {("hl0", "u0")}
    a2 = assign(st, a1, down)
    hit = sorted(n for n, a in a1.items() if a.path == (0, "sp0-0"))
    assert hit, a1
    for n, a in a1.items():
        if n in hit:
            assert a2[n].path != (0, "sp0-0")
            assert a2[n].home == (0, "sp0-0")
            assert a2[n].reason == "path down"
        else:
            assert a2[n] == a, n
    # The moved DCMs spread over the remaining paths.
    ld = load(a2)
    assert (0, "sp0-0") not in ld
    assert max(ld.values()) - min(ld.values()) <= 1


def test_ros_uplink_failure_affects_every_dcm_on_that_spine() -> None:
    st = parse(fabric_yaml(planes=1, spines=2, hlt=2, dcms_per_host=2))
    a1 = assign(st, {})
    a2 = assign(st, a1, {("sp0-1", "rl0")})     # spine end of rl0's link
    assert all(a.path == (0, "sp0-0") for a in a2.values())


def test_host_link_down_moves_its_dcms_to_another_plane() -> None:
    st = parse(fabric_yaml(planes=2, spines=1, hlt=2, dcms_per_host=2))
    a1 = assign(st, {})
    a2 = assign(st, a1, {("hl1", "h0")})        # hlt0's plane-1 port
    for n, a in a2.items():
        if n.startswith("d0-"):
            assert a.plane == 0
        else:
            assert a == a1[n]


def test_no_usable_path_keeps_the_assignment() -> None:
    st = parse(fabric_yaml(planes=1, spines=1, hlt=1, dcms_per_host=2))
    a1 = assign(st, {})
    new, notes = plan(st, a1, {("hl0", "h0")}, {}, 5000)
    assert new == a1
    assert any("no usable path" in n for n in notes)
    fresh, notes = plan(st, {}, {("hl0", "h0")}, {}, 5000)
    assert fresh == {} and len(notes) == 2


def test_paths_are_scored_by_the_ros_hosts_they_reach() -> None:
    """A ROS host's port down in a plane costs that plane's paths that
    host only: a DCM takes the paths that reach the most ROS hosts, and
    stays on a path that reaches as many as any other.  Three ROS hosts,
    two planes: ros0 is cut off in plane 0, ros1 and ros2 in plane 1;
    the DCMs of plane 1 (1 of 3) move to plane 0 (2 of 3), remembering
    their home, and come back once it reaches every ROS host again."""
    st = parse(fabric_yaml(planes=2, spines=1, hlt=1, dcms_per_host=4,
                           ros=3, hold_down=10))
    t0 = 1000000
    a1 = assign(st, {}, now=t0)
    on1 = sorted(n for n, a in a1.items() if a.plane == 1)
    assert on1 and len(on1) < len(a1)
    down = {("rl0", "h0"), ("rl1", "h1"), ("rl1", "h2")}
    a2, notes = plan(st, a1, down, {}, t0 + 1000)
    assert not any("no usable path" in n for n in notes), notes
    for n, a in a2.items():
        assert a.plane == 0, n
        if n in on1:
            assert a.home == (1, "sp1-0"), n
            assert a.reason == "reaches 1 of 3 ROS hosts", a.reason
        else:
            assert a == a1[n], n
    # Every port back: home after the hold-down.
    back = {("rl0", "h0"): t0 + 2000, ("rl1", "h1"): t0 + 2000,
            ("rl1", "h2"): t0 + 2000}
    down = set()
    assert assign(st, a2, down, back, now=t0 + 11000) == a2
    assert next_return(st, a2, down, back) == t0 + 12000
    a3 = assign(st, a2, down, back, now=t0 + 12000)
    assert {n: a.path for n, a in a3.items()} == {
        n: a.path for n, a in a1.items()}


def test_one_ros_port_down_per_plane_leaves_every_plane_usable() -> None:
    """P planes, a different ROS host's port down in each: every path
    still reaches all ROS hosts but one.  DCMs stay where they are (no
    path is better), a new DCM is assigned, and a DCM whose own path
    then fails (its host's port) moves to the best path left instead of
    staying on a path that reaches nothing."""
    st = parse(fabric_yaml(planes=2, spines=1, hlt=1, dcms_per_host=4))
    a1 = assign(st, {})
    down = {("rl0", "h0"), ("rl1", "h1")}
    new, notes = plan(st, a1, down, {}, 5000)
    assert new == a1 and notes == []
    st5 = parse(fabric_yaml(planes=2, spines=1, hlt=1, dcms_per_host=5))
    a5 = assign(st5, a1, down)
    assert sorted(a5) == sorted(d.name for d in st5.dcms)
    # hlt0's plane-1 port fails too: its plane-1 DCMs reach nothing
    # there, and plane 0 reaches ros1.
    a6, notes = plan(st, a1, down | {("hl1", "h0")}, {}, 6000)
    assert not any("no usable path" in n for n in notes), notes
    for n, a in a6.items():
        assert a.plane == 0, n
        if a1[n].plane == 1:
            assert a.home == (1, "sp1-0") and a.reason == "path down"


def test_move_back_after_hold_down_without_flapping() -> None:
    st = parse(fabric_yaml(planes=1, spines=2, hlt=1, dcms_per_host=4,
                           hold_down=10))
    t0 = 1000000
    a1 = assign(st, {}, now=t0)
    down = {("hl0", "u1")}                      # hl0 - sp0-1
    a2 = assign(st, a1, down, now=t0 + 1000)
    moved = sorted(n for n in a1 if a1[n].spine == "sp0-1")
    assert moved and all(a2[n].spine == "sp0-0" for n in moved)
    # The link comes back at t0 + 5 s.
    back = {("hl0", "u1"): t0 + 5000}
    # Within the hold-down: nobody moves.
    a3 = assign(st, a2, set(), back, now=t0 + 9000)
    assert a3 == a2
    # It fails again and comes back at t0 + 14 s: the hold-down restarts.
    a4 = assign(st, a3, down, now=t0 + 12000)
    assert a4 == a3                              # already away from it
    back = {("hl0", "u1"): t0 + 14000}
    a5 = assign(st, a4, set(), back, now=t0 + 20000)
    assert a5 == a4
    # Up for the hold-down: home again, and only the moved DCMs moved.
    a6 = assign(st, a5, set(), back, now=t0 + 24000)
    for n in a1:
        assert a6[n].path == a1[n].path
        assert a6[n].home is None
    upd, _ = changed(a5, a6)
    assert sorted(a.dcm for a in upd) == moved
    # And stays.
    assert changed(a6, assign(st, a6, set(), back, now=t0 + 90000)) == (
        [], [])


def test_fabric_planned_with_a_link_down_balances_once_it_is_up() -> None:
    """A fabric first planned while a link is still down (its BFD session
    not up yet): the DCMs whose path it is go elsewhere but remember it,
    and take it after the hold-down, ending as if planned all up."""
    st = parse(fabric_yaml(planes=1, spines=2, hlt=1, dcms_per_host=4,
                           hold_down=10))
    t0 = 1000000
    ideal = assign(st, {}, now=t0)
    down = {("hl0", "u1")}                      # hl0 - sp0-1
    a1 = assign(st, {}, down, now=t0)
    assert all(a.spine == "sp0-0" for a in a1.values())
    off = sorted(n for n in ideal if ideal[n].spine == "sp0-1")
    assert off and all(a1[n].home == (0, "sp0-1") for n in off)
    assert all(a1[n].home is None for n in ideal if n not in off)
    # Up at t0 + 2 s: the hold-down runs from then.
    back = {("hl0", "u1"): t0 + 2000}
    assert assign(st, a1, set(), back, now=t0 + 11000) == a1
    a2 = assign(st, a1, set(), back, now=t0 + 12000)
    assert {n: a.path for n, a in a2.items()} == {
        n: a.path for n, a in ideal.items()}
    assert all(a.home is None for a in a2.values())
    # A DCM added while the link is down remembers the path it belongs
    # on too (the least-loaded one counting the DCMs at their homes).
    st3 = parse(fabric_yaml(planes=1, spines=2, hlt=1, dcms_per_host=3,
                            hold_down=10))
    a3 = assign(st3, {}, now=t0)
    assert [a3[n].spine for n in sorted(a3)] == ["sp0-0", "sp0-1", "sp0-0"]
    a4 = assign(st, a3, down, now=t0 + 20000)
    assert all(a.spine == "sp0-0" for a in a4.values())
    assert a4["d0-1"].home == (0, "sp0-1")      # moved
    assert a4["d0-3"].home == (0, "sp0-1")      # new
    assert a4["d0-3"].reason == "first assignment"


def test_removed_spine_moves_its_dcms_without_home() -> None:
    st = parse(fabric_yaml(planes=1, spines=2, hlt=1, dcms_per_host=4))
    a1 = assign(st, {})
    text = fabric_yaml(planes=1, spines=2, hlt=1, dcms_per_host=4)
    text = "\n".join(ln for ln in text.splitlines() if "sp0-1" not in ln)
    st2 = parse(text + "\n")
    a2 = assign(st2, a1)
    assert all(a.path == (0, "sp0-0") and a.home is None
               for a in a2.values())


# ==================================================================== slices
def test_slices_put_rings_on_hlt_leaves_and_routes_elsewhere() -> None:
    st = parse(fabric_yaml(planes=2, spines=2, hlt=2, dcms_per_host=2))
    asg = assign(st, {})
    sl = slices(st, asg)
    rings: Dict[str, Set[Tuple[str, str]]] = {}
    for sw, s in sl.items():
        for d in s.rings:
            rings.setdefault(d.name, set()).add((sw, d.egress))
    assert sorted(rings) == sorted(d.name for d in st.dcms)
    for d in st.dcms:
        a = asg[d.name]
        leaf, port = st.host(d.host).leaf(a.plane)
        # On its leaf in the assigned plane (and in the other: standby).
        assert (leaf, port) in rings[d.name]
        # The ROS leaf of the plane sends it up to the assigned spine,
        # the spine down to the HLT leaf.
        up = [r for r in sl["rl%d" % a.plane].routes if r.dcm == d.name]
        assert [r.port for r in up] == ["u%s" % a.spine[-1]]
        dn = [r for r in sl[a.spine].routes if r.dcm == d.name]
        assert [r.port for r in dn] == [leaf]
    # No switch of another plane or spine has anything of it.
    for sw, s in sl.items():
        for r in s.routes:
            assert r.dcm in asg or r.key.startswith("detour/")


def test_every_plane_leaf_of_a_host_holds_its_dcms_rings() -> None:
    """Standby rings: a DCM's ring is on its host's leaf in every plane,
    bound to the host's port there, with the same options, whatever the
    assignment (and before one); a move between planes changes no leaf's
    rings, only routes; the way back is on the assigned plane's leaf
    only."""
    text = fabric_yaml(planes=3, spines=2, hlt=2, dcms_per_host=3)
    for r in range(2):
        text = text.replace("{name: ros%d, role: ros," % r,
                            "{name: ros%d, role: ros, ip: 10.0.0.%d,"
                            % (r, r + 1))
    st = parse(text + "defaults: {rate: 1gbit, steering: bound, "
               "egress-max-rate: 10gbit}\n")
    dcms = {d.name: d for d in st.dcms}
    want = {("hl%d" % p, d.name, "h%s" % d.host[-1])
            for p in range(3) for d in st.dcms}

    def rings(sl: Dict[str, Slice]) -> Set[Tuple[str, str, str]]:
        out = set()
        for sw, s in sl.items():
            for r in s.rings:
                # The DCM's own ring, options and all, but its egress.
                assert r == replace(dcms[r.name].dcm, egress=r.egress)
                assert r.options()["egress"] == r.egress
                out.add((sw, r.name, r.egress))
        return out

    # Before any assignment: the rings, and every DCM's standing routes
    # in every plane (its way back at each of its leaves).
    none = slices(st, {})
    assert rings(none) == want
    for d in st.dcms:
        back = sorted(sw for sw, s in none.items() for r in s.routes
                      if r.dcm == d.name and r.match.startswith(FROM))
        assert back == ["hl0", "hl1", "hl2"], d.name
    a1 = assign(st, {})
    assert {a.plane for a in a1.values()} == {0, 1, 2}
    s1 = slices(st, a1)
    assert rings(s1) == want
    for d in st.dcms:
        # The way back in every plane; in the assigned one, up to the
        # assigned spine first.
        a = a1[d.name]
        back = {sw: r.port for sw, s in s1.items() for r in s.routes
                if r.dcm == d.name and r.match.startswith(FROM)}
        assert sorted(back) == ["hl0", "hl1", "hl2"]
        assert back["hl%d" % a.plane] == "u%s" % a.spine[-1]
    # Plane 0's ROS leaf loses its host ports: its DCMs move to the
    # other planes; no leaf's rings change.
    a2 = assign(st, a1, {("rl0", "h0"), ("rl0", "h1")})
    moved = [n for n in a1 if a2[n].plane != a1[n].plane]
    assert moved and all(a1[n].plane == 0 for n in moved)
    s2 = slices(st, a2)
    assert rings(s2) == want
    for sw in s1:
        assert s1[sw].rings == s2[sw].rings, sw
    assert any(s1[sw].routes != s2[sw].routes for sw in ("hl1", "hl2"))
    # A host cabled to one plane only: its rings on that leaf only.
    text = fabric_yaml(planes=2, spines=1, hlt=2, dcms_per_host=1).replace(
        '{name: hlt1, role: hlt, ports: {0: "hl0:h1", 1: "hl1:h1"}}',
        '{name: hlt1, role: hlt, ports: {1: "hl1:h1"}}')
    one = slices(parse(text), {})
    assert sorted((sw, r.name) for sw, s in one.items()
                  for r in s.rings) == [("hl0", "d0-0"), ("hl1", "d0-0"),
                                        ("hl1", "d1-0")]


def test_the_last_hop_sets_the_hosts_mac() -> None:
    """No ARP (thesis section 6.2.3): a host's leaf, the last hop, sets
    the host's MAC in that plane (the map's 'macs') into the DCMs' rings
    and on the route towards a ROS host; no other hop sets one, nor a
    leaf for a host without one.  The flows carry it as ovs-ofctl prints
    it, over any OpenFlow version."""
    text = fabric_yaml(planes=2, spines=2, hlt=2, dcms_per_host=2)
    text = text.replace(
        "{name: ros0, role: ros,", '{name: ros0, role: ros, ip: 10.0.0.1, '
        'macs: {0: "02:00:00:00:01:00", 1: "02:00:00:00:01:01"},').replace(
        "{name: ros1, role: ros,", "{name: ros1, role: ros, ip: 10.0.0.2,"
    ).replace(
        "{name: hlt0, role: hlt,", "{name: hlt0, role: hlt, "
        "macs: {0: 02:00:00:00:02:00, 1: 02:00:00:00:02:0A},")
    st = parse(text)
    assert st.host("hlt0").macs == ((0, "02:00:00:00:02:00"),
                                    (1, "02:00:00:00:02:0a"))
    assert st.host("hlt1").macs == () and st.host("hlt1").mac(0) is None
    sl = slices(st, assign(st, {}))
    rings = {(sw, r.name): r for sw, s in sl.items() for r in s.rings}
    for p, mac in ((0, "02:00:00:00:02:00"), (1, "02:00:00:00:02:0a")):
        for k in range(2):
            r = rings[("hl%d" % p, "d0-%d" % k)]
            assert r.dl_dst == mac
            assert dcm_flows(r, "7", "3")[0] == (
                PRIO_TO_RING, ["ip", "nw_dst=10.1.0.%d" % (k + 1)],
                "mod_dl_dst:%s,output:7" % mac)
            assert rings[("hl%d" % p, "d1-%d" % k)].dl_dst is None
    # Towards the ROS hosts: ros0's leaf sets its MAC, nothing else does.
    macs = sorted((sw, r.host, r.dl_dst) for sw, s in sl.items()
                  for r in s.routes if r.dl_dst)
    assert macs == [("rl0", "ros0", "02:00:00:00:01:00"),
                    ("rl1", "ros0", "02:00:00:00:01:01")]
    table = route_table(slice_json(sl["rl1"])["routes"])
    assert ([(m, ports, mac) for flows in table.values()
             for _, m, ports, mac in flows if mac]
            == [(["ip", "nw_dst=10.0.0.1"], ("h0",), "02:00:00:00:01:01")])
    # What the switch gives back, over OpenFlow 1.0 or 1.3, is what the
    # agent asked for.
    want = (PRIO_TO_RING, frozenset(["ip", "nw_dst=10.1.0.1"]),
            "mod_dl_dst:02:00:00:00:02:00,output:7")
    for dumped in ("mod_dl_dst:02:00:00:00:02:00,output:7",
                   "set_field:02:00:00:00:02:00->eth_dst,output:7"):
        f = parse_flow(" cookie=0xdac7000000000001, priority=100,ip,"
                       "nw_dst=10.1.0.1 actions=" + dumped)
        assert f is not None and f.compared() == want
    # The switch's OVSDB keeps it with the DCM's other marks.
    r = rings[("hl0", "d0-0")]
    assert r.external_ids()["daqctl-dl-dst"] == "02:00:00:00:02:00"
    assert "daqctl-dl-dst" not in rings[("hl0", "d1-0")].external_ids()
    assert r.key() != replace(r, dl_dst=None).key()


def test_switches_of_one_ovsdb_name_their_rings_apart() -> None:
    """Switches whose map entries name one OVSDB are bridges of one
    ovs-vswitchd (the leaf of several planes on one server), where port
    names are unique: a DCM's ring there is RING.BRIDGE; switches with
    their own OVSDB keep the ring's name.  The map refuses two such
    switches on one bridge, a port name both use, and a ring name that
    is no port name."""
    def shared(text: str, b1: str = "br1") -> str:
        return text.replace(
            "{name: hl0, role: leaf, plane: 0}",
            "{name: hl0, role: leaf, plane: 0, db: 'unix:/r/db.sock'}"
        ).replace(
            "{name: hl1, role: leaf, plane: 1}",
            "{name: hl1, role: leaf, plane: 1, db: 'unix:/r/db.sock', "
            "bridge: %s}" % b1)
    base = fabric_yaml(planes=2, spines=1, hlt=1, dcms_per_host=2)
    apart = base.replace('"hl1:h0"', '"hl1:p1h0"').replace(
        '"hl1:u0"', '"hl1:p1u0"')
    st = parse(shared(apart))
    assert st.sharing_db() == {"hl0", "hl1"}
    sl = slices(st, assign(st, {}))
    assert sorted(r.ring for r in sl["hl0"].rings) == [
        "d0-0.br0", "d0-1.br0"]
    assert sorted(r.ring for r in sl["hl1"].rings) == [
        "d0-0.br1", "d0-1.br1"]
    # The DCM is the same but for its ring's name.
    r = sl["hl1"].rings[0]
    assert replace(r, ring=r.name) == replace(
        next(d.dcm for d in st.dcms if d.name == r.name), egress=r.egress)
    # Without a shared OVSDB: the rings' own names.
    plain = slices(parse(base), {})
    assert sorted(r.ring for r in plain["hl1"].rings) == ["d0-0", "d0-1"]
    # One bridge for both, and a port both have (h0).
    msgs = refused(shared(base, b1="br0"))
    assert any("share db unix:/r/db.sock and bridge br0" in m
               for m in msgs), msgs
    assert any("both have a port h0" in m for m in msgs), msgs
    # A ring whose name with the bridge is too long for a port.
    long = "r" * 62
    msgs = refused(shared(apart.replace(
        "{name: d0-0, host: hlt0,", "{name: d0-0, ring: %s, host: hlt0,"
        % long)))
    assert any("its ring %s.br0 is not a port name" % long in m
               for m in msgs), msgs


def test_routes_fall_back_on_the_other_spines_of_their_plane() -> None:
    """A ROS leaf's route of a DCM: its assigned spine's uplink first,
    then the uplinks to the plane's other spines (a fast_failover group);
    the DCMs of one spine spread their first backup over the others.  A
    spine's route has no backup link (one link to the HLT leaf), only
    its detours through the plane's other leaves."""
    st = parse(fabric_yaml(planes=2, spines=4, hlt=2, dcms_per_host=12))
    asg = assign(st, {})
    sl = slices(st, asg)
    first: Dict[str, Set[str]] = {}
    for d in st.dcms:
        a = asg[d.name]
        up = next(r for r in sl["rl%d" % a.plane].routes
                  if r.dcm == d.name)
        spines = ["sp%d-%d" % (a.plane, k) for k in range(4)]
        order = [a.spine] + backup_spines(spines, a.spine, d.name)
        assert sorted(order) == spines
        assert up.ports == tuple("u%s" % s[-1] for s in order)
        first.setdefault(a.spine, set()).add(order[1])
        dn = next(r for r in sl[a.spine].routes if r.dcm == d.name)
        assert dn.backups and all(b.startswith(BOUNCE)
                                  for b in dn.backups)
    # 48 DCMs on 8 spines: the DCMs of most spines fall back on more
    # than one other spine.
    assert sum(len(v) > 1 for v in first.values()) >= 6, first


def test_one_spine_per_plane_means_no_backup() -> None:
    st = parse(fabric_yaml(planes=2, spines=1, hlt=1, dcms_per_host=2))
    sl = slices(st, assign(st, {}))
    assert all(r.backups == () for s in sl.values() for r in s.routes)
    assert backup_spines(["a"], "a", "d") == []


def test_one_switch_slice_is_its_part_of_all_slices() -> None:
    """What an agent computes (slices(..., only=NODE)) is what the whole
    fabric's slices give that node, before and after a failure."""
    st = parse(fabric_yaml(planes=2, spines=2, hlt=2, dcms_per_host=3))
    a1 = assign(st, {})
    a2 = assign(st, a1, {("rl0", "u0")})
    assert a2 != a1
    for asg in (a1, a2):
        full = slices(st, asg)
        for name in full:
            one = slices(st, asg, name)
            assert one[name] == full[name], name
            assert all(not (s.rings or s.routes) for n, s in one.items()
                       if n != name)


def test_routes_towards_the_ros_follow_each_dcm() -> None:
    """The example (four-tuple DCMs on one HLT host, two ROS hosts with
    addresses, two spines): the way back from each DCM leaves the HLT
    leaf towards the DCM's spine, at a priority below its ring's flows;
    each spine and the ROS leaf route each ROS host's /32; after a move
    both directions follow the DCM."""
    st = FabricMapReader(str(EXAMPLE)).read()
    asg = assign(st, {})
    up = {"spine1": "up1", "spine2": "up2"}
    sl = slices(st, asg)
    hl = [r for r in sl["hlt-leaf1"].routes if r.dcm]
    assert sorted(r.dcm for r in hl) == ["dcm1", "dcm2", "dcm3", "dcm4"]
    other = {"spine1": "up2", "spine2": "up1"}
    for r in hl:
        # Up to its spine, or while that uplink is not live the other's.
        assert r.ports == (up[asg[r.dcm].spine], other[asg[r.dcm].spine])
        assert r.priority == PRIO_FROM_DCM < PRIO_ROUTE
    table = route_table([{"dcm": r.dcm, "match": r.match, "port": r.port,
                          "backups": list(r.backups),
                          "priority": r.priority, "host": r.host}
                         for r in hl])
    flows = sorted(table.values())
    # What dcm1 (tcp *:* -> 10.1.0.1:9001) sends: from 10.1.0.1:9001.
    sp = asg["dcm1"].spine
    assert [(99, ["tcp", "nw_src=10.1.0.1", "tp_src=9001"],
             (up[sp], other[sp]), "")] in flows
    for sp in ("spine1", "spine2"):
        hosts = [(r.host, r.match, r.port) for r in sl[sp].routes
                 if not r.dcm]
        assert hosts == [("ros1", "ip:10.0.0.1", "down1"),
                         ("ros2", "ip:10.0.0.2", "down1")]
    rl = [(r.host, r.port) for r in sl["ros-leaf1"].routes if r.host]
    assert rl == [("ros1", "h1"), ("ros2", "h2")]
    assert route_matches("ip:10.0.2.0/24") == [["ip",
                                                "nw_dst=10.0.2.0/24"]]
    assert route_matches("from ip:10.1.0.7") == [["ip",
                                                  "nw_src=10.1.0.7"]]
    # spine1's link to the HLT leaf fails: its DCMs move to spine2, both
    # ways.
    moved = assign(st, asg, {("hlt-leaf1", "up1")})
    sl2 = slices(st, moved)
    assert all(r.port == "up2" for r in sl2["hlt-leaf1"].routes if r.dcm)
    assert all(r.port == "up2" for r in sl2["ros-leaf1"].routes if r.dcm)
    # A slice kept by an older agent (no priority, no host) still loads.
    old = route_table([{"dcm": "dcm1", "match": "ip:10.1.0.1",
                        "port": "up1"}])
    assert list(old.values()) == [[(PRIO_ROUTE, ["ip", "nw_dst=10.1.0.1"],
                                    ("up1",), "")]]


def test_egress_max_rate_in_the_fabric() -> None:
    """A fabric map's egress-max-rate and egress-max-burst-bytes reach the
    fabric database's DCM row (schema 1.3.0), and from it and from a
    slice the agents' rings, bound to their host's leaf port; the DCMs of
    one host must give the same."""
    import json
    from types import SimpleNamespace
    from ovs_daqring.fabric import schema_path
    from ovs_daqring.fabric.flows import dcm_json, dcm_of_json
    from ovs_daqring.fabric.rows import dcm_columns, dcm_from_fabric_row
    st = parse(fabric_yaml(dcms_per_host=2)
               + "defaults: {rate: 1gbit, steering: bound, "
               "egress-max-rate: 1gbit, egress-max-burst-bytes: 9000}\n")
    d = st.dcms[0]
    assert d.dcm.options()["egress-max-rate"] == "1000000000"
    assert d.dcm.options()["egress-max-burst-bytes"] == "9000"
    cols = dcm_columns(d)
    assert (cols["egress_max_rate"], cols["egress_max_burst_bytes"]) == (
        10**9, 9000)
    with open(schema_path()) as f:
        schema = json.load(f)
    # Since 1.3.0.
    assert tuple(map(int, schema["version"].split("."))) >= (1, 3, 0)
    assert set(cols) <= set(schema["tables"]["DCM"]["columns"])
    back = dcm_from_fabric_row(SimpleNamespace(name=d.name, **cols),
                               d.dcm.egress)
    assert back.key() == d.dcm.key()
    assert dcm_of_json(dcm_json(d.dcm)).key() == d.dcm.key()
    # A slice kept by an agent of before 1.3.0: no share.
    old = {k: v for k, v in dcm_json(d.dcm).items()
           if not k.startswith("egress_max")}
    assert "egress-max-rate" not in dcm_of_json(old).options()
    # On its leaf, each ring is bound to its host's port with the share.
    sl = slices(st, assign(st, {}))
    rings = [r for s in sl.values() for r in s.rings
             if r.name in ("d0-0", "d0-1")]
    # (On the host's leaf of each of the two planes.)
    assert len(rings) == 4
    assert [(r.egress, r.options()["egress"],
             r.options()["egress-max-rate"]) for r in rings] == [
        ("h0", "h0", "1000000000")] * 4
    text = fabric_yaml(dcms_per_host=2).replace(
        "{name: d0-1, host: hlt0,",
        "{name: d0-1, host: hlt0, steering: bound, egress-max-rate: 2gbit,")
    text += "defaults: {steering: bound, egress-max-rate: 1gbit}\n"
    assert any("the DCMs of host hlt0's port" in p and "DCM d0-1" in p
               for p in refused(text)), refused(text)
    assert any("it needs 'steering: bound'" in p for p in refused(
        fabric_yaml() + "defaults: {egress-max-rate: 1gbit}\n"))


def test_max_burst_bytes_in_the_fabric() -> None:
    """A fabric map's max-burst-bytes reaches the fabric database's DCM
    row, and from it and from a slice the agents' rings."""
    import json
    from types import SimpleNamespace
    from ovs_daqring.fabric import schema_path
    from ovs_daqring.fabric.flows import dcm_json, dcm_of_json
    from ovs_daqring.fabric.rows import dcm_columns, dcm_from_fabric_row
    st = parse(fabric_yaml(dcms_per_host=2)
               + "defaults: {rate: 1gbit, max-burst-bytes: 9000}\n")
    d = st.dcms[0]
    assert d.dcm.options()["max-burst-bytes"] == "9000"
    cols = dcm_columns(d)
    assert cols["max_burst_bytes"] == 9000
    with open(schema_path()) as f:
        schema = json.load(f)
    assert set(cols) <= set(schema["tables"]["DCM"]["columns"])
    back = dcm_from_fabric_row(SimpleNamespace(name=d.name, **cols),
                               d.dcm.egress)
    assert back.key() == d.dcm.key()
    assert dcm_of_json(dcm_json(d.dcm)).key() == d.dcm.key()
    assert any("out of range 3084..16777216" in p for p in refused(
        fabric_yaml() + "defaults: {rate: 1gbit, max-burst-bytes: 100}\n"))


def test_next_return_is_when_the_plan_would_change() -> None:
    """planner.next_return(): the first time plan() moves a DCM home
    with unchanged inputs -- a planner that looks again only then plans
    the same as one that looks at every tick."""
    st = parse(fabric_yaml(planes=1, spines=2, hlt=1, dcms_per_host=4,
                           hold_down=10))
    t0 = 1000000
    a1 = assign(st, {}, now=t0)
    # Nobody away: nothing changes by itself.
    assert next_return(st, a1, set(), {}) is None
    down = {("hl0", "u1")}                      # hl0 - sp0-1
    a2 = assign(st, a1, down, now=t0 + 1000)
    # Away, but home is down: not until a port changes.
    assert next_return(st, a2, down, {}) is None
    # Back up at t0 + 5 s: the hold-down runs from then.
    back = {("hl0", "u1"): t0 + 5000}
    due = next_return(st, a2, set(), back)
    assert due == t0 + 15000
    for t in range(t0 + 5000, due, 500):
        assert assign(st, a2, set(), back, now=t) == a2, t
    a3 = assign(st, a2, set(), back, now=due)
    assert a3 != a2 and all(a.home is None for a in a3.values())
    assert next_return(st, a3, set(), back) is None
    # Moved later than the port came up: from the move.
    back = {("hl0", "u1"): t0}
    assert next_return(st, a2, set(), back) == t0 + 1000 + 10000


def test_switches_that_route_by_name_monitor_every_dcm() -> None:
    """slice.monitored(): a ROS leaf and a spine hold every DCM (standing
    routes: they route every DCM of their plane), so that a new DCM
    needs no condition change before it is routed; a ROS leaf holds the
    assignments of its planes (which spine comes first), a spine none
    (its slice follows the map alone); an HLT leaf holds its hosts' DCMs
    and their assignments only."""
    st = parse(fabric_yaml(planes=2, spines=2, hlt=2, dcms_per_host=3))
    asg = assign(st, {})
    held = list(asg.values())
    ros = monitored("rl0", st.hosts, st.dcms, held)
    assert ros == {"DCM": [True], "Assignment": [["plane", "==", 0]]}
    spine = [a.spine for a in held if a.plane == 1][0]
    for some in (held, []):
        assert monitored(spine, st.hosts, st.dcms, some) == {
            "DCM": [True], "Assignment": [False]}
    hl = monitored("hl0", st.hosts, st.dcms, held)
    assert hl["DCM"] == [["host", "==", "hlt0"], ["host", "==", "hlt1"]]
    assert sorted(c[2] for c in hl["Assignment"] if c[0] == "dcm") \
        == sorted(d.name for d in st.dcms)


def test_every_spine_routes_every_dcm_of_its_plane() -> None:
    """Standing routes (slice.py): whatever the assignments, and before
    any, every spine of a plane routes every DCM of the plane down to
    its leaf, and every ROS leaf sends it up over every spine of the
    plane, the assigned spine first; a spine's slice never changes with
    the assignments, and a move between spines changes only the order
    of a leaf's buckets."""
    st = parse(fabric_yaml(planes=2, spines=3, hlt=2, dcms_per_host=3)
               .replace("{name: ros0, role: ros,",
                        "{name: ros0, role: ros, ip: 10.0.0.1,"))
    spines = st.spines()
    a1 = assign(st, {})
    for asg in ({}, a1):
        sl = slices(st, asg)
        for plane, sps in spines.items():
            for sp in sps:
                got = {r.dcm for r in sl[sp].routes if r.dcm}
                assert got == {d.name for d in st.dcms}, (sp, asg)
            ups = {r.dcm: r.ports for r in sl["rl%d" % plane].routes
                   if r.dcm}
            assert sorted(ups) == sorted(d.name for d in st.dcms)
            for n, ports in ups.items():
                assert sorted(ports) == ["u0", "u1", "u2"], (n, ports)
                a = asg.get(n)
                if a is not None and a.plane == plane:
                    assert ports[0] == "u%s" % a.spine[-1]
    # A move between spines (a spine's uplink at the ROS leaf down)
    # changes no spine's slice and only the order at the leaves.
    s1 = slices(st, a1)
    a2 = assign(st, a1, {("rl0", "u0")})
    assert a2 != a1
    s2 = slices(st, a2)
    for sps in spines.values():
        for sp in sps:
            assert s1[sp] == s2[sp], sp
    for sw in s1:
        assert ({(r.dcm, r.match, frozenset(r.ports)) for r in s1[sw].routes}
                == {(r.dcm, r.match, frozenset(r.ports))
                    for r in s2[sw].routes}), sw


class _Fabric:
    """What Agent.plan_pending() reads of its FabricDb."""

    def __init__(self, gen: int, planned: int, planner: str) -> None:
        self.row = SimpleNamespace(generation=gen,
                                   planned_generation=planned,
                                   planner=planner)

    def root(self) -> Any:
        return self.row


def test_agent_waits_a_bounded_time_for_a_generation_s_plan(
        monkeypatch: Any) -> None:
    """Agent.plan_pending(): a new generation is read once planned, or
    PLAN_WAIT_S after the agent saw it; at once when the fabric has no
    planner or the generation is planned."""
    now = [100.0]
    monkeypatch.setattr(fa.time, "monotonic", lambda: now[0])
    agent = fa.Agent.__new__(fa.Agent)
    agent.unplanned = None
    agent.fabric = _Fabric(3, 2, "")                # no planner
    assert not agent.plan_pending()
    agent.fabric = _Fabric(3, 3, "spine1")          # planned
    assert not agent.plan_pending() and agent.unplanned is None
    assert agent.plan_wait_until() is None
    agent.fabric = _Fabric(4, 3, "spine1")
    assert agent.plan_pending()
    assert agent.plan_wait_until() == 100.0 + fa.PLAN_WAIT_S
    now[0] += fa.PLAN_WAIT_S - 0.1
    assert agent.plan_pending()
    now[0] += 0.1
    assert not agent.plan_pending()
    # Still not planned: no deadline in the past for the poll loop (the
    # agent would spin until the planner plans).
    assert agent.plan_wait_until() is None
    # Another generation: waits again, from when it was seen.
    agent.fabric = _Fabric(5, 3, "spine1")
    assert agent.plan_pending()
    agent.fabric = _Fabric(5, 5, "spine1")
    assert not agent.plan_pending() and agent.unplanned is None
