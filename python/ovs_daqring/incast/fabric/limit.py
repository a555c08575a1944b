# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The emulated fabric's theoretical limit for full event building
(thesis 6.2.2), whole or with a spine lost, and its formula as the
summary prints it."""

from typing import Any, Dict, Optional

from ..config import Config
from ..stats import payload_efficiency
from ..units import format_rate
from .plan import FabricPlan


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


def degraded_formula(lim: Dict[str, Any], failed: str = "a link") -> str:
    """The degraded limit (fabric_limit with one spine fewer) with its
    formula's inputs, for the summary; 'failed': what --failover fails
    (failover.link: a link, or a spine)."""
    i = lim["inputs"]

    def r(v: Optional[float]) -> str:
        return "inf" if v is None else format_rate(v)
    return ("degraded limit (one spine fewer while %s fails): %s with N_P %d, "
            "N_S %d, N_H %d, N_R %d, b_H %s, b_R %s, b_S %s = %s (bound by "
            "%s), x payload efficiency %.3f = %s goodput"
            % (failed, lim["formula"], i["N_P"], i["N_S"], i["N_H"],
               i["N_R"], r(i["b_H_bps"]), r(i["b_R_bps"]), r(i["b_S_bps"]),
               format_rate(lim["limit_bps"]), lim["bound_by"],
               lim["efficiency"], format_rate(lim["goodput_bps"])))
