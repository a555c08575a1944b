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

"""DCM maps: reading YAML and CSV maps (with line numbers), and
checking the DCMs they describe."""

import csv
import io
import os
import re
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple
import yaml

from .model import (CSV_COLUMNS, DCM_KEYS, DEFAULT_KEYS, Dcm,
                    EGRESS_SHARE_MAX_RINGS,
                    FLOW_BUCKETS_DEFAULT, FLOW_BUCKETS_MAX,
                    FRAME_OVERHEAD_DEFAULT, FRAME_OVERHEAD_MAX, FourTuple,
                    MAX_BURST_BYTES_MAX, MAX_BURST_DEFAULT, MAX_BURST_MAX,
                    MAX_BURST_MIN,
                    MAX_RATE_MAX, MAX_RATE_MIN, MapError, OFPORT_MAX,
                    POLL_INTERVAL_MAX, Problem,
                    RING_SIZE_DEFAULT, RING_SIZE_MAX, RING_SIZE_MIN,
                    STEERING_DEFAULT, STEERING_MODES, SWITCH_KEYS,
                    SwitchSpec, TOP_KEYS, format_rate, min_burst_bytes,
                    parse_rate)
from .mapfile import (LineDict, LineLoader, int_value, ipv4, parse_tuple,
                      port_name)


# ================================================================ map parsing
class MapReader:
    """Reads a DCM map (YAML or CSV) into SwitchSpecs, collecting every
    problem with its file and line."""

    def __init__(self, path: str, db: Optional[str], of: Optional[str],
                 bridge: Optional[str], explicit: Set[str],
                 tolerance: float) -> None:
        self.path = path
        self.fname = "-" if path == "-" else path
        self.cli = {"db": db, "of": of, "bridge": bridge}
        self.explicit = explicit
        self.tolerance = tolerance
        self.problems: List[Problem] = []
        # After read(), also when it raised MapError: the switches and
        # the DCMs that could be read (a DCM with a problem is left out),
        # against which "apply" checks the switches in the same pass.
        self.specs: List[SwitchSpec] = []

    # ----------------------------------------------------------- helpers
    def at(self, line: int) -> str:
        return "%s:%d" % (self.fname, line) if line else self.fname

    def bad(self, line: int, reason: str) -> None:
        self.problems.append(Problem(self.at(line), reason))

    def read(self) -> List[SwitchSpec]:
        try:
            if self.path == "-":
                text = sys.stdin.read()
            else:
                with open(self.path, encoding="utf-8") as f:
                    text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise MapError([Problem(self.fname, "cannot read map: %s" % e)])
        if text.startswith("\ufeff"):
            text = text[1:]             # a byte order mark (spreadsheets)
        first = next((ln.strip() for ln in text.splitlines()
                      if ln.strip() and not ln.lstrip().startswith("#")), "")
        if self.path.lower().endswith(".csv") or (
                self.path == "-" and _CSV_HEADER_RE.match(first)):
            specs = self._read_csv(text)
        else:
            specs = self._read_yaml(text)
        for spec in specs:
            self.problems += validate_dcms(spec.dcms, spec.where)
        self.specs = specs
        if self.problems:
            raise MapError(self.problems)
        return specs

    # --------------------------------------------------------------- yaml
    def _read_yaml(self, text: str) -> List[SwitchSpec]:
        try:
            doc = yaml.load(text, Loader=LineLoader)
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            line = mark.line + 1 if mark else 0
            self.bad(line, "malformed YAML: %s" % (e.problem or e.context))
            raise MapError(self.problems)
        except yaml.YAMLError as e:
            self.bad(0, "malformed YAML: %s" % e)
            raise MapError(self.problems)
        if doc is None:
            self.bad(1, "the map is empty (to remove every DCM, write "
                     "'dcms: []')")
            raise MapError(self.problems)
        if isinstance(doc, list):
            top = LineDict(dcms=doc)
            top.line, top.key_lines = 1, {"dcms": 1}
            doc = top
        if not isinstance(doc, LineDict):
            self.bad(1, "a map is a mapping with 'dcms' or 'switches', or a "
                     "list of DCMs")
            raise MapError(self.problems)
        self._unknown(doc, TOP_KEYS, "map")
        top_defaults = self._defaults(doc)
        specs: List[SwitchSpec] = []
        if "switches" in doc:
            if "dcms" in doc:
                self.bad(doc.key_lines["dcms"], "'dcms' and 'switches' "
                         "exclude each other; put the DCMs under their "
                         "switch")
            switches = doc["switches"]
            if not isinstance(switches, list) or not switches:
                self.bad(doc.key_lines["switches"],
                         "'switches' must be a non-empty list")
                raise MapError(self.problems)
            for sw in switches:
                if not isinstance(sw, LineDict):
                    self.bad(doc.key_lines["switches"],
                             "each switch must be a mapping")
                    continue
                self._unknown(sw, SWITCH_KEYS, "switch")
                defaults = dict(top_defaults)
                defaults.update(self._defaults(sw))
                spec = self._switch(sw, doc)
                if spec:
                    spec.dcms = self._dcm_list(sw, defaults, spec)
                    specs.append(spec)
        else:
            if "dcms" not in doc:
                self.bad(doc.line, "the map has neither 'dcms' nor "
                         "'switches'")
                raise MapError(self.problems)
            spec = self._switch(doc, None)
            if spec:
                spec.dcms = self._dcm_list(doc, top_defaults, spec)
                specs.append(spec)
        self._check_switches(specs)
        return specs

    def _unknown(self, m: LineDict, allowed: Sequence[str],
                 what: str) -> None:
        for k in m:
            if k not in allowed:
                self.bad(m.key_lines.get(k, m.line),
                         "unknown %s key '%s' (known: %s)"
                         % (what, k, ", ".join(allowed)))

    def _defaults(self, m: LineDict) -> Dict[str, Tuple[Any, int]]:
        d = m.get("defaults")
        if d is None:
            return {}
        if not isinstance(d, LineDict):
            self.bad(m.key_lines["defaults"], "'defaults' must be a mapping")
            return {}
        self._unknown(d, DEFAULT_KEYS, "defaults")
        if "rate" in d and "poll_interval" in d:
            self.bad(d.line, "defaults: give either 'rate' or "
                     "'poll_interval', not both")
        return {k: (v, d.key_lines[k]) for k, v in d.items()
                if k in DEFAULT_KEYS}

    def _switch(self, m: LineDict,
                top: Optional[LineDict]) -> Optional[SwitchSpec]:
        vals: Dict[str, Optional[str]] = {}
        ok = True
        for k in ("db", "of", "bridge"):
            v: Any = m.get(k)
            line = m.key_lines.get(k, m.line)
            if v is None and top is not None and k != "bridge":
                v = top.get(k)
                line = top.key_lines.get(k, top.line)
            if v is None and top is not None and k == "bridge":
                v = top.get(k)
            if v is not None and not isinstance(v, str):
                self.bad(line, "'%s' must be a string" % k)
                ok = False
                continue
            cli = self.cli[k]
            if (v is not None and k in self.explicit and cli is not None
                    and cli != v):
                self.bad(line, "--%s %s conflicts with the map's %s: %s"
                         % (k if k != "of" else "of", cli, k, v))
                ok = False
            vals[k] = v if v is not None else cli
        if not ok:
            return None
        name = m.get("name") if top is not None else None
        if name is not None and not isinstance(name, str):
            self.bad(m.key_lines.get("name", m.line),
                     "switch 'name' must be a string")
            return None
        bridge = vals["bridge"] or "br0"
        return SwitchSpec(name=name or bridge, db=vals["db"] or default_db(),
                          of=vals["of"], bridge=bridge, where=self.at(m.line))

    def _check_switches(self, specs: List[SwitchSpec]) -> None:
        seen: Dict[Tuple[str, str], str] = {}
        names: Dict[str, str] = {}
        for s in specs:
            k = (s.db, s.bridge)
            if k in seen:
                self.problems.append(Problem(
                    s.where, "switch %s: bridge %s of %s is already listed "
                    "at %s" % (s.name, s.bridge, s.db, seen[k])))
            seen.setdefault(k, s.where)
            if s.name in names:
                self.problems.append(Problem(
                    s.where, "duplicate switch name '%s' (first at %s)"
                    % (s.name, names[s.name])))
            names.setdefault(s.name, s.where)

    def _dcm_list(self, m: LineDict, defaults: Dict[str, Tuple[Any, int]],
                  spec: SwitchSpec) -> List[Dcm]:
        items = m.get("dcms")
        if items is None:
            items = []
        if not isinstance(items, list):
            self.bad(m.key_lines.get("dcms", m.line),
                     "'dcms' must be a list")
            return []
        out: List[Dcm] = []
        for item in items:
            if not isinstance(item, LineDict):
                self.bad(m.key_lines.get("dcms", m.line),
                         "each DCM must be a mapping (name, ip, egress...)")
                continue
            self._unknown(item, DCM_KEYS, "DCM")
            # (A DCM with both 'rate' and 'poll_interval' keeps both:
            # build_dcm() refuses it, naming it.)
            values, lines = with_defaults(defaults, item, DCM_KEYS)
            dcm = build_dcm(values, lines, item.line, self.at, self.problems,
                            self.tolerance, spec.rate_notes)
            if dcm:
                out.append(dcm)
        return out

    # ---------------------------------------------------------------- csv
    def _read_csv(self, text: str) -> List[SwitchSpec]:
        lines = [(n + 1, ln) for n, ln in enumerate(text.splitlines())]
        rows = [(n, ln) for n, ln in lines
                if ln.strip() and not ln.lstrip().startswith("#")]
        if not rows:
            self.bad(1, "the map is empty (a CSV map needs a header line: "
                     "%s)" % ",".join(CSV_COLUMNS))
            raise MapError(self.problems)
        try:
            parsed = list(csv.reader(io.StringIO(
                "\n".join(ln for _, ln in rows)), skipinitialspace=True))
        except csv.Error as e:
            self.bad(0, "malformed CSV: %s" % e)
            raise MapError(self.problems)
        if len(parsed) != len(rows):
            self.bad(0, "malformed CSV (a quoted field spans lines)")
            raise MapError(self.problems)
        hline = rows[0][0]
        header = [h.strip().lower().replace("-", "_") for h in parsed[0]]
        for h in header:
            if h not in CSV_COLUMNS:
                self.bad(hline, "unknown CSV column '%s' (known: %s)"
                         % (h, ",".join(CSV_COLUMNS)))
        if len(set(header)) != len(header):
            self.bad(hline, "duplicate CSV column")
        if "name" not in header:
            self.bad(hline, "the CSV header needs a 'name' column (the "
                     "first line that is not a comment is the header)")
        if self.problems:
            raise MapError(self.problems)
        spec = SwitchSpec(name=self.cli["bridge"] or "br0",
                          db=self.cli["db"] or default_db(),
                          of=self.cli["of"],
                          bridge=self.cli["bridge"] or "br0",
                          where=self.fname)
        for (line, _), cells in zip(rows[1:], parsed[1:]):
            if len(cells) > len(header):
                self.bad(line, "%d fields, the header has %d"
                         % (len(cells), len(header)))
                continue
            values: Dict[str, Any] = {}
            for h, c in zip(header, cells):
                c = c.strip()
                if c == "":
                    continue
                if h == "tuples":
                    # "a->b; c -> d" or "a->b c->d": spaces around an
                    # arrow are not separators.
                    values[h] = _ARROW_RE.sub("->", c).replace(
                        ";", " ").split()
                else:
                    values[h] = c
            dcm = build_dcm(values, {k: line for k in values}, line,
                            self.at, self.problems, self.tolerance,
                            spec.rate_notes)
            if dcm:
                spec.dcms.append(dcm)
        return [spec]


# The header of a CSV map read from standard input: column names separated
# by commas (spaces and quotes allowed), which no YAML map's first line is.
# An unknown name is still a header: the CSV reader says it is unknown.
_CSV_HEADER_RE = re.compile(r'^\s*"?[A-Za-z_][A-Za-z0-9_-]*"?\s*'
                            r'(,\s*"?[A-Za-z_][A-Za-z0-9_-]*"?\s*)+,?\s*$')
_ARROW_RE = re.compile(r"\s*->\s*")


def default_db() -> str:
    """unix:$OVS_RUNDIR/db.sock, else in OVS's own run directory.  Reading
    and checking a map needs no OVS library: without python3-openvswitch
    that directory is the usual one."""
    rundir = os.environ.get("OVS_RUNDIR")
    if not rundir:
        try:
            import ovs.dirs
            rundir = ovs.dirs.RUNDIR
        except ImportError:
            rundir = "/var/run/openvswitch"
    return "unix:%s/db.sock" % rundir


# ============================================================ DCM validation
def _steering(v: Any) -> str:
    s = str(v).strip().lower()
    if s not in STEERING_MODES:
        raise ValueError("steering %r: %s" % (v, " or ".join(STEERING_MODES)))
    return s


def with_defaults(defaults: Dict[str, Tuple[Any, int]], item: LineDict,
                  keys: Sequence[str]) -> Tuple[Dict[str, Any],
                                                Dict[str, int]]:
    """The values of a map's DCM 'item' (its 'keys') over the map's
    'defaults', and the line of each.  A DCM that gives 'rate' or
    'poll_interval' replaces both of the defaults'."""
    values = {k: v for k, (v, _) in defaults.items()}
    lines = {k: line for k, (_, line) in defaults.items()}
    if "rate" in item or "poll_interval" in item:
        for k in ("rate", "poll_interval"):
            values.pop(k, None)
    for k, v in item.items():
        if k in keys:
            values[k] = v
            lines[k] = item.key_lines[k]
    return values, lines


def _rate_value(v: Any, what: str) -> int:
    """A rate (text like 'rate': 1gbit, 190mbit...) in bit/s, in range."""
    if isinstance(v, bool):
        raise ValueError("%s must be a rate, not %r" % (what, v))
    text = str(v).strip()
    bps = int(round(parse_rate(text)))
    if not MAX_RATE_MIN <= bps <= MAX_RATE_MAX:
        raise ValueError("%s %s is out of range %s..%s"
                         % (what, text, format_rate(MAX_RATE_MIN),
                            format_rate(MAX_RATE_MAX)))
    return bps


def build_dcm(values: Dict[str, Any], lines: Dict[str, int], line: int,
              at: Any, problems: List[Problem], tolerance: float,
              rate_notes: List[str]) -> Optional[Dcm]:
    """A Dcm from map values (after defaults), or None with 'problems'
    extended (each with the line of the offending key)."""
    before = len(problems)

    def bad(key: Optional[str], reason: str) -> None:
        problems.append(Problem(at(lines.get(key, line) if key else line),
                                reason))

    name = values.get("name")
    try:
        name = port_name(name, "DCM name")
    except ValueError as e:
        bad("name", str(e) if name is not None else "a DCM needs a 'name'")
        return None
    label = "DCM %s: " % name

    def get(key: str, fn: Any, *args: Any) -> Any:
        if key not in values:
            return None
        try:
            return fn(values[key], *args)
        except ValueError as e:
            bad(key, label + str(e))
            return None

    ring = get("ring", port_name, "ring") or name
    egress = values.get("egress")
    if egress is None:
        bad(None, label + "no 'egress' port")
    else:
        egress = get("egress", port_name, "egress")
    ip = get("ip", ipv4, "ip")
    tuples: List[FourTuple] = []
    if "tuples" in values:
        tv = values["tuples"]
        if isinstance(tv, (str, dict)):
            tv = [tv]
        if not isinstance(tv, list) or not tv:
            bad("tuples", label + "'tuples' must be a non-empty list")
        else:
            for t in tv:
                try:
                    tuples.append(parse_tuple(t))
                except ValueError as e:
                    bad("tuples", label + str(e))
    if "ip" in values and "tuples" in values:
        bad(None, label + "give either 'ip' or 'tuples', not both")
    elif "ip" not in values and "tuples" not in values:
        bad(None, label + "no match: give 'ip' (destination address) or "
            "'tuples'")
    if len(set(tuples)) != len(tuples):
        bad("tuples", label + "a tuple is listed twice")
    ring_size = get("ring_size", int_value, "ring-size", RING_SIZE_MIN,
                    RING_SIZE_MAX)
    max_burst = get("max_burst", int_value, "max-burst", MAX_BURST_MIN,
                    MAX_BURST_MAX)
    poll = get("poll_interval", int_value, "poll-interval", 0,
               POLL_INTERVAL_MAX)
    numa = get("numa_id", int_value, "numa-id", 0, 1023)
    buckets = get("flow_buckets", int_value, "flow-buckets", 0,
                  FLOW_BUCKETS_MAX)
    if buckets is not None and buckets and (buckets & (buckets - 1)
                                            or buckets == 1):
        bad("flow_buckets", label + "flow-buckets %d is not 0 (a strict "
            "FIFO) or a power of 2 from 2 to %d" % (buckets,
                                                    FLOW_BUCKETS_MAX))
    ofport = get("ofport", int_value, "ofport", 1, OFPORT_MAX)
    steering = get("steering", _steering)
    overhead = get("frame_overhead", int_value, "frame-overhead", 0,
                   FRAME_OVERHEAD_MAX)
    burst_bytes = get("max_burst_bytes", int_value, "max-burst-bytes",
                      min_burst_bytes(overhead), MAX_BURST_BYTES_MAX)
    if burst_bytes is not None and "rate" not in values:
        bad("max_burst_bytes", label + "max-burst-bytes bounds the bursts "
            "of byte shaping: it needs 'rate'")
    rate_text: Optional[str] = None
    max_rate = 0
    if "rate" in values and "poll_interval" in values:
        bad("rate", label + "give either 'rate' or 'poll-interval', not both")
    elif "rate" in values:
        # The daqring shapes by bytes at exactly this rate (max-rate),
        # counting frame-overhead bytes per frame.
        rate_text = str(values["rate"]).strip()
        try:
            max_rate = _rate_value(values["rate"], "rate")
        except ValueError as e:
            bad("rate", label + str(e))
        else:
            poll = 0
            rate_notes.append(
                "rate %s -> max-rate %d bit/s, frames counted with %d bytes "
                "of overhead" % (rate_text, max_rate,
                                 FRAME_OVERHEAD_DEFAULT if overhead is None
                                 else overhead))
    egress_rate = 0
    if "egress_max_rate" in values:
        # The rate of the egress port, shared by the daqrings bound to it
        # (work-conserving): the switch needs options:egress.
        try:
            egress_rate = _rate_value(values["egress_max_rate"],
                                      "egress-max-rate")
        except ValueError as e:
            bad("egress_max_rate", label + str(e))
        if (steering or STEERING_DEFAULT) != "bound":
            bad("egress_max_rate", label + "egress-max-rate is the rate "
                "that the daqrings bound to their egress port share: it "
                "needs 'steering: bound'")
        if poll:
            bad("egress_max_rate", label + "egress-max-rate (byte shaping) "
                "and poll-interval (packet shaping) exclude each other")
    egress_burst = get("egress_max_burst_bytes", int_value,
                       "egress-max-burst-bytes", min_burst_bytes(overhead),
                       MAX_BURST_BYTES_MAX)
    if egress_burst is not None and "egress_max_rate" not in values:
        bad("egress_max_burst_bytes", label + "egress-max-burst-bytes bounds "
            "the bursts of a shared egress: it needs 'egress-max-rate'")
    if len(problems) > before or not isinstance(egress, str):
        return None
    return Dcm(name=name, ring=ring, egress=egress, ip=ip,
               tuples=tuple(tuples),
               ring_size=RING_SIZE_DEFAULT if ring_size is None else ring_size,
               max_burst=MAX_BURST_DEFAULT if max_burst is None else max_burst,
               poll_interval=0 if poll is None else poll, numa_id=numa,
               flow_buckets=(FLOW_BUCKETS_DEFAULT if buckets is None
                             else buckets),
               max_rate=max_rate, frame_overhead=overhead,
               max_burst_bytes=burst_bytes or 0, ofport=ofport, rate=rate_text,
               egress_max_rate=egress_rate,
               egress_max_burst_bytes=egress_burst or 0,
               steering=steering or STEERING_DEFAULT, where=at(line))


def validate_dcms(dcms: List[Dcm], where: str,
                  port_of: Optional[Callable[[Dcm], str]] = None
                  ) -> List[Problem]:
    """Checks among the DCMs of one switch: unique names, ring names,
    addresses, tuples, ofports; rings are not egress ports; matches do not
    overlap; cookies do not collide; the DCMs of one egress port share it
    alike, and no more of them than may share one.  'port_of': what
    names a DCM's egress port in the messages and tells apart the DCMs
    of different ports (default: "egress NAME"; a fabric's DCMs have the
    ports of their host)."""
    problems: List[Problem] = []
    names: Dict[str, Dcm] = {}
    rings: Dict[str, Dcm] = {}
    ips: Dict[str, Dcm] = {}
    ofports: Dict[int, Dcm] = {}
    cookies: Dict[int, Dcm] = {}
    by_dst: Dict[Tuple[str, str], List[Tuple[FourTuple, Dcm]]] = {}

    def dup(d: Dcm, what: str, first: Dcm) -> None:
        problems.append(Problem(d.where or where, "DCM %s: duplicate %s "
                                "(also DCM %s at %s)" % (d.name, what,
                                                         first.name,
                                                         first.where)))

    for d in dcms:
        if d.name in names:
            dup(d, "name", names[d.name])
            continue
        names[d.name] = d
        if d.ring in rings:
            dup(d, "ring port name %s" % d.ring, rings[d.ring])
        rings.setdefault(d.ring, d)
        if d.ip:
            if d.ip in ips:
                dup(d, "IP %s" % d.ip, ips[d.ip])
            ips.setdefault(d.ip, d)
        if d.ofport is not None:
            if d.ofport in ofports:
                dup(d, "ofport %d" % d.ofport, ofports[d.ofport])
            ofports.setdefault(d.ofport, d)
        c = d.cookie()
        if c in cookies:
            dup(d, "cookie %#x (hash collision: rename one)" % c, cookies[c])
        cookies.setdefault(c, d)
        for t in d.tuples:
            by_dst.setdefault((t.proto, t.dst), []).append((t, d))
    problems += _check_egress_shares(dcms, where, port_of)
    for d in dcms:
        if d.egress in rings:
            problems.append(Problem(d.where or where, "DCM %s: egress %s is "
                                    "the daqring of DCM %s"
                                    % (d.name, d.egress,
                                       rings[d.egress].name)))
        for t in d.tuples:
            if t.dst in ips and ips[t.dst] is not d:
                problems.append(Problem(
                    d.where or where, "DCM %s: tuple %s overlaps the IP "
                    "match of DCM %s" % (d.name, t.canonical(),
                                         ips[t.dst].name)))
    for group in by_dst.values():
        for i, (t1, d1) in enumerate(group):
            for t2, d2 in group[i + 1:]:
                if t1.overlaps(t2):
                    problems.append(Problem(
                        d2.where or where, "DCM %s: tuple %s overlaps %s of "
                        "DCM %s" % (d2.name, t2.canonical(), t1.canonical(),
                                    d1.name)))
    return problems


def _check_egress_shares(dcms: List[Dcm], where: str,
                         port_of: Optional[Callable[[Dcm], str]] = None
                         ) -> List[Problem]:
    """The DCMs of one egress port share it (egress-max-rate) only if
    they all give the same egress-max-rate, egress-max-burst-bytes and
    frame-overhead: the switch refuses a daqring that disagrees with the
    others of its egress, and one without egress-max-rate would not be
    held back by the share.  At most EGRESS_SHARE_MAX_RINGS share one:
    the switch refuses the next."""
    problems: List[Problem] = []
    port = port_of or (lambda d: "egress %s" % d.egress)
    first: Dict[str, Dcm] = {}
    sharing: Dict[str, List[Dcm]] = {}
    for d in dcms:
        if d.egress_max_rate:
            first.setdefault(port(d), d)
            sharing.setdefault(port(d), []).append(d)

    def share_text(d: Dcm) -> str:
        if not d.egress_max_rate:
            return "no egress-max-rate"
        text = "egress-max-rate %d" % d.egress_max_rate
        if d.egress_max_burst_bytes:
            text += ", egress-max-burst-bytes %d" % d.egress_max_burst_bytes
        if d.frame_overhead is not None:
            text += ", frame-overhead %d" % d.frame_overhead
        return text

    def key(d: Dcm) -> Tuple[int, int, int]:
        return (d.egress_max_rate, d.egress_max_burst_bytes,
                FRAME_OVERHEAD_DEFAULT if d.frame_overhead is None
                else d.frame_overhead)

    for d in dcms:
        f = first.get(port(d))
        if f is None or f is d or key(d) == key(f):
            continue
        problems.append(Problem(
            d.where or where, "DCM %s: the DCMs of %s must share it "
            "alike: DCM %s gives %s, DCM %s (at %s) gives %s"
            % (d.name, port(d), d.name, share_text(d), f.name, f.where,
               share_text(f))))
    for name, ds in sorted(sharing.items()):
        if len(ds) > EGRESS_SHARE_MAX_RINGS:
            extra = ds[EGRESS_SHARE_MAX_RINGS]
            problems.append(Problem(
                extra.where or where, "DCM %s: %d DCMs share %s "
                "(egress-max-rate), at most %d daqrings may share one "
                "egress port" % (extra.name, len(ds), name,
                                 EGRESS_SHARE_MAX_RINGS)))
    return problems
