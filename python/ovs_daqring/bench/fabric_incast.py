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

"""daq-bench --parts fabric-incast: the incast through the emulated
leaf-spine fabric (daq-incast --topology fabric), the fabric data-plane
issue's targets.  Each run is two daq-incast runs: every mode without a
failure (goodput against the fabric's limit, drops, RTOs), and the
daqring mode with a leaf-spine link down and up again (recovery, every
event complete, every frame delivered or counted once: sent = delivered
+ counted drops).

Only valid runs count: a mode whose PMD had less than 90% of its core is
listed as invalid with its share and kept out of every figure; a run that
failed (daq-incast exited non-zero, a mode ended in error) makes its
targets FAILED.  The runs (measure()), and pure functions of
daq-incast's JSON, tested without root: the summary of the runs, the
verdicts and the summary's section."""

import os
import shlex
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..hosts import ConfigError
from ..incast.units import parse_rate
from .incast_tool import command, run_incast, shown
from .peers import steal_ms
from .runner import Bench
from .source import rel_top

FABRIC_TARGETS = {
    "fabric_limit": "fabric incast: daqring goodput >= 95% of the emulated "
                    "fabric's limit",
    "fabric_drops": "fabric incast: daqring 0 drops anywhere, 0 frames "
                    "unaccounted",
    "fabric_rtos": "fabric incast: daqring 0 TCP RTOs",
    "failover_recovered": "fabric failover: goodput >= 95% of the degraded "
                          "limit within 2 s of a leaf-spine link loss",
    "failover_restored": "fabric failover: goodput >= 95% of the limit "
                         "within 2 s of the link's recovery",
    "failover_complete": "fabric failover: every event completes, every "
                         "frame delivered or counted",
}
FABRIC_LIMIT = 0.95
RECOVERY_S = 2.0
# How the rings of the DCMs that share an HLT host's link are set up in
# both runs, as Documentation/topics/daq-incast.rst advises: bound to the
# link's port, which they share work-conservingly (egress-max-rate), with
# bursts bounded in bytes by the port's buffer.  The thesis's static split
# (each ring the link's rate / its DCMs) idles the link whenever a DCM is
# between events: 71-77% of the limit in three runs on 26 Nov 2026,
# against 96% shared.
SHARING_ARGS = "--ring-sharing shared --max-burst-bytes auto"
# The steady run's and the failover run's daq-incast arguments (--topology
# fabric and the common ones are added; --fabric-incast-args adds more).
STEADY_ARGS = ("--ros 12 --dcms 4 --spines 2 --events 100 "
               "--modes stock,credits,daqring,daqring-unshaped "
               + SHARING_ARGS)
FAILOVER_ARGS = ("--ros 12 --dcms 4 --spines 2 --events 150 "
                 "--modes daqring --failover 2/5 " + SHARING_ARGS)
# The access links' rates the part runs at (--fabric-incast-rates), each
# a point of its own, judged alone and together: the fabric's limit
# scales with them, the emulator's capacity (one core for every switch
# but the HLT leaf, and for every host) does not: a verdict at one rate
# would hide which binds.
RATES = "100mbit,200mbit"
# The same with two planes (daq-incast --planes 2, --spines 2), at half
# the access-link rates (--fabric-incast-two-planes): the same limits of
# the fabric (each HLT host has a link in each plane) as the one-plane
# points, spread over twice the switches.
TWO_PLANE_RATES = "50mbit,100mbit"


def parse_rates(text: str, option: str = "--fabric-incast-rates",
                empty_ok: bool = False) -> List[str]:
    """--fabric-incast-rates (OPTION): daq-incast --link-rate values,
    comma-separated, at least one (none if EMPTY_OK), none twice;
    ValueError says why."""
    rates = [r.strip() for r in (text or "").split(",") if r.strip()]
    if not rates and empty_ok:
        return []
    if not rates:
        raise ValueError("%s: at least one rate, e.g. %s" % (option, RATES))
    seen: Dict[int, str] = {}
    for r in rates:
        try:
            bps = parse_rate(r)
        except ConfigError as e:
            raise ValueError("%s: %s" % (option, e))
        if bps in seen:
            raise ValueError("%s: %s and %s are the same rate"
                             % (option, seen[bps], r))
        seen[bps] = r
    return rates


def measure(bench: Bench) -> None:
    """daq-incast --topology fabric at each of --fabric-incast-rates
    (one plane) and --fabric-incast-two-planes (two), --incast-runs
    times (3, quick 1): every mode without a failure, then the
    daqring mode with a leaf-spine link down and up again
    (fabric_summary()).  One subdirectory per point."""
    runs = bench.args.incast_runs or (1 if bench.quick else 3)
    top = os.path.join(bench.out, "fabric-incast")
    extra = shlex.split(bench.args.fabric_incast_args or "")
    base = command(bench) + ["--hugepages", bench.args.hugepages,
                             "--topology", "fabric"]
    points: List[Dict[str, Any]] = []
    bench.res["fabric-incast"] = {"dir": rel_top(top), "points": points}
    shapes = ([(1, r) for r in bench.args.fabric_incast_rates]
              + [(2, r) for r in bench.args.fabric_incast_two_planes])
    for planes, rate in shapes:
        d = os.path.join(top, rate if planes == 1
                         else "%dplanes-%s" % (planes, rate))
        os.makedirs(d, exist_ok=True)
        rate_args = ["--link-rate", rate, "--planes", str(planes)]
        steady = base + shlex.split(STEADY_ARGS) + rate_args + extra
        fail = base + shlex.split(FAILOVER_ARGS) + rate_args + extra
        out: Dict[str, Any] = {"link_rate": rate, "planes": planes,
                               "dir": rel_top(d),
                               "command": shown(steady),
                               "failover_command": shown(fail)}
        points.append(out)
        rate = point_label(out)
        data: List[Optional[Dict[str, Any]]] = []
        fdata: List[Optional[Dict[str, Any]]] = []
        for i in range(runs):
            bench.say("fabric incast at %s: run %d/%d"
                      % (rate, i + 1, runs))
            data.append(run_incast(bench, steady, d, "run%d" % (i + 1),
                                   i == runs - 1))
            bench.say("fabric failover at %s: run %d/%d"
                      % (rate, i + 1, runs))
            fdata.append(run_incast(bench, fail, d,
                                    "failover%d" % (i + 1),
                                    i == runs - 1))
        out.update(fabric_summary(data, fdata))


def _lost(m: Dict[str, Any]) -> int:
    """Frames a mode lost anywhere (counted drops and unaccounted)."""
    d = m.get("drops") or {}
    b = d.get("balance")
    if b:
        # Every frame the hosts sent and did not receive.
        return int(b["sent"] - b["delivered"])
    # (switch_total has the DPDK ports', the af_packet rings' and the
    # switches' without DPDK; a tbf's refusals are retried by DPDK.)
    return int(sum(d.get(k, 0) or 0 for k in (
        "switch_total", "daqring", "kernel_links", "unaccounted")))


def _stat(xs: Sequence[float]) -> Dict[str, Any]:
    xs = [float(x) for x in xs if x is not None]
    if not xs:
        return {"n": 0, "min": None, "median": None, "max": None}
    s = sorted(xs)
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return {"n": n, "min": s[0], "median": med, "max": s[-1]}


def fabric_summary(steady: Sequence[Optional[Dict[str, Any]]],
                   failover: Sequence[Optional[Dict[str, Any]]]
                   ) -> Dict[str, Any]:
    """Per mode, over the valid modes of the steady runs: the goodput as
    a share of the limit, lost frames, RTOs, p50/p99, and every run's PMD
    share; the invalid and failed ones listed.  The failover runs' daqring
    mode likewise.  None in a list: a run without results (failed)."""
    out: Dict[str, Any] = {"asked": len(steady), "modes": {},
                           "invalid": [], "failed": [], "runs": []}
    for i, doc in enumerate(steady):
        if doc is None:
            out["failed"].append("run %d: no results" % (i + 1))
            continue
        out["runs"].append({"limit": doc.get("fabric", {}).get("limit"),
                            "congestion_control": doc.get("config", {}).get(
                                "congestion_control")})
        for m in doc.get("modes", []):
            name = m.get("mode", "?")
            if m.get("status") != "ok":
                out["failed"].append("run %d %s: %s" % (
                    i + 1, name, m.get("error") or m.get("status")))
                continue
            share = m.get("pmd_cpu_share")
            x = out["modes"].setdefault(name, {
                "limit_ratio": [], "lost": [], "rtos": [], "p50_s": [],
                "p99_s": [], "shares": [], "valid_runs": [],
                "cpu_busy": [], "steal_ms": []})
            x["shares"].append(share)
            # How busy each CPU was (the PMD's, and the one every other
            # switch, the hosts and the agents share: the emulator's).
            x["cpu_busy"].append((m.get("cpu") or {}).get(
                "per_cpu_busy_share"))
            # Steal time: it stalls the PMD and the emulated links, and
            # the PMD's share does not show it.
            x["steal_ms"].append(steal_ms(m))
            if not m.get("valid"):
                out["invalid"].append("run %d %s: %s" % (
                    i + 1, name, m.get("invalid_reason", "invalid")))
                continue
            x["valid_runs"].append(i + 1)
            x["limit_ratio"].append(m.get("limit_ratio",
                                          m.get("ideal_ratio")))
            x["lost"].append(_lost(m))
            x["rtos"].append(m.get("tcp", {}).get("rto_timeouts"))
            ct = m.get("collection_time_s", {})
            x["p50_s"].append(ct.get("p50"))
            x["p99_s"].append(ct.get("p99"))
    for x in out["modes"].values():
        for k in ("limit_ratio", "lost", "rtos", "p50_s", "p99_s"):
            x[k] = _stat(x[k])
    fo: Dict[str, Any] = {"asked": len(failover), "runs": [],
                          "invalid": [], "failed": []}
    for i, doc in enumerate(failover):
        if doc is None:
            fo["failed"].append("run %d: no results" % (i + 1))
            continue
        m = next((m for m in doc.get("modes", [])
                  if m.get("mode") == "daqring"), None)
        if m is None or m.get("status") != "ok" or not m.get("failover"):
            fo["failed"].append("run %d: %s" % (
                i + 1, "no daqring mode" if m is None
                else m.get("error") or "no failover result"))
            continue
        f = m["failover"]
        row = {"run": i + 1, "share": m.get("pmd_cpu_share"),
               "recovered_after_s": f.get("recovered_after_s"),
               "restored_after_s": f.get("restored_after_s"),
               "rerouted_after_s": f.get("rerouted_after_s"),
               "back_after_s": f.get("back_after_s"),
               "events": m.get("events"),
               "events_wanted": (doc.get("config", {}).get("dcms", 0)
                                 * doc.get("config", {}).get("events", 0)),
               "unaccounted": (m.get("drops") or {}).get("unaccounted"),
               # sent = delivered + counted drops (None: an older run).
               "balanced": ((m.get("drops") or {}).get("balance")
                            or {}).get("balanced"),
               "lost_counted": _lost(m)}
        if not m.get("valid"):
            fo["invalid"].append("run %d: %s" % (
                i + 1, m.get("invalid_reason", "invalid")))
            row["valid"] = False
        else:
            row["valid"] = True
        fo["runs"].append(row)
    out["failover"] = fo
    return out


def _pct(st: Dict[str, Any]) -> str:
    if not st.get("n"):
        return "-"
    if st["min"] == st["max"]:
        return "%.1f%%" % (100 * st["median"])
    return "%.1f%% [%.1f-%.1f]" % (100 * st["median"], 100 * st["min"],
                                   100 * st["max"])


def _num(st: Dict[str, Any], fmt: str = "%.0f") -> str:
    if not st.get("n"):
        return "-"
    if st["min"] == st["max"]:
        return fmt % st["median"]
    return "%s [%s-%s]" % (fmt % st["median"], fmt % st["min"],
                           fmt % st["max"])


def fabric_verdicts(fab: Dict[str, Any],
                    add: Callable[..., None]) -> None:
    """The fabric rows of daq-bench's verdicts.  With rate points
    (fab["points"]), each target is judged at every point and met only
    if it is at all of them: FAILED (False) if it failed or was missed
    at one, not judged (None) if one had no valid run and none missed
    it; the value names every point's.  Results of one point only (no
    "points"), as daq-bench wrote them before the rate points, are
    judged as that point."""
    points = fab.get("points")
    if points is None:
        _point_verdicts(fab, add)
        return
    got: Dict[str, List[Any]] = {}

    def collect(key: str, value: str, ok: Optional[bool],
                shares: Optional[List[Any]] = None) -> None:
        got.setdefault(key, []).append((value, ok, shares or []))

    for pt in points:
        before = {k: len(v) for k, v in got.items()}
        if pt.get("error"):
            for k in FABRIC_TARGETS:
                collect(k, "FAILED: %s" % pt["error"], False)
        else:
            _point_verdicts(pt, collect)
        for k in FABRIC_TARGETS:
            if len(got.get(k, [])) == before.get(k, 0):
                collect(k, "not judged", None)
    for k in FABRIC_TARGETS:
        rows = got.get(k, [])
        oks = [ok for _, ok, _ in rows]
        ok = (False if False in oks or not rows
              else None if None in oks else True)
        value = "; ".join("at %s: %s" % (point_label(pt), v)
                          for pt, (v, _, _) in zip(points, rows))
        add(k, value or "no rate point", ok,
            [x for _, _, sh in rows for x in sh])


def _point_verdicts(fab: Dict[str, Any],
                    add: Callable[..., None]) -> None:
    """fabric_verdicts() of one rate point.  A target is judged on
    valid runs only, and only if every asked run finished: a failed run
    makes it FAILED; with no valid run it is not judged (None), saying
    why."""
    asked = fab.get("asked", 0)
    dq = fab.get("modes", {}).get("daqring")
    failed = [f for f in fab.get("failed", [])
              if " daqring:" in f or "no results" in f]
    shares = dq["shares"] if dq else []

    def judge(key: str, value: str, ok: Optional[bool]) -> None:
        if failed:
            add(key, "FAILED: %s; valid runs: %s" % (
                "; ".join(failed[:3]), value), False, shares)
        elif not dq or not dq["limit_ratio"]["n"]:
            add(key, "not judged: no valid run of %d (%s)" % (
                asked, "; ".join(fab.get("invalid", [])[:3]) or
                "no daqring mode"), None, shares)
        else:
            n = dq["limit_ratio"]["n"]
            add(key, "%s (valid runs %d of %d)" % (value, n, asked), ok,
                shares)

    if dq:
        judge("fabric_limit", "%s of the limit" % _pct(dq["limit_ratio"]),
              dq["limit_ratio"]["n"] > 0
              and dq["limit_ratio"]["min"] >= FABRIC_LIMIT)
        judge("fabric_drops", "%s frames lost per run"
              % _num(dq["lost"]), dq["lost"]["n"] > 0
              and dq["lost"]["max"] == 0)
        judge("fabric_rtos", "%s RTOs per run" % _num(dq["rtos"]),
              dq["rtos"]["n"] > 0 and dq["rtos"]["max"] == 0)
    else:
        for k in ("fabric_limit", "fabric_drops", "fabric_rtos"):
            judge(k, "no daqring mode", False)
    fo = fab.get("failover", {})
    valid = [r for r in fo.get("runs", []) if r["valid"]]
    fshares = [r["share"] for r in fo.get("runs", [])]

    def fjudge(key: str, value: str, ok: bool) -> None:
        if fo.get("failed"):
            add(key, "FAILED: %s; valid runs: %s" % (
                "; ".join(fo["failed"][:3]), value), False, fshares)
        elif not valid:
            add(key, "not judged: no valid run of %d (%s)" % (
                fo.get("asked", 0), "; ".join(fo.get("invalid", [])[:3])
                or "not run"), None, fshares)
        else:
            add(key, "%s (valid runs %d of %d)" % (
                value, len(valid), fo.get("asked", 0)), ok, fshares)

    def secs(k: str) -> str:
        return ", ".join("never" if r[k] is None else "%.2f s" % r[k]
                         for r in valid)
    fjudge("failover_recovered", secs("recovered_after_s"),
           all(r["recovered_after_s"] is not None
               and r["recovered_after_s"] <= RECOVERY_S for r in valid))
    fjudge("failover_restored", secs("restored_after_s"),
           all(r["restored_after_s"] is not None
               and r["restored_after_s"] <= RECOVERY_S for r in valid))
    # A count twice over hides a frame lost uncounted: complete only if
    # the account balances (sent = delivered + counted drops).
    fjudge("failover_complete", ", ".join(
        "%s/%s events, %s unaccounted%s" % (
            r["events"], r["events_wanted"], r["unaccounted"],
            ", NOT BALANCED" if r.get("balanced") is False else "")
        for r in valid),
        all(r["events"] == r["events_wanted"] and r["unaccounted"] == 0
            and r.get("balanced") is not False for r in valid))


def point_label(pt: Dict[str, Any]) -> str:
    """A point's name: its access-link rate, and its planes if more than
    one ("2 planes x 50mbit")."""
    rate = pt.get("link_rate", "?")
    planes = pt.get("planes", 1)
    return rate if planes == 1 else "%d planes x %s" % (planes, rate)


def fabric_markdown(fab: Dict[str, Any]) -> List[str]:
    """The fabric section of summary.md: one subsection per rate
    point."""
    L = ["## Fabric incast (daq-incast --topology fabric)", ""]
    points = fab.get("points")
    if points is None:
        return L + _point_markdown(fab)
    L.append("At %d points (access-link rates, one plane unless said): "
             "%s.  Every target is judged at each, and met only if it is "
             "at all of them (verdicts)."
             % (len(points), ", ".join(point_label(pt) for pt in points)))
    L.append("")
    for pt in points:
        L.append("### At %s" % point_label(pt))
        L.append("")
        if pt.get("error"):
            L += ["Not completed: %s" % pt["error"], ""]
        else:
            L += _point_markdown(pt)
    return L


def _point_markdown(fab: Dict[str, Any]) -> List[str]:
    """fabric_markdown() of one rate point."""
    L = ["`%s` and, for the failover, `%s`; %d run(s) each; JSON in "
         "`%s`.  Figures from valid runs only (the PMD had at least "
         "90%% of its core); the PMD share of every run is listed."
         % (fab.get("command", "?"), fab.get("failover_command", "?"),
            fab.get("asked", 0), fab.get("dir", "?"))]
    L.append("")
    lim = next((r["limit"] for r in fab.get("runs", []) if r.get("limit")),
               None)
    if lim:
        i = lim.get("inputs", {})
        L.append("Limit (thesis 6.2.2): %s; N_P %s, N_S %s, N_H %s, N_R %s,"
                 " b_H %s bit/s: goodput limit %.1f Mbit/s (bound by %s)."
                 % (lim.get("formula"), i.get("N_P"), i.get("N_S"),
                    i.get("N_H"), i.get("N_R"), i.get("b_H_bps"),
                    lim.get("goodput_bps", 0) / 1e6, lim.get("bound_by")))
        L.append("")
    L.append("| mode | of the limit | lost frames | RTOs | p50 / p99 ms | "
             "PMD share per run | CPUs busy per run | steal ms per run |")
    L.append("|---|---|---|---|---|---|---|---|")
    for name, x in sorted(fab.get("modes", {}).items()):
        L.append("| %s | %s | %s | %s | %s / %s | %s | %s | %s |" % (
            name, _pct(x["limit_ratio"]), _num(x["lost"]), _num(x["rtos"]),
            _num(_ms(x["p50_s"])), _num(_ms(x["p99_s"])),
            ", ".join("-" if s is None else "%.0f%%" % (100 * s)
                      for s in x["shares"]),
            ", ".join(_busy(b) for b in x.get("cpu_busy", [])),
            ", ".join("%.0f" % v for v in x.get("steal_ms", [])) or "-"))
    L.append("")
    for what in ("invalid", "failed"):
        if fab.get(what):
            L.append("%s: %s." % (what.capitalize(), "; ".join(fab[what])))
            L.append("")
    fo = fab.get("failover", {})
    if fo.get("runs") or fo.get("failed"):
        L.append("Failover (daqring mode): " + "; ".join(
            "run %d%s: recovered %s, restored %s, rerouted %s, back %s "
            "after the recovery, %s/%s events, %s unaccounted, PMD %s" % (
                r["run"], "" if r["valid"] else " (INVALID)",
                _s(r["recovered_after_s"]), _s(r["restored_after_s"]),
                _s(r["rerouted_after_s"]), _s(r["back_after_s"]),
                r["events"], r["events_wanted"], r["unaccounted"],
                "-" if r["share"] is None else "%.0f%%" % (100 * r["share"]))
            for r in fo.get("runs", [])) + ".")
        if fo.get("failed"):
            L.append("Failed: %s." % "; ".join(fo["failed"]))
        L.append("")
    return L


def _busy(b: Optional[Dict[str, float]]) -> str:
    """A run's busy share of each CPU: "99/100%" (cpu0/cpu1...)."""
    if not b:
        return "-"
    return "%s%%" % "/".join("%.0f" % (100 * b[k]) for k in sorted(b))


def _s(v: Optional[float]) -> str:
    return "never" if v is None else "%.2f s" % v


def _ms(st: Dict[str, Any]) -> Dict[str, Any]:
    return {k: (v * 1000 if isinstance(v, float) and k != "n" else v)
            for k, v in st.items()}
