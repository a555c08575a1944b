# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A daq-bench run of the parts, from start to end: the host checked,
each part in turn, the results judged and written; and what --render
(the summary again from a bench.json) and --cleanup-stale (what killed
runs left) do instead."""

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from typing import Any, Dict, List

from .. import VERSION, hugepages
from ..hosts import build_dpdk_version, loadavg, machine, other_vswitchd
from ..process import (STALE_BENCH_RE, Interrupted, RunError, run,
                       signals_held, stale_namespaces)
from .parts import MEASURE
from .runner import Bench
from .source import source_state
from .summary import SCHEMA, markdown, reanalyse, verdicts


def check_host(bench: Bench) -> None:
    """Root and the patched build, or exit; hugepages reserved (or
    --no-huge, noted); this process off the PMD's CPUs; other
    ovs-vswitchd noted."""
    if os.geteuid() != 0:
        raise SystemExit("daq-bench: needs root (DPDK, namespaces)")
    err = bench.patched.check()
    if err:
        raise SystemExit("daq-bench: %s (run 'make' first)" % err)
    need = bench.socket_mem_mb + 512
    why = None
    if bench.args.hugepages == "off":
        bench.hugepages = False
    else:
        why = hugepages.reserve(need, os.path.join(bench.workdir,
                                                   "hugepages"),
                                bench.cleanup)
    if why is not None and bench.args.hugepages == "require":
        bench.cleanup.run()
        raise SystemExit("daq-bench: hugepages unavailable: %s" % why)
    elif why is not None:
        bench.hugepages = False
        bench.note("%s: running with --no-huge, cycle counts are higher "
                   "than with hugepages" % why)
    if not bench.other_cpus:
        bench.note("no CPU left outside the PMD mask: the PMD shares "
                   "its core with everything else")
    else:
        os.sched_setaffinity(0, bench.other_cpus)
    others = other_vswitchd()
    if others:
        bench.note("other ovs-vswitchd processes are running (%s): "
                   "they may share the PMD's core, see the PMD share "
                   "of each number" % ", ".join(others))


def result(bench: Bench, argv: List[str], info: Dict[str, Any],
           interrupted: bool) -> Dict[str, Any]:
    """bench.json: the run's (started with 'argv' on the machine 'info'
    describes) and every part's results, judged."""
    builds = {"patched": bench.patched.desc}
    if bench.stock:
        builds["stock"] = bench.stock.desc
    if bench.variant:
        builds["O3"] = bench.variant.desc
    if bench.base:
        builds["base"] = bench.base.desc
    info["loadavg_end"] = loadavg()
    res: Dict[str, Any] = {
        "schema": SCHEMA, "version": VERSION,
        "command": " ".join(["utilities/daq-bench"] + argv),
        "quick": bench.quick, "interrupted": interrupted,
        "started": bench.started.isoformat(timespec="seconds"),
        "duration_s": time.monotonic() - bench.t0,
        "machine": info, "binaries": builds,
        "source": source_state(),
        "config": {k: v for k, v in vars(bench.args).items()},
        "repeats": bench.repeats, "window_s": bench.window,
        "notes": bench.notes}
    res.update(bench.res)
    try:
        res["verdicts"] = verdicts(res)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
        bench.note("internal error while judging the results: %r" % e)
        res["verdicts"] = []
    return res


def write(bench: Bench, res: Dict[str, Any]) -> None:
    """OUT/bench.json, OUT/summary.md and the summary at --doc."""
    os.makedirs(bench.out, exist_ok=True)
    with open(os.path.join(bench.out, "bench.json"), "w") as f:
        json.dump(res, f, indent=1, sort_keys=True)
        f.write("\n")
    try:
        md = markdown(res)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
        md = "# ovs-daqring benchmark results\n\nsummary failed: %r\n" % e
    with open(os.path.join(bench.out, "summary.md"), "w") as f:
        f.write(md)
    if bench.args.doc:
        with open(bench.args.doc, "w") as f:
            f.write(md)
    bench.say("results in %s (bench.json, summary.md)" % bench.out)


def run_bench(bench: Bench, argv: List[str]) -> int:
    """The run: its work directory, the host checked, the parts in turn,
    the clean-up and the results (exit status 0, 1 if a part failed, 130
    if interrupted)."""
    # daq-bench.<pid>.XXXXXX: --cleanup-stale knows a dead run's.
    bench.workdir = tempfile.mkdtemp(prefix="daq-bench.%d."
                                     % os.getpid())
    workdir = bench.workdir
    bench.cleanup.push("remove " + workdir,
                       lambda: shutil.rmtree(workdir, ignore_errors=True))
    check_host(bench)
    info = machine(bench.pmd_cpus, bench.other_cpus,
                   "2 MiB pages, dpdk-socket-mem %s MB"
                   % bench.args.socket_mem_text
                   if bench.hugepages else
                   "none (--no-huge)")
    dpdk = build_dpdk_version(os.path.join(
        os.path.abspath(bench.args.ovs_build), "vswitchd", "ovs-vswitchd"))
    if dpdk:
        info["dpdk"] = dpdk
    os.makedirs(bench.workdir, exist_ok=True)
    os.makedirs(bench.out, exist_ok=True)
    interrupted = False
    failed = False
    try:
        failed = run_parts(bench, info)
    except Interrupted as e:
        interrupted = True
        bench.note("interrupted (signal %d)" % e.signum)
    finally:
        with signals_held():
            signal.alarm(0)
            for sw in list(bench.live):
                sw.stop()
            bench.cleanup.run()
            shutil.rmtree(bench.workdir, ignore_errors=True)
    res = result(bench, argv, info, interrupted)
    write(bench, res)
    for v in res["verdicts"]:
        bench.say("%-4s %s: %s" % ({True: "MET", False: "NOT",
                                    None: "--"}[v["met"]], v["key"],
                                   v["value"]))
    if interrupted:
        return 130
    return 1 if failed else 0


def run_parts(bench: Bench, info: Dict[str, Any]) -> bool:
    """The parts of --parts in turn (the other ovs-vswitchd running at
    the start of each into the machine's 'info'); whether one failed.  A
    part that fails is noted, its switches stopped, and the next one
    runs."""
    failed = False
    for part in bench.args.parts:
        if part == "incast" and bench.args.skip_incast:
            continue
        others = other_vswitchd()
        # net_null sources send identical frames, whose hash does
        # not depend on the port: with several sources, EMC entries
        # would evict each other, so those parts use in_port flows.
        bench.lookup = ("simple" if part in ("scale", "waiting",
                                             "fairness", "share")
                        else "emc")
        bench.say("part %s%s" % (part, "; other ovs-vswitchd "
                                 "running: " + ", ".join(others)
                                 if others else ""))
        info.setdefault("other_vswitchd_by_part", {})[part] = others
        try:
            MEASURE[part](bench)
        except RunError as e:
            failed = True
            bench.note("%s failed: %s" % (part, e))
            bench.res.setdefault(part, {})["error"] = str(e)
            for sw in list(bench.live):
                sw.stop()
    return failed


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
