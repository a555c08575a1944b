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
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import TOP, VERSION, hugepages, tool_path
from ..hosts import (ConfigError, build_dpdk_version, loadavg, machine,
                     other_vswitchd, parse_cpu_mask)
from ..process import (Cleanup, Interrupted, RunError, die_with_parent,
                       read_text, run, signals_held, stop_process)
from .parse import (parse_configure_cflags, parse_perf_report, parse_pmd_perf,
                    parse_pmd_stats, pmd_totals)
from .analysis import (DEFAULT_OVS_BUILD, LOG_KEEP, PARTS, SCHEMA,
                       STOCK_SCHEMA, STOCK_VSWITCHD, delta, fmt_bps,
                       fwd_metrics, hop_analysis, incast_analysis,
                       incast_summary, jain, markdown, opt_verdict, ratios,
                       reanalyse, regression_verdict, scale_analysis,
                       summarize, verdicts, window_share)
from .source import rel, rel_top, source_state
from .switch import Build, Switch, build, opt_level, tree_build


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
