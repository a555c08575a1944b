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

"""The PMD threads of a switch as Prometheus metric families, from what
ovs-vswitchd's unixctl commands dpif-netdev/pmd-stats-show,
dpif-netdev/pmd-rxq-show and dpif-netdev/pmd-perf-show print (read from
the main thread's copy of the PMDs' counters: a scrape adds no work to
the PMD path).

How the bases print them: OVS 3.1 and 3.5's pmd-stats-show has packets
received and idle and processing cycles, and no sleep; their
pmd-perf-show has "- sleep iterations:" and "Sleep time (us):" (PMD
sleep, other_config:pmd-maxsleep in 3.1, pmd-sleep-max in 3.5).  OVS
4.0's pmd-stats-show is pmd-perf-show: "Rx packets" and the sleep lines,
no cycle counts."""

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    Metric)

from .rings import MetricDoc

PMD = ("numa", "core")

PMD_METRICS = [
    MetricDoc("daqring_pmd_received_packets", "counter", PMD,
              "Packets the PMD thread received from its rx queues "
              "(pmd-stats-show: packets received)."),
    MetricDoc("daqring_pmd_cycles", "counter", PMD + ("state",),
              "TSC cycles of the PMD thread, by state: idle (polling "
              "found nothing) or processing (pmd-stats-show: idle "
              "cycles, processing cycles); their rates give its busy "
              "share."),
    MetricDoc("daqring_pmd_rx_queues", "gauge", PMD,
              "Rx queues the PMD thread polls (pmd-rxq-show): the "
              "daqrings and ports assigned to it."),
    MetricDoc("daqring_pmd_sleep_seconds", "counter", PMD,
              "Time the PMD thread slept in its idle polls (PMD sleep: "
              "other_config:pmd-maxsleep, or pmd-sleep-max; pmd-perf-"
              "show: Sleep time (us)); its rate is the share of the core "
              "given back."),
    MetricDoc("daqring_pmd_sleep_iterations", "counter", PMD,
              "Polling iterations in which the PMD thread slept "
              "(pmd-perf-show: sleep iterations)."),
    MetricDoc("daqring_exporter_vswitchd_up", "gauge", (),
              "1 if the exporter's last request read the PMD threads "
              "from ovs-vswitchd, 0 if it could not (then no PMD series "
              "is served)."),
    MetricDoc("daqring_exporter_pmd_reading_age_seconds", "gauge", (),
              "How old the PMD series served are: the time since "
              "ovs-vswitchd answered the request they come from (one "
              "request at a time, made after each scrape; a scrape "
              "never waits for it)."),
]
PMD_DOCS = {m.name: m for m in PMD_METRICS}

# pmd-stats-show's lines read (lowercased), and the cycle states.  OVS
# 4.0's pmd-stats-show is pmd-perf-show: "Rx packets" (printed once a
# packet arrived), and no idle or processing cycles (only shares of them,
# which would make no counter: those series are left out there).
_COUNTERS = {"packets received": "packets_received",
             "rx packets": "packets_received",
             "idle cycles": "idle", "processing cycles": "processing"}
_HEADER = re.compile(r"^pmd thread numa_id (\d{1,5}) core_id (\d{1,5}):$")
_VALUE = re.compile(r"^\s+([A-Za-z][a-z .]*[a-z]):\s+(\d{1,20})(?:\s|$)")
# pmd-perf-show's sleep lines (pmd_perf_format_overall_stats(): "Sleep
# time" is a "%.0f" of microseconds).
_SLEEP = {re.compile(r"^\s+- sleep iterations:\s+(\d{1,20})(?:\s|$)"):
          "sleep_iterations",
          re.compile(r"^\s+Sleep time \(us\):\s+(\d{1,20})(?:\s|$)"):
          "sleep_us"}
COUNTER_MAX = 2 ** 64


@dataclass
class PmdReading:
    """One PMD thread: its counters and how many rx queues it polls."""
    numa: str
    core: str
    counters: Dict[str, int] = field(default_factory=dict)
    rx_queues: Optional[int] = None


def _counters(text: str, pmds: Dict[Tuple[str, str], PmdReading]) -> int:
    """The counters of pmd-stats-show's or pmd-perf-show's TEXT into
    PMDS; how many lines that looked like a counter were not valid (out
    of range)."""
    invalid = 0
    cur: Optional[PmdReading] = None
    for line in text.splitlines():
        m = _HEADER.match(line)
        if m:
            cur = pmds.setdefault(m.groups(), PmdReading(*m.groups()))
            continue
        if not line.strip():
            continue                # (4.0: a blank line after the header)
        if not line.startswith(" "):
            cur = None              # "main thread:", or anything else
            continue
        if cur is None:
            continue
        m = _VALUE.match(line)
        key = _COUNTERS.get(m.group(1).lower()) if m else None
        value = m.group(2) if m and key else None
        if key is None:
            for rx, name in _SLEEP.items():
                m = rx.match(line)
                if m:
                    key, value = name, m.group(1)
                    break
        if key is None or value is None:
            continue
        n = int(value)
        if n >= COUNTER_MAX:
            invalid += 1
            continue
        cur.counters[key] = n
    return invalid


def parse_pmd_stats(stats: str, rxqs: str,
                    perf: str = "") -> Tuple[List[PmdReading], int]:
    """The PMD threads in pmd-stats-show's STATS, pmd-rxq-show's RXQS and
    pmd-perf-show's PERF ("main thread" left out), and how many lines
    that looked like a counter were not valid (out of range)."""
    pmds: Dict[Tuple[str, str], PmdReading] = {}
    invalid = _counters(stats, pmds)
    if perf:
        # What pmd-stats-show gave stays (its packets received, read a
        # moment before): pmd-perf-show adds the sleep.
        more: Dict[Tuple[str, str], PmdReading] = {}
        invalid += _counters(perf, more)
        for k, p in more.items():
            got = pmds.setdefault(k, PmdReading(*k))
            for name, n in p.counters.items():
                got.counters.setdefault(name, n)
    cur: Optional[PmdReading] = None
    for line in rxqs.splitlines():
        m = _HEADER.match(line)
        if m:
            cur = pmds.setdefault(m.groups(), PmdReading(*m.groups()))
            cur.rx_queues = 0
        elif not line.startswith(" "):
            cur = None
        elif cur is not None and line.strip().startswith("port:"):
            cur.rx_queues = (cur.rx_queues or 0) + 1
    return [pmds[k] for k in sorted(pmds, key=lambda k: (int(k[0]),
                                                         int(k[1])))], \
        invalid


def pmd_families(readings: Iterable[PmdReading]) -> List[Metric]:
    """The PMD families (PMD_METRICS but the exporter's own)."""
    docs = PMD_DOCS

    def fam(name: str) -> Metric:
        m = docs[name]
        cls = CounterMetricFamily if m.kind == "counter" \
            else GaugeMetricFamily
        return cls(m.name, m.help, labels=list(m.labels))
    packets = fam("daqring_pmd_received_packets")
    cycles = fam("daqring_pmd_cycles")
    rxq = fam("daqring_pmd_rx_queues")
    sleep = fam("daqring_pmd_sleep_seconds")
    sleep_iter = fam("daqring_pmd_sleep_iterations")
    for p in readings:
        lab = [p.numa, p.core]
        if "packets_received" in p.counters:
            packets.add_metric(lab, p.counters["packets_received"])
        for state in ("idle", "processing"):
            if state in p.counters:
                cycles.add_metric(lab + [state], p.counters[state])
        if p.rx_queues is not None:
            rxq.add_metric(lab, p.rx_queues)
        if "sleep_us" in p.counters:
            sleep.add_metric(lab, p.counters["sleep_us"] / 1e6)
        if "sleep_iterations" in p.counters:
            sleep_iter.add_metric(lab, p.counters["sleep_iterations"])
    return [packets, cycles, rxq, sleep, sleep_iter]
