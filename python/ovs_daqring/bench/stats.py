# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The numbers of daq-bench's windows and repeats: min / median / max,
ratios, the Jain index, a fitted slope, the counters' deltas and a
window's cycles per forwarded packet, the PMD's share of its core and
how the summary prints them."""

import statistics
from typing import Any, Dict, List, Optional, Sequence

LOW_SHARE = 0.90                 # PMD core shares below this are flagged


def summarize(xs: Sequence[float]) -> Dict[str, Any]:
    """min / median / max (and the values) of repeats."""
    xs = [float(x) for x in xs if x is not None]
    if not xs:
        return {"n": 0, "min": None, "median": None, "max": None,
                "values": []}
    return {"n": len(xs), "min": min(xs), "median": statistics.median(xs),
            "max": max(xs), "values": xs}


def jain(xs: Sequence[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 = equal shares,
    1/n = one flow takes everything."""
    xs = [float(x) for x in xs]
    if not xs:
        raise ValueError("jain: no values")
    sq = sum(x * x for x in xs)
    if sq == 0:
        return 1.0
    return sum(xs) ** 2 / (len(xs) * sq)


def ratios(num: Sequence[float], den: Sequence[float]) -> List[float]:
    """Pairwise num[i] / den[i] of repeats measured side by side."""
    if len(num) != len(den):
        raise ValueError("ratios: %d vs %d values" % (len(num), len(den)))
    return [n / d for n, d in zip(num, den) if d]


def fit_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The least-squares slope of YS over XS (at least two points)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def spread(xs: Sequence[float]) -> float:
    """Relative spread of repeats: max / min - 1."""
    xs = [x for x in xs if x is not None]
    if not xs or min(xs) <= 0:
        return 0.0
    return max(xs) / min(xs) - 1


def delta(a: Dict[str, Dict[str, Optional[int]]],
          b: Dict[str, Dict[str, Optional[int]]], port: str,
          key: str) -> int:
    x, y = a.get(port, {}).get(key), b.get(port, {}).get(key)
    if x is None or y is None:
        return 0
    return y - x


def fwd_metrics(a: Dict[str, Any], b: Dict[str, Any],
                pmd: Dict[str, float], perf: Dict[str, Any],
                ins: Sequence[str], outs: Sequence[str]) -> Dict[str, Any]:
    """Cycles per *forwarded* packet of one measurement window.

    a, b: snapshots {t_ns, run_ns, wait_ns, ports} at the window's ends;
    pmd: pmd_totals() of pmd-stats-show (OVS 4.0: pmd-perf-show) read at
    the end (cleared at the start); perf: parse_pmd_perf() read at the
    end; ins: OpenFlow ports the PMD receives from (sources, daqrings);
    outs: ports packets leave by.

    passes = packets the PMD received / packets that left: 1 for direct
    forwarding, 2 through a daqring.  cycles_tsc is TSC cycles of busy
    iterations per forwarded packet (pmd-stats-show's "avg processing
    cycles per packet" x passes); it includes time the PMD thread was
    preempted.  cycles is the CPU cycles the PMD thread actually used per
    forwarded packet: all its TSC cycles x its core share (schedstat)."""
    wall_ns = b["t_ns"] - a["t_ns"]
    share = window_share(a, b)
    d_in = sum(delta(a["ports"], b["ports"], p, "rx") for p in ins)
    d_out = sum(delta(a["ports"], b["ports"], p, "tx") for p in outs)
    rx = pmd.get("rx", 0)
    total = pmd.get("idle", 0) + pmd.get("proc", 0)
    res: Dict[str, Any] = {
        "wall_s": wall_ns / 1e9, "pmd_share": share,
        "pmd_wait_s": (b["wait_ns"] - a["wait_ns"]) / 1e9,
        "in_packets": d_in, "out_packets": d_out,
        "mpps": d_out / (wall_ns / 1e9) / 1e6 if wall_ns > 0 else 0.0,
        "pmd_rx": rx, "pmd_proc_cycles": pmd.get("proc", 0),
        "pmd_idle_cycles": pmd.get("idle", 0),
        "emc_hits": pmd.get("emc", 0), "megaflow_hits": pmd.get("megaflow", 0),
        "simple_hits": pmd.get("simple", 0),
        "upcalls": pmd.get("miss", 0),
        "passes": None, "cycles": None, "cycles_tsc": None,
        "cycles_per_rx": None, "tsc_hz": None,
        "perf_duration_s": perf.get("duration_s"),
        "perf_cycles_per_pkt": None,
    }
    pmds = list(perf.get("pmds", {}).values())
    if len(pmds) == 1:
        res["perf_cycles_per_pkt"] = pmds[0].get("cycles_per_pkt")
    iters = sum(x.get("iterations", 0) for x in pmds)
    res["iterations"] = iters
    res["rx_per_iteration"] = rx / iters if iters else None
    if perf.get("duration_s"):
        res["tsc_hz"] = total / perf["duration_s"]
    if d_out > 0 and rx > 0:
        passes = d_in / d_out
        res["passes"] = passes
        res["cycles_per_rx"] = pmd.get("proc", 0) / rx
        res["cycles_tsc"] = pmd.get("proc", 0) / rx * passes
        res["cycles"] = total * min(share, 1.0) / rx * passes
    return res


def window_share(a: Dict[str, Any], b: Dict[str, Any]) -> float:
    """The PMD threads' mean share of their cores between two snapshots."""
    wall_ns = (b["t_ns"] - a["t_ns"]) * max(1, b.get("n_pmd", 1))
    return (b["run_ns"] - a["run_ns"]) / wall_ns if wall_ns > 0 else 0.0


def low_share(shares: Sequence[Optional[float]]) -> bool:
    return any(s is not None and s < LOW_SHARE for s in shares)


def share_text(shares: Sequence[Optional[float]]) -> str:
    """'97%' or '61-99% LOW' for a list of PMD core shares."""
    s = [x for x in shares if x is not None]
    if not s:
        return "n/a"
    lo, hi = min(s), max(s)
    txt = ("%.0f%%" % (100 * lo) if round(100 * lo) == round(100 * hi)
           else "%.0f-%.0f%%" % (100 * lo, 100 * hi))
    return txt + (" LOW" if lo < LOW_SHARE else "")


def judged_text(v: Dict[str, Any]) -> str:
    if "repeats_judged" not in v:
        return "all repeats"
    return ("%d repeats with PMD share >= %d%%" % (v["repeats_judged"],
                                                   100 * LOW_SHARE)
            if v.get("clean") else
            "all %d repeats: fewer than 3 had PMD share >= %d%%"
            % (v["repeats_judged"], 100 * LOW_SHARE))


def fmt_stat(st: Dict[str, Any], fmt: str = "%.1f") -> str:
    """'median [min-max]' of summarize()."""
    if not st or st.get("median") is None:
        return "n/a"
    if st["n"] == 1:
        return fmt % st["median"]
    return "%s [%s-%s]" % (fmt % st["median"], fmt % st["min"],
                           fmt % st["max"])
