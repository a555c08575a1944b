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


"""ovs-daqring-exporter's entry point (utilities/ovs-daqring-exporter,
ovs-daqring-exporter(8)): Prometheus metrics of one switch's daqrings
(ovs_daqring.metrics), rendered from the replica of the switch's OVSDB
each time it changes and served over HTTP by a process of its own (the
scrape process, metrics/server.py).  main() daemonizes, keeps the OVSDB
connection up to date, and serves the unixctl command "exit";
run() is main() for the executable (an unexpected exception is logged
and exits with the status that makes --monitor restart the daemon)."""

import argparse
import sys
import threading
import time
from typing import Any, List, Optional

# OVS's Python library: say that the package is missing rather than a
# traceback.  The Prometheus client library (only Recommended by the
# RPM) is imported by main(), once the arguments are checked.
try:
    import ovs.daemon
    import ovs.poller
    import ovs.stream
    import ovs.unixctl
    import ovs.unixctl.server
    import ovs.util
    import ovs.vlog
except ImportError as _e:               # pragma: no cover
    sys.stderr.write("ovs-daqring-exporter: %s (Debian: python3-openvswitch)"
                     "\n" % _e)
    sys.exit(1)

from .. import VERSION
from .. import daemonloop
from ..daqctl.dcmmap import default_db
from ..daqctl.model import DaqctlError
from ..daqctl.openflow import set_ssl
from ..daqctl.ovsdb import Ovsdb
from ..metrics.address import DEFAULT_ADDRESS, parse_address
from ..options import SSL_FILES_NEEDED, add_ssl_options, ssl_missing

PROG = "ovs-daqring-exporter"
LIBRARY_MISSING = ("needs the Prometheus client library (Debian: "
                   "python3-prometheus-client, EL9 EPEL: "
                   "python3-prometheus_client)")
vlog = ovs.vlog.Vlog(PROG)
# After a failed connection, the next attempt (the IDL itself reconnects
# a connection it once had).
RETRY_S = 5.0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Prometheus metrics of one ovs-daqring "
        "switch's daqrings: rendered from the switch's OVSDB as it changes "
        "and served on http://ADDRESS/metrics (ovs-daqring-exporter(8), "
        "Documentation/topics/monitoring.rst).")
    p.add_argument("--db", metavar="REMOTE", default=None,
                   help="the switch's OVSDB (default "
                   "unix:$OVS_RUNDIR/db.sock)")
    p.add_argument("--metrics-address", metavar="[HOST:]PORT",
                   default=DEFAULT_ADDRESS,
                   help="serve the metrics on HOST:PORT (default %s; HOST "
                   "localhost unless given; an IPv6 HOST in brackets)"
                   % DEFAULT_ADDRESS)
    p.add_argument("--timeout", "-t", type=float, default=30,
                   metavar="SECS", help="give up connecting to the OVSDB "
                   "after SECS, then try again (default 30)")
    p.add_argument("--vswitchd", metavar="TARGET", default="ovs-vswitchd",
                   help="ovs-vswitchd's control socket or pid file, as "
                   "ovs-appctl -t takes it, for the PMD metrics (default "
                   "ovs-vswitchd: the one of $OVS_RUNDIR)")
    p.add_argument("--no-pmd-metrics", action="store_true",
                   help="do not ask ovs-vswitchd for its PMD threads")
    p.add_argument("--unixctl", metavar="SOCKET",
                   help="control socket (default "
                   "$OVS_RUNDIR/ovs-daqring-exporter.PID.ctl)")
    add_ssl_options(p)
    p.add_argument("--version", "-V", action="version",
                   version="%s (ovs-daqring) %s" % (PROG, VERSION))
    ovs.vlog.add_args(p)
    ovs.daemon.add_args(p)
    return p


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Bad arguments: argparse's error (exit status 2)."""
    args.db = args.db or default_db()
    if not ovs.stream.Stream.is_valid_name(args.db):
        p.error("--db: %s is not an OVSDB remote (unix:PATH, tcp:IP:PORT, "
                "ssl:IP:PORT)" % args.db)
    try:
        args.host, args.port = parse_address(args.metrics_address)
    except ValueError as e:
        p.error("--metrics-address: %s" % e)
    if not (args.timeout > 0):
        p.error("--timeout: must be positive")
    if ssl_missing(args, (args.db,)):
        p.error(SSL_FILES_NEEDED)


class Exporter:
    """The switch's OVSDB, kept up to date by the main loop (run(),
    wait()) and read by the collector's render thread (read()), one at
    a time ('lock'); after_run(), if set, is called after each run(),
    'lock' held (the collector's poke())."""

    def __init__(self, remote: str, timeout: float,
                 vswitchd: str = "") -> None:
        self.remote = remote
        self.timeout = timeout
        self.vswitchd = vswitchd
        # The readings kept between scrapes (metrics.rings.RingReader).
        self.reader: Any = None
        self.lock = threading.Lock()
        self.db: Optional[Ovsdb] = None
        self.error = "%s: not connected yet" % remote
        self.retry_at = 0.0
        self.exiting = False
        self.after_run: Optional[Any] = None

    def connect(self) -> None:
        """One attempt; on failure the next one after RETRY_S."""
        try:
            db = Ovsdb(self.remote, self.timeout)
        except DaqctlError as e:
            self.error = str(e)
            self.retry_at = time.monotonic() + RETRY_S
            vlog.warn("%s (trying again in %g s)" % (e, RETRY_S))
            return
        with self.lock:
            self.db = db
        vlog.info("%s: connected" % self.remote)

    def connected(self) -> bool:
        # The IDL's session (OVS's Python IDL keeps it in _session).
        session = getattr(self.db.idl, "_session", None) if self.db \
            else None
        return session is not None and session.is_connected()

    def read_pmds(self) -> List[str]:
        """What pmd-stats-show, pmd-rxq-show and pmd-perf-show print,
        asked over one connection to ovs-vswitchd's control socket (no
        ovs-appctl started per scrape; 5 s at most); called by the PMD
        worker of the scrape process (metrics/server.py), never by the
        main loop's."""
        from ..metrics.collector import ask_vswitchd
        return ask_vswitchd(self.vswitchd, 5.0)

    def version(self) -> Any:
        """What moves whenever read() would read something new: the
        connection, its state, the IDL's change count ('lock' held)."""
        if self.db is None:
            return (None, self.error)
        return (id(self.db), self.connected(), self.db.idl.change_seqno)

    def read(self) -> List[Any]:
        """The daqrings' readings (RingReading); called with 'lock' held
        (DaqringCollector)."""
        from ..metrics.collector import ReadError
        if self.db is None:
            raise ReadError(self.error)
        if not self.connected():
            raise ReadError("%s: connection lost, reconnecting"
                            % self.remote)
        try:
            if self.reader is None:
                from ..metrics.rings import RingReader
                self.reader = RingReader()
            return self.reader.read(self.db)
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            raise ReadError("%s: could not read the daqrings: %s"
                            % (self.remote, e))

    def run(self) -> None:
        if self.db is None:
            if time.monotonic() >= self.retry_at:
                self.connect()
        else:
            with self.lock:
                self.db.idl.run()
        if self.after_run is not None:
            with self.lock:
                self.after_run()

    def wait(self, poller: Any) -> None:
        if self.db is None:
            poller.timer_wait(max(0, int((self.retry_at - time.monotonic())
                                         * 1000)))
        else:
            self.db.idl.wait(poller)

    def close(self) -> None:
        with self.lock:
            if self.db is not None:
                self.db.close()
                self.db = None


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    ovs.vlog.handle_args(args)
    ovs.daemon.handle_args(args)
    set_ssl(args)
    try:
        from ..metrics.collector import DaqringCollector
        from ..metrics.server import Served, serve
    except ImportError as e:
        sys.stderr.write("%s: %s: %s\n" % (PROG, LIBRARY_MISSING, e))
        return 1

    ovs.daemon.daemonize_start()
    exporter = Exporter(args.db, args.timeout, args.vswitchd)
    collector = DaqringCollector(
        exporter.read, exporter.lock, log=vlog.warn,
        read_pmds=None if args.no_pmd_metrics else exporter.read_pmds,
        version=exporter.version)
    exporter.after_run = collector.poke
    try:
        scrapes = serve(collector, args.host, args.port, log=vlog.warn)
    except OSError as e:
        ovs.util.ovs_fatal(0, "cannot serve metrics on %s: %s"
                           % (args.metrics_address, e.strerror or e), vlog)
    error, server = ovs.unixctl.server.UnixctlServer.create(
        args.unixctl, version=VERSION)
    if error:
        ovs.util.ovs_fatal(error, "could not create the unixctl server",
                           vlog)

    def unixctl_exit(conn: Any, _argv: Any, _aux: Any) -> None:
        exporter.exiting = True
        conn.reply(None)

    ovs.unixctl.command_register("exit", "", 0, 0, unixctl_exit, None)
    ovs.daemon.daemonize_complete()
    vlog.info("%s %s: switch %s, metrics on http://%s:%d/metrics"
              % (PROG, VERSION, args.db, args.host, args.port))
    # The scrape process starts at the main loop's first round.
    daemonloop.serve(server, Served(exporter, scrapes))
    vlog.info("exiting")
    return 0


def run() -> int:
    return daemonloop.restarting(main, vlog)


if __name__ == "__main__":          # pragma: no cover
    sys.exit(run())
