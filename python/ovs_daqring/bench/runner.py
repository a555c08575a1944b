# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The Bench of a daq-bench run: its builds, its switches, the
measurement windows and the topologies of the parts (a null source, a
daqring, a null sink), its notes and results."""

import argparse
import atexit
import datetime
import os
import shutil
import signal
import subprocess
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..hosts import parse_cpu_mask
from ..process import Cleanup, RunError, die_with_parent, run, stop_process
from .parse import (parse_perf_report, parse_pmd_perf, parse_pmd_stats,
                    pmd_totals)
from .runlog import RunLog
from .stats import fwd_metrics, summarize
from .switch import STOCK_SCHEMA, Build, Switch, build, tree_build


class Bench:
    """A daq-bench run: its builds, switches, measurement windows, notes
    and results (res: each part's, by name).  The parts (hop.py, ...)
    take it as their argument; driver.py runs them in turn."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.quick = args.quick
        self.repeats = args.repeats or (2 if args.quick else 5)
        self.window = args.window or (1.0 if args.quick else 2.0)
        self.out = os.path.abspath(args.out)
        # A private directory (mkdtemp, made by driver.run_bench()): the
        # switches' sockets, logs and the hugetlbfs mount of the run.
        self.workdir = ""
        self.live: List[Switch] = []
        self.t0 = time.monotonic()
        self.log = RunLog(self.out, args.quiet, self.t0)
        # The notes of the run (the results' "notes").
        self.notes = self.log.notes
        self.n_switch = 0
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
        self.log.note(text)

    def say(self, text: str) -> None:
        self.log.say(text)

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
        # OVS 3.x's pmd-stats-show counts cycles exactly; OVS 4.0 removed
        # it (the name is left as an alias of pmd-perf-show) and
        # parse_pmd_stats() reads pmd-perf-show's counters instead.
        try:
            stats = sw.appctl("dpif-netdev/pmd-stats-show")
        except RunError:
            stats = perf
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
        """direct: src -> sink, no daqring; daqring: src -> ring -> sink
        with two rules; bound: src -> ring with one rule, the ring bound to
        the sink (options:egress=sink)."""
        if mode == "direct":
            sw.flows(self.fl(self.SRC, self.SINK))
            if "ring" in sw.ofports:
                sw.del_ports(["ring"])
        else:
            opts = ["type=daqring", "options:ring-size=4096",
                    "options:max-burst=%d" % burst,
                    "options:poll-interval=0"]
            if mode == "bound":
                opts.append("options:egress=sink")
            if "ring" in sw.ofports:
                if mode == "bound":
                    sw.vsctl("set", "Interface", "ring",
                             "options:egress=sink")
                else:
                    sw.vsctl("remove", "Interface", "ring", "options",
                             "egress")
            else:
                sw.add_ports([("ring", self.RING, opts)])
            if mode == "bound":
                sw.ofctl("del-flows", sw.mgmt, "in_port=%d" % self.RING)
                sw.flows(self.fl(self.SRC, self.RING))
            else:
                sw.flows(self.fl(self.RING, self.SINK),
                         self.fl(self.SRC, self.RING))
        self.settle()

    def mode_window(self, sw: Switch, mode: str) -> Dict[str, Any]:
        ins = ["src"] + (["ring"] if mode in ("daqring", "bound") else [])
        return self.fwd_window(sw, ins, ["sink"])
