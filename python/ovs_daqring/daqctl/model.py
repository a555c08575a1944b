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

"""The DCM model: limits, exit statuses, errors, DCMs and their
shaping, rates."""

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple


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
# options:max-burst-bytes: at least two frames of 1518 bytes with the
# frame overhead (3084 with the default), at most 16 MiB (vswitch.xml).
MAX_BURST_BYTES_MAX = 16 * 1024 * 1024
FULL_FRAME = 1518


def min_burst_bytes(overhead: Optional[int]) -> int:
    """The smallest max-burst-bytes the switch accepts with OVERHEAD."""
    return 2 * (FULL_FRAME + (FRAME_OVERHEAD_DEFAULT if overhead is None
                              else overhead))


# Flow fairness (options:flow-buckets): 0 = a strict FIFO.  On by default:
# it keeps a ROS's first segment, which acknowledges the DCM's request, and
# its other segments from waiting behind a whole event (see daqring.rst).
FLOW_BUCKETS_MAX, FLOW_BUCKETS_DEFAULT = 65536, 65536
FRAME_BITS = 1518 * 8              # bits of a full-size Ethernet frame
# Linux's minimum TCP retransmission timeout (TCP_RTO_MIN).
TCP_RTO_MIN_S = 0.2
OFPORT_MAX = 0xfeff
# The most daqrings that may share one egress port's egress-max-rate
# (DAQRING_SHARE_MAX_RINGS in lib/daqring-shaper.h): ovs-vswitchd refuses
# one more.
EGRESS_SHARE_MAX_RINGS = 64

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
# The destination MAC its flows into the ring set (Dcm.dl_dst).
EXT_DL_DST = "daqctl-dl-dst"

# Map keys ('-' and '_' are interchangeable in maps).
SHAPING_KEYS = ("ring_size", "max_burst", "poll_interval", "rate",
                "frame_overhead", "numa_id", "flow_buckets",
                "max_burst_bytes", "egress_max_rate",
                "egress_max_burst_bytes")
DEFAULT_KEYS = ("egress", "steering") + SHAPING_KEYS
DCM_KEYS = ("name", "ring", "ip", "tuples", "ofport") + DEFAULT_KEYS
SWITCH_KEYS = ("name", "db", "of", "bridge", "defaults", "dcms")
TOP_KEYS = ("db", "of", "bridge", "defaults", "dcms", "switches")
CSV_COLUMNS = ("name", "ring", "ip", "tuples", "egress", "ring_size",
               "max_burst", "poll_interval", "rate", "numa_id", "ofport",
               "frame_overhead", "steering", "flow_buckets",
               "max_burst_bytes", "egress_max_rate", "egress_max_burst_bytes")
# The Interface options ovs-daqctl owns on its daqrings (Dcm.options()):
# those a ring's DCM no longer sets are removed from it.
RING_OPTIONS = ("ring-size", "max-burst", "poll-interval", "max-rate",
                "frame-overhead", "max-burst-bytes", "numa-id",
                "flow-buckets", "egress", "egress-max-rate",
                "egress-max-burst-bytes")

# Steering modes: "two-rule" (a rule into the ring and one from the ring to
# the egress port) or "bound" (options:egress: the switch sends what the
# ring delivers straight to the egress port; one rule per DCM).
STEERING_MODES = ("two-rule", "bound")
STEERING_DEFAULT = "two-rule"

# A name (of a DCM, a ring, a port, a switch): \Z, not $, which would
# let a newline at the end through (into a flow's text, a line of its
# own).
NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\Z")
RESERVED_PORT_NAMES = {"ALL", "ANY", "CONTROLLER", "FLOOD", "IN_PORT",
                       "LOCAL", "NONE", "NORMAL", "TABLE", "UNSET"}


# Where a change of one switch is ("state" in its result), and what that
# means if ovs-daqctl is interrupted there.
STATES = {
    "unchanged": "nothing was changed",
    "committing": "the OVSDB transaction was sent; it may or may not have "
    "been committed; the flows were not changed",
    "committed": "the daqrings are committed in OVSDB (next_cfg %(next_cfg)s) "
    "but ovs-vswitchd had not applied them yet, and the flows were not "
    "changed: new DCMs get no packets, removed DCMs' flows point at no port",
    "applied": "the daqrings are committed in OVSDB (next_cfg %(next_cfg)s) "
    "and applied by ovs-vswitchd, but the flows were not changed: new DCMs "
    "get no packets, removed DCMs' flows point at no port",
    "flows": "the daqrings are in place; the flows were being changed (one "
    "OpenFlow bundle: either all old or all new) and the daqrings set "
    "no-flood",
    "rolling back": "a failed change was being rolled back: the switch is in "
    "neither its old nor its new state",
    "rolled back": "the change failed and was rolled back",
    "rollback failed": "the change failed and so did its rollback",
    "done": "the change is complete",
}


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


def auto_flow_buckets(ring_size: int, rate_bps: float,
                      frame_bits: int = FRAME_BITS) -> int:
    """Flow fairness for a daqring of `ring_size` packets drained at
    `rate_bps` (0 or infinite: unshaped, at a rate nobody knows): buckets
    (FLOW_BUCKETS_DEFAULT) where a full ring of `frame_bits` frames takes
    at least half of TCP's minimum retransmission timeout to drain, a
    strict FIFO (0) where it takes less.

    Flow fairness exists for the first case: behind a backlog that takes
    longer than the timeout to drain, a FIFO delays the segment that
    acknowledges the DCM's request, and the last segments of a ROS,
    until their senders' timers fire.  Where no backlog can last that
    long it buys nothing, and it costs: interleaved one segment per flow,
    an event reaches the DCM on every connection at once, so the DCM reads
    it a segment at a time and the ROS get their acknowledgements a
    segment at a time, one send per ROS port instead of one per burst.
    In daq-incast at 120 x 16 KiB and 1 Gbit/s (a full ring of 4096
    frames drains in 50 ms) that took 1-5% of the link."""
    if rate_bps <= 0 or rate_bps == float("inf"):
        return FLOW_BUCKETS_DEFAULT
    return (FLOW_BUCKETS_DEFAULT
            if ring_drain_s(ring_size, rate_bps, frame_bits)
            >= TCP_RTO_MIN_S / 2 else 0)


def ring_drain_s(ring_size: int, rate_bps: float,
                 frame_bits: int = FRAME_BITS) -> float:
    """Seconds a full daqring of `ring_size` frames of `frame_bits` takes
    to drain at `rate_bps` (> 0)."""
    return ring_size * frame_bits / rate_bps


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
    max_burst_bytes: int = 0              # byte shaping burst bound, 0 = none
    # The rate of the egress port that the daqrings bound to it share
    # (work-conserving), bit/s, 0 = none; and that share's burst bound.
    egress_max_rate: int = 0
    egress_max_burst_bytes: int = 0
    numa_id: Optional[int] = None
    flow_buckets: int = FLOW_BUCKETS_DEFAULT  # 0 = strict FIFO
    ofport: Optional[int] = None          # ofport_request of the ring
    rate: Optional[str] = None            # as requested, for reports
    steering: str = STEERING_DEFAULT      # "two-rule" or "bound"
    # The destination MAC that its flows into the ring set (the fabric's
    # last hop: the DCM's host, which does no ARP), None = left as sent.
    dl_dst: Optional[str] = None
    where: str = ""                       # file:line, for messages

    def match_text(self) -> str:
        if self.ip:
            return "ip:%s" % self.ip
        return " ".join(t.canonical() for t in self.tuples)

    def options(self) -> Dict[str, str]:
        opts = {"ring-size": str(self.ring_size),
                "max-burst": str(self.max_burst),
                "poll-interval": str(self.poll_interval),
                "flow-buckets": str(self.flow_buckets)}
        if self.max_rate:
            opts["max-rate"] = str(self.max_rate)
        if self.frame_overhead is not None:
            opts["frame-overhead"] = str(self.frame_overhead)
        if self.max_burst_bytes:
            opts["max-burst-bytes"] = str(self.max_burst_bytes)
        if self.numa_id is not None:
            opts["numa-id"] = str(self.numa_id)
        if self.steering == "bound":
            opts["egress"] = self.egress
        if self.egress_max_rate:
            opts["egress-max-rate"] = str(self.egress_max_rate)
        if self.egress_max_burst_bytes:
            opts["egress-max-burst-bytes"] = str(self.egress_max_burst_bytes)
        return opts

    def external_ids(self) -> Dict[str, str]:
        ids = {EXT_DCM: self.name, EXT_MATCH: self.match_text(),
               EXT_EGRESS: self.egress}
        if self.rate:
            ids[EXT_RATE] = self.rate
        if self.dl_dst:
            ids[EXT_DL_DST] = self.dl_dst
        return ids

    def key(self) -> Tuple[Any, ...]:
        """What must be equal for the switch to need no change."""
        return (self.name, self.ring, self.egress, self.match_text(),
                self.options(), self.ofport, self.rate, self.dl_dst)

    def cookie(self) -> int:
        return dcm_cookie(self.name)

    def shaping_text(self) -> str:
        if self.max_rate:
            text = "max-rate %s (burst %d%s)" % (
                format_rate(self.max_rate), self.max_burst,
                ", %d bytes" % self.max_burst_bytes
                if self.max_burst_bytes else "")
        elif self.egress_max_rate:
            text = "burst %d" % self.max_burst
        else:
            return shaping_text(self.max_burst, self.poll_interval)
        if self.egress_max_rate:
            text += ", egress %s shared at %s%s" % (
                self.egress, format_rate(self.egress_max_rate),
                " (burst %d bytes)" % self.egress_max_burst_bytes
                if self.egress_max_burst_bytes else "")
        return text

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


def grouped_notes(notes: List[str]) -> List[str]:
    """Each note once, with the number of DCMs it is about if several."""
    counts: Dict[str, int] = {}
    for n in notes:
        counts[n] = counts.get(n, 0) + 1
    return [n if c == 1 else "%s (%d DCMs)" % (n, c)
            for n, c in counts.items()]


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
