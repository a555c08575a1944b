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

"""ovs-daqctl's entry point (utilities/ovs-daqctl, ovs-daqctl(8)): its one
argument parser, with the commands on a switch (daqctl/commands.py) and
the fabric's (fabric/commands.py), and main(), which runs the command and
reports how it ended: the exit status, and with -f json one JSON object,
also for bad arguments, errors and signals."""

import argparse
import json
import os
import shlex
import signal
import sys
from typing import Any, Callable, List, NoReturn, Optional

# Reading maps needs PyYAML: say which package is missing rather than a
# traceback.  OVS's Python library (python3-openvswitch) is needed only to
# talk to a switch: the modules that use it (ovsdb, reconcile, fabric) are
# imported by the commands that do, so that "check" (without --live),
# "rate" and "flows --expected" work without it; main() names the package
# when one of them is missing.
try:
    import yaml  # noqa: F401
except ImportError as _e:               # pragma: no cover
    sys.stderr.write("ovs-daqctl: %s (Debian: python3-yaml)\n" % _e)
    sys.exit(1)

from .. import VERSION
from ..daqctl.commands import (cmd_add_dcm, cmd_apply, cmd_check, cmd_clear,
                               cmd_del_dcm, cmd_flows, cmd_rate, cmd_show)
from ..daqctl.model import (DaqctlError, EXIT_BAD_INPUT, EXIT_FAILED,
                            EXIT_OK, MapError, PROG, STATES, STEERING_MODES)
from ..daqctl.openflow import find_ofctl, set_ssl
from ..daqctl.top import cmd_top
from ..options import add_ssl_options
from ..process import Interrupted


# ===================================================================== main
class _Explicit(argparse.Action):
    """Stores the value and remembers that it was given."""

    def __call__(self, parser: argparse.ArgumentParser,
                 namespace: argparse.Namespace, values: Any,
                 option_string: Optional[str] = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.explicit = getattr(namespace, "explicit", set()) | {
            self.dest}


def add_common(p: argparse.ArgumentParser, sub: bool) -> None:
    """The switch options; they may also follow the command (then hidden
    from the command's --help and without defaults of their own)."""
    def arg(*names: str, **kw: Any) -> None:
        if sub:
            kw["default"] = argparse.SUPPRESS
            kw["help"] = argparse.SUPPRESS
        p.add_argument(*names, **kw)

    arg("--db", action=_Explicit, metavar="DB",
        help="OVSDB remote (unix:PATH, tcp:IP:PORT, ssl:IP:PORT; "
        "default unix:$OVS_RUNDIR/db.sock)")
    arg("--bridge", "-b", action=_Explicit, metavar="BRIDGE",
        help="bridge (default br0)")
    arg("--of", action=_Explicit, metavar="TARGET",
        help="OpenFlow target for ovs-ofctl (unix:PATH/BR.mgmt, "
        "tcp:IP:PORT, or a bridge name; default: the bridge's "
        "management socket next to a unix --db)")
    arg("--switch", action="append", metavar="NAME",
        help="only this switch of a multi-switch map "
        "(repeatable)")
    arg("--ofctl", default=find_ofctl(), metavar="PATH",
        help="ovs-ofctl to use (default: $OVS_OFCTL, next to "
        "this program, or in PATH)")
    arg("--timeout", "-t", type=float, default=120,
        metavar="SECS", help="give up after SECS on each switch "
        "operation (default 120; ovs-vswitchd needs about 20 s "
        "to add 1000 daqrings and 40 s to remove them)")
    arg("--rate-tolerance", type=float, default=1.0,
        metavar="PCT", help="largest accepted error when "
        "converting a rate to max-burst/poll-interval, in "
        "percent (default 1)")
    add_ssl_options(p, hidden=sub)
    arg("--verbose", "-v", action="store_true",
        help="list every change")
    arg("--format", "-f", choices=("table", "json"), default="table",
        help="output: text (table) or one JSON object on standard output, "
        "also for errors (json)")


class UsageError(Exception):
    """Bad command-line arguments (argparse's error(), exit status 2)."""

    def __init__(self, parser: argparse.ArgumentParser, message: str
                 ) -> None:
        super().__init__(message)
        self.parser = parser


class Parser(argparse.ArgumentParser):
    """Raises UsageError instead of exiting, so that main() reports bad
    arguments like any other error (in JSON with -f json).  Subcommands'
    parsers are of the same class."""

    def error(self, message: str) -> "NoReturn":
        raise UsageError(self, message)


def wants_json(argv: List[str]) -> bool:
    """Whether ARGV asks for -f json (before argparse could say so)."""
    for i, a in enumerate(argv):
        if a in ("-f", "--format") and argv[i + 1:i + 2] == ["json"]:
            return True
        if a in ("-fjson", "--format=json"):
            return True
    return False


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog=PROG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Program daqring ports and DCM steering flows of "
        "ovs-daqring switches from a DCM map.",
        epilog="""examples:
  %(prog)s --db unix:/var/run/openvswitch/db.sock --bridge br0 apply dcms.yaml
  %(prog)s add-dcm dcm7 --ip 10.0.0.7 --egress p1 --ring-size 16384 \\
      --max-burst 32 --poll-interval 500
  %(prog)s add-dcm dcm8 --ip 10.0.0.8 --egress p2 --rate 190mbit
  %(prog)s show
  %(prog)s top --interval 1
  %(prog)s del-dcm dcm7

exit status: 0 success (also "no changes"), 1 the switch failed or refused
(changes rolled back), 2 bad map or arguments (nothing changed), 3 failed
and the rollback failed too, 4 check --live: a switch differs from the map,
5 fabric apply: the map may have been committed (its answer was lost).
See ovs-daqctl(8) and utilities/dcm-map.example.yaml.""")
    add_common(p, False)
    p.add_argument("--version", "-V", action="version",
                   version="%s (ovs-daqring) %s" % (PROG, VERSION))
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def cmd(name: str, fn: Any, help: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=help + ".  The "
                            "options of ovs-daqctl (--db, --bridge, --of...) "
                            "may also follow the command.")
        sp.set_defaults(func=fn)
        add_common(sp, True)
        return sp

    add_switch_commands(cmd)
    add_fabric(sub, cmd)
    return p


def add_switch_commands(cmd: Callable[[str, Any, str],
                                      argparse.ArgumentParser]) -> None:
    """The commands on a switch (daqctl/commands.py), through
    build_parser()'s cmd(name, function, help)."""
    a = cmd("apply", cmd_apply, "reconcile the switch(es) to MAP: create, "
            "update and remove daqrings (one OVSDB transaction per switch) "
            "and their flows (one OpenFlow bundle)")
    a.add_argument("map", metavar="MAP", help="DCM map (.yaml/.yml or "
                   ".csv; - for stdin)")
    a.add_argument("--dry-run", "-n", action="store_true",
                   help="check and print what would change")

    d = cmd("add-dcm", cmd_add_dcm, "create or update one DCM (its daqring "
            "and flows), leaving the others as they are")
    d.add_argument("name", metavar="NAME")
    m = d.add_mutually_exclusive_group(required=True)
    m.add_argument("--ip", metavar="IP", help="DCM destination address")
    m.add_argument("--tuple", action="append", metavar="TUPLE",
                   help="[tcp:|udp:]SRC:SPORT->DST:DPORT ('*' = any), "
                   "repeatable")
    d.add_argument("--egress", required=True, metavar="PORT",
                   help="port towards the DCM")
    d.add_argument("--ring", metavar="PORT",
                   help="daqring port name (default NAME)")
    d.add_argument("--steering", choices=STEERING_MODES,
                   help="two-rule (default): a rule into the ring and one "
                   "from it to the egress port; bound: the ring is bound "
                   "to the egress port (options:egress), one rule, one "
                   "datapath pass")
    d.add_argument("--ring-size", metavar="N", help="ring capacity in "
                   "packets (1..1048576, default 4096)")
    d.add_argument("--max-burst", metavar="B", help="1..32 (default 32)")
    s = d.add_mutually_exclusive_group()
    s.add_argument("--poll-interval", metavar="US",
                   help="shaping interval in microseconds (0 = unshaped, "
                   "the default)")
    s.add_argument("--rate", metavar="RATE",
                   help="byte shaping rate (e.g. 190mbit), written as "
                   "max-rate: frames leave at this rate on the wire")
    d.add_argument("--frame-overhead", metavar="BYTES",
                   help="bytes per frame that --rate counts beyond the "
                   "frame (0..255, default 24: preamble, gap, FCS)")
    d.add_argument("--max-burst-bytes", metavar="BYTES",
                   help="with --rate: the largest burst beyond the rate, in "
                   "bytes on the wire (two full frames, 3084 with the "
                   "default overhead, to 16777216; default: max-burst "
                   "full frames)")
    d.add_argument("--egress-max-rate", metavar="RATE",
                   help="with --steering bound: the rate of the egress "
                   "port (e.g. 1gbit), shared by the daqrings bound to it "
                   "(work-conserving); they must all give the same")
    d.add_argument("--egress-max-burst-bytes", metavar="BYTES",
                   help="with --egress-max-rate: the largest burst of the "
                   "shared egress beyond its rate, in bytes on the wire "
                   "(bounds of --max-burst-bytes)")
    d.add_argument("--numa-id", metavar="N", help="NUMA node of the ring")
    d.add_argument("--flow-buckets", metavar="N",
                   help="flow fairness: the ring serves its flows "
                   "round-robin, a flow with nothing queued first, in N "
                   "flow buckets (a power of 2, default 65536); 0 = a "
                   "strict FIFO")
    d.add_argument("--ofport", metavar="N",
                   help="ofport_request of the ring")
    d.add_argument("--dry-run", "-n", action="store_true")

    x = cmd("del-dcm", cmd_del_dcm, "remove DCMs (daqrings and flows)")
    x.add_argument("names", nargs="+", metavar="NAME")
    x.add_argument("--if-exists", action="store_true",
                   help="no error for DCMs that do not exist")
    x.add_argument("--dry-run", "-n", action="store_true")

    c = cmd("clear", cmd_clear, "remove every DCM managed by ovs-daqctl on "
            "the bridge")
    c.add_argument("--dry-run", "-n", action="store_true")

    sh = cmd("show", cmd_show, "per DCM: ring, egress, occupancy, high "
             "watermark, drops, shaping")
    sh.add_argument("--map", metavar="MAP",
                    help="show the switches of MAP")

    tp = cmd("top", cmd_top, "a live view of the switch's daqrings, the "
             "worst first (dropping, then fullest): occupancy, high "
             "watermark, drops and drops since the last refresh")
    tp.add_argument("--interval", "-d", type=float, default=2.0,
                    metavar="SECS", help="refresh every SECS (default 2; "
                    "ovs-vswitchd updates the statistics every 5 s)")
    tp.add_argument("-n", dest="count", type=int, metavar="COUNT",
                    help="stop after COUNT refreshes (default: until "
                    "Ctrl-C)")
    tp.add_argument("--once", action="store_true",
                    help="print one table and exit (the same as -n 1; "
                    "for scripts)")
    tp.add_argument("--limit", type=int, default=20, metavar="N",
                    help="show the worst N daqrings (default 20; 0: all)")

    fl = cmd("flows", cmd_flows, "print the DCM flows installed on the "
             "switch (or, with --expected, those MAP asks for)")
    fl.add_argument("--map", metavar="MAP")
    fl.add_argument("--expected", action="store_true",
                    help="print MAP's flows (port names) instead of the "
                    "switch's")

    k = cmd("check", cmd_check, "check MAP offline (no switch); with "
            "--live, also compare each switch with it, changing nothing")
    k.add_argument("map", metavar="MAP")
    k.add_argument("--live", action="store_true",
                   help="also compare the switches with MAP and report "
                   "what differs and floodable daqrings (status 4)")

    r = cmd("rate", cmd_rate, "convert a rate to max-burst/poll-interval")
    r.add_argument("rate", metavar="RATE")
    r.add_argument("--max-burst", type=int, metavar="B")


def add_fabric(sub: Any, add_command: Callable[
        [str, Any, str], argparse.ArgumentParser]) -> None:
    """ovs-daqctl fabric apply|status|plan (fabric/commands.py,
    Documentation/topics/fabric.rst), on the ovs-daqctl subparsers."""
    try:
        from ..fabric.commands import (cmd_fabric_apply, cmd_fabric_plan,
                                       cmd_fabric_status)
    except ModuleNotFoundError as e:
        if not (e.name or "").startswith("ovs"):
            raise
        # Without OVS's Python library: "fabric" says what is missing.
        missing = e
        fb = add_command("fabric", lambda _args: _raise(missing),
                         "the fabric's commands (they need OVS's Python "
                         "library)")
        fb.add_argument("rest", nargs=argparse.REMAINDER)
        return
    f = sub.add_parser(
        "fabric", help="program a leaf-spine fabric through its clustered "
        "database", description="Program a fabric of ovs-daqring switches "
        "through the fabric database (--db: every cluster member, comma-"
        "separated; default $OVS_DAQFABRIC_DB or "
        "unix:$OVS_RUNDIR/daqfabric.sock).  See "
        "Documentation/topics/fabric.rst.")
    add_common(f, True)
    fs = f.add_subparsers(dest="fabric_command", metavar="COMMAND")
    f.set_defaults(func=lambda args: _fabric_no_command(f))

    def cmd(name: str, fn: Any, help: str) -> argparse.ArgumentParser:
        sp = fs.add_parser(name, help=help, description=help + ".")
        sp.set_defaults(func=fn)
        add_common(sp, True)
        return sp

    a = cmd("apply", cmd_fabric_apply, "write the whole desired state of "
            "MAP (switches, links, hosts, DCMs) in one transaction; a map "
            "with any problem is refused whole")
    a.add_argument("map", metavar="MAP", help="fabric map (YAML; - for "
                   "stdin)")
    a.add_argument("--dry-run", "-n", action="store_true",
                   help="check MAP and print what each switch would get")
    a.add_argument("--wait", action="store_true",
                   help="return when every node that is up has applied "
                   "the new generation or failed to (exit 1, naming "
                   "those that failed and why, or did not apply it "
                   "within --timeout)")
    s = cmd("status", cmd_fabric_status, "per node: generation, up or "
            "down, the generation it failed to apply and why, links, "
            "rings; per DCM: its plane and spine")
    # No default of its own: it would stand for -f's given before
    # "fabric" (the same for every command, ovs-daqctl(8)).
    s.add_argument("--json", dest="format", action="store_const",
                   const="json", default=argparse.SUPPRESS,
                   help="the same as -f json")
    s.add_argument("--listen", metavar="SECONDS", type=_listen_seconds,
                   default=None,
                   help="listen for the nodes' reports for at most "
                   "SECONDS (default: the longest report interval and "
                   "0.5 s, 5 s at most); 0: do not listen, every node's "
                   "liveness is unknown (for a script that wants only "
                   "the assignments)")
    p = cmd("plan", cmd_fabric_plan, "run one planner round: take the "
            "planner lock, take over, write the assignments")
    p.add_argument("--name", metavar="NAME", help="this planner's name "
                   "(default ovs-daqctl PID@HOST)")


def _listen_seconds(text: str) -> float:
    """fabric status --listen: a number of seconds, 0 to 60."""
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not 0 <= v <= 60:
        raise argparse.ArgumentTypeError(
            "%r is not a number of seconds from 0 to 60" % text)
    return v


def _fabric_no_command(p: argparse.ArgumentParser) -> int:
    p.print_usage(sys.stderr)
    raise DaqctlError("fabric: a command is required (apply, status, plan)",
                      EXIT_BAD_INPUT)


def _raise(e: BaseException) -> NoReturn:
    raise e


def usage_error(argv: List[str], parser: argparse.ArgumentParser,
                message: str, commands: List[str]) -> int:
    """Bad arguments: usage and the error on standard error, and with
    -f json the envelope of every command on standard output."""
    parser.print_usage(sys.stderr)
    sys.stderr.write("%s: error: %s\n" % (parser.prog, message))
    if wants_json(argv):
        json.dump({"command": next((a for a in argv if a in commands),
                                   None),
                   "status": EXIT_BAD_INPUT, "messages": [],
                   "error": message}, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    return EXIT_BAD_INPUT


def interrupted(args: argparse.Namespace, signum: int) -> str:
    """What to say when a signal ends the command: the state of each
    switch it was changing, and what to run."""
    name = signal.Signals(signum).name
    lines = ["interrupted by %s" % name]
    unfinished = False
    for sw in args.report.get("switches", []):
        state = sw.get("state") if isinstance(sw, dict) else None
        if state in STATES:
            lines.append("switch %s: %s" % (sw["switch"],
                                            STATES[state] % sw))
            unfinished = unfinished or state not in ("unchanged", "done")
    if len(lines) == 1:
        lines.append("nothing was changed")
    elif args.command == "apply":
        lines.append("switches not listed were not changed")
    if unfinished:
        lines.append("to finish, run the command again (it changes only "
                     "what differs): %s" % args.cmdline)
    return "\n".join(lines)


def _on_signal(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


def main(argv: Optional[List[str]] = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser()
    commands = [name for a in parser._actions
                if isinstance(a, argparse._SubParsersAction)
                for name in a.choices]
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            parser.error("a command is required (see --help)")
        if args.command == "flows" and args.expected and not args.map:
            parser.error("flows --expected needs --map MAP")
    except UsageError as e:
        return usage_error(argv, e.parser, str(e), commands)
    if not hasattr(args, "explicit"):
        args.explicit = set()
    args.cmdline = shlex.join([PROG] + argv)
    as_json = args.format == "json"
    # What the command did, printed as JSON with -f json.
    args.report = {"command": args.command, "switches": []}
    args.report["messages"] = []

    def say(msg: str) -> None:
        args.report["messages"].append(msg)
        if not as_json:
            print(msg)
    args.say = say
    if args.command == "rate":
        del args.report["switches"]

    def emit(status: int, **more: Any) -> int:
        if as_json:
            json.dump(dict(args.report, status=status, **more), sys.stdout,
                      indent=2, sort_keys=True)
            sys.stdout.write("\n")
        return status

    # SIGTERM and SIGHUP end the command as Ctrl-C does: with a report.
    old = {s: signal.getsignal(s)
           for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    try:
        set_ssl(args)
        return emit(int(args.func(args)))
    except (KeyboardInterrupt, Interrupted) as e:
        signum = getattr(e, "signum", signal.SIGINT)
        for s in old:
            signal.signal(s, signal.SIG_IGN)
        msg = interrupted(args, signum)
        sys.stderr.write("".join("%s: %s\n" % (PROG, ln)
                                 for ln in msg.splitlines()))
        return emit(128 + signum, error=msg,
                    interrupted=signal.Signals(signum).name)
    except ModuleNotFoundError as e:
        if not (e.name or "").startswith("ovs"):
            raise
        msg = ("%s needs OVS's Python library: %s (Debian: "
               "python3-openvswitch; 'check' without --live, 'rate' and "
               "'flows --expected' do not)" % (args.command, e))
        sys.stderr.write("%s: %s\n" % (PROG, msg))
        return emit(EXIT_FAILED, error=msg)
    except MapError as e:
        for prob in e.problems:
            sys.stderr.write("%s: %s\n" % (PROG, prob))
        sys.stderr.write("%s: refused (%d problem%s); nothing changed\n"
                         % (PROG, len(e.problems),
                            "" if len(e.problems) == 1 else "s"))
        return emit(e.status, error="refused; nothing changed",
                    problems=[{"where": p.where, "reason": p.reason}
                              for p in e.problems])
    except DaqctlError as e:
        sys.stderr.write("%s: %s\n" % (PROG, e))
        return emit(e.status, error=str(e))
    except BrokenPipeError:
        # "ovs-daqctl show | head": not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    finally:
        for s, h in old.items():
            signal.signal(s, h)
