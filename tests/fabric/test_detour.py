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

"""Detours (fabric/slice.py, fabric.rst "Detours"): a spine whose link
down to a leaf is dead bounces what it routes there through another
leaf, which sends it up to another spine; a second bounce is dropped
and counted.  Pure: the slices, their OpenFlow flows and groups as the
reconcile core makes them, and a model of the fabric's forwarding over
the slices (first live port of a route; OVS's drop of an output to the
input port) that checks the invariant on every single link failure and
the loop bound on every pair.  No machine."""

import itertools
import textwrap
from typing import Dict, List, Optional, Set, Tuple

from ovs_daqring.daqctl.flowsync import FlowSync, route_group, route_groups
from ovs_daqring.daqctl.openflow import (BOUNCE, BOUNCE_VID, BOUNCED_MAC,
                                         RESUME, port_actions)
from ovs_daqring.fabric.fabmap import FabricMapReader
from ovs_daqring.fabric.flows import route_table, slice_json
from ovs_daqring.fabric.model import FabricState
from ovs_daqring.fabric.planner import plan
from ovs_daqring.fabric.slice import (BOUNCED, FROM, PRIO_BOUNCED,
                                      PRIO_REBOUNCED, PRIO_ROUTE, Route,
                                      Slice, slices)

EXAMPLE_LIKE = """\
fabric:
  switches:
    - {name: ros-leaf1, role: leaf, plane: 0}
    - {name: hlt-leaf1, role: leaf, plane: 0}
    - {name: spine1, role: spine, plane: 0}
    - {name: spine2, role: spine, plane: 0}
  links:
    - {a: "ros-leaf1:up1", b: "spine1:down1"}
    - {a: "ros-leaf1:up2", b: "spine2:down1"}
    - {a: "hlt-leaf1:up1", b: "spine1:down2"}
    - {a: "hlt-leaf1:up2", b: "spine2:down2"}
  hosts:
    - {name: ros1, role: ros, ip: 10.0.0.1, ports: {0: "ros-leaf1:h1"},
       macs: {0: "02:00:00:00:01:01"}}
    - {name: hlt1, role: hlt, ip: 10.1.0.1, ports: {0: "hlt-leaf1:h1"},
       macs: {0: "02:00:00:00:02:01"}}
dcms:
  - {name: dcm1, host: hlt1, tuples: ["*:*->10.1.0.1:9001"]}
  - {name: dcm2, host: hlt1, tuples: ["*:*->10.1.0.1:9002"]}
"""


def parse(text: str) -> FabricState:
    return FabricMapReader("m.yaml").parse(textwrap.dedent(text))


def wide(planes: int = 2, spines: int = 3, ros_leaves: int = 2,
         hlt_leaves: int = 2, dcms: int = 3) -> str:
    """Per plane 'ros_leaves' ROS leaves and 'hlt_leaves' HLT leaves,
    each with one host (ROS hosts with an address), cabled to every one
    of 'spines' spines."""
    sw, links, hosts, dl = [], [], [], []
    for p in range(planes):
        leaves = (["rl%d-%d" % (p, i) for i in range(ros_leaves)]
                  + ["hl%d-%d" % (p, i) for i in range(hlt_leaves)])
        for leaf in leaves:
            sw.append("    - {name: %s, role: leaf, plane: %d}" % (leaf, p))
        for s in range(spines):
            sw.append("    - {name: sp%d-%d, role: spine, plane: %d}"
                      % (p, s, p))
            for leaf in leaves:
                links.append('    - {a: "%s:u%d", b: "sp%d-%d:%s"}'
                             % (leaf, s, p, s, leaf))
    for i in range(ros_leaves):
        ports = ", ".join('%d: "rl%d-%d:h"' % (p, p, i)
                          for p in range(planes))
        hosts.append("    - {name: ros%d, role: ros, ip: 10.0.0.%d, "
                     "ports: {%s}}" % (i, i + 1, ports))
    for i in range(hlt_leaves):
        ports = ", ".join('%d: "hl%d-%d:h"' % (p, p, i)
                          for p in range(planes))
        hosts.append("    - {name: hlt%d, role: hlt, ports: {%s}}"
                     % (i, ports))
        for k in range(dcms):
            dl.append("  - {name: d%d-%d, host: hlt%d, ip: 10.1.%d.%d}"
                      % (i, k, i, i, k + 1))
    return ("fabric:\n  switches:\n%s\n  links:\n%s\n  hosts:\n%s\n"
            "dcms:\n%s\n" % ("\n".join(sw), "\n".join(links),
                             "\n".join(hosts), "\n".join(dl)))


def assigned(st: FabricState) -> Dict[str, object]:
    new, _ = plan(st, {}, set(), {}, 1000000)
    return new  # type: ignore[return-value]


# ====================================================== the slices' routes
def test_a_spines_route_down_detours_through_the_other_leaf() -> None:
    """The emulator's shape (one ROS leaf, one HLT leaf, two spines): a
    spine's route down to a leaf falls back on bouncing to the other
    leaf, the one the packet usually came from."""
    st = parse(EXAMPLE_LIKE)
    sl = slices(st, assigned(st))
    for sp in ("spine1", "spine2"):
        by = {(r.dcm or r.host): r for r in sl[sp].routes}
        assert by["dcm1"].ports == ("down2", BOUNCE + "down1")
        assert by["dcm2"].ports == ("down2", BOUNCE + "down1")
        assert by["ros1"].ports == ("down1", BOUNCE + "down2")


def test_a_leaf_sends_what_a_spine_bounced_up_to_the_other_spines() -> None:
    st = parse(EXAMPLE_LIKE)
    sl = slices(st, assigned(st))
    for leaf in ("ros-leaf1", "hlt-leaf1"):
        det = [r for r in sl[leaf].routes if r.key.startswith("detour/")]
        got = {(r.match, r.ports, r.priority) for r in det}
        assert got == {
            (BOUNCED + "up1", (RESUME + "up2",), PRIO_BOUNCED),
            (BOUNCED + "up2", (RESUME + "up1",), PRIO_BOUNCED),
            # The loop bound: a second bounce is dropped, counted.
            ("rebounced up1", ("",), PRIO_REBOUNCED),
            ("rebounced up2", ("",), PRIO_REBOUNCED)}
        assert PRIO_REBOUNCED > PRIO_BOUNCED > PRIO_ROUTE


def test_detours_as_openflow() -> None:
    """The flows and groups the reconcile core makes of them: the spine's
    group tags the bounce and clears in_port (OVS drops an output to the
    input port, and the bounce usually goes back where it came from);
    the leaf matches the tag on each uplink, takes it off, marks the
    source MAC and outputs up; a tagged and marked packet is dropped."""
    st = parse(EXAMPLE_LIKE)
    sl = slices(st, assigned(st))
    of = {"down1": 1, "down2": 2}
    spine = route_table(slice_json(sl["spine1"])["routes"])
    ids, _ = route_groups(spine, of, None)
    assert set(ids) == {("down2", BOUNCE + "down1"),
                        ("down1", BOUNCE + "down2")}
    g = route_group(("down2", BOUNCE + "down1"), of)
    assert g == ("ff", (("2", "output:2"),
                        ("1", "mod_vlan_vid:%d,load:0->NXM_OF_IN_PORT[],"
                              "output:1" % BOUNCE_VID)))
    of = {"up1": 3, "up2": 4, "h1": 5}
    leaf = route_table(slice_json(sl["ros-leaf1"])["routes"])
    ids, _ = route_groups(leaf, of, None)
    flows = set()
    for route in leaf.values():
        got = FlowSync.route_flows(route, of, ids)
        assert got is not None
        flows |= {(p, frozenset(m), a) for p, m, a in got}
    vlan = "dl_vlan=%d" % BOUNCE_VID
    assert (PRIO_BOUNCED, frozenset({"in_port=3", vlan}),
            "strip_vlan,mod_dl_src:%s,output:4" % BOUNCED_MAC) in flows
    assert (PRIO_REBOUNCED, frozenset({"in_port=4", vlan,
                                       "dl_src=" + BOUNCED_MAC}),
            "drop") in flows
    # A detour whose uplink is not on the bridge has no flows yet.
    assert FlowSync.route_flows(leaf[next(
        c for c, r in leaf.items() if "in_port=up1" in r[0][1])],
        {"up2": 4}, {}) is None


def test_one_group_per_spine_and_leaf_whatever_the_dcms() -> None:
    """Linear: a spine's detours are one group per leaf it is cabled to,
    shared by every route down to that leaf; a leaf's are two flows per
    uplink."""
    for dcms in (1, 20):
        st = parse(wide(planes=1, spines=3, ros_leaves=2, hlt_leaves=2,
                        dcms=dcms))
        sl = slices(st, assigned(st))
        for sp in ("sp0-0", "sp0-1", "sp0-2"):
            of = {"rl0-0": 1, "rl0-1": 2, "hl0-0": 3, "hl0-1": 4}
            ids, _ = route_groups(
                route_table(slice_json(sl[sp])["routes"]), of, None)
            assert len(ids) == 4, (dcms, sp, ids)
        det = [r for r in sl["rl0-0"].routes if r.key.startswith("detour/")]
        assert len(det) == 2 * 3


def test_no_detour_with_one_spine() -> None:
    st = parse(wide(planes=1, spines=1, ros_leaves=1, hlt_leaves=1))
    sl = slices(st, assigned(st))
    assert all(r.backups == () for s in sl.values() for r in s.routes)


def test_a_switchs_own_slice_has_its_detours() -> None:
    st = parse(wide())
    asg = assigned(st)
    full = slices(st, asg)
    for name in full:
        assert slices(st, asg, name)[name] == full[name], name


# ================================================= a model of the fabric
# (kind, name, ROS host): ("dcm", DCM, ""), ("host", "", ROS host), or
# ("from", DCM, ROS host): a DCM's way back (its leaf's FROM route, then
# the routes towards the ROS host).
Packet = Tuple[str, str, str]  # noqa: E305


class Fabric:
    """The slices' forwarding: at each switch the route that matches
    (the highest priority), its first live port; a tagged packet at a
    leaf takes the detour routes of its uplink.  'dead': links (each
    end's switch and port) that are down, seen at both ends."""

    def __init__(self, st: FabricState, sl: Dict[str, Slice],
                 dead: Set[Tuple[str, str]]) -> None:
        self.sl = sl
        self.dead = dead
        self.peer: Dict[Tuple[str, str], Tuple[str, str]] = {}
        for lk in st.links:
            a, b = (lk.a_switch, lk.a_port), (lk.b_switch, lk.b_port)
            self.peer[a], self.peer[b] = b, a
            if a in dead or b in dead:
                dead |= {a, b}

    def live(self, sw: str, port: str) -> bool:
        return (sw, port) not in self.dead

    def route(self, sw: str, pkt: Packet, in_port: Optional[str],
              tagged: bool, marked: bool) -> Optional[Route]:
        kind, name, host = pkt
        best = None
        for r in self.sl[sw].routes:
            if r.match.startswith((BOUNCED, "rebounced ")):
                if not tagged or r.match.split(" ", 1)[1] != in_port:
                    continue
                if r.match.startswith("rebounced ") and not marked:
                    continue
            elif kind == "dcm" and (r.dcm != name
                                    or r.match.startswith(FROM)):
                continue
            elif kind == "from" and not (
                    (r.dcm == name and r.match.startswith(FROM))
                    or (r.host == host and r.host)):
                continue
            elif kind == "host" and r.host != host:
                continue
            if best is None or r.priority > best.priority:
                best = r
        return best

    def send(self, sw: str, pkt: Packet, port: str) -> str:
        """Where 'pkt', from a host's 'port' of leaf 'sw', ends: "at
        SWITCH" (delivered there: its ring, or the ROS host's port), or
        why it is lost; and how many bounces it took (" bounced N")."""
        in_port: Optional[str] = port
        tagged = marked = False
        bounces = 0
        for _ in range(20):
            kind, name, _ = pkt
            if kind == "dcm" and any(d.name == name
                                     for d in self.sl[sw].rings):
                return "at %s bounced %d" % (sw, bounces)
            r = self.route(sw, pkt, in_port, tagged, marked)
            if r is None:
                return "no route at %s" % sw
            if r.port == "":
                return "dropped at %s (second bounce)" % sw
            live = [p for p in r.ports if self.live(sw, port_actions(p)[1])]
            if not live:
                return "no live port at %s" % sw
            pre, out = port_actions(live[0])
            if pre.startswith("mod_vlan_vid"):
                tagged, in_port = True, None
                bounces += 1
            elif pre.startswith("strip_vlan"):
                tagged, marked = False, True
            if out == in_port:
                return "output to in_port at %s" % sw
            if (sw, out) not in self.peer:
                # A host's port: delivered.
                return "at %s bounced %d" % (sw, bounces)
            sw, in_port = self.peer[(sw, out)]
        return "loops"


def _leaf_links(st: FabricState) -> List[Tuple[str, str]]:
    return [(lk.a_switch, lk.a_port) for lk in st.links]


def _flows(st: FabricState) -> List[Tuple[str, Packet, str]]:
    """Every (leaf, packet, host port) a host sends: each ROS host to
    each DCM, each DCM's way back to each ROS host, in each plane."""
    out = []
    hlt = {h.name: h for h in st.hosts if h.role == "hlt"}
    for h in st.hosts:
        if h.role != "ros":
            continue
        for _, leaf, port in h.attachments:
            for d in st.dcms:
                out.append((leaf, ("dcm", d.name, ""), port))
    for d in st.dcms:
        for _, leaf, port in hlt[d.host].attachments:
            for r in st.hosts:
                if r.role == "ros" and r.ip:
                    out.append((leaf, ("from", d.name, r.name), port))
    return out


def test_every_single_link_failure_loses_nothing() -> None:
    """The invariant: with any one leaf-spine link down (seen at both
    ends), every packet of every DCM's path, both ways, reaches its
    leaf, whatever the assignment (the planner has not moved anything
    yet), bounced at most once; with none down, none is bounced."""
    for text in (EXAMPLE_LIKE, wide()):
        st = parse(text)
        sl = slices(st, assigned(st))
        for sw, pkt, port in _flows(st):
            got = Fabric(st, sl, set()).send(sw, pkt, port)
            assert got.startswith("at ") and got.endswith("bounced 0"), \
                (pkt, got)
        for link in _leaf_links(st):
            fab = Fabric(st, sl, {link})
            for sw, pkt, port in _flows(st):
                got = fab.send(sw, pkt, port)
                assert got.startswith("at "), (link, sw, pkt, got)


def test_two_failures_never_loop() -> None:
    """Any two links down: every packet is delivered or lost where a
    flow counts it (the second bounce's drop) or no path is live; none
    circles (the model gives up after 20 hops), none is sent back to its
    input port (which OVS would drop uncounted)."""
    st = parse(wide(planes=1, spines=2, ros_leaves=2, hlt_leaves=1,
                    dcms=2))
    sl = slices(st, assigned(st))
    for pair in itertools.combinations(_leaf_links(st), 2):
        fab = Fabric(st, sl, set(pair))
        for sw, pkt, port in _flows(st):
            got = fab.send(sw, pkt, port)
            assert got.startswith(("at ", "dropped at ", "no live port")), \
                (pair, sw, pkt, got)
