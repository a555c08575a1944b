# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""--failover's loss probe: UDP datagrams with sequence numbers at
PROBE_RATE a second each way between a ROS host and a DCM whose path
crosses the failed element, so that what the failover costs is counted
packet by packet, not guessed from TCP's retransmissions.

Each end is a small program of the standard library (PROBE, run with
`ip netns exec` in the host's namespace, as netns.GARP is): one UDP
socket bound to the host's address and PROBE_PORT, sending datagrams
(sequence number, send time) to the other end on a fixed schedule and
noting every datagram it receives.  A UDP socket was chosen over scapy:
it sends and receives through the host's own routes (its plane, its
neighbour entries or none with --host-arp off) as the incast's TCP
does, needs no raw socket or sniffer, and keeps nothing but the
standard library in the namespace.  The datagrams go to the DCM's own
address, which is what the fabric matches on (the fabric map gives a
DCM its address, no port tuples): they take the DCM's path and its ring,
on a UDP port no incast connection uses.

The counting is pure (direction(), probe_result()) and tested without
root in tests/incast/test_probe.py."""

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...process import die_with_parent

# UDP, on the hosts' own addresses: the incast is TCP (the ROS listen on
# topology.ROS_PORT), so no connection of the run shares it.
PROBE_PORT = 9100
# Datagrams a second, each way (the measurement: pings at 100/s).
PROBE_RATE = 100
# Seconds between the ends' last datagram and the count: what was still
# in flight arrives (a queue of the fabric holds it for milliseconds).
PROBE_DRAIN = 1.0
# The loss runs a direction lists (in order; its counts have them all).
LOSS_RUNS = 32

# An end of the probe: argv LOCAL_IP PEER_IP PORT RATE.  Binds its
# socket, prints READY, waits for a line on its standard input (both
# ends bound: nothing is sent to a port not open yet), then sends
# datagrams "SEQ SEND_TIME" to PEER_IP:PORT every 1/RATE s from
# LOCAL_IP:PORT
# (sent late rather than skipped when the core is busy) until SIGUSR1,
# receives until SIGTERM, then prints one JSON line: how many it sent,
# how many sends failed, and every datagram it received as [seq, send
# time, receive time].  Times are the wall clock (one clock for every
# namespace of the machine), a datagram's receive time the kernel's
# (SO_TIMESTAMPNS: when it reached the socket, however late the end
# read it on a busy core).
PROBE = r"""
import json, select, signal, socket, struct, sys, time
local, peer, port, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    float(sys.argv[4])
state = {"send": True, "run": True}
def stop_sending(*a): state["send"] = False
def stop(*a): state["run"] = False
signal.signal(signal.SIGUSR1, stop_sending)
signal.signal(signal.SIGTERM, stop)
TS = getattr(socket, "SO_TIMESTAMPNS", 35)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, TS, 1)
s.bind((local, port))
s.setblocking(False)
sent = errors = 0
got = []
print("READY", flush=True)
sys.stdin.readline()
start = time.time()
while state["run"]:
    now = time.time()
    due = start + (sent + errors) / rate
    if state["send"] and now >= due:
        try:
            s.sendto(("%d %.6f" % (sent + errors, now)).encode(),
                     (peer, port))
            sent += 1
        except OSError:
            errors += 1
        continue
    wait = max(0.0, due - now) if state["send"] else 0.1
    try:
        ready = select.select([s], [], [], wait)[0]
    except InterruptedError:
        continue
    while ready:
        try:
            data, anc, _, _ = s.recvmsg(256, 64)
        except (BlockingIOError, InterruptedError):
            break
        t = time.time()
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == TS and len(raw) >= 16:
                sec, ns = struct.unpack("qq", raw[:16])
                t = sec + ns / 1e9
        try:
            seq, at = data.decode().split()
            got.append([int(seq), float(at), t])
        except ValueError:
            got.append(None)
print(json.dumps({"sent": sent, "send_errors": errors, "received": got}),
      flush=True)
"""


def direction(sent: int, received: Sequence[Any], rate: float,
              since: float = 0.0) -> Dict[str, Any]:
    """One direction of the probe, counted: SENT datagrams numbered
    0..SENT-1 (a send that failed has its number too, and is lost),
    RECEIVED what the other end got ([seq, send time, receive time]
    each; anything else, or a number out of range, is counted "invalid"
    and not received).  lost = sent - received (distinct numbers).

    max_gap_ms: the longest time without a datagram arriving, by their
    receive times, or as long as the datagrams missing before the first
    or after the last took to send (1/RATE each);
    loss_window_ms: the longest time between the sends of two datagrams
    that arrived with every one between them lost (the outage as the
    sender's own datagrams saw it), 0 without a loss between two;
    max_gap_after_s, loss_window_after_s: when the datagram that arrived
    before that gap (the arrival) or window (the send) was, in seconds
    from SINCE (the same clock), None before the first;
    longest_loss_run: the most consecutive numbers lost; loss_runs: each
    run of lost numbers ({"after_s": when the datagram before it was
    sent, from SINCE, None before the first; "lost": how many}), the
    first LOSS_RUNS of them."""
    period = 1.0 / rate
    seen: Dict[int, Tuple[float, float]] = {}
    invalid = dups = reordered = 0
    last_seq = -1
    for r in received:
        if not (isinstance(r, (list, tuple)) and len(r) == 3
                and isinstance(r[0], int) and not isinstance(r[0], bool)
                and 0 <= r[0] < sent
                and all(isinstance(x, (int, float))
                        and not isinstance(x, bool) for x in r[1:])):
            invalid += 1
            continue
        if r[0] in seen:
            dups += 1
            continue
        if r[0] < last_seq:
            reordered += 1
        last_seq = max(last_seq, r[0])
        seen[r[0]] = (float(r[1]), float(r[2]))
    seqs = sorted(seen)

    def rel(t: Optional[float]) -> Optional[float]:
        return None if t is None else round(t - since, 3)
    # Runs of missing numbers: before the first, between two, after the
    # last (the whole of them if none arrived).
    bounds = [-1] + seqs + [sent]
    run_max = max(b - a - 1 for a, b in zip(bounds, bounds[1:]))
    gap, gap_after = 0.0, None          # type: Tuple[float, Optional[float]]
    window, window_after = 0.0, None    # type: Tuple[float, Optional[float]]
    if seqs:
        ends = [(seqs[0] * period, None),
                ((sent - 1 - seqs[-1]) * period, seen[seqs[-1]][1])]
    else:
        ends = [(sent * period, None)]
    for g, at in ends:
        if g > gap:
            gap, gap_after = g, at
    arrivals = sorted(t for _, t in seen.values())
    for t1, t2 in zip(arrivals, arrivals[1:]):
        if t2 - t1 > gap:
            gap, gap_after = t2 - t1, t1
    for a, b in zip(seqs, seqs[1:]):
        w = seen[b][0] - seen[a][0]
        if b - a > 1 and w > window:
            window, window_after = w, seen[a][0]
    runs = [{"after_s": rel(seen[a][0]) if a >= 0 else None,
             "lost": b - a - 1}
            for a, b in zip(bounds, bounds[1:]) if b - a > 1]

    return {"sent": sent, "received": len(seen),
            "lost": sent - len(seen),
            "max_gap_ms": round(gap * 1000, 3),
            "max_gap_after_s": rel(gap_after),
            "loss_window_ms": round(window * 1000, 3),
            "loss_window_after_s": rel(window_after),
            "longest_loss_run": run_max, "loss_runs": runs[:LOSS_RUNS],
            "duplicates": dups,
            "reordered": reordered, "invalid": invalid}


def parse_end(text: str) -> Dict[str, Any]:
    """An end's output (PROBE's last line of JSON), checked: ValueError
    with what is wrong."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or lines[-1].strip() == "READY":
        raise ValueError("no count printed")
    try:
        doc = json.loads(lines[-1])
    except ValueError as e:
        raise ValueError("not JSON (%s): %r" % (e, lines[-1][:200]))
    if not isinstance(doc, dict):
        raise ValueError("not an object: %r" % lines[-1][:200])
    for key in ("sent", "send_errors"):
        v = doc.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError("%s: %r is not a count" % (key, v))
    if not isinstance(doc.get("received"), list):
        raise ValueError("received: not a list")
    return doc


def probe_result(a_end: Dict[str, Any], b_end: Dict[str, Any],
                 rate: float, since: float = 0.0) -> Dict[str, Any]:
    """Both directions from the two ends' checked outputs (parse_end()):
    A to B is what A sent against what B received, and back."""
    out = {}
    for key, src, dst in (("ros_to_dcm", a_end, b_end),
                          ("dcm_to_ros", b_end, a_end)):
        d = direction(src["sent"] + src["send_errors"], dst["received"],
                      rate, since)
        d["send_errors"] = src["send_errors"]
        out[key] = d
    return out


def _preexec(cpus: Sequence[int]) -> Any:
    def fn() -> None:
        die_with_parent()
        os.sched_setaffinity(0, set(cpus))
    return fn


class LossProbe:
    """The probe between a ROS host and a DCM, ROS and DCM each
    (namespace, address), its processes on CPUS; its times in seconds
    from T0 (a time.monotonic(): the failover's).  start(), then stop();
    result() has the counts."""

    def __init__(self, ros: Tuple[str, str], dcm: Tuple[str, str],
                 cpus: Sequence[int], t0: float,
                 rate: float = PROBE_RATE, port: int = PROBE_PORT) -> None:
        self.ros_ns, self.ros_ip = ros
        self.dcm_ns, self.dcm_ip = dcm
        self.cpus = list(cpus)
        self.rate = rate
        self.port = port
        self.t0 = t0
        # T0 on the ends' clock (the wall clock).
        self.t0_wall = time.time() - (time.monotonic() - t0)
        self.procs: List["subprocess.Popen[str]"] = []
        self.error: Optional[str] = None
        self.counts: Optional[Dict[str, Any]] = None
        self.started_at: Optional[float] = None
        self.stopped_at: Optional[float] = None

    def _end(self, ns: str, local: str, peer: str
             ) -> "subprocess.Popen[str]":
        return subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-c", PROBE, local,
             peer, str(self.port), str(self.rate)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True,
            preexec_fn=_preexec(self.cpus))

    def start(self) -> None:
        """Both ends, told to send once both have bound their sockets
        (READY), so that neither sends to a port not yet open."""
        for ns, local, peer in ((self.dcm_ns, self.dcm_ip, self.ros_ip),
                                (self.ros_ns, self.ros_ip, self.dcm_ip)):
            p = self._end(ns, local, peer)
            self.procs.append(p)
            assert p.stdout is not None
            line = p.stdout.readline()
            if line.strip() != "READY":
                self.error = "probe in %s did not start: %s" % (
                    ns, (line + self._stderr(p)).strip()[-500:])
                self.stop()
                return
        for p in self.procs:
            assert p.stdin is not None
            p.stdin.write("GO\n")
            p.stdin.flush()
        self.started_at = time.monotonic() - self.t0

    @staticmethod
    def _stderr(p: "subprocess.Popen[str]") -> str:
        try:
            _, err = p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        return err or ""

    def stop(self) -> None:
        """Both ends stop sending, what is in flight arrives (PROBE_DRAIN
        seconds), then both count.  Again: nothing."""
        if not self.procs:
            return
        live = [p for p in self.procs if p.poll() is None]
        for p in live:
            p.send_signal(signal.SIGUSR1)
        self.stopped_at = time.monotonic() - self.t0
        if live:
            time.sleep(PROBE_DRAIN)
        ends = []
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                out, err = p.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            try:
                ends.append(parse_end(out or ""))
            except ValueError as e:
                if self.error is None:
                    self.error = "probe end in %s: %s%s" % (
                        (self.dcm_ns, self.ros_ns)[len(ends) % 2], e,
                        (": " + err.strip()[-300:])
                        if err and err.strip() else "")
        self.procs = []
        if len(ends) == 2 and self.error is None:
            # (The DCM's end started first: ends[0].)
            self.counts = probe_result(ends[1], ends[0], self.rate,
                                       self.t0_wall)

    def result(self) -> Dict[str, Any]:
        """What the probe counted (probe_result()), where and when."""
        out: Dict[str, Any] = {
            "ros": {"ns": self.ros_ns, "ip": self.ros_ip},
            "dcm": {"ns": self.dcm_ns, "ip": self.dcm_ip},
            "udp_port": self.port, "rate_pps": self.rate,
            "started_at_s": self.started_at,
            "stopped_at_s": self.stopped_at}
        if self.counts is not None:
            out.update(self.counts)
        if self.error:
            out["error"] = self.error
        return out
