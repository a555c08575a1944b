# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The fabric's network, as root: its namespaces and veths, every host
set up (addresses, MAC, ARP, congestion control, RPS, its routes over
the planes), the HLT hosts' access links, the hosts' gratuitous ARP,
and what a host's kernel holds of ARP."""

import os
from typing import Any, Dict, List, Sequence, Tuple

from ...process import Cleanup, RunError, run
from ..config import Config
from ..topology import (NO_IPV6, allow_congestion_control, cc_lock,
                        rps_mask, tbf_command)
from .plan import NET, FabricPlan, ros_host_prefix

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
