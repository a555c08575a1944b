"""pytest for the deep-FIFO peer, shared links and the hog (issue 28):
daq-incast's deep-fifo mode, --dcms-per-host, --hog, the CPU per byte,
and daq-bench's peers part.

Everything but the last test is pure and needs no root.
test_deep_fifo_incast runs a tiny incast through the Linux bridge (root,
network namespaces; no DPDK, no switch) and checks its outcomes."""

import json
import os
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Optional

import pytest

from ovs_daqring.bench import parts, peers, summary
from ovs_daqring.cmd import daq_bench as bench_cli
from ovs_daqring.hosts import ConfigError
from ovs_daqring.incast import describe, modes, sizing, stats, topology
from incast_helpers import cfg, programmed_map

pytestmark = pytest.mark.machine

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(os.path.dirname(HERE), "utilities", "daq-incast")


# ------------------------------------------------------------ options
def test_deep_limit_option() -> None:
    c = cfg("--modes", "daqring")
    assert c.deep_limits == ["auto"] and "deep-fifo" not in c.modes
    c = cfg("--modes", "daqring", "--deep-limit", "auto,auto/4,1MiB")
    assert c.deep_limits == ["auto", "auto/4", "1048576"]
    assert c.modes == ["daqring", "deep-fifo"]
    for bad in ("100", "auto/0", "auto/x", "fast", "", "auto,auto",
                "1MiB,1048576"):
        with pytest.raises(ConfigError, match="--deep-limit"):
            cfg("--deep-limit", bad)


def test_deep_limit_is_the_rings_memory() -> None:
    """auto: the bytes of full-size frames (with the link's per-frame
    overhead, as the link's tbf counts them) that the daqrings of the
    egress hold; auto/N a fraction; a size as given."""
    c = cfg("--ring-size", "1000")
    assert c.deep_limit("auto", [0]) == 1000 * (1514 + 24)
    assert c.deep_limit("auto/4", [0]) == 1000 * 1538 // 4
    assert c.deep_limit("65536", [0]) == 65536
    c = cfg("--ring-size", "1000", "--link-overhead", "0")
    assert c.deep_limit("auto", [0]) == 1514000
    # Never less than a full frame.
    assert cfg("--ring-size", "1").deep_limit("auto/100", [0]) == 1600
    # Shared links: every ring of the egress, the hog's larger one too.
    c = cfg("--dcms", "4", "--dcms-per-host", "4", "--hog", "10")
    assert c.hog_ring_size == sizing.auto_ring_size(30, 327680, c.mss, 1)
    assert c.ring_size_of(0) == c.hog_ring_size
    assert c.ring_size_of(1) == c.ring_size < c.hog_ring_size
    assert c.deep_limit("auto", [0, 1, 2, 3]) == \
        (c.hog_ring_size + 3 * c.ring_size) * 1538


def test_dcms_per_host_option() -> None:
    c = cfg("--dcms", "8", "--dcms-per-host", "4")
    assert (c.dcms_per_host, c.hlt_hosts) == (4, 2)
    assert c.ethdev_ports == 30 + 2
    assert cfg("--dcms", "2").dcms_per_host == 1
    for argv, what in ((["--dcms", "3", "--dcms-per-host", "2"], "divide"),
                       (["--dcms", "8", "--dcms-per-host", "16"], "1..8"),
                       (["--dcms-per-host", "0"], "1..8")):
        with pytest.raises(ConfigError, match=what):
            cfg(*argv)
    with pytest.raises(ConfigError, match="share its rate by bytes"):
        cfg("--dcms", "2", "--dcms-per-host", "2", "--shaper", "packets")
    with pytest.raises(ConfigError, match="--dcms-per-host is for"):
        cfg("--topology", "fabric", "--dcms", "2", "--dcms-per-host", "2")


def test_hog_option() -> None:
    c = cfg("--dcms", "2", "--dcms-per-host", "2", "--hog", "10")
    assert c.fragment_of(0, True) == 10 * c.fragment_size
    assert c.fragment_of(0, False) == c.fragment_of(1, True) == \
        c.fragment_size
    for argv in (["--hog", "10"], ["--dcms", "2", "--hog", "10"],
                 ["--dcms", "2", "--dcms-per-host", "2", "--hog", "1"],
                 ["--dcms", "2", "--dcms-per-host", "2", "--hog", "101"]):
        with pytest.raises(ConfigError, match="--hog"):
            cfg(*argv)


def test_deep_fifo_not_in_a_fabric() -> None:
    with pytest.raises(ConfigError, match="unknown mode 'deep-fifo'"):
        cfg("--topology", "fabric", "--modes", "deep-fifo")


# ------------------------------------------------------------ plan, runs
def test_plan_with_shared_hosts() -> None:
    plan = topology.make_plan(4194303, 5, 8, 1, 32, 4)
    assert len(plan.dcms) == 8 and len(plan.dcm_hosts) == 2
    assert [h.ns for h in plan.dcm_hosts] == ["dqi4194303-hlt0",
                                              "dqi4194303-hlt1"]
    assert plan.dcm_hosts[0].ips == ["10.77.0.%d" % i for i in (1, 2, 3, 4)]
    assert [d.ips for d in plan.dcms_of(plan.dcm_hosts[1])] == [
        ["10.77.0.5"], ["10.77.0.6"], ["10.77.0.7"], ["10.77.0.8"]]
    for d in plan.dcms_of(plan.dcm_hosts[1]):
        h = plan.dcm_hosts[1]
        assert (d.ns, d.veth, d.mac, d.ofport) == (h.ns, h.veth, h.mac,
                                                   h.ofport)
    # One port per host: the ofports of hosts and ROS are distinct.
    ofports = [h.ofport for h in plan.hosts]
    assert len(plan.hosts) == 7 and len(set(ofports)) == 7
    assert len({plan.ring_name(d) for d in plan.dcms}) == 8
    # One DCM per host: the plan of before (the DCMs are the hosts).
    one = topology.make_plan(4194303, 5, 2, 1)
    assert one.dcm_hosts == one.dcms and one.dcms[1].ns.endswith("-dcm1")
    with pytest.raises(ValueError):
        topology.make_plan(4194303, 5, 3, 1, 32, 2)


def test_mode_runs_deep_fifo_first_and_hog_twice() -> None:
    c = cfg("--modes", "stock,daqring,deep-fifo", "--deep-limit",
            "auto,auto/4")
    runs = modes.mode_runs(c)
    assert [r[2] for r in runs] == ["deep-fifo limit=auto",
                                    "deep-fifo limit=auto/4", "stock",
                                    "daqring"]
    assert runs[0][1] == {"deep_limit": "auto"}
    assert [r[2] for r in modes.mode_runs(cfg("--modes", "deep-fifo"))] \
        == ["deep-fifo"]
    c = cfg("--dcms", "4", "--dcms-per-host", "4", "--hog", "10",
            "--modes", "daqring,deep-fifo")
    runs = modes.mode_runs(c)
    assert [(r[2], r[1]["hog"]) for r in runs] == [
        ("deep-fifo", False), ("deep-fifo +hog", True),
        ("daqring", False), ("daqring +hog", True)]
    # The rings of a shared link share its rate: the fabric's static
    # policy (each ring the link's ring rate / K, max-burst / K).
    p = runs[2][1]
    assert p["max_rate_bps"] == c.max_rate_bps // 4
    assert p["max_burst"] == max(1, c.max_burst // 4)
    assert p["sharing"].startswith("static:")


def test_shared_link_daqring_map(tmp_path: Any, monkeypatch: Any) -> None:
    """The map of 4 DCMs behind one link with a hog: every ring bound to
    the host's port, each with the shared rate, the hog's ring larger;
    ovs-daqctl itself accepts it (offline)."""
    c = cfg("--dcms", "4", "--dcms-per-host", "4", "--hog", "10",
            "--modes", "daqring")
    plan = topology.make_plan(4242, 4, 4, 1, 32, 4)
    p = modes.mode_runs(c)[0][1]
    path, doc = programmed_map(
        tmp_path, monkeypatch, c, plan, p["ring_size"], p["max_burst"],
        0, p["max_rate_bps"], 24, p["flow_buckets"],
        ring_sizes={d.index: c.ring_size_of(d.index) for d in plan.dcms})
    assert doc["defaults"]["rate"] == "%dbit" % (c.max_rate_bps // 4)
    assert {d["egress"] for d in doc["dcms"]} == {"dq4242d0"}
    assert [d.get("ring-size") for d in doc["dcms"]] == [
        c.hog_ring_size, None, None, None]
    out = subprocess.run([sys.executable, os.path.join(
        os.path.dirname(SCRIPT), "ovs-daqctl"), "check", path],
        capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "4 DCMs, map OK" in out.stdout


def test_bridge_commands() -> None:
    plan = topology.make_plan(4194303, 2, 2, 1, 32, 2)
    text = topology.bridge_batch(plan, "dqbr0")
    lines = text.splitlines()
    assert lines[0].startswith("link add dqbr0 type bridge stp_state 0 ")
    assert "link set dq4194303d0 master dqbr0" in lines
    assert "link set dq4194303r1 master dqbr0" in lines
    assert lines[-1] == "link set dqbr0 up" and len(lines) == 2 + 3
    dcm, ros = plan.dcm_hosts[0], plan.ros_hosts[0]
    assert topology.deep_fifo_command("sw", dcm, 10**6, 200000000, 16384,
                                      24) == topology.tbf_command(
        "sw", dcm.veth, 200000000, 16384, 10**6, 24)
    assert topology.deep_fifo_command("sw", ros, 5000, 1, 1, 0) == [
        "tc", "-n", "sw", "qdisc", "replace", "dev", ros.veth, "root",
        "bfifo", "limit", "5000"]
    assert topology.qdisc_row([]) == {"packets": 0, "bytes": 0, "drops": 0,
                                      "overlimits": 0, "requeues": 0}
    assert topology.qdisc_row([{"root": True, "drops": 3, "packets": 9}]
                              )["drops"] == 3


def test_describe_names_the_peer_and_the_sharing() -> None:
    c = cfg("--dcms", "4", "--dcms-per-host", "4", "--hog", "10",
            "--modes", "daqring,deep-fifo", "--ring-size", "1000")
    plan = topology.make_plan(4194303, 30, 4, 1, 32, 4)
    text = describe.describe(c, plan)
    assert "shared links: 4 DCMs per DCM host, 1 host(s)" in text
    assert "ring sharing static:" in text
    assert "hog: DCM 0's fragments 10 x 32768 B" in text
    assert "deep-fifo: Linux bridge dqbr0" in text
    assert "(first DCM host's egress: %d B)" % (
        (c.hog_ring_size + 3000) * 1538) in text
    assert "switch: OVS build" in text
    assert "switch: none (deep-fifo runs only" in describe.describe(
        cfg("--modes", "deep-fifo"), plan)


# ------------------------------------------------------------ statistics
def test_overlapping_and_others_latency() -> None:
    assert stats.overlapping([(0, 1), (2, 3), (5, 6)], [(0.5, 2)]) == [0, 1]
    assert stats.overlapping([(0, 1)], []) == []
    per = [{"times": [1.0, 1.0], "starts": [10.0, 12.0]},        # the hog
           {"times": [0.1, 0.2, 0.3], "starts": [10.5, 11.5, 12.5]},
           {"times": [0.4], "starts": [20.0]}]
    out = stats.others_latency(per, 0, True)
    assert out["dcms"] == 2 and out["all"]["max"] == 0.4
    assert out["during_hog"]["events"] == 2            # 10.5 and 12.5
    assert out["during_hog"]["max"] == 0.3
    assert "during_hog" not in stats.others_latency(per, 0, False)
    with pytest.raises(ValueError):
        stats.others_latency(per[:1], 0, True)


def test_dcm_figures() -> None:
    d = stats.dcm_figures([1.0, 1.0], [1000, 3000], [0.0, 0.5])
    assert d["events"] == 2 and d["bytes"] == 4000
    assert d["goodput_bps"] == pytest.approx(4000 * 8 / 1.5)
    assert d["collection_time_s"]["p50"] == 1.0


PROC_STAT = """cpu  100 5 50 1000 10 3 2 1 7 0
cpu0 60 5 30 400 5 2 1 1 7 0
cpu1 40 0 20 600 5 1 1 0 0 0
intr 12345
"""


def test_parse_proc_stat_and_cpu_per_byte() -> None:
    a = stats.parse_proc_stat(PROC_STAT)
    assert a["cpu"] == (100 + 5 + 50 + 3 + 2 + 1, 1171)
    assert a["cpu1"] == (62, 667) and set(a) == {"cpu", "cpu0", "cpu1"}
    b = {"cpu": (a["cpu"][0] + 150, a["cpu"][1] + 200),
         "cpu0": (a["cpu0"][0] + 100, a["cpu0"][1] + 100),
         "cpu1": (a["cpu1"][0] + 50, a["cpu1"][1] + 100)}
    c = stats.cpu_per_byte(a, b, 100, 10**9)
    assert c["busy_s"] == 1.5 and c["cpus_s"] == 2.0
    assert c["busy_share"] == 0.75
    assert c["per_cpu_busy_share"] == {"cpu0": 1.0, "cpu1": 0.5}
    assert c["ns_per_byte"] == pytest.approx(1.5)
    with pytest.raises(ValueError):
        stats.cpu_per_byte(a, b, 100, 0)
    with pytest.raises(ValueError):
        stats.parse_proc_stat("intr 1\n")


def _mode(label: str, mode: str, goodput: float, p99: float,
          share: float = 1.0, others: Optional[Dict[str, Any]] = None,
          status: str = "ok", cpu: float = 2.0,
          steal: float = 0.0) -> Dict[str, Any]:
    m: Dict[str, Any] = {
        "label": label, "mode": mode, "status": status, "error": None,
        "goodput_bps": goodput, "ideal_ratio": goodput / 2e8,
        "collection_time_s": {"p50": p99 / 2, "p99": p99},
        "tcp": {"rto_timeouts": 0, "retrans_segs": 0},
        "drops": {"switch_total": 0, "daqring": 0, "qdisc": 1},
        "pmd_cpu_share": share if mode != "deep-fifo" else 0.0,
        "cpu": {"ns_per_byte": cpu, "busy_share": 0.5, "cpus_s": 4.0,
                "steal_s": {"cpu0": steal, "cpu1": steal / 4}},
        "per_dcm": [{"dcm": 0, "hog": False, "goodput_bps": goodput,
                     "collection_time_s": {"p50": 0.01, "p99": p99}},
                    {"dcm": 1, "hog": False, "goodput_bps": goodput,
                     "collection_time_s": {"p50": 0.01, "p99": p99}}]}
    if others:
        m["others"] = others
    if status != "ok":
        m["error"] = "it broke"
    return m


def test_format_shared() -> None:
    text = stats.format_shared([
        _mode("daqring", "daqring", 1.8e8, 0.05,
              others={"all": {"p99": 0.05}}),
        _mode("daqring +hog", "daqring", 1.8e8, 0.05,
              others={"all": {"p99": 0.05},
                      "during_hog": {"p99": 0.06, "events": 9}})])
    assert "daqring +hog" in text and "2.00 ns/B" in text
    assert "others p99 50.0 ms, during hog 60.0 ms (9 events)" in text
    assert stats.format_shared([]) == ""


# ------------------------------------------------------------ daq-bench
def _doc(*modes: Dict[str, Any]) -> Dict[str, Any]:
    return {"config": {"congestion_control": "cubic"}, "modes": list(modes)}


def test_parse_points() -> None:
    assert peers.parse_points(None, False) == list(peers.GRID)
    assert peers.parse_points(None, True) == peers.QUICK_POINTS
    assert peers.parse_points("all", True) == list(peers.GRID)
    assert peers.parse_points("r30-32k-200m", False) == ["r30-32k-200m"]
    for bad in ("nope", "r30-32k-200m,r30-32k-200m", ","):
        with pytest.raises(ValueError, match="--peers-points"):
            peers.parse_points(bad, False)
    # Every grid point is a valid daq-incast command line.
    for name, (_, args) in peers.GRID.items():
        c = cfg("--modes", "daqring,deep-fifo", *args)
        assert "deep-fifo" in c.modes, name
        # Rings behind one link share its rate, work-conserving.
        assert c.ring_sharing == ("shared" if c.dcms_per_host > 1
                                  else "static"), name
    assert bench_cli.parse_args(["--peers-points", "r12-16k-100m"]
                                ).peers_points == "r12-16k-100m"
    for argv in (["--peers-points", "x"], ["--peers-runs", "0"],
                 ["--peers-events", "0"]):
        with pytest.raises(SystemExit):
            bench_cli.parse_args(argv)


def test_run_figures() -> None:
    f = peers.run_figures(_doc(
        _mode("deep-fifo limit=auto", "deep-fifo", 1.6e8, 0.2, cpu=1.0),
        _mode("deep-fifo limit=auto/4", "deep-fifo", 1.0e8, 0.4),
        _mode("daqring", "daqring", 1.8e8, 0.05, cpu=3.0)))
    assert "error" not in f and f["congestion_control"] == "cubic"
    assert f["goodput_ratio"] == pytest.approx(1.8 / 1.6)
    assert f["p99_ratio"] == pytest.approx(0.25)
    assert f["cpu_ratio"] == pytest.approx(3.0)
    assert set(f["modes"]) == {"deep-fifo limit=auto",
                               "deep-fifo limit=auto/4", "daqring"}
    # A failed mode run, a PMD that had too little of its core, a missing
    # peer: the run does not count, and says why.
    f = peers.run_figures(_doc(
        _mode("deep-fifo", "deep-fifo", 1.6e8, 0.2),
        _mode("daqring", "daqring", 1.8e8, 0.05, status="error")))
    assert "daqring: it broke" in f["error"] and "no daqring run" in \
        f["error"]
    f = peers.run_figures(_doc(_mode("deep-fifo", "deep-fifo", 1e8, 0.2),
                               _mode("daqring", "daqring", 1e8, 0.1,
                                     share=0.5)))
    assert "invalid, the PMD had 50%" in f["error"]
    assert peers.run_figures(None) == {"error": "no results"}
    # The hog: each mode's others' p99 during the hog over without it.
    o = {"all": {"p99": 0.1}}
    oh = {"all": {"p99": 0.3}, "during_hog": {"p99": 0.11, "events": 5}}
    od = {"all": {"p99": 0.9}, "during_hog": {"p99": 1.0, "events": 5}}
    f = peers.run_figures(_doc(
        _mode("deep-fifo", "deep-fifo", 1e8, 0.2, others=o),
        _mode("deep-fifo +hog", "deep-fifo", 1e8, 1.0, others=od),
        _mode("daqring", "daqring", 1e8, 0.1, others=o),
        _mode("daqring +hog", "daqring", 1e8, 0.3, others=oh)))
    assert f["hog_ratio"] == {"daqring": pytest.approx(1.1),
                              "deep-fifo": pytest.approx(10.0)}


def _point(*runs: Dict[str, Any]) -> Dict[str, Any]:
    return dict(peers.point_summary(list(runs)), runs=list(runs))


def test_peer_verdicts_count_every_run() -> None:
    good = peers.run_figures(_doc(
        _mode("deep-fifo", "deep-fifo", 1.6e8, 0.2),
        _mode("daqring", "daqring", 1.8e8, 0.05)))
    worse = peers.run_figures(_doc(
        _mode("deep-fifo", "deep-fifo", 1.9e8, 0.2),
        _mode("daqring", "daqring", 1.8e8, 0.05)))
    o = {"all": {"p99": 0.1}}
    hog = peers.run_figures(_doc(
        _mode("deep-fifo", "deep-fifo", 1e8, 0.2, others=o),
        _mode("daqring", "daqring", 1.1e8, 0.1, others=o),
        _mode("daqring +hog", "daqring", 1e8, 0.3, others={
            "all": {"p99": 0.3}, "during_hog": {"p99": 0.13,
                                                "events": 5}})))

    def rows(points: Dict[str, Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}

        def add(key: str, value: str, met: Optional[bool],
                *a: Any, **kw: Any) -> None:
            out[key] = (value, met)
        peers.peer_verdicts({"points": points, "congestion_control":
                             "cubic"}, add)
        return out

    # One point of the grid: nothing fails, nothing established (the
    # whole grid's verdicts: test_peer_verdict.py).
    r = rows({"r30-32k-200m": _point(good, good, good)})
    assert r["peer_goodput"][1] is None and r["peer_p99"][1] is None
    assert "TCP cubic" in r["peer_goodput"][0]
    assert r["peer_hog"][1] is None          # no point with a hog
    assert r["peer_cpu"][1] is None
    r = rows({"r30-32k-200m": _point(good, worse, good)})
    assert r["peer_goodput"][1] is False and r["peer_p99"][1] is None
    # A run that failed counts against every target of its point.
    r = rows({"r30-32k-200m": _point(good, {"error": "no results"}, good)})
    assert r["peer_goodput"][1] is False
    assert "FAILED (no results)" in r["peer_goodput"][0]
    r = rows({"hog4-r30-32k-200m": _point(hog)})
    assert r["peer_hog"][1] is False             # 1.3 x > 1.2 x
    assert "1.30 x" in r["peer_hog"][0]
    r = rows({})
    assert all(v == ("not run", None) for v in r.values())


def test_bench_verdicts_and_summary_have_the_peers() -> None:
    good = peers.run_figures(_doc(
        _mode("deep-fifo", "deep-fifo", 1.6e8, 0.2),
        _mode("daqring", "daqring", 1.8e8, 0.05, steal=0.59)))
    res = {"peers": {"points": {"r30-32k-200m": _point(good)},
                     "congestion_control": "cubic"}}
    rows = {v["key"]: v for v in summary.verdicts(res)}
    assert set(rows) == set(parts.TARGETS)
    assert rows["peer_goodput"]["met"] is None     # one point of 8
    text = "\n".join(peers.markdown(res["peers"]))
    assert "| r30-32k-200m | 1 | daqring | 180.0 |" in text
    # Each mode's steal time: the most of one CPU, in ms.
    rows_ = {ln.split("|")[3].strip(): ln.split("|")
             for ln in text.splitlines() if ln.startswith("| r30-32k")}
    assert rows_["daqring"][-2].strip() == "590"
    assert rows_["deep-fifo"][-2].strip() == "0"
    assert "steal ms |" in text
    assert "daqring / deep FIFO goodput 1.125 x" in text
    assert "peers" in parts.PARTS


# ------------------------------------------------------------ end to end
def _skip_reason() -> Optional[str]:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "tc", "ethtool", "bridge"):
        if shutil.which(tool) is None:
            return "needs " + tool
    return None


@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
def test_deep_fifo_incast(tmp_path: Any) -> None:
    """4 ROS x 16 KiB into 2 DCMs that share one link, through the Linux
    bridge: with the daqrings' memory as limit (auto) and with a 2-frame
    FIFO.  Every event arrives whole; with the deep limit nothing is
    dropped, with the shallow one the FIFO drops and TCP retransmits; the
    drop counters add up; nothing is left behind.  No DPDK switch
    starts."""
    out = tmp_path / "r.json"
    p = subprocess.Popen(
        [sys.executable, SCRIPT, "--ros", "4", "--dcms", "2",
         "--dcms-per-host", "2", "--fragment-size", "16KiB", "--events",
         "4", "--modes", "deep-fifo", "--deep-limit", "auto,3200",
         "--timeout", "240", "--json", str(out), "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = p.communicate(timeout=300)
    assert p.returncode == 0, stdout + stderr
    doc = json.loads(out.read_text())
    assert stats.validate_results(doc) == []
    deep, shallow = doc["modes"]
    assert (deep["label"], shallow["label"]) == ("deep-fifo limit=auto",
                                                 "deep-fifo limit=3200")
    ring = doc["config"]["ring_size"]
    plan_veth = sorted(deep["params"]["limits"])
    dcm_veth = ["dq%dd0" % p.pid]
    assert plan_veth == sorted(dcm_veth + ["dq%dr%d" % (p.pid, i)
                                           for i in range(4)])
    assert deep["params"]["limits"][dcm_veth[0]] == 2 * ring * 1538
    for m in (deep, shallow):
        assert m["status"] == "ok" and m["events"] == 8
        assert m["pmd_cpu_share"] == 0.0 and not m["cpu"]["dpdk_switch"]
        assert [d["events"] for d in m["per_dcm"]] == [4, 4]
        # Whole events: every DCM got 4 x 16 KiB from each of 4 ROS.
        assert [d["bytes"] for d in m["per_dcm"]] == [4 * 4 * 16384] * 2
        dr = m["drops"]
        assert dr["qdisc"] == sum(q["drops"] for q in dr["qdiscs"].values())
        assert set(dr["qdiscs"]) == set(plan_veth)
        # What the DCM host's link sent, its host received, bar what the
        # veth itself dropped.
        link = dr["hosts"][dcm_veth[0]]
        q = dr["qdiscs"][dcm_veth[0]]
        e0 = dr["hosts"][[k for k in dr["hosts"] if k.endswith(":e0")][0]]
        assert q["packets"] == link["tx_packets"] + link["tx_dropped"]
        assert e0["rx_packets"] == link["tx_packets"]
    assert deep["drops"]["qdisc"] == 0 and deep["drops"]["switch_total"] == 0
    assert shallow["drops"]["qdiscs"][dcm_veth[0]]["drops"] > 0
    assert shallow["tcp"]["retrans_segs"] > 0
    ps = subprocess.run(["ip", "netns", "list"], capture_output=True,
                        text=True).stdout
    assert "dqi%d-" % p.pid not in ps
    # No DPDK: no hugepages were asked for.
    assert doc["host"]["hugepages"] is False


def test_congestion_control_allowed_again(monkeypatch: Any,
                                          tmp_path: Any) -> None:
    """Another run that puts net.ipv4.tcp_allowed_congestion_control back
    while this one sets up its hosts: the host whose sysctl was refused
    is set up again after allowing once more, and the list is put back
    as found."""
    plan = topology.make_plan(4194303, 1, 1, 1)
    allowed = ["reno", "bbr"]
    calls: List[List[str]] = []
    refused: List[str] = []

    def fake_run(cmd: List[str], **kw: Any) -> str:
        calls.append(cmd)
        if cmd[-1] == "net.ipv4.tcp_congestion_control":
            return "cubic"                   # read back from a host
        if cmd[:2] == ["sysctl", "-n"]:
            return " ".join(allowed)
        if cmd[:3] == ["sysctl", "-q", "-w"]:
            allowed[:] = cmd[3].split("=", 1)[1].split()
            return ""
        if cmd[-2:-1] == ["-c"] and "tcp_congestion_control=cubic" in \
                cmd[-1]:
            if not refused:
                refused.append(cmd[3])
                allowed.remove("cubic")        # the other run
            if "cubic" not in allowed:
                raise topology.RunError("sysctl: setting key: Operation "
                                        "not permitted")
        return ""
    monkeypatch.setattr(topology, "run", fake_run)
    monkeypatch.setattr(topology, "CC_LOCK", str(tmp_path / "lock"),
                        raising=False)
    cleanup = topology.Cleanup()
    topology.Topology(plan, cleanup).create(200000000, 16384, 52292, 24)
    assert refused == [plan.dcms[0].ns]
    setups = [c[3] for c in calls if c[-2:-1] == ["-c"]
              and "tcp_congestion_control" in c[-1]]
    assert setups == [plan.dcms[0].ns, plan.dcms[0].ns, plan.ros_hosts[0].ns]
    assert allowed == ["reno", "bbr"]
