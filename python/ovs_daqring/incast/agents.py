#!/usr/bin/python3
"""ROS and DCM agents of daq-incast, run inside network namespaces.

Standard library only; executed as a script by `ip netns exec NS python3
agents.py ros|dcm ...` (it imports nothing from the package).

Wire protocol on each DCM->ROS TCP connection: the DCM sends 8-byte
requests (event number, fragment size; network order), the ROS answers
each with exactly that many bytes.  The DCM decides fragment sizes (the
stand-in for what the ROS has buffered), so it always knows how much to
wait for.

A DCM runs `pus` processing units (PUs), each collecting one event at a
time; their requests share the connections (a ROS answers the requests
of one connection in order, so the DCM knows which event the bytes
belong to) and, in credits mode, one pool of credits.  At most
`pipeline` requests are outstanding on a connection (0: no limit); a
PU's request for a ROS that still owes that many answers waits until it
answered one.

The DCM's sockets carry the kernel's receive time (SO_TIMESTAMPNS) with
every read: per event the DCM reports when its last frame reached the DCM
host, which splits the time after the first ROS started to send into the
switch and link's part and the DCM process' read.  (Only the last frame's
time is exact: TCP merges a segment into the one before it while the
reader has not read that yet, and the merged buffer takes the newer
time.)

Agent -> orchestrator, on stdout, one line each:
  READY                    listening (ROS) / connected and warmed up (DCM)
  EV <n> <ns> <bytes>      DCM: event n collected in <ns> nanoseconds
  DONE <json>              DCM: all results (per event: collection and
                           first-byte time, start, PU; when GO came)
  ERROR <text>             fatal, the agent exits 1
Orchestrator -> DCM on stdin: GO (start the events).  A ROS exits when its
stdin closes.

`agents.py hog CPU BUSY_US PERIOD_US` (not in a namespace) preempts the
PMD thread on CPU for BUSY_US of every PERIOD_US (--pmd-preempt).
"""

import heapq
import json
import os
import random
import select
import selectors
import socket
import struct
import sys
import time
from collections import deque
from typing import Any, Deque, Dict, List, Tuple

REQ = struct.Struct("!II")
# A ROS writes, in the first bytes of every fragment of at least
# STAMP.size bytes, when it read the request and when it started to
# send (CLOCK_MONOTONIC ns, which every namespace shares): the DCM splits
# its wait for an event's first byte into request path, ROS agent and
# the way back.
STAMP = struct.Struct("!QQ")
WARMUP_SIZE = 64
# SO_TIMESTAMPNS, which Python's socket module does not name (the generic
# Linux value, x86_64's and aarch64's): every read returns a control
# message with the kernel's receive time (CLOCK_REALTIME) of the last
# segment it copied.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
TIMESPEC = struct.Struct("@qq")
STAMPS_ANCSIZE = socket.CMSG_SPACE(TIMESPEC.size)


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
        self.queue: List[Tuple[int, int]] = []  # (size, time read) to send
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
            size, t_req = c.queue[0]
            try:
                if c.off == 0 and size >= STAMP.size:
                    stamp = STAMP.pack(t_req, time.perf_counter_ns())
                    n = c.sock.sendmsg([stamp, payload[STAMP.size:
                                                       min(size, max_size)]])
                else:
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
                now = time.perf_counter_ns()
                while len(c.inbuf) >= REQ.size:
                    _, size = REQ.unpack_from(c.inbuf)
                    c.inbuf = c.inbuf[REQ.size:]
                    c.queue.append((size, now))
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


class Event:
    """One event a processing unit collects."""
    __slots__ = ("number", "pu", "sizes", "left", "t0", "first", "last",
                 "ros_read", "ros_sent", "arrival_last")

    def __init__(self, number: int, pu: int, sizes: List[int],
                 t0: int) -> None:
        self.number = number
        self.pu = pu
        self.sizes = sizes
        self.left = len(sizes)          # fragments not yet complete
        self.t0 = t0                    # the PU asked for the event
        self.first = 0                  # first byte of it arrived
        self.last = 0                   # its last byte arrived
        self.ros_read = 0               # first ROS read its request
        self.ros_sent = 0               # first ROS started to send
        self.arrival_last = 0           # kernel got its last segment


class Collector:
    """The DCM's data collection: `pus` processing units, each collecting
    its own event, all of them sharing one persistent connection per ROS
    (requests on a connection are answered in order) and, in credits mode,
    one pool of credits: at most `window` fragment requests outstanding
    over all PUs together (the ATLAS rule), and at most `pipeline` (0: no
    limit) on one connection."""

    def __init__(self, socks: List[socket.socket], ros: List[str],
                 window: int, deadline_s: float,
                 request_yield: int = 0, pipeline: int = 0) -> None:
        self.socks = socks
        self.pipeline = pipeline
        # Give up the CPU after this many requests in a row (0: never):
        # the ROS agents share it and, on a real network, would answer
        # while the DCM still sends requests to the others.
        self.request_yield = request_yield
        self.ros = ros
        self.window = window
        self.deadline_s = deadline_s
        self.sel = selectors.DefaultSelector()
        for i, s in enumerate(socks):
            self.sel.register(s, selectors.EVENT_READ, i)
        self.buf = bytearray(1 << 20)
        self.view = memoryview(self.buf)
        n = len(socks)
        # Per connection, the requests sent and not yet answered, oldest
        # first: [event, bytes still to come, fragment size].
        self.sent: List[Deque[List[Any]]] = [deque() for _ in range(n)]
        self.waiting: Deque[Any] = deque()    # (event, ROS) without credit
        # Per connection, the requests that wait for it to answer one
        # (pipeline), oldest first; they hold no credit.
        self.held: List[Deque[Any]] = [deque() for _ in range(n)]
        self.outstanding = 0
        # Kernel receive times, if every socket has them, and what to add
        # to a CLOCK_REALTIME time to get a CLOCK_MONOTONIC one (as taken
        # by perf_counter_ns()), refreshed at every event's start.
        self.kstamps = True
        for s in socks:
            try:
                s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            except OSError:
                self.kstamps = False
        self.real_to_mono = time.perf_counter_ns() - time.time_ns()

    def start(self, ev: Event) -> None:
        """The PU of `ev` asks every ROS for its fragment (those beyond
        the free credits wait for credits, in order)."""
        for i in range(len(self.socks)):
            self.waiting.append((ev, i))
        self.real_to_mono = time.perf_counter_ns() - time.time_ns()
        self._send()

    def _read(self, i: int, want: int) -> Tuple[int, int]:
        """Reads at most `want` bytes from connection i into the buffer;
        returns how many and the kernel's receive time (CLOCK_MONOTONIC
        ns) of the last segment read, or 0 without kernel stamps."""
        sock = self.socks[i]
        if not self.kstamps:
            return sock.recv_into(self.view, want), 0
        got, anc, _, _ = sock.recvmsg_into([self.view[:want]],
                                           STAMPS_ANCSIZE)
        for level, kind, data in anc:
            if (level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS
                    and len(data) >= TIMESPEC.size):
                sec, nsec = TIMESPEC.unpack_from(data)
                return got, sec * 10**9 + nsec + self.real_to_mono
        return got, 0

    def _send(self) -> None:
        n = 0
        while self.waiting and self.outstanding < self.window:
            if self.request_yield and n and n % self.request_yield == 0:
                os.sched_yield()
            ev, i = self.waiting.popleft()
            if self.pipeline and len(self.sent[i]) >= self.pipeline:
                self.held[i].append(ev)
                continue
            self.sent[i].append([ev, ev.sizes[i], ev.sizes[i]])
            self.outstanding += 1
            self.socks[i].send(REQ.pack(ev.number & 0xffffffff,
                                        ev.sizes[i]))
            n += 1

    def poll(self) -> List[Event]:
        """Reads what arrived; returns the events completed."""
        ready = self.sel.select(self.deadline_s)
        if not ready:
            raise TimeoutError("no fragment data for %g s (%d fragment "
                               "requests outstanding)"
                               % (self.deadline_s, self.outstanding))
        done = []
        for key, _ in ready:
            i = key.data
            q = self.sent[i]
            if not q:
                raise ConnectionError("ROS %s sent unrequested data"
                                      % self.ros[i])
            head = q[0]
            fresh = head[1] == head[2]
            got, arrived = self._read(i, min(head[1], len(self.buf)))
            if got == 0:
                raise ConnectionError("ROS %s closed" % self.ros[i])
            now = time.perf_counter_ns()
            ev = head[0]
            if not ev.first:
                ev.first = now
            ev.arrival_last = max(ev.arrival_last, arrived)
            if fresh and got >= STAMP.size:
                read, sent = STAMP.unpack_from(self.buf)
                # A ROS without stamps sends zeros; a stamp split by a
                # short send is out of order.
                if ev.t0 <= read <= sent <= now:
                    if not ev.ros_read or read < ev.ros_read:
                        ev.ros_read = read
                    if not ev.ros_sent or sent < ev.ros_sent:
                        ev.ros_sent = sent
            head[1] -= got
            if head[1]:
                continue
            q.popleft()
            if self.held[i]:
                # Next in line for a credit: it was asked for before the
                # requests still waiting for one.
                self.waiting.appendleft((self.held[i].popleft(), i))
            self.outstanding -= 1
            ev.left -= 1
            if not ev.left:
                ev.last = now
                done.append(ev)
        self._send()
        return done


def dcm_main(cfg: Dict[str, Any]) -> int:
    """Collect cfg["events"] events from every ROS in cfg["ros"], with
    cfg["pus"] processing units collecting one event each at a time."""
    ros = cfg["ros"]
    n = len(ros)
    pus = max(1, int(cfg.get("pus", 1)))
    window = cfg["credits"] or n * pus
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
    col = Collector(socks, ros, window, cfg["event_deadline_s"],
                    int(cfg.get("request_yield", 0)),
                    int(cfg.get("pipeline", 0)))

    # Warm-up: one round of small fragments, one PU, all at once.
    warm = Event(0xffffffff, 0, [WARMUP_SIZE] * n, time.perf_counter_ns())
    col.window = n
    col.start(warm)
    while warm.left:
        col.poll()
    # Warm-up events: full-size events collected the way the measured ones
    # are (the mode's credits, one PU), not measured.  The 64-byte round
    # above leaves every connection in slow start, so without them the
    # first measured event pays each ROS's slow start, which a data-taking
    # run pays once, when it starts.  Their sizes come from a generator
    # of their own: the measured events stay the same.
    col.window = cfg["credits"] or n
    wrng = random.Random(cfg["seed"] ^ 0x5a5a5a5a)
    for k in range(int(cfg.get("warmup_events", 0))):
        warm = Event(0xfffffffe - k, 0, fragment_sizes(cfg, wrng),
                     time.perf_counter_ns())
        col.start(warm)
        while warm.left:
            col.poll()
    col.window = window
    say("READY")
    if sys.stdin.readline().strip() != "GO":
        return 1
    gap_ns = int(cfg["event_gap_ms"] * 1e6)
    total = cfg["events"]
    started = 0
    idle: List[Tuple[int, int]] = [(0, pu) for pu in range(pus)]
    finished: List[Event] = []
    t_go = time.perf_counter_ns()
    while len(finished) < total:
        now = time.perf_counter_ns()
        # PUs whose processing pause is over ask for their next event.
        while idle and started < total and idle[0][0] <= now:
            _, pu = heapq.heappop(idle)
            col.start(Event(started, pu, fragment_sizes(cfg, rng), now))
            started += 1
        if col.outstanding or col.waiting:
            evs = col.poll()
        else:
            time.sleep(max(0, idle[0][0] - now) / 1e9)
            continue
        for ev in evs:
            finished.append(ev)
            say("EV %d %d %d" % (ev.number, ev.last - ev.t0,
                                 sum(ev.sizes)))
            heapq.heappush(idle, (ev.last + gap_ns, ev.pu))
    for s in socks:
        s.close()
    finished.sort(key=lambda e: e.number)
    say("DONE " + json.dumps({
        "times_ns": [e.last - e.t0 for e in finished],
        "bytes": [sum(e.sizes) for e in finished],
        "first_byte_ns": [e.first - e.t0 for e in finished],
        # 0 where no fragment carried a stamp.
        "ros_read_ns": [max(0, e.ros_read - e.t0) for e in finished],
        "ros_sent_ns": [max(0, e.ros_sent - e.t0) for e in finished],
        # The last segment's arrival at the DCM host (0 without kernel
        # stamps).
        "arrival_last_ns": [max(0, e.arrival_last - e.t0)
                            if e.arrival_last else 0 for e in finished],
        "start_ns": [e.t0 - t_go for e in finished],
        # GO on CLOCK_MONOTONIC, which every namespace shares: the events
        # of DCMs that share a link line up.
        "t_go_ns": t_go,
        "pu": [e.pu for e in finished]}))
    return 0


def hog_next(nxt: int, now: int, period: int) -> int:
    """The start of the hog's next busy time after the one that started
    at `nxt` (all in ns), when it is `now`: one period later, or, if the
    hog woke up so late that that start has passed, the first period
    start after `now`.  Missed periods are skipped, never caught up with:
    a late wake-up (the hog shares its CPU with interrupts and other
    real-time threads) must not turn into back-to-back busy times, which
    would preempt the PMD for longer than asked."""
    nxt += period
    if nxt < now:
        nxt += (now - nxt) // period * period + period
    return nxt


def hog_main(cpu: int, busy_us: int, period_us: int) -> int:
    """Take `busy_us` of every `period_us` from `cpu` at real-time
    priority (SCHED_FIFO 1, above any normal thread): the PMD thread that
    shares the CPU is preempted for exactly that long, the way a busy
    neighbour preempts it, but reproducibly.  Runs until stdin closes."""
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    say("READY")
    busy, period = busy_us * 1000, period_us * 1000
    nxt = time.perf_counter_ns()
    while True:
        end = nxt + busy
        while time.perf_counter_ns() < end:
            pass
        nxt = hog_next(nxt, time.perf_counter_ns(), period)
        # select(2) waits to the microsecond; epoll (selectors' default)
        # rounds up to whole milliseconds, which cut the busy periods
        # short (1/10 took 3% of the CPU instead of 10%).
        wait = (nxt - time.perf_counter_ns()) / 1e9
        if (select.select([sys.stdin], [], [], max(0.0, wait))[0]
                and not sys.stdin.readline()):
            return 0


def main(argv: List[str]) -> int:
    try:
        if argv[:1] == ["hog"]:
            return hog_main(int(argv[1]), int(argv[2]), int(argv[3]))
        if argv[:1] == ["ros"]:
            pin(argv[4] if len(argv) > 4 else "")
            return ros_main(argv[1].split(","), int(argv[2]), int(argv[3]),
                            argv[5:6] != ["0"])
        if argv[:1] == ["dcm"]:
            cfg = json.loads(argv[1])
            pin(cfg.get("cpus", ""))
            return dcm_main(cfg)
        say("ERROR usage: agents.py ros IPS PORT MAXSIZE [CPUS [NODELAY]] | "
            "agents.py dcm JSON | agents.py hog CPU BUSY_US PERIOD_US")
        return 2
    except (OSError, ValueError, TimeoutError) as e:
        say("ERROR %s: %s" % (type(e).__name__, e))
        return 1
    except KeyboardInterrupt:
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
