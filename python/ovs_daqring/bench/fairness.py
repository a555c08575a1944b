# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-bench part "fairness": the Jain index of 8 backlogged daqrings
sharing one egress, unshaped and shaped; the target, its verdict and the
summary's section."""

import time
from typing import Any, Callable, Dict, List, Optional

from .runner import Bench
from .stats import delta, fmt_stat, jain, share_text, summarize, window_share

TARGETS = {
    "fairness": "Jain index of 8 backlogged daqrings >= 0.99",
}


def measure(bench: Bench) -> None:
    """8 daqrings, each fed by a null source, to one sink, unshaped then
    shaped: the Jain index of their dequeues per window, into
    bench.res["fairness"]."""
    n = 8
    out: Dict[str, Any] = {"rings": n, "scenarios": []}
    bench.res["fairness"] = out
    scen = [("unshaped", "8 rings, max-burst 8 unshaped, sources burst "
             "32", 8, 0),
            ("shaped", "8 rings, max-burst 32 per 100 us", 32, 100)]
    sw = bench.switch(bench.patched)
    try:
        sw.add_null("sink", bench.SINK, 99, sink=True,
                    devargs=bench.args.sink_devargs)
        sw.flows("priority=0,actions=drop")
        fl = []
        for i in range(n):
            sw.add_null("s%d" % i, bench.SRC + i, i)
            fl.append(bench.fl(bench.SRC + i, bench.RING + i))
            fl.append(bench.fl(bench.RING + i, bench.SINK))
        sw.add_ports([("q%d" % i, bench.RING + i,
                       ["type=daqring", "options:ring-size=4096"])
                      for i in range(n)])
        sw.flows(*fl)
        sw.reset_pmd_tids()
        reps = max(2, bench.repeats if not bench.quick else 2)
        for name, desc, burst, us in scen:
            for i in range(n):
                sw.set_iface("q%d" % i, "options:max-burst=%d" % burst,
                             "options:poll-interval=%d" % us)
            bench.settle(1.0)
            jains, shares, smin, smax, drops = [], [], 1.0, 0.0, 0
            for _ in range(reps):
                a = sw.snapshot()
                time.sleep(bench.window)
                z = sw.snapshot()
                deq = [delta(a["ports"], z["ports"], str(bench.RING + i),
                             "rx") for i in range(n)]
                drops += sum(delta(a["ports"], z["ports"],
                                   str(bench.RING + i), "tx_drop")
                             for i in range(n))
                j = jain(deq)
                jains.append(j)
                tot = sum(deq) or 1
                smin = min(smin, min(deq) / tot)
                smax = max(smax, max(deq) / tot)
                shares.append(window_share(a, z))
                bench.say("fairness %s: Jain %.5f, PMD share %.0f%%"
                          % (name, j, 100 * shares[-1]))
            out["scenarios"].append({
                "name": name, "description": desc, "max_burst": burst,
                "poll_interval_us": us, "jain": summarize(jains),
                "share_min": smin, "share_max": smax,
                "ring_full_drops": drops, "backlogged": drops > 0,
                "shares": shares})
    finally:
        sw.stop()


def fairness_verdicts(fa: Optional[Dict[str, Any]],
                      add: Callable[..., None]) -> None:
    """The row of TARGETS."""
    if fa and fa.get("scenarios"):
        worst_s = min(fa["scenarios"], key=lambda s: s["jain"]["min"])
        add("fairness", "; ".join(
            "%s %s" % (s["name"], fmt_stat(s["jain"], "%.4f"))
            for s in fa["scenarios"]),
            worst_s["jain"]["min"] >= 0.99,
            [x for s in fa["scenarios"] for x in s["shares"]])
    else:
        add("fairness", "not run", None)


def markdown(fa: Optional[Dict[str, Any]]) -> List[str]:
    """The summary's section (none if the part measured nothing)."""
    L: List[str] = []
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
    return L
