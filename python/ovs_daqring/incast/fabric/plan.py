# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The emulated fabric's plan: its switches (leaves and spines, per
plane), their ports and the links between them, the ROS and HLT hosts
with their addresses, and the DCMs; names and numbers only, nothing is
created (make_fabric_plan())."""

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from ...fabric.model import switch_ring
from ..config import Config
from ..topology import Host

NET = "10.77"
HLT_LEAF = "hlt-leaf"
BRIDGE = "br0"
# OpenFlow/DPDK port numbers of the HLT leaf: its hosts' ports 1.., its
# uplinks UPLINK_OFPORT_BASE.. (net_af_packetN is unique per process).
UPLINK_OFPORT_BASE = 100
# ... plus this times the plane for the HLT leaves of planes past the
# first (bridges of the same process: see make_fabric_plan).
OFPORT_PLANE = 200
# af_packet frames of the HLT leaf's uplinks (RX and TX rings each): the
# whole incast of the spines arrives there, and DPDK's default ring (512
# frames) overflowed by 143 frames while another PMD shared the core.
UPLINK_FRAMES = 4096


def ros_host_ip(j: int, m: int) -> str:
    """The address of the M-th ROS of ROS host J: each ROS host has a
    /24 of its own (ros_host_prefix), which the fabric routes towards
    it."""
    return "%s.%d.%d" % (NET, 1 + j, 1 + m)


def ros_host_prefix(j: int) -> str:
    return "%s.%d.0/24" % (NET, 1 + j)


@dataclass
class FabricPort:
    """A switch port: the switch-side end of a veth (its name in the
    switch's namespace), and what is at the other end."""
    name: str
    ofport: int
    peer_ns: str
    peer_port: str              # a host's e<plane>, else the peer switch's
    frames: int = 0             # af_packet TX frames (DPDK ports), 0 = default

    @property
    def to_host(self) -> bool:
        """Whether a host is at the other end (not another switch)."""
        return not self.peer_port.startswith(("up", "dn"))

    def dpdk_host(self, ns: str) -> Host:
        """The port as incast.switch.Switch.add_ports() takes it."""
        return Host(kind="port", index=self.ofport, ns=ns, veth=self.name,
                    mac="", ips=[], ofport=self.ofport, frames=self.frames)


@dataclass
class FabricSwitch:
    name: str
    role: str                   # "leaf" or "spine"
    ns: str
    dpdk: bool
    ports: List[FabricPort] = field(default_factory=list)
    plane: int = 0
    bridge: str = BRIDGE
    # The switch whose ovs-vswitchd (and OVSDB) this one is a bridge of
    # (the HLT leaves of planes past the first: see make_fabric_plan),
    # or "" for its own.
    host_switch: str = ""


@dataclass
class HltHost:
    name: str
    ns: str
    mac: str
    ips: List[str]              # its DCMs' addresses, the first is its own
    port: str                   # its port on plane 0's HLT leaf

    def port_in(self, plane: int) -> str:
        """Its port on PLANE's HLT leaf."""
        return plane_name(plane, self.port)


def plane_name(plane: int, name: str) -> str:
    """The name of switch NAME ("spine1", "ros-leaf0", HLT_LEAF) in
    PLANE: plane 0's as they are (the names of a one-plane fabric), the
    others' prefixed "p<plane>-"."""
    return name if plane == 0 else "p%d-%s" % (plane, name)


def host_dev(plane: int) -> str:
    """A host's interface cabled to PLANE."""
    return "e%d" % plane


@dataclass
class FabricPlan:
    tag: str
    switches: List[FabricSwitch]
    ros_hosts: List[Host]       # .veth: the host's port on its ROS leaf
    ros_leaf_of: Dict[str, str]     # ROS host ns -> its leaf (plane 0's)
    hlt_hosts: List[HltHost]
    dcms: List[Host]            # one per DCM: .ns its HLT host's
    dcm_host: Dict[int, str]    # DCM index -> HLT host name
    links: List[Tuple[str, str, str, str]]   # leaf, port, spine, port
    planes: int = 1

    @property
    def ros_ips(self) -> List[str]:
        return [ip for h in self.ros_hosts for ip in h.ips]

    @property
    def hosts(self) -> List[Host]:
        """The ROS hosts and the DCMs (as daq-incast's one-switch plan)."""
        return self.ros_hosts + self.dcms

    @property
    def hosts_ns(self) -> List[str]:
        return ([h.ns for h in self.ros_hosts]
                + [h.ns for h in self.hlt_hosts])

    @property
    def hlt_leaves(self) -> List[str]:
        """The HLT leaf of each plane, in plane order."""
        return [plane_name(p, HLT_LEAF) for p in range(self.planes)]

    @property
    def host_devs(self) -> List[str]:
        """Every host's interfaces, one per plane, in plane order."""
        return [host_dev(p) for p in range(self.planes)]

    def ros_name(self, h: Host) -> str:
        """ROS host H's name in the fabric map."""
        return "ros%d" % h.index

    def ring_on(self, d: Host, leaf: str) -> str:
        """DCM D's ring on HLT leaf LEAF: with several planes the HLT
        leaves are bridges of one ovs-vswitchd, whose ports have names
        of their own (fabric.model.switch_ring())."""
        ring = self.ring_name(d)
        return (switch_ring(ring, self.switch(leaf).bridge)
                if self.shared_hlt else ring)

    @property
    def shared_hlt(self) -> bool:
        """Whether the HLT leaves are bridges of one ovs-vswitchd."""
        return any(s.host_switch for s in self.switches)

    def ros_leaf(self, ns: str, plane: int) -> str:
        """The leaf of ROS host NS in PLANE."""
        return plane_name(plane, self.ros_leaf_of[ns])

    def switch(self, name: str) -> FabricSwitch:
        return next(s for s in self.switches if s.name == name)

    def namespaces(self) -> List[str]:
        return (list(dict.fromkeys(s.ns for s in self.switches))
                + self.hosts_ns)

    def dcm_name(self, d: Host) -> str:
        return "dcm%d" % d.index

    def ring_name(self, d: Host) -> str:
        return "dcm%d-ring" % d.index


def make_fabric_plan(pid: int, cfg: Config) -> FabricPlan:
    """Names, addresses and ports; nothing is created.  Namespaces
    dqf<pid>-<switch> and dqf<pid>-ros<j> / -hlt<k>; in each switch's
    namespace its ports are h<i> (hosts), up<j> (a leaf's uplink to spine
    j), dn<i> (a spine's downlink to leaf i); the hosts' side is e<p>,
    one per plane p (plane_name() names the switches of planes past the
    first).  DCM addresses 10.77.0.N (HLT host k holds its DCMs'
    addresses), ROS 10.77.1.N... as on one switch.

    With several planes, the HLT leaves of the planes past the first are
    bridges (br<p>) of plane 0's HLT leaf's ovs-vswitchd, in its
    namespace, their ports named p<p>-h<i> and p<p>-up<j>: the one PMD
    core then runs one PMD thread for every plane, polling all the
    planes' rings and ports (two ovs-vswitchd, a PMD each on that core,
    took it in turns: 71-87% of the limit, each PMD thread half the
    core).  Every other switch is an ovs-vswitchd of its own."""
    tag = "dqf%d" % pid
    if len("%s-%s" % (tag, plane_name(cfg.planes - 1, "ros-leaf%d"
                                      % cfg.ros_leaves))) > 40:
        raise ValueError("pid %d too long for namespace names" % pid)
    spines = ["spine%d" % j for j in range(cfg.spines)]
    ros_leaves = ["ros-leaf%d" % i for i in range(cfg.ros_leaves)]
    leaves = ros_leaves + [HLT_LEAF]
    sw: Dict[str, FabricSwitch] = {}
    links = []
    for plane in range(cfg.planes):
        def at(name: str) -> FabricSwitch:
            return sw[plane_name(plane, name)]
        for base in leaves:
            name = plane_name(plane, base)
            shared = base == HLT_LEAF and plane > 0 and cfg.fabric_dpdk
            sw[name] = FabricSwitch(
                name, "leaf", "%s-%s" % (tag, HLT_LEAF if shared else name),
                dpdk=(base == HLT_LEAF and cfg.fabric_dpdk), plane=plane,
                bridge="br%d" % plane if shared else BRIDGE,
                host_switch=HLT_LEAF if shared else "")
        for base in spines:
            name = plane_name(plane, base)
            sw[name] = FabricSwitch(name, "spine", "%s-%s" % (tag, name),
                                    dpdk=False, plane=plane)
        for i, leaf in enumerate(leaves):
            for j, sp in enumerate(spines):
                hlt = leaf == HLT_LEAF
                up, dn = "up%d" % j, "dn%d" % i
                if hlt:
                    up = plane_name(plane, up)
                at(leaf).ports.append(FabricPort(
                    up, (UPLINK_OFPORT_BASE + plane * OFPORT_PLANE if hlt
                         else 1000) + j,
                    at(sp).ns, dn, frames=UPLINK_FRAMES if hlt else 0))
                at(sp).ports.append(FabricPort(dn, i + 1, at(leaf).ns, up))
                links.append((at(leaf).name, up, at(sp).name, dn))
    # ROS hosts (aggregated as on one switch), round-robin over leaves.
    ros_hosts: List[Host] = []
    ros_leaf_of: Dict[str, str] = {}
    k = cfg.ros_per_host
    firsts = list(range(0, cfg.ros, k))
    if len(firsts) < cfg.ros_leaves:
        raise ValueError("%d ROS hosts for %d ROS leaves: every leaf needs "
                         "one" % (len(firsts), cfg.ros_leaves))
    for j, first in enumerate(firsts):
        base = ros_leaves[j % cfg.ros_leaves]
        ids = list(range(first, min(cfg.ros, first + k)))
        port = "h%d" % (j // cfg.ros_leaves)
        ns = "%s-ros%d" % (tag, j)
        for plane in range(cfg.planes):
            leaf = sw[plane_name(plane, base)]
            leaf.ports.append(FabricPort(port, len(leaf.ports) + 1, ns,
                                         host_dev(plane)))
        ros_hosts.append(Host(
            kind="ros", index=j, ns=ns, veth=port,
            mac="02:77:00:00:%02x:%02x" % (1 + j // 256, j % 256),
            ips=[ros_host_ip(j, m) for m in range(len(ids))],
            ofport=len(sw[base].ports),
            ros_ids=ids))
        ros_leaf_of[ns] = base
    hlt: List[HltHost] = []
    dcms: List[Host] = []
    dcm_host: Dict[int, str] = {}
    per = cfg.dcms_per_host
    for k2 in range(cfg.hlt_hosts):
        ns = "%s-hlt%d" % (tag, k2)
        port = "h%d" % k2
        ips = ["%s.0.%d" % (NET, k2 * per + i + 1) for i in range(per)]
        mac = "02:77:00:00:00:%02x" % (k2 + 1)
        hlt.append(HltHost("hlt%d" % k2, ns, mac, ips, port))
        for plane in range(cfg.planes):
            sw[plane_name(plane, HLT_LEAF)].ports.append(FabricPort(
                plane_name(plane, port), plane * OFPORT_PLANE + k2 + 1, ns,
                host_dev(plane), frames=cfg.port_frames))
        for i, ip in enumerate(ips):
            n = k2 * per + i
            dcms.append(Host(kind="dcm", index=n, ns=ns, veth=port, mac=mac,
                             ips=[ip], ofport=k2 + 1))
            dcm_host[n] = "hlt%d" % k2
    return FabricPlan(tag=tag, switches=list(sw.values()),
                      ros_hosts=ros_hosts, ros_leaf_of=ros_leaf_of,
                      hlt_hosts=hlt, dcms=dcms, dcm_host=dcm_host,
                      links=links, planes=cfg.planes)
