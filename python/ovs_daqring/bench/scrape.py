# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-bench part "metrics": a Prometheus scrape of a switch with 2048
daqrings (ovs-daqring-exporter(8), Documentation/topics/monitoring.rst):
the series it serves, the time a scrape takes, and the PMD's processing
cycles meanwhile; the target, its verdict and the summary's section."""

import os
import subprocess
import sys
import time
import urllib.request
from typing import Any, Callable, Dict, List, Optional

from ..process import RunError, die_with_parent, read_text, stop_process
from .parse import parse_task_stat
from .runner import Bench
from .scale import wait_polled
from .stats import fmt_stat, summarize

TARGETS = {
    "scrape_2048": "a Prometheus scrape of a switch with 2048 daqrings "
                   "<= 100 ms, no PMD cycle spent on it",
}
# What Prometheus asks for (its scrapes prefer OpenMetrics).
ACCEPT = ("application/openmetrics-text;version=1.0.0,application/"
          "openmetrics-text;version=0.0.1;q=0.75,text/plain;"
          "version=0.0.4;q=0.5,*/*;q=0.1")
SCRAPES = 10
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def scrape(url: str) -> Dict[str, Any]:
    """One scrape as Prometheus makes it: its wall time (request to the
    last byte), its size and series (the sample lines)."""
    req = urllib.request.Request(url, headers={"Accept": ACCEPT})
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=60) as r:
        body = r.read()
    took = time.monotonic() - t0
    series = sum(1 for ln in body.split(b"\n")
                 if ln and not ln.startswith(b"#"))
    return {"s": took, "bytes": len(body), "series": series,
            "body": body}


def process_ticks(pid: int) -> int:
    """The CPU time of process PID (all its threads), in clock ticks."""
    return parse_task_stat(read_text("/proc/%d/stat" % pid))


def processing_cycles(text: str) -> int:
    # (prometheus_client, which the metrics package needs, is only
    # recommended by the RPM: daq-bench's other parts run without it.)
    from ..metrics.pmd import parse_pmd_stats
    pmds, _ = parse_pmd_stats(text, "")
    return sum(p.counters.get("processing", 0) for p in pmds)


def measure(bench: Bench) -> None:
    """n_max daqrings (2048) on a DPDK switch, idle, and the tree's
    ovs-daqring-exporter on the switch (on the cores the PMD is not
    on): SCRAPES scrapes with the rings as they are (their statistics
    the same: what a scrape keeps from the last one serves again), then
    SCRAPES scrapes each made after the statistics of every ring
    changed (ovs-vsctl writes them: ovs-vswitchd would every
    stats-update-interval, under traffic), and the PMD's processing
    cycles over the scrapes (pmd-stats-show)."""
    n = bench.args.scale_counts[0]
    out: Dict[str, Any] = {"rings": n}
    bench.res["metrics"] = out
    sw = bench.switch(bench.patched)
    exporter = None
    try:
        names = ["r%04d" % i for i in range(n)]
        sw.add_ports([(nm, 1000 + i, ["type=daqring",
                                      "options:ring-size=32"])
                      for i, nm in enumerate(names)],
                     timeout=bench.args.vsctl_timeout)
        wait_polled(sw, names, bench.args.vsctl_timeout)
        # ovs-vswitchd writes the statistics it has every
        # stats-update-interval (and once when it changes): not while
        # this part writes its own.
        sw.vsctl("set", "Open_vSwitch", ".",
                 "other_config:stats-update-interval=3600000")
        port = _free_port()
        url = "http://127.0.0.1:%d/metrics" % port
        cpus = bench.other_cpus or bench.all_cpus

        def pin() -> None:
            die_with_parent()
            os.sched_setaffinity(0, cpus)
        log = open(os.path.join(sw.dir, "exporter.out"), "w")
        exporter = subprocess.Popen(
            [sys.executable, os.path.join(TOP, "utilities",
                                          "ovs-daqring-exporter"),
             "--db", sw.db, "--vswitchd", sw.ctl,
             "--metrics-address", "127.0.0.1:%d" % port,
             "--unixctl", os.path.join(sw.dir, "exporter.ctl"),
             "--log-file=" + os.path.join(sw.dir, "exporter.log"),
             "-vconsole:off"], stdout=log, stderr=subprocess.STDOUT,
            env=sw.env, preexec_fn=pin)
        log.close()
        deadline = time.monotonic() + 60
        while True:
            if exporter.poll() is not None:
                raise RunError("metrics: the exporter exited (%s)"
                               % os.path.join(sw.dir, "exporter.out"))
            try:
                first = scrape(url)
                if b"daqring_rings" in first["body"]:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RunError("metrics: the exporter does not serve")
            time.sleep(0.2)
        out["first_s"] = first["s"]
        out["series"] = first["series"]
        out["bytes"] = first["bytes"]
        out["ring_series"] = sum(
            1 for ln in first["body"].split(b"\n")
            if ln.startswith(b"daqring_") and b'ring="' in ln)
        c0 = processing_cycles(sw.appctl("dpif-netdev/pmd-stats-show"))
        same = []
        for _ in range(SCRAPES):
            same.append(scrape(url)["s"])
        changed: List[float] = []
        update_s: List[float] = []
        hz = os.sysconf("SC_CLK_TCK")
        assert sw.ovsdb is not None
        ovsdb = sw.ovsdb.pid
        for k in range(SCRAPES):
            # Every ring's counters, as ovs-vswitchd refreshes them (one
            # transaction: the exporter's replica gets them at once).
            args: List[str] = []
            for i, nm in enumerate(names):
                args += ["--", "set", "Interface", nm,
                         "statistics:tx_packets=%d" % (k * n + i + 1),
                         "statistics:tx_bytes=%d" % (64 * (k * n + i + 1)),
                         "statistics:rx_packets=%d" % (k * n + i + 1),
                         "statistics:rx_bytes=%d" % (64 * (k * n + i + 1)),
                         "statistics:occupancy=%d" % (k % 3)]
            cpu0 = process_ticks(exporter.pid)
            sw.vsctl("--no-wait", *args, timeout=bench.args.vsctl_timeout)
            # The exporter's main loop takes the update into its replica
            # (the Python IDL parses 2048 rows: its CPU time grows); the
            # scrape measured comes once it is done, as most of
            # Prometheus's scrapes do (one every scrape interval, the
            # update one every stats-update-interval).
            # (Busy first: the 2048 rows cost it more than a tick; then
            # idle, and ovsdb-server too, which sends the update.)
            idle_since, last = time.monotonic(), (cpu0, 0)
            deadline = time.monotonic() + 60
            while (last[0] == cpu0
                   or time.monotonic() - idle_since < 0.5):
                if time.monotonic() > deadline:
                    raise RunError("metrics: the exporter stays busy")
                time.sleep(0.1)
                now = (process_ticks(exporter.pid), process_ticks(ovsdb))
                if now != last:
                    idle_since, last = time.monotonic(), now
            update_s.append((last[0] - cpu0) / hz)
            want = ('daqring_enqueued_packets_total{bridge="br0",ring="%s"} '
                    '%d' % (names[-1], k * n + n)).encode()
            got = scrape(url)
            if want not in got["body"]:
                # Not taken in yet after all: the scrape that serves it
                # is measured, and counted as one that met the update.
                out["met_update"] = out.get("met_update", 0) + 1
                deadline = time.monotonic() + 30
                while want not in got["body"]:
                    if time.monotonic() > deadline:
                        raise RunError("metrics: the exporter does not "
                                       "serve the new statistics")
                    time.sleep(0.05)
                    got = scrape(url)
            changed.append(got["s"])
        c1 = processing_cycles(sw.appctl("dpif-netdev/pmd-stats-show"))
        out["same_s"] = summarize(same)
        out["changed_s"] = summarize(changed)
        out["update_cpu_s"] = summarize(update_s)
        out["pmd_processing_cycles"] = c1 - c0
        bench.say("metrics: %d rings, %d series, %d bytes: scrape %.0f ms "
                  "(first), %.1f ms median unchanged, %.1f ms median after "
                  "every ring's statistics changed (the exporter's CPU "
                  "to take that change in: %.0f ms median); PMD "
                  "processing cycles meanwhile %d"
                  % (n, out["series"], out["bytes"], 1000 * out["first_s"],
                     1000 * out["same_s"]["median"],
                     1000 * out["changed_s"]["median"],
                     1000 * out["update_cpu_s"]["median"], c1 - c0))
    finally:
        if exporter is not None:
            stop_process(exporter)
        sw.stop(fast=True)


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def metrics_verdicts(m: Optional[Dict[str, Any]],
                     add: Callable[..., None]) -> None:
    """The row of TARGETS."""
    if m and m.get("changed_s"):
        ch, same = m["changed_s"], m["same_s"]
        add("scrape_2048", "%s ms after every ring's statistics changed, "
            "%s ms unchanged (%d scrapes each; %d series); PMD processing "
            "cycles during the scrapes: %d"
            % (fmt_stat(summarize([1000 * x for x in ch["values"]])),
               fmt_stat(summarize([1000 * x for x in same["values"]])),
               ch["n"], m["series"], m["pmd_processing_cycles"]),
            ch["max"] <= 0.100 and m["pmd_processing_cycles"] == 0)
    else:
        add("scrape_2048", "not run" if not m else
            "failed: %s" % m.get("error"), None)


def markdown(m: Optional[Dict[str, Any]]) -> List[str]:
    """The summary's section (none if the part measured nothing)."""
    L: List[str] = []
    if m and m.get("changed_s"):
        L.append("## A Prometheus scrape of 2048 daqrings")
        L.append("")
        L.append("ovs-daqring-exporter on a switch with %d idle daqrings "
                 "(the cores the PMD is not on), scraped as Prometheus "
                 "does (OpenMetrics): %d series (%d of them the rings'), "
                 "%d bytes.  Scrape time (request to last byte): first "
                 "%.0f ms; with the rings unchanged since the last scrape "
                 "%s ms; after every ring's statistics changed (written "
                 "with ovs-vsctl as ovs-vswitchd refreshes them, the "
                 "scrape made once the exporter has taken the change in, "
                 "which costs it %s ms of CPU; %d of them met the update "
                 "still in progress) %s ms.  "
                 "PMD processing cycles over the scrapes: %d."
                 % (m["rings"], m["series"], m["ring_series"], m["bytes"],
                    1000 * m["first_s"],
                    fmt_stat(summarize([1000 * x
                                        for x in m["same_s"]["values"]])),
                    fmt_stat(summarize([1000 * x for x in m.get(
                        "update_cpu_s", {}).get("values", [])])),
                    m.get("met_update", 0),
                    fmt_stat(summarize([1000 * x for x in
                                        m["changed_s"]["values"]])),
                    m["pmd_processing_cycles"]))
        L.append("")
    return L
