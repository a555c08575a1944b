# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The numbers of a run: statistics, ratios, verdicts against the
targets, the analyses and the Markdown summary."""

import os
import statistics
from typing import (Any, Callable, Dict, List, Optional, Sequence,
                    Tuple)

from .. import TOP
from . import lossless, peers
from .fabric_incast import (FABRIC_TARGETS, fabric_markdown,
                            fabric_verdicts)
from .parse import profile_text


SCHEMA = "daq-bench/1"
DEFAULT_OVS_BUILD = os.path.join(TOP, "ovs")
STOCK_VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
STOCK_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"

PARTS = ["hop", "scale", "waiting", "sleep", "shaping", "fairness",
         "builds", "incast", "peers", "lossless", "fabric-incast"]
# What --parts runs unless told: fabric-incast (two daq-incast runs of an
# emulated leaf-spine per repeat, about 15 minutes) and lossless (20 runs
# at each of its points, about 40 minutes) only when asked.
DEFAULT_PARTS = [p for p in PARTS if p not in ("fabric-incast", "lossless")]
LOW_SHARE = 0.90                 # PMD core shares below this are flagged
# max-rate must hold this close on every base (issue: the TSC rate that
# DPDK 22.11 reports is rounded to 10 MHz, up to 0.4% off; the shaper
# calibrates it against CLOCK_MONOTONIC_RAW).  The bench's windows hold
# SHAPING_BYTES_FRAMES frames or more, so that one frame more or less is
# 0.01% at most.
SHAPING_BYTES_TOL = 0.0002
SHAPING_BYTES_FRAMES = 10000
# ... and last SHAPING_BYTES_MIN_S seconds or more, with a snapshot of the
# counters every SHAPING_BYTES_STEP seconds: the rate is the slope fitted
# through all of them (fit_slope), so that the jitter of one snapshot's
# instant (about 1 ms: 0.05% of a 2 s window) averages out.
SHAPING_BYTES_MIN_S = 8.0
SHAPING_BYTES_STEP = 0.25
LOG_KEEP = 2 << 20               # bytes of each switch log kept

# Targets of the issue: (key, description, comparison, threshold).
TARGETS = {
    "hop_64": "through-daqring / direct cycles per packet, 64 B <= 1.3",
    "hop_1518": "through-daqring / direct cycles per packet, 1518 B <= 1.3",
    "hop_bound_64": "through egress-bound daqring / direct cycles per "
                    "packet, 64 B <= 1.15",
    "hop_bound_1518": "through egress-bound daqring / direct cycles per "
                      "packet, 1518 B <= 1.15",
    "scale_2048": "8 active daqrings: 2048 / 8 configured cycles per "
                  "packet <= 1.1",
    "create_2048": "create 2048 daqrings in one transaction <= 10 s",
    "waiting_2048": "8 active daqrings among 2048 shaped backlogged ones: "
                    "cycles per packet <= 1.1 x 8 alone",
    "sleep_2048": "2048 shaped daqrings each holding a packet for a later "
                  "deadline, PMD max sleep 10 ms: PMD thread CPU <= 10% "
                  "of its core",
    "shaping": "achieved / configured dequeue rate within 2% at every "
               "grid point",
    "shaping_bytes": "max-rate: achieved / configured wire rate within "
                     "0.02% from 10 Mbit/s to 10 Gbit/s",
    "fairness": "Jain index of 8 backlogged daqrings >= 0.99",
    "regression": "patched >= stock within noise (direct forwarding)",
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
TARGETS.update(peers.TARGETS)
TARGETS.update(lossless.TARGETS)
TARGETS.update(FABRIC_TARGETS)


# ================================================================ maths
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


# options:max-burst-bytes bounds (lib/netdev-daqring.c).
MAX_BURST_BYTES = 16 * 1024 * 1024


def stall_burst_bytes(rate_bps: int, max_burst: int, overhead: int,
                      stall_ms: float) -> int:
    """The max-burst-bytes of a max-rate point that rides out a PMD stall
    of 'stall_ms': what 'rate_bps' sends in that time, plus the frame
    that empties the bucket; 0 (the option not set) where 'max_burst'
    full-size frames already hold that much, or 'stall_ms' is 0."""
    full = 1518 + overhead
    want = int(rate_bps * stall_ms / 1000 / 8) + full
    if stall_ms <= 0 or want <= (max_burst + 1) * full:
        return 0
    return min(want, MAX_BURST_BYTES)


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


# ================================================================ verdicts
def verdicts(res: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One row per target of the issue: {key, target, value, shares, met
    (True / False / None when not measured), note}."""
    rows: List[Dict[str, Any]] = []

    def add(key: str, value: str, met: Optional[bool],
            shares: Sequence[Optional[float]] = (), note: str = "") -> None:
        rows.append({"key": key, "target": TARGETS[key], "value": value,
                     "met": met, "pmd_share": share_text(shares),
                     "low_share": low_share(shares), "note": note})

    hop = res.get("hop")
    for size in (64, 1518):
        d = (hop or {}).get("sizes", {}).get(str(size))
        if d:
            r = d["ratio"]
            add("hop_%d" % size, "%s x (direct %s, daqring %s cycles/pkt)"
                % (fmt_stat(r, "%.2f"), fmt_stat(d["direct"]["cycles"]),
                   fmt_stat(d["daqring"]["cycles"])),
                r["median"] <= 1.3 if r["median"] is not None else None,
                d["shares"])
        else:
            add("hop_%d" % size, "not run", None)
    for size in (64, 1518):
        d = (hop or {}).get("sizes", {}).get(str(size))
        if d and d.get("ratio_bound"):
            r = d["ratio_bound"]
            add("hop_bound_%d" % size, "%s x (direct %s, bound daqring %s "
                "cycles/pkt)" % (fmt_stat(r, "%.2f"),
                                 fmt_stat(d["direct"]["cycles"]),
                                 fmt_stat(d["bound"]["cycles"])),
                r["median"] <= 1.15 if r["median"] is not None else None,
                d["shares"])
        else:
            add("hop_bound_%d" % size, "not run", None)

    sc = res.get("scale")
    if sc and sc.get("ratio_2048") and sc["ratio_2048"]["median"]:
        r = sc["ratio_2048"]
        add("scale_2048", "%s x (%d: %s, %d: %s cycles/pkt)"
            % (fmt_stat(r, "%.2f"), sc["active"],
               fmt_stat(sc["counts"][str(sc["active"])]["cycles"]),
               sc["max"], fmt_stat(sc["counts"][str(sc["max"])]["cycles"])),
            r["median"] <= 1.1, sc["shares"])
    else:
        add("scale_2048", "not run" if not sc else
            "failed: %s" % sc.get("error"), None)
    wt = res.get("waiting")
    if wt and wt.get("ratio") and wt["ratio"]["median"]:
        r = wt["ratio"]
        add("waiting_2048", "%s x (%d alone: %s, with %d shaped backlogged:"
            " %s cycles/pkt; waiting rings polled %.0f/s)"
            % (fmt_stat(r, "%.2f"), wt["active"],
               fmt_stat(wt["counts"][str(wt["active"])]["cycles"]),
               wt["max"] - wt["active"],
               fmt_stat(wt["counts"][str(wt["max"])]["cycles"]),
               wt.get("wait_polls_per_s") or 0),
            r["median"] <= 1.1, wt["shares"])
    else:
        add("waiting_2048", "not run" if not wt else
            "failed: %s" % wt.get("error"), None)
    sl = res.get("sleep")
    if sl and sl.get("share") and sl["share"]["n"]:
        r = sl["share"]
        held = sl.get("held_after") == sl["rings"]
        add("sleep_2048", "%s%% of its core (%d windows; %d rings, max "
            "sleep %d us; %s)"
            % (fmt_stat(summarize([100 * x for x in r["values"]])),
               r["n"], sl["rings"], sl["max_sleep_us"],
               "every ring held its packet" if held else
               "FAILED: only %s of %d rings held their packet"
               % (sl.get("held_after"), sl["rings"])),
            r["max"] <= 0.10 and held)
    else:
        add("sleep_2048", "not run" if not sl else
            "failed: %s" % sl.get("error"), None)
    if sc and sc.get("create"):
        c = sc["create"]
        txt = ("%.1f s until all polled, %d daqrings (ovs-vsctl returned "
               "after %.1f s)" % (c["total_s"], c["n"], c["vsctl_s"]))
        q = sc.get("create_quiet_log")
        if q:
            txt += ("; %.1f s with dpif_netdev logging at warn"
                    % q["total_s"])
        add("create_2048", txt,
            c["total_s"] <= 10.0 if c["n"] == 2048 else None,
            note="" if c["n"] == 2048 else "not 2048 daqrings")
    else:
        add("create_2048", "not run", None)

    sh = res.get("shaping")
    if sh:
        pts = sh.get("points") or []
        asked = max(sh.get("asked_points", 0), len(pts))
        got = [p for p in pts if p["ratio"]["median"] is not None]
        errs = [abs(p["ratio"]["median"] - 1) for p in got]
        value = "%d of %d points within 2%%" % (
            sum(e <= 0.02 for e in errs), asked)
        if got:
            worst = max(got, key=lambda p: abs(p["ratio"]["median"] - 1))
            value = "worst %+.2f%% (US=%d, B=%d); %s" % (
                100 * (worst["ratio"]["median"] - 1),
                worst["poll_interval_us"], worst["max_burst"], value)
        if len(got) < asked or not asked:
            value += "; FAILED: %d of %d points not measured%s" % (
                asked - len(got), asked,
                " (%s)" % sh["error"] if sh.get("error") else "")
        add("shaping", value,
            bool(asked) and len(got) == asked
            and all(e <= 0.02 for e in errs),
            [s for p in pts for s in p["shares"]])
    else:
        add("shaping", "not run", None)

    bp = (sh or {}).get("byte_points") or []
    b_asked = max((sh or {}).get("byte_asked", 0), len(bp))
    if bp or b_asked:
        got = [p for p in bp if p["ratio"]["median"] is not None]

        def off(p: Dict[str, Any]) -> float:
            """The point's repeat furthest from the configured rate:
            every repeat must hold, not their median."""
            r = p["ratio"]
            return max((r["min"], r["max"]), key=lambda v: abs(v - 1)) - 1
        errs = [abs(off(p)) for p in got]
        value = "%d of %d points within %g%% in every repeat" % (
            sum(e <= SHAPING_BYTES_TOL for e in errs), b_asked,
            100 * SHAPING_BYTES_TOL)
        if got:
            worst = max(got, key=lambda p: abs(off(p)))
            rates = [p["max_rate_bps"] for p in got]
            value = "worst %+.3f%% (%s, %d B); %s, %s to %s" % (
                100 * off(worst),
                fmt_bps(worst["max_rate_bps"]), worst["frame_len"], value,
                fmt_bps(min(rates)), fmt_bps(max(rates)))
        if len(got) < b_asked:
            value += "; FAILED: %d of %d points not measured%s" % (
                b_asked - len(got), b_asked,
                " (%s)" % sh["error"] if sh and sh.get("error") else "")
        add("shaping_bytes", value,
            len(got) == b_asked
            and all(e <= SHAPING_BYTES_TOL for e in errs),
            [x for p in bp for x in p["shares"]])
    else:
        add("shaping_bytes", (sh or {}).get("byte_note") or "not run", None)

    fa = res.get("fairness")
    if fa and fa.get("scenarios"):
        worst_s = min(fa["scenarios"], key=lambda s: s["jain"]["min"])
        add("fairness", "; ".join(
            "%s %s" % (s["name"], fmt_stat(s["jain"], "%.4f"))
            for s in fa["scenarios"]),
            worst_s["jain"]["min"] >= 0.99,
            [x for s in fa["scenarios"] for x in s["shares"]])
    else:
        add("fairness", "not run", None)

    bu = res.get("builds")
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

    inc = res.get("incast")
    if inc and (inc.get("modes", {}).get("daqring") or inc_asked(inc)):
        incast_verdicts(inc, add)
    else:
        note = "not run" if not inc else inc.get("error") or "no daqring"
        for k in ("incast_ideal", "incast_credits", "incast_drops",
                  "incast_timeouts", "incast_ratio", "incast_ratio_deep"):
            add(k, note, None)
    peers.peer_verdicts(res.get("peers"), add)
    lossless.lossless_verdicts(res.get("lossless"), add)

    fab = res.get("fabric-incast")
    if fab and not fab.get("error"):
        fabric_verdicts(fab, add)
    else:
        for k in FABRIC_TARGETS:
            add(k, "not run" if not fab else "FAILED: " + fab["error"],
                None if not fab else False)
    return rows


def inc_asked(inc: Dict[str, Any]) -> int:
    """How many daq-incast runs the incast part (or summary) asked for."""
    return int(inc.get("asked", inc.get("runs", 0)) or 0)


def incast_verdicts(inc: Dict[str, Any],
                    add: Callable[..., None]) -> None:
    """The incast rows of verdicts().  Each counts every run that was
    asked for: a run that failed or is missing (daq-incast exited
    non-zero, a mode ended in error) makes the target FAILED, whatever
    the runs that did finish show."""
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


# ================================================================ markdown
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

    hop = res.get("hop")
    if hop and hop.get("sizes"):
        L.append("## Hop cost")
        L.append("")
        L.append("net_null source -> sink (`no-rx=1`), direct or through a "
                 "daqring (unshaped, max-burst 32).  Lookup \"emc\": the "
                 "flows also match dl_dst, so the datapath flow is found "
                 "in the EMC (as with ip,nw_dst steering rules); "
                 "\"simple\": flows on in_port only; dpif-netdev then "
                 "serves the packets leaving the daqring from its cheaper "
                 "simple-match table (the source's still from the EMC).  "
                 "The "
                 "targets are judged on \"%s\".  %d alternating windows "
                 "of %.0f s per side." % (hop.get("lookups", ["emc"])[0],
                                          hop["repeats"], hop["window_s"]))
        L.append("")
        L.append("Rows \"two-rule\": the daqring steered by two rules "
                 "(in_port=src -> ring, in_port=ring -> sink); \"bound\": "
                 "the daqring bound to the sink (options:egress=sink), one "
                 "rule.  Both are measured in the same run, alternating "
                 "with direct forwarding; the ratio is to direct.")
        L.append("")
        L.append("| size | lookup | daqring | direct cycles/pkt | daqring "
                 "cycles/pkt | ratio | direct Mpps | daqring Mpps | passes "
                 "| PMD share |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        by = hop.get("by_lookup") or {"emc": hop["sizes"]}
        for lookup in hop.get("lookups", list(by)):
            for size, d in sorted(by.get(lookup, {}).items(),
                                  key=lambda x: int(x[0])):
                rows = [("two-rule", d["daqring"], d["ratio"])]
                if d.get("bound"):
                    rows.append(("bound", d["bound"], d["ratio_bound"]))
                for label, q, ratio in rows:
                    L.append("| %s B | %s | %s | %s | %s | %s | %s | %s | "
                             "%s | %s |"
                             % (size, lookup, label,
                                fmt_stat(d["direct"]["cycles"]),
                                fmt_stat(q["cycles"]),
                                fmt_stat(ratio, "%.2f"),
                                fmt_stat(d["direct"]["mpps"], "%.2f"),
                                fmt_stat(q["mpps"], "%.2f"),
                                fmt_stat(q["passes"], "%.2f"),
                                share_text(d["shares"])))
        L.append("")
        if hop.get("profiles"):
            L.append("PMD thread profiles (perf, cpu-clock, top symbols):")
            L.append("")
            for k in sorted(hop["profiles"]):
                mode, lookup, size = k.split("_")
                L.append("- %s, %s, %s B: %s" % (
                    mode, lookup, size, profile_text(hop["profiles"][k])))
            L.append("")
        if hop.get("analysis"):
            L.append(hop["analysis"])
            L.append("")

    sc = res.get("scale")
    if sc and sc.get("counts"):
        L.append("## Ring-count scaling")
        L.append("")
        L.append("%d backlogged daqrings (each fed by a net_null source, "
                 "unshaped) to one sink; the other daqrings idle.  Flows on "
                 "in_port only: the sources' identical frames would share "
                 "one EMC bucket.  Order of the configurations: %s."
                 % (sc["active"], ", ".join(str(x) for x in sc["order"])))
        L.append("")
        L.append("| configured | cycles/pkt | ratio to 8 | Mpps | "
                 "PMD share |")
        L.append("|---|---|---|---|---|")
        for n, d in sorted(sc["counts"].items(), key=lambda x: int(x[0])):
            r = sc.get("ratio_%s" % n)
            L.append("| %s | %s | %s | %s | %s |" % (
                n, fmt_stat(d["cycles"]),
                fmt_stat(r, "%.2f") if r else "1",
                fmt_stat(d["mpps"], "%.2f"), share_text(d["shares"])))
        L.append("")
        c = sc.get("create")
        if c:
            L.append("Creating %d daqrings (ring-size %d) in one "
                     "`ovs-vsctl` transaction, in a switch with %d net_null "
                     "ports: %s (seconds until `ovs-vsctl` returned / until "
                     "`pmd-rxq-show` listed all of them).  Adding %s "
                     "daqrings to %d: %s s; deleting them: %s s.  Per "
                     "daqring: RSS %.1f KiB, DPDK heap %.1f KiB, hugetlb "
                     "mappings %.1f KiB (the heap comes out of the "
                     "preallocated dpdk-socket-mem)."
                     % (c["n"], c["ring_size"], sc["active"] + 1,
                        "; ".join("%.1f / %.1f with %s (%d rx-queue "
                                  "assignment lines, %.0f MB logged)" % (
                                      x["vsctl_s"], x["total_s"],
                                      "dpif_netdev logging at warn"
                                      if x.get("quiet_log") else
                                      "the default logging",
                                      x.get("log_assigned_lines", 0),
                                      x.get("log_bytes", 0) / 1e6)
                                  for x in sc.get("creates", [c])),
                        sc["mid"] - sc["active"], sc["active"],
                        ", ".join("%.1f" % x["total_s"]
                                  for x in sc.get("adds", [])) or "n/a",
                        ", ".join("%.1f" % x["s"]
                                  for x in sc.get("deletes", [])) or "n/a",
                        c["per_ring"]["rss_kib"],
                        c["per_ring"]["dpdk_heap_kib"],
                        c["per_ring"]["hugetlb_kib"]))
            L.append("")
        prof = sc.get("profiles", {})
        if prof:
            L.append("Profiles (perf, cpu-clock, top symbols):")
            L.append("")
            for k in sorted(prof, key=lambda k: int(k.split("_")[-1])):
                L.append("- PMD thread, %s configured: %s"
                         % (k.split("_")[1], profile_text(prof[k])))
            L.append("")
        if sc.get("analysis"):
            L.append(sc["analysis"])
            L.append("")

    sl = res.get("sleep")
    if sl and sl.get("windows"):
        L.append("## A sleeping PMD thread and waiting rings")
        L.append("")
        L.append("%d daqrings, each holding one 1514-byte packet that its "
                 "byte shaper (1000 bit/s, frame-overhead 255) lets leave "
                 "only about 14 s later, and nothing else to do; the PMD "
                 "thread's maximum sleep (pmd-maxsleep / pmd-sleep-max) "
                 "%d us.  CPU time of the PMD thread (utime + stime, "
                 "/proc/PID/task/TID/stat) per window of %.0f s: %s.  "
                 "Sleep iterations: %s of %s.  Packets held: %s before "
                 "the windows, %s after."
                 % (sl["rings"], sl["max_sleep_us"], sl["window_s"],
                    ", ".join("%.1f%%" % (100 * w["share"])
                              for w in sl["windows"]),
                    sl.get("sleep_iterations", "?"),
                    sl.get("iterations", "?"), sl.get("held_before", "?"),
                    sl.get("held_after", "?")))
        L.append("")

    sh = res.get("shaping")
    if sh and sh.get("points"):
        L.append("## Shaping accuracy")
        L.append("")
        L.append("One daqring (ring-size %d) kept full by a net_null "
                 "source; dequeue rate from the daqring's rx counter over "
                 "windows of at least %.0f s and %d intervals."
                 % (sh["ring_size"], sh["window_s"], sh["min_intervals"]))
        L.append("")
        L.append("| poll-interval | max-burst | configured pps | achieved "
                 "pps | achieved / configured | PMD share |")
        L.append("|---|---|---|---|---|---|")
        for p in sh["points"]:
            L.append("| %d us | %d | %.0f | %s | %s | %s |" % (
                p["poll_interval_us"], p["max_burst"], p["configured_pps"],
                fmt_stat(p["achieved_pps"], "%.0f"),
                fmt_stat(p["ratio"], "%.4f"), share_text(p["shares"])))
        L.append("")
        txt = shaping_analysis(sh)
        if txt:
            L.append(txt)
            L.append("")
    if sh and sh.get("byte_points"):
        L.append("### Byte shaping (max-rate)")
        L.append("")
        L.append("The same daqring with options:max-rate (max-burst %d, "
                 "frame-overhead %d), fed frames of one size; achieved "
                 "rate on the wire = (rx_bytes + %d x rx_packets) x 8 per "
                 "second." % (sh["byte_max_burst"], sh["frame_overhead"],
                              sh["frame_overhead"]))
        L.append("")
        L.append("| max-rate | frame | max-burst-bytes | configured "
                 "frames/s | achieved bit/s | achieved / configured | "
                 "PMD share |")
        L.append("|---|---|---|---|---|---|---|")
        for p in sh["byte_points"]:
            L.append("| %s | %d B | %s | %.0f | %s | %s | %s |" % (
                fmt_bps(p["max_rate_bps"]), p["frame_len"],
                p.get("max_burst_bytes") or "-",
                p["configured_fps"], fmt_stat(p["achieved_bps"], "%.0f"),
                fmt_stat(p["ratio"], "%.4f"), share_text(p["shares"])))
        L.append("")
        if sh.get("byte_skipped"):
            L.append("Not measured: %s (frame rates beyond "
                     "--shaping-max-fps)." % ", ".join(sh["byte_skipped"]))
            L.append("")

    fa = res.get("fairness")
    if fa and fa.get("scenarios"):
        L.append("## Fairness")
        L.append("")
        L.append("| scenario | Jain index | per-ring share of dequeues "
                 "(min-max) | ring-full drops | PMD share |")
        L.append("|---|---|---|---|---|")
        for s in fa["scenarios"]:
            L.append("| %s | %s | %.2f-%.2f%% | %s | %s |" % (
                s["description"], fmt_stat(s["jain"], "%.5f"),
                100 * s["share_min"], 100 * s["share_max"],
                "yes (backlogged)" if s["backlogged"] else "none",
                share_text(s["shares"])))
        L.append("")

    bu = res.get("builds")
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

    inc = res.get("incast")
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
    if res.get("peers", {}).get("points"):
        L.extend(peers.markdown(res["peers"]))
    if res.get("lossless", {}).get("points"):
        L.extend(lossless.markdown(res["lossless"]))

    fab = res.get("fabric-incast")
    if fab:
        L.extend(fabric_markdown(fab) if not fab.get("error") else [
            "## Fabric incast (daq-incast --topology fabric)", "",
            "Not completed: %s" % fab["error"], ""])

    if res.get("notes"):
        L.append("## Notes")
        L.append("")
        for n in res["notes"]:
            L.append("- %s" % n)
        L.append("")
    return "\n".join(L)


# ================================================================ verdicts
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


# ================================================================ analysis
def hop_analysis(hop: Dict[str, Any]) -> str:
    """What bounds the through-daqring cost (for the summary)."""
    parts = []
    for size, d in sorted(hop["sizes"].items(), key=lambda x: int(x[0])):
        dc = d["direct"]["cycles"]["median"]
        qc = d["daqring"]["cycles"]["median"]
        if dc is None or qc is None:
            continue
        parts.append("%s B: +%.0f cycles per packet (%.2f x)"
                     % (size, qc - dc, qc / dc))
    if not parts:
        return ""
    worst = max(d["ratio"]["median"] or 0 for d in hop["sizes"].values())
    txt = "Extra cost of the daqring hop: %s. " % "; ".join(parts)
    bound = []
    for size, d in sorted(hop["sizes"].items(), key=lambda x: int(x[0])):
        r = (d.get("ratio_bound") or {}).get("median")
        if r is not None:
            bound.append("%s B %.2f x" % (size, r))
    if bound:
        txt += ("Bound to its egress port (options:egress, one pass): %s "
                "(target 1.15x). " % "; ".join(bound))
    if worst <= 1.3:
        return txt + "The 1.3x target is met."
    txt += (
        "The 1.3x target is not met by the two-rule mode, and cannot be: "
        "a packet that goes through a daqring steered by two rules is "
        "received twice by the PMD thread, so it pays the whole per-packet "
        "datapath cost twice -- miniflow extraction, the EMC lookup (the "
        "second one keyed on in_port = the daqring), action execution and "
        "output batching -- plus the ring enqueue/dequeue and one more "
        "rx-queue poll per iteration; with net_null ports (no descriptor "
        "work) the datapath pass is almost all of the per-packet cost, so "
        "the ratio approaches 2.")
    if bound:
        return txt + (
            "  The bound mode is the one-pass design: the PMD thread that "
            "polls the daqring hands what it dequeues straight to the "
            "egress port's output batch, so the second pass costs a ring "
            "dequeue and a transmit, not a parse, a lookup and an "
            "execution.")
    return txt + (
        "  A daqring bound to its egress port (options:egress) avoids "
        "the second pass; this run did not measure it.")


def fmt_bps(bps: float) -> str:
    """'10 Mbit/s', '1.5 Gbit/s'."""
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return "%g %s" % (round(bps / scale, 3), unit)
    return "%g bit/s" % bps


def shaping_analysis(sh: Dict[str, Any]) -> str:
    """Which shaping points miss 2%, and whether preemption explains them:
    a point is explained when its shortfall is no larger than the time its
    PMD thread was off the CPU (1 - share) plus 2%."""
    bad = [p for p in sh["points"]
           if p["ratio"]["median"] is not None
           and abs(p["ratio"]["median"] - 1) > 0.02]
    missing = max(sh.get("asked_points", 0), len(sh["points"])) - sum(
        p["ratio"]["median"] is not None for p in sh["points"])
    if missing:
        return ("%d of the points asked for were not measured; %d measured "
                "points miss 2%%." % (missing, len(bad)))
    if not bad:
        return "Every point is within 2% of the configured rate."

    def explained(p: Dict[str, Any]) -> bool:
        sh_ = [x for x in p["shares"] if x is not None]
        share = statistics.median(sh_) if sh_ else 1.0
        return 1 - p["ratio"]["median"] <= (1 - share) + 0.02

    pre = [p for p in bad if explained(p)]
    txt = "%d of %d points miss 2%%" % (len(bad), len(sh["points"]))
    if pre:
        txt += (
            "; %s of them by no more than the time the PMD thread was "
            "preempted (1 - its share, + 2%%).  A daqring does not catch up "
            "on bursts it missed while its thread was off the CPU (by "
            "design, see Documentation/topics/daqring.rst), and scheduler "
            "time slices are milliseconds, so for poll-intervals shorter "
            "than that the achieved rate falls to about the PMD's share of "
            "its core: such points measure the machine, not the shaper.  "
            "Run on a dedicated (ideally isolated) core to measure the "
            "shaper itself" % ("all" if len(pre) == len(bad)
                               else "%d" % len(pre)))
    rest = [p for p in bad if not explained(p)]
    if rest:
        txt += ("; not explained by preemption: %s" % ", ".join(
            "US=%d B=%d %+.2f%%" % (p["poll_interval_us"], p["max_burst"],
                                    100 * (p["ratio"]["median"] - 1))
            for p in rest))
    return txt + "."


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


def _prof_pct(top: Optional[List[List[Any]]], prefix: str) -> float:
    return sum(pct for pct, sym in top or [] if sym.startswith(prefix))


def scale_analysis(sc: Dict[str, Any]) -> str:
    """What bounds ring-count scaling and creation (for the summary)."""
    r = sc.get("ratio_2048") or {}
    n_act, n_max = sc["active"], sc["max"]
    c8 = sc["counts"].get(str(n_act), {}).get("cycles", {})
    cmax = sc["counts"].get(str(n_max), {}).get("cycles", {})
    if not r.get("median") or not c8.get("median") or not cmax.get("median"):
        return ""
    idle = n_max - n_act
    extra = cmax["median"] - c8["median"]
    txt = ("With %d idle daqrings each forwarded packet costs %.0f cycles "
           "more than with none idle" % (idle, extra))
    fpi = sc["counts"][str(n_max)].get("fwd_per_iteration", {})
    if fpi.get("median") and idle > 0:
        txt += (" (%.0f packets forwarded per PMD iteration: %.0f extra "
                "cycles per iteration, about %.0f per configured idle "
                "daqring)" % (fpi["median"], extra * fpi["median"],
                              extra * fpi["median"] / idle))
    txt += ".  "
    prof = sc.get("profiles", {}).get("pmd_%d" % n_max)
    flush = _prof_pct(prof, "dp_netdev_pmd_flush_output_packets")
    poll = sum(_prof_pct(prof, x) for x in (
        "dp_netdev_process_rxq_port", "netdev_daqring_rxq_recv",
        "netdev_rxq_recv"))
    if r["median"] <= 1.1:
        txt += (
            "The 1.1x target is met: a PMD thread polls a daqring only "
            "while its doorbell is rung (patches 'netdev: Add rx queue "
            "doorbells.' and 'dpif-netdev: Poll rx queues with doorbells "
            "only when rung.') and flushes output only on the ports that "
            "have some pending ('dpif-netdev: Flush only the tx ports that "
            "have output pending.'), so the per-iteration cost follows the "
            "busy daqrings, not the configured ones.  ")
    else:
        txt += "The 1.1x target is not met.  "
        if prof:
            txt += ("The PMD profile at %d configured shows the two "
                    "bounds: %.0f%% of the PMD thread's time in "
                    "dp_netdev_pmd_flush_output_packets() and %.0f%% in "
                    "polling rx queues (dp_netdev_process_rxq_port, "
                    "netdev_rxq_recv, netdev_daqring_rxq_recv).  "
                    % (n_max, flush, poll))
        txt += (
            "(1) After every rx batch that produced output, dpif-netdev "
            "walks the PMD's whole send-port cache (one entry per port "
            "with a tx queue, so every daqring) to flush pending output "
            "batches: O(configured ports) per busy rx queue.  (2) Every "
            "PMD iteration polls every rx queue assigned to it, and each "
            "idle daqring costs one visit (cycle accounting, the call "
            "through the netdev class, the shaping and empty-ring tests), "
            "with a working set of a few cache lines per daqring that no "
            "longer fits the caches at thousands of rings.  A design that "
            "meets the target: keep the tx ports with pending output in a "
            "small array per PMD (flush only those), and serve all "
            "daqrings of a PMD from one 'daqring scheduler' rx queue fed "
            "by an active list (the enqueue side marks a ring active when "
            "it turns non-empty and pushes it onto a lock-free list; the "
            "scheduler serves active rings round-robin, shaped rings wait "
            "on a timer wheel keyed by their next TSC slot), so the cost "
            "follows the number of backlogged daqrings, not configured "
            "ones.  ")
    c = sc.get("create")
    if c and c["total_s"] <= 10:
        txt += (
            "Creation meets its target (%.1f s for %d): rx-queue "
            "assignments are logged at info level only when they change "
            "('dpif-netdev: Log only rx queue assignments that change.'; "
            "%d lines for this transaction).  What remains grows with the "
            "square of the number of ports, more slowly: dpif-netdev still "
            "reconfigures the datapath (reassigns every rx queue, reloads "
            "the PMD threads) once per port added; applying a "
            "transaction's port changes in one reconfiguration would make "
            "it linear." % (c["total_s"], c["n"],
                            c.get("log_assigned_lines", 0)))
    elif c:
        q = sc.get("create_quiet_log")
        txt += (
            "Creation (%.0f s for %d, target 10 s) and deletion are "
            "quadratic: dpif-netdev reconfigures the datapath for each "
            "port added or deleted (do_add_port/do_del_port -> "
            "reconfigure_datapath), which reassigns every rx queue and "
            "reloads the PMD threads, O(ports) each time; and its rx-queue "
            "scheduler logs one INFO line per rx queue at each of these "
            "reconfigurations (%d lines, %.0f MB for this transaction, to "
            "the log file and syslog)" % (
                c["total_s"], c["n"], c.get("log_assigned_lines", 0),
                c.get("log_bytes", 0) / 1e6))
        if q:
            txt += (".  With dpif_netdev logging at warn (`ovs-appctl "
                    "vlog/set dpif_netdev:file:warn dpif_netdev:syslog:warn`)"
                    " the same transaction took %.1f s: the logging is "
                    "most of the time, the reconfigurations the rest"
                    % q["total_s"])
        txt += (".  The design that meets the target without touching the "
                "log level: let the datapath apply a transaction's port "
                "changes in one reconfiguration (dpif-netdev marks the "
                "datapath for reconfiguration on port add/delete and "
                "reconfigures once from dpif_netdev_run(), or a batched "
                "port_add in the dpif interface for bridge.c), and log "
                "only the rx-queue assignments that changed (at DBG for "
                "unchanged ones), so that n daqrings cost O(n) work plus "
                "one PMD reload.")
    return txt


def reanalyse(res: Dict[str, Any]) -> None:
    """Recomputes what is derived from the samples (verdicts of the builds
    part, analysis texts), e.g. after this program's judging changed."""
    bu = res.get("builds") or {}
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
    if res.get("hop", {}).get("sizes"):
        res["hop"]["analysis"] = hop_analysis(res["hop"])
    if res.get("scale", {}).get("counts"):
        res["scale"]["analysis"] = scale_analysis(res["scale"])
    if res.get("incast", {}).get("modes"):
        res["incast"]["analysis"] = incast_analysis(res["incast"])
