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

"""'ovs-daqctl fabric apply' exactly once (an apply whose answer was lost
is recognised by its id in the Fabric row's history of applies, even
after others landed on top of it, and is not written again over them),
'fabric apply --wait' without a planner (it says so and fails, not
after --timeout), and --wait judging the nodes by its own clock where
it can (not by the writers' wall clocks).  Against a real three-member
clustered ovsdb-server.

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_apply_once.py
"""

import json
import os
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator, List

import pytest

from ovs_daqring.fabric import db as fdb
from ovs_daqring.fabric.db import FabricDb, Txn
from ovs_daqring.fabric.fabmap import FabricMapReader, state_digest, state_json
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


def _daqctl(*args: str) -> List[str]:
    return [PYTHON, str(DAQCTL)] + list(args)


def _env() -> Any:
    return dict(os.environ, PYTHONPATH=str(ROOT / "python"))


def _map(d: Path, name: str, n_dcms: int) -> Any:
    """The example fabric with 'n_dcms' DCMs on hlt1, as a state."""
    text = EXAMPLE.read_text().split("defaults:")[0]
    text += "defaults:\n  rate: 190mbit\ndcms:\n"
    for k in range(n_dcms):
        text += ('  - {name: dcm%d, host: hlt1, tuples: ["*:*->10.1.0.1:%d"]}'
                 "\n" % (k, 10000 + k))
    p = d / name
    p.write_text(text)
    return FabricMapReader(str(p)).read()


def _content(remote: str) -> Any:
    db = FabricDb(remote, 30)
    try:
        return db.generation(), state_json(db.state())
    finally:
        db.close()


def _write_report(db: FabricDb, node: str, generation: int,
                  interval_ms: int = 60000, skew_ms: int = 0) -> None:
    """A Node row of 'node' as its agent writes it, at 'generation', with
    a heartbeat of 'interval_ms', by a clock 'skew_ms' ahead of ours."""
    def build(txn: Any) -> None:
        rows = {r.name: r for r in db.rows("Node")}
        r = rows.get(node) or txn.insert(db.idl.tables["Node"])
        r.name = node
        r.agent = "test"
        r.generation = generation
        r.report_interval = interval_ms
        r.updated = fdb.now_ms() + skew_ms
    status, _ = db.commit(build, "test node")
    assert status == Txn.SUCCESS, status


def _report_up_to_date(remote: str, node: str, generation: int) -> None:
    """A Node row of 'node' as its agent writes it, up (fresh, a minute's
    heartbeat), at 'generation'."""
    db = FabricDb(remote, 30)
    try:
        _write_report(db, node, generation)
    finally:
        db.close()


def _wait_with_planner(remotes: str, timeout: int,
                       beat: Any = None) -> Any:
    """'fabric apply EXAMPLE --wait -f json' while a planner holds the
    lock (and does not plan), calling beat() meanwhile; its process."""
    db = FabricDb(remotes, 30)
    try:
        empty = db.root() is None
    finally:
        db.close()
    if empty:
        # A planner takes over a fabric.
        assert subprocess.run(_daqctl("fabric", "apply", str(EXAMPLE),
                                      "--db", remotes), env=_env(),
                              timeout=120).returncode == 0
    planner = Planner(remotes, "idle", 30)
    try:
        wait_for(lambda: planner.take_over().startswith(("took over",
                                                         "planner")),
                 "the planner to take over")
        proc = subprocess.Popen(_daqctl("fabric", "apply", str(EXAMPLE),
                                        "--wait", "--timeout", str(timeout),
                                        "--db", remotes, "-f", "json"),
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=_env())
        try:
            end = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < end:
                planner.db.run()
                if beat is not None:
                    beat()
                time.sleep(0.1)
            proc.out, proc.err = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert planner.has_lock()
    finally:
        planner.close()
    return proc


# ============================================================ exactly once
def test_lost_answer_is_not_written_again_over_a_later_apply(
        cluster: Cluster, tmp_path: Path, monkeypatch: Any) -> None:
    """A's transaction commits, its answer is lost (the IDL says
    TRY_AGAIN, as when the leader dies with it in flight), B applies,
    and A builds again: it finds its id in the history, reports that it
    was committed as generation 1 and writes nothing: B's map stays.
    (With the last apply id alone, A wrote itself again over B.)"""
    a = _map(tmp_path, "a.yaml", 5)
    b = _map(tmp_path, "b.yaml", 7)
    db = FabricDb(cluster.remotes(), 60)
    other = FabricDb(cluster.remotes(), 30)
    real = fdb.commit_block
    landed: List[int] = []

    def commit_block(idl: Any, txn: Any, deadline: float,
                     remote: str) -> Any:
        status = real(idl, txn, deadline, remote)
        if idl is db.idl and not landed:
            assert status == Txn.SUCCESS, status
            # B lands on top of A before A hears of its own commit.
            landed.append(other.apply(b, state_digest(b), "B", "B"))
            return Txn.TRY_AGAIN
        return status

    monkeypatch.setattr(fdb, "commit_block", commit_block)
    try:
        gen = db.apply(a, state_digest(a), "A", "A")
    finally:
        monkeypatch.undo()
        other.close()
        db.close()
    assert landed == [2]
    assert gen == 1 and db.earlier and db.attempts == 1
    assert _content(cluster.remotes()) == (2, state_json(b))


def test_history_is_bounded_and_keeps_other_keys() -> None:
    ext = {"owner": "ops", "apply:bad": "x"}
    for g in range(1, 101):
        ext = fdb.history_with(ext, "id%d" % g, g)
    hist = fdb.apply_history(SimpleNamespace(external_ids=ext,
                                             apply_id="id100",
                                             generation=100))
    assert len(hist) == fdb.APPLY_HISTORY
    assert hist == {"id%d" % g: g for g in range(37, 101)}
    assert ext["owner"] == "ops" and "apply:bad" not in ext
    # Rows are input: entries that are not a generation are left out.
    row = SimpleNamespace(external_ids={"apply:x": "nine", "apply:y": "-1",
                                        "apply:": "3", "apply:z": "4"},
                          apply_id="", generation=4)
    assert fdb.apply_history(row) == {"z": 4}


# =================================================== apply --wait, planner
def test_apply_wait_without_a_planner_says_so(cluster: Cluster) -> None:
    """A node is up, and no planner holds the planner lock: 'apply
    --wait' fails at once saying so (the node would never report the
    generation: it reports the planned one), not after --timeout."""
    remotes = cluster.remotes()
    _report_up_to_date(remotes, "spine1", 0)
    p = subprocess.run(_daqctl("fabric", "apply", str(EXAMPLE), "--wait",
                               "--timeout", "600", "--db", remotes),
                       capture_output=True, text=True, env=_env(),
                       timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "no planner holds the planner lock" in p.stderr, p.stderr
    assert "generation 1 is written" in p.stderr, p.stderr


def test_apply_wait_with_a_planner_that_holds_the_lock(
        cluster: Cluster) -> None:
    """A planner holds the lock but does not plan: 'apply --wait' waits
    (its --timeout), and does not say that there is no planner."""
    remotes = cluster.remotes()
    assert subprocess.run(_daqctl("fabric", "apply", str(EXAMPLE), "--db",
                                  remotes), env=_env(),
                          timeout=120).returncode == 0
    _report_up_to_date(remotes, "spine1", 0)
    planner = Planner(remotes, "idle", 30)
    try:
        wait_for(lambda: planner.take_over().startswith(("took over",
                                                         "planner")),
                 "the planner to take over")
        proc = subprocess.Popen(_daqctl("fabric", "apply", str(EXAMPLE),
                                        "--wait", "--timeout", "8", "--db",
                                        remotes),
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=_env())
        try:
            # The planner's connection stays alive (its IDL runs).
            end = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < end:
                planner.db.run()
                time.sleep(0.05)
            out, err = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert planner.has_lock()
    finally:
        planner.close()
    assert proc.returncode == 1, out + err
    assert "did not apply generation 2 within 8 s: spine1" in out, out
    assert "no planner" not in out + err, out + err


# ====================================================== --wait, one clock
def test_apply_wait_judges_a_silent_node_by_its_own_clock(
        cluster: Cluster) -> None:
    """A node whose clock is an hour ahead wrote its last report and fell
    silent: by its 'updated', it looks fresh for an hour.  'apply
    --wait' hears nothing from it for 3 of its heartbeats (0.5 s) by its
    own clock, and does not wait for it: down."""
    remotes = cluster.remotes()
    db = FabricDb(remotes, 30)
    try:
        _write_report(db, "spine1", 0, interval_ms=500,
                      skew_ms=3600 * 1000)
    finally:
        db.close()
    proc = _wait_with_planner(remotes, 30)
    assert proc.returncode == 0, proc.out + proc.err
    rep = json.loads(proc.out)["fabric"]
    assert "spine1" in rep["down"] and rep["lagging"] == [], rep


def test_apply_wait_judges_a_reporting_node_by_its_own_clock(
        cluster: Cluster) -> None:
    """A node whose clock is an hour behind reports every 0.3 s: by its
    'updated' it looks down, but 'apply --wait' hears it report, and it
    is up: it lags (it never applies the generation here)."""
    remotes = cluster.remotes()
    _report_up_to_date(remotes, "spine1", 0)
    db = FabricDb(remotes, 30)
    try:
        def beat() -> None:
            _write_report(db, "spine2", 0, interval_ms=300,
                          skew_ms=-3600 * 1000)
        beat()
        proc = _wait_with_planner(remotes, 5, beat)
    finally:
        db.close()
    assert proc.returncode == 1, proc.out + proc.err
    rep = json.loads(proc.out)["fabric"]
    assert rep["lagging"] == ["spine1", "spine2"], rep
