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

"""Unit tests of what the planner's role acts on (fabric/plannerd.py and
what it reads of the fabric database: FabricDb.down_ports(),
FabricIdl's report times): a port carries a DCM's path only while a
fresh report says it is up, the hold-down of a planner counts from its
take-over, and a new generation's plan waits a bounded time for the
reports of its ports.  Pure: fake rows and a fake database, no daemons.

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_plannerd.py
"""

import textwrap
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Set, Tuple

import ovs.db.idl

from ovs_daqring.fabric import idl as fidl
from ovs_daqring.fabric import plannerd
from ovs_daqring.fabric.db import FabricDb, Txn
from ovs_daqring.fabric.fabmap import FabricMapReader
from ovs_daqring.fabric.model import Assignment, FabricState

# One plane: a ROS leaf (ros0 on h0), an HLT leaf (hlt0 on h0, its DCMs
# d0 and d1), two spines.
MAP = """\
fabric:
  hold-down: 10
  switches:
    - {name: rl0, role: leaf, plane: 0}
    - {name: hl0, role: leaf, plane: 0}
    - {name: sp0, role: spine, plane: 0}
    - {name: sp1, role: spine, plane: 0}
  links:
    - {a: "rl0:u0", b: "sp0:rl0"}
    - {a: "rl0:u1", b: "sp1:rl0"}
    - {a: "hl0:u0", b: "sp0:hl0"}
    - {a: "hl0:u1", b: "sp1:hl0"}
  hosts:
    - {name: ros0, role: ros, ports: {0: "rl0:h0"}}
    - {name: hlt0, role: hlt, ports: {0: "hl0:h0"}}
dcms:
  - {name: d0, host: hlt0, ip: 10.1.0.1}
  - {name: d1, host: hlt0, ip: 10.1.0.2}
"""
PORTS = {"rl0": ["h0", "u0", "u1"], "hl0": ["h0", "u0", "u1"],
         "sp0": ["hl0", "rl0"], "sp1": ["hl0", "rl0"]}
ALL = {(sw, p) for sw, ports in PORTS.items() for p in ports}


def state() -> FabricState:
    return FabricMapReader("m.yaml").parse(textwrap.dedent(MAP))


def all_up() -> Dict[str, Dict[str, str]]:
    return {sw: {p: "up" for p in ports} for sw, ports in PORTS.items()}


# ============================================= the reports and their age
class Clock:
    """time.monotonic() of the modules under test."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def fake_idl(monkeypatch: Any, clock: Clock) -> Any:
    """A FabricIdl without a connection (the base IDL's __init__ is not
    run): its own bookkeeping, fed by notify() as the IDL would."""
    monkeypatch.setattr(ovs.db.idl.Idl, "__init__",
                        lambda self, *a, **k: None)
    monkeypatch.setattr(fidl, "time", clock, raising=False)
    idl = fidl.FabricIdl("unix:none", None)
    idl.tables = {"Node": SimpleNamespace(rows={})}
    idl.has_lock = True
    idl._session = SimpleNamespace(get_seqno=lambda: 1)
    return idl


def report(idl: Any, name: str, links: Dict[str, str], updated: int,
           interval: int = 1000, resync: bool = False) -> None:
    """Node row 'name' as the IDL receives it: inserted, or updated (its
    report columns and links); 'resync': inserted again as it was (the
    IDL's rows after a reconnection)."""
    rows = idl.tables["Node"].rows
    old = rows.get(name)
    row = SimpleNamespace(uuid=name, name=name, links=dict(links),
                          updated=updated, report_interval=interval,
                          _table=SimpleNamespace(name="Node"))
    rows[name] = row
    if old is None or resync:
        idl.notify(ovs.db.idl.ROW_CREATE, row)
    else:
        changed = {"updated": old.updated}
        if old.links != row.links:
            changed["links"] = old.links
        idl.notify(ovs.db.idl.ROW_UPDATE, row,
                   SimpleNamespace(_data=changed))


def fake_db(idl: Any) -> FabricDb:
    db = FabricDb.__new__(FabricDb)
    db.idl = idl
    st = state()
    db.state = lambda: st               # type: ignore[assignment]
    return db


def test_a_port_is_usable_only_while_a_fresh_report_says_it_is_up(
        monkeypatch: Any) -> None:
    """FabricDb.down_ports(): every fabric port but those a fresh report
    says are up -- a port reported down or unknown, one its switch's
    report leaves out, every port of a switch without a report, and
    every port of a report older than UP_INTERVALS of its report
    intervals, by the planner's own clock: from when its IDL received
    that report, whatever the writer's clock wrote in it."""
    clock = Clock()
    idl = fake_idl(monkeypatch, clock)
    db = fake_db(idl)
    # The writers' clocks are far apart (the 'updated' values): only
    # when the reader saw each report counts.
    report(idl, "rl0", {"h0": "up", "u0": "up", "u1": "unknown"}, 5)
    report(idl, "hl0", {"h0": "up", "u0": "up"}, 10 ** 12)
    report(idl, "sp0", {"rl0": "up", "hl0": "down"}, 0)
    assert db.down_ports() == {("rl0", "u1"), ("hl0", "u1"),
                               ("sp0", "hl0"), ("sp1", "hl0"),
                               ("sp1", "rl0")}
    # 3 report intervals (1 s) later, sp0 reports again (nothing
    # changed but its time), the others do not.
    clock.now = 2.9
    report(idl, "sp0", {"rl0": "up", "hl0": "down"}, 1)
    clock.now = 3.0
    assert ("rl0", "h0") not in db.down_ports()
    # A reconnection delivers rl0's row again as it was: not a new
    # report.
    clock.now = 3.05
    report(idl, "rl0", {"h0": "up", "u0": "up", "u1": "unknown"}, 5,
           resync=True)
    clock.now = 3.1
    assert db.down_ports() == ALL - {("sp0", "rl0")}
    # rl0 is heard from again: its ports count from now.
    report(idl, "rl0", {"h0": "up", "u0": "up", "u1": "up"}, 6)
    assert db.down_ports() == ALL - {("sp0", "rl0"), ("rl0", "h0"),
                                     ("rl0", "u0"), ("rl0", "u1")}
    # The ports of another map (a dry run's): its own ports.
    st = state()
    st.links = [lk for lk in st.links if lk.a_port != "u1"]
    assert db.down_ports(st) == ALL - {
        ("sp0", "rl0"), ("rl0", "h0"), ("rl0", "u0"), ("rl0", "u1"),
        ("hl0", "u1"), ("sp1", "rl0"), ("sp1", "hl0")}


def test_planner_looks_again_when_a_report_falls_silent(
        monkeypatch: Any) -> None:
    """What a plan depends on (FabricDb.plan_key()) changes when a
    report becomes too old and when a node that fell silent reports
    again, though neither changes a column a plan reads; the agent
    wakes when the first fresh report would become too old
    (FabricIdl.next_silence())."""
    clock = Clock()
    idl = fake_idl(monkeypatch, clock)
    db = fake_db(idl)
    report(idl, "rl0", {"h0": "up"}, 1, interval=1000)
    report(idl, "sp0", {"rl0": "up"}, 1, interval=2000)
    key = db.plan_key()
    assert idl.next_silence() == 3.0
    clock.now = 2.0
    report(idl, "rl0", {"h0": "up"}, 2)       # a heartbeat
    assert db.plan_key() == key
    assert idl.next_silence() == 5.0
    clock.now = 5.5
    silent = db.plan_key()
    assert silent != key
    assert idl.next_silence() == 6.0          # sp0's
    clock.now = 5.6
    report(idl, "rl0", {"h0": "up"}, 3)
    assert db.plan_key() == key
    clock.now = 6.1
    assert db.plan_key() not in (key, silent)
    report(idl, "sp0", {"rl0": "up"}, 4, interval=2000)
    assert db.plan_key() == key


# ============================================================ the planner
class Row:
    """A fake IDL row: its columns as attributes."""

    def __init__(self, **cols: Any) -> None:
        self.__dict__.update(cols)
        self.deleted = False

    def verify(self, column: str) -> None:
        pass

    def delete(self) -> None:
        self.deleted = True


def asg_row(a: Assignment) -> Row:
    return Row(dcm=a.dcm, plane=a.plane, spine=a.spine, epoch=a.epoch,
               generation=a.generation,
               home_plane=[a.home[0]] if a.home else [],
               home_spine=[a.home[1]] if a.home else [],
               moved_at=a.moved_at, reason=a.reason)


def asg_of(r: Row) -> Assignment:
    return Assignment(r.dcm, r.plane, r.spine, r.epoch, r.generation,
                      (r.home_plane[0], r.home_spine[0]) if r.home_plane
                      else None, r.moved_at, r.reason)


class FakeDb:
    """What a Planner reads and writes of the fabric database: the
    Fabric row, the assignments, the desired state (MAP) and the fresh
    reports ('reports': switch -> its links)."""

    def __init__(self, remote: str, timeout: float, leader_only: bool = True,
                 lock: Optional[str] = None, wait: bool = True) -> None:
        self.fab = Row(generation=1, planned_generation=1, planner_epoch=0,
                       planner="")
        self.st = state()
        self.rows_: Dict[str, Row] = {}
        self.reports = all_up()
        self.plans = 0
        self.idl = SimpleNamespace(
            has_lock=False, lock_error=None,
            _session=SimpleNamespace(get_seqno=lambda: 1),
            tables={"Assignment": "Assignment"}, node_changes=0,
            fresh_nodes=lambda: frozenset(self.reports),
            set_lock=lambda lock: None, force_reconnect=lambda: None)

    def run(self) -> None:
        pass

    def connected(self) -> bool:
        return True

    def unreachable(self) -> Optional[str]:
        return None

    def close(self) -> None:
        pass

    def root(self) -> Row:
        return self.fab

    def state(self) -> FabricState:
        return self.st

    def fresh_reports(self) -> Dict[str, Dict[str, str]]:
        return {sw: dict(links) for sw, links in self.reports.items()}

    def down_ports(self, st: Optional[FabricState] = None
                   ) -> Set[Tuple[str, str]]:
        return {(sw, p) for sw, p in ALL
                if self.reports.get(sw, {}).get(p) != "up"}

    def assignments(self) -> Dict[str, Assignment]:
        return {n: asg_of(r) for n, r in self.rows_.items()}

    def assignment_rows(self) -> Dict[str, Row]:
        return dict(self.rows_)

    def commit(self, build: Any, comment: str, retry: bool = True
               ) -> Tuple[str, Any]:
        new: List[Row] = []

        def insert(table: str) -> Row:
            r = Row()
            new.append(r)
            return r
        early = build(SimpleNamespace(insert=insert))
        if early is not None:
            return "done", early
        for r in new:
            self.rows_[r.dcm] = r
        self.rows_ = {n: r for n, r in self.rows_.items() if not r.deleted}
        if "plan of generation" in comment:
            self.plans += 1
        return Txn.SUCCESS, None


def planner(monkeypatch: Any, clock: List[int],
            current: Dict[str, Assignment]) -> Any:
    monkeypatch.setattr(plannerd, "FabricDb", FakeDb)
    monkeypatch.setattr(plannerd, "now_ms", lambda: clock[0])
    p = plannerd.Planner("unix:none", "p", 1)
    p.db.rows_ = {n: asg_row(a) for n, a in current.items()}
    return p


def test_hold_down_counts_from_the_take_over(monkeypatch: Any) -> None:
    """A standby planner that has run for days takes over: a DCM away
    from home goes back a hold-down after the take-over at the
    earliest, not at once (its home path's ports may have come back a
    moment ago, and this planner did not see them)."""
    t0 = 10 ** 12
    clock = [t0]
    p = planner(monkeypatch, clock, {
        "d0": Assignment("d0", 0, "sp0", 1, 1),
        "d1": Assignment("d1", 0, "sp0", 1, 1, (0, "sp1"), t0 - 5000,
                         "path down")})
    for _ in range(3):
        assert p.step() == "waiting for the lock"
    clock[0] = t0 + 3 * 86400 * 1000
    p.db.idl.has_lock = True
    took = clock[0]
    assert p.step(took) == "unchanged"
    assert p.epoch == 1
    assert p.db.assignments()["d1"].spine == "sp0"
    assert p.next_due == took + 10000
    clock[0] = took + 9999
    assert p.step(clock[0]) == "unchanged"
    clock[0] = took + 10000
    assert p.step(clock[0]) == "planned"
    d1 = p.db.assignments()["d1"]
    assert d1.spine == "sp1" and d1.home is None


def test_a_new_generation_waits_for_the_reports_of_its_ports(
        monkeypatch: Any) -> None:
    """The plan of a new generation waits, REPORT_WAIT_S at most, while
    a node that reports (fresh) has not reported one of its ports yet:
    its agent has not read the generation that cabled it (at a fabric's
    first map, every agent).  Planned at once when every node that
    reports has reported all its ports, or after the wait with what is
    known."""
    clock = [10 ** 12]
    mono = Clock()
    monkeypatch.setattr(plannerd, "time", mono, raising=False)
    p = planner(monkeypatch, clock, {})
    db = p.db
    db.idl.has_lock = True
    db.fab.generation = 2
    db.reports["hl0"] = {"h0": "up"}            # its links not yet
    what = p.step(clock[0])
    assert what.startswith("waiting for the reports"), what
    assert "hl0" in what and db.plans == 0
    assert db.fab.planned_generation == 1 and db.assignments() == {}
    mono.now += 1.0
    assert p.step(clock[0]).startswith("waiting") and db.plans == 0
    db.reports["hl0"] = {"h0": "up", "u0": "up", "u1": "up"}
    assert p.step(clock[0]) == "planned"
    assert db.fab.planned_generation == 2
    assert sorted(a.spine for a in db.assignments().values()) == [
        "sp0", "sp1"]
    # A node that does not catch up is waited for REPORT_WAIT_S at most;
    # a node without a fresh report is not waited for.
    db.fab.generation = 3
    db.reports["hl0"] = {"h0": "up", "u0": "up"}
    del db.reports["sp1"]
    assert p.step(clock[0]).startswith("waiting")
    mono.now += plannerd.REPORT_WAIT_S
    assert p.step(clock[0]) == "planned"
    assert db.fab.planned_generation == 3
    assert {a.spine for a in db.assignments().values()} == {"sp0"}


def test_a_report_that_arrives_during_a_round_is_news(
        monkeypatch: Any) -> None:
    """A node's report that changes while a round commits its plan (the
    IDL runs then) makes the next round plan again: the round's key is
    what it read (Planner.seen), not what the IDL holds after it."""
    clock = [10 ** 12]
    p = planner(monkeypatch, clock, {})
    db = p.db
    db.idl.has_lock = True
    real_commit = db.commit

    def commit(build: Any, comment: str, retry: bool = True
               ) -> Tuple[str, Any]:
        got = real_commit(build, comment, retry)
        db.idl.node_changes += 1                # a link's state changed
        return got
    db.commit = commit                          # type: ignore
    db.fab.generation = 2
    assert p.step(clock[0]) == "planned"
    # Read after the take-over's commit, before the plan's.
    assert db.idl.node_changes == 2
    assert p.seen == (1, frozenset(PORTS))
    # FabricDb.plan_key() with what the round saw, and with what the IDL
    # holds now, on a FabricIdl.
    clock2 = Clock()
    idl = fake_idl(monkeypatch, clock2)
    fdb = fake_db(idl)
    report(idl, "rl0", {"h0": "up"}, 1)
    seen = (idl.node_changes, idl.fresh_nodes())
    assert fdb.plan_key(seen) == fdb.plan_key()
    report(idl, "rl0", {"h0": "down"}, 2)
    assert fdb.plan_key(seen) != fdb.plan_key()


# ====================================================== stale members
def test_every_plan_write_grows_the_plan_serial(monkeypatch: Any) -> None:
    """Issue 47 item 8: a failover writes Assignment rows alone, and the
    generation does not change; the plan serial does, at every planner
    commit, so that FabricIdl.check_stale() sees a member that lacks the
    failover."""
    clock = [10 ** 12]
    p = planner(monkeypatch, clock, {})
    p.db.idl.has_lock = True
    assert p.step() == "planned"
    first = fidl.record(p.db.root())
    assert first[2] == 1, first
    # sp0's link to the HLT leaf goes down: its DCMs move to sp1.
    p.db.reports["hl0"]["u0"] = "down"
    p.db.reports["sp0"]["hl0"] = "down"
    clock[0] += 1000
    assert p.step() == "planned"
    second = fidl.record(p.db.root())
    assert second[:2] == first[:2], "a failover is no new generation"
    assert second > first
    assert all(a.spine == "sp1" for a in p.db.assignments().values())


def test_a_member_without_the_last_failover_is_left(
        monkeypatch: Any) -> None:
    """A client that saw a failover's plan reconnects to a member that
    holds the same generation but not that plan (catching up after a
    restart): it leaves that member before it reads the assignments,
    rather than steer moved DCMs back onto the failed path."""
    monkeypatch.setattr(ovs.db.idl.Idl, "__init__",
                        lambda self, *a, **k: None)
    idl = fidl.FabricIdl("unix:none", None)
    seqno = [1]
    left: List[int] = []
    idl.state = idl.IDL_S_MONITORING
    idl._session = SimpleNamespace(
        get_seqno=lambda: seqno[0],
        rpc=SimpleNamespace(get_status=lambda: 0))
    idl._db = SimpleNamespace(name="daqfabric")
    idl.server_tables = {"Database": SimpleNamespace(rows={
        1: SimpleNamespace(name="daqfabric", cid=["c1"])})}
    idl.session_name = lambda: "unix:none"          # type: ignore
    idl.force_reconnect = lambda: left.append(seqno[0])  # type: ignore

    def member(gen: int, planned: int, serial: int) -> None:
        idl.tables = {"Fabric": SimpleNamespace(rows={1: SimpleNamespace(
            generation=gen, planned_generation=planned,
            plan_serial=serial)})}

    member(3, 3, 7)                 # the failover's plan, seen
    idl.check_stale()
    assert not left
    seqno[0] = 2                    # reconnected: a member behind
    member(3, 3, 6)
    idl.check_stale()
    assert left == [2] and idl.stale_left == 1
    seqno[0] = 3                    # another, which has it
    member(3, 3, 7)
    idl.check_stale()
    assert left == [2]


# ===================================== commits that do not block the agent
# Issue 47 item 10: without 'wait' (the agents' --planner), a planner's
# round never waits for the leader's answer; at most one transaction is
# in flight, and each round looks at it first (OVS's ovsdb_idl_loop).
class MonoClock:
    """time of the modules under test: time.monotonic() (seconds) is
    'now', and moves only when a test (or a fake's wait) moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return 10 ** 9 + self.now


class FakeTxn:
    """A transaction sent to a leader that answers only when the test
    says (SlowDb.answer())."""

    def __init__(self) -> None:
        self.status = Txn.INCOMPLETE
        self.waited = 0

    def commit(self) -> str:
        return self.status

    def wait(self, poller: Any) -> None:
        self.waited += 1
        if self.status != Txn.INCOMPLETE:
            poller.immediate_wake()

    def abort(self) -> None:
        if self.status == Txn.INCOMPLETE:
            self.status = Txn.ABORTED

    def get_error(self) -> str:
        return str(self.status)


class FakePoller:
    """What a loop would wait for: the shortest timer (ms), 0 for an
    immediate wake."""

    def __init__(self) -> None:
        self.timeout: Optional[int] = None

    def timer_wait(self, ms: int) -> None:
        if self.timeout is None or ms < self.timeout:
            self.timeout = ms

    def immediate_wake(self) -> None:
        self.timer_wait(0)

    def fd_wait(self, fd: Any, events: Any) -> None:
        pass


class SlowDb(FakeDb):
    """A FakeDb whose leader answers a transaction only when the test
    says: begin() (FabricDb.begin()) sends it, answer() answers the
    last one sent (a success writes what it built); commit(), the
    blocking FabricDb.commit(), waits for the answer as
    commit_block() does, polling every 100 ms of the fake clock,
    until its timeout."""

    clock = MonoClock()

    def __init__(self, remote: str, timeout: float, leader_only: bool = True,
                 lock: Optional[str] = None, wait: bool = True) -> None:
        super().__init__(remote, timeout, leader_only, lock, wait)
        self.remote = remote
        self.timeout = timeout
        # The IDL's change_seqno: a success's write arrives with it.
        self.seqno = 0
        self.sent: List[FakeTxn] = []
        self.pending: Optional[Tuple[FakeTxn, Any]] = None
        self.idl.wait = lambda poller: None
        self.idl.next_silence = lambda: None

    def mark(self) -> Tuple[int, int]:
        return self.seqno, 1

    def plan_key(self, seen: Any = None) -> Tuple[Any, ...]:
        return (self.seqno, self.idl.has_lock)

    def begin(self, build: Any, comment: str) -> Tuple[Any, Any]:
        import copy
        before = copy.deepcopy((self.fab, self.rows_, self.plans))
        status, early = FakeDb.commit(self, build, comment)
        if early is not None:
            self.fab, self.rows_, self.plans = before
            return None, early
        after = (self.fab, self.rows_, self.plans)
        self.fab, self.rows_, self.plans = before
        txn = FakeTxn()
        self.sent.append(txn)
        self.pending = (txn, after)
        return txn, None

    def answer(self, status: str) -> None:
        assert self.pending is not None
        txn, after = self.pending
        self.pending = None
        txn.status = status
        if status == Txn.SUCCESS:
            self.fab, self.rows_, self.plans = after
            self.seqno += 1

    def commit(self, build: Any, comment: str, retry: bool = True
               ) -> Tuple[str, Any]:
        from ovs_daqring.daqctl.model import DaqctlError
        txn, early = self.begin(build, comment)
        if txn is None:
            return "done", early
        deadline = self.clock.monotonic() + self.timeout
        while txn.commit() == Txn.INCOMPLETE:
            if self.clock.now > deadline:
                txn.abort()
                raise DaqctlError("%s: the transaction timed out"
                                  % self.remote)
            self.clock.now += 0.1
        return txn.status, None


def slow_planner(monkeypatch: Any, timeout: float = 1.0
                 ) -> Tuple[Any, MonoClock]:
    """A daemon's planner (no 'wait') that holds the lock, on a SlowDb
    with a generation to plan (2; the plan of 1 is in force, with no
    DCM assigned)."""
    clock = MonoClock()
    monkeypatch.setattr(plannerd, "FabricDb", SlowDb)
    monkeypatch.setattr(plannerd, "time", clock, raising=False)
    monkeypatch.setattr(plannerd, "now_ms", lambda: 10 ** 12)
    monkeypatch.setattr(SlowDb, "clock", clock)
    p = plannerd.Planner("unix:none", "p", timeout, wait=False)
    p.db.idl.has_lock = True
    p.db.fab.generation = 2
    return p, clock


def test_a_round_does_not_wait_for_its_commit(monkeypatch: Any) -> None:
    """A round sends its transaction and returns ("committing"); the
    rounds until the answer send nothing new; the round after the
    answer acts on it (the take-over, then the plan in force).  On the
    fake clock: no round waits (with the blocking commits, the first
    round waited for the whole timeout and failed)."""
    p, clock = slow_planner(monkeypatch)
    db = p.db
    assert p.step() == "committing"             # the take-over, sent
    assert clock.now == 0.0 and len(db.sent) == 1 and p.in_flight()
    assert p.epoch is None and db.fab.planner_epoch == 0
    poller = FakePoller()
    p.wait(poller)
    # Woken by its answer, or at its timeout.
    assert db.sent[0].waited == 1 and poller.timeout == 1000
    clock.now = 0.5
    assert p.step() == "committing" and len(db.sent) == 1
    db.answer(Txn.SUCCESS)
    poller = FakePoller()
    p.wait(poller)
    assert poller.timeout == 0
    # The take-over's answer, and the plan sent in the same round.
    assert p.step() == "committing"
    assert p.epoch == 1 and len(db.sent) == 2
    assert db.fab.planned_generation == 1 and db.assignments() == {}
    assert p.step() == "committing" and len(db.sent) == 2
    db.answer(Txn.SUCCESS)
    assert p.step() == "planned"
    assert not p.in_flight() and db.plans == 1
    assert db.fab.planned_generation == 2
    assert sorted(a.spine for a in db.assignments().values()) == [
        "sp0", "sp1"]
    assert p.step() == "unchanged" and len(db.sent) == 2
    assert clock.now == 0.5


def test_a_try_again_is_planned_again_in_a_later_round(
        monkeypatch: Any) -> None:
    """A plan that fails (TRY_AGAIN: the database changed meanwhile) is
    planned again by the next round; by the same round if the IDL
    already holds news since it was built (else it would fail again);
    and the plan then succeeds.  A TRY_AGAIN because another planner
    took over deposes this one."""
    p, clock = slow_planner(monkeypatch)
    db = p.db
    assert p.step() == "committing"
    db.answer(Txn.SUCCESS)
    assert p.step() == "committing" and len(db.sent) == 2
    # What made it fail has not arrived yet.
    db.answer(Txn.TRY_AGAIN)
    assert p.step() == "retry (try again)"
    assert not p.in_flight() and len(db.sent) == 2
    assert db.assignments() == {}
    assert p.step() == "committing" and len(db.sent) == 3
    # It has: planned again in the same round.
    db.answer(Txn.TRY_AGAIN)
    db.seqno += 1
    assert p.step() == "committing" and len(db.sent) == 4
    db.answer(Txn.SUCCESS)
    assert p.step() == "planned"
    assert db.plans == 1 and db.fab.planned_generation == 2
    assert len(db.assignments()) == 2
    # A new generation; another planner takes over meanwhile.
    db.fab.generation = 3
    db.seqno += 1
    assert p.step() == "committing" and len(db.sent) == 5
    db.answer(Txn.TRY_AGAIN)
    db.fab.planner_epoch = 7
    assert p.step() == "deposed (epoch 7 is another planner's)"
    assert p.epoch is None and db.fab.planned_generation == 2
    assert clock.now == 0.0


def test_a_commit_unanswered_past_the_timeout_is_aborted(
        monkeypatch: Any) -> None:
    """A transaction unanswered for the timeout is aborted and said so
    (it may or may not have been committed); the next round plans
    again from what the IDL holds."""
    from ovs_daqring.daqctl.model import DaqctlError
    p, clock = slow_planner(monkeypatch)
    db = p.db
    assert p.step() == "committing"
    db.answer(Txn.SUCCESS)
    assert p.step() == "committing" and len(db.sent) == 2
    clock.now = 1.0
    assert p.step() == "committing"             # at its timeout
    clock.now = 1.001
    try:
        p.step()
    except DaqctlError as e:
        assert str(e) == ("unix:none: the plan transaction timed out (1 "
                          "s); it may or may not have been committed")
    else:
        raise AssertionError("no timeout")
    assert db.sent[1].status == Txn.ABORTED and not p.in_flight()
    assert db.assignments() == {} and p.epoch == 1
    assert p.step() == "committing" and len(db.sent) == 3
    db.answer(Txn.SUCCESS)
    assert p.step() == "planned" and db.fab.planned_generation == 2


def test_the_agent_reports_while_its_planner_commit_hangs(
        monkeypatch: Any) -> None:
    """The agent's loop (Agent.run(), Agent.wait()) while the leader
    does not answer its planner's transaction: every round reports and
    none waits (with the blocking commits, the first round waited for
    the whole timeout: no report, no switch check meanwhile); the loop
    wakes on the transaction; an answer is acted on at the next round,
    and a transaction left unanswered past the timeout is given up and
    logged, the reports going on."""
    from ovs_daqring.fabric import agent as fa
    p, clock = slow_planner(monkeypatch, timeout=60.0)
    db = p.db
    monkeypatch.setattr(fa, "time", clock, raising=False)
    a = fa.Agent.__new__(fa.Agent)
    reports: List[float] = []
    a.planner = p
    a.fabric = SimpleNamespace(run=lambda: None,
                               idl=SimpleNamespace(wait=lambda poller: None))
    a.rec = a.watch = a.want = a.unplanned = None
    a.next_report = 1.0
    a.next_plan = 0.0
    a.plan_key = None
    a.plan_again = True
    a.plan_what = ""
    a.fabric_up = lambda: False                 # type: ignore
    a.report = lambda: reports.append(clock.now)   # type: ignore
    a.keep = lambda: None                       # type: ignore
    a.report_deadline = lambda poller: clock.now + 2.0  # type: ignore
    waits: List[Optional[int]] = []

    def rounds(n: int) -> None:
        for _ in range(n):
            t = clock.now
            a.run()
            assert clock.now == t, "a round waited"
            poller = FakePoller()
            a.wait(poller)
            waits.append(poller.timeout)
            clock.now += 0.5

    rounds(20)
    assert len(reports) == 20 and len(db.sent) == 1 and p.in_flight()
    assert db.sent[0].waited == 20 and waits[-1] == 1000
    db.answer(Txn.SUCCESS)
    rounds(1)
    assert p.epoch == 1 and len(db.sent) == 2
    db.answer(Txn.SUCCESS)
    rounds(1)
    assert a.plan_what == "planned" and db.fab.planned_generation == 2
    # A new generation whose plan is never answered: given up after the
    # timeout (60 s), and the reports go on.
    db.fab.generation = 3
    db.seqno += 1
    rounds(130)
    assert len(reports) == 152
    assert a.plan_what.startswith("failed: unix:none: the plan "
                                  "transaction timed out"), a.plan_what
    assert db.sent[2].status == Txn.ABORTED


def test_a_link_change_is_not_held_back_by_another_report(
        monkeypatch: Any) -> None:
    """A link that goes down 50 ms after a report of something else (a
    ring's counters, a heartbeat) is reported in the round that sees
    it: the limit of one link report per INTERVAL_MIN counts from the
    last report of a link change (it counted from any report, and the
    agent then slept until its next interval, a second later).  A
    change within INTERVAL_MIN of the last link report waits for that
    limit, and wait() wakes the agent for it."""
    from ovs_daqring.fabric import agent as fa
    from ovs_daqring.fabric.node import INTERVAL_MIN

    class Clock:
        now = 100.0

        def monotonic(self) -> float:
            return self.now
    clock = Clock()
    monkeypatch.setattr(fa, "time", clock, raising=False)
    a = fa.Agent.__new__(fa.Agent)
    written: List[Dict[str, str]] = []
    links = {"up1": "up"}
    a.report_txn = None
    a.fabric_up = lambda: True                   # type: ignore
    a.interval = 1.0
    a.next_report = clock.now + 0.95
    a.last_report = clock.now - 0.05
    a.reported_links = dict(links)
    a.reported_links_written = dict(links)
    a.rec = SimpleNamespace(db=SimpleNamespace(
        idl=SimpleNamespace(wait=lambda p: None)))
    a.error = a.fabric_note = a.planner = None
    a.failed_gen = None
    a.applied_gen = 1
    a.bfd = {}
    a.links_now = lambda: dict(links)          # type: ignore
    a.local_view = lambda: (dict(links), {})   # type: ignore
    a.node_columns = lambda *args: {}          # type: ignore
    a.write_report = (                          # type: ignore
        lambda cols, lk, now: written.append(lk))
    links["up1"] = "down"
    a.report()
    assert written == [{"up1": "down"}]
    # Back up 30 ms later: held back until INTERVAL_MIN after the last
    # link report, and woken then.
    clock.now += 0.03
    links["up1"] = "up"
    a.report()
    assert len(written) == 1
    a.fabric = SimpleNamespace(idl=SimpleNamespace(wait=lambda p: None))
    a.watch = a.want = a.unplanned = None
    a.report_deadline = lambda poller: clock.now + 1.0  # type: ignore
    poller = FakePoller()
    a.wait(poller)
    assert poller.timeout == round((INTERVAL_MIN - 0.03) * 1000), \
        poller.timeout
    clock.now += INTERVAL_MIN
    a.report()
    assert written[-1] == {"up1": "up"}
