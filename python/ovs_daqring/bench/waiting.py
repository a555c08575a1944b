# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-bench part "waiting": cycles per packet of 8 active daqrings alone
and among 2040 shaped, backlogged ones waiting for their interval, in
one switch (scale.py's); the target and its verdict.  The part has no
section of its own in the summary, only its row of the targets."""

import re
import time
from typing import Any, Callable, Dict, List, Optional

from ..process import RunError
from .runner import Bench
from .scale import (ring_specs, scale_flows, scale_switch, scale_windows,
                    wait_polled)
from .stats import fmt_stat, summarize

TARGETS = {
    "waiting_2048": "8 active daqrings among 2048 shaped backlogged ones: "
                    "cycles per packet <= 1.1 x 8 alone",
}


def measure(bench: Bench) -> None:
    """8 active (unshaped) daqrings alone, then with n_max - 8 more
    that are shaped and backlogged, each waiting for its next interval
    (max-burst 1 per second, filled once by a source that outputs to
    all of them), in one switch: cycles per forwarded packet of the
    active ones, and how often the waiting ones are polled."""
    n_max, _, n_act = bench.args.scale_counts
    fill = bench.args.waiting_fill
    out: Dict[str, Any] = {"active": n_act, "max": n_max,
                           "ring_size": 2 * fill, "fill": fill,
                           "counts": {}, "order": []}
    bench.res["waiting"] = out
    ws: Dict[int, List[Dict[str, Any]]] = {}
    sw, srcs = scale_switch(bench, n_act)
    try:
        sw.add_ports(ring_specs(0, n_act, 4096))
        scale_flows(bench, sw, n_act)
        ins = srcs + ["r%04d" % i for i in range(n_act)]
        k = max(2, bench.repeats // 2)
        scale_windows(bench, sw, n_act, ins, k, ws, out)
        names = ["r%04d" % i for i in range(n_act, n_max)]
        shaped = ["type=daqring", "options:ring-size=%d" % (2 * fill),
                  "options:max-burst=1", "options:poll-interval=1000000"]
        sw.add_ports([(n, 1000 + i + n_act, shaped)
                      for i, n in enumerate(names)],
                     timeout=bench.args.vsctl_timeout)
        wait_polled(sw, names, bench.args.vsctl_timeout)
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
        scale_windows(bench, sw, n_max, ins, k, ws, out)
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
        out["counts"][str(n)] = bench.collect(lst)
        out["counts"][str(n)]["shares"] = [w["pmd_share"] for w in lst]
    base = out["counts"][str(n_act)]["cycles"]["median"]
    out["ratio"] = summarize([w["cycles"] / base for w in ws[n_max]])
    out["shares"] = [w["pmd_share"] for lst in ws.values() for w in lst]
    bench.say("waiting: %d shaped backlogged / %d alone: %.2f x cycles "
              "per packet; waiting rings polled %.0f times per second"
              % (n_max, n_act, out["ratio"]["median"],
                 out["wait_polls_per_s"]))


def waiting_verdicts(wt: Optional[Dict[str, Any]],
                     add: Callable[..., None]) -> None:
    """The row of TARGETS."""
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
