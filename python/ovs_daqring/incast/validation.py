# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Validation of daq-incast's parsed arguments: validate() checks them,
one option group at a time, against the limits (limits.py) and a HostInfo
snapshot (which hosts.probe_host() fills in from the machine), and either
returns a Config or raises ConfigError.  Nothing is created before
validation has passed."""

import argparse
import math
import os
import re
import shutil
from typing import List, Optional, Sequence, Tuple

from ..hosts import ConfigError, HostInfo, parse_cpu_mask
from ..sandbox import Binaries
from .binaries import resolve_binaries
from .config import Config
from .limits import (AVAILABLE_CC, BYTES_RATE_FRACTION, DEEP_FIFO,
                     FABRIC_MODES, HOST_ARP_MODES, MAX_DCMS, MAX_ETHDEV_PORTS,
                     MAX_EVENTS, MAX_FABRIC_DCMS, MAX_FABRIC_PLANES,
                     MAX_FABRIC_ROS_PER_HOST, MAX_FABRIC_SPINES, MAX_FRAGMENT,
                     MAX_HLT_HOSTS, MAX_HOG, MAX_PIPELINE, MAX_PUS,
                     MAX_ROS_LEAVES, MAX_ROS_PER_HOST, MAX_TOTAL_RATE_BPS,
                     MIN_LINK_BUFFER, MIN_RATE_BPS, MODES,
                     PACKETS_RATE_FRACTION, SWEEP_PARAMS)
from .sizing import (auto_byte_burst, auto_credits, auto_ring_size,
                     auto_shaping, byte_burst_bytes, max_port_frames,
                     tx_retry_budget)
from .units import format_rate, parse_rate, parse_size
from .values import (parse_deep_limits, parse_failover, parse_flow_buckets,
                     parse_preempt, parse_sweep)


def positive(name: str, value: float) -> None:
    """Raise ConfigError unless VALUE of option NAME is positive."""
    if value <= 0:
        raise ConfigError("%s must be positive, not %s" % (name, value))


def validate(ns: argparse.Namespace, host: HostInfo,
             check_env: bool = True) -> Config:
    """Turn parsed arguments into a Config; raise ConfigError on any bad
    parameter.  With check_env=False (--dry-run) the machine checks (root,
    hugepages, binaries) are skipped."""
    positive("--ros", ns.ros)
    positive("--dcms", ns.dcms)
    fabric = check_topology(ns)
    dcms_per_host, links, hog = access_links(ns, fabric)
    fragment = check_traffic(ns, fabric)
    notes: List[str] = []
    rate, tx_retry_us, burst, limit = check_link(ns, host, fabric, links,
                                                 notes)
    k = ros_per_namespace(ns, fabric, links, notes)
    modes, host_arp, deep_limits, sweep_param, sweep_values = check_modes(
        ns, fabric)

    mtu = 1500
    credits_auto, credits, ring, hog_ring = queue_sizes(ns, fragment, hog,
                                                        mtu)
    max_burst, poll, max_rate, burst_bytes = daqring_shaping(
        ns, rate, mtu, fabric, dcms_per_host)
    for name, v in (("--timeout", ns.timeout),
                    ("--event-deadline", ns.event_deadline),
                    ("--rto-threshold", ns.rto_threshold),
                    ("--socket-mem", ns.socket_mem)):
        positive(name, v)

    preempt, pmd_cpus, agent_cpus = check_cpus(ns, host)
    binaries, use_huge = check_machine(ns, host, fabric, modes, check_env,
                                       notes)

    return Config(
        ros=ns.ros, dcms=ns.dcms, ros_per_host=k, fragment_size=fragment,
        fragment_dist=ns.fragment_dist, events=ns.events, pus=ns.pus,
        warmup_events=ns.warmup_events,
        event_gap_ms=ns.event_gap, credits=credits,
        credits_auto=credits_auto, seed=ns.seed,
        tcp_nodelay=ns.tcp_nodelay == "on", link_rate_bps=rate,
        request_yield=ns.request_yield, pipeline=ns.pipeline,
        link_burst=burst, link_limit=limit, link_overhead=ns.link_overhead,
        port_frames=ns.port_frames,
        mtu=mtu, modes=modes, ring_size=ring, max_burst=max_burst,
        poll_interval_us=poll, max_rate_bps=max_rate,
        max_burst_bytes=burst_bytes,
        tx_retry_budget_us=tx_retry_us,
        ring_rate_fraction=ns.ring_rate_fraction,
        sweep_param=sweep_param, sweep_values=sweep_values,
        binaries=binaries, socket_mem_mb=ns.socket_mem,
        use_hugepages=use_huge, hugepages_mode=ns.hugepages,
        pmd_cpus=pmd_cpus, agent_cpus=agent_cpus, preempt_us=preempt,
        timeout_s=ns.timeout, event_deadline_s=ns.event_deadline,
        rto_threshold_s=ns.rto_threshold / 1000.0, json_path=ns.json,
        plot_dir=ns.plot_dir, log_dir=ns.log_dir, progress=not ns.quiet,
        dry_run=ns.dry_run, notes=notes,
        flow_buckets=parse_flow_buckets(ns.flow_buckets),
        host_rps=ns.host_rps, congestion_control=ns.congestion_control,
        topology=ns.topology,
        hlt_hosts=ns.hlt_hosts if fabric else links, spines=ns.spines,
        planes=ns.planes, ros_leaves=ns.ros_leaves,
        fabric_db_members=ns.fabric_db_members,
        ring_sharing=ns.ring_sharing, fabric_dpdk=ns.fabric_dpdk == "on",
        host_arp=host_arp,
        failover=parse_failover(ns.failover, ns.spines) if fabric
        else (0.0, 0.0), hold=bool(getattr(ns, "hold", False)),
        deep_limits=deep_limits, hog=hog,
        hog_ring_size=hog_ring)


def check_topology(ns: argparse.Namespace) -> bool:
    """--topology and the options of the other topology: True for a
    fabric."""
    fabric = getattr(ns, "topology", "switch") == "fabric"
    if fabric:
        check_fabric(ns)
        if getattr(ns, "dcms_per_host", 1) != 1:
            raise ConfigError("--dcms-per-host is for --topology switch; "
                              "a fabric spreads --dcms over --hlt-hosts")
    else:
        per = getattr(ns, "dcms_per_host", 1)
        if not 1 <= per <= MAX_DCMS or ns.dcms % per:
            raise ConfigError("--dcms-per-host %d: must be 1..%d and divide "
                              "--dcms %d" % (per, MAX_DCMS, ns.dcms))
        for opt, default in (("hlt_hosts", 1), ("ros_leaves", 1),
                             ("spines", 1), ("planes", 1),
                             ("fabric_db_members", 3),
                             ("fabric_dpdk", "on"), ("failover", ""),
                             ("failover_target", ""),
                             ("hold", False), ("host_arp", "static")):
            if getattr(ns, opt, default) != default:
                raise ConfigError("--%s needs --topology fabric"
                                  % opt.replace("_", "-"))
        if (getattr(ns, "ring_sharing", "static") != "static"
                and per == 1):
            raise ConfigError("--ring-sharing %s: the DCMs of a host share "
                              "its link with --topology fabric or "
                              "--dcms-per-host >= 2" % ns.ring_sharing)
    return fabric


def access_links(ns: argparse.Namespace,
                 fabric: bool) -> Tuple[int, int, int]:
    """(DCMs per host, access links, --hog)."""
    # Hosts with their own access link (and ethdev port): each DCM host
    # on one switch, each HLT host in a fabric.
    dcms_per_host = 1 if fabric else getattr(ns, "dcms_per_host", 1)
    links = ns.hlt_hosts if fabric else ns.dcms // dcms_per_host
    hog = getattr(ns, "hog", 0)
    if hog and (fabric or not 2 <= hog <= MAX_HOG or dcms_per_host < 2):
        raise ConfigError("--hog %d: F must be 2..%d, on --topology switch "
                          "with --dcms-per-host >= 2 (the hog shares its "
                          "link with other DCMs)" % (hog, MAX_HOG))
    return dcms_per_host, links, hog


def check_traffic(ns: argparse.Namespace, fabric: bool) -> int:
    """The traffic options; returns the fragment size in bytes."""
    positive("--events", ns.events)
    positive("--pus", ns.pus)
    if not 0 <= ns.pipeline <= MAX_PIPELINE:
        raise ConfigError("--pipeline must be 0..%d, not %d"
                          % (MAX_PIPELINE, ns.pipeline))
    if not 0 <= ns.request_yield <= 100_000:
        raise ConfigError("--request-yield must be 0..100000, not %d"
                          % ns.request_yield)
    if not 0 <= ns.warmup_events <= 100:
        raise ConfigError("--warmup-events must be 0..100, not %d"
                          % ns.warmup_events)
    if ns.pus > MAX_PUS:
        raise ConfigError("--pus %d is more than %d" % (ns.pus, MAX_PUS))
    if ns.events > MAX_EVENTS:
        raise ConfigError("--events %d is more than %d"
                          % (ns.events, MAX_EVENTS))
    if ns.dcms > MAX_DCMS and not fabric:
        raise ConfigError("--dcms %d: at most %d DCMs (each needs its own "
                          "namespace, access link and port)"
                          % (ns.dcms, MAX_DCMS))
    fragment = parse_size(ns.fragment_size)
    positive("--fragment-size", fragment)
    if fragment > MAX_FRAGMENT:
        raise ConfigError("--fragment-size %d is more than %d bytes"
                          % (fragment, MAX_FRAGMENT))
    if ns.event_gap < 0:
        raise ConfigError("--event-gap must not be negative")
    if ns.credits < 0:
        raise ConfigError("--credits must be positive")
    return fragment


def check_link(ns: argparse.Namespace, host: HostInfo, fabric: bool,
               links: int, notes: List[str]) -> Tuple[int, int, int, int]:
    """The access-link options: (rate bit/s, TX retry budget us, tbf burst,
    tbf limit); what deserves a remark goes to NOTES."""
    rate = parse_rate(ns.link_rate)
    if rate < MIN_RATE_BPS:
        raise ConfigError("--link-rate %s is below %s" % (
            ns.link_rate, format_rate(MIN_RATE_BPS)))
    if rate * links > MAX_TOTAL_RATE_BPS:
        raise ConfigError(
            "--link-rate %s x %d %s is more than the %s two cores can "
            "drive through af_packet ports; the run would measure the CPU"
            % (ns.link_rate, links, "HLT hosts" if fabric else "DCMs",
               format_rate(MAX_TOTAL_RATE_BPS)))
    if not 0 <= ns.link_overhead <= 64:
        raise ConfigError("--link-overhead must be 0..64")
    max_frames = max_port_frames(host.wmem_default)
    if not 2 <= ns.port_frames <= max_frames or ns.port_frames % 2:
        raise ConfigError(
            "--port-frames must be an even number in 2..%d, not %d (beyond "
            "half the af_packet socket's send buffer, net.core.wmem_default"
            " = %d, a full TX ring blocks the PMD instead of dropping)"
            % (max_frames, ns.port_frames, host.wmem_default))
    tx_retry_us = tx_retry_budget(getattr(ns, "tx_retry_budget_us", "0"),
                                  ns.link_overhead, rate)
    if tx_retry_us and fabric:
        raise ConfigError("--tx-retry-budget-us: the single switch's DCM "
                          "ports only (--topology switch)")
    burst = parse_size(ns.link_burst)
    ring_bytes = ns.port_frames * (1514 + ns.link_overhead)
    if ns.link_limit == "auto":
        limit = ring_bytes + 2 * (1514 + ns.link_overhead)
    else:
        limit = parse_size(ns.link_limit)
        if limit < ring_bytes:
            notes.append("--link-limit %d is less than the port's %d "
                         "frames: tbf will refuse frames, which af_packet "
                         "retries only when the port sends again (delays "
                         "without loss)" % (limit, ns.port_frames))
    for name, v in (("--link-burst", burst), ("--link-limit", limit)):
        if v < MIN_LINK_BUFFER:
            raise ConfigError("%s %d: must hold a full frame (>= %d bytes)"
                              % (name, v, MIN_LINK_BUFFER))
    return rate, tx_retry_us, burst, limit


def ros_per_namespace(ns: argparse.Namespace, fabric: bool, links: int,
                      notes: List[str]) -> int:
    """ROS per host namespace, so that the hosts fit the ethdev ports."""
    # Hosts: one ethdev port per namespace (in a fabric, the HLT leaf's
    # ports: its HLT hosts' and its uplinks; the ROS are on system ports
    # of the ROS leaves, and aggregated the same way).
    # (The HLT leaves of every plane are bridges of one ovs-vswitchd.)
    dcm_ports = ((ns.hlt_hosts + ns.spines) * ns.planes if fabric
                 else links)
    if ns.ros_per_host < 0:
        raise ConfigError("--ros-per-host must be positive")
    k = ns.ros_per_host or 1
    if not ns.ros_per_host and ns.ros + dcm_ports > MAX_ETHDEV_PORTS:
        k = -(-ns.ros // (MAX_ETHDEV_PORTS - dcm_ports))
    if k > MAX_ROS_PER_HOST:
        raise ConfigError(
            "--ros %d with %d DCM hosts needs %d ROS per namespace: at most "
            "%d (and %d DPDK ethdev ports), i.e. at most %d ROS"
            % (ns.ros, links, k, MAX_ROS_PER_HOST, MAX_ETHDEV_PORTS,
               MAX_ROS_PER_HOST * (MAX_ETHDEV_PORTS - dcm_ports)))
    ports = -(-ns.ros // k) + dcm_ports
    if ports > MAX_ETHDEV_PORTS:
        raise ConfigError(
            "%d ROS at %d per namespace plus %d DCM hosts need %d ethdev "
            "ports; this DPDK allows %d"
            % (ns.ros, k, links, ports, MAX_ETHDEV_PORTS))
    if k > 1:
        notes.append("hosts aggregated: %d ROS per namespace (%d ethdev "
                     "ports for %d ROS + %d DCM hosts)"
                     % (k, ports, ns.ros, links))
    return k


def check_modes(ns: argparse.Namespace, fabric: bool) -> Tuple[
        List[str], str, List[str], Optional[str], List[int]]:
    """--modes and what adds to them: (modes, --host-arp, deep-FIFO
    limits, sweep parameter, sweep values)."""
    modes = [m.strip() for m in ns.modes.split(",") if m.strip()]
    known = FABRIC_MODES if fabric else MODES
    for m in modes:
        if m not in known:
            raise ConfigError("unknown mode %r (modes: %s)"
                              % (m, ", ".join(known)))
    if fabric and not ns.fabric_dpdk == "on":
        rings = [m for m in modes if m.startswith("daqring")]
        if rings:
            raise ConfigError("--fabric-dpdk off: no daqrings without "
                              "DPDK; drop %s from --modes" % ", ".join(rings))
    host_arp = getattr(ns, "host_arp", "static")
    if host_arp != "static":
        normal = [m for m in modes if m not in HOST_ARP_MODES]
        if normal:
            raise ConfigError(
                "--host-arp %s: %s switch by MAC through the NORMAL action, "
                "which cannot reach hosts that do no ARP; only %s route "
                "everything through the fabric's flows (drop %s from "
                "--modes)" % (host_arp, ", ".join(normal),
                              " and ".join(HOST_ARP_MODES),
                              ", ".join(normal)))
    deep_limits = parse_deep_limits(getattr(ns, "deep_limit", None))
    if getattr(ns, "deep_limit", None) and DEEP_FIFO not in modes:
        modes.append(DEEP_FIFO)
    if not modes or len(set(modes)) != len(modes):
        raise ConfigError("--modes needs distinct modes")
    sweep_param: Optional[str] = None
    sweep_values: List[int] = []
    if ns.sweep and fabric:
        raise ConfigError("--sweep is not supported with --topology "
                          "fabric yet")
    if ns.sweep:
        sweep_param, sweep_values = parse_sweep(ns.sweep)
        mode = SWEEP_PARAMS[sweep_param][0]
        if mode not in modes:
            modes.append(mode)
    return modes, host_arp, deep_limits, sweep_param, sweep_values


def queue_sizes(ns: argparse.Namespace, fragment: int, hog: int,
                mtu: int) -> Tuple[bool, int, int, int]:
    """(credits automatic, credits, ring size, the hog's ring size)."""
    mss = mtu - 52
    credits_auto = ns.credits == 0
    credits = ns.credits or auto_credits(fragment, mss, ns.port_frames,
                                         mtu, ns.link_overhead)
    if ns.ring_size < 0:
        raise ConfigError("--ring-size must be positive")
    ring = ns.ring_size or auto_ring_size(ns.ros, fragment, mss, ns.pus)
    hog_ring = (ns.ring_size or auto_ring_size(ns.ros, fragment * hog, mss,
                                               ns.pus)) if hog else 0
    return credits_auto, credits, ring, hog_ring


def daqring_shaping(ns: argparse.Namespace, rate: int, mtu: int,
                    fabric: bool,
                    dcms_per_host: int) -> Tuple[int, int, int, int]:
    """How the daqrings are shaped: (max-burst, poll-interval us, max-rate
    bit/s, max-burst-bytes); sets ns.ring_rate_fraction when not given."""
    byte_shaping = ns.shaper == "bytes" and ns.poll_interval < 0
    if fabric and not byte_shaping:
        raise ConfigError("--topology fabric shapes daqrings by bytes "
                          "(each ring gets its share of the HLT host's "
                          "link as max-rate): --shaper packets and "
                          "--poll-interval are not supported")
    if dcms_per_host > 1 and not byte_shaping:
        raise ConfigError("--dcms-per-host %d: the daqrings of a shared "
                          "link share its rate by bytes (max-rate): "
                          "--shaper packets and --poll-interval are not "
                          "supported" % dcms_per_host)
    if ns.ring_rate_fraction is None:
        ns.ring_rate_fraction = (BYTES_RATE_FRACTION if byte_shaping
                                 else PACKETS_RATE_FRACTION)
    if not 0 < ns.ring_rate_fraction <= 1:
        raise ConfigError("--ring-rate-fraction must be in (0, 1]")
    if ns.max_burst and not 1 <= ns.max_burst <= 32:
        raise ConfigError("--max-burst must be 1..32, not %d" % ns.max_burst)
    if ns.poll_interval < -1:
        raise ConfigError("--poll-interval must not be negative")
    frame_bits = (mtu + 14 + ns.link_overhead) * 8
    max_rate = 0
    burst_bytes = 0
    if ns.max_burst_bytes is not None and not byte_shaping:
        raise ConfigError("--max-burst-bytes bounds a byte shaper: it "
                          "excludes --shaper packets and --poll-interval")
    if ns.max_rate is not None and (ns.shaper == "packets"
                                    or ns.poll_interval >= 0):
        raise ConfigError("--max-rate shapes by bytes: it excludes "
                          "--shaper packets and --poll-interval")
    if byte_shaping:
        # The daqring counts each frame's overhead like the link's tbf
        # (frame-overhead = --link-overhead), so it can run at the link's
        # rate for any frame size.  Its bucket (max-burst full frames) is
        # what keeps frames in front of the link when the PMD thread is
        # preempted: see auto_byte_burst().
        max_rate = (parse_rate(ns.max_rate) if ns.max_rate is not None
                    else int(round(ns.ring_rate_fraction * rate)))
        if not 1000 <= max_rate <= 10**12:
            raise ConfigError("--max-rate must be 1kbit..1000gbit")
        max_burst = ns.max_burst or auto_byte_burst(ns.port_frames)
        poll = 0
        burst_bytes = byte_burst_bytes(ns.max_burst_bytes, ns.port_frames,
                                       ns.link_overhead)
    elif ns.max_burst and ns.poll_interval >= 0:
        max_burst, poll = ns.max_burst, ns.poll_interval
    elif ns.max_burst:
        max_burst = ns.max_burst
        poll = math.ceil(max_burst * frame_bits
                         / (ns.ring_rate_fraction * rate) * 1e6)
    elif ns.poll_interval >= 0:
        poll = ns.poll_interval
        max_burst = max(1, min(32, int(ns.ring_rate_fraction * rate
                                       * poll * 1e-6 / frame_bits)))
    else:
        max_burst, poll = auto_shaping(rate, ns.link_overhead, mtu,
                                       ns.ring_rate_fraction,
                                       ns.port_frames // 2 * (mtu + 14))
    return max_burst, poll, max_rate, burst_bytes


def check_cpus(ns: argparse.Namespace, host: HostInfo) -> Tuple[
        Tuple[int, int], List[int], List[int]]:
    """(--pmd-preempt in us, PMD CPUs, the agents' CPUs)."""
    preempt = parse_preempt(ns.pmd_preempt)
    pmd_cpus = parse_cpu_mask(ns.pmd_cpu_mask)
    if preempt[0] and len(pmd_cpus) != 1:
        raise ConfigError("--pmd-preempt needs exactly one PMD core")
    bad = [c for c in pmd_cpus if c not in host.cpus]
    if bad:
        raise ConfigError("--pmd-cpu-mask %s names CPUs %s that this "
                          "process cannot use (it has %s)"
                          % (ns.pmd_cpu_mask, bad, host.cpus))
    agent_cpus = [c for c in host.cpus if c not in pmd_cpus]
    if not agent_cpus:
        raise ConfigError("the PMD would take every CPU (%s); need at least "
                          "one more for the hosts" % host.cpus)
    return preempt, pmd_cpus, agent_cpus


def check_machine(ns: argparse.Namespace, host: HostInfo, fabric: bool,
                  modes: List[str], check_env: bool,
                  notes: List[str]) -> Tuple[Binaries, bool]:
    """The binaries, hugepages and tools (the machine checks only with
    CHECK_ENV): (binaries, whether to use hugepages)."""
    binaries = resolve_binaries(ns.ovs_build, ns.vswitchd)
    # A run of deep-fifo modes alone starts no DPDK switch.
    dpdk = fabric or any(m != DEEP_FIFO for m in modes)
    use_huge = dpdk and ns.hugepages != "off" and (
        not fabric or ns.fabric_dpdk == "on")
    check_congestion_control(ns.congestion_control,
                             available_congestion_control()
                             if check_env else None)
    if check_env:
        if not host.is_root:
            raise ConfigError("must run as root (namespaces, veths, qdiscs, "
                              "DPDK)")
        tools = (binaries.vswitchd, binaries.ovsdb_server,
                 binaries.ovsdb_tool, binaries.vsctl, binaries.ofctl,
                 binaries.appctl)
        for path in tools if dpdk else ():
            if not os.access(path, os.X_OK):
                hint = ""
                if ns.vswitchd is None and ns.ovs_build is None:
                    hint = (" (the repository's build is missing: build it, "
                            "or use --vswitchd /usr/lib/openvswitch-switch-"
                            "dpdk/ovs-vswitchd-dpdk)")
                raise ConfigError("%s: not an executable%s" % (path, hint))
        if dpdk and not os.path.isfile(binaries.schema):
            raise ConfigError("%s: schema not found" % binaries.schema)
        for tool in ("ip", "tc", "ethtool", "bridge"):
            if shutil.which(tool) is None and not os.access(
                    "/usr/sbin/" + tool, os.X_OK):
                raise ConfigError("%s not found (install iproute2, ethtool)"
                                  % tool)
        if use_huge and host.hugepages_free_mb < ns.socket_mem:
            notes.append("%d MB of hugepages free, --socket-mem %d: the "
                         "missing ones are reserved for the run and given "
                         "back after it%s"
                         % (host.hugepages_free_mb, ns.socket_mem,
                            "" if ns.hugepages == "require" else
                            " (--no-huge if that fails)"))
    if host.other_vswitchd and dpdk:
        notes.append("another ovs-vswitchd is running (%s): it may share "
                     "the PMD core and skew the results"
                     % ", ".join(host.other_vswitchd))
    return binaries, use_huge


def check_fabric(ns: argparse.Namespace) -> None:
    """The fabric's shape (--topology fabric): what this machine can
    emulate, or ConfigError saying why not."""
    if not 1 <= ns.hlt_hosts <= MAX_HLT_HOSTS:
        raise ConfigError("--hlt-hosts must be 1..%d, not %d"
                          % (MAX_HLT_HOSTS, ns.hlt_hosts))
    if not 1 <= ns.ros_leaves <= MAX_ROS_LEAVES:
        raise ConfigError("--ros-leaves must be 1..%d, not %d"
                          % (MAX_ROS_LEAVES, ns.ros_leaves))
    if ns.planes < 1 or ns.spines < 1:
        raise ConfigError("--planes and --spines must be positive")
    if ns.planes > MAX_FABRIC_PLANES or ns.spines > MAX_FABRIC_SPINES:
        raise ConfigError(
            "--planes %d --spines %d: at most %d planes of %d spines on "
            "this machine (one PMD core for every plane's HLT leaf)"
            % (ns.planes, ns.spines, MAX_FABRIC_PLANES, MAX_FABRIC_SPINES))
    if ns.dcms > MAX_FABRIC_DCMS:
        raise ConfigError("--dcms %d: at most %d in a fabric"
                          % (ns.dcms, MAX_FABRIC_DCMS))
    if ns.dcms % ns.hlt_hosts:
        raise ConfigError("--dcms %d is not a multiple of --hlt-hosts %d "
                          "(every HLT host runs as many DCMs)"
                          % (ns.dcms, ns.hlt_hosts))
    if ns.ros < ns.ros_leaves:
        raise ConfigError("--ros %d: fewer ROS than --ros-leaves %d"
                          % (ns.ros, ns.ros_leaves))
    if ns.ros_per_host > MAX_FABRIC_ROS_PER_HOST:
        raise ConfigError("--ros-per-host %d: at most %d in a fabric (a "
                          "ROS host's addresses are one /24)"
                          % (ns.ros_per_host, MAX_FABRIC_ROS_PER_HOST))
    target = getattr(ns, "failover_target", "")
    if target:
        if not getattr(ns, "failover", ""):
            raise ConfigError("--failover-target %s needs --failover "
                              "DOWN/UP (when it fails and comes back)"
                              % target)
        if target.split(":", 1)[0] not in ("link", "spine"):
            raise ConfigError("--failover-target %r: link:SWITCH:PORT (a "
                              "leaf-spine link by either end, e.g. "
                              "link:ros-leaf0:up1) or spine:NAME (e.g. "
                              "spine:spine1)" % target)


def available_congestion_control(path: str = AVAILABLE_CC) -> List[str]:
    """The TCP congestion controls this kernel offers (every namespace
    can choose among them)."""
    try:
        with open(path) as f:
            return f.read().split()
    except OSError as e:
        raise ConfigError("cannot read the kernel's TCP congestion "
                          "controls: %s" % e)


def check_congestion_control(name: str,
                             available: Optional[Sequence[str]]) -> None:
    """Raise ConfigError unless NAME is a congestion control's name and,
    when AVAILABLE is given, one of them."""
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,15}", name):
        raise ConfigError("--congestion-control: %r is not a congestion "
                          "control's name (e.g. cubic, reno, bbr)" % name)
    if available is not None and name not in available:
        raise ConfigError("--congestion-control %s: not available on this "
                          "kernel (it offers: %s)"
                          % (name, ", ".join(available) or "none"))
