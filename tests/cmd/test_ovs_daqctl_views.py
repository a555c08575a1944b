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

"""What ovs-daqctl tells about a switch, against an ovsdb-server alone
with the Open_vSwitch schema (no ovs-vswitchd, no root, no huge pages):
the test writes the status and statistics that ovs-vswitchd would.

- "show" and "top" flag a daqring whose configuration the switch refused
  (status:config_error), and print rates in bit/s as the input is read;
- "top" lists the worst daqrings first, refreshes, and --limit keeps the
  worst;
- a bad map is refused with its problems and the switch's in one pass;
- offline "check" names no database it did not contact.

Run: /usr/bin/python3 -m pytest -q tests/cmd/test_ovs_daqctl_views.py
"""

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator, List

import pytest

from ovs_daqring.process import die_with_parent, stop_process

ROOT = Path(__file__).resolve().parent.parent.parent
DAQCTL = ROOT / "utilities" / "ovs-daqctl"
OVS = ROOT / "ovs"
PYTHON = "/usr/bin/python3"
BIN = {"ovsdb_server": OVS / "ovsdb" / "ovsdb-server",
       "ovsdb_tool": OVS / "ovsdb" / "ovsdb-tool",
       "vsctl": OVS / "utilities" / "ovs-vsctl"}
SCHEMA = OVS / "vswitchd" / "vswitch.ovsschema"
WAIT_S = 30


@pytest.fixture
def db() -> Iterator[SimpleNamespace]:
    """An ovsdb-server with the Open_vSwitch schema, bridge br0 with port
    p1, and iface_types saying daqrings are supported: its remote ('db'),
    ovs-vsctl --no-wait on it ('vsctl') and ovs-daqctl on it
    ('daqctl')."""
    for b in list(BIN.values()) + [SCHEMA]:
        if not b.exists():
            pytest.skip("the patched OVS is not built (%s missing): run "
                        "make" % b)
    d = tempfile.mkdtemp(prefix="daqctl-v-")     # short: sun_path
    sock = os.path.join(d, "db.sock")
    subprocess.run([str(BIN["ovsdb_tool"]), "create",
                    os.path.join(d, "conf.db"), str(SCHEMA)], check=True)
    server = subprocess.Popen(
        [str(BIN["ovsdb_server"]), os.path.join(d, "conf.db"),
         "--remote=punix:" + sock,
         "--unixctl=" + os.path.join(d, "ovsdb-server.ctl"),
         "--log-file=" + os.path.join(d, "ovsdb-server.log"),
         "-vconsole:off"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)

    def vsctl(*args: str) -> str:
        return subprocess.run(
            [str(BIN["vsctl"]), "--db=unix:" + sock, "--no-wait",
             "--timeout=%d" % WAIT_S] + list(args),
            check=True, capture_output=True, text=True).stdout.strip()

    def daqctl(*args: str, status: int = 0
               ) -> "subprocess.CompletedProcess[str]":
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
        p = subprocess.run([PYTHON, str(DAQCTL), "--db", "unix:" + sock,
                            "--timeout", str(WAIT_S)] + list(args),
                           capture_output=True, text=True, timeout=120,
                           env=env)
        assert p.returncode == status, p.stdout + p.stderr
        return p
    try:
        deadline = time.monotonic() + WAIT_S
        while not os.path.exists(sock):
            assert server.poll() is None, "ovsdb-server exited"
            assert time.monotonic() < deadline, "no ovsdb-server socket"
            time.sleep(0.05)
        vsctl("init")
        vsctl("set", "Open_vSwitch", ".", "iface_types=daqring", "--",
              "add-br", "br0", "--", "add-port", "br0", "p1")
        yield SimpleNamespace(db="unix:" + sock, vsctl=vsctl, daqctl=daqctl)
    finally:
        stop_process(server)
        shutil.rmtree(d, ignore_errors=True)


def add_ring(db: SimpleNamespace, name: str, size: int, occupancy: int,
             drops: int, extra: List[str] = []) -> None:
    """A daqring (not made by ovs-daqctl) with the status and statistics
    that ovs-vswitchd would write."""
    db.vsctl("add-port", "br0", name, "--", "set", "Interface", name,
             "type=daqring", "ofport=%d" % (10 + len(name)),
             "status:ring_size=%d" % size, "status:max_burst=32",
             "status:poll_interval=500",
             'status:shaping_rate="777.22 Mbps (1518-byte frames, 64000 '
             'pps)"',
             "statistics:occupancy=%d" % occupancy,
             "statistics:high_watermark=%d" % occupancy,
             "statistics:tx_dropped=%d" % drops, *extra)


def test_show_flags_a_refused_configuration(db: SimpleNamespace) -> None:
    add_ring(db, "good", 4096, 0, 0)
    add_ring(db, "dcm7", 4096, 0, 0, [
        "options:max-burst=64",
        'status:config_error="dcm7: invalid max-burst \\"64\\" (expected '
        'an integer from 1 to 32)"'])
    p = db.daqctl("show")
    rows = {ln.split()[1]: ln for ln in p.stdout.splitlines()[2:]
            if not ln.startswith("  !")}
    assert set(rows) == {"good", "dcm7(!)"}, p.stdout
    assert ("  ! dcm7: config_error: the switch refused the configuration "
            "in the database and keeps its previous one: invalid "
            'max-burst "64" (expected an integer from 1 to 32)') in p.stdout
    # Rates as ovs-daqctl reads them (it refuses "mbps" as ambiguous).
    assert "32/500us = 777.22 Mbit/s" in rows["good"]
    assert "Mbps" not in p.stdout
    p = db.daqctl("top", "--once")
    flags = {ln.split()[0]: ln.split()[-1] for ln in p.stdout.splitlines()[2:]}
    assert flags == {"dcm7": "config_error", "good": "-"}, p.stdout


def test_top_worst_first(db: SimpleNamespace) -> None:
    add_ring(db, "calm", 1000, 10, 0)
    add_ring(db, "full", 1000, 900, 0)
    add_ring(db, "dropped", 1000, 0, 50)
    add_ring(db, "half", 1000, 500, 0)
    p = db.daqctl("top", "--once")
    lines = p.stdout.splitlines()
    assert lines[0].startswith("br0 (%s): 4 daqrings" % db.db), p.stdout
    assert lines[1].split() == ["RING", "DCM", "SIZE", "OCCUP", "FILL",
                                "HIGH-WM", "DROPS", "NEW-DROPS", "FLAGS"]
    # The fullest first (no drops since a previous sample: there is none),
    # then those that dropped most.
    assert [ln.split()[0] for ln in lines[2:]] == [
        "full", "half", "calm", "dropped"], p.stdout
    assert "\033[" not in p.stdout           # not a terminal: no clearing
    p = db.daqctl("top", "--once", "--limit", "2")
    assert [ln.split()[0] for ln in p.stdout.splitlines()[2:]] == [
        "full", "half", "...", ]
    assert "2 more daqrings (--limit 0 shows them all)" in p.stdout
    # Two refreshes: the second says what dropped since the first (here
    # nothing: nobody writes the statistics).
    p = db.daqctl("top", "-n", "2", "--interval", "0.1")
    tables = p.stdout.split("\n\n")
    assert len(tables) == 2, p.stdout
    assert tables[1].splitlines()[2].split()[7] == "0"
    js = json.loads(db.daqctl("top", "--once", "-f", "json").stdout)
    rows = js["switches"][0]["dcms"]
    assert [r["ring"] for r in rows] == ["full", "half", "calm", "dropped"]
    assert rows[0]["fill"] == 0.9 and rows[3]["drops"] == 50
    db.daqctl("top", "--interval", "0", status=2)


def test_bad_map_and_switch_problems_in_one_pass(
        db: SimpleNamespace, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("dcms:\n"
                   "  - {name: dcm1, ip: 10.0.0.1, egress: p1, ring-size: 0}\n"
                   "  - {name: dcm2, ip: 10.0.0.2, egress: p9}\n")
    for argv in (["apply", str(bad)], ["check", "--live", str(bad)]):
        p = db.daqctl(*argv, status=2)
        assert "%s:2: DCM dcm1: ring-size 0 out of range" % bad in p.stderr
        assert ("%s:3: DCM dcm2: egress port p9 is not on bridge br0"
                % bad) in p.stderr
        assert "refused (2 problems); nothing changed" in p.stderr
    assert db.vsctl("list-ports", "br0").split() == ["p1"]
    # A switch that cannot be reached: the map's problems, and a word.
    p = subprocess.run([PYTHON, str(DAQCTL), "--db", "unix:/nonexistent",
                        "apply", str(bad)], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, PYTHONPATH=str(
                           ROOT / "python")))
    assert p.returncode == 2
    assert "refused (1 problem); nothing changed" in p.stderr
    assert "switch br0 not checked: unix:/nonexistent" in p.stderr


def test_offline_check_names_no_database(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    p = subprocess.run([PYTHON, str(DAQCTL), "check",
                        str(ROOT / "utilities" / "dcm-map.example.yaml")],
                       capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert "br0: 5 DCMs, map OK" in p.stdout
    assert "unix:" not in p.stdout and "db.sock" not in p.stdout
