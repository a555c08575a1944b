#!/usr/bin/python3
"""ROS and DCM agents of daq-incast, run inside network namespaces.

Standard library only; executed as a script by `ip netns exec NS python3
agents.py ros|dcm ...` (it imports nothing from the package).

Wire protocol on each DCM->ROS TCP connection: the DCM sends 8-byte
requests (event number, fragment size; network order), the ROS answers
each with exactly that many bytes.  The DCM decides fragment sizes (the
stand-in for what the ROS has buffered), so it always knows how much to
wait for.

Agent -> orchestrator, on stdout, one line each:
  READY                    listening (ROS) / connected and warmed up (DCM)
  EV <n> <ns> <bytes>      DCM: event n collected in <ns> nanoseconds
  DONE <json>              DCM: all results
  ERROR <text>             fatal, the agent exits 1
Orchestrator -> DCM on stdin: GO (start the events).  A ROS exits when its
stdin closes.
"""

import json
import os
import random
import selectors
import socket
import struct
import sys
import time
from typing import Any, Dict, List

REQ = struct.Struct("!II")
WARMUP_SIZE = 64


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def pin(cpus: str) -> None:
    if cpus:
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})


class RosConn:
    __slots__ = ("sock", "inbuf", "queue", "off", "writing")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbuf = b""
        self.queue: List[int] = []     # sizes still to send
        self.off = 0                   # bytes of queue[0] already sent
        self.writing = False           # registered for EVENT_WRITE


def ros_main(ips: List[str], port: int, max_size: int,
             nodelay: bool = True) -> int:
    """Serve fragments on ip:port for every ROS address of this host."""
    payload = memoryview(bytes(max_size))
    sel = selectors.DefaultSelector()
    for ip in ips:
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((ip, port))
        ls.listen(256)
        ls.setblocking(False)
        sel.register(ls, selectors.EVENT_READ, None)
    sel.register(sys.stdin, selectors.EVENT_READ, "stdin")
    say("READY")

    def close(c: RosConn) -> None:
        sel.unregister(c.sock)
        c.sock.close()
        c.queue.clear()

    def pump(c: RosConn) -> None:
        while c.queue:
            size = c.queue[0]
            try:
                n = c.sock.send(payload[:min(size - c.off, max_size)])
            except BlockingIOError:
                n = 0
            except OSError:            # the DCM went away (mode aborted)
                close(c)
                return
            c.off += n
            if c.off < size:
                if not c.writing:
                    c.writing = True
                    sel.modify(c.sock, selectors.EVENT_READ
                               | selectors.EVENT_WRITE, c)
                return
            c.queue.pop(0)
            c.off = 0
        if c.writing:
            c.writing = False
            sel.modify(c.sock, selectors.EVENT_READ, c)

    while True:
        for key, ev in sel.select():
            if key.data is None:
                conn, _ = key.fileobj.accept()          # type: ignore
                conn.setblocking(False)
                if nodelay:
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY,
                                    1)
                sel.register(conn, selectors.EVENT_READ, RosConn(conn))
                continue
            if key.data == "stdin":
                if not sys.stdin.readline():
                    return 0
                continue
            c = key.data
            if ev & selectors.EVENT_READ:
                try:
                    data = c.sock.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    close(c)
                    continue
                c.inbuf += data
                while len(c.inbuf) >= REQ.size:
                    _, size = REQ.unpack_from(c.inbuf)
                    c.inbuf = c.inbuf[REQ.size:]
                    c.queue.append(size)
            if c.queue:
                pump(c)


def fragment_sizes(cfg: Dict[str, Any], rng: random.Random) -> List[int]:
    n, size = len(cfg["ros"]), cfg["fragment_size"]
    dist = cfg["fragment_dist"]
    if dist == "uniform":
        return [rng.randint(max(1, size // 2), size * 3 // 2)
                for _ in range(n)]
    if dist == "exponential":
        return [int(min(4 * size, max(64, rng.expovariate(1.0 / size))))
                for _ in range(n)]
    return [size] * n


def dcm_main(cfg: Dict[str, Any]) -> int:
    """Collect cfg["events"] events from every ROS in cfg["ros"]."""
    ros = cfg["ros"]
    n = len(ros)
    window = cfg["credits"] or n
    rng = random.Random(cfg["seed"])
    socks = []
    for ip in ros:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((cfg["ip"], 0))
        s.settimeout(10)
        s.connect((ip, cfg["port"]))
        if cfg.get("nodelay", True):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        socks.append(s)
    sel = selectors.DefaultSelector()
    for i, s in enumerate(socks):
        sel.register(s, selectors.EVENT_READ, i)
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    rem = [0] * n
    deadline_s = cfg["event_deadline_s"]

    def collect(event: int, sizes: List[int]) -> int:
        """One event; returns its collection time in ns."""
        order = list(range(n))
        t0 = time.perf_counter_ns()
        for i in order[:window]:
            rem[i] = sizes[i]
            socks[i].send(REQ.pack(event, sizes[i]))
        nxt, done, last = window, 0, t0
        while done < n:
            ready = sel.select(deadline_s)
            if not ready:
                raise TimeoutError("event %d: %d of %d fragments after %g s"
                                   % (event, done, n, deadline_s))
            for key, _ in ready:
                i = key.data
                got = socks[i].recv_into(view, min(rem[i], len(buf)))
                if got == 0:
                    raise ConnectionError("ROS %s closed" % ros[i])
                rem[i] -= got
                if rem[i] == 0:
                    done += 1
                    last = time.perf_counter_ns()
                    if nxt < n:
                        j = order[nxt]
                        nxt += 1
                        rem[j] = sizes[j]
                        socks[j].send(REQ.pack(event, sizes[j]))
        return last - t0

    collect(0xffffffff, [WARMUP_SIZE] * n)
    say("READY")
    if sys.stdin.readline().strip() != "GO":
        return 1
    times, nbytes = [], []
    gap = cfg["event_gap_ms"] / 1000.0
    for e in range(cfg["events"]):
        sizes = fragment_sizes(cfg, rng)
        dt = collect(e, sizes)
        times.append(dt)
        nbytes.append(sum(sizes))
        say("EV %d %d %d" % (e, dt, nbytes[-1]))
        if gap:
            time.sleep(gap)
    for s in socks:
        s.close()
    say("DONE " + json.dumps({"times_ns": times, "bytes": nbytes}))
    return 0


def main(argv: List[str]) -> int:
    try:
        if argv[:1] == ["ros"]:
            pin(argv[4] if len(argv) > 4 else "")
            return ros_main(argv[1].split(","), int(argv[2]), int(argv[3]),
                            argv[5:6] != ["0"])
        if argv[:1] == ["dcm"]:
            cfg = json.loads(argv[1])
            pin(cfg.get("cpus", ""))
            return dcm_main(cfg)
        say("ERROR usage: agents.py ros IPS PORT MAXSIZE [CPUS [NODELAY]] | "
            "agents.py dcm JSON")
        return 2
    except (OSError, ValueError, TimeoutError) as e:
        say("ERROR %s: %s" % (type(e).__name__, e))
        return 1
    except KeyboardInterrupt:
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
