# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The run of daq-bench --fabric (FabricBench): per run the fabric set
up (a clustered fabric database, the switches and their agents), the
scenarios timed until every node converged, the fabric torn down; then
the results written (fabric.json, fabric.md)."""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ... import VERSION
from ...hosts import loadavg, machine, parse_cpu_mask
from ...process import (Cleanup, Interrupted, RunError, die_with_parent,
                        read_text, run, signals_held, stop_process)
from ...sandbox import tree_binaries
from ..source import source_state
from .check import check_plan, check_switch
from .cpu import cpu_delta, cpu_text, proc_cpu_s
from .nodes import FlowEvents, Node
from .results import SCENARIOS, SCHEMA, markdown, verdicts
from .shape import Shape, map_text

QUIET_S = 1.0          # no flow change for this long before checking
REST_S = 10.0          # the converged fabric's CPU is measured this long


def _stats(values: List[float]) -> Dict[str, Any]:
    v = sorted(values)
    if not v:
        return {"n": 0, "max": None, "p50": None, "min": None}
    return {"n": len(v), "max": v[-1], "min": v[0],
            "p50": v[(len(v) - 1) // 2] if len(v) % 2
            else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2}


class FabricBench:
    """A run of daq-bench --fabric: its runs one after the other, each
    with its own fabric database, switches and agents (setup()), the
    scenarios timed (scenario_*()), the tear-down; then the results."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.shape = Shape(args.fabric_planes, args.fabric_spines,
                           args.fabric_ros_leaves, args.fabric_leaves,
                           args.fabric_hosts, args.fabric_ros,
                           args.fabric_dcms, args.fabric_ring_size)
        self.bins = tree_binaries(os.path.abspath(args.ovs_build))
        self.out = os.path.abspath(args.out)
        self.pmd_cpus = parse_cpu_mask(args.pmd_cpu_mask)
        self.other_cpus = sorted(set(os.sched_getaffinity(0))
                                 - set(self.pmd_cpus)) or [0]
        # What observes the fabric (the flow monitors, the thread that
        # times their events, the loop that waits for the nodes) runs on
        # the PMD CPU(s), idle here (the HLT leaves' PMDs poll dummy
        # ports and sleep): on the control plane's core it took CPU from
        # the processes it timed, and its timestamps waited for that
        # core too.  What the bench sets up and checks runs with the
        # fabric.
        self.observer_cpus = self.pmd_cpus or self.other_cpus
        self.workdir = ""
        self.cleanup = Cleanup()
        self.nodes: Dict[str, Node] = {}
        self.db_procs: List["subprocess.Popen[bytes]"] = []
        self.fdb: Any = None
        self.events: Optional[FlowEvents] = None
        self.t_start = time.monotonic()
        self.notes: List[str] = []

    # ----------------------------------------------------------- misc
    def say(self, text: str) -> None:
        if not self.args.quiet:
            sys.stderr.write("daq-bench --fabric [%4.0fs] %s\n"
                             % (time.monotonic() - self.t_start, text))
            sys.stderr.flush()

    def preexec(self) -> None:
        die_with_parent()
        os.sched_setaffinity(0, set(self.other_cpus))

    def observer_preexec(self) -> None:
        """The bench's own flow monitors run where its observing thread
        and loop do (observer_cpus)."""
        die_with_parent()
        os.sched_setaffinity(0, set(self.observer_cpus))

    def remotes(self) -> str:
        return ",".join("unix:" + self.db_path(i, "sock")
                        for i in range(1, 4))

    def db_path(self, i: int, ext: str) -> str:
        return os.path.join(self.workdir, "db", "s%d.%s" % (i, ext))

    # ---------------------------------------------------------- set-up
    def start_database(self) -> None:
        from ...fabric import SCHEMA_NAME, schema_path
        os.makedirs(os.path.join(self.workdir, "db"))
        b = self.bins
        run([b.ovsdb_tool, "--election-timer=%d"
             % self.args.fabric_election_timer, "create-cluster",
             self.db_path(1, "db"), schema_path(),
             "unix:" + self.db_path(1, "raft")])
        for i in (2, 3):
            run([b.ovsdb_tool, "join-cluster", self.db_path(i, "db"),
                 SCHEMA_NAME, "unix:" + self.db_path(i, "raft"),
                 "unix:" + self.db_path(1, "raft")])
        for i in (1, 2, 3):
            with open(self.db_path(i, "out"), "w") as out:
                p = subprocess.Popen(
                    [b.ovsdb_server, "--no-chdir", "-vconsole:off",
                     "--log-file=" + self.db_path(i, "log"),
                     "--unixctl=" + self.db_path(i, "ctl"),
                     "--remote=punix:" + self.db_path(i, "sock"),
                     self.db_path(i, "db")], stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=self.preexec)
            self.db_procs.append(p)
            self.cleanup.push("stop fabric database member %d" % i,
                              lambda p=p: stop_process(p))
        deadline = time.monotonic() + 60
        while True:
            st = [run([b.appctl, "-t", self.db_path(i, "ctl"),
                       "cluster/status", SCHEMA_NAME], check=False)
                  for i in (1, 2, 3)]
            if (all("Status: cluster member" in s for s in st)
                    and any("Role: leader" in s for s in st)):
                return
            if time.monotonic() > deadline:
                raise RunError("the fabric database did not form a cluster "
                               "within 60 s (see %s)" % self.db_path(1,
                                                                     "log"))
            time.sleep(0.2)

    def make_nodes(self) -> None:
        from ...fabric.fabmap import FabricMapReader
        state = FabricMapReader("fabric map").parse(map_text(self.shape))
        for s in state.switches:
            ports = set()
            for lk in state.links:
                p = lk.port_of(s.name)
                if p is not None:
                    ports.add(p)
            for h in state.hosts:
                for _, leaf, port in h.attachments:
                    if leaf == s.name:
                        ports.add(port)
            self.nodes[s.name] = Node(self, s.name, s.role, s.plane,
                                      s.dpdk, sorted(ports))

    def setup(self) -> None:
        self.workdir = tempfile.mkdtemp(prefix="dqf.", dir="/tmp")
        wd = self.workdir
        self.cleanup.push("remove " + wd,
                          lambda: shutil.rmtree(wd, ignore_errors=True))
        self.cleanup.push("keep the logs", self.keep_logs)
        self.say("fabric database: 3-member cluster, election timer %d ms"
                 % self.args.fabric_election_timer)
        self.start_database()
        self.make_nodes()
        for i, n in enumerate(sorted(self.nodes.values(),
                                     key=lambda n: n.name)):
            self.say("switch %d/%d: %s (%s)" % (
                i + 1, len(self.nodes), n.name,
                "DPDK --no-huge -m %d" % self.args.fabric_dpdk_mem
                if n.dpdk else "no DPDK, dummy datapath"))
            n.start_switch()
        from ...fabric.db import FabricDb
        self.fdb = FabricDb(self.remotes(), 120)
        spines = sorted(n for n, x in self.nodes.items()
                        if x.role == "spine")
        planners = set(spines[:self.args.fabric_planners])
        for n in self.nodes.values():
            n.start_agent(n.name in planners)
            n.start_monitor()
        self.events = FlowEvents(list(self.nodes.values()),
                                 self.observer_cpus)
        self.events.start()
        self.say("%d agents started (planner candidates: %s); waiting for "
                 "their Node rows" % (len(self.nodes),
                                      ", ".join(sorted(planners))))
        self.fdb.run_until(lambda: {r.name for r in self.fdb.rows("Node")}
                           >= set(self.nodes), "every agent to report",
                           120)

    def keep_logs(self) -> None:
        dest = os.path.join(self.out, "fabric-logs")
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest, exist_ok=True)
        for top, _, files in os.walk(self.workdir):
            for f in files:
                if f.endswith((".log", ".out", ".err")):
                    src = os.path.join(top, f)
                    rel = os.path.relpath(src, self.workdir).replace("/", "-")
                    text = read_text(src)
                    with open(os.path.join(dest, rel), "w") as g:
                        g.write(text[-200000:])

    # ------------------------------------------------------- measuring
    def cpu_snapshot(self) -> Dict[str, float]:
        """CPU seconds so far of each class of process (CPU_CLASSES):
        the bench runs every process of the fabric's control plane on
        the same core(s), and the one that takes them sets its pace."""
        def total(procs: Sequence[Any]) -> float:
            return sum(proc_cpu_s(p.pid) for p in procs if p is not None)
        nodes = list(self.nodes.values())
        return {
            "agents": total([n.agent for n in nodes]),
            "switch ovsdb-servers": total([n.sb.ovsdb for n in nodes]),
            "ovs-vswitchd": total([n.sb.vswitchd for n in nodes]),
            "fabric database": total(self.db_procs),
            "flow monitors": total([n.monitor for n in nodes]),
            "bench": proc_cpu_s(os.getpid())}

    def asg_changes(self) -> int:
        """A number that changes with the Assignment table (the fabric
        IDL's count, or any change where it has none)."""
        if hasattr(self.fdb, "changes"):
            return int(self.fdb.changes("Assignment"))
        return int(self.fdb.idl.change_seqno)

    def gen_reports(self, gen: int) -> Dict[str, bool]:
        return {r.name: int(r.generation) >= gen
                for r in self.fdb.rows("Node")}

    def plan_now(self) -> Tuple[Any, Dict[str, Any], Dict[str, Any]]:
        from ...fabric.slice import Slice, slices
        state = self.fdb.state()
        asg = self.fdb.assignments()
        sls = slices(state, asg)
        for n in self.nodes:
            sls.setdefault(n, Slice(n))
        return state, asg, sls

    def verify(self, names: Sequence[str]) -> Dict[str, List[str]]:
        """Each node's problems against the plan now (empty lists: all
        match), plus the plan's own under '(plan)'."""
        state, asg, sls = self.plan_now()
        out: Dict[str, List[str]] = {"(plan)": check_plan(state, asg, sls)}
        for n in names:
            try:
                out[n] = check_switch(sls[n], self.nodes[n].view())
            except RunError as e:
                out[n] = ["cannot read the switch: %s" % e]
        return out

    def wait(self, t0: float, gen: Optional[int], what: str,
             before: Optional[Tuple[Dict[str, Any], Dict[str, Any],
                                    int]] = None) -> Dict[str, Any]:
        """_wait() on the observer CPUs (see observer_cpus)."""
        os.sched_setaffinity(0, set(self.observer_cpus))
        try:
            return self._wait(t0, gen, what, before)
        finally:
            os.sched_setaffinity(0, set(self.other_cpus))

    def _wait(self, t0: float, gen: Optional[int], what: str,
              before: Optional[Tuple[Dict[str, Any], Dict[str, Any],
                                     int]] = None) -> Dict[str, Any]:
        """Until converged (or the timeout): per node, seconds from t0 to
        its agent's report of 'gen' and to the last change of its flows;
        the switches read after that match the plan.  Without 'gen' (a
        failure), 'before' is (the assignments, the slices, the count of
        Assignment changes) before it: the planner has planned when the
        assignments differ, and the nodes whose slice that changed must
        have had their flows changed."""
        assert self.events is not None
        deadline = t0 + self.args.fabric_timeout
        reported: Dict[str, float] = {}
        t_plan: Optional[float] = None
        seqno = -1
        asg0, sls0, n_asg = before if before is not None else ({}, {}, 0)
        changed: Optional[Set[str]] = None
        problems: Dict[str, List[str]] = {}
        next_check = 0.0
        while True:
            self.fdb.run()
            now = time.monotonic()
            if self.fdb.idl.change_seqno != seqno:
                seqno = self.fdb.idl.change_seqno
                fab = self.fdb.root()
                if gen is not None:
                    for name, ok in self.gen_reports(gen).items():
                        if ok and name not in reported:
                            reported[name] = now
                    if (t_plan is None and fab is not None
                            and int(fab.planned_generation) >= gen):
                        t_plan = now
                elif (t_plan is None
                      and self.asg_changes() != n_asg
                      and self.fdb.assignments() != asg0):
                    t_plan = now
            last, _ = self.events.snapshot()
            quiet = now - max([t for t in last.values()] + [t0]) >= QUIET_S
            if (gen is None and t_plan is not None and quiet
                    and changed is None):
                # Which slices the plan changed: computed (every node's
                # slice, a second of CPU) only once the flows are quiet,
                # not on the core the agents need while they reprogram.
                _, _, sls = self.plan_now()
                changed = {n for n in self.nodes
                           if _slice_key(sls.get(n))
                           != _slice_key(sls0.get(n))}
            # The switches are read (3 dumps each, on the core the
            # fabric's control plane shares) only once every node said
            # it is done: every report, or the flows of every node whose
            # slice the plan changed.
            ready = (t_plan is not None and quiet and now >= next_check
                     and (len(reported) >= len(self.nodes) if gen is not None
                          else changed is not None
                          and all(last.get(n, 0) > t0 for n in changed)))
            if ready:
                problems = self.verify(sorted(self.nodes))
                if not any(problems.values()):
                    break
                next_check = time.monotonic() + 1.0
            if time.monotonic() > deadline:
                if not problems:
                    problems = self.verify(sorted(self.nodes))
                bad = {n: p for n, p in problems.items() if p}
                missing = sorted(set(self.nodes) - set(reported))
                why = []
                if t_plan is None:
                    why.append("the planner did not plan")
                if gen is not None and missing:
                    why.append("no report of generation %d from %s"
                               % (gen, ", ".join(missing)))
                for n, p in sorted(bad.items()):
                    why.append("%s: %s" % (n, "; ".join(p)))
                raise RunError("%s: not converged within %g s: %s"
                               % (what, self.args.fabric_timeout,
                                  " | ".join(why) or "?"))
            time.sleep(0.02)
        last, count = self.events.snapshot()
        nodes = {}
        for n in sorted(self.nodes):
            t_rep = reported.get(n)
            t_flow = last.get(n) if last.get(n, 0) > t0 else None
            ts = [t for t in (t_rep, t_flow) if t is not None]
            nodes[n] = {
                "role": self.nodes[n].role,
                "report_s": None if t_rep is None else t_rep - t0,
                "flows_s": None if t_flow is None else t_flow - t0,
                "converged_s": max(ts) - t0 if ts else None,
            }
        res: Dict[str, Any] = {
            "plan_s": None if t_plan is None else t_plan - t0,
            "nodes": nodes}
        if gen is None:
            # A failure: the nodes whose flows changed; the others hold
            # their slice already (checked above like every node).
            times = [v["flows_s"] for v in nodes.values()
                     if v["flows_s"] is not None]
            res["reprogrammed"] = sorted(n for n, v in nodes.items()
                                         if v["flows_s"] is not None)
            res["changed_in_plan"] = sorted(changed or ())
            unmoved = sorted((changed or set()) - set(res["reprogrammed"]))
            if unmoved:
                raise RunError("%s: the plan changed the slices of %s, but "
                               "their flows did not change"
                               % (what, ", ".join(unmoved)))
        else:
            times = [v["converged_s"] for v in nodes.values()]
        res["stats"] = _stats([t for t in times if t is not None])
        return res

    def apply_map(self, dcms: int, what: str, comment: str
                  ) -> Dict[str, Any]:
        """A scenario of applying the map with 'dcms' DCMs (as 'ovs-daqctl
        fabric apply' does) and waiting for every node."""
        from ...fabric.fabmap import FabricMapReader, state_digest
        state = FabricMapReader("fabric map").parse(
            map_text(self.shape, dcms))
        cpu0 = self.cpu_snapshot()
        t0 = time.monotonic()
        gen = self.fdb.apply(state, state_digest(state), "daq-bench",
                             "daq-bench --fabric: " + comment)
        t_commit = time.monotonic() - t0
        res = self.wait(t0, gen, what)
        res.update(generation=gen, commit_s=t_commit, rows=self.fdb.applied,
                   cpu=cpu_delta(cpu0, self.cpu_snapshot(),
                                 time.monotonic() - t0))
        return res

    def rest(self) -> Dict[str, Any]:
        """The CPU the converged fabric's processes use while nothing
        changes (REST_S): what every change of the next scenarios
        competes with on the shared core."""
        time.sleep(QUIET_S)
        cpu0 = self.cpu_snapshot()
        t0 = time.monotonic()
        time.sleep(REST_S)
        return cpu_delta(cpu0, self.cpu_snapshot(), time.monotonic() - t0)

    def scenario_empty(self) -> Dict[str, Any]:
        self.say("from an empty fabric: applying %d DCMs" % self.shape.dcms)
        return self.apply_map(self.shape.dcms, "from an empty fabric",
                              "from empty")

    def scenario_one_dcm(self) -> Dict[str, Any]:
        self.say("a one-DCM change: adding dcm%04d" % self.shape.dcms)
        return self.apply_map(self.shape.dcms + 1, "a one-DCM change",
                              "one DCM more")

    def scenario_failure(self) -> Dict[str, Any]:
        from ...fabric.db import Txn
        leaf = "p0-leaf1"
        n_asg = self.asg_changes()
        state, asg, before = self.plan_now()
        lk = next(lk for lk in sorted(state.links, key=lambda lk: lk.name)
                  if leaf in (lk.a_switch, lk.b_switch)
                  and lk.port_of(leaf) == "up1")
        ends = [(lk.a_switch, lk.a_port), (lk.b_switch, lk.b_port)]
        self.say("a link failure: %s" % lk.name)
        # The link fails: its ports go down on the switches (so that the
        # agents' next reports agree), and the bench writes them down
        # into the fabric database as the agents would report it.
        cpu0 = self.cpu_snapshot()
        t0 = time.monotonic()
        for sw, port in ends:
            self.nodes[sw].set_port_down(port)

        def build(txn: Any) -> None:
            rows = {r.name: r for r in self.fdb.rows("Node")}
            for sw, port in ends:
                links = dict(rows[sw].links)
                links[port] = "down"
                rows[sw].links = links
            return None

        t1 = time.monotonic()
        status, _ = self.fdb.commit(build, "daq-bench --fabric: link %s "
                                    "down" % lk.name)
        if status not in (Txn.SUCCESS, Txn.UNCHANGED):
            raise RunError("writing the link failure: %s" % status)
        t_commit = time.monotonic() - t1
        res = self.wait(t0, None, "a link failure", (asg, before, n_asg))
        moved = sum(1 for d, a in self.fdb.assignments().items()
                    if asg.get(d) is not None and asg[d].path != a.path)
        res.update(link=lk.name, commit_s=t_commit, moved=moved,
                   cpu=cpu_delta(cpu0, self.cpu_snapshot(),
                                 time.monotonic() - t0))
        return res

    def run_once(self, k: int) -> Dict[str, Any]:
        """One run: set-up, the three scenarios, tear-down."""
        res: Dict[str, Any] = {"run": k, "scenarios": {}}
        t = time.monotonic()
        try:
            self.setup()
            res["setup_s"] = time.monotonic() - t
            for sc in SCENARIOS:
                try:
                    r = getattr(self, "scenario_" + sc)()
                except RunError as e:
                    res["scenarios"][sc] = {"error": str(e)}
                    self.say("%s: FAILED: %s" % (sc, e))
                    # The later scenarios start from this one's end.
                    break
                res["scenarios"][sc] = r
                st = r["stats"]
                self.say("%s: max %.3f s, p50 %.3f s over %d nodes; %s"
                         % (sc, st["max"] or 0, st["p50"] or 0, st["n"],
                            cpu_text(r["cpu"])))
                if sc == "empty":
                    res["rest_cpu"] = self.rest()
                    self.say("at rest: " + cpu_text(res["rest_cpu"]))
        except RunError as e:
            res["error"] = str(e)
            self.say("run %d FAILED: %s" % (k, e))
        finally:
            self.teardown()
        return res

    def teardown(self) -> None:
        if self.events is not None:
            self.events.stopping = True
        if self.fdb is not None:
            self.fdb.close()
            self.fdb = None
        with signals_held():
            self.cleanup.run()
        self.cleanup = Cleanup()
        self.nodes = {}
        self.events = None

    def run(self, argv: List[str]) -> int:
        started = datetime.datetime.now()
        os.sched_setaffinity(0, set(self.other_cpus))
        runs: List[Dict[str, Any]] = []
        info = machine(self.pmd_cpus, self.other_cpus,
                       "none: DPDK switches run --no-huge --legacy-mem -m "
                       "%d" % self.args.fabric_dpdk_mem)
        interrupted = False
        try:
            for k in range(1, self.args.fabric_runs + 1):
                self.say("run %d of %d: %s" % (k, self.args.fabric_runs,
                                               self.shape.text()))
                runs.append(self.run_once(k))
        except Interrupted as e:
            interrupted = True
            self.teardown()
            self.notes.append("interrupted (signal %d)" % e.signum)
        info["loadavg_end"] = loadavg()
        res = {
            "schema": SCHEMA, "version": VERSION,
            "command": " ".join(["utilities/daq-bench"] + argv),
            "started": started.isoformat(timespec="seconds"),
            "duration_s": time.monotonic() - self.t_start,
            "machine": info, "source": source_state(),
            "shape": vars(self.shape), "shape_text": self.shape.text(),
            "config": {"runs": self.args.fabric_runs,
                       "agent_interval_s": self.args.fabric_interval,
                       "election_timer_ms": self.args.fabric_election_timer,
                       "dpdk_mem_mb": self.args.fabric_dpdk_mem,
                       "planners": self.args.fabric_planners,
                       "timeout_s": self.args.fabric_timeout,
                       "pmd_cpu_mask": self.args.pmd_cpu_mask},
            "interrupted": interrupted, "notes": self.notes,
            "runs": runs}
        res["verdicts"] = verdicts(res)
        self.write(res)
        for v in res["verdicts"]:
            self.say("%-6s %s: %s" % (v["met_text"], v["target"],
                                      v["value"]))
        if interrupted:
            return 130
        failed = any(r.get("error") or any(
            "error" in s for s in r["scenarios"].values()) for r in runs)
        return 1 if failed else 0

    def write(self, res: Dict[str, Any]) -> None:
        os.makedirs(self.out, exist_ok=True)
        with open(os.path.join(self.out, "fabric.json"), "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)
            f.write("\n")
        with open(os.path.join(self.out, "fabric.md"), "w") as f:
            f.write(markdown(res))
        if self.args.doc:
            with open(self.args.doc, "w") as f:
                f.write(markdown(res))
        self.say("results in %s (fabric.json, fabric.md)" % self.out)


def _slice_key(sl: Any) -> Any:
    if sl is None:
        return ((), ())
    return (tuple(sorted((d.name, d.ring, d.egress) for d in sl.rings)),
            tuple(sorted((r.dcm, r.match, r.port) for r in sl.routes)))
