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
database's contents, written in a transaction fenced by its epoch."""

from typing import Any, Dict, List, Optional, Set

from .db import FabricDb, Txn, now_ms
from .planner import Endpoint, changed, next_return, plan
from .rows import optional

PLANNER_LOCK = "daqfabric_planner"
# How many times a planner round plans again at once after a TRY_AGAIN
# that left it the planner.
PLAN_RETRIES = 3


class Planner:
    """The planner's side of the fabric database.  Contenders connect to
    the leader only and take the OVSDB lock PLANNER_LOCK; the one that
    gets it increments Fabric:planner_epoch (its takeover), and every
    transaction it makes verify()s that epoch, so that a planner deposed
    while it still holds a lock (on a former leader, locks are not
    replicated) can never commit."""

    def __init__(self, remote: str, name: str, timeout: float,
                 leader_only: bool = True, wait: bool = True) -> None:
        self.name = name
        self.db = FabricDb(remote, timeout, leader_only=leader_only,
                           lock=PLANNER_LOCK, wait=wait)
        self.epoch: Optional[int] = None
        # When each port was last seen coming back up (ms); ports up
        # when this planner started count from then: after a takeover,
        # a DCM moves home a hold-down later at the earliest.
        self.up_since: Dict[Endpoint, int] = {}
        self.down: Optional[Set[Endpoint]] = None
        self.started = now_ms()
        # The connection (session seqno) it took over on: its lock and
        # so its epoch are that connection's.
        self.conn: Optional[int] = None
        self.notes: List[str] = []
        # When (ms, as now_ms()) the last plan would first change with
        # the same inputs (planner.next_return()): a DCM away from home
        # whose hold-down ends.  None: not by itself.
        self.next_due: Optional[int] = None

    def close(self) -> None:
        self.db.close()

    def has_lock(self) -> bool:
        """Whether it holds the lock now: a lock held on a connection
        that is gone is not (the server released it; the IDL says so
        only once it has connected again)."""
        return bool(self.db.idl.has_lock) and self.db.connected()

    def take_over(self) -> str:
        """Increments the epoch if this planner holds the lock and has
        not taken over yet.  Returns what happened."""
        self.db.run()
        if not self.db.connected():
            # It takes over again once connected: the server released
            # its lock with the connection.
            self.epoch = None
            return "not connected: %s" % self.db.unreachable()
        if not self.has_lock():
            self.epoch = None
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

        status, early = self.db.commit(build, "%s: planner takes over"
                                       % self.name, retry=False)
        if early is not None:
            return str(early)
        if status == Txn.SUCCESS:
            self.epoch = got["epoch"]
            self.conn = conn
            return "took over (epoch %d)" % self.epoch
        return "take-over failed (%s)" % status

    def step(self, now: Optional[int] = None) -> str:
        """One planning round: the plan from the database's contents now,
        written if it differs, fenced by the epoch.  Returns what
        happened: 'unchanged', 'planned', 'deposed', or why not.  A
        transaction that fails because the database changed meanwhile
        (a new generation, an assignment) is planned again at once from
        the new contents while this planner is still the planner."""
        what = self._step(now)
        for _ in range(PLAN_RETRIES):
            if not what.startswith("retry"):
                break
            what = self._step(now)
        return what

    def _step(self, now: Optional[int]) -> str:
        what = self.take_over()
        if self.epoch is None:
            return what
        now = now_ms() if now is None else now
        db = self.db
        fab = db.root()
        if fab is None:
            return "no fabric yet"
        if int(fab.planner_epoch) != self.epoch:
            return self._deposed(int(fab.planner_epoch))
        down = db.down_ports()
        if self.down is None:
            self.down = set()
        for e in self.down - down:
            self.up_since[e] = now
        self.down = set(down)
        up_since = dict(self.up_since)
        for e in down:
            up_since.pop(e, None)
        state = db.state()
        current = db.assignments()
        gen = int(fab.generation)
        since = _with_default(up_since, self.started)
        new, notes = plan(state, current, down, since, now, self.epoch,
                          gen)
        # When to look again if nothing changes meanwhile (once this plan
        # is written; a plan that is not has it set again next round).
        self.next_due = next_return(state, new, down, since)
        upd, gone = changed(current, new)
        if not upd and not gone and int(fab.planned_generation) == gen:
            return "unchanged"
        epoch = self.epoch

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
            return None

        status, early = db.commit(build, "%s: plan of generation %d "
                                  "(epoch %d)" % (self.name, gen, epoch),
                                  retry=False)
        if early == "deposed":
            return self._deposed(int(db.root().planner_epoch))
        if status == Txn.SUCCESS:
            self.notes = notes
            return "planned"
        if status == Txn.NOT_LOCKED:
            self.epoch = None
            return "lost the lock"
        # TRY_AGAIN: someone changed the epoch, the generation or an
        # assignment meanwhile, and commit() waited for the change.  See
        # whether this planner is still the planner (a stale copy, of a
        # connection gone, says nothing: it no longer holds the lock).
        if not db.connected() or db.root() is None:
            return "not connected: %s" % (db.unreachable()
                                          or "the fabric is gone")
        cur = int(db.root().planner_epoch)
        if cur != epoch:
            return self._deposed(cur)
        return "retry (%s)" % status

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
