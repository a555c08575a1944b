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
import re
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
                   "<= 100 ms, every one: after a change of every "
                   "ring's statistics and while the switch takes one in; "
                   "no PMD cycle spent on it",
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


def render_cpu(body: bytes) -> Optional[float]:
    """daqring_exporter_render_cpu_seconds of a scrape: the exporter's
    CPU time to render the exposition it serves."""
    m = re.search(rb"^daqring_exporter_render_cpu_seconds (\S+)$", body,
                  re.M)
    return float(m.group(1)) if m else None


def complete(body: bytes, series: int) -> bool:
    """BODY is a whole exposition: OpenMetrics' end, SERIES series."""
    return (body.endswith(b"# EOF\n")
            and sum(1 for ln in body.split(b"\n")
                    if ln and not ln.startswith(b"#")) == series)


def update(sw: Any, names: List[str], k: int, timeout: float) -> bytes:
    """Every ring's counters changed (the K-th time), as ovs-vswitchd
    refreshes them (one transaction: the exporter's replica gets them at
    once); what the last ring's series will say."""
    n = len(names)
    args: List[str] = []
    for i, nm in enumerate(names):
        args += ["--", "set", "Interface", nm,
                 "statistics:tx_packets=%d" % (k * n + i + 1),
                 "statistics:tx_bytes=%d" % (64 * (k * n + i + 1)),
                 "statistics:rx_packets=%d" % (k * n + i + 1),
                 "statistics:rx_bytes=%d" % (64 * (k * n + i + 1)),
                 "statistics:occupancy=%d" % (k % 3)]
    sw.vsctl("--no-wait", *args, timeout=timeout)
    return ('daqring_enqueued_packets_total{bridge="br0",ring="%s"} %d'
            % (names[-1], k * n + n)).encode()


def idle(exporter: int, ovsdb: int, cpu0: int) -> int:
    """Waits until process EXPORTER has taken the update in and rendered
    it: busy first (the 2048 rows cost it more than a tick, from CPU0),
    then idle, and OVSDB (ovsdb-server, which sends the update) too; its
    CPU ticks then."""
    idle_since, last = time.monotonic(), (cpu0, 0)
    deadline = time.monotonic() + 60
    while last[0] == cpu0 or time.monotonic() - idle_since < 0.5:
        if time.monotonic() > deadline:
            raise RunError("metrics: the exporter stays busy")
        time.sleep(0.1)
        now = (process_ticks(exporter), process_ticks(ovsdb))
        if now != last:
            idle_since, last = time.monotonic(), now
    return last[0]


def measure(bench: Bench) -> None:
    """n_max daqrings (2048) on a DPDK switch, idle, and the tree's
    ovs-daqring-exporter on the switch (on the cores the PMD is not
    on): SCRAPES scrapes with the rings as they are; SCRAPES times the
    statistics of every ring changed (ovs-vsctl writes them: ovs-
    vswitchd would every stats-update-interval, under traffic), and
    once the exporter is idle again (its IDL took the update in, its
    render thread rendered the exposition and handed it to its scrape
    process), a scrape: the exporter's CPU time per update (its main
    process), of it the render's (the
    daqring_exporter_render_cpu_seconds it serves), and the scrape's
    time; SCRAPES more updates, each scraped at once, while the
    exporter takes it in (a scrape that meets the update: its time, and
    that its scrape process serves a whole exposition, the previous one
    or the new one); the PMD's processing cycles over all the scrapes
    (pmd-stats-show)."""
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
        hz = os.sysconf("SC_CLK_TCK")
        assert sw.ovsdb is not None
        ovsdb = sw.ovsdb.pid

        changed: List[float] = []
        update_s: List[float] = []
        render_s: List[float] = []
        for k in range(SCRAPES):
            cpu0 = process_ticks(exporter.pid)
            want = update(sw, names, k, bench.args.vsctl_timeout)
            update_s.append((idle(exporter.pid, ovsdb, cpu0) - cpu0) / hz)
            got = scrape(url)
            if want not in got["body"]:
                raise RunError("metrics: the exporter, idle, does not "
                               "serve the new statistics")
            changed.append(got["s"])
            render_s.append(render_cpu(got["body"]) or 0.0)
        # Scrapes that meet the update: made as soon as the transaction
        # is committed.
        during: List[float] = []
        served_new = 0
        for k in range(SCRAPES, 2 * SCRAPES):
            cpu0 = process_ticks(exporter.pid)
            want = update(sw, names, k, bench.args.vsctl_timeout)
            got = scrape(url)
            if not complete(got["body"], out["series"]):
                raise RunError("metrics: a scrape during an update "
                               "served a partial exposition")
            served_new += want in got["body"]
            during.append(got["s"])
            idle(exporter.pid, ovsdb, cpu0)
        c1 = processing_cycles(sw.appctl("dpif-netdev/pmd-stats-show"))
        out["same_s"] = summarize(same)
        out["changed_s"] = summarize(changed)
        out["during_s"] = summarize(during)
        out["during_served_new"] = served_new
        out["update_cpu_s"] = summarize(update_s)
        out["render_cpu_s"] = summarize(render_s)
        out["pmd_processing_cycles"] = c1 - c0
        bench.say("metrics: %d rings, %d series, %d bytes: scrape %.0f ms "
                  "(first), %.1f ms median unchanged, %.1f ms median after "
                  "every ring's statistics changed, %.1f ms median during "
                  "such an update; the exporter's CPU per update %.0f ms "
                  "median, of it the render %.0f ms; PMD processing cycles "
                  "meanwhile %d"
                  % (n, out["series"], out["bytes"], 1000 * out["first_s"],
                     1000 * out["same_s"]["median"],
                     1000 * out["changed_s"]["median"],
                     1000 * out["during_s"]["median"],
                     1000 * out["update_cpu_s"]["median"],
                     1000 * out["render_cpu_s"]["median"], c1 - c0))
    finally:
        if exporter is not None:
            stop_process(exporter)
        sw.stop(fast=True)


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ms(st: Optional[Dict[str, Any]]) -> str:
    return fmt_stat(summarize([1000 * x for x in (st or {}).get(
        "values", [])]))


def metrics_verdicts(m: Optional[Dict[str, Any]],
                     add: Callable[..., None]) -> None:
    """The row of TARGETS: every scrape within the target, those after
    a change of every ring's statistics and those aimed at such a change
    while the exporter and ovs-vswitchd take it in (Prometheus's own
    scrapes, not aimed, meet that work about 4% of the time: 0.2 s per
    stats-update-interval, 5 s; a scrape that does must still answer in
    time).  Measured on 2026-12-02 (Intel, base 3.1): with the HTTP
    server a thread of the exporter, the aimed scrapes took 39-240 ms
    (31-171 ms once they waited 50 ms at most for ovs-vswitchd),
    waiting for the interpreter while the IDL parsed the rows and the
    render ran, and for ovs-vswitchd's main loop taking the same update
    in; served by the scrape process, which waits for neither,
    17-27 ms."""
    if m and m.get("changed_s"):
        during = m.get("during_s") or {}
        add("scrape_2048", "%s ms after every ring's statistics changed, "
            "%s ms aimed at such an update, %s ms unchanged "
            "(%d scrapes each; %d series); the exporter's CPU per update "
            "%s ms (the render %s ms), not per scrape; PMD processing "
            "cycles during the scrapes: %d"
            % (_ms(m["changed_s"]), _ms(during or None),
               _ms(m["same_s"]), m["changed_s"]["n"], m["series"],
               _ms(m.get("update_cpu_s")), _ms(m.get("render_cpu_s")),
               m["pmd_processing_cycles"]),
            m["changed_s"]["max"] <= 0.100
            and bool(during) and during["max"] <= 0.100
            and m["pmd_processing_cycles"] == 0)
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
                 "%d bytes.  The exporter renders the exposition once per "
                 "change of its replica, off the scrape path, and its "
                 "scrape process, which does nothing else, serves the "
                 "last one rendered.  Scrape time (request to "
                 "last byte): the first that served every ring %.0f ms; "
                 "with the rings unchanged %s "
                 "ms; after every ring's statistics changed (written with "
                 "ovs-vsctl as ovs-vswitchd refreshes them, the scrape "
                 "made once the exporter is idle again) %s ms; made at "
                 "once, during such an update %s ms (%d of %d served the "
                 "new statistics, the others the previous exposition, "
                 "every one whole).  The cost moved off the scrape: the "
                 "exporter's CPU time per update %s ms, of it the render "
                 "of both formats (daqring_exporter_render_cpu_seconds) "
                 "%s ms, the rest "
                 "its IDL taking the 2048 rows in.  PMD processing cycles "
                 "over the scrapes: %d."
                 % (m["rings"], m["series"], m["ring_series"], m["bytes"],
                    1000 * m["first_s"], _ms(m["same_s"]),
                    _ms(m["changed_s"]), _ms(m.get("during_s")),
                    m.get("during_served_new", 0),
                    (m.get("during_s") or {}).get("n", 0),
                    _ms(m.get("update_cpu_s")), _ms(m.get("render_cpu_s")),
                    m["pmd_processing_cycles"]))
        L.append("")
    return L
