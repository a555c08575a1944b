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

"""Tests of the fabric database's trust boundary (fabric/rbac.py and the
member's helper, rhel/usr_share_openvswitch_scripts_ovs-daqfabric-db):
a member started as its unit starts it (init, start, upgrade, rbac) from
a database of the previous schema, certificates from ovs-pki whose CN
is the node's name, and what the server lets each client write."""

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Union

import ovs.jsonrpc
import ovs.poller
import ovs.stream
import pytest

from ovs_daqring.fabric import schema_path
from ovs_daqring.fabric import rbac
from ovs_daqring.fabric.db import FabricDb, Txn
from ovs_daqring.fabric.plannerd import PLANNER_LOCK, Planner

from fabric_helpers import ROOT, Pki, _tool, free_ports, wait_for

pytestmark = pytest.mark.every_base

HELPER = ROOT / "rhel" / "usr_share_openvswitch_scripts_ovs-daqfabric-db"


def old_schema(path: str) -> None:
    """The schema before RBAC (1.6.0): the installed one without the
    tables of rbac.TABLES."""
    s = json.loads(Path(schema_path()).read_text())
    for t in rbac.TABLES:
        del s["tables"][t]
    s["version"] = "1.6.0"
    Path(path).write_text(json.dumps(s))


class Member:
    """A one-member fabric database, run by the helper (init with the
    previous schema, start, upgrade, rbac), with a remote without a
    role (the operator's) and one with the agents' role."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="dqr.", dir="/tmp")
        self.pki = Pki(self.dir)
        for name in ("leaf1", "intruder"):
            self.cert(name)
        self.client = _tool("ovsdb-client")
        raft, self.port, self.agent_port = free_ports(3)
        self.agent_target = "pssl:%d" % self.agent_port
        key, cert = self.pki.files("fabric-db")
        self.ctl = os.path.join(self.dir, "ovs-daqfabric-db.ctl")
        self.sock = "unix:" + os.path.join(self.dir, "daqfabric.sock")
        self.config = os.path.join(self.dir, "sysconfig")
        Path(self.config).write_text(
            "DAQFABRIC_DB_LOCAL=tcp:127.0.0.1:%d\n" % raft
            + "DAQFABRIC_DB_JOIN=\n"
            + "DAQFABRIC_DB_REMOTE=pssl:%d:127.0.0.1\n" % self.port
            + "DAQFABRIC_DB_AGENT_REMOTE=%s\n" % self.agent_target
            + "DAQFABRIC_DB_PRIVATE_KEY=%s\n" % key
            + "DAQFABRIC_DB_CERTIFICATE=%s\n" % cert
            + "DAQFABRIC_DB_CA_CERT=%s\n" % self.pki.ca
            + "DAQFABRIC_DB_FILE=%s\n" % os.path.join(self.dir, "f.db")
            + "DAQFABRIC_DB_SCHEMA=%s\n" % schema_path()
            + "DAQFABRIC_DB_OPTIONS=-vconsole:off\n")
        self.old = os.path.join(self.dir, "old.ovsschema")
        old_schema(self.old)
        self.started = False
        try:
            self.helper("init", DAQFABRIC_DB_SCHEMA=self.old)
            self.started = True
            self.helper("start")
            wait_for(lambda: os.path.exists(self.ctl), "the member")
            # Before the upgrade: no RBAC tables, said; no agent remote.
            p = self.helper("rbac", check=False)
            assert p.returncode == 1, p
            assert "convert it first" in p.stderr, p.stderr
            assert not self.listening(self.agent_port)
            out = self.helper("upgrade")
            assert "converted the fabric database to 1.7.0" in out, out
            assert not self.listening(self.agent_port)
            out = self.helper("rbac")
            assert "(written)" in out, out
            wait_for(lambda: self.listening(self.agent_port),
                     "the agents' remote")
        except BaseException:
            self.stop()
            raise

    def cert(self, name: str, unique: bool = True) -> str:
        """A certificate of CN 'name', as an operator makes a node's
        (ovs-pki -u: without -u, the CN is "NAME id:UUID"), in a
        directory of its own: the directory."""
        d = os.path.join(self.dir, name + ("" if unique else ".not-unique"))
        os.makedirs(d, exist_ok=True)
        p = subprocess.run([self.pki.tool, "--dir=" + self.pki.dir]
                           + (["-u"] if unique else [])
                           + ["req+sign", name, "switch"], cwd=d,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        if unique:
            for f in ("privkey", "cert"):
                os.rename(os.path.join(d, "%s-%s.pem" % (name, f)),
                          os.path.join(self.dir, "%s-%s.pem" % (name, f)))
        return d

    def env(self, **more: str) -> Dict[str, str]:
        env = dict(os.environ, DAQFABRIC_DB_SYSCONFIG=self.config,
                   OVS_RUNDIR=self.dir, OVS_LOGDIR=self.dir,
                   OVSDB_TOOL=_tool("ovsdb-tool"),
                   OVSDB_SERVER=_tool("ovsdb-server"),
                   OVSDB_CLIENT=self.client, OVS_APPCTL=_tool("ovs-appctl"),
                   PYTHON3=sys.executable,
                   PYTHONPATH=os.pathsep.join(
                       [str(ROOT / "python")]
                       + [p for p in sys.path if p]))
        env.update(more)
        return env

    def helper(self, *args: str, check: bool = True, **env: str) -> Any:
        """The helper's output, or with check=False its process."""
        p = subprocess.run([str(HELPER)] + list(args), env=self.env(**env),
                           capture_output=True, text=True, timeout=180)
        if not check:
            return p
        assert p.returncode == 0, (args, p.stdout, p.stderr)
        return p.stdout

    @staticmethod
    def listening(port: int) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    def remote(self, agent: bool) -> str:
        return "ssl:127.0.0.1:%d" % (self.agent_port if agent else self.port)

    def transact(self, who: Union[str, List[str]], agent: bool,
                 *ops: Dict[str, Any]) -> List[Any]:
        """What the server answers 'who' (the CN of its certificate, or
        the SSL options) for 'ops', on the agents' remote or the
        other."""
        ssl = self.pki.options(who) if isinstance(who, str) else who
        p = subprocess.run(
            [self.client, "--timeout=30"] + ssl
            + ["transact", self.remote(agent),
               json.dumps(["daqfabric"] + list(ops))],
            capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    def rows(self, table: str) -> List[Dict[str, Any]]:
        r = self.transact("admin", False, {"op": "select", "table": table,
                                           "where": []})
        return r[0]["rows"]

    def stop(self) -> None:
        if self.started:
            subprocess.run([_tool("ovs-appctl"), "-t", self.ctl, "exit"],
                           capture_output=True, timeout=30)
            pidfile = os.path.join(self.dir, "ovs-daqfabric-db.pid")

            def gone() -> bool:
                try:
                    pid = int(Path(pidfile).read_text())
                    os.kill(pid, 0)
                except (OSError, ValueError):
                    return True
                return False
            wait_for(gone, "the member to exit", 30)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def member() -> Iterator[Member]:
    m = Member()
    try:
        yield m
    finally:
        m.stop()


def dcm(name: str, ring: str) -> Dict[str, Any]:
    """A DCM row that the schema's constraints let through."""
    return {"name": name, "host": "hlt1", "ring": ring, "ring_size": 1024,
            "max_burst": 32, "steering": "bound"}


def where(col: str, value: Any) -> List[Any]:
    return [[col, "==", value]]


def refused(result: List[Any]) -> bool:
    return any(isinstance(r, dict) and r.get("error") == "permission error"
               for r in result)


def committed(result: List[Any]) -> bool:
    return not any(isinstance(r, dict) and "error" in r for r in result)


@pytest.fixture(scope="module")
def rows(member: Member) -> Member:
    """Rows to attack, written by the operator (no role): two nodes'
    Node rows, their switches, a DCM and its assignment."""
    r = member.transact("admin", False, {"op": "select", "table": "Node",
                                         "where": where("name", "leaf1")})
    if r[0]["rows"]:
        return member
    r = member.transact(
        "admin", False,
        *[{"op": "insert", "table": "Switch",
           "row": {"name": n, "role": "leaf", "bridge": "br0"}}
          for n in ("leaf1", "leaf2", "spine1")],
        *[{"op": "insert", "table": "Node",
           "row": {"name": n, "report_interval": 1000,
                   "links": ["map", [["up1", "up"]]]}}
          for n in ("leaf1", "leaf2")],
        {"op": "insert", "table": "DCM",
         "row": dcm("dcm1", "r1")},
        {"op": "insert", "table": "Assignment",
         "row": {"dcm": "dcm1", "plane": 0, "spine": "spine1"}})
    assert committed(r), r
    return member


def test_agent_writes_its_own_node_row(rows: Member) -> None:
    """Through the agents' remote, leaf1's certificate writes the Node
    row named leaf1, every column an agent reports, with the IDL as the
    agents do: deletes it, inserts it, updates it."""
    m = rows
    key, cert = m.pki.files("leaf1")
    ovs.stream.Stream.ssl_set_private_key_file(key)
    ovs.stream.Stream.ssl_set_certificate_file(cert)
    ovs.stream.Stream.ssl_set_ca_cert_file(m.pki.ca)
    db = FabricDb(m.remote(True), 30)
    try:
        cols = {"agent": "ovs-daqfabric-agent 1@h", "generation": 3,
                "updated": 12345, "report_interval": 1000,
                "links": {"up1": "down", "up2": "up"},
                "bfd": {"up1": "down"}, "ring_occupancy": {"r1": 1},
                "ring_high_watermark": {"r1": 2}, "ring_drops": {"r1": 0},
                "error": ["bad row"], "failed_generation": [2]}
        assert sorted(cols) == sorted(rbac.AGENT_NODE_COLUMNS)

        def delete(txn: Any) -> None:
            for row in db.rows("Node"):
                if row.name == "leaf1":
                    row.delete()
        status, _ = db.commit(delete, "test: leaf1 goes")
        assert status == Txn.SUCCESS, status

        def insert(txn: Any) -> None:
            row = txn.insert(db.idl.tables["Node"])
            row.name = "leaf1"
            for c, v in cols.items():
                setattr(row, c, v)
        status, _ = db.commit(insert, "test: leaf1 reports")
        assert status == Txn.SUCCESS, status

        def update(txn: Any) -> None:
            row = next(r for r in db.rows("Node") if r.name == "leaf1")
            row.updated = 23456
            row.links = {"up1": "up", "up2": "up"}
            row.error = []
        status, _ = db.commit(update, "test: leaf1 reports again")
        assert status == Txn.SUCCESS, status
    finally:
        db.close()
    (leaf1,) = [r for r in m.rows("Node") if r["name"] == "leaf1"]
    assert leaf1["updated"] == 23456
    assert leaf1["links"] == ["map", [["up1", "up"], ["up2", "up"]]]


def agent_report(m: Member, node: str) -> Any:
    """An agent's report (NodeBase.write_report(), what the switch and
    host agents write) of 'node', with leaf1's certificate, through the
    agents' remote: the agent, once its report is answered."""
    import argparse
    import time
    from ovs_daqring.fabric.node import NodeBase
    key, cert = m.pki.files("leaf1")
    ovs.stream.Stream.ssl_set_private_key_file(key)
    ovs.stream.Stream.ssl_set_certificate_file(cert)
    ovs.stream.Stream.ssl_set_ca_cert_file(m.pki.ca)
    agent = NodeBase(argparse.Namespace(db=m.remote(True), timeout=30,
                                        interval=0.1), node)
    try:
        agent.fabric.wait_connected()
        agent.fabric.run_until(agent.fabric_up, "the agent's connection")
        cols = agent.node_columns(7, None, None)
        cols.update({"bfd": {"up1": "up"}, "ring_occupancy": {"r1": 3},
                     "ring_high_watermark": {"r1": 4},
                     "ring_drops": {"r1": 0}})
        agent.write_report(cols, {"up1": "up", "up2": "down"},
                           time.monotonic())

        def answered() -> bool:
            agent.fabric.run()
            return not agent.report_busy()
        wait_for(answered, "the report's answer", 30)
        return agent
    finally:
        agent.fabric.close()


def test_agent_reports_through_the_role(rows: Member) -> None:
    """The agents' own code (NodeBase.write_report()) reports through
    the agents' remote: its own row is written; another node's is
    refused, and the agent says why once."""
    m = rows
    agent = agent_report(m, "leaf1")
    assert agent.reports == 1 and agent.report_refused is None
    (leaf1,) = [r for r in m.rows("Node") if r["name"] == "leaf1"]
    assert leaf1["generation"] == 7
    assert leaf1["links"] == ["map", [["up1", "up"], ["up2", "down"]]]
    assert leaf1["ring_occupancy"] == ["map", [["r1", 3]]]
    before = m.rows("Node")
    agent = agent_report(m, "leaf2")
    assert agent.reports == 0
    assert "permission error" in (agent.report_refused or "")
    assert m.rows("Node") == before


ATTACKS = {
    # Another node's row: its links (to drain a spine), its heartbeat.
    "update another node": {"op": "update", "table": "Node",
                            "where": where("name", "leaf2"),
                            "row": {"links": ["map", [["up1", "down"]]]}},
    "mutate another node": {"op": "mutate", "table": "Node",
                            "where": where("name", "leaf2"),
                            "mutations": [["updated", "+=", 1]]},
    "delete another node": {"op": "delete", "table": "Node",
                            "where": where("name", "leaf2")},
    "insert another node": {"op": "insert", "table": "Node",
                            "row": {"name": "spine1",
                                    "report_interval": 1000}},
    # Its own row under another name.
    "rename its own row": {"op": "update", "table": "Node",
                           "where": where("name", "leaf1"),
                           "row": {"name": "leaf2"}},
    "insert a DCM": {"op": "insert", "table": "DCM",
                     "row": dcm("dcm2", "r2")},
    "delete a DCM": {"op": "delete", "table": "DCM",
                     "where": where("name", "dcm1")},
    "update an assignment": {"op": "update", "table": "Assignment",
                             "where": where("dcm", "dcm1"),
                             "row": {"plane": 1}},
    "insert an assignment": {"op": "insert", "table": "Assignment",
                             "row": {"dcm": "dcm2"}},
    "delete an assignment": {"op": "delete", "table": "Assignment",
                             "where": where("dcm", "dcm1")},
    "update a switch": {"op": "update", "table": "Switch",
                        "where": where("name", "leaf1"),
                        "row": {"bridge": "evil"}},
    "insert the Fabric row": {"op": "insert", "table": "Fabric",
                              "row": {"generation": 99}},
    "insert a link": {"op": "insert", "table": "Link",
                      "row": {"name": "x"}},
    "delete the roles": {"op": "delete", "table": "RBAC_Role",
                         "where": []},
    "insert a remote": {"op": "insert", "table": "Connection",
                        "row": {"target": "ptcp:1"}},
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_agent_is_refused_the_rest(rows: Member, attack: str) -> None:
    """leaf1's certificate, on the agents' remote, writes nothing but
    its own Node row: the server refuses the rest ("permission
    error"), and nothing changes."""
    m = rows
    before = {t: m.rows(t) for t in ("Node", "DCM", "Assignment", "Switch",
                                     "Fabric", "Link", "RBAC_Role")}
    r = m.transact("leaf1", True, ATTACKS[attack])
    assert refused(r), r
    # A certificate named after another node: the same.
    r = m.transact("intruder", True, ATTACKS[attack])
    assert refused(r), r
    after = {t: m.rows(t) for t in before}
    assert after == before


def test_certificate_must_name_the_node(rows: Member) -> None:
    """A certificate made without ovs-pki's -u has the CN "leaf1
    id:UUID": not leaf1, so refused leaf1's row too."""
    m = rows
    d = m.cert("leaf1", unique=False)
    ssl = ["--private-key=" + os.path.join(d, "leaf1-privkey.pem"),
           "--certificate=" + os.path.join(d, "leaf1-cert.pem"),
           "--ca-cert=" + m.pki.ca]
    op = {"op": "update", "table": "Node", "where": where("name", "leaf1"),
          "row": {"updated": 1}}
    r = m.transact(ssl, True, op)
    assert refused(r), r
    assert "id:" in r[0]["details"], r
    assert committed(m.transact("leaf1", True, op))


def test_agent_cannot_convert(member: Member) -> None:
    """Nor can it replace the schema (one without the RBAC tables would
    take the role away): ovsdb-server lets only a remote without a role
    convert."""
    m = member
    p = subprocess.run([m.client, "--timeout=30"] + m.pki.options("leaf1")
                       + ["convert", m.remote(True), m.old],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0, p
    assert "prohibit" in p.stderr, p.stderr
    p = subprocess.run([m.client, "--timeout=30", "get-schema-version",
                        m.sock, "daqfabric"], capture_output=True,
                       text=True, timeout=60)
    assert p.stdout.strip() == "1.7.0", p


def test_roleless_remote_writes_anything(rows: Member) -> None:
    """The operator's and the planner's remote has no role: the same
    certificate there writes what the agents' remote refuses (what an
    agent could do everywhere before the role)."""
    m = rows
    r = m.transact("admin", False,
                   {"op": "update", "table": "Assignment",
                    "where": where("dcm", "dcm1"), "row": {"plane": 1}},
                   {"op": "update", "table": "Node",
                    "where": where("name", "leaf2"),
                    "row": {"links": ["map", [["up1", "up"]]]}},
                   {"op": "insert", "table": "DCM",
                    "row": dcm("dcm3", "r3")})
    assert committed(r), r
    r = m.transact("admin", False, {"op": "delete", "table": "DCM",
                                    "where": where("name", "dcm3")},
                   {"op": "update", "table": "Assignment",
                    "where": where("dcm", "dcm1"), "row": {"plane": 0}})
    assert committed(r), r


def test_rbac_rows_written_once(member: Member) -> None:
    """The helper's "rbac" at every start writes the rows only when they
    differ: again, nothing; after a change, the rows as they should
    be."""
    m = member
    before = {t: m.rows(t) for t in rbac.TABLES}
    assert "(unchanged)" in m.helper("rbac")
    assert {t: m.rows(t) for t in rbac.TABLES} == before
    (perm,) = before["RBAC_Permission"]
    r = m.transact("admin", False, {
        "op": "update", "table": "RBAC_Permission",
        "where": [["_uuid", "==", perm["_uuid"]]],
        "row": {"update": ["set", ["name", "links"]]}})
    assert committed(r), r
    assert rbac.ensure(m.sock, [m.agent_target], 30, m.client)
    assert rbac.current({t: m.rows(t) for t in rbac.TABLES}) \
        == rbac.current(before)


class LockClient:
    """A JSON-RPC connection to the member with the certificate of
    'who', on the agents' remote or the other, that asks for locks."""

    def __init__(self, m: Member, who: str, agent: bool) -> None:
        key, cert = m.pki.files(who)
        ovs.stream.Stream.ssl_set_private_key_file(key)
        ovs.stream.Stream.ssl_set_certificate_file(cert)
        ovs.stream.Stream.ssl_set_ca_cert_file(m.pki.ca)
        error, stream = ovs.stream.Stream.open_block(
            ovs.stream.Stream.open(m.remote(agent)), 30000)
        assert not error, os.strerror(error)
        self.rpc = ovs.jsonrpc.Connection(stream)
        self.notifications: List[Any] = []

    def request(self, method: str) -> ovs.jsonrpc.Message:
        """The server's answer (a reply or an error) to 'method'
        ("lock", "steal" or "unlock") of the planner's lock."""
        req = ovs.jsonrpc.Message.create_request(method, [PLANNER_LOCK])
        error = self.rpc.send(req)
        assert not error, os.strerror(error)
        deadline = time.monotonic() + 30
        while True:
            self.rpc.run()
            error, msg = self.rpc.recv()
            if error == errno.EAGAIN:
                left = deadline - time.monotonic()
                assert left > 0, "no answer to %s" % method
                poller = ovs.poller.Poller()
                self.rpc.wait(poller)
                self.rpc.recv_wait(poller)
                poller.timer_wait(int(left * 1000) + 1)
                poller.block()
            elif error:
                raise AssertionError("%s: %s" % (method, os.strerror(error)))
            elif msg.type == ovs.jsonrpc.Message.T_NOTIFY:
                self.notifications.append((msg.method, msg.params))
            elif msg.id == req.id:
                return msg

    def close(self) -> None:
        self.rpc.close()


def lock_refused(msg: ovs.jsonrpc.Message) -> bool:
    """Whether 'msg' is the server's refusal of a lock operation to a
    client of a remote with a role."""
    e = msg.error
    return (msg.type == ovs.jsonrpc.Message.T_ERROR and isinstance(e, dict)
            and e.get("error") == "permission error"
            and "lock operations are not allowed"
            in str(e.get("details")))


def test_agent_cannot_take_the_planners_lock(member: Member) -> None:
    """RBAC covers what transactions write, not locks: without more, a
    client of the agents' remote could "steal" PLANNER_LOCK from the
    planner and stop the fabric's planning.  The server (patch 0025)
    refuses "lock", "steal" and "unlock" to the clients of a remote with
    a role; the role-less remote's clients lock as before."""
    m = member
    planner = LockClient(m, "admin", False)
    clients = [planner]
    try:
        r = planner.request("lock")
        assert r.type == ovs.jsonrpc.Message.T_REPLY, r
        assert r.result == {"locked": True}, r
        for who in ("leaf1", "intruder"):
            agent = LockClient(m, who, True)
            clients.append(agent)
            for method in ("steal", "lock", "unlock"):
                r = agent.request(method)
                assert lock_refused(r), (who, method, str(r))
        # The planner kept its lock: another role-less client waits.
        other = LockClient(m, "admin", False)
        clients.append(other)
        r = other.request("lock")
        assert r.result == {"locked": False}, r
        # And a role-less client may still steal it.
        thief = LockClient(m, "admin", False)
        clients.append(thief)
        r = thief.request("steal")
        assert r.result == {"locked": True}, r
        # The server told the planner before it answered the steal, so
        # before it answers the planner's next request.
        assert planner.request("unlock").result == {}
        assert planner.notifications == [("stolen", [PLANNER_LOCK])]
    finally:
        for c in clients:
            c.close()


def test_planner_on_the_agents_remote_says_its_lock_is_refused(
        member: Member) -> None:
    """A planner given the agents' remote (a node's certificate on a
    remote with a role) never gets its lock: it says so, rather than
    waiting for the lock for ever (OVS's Python IDL drops the server's
    error reply to "lock")."""
    m = member
    # The node's certificate, as an agent run with --planner has.
    LockClient(m, "leaf1", True).close()
    p = Planner(m.remote(True), "leaf1", 30, wait=False)
    try:
        what: List[str] = []
        wait_for(lambda: what.append(p.take_over())
                 or "refused the planner's lock" in what[-1],
                 "the planner to say its lock is refused")
        assert "permission error" in what[-1], what[-1]
        assert "without an RBAC role" in what[-1], what[-1]
        assert p.epoch is None and not p.has_lock()
    finally:
        p.close()
    # Through the role-less remote, the same planner takes over.
    LockClient(m, "admin", False).close()
    p = Planner(m.remote(False), "admin", 30, wait=False)
    try:
        what = []
        wait_for(lambda: what.append(p.take_over())
                 or what[-1].startswith("took over")
                 or "no fabric yet" in what[-1], "the planner's lock")
        assert p.db.idl.lock_error is None
    finally:
        p.close()


@pytest.mark.parametrize("value,message", [
    ("pssl:16646:10.0.0.1", "expected pssl:PORT"),
    ("ptcp:16646", "expected pssl:PORT"),
    ("pssl:16645", "its port is DAQFABRIC_DB_REMOTE's too"),
])
def test_helper_rejects_bad_agent_remotes(tmp_path: Path, value: str,
                                          message: str) -> None:
    config = tmp_path / "sysconfig"
    config.write_text("DAQFABRIC_DB_LOCAL=tcp:127.0.0.1:16644\n"
                      "DAQFABRIC_DB_REMOTE=ptcp:16645:127.0.0.1\n"
                      "DAQFABRIC_DB_AGENT_REMOTE=%s\n" % value
                      + "DAQFABRIC_DB_SCHEMA=%s\n" % schema_path())
    p = subprocess.run([str(HELPER), "check"], capture_output=True,
                       text=True, timeout=30,
                       env=dict(os.environ,
                                DAQFABRIC_DB_SYSCONFIG=str(config)))
    assert p.returncode == 1, p
    assert message in p.stderr, p.stderr


def test_targets_checked() -> None:
    assert rbac.check_targets(["pssl:6646"]) == ["pssl:6646"]
    for bad in (["pssl:0"], ["pssl:70000"], ["ptcp:6646"],
                ["pssl:6646:1.2.3.4"], ["pssl:6646", "pssl:6646"]):
        with pytest.raises(rbac.RbacError):
            rbac.check_targets(bad)


def test_malformed_rows_are_not_the_desired_state() -> None:
    """Rows this module cannot make sense of are replaced, not trusted:
    current() says what they are, or RbacError."""
    want = rbac.desired(["pssl:6646"])
    empty: Dict[str, List[Dict[str, Any]]] = {t: [] for t in rbac.TABLES}
    assert rbac.current(empty) != want
    with pytest.raises(rbac.RbacError):
        rbac.current(dict(empty, RBAC_Permission=[{"_uuid": "x"}]))
    with pytest.raises(rbac.RbacError):
        rbac.current(dict(empty, RBAC_Role=[{"name": "daqfabric-agent",
                                             "permissions": 7}]))
