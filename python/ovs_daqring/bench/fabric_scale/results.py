# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The results of daq-bench --fabric: its targets, the verdicts (every
run asked for counts) and the Markdown summary (fabric.md)."""

from typing import Any, Dict, List, Optional

from .cpu import cpu_text

SCHEMA = "daq-bench-fabric/1"
SCENARIOS = ("empty", "one_dcm", "failure")
# Targets of the issue (seconds, the slowest node of a run).
TARGETS = {
    "empty": ("from an empty fabric: every node converged <= 60 s", 60.0),
    "one_dcm": ("a one-DCM change: every node converged <= 2 s", 2.0),
    "failure": ("a link failure: the last switch reprogrammed <= 1 s", 1.0),
}


def verdicts(res: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One row per target: every run asked for counts; a run that failed
    or did not get to the scenario is FAILED, never left out."""
    out = []
    asked = res["config"]["runs"]
    runs = res["runs"]
    for sc in SCENARIOS:
        text, limit = TARGETS[sc]
        maxes: List[float] = []
        failed: List[str] = []
        for k in range(1, asked + 1):
            r = next((x for x in runs if x["run"] == k), None)
            s = (r or {}).get("scenarios", {}).get(sc)
            if r is None:
                failed.append("run %d: not run" % k)
            elif s is None:
                failed.append("run %d: not reached (%s)"
                              % (k, r.get("error") or "an earlier "
                                 "scenario failed"))
            elif "error" in s:
                failed.append("run %d: %s" % (k, s["error"][:300]))
            elif s["stats"]["max"] is None:
                failed.append("run %d: no node changed" % k)
            else:
                maxes.append(s["stats"]["max"])
        if failed:
            met: Optional[bool] = False
            value = "%d of %d runs FAILED (%s)" % (
                len(failed), asked, "; ".join(failed))
            if maxes:
                value += "; the others: max %s s" % ", ".join(
                    "%.3f" % m for m in maxes)
        else:
            met = all(m <= limit for m in maxes)
            value = "max over nodes %s s in %d run%s" % (
                ", ".join("%.3f" % m for m in maxes), asked,
                "s" if asked != 1 else "")
        out.append({"key": sc, "target": text, "limit_s": limit,
                    "value": value, "met": met,
                    "met_text": "FAILED" if failed else
                    ("MET" if met else "NOT")})
    return out


def _f(v: Optional[float]) -> str:
    return "-" if v is None else "%.3f" % v


def markdown(res: Dict[str, Any]) -> str:
    m = res["machine"]
    lines = [
        "# ovs-daqring fabric scale results", "",
        "`%s`, %s, %.0f s." % (res["command"], res["started"],
                               res["duration_s"]), "",
        "Machine: %s, %d CPUs (%s), %s GiB RAM, kernel %s, %s.  PMD threads "
        "and the bench's observer (its flow monitors and the loop that "
        "times them) on CPU(s) %s; everything else on %s.  Load average "
        "at start %s, at end %s." % (
            m["cpu_model"], m["cpus"], m["hypervisor"], m["mem_gib"],
            m["kernel"], m["os"], m["pmd_cpus"], m["other_cpus"],
            m["loadavg_start"], m.get("loadavg_end", "?")), "",
        "Source: commit %s%s." % (res["source"].get("commit"),
                                  " with uncommitted changes"
                                  if res["source"].get("dirty") else ""),
        "",
        "Fabric: %s.  A 3-member clustered fabric database (election timer "
        "%d ms); per switch one ovsdb-server, one ovs-vswitchd and one "
        "ovs-daqfabric-agent (--interval %g s; %d planner candidates).  "
        "Spines and ROS leaves: no DPDK (dummy datapath and ports); HLT "
        "leaves: DPDK --no-huge --legacy-mem -m %d, dummy ports, idle PMDs "
        "sleeping." % (res["shape_text"], res["config"]["election_timer_ms"],
                       res["config"]["agent_interval_s"],
                       res["config"]["planners"],
                       res["config"]["dpdk_mem_mb"]), "",
        "Converged: every agent reports the generation and every switch's "
        "daqrings (its OVSDB), flows and groups (ovs-ofctl) match the plan "
        "in the fabric database.  A node's time: from the trigger to the "
        "later of its agent's report and the last change of its flows "
        "(flow monitor); for a link failure, to the last change of its "
        "flows (nodes whose slice did not change have none).", "",
        "## Targets", "", "| target | result | met |", "|---|---|---|"]
    for v in res["verdicts"]:
        lines.append("| %s | %s | **%s** |" % (
            v["target"], v["value"], {"MET": "yes", "NOT": "no",
                                      "FAILED": "FAILED"}[v["met_text"]]))
    for r in res["runs"]:
        lines += ["", "## Run %d" % r["run"], ""]
        if r.get("error"):
            lines.append("FAILED: %s" % r["error"])
        if "setup_s" in r:
            lines.append("Set-up (database, switches, agents): %.0f s."
                         % r["setup_s"])
        if r.get("rest_cpu"):
            lines += ["", "At rest, once converged from empty: %s."
                      % cpu_text(r["rest_cpu"])]
        for sc in SCENARIOS:
            s = r["scenarios"].get(sc)
            if s is None:
                continue
            lines += ["", "### %s" % TARGETS[sc][0].split(":")[0], ""]
            if "error" in s:
                lines.append("FAILED: %s" % s["error"])
                continue
            st = s["stats"]
            extra = ""
            if sc == "failure":
                extra = ("; link %s; %d DCMs moved; reprogrammed: %s"
                         % (s["link"], s["moved"],
                            ", ".join(s["reprogrammed"]) or "none"))
            elif s.get("rows"):
                from ...fabric.db import rows_text
                extra = "; written: " + rows_text(s["rows"])
            lines.append("Commit %.3f s; planner %s s; over %d nodes: max "
                         "%s s, p50 %s s%s." % (s["commit_s"],
                                                _f(s["plan_s"]), st["n"],
                                                _f(st["max"]),
                                                _f(st["p50"]), extra))
            if s.get("cpu"):
                lines += ["", cpu_text(s["cpu"]) + "."]
            lines += ["", "| node | role | report s | flows s | converged "
                      "s |", "|---|---|---|---|---|"]
            for n, v in sorted(s["nodes"].items()):
                lines.append("| %s | %s | %s | %s | %s |" % (
                    n, v["role"], _f(v["report_s"]), _f(v["flows_s"]),
                    _f(v["converged_s"])))
    if res["notes"]:
        lines += ["", "Notes:", ""] + ["- " + n for n in res["notes"]]
    return "\n".join(lines) + "\n"
