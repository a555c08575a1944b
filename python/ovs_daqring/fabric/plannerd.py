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


"""The planner's role (what 'plannerd' names: the planner as a daemon
role, as OVN's northd; the plan itself, a pure function of the desired
state, is fabric/planner.py).  Planner candidates, the agents run with
--planner and 'ovs-daqctl fabric plan', contend for the OVSDB lock
PLANNER_LOCK through the leader; the one that holds it takes over (a new
Fabric:planner_epoch) and runs planning rounds: the plan of the
database's contents, written in a transaction fenced by its epoch.  A
port carries a DCM's path only while a fresh report says it is up
(planner.unusable_ports(); fresh by this planner's clock,
FabricIdl.fresh_nodes()), and what it knows of the ports, the hold-down
included, starts at its take-over."""

import math
import time
from typing import (Any, Callable, Dict, FrozenSet, List, Optional, Set,
                    Tuple)

from ..daqctl.model import DaqctlError
from .db import FabricDb, Txn, now_ms
from .planner import (Endpoint, changed, next_return, plan, unheard_ports,
                      unusable_ports)
from .rows import optional

PLANNER_LOCK = "daqfabric_planner"
# How many times a planner round plans again at once after a TRY_AGAIN
# that left it the planner.
PLAN_RETRIES = 3
# How long (s) the plan of a new generation waits for the nodes that
# report to report the ports it cables (their agents read it, then
# report: at a fabric's first map, every port), before it is planned
# with what is known.
REPORT_WAIT_S = 30.0


class _InFlight:
    """A planner's transaction sent and not answered yet (without
    'wait'): the transaction, its kind ("take-over", "plan"), when
    (time.monotonic()) it is given up (FabricDb.timeout after it was
    sent), the IDL's FabricDb.mark() when it was built, and what its
    outcome means (Planner._begin()'s done())."""

    def __init__(self, txn: Txn, kind: str, deadline: float,
                 mark: Tuple[int, int],
                 done: Callable[[str, Any], str]) -> None:
        self.txn = txn
        self.kind = kind
        self.deadline = deadline
        self.mark = mark
        self.done = done


class Planner:
    """The planner's side of the fabric database.  Contenders connect to
    the leader only and take the OVSDB lock PLANNER_LOCK; the one that
    gets it increments Fabric:planner_epoch (its takeover), and every
    transaction it makes verify()s that epoch, so that a planner deposed
    while it still holds a lock (on a former leader, locks are not
    replicated) can never commit.

    With 'wait' (a command such as 'ovs-daqctl fabric plan'), it waits
    to connect and each of its commits waits for its answer (for the
    timeout at most).  Without (the agents' --planner), nothing waits:
    as OVS's ovsdb_idl_loop, at most one transaction is in flight, each
    round (take_over(), step()) looks at it first and sends at most one
    new one, and the caller's loop wakes on wait(): a leader that does
    not answer holds up neither the agent's reports nor its switch."""

    def __init__(self, remote: str, name: str, timeout: float,
                 leader_only: bool = True, wait: bool = True) -> None:
        self.name = name
        self.blocking = wait
        # The transaction in flight (without 'wait'), and the IDL's
        # FabricDb.mark() when the last one answered was built.
        self.txn: Optional[_InFlight] = None
        self.last_mark: Optional[Tuple[int, int]] = None
        self.db = FabricDb(remote, timeout, leader_only=leader_only,
                           lock=PLANNER_LOCK, wait=wait)
        self.epoch: Optional[int] = None
        # When each port was last seen coming back up (ms), since the
        # take-over; ports up then count from the take-over (took_over,
        # ms): a DCM moves home a hold-down after it at the earliest,
        # however long this planner waited for the lock.
        self.up_since: Dict[Endpoint, int] = {}
        self.down: Optional[Set[Endpoint]] = None
        self.took_over = now_ms()
        # The newest generation not planned yet, and when
        # (time.monotonic()) this planner first saw it (_unheard()).
        self.gen_seen: Optional[Tuple[int, float]] = None
        # What the last round read of the nodes' reports: the IDL's
        # count of their changes and the nodes whose reports were fresh
        # (FabricDb.plan_key()); None if it did not get to them.  A
        # report that arrives while the round commits (the IDL runs
        # then) is news for the next round.
        self.seen: Optional[Tuple[int, FrozenSet[str]]] = None
        # The connection (session seqno) it took over on: its lock and
        # so its epoch are that connection's.
        self.conn: Optional[int] = None
        self.notes: List[str] = []
        # When (ms, as now_ms()) the last plan would first change with
        # the same inputs (planner.next_return()): a DCM away from home
        # whose hold-down ends.  None: not by itself.
        self.next_due: Optional[int] = None
        # The assignments the plan this round sent changes (None: the
        # round sent none).
        self.sent: Optional[int] = None

    def close(self) -> None:
        self.db.close()

    def has_lock(self) -> bool:
        """Whether it holds the lock now: a lock held on a connection
        that is gone is not (the server released it; the IDL says so
        only once it has connected again)."""
        return bool(self.db.idl.has_lock) and self.db.connected()

    def in_flight(self) -> bool:
        """Whether a transaction of this planner is in flight (without
        'wait' only): the next take_over() or step() looks at it first,
        whatever else changed."""
        return self.txn is not None

    def wait(self, poller: Any) -> None:
        """What wakes a daemon's loop for this planner: a change of its
        IDL, and the transaction in flight, answered or past its
        timeout (ovsdb_idl_loop_commit_and_wait())."""
        self.db.idl.wait(poller)
        f = self.txn
        if f is not None:
            f.txn.wait(poller)
            left = f.deadline - time.monotonic()
            poller.timer_wait(max(0, math.ceil(left * 1000)))

    def _begin(self, kind: str, build: Callable[[Txn], Optional[str]],
               comment: str, done: Callable[[str, Any], str]) -> str:
        """Commits build()'s transaction ('kind': "take-over", "plan").
        With 'wait' (a command), waits for its outcome (FabricDb.
        commit()); without (a daemon), sends it and returns
        "committing" unless it is answered at once: each round looks at
        it then (_answer()) until it is.  done(status, early) says what
        the outcome means ('early': what build() returned instead of a
        transaction)."""
        if self.blocking:
            status, early = self.db.commit(build, comment, retry=False)
            return done(status, early)
        mark = self.db.mark()
        txn, early = self.db.begin(build, comment)
        if txn is None:
            return done("done", early)
        self.txn = _InFlight(txn, kind, time.monotonic() + self.db.timeout,
                             mark, done)
        return self._answer() or "committing"

    def _answer(self) -> Optional[str]:
        """The transaction in flight: "committing" while it waits for its
        answer, else what its outcome means (the done() of _begin());
        None if there is none.  One that stays unanswered for the
        timeout is aborted (DaqctlError: it may or may not have been
        committed; the next round plans again from what the IDL holds
        then)."""
        f = self.txn
        if f is None:
            return None
        status = f.txn.commit()
        if status == Txn.INCOMPLETE:
            if time.monotonic() <= f.deadline:
                return "committing"
            f.txn.abort()
            self.txn = None
            why = self.db.unreachable()
            raise DaqctlError("%s: the %s transaction timed out (%g s); it "
                              "may or may not have been committed%s"
                              % (self.db.remote, f.kind, self.db.timeout,
                                 " (%s)" % why if why else ""))
        self.txn = None
        self.last_mark = f.mark
        err = f.txn.get_error() if status == Txn.ERROR else None
        return f.done(status, err)

    def take_over(self) -> str:
        """Increments the epoch if this planner holds the lock and has
        not taken over yet.  Returns what happened ("committing": its
        transaction waits for its answer; the next call looks at it)."""
        self.db.run()
        what = self._answer()
        if what is not None:
            return what
        return self._take_over()

    def _take_over(self) -> str:
        if not self.db.connected():
            # It takes over again once connected: the server released
            # its lock with the connection.
            self.epoch = None
            return "not connected: %s" % self.db.unreachable()
        if not self.has_lock():
            self.epoch = None
            if self.db.idl.lock_error is not None:
                # For good: a remote with an RBAC role (the agents')
                # gives its clients no locks (fabric.rst, "RBAC").
                return ("the server refused the planner's lock (%s): a "
                        "planner must connect through a remote without "
                        "an RBAC role" % self.db.idl.lock_error)
            return "waiting for the lock"
        conn = self.db.idl._session.get_seqno()
        if self.epoch is not None and conn == self.conn:
            return "planner (epoch %d)" % self.epoch
        # First, or again with the lock of a new connection (another
        # planner may have held it meanwhile).
        self.epoch = None
        got: Dict[str, int] = {}

        def build(txn: Txn) -> Optional[str]:
            fab = self.db.root()
            if fab is None:
                return "no fabric yet"
            fab.verify("planner_epoch")
            got["epoch"] = int(fab.planner_epoch) + 1
            fab.planner_epoch = got["epoch"]
            fab.planner = self.name
            return None

        def done(status: str, early: Any) -> str:
            if early is not None and status == "done":
                return str(early)
            if status == Txn.SUCCESS:
                self.epoch = got["epoch"]
                self.conn = conn
                # What it knows of the ports starts now: it did not see
                # them while another planner planned (or none did).
                self.took_over = now_ms()
                self.up_since = {}
                self.down = None
                return "took over (epoch %d)" % self.epoch
            return "take-over failed (%s)" % status

        return self._begin("take-over", build, "%s: planner takes over"
                           % self.name, done)

    def step(self, now: Optional[int] = None) -> str:
        """One planning round: the plan from the database's contents now,
        written if it differs, fenced by the epoch.  Returns what
        happened: 'unchanged', 'planned', 'deposed', or why not.  With
        'wait' (a command), a transaction that fails because the
        database changed meanwhile (a new generation, an assignment) is
        planned again at once from the new contents while this planner
        is still the planner.  Without (a daemon's loop), a round never
        waits for the database: it looks at its transaction in flight,
        if any ("committing" while it is), and sends at most one new
        one (ovsdb_idl_loop_run()); a TRY_AGAIN is planned again as
        soon as the IDL holds what made it fail."""
        if not self.blocking:
            return self._step(now)
        what = self._step(now)
        for _ in range(PLAN_RETRIES):
            if not what.startswith("retry"):
                break
            what = self._step(now)
        return what

    def _step(self, now: Optional[int]) -> str:
        self.db.run()
        kind = self.txn.kind if self.txn is not None else None
        what = self._answer()
        if what == "committing":
            return what
        if kind == "plan" and what is not None and not (
                what.startswith("retry")
                and self.db.mark() != self.last_mark):
            # A plan's outcome, with what the round that built it read
            # (self.seen).  A TRY_AGAIN is planned again at once only
            # if the IDL holds news since that round built it: else the
            # same transaction would fail again.
            return what
        if kind == "take-over" and self.epoch is None:
            return str(what)
        self.seen = None
        self.sent = None
        what = self._take_over()
        if self.epoch is None:
            return what
        return self._plan(now)

    def _plan(self, now: Optional[int]) -> str:
        """The round of a planner that has taken over."""
        epoch = self.epoch
        assert epoch is not None
        now = now_ms() if now is None else now
        db = self.db
        fab = db.root()
        if fab is None:
            return "no fabric yet"
        if int(fab.planner_epoch) != epoch:
            return self._deposed(int(fab.planner_epoch))
        state = db.state()
        reports = db.fresh_reports()
        self.seen = (db.idl.node_changes, db.idl.fresh_nodes())
        down = unusable_ports(state, reports)
        if self.down is None:
            self.down = set()
        for e in self.down - down:
            self.up_since[e] = now
        self.down = set(down)
        up_since = dict(self.up_since)
        for e in down:
            up_since.pop(e, None)
        gen = int(fab.generation)
        if int(fab.planned_generation) < gen:
            waiting = self._unheard(state, reports, gen)
            if waiting is not None:
                return waiting
        current = db.assignments()
        since = _with_default(up_since, self.took_over)
        new, notes = plan(state, current, down, since, now, epoch, gen)
        # When to look again if nothing changes meanwhile (once this plan
        # is written; a plan that is not has it set again next round).
        self.next_due = next_return(state, new, down, since)
        upd, gone = changed(current, new)
        if not upd and not gone and int(fab.planned_generation) == gen:
            return "unchanged"

        def build(txn: Txn) -> Optional[str]:
            f = db.root()
            f.verify("planner_epoch")
            f.verify("generation")
            if int(f.planner_epoch) != epoch:
                return "deposed"
            rows = db.assignment_rows()
            for n in gone:
                if n in rows:
                    rows[n].delete()
            for a in upd:
                r = rows.get(a.dcm)
                if r is None:
                    r = txn.insert(db.idl.tables["Assignment"])
                    r.dcm = a.dcm
                else:
                    r.verify("epoch")
                r.plane = a.plane
                r.spine = a.spine
                r.epoch = epoch
                r.generation = gen
                r.home_plane = optional(a.home[0] if a.home else None)
                r.home_spine = optional(a.home[1] if a.home else None)
                r.moved_at = a.moved_at
                r.reason = a.reason
            f.planned_generation = gen
            # Every plan write is seen by FabricIdl.check_stale(): a
            # failover changes Assignment rows alone.
            f.plan_serial = int(getattr(f, "plan_serial", 0) or 0) + 1
            return None

        def done(status: str, early: Any) -> str:
            return self._planned(status, early, epoch, notes)

        self.sent = len(upd) + len(gone)
        return self._begin("plan", build, "%s: plan of generation %d "
                           "(epoch %d)" % (self.name, gen, epoch), done)

    def _planned(self, status: str, early: Any, epoch: int,
                 notes: List[str]) -> str:
        """What the outcome of the plan of epoch 'epoch' means."""
        db = self.db
        if early == "deposed" and status == "done":
            return self._deposed(int(db.root().planner_epoch))
        if status == Txn.SUCCESS:
            self.notes = notes
            return "planned"
        if status == Txn.NOT_LOCKED:
            self.epoch = None
            return "lost the lock"
        # TRY_AGAIN: someone changed the epoch, the generation or an
        # assignment meanwhile (with 'wait', commit() waited for the
        # change).  See whether this planner is still the planner (a
        # stale copy, of a connection gone, says nothing: it no longer
        # holds the lock).
        if not db.connected() or db.root() is None:
            return "not connected: %s" % (db.unreachable()
                                          or "the fabric is gone")
        cur = int(db.root().planner_epoch)
        if cur != epoch:
            return self._deposed(cur)
        return "retry (%s)" % status

    def _unheard(self, state: Any, reports: Dict[str, Dict[str, str]],
                 gen: int) -> Optional[str]:
        """Why the plan of generation 'gen' (not planned yet) waits: a
        node whose report is fresh has not reported every port 'gen'
        cables to its switch (its agent has not read it yet: it will,
        PLAN_WAIT_S after it saw it at the latest, and report them
        then), and this planner saw 'gen' less than REPORT_WAIT_S ago.
        None: plan now (a node without a fresh report is not waited
        for: its ports are unknown)."""
        now = time.monotonic()
        if self.gen_seen is None or self.gen_seen[0] != gen:
            self.gen_seen = (gen, now)
        unheard = unheard_ports(state, reports)
        if not unheard or now - self.gen_seen[1] >= REPORT_WAIT_S:
            return None
        return ("waiting for the reports of generation %d's ports (%g s "
                "at most): %s" % (gen, REPORT_WAIT_S,
                                  ", ".join(sorted(unheard))))

    def _deposed(self, epoch: int) -> str:
        """Another planner took over (epoch 'epoch'): give up the lock
        and contend again through the leader."""
        self.epoch = None
        self.db.idl.set_lock(None)
        self.db.idl.set_lock(PLANNER_LOCK)
        self.db.idl.force_reconnect()
        return "deposed (epoch %d is another planner's)" % epoch


def _with_default(up_since: Dict[Endpoint, int],
                  started: int) -> "_SinceMap":
    return _SinceMap(up_since, started)


class _SinceMap(dict):  # type: ignore[type-arg]
    """up_since with the planner's start as the default."""

    def __init__(self, d: Dict[Endpoint, int], default: int) -> None:
        super().__init__(d)
        self.default = default

    def get(self, k: Any, _d: Any = None) -> Any:
        return super().get(k, self.default)
