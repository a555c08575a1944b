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

"""ovs-daqctl's commands on a switch: each cmd_X(args) runs command X
from the parsed arguments (the parser and main(): cmd/ovs_daqctl.py).

A DCM map (YAML or CSV) says, per data collector (DCM), which packets go to
it (a destination IP, or a set of 4-tuples), through which egress port, and
with which daqring (ring size, shaping).  "apply" reconciles a switch to the
map: the daqrings are created, updated and removed in one OVSDB transaction
(OVS Python IDL), then the steering flows are replaced in one OpenFlow
bundle.  See ovs-daqctl(8).
"""

import argparse
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

# OVS's Python library is imported by the commands that talk to a switch
# (reconcile, ovsdb), not here: "check" (without --live), "rate" and
# "flows --expected" work without it.
from .model import (DaqctlError, Dcm, EXIT_BAD_INPUT, EXIT_DIFFERS,
                    EXIT_OK, FRAME_BITS, MapError, Problem,
                    SwitchSpec, format_rate, grouped_notes,
                    parse_rate, shaping_for_rate)
from .dcmmap import MapReader, build_dcm, default_db, validate_dcms
from .mapfile import int_value
from .openflow import (ssl_args, OpenFlow, dcm_flows, flow_text, of_target,
                       parse_flow)


# ================================================================== commands
def cli_spec(args: argparse.Namespace) -> SwitchSpec:
    db = args.db or default_db()
    bridge = args.bridge or "br0"
    return SwitchSpec(name=bridge, db=db, of=args.of, bridge=bridge,
                      where="command line")


def read_map(args: argparse.Namespace, path: str) -> List[SwitchSpec]:
    specs, problems = read_map_partly(args, path)
    if problems:
        raise MapError(problems)
    return specs


def read_map_partly(args: argparse.Namespace, path: str
                    ) -> Tuple[List[SwitchSpec], List[Problem]]:
    """The switches of map 'path' with the DCMs that could be read, and
    the map's problems (MapError only if no switch could be read)."""
    reader = MapReader(path, args.db, args.of, args.bridge, args.explicit,
                       args.rate_tolerance / 100.0)
    try:
        specs = reader.read()
        problems: List[Problem] = []
    except MapError as e:
        if not reader.specs:
            raise
        specs, problems = reader.specs, e.problems
    if args.switch:
        chosen = [s for s in specs if s.name in args.switch]
        missing = set(args.switch) - {s.name for s in specs}
        if missing:
            raise DaqctlError("no switch %s in %s (it has: %s)"
                              % (", ".join(sorted(missing)), path,
                                 ", ".join(s.name for s in specs)),
                              EXIT_BAD_INPUT)
        specs = chosen
    return specs, problems


# How long a switch is given to be checked against a map that is refused
# anyway (its problems are reported with the map's, or it is left out).
BAD_MAP_SWITCH_TIMEOUT = 5.0


def switch_problems(args: argparse.Namespace,
                    specs: List[SwitchSpec]) -> List[Problem]:
    """What the switches of a map that has problems refuse of the DCMs
    that could be read (unknown egress ports, names or ofports taken), so
    that every problem is reported in one pass.  A switch that cannot be
    reached is left out, with a line on standard error: the map is
    refused anyway."""
    from .reconcile import Reconciler
    quick = argparse.Namespace(**vars(args))
    quick.timeout = min(args.timeout, BAD_MAP_SWITCH_TIMEOUT)
    problems: List[Problem] = []
    for spec in specs:
        try:
            rec = Reconciler(spec, quick, sys.stdout)
        except DaqctlError as e:
            sys.stderr.write("ovs-daqctl: switch %s not checked: %s\n"
                             % (spec.name, e))
            continue
        try:
            rec.plan(spec.dcms)
        except MapError as e:
            problems += e.problems
        except DaqctlError as e:
            sys.stderr.write("ovs-daqctl: switch %s not checked: %s\n"
                             % (spec.name, e))
        finally:
            rec.close()
    return problems


def cmd_apply(args: argparse.Namespace) -> int:
    from .reconcile import Reconciler
    specs, problems = read_map_partly(args, args.map)
    if problems:
        # The map's problems and the switches', together.
        raise MapError(problems + switch_problems(args, specs))
    comment = "ovs-daqctl: apply %s" % args.map
    recs = []
    try:
        # Connect to every switch and check the map against it first.
        for spec in specs:
            rec = Reconciler(spec, args, sys.stdout)
            recs.append(rec)
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
        if st.get("config_error"):
            # The switch refused the options in the database and keeps
            # its previous ones: the steering in force is in its status.
            bound_to = st.get("egress")
            if bound_to:
                steering = "bound"
            elif steering == "bound":
                steering = "two-rule" if d else None
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
            rate = wire_rate_text((r["shaping_rate"] or "").split(" (")[0])
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
        ring = r["ring"]
        if r["config_error"]:
            # ovs-vswitchd refused the options in the database: the ring
            # runs with its previous configuration (what SIZE and SHAPING
            # show), whatever "ovs-vsctl set" said.
            ring += "(!)"
            why = r["config_error"]
            if why.startswith(r["ring"] + ": "):
                why = why[len(r["ring"]) + 2:]
            notes.append("%s: config_error: the switch refused the "
                         "configuration in the database and keeps its "
                         "previous one: %s" % (r["ring"], why))
        table.append([r["dcm"] or "(unmanaged)", ring, n(r["ofport"]),
                      r["match"] or "-", egress, steering, n(r["ring_size"]),
                      n(r["occupancy"]), n(r["high_watermark"]), n(drops),
                      shaping])
        for key in ("error", "mempool_warning"):
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


_SWITCH_RATE_RE = re.compile(r"^([0-9.]+) ([kMG])bps$")


def wire_rate_text(text: str) -> str:
    """A rate as ovs-vswitchd's status writes it ("777.22 Mbps") in the
    units of ovs-daqctl ("777.22 Mbit/s"): bps would read as bytes per
    second to tc's users, as parse_rate() says."""
    m = _SWITCH_RATE_RE.match(text.strip())
    return "%s %sbit/s" % (m.group(1), m.group(2)) if m else text


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
    if args.live:
        specs, problems = read_map_partly(args, args.map)
        if problems:
            raise MapError(problems + switch_problems(args, specs))
    else:
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
        # Offline, no database was contacted: the switch's name only.
        args.say("%s: %d DCMs, map OK" % (spec.label() if args.live
                                          else spec.name, len(spec.dcms)))
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
