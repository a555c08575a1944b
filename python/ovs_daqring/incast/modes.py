# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The runs of daq-incast and their parameters: every run's mode,
parameters and label, in the order they run (mode_runs()), and the
daqring options of the DCMs that share a link, with the ring sharing
policy (ring_params(): the DCMs of an HLT host in the fabric, or of a
DCM host on one switch with --dcms-per-host)."""

from typing import Any, Dict, List, Sequence, Tuple

from .config import Config
from .limits import DAQRING_FRAME, DEEP_FIFO, SWEEP_PARAMS
from .units import format_rate


def mode_runs(cfg: Config) -> List[Tuple[str, Dict[str, Any], str]]:
    """(mode, parameters, label) of every run, in order."""
    def params(mode: str, **over: int) -> Dict[str, Any]:
        if mode == "credits":
            return {"credits": over.get("credits", cfg.credits)}
        if mode == "daqring":
            p: Dict[str, Any] = {
                "ring_size": over.get("ring-size", cfg.ring_size),
                "max_burst": over.get("max-burst", cfg.max_burst),
                "poll_interval_us": over.get("poll-interval",
                                             cfg.poll_interval_us),
                # A swept poll-interval means packet shaping.
                "max_rate_bps": (0 if "poll-interval" in over
                                 else cfg.max_rate_bps),
                "frame_overhead": cfg.link_overhead}
            if p["max_rate_bps"]:
                p["rate_bps"] = p["max_rate_bps"]
                p["max_burst_bytes"] = cfg.max_burst_bytes
            elif p["poll_interval_us"]:
                p["rate_bps"] = (p["max_burst"] * 1518 * 8
                                 / (p["poll_interval_us"] * 1e-6))
            else:
                p["rate_bps"] = 0
            p["flow_buckets"] = cfg.flow_buckets_for(
                p["ring_size"], p["rate_bps"], bool(p["max_rate_bps"]))
            if cfg.tx_retry_budget_us:
                p["tx_retry_budget_us"] = cfg.tx_retry_budget_us
            return p
        return {}

    runs = []
    swept = SWEEP_PARAMS[cfg.sweep_param][0] if cfg.sweep_param else None
    for mode in cfg.modes:
        if mode == DEEP_FIFO:
            for spec in cfg.deep_limits:
                runs.append((mode, {"deep_limit": spec},
                             deep_label(spec, cfg.deep_limits)))
            continue
        if mode != swept:
            runs.append((mode, params(mode), mode))
            continue
        assert cfg.sweep_param is not None
        for v in cfg.sweep_values:
            runs.append((mode, params(mode, **{cfg.sweep_param: v}),
                         "%s %s=%d" % (mode, cfg.sweep_param, v)))
    # The deep-FIFO peer's runs first: its bridge takes the veths that
    # the DPDK switch's af_packet ports would otherwise read, and the
    # switch starts (once) after them.
    runs.sort(key=lambda r: r[0] != DEEP_FIFO)
    if cfg.dcms_per_host > 1:
        for _, p, _ in runs:
            if "ring_size" in p:
                share_ring(cfg, p)
    if not cfg.hog:
        return runs
    # Every run twice: without the hog, then with it.
    return [(m, dict(p, hog=hog), label + (" +hog" if hog else ""))
            for m, p, label in runs for hog in (False, True)]


def deep_label(spec: str, specs: Sequence[str]) -> str:
    """The label of the deep-FIFO run with queue limit SPEC."""
    if specs == ["auto"]:
        return DEEP_FIFO
    return "%s limit=%s" % (DEEP_FIFO, spec)


def share_ring(cfg: Config, p: Dict[str, Any]) -> None:
    """The daqring parameters P of one of the DCMs that share a link,
    with the fabric's sharing policy (ring_params() below: 'static',
    each of the K rings gets the link's ring rate / K and max-burst / K;
    'shared', each the whole rate, the K rings bound to the link's port
    sharing it as egress-max-rate)."""
    shared = ring_params(cfg, "daqring")
    for k in ("max_burst", "max_rate_bps", "rate_bps", "flow_buckets",
              "egress_max_rate_bps", "egress_max_burst_bytes", "sharing"):
        p[k] = shared[k]


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
