# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The fabric's counters: those of the kernel read from its namespaces
(the HLT hosts' access links' qdiscs, every veth end), and a mode's
account of its frames from the snapshots before and after its events
(fabric_drops(): every frame sent delivered or counted lost, where and
why), counted with the single switch's helpers (incast/counters.py)."""

import json
import re
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ...process import run
from ..counters import PORT_DROPS, deltas, notable, unread
from ..stats import counter_delta
from .control import control_delta
from .plan import FabricPlan

Counters = Dict[str, Dict[str, int]]


def dump_ports_packets(text: str) -> Counters:
    """'ovs-ofctl --names dump-ports' TEXT: port -> {"rx_packets",
    "tx_packets"}.  Read at once, where the Interface statistics of a
    DPDK port are as old as ovs-vswitchd's last refresh (5 s): while BFD
    runs, its packets in that time made the HLT leaf's uplinks look as
    if they had handed the kernel frames that their veths never sent
    (40 per uplink in a spine's failure)."""
    out: Counters = {}
    port = None
    for line in text.splitlines():
        m = re.match(r"\s*port\s+\"?([^\":]+)\"?:\s*rx pkts=(\d+)", line)
        if m:
            port = m.group(1).strip()
            out[port] = {"rx_packets": int(m.group(2))}
            continue
        m = re.match(r"\s*tx pkts=(\d+)", line)
        if m and port is not None:
            out[port]["tx_packets"] = int(m.group(1))
            port = None
    return out


def qdisc_counters(plan: FabricPlan) -> Counters:
    """The root qdisc (the access link's tbf) of every HLT host's port on
    the HLT leaf of every plane."""
    out = {}
    for p, leaf in enumerate(plan.hlt_leaves):
        ns = plan.switch(leaf).ns
        for h in plan.hlt_hosts:
            data = json.loads(run(["tc", "-n", ns, "-s", "-j", "qdisc",
                                   "show", "dev", h.port_in(p)])
                              or "[]")
            root = next((q for q in data if q.get("root")),
                        data[0] if data else {})
            out["%s:%s" % (leaf, h.port_in(p))] = {
                k: int(root.get(k, 0)) for k in ("packets", "bytes",
                                                 "drops", "overlimits")}
    return out


def link_counters(plan: FabricPlan,
                  only: Optional[Set[str]] = None) -> Counters:
    """Kernel counters of every veth end (switches' and hosts'), or of
    those in the namespaces ONLY."""
    out: Dict[str, Dict[str, int]] = {}
    # A veth of a namespace that several switches share (the HLT
    # leaves of several planes) is the one that has it as port's.
    owner = {(s.ns, p.name): s.name for s in plan.switches
             for p in s.ports}
    where: Dict[str, str] = {}
    for s in plan.switches:
        where.setdefault(s.ns, s.name)
    where.update({ns: ns for ns in plan.hosts_ns})
    skip = {s.bridge for s in plan.switches} | {"ovs-netdev"}
    for ns, label in where.items():
        if only is not None and ns not in only:
            continue
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


def port_drops(plan: FabricPlan, before: Dict[str, Any],
               after: Dict[str, Any]) -> Tuple[Counters, int, int]:
    """Of the switches' ports ("switch:port"): the counters that grew
    (ports), what the DPDK ports dropped (total) and what the rings
    dropped (ring_drops)."""
    rings = {"%s:%s" % (leaf, plan.ring_on(d, leaf))
             for leaf in plan.hlt_leaves for d in plan.dcms}
    ports: Dict[str, Dict[str, int]] = {}
    total = ring_drops = 0
    dpdk = {s.name for s in plan.switches if s.dpdk}
    for name, st in after["ports"].items():
        delta = counter_delta(before["ports"].get(name, {}), st)
        sw, port = name.split(":", 1)
        if name in rings:
            ring_drops += delta.get("tx_dropped", 0)
        elif port != plan.switch(sw).bridge and sw in dpdk:
            # A system port's counters are its veth's, counted below
            # (kernel_links); a DPDK port's drops are DPDK's own.
            total += sum(delta.get(k, 0) for k in PORT_DROPS)
        keep = notable(delta)
        if name in rings:
            for k in ("tx_packets", "rx_packets", "tx_dropped"):
                keep[k] = delta.get(k, 0)
        if keep:
            ports[name] = keep
    return ports, total, ring_drops


def uplink_losses(before: Dict[str, Any], after: Dict[str, Any],
                  links: Counters, uplinks: Set[str],
                  ports: Counters) -> Dict[str, int]:
    """Frames a DPDK uplink handed to the kernel that its veth never
    sent: refused by the veth (counted in its tx_dropped, once or
    more, see fabric_drops()) or, while the link is down, taken by the
    kernel's placeholder qdisc, which counts nothing.  (Not the host
    ports: there the tbf refuses frames that DPDK retries.)  Noted in
    PORTS too."""
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
    return gone


def switch_inside(plan: FabricPlan, failed: Optional[Tuple[str, str]],
                  before: Dict[str, Any], after: Dict[str, Any],
                  qdiscs: Counters) -> Dict[str, Dict[str, Any]]:
    """Frames a switch without DPDK received and did not send on:
    ovs-vswitchd counts none of them (a send to a port that is down
    fails, ENETDOWN, and is only logged; a full socket drops at
    the socket), but its ports' counters show how many.  Its BFD
    packets are not among them: those it received (ovs-vswitchd takes
    them, or a killed one never reads them) and sent are counted apart
    (control.ControlFrames, the snapshots' "control") and taken out,
    and said as "control_frames".  FAILED: the port --failover set down
    (spine, port), or None."""
    inside = {}
    for s in plan.switches:
        if s.dpdk:
            continue
        # With its BFD packets counted, the veths' own counters, read
        # next to them (a port's Interface statistics are as old as
        # ovs-vswitchd's last refresh, and BFD runs meanwhile).
        src = ("links" if all("%s:%s" % (s.name, p.name) in (
            snap.get("control") or {}) and "%s:%s" % (s.name, p.name)
            in snap.get("links", {}) for snap in (before, after)
            for p in s.ports) else "ports")
        d = {p.name: counter_delta(
            before[src].get("%s:%s" % (s.name, p.name), {}),
            after[src].get("%s:%s" % (s.name, p.name), {}))
            for p in s.ports}
        # (What its sends lost in the veth is in kernel_links, what a
        # port's tbf dropped in qdisc: the port's counters, the
        # veth's, count neither.)
        n = sum(v.get("rx_packets", 0) - v.get("tx_packets", 0)
                - v.get("tx_dropped", 0)
                - qdiscs.get("%s:%s" % (s.name, p), {}).get("drops", 0)
                for p, v in d.items())
        ctl = [c for c in (control_delta(before, after, "%s:%s"
                                         % (s.name, p)) for p in d)
               if c is not None]
        control = {"received": sum(c["rx"] for c in ctl),
                   "sent": sum(c["tx"] for c in ctl)}
        n -= control["received"] - control["sent"]
        if n > 0:
            inside[s.name] = {
                "frames": n,
                "reason": ("sent to %s:%s while it was down (--failover)"
                           % failed if failed and failed[0] == s.name
                           else "received, not sent on (socket buffer "
                           "or ovs-vswitchd)")}
            if ctl:
                inside[s.name]["control_frames"] = control
    return inside


def lost_on_links(plan: FabricPlan, failed: Optional[Tuple[str, str]],
                  links: Counters, uplinks: Set[str],
                  gone: Dict[str, int], socket: Dict[str, int],
                  inside: Dict[str, Dict[str, Any]]
                  ) -> Dict[str, Dict[str, Any]]:
    """The losses by link and direction (sender->receiver): what
    the sender's veth dropped (kernel_links), what the DPDK leaf
    handed its uplink's veth that it never sent (uplink_tx_path),
    what the receiving DPDK port never read (af_packet_rx) and,
    from the switch with the failed port, what it received and did
    not send on while the port was down (switch_inside).  Each is
    one term of the counted drops, so none is counted twice."""
    lost: Dict[str, Dict[str, Any]] = {}
    for lf, lp, sp, spp in plan.links:
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
                lost["%s->%s" % (src, dst)] = dict(
                    frames=sum(parts.values()), **parts)
    return lost


def host_frames(plan: FabricPlan, links: Counters) -> List[int]:
    """End to end: what the ROS hosts sent against what the HLT hosts
    received, and the way back (the hosts send nothing else while the
    counters run): ROS sent, HLT received, HLT sent, ROS received."""
    def host(hosts: Sequence[Any], key: str) -> int:
        return sum(links.get("%s:%s" % (h.ns, dev), {}).get(key, 0)
                   for h in hosts for dev in plan.host_devs)
    return [host(plan.ros_hosts, "tx_packets"),
            host(plan.hlt_hosts, "rx_packets"),
            host(plan.hlt_hosts, "tx_packets"),
            host(plan.ros_hosts, "rx_packets")]


def fabric_drops(plan: FabricPlan, failed: Optional[Tuple[str, str]],
                 before: Dict[str, Any], after: Dict[str, Any]
                 ) -> Dict[str, Any]:
    """A mode's drops in the fabric of PLAN, from the snapshots BEFORE and
    AFTER its events (FabricRunner._snapshot()): what the DPDK ports,
    the rings, the veths, the af_packet sockets, the switches without
    DPDK and the qdiscs lost, per link and direction, and the balance of
    the frames the hosts sent and received.  FAILED: the port
    --failover set down (spine, port), or None."""
    ports, total, ring_drops = port_drops(plan, before, after)
    qdiscs = deltas(before, after, "qdisc")
    links = deltas(before, after, "links")
    # The DPDK leaf's uplinks (its ports to the spines): what their
    # veths lost is what the port handed the kernel and the veth
    # never sent (below), not the veth's tx_dropped.  The kernel
    # sends a DPDK af_packet port's frames from its TX ring, and a
    # frame refused there (its peer down) is put back in the ring
    # (tpacket_snd: status TP_STATUS_SEND_REQUEST again) and sent
    # again at the next kick: dropped again and counted twice, or
    # delivered after it was counted dropped.  That made one
    # failover run of several "overcounted 1" or 2.
    hlt_leaves = [plan.switch(n) for n in plan.hlt_leaves]
    uplinks = {"%s:%s" % (leaf.name, p.name) for leaf in hlt_leaves
               if leaf.dpdk for p in leaf.ports if not p.to_host}
    # A veth that cannot hand a frame to its peer counts it at both
    # ends (the sender's tx_dropped, the peer's rx_dropped): each
    # once, at the sender.
    kernel = sum(v.get("tx_dropped", 0) for n, v in links.items()
                 if n not in uplinks)
    # Frames a peer sent into a DPDK port's veth that the port never
    # read (its af_packet RX ring was full: no counter shows it).
    socket = unread(before, after, links,
                    ["%s:%s" % (leaf.name, p.name) for leaf in hlt_leaves
                     if leaf.dpdk for p in leaf.ports])
    for name, n in socket.items():
        ports.setdefault(name, {})["af_packet_rx_ring_drops"] = n
    gone = uplink_losses(before, after, links, uplinks, ports)
    total += sum(socket.values()) + sum(gone.values())
    inside = switch_inside(plan, failed, before, after, qdiscs)
    total += sum(v["frames"] for v in inside.values())
    ros_tx, hlt_rx, hlt_tx, ros_rx = host_frames(plan, links)
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
            "lost_on_links": lost_on_links(plan, failed, links, uplinks,
                                           gone, socket, inside),
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
