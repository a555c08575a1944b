# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-incast as the parts incast, peers, lossless and fabric-incast run
it: its command line, one run with its JSON (and its output, logs and
plots) in a directory of the part's."""

import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional, Sequence

from .. import tool_path
from ..process import die_with_parent, stop_process
from .runner import Bench
from .source import rel, rel_top


def command(bench: Bench) -> List[str]:
    """daq-incast with the run's build and PMD core, quiet: what every
    part's command line starts with."""
    return [sys.executable, tool_path("daq-incast") or "daq-incast",
            "--ovs-build", os.path.abspath(bench.args.ovs_build),
            "--pmd-cpu-mask", bench.args.pmd_cpu_mask, "-q"]


def shown(cmd: List[str]) -> str:
    """A command() line as the results show it: utilities/daq-incast and
    paths of the source tree relative to it."""
    return " ".join(["utilities/daq-incast"]
                    + [rel_top(x) if x.startswith("/") else x
                       for x in cmd[2:]])


def run_incast(bench: Bench, cmd: List[str], d: str, name: str,
               plots: bool) -> Optional[Dict[str, Any]]:
    """One daq-incast run; its JSON, or None (error noted)."""
    js = os.path.join(d, "%s.json" % name)
    c = cmd + ["--json", js, "--log-dir", os.path.join(d, "logs-" + name)]
    if plots:
        c += ["--plot-dir", os.path.join(d, "plots-" + name)]
    with open(os.path.join(d, "%s.out" % name), "w") as log:
        p = subprocess.Popen(c, stdout=log, stderr=subprocess.STDOUT,
                             preexec_fn=lambda: preexec(bench.all_cpus))
        try:
            rc = p.wait(bench.args.incast_timeout)
        except subprocess.TimeoutExpired:
            stop_process(p, grace=60)
            rc = -1
        except BaseException:
            stop_process(p, grace=60)
            raise
    if rc != 0:
        bench.note("daq-incast %s exited %d (see %s)" % (
            name, rc, rel(os.path.join(d, "%s.out" % name))))
    try:
        with open(js) as f:
            data: Dict[str, Any] = json.load(f)
    except (OSError, ValueError) as e:
        if rc == 0:
            bench.note("daq-incast %s: no results: %s" % (name, e))
        return None
    # A run that exited non-zero but wrote its results (a mode
    # failed) is kept: incast_summary() counts its failed modes.
    return data


def preexec(cpus: Sequence[int]) -> None:
    """daq-incast places its own threads: give it all our CPUs back."""
    die_with_parent()
    os.sched_setaffinity(0, cpus)
