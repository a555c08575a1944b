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

"""Tests of the fabric control plane against a real 3-member clustered
(Raft) ovsdb-server with the fabric schema: ovs-daqctl fabric apply
(the whole state in one transaction, refused whole, --dry-run), fabric
status, concurrent applies, kill -9 of the Raft leader during an apply,
and the planner's lock and fencing epoch.

Every test starts its own cluster (unix sockets in a short directory
under /tmp: sun_path holds 108 bytes) and stops every daemon it started.
Waits are bounded; nothing asserts a duration.

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_commands.py
"""

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import ovs.poller
import pytest

from ovs_daqring.daqctl.model import DaqctlError
from ovs_daqring.fabric.db import EXIT_MAYBE_COMMITTED, FabricDb
from ovs_daqring.fabric.fabmap import (FabricMapReader, state_digest,
                                       state_json)
from ovs_daqring.fabric.plannerd import Planner

from fabric_helpers import Cluster, example_cluster, wait_for

pytestmark = [pytest.mark.every_base, pytest.mark.ovsdb_only]

ROOT = Path(__file__).resolve().parent.parent.parent
DAQCTL = ROOT / "utilities" / "ovs-daqctl"
EXAMPLE = ROOT / "utilities" / "fabric-map.example.yaml"
PYTHON = "/usr/bin/python3"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """fabric_helpers.example_cluster()."""
    yield from example_cluster()


def daqctl(*args: str, timeout: float = 120
           ) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([PYTHON, str(DAQCTL)] + list(args),
                          capture_output=True, text=True, timeout=timeout,
                          env=env)


def db_content(remote: str, leader_only: bool = True) -> Dict[str, Any]:
    """The desired state and the generation as 'remote' holds them."""
    db = FabricDb(remote, 30, leader_only=leader_only)
    try:
        return {"generation": db.generation(),
                "state": state_json(db.state()),
                "digest": db.root().map_digest if db.root() else None}
    finally:
        db.close()


def map_state(path: str) -> Dict[str, Any]:
    return state_json(FabricMapReader(path).read())


def write_map(d: str, name: str, n_dcms: int, rate: str = "190mbit",
              spines: int = 2) -> str:
    """The example fabric with 'n_dcms' DCMs on hlt1."""
    text = EXAMPLE.read_text().split("defaults:")[0]
    if spines == 1:
        text = "\n".join(ln for ln in text.splitlines()
                         if "spine2" not in ln) + "\n"
    text += "defaults:\n  rate: %s\ndcms:\n" % rate
    for k in range(n_dcms):
        text += ('  - {name: dcm%d, host: hlt1, tuples: ["*:*->10.1.0.1:%d"]}'
                 "\n" % (k, 10000 + k))
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write(text)
    return p


# ===================================================================== apply
def test_apply_writes_whole_state_replicated(cluster: Cluster) -> None:
    p = daqctl("fabric", "apply", str(EXAMPLE), "--db", cluster.remotes())
    assert p.returncode == 0, p.stderr
    assert "generation 1" in p.stdout
    want = map_state(str(EXAMPLE))
    got = db_content(cluster.remotes())
    assert got["generation"] == 1 and got["state"] == want
    assert got["digest"] == state_digest(FabricMapReader(str(EXAMPLE))
                                         .read())
    # Every member has it (read from each, leader or not).
    for i in range(1, 4):
        wait_for(lambda i=i: db_content(cluster.remote(i), False)["state"]
                 == want, "member %d to have the map" % i)


def test_apply_again_with_changes_replaces_the_state(
        cluster: Cluster, tmp_path: Path) -> None:
    m1 = write_map(str(tmp_path), "m1.yaml", 6)
    m2 = write_map(str(tmp_path), "m2.yaml", 3, rate="100mbit", spines=1)
    for m, gen in ((m1, 1), (m2, 2)):
        p = daqctl("fabric", "apply", m, "--db", cluster.remotes())
        assert p.returncode == 0, p.stderr
        got = db_content(cluster.remotes())
        assert got["generation"] == gen and got["state"] == map_state(m)


def _dcm_rows(db: FabricDb) -> Dict[str, Any]:
    """DCM name -> (row uuid, how often the row changed), as 'db' saw
    them."""
    db.run()
    return {r.name: (r.uuid, db.idl.row_changes.get(r.uuid, 0))
            for r in db.rows("DCM")}


def test_apply_writes_only_the_rows_that_differ(cluster: Cluster,
                                                tmp_path: Path) -> None:
    m5 = write_map(str(tmp_path), "m5.yaml", 5)
    m6 = write_map(str(tmp_path), "m6.yaml", 6)
    p = daqctl("fabric", "apply", m5, "--db", cluster.remotes(), "-f",
               "json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["fabric"]["rows"]
    assert rows["DCM"] == {"inserted": 5, "updated": 0, "deleted": 0}
    assert rows["Fabric"]["inserted"] == 1
    # A client that watches the DCM rows while one DCM more is applied.
    watch = FabricDb(cluster.remotes(), 30, leader_only=False)
    db = FabricDb(cluster.remotes(), 30)
    try:
        before = _dcm_rows(watch)
        state6 = FabricMapReader(m6).read()
        assert db.apply(state6, state_digest(state6), "test", "m6") == 2
        assert db.applied == {
            "Fabric": {"inserted": 0, "updated": 1, "deleted": 0},
            "DCM": {"inserted": 1, "updated": 0, "deleted": 0}}
        wait_for(lambda: len(_dcm_rows(watch)) == 6, "the new DCM row")
        after = _dcm_rows(watch)
        assert {n: v for n, v in after.items() if n != "dcm5"} == before
        # The same state again: only the generation.
        assert db.apply(state6, state_digest(state6), "test", "m6") == 3
        assert db.applied == {"Fabric": {"inserted": 0, "updated": 1,
                                         "deleted": 0}}
        # Another client changes a row that 'db' has compared already:
        # the next apply puts it back (and only it).
        other = FabricDb(cluster.remotes(), 30)
        try:
            def build(txn: Any) -> None:
                r = next(r for r in other.rows("DCM") if r.name == "dcm3")
                r.ring_size = 77
            other.commit(build, "test: change dcm3")
        finally:
            other.close()
        db.wait_connected()
        db.run_until(lambda: any(r.ring_size == 77 for r in db.rows("DCM")),
                     "the other client's change")
        assert db.apply(state6, state_digest(state6), "test", "m6") == 4
        assert db.applied["DCM"] == {"inserted": 0, "updated": 1,
                                     "deleted": 0}
        got = db_content(cluster.remotes())
        assert got["state"] == map_state(m6)
        # The CLI says what it wrote.
        p = daqctl("fabric", "apply", m5, "--db", cluster.remotes())
        assert p.returncode == 0, p.stderr
        assert "DCM 1 deleted" in p.stdout, p.stdout
    finally:
        watch.close()
        db.close()


def test_dry_run_changes_nothing(cluster: Cluster) -> None:
    p = daqctl("fabric", "apply", "--dry-run", str(EXAMPLE), "--db",
               cluster.remotes())
    assert p.returncode == 0, p.stderr
    # The HLT leaf's routes are the way back toward the ROS hosts, one
    # per DCM along its spine, and two per uplink for the detours.
    assert "switch hlt-leaf1: 4 daqrings, 8 routes" in p.stdout, p.stdout
    # A spine's: every DCM (standing routes, whatever spine it is
    # assigned to), and one toward each of the two ROS hosts.
    assert "switch spine1: 0 daqrings, 6 routes" in p.stdout, p.stdout
    got = db_content(cluster.remotes())
    assert got["generation"] == 0 and got["state"]["dcms"] == []
    p = daqctl("fabric", "apply", "-n", str(EXAMPLE), "-f", "json",
               "--db", cluster.remotes())
    plan = json.loads(p.stdout)["fabric"]
    assert sorted(plan["assignments"]) == ["dcm1", "dcm2", "dcm3", "dcm4"]
    assert len(plan["switches"]["hlt-leaf1"]["rings"]) == 4


def test_bad_map_refused_whole(cluster: Cluster, tmp_path: Path) -> None:
    good = write_map(str(tmp_path), "good.yaml", 4)
    assert daqctl("fabric", "apply", good, "--db",
                  cluster.remotes()).returncode == 0
    before = db_content(cluster.remotes())
    # Many good changes and one bad DCM: nothing of it is written.
    bad = write_map(str(tmp_path), "bad.yaml", 40, rate="100mbit")
    with open(bad, "a") as f:
        f.write("  - {name: dcmx, host: nosuch, ip: 10.9.9.9}\n")
    p = daqctl("fabric", "apply", bad, "--db", cluster.remotes())
    assert p.returncode == 2
    assert "DCM dcmx: no host nosuch" in p.stderr
    assert "nothing changed" in p.stderr
    assert db_content(cluster.remotes()) == before


def test_unreachable_database_fails_clearly(tmp_path: Path) -> None:
    p = daqctl("fabric", "status", "--db",
               "unix:%s/none.sock" % tmp_path, "--timeout", "2")
    assert p.returncode == 1
    assert "timed out" in p.stderr


def test_status_text_and_json(cluster: Cluster) -> None:
    p = daqctl("fabric", "status", "--db", cluster.remotes())
    assert p.returncode == 0 and "no map applied yet" in p.stdout
    assert daqctl("fabric", "apply", str(EXAMPLE), "--db",
                  cluster.remotes()).returncode == 0
    p = daqctl("fabric", "plan", "--name", "t-planner", "--db",
               cluster.remotes())
    assert p.returncode == 0, p.stderr
    # (No agents: nothing to listen for.)
    p = daqctl("fabric", "status", "--listen", "0", "--json", "--db",
               cluster.remotes())
    assert p.returncode == 0, p.stderr
    st = json.loads(p.stdout)["fabric"]
    assert st["generation"] == 1 and st["planned_generation"] == 1
    assert st["planner"] == "t-planner" and st["planner_epoch"] == 1
    assert sorted(n["switch"] for n in st["nodes"]) == [
        "hlt-leaf1", "ros-leaf1", "spine1", "spine2"]
    assert all(not n["up"] for n in st["nodes"])     # no agents
    spines = [d["spine"] for d in st["dcms"]]
    assert spines == ["spine1", "spine2", "spine1", "spine2"]
    p = daqctl("fabric", "status", "--listen", "0", "-v", "--db",
               cluster.remotes())
    assert "dcm2 on hlt1: plane 0 spine spine2" in p.stdout


def test_status_verbose_lists_rings_worst_first(cluster: Cluster) -> None:
    """status -v: per node, its rings as its agent reports them
    (occupancy, high watermark, drops), those that dropped most first,
    then the fullest; at most STATUS_RINGS, and how many more."""
    from ovs_daqring.fabric.commands import STATUS_RINGS
    from ovs_daqring.fabric.db import now_ms
    assert daqctl("fabric", "apply", str(EXAMPLE), "--db",
                  cluster.remotes()).returncode == 0
    n = STATUS_RINGS + 3
    occ = {"r%02d" % i: i for i in range(n)}
    drops = {"r%02d" % i: 0 for i in range(n)}
    drops["r01"] = 7
    db = FabricDb(cluster.remotes(), 30)
    try:
        def build(txn: Any) -> None:
            rows = {r.name: r for r in db.rows("Node")}
            r = rows.get("hlt-leaf1") or txn.insert(db.idl.tables["Node"])
            r.name = "hlt-leaf1"
            r.agent = "test"
            r.generation = 1
            r.report_interval = 60000
            r.updated = now_ms()
            r.ring_occupancy = occ
            r.ring_high_watermark = {k: 2 * v for k, v in occ.items()}
            r.ring_drops = drops
        status, _ = db.commit(build, "test node")
        assert status == "success", status
    finally:
        db.close()
    p = daqctl("fabric", "status", "--listen", "0", "--db", cluster.remotes())
    assert "%d rings" % n in p.stdout and "ring r" not in p.stdout
    p = daqctl("fabric", "status", "--listen", "0", "-v", "--db",
               cluster.remotes())
    assert p.returncode == 0, p.stderr
    rings = [ln.split()[1] for ln in p.stdout.splitlines()
             if ln.strip().startswith("ring ")]
    assert rings == ["r01"] + ["r%02d" % i for i in range(
        n - 1, 1, -1)][:STATUS_RINGS - 1], p.stdout
    assert ("ring r01  occupancy 1, high watermark 2, drops 7"
            in p.stdout), p.stdout
    assert "... 3 more rings (--json lists them all" in p.stdout


def test_concurrent_applies_one_wins_never_a_mix(
        cluster: Cluster, tmp_path: Path) -> None:
    maps = [write_map(str(tmp_path), "a.yaml", 150, rate="100mbit"),
            write_map(str(tmp_path), "b.yaml", 120, rate="200mbit",
                      spines=1)]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    procs = [subprocess.Popen([PYTHON, str(DAQCTL), "fabric", "apply",
                               maps[k % 2], "--db", cluster.remotes()],
                              stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
             for k in range(4)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        results.append((p.returncode, err))
    ok = [r for r in results if r[0] == 0]
    # Each either succeeded or failed cleanly (nothing changed).
    for rc, err in results:
        assert rc == 0 or "nothing changed" in err, err
    got = db_content(cluster.remotes())
    assert got["generation"] == len(ok)
    assert got["state"] in (map_state(maps[0]), map_state(maps[1]))


def test_leader_killed_during_apply(cluster: Cluster,
                                    tmp_path: Path) -> None:
    m = write_map(str(tmp_path), "big.yaml", 1500)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    leader = cluster.leader()
    p = subprocess.Popen([PYTHON, str(DAQCTL), "fabric", "apply", m,
                          "--db", cluster.remotes(), "--timeout", "90"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    try:
        # Whenever it lands (before, during or after the commit), the
        # outcome must be the same.
        wait_for(lambda: p.poll() is not None or os.path.exists(m),
                 "the apply to start")
        cluster.kill(leader)
        out, err = p.communicate(timeout=150)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    assert p.returncode == 0, err
    wait_for(cluster.leader, "a new leader")
    got = db_content(cluster.remotes())
    # Applied exactly once, whole.
    assert got["generation"] == 1
    assert got["state"] == map_state(m)


# =================================================================== planner
def _until(planner: Planner, cond: Callable[[str], bool],
           timeout: float = 60) -> str:
    last: List[str] = []

    def once() -> bool:
        last.append(planner.step())
        if cond(last[-1]):
            return True
        planner.db.idl.run()
        time.sleep(0.05)
        return False
    wait_for(once, "planner: %s" % (last[-1:] or ["?"]), timeout)
    return last[-1]


def test_planner_lock_single_writer(cluster: Cluster) -> None:
    assert daqctl("fabric", "apply", str(EXAMPLE), "--db",
                  cluster.remotes()).returncode == 0
    a = Planner(cluster.remotes(), "A", 30)
    b = Planner(cluster.remotes(), "B", 30)
    try:
        assert _until(a, lambda s: s == "planned") == "planned"
        assert a.epoch == 1
        # B contends on the same (leader) server: it never gets the lock,
        # never takes over, never writes.
        for _ in range(20):
            assert b.step() == "waiting for the lock"
            b.db.idl.run()
        assert b.epoch is None
        # A goes: B takes over with the next epoch.
        a.close()
        assert _until(b, lambda s: s in ("planned", "unchanged")) in (
            "planned", "unchanged")
        assert b.epoch == 2
    finally:
        a.close()
        b.close()
    db = FabricDb(cluster.remotes(), 30)
    try:
        fab = db.root()
        assert fab.planner == "B" and fab.planner_epoch == 2
        asg = db.assignments()
        assert sorted(asg) == ["dcm1", "dcm2", "dcm3", "dcm4"]
        assert all(x.epoch == 1 for x in asg.values())
    finally:
        db.close()


def _fresh_assignments(remote: str) -> Dict[str, Any]:
    db = FabricDb(remote, 30)
    try:
        return db.assignments()
    finally:
        db.close()


def test_assignments_follow_every_change_and_a_reconnection(
        cluster: Cluster, tmp_path: Path) -> None:
    """FabricDb.assignments() converts only the rows that changed since
    its last call: what it returns is what a client that reads every row
    anew gets, after plans that move (as many rows as before), delete
    and add assignments, and after its IDL reconnects to another member
    (which may clear its rows without a notification per row) while a
    DCM was replaced by another (as many rows as before)."""
    m6 = write_map(str(tmp_path), "m6.yaml", 6)
    m6s1 = write_map(str(tmp_path), "m6s1.yaml", 6, spines=1)
    m3 = write_map(str(tmp_path), "m3.yaml", 3)
    m6b = str(tmp_path / "m6b.yaml")
    Path(m6b).write_text(Path(m6s1).read_text().replace("name: dcm5,",
                                                        "name: dcm9,"))
    reader = FabricDb(cluster.remotes(), 30)
    planner = Planner(cluster.remotes(), "P", 30)
    try:
        seen: List[Dict[str, Any]] = []
        for m in (m6, m6s1, m3, m6):
            assert daqctl("fabric", "apply", m, "--db",
                          cluster.remotes()).returncode == 0
            _until(planner, lambda s: s == "planned")
            want = _fresh_assignments(cluster.remotes())
            _run_until([reader], lambda w=want: reader.assignments() == w,
                       "the reader to have the plan", timeout=10)
            seen.append(want)
        assert {a.spine for a in seen[0].values()} == {"spine1", "spine2"}
        assert {a.spine for a in seen[1].values()} == {"spine1"}
        assert sorted(seen[2]) == ["dcm0", "dcm1", "dcm2"]
        assert sorted(seen[3]) == ["dcm%d" % k for k in range(6)]
        name = reader.idl.session_name()
        cluster.kill(next(i for i in range(1, 4)
                          if cluster.remote(i) == name))
        planner.close()
        planner = Planner(cluster.remotes(), "Q", 30)
        assert daqctl("fabric", "apply", m6b, "--db",
                      cluster.remotes()).returncode == 0
        _until(planner, lambda s: s == "planned")
        want = _fresh_assignments(cluster.remotes())
        assert sorted(want) == ["dcm%d" % k for k in (0, 1, 2, 3, 4, 9)]
        _run_until([reader], lambda: reader.assignments() == want,
                   "the reader to have the plan after reconnecting",
                   timeout=10)
        assert reader.idl.session_name() != name
    finally:
        planner.close()
        reader.close()


def test_deposed_planner_cannot_commit(cluster: Cluster,
                                       tmp_path: Path) -> None:
    assert daqctl("fabric", "apply", str(EXAMPLE), "--db",
                  cluster.remotes()).returncode == 0
    a = Planner(cluster.remotes(), "A", 30)
    b = None
    try:
        assert _until(a, lambda s: s == "planned") == "planned"
        assert a.epoch == 1
        # A new generation, which A sees (and would plan).
        m = write_map(str(tmp_path), "m6.yaml", 6)
        assert daqctl("fabric", "apply", m, "--db",
                      cluster.remotes()).returncode == 0
        a.db.run_until(lambda: a.db.generation() == 2, "generation 2")
        # B holds the same lock on another member (locks live in one
        # server and are not replicated: what a leader change can leave
        # behind) and takes over.  A's replica does not hear of it.
        follower = next(i for i in range(1, 4) if i != cluster.leader())
        b = Planner(cluster.remote(follower), "B", 30, leader_only=False)
        wait_for(lambda: b.take_over().startswith("took over"),
                 "B to take over")
        assert b.epoch == 2
        a.db.run = lambda: None             # type: ignore[assignment]
        assert a.has_lock() and a.epoch == 1
        what = a.step()
        assert what.startswith("deposed"), what
        assert a.epoch is None
    finally:
        a.close()
        if b is not None:
            b.close()
    db = FabricDb(cluster.remotes(), 30)
    try:
        fab = db.root()
        # A wrote nothing: generation 2 is not planned, no DCM of it has
        # an assignment, the epoch is B's.
        assert fab.planner_epoch == 2 and fab.planner == "B"
        assert fab.planned_generation == 1
        assert sorted(db.assignments()) == ["dcm1", "dcm2", "dcm3",
                                            "dcm4"]
    finally:
        db.close()


@pytest.mark.parametrize("when", ["built", "sent"])
def test_leader_killed_at_commit(cluster: Cluster, tmp_path: Path,
                                 monkeypatch: Any, when: str) -> None:
    """The leader dies with the transaction built but not sent, or sent
    and not answered: the apply goes to the new leader and lands once."""
    import ovs.db.idl
    m = write_map(str(tmp_path), "m.yaml", 300)
    state = FabricMapReader(m).read()
    db = FabricDb(cluster.remotes(), 90)
    killed: List[int] = []
    real_commit = ovs.db.idl.Transaction.commit

    def commit(txn: Any) -> Any:
        if not killed and when == "built":
            killed.append(cluster.leader())
            cluster.kill(killed[0])
        status = real_commit(txn)
        if not killed and when == "sent":
            killed.append(cluster.leader())
            cluster.kill(killed[0])
        return status

    monkeypatch.setattr(ovs.db.idl.Transaction, "commit", commit)
    try:
        gen = db.apply(state, state_digest(state), "test", "test")
    finally:
        monkeypatch.undo()
        db.close()
    assert killed and killed[0] > 0
    assert gen == 1
    got = db_content(cluster.remotes())
    assert got["generation"] == 1 and got["state"] == state_json(state)


def test_status_judges_liveness_by_its_own_clock(cluster: Cluster) -> None:
    """fabric status: a node is up when a report of it arrives while the
    command listens, whatever the row's 'updated' (its writer's wall
    clock) says: a stopped agent whose clock ran a minute ahead is not
    up (it was before: its report looked fresh), and an agent that
    reports, with its clock an hour behind, is (it was DOWN)."""
    import threading
    remotes = cluster.remotes()
    assert daqctl("fabric", "apply", str(EXAMPLE), "--db",
                  remotes).returncode == 0
    _report(remotes, "spine1", 1, -60 * 1000, interval=500)
    stop = threading.Event()

    def reporter() -> None:
        while not stop.is_set():
            _report(remotes, "spine2", 1, 3600 * 1000, interval=500)
            stop.wait(0.1)
    t = threading.Thread(target=reporter, daemon=True)
    t.start()
    try:
        time.sleep(0.5)
        p = daqctl("fabric", "status", "--json", "--db", remotes)
    finally:
        stop.set()
        t.join()
    assert p.returncode == 0, p.stderr
    nodes = {n["switch"]: n for n in json.loads(p.stdout)["fabric"]["nodes"]}
    assert nodes["spine1"]["up"] is False, nodes["spine1"]
    assert nodes["spine1"]["liveness"] == "silent"
    assert nodes["spine2"]["up"] is True, nodes["spine2"]
    p = daqctl("fabric", "status", "--db", remotes)
    line = next(ln for ln in p.stdout.splitlines() if " spine1 " in ln)
    assert "SILENT" in line, p.stdout
    assert "not heard from for" in p.stdout


def test_status_listen_0_reads_without_listening(cluster: Cluster) -> None:
    """fabric status --listen 0 (daq-incast's, which wants only the
    assignments): no node is judged, every one with an agent is
    'unknown', however fresh its report; the DCMs are all there."""
    remotes = cluster.remotes()
    assert daqctl("fabric", "apply", str(EXAMPLE), "--db",
                  remotes).returncode == 0
    _report(remotes, "spine1", 1, 0, interval=500)
    p = daqctl("fabric", "status", "--json", "--listen", "0", "--db",
               remotes)
    assert p.returncode == 0, p.stderr
    fab = json.loads(p.stdout)["fabric"]
    nodes = {n["switch"]: n for n in fab["nodes"]}
    assert nodes["spine1"]["liveness"] == "unknown", nodes["spine1"]
    assert nodes["spine1"]["up"] is False
    assert fab["dcms"]


@pytest.mark.parametrize("value", ["-1", "61", "soon"])
def test_status_listen_refuses_a_bad_value(value: str) -> None:
    p = daqctl("fabric", "status", "--listen", value, "--db",
               "unix:/nonexistent")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "not a number of seconds from 0 to 60" in p.stderr


def _report(remote: str, node: str, generation: int, age_ms: int,
            failed: Optional[int] = None, error: Optional[str] = None,
            interval: int = 60000) -> None:
    """Writes a Node row as an agent would ('failed': the generation
    whose apply failed, with 'error')."""
    from ovs_daqring.fabric.db import now_ms
    db = FabricDb(remote, 30)
    try:
        def build(txn: Any) -> None:
            rows = {r.name: r for r in db.rows("Node")}
            r = rows.get(node) or txn.insert(db.idl.tables["Node"])
            r.name = node
            r.agent = "test"
            r.generation = generation
            r.report_interval = interval   # 60 s: up for 3 minutes
            r.updated = now_ms() - age_ms
            r.failed_generation = [] if failed is None else [failed]
            r.error = [] if error is None else [error]
        status, _ = db.commit(build, "test node")
        assert status == "success", status
    finally:
        db.close()


def test_apply_wait_judges_the_nodes_that_are_up(cluster: Cluster) -> None:
    assert daqctl("fabric", "apply", str(EXAMPLE), "--db",
                  cluster.remotes()).returncode == 0
    # spine1 is up and has applied generation 1; spine2 reported long ago
    # (down); the leaves never reported.
    _report(cluster.remotes(), "spine1", 1, 0)
    _report(cluster.remotes(), "spine2", 0, 3600 * 1000)
    p = daqctl("fabric", "apply", str(EXAMPLE), "--wait", "--timeout", "3",
               "--db", cluster.remotes())
    # Generation 2: spine1, up, lags.
    assert p.returncode == 1, p.stdout + p.stderr
    assert "did not apply generation 2" in p.stdout and "spine1" in p.stdout
    assert "down (not waited for): hlt-leaf1, ros-leaf1, spine2" in p.stdout
    _report(cluster.remotes(), "spine1", 3, 0)
    p = daqctl("fabric", "apply", str(EXAMPLE), "--wait", "--timeout", "30",
               "--db", cluster.remotes(), "-f", "json")
    assert p.returncode == 0, p.stdout + p.stderr
    rep = json.loads(p.stdout)["fabric"]
    assert rep["generation"] == 3 and rep["applied"] == ["spine1"]
    assert rep["lagging"] == [] and "spine2" in rep["down"]


def test_wait_verdict_counts_failures_of_the_generation_only() -> None:
    """A node that is up and did not apply generation G lags; it refused
    G if its last failure is of G or of a later generation (which
    superseded G), never of an earlier one (stale: its agent may not
    have tried G yet).  A node that applied G did, whatever it failed
    before or after."""
    from ovs_daqring.fabric.commands import wait_verdict

    def node(name: str, gen: int, failed: Optional[int] = None,
             up: bool = True) -> Dict[str, Any]:
        return {"switch": name, "up": up, "generation": gen,
                "failed_generation": failed,
                "error": None if failed is None else "no DPDK"}

    v = wait_verdict([node("a", 5), node("b", 4, 4), node("c", 4, 5),
                      node("d", 4, 6), node("e", 5, 5), node("f", 6, 6),
                      node("g", 2, 5, up=False), node("h", 4)], 5)
    assert v == {"applied": ["a", "e", "f"],
                 "lagging": ["b", "c", "d", "h"],
                 "refused": {"c": "no DPDK", "d": "no DPDK"},
                 "down": ["g"]}


def test_apply_wait_ends_on_a_failure_of_its_generation(
        cluster: Cluster) -> None:
    """'apply --wait' returns once every node that is up applied the new
    generation or reported that it failed to (Node:failed_generation),
    naming those and their error, without waiting for its --timeout; a
    failure of an earlier generation does not end the wait."""
    remotes = cluster.remotes()
    assert daqctl("fabric", "apply", str(EXAMPLE), "--db",
                  remotes).returncode == 0
    # Both spines up; spine1 failed generation 1, spine2 applied it.
    _report(remotes, "spine1", 0, 0, failed=1, error="no DPDK here")
    _report(remotes, "spine2", 1, 0)
    p = daqctl("fabric", "apply", str(EXAMPLE), "--wait", "--timeout", "3",
               "--db", remotes, "-f", "json")
    # Generation 2: spine1's failure is stale, and neither applied it.
    assert p.returncode == 1, p.stdout + p.stderr
    rep = json.loads(p.stdout)["fabric"]
    assert rep["generation"] == 2 and rep["refused"] == {}, rep
    assert rep["lagging"] == ["spine1", "spine2"], rep
    # Generation 3, waited for with a long timeout: spine1 fails it,
    # spine2 applies it, while the command waits.  A planner holds the
    # lock (else the command says at once that none does); it does not
    # plan: the reports stand in for the plan's.
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    planner = Planner(remotes, "idle", 30)
    proc = None
    try:
        wait_for(lambda: planner.take_over().startswith(
            ("took over", "planner")), "the planner to take over")
        proc = subprocess.Popen([PYTHON, str(DAQCTL), "fabric", "apply",
                                 str(EXAMPLE), "--wait", "--timeout", "600",
                                 "--db", remotes],
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        db = FabricDb(remotes, 30)
        try:
            wait_for(lambda: planner.db.run() or db.run()
                     or db.generation() == 3, "generation 3")
        finally:
            db.close()
        _report(remotes, "spine1", 0, 0, failed=3, error="no DPDK here")
        _report(remotes, "spine2", 3, 0)
        wait_for(lambda: planner.db.run() or proc.poll() is not None,
                 "the command to end", 120)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        planner.close()
    assert proc.returncode == 1, out + err
    assert ("node spine1 failed to apply generation 3: no DPDK here"
            in out), out
    assert "within" not in out, out
    p = daqctl("fabric", "status", "--listen", "0", "--db", remotes)
    assert p.returncode == 0, p.stderr
    assert "failed generation 3" in p.stdout and "no DPDK here" in p.stdout


# ============================================================ unreachable
def _run_until(dbs: List[FabricDb], cond: Callable[[], bool], what: str,
               timeout: float = 60) -> None:
    def once() -> bool:
        for d in dbs:
            d.run()
        return cond()
    wait_for(once, what, timeout)


def test_all_members_down_is_unreachable_until_back(cluster: Cluster) -> None:
    """connected() follows the session, not the IDL's last state: every
    member killed, a leader-only client and an any-member client say the
    database is unreachable (and a planner that it is not connected,
    which gives up its epoch); back when the members restart, the
    planner with a new epoch."""
    assert daqctl("fabric", "apply", str(EXAMPLE), "--db",
                  cluster.remotes()).returncode == 0
    lead = FabricDb(cluster.remotes(), 30)
    anyone = FabricDb(cluster.remotes(), 30, leader_only=False)
    a = Planner(cluster.remotes(), "A", 30)
    try:
        assert lead.connected() and lead.unreachable() is None
        assert _until(a, lambda s: s == "planned") == "planned"
        assert a.epoch == 1
        for i in list(cluster.procs):
            cluster.kill(i)
        _run_until([lead, anyone], lambda: not lead.connected()
                   and not anyone.connected(), "the clients to see that "
                   "every member is gone")
        for d in (lead, anyone):
            why = d.unreachable()
            assert why is not None
            assert why.startswith("the fabric database is unreachable")
            assert d.root() is not None     # the last copy is kept
        what = _until(a, lambda s: s.startswith("not connected"))
        assert "unreachable" in what and a.epoch is None
        assert not a.has_lock()
        p = daqctl("fabric", "status", "--db", cluster.remotes(),
                   "--timeout", "3")
        assert p.returncode == 1
        assert "the fabric database is unreachable" in p.stderr, p.stderr
        for i in range(1, 4):
            cluster.start(i)
        wait_for(cluster.leader, "a leader again")
        _run_until([lead, anyone], lambda: lead.connected()
                   and anyone.connected(), "the clients to connect again")
        assert lead.unreachable() is None and lead.generation() == 1
        assert _until(a, lambda s: s in ("planned", "unchanged")) in (
            "planned", "unchanged")
        assert a.epoch == 2
    finally:
        lead.close()
        anyone.close()
        a.close()


@pytest.mark.parametrize("when", ["built", "sent"])
def test_every_member_killed_at_commit(cluster: Cluster, tmp_path: Path,
                                       monkeypatch: Any, when: str) -> None:
    """The whole cluster dies with the transaction built or sent: the
    apply fails at its timeout saying that the database is unreachable
    (and, sent, that it may have been committed); nothing half-done."""
    import ovs.db.idl
    m = write_map(str(tmp_path), "m.yaml", 20)
    state = FabricMapReader(m).read()
    db = FabricDb(cluster.remotes(), 8)
    real_commit = ovs.db.idl.Transaction.commit
    killed: List[int] = []

    def kill_all() -> None:
        for i in list(cluster.procs):
            killed.append(i)
            cluster.kill(i)

    def commit(txn: Any) -> Any:
        if not killed and when == "built":
            kill_all()
        if not killed and when == "sent":
            # Frozen before the send, killed after: the transaction sits
            # unread in their sockets.  (Killed one by one without this,
            # the members left could commit it and answer first.)
            for p in cluster.procs.values():
                p.send_signal(signal.SIGSTOP)
        status = real_commit(txn)
        if not killed and when == "sent":
            kill_all()
        return status

    monkeypatch.setattr(ovs.db.idl.Transaction, "commit", commit)
    try:
        with pytest.raises(DaqctlError) as e:
            db.apply(state, state_digest(state), "test", "test")
    finally:
        monkeypatch.undo()
        db.close()
    assert sorted(killed) == [1, 2, 3]
    assert "the fabric database is unreachable" in str(e.value), e.value
    if when == "sent":
        assert "may or may not have been committed" in str(e.value)
        # Its own exit status: the outcome is not known.
        assert e.value.status == EXIT_MAYBE_COMMITTED, e.value.status
        assert "the map may have been committed" in str(e.value)
    for i in range(1, 4):
        cluster.start(i)
    wait_for(cluster.leader, "a leader again")
    got = db_content(cluster.remotes())
    assert (got["generation"], got["state"]["dcms"]) == (0, []) or (
        got["generation"] == 1 and got["state"] == state_json(state))


# ============================================================== try again
def test_apply_builds_again_after_a_concurrent_change(
        cluster: Cluster, tmp_path: Path, monkeypatch: Any) -> None:
    """Another client changes the generation (which an apply verifies)
    between the apply's build and its commit: TRY_AGAIN, and the apply
    builds again at once from the new contents and lands on top."""
    import ovs.db.idl
    m5 = FabricMapReader(write_map(str(tmp_path), "m5.yaml", 5)).read()
    m7 = FabricMapReader(write_map(str(tmp_path), "m7.yaml", 7)).read()
    db = FabricDb(cluster.remotes(), 120)
    other = FabricDb(cluster.remotes(), 30)
    assert db.apply(m5, state_digest(m5), "test", "m5") == 1
    real_commit = ovs.db.idl.Transaction.commit
    done: List[int] = []

    def commit(txn: Any) -> Any:
        if txn.idl is db.idl and not done:
            done.append(other.apply(m7, state_digest(m7), "other", "m7"))
        return real_commit(txn)

    monkeypatch.setattr(ovs.db.idl.Transaction, "commit", commit)
    try:
        gen = db.apply(m5, state_digest(m5), "test", "m5 again")
    finally:
        monkeypatch.undo()
        db.close()
        other.close()
    assert done == [2]
    assert gen == 3 and db.attempts == 2
    got = db_content(cluster.remotes())
    assert got["generation"] == 3 and got["state"] == state_json(m5)


def _planner_behind(cluster: Cluster, tmp_path: Path) -> Planner:
    """A planner that planned generation 1 (the example) and has seen
    generation 2 (6 DCMs) come, not planned yet."""
    assert daqctl("fabric", "apply", str(EXAMPLE), "--db",
                  cluster.remotes()).returncode == 0
    a = Planner(cluster.remotes(), "A", 120)
    try:
        assert _until(a, lambda s: s == "planned") == "planned"
        m6 = write_map(str(tmp_path), "m6.yaml", 6)
        assert daqctl("fabric", "apply", m6, "--db",
                      cluster.remotes()).returncode == 0
        a.db.run_until(lambda: a.db.generation() == 2, "generation 2")
    except BaseException:
        a.close()
        raise
    return a


def _first_commit_of(monkeypatch: Any, idl: Any,
                     before: Callable[[], Any]) -> List[Any]:
    """Makes the next commit of a transaction on IDL call BEFORE first;
    returns the list that gets what it returned."""
    import ovs.db.idl
    real_commit = ovs.db.idl.Transaction.commit
    done: List[Any] = []

    def commit(txn: Any) -> Any:
        if txn.idl is idl and not done:
            done.append(before())
        return real_commit(txn)
    monkeypatch.setattr(ovs.db.idl.Transaction, "commit", commit)
    return done


def test_planner_plans_again_after_a_concurrent_apply(
        cluster: Cluster, tmp_path: Path, monkeypatch: Any) -> None:
    """A new generation lands between a planner's plan and its commit:
    the round plans again at once, from the new generation (not a round
    later), and it is the planner still."""
    a = _planner_behind(cluster, tmp_path)
    try:
        m7 = FabricMapReader(write_map(str(tmp_path), "m7.yaml", 7)).read()
        other = FabricDb(cluster.remotes(), 30)
        done = _first_commit_of(monkeypatch, a.db.idl, lambda: other.apply(
            m7, state_digest(m7), "o", "m7"))
        try:
            what = a.step()
        finally:
            monkeypatch.undo()
            other.close()
        assert done == [3]
        assert what == "planned" and a.epoch == 1
    finally:
        a.close()
    db = FabricDb(cluster.remotes(), 30)
    try:
        fab = db.root()
        assert fab.planned_generation == 3 and fab.planner_epoch == 1
        assert sorted(db.assignments()) == ["dcm%d" % k for k in range(7)]
    finally:
        db.close()


def test_planner_deposed_at_commit_writes_nothing(
        cluster: Cluster, tmp_path: Path, monkeypatch: Any) -> None:
    """Another planner takes over (the epoch changes) between a
    planner's plan and its commit: its transaction fails, it retries
    nothing, it is deposed, and nothing of its plan is written."""
    a = _planner_behind(cluster, tmp_path)
    try:
        other = FabricDb(cluster.remotes(), 30)

        def take_over(txn: Any) -> None:
            f = other.root()
            f.verify("planner_epoch")
            f.planner_epoch = int(f.planner_epoch) + 1
            f.planner = "B"

        done = _first_commit_of(monkeypatch, a.db.idl, lambda: other.commit(
            take_over, "B takes over")[0])
        try:
            what = a.step()
        finally:
            monkeypatch.undo()
            other.close()
        assert done == ["success"]
        assert what.startswith("deposed"), what
        assert a.epoch is None and a.db.attempts == 1
    finally:
        a.close()
    db = FabricDb(cluster.remotes(), 30)
    try:
        fab = db.root()
        assert fab.planner == "B" and fab.planner_epoch == 2
        assert fab.planned_generation == 1
        assert sorted(db.assignments()) == ["dcm1", "dcm2", "dcm3",
                                            "dcm4"]
    finally:
        db.close()


# ============================================================ _Server monitor
def test_commits_of_others_send_no_server_row_update(
        cluster: Cluster) -> None:
    """Every commit changes the clustered database's _Server.Database row
    (its index).  A client (an agent) is not sent that row at each commit
    of another: neither the database's schema nor its index (each would
    wake every agent at every report of any other), while it receives
    the commits' changes themselves and knows the row's schema from its
    initial contents."""
    p = daqctl("fabric", "apply", str(EXAMPLE), "--db", cluster.remotes())
    assert p.returncode == 0, p.stderr
    db = FabricDb(cluster.remotes(), 30, leader_only=False)
    writer = FabricDb(cluster.remotes(), 30)
    try:
        rows = db.idl.server_tables["Database"].rows
        r = next(r for r in rows.values() if r.name == "daqfabric")
        assert r.schema, "the schema is known (initial contents)"
        assert r.connected, "the member is connected to its cluster"

        seen: List[Any] = []
        recv = db.idl._session.recv

        def spy() -> Any:
            msg = recv()
            if msg is not None and msg.params and (
                    msg.params[0] == str(db.idl.server_monitor_uuid)):
                seen.append(msg.params[1])
            return msg
        db.idl._session.recv = spy
        for k in range(3):
            status, _ = writer.commit(
                lambda txn, k=k: setattr(writer.root(), "external_ids",
                                         {"k": str(k)}), "test %d" % k)
            assert status == "success"
        db.run_until(lambda: (db.root() is not None
                              and db.root().external_ids.get("k") == "2"),
                     "the 3 commits seen")
        assert not seen, ("updates of the _Server.Database row at others' "
                          "commits: %s" % seen)
        # The members are not stale: none was left for being behind.
        assert db.idl.stale_left == 0
    finally:
        writer.close()
        db.close()


def test_a_member_older_than_what_was_seen_is_left(
        cluster: Cluster) -> None:
    """A client that saw a newer generation than a member holds (a member
    catching up after a restart, say) leaves that member for another
    before it uses its rows, as the IDL's own check by the _Server index
    would (which is not monitored: see the test above); once a member
    holds what it saw, it stays."""
    p = daqctl("fabric", "apply", str(EXAMPLE), "--db", cluster.remotes())
    assert p.returncode == 0, p.stderr
    db = FabricDb(cluster.remotes(), 30, leader_only=False)
    try:
        cid, gen = db.idl.newest
        assert cid is not None and gen[0] >= 1, db.idl.newest
        # As if this client had seen a later generation of the cluster
        # than any member holds now.
        db.idl.newest = (cid, (gen[0] + 5, gen[1]))
        db.idl.force_reconnect()
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            db.run()
            assert not db.connected(), (
                "synced on a member older than what it saw")
            poller = ovs.poller.Poller()
            db.idl.wait(poller)
            poller.timer_wait(50)
            poller.block()
        assert db.idl.stale_left >= 1
        left = db.idl.stale_left
        db.idl.newest = (cid, gen)
        db.run_until(db.connected, "connected to a member")
        assert db.idl.stale_left == left
    finally:
        db.close()
