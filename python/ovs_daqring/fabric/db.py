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


"""The fabric database (daqfabric.ovsschema, clustered ovsdb-server)
through OVS's Python IDL (fabric/idl.py): the whole desired state in one
transaction, reading it back as the fabric model (fabric/rows.py), the
rows an agent's slice needs (conditional monitoring), and transactions
that verify what they read and build again from what changed (the
planner's fenced ones: fabric/plannerd.py).

Remotes are a comma-separated list of every cluster member
("unix:a,unix:b,tcp:..."); the IDL talks to the leader only, and moves to
the new one when the leader fails."""

import time
import uuid
from typing import (Any, Callable, Dict, Iterable, List, Optional, Set,
                    Tuple)

import ovs.db.data
import ovs.db.idl

from ..daqctl.model import DaqctlError
from ..daqctl.idlutil import commit_block, run_until
from . import schema_path
from .idl import DESIRED_TABLES, FabricIdl, vlog
from .model import Assignment, FabricDcm, FabricState
from .planner import Endpoint, unusable_ports
from .rows import (assignment_of_row, canon_datum, canon_value, dcm_columns,
                   dcm_of_row, fabric_bfd, host_of_row, link_of_row,
                   optional, switch_of_row)
from .slice import monitored

# After a TRY_AGAIN, how long a transaction waits for the news that
# made it fail (seconds) before it is tried again anyway.
RETRY_WAIT = 1.0
Txn = ovs.db.idl.Transaction
# How many of the last applies the Fabric row remembers (apply id ->
# generation, in Fabric:external_ids under APPLY_KEY + id): an apply
# whose answer was lost recognises its own commit after up to this many
# others landed on top of it (apply_history()).
APPLY_HISTORY = 64
APPLY_KEY = "apply:"
# Fabric:external_ids' key that says when (ms since the epoch, by the
# applying client's clock) the generation the row holds was committed:
# the agents' metrics measure from it (as OVN's nb_cfg_timestamp).
COMMITTED_AT_KEY = "generation-committed-at"
# The exit status of an apply whose outcome is not known: it was sent,
# and the answer never came (the leader died with it, the database
# stayed unreachable): it may have been committed.
EXIT_MAYBE_COMMITTED = 5


def apply_history(fab: Any) -> Dict[str, int]:
    """The applies the Fabric row 'fab' remembers: apply id -> the
    generation it wrote (Fabric:external_ids' APPLY_KEY keys, and
    Fabric:apply_id, the last one).  An entry that is not an id and a
    generation (rows are input) is left out."""
    out: Dict[str, int] = {}
    for k, v in dict(fab.external_ids).items():
        if not k.startswith(APPLY_KEY) or len(k) == len(APPLY_KEY):
            continue
        try:
            gen = int(v)
        except ValueError:
            continue
        if gen > 0:
            out[k[len(APPLY_KEY):]] = gen
    if fab.apply_id:
        out[fab.apply_id] = int(fab.generation)
    return out


def history_with(ext: Dict[str, str], apply_id: str,
                 gen: int) -> Dict[str, str]:
    """Fabric:external_ids 'ext' with the apply 'apply_id' of generation
    'gen' remembered, and only the APPLY_HISTORY newest applies (the
    other keys as they are)."""
    out = {k: v for k, v in ext.items() if not k.startswith(APPLY_KEY)}
    hist = []
    for k, v in ext.items():
        if k.startswith(APPLY_KEY) and k != APPLY_KEY + apply_id:
            try:
                hist.append((int(v), k))
            except ValueError:
                pass
    hist.sort(reverse=True)
    for g, k in hist[:APPLY_HISTORY - 1]:
        out[k] = str(g)
    out[APPLY_KEY + apply_id] = str(gen)
    return out


def now_ms() -> int:
    return int(time.time() * 1000)


# The tables FabricDb.watch_slice() monitors part of.
NARROWED_TABLES = ("DCM", "Assignment")


def rows_text(applied: Dict[str, Dict[str, int]]) -> str:
    """What an apply wrote, in words: "DCM 1 inserted, Fabric 1
    updated"."""
    out = ["%s %d %s" % (t, n, what) for t, c in sorted(applied.items())
           for what, n in sorted(c.items()) if n]
    return ", ".join(out) or "no rows written"


class FabricDb:
    """A connection to the fabric database."""

    def __init__(self, remote: str, timeout: float,
                 leader_only: bool = True,
                 lock: Optional[str] = None, wait: bool = True) -> None:
        """wait: until connected (DaqctlError after 'timeout'); without
        it, the caller runs the IDL (a daemon that must not block)."""
        self.remote = remote
        self.timeout = timeout
        helper = ovs.db.idl.SchemaHelper(location=schema_path())
        helper.register_all()
        self.idl = FabricIdl(remote, helper, leader_only=leader_only)
        # state() of the last changes() of DESIRED_TABLES.
        self._state: Optional[Tuple[int, FabricState]] = None
        # converted(): table -> (the IDL's rows, row -> converted, a
        # token); state()'s DCMs sorted by name (for a token); _table():
        # table -> (the IDL's rows, its changes, the rows converted).
        self._converted: Dict[str, Tuple[Any, Dict[Any, Any], Any]] = {}
        self._dcm_list: Optional[Tuple[Any, List[FabricDcm]]] = None
        self._small: Dict[str, Tuple[Any, Any, List[Any]]] = {}
        # The rows converted() and _table() left out, and why: table ->
        # uuid -> (the row's name as it is, the error).
        self._bad: Dict[str, Dict[Any, Tuple[Any, str]]] = {}
        # apply()'s view of each table's rows: table -> (columns, uuid ->
        # (the row's change count, its key, its canonical values)).
        self._canon: Dict[str, Tuple[Tuple[str, ...],
                                     Dict[Any, Tuple[int, Any, Tuple[
                                         Any, ...]]]]] = {}
        # What the last apply() wrote: table -> {"inserted": n,
        # "updated": n, "deleted": n} (tables it left alone: none).
        self.applied: Dict[str, Dict[str, int]] = {}
        # Whether the last apply() was committed by an earlier attempt
        # whose answer was lost (and so wrote nothing again).
        self.earlier = False
        self._default: Dict[str, Dict[str, Tuple[Any, ...]]] = {}
        # watch_slice()'s node, the conditions narrow() last set (table
        # -> condition) and the changes() of the rows it set them for.
        self._slice_node: Optional[str] = None
        self._conditions: Optional[Callable[..., Dict[str, List[Any]]]] = (
            None)
        self._conds: Dict[str, List[Any]] = {}
        self._conds_key: Optional[int] = None
        # Since when (time.monotonic()) connected() has been false.
        self._down_since: Optional[float] = time.monotonic()
        # How many transactions the last commit() sent.
        self.attempts = 0
        if lock:
            self.idl.set_lock(lock)
        if wait:
            self.wait_connected()

    def close(self) -> None:
        self.idl.close()

    def connected(self) -> bool:
        """Whether the IDL holds the database as a member serves it now:
        its session is up and the IDL has synced on it since it last
        (re)connected (the IDL's state alone stays "monitoring" while its
        session is down and reconnecting).  The IDL syncs only on a
        member that is connected to its cluster, and, leader_only, that
        is its leader (it leaves one that stops being either)."""
        idl = self.idl
        s = idl._session
        up = (idl.state == idl.IDL_S_MONITORING and s.rpc is not None
              and not s.rpc.get_status() and s.reconnect.is_connected()
              and s.get_seqno() == idl._last_seqno)
        now = time.monotonic()
        if up:
            self._down_since = None
        elif self._down_since is None:
            self._down_since = now
        return up

    def down_for(self) -> float:
        """For how long connected() has been false (seconds, 0 while it
        is true)."""
        if self.connected() or self._down_since is None:
            return 0.0
        return time.monotonic() - self._down_since

    def unreachable(self) -> Optional[str]:
        """None while connected(), else why not, in words: "the fabric
        database is unreachable (for 12 s): no member answers"."""
        if self.connected():
            return None
        s = self.idl._session
        if s.rpc is not None and not s.rpc.get_status():
            why = ("%s answers but is not %s (yet)"
                   % (s.get_name(), "the cluster's leader"
                      if self.idl.leader_only
                      else "connected to its cluster"))
        else:
            why = "no member answers"
        since = self._down_since
        return "the fabric database is unreachable%s: %s" % (
            " (for %d s)" % (time.monotonic() - since)
            if since is not None and self.idl.has_ever_connected()
            else "", why)

    def wait_connected(self, timeout: Optional[float] = None) -> None:
        try:
            self.run_until(self.connected, "connect to the fabric "
                           "database %s" % ("leader" if self.idl.leader_only
                                            else "member"), timeout)
        except DaqctlError as e:
            raise DaqctlError("%s: %s" % (e, self.unreachable()
                                          or "connected again"))

    def run_until(self, done: Callable[[], bool], what: str,
                  timeout: Optional[float] = None) -> None:
        run_until(self.idl, done, self.remote, what,
                  self.timeout if timeout is None else timeout)

    def run(self) -> None:
        self.idl.run()

    def changes(self, *tables: str) -> int:
        """A number that changes when a row of 'tables' does (all tables
        if none given: the same as the IDL's change_seqno would, less
        often)."""
        c = self.idl.table_changes
        if not tables:
            return sum(c.values())
        return sum(c.get(t, 0) for t in tables)

    def slice_changes(self) -> int:
        """A number that changes when what a slice is computed from
        does: the desired state (as state() reads it) or an
        assignment; not a new generation alone."""
        return self.idl.desired_changes + self.changes("Assignment")

    def plan_key(self, seen: Any = None) -> Tuple[Any, ...]:
        """What a planner's plan depends on: every table but the nodes'
        reports, whether it holds the lock, on which connection (a
        planner that reconnects takes over again), and of the nodes'
        rows, the count of their changes beyond their reports and which
        nodes' reports are fresh (one that falls silent, or is heard
        again, changes no column a plan reads): 'seen', those a round
        read (Planner.seen), else those now."""
        if seen is None:
            seen = (self.idl.node_changes, self.idl.fresh_nodes())
        return (self.changes(*DESIRED_TABLES, "Assignment"),
                bool(self.idl.has_lock), self.idl._session.get_seqno(),
                seen)

    # ------------------------------------------------ conditional monitoring
    def watch_slice(self, node: str,
                    conditions: Optional[Callable[
                        ..., Dict[str, List[Any]]]] = None) -> None:
        """From now on, monitors of the DCM and Assignment tables only
        the rows switch 'node's slice is computed from (as ovn-controller
        monitors its chassis' part of the southbound database): at
        thousands of DCMs, an HLT leaf's agent holds its hosts' DCMs
        instead of every DCM.  Nothing of them until the IDL holds the
        hosts: narrow() sets the conditions.  The other tables are
        small and monitored whole.  Only for an agent's own IDL: a
        planner needs every row.  'conditions': the function that gives
        them (slice.monitored()'s arguments and result; a host's agent
        has its own), by default slice.monitored()."""
        self._slice_node = node
        self._conditions = conditions
        self._conds = {t: [False] for t in NARROWED_TABLES}
        self._conds_key = None
        for t, cond in self._conds.items():
            self.idl.cond_change(t, cond)

    def narrow(self) -> bool:
        """Sets the conditions of watch_slice() for the rows the IDL
        holds now (slice.monitored(): the DCM conditions follow the
        assignments held, and the Assignment conditions the DCMs), and
        returns whether the slice can be computed from them: whether the
        server has acknowledged the conditions the IDL holds rows by, and
        those are the ones these rows give (a fixed point: then the IDL
        holds every row the slice reads).  A slice computed from rows
        selected by conditions not acknowledged yet could miss rows it
        needs: a DCM that moved to a host of this leaf, say, arrives
        before its assignment, which the new condition on Assignment
        selects only once the server has it.

        The acknowledgement is the IDL's own record
        (table.condition_state, the same in the Python IDLs of OVS 3.1
        and 3.5): the condition it sent last and the server answered
        (the IDL receives the rows a new condition selects before the
        answer), with none sent and unanswered nor waiting to be sent.
        Not cond_seqno, which starts again at 0 when the IDL reconnects.
        On a reconnection the IDL monitors by its acknowledged
        conditions again (the monitor request carries them) and is not
        connected() until the server has sent those rows.  Without
        watch_slice(), True."""
        node = self._slice_node
        if node is None:
            return True
        key = self.changes("Host", *NARROWED_TABLES)
        if key != self._conds_key:
            self._conds_key = key
            # [] is [False] to the IDL (and so what it acknowledges).
            conditions = self._conditions or monitored
            self._conds = {t: c or [False] for t, c in conditions(
                node, self.state().hosts, self.state().dcms,
                self.assignments().values()).items()}
            for t, cond in self._conds.items():
                self.idl.cond_change(t, cond)
        return self.narrowed()

    def narrowed(self) -> bool:
        """Whether the server acknowledged narrow()'s conditions and
        no other is on its way (narrow() says why that matters)."""
        for t, cond in self._conds.items():
            cs = self.idl.tables[t].condition_state
            if (cs.new is not None or cs.requested is not None
                    or cs.acked != cond):
                return False
        return True

    # --------------------------------------------------------------- read
    def rows(self, table: str) -> List[Any]:
        return list(self.idl.tables[table].rows.values())

    def root(self) -> Optional[Any]:
        rows = self.rows("Fabric")
        return rows[0] if rows else None

    def generation(self) -> int:
        r = self.root()
        return int(r.generation) if r is not None else 0

    def state(self) -> FabricState:
        """The desired state as the database holds it (the same object
        until it changes: callers must not modify it)."""
        key = self.idl.desired_changes
        if self._state is not None and self._state[0] == key:
            return self._state[1]
        st = self._read_state()
        self._state = (key, st)
        return st

    def _read_state(self) -> FabricState:
        st = FabricState()
        r = self.root()
        bfd: Dict[Any, Dict[str, str]] = {}
        if r is not None:
            st.hold_down = int(r.hold_down)
            # A bad bfd is left out: no BFD, as a map without one.
            self._convert("Fabric", [(r.uuid, r)],
                          lambda r: fabric_bfd(dict(r.bfd)), bfd, True)
            st.bfd = bfd.get(r.uuid, {})
        else:
            self._bad.pop("Fabric", None)
        st.switches = self._table("Switch", switch_of_row)
        st.links = self._table("Link", link_of_row)
        st.hosts = self._table("Host", host_of_row)
        dcms = self.converted("DCM", dcm_of_row)
        if self._dcm_list is None or self._dcm_list[0] is not dcms[1]:
            self._dcm_list = (dcms[1], sorted(dcms[0].values(),
                                              key=lambda d: d.dcm.name))
        st.dcms = list(self._dcm_list[1])
        return st

    def converted(self, table: str, convert: Callable[[Any], Any]
                  ) -> Tuple[Dict[Any, Any], Any]:
        """convert(row) of every row of 'table' (one of FabricIdl.dirty's), by
        row, and a token that changes when one of them does.  Kept from
        one call to the next and converted again only for the rows that
        changed since (the IDL's 'dirty' rows): an agent or a planner
        reads thousands of DCMs and assignments at every change, of
        which a plan or a map changes a few, and on a machine that runs
        dozens of agents a loop over every row took more of a ROS
        leaf's reprogramming than its slice.  Converted whole when the
        IDL replaced the table's rows (a reconnection may clear them
        without a notification per row) or a count disagrees (a row a
        transaction inserted and dropped)."""
        rows = self.idl.tables[table].rows
        dirty = self.idl.dirty[table]
        self.idl.dirty[table] = set()
        got = self._converted.get(table)
        if got is not None and got[0] is rows and not dirty:
            return got[1], got[2]
        whole = got is None or got[0] is not rows
        if whole:
            conv: Dict[Any, Any] = {}
            dirty = set(rows)
        else:
            conv = got[1]
        bad = self._bad.setdefault(table, {})
        changed = []
        for u in dirty:
            row = rows.get(u)
            if row is None:
                conv.pop(u, None)
                bad.pop(u, None)
            else:
                changed.append((u, row))
        self._convert(table, changed, convert, conv, whole)
        if len(conv) + len(self._bad[table]) != len(rows):
            conv = {}
            self._convert(table, rows.items(), convert, conv, True)
        token = object()
        self._converted[table] = (rows, conv, token)
        return conv, token

    def _table(self, table: str, convert: Callable[[Any], Any]
               ) -> List[Any]:
        """convert(row) of every row of a small table, sorted by name;
        converted again only when the table changed."""
        rows = self.idl.tables[table].rows
        key = (self.changes(table), len(rows))
        got = self._small.get(table)
        if got is None or got[0] is not rows or got[1] != key:
            conv: Dict[Any, Any] = {}
            self._convert(table, rows.items(), convert, conv, True)
            got = (rows, key, sorted(conv.values(), key=lambda x: x.name))
            self._small[table] = got
        return list(got[2])

    def _convert(self, table: str, rows: Iterable[Tuple[Any, Any]],
                 convert: Callable[[Any], Any], conv: Dict[Any, Any],
                 whole: bool) -> None:
        """conv[uuid] = convert(row) of 'rows' (uuid, row) of 'table';
        a row that is bad (convert() raises ValueError: rows are input,
        fabric/rows.py) is left out of 'conv' and kept, with its error,
        for row_errors(), which is logged once (again if it goes and
        comes back).  'whole': 'rows' are all of the table's."""
        old = self._bad.get(table, {})
        bad = {} if whole else old
        for u, row in rows:
            was = old.get(u)
            bad.pop(u, None)
            try:
                conv[u] = convert(row)
            except ValueError as e:
                conv.pop(u, None)
                bad[u] = (getattr(row, "name", None), str(e))
                if was is None or was[1] != str(e):
                    vlog.warn("fabric database: a bad row left out: %s" % e)
        self._bad[table] = bad

    def row_errors(self) -> List[str]:
        """Why each row that state() (and assignments()) last left out
        is bad, sorted: "DCM d1: ip '10.0.0.1,output:7' is not an IP
        address"."""
        return sorted(e for bad in self._bad.values()
                      for _, e in bad.values())

    def row_error(self, table: str, name: str) -> Optional[str]:
        """Why row 'name' of 'table' was left out, None if it was not."""
        return next((e for n, e in self._bad.get(table, {}).values()
                     if n == name), None)

    def assignments(self) -> Dict[str, Assignment]:
        """The planner's assignments by DCM (a new dict each call; the
        rows converted as converted() says)."""
        conv, _ = self.converted("Assignment", assignment_of_row)
        return {a.dcm: a for a in conv.values()}

    def assignment_rows(self) -> Dict[str, Any]:
        """The Assignment rows by DCM (through assignments()' cache: a
        planner writes a few of thousands)."""
        conv, _ = self.converted("Assignment", assignment_of_row)
        rows = self.idl.tables["Assignment"].rows
        return {a.dcm: rows[u] for u, a in conv.items() if u in rows}

    def fresh_reports(self) -> Dict[str, Dict[str, str]]:
        """The link states of the nodes whose report is fresh by this
        client's clock (FabricIdl.fresh_nodes()), by node."""
        fresh = self.idl.fresh_nodes()
        return {n.name: dict(n.links) for n in self.rows("Node")
                if n.name in fresh}

    def down_ports(self, state: Optional[FabricState] = None
                   ) -> Set[Endpoint]:
        """The ports of 'state' (the database's by default) that may not
        carry a DCM's path: all but those a fresh report says are up
        (planner.unusable_ports())."""
        return unusable_ports(self.state() if state is None else state,
                              self.fresh_reports())

    # -------------------------------------------------------------- write
    def commit(self, build: Callable[[Txn], Optional[Any]],
               comment: str, retry: bool = True) -> Tuple[str, Any]:
        """Runs build(txn) and commits, building again from the new
        contents after a TRY_AGAIN (another client changed what build()
        verified, or the leader changed) until the timeout.  build()
        returns None to go on, anything else to stop without committing
        (that value is returned).  Returns (status, value).  Without
        'retry', a TRY_AGAIN is returned once the IDL holds what made it
        fail (as after a retry's wait): the caller decides.
        self.attempts: how many transactions it sent."""
        deadline = time.monotonic() + self.timeout
        self.attempts = 0
        while True:
            self.wait_connected(max(0.1, deadline - time.monotonic()))
            seqno = self.idl.change_seqno
            conn = self.idl._session.get_seqno()
            txn, early = self._built(build, comment)
            if txn is None:
                return "done", early
            self.attempts += 1
            try:
                status = commit_block(self.idl, txn, deadline, self.remote)
            except DaqctlError as e:
                why = self.unreachable()
                raise DaqctlError("%s%s" % (e, " (%s)" % why if why
                                            else "")) from None
            if status in (Txn.SUCCESS, Txn.UNCHANGED):
                return status, None
            if status == Txn.NOT_LOCKED:
                return status, txn.get_error()
            if status == Txn.ERROR and "constraint" not in str(
                    txn.get_error()):
                if not retry:
                    return status, txn.get_error()
                raise DaqctlError("%s: transaction failed (%s); nothing "
                                  "changed" % (self.remote,
                                               txn.get_error()))
            # TRY_AGAIN (or two first writers both creating the Fabric
            # row): build again once the IDL holds what made it fail.
            self._await_news(seqno, conn, deadline, retry)
            if not retry:
                return status, txn.get_error()
            if time.monotonic() > deadline:
                raise DaqctlError("%s: the database kept changing for %g s; "
                                  "nothing changed" % (self.remote,
                                                       self.timeout))

    def begin(self, build: Callable[[Txn], Optional[Any]],
              comment: str) -> Tuple[Optional[Txn], Any]:
        """The start of a commit that does not wait for its answer (a
        daemon's loop, as OVS's ovsdb_idl_loop): runs build(txn) as
        commit() does and sends the transaction.  Returns (txn, None):
        txn.commit() says its status, INCOMPLETE until the answer
        arrives (run() receives it; txn.wait() wakes a poller once it
        has); or (None, value): build() returned 'value' and nothing
        was sent."""
        txn, early = self._built(build, comment)
        if txn is not None:
            txn.commit()
        return txn, early

    def _built(self, build: Callable[[Txn], Optional[Any]],
               comment: str) -> Tuple[Optional[Txn], Any]:
        """A transaction that build(txn) filled, not sent: (txn, None),
        or (None, value) if build() returned 'value' (the transaction is
        aborted then, and when build() raises)."""
        txn = Txn(self.idl)
        txn.add_comment(comment)
        try:
            early = build(txn)
        except BaseException:
            txn.abort()
            raise
        if early is not None:
            txn.abort()
            return None, early
        return txn, None

    def mark(self) -> Tuple[int, int]:
        """Where the IDL's copy is: its change_seqno and its session's
        seqno.  A TRY_AGAIN of a transaction built at mark() m is worth
        building again once mark() != m (what made it fail arrived, or
        the IDL reconnected)."""
        return self.idl.change_seqno, self.idl._session.get_seqno()

    def _await_news(self, seqno: int, conn: int, deadline: float,
                    sync: bool) -> None:
        """After a TRY_AGAIN of a transaction built on the IDL's contents
        at change_seqno 'seqno', on the connection of session seqno
        'conn': runs the IDL until it holds a newer snapshot, synced (the
        change that made it fail arrived, or the IDL reconnected and
        synced again), for RETRY_WAIT seconds at most (a TRY_AGAIN whose
        cause does not show: the server's own), and never past
        'deadline'.  With 'sync', an IDL that is not connected then is
        waited for (wait_connected(): DaqctlError if the database stays
        unreachable until 'deadline'); without, the caller sees that it
        is not."""
        def news() -> bool:
            return (self.idl.change_seqno != seqno
                    or self.idl._session.get_seqno() != conn
                    or not self.connected())
        left = min(RETRY_WAIT, deadline - time.monotonic())
        if left > 0:
            try:
                self.run_until(news, "receive the database's changes", left)
            except DaqctlError:
                pass
        if sync and not self.connected():
            self.wait_connected(max(0.1, deadline - time.monotonic()))

    def apply(self, state: FabricState, digest: str, who: str,
              comment: str, apply_id: Optional[str] = None) -> int:
        """Replaces the whole desired state by 'state' in one transaction
        that also increments the generation.  A concurrent apply makes it
        start again from the new contents (last writer wins, whole).
        Exactly once: each apply has an id ('apply_id', a new one by
        default), and the Fabric row remembers the last APPLY_HISTORY
        (apply_history()); an attempt whose answer was lost (the leader
        died with it) is recognised when the apply builds again, even
        after other applies landed on top of it, and is not written
        again over them (self.earlier: True, and the generation it
        wrote is returned).  When the answer never comes and the
        database does not say, DaqctlError with EXIT_MAYBE_COMMITTED: it
        may have been committed.  Writes only the rows that differ
        (self.applied says how many of each table).  Returns the new
        generation."""
        apply_id = apply_id or str(uuid.uuid4())
        result: Dict[str, int] = {}
        counts: Dict[str, Dict[str, int]] = {}
        # Whether an attempt was sent whose outcome no later build saw.
        sent: List[bool] = [False]

        def build(txn: Txn) -> Optional[int]:
            # The IDL holds the database as its leader serves it now: an
            # attempt sent before is in the history, or was not committed.
            sent[0] = False
            counts.clear()
            counts["Fabric"] = {"inserted": 0, "updated": 1, "deleted": 0}
            fab = self.root()
            if fab is None:
                fab = txn.insert(self.idl.tables["Fabric"])
                counts["Fabric"] = {"inserted": 1, "updated": 0,
                                    "deleted": 0}
                gen = 0
                ext: Dict[str, str] = {}
            else:
                done = apply_history(fab).get(apply_id)
                if done is not None:
                    # Committed already; the answer was lost.
                    return done
                fab.verify("generation")
                fab.verify("apply_id")
                fab.verify("external_ids")
                gen = int(fab.generation)
                ext = dict(fab.external_ids)
            sent[0] = True
            fab.generation = gen + 1
            fab.apply_id = apply_id
            fab.external_ids = dict(history_with(ext, apply_id, gen + 1),
                                    **{COMMITTED_AT_KEY: str(now_ms())})
            fab.map_digest = digest
            fab.applied_by = who
            fab.hold_down = state.hold_down
            fab.bfd = state.bfd
            result["gen"] = gen + 1
            self._sync(txn, "Switch", "name", {
                s.name: {"role": s.role, "plane": s.plane, "pod": s.pod,
                         "dpdk": s.dpdk, "db": optional(s.db),
                         "bridge": s.bridge, "of": optional(s.of)}
                for s in state.switches}, counts)
            self._sync(txn, "Link", "name", {
                lk.name: {"a_switch": lk.a_switch, "a_port": lk.a_port,
                          "b_switch": lk.b_switch, "b_port": lk.b_port}
                for lk in state.links}, counts)
            self._sync(txn, "Host", "name", {
                h.name: {"role": h.role, "ip": optional(h.ip), "pod": h.pod,
                         "attachments": {p: "%s:%s" % (leaf, port)
                                         for p, leaf, port
                                         in h.attachments},
                         "macs": dict(h.macs)}
                for h in state.hosts}, counts)
            self._sync(txn, "DCM", "name", {
                d.name: dcm_columns(d) for d in state.dcms}, counts)
            return None

        self.applied = {}
        self.earlier = False
        try:
            status, early = self.commit(build, comment)
        except DaqctlError as e:
            if not sent[0]:
                raise
            early = self._outcome(apply_id, digest, str(e))
        if early is not None:
            # Committed by an earlier attempt whose answer was lost: what
            # it wrote is not known.
            self.earlier = True
            return int(early)
        if status == Txn.UNCHANGED:
            return self.generation()
        self.applied = counts
        return result["gen"]

    def _outcome(self, apply_id: str, digest: str, why: str) -> int:
        """The generation that the apply 'apply_id', sent and not
        answered, wrote, if the database says it did (it remembers it);
        else DaqctlError with EXIT_MAYBE_COMMITTED."""
        self.run()
        fab = self.root() if self.connected() else None
        gen = apply_history(fab).get(apply_id) if fab is not None else None
        if gen is not None:
            return gen
        raise DaqctlError(
            "%s; the map may have been committed (apply id %s): "
            "'ovs-daqctl fabric status' shows the map's digest (%s) if "
            "it was" % (why, apply_id, digest), EXIT_MAYBE_COMMITTED)

    def _sync(self, txn: Txn, table: str, key: str,
              wanted: Dict[str, Dict[str, Any]],
              counts: Dict[str, Dict[str, int]]) -> None:
        """Makes 'table' hold exactly 'wanted' (rows by their 'key'
        column), changing only what differs.  Rows are compared as
        canonical tuples read from the IDL's data (not through the Row
        attributes, which convert every column of every row: seconds at
        thousands of DCMs), and a row's tuple is kept until the row
        changes: an apply that changes one DCM of thousands converts that
        one.  counts[table]: how many rows it inserts, updates,
        deletes."""
        cols = tuple(sorted(next(iter(wanted.values())).keys())
                     if wanted else ())
        have = self._canonical(table, key, cols)
        rows = self.idl.tables[table].rows
        n = counts.setdefault(table, {"inserted": 0, "updated": 0,
                                      "deleted": 0})
        by_key = {}
        for u, (_, k, canon) in have.items():
            if k not in wanted:
                rows[u].delete()
                n["deleted"] += 1
            else:
                by_key[k] = (u, canon)
        defaults = self._defaults(table)
        for k, values in sorted(wanted.items()):
            got = by_key.get(k)
            want = tuple([canon_value(values[c]) for c in cols])
            if got is None:
                r = txn.insert(self.idl.tables[table])
                setattr(r, key, k)
                for c, v, w in zip(cols, (values[c] for c in cols), want):
                    # A new row has its columns' defaults already.
                    if w != defaults.get(c):
                        setattr(r, c, v)
                n["inserted"] += 1
            elif got[1] != want:
                r = rows[got[0]]
                for c, w, h in zip(cols, want, got[1]):
                    if w != h:
                        setattr(r, c, values[c])
                n["updated"] += 1
        if not any(n.values()):
            del counts[table]

    def _canonical(self, table: str, key: str, cols: Tuple[str, ...]
                   ) -> Dict[Any, Tuple[int, Any, Tuple[Any, ...]]]:
        """uuid -> (change count, key, canonical values of 'cols') of each
        row of 'table', converting only the rows changed since the last
        call."""
        old_cols, old = self._canon.get(table, ((), {}))
        if old_cols != cols:
            old = {}
        changes = self.idl.row_changes
        defaults = self._defaults(table)
        out = {}
        for u, r in self.idl.tables[table].rows.items():
            n = changes.get(u, 0)
            got = old.get(u)
            if got is None or got[0] != n:
                # dict.get: the IDL leaves out the columns that hold their
                # default (its __missing__ makes one, slowly).
                data = r._data
                got = (n, canon_datum(dict.get(data, key))[0],
                       tuple([defaults[c] if d is None else canon_datum(d)
                              for c, d in [(c, dict.get(data, c))
                                           for c in cols]]))
            out[u] = got
        self._canon[table] = (cols, out)
        return out

    def _defaults(self, table: str) -> Dict[str, Tuple[Any, ...]]:
        """The canonical default of each column of 'table'."""
        got = self._default.get(table)
        if got is None:
            got = {c: canon_datum(ovs.db.data.Datum.default(col.type))
                   for c, col in self.idl.tables[table].columns.items()}
            self._default[table] = got
        return got
