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

"""A switch's daqrings as Prometheus metric families.

At each scrape the exporter reads every daqring's Interface row from the
switch's OVSDB (what "ovs-daqctl show -f json" reads too): its
"statistics" column, which ovs-vswitchd refreshes every
other_config:stats-update-interval (5 s by default) from the provider's
counters (lib/netdev-daqring.c, netdev_daqring_get_stats() and
netdev_daqring_get_custom_stats()), and its "status" column
(netdev_daqring_get_status(): the configuration in force).  Nothing is
asked of the PMDs: a scrape costs the switch no datapath cycle.

Names follow Prometheus's conventions: the "daqring_" prefix, base units
in the name (bytes, seconds; packets where a count of packets is the
unit), "_total" on counters, and labels bounded by the configuration
(bridge, ring, egress, dcm, and the fixed set of drop reasons)."""

import re
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    Metric)

# The drop reasons of daqring_dropped_packets_total: reason -> how the
# provider counts them (a statistics key, or "refused": tx_dropped less
# the other reasons counted at enqueue).
DROP_REASONS = {
    "ring_full": "ring_full_drops",
    "loop": "loop_drops",
    "refused": None,
    "egress_down": "egress_drops",
}

RING = ("bridge", "ring")
EGRESS = ("bridge", "ring", "egress")


@dataclass(frozen=True)
class MetricDoc:
    """One exported metric: its name (without "_total" for a counter, as
    prometheus_client names a family), kind, labels, and meaning."""
    name: str
    kind: str                      # "counter" or "gauge"
    labels: Tuple[str, ...]
    help: str

    def exposed(self) -> str:
        """The name of its samples in the exposition."""
        return self.name + ("_total" if self.kind == "counter" else "")


def _m(name: str, kind: str, labels: Tuple[str, ...], text: str) -> MetricDoc:
    return MetricDoc(name, kind, labels, text)


# Every metric the exporter serves (Documentation/topics/monitoring.rst
# lists the same, a test checks it).
METRICS = [
    _m("daqring_enqueued_packets", "counter", RING,
       "Packets the datapath enqueued into the daqring (statistics "
       "tx_packets)."),
    _m("daqring_enqueued_bytes", "counter", RING,
       "Bytes the datapath enqueued into the daqring (statistics "
       "tx_bytes)."),
    _m("daqring_dequeued_packets", "counter", RING,
       "Packets the PMD took out of the daqring (statistics rx_packets)."),
    _m("daqring_dequeued_bytes", "counter", RING,
       "Bytes the PMD took out of the daqring (statistics rx_bytes)."),
    _m("daqring_dropped_packets", "counter", RING + ("reason",),
       "Packets the daqring dropped, by reason: ring_full (refused at "
       "enqueue, the ring was full: ring_full_drops), loop (refused, the "
       "packet had passed too many daqrings: loop_drops), refused "
       "(refused at enqueue, the port down or unconfigured: tx_dropped "
       "less the two before), egress_down (dequeued, but the datapath "
       "could not send it to the bound egress port: egress_drops)."),
    _m("daqring_occupancy_packets", "gauge", RING,
       "Packets in the daqring when ovs-vswitchd last refreshed the "
       "statistics (statistics occupancy)."),
    _m("daqring_high_watermark_packets", "gauge", RING,
       "Largest occupancy seen since the ring was created or "
       "netdev-daqring/reset-watermark (statistics high_watermark)."),
    _m("daqring_size_packets", "gauge", RING,
       "Capacity of the daqring in packets (status ring_size)."),
    _m("daqring_max_burst_packets", "gauge", RING,
       "Packets the daqring releases at most per poll (status "
       "max_burst)."),
    _m("daqring_poll_interval_seconds", "gauge", RING,
       "Packet shaping: the interval between the daqring's releases; 0: "
       "not shaped by packets (status poll_interval, in microseconds)."),
    _m("daqring_shaping_rate_bytes_per_second", "gauge", RING,
       "Byte shaping: the rate the daqring releases at, in bytes on the "
       "wire per second; only for a ring with options:max-rate (status "
       "max_rate, in bits per second, divided by 8)."),
    _m("daqring_shaping_rate_packets_per_second", "gauge", RING,
       "Packet shaping: max_burst packets every poll_interval; only for "
       "a ring shaped by packets (no max-rate, a poll-interval)."),
    _m("daqring_shaper_intervals", "counter", RING,
       "Packet shaping: intervals in which packets left the daqring "
       "(statistics shaper_intervals)."),
    _m("daqring_shaper_burst_excess_bytes", "gauge", RING,
       "Byte shaping: the largest burst beyond the rate seen, in bytes "
       "on the wire; reset by netdev-daqring/reset-watermark (statistics "
       "shaper_burst_bytes)."),
    _m("daqring_flow_buckets", "gauge", RING,
       "Flow-fair buckets of the daqring; 0: one FIFO (status "
       "flow_buckets)."),
    _m("daqring_egress_share_rate_bytes_per_second", "gauge", EGRESS,
       "The rate of the egress share (options:egress-max-rate) the "
       "daqring belongs to, in bytes per second; present only for the "
       "members of a share (status egress_max_rate / 8)."),
    _m("daqring_egress_share_burst_bytes", "gauge", EGRESS,
       "The burst bound of the daqring's egress share in force (status "
       "egress_max_burst_bytes)."),
    _m("daqring_egress_share_rings", "gauge", EGRESS,
       "Daqrings in the daqring's egress share (status "
       "egress_sharing_rings)."),
    _m("daqring_egress_share_waits", "counter", RING,
       "Polls at which the egress share held the daqring's packets back "
       "(statistics egress_share_waits)."),
    _m("daqring_egress_bound", "gauge", EGRESS,
       "For a daqring bound to its egress port (options:egress): 1 while "
       "it is bound, 0 while its packets are dropped (status "
       "egress_state)."),
    _m("daqring_info", "gauge", RING + ("dcm",),
       "1 for every daqring; dcm names the DCM that ovs-daqctl manages it "
       "for (empty: not managed)."),
    _m("daqring_config_error", "gauge", RING,
       "1 while the daqring's configuration is refused or the port is in "
       "error (status config_error, Interface error), else 0."),
    _m("daqring_mempool_short", "gauge", RING,
       "1 while the daqrings' total capacity exceeds the mbufs of OVS's "
       "DPDK mempools (status mempool_warning), else 0."),
    _m("daqring_rings", "gauge", ("bridge",),
       "Daqrings on the bridge."),
    _m("daqring_exporter_ovsdb_up", "gauge", (),
       "1 if the exporter read the switch's OVSDB at its replica's last "
       "change, 0 if it could not (then no daqring series is served)."),
    _m("daqring_exporter_invalid_values", "gauge", (),
       "Values of the replica's rows (and of the PMD threads' counters "
       "read at the scrape) that were not valid (not a count, out of "
       "range) and were left out."),
    _m("daqring_exporter_render_cpu_seconds", "gauge", (),
       "CPU time the exporter spent making the daqring series it serves "
       "(reading the replica's changed rows, making the families, writing "
       "their text), once for the replica's last change: the cost of each "
       "statistics update, not of a scrape."),
]
BY_NAME = {m.name: m for m in METRICS}

# What the metrics are made of: the statistics and status keys of a
# daqring's Interface row (lib/netdev-daqring.c) read here, and the status
# keys left out, with why (a test holds these to the provider's keys).
STATISTICS_READ = frozenset((
    "tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "tx_dropped",
    "ring_full_drops", "loop_drops", "egress_drops", "occupancy",
    "high_watermark", "shaper_intervals", "shaper_burst_bytes",
    "egress_share_waits"))
STATUS_READ = frozenset((
    "ring_size", "max_burst", "poll_interval", "max_rate", "flow_buckets",
    "egress", "egress_state", "egress_max_rate", "egress_max_burst_bytes",
    "egress_sharing_rings", "config_error", "mempool_warning"))
STATUS_NOT_EXPORTED = {
    "numa_id": "where the ring's memory is: not a level to watch",
    "frame_overhead": "configuration (options:frame-overhead) only",
    "max_burst_bytes": "configuration; shaping_burst_bytes is in force",
    "shaping_burst_bytes": "derived from max-rate and max-burst-bytes",
    "shaping_rate": "text: daqring_shaping_rate_* carry it as numbers",
    "shaping_tsc_hz": "the TSC frequency, the same for every ring",
}

COUNTER_MAX = 2 ** 64
_UNSIGNED = re.compile(r"^[0-9]{1,20}$")


@dataclass
class RingReading:
    """What one scrape read of one daqring's Interface row."""
    bridge: str
    ring: str
    dcm: Optional[str] = None
    statistics: Dict[str, Any] = field(default_factory=dict)
    status: Dict[str, Any] = field(default_factory=dict)
    # options:egress (the port the ring is bound to), or the DCM's egress.
    egress: Optional[str] = None
    error: Optional[str] = None
    # RingReader: the ring's earlier reading, if this one differs from
    # it only by its statistics (RingFamilies makes the rest's samples
    # again only when more changed).
    earlier: Optional["RingReading"] = None


def read_rings(db: Any) -> List[RingReading]:
    """Every daqring of every bridge of 'db' (a daqctl.ovsdb.Ovsdb), as
    its IDL replica has them now."""
    return RingReader().read(db)


def _raw(row: Any, column: str) -> Any:
    """The IDL's own Datum of ROW's COLUMN (ovs.db.idl.Row._data, in the
    IDLs of OVS 3.1 to 4.0), read without converting it; None without
    it."""
    data = getattr(row, "_data", None)
    if not isinstance(data, dict):
        return None
    try:
        # (A column the server sent no value of: its default, which
        # the IDL's ColumnDefaultDict makes.)
        return data[column]
    except KeyError:
        return None


def _map(datum: Any) -> Dict[Any, Any]:
    return {k.value: v.value for k, v in datum.values.items()}


class RingReader:
    """read_rings() that keeps its readings between scrapes: a ring whose
    Interface and Port rows the IDL has not changed since the last read
    is the same RingReading object, not read again (RingFamilies takes
    it as unchanged).  What changed, the IDL says row by row (its notify
    hook, chained before the Ovsdb's own): a scrape converts only the
    rings the switch changed since the last one, and those without the
    Python IDL's conversions of whole rows.  Called with the lock that
    the IDL is run under."""

    COLUMNS = ("statistics", "status", "options", "error", "type")
    # Changes of an Interface row that leave its reading as it is, or
    # change its statistics only.
    IGNORED = frozenset(("link_state", "ofport", "ofport_request"))
    STATS = IGNORED | {"statistics"}

    def __init__(self) -> None:
        self.cache: Dict[Any, Tuple[Any, str, RingReading]] = {}
        self.db: Any = None
        # Row UUID -> the columns the IDL changed since the last read
        # (None: the row is new, or gone).
        self.dirty: Dict[Any, Optional[Set[str]]] = {}

    def _attach(self, db: Any) -> None:
        """Watches DB's IDL (a new connection: every ring read again)."""
        self.db = db
        self.cache = {}
        self.dirty = {}
        chained = db.idl.notify

        def notify(event: Any, row: Any, updates: Any = None) -> None:
            # 'updates' holds the old values of the changed columns only
            # (Row._data, in the IDLs of OVS 3.1 to 4.0).
            cols = getattr(updates, "_data", None) \
                if event == "update" else None
            got = self.dirty.get(row.uuid, set())
            if got is not None:
                self.dirty[row.uuid] = (got | set(cols)
                                        if isinstance(cols, dict) else None)
            if chained is not None:
                chained(event, row, updates)
        db.idl.notify = notify

    def read(self, db: Any) -> List[RingReading]:
        if db is not self.db:
            self._attach(db)
        dirty, self.dirty = self.dirty, {}
        out = []
        cache: Dict[Any, Tuple[Any, str, RingReading]] = {}
        bridges = sorted(db.idl.tables["Bridge"].rows.values(),
                         key=lambda b: str(b.name))
        for br in bridges:
            bname = str(br.name)
            for r in db.rings(br):
                u = r.iface.uuid
                old = self.cache.get(u)
                same = (old is not None and old[0] is r and old[1] == bname
                        and r.port.uuid not in dirty)
                cols = dirty.get(u, set())
                if same and cols is not None and cols <= self.IGNORED:
                    out.append(old[2])
                    cache[u] = old
                    continue
                if (same and cols is not None and cols <= self.STATS
                        and _raw(r.iface, "statistics") is not None):
                    # (Most changes: the statistics alone.)
                    reading = replace(
                        old[2], statistics=_map(_raw(r.iface, "statistics")),
                        earlier=None)
                    reading.earlier = old[2]
                    out.append(reading)
                    cache[u] = (r, bname, reading)
                    continue
                reading = self._reading(
                    bname, r, tuple(_raw(r.iface, c) for c in self.COLUMNS))
                if reading is not None:
                    out.append(reading)
                    cache[u] = (r, bname, reading)
        self.cache = cache
        return out

    @staticmethod
    def _reading(bname: str, r: Any,
                 raws: Tuple[Any, ...]) -> Optional[RingReading]:
        stats, status, options, error, kind = raws
        if any(d is None for d in raws):
            # (An IDL without _data: its Row attributes.)
            if r.iface.type != "daqring":
                return None
            stats, status = dict(r.iface.statistics), dict(r.iface.status)
            options, err = dict(r.iface.options), r.iface.error
            err = err[0] if isinstance(err, list) and err else (err or None)
        else:
            if kind.as_scalar() != "daqring":
                return None
            stats, status, options = _map(stats), _map(status), \
                _map(options)
            err = next(iter(error.values)).value if error.values else None
        return RingReading(
            bridge=bname, ring=str(r.port.name),
            dcm=r.dcm.name if r.dcm else None, statistics=stats,
            status=status,
            egress=(options.get("egress")
                    or (r.dcm.egress if r.dcm else None)),
            error=err)


class _Samples:
    """One ring's samples: family name -> [(labels, value)]; 'invalid'
    counts the values left out."""

    def __init__(self) -> None:
        self.samples: Dict[str, List[Tuple[List[str], float]]] = {}
        self.invalid = 0

    def add(self, name: str, labels: List[str], value: float) -> None:
        self.samples.setdefault(name, []).append((labels, value))

    def count(self, v: Any, text: bool = False) -> Optional[int]:
        """A counter or gauge read from the row: a non-negative integer
        below 2^64 (a statistics value: an integer; with TEXT, a status
        value: a string of digits), else None and counted as invalid."""
        n: Optional[int] = None
        if text:
            if isinstance(v, str) and _UNSIGNED.match(v):
                n = int(v)
        elif isinstance(v, int) and not isinstance(v, bool):
            n = v
        if n is None or not (0 <= n < COUNTER_MAX):
            self.invalid += 1
            return None
        return n

    def stat(self, name: str, labels: List[str], src: Dict[str, Any],
             key: str, per: int = 1, text: bool = False) -> Optional[int]:
        """Adds SRC[KEY] / PER to family NAME, if SRC has a valid KEY (a
        status value with TEXT); returns the value read (None: absent or
        invalid)."""
        if key not in src:
            return None
        n = self.count(src[key], text)
        if n is not None:
            self.add(name, labels, n / per if per != 1 else n)
        return n


def _ring_status(f: _Samples, r: RingReading, lab: List[str]) -> None:
    st = r.status
    f.stat("daqring_size_packets", lab, st, "ring_size", text=True)
    burst = f.stat("daqring_max_burst_packets", lab, st, "max_burst",
                   text=True)
    interval = f.stat("daqring_poll_interval_seconds", lab, st,
                      "poll_interval", 10 ** 6, text=True)
    rate = f.count(st["max_rate"], True) if "max_rate" in st else None
    if rate:
        f.add("daqring_shaping_rate_bytes_per_second", lab, rate / 8)
    elif rate == 0 and interval and burst is not None:
        f.add("daqring_shaping_rate_packets_per_second", lab,
              burst * 1e6 / interval)
    f.stat("daqring_flow_buckets", lab, st, "flow_buckets", text=True)
    egress = str(st.get("egress") or r.egress or "")
    if "egress_max_rate" in st:
        elab = lab + [egress]
        f.stat("daqring_egress_share_rate_bytes_per_second", elab, st,
               "egress_max_rate", 8, text=True)
        f.stat("daqring_egress_share_burst_bytes", elab, st,
               "egress_max_burst_bytes", text=True)
        f.stat("daqring_egress_share_rings", elab, st,
               "egress_sharing_rings", text=True)
    if "egress_state" in st:
        f.add("daqring_egress_bound", lab + [egress],
              1 if st["egress_state"] == "bound" else 0)
    f.add("daqring_config_error", lab,
          1 if st.get("config_error") or r.error else 0)
    f.add("daqring_mempool_short", lab, 1 if st.get("mempool_warning")
          else 0)


# The families stats_samples() makes (of the statistics alone).
STATS_FAMILIES = frozenset((
    "daqring_enqueued_packets", "daqring_enqueued_bytes",
    "daqring_dequeued_packets", "daqring_dequeued_bytes",
    "daqring_dropped_packets", "daqring_occupancy_packets",
    "daqring_high_watermark_packets", "daqring_shaper_intervals",
    "daqring_shaper_burst_excess_bytes", "daqring_egress_share_waits"))


_STATS_BEFORE = (("daqring_enqueued_packets", "tx_packets"),
                 ("daqring_enqueued_bytes", "tx_bytes"),
                 ("daqring_dequeued_packets", "rx_packets"),
                 ("daqring_dequeued_bytes", "rx_bytes"))
_STATS_DROPS = tuple((reason, key) for reason, key in DROP_REASONS.items()
                     if key is not None)
_STATS_AFTER = (("daqring_occupancy_packets", "occupancy"),
                ("daqring_high_watermark_packets", "high_watermark"),
                ("daqring_shaper_intervals", "shaper_intervals"),
                ("daqring_shaper_burst_excess_bytes", "shaper_burst_bytes"),
                ("daqring_egress_share_waits", "egress_share_waits"))
_ABSENT = object()


def stats_samples(st: Dict[str, Any], lab: List[str]
                  ) -> Tuple[Dict[str, List[Any]], int]:
    """The samples of a ring's statistics ST (labels LAB) by family, as
    ring_samples() keeps them, and its values left out (an absent key:
    no sample; a value that is not a count: none, counted).  The part of
    a render done for every ring whose statistics changed (all of them,
    under traffic), hence a loop over tables rather than _Samples'
    calls."""
    out: Dict[str, List[Any]] = {}
    invalid = 0
    for name, key in _STATS_BEFORE:
        v = st.get(key, _ABSENT)
        if v is _ABSENT:
            continue
        if type(v) is int and 0 <= v < COUNTER_MAX:
            out[name] = [(lab, v)]
        else:
            invalid += 1
    drops = []
    got: Dict[str, Optional[int]] = {}
    for reason, key in _STATS_DROPS:
        v = st.get(key, _ABSENT)
        if v is _ABSENT:
            continue
        if type(v) is int and 0 <= v < COUNTER_MAX:
            drops.append((lab + [reason], v))
            got[key] = v
        else:
            invalid += 1
            got[key] = None
    v = st.get("tx_dropped", _ABSENT)
    if v is not _ABSENT:
        if type(v) is int and 0 <= v < COUNTER_MAX:
            full, loop = got.get("ring_full_drops"), got.get("loop_drops")
            if full is not None and loop is not None:
                drops.append((lab + ["refused"], max(0, v - full - loop)))
        else:
            invalid += 1
    if drops:
        out["daqring_dropped_packets"] = drops
    for name, key in _STATS_AFTER:
        v = st.get(key, _ABSENT)
        if v is _ABSENT:
            continue
        if type(v) is int and 0 <= v < COUNTER_MAX:
            out[name] = [(lab, v)]
        else:
            invalid += 1
    return out, invalid


def ring_samples(r: RingReading, rest: Optional[Tuple[Dict[str, Any], int]]
                 = None) -> Tuple[Dict[str, List[Any]], int, int]:
    """One ring's samples by family, and its values left out: of its
    statistics, and of the rest (REST: the rest's samples and values
    left out as made before, when only the statistics changed)."""
    lab = [r.bridge, r.ring]
    stats, invalid = stats_samples(r.statistics, lab)
    if rest is None:
        g = _Samples()
        g.add("daqring_info", lab + [r.dcm or ""], 1)
        _ring_status(g, r, lab)
        rest = ({k: v for k, v in g.samples.items()}, g.invalid)
    smp = dict(rest[0])
    smp.update(stats)
    return smp, invalid, rest[1]


class RingFamilies:
    """The rings' families, kept between renders: each ring's samples are
    made again only when its reading is a new object (RingReader), and
    each family has a version that changes only when a sample of it
    does (or the rings do): a family whose version is the same as at
    the last render is the same, and its text can be served again
    (collector.DaqringCollector)."""

    # Every METRICS family but the exporter's own (the collector's).
    NAMES = [m.name for m in METRICS
             if not m.name.startswith("daqring_exporter_")]

    def __init__(self) -> None:
        # (bridge, ring) -> (reading, samples, invalid of the statistics,
        # invalid of the rest)
        self.rings: Dict[Tuple[str, str], Tuple[RingReading, Dict[str, Any],
                                                int, int]] = {}
        self.order: List[Tuple[str, str]] = []
        self.version = dict.fromkeys(self.NAMES, 0)
        self.invalid = 0

    def update(self, readings: List[RingReading]) -> None:
        rings = {}
        order = [(r.bridge, r.ring) for r in readings]
        dirty = set(self.NAMES) if order != self.order else set()
        for r in readings:
            k = (r.bridge, r.ring)
            old = self.rings.get(k)
            if old is not None and old[0] is r:
                rings[k] = old
                continue
            if old is not None and r.earlier is old[0]:
                rest = {n: v for n, v in old[1].items()
                        if n not in STATS_FAMILIES}
                smp, inv, inv_rest = ring_samples(r, (rest, old[3]))
                names = STATS_FAMILIES
            else:
                smp, inv, inv_rest = ring_samples(r)
                names = set(smp) | set(old[1]) if old else set(smp)
            r.earlier = None
            if old is None:
                dirty.update(smp)
            else:
                prev = old[1]
                for n in names:
                    # (Once a family is known to change, its samples are
                    # not compared again.)
                    if n not in dirty and smp.get(n) != prev.get(n):
                        dirty.add(n)
            rings[k] = (r, smp, inv, inv_rest)
        self.rings, self.order = rings, order
        for n in dirty:
            self.version[n] += 1
        self.invalid = sum(v[2] + v[3] for v in rings.values())

    def family(self, name: str) -> Metric:
        """Family NAME (one of NAMES) as update() left it."""
        m = BY_NAME[name]
        cls = CounterMetricFamily if m.kind == "counter" \
            else GaugeMetricFamily
        fam = cls(m.name, m.help, labels=list(m.labels))
        if name == "daqring_rings":
            per_bridge: Dict[str, int] = {}
            for br, _ in self.order:
                per_bridge[br] = per_bridge.get(br, 0) + 1
            for br, n in sorted(per_bridge.items()):
                fam.add_metric([br], n)
        else:
            for k in self.order:
                for labels, value in self.rings[k][1].get(name, ()):
                    fam.add_metric(labels, value)
        return fam

    @staticmethod
    def invalid_family(invalid: int) -> Metric:
        """daqring_exporter_invalid_values: INVALID values left out."""
        m = BY_NAME["daqring_exporter_invalid_values"]
        fam = GaugeMetricFamily(m.name, m.help)
        fam.add_metric([], invalid)
        return fam


def ring_families(readings: Iterable[RingReading],
                  invalid: int = 0) -> List[Metric]:
    """The rings' families of READINGS made afresh, in METRICS' order,
    and daqring_exporter_invalid_values: the values of the readings
    that were not valid (left out), and INVALID more (found elsewhere in
    the scrape)."""
    fams = RingFamilies()
    fams.update(list(readings))
    return ([fams.family(n) for n in RingFamilies.NAMES]
            + [RingFamilies.invalid_family(fams.invalid + invalid)])
