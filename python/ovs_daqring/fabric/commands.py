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


"""ovs-daqctl fabric's commands: apply a fabric map to the fabric
database in one transaction, show the fabric's status, run one planner
round; each cmd_fabric_X(args) runs one from the parsed arguments (the
parser and main(): cmd/ovs_daqctl.py)."""

import argparse
import os
import socket
import sys
import time
import uuid
from typing import Any, Dict, List, Optional, Tuple

from ..daqctl.model import (DaqctlError, EXIT_BAD_INPUT, EXIT_FAILED,
                            EXIT_OK)
from ..options import SSL_FILES_NEEDED, ssl_missing
from . import default_fabric_db
from .db import FabricDb, now_ms, rows_text
from .fabmap import read_fabric_map, state_digest
from .idl import UP_INTERVALS
from .planner import plan
from .plannerd import PLANNER_LOCK, Planner
from .slice import slices


# How long 'fabric apply --wait' sees no planner hold the planner lock,
# while its generation is not planned, before it says so (s): a planner
# that moves to a new leader takes the lock there again in well under
# this.
NO_PLANNER_S = 3.0


def _remote(args: argparse.Namespace) -> str:
    """--db, and a clear error if it has ssl: members without the SSL
    files (the library would only time out)."""
    remote = args.db or default_fabric_db()
    if ssl_missing(args, (remote,)):
        raise DaqctlError("--db %s: %s" % (remote, SSL_FILES_NEEDED),
                          EXIT_BAD_INPUT)
    return remote


def _who() -> str:
    return "ovs-daqctl %d@%s" % (os.getpid(), socket.gethostname())


def cmd_fabric_apply(args: argparse.Namespace) -> int:
    state = read_fabric_map(args.map, args.rate_tolerance / 100.0)
    digest = state_digest(state)
    rep = args.report
    rep["fabric"] = {"map": args.map, "digest": digest,
                     "dry_run": args.dry_run}
    db = FabricDb(_remote(args), args.timeout)
    try:
        if args.dry_run:
            return _dry_run(args, db, state)
        # The apply's id: a retry (the leader died with the answer)
        # recognises its own commit by it (FabricDb.apply()).
        apply_id = str(uuid.uuid4())
        rep["fabric"]["apply_id"] = apply_id
        gen = db.apply(state, digest, _who(),
                       "ovs-daqctl: fabric apply %s" % args.map, apply_id)
        rep["fabric"]["generation"] = gen
        rep["fabric"]["rows"] = db.applied
        rep["fabric"]["committed_earlier"] = db.earlier
        if db.earlier:
            now = db.generation()
            args.say("fabric: generation %d: the map was committed by an "
                     "attempt whose answer was lost (written once)%s"
                     % (gen, "; generation %d has replaced it since"
                        % now if now > gen else ""))
        else:
            args.say("fabric: generation %d: %d switches, %d links, %d "
                     "hosts, %d DCMs (one transaction: %s)"
                     % (gen, len(state.switches), len(state.links),
                        len(state.hosts), len(state.dcms),
                        rows_text(db.applied)))
        if args.wait:
            return _wait(args, db, gen)
    finally:
        db.close()
    return EXIT_OK


def _dry_run(args: argparse.Namespace, db: FabricDb, state: Any) -> int:
    """What each switch would get, with the assignments the planner
    would make from those in force."""
    current = db.assignments()
    new, notes = plan(state, current, db.down_ports(state), {}, now_ms())
    sl = slices(state, new)
    out: Dict[str, Any] = {}
    args.say("fabric: would write generation %d (%d switches, %d links, "
             "%d hosts, %d DCMs)" % (db.generation() + 1,
                                     len(state.switches), len(state.links),
                                     len(state.hosts), len(state.dcms)))
    for n in notes:
        args.say("fabric: planner: %s" % n)
    for name in sorted(sl):
        s = sl[name]
        out[name] = {
            "rings": [{"dcm": d.name, "ring": d.ring, "egress": d.egress,
                       "match": d.match_text(), "dl_dst": d.dl_dst}
                      for d in s.rings],
            "routes": [{"dcm": r.dcm, "host": r.host, "match": r.match,
                        "port": r.port, "backups": list(r.backups),
                        "dl_dst": r.dl_dst or None} for r in s.routes]}
        args.say("switch %s: %d daqrings, %d routes"
                 % (name, len(s.rings), len(s.routes)))
        if args.verbose or len(s.rings) + len(s.routes) <= 20:
            for d in s.rings:
                args.say("  ring %s for DCM %s (%s) -> %s%s"
                         % (d.ring, d.name, d.match_summary(), d.egress,
                            ", to MAC %s" % d.dl_dst if d.dl_dst else ""))
            for r in s.routes:
                args.say("  route %s (%s) -> %s%s%s"
                         % ("DCM " + r.dcm if r.dcm else "host " + r.host
                            if r.host else "detour",
                            r.match, r.port or "drop",
                            ", to MAC %s" % r.dl_dst if r.dl_dst else "",
                            " (backups %s)" % ", ".join(r.backups)
                            if r.backups else ""))
    args.report["fabric"]["switches"] = out
    args.report["fabric"]["assignments"] = {
        n: {"plane": a.plane, "spine": a.spine} for n, a in new.items()}
    return EXIT_OK


def heard_up(db: FabricDb, since: float,
             now: Optional[float] = None) -> Dict[str, bool]:
    """Which nodes are up or down by this client's own clock
    (time.monotonic()), for a client that has watched the database since
    'since': a node whose report its IDL received after 'since' is up
    while that report is fresh (FabricIdl.heard(): UP_INTERVALS of the
    node's report intervals); one it has not heard from since is down
    once that long has passed since 'since'.  The others (not heard from
    yet, not for that long) are left out: not known by this clock."""
    now = time.monotonic() if now is None else now
    out = {}
    for n in db.rows("Node"):
        got = db.idl.heard_at.get(n.name)
        if got is not None and got[1] > since:
            out[n.name] = now <= got[2]
        elif now - since > UP_INTERVALS * int(n.report_interval) / 1000.0:
            out[n.name] = False
    return out


# fabric status listens for the nodes' reports (its own clock: a node is
# up once a report arrives while it listens) for each node's report
# interval (the longest; an agent writes its row at least once each)
# and this margin, STATUS_LISTEN_MAX seconds at most, less once every
# node has reported.
STATUS_LISTEN_MARGIN = 0.5
STATUS_LISTEN_MAX = 5.0


def listen_for_reports(db: FabricDb, limit: float) -> Tuple[float, float]:
    """Runs DB's IDL until every node with a Node row has reported (a
    row value that arrived after it started), for each node's report
    interval and STATUS_LISTEN_MARGIN, LIMIT seconds at most.  Returns
    (since, how long it listened), time.monotonic()'s: heard_up()'s
    'since' and what a node not heard from was silent for, by this
    client's clock alone (the rows' 'updated' is the writer's)."""
    db.root()
    since = time.monotonic()
    nodes = db.rows("Node")
    longest = max((int(n.report_interval) / 1000.0 for n in nodes),
                  default=0.0)
    window = min(limit, STATUS_LISTEN_MAX, longest + STATUS_LISTEN_MARGIN)

    def all_heard() -> bool:
        return all((db.idl.heard_at.get(n.name) or (0, 0.0))[1] > since
                   for n in db.rows("Node"))
    if nodes and window > 0:
        try:
            db.run_until(all_heard, "the nodes' reports", window)
        except DaqctlError:
            if db.unreachable() is not None:
                raise
    return since, time.monotonic() - since


def listened_view(db: FabricDb, since: float, listened: float
                  ) -> List[Dict[str, Any]]:
    """node_view() by this client's clock alone (listen_for_reports()'s
    SINCE and LISTENED): up if a report arrived while it listened, else
    "silent" if it listened for longer than the node's report interval
    (its agent writes the row at least that often: stopped, or late),
    else "unknown"; never by the age of the row's 'updated', the
    writer's clock (another host's, which may be ahead or behind)."""
    up = heard_up(db, since)
    out = node_view(db, now_ms(), {n.name: bool(up.get(n.name))
                                   for n in db.rows("Node")})
    for v in out:
        if v["up"] or v["generation"] is None:
            v["liveness"] = "up" if v["up"] else "no agent"
            continue
        silent = listened >= v["report_interval_ms"] / 1000.0
        v["up"] = False
        v["liveness"] = "silent" if silent else "unknown"
        v["silent_s"] = round(listened, 3)
    return out


def node_view(db: FabricDb, now: int,
              heard: Optional[Dict[str, bool]] = None
              ) -> List[Dict[str, Any]]:
    """Per switch, and per host that has a Node row (a host's agent,
    ovs-daqfabric-agent --host: the hosts of a fabric of one plane run
    none), its node's report and whether it is up.  "switch" is the
    node's name (a host's too), "kind" "switch" or "host".  Up: as
    'heard' says (heard_up(): by this client's clock), else, for the
    nodes it leaves out, by the age of the report's 'updated' (the
    writer's wall clock) at 'now' (this client's, ms)."""
    nodes = {n.name: n for n in db.rows("Node")}
    heard = heard or {}
    out = []
    for s in sorted(db.rows("Switch"), key=lambda s: s.name):
        v: Dict[str, Any] = {"switch": s.name, "kind": "switch",
                             "role": s.role, "plane": s.plane}
        v.update(_report(nodes.get(s.name), now, heard.get(s.name)))
        out.append(v)
    for h in sorted(db.rows("Host"), key=lambda h: h.name):
        n = nodes.get(h.name)
        if n is None:
            continue
        v = {"switch": h.name, "kind": "host", "role": h.role,
             "plane": None, "planes": sorted(int(p) for p in h.attachments)}
        v.update(_report(n, now, heard.get(h.name)))
        out.append(v)
    return out


def _report(n: Any, now: int, up: Optional[bool] = None) -> Dict[str, Any]:
    """node_view()'s part of a node's report (Node row 'n', or None);
    'up' if known by this client's clock."""
    if n is None:
        return {"up": False, "generation": None}
    age = now - int(n.updated)
    return dict(
        up=(age <= UP_INTERVALS * int(n.report_interval)
            if up is None else up),
        generation=int(n.generation), agent=n.agent,
        # (By the writer's clock: shown, never judged by fabric status.)
        age_ms=age, report_interval_ms=int(n.report_interval),
        links=dict(n.links), bfd=dict(n.bfd),
        rings={r: {"occupancy": n.ring_occupancy.get(r),
                   "high_watermark": n.ring_high_watermark.get(r),
                   "drops": n.ring_drops.get(r)}
               for r in sorted(set(n.ring_occupancy) | set(n.ring_drops))},
        error=n.error[0] if n.error else None,
        failed_generation=(int(n.failed_generation[0])
                           if n.failed_generation else None))


def wait_verdict(nodes: List[Dict[str, Any]], gen: int) -> Dict[str, Any]:
    """Where node_view()'s 'nodes' stand with generation 'gen': "applied"
    (up, and reporting 'gen' or a later generation), "lagging" (up, and
    not), "refused" (of those that lag, the ones whose last attempt
    failed, at 'gen' or at a later generation that superseded it: switch
    -> Node:error), "down" (not waited for).  A failure of an earlier
    generation says nothing about 'gen' (the agent may not have tried it
    yet): such a node lags, and is waited for."""
    up = [n for n in nodes if n["up"]]
    lag = [n for n in up if (n["generation"] or 0) < gen]
    return {
        "applied": [n["switch"] for n in up
                    if (n["generation"] or 0) >= gen],
        "lagging": [n["switch"] for n in lag],
        "refused": {n["switch"]: n.get("error") or "failed"
                    for n in lag
                    if (n.get("failed_generation") or 0) >= gen},
        "down": [n["switch"] for n in nodes if not n["up"]]}


class PlannerWatch:
    """Whether a planner holds the planner lock (PLANNER_LOCK), asked on
    FabricDb 'db''s own connection to the leader, where the planners
    hold it: the IDL asks for the lock; the server answers that another
    client holds it (a planner), or gives it, and then no one held it,
    and the lock is given back at once (a planner that asks meanwhile
    waits for that only).  The nodes report the generation whose plan
    they applied (Fabric:planned_generation), so without a planner no
    node ever reports a new generation."""

    def __init__(self, db: FabricDb) -> None:
        self.db = db
        # Since when (time.monotonic()) no planner held the lock.
        self.free_since: Optional[float] = None

    def absent_for(self) -> float:
        """For how long (s) no planner has held the lock, asking again
        (the answer comes with the next run of the IDL)."""
        idl = self.db.idl
        now = time.monotonic()
        if not self.db.connected():
            # The lock is the leader's, and taken again on a new one.
            self.free_since = None
        elif idl.lock_name is None:
            idl.set_lock(PLANNER_LOCK)
        elif idl.is_lock_contended:
            self.free_since = None
        elif idl.has_lock:
            idl.set_lock(None)
            if self.free_since is None:
                self.free_since = now
        return 0.0 if self.free_since is None else now - self.free_since

    def stop(self) -> None:
        if self.db.idl.lock_name is not None:
            self.db.idl.set_lock(None)


def _no_planner(db: FabricDb, gen: int, secs: float) -> DaqctlError:
    fab = db.root()
    last = ("; the last planner was %s (epoch %d)"
            % (fab.planner, int(fab.planner_epoch))
            if fab is not None and fab.planner else "")
    return DaqctlError(
        "fabric: generation %d is written, but no planner holds the "
        "planner lock (%s) of the fabric database (for %.0f s%s): no node "
        "reports a generation until a planner plans it, and the agents "
        "apply it without its plan meanwhile (assignments to switches "
        "it removed left out); start an agent with --planner, or run "
        "'ovs-daqctl fabric plan'" % (gen, PLANNER_LOCK, secs, last))


def _wait(args: argparse.Namespace, db: FabricDb, gen: int) -> int:
    """Until every node that is up has applied 'gen' or reported that it
    failed to (or the timeout); an error when no planner holds the lock
    for NO_PLANNER_S while 'gen' is not planned."""
    since = time.monotonic()
    deadline = since + args.timeout
    watch = PlannerWatch(db)
    while True:
        db.run()
        fab = db.root()
        if fab is not None and int(fab.planned_generation) >= gen:
            watch.stop()
        else:
            absent = watch.absent_for()
            if absent >= NO_PLANNER_S:
                watch.stop()
                args.report["fabric"]["planner"] = None
                raise _no_planner(db, gen, absent)
        # Up or down by this command's clock where it can tell: a node
        # heard from during the wait, or silent for UP_INTERVALS of its
        # intervals (a writer's clock ahead no longer makes a dead node
        # look up, nor one behind a live node that reports look down).
        v = wait_verdict(node_view(db, now_ms(), heard_up(db, since)), gen)
        lag, refused = v["lagging"], v["refused"]
        pending = [n for n in lag if n not in refused]
        if not pending or time.monotonic() > deadline:
            break
        _pause(db, 0.2)
    gone = db.unreachable() if lag else None
    if gone is not None:
        # The reports of those that lag are as old as the IDL's copy.
        raise DaqctlError("fabric: generation %d is written, but %s: "
                          "whether the nodes applied it is not known"
                          % (gen, gone))
    # "lagging" keeps naming every node that did not apply it, those that
    # refused it too.
    args.report["fabric"].update(v)
    if v["down"]:
        args.say("fabric: nodes down (not waited for): %s"
                 % ", ".join(v["down"]))
    for n in sorted(refused):
        args.say("fabric: node %s failed to apply generation %d: %s"
                 % (n, gen, refused[n]))
    if pending:
        args.say("fabric: nodes that did not apply generation %d within "
                 "%g s: %s" % (gen, args.timeout, ", ".join(pending)))
    if lag:
        return EXIT_FAILED
    args.say("fabric: generation %d applied by %d nodes that are up"
             % (gen, len(v["applied"])))
    return EXIT_OK


def _pause(db: FabricDb, secs: float) -> None:
    """Keeps the IDL running for 'secs'."""
    try:
        db.run_until(lambda: False, "pause", secs)
    except DaqctlError:
        pass


def cmd_fabric_status(args: argparse.Namespace) -> int:
    db = FabricDb(_remote(args), args.timeout)
    try:
        fab = db.root()
        # Up or not by this command's clock alone: the reports that
        # arrive while it listens (listen_for_reports()).
        listen = getattr(args, "listen", None)
        since, listened = listen_for_reports(
            db, args.timeout if listen is None else min(listen,
                                                        args.timeout))
        fab = db.root()
        nodes = listened_view(db, since, listened)
        asg = db.assignments()
        st = db.state()
        bad = db.row_errors()
    finally:
        db.close()
    info: Dict[str, Any] = {
        "generation": int(fab.generation) if fab else 0,
        "digest": fab.map_digest if fab else None,
        "planner": fab.planner if fab else None,
        "planner_epoch": int(fab.planner_epoch) if fab else 0,
        "planned_generation": int(fab.planned_generation) if fab else 0,
        "hold_down": int(fab.hold_down) if fab else None,
        "nodes": nodes,
        # The rows the agents leave out (rows are input, fabric/rows.py).
        "bad_rows": bad,
        "dcms": [{"name": d.name, "host": d.host, "ring": d.dcm.ring,
                  "match": d.dcm.match_text(),
                  "plane": asg[d.name].plane if d.name in asg else None,
                  "spine": asg[d.name].spine if d.name in asg else None,
                  "home": (list(asg[d.name].home)
                           if d.name in asg and asg[d.name].home else None),
                  "reason": asg[d.name].reason if d.name in asg else None}
                 for d in st.dcms]}
    args.report["fabric"] = info
    if args.format == "json":
        return EXIT_OK
    out = sys.stdout
    if fab is None:
        out.write("fabric: empty (no map applied yet)\n")
        return EXIT_OK
    out.write("fabric: generation %d (map %s), planned %d by %s (epoch "
              "%d), hold-down %d s\n"
              % (info["generation"], info["digest"],
                 info["planned_generation"], info["planner"] or "-",
                 info["planner_epoch"], info["hold_down"]))
    for n in nodes:
        links = n.get("links") or {}
        dn = sorted(p for p, s in links.items() if s == "down")
        unknown = sorted(p for p, s in links.items() if s == "unknown")
        bfd = n.get("bfd") or {}
        out.write("  %-6s %-16s %-8s %-8s generation %s%s%s%s%s\n"
                  % (n["role"], n["switch"],
                     "plane %d" % n["plane"] if n["plane"] is not None
                     else "host",
                     _liveness(n),
                     "-" if n["generation"] is None else n["generation"],
                     ", failed generation %d" % n["failed_generation"]
                     if n.get("failed_generation") is not None else "",
                     (", links down: " + ",".join(dn) if dn else "")
                     + (", links unknown: " + ",".join(unknown)
                        if unknown else ""),
                     ", BFD: " + ",".join("%s %s" % (p, bfd[p])
                                          for p in sorted(bfd))
                     if bfd else "",
                     ", %d rings" % len(n["rings"]) if n.get("rings")
                     else ""))
        if n.get("silent_s") is not None:
            out.write("           not heard from for %.1f s by this "
                      "command's clock (it reports every %.1f s)\n"
                      % (n["silent_s"], n["report_interval_ms"] / 1000.0))
        if n.get("error"):
            out.write("".join("           %s\n" % line for line in
                              ("error: " + n["error"]).splitlines()))
        if args.verbose and n.get("rings"):
            out.write("".join("           %s\n" % line for line in
                              ring_lines(n["rings"], STATUS_RINGS)))
    for e in bad:
        out.write("  bad row, left out: %s\n" % e)
    unassigned = [d["name"] for d in info["dcms"] if d["plane"] is None]
    out.write("  %d DCMs, %d assigned%s\n"
              % (len(info["dcms"]), len(info["dcms"]) - len(unassigned),
                 (" (not yet: %s)" % ", ".join(unassigned[:20]))
                 if unassigned else ""))
    if args.verbose:
        for d in info["dcms"]:
            out.write("    %s on %s: plane %s spine %s%s\n"
                      % (d["name"], d["host"], d["plane"], d["spine"],
                         " (moved from its home, plane %s spine %s: %s)"
                         % (d["home"][0], d["home"][1], d.get("reason"))
                         if d["home"] else ""))
    return EXIT_OK


# How many rings of a node "status -v" lists (the worst first).
STATUS_RINGS = 10


def ring_lines(rings: Dict[str, Dict[str, Any]], limit: int) -> List[str]:
    """A node's rings as its report gives them (node_view(): occupancy,
    high watermark, drops by ring), the worst 'limit' first: those that
    dropped most, then the fullest, then the highest watermark; and how
    many more there are."""
    def num(v: Any) -> int:
        return v if isinstance(v, int) and v >= 0 else 0

    def key(name: str) -> Any:
        r = rings[name]
        return (-num(r.get("drops")), -num(r.get("occupancy")),
                -num(r.get("high_watermark")), name)

    names = sorted(rings, key=key)
    width = max(len(n) for n in names[:limit]) if names else 0
    lines = ["ring %s  occupancy %s, high watermark %s, drops %s"
             % (n.ljust(width), *("-" if rings[n].get(k) is None
                                  else rings[n][k]
                                  for k in ("occupancy", "high_watermark",
                                            "drops")))
             for n in names[:limit]]
    if len(names) > limit:
        lines.append("... %d more rings (--json lists them all; "
                     "ovs-daqctl top on the switch shows them live)"
                     % (len(names) - limit))
    return lines


def _liveness(n: Dict[str, Any]) -> str:
    if n["up"]:
        return "up"
    if n["generation"] is None:
        return "no agent"
    return {"silent": "SILENT", "unknown": "unknown"}.get(
        n.get("liveness", ""), "DOWN")


def cmd_fabric_plan(args: argparse.Namespace) -> int:
    """One planner round: take the lock (waiting up to --timeout), take
    over (increment the epoch), plan and write."""
    p = Planner(_remote(args), args.name or _who(), args.timeout)
    try:
        deadline = time.monotonic() + args.timeout
        while True:
            what = p.step()
            if p.epoch is not None and what in ("planned", "unchanged"):
                break
            if time.monotonic() > deadline:
                raise DaqctlError("fabric plan: %s after %g s"
                                  % (what, args.timeout))
            _pause(p.db, 0.2)
        args.report["fabric"] = {"epoch": p.epoch, "result": what,
                                 "moves": p.notes}
        for n in p.notes:
            args.say("fabric: %s" % n)
        args.say("fabric: %s (epoch %d)" % (what, p.epoch))
    finally:
        p.close()
    return EXIT_OK
