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

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
