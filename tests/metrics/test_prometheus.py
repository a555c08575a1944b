# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ovs-daqring-exporter scraped by a real Prometheus server (Debian's
prometheus): what Prometheus collected, asked through its HTTP query API
(/api/v1/query), equals the switch's own statistics; the alerting rules
load and fire; the dashboard's queries run.

Two switches: a bare ovsdb-server whose daqring rows the test writes
(every value chosen, no ovs-vswitchd: every base), and (marked machine)
a DPDK ovs-vswitchd with daqrings that packets really pass through."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

from ovs_daqring import hugepages
from ovs_daqring.process import die_with_parent, stop_process
from ovs_daqring.sandbox import Sandbox, dpdk_settings, tree_binaries

from fabric_helpers import free_ports, wait_for

pytestmark = pytest.mark.every_base

TOP = Path(__file__).resolve().parent.parent.parent
EXPORTER = TOP / "utilities" / "ovs-daqring-exporter"
ALERTS = TOP / "utilities" / "prometheus" / "daqring-alerts.yml"
DASHBOARD = TOP / "utilities" / "prometheus" / "daqring-dashboard.json"
OVS = TOP / "ovs"
SCHEMA = OVS / "vswitchd" / "vswitch.ovsschema"
# The tools' interpreter (Documentation/internals/python.rst).
PYTHON = "/usr/bin/python3"
# A bound on a hang, not a timing: Prometheus scrapes every second, but
# ovs-vswitchd refreshes statistics every 5 s and a loaded machine is
# slow.
WAIT_S = 60

# Statistics key -> the series that carries it (its labels: bridge, ring,
# and these).
COUNTERS = {
    "tx_packets": ("daqring_enqueued_packets_total", {}),
    "tx_bytes": ("daqring_enqueued_bytes_total", {}),
    "rx_packets": ("daqring_dequeued_packets_total", {}),
    "rx_bytes": ("daqring_dequeued_bytes_total", {}),
    "ring_full_drops": ("daqring_dropped_packets_total",
                        {"reason": "ring_full"}),
    "loop_drops": ("daqring_dropped_packets_total", {"reason": "loop"}),
    "egress_drops": ("daqring_dropped_packets_total",
                     {"reason": "egress_down"}),
    "occupancy": ("daqring_occupancy_packets", {}),
    "high_watermark": ("daqring_high_watermark_packets", {}),
    "shaper_intervals": ("daqring_shaper_intervals_total", {}),
    "shaper_burst_bytes": ("daqring_shaper_burst_excess_bytes", {}),
    "egress_share_waits": ("daqring_egress_share_waits_total", {}),
}


def tool(name: str) -> str:
    for d in ("ovsdb", "utilities", "vswitchd"):
        p = OVS / d / name
        if p.is_file() and os.access(str(p), os.X_OK):
            return str(p)
    found = shutil.which(name)
    if not found:
        pytest.skip("%s not found (build ovs/)" % name)
    return found


def needs() -> None:
    for what, ok in (("prometheus (Debian: prometheus)",
                      shutil.which("prometheus")),
                     ("python3-prometheus-client", os.path.isdir(
                         "/usr/lib/python3/dist-packages/prometheus_client")),
                     ("the OVS schema (build ovs/)", SCHEMA.exists())):
        if not ok:
            pytest.skip("needs " + what)


def free_port() -> int:
    return free_ports(1)[0]


def http_get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def parse_map(text: str) -> Dict[str, str]:
    """ovs-vsctl's "get" of a map column."""
    return {k: v.strip('"') for k, v in
            re.findall(r'([a-z_]+)=("[^"]*"|[^,}]*)', text)}


class Exporter:
    """ovs-daqring-exporter (the tree's, in the foreground) on DB."""

    def __init__(self, db: str, workdir: str, vswitchd: str) -> None:
        self.port = free_port()
        self.dir = workdir
        self.proc = subprocess.Popen(
            [PYTHON, str(EXPORTER), "--db", db,
             "--metrics-address", "127.0.0.1:%d" % self.port,
             "--unixctl=" + os.path.join(workdir, "exporter.ctl"),
             "--log-file=" + os.path.join(workdir, "exporter.log"),
             "--vswitchd", vswitchd,
             "-vconsole:off", "--timeout", "10"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent)
        self.url = "http://127.0.0.1:%d/metrics" % self.port
        wait_for(self.serving, "the exporter's endpoint")

    def serving(self) -> bool:
        assert self.proc.poll() is None, "the exporter exited:\n" + \
            self.log()
        try:
            return "daqring_exporter_ovsdb_up" in http_get(self.url)
        except OSError:
            return False

    def log(self) -> str:
        try:
            with open(os.path.join(self.dir, "exporter.log")) as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def stop(self) -> None:
        stop_process(self.proc)


class Prometheus:
    """A Prometheus server of its own (temporary storage, loopback),
    scraping TARGET (HOST:PORT, or a list of them) every second, as job
    JOB, with the project's alerting rules."""

    def __init__(self, target: Any, workdir: str,
                 job: str = "daqring") -> None:
        self.port = free_port()
        self.dir = workdir
        config = os.path.join(workdir, "prometheus.yml")
        targets = [target] if isinstance(target, str) else list(target)
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n"
                    "  evaluation_interval: 1s\n"
                    "rule_files:\n  - %s\n"
                    "scrape_configs:\n  - job_name: %s\n"
                    "    static_configs:\n      - targets: %s\n"
                    % (json.dumps(str(ALERTS)), job, json.dumps(targets)))
        self.log_path = os.path.join(workdir, "prometheus.log")
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [shutil.which("prometheus") or "prometheus",
                 "--config.file=" + config,
                 "--storage.tsdb.path=" + os.path.join(workdir, "tsdb"),
                 "--web.listen-address=127.0.0.1:%d" % self.port,
                 "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent)
        self.api = "http://127.0.0.1:%d" % self.port
        wait_for(self.ready, "Prometheus to be ready")

    def ready(self) -> bool:
        assert self.proc.poll() is None, "prometheus exited:\n" + \
            open(self.log_path).read()[-3000:]
        try:
            http_get(self.api + "/-/ready")
            return True
        except OSError:
            return False

    def get(self, path: str, **params: str) -> Any:
        url = self.api + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        reply = json.loads(http_get(url))
        assert reply["status"] == "success", reply
        return reply["data"]

    def query(self, expr: str) -> List[Dict[str, Any]]:
        data = self.get("/api/v1/query", query=expr)
        assert data["resultType"] == "vector", data
        return list(data["result"])

    def value(self, expr: str) -> Optional[float]:
        """The single value of EXPR now, or None if it has no sample."""
        r = self.query(expr)
        assert len(r) <= 1, r
        return float(r[0]["value"][1]) if r else None

    def wait_value(self, expr: str, want: float) -> None:
        got: List[Optional[float]] = []

        def same() -> bool:
            got[:] = [self.value(expr)]
            return got[0] == want
        try:
            wait_for(same, "%s == %s" % (expr, want))
        except AssertionError:
            raise AssertionError("%s: Prometheus has %s, the switch %s"
                                 % (expr, got[0], want))

    def stop(self) -> None:
        stop_process(self.proc, grace=20)


def selector(name: str, **labels: str) -> str:
    return "%s{%s}" % (name, ",".join('%s="%s"' % kv
                                      for kv in sorted(labels.items())))


def assert_rings_equal(prom: Prometheus, rings: Dict[str, str],
                       stats: Callable[[str], Dict[str, str]]) -> None:
    """Every ring (name -> bridge) is in Prometheus, with each counter
    equal to the switch's statistic (stats(ring))."""
    prom.wait_value("count(daqring_info)", len(rings))
    for ring, bridge in sorted(rings.items()):
        st = stats(ring)
        assert set(COUNTERS) <= set(st), sorted(set(COUNTERS) - set(st))
        prom.wait_value(selector("daqring_info", ring=ring, bridge=bridge),
                        1)
        for key, (name, extra) in COUNTERS.items():
            prom.wait_value(selector(name, ring=ring, bridge=bridge,
                                     **extra), int(st[key]))
        refused = (int(st["tx_dropped"]) - int(st["ring_full_drops"])
                   - int(st["loop_drops"]))
        prom.wait_value(selector("daqring_dropped_packets_total",
                                 ring=ring, bridge=bridge,
                                 reason="refused"), max(0, refused))


def dashboard_queries() -> List[str]:
    """The dashboard's panel queries, Grafana's variables filled in."""
    dash = json.loads(DASHBOARD.read_text())
    out = []
    for panel in dash["panels"]:
        for t in panel.get("targets", []):
            e = t["expr"].replace("$__rate_interval", "1m")
            out.append(re.sub(r"\$\{?[a-z]+\}?", ".*", e))
    return out


# ================================================ a database of our own
@pytest.fixture
def bare_db() -> Iterator[Dict[str, Any]]:
    """ovsdb-server with the Open_vSwitch schema and no ovs-vswitchd; the
    test writes the daqrings' statistics and status itself."""
    needs()
    d = tempfile.mkdtemp(prefix="daqmetrics-")
    sock = os.path.join(d, "db.sock")
    subprocess.run([tool("ovsdb-tool"), "create", os.path.join(d, "conf.db"),
                    str(SCHEMA)], check=True)
    server = subprocess.Popen(
        [tool("ovsdb-server"), os.path.join(d, "conf.db"),
         "--remote=punix:" + sock,
         "--unixctl=" + os.path.join(d, "ovsdb-server.ctl"),
         "--log-file=" + os.path.join(d, "ovsdb-server.log"),
         "-vconsole:off"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)

    def vsctl(*args: str) -> str:
        return subprocess.run(
            [tool("ovs-vsctl"), "--db=unix:" + sock, "--no-wait",
             "--timeout=30"] + list(args), check=True, capture_output=True,
            text=True, timeout=60).stdout.strip()
    try:
        wait_for(lambda: os.path.exists(sock), "ovsdb-server's socket",
                 20)
        vsctl("init")
        yield {"db": "unix:" + sock, "dir": d, "vsctl": vsctl,
               "server": server}
    finally:
        stop_process(server)
        shutil.rmtree(d, ignore_errors=True)


def stat_map(**kw: int) -> str:
    base = dict.fromkeys(list(COUNTERS) + ["tx_dropped", "rx_dropped",
                                           "rx_errors", "tx_errors"], 0)
    base.update(kw)
    return "statistics={%s}" % ",".join("%s=%d" % kv
                                        for kv in sorted(base.items()))


def status_map(**kw: str) -> str:
    base = {"ring_size": "1024", "max_burst": "32", "poll_interval": "0",
            "max_rate": "0", "flow_buckets": "0"}
    base.update(kw)
    return "status={%s}" % ",".join('%s="%s"' % kv
                                    for kv in sorted(base.items()))


def test_prometheus_scrapes_the_exporter(bare_db: Dict[str, Any]) -> None:
    """Three daqrings on two bridges (and a port that is no daqring):
    Prometheus holds each with the values the database holds, follows a
    change, fires the drop and watermark alerts for the rings concerned
    only, runs every dashboard query; promtool accepts a scrape; the
    exporter survives its database going away and says so."""
    vsctl = bare_db["vsctl"]
    vsctl("add-br", "br0", "--", "add-br", "br1",
          "--", "add-port", "br0", "p1",
          "--", "add-port", "br0", "r1", "--", "set", "Interface", "r1",
          "type=daqring", stat_map(tx_packets=1000, tx_bytes=64000,
                                   rx_packets=990, rx_bytes=63360,
                                   occupancy=10, high_watermark=100),
          status_map(egress="p1", egress_state="bound",
                     egress_max_rate="8000000", egress_sharing_rings="1",
                     egress_max_burst_bytes="3000"),
          "options:egress=p1",
          "--", "add-port", "br0", "r2", "--", "set", "Interface", "r2",
          "type=daqring", stat_map(tx_packets=7, tx_dropped=3,
                                   ring_full_drops=1, loop_drops=1),
          status_map(max_rate="1000000000"),
          "--", "add-port", "br1", "r3", "--", "set", "Interface", "r3",
          "type=daqring", stat_map(high_watermark=900, occupancy=5),
          status_map(poll_interval="10"))
    rings = {"r1": "br0", "r2": "br0", "r3": "br1"}

    def stats(ring: str) -> Dict[str, str]:
        return parse_map(vsctl("get", "Interface", ring, "statistics"))

    # No ovs-vswitchd: no PMD metrics.
    exporter = Exporter(bare_db["db"], bare_db["dir"],
                        os.path.join(bare_db["dir"], "ovs-vswitchd.ctl"))
    prom = None
    try:
        p = subprocess.run([shutil.which("promtool") or "promtool",
                            "check", "metrics"], input=http_get(
                                exporter.url),
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and not p.stdout + p.stderr, \
            p.stdout + p.stderr
        prom = Prometheus("127.0.0.1:%d" % exporter.port, bare_db["dir"])
        prom.wait_value('up{job="daqring"}', 1)
        assert_rings_equal(prom, rings, stats)
        prom.wait_value(selector("daqring_egress_share_rate_bytes_per_"
                                 "second", bridge="br0", ring="r1",
                                 egress="p1"), 1000000)
        prom.wait_value(selector("daqring_shaping_rate_bytes_per_second",
                                 bridge="br0", ring="r2"), 125000000)
        prom.wait_value('daqring_rings{bridge="br0"}', 2)
        prom.wait_value("daqring_exporter_vswitchd_up", 0)
        prom.wait_value("count(daqring_pmd_cycles_total) or vector(0)", 0)
        # A change of the switch's statistics reaches Prometheus; a ring
        # that starts dropping fires DaqringDropping, r3's watermark (88%
        # of its ring) DaqringHighWatermarkHigh, for no other ring.
        vsctl("set", "Interface", "r1", stat_map(
            tx_packets=2000, tx_bytes=128000, rx_packets=1900,
            rx_bytes=121600, tx_dropped=5, ring_full_drops=5,
            occupancy=12, high_watermark=300))
        assert_rings_equal(prom, rings, stats)

        def firing(name: str) -> List[str]:
            return sorted(a["labels"]["ring"] for a in
                          prom.get("/api/v1/alerts")["alerts"]
                          if a["labels"]["alertname"] == name
                          and a["state"] == "firing")
        wait_for(lambda: firing("DaqringDropping") == ["r1"],
                 "DaqringDropping for r1")
        wait_for(lambda: firing("DaqringHighWatermarkHigh") == ["r3"],
                 "DaqringHighWatermarkHigh for r3")
        rules = [r for g in prom.get("/api/v1/rules")["groups"]
                 for r in g["rules"]]
        assert len(rules) >= 6
        assert all(r["health"] == "ok" for r in rules), rules
        for expr in dashboard_queries():
            prom.query(expr)
        # The database goes: the exporter says so, serves no stale ring.
        stop_process(bare_db["server"])
        prom.wait_value("daqring_exporter_ovsdb_up", 0)
        prom.wait_value("count(daqring_info) or vector(0)", 0)
        assert exporter.proc.poll() is None
    finally:
        if prom is not None:
            prom.stop()
        exporter.stop()


# ============================================== a switch with real traffic
HUGEPAGES_NEEDED_MB = 256


def _switch_skip_reason() -> Optional[str]:
    if os.geteuid() != 0:
        return "needs root (network namespace, DPDK)"
    bins = tree_binaries(str(OVS))
    missing = bins.check()
    if missing:
        return "the patched OVS is not built (%s): run make" % missing
    if hugepages.free_mb() < HUGEPAGES_NEEDED_MB:
        return "needs %d MB of free huge pages" % HUGEPAGES_NEEDED_MB
    if not hugepages.hugetlbfs_mounted():
        return "no hugetlbfs is mounted"
    return None


@pytest.mark.machine
def test_prometheus_counters_equal_a_real_switch(tmp_path: Path) -> None:
    """A DPDK switch with three daqrings: r1 bound to its egress port,
    r2 unbound, r3 so small and slow that a burst overflows it.  Packets
    sent into each; once every ring has drained (dequeued = enqueued, the
    statistics still), what Prometheus holds of each ring equals the
    switch's own statistics, drops by reason included."""
    needs()
    reason = _switch_skip_reason()
    if reason:
        pytest.skip(reason)
    ns = "daqmetrics-%d" % os.getpid()
    work = tempfile.mkdtemp(prefix="daqmetrics-sw-")
    sw = Sandbox(tree_binaries(str(OVS)), work, netns=ns, own_netns=True)
    exporter = prom = None
    try:
        sw.start(dpdk_settings("0x2", ["other_config:dpdk-socket-mem=%d"
                                       % HUGEPAGES_NEEDED_MB],
                               "--no-pci --in-memory --file-prefix=" + ns),
                 vswitchd_args=["-vdpif_netdev:file:warn"])
        sw.vsctl("add-br", "br0", "--", "set", "Bridge", "br0",
                 "datapath_type=netdev", "fail_mode=secure",
                 "--", "add-port", "br0", "p1", "--", "set", "Interface",
                 "p1", "type=internal",
                 "--", "add-port", "br0", "r1", "--", "set", "Interface",
                 "r1", "type=daqring", "options:ring-size=1024",
                 "options:egress=p1",
                 "--", "add-port", "br0", "r2", "--", "set", "Interface",
                 "r2", "type=daqring", "options:ring-size=1024",
                 "--", "add-port", "br0", "r3", "--", "set", "Interface",
                 "r3", "type=daqring", "options:ring-size=16",
                 "options:max-rate=100000", "options:max-burst=1")
        wait_for(lambda: sw.vsctl("get", "Interface", "r1",
                                  "status:egress_state").strip() == "bound",
                 "r1 bound to p1")
        # A broadcast frame of a local experimental EtherType.
        frame = "ffffffffffff" "020000000001" "88b5" + "00" * 46
        for ring, copies in (("r1", 5), ("r2", 3), ("r3", 40)):
            sw.ofctl("packet-out", "br0", "in_port=controller packet=%s "
                     "actions=%s" % (frame, ",".join(["output:" + ring]
                                                     * copies)))

        def stats(ring: str) -> Dict[str, str]:
            return parse_map(sw.vsctl("get", "Interface", ring,
                                      "statistics"))

        def drained(ring: str) -> bool:
            st = stats(ring)
            return (int(st.get("tx_packets", -1)) > 0
                    and st.get("tx_packets") == st.get("rx_packets")
                    and st.get("occupancy") == "0")
        for ring in ("r1", "r2", "r3"):
            wait_for(lambda: drained(ring), "%s to drain" % ring, 120)
        assert int(stats("r3")["ring_full_drops"]) > 0, stats("r3")
        exporter = Exporter(sw.db, str(tmp_path), sw.ctl)
        prom = Prometheus("127.0.0.1:%d" % exporter.port, str(tmp_path))
        assert_rings_equal(prom, {"r1": "br0", "r2": "br0", "r3": "br0"},
                           stats)
        prom.wait_value(selector("daqring_egress_bound", bridge="br0",
                                 ring="r1", egress="p1"), 1)
        prom.wait_value(selector("daqring_size_packets", bridge="br0",
                                 ring="r3"), 16)
        prom.wait_value(selector("daqring_shaping_rate_bytes_per_second",
                                 bridge="br0", ring="r3"), 12500)
        # The PMD thread (core 1) polls the three rings; what it received
        # (every packet that left a ring) is what the switch says.
        prom.wait_value("daqring_exporter_vswitchd_up", 1)
        from ovs_daqring.metrics.pmd import parse_pmd_stats
        pmds, _ = parse_pmd_stats(
            sw.appctl("dpif-netdev/pmd-stats-show"),
            sw.appctl("dpif-netdev/pmd-rxq-show"))
        assert [(p.core, p.rx_queues) for p in pmds] == [("1", 3)], pmds
        received = pmds[0].counters["packets_received"]
        assert received == sum(int(stats(r)["rx_packets"])
                               for r in ("r1", "r2", "r3"))
        prom.wait_value(selector("daqring_pmd_received_packets_total",
                                 core="1", numa=pmds[0].numa), received)
        prom.wait_value(selector("daqring_pmd_rx_queues", core="1",
                                 numa=pmds[0].numa), 3)
        # (OVS 4.0's pmd-stats-show prints no cycle counts: no series.)
        if "idle" in pmds[0].counters:
            assert (prom.value(selector("daqring_pmd_cycles_total",
                                        core="1", numa=pmds[0].numa,
                                        state="idle")) or 0) > 0
    finally:
        if prom is not None:
            prom.stop()
        if exporter is not None:
            exporter.stop()
        sw.stop()
        shutil.rmtree(work, ignore_errors=True)
        # DPDK's runtime directory of the prefix (made even with
        # --in-memory: its telemetry socket).
        shutil.rmtree(os.path.join(hugepages.DPDK_RUNDIR, ns),
                      ignore_errors=True)
