# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The parts of daq-bench, one method each (part_hop, part_scale, ...),
with their helpers: mixed into Bench (cli.py), whose switches, windows
and notes they use."""

import json
import os
import re
import shlex
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import tool_path
from . import lossless, peers
from ..process import RunError, die_with_parent, read_text, stop_process
from .analysis import (SHAPING_BYTES_FRAMES, SHAPING_BYTES_MIN_S,
                       SHAPING_BYTES_STEP, delta, fit_slope, fmt_bps,
                       stall_burst_bytes,
                       hop_analysis,
                       incast_analysis, incast_summary, jain, opt_verdict,
                       ratios, regression_verdict, scale_analysis,
                       summarize, window_share)
from .fabric_incast import (FAILOVER_ARGS, STEADY_ARGS, fabric_summary,
                            point_label)
from .parse import parse_configure_cflags, parse_pmd_perf, parse_task_stat
from .source import rel, rel_top
from .switch import Build, Switch, opt_level


class Parts:
    """The measurements of a Bench (the mixin's methods use Bench's)."""

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
        modes = ["direct", "daqring", "bound"]
        ws: Dict[str, List[Dict[str, Any]]] = {m: [] for m in modes}
        for r in range(self.repeats):
            # Rotate, so that no mode always follows the same one.
            order = modes[r % 3:] + modes[:r % 3]
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
        d["bound"] = self.collect(ws["bound"])
        d["ratio_bound"] = summarize(ratios(
            [w["cycles"] for w in ws["bound"]],
            [w["cycles"] for w in ws["direct"]]))
        d["ratio_bound_tsc"] = summarize(ratios(
            [w["cycles_tsc"] for w in ws["bound"]],
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

    # ---------------------------------------------------------- sleep
    SLEEP_MAX_US = 10000             # pmd-maxsleep's (pmd-sleep-max's) max

    def ring_table(self, sw: Switch) -> Dict[str, Dict[str, int]]:
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

    def pmd_cpu_ticks(self, sw: Switch) -> int:
        """CPU time of the switch's PMD thread(s) so far, in clock ticks
        (/proc/PID/task/TID/stat: utime + stime)."""
        assert sw.vswitchd is not None
        return sum(parse_task_stat(read_text("/proc/%d/task/%d/stat"
                                             % (sw.vswitchd.pid, tid)))
                   for tid in sw.pmd_tids())

    def part_sleep(self) -> None:
        """n_max daqrings (2048), shaped so that each holds one packet for
        a deadline about 14 s away, and nothing else to do, with the PMD's
        maximum sleep (base 3.1's pmd-maxsleep, 3.5's pmd-sleep-max) at
        its 10 ms maximum: the PMD thread's CPU time over windows, from
        /proc/PID/task/TID/stat, as a share of its core.  Each ring has
        ring-size 1, max-burst 1 and max-rate 1000 bit/s with 255 bytes of
        frame overhead: a source of 1514-byte frames that outputs to all of
        them lets two leave each at once and fills it with a third, whose
        tokens take 14 s, and is stopped before the windows."""
        n = self.args.scale_counts[0]
        reps = 2 if self.quick else 3
        # The rings hold their packets for about 14 s: the windows fit.
        window = min(self.window, 1.5)
        out: Dict[str, Any] = {"rings": n, "max_sleep_us": self.SLEEP_MAX_US,
                               "window_s": window, "windows": []}
        self.res["sleep"] = out
        hz = os.sysconf("SC_CLK_TCK")
        sw = self.switch(self.patched)
        try:
            # Both names: base 3.1 knows only pmd-maxsleep; base 3.5 takes
            # pmd-sleep-max, which overrides the deprecated name.
            sw.vsctl("set", "Open_vSwitch", ".",
                     "other_config:pmd-maxsleep=%d" % self.SLEEP_MAX_US,
                     "other_config:pmd-sleep-max=%d" % self.SLEEP_MAX_US)
            sw.add_null("sink", self.SINK, 99, sink=True,
                        devargs=self.args.sink_devargs)
            names = ["r%04d" % i for i in range(n)]
            shaped = ["type=daqring", "options:ring-size=1",
                      "options:max-burst=1", "options:max-rate=1000",
                      "options:frame-overhead=255"]
            sw.add_ports([(nm, 1000 + i, shaped)
                          for i, nm in enumerate(names)],
                         timeout=self.args.vsctl_timeout)
            self.wait_polled(sw, names, self.args.vsctl_timeout)
            sw.flows(*["priority=10,in_port=%d,actions=output:%d"
                       % (1000 + i, self.SINK) for i in range(n)])
            sw.add_null("fill", 900, 30, size=1514)
            sw.flows("priority=10,in_port=900,actions=" + ",".join(
                "output:%d" % (1000 + i) for i in range(n)))
            deadline = time.monotonic() + 60
            while True:
                rows = self.ring_table(sw)
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
            self.settle(1.0)
            before = self.ring_table(sw)
            sw.appctl("dpif-netdev/pmd-stats-clear")
            for _ in range(reps):
                t0, c0 = time.monotonic(), self.pmd_cpu_ticks(sw)
                time.sleep(window)
                t1, c1 = time.monotonic(), self.pmd_cpu_ticks(sw)
                share = (c1 - c0) / hz / (t1 - t0)
                out["windows"].append({"wall_s": t1 - t0,
                                       "cpu_s": (c1 - c0) / hz,
                                       "share": share})
                self.say("sleep: %d shaped rings each holding a packet, "
                         "max sleep %d us: PMD thread CPU %.1f%% of its "
                         "core" % (n, self.SLEEP_MAX_US, 100 * share))
            pmds = parse_pmd_perf(sw.appctl("dpif-netdev/pmd-perf-show"))
            after = self.ring_table(sw)
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
            self.note("sleep: %d of %d rings still held their packet after "
                      "the windows (a deadline passed)"
                      % (out["held_after"], n))

    # ---------------------------------------------------------- shaping
    def part_shaping(self) -> None:
        grid = [(us, b) for us in self.args.shaping_intervals
                for b in self.args.shaping_bursts]
        reps = 1 if self.quick else max(1, min(self.repeats, 3))
        min_int = 100 if self.quick else 200
        out: Dict[str, Any] = {"ring_size": 4096, "window_s": self.window,
                               "min_intervals": min_int, "repeats": reps,
                               "points": [], "asked_points": len(grid)}
        if self.args.src_devargs is None:
            # What the verdicts count, measured or not.
            out["byte_asked"] = len(self.byte_grid()[0])
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

    def byte_grid(self) -> Tuple[List[Tuple[int, int]], List[str]]:
        """The (frame size, max-rate) points of shaping_bytes, and those
        left out because the source cannot send that many frames."""
        grid, skipped = [], []
        for size in self.args.shaping_frames:
            for rate in self.args.shaping_rates:
                if rate / ((size + 24) * 8) > self.args.shaping_max_fps:
                    skipped.append("%s of %d B" % (fmt_bps(rate), size))
                else:
                    grid.append((size, rate))
        return grid, skipped

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
        grid, out["byte_skipped"] = self.byte_grid()
        for k, size in enumerate(self.args.shaping_frames):
            rates = [r for f, r in grid if f == size]
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
                    bb = stall_burst_bytes(rate, burst, ovh,
                                           self.args.shaping_stall_ms)
                    opts = ["options:poll-interval=0",
                            "options:max-burst=%d" % burst,
                            "options:frame-overhead=%d" % ovh,
                            "options:max-rate=%d" % rate]
                    if bb:
                        sw.set_iface("ring", *opts,
                                     "options:max-burst-bytes=%d" % bb)
                    else:
                        sw.vsctl("set", "Interface", "ring", *opts, "--",
                                 "remove", "Interface", "ring", "options",
                                 "max-burst-bytes")
                    fps = rate / ((size + ovh) * 8)
                    self.settle(max(0.5, 2000 / fps))
                    # Enough frames that one more or less is within
                    # the target's resolution, and long enough that the
                    # instants of the snapshots (a dump-ports each, a few
                    # ms apart from one to the next on a busy core 0) do
                    # not blur it: the rate is the least-squares slope of
                    # the wire bits over a snapshot every
                    # SHAPING_BYTES_STEP seconds.
                    secs = max(self.window, SHAPING_BYTES_MIN_S,
                               SHAPING_BYTES_FRAMES / fps)
                    a = z = sw.snapshot()
                    ts, ys = [0.0], [0.0]
                    end = time.monotonic() + secs
                    while time.monotonic() < end:
                        time.sleep(SHAPING_BYTES_STEP)
                        z = sw.snapshot()
                        ts.append((z["t_ns"] - a["t_ns"]) / 1e9)
                        ys.append(8.0 * (
                            delta(a["ports"], z["ports"], ring, "rx_bytes")
                            + ovh * delta(a["ports"], z["ports"], ring,
                                          "rx")))
                    bps = fit_slope(ts, ys)
                    share = window_share(a, z)
                    samples[rate].append((bps, share))
                    self.say("shaping max-rate %s, %d B: %.5f of "
                             "configured (%d snapshots over %.1f s), PMD "
                             "share %.0f%%"
                             % (fmt_bps(rate), size, bps / rate, len(ts),
                                ts[-1], 100 * share))
            for rate in rates:
                sm = samples[rate]
                out["byte_points"].append({
                    "max_rate_bps": rate, "frame_len": size,
                    "max_burst": burst,
                    "max_burst_bytes": stall_burst_bytes(
                        rate, burst, ovh, self.args.shaping_stall_ms),
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
        if rc != 0:
            self.note("daq-incast %s exited %d (see %s)" % (
                name, rc, rel(os.path.join(d, "%s.out" % name))))
        try:
            with open(js) as f:
                data: Dict[str, Any] = json.load(f)
        except (OSError, ValueError) as e:
            if rc == 0:
                self.note("daq-incast %s: no results: %s" % (name, e))
            return None
        # A run that exited non-zero but wrote its results (a mode
        # failed) is kept: incast_summary() counts its failed modes.
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
        # Every run asked for counts, including those that never wrote
        # results (verdicts() fails the targets they leave unmeasured).
        out["asked"] = runs
        if data:
            out["ideal_bps"] = data[0].get("ideal", {}).get("goodput_bps")
            out["ring_rate_fraction"] = data[0].get("config", {}).get(
                "ring_rate_fraction")
            out["congestion_control"] = data[0].get("config", {}).get(
                "congestion_control", "the machine's default")
        deep = shlex.split(self.args.incast_deep_args or "")
        if deep and not self.quick and not out.get("error"):
            self.say("incast deeper collapse: %s" % " ".join(deep))
            r = self.incast_run(base + extra + deep, d, "deep", True)
            if r is not None:
                out["deep"] = incast_summary([r])
                out["deep"]["command"] = show(base + extra + deep)
                out["deep"]["ideal_bps"] = r.get("ideal", {}).get(
                    "goodput_bps")
            else:
                out["deep"] = {"error": self.notes[-1], "modes": {},
                               "command": show(base + extra + deep)}
        out["analysis"] = incast_analysis(out)

    # ---------------------------------------------------------- peers
    def part_peers(self) -> None:
        """The grid of bench/peers.py: per point and repeat one daq-incast
        run of daqring and its deep-FIFO peer (and the hog, where the
        point has one); repeats go through the points in alternating
        order."""
        runs = self.args.peers_runs or (1 if self.quick else 3)
        names = peers.parse_points(self.args.peers_points, self.quick)
        events = self.args.peers_events or (15 if self.quick else 40)
        d = os.path.join(self.out, "peers")
        os.makedirs(d, exist_ok=True)
        base = [sys.executable, tool_path("daq-incast") or "daq-incast",
                "--ovs-build", os.path.abspath(self.args.ovs_build),
                "--pmd-cpu-mask", self.args.pmd_cpu_mask, "-q",
                "--modes", "daqring,deep-fifo", "--events", str(events)]
        if self.args.hugepages == "off":
            # Nothing of the machine's hugepages (daq-incast would reserve
            # its own otherwise).
            base += ["--hugepages", "off"]
        base += shlex.split(self.args.peers_args or "")
        out: Dict[str, Any] = {"dir": rel_top(d), "runs": runs,
                               "events": events, "points": {},
                               "grid": {n: {"what": peers.GRID[n][0],
                                            "args": peers.GRID[n][1]}
                                        for n in names}}
        self.res["peers"] = out
        figures: Dict[str, List[Dict[str, Any]]] = {n: [] for n in names}
        for r in range(runs):
            for name in (names if r % 2 == 0 else names[::-1]):
                self.say("peers %s, run %d/%d" % (name, r + 1, runs))
                doc = self.incast_run(base + peers.GRID[name][1], d,
                                      "%s-run%d" % (name, r + 1),
                                      r == runs - 1)
                f = peers.run_figures(doc)
                if doc is None:
                    f["error"] = self.notes[-1] if self.notes else \
                        "no results"
                figures[name].append(f)
                if f.get("congestion_control"):
                    out["congestion_control"] = f["congestion_control"]
                self.say("peers %s run %d: %s" % (
                    name, r + 1, f.get("error") or
                    "daqring / deep FIFO goodput %.3f, p99 %.3f" % (
                        f.get("goodput_ratio") or 0,
                        f.get("p99_ratio") or 0)))
                out["points"][name] = dict(peers.point_summary(
                    figures[name]), runs=figures[name])

    # ---------------------------------------------------------- lossless
    def part_lossless(self) -> None:
        """bench/lossless.py: per point and repeat one daq-incast run of
        the daqring set up as the documentation advises; repeats go
        through the points in alternating order."""
        runs = self.args.lossless_runs or (2 if self.quick else 20)
        names = lossless.parse_points(self.args.lossless_points, self.quick)
        events = self.args.lossless_events or (10 if self.quick else 20)
        d = os.path.join(self.out, "lossless")
        os.makedirs(d, exist_ok=True)
        base = [sys.executable, tool_path("daq-incast") or "daq-incast",
                "--ovs-build", os.path.abspath(self.args.ovs_build),
                "--pmd-cpu-mask", self.args.pmd_cpu_mask, "-q",
                "--events", str(events)] + lossless.SETUP
        if self.args.hugepages == "off":
            base += ["--hugepages", "off"]
        base += shlex.split(self.args.lossless_args or "")
        out: Dict[str, Any] = {"dir": rel_top(d), "runs": runs,
                               "events": events, "points": {}}
        self.res["lossless"] = out
        figures: Dict[str, List[Dict[str, Any]]] = {n: [] for n in names}
        for r in range(runs):
            for name in (names if r % 2 == 0 else names[::-1]):
                self.say("lossless %s, run %d/%d" % (name, r + 1, runs))
                doc = self.incast_run(base + lossless.POINTS[name][1], d,
                                      "%s-run%d" % (name, r + 1), False)
                f = lossless.run_figures(doc)
                if doc is None:
                    f["error"] = self.notes[-1] if self.notes else \
                        "no results"
                figures[name].append(f)
                if f.get("congestion_control"):
                    out["congestion_control"] = f["congestion_control"]
                self.say("lossless %s run %d: %s" % (
                    name, r + 1, f.get("error") or
                    "%.2f%% of ideal, %d drops, %d RTOs" % (
                        100 * f["ideal_ratio"], f["drops"],
                        f["rto_timeouts"])))
                out["points"][name] = dict(
                    lossless.point_summary(figures[name]),
                    runs=figures[name])

    # --------------------------------------------------- fabric incast
    def part_fabric_incast(self) -> None:
        """daq-incast --topology fabric at each of --fabric-incast-rates
        (one plane) and --fabric-incast-two-planes (two), --incast-runs
        times (3, quick 1): every mode without a failure, then the
        daqring mode with a leaf-spine link down and up again
        (fabric_incast.py).  One subdirectory per point."""
        runs = self.args.incast_runs or (1 if self.quick else 3)
        top = os.path.join(self.out, "fabric-incast")
        extra = shlex.split(self.args.fabric_incast_args or "")
        base = [sys.executable, tool_path("daq-incast") or "daq-incast",
                "--ovs-build", os.path.abspath(self.args.ovs_build),
                "--pmd-cpu-mask", self.args.pmd_cpu_mask, "-q",
                "--hugepages", self.args.hugepages, "--topology", "fabric"]

        def show(cmd: List[str]) -> str:
            return " ".join(["utilities/daq-incast"]
                            + [rel_top(x) if x.startswith("/") else x
                               for x in cmd[2:]])
        points: List[Dict[str, Any]] = []
        self.res["fabric-incast"] = {"dir": rel_top(top), "points": points}
        shapes = ([(1, r) for r in self.args.fabric_incast_rates]
                  + [(2, r) for r in self.args.fabric_incast_two_planes])
        for planes, rate in shapes:
            d = os.path.join(top, rate if planes == 1
                             else "%dplanes-%s" % (planes, rate))
            os.makedirs(d, exist_ok=True)
            rate_args = ["--link-rate", rate, "--planes", str(planes)]
            steady = base + shlex.split(STEADY_ARGS) + rate_args + extra
            fail = base + shlex.split(FAILOVER_ARGS) + rate_args + extra
            out: Dict[str, Any] = {"link_rate": rate, "planes": planes,
                                   "dir": rel_top(d),
                                   "command": show(steady),
                                   "failover_command": show(fail)}
            points.append(out)
            rate = point_label(out)
            data: List[Optional[Dict[str, Any]]] = []
            fdata: List[Optional[Dict[str, Any]]] = []
            for i in range(runs):
                self.say("fabric incast at %s: run %d/%d"
                         % (rate, i + 1, runs))
                data.append(self.incast_run(steady, d, "run%d" % (i + 1),
                                            i == runs - 1))
                self.say("fabric failover at %s: run %d/%d"
                         % (rate, i + 1, runs))
                fdata.append(self.incast_run(fail, d,
                                             "failover%d" % (i + 1),
                                             i == runs - 1))
            out.update(fabric_summary(data, fdata))

    def incast_preexec(self) -> None:
        """daq-incast places its own threads: give it all our CPUs back."""
        die_with_parent()
        os.sched_setaffinity(0, self.all_cpus)
