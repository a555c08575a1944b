# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What a scrape keeps for the next one (metrics.rings.RingFamilies, the
texts of metrics.collector.Exposition) never changes what it serves:
after every change of the rings (a counter, the statistics alone, the
status, a ring added, one removed, the order), both formats equal what
prometheus_client writes of the families made afresh."""

from dataclasses import replace
from typing import Any, List

import pytest

pytest.importorskip("prometheus_client",
                    reason="needs python3-prometheus-client")

from prometheus_client import generate_latest  # noqa: E402
from prometheus_client.core import GaugeMetricFamily  # noqa: E402
from prometheus_client.openmetrics import exposition as om  # noqa: E402

from ovs_daqring.metrics.collector import (  # noqa: E402
    DaqringCollector, Exposition)
from ovs_daqring.metrics.rings import (  # noqa: E402
    RingReading, ring_families)

OPENMETRICS = "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"


def ring(name: str, n: int, bridge: str = "br0", **status: str
         ) -> RingReading:
    st = {"ring_size": "1024", "max_burst": "32", "poll_interval": "0",
          "max_rate": "0", "flow_buckets": "0"}
    st.update(status)
    return RingReading(
        bridge=bridge, ring=name, dcm="dcm-" + name,
        statistics={"tx_packets": n, "tx_bytes": 64 * n, "rx_packets": n,
                    "rx_bytes": 64 * n, "tx_dropped": 0,
                    "ring_full_drops": 0, "loop_drops": 0,
                    "egress_drops": 0, "occupancy": n % 7,
                    "high_watermark": n % 11},
        status=st)


class _Fresh:
    def __init__(self, readings: List[RingReading]) -> None:
        self.readings = readings

    def collect(self) -> List[Any]:
        up = GaugeMetricFamily("daqring_exporter_ovsdb_up", "x")
        up.add_metric([], 1)
        return [up] + ring_families(self.readings)


def fresh(readings: List[RingReading], encoder: Any) -> bytes:
    return encoder(_Fresh(readings))


def body_lines(text: bytes) -> List[bytes]:
    """The samples and their families' TYPE lines (HELP texts aside: the
    up gauge's)."""
    return [ln for ln in text.splitlines()
            if not ln.startswith(b"# HELP daqring_exporter_ovsdb_up")]


def test_cached_scrapes_equal_fresh_ones() -> None:
    readings = [ring("r%d" % i, i) for i in range(5)]
    cur: List[RingReading] = list(readings)
    expo = Exposition()
    expo.register(DaqringCollector(lambda: list(cur)))

    def check() -> None:
        for accept, encoder in ((OPENMETRICS, om.generate_latest),
                                ("text/plain", generate_latest)):
            got, _ = expo.render(accept)
            want = fresh(cur, encoder)
            assert body_lines(got) == body_lines(want), accept
            # Twice: the second from what the first kept.
            again, _ = expo.render(accept)
            assert again == got

    check()
    # A ring's counters, as a new reading of the whole row.
    cur[1] = ring("r1", 100)
    check()
    # A ring's statistics alone (RingReader's reading that says so).
    new = replace(cur[2], statistics=dict(cur[2].statistics,
                                          tx_packets=999, occupancy=5))
    new.earlier = cur[2]
    cur[2] = new
    check()
    # Its statistics unchanged but said to be new: nothing differs.
    same = replace(cur[2], statistics=dict(cur[2].statistics))
    same.earlier = cur[2]
    cur[2] = same
    check()
    # Statistics that are not valid counts (left out, counted), and some
    # missing (their series absent; no refused drops without tx_dropped).
    bad = dict(cur[2].statistics, tx_bytes=-1, rx_packets=True,
               loop_drops=2 ** 64, shaper_intervals="7")
    del bad["tx_dropped"], bad["occupancy"]
    new = replace(cur[2], statistics=bad)
    new.earlier = cur[2]
    cur[2] = new
    check()
    # The status: a shaped ring, one in error.
    cur[3] = ring("r3", 3, max_rate="8000000")
    cur[4] = replace(ring("r4", 4), error="could not open")
    check()
    # A ring added (another bridge), one removed, the order changed.
    cur.append(ring("s1", 1, bridge="br1"))
    check()
    del cur[0]
    check()
    cur.reverse()
    check()
    cur.clear()
    check()


def test_scrape_does_not_wait_for_the_replicas_update() -> None:
    """While the daemon holds the lock (its IDL taking an update in), a
    scrape serves the readings of the last one instead of waiting; the
    first scrape has none and waits."""
    import threading
    lock = threading.Lock()
    cur = [ring("r1", 1)]
    c = DaqringCollector(lambda: list(cur), lock)
    expo = Exposition()
    expo.register(c)
    first, _ = expo.render("text/plain")
    cur[0] = ring("r1", 2)
    with lock:
        held, _ = expo.render("text/plain")
    assert held == first
    after, _ = expo.render("text/plain")
    assert body_lines(after) == body_lines(fresh(cur, generate_latest))
    assert after != first
