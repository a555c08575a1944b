# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-bench part "sleep": the CPU time of a PMD thread with max sleep
10 ms and 2048 shaped daqrings each holding a packet for a later
deadline; the target, its verdict and the summary's section."""

import os
import time
from typing import Any, Callable, Dict, List, Optional

from ..process import RunError, read_text
from .parse import parse_pmd_perf, parse_task_stat
from .runner import Bench
from .scale import wait_polled
from .stats import fmt_stat, summarize
from .switch import Switch

TARGETS = {
    "sleep_2048": "2048 shaped daqrings each holding a packet for a later "
                  "deadline, PMD max sleep 10 ms: PMD thread CPU <= 10% "
                  "of its core",
}
SLEEP_MAX_US = 10000             # pmd-maxsleep's (pmd-sleep-max's) max


def ring_table(sw: Switch) -> Dict[str, Dict[str, int]]:
    """netdev-daqring/show of every daqring: {port: {column: value}}
    (size, occup, ...)."""
    rows: Dict[str, Dict[str, int]] = {}
    lines = sw.appctl("netdev-daqring/show").splitlines()
    if not lines:
        return rows
    head = lines[0].split()
    for line in lines[1:]:
        f = line.split()
        if len(f) >= 3 and f[1].isdigit() and f[2].isdigit():
            rows[f[0]] = {k: int(v) for k, v in zip(head[1:], f[1:])
                          if v.isdigit()}
    return rows


def pmd_cpu_ticks(sw: Switch) -> int:
    """CPU time of the switch's PMD thread(s) so far, in clock ticks
    (/proc/PID/task/TID/stat: utime + stime)."""
    assert sw.vswitchd is not None
    return sum(parse_task_stat(read_text("/proc/%d/task/%d/stat"
                                         % (sw.vswitchd.pid, tid)))
               for tid in sw.pmd_tids())


def measure(bench: Bench) -> None:
    """n_max daqrings (2048), shaped so that each holds one packet for
    a deadline about 14 s away, and nothing else to do, with the PMD's
    maximum sleep (base 3.1's pmd-maxsleep, 3.5's pmd-sleep-max) at
    its 10 ms maximum: the PMD thread's CPU time over windows, from
    /proc/PID/task/TID/stat, as a share of its core.  Each ring has
    ring-size 1, max-burst 1 and max-rate 1000 bit/s with 255 bytes of
    frame overhead: a source of 1514-byte frames that outputs to all of
    them lets two leave each at once and fills it with a third, whose
    tokens take 14 s, and is stopped before the windows."""
    n = bench.args.scale_counts[0]
    reps = 2 if bench.quick else 3
    # The rings hold their packets for about 14 s: the windows fit.
    window = min(bench.window, 1.5)
    out: Dict[str, Any] = {"rings": n, "max_sleep_us": SLEEP_MAX_US,
                           "window_s": window, "windows": []}
    bench.res["sleep"] = out
    hz = os.sysconf("SC_CLK_TCK")
    sw = bench.switch(bench.patched)
    try:
        # Both names: base 3.1 knows only pmd-maxsleep; base 3.5 takes
        # pmd-sleep-max, which overrides the deprecated name.
        sw.vsctl("set", "Open_vSwitch", ".",
                 "other_config:pmd-maxsleep=%d" % SLEEP_MAX_US,
                 "other_config:pmd-sleep-max=%d" % SLEEP_MAX_US)
        sw.add_null("sink", bench.SINK, 99, sink=True,
                    devargs=bench.args.sink_devargs)
        names = ["r%04d" % i for i in range(n)]
        shaped = ["type=daqring", "options:ring-size=1",
                  "options:max-burst=1", "options:max-rate=1000",
                  "options:frame-overhead=255"]
        sw.add_ports([(nm, 1000 + i, shaped)
                      for i, nm in enumerate(names)],
                     timeout=bench.args.vsctl_timeout)
        wait_polled(sw, names, bench.args.vsctl_timeout)
        sw.flows(*["priority=10,in_port=%d,actions=output:%d"
                   % (1000 + i, bench.SINK) for i in range(n)])
        sw.add_null("fill", 900, 30, size=1514)
        sw.flows("priority=10,in_port=900,actions=" + ",".join(
            "output:%d" % (1000 + i) for i in range(n)))
        deadline = time.monotonic() + 60
        while True:
            rows = ring_table(sw)
            if all(rows.get(nm, {}).get("occup") == 1 for nm in names):
                break
            if time.monotonic() > deadline:
                raise RunError("sleep: the rings did not fill")
            time.sleep(0.2)
        # Stop the source without deleting it: deleting a port reloads
        # the PMD thread, which takes seconds with 2048 rings, and the
        # rings hold their packets for only about 14 s.  A DPDK port
        # that is down receives nothing.
        sw.ofctl("del-flows", sw.mgmt, "in_port=900")
        sw.ofctl("mod-port", sw.mgmt, "900", "down")
        bench.settle(1.0)
        before = ring_table(sw)
        sw.appctl("dpif-netdev/pmd-stats-clear")
        for _ in range(reps):
            t0, c0 = time.monotonic(), pmd_cpu_ticks(sw)
            time.sleep(window)
            t1, c1 = time.monotonic(), pmd_cpu_ticks(sw)
            share = (c1 - c0) / hz / (t1 - t0)
            out["windows"].append({"wall_s": t1 - t0,
                                   "cpu_s": (c1 - c0) / hz,
                                   "share": share})
            bench.say("sleep: %d shaped rings each holding a packet, "
                      "max sleep %d us: PMD thread CPU %.1f%% of its "
                      "core" % (n, SLEEP_MAX_US, 100 * share))
        pmds = parse_pmd_perf(sw.appctl("dpif-netdev/pmd-perf-show"))
        after = ring_table(sw)
    finally:
        sw.stop(fast=True)
    out["sleep_iterations"] = sum(p.get("sleep_iterations", 0)
                                  for p in pmds.get("pmds", {}).values())
    out["iterations"] = sum(p.get("iterations", 0)
                            for p in pmds.get("pmds", {}).values())
    # The condition measured: every ring held its packet throughout.
    out["held_before"] = sum(before.get(nm, {}).get("occup", 0)
                             for nm in names)
    out["held_after"] = sum(after.get(nm, {}).get("occup", 0)
                            for nm in names)
    out["share"] = summarize([w["share"] for w in out["windows"]])
    if out["held_after"] != n:
        bench.note("sleep: %d of %d rings still held their packet after "
                   "the windows (a deadline passed)"
                   % (out["held_after"], n))


def sleep_verdicts(sl: Optional[Dict[str, Any]],
                   add: Callable[..., None]) -> None:
    """The row of TARGETS."""
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


def markdown(sl: Optional[Dict[str, Any]]) -> List[str]:
    """The summary's section (none if the part measured nothing)."""
    L: List[str] = []
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
    return L
