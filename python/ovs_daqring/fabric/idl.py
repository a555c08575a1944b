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


"""The fabric database's IDL (OVS's Python IDL, ovs.db.idl.Idl, made
for the fabric's many clients): it counts the changes of each table, of
the desired state and of the Node rows beyond their reports, so that an
agent or a planner computes its slice or its plan again only when what
it depends on changed; it leaves a cluster member older than one it saw
(check_stale()); it times the nodes' reports by its own clock, from
when it received each (fresh_nodes(): the planner never compares a
writer's clock with its own); and it monitors the server's
_Server.Database without the "index" column that changes at every
commit.  FabricDb (fabric/db.py) connects through it."""

import inspect
import time
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

import ovs.db.custom_index
import ovs.db.idl
import ovs.jsonrpc
import ovs.vlog

vlog = ovs.vlog.Vlog("fabric_db")

# What the desired state is made of (FabricDb.state()).
DESIRED_TABLES = ("Fabric", "Switch", "Link", "Host", "DCM")
# Node columns that every report rewrites and that neither a slice nor a
# plan depends on.
REPORT_COLUMNS = frozenset(("agent", "generation", "updated",
                            "report_interval", "ring_occupancy",
                            "ring_high_watermark", "ring_drops", "error",
                            "failed_generation"))
# A node's report is fresh (the node is up) while it is younger than this
# many of its report intervals (Node:report_interval, its heartbeat).
UP_INTERVALS = 3
# Fabric columns that say which generation is applied and planned, by
# whom: a new generation changes them, and the desired state (state()),
# and so a slice, does not depend on them.
FABRIC_RECORD_COLUMNS = frozenset(("generation", "apply_id", "map_digest",
                                   "applied_by", "planner_epoch", "planner",
                                   "planned_generation", "plan_serial",
                                   "external_ids"))


def _server_monitor_v1() -> bool:
    """Whether this Python IDL monitors the server's _Server.Database
    with "monitor" (RFC 7047), whose updates of a row carry all its
    columns: the Python IDLs of OVS 3.1 (Debian 12's); later ones use
    "monitor_cond", whose updates carry what changed.  Read from the
    IDL's own code: no version number says which."""
    try:
        src = inspect.getsource(
            ovs.db.idl.Idl._Idl__send_server_monitor_request)
    except (AttributeError, OSError, TypeError):
        return False
    return "monitor_cond" not in src


SERVER_MONITOR_V1 = _server_monitor_v1()


def record(root: Any) -> Tuple[int, int, int]:
    """What FabricIdl.check_stale() compares of a member's Fabric row:
    its generation, planned generation and plan serial, each of which
    only grows along the cluster's log (so a member that holds an older
    prefix of the log has a smaller record).  The plan serial grows at
    every planner commit, a failover's too, which changes Assignment
    rows alone; a database of before schema 1.7.0 has none (0)."""
    if root is None:
        return (0, 0, 0)
    return (int(root.generation), int(root.planned_generation),
            int(getattr(root, "plan_serial", 0) or 0))


class FabricIdl(ovs.db.idl.Idl):
    """An IDL that counts the changes of each table, and separately the
    changes of Node rows beyond their reports: with dozens of agents
    reporting every few seconds, an agent or a planner that recomputed
    its slice or its plan whenever anything changed (change_seqno) would
    spend its CPU on other nodes' reports."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.table_changes: Dict[str, int] = {}
        self.node_changes = 0
        # Changes of the desired state (DESIRED_TABLES) but those of the
        # Fabric row's FABRIC_RECORD_COLUMNS alone: a new generation
        # whose map changes one DCM is not a new state for the thousands
        # of others (state(), an agent's slice).
        self.desired_changes = 0
        # Per row (uuid): how often it changed (what FabricDb's caches of
        # converted rows are keyed by).
        self.row_changes: Dict[Any, int] = {}
        # Per table in it: the rows (uuids) changed since its reader took
        # them (FabricDb.converted()).
        self.dirty: Dict[str, Set[Any]] = {"Assignment": set(),
                                           "DCM": set()}
        # The stale member check (check_stale()): the newest Fabric
        # (generation, planned_generation) seen in the cluster 'cid',
        # and the session (seqno) last checked.
        self.newest: Tuple[Any, Tuple[int, int, int]] = (None, (0, 0, 0))
        self.checked_seqno: Optional[int] = None
        # How often it left a member for being stale.
        self.stale_left = 0
        # Per Node row (its name): its report as this IDL last received
        # it: (its 'updated', when this IDL received it (time.monotonic()),
        # until when it is fresh).  The planner judges reports by its own
        # clock, never by the writers' (heard(), fresh_nodes()).
        self.heard_at: Dict[str, Tuple[int, float, float]] = {}
        # Why the server refused this IDL's lock request (its error), or
        # None.  OVS's Python IDL ignores an error reply to "lock" (it
        # logs it at debug level and goes on waiting for "locked"); a
        # server refuses locks for good to the clients of a remote with
        # an RBAC role (and of a read-only one), so a planner that
        # connects through one would wait for ever, saying nothing.
        self.lock_error: Optional[str] = None

    def _Idl__txn_process_reply(self, msg: Any) -> bool:
        """Takes an error reply to the lock request (see lock_error)
        before the base class's handler of transaction replies, which
        every reply it does not know reaches (name-mangled: the base
        class's private method); the others go to that handler."""
        if (msg.type == ovs.jsonrpc.Message.T_ERROR
                and self._lock_request_id is not None
                and msg.id == self._lock_request_id):
            self._lock_request_id = None
            err = msg.error
            if isinstance(err, dict):
                err = ": ".join(str(err[k]) for k in ("error", "details")
                                if k in err)
            self.lock_error = str(err)
            vlog.err("%s: the server refused lock %s: %s"
                     % (self.session_name(), self.lock_name,
                        self.lock_error))
            return True
        handled: bool = ovs.db.idl.Idl._Idl__txn_process_reply(self, msg)
        return handled

    def run(self) -> Any:
        ret = super().run()
        self.check_stale()
        return ret

    def check_stale(self) -> None:
        """The IDL's own check of a member it connects to (that its
        _Server index is not older than one it saw before) needs the
        index, which _Idl__send_server_monitor_request() does not
        monitor: the same check here, by the Fabric row, once the IDL has
        synced on a connection.  A member of the same cluster that holds
        an older record (record(): generation, planned generation, plan
        serial) than the IDL saw (one that is catching up
        after a restart, say) is left for another at once, before a
        slice is computed from it; "connected" alone does not say that a
        member has caught up."""
        s = self._session
        if (self.state != self.IDL_S_MONITORING or s.rpc is None
                or s.rpc.get_status()):
            return
        table = self.tables.get("Fabric")
        root = next(iter(table.rows.values()), None) if table else None
        gen = record(root)
        cid = next((tuple(str(u) for u in r.cid)
                    for r in self.server_tables["Database"].rows.values()
                    if r.name == self._db.name), None)
        seqno = s.get_seqno()
        if (seqno != self.checked_seqno and cid == self.newest[0]
                and gen < self.newest[1]):
            vlog.warn("%s: clustered database server has stale data "
                      "(generation %s, seen %s); trying another "
                      "server" % (self.session_name(),
                                  ".".join(map(str, gen)),
                                  ".".join(map(str, self.newest[1]))))
            self.stale_left += 1
            self.force_reconnect()
            return
        self.checked_seqno = seqno
        if cid != self.newest[0] or gen > self.newest[1]:
            self.newest = (cid, gen)

    def _Idl__send_server_monitor_request(self) -> None:
        """Replaces the IDL's own request to monitor _Server.Database
        (name-mangled: the base class's private method).  A clustered
        database's row changes with every commit (its "index"), and the
        IDL's own request, every column, sent every client an update at
        every commit of any other: at 32 agents, each write of one woke
        the 31 others (their IDL, their loop), most of the agents' CPU at
        rest and the core they share when a failure makes many write.
        With "monitor" (SERVER_MONITOR_V1) each update also carried the
        whole row, the database's schema too.  Here "index" is not
        monitored at all (ovsdb-server sends an update when any monitored
        column changes, even one selected without modifications), so the
        IDL's check of a stale member by its index is check_stale()'s by
        the Fabric row; "schema" is monitored apart, not on
        modifications (the IDL checks it is there: a member that has
        joined its cluster); "connected" and "leader" still arrive when
        they change.  A schema conversion
        reaches clients through the database's own monitor, which the
        server cancels.  Otherwise as the IDL's own request ("monitor"
        or "monitor_cond", whichever it uses)."""
        self.state = self.IDL_S_SERVER_MONITOR_REQUESTED
        table = self.server_tables[self._server_db_table]
        for column in table.columns.values():
            if not hasattr(column, "alert"):
                column.alert = True
        table.rows = ovs.db.custom_index.IndexedRows(table)
        table.need_table = False
        table.idl = self
        requests: List[Dict[str, Any]] = [
            {"columns": [c for c in table.columns
                         if c not in ("index", "schema")]}]
        if "schema" in table.columns:
            requests.append({"columns": ["schema"],
                             "select": {"initial": True, "insert": True,
                                        "delete": True, "modify": False}})
        msg = ovs.jsonrpc.Message.create_request(
            "monitor" if SERVER_MONITOR_V1 else "monitor_cond",
            [self._server_db.name, str(self.server_monitor_uuid),
             {table.name: requests}])
        self._server_monitor_request_id = msg.id
        self.send_request(msg)

    def heard(self, event: str, row: Any) -> None:
        """Node row 'row' arrived (notify()'s 'event'): a report, fresh
        from now for UP_INTERVALS of its report intervals, by this IDL's
        clock.  A row inserted again as it was (the IDL's rows after a
        reconnection) is not a new report: it stays as old as it was."""
        if event == ovs.db.idl.ROW_DELETE:
            self.heard_at.pop(row.name, None)
            return
        updated = int(row.updated)
        got = self.heard_at.get(row.name)
        if (event == ovs.db.idl.ROW_CREATE and got is not None
                and got[0] == updated):
            return
        now = time.monotonic()
        self.heard_at[row.name] = (
            updated, now, now + UP_INTERVALS * int(row.report_interval)
            / 1000.0)

    def _fresh(self, now: Optional[float]) -> Dict[str, float]:
        """Of the Node rows the IDL holds, those whose last report is
        fresh at 'now' (time.monotonic()), and until when.  (A row that a
        reconnection did not bring back went without a deletion.)"""
        now = time.monotonic() if now is None else now
        out = {}
        for r in self.tables["Node"].rows.values():
            got = self.heard_at.get(r.name)
            if got is not None and now <= got[2]:
                out[r.name] = got[2]
        return out

    def fresh_nodes(self, now: Optional[float] = None) -> FrozenSet[str]:
        """The nodes whose last report this IDL received within
        UP_INTERVALS of their report intervals ('now': time.monotonic())."""
        return frozenset(self._fresh(now))

    def next_silence(self, now: Optional[float] = None) -> Optional[float]:
        """When (time.monotonic()) the first report fresh now stops being
        fresh unless its node reports again; None if none is fresh."""
        return min(self._fresh(now).values(), default=None)

    def notify(self, event: str, row: Any, updates: Any = None) -> None:
        name = row._table.name
        if name == "Node":
            self.heard(event, row)
        self.table_changes[name] = self.table_changes.get(name, 0) + 1
        self.row_changes[row.uuid] = self.row_changes.get(row.uuid, 0) + 1
        if name in self.dirty:
            self.dirty[name].add(row.uuid)
        if name == "Node" and not (
                event == ovs.db.idl.ROW_UPDATE and updates is not None
                and set(updates._data) <= REPORT_COLUMNS):
            self.node_changes += 1
        if name in DESIRED_TABLES and not (
                name == "Fabric" and event == ovs.db.idl.ROW_UPDATE
                and updates is not None
                and set(updates._data) <= FABRIC_RECORD_COLUMNS):
            self.desired_changes += 1
