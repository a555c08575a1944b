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


def test_dump_ports_is_read_into_packet_counts() -> None:
    """The HLT leaf's uplinks' packets as 'ovs-ofctl --names dump-ports'
    gives them at once (its Interface statistics lag by the refresh
    interval, which BFD's packets made a loss)."""
    from ovs_daqring.incast.fabric.counters import dump_ports_packets
    text = """OFPST_PORT reply (xid=0x2): 3 ports
  port  h0: rx pkts=10, bytes=600, drop=0, errs=0, frame=0, over=0, crc=0
           tx pkts=12, bytes=720, drop=0, errs=0, coll=0
           duration=3.1s
  port  "up1": rx pkts=47740, bytes=0, drop=?, errs=?, frame=?, over=?, crc=?
           tx pkts=24453, bytes=0, drop=?, errs=?, coll=?
  port LOCAL: rx pkts=0, bytes=0, drop=0, errs=0, frame=0, over=0, crc=0
           tx pkts=0, bytes=0, drop=0, errs=0, coll=0
"""
    assert dump_ports_packets(text) == {
        "h0": {"rx_packets": 10, "tx_packets": 12},
        "up1": {"rx_packets": 47740, "tx_packets": 24453},
        "LOCAL": {"rx_packets": 0, "tx_packets": 0}}
