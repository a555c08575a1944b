# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""What a render keeps for the next one (metrics.rings.RingFamilies, the
families' texts of metrics.collector.DaqringCollector) never changes what
a scrape serves: after every change of the rings (a counter, the
statistics alone, the status, a ring added, one removed, the order),
both formats equal what prometheus_client writes of the families made
afresh.  And the exposition is rendered off the scrape path: a scrape
renders nothing when the replica did not change, and a scrape during a
render, or while the main loop holds the replica's lock, serves the
previous exposition whole."""

import threading
from dataclasses import replace
from typing import Any, Callable, List

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
    up gauge's; and the render's CPU time, which varies)."""
    return [ln for ln in text.splitlines()
            if not ln.startswith(b"# HELP daqring_exporter_ovsdb_up")
            and b"daqring_exporter_render_cpu_seconds" not in ln]


def wait_until(cond: Callable[[], bool]) -> None:
    """A bound on a hang, not a timing."""
    ev = threading.Event()
    for _ in range(1000):
        if cond():
            return
        ev.wait(0.01)
    raise AssertionError("timed out")


class Replica:
    """What a daemon's main loop has: the readings its IDL replica gives,
    a change count (version()), the lock it runs the IDL under, and the
    collector it pokes after each run."""

    def __init__(self, cur: List[RingReading]) -> None:
        self.cur = cur
        self.seqno = 0
        self.lock = threading.Lock()
        self.reads = 0
        self.collector = DaqringCollector(self.read, self.lock,
                                          version=lambda: self.seqno)

    def read(self) -> List[RingReading]:
        self.reads += 1
        return list(self.cur)

    def changed(self) -> None:
        """The IDL took a change in: the main loop's run() and poke()."""
        with self.lock:
            self.seqno += 1
            self.collector.poke()

    def rendered(self) -> None:
        """Waits until the change is rendered."""
        c = self.collector
        wait_until(lambda: c.published is not None
                   and c.published.version == self.seqno)


@pytest.mark.parametrize("poked", [False, True],
                         ids=["render-per-scrape", "render-per-change"])
def test_cached_scrapes_equal_fresh_ones(poked: bool) -> None:
    """Without version(), each scrape renders; with it, each change."""
    readings = [ring("r%d" % i, i) for i in range(5)]
    cur: List[RingReading] = list(readings)
    replica = Replica(cur)
    expo = Exposition()
    expo.register(replica.collector if poked
                  else DaqringCollector(lambda: list(cur)))

    def check() -> None:
        if poked:
            replica.changed()
            # (The first scrape of each format renders it at once.)
            if replica.collector.published is not None:
                replica.rendered()
        for accept, encoder in ((OPENMETRICS, om.generate_latest),
                                ("text/plain", generate_latest)):
            got, _ = expo.render(accept)
            want = fresh(cur, encoder)
            assert body_lines(got) == body_lines(want), accept
            # Twice: the second from what the first kept.
            again, _ = expo.render(accept)
            assert body_lines(again) == body_lines(got)

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


def test_a_scrape_renders_nothing_when_nothing_changed() -> None:
    """Once rendered, scrapes serve the exposition as it is, reading
    nothing of the replica, until the main loop's poke() finds its
    version moved; a poke without a change renders nothing either."""
    cur = [ring("r%d" % i, i) for i in range(3)]
    replica = Replica(cur)
    c = replica.collector
    expo = Exposition()
    expo.register(c)
    replica.changed()
    replica.rendered()
    reads, renders = replica.reads, c.renders
    # (Both formats are rendered at each change: the scrape process
    # renders nothing.)
    first, _ = expo.render(OPENMETRICS)
    text, _ = expo.render("text/plain")
    for _ in range(5):
        again, _ = expo.render(OPENMETRICS)
        assert again == first
        assert expo.render("text/plain")[0] == text
        with replica.lock:
            c.poke()
    assert c.renders == renders and replica.reads == reads
    cur[0] = ring("r0", 100)
    replica.changed()
    replica.rendered()
    assert c.renders == renders + 1 and replica.reads == reads + 1
    after, _ = expo.render(OPENMETRICS)
    assert body_lines(after) == body_lines(fresh(cur, om.generate_latest))
    assert after != first
    assert body_lines(expo.render("text/plain")[0]) == body_lines(
        fresh(cur, generate_latest))
    assert c.renders == renders + 1


def test_a_scrape_during_a_render_serves_the_last_one_whole() -> None:
    """A render stopped halfway through writing the families (and one
    waiting for the lock the main loop holds while its IDL takes an
    update in): a scrape meanwhile serves the previous exposition, all
    of it, at once; the render's exposition once it is published."""
    cur = [ring("r%d" % i, i) for i in range(3)]
    replica = Replica(cur)
    c = replica.collector
    expo = Exposition()
    expo.register(c)
    replica.changed()
    replica.rendered()
    first, _ = expo.render(OPENMETRICS)
    assert body_lines(first) == body_lines(fresh(cur, om.generate_latest))

    # Halfway through writing the families.
    halfway, go = threading.Event(), threading.Event()
    family = c.families.family
    calls = []

    def slow_family(name: str) -> Any:
        calls.append(name)
        if len(calls) == 3:
            halfway.set()
            assert go.wait(30)
        return family(name)
    c.families.family = slow_family         # type: ignore
    cur[0] = ring("r0", 100)
    cur.append(ring("r9", 9))
    replica.changed()
    assert halfway.wait(30)
    during, _ = expo.render(OPENMETRICS)
    assert during == first
    go.set()
    replica.rendered()
    after, _ = expo.render(OPENMETRICS)
    assert body_lines(after) == body_lines(fresh(cur, om.generate_latest))

    # The main loop holds the lock (its IDL takes an update in): the
    # render waits for it, the scrape does not.
    with replica.lock:
        cur[1] = ring("r1", 200)
        replica.seqno += 1
        c.poke()
        held, _ = expo.render(OPENMETRICS)
        assert held == after
    replica.rendered()
    last, _ = expo.render(OPENMETRICS)
    assert body_lines(last) == body_lines(fresh(cur, om.generate_latest))
