# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Tests of utilities/ovs-daqring-sandbox ("make sandbox").

The argument checks start nothing.  The tests marked "machine" start the
built switch with DPDK (root, the build in ovs/; skipped, with the
reason, without them), run the first example of
Documentation/topics/daqring.rst inside, and check that nothing is left
afterwards: no daemon, no hugepage reservation, no hugetlbfs mount, no
directory, no DPDK runtime directory.  Each takes about 20 s.
"""

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SANDBOX = ROOT / "utilities" / "ovs-daqring-sandbox"
OVS = ROOT / "ovs"
# A bound on a hang, not a timing: DPDK's start and "exit --cleanup".
TIMEOUT_S = 300

# The first example of daqring.rst ("Usage"), then what shows the ring.
FIRST_EXAMPLE = (
    "ovs-vsctl add-port br0 dcm7 -- set Interface dcm7 type=daqring "
    "options:ring-size=16384 options:max-rate=1000000000 && "
    "ovs-ofctl add-flow br0 "
    "priority=100,ip,nw_dst=10.0.0.7,actions=output:dcm7 && "
    "ovs-ofctl add-flow br0 priority=101,in_port=dcm7,actions=output:p1 && "
    "ovs-vsctl get Interface dcm7 status && "
    "ovs-appctl netdev-daqring/show && ovs-ofctl --names dump-flows br0")
# What the command says about the sandbox, for the checks after it.
REPORT = ('echo "rundir=$OVS_RUNDIR"; '
          'echo "pids=$(cat "$OVS_RUNDIR"/ovs-vswitchd.pid) '
          '$(cat "$OVS_RUNDIR"/ovsdb-server.pid)"; '
          'echo "vsctl=$(command -v ovs-vsctl)"; ')


def sandbox(args: List[str], timeout: float = 60
            ) -> "subprocess.CompletedProcess[str]":
    # The executable itself: its shebang is the interpreter with the
    # OVS Python library (python3-openvswitch).
    return subprocess.run([str(SANDBOX)] + args, capture_output=True,
                          text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args,error", [
    (["--ports", "31"], "--ports 31: from 0 to 30"),
    (["--ports", "-1"], "--ports -1: from 0 to 30"),
    (["--socket-mem", "10"], "--socket-mem 10: from 64"),
    (["--pmd-cpu-mask", "zz"], "bad --pmd-cpu-mask 'zz'"),
    (["--pmd-cpu-mask", "0x0"], "--pmd-cpu-mask selects no CPU"),
    (["--pmd-cpu-mask", "0x%x" % (1 << 1023)], "is not one of this"),
    (["--pmd-cpu-mask", "0x%x" % sum(1 << c for c in
                                     os.sched_getaffinity(0))],
     "takes every CPU"),
    (["--bridge", "br 0"], "--bridge 'br 0': a letter"),
    (["--bridge", "b" * 16], "--bridge '%s'" % ("b" * 16)),
    (["--hugepages", "maybe"], "argument --hugepages: invalid choice"),
])
def test_bad_argument(args: List[str], error: str) -> None:
    """Refused with the option named, exit status 2, nothing started."""
    p = sandbox(args)
    assert p.returncode == 2, p.stderr
    assert error in p.stderr
    assert "starting" not in p.stderr


def test_dir_not_empty(tmp_path: Path) -> None:
    (tmp_path / "conf.db").write_text("")
    p = sandbox(["--dir", str(tmp_path)])
    assert p.returncode == 2
    assert "--dir %s: exists and is not an empty directory" % tmp_path \
        in p.stderr


def test_version() -> None:
    from ovs_daqring import VERSION
    p = sandbox(["--version"])
    assert p.returncode == 0 and p.stdout.split() == [
        "ovs-daqring-sandbox", VERSION]


# ================================================================ machine
def machine_state() -> Dict[str, object]:
    with open("/proc/sys/vm/nr_hugepages") as f:
        huge = int(f.read())
    with open("/proc/mounts") as f:
        mounts = sorted(line.split()[1] for line in f
                        if line.split()[2] == "hugetlbfs")
    dpdk = sorted(os.listdir("/var/run/dpdk")) \
        if os.path.isdir("/var/run/dpdk") else []
    return {"nr_hugepages": huge, "hugetlbfs": mounts, "dpdk": dpdk}


def need_machine() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (DPDK, hugepages)")
    if not os.access(OVS / "vswitchd" / "ovs-vswitchd", os.X_OK):
        pytest.skip("needs the build in ovs/ (make)")


def reported(out: str) -> Tuple[str, List[int]]:
    """The sandbox's directory and daemons' pids the command printed."""
    rundir = re.search(r"^rundir=(/\S+)$", out, re.M)
    pids = re.search(r"^pids=(\d+) (\d+)$", out, re.M)
    assert rundir and pids, out
    return rundir.group(1), [int(pids.group(1)), int(pids.group(2))]


def alive(pid: int) -> bool:
    """Whether process PID exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def assert_nothing_left(before: Dict[str, object], rundir: str,
                        pids: List[int], sandbox_pid: int) -> None:
    for pid in pids:
        assert not alive(pid), "daemon %d left" % pid
    assert not os.path.exists(rundir)
    assert machine_state() == before
    assert "dqs%d" % sandbox_pid not in machine_state()["dpdk"]


@pytest.mark.machine
def test_first_example_runs_in_the_sandbox() -> None:
    """The documented example, as written, in the sandbox's shell
    environment: the built tree's tools find the sandbox's switch, the
    daqring is created and shown; after the exit nothing is left."""
    need_machine()
    before = machine_state()
    p = subprocess.Popen(
        [str(SANDBOX), "--", "sh", "-c", REPORT + FIRST_EXAMPLE],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL)
    out, err = p.communicate(timeout=TIMEOUT_S)
    assert p.returncode == 0, out + err
    rundir, pids = reported(out)
    assert re.search(r"^vsctl=%s$" % re.escape(
        str(OVS / "utilities" / "ovs-vsctl")), out, re.M), out
    assert 'ring_size="16384"' in out and 'max_rate="1000000000"' in out
    # netdev-daqring/show: a header, then dcm7's row with its size.
    assert re.search(r"^port\s+size\s+occup", out, re.M), out
    assert re.search(r"^dcm7\s+16384\s+0\s", out, re.M), out
    assert "in_port=dcm7 actions=output:p1" in out
    assert "stopping the switch" in err
    assert_nothing_left(before, rundir, pids, p.pid)


@pytest.mark.machine
def test_sigterm_stops_everything() -> None:
    """SIGTERM to the sandbox while its command runs: the command is
    stopped, then the switch, and everything is given back; exit status
    128 + SIGTERM."""
    need_machine()
    before = machine_state()
    p = subprocess.Popen(
        [str(SANDBOX), "--ports", "1", "--", "sh", "-c",
         REPORT + "echo ready; exec sleep %d" % TIMEOUT_S],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL)
    try:
        lines = []
        assert p.stdout is not None
        for line in p.stdout:
            lines.append(line)
            if line.strip() == "ready":
                break
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=TIMEOUT_S)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 128 + signal.SIGTERM, out + err
    assert "interrupted by signal %d" % signal.SIGTERM in err
    rundir, pids = reported("".join(lines))
    assert_nothing_left(before, rundir, pids, p.pid)


@pytest.mark.machine
def test_next_sandbox_removes_what_a_killed_one_left() -> None:
    """SIGKILL leaves the hugepages reserved and mounted and the
    directories (the daemons die with their parent); the next sandbox
    gives them back and removes them before it starts."""
    need_machine()
    before = machine_state()
    p = subprocess.Popen(
        [str(SANDBOX), "--ports", "0", "--", "sh", "-c",
         REPORT + "echo ready; exec sleep %d" % TIMEOUT_S],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        stdin=subprocess.DEVNULL)
    try:
        lines = []
        assert p.stdout is not None
        for line in p.stdout:
            lines.append(line)
            if line.strip() == "ready":
                break
        rundir, pids = reported("".join(lines))
        p.kill()
        p.wait(TIMEOUT_S)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert os.path.isdir(rundir)
    q = sandbox(["--ports", "0", "--", "true"], timeout=TIMEOUT_S)
    assert q.returncode == 0, q.stderr
    assert "removed %s (a killed sandbox's)" % rundir in q.stderr
    # The daemons got SIGTERM when their parent died (PR_SET_PDEATHSIG)
    # and exit by themselves, reaped by init.
    deadline = time.monotonic() + 60
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert_nothing_left(before, rundir, pids, p.pid)
