# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ovs_daqring.metrics.rings and .collector without a switch: readings
as a switch's OVSDB would give them, turned into the exposition that
prometheus_client serves, parsed back and held to the readings; the
names held to Prometheus's conventions and to what lib/netdev-daqring.c
publishes; "promtool check metrics" on a scrape."""

import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

pytest.importorskip("prometheus_client",
                    reason="needs python3-prometheus-client")

from prometheus_client import generate_latest  # noqa: E402
from prometheus_client.parser import \
    text_string_to_metric_families  # noqa: E402
from prometheus_client.registry import CollectorRegistry  # noqa: E402

from ovs_daqring.metrics.address import parse_address  # noqa: E402
from ovs_daqring.metrics.collector import (  # noqa: E402
    DaqringCollector, ReadError)
from ovs_daqring.metrics.pmd import PMD_METRICS  # noqa: E402
from ovs_daqring.metrics.rings import (  # noqa: E402
    METRICS, STATISTICS_READ, STATUS_NOT_EXPORTED, STATUS_READ,
    RingReading)

TOP = Path(__file__).resolve().parent.parent.parent
PROVIDER = TOP / "lib" / "netdev-daqring.c"

Samples = Dict[Tuple[str, Tuple[Tuple[str, str], ...]], float]


def stats(**kw: int) -> Dict[str, int]:
    """A daqring's statistics column: every key the provider writes."""
    base = {"rx_packets": 0, "rx_bytes": 0, "tx_packets": 0, "tx_bytes": 0,
            "rx_dropped": 0, "tx_dropped": 0, "rx_errors": 0,
            "tx_errors": 0, "ring_full_drops": 0, "occupancy": 0,
            "high_watermark": 0, "loop_drops": 0, "egress_drops": 0,
            "shaper_intervals": 0, "shaper_burst_bytes": 0,
            "egress_share_waits": 0}
    base.update(kw)
    return base


def status(**kw: str) -> Dict[str, str]:
    base = {"ring_size": "4096", "numa_id": "0", "max_burst": "32",
            "poll_interval": "0", "max_rate": "0", "frame_overhead": "24",
            "max_burst_bytes": "0", "flow_buckets": "0",
            "shaping_rate": "unshaped"}
    base.update(kw)
    return base


def scrape(readings: List[RingReading],
           error: Optional[str] = None) -> str:
    def read() -> List[RingReading]:
        if error:
            raise ReadError(error)
        return readings
    reg = CollectorRegistry(auto_describe=False)
    reg.register(DaqringCollector(read))
    return generate_latest(reg).decode()


def samples(text: str) -> Samples:
    out: Samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in out, key
            out[key] = s.value
    return out


def value(smp: Samples, name: str, **labels: str) -> Optional[float]:
    return smp.get((name, tuple(sorted(labels.items()))))


def two_rings() -> List[RingReading]:
    return [
        RingReading("br0", "ring1", "dcm1", stats(
            tx_packets=1000, tx_bytes=64000, rx_packets=990,
            rx_bytes=63360, tx_dropped=17, ring_full_drops=12,
            loop_drops=2, egress_drops=4, occupancy=10,
            high_watermark=4000, shaper_intervals=77,
            shaper_burst_bytes=1500, egress_share_waits=5),
            status(max_rate="1000000000", flow_buckets="64",
                   egress="p1", egress_state="bound",
                   egress_max_rate="2000000000",
                   egress_max_burst_bytes="9000",
                   egress_sharing_rings="2"), egress="p1"),
        RingReading("br1", "ring2", None, stats(tx_packets=5, rx_packets=5),
                    status(poll_interval="100", max_burst="50")),
    ]


def test_counters_equal_the_statistics() -> None:
    """Every counter and gauge is the ring's own statistic or status."""
    smp = samples(scrape(two_rings()))
    r1 = {"bridge": "br0", "ring": "ring1"}
    want = {"daqring_enqueued_packets_total": 1000,
            "daqring_enqueued_bytes_total": 64000,
            "daqring_dequeued_packets_total": 990,
            "daqring_dequeued_bytes_total": 63360,
            "daqring_occupancy_packets": 10,
            "daqring_high_watermark_packets": 4000,
            "daqring_size_packets": 4096,
            "daqring_max_burst_packets": 32,
            "daqring_poll_interval_seconds": 0,
            "daqring_shaping_rate_bytes_per_second": 125000000,
            "daqring_shaper_intervals_total": 77,
            "daqring_shaper_burst_excess_bytes": 1500,
            "daqring_flow_buckets": 64,
            "daqring_egress_share_waits_total": 5,
            "daqring_config_error": 0,
            "daqring_mempool_short": 0}
    for name, v in want.items():
        assert value(smp, name, **r1) == v, name
    drops = {reason: value(smp, "daqring_dropped_packets_total",
                           reason=reason, **r1)
             for reason in ("ring_full", "loop", "refused", "egress_down")}
    # tx_dropped = ring full + loop + refused (port down, unconfigured).
    assert drops == {"ring_full": 12, "loop": 2, "refused": 3,
                     "egress_down": 4}
    e1 = dict(r1, egress="p1")
    assert value(smp, "daqring_egress_share_rate_bytes_per_second",
                 **e1) == 250000000
    assert value(smp, "daqring_egress_share_burst_bytes", **e1) == 9000
    assert value(smp, "daqring_egress_share_rings", **e1) == 2
    assert value(smp, "daqring_egress_bound", **e1) == 1
    assert value(smp, "daqring_info", dcm="dcm1", **r1) == 1
    assert value(smp, "daqring_info", dcm="", bridge="br1",
                 ring="ring2") == 1
    assert value(smp, "daqring_rings", bridge="br0") == 1
    assert value(smp, "daqring_rings", bridge="br1") == 1
    assert value(smp, "daqring_exporter_ovsdb_up") == 1
    assert value(smp, "daqring_exporter_invalid_values") == 0


def test_shaping_by_packets_and_unshaped() -> None:
    """max_burst packets every poll_interval microseconds; a ring shaped
    by bytes or not at all has no packet rate; a ring in no egress share
    has no share series."""
    rings = two_rings() + [RingReading("br1", "ring3", None, stats(),
                                       status())]
    smp = samples(scrape(rings))
    r2 = {"bridge": "br1", "ring": "ring2"}
    assert value(smp, "daqring_shaping_rate_packets_per_second",
                 **r2) == 500000
    assert value(smp, "daqring_poll_interval_seconds", **r2) == 100e-6
    names = {n for (n, lab) in smp if dict(lab).get("ring") == "ring3"}
    assert "daqring_shaping_rate_packets_per_second" not in names
    assert "daqring_shaping_rate_bytes_per_second" not in names
    assert not {n for n in names if n.startswith("daqring_egress_share_r")}
    assert value(smp, "daqring_rings", bridge="br1") == 2


def test_egress_not_bound_and_errors() -> None:
    r = RingReading("br0", "ring1", None, stats(),
                    status(egress="p9", egress_state="p9: no such port",
                           config_error="ring-size: not a power of 2",
                           mempool_warning="daqring capacity ..."),
                    egress="p9")
    smp = samples(scrape([r]))
    lab = {"bridge": "br0", "ring": "ring1"}
    assert value(smp, "daqring_egress_bound", egress="p9", **lab) == 0
    assert value(smp, "daqring_config_error", **lab) == 1
    assert value(smp, "daqring_mempool_short", **lab) == 1
    r = RingReading("br0", "ring1", None, stats(), status(),
                    error="could not open network device")
    assert value(samples(scrape([r])), "daqring_config_error", **lab) == 1


@pytest.mark.parametrize("bad", [-1, 2 ** 64, True, "12", None, 1.5])
def test_invalid_statistics_left_out(bad: object) -> None:
    """A statistic that is no count below 2^64 is left out, counted, and
    the rest of the scrape served."""
    r = RingReading("br0", "ring1", None, stats(tx_packets=bad,
                                                ring_full_drops=bad))
    smp = samples(scrape([r]))
    lab = {"bridge": "br0", "ring": "ring1"}
    assert value(smp, "daqring_enqueued_packets_total", **lab) is None
    assert value(smp, "daqring_dropped_packets_total", reason="ring_full",
                 **lab) is None
    # Without ring_full_drops, "refused" cannot be told apart.
    assert value(smp, "daqring_dropped_packets_total", reason="refused",
                 **lab) is None
    assert value(smp, "daqring_dequeued_packets_total", **lab) == 0
    assert value(smp, "daqring_exporter_invalid_values") == 2


@pytest.mark.parametrize("bad", ["-1", "12x", "", " 3", "1e3",
                                 "99999999999999999999999"])
def test_invalid_status_left_out(bad: str) -> None:
    r = RingReading("br0", "ring1", None, stats(),
                    status(ring_size=bad, max_rate=bad))
    smp = samples(scrape([r]))
    lab = {"bridge": "br0", "ring": "ring1"}
    assert value(smp, "daqring_size_packets", **lab) is None
    assert value(smp, "daqring_shaping_rate_bytes_per_second",
                 **lab) is None
    assert value(smp, "daqring_exporter_invalid_values") == 2


def test_refused_never_negative() -> None:
    """The statistics are read one after the other: ring_full_drops may
    be ahead of tx_dropped."""
    r = RingReading("br0", "ring1", None, stats(tx_dropped=5,
                                                ring_full_drops=7))
    assert value(samples(scrape([r])), "daqring_dropped_packets_total",
                 bridge="br0", ring="ring1", reason="refused") == 0


def test_unreadable_switch() -> None:
    """A switch that cannot be read: up 0 and no daqring_ series (not
    stale ones), told to the log once while it lasts."""
    told: List[str] = []
    reg = CollectorRegistry(auto_describe=False)
    fail = ["unix:/x/db.sock: connection refused"]

    def read() -> List[RingReading]:
        if fail:
            raise ReadError(fail[0])
        return two_rings()
    reg.register(DaqringCollector(read, log=told.append))
    for _ in range(3):
        smp = samples(generate_latest(reg).decode())
        assert smp == {("daqring_exporter_ovsdb_up", ()): 0}
    assert told == fail
    fail.clear()
    smp = samples(generate_latest(reg).decode())
    assert value(smp, "daqring_exporter_ovsdb_up") == 1
    assert value(smp, "daqring_enqueued_packets_total", bridge="br0",
                 ring="ring1") == 1000


def test_names_follow_the_conventions() -> None:
    """Prometheus's naming rules: a daqring_ prefix, snake case, a unit
    suffix of base units, counters exposed with _total (and not named
    with it twice), no label named after the metric, the same labels on
    every sample of a family."""
    units = ("_packets", "_bytes", "_seconds", "_bytes_per_second",
             "_packets_per_second")
    unitless = {"daqring_flow_buckets", "daqring_egress_share_rings",
                "daqring_egress_bound", "daqring_info",
                "daqring_config_error", "daqring_mempool_short",
                "daqring_rings", "daqring_exporter_ovsdb_up",
                "daqring_exporter_invalid_values",
                "daqring_shaper_intervals", "daqring_egress_share_waits",
                "daqring_pmd_rx_queues", "daqring_exporter_vswitchd_up",
                "daqring_pmd_sleep_iterations"}
    seen = set()
    for m in METRICS + PMD_METRICS:
        assert re.match(r"^daqring_[a-z][a-z0-9_]*[a-z]$", m.name), m.name
        assert m.name not in seen
        seen.add(m.name)
        assert not m.name.endswith("_total")
        assert m.name.endswith(units + ("_cycles",)) \
            or m.name in unitless, m.name
        assert m.kind in ("counter", "gauge")
        if m.kind == "counter":
            assert m.name in unitless or m.name.endswith(
                ("_packets", "_bytes", "_cycles", "_seconds")), m.name
        assert set(m.labels) <= {"bridge", "ring", "egress", "reason",
                                 "dcm", "numa", "core", "state"}
        assert m.help.endswith(".")
    smp = samples(scrape(two_rings()))
    exposed = {m.exposed() for m in METRICS}
    assert {n for n, _ in smp} <= exposed
    labels = {m.exposed(): set(m.labels) for m in METRICS}
    for n, lab in smp:
        assert {k for k, _ in lab} == labels[n], n


def _provider_function(name: str) -> str:
    text = PROVIDER.read_text()
    start = text.index("\n%s(" % name)
    return text[start:text.index("\n}\n", start)]


def test_every_provider_counter_is_read() -> None:
    """Every custom statistic lib/netdev-daqring.c publishes is exported;
    every status key is exported or left out with a reason.  A counter
    added to the provider fails here until it has a metric."""
    if not PROVIDER.exists():
        pytest.skip("not a source tree")
    body = _provider_function("netdev_daqring_get_custom_stats")
    names = set(re.findall(r'"([a-z_]+)"', body))
    assert "ring_full_drops" in names and len(names) >= 8
    assert names <= STATISTICS_READ, sorted(names - STATISTICS_READ)
    body = _provider_function("netdev_daqring_get_status")
    keys = set(re.findall(r'smap_add(?:_format)?\(args, "([a-z_]+)"', body))
    assert "ring_size" in keys and len(keys) >= 10
    known = STATUS_READ | set(STATUS_NOT_EXPORTED)
    assert keys <= known, sorted(keys - known)
    assert not STATUS_READ & set(STATUS_NOT_EXPORTED)


@pytest.mark.parametrize("text,want", [
    ("9478", ("localhost", 9478)),
    ("127.0.0.1:9100", ("127.0.0.1", 9100)),
    ("0.0.0.0:80", ("0.0.0.0", 80)),
    ("[::1]:9478", ("::1", 9478)),
    ("metrics.example:65535", ("metrics.example", 65535)),
])
def test_parse_address(text: str, want: Tuple[str, int]) -> None:
    assert parse_address(text) == want


@pytest.mark.parametrize("text", ["", "0", "65536", "host:", ":9478",
                                  "::1:9478", "[::1]9478", "[::1",
                                  "host:port", "-1", "1.2.3.4:+80"])
def test_parse_address_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_address(text)


def test_promtool_check_metrics() -> None:
    """Prometheus's own linter accepts a scrape."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (Debian: prometheus)")
    text = scrape(two_rings())
    p = subprocess.run([promtool, "check", "metrics"], input=text,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.strip() == "" and p.stderr.strip() == "", \
        p.stdout + p.stderr
