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

"""The switch's database through OVS's Python IDL: reading the daqrings
and committing a change in one transaction."""

import errno
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Set, Tuple
import ovs.db.idl
import ovs.dirs
import ovs.jsonrpc
import ovs.poller
import ovs.stream

from .model import (DaqctlError, Dcm, EXIT_BAD_INPUT, EXT_DCM, EXT_DL_DST,
                    EXT_EGRESS, EXT_MATCH, EXT_RATE, FourTuple,
                    MAX_BURST_DEFAULT, RING_SIZE_DEFAULT)
from .idlutil import commit_block, opt, run_until
from .mapfile import parse_tuple


def request_reply(rpc: Any, req: Any, deadline: float) -> Tuple[int, Any]:
    """Sends request REQ on RPC (an ovs.jsonrpc.Connection) and waits for
    its reply, or its error, until DEADLINE (time.monotonic()): OVS's
    transact_block() with a deadline, which the library's has not.
    (0, the reply) or (errno, None): ETIMEDOUT at the deadline.  The one
    such loop: the OVSDB requests here, the unixctl requests of
    metrics/collector.py's ask_vswitchd()."""
    error = rpc.send(req)
    while not error:
        rpc.run()
        error, msg = rpc.recv()
        if error == errno.EAGAIN:
            left = deadline - time.monotonic()
            if left <= 0:
                return errno.ETIMEDOUT, None
            poller = ovs.poller.Poller()
            rpc.wait(poller)
            rpc.recv_wait(poller)
            poller.timer_wait(int(left * 1000) + 1)
            poller.block()
            error = 0
        elif not error and msg.id == req.id and msg.type in (
                ovs.jsonrpc.Message.T_REPLY, ovs.jsonrpc.Message.T_ERROR):
            return 0, msg
    return error, None


# ===================================================================== OVSDB
COLUMNS = {
    "Open_vSwitch": ["bridges", "next_cfg", "cur_cfg", "iface_types"],
    "Bridge": ["name", "ports", "datapath_type"],
    "Port": ["name", "interfaces", "external_ids"],
    "Interface": ["name", "type", "options", "external_ids", "ofport",
                  "ofport_request", "error", "status", "statistics",
                  "link_state"],
}

# Columns that ovs-vswitchd rewrites by itself while it runs, and the
# configuration counters that every write of a client increments (its
# other changes count): a change of them alone is no change of the
# switch's configuration (config_seqno).
STATUS_COLUMNS = frozenset(("statistics", "link_state", "bfd_status",
                            "next_cfg", "cur_cfg"))

# After "cannot connect" when nothing listens at the remote: the default
# (unix:$OVS_RUNDIR/db.sock, else OVS's run directory) is often not where
# the switch is, and Debian's stock switch is not ours.
CONNECT_HINT = (" (is the switch's ovsdb-server running? Name its database "
                "with --db or OVS_RUNDIR; 'make sandbox' starts a switch of "
                "the source tree)")


@dataclass
class Ring:
    """A daqring port found on the bridge."""
    port: Any
    iface: Any
    dcm: Optional[Dcm]            # None: not managed by ovs-daqctl


class Ovsdb:
    """A connection to one switch's database through the OVS Python IDL."""

    def __init__(self, remote: str, timeout: float,
                 columns: Optional[Dict[str, List[str]]] = None) -> None:
        """columns: more columns to monitor than COLUMNS."""
        self.remote = remote
        self.timeout = timeout
        self.attempts = 0
        helper = ovs.db.idl.SchemaHelper(schema_json=self._schema())
        for table, cols in COLUMNS.items():
            helper.register_columns(table, cols + (columns or {}).get(
                table, []))
        self.idl = ovs.db.idl.Idl(remote, helper)
        # Counts the changes of the configuration (rows added or deleted,
        # columns other than STATUS_COLUMNS changed) the IDL received:
        # what the fabric agent's checks between full ones compare
        # (Reconciler.holds()).  Interface statistics change every few
        # seconds; reading every ring's row again each time costs the
        # agents of an emulated fabric their shared CPU.
        self.config_seqno = 0
        self.idl.notify = self._notify
        self._ports: Dict[str, Any] = {}
        self._ports_key: Any = None
        self._rings: List[Ring] = []
        self._rings_key: Any = None
        self._run_until(lambda: (self.idl.state
                                 == self.idl.IDL_S_MONITORING
                                 and self.idl.change_seqno > 0),
                        "connect to %s" % remote)
        if not self.idl.tables["Open_vSwitch"].rows:
            raise DaqctlError("%s: the database has no Open_vSwitch record "
                              "(run 'ovs-vsctl init')" % remote)

    def _notify(self, event: str, row: Any, updates: Any = None) -> None:
        """The IDL's hook for every row change it applies."""
        # 'updates' holds the old values of the changed columns only
        # (Row._data, in the IDLs of OVS 3.1 and 3.5).
        if (event != ovs.db.idl.ROW_UPDATE or updates is None
                or not set(updates._data) <= STATUS_COLUMNS):
            self.config_seqno += 1

    def _request(self, method: str, params: List[Any], what: str) -> Any:
        """One JSON-RPC request on a connection of its own (not the IDL's):
        its answer is the database as it is now, whatever the IDL has
        received so far."""
        # --timeout bounds the whole request: a server that accepts the
        # connection and never answers must not hang us (the library's
        # transact_block() waits for ever).
        deadline = time.monotonic() + self.timeout
        error, stream = ovs.stream.Stream.open_block(
            ovs.stream.Stream.open(self.remote), int(self.timeout * 1000))
        if error:
            raise DaqctlError("%s: cannot connect: %s%s"
                              % (self.remote, os.strerror(error),
                                 CONNECT_HINT if error in (
                                     errno.ENOENT, errno.ECONNREFUSED)
                                 else ""))
        rpc = ovs.jsonrpc.Connection(stream)
        try:
            req = ovs.jsonrpc.Message.create_request(method, params)
            error, reply = self._transact(rpc, req, deadline, what)
        finally:
            rpc.close()
        if error:
            raise DaqctlError("%s: cannot %s: %s"
                              % (self.remote, what, os.strerror(error)))
        if reply.error:
            raise DaqctlError("%s: cannot %s: %s"
                              % (self.remote, what, reply.error))
        return reply.result

    def _transact(self, rpc: Any, req: Any, deadline: float,
                  what: str) -> Any:
        """request_reply(), a timeout said as such: (error, reply)."""
        error, reply = request_reply(rpc, req, deadline)
        if error == errno.ETIMEDOUT:
            raise DaqctlError("%s: timed out (%g s) waiting to %s"
                              % (self.remote, self.timeout, what))
        return error, reply

    def _schema(self) -> Any:
        """The server's own schema, so that any OVS version works."""
        return self._request("get_schema", ["Open_vSwitch"],
                             "read the schema")

    def next_cfg(self) -> int:
        """next_cfg as it is in the database now.  Every ovs-daqctl (and
        ovs-vsctl) transaction increments it."""
        result = self._request("transact", [
            "Open_vSwitch", {"op": "select", "table": "Open_vSwitch",
                             "where": [], "columns": ["next_cfg"]}],
            "read next_cfg")
        try:
            return int(result[0]["rows"][0]["next_cfg"])
        except (LookupError, TypeError, ValueError):
            raise DaqctlError("%s: cannot read next_cfg: %s"
                              % (self.remote, result))

    def catch_up(self) -> int:
        """Waits until the IDL's replica has every transaction committed
        so far (at least), so that what is read next is not older than
        what another client has already done.  Returns that next_cfg."""
        cfg = self.next_cfg()
        self._run_until(lambda: self.root().next_cfg >= cfg,
                        "receive the database's changes")
        return cfg

    def _run_until(self, done: Any, what: str,
                   timeout: Optional[float] = None,
                   tick: Optional[Callable[[], None]] = None) -> None:
        """Runs the IDL until done(); tick(), if given, at least every
        100 ms meanwhile."""
        run_until(self.idl, done, self.remote, what,
                  timeout if timeout is not None else self.timeout, tick)

    def close(self) -> None:
        self.idl.close()

    # --------------------------------------------------------------- read
    def root(self) -> Any:
        return next(iter(self.idl.tables["Open_vSwitch"].rows.values()))

    def bridge(self, name: str) -> Any:
        for br in self.idl.tables["Bridge"].rows.values():
            if br.name == name:
                return br
        raise DaqctlError("%s: no bridge %s" % (self.remote, name),
                          EXIT_BAD_INPUT)

    def iface_types(self) -> Set[str]:
        return set(self.root().iface_types)

    def all_iface_names(self) -> Set[str]:
        return {i.name for i in self.idl.tables["Interface"].rows.values()}

    def ports(self, br: Any) -> Dict[str, Any]:
        """Bridge 'br''s ports by name (kept while the configuration is
        the same, config_seqno; not inside a transaction, whose changes
        are not the database's yet)."""
        if self.idl.txn is not None:
            return {p.name: p for p in br.ports}
        key = (br.uuid, self.config_seqno)
        if self._ports_key != key:
            self._ports = {p.name: p for p in br.ports}
            self._ports_key = key
        return dict(self._ports)

    def rings(self, br: Any) -> List[Ring]:
        """The daqrings of bridge 'br', managed or not.  Read again only
        after the configuration changed (config_seqno) or once a
        transaction has changed a row (its changes are not the
        database's yet): a reconciliation reads them four times (the plan,
        and the plan again inside the transaction), and each read converts
        every ring's columns, a millisecond a ring in the Python IDL."""
        txn = self.idl.txn
        # A transaction that has not changed a row yet (Transaction's
        # _txn_rows, in the IDLs of OVS 3.1 and 3.5) sees the replica.
        pristine = txn is None or not getattr(txn, "_txn_rows", True)
        key = (br.uuid, self.config_seqno)
        if pristine and self._rings_key == key:
            return list(self._rings)
        out = self._read_rings(br)
        if pristine:
            self._rings, self._rings_key = out, key
        return list(out)

    @staticmethod
    def _read_rings(br: Any) -> List[Ring]:
        out = []
        for p in br.ports:
            ifaces = list(p.interfaces)
            if len(ifaces) != 1:
                continue
            iface = ifaces[0]
            managed = EXT_DCM in p.external_ids
            if iface.type != "daqring" and not managed:
                continue
            out.append(Ring(p, iface, dcm_from_row(p, iface)
                            if managed else None))
        return sorted(out, key=lambda r: str(r.port.name))

    # -------------------------------------------------------------- write
    def transact(self, build: Callable[[Any], None], comment: str) -> int:
        """Runs build(txn) in one transaction that also increments
        next_cfg.  build() decides from the IDL's replica and verify()s
        what its decision rests on: if another client changed that
        meanwhile, the server refuses the transaction (TRY_AGAIN) and it is
        built again from the new contents, as often as needed within the
        timeout (the loop that ovs/db/idl.py's Transaction documents).
        Returns the new next_cfg.  On failure nothing was changed: OVSDB
        transactions are atomic."""
        deadline = time.monotonic() + self.timeout
        self.attempts = 0
        while True:
            self.attempts += 1
            # Before building: a change that arrives from now on (even one
            # that idl.run() receives while committing) ends the wait
            # after a TRY_AGAIN.
            seqno = self.idl.change_seqno
            txn = ovs.db.idl.Transaction(self.idl)
            txn.add_comment(comment)
            try:
                build(txn)
                self.root().increment("next_cfg")
            except BaseException:
                txn.abort()
                raise
            status = commit_block(self.idl, txn, deadline, self.remote)
            if status == ovs.db.idl.Transaction.SUCCESS:
                return int(txn.get_increment_new_value())
            if status == ovs.db.idl.Transaction.UNCHANGED:
                # Another client made the same change meanwhile.
                return int(self.root().next_cfg)
            if status != ovs.db.idl.Transaction.TRY_AGAIN:
                raise DaqctlError("%s: transaction failed (%s); nothing "
                                  "changed" % (self.remote, txn.get_error()))
            left = deadline - time.monotonic()
            if left <= 0:
                raise DaqctlError("%s: the database kept changing for %g s "
                                  "(%d attempts); nothing changed"
                                  % (self.remote, self.timeout,
                                     self.attempts))
            # Usually the change that made the transaction fail has
            # already arrived: then there is nothing to wait for.
            self._run_until(lambda: self.idl.change_seqno != seqno,
                            "receive the database's changes", timeout=left)

    def wait_applied(self, cfg: int,
                     progress: Optional[Callable[[float], None]] = None
                     ) -> None:
        """Waits until ovs-vswitchd has applied next_cfg 'cfg';
        progress(seconds waited so far), if given, meanwhile."""
        t0 = time.monotonic()

        def tick() -> None:
            if progress is not None:
                progress(time.monotonic() - t0)
        try:
            self._run_until(lambda: self.root().cur_cfg >= cfg,
                            "ovs-vswitchd to apply the change", tick=tick)
        except DaqctlError as e:
            raise DaqctlError("%s.  The transaction is committed; "
                              "ovs-vswitchd (is it running?) has not "
                              "applied it yet, so the flows were not "
                              "changed: run the command again later, or "
                              "raise --timeout" % e)


def dcm_from_row(port: Any, iface: Any) -> Dcm:
    """A managed DCM as recorded on the switch (the inverse of
    Dcm.external_ids() and Dcm.options())."""
    ext = port.external_ids
    opts = iface.options
    ip: Optional[str] = None
    tuples: List[FourTuple] = []
    match = ext.get(EXT_MATCH, "")
    if match.startswith("ip:"):
        ip = match[3:]
    else:
        for t in match.split():
            try:
                tuples.append(parse_tuple(t))
            except ValueError:
                pass

    def num(key: str, default: int) -> int:
        try:
            return int(opts.get(key, default))
        except ValueError:
            return default

    numa = opts.get("numa-id")
    overhead = opts.get("frame-overhead")
    return Dcm(name=ext[EXT_DCM], ring=port.name,
               egress=ext.get(EXT_EGRESS, ""), ip=ip, tuples=tuple(tuples),
               ring_size=num("ring-size", RING_SIZE_DEFAULT),
               max_burst=num("max-burst", MAX_BURST_DEFAULT),
               poll_interval=num("poll-interval", 0),
               max_rate=num("max-rate", 0),
               max_burst_bytes=num("max-burst-bytes", 0),
               egress_max_rate=num("egress-max-rate", 0),
               egress_max_burst_bytes=num("egress-max-burst-bytes", 0),
               flow_buckets=num("flow-buckets", 0),
               frame_overhead=(int(overhead) if overhead and overhead.isdigit()
                               else None),
               numa_id=int(numa) if numa and numa.isdigit() else None,
               ofport=opt(iface.ofport_request),
               rate=ext.get(EXT_RATE), dl_dst=ext.get(EXT_DL_DST),
               steering="bound" if opts.get("egress") else "two-rule",
               where="switch")
