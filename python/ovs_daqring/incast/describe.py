# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The plan of a daq-incast run as it is printed before the run (and
alone with --dry-run): the hosts, the access link, the modes and their
parameters, the hosts' receive and the switch."""

from . import VERSION
from ..daqctl.model import ring_drain_s
from .config import Config
from .limits import DEEP_FIFO
from .modes import ring_params
from .stats import ideal_collection_time, payload_efficiency
from .topology import DEEP_BRIDGE, Plan
from .units import format_rate


def fairness_words(cfg: Config) -> str:
    """The daqrings' flow fairness, for the plan line."""
    rate = cfg.daqring_rate_bps             # infinite: unshaped
    byte_shaping = bool(cfg.max_rate_bps)
    n = cfg.flow_buckets_for(cfg.ring_size, rate, byte_shaping)
    what = "flow-buckets %d" % n if n else "flow-buckets 0, a FIFO"
    if cfg.flow_buckets is not None:
        return what
    if rate == float("inf"):
        return what + " (auto: unshaped)"
    return what + " (auto: a full ring drains in %.0f ms)" % (
        1e3 * ring_drain_s(cfg.ring_size, rate,
                           cfg.ring_frame_bits(byte_shaping)))


def describe(cfg: Config, plan: Plan) -> str:
    eff = payload_efficiency(cfg.fragment_size, cfg.mss, cfg.link_overhead)
    lines = [
        "daq-incast %s: %d ROS x %d B -> %d DCM(s); %d namespaces, %d "
        "ethdev ports%s" % (VERSION, cfg.ros, cfg.fragment_size, cfg.dcms,
                            len(plan.hosts), cfg.ethdev_ports,
                            " (%d ROS per namespace)" % cfg.ros_per_host
                            if cfg.ros_per_host > 1 else ""),
        "access link: tbf %s, burst %d B, limit %d B, +%d B/frame; port "
        "buffer %d frames; ideal goodput %s (%.1f%% payload), "
        "ideal event %.1f ms"
        % (format_rate(cfg.link_rate_bps), cfg.link_burst, cfg.link_limit,
           cfg.link_overhead, cfg.port_frames,
           format_rate(cfg.link_rate_bps * eff),
           100 * eff, 1e3 * ideal_collection_time(
               cfg.link_rate_bps, cfg.ros, cfg.fragment_size, cfg.mss,
               cfg.link_overhead)),
        "modes: %s; %d events per DCM and mode after %d warm-up, %d in "
        "flight (processing units); credits %d%s; requests per connection "
        "%s; TCP: congestion control %s (--congestion-control), "
        "otherwise Linux defaults%s; the DCM yields its CPU %s"
        % (", ".join(cfg.modes), cfg.events, cfg.warmup_events, cfg.pus,
           cfg.credits,
           " (auto)" if cfg.credits_auto else "",
           cfg.pipeline or "unlimited", cfg.congestion_control,
           " + TCP_NODELAY" if cfg.tcp_nodelay else "",
           "every %d requests" % cfg.request_yield if cfg.request_yield
           else "never while it requests"),
    ]
    if "daqring" in cfg.modes:
        if cfg.max_rate_bps:
            lines.append(
                "daqring: ring-size %d, max-rate %s (bytes, +%d B/frame "
                "like the link), max-burst %d%s, %s"
                % (cfg.ring_size, format_rate(cfg.max_rate_bps),
                   cfg.link_overhead, cfg.max_burst,
                   ", max-burst-bytes %d" % cfg.max_burst_bytes
                   if cfg.max_burst_bytes else "", fairness_words(cfg)))
        else:
            lines.append(
                "daqring: ring-size %d, max-burst %d, poll-interval %d us = "
                "%s (max-burst x 1518 x 8 / poll-interval), %s"
                % (cfg.ring_size, cfg.max_burst, cfg.poll_interval_us,
                   format_rate(cfg.daqring_rate_bps), fairness_words(cfg)))
        if cfg.tx_retry_budget_us:
            lines.append(
                "daqring mode: DCM ports wait up to %d us for room when full "
                "(tx-retry-budget-us) instead of dropping"
                % cfg.tx_retry_budget_us)
    if cfg.topology == "switch" and cfg.dcms_per_host > 1:
        lines.append(
            "shared links: %d DCMs per DCM host, %d host(s), one access "
            "link each; events to all DCMs at once; ring sharing %s"
            % (cfg.dcms_per_host, cfg.hlt_hosts,
               ring_params(cfg, "daqring")["sharing"]))
    if cfg.hog:
        lines.append(
            "hog: DCM 0's fragments %d x %d B (its ring-size %d); every "
            "mode runs without the hog, then with it (+hog)"
            % (cfg.hog, cfg.fragment_size, cfg.hog_ring_size))
    if DEEP_FIFO in cfg.modes and hasattr(plan, "dcm_hosts"):
        first = [d.index for d in plan.dcms_of(plan.dcm_hosts[0])]
        lines.append(
            "deep-fifo: Linux bridge %s, no DPDK switch; every egress a "
            "deep FIFO (DCM links: tbf at the link's rate; ROS ports: "
            "bfifo), limit %s (first DCM host's egress: %s)"
            % (DEEP_BRIDGE, ", ".join(cfg.deep_limits), ", ".join(
                "%d B" % cfg.deep_limit(x, first) for x in cfg.deep_limits)))
    lines.append("hosts' receive: %s" % (
        "RPS to CPU %s, off the PMD's, for %s (--host-rps %s)"
        % (",".join(map(str, cfg.rps_cpus)), " and ".join(
            k.upper() for k in cfg.rps_kinds), cfg.host_rps)
        if cfg.rps_cpus else
        "where the sender runs, the PMD's core included (--host-rps off)"))
    if cfg.preempt_us[0]:
        lines.append("PMD preempted: %g ms of every %g ms by a real-time "
                     "thread on core %d (--pmd-preempt)"
                     % (cfg.preempt_us[0] / 1e3, cfg.preempt_us[1] / 1e3,
                        cfg.pmd_cpus[0]))
    lines.append("switch: %s" % (
        cfg.binaries.origin if cfg.topology == "fabric"
        or any(m != DEEP_FIFO for m in cfg.modes)
        else "none (deep-fifo runs only: the Linux bridge)"))
    lines += ["note: " + n for n in cfg.notes]
    return "\n".join(lines)
