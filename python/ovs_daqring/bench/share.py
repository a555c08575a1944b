# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-bench part "share" (only when named): two backlogged daqrings
bound to one egress with egress-max-rate, on two PMD threads that poll
them at very different rates (the slow thread also drops the packets of
--share-loaders null sources), at each of --share-rates; each ring's
share of the egress, the egress's rate, and each thread's time per
iteration; the target, its verdict and the summary's section."""

import time
from typing import Any, Callable, Dict, List, Optional

from .parse import parse_pmd_perf
from .runner import Bench
from .shaping import fmt_bps
from .stats import delta, fmt_stat, share_text, summarize, window_share

TARGETS = {
    "share": "rings of one egress on two PMD threads polled at very "
             "different rates: each backlogged ring's share within 10% of "
             "equal, the egress within 1% of its rate",
}

# The frames of the sources, and the overhead counted on the wire.
FRAME_LEN = 1518
OVERHEAD = 24
# The PMD threads' cores: the fast one polls ring 0 and its source, the
# slow one ring 1, its source and the loaders.
FAST_CORE, SLOW_CORE = 1, 0
# egress-max-burst-bytes bounds.
MAX_BURST_BYTES = 16 * 1024 * 1024


def burst_bytes(rate_bps: int, burst_us: float) -> int:
    """egress-max-burst-bytes for 'rate_bps': what it sends in 'burst_us',
    or 0 (the default, 32 full-size frames) where that is no more.  The
    bucket must hold the slow ring's share of its thread's poll gap, and
    outlast the stalls in which neither PMD thread polls (the tokens that
    overflow a full bucket are lost): 32 frames are 3.9 us at 100 Gbit/s,
    and both threads of this part stopped together for 50-190 us,
    hundreds of times a second, on the project's two-core VMs."""
    full = FRAME_LEN + OVERHEAD
    want = int(rate_bps * burst_us / 1e6 / 8) + full
    return 0 if want <= 33 * full else min(want, MAX_BURST_BYTES)


def measure(bench: Bench) -> None:
    """The two rings on two PMD threads (pmd-cpu-mask 0x3, both cores of
    the machine, for this part only), each rate of --share-rates in
    turn, into bench.res["share"]."""
    rates: List[int] = list(bench.args.share_rates)
    n_load = bench.args.share_loaders
    reps = 1 if bench.quick else max(1, min(bench.repeats, 3))
    burst_us = bench.args.share_burst_us
    out: Dict[str, Any] = {"frame_len": FRAME_LEN, "frame_overhead": OVERHEAD,
                           "loaders": n_load, "burst_us": burst_us,
                           "window_s": bench.window,
                           "repeats": reps, "points": [],
                           "asked_points": len(rates)}
    bench.res["share"] = out
    sw = bench.switch(bench.patched)
    try:
        sw.vsctl("set", "Open_vSwitch", ".",
                 "other_config:pmd-cpu-mask=0x%x"
                 % ((1 << FAST_CORE) | (1 << SLOW_CORE)))
        sw.add_null("sink", bench.SINK, 99, sink=True)
        specs = []
        flows = ["priority=0,actions=drop"]
        for i, core in enumerate((FAST_CORE, SLOW_CORE)):
            sw.add_null("src%d" % i, bench.SRC + i, 60 + i, size=FRAME_LEN)
            sw.set_iface("src%d" % i,
                         "other_config:pmd-rxq-affinity=0:%d" % core)
            specs.append(("r%d" % i, bench.RING + i, [
                "type=daqring", "options:ring-size=4096",
                "options:max-burst=32", "options:egress=sink",
                "options:frame-overhead=%d" % OVERHEAD,
                "options:egress-max-rate=%d" % rates[0],
                "other_config:pmd-rxq-affinity=0:%d" % core]))
            flows.append(bench.fl(bench.SRC + i, bench.RING + i))
        sw.add_ports(specs)
        for k in range(n_load):
            sw.add_null("load%d" % k, 20 + k, 70 + k)
            sw.set_iface("load%d" % k,
                         "other_config:pmd-rxq-affinity=0:%d" % SLOW_CORE)
        sw.ofctl("del-flows", sw.mgmt)
        sw.flows(*flows)
        sw.reset_pmd_tids()
        samples: Dict[int, List[Dict[str, Any]]] = {r: [] for r in rates}
        for r in range(reps):
            for rate in (rates if r % 2 == 0 else rates[::-1]):
                bb = burst_bytes(rate, burst_us)
                opts = ["options:egress-max-rate=%d" % rate]
                if bb:
                    opts.append("options:egress-max-burst-bytes=%d" % bb)
                args: List[str] = []
                for i in range(2):
                    args += ["--", "set", "Interface", "r%d" % i] + opts
                    if not bb:
                        args += ["--", "remove", "Interface", "r%d" % i,
                                 "options", "egress-max-burst-bytes"]
                sw.vsctl(*args)
                bench.settle(1.0)
                sw.appctl("dpif-netdev/pmd-stats-clear")
                a = sw.snapshot()
                time.sleep(bench.window)
                z = sw.snapshot()
                perf = parse_pmd_perf(sw.appctl("dpif-netdev/pmd-perf-show"))
                wall = (z["t_ns"] - a["t_ns"]) / 1e9
                bps = [8.0 * (delta(a["ports"], z["ports"],
                                    str(bench.RING + i), "rx_bytes")
                              + OVERHEAD * delta(a["ports"], z["ports"],
                                                 str(bench.RING + i), "rx"))
                       / wall for i in range(2)]
                us_it = {}
                for name, p in perf["pmds"].items():
                    core = int(name.split("/")[1])
                    us_it["fast" if core == FAST_CORE else "slow"] = \
                        p.get("us_per_it")
                s = {"bps": bps, "egress": sum(bps) / rate,
                     "ratio": bps[1] / bps[0] if bps[0] else None,
                     "us_per_it": us_it, "share": window_share(a, z)}
                samples[rate].append(s)
                bench.say("share %s: ring on the fast thread %s, on the "
                          "slow one %s (slow / fast %.3f), egress %.4f of "
                          "its rate; %s / %s us per iteration, PMD share "
                          "%.0f%%" % (fmt_bps(rate), fmt_bps(bps[0]),
                                      fmt_bps(bps[1]), s["ratio"] or 0,
                                      s["egress"], us_it.get("fast"),
                                      us_it.get("slow"),
                                      100 * s["share"]))
        for rate in rates:
            sm = samples[rate]
            out["points"].append({
                "rate_bps": rate,
                "burst_bytes": burst_bytes(rate, burst_us),
                "ratio": summarize([x["ratio"] for x in sm
                                    if x["ratio"] is not None]),
                "egress": summarize([x["egress"] for x in sm]),
                "fast_us_per_it": summarize(
                    [x["us_per_it"].get("fast") for x in sm
                     if x["us_per_it"].get("fast") is not None]),
                "slow_us_per_it": summarize(
                    [x["us_per_it"].get("slow") for x in sm
                     if x["us_per_it"].get("slow") is not None]),
                "shares": [x["share"] for x in sm]})
    finally:
        sw.stop()


def share_verdicts(sh: Optional[Dict[str, Any]],
                   add: Callable[..., None]) -> None:
    """The row of TARGETS: every repeat of every rate must hold."""
    pts = (sh or {}).get("points") or []
    if not pts:
        add("share", (sh or {}).get("error") or "not run", None)
        return
    ok = bool(pts) and len(pts) == sh.get("asked_points", len(pts))
    parts = []
    for p in pts:
        r, e = p["ratio"], p["egress"]
        good = (r.get("min") is not None and e.get("min") is not None
                and 0.9 <= r["min"] and r["max"] <= 1 / 0.9
                and 0.99 <= e["min"] and e["max"] <= 1.01)
        ok = ok and good
        parts.append("%s: slow / fast %s, egress %s" % (
            fmt_bps(p["rate_bps"]), fmt_stat(r, "%.3f"),
            fmt_stat(e, "%.4f")))
    add("share", "; ".join(parts), ok,
        [x for p in pts for x in p["shares"]])


def markdown(sh: Optional[Dict[str, Any]]) -> List[str]:
    """The summary's section (none if the part measured nothing)."""
    L: List[str] = []
    if sh and sh.get("points"):
        L.append("## Shared egress on two PMD threads")
        L.append("")
        L.append("Two daqrings bound to one net_null egress with "
                 "egress-max-rate, each fed %d B frames by a net_null "
                 "source and polled by its own PMD thread; the slow thread "
                 "also drops the packets of %d more sources; "
                 "egress-max-burst-bytes what the rate sends in %g us "
                 "(where more than the default).  Wire rate = "
                 "(rx_bytes + %d x rx_packets) x 8 per second, over "
                 "windows of %.0f s." % (sh["frame_len"], sh["loaders"],
                                         sh["burst_us"],
                                         sh["frame_overhead"],
                                         sh["window_s"]))
        L.append("")
        L.append("| egress-max-rate | egress-max-burst-bytes | slow / fast "
                 "ring | egress / rate | us per iteration (fast, slow) | "
                 "PMD share |")
        L.append("|---|---|---|---|---|---|")
        for p in sh["points"]:
            L.append("| %s | %s | %s | %s | %s, %s | %s |" % (
                fmt_bps(p["rate_bps"]), p.get("burst_bytes") or "default",
                fmt_stat(p["ratio"], "%.3f"),
                fmt_stat(p["egress"], "%.4f"),
                fmt_stat(p["fast_us_per_it"], "%.2f"),
                fmt_stat(p["slow_us_per_it"], "%.2f"),
                share_text(p["shares"])))
        L.append("")
    return L
