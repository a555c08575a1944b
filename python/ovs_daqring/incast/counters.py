# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A mode's counters, from the snapshots taken before and after its
events: the drops at every point (the switch's ports, the daqrings, the
qdiscs, the af_packet sockets; or the deep-FIFO peer's bridge) and the
hosts' TCP figures.  The helpers count alike on one switch and in the
fabric (incast/fabric/counters.py)."""

from typing import Any, Dict, Iterable, Set

from .stats import counter_delta
from .topology import DEEP_BRIDGE, Plan


Snapshot = Dict[str, Dict[str, Dict[str, int]]]
# A port's counters that count what it dropped or missed.
PORT_DROPS = ("rx_dropped", "tx_dropped", "rx_missed_errors")


def deltas(before: Snapshot, after: Snapshot, key: str
           ) -> Dict[str, Dict[str, int]]:
    """Per name of AFTER[KEY] ("qdisc", "links", ...), how much each of
    its counters grew since BEFORE."""
    return {v: counter_delta(before[key].get(v, {}), st)
            for v, st in after[key].items()}


def notable(delta: Dict[str, int]) -> Dict[str, int]:
    """Of a port's counters' growth DELTA, the drops, errors and failures
    that grew."""
    return {k: v for k, v in delta.items()
            if v and ("drop" in k or "error" in k or "fail" in k)}


def unread(before: Snapshot, after: Snapshot,
           links: Dict[str, Dict[str, int]],
           names: Iterable[str]) -> Dict[str, int]:
    """Frames the peers sent into the veths of af_packet ports NAMES that
    the ports never read: the kernel dropped them because the socket's
    RX ring was full (no counter shows it).  Per port with any, what its
    veth received (LINKS: the kernel's counters' growth) beyond what the
    port read."""
    out = {}
    for name in names:
        sent = links.get(name, {}).get("rx_packets")
        read = counter_delta(before["ports"].get(name, {}),
                             after["ports"].get(name, {})
                             ).get("rx_packets")
        if sent is not None and read is not None and sent > read:
            out[name] = sent - read
    return out


def bridge_drops(plan: Plan, before: Snapshot, after: Snapshot
                 ) -> Dict[str, Any]:
    """The deep-FIFO peer's drops, counted like the switch's:
    switch_total is what the bridge's ports (the switch-side veths)
    and the bridge itself dropped, qdisc what the egress FIFOs
    dropped; per port and qdisc as for the switch."""
    qdiscs = deltas(before, after, "qdisc")
    links = deltas(before, after, "links")
    hosts = {h.port_name for h in plan.hosts} | {DEEP_BRIDGE}
    ports: Dict[str, Dict[str, int]] = {}
    total = 0
    for name, d in links.items():
        if name not in hosts:
            continue
        n = d.get("rx_dropped", 0) + d.get("tx_dropped", 0)
        total += n
        keep = {k: v for k, v in d.items() if v and "drop" in k}
        if name in {h.port_name for h in plan.dcm_hosts}:
            keep["tx_packets"] = d.get("tx_packets", 0)
        if keep:
            ports[name] = keep
    return {"switch_total": total, "daqring": 0,
            "qdisc": sum(q.get("drops", 0) for q in qdiscs.values()),
            "af_packet_rx": 0, "ros_tx_per_dcm_rx": 0.0,
            "where": "Linux bridge %s and its ports' qdiscs"
            % DEEP_BRIDGE,
            "ports": ports, "qdiscs": qdiscs, "hosts": links}


def switch_drops(plan: Plan, before: Snapshot, after: Snapshot
                 ) -> Dict[str, Any]:
    """The switch's drops: what its hosts' ports dropped or missed
    (switch_total, with the frames their af_packet sockets never
    read), what the daqrings dropped, what the qdiscs dropped; per
    port and qdisc the counters that grew."""
    rings = {plan.ring_name(d) for d in plan.dcms}
    hosts = {h.port_name for h in plan.hosts}
    dcm_ports = {d.port_name for d in plan.dcm_hosts}
    ports: Dict[str, Dict[str, int]] = {}
    total = ring_drops = 0
    for name, st in after["ports"].items():
        if name not in rings and name not in hosts:
            continue
        delta = counter_delta(before["ports"].get(name, {}), st)
        if name in rings:
            ring_drops += delta.get("tx_dropped", 0)
        else:
            total += sum(delta.get(k, 0) for k in PORT_DROPS)
        keep = notable(delta)
        if name in rings or name in dcm_ports:
            for k in ("tx_packets", "rx_packets", "tx_dropped"):
                keep[k] = delta.get(k, 0)
        if name in dcm_ports:
            # --tx-retry-budget-us: how often and how long the port
            # made the PMD wait instead of dropping.
            for k in ("ovs_tx_retries", "ovs_tx_retry_us"):
                if k in st:
                    keep[k] = delta.get(k, 0)
        if keep:
            ports[name] = keep
    qdiscs = deltas(before, after, "qdisc")
    links = deltas(before, after, "links")
    # Frames the host sent that its switch port never read: the
    # kernel dropped them because the af_packet socket's RX ring was
    # full (no counter shows it).  Counted as switch drops.
    socket = unread(before, after, links,
                    [h.port_name for h in plan.hosts])
    total += sum(socket.values())

    # Frames the ROS ports sent per frame the DCM ports received: the
    # DCMs' requests and ACKs go to one ROS each, so 1 unless the
    # bridge floods them.
    def delta(names: Set[str], key: str) -> int:
        return sum(counter_delta(before["ports"].get(n, {}),
                                 after["ports"].get(n, {})).get(key, 0)
                   for n in names)
    dcm_rx = delta(dcm_ports, "rx_packets")
    ros_tx = delta(hosts - dcm_ports, "tx_packets")
    for name, n in socket.items():
        ports.setdefault(name, {})["af_packet_rx_ring_drops"] = n
    return {"switch_total": total, "daqring": ring_drops,
            "qdisc": sum(q["drops"] for q in qdiscs.values()),
            "af_packet_rx": sum(socket.values()),
            "ros_tx_per_dcm_rx": ros_tx / dcm_rx if dcm_rx else 0.0,
            "ports": ports, "qdiscs": qdiscs, "hosts": links}


def tcp_figures(before: Snapshot, after: Snapshot) -> Dict[str, Any]:
    """The hosts' TCP retransmissions, RTOs and loss probes, in
    all and per namespace (those with any).  'probe_recoveries': the
    tail losses that a loss probe repaired (TcpExt.TCPLossProbeRecovery,
    not an RTO): a message of one segment lost whole, as a DCM's
    request, is repaired so, after 2 x SRTT plus the minimum RTO (200
    ms) when it was the connection's only segment in flight."""
    per = {ns: counter_delta(before["tcp"].get(ns, {}), st)
           for ns, st in after["tcp"].items()}
    by_ns = {ns: {"retrans_segs": d.get("Tcp.RetransSegs", 0),
                  "rto_timeouts": d.get("TcpExt.TCPTimeouts", 0),
                  "probe_recoveries": d.get("TcpExt.TCPLossProbeRecovery",
                                            0)}
             for ns, d in per.items()}
    return {
        "retrans_segs": sum(v["retrans_segs"] for v in by_ns.values()),
        "rto_timeouts": sum(v["rto_timeouts"] for v in by_ns.values()),
        "probe_recoveries": sum(v["probe_recoveries"]
                                for v in by_ns.values()),
        "loss_probes": sum(d.get("TcpExt.TCPLossProbes", 0)
                           for d in per.values()),
        "by_namespace": {ns: v for ns, v in by_ns.items()
                         if any(v.values())},
    }
