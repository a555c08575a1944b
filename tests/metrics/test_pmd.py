# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ovs_daqring.metrics.pmd: the PMD threads as ovs-vswitchd 3.1's
pmd-stats-show and pmd-rxq-show print them, turned into metrics; a
switch that cannot be asked."""

from typing import Any, List, Tuple

import pytest

pytest.importorskip("prometheus_client",
                    reason="needs python3-prometheus-client")

from prometheus_client import generate_latest  # noqa: E402
from prometheus_client.parser import \
    text_string_to_metric_families  # noqa: E402
from prometheus_client.registry import CollectorRegistry  # noqa: E402

from ovs_daqring.metrics.collector import (  # noqa: E402
    DaqringCollector, ReadError)
from ovs_daqring.metrics.pmd import parse_pmd_stats  # noqa: E402

# As OVS 3.1 prints them (a DPDK switch, one PMD on core 1; the second
# PMD added by hand).
STATS = """\
pmd thread numa_id 0 core_id 1:
  packets received: 48
  packet recirculations: 0
  avg. datapath passes per packet: 1.00
  phwol hits: 0
  mfex opt hits: 0
  simple match hits: 0
  emc hits: 40
  smc hits: 0
  megaflow hits: 5
  avg. subtable lookups per megaflow hit: 1.00
  miss with success upcall: 3
  miss with failed upcall: 0
  avg. packets per output batch: 1.00
  idle cycles: 5252403174 (99.99%)
  processing cycles: 512345 (0.01%)
pmd thread numa_id 1 core_id 13:
  packets received: 0
  idle cycles: 77 (100.00%)
  processing cycles: 0 (0.00%)
main thread:
  packets received: 9
  packet recirculations: 0
"""
RXQS = """\
Displaying last 60 seconds pmd usage %
pmd thread numa_id 0 core_id 1:
  isolated : false
  port: r1                queue-id:  0 (enabled)   pmd usage:  0 %
  port: r2                queue-id:  0 (enabled)   pmd usage: NOT AVAIL
  overhead: NOT AVAIL
pmd thread numa_id 1 core_id 13:
  isolated : false
  overhead: NOT AVAIL
"""


def scrape(read_pmds: Any) -> List[Tuple[str, dict, float]]:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(DaqringCollector(lambda: [], read_pmds=read_pmds))
    text = generate_latest(reg).decode()
    return [(s.name, s.labels, s.value)
            for f in text_string_to_metric_families(text)
            for s in f.samples]


def test_parse() -> None:
    pmds, invalid = parse_pmd_stats(STATS, RXQS)
    assert invalid == 0
    assert [(p.numa, p.core, p.counters, p.rx_queues) for p in pmds] == [
        ("0", "1", {"packets_received": 48, "idle": 5252403174,
                    "processing": 512345}, 2),
        ("1", "13", {"packets_received": 0, "idle": 77, "processing": 0},
         0)]


def test_metrics() -> None:
    got = scrape(lambda: (STATS, RXQS))
    c1 = {"numa": "0", "core": "1"}
    assert ("daqring_exporter_vswitchd_up", {}, 1) in got
    assert ("daqring_pmd_received_packets_total", c1, 48) in got
    assert ("daqring_pmd_cycles_total", dict(c1, state="idle"),
            5252403174) in got
    assert ("daqring_pmd_cycles_total", dict(c1, state="processing"),
            512345) in got
    assert ("daqring_pmd_rx_queues", c1, 2) in got
    assert ("daqring_pmd_rx_queues", {"numa": "1", "core": "13"}, 0) in got
    # The main thread is no PMD.
    assert not [s for s in got if s[1].get("core") not in (None, "1",
                                                           "13")]


@pytest.mark.parametrize("stats", [
    "pmd thread numa_id 0 core_id 1:\n  packets received: "
    "99999999999999999999\n",
    "pmd thread numa_id 0 core_id 1:\n  packets received: -3\n",
    "pmd thread numa_id 0 core_id 1:\n  packets received: lots\n",
    "pmd thread numa_id x core_id 1:\n  packets received: 3\n",
    "garbage\n\x00\n  packets received: 3\n",
])
def test_bad_output(stats: str) -> None:
    """What is not a count of a PMD thread is left out (too large:
    counted as invalid); the rest of the scrape is served."""
    got = scrape(lambda: (stats, ""))
    assert not [s for s in got if s[0] == "daqring_pmd_received_packets"
                "_total"]
    invalid = [s[2] for s in got
               if s[0] == "daqring_exporter_invalid_values"]
    assert invalid == [1 if "9999" in stats else 0]


def test_switch_not_asked() -> None:
    told: List[str] = []

    def fail() -> Tuple[str, str]:
        raise ReadError("ovs-appctl: cannot connect")
    reg = CollectorRegistry(auto_describe=False)
    reg.register(DaqringCollector(lambda: [], read_pmds=fail,
                                  log=told.append))
    for _ in range(2):
        text = generate_latest(reg).decode()
    assert "daqring_exporter_vswitchd_up 0.0" in text
    assert "daqring_exporter_ovsdb_up 1.0" in text
    assert "\ndaqring_pmd_" not in text
    assert told == ["ovs-appctl: cannot connect"]


def test_a_late_answer_leaves_the_scrape_its_previous_one() -> None:
    """ovs-vswitchd's main loop busy (taking thousands of rows in): a
    scrape does not wait for its answer to the PMD commands, it serves
    the previous answer, with its age; one worker asks, one request at
    a time however many scrapes come meanwhile; the late answer is
    served by a scrape once it came.  Before, each scrape started a
    thread that asked, and waited for it."""
    import threading
    answers = [(STATS, RXQS),
               (STATS.replace("packets received: 48",
                              "packets received: 50"), RXQS)]
    calls: List[str] = []
    release = threading.Event()

    def read() -> Tuple[str, str]:
        calls.append(threading.current_thread().name)
        if len(calls) == 2:
            # The second call hangs until released (at most 60 s).
            assert release.wait(60)
        return answers[min(len(calls), 2) - 1]
    reg = CollectorRegistry(auto_describe=False)
    reg.register(DaqringCollector(lambda: [], read_pmds=read))

    def sample(name: str) -> float:
        text = generate_latest(reg).decode()
        return next(s.value for f in text_string_to_metric_families(text)
                    for s in f.samples if s.name == name
                    and s.labels.get("core", "1") == "1")

    def packets() -> float:
        return sample("daqring_pmd_received_packets_total")
    # (The first scrape of this process's collector waits for the first
    # answer: there is none to serve before.)
    assert packets() == 48
    assert sample("daqring_exporter_pmd_reading_age_seconds") >= 0
    wait_until(lambda: len(calls) == 2)
    # The call under way is blocked: scrapes come back anyway, and ask
    # no more of ovs-vswitchd meanwhile.
    for _ in range(5):
        assert packets() == 48
    assert len(calls) == 2 and not release.is_set()
    assert len(set(calls)) == 1
    release.set()
    wait_until(lambda: packets() == 50)
    # One more call, asked for during the wait, and the same worker.
    wait_until(lambda: len(calls) >= 3)
    assert len(set(calls)) == 1


def wait_until(cond: Any) -> None:
    """A bound on a hang, not a timing."""
    import threading
    ev = threading.Event()
    for _ in range(600):
        if cond():
            return
        ev.wait(0.1)
    raise AssertionError("timed out")


def test_latest_reading_waits_for_its_first_answer() -> None:
    """With no earlier answer there is nothing else to serve: get()
    waits for the call (unless told not to: the scrape process), and an
    error is an outcome like a value."""
    import threading
    from ovs_daqring.metrics.collector import LatestReading
    go = threading.Event()

    def read() -> str:
        assert go.wait(60)
        raise ReadError("no answer")
    assert LatestReading(read, 0).get() is None
    r = LatestReading(read)
    threading.Timer(0.2, go.set).start()
    got = r.get()
    assert got is not None
    value, e, age = got
    assert value is None and str(e) == "no answer" and age >= 0


# OVS 4.0: pmd-stats-show is pmd-perf-show.
PERF_STATS = """\
Time: 09:10:00.000
Measurement duration: 12.345 s

pmd thread numa_id 0 core_id 1:

  Iterations:               123456  (1.23 us/it)
  - Used TSC cycles:     987654321  (  2.5 % of total cycles)
  - idle iterations:        123400  ( 99.0 % of used cycles)
  - busy iterations:            56  (  1.0 % of used cycles)
  - sleep iterations:          700  (  0.6 % of iterations)
  Sleep time (us):         3500000  (5000 us/iteration avg.)
  Rx packets:                   48  (0 Kpps, 2000 cycles/pkt)
  Datapath passes:              48  (1.00 passes/pkt)

"""


def test_parse_ovs_4_0_perf_show() -> None:
    """OVS 4.0's pmd-stats-show (pmd-perf-show): its Rx packets are the
    packets received, its sleep lines the sleep; it prints no cycle
    counts, so none is read (a share of cycles would make no
    counter)."""
    pmds, invalid = parse_pmd_stats(PERF_STATS, "")
    assert invalid == 0
    assert [(p.numa, p.core, p.counters) for p in pmds] == [
        ("0", "1", {"packets_received": 48, "sleep_iterations": 700,
                    "sleep_us": 3500000})]


# OVS 3.1 and 3.5: the sleep is in pmd-perf-show only (its header as
# pmd_info_show_perf() prints it), besides pmd-stats-show's counters.
PERF_3_1 = """
Time: 09:10:00.000
Measurement duration: 12.345 s

pmd thread numa_id 0 core_id 1:

  Iterations:               123456  (1.23 us/it)
  - Used TSC cycles:     987654321  (  2.5 % of total cycles)
  - idle iterations:        123400  ( 99.0 % of used cycles)
  - busy iterations:            56  (  1.0 % of used cycles)
  - sleep iterations:         1234  (  1.0 % of iterations)
  Sleep time (us):        98765432  (80036 us/iteration avg.)
  Rx packets:                    0

"""


def test_sleep_of_ovs_3_1_perf_show() -> None:
    """pmd-perf-show's sleep joins pmd-stats-show's counters of the same
    PMD, and becomes daqring_pmd_sleep_seconds_total (in seconds) and
    daqring_pmd_sleep_iterations_total; the second PMD, which
    pmd-perf-show did not print, has no sleep series."""
    pmds, invalid = parse_pmd_stats(STATS, RXQS, PERF_3_1)
    assert invalid == 0
    assert pmds[0].counters == {
        "packets_received": 48, "idle": 5252403174, "processing": 512345,
        "sleep_iterations": 1234, "sleep_us": 98765432}
    assert "sleep_us" not in pmds[1].counters
    got = scrape(lambda: (STATS, RXQS, PERF_3_1))
    assert ("daqring_pmd_sleep_seconds_total", {"numa": "0", "core": "1"},
            98.765432) in got
    assert ("daqring_pmd_sleep_iterations_total",
            {"numa": "0", "core": "1"}, 1234) in got
    assert not [s for s in got if s[0].startswith("daqring_pmd_sleep")
                and s[1].get("core") == "13"]
