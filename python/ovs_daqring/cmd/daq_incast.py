# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-incast (utilities/daq-incast, daq-incast(1)): its main(), which
validates the command line, prints the plan, runs the modes on one
switch (incast.runner.Runner) or through the emulated fabric
(incast.fabric.runner.FabricRunner) and reports them; and
--cleanup-stale."""

import atexit
import os
import re
import signal
import sys
from typing import Any, Dict, Optional, Sequence

from .. import VERSION, hugepages
from ..hosts import ConfigError, probe_host
from ..incast.describe import describe
from ..incast.fabric.failover import FailTarget, resolve_target
from ..incast.fabric.plan import make_fabric_plan
from ..incast.fabric.runner import FabricRunner
from ..incast.fabric.summary import describe_fabric
from ..incast.options import build_parser
from ..incast.report import report
from ..incast.runner import Runner
from ..incast.topology import make_plan
from ..incast.validation import validate
from ..process import (Cleanup, Interrupted, RunError,
                       install_signal_handlers, run, stale_namespaces)


def cleanup_stale() -> int:
    """Remove the namespaces and run directories of daq-incast runs that
    were killed before they could clean up (their daemons and agents died
    with them: see die_with_parent)."""
    if os.geteuid() != 0:
        sys.stderr.write("daq-incast: error: must run as root\n")
        return 2
    names = [line.split()[0] for line in
             run(["ip", "netns", "list"]).splitlines() if line.strip()]
    # (--topology fabric: dqf<pid>-<switch or host>.)
    stale = stale_namespaces(names) + stale_namespaces(
        names, re.compile(r"^dqf(\d+)-[a-z0-9-]+$"))
    for name in stale:
        run(["ip", "netns", "del", name], check=False)
        print("removed namespace %s" % name)
    # Work directories (with the hugepages reserved and the hugetlbfs
    # mounted there) and DPDK runtime directories (file prefix dqi<pid>,
    # see Switch) of dead runs.
    done, errors = hugepages.remove_stale_runs(
        r"^daq-incast\.dq[if](\d+)\.", r"^dq[if](\d+)$")
    for what in done:
        print(what)
    for e in errors:
        sys.stderr.write("daq-incast: error: %s\n" % e)
    if not stale and not done and not errors:
        print("nothing stale")
    return 1 if errors else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """daq-incast with ARGV (default: the command line's); the exit
    status."""
    if argv is None:
        argv = sys.argv[1:]
    ns = build_parser().parse_args(list(argv))
    if ns.version:
        print("daq-incast (ovs-daqring) %s" % VERSION)
        return 0
    if ns.cleanup_stale:
        return cleanup_stale()
    host = probe_host()
    fplan = None
    target: Optional[FailTarget] = None
    try:
        cfg = validate(ns, host, check_env=not ns.dry_run)
        if cfg.plot_dir:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise ConfigError("--plot-dir needs matplotlib "
                                  "(apt-get install python3-matplotlib)")
        plan = make_plan(os.getpid(), cfg.ros, cfg.dcms, cfg.ros_per_host,
                         cfg.port_frames, cfg.dcms_per_host
                         if cfg.topology == "switch" else 1)
        if cfg.topology == "fabric":
            fplan = make_fabric_plan(os.getpid(), cfg)
            if cfg.failover[0]:
                # (Against the plan: its links and spines.)
                target = resolve_target(fplan, ns.failover_target)
    except (ConfigError, ValueError) as e:
        sys.stderr.write("daq-incast: error: %s\n" % e)
        return 2
    if fplan is not None:
        print(describe_fabric(cfg, fplan, target))
        print("\n".join(describe(cfg, plan).splitlines()[2:]))
    else:
        print(describe(cfg, plan))
    early_notes = list(cfg.notes)
    if cfg.dry_run:
        return 0
    sys.stdout.flush()

    cleanup = Cleanup()
    atexit.register(cleanup.run)
    install_signal_handlers(cfg.timeout_s)
    runner: Runner = (FabricRunner(cfg, fplan, cleanup, target)
                      if fplan is not None else Runner(cfg, plan, cleanup))
    rc = 0
    doc: Optional[Dict[str, Any]] = None
    # --hold: the results are reported before the fabric is held, and the
    # signal that ends the hold is its normal end.
    held = False
    try:
        doc = runner.run_all()
        # (--hold is the fabric's: validate() refuses it on one switch.)
        if cfg.hold and isinstance(runner, FabricRunner):
            rc = report(doc, cfg, runner.ideal["goodput_bps"],
                        cfg.notes[len(early_notes):], rc)
            held = True
            runner.hold()
    except Interrupted as e:
        if held:
            sys.stderr.write("\ndaq-incast: stopping the fabric (--hold), "
                             "cleaning up\n")
        elif e.signum == signal.SIGALRM:
            sys.stderr.write("\ndaq-incast: --timeout %g s reached, "
                             "cleaning up\n" % cfg.timeout_s)
            rc = 1
        else:
            sys.stderr.write("\ndaq-incast: interrupted, cleaning up\n")
            rc = 128 + e.signum
    except RunError as e:
        sys.stderr.write("\ndaq-incast: %s\n" % e)
        rc = 1
    finally:
        signal.alarm(0)
        if cleanup.run():
            rc = rc or 1
    if doc is None and runner.modes:
        cfg.notes.append("incomplete: the run stopped after %d mode run(s)"
                         % len(runner.modes))
        doc = runner.document()
    if doc is None or held:
        return rc
    return report(doc, cfg, runner.ideal["goodput_bps"],
                  cfg.notes[len(early_notes):], rc)
