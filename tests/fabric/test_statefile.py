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

"""Tests of fabric/statefile.py, a switch agent's --state-file: written
as a daemon's state is (an unpredictable temporary file of mode 0600,
fsync'ed, renamed over the file, its directory fsync'ed), and read
without trusting it (no symbolic link, a regular file of the agent's
own, not writable by others, of a bounded size, every field the agent
reads of the type it reads): a bad file is a log line, never an
exception.  Plain files in a temporary directory, no machine.

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_statefile.py
"""

import copy
import json
import os
import signal
import stat
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from ovs_daqring.daqctl.mapfile import parse_tuple
from ovs_daqring.daqctl.model import Dcm
from ovs_daqring.fabric import statefile
from ovs_daqring.fabric.flows import dcm_json
from ovs_daqring.fabric.switchhold import SwitchHold

NODE = "p0-leaf1"


class Log:
    """statefile's vlog, recorded."""

    def __init__(self) -> None:
        self.lines: List[Tuple[str, str]] = []

    def dbg(self, msg: str) -> None:
        self.lines.append(("dbg", msg))

    def info(self, msg: str) -> None:
        self.lines.append(("info", msg))

    def warn(self, msg: str) -> None:
        self.lines.append(("warn", msg))

    def err(self, msg: str) -> None:
        self.lines.append(("err", msg))

    def warnings(self) -> List[str]:
        return [m for lv, m in self.lines if lv in ("warn", "err")]


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> Log:
    rec = Log()
    monkeypatch.setattr(statefile, "vlog", rec)
    return rec


def want() -> Dict[str, Any]:
    """A want as the agent keeps it (Agent.read_fabric()), with a DCM of
    every field set and a route of every key."""
    full = Dcm(name="dcm1", ring="dq1", egress="h1-p0",
               tuples=(parse_tuple("tcp:10.3.0.1:*->10.1.0.1:9000"),
                       parse_tuple("udp:*:*->10.1.0.1:*")),
               ring_size=1024, max_burst=16, poll_interval=10,
               max_rate=10 ** 9, frame_overhead=24, max_burst_bytes=6168,
               egress_max_rate=10 ** 10, egress_max_burst_bytes=100000,
               numa_id=0, flow_buckets=64, ofport=100, rate="1Gbit",
               steering="bound", dl_dst="02:00:00:00:00:01")
    plain = Dcm(name="dcm2", ring="dq2", egress="h2-p0", ip="10.1.0.2")
    return {
        "version": statefile.CACHE_VERSION, "node": NODE,
        "generation": 7,
        "target": {"db": "unix:/run/openvswitch/db.sock",
                   "bridge": "br0", "of": None},
        "ports": ["up1", "up2"],
        "bfd": {"enable": "true", "min_rx": "100"},
        "bfd_ports": ["up1", "up2"],
        "slice": {
            "rings": [dcm_json(full), dcm_json(plain)],
            "routes": [
                {"dcm": "dcm3", "match": "ip:10.1.1.3", "port": "up1",
                 "backups": ["up2"], "priority": 200, "host": "",
                 "dl_dst": ""},
                {"dcm": "", "match": "ip:10.3.0.0/24", "port": "up2",
                 "backups": [], "priority": 100, "host": "ros1",
                 "dl_dst": "02:00:00:00:00:09"},
                # A route kept by an agent of before the backups,
                # priorities and MACs.
                {"dcm": "dcm4", "match": "from ip:10.1.1.4",
                 "port": "up1"}]}}


def write(path: Path, content: Any, mode: int = 0o600) -> None:
    path.write_text(content if isinstance(content, str)
                    else json.dumps(content))
    path.chmod(mode)


# ------------------------------------------------------------------ save
def test_round_trip(tmp_path: Path, log: Log) -> None:
    path = str(tmp_path / "state.json")
    w = want()
    statefile.save_cache(path, json.dumps(w, sort_keys=True))
    assert statefile.load_cache(path, NODE) == w
    assert log.warnings() == []
    # Saved again over the first.
    w["generation"] = 8
    statefile.save_cache(path, json.dumps(w, sort_keys=True))
    assert statefile.load_cache(path, NODE) == w
    assert sorted(os.listdir(tmp_path)) == ["state.json"]


def test_save_mode_0600_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    old = os.umask(0o022)
    try:
        statefile.save_cache(str(path), json.dumps(want()))
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        # Over a file that an older agent left readable by all.
        path.chmod(0o644)
        statefile.save_cache(str(path), json.dumps(want()))
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_save_temporary_name_is_not_predictable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary file is not PATH.PID.tmp (which anyone who can write
    to the directory could make a link to a file of their choosing) but
    a new name in the state file's directory."""
    path = tmp_path / "state.json"
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / ("state.json.%d.tmp" % os.getpid())).symlink_to(victim)
    names: List[str] = []
    replace = os.replace

    def spy(src: str, dst: str) -> None:
        names.append(src)
        replace(src, dst)
    monkeypatch.setattr(os, "replace", spy)
    statefile.save_cache(str(path), json.dumps(want()))
    assert victim.read_text() == "precious\n"
    assert len(names) == 1
    assert os.path.dirname(names[0]) == str(tmp_path)
    assert names[0] != "%s.%d.tmp" % (path, os.getpid())
    assert json.loads(path.read_text()) == want()


def test_save_failed_leaves_no_temporary_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.json"
    statefile.save_cache(str(path), json.dumps(want()))

    def fail(*_args: Any) -> None:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError):
        statefile.save_cache(str(path), json.dumps(dict(want(),
                                                        generation=8)))
    assert sorted(os.listdir(tmp_path)) == ["state.json"]
    # The old file is whole.
    assert json.loads(path.read_text())["generation"] == 7


def test_save_fsyncs_the_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the rename, the directory is fsync'ed (else a crash can
    leave the old file, or none, after the agent said it kept the new
    one)."""
    synced: List[str] = []
    fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink("/proc/self/fd/%d" % fd))
        fsync(fd)
    monkeypatch.setattr(os, "fsync", spy)
    statefile.save_cache(str(tmp_path / "state.json"), json.dumps(want()))
    assert synced[-1] == os.path.realpath(tmp_path)


def test_save_replaces_a_symlink_not_its_target(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("not the agent's\n")
    path = tmp_path / "state.json"
    path.symlink_to(target)
    statefile.save_cache(str(path), json.dumps(want()))
    assert not path.is_symlink()
    assert target.read_text() == "not the agent's\n"
    assert json.loads(path.read_text()) == want()


# ------------------------------------------------------------------ load
def test_load_refuses_a_symlink(tmp_path: Path, log: Log) -> None:
    target = tmp_path / "elsewhere.json"
    write(target, want())
    path = tmp_path / "state.json"
    # No file: the agent's first start, nothing said.
    assert statefile.load_cache(str(path), NODE) is None
    assert log.warnings() == []
    path.symlink_to(target)
    assert statefile.load_cache(str(path), NODE) is None
    assert any("symbolic link" in m for m in log.warnings())


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666], ids=oct)
def test_load_refuses_a_file_others_may_write(
        tmp_path: Path, log: Log, mode: int) -> None:
    path = tmp_path / "state.json"
    write(path, want(), mode)
    assert statefile.load_cache(str(path), NODE) is None
    assert any("writable" in m for m in log.warnings())
    # An older agent's file (mode 0644 under umask 022) is the agent's
    # own still.
    path.chmod(0o644)
    assert statefile.load_cache(str(path), NODE) == want()


def test_load_refuses_a_file_of_another_user(
        tmp_path: Path, log: Log, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.json"
    write(path, want())
    uid = path.stat().st_uid
    monkeypatch.setattr(os, "geteuid", lambda: uid + 1)
    assert statefile.load_cache(str(path), NODE) is None
    assert any("owned by" in m for m in log.warnings())


def test_load_refuses_what_is_not_a_regular_file(
        tmp_path: Path, log: Log) -> None:
    """A directory, or a FIFO where the file should be: an open() of a
    FIFO for reading would wait for a writer for ever (the agent would
    never start)."""
    path = tmp_path / "state.json"
    path.mkdir()
    assert statefile.load_cache(str(path), NODE) is None
    assert len(log.warnings()) == 1
    path.rmdir()
    os.mkfifo(str(path), 0o600)

    def timeout(*_args: Any) -> None:
        raise TimeoutError("load_cache() blocked on a FIFO")
    old = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(2)
    try:
        assert statefile.load_cache(str(path), NODE) is None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert any("regular file" in m for m in log.warnings())


def test_load_refuses_a_file_too_large(
        tmp_path: Path, log: Log, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.json"
    write(path, want())
    assert statefile.load_cache(str(path), NODE) == want()
    monkeypatch.setattr(statefile, "STATE_FILE_MAX", 100)
    assert statefile.load_cache(str(path), NODE) is None
    assert any("bytes" in m for m in log.warnings())


def test_load_bound_fits_the_largest_slice() -> None:
    """STATE_FILE_MAX holds a ROS leaf's slice of 2048 DCMs of 16
    four-tuples each (a ring and a route each way per DCM) several times
    over."""
    w = want()
    d = Dcm(name="dcm-p1-leaf13-h4-2048", ring="dq2048",
            egress="p1-leaf13-h4",
            tuples=tuple(parse_tuple("tcp:10.3.0.%d:*->10.1.200.250:%d"
                                     % (i + 1, 40000 + i))
                         for i in range(16)),
            max_rate=10 ** 10, frame_overhead=24, max_burst_bytes=100000,
            egress_max_rate=10 ** 11, egress_max_burst_bytes=1000000,
            numa_id=1, ofport=60000, rate="10Gbit",
            dl_dst="02:00:00:00:00:01")
    r = {"dcm": d.name, "match": d.match_text(), "port": "p1-spine2-up",
         "backups": ["p1-spine1-up"], "priority": 200, "host": "",
         "dl_dst": "02:00:00:00:00:01"}
    w["slice"] = {"rings": [dcm_json(d)] * 2048,
                  "routes": [r, dict(r, match="from " + r["match"])] * 2048}
    assert 4 * len(json.dumps(w, sort_keys=True)) < statefile.STATE_FILE_MAX


def drop(w: Dict[str, Any], *keys: Any) -> Dict[str, Any]:
    w = copy.deepcopy(w)
    d = w
    for k in keys[:-1]:
        d = d[k]
    del d[keys[-1]]
    return w


def put(w: Dict[str, Any], value: Any, *keys: Any) -> Dict[str, Any]:
    w = copy.deepcopy(w)
    d = w
    for k in keys[:-1]:
        d = d[k]
    d[keys[-1]] = value
    return w


BAD_FILES = {
    "not JSON": "{\"version\": 1,",
    "an array": [],
    "a string": "\"state\"",
    "nested too deep": "[" * 200000 + "]" * 200000,
    "generation a string": put(want(), "7", "generation"),
    "generation a boolean": put(want(), True, "generation"),
    "generation a float": put(want(), 7.5, "generation"),
    "no target db": drop(want(), "target", "db"),
    "no target of": drop(want(), "target", "of"),
    "bridge a number": put(want(), 0, "target", "bridge"),
    "no ports": drop(want(), "ports"),
    "ports a string": put(want(), "up1", "ports"),
    "a port a number": put(want(), ["up1", 2], "ports"),
    "bfd a list": put(want(), ["enable"], "bfd"),
    "a bfd value a number": put(want(), {"min_rx": 100}, "bfd"),
    "bfd_ports a dict": put(want(), {}, "bfd_ports"),
    "a ring size a string": put(want(), "1024", "slice", "rings", 0,
                                "ring_size"),
    "a ring size a boolean": put(want(), True, "slice", "rings", 0,
                                 "ring_size"),
    "a ring's numa_id a float": put(want(), 0.5, "slice", "rings", 0,
                                    "numa_id"),
    "a ring's rate a number": put(want(), 10, "slice", "rings", 0, "rate"),
    "a route's backups a string": put(want(), "up2", "slice", "routes", 0,
                                      "backups"),
    "a route's priority a numeral": put(want(), "200", "slice", "routes",
                                        0, "priority"),
    "a route's MAC a number": put(want(), 1, "slice", "routes", 0,
                                  "dl_dst"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_load_bad_file_is_a_warning(
        tmp_path: Path, log: Log, name: str) -> None:
    path = tmp_path / "state.json"
    write(path, BAD_FILES[name])
    assert statefile.load_cache(str(path), NODE) is None
    assert len(log.warnings()) == 1
    assert str(path) in log.warnings()[0]


def mutations(value: Any, keys: Tuple[Any, ...] = ()
              ) -> Iterator[Tuple[Tuple[Any, ...], Any]]:
    """Every place of a want, and a value of every JSON type for it."""
    for v in (None, True, 0, -1, 1.5, "", "x", [], [1], {}, {"a": 1}):
        yield keys, v
    if isinstance(value, dict):
        for k, sub in value.items():
            yield from mutations(sub, keys + (k,))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            yield from mutations(sub, keys + (i,))


def test_load_never_raises(tmp_path: Path, log: Log) -> None:
    """Every field of a want (and the want itself) replaced by a value of
    every JSON type, or left out: load_cache() gives None with a warning,
    or a want, never an exception."""
    path = tmp_path / "state.json"
    w = want()
    cases = [put(w, v, *keys) if keys else v for keys, v in mutations(w)]
    cases += [drop(w, *keys) for keys, _ in mutations(w) if keys]
    for c in cases:
        log.lines.clear()
        write(path, c)
        got = statefile.load_cache(str(path), NODE)
        assert (got is None) == bool(log.warnings()), c


# -------------------------------------------------------- the agent's keep
class Hold:
    """What SwitchHold.keep() uses of the agent."""

    def __init__(self, path: str) -> None:
        self.cache_path = path
        self.saved = json.dumps(None)
        self.saved_want = None
        self.save_error = None
        self.to_keep: Any = None


def test_keep_says_once_that_it_cannot_save(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A state file that cannot be written (a full disk) is said once,
    not at every check of the switch, and so is its recovery; the agent
    goes on."""
    from ovs_daqring.fabric import switchhold
    rec = Log()
    monkeypatch.setattr(switchhold, "vlog", rec)
    hold = Hold(str(tmp_path / "state.json"))
    real = os.fsync

    def full(_fd: int) -> None:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    w = want()
    for _ in range(3):
        hold.to_keep = w
        SwitchHold.keep(hold)           # type: ignore[arg-type]
    assert len(rec.warnings()) == 1
    assert "No space left on device" in rec.warnings()[0]
    assert os.listdir(tmp_path) == []
    monkeypatch.setattr(os, "fsync", real)
    hold.to_keep = w
    SwitchHold.keep(hold)               # type: ignore[arg-type]
    assert len(rec.warnings()) == 1
    assert statefile.load_cache(hold.cache_path, NODE) == w
    assert any("kept again" in m for lv, m in rec.lines if lv == "info")
