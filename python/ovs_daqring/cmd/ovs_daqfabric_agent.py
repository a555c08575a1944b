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


"""ovs-daqfabric-agent's entry point (utilities/ovs-daqfabric-agent,
ovs-daqfabric-agent(8)): its argument parser and the checks of its
arguments, and main(), which daemonizes, serves the unixctl commands
(exit, status) and runs the agent of a switch (fabric/agent.py) or, with
--host, of a host (fabric/hostagent.py) until told to exit.  run() is
main() for the executable: an unexpected exception is logged and exits
with the status that makes --monitor restart the daemon."""

import argparse
import json
import os
import sys
import threading
from typing import Any, Dict, List, Optional

# The modules below need OVS's Python library and PyYAML: say which
# package is missing rather than a traceback.
try:
    import ovs.daemon
    import ovs.db.idl
    import ovs.dirs
    import ovs.poller
    import ovs.stream
    import ovs.unixctl
    import ovs.unixctl.server
    import ovs.util
    import ovs.vlog
    import yaml  # noqa: F401
except ImportError as _e:               # pragma: no cover
    sys.stderr.write("ovs-daqfabric-agent: %s (Debian: python3-openvswitch, "
                     "python3-yaml)\n" % _e)
    sys.exit(1)

from .. import VERSION
from ..daemonloop import restarting, serve
from ..daqctl.openflow import find_ofctl, set_ssl
from ..fabric import default_fabric_db
from ..fabric.agent import Agent
from ..fabric.hostagent import HostAgent
from ..fabric.model import PLANE_MAX
from ..fabric.node import INTERVAL_MIN, PROG, vlog
from ..fabric.switchhold import (FULL_CHECK_EVERY, LINK_CHECK_MAX_MS,
                                 LINK_CHECK_MS)
from ..metrics.address import parse_address
from ..options import SSL_FILES_NEEDED, add_ssl_options, ssl_missing


def _text(v: Any) -> str:
    """A status value as 'status' prints it."""
    if isinstance(v, dict):
        return ", ".join("%s %s" % kv for kv in v.items()) or "-"
    return str(v)


# ====================================================================== main
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="The fabric agent of one ovs-daqring "
        "switch: holds the switch to its slice of the fabric database; "
        "with --host, of one ROS or HLT host: holds its policy routing "
        "to the planes of its DCMs (ovs-daqfabric-agent(8), "
        "Documentation/topics/fabric.rst).")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--node", "-n", metavar="NAME",
                     help="this switch's name in the fabric (its Switch "
                     "row)")
    who.add_argument("--host", metavar="NAME",
                     help="run as the agent of host NAME (its Host row), "
                     "in the host's network namespace")
    p.add_argument("--plane-dev", action="append", default=[],
                   metavar="PLANE=DEV", help="with --host: the host's "
                   "device cabled to plane PLANE (once per plane)")
    p.add_argument("--db", metavar="REMOTES", default=None,
                   help="the fabric database: every cluster member, "
                   "comma-separated (default $OVS_DAQFABRIC_DB, else "
                   "unix:$OVS_RUNDIR/daqfabric.sock)")
    p.add_argument("--ovsdb", metavar="REMOTE",
                   help="this switch's own OVSDB (default: the Switch "
                   "row's db, else unix:$OVS_RUNDIR/db.sock)")
    p.add_argument("--bridge", "-b", metavar="BRIDGE",
                   help="the bridge (default: the Switch row's, br0)")
    p.add_argument("--of", metavar="TARGET",
                   help="OpenFlow target for ovs-ofctl (default: the "
                   "Switch row's, else the bridge's management socket "
                   "next to a unix: OVSDB)")
    p.add_argument("--ofctl", default=find_ofctl(), metavar="PATH",
                   help="ovs-ofctl to use (default: $OVS_OFCTL, next to "
                   "this program, or in PATH)")
    p.add_argument("--interval", type=float, default=2.0, metavar="SECS",
                   help="write the Node row and check the switch every "
                   "SECS (default 2, at least 0.1)")
    p.add_argument("--full-check-every", type=int, default=FULL_CHECK_EVERY,
                   metavar="N", help="of the switch's checks, one in N "
                   "compares every flow, group and port; the others its "
                   "daqrings and flow count (default %d; 1: all)"
                   % FULL_CHECK_EVERY)
    p.add_argument("--link-check-interval", type=int,
                   default=LINK_CHECK_MS, metavar="MS",
                   help="set other_config:dpdk-link-check-interval of the "
                   "switch to MS when it is not set (default %d; 0: never "
                   "set it)" % LINK_CHECK_MS)
    p.add_argument("--timeout", "-t", type=float, default=60,
                   metavar="SECS", help="give up on a switch operation "
                   "after SECS (default 60)")
    p.add_argument("--state-file", metavar="FILE",
                   help="where the last applied slice is kept (default "
                   "$OVS_DBDIR/ovs-daqfabric-agent.NODE.json)")
    p.add_argument("--planner", action="store_true",
                   help="contend for the planner lock and plan while "
                   "holding it")
    p.add_argument("--unixctl", metavar="SOCKET",
                   help="control socket (default "
                   "$OVS_RUNDIR/ovs-daqfabric-agent.PID.ctl)")
    m = p.add_argument_group(
        "Prometheus metrics (Documentation/topics/monitoring.rst; needs "
        "python3-prometheus-client)")
    m.add_argument("--metrics-address", metavar="[HOST:]PORT",
                   help="serve the switch's daqring and PMD metrics, the "
                   "node's and (while it plans) the planner's on "
                   "http://HOST:PORT/metrics (HOST localhost unless "
                   "given; an IPv6 HOST in brackets; default: none)")
    m.add_argument("--vswitchd", metavar="TARGET", default="ovs-vswitchd",
                   help="with --metrics-address: the switch's "
                   "ovs-vswitchd, as ovs-appctl -t takes it, for the PMD "
                   "metrics (default ovs-vswitchd: the one of "
                   "$OVS_RUNDIR)")
    m.add_argument("--no-pmd-metrics", action="store_true",
                   help="with --metrics-address: do not ask ovs-vswitchd "
                   "for its PMD threads")
    add_ssl_options(p)
    p.add_argument("--version", "-V", action="version",
                   version="%s (ovs-daqring) %s" % (PROG, VERSION))
    ovs.vlog.add_args(p)
    ovs.daemon.add_args(p)
    return p


def check_host_args(p: argparse.ArgumentParser,
                    args: argparse.Namespace) -> None:
    """--host's arguments: the switch's options refused, --plane-dev
    parsed into args.plane_dev: [(plane, device)]."""
    for opt, v in (("--ovsdb", args.ovsdb), ("--bridge", args.bridge),
                   ("--of", args.of), ("--planner", args.planner),
                   ("--state-file", args.state_file),
                   ("--metrics-address", args.metrics_address)):
        if v:
            p.error("%s: a switch's option; not with --host" % opt)
    if not args.host.strip() or "/" in args.host:
        p.error("--host: %r is not a host name" % args.host)
    devs: Dict[int, str] = {}
    for v in args.plane_dev:
        plane, eq, dev = v.partition("=")
        try:
            n = int(plane)
        except ValueError:
            n = -1
        if not eq or not (0 <= n <= PLANE_MAX) or not dev.strip() \
                or len(dev) > 15 or "/" in dev or " " in dev:
            p.error("--plane-dev: %r is not PLANE=DEV (a plane 0-%d, a "
                    "device name)" % (v, PLANE_MAX))
        if n in devs and devs[n] != dev:
            p.error("--plane-dev: plane %d given twice" % n)
        devs[n] = dev
    args.plane_dev = sorted(devs.items())


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Bad arguments: argparse's error (exit status 2)."""
    args.db = args.db or default_fabric_db()
    for r in args.db.split(","):
        if not ovs.stream.Stream.is_valid_name(r):
            p.error("--db: %s is not an OVSDB remote (unix:PATH, "
                    "tcp:IP:PORT, ssl:IP:PORT)" % r)
    if args.ovsdb and not ovs.stream.Stream.is_valid_name(args.ovsdb):
        p.error("--ovsdb: %s is not an OVSDB remote" % args.ovsdb)
    if args.host is not None:
        check_host_args(p, args)
    elif args.plane_dev:
        p.error("--plane-dev: only with --host")
    elif not args.node.strip() or "/" in args.node:
        p.error("--node: %r is not a switch name" % args.node)
    if args.full_check_every < 1:
        p.error("--full-check-every: %d is below 1" % args.full_check_every)
    if not 0 <= args.link_check_interval <= LINK_CHECK_MAX_MS:
        p.error("--link-check-interval: %d is not between 0 and %d"
                % (args.link_check_interval, LINK_CHECK_MAX_MS))
    if not (args.interval >= INTERVAL_MIN):
        p.error("--interval: %s s is below %g s" % (args.interval,
                                                    INTERVAL_MIN))
    if not (args.timeout > 0):
        p.error("--timeout: must be positive")
    if args.host is None:
        if args.state_file is None:
            args.state_file = os.path.join(ovs.dirs.DBDIR, "%s.%s.json"
                                           % (PROG, args.node))
        args.state_file = os.path.abspath(args.state_file)
        d = os.path.dirname(args.state_file)
        if not os.path.isdir(d):
            p.error("--state-file: directory %s does not exist" % d)
    args.metrics = None
    if args.metrics_address is not None:
        try:
            args.metrics = parse_address(args.metrics_address)
        except ValueError as e:
            p.error("--metrics-address: %s" % e)
    if ssl_missing(args, (args.db, args.ovsdb, args.of)):
        p.error(SSL_FILES_NEEDED)
    # What the reconcile core reads from 'args'.
    args.format = "table"


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    ovs.vlog.handle_args(args)
    ovs.daemon.handle_args(args)
    set_ssl(args)

    if args.metrics is not None:
        try:
            import prometheus_client  # noqa: F401
        except ImportError as e:
            sys.stderr.write("%s: --metrics-address needs the Prometheus "
                             "client library (Debian: "
                             "python3-prometheus-client, EL9 EPEL: "
                             "python3-prometheus_client): %s\n" % (PROG, e))
            return 1

    ovs.daemon.daemonize_start()
    error, server = ovs.unixctl.server.UnixctlServer.create(
        args.unixctl, version=VERSION)
    if error:
        ovs.util.ovs_fatal(error, "could not create the unixctl server",
                           vlog)
    agent = HostAgent(args) if args.host is not None else Agent(args)
    daemon: Any = agent
    if args.metrics is not None:
        daemon = serve_metrics(args, agent)

    def unixctl_exit(conn: Any, _argv: Any, _aux: Any) -> None:
        agent.exiting = True
        conn.reply(None)

    def unixctl_status(conn: Any, argv: List[str], _aux: Any) -> None:
        st = agent.status()
        if argv and argv[0] == "--json":
            conn.reply(json.dumps(st, sort_keys=True))
        elif argv:
            conn.reply_error("usage: status [--json]")
        else:
            conn.reply("".join("%s: %s\n" % (k, _text(v))
                               for k, v in st.items()))

    ovs.unixctl.command_register("exit", "", 0, 0, unixctl_exit, None)
    ovs.unixctl.command_register("status", "[--json]", 0, 1, unixctl_status,
                                 None)
    ovs.daemon.daemonize_complete()
    vlog.info("%s %s: %s %s, fabric %s%s" % (
        PROG, VERSION, "node" if args.host is None else "host",
        args.node or args.host, args.db,
        ", planner candidate" if args.planner else
        ", planes %s" % " ".join("%d=%s" % pd for pd in args.plane_dev)
        if args.host is not None else ""))
    serve(server, daemon)
    vlog.info("exiting")
    return 0


def serve_metrics(args: argparse.Namespace, agent: Agent) -> Any:
    """--metrics-address: the switch's daqring and PMD metrics (the
    exporter's collector, on the agent's replica of its switch) and the
    node's and planner's (metrics/fabric.py), rendered by the
    collector's thread and served by the scrape process
    (metrics/server.py); returns the agent for the main loop, its
    rounds under the lock the render takes, with the scrape process."""
    from ..metrics.collector import DaqringCollector, ReadError, ask_vswitchd
    from ..metrics.fabric import AgentLock, FabricCollector
    from ..metrics.rings import RingReader
    from ..metrics.server import Served, serve as serve_http
    lock = threading.Lock()
    fabric = FabricCollector(agent, lock)
    reader = RingReader()

    def read() -> List[Any]:
        rec = agent.rec
        if rec is None:
            raise ReadError("not connected to the switch (%s)"
                            % (agent.error or "no slice yet"))
        try:
            return reader.read(rec.db)
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            raise ReadError("could not read the daqrings: %s" % e)

    def read_pmds() -> List[str]:
        return ask_vswitchd(args.vswitchd, min(5.0, args.timeout))

    def version() -> Any:
        rec = agent.rec
        return (id(rec), rec and id(rec.db),
                rec and rec.db.idl.change_seqno)

    def after_run() -> None:
        fabric.observe()
        switch.poke()

    switch = DaqringCollector(
        read, lock, log=vlog.warn,
        read_pmds=None if args.no_pmd_metrics else read_pmds,
        version=version)
    host, port = args.metrics
    try:
        scrapes = serve_http(switch, host, port, log=vlog.warn)
    except OSError as e:
        ovs.util.ovs_fatal(0, "cannot serve metrics on %s: %s"
                           % (args.metrics_address, e.strerror or e), vlog)
    scrapes.register(fabric)
    vlog.info("metrics on http://%s:%d/metrics" % (host, port))
    return Served(AgentLock(agent, lock, after_run), scrapes)


def run() -> int:
    return restarting(main, vlog)


if __name__ == "__main__":          # pragma: no cover
    sys.exit(run())
