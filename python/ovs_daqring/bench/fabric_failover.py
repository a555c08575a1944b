# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at:
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""daq-bench --parts fabric-failover: the fabric's failover targets
(issue 47), under the incast load of `make demo-fabric`, with the loss
probe (100 datagrams/s each way between a ROS host and a DCM whose
path crosses what fails: daq-incast --failover's probe).  Each failure
(--failover-targets: a ROS leaf's uplink, the HLT leaf's uplink, a whole
spine) runs --failover-runs times (10, quick 1).

What each run is judged on, from daq-incast's JSON:
- the direction whose failure its own leaf sees (a leaf's uplink: what
  that leaf sends up, its fast_failover group) loses at most what was
  in flight on the failed link (IN_FLIGHT datagrams of the probe) from
  the moment the leaf's kernel told it that the link was down
  (leaf_notified_after_s, daq-incast's CarrierWatch): what the leaf
  sent before, into a link whose failure the kernel had not announced
  yet (its link watch: tens of milliseconds on the emulator), is lost
  whatever a switch does, and is shown apart ("before notice");
- the direction that needs the planner (what comes down through the
  failed spine; both directions when a spine dies, which only BFD
  tells) is rerouted within PLANNER_MS: the probe's longest run of
  losses, from the send of the last datagram before it to the first
  after it, is at most that long;
- the return home after the hold-down loses nothing (both directions);
- no TCP RTO, no event slower than twice the ideal;
- every frame lost counted where it was lost (sent = delivered +
  counted drops).

Every run of every failure counts: a run that failed (daq-incast exited
without results, the mode or the probe in error) fails the targets it
would have been judged on; an invalid one (the PMD had too little of its
core) is not judged for goodput-like targets only: the loss counts and
the RTOs hold whatever the PMD's share (a loaded machine makes loss
more likely, not less)."""

import datetime
import os
import re
import shlex
from typing import Any, Callable, Dict, List, Optional

from .fabric_incast import FAILOVER_ARGS
from .incast_tool import command, run_incast, shown
from .runner import Bench
from .source import rel_top

FAILOVER_TARGETS = {
    "failover_local": "fabric failover: what a leaf sends up over a failed "
                      "link once told of it loses only what was in flight",
    "failover_planner": "fabric failover: traffic that needs the planner "
                        "rerouted within 100 ms",
    "failover_home": "fabric failover: 0 probe datagrams lost on the "
                     "return home",
    "failover_tcp": "fabric failover: 0 TCP RTOs, no event longer than "
                    "twice the ideal",
    "failover_counted": "fabric failover: every frame lost counted where "
                        "it was lost",
}
# The failures, as daq-incast --failover-target names them: a ROS leaf's
# uplink to spine1, the HLT leaf's (the default of --failover), spine1.
TARGETS = "link:ros-leaf0:up1,link:hlt-leaf:up1,spine:spine1"
# The load: `make demo-fabric`'s (one plane, two spines, 12 ROS, 4 DCMs,
# its access links), daqrings only, the failure 2 s into the run and its
# repair 5 s in: fabric-incast's failover runs.
ARGS = FAILOVER_ARGS
RUNS = 10
# The probe's datagrams in flight on a link at 100/s: at most one.
IN_FLIGHT = 1
PLANNER_MS = 100.0
# No event longer than this many times the ideal.
SLOWEST = 2.0
# The agents' log lines that trace a failover's critical path
# (fabric/agent.py's PATH) and how long after the failure they are read.
PATH_LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z\s*\|"
                       r"(?:[^|]*\|){3}\s*fabric path: (.*)$")
PATH_WINDOW_S = 2.0


def parse_targets(text: str) -> List[str]:
    """--failover-targets: daq-incast --failover-target values,
    comma-separated, at least one, none twice; ValueError says why
    (daq-incast checks each against its fabric)."""
    got = [t.strip() for t in (text or "").split(",") if t.strip()]
    if not got:
        raise ValueError("--failover-targets: at least one, e.g. %s"
                         % TARGETS)
    for t in got:
        if t.split(":", 1)[0] not in ("link", "spine"):
            raise ValueError("--failover-targets: %r: link:SWITCH:PORT or "
                             "spine:NAME" % t)
    dup = sorted({t for t in got if got.count(t) > 1})
    if dup:
        raise ValueError("--failover-targets: %s twice" % ", ".join(dup))
    return got


def measure(bench: Bench) -> None:
    """daq-incast --topology fabric with each --failover-targets failure,
    --failover-runs times each; the rows (failover_row()) per
    failure."""
    runs = bench.args.failover_runs or (1 if bench.quick else RUNS)
    top = os.path.join(bench.out, "fabric-failover")
    base = (command(bench)
            + ["--hugepages", bench.args.hugepages, "--topology", "fabric"]
            + shlex.split(ARGS))
    failures: List[Dict[str, Any]] = []
    bench.res["fabric-failover"] = {"dir": rel_top(top), "runs": runs,
                                    "failures": failures}
    for target in bench.args.failover_targets:
        d = os.path.join(top, target.replace(":", "-"))
        os.makedirs(d, exist_ok=True)
        cmd = base + ["--failover-target", target]
        out: Dict[str, Any] = {"target": target, "dir": rel_top(d),
                               "command": shown(cmd), "rows": []}
        failures.append(out)
        for i in range(runs):
            bench.say("fabric failover of %s: run %d/%d"
                      % (target, i + 1, runs))
            doc = run_incast(bench, cmd, d, "run%d" % (i + 1),
                             i == runs - 1)
            row = failover_row(doc, i + 1)
            if not row.get("error"):
                row["path"] = critical_path(
                    agent_logs(os.path.join(d, "logs-run%d" % (i + 1))),
                    row.get("down_wall"))
            out["rows"].append(row)


def agent_logs(d: str) -> Dict[str, str]:
    """The switch agents' logs daq-incast --log-dir saved in D (NODE-
    agent.log, the agents' own directories): node -> text."""
    out: Dict[str, str] = {}
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return out
    for f in names:
        if f.endswith("-agent.log") and not f.startswith("host-"):
            try:
                with open(os.path.join(d, f), errors="replace") as fh:
                    out[f[:-len("-agent.log")]] = fh.read()
            except OSError:
                pass
    return out


def critical_path(logs: Dict[str, str], down_wall: Optional[float],
                  window: float = PATH_WINDOW_S) -> List[Dict[str, Any]]:
    """The failover's critical path as the agents logged it (LOGS: node
    -> its log): each "fabric path:" line from the failure (DOWN_WALL,
    time.time()) to WINDOW seconds after it, as {"ms" after the
    failure, "node", "step"}, in time order; [] without DOWN_WALL."""
    if down_wall is None:
        return []
    out = []
    for node, text in logs.items():
        for line in text.splitlines():
            m = PATH_LINE.match(line)
            if not m:
                continue
            t = datetime.datetime.strptime(
                m.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(
                    tzinfo=datetime.timezone.utc).timestamp()
            if down_wall - 0.001 <= t <= down_wall + window:
                out.append({"ms": round((t - down_wall) * 1000, 1),
                            "node": node, "step": m.group(2)})
    out.sort(key=lambda e: (e["ms"], e["node"]))
    return out


def _losses(d: Dict[str, Any], down: Optional[float],
            up: Optional[float], notice: Optional[float] = None,
            period: float = 0.01) -> Dict[str, Any]:
    """One probe direction's losses split by when they began: during the
    failure (from DOWN until UP) and after UP (the return home), from
    its loss runs (after_s: the send before each run, the failover's
    clock); loss_ms: the longest loss window of the failure.
    after_notice: of the failure's, those sent at or after NOTICE (the
    failover's clock), each datagram of a run sent PERIOD after the one
    before it; None without NOTICE."""
    failure = home = other = 0
    after_notice = 0
    for r in d.get("loss_runs") or []:
        at = r.get("after_s")
        if at is None or down is None or at < down - 1.0:
            other += r["lost"]
        elif up is None or at < up:
            failure += r["lost"]
            if notice is not None:
                after_notice += sum(1 for k in range(1, r["lost"] + 1)
                                    if at + k * period >= notice)
        else:
            home += r["lost"]
    # The runs listed may be only the first few (probe.LOSS_RUNS): what
    # they leave out counts as lost during the failure (the worse case
    # for every verdict but the return home's, which then cannot be met).
    rest = d.get("lost", 0) - (failure + home + other)
    return {"lost": d.get("lost", 0), "failure": failure + max(0, rest),
            "after_notice": (None if notice is None
                             else after_notice + max(0, rest)),
            "home": home, "other": other, "unlisted": max(0, rest),
            "window_ms": d.get("loss_window_ms"),
            "longest_run": d.get("longest_loss_run")}


def failover_row(doc: Optional[Dict[str, Any]], run: int
                 ) -> Dict[str, Any]:
    """One run (daq-incast's JSON, None: no results) as the verdicts
    judge it: {"run", "error" (why it cannot be judged) or the
    failure's kind and leaf, the probe's losses per direction
    (_losses()), the RTOs, the slowest event against the ideal, the
    balance, the PMD's share and validity}."""
    row: Dict[str, Any] = {"run": run}
    if doc is None:
        row["error"] = "no results"
        return row
    m = next((m for m in doc.get("modes", [])
              if m.get("mode") == "daqring"), None)
    if m is None or m.get("status") != "ok":
        row["error"] = ("no daqring mode" if m is None
                        else m.get("error") or m.get("status"))
        return row
    f = m.get("failover") or {}
    probe = f.get("probe") or {}
    if not f or f.get("error") or probe.get("error") or not probe.get(
            "ros_to_dcm") or not probe.get("dcm_to_ros"):
        row["error"] = (f.get("error") or probe.get("error")
                        or "no failover or probe result")
        return row
    down, up = f.get("down_at_s"), f.get("up_at_s")
    told = f.get("leaf_notified_after_s")
    notice = down + told if down is not None and told is not None else None
    period = 1.0 / (probe.get("rate_pps") or 100)
    ideal = (doc.get("ideal") or {}).get("collection_time_s")
    slowest = (m.get("collection_time_s") or {}).get("max")
    drops = m.get("drops") or {}
    balance = drops.get("balance") or {}
    if f.get("kind") == "link" and f.get("leaf_role") not in ("ros",
                                                              "hlt"):
        # Which direction the leaf's own groups reroute follows from
        # its role, which the run says (not the leaf's name).
        row["error"] = ("the failover result names no role of the failed "
                        "link's leaf (leaf_role: %r)" % f.get("leaf_role"))
        return row
    row.update({
        "kind": f.get("kind"),
        # The leaf at the failed link's end, and its role ("ros",
        # "hlt"; None for a spine).
        "leaf": f.get("leaf"), "leaf_role": f.get("leaf_role"),
        "down_wall": f.get("down_wall"),
        "leaf_notified_after_s": told,
        "ros_to_dcm": _losses(probe["ros_to_dcm"], down, up, notice,
                              period),
        "dcm_to_ros": _losses(probe["dcm_to_ros"], down, up, notice,
                              period),
        "rerouted_after_s": f.get("rerouted_after_s"),
        "back_after_s": f.get("back_after_s"),
        "rtos": (m.get("tcp") or {}).get("rto_timeouts"),
        "probe_recoveries": (m.get("tcp") or {}).get("probe_recoveries"),
        "slowest_ratio": (slowest / ideal if slowest is not None
                          and ideal else None),
        "balanced": balance.get("balanced"),
        "unaccounted": drops.get("unaccounted"),
        "events": m.get("events"),
        "events_wanted": ((doc.get("config") or {}).get("dcms", 0)
                          * (doc.get("config") or {}).get("events", 0)),
        "share": m.get("pmd_cpu_share"), "valid": bool(m.get("valid"))})
    return row


def local_direction(row: Dict[str, Any]) -> Optional[str]:
    """The probe direction that the failed link's own leaf reroutes
    (what it sends up): ROS to DCM for a ROS leaf's uplink, DCM to ROS
    for the HLT leaf's; None for a spine (no leaf sees it at once)."""
    role = row.get("leaf_role")
    if role is None:
        return None
    return "dcm_to_ros" if role == "hlt" else "ros_to_dcm"


def failover_verdicts(res: Optional[Dict[str, Any]],
                      add: Callable[..., None]) -> None:
    """The verdicts over every run of every failure: a target is met
    only if it is in every run it applies to; a run without results
    fails every target; not judged (None) if no run applies."""
    if not res or res.get("error"):
        for k in FAILOVER_TARGETS:
            add(k, "not run" if not res else "FAILED: " + res["error"],
                None if not res else False)
        return
    got: Dict[str, List[str]] = {k: [] for k in FAILOVER_TARGETS}
    bad: Dict[str, bool] = {k: False for k in FAILOVER_TARGETS}
    shares: List[Any] = []

    def judge(key: str, where: str, text: str, ok: bool) -> None:
        got[key].append("%s: %s" % (where, text))
        bad[key] = bad[key] or not ok

    for fail in res.get("failures", []):
        for row in fail.get("rows", []):
            where = "%s run %d" % (fail["target"], row["run"])
            if row.get("error"):
                for k in FAILOVER_TARGETS:
                    judge(k, where, "FAILED (%s)" % row["error"], False)
                continue
            shares.append(row.get("share"))
            local = local_direction(row)
            if local is not None:
                lost = row[local]["failure"]
                after = row[local].get("after_notice")
                told = row.get("leaf_notified_after_s")
                if after is None:
                    judge("failover_local", where, "%d lost %s (the "
                          "leaf's notice not seen)" % (
                              lost, local.replace("_", " ")),
                          lost <= IN_FLIGHT)
                else:
                    judge("failover_local", where, "%d lost %s, %d after "
                          "the leaf was told (%.0f ms after the failure)"
                          % (lost, local.replace("_", " "), after,
                             told * 1000), after <= IN_FLIGHT)
            for d in ("ros_to_dcm", "dcm_to_ros"):
                if d == local:
                    continue
                w = row[d]["window_ms"] or 0.0
                if not row[d]["failure"]:
                    w = 0.0
                judge("failover_planner", where, "%s %.0f ms (%d lost)" % (
                    d.replace("_", " "), w, row[d]["failure"]),
                    w <= PLANNER_MS)
            home = row["ros_to_dcm"]["home"] + row["dcm_to_ros"]["home"]
            judge("failover_home", where, "%d lost" % home, home == 0)
            sr = row.get("slowest_ratio")
            pr = row.get("probe_recoveries")
            judge("failover_tcp", where, "%s RTOs%s, slowest event %s" % (
                row.get("rtos"),
                ", %d loss-probe repairs" % pr if pr else "",
                "?" if sr is None else "%.1fx" % sr),
                row.get("rtos") == 0 and sr is not None and sr <= SLOWEST)
            judge("failover_counted", where, "%s/%s events, %s unaccounted"
                  "%s" % (row.get("events"), row.get("events_wanted"),
                          row.get("unaccounted"),
                          "" if row.get("balanced") else ", NOT BALANCED"),
                  bool(row.get("balanced")) and row.get("unaccounted") == 0
                  and row.get("events") == row.get("events_wanted"))
    for k in FAILOVER_TARGETS:
        if not got[k]:
            add(k, "not judged: no run it applies to", None, shares)
        else:
            add(k, "; ".join(got[k]), not bad[k], shares)


def _cell(v: Any, fmt: str = "%s") -> str:
    return "-" if v is None else fmt % v


def failover_markdown(res: Optional[Dict[str, Any]]) -> List[str]:
    """The fabric-failover section of summary.md: per failure, a row per
    run."""
    if not res:
        return []
    L = ["## Fabric failover (daq-incast --failover-target, loss probe)",
         ""]
    if res.get("error"):
        return L + ["Not completed: %s" % res["error"], ""]
    L.append("Each failure %d times under the incast of `make "
             "demo-fabric` (%s); the probe: 100 datagrams/s each way.  "
             "Lost: during the failure / on the return home; window: the "
             "longest run of losses, from the send before it to the send "
             "after it; told: when the failed link's leaf was told by its "
             "kernel (after the failure), and what its own direction "
             "lost from then on; probe repairs: tail losses that TCP's "
             "loss probes repaired (no RTO, but each at least 200 ms "
             "late when a connection's only segment in flight, as a "
             "DCM's request, was lost)." % (res.get("runs", 0), ARGS))
    L.append("")
    for fail in res.get("failures", []):
        L.append("### %s" % fail["target"])
        L.append("")
        L.append("`%s`" % fail["command"])
        L.append("")
        L.append("| run | ROS->DCM lost | window | DCM->ROS lost | window "
                 "| told | lost since | routes off | RTOs | probe repairs "
                 "| slowest | balanced | PMD |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in fail.get("rows", []):
            if r.get("error"):
                L.append("| %d | FAILED: %s ||||||||||||"
                         % (r["run"], r["error"]))
                continue
            a, b = r["ros_to_dcm"], r["dcm_to_ros"]
            local = local_direction(r)
            told = r.get("leaf_notified_after_s")
            L.append("| %d | %d / %d | %s | %d / %d | %s | %s | %s | %s | "
                     "%s | %s | %s | %s | %s%s |" % (
                         r["run"], a["failure"], a["home"],
                         _cell(a["window_ms"], "%.0f ms"),
                         b["failure"], b["home"],
                         _cell(b["window_ms"], "%.0f ms"),
                         _cell(None if told is None else told * 1000,
                               "%.0f ms"),
                         _cell(r[local].get("after_notice")
                               if local else None),
                         _cell(r.get("rerouted_after_s"), "%.2f s"),
                         _cell(r.get("rtos")),
                         _cell(r.get("probe_recoveries")),
                         _cell(r.get("slowest_ratio"), "%.1fx"),
                         "yes" if r.get("balanced") else "NO",
                         "-" if r.get("share") is None
                         else "%.0f%%" % (100 * r["share"]),
                         "" if r.get("valid") else " (invalid)"))
        L.append("")
        L += path_markdown(fail.get("rows", []))
    return L


def path_markdown(rows: List[Dict[str, Any]]) -> List[str]:
    """The critical path of each run, as the agents logged it
    (critical_path()): one line per step, ms after the failure."""
    L: List[str] = []
    for r in rows:
        if not r.get("path"):
            continue
        L.append("Critical path of run %d (the agents' \"fabric path:\" "
                 "log lines, ms after the failure):" % r["run"])
        L.append("")
        L.append("| ms | node | step |")
        L.append("|---|---|---|")
        for e in r["path"]:
            L.append("| %.0f | %s | %s |" % (e["ms"], e["node"],
                                             e["step"]))
        L.append("")
    return L
