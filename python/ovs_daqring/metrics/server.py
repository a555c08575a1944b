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

"""The scrape process: the HTTP endpoint of a daemon's metrics, in a
process of its own that does nothing else.

A scrape is served by a process that never takes in the database or
renders: it answers from the last whole exposition.  The daemon
(ovs-daqring-exporter, ovs-daqfabric-agent --metrics-address) binds the
address (serve(): an error is the daemon's, before it detaches), then,
at the first round of its main loop (Served), forks the scrape process,
before any thread of its starts.  Its render thread hands the process
each exposition it publishes (collector.Rendered: both formats, the
other collectors' text) whole over a socket pair; the process reads
each one completely before it swaps it in (one reference, replaced), so
a scrape serves one exposition, all of it, never part of one.  The PMD
series are read by one worker of the scrape process (LatestReading: one
request to ovs-vswitchd in flight at most, asked for by each scrape,
whose answer the next scrape serves, with its age): a scrape waits for
nothing, neither the daemon's interpreter (its IDL taking an update in,
its render; the daemon may even be stopped) nor ovs-vswitchd.

The process dies with the daemon: at the end of the socket pair (EOF),
and by PR_SET_PDEATHSIG if the daemon is killed; the daemon exits (with
the status that makes --monitor restart it) if the process dies.

The process writes no log of its own: its lines (a PMD reading that
failed) go back over the socket pair (LogRelay), one per line, and the
daemon logs them (ScrapeServer.run()), so that its log options,
vlog/set and vlog/reopen (a rotated log) hold for them too."""

import ctypes
import gc
import json
import os
import signal
import socket
import stat
import struct
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from prometheus_client.exposition import choose_encoder

from .collector import (EOF_LINE, DaqringCollector, PmdSeries, Rendered,
                        _openmetrics, compose)

# A frame: its header's length, the header (JSON: the exposition's
# scalars and its texts' content types and lengths), the texts.
_LEN = struct.Struct("!I")
# The scrape process's name (/proc/PID/comm, what ps and top show).
PROCESS_NAME = b"daqring-scrapes"
# How long close() waits for the scrape process to exit before killing it.
CLOSE_WAIT_S = 5.0
# The signals whose handlers (ovs.fatal_signal's: they remove the
# daemon's pidfile and control socket) the scrape process resets.
_FATAL = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM)
_PR_SET_NAME = 15
_PR_SET_PDEATHSIG = 1
# The prefix of the scrape process's lines in the daemon's log.
LOG_PREFIX = "scrape process: "
# A longer line of the scrape process's is logged in pieces of this size.
MAX_LINE = 65536


class LogRelay:
    """The scrape process's log: each message sent to the daemon over
    CONN as one line (its own newlines as spaces), from any of the
    process's threads; nothing if the daemon is gone."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.lock = threading.Lock()

    def __call__(self, msg: str) -> None:
        line = " ".join(msg.splitlines()) + "\n"
        with self.lock:
            try:
                self.conn.sendall(line.encode("utf-8", "replace"))
            except OSError:
                pass


def pack(pub: Rendered, same_texts: bool = False) -> List[bytes]:
    """The frame of exposition PUB, in pieces to send in order; with
    SAME_TEXTS, without the daqrings' texts, which are those of the
    exposition sent before (only the other collectors' changed)."""
    texts = [] if same_texts else sorted(pub.texts.items())
    extra = sorted(pub.extra.items())
    head = json.dumps({"error": pub.error, "invalid": pub.invalid,
                       "cpu_s": pub.cpu_s, "same_texts": same_texts,
                       "texts": [[c, len(t)] for c, t in texts],
                       "extra": [[c, len(t)] for c, t in extra]}).encode()
    return [_LEN.pack(len(head)), head] + [t for _, t in texts] + \
        [t for _, t in extra]


def _read(conn: socket.socket, n: int) -> Optional[bytes]:
    """N bytes from CONN, or None at its end."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = conn.recv_into(view[got:])
        if k == 0:
            return None
        got += k
    return bytes(buf)


def receive(conn: socket.socket,
            prev: Optional[Rendered] = None) -> Optional[Rendered]:
    """The next whole exposition sent on CONN (pack()), or None at its
    end (a frame cut short included: never part of one); PREV, the one
    received before, gives the daqrings' texts of a frame without
    them."""
    n = _read(conn, _LEN.size)
    if n is None:
        return None
    raw = _read(conn, _LEN.unpack(n)[0])
    if raw is None:
        return None
    head = json.loads(raw)
    parts: List[Dict[str, bytes]] = [{}, {}]
    for i, key in enumerate(("texts", "extra")):
        for ctype, size in head[key]:
            text = _read(conn, size)
            if text is None:
                return None
            parts[i][ctype] = text
    if head["same_texts"] and prev is not None:
        parts[0] = prev.texts
    return Rendered(None, head["error"], parts[0], head["invalid"],
                    head["cpu_s"], parts[1])


class Scrapes:
    """What the scrape process serves: the last whole exposition the
    daemon handed it (swap()), with the PMD series of its one worker
    (read_pmds(), as DaqringCollector's; asked at the start and after
    each scrape, never waited for)."""

    def __init__(self, read_pmds: Optional[Callable[[], Sequence[str]]]
                 = None, log: Optional[Callable[[str], None]] = None
                 ) -> None:
        self.published: Optional[Rendered] = None
        self.pmds = (PmdSeries(read_pmds, 0, log)
                     if read_pmds is not None else None)
        if self.pmds is not None:
            self.pmds.reading.ask()

    def swap(self, pub: Rendered) -> None:
        self.published = pub

    def _live(self) -> Tuple[List[Any], int]:
        if self.pmds is None:
            return [], 0
        return self.pmds.families()

    def render(self, accept: Optional[str]) -> Tuple[bytes, str]:
        """The body and content type of a scrape that accepts ACCEPT."""
        encoder, ctype = choose_encoder(accept or "")
        body = compose(self.published, ctype, encoder, self._live)
        if _openmetrics(ctype):
            body += EOF_LINE
        return body, ctype


def _app(scrapes: Scrapes) -> Callable[..., List[bytes]]:
    def app(environ: Dict[str, Any], start_response: Any) -> List[bytes]:
        if environ.get("PATH_INFO") == "/favicon.ico":
            start_response("200 OK", [])
            return [b""]
        body, ctype = scrapes.render(environ.get("HTTP_ACCEPT"))
        start_response("200 OK", [("Content-Type", ctype)])
        return [body]
    return app


def _close_inherited(keep: Sequence[int]) -> None:
    """Closes what the scrape process inherited of the daemon's sockets
    and pipes (its OVSDB sessions, which would otherwise outlive the
    daemon's own close, its control socket) but KEEP; files (the log)
    stay open."""
    # Garbage of the daemon's first (a socket it dropped, closed when
    # collected, would close the fd a new one of ours took).
    gc.collect()
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2 or fd in keep:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
        except OSError:
            pass


def _scrape_process(httpd: Any, conn: socket.socket, daemon: int,
                    read_pmds: Optional[Callable[[], Sequence[str]]],
                    log: Optional[Callable[[str], None]]) -> None:
    """The scrape process's life: serves HTTPD from a thread, swaps in
    each exposition received on CONN until its end (the daemon, pid
    DAEMON, gone)."""
    for sig in _FATAL:
        signal.signal(sig, signal.SIG_DFL)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    libc.prctl(_PR_SET_NAME, ctypes.c_char_p(PROCESS_NAME))
    if os.getppid() != daemon:
        return
    _close_inherited((httpd.socket.fileno(), conn.fileno()))
    scrapes = Scrapes(read_pmds, log)
    httpd.set_app(_app(scrapes))
    threading.Thread(target=httpd.serve_forever, name="daqring-http",
                     daemon=True).start()
    while True:
        pub = receive(conn, scrapes.published)
        if pub is None:
            return
        scrapes.swap(pub)


class ScrapeProcessDied(Exception):
    """The scrape process exited: the daemon cannot serve its metrics."""


class ScrapeServer:
    """The daemon's side of its scrape process: the address bound
    (OSError if it cannot be), the process forked by start(), each
    exposition COLLECTOR publishes handed to it (publish()), the
    process watched (run(), wait()) and stopped (close())."""

    def __init__(self, collector: DaqringCollector, host: str, port: int,
                 log: Optional[Callable[[str], None]] = None) -> None:
        from prometheus_client import exposition as pe
        self.collector = collector
        self.log = log

        class Server(pe.ThreadingWSGIServer):
            """prometheus_client's threading server, of the address's
            family."""

        Server.address_family, addr = pe._get_best_family(host, port)
        self.httpd = pe.make_server(addr, port, lambda e, s: [], Server,
                                    handler_class=pe._SilentHandler)
        self.started = False
        self.pid: Optional[int] = None
        self.conn: Optional[socket.socket] = None
        self.send_lock = threading.Lock()
        self.broken = False
        # The daqrings' texts sent last (not sent again while the same).
        self.sent_texts: Optional[Dict[str, bytes]] = None
        # What the scrape process sent of a log line not ended yet.
        self.partial_line = b""

    def register(self, collector: Any) -> None:
        """COLLECTOR's families (collect()) served too, rendered with the
        daqrings' (DaqringCollector.register())."""
        self.collector.register(collector)

    def start(self) -> None:
        """Forks the scrape process (once), before the daemon's threads
        start (fork copies only the calling thread)."""
        if self.started:
            return
        self.started = True
        mine, theirs = socket.socketpair()
        daemon = os.getpid()
        pid = os.fork()
        if pid == 0:
            status = 0
            relay = LogRelay(theirs)
            try:
                mine.close()
                _scrape_process(self.httpd, theirs, daemon,
                                self.collector.read_pmds, relay)
            except BaseException as e:  # noqa: B902 -- the process's end
                status = 1
                relay("failed: %r" % e)
            finally:
                # Nothing of the daemon's (its atexit hooks remove its
                # pidfile and control socket).
                os._exit(status)
        theirs.close()
        self.httpd.socket.close()
        self.pid, self.conn = pid, mine
        self.collector.on_publish = self.publish
        if self.collector.published is not None:
            self.publish(self.collector.published)

    def publish(self, pub: Rendered) -> None:
        """Hands exposition PUB to the scrape process (the render thread
        waits while the process reads it)."""
        with self.send_lock:
            if self.conn is None or self.broken:
                return
            try:
                for piece in pack(pub, pub.texts is self.sent_texts):
                    self.conn.sendall(piece)
                self.sent_texts = pub.texts
            except OSError as e:
                # (The process is gone: run() says so.)
                self.broken = True
                if self.log is not None:
                    self.log("cannot hand the scrape process the "
                             "exposition: %s" % e)

    def run(self) -> None:
        """Logs the scrape process's lines (LogRelay); raises
        ScrapeProcessDied once the process is gone."""
        self.start()
        if self.conn is None or self.pid is None:
            return
        gone = False
        while not gone:
            try:
                got = self.conn.recv(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            except OSError:
                got = b""
            gone = got == b""
            self.relay_lines(got)
        if gone:
            _, status = os.waitpid(self.pid, 0)
            self.pid = None
            raise ScrapeProcessDied("the scrape process (HTTP) exited: %s"
                                    % _status(status))

    def relay_lines(self, got: bytes) -> None:
        """Logs each whole line of the scrape process's in GOT (after
        what came before it of the first), a longer one than MAX_LINE in
        pieces of MAX_LINE, and with GOT empty (the process is gone)
        what it left unterminated."""
        *lines, partial = (self.partial_line + got).split(b"\n")
        while len(partial) > MAX_LINE:
            lines.append(partial[:MAX_LINE])
            partial = partial[MAX_LINE:]
        if not got and partial:
            lines.append(partial)
            partial = b""
        self.partial_line = partial
        for line in lines:
            if self.log is not None:
                self.log(LOG_PREFIX + line.decode("utf-8", "replace"))

    def wait(self, poller: Any) -> None:
        """POLLER wakes when the scrape process has written a line or is
        gone."""
        import ovs.poller
        if self.conn is not None:
            poller.fd_wait(self.conn.fileno(), ovs.poller.POLLIN)

    def close(self) -> None:
        """Ends the scrape process (the end of its socket pair) and reaps
        it; killed if it does not exit in CLOSE_WAIT_S."""
        if self.conn is not None:
            try:
                self.conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.conn.close()
        else:
            self.httpd.socket.close()
        pid, self.pid = self.pid, None
        if pid is None:
            return
        deadline = time.monotonic() + CLOSE_WAIT_S
        while os.waitpid(pid, os.WNOHANG)[0] == 0:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return
            time.sleep(0.01)


def _status(status: int) -> str:
    if os.WIFSIGNALED(status):
        return "killed by signal %d" % os.WTERMSIG(status)
    return "exit status %d" % os.WEXITSTATUS(status)


class Served:
    """DAEMON (run(), wait(poller), close(), exiting: what
    daemonloop.serve() runs) with its scrape process beside it: the
    process started at the first run(), before the daemon's (before
    its threads); if the process dies, the daemon exits with the status
    that makes --monitor restart it."""

    def __init__(self, daemon: Any, scrapes: ScrapeServer) -> None:
        self.daemon = daemon
        self.scrapes = scrapes

    @property
    def exiting(self) -> bool:
        return bool(self.daemon.exiting)

    def run(self) -> None:
        try:
            self.scrapes.run()
        except ScrapeProcessDied as e:
            import ovs.daemon
            if self.scrapes.log is not None:
                self.scrapes.log("%s: exiting (--monitor restarts the "
                                 "daemon)" % e)
            raise SystemExit(ovs.daemon.RESTART_EXIT_CODE)
        self.daemon.run()

    def wait(self, poller: Any) -> None:
        self.scrapes.wait(poller)
        self.daemon.wait(poller)

    def close(self) -> None:
        try:
            self.daemon.close()
        finally:
            self.scrapes.close()


def serve(collector: DaqringCollector, host: str, port: int,
          log: Optional[Callable[[str], None]] = None) -> ScrapeServer:
    """COLLECTOR's exposition (and the collectors register()ed on the
    ScrapeServer returned) to be served on http://HOST:PORT/metrics by
    a scrape process (no process or platform collectors): the address
    bound now (OSError if it cannot be), the process started by the
    ScrapeServer's start() or first run() (Served)."""
    return ScrapeServer(collector, host, port, log)
