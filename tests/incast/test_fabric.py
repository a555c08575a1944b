"""Tests of daq-incast --topology fabric (python/ovs_daqring/incast/
fabric/): the options it refuses, the plan of the emulated leaf-spine,
the fabric map of each mode as the fabric's own reader, planner and
slices take it (the static split of an HLT host's link over its rings),
the limit of thesis §6.2.2, and, as root, a run through a real fabric
(three switches without DPDK, a 3-member fabric database and an agent per
switch) asserting outcomes only: every event delivered, the switches
programmed as each mode's map says, every loss counted, nothing left
behind.

Run: /usr/bin/python3 -m pytest -q tests/incast/test_fabric.py
"""

import ipaddress
import json
import os
import select
import signal
import subprocess
import sys
import time
from typing import Any, Dict, List

import pytest

from ovs_daqring.daqctl.openflow import port_actions, port_name, set_dl_dst
from ovs_daqring.fabric.flows import route_table
from ovs_daqring.fabric.fabmap import FabricMapReader
from ovs_daqring.fabric.planner import plan as fabric_plan
from ovs_daqring.fabric.slice import PRIO_FROM_DCM, PRIO_ROUTE, slices
from ovs_daqring.hosts import ConfigError, HostInfo
from ovs_daqring.incast import config, options, validation
from ovs_daqring.incast.fabric.failover import (failover_link, recovery,
                                                resolve_target, timeline)
from ovs_daqring.incast.fabric.limit import fabric_limit
from ovs_daqring.incast.fabric.maps import fabric_map
from ovs_daqring.incast.fabric.netns import host_arp_state, host_scripts
from ovs_daqring.incast.fabric.plan import (NET, make_fabric_plan, plane_name,
                                            ros_host_prefix)
from ovs_daqring.incast.fabric.routes import (bound_drains, check_routes,
                                              expected_flows, fabric_flows,
                                              no_flood_ports, normal_packets)
from ovs_daqring.incast.fabric.runner import FabricRunner
from ovs_daqring.incast.fabric.summary import format_fabric
from ovs_daqring.incast.modes import ring_params

from incast_helpers import fabric_run_skip_reason

pytestmark = pytest.mark.machine

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(os.path.dirname(HERE), "utilities", "daq-incast")
OVS = os.path.join(os.path.dirname(HERE), "ovs")
PYTHON = "/usr/bin/python3"


def host() -> HostInfo:
    return HostInfo(is_root=True, cpus=[0, 1], hugepages_free_mb=4096,
                    hugetlbfs_mounted=True)


def cfg(*argv: str) -> config.Config:
    return validation.validate(options.parse_args(
        ["--topology", "fabric"] + list(argv)), host(), check_env=False)


# =============================================================== options
@pytest.mark.parametrize("argv,words", [
    (["--spines", "3"], "at most 2 planes of 2 spines"),
    (["--planes", "3"], "at most 2 planes of 2 spines"),
    (["--spines", "0"], "must be positive"),
    (["--dcms", "3", "--hlt-hosts", "2"], "not a multiple of --hlt-hosts"),
    (["--hlt-hosts", "0"], "--hlt-hosts must be"),
    (["--hlt-hosts", "9", "--dcms", "9"], "--hlt-hosts must be"),
    (["--ros-leaves", "5"], "--ros-leaves must be"),
    (["--ros", "2", "--ros-leaves", "3"], "fewer ROS than --ros-leaves"),
    (["--dcms", "33"], "at most 32 in a fabric"),
    (["--fabric-dpdk", "off"], "no daqrings without DPDK"),
    (["--sweep", "ring-size=64,128"], "--sweep is not supported"),
    (["--shaper", "packets"], "shapes daqrings by bytes"),
    (["--poll-interval", "500"], "shapes daqrings by bytes"),
    (["--modes", "stock,bogus"], "unknown mode 'bogus'"),
    (["--failover", "2/5"], "needs --spines 2"),
    (["--spines", "2", "--failover", "5/2"], "0 < DOWN < UP"),
    (["--spines", "2", "--failover", "soon"], "DOWN/UP in seconds"),
    (["--ros", "300", "--ros-per-host", "255"],
     "--ros-per-host 255: at most 254 in a fabric"),
])
def test_bad_fabric_options_are_refused(argv: List[str], words: str) -> None:
    with pytest.raises(ConfigError) as e:
        cfg(*argv)
    assert words in str(e.value)


@pytest.mark.parametrize("argv", [
    ["--hlt-hosts", "2"], ["--spines", "1", "--ros-leaves", "2"],
    ["--fabric-db-members", "1"], ["--fabric-dpdk", "off"],
    ["--modes", "daqring-unshaped"], ["--failover", "1/2"], ["--hold"],
])
def test_fabric_options_need_the_fabric(argv: List[str]) -> None:
    ns = options.parse_args(argv)
    with pytest.raises(ConfigError):
        validation.validate(ns, host(), check_env=False)


def test_script_exits_2_on_a_bad_topology() -> None:
    p = subprocess.run([PYTHON, SCRIPT, "--topology", "fabric", "--spines",
                        "3", "--dry-run"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2
    assert "daq-incast: error:" in p.stderr and "spine" in p.stderr
    p = subprocess.run([PYTHON, SCRIPT, "--topology", "fabric",
                        "--fabric-db-members", "2", "--dry-run"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2


def test_dry_run_prints_the_limit_and_the_sharing() -> None:
    p = subprocess.run([PYTHON, SCRIPT, "--topology", "fabric", "--ros",
                        "6", "--dcms", "4", "--hlt-hosts", "2",
                        "--dry-run"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert "limit (thesis 6.2.2)" in p.stdout
    assert "N_H 2, N_R 6" in p.stdout
    assert "/ 2 DCMs" in p.stdout
    p = subprocess.run([PYTHON, SCRIPT, "--topology", "fabric", "--ros",
                        "6", "--dcms", "4", "--hlt-hosts", "2",
                        "--ring-sharing", "shared", "--dry-run"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "ring sharing: shared: 2 DCMs bound to their host's link" \
        in p.stdout, p.stdout


@pytest.mark.parametrize("argv,words", [
    (["--host-arp", "off"], "stock, credits switch by MAC through the "
     "NORMAL action"),
    (["--host-arp", "off", "--modes", "daqring,credits"],
     "--host-arp off: credits switch by MAC"),
    (["--host-arp", "off", "--modes", "stock"], "drop stock from --modes"),
    (["--host-arp", "off", "--fabric-dpdk", "off", "--modes", "stock"],
     "only daqring and daqring-unshaped route everything"),
    (["--host-arp", "bogus"], "invalid choice"),
])
def test_host_arp_off_refuses_the_modes_of_normal(argv: List[str],
                                                  words: str) -> None:
    """--host-arp off: hosts that do no ARP are reached only by the
    fabric's flows, which set the destination MAC; the modes that
    forward through the switches' NORMAL action are refused."""
    with pytest.raises((ConfigError, SystemExit)) as e:
        cfg(*argv)
    if e.type is ConfigError:
        assert words in str(e.value)


def test_host_arp_needs_the_fabric() -> None:
    with pytest.raises(ConfigError) as e:
        validation.validate(options.parse_args(
            ["--host-arp", "off", "--modes", "daqring"]), host(),
            check_env=False)
    assert "--host-arp needs --topology fabric" in str(e.value)
    # static is the default, on one switch too.
    c = validation.validate(options.parse_args(["--host-arp", "static"]),
                            host(), check_env=False)
    assert c.host_arp == "static"


@pytest.mark.parametrize("modes", ["daqring", "daqring-unshaped",
                                   "daqring,daqring-unshaped"])
def test_host_arp_off_with_the_ring_modes(modes: str) -> None:
    c = cfg("--host-arp", "off", "--modes", modes)
    assert c.host_arp == "off" and c.as_dict()["host_arp"] == "off"
    assert cfg("--modes", modes).host_arp == "static"


def test_script_exits_2_on_host_arp_off_where_it_cannot_be() -> None:
    for argv in (["--host-arp", "off", "--modes", "daqring"],
                 ["--topology", "fabric", "--host-arp", "off"],
                 ["--topology", "fabric", "--host-arp", "off", "--modes",
                  "daqring,stock"]):
        p = subprocess.run([PYTHON, SCRIPT, "--dry-run"] + argv,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, (argv, p.stdout, p.stderr)
        assert "daq-incast: error: --host-arp" in p.stderr, p.stderr
    p = subprocess.run([PYTHON, SCRIPT, "--topology", "fabric", "--ros",
                        "6", "--dcms", "4", "--modes", "daqring",
                        "--host-arp", "off", "--dry-run"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "host ARP: off (no ARP, no neighbour entries" in p.stdout
    p = subprocess.run([PYTHON, SCRIPT, "--topology", "fabric", "--ros",
                        "6", "--dcms", "4", "--dry-run"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "host ARP: static" in p.stdout


# ================================================================== plan
def test_plan_shape_and_names() -> None:
    c = cfg("--ros", "10", "--ros-per-host", "2", "--dcms", "6",
            "--hlt-hosts", "3", "--ros-leaves", "2")
    p = make_fabric_plan(4194304, c)
    names = {s.name for s in p.switches}
    assert names == {"ros-leaf0", "ros-leaf1", "hlt-leaf", "spine0"}
    assert len(p.ros_hosts) == 5 and len(p.hlt_hosts) == 3
    assert sorted(len(h.ips) for h in p.hlt_hosts) == [2, 2, 2]
    assert len(p.dcms) == 6
    assert len({d.ips[0] for d in p.dcms}) == 6
    assert sorted(p.ros_ips) == sorted(set(p.ros_ips))
    assert len(p.ros_ips) == 10
    # Port names are interface names in their switch's namespace.
    for s in p.switches:
        ports = [x.name for x in s.ports]
        assert len(ports) == len(set(ports))
        assert all(len(x) <= 15 for x in ports)
        ofports = [x.ofport for x in s.ports]
        assert len(ofports) == len(set(ofports))
    assert len(set(p.namespaces())) == len(p.namespaces())
    # Every leaf has a link to the spine; the ROS alternate over leaves.
    assert sorted(lk[0] for lk in p.links) == ["hlt-leaf", "ros-leaf0",
                                               "ros-leaf1"]
    assert sorted(p.ros_leaf_of.values()) == ["ros-leaf0"] * 3 + [
        "ros-leaf1"] * 2
    leaf = p.switch("hlt-leaf")
    assert leaf.dpdk and not p.switch("spine0").dpdk
    assert not any(s.dpdk for s in p.switches if s.name != "hlt-leaf")
    # The HLT hosts' ports model the shallow buffer (af_packet frames).
    assert all(x.frames == c.port_frames for x in leaf.ports
               if x.name.startswith("h"))
    # Its uplink's RX ring holds what the spine sends while the PMD is
    # away: deeper than a host port's (and a single queue pair).
    up = next(x for x in leaf.ports if x.name == "up0")
    assert up.frames > c.port_frames and up.dpdk_host(leaf.ns).qpairs == 1
    assert "framecnt=%d" % up.frames in up.dpdk_host(leaf.ns).devargs()


def test_two_planes_plan() -> None:
    """--planes 2: every switch once per plane (plane 0's names as with
    one plane, the other's prefixed), a host interface per plane cabled
    to that plane's leaf, every plane's HLT leaf with DPDK and a bridge
    of one ovs-vswitchd (one PMD for both: ports, rings and bridges named
    apart), and a map whose hosts list their port in each plane."""
    c = cfg("--ros", "6", "--dcms", "4", "--spines", "2", "--planes", "2",
            "--ros-leaves", "2", "--hlt-hosts", "2")
    p = make_fabric_plan(4194304, c)
    names = {s.name for s in p.switches}
    one = {"ros-leaf0", "ros-leaf1", "hlt-leaf", "spine0", "spine1"}
    assert names == one | {"p1-" + n for n in one}
    assert p.hlt_leaves == ["hlt-leaf", "p1-hlt-leaf"]
    assert p.host_devs == ["e0", "e1"]
    assert [s.name for s in p.switches if s.dpdk] == p.hlt_leaves
    assert all(s.plane == (1 if s.name.startswith("p1-") else 0)
               for s in p.switches)
    assert len(set(p.namespaces())) == len(p.namespaces())
    hl, hl1 = p.switch("hlt-leaf"), p.switch("p1-hlt-leaf")
    assert (hl1.ns, hl1.host_switch, hl1.bridge) == (hl.ns, "hlt-leaf",
                                                     "br1")
    assert (hl.host_switch, hl.bridge) == ("", "br0")
    assert p.shared_hlt
    # One process: its port names, OpenFlow numbers (af_packet vdev
    # names) and rings apart.
    both = hl.ports + hl1.ports
    assert len({x.name for x in both}) == len(both)
    assert len({x.ofport for x in both}) == len(both)
    assert {x.name for x in hl1.ports} == {"p1-h0", "p1-h1", "p1-up0",
                                           "p1-up1"}
    d = p.dcms[0]
    assert {p.ring_on(d, leaf) for leaf in p.hlt_leaves} == {
        "dcm0-ring.br0", "dcm0-ring.br1"}
    assert all(len(ns) <= 40 for ns in p.namespaces())
    # Links within a plane only.
    assert len(p.links) == 2 * 3 * 2
    for leaf, _, spine, _ in p.links:
        assert leaf.startswith("p1-") == spine.startswith("p1-")
    # A host's interface per plane, each cabled to that plane's leaf.
    for h in p.ros_hosts:
        for plane in (0, 1):
            leaf = p.switch(p.ros_leaf(h.ns, plane))
            port = next(x for x in leaf.ports if x.name == h.veth)
            assert (port.peer_ns, port.peer_port) == (h.ns, "e%d" % plane)
            assert port.to_host
    with pytest.raises(ValueError):
        fabric_map(p, None)
    doc = fabric_map(p, ring_params(c, "daqring"),
                     db="unix:/x/db.sock")
    assert {s["name"]: s["plane"] for s in doc["fabric"]["switches"]} == {
        s.name: s.plane for s in p.switches}
    assert {s["name"]: s.get("db") for s in doc["fabric"]["switches"]
            if s.get("db")} == {"hlt-leaf": "unix:/x/db.sock",
                                "p1-hlt-leaf": "unix:/x/db.sock"}
    hlt0 = next(h for h in doc["fabric"]["hosts"] if h["name"] == "hlt0")
    assert hlt0["ports"] == {0: "hlt-leaf:h0", 1: "p1-hlt-leaf:p1-h0"}
    # The fabric names the rings of the shared ovs-vswitchd apart, as
    # the emulator expects them.
    state = _state(doc)
    assert state.sharing_db() == {"hlt-leaf", "p1-hlt-leaf"}
    assign, _ = fabric_plan(state, {}, set(), {}, 0)
    sl = slices(state, assign)
    for leaf in p.hlt_leaves:
        assert sorted(r.ring for r in sl[leaf].rings) == sorted(
            p.ring_on(x, leaf) for x in p.dcms)
    # NORMAL's tree in each plane: its first spine.
    nf = no_flood_ports(p)
    assert sorted(nf) == sorted(
        [n for n in names if "leaf" in n] + ["spine1", "p1-spine1"])
    # The limit counts both planes' access links.
    lim = fabric_limit(c, p)
    assert lim["inputs"]["N_P"] == 2
    assert lim["limit_bps"] == 2 * c.hlt_hosts * c.link_rate_bps


# =================================================================== map
def _state(doc: Any) -> Any:
    return FabricMapReader("map").parse(json.dumps(doc))


@pytest.mark.parametrize("planes", [1, 2])
@pytest.mark.parametrize("mode", ["stock", "daqring"])
def test_map_gives_every_host_its_mac_per_plane(mode: str,
                                                planes: int) -> None:
    """Every host of every mode's map has, for each plane it is cabled
    to, the MAC of its interfaces (the same on each, as _setup_hosts
    sets them), unique in the plane; the fabric's reader takes it."""
    c = cfg("--ros", "6", "--dcms", "4", "--hlt-hosts", "2",
            "--ros-leaves", "2", "--planes", str(planes))
    p = make_fabric_plan(77, c)
    doc = fabric_map(p, ring_params(c, mode)
                     if mode == "daqring" else None,
                     db="unix:/x/db.sock")
    want = {p.ros_name(h): h.mac for h in p.ros_hosts}
    want.update({h.name: h.mac for h in p.hlt_hosts})
    hosts = doc["fabric"]["hosts"]
    assert sorted(h["name"] for h in hosts) == sorted(want)
    for h in hosts:
        assert h["macs"] == {pl: want[h["name"]] for pl in range(planes)}
        assert sorted(h["macs"]) == sorted(h["ports"])
    assert len(set(want.values())) == len(want)
    state = _state(doc)
    assert {h.name: h.macs for h in state.hosts} == {
        n: tuple((pl, m) for pl in range(planes)) for n, m in want.items()}


def test_fabric_flows_take_the_mac_the_last_hop_sets() -> None:
    """A flow that sets the destination MAC before its output (as
    ovs-ofctl prints it over OpenFlow 1.0 and 1.2+, before a port or a
    fast_failover group) has the MAC as a fourth element; check_routes
    names a last hop without it."""
    c = cfg("--ros", "2", "--dcms", "2", "--modes", "daqring")
    p = make_fabric_plan(77, c)
    leaf = p.switch("ros-leaf0")
    mac = p.ros_hosts[0].mac
    dump = ("cookie=0xdac7000000000002, n_packets=0, priority=100,ip,"
            "nw_dst=10.77.1.0/24 actions=mod_dl_dst:%s,output:h0\n"
            " cookie=0xdac7000000000003, n_packets=0, priority=100,ip,"
            "nw_dst=10.77.2.0/24 actions=set_field:%s->eth_dst,"
            "output:h0\n"
            " cookie=0xdac7000000000004, n_packets=0, priority=100,ip,"
            "nw_dst=10.77.0.1 actions=mod_dl_dst:%s,group:7\n"
            " cookie=0xdac7000000000005, n_packets=0, priority=100,ip,"
            "nw_dst=10.77.0.2 actions=output:up0\n" % (mac, mac, mac))
    groups = (" group_id=7,type=ff,bucket=bucket_id:0,watch_port:up0,"
              "actions=output:up0\n")
    assert fabric_flows(leaf, dump, groups) == [
        ["to", "10.77.0.1", "up0", mac], ["to", "10.77.0.2", "up0"],
        ["to", "10.77.1.0/24", "h0", mac],
        ["to", "10.77.2.0/24", "h0", mac]]
    want = expected_flows(p, {})
    assert want["ros-leaf0"] == sorted(
        ["to", ros_host_prefix(h.index), h.veth, h.mac]
        for h in p.ros_hosts)
    bare = {sw: [f[:3] for f in v] for sw, v in want.items()}
    msg = check_routes(p, bare, {})
    assert len(msg) == 1 and msg[0].startswith("ros-leaf0: missing")
    assert mac in msg[0]


@pytest.mark.parametrize("planes", [1, 2])
def test_host_scripts_static_and_off(planes: int) -> None:
    """--host-arp static: a permanent neighbour entry for every peer on
    every interface, ARP as Linux does it; off: ARP off on every
    interface and no neighbour entry at all."""
    argv = ["--ros", "6", "--dcms", "4", "--hlt-hosts", "2", "--modes",
            "daqring", "--planes", str(planes)]
    p = make_fabric_plan(77, cfg(*argv))
    static = host_scripts(cfg(*argv), p)
    off = host_scripts(cfg(*(argv + ["--host-arp", "off"])), p)
    assert [ns for ns, _, _ in static] == [ns for ns, _, _ in off] \
        == p.hosts_ns
    devs = p.host_devs
    ros = {h.ns for h in p.ros_hosts}
    for ns, script, neigh in static:
        assert "arp off" not in script and "neigh" not in script
        peers = (len(p.dcms) if ns in ros else len(p.ros_ips))
        lines = neigh.splitlines()
        assert len(lines) == peers * len(devs)
        assert all(ln.startswith("neigh replace ")
                   and ln.endswith(" nud permanent") for ln in lines)
    for (ns, script, neigh), (_, s_script, _) in zip(off, static):
        assert neigh == "" and "neigh" not in script
        lines = script.splitlines()
        for dev in devs:
            assert "ip link set %s arp off" % dev in lines
            # ARP is off before the interface is up.
            assert lines.index("ip link set %s arp off" % dev) < \
                lines.index("ip link set %s up" % dev)
        # Nothing else differs.
        assert [ln for ln in lines if "arp off" not in ln] == \
            s_script.splitlines()


def test_host_arp_state() -> None:
    """What a host's kernel holds of ARP: its fabric interfaces with ARP
    off, its IPv4 neighbour entries on them by state, and those that
    hold another MAC than its own."""
    own = "02:77:00:00:00:01"
    links = [{"ifname": "lo", "flags": ["LOOPBACK", "UP"]},
             {"ifname": "e0", "flags": ["BROADCAST", "NOARP", "UP"]},
             {"ifname": "e1", "flags": ["BROADCAST", "UP"]}]
    neighs = [{"dst": "10.77.1.1", "dev": "e0", "lladdr": own,
               "state": ["NOARP"]},
              {"dst": "10.77.1.2", "dev": "e0", "lladdr": own.upper(),
               "state": ["NOARP"]},
              {"dst": "10.77.2.1", "dev": "e1",
               "lladdr": "02:77:00:00:01:01", "state": ["PERMANENT"]},
              {"dst": "10.77.2.2", "dev": "e1", "state": ["INCOMPLETE"]},
              {"dst": "ff02::2", "dev": "e0", "lladdr": "33:33:00:00:00:02",
               "state": ["NOARP"]},
              {"dst": "10.0.0.1", "dev": "lo", "lladdr": "00:00:00:00:00:00",
               "state": ["NOARP"]}]
    assert host_arp_state(links, neighs, ["e0", "e1"], own) == {
        "arp_off": ["e0"],
        "neighbours": {"NOARP": 2, "PERMANENT": 1, "INCOMPLETE": 1},
        "peer_macs": 1}
    assert host_arp_state([], [], ["e0"], own) == {
        "arp_off": [], "neighbours": {}, "peer_macs": 0}


@pytest.mark.parametrize("mode", ["daqring", "daqring-unshaped"])
def test_ring_map_gives_rings_on_the_hlt_leaf_and_routes(mode: str) -> None:
    c = cfg("--ros", "8", "--dcms", "6", "--hlt-hosts", "2",
            "--ros-leaves", "2")
    p = make_fabric_plan(77, c)
    params = ring_params(c, mode)
    state = _state(fabric_map(p, params))
    assign, notes = fabric_plan(state, {}, set(), {}, 0)
    assert len(assign) == 6
    sl = slices(state, assign)
    rings = sl["hlt-leaf"].rings
    assert sorted(r.ring for r in rings) == sorted(p.ring_name(d)
                                                   for d in p.dcms)
    for d in p.dcms:
        r = next(x for x in rings if x.ring == p.ring_name(d))
        # Out of the port of the DCM's own HLT host.
        assert r.egress == d.veth
        assert r.match_text() == "ip:" + d.ips[0]
    # Towards the DCMs: one route per DCM on the spine and on each ROS
    # leaf, none on the HLT leaf (it holds the rings).
    names = sorted(p.dcm_name(d) for d in p.dcms)
    for name in ("spine0", "ros-leaf0", "ros-leaf1"):
        assert sorted(x.dcm for x in sl[name].routes if x.dcm) == names
        assert not sl[name].rings
    # Towards the ROS: the HLT leaf sends what each DCM sends up to its
    # spine (the DCM's match reversed, below the rings' priority), the
    # spine each ROS host's /24 down to its leaf, the leaf out of its
    # port.
    hl = sl["hlt-leaf"].routes
    assert sorted(x.dcm for x in hl) == names
    assert all(x.match == "from ip:" + d.ips[0] and x.port == "up0"
               and x.priority == PRIO_FROM_DCM < PRIO_ROUTE
               for d in p.dcms for x in hl if x.dcm == p.dcm_name(d))
    hosts = {"ros%d" % h.index: h for h in p.ros_hosts}
    assert len(hosts) == 8
    spine = {x.host: x for x in sl["spine0"].routes if not x.dcm}
    assert sorted(spine) == sorted(hosts)
    for name, h in hosts.items():
        leaf = p.ros_leaf_of[h.ns]
        assert all(ipaddress.ip_address(a) in ipaddress.ip_network(
            spine[name].match[3:]) for a in h.ips)
        assert spine[name].port == "dn%d" % int(leaf[-1])
        own = [x for x in sl[leaf].routes if x.host == name]
        assert [(x.match, x.port) for x in own] == [(spine[name].match,
                                                     h.veth)]
        other = "ros-leaf%d" % (1 - int(leaf[-1]))
        assert not [x for x in sl[other].routes if x.host == name]
    by_port = {}
    for r in rings:
        by_port.setdefault(r.egress, []).append(r)
    if mode == "daqring":
        # The static split: the rings of one host together stay within
        # what one ring alone would get (--ring-rate-fraction x link),
        # and their bursts within one ring's.
        for port, rs in by_port.items():
            assert len(rs) == 3
            assert sum(r.max_rate for r in rs) <= c.max_rate_bps
            assert sum(r.max_rate for r in rs) > 0.99 * c.max_rate_bps
            assert sum(r.max_burst for r in rs) <= max(c.max_burst, 3)
    else:
        assert all(r.poll_interval == 0 and not r.max_rate for r in rings)


def test_a_fabric_forgets_every_hosts_tcp_metrics() -> None:
    """Before each mode every host of the fabric (ROS and HLT hosts, of
    every plane) has its TCP metrics cache emptied, as on one switch."""
    c = cfg("--ros", "8", "--dcms", "4", "--planes", "2", "--spines", "2")
    p = make_fabric_plan(77, c)
    r = object.__new__(FabricRunner)
    r.fplan = p
    assert sorted(r.host_namespaces()) == sorted(p.hosts_ns)
    assert len(p.hosts_ns) == 8 + 1


def test_shared_ring_sharing_binds_the_rings_to_their_host() -> None:
    """--ring-sharing shared: every ring of an HLT host may use the whole
    link (max-rate = the rate one ring gets alone) and the rings of a
    host share it (bound to the host's port, egress-max-rate = that
    rate); 'static' splits it and shares nothing."""
    c = cfg("--ros", "8", "--dcms", "6", "--hlt-hosts", "2",
            "--ros-leaves", "2", "--ring-sharing", "shared")
    assert c.ring_sharing == "shared"
    params = ring_params(c, "daqring")
    assert (params["max_rate_bps"], params["egress_max_rate_bps"]) == (
        c.max_rate_bps, c.max_rate_bps)
    assert params["max_burst"] == c.max_burst
    assert params["sharing"].startswith("shared: 3 DCMs")
    # What the rings release together is bounded as one ring's release
    # alone would be (max-burst full frames), not by the option's
    # default of 32 frames, which overran the port they share.
    full = 1518 + c.link_overhead
    assert c.max_burst < 32
    assert params["egress_max_burst_bytes"] == c.max_burst * full
    p = make_fabric_plan(77, c)
    doc = fabric_map(p, params)
    assert doc["defaults"]["steering"] == "bound"
    assert doc["defaults"]["egress-max-rate"] == "%dbit" % c.max_rate_bps
    assert doc["defaults"]["egress-max-burst-bytes"] == c.max_burst * full
    # --max-burst-bytes bounds the shared bucket instead.
    b = cfg("--ros", "8", "--dcms", "6", "--hlt-hosts", "2",
            "--ros-leaves", "2", "--ring-sharing", "shared",
            "--max-burst-bytes", "20000")
    assert ring_params(b, "daqring")["egress_max_burst_bytes"] \
        == 20000
    state = _state(doc)
    assign, _ = fabric_plan(state, {}, set(), {}, 0)
    rings = slices(state, assign)["hlt-leaf"].rings
    assert len(rings) == 6
    for d in p.dcms:
        r = next(x for x in rings if x.ring == p.ring_name(d))
        opts = r.options()
        assert (opts["egress"], opts["max-rate"], opts["egress-max-rate"]) \
            == (d.veth, str(c.max_rate_bps), str(c.max_rate_bps)), opts
    # Unshaped rings share nothing; nor do static ones.
    unshaped = ring_params(c, "daqring-unshaped")
    assert not unshaped["egress_max_rate_bps"]
    assert "egress-max-rate" not in fabric_map(
        p, unshaped)["defaults"]
    c = cfg("--ros", "8", "--dcms", "6", "--hlt-hosts", "2",
            "--ros-leaves", "2")
    state = _state(fabric_map(p, ring_params(c, "daqring")))
    assign, _ = fabric_plan(state, {}, set(), {}, 0)
    assert not any("egress-max-rate" in r.options() or r.steering == "bound"
                   for r in slices(state, assign)["hlt-leaf"].rings)


def test_two_spines_share_the_dcms_and_flood_over_one() -> None:
    c = cfg("--ros", "6", "--dcms", "4", "--spines", "2",
            "--ros-leaves", "2")
    p = make_fabric_plan(77, c)
    assert len(p.links) == 3 * 2
    state = _state(fabric_map(p, ring_params(c, "daqring")))
    assign, _ = fabric_plan(state, {}, set(), {}, 0)
    # Algorithm 6.1: round-robin over the spines.
    assert sorted(a.spine for a in assign.values()) == [
        "spine0", "spine0", "spine1", "spine1"]
    sl = slices(state, assign)
    for j in (0, 1):
        mine = sorted(d for d, a in assign.items() if a.spine == "spine%d"
                      % j)
        # Standing routes: every spine routes every DCM; the leaves send
        # each up to its own spine first.
        assert sorted(r.dcm for r in sl["spine%d" % j].routes
                      if r.dcm) == sorted(assign)
        for leaf in ("ros-leaf0", "ros-leaf1", "hlt-leaf"):
            assert sorted(r.dcm for r in sl[leaf].routes
                          if r.port == "up%d" % j) == mine
        # Every spine routes every ROS host (its leaf's uplinks to either
        # spine carry the DCMs' requests and ACKs to it).
        assert sorted(r.host for r in sl["spine%d" % j].routes
                      if not r.dcm) == ["ros%d" % i for i in range(6)]
    # NORMAL's tree: the first spine; every port of or to the second is
    # no-flood, and no port of the first spine's is.
    nf = no_flood_ports(p)
    assert sorted(nf) == ["hlt-leaf", "ros-leaf0", "ros-leaf1", "spine1"]
    assert all(v == ["up1"] for k, v in nf.items() if k != "spine1")
    assert sorted(nf["spine1"]) == ["dn0", "dn1", "dn2"]
    assert no_flood_ports(make_fabric_plan(
        77, cfg("--ros", "6"))) == {}


def test_stock_map_routes_only_towards_the_ros() -> None:
    c = cfg("--ros", "4", "--dcms", "2")
    p = make_fabric_plan(77, c)
    state = _state(fabric_map(p, None))
    assert not state.dcms
    sl = slices(state, {})
    # No rings and nothing of a DCM; the ROS hosts' routes all the same
    # (the HLT leaf's way up is NORMAL's without DCMs).
    assert all(not s.rings and not any(r.dcm for r in s.routes)
               for s in sl.values())
    assert not sl["hlt-leaf"].routes
    assert sorted(r.host for r in sl["spine0"].routes) == [
        "ros0", "ros1", "ros2", "ros3"]
    assert sorted(r.host for r in sl["ros-leaf0"].routes) == [
        "ros0", "ros1", "ros2", "ros3"]
    # The switches, links and hosts are in it all the same.
    assert len(state.switches) == 3 and len(state.links) == 2
    assert len(state.hosts) == 5


# ================================================================= limit
def test_limit_of_the_emulated_fabric() -> None:
    c = cfg("--ros", "8", "--dcms", "4", "--link-rate", "200mbit")
    p = make_fabric_plan(77, c)
    lim = fabric_limit(c, p)
    assert lim["inputs"]["N_H"] == 1 and lim["inputs"]["N_R"] == 8
    assert lim["inputs"]["b_S_bps"] is None
    assert lim["bound_by"] == "hlt_link"
    # B = N_P N_H N_R min(b_H / N_R, ...) = N_H b_H.
    assert lim["limit_bps"] == pytest.approx(200e6)
    assert lim["goodput_bps"] == pytest.approx(200e6 * lim["efficiency"])
    c2 = cfg("--ros", "8", "--dcms", "4", "--hlt-hosts", "2",
             "--link-rate", "200mbit")
    lim2 = fabric_limit(c2, make_fabric_plan(77, c2))
    assert lim2["limit_bps"] == pytest.approx(400e6)


def test_failover_option_and_link() -> None:
    c = cfg("--spines", "2", "--failover", "1.5/4")
    assert c.failover == (1.5, 4.0)
    p = make_fabric_plan(77, c)
    assert failover_link(p)[0::2] == ("hlt-leaf", "spine1")
    # The degraded limit: the same formula with that link gone (the
    # leaf-spine links are not what binds here).
    assert fabric_limit(c, p, spines=1)["limit_bps"] == \
        fabric_limit(c, p)["limit_bps"]
    assert cfg().failover == (0.0, 0.0)


def _failover_drops(**extra: Dict[str, Dict[str, int]]) -> Any:
    """FabricRunner._drops over the counters of a failover: the ROS sent
    100 frames and the HLT host got 90, the HLT host sent 20 and the ROS
    got 18.  spine1 took 10 from ros-leaf0 and sent none on (its port to
    the HLT leaf, dn1, was down: ENETDOWN, no counter); the HLT leaf's
    DPDK uplink to it sent 2 its veth never did.  EXTRA: more counters
    of the snapshot taken after ('ports', 'links')."""
    c = cfg("--ros", "2", "--dcms", "1", "--spines", "2",
            "--failover", "1/2.5")
    r, before = _bare_runner(c)
    after: Dict[str, Any] = {
        "ports": {"spine1:dn0": {"rx_packets": 10},
                  "hlt-leaf:up1": {"tx_packets": 2}},
        "qdisc": {}, "normal": {},
        "links": {"dqf77-ros0:e0": {"tx_packets": 60, "rx_packets": 9},
                  "dqf77-ros1:e0": {"tx_packets": 40, "rx_packets": 9},
                  "dqf77-hlt0:e0": {"tx_packets": 20, "rx_packets": 90},
                  "hlt-leaf:up1": {"tx_packets": 0, "tx_dropped": 0,
                                   "rx_packets": 0, "rx_dropped": 0}}}
    for k, v in extra.items():
        after[k].update(v)
    return r._drops(before, after)


def _bare_runner(c: Any) -> Any:
    """A FabricRunner of config 'c' (pid 77) that has run nothing, and an
    empty snapshot of counters taken before: for FabricRunner._drops."""
    r = FabricRunner.__new__(FabricRunner)
    r.cfg, r.fplan = c, make_fabric_plan(77, c)
    r.target = resolve_target(r.fplan, "") if c.spines > 1 else None
    before: Dict[str, Any] = {"ports": {}, "qdisc": {}, "links": {},
                              "normal": {}}
    return r, before


def test_a_failover_account_balances() -> None:
    d = _failover_drops()
    assert d["balance"] == {"sent": 120, "delivered": 108,
                            "counted_drops": 12, "balanced": True}
    assert d["unaccounted"] == 0 and d["overcounted"] == 0
    # Per link and direction, each loss from the counter that has it.
    assert d["lost_on_links"] == {
        "spine1:dn1->hlt-leaf:up1": {"frames": 10, "switch_inside": 10},
        "hlt-leaf:up1->spine1:dn1": {"frames": 2, "uplink_tx_path": 2}}


def test_a_dpdk_uplinks_retried_frames_are_counted_once() -> None:
    """The kernel sends the DPDK uplink's frames from its af_packet TX
    ring; a frame the veth refuses (its peer down) goes back into the
    ring and is sent again at the next kick, so the veth's tx_dropped
    counts it once per try (3 for the 2 frames lost here), and a frame
    delivered on a later try was counted dropped too.  The uplink's loss
    is what the port handed the kernel and the veth never sent."""
    d = _failover_drops(links={"hlt-leaf:up1": {
        "tx_packets": 0, "tx_dropped": 3, "rx_packets": 0, "rx_dropped": 0}})
    assert d["unaccounted"] == 0 and d["overcounted"] == 0
    assert d["balance"]["balanced"] is True
    assert d["lost_on_links"]["hlt-leaf:up1->spine1:dn1"] == {
        "frames": 2, "uplink_tx_path": 2}
    assert d["ports"]["hlt-leaf:up1"]["kernel_tx_dropped"] == 3
    # One of them delivered on its second try (counted dropped once).
    d = _failover_drops(
        ports={"hlt-leaf:up1": {"tx_packets": 2}},
        links={"hlt-leaf:up1": {"tx_packets": 1, "tx_dropped": 2},
               "dqf77-ros0:e0": {"tx_packets": 60, "rx_packets": 10}})
    assert d["lost_on_links"]["hlt-leaf:up1->spine1:dn1"] == {
        "frames": 1, "uplink_tx_path": 1}
    assert d["unaccounted"] == 0 and d["overcounted"] == 0


def test_an_unbalanced_failover_account() -> None:
    # The same 10 frames in the kernel's count of spine1's veth too: a
    # count twice over, which unaccounted alone (0) does not show.
    d = _failover_drops(links={"spine1:dn1": {"tx_dropped": 10}})
    assert d["unaccounted"] == 0 and d["overcounted"] == 10
    assert d["balance"]["counted_drops"] == 22
    assert d["balance"]["balanced"] is False
    assert d["lost_on_links"]["spine1:dn1->hlt-leaf:up1"] == {
        "frames": 20, "kernel_links": 10, "switch_inside": 10}
    # 5 frames more lost, no counter has them.
    d = _failover_drops(links={"dqf77-hlt0:e0": {"tx_packets": 20,
                                                 "rx_packets": 85}})
    assert d["unaccounted"] == 5 and d["overcounted"] == 0
    assert d["balance"]["balanced"] is False


def test_a_tbf_drop_without_dpdk_is_counted_once() -> None:
    """--fabric-dpdk off: the HLT leaf's port to the host took 100 frames
    for it and sent 84 on, 16 of them its tbf dropped (the qdisc's count)
    and 10 its socket could not take (no counter).  The tbf's 16 are in
    the qdisc drops, not again in what the switch kept (switch_inside),
    or the account would not balance."""
    c = cfg("--ros", "2", "--dcms", "1", "--fabric-dpdk", "off",
            "--modes", "stock")
    r, before = _bare_runner(c)
    after: Dict[str, Any] = {
        "ports": {"hlt-leaf:up0": {"rx_packets": 100},
                  "hlt-leaf:h0": {"tx_packets": 74}},
        "qdisc": {"hlt-leaf:h0": {"drops": 16}}, "normal": {},
        "links": {"dqf77-ros0:e0": {"tx_packets": 100},
                  "dqf77-hlt0:e0": {"rx_packets": 74}}}
    d = r._drops(before, after)
    assert d["switch_inside"]["hlt-leaf"]["frames"] == 10, d
    assert d["qdisc"] == 16
    assert d["balance"] == {"sent": 100, "delivered": 74,
                            "counted_drops": 26, "balanced": True}


def test_the_summary_prints_the_balance_and_the_degraded_limit() -> None:
    c = cfg("--ros", "8", "--dcms", "4", "--spines", "2",
            "--link-rate", "200mbit", "--failover", "1/2.5")
    p = make_fabric_plan(77, c)
    degraded = fabric_limit(c, p, spines=1)
    fo = {"link": "hlt-leaf:up1-spine1:dn1", "down_at_s": 1.0,
          "up_at_s": 2.5, "rerouted_after_s": 0.6, "back_after_s": None,
          "recovered_after_s": 0.9, "restored_after_s": None,
          "limit_goodput_bps": 1.9e8, "degraded_limit": degraded,
          "degraded_limit_goodput_bps": degraded["goodput_bps"]}
    doc = {"modes": [{"label": "daqring", "status": "ok",
                      "drops": _failover_drops(), "failover": fo}]}
    text = format_fabric(doc)
    assert "daqring: frames sent 120 = delivered 108 + counted drops 12\n" \
        in text, text
    assert "lost on link spine1:dn1->hlt-leaf:up1: 10 frames " \
        "(switch_inside 10)" in text, text
    assert ("%s with N_P 1, N_S 1, N_H 1, N_R 8, b_H 200 Mbit/s, b_R inf, "
            "b_S inf" % degraded["formula"]) in text, text
    assert "(bound by hlt_link)" in text, text
    assert "degraded limit (one spine fewer while " \
        "hlt-leaf:up1-spine1:dn1 fails)" in text, text
    # Whatever --failover-target fails (a spine here).
    doc["modes"][0]["failover"] = dict(fo, link="spine1")
    assert "one spine fewer while spine1 fails" in format_fabric(doc)
    doc["modes"][0]["failover"] = fo
    assert "home after never" in text, text
    assert "told by its kernel" not in text, text
    doc["modes"][0]["failover"] = dict(fo, kind="link", leaf="hlt-leaf",
                                       leaf_notified_after_s=0.0461)
    assert "  hlt-leaf told by its kernel that the link was down 46 ms " \
        "after the failure\n" in format_fabric(doc)
    doc["modes"][0]["failover"] = dict(fo, kind="link", leaf="hlt-leaf")
    assert "was down never after" in format_fabric(doc)
    doc["modes"][0]["failover"] = fo
    doc["modes"][0]["drops"] = _failover_drops(
        links={"spine1:dn1": {"tx_dropped": 10}})
    assert "NOT BALANCED (unaccounted 0, overcounted 10)" in \
        format_fabric(doc)
    assert format_fabric({"modes": []}) == ""


def test_timeline_bins_bytes_and_retransmissions() -> None:
    spans = [(0.0, 0.1), (0.1, 0.3), (0.3, 0.6), (0.6, 0.9)]
    tl = timeline(spans, [1000, 2000, 3000, 4000],
                  [(0.05, 10), (0.3, 12), (0.55, 20), (0.8, 20)],
                  0.9, width=0.25)
    assert [b["t_s"] for b in tl] == [0.0, 0.25, 0.5, 0.75]
    # By completion time: 0.1 -> bin 0, 0.3 -> 1, 0.6 -> 2, 0.9 -> 3.
    assert [b["goodput_bps"] * 0.25 / 8 for b in tl] == [1000, 2000, 3000,
                                                         4000]
    assert [b["retrans_segs"] for b in tl] == [0, 2, 8, 0]
    assert sum(b["goodput_bps"] for b in tl) * 0.25 / 8 == 10000


# ============================================================ a real run
def _skip_reason() -> str:
    return fabric_run_skip_reason(OVS)


@pytest.mark.skipif(bool(_skip_reason()), reason=_skip_reason())
def _lines_until(proc: Any, marker: str, deadline: float) -> List[str]:
    """proc's standard output, line by line, up to the line that holds
    'marker' and the blank line after the text it starts (or its end, or
    the deadline: then the lines read so far)."""
    lines: List[str] = []
    buf = ""
    seen = False
    fd = proc.stdout.fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        data = os.read(fd, 65536).decode()
        if not data:
            break
        buf += data
        while "\n" in buf:
            line, buf = buf.split("\n", 1)
            lines.append(line)
            seen = seen or marker in line
            if seen and line.startswith("  ip -n ") and " up" in line:
                return lines
    return lines


def _fabric_status(daqctl: str, db: str) -> Any:
    p = subprocess.run([PYTHON, daqctl, "fabric", "status", "--json",
                        "--db", db], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout)["fabric"]


@pytest.mark.skipif(bool(_skip_reason()), reason=_skip_reason())
def test_fabric_run_without_dpdk_held_until_a_signal(tmp_path: Any) -> None:
    """Stock and credits through a fabric of three switches without DPDK
    (no hugepages, no PMD), held (--hold): every event is collected, each
    mode's map is what the switches hold, the results say the run is not
    valid (no PMD); after its modes the fabric stays up and daq-incast
    prints how to reach it; what it prints works (the fabric database
    reports every switch up, the link failure it gives is reported by the
    switches at its ends), and SIGTERM then ends the run normally, its
    results written and nothing left behind.  (One run for both: a
    fabric's set-up is most of a run's time.)"""
    out = tmp_path / "out.json"
    daqctl = os.path.join(os.path.dirname(HERE), "utilities", "ovs-daqctl")
    with subprocess.Popen(
            [PYTHON, SCRIPT, "--topology", "fabric", "--fabric-dpdk", "off",
             "--ros", "4", "--dcms", "2", "--events", "5", "--modes",
             "stock,credits", "--json", str(out), "-q", "--timeout",
             "300", "--hold"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE) as run:
        try:
            lines = _lines_until(run, "the fabric stays up",
                                 time.monotonic() + 400)
            text = "\n".join(lines)
            assert "the fabric stays up" in text, text[-3000:]
            # The results come first.
            assert out.exists() and "results: %s" % out in text
            db = next(ln.split("=", 1)[1] for ln in lines
                      if ln.strip().startswith("export OVS_DAQFABRIC_DB="))

            def switches() -> Dict[str, Any]:
                return {n["switch"]: n for n in
                        _fabric_status(daqctl, db)["nodes"]
                        if n["kind"] == "switch"}
            # Up: a report younger than three of its agent's intervals
            # (a loaded machine may delay one: looked at again).
            deadline = time.monotonic() + 60
            nodes = switches()
            while not all(n["up"] for n in nodes.values()):
                assert time.monotonic() < deadline, nodes
                time.sleep(0.5)
                nodes = switches()
            assert set(nodes) == {"ros-leaf0", "spine0", "hlt-leaf"}
            down, up = [ln.split() for ln in lines
                        if ln.startswith("  ip -n ")]
            assert down[-1] == "down" and up[-1] == "up"
            subprocess.run(down, check=True)
            port = down[-2]

            def reported() -> bool:
                n = _fabric_status(daqctl, db)["nodes"]
                return any(v["links"].get(port) == "down" for v in n
                           if v["switch"] == "spine0")
            deadline = time.monotonic() + 60
            while not reported():
                assert time.monotonic() < deadline, \
                    "spine0 did not report %s down" % port
                time.sleep(0.5)
            assert run.poll() is None
        finally:
            run.send_signal(signal.SIGTERM)
            _, stderr = run.communicate(timeout=120)
    assert run.returncode == 0, stderr.decode()[-3000:]
    assert "stopping the fabric (--hold)" in stderr.decode()
    doc = json.loads(out.read_text())
    assert [m["mode"] for m in doc["modes"]] == ["stock", "credits"]
    for m in doc["modes"]:
        assert m["status"] == "ok"
        assert m["events"] == 2 * 5
        assert all(b == 4 * 32 * 1024 for b in m["event_bytes"])
        assert m["valid"] is False and "no PMD" in m["invalid_reason"]
        for k in ("ros_tx_frames", "hlt_rx_frames", "unaccounted",
                  "qdisc", "daqring", "switch_total", "balance",
                  "lost_on_links"):
            assert k in m["drops"]
    prog = doc["fabric"]["programming"]
    assert [g["mode"] for g in prog] == ["stock", "credits"]
    for g in prog:
        assert g["outcome"]["rings"] == []
        # Nothing of a DCM; the routes towards the 4 ROS hosts (on the
        # spine and the ROS leaf).
        flows = g["outcome"]["flows"]
        assert flows["hlt-leaf"] == []
        for sw in ("spine0", "ros-leaf0"):
            assert sorted(f[1] for f in flows[sw]) == [
                "10.77.%d.0/24" % (j + 1) for j in range(4)]
            assert all(f[0] == "to" for f in flows[sw])
    assert doc["topology"]["kind"] == "fabric"
    assert set(doc["topology"]["congestion_control"]["hosts"].values()) \
        == {"cubic"}
    assert doc["fabric"]["limit"]["inputs"]["N_R"] == 4
    after = subprocess.run(["ip", "netns", "list"], capture_output=True,
                           text=True).stdout.split()
    assert not [n for n in after if n.startswith("dqf%d-" % run.pid)]


if __name__ == "__main__":      # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def _dump(sl: Any, rings: bool = True) -> Any:
    """ovs-ofctl --names dump-flows and dump-groups of a slice as its
    agent installs it (route_table: a route with backups outputs to a
    fast_failover group), with the HLT leaf's ring flows."""
    lines = ["cookie=0x0, duration=1s, table=0, n_packets=5, priority=0 "
             "actions=NORMAL"]
    groups: Dict[Any, int] = {}
    for cookie, flows in route_table([
            {"dcm": r.dcm, "match": r.match, "port": r.port,
             "backups": list(r.backups), "priority": r.priority,
             "host": r.host, "dl_dst": r.dl_dst}
            for r in sl.routes]).items():
        for prio, match, ports, mac in flows:
            if len(ports) > 1:
                gid = groups.setdefault(ports, 0xdac70000 + len(groups))
                action = "group:%d" % gid
            elif ports:
                action = "%soutput:%s" % port_actions(ports[0])
            else:
                action = "drop"         # A detour's twice bounced.
            if mac:
                action = "mod_dl_dst:%s,%s" % (mac, action)
            lines.append("cookie=%#x, duration=1s, table=0, n_packets=0, "
                         "priority=%d,%s actions=%s"
                         % (cookie, prio, ",".join(match), action))
    if rings:
        for d in sl.rings:
            lines.append('cookie=0xdac7000000000001, n_packets=0, '
                         'priority=100,ip,nw_dst=%s actions=%soutput:"%s"'
                         % (d.ip, set_dl_dst(d.dl_dst), d.ring))
            if "egress" in d.options():
                continue            # Bound: no drain flow.
            lines.append('cookie=0xdac7000000000001, n_packets=0, '
                         'priority=101,in_port="%s" actions=output:%s'
                         % (d.ring, d.egress))
    gdump = "".join(
        " group_id=%d,type=ff,%s\n" % (gid, ",".join(
            "bucket=bucket_id:%d,watch_port:%s,actions=%soutput:%s"
            % ((i, port_name(p)) + port_actions(p))
            for i, p in enumerate(ports)))
        for ports, gid in groups.items())
    return "\n".join(" " + ln for ln in lines) + "\n", gdump


@pytest.mark.parametrize("planes", [1, 2])
@pytest.mark.parametrize("mode", ["stock", "daqring"])
def test_switches_hold_both_directions(mode: str, planes: int) -> None:
    """What the agents install from the slices (route_table) is what the
    emulator expects from the cabling alone (expected_flows), both ways;
    a route out of the wrong port, or one missing, is named."""
    c = cfg("--ros", "6", "--dcms", "4", "--spines", "2",
            "--ros-leaves", "2", "--planes", str(planes))
    p = make_fabric_plan(77, c)
    ring = mode == "daqring"
    state = _state(fabric_map(
        p, ring_params(c, mode) if ring else None,
        db="unix:/x/db.sock"))
    assign, _ = fabric_plan(state, {}, set(), {}, 0)
    asg = {n: "%d/%s" % (a.plane, a.spine) for n, a in assign.items()}
    sl = slices(state, assign)
    flows = {s.name: fabric_flows(s, *_dump(sl[s.name]))
             for s in p.switches}
    # With two spines the DCMs' routes on the ROS leaves and the HLT
    # leaf fall back on the other spine (groups); the check sees the
    # primary.
    assert ("group_id=" in _dump(sl["ros-leaf0"])[1]) == ring
    assert ("group_id=" in _dump(sl["hlt-leaf"])[1]) == ring
    assert check_routes(p, flows, asg) == []
    want = expected_flows(p, asg)
    # Both ways: every DCM from each HLT leaf (standing routes, every
    # plane), every ROS host to it.
    hl = [f for leaf in p.hlt_leaves for f in want[leaf]]
    assert sorted(f[1] for f in hl if f[0] == "from") == (
        sorted(d.ips[0] for d in p.dcms for _ in p.hlt_leaves)
        if ring else [])
    # Every HLT leaf holds every DCM's ring (standby rings).
    for leaf in p.hlt_leaves:
        assert sorted(f[1] for f in want[leaf] if f[0] == "ring") == (
            sorted(p.ring_on(d, leaf) for d in p.dcms) if ring else [])
    assert len([f for f in want["spine1"] if not f[1].startswith(
        NET + ".0.")]) == 6
    if ring:
        # The planner spreads the DCMs over every plane and spine.
        assert sorted(asg.values()) == sorted(
            "%d/%s" % (pl, plane_name(pl, "spine%d" % j))
            for pl in range(planes) for j in (0, 1)
            for _ in range(4 // (2 * planes)))
    # A DCM's way back out of the other spine's uplink: named.
    if ring:
        bad = dict(flows)
        bad["hlt-leaf"] = [["from", f[1], "up1" if f[2] == "up0" else "up0"]
                           if f[0] == "from" else f for f in flows[
                               "hlt-leaf"]]
        msg = check_routes(p, bad, asg)
        assert len(msg) == 1 and msg[0].startswith("hlt-leaf: missing")
    less = dict(flows)
    less["ros-leaf1"] = flows["ros-leaf1"][1:]
    msg = check_routes(p, less, asg)
    assert len(msg) == 1 and "ros-leaf1: missing ['to" in msg[0]


def test_bound_rings_route_through_their_binding() -> None:
    """--ring-sharing shared: the HLT leaf's rings are bound to their
    host's port (options:egress) and have no drain flow; the emulator's
    check takes the binding as the ring's way out, and still names a ring
    bound to the wrong port."""
    c = cfg("--ros", "6", "--dcms", "4", "--hlt-hosts", "2",
            "--ring-sharing", "shared")
    p = make_fabric_plan(77, c)
    state = _state(fabric_map(p, ring_params(c, "daqring")))
    assign, _ = fabric_plan(state, {}, set(), {}, 0)
    asg = {n: "%d/%s" % (a.plane, a.spine) for n, a in assign.items()}
    sl = slices(state, assign)
    flows = {s.name: fabric_flows(s, *_dump(sl[s.name]))
             for s in p.switches}
    ifaces = {d.ring: {"type": "daqring", "options": d.options()}
              for d in sl["hlt-leaf"].rings}
    ifaces["h0"] = {"type": "dpdk", "options": {"egress": "x"}}
    msg = check_routes(p, flows, asg)
    assert len(msg) == 1 and "missing ['ring " in msg[0], msg
    drains = bound_drains(ifaces)
    assert len(drains) == 4
    ok = dict(flows, **{"hlt-leaf": sorted(flows["hlt-leaf"] + drains)})
    assert check_routes(p, ok, asg) == []
    ring = drains[0][1]
    ifaces[ring]["options"] = dict(ifaces[ring]["options"], egress="up0")
    bad = dict(flows, **{"hlt-leaf": sorted(flows["hlt-leaf"]
                                            + bound_drains(ifaces))})
    msg = check_routes(p, bad, asg)
    assert len(msg) == 1 and "unexpected ['ring %s up0']" % ring in msg[0]


def test_normal_packets_counts_only_normal() -> None:
    dump = (" cookie=0x0, duration=2.1s, table=0, n_packets=7, n_bytes=9, "
            "priority=0 actions=NORMAL\n"
            " cookie=0xdac7000000000001, duration=1s, table=0, "
            "n_packets=1000, n_bytes=9, priority=100,ip,nw_dst=10.77.0.1 "
            "actions=output:3\n"
            " cookie=0x0, duration=2s, table=0, n_packets=2, n_bytes=1, "
            "priority=1,arp actions=NORMAL\n")
    assert normal_packets(dump) == 9
    assert normal_packets("") == 0


def _counters(p: Any, fwd: Any, back: int, lose: int = 0,
              lost_late: int = 0, acks_lost: int = 0) -> Any:
    """A mode's counter snapshot (after; before is all zero) for a plan
    of one ROS host, one ROS leaf, two spines and one HLT host: the ROS
    send FWD[0] frames up0 and FWD[1] up1; spine1 loses LOSE of them
    (sends to a port that is down: no counter), the HLT host's e0 loses
    LOST_LATE more with no counter; the HLT host sends BACK frames back
    through spine0, and ACKS_LOST more into the failed link's dead veth
    (the kernel counts none of them)."""
    up0, up1 = fwd
    ros, hlt = p.ros_hosts[0], p.hlt_hosts[0]
    got = up0 + up1 - lose

    def port(rx: int, tx: int, tx_dropped: int = 0) -> Any:
        return {"rx_packets": rx, "tx_packets": tx, "rx_dropped": 0,
                "tx_dropped": tx_dropped}
    ports = {"ros-leaf0:h0": port(up0 + up1, back),
             "ros-leaf0:up0": port(back, up0),
             "ros-leaf0:up1": port(0, up1),
             "spine0:dn0": port(up0, back), "spine0:dn1": port(back, up0),
             "spine1:dn0": port(up1, 0), "spine1:dn1": port(0, up1 - lose),
             "hlt-leaf:h0": port(back + acks_lost, got),
             "hlt-leaf:up0": port(up0, back),
             "hlt-leaf:up1": port(up1 - lose, acks_lost)}
    links = {"%s:e0" % ros.ns: {
                 "tx_packets": up0 + up1, "rx_packets": back,
                 "rx_dropped": 0, "tx_dropped": 0},
             "%s:e0" % hlt.ns: {
                 "tx_packets": back + acks_lost,
                 "rx_packets": got - lost_late,
                 "rx_dropped": 0, "tx_dropped": 0},
             "hlt-leaf:h0": {"rx_packets": back + acks_lost,
                             "tx_packets": got,
                             "rx_dropped": 0, "tx_dropped": 0},
             "hlt-leaf:up0": {"rx_packets": up0, "tx_packets": back,
                              "rx_dropped": 0, "tx_dropped": 0},
             "hlt-leaf:up1": {"rx_packets": up1 - lose, "tx_packets": 0,
                              "rx_dropped": 0, "tx_dropped": 0}}
    ring = "hlt-leaf:%s" % p.ring_name(p.dcms[0])
    ports[ring] = {"tx_packets": got, "rx_packets": got, "tx_dropped": 0}
    return {"ports": ports, "links": links, "qdisc": {},
            "normal": {s.name: 0 for s in p.switches}}


def test_every_lost_frame_is_counted_with_where_and_why() -> None:
    """The drops of a failover mode: frames that spine1 could not send
    to the HLT leaf while its link was down show no counter of
    ovs-vswitchd's; its ports' counters say how many, with the reason,
    and nothing is unaccounted.  A loss no counter shows is."""
    c = cfg("--ros", "1", "--dcms", "1", "--spines", "2", "--failover",
            "1/3")
    p = make_fabric_plan(77, c)
    r = FabricRunner.__new__(FabricRunner)
    r.fplan, r.cfg = p, c
    r.target = resolve_target(p, "")
    zero = {"ports": {}, "links": {}, "qdisc": {}, "normal": {}}
    d = r._drops(zero, _counters(p, (600, 400), 300, lose=25))
    assert d["switch_inside"] == {"spine1": {
        "frames": 25, "reason": "sent to spine1:dn1 while it was down "
        "(--failover)"}}
    assert d["unaccounted"] == 0 and d["kernel_links"] == 0
    assert d["ros_tx_frames"] - d["hlt_rx_frames"] == 25
    assert d["hlt_tx_frames"] == d["ros_rx_frames"] == 300
    d2 = r._drops(zero, _counters(p, (600, 400), 300, lose=25,
                                  lost_late=7))
    assert d2["unaccounted"] == 7
    d3 = r._drops(zero, _counters(p, (600, 400), 300))
    assert d3["switch_inside"] == {} and d3["unaccounted"] == 0
    assert d3["uplink_tx_path"] == 0
    # The HLT host's ACKs the HLT leaf sent into the dead link.
    d4 = r._drops(zero, _counters(p, (600, 400), 300, lose=25,
                                  acks_lost=9))
    assert d4["uplink_tx_path"] == 9 and d4["unaccounted"] == 0
    assert d4["ports"]["hlt-leaf:up1"]["kernel_tx_path_drops"] == 9


def test_recovery_is_judged_on_the_events() -> None:
    # 1 MB events every 0.1 s (80 Mbit/s), none from 2.0 to 3.0 s.
    ends = [i / 10 for i in range(1, 61) if not 20 <= i < 30]
    spans = [(z - 0.1, z) for z in ends]
    nbytes = [1000000] * len(spans)
    # From 2.0 s: back to 76 Mbit/s (95% of 80) once a full second of
    # events follows, i.e. from just before 3.0 s.
    got = recovery(spans, nbytes, 2.0, 0.95 * 80e6)
    assert got is not None and 0.9 <= got <= 1.0
    # Before the gap: at once.
    assert recovery(spans, nbytes, 0.0, 0.95 * 80e6) == 0
    # A target the events never reach, and no events.
    assert recovery(spans, nbytes, 0.0, 200e6) is None
    assert recovery([], [], 0.0, 1.0) is None


def test_a_killed_spines_bfd_packets_are_not_lost_host_frames() -> None:
    """A spine killed with BFD on: its veths go on receiving the leaves'
    BFD packets, and it sent some before it died; those are counted
    apart (the snapshots' "control", control.ControlFrames) and only
    the hosts' frames it swallowed count as lost: the balance holds
    (it was "overcounted" by the BFD packets before)."""
    c = cfg("--ros", "1", "--dcms", "1", "--spines", "2", "--failover",
            "1/3")
    p = make_fabric_plan(77, c)
    r = FabricRunner.__new__(FabricRunner)
    r.fplan, r.cfg = p, c
    r.target = resolve_target(p, "spine:spine1")
    after = _counters(p, (600, 400), 300, lose=25)
    bfd = {"spine1:dn0": (40, 5), "spine1:dn1": (32, 0),
           "spine0:dn0": (50, 50), "spine0:dn1": (50, 50),
           "ros-leaf0:up0": (50, 50), "ros-leaf0:up1": (5, 40)}
    for name, (rx, tx) in bfd.items():
        after["ports"][name]["rx_packets"] += rx
        after["ports"][name]["tx_packets"] += tx
    # The HLT leaf's (DPDK) uplinks: their BFD in the port's and the
    # veth's counters alike.
    for up, (rx, tx) in (("hlt-leaf:up0", (50, 50)),
                         ("hlt-leaf:up1", (0, 32))):
        for k in ("ports", "links"):
            after[k][up]["rx_packets"] += rx
            after[k][up]["tx_packets"] += tx
    zero = {"ports": {}, "links": {}, "qdisc": {}, "normal": {}}
    after["control"] = {n: {"rx": rx, "tx": tx}
                        for n, (rx, tx) in bfd.items()}
    d = r._drops(zero, after)
    assert d["switch_inside"] == {"spine1": {
        "frames": 25, "reason": "received, not sent on (socket buffer or "
        "ovs-vswitchd)", "control_frames": {"received": 72, "sent": 5}}}, d
    assert d["balance"]["balanced"] and d["overcounted"] == 0, d


def test_the_routes_are_not_sampled_during_the_reroute() -> None:
    """--failover samples the routes through the failed spine (two
    ovs-ofctl per watched leaf) before the failure, then not before
    ROUTES_QUIET after it: at once, the samples took the shared core
    the reroute they measure needed."""
    from ovs_daqring.incast.fabric import failover as fo
    from ovs_daqring.process import Cleanup
    c = cfg("--ros", "1", "--dcms", "1", "--spines", "2", "--failover",
            "1/3")
    p = make_fabric_plan(77, c)
    f = fo.Failover((0.05, 60.0), p, {}, {}, resolve_target(p, ""), [0],
                    Cleanup())
    calls: List[float] = []

    def routes() -> int:
        calls.append(time.monotonic() - f.t0)
        return 1
    f.uplink_routes = routes                    # type: ignore
    f.fail = lambda down: None                  # type: ignore
    f.retrans = lambda: 0                       # type: ignore
    f.start()
    try:
        deadline = time.monotonic() + 10
        while len(calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        f.halt.set()
        f.join(10)
    down = f.events["down"]
    assert calls[0] <= down, (calls, down)
    assert calls[1] >= down + fo.ROUTES_QUIET, (calls, down)


def test_a_killed_spines_account_uses_the_veths_live_counters() -> None:
    """With the BFD packets counted, a switch without DPDK is judged by
    its veths' counters read next to them (the snapshots' "links"), not
    by its Interface statistics, which lag by ovs-vswitchd's refresh:
    20 BFD packets that arrived after the last refresh made 20 frames
    of the spine's account vanish."""
    c = cfg("--ros", "1", "--dcms", "1", "--spines", "2", "--failover",
            "1/3")
    p = make_fabric_plan(77, c)
    r = FabricRunner.__new__(FabricRunner)
    r.fplan, r.cfg = p, c
    r.target = resolve_target(p, "spine:spine1")
    after = _counters(p, (600, 400), 300, lose=25)
    control = {}
    for s in p.switches:
        if s.dpdk:
            continue
        for port in s.ports:
            name = "%s:%s" % (s.name, port.name)
            after["links"][name] = dict(after["ports"][name])
            control[name] = {"rx": 0, "tx": 0}
    # 20 BFD packets at spine1:dn0 since the statistics' last refresh.
    after["links"]["spine1:dn0"]["rx_packets"] += 20
    control["spine1:dn0"] = {"rx": 20, "tx": 0}
    after["control"] = control
    zero = {"ports": {}, "links": {}, "qdisc": {}, "normal": {},
            "control": {n: {"rx": 0, "tx": 0} for n in control}}
    for n in control:
        zero["links"][n] = {"rx_packets": 0, "tx_packets": 0,
                            "rx_dropped": 0, "tx_dropped": 0}
    d = r._drops(zero, after)
    assert d["switch_inside"]["spine1"]["frames"] == 25, d
    assert d["balance"]["balanced"], d
