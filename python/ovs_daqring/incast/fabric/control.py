# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The fabric's control frames (BFD), counted apart from the hosts'
frames on the ports of the switches without DPDK: their veths' counters
count both, and a switch's "received, not sent on" (counters.
switch_inside()) must count only the hosts' frames it swallowed.  A
spine whose ovs-vswitchd is killed goes on receiving the leaves' BFD
packets and sends none: counted as lost host frames, they made the
balance of a spine's failure "overcounted".  ovs-vswitchd counts no BFD
packets (a killed one cannot be asked anyway), so a packet socket in
each such switch's namespace counts them, filtered in the kernel (one
small process per namespace, only while BFD runs)."""

import json
import subprocess
import sys
from typing import Dict, Optional

from ...process import Cleanup, stop_process
from .plan import FabricPlan

# BFD control packets: UDP to port 3784 (RFC 5881).
BFD_PORT = 3784

# The counter, run in a namespace: every IPv4 UDP datagram to BFD_PORT
# (a classic BPF program, tcpdump -dd 'ip and udp dst port 3784') seen
# on any interface, received or sent, per interface; a line on stdin
# asks for the counts (one JSON line: {ifname: {"rx": N, "tx": N}}), its
# end stops it.
COUNTER = r"""
import ctypes, json, os, select, socket, struct, sys
PROG = [(0x28, 0, 0, 12), (0x15, 0, 8, 0x800), (0x30, 0, 0, 23),
        (0x15, 0, 6, 17), (0x28, 0, 0, 20), (0x45, 4, 0, 0x1fff),
        (0xb1, 0, 0, 14), (0x48, 0, 0, 16), (0x15, 0, 1, %d),
        (0x6, 0, 0, 0x40000), (0x6, 0, 0, 0)]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
code = b"".join(struct.pack("HBBI", *i) for i in PROG)
buf = ctypes.create_string_buffer(code)
s.setsockopt(socket.SOL_SOCKET, 26,
             struct.pack("HL", len(PROG), ctypes.addressof(buf)))
s.setblocking(False)
# What arrived before the filter was attached.
try:
    while True:
        s.recv(65536)
except BlockingIOError:
    pass
counts = {}
sys.stdout.write("ready\n")
sys.stdout.flush()
while True:
    r, _, _ = select.select([s, sys.stdin], [], [])
    if s in r:
        try:
            while True:
                _, addr = s.recvfrom(65536)
                c = counts.setdefault(addr[0], {"rx": 0, "tx": 0})
                c["tx" if addr[2] == socket.PACKET_OUTGOING else "rx"] += 1
        except BlockingIOError:
            pass
    if sys.stdin in r:
        if not sys.stdin.readline():
            break
        sys.stdout.write(json.dumps(counts) + "\n")
        sys.stdout.flush()
""" % BFD_PORT


class ControlFrames:
    """The BFD packets each port of PLAN's switches without DPDK sent
    and received since start(): read() gives {"switch:port": {"rx",
    "tx"}}.  The counters stop with CLEANUP."""

    def __init__(self, plan: FabricPlan) -> None:
        self.plan = plan
        self.procs: Dict[str, "subprocess.Popen[str]"] = {}
        # (namespace, interface) -> "switch:port".
        self.ports = {(s.ns, p.name): "%s:%s" % (s.name, p.name)
                      for s in plan.switches if not s.dpdk
                      for p in s.ports}

    def start(self, cleanup: Cleanup) -> None:
        cleanup.push("stop the control frame counters", self.stop)
        for ns in sorted({ns for ns, _ in self.ports}):
            p = subprocess.Popen(
                ["ip", "netns", "exec", ns, sys.executable, "-c", COUNTER],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.procs[ns] = p
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise OSError("the control frame counter in %s did not "
                              "start" % ns)

    def read(self) -> Dict[str, Dict[str, int]]:
        out: Dict[str, Dict[str, int]] = {}
        for ns, p in self.procs.items():
            assert p.stdin is not None and p.stdout is not None
            p.stdin.write("\n")
            p.stdin.flush()
            for ifname, c in json.loads(p.stdout.readline()).items():
                name = self.ports.get((ns, ifname))
                if name is not None:
                    out[name] = {"rx": int(c["rx"]), "tx": int(c["tx"])}
        return out

    def stop(self) -> None:
        for p in self.procs.values():
            try:
                if p.stdin is not None:
                    p.stdin.close()
            except OSError:
                pass
            stop_process(p)
        self.procs = {}


def control_delta(before: Dict[str, object], after: Dict[str, object],
                  name: str) -> Optional[Dict[str, int]]:
    """Port NAME's control frames between two snapshots (their
    "control": ControlFrames.read()); None if not counted."""
    b = before.get("control") or {}
    a = after.get("control") or {}
    assert isinstance(b, dict) and isinstance(a, dict)
    if name not in a:
        return None
    was = b.get(name) or {"rx": 0, "tx": 0}
    return {k: int(a[name][k]) - int(was.get(k, 0)) for k in ("rx", "tx")}
