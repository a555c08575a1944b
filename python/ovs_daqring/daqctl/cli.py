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

"""ovs-daqctl: program daqring ports and their DCM steering flows.

A DCM map (YAML or CSV) says, per data collector (DCM), which packets go to
it (a destination IP, or a set of 4-tuples), through which egress port, and
with which daqring (ring size, shaping).  "apply" reconciles a switch to the
map: the daqrings are created, updated and removed in one OVSDB transaction
(OVS Python IDL), then the steering flows are replaced in one OpenFlow
bundle.  See ovs-daqctl(8).
"""

import argparse
import json
import os
import shlex
import signal
import sys
from typing import Any, Dict, List, NoReturn, Optional

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
from .model import (DaqctlError, Dcm, EXIT_BAD_INPUT, EXIT_DIFFERS,
                    EXIT_FAILED, EXIT_OK, FRAME_BITS, MapError, PROG, Problem,
                    STATES, STEERING_MODES, SwitchSpec, format_rate,
                    grouped_notes,
                    parse_rate, shaping_for_rate)
from .dcmmap import MapReader, build_dcm, default_db, validate_dcms
from .mapfile import int_value
from .openflow import (ssl_args, OpenFlow, dcm_flows, find_ofctl,
                       flow_text, of_target, parse_flow, set_ssl)
from ..options import add_ssl_options
from ..process import Interrupted


# ================================================================== commands
def cli_spec(args: argparse.Namespace) -> SwitchSpec:
    db = args.db or default_db()
    bridge = args.bridge or "br0"
    return SwitchSpec(name=bridge, db=db, of=args.of, bridge=bridge,
                      where="command line")


def read_map(args: argparse.Namespace, path: str) -> List[SwitchSpec]:
    specs = MapReader(path, args.db, args.of, args.bridge, args.explicit,
                      args.rate_tolerance / 100.0).read()
    if args.switch:
        chosen = [s for s in specs if s.name in args.switch]
        missing = set(args.switch) - {s.name for s in specs}
        if missing:
            raise DaqctlError("no switch %s in %s (it has: %s)"
                              % (", ".join(sorted(missing)), path,
                                 ", ".join(s.name for s in specs)),
                              EXIT_BAD_INPUT)
        specs = chosen
    return specs


def cmd_apply(args: argparse.Namespace) -> int:
    from .reconcile import Reconciler
    specs = read_map(args, args.map)
    comment = "ovs-daqctl: apply %s" % args.map
    recs = []
    try:
        # Connect to every switch and check the map against it first.
        for spec in specs:
            rec = Reconciler(spec, args, sys.stdout)
            recs.append(rec)
        problems: List[Problem] = []
        for rec in recs:
            try:
                rec.plan(rec.spec.dcms)
            except MapError as e:
                problems += e.problems
        if problems:
            raise MapError(problems)
        done: List[str] = []
        for rec in recs:
            args.report["switches"].append(rec.result)
            dcms = rec.spec.dcms
            try:
                rec.apply(lambda _cur, dcms=dcms: dcms, comment,
                          args.dry_run, args.verbose)
            except DaqctlError as e:
                rec.result["error"] = str(e)
                if done:
                    e.args = ("%s\n(already applied: %s)"
                              % (e, ", ".join(done)),)
                raise
            done.append(rec.spec.name)
    finally:
        for rec in recs:
            rec.close()
    return EXIT_OK


def _one_switch(args: argparse.Namespace) -> Any:
    from .reconcile import Reconciler
    rec = Reconciler(cli_spec(args), args, sys.stdout)
    args.report["switches"].append(rec.result)
    return rec


def cmd_add_dcm(args: argparse.Namespace) -> int:
    values: Dict[str, Any] = {"name": args.name, "egress": args.egress}
    if args.ip:
        values["ip"] = args.ip
    if args.tuple:
        values["tuples"] = args.tuple
    for k in ("ring", "ring_size", "max_burst", "poll_interval", "rate",
              "frame_overhead", "numa_id", "ofport", "steering",
              "flow_buckets", "max_burst_bytes", "egress_max_rate",
              "egress_max_burst_bytes"):
        v = getattr(args, k)
        if v is not None:
            values[k] = v
    problems: List[Problem] = []
    notes: List[str] = []
    dcm = build_dcm(values, {}, 0, lambda _: "add-dcm", problems,
                    args.rate_tolerance / 100.0, notes)
    if dcm is None:
        raise MapError(problems)

    def want(cur: List[Dcm]) -> List[Dcm]:
        # From the DCMs on the switch when the transaction is built (again
        # if another ovs-daqctl changed them meanwhile).
        dcms = [d for d in cur if d.name != dcm.name] + [dcm]
        problems = validate_dcms(dcms, "add-dcm")
        if problems:
            raise MapError(problems)
        return dcms

    rec = _one_switch(args)
    rec.spec.rate_notes = notes
    try:
        rec.apply(want, "ovs-daqctl: add-dcm %s" % dcm.name, args.dry_run,
                  args.verbose)
    finally:
        rec.close()
    return EXIT_OK


def cmd_del_dcm(args: argparse.Namespace) -> int:
    rec = _one_switch(args)
    try:
        cur = rec.current()
        missing = set(args.names) - {d.name for d in cur}
        if missing and not args.if_exists:
            raise DaqctlError("no DCM %s on %s" % (", ".join(sorted(missing)),
                                                   rec.spec.label()),
                              EXIT_BAD_INPUT)
        rec.apply(lambda cur: [d for d in cur if d.name not in args.names],
                  "ovs-daqctl: del-dcm %s" % " ".join(args.names),
                  args.dry_run, args.verbose)
    finally:
        rec.close()
    return EXIT_OK


def cmd_clear(args: argparse.Namespace) -> int:
    rec = _one_switch(args)
    try:
        rec.apply(lambda _cur: [], "ovs-daqctl: clear", args.dry_run,
                  args.verbose)
    finally:
        rec.close()
    return EXIT_OK


def _specs_for_view(args: argparse.Namespace) -> List[SwitchSpec]:
    if getattr(args, "map", None):
        return read_map(args, args.map)
    return [cli_spec(args)]


def show_rows(db: Any, bridge: str) -> List[Dict[str, Any]]:
    from .idlutil import opt
    br = db.bridge(bridge)
    ports = {p.name: p for p in br.ports}
    rows = []
    for r in db.rings(br):
        st = r.iface.status
        stats = r.iface.statistics
        d = r.dcm
        egress = d.egress if d else ""
        bound_to = r.iface.options.get("egress")
        if d:
            steering: Optional[str] = d.steering
        else:
            steering = "bound" if bound_to else None
        row: Dict[str, Any] = {
            "dcm": d.name if d else None,
            "ring": r.port.name,
            "ofport": opt(r.iface.ofport),
            "match": d.match_summary() if d else "",
            "egress": egress,
            "egress_ok": egress in ports if d else None,
            # "two-rule" or "bound" (options:egress); for a bound ring,
            # what ovs-vswitchd made of it: "bound" or why it could not.
            "steering": steering,
            "egress_state": (st.get("egress_state") or None) if bound_to
            else None,
            "ring_size": _int_or_none(st.get("ring_size")),
            "occupancy": stats.get("occupancy"),
            "high_watermark": stats.get("high_watermark"),
            "tx_dropped": stats.get("tx_dropped"),
            "ring_full_drops": stats.get("ring_full_drops"),
            "max_burst": _int_or_none(st.get("max_burst")),
            "poll_interval": _int_or_none(st.get("poll_interval")),
            "max_rate": _int_or_none(st.get("max_rate")),
            # The bound of a burst beyond max-rate that was asked for
            # (0: none), and the one in force (bytes on the wire).
            "max_burst_bytes": _int_or_none(st.get("max_burst_bytes")),
            "shaping_burst_bytes": _int_or_none(
                st.get("shaping_burst_bytes")),
            "shaping_rate": st.get("shaping_rate"),
            # The share of the egress port (egress-max-rate): its rate and
            # burst bound in force, and how many daqrings share it.
            "egress_max_rate": _int_or_none(st.get("egress_max_rate")),
            "egress_max_burst_bytes": _int_or_none(
                st.get("egress_max_burst_bytes")),
            "egress_sharing_rings": _int_or_none(
                st.get("egress_sharing_rings")),
            "rate": d.rate if d else None,
            "config_error": st.get("config_error"),
            "error": opt(r.iface.error),
            "mempool_warning": st.get("mempool_warning"),
        }
        rows.append(row)
    return rows


def _int_or_none(v: Optional[str]) -> Optional[int]:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def cmd_show(args: argparse.Namespace) -> int:
    from .ovsdb import Ovsdb
    specs = _specs_for_view(args)
    result = []
    for spec in specs:
        db = Ovsdb(spec.db, args.timeout)
        try:
            rows = show_rows(db, spec.bridge)
        finally:
            db.close()
        result.append({"switch": spec.name, "db": spec.db,
                       "bridge": spec.bridge, "dcms": rows})
    # With -f json, in the envelope of every command (main()).
    args.report["switches"] = result
    if args.format == "json":
        return EXIT_OK
    for sw in result:
        print_show(sw, sys.stdout)
    return EXIT_OK


def print_show(sw: Dict[str, Any], out: Any) -> None:
    rows = sw["dcms"]
    managed = sum(1 for r in rows if r["dcm"])
    out.write("bridge %s (%s): %d DCMs, %d daqrings\n"
              % (sw["bridge"], sw["db"], managed, len(rows)))
    if not rows:
        return
    head = ["DCM", "RING", "OFPORT", "MATCH", "EGRESS", "STEERING", "SIZE",
            "OCCUP", "HIGH-WM", "DROPS", "SHAPING"]
    table = [head]
    notes = []

    def n(v: Any) -> str:
        return "-" if v is None else str(v)

    for r in rows:
        if r["poll_interval"] is None:
            shaping = "-"
        elif r["max_rate"]:
            shaping = "max-rate %s, burst %s" % (format_rate(r["max_rate"]),
                                                 n(r["max_burst"]))
            if r["max_burst_bytes"]:
                shaping += ", %d bytes" % r["max_burst_bytes"]
        elif r["egress_max_rate"]:
            shaping = "burst %s" % n(r["max_burst"])
        elif r["poll_interval"] == 0:
            shaping = "unshaped, burst %s" % n(r["max_burst"])
        else:
            rate = (r["shaping_rate"] or "").split(" (")[0]
            shaping = "%s/%sus = %s" % (n(r["max_burst"]),
                                        n(r["poll_interval"]), rate)
            if r["rate"]:
                shaping += " (asked %s)" % r["rate"]
        if r["egress_max_rate"]:
            shaping += ", egress shared at %s by %s rings" % (
                format_rate(r["egress_max_rate"]),
                n(r["egress_sharing_rings"]))
        drops = r["tx_dropped"]
        if r["ring_full_drops"] is not None and r["ring_full_drops"] != drops:
            drops = "%s (%s full)" % (n(drops), r["ring_full_drops"])
        egress = r["egress"] or "-"
        if r["egress_ok"] is False:
            egress += "(!)"
            notes.append("%s: egress %s is no longer on the bridge"
                         % (r["dcm"], r["egress"]))
        steering = n(r["steering"])
        if r["steering"] == "bound" and r["egress_state"] != "bound":
            steering += "(!)"
            notes.append("%s: not bound to its egress port, its packets are "
                         "dropped (egress_drops): %s"
                         % (r["ring"], r["egress_state"] or "not known yet"))
        table.append([r["dcm"] or "(unmanaged)", r["ring"], n(r["ofport"]),
                      r["match"] or "-", egress, steering, n(r["ring_size"]),
                      n(r["occupancy"]), n(r["high_watermark"]), n(drops),
                      shaping])
        for key in ("error", "config_error", "mempool_warning"):
            if r[key]:
                notes.append("%s: %s: %s" % (r["ring"], key, r[key]))
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    right = {2, 6, 7, 8, 9}
    for row in table:
        cells = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(row, widths))]
        out.write("  ".join(cells).rstrip() + "\n")
    for note in notes:
        out.write("  ! %s\n" % note)


def cmd_flows(args: argparse.Namespace) -> int:
    specs = _specs_for_view(args)
    out = [] if args.format == "json" else None
    for spec in specs:
        names = {d.cookie(): d.name for d in spec.dcms}
        sw: Dict[str, Any] = {"switch": spec.name, "bridge": spec.bridge,
                              "expected": bool(args.expected), "flows": []}
        args.report["switches"].append(sw)
        if args.expected:
            if len(specs) > 1 and out is None:
                sys.stdout.write("# switch %s\n" % spec.name)
            for d in spec.dcms:
                for f in dcm_flows(d, d.ring, d.egress):
                    if out is None:
                        sys.stdout.write(flow_text(d.cookie(), f) + "\n")
                    sw["flows"].append({
                        "cookie": "%#x" % d.cookie(), "dcm": d.name,
                        "priority": f[0], "match": ",".join(f[1]),
                        "actions": f[2]})
            continue
        of = OpenFlow(of_target(args, spec), args.ofctl, args.timeout,
                      ssl_args(args))
        if len(specs) > 1 and out is None:
            sys.stdout.write("# switch %s\n" % spec.name)
        # One DCM's flows together.
        flows = sorted(((f, ln.strip())
                        for ln in of.dump(names=True).splitlines()
                        for f in [parse_flow(ln)] if f is not None),
                       key=lambda fl: fl[0].cookie)
        for f, ln in flows:
            if out is None:
                sys.stdout.write(ln + "\n")
            sw["flows"].append({
                "cookie": "%#x" % f.cookie, "dcm": names.get(f.cookie),
                "priority": f.priority,
                "match": ",".join(f.props + f.match),
                "actions": f.actions})
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    specs = read_map(args, args.map)
    status = EXIT_OK
    for spec in specs:
        sw: Dict[str, Any] = {"switch": spec.name, "db": spec.db,
                              "bridge": spec.bridge,
                              "dcms": len(spec.dcms),
                              "notes": grouped_notes(spec.rate_notes)}
        args.report["switches"].append(sw)
        for note in sw["notes"]:
            args.say("%s: %s" % (spec.name, note))
        args.say("%s: %d DCMs, map OK" % (spec.label(), len(spec.dcms)))
        if args.live and not check_live(args, spec, sw):
            status = EXIT_DIFFERS
    return status


def check_live(args: argparse.Namespace, spec: SwitchSpec,
               sw: Dict[str, Any]) -> bool:
    """Compares a switch with its map, changing nothing: what apply would
    change, and the daqrings that are floodable (a flooded copy comes out
    of the ring a second time, also to the host that sent it).  Returns
    True if the switch is as the map says."""
    from .reconcile import Reconciler
    rec = Reconciler(spec, args, sys.stdout)
    try:
        plan = rec.plan(spec.dcms)
        _, (n, n_del, n_add) = rec.flow_changes(spec.dcms, True)
        br = rec.db.bridge(spec.bridge)
        rings = [str(r.port.name) for r in rec.db.rings(br)]
        flood = rec.floodable(rings)
    finally:
        rec.close()
    sw.update(plan.summary())
    sw.update(flows={"dcms": n, "deleted": n_del, "added": n_add},
              floodable=flood)
    label = spec.label()
    managed = {d.ring for d in spec.dcms}
    for ring in flood:
        how = ("'ovs-daqctl apply' sets no-flood" if ring in managed else
               "not in the map: ovs-ofctl -O OpenFlow10 mod-port %s %s "
               "no-flood" % (spec.bridge, ring))
        args.say("%s: daqring %s is floodable (NORMAL and flooding copy "
                 "broadcasts into it): %s" % (label, ring, how))
    pending = sum(len(v) for v in plan.summary().values())
    if pending:
        args.say("%s: %d daqrings differ from the map (apply --dry-run "
                 "lists them)" % (label, pending))
    if n:
        args.say("%s: the flows of %d DCMs differ from the map"
                 % (label, n))
    sw["in_sync"] = not (pending or n or flood)
    if sw["in_sync"]:
        args.say("%s: the switch is as the map says" % label)
    return bool(sw["in_sync"])


def cmd_rate(args: argparse.Namespace) -> int:
    try:
        bps = parse_rate(args.rate)
        if args.max_burst is not None:
            int_value(args.max_burst, "max-burst", 1, 32)
        b, t, err = shaping_for_rate(bps, args.max_burst,
                                     args.rate_tolerance / 100.0)
    except ValueError as e:
        raise DaqctlError(str(e), EXIT_BAD_INPUT)
    # "error" is the envelope's key for a failure: the conversion's
    # relative error is "rate_error".
    args.report.update(max_burst=b, poll_interval=t,
                       rate_bps=b * FRAME_BITS * 1e6 / t, rate_error=err)
    args.say("max-burst=%d poll-interval=%d  # %s (%+.3f%%)"
             % (b, t, format_rate(b * FRAME_BITS * 1e6 / t), err * 100))
    return EXIT_OK


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
  %(prog)s del-dcm dcm7

exit status: 0 success (also "no changes"), 1 the switch failed or refused
(changes rolled back), 2 bad map or arguments (nothing changed), 3 failed
and the rollback failed too, 4 check --live: a switch differs from the map.
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

    # ovs-daqctl fabric apply|status|plan (Documentation/topics/fabric.rst).
    try:
        from ..fabric.cli import add_fabric
    except ModuleNotFoundError as e:
        if not (e.name or "").startswith("ovs"):
            raise
        # Without OVS's Python library: "fabric" says what is missing.
        missing = e
        fb = cmd("fabric", lambda _args: _raise(missing), "the fabric's "
                 "commands (they need OVS's Python library)")
        fb.add_argument("rest", nargs=argparse.REMAINDER)
    else:
        add_fabric(sub, add_common)
    return p


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
