"""Tests of the fabric emulator's control frame counter (python/
ovs_daqring/incast/fabric/control.py): BFD packets counted per
interface and direction, nothing else.  Needs root (a packet socket);
uses the loopback of this namespace only.

Run: /usr/bin/python3 -m pytest -q tests/incast/test_fabric_control.py
"""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from ovs_daqring.incast.fabric.control import BFD_PORT, COUNTER

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")


def test_the_counter_counts_bfd_packets_only() -> None:
    p = subprocess.Popen([sys.executable, "-c", COUNTER],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout is not None and p.stdin is not None
        assert p.stdout.readline().strip() == "ready"
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for _ in range(3):
            s.sendto(b"bfd", ("127.0.0.1", BFD_PORT))
            s.sendto(b"not bfd", ("127.0.0.1", BFD_PORT + 1))
        s.close()
        time.sleep(0.2)
        p.stdin.write("\n")
        p.stdin.flush()
        got = json.loads(p.stdout.readline())
        # On the loopback each datagram is sent and received.
        assert got.get("lo") == {"rx": 3, "tx": 3}, got
    finally:
        if p.stdin is not None:
            p.stdin.close()
        p.wait(10)


def test_the_control_plane_runs_ahead_of_the_hosts() -> None:
    """The emulated fabric's agents and database members start at
    CONTROL_NICE (procs._preexec()), and control_priority() sets a
    running process's threads to it: on the shared core, the failover's
    critical path does not wait behind the incast's hosts."""
    from ovs_daqring.incast.fabric import procs
    assert procs.CONTROL_NICE < 0
    code = "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"
    out = subprocess.run([sys.executable, "-c", code], check=True,
                         capture_output=True, text=True,
                         preexec_fn=procs._preexec(
                             sorted(os.sched_getaffinity(0)),
                             procs.CONTROL_NICE)).stdout
    assert int(out) == procs.CONTROL_NICE
    p = subprocess.Popen([sys.executable, "-c",
                          "import sys; sys.stdin.read()"],
                         stdin=subprocess.PIPE)
    try:
        procs.control_priority(p.pid)
        assert os.getpriority(os.PRIO_PROCESS, p.pid) == procs.CONTROL_NICE
    finally:
        p.communicate(b"")
