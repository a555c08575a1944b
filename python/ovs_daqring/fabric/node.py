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


"""What the agents of a switch and of a host (ovs-daqfabric-agent --node,
--host) share: their connection to the fabric database and their Node
row, written every interval when it changed and every heartbeat when it
did not."""

import argparse
import os
import socket
import time
from typing import Any, Dict, List, Optional

import ovs.vlog

from .db import FabricDb, Txn, now_ms

PROG = "ovs-daqfabric-agent"
vlog = ovs.vlog.Vlog(PROG)

INTERVAL_MIN = 0.1          # s: Node:report_interval is at least 100 ms
# A Node row that did not change is written once in this many intervals
# (its heartbeat; a node is up while its last write is younger than
# idl.UP_INTERVALS heartbeats).
HEARTBEAT = 3
# How many of the rows it left out an agent names in its Node row.
ROWS_NAMED = 5


class NodeBase:
    """A node's agent: its fabric database client ('fabric', whose Node
    rows it monitors its own of) and its Node row ('node')."""

    def __init__(self, args: argparse.Namespace, node: str) -> None:
        self.args = args
        self.fabric = FabricDb(args.db, args.timeout, leader_only=False,
                               wait=False)
        self.node = node
        self.interval: float = args.interval
        interval = self.interval
        # The generation the node holds (what its Node row reports); the
        # one whose last attempt failed, with self.error saying why,
        # until one is held again (the row's failed_generation); why the
        # fabric database gives the node nothing (fabric_note).
        self.applied_gen = 0
        self.error: Optional[str] = None
        self.failed_gen: Optional[int] = None
        self.fabric_note: Optional[str] = None
        # The rows of the fabric database its view left out (bad rows,
        # FabricDb.row_errors()), and why, for its Node row's error; the
        # generation it did not apply because its own row is bad (its
        # failed_generation then).
        self.rows_note: Optional[str] = None
        self.rows_failed: Optional[int] = None
        # Of the nodes' reports, its own only: every node reports every
        # interval, and N agents that each received every report would
        # spend their CPU on N^2 rows (the planner gets them all).
        self.fabric.idl.cond_change("Node", [["name", "==", node]])
        self.next_report = 0.0
        # The Node row is written every interval when something in it
        # changed, and at least every heartbeat (HEARTBEAT intervals)
        # when nothing did: what its report_interval says.
        self.heartbeat = HEARTBEAT * interval
        self.next_heartbeat = 0.0
        self.report_txn: Optional[Txn] = None
        # Why the database refused the last report (logged once).
        self.report_refused: Optional[str] = None
        self.reports = 0
        self.last_report = 0.0
        # What write_report() wrote of the Node row (column -> value) on
        # the connection and row of written_key.
        self.written: Dict[str, Any] = {}
        self.written_key: Any = None
        self.exiting = False
        # Whether fabric_up() was, the last time.
        self.was_up = False

    def fabric_up(self) -> bool:
        """Connected to a member of the fabric database, synced on it
        (FabricDb.connected()); a change is logged."""
        up = self.fabric.connected()
        if up != self.was_up:
            if up:
                vlog.info("fabric database: connected to %s"
                          % self.fabric.idl.session_name())
            else:
                vlog.warn(self.fabric.unreachable() or "not connected")
            self.was_up = up
        return up

    def _note(self, note: Optional[str]) -> None:
        if note != self.fabric_note and note is not None:
            vlog.warn(note)
        self.fabric_note = note

    def fabric_root(self) -> Optional[Any]:
        """The Fabric row, or None (and a note: no map applied yet)."""
        fab = self.fabric.root()
        if fab is None:
            self._note("the fabric database is empty (no map applied yet)")
        return fab

    def note_rows(self, errors: List[str], own: Optional[str],
                  generation: int) -> None:
        """What the Node row says of the bad rows the agent's view of the
        fabric database left out ('errors': FabricDb.row_errors(), each
        logged there) and of its own row, if that is one of them ('own':
        why): then the agent keeps what its node holds, which that row
        describes, and reports 'generation' failed until the row is
        good again."""
        parts = []
        if own is not None:
            parts.append("its own row is bad: %s holds what it held "
                         "(generation %d not applied): %s"
                         % (self.node, generation, own))
        others = [e for e in errors if e != own]
        if others:
            parts.append("rows left out: %s%s" % (
                "; ".join(others[:ROWS_NAMED]),
                " and %d more" % (len(others) - ROWS_NAMED)
                if len(others) > ROWS_NAMED else ""))
        note = "; ".join(parts) or None
        failed = generation if own is not None else None
        if own is not None and self.rows_failed is None:
            vlog.warn("%s: its own row is bad: it keeps what it holds "
                      "until the row is good again" % self.node)
        elif own is None and self.rows_failed is not None:
            vlog.info("%s: its own row is good again" % self.node)
        if (note, failed) != (self.rows_note, self.rows_failed):
            # Said at once ('fabric apply --wait' ends on a failure).
            self.next_report = 0.0
        self.rows_note, self.rows_failed = note, failed

    def status_head(self) -> Dict[str, Any]:
        """The first items of unixctl 'status'."""
        return {
            "node": self.node,
            "fabric": ("connected to %s" % self.fabric.idl.session_name()
                       if self.fabric_up() else "not connected: %s"
                       % self.fabric.unreachable()),
            "applied_generation": self.applied_gen,
            "failed_generation": next(
                (g for g in (self.failed_gen, self.rows_failed)
                 if g is not None), "-"),
            "rows": self.rows_note or "-"}

    def monitored(self) -> str:
        """What its IDL holds of the big tables (FabricDb.narrow())."""
        return "%d DCMs, %d assignments%s" % (
            len(self.fabric.idl.tables["DCM"].rows),
            len(self.fabric.idl.tables["Assignment"].rows),
            "" if self.fabric.narrowed() else
            " (conditions not acknowledged yet)")

    def report_busy(self) -> bool:
        """Finishes the report in flight, if any: whether it still is (a
        report is due once it is answered; none is waited for)."""
        if self.report_txn is None:
            return False
        status = self.report_txn.commit()
        if status == Txn.INCOMPLETE:
            return True
        self.report_done(self.report_txn, status)
        if status not in (Txn.SUCCESS, Txn.UNCHANGED):
            vlog.dbg("report: %s" % status)
            # Not written: all of it next time.
            self.written = {}
        else:
            self.reports += 1
        self.report_txn = None
        return False

    def report_done(self, txn: Txn, status: str) -> None:
        """Logs a report the database refused, once until one is not: a
        "permission error" when the agent's certificate does not name its
        node (RBAC: an agent writes only the Node row named by its
        certificate's CN)."""
        err = str(txn.get_error()) if status == Txn.ERROR else None
        if err is not None and err != self.report_refused:
            vlog.warn("the fabric database refused Node %s's report: %s"
                      % (self.node, err))
        self.report_refused = err

    def node_columns(self, generation: int, error: Optional[str],
                     failed_gen: Optional[int]) -> Dict[str, Any]:
        """The Node columns every agent writes: 'error' and, after it,
        the bad rows (note_rows()); 'failed_gen', else the generation
        its own bad row kept it from."""
        error = "; ".join(e for e in (error, self.rows_note) if e)
        if failed_gen is None:
            failed_gen = self.rows_failed
        return {
            "agent": "%s %d@%s" % (PROG, os.getpid(), socket.gethostname()),
            "generation": generation,
            "report_interval": max(100, int(self.heartbeat * 1000)),
            "error": [error[:1000]] if error else [],
            "failed_generation": ([failed_gen]
                                  if failed_gen is not None else [])}

    def write_report(self, cols: Dict[str, Any],
                     links: Optional[Dict[str, str]], now: float) -> None:
        """Writes the Node row: 'cols' (Node columns), 'links' (None:
        the row keeps the links it has)."""
        db = self.fabric
        row = next((r for r in db.rows("Node") if r.name == self.node),
                   None)
        key = (None if row is None else row.uuid,
               db.idl._session.get_seqno())
        fresh = row is None
        if key != self.written_key:
            self.written = {}
            self.written_key = key
        # The row is this agent's own: the columns it wrote on this
        # connection are only written again when they change (the IDL
        # writes every column it is given, converting and checking each
        # ring's counters).  The links, which the agents at a link's ends
        # report and a test or an operator may write, are compared with
        # the row.
        news = [c for c, v in cols.items() if self.written.get(c) != v]
        new_links = links is not None and (fresh or row.links != links)
        if not news and not new_links and now < self.next_heartbeat:
            # Nothing to say: every commit wakes every client of the
            # cluster (its _Server row changes), so a row that did not
            # change is written once a heartbeat only.
            return
        self.last_report = now
        self.next_heartbeat = now + self.heartbeat
        txn = Txn(db.idl)
        if fresh:
            row = txn.insert(db.idl.tables["Node"])
            row.name = self.node
        # The heartbeat.
        row.updated = now_ms()
        if new_links:
            row.links = links
        for col in news:
            setattr(row, col, cols[col])
        status = txn.commit()
        if status != Txn.INCOMPLETE:
            self.report_done(txn, status)
        if status in (Txn.SUCCESS, Txn.UNCHANGED, Txn.INCOMPLETE):
            self.written.update(cols)
        else:
            self.written = {}
        if status == Txn.INCOMPLETE:
            self.report_txn = txn
        elif status in (Txn.SUCCESS, Txn.UNCHANGED):
            self.reports += 1

    def report_deadline(self, poller: Any) -> float:
        """When the next report is due, for wait() (the IDL wakes the
        agent once connected, the report in flight once answered)."""
        now = time.monotonic()
        if self.report_txn is not None:
            self.report_txn.wait(poller)
            return now + self.interval
        if not self.fabric_up():
            return now + self.interval
        return self.next_report
