# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The fabric's lines of what daq-incast prints: the plan's description
before the run (describe_fabric()) and the summary's account of every
mode's frames and failover after it (format_fabric())."""

from typing import Any, Dict, List, Optional

from ..config import Config
from ..modes import ring_params
from ..units import format_rate
from .failover import RECOVERY_FRACTION, FailTarget
from .limit import degraded_formula, fabric_limit
from .plan import HLT_LEAF, FabricPlan


def describe_fabric(cfg: Config, plan: FabricPlan,
                    target: Optional[FailTarget] = None) -> str:
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
    lines = [
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
    ]
    if target is not None and cfg.failover[0]:
        lines.append(
            "failover: %s %s at %g s into each mode's events, %s at %g s; "
            "a loss probe counts every datagram both ways"
            % (target.name, "killed" if target.kind == "spine" else "down",
               cfg.failover[0], "restarted" if target.kind == "spine"
               else "up", cfg.failover[1]))
    return "\n".join(lines)


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
                m["label"], fo.get("target") or fo.get("link"),
                s_(fo["down_at_s"]),
                s_(fo["up_at_s"]), s_(fo["rerouted_after_s"]),
                s_(fo["back_after_s"])))
        if fo.get("kind") == "link":
            told = fo.get("leaf_notified_after_s")
            lines.append(
                "  %s told by its kernel that the link was down %s after "
                "the failure" % (fo.get("leaf") or "the leaf",
                                 "never" if told is None
                                 else "%.0f ms" % (told * 1000)))
        lines += probe_lines(fo.get("probe"))
        if fo.get("degraded_limit"):
            lines.append("  " + degraded_formula(fo["degraded_limit"],
                                                 fo.get("link", "a link")))
        lines.append(
            "  goodput >= %d%% of the degraded limit (%s) %s after the "
            "loss; >= %d%% of the limit (%s) %s after the recovery"
            % (100 * RECOVERY_FRACTION,
               format_rate(fo["degraded_limit_goodput_bps"]),
               s_(fo.get("recovered_after_s")), 100 * RECOVERY_FRACTION,
               format_rate(fo["limit_goodput_bps"]),
               s_(fo.get("restored_after_s"))))
    return "\n".join(lines)


def probe_lines(probe: Optional[Dict[str, Any]]) -> List[str]:
    """The summary's lines of a failover's loss probe (none without)."""
    if not probe:
        return []
    out = ["  loss probe %s <-> %s (UDP %s, %s/s each way)%s%s" % (
        probe["ros"]["ip"], probe["dcm"]["ip"], probe.get("udp_port"),
        probe.get("rate_pps"),
        "" if probe.get("path_crosses_target", True) else
        " (no DCM on the failed spine: its path does not cross it)",
        ": " + probe["error"] if probe.get("error") else "")]
    for key, what in (("ros_to_dcm", "ROS -> DCM"),
                      ("dcm_to_ros", "DCM -> ROS")):
        d = probe.get(key)
        if d:
            out.append(
                "    %s: sent %d, received %d, lost %d (longest run %d); "
                "longest gap %.0f ms, loss window %.0f ms"
                % (what, d["sent"], d["received"], d["lost"],
                   d["longest_loss_run"], d["max_gap_ms"],
                   d["loss_window_ms"]))
    return out
