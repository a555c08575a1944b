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
import shutil
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import TOP, VERSION, hugepages
from ..hosts import (ConfigError, build_dpdk_version, loadavg, machine,
                     other_vswitchd, parse_cpu_mask)
from ..process import (STALE_BENCH_RE, Cleanup, Interrupted, RunError,
                       die_with_parent, install_signal_handlers, run,
                       signals_held, stale_namespaces, stop_process)
from . import fabric
from .analysis import (DEFAULT_OVS_BUILD, DEFAULT_PARTS, LOG_KEEP, PARTS,
                       SCHEMA, STOCK_SCHEMA, STOCK_VSWITCHD, fwd_metrics,
                       markdown, reanalyse, summarize, verdicts)
from .parse import (parse_perf_report, parse_pmd_perf, parse_pmd_stats,
                    pmd_totals)
from .fabric_incast import FAILOVER_ARGS, STEADY_ARGS
from .fabric_incast import RATES as FABRIC_RATES
from .fabric_incast import TWO_PLANE_RATES
from .fabric_incast import parse_rates as parse_fabric_rates
from . import lossless
from .parts import Parts
from .peers import GRID, QUICK_POINTS, parse_points
from .source import source_state
from .switch import Build, Switch, build, tree_build


# ================================================================ bench
class Bench(Parts):
    """A daq-bench run: its switches, notes, results and driver; the
    parts themselves are in parts.py."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.quick = args.quick
        self.repeats = args.repeats or (2 if args.quick else 5)
        self.window = args.window or (1.0 if args.quick else 2.0)
        self.out = os.path.abspath(args.out)
        # A private directory (mkdtemp, made by main()): the switches'
        # sockets, logs and the hugetlbfs mount of the run.
        self.workdir = ""
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
        # daq-bench.<pid>.XXXXXX: --cleanup-stale knows a dead run's.
        self.workdir = tempfile.mkdtemp(prefix="daq-bench.%d."
                                        % os.getpid())
        workdir = self.workdir
        self.cleanup.push("remove " + workdir,
                          lambda: shutil.rmtree(workdir, ignore_errors=True))
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
                    getattr(self, "part_" + part.replace("-", "_"))()
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
  sleep     CPU time of the PMD thread with max sleep 10 ms and 2048
            shaped daqrings each holding a packet for a later deadline
  shaping   achieved/configured dequeue rate over a poll-interval x
            max-burst grid, and achieved/configured wire rate of
            max-rate from 10 Mbit/s to 10 Gbit/s (64 and 1514 B frames)
  fairness  Jain index of 8 backlogged daqrings sharing one egress
  builds    stock Debian ovs-vswitchd-dpdk vs unpatched base vs patched
            (-O2) vs -O3
  incast    utilities/daq-incast (stock / credits / daqring)
  peers     daq-incast's daqring against its deep-buffer peer (a Linux
            bridge with deep FIFOs) over a bounded grid, DCMs sharing a
            link, a 10x hog
  lossless  (only when named) the daqring set up as the docs advise
            (bound, byte-shaped, burst bounded in bytes, flow buckets),
            20 runs at each of several points: every run >= 99% of
            ideal, 0 drops, 0 RTOs
  fabric-incast  (only when named) daq-incast --topology fabric: every
            mode through an emulated leaf-spine, and a leaf-spine link
            failing under load, at each of --fabric-incast-rates (one
            plane) and --fabric-incast-two-planes; valid runs only (PMD
            >= 90% of its core)

and writes OUT/bench.json and OUT/summary.md, with the PMD thread's share
of its core (schedstat) next to every number.""",
        epilog="""examples:
  daq-bench --quick
  daq-bench --parts hop,scale --repeats 3
  daq-bench --pmd-cpu-mask 0x4 --src-devargs 0000:81:00.0 \\
      --sink-devargs 0000:81:00.1 --dpdk-extra '' --parts hop,builds
""")
    g = p.add_argument_group("what to run")
    g.add_argument("--parts", default=",".join(DEFAULT_PARTS),
                   help="comma-separated parts of %s (default: "
                   "%%(default)s)" % ",".join(PARTS))
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
    g.add_argument("--shaping-stall-ms", type=float, default=10.0,
                   help="shaping: max-rate points set max-burst-bytes to "
                   "what the rate sends in this many ms, where that is "
                   "more than --shaping-byte-burst frames, so that a PMD "
                   "stall that long costs no link time; 0: never set "
                   "(default: %(default)s)")
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
    g.add_argument("--fabric-incast-args", metavar="ARGS", default="",
                   help="fabric-incast: more daq-incast arguments for "
                   "both of its runs (they come after the defaults, '%s' "
                   "and '%s'; the link rate comes from "
                   "--fabric-incast-rates)" % (STEADY_ARGS, FAILOVER_ARGS))
    g.add_argument("--fabric-incast-rates", metavar="RATES",
                   default=FABRIC_RATES,
                   help="fabric-incast: the HLT hosts' access-link rates "
                   "(daq-incast --link-rate), comma-separated: the runs "
                   "are made at each, and a target is met only if it is "
                   "at every rate (default: %(default)s)")
    g.add_argument("--fabric-incast-two-planes", metavar="RATES",
                   default=TWO_PLANE_RATES,
                   help="fabric-incast: the same with two planes (--planes "
                   "2) at these access-link rates, more points judged "
                   "alike; '' for none (default: %(default)s, the same "
                   "limits as the one-plane default's)")
    g.add_argument("--skip-incast", action="store_true",
                   help="leave out the incast part")
    g.add_argument("--peers-points", metavar="NAMES",
                   help="peers: grid points, comma-separated, or all "
                   "(default: all; quick: %s); the grid: %s"
                   % (",".join(QUICK_POINTS), ", ".join(GRID)))
    g.add_argument("--peers-runs", type=int, metavar="N",
                   help="peers: daq-incast runs per point (default: 3, "
                   "quick 1)")
    g.add_argument("--peers-events", type=int, metavar="N",
                   help="peers: events per DCM and mode (default: 40, "
                   "quick 15)")
    g.add_argument("--peers-args", metavar="ARGS",
                   help="peers: more daq-incast arguments for every point")

    g.add_argument("--lossless-points", metavar="NAMES",
                   help="lossless: points, comma-separated, or all "
                   "(default: all; quick: %s); the points: %s"
                   % (",".join(lossless.QUICK_POINTS),
                      ", ".join(lossless.POINTS)))
    g.add_argument("--lossless-runs", type=int, metavar="N",
                   help="lossless: daq-incast runs per point (default: "
                   "20, quick 2)")
    g.add_argument("--lossless-events", type=int, metavar="N",
                   help="lossless: events per run (default: 20, quick 10)")
    g.add_argument("--lossless-args", metavar="ARGS",
                   help="lossless: more daq-incast arguments for every "
                   "point")

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

    fabric.add_args(p)

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
    g.add_argument("--cleanup-stale", action="store_true",
                   help="measure nothing: remove what daq-bench runs that "
                   "were killed left behind (namespaces, work directories "
                   "with their hugetlbfs mount and the hugepages they "
                   "reserved, DPDK runtime directories) and exit")
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
    if not 0 <= ns.shaping_stall_ms <= 100:
        p.error("--shaping-stall-ms must be within 0..100")
    if any(not 1000 <= r <= 10**12 for r in ns.shaping_rates):
        p.error("--shaping-rates must be within 1000..10^12 bit/s")
    if any(not 60 <= f <= 9000 for f in ns.shaping_frames):
        p.error("--shaping-frames must be within 60..9000 bytes")
    try:
        parse_points(ns.peers_points, ns.quick)
    except ValueError as e:
        p.error(str(e))
    try:
        lossless.parse_points(ns.lossless_points, ns.quick)
        ns.fabric_incast_rates = parse_fabric_rates(ns.fabric_incast_rates)
        ns.fabric_incast_two_planes = parse_fabric_rates(
            ns.fabric_incast_two_planes, "--fabric-incast-two-planes",
            empty_ok=True)
    except ValueError as e:
        p.error(str(e))
    try:
        words = shlex.split(ns.fabric_incast_args or "")
    except ValueError as e:
        p.error("--fabric-incast-args: %s" % e)
    # (daq-incast takes an option's unambiguous prefix too.)
    if any(len(w.split("=")[0]) >= len("--link-r")
           and "--link-rate".startswith(w.split("=")[0]) for w in words):
        p.error("--fabric-incast-args: give the link rates with "
                "--fabric-incast-rates, not --link-rate")
    if any(w.split("=")[0] == "--planes" for w in words):
        p.error("--fabric-incast-args: give two planes' rates with "
                "--fabric-incast-two-planes, not --planes")
    for name in ("peers_runs", "peers_events", "lossless_runs",
                 "lossless_events"):
        v = getattr(ns, name)
        if v is not None and v < 1:
            p.error("--%s must be >= 1" % name.replace("_", "-"))
    if ns.repeats is not None and ns.repeats < 1:
        p.error("--repeats must be >= 1")
    if ns.window is not None and ns.window <= 0:
        p.error("--window must be > 0")
    fabric.check_args(p, ns)
    return ns


def cleanup_stale() -> int:
    """What killed daq-bench runs left: namespaces and DPDK file prefixes
    dqb<pid>-<n>, work directories daq-bench.<pid>.* (and daq-bench.<pid>
    of older versions) with their hugepages."""
    if os.geteuid() != 0:
        sys.stderr.write("daq-bench: error: --cleanup-stale must run as "
                         "root\n")
        return 2
    names = [line.split()[0] for line in
             run(["ip", "netns", "list"]).splitlines() if line.strip()]
    stale = stale_namespaces(names, STALE_BENCH_RE)
    for name in stale:
        run(["ip", "netns", "del", name], check=False)
        print("removed namespace %s" % name)
    done, errors = hugepages.remove_stale_runs(r"^daq-bench\.(\d+)(\.|$)",
                                               STALE_BENCH_RE.pattern)
    for what in done:
        print(what)
    for e in errors:
        sys.stderr.write("daq-bench: error: %s\n" % e)
    if not stale and not done and not errors:
        print("nothing stale")
    return 1 if errors else 0


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
    if args.cleanup_stale:
        return cleanup_stale()
    if args.fabric:
        return fabric.main(args, argv)
    bench = Bench(args)
    # SIGINT, SIGTERM, SIGHUP and the --timeout alarm raise Interrupted,
    # as in daq-incast.
    install_signal_handlers(args.timeout)
    return bench.main(argv)
