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

"""The Collector that reads a switch's daqrings at each scrape, and the
HTTP endpoint that serves it (prometheus_client's own server: the
exposition format is the library's, never ours)."""

import errno
import os
import threading
import time
from typing import (Any, Callable, Dict, Iterator, List, Optional, Sequence,
                    Tuple)

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder

from .pmd import PMD_METRICS, PmdReading, parse_pmd_stats, pmd_families
from .rings import BY_NAME, RingFamilies, RingReading


class ReadError(Exception):
    """The switch's state could not be read; the scrape says so
    (daqring_exporter_ovsdb_up 0)."""


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
    import ovs.poller
    import ovs.stream
    import ovs.unixctl
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
            error = rpc.send(req)
            reply = None
            while not error and reply is None:
                rpc.run()
                error, msg = rpc.recv()
                if error == errno.EAGAIN:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise ReadError("%s: %s: no answer in %g s"
                                        % (path, cmd, timeout))
                    poller = ovs.poller.Poller()
                    rpc.wait(poller)
                    rpc.recv_wait(poller)
                    poller.timer_wait(int(left * 1000) + 1)
                    poller.block()
                    error = 0
                elif not error and msg.id == req.id:
                    reply = msg
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


class DaqringCollector:
    """A prometheus_client collector: at each scrape, read() (under
    'lock', which the caller shares with whatever else uses the OVSDB
    connection) gives the daqrings' readings.  A ReadError makes the
    scrape serve daqring_exporter_ovsdb_up 0 and nothing else; 'log' is
    told why."""

    def __init__(self, read: Callable[[], List[RingReading]],
                 lock: Optional[Any] = None,
                 log: Optional[Callable[[str], None]] = None,
                 read_pmds: Optional[Callable[[], Sequence[str]]] = None
                 ) -> None:
        """read_pmds: what ovs-vswitchd's pmd-stats-show, pmd-rxq-show
        and (optionally) pmd-perf-show print (a ReadError if it cannot
        be asked; called without 'lock'), or None for no PMD metrics."""
        self.read = read
        self.lock = lock if lock is not None else threading.Lock()
        self.log = log
        self.read_pmds = read_pmds
        self.last_error: Optional[str] = None
        self.last_pmd_error: Optional[str] = None
        self.families = RingFamilies()
        self.scrape_lock = threading.Lock()
        self.last_readings: Optional[List[RingReading]] = None

    def _pmds(self) -> Tuple[Optional[List[PmdReading]], int]:
        """The PMD threads (None: ovs-vswitchd could not be asked) and the
        values left out."""
        assert self.read_pmds is not None
        try:
            texts = self.read_pmds()
        except ReadError as e:
            if self.log is not None and str(e) != self.last_pmd_error:
                self.log(str(e))
            self.last_pmd_error = str(e)
            return None, 0
        self.last_pmd_error = None
        return parse_pmd_stats(*texts)

    def describe(self) -> List[Metric]:
        # Registration must not read the switch (it would, to learn the
        # names, without describe()).
        return []

    def _read(self) -> List[RingReading]:
        """read() under 'lock'.  While the lock is taken (the daemon's
        main loop takes the OVSDB's update of thousands of rows into its
        replica, or the agent applies a slice), the readings of the last
        scrape that read: they are the switch's as they were before that
        update (at most a statistics interval old), and a scrape does
        not wait for it."""
        if self.lock.acquire(blocking=self.last_readings is None):
            try:
                self.last_readings = self.read()
            except ReadError:
                self.last_readings = None
                raise
            finally:
                self.lock.release()
        assert self.last_readings is not None
        return self.last_readings

    def chunks(self) -> Iterator[Tuple[Any, Callable[[], Metric]]]:
        """The scrape's families, each as (key, make): make() builds it;
        key (None: none) is the same only while the family is the same
        (Exposition serves its text again then).  The readings are
        taken under 'lock' (_read()); the families are made under this
        collector's own lock (concurrent scrapes share its state)."""
        up = BY_NAME["daqring_exporter_ovsdb_up"]
        up_family = GaugeMetricFamily(up.name, up.help)
        with self.scrape_lock:
            try:
                readings = self._read()
            except ReadError as e:
                if self.log is not None and str(e) != self.last_error:
                    self.log(str(e))
                self.last_error = str(e)
                up_family.add_metric([], 0)
                yield None, lambda: up_family
                return
            self.last_error = None
            up_family.add_metric([], 1)
            yield None, lambda: up_family
            invalid = 0
            if self.read_pmds is not None:
                pmds, invalid = self._pmds()
                doc = PMD_METRICS[-1]
                vs_up = GaugeMetricFamily(doc.name, doc.help)
                vs_up.add_metric([], 0 if pmds is None else 1)
                yield None, lambda: vs_up
                if pmds is not None:
                    for f in pmd_families(pmds):
                        yield None, (lambda f=f: f)
            fams = self.families
            fams.update(readings)
            for name in fams.NAMES:
                key = (None if name == "daqring_exporter_invalid_values"
                       else (id(self), name, fams.version[name]))
                yield key, (lambda name=name: fams.family(name, invalid))

    def collect(self) -> Iterator[Metric]:
        for _, make in self.chunks():
            yield make()


class _One:
    """A registry of one family, for an encoder."""

    def __init__(self, fam: Metric) -> None:
        self.fam = fam

    def collect(self) -> List[Metric]:
        return [self.fam]


EOF_LINE = b"# EOF\n"


class Exposition:
    """What /metrics serves: every registered collector's families, each
    written by prometheus_client's encoder for the scrape (OpenMetrics,
    which Prometheus asks for, or the text format), one family at a time
    so that a family whose key (a collector's chunks()) is the same as at
    the last scrape is served from the text written then.  A collector
    without chunks() has its collect() written at every scrape."""

    def __init__(self) -> None:
        self.collectors: List[Any] = []
        # (content type, key but its version) -> (key, text)
        self.cache: Dict[Tuple[str, Any], Tuple[Any, bytes]] = {}
        self.lock = threading.Lock()

    def register(self, collector: Any) -> None:
        self.collectors.append(collector)

    def render(self, accept: Optional[str]) -> Tuple[bytes, str]:
        encoder, ctype = choose_encoder(accept or "")
        om = ctype.startswith("application/openmetrics-text")
        parts = []
        with self.lock:
            for c in self.collectors:
                items = (c.chunks() if hasattr(c, "chunks")
                         else ((None, (lambda f=f: f)) for f in c.collect()))
                for key, make in items:
                    got = None
                    if key is not None:
                        # (The key's last item is its version.)
                        got = self.cache.get((ctype, key[:-1]))
                        if got is not None and got[0] != key:
                            got = None
                    if got is not None:
                        parts.append(got[1])
                        continue
                    text = encoder(_One(make()))
                    if om and text.endswith(EOF_LINE):
                        text = text[:-len(EOF_LINE)]
                    if key is not None:
                        self.cache[(ctype, key[:-1])] = (key, text)
                    parts.append(text)
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
