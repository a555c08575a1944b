# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-bench: benchmarks of ovs-daqring ("make bench").

Every number is a ratio measured within one run, with repeats alternated
between the two sides to cancel drift, because the machines it runs on are
shared and noisy.  See Documentation/topics/bench.rst.

The program's argument parser and main(); the bench is the package
ovs_daqring.bench (driver.py runs its parts, fabric_scale/ is --fabric).
"""

import argparse
import os
import shlex
import sys
from typing import List, Optional

from .. import TOP, VERSION
from ..bench import lossless
from ..bench.driver import cleanup_stale, render, run_bench
from ..bench import fabric_failover
from ..bench.fabric_incast import FAILOVER_ARGS, STEADY_ARGS
from ..bench.fabric_incast import RATES as FABRIC_RATES
from ..bench.fabric_incast import TWO_PLANE_RATES
from ..bench.fabric_incast import parse_rates as parse_fabric_rates
from ..bench.fabric_scale.runner import FabricBench
from ..bench.fabric_scale.shape import Shape, check_shape
from ..bench.parts import DEFAULT_PARTS, PARTS
from ..bench.peers import GRID, QUICK_POINTS, parse_points
from ..bench.runner import Bench
from ..bench.switch import DEFAULT_OVS_BUILD, STOCK_VSWITCHD
from ..hosts import ConfigError, parse_cpu_mask
from ..process import install_signal_handlers


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
  share     (only when named) two daqrings bound to one egress with
            egress-max-rate, on PMD threads on both cores polling them
            at very different rates: each ring's share and the egress's
            rate at 10 and 100 Gbit/s
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
  fabric-failover  (only when named) daq-incast --failover-target of
            each of --failover-targets (a ROS leaf's uplink, the HLT
            leaf's, a whole spine), --failover-runs times, under the
            incast of make demo-fabric, with the loss probe: what is lost
            where the failure is seen and where it needs the planner, on
            the return home, RTOs, every frame counted; every run counts

and writes OUT/bench.json and OUT/summary.md, with the PMD thread's share
of its core (schedstat) next to every number.""",
        epilog="""examples:
  daq-bench --quick
  daq-bench --parts hop,scale --repeats 3
  daq-bench --pmd-cpu-mask 0x4 --src-devargs 0000:81:00.0 \\
      --sink-devargs 0000:81:00.1 --dpdk-extra '' --parts hop,builds
""")
    g = p.add_argument_group("what to run")
    add_measure_options(g)
    add_incast_options(g)
    add_switch_options(p)
    add_fabric_options(p)
    add_output_options(p)
    return p


def add_measure_options(g: argparse._ArgumentGroup) -> None:
    """What to run: the parts, the windows, the switch parts' points."""
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
    g.add_argument("--share-rates", default="10000000000,100000000000",
                   help="share: egress-max-rates in bit/s (default: "
                   "%(default)s)")
    g.add_argument("--share-loaders", type=int, default=6,
                   help="share: null sources whose packets the slow PMD "
                   "thread drops, to poll its ring less often (default: "
                   "%(default)s)")
    g.add_argument("--share-burst-us", type=float, default=300.0,
                   help="share: egress-max-burst-bytes, what the rate "
                   "sends in this many us, where more than the default; "
                   "it must outlast the PMD threads' stalls (default: "
                   "%(default)s)")
    g.add_argument("--shaping-max-fps", type=float, default=2e6,
                   help="shaping: skip max-rate points above this many "
                   "frames per second, beyond what one PMD forwards "
                   "through a daqring here (default: %(default)g)")


def add_incast_options(g: argparse._ArgumentGroup) -> None:
    """What to run: the parts that run daq-incast."""
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
    g.add_argument("--failover-targets", metavar="TARGETS",
                   default=fabric_failover.TARGETS,
                   help="fabric-failover: the failures, daq-incast "
                   "--failover-target values, comma-separated (default: "
                   "%(default)s)")
    g.add_argument("--failover-runs", type=int, metavar="N",
                   help="fabric-failover: runs of each failure (default: "
                   "%d, quick 1)" % fabric_failover.RUNS)
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


def add_switch_options(p: argparse.ArgumentParser) -> None:
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


def add_fabric_options(p: argparse.ArgumentParser) -> None:
    """The options of --fabric (fabric_scale/)."""
    g = p.add_argument_group(
        "the fabric's scale (--fabric; Documentation/topics/bench.rst)")
    g.add_argument("--fabric", action="store_true",
                   help="measure the fabric's convergence instead of the "
                   "parts: from an empty fabric, a one-DCM change, a link "
                   "failure; writes OUT/fabric.json and OUT/fabric.md")
    g.add_argument("--fabric-runs", type=int, default=1, metavar="N",
                   help="runs, each with its own switches (default "
                   "%(default)s)")
    for k, v, what in (("planes", 2, "planes"),
                       ("spines", 2, "spines per plane"),
                       ("ros-leaves", 1, "ROS leaves per plane"),
                       ("leaves", 13, "HLT leaves per plane"),
                       ("hosts", 4, "HLT hosts per HLT leaf"),
                       ("ros", 4, "ROS hosts per ROS leaf"),
                       ("dcms", 2048, "DCMs"),
                       ("ring-size", 1024, "ring size of each DCM")):
        g.add_argument("--fabric-" + k, type=int, default=v, metavar="N",
                       help="%s (default %%(default)s)" % what)
    g.add_argument("--fabric-dpdk-mem", type=int, default=128, metavar="MB",
                   help="DPDK memory of an HLT leaf (--no-huge -m MB; "
                   "default %(default)s)")
    for k, t, v, mv, what in (
            ("interval", float, 2.0, "SECS", "the agents' --interval"),
            ("election-timer", int, 30000, "MS",
             "the fabric database's Raft election timer"),
            ("planners", int, 3, "N", "agents that are planner candidates "
             "(the first N spines;"),
            ("timeout", float, 300, "SECS",
             "bound on each scenario's convergence")):
        g.add_argument("--fabric-" + k, type=t, default=v, metavar=mv,
                       help="%s%sdefault %%(default)s)"
                       % (what, " " if what.endswith(";") else " ("))


def add_output_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("output")
    g.add_argument("--out", default=os.path.join(TOP, "bench-results"),
                   metavar="DIR", help="results directory (default: "
                   "bench-results/ of the source tree)")
    g.add_argument("--doc", metavar="PATH",
                   help="also write the summary to this file, replacing "
                   "it (e.g. /tmp/bench-summary.md)")
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
        ns.share_rates = [int(x) for x in ns.share_rates.split(",")]
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
    if any(not 1000 <= r <= 10**12 for r in ns.share_rates):
        p.error("--share-rates must be within 1000..10^12 bit/s")
    if not 0 <= ns.share_burst_us <= 10**6:
        p.error("--share-burst-us must be within 0..10^6")
    if not 0 <= ns.share_loaders <= 20:
        p.error("--share-loaders must be within 0..20")
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
    try:
        ns.failover_targets = fabric_failover.parse_targets(
            ns.failover_targets)
    except ValueError as e:
        p.error(str(e))
    for name in ("peers_runs", "peers_events", "lossless_runs",
                 "lossless_events", "failover_runs"):
        v = getattr(ns, name)
        if v is not None and v < 1:
            p.error("--%s must be >= 1" % name.replace("_", "-"))
    if ns.repeats is not None and ns.repeats < 1:
        p.error("--repeats must be >= 1")
    if ns.window is not None and ns.window <= 0:
        p.error("--window must be > 0")
    check_fabric_options(p, ns)
    return ns


def check_fabric_options(p: argparse.ArgumentParser,
                         ns: argparse.Namespace) -> None:
    why = check_shape(Shape(ns.fabric_planes, ns.fabric_spines,
                            ns.fabric_ros_leaves, ns.fabric_leaves,
                            ns.fabric_hosts, ns.fabric_ros, ns.fabric_dcms,
                            ns.fabric_ring_size))
    if why:
        p.error(why)
    if ns.fabric_runs < 1:
        p.error("--fabric-runs must be >= 1")
    if ns.fabric_dpdk_mem < 16:
        p.error("--fabric-dpdk-mem must be >= 16 MB")
    if not ns.fabric_interval >= 0.1:
        p.error("--fabric-interval must be >= 0.1 s")
    if not 100 <= ns.fabric_election_timer <= 600000:
        p.error("--fabric-election-timer must be within 100..600000 ms")
    if ns.fabric_planners < 1:
        p.error("--fabric-planners must be >= 1")
    if not ns.fabric_timeout > 0:
        p.error("--fabric-timeout must be > 0")


def main(argv: Optional[List[str]] = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    args = parse_args(argv)
    if args.render:
        return render(args)
    if args.cleanup_stale:
        return cleanup_stale()
    if args.fabric:
        if os.geteuid() != 0:
            sys.stderr.write("daq-bench: error: --fabric must run as root "
                             "(DPDK switches)\n")
            return 2
        fabric = FabricBench(args)
        install_signal_handlers(args.timeout)
        return fabric.run(argv)
    bench = Bench(args)
    # SIGINT, SIGTERM, SIGHUP and the --timeout alarm raise Interrupted,
    # as in daq-incast.
    install_signal_handlers(args.timeout)
    return run_bench(bench, argv)
