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

"""The Collector of a switch's daqrings and the exposition it renders
off the scrape path (prometheus_client's own encoders: the exposition
format is the library's, never ours); server.py serves it.

The daqrings' series are rendered once per change of the switch's
replica, not at each scrape: the daemon's main loop, once its IDL has
run, calls DaqringCollector.poke(); when the replica's change count
(version()) has moved, a thread of the collector's reads the rings that
changed (under the main loop's lock), makes their families and writes
their text with the library's encoder, in both formats (OpenMetrics and
the text format), and publishes the result whole (one reference,
replaced), which it hands to the scrape process (server.py).  A scrape
is served by that process, which never takes in the database or
renders: it answers from the last whole exposition, with the few series
read for the scrape (the exporter's own, the PMD threads' from one
worker, LatestReading) around it."""

import errno
import os
import threading
import time
from dataclasses import dataclass, field, replace
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Optional,
                    Sequence, Tuple)

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder

from .pmd import PMD_DOCS, PmdReading, parse_pmd_stats, pmd_families
from .rings import BY_NAME, RingFamilies, RingReading


class ReadError(Exception):
    """The switch's state could not be read; the scrape says so
    (daqring_exporter_ovsdb_up 0)."""


class LatestReading:
    """READ() called by one long-lived worker thread, one call at a time,
    and its newest outcome kept with the moment it came: ask() (and
    get()) asks for a call, which the worker makes once the call under
    way, if any, has returned (at most one call in flight, and at most
    one more asked for, however many ask); get() returns at once the
    newest outcome, (value, None) or (None, the ReadError), and its age
    in seconds: it never waits for the call it asked for.  Only while no
    call has returned yet does get() wait for the first outcome,
    FIRST_WAIT seconds at most (None: as long as the call takes, 0: not
    at all); it returns None if there is still none.

    The PMD series: ovs-vswitchd answers the PMD commands from its main
    loop, which is busy for a tenth of a second or more while it writes
    or takes in the statistics of thousands of interfaces; a scrape
    serves the answer the worker got last, which the scrape before it
    asked for (the counters lag, and say by how much), never a late
    exposition.  A call bounds its own time (ask_vswitchd()'s
    timeout)."""

    def __init__(self, read: Callable[[], Any],
                 first_wait: Optional[float] = None) -> None:
        self.read = read
        self.first_wait = first_wait
        self.cond = threading.Condition()
        self.outcome: Optional[Tuple[Any, Optional[ReadError]]] = None
        # When (time.monotonic()) the outcome came.
        self.at = 0.0
        self.calls = 0
        self.asked = False
        self.thread: Optional[threading.Thread] = None

    def ask(self) -> None:
        """A call asked for (the worker started at the first)."""
        with self.cond:
            self.asked = True
            if self.thread is None:
                self.thread = threading.Thread(target=self._worker,
                                               name="daqring-pmds",
                                               daemon=True)
                self.thread.start()
            self.cond.notify_all()

    def _worker(self) -> None:
        while True:
            with self.cond:
                while not self.asked:
                    self.cond.wait()
                self.asked = False
            try:
                out: Tuple[Any, Optional[ReadError]] = (self.read(), None)
            except ReadError as e:
                out = (None, e)
            except Exception as e:      # noqa: B902 -- a bug, told as such
                out = (None, ReadError("reading failed: %r" % e))
            with self.cond:
                self.outcome = out
                self.at = time.monotonic()
                self.calls += 1
                self.cond.notify_all()

    def get(self) -> Optional[Tuple[Any, Optional[ReadError], float]]:
        self.ask()
        with self.cond:
            if self.outcome is None and self.first_wait != 0:
                deadline = (None if self.first_wait is None
                            else time.monotonic() + self.first_wait)
                while self.outcome is None:
                    left = (None if deadline is None
                            else deadline - time.monotonic())
                    if left is not None and left <= 0:
                        break
                    self.cond.wait(left)
            if self.outcome is None:
                return None
            value, e = self.outcome
            return value, e, max(0.0, time.monotonic() - self.at)


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
    """One complete exposition of the daqrings (and of the collectors
    rendered with them), as a render published it: never changed after,
    so a scrape that holds it holds all of it; what the daemon hands its
    scrape process whole (server.py)."""
    # version() when the replica was read (None: no version(); the scrape
    # process is not told).
    version: Any
    # The ReadError's text if the switch could not be read (then no
    # daqring series), else None.
    error: Optional[str]
    # Content type -> the text of the daqrings' families (every METRICS
    # family but the exporter's own, OpenMetrics without "# EOF").
    texts: Dict[str, bytes]
    # The rings' values left out (daqring_exporter_invalid_values).
    invalid: int
    # The CPU time of the render (daqring_exporter_render_cpu_seconds).
    cpu_s: float
    # Content type -> the text of the other collectors' families
    # (register(): the fabric node's and planner's), written after the
    # daqrings', without "# EOF".
    extra: Dict[str, bytes] = field(default_factory=dict)


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


def _gauge(name: str, value: float, docs: Any = BY_NAME) -> Metric:
    doc = docs[name]
    fam = GaugeMetricFamily(doc.name, doc.help)
    fam.add_metric([], value)
    return fam


class PmdSeries:
    """The families read from ovs-vswitchd for a scrape (read_pmds():
    what pmd-stats-show, pmd-rxq-show and pmd-perf-show print, or a
    ReadError): daqring_exporter_vswitchd_up, the PMD threads' and the
    age of their reading, from one worker's newest answer
    (LatestReading: at most one request in flight, never waited for
    but, with FIRST_WAIT, the first); a ReadError's text told to 'log'
    once while it lasts."""

    def __init__(self, read_pmds: Callable[[], Sequence[str]],
                 first_wait: Optional[float] = None,
                 log: Optional[Callable[[str], None]] = None) -> None:
        self.reading = LatestReading(read_pmds, first_wait)
        self.log = log
        self.last_error: Optional[str] = None

    def families(self) -> Tuple[List[Metric], int]:
        """The families and the values left out (none before the first
        answer)."""
        got = self.reading.get()
        if got is None:
            return [], 0
        texts, e, age = got
        pmds: Optional[List[PmdReading]] = None
        invalid = 0
        if e is not None:
            if self.log is not None and str(e) != self.last_error:
                self.log(str(e))
            self.last_error = str(e)
        else:
            self.last_error = None
            pmds, invalid = parse_pmd_stats(*texts)
        vs_up = _gauge("daqring_exporter_vswitchd_up",
                       0 if pmds is None else 1, PMD_DOCS)
        fams = [vs_up, _gauge("daqring_exporter_pmd_reading_age_seconds",
                              age, PMD_DOCS)]
        if pmds is not None:
            fams += pmd_families(pmds)
        return fams, invalid


def compose(pub: Optional[Rendered], ctype: str,
            encoder: Callable[[Any], bytes],
            live: Callable[[], Tuple[List[Metric], int]]) -> bytes:
    """A scrape's text in format CTYPE (ENCODER writes it; without
    "# EOF"): of exposition PUB (None: none rendered yet, as if the
    switch could not be read) served as it is, and LIVE's families (the
    PMD series) read now, around its daqrings' text."""
    om = _openmetrics(ctype)
    extra = pub.extra.get(ctype, b"") if pub is not None else b""
    if pub is None or pub.error is not None:
        return encode(encoder, [_gauge("daqring_exporter_ovsdb_up", 0)],
                      om) + extra
    fams, invalid = live()
    head = encode(encoder, [_gauge("daqring_exporter_ovsdb_up", 1)] + fams,
                  om)
    tail = encode(encoder, [
        RingFamilies.invalid_family(pub.invalid + invalid),
        _gauge("daqring_exporter_render_cpu_seconds", pub.cpu_s)], om)
    return head + pub.texts[ctype] + tail + extra


# The formats rendered: OpenMetrics (what Prometheus asks for) and the
# text format, as prometheus_client's choose_encoder() names them.
FORMATS = ("application/openmetrics-text", "text/plain")
# The other collectors (register()) are rendered again at most every
# OTHERS_MIN_S after a round of the daemon's main loop, and at least
# every OTHERS_MAX_S (their series may age with time alone).
OTHERS_MIN_S = 0.2
OTHERS_MAX_S = 1.0


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
    only when version() moved, in both formats, and published whole
    (published, and on_publish(), which hands it to the scrape process:
    server.py); the collectors register()ed are rendered with it.
    Without version() every exposition() renders, waiting for 'lock'.

    read_pmds(): what ovs-vswitchd's pmd-stats-show, pmd-rxq-show and
    (optionally) pmd-perf-show print (a ReadError if it cannot be
    asked), or None for no PMD metrics: read at a scrape by whoever
    serves it (PmdSeries: the scrape process's worker; in this process,
    for exposition() and collect(), this collector's)."""

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
        # This process's PMD series (exposition(), collect()); the
        # scrape process has its own.
        self.pmds = (PmdSeries(read_pmds, None, log)
                     if read_pmds is not None else None)
        self.version = version
        self.last_error: Optional[str] = None
        # What a render keeps for the next one (under render_lock): the
        # rings' families, each family's text by content type (written
        # again only when its version moved), the formats (content type
        # -> encoder).
        self.render_lock = threading.Lock()
        self.families = RingFamilies()
        self.texts: Dict[Tuple[str, str], Tuple[int, bytes]] = {}
        self.encoders: Dict[str, Callable[[Any], bytes]] = {}
        for accept in FORMATS:
            encoder, ctype = choose_encoder(accept)
            self.encoders[ctype] = encoder
        # The other collectors (collect()) rendered with the daqrings.
        self.others: List[Any] = []
        # The last exposition rendered; replaced whole.
        self.published: Optional[Rendered] = None
        # Called with each exposition published (by the render thread).
        self.on_publish: Optional[Callable[[Rendered], None]] = None
        self.renders = 0
        # poke(): the version that last woke the thread, whether the
        # daqrings are due a render (under due_lock), when the others
        # may be rendered again, the thread.
        self.poked: Any = None
        self.due_lock = threading.Lock()
        self.rings_due = False
        self.others_at = 0.0
        self.wake = threading.Event()
        self.thread: Optional[threading.Thread] = None

    def register(self, collector: Any) -> None:
        """COLLECTOR's families (its collect(), under its own locking)
        rendered with the daqrings', after them."""
        self.others.append(collector)

    # ---------------------------------------------- the main loop's side
    def poke(self) -> None:
        """Called by the daemon's main loop after its IDL ran, 'lock'
        held: if version() moved since the last poke, the collector's
        thread (started at the first) renders the daqrings again; the
        other collectors' are rendered again anyway, OTHERS_MIN_S after
        their last render at the soonest."""
        if self.version is None:
            return
        v = self.version()
        if v != self.poked:
            self.poked = v
            with self.due_lock:
                self.rings_due = True
        elif not self.others or time.monotonic() < self.others_at:
            return
        if self.thread is None:
            self.thread = threading.Thread(target=self._renderer,
                                           name="daqring-render",
                                           daemon=True)
            self.thread.start()
        self.wake.set()

    def _renderer(self) -> None:
        while True:
            self.wake.wait(OTHERS_MAX_S if self.others else None)
            self.wake.clear()
            with self.due_lock:
                rings, self.rings_due = self.rings_due, False
            try:
                self.render(rings)
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

    def render(self, rings: bool = True) -> Rendered:
        """Reads the rings (under 'lock'; unless not RINGS and they were
        rendered before), makes their families and writes them in both
        formats (without 'lock': the readings are the render's own), and
        the other collectors' families; then publishes the exposition
        (on_publish() too if anything in it changed) and returns it."""
        with self.render_lock:
            prev = self.published
            if rings or prev is None:
                pub = self._render_rings()
                self.renders += 1
            else:
                pub = prev
            if self.others:
                pub = replace(pub, extra=self._render_others())
                self.others_at = time.monotonic() + OTHERS_MIN_S
            self.published = pub
            if self.on_publish is not None and (
                    prev is None or pub.texts is not prev.texts
                    or pub.error != prev.error or pub.extra != prev.extra):
                self.on_publish(pub)
            return pub

    def _render_rings(self) -> Rendered:
        t0 = time.thread_time()
        v, readings = self._readings()
        if readings is None:
            return Rendered(v, self.last_error, {}, 0, 0.0)
        fams = self.families
        fams.update(readings)
        texts = {}
        for ctype, encoder in self.encoders.items():
            texts[ctype] = b"".join(self._text(ctype, encoder, name)
                                    for name in RingFamilies.NAMES)
        return Rendered(v, None, texts, fams.invalid,
                        time.thread_time() - t0)

    def _render_others(self) -> Dict[str, bytes]:
        fams = [f for c in self.others for f in c.collect()]
        return {ctype: encode(encoder, fams, _openmetrics(ctype))
                for ctype, encoder in self.encoders.items()}

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

    # ---------------------------------------------------- scrapes in-process
    def _live(self) -> Tuple[List[Metric], int]:
        if self.pmds is None:
            return [], 0
        return self.pmds.families()

    def exposition(self, ctype: str,
                   encoder: Callable[[Any], bytes]) -> bytes:
        """This collector's part of a scrape in format CTYPE (ENCODER
        writes it) served by this process (the daemons' are served by
        their scrape process, server.py): the last exposition rendered,
        as it is (rendered now only if none was, or without version()),
        and the series read now."""
        pub = self.published
        if self.version is None or pub is None:
            pub = self.render()
        return compose(pub, ctype, encoder, self._live)

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
    """What /metrics serves, in this process (tests; the daemons serve
    from their scrape process, server.py): every registered collector's
    families, written by prometheus_client's encoder for the scrape
    (OpenMetrics, which Prometheus asks for, or the text format): a
    collector's exposition() if it has one (DaqringCollector: rendered
    off the scrape path), else its collect() written now."""

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
