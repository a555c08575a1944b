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

"""The Collector of a switch's daqrings, the exposition it renders off
the scrape path, and the HTTP endpoint that serves it (prometheus_client's
own server and encoders: the exposition format is the library's, never
ours).

The daqrings' series are rendered once per change of the switch's
replica, not at each scrape: the daemon's main loop, once its IDL has
run, calls DaqringCollector.poke(); when the replica's change count
(version()) has moved, a thread of the collector's reads the rings that
changed (under the main loop's lock), makes their families and writes
their text with the library's encoder, in every format a scrape has
asked for, and publishes the result whole (one reference, replaced).  A
scrape serves the last exposition published as it is, with the few
series read at each scrape (the exporter's own, the PMD threads') around
it: it never waits for the replica's update or for a render, and a
scrape during a render serves the previous complete exposition."""

import errno
import os
import threading
import time
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Optional,
                    Sequence, Tuple)

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder

from .pmd import PMD_METRICS, PmdReading, parse_pmd_stats, pmd_families
from .rings import BY_NAME, RingFamilies, RingReading


class ReadError(Exception):
    """The switch's state could not be read; the scrape says so
    (daqring_exporter_ovsdb_up 0)."""


class LatestReading:
    """READ() called in a thread of its own, one call at a time, and its
    newest outcome kept: get() starts a call (unless one is under way)
    and waits for it WAIT seconds at most when it has an earlier outcome
    (for as long as the call takes when it has none), then returns the
    newest outcome, (value, None) or (None, the ReadError).

    The PMD series of a scrape: ovs-vswitchd answers the PMD commands
    from its main loop, which is busy for a tenth of a second or more
    while it writes or takes in the statistics of thousands of
    interfaces; a scrape that comes then serves the answer the previous
    call got (the counters only lag), not a late exposition.  A call
    bounds its own time (ask_vswitchd()'s timeout)."""

    def __init__(self, read: Callable[[], Any], wait: float) -> None:
        self.read = read
        self.wait = wait
        self.cond = threading.Condition()
        self.outcome: Optional[Tuple[Any, Optional[ReadError]]] = None
        self.calls = 0
        self.busy = False

    def _call(self) -> None:
        try:
            out: Tuple[Any, Optional[ReadError]] = (self.read(), None)
        except ReadError as e:
            out = (None, e)
        except Exception as e:      # noqa: B902 -- a bug, told as such
            out = (None, ReadError("reading failed: %r" % e))
        with self.cond:
            self.outcome = out
            self.calls += 1
            self.busy = False
            self.cond.notify_all()

    def get(self) -> Tuple[Any, Optional[ReadError]]:
        with self.cond:
            if not self.busy:
                self.busy = True
                threading.Thread(target=self._call, name="daqring-read",
                                 daemon=True).start()
            calls = self.calls
            deadline = time.monotonic() + self.wait
            while self.calls == calls:
                if self.outcome is None:
                    self.cond.wait()
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(left)
            assert self.outcome is not None
            return self.outcome


# How long a scrape waits for ovs-vswitchd's answer to the PMD commands
# when it has an earlier one (LatestReading).
PMD_WAIT_S = 0.05

# What the PMD metrics are read from (pmd.py): pmd-stats-show (packets
# and cycles), pmd-rxq-show (rx queues), pmd-perf-show (sleep: OVS 3.1
# and 3.5 print it there only; 4.0's pmd-stats-show is pmd-perf-show).
PMD_COMMANDS = ("dpif-netdev/pmd-stats-show", "dpif-netdev/pmd-rxq-show",
                "dpif-netdev/pmd-perf-show")


def ask_vswitchd(target: str, timeout: float,
                 commands: Sequence[str] = PMD_COMMANDS) -> List[str]:
    """What ovs-vswitchd's unixctl COMMANDS print, asked over one
    connection to its control socket (TARGET as ovs-appctl -t takes it:
    a socket path, or a daemon's name in $OVS_RUNDIR): no process
    started per scrape.  ReadError if it cannot be asked in TIMEOUT
    seconds (the library's own client waits for ever)."""
    import ovs.jsonrpc
    import ovs.stream
    import ovs.unixctl
    from ..daqctl.ovsdb import request_reply
    error, path = ovs.unixctl.socket_name_from_target(target)
    if error:
        raise ReadError("%s: %s" % (target, path))
    deadline = time.monotonic() + timeout
    error, stream = ovs.stream.Stream.open_block(
        ovs.stream.Stream.open("unix:" + path), int(timeout * 1000))
    if error:
        raise ReadError("%s: cannot connect: %s" % (path,
                                                    os.strerror(error)))
    rpc = ovs.jsonrpc.Connection(stream)
    out = []
    try:
        for cmd in commands:
            req = ovs.jsonrpc.Message.create_request(cmd, [])
            error, reply = request_reply(rpc, req, deadline)
            if error == errno.ETIMEDOUT:
                raise ReadError("%s: %s: no answer in %g s"
                                % (path, cmd, timeout))
            if error:
                raise ReadError("%s: %s: %s" % (path, cmd,
                                                os.strerror(error)))
            assert reply is not None
            if reply.error is not None:
                raise ReadError("%s: %s: %s" % (path, cmd, reply.error))
            out.append(str(reply.result))
    finally:
        rpc.close()
    return out


@dataclass(frozen=True)
class Rendered:
    """One complete exposition of the daqrings, as a render published it
    (never changed after: a scrape that holds it holds all of it)."""
    # version() when the replica was read (None: no version()).
    version: Any
    # The ReadError's text if the switch could not be read (then no
    # series), else None.
    error: Optional[str]
    # Content type -> the text of the daqrings' families (every METRICS
    # family but the exporter's own, OpenMetrics without "# EOF").
    texts: Dict[str, bytes]
    # The rings' values left out (daqring_exporter_invalid_values).
    invalid: int
    # The CPU time of the render (daqring_exporter_render_cpu_seconds).
    cpu_s: float


def encode(encoder: Callable[[Any], bytes], fams: Iterable[Metric],
           om: bool) -> bytes:
    """FAMS as ENCODER (prometheus_client's) writes them, without the
    OpenMetrics "# EOF" (the exposition ends with it once)."""
    text = encoder(_Families(fams))
    if om and text.endswith(EOF_LINE):
        text = text[:-len(EOF_LINE)]
    return text


class _Families:
    """A registry of some families, for an encoder."""

    def __init__(self, fams: Iterable[Metric]) -> None:
        self.fams = list(fams)

    def collect(self) -> List[Metric]:
        return self.fams


EOF_LINE = b"# EOF\n"


def _openmetrics(ctype: str) -> bool:
    return ctype.startswith("application/openmetrics-text")


def _gauge(name: str, value: float) -> Metric:
    doc = BY_NAME[name]
    fam = GaugeMetricFamily(doc.name, doc.help)
    fam.add_metric([], value)
    return fam


class DaqringCollector:
    """A switch's daqrings and PMD threads as metrics.

    read() (called under 'lock', which the caller shares with whatever
    else uses the OVSDB connection: its main loop runs the IDL under it)
    gives the daqrings' readings, or raises ReadError (the exposition is
    then daqring_exporter_ovsdb_up 0 and nothing else; 'log' is told
    why, once while it lasts).

    version() (called under 'lock'), if given, is what changes whenever
    read() would read something new (the IDL's change_seqno, its
    connection): the daemon calls poke() once its IDL has run, and the
    daqrings' exposition is rendered again by the collector's thread
    only when version() moved; scrapes serve what was rendered last
    (exposition()).  Without version() every scrape renders, waiting
    for 'lock'.

    read_pmds(): what ovs-vswitchd's pmd-stats-show, pmd-rxq-show and
    (optionally) pmd-perf-show print (a ReadError if it cannot be asked;
    called at each scrape, without 'lock', in a thread of its own: a
    scrape waits PMD_WAIT_S at most for it when an earlier call
    answered, and serves that answer if this one is late,
    LatestReading), or None for no PMD metrics."""

    OWN = ("daqring_exporter_ovsdb_up", "daqring_exporter_invalid_values",
           "daqring_exporter_render_cpu_seconds")

    def __init__(self, read: Callable[[], List[RingReading]],
                 lock: Optional[Any] = None,
                 log: Optional[Callable[[str], None]] = None,
                 read_pmds: Optional[Callable[[], Sequence[str]]] = None,
                 version: Optional[Callable[[], Any]] = None) -> None:
        self.read = read
        self.lock = lock if lock is not None else threading.Lock()
        self.log = log
        self.read_pmds = read_pmds
        # The scrapes' PMD series: at most PMD_WAIT_S late.
        self.pmd_reading = (LatestReading(read_pmds, PMD_WAIT_S)
                            if read_pmds is not None else None)
        self.version = version
        self.last_error: Optional[str] = None
        self.last_pmd_error: Optional[str] = None
        # What a render keeps for the next one (under render_lock): the
        # rings' families, each family's text by content type (written
        # again only when its version moved), the formats scrapes asked
        # for (content type -> encoder).
        self.render_lock = threading.Lock()
        self.families = RingFamilies()
        self.texts: Dict[Tuple[str, str], Tuple[int, bytes]] = {}
        # (OpenMetrics from the start: what Prometheus asks for.)
        encoder, ctype = choose_encoder("application/openmetrics-text")
        self.encoders: Dict[str, Callable[[Any], bytes]] = {ctype: encoder}
        # The last exposition rendered; replaced whole.
        self.published: Optional[Rendered] = None
        self.renders = 0
        # poke(): the version that last woke the thread, and the thread.
        self.poked: Any = None
        self.wake = threading.Event()
        self.thread: Optional[threading.Thread] = None

    # ---------------------------------------------- the main loop's side
    def poke(self) -> None:
        """Called by the daemon's main loop after its IDL ran, 'lock'
        held: if version() moved since the last poke, the collector's
        thread (started at the first) renders the daqrings again."""
        if self.version is None:
            return
        v = self.version()
        if v == self.poked:
            return
        self.poked = v
        if self.thread is None:
            self.thread = threading.Thread(target=self._renderer,
                                           name="daqring-render",
                                           daemon=True)
            self.thread.start()
        self.wake.set()

    def _renderer(self) -> None:
        while True:
            self.wake.wait()
            self.wake.clear()
            try:
                self.render()
            except Exception as e:      # noqa: B902 -- told, not fatal
                # (A bug: the scrapes serve the last exposition.)
                if self.log is not None:
                    self.log("rendering the daqrings failed: %r" % e)

    # ------------------------------------------------------------ rendering
    def _readings(self) -> Tuple[Any, Optional[List[RingReading]]]:
        """version() and read(), under 'lock'; None (told to 'log') if
        the switch cannot be read."""
        with self.lock:
            v = self.version() if self.version is not None else None
            try:
                readings = self.read()
            except ReadError as e:
                if self.log is not None and str(e) != self.last_error:
                    self.log(str(e))
                self.last_error = str(e)
                return v, None
        self.last_error = None
        return v, readings

    def render(self) -> Rendered:
        """Reads the rings (under 'lock'), makes their families and
        writes them in every format asked for so far (without 'lock':
        the readings are the render's own), then publishes the
        exposition; returns it."""
        with self.render_lock:
            t0 = time.thread_time()
            v, readings = self._readings()
            if readings is None:
                pub = Rendered(v, self.last_error, {}, 0, 0.0)
            else:
                fams = self.families
                fams.update(readings)
                texts = {}
                for ctype, encoder in self.encoders.items():
                    texts[ctype] = b"".join(
                        self._text(ctype, encoder, name)
                        for name in RingFamilies.NAMES)
                pub = Rendered(v, None, texts, fams.invalid,
                               time.thread_time() - t0)
            self.published = pub
            self.renders += 1
            return pub

    def _text(self, ctype: str, encoder: Callable[[Any], bytes],
              name: str) -> bytes:
        """Family NAME's text: written again only if the family changed
        since it was last written (its version)."""
        version = self.families.version[name]
        got = self.texts.get((ctype, name))
        if got is not None and got[0] == version:
            return got[1]
        text = encode(encoder, [self.families.family(name)],
                      _openmetrics(ctype))
        self.texts[(ctype, name)] = (version, text)
        return text

    # ------------------------------------------------------------- scrapes
    def _pmds(self) -> Tuple[Optional[List[PmdReading]], int]:
        """The PMD threads (None: ovs-vswitchd could not be asked) and the
        values left out."""
        assert self.pmd_reading is not None
        texts, e = self.pmd_reading.get()
        if e is not None:
            if self.log is not None and str(e) != self.last_pmd_error:
                self.log(str(e))
            self.last_pmd_error = str(e)
            return None, 0
        self.last_pmd_error = None
        return parse_pmd_stats(*texts)

    def _live(self) -> Tuple[List[Metric], int]:
        """The families read at each scrape: ovs-vswitchd's up gauge and
        the PMD threads' (none without read_pmds), and their values
        left out."""
        if self.read_pmds is None:
            return [], 0
        pmds, invalid = self._pmds()
        doc = PMD_METRICS[-1]
        vs_up = GaugeMetricFamily(doc.name, doc.help)
        vs_up.add_metric([], 0 if pmds is None else 1)
        return [vs_up] + (pmd_families(pmds) if pmds is not None
                          else []), invalid

    def exposition(self, ctype: str,
                   encoder: Callable[[Any], bytes]) -> bytes:
        """This collector's part of a scrape in format CTYPE (ENCODER
        writes it): the last exposition rendered, served as it is (it is
        rendered now only if none was, in this format, or without
        version()), and the series read now."""
        pub = self.published
        if (self.version is None or pub is None
                or (pub.error is None and ctype not in pub.texts)):
            with self.render_lock:
                self.encoders.setdefault(ctype, encoder)
            pub = self.render()
        om = _openmetrics(ctype)
        if pub.error is not None:
            return encode(encoder, [_gauge("daqring_exporter_ovsdb_up", 0)],
                          om)
        live, invalid = self._live()
        head = encode(encoder, [_gauge("daqring_exporter_ovsdb_up", 1)]
                      + live, om)
        tail = encode(encoder, [
            RingFamilies.invalid_family(pub.invalid + invalid),
            _gauge("daqring_exporter_render_cpu_seconds", pub.cpu_s)], om)
        return head + pub.texts[ctype] + tail

    def describe(self) -> List[Metric]:
        # Registration must not read the switch (it would, to learn the
        # names, without describe()).
        return []

    def collect(self) -> Iterator[Metric]:
        """The same families as a registry collects them (the rings read
        and their families made now)."""
        with self.render_lock:
            t0 = time.thread_time()
            _, readings = self._readings()
            if readings is not None:
                self.families.update(readings)
                fams = [self.families.family(n)
                        for n in RingFamilies.NAMES]
                invalid = self.families.invalid
            cpu = time.thread_time() - t0
        if readings is None:
            yield _gauge("daqring_exporter_ovsdb_up", 0)
            return
        yield _gauge("daqring_exporter_ovsdb_up", 1)
        live, more = self._live()
        yield from live
        yield from fams
        yield RingFamilies.invalid_family(invalid + more)
        yield _gauge("daqring_exporter_render_cpu_seconds", cpu)


class Exposition:
    """What /metrics serves: every registered collector's families,
    written by prometheus_client's encoder for the scrape (OpenMetrics,
    which Prometheus asks for, or the text format): a collector's
    exposition() if it has one (DaqringCollector: rendered off the
    scrape path), else its collect() written now."""

    def __init__(self) -> None:
        self.collectors: List[Any] = []

    def register(self, collector: Any) -> None:
        self.collectors.append(collector)

    def render(self, accept: Optional[str]) -> Tuple[bytes, str]:
        encoder, ctype = choose_encoder(accept or "")
        om = _openmetrics(ctype)
        parts = []
        for c in self.collectors:
            if hasattr(c, "exposition"):
                parts.append(c.exposition(ctype, encoder))
            else:
                parts.append(encode(encoder, c.collect(), om))
        if om:
            parts.append(EOF_LINE)
        return b"".join(parts), ctype


def serve(collector: Any, host: str, port: int) -> Exposition:
    """Serves COLLECTOR (and whatever is registered later on the
    Exposition returned; no process or platform collectors) on
    http://HOST:PORT/metrics, from threads of prometheus_client's WSGI
    server; raises OSError if the address cannot be bound."""
    from prometheus_client import exposition as pe
    expo = Exposition()
    expo.register(collector)

    def app(environ: Dict[str, Any], start_response: Any) -> List[bytes]:
        if environ.get("PATH_INFO") == "/favicon.ico":
            start_response("200 OK", [])
            return [b""]
        body, ctype = expo.render(environ.get("HTTP_ACCEPT"))
        start_response("200 OK", [("Content-Type", ctype)])
        return [body]

    class Server(pe.ThreadingWSGIServer):
        """prometheus_client's threading server, of the address's
        family."""

    Server.address_family, addr = pe._get_best_family(host, port)
    httpd = pe.make_server(addr, port, app, Server,
                           handler_class=pe._SilentHandler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    return expo
