# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-bench: benchmarks of ovs-daqring ("make bench").

Every number is a ratio measured within one run, with repeats alternated
between the two sides to cancel drift, because the machines it runs on are
shared and noisy.  See Documentation/topics/bench.rst.
"""

import argparse
import atexit
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import TOP, VERSION, hugepages, tool_path
from ..incast.config import ConfigError, parse_cpu_mask
from ..process import (Cleanup, Interrupted, RunError, die_with_parent,
                       read_text, run, signals_held, stop_process)
from ..sandbox import Binaries, Sandbox, tree_binaries

SCHEMA = "daq-bench/1"
DEFAULT_OVS_BUILD = os.path.join(TOP, "ovs")
STOCK_VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
STOCK_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
PARTS = ["hop", "scale", "waiting", "shaping", "fairness", "builds",
         "incast"]
LOW_SHARE = 0.90                 # PMD core shares below this are flagged
LOG_KEEP = 2 << 20               # bytes of each switch log kept

# Targets of the issue: (key, description, comparison, threshold).
TARGETS = {
    "hop_64": "through-daqring / direct cycles per packet, 64 B <= 1.3",
    "hop_1518": "through-daqring / direct cycles per packet, 1518 B <= 1.3",
    "scale_2048": "8 active daqrings: 2048 / 8 configured cycles per "
                  "packet <= 1.1",
    "create_2048": "create 2048 daqrings in one transaction <= 10 s",
    "waiting_2048": "8 active daqrings among 2048 shaped backlogged ones: "
                    "cycles per packet <= 1.1 x 8 alone",
    "shaping": "achieved / configured dequeue rate within 2% at every "
               "grid point",
    "shaping_bytes": "max-rate: achieved / configured wire rate within 1% "
                     "from 10 Mbit/s to 10 Gbit/s",
    "fairness": "Jain index of 8 backlogged daqrings >= 0.99",
    "regression": "patched >= stock within noise (direct forwarding)",
    "incast_ideal": "incast: daqring goodput >= 95% of ideal",
    "incast_timeouts": "incast: daqring 0 TCP timeouts",
    "incast_ratio": "incast: daqring / stock goodput >= 10x",
    "incast_ratio_deep": "incast: daqring / stock goodput >= 10x at a "
                         "deeper collapse",
}


# ================================================================ parsing
def _num(text: str) -> Optional[int]:
    return None if text == "?" else int(text)


def parse_pmd_stats(text: str) -> Dict[str, Dict[str, float]]:
    """`ovs-appctl dpif-netdev/pmd-stats-show` -> per thread ("pmd
    NUMA/CORE" or "main") {rx, recirc, emc, smc, megaflow, miss, idle,
    proc}.  Missing counters are 0."""
    out: Dict[str, Dict[str, float]] = {}
    cur: Optional[Dict[str, float]] = None
    keys = {"packets received": "rx", "packet recirculations": "recirc",
            "emc hits": "emc", "smc hits": "smc",
            "simple match hits": "simple",
            "megaflow hits": "megaflow",
            "miss with success upcall": "miss",
            "idle cycles": "idle", "processing cycles": "proc"}
    for line in text.splitlines():
        m = re.match(r"pmd thread numa_id (\d+) core_id (\d+):", line)
        if m:
            cur = out.setdefault("pmd %s/%s" % m.groups(),
                                 dict.fromkeys(keys.values(), 0))
            continue
        if line.startswith("main thread:"):
            cur = out.setdefault("main", dict.fromkeys(keys.values(), 0))
            continue
        m = re.match(r"\s+([a-z .]+): (\d+)", line)
        if cur is not None and m and m.group(1) in keys:
            cur[keys[m.group(1)]] = int(m.group(2))
    return out


def pmd_totals(stats: Dict[str, Dict[str, float]]) -> Dict[str, float]:
    """Sums the PMD threads of parse_pmd_stats() (not the main thread)."""
    tot: Dict[str, float] = {}
    for name, d in stats.items():
        if name.startswith("pmd"):
            for k, v in d.items():
                tot[k] = tot.get(k, 0) + v
    return tot


def parse_pmd_perf(text: str) -> Dict[str, Any]:
    """`ovs-appctl dpif-netdev/pmd-perf-show` -> {duration_s, pmds: {name:
    {iterations, us_per_it, used_cycles, used_pct, idle_iterations,
    busy_iterations, rx, kpps, cycles_per_pkt, passes_per_pkt, emc_hits,
    megaflow_hits, upcalls}}}."""
    out: Dict[str, Any] = {"duration_s": None, "pmds": {}}
    cur: Optional[Dict[str, Any]] = None
    pats = [
        ("iterations", r"Iterations:\s+(\d+)\s+\(([\d.]+) us/it\)",
         ("iterations", "us_per_it")),
        ("used", r"- Used TSC cycles:\s+(\d+)\s+\(\s*([\d.]+) %",
         ("used_cycles", "used_pct")),
        ("idle", r"- idle iterations:\s+(\d+)", ("idle_iterations",)),
        ("busy", r"- busy iterations:\s+(\d+)", ("busy_iterations",)),
        ("rx", r"Rx packets:\s+(\d+)(?:\s+\(([\d.]+) Kpps, ([\d.]+) "
         r"cycles/pkt\))?", ("rx", "kpps", "cycles_per_pkt")),
        ("passes", r"Datapath passes:\s+(\d+)\s+\(([\d.]+) passes/pkt\)",
         ("passes", "passes_per_pkt")),
        ("emc", r"- EMC hits:\s+(\d+)", ("emc_hits",)),
        ("mf", r"- Megaflow hits:\s+(\d+)", ("megaflow_hits",)),
        ("up", r"- Upcalls:\s+(\d+)", ("upcalls",)),
    ]
    for line in text.splitlines():
        m = re.match(r"Measurement duration:\s+([\d.]+) s", line.strip())
        if m:
            out["duration_s"] = float(m.group(1))
            continue
        m = re.match(r"pmd thread numa_id (\d+) core_id (\d+):", line)
        if m:
            cur = out["pmds"].setdefault("pmd %s/%s" % m.groups(), {})
            continue
        if cur is None:
            continue
        for _, pat, names in pats:
            m = re.match(pat, line.strip())
            if m:
                for name, val in zip(names, m.groups()):
                    if val is not None:
                        cur[name] = float(val) if "." in val else int(val)
                break
    return out


PORT_RX_RE = re.compile(r"^\s*port\s+(\S+?):\s+rx pkts=(\d+|\?), "
                        r"bytes=(\d+|\?), drop=(\d+|\?)")
PORT_TX_RE = re.compile(r"^\s*tx pkts=(\d+|\?), bytes=(\d+|\?), "
                        r"drop=(\d+|\?)")


def parse_dump_ports(text: str) -> Dict[str, Dict[str, Optional[int]]]:
    """`ovs-ofctl --no-names dump-ports BR` -> {port: {rx, rx_bytes,
    rx_drop, tx, tx_bytes, tx_drop}}; port is the OpenFlow number as a
    string, or LOCAL.  Counters a port does not have are None."""
    out: Dict[str, Dict[str, Optional[int]]] = {}
    cur: Optional[Dict[str, Optional[int]]] = None
    for line in text.splitlines():
        m = PORT_RX_RE.match(line)
        if m:
            cur = out.setdefault(m.group(1).strip('"'), {})
            cur.update(rx=_num(m.group(2)), rx_bytes=_num(m.group(3)),
                       rx_drop=_num(m.group(4)))
            continue
        m = PORT_TX_RE.match(line)
        if m and cur is not None:
            cur.update(tx=_num(m.group(1)), tx_bytes=_num(m.group(2)),
                       tx_drop=_num(m.group(3)))
            cur = None
    return out


def parse_rxq_show(text: str) -> Dict[str, List[str]]:
    """`ovs-appctl dpif-netdev/pmd-rxq-show` -> {pmd: [port names]}."""
    out: Dict[str, List[str]] = {}
    cur: List[str] = []
    for line in text.splitlines():
        m = re.match(r"pmd thread numa_id (\d+) core_id (\d+):", line)
        if m:
            cur = out.setdefault("pmd %s/%s" % m.groups(), [])
            continue
        m = re.match(r"\s+port:\s+(\S+)\s+queue-id:", line)
        if m:
            cur.append(m.group(1))
    return out


PERF_RE = re.compile(r"^\s*([\d.]+)%\s+\[(.)\]\s+(\S+)")


def parse_perf_report(text: str, n: int = 10) -> List[List[Any]]:
    """`perf report --stdio --no-children --sort symbol` -> the top n
    [percent, symbol] (kernel symbols marked '[k] ')."""
    out: List[List[Any]] = []
    for line in text.splitlines():
        m = PERF_RE.match(line)
        if m:
            sym = m.group(3) if m.group(2) != "k" else "[k] " + m.group(3)
            out.append([float(m.group(1)), sym])
    return out[:n]


def profile_text(top: Optional[List[List[Any]]], n: int = 5) -> str:
    if not top:
        return "n/a"
    return ", ".join("%s %.0f%%" % (sym, pct) for pct, sym in top[:n])


def parse_malloc_stats(text: str) -> int:
    """`ovs-appctl dpdk/get-malloc-stats` -> bytes allocated, all heaps."""
    return sum(int(x) for x in re.findall(r"Alloc_size:(\d+)", text))


def parse_configure_cflags(config_log: str) -> Optional[str]:
    """The CFLAGS given to an OVS tree's ./configure (from config.log)."""
    for line in config_log.splitlines():
        if line.strip().startswith("$ ./configure"):
            for word in shlex.split(line.strip()[2:]):
                if word.startswith("CFLAGS="):
                    return word[len("CFLAGS="):]
            return ""
    return None


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
    pmd: pmd_totals() of pmd-stats-show read at the end (cleared at the
    start); perf: parse_pmd_perf() read at the end; ins: OpenFlow ports the
    PMD receives from (sources, daqrings); outs: ports packets leave by.

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
    if sh and sh.get("points"):
        errs = [abs(p["ratio"]["median"] - 1) for p in sh["points"]
                if p["ratio"]["median"] is not None]
        worst = max(sh["points"],
                    key=lambda p: abs((p["ratio"]["median"] or 1) - 1))
        shares = [s for p in sh["points"] for s in p["shares"]]
        add("shaping", "worst %+.2f%% (US=%d, B=%d); %d of %d points "
            "within 2%%" % (100 * (worst["ratio"]["median"] - 1),
                            worst["poll_interval_us"], worst["max_burst"],
                            sum(e <= 0.02 for e in errs), len(errs)),
            all(e <= 0.02 for e in errs), shares)
    else:
        add("shaping", "not run", None)

    bp = (sh or {}).get("byte_points")
    if bp:
        errs = [abs(p["ratio"]["median"] - 1) for p in bp
                if p["ratio"]["median"] is not None]
        worst = max(bp, key=lambda p: abs((p["ratio"]["median"] or 1) - 1))
        rates = [p["max_rate_bps"] for p in bp]
        add("shaping_bytes", "worst %+.2f%% (%s, %d B); %d of %d points "
            "within 1%%, %s to %s" % (
                100 * ((worst["ratio"]["median"] or 1) - 1),
                fmt_bps(worst["max_rate_bps"]), worst["frame_len"],
                sum(e <= 0.01 for e in errs), len(bp),
                fmt_bps(min(rates)), fmt_bps(max(rates))),
            len(errs) == len(bp) and all(e <= 0.01 for e in errs),
            [x for p in bp for x in p["shares"]])
    else:
        add("shaping_bytes", "not run", None)

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
    if inc and inc.get("modes", {}).get("daqring"):
        dq = inc["modes"]["daqring"]
        st = inc["modes"].get("stock")
        add("incast_ideal", "%s%% of ideal (%s Mbit/s)"
            % (fmt_stat(_scale(dq["ideal_ratio"], 100)),
               fmt_stat(_scale(dq["goodput_bps"], 1e-6))),
            dq["ideal_ratio"]["median"] >= 0.95, dq["shares"])
        add("incast_timeouts", "%s timeouts per run"
            % fmt_stat(dq["timeouts"], "%.0f"),
            dq["timeouts"]["max"] == 0, dq["shares"])
        if st and inc.get("ratio") and inc["ratio"]["median"] is not None:
            add("incast_ratio", "%s x (stock %s Mbit/s)"
                % (fmt_stat(inc["ratio"], "%.1f"),
                   fmt_stat(_scale(st["goodput_bps"], 1e-6))),
                inc["ratio"]["median"] >= 10, st["shares"] + dq["shares"])
        else:
            add("incast_ratio", "stock mode not run", None)
        dp = inc.get("deep")
        if dp and dp.get("ratio") and dp["ratio"]["median"] is not None:
            dm = dp["modes"]
            add("incast_ratio_deep", "%s x (stock %s, daqring %s Mbit/s, "
                "%s timeouts; %s)" % (
                    fmt_stat(dp["ratio"], "%.1f"),
                    fmt_stat(_scale(dm["stock"]["goodput_bps"], 1e-6)),
                    fmt_stat(_scale(dm["daqring"]["goodput_bps"], 1e-6)),
                    fmt_stat(dm["daqring"]["timeouts"], "%.0f"),
                    dp["command"].split(" -q ", 1)[-1]),
                dp["ratio"]["median"] >= 10,
                dm["stock"]["shares"] + dm["daqring"]["shares"])
        else:
            add("incast_ratio_deep", "not run", None)
    else:
        note = "not run" if not inc else inc.get("error") or "no daqring"
        for k in ("incast_ideal", "incast_timeouts", "incast_ratio",
                  "incast_ratio_deep"):
            add(k, note, None)
    return rows


def _scale(st: Dict[str, Any], f: float) -> Dict[str, Any]:
    out = dict(st)
    for k in ("min", "median", "max"):
        if out.get(k) is not None:
            out[k] = out[k] * f
    out["values"] = [v * f for v in st.get("values", [])]
    return out


# ================================================================ markdown
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
        L.append("| size | lookup | direct cycles/pkt | daqring cycles/pkt "
                 "| ratio | direct Mpps | daqring Mpps | passes | "
                 "PMD share |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        by = hop.get("by_lookup") or {"emc": hop["sizes"]}
        for lookup in hop.get("lookups", list(by)):
            for size, d in sorted(by.get(lookup, {}).items(),
                                  key=lambda x: int(x[0])):
                L.append("| %s B | %s | %s | %s | %s | %s | %s | %s | %s |"
                         % (size, lookup, fmt_stat(d["direct"]["cycles"]),
                            fmt_stat(d["daqring"]["cycles"]),
                            fmt_stat(d["ratio"], "%.2f"),
                            fmt_stat(d["direct"]["mpps"], "%.2f"),
                            fmt_stat(d["daqring"]["mpps"], "%.2f"),
                            fmt_stat(d["daqring"]["passes"], "%.2f"),
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
        L.append("| max-rate | frame | configured frames/s | achieved "
                 "bit/s | achieved / configured | PMD share |")
        L.append("|---|---|---|---|---|---|")
        for p in sh["byte_points"]:
            L.append("| %s | %d B | %.0f | %s | %s | %s |" % (
                fmt_bps(p["max_rate_bps"]), p["frame_len"],
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
        L.append("`%s`, %d run(s); JSON and plots in `%s`."
                 % (inc["command"], inc["runs"], inc["dir"]))
        L.append("")
        L.append("| mode | goodput Mbit/s | of ideal | p99 ms | "
                 ">= 200 ms events | PMD share |")
        L.append("|---|---|---|---|---|---|")
        for mode, d in inc["modes"].items():
            L.append("| %s | %s | %s%% | %s | %s | %s |" % (
                mode, fmt_stat(_scale(d["goodput_bps"], 1e-6)),
                fmt_stat(_scale(d["ideal_ratio"], 100)),
                fmt_stat(_scale(d["p99_s"], 1e3), "%.0f"),
                fmt_stat(d["timeouts"], "%.0f"), share_text(d["shares"])))
        L.append("")
        if inc.get("ratio"):
            L.append("daqring / stock goodput: %s x."
                     % fmt_stat(inc["ratio"], "%.1f"))
            L.append("")
        dp = inc.get("deep")
        if dp and dp.get("modes"):
            L.append("Deeper collapse, `%s`:" % dp["command"])
            L.append("")
            L.append("| mode | goodput Mbit/s | of ideal | p99 ms | "
                     ">= 200 ms events | PMD share |")
            L.append("|---|---|---|---|---|---|")
            for mode, d in dp["modes"].items():
                L.append("| %s | %s | %s%% | %s | %s | %s |" % (
                    mode, fmt_stat(_scale(d["goodput_bps"], 1e-6)),
                    fmt_stat(_scale(d["ideal_ratio"], 100)),
                    fmt_stat(_scale(d["p99_s"], 1e3), "%.0f"),
                    fmt_stat(d["timeouts"], "%.0f"),
                    share_text(d["shares"])))
            L.append("")
        if inc.get("analysis"):
            L.append(inc["analysis"])
            L.append("")
    elif inc and inc.get("error"):
        L.append("## Incast (daq-incast)")
        L.append("")
        L.append("Not completed: %s" % inc["error"])
        L.append("")

    if res.get("notes"):
        L.append("## Notes")
        L.append("")
        for n in res["notes"]:
            L.append("- %s" % n)
        L.append("")
    return "\n".join(L)


# ================================================================ machine
def rel(path: str) -> str:
    """path relative to the current directory if it is below it."""
    r = os.path.relpath(path)
    return path if r.startswith("..") else r


def rel_top(path: str) -> str:
    """path relative to the source tree if it is inside it."""
    r = os.path.relpath(os.path.abspath(path), TOP)
    return path if r.startswith("..") else r


def source_state() -> Dict[str, Any]:
    """The git commit of the source tree and whether it has changes."""
    out: Dict[str, Any] = {"commit": None, "dirty": None}
    try:
        out["commit"] = run(["git", "-C", TOP, "rev-parse", "--short=12",
                             "HEAD"]).strip()
        out["dirty"] = bool(run(["git", "-C", TOP, "status", "--porcelain",
                                 "--untracked-files=no"]).strip())
        out["untracked"] = run(["git", "-C", TOP, "ls-files", "--others",
                                "--exclude-standard"]).split()
    except RunError:
        pass
    return out


def loadavg() -> str:
    return " ".join(read_text("/proc/loadavg", "? ? ?").split()[:3])


def other_vswitchd(own: Sequence[int] = ()) -> List[str]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) not in own:
            comm = read_text("/proc/%s/comm" % pid).strip()
            if comm.startswith("ovs-vswitchd"):
                out.append("%s (%s)" % (pid, comm))
    return sorted(out)


def build_dpdk_version(vswitchd: str) -> str:
    """The DPDK version that 'vswitchd --version' reports, or ''.  Base 3.5
    links its own DPDK statically, so pkg-config's answer is not it."""
    try:
        out = run([vswitchd, "--version"])
    except (RunError, OSError):
        return ""
    m = re.search(r"^DPDK (\S+)", out, re.M)
    return m.group(1) if m else ""


def machine(pmd_cpus: List[int], other_cpus: List[int],
            hugepages: str) -> Dict[str, Any]:
    cpuinfo = read_text("/proc/cpuinfo")
    model = re.search(r"model name\s*:\s*(.*)", cpuinfo)
    flags = re.search(r"flags\s*:\s*(.*)", cpuinfo)
    mem = re.search(r"MemTotal:\s+(\d+)", read_text("/proc/meminfo"))
    osr = re.search(r'PRETTY_NAME="([^"]*)"', read_text("/etc/os-release"))
    dpdk = ""
    try:
        dpdk = run(["pkg-config", "--modversion", "libdpdk"]).strip()
    except RunError:
        pass
    return {
        "cpu_model": model.group(1).strip() if model else "?",
        "cpus": os.cpu_count() or 0,
        "hypervisor": ("virtual machine" if flags and "hypervisor"
                       in flags.group(1).split() else "bare metal"),
        "mem_gib": "%.0f" % (int(mem.group(1)) / 2**20) if mem else "?",
        "kernel": platform.release(),
        "os": osr.group(1) if osr else "?",
        "dpdk": dpdk or "?",
        "hugepages": hugepages,
        "pmd_cpus": ",".join(map(str, pmd_cpus)),
        "other_cpus": ",".join(map(str, other_cpus)) or "(none left)",
        "loadavg_start": loadavg(),
        "other_vswitchd": other_vswitchd(),
    }


# ================================================================ binaries
@dataclass
class Build(Binaries):
    """One ovs-vswitchd and the tools and schema used with it.  The tools
    and ovsdb-server are always those of the patched build (the protocols
    are the same); the schema is the one that came with the vswitchd."""
    label: str = ""
    desc: str = ""
    daqring: bool = True


def build(label: str, vswitchd: str, tools: str, schema: str, desc: str,
          daqring: bool) -> Build:
    return Build(**vars(tree_binaries(tools, vswitchd, schema)),
                 label=label, desc=desc, daqring=daqring)


def tree_build(label: str, tree: str, tools: str) -> Build:
    cflags = parse_configure_cflags(
        read_text(os.path.join(tree, "config.log")))
    desc = "%s (CFLAGS '%s')" % (rel_top(tree), cflags if cflags is not None
                                 else "?")
    return build(label, os.path.join(tree, "vswitchd", "ovs-vswitchd"),
                 tools, os.path.join(tree, "vswitchd", "vswitch.ovsschema"),
                 desc, True)


def opt_level(cflags: Optional[str]) -> str:
    found = re.findall(r"-O(\S*)", cflags or "")
    return "-O" + found[-1] if found else "-O?"


# ================================================================ switch
class Switch(Sandbox):
    """The sandbox (ovs_daqring.sandbox: userspace datapath, DPDK --no-pci
    --in-memory with a file prefix of its own) in a network namespace of
    its own, with one bridge br0 whose default NORMAL flow is removed.
    Everything lives under `workdir`."""

    def __init__(self, bench: "Bench", build: Build, tag: str) -> None:
        super().__init__(build, os.path.join(bench.workdir, tag), netns=tag,
                         own_netns=True, label=build.label,
                         ofctl_args=["--no-names"])
        self.bench = bench
        self.b = build
        self.tag = tag
        self.mgmt = "unix:%s/br0.mgmt" % self.dir
        self.ofports: Dict[str, int] = {}

    # ---------------------------------------------------------- life
    def start(self) -> None:   # type: ignore[override]
        cfg = self.bench.args
        os.makedirs(self.dir, exist_ok=True)
        self.bench.live.append(self)
        memory, extra = hugepages.dpdk_memory_config(
            self.bench.hugepages, cfg.socket_mem_text,
            self.bench.socket_mem_mb, self.tag, self.bench.cleanup)
        extra = "%s %s" % (cfg.dpdk_extra, extra)
        settings = ["other_config:dpdk-init=true",
                    "other_config:pmd-cpu-mask=%s" % cfg.pmd_cpu_mask]
        settings += memory
        settings.append('other_config:dpdk-extra="%s"' % extra.strip())
        for kv in cfg.other_config:
            settings.append("other_config:%s" % kv)
        super().start(settings)
        self.add_bridge("br0", "fail_mode=secure")
        self.ofctl("del-flows", self.mgmt)

    def stop(self, fast: bool = False,  # type: ignore[override]
             grace: float = 30) -> None:
        """Sandbox.stop(), signals held off, with the bench's notes and
        the switch's logs kept."""
        with signals_held():
            try:
                super().stop(fast, grace)
            except subprocess.TimeoutExpired:
                self.bench.note("%s: ovs-vswitchd (pid %d) did not exit "
                                "after SIGKILL" % (self.tag, self.pid()))
            except RunError as e:
                self.bench.note("cleanup: %s" % e)
            if self in self.bench.live:
                self.bench.live.remove(self)
            self.bench.keep_logs(self)

    # ---------------------------------------------------------- ports
    def add_ports(self, specs: Sequence[Tuple[str, int, List[str]]],
                  timeout: float = 120) -> float:
        """One transaction adding (name, ofport, [Interface settings]);
        returns the seconds ovs-vsctl took.  Raises RunError naming the
        ports that got an error or no OpenFlow number."""
        args: List[str] = []
        for name, ofport, sets in specs:
            args += ["--", "add-port", "br0", name, "--", "set",
                     "Interface", name, "ofport_request=%d" % ofport] + sets
        t0 = time.monotonic()
        self.vsctl(*args, timeout=timeout)
        took = time.monotonic() - t0
        names = {s[0] for s in specs}
        out = json.loads(self.vsctl("-f", "json", "--columns=name,ofport,"
                                    "error", "list", "Interface",
                                    timeout=timeout))
        bad = []
        for name, ofport, err in out["data"]:
            if name in names:
                if err not in ("", ["set", []]) or ofport in (-1, ["set",
                                                                   []]):
                    bad.append("%s: %s" % (name, err))
                names.discard(name)
        if bad or names:
            raise RunError("%s: ports not created: %s"
                           % (self.b.label, "; ".join(bad + sorted(names))))
        for name, ofport, _ in specs:
            self.ofports[name] = ofport
        return took

    def del_ports(self, names: Sequence[str], timeout: float = 120) -> float:
        args: List[str] = []
        for n in names:
            args += ["--", "--if-exists", "del-port", "br0", n]
        t0 = time.monotonic()
        self.vsctl(*args, timeout=timeout)
        for n in names:
            self.ofports.pop(n, None)
        return time.monotonic() - t0

    def add_null(self, name: str, ofport: int, index: int, size: int = 64,
                 sink: bool = False, devargs: Optional[str] = None) -> None:
        if devargs is None:
            devargs = "net_null%d" % index
            if sink:
                devargs += ",no-rx=1"
            elif size != 64:
                devargs += ",size=%d" % size
        self.add_ports([(name, ofport, ["type=dpdk",
                                        "options:dpdk-devargs=%s"
                                        % devargs])])

    def flows(self, *flows: str) -> None:
        self.ofctl("add-flows", self.mgmt, "-", input="\n".join(flows) + "\n")

    def set_iface(self, name: str, *kv: str) -> None:
        self.vsctl("set", "Interface", name, *kv)

    # ---------------------------------------------------------- readings
    def ports(self) -> Dict[str, Dict[str, Optional[int]]]:
        return parse_dump_ports(self.ofctl("dump-ports", self.mgmt))

    def snapshot(self) -> Dict[str, Any]:
        """Schedstat and every port's counters at (about) one instant; the
        dump-ports reply is built in one go by ovs-vswitchd."""
        t0 = time.monotonic_ns()
        run_ns, wait_ns = self.pmd_schedstat()
        ports = self.ports()
        t1 = time.monotonic_ns()
        run2, wait2 = self.pmd_schedstat()
        return {"t_ns": (t0 + t1) // 2, "run_ns": (run_ns + run2) // 2,
                "wait_ns": (wait_ns + wait2) // 2, "ports": ports,
                "n_pmd": len(self.pmd_tids())}

    def memory(self) -> Dict[str, int]:
        """vswitchd RSS, hugetlb mappings (kB) and DPDK heap use (B)."""
        assert self.vswitchd is not None
        pid = self.vswitchd.pid
        rss = re.search(r"VmRSS:\s+(\d+)", read_text("/proc/%d/status" % pid))
        huge = 0
        for m in re.finditer(r"(?:Private|Shared)_Hugetlb:\s+(\d+)",
                             read_text("/proc/%d/smaps" % pid)):
            huge += int(m.group(1))
        heap = 0
        try:
            heap = parse_malloc_stats(self.appctl("dpdk/get-malloc-stats"))
        except RunError:
            pass
        return {"rss_kib": int(rss.group(1)) if rss else 0,
                "hugetlb_kib": huge, "dpdk_heap_bytes": heap}

    def polled(self) -> List[str]:
        """Names of the ports whose rx queues the PMD threads poll."""
        out: List[str] = []
        for names in parse_rxq_show(
                self.appctl("dpif-netdev/pmd-rxq-show")).values():
            out += names
        return out


# ================================================================ bench
class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.quick = args.quick
        self.repeats = args.repeats or (2 if args.quick else 5)
        self.window = args.window or (1.0 if args.quick else 2.0)
        self.out = os.path.abspath(args.out)
        self.workdir = os.path.join("/tmp", "daq-bench.%d" % os.getpid())
        self.live: List[Switch] = []
        self.notes: List[str] = []
        self.n_switch = 0
        self.t0 = time.monotonic()
        self.started = datetime.datetime.now()
        self.pmd_cpus = parse_cpu_mask(args.pmd_cpu_mask)
        self.all_cpus = sorted(os.sched_getaffinity(0))
        self.other_cpus = sorted(set(self.all_cpus) - set(self.pmd_cpus))
        self.hugepages = True
        # Undo of host set-up (hugepages reserved, their mount, the
        # --no-huge runtime directories), run after the switches stop.
        self.cleanup = Cleanup()
        atexit.register(self.cleanup.run)
        self.socket_mem_mb = sum(args.socket_mem)
        self.res: Dict[str, Any] = {}
        self.perf = (shutil.which("perf") if not args.no_profile
                     else None)
        self.n_prof = 0
        tools = os.path.abspath(args.ovs_build)
        self.patched = tree_build("patched", tools, tools)
        self.stock: Optional[Build] = None
        if args.stock_vswitchd != "none":
            self.stock = build("stock", args.stock_vswitchd, tools,
                               STOCK_SCHEMA, "%s (Debian, unpatched)"
                               % args.stock_vswitchd, False)
        self.variant: Optional[Build] = None
        if args.o3_build:
            self.variant = tree_build("O3", os.path.abspath(args.o3_build),
                                      tools)
        self.base: Optional[Build] = None
        if args.base_build:
            self.base = tree_build("base", os.path.abspath(args.base_build),
                                   tools)
            self.base.daqring = False
            self.base.desc += " (the pinned base, unpatched)"

    # ---------------------------------------------------------- misc
    def note(self, text: str) -> None:
        self.notes.append(text)
        self.say("note: " + text)

    def say(self, text: str) -> None:
        if not self.args.quiet:
            sys.stderr.write("daq-bench [%4.0fs] %s\n"
                             % (time.monotonic() - self.t0, text))
            sys.stderr.flush()

    def keep_logs(self, sw: Switch) -> None:
        dest = os.path.join(self.out, "logs", sw.tag)
        os.makedirs(dest, exist_ok=True)
        for name in os.listdir(sw.dir) if os.path.isdir(sw.dir) else []:
            if name.endswith((".log", ".out")):
                src = os.path.join(sw.dir, name)
                size = os.path.getsize(src)
                with open(src, "rb") as f, \
                        open(os.path.join(dest, name), "wb") as g:
                    if size > LOG_KEEP:
                        # Thousands of daqrings log millions of lines.
                        f.seek(size - LOG_KEEP)
                        f.readline()
                        g.write(b"[daq-bench: %d bytes, only the end kept]"
                                b"\n" % size)
                    g.write(f.read())

    def switch(self, build: Build) -> Switch:
        self.n_switch += 1
        sw = Switch(self, build, "dqb%d-%d" % (os.getpid(), self.n_switch))
        self.say("starting %s switch (%s)" % (build.label, sw.tag))
        sw.start()
        return sw

    def profiler(self, sw: Switch, tid: int) -> Optional[Tuple[Any, str]]:
        """Starts `perf record` (cpu-clock samples) on one thread."""
        if self.perf is None:
            return None
        self.n_prof += 1
        data = os.path.join(sw.dir, "perf%d.data" % self.n_prof)
        p = subprocess.Popen([self.perf, "record", "-q", "-e", "cpu-clock",
                              "-t", str(tid), "-o", data],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL,
                             preexec_fn=die_with_parent)
        time.sleep(0.3)
        return p, data

    def profile_report(self, prof: Optional[Tuple[Any, str]],
                       wait: Optional[float] = None
                       ) -> Optional[List[List[Any]]]:
        """Stops a profiler() (after `wait` seconds) and returns its top
        symbols, or None."""
        if prof is None:
            return None
        p, data = prof
        try:
            if wait:
                time.sleep(wait)
            p.send_signal(signal.SIGINT)
            p.wait(30)
            txt = run([self.perf, "report", "-i", data, "--stdio",
                       "--no-children", "--sort", "symbol"], timeout=120)
        except (RunError, subprocess.TimeoutExpired) as e:
            stop_process(p)
            self.note("perf: %s" % e)
            return None
        finally:
            try:
                os.unlink(data)
            except OSError:
                pass
        return parse_perf_report(txt) or None

    def settle(self, seconds: Optional[float] = None) -> None:
        time.sleep(self.args.warmup if seconds is None else seconds)

    def fwd_window(self, sw: Switch, ins: Sequence[str],
                   outs: Sequence[str],
                   seconds: Optional[float] = None) -> Dict[str, Any]:
        """One measurement window of forwarding through `sw`."""
        sw.alive()
        sw.appctl("dpif-netdev/pmd-stats-clear")
        a = sw.snapshot()
        time.sleep(self.window if seconds is None else seconds)
        perf = sw.appctl("dpif-netdev/pmd-perf-show")
        stats = sw.appctl("dpif-netdev/pmd-stats-show")
        b = sw.snapshot()
        ins_of = [str(sw.ofports[p]) for p in ins]
        outs_of = [str(sw.ofports[p]) for p in outs]
        m = fwd_metrics(a, b, pmd_totals(parse_pmd_stats(stats)),
                        parse_pmd_perf(perf), ins_of, outs_of)
        if m["cycles"] is None:
            raise RunError("%s: nothing was forwarded in the window (in %d,"
                           " out %d packets)" % (sw.b.label, m["in_packets"],
                                                 m["out_packets"]))
        return m

    @staticmethod
    def collect(ws: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
        return {"cycles": summarize([w["cycles"] for w in ws]),
                "cycles_tsc": summarize([w["cycles_tsc"] for w in ws]),
                "cycles_per_rx": summarize([w["cycles_per_rx"] for w in ws]),
                "mpps": summarize([w["mpps"] for w in ws]),
                "passes": summarize([w["passes"] for w in ws]),
                "fwd_per_iteration": summarize(
                    [w["rx_per_iteration"] / w["passes"] for w in ws
                     if w.get("rx_per_iteration") and w["passes"]]),
                "pmd_share": summarize([w["pmd_share"] for w in ws]),
                "windows": list(ws)}

    # ---------------------------------------------------------- topology
    SINK, SRC, RING = 1, 2, 10

    # Flows match in_port and, with the default "emc" lookup, dl_dst too:
    # the datapath flow then goes through the EMC, as the ip,nw_dst
    # steering rules of real daqrings do.  Flows on in_port alone take
    # dpif-netdev's cheaper "simple match" path instead.
    LOOKUP_MATCH = {"emc": ",dl_dst=00:00:00:00:00:00", "simple": ""}
    lookup = "emc"

    def fl(self, inp: int, out: int) -> str:
        return "in_port=%d%s,actions=output:%d" % (
            inp, self.LOOKUP_MATCH[self.lookup], out)

    def reset_flows(self, sw: Switch, *flows: str) -> None:
        sw.ofctl("del-flows", sw.mgmt)
        sw.flows("priority=0,actions=drop", *flows)

    def direct_topology(self, sw: Switch, size: int = 64,
                        src_index: int = 0) -> None:
        sw.add_null("sink", self.SINK, 99, sink=True,
                    devargs=self.args.sink_devargs)
        sw.add_null("src", self.SRC, src_index, size=size,
                    devargs=self.args.src_devargs)
        self.reset_flows(sw, self.fl(self.SRC, self.SINK))

    def set_mode(self, sw: Switch, mode: str, burst: int = 32) -> None:
        """direct: src -> sink, no daqring; daqring: src -> ring -> sink."""
        if mode == "direct":
            sw.flows(self.fl(self.SRC, self.SINK))
            if "ring" in sw.ofports:
                sw.del_ports(["ring"])
        else:
            if "ring" not in sw.ofports:
                sw.add_ports([("ring", self.RING, [
                    "type=daqring", "options:ring-size=4096",
                    "options:max-burst=%d" % burst,
                    "options:poll-interval=0"])])
            sw.flows(self.fl(self.RING, self.SINK),
                     self.fl(self.SRC, self.RING))
        self.settle()

    def mode_window(self, sw: Switch, mode: str) -> Dict[str, Any]:
        ins = ["src"] + (["ring"] if mode == "daqring" else [])
        return self.fwd_window(sw, ins, ["sink"])

    # ---------------------------------------------------------- hop
    def part_hop(self) -> None:
        lookups = self.args.lookups
        out: Dict[str, Any] = {"repeats": self.repeats,
                               "window_s": self.window, "sizes": {},
                               "lookups": lookups, "by_lookup": {},
                               "profiles": {}}
        self.res["hop"] = out
        sw = self.switch(self.patched)
        try:
            sw.add_null("sink", self.SINK, 99, sink=True,
                        devargs=self.args.sink_devargs)
            self.reset_flows(sw)
            for i, size in enumerate(self.args.sizes):
                sw.add_null("src", self.SRC, i, size=size,
                            devargs=self.args.src_devargs)
                for lookup in lookups:
                    self.lookup = lookup
                    self.reset_flows(sw)
                    d = self.hop_block(sw, size, lookup, out["profiles"])
                    out["by_lookup"].setdefault(lookup, {})[str(size)] = d
                    if lookup == lookups[0]:
                        out["sizes"][str(size)] = d
                self.lookup = "emc"
                self.set_mode(sw, "direct")
                sw.del_ports(["src"])
        finally:
            self.lookup = "emc"
            sw.stop()
        out["analysis"] = hop_analysis(out)

    def hop_block(self, sw: Switch, size: int, lookup: str,
                  profiles: Dict[str, Any]) -> Dict[str, Any]:
        ws: Dict[str, List[Dict[str, Any]]] = {"direct": [], "daqring": []}
        for r in range(self.repeats):
            order = (["direct", "daqring"] if r % 2 == 0
                     else ["daqring", "direct"])
            for mode in order:
                self.set_mode(sw, mode)
                w = self.mode_window(sw, mode)
                ws[mode].append(w)
                self.say("hop %d B %s %s: %.1f cycles/pkt, %.2f Mpps, PMD "
                         "share %.0f%%" % (size, lookup, mode, w["cycles"],
                                           w["mpps"], 100 * w["pmd_share"]))
                key = "%s_%s_%d" % (mode, lookup, size)
                if (r == self.repeats - 1 and size == min(self.args.sizes)
                        and key not in profiles):
                    top = self.profile_report(self.profiler(
                        sw, sw.pmd_tids()[0]), wait=2.0)
                    if top:
                        profiles[key] = top
        d = {"direct": self.collect(ws["direct"]),
             "daqring": self.collect(ws["daqring"]), "lookup": lookup}
        d["ratio"] = summarize(ratios(
            [w["cycles"] for w in ws["daqring"]],
            [w["cycles"] for w in ws["direct"]]))
        d["ratio_tsc"] = summarize(ratios(
            [w["cycles_tsc"] for w in ws["daqring"]],
            [w["cycles_tsc"] for w in ws["direct"]]))
        d["shares"] = [w["pmd_share"] for m in ws.values() for w in m]
        return d

    # ---------------------------------------------------------- scale
    def ring_specs(self, lo: int, hi: int,
                   ring_size: int) -> List[Tuple[str, int, List[str]]]:
        return [("r%04d" % i, 1000 + i,
                 ["type=daqring", "options:ring-size=%d" % ring_size,
                  "options:max-burst=32", "options:poll-interval=0"])
                for i in range(lo, hi)]

    def wait_polled(self, sw: Switch, names: Sequence[str],
                    timeout: float) -> float:
        """Seconds until the PMD threads poll every port in names."""
        t0 = time.monotonic()
        want = set(names)
        while True:
            if want <= set(sw.polled()):
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                raise RunError("%s: after %.0f s the PMD does not poll all "
                               "%d new ports" % (sw.b.label, timeout,
                                                 len(want)))
            sw.alive()
            time.sleep(0.2)

    def scale_switch(self, n_act: int) -> Tuple[Switch, List[str]]:
        """A switch with the sink and n_act sources (net_null0..), no
        daqrings yet; returns it and the source names."""
        sw = self.switch(self.patched)
        sw.add_null("sink", self.SINK, 99, sink=True,
                    devargs=self.args.sink_devargs)
        sw.flows("priority=0,actions=drop")
        srcs = []
        for i in range(n_act):
            sw.add_null("s%d" % i, self.SRC + i, i)
            srcs.append("s%d" % i)
        return sw, srcs

    def scale_flows(self, sw: Switch, n_act: int) -> None:
        fl = []
        for i in range(n_act):
            fl.append(self.fl(1000 + i, self.SINK))
            fl.append(self.fl(self.SRC + i, 1000 + i))
        sw.flows(*fl)

    def scale_windows(self, sw: Switch, n: int, ins: List[str], k: int,
                      ws: Dict[int, List[Dict[str, Any]]],
                      out: Dict[str, Any]) -> None:
        out["order"].append(n)
        self.settle(1.0)
        for _ in range(k):
            w = self.fwd_window(sw, ins, ["sink"])
            ws.setdefault(n, []).append(w)
            self.say("scale %d configured: %.1f cycles/pkt, %.2f Mpps, "
                     "PMD share %.0f%%" % (n, w["cycles"], w["mpps"],
                                           100 * w["pmd_share"]))

    def scale_big(self, n_max: int, n_act: int, ring_size: int,
                  ws: Dict[int, List[Dict[str, Any]]], out: Dict[str, Any],
                  quiet_log: bool) -> None:
        """A fresh switch: n_max daqrings in one transaction (timed, memory
        before and after), then n_act of them fed by sources.  quiet_log:
        dpif_netdev logs only warnings (not every rx queue assignment)."""
        sw, srcs = self.scale_switch(n_act)
        try:
            if quiet_log:
                for dest in ("file", "syslog"):
                    sw.appctl("vlog/set", "dpif_netdev:%s:warn" % dest)
            self.settle(1.0)
            mem0 = sw.memory()
            log = os.path.join(sw.dir, "ovs-vswitchd.log")
            log0 = os.path.getsize(log)
            specs = self.ring_specs(0, n_max, ring_size)
            self.say("scale: creating %d daqrings in one transaction%s"
                     % (n_max, " (dpif_netdev logging at warn)"
                        if quiet_log else ""))
            t0 = time.monotonic()
            vs = sw.add_ports(specs, timeout=self.args.vsctl_timeout)
            polled = self.wait_polled(sw, [s[0] for s in specs],
                                      self.args.vsctl_timeout)
            total = time.monotonic() - t0
            log_bytes = os.path.getsize(log) - log0
            assigned = 0
            with open(log, "rb") as f:
                f.seek(log0)
                for line in f:
                    assigned += b" assigned port " in line
            self.settle(1.0)
            mem1 = sw.memory()
            per = {"rss_kib": (mem1["rss_kib"] - mem0["rss_kib"]) / n_max,
                   "hugetlb_kib": (mem1["hugetlb_kib"]
                                   - mem0["hugetlb_kib"]) / n_max,
                   "dpdk_heap_kib": (mem1["dpdk_heap_bytes"]
                                     - mem0["dpdk_heap_bytes"])
                   / 1024 / n_max}
            out["creates"].append({
                "n": n_max, "ring_size": ring_size, "vsctl_s": vs,
                "total_s": total, "quiet_log": quiet_log,
                "polled_after_vsctl_s": polled, "memory_before": mem0,
                "memory_after": mem1, "per_ring": per,
                "log_bytes": log_bytes, "log_assigned_lines": assigned})
            self.say("scale: %d daqrings: ovs-vsctl %.1f s, polled after "
                     "%.1f s; %d rxq-assignment log lines; per ring RSS "
                     "%.1f KiB, DPDK heap %.1f KiB"
                     % (n_max, vs, total, assigned, per["rss_kib"],
                        per["dpdk_heap_kib"]))
            self.scale_flows(sw, n_act)
            ins = srcs + ["r%04d" % i for i in range(n_act)]
            self.scale_windows(sw, n_max, ins, max(2, self.repeats // 2),
                               ws, out)
            if "pmd_%d" % n_max not in out["profiles"]:
                top = self.profile_report(self.profiler(
                    sw, sw.pmd_tids()[0]), wait=2.0)
                if top:
                    out["profiles"]["pmd_%d" % n_max] = top
        finally:
            # Deleting thousands of ports one reconfiguration at a time
            # takes minutes (see the summary): SIGTERM instead.
            sw.stop(fast=True)
            if out["creates"]:
                out["creates"][-1]["sigterm_stop_s"] = sw.stop_s

    def scale_parts(self, n_max: int, n_mid: int, n_act: int,
                    ring_size: int, ws: Dict[int, List[Dict[str, Any]]],
                    out: Dict[str, Any]) -> None:
        # 1. n_max configured, in a switch of its own (creation timed with
        # the default logging).
        self.scale_big(n_max, n_act, ring_size, ws, out, False)
        # 2. n_act and n_mid configured, alternating (cheap transitions).
        sw, srcs = self.scale_switch(n_act)
        try:
            sw.add_ports(self.ring_specs(0, n_act, ring_size))
            self.scale_flows(sw, n_act)
            ins = srcs + ["r%04d" % i for i in range(n_act)]
            mids = ["r%04d" % i for i in range(n_act, n_mid)]
            for r in range(max(2, (self.repeats + 1) // 2)):
                for n in ((n_act, n_mid) if r % 2 == 0 else (n_mid, n_act)):
                    if n == n_mid and mids[0] not in sw.ofports:
                        t0 = time.monotonic()
                        took = sw.add_ports(
                            self.ring_specs(n_act, n_mid, ring_size),
                            timeout=self.args.vsctl_timeout)
                        self.wait_polled(sw, mids, self.args.vsctl_timeout)
                        out["adds"].append({
                            "n": len(mids), "vsctl_s": took,
                            "total_s": time.monotonic() - t0})
                    elif n == n_act and mids[0] in sw.ofports:
                        took = sw.del_ports(mids,
                                            timeout=self.args.vsctl_timeout)
                        out["deletes"].append({"n": len(mids), "s": took})
                    self.scale_windows(sw, n, ins, 1, ws, out)
            top = self.profile_report(self.profiler(sw, sw.pmd_tids()[0]),
                                      wait=2.0)
            if top:
                out["profiles"]["pmd_%d" % n_mid] = top
            if mids[0] in sw.ofports:
                sw.del_ports(mids, timeout=self.args.vsctl_timeout)
            top = self.profile_report(self.profiler(sw, sw.pmd_tids()[0]),
                                      wait=2.0)
            if top:
                out["profiles"]["pmd_%d" % n_act] = top
        finally:
            sw.stop()
        # 3. n_max again at the end: brackets the drift; created with
        # dpif_netdev logging only warnings.
        self.scale_big(n_max, n_act, ring_size, ws, out, True)

    def part_scale(self) -> None:
        n_max, n_mid, n_act = self.args.scale_counts
        ring_size = self.args.scale_ring_size
        out: Dict[str, Any] = {"counts": {}, "order": [], "creates": [],
                               "adds": [], "deletes": [], "active": n_act,
                               "mid": n_mid, "max": n_max,
                               "ring_size": ring_size, "profiles": {},
                               "lookup": "simple"}
        self.res["scale"] = out
        ws: Dict[int, List[Dict[str, Any]]] = {}
        self.scale_parts(n_max, n_mid, n_act, ring_size, ws, out)
        for n, lst in ws.items():
            out["counts"][str(n)] = self.collect(lst)
            out["counts"][str(n)]["shares"] = [w["pmd_share"] for w in lst]
        base = out["counts"][str(n_act)]["cycles"]["median"]
        for n in (n_mid, n_max):
            out["ratio_%d" % n] = summarize(
                [w["cycles"] / base for w in ws[n]])
        if n_max != 2048:
            out["ratio_2048"] = out["ratio_%d" % n_max]
        loud = [c for c in out["creates"] if not c["quiet_log"]]
        quiet = [c for c in out["creates"] if c["quiet_log"]]
        out["create"] = dict(loud[0] if loud else out["creates"][0])
        if quiet:
            out["create_quiet_log"] = quiet[0]
        out["shares"] = [w["pmd_share"] for lst in ws.values() for w in lst]
        out["analysis"] = scale_analysis(out)

    # ---------------------------------------------------------- waiting
    def part_waiting(self) -> None:
        """8 active (unshaped) daqrings alone, then with n_max - 8 more
        that are shaped and backlogged, each waiting for its next interval
        (max-burst 1 per second, filled once by a source that outputs to
        all of them), in one switch: cycles per forwarded packet of the
        active ones, and how often the waiting ones are polled."""
        n_max, _, n_act = self.args.scale_counts
        fill = self.args.waiting_fill
        out: Dict[str, Any] = {"active": n_act, "max": n_max,
                               "ring_size": 2 * fill, "fill": fill,
                               "counts": {}, "order": []}
        self.res["waiting"] = out
        ws: Dict[int, List[Dict[str, Any]]] = {}
        sw, srcs = self.scale_switch(n_act)
        try:
            sw.add_ports(self.ring_specs(0, n_act, 4096))
            self.scale_flows(sw, n_act)
            ins = srcs + ["r%04d" % i for i in range(n_act)]
            k = max(2, self.repeats // 2)
            self.scale_windows(sw, n_act, ins, k, ws, out)
            names = ["r%04d" % i for i in range(n_act, n_max)]
            shaped = ["type=daqring", "options:ring-size=%d" % (2 * fill),
                      "options:max-burst=1", "options:poll-interval=1000000"]
            sw.add_ports([(n, 1000 + i + n_act, shaped)
                          for i, n in enumerate(names)],
                         timeout=self.args.vsctl_timeout)
            self.wait_polled(sw, names, self.args.vsctl_timeout)
            # Fill: one source outputs every packet to all waiting rings.
            sw.add_null("fill", 900, 30)
            sw.flows("priority=10,in_port=900,actions=" + ",".join(
                "output:%d" % (1000 + i) for i in range(n_act, n_max)))
            deadline = time.monotonic() + 60
            while True:
                st = sw.appctl("netdev-daqring/show", names[-1])
                m = re.search(r"^%s\s+\d+\s+(\d+)" % names[-1], st, re.M)
                if m and int(m.group(1)) >= fill:
                    break
                if time.monotonic() > deadline:
                    raise RunError("waiting: the rings did not fill")
                time.sleep(0.2)
            sw.del_ports(["fill"])
            sw.ofctl("del-flows", sw.mgmt, "in_port=900")
            polls0 = int(sw.appctl("coverage/read-counter",
                                   "daqring_wait_poll") or 0)
            t0 = time.monotonic()
            self.scale_windows(sw, n_max, ins, k, ws, out)
            polls1 = int(sw.appctl("coverage/read-counter",
                                   "daqring_wait_poll") or 0)
            secs = time.monotonic() - t0
            out["wait_polls_per_s"] = (polls1 - polls0) / secs
            st = sw.appctl("netdev-daqring/show", names[-1])
            m = re.search(r"^%s\s+\d+\s+(\d+)" % names[-1], st, re.M)
            out["backlog_after"] = int(m.group(1)) if m else None
        finally:
            sw.stop(fast=True)
        for n, lst in ws.items():
            out["counts"][str(n)] = self.collect(lst)
            out["counts"][str(n)]["shares"] = [w["pmd_share"] for w in lst]
        base = out["counts"][str(n_act)]["cycles"]["median"]
        out["ratio"] = summarize([w["cycles"] / base for w in ws[n_max]])
        out["shares"] = [w["pmd_share"] for lst in ws.values() for w in lst]
        self.say("waiting: %d shaped backlogged / %d alone: %.2f x cycles "
                 "per packet; waiting rings polled %.0f times per second"
                 % (n_max, n_act, out["ratio"]["median"],
                    out["wait_polls_per_s"]))

    # ---------------------------------------------------------- shaping
    def part_shaping(self) -> None:
        grid = [(us, b) for us in self.args.shaping_intervals
                for b in self.args.shaping_bursts]
        reps = 1 if self.quick else max(1, min(self.repeats, 3))
        min_int = 100 if self.quick else 200
        out: Dict[str, Any] = {"ring_size": 4096, "window_s": self.window,
                               "min_intervals": min_int, "repeats": reps,
                               "points": []}
        self.res["shaping"] = out
        samples: Dict[Tuple[int, int], List[Tuple[float, float]]] = {
            p: [] for p in grid}
        sw = self.switch(self.patched)
        try:
            self.direct_topology(sw)
            self.set_mode(sw, "daqring")
            ring = str(sw.ofports["ring"])
            for r in range(reps):
                for us, b in (grid if r % 2 == 0 else grid[::-1]):
                    sw.set_iface("ring", "options:max-burst=%d" % b,
                                 "options:poll-interval=%d" % us)
                    self.settle(max(0.3, 50 * us / 1e6))
                    secs = max(self.window, min_int * us / 1e6)
                    a = sw.snapshot()
                    time.sleep(secs)
                    z = sw.snapshot()
                    wall = (z["t_ns"] - a["t_ns"]) / 1e9
                    deq = delta(a["ports"], z["ports"], ring, "rx")
                    share = window_share(a, z)
                    samples[(us, b)].append((deq / wall, share))
                    self.say("shaping US=%d B=%d: %.4f of configured, PMD "
                             "share %.0f%%" % (us, b, deq / wall
                                               / (b * 1e6 / us),
                                               100 * share))
            self.shaping_bytes(sw, out, reps)
        finally:
            sw.stop()
        for us, b in grid:
            conf = b * 1e6 / us
            s = samples[(us, b)]
            out["points"].append({
                "poll_interval_us": us, "max_burst": b,
                "configured_pps": conf,
                "achieved_pps": summarize([x[0] for x in s]),
                "ratio": summarize([x[0] / conf for x in s]),
                "shares": [x[1] for x in s]})

    def shaping_bytes(self, sw: Switch, out: Dict[str, Any],
                      reps: int) -> None:
        """max-rate points: the ring of part_shaping with byte shaping, fed
        frames of each size in --shaping-frames by a source of that size;
        the achieved rate counts the frames' overhead as the shaper
        does."""
        ovh, burst = 24, self.args.shaping_byte_burst
        out.update(byte_max_burst=burst, frame_overhead=ovh,
                   byte_points=[], byte_skipped=[])
        ring = str(sw.ofports["ring"])
        if self.args.src_devargs is not None:
            out["byte_note"] = ("not run: the source of --src-devargs has "
                                "no frame size to choose")
            self.note("shaping: max-rate points " + out["byte_note"])
            return
        for k, size in enumerate(self.args.shaping_frames):
            rates = []
            for rate in self.args.shaping_rates:
                fps = rate / ((size + ovh) * 8)
                if fps > self.args.shaping_max_fps:
                    out["byte_skipped"].append("%s of %d B" % (
                        fmt_bps(rate), size))
                else:
                    rates.append(rate)
            if not rates:
                continue
            # A source of this frame size in place of the previous one (a
            # new vdev name: DPDK keeps the old one's name until detached).
            sw.del_ports(["src"])
            sw.add_null("src", self.SRC, 40 + k, size=size)
            samples: Dict[int, List[Tuple[float, float]]] = {
                r: [] for r in rates}
            for r in range(reps):
                for rate in (rates if r % 2 == 0 else rates[::-1]):
                    sw.set_iface("ring", "options:poll-interval=0",
                                 "options:max-burst=%d" % burst,
                                 "options:frame-overhead=%d" % ovh,
                                 "options:max-rate=%d" % rate)
                    fps = rate / ((size + ovh) * 8)
                    self.settle(max(0.5, 2000 / fps))
                    secs = max(self.window, 500 / fps)
                    a = sw.snapshot()
                    time.sleep(secs)
                    z = sw.snapshot()
                    wall = (z["t_ns"] - a["t_ns"]) / 1e9
                    bits = 8 * (delta(a["ports"], z["ports"], ring,
                                      "rx_bytes")
                                + ovh * delta(a["ports"], z["ports"], ring,
                                              "rx"))
                    share = window_share(a, z)
                    samples[rate].append((bits / wall, share))
                    self.say("shaping max-rate %s, %d B: %.4f of "
                             "configured, PMD share %.0f%%"
                             % (fmt_bps(rate), size, bits / wall / rate,
                                100 * share))
            for rate in rates:
                sm = samples[rate]
                out["byte_points"].append({
                    "max_rate_bps": rate, "frame_len": size,
                    "max_burst": burst,
                    "configured_fps": rate / ((size + ovh) * 8),
                    "achieved_bps": summarize([x[0] for x in sm]),
                    "ratio": summarize([x[0] / rate for x in sm]),
                    "shares": [x[1] for x in sm]})
        sw.set_iface("ring", "options:max-rate=0")

    # ---------------------------------------------------------- fairness
    def part_fairness(self) -> None:
        n = 8
        out: Dict[str, Any] = {"rings": n, "scenarios": []}
        self.res["fairness"] = out
        scen = [("unshaped", "8 rings, max-burst 8 unshaped, sources burst "
                 "32", 8, 0),
                ("shaped", "8 rings, max-burst 32 per 100 us", 32, 100)]
        sw = self.switch(self.patched)
        try:
            sw.add_null("sink", self.SINK, 99, sink=True,
                        devargs=self.args.sink_devargs)
            sw.flows("priority=0,actions=drop")
            fl = []
            for i in range(n):
                sw.add_null("s%d" % i, self.SRC + i, i)
                fl.append(self.fl(self.SRC + i, self.RING + i))
                fl.append(self.fl(self.RING + i, self.SINK))
            sw.add_ports([("q%d" % i, self.RING + i,
                           ["type=daqring", "options:ring-size=4096"])
                          for i in range(n)])
            sw.flows(*fl)
            sw.reset_pmd_tids()
            reps = max(2, self.repeats if not self.quick else 2)
            for name, desc, burst, us in scen:
                for i in range(n):
                    sw.set_iface("q%d" % i, "options:max-burst=%d" % burst,
                                 "options:poll-interval=%d" % us)
                self.settle(1.0)
                jains, shares, smin, smax, drops = [], [], 1.0, 0.0, 0
                for _ in range(reps):
                    a = sw.snapshot()
                    time.sleep(self.window)
                    z = sw.snapshot()
                    deq = [delta(a["ports"], z["ports"], str(self.RING + i),
                                 "rx") for i in range(n)]
                    drops += sum(delta(a["ports"], z["ports"],
                                       str(self.RING + i), "tx_drop")
                                 for i in range(n))
                    j = jain(deq)
                    jains.append(j)
                    tot = sum(deq) or 1
                    smin = min(smin, min(deq) / tot)
                    smax = max(smax, max(deq) / tot)
                    shares.append(window_share(a, z))
                    self.say("fairness %s: Jain %.5f, PMD share %.0f%%"
                             % (name, j, 100 * shares[-1]))
                out["scenarios"].append({
                    "name": name, "description": desc, "max_burst": burst,
                    "poll_interval_us": us, "jain": summarize(jains),
                    "share_min": smin, "share_max": smax,
                    "ring_full_drops": drops, "backlogged": drops > 0,
                    "shares": shares})
        finally:
            sw.stop()

    # ---------------------------------------------------------- builds
    def part_builds(self) -> None:
        builds: List[Build] = []
        out: Dict[str, Any] = {"runs": [], "orders": [], "per_build": {}}
        self.res["builds"] = out
        if self.stock is not None:
            err = self.stock.check()
            if err:
                out["regression_note"] = "stock build unusable: %s" % err
                self.note(out["regression_note"])
            else:
                builds.append(self.stock)
        else:
            out["regression_note"] = "skipped (--stock-vswitchd none)"
        if self.base is not None:
            err = self.base.check()
            if err:
                out["base_note"] = "base build unusable: %s" % err
                self.note(out["base_note"])
            else:
                builds.append(self.base)
        else:
            out["base_note"] = (self.args.base_note
                                or "unpatched same-flags build not given")
        builds.append(self.patched)
        if self.variant is not None:
            err = self.variant.check()
            if err:
                out["opt_note"] = "variant build unusable: %s" % err
                self.note(out["opt_note"])
            else:
                builds.append(self.variant)
        else:
            out["opt_note"] = self.args.o3_note or "-O3 build not given"
        if len(builds) < 2:
            self.note("builds: only one build, nothing to compare")
            return
        runs: Dict[str, List[Dict[str, Any]]] = {b.label: [] for b in builds}
        for r in range(self.repeats):
            order = builds if r % 2 == 0 else builds[::-1]
            out["orders"].append([b.label for b in order])
            for b in order:
                sw = self.switch(b)
                try:
                    self.direct_topology(sw)
                    self.settle()
                    rec = {"build": b.label, "repeat": r}
                    rec["direct"] = self.mode_window(sw, "direct")
                    if b.daqring:
                        self.set_mode(sw, "daqring")
                        rec["daqring"] = self.mode_window(sw, "daqring")
                finally:
                    sw.stop()
                runs[b.label].append(rec)
                out["runs"].append(rec)
                self.say("builds %s: direct %.1f%s cycles/pkt, PMD share "
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
            assert self.variant is not None
            out["opt"] = opt_verdict(
                runs["patched"], runs["O3"],
                opt_level(parse_configure_cflags(read_text(os.path.join(
                    self.args.ovs_build, "config.log")))),
                opt_level(parse_configure_cflags(read_text(os.path.join(
                    self.args.o3_build, "config.log")))))

    # ---------------------------------------------------------- incast
    def incast_run(self, cmd: List[str], d: str, name: str,
                   plots: bool) -> Optional[Dict[str, Any]]:
        """One daq-incast run; its JSON, or None (error noted)."""
        js = os.path.join(d, "%s.json" % name)
        c = cmd + ["--json", js, "--log-dir", os.path.join(d, "logs-" + name)]
        if plots:
            c += ["--plot-dir", os.path.join(d, "plots-" + name)]
        with open(os.path.join(d, "%s.out" % name), "w") as log:
            p = subprocess.Popen(c, stdout=log, stderr=subprocess.STDOUT,
                                 preexec_fn=self.incast_preexec)
            try:
                rc = p.wait(self.args.incast_timeout)
            except subprocess.TimeoutExpired:
                stop_process(p, grace=60)
                rc = -1
            except BaseException:
                stop_process(p, grace=60)
                raise
        if rc != 0 or not os.path.exists(js):
            self.note("daq-incast %s exited %d (see %s)" % (
                name, rc, rel(os.path.join(d, "%s.out" % name))))
            return None
        with open(js) as f:
            data: Dict[str, Any] = json.load(f)
        return data

    def part_incast(self) -> None:
        runs = self.args.incast_runs or (1 if self.quick else 3)
        d = os.path.join(self.out, "incast")
        os.makedirs(d, exist_ok=True)
        extra = shlex.split(self.args.incast_args or "")
        if self.quick and "--events" not in extra:
            extra += ["--events", "15"]
        base = [sys.executable, tool_path("daq-incast") or "daq-incast",
                "--ovs-build", os.path.abspath(self.args.ovs_build),
                "--pmd-cpu-mask", self.args.pmd_cpu_mask, "-q"]

        def show(cmd: List[str]) -> str:
            return " ".join(["utilities/daq-incast"]
                            + [rel_top(x) if x.startswith("/") else x
                               for x in cmd[2:]])
        out: Dict[str, Any] = {"runs": 0, "dir": rel_top(d),
                               "command": show(base + extra),
                               "files": [], "modes": {}}
        self.res["incast"] = out
        data = []
        for i in range(runs):
            self.say("incast run %d/%d" % (i + 1, runs))
            r = self.incast_run(base + extra, d, "run%d" % (i + 1),
                                i == runs - 1)
            if r is None:
                out["error"] = self.notes[-1]
                break
            data.append(r)
            out["files"].append(rel_top(os.path.join(d, "run%d.json"
                                                     % (i + 1))))
            out["runs"] += 1
        out.update(incast_summary(data))
        if data:
            out["ideal_bps"] = data[0].get("ideal", {}).get("goodput_bps")
            out["ring_rate_fraction"] = data[0].get("config", {}).get(
                "ring_rate_fraction")
        deep = shlex.split(self.args.incast_deep_args or "")
        if deep and not self.quick and not out.get("error"):
            self.say("incast deeper collapse: %s" % " ".join(deep))
            r = self.incast_run(base + extra + deep, d, "deep", True)
            if r is not None:
                out["deep"] = incast_summary([r])
                out["deep"]["command"] = show(base + extra + deep)
                out["deep"]["ideal_bps"] = r.get("ideal", {}).get(
                    "goodput_bps")
        out["analysis"] = incast_analysis(out)

    def incast_preexec(self) -> None:
        """daq-incast places its own threads: give it all our CPUs back."""
        die_with_parent()
        os.sched_setaffinity(0, self.all_cpus)

    # ---------------------------------------------------------- driver
    def check_host(self) -> None:
        if os.geteuid() != 0:
            raise SystemExit("daq-bench: needs root (DPDK, namespaces)")
        err = self.patched.check()
        if err:
            raise SystemExit("daq-bench: %s (run 'make' first)" % err)
        need = self.socket_mem_mb + 512
        why = None
        if self.args.hugepages == "off":
            self.hugepages = False
        else:
            why = hugepages.reserve(need, os.path.join(self.workdir,
                                                       "hugepages"),
                                    self.cleanup)
        if why is not None and self.args.hugepages == "require":
            self.cleanup.run()
            raise SystemExit("daq-bench: hugepages unavailable: %s" % why)
        elif why is not None:
            self.hugepages = False
            self.note("%s: running with --no-huge, cycle counts are higher "
                      "than with hugepages" % why)
        if not self.other_cpus:
            self.note("no CPU left outside the PMD mask: the PMD shares "
                      "its core with everything else")
        else:
            os.sched_setaffinity(0, self.other_cpus)
        others = other_vswitchd()
        if others:
            self.note("other ovs-vswitchd processes are running (%s): "
                      "they may share the PMD's core, see the PMD share "
                      "of each number" % ", ".join(others))

    def result(self, interrupted: bool) -> Dict[str, Any]:
        builds = {"patched": self.patched.desc}
        if self.stock:
            builds["stock"] = self.stock.desc
        if self.variant:
            builds["O3"] = self.variant.desc
        if self.base:
            builds["base"] = self.base.desc
        self.res_machine["loadavg_end"] = loadavg()
        res: Dict[str, Any] = {
            "schema": SCHEMA, "version": VERSION,
            "command": " ".join(["utilities/daq-bench"] + self.argv),
            "quick": self.quick, "interrupted": interrupted,
            "started": self.started.isoformat(timespec="seconds"),
            "duration_s": time.monotonic() - self.t0,
            "machine": self.res_machine, "binaries": builds,
            "source": source_state(),
            "config": {k: v for k, v in vars(self.args).items()},
            "repeats": self.repeats, "window_s": self.window,
            "notes": self.notes}
        res.update(self.res)
        try:
            res["verdicts"] = verdicts(res)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
            self.note("internal error while judging the results: %r" % e)
            res["verdicts"] = []
        return res

    def write(self, res: Dict[str, Any]) -> None:
        os.makedirs(self.out, exist_ok=True)
        with open(os.path.join(self.out, "bench.json"), "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)
            f.write("\n")
        try:
            md = markdown(res)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
            md = "# ovs-daqring benchmark results\n\nsummary failed: %r\n" % e
        with open(os.path.join(self.out, "summary.md"), "w") as f:
            f.write(md)
        if self.args.doc:
            with open(self.args.doc, "w") as f:
                f.write(md)
        self.say("results in %s (bench.json, summary.md)" % self.out)

    def main(self, argv: List[str]) -> int:
        self.argv = argv
        self.check_host()
        self.res_machine = machine(self.pmd_cpus, self.other_cpus,
                                   "2 MiB pages, dpdk-socket-mem %s MB"
                                   % self.args.socket_mem_text
                                   if self.hugepages else
                                   "none (--no-huge)")
        dpdk = build_dpdk_version(os.path.join(
            os.path.abspath(self.args.ovs_build), "vswitchd", "ovs-vswitchd"))
        if dpdk:
            self.res_machine["dpdk"] = dpdk
        os.makedirs(self.workdir, exist_ok=True)
        os.makedirs(self.out, exist_ok=True)
        interrupted = False
        failed = False
        try:
            for part in self.args.parts:
                if part == "incast" and self.args.skip_incast:
                    continue
                others = other_vswitchd()
                # net_null sources send identical frames, whose hash does
                # not depend on the port: with several sources, EMC entries
                # would evict each other, so those parts use in_port flows.
                self.lookup = ("simple" if part in ("scale", "waiting",
                                                    "fairness")
                               else "emc")
                self.say("part %s%s" % (part, "; other ovs-vswitchd "
                                        "running: " + ", ".join(others)
                                        if others else ""))
                self.res_machine.setdefault(
                    "other_vswitchd_by_part", {})[part] = others
                try:
                    getattr(self, "part_" + part)()
                except RunError as e:
                    failed = True
                    self.note("%s failed: %s" % (part, e))
                    self.res.setdefault(part, {})["error"] = str(e)
                    for sw in list(self.live):
                        sw.stop()
        except Interrupted as e:
            interrupted = True
            self.note("interrupted (signal %d)" % e.signum)
        finally:
            with signals_held():
                signal.alarm(0)
                for sw in list(self.live):
                    sw.stop()
                self.cleanup.run()
                shutil.rmtree(self.workdir, ignore_errors=True)
        res = self.result(interrupted)
        self.write(res)
        for v in res["verdicts"]:
            self.say("%-4s %s: %s" % ({True: "MET", False: "NOT",
                                       None: "--"}[v["met"]], v["key"],
                                      v["value"]))
        if interrupted:
            return 130
        return 1 if failed else 0


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
    """Goodput, ideal ratio, p99, timeouts and PMD share per mode over
    daq-incast runs, and the daqring / stock goodput ratio per run."""
    modes: Dict[str, Dict[str, List[float]]] = {}
    per_run_ratio = []
    for d in data:
        by = {}
        for m in d.get("modes", []):
            if m.get("status") != "ok":
                continue
            by[m["mode"]] = m
            x = modes.setdefault(m["mode"], {"goodput_bps": [],
                                             "ideal_ratio": [], "p99_s": [],
                                             "timeouts": [], "shares": []})
            x["goodput_bps"].append(m["goodput_bps"])
            x["ideal_ratio"].append(m["ideal_ratio"])
            x["p99_s"].append(m["collection_time_s"]["p99"])
            x["timeouts"].append(m["timeouts"])
            x["shares"].append(m.get("pmd_cpu_share"))
        if "stock" in by and "daqring" in by and by["stock"]["goodput_bps"]:
            per_run_ratio.append(by["daqring"]["goodput_bps"]
                                 / by["stock"]["goodput_bps"])
    out: Dict[str, Any] = {"modes": {}}
    for mode, x in modes.items():
        out["modes"][mode] = {k: summarize(v) for k, v in x.items()
                              if k != "shares"}
        out["modes"][mode]["shares"] = x["shares"]
    if per_run_ratio:
        out["ratio"] = summarize(per_run_ratio)
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
    if worst <= 1.3:
        return txt + "The 1.3x target is met."
    return txt + (
        "The 1.3x target is not met.  The bound is structural: a packet "
        "that goes through a daqring is received twice by the PMD thread, "
        "so it pays the whole per-packet datapath cost twice -- miniflow "
        "extraction, the EMC lookup (the second one keyed on in_port = the "
        "daqring), action execution and output batching -- plus the ring "
        "enqueue/dequeue and one more rx-queue poll per iteration; with "
        "net_null ports (no descriptor work) the datapath pass is almost "
        "all of the per-packet cost, so the ratio approaches 2.  A design "
        "that reaches 1.3x keeps the packet's first lookup: store the "
        "egress actions with the packet (or in the daqring, since one "
        "daqring feeds one egress: the 'in_port=RING -> output:EGRESS' "
        "rule resolved once per ring and cached, revalidated when flows "
        "change) and let the dequeue transmit batches straight to the "
        "egress port's tx queue (netdev_send of the dequeued batch) "
        "instead of re-injecting them into dp_netdev_input, so the second "
        "pass costs a ring dequeue and a tx, not a flow lookup.")


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
    if frac and dq["ideal_ratio"]["median"] < 0.95:
        parts.append(
            "daq-incast shapes each daqring to %.0f%% of the access link's "
            "frame rate (--ring-rate-fraction), so the daqring goodput "
            "cannot exceed about %.0f%% of the ideal, less each event's "
            "request round trip and first burst; the 95%% target needs a "
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


# ================================================================ CLI
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="daq-bench", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__.split("\n\n")[0] + """

Measures, with one PMD thread on a dedicated core and DPDK virtual devices
(net_null sources and sinks, --no-pci), in private switches (own
ovsdb-server, ovs-vswitchd in a network namespace of its own):

  hop       cycles/packet, direct forwarding vs through a daqring, 64 and
            1518 B
  scale     cycles/packet with 8 active daqrings and 8, 256, 2048
            configured; time and memory to create 2048 in one transaction
  waiting   cycles/packet with 8 active daqrings alone and among 2040
            shaped, backlogged ones waiting for their interval
  shaping   achieved/configured dequeue rate over a poll-interval x
            max-burst grid, and achieved/configured wire rate of
            max-rate from 10 Mbit/s to 10 Gbit/s (64 and 1514 B frames)
  fairness  Jain index of 8 backlogged daqrings sharing one egress
  builds    stock Debian ovs-vswitchd-dpdk vs unpatched base vs patched
            (-O2) vs -O3
  incast    utilities/daq-incast (stock / credits / daqring)

and writes OUT/bench.json and OUT/summary.md, with the PMD thread's share
of its core (schedstat) next to every number.""",
        epilog="""examples:
  daq-bench --quick
  daq-bench --parts hop,scale --repeats 3
  daq-bench --pmd-cpu-mask 0x4 --src-devargs 0000:81:00.0 \\
      --sink-devargs 0000:81:00.1 --dpdk-extra '' --parts hop,builds
""")
    g = p.add_argument_group("what to run")
    g.add_argument("--parts", default=",".join(PARTS),
                   help="comma-separated parts (default: %(default)s)")
    g.add_argument("--quick", action="store_true",
                   help="short version: 2 repeats, 1 s windows, 1 incast "
                   "run of 15 events")
    g.add_argument("--repeats", type=int, metavar="N",
                   help="windows per side and measurement (default: 5, "
                   "quick 2)")
    g.add_argument("--window", type=float, metavar="SECS",
                   help="measurement window (default: 2, quick 1)")
    g.add_argument("--warmup", type=float, default=0.7, metavar="SECS",
                   help="wait after each change (default: %(default)s)")
    g.add_argument("--sizes", default="64,1518",
                   help="hop: frame sizes (default: %(default)s)")
    g.add_argument("--lookups", default="emc,simple",
                   help="hop: datapath lookups, emc (flows also match "
                   "dl_dst) and/or simple (in_port only: dpif-netdev's "
                   "simple match); the first one is judged (default: "
                   "%(default)s)")
    g.add_argument("--scale-counts", default="2048,256,8",
                   help="scale: configured max, middle, active "
                   "(default: %(default)s)")
    g.add_argument("--waiting-fill", type=int, default=32,
                   help="waiting: packets queued in each shaped daqring "
                   "(default: %(default)s)")
    g.add_argument("--scale-ring-size", type=int, default=4096,
                   help="scale: ring-size of each daqring (default: "
                   "%(default)s)")
    g.add_argument("--shaping-intervals", default="10,100,1000,10000",
                   help="shaping: poll-intervals in us (default: "
                   "%(default)s)")
    g.add_argument("--shaping-bursts", default="1,8,32",
                   help="shaping: max-bursts (default: %(default)s)")
    g.add_argument("--shaping-rates",
                   default="10000000,100000000,1000000000,10000000000",
                   help="shaping: max-rates in bit/s (default: "
                   "%(default)s)")
    g.add_argument("--shaping-frames", default="64,1514",
                   help="shaping: frame sizes for max-rate, bytes without "
                   "FCS (default: %(default)s)")
    g.add_argument("--shaping-byte-burst", type=int, default=32,
                   help="shaping: max-burst with max-rate (default: "
                   "%(default)s)")
    g.add_argument("--shaping-max-fps", type=float, default=2e6,
                   help="shaping: skip max-rate points above this many "
                   "frames per second, beyond what one PMD forwards "
                   "through a daqring here (default: %(default)g)")
    g.add_argument("--incast-runs", type=int, metavar="N",
                   help="incast: daq-incast runs (default: 3, quick 1)")
    g.add_argument("--incast-args", metavar="ARGS",
                   help="incast: more daq-incast arguments, e.g. "
                   "'--events 100'")
    g.add_argument("--incast-deep-args", metavar="ARGS",
                   default="--ros 60 --modes stock,daqring --events 20",
                   help="incast: one more run at a deeper collapse of stock "
                   "forwarding, full runs only, '' to skip (default: "
                   "%(default)s)")
    g.add_argument("--skip-incast", action="store_true",
                   help="leave out the incast part")

    g = p.add_argument_group("switches")
    g.add_argument("--ovs-build", default=DEFAULT_OVS_BUILD, metavar="DIR",
                   help="patched OVS build tree (default: %(default)s)")
    g.add_argument("--stock-vswitchd", default=STOCK_VSWITCHD,
                   metavar="PATH", help="stock ovs-vswitchd for the "
                   "regression guard, 'none' to skip (default: "
                   "%(default)s)")
    g.add_argument("--o3-build", metavar="DIR",
                   help="an -O3 build of the same tree (bench/local.mk "
                   "builds one in bench-results/build-O3)")
    g.add_argument("--base-build", metavar="DIR",
                   help="the pinned base built unpatched with the same "
                   "options, to separate the patches' cost from build "
                   "differences (bench/local.mk builds one in "
                   "bench-results/build-base)")
    g.add_argument("--base-note", metavar="TEXT",
                   help="why there is no base build (for the summary)")
    g.add_argument("--o3-note", metavar="TEXT",
                   help="why there is no -O3 build (for the summary)")
    g.add_argument("--pmd-cpu-mask", default="0x2", metavar="MASK",
                   help="PMD cores (default: %(default)s); everything else "
                   "runs on the other cores")
    g.add_argument("--socket-mem", default="1024", metavar="MB[,MB..]",
                   help="DPDK memory per NUMA node, for dpdk-socket-mem "
                   "(default: %(default)s)")
    g.add_argument("--hugepages", choices=("auto", "require", "off"),
                   default="auto",
                   help="auto: hugepages if enough are free, else "
                   "--no-huge (noted)")
    g.add_argument("--dpdk-extra", default="--no-pci", metavar="ARGS",
                   help="more EAL arguments (default: %(default)s; on a "
                   "machine with NICs for the bench, e.g. '-a 0000:81:00.0 "
                   "-a 0000:81:00.1')")
    g.add_argument("--src-devargs", metavar="DEVARGS",
                   help="devargs of the traffic source (default: "
                   "net_nullN[,size=S]); a real port fed by a generator")
    g.add_argument("--sink-devargs", metavar="DEVARGS",
                   help="devargs of the egress (default: net_null99,no-rx=1)")
    g.add_argument("--other-config", action="append", default=[],
                   metavar="KEY=VALUE",
                   help="more Open_vSwitch other_config (repeatable)")
    g.add_argument("--vsctl-timeout", type=float, default=300,
                   help="ovs-vsctl timeout for large transactions (default: "
                   "%(default)s)")
    g.add_argument("--incast-timeout", type=float, default=900,
                   help="bound on one daq-incast run (default: %(default)s)")

    g = p.add_argument_group("output")
    g.add_argument("--out", default=os.path.join(TOP, "bench-results"),
                   metavar="DIR", help="results directory (default: "
                   "bench-results/ of the source tree)")
    g.add_argument("--doc", metavar="PATH",
                   help="also write the summary here (e.g. Documentation/"
                   "topics/bench-results.md)")
    g.add_argument("--render", metavar="JSON",
                   help="measure nothing: rewrite the summary (next to "
                   "JSON, and --doc) from an earlier bench.json")
    g.add_argument("--timeout", type=float, default=3600,
                   help="bound on the whole run (default: %(default)s s)")
    g.add_argument("--no-profile", action="store_true",
                   help="do not run perf (by default, if perf is installed,"
                   " the PMD thread is profiled for 2 s after some "
                   "measurements, never during one)")
    g.add_argument("-q", "--quiet", action="store_true")
    g.add_argument("-V", "--version", action="version",
                   version="daq-bench " + VERSION)
    return p


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = build_parser()
    ns = p.parse_args(argv)
    try:
        ns.parts = [x for x in ns.parts.split(",") if x]
        bad = [x for x in ns.parts if x not in PARTS]
        if bad:
            p.error("unknown part(s): %s (choose from %s)"
                    % (",".join(bad), ",".join(PARTS)))
        ns.sizes = [int(x) for x in ns.sizes.split(",")]
        ns.lookups = [x for x in ns.lookups.split(",") if x]
        if not ns.lookups or any(x not in ("emc", "simple")
                                 for x in ns.lookups):
            p.error("--lookups: emc and/or simple")
        ns.scale_counts = [int(x) for x in ns.scale_counts.split(",")]
        ns.shaping_intervals = [int(x) for x in
                                ns.shaping_intervals.split(",")]
        ns.shaping_bursts = [int(x) for x in ns.shaping_bursts.split(",")]
        ns.shaping_rates = [int(x) for x in ns.shaping_rates.split(",")]
        ns.shaping_frames = [int(x) for x in ns.shaping_frames.split(",")]
        parse_cpu_mask(ns.pmd_cpu_mask)
        socket_mem = [int(x) for x in ns.socket_mem.split(",")]
    except (ValueError, ConfigError) as e:
        p.error(str(e))
    if not socket_mem or min(socket_mem) < 0 or sum(socket_mem) <= 0:
        p.error("--socket-mem: MB per NUMA node, e.g. 1024 or 1024,1024")
    ns.socket_mem_text = ns.socket_mem
    ns.socket_mem = socket_mem
    if len(ns.scale_counts) != 3 or not (ns.scale_counts[0]
                                         > ns.scale_counts[1]
                                         > ns.scale_counts[2] > 0):
        p.error("--scale-counts needs MAX,MID,ACTIVE with MAX > MID > "
                "ACTIVE > 0")
    if ns.scale_counts[2] > 30:
        p.error("--scale-counts: at most 30 active daqrings (one net_null "
                "source each; DPDK allows 32 ethdevs)")
    if any(not 1 <= b <= 32 for b in ns.shaping_bursts):
        p.error("--shaping-bursts must be within 1..32")
    if not 1 <= ns.shaping_byte_burst <= 32:
        p.error("--shaping-byte-burst must be within 1..32")
    if any(not 1000 <= r <= 10**12 for r in ns.shaping_rates):
        p.error("--shaping-rates must be within 1000..10^12 bit/s")
    if any(not 60 <= f <= 9000 for f in ns.shaping_frames):
        p.error("--shaping-frames must be within 60..9000 bytes")
    if ns.repeats is not None and ns.repeats < 1:
        p.error("--repeats must be >= 1")
    if ns.window is not None and ns.window <= 0:
        p.error("--window must be > 0")
    return ns


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


def render(args: argparse.Namespace) -> int:
    with open(args.render) as f:
        res = json.load(f)
    reanalyse(res)
    res["verdicts"] = verdicts(res)
    md = markdown(res)
    for path in [os.path.join(os.path.dirname(args.render), "summary.md"),
                 args.doc]:
        if path:
            with open(path, "w") as f:
                f.write(md)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    args = parse_args(argv)
    if args.render:
        return render(args)
    bench = Bench(args)

    def handler(signum: int, frame: Any) -> None:
        raise Interrupted(signum)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM):
        signal.signal(s, handler)
    signal.alarm(max(1, int(args.timeout)))
    return bench.main(argv)
