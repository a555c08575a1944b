# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The results of a daq-bench run as a whole: the verdicts against every
part's targets, in the summary's order, what is derived from the samples
computed again, and the Markdown summary (summary.md) with every part's
section."""

from typing import Any, Dict, List, Optional, Sequence

from . import (builds, fairness, hop, incast, lossless, peers, scale,
               scrape, shaping, share, sleep, waiting)
from .fabric_failover import failover_markdown, failover_verdicts
from .fabric_incast import (FABRIC_TARGETS, fabric_markdown,
                            fabric_verdicts)
from .parts import TARGETS
from .stats import LOW_SHARE, low_share, share_text

SCHEMA = "daq-bench/1"


def verdicts(res: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One row per target of the issue: {key, target, value, shares, met
    (True / False / None when not measured), note}."""
    rows: List[Dict[str, Any]] = []

    def add(key: str, value: str, met: Optional[bool],
            shares: Sequence[Optional[float]] = (), note: str = "") -> None:
        rows.append({"key": key, "target": TARGETS[key], "value": value,
                     "met": met, "pmd_share": share_text(shares),
                     "low_share": low_share(shares), "note": note})

    hop.hop_verdicts(res.get("hop"), add)
    scale.scale_verdicts(res.get("scale"), add)
    waiting.waiting_verdicts(res.get("waiting"), add)
    sleep.sleep_verdicts(res.get("sleep"), add)
    scrape.metrics_verdicts(res.get("metrics"), add)
    scale.create_verdicts(res.get("scale"), add)
    shaping.shaping_verdicts(res.get("shaping"), add)
    fairness.fairness_verdicts(res.get("fairness"), add)
    share.share_verdicts(res.get("share"), add)
    builds.builds_verdicts(res.get("builds"), add)
    incast.incast_verdicts(res.get("incast"), add)
    peers.peer_verdicts(res.get("peers"), add)
    lossless.lossless_verdicts(res.get("lossless"), add)

    fab = res.get("fabric-incast")
    if fab and not fab.get("error"):
        fabric_verdicts(fab, add)
    else:
        for k in FABRIC_TARGETS:
            add(k, "not run" if not fab else "FAILED: " + fab["error"],
                None if not fab else False)
    failover_verdicts(res.get("fabric-failover"), add)
    return rows


def markdown(res: Dict[str, Any]) -> str:
    """The short summary (bench-results/summary.md)."""
    m = res["machine"]
    L: List[str] = []
    L.append("# ovs-daqring benchmark results")
    L.append("")
    L.append("`%s` (%s), %s, %s%s." % (
        res["command"], "quick" if res["quick"] else "full",
        res["started"], "%.0f min" % (res["duration_s"] / 60),
        ", interrupted" if res.get("interrupted") else ""))
    L.append("")
    L.append("Machine: %s, %d CPUs (%s), %s GiB RAM, kernel %s, %s; DPDK "
             "%s; hugepages: %s.  PMD thread on CPU(s) %s; everything else "
             "on %s.  Load average at start %s, at end %s."
             % (m["cpu_model"], m["cpus"], m["hypervisor"], m["mem_gib"],
                m["kernel"], m["os"], m["dpdk"], m["hugepages"],
                m["pmd_cpus"], m["other_cpus"], m["loadavg_start"],
                m.get("loadavg_end", "?")))
    if m.get("other_vswitchd"):
        L.append("")
        L.append("Other ovs-vswitchd processes were running: %s."
                 % ", ".join(m["other_vswitchd"]))
    L.append("")
    src = res.get("source") or {}
    if src.get("commit"):
        L.append("Source: commit %s%s%s." % (
            src["commit"], " with uncommitted changes" if src.get("dirty")
            else "", " plus untracked %s" % ", ".join(src["untracked"])
            if src.get("untracked") else ""))
        L.append("")
    L.append("Builds: %s." % "; ".join(
        "%s = %s" % (k, v) for k, v in res.get("binaries", {}).items()))
    L.append("")
    L.append("Numbers are median [min-max] over repeats; ratios are taken "
             "pairwise between neighbouring windows of one run.  "
             "\"cycles/pkt\" is CPU cycles of the PMD thread per packet "
             "forwarded (leaving the switch): its TSC cycles times the "
             "share of its core it got (from /proc/PID/task/TID/schedstat)."
             "  PMD share below %d%% is marked LOW: such samples are "
             "skewed by other threads on the PMD's core." % (100 * LOW_SHARE))
    L.append("")
    L.append("## Targets")
    L.append("")
    L.append("| target | result | PMD share | met |")
    L.append("|---|---|---|---|")
    for v in res["verdicts"]:
        met = {True: "**yes**", False: "**no**", None: "-"}[v["met"]]
        L.append("| %s | %s | %s | %s |"
                 % (v["target"], v["value"], v["pmd_share"], met))
    L.append("")

    L += hop.markdown(res.get("hop"))
    L += scale.markdown(res.get("scale"))
    L += sleep.markdown(res.get("sleep"))
    L += scrape.markdown(res.get("metrics"))
    L += shaping.markdown(res.get("shaping"))
    L += fairness.markdown(res.get("fairness"))
    L += share.markdown(res.get("share"))
    L += builds.markdown(res.get("builds"))
    L += incast.markdown(res.get("incast"))
    if res.get("peers", {}).get("points"):
        L.extend(peers.markdown(res["peers"]))
    if res.get("lossless", {}).get("points"):
        L.extend(lossless.markdown(res["lossless"]))

    fab = res.get("fabric-incast")
    if fab:
        L.extend(fabric_markdown(fab) if not fab.get("error") else [
            "## Fabric incast (daq-incast --topology fabric)", "",
            "Not completed: %s" % fab["error"], ""])
    L.extend(failover_markdown(res.get("fabric-failover")))

    if res.get("notes"):
        L.append("## Notes")
        L.append("")
        for n in res["notes"]:
            L.append("- %s" % n)
        L.append("")
    return "\n".join(L)


def reanalyse(res: Dict[str, Any]) -> None:
    """Recomputes what is derived from the samples (verdicts of the builds
    part, analysis texts), e.g. after this program's judging changed."""
    builds.reanalyse(res.get("builds") or {})
    if res.get("hop", {}).get("sizes"):
        res["hop"]["analysis"] = hop.hop_analysis(res["hop"])
    if res.get("scale", {}).get("counts"):
        res["scale"]["analysis"] = scale.scale_analysis(res["scale"])
    if res.get("incast", {}).get("modes"):
        res["incast"]["analysis"] = incast.incast_analysis(res["incast"])
