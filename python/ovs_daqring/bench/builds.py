# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-bench part "builds": direct forwarding (and through a daqring)
in the builds compared -- stock Debian ovs-vswitchd-dpdk, the unpatched
base, patched (-O2), -O3 -- one switch per build and repeat; the
regression guard and the optimisation verdicts, the target and the
summary's section."""

import os
import statistics
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..process import read_text
from .parse import parse_configure_cflags
from .runner import Bench
from .stats import (LOW_SHARE, fmt_stat, judged_text, ratios, share_text,
                    spread, summarize)
from .switch import Build, opt_level

TARGETS = {
    "regression": "patched >= stock within noise (direct forwarding)",
}


def measure(bench: Bench) -> None:
    """Every usable build, one switch per build and repeat in
    alternating order, direct and through a daqring; the verdicts, into
    bench.res["builds"]."""
    builds: List[Build] = []
    out: Dict[str, Any] = {"runs": [], "orders": [], "per_build": {}}
    bench.res["builds"] = out
    if bench.stock is not None:
        err = bench.stock.check()
        if err:
            out["regression_note"] = "stock build unusable: %s" % err
            bench.note(out["regression_note"])
        else:
            builds.append(bench.stock)
    else:
        out["regression_note"] = "skipped (--stock-vswitchd none)"
    if bench.base is not None:
        err = bench.base.check()
        if err:
            out["base_note"] = "base build unusable: %s" % err
            bench.note(out["base_note"])
        else:
            builds.append(bench.base)
    else:
        out["base_note"] = (bench.args.base_note
                            or "unpatched same-flags build not given")
    builds.append(bench.patched)
    if bench.variant is not None:
        err = bench.variant.check()
        if err:
            out["opt_note"] = "variant build unusable: %s" % err
            bench.note(out["opt_note"])
        else:
            builds.append(bench.variant)
    else:
        out["opt_note"] = bench.args.o3_note or "-O3 build not given"
    if len(builds) < 2:
        bench.note("builds: only one build, nothing to compare")
        return
    runs: Dict[str, List[Dict[str, Any]]] = {b.label: [] for b in builds}
    for r in range(bench.repeats):
        order = builds if r % 2 == 0 else builds[::-1]
        out["orders"].append([b.label for b in order])
        for b in order:
            sw = bench.switch(b)
            try:
                bench.direct_topology(sw)
                bench.settle()
                rec = {"build": b.label, "repeat": r}
                rec["direct"] = bench.mode_window(sw, "direct")
                if b.daqring:
                    bench.set_mode(sw, "daqring")
                    rec["daqring"] = bench.mode_window(sw, "daqring")
            finally:
                sw.stop()
            runs[b.label].append(rec)
            out["runs"].append(rec)
            bench.say("builds %s: direct %.1f%s cycles/pkt, PMD share "
                      "%.0f%%" % (b.label, rec["direct"]["cycles"],
                                  ", daqring %.1f" %
                                  rec["daqring"]["cycles"]
                                  if "daqring" in rec else "",
                                  100 * rec["direct"]["pmd_share"]))
    for label, recs in runs.items():
        d: Dict[str, Any] = {
            "direct": summarize([x["direct"]["cycles"] for x in recs]),
            "shares": [x[k]["pmd_share"] for x in recs
                       for k in ("direct", "daqring") if k in x]}
        if all("daqring" in x for x in recs):
            d["daqring"] = summarize([x["daqring"]["cycles"]
                                      for x in recs])
        out["per_build"][label] = d
    if "stock" in runs:
        out["regression"] = regression_verdict(runs["stock"],
                                               runs["patched"])
    if "base" in runs:
        out["patch_cost"] = regression_verdict(runs["base"],
                                               runs["patched"])
    if "O3" in runs:
        assert bench.variant is not None
        out["opt"] = opt_verdict(
            runs["patched"], runs["O3"],
            opt_level(parse_configure_cflags(read_text(os.path.join(
                bench.args.ovs_build, "config.log")))),
            opt_level(parse_configure_cflags(read_text(os.path.join(
                bench.args.o3_build, "config.log")))))


def clean_pairs(a: Sequence[Dict[str, Any]], b: Sequence[Dict[str, Any]],
                keys: Sequence[str], least: int = 3) -> Tuple[List[int], bool]:
    """Indices of the repeats to judge on: those whose windows (keys of
    both records) all had a PMD share >= LOW_SHARE, if there are at least
    `least` of them; otherwise all.  Returns (indices, clean)."""
    n = min(len(a), len(b))
    good = [i for i in range(n)
            if all((r[i].get(k) or {}).get("pmd_share", 0) >= LOW_SHARE
                   for r in (a, b) for k in keys if k in r[i])]
    if len(good) >= least:
        return good, True
    return list(range(n)), False


def regression_verdict(stock: Sequence[Dict[str, Any]],
                       patched: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Patched >= stock within noise, on direct forwarding.  stock and
    patched are per-repeat records {"direct": {"cycles", "pmd_share"}}.
    Judged on the repeats whose PMD shares were all >= LOW_SHARE (if there
    are 3 or more, else on all): the median pairwise ratio of cycles/packet
    patched / stock must be at most 1 + noise, noise being the larger of
    2% and the spread (max/min - 1) of either side's judged repeats."""
    idx, clean = clean_pairs(stock, patched, ["direct"])
    sc = [stock[i]["direct"]["cycles"] for i in idx]
    pc = [patched[i]["direct"]["cycles"] for i in idx]
    r = summarize(ratios(pc, sc))
    noise = max(0.02, spread(sc), spread(pc))
    met = r["median"] is not None and r["median"] <= 1 + noise
    slower = sum(x > 1 for x in r["values"])
    # Sign test: every pair slower (or faster) has probability 2 x 0.5^n
    # if the two builds were the same.
    systematic = (len(r["values"]) >= 4
                  and slower in (0, len(r["values"])))
    if r["median"] is None:
        verdict = "not measured"
    elif r["median"] < 1 - noise:
        verdict = "patched is faster than stock"
    elif met:
        verdict = "patched is as fast as stock within noise"
        if systematic:
            verdict += (", but %s in all %d pairs (sign test p = %.2f): a "
                        "systematic %+.1f%% below the noise threshold" % (
                            "slower" if slower else "faster",
                            len(r["values"]),
                            2 * 0.5 ** len(r["values"]),
                            100 * (r["median"] - 1)))
    else:
        verdict = "patched is slower than stock"
    return {"ratio": r, "stock": summarize(sc), "patched": summarize(pc),
            "noise": noise, "met": met, "verdict": verdict,
            "pairs_slower": slower, "systematic": systematic,
            "repeats_judged": len(idx), "clean": clean,
            "shares": [x[k]["pmd_share"] for recs in (stock, patched)
                       for i, x in enumerate(recs) if i in idx
                       for k in ("direct",)]}


def opt_verdict(default: Sequence[Dict[str, Any]],
                variant: Sequence[Dict[str, Any]], dlabel: str,
                vlabel: str) -> Dict[str, Any]:
    """Does the variant build (e.g. -O3) need fewer cycles per packet,
    direct and through a daqring, beyond the noise?  Same judging as
    regression_verdict()."""
    idx, clean = clean_pairs(default, variant, ["direct", "daqring"])
    dd = [default[i]["direct"]["cycles"] for i in idx]
    vd = [variant[i]["direct"]["cycles"] for i in idx]
    rd = ratios(vd, dd)
    rq = ratios([variant[i]["daqring"]["cycles"] for i in idx],
                [default[i]["daqring"]["cycles"] for i in idx])
    noise = max(0.02, spread(dd), spread(vd))
    md = statistics.median(rd) if rd else None
    mq = statistics.median(rq) if rq else None
    if md is None or mq is None:
        verdict = "not measured"
    elif md < 1 - noise and mq < 1 - noise:
        verdict = "%s wins (fewer cycles/packet beyond noise %.1f%%)" % (
            vlabel, 100 * noise)
    elif md > 1 + noise and mq > 1 + noise:
        verdict = "%s wins (%s costs more beyond noise %.1f%%)" % (
            dlabel, vlabel, 100 * noise)
    else:
        verdict = ("no difference beyond noise (%.1f%%): %s does not win"
                   % (100 * noise, vlabel))
        leans = []
        for what, rs, m in (("direct", rd, md), ("through daqring", rq, mq)):
            fewer = sum(x < 1 for x in rs)
            leans.append("%+.1f%% %s (%d of %d pairs fewer cycles)"
                         % (100 * (m - 1), what, fewer, len(rs)))
        verdict += "; it leans: %s" % ", ".join(leans)
    return {"default": dlabel, "variant": vlabel,
            "ratio_direct": summarize(rd), "ratio_daqring": summarize(rq),
            "noise": noise, "verdict": verdict, "repeats_judged": len(idx),
            "clean": clean}


def reanalyse(bu: Dict[str, Any]) -> None:
    """Judges the runs of results 'bu' again (regression_verdict(),
    opt_verdict()), e.g. after this program's judging changed."""
    runs: Dict[str, List[Dict[str, Any]]] = {}
    for rec in bu.get("runs", []):
        if isinstance(rec, dict) and "build" in rec:
            runs.setdefault(rec["build"], []).append(rec)
    if "stock" in runs and "patched" in runs:
        bu["regression"] = regression_verdict(runs["stock"], runs["patched"])
    if "base" in runs and "patched" in runs:
        bu["patch_cost"] = regression_verdict(runs["base"], runs["patched"])
    if "O3" in runs and "patched" in runs and bu.get("opt"):
        bu["opt"] = opt_verdict(runs["patched"], runs["O3"],
                                bu["opt"]["default"], bu["opt"]["variant"])


def builds_verdicts(bu: Optional[Dict[str, Any]],
                    add: Callable[..., None]) -> None:
    """The row of TARGETS."""
    reg = (bu or {}).get("regression")
    if reg:
        add("regression", "patched/stock %s x (stock %s, patched %s "
            "cycles/pkt; noise %.1f%%)%s"
            % (fmt_stat(reg["ratio"], "%.3f"),
               fmt_stat(reg["stock"]), fmt_stat(reg["patched"]),
               100 * reg["noise"],
               "; systematically %s: in all %d pairs" % (
                   "slower" if reg["pairs_slower"] else "faster",
                   reg["ratio"]["n"])
               if reg.get("systematic") else "")
            + ("; unpatched same-flags base: patched/base %s x"
               % fmt_stat(bu["patch_cost"]["ratio"], "%.3f")
               if bu.get("patch_cost") else ""),
            reg["met"], reg["shares"])
    else:
        add("regression", "not run" if not bu else
            (bu.get("regression_note") or "not run"), None)


def markdown(bu: Optional[Dict[str, Any]]) -> List[str]:
    """The summary's section (none if the part measured nothing)."""
    L: List[str] = []
    if bu and bu.get("runs"):
        L.append("## Builds: stock vs patched, -O2 vs -O3")
        L.append("")
        L.append("One switch per build and repeat, builds in alternating "
                 "order (%s); 64 B, cycles/pkt." % "; ".join(
                     ",".join(o) for o in bu["orders"]))
        L.append("")
        L.append("| build | direct | through daqring | PMD share |")
        L.append("|---|---|---|---|")
        for name, d in bu["per_build"].items():
            L.append("| %s | %s | %s | %s |" % (
                name, fmt_stat(d["direct"]), fmt_stat(d.get("daqring", {})),
                share_text(d["shares"])))
        L.append("")
        if bu.get("regression"):
            reg = bu["regression"]
            L.append("Regression guard: patched / stock = %s (noise "
                     "%.1f%%, %s): %s." % (
                         fmt_stat(reg["ratio"], "%.3f"), 100 * reg["noise"],
                         judged_text(reg), reg["verdict"]))
        elif bu.get("regression_note"):
            L.append("Regression guard: %s." % bu["regression_note"])
        if bu.get("patch_cost"):
            pc = bu["patch_cost"]
            L.append("")
            L.append("Cost of the patches alone (the same base, unpatched, "
                     "built with the same configure options and CFLAGS): "
                     "patched / base = %s (noise %.1f%%, %s): %s."
                     % (fmt_stat(pc["ratio"], "%.3f"), 100 * pc["noise"],
                        judged_text(pc), pc["verdict"].replace(
                            "stock", "base")))
        elif bu.get("base_note"):
            L.append("")
            L.append("Cost of the patches alone: %s." % bu["base_note"])
        if bu.get("opt"):
            o = bu["opt"]
            L.append("")
            L.append("Optimisation: %s / %s = %s direct, %s through "
                     "daqring (%s): %s." % (
                         o["variant"], o["default"],
                         fmt_stat(o["ratio_direct"], "%.3f"),
                         fmt_stat(o["ratio_daqring"], "%.3f"),
                         judged_text(o), o["verdict"]))
        elif bu.get("opt_note"):
            L.append("")
            L.append("Optimisation: %s." % bu["opt_note"])
        L.append("")
    return L
