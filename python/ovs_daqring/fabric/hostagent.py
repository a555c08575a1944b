# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at:
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.


"""ovs-daqfabric-agent --host: the fabric's agent on a ROS or HLT host.

It runs in the host's network namespace, watches the fabric database
(its Host row, the DCMs it steers and their assignments) and holds the
kernel to hostnet.host_routes(): the policy routing that sends each DCM's
traffic on its plane.  Every --interval it reads what the kernel holds of
its own (one 'ip -N -j -batch', the routes and rules of protocol
hostnet.RT_PROTO) and puts right what differs in one 'ip -batch'; nothing
runs when nothing differs.  It starts by adopting what is there, keeps
it while the fabric database is unreachable, and leaves it when it exits
(switching never waits for the control plane).  Its Node row (the host's
name) reports the planned generation it holds and its plane devices'
states."""

import argparse
import math
import os
import subprocess
import time
from typing import Any, Dict, List, Optional, Tuple

from .hostnet import (HostNet, Kernel, apply_batch, batch, host_monitored,
                      host_routes, read_kernel)
from .node import NodeBase, vlog
from .stale import current_assignments

# The tables a host's routes are computed from.
HOST_TABLES = ("Fabric", "Host", "DCM", "Assignment")


def run_ip(argv: List[str], stdin: str, timeout: float = 30
           ) -> Tuple[int, str, str]:
    """hostnet.Runner: 'ip' as a process."""
    try:
        p = subprocess.run(argv, input=stdin, capture_output=True,
                           text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 127, "", str(e)
    return p.returncode, p.stdout, p.stderr


def rp_filtered(devs: List[str],
                conf: str = "/proc/sys/net/ipv4/conf") -> List[str]:
    """Those of 'devs' on which the reverse-path filter is on (the larger
    of conf/all's and the device's rp_filter is not 0)."""
    def value(name: str) -> int:
        try:
            with open(os.path.join(conf, name, "rp_filter")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return 0
    every = value("all")
    return [d for d in devs if max(every, value(d)) != 0]


def batch_summary(lines: List[str]) -> str:
    """What a batch does, in a few words ("2 routes replaced, 1 rule
    added, 1 rule deleted"): a ROS host's first batch has a line per
    four-tuple of every DCM."""
    counts: Dict[Tuple[str, str], int] = {}
    for line in lines:
        what, verb = line.split()[:2]
        counts[(what, verb)] = counts.get((what, verb), 0) + 1
    done = {"replace": "replaced", "add": "added", "del": "deleted"}
    return ", ".join("%d %s%s %s" % (n, what, "s" if n > 1 else "",
                                     done.get(verb, verb))
                     for (what, verb), n in sorted(
                         counts.items(), key=lambda kv: (
                             ("replace", "add", "del").index(kv[0][1])
                             if kv[0][1] in done else 3, kv[0][0])))


class HostAgent(NodeBase):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args, args.host)
        self.timeout: float = args.timeout
        # Plane -> the host's device of that plane.
        self.devs: Dict[int, str] = dict(args.plane_dev)
        self.fabric.watch_slice(self.node, host_monitored)
        # What the kernel must hold, and the planned generation it is of
        # (None: nothing known yet, the kernel is left as it is).
        self.want: Optional[HostNet] = None
        self.want_gen = 0
        self.seqno = -1
        self.next_check = 0.0
        # The plane devices' states, as the last check read them.
        self.links: Dict[str, str] = {d: "down" for d in self.devs.values()}
        self.kernel = Kernel()
        self.n_checks = 0
        self.n_batches = 0
        self.rp_checked = False

    def close(self) -> None:
        # The routes and rules stay (switching never waits for the
        # control plane); the next agent adopts them.
        self.fabric.close()

    # ------------------------------------------------------------- fabric
    def read_fabric(self) -> None:
        """The routes and rules the fabric database gives this host
        now."""
        db = self.fabric
        fab = self.fabric_root()
        if fab is None:
            return
        state = db.state()
        # Its Host row as checked (rows are input, fabric/rows.py): a bad
        # one is not in the state, and the host keeps the routes it
        # holds.
        own = db.row_error("Host", self.node)
        self.note_rows(db.row_errors(), own, int(fab.planned_generation))
        if own is not None:
            self._note(None)
            return
        asg = db.assignments()
        if int(fab.planned_generation) < int(fab.generation):
            # A generation without its plan: no DCM steered into a plane
            # it removed (fabric/stale.py).
            asg = current_assignments(state, asg)
        net = host_routes(state, asg, self.node, self.devs)
        if net is None:
            # A typo in --host must not empty a host: leave it as it is.
            self._note("no host %s in the fabric (generation %d): the host "
                       "is left as it is" % (self.node, int(fab.generation)))
            return
        self._note(None)
        gen = int(fab.planned_generation)
        if (self.want is None or net != self.want or gen != self.want_gen):
            self.want, self.want_gen = net, gen
            self.next_check = 0.0

    # -------------------------------------------------------------- check
    def check(self) -> None:
        """Reads the kernel and puts right what differs from self.want
        (nothing but the read when nothing does)."""
        self.n_checks += 1
        try:
            self.kernel = read_kernel(self.run_ip)
        except OSError as e:
            if self.want is not None:
                self._failed(str(e))
            return
        if not self.rp_checked:
            self.rp_checked = True
            on = rp_filtered(sorted(set(self.devs.values())))
            if on:
                vlog.warn("host %s: the reverse-path filter is on for %s: "
                          "ARP and what reaches a DCM on the plane it just "
                          "left may be dropped (set net.ipv4.conf.all and "
                          "the device's rp_filter to 0)"
                          % (self.node, ", ".join(on)))
        links = {d: self.kernel.links.get(d, "down")
                 for d in self.devs.values()}
        if links != self.links:
            for d, st in sorted(links.items()):
                if st != self.links.get(d):
                    vlog.info("host %s: %s is %s" % (self.node, d, st))
            self.links = links
            self.next_report = 0.0
        want = self.want
        if want is None:
            return
        lines = batch(self.kernel, want)
        problems = list(want.errors)
        # Of the devices its routes go through (a --plane-dev of a plane
        # no DCM is on may be absent: a host of a one-plane fabric).
        missing = sorted({r.dev for r in want.routes
                          if r.dev not in self.kernel.links})
        if missing:
            problems.append("no device %s in this network namespace"
                            % ", ".join(missing))
        if lines:
            self.n_batches += 1
            vlog.info("host %s: generation %d: %s" % (
                self.node, self.want_gen, batch_summary(lines)))
            for line in lines:
                vlog.dbg("ip %s" % line)
            why = apply_batch(self.run_ip, lines)
            if why is not None:
                problems.append(why)
        if problems:
            self._failed("; ".join(problems))
        else:
            self._held()

    def run_ip(self, argv: List[str], stdin: str) -> Tuple[int, str, str]:
        return run_ip(argv, stdin, self.timeout)

    def _held(self) -> None:
        if self.applied_gen != self.want_gen or self.error is not None:
            vlog.info("host %s holds the routes of generation %d: %d "
                      "DCMs steered, %d routes, %d rules"
                      % (self.node, self.want_gen, len(self.want.planes),
                         len(self.want.routes), len(self.want.rules)))
            # Said at once ('fabric apply --wait' waits for it).
            self.next_report = 0.0
        self.error = None
        self.failed_gen = None
        self.applied_gen = self.want_gen

    def _failed(self, why: str) -> None:
        """The host could not be brought to the routes of self.want_gen
        (whole): what could be is, the rest is tried again every
        interval."""
        if why != self.error:
            vlog.warn("host %s: generation %d: %s"
                      % (self.node, self.want_gen, why))
        if self.want_gen != self.failed_gen or why != self.error:
            self.next_report = 0.0
        self.error = why
        self.failed_gen = self.want_gen

    # ------------------------------------------------------------- report
    def report(self) -> None:
        if self.report_busy():
            return
        now = time.monotonic()
        if not self.fabric_up() or now < self.next_report:
            return
        self.next_report = now + self.interval
        cols = self.node_columns(self.applied_gen,
                                 self.error or self.fabric_note,
                                 self.failed_gen)
        self.write_report(cols, dict(self.links), now)

    # --------------------------------------------------------------- loop
    def run(self) -> None:
        self.fabric.run()
        self.report()
        if (self.fabric_up() and self.fabric.narrow()
                and self.fabric.changes(*HOST_TABLES) != self.seqno):
            self.seqno = self.fabric.changes(*HOST_TABLES)
            self.read_fabric()
        if time.monotonic() >= self.next_check:
            self.check()
            self.next_check = time.monotonic() + self.interval
        if self.next_report == 0.0:
            self.report()

    def wait(self, poller: Any) -> None:
        self.fabric.idl.wait(poller)
        due = min(self.report_deadline(poller), self.next_check)
        left = due - time.monotonic()
        poller.timer_wait(max(0, math.ceil(left * 1000)))

    def status(self) -> Dict[str, Any]:
        w = self.want
        out = self.status_head()
        out.update({
            "kind": "host",
            "wanted_generation": self.want_gen if w else None,
            "planes": {"plane %d" % p: d
                       for p, d in sorted(self.devs.items())},
            "links": dict(sorted(self.links.items())),
            "dcms": len(w.planes) if w else 0,
            "routes": len(w.routes) if w else 0,
            "rules": len(w.rules) if w else 0,
            "held": "%d routes, %d rules" % (len(self.kernel.routes),
                                             len(self.kernel.rules)),
            "checks": self.n_checks,
            "applies": self.n_batches,
            "monitored": self.monitored(),
            "reports": self.reports,
            "error": self.error or self.fabric_note or "-"})
        return out
