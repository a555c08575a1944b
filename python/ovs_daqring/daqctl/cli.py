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
import csv
import hashlib
import io
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, FrozenSet, List, Optional,
                    Sequence, Set, Tuple)

try:
    import ovs.db.idl
    import ovs.dirs
    import ovs.jsonrpc
    import ovs.poller
    import ovs.stream
    import yaml
except ImportError as _e:               # pragma: no cover
    sys.stderr.write("ovs-daqctl: %s (Debian: python3-openvswitch, "
                     "python3-yaml)\n" % _e)
    sys.exit(1)

from .. import VERSION  # noqa: E402
PROG = "ovs-daqctl"

# Exit statuses (ovs-daqctl(8), "Exit Status").
EXIT_OK = 0
EXIT_FAILED = 1           # the switch refused or failed; rolled back
EXIT_BAD_INPUT = 2        # bad map or arguments; nothing was changed
EXIT_ROLLBACK_FAILED = 3  # failed, and so did the rollback
EXIT_DIFFERS = 4          # check --live: a switch differs from its map

# Limits of the daqring options (Documentation/topics/daqring.rst).
RING_SIZE_MIN, RING_SIZE_MAX, RING_SIZE_DEFAULT = 1, 1048576, 4096
MAX_BURST_MIN, MAX_BURST_MAX, MAX_BURST_DEFAULT = 1, 32, 32
POLL_INTERVAL_MAX = 1000000
MAX_RATE_MIN, MAX_RATE_MAX = 1000, 10**12      # bit/s
FRAME_OVERHEAD_MAX, FRAME_OVERHEAD_DEFAULT = 255, 24
FRAME_BITS = 1518 * 8              # bits of a full-size Ethernet frame
OFPORT_MAX = 0xfeff

# Steering flows: priorities and cookies.
PRIO_TO_RING = 100
PRIO_FROM_RING = 101
COOKIE_PREFIX = 0xdac7 << 48
COOKIE_MASK = 0xffff << 48
OFPP_LOCAL = 65534

# Ownership marks, in the Port's external_ids.
EXT_DCM = "daqctl-dcm"
EXT_MATCH = "daqctl-match"
EXT_EGRESS = "daqctl-egress"
EXT_RATE = "daqctl-rate"

# Map keys ('-' and '_' are interchangeable in maps).
SHAPING_KEYS = ("ring_size", "max_burst", "poll_interval", "rate",
                "frame_overhead", "numa_id")
DEFAULT_KEYS = ("egress",) + SHAPING_KEYS
DCM_KEYS = ("name", "ring", "ip", "tuples", "ofport") + DEFAULT_KEYS
SWITCH_KEYS = ("name", "db", "of", "bridge", "defaults", "dcms")
TOP_KEYS = ("db", "of", "bridge", "defaults", "dcms", "switches")
CSV_COLUMNS = ("name", "ring", "ip", "tuples", "egress", "ring_size",
               "max_burst", "poll_interval", "rate", "numa_id", "ofport",
               "frame_overhead")

NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
RESERVED_PORT_NAMES = {"ALL", "ANY", "CONTROLLER", "FLOOD", "IN_PORT",
                       "LOCAL", "NONE", "NORMAL", "TABLE", "UNSET"}


# ===================================================================== errors
class DaqctlError(Exception):
    """A failure; 'status' is the exit status."""

    def __init__(self, msg: str, status: int = EXIT_FAILED) -> None:
        super().__init__(msg)
        self.status = status


@dataclass
class Problem:
    where: str            # "map.yaml:12" or "add-dcm" or "switch br0"
    reason: str

    def __str__(self) -> str:
        return "%s: %s" % (self.where, self.reason)


class MapError(DaqctlError):
    """Bad input, refused before anything changed."""

    def __init__(self, problems: List[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems), EXIT_BAD_INPUT)
        self.problems = problems


# ====================================================================== model
@dataclass(frozen=True)
class FourTuple:
    """Packets of one connection towards a DCM.  Only 'dst' is required;
    a missing source address or port is a wildcard."""
    proto: str                      # "tcp" or "udp"
    src: Optional[str]
    sport: Optional[int]
    dst: str
    dport: Optional[int]

    def canonical(self) -> str:
        def part(ip: Optional[str], port: Optional[int]) -> str:
            return "%s:%s" % (ip or "*", "*" if port is None else port)
        return "%s:%s->%s" % (self.proto, part(self.src, self.sport),
                              part(self.dst, self.dport))

    def match(self) -> List[str]:
        m = [self.proto]
        if self.src:
            m.append("nw_src=%s" % self.src)
        m.append("nw_dst=%s" % self.dst)
        if self.sport is not None:
            m.append("tp_src=%d" % self.sport)
        if self.dport is not None:
            m.append("tp_dst=%d" % self.dport)
        return m

    def overlaps(self, other: "FourTuple") -> bool:
        def same(a: Any, b: Any) -> bool:
            return a is None or b is None or a == b
        return (self.proto == other.proto and self.dst == other.dst
                and same(self.src, other.src)
                and same(self.sport, other.sport)
                and same(self.dport, other.dport))


@dataclass
class Dcm:
    """One DCM: its daqring and its steering."""
    name: str
    ring: str
    egress: str
    ip: Optional[str] = None
    tuples: Tuple[FourTuple, ...] = ()
    ring_size: int = RING_SIZE_DEFAULT
    max_burst: int = MAX_BURST_DEFAULT
    poll_interval: int = 0
    max_rate: int = 0                     # byte shaping, bit/s ('rate')
    frame_overhead: Optional[int] = None  # bytes per frame for max_rate
    numa_id: Optional[int] = None
    ofport: Optional[int] = None          # ofport_request of the ring
    rate: Optional[str] = None            # as requested, for reports
    where: str = ""                       # file:line, for messages

    def match_text(self) -> str:
        if self.ip:
            return "ip:%s" % self.ip
        return " ".join(t.canonical() for t in self.tuples)

    def options(self) -> Dict[str, str]:
        opts = {"ring-size": str(self.ring_size),
                "max-burst": str(self.max_burst),
                "poll-interval": str(self.poll_interval)}
        if self.max_rate:
            opts["max-rate"] = str(self.max_rate)
        if self.frame_overhead is not None:
            opts["frame-overhead"] = str(self.frame_overhead)
        if self.numa_id is not None:
            opts["numa-id"] = str(self.numa_id)
        return opts

    def external_ids(self) -> Dict[str, str]:
        ids = {EXT_DCM: self.name, EXT_MATCH: self.match_text(),
               EXT_EGRESS: self.egress}
        if self.rate:
            ids[EXT_RATE] = self.rate
        return ids

    def key(self) -> Tuple[Any, ...]:
        """What must be equal for the switch to need no change."""
        return (self.name, self.ring, self.egress, self.match_text(),
                self.options(), self.ofport, self.rate)

    def cookie(self) -> int:
        return dcm_cookie(self.name)

    def shaping_text(self) -> str:
        if self.max_rate:
            return "max-rate %s (burst %d)" % (format_rate(self.max_rate),
                                               self.max_burst)
        return shaping_text(self.max_burst, self.poll_interval)

    def match_summary(self) -> str:
        if self.ip:
            return self.ip
        if len(self.tuples) == 1:
            return self.tuples[0].canonical()
        return "%d tuples to %s" % (
            len(self.tuples), ",".join(sorted({t.dst for t in self.tuples})))


@dataclass
class SwitchSpec:
    """One switch (one bridge) and the DCMs it must have."""
    name: str
    db: str
    of: Optional[str]
    bridge: str
    dcms: List[Dcm] = field(default_factory=list)
    where: str = ""
    rate_notes: List[str] = field(default_factory=list)

    def label(self) -> str:
        return "%s (%s)" % (self.bridge if self.name == self.bridge
                            else "%s/%s" % (self.name, self.bridge), self.db)


def dcm_cookie(name: str) -> int:
    """Each DCM's flows carry a cookie of its own: 0xdac7 in the top 16
    bits, a 48-bit hash of the DCM's name below."""
    h = hashlib.sha256(name.encode()).digest()
    return COOKIE_PREFIX | int.from_bytes(h[:6], "big")


def shaping_text(max_burst: int, poll_interval: int) -> str:
    if poll_interval == 0:
        return "unshaped (burst %d)" % max_burst
    return "%d/%dus = %s" % (max_burst, poll_interval,
                             format_rate(max_burst * FRAME_BITS * 1e6
                                         / poll_interval))


def format_rate(bps: float) -> str:
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return "%.2f %s" % (bps / scale, unit)
    return "%.0f bit/s" % bps


# ===================================================================== rates
_RATE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*"
                      r"([kmgt]?)(bit|bit/s|b/s|bps)?\s*$", re.IGNORECASE)
_RATE_SCALE = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def parse_rate(text: str) -> float:
    """Parses '190mbit', '0.78gbit', '500k', '12e6'... into bits/s."""
    s = str(text).strip()
    m = _RATE_RE.match(s)
    if not m:
        try:
            value = float(s)
        except ValueError:
            raise ValueError("bad rate %r (write e.g. 190mbit, 0.78gbit, "
                             "500kbit)" % s)
        scale = 1.0
    else:
        value = float(m.group(1))
        prefix, unit = m.group(2).lower(), (m.group(3) or "").lower()
        if unit == "bps" and prefix:
            raise ValueError(
                "ambiguous rate unit in %r (tc reads '%sbps' as bytes per "
                "second); write %sbit" % (s, prefix, prefix))
        scale = _RATE_SCALE[prefix]
    bps = value * scale
    if not bps > 0:
        raise ValueError("rate %r must be positive" % s)
    return bps


def shaping_for_rate(bps: float, max_burst: Optional[int],
                     tolerance: float) -> Tuple[int, int, float]:
    """The (max-burst, poll-interval) whose rate for 1518-byte frames,
    max_burst x 1518 x 8 / poll-interval, is closest to 'bps'.  With
    'max_burst' None, 32 is used if it is within 'tolerance' (a fraction),
    otherwise the best burst from 1 to 32.  Returns (burst, interval,
    relative error); raises ValueError if no setting is within tolerance."""
    def best_for(b: int) -> Tuple[int, float]:
        t = int(round(b * FRAME_BITS * 1e6 / bps))
        t = min(max(t, 1), POLL_INTERVAL_MAX)
        return t, (b * FRAME_BITS * 1e6 / t - bps) / bps

    candidates = ([max_burst] if max_burst is not None
                  else [MAX_BURST_DEFAULT])
    b = candidates[0]
    t, err = best_for(b)
    if abs(err) > tolerance and max_burst is None:
        b, t, err = min(((bb,) + best_for(bb)
                         for bb in range(MAX_BURST_MAX, 0, -1)),
                        key=lambda x: abs(x[2]))
    if abs(err) > tolerance:
        top = MAX_BURST_MAX * FRAME_BITS * 1e6
        low = MAX_BURST_MIN * FRAME_BITS * 1e6 / POLL_INTERVAL_MAX
        if bps > top:
            why = "above the maximum %s (burst 32 every 1 us)" % (
                format_rate(top))
        elif bps < low:
            why = "below the minimum %s (1 packet every %d us)" % (
                format_rate(low), POLL_INTERVAL_MAX)
        else:
            why = ("not achievable within %g%% with max-burst %s and an "
                   "integer poll-interval; nearest is %d/%dus = %s"
                   % (tolerance * 100,
                      max_burst if max_burst is not None else "<= 32",
                      b, t, format_rate(b * FRAME_BITS * 1e6 / t)))
        raise ValueError("rate %s is %s" % (format_rate(bps), why))
    return b, t, err


# ================================================================ map parsing
class _LineLoader(yaml.SafeLoader):
    """A safe YAML loader whose mappings know their lines."""


class LineDict(dict):  # type: ignore[type-arg]
    """A YAML mapping that remembers its line and the line of each key."""
    line: int = 0
    key_lines: Dict[str, int]


def _construct_mapping(loader: Any, node: Any) -> LineDict:
    loader.flatten_mapping(node)
    m = LineDict()
    m.line = node.start_mark.line + 1
    m.key_lines = {}
    for knode, vnode in node.value:
        key = loader.construct_object(knode, deep=True)
        if not isinstance(key, str):
            key = str(key)
        norm = key.replace("-", "_")
        if norm in m:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                "duplicate key %r" % key, knode.start_mark)
        m[norm] = loader.construct_object(vnode, deep=True)
        m.key_lines[norm] = knode.start_mark.line + 1
    return m


_LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


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
        first = next((ln.strip() for ln in text.splitlines()
                      if ln.strip() and not ln.lstrip().startswith("#")), "")
        if self.path.lower().endswith(".csv") or (
                self.path == "-" and re.match(r"^[a-z_-]+(,[a-z_-]*)+$",
                                              first.lower())):
            specs = self._read_csv(text)
        else:
            specs = self._read_yaml(text)
        for spec in specs:
            self.problems += validate_dcms(spec.dcms, spec.where)
        if self.problems:
            raise MapError(self.problems)
        return specs

    # --------------------------------------------------------------- yaml
    def _read_yaml(self, text: str) -> List[SwitchSpec]:
        try:
            doc = yaml.load(text, Loader=_LineLoader)
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
            self.bad(d.line, "give either 'rate' or 'poll_interval', not "
                     "both")
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
            values = {k: v for k, (v, _) in defaults.items()}
            lines = {k: line for k, (_, line) in defaults.items()}
            if "rate" in item or "poll_interval" in item:
                for k in ("rate", "poll_interval"):
                    values.pop(k, None)
            for k, v in item.items():
                values[k] = v
                lines[k] = item.key_lines[k]
            if "rate" in item and "poll_interval" in item:
                self.bad(item.line, "give either 'rate' or 'poll_interval', "
                         "not both")
                continue
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
                    values[h] = c.replace(";", " ").split()
                else:
                    values[h] = c
            dcm = build_dcm(values, {k: line for k in values}, line,
                            self.at, self.problems, self.tolerance,
                            spec.rate_notes)
            if dcm:
                spec.dcms.append(dcm)
        return [spec]


def default_db() -> str:
    rundir = os.environ.get("OVS_RUNDIR") or ovs.dirs.RUNDIR
    return "unix:%s/db.sock" % rundir


# ============================================================ DCM validation
def _int_value(v: Any, what: str, lo: int, hi: int) -> int:
    if isinstance(v, bool):
        raise ValueError("%s must be an integer, not %r" % (what, v))
    if isinstance(v, int):
        n = v
    elif isinstance(v, str) and re.match(r"^\s*[0-9]+\s*$", v):
        n = int(v)
    else:
        raise ValueError("%s must be an integer, not %r" % (what, v))
    if not lo <= n <= hi:
        raise ValueError("%s %d out of range %d..%d" % (what, n, lo, hi))
    return n


def _ipv4(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise ValueError("%s must be an IPv4 address, not %r" % (what, v))
    try:
        a = ipaddress.ip_address(v.strip())
    except ValueError:
        raise ValueError("%s %r is not an IP address" % (what, v))
    if a.version != 4:
        raise ValueError("%s %s: only IPv4 is supported" % (what, v))
    if a.is_multicast or a.is_unspecified or str(a) == "255.255.255.255":
        raise ValueError("%s %s is not a unicast host address" % (what, v))
    return str(a)


def _port_name(v: Any, what: str) -> str:
    if not isinstance(v, str) or not NAME_RE.match(v) or v.isdigit():
        raise ValueError("%s %r is not a valid port name (letters, digits, "
                         "'_', '.', '-'; not all digits; at most 64)"
                         % (what, v))
    if v.upper() in RESERVED_PORT_NAMES:
        raise ValueError("%s %r is a reserved OpenFlow port name"
                         % (what, v))
    return v


_TUPLE_RE = re.compile(r"^(?:(tcp|udp):)?([^:>\s]+):([^:>\s]+)\s*->\s*"
                       r"([^:>\s]+):([^:>\s]+)$", re.IGNORECASE)


def parse_tuple(v: Any) -> FourTuple:
    """'[tcp:|udp:]SRC:SPORT->DST:DPORT' ('*' is a wildcard, DST is
    required) or a mapping {proto, src, sport, dst, dport}."""
    def port(p: Any, what: str) -> Optional[int]:
        if p is None or p == "*":
            return None
        return _int_value(p, what, 1, 65535)

    def ip(a: Any, what: str) -> Optional[str]:
        if a is None or a == "*":
            return None
        return _ipv4(a, what)

    if isinstance(v, dict):
        extra = set(v) - {"proto", "src", "sport", "dst", "dport"}
        if extra:
            raise ValueError("unknown tuple key(s) %s (known: proto, src, "
                             "sport, dst, dport)" % ", ".join(sorted(extra)))
        proto, src, sport, dst, dport = (v.get("proto", "tcp"), v.get("src"),
                                         v.get("sport"), v.get("dst"),
                                         v.get("dport"))
    elif isinstance(v, str):
        m = _TUPLE_RE.match(v.strip())
        if not m:
            raise ValueError("bad tuple %r (write [tcp:|udp:]SRC:SPORT->"
                             "DST:DPORT, '*' for any)" % v)
        proto, src, sport, dst, dport = (m.group(1) or "tcp", m.group(2),
                                         m.group(3), m.group(4), m.group(5))
    else:
        raise ValueError("bad tuple %r" % (v,))
    if not isinstance(proto, str) or proto.lower() not in ("tcp", "udp"):
        raise ValueError("tuple proto %r: tcp or udp" % (proto,))
    if dst is None or dst == "*":
        raise ValueError("a tuple needs its destination address")
    return FourTuple(proto.lower(), ip(src, "tuple source"),
                     port(sport, "tuple source port"),
                     str(_ipv4(dst, "tuple destination")),
                     port(dport, "tuple destination port"))


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
        name = _port_name(name, "DCM name")
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

    ring = get("ring", _port_name, "ring") or name
    egress = values.get("egress")
    if egress is None:
        bad(None, label + "no 'egress' port")
    else:
        egress = get("egress", _port_name, "egress")
    ip = get("ip", _ipv4, "ip")
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
    ring_size = get("ring_size", _int_value, "ring-size", RING_SIZE_MIN,
                    RING_SIZE_MAX)
    max_burst = get("max_burst", _int_value, "max-burst", MAX_BURST_MIN,
                    MAX_BURST_MAX)
    poll = get("poll_interval", _int_value, "poll-interval", 0,
               POLL_INTERVAL_MAX)
    numa = get("numa_id", _int_value, "numa-id", 0, 1023)
    ofport = get("ofport", _int_value, "ofport", 1, OFPORT_MAX)
    overhead = get("frame_overhead", _int_value, "frame-overhead", 0,
                   FRAME_OVERHEAD_MAX)
    rate_text: Optional[str] = None
    max_rate = 0
    if "rate" in values and "poll_interval" in values:
        bad("rate", label + "give either 'rate' or 'poll-interval', not both")
    elif "rate" in values:
        # The daqring shapes by bytes at exactly this rate (max-rate),
        # counting frame-overhead bytes per frame.
        rate_text = str(values["rate"]).strip()
        try:
            max_rate = int(round(parse_rate(rate_text)))
            if not MAX_RATE_MIN <= max_rate <= MAX_RATE_MAX:
                raise ValueError("rate %s is out of range %s..%s"
                                 % (rate_text, format_rate(MAX_RATE_MIN),
                                    format_rate(MAX_RATE_MAX)))
        except ValueError as e:
            bad("rate", label + str(e))
        else:
            poll = 0
            rate_notes.append(
                "rate %s -> max-rate %d bit/s, frames counted with %d bytes "
                "of overhead" % (rate_text, max_rate,
                                 FRAME_OVERHEAD_DEFAULT if overhead is None
                                 else overhead))
    if len(problems) > before or not isinstance(egress, str):
        return None
    return Dcm(name=name, ring=ring, egress=egress, ip=ip,
               tuples=tuple(tuples),
               ring_size=RING_SIZE_DEFAULT if ring_size is None else ring_size,
               max_burst=MAX_BURST_DEFAULT if max_burst is None else max_burst,
               poll_interval=0 if poll is None else poll, numa_id=numa,
               max_rate=max_rate, frame_overhead=overhead,
               ofport=ofport, rate=rate_text, where=at(line))


def validate_dcms(dcms: List[Dcm], where: str) -> List[Problem]:
    """Checks among the DCMs of one switch: unique names, ring names,
    addresses, tuples, ofports; rings are not egress ports; matches do not
    overlap; cookies do not collide."""
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


# ===================================================================== OVSDB
COLUMNS = {
    "Open_vSwitch": ["bridges", "next_cfg", "cur_cfg", "iface_types"],
    "Bridge": ["name", "ports", "datapath_type"],
    "Port": ["name", "interfaces", "external_ids"],
    "Interface": ["name", "type", "options", "external_ids", "ofport",
                  "ofport_request", "error", "status", "statistics"],
}


def _opt(v: Any) -> Any:
    """The value of an optional column ([] or [x]) or of a plain one."""
    if isinstance(v, list):
        return v[0] if v else None
    return v


@dataclass
class Ring:
    """A daqring port found on the bridge."""
    port: Any
    iface: Any
    dcm: Optional[Dcm]            # None: not managed by ovs-daqctl


class Ovsdb:
    """A connection to one switch's database through the OVS Python IDL."""

    def __init__(self, remote: str, timeout: float) -> None:
        self.remote = remote
        self.timeout = timeout
        self.attempts = 0
        helper = ovs.db.idl.SchemaHelper(schema_json=self._schema())
        for table, cols in COLUMNS.items():
            helper.register_columns(table, cols)
        self.idl = ovs.db.idl.Idl(remote, helper)
        self._run_until(lambda: (self.idl.state
                                 == self.idl.IDL_S_MONITORING
                                 and self.idl.change_seqno > 0),
                        "connect to %s" % remote)
        if not self.idl.tables["Open_vSwitch"].rows:
            raise DaqctlError("%s: the database has no Open_vSwitch record "
                              "(run 'ovs-vsctl init')" % remote)

    def _request(self, method: str, params: List[Any], what: str) -> Any:
        """One JSON-RPC request on a connection of its own (not the IDL's):
        its answer is the database as it is now, whatever the IDL has
        received so far."""
        error, stream = ovs.stream.Stream.open_block(
            ovs.stream.Stream.open(self.remote), int(self.timeout * 1000))
        if error:
            raise DaqctlError("%s: cannot connect: %s"
                              % (self.remote, os.strerror(error)))
        rpc = ovs.jsonrpc.Connection(stream)
        try:
            req = ovs.jsonrpc.Message.create_request(method, params)
            error, reply = rpc.transact_block(req)
        finally:
            rpc.close()
        if error:
            raise DaqctlError("%s: cannot %s: %s"
                              % (self.remote, what, os.strerror(error)))
        if reply.error:
            raise DaqctlError("%s: cannot %s: %s"
                              % (self.remote, what, reply.error))
        return reply.result

    def _schema(self) -> Any:
        """The server's own schema, so that any OVS version works."""
        return self._request("get_schema", ["Open_vSwitch"],
                             "read the schema")

    def next_cfg(self) -> int:
        """next_cfg as it is in the database now.  Every ovs-daqctl (and
        ovs-vsctl) transaction increments it."""
        result = self._request("transact", [
            "Open_vSwitch", {"op": "select", "table": "Open_vSwitch",
                             "where": [], "columns": ["next_cfg"]}],
            "read next_cfg")
        try:
            return int(result[0]["rows"][0]["next_cfg"])
        except (LookupError, TypeError, ValueError):
            raise DaqctlError("%s: cannot read next_cfg: %s"
                              % (self.remote, result))

    def catch_up(self) -> int:
        """Waits until the IDL's replica has every transaction committed
        so far (at least), so that what is read next is not older than
        what another client has already done.  Returns that next_cfg."""
        cfg = self.next_cfg()
        self._run_until(lambda: self.root().next_cfg >= cfg,
                        "receive the database's changes")
        return cfg

    def _run_until(self, done: Any, what: str,
                   timeout: Optional[float] = None) -> None:
        deadline = time.monotonic() + (timeout if timeout is not None
                                       else self.timeout)
        while True:
            self.idl.run()
            if done():
                return
            if time.monotonic() > deadline:
                raise DaqctlError("%s: timed out (%g s) waiting to %s"
                                  % (self.remote, timeout or self.timeout,
                                     what))
            poller = ovs.poller.Poller()
            self.idl.wait(poller)
            poller.timer_wait(100)
            poller.block()

    def close(self) -> None:
        self.idl.close()

    # --------------------------------------------------------------- read
    def root(self) -> Any:
        return next(iter(self.idl.tables["Open_vSwitch"].rows.values()))

    def bridge(self, name: str) -> Any:
        for br in self.idl.tables["Bridge"].rows.values():
            if br.name == name:
                return br
        raise DaqctlError("%s: no bridge %s" % (self.remote, name),
                          EXIT_BAD_INPUT)

    def iface_types(self) -> Set[str]:
        return set(self.root().iface_types)

    def all_iface_names(self) -> Set[str]:
        return {i.name for i in self.idl.tables["Interface"].rows.values()}

    def ports(self, br: Any) -> Dict[str, Any]:
        return {p.name: p for p in br.ports}

    def rings(self, br: Any) -> List[Ring]:
        """The daqrings of bridge 'br', managed or not."""
        out = []
        for p in br.ports:
            ifaces = list(p.interfaces)
            if len(ifaces) != 1:
                continue
            iface = ifaces[0]
            managed = EXT_DCM in p.external_ids
            if iface.type != "daqring" and not managed:
                continue
            out.append(Ring(p, iface, dcm_from_row(p, iface)
                            if managed else None))
        return sorted(out, key=lambda r: str(r.port.name))

    # -------------------------------------------------------------- write
    def transact(self, build: Callable[[Any], None], comment: str) -> int:
        """Runs build(txn) in one transaction that also increments
        next_cfg.  build() decides from the IDL's replica and verify()s
        what its decision rests on: if another client changed that
        meanwhile, the server refuses the transaction (TRY_AGAIN) and it is
        built again from the new contents, as often as needed within the
        timeout (the loop that ovs/db/idl.py's Transaction documents).
        Returns the new next_cfg.  On failure nothing was changed: OVSDB
        transactions are atomic."""
        deadline = time.monotonic() + self.timeout
        self.attempts = 0
        while True:
            self.attempts += 1
            # Before building: a change that arrives from now on (even one
            # that idl.run() receives while committing) ends the wait
            # after a TRY_AGAIN.
            seqno = self.idl.change_seqno
            txn = ovs.db.idl.Transaction(self.idl)
            txn.add_comment(comment)
            try:
                build(txn)
                self.root().increment("next_cfg")
            except BaseException:
                txn.abort()
                raise
            while True:
                status = txn.commit()
                if status != ovs.db.idl.Transaction.INCOMPLETE:
                    break
                if time.monotonic() > deadline:
                    txn.abort()
                    raise DaqctlError("%s: the transaction timed out; it "
                                      "may or may not have been committed"
                                      % self.remote)
                self.idl.run()
                poller = ovs.poller.Poller()
                self.idl.wait(poller)
                txn.wait(poller)
                poller.timer_wait(100)
                poller.block()
            if status == ovs.db.idl.Transaction.SUCCESS:
                return int(txn.get_increment_new_value())
            if status == ovs.db.idl.Transaction.UNCHANGED:
                # Another client made the same change meanwhile.
                return int(self.root().next_cfg)
            if status != ovs.db.idl.Transaction.TRY_AGAIN:
                raise DaqctlError("%s: transaction failed (%s); nothing "
                                  "changed" % (self.remote, txn.get_error()))
            left = deadline - time.monotonic()
            if left <= 0:
                raise DaqctlError("%s: the database kept changing for %g s "
                                  "(%d attempts); nothing changed"
                                  % (self.remote, self.timeout,
                                     self.attempts))
            # Usually the change that made the transaction fail has
            # already arrived: then there is nothing to wait for.
            self._run_until(lambda: self.idl.change_seqno != seqno,
                            "receive the database's changes", timeout=left)

    def wait_applied(self, cfg: int) -> None:
        try:
            self._run_until(lambda: self.root().cur_cfg >= cfg,
                            "ovs-vswitchd to apply the change")
        except DaqctlError as e:
            raise DaqctlError("%s.  The transaction is committed; "
                              "ovs-vswitchd (is it running?) has not "
                              "applied it yet, so the flows were not "
                              "changed: run the command again later, or "
                              "raise --timeout" % e)


def dcm_from_row(port: Any, iface: Any) -> Dcm:
    """A managed DCM as recorded on the switch (the inverse of
    Dcm.external_ids() and Dcm.options())."""
    ext = port.external_ids
    opts = iface.options
    ip: Optional[str] = None
    tuples: List[FourTuple] = []
    match = ext.get(EXT_MATCH, "")
    if match.startswith("ip:"):
        ip = match[3:]
    else:
        for t in match.split():
            try:
                tuples.append(parse_tuple(t))
            except ValueError:
                pass

    def num(key: str, default: int) -> int:
        try:
            return int(opts.get(key, default))
        except ValueError:
            return default

    numa = opts.get("numa-id")
    overhead = opts.get("frame-overhead")
    return Dcm(name=ext[EXT_DCM], ring=port.name,
               egress=ext.get(EXT_EGRESS, ""), ip=ip, tuples=tuple(tuples),
               ring_size=num("ring-size", RING_SIZE_DEFAULT),
               max_burst=num("max-burst", MAX_BURST_DEFAULT),
               poll_interval=num("poll-interval", 0),
               max_rate=num("max-rate", 0),
               frame_overhead=(int(overhead) if overhead and overhead.isdigit()
                               else None),
               numa_id=int(numa) if numa and numa.isdigit() else None,
               ofport=_opt(iface.ofport_request),
               rate=ext.get(EXT_RATE), where="switch")


# =================================================================== OpenFlow
# A flow as compared: (priority, match fields, actions).
Flow = Tuple[int, FrozenSet[str], str]


class OpenFlow:
    """OpenFlow access through ovs-ofctl: a dump restricted to our cookies
    and one bundle per change."""

    def __init__(self, target: str, ofctl: str, timeout: float,
                 ssl: List[str]) -> None:
        self.target = target
        self.ofctl = ofctl
        self.timeout = timeout
        self.ssl = ssl
        # Whether a change was sent (even one that failed: a bundle whose
        # connection was lost may or may not have been committed).
        self.written = False

    def run(self, args: List[str], stdin: Optional[str] = None) -> str:
        cmd = ([self.ofctl, "--timeout=%d" % max(1, int(self.timeout))]
               + self.ssl + args)
        try:
            p = subprocess.run(cmd, input=stdin, capture_output=True,
                               text=True, timeout=self.timeout + 10)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise DaqctlError("%s: %s" % (self.ofctl, e))
        if p.returncode != 0:
            verb = next((a for a in args if not a.startswith("-")
                         and not a.startswith("OpenFlow")), "")
            raise DaqctlError("%s %s failed: %s"
                              % (os.path.basename(self.ofctl), verb,
                                 p.stderr.strip() or p.returncode))
        return p.stdout

    def dump(self, names: bool = False) -> str:
        return self.run(["--names" if names else "--no-names", "--no-stats",
                         "dump-flows", self.target,
                         "cookie=%#x/%#x" % (COOKIE_PREFIX, COOKIE_MASK)])

    def installed(self) -> Dict[int, Set[Flow]]:
        """Our flows on the switch, by cookie."""
        out: Dict[int, Set[Flow]] = {}
        for line in self.dump().splitlines():
            line = line.strip()
            if not line.startswith("cookie="):
                continue
            head, sep, actions = line.partition(" actions=")
            if not sep:
                continue
            tokens = [t for t in head.replace(" ", "").split(",") if t]
            cookie = int(tokens[0].split("=", 1)[1], 16)
            prio = 32768
            match = set()
            for t in tokens[1:]:
                if t.startswith("priority="):
                    prio = int(t.split("=", 1)[1])
                elif t not in ("table=0",):
                    match.add(t)
            out.setdefault(cookie, set()).add(
                (prio, frozenset(match), actions.strip()))
        return out

    def bundle(self, lines: List[str]) -> None:
        self.written = True
        self.run(["--bundle", "add-flows", self.target, "-"],
                 "\n".join(lines) + "\n")

    # OpenFlow 1.1 and later have no OFPPC_NO_FLOOD: ovs-ofctl would
    # silently drop "no-flood" from an OpenFlow 1.3 port-mod.
    def no_flood(self) -> Dict[str, bool]:
        """Each port's name and whether it is no-flood."""
        out: Dict[str, bool] = {}
        port = None
        for line in self.run(["-O", "OpenFlow10", "show",
                              self.target]).splitlines():
            m = re.match(r"^ (\S+?)\((.*)\): addr:", line)
            if m:
                port = m.group(2)
                out[port] = False
            elif port is not None and line.strip().startswith("config:"):
                out[port] = "NO_FLOOD" in line.split()[1:]
        return out

    def set_no_flood(self, port: str, on: bool) -> None:
        self.written = True
        self.run(["-O", "OpenFlow10", "mod-port", self.target, port,
                  "no-flood" if on else "flood"])

    def set_no_flood_all(self, ports: List[str]) -> None:
        """Sets 'ports' no-flood, one port-mod (one ovs-ofctl) each, eight
        at a time: there is no port-mod in a bundle file."""
        self.written = True
        errors: List[str] = []
        todo = list(ports)
        running: List[Tuple[str, "subprocess.Popen[str]"]] = []
        deadline = time.monotonic() + self.timeout + 10
        while todo or running:
            while todo and len(running) < 8:
                port = todo.pop(0)
                cmd = ([self.ofctl, "--timeout=%d" % max(1, int(self.timeout)),
                        "-O", "OpenFlow10"] + self.ssl
                       + ["mod-port", self.target, port, "no-flood"])
                try:
                    running.append((port, subprocess.Popen(
                        cmd, stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, text=True)))
                except OSError as e:
                    raise DaqctlError("%s: %s" % (self.ofctl, e))
            port, p = running.pop(0)
            try:
                _, err = p.communicate(
                    timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                err, p.returncode = "timed out", -1
            if p.returncode != 0:
                errors.append("%s: %s" % (port, err.strip() or p.returncode))
        if errors:
            raise DaqctlError("%s mod-port no-flood failed: %s"
                              % (os.path.basename(self.ofctl),
                                 "; ".join(errors[:3])))


FlowSpec = Tuple[int, List[str], str]


def dcm_flows(d: Dcm, ring: str, egress: str) -> List[FlowSpec]:
    """The steering flows of one DCM: (priority, match, actions), with
    'ring' and 'egress' as OpenFlow port numbers or names."""
    flows: List[FlowSpec] = []
    if d.ip:
        flows.append((PRIO_TO_RING, ["ip", "nw_dst=%s" % d.ip],
                      "output:%s" % ring))
    for t in d.tuples:
        flows.append((PRIO_TO_RING, t.match(), "output:%s" % ring))
    flows.append((PRIO_FROM_RING, ["in_port=%s" % ring],
                  "output:%s" % egress))
    return flows


def flow_text(cookie: int, flow: FlowSpec) -> str:
    prio, match, actions = flow
    return "cookie=%#x,priority=%d,%s,actions=%s" % (cookie, prio,
                                                     ",".join(match), actions)


def ofport_text(n: int) -> str:
    return "LOCAL" if n == OFPP_LOCAL else str(n)


def of_target(args: argparse.Namespace, spec: SwitchSpec) -> str:
    """ovs-ofctl's target: --of / the map's 'of', else the bridge's
    management socket next to a local database socket, else the bridge
    name (which ovs-ofctl resolves in its OVS_RUNDIR)."""
    if spec.of:
        return spec.of
    if spec.db.startswith("unix:"):
        mgmt = os.path.join(os.path.dirname(spec.db[5:]),
                            spec.bridge + ".mgmt")
        if os.path.exists(mgmt):
            return "unix:" + mgmt
        return spec.bridge
    raise DaqctlError("switch %s: the database %s is remote; give its "
                      "OpenFlow target with --of (or 'of:' in the map), "
                      "e.g. tcp:IP:6653" % (spec.name, spec.db),
                      EXIT_BAD_INPUT)


# ================================================================ reconciler
@dataclass
class RingState:
    """What a daqring was before a change: what a rollback restores."""
    port_ids: Dict[str, str]
    iface_name: str
    iface_type: str
    options: Dict[str, str]
    ofport_request: List[int]
    managed: bool

    @staticmethod
    def of(r: Ring) -> "RingState":
        return RingState(dict(r.port.external_ids), r.iface.name,
                         r.iface.type, dict(r.iface.options),
                         list(r.iface.ofport_request), r.dcm is not None)


@dataclass
class Plan:
    create: List[Dcm] = field(default_factory=list)
    update: List[Tuple[Ring, Dcm]] = field(default_factory=list)
    delete: List[Ring] = field(default_factory=list)
    adopt: List[str] = field(default_factory=list)
    # status:config_error of the updated rings before the change.
    old_errors: Dict[str, Optional[str]] = field(default_factory=dict)
    # Each ring the plan touches, as it was (None: the plan creates it).
    before: Dict[str, Optional[RingState]] = field(default_factory=dict)

    def empty(self) -> bool:
        return not (self.create or self.update or self.delete)

    def summary(self) -> Dict[str, List[str]]:
        return {"create": [d.name for d in self.create],
                "update": [d.name for r, d in self.update
                           if r.dcm is not None],
                "adopt": [d.name for r, d in self.update if r.dcm is None],
                "remove": [r.dcm.name if r.dcm else str(r.port.name)
                           for r in self.delete]}


class Reconciler:
    """Brings one switch to a list of DCMs."""

    def __init__(self, spec: SwitchSpec, args: argparse.Namespace,
                 out: Any) -> None:
        self.spec = spec
        self.args = args
        self.out = out
        self.json = getattr(args, "format", "table") == "json"
        # What happened, for -f json.
        self.result: Dict[str, Any] = {
            "switch": spec.name, "db": spec.db, "bridge": spec.bridge,
            "dry_run": False, "changed": False, "messages": []}
        self.db = Ovsdb(spec.db, args.timeout)
        self.of = OpenFlow(of_target(args, spec), args.ofctl, args.timeout,
                           ssl_args(args))
        self.t_commit = 0.0
        self.t_bundle = 0.0

    def close(self) -> None:
        self.db.close()

    def say(self, msg: str) -> None:
        self.result["messages"].append(msg)
        if not self.json:
            self.out.write(msg + "\n")
            self.out.flush()

    def current(self) -> List[Dcm]:
        br = self.db.bridge(self.spec.bridge)
        return [r.dcm for r in self.db.rings(br) if r.dcm is not None]

    # --------------------------------------------------------------- plan
    def plan(self, dcms: List[Dcm]) -> Plan:
        """What to change, from the IDL's current replica.  Rings are
        matched by port name: a daqring of the wanted name is updated (or
        adopted, if no ovs-daqctl made it), a missing one is created, and
        a managed one that no DCM wants is removed.  Raises MapError for
        what the switch refuses (unknown egress ports, names or ofports
        taken by other ports)."""
        if "daqring" not in self.db.iface_types():
            raise DaqctlError("switch %s: ovs-vswitchd does not support "
                              "type=daqring (is it the ovs-daqring build, "
                              "with other_config:dpdk-init=true?)"
                              % self.spec.name)
        br = self.db.bridge(self.spec.bridge)
        ports = self.db.ports(br)
        rings = {r.port.name: r for r in self.db.rings(br)}
        all_names = self.db.all_iface_names()
        wanted = {d.ring for d in dcms}
        plan = Plan()
        for r in rings.values():
            if r.dcm is not None and r.port.name not in wanted:
                plan.delete.append(r)
        going = {r.port.name for r in plan.delete}
        ofports: Dict[int, str] = {}
        for p in ports.values():
            for i in p.interfaces:
                for o in (_opt(i.ofport), _opt(i.ofport_request)):
                    if o is not None and o > 0 and p.name not in going:
                        ofports.setdefault(o, p.name)
        problems: List[Problem] = []

        def bad(d: Dcm, reason: str) -> None:
            problems.append(Problem(d.where or self.spec.where,
                                    "DCM %s: %s" % (d.name, reason)))

        for d in dcms:
            eg = ports.get(d.egress)
            if eg is None or d.egress in going:
                bad(d, "egress port %s is not on bridge %s (it has: %s)"
                    % (d.egress, self.spec.bridge,
                       ", ".join(sorted(n for n in ports
                                        if n not in rings)) or "no ports"))
            elif len(eg.interfaces) != 1:
                bad(d, "egress %s is a bond; give one of its interfaces"
                    % d.egress)
            if d.ofport is not None and ofports.get(d.ofport) not in (
                    None, d.ring):
                bad(d, "ofport %d is taken by %s" % (d.ofport,
                                                     ofports[d.ofport]))
            found = rings.get(d.ring)
            if found is None:
                if d.ring in all_names:
                    bad(d, "a port or interface named %s exists and is not "
                        "a daqring of bridge %s" % (d.ring,
                                                    self.spec.bridge))
                else:
                    plan.create.append(d)
            elif found.dcm is None:
                plan.update.append((found, d))
                plan.adopt.append(d.ring)
            elif found.dcm.key() != d.key():
                plan.update.append((found, d))
        if problems:
            raise MapError(problems)
        for r, d in plan.update:
            plan.old_errors[d.ring] = r.iface.status.get("config_error")
            plan.before[d.ring] = RingState.of(r)
        for r in plan.delete:
            plan.before[r.port.name] = RingState.of(r)
        for d in plan.create:
            plan.before[d.ring] = None
        return plan

    # -------------------------------------------------------------- ovsdb
    def commit(self, want: Callable[[List[Dcm]], List[Dcm]],
               comment: str) -> Tuple[Plan, float]:
        """One transaction for the whole plan: the DCMs are want(the DCMs
        on the switch), planned again if the database changed meanwhile,
        so that another ovs-daqctl's change made meanwhile is kept.  Waits
        until ovs-vswitchd has applied it.  Returns the plan and the
        duration."""
        t0 = time.monotonic()
        plans: List[Plan] = []

        def build(txn: Any) -> None:
            plan = self.plan(want(self.current()))
            plans.append(plan)
            br = self.db.bridge(self.spec.bridge)
            # What the plan rests on: which ports the bridge has (the
            # managed rings, the names taken) and each ring it changes or
            # removes.  If another client changed any of it meanwhile, the
            # server refuses the transaction and it is planned again.
            br.verify("ports")
            for r in [r for r, _ in plan.update] + plan.delete:
                for col in ("external_ids", "interfaces"):
                    r.port.verify(col)
                for col in ("type", "options", "ofport_request"):
                    r.iface.verify(col)
            for r in plan.delete:
                br.delvalue("ports", r.port)
                r.port.delete()
                r.iface.delete()
            for r, d in plan.update:
                opts = {k: v for k, v in r.iface.options.items()
                        if k not in ("ring-size", "max-burst",
                                     "poll-interval", "max-rate",
                                     "frame-overhead", "numa-id")}
                opts.update(d.options())
                if opts != dict(r.iface.options):
                    r.iface.options = opts
                if r.iface.type != "daqring":
                    r.iface.type = "daqring"
                ext = {k: v for k, v in r.port.external_ids.items()
                       if not k.startswith("daqctl-")}
                ext.update(d.external_ids())
                if ext != dict(r.port.external_ids):
                    r.port.external_ids = ext
                req = [d.ofport] if d.ofport is not None else []
                if list(r.iface.ofport_request) != req:
                    r.iface.ofport_request = req
            for d in plan.create:
                iface = txn.insert(self.db.idl.tables["Interface"])
                iface.name = d.ring
                iface.type = "daqring"
                iface.options = d.options()
                if d.ofport is not None:
                    iface.ofport_request = [d.ofport]
                port = txn.insert(self.db.idl.tables["Port"])
                port.name = d.ring
                port.interfaces = [iface]
                port.external_ids = d.external_ids()
                br.addvalue("ports", port)

        cfg = self.db.transact(build, comment)
        self.t_commit = time.monotonic() - t0
        self.db.wait_applied(cfg)
        return plans[-1], time.monotonic() - t0

    def restore(self, plan: Plan, comment: str,
                flood_before: Dict[str, bool]) -> None:
        """Undoes 'plan' (already committed): the rings it created are
        removed, those it changed or adopted get back their options, marks
        and ofport_request (and an adopted ring its flooding), those it
        removed are created again (empty).  Other rings, also those that
        another ovs-daqctl changed meanwhile, are left alone.  Then the
        flows follow the restored DCMs, if they were changed."""
        def build(txn: Any) -> None:
            br = self.db.bridge(self.spec.bridge)
            br.verify("ports")
            ports = self.db.ports(br)
            for name, st in sorted(plan.before.items()):
                port = ports.get(name)
                ifaces = list(port.interfaces) if port is not None else []
                if st is None:
                    if port is not None and EXT_DCM in port.external_ids:
                        port.verify("external_ids")
                        br.delvalue("ports", port)
                        port.delete()
                        for i in ifaces:
                            i.delete()
                elif port is None:
                    iface = txn.insert(self.db.idl.tables["Interface"])
                    iface.name = st.iface_name
                    iface.type = st.iface_type
                    iface.options = st.options
                    iface.ofport_request = st.ofport_request
                    port = txn.insert(self.db.idl.tables["Port"])
                    port.name = name
                    port.interfaces = [iface]
                    port.external_ids = st.port_ids
                    br.addvalue("ports", port)
                elif len(ifaces) == 1:
                    iface = ifaces[0]
                    port.verify("external_ids")
                    for col in ("type", "options", "ofport_request"):
                        iface.verify(col)
                    if dict(port.external_ids) != st.port_ids:
                        port.external_ids = st.port_ids
                    if iface.type != st.iface_type:
                        iface.type = st.iface_type
                    if dict(iface.options) != st.options:
                        iface.options = st.options
                    if list(iface.ofport_request) != st.ofport_request:
                        iface.ofport_request = st.ofport_request

        if plan.empty():
            return
        cfg = self.db.transact(build, comment + " (rollback)")
        self.db.wait_applied(cfg)
        if self.of.written:
            # The flows of the restored DCMs.  (If nothing was sent, the
            # flows are still those of before.)
            self.sync()
        # An adopted ring is a hand-made one again: as it was.
        if any(not flood_before.get(n, True) for n in plan.adopt):
            now = self.of.no_flood()
            for n in plan.adopt:
                if flood_before.get(n) is False and now.get(n):
                    self.of.set_no_flood(n, False)

    def failures(self, plan: Plan) -> List[str]:
        """Rings that ovs-vswitchd refused (error column, no ofport, or a
        config_error in status after a resize)."""
        br = self.db.bridge(self.spec.bridge)
        by_name = {r.port.name: r for r in self.db.rings(br)}
        errs = []
        changed = [d for d in plan.create] + [d for _, d in plan.update]
        for d in changed:
            r = by_name.get(d.ring)
            if r is None:
                errs.append("%s: ring %s vanished" % (d.name, d.ring))
                continue
            err = _opt(r.iface.error)
            of = _opt(r.iface.ofport)
            if err:
                errs.append(err if err.startswith(d.ring + ":")
                            else "%s: %s" % (d.ring, err))
            elif of is None or of <= 0:
                errs.append("%s: ring %s got no OpenFlow port" % (d.name,
                                                                  d.ring))
        if errs:
            return errs
        # A ring in use keeps its old ring when a resize fails, and says
        # so in status:config_error (refreshed about once a second).
        resized = [d for r, d in plan.update
                   if r.dcm is None or (r.dcm.ring_size, r.dcm.numa_id)
                   != (d.ring_size, d.numa_id)]
        if not resized:
            return []

        def verdict(d: Dcm) -> Optional[bool]:
            """True: in place; False: refused; None: not known yet."""
            st = by_name[d.ring].iface.status
            err = st.get("config_error")
            if err and err != plan.old_errors.get(d.ring):
                return False
            if (not err and st.get("ring_size") == str(d.ring_size)
                    and (d.numa_id is None
                         or st.get("numa_id") == str(d.numa_id))):
                return True
            return None

        deadline = time.monotonic() + 3
        while (any(verdict(d) is None for d in resized)
               and time.monotonic() < deadline):
            time.sleep(0.1)
            self.db._run_until(lambda: True, "refresh")
            by_name = {r.port.name: r for r in self.db.rings(br)}
        for d in resized:
            v = verdict(d)
            err = by_name[d.ring].iface.status.get("config_error")
            if v is False or (v is None and err):
                errs.append(err if err.startswith(d.ring + ":")
                            else "%s: %s" % (d.ring, err))
        return errs

    # -------------------------------------------------------------- flows
    def floodable(self, rings: Sequence[str]) -> List[str]:
        """Those of 'rings' that are on the switch and floodable."""
        config = self.of.no_flood()
        return sorted(n for n in rings if config.get(n) is False)

    def sync(self) -> Tuple[int, int, int, List[str]]:
        """Makes the OpenFlow side follow the DCMs recorded in OVSDB (not a
        list in memory: another ovs-daqctl may have added a DCM meanwhile):
        each DCM's daqring no-flood (a flooded copy would come out of the
        ring a second time), then the flows, in one bundle.  The flows are
        read before the database is, so that the flows of a DCM that
        another ovs-daqctl has just added are not taken for stale ones;
        and if the database changed while this ran, it runs again, so that
        the last of several concurrent ovs-daqctl leaves the flows of all
        their DCMs.  Returns (DCMs whose flows changed, flows deleted,
        flows added, rings set no-flood)."""
        n = n_del = n_add = 0
        fixed: List[str] = []
        for _ in range(10):
            installed = self.of.installed()
            cfg = self.db.catch_up()
            dcms = self.current()
            flood = self.floodable([d.ring for d in dcms])
            if flood:
                self.of.set_no_flood_all(flood)
            fixed += [r for r in flood if r not in fixed]
            lines, counts = self.flow_changes(dcms, False, installed)
            if lines:
                t0 = time.monotonic()
                self.of.bundle(lines)
                self.t_bundle += time.monotonic() - t0
                n, n_del, n_add = (n + counts[0], n_del + counts[1],
                                   n_add + counts[2])
            if not (lines or flood) or self.db.next_cfg() == cfg:
                break
        return n, n_del, n_add, fixed

    def flow_changes(self, dcms: List[Dcm], dry_run: bool,
                     installed: Optional[Dict[int, Set[Flow]]] = None
                     ) -> Tuple[List[str], Tuple[int, int, int]]:
        """The bundle that gives 'dcms' their flows: for each DCM whose
        flows differ, "delete cookie=C/-1" and its adds; for each of our
        cookies that no DCM has, its delete.  With 'dry_run', rings not
        created yet count as adds."""
        br = self.db.bridge(self.spec.bridge)
        ofports: Dict[str, int] = {}
        for p in br.ports:
            for i in p.interfaces:
                o = _opt(i.ofport)
                if o is not None and o > 0:
                    ofports[p.name] = o
        if installed is None:
            installed = self.of.installed()
        lines: List[str] = []
        n_changed = n_del = n_add = 0
        wanted: Set[int] = set()
        for d in dcms:
            if d.ring not in ofports or d.egress not in ofports:
                if dry_run:
                    n_changed += 1
                    n_add += len(dcm_flows(d, d.ring, d.egress))
                continue
            c = d.cookie()
            wanted.add(c)
            flows = dcm_flows(d, ofport_text(ofports[d.ring]),
                              ofport_text(ofports[d.egress]))
            want = {(p, frozenset(m), a) for p, m, a in flows}
            have = installed.get(c, set())
            if want == have:
                continue
            n_changed += 1
            if have:
                lines.append("delete cookie=%#x/-1" % c)
                n_del += len(have)
            for f in flows:
                lines.append("add " + flow_text(c, f))
                n_add += 1
        for c, have in sorted(installed.items()):
            if c not in wanted:
                lines.append("delete cookie=%#x/-1" % c)
                n_del += len(have)
                n_changed += 1
        return lines, (n_changed, n_del, n_add)

    # -------------------------------------------------------------- apply
    def apply(self, want: Callable[[List[Dcm]], List[Dcm]], comment: str,
              dry_run: bool, verbose: bool) -> bool:
        """Makes the switch's DCMs want(its current DCMs).  Returns True if
        something changed (would change, with 'dry_run')."""
        dcms = want(self.current())
        plan = self.plan(dcms)
        label = self.spec.label()
        res = self.result
        res["dry_run"] = dry_run
        res["notes"] = _grouped(self.spec.rate_notes)
        for note in res["notes"]:
            self.say("%s: %s" % (self.spec.name, note))
        if dry_run:
            self._report_plan(plan, verbose, "would ")
            _, (n, n_del, n_add) = self.flow_changes(dcms, True)
            flood = self.floodable([d.ring for d in dcms])
            res.update(plan.summary())
            res.update(no_flood=flood, flows={"dcms": n, "deleted": n_del,
                                              "added": n_add})
            if flood:
                self.say("%s: would set no-flood on %d daqrings%s"
                         % (label, len(flood), _names(flood, verbose)))
            if n:
                self.say("%s: would change the flows of %d DCMs (%d "
                         "deleted, %d added)" % (label, n, n_del, n_add))
            res["changed"] = not plan.empty() or bool(n) or bool(flood)
            if not res["changed"]:
                self.say("%s: no changes" % label)
            return res["changed"]
        flood_before: Dict[str, bool] = {}
        if plan.adopt:
            # What a rollback gives back to a hand-made daqring.
            flood_before = self.of.no_flood()
        if not plan.empty():
            plan, t_db = self.commit(want, comment)
            res.update(plan.summary())
            res.update(t_commit=round(self.t_commit, 6),
                       t_applied=round(t_db, 6))
            res["changed"] = not plan.empty()
            errs = self.failures(plan)
            if errs:
                res["refused"] = errs
                self._rollback(plan, comment, flood_before,
                               "switch %s refused the change"
                               % self.spec.name,
                               "switch %s refused the change, rolled back"
                               % self.spec.name, errs)
            self._report_plan(plan, verbose, "")
            self.say("%s: one OVSDB transaction: %d created, %d updated, %d "
                     "removed (committed in %.3f s, applied by ovs-vswitchd "
                     "in %.3f s)" % (label, len(plan.create),
                                     len(plan.update), len(plan.delete),
                                     self.t_commit, t_db))
        try:
            n, n_del, n_add, flood = self.sync()
        except DaqctlError as e:
            if not plan.empty():
                self._rollback(plan, comment, flood_before, str(e),
                               "%s; daqrings rolled back" % e, [])
            raise
        res.update(no_flood=flood, flows={"dcms": n, "deleted": n_del,
                                          "added": n_add})
        if flood:
            self.say("%s: set no-flood on %d daqrings%s"
                     % (label, len(flood), _names(flood, verbose)))
        if n:
            self.say("%s: one OpenFlow bundle: flows of %d DCMs changed "
                     "(%d deleted, %d added) in %.3f s"
                     % (label, n, n_del, n_add, self.t_bundle))
        res["changed"] = res["changed"] or bool(n) or bool(flood)
        if not res["changed"]:
            self.say("%s: no changes" % label)
        return res["changed"]

    def _rollback(self, plan: Plan, comment: str,
                  flood_before: Dict[str, bool], failed: str,
                  rolled_back: str, details: List[str]) -> None:
        """Restores what 'plan' changed and raises: EXIT_FAILED if the
        switch is as it was, EXIT_ROLLBACK_FAILED if it is not."""
        more = "".join("\n  " + d for d in details)
        try:
            self.restore(plan, comment, flood_before)
        except DaqctlError as e:
            self.result["rollback"] = "failed"
            raise DaqctlError(
                "%s%s\nROLLBACK FAILED: %s\nswitch %s is in neither its "
                "old nor its new state: look at 'ovs-daqctl show' and "
                "'ovs-daqctl flows', then run the command again (or apply "
                "the previous map)" % (failed, ":" + more if more else "",
                                       e, self.spec.name),
                EXIT_ROLLBACK_FAILED)
        self.result["rollback"] = "done"
        raise DaqctlError(rolled_back + (":" + more if more else ""))

    def _report_plan(self, plan: Plan, verbose: bool, prefix: str) -> None:
        lines = []
        for d in plan.create:
            lines.append("%screate %s: ring %s of %d, %s, %s -> %s"
                         % (prefix, d.name, d.ring, d.ring_size,
                            d.shaping_text(), d.match_summary(), d.egress))
        for r, d in plan.update:
            what = ("adopt" if r.dcm is None else "update")
            lines.append("%s%s %s: %s" % (prefix, what, d.name,
                                          describe_update(r.dcm, d)))
        for r in plan.delete:
            lines.append("%sremove %s (ring %s)" % (
                prefix, r.dcm.name if r.dcm else "?", r.port.name))
        if verbose or len(lines) <= 20:
            for ln in lines:
                self.say("%s: %s" % (self.spec.name, ln))
        elif lines:
            self.say("%s: %s%d changes (-v lists them)"
                     % (self.spec.name, prefix, len(lines)))


def describe_update(old: Optional[Dcm], new: Dcm) -> str:
    if old is None:
        return "existing daqring %s, %s" % (new.ring, new.shaping_text())
    diffs = []
    for attr, label in (("ring_size", "ring-size"), ("max_burst",
                                                     "max-burst"),
                        ("poll_interval", "poll-interval"),
                        ("max_rate", "max-rate"),
                        ("frame_overhead", "frame-overhead"),
                        ("numa_id", "numa-id"), ("egress", "egress"),
                        ("ofport", "ofport"), ("rate", "rate"),
                        ("ring", "ring")):
        a, b = getattr(old, attr), getattr(new, attr)
        if a != b:
            diffs.append("%s %s -> %s" % (label, a, b))
    if old.match_text() != new.match_text():
        diffs.append("match %s -> %s" % (old.match_summary(),
                                         new.match_summary()))
    return ", ".join(diffs) or "marks"


def _names(names: List[str], verbose: bool) -> str:
    """': a, b, c' (at most 20 names unless 'verbose')."""
    if len(names) > 20 and not verbose:
        return " (-v lists them)"
    return ": " + ", ".join(names)


def _grouped(notes: List[str]) -> List[str]:
    counts: Dict[str, int] = {}
    for n in notes:
        counts[n] = counts.get(n, 0) + 1
    return [n if c == 1 else "%s (%d DCMs)" % (n, c)
            for n, c in counts.items()]


# ================================================================== commands
def ssl_args(args: argparse.Namespace) -> List[str]:
    out = []
    for opt in ("private_key", "certificate", "ca_cert"):
        v = getattr(args, opt, None)
        if v:
            out.append("--%s=%s" % (opt.replace("_", "-"), v))
    return out


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


def _one_switch(args: argparse.Namespace) -> Reconciler:
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
              "frame_overhead", "numa_id", "ofport"):
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


def show_rows(db: Ovsdb, bridge: str) -> List[Dict[str, Any]]:
    br = db.bridge(bridge)
    ports = {p.name: p for p in br.ports}
    rows = []
    for r in db.rings(br):
        st = r.iface.status
        stats = r.iface.statistics
        d = r.dcm
        egress = d.egress if d else ""
        row: Dict[str, Any] = {
            "dcm": d.name if d else None,
            "ring": r.port.name,
            "ofport": _opt(r.iface.ofport),
            "match": d.match_summary() if d else "",
            "egress": egress,
            "egress_ok": egress in ports if d else None,
            "ring_size": _int_or_none(st.get("ring_size")),
            "occupancy": stats.get("occupancy"),
            "high_watermark": stats.get("high_watermark"),
            "tx_dropped": stats.get("tx_dropped"),
            "ring_full_drops": stats.get("ring_full_drops"),
            "max_burst": _int_or_none(st.get("max_burst")),
            "poll_interval": _int_or_none(st.get("poll_interval")),
            "max_rate": _int_or_none(st.get("max_rate")),
            "shaping_rate": st.get("shaping_rate"),
            "rate": d.rate if d else None,
            "config_error": st.get("config_error"),
            "error": _opt(r.iface.error),
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
    if args.format == "json":
        json.dump(result if len(result) > 1 or args.map else result[0],
                  sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
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
    head = ["DCM", "RING", "OFPORT", "MATCH", "EGRESS", "SIZE", "OCCUP",
            "HIGH-WM", "DROPS", "SHAPING"]
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
        elif r["poll_interval"] == 0:
            shaping = "unshaped, burst %s" % n(r["max_burst"])
        else:
            rate = (r["shaping_rate"] or "").split(" (")[0]
            shaping = "%s/%sus = %s" % (n(r["max_burst"]),
                                        n(r["poll_interval"]), rate)
            if r["rate"]:
                shaping += " (asked %s)" % r["rate"]
        drops = r["tx_dropped"]
        if r["ring_full_drops"] is not None and r["ring_full_drops"] != drops:
            drops = "%s (%s full)" % (n(drops), r["ring_full_drops"])
        egress = r["egress"] or "-"
        if r["egress_ok"] is False:
            egress += "(!)"
            notes.append("%s: egress %s is no longer on the bridge"
                         % (r["dcm"], r["egress"]))
        table.append([r["dcm"] or "(unmanaged)", r["ring"], n(r["ofport"]),
                      r["match"] or "-", egress, n(r["ring_size"]),
                      n(r["occupancy"]), n(r["high_watermark"]), n(drops),
                      shaping])
        for key in ("error", "config_error", "mempool_warning"):
            if r[key]:
                notes.append("%s: %s: %s" % (r["ring"], key, r[key]))
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    right = {2, 5, 6, 7, 8}
    for row in table:
        cells = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(row, widths))]
        out.write("  ".join(cells).rstrip() + "\n")
    for note in notes:
        out.write("  ! %s\n" % note)


def parse_flow(line: str, names: Dict[int, str]) -> Dict[str, Any]:
    """One line of ovs-ofctl dump-flows (--no-stats) as a dictionary."""
    head, _, actions = line.strip().partition(" actions=")
    tokens = [t for t in head.replace(" ", "").split(",") if t]
    c = int(tokens[0].split("=", 1)[1], 16)
    prio = 32768
    match = []
    for t in tokens[1:]:
        if t.startswith("priority="):
            prio = int(t.split("=", 1)[1])
        elif t != "table=0":
            match.append(t)
    return {"cookie": "%#x" % c, "dcm": names.get(c), "priority": prio,
            "match": ",".join(match), "actions": actions.strip()}


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
        lines = [ln.strip() for ln in of.dump(names=True).splitlines()
                 if ln.strip().startswith("cookie=")]
        # One DCM's flows together.
        lines.sort(key=lambda ln: ln.split(",", 1)[0])
        for ln in lines:
            if out is None:
                sys.stdout.write(ln + "\n")
            sw["flows"].append(parse_flow(ln, names))
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    specs = read_map(args, args.map)
    status = EXIT_OK
    for spec in specs:
        sw: Dict[str, Any] = {"switch": spec.name, "db": spec.db,
                              "bridge": spec.bridge,
                              "dcms": len(spec.dcms),
                              "notes": _grouped(spec.rate_notes)}
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
            _int_value(args.max_burst, "max-burst", 1, 32)
        b, t, err = shaping_for_rate(bps, args.max_burst,
                                     args.rate_tolerance / 100.0)
    except ValueError as e:
        raise DaqctlError(str(e), EXIT_BAD_INPUT)
    args.report.update(max_burst=b, poll_interval=t,
                       rate_bps=b * FRAME_BITS * 1e6 / t, error=err)
    args.say("max-burst=%d poll-interval=%d  # %s (%+.3f%%)"
             % (b, t, format_rate(b * FRAME_BITS * 1e6 / t), err * 100))
    return EXIT_OK


# ===================================================================== main
def find_ofctl() -> str:
    env = os.environ.get("OVS_OFCTL")
    if env:
        return env
    here = os.path.join(os.path.dirname(os.path.realpath(__file__)),
                        "ovs-ofctl")
    if os.access(here, os.X_OK):
        return here
    return shutil.which("ovs-ofctl") or "/usr/bin/ovs-ofctl"


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
    arg("--private-key", "-p", metavar="FILE",
        help="SSL private key (ssl: remotes)")
    arg("--certificate", "-c", metavar="FILE",
        help="SSL certificate")
    arg("--ca-cert", "-C", metavar="FILE",
        help="SSL CA certificate")
    arg("--verbose", "-v", action="store_true",
        help="list every change")
    arg("--format", "-f", choices=("table", "json"), default="table",
        help="output: text (table) or one JSON object on standard output, "
        "also for errors (json)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
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
    d.add_argument("--numa-id", metavar="N", help="NUMA node of the ring")
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
    return p


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "explicit"):
        args.explicit = set()
    if not getattr(args, "command", None):
        parser.print_usage(sys.stderr)
        sys.stderr.write("%s: a command is required (see --help)\n" % PROG)
        return EXIT_BAD_INPUT
    if args.command == "flows" and args.expected and not args.map:
        parser.error("flows --expected needs --map MAP")
    if args.private_key:
        ovs.stream.Stream.ssl_set_private_key_file(args.private_key)
    if args.certificate:
        ovs.stream.Stream.ssl_set_certificate_file(args.certificate)
    if args.ca_cert:
        ovs.stream.Stream.ssl_set_ca_cert_file(args.ca_cert)
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

    try:
        status = int(args.func(args))
        if args.command == "show":       # its own JSON
            return status
        return emit(status)
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
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # "ovs-daqctl show | head": not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
