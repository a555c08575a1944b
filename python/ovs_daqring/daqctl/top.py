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

"""ovs-daqctl top: the daqrings of one switch, the worst first, refreshed
every few seconds (ovs-daqctl(8)).

The worst ring is the one that dropped packets since the last refresh,
then the fullest (occupancy over ring size), then the one that dropped
most in all; so that the rings to look at come first among thousands,
and --limit keeps the screen to them.  The numbers are the Interface
statistics ovs-vswitchd writes to the database (every
other_config:stats-update-interval, 5 s by default), as "show" prints
them; the live view needs no terminal library: it clears the screen
with an ANSI sequence when standard output is a terminal, and otherwise
prints one table after the other."""

import argparse
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from .commands import cli_spec, show_rows
from .model import DaqctlError, EXIT_BAD_INPUT, EXIT_OK

CLEAR = "\033[H\033[2J"


def _num(v: Any) -> int:
    """A statistic or status value as a count (0 if absent or bad)."""
    try:
        return max(0, int(v))
    except (TypeError, ValueError):
        return 0


def top_rows(rows: List[Dict[str, Any]],
             before: Optional[Dict[str, int]]) -> List[Dict[str, Any]]:
    """show_rows()' 'rows', each with 'fill' (occupancy / ring size, 0 to
    1), 'drops' and 'new_drops' (since the drops in 'before', by ring;
    None on the first sample), the worst first."""
    out = []
    for r in rows:
        drops = _num(r["tx_dropped"])
        size = _num(r["ring_size"])
        occ = _num(r["occupancy"])
        new = None
        if before is not None:
            # A ring created meanwhile, or whose counters were reset (the
            # switch restarted): its drops since the last sample are all.
            new = drops - before.get(r["ring"], 0)
            new = drops if new < 0 else new
        out.append(dict(r, fill=occ / size if size else 0.0, drops=drops,
                        new_drops=new))
    out.sort(key=lambda r: (-(r["new_drops"] or 0), -r["fill"],
                            -r["drops"], -_num(r["high_watermark"]),
                            r["ring"]))
    return out


def top_text(label: str, rows: List[Dict[str, Any]], limit: int,
             interval: float, when: str) -> str:
    """One refresh of the view: a header and the worst 'limit' rings of
    top_rows()' 'rows' (every ring if 'limit' is 0)."""
    dropping = sum(1 for r in rows if r["new_drops"])
    lines = ["%s: %d daqrings, %d dropping since the last sample, %s "
             "(every %g s)" % (label, len(rows), dropping, when, interval)]
    if not rows:
        return "\n".join(lines) + "\n"
    head = ["RING", "DCM", "SIZE", "OCCUP", "FILL", "HIGH-WM", "DROPS",
            "NEW-DROPS", "FLAGS"]
    table = [head]
    shown = rows if limit <= 0 else rows[:limit]
    for r in shown:
        flags = []
        if r["config_error"]:
            flags.append("config_error")
        if r["error"]:
            flags.append("error")
        if r["steering"] == "bound" and r["egress_state"] != "bound":
            flags.append("unbound")
        table.append([
            r["ring"], r["dcm"] or "(unmanaged)",
            "-" if r["ring_size"] is None else str(r["ring_size"]),
            "-" if r["occupancy"] is None else str(r["occupancy"]),
            "%.0f%%" % (100 * r["fill"]),
            "-" if r["high_watermark"] is None else str(r["high_watermark"]),
            str(r["drops"]),
            "-" if r["new_drops"] is None else str(r["new_drops"]),
            ",".join(flags) or "-"])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        lines.append("  ".join(c.ljust(w) if i in (0, 1, 8) else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))
                               ).rstrip())
    if len(shown) < len(rows):
        lines.append("... %d more daqrings (--limit 0 shows them all)"
                     % (len(rows) - len(shown)))
    return "\n".join(lines) + "\n"


def _idle(db: Any, secs: float) -> None:
    """Keeps the database's replica up to date for 'secs' seconds."""
    import ovs.poller
    end = time.monotonic() + secs
    while True:
        db.idl.run()
        left = end - time.monotonic()
        if left <= 0:
            return
        poller = ovs.poller.Poller()
        db.idl.wait(poller)
        poller.timer_wait(int(left * 1000) + 1)
        poller.block()


def _sample(db: Any, bridge: str, before: Optional[Dict[str, int]]
            ) -> Tuple[List[Dict[str, Any]], Dict[str, int]]:
    rows = top_rows(show_rows(db, bridge), before)
    return rows, {r["ring"]: r["drops"] for r in rows}


def cmd_top(args: argparse.Namespace) -> int:
    from .ovsdb import Ovsdb
    if not args.interval > 0:
        raise DaqctlError("top: --interval must be positive",
                          EXIT_BAD_INPUT)
    if args.count is not None and args.count < 1:
        raise DaqctlError("top: -n must be at least 1", EXIT_BAD_INPUT)
    count = 1 if args.once else args.count
    spec = cli_spec(args)
    live = args.format != "json" and sys.stdout.isatty() and count != 1
    db = Ovsdb(spec.db, args.timeout)
    try:
        before: Optional[Dict[str, int]] = None
        done = 0
        while True:
            rows, drops = _sample(db, spec.bridge, before)
            before = drops
            done += 1
            args.report["switches"] = [{
                "switch": spec.name, "db": spec.db, "bridge": spec.bridge,
                "sample": done, "dcms": rows}]
            if args.format != "json":
                text = top_text(spec.label(), rows, args.limit,
                                args.interval,
                                time.strftime("%H:%M:%S"))
                sys.stdout.write((CLEAR if live else
                                  "" if done == 1 else "\n") + text)
                sys.stdout.flush()
            if count is not None and done >= count:
                return EXIT_OK
            _idle(db, args.interval)
    except KeyboardInterrupt:
        # Ctrl-C is how a live view ends.
        return EXIT_OK
    finally:
        db.close()
