"""daq-incast --topology fabric: the incast through an emulated leaf-spine
fabric of ovs-daqring switches (thesis Figure 6.7a, scaled to one
machine), programmed only through the fabric database and its agents.

Shape: the ROS hosts on R ROS leaves, H HLT hosts on one HLT leaf (each
HLT host a namespace holding its DCMs' addresses, behind one access
link), S spines in one plane.  Every switch is its own ovsdb-server and
ovs-vswitchd in a namespace of its own; inter-switch links and host links
are veth pairs.  The fabric database is a Raft cluster of 1 or 3
ovsdb-servers; each switch has an ovs-daqfabric-agent (the HLT leaf's
also plans), and every mode is programmed by `ovs-daqctl fabric apply
--wait` of a generated fabric map, never by hand.

CPU plan (2 cores): the HLT leaf, where the incast fans in and the rings
are, runs DPDK with its one PMD on the PMD core (--pmd-cpu-mask, 0x2);
every other switch runs the userspace datapath without DPDK, its system
(veth) ports polled by its main thread, pinned with everything else (the
database, the agents, the hosts) to the other core(s).

Pure parts (the plan, the map, the limit) are tested without root in
tests/test_daq_incast_fabric.py."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ... import tool_path
from ...daqctl.openflow import parse_group, split_dl_dst
from ...fabric import SCHEMA_NAME, schema_path
from ...fabric.model import switch_ring
from ...process import Cleanup, RunError, die_with_parent, read_text, run
from ...process import stop_process
from ...sandbox import Sandbox
from ..config import Config
from ..limits import DAQRING_FRAME
from ..runner import Runner
from ..stats import (busy_time, counter_delta, ideal_collection_time,
                     payload_efficiency)
from ..switch import (STATS_INTERVAL, ModeUnavailable, Switch, daqctl_path)
from ..topology import (NO_IPV6, Host, allow_congestion_control, cc_lock,
                        parse_snmp, rps_mask, tbf_command)
from ..units import format_rate

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
AGENT_INTERVAL = "1"
APPLY_TIMEOUT = 120
# The fabric map's hold-down: seconds before a moved DCM goes back home.
HOLD_DOWN = 2
# --failover: seconds between samples of the TCP counters and the routes,
# and the width of the goodput timeline's bins.
FAILOVER_SAMPLE = 0.1
# --failover: seconds past the hold-down that a mode whose events ended
# waits for the DCMs to be routed home again.
FAILOVER_SETTLE = 15
# --failover: the recovery targets are judged on the goodput over
# RECOVERY_WINDOW seconds reaching RECOVERY_FRACTION of the limit.
RECOVERY_WINDOW = 1.0
RECOVERY_FRACTION = 0.95
TIMELINE_BIN = 0.25
# The socket receive buffer of a system port (ovs-vswitchd's netdev-linux
# reads it through an AF_PACKET socket of net.core.rmem_default bytes,
# 208 KiB: about 90 full-size frames).  A spine that gets an incast burst
# from a ROS leaf at memory speed while its main thread waits for core 0
# lost 8% of the frames there (uncounted) with the default; a switch
# port of a real fabric buffers megabytes.  The sockets take the default
# when their port is added; it is put back right after.
SYSTEM_PORT_RCVBUF = 8 << 20
RMEM_DEFAULT = "net.core.rmem_default"
# A gratuitous ARP per address, sent by a host out of each of its
# interfaces (argv: the interface, the MAC, the addresses): the NORMAL
# action of every switch on the way learns where the host is.  The ROS
# send everything else to the DCMs through the fabric's flows, which do
# not learn, so without it the requests and ACKs towards the ROS would be
# flooded on every switch (and onto the other HLT hosts' links).  With
# --host-arp off the hosts send it all the same (a raw frame, which ARP
# off does not stop), and the kernel of every host that receives it drops
# it (ARP is off on its interfaces): it adds no neighbour entry.
GARP = r"""
import socket, struct, sys
mac = bytes.fromhex(sys.argv[2].replace(":", ""))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
for ip in sys.argv[3:]:
    a = socket.inet_aton(ip)
    s.send(b"\xff" * 6 + mac + b"\x08\x06"
           + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + mac + a
           + b"\x00" * 6 + a)
"""


# ===================================================================== plan
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


# ====================================================================== map
def shared_burst_bytes(cfg: Config) -> int:
    """The burst the rings sharing a link release together beyond its
    rate (their egress-max-burst-bytes): what one ring of the link would
    release alone, --max-burst-bytes if given, else max-burst full
    frames (at least the two frames the option takes).  Not the
    option's default (32 full frames, NETDEV_MAX_BURST): the rings share
    the link's port buffer, which --max-burst (half of --port-frames)
    is chosen for; with the default, two to eight rings bursting
    together overran a 32-frame DCM port (4-48 frames dropped per run
    in daq-bench's shared-link points, 27 Nov 2026)."""
    if cfg.max_burst_bytes:
        return cfg.max_burst_bytes
    return max(2, cfg.max_burst) * (DAQRING_FRAME + cfg.link_overhead)


def ring_params(cfg: Config, mode: str) -> Dict[str, Any]:
    """The daqring options of one DCM in MODE, with the sharing policy:
    'static' (thesis Fig. 6.8g) gives each of the N rings of an HLT host
    max-rate = the rate one ring would get alone / N, and max-burst = the
    single ring's / N (at least 1), so that N rings released together
    never put more in front of the shared link than one ring would.
    'shared' gives each ring the whole rate as max-rate and binds the N
    rings to the host's port with that rate as egress-max-rate: they draw
    from one token bucket (work-conserving), so one busy DCM may use the
    whole link and several split it."""
    n = cfg.dcms_per_host
    if mode == "daqring-unshaped":
        return {"ring_size": cfg.ring_size, "max_burst": 32,
                "poll_interval_us": 0, "max_rate_bps": 0, "rate_bps": 0,
                "egress_max_rate_bps": 0, "egress_max_burst_bytes": 0,
                "flow_buckets": cfg.flow_buckets_for(cfg.ring_size, 0,
                                                     False),
                "sharing": "none (unshaped)"}
    # Flow fairness is chosen for a ring's share when all N are busy
    # (a full ring drains at rate / N), with either policy.
    buckets = cfg.flow_buckets_for(cfg.ring_size, cfg.max_rate_bps // n,
                                   True)
    if cfg.ring_sharing == "shared":
        rate = cfg.max_rate_bps
        burst = shared_burst_bytes(cfg)
        return {"ring_size": cfg.ring_size, "max_burst": cfg.max_burst,
                "poll_interval_us": 0, "max_rate_bps": rate,
                "rate_bps": rate, "frame_overhead": cfg.link_overhead,
                "egress_max_rate_bps": rate,
                "egress_max_burst_bytes": burst,
                "flow_buckets": buckets,
                "sharing": "shared: %d DCMs bound to their host's link, "
                "max-rate %s each and egress-max-rate %s for all "
                "(work-conserving; max-burst %d, egress-max-burst-bytes "
                "%d, flow-buckets %d)"
                % (n, format_rate(rate), format_rate(rate), cfg.max_burst,
                   burst, buckets)}
    rate = cfg.max_rate_bps // n
    return {"ring_size": cfg.ring_size,
            "max_burst": max(1, cfg.max_burst // n),
            "poll_interval_us": 0, "max_rate_bps": rate, "rate_bps": rate,
            "frame_overhead": cfg.link_overhead,
            "egress_max_rate_bps": 0, "egress_max_burst_bytes": 0,
            "flow_buckets": buckets,
            "sharing": "%s: %s / %d DCMs = %s per ring (max-burst %d, "
            "flow-buckets %d)"
            % (cfg.ring_sharing, format_rate(cfg.max_rate_bps), n,
               format_rate(rate), max(1, cfg.max_burst // n), buckets)}


def fabric_map(plan: FabricPlan, params: Optional[Dict[str, Any]],
               hold_down: int = HOLD_DOWN, db: str = "") -> Dict[str, Any]:
    """The fabric map of a mode: the switches, links and hosts (with
    their MACs) always; the DCMs (matched by their address) with PARAMS'
    ring options, none when PARAMS is None (stock, credits: the
    switches' NORMAL forwarding alone).  DB: with several planes, the
    OVSDB remote of the ovs-vswitchd whose bridges the HLT leaves are
    (make_fabric_plan())."""
    if plan.shared_hlt and not db:
        raise ValueError("%d planes: the map needs the OVSDB the HLT "
                         "leaves share" % plan.planes)
    switches = [{"name": s.name, "role": s.role, "plane": s.plane,
                 "dpdk": s.dpdk, "bridge": s.bridge} for s in plan.switches]
    if db:
        # The HLT leaves that share an ovs-vswitchd name its OVSDB: the
        # fabric names their rings apart (fabric.model.switch_ring()).
        for sw in switches:
            if sw["name"] in plan.hlt_leaves:
                sw["db"] = db
    links = [{"a": "%s:%s" % (lf, lp), "b": "%s:%s" % (sp, spp)}
             for lf, lp, sp, spp in plan.links]
    # Each host's MAC in every plane (the same on all its interfaces:
    # _setup_hosts()): the last hop sets it (--host-arp off needs it).
    hosts = [{"name": plan.ros_name(h), "role": "ros",
              "ip": ros_host_prefix(h.index),
              "ports": {p: "%s:%s" % (plan.ros_leaf(h.ns, p), h.veth)
                        for p in range(plan.planes)},
              "macs": {p: h.mac for p in range(plan.planes)}}
             for h in plan.ros_hosts]
    hosts += [{"name": h.name, "role": "hlt", "ip": h.ips[0],
               "ports": {p: "%s:%s" % (leaf, h.port_in(p))
                         for p, leaf in enumerate(plan.hlt_leaves)},
               "macs": {p: h.mac for p in range(plan.planes)}}
              for h in plan.hlt_hosts]
    doc: Dict[str, Any] = {"fabric": {"hold-down": hold_down,
                                      "switches": switches, "links": links,
                                      "hosts": hosts}}
    if params is None:
        doc["dcms"] = []
        return doc
    defaults: Dict[str, Any] = {"ring-size": params["ring_size"],
                                "max-burst": params["max_burst"],
                                "flow-buckets": params["flow_buckets"]}
    if params["max_rate_bps"]:
        defaults.update({"rate": "%dbit" % params["max_rate_bps"],
                         "frame-overhead": params["frame_overhead"]})
    else:
        defaults["poll-interval"] = 0
    if params.get("egress_max_rate_bps"):
        # Each ring bound to its HLT host's port (the DCM's egress on the
        # HLT leaf), the rings of one host sharing its rate.
        defaults.update({"steering": "bound",
                         "egress-max-rate": "%dbit"
                         % params["egress_max_rate_bps"]})
        if params.get("egress_max_burst_bytes"):
            defaults["egress-max-burst-bytes"] = params[
                "egress_max_burst_bytes"]
    doc["defaults"] = defaults
    doc["dcms"] = [{"name": plan.dcm_name(d), "ring": plan.ring_name(d),
                    "host": plan.dcm_host[d.index], "ip": d.ips[0]}
                   for d in plan.dcms]
    return doc


# ==================================================================== limit
def fabric_limit(cfg: Config, plan: FabricPlan,
                 spines: Optional[int] = None) -> Dict[str, Any]:
    """The emulated fabric's theoretical limit for full event building
    (thesis §6.2.2): B = N_P * N_H * N_R * b_RH with
    b_RH = min(b_H / N_R, b_R / N_H, b_S * N_S / (N_R * N_H)), written
    with each kind of link's own rate (the thesis has one rate b for
    all): b_H the HLT hosts' access links (the tbf), b_R the ROS hosts'
    links and b_S the leaf-spine links.  Here every ROS sits in a ROS pod
    and every HLT host in the HLT pod, so every flow crosses the spines.
    Unshaped veths count as unlimited (None); aggregated ROS namespaces
    count as one ROS link each.  The goodput limit is B times the payload
    efficiency of the link (as the single-switch ideal).  SPINES: the
    spines the HLT leaf reaches (one fewer with a link down)."""
    n_p, n_s = cfg.planes, cfg.spines if spines is None else spines
    n_h, n_r = cfg.hlt_hosts, len(plan.ros_hosts)
    b_h = float(cfg.link_rate_bps)
    inf = float("inf")
    b_r = inf
    b_s = inf
    terms = {"hlt_link": b_h / n_r, "ros_link": b_r / n_h,
             "spine": b_s * n_s / (n_r * n_h)}
    b_rh = min(terms.values())
    total = n_p * n_h * n_r * b_rh
    eff = payload_efficiency(cfg.fragment_size, cfg.mss, cfg.link_overhead)
    bound = min(terms, key=lambda k: terms[k])

    def num(v: float) -> Optional[float]:
        return None if v == inf else v
    return {"formula": "B = N_P * N_H * N_R * min(b_H / N_R, b_R / N_H, "
            "b_S * N_S / (N_R * N_H))",
            "inputs": {"N_P": n_p, "N_S": n_s, "N_H": n_h, "N_R": n_r,
                       "b_H_bps": b_h, "b_R_bps": num(b_r),
                       "b_S_bps": num(b_s)},
            "b_RH_bps": b_rh, "bound_by": bound, "limit_bps": total,
            "efficiency": eff, "goodput_bps": total * eff}


def failover_link(plan: FabricPlan) -> Tuple[str, str, str, str]:
    """The link --failover takes down: the HLT leaf's to the second
    spine (leaf, its port, spine, its port)."""
    return next(lk for lk in plan.links
                if lk[0] == HLT_LEAF and lk[2] == "spine1")


def degraded_formula(lim: Dict[str, Any]) -> str:
    """The degraded limit (fabric_limit with one spine fewer) with its
    formula's inputs, for the summary."""
    i = lim["inputs"]

    def r(v: Optional[float]) -> str:
        return "inf" if v is None else format_rate(v)
    return ("degraded limit (%s's link to one spine lost): %s with N_P %d, "
            "N_S %d, N_H %d, N_R %d, b_H %s, b_R %s, b_S %s = %s (bound by "
            "%s), x payload efficiency %.3f = %s goodput"
            % (HLT_LEAF, lim["formula"], i["N_P"], i["N_S"], i["N_H"],
               i["N_R"], r(i["b_H_bps"]), r(i["b_R_bps"]), r(i["b_S_bps"]),
               format_rate(lim["limit_bps"]), lim["bound_by"],
               lim["efficiency"], format_rate(lim["goodput_bps"])))


def timeline(spans: Sequence[Tuple[float, float]], nbytes: Sequence[int],
             samples: Sequence[Tuple[float, int]], end: float,
             width: float = TIMELINE_BIN) -> List[Dict[str, float]]:
    """Goodput and retransmitted segments per bin of WIDTH seconds: the
    bytes of the events that completed in the bin, and the growth of the
    retransmission count (SAMPLES: (time, RetransSegs so far))."""
    n = max(1, int(end / width) + 1)
    got = [0] * n
    for (_, z), b in zip(spans, nbytes):
        got[min(n - 1, max(0, int(z / width)))] += b
    re_ = [0] * n
    last = samples[0][1] if samples else 0
    for t, v in samples:
        re_[min(n - 1, max(0, int(t / width)))] += v - last
        last = v
    return [{"t_s": i * width, "goodput_bps": got[i] * 8 / width,
             "retrans_segs": re_[i]} for i in range(n)]


def recovery(spans: Sequence[Tuple[float, float]], nbytes: Sequence[int],
             since: float, target_bps: float,
             window: float = RECOVERY_WINDOW) -> Optional[float]:
    """Seconds from SINCE to the first moment T from which the events
    completed in [T, T + WINDOW] carried at least TARGET_BPS (0 if at
    once); None if no such window ends before the last event does."""
    ends = sorted((z, b) for (_, z), b in zip(spans, nbytes))
    if not ends:
        return None
    step = 0.05
    t = since
    while t + window <= ends[-1][0] + 1e-9:
        got = sum(b for z, b in ends if t < z <= t + window)
        if got * 8 / window >= target_bps:
            return t - since
        t += step
    return None


class Failover(threading.Thread):
    """--failover in one mode: the link goes down at DOWN and up at UP
    (seconds from the DCMs' go); meanwhile the retransmissions of every
    host and, on the first ROS leaf, the routes out of its uplink to the
    failed spine are sampled (when the fabric moved the DCMs away, and
    back)."""

    def __init__(self, runner: "FabricRunner") -> None:
        super().__init__(daemon=True)
        self.runner = runner
        self.down_at, self.up_at = runner.cfg.failover
        self.link = failover_link(runner.fplan)
        self.t0 = time.monotonic()
        self.halt = threading.Event()
        self.samples: List[Tuple[float, int]] = []
        self.routes: List[Tuple[float, int]] = []
        self.events: Dict[str, float] = {}
        self.error: Optional[str] = None
        # The DCMs' flows through the failed spine before it failed.
        self.before = 0
        self.back = threading.Event()
        # One process per host namespace: /proc/PID/net/snmp is that
        # namespace's (no fork per sample).
        seen: Dict[str, int] = {}
        for pid, ns in runner.agent_ns.items():
            if ns in runner.fplan.hosts_ns and ns not in seen and \
                    os.path.exists("/proc/%d" % pid):
                seen[ns] = pid
        self.pids = list(seen.values())
        self.last: Dict[int, int] = {}

    def retrans(self) -> int:
        """Retransmitted segments of every host so far (a namespace whose
        process has exited counts as when it was last read)."""
        for pid in self.pids:
            c = parse_snmp(read_text("/proc/%d/net/snmp" % pid))
            if "Tcp.RetransSegs" in c:
                self.last[pid] = c["Tcp.RetransSegs"]
        return sum(self.last.values())

    def uplink_routes(self) -> int:
        """The DCMs' flows through the failed spine: on ros-leaf0 out of
        its uplink to spine1 (towards the DCMs), on the HLT leaf out of
        its uplink to spine1 (from the DCMs)."""
        n = 0
        for name in ("ros-leaf0", HLT_LEAF):
            sw = self.runner.switches[name]
            fsw = self.runner.fplan.switch(name)
            flows = fabric_flows(fsw, sw.ofctl("--names", "dump-flows",
                                               fsw.bridge),
                                 sw.ofctl("--names", "dump-groups",
                                          fsw.bridge))
            n += sum(1 for f in flows
                     if f[2] == "up1" and f[1].startswith(NET + ".0."))
        return n

    def set_link(self, up: bool) -> None:
        _, _, spine, port = self.link
        run(["ip", "-n", self.runner.fplan.switch(spine).ns, "link", "set",
             port, "up" if up else "down"])

    def run(self) -> None:
        try:
            self._run()
        except Exception as e:              # reported, not raised
            self.error = str(e)
        finally:
            if "down" in self.events and "up" not in self.events:
                try:
                    self.set_link(True)
                    self.events["up"] = time.monotonic() - self.t0
                except RunError as e:
                    self.error = (self.error or "") + "; link up: %s" % e

    def _run(self) -> None:
        next_routes = 0.0
        while not self.halt.wait(FAILOVER_SAMPLE):
            t = time.monotonic() - self.t0
            self.samples.append((t, self.retrans()))
            # (Each event at the moment it happened: the reads before it
            # take tenths of a second.)
            if "down" not in self.events and t >= self.down_at:
                self.before = self.uplink_routes()
                self.set_link(False)
                t = self.events["down"] = time.monotonic() - self.t0
            elif ("down" in self.events and "up" not in self.events
                  and t >= self.up_at):
                self.set_link(True)
                t = self.events["up"] = time.monotonic() - self.t0
            if "down" in self.events and t >= next_routes and (
                    "rerouted" not in self.events
                    or ("up" in self.events and "back" not in self.events)):
                next_routes = t + 0.25
                n = self.uplink_routes()
                # When the flows were read: the reads (four ovs-ofctl on
                # the loaded core) take tenths of a second, and the
                # agents may reprogram meanwhile.
                t = time.monotonic() - self.t0
                self.routes.append((t, n))
                if n == 0 and "rerouted" not in self.events:
                    self.events["rerouted"] = t
                elif (n == self.before and "up" in self.events
                      and "rerouted" in self.events):
                    self.events["back"] = t
                    self.back.set()

    def settle(self, timeout: float) -> None:
        """After the events: until the routes are back through the
        recovered link (the DCMs home after the hold-down), at most
        TIMEOUT seconds, so that a run whose events end early still
        sees the reprogramming."""
        if "down" in self.events and "rerouted" in self.events:
            self.back.wait(timeout)

    def result(self) -> Dict[str, Any]:
        ev = self.events
        out: Dict[str, Any] = {
            "link": "%s:%s-%s:%s" % self.link,
            "down_at_s": ev.get("down"), "up_at_s": ev.get("up"),
            "rerouted_after_s": (ev["rerouted"] - ev["down"]
                                 if "rerouted" in ev else None),
            "back_after_s": (ev["back"] - ev["up"]
                             if "back" in ev and "up" in ev else None),
            "flows_via_failed_spine_before": self.before,
            "routes_via_failed_spine": [
                {"t_s": t, "flows": n} for t, n in self.routes],
            "retrans_samples": [{"t_s": t, "retrans_segs": n}
                                for t, n in self.samples]}
        if self.error:
            out["error"] = self.error
        return out


def no_flood_ports(plan: FabricPlan) -> Dict[str, List[str]]:
    """Per switch, its ports towards (or of) a spine other than the
    first: NORMAL's tree is the first spine (see basic_connectivity)."""
    out: Dict[str, List[str]] = {}
    first = {plane_name(p, "spine0") for p in range(plan.planes)}
    for leaf, up, spine, down in plan.links:
        if spine not in first:
            out.setdefault(leaf, []).append(up)
            out.setdefault(spine, []).append(down)
    return out


def describe_fabric(cfg: Config, plan: FabricPlan) -> str:
    lim = fabric_limit(cfg, plan)
    i = lim["inputs"]

    def r(v: Optional[float]) -> str:
        return "unlimited (unshaped veth)" if v is None else format_rate(v)
    pmd = ",".join(map(str, cfg.pmd_cpus))
    other = ",".join(map(str, cfg.agent_cpus))
    sw = ", ".join("%s (%s, %d ports)" % (
        s.name, "DPDK, PMD on core %s" % pmd if s.dpdk
        else "no DPDK, core %s" % other, len(s.ports))
        for s in plan.switches)
    return "\n".join([
        "fabric: %d plane x %d spine, %d ROS leaves, 1 HLT leaf; %d ROS in "
        "%d ROS hosts, %d HLT hosts x %d DCMs (one namespace and one "
        "access link each)%s" % (
            cfg.planes, cfg.spines, cfg.ros_leaves, cfg.ros,
            len(plan.ros_hosts), cfg.hlt_hosts, cfg.dcms_per_host,
            "" if plan.planes == 1 else
            "; per plane: the leaves and spines above, a link per host"),
        "switches: %s" % sw,
        "fabric database: %d-member Raft cluster; one ovs-daqfabric-agent "
        "per switch (%s plans)" % (cfg.fabric_db_members, HLT_LEAF),
        "limit (thesis 6.2.2): %s; N_P %d, N_S %d, N_H %d, N_R %d, b_H %s, "
        "b_R %s, b_S %s: B = %s (bound by %s), goodput limit %s"
        % (lim["formula"], i["N_P"], i["N_S"], i["N_H"], i["N_R"],
           r(i["b_H_bps"]), r(i["b_R_bps"]), r(i["b_S_bps"]),
           format_rate(lim["limit_bps"]), lim["bound_by"],
           format_rate(lim["goodput_bps"])),
        "ring sharing: %s" % ring_params(cfg, "daqring")["sharing"],
        "host ARP: %s" % (
            "static (a permanent neighbour entry for every peer)"
            if cfg.host_arp == "static" else
            "off (no ARP, no neighbour entries: every frame leaves "
            "addressed to its sender's own MAC, the last hop sets the "
            "destination's)"),
    ])


# =================================================================== routes
def normal_packets(dump: str) -> int:
    """Packets of the flows with action NORMAL in ovs-ofctl dump-flows
    output DUMP (the switch's default forwarding, not the fabric's)."""
    n = 0
    for line in dump.splitlines():
        if line.rstrip().endswith("actions=NORMAL"):
            for f in line.replace(" ", "").split(","):
                if f.startswith("n_packets="):
                    n += int(f[len("n_packets="):])
    return n


def fabric_flows(fsw: FabricSwitch, dump: str,
                 groups: str = "") -> List[List[str]]:
    """The fabric's flows (cookie 0xdac7...) in ovs-ofctl dump-flows
    --names output DUMP of switch FSW, each as [direction, address,
    port]: "to" ADDRESS (nw_dst) or "from" ADDRESS (nw_src), out of the
    port named PORT (a fabric port, or a daqring; for a fast_failover
    group of GROUPS, dump-groups --names output, its first bucket's
    port: the primary, its backups aside), or "ring" RING for the flow
    that drains a ring into its egress.  A flow that sets the
    destination MAC first (the last hop towards a host: mod_dl_dst, or
    a set_field of eth_dst over OpenFlow 1.2 and later) has that MAC as
    a fourth element."""
    names = {str(p.ofport): p.name for p in fsw.ports}
    primary = {}
    for line in groups.splitlines():
        g = parse_group(line)
        if g is not None and g[1][1]:
            primary["group:%d" % g[0]] = g[1][1][0][0]
    out = []
    for line in dump.splitlines():
        line = line.strip()
        if not line.startswith("cookie=0xdac7"):
            continue
        head, _, actions = line.partition(" actions=")
        fields = dict(f.split("=", 1) for f in head.replace(" ", "")
                      .split(",") if "=" in f)
        dl_dst, actions = split_dl_dst(actions.strip())
        mac = [dl_dst] if dl_dst else []
        port = primary.get(actions, actions)
        port = (port[len("output:"):] if port.startswith("output:")
                else port).strip('"')
        if "in_port" in fields:
            # A ring's drain (two-rule mode): out of its host's port.
            out.append(["ring", fields["in_port"].strip('"'),
                        names.get(port, port)] + mac)
        elif "nw_src" in fields and "nw_dst" not in fields:
            out.append(["from", fields["nw_src"], names.get(port, port)]
                       + mac)
        else:
            out.append(["to", fields.get("nw_dst", "?"),
                        names.get(port, port)] + mac)
    return sorted(out)


def bound_drains(ifaces: Dict[str, Dict[str, Any]]) -> List[List[str]]:
    """The way out of each daqring bound to its egress (options:egress,
    --ring-sharing shared), as fabric_flows gives a ring's drain flow in
    two-rule mode: ["ring", ring, egress port].  A bound ring needs no
    drain flow, the binding is its route."""
    out = []
    for name, row in sorted(ifaces.items()):
        opts = row.get("options")
        if row.get("type") == "daqring" and isinstance(opts, dict) \
                and opts.get("egress"):
            out.append(["ring", name, str(opts["egress"])])
    return out


def expected_flows(plan: FabricPlan, assignments: Dict[str, str]
                   ) -> Dict[str, List[List[str]]]:
    """What the fabric's cabling says each switch of PLAN must hold, as
    fabric_flows gives it, with the DCMs ASSIGNMENTS (DCM -> "plane/
    spine"; none in the modes without rings).  Towards each ROS host, in
    every plane: its leaf out of its port, every spine down to its leaf.
    Towards each DCM: every ROS leaf of its plane up to the DCM's spine,
    that spine down to the plane's HLT leaf, there into its ring; from
    the DCM: that HLT leaf up to the DCM's spine.  Its ring, on the HLT
    leaf of every plane (standby rings), drains out of its host's
    port.  The last hop towards a host sets its MAC (fabric_map() gives
    every host its MACs): the ROS leaf's route out of the ROS host's
    port and the HLT leaf's flow into the DCM's ring."""
    out: Dict[str, List[List[str]]] = {s.name: [] for s in plan.switches}

    def port(a: str, b: str) -> str:
        return next(lk[1] if lk[0] == a else lk[3] for lk in plan.links
                    if (lk[0], lk[2]) in ((a, b), (b, a)))
    for p in range(plan.planes):
        spines = [s.name for s in plan.switches
                  if s.role == "spine" and s.plane == p]
        for h in plan.ros_hosts:
            leaf = plan.ros_leaf(h.ns, p)
            pfx = ros_host_prefix(h.index)
            out[leaf].append(["to", pfx, h.veth, h.mac])
            for sp in spines:
                out[sp].append(["to", pfx, port(sp, leaf)])
    for d in plan.dcms:
        a = assignments.get(plan.dcm_name(d))
        if a is None:
            continue
        plane_s, sp = a.split("/", 1)
        plane = int(plane_s)
        hlt = plan.hlt_leaves[plane]
        ip = d.ips[0]
        for leaf in sorted({plan.ros_leaf(h.ns, plane)
                            for h in plan.ros_hosts}):
            out[leaf].append(["to", ip, port(leaf, sp)])
        out[sp].append(["to", ip, port(sp, hlt)])
        out[hlt].append(["from", ip, port(hlt, sp)])
        for p, leaf in enumerate(plan.hlt_leaves):
            out[leaf].append(["to", ip, plan.ring_on(d, leaf), d.mac])
            out[leaf].append(["ring", plan.ring_on(d, leaf),
                              plane_name(p, d.veth)])
    return {k: sorted(v) for k, v in out.items()}


def check_routes(plan: FabricPlan, flows: Dict[str, List[List[str]]],
                 assignments: Dict[str, str]) -> List[str]:
    """Where FLOWS (per switch, fabric_flows) differ from expected_flows:
    one message per switch, [] when they are the same."""
    want = expected_flows(plan, assignments)
    wrong = []
    for sw in sorted(want):
        have = flows.get(sw, [])
        if have != want[sw]:
            extra = [f for f in have if f not in want[sw]]
            missing = [f for f in want[sw] if f not in have]
            wrong.append("%s: missing %s, unexpected %s"
                         % (sw, [" ".join(f) for f in missing],
                            [" ".join(f) for f in extra]))
    return wrong


def host_arp_state(links: Sequence[Dict[str, Any]],
                   neighs: Sequence[Dict[str, Any]], devs: Sequence[str],
                   mac: str) -> Dict[str, Any]:
    """What a host's kernel holds of ARP, from 'ip -j link show' LINKS
    and 'ip -j neigh show nud all' NEIGHS of its namespace: of its
    fabric interfaces DEVS, those with ARP off (NOARP); its IPv4
    neighbour entries on them by state; and how many of those hold a
    MAC other than its own MAC (--host-arp off: none, the kernel
    addresses every frame to itself; static: one per peer and
    interface)."""
    noarp = sorted(ln["ifname"] for ln in links
                   if ln.get("ifname") in devs
                   and "NOARP" in ln.get("flags", []))
    states: Dict[str, int] = {}
    other = 0
    for n in neighs:
        if n.get("dev") not in devs or ":" in n.get("dst", ":"):
            continue
        for st in n.get("state") or ["NONE"]:
            states[st] = states.get(st, 0) + 1
        lladdr = n.get("lladdr", "").lower()
        other += bool(lladdr) and lladdr != mac.lower()
    return {"arp_off": noarp, "neighbours": states, "peer_macs": other}


# ================================================================ machinery
def pin(pid: int, cpus: Sequence[int], skip_pmd: bool = False) -> None:
    """Every thread of process PID onto CPUS (its PMD threads aside)."""
    task = "/proc/%d/task" % pid
    for tid in os.listdir(task):
        if skip_pmd and read_text("%s/%s/comm" % (task, tid)).startswith(
                "pmd"):
            continue
        try:
            os.sched_setaffinity(int(tid), set(cpus))
        except (ProcessLookupError, PermissionError):
            pass


def _preexec(cpus: Sequence[int]) -> Any:
    def fn() -> None:
        die_with_parent()
        os.sched_setaffinity(0, set(cpus))
    return fn


class FabricDatabase:
    """The fabric database: a Raft cluster of N ovsdb-servers (unix
    sockets under DIR), stopped by the Cleanup."""

    def __init__(self, cfg: Config, d: str, n: int,
                 cleanup: Cleanup) -> None:
        self.cfg = cfg
        self.dir = d
        self.n = n
        self.cleanup = cleanup
        self.procs: List["subprocess.Popen[bytes]"] = []

    def path(self, i: int, ext: str) -> str:
        return os.path.join(self.dir, "s%d.%s" % (i, ext))

    def remotes(self) -> str:
        return ",".join("unix:" + self.path(i, "sock")
                        for i in range(1, self.n + 1))

    def start(self) -> None:
        b = self.cfg.binaries
        os.makedirs(self.dir, exist_ok=True)
        run([b.ovsdb_tool, "create-cluster", self.path(1, "db"),
             schema_path(), "unix:" + self.path(1, "raft")])
        for i in range(2, self.n + 1):
            run([b.ovsdb_tool, "join-cluster", self.path(i, "db"),
                 SCHEMA_NAME, "unix:" + self.path(i, "raft"),
                 "unix:" + self.path(1, "raft")])
        self.cleanup.push("stop the fabric database", self.stop)
        for i in range(1, self.n + 1):
            with open(self.path(i, "out"), "w") as out:
                self.procs.append(subprocess.Popen(
                    [b.ovsdb_server, "--no-chdir", "-vconsole:off",
                     "--log-file=" + self.path(i, "log"),
                     "--unixctl=" + self.path(i, "ctl"),
                     "--remote=punix:" + self.path(i, "sock"),
                     self.path(i, "db")], stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=_preexec(self.cfg.agent_cpus)))
        deadline = time.monotonic() + 60
        while True:
            st = [self.status(i) for i in range(1, self.n + 1)]
            if (all("Status: cluster member" in s for s in st)
                    and any("Role: leader" in s for s in st)):
                return
            if time.monotonic() > deadline:
                raise RunError("the fabric database's %d members did not "
                               "form a cluster within 60 s (see %s)"
                               % (self.n, self.dir))
            time.sleep(0.2)

    def status(self, i: int) -> str:
        p = self.procs[i - 1]
        if p.poll() is not None:
            raise RunError("fabric database member %d exited: %s"
                           % (i, read_text(self.path(i, "out"))[-1000:]))
        return run([self.cfg.binaries.appctl, "-t", self.path(i, "ctl"),
                    "cluster/status", SCHEMA_NAME], check=False)

    def stop(self) -> None:
        for p in self.procs:
            stop_process(p)


class SystemSwitch(Sandbox):
    """A switch without DPDK: the userspace datapath with the veths as
    system ports, polled by ovs-vswitchd's main thread."""

    def __init__(self, cfg: Config, fsw: FabricSwitch, workdir: str,
                 cleanup: Cleanup) -> None:
        super().__init__(cfg.binaries, workdir, netns=fsw.ns,
                         label=fsw.name)
        self.cfg = cfg
        self.fsw = fsw
        self.bridge = BRIDGE
        self.cleanup = cleanup

    def start(self) -> None:  # type: ignore[override]
        os.makedirs(self.dir, exist_ok=True)
        self.cleanup.push("stop %s" % self.label,
                          lambda: self.stop(fast=True))
        super().start([])
        pin(self.pid(), self.cfg.agent_cpus)
        assert self.ovsdb is not None
        pin(self.ovsdb.pid, self.cfg.agent_cpus)
        self.add_bridge(self.bridge)

    def add_ports(self) -> None:
        """The ports; those with an access link's tbf (an HLT host's,
        when the HLT leaf runs without DPDK) get QoS linux-noop, else
        ovs-vswitchd replaces the veth's root qdisc with the default
        one."""
        args: List[str] = []
        hlt = self.fsw.name == plane_name(self.fsw.plane, HLT_LEAF)
        for p in self.fsw.ports:
            args += ["--", "add-port", self.bridge, p.name, "--", "set",
                     "Interface", p.name, "ofport_request=%d" % p.ofport]
            if p.to_host and hlt:
                args += ["--", "set", "Port", p.name, "qos=@noop"]
        if hlt:
            args += ["--", "--id=@noop", "create", "QoS", "type=linux-noop"]
        self.vsctl(*args, timeout=60)
        check_ports(self, [p.name for p in self.fsw.ports])

    def stats(self) -> Dict[str, Dict[str, int]]:
        return Switch.stats(self)  # type: ignore[arg-type]


def check_ports(sw: Sandbox, names: List[str]) -> None:
    deadline = time.monotonic() + 30
    while True:
        ifs = sw.interfaces()
        bad = [n for n in names if not isinstance(ifs.get(n, {}).get(
            "ofport"), int) or ifs[n]["ofport"] <= 0]  # type: ignore
        if not bad:
            return
        errs = ["%s: %s" % (n, ifs.get(n, {}).get("error")) for n in bad
                if ifs.get(n, {}).get("error") not in (None, [], "")]
        if errs or time.monotonic() > deadline:
            raise RunError("%s: ports not added: %s" % (
                sw.label, "; ".join(errs) or " ".join(bad)))
        time.sleep(0.2)


class rcvbuf:
    """Within: net.core.rmem_default at least BYTES (the whole machine's
    default socket receive buffer, so only while sockets that need it are
    made); put back on leaving, or by the Cleanup if the run dies."""

    def __init__(self, nbytes: int, cleanup: Cleanup) -> None:
        self.nbytes = nbytes
        self.cleanup = cleanup
        self.old: Optional[int] = None

    def restore(self) -> None:
        if self.old is not None:
            run(["sysctl", "-q", "-w", "%s=%d" % (RMEM_DEFAULT, self.old)])
            self.old = None

    def __enter__(self) -> "rcvbuf":
        old = int(run(["sysctl", "-n", RMEM_DEFAULT]))
        if old < self.nbytes:
            self.old = old
            self.cleanup.push("restore " + RMEM_DEFAULT, self.restore)
            run(["sysctl", "-q", "-w",
                 "%s=%d" % (RMEM_DEFAULT, self.nbytes)])
        return self

    def __exit__(self, *exc: Any) -> None:
        self.restore()


class _LeafPlan:
    """What incast.switch.Switch needs of a plan: its namespace and the
    tag of its DPDK file prefix."""

    def __init__(self, ns: str, tag: str) -> None:
        self.switch_ns = ns
        self.tag = tag


# =================================================================== runner
class FabricRunner(Runner):
    """Runner's modes and measurements on the fabric: its own topology,
    switches, database and agents; modes programmed by fabric maps."""

    def __init__(self, cfg: Config, plan: FabricPlan,
                 cleanup: Cleanup) -> None:
        super().__init__(cfg, plan, cleanup)  # type: ignore[arg-type]
        self.fplan = plan
        self.limit = fabric_limit(cfg, plan)
        self.ideal["goodput_bps"] = self.limit["goodput_bps"]
        self.ideal["per_dcm_goodput_bps"] = (
            self.limit["goodput_bps"] / cfg.dcms)
        # The ideal event time of a DCM: its share of its host's link.
        # (With several planes, a host has a link on each and the
        # planner spreads its DCMs over them.)
        self.ideal["collection_time_s"] = ideal_collection_time(
            cfg.link_rate_bps * cfg.planes / cfg.dcms_per_host, cfg.ros,
            cfg.fragment_size, cfg.mss, cfg.link_overhead)
        # Switch name -> its ovs-vswitchd (one for the HLT leaves of all
        # planes, self.switch).
        self.switches: Dict[str, Sandbox] = {}
        self.agents: Dict[str, "subprocess.Popen[bytes]"] = {}
        self.db: Optional[FabricDatabase] = None
        self.generations: List[Dict[str, Any]] = []
        self.failover: Optional[Failover] = None
        self.failovers: Dict[str, Dict[str, Any]] = {}

    # ------------------------------------------------------------ setup
    def setup(self) -> None:
        cfg = self.cfg
        plan = self.fplan
        # This process and every process it starts (tc, ovs-ofctl, the
        # samplers of --failover) off the PMD's core: nothing of ours but
        # the PMD thread runs there.
        pin(os.getpid(), cfg.agent_cpus)
        # Short: unix socket paths hold 108 bytes.
        self.workdir = tempfile.mkdtemp(prefix="daq-incast.%s." % plan.tag,
                                        dir="/tmp")
        self.cleanup.push("remove " + self.workdir,
                          lambda: shutil.rmtree(self.workdir, True))
        if cfg.log_dir:
            self.cleanup.push("save logs", self._save_logs)
        self.progress.show("creating %d namespaces"
                           % len(plan.namespaces()))
        create_topology(cfg, plan, self.cleanup)
        self.hosts_cc = {ns: run(["ip", "netns", "exec", ns, "sysctl", "-n",
                                  "net.ipv4.tcp_congestion_control"]).strip()
                         for ns in plan.hosts_ns}
        self.progress.show("starting the fabric database (%d members)"
                           % cfg.fabric_db_members)
        self.db = FabricDatabase(cfg, os.path.join(self.workdir, "db"),
                                 cfg.fabric_db_members, self.cleanup)
        self.db.start()
        for s in plan.switches:
            d = os.path.join(self.workdir, s.name)
            self.progress.show("starting %s%s" % (s.name, " (DPDK)"
                                                  if s.dpdk else ""))
            if s.dpdk and s.host_switch:
                # A bridge of another switch's ovs-vswitchd (the HLT
                # leaves of several planes: see make_fabric_plan()).
                sw = self.switches[s.host_switch]
                assert isinstance(sw, Switch)
                sw.add_bridge(s.bridge)
                try:
                    sw.add_ports([p.dpdk_host(s.ns) for p in s.ports],
                                 bridge=s.bridge)
                except ModeUnavailable as e:
                    raise RunError("%s: ports failed: %s\n%s"
                                   % (s.name, e, sw.log_tail()))
                pin(sw.pid(), cfg.agent_cpus, skip_pmd=True)
            elif s.dpdk:
                sw = Switch(cfg, _LeafPlan(s.ns, plan.tag),  # type: ignore
                            d, self.cleanup)
                sw.label = s.name
                sw.start()
                try:
                    sw.add_ports([p.dpdk_host(s.ns) for p in s.ports])
                except ModeUnavailable as e:
                    raise RunError("%s: ports failed: %s\n%s"
                                   % (s.name, e, sw.log_tail()))
                pin(sw.pid(), cfg.agent_cpus, skip_pmd=True)
                assert sw.ovsdb is not None
                pin(sw.ovsdb.pid, cfg.agent_cpus)
                self.switch = sw
            else:
                ssw = SystemSwitch(cfg, s, d, self.cleanup)
                ssw.start()
                with rcvbuf(SYSTEM_PORT_RCVBUF, self.cleanup):
                    ssw.add_ports()
                self.switches[s.name] = ssw
                continue
            self.switches[s.name] = sw
        access_links(cfg, plan)
        self.basic_connectivity()
        self.cleanup.push("stop the fabric agents", self._stop_fabric_agents)
        for s in plan.switches:
            self._start_agent(s.name, planner=(s.name == HLT_LEAF))
        if plan.planes > 1:
            for ns, name in self.host_names():
                self._start_host_agent(ns, name)
        self.cleanup.push("stop agents", self._stop_agents)
        self._start_ros()

    def basic_connectivity(self) -> None:
        """The fabric's default forwarding, as the thesis installs it
        before the controller programs any DCM (§6.2.3): NORMAL over a
        tree, the first spine.  Every port towards another spine is
        no-flood, so that NORMAL neither loops nor learns a host behind
        it; the DCMs' routes (the agents') use every spine all the same."""
        for name, ports in no_flood_ports(self.fplan).items():
            for port in ports:
                self.switches[name].ofctl("mod-port",
                                          self.fplan.switch(name).bridge,
                                          port,
                                          "no-flood")

    def _start_agent(self, name: str, planner: bool) -> None:
        sw = self.switches[name]
        assert self.db is not None
        agent = tool_path("ovs-daqfabric-agent")
        if not agent:
            raise RunError("ovs-daqfabric-agent not found next to "
                           "daq-incast or on PATH")
        d = os.path.join(self.workdir, name)
        os.makedirs(d, exist_ok=True)
        cmd = [sys.executable, agent, "--node", name,
               "--db", self.db.remotes(), "--ovsdb", sw.db,
               "--bridge", self.fplan.switch(name).bridge,
               "--interval", AGENT_INTERVAL,
               "--timeout", "60", "--state-file",
               os.path.join(d, "agent.json"),
               "--unixctl", os.path.join(d, "agent.ctl"),
               "--log-file=" + os.path.join(d, "agent.log"),
               "--ofctl", sw.bin.ofctl, "-vconsole:off", "--no-chdir"]
        if planner:
            cmd.append("--planner")
        with open(os.path.join(d, "agent.out"), "w") as out:
            self.agents[name] = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=sw.env,
                start_new_session=True,
                preexec_fn=_preexec(self.cfg.agent_cpus))

    def host_names(self) -> List[Tuple[str, str]]:
        """(namespace, name in the fabric map) of every host."""
        return ([(h.ns, self.fplan.ros_name(h))
                 for h in self.fplan.ros_hosts]
                + [(h.ns, h.name) for h in self.fplan.hlt_hosts])

    def _start_host_agent(self, ns: str, name: str) -> None:
        """With several planes, the agent of a host (ovs-daqfabric-agent
        --host) in its namespace: it routes each DCM's traffic out of
        the host's interface to the DCM's plane, as the planner assigns
        it (thesis 6.3.1, where OVS on the hosts did it)."""
        assert self.db is not None
        agent = tool_path("ovs-daqfabric-agent")
        if not agent:
            raise RunError("ovs-daqfabric-agent not found next to "
                           "daq-incast or on PATH")
        d = os.path.join(self.workdir, "host-" + name)
        os.makedirs(d, exist_ok=True)
        cmd = ["ip", "netns", "exec", ns, sys.executable, agent,
               "--host", name, "--db", self.db.remotes(),
               "--interval", AGENT_INTERVAL, "--timeout", "60",
               "--unixctl", os.path.join(d, "agent.ctl"),
               "--log-file=" + os.path.join(d, "agent.log"),
               "-vconsole:off", "--no-chdir"]
        for p, dev in enumerate(self.fplan.host_devs):
            cmd += ["--plane-dev", "%d=%s" % (p, dev)]
        sw = self.switches[HLT_LEAF]
        with open(os.path.join(d, "agent.out"), "w") as out:
            self.agents["host:" + name] = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, env=sw.env,
                start_new_session=True,
                preexec_fn=_preexec(self.cfg.agent_cpus))

    def _stop_fabric_agents(self) -> None:
        for p in self.agents.values():
            stop_process(p)

    def _save_logs(self) -> None:
        assert self.cfg.log_dir
        os.makedirs(self.cfg.log_dir, exist_ok=True)
        for top, _, files in os.walk(self.workdir):
            for f in files:
                if f.endswith((".log", ".out", ".json")):
                    rel = os.path.relpath(os.path.join(top, f),
                                          self.workdir)
                    shutil.copy(os.path.join(top, f), os.path.join(
                        self.cfg.log_dir, rel.replace("/", "-")))

    # ------------------------------------------------------------ modes
    def program(self, mode: str, params: Dict[str, Any]) -> None:
        """Every mode is a fabric map applied through the fabric database
        (ovs-daqctl fabric apply --wait): the daqring modes with the DCMs,
        stock and credits without (no rings, no routes).  Then checks the
        outcome on the switches: the HLT leaf has exactly the rings of the
        map, and every other switch a route per DCM."""
        ring_mode = mode.startswith("daqring")
        doc = fabric_map(self.fplan, params if ring_mode else None,
                         db=self.switch.db if self.fplan.shared_hlt
                         and self.switch else "")
        path = os.path.join(self.workdir, "fabric-map.%s.json" % mode)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        assert self.db is not None
        t0 = time.monotonic()
        try:
            out = run([sys.executable, daqctl_path(), "--db",
                       self.db.remotes(), "--timeout", str(APPLY_TIMEOUT),
                       "fabric", "apply", path, "--wait"],
                      timeout=APPLY_TIMEOUT + 30)
        except RunError as e:
            raise ModeUnavailable("fabric apply failed: %s" % e)
        applied_s = time.monotonic() - t0
        got = self.outcome()
        for leaf in self.fplan.hlt_leaves:
            want = sorted(self.fplan.ring_on(d, leaf)
                          for d in self.fplan.dcms) if ring_mode else []
            if got["rings_of"][leaf] != want:
                raise ModeUnavailable(
                    "after fabric apply, %s holds rings %s, not %s"
                    % (leaf, got["rings_of"][leaf], want))
        got["assignments"] = self.assignments()
        wrong = check_routes(self.fplan, got["flows"],
                             got["assignments"] if ring_mode else {})
        if wrong:
            raise ModeUnavailable("after fabric apply, the switches' "
                                  "routes are not the fabric's: %s"
                                  % "; ".join(wrong))
        got["routes"] = {sw: len(f) for sw, f in got["flows"].items()}
        if self.fplan.planes > 1:
            got["host_planes"] = self.wait_host_planes(
                got["assignments"] if ring_mode else {})
        self.generations.append({"mode": mode, "apply_s": applied_s,
                                 "outcome": got,
                                 "output": out.strip().splitlines()[-3:]})
        self.announce()

    def host_planes(self) -> Dict[str, Dict[str, int]]:
        """Per host, the plane its kernel sends each DCM's traffic on
        (ip route get): a ROS host's towards the DCM, an HLT host's from
        the DCM to its first ROS host's first address.  DCM name ->
        plane (-1: not out of a plane's interface)."""
        plan = self.fplan
        devs = plan.host_devs
        out: Dict[str, Dict[str, int]] = {}

        def plane(ns: str, *where: str) -> int:
            r = json.loads(run(["ip", "-n", ns, "-j", "route", "get"]
                               + list(where)) or "[]")
            dev = r[0].get("dev") if r else None
            return devs.index(dev) if dev in devs else -1
        ros = {h.ns for h in plan.ros_hosts}
        for ns, name in self.host_names():
            if ns in ros:
                out[name] = {plan.dcm_name(d): plane(ns, d.ips[0])
                             for d in plan.dcms}
            else:
                out[name] = {plan.dcm_name(d): plane(
                    ns, plan.ros_hosts[0].ips[0], "from", d.ips[0])
                    for d in plan.dcms if d.ns == ns}
        return out

    def wait_host_planes(self, assignments: Dict[str, str]
                         ) -> Dict[str, Dict[str, int]]:
        """Until every host sends each DCM's traffic on the DCM's plane
        (ASSIGNMENTS, DCM -> "plane/spine"), as its agent routes it
        (ovs-daqfabric-agent --host); DCMs without an assignment are not
        checked.  ModeUnavailable after APPLY_TIMEOUT s, naming the
        hosts that do not."""
        want = {n: int(a.split("/", 1)[0]) for n, a in assignments.items()}
        deadline = time.monotonic() + APPLY_TIMEOUT
        while True:
            got = self.host_planes()
            wrong = ["%s: %s on plane %d, not %d" % (h, n, p, want[n])
                     for h, v in sorted(got.items())
                     for n, p in sorted(v.items())
                     if n in want and p != want[n]]
            if not wrong:
                return got
            if time.monotonic() > deadline:
                raise ModeUnavailable(
                    "after fabric apply, the hosts do not send the DCMs' "
                    "traffic on their planes: %s" % "; ".join(wrong[:8]))
            time.sleep(0.5)

    def assignments(self) -> Dict[str, str]:
        """DCM -> "plane/spine", as ovs-daqctl fabric status has it."""
        assert self.db is not None
        doc = json.loads(run([sys.executable, daqctl_path(), "--db",
                              self.db.remotes(), "fabric", "status",
                              "--json"]))
        return {d["name"]: "%s/%s" % (d["plane"], d["spine"])
                for d in doc.get("fabric", {}).get("dcms", [])}

    def outcome(self) -> Dict[str, Any]:
        """The rings on the HLT leaf and the fabric's flows (cookie
        0xdac7...) of every switch, read from the switches themselves:
        per switch, [direction, address, output port name] (see
        fabric_flows)."""
        flows = {}
        for name, sw in self.switches.items():
            fsw = self.fplan.switch(name)
            flows[name] = fabric_flows(
                fsw, sw.ofctl("--names", "dump-flows", fsw.bridge),
                sw.ofctl("--names", "dump-groups", fsw.bridge))
        rings_of = {}
        for leaf in self.fplan.hlt_leaves:
            ifaces = self.own(leaf, self.switches[leaf].interfaces(
                "name,type,options"))
            rings_of[leaf] = sorted(n for n, row in ifaces.items()
                                    if row.get("type") == "daqring")
            flows[leaf] = sorted(flows[leaf] + bound_drains(ifaces))
        return {"rings": rings_of[HLT_LEAF], "rings_of": rings_of,
                "flows": flows}

    def announce(self) -> None:
        """A gratuitous ARP from every host (see GARP).  The counters read
        next wait for ovs-vswitchd to have written its statistics after
        them (the kernel's count them at once): otherwise a DPDK port's
        ARPs would seem sent and never seen by its veth."""
        for dev in self.fplan.host_devs:
            for h in self.fplan.ros_hosts:
                run(["ip", "netns", "exec", h.ns, sys.executable, "-c",
                     GARP, dev, h.mac] + h.ips)
            for hh in self.fplan.hlt_hosts:
                run(["ip", "netns", "exec", hh.ns, sys.executable, "-c",
                     GARP, dev, hh.mac] + hh.ips)
        self.last_traffic = time.monotonic()

    def hold_text(self) -> str:
        """--hold: how to reach the fabric while it stays up (the build's
        programs by their paths: the tree is not installed)."""
        assert self.db is not None
        b = self.cfg.binaries
        # Found already: every mode was applied with it.
        daqctl = daqctl_path()
        out = ["", "daq-incast: the fabric stays up (--hold) with the "
               "map of its last mode; Ctrl-C (or SIGTERM) stops it and "
               "removes everything.  From another shell (root):", "",
               "  export OVS_DAQFABRIC_DB=%s" % self.db.remotes(),
               "  %s fabric status -v" % daqctl,
               "  %s -t %s cluster/status %s"
               % (b.appctl, self.db.path(1, "ctl"), SCHEMA_NAME), "",
               "  switch: its OVSDB, its bridge's flows, its agent:"]
        for s in self.fplan.switches:
            sw = self.switches[s.name]
            out.append("  %-14s %s --db=%s show" % (s.name, b.vsctl, sw.db))
            out.append("  %-14s %s dump-flows unix:%s" % (
                "", b.ofctl, os.path.join(sw.dir, s.bridge + ".mgmt")))
            out.append("  %-14s %s -t %s status" % (
                "", b.appctl, os.path.join(self.workdir, s.name,
                                           "agent.ctl")))
        hosts = ([h.ns for h in self.fplan.ros_hosts]
                 + [h.ns for h in self.fplan.hlt_hosts])
        out += ["", "  hosts (network namespaces): %s" % " ".join(hosts)]
        if self.fplan.links:
            leaf, lport, spine, sport = (
                failover_link(self.fplan) if self.cfg.spines > 1
                else self.fplan.links[0])
            ns = self.fplan.switch(spine).ns
            out += ["", "  a link failure (%s:%s - %s:%s), and its repair:"
                    % (leaf, lport, spine, sport),
                    "  ip -n %s link set %s down" % (ns, sport),
                    "  ip -n %s link set %s up" % (ns, sport)]
        return "\n".join(out) + "\n"

    def hold(self) -> None:
        """--hold: prints hold_text() and waits for a signal (the
        handlers of install_signal_handlers() raise Interrupted); the
        run's --timeout no longer applies."""
        signal.alarm(0)
        sys.stdout.write(self.hold_text())
        sys.stdout.flush()
        while True:
            signal.pause()

    def unprogram(self, mode: str) -> None:
        """The next mode's apply replaces this one's rings and routes."""

    def ring_status(self, mode: str) -> Optional[Dict[str, object]]:
        if not mode.startswith("daqring"):
            return None
        out: Dict[str, object] = {}
        for leaf in self.fplan.hlt_leaves:
            out.update(Switch.status(
                self.switches[leaf],  # type: ignore
                [self.fplan.ring_on(d, leaf) for d in self.fplan.dcms]))
        return out

    def is_ring_mode(self, mode: str) -> bool:
        return mode.startswith("daqring")

    def collecting(self, label: str, started: bool) -> None:
        if not self.cfg.failover[0]:
            return
        if started:
            self.failover = Failover(self)
            self.failover.start()
        elif self.failover is not None:
            self.failover.settle(HOLD_DOWN + FAILOVER_SETTLE)
            self.failover.halt.set()
            self.failover.join(30)
            res = self.failover.result()
            # Where the planner left the DCMs (home again, after the
            # hold-down, if "back_after_s" is set).
            res["assignments_after"] = self.assignments()
            self.failovers[label] = res
            self.failover = None

    def host_arp(self) -> Dict[str, Any]:
        """Per host (its name in the map), after a mode's events, what
        its kernel holds of ARP (host_arp_state())."""
        macs = {h.ns: h.mac for h in self.fplan.ros_hosts}
        macs.update({h.ns: h.mac for h in self.fplan.hlt_hosts})
        out = {}
        for ns, name in self.host_names():
            out[name] = host_arp_state(
                json.loads(run(["ip", "-n", ns, "-j", "link", "show"])
                           or "[]"),
                json.loads(run(["ip", "-n", ns, "-j", "neigh", "show",
                                "nud", "all"]) or "[]"),
                self.fplan.host_devs, macs[ns])
        return out

    def host_namespaces(self) -> List[str]:
        return list(self.fplan.hosts_ns)

    # ------------------------------------------------------------ counters
    def _snapshot(self) -> Dict[str, Any]:
        wait = self.last_traffic + STATS_INTERVAL - time.monotonic()
        if wait > 0:
            self.progress.show("waiting %.1f s for switch counters" % wait)
            time.sleep(wait)
        ports = {}
        normal = {}
        for name, sw in self.switches.items():
            for port, st in self.own(
                    name, Switch.stats(sw)).items():  # type: ignore
                ports["%s:%s" % (name, port)] = st
            normal[name] = normal_packets(sw.ofctl(
                "dump-flows", self.fplan.switch(name).bridge))
        tcp = {}
        for ns in self.fplan.hosts_ns:
            tcp[ns] = parse_snmp(run(["ip", "netns", "exec", ns, "cat",
                                      "/proc/net/snmp",
                                      "/proc/net/netstat"]))
        return {"ports": ports, "qdisc": self._qdiscs(),
                "tcp": tcp, "links": self._links(), "normal": normal}

    def own(self, name: str, ifaces: Dict[str, Any]) -> Dict[str, Any]:
        """Of IFACES (interface name -> row or statistics, of switch
        NAME's ovs-vswitchd), those of NAME: all of them, but in an
        ovs-vswitchd whose bridges are several switches (the HLT leaves
        of several planes), its ports, its rings and its bridge's
        interface."""
        fsw = self.fplan.switch(name)
        if not self.fplan.shared_hlt or name not in self.fplan.hlt_leaves:
            return ifaces
        mine = ({p.name for p in fsw.ports} | {fsw.bridge}
                | {self.fplan.ring_on(d, name) for d in self.fplan.dcms})
        return {k: v for k, v in ifaces.items() if k in mine}

    def failover_port(self) -> Optional[Tuple[str, str]]:
        """The switch port --failover sets down (spine, port), or None."""
        if not self.cfg.failover[0]:
            return None
        _, _, spine, port = failover_link(self.fplan)
        return spine, port

    def _qdiscs(self) -> Dict[str, Dict[str, int]]:
        out = {}
        for p, leaf in enumerate(self.fplan.hlt_leaves):
            ns = self.fplan.switch(leaf).ns
            for h in self.fplan.hlt_hosts:
                data = json.loads(run(["tc", "-n", ns, "-s", "-j", "qdisc",
                                       "show", "dev", h.port_in(p)])
                                  or "[]")
                root = next((q for q in data if q.get("root")),
                            data[0] if data else {})
                out["%s:%s" % (leaf, h.port_in(p))] = {
                    k: int(root.get(k, 0)) for k in ("packets", "bytes",
                                                     "drops", "overlimits")}
        return out

    def _links(self) -> Dict[str, Dict[str, int]]:
        """Kernel counters of every veth end (switches' and hosts')."""
        out: Dict[str, Dict[str, int]] = {}
        # A veth of a namespace that several switches share (the HLT
        # leaves of several planes) is the one that has it as port's.
        owner = {(s.ns, p.name): s.name for s in self.fplan.switches
                 for p in s.ports}
        where: Dict[str, str] = {}
        for s in self.fplan.switches:
            where.setdefault(s.ns, s.name)
        where.update({ns: ns for ns in self.fplan.hosts_ns})
        skip = {s.bridge for s in self.fplan.switches} | {"ovs-netdev"}
        for ns, label in where.items():
            for link in json.loads(run(["ip", "-n", ns, "-s", "-j", "link",
                                        "show"])):
                if link.get("link_type") != "ether" or link.get(
                        "ifname") in skip:
                    continue
                st = link.get("stats64", {})
                out["%s:%s" % (owner.get((ns, link["ifname"]), label),
                               link["ifname"])] = {
                    "rx_packets": int(st["rx"]["packets"]),
                    "tx_packets": int(st["tx"]["packets"]),
                    "rx_dropped": int(st["rx"]["dropped"]),
                    "tx_dropped": int(st["tx"]["dropped"])}
        return out

    def _drops(self, before: Dict[str, Any],  # type: ignore[override]
               after: Dict[str, Any]) -> Dict[str, Any]:
        rings = {"%s:%s" % (leaf, self.fplan.ring_on(d, leaf))
                 for leaf in self.fplan.hlt_leaves for d in self.fplan.dcms}
        ports: Dict[str, Dict[str, int]] = {}
        total = ring_drops = 0
        dpdk = {s.name for s in self.fplan.switches if s.dpdk}
        for name, st in after["ports"].items():
            delta = counter_delta(before["ports"].get(name, {}), st)
            sw, port = name.split(":", 1)
            if name in rings:
                ring_drops += delta.get("tx_dropped", 0)
            elif port != self.fplan.switch(sw).bridge and sw in dpdk:
                # A system port's counters are its veth's, counted below
                # (kernel_links); a DPDK port's drops are DPDK's own.
                total += sum(delta.get(k, 0) for k in
                             ("rx_dropped", "tx_dropped", "rx_missed_errors"))
            keep = {k: v for k, v in delta.items()
                    if v and ("drop" in k or "error" in k or "fail" in k)}
            if name in rings:
                for k in ("tx_packets", "rx_packets", "tx_dropped"):
                    keep[k] = delta.get(k, 0)
            if keep:
                ports[name] = keep
        qdiscs = {v: counter_delta(before["qdisc"].get(v, {}), st)
                  for v, st in after["qdisc"].items()}
        links = {v: counter_delta(before["links"].get(v, {}), st)
                 for v, st in after["links"].items()}
        # The DPDK leaf's uplinks (its ports to the spines): what their
        # veths lost is what the port handed the kernel and the veth
        # never sent (below), not the veth's tx_dropped.  The kernel
        # sends a DPDK af_packet port's frames from its TX ring, and a
        # frame refused there (its peer down) is put back in the ring
        # (tpacket_snd: status TP_STATUS_SEND_REQUEST again) and sent
        # again at the next kick: dropped again and counted twice, or
        # delivered after it was counted dropped.  That made one
        # failover run of several "overcounted 1" or 2.
        hlt_leaves = [self.fplan.switch(n) for n in self.fplan.hlt_leaves]
        uplinks = {"%s:%s" % (leaf.name, p.name) for leaf in hlt_leaves
                   if leaf.dpdk for p in leaf.ports if not p.to_host}
        # A veth that cannot hand a frame to its peer counts it at both
        # ends (the sender's tx_dropped, the peer's rx_dropped): each
        # once, at the sender.
        kernel = sum(v.get("tx_dropped", 0) for n, v in links.items()
                     if n not in uplinks)
        # Frames a peer sent into a DPDK port's veth that the port never
        # read (its af_packet RX ring was full: no counter shows it).
        socket = {}
        for leaf in hlt_leaves:
            if not leaf.dpdk:
                continue
            for p in leaf.ports:
                name = "%s:%s" % (leaf.name, p.name)
                sent = links.get(name, {}).get("rx_packets")
                read = counter_delta(before["ports"].get(name, {}),
                                     after["ports"].get(name, {})
                                     ).get("rx_packets")
                if sent is not None and read is not None and sent > read:
                    socket[name] = sent - read
                    ports.setdefault(name, {})[
                        "af_packet_rx_ring_drops"] = sent - read
        # Frames a DPDK uplink handed to the kernel that its veth never
        # sent: refused by the veth (counted in its tx_dropped, once or
        # more, see above) or, while the link is down, taken by the
        # kernel's placeholder qdisc, which counts nothing.  (Not the
        # host ports: there the tbf refuses frames that DPDK retries.)
        gone = {}
        for name in sorted(uplinks):
            k = links.get(name, {})
            sent = counter_delta(before["ports"].get(name, {}),
                                 after["ports"].get(name, {})
                                 ).get("tx_packets")
            left = k.get("tx_packets", 0)
            if sent is not None and k and sent > left:
                gone[name] = sent - left
                ports.setdefault(name, {})["kernel_tx_path_drops"] = \
                    gone[name]
                if k.get("tx_dropped"):
                    ports[name]["kernel_tx_dropped"] = k["tx_dropped"]
        total += sum(socket.values()) + sum(gone.values())
        # Frames a switch without DPDK received and did not send on:
        # ovs-vswitchd counts none of them (a send to a port that is down
        # fails, ENETDOWN, and is only logged; a full socket drops at
        # the socket), but its ports' counters show how many.
        inside = {}
        failed = self.failover_port()
        for s in self.fplan.switches:
            if s.dpdk:
                continue
            d = {p.name: counter_delta(
                before["ports"].get("%s:%s" % (s.name, p.name), {}),
                after["ports"].get("%s:%s" % (s.name, p.name), {}))
                for p in s.ports}
            # (What its sends lost in the veth is in kernel_links, what a
            # port's tbf dropped in qdisc: the port's counters, the
            # veth's, count neither.)
            n = sum(v.get("rx_packets", 0) - v.get("tx_packets", 0)
                    - v.get("tx_dropped", 0)
                    - qdiscs.get("%s:%s" % (s.name, p), {}).get("drops", 0)
                    for p, v in d.items())
            if n > 0:
                inside[s.name] = {
                    "frames": n,
                    "reason": ("sent to %s:%s while it was down (--failover)"
                               % failed if failed and failed[0] == s.name
                               else "received, not sent on (socket buffer "
                               "or ovs-vswitchd)")}
        total += sum(v["frames"] for v in inside.values())
        # The same losses by link and direction (sender->receiver): what
        # the sender's veth dropped (kernel_links), what the DPDK leaf
        # handed its uplink's veth that it never sent (uplink_tx_path),
        # what the receiving DPDK port never read (af_packet_rx) and,
        # from the switch with the failed port, what it received and did
        # not send on while the port was down (switch_inside).  Each is
        # one term of the counted drops, so none is counted twice.
        lost_on_links: Dict[str, Dict[str, Any]] = {}
        for lf, lp, sp, spp in self.fplan.links:
            a, b = "%s:%s" % (lf, lp), "%s:%s" % (sp, spp)
            for src, dst in ((a, b), (b, a)):
                sw = src.split(":", 1)[0]
                parts = {"kernel_links": (
                             0 if src in uplinks else
                             links.get(src, {}).get("tx_dropped", 0)),
                         "uplink_tx_path": gone.get(src, 0),
                         "af_packet_rx": socket.get(dst, 0),
                         "switch_inside": (
                             inside.get(sw, {}).get("frames", 0)
                             if failed and src == "%s:%s" % failed else 0)}
                parts = {k: v for k, v in parts.items() if v}
                if parts:
                    lost_on_links["%s->%s" % (src, dst)] = dict(
                        frames=sum(parts.values()), **parts)
        # End to end: what the ROS hosts sent against what the HLT hosts
        # received, and the way back (the hosts send nothing else while
        # the counters run).

        def host(hosts: Sequence[Any], key: str) -> int:
            return sum(links.get("%s:%s" % (h.ns, dev), {}).get(key, 0)
                       for h in hosts for dev in self.fplan.host_devs)
        ros_tx = host(self.fplan.ros_hosts, "tx_packets")
        hlt_rx = host(self.fplan.hlt_hosts, "rx_packets")
        hlt_tx = host(self.fplan.hlt_hosts, "tx_packets")
        ros_rx = host(self.fplan.ros_hosts, "rx_packets")
        qdisc = sum(q.get("drops", 0) for q in qdiscs.values())
        # What went missing on the way and no counter above explains: 0
        # when every loss is counted.  (Without DPDK, the HLT leaf's
        # system ports drop what their socket cannot take at once without
        # counting it: ovs-vswitchd's netdev-linux send.)
        # The tbf's drops are losses on system ports; a DPDK af_packet
        # port retries what the tbf refuses (see the single switch).
        lost = ros_tx - hlt_rx + hlt_tx - ros_rx
        counted = total + ring_drops + kernel + (
            0 if hlt_leaves[0].dpdk else qdisc)
        return {"switch_total": total, "daqring": ring_drops,
                # Packets the switches forwarded by NORMAL, not by the
                # fabric's routes (0 in a mode with rings: both ways of
                # every connection are routed).
                "normal_packets": {
                    sw: after["normal"][sw] - before["normal"].get(sw, 0)
                    for sw in after["normal"]},
                "qdisc": qdisc, "af_packet_rx": sum(socket.values()),
                "uplink_tx_path": sum(gone.values()),
                "kernel_links": kernel, "switch_inside": inside,
                "lost_on_links": lost_on_links,
                "ros_tx_frames": ros_tx, "hlt_rx_frames": hlt_rx,
                "hlt_tx_frames": hlt_tx, "ros_rx_frames": ros_rx,
                # Every frame sent is delivered or counted once: sent =
                # delivered + counted drops.  More counted than lost is
                # a count twice over (overcounted), not a balance.
                "balance": {"sent": ros_tx + hlt_tx,
                            "delivered": hlt_rx + ros_rx,
                            "counted_drops": counted,
                            "balanced": lost == counted},
                "unaccounted": max(0, lost - counted),
                "overcounted": max(0, counted - lost),
                "ports": ports, "qdiscs": qdiscs, "hosts": links}

    def run_mode(self, mode: str, params: Dict[str, Any], label: str
                 ) -> Dict[str, Any]:
        if mode.startswith("daqring"):
            # Each ring's options with the sharing policy (not one ring
            # per link, as on one switch).
            params = ring_params(self.cfg, mode)
        r = super().run_mode(mode, params, label)
        if r.get("status") != "ok":
            return r
        # Goodput of the whole fabric: every DCM's bytes over the time at
        # least one event was being collected anywhere (the union of all
        # events' intervals), against the fabric's limit.
        spans = r.pop("spans_all", None)
        if spans:
            busy = busy_time(spans)
            r["per_dcm_goodput_bps"] = r["goodput_bps"]
            r["goodput_bps"] = sum(r["event_bytes"]) * 8 / busy
            r["busy_s"] = busy
            r["ideal_ratio"] = r["goodput_bps"] / self.ideal["goodput_bps"]
        r["limit_ratio"] = r["ideal_ratio"]
        fo = self.failovers.get(label)
        if fo is not None:
            samples = [(x["t_s"], x["retrans_segs"])
                       for x in fo.pop("retrans_samples")]
            end = max([z for _, z in spans or []] + [t for t, _ in samples]
                      + [0.0])
            fo["timeline"] = timeline(spans or [], r["event_bytes"],
                                      samples, end)
            degraded = fabric_limit(self.cfg, self.fplan,
                                    spines=self.cfg.spines - 1)
            fo["limit_goodput_bps"] = self.limit["goodput_bps"]
            fo["degraded_limit_goodput_bps"] = degraded["goodput_bps"]
            fo["degraded_limit"] = degraded
            # The failover targets, from the events themselves:
            # how long after the loss the goodput was back to 95% of the
            # degraded limit, and after the recovery to 95% of the full
            # one (over RECOVERY_WINDOW seconds; None: never, before the
            # events ended).
            for key, at, lim in (
                    ("recovered_after_s", fo["down_at_s"],
                     degraded["goodput_bps"]),
                    ("restored_after_s", fo["up_at_s"],
                     self.limit["goodput_bps"])):
                fo[key] = (None if at is None else recovery(
                    spans or [], r["event_bytes"], at,
                    RECOVERY_FRACTION * lim))
            r["failover"] = fo
            if fo.get("error"):
                r.update(status="error", error="failover: %s"
                         % fo["error"])
        r["host_arp"] = self.host_arp()
        r["valid"] = (self.switch is not None and r["pmd_cpu_share"] >= 0.9)
        if self.switch is None:
            r["invalid_reason"] = "no PMD (--fabric-dpdk off)"
        elif not r["valid"]:
            r["invalid_reason"] = ("the PMD had %.0f%% of its core"
                                   % (100 * r["pmd_cpu_share"]))
        return r

    def document(self) -> Dict[str, Any]:
        doc = super().document()
        plan = self.fplan
        doc["topology"] = {
            "kind": "fabric",
            "congestion_control": {"configured": self.cfg.congestion_control,
                                   "hosts": dict(self.hosts_cc)},
            "ros": self.cfg.ros, "dcms": self.cfg.dcms,
            "ros_per_host": self.cfg.ros_per_host,
            "ros_hosts": len(plan.ros_hosts),
            "planes": plan.planes,
            "hlt_hosts": [{"name": h.name, "ns": h.ns, "ips": h.ips,
                           "port": "%s:%s" % (HLT_LEAF, h.port),
                           "ports": ["%s:%s" % (leaf, h.port_in(p))
                                     for p, leaf in enumerate(
                                         plan.hlt_leaves)]}
                          for h in plan.hlt_hosts],
            "switches": [{"name": s.name, "role": s.role, "ns": s.ns,
                          "dpdk": s.dpdk,
                          "ports": [p.name for p in s.ports]}
                         for s in plan.switches],
            "links": ["%s:%s-%s:%s" % lk for lk in plan.links],
            "fabric_db_members": self.cfg.fabric_db_members,
            "host_arp": self.cfg.host_arp,
            "cpu_plan": {
                "pmd_cpus": self.cfg.pmd_cpus if self.switch else [],
                "other_cpus": self.cfg.agent_cpus,
                "dpdk_switch": HLT_LEAF if self.switch else None,
                "dpdk_bridges": {s.name: s.bridge for s in plan.switches
                                 if s.dpdk}}}
        doc["fabric"] = {"limit": self.limit,
                         "hold_down_s": HOLD_DOWN,
                         "sharing": ring_params(self.cfg,
                                                "daqring")["sharing"],
                         "programming": self.generations}
        return doc


def format_fabric(doc: Dict[str, Any]) -> str:
    """The summary's lines of a fabric run ("" if none): per mode the
    balance of its frames, what was lost on which link and inside which
    switch, and a failover's figures with the degraded limit's formula
    and inputs."""
    lines = []
    for m in doc.get("modes", []):
        if m.get("status") != "ok":
            continue
        d = m.get("drops") or {}
        b = d.get("balance")
        if b:
            lines.append(
                "%s: frames sent %d = delivered %d + counted drops %d%s"
                % (m["label"], b["sent"], b["delivered"],
                   b["counted_drops"], "" if b["balanced"] else
                   " NOT BALANCED (unaccounted %d, overcounted %d)"
                   % (d.get("unaccounted", 0), d.get("overcounted", 0))))
        for link, v in sorted((d.get("lost_on_links") or {}).items()):
            lines.append("  lost on link %s: %d frames (%s)" % (
                link, v["frames"], ", ".join(
                    "%s %s" % (k, n) for k, n in sorted(v.items())
                    if k != "frames")))
        for sw, v in sorted((d.get("switch_inside") or {}).items()):
            lines.append("  %s: %d frames %s" % (sw, v["frames"],
                                                 v["reason"]))
        fo = m.get("failover")
        if not fo:
            continue

        def s_(v: Optional[float]) -> str:
            return "never" if v is None else "%.2f s" % v
        lines.append(
            "%s: failover of %s: down at %s, up at %s; routes off the "
            "spine after %s, home after %s" % (
                m["label"], fo["link"], s_(fo["down_at_s"]),
                s_(fo["up_at_s"]), s_(fo["rerouted_after_s"]),
                s_(fo["back_after_s"])))
        if fo.get("degraded_limit"):
            lines.append("  " + degraded_formula(fo["degraded_limit"]))
        lines.append(
            "  goodput >= %d%% of the degraded limit (%s) %s after the "
            "loss; >= %d%% of the limit (%s) %s after the recovery"
            % (100 * RECOVERY_FRACTION,
               format_rate(fo["degraded_limit_goodput_bps"]),
               s_(fo.get("recovered_after_s")), 100 * RECOVERY_FRACTION,
               format_rate(fo["limit_goodput_bps"]),
               s_(fo.get("restored_after_s"))))
    return "\n".join(lines)


# ================================================================ topology
def host_scripts(cfg: Config, plan: FabricPlan
                 ) -> List[Tuple[str, str, str]]:
    """Per host of PLAN: its namespace, the shell script that sets it up
    (addresses, MAC, congestion control, RPS, its interfaces), and the
    'ip -batch' input of its neighbour entries ("" for none).  With
    several planes a host has an interface per plane (e<plane>), its
    addresses on e0, the same MAC on each and no reverse-path filter (a
    DCM's packets arrive on the interface of its plane); until the
    host's agent routes the DCMs by their plane, the main table spreads
    the traffic over the planes by ROS host (ROS host j's connections
    take plane j mod P: the modes without rings, which have no DCMs in
    the fabric, keep that).

    --host-arp static: a permanent neighbour entry for every peer on
    every interface.  off: every interface with ARP off and no
    neighbour entry (Linux then addresses every frame to the
    interface's own MAC; the fabric's last hop sets the destination's)."""
    dcm_ips = [(ip, h.mac) for h in plan.hlt_hosts for ip in h.ips]
    ros_ips = [(ip, h.mac) for h in plan.ros_hosts for ip in h.ips]
    rps = rps_mask(cfg.rps_cpus)
    devs = plan.host_devs
    n_p = plan.planes
    arp = cfg.host_arp == "static"
    out = []
    for ns, mac, ips, peers, kind, j in (
            [(h.ns, h.mac, h.ips, dcm_ips, "ros", h.index)
             for h in plan.ros_hosts]
            + [(h.ns, h.mac, h.ips, ros_ips, "dcm", 0)
               for h in plan.hlt_hosts]):
        script = [NO_IPV6 + "ip link set lo up",
                  "sysctl -q -w net.ipv4.tcp_congestion_control=%s"
                  % cfg.congestion_control]
        script += ["ip link set %s address %s" % (dev, mac) for dev in devs]
        if not arp:
            script += ["ip link set %s arp off" % dev for dev in devs]
        if rps and kind in cfg.rps_kinds:
            # --host-rps: the host's receive off the PMD's core (an HLT
            # host's is run by the PMD's sends; see daq-incast.rst).
            script += ["echo %s > /sys/class/net/%s/queues/rx-0/rps_cpus"
                       % (rps, dev) for dev in devs]
        script += ["ip addr add %s/16 dev e0" % ip for ip in ips]
        for dev in devs:
            script += ["ethtool -K %s tx off >/dev/null" % dev,
                       "ip link set %s up" % dev]
        if n_p > 1:
            script += ["sysctl -q -w net.ipv4.conf.all.rp_filter=0",
                       "sysctl -q -w net.ipv4.conf.default.rp_filter=0"]
            script += ["sysctl -q -w net.ipv4.conf.%s.rp_filter=0" % dev
                       for dev in devs]
            if kind == "ros":
                script.append("ip route add %s.0.0/24 dev %s"
                              % (NET, devs[j % n_p]))
            else:
                script += ["ip route add %s dev %s" % (
                    ros_host_prefix(h.index), devs[h.index % n_p])
                    for h in plan.ros_hosts]
        neigh = "".join(
            "neigh replace %s lladdr %s dev %s nud permanent\n"
            % (ip, pmac, dev) for ip, pmac in peers for dev in devs
        ) if arp else ""
        out.append((ns, "\n".join(script), neigh))
    return out


def _setup_hosts(cfg: Config, plan: FabricPlan) -> None:
    """Sets every host up as host_scripts() says (its congestion control
    allowed: see create_topology())."""
    for ns, script, neigh in host_scripts(cfg, plan):
        run(["ip", "netns", "exec", ns, "sh", "-c", script])
        if neigh:
            run(["ip", "-n", ns, "-batch", "-"], input=neigh)


def create_topology(cfg: Config, plan: FabricPlan, cleanup: Cleanup) -> None:
    """The namespaces, veths, host addresses and the HLT links' tbf;
    their removal is registered before anything is created."""
    names = plan.namespaces()
    existing = set(run(["ip", "netns", "list"]).split())
    clash = [ns for ns in names if ns in existing]
    if clash:
        raise RunError("already exist (a stale run?): %s" % " ".join(clash))

    def remove() -> None:
        run(["ip", "-force", "-batch", "-"], check=False, timeout=120,
            input="".join("netns del %s\n" % ns for ns in names))
        left = [ns for ns in names if os.path.exists("/run/netns/" + ns)]
        if left:
            raise RunError("namespaces left behind: %s" % " ".join(left))
    cleanup.push("remove the fabric's namespaces", remove)
    run(["ip", "-batch", "-"], timeout=120,
        input="".join("netns add %s\n" % ns for ns in names))
    for s in plan.switches:
        run(["ip", "netns", "exec", s.ns, "sh", "-c",
             NO_IPV6 + "ip link set lo up"])
    # Each veth once: from the switch that has it as port, to its peer
    # (a host's e0, or a spine's downlink, made with the leaf's uplink).
    cmds: List[str] = []
    for s in plan.switches:
        for p in s.ports:
            if s.role == "spine":
                continue
            cmds.append("link add %s netns %s type veth peer name %s "
                        "netns %s\n" % (p.name, s.ns, p.peer_port,
                                        p.peer_ns))
    run(["ip", "-batch", "-"], timeout=120, input="".join(cmds))
    for s in plan.switches:
        run(["ip", "-n", s.ns, "-batch", "-"], input="".join(
            "link set %s up\n" % p.name for p in s.ports))
        for p in s.ports:
            run(["ip", "netns", "exec", s.ns, "ethtool", "-K", p.name, "tx",
                 "off"], check=False)
    # The allowed congestion controls are the whole machine's: widened
    # only while the hosts are set up, under the lock the single-switch
    # runs take too (topology.cc_lock()).
    with cc_lock():
        restore = allow_congestion_control(cfg.congestion_control, cleanup)
        try:
            _setup_hosts(cfg, plan)
        finally:
            restore()
    wrong = {}
    for ns in plan.hosts_ns:
        cc = run(["ip", "netns", "exec", ns, "sysctl", "-n",
                  "net.ipv4.tcp_congestion_control"]).strip()
        if cc != cfg.congestion_control:
            wrong[ns] = cc
    if wrong:
        raise RunError("TCP congestion control is not %s in %s" % (
            cfg.congestion_control, ", ".join("%s (%s)" % kv
                                              for kv in wrong.items())))


def access_links(cfg: Config, plan: FabricPlan) -> None:
    """The HLT hosts' access links: a tbf on the HLT leaf's side of each
    (after its switch has the port: see SystemSwitch.add_ports)."""
    for p, name in enumerate(plan.hlt_leaves):
        leaf = plan.switch(name)
        for h in plan.hlt_hosts:
            run(tbf_command(leaf.ns, h.port_in(p), cfg.link_rate_bps,
                            cfg.link_burst, cfg.link_limit,
                            cfg.link_overhead))
