# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-bench part "incast": utilities/daq-incast's stock, credits and
daqring modes, a few runs and one at a deeper collapse of stock
forwarding; the summary of the runs, the targets, the verdicts, what
bounds them and the summary's section."""

import os
import shlex
from typing import Any, Callable, Dict, List, Optional, Sequence

from .incast_tool import command, run_incast, shown
from .runner import Bench
from .source import rel_top
from .stats import fmt_stat, share_text, summarize

TARGETS = {
    "incast_ideal": "incast: daqring goodput >= 99% of ideal",
    "incast_credits": "incast: daqring goodput >= the credits mode's in "
                      "the same run",
    "incast_drops": "incast: daqring 0 drops anywhere (switch ports, "
                    "af_packet RX rings, daqrings, qdiscs)",
    "incast_timeouts": "incast: daqring 0 TCP timeouts",
    "incast_ratio": "incast: daqring / stock goodput >= 10x",
    "incast_ratio_deep": "incast: daqring / stock goodput >= 10x at a "
                         "deeper collapse",
}


def measure(bench: Bench) -> None:
    """--incast-runs daq-incast runs and, in full runs, one at a deeper
    collapse, into bench.res["incast"]."""
    runs = bench.args.incast_runs or (1 if bench.quick else 3)
    d = os.path.join(bench.out, "incast")
    os.makedirs(d, exist_ok=True)
    extra = shlex.split(bench.args.incast_args or "")
    if bench.quick and "--events" not in extra:
        extra += ["--events", "15"]
    base = command(bench)
    out: Dict[str, Any] = {"runs": 0, "dir": rel_top(d),
                           "command": shown(base + extra),
                           "files": [], "modes": {}}
    bench.res["incast"] = out
    data = []
    for i in range(runs):
        bench.say("incast run %d/%d" % (i + 1, runs))
        r = run_incast(bench, base + extra, d, "run%d" % (i + 1),
                       i == runs - 1)
        if r is None:
            out["error"] = bench.notes[-1]
            break
        data.append(r)
        out["files"].append(rel_top(os.path.join(d, "run%d.json"
                                                 % (i + 1))))
        out["runs"] += 1
    out.update(incast_summary(data))
    # Every run asked for counts, including those that never wrote
    # results (verdicts() fails the targets they leave unmeasured).
    out["asked"] = runs
    if data:
        out["ideal_bps"] = data[0].get("ideal", {}).get("goodput_bps")
        out["ring_rate_fraction"] = data[0].get("config", {}).get(
            "ring_rate_fraction")
        out["congestion_control"] = data[0].get("config", {}).get(
            "congestion_control", "the machine's default")
    deep = shlex.split(bench.args.incast_deep_args or "")
    if deep and not bench.quick and not out.get("error"):
        bench.say("incast deeper collapse: %s" % " ".join(deep))
        r = run_incast(bench, base + extra + deep, d, "deep", True)
        if r is not None:
            out["deep"] = incast_summary([r])
            out["deep"]["command"] = shown(base + extra + deep)
            out["deep"]["ideal_bps"] = r.get("ideal", {}).get(
                "goodput_bps")
        else:
            out["deep"] = {"error": bench.notes[-1], "modes": {},
                           "command": shown(base + extra + deep)}
    out["analysis"] = incast_analysis(out)


def incast_summary(data: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Goodput, ideal ratio, p99, timeouts, drops and PMD share per mode
    over daq-incast runs, and the daqring / stock and daqring / credits
    goodput ratios per run."""
    modes: Dict[str, Dict[str, List[float]]] = {}
    failed: Dict[str, List[str]] = {}
    per_run_ratio = []
    per_run_credits = []
    for d in data:
        by = {}
        for m in d.get("modes", []):
            if m.get("status") != "ok":
                # Counted, never skipped: verdicts() fails a target
                # whose mode failed in any run.
                failed.setdefault(m.get("mode", "?"), []).append(
                    "%s: %s" % (m.get("label", m.get("mode")),
                                m.get("error") or m.get("status")))
                continue
            by[m["mode"]] = m
            x = modes.setdefault(m["mode"], {"goodput_bps": [],
                                             "ideal_ratio": [], "p99_s": [],
                                             "timeouts": [],
                                             "rto_timeouts": [],
                                             "drops": [], "shares": []})
            x["goodput_bps"].append(m["goodput_bps"])
            x["ideal_ratio"].append(m["ideal_ratio"])
            x["p99_s"].append(m["collection_time_s"]["p99"])
            x["timeouts"].append(m["timeouts"])
            x["rto_timeouts"].append(m["tcp"]["rto_timeouts"])
            dr = m.get("drops")
            if dr:
                # Every place a frame can be lost (daq-incast's switch
                # total includes the af_packet RX rings).
                x["drops"].append(dr["switch_total"] + dr["daqring"]
                                  + dr["qdisc"])
            x["shares"].append(m.get("pmd_cpu_share"))
        if "credits" in by and "daqring" in by \
                and by["credits"]["goodput_bps"]:
            per_run_credits.append(by["daqring"]["goodput_bps"]
                                   / by["credits"]["goodput_bps"])
        if "stock" in by and "daqring" in by and by["stock"]["goodput_bps"]:
            per_run_ratio.append(by["daqring"]["goodput_bps"]
                                 / by["stock"]["goodput_bps"])
    out: Dict[str, Any] = {"modes": {}, "asked": len(data)}
    if failed:
        out["failed"] = failed
    for mode, x in modes.items():
        out["modes"][mode] = {k: summarize(v) for k, v in x.items()
                              if k != "shares"}
        out["modes"][mode]["shares"] = x["shares"]
    if per_run_ratio:
        out["ratio"] = summarize(per_run_ratio)
    if per_run_credits:
        out["vs_credits"] = summarize(per_run_credits)
    return out


def inc_asked(inc: Dict[str, Any]) -> int:
    """How many daq-incast runs the incast part (or summary) asked for."""
    return int(inc.get("asked", inc.get("runs", 0)) or 0)


def incast_verdicts(inc: Optional[Dict[str, Any]],
                    add: Callable[..., None]) -> None:
    """The rows of TARGETS (judge_runs()), or why there are none."""
    if inc and (inc.get("modes", {}).get("daqring") or inc_asked(inc)):
        judge_runs(inc, add)
    else:
        note = "not run" if not inc else inc.get("error") or "no daqring"
        for k in ("incast_ideal", "incast_credits", "incast_drops",
                  "incast_timeouts", "incast_ratio", "incast_ratio_deep"):
            add(k, note, None)


def judge_runs(inc: Dict[str, Any], add: Callable[..., None]) -> None:
    """The rows of TARGETS, from runs that were made.  Each counts every
    run that was asked for: a run that failed or is missing (daq-incast
    exited non-zero, a mode ended in error) makes the target FAILED,
    whatever the runs that did finish show."""
    asked = inc_asked(inc)
    modes = inc.get("modes", {})
    failed = inc.get("failed", {})

    def short(*names: str) -> str:
        """'' if every asked run of the modes finished, else why not."""
        why = []
        for name in names:
            m = modes.get(name)
            n = m["ideal_ratio"]["n"] if m else 0
            if n < asked:
                why.append("%s: %d of %d runs failed or missing%s" % (
                    name, asked - n, asked,
                    " (%s)" % "; ".join(failed[name][:3])
                    if failed.get(name) else ""))
        return "; ".join(why)

    def row(key: str, value: str, met: Optional[bool],
            shares: Sequence[Optional[float]], *names: str) -> None:
        why = short(*names)
        if why:
            add(key, "FAILED: %s; finished runs: %s" % (why, value), False,
                shares)
        else:
            add(key, value + " (n=%d)" % asked, met, shares)

    dq = modes.get("daqring")
    if not dq:
        why = short("daqring") or inc.get("error") or "no daqring"
        for k in ("incast_ideal", "incast_credits", "incast_drops",
                  "incast_timeouts", "incast_ratio", "incast_ratio_deep"):
            add(k, "FAILED: " + why, False)
        return
    st = modes.get("stock")
    row("incast_ideal", "%s%% of ideal (%s Mbit/s)"
        % (fmt_stat(_scale(dq["ideal_ratio"], 100)),
           fmt_stat(_scale(dq["goodput_bps"], 1e-6))),
        dq["ideal_ratio"]["median"] >= 0.99, dq["shares"], "daqring")
    cr = modes.get("credits")
    vc = inc.get("vs_credits")
    if cr and vc and vc["median"] is not None:
        row("incast_credits", "daqring / credits goodput %s x "
            "(credits %s%% of ideal)"
            % (fmt_stat(vc, "%.3f"),
               fmt_stat(_scale(cr["ideal_ratio"], 100))),
            vc["median"] >= 1.0, cr["shares"] + dq["shares"], "daqring",
            "credits")
    elif failed.get("credits"):
        add("incast_credits", "FAILED: " + short("credits"), False)
    else:
        add("incast_credits", "credits mode not run", None)
    if dq.get("drops", {}).get("n"):
        row("incast_drops", "%s frames dropped per run"
            % fmt_stat(dq["drops"], "%.0f"),
            dq["drops"]["max"] == 0, dq["shares"], "daqring")
    else:
        add("incast_drops", "no drop counts", None)
    row("incast_timeouts", "%s TCP RTOs per run (%s events >= 200 ms)"
        % (fmt_stat(dq["rto_timeouts"], "%.0f"),
           fmt_stat(dq["timeouts"], "%.0f")),
        dq["rto_timeouts"]["max"] == 0, dq["shares"], "daqring")
    if st and inc.get("ratio") and inc["ratio"]["median"] is not None:
        row("incast_ratio", "%s x (stock %s Mbit/s)"
            % (fmt_stat(inc["ratio"], "%.1f"),
               fmt_stat(_scale(st["goodput_bps"], 1e-6))),
            inc["ratio"]["median"] >= 10, st["shares"] + dq["shares"],
            "daqring", "stock")
    elif failed.get("stock"):
        add("incast_ratio", "FAILED: " + short("stock"), False)
    else:
        add("incast_ratio", "stock mode not run", None)
    dp = inc.get("deep")
    if dp and dp.get("ratio") and dp["ratio"]["median"] is not None \
            and not dp.get("failed"):
        dm = dp["modes"]
        add("incast_ratio_deep", "%s x (stock %s, daqring %s Mbit/s, "
            "%s TCP RTOs; %s)" % (
                fmt_stat(dp["ratio"], "%.1f"),
                fmt_stat(_scale(dm["stock"]["goodput_bps"], 1e-6)),
                fmt_stat(_scale(dm["daqring"]["goodput_bps"], 1e-6)),
                fmt_stat(dm["daqring"]["rto_timeouts"], "%.0f"),
                dp["command"].split(" -q ", 1)[-1]),
            dp["ratio"]["median"] >= 10,
            dm["stock"]["shares"] + dm["daqring"]["shares"])
    elif dp and (dp.get("failed") or dp.get("error")):
        add("incast_ratio_deep", "FAILED: %s" % (dp.get("error") or "; ".join(
            x for v in dp["failed"].values() for x in v)), False)
    else:
        add("incast_ratio_deep", "not run", None)


def _scale(st: Dict[str, Any], f: float) -> Dict[str, Any]:
    out = dict(st)
    for k in ("min", "median", "max"):
        if out.get(k) is not None:
            out[k] = out[k] * f
    out["values"] = [v * f for v in st.get("values", [])]
    return out


def incast_analysis(inc: Dict[str, Any]) -> str:
    """What bounds the incast targets (for the summary)."""
    modes = inc.get("modes", {})
    dq, st = modes.get("daqring"), modes.get("stock")
    if not dq:
        return ""
    parts = []
    frac = inc.get("ring_rate_fraction")
    if frac and frac < 0.99 and dq["ideal_ratio"]["median"] < 0.99:
        parts.append(
            "daq-incast shapes each daqring to %.0f%% of the access link's "
            "frame rate (--ring-rate-fraction), so the daqring goodput "
            "cannot exceed about %.0f%% of the ideal, less each event's "
            "request round trip and first burst; the 99%% target needs a "
            "shaping rate at the link rate, which leaves the DCM port's "
            "buffer no headroom" % (100 * frac, 100 * frac))
    ideal = inc.get("ideal_bps")
    if ideal and st and st["goodput_bps"]["median"]:
        bound = ideal / st["goodput_bps"]["median"]
        if bound < 10:
            parts.append(
                "in this scenario even the ideal goodput is only %.1f x "
                "the stock goodput, so the 10x ratio is out of reach for "
                "any switch; the deeper-collapse run judges it where stock "
                "forwarding loses more" % bound)
    dp = inc.get("deep") or {}
    dst = dp.get("modes", {}).get("stock")
    if dp.get("ideal_bps") and dst and dst["goodput_bps"]["median"]:
        bound = dp["ideal_bps"] / dst["goodput_bps"]["median"]
        if bound < 10:
            parts.append(
                "in the deeper-collapse run the ideal goodput is %.2f x "
                "the stock goodput, so 10x was out of reach there too"
                % bound)
    if not parts:
        return ""
    return "Bounds: " + "; ".join(parts) + "."


def incast_table(modes: Dict[str, Any]) -> List[str]:
    """The per-mode rows of an incast table."""
    L = ["| mode | goodput Mbit/s | of ideal | p99 ms | >= 200 ms events "
         "| TCP RTOs | drops | PMD share |",
         "|---|---|---|---|---|---|---|---|"]
    for mode, d in modes.items():
        drops = d.get("drops") or {}
        L.append("| %s | %s | %s%% | %s | %s | %s | %s | %s |" % (
            mode, fmt_stat(_scale(d["goodput_bps"], 1e-6)),
            fmt_stat(_scale(d["ideal_ratio"], 100)),
            fmt_stat(_scale(d["p99_s"], 1e3), "%.0f"),
            fmt_stat(d["timeouts"], "%.0f"),
            fmt_stat(d["rto_timeouts"], "%.0f"),
            fmt_stat(drops, "%.0f") if drops.get("n") else "n/a",
            share_text(d["shares"])))
    return L


def markdown(inc: Optional[Dict[str, Any]]) -> List[str]:
    """The summary's section (none if the part was not run)."""
    L: List[str] = []
    if inc and inc.get("modes"):
        L.append("## Incast (daq-incast)")
        L.append("")
        L.append("`%s`, %d run(s); JSON and plots in `%s`.%s"
                 % (inc["command"], inc["runs"], inc["dir"],
                    "  TCP congestion control: %s."
                    % inc["congestion_control"]
                    if inc.get("congestion_control") else ""))
        L.append("")
        if inc_asked(inc) > inc["runs"] or inc.get("failed"):
            L.append("Failed: %d of %d runs gave no results; mode runs "
                     "that failed: %s." % (
                         inc_asked(inc) - inc["runs"], inc_asked(inc),
                         "; ".join(x for v in inc.get("failed", {}).values()
                                   for x in v) or "none"))
            L.append("")
        L.extend(incast_table(inc["modes"]))
        L.append("")
        if inc.get("ratio"):
            L.append("daqring / stock goodput: %s x."
                     % fmt_stat(inc["ratio"], "%.1f"))
            L.append("")
        if inc.get("vs_credits"):
            L.append("daqring / credits goodput, run by run: %s x."
                     % fmt_stat(inc["vs_credits"], "%.3f"))
            L.append("")
        dp = inc.get("deep")
        if dp and dp.get("modes"):
            L.append("Deeper collapse, `%s`:" % dp["command"])
            L.append("")
            L.extend(incast_table(dp["modes"]))
            L.append("")
        if inc.get("analysis"):
            L.append(inc["analysis"])
            L.append("")
    elif inc and inc.get("error"):
        L.append("## Incast (daq-incast)")
        L.append("")
        L.append("Not completed: %s" % inc["error"])
        L.append("")
    return L
