# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The command line of ovs_daqring.hugepages, which the shell parts of
the build (the system tests' DAQ_HUGEPAGES, build-aux/run-checks) use
instead of reserving hugepages themselves.  The kernel is faked: these
tests change neither nr_hugepages nor the mounts."""

import os
import subprocess
import sys
from typing import Any, Dict, List

from ovs_daqring import hugepages
import pytest

pytestmark = pytest.mark.machine

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class FakeKernel:
    """nr_hugepages in a file, HugePages_Free derived from it (minus the
    pages in use), mount and umount recorded instead of run."""

    def __init__(self, tmp_path: Any, monkeypatch: Any, total: int = 0,
                 used: int = 0) -> None:
        self.nr = tmp_path / "nr_hugepages"
        self.nr.write_text("%d\n" % total)
        self.used = used
        self.mounts: List[str] = []
        self.cmds: List[List[str]] = []
        monkeypatch.setattr(hugepages, "NR_HUGEPAGES", str(self.nr))
        monkeypatch.setattr(hugepages, "_meminfo",
                            lambda: (max(0, self.total() - self.used), 2048))
        monkeypatch.setattr(hugepages, "hugetlbfs_mounted",
                            lambda: bool(self.mounts))
        monkeypatch.setattr(hugepages, "_is_hugetlbfs_mount",
                            lambda path: os.path.realpath(path)
                            in self.mounts)
        monkeypatch.setattr(hugepages, "run", self.run)
        monkeypatch.setattr(hugepages.os, "geteuid", lambda: 0)

    def total(self) -> int:
        return int(self.nr.read_text())

    def run(self, cmd: List[str], **kw: Any) -> str:
        self.cmds.append(cmd)
        if cmd[0] == "mount":
            self.mounts.append(os.path.realpath(cmd[-1]))
        elif cmd[0] == "umount":
            self.mounts.remove(os.path.realpath(cmd[-1]))
        return ""


def shell_vars(text: str, prefix: str = "huge") -> Dict[str, str]:
    """What a shell's eval of reserve's output assigns."""
    keys = ("reason", "added", "mount", "free_mb")
    script = 'eval "$1"; printf "%s\\0" ' + " ".join(
        '"$%s_%s"' % (prefix, k) for k in keys)
    out = subprocess.run(["bash", "-c", script, "bash", text],
                         capture_output=True, text=True, check=True).stdout
    return dict(zip(keys, out.split("\0")))


def test_cli_reserve_and_give_back(tmp_path: Any, monkeypatch: Any,
                                   capsys: Any) -> None:
    k = FakeKernel(tmp_path, monkeypatch, total=100, used=100)
    mnt = str(tmp_path / "mnt")
    assert hugepages.main(["reserve", "1024", mnt]) == 0
    v = shell_vars(capsys.readouterr().out)
    assert v == {"reason": "", "added": "512", "mount": mnt,
                 "free_mb": "1024"}
    assert k.total() == 612 and k.mounts == [os.path.realpath(mnt)]
    # A second reservation of the same run in the same directory mounts
    # nothing more.
    assert hugepages.main(["reserve", "1024", mnt, "--prefix", "b"]) == 0
    v2 = shell_vars(capsys.readouterr().out, "b")
    assert v2["added"] == "0" and v2["mount"] == "" and v2["reason"] == ""
    assert len(k.mounts) == 1
    # Another run adds 50 pages meanwhile: ours go, theirs stay.
    k.nr.write_text("662\n")
    assert hugepages.main(["give-back", v["added"], v["mount"]]) == 0
    assert k.total() == 150 and k.mounts == []
    assert k.cmds[-1] == ["umount", mnt]
    assert not os.path.exists(mnt)          # the mount point is gone too


def test_first_reservation_adds_its_own_pages(tmp_path: Any,
                                              monkeypatch: Any,
                                              capsys: Any) -> None:
    """Free pages in the pool may be another run's (reserved, not yet
    taken by its DPDK process): a run's first reservation adds its own
    instead of counting them, so that two runs side by side both get
    what they asked for."""
    k = FakeKernel(tmp_path, monkeypatch, total=600, used=88)
    assert hugepages.main(["reserve", "1024", str(tmp_path / "a")]) == 0
    a = shell_vars(capsys.readouterr().out)
    assert a["reason"] == "" and a["added"] == "512"
    assert hugepages.main(["reserve", "1024", str(tmp_path / "b"),
                           "--prefix", "b"]) == 0
    b = shell_vars(capsys.readouterr().out, "b")
    assert b["reason"] == "" and b["added"] == "512"
    assert k.total() == 600 + 512 + 512
    assert hugepages.main(["give-back", b["added"], b["mount"]]) == 0
    assert hugepages.main(["give-back", a["added"], a["mount"]]) == 0
    assert k.total() == 600 and k.mounts == []


def test_cli_reason_is_shell_safe(tmp_path: Any, monkeypatch: Any,
                                  capsys: Any) -> None:
    """The reason (spaces, quotes) comes through eval intact, and a
    failed reservation still says what to give back."""
    FakeKernel(tmp_path, monkeypatch, total=10, used=10)

    def refuse(path: str, value: int) -> None:
        raise PermissionError("it's read-only; $(false) `x`")
    monkeypatch.setattr(hugepages, "_write_int", refuse)
    assert hugepages.main(["reserve", "64", str(tmp_path / "m")]) == 0
    v = shell_vars(capsys.readouterr().out)
    assert v["reason"] == ("cannot reserve hugepages: it's read-only; "
                           "$(false) `x`")
    assert v["added"] == "0" and v["mount"] == ""


def test_cli_not_root(tmp_path: Any, monkeypatch: Any, capsys: Any) -> None:
    FakeKernel(tmp_path, monkeypatch)
    monkeypatch.setattr(hugepages.os, "geteuid", lambda: 1000)
    assert hugepages.main(["reserve", "64", str(tmp_path / "m")]) == 0
    assert "only root" in shell_vars(capsys.readouterr().out)["reason"]


def test_cli_as_a_module() -> None:
    """python3 -m ovs_daqring.hugepages runs from the source tree as the
    shell callers run it (PYTHONPATH=python/), and refuses bad usage."""
    env = dict(os.environ, PYTHONPATH=os.path.join(TOP, "python"))
    p = subprocess.run([sys.executable, "-m", "ovs_daqring.hugepages",
                        "--help"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0 and "give-back" in p.stdout
    p = subprocess.run([sys.executable, "-m", "ovs_daqring.hugepages",
                        "reserve", "lots", "/nonexistent"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 2 and "invalid int" in p.stderr


def _dead_pid() -> int:
    """A pid no process can have: the kernel's pid_max itself."""
    with open("/proc/sys/kernel/pid_max") as f:
        return int(f.read())


def test_stale_run_undone(tmp_path: Any, monkeypatch: Any) -> None:
    """A run killed before its Cleanup ran (SIGKILL): remove_stale_runs
    (daq-incast and daq-bench --cleanup-stale) unmounts its hugetlbfs,
    gives back exactly the pages it reserved (not those another run took
    meanwhile), removes its work directory and its DPDK runtime
    directory; a live run's are left alone."""
    k = FakeKernel(tmp_path, monkeypatch)
    tmp, dpdk = tmp_path / "tmp", tmp_path / "dpdk"
    monkeypatch.setattr(hugepages.tempfile, "tempdir", str(tmp))
    monkeypatch.setattr(hugepages, "DPDK_RUNDIR", str(dpdk))
    mounts = tmp_path / "mounts"
    monkeypatch.setattr(hugepages, "PROC_MOUNTS", str(mounts))
    dead, me = _dead_pid(), os.getpid()
    for kind, pid, sub in (("incast", dead, "daq-incast.dqi%d.x1/sw"),
                           ("incast", me, "daq-incast.dqi%d.x2/sw"),
                           ("bench", dead, "daq-bench.%d.x3"),
                           ("bench", dead, "daq-bench.%d")):
        d = tmp / (sub % pid)
        d.mkdir(parents=True)
        # Each run reserves 64 MB (32 pages) and mounts its hugetlbfs.
        assert hugepages.reserve(64, str(d / "hugepages"),
                                 hugepages.Cleanup()) is None
        assert (d / ("hugepages" + hugepages.RECORD)).exists()
        k.used = k.total()                # DPDK took them
    assert k.total() == 4 * 32
    mounts.write_text("".join("none %s hugetlbfs rw 0 0\n" % m
                              for m in k.mounts)
                      + "proc /proc proc rw 0 0\n")
    for prefix in ("dqi%d" % dead, "dqi%d" % me, "dqb%d-0" % dead,
                   "dqb%d-1" % me, "other"):
        (dpdk / prefix).mkdir(parents=True)
    k.nr.write_text("%d\n" % (k.total() + 100))    # another run's 100
    done, errors = hugepages.remove_stale_runs(
        r"^daq-incast\.dqi(\d+)\.", r"^dqi(\d+)$")
    assert errors == []
    assert k.total() == 100 + 3 * 32
    assert not (tmp / ("daq-incast.dqi%d.x1" % dead)).exists()
    assert (tmp / ("daq-incast.dqi%d.x2" % me) / "sw" / "hugepages.reserved"
            ).exists()
    assert sorted(os.listdir(dpdk)) == sorted(
        ["dqi%d" % me, "dqb%d-0" % dead, "dqb%d-1" % me, "other"])
    assert "gave back 32 hugepages" in done
    assert "unmounted hugetlbfs %s" % (
        tmp / ("daq-incast.dqi%d.x1" % dead) / "sw" / "hugepages") in done
    done, errors = hugepages.remove_stale_runs(r"^daq-bench\.(\d+)(\.|$)",
                                               r"^dqb(\d+)-\d+$")
    assert errors == []
    assert k.total() == 100 + 32
    assert sorted(os.listdir(tmp)) == ["daq-incast.dqi%d.x2" % me]
    assert sorted(os.listdir(dpdk)) == sorted(["dqi%d" % me,
                                               "dqb%d-1" % me, "other"])
    assert sorted(c[1] for c in k.cmds if c[0] == "umount") == sorted(
        os.path.realpath(tmp / (s % dead) / "hugepages")
        for s in ("daq-incast.dqi%d.x1/sw", "daq-bench.%d.x3",
                  "daq-bench.%d"))
    assert k.mounts == [os.path.realpath(
        tmp / ("daq-incast.dqi%d.x2" % me) / "sw" / "hugepages")]


def test_stale_run_kept_when_unmount_fails(tmp_path: Any,
                                           monkeypatch: Any) -> None:
    """A hugetlbfs that cannot be unmounted (still in use): its run's
    directory and pages are kept and the error is returned."""
    k = FakeKernel(tmp_path, monkeypatch)
    tmp = tmp_path / "tmp"
    monkeypatch.setattr(hugepages.tempfile, "tempdir", str(tmp))
    monkeypatch.setattr(hugepages, "DPDK_RUNDIR", str(tmp_path / "dpdk"))
    d = tmp / ("daq-incast.dqi%d.x" % _dead_pid())
    d.mkdir(parents=True)
    assert hugepages.reserve(64, str(d / "hugepages"),
                             hugepages.Cleanup()) is None
    mounts = tmp_path / "mounts"
    mounts.write_text("none %s hugetlbfs rw 0 0\n" % (d / "hugepages"))
    monkeypatch.setattr(hugepages, "PROC_MOUNTS", str(mounts))

    def busy(cmd: List[str], **kw: Any) -> str:
        raise hugepages.RunError("umount: target is busy")
    monkeypatch.setattr(hugepages, "run", busy)
    done, errors = hugepages.remove_stale_runs(r"^daq-incast\.dqi(\d+)\.",
                                               r"^dqi(\d+)$")
    assert done == []
    assert errors == ["%s: umount: target is busy" % d]
    assert k.total() == 32 and (d / "hugepages.reserved").exists()
