"""pytest for utilities/daq-incast.

Everything but the last test is pure (or uses loopback only) and needs no
root.  test_end_to_end_stock builds a tiny topology and runs it in stock
mode; it is skipped unless root and an ovs-vswitchd with DPDK are
available (daq-incast reserves the hugepages it needs itself).
"""

import argparse
import json
import mmap
import os
import shutil
import subprocess
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

from ovs_daqring import hosts, hugepages
from ovs_daqring.cmd import daq_incast
from ovs_daqring.incast import (agents, binaries, config, counters,
                                describe, lifecycle, limits, modes,
                                options, report, runner,
                                sizing, stats, switch, topology, units,
                                validation, values)
from ovs_daqring.hosts import ConfigError, HostInfo
from ovs_daqring.process import Cleanup, stale_namespaces
from incast_helpers import programmed_map

pytestmark = pytest.mark.machine

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UTILITIES = os.path.join(os.path.dirname(HERE), "utilities")
SCRIPT = os.path.join(UTILITIES, "daq-incast")

STOCK = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"


def host(**kw: Any) -> HostInfo:
    base: Dict[str, Any] = dict(is_root=True, cpus=[0, 1],
                                hugepages_free_mb=4096,
                                hugetlbfs_mounted=True)
    base.update(kw)
    return HostInfo(**base)


def parse(*argv: str) -> argparse.Namespace:
    return options.parse_args(list(argv))


def cfg(*argv: str, h: Optional[HostInfo] = None,
        env: bool = False) -> config.Config:
    return validation.validate(parse(*argv), h or host(), check_env=env)


def fake_build(tmp_path: Any) -> str:
    """An OVS build tree with executables that are never run."""
    for rel in ("vswitchd/ovs-vswitchd", "ovsdb/ovsdb-server",
                "ovsdb/ovsdb-tool", "utilities/ovs-vsctl",
                "utilities/ovs-ofctl", "utilities/ovs-appctl"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    (tmp_path / "vswitchd" / "vswitch.ovsschema").write_text("{}")
    return str(tmp_path)


@pytest.fixture
def tools(monkeypatch: Any) -> None:
    """Pretend ip, tc and ethtool exist."""
    monkeypatch.setattr(validation.shutil, "which",
                        lambda name: "/bin/" + name)


# ------------------------------------------------------------------ units
@pytest.mark.parametrize("text,bps", [
    ("200mbit", 200_000_000), ("1gbit", 10**9), ("1.5Gbit", 1_500_000_000),
    ("25mbps", 200_000_000), ("1000", 1000), ("10kbit", 10_000),
    ("1mibit", 2**20)])
def test_parse_rate(text: str, bps: int) -> None:
    assert units.parse_rate(text) == bps


@pytest.mark.parametrize("text", ["", "fast", "200 furlongs", "-5mbit",
                                  "1e9"])
def test_parse_rate_bad(text: str) -> None:
    with pytest.raises(ConfigError):
        units.parse_rate(text)


@pytest.mark.parametrize("text,n", [
    ("32KiB", 32768), ("16kb", 16384), ("48k", 49152), ("1500", 1500),
    ("1m", 2**20), ("2MiB", 2**21), ("0", 0)])
def test_parse_size(text: str, n: int) -> None:
    assert units.parse_size(text) == n


def test_parse_sweep() -> None:
    assert values.parse_sweep("ring-size=128,512,1024,4096") == (
        "ring-size", [128, 512, 1024, 4096])
    assert values.parse_sweep("credits=1, 2,4") == ("credits", [1, 2, 4])
    for bad in ("ring-size", "colour=1,2", "ring-size=a,b",
                "ring-size=0,8", "credits=2,2", "max-burst="):
        with pytest.raises(ConfigError):
            values.parse_sweep(bad)


# ------------------------------------------------------------- validation
def test_defaults_are_the_demo_scenario() -> None:
    c = cfg()
    assert (c.ros, c.dcms, c.fragment_size) == (30, 1, 32768)
    assert c.link_rate_bps == 200_000_000
    assert c.port_frames == 32
    assert c.link_burst == 16384
    assert c.link_limit == 34 * 1538     # the port's frames fit: no refusal
    assert c.modes == ["stock", "credits", "daqring"]
    assert c.ros_per_host == 1 and c.ethdev_ports == 31
    assert c.pmd_cpus == [1] and c.agent_cpus == [0]
    assert c.ring_size == 2048            # 2 x 30 x 23 packets, power of 2
    # Byte shaping at the link's rate, frames counted like the link's tbf.
    # A 0.1% margin for the clocks: the ring's TSC rate is an estimate.
    assert c.max_rate_bps == 199_800_000 and c.poll_interval_us == 0
    assert c.max_burst == 16              # half the port's 32 frames
    assert c.daqring_rate_bps == c.max_rate_bps
    assert c.ring_rate_fraction == 0.999
    assert c.tcp_nodelay                  # the one non-default TCP setting
    assert c.rps_kinds == ()              # no RPS on the hosts
    assert c.warmup_events == 1           # one full-size event, not measured
    assert c.pus == 1                     # one event at a time per DCM
    assert c.credits >= 1
    assert c.binaries.vswitchd.endswith("ovs/vswitchd/ovs-vswitchd")


@pytest.mark.parametrize("argv", [
    ["--ros", "0"], ["--dcms", "0"], ["--events", "0"],
    ["--fragment-size", "0"], ["--fragment-size", "0KiB"],
    ["--ros", "-3"], ["--credits", "-1"], ["--timeout", "0"],
    ["--socket-mem", "0"], ["--ring-size", "-1"],
    ["--link-burst", "100"], ["--link-limit", "0"],
    ["--fragment-size", "1g"], ["--port-frames", "7"],
    ["--port-frames", "0"], ["--port-frames", "64"],
])
def test_zero_and_negative_sizes_are_refused(argv: List[str]) -> None:
    with pytest.raises(ConfigError):
        cfg(*argv)


@pytest.mark.parametrize("argv", [
    ["--link-rate", "10gbit"],                      # more than 2 cores drive
    ["--link-rate", "3gbit", "--dcms", "2"],        # 6 Gbit/s in total
    ["--link-rate", "100kbit"],                     # below 1 Mbit/s
    ["--link-rate", "fast"],
    ["--link-rate", "0"],
])
def test_bad_rates_are_refused(argv: List[str]) -> None:
    with pytest.raises(ConfigError):
        cfg(*argv)


def test_ros_above_capacity_is_refused() -> None:
    # 31 DPDK ports left for ROS namespaces, at most 8 ROS in each.
    assert cfg("--ros", "248").ros_per_host == 8
    with pytest.raises(ConfigError, match="at most 248 ROS"):
        cfg("--ros", "249")
    with pytest.raises(ConfigError, match="ethdev ports"):
        cfg("--ros", "40", "--ros-per-host", "1")
    with pytest.raises(ConfigError):
        cfg("--dcms", "9")
    with pytest.raises(ConfigError, match="ethdev ports"):
        cfg("--ros", "240", "--dcms", "8", "--ros-per-host", "8",
            "--link-rate", "100mbit")


def test_aggregation() -> None:
    c = cfg("--ros", "40")
    assert c.ros_per_host == 2 and c.ros_hosts == 20
    assert c.ethdev_ports == 21
    assert any("aggregated" in n for n in c.notes)
    c = cfg("--ros", "31")                 # 31 + 1 = 32 ports: fits
    assert c.ros_per_host == 1 and c.ethdev_ports == 32
    c = cfg("--ros", "32")
    assert c.ros_per_host == 2


def test_port_buffer_and_credits() -> None:
    assert sizing.max_port_frames(212992) == 40
    assert sizing.max_port_frames(4 * 212992) == 166
    c = cfg("--port-frames", "64", h=host(wmem_default=4 * 212992))
    assert c.port_frames == 64
    c = cfg("--link-limit", "16kb")
    assert c.link_limit == 16384
    assert any("refuse" in n for n in c.notes)
    assert cfg().credits == 1                   # 23 frames in 32
    assert cfg("--fragment-size", "8KiB").credits == 5
    assert cfg("--credits", "7").credits == 7


def test_modes_and_sweep() -> None:
    with pytest.raises(ConfigError):
        cfg("--modes", "stock,turbo")
    with pytest.raises(ConfigError):
        cfg("--modes", "stock,stock")
    c = cfg("--modes", "stock", "--sweep", "ring-size=128,512")
    assert c.modes == ["stock", "daqring"]
    runs = modes.mode_runs(c)
    assert [r[2] for r in runs] == ["stock", "daqring ring-size=128",
                                    "daqring ring-size=512"]
    assert runs[2][1]["ring_size"] == 512
    c = cfg("--modes", "credits", "--sweep", "credits=1,4")
    assert [r[1]["credits"] for r in modes.mode_runs(c)] == [1, 4]


def test_daqring_shaping() -> None:
    with pytest.raises(ConfigError):
        cfg("--max-burst", "33")
    c = cfg("--max-burst", "32", "--poll-interval", "500")
    assert (c.max_burst, c.poll_interval_us) == (32, 500)
    assert round(c.daqring_rate_bps / 1e6) == 777    # the thesis' 0.78 G
    assert c.max_rate_bps == 0
    c = cfg("--shaper", "packets", "--max-burst", "8")
    assert c.max_rate_bps == 0
    frame_bits = (1500 + 14 + 24) * 8
    assert 8 / (c.poll_interval_us * 1e-6) <= 0.99 * 2e8 / frame_bits
    for rate in (10**7, 10**8, 2 * 10**8, 10**9):
        b, us = sizing.auto_shaping(rate, 24, 1500, 0.95, 32768)
        target = 0.95 * rate / frame_bits
        assert 1 <= b <= 32
        assert b / (us * 1e-6) <= target * 1.0001
        assert b / (us * 1e-6) >= 0.9 * target


def test_daqring_byte_shaping() -> None:
    # The bucket: half the port buffer, whatever the rate.
    for rate in ("100mbit", "200mbit", "1gbit"):
        assert cfg("--link-rate", rate).max_burst == 16
    assert cfg("--port-frames", "8").max_burst == 4
    assert cfg("--port-frames", "2").max_burst == 1
    assert sizing.auto_byte_burst(40) == 20
    assert sizing.auto_byte_burst(80) == 32
    c = cfg("--max-burst", "8")
    assert (c.max_rate_bps, c.max_burst, c.poll_interval_us) == \
        (199_800_000, 8, 0)
    c = cfg("--ring-rate-fraction", "0.99")
    assert c.max_rate_bps == 198_000_000
    # Packet shaping keeps its margin below the link's full-frame rate.
    assert cfg("--shaper", "packets").ring_rate_fraction == 0.99
    assert cfg("--poll-interval", "500").ring_rate_fraction == 0.99
    c = cfg("--max-rate", "150mbit", "--link-rate", "1gbit")
    assert c.max_rate_bps == 150_000_000 and c.daqring_rate_bps == 150e6
    c = cfg("--link-rate", "1gbit", "--ring-rate-fraction", "1")
    assert c.max_rate_bps == 1_000_000_000
    for bad in (["--max-rate", "150mbit", "--poll-interval", "500"],
                ["--max-rate", "150mbit", "--shaper", "packets"],
                ["--max-rate", "fast"], ["--max-rate", "999"],
                ["--shaper", "credits"]):
        with pytest.raises((ConfigError, SystemExit)):
            cfg(*bad)
    # The run's parameters and the map given to ovs-daqctl.
    (mode, params, _), = modes.mode_runs(cfg("--modes", "daqring"))
    assert (params["max_rate_bps"], params["frame_overhead"],
            params["rate_bps"]) == (199_800_000, 24, 199_800_000)
    runs = modes.mode_runs(cfg("--modes", "daqring",
                               "--sweep", "poll-interval=250,500"))
    assert [r[1]["max_rate_bps"] for r in runs] == [0, 0]


@pytest.mark.parametrize("max_rate,poll,buckets",
                         [(198_000_000, 0, 65536), (0, 500, 0)])
def test_program_daqrings_map(tmp_path: Any, monkeypatch: Any,
                              max_rate: int, poll: int, buckets: int) -> None:
    """The map daq-incast hands to ovs-daqctl: max-rate (byte shaping) and
    sparse-flow priority by default, checked by ovs-daqctl itself
    (offline)."""
    plan = topology.make_plan(4242, 4, 2, 1)
    path, doc = programmed_map(tmp_path, monkeypatch,
                               cfg("--flow-buckets", str(buckets)), plan,
                               2048, 16, poll, max_rate, 24, buckets)
    if max_rate:
        assert doc["defaults"] == {"ring-size": 2048, "max-burst": 16,
                                   "flow-buckets": buckets,
                                   "rate": "198000000bit",
                                   "frame-overhead": 24}
    else:
        assert doc["defaults"] == {"ring-size": 2048, "max-burst": 16,
                                   "flow-buckets": 0,
                                   "poll-interval": 500}
    p = subprocess.run([sys.executable, os.path.join(UTILITIES, "ovs-daqctl"),
                        "check", path], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "2 DCMs, map OK" in p.stdout
    if max_rate:
        assert "max-rate 198000000 bit/s" in p.stdout


def test_ring_sharing_shared_on_one_switch(tmp_path: Any,
                                           monkeypatch: Any) -> None:
    """--ring-sharing shared with DCMs that share a host's link on one
    switch: each ring gets the link's whole ring rate and the rings of a
    host share it as egress-max-rate, bound to the host's port; the map
    daq-incast hands to ovs-daqctl says so and ovs-daqctl accepts it.
    Without a shared link there is nothing to share."""
    c = cfg("--dcms", "4", "--dcms-per-host", "2", "--modes", "daqring",
            "--ring-sharing", "shared")
    (mode, params, _), = modes.mode_runs(c)
    assert (params["max_rate_bps"], params["egress_max_rate_bps"]) == (
        c.max_rate_bps, c.max_rate_bps)
    assert params["sharing"].startswith("shared: 2 DCMs")
    static = modes.mode_runs(cfg("--dcms", "4", "--dcms-per-host", "2",
                                 "--modes", "daqring"))[0][1]
    assert static["max_rate_bps"] == c.max_rate_bps // 2
    assert not static["egress_max_rate_bps"]
    with pytest.raises(ConfigError, match="--ring-sharing shared"):
        cfg("--dcms", "4", "--ring-sharing", "shared")
    plan = topology.make_plan(4242, 4, 4, 1, 32, 2)
    assert len({d.port_name for d in plan.dcms}) == 2
    path, doc = programmed_map(
        tmp_path, monkeypatch, c, plan, 2048, params["max_burst"], 0,
        params["max_rate_bps"], 24, 0,
        egress_max_rate=params["egress_max_rate_bps"])
    assert doc["defaults"]["steering"] == "bound"
    assert doc["defaults"]["egress-max-rate"] == "%dbit" % c.max_rate_bps
    p = subprocess.run([sys.executable, os.path.join(UTILITIES, "ovs-daqctl"),
                        "check", path], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "4 DCMs, map OK" in p.stdout


def test_every_mode_starts_without_tcp_metrics(monkeypatch: Any) -> None:
    """Each mode's DCMs connect to hosts whose TCP metrics cache was
    emptied: a stock run's losses left ssthresh 1-3 cached on every ROS
    host for every DCM, and the next mode's connections started from it
    (the order of modes was part of its result)."""
    plan = topology.make_plan(4242, 4, 2, 1)
    r = runner.Runner(cfg(), plan, Cleanup())
    r.switch = object()  # type: ignore
    calls: List[Any] = []
    monkeypatch.setattr(runner, "run",
                        lambda argv, *a, **kw: calls.append(list(argv)))
    monkeypatch.setattr(r, "program", lambda mode, params: None)
    monkeypatch.setattr(r, "unprogram", lambda mode: None)
    monkeypatch.setattr(r, "_snapshot", lambda: calls.append("snapshot"))

    def collect(*args: Any, **kw: Any) -> None:
        calls.append("collect")
        raise lifecycle.ModeFailed("stop here")
    monkeypatch.setattr(r, "_collect", collect)
    for mode in ("stock", "daqring"):
        del calls[:]
        res = r.run_mode(mode, {}, mode)
        assert res["error"] == "stop here"
        flushed = [c[2] for c in calls
                   if isinstance(c, list) and c[3:] == ["tcp_metrics",
                                                        "flush", "all"]]
        assert sorted(flushed) == sorted(h.ns for h in plan.hosts)
        assert len(flushed) == len(plan.hosts)
        assert calls.index("collect") > max(
            i for i, c in enumerate(calls) if isinstance(c, list))


def test_flow_buckets() -> None:
    assert cfg().flow_buckets is None                 # auto
    assert cfg("--flow-buckets", "auto").flow_buckets is None
    assert cfg("--flow-buckets", "0").flow_buckets == 0
    assert cfg("--flow-buckets", "65536").flow_buckets == 65536
    for bad in ("1", "3", "-2", "131072", "x", ""):
        with pytest.raises(ConfigError, match="--flow-buckets"):
            cfg("--flow-buckets", bad)
    # Given: as given, whatever the ring.
    assert cfg("--flow-buckets", "64").flow_buckets_for(4096, 1e9,
                                                        True) == 64


def test_auto_flow_buckets() -> None:
    """Flow fairness where a full ring takes half of TCP's minimum RTO
    (100 ms) or more to drain, a FIFO where it drains faster; unshaped
    rings (rate unknown) keep it."""
    from ovs_daqring.daqctl.model import auto_flow_buckets
    assert auto_flow_buckets(4096, 1e9, 1538 * 8) == 0         # 50 ms
    assert auto_flow_buckets(16384, 1e9, 1538 * 8) == 65536    # 202 ms
    assert auto_flow_buckets(2048, 200e6, 1538 * 8) == 65536   # 126 ms
    assert auto_flow_buckets(8130, 1e9, 1538 * 8) == 65536     # 100.0 ms
    assert auto_flow_buckets(8120, 1e9, 1538 * 8) == 0         # 99.9 ms
    assert auto_flow_buckets(512, 0) == 65536
    assert auto_flow_buckets(512, float("inf")) == 65536
    # daq-incast's scenarios: per run, from the run's ring and rate.
    plan = topology.make_plan(4242, 120, 1, 4)

    def buckets(*args: str) -> int:
        c = cfg(*args)
        p = [r[1] for r in modes.mode_runs(c) if r[0] == "daqring"][0]
        assert p["flow_buckets"] == c.flow_buckets_for(
            p["ring_size"], p["rate_bps"], bool(p["max_rate_bps"]))
        return p["flow_buckets"]
    gbit16 = ("--ros", "120", "--fragment-size", "16KiB", "--link-rate",
              "1gbit")
    assert buckets(*gbit16) == 0
    assert "flow-buckets 0, a FIFO (auto: a full ring drains in 50 ms)" \
        in describe.describe(cfg(*gbit16), plan)
    assert buckets(*gbit16, "--link-rate", "100mbit") == 65536
    assert buckets(*gbit16, "--flow-buckets", "1024") == 1024
    assert "flow-buckets 1024\n" in describe.describe(
        cfg(*gbit16, "--flow-buckets", "1024"), plan) + "\n"
    assert buckets() == 65536           # the default scenario: 126 ms
    # Packet shaping: 2048 packets at 32 per 500 us drain in 32 ms.
    assert buckets("--poll-interval", "500", "--max-burst", "32") == 0
    assert buckets("--poll-interval", "0") == 65536         # unshaped
    runs = modes.mode_runs(cfg(*gbit16, "--modes", "daqring", "--sweep",
                               "ring-size=4096,16384"))
    assert [r[1]["flow_buckets"] for r in runs] == [0, 65536]


def test_cpu_mask() -> None:
    with pytest.raises(ConfigError):
        cfg("--pmd-cpu-mask", "0x4")              # CPU 2 does not exist
    with pytest.raises(ConfigError):
        cfg("--pmd-cpu-mask", "0x3")              # nothing left for hosts
    with pytest.raises(ConfigError):
        cfg("--pmd-cpu-mask", "zz")


def test_environment_checks(tmp_path: Any, tools: None) -> None:
    build = fake_build(tmp_path)
    c = cfg("--ovs-build", build, env=True)
    assert c.use_hugepages and c.binaries.vsctl.startswith(build)
    with pytest.raises(ConfigError, match="root"):
        cfg("--ovs-build", build, h=host(is_root=False), env=True)
    # Missing hugepages are reserved when the switch starts, not refused.
    c = cfg("--ovs-build", build, "--hugepages", "require",
            h=host(hugepages_free_mb=0), env=True)
    assert c.use_hugepages and c.hugepages_mode == "require"
    c = cfg("--ovs-build", build, h=host(hugepages_free_mb=0), env=True)
    assert c.use_hugepages
    assert any("reserved for the run" in n for n in c.notes)
    c = cfg("--ovs-build", build, "--hugepages", "off", env=True)
    assert not c.use_hugepages
    with pytest.raises(ConfigError, match="not an executable"):
        cfg("--ovs-build", str(tmp_path / "nowhere"), env=True)
    with pytest.raises(ConfigError, match="not an executable"):
        cfg("--vswitchd", str(tmp_path / "no-vswitchd"), env=True)
    # Without --ovs-build, --vswitchd uses the system's tools and schema.
    b = binaries.resolve_binaries(None, STOCK)
    assert b.vswitchd == STOCK
    assert b.schema == "/usr/share/openvswitch/vswitch.ovsschema"


def test_cli_exit_status_2(monkeypatch: Any, capsys: Any) -> None:
    monkeypatch.setattr(daq_incast, "probe_host",
                        lambda: host(is_root=False))
    assert daq_incast.main(["--ros", "0"]) == 2
    assert "--ros must be positive" in capsys.readouterr().err
    assert daq_incast.main(["--vswitchd", STOCK]) == 2
    assert "root" in capsys.readouterr().err
    assert daq_incast.main(["--dry-run", "--ros", "40"]) == 0
    out = capsys.readouterr().out
    assert "2 ROS per namespace" in out


def test_script_help_and_bad_args() -> None:
    p = subprocess.run([sys.executable, SCRIPT, "--help"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0
    for word in ("NAME", "DESCRIPTION", "EXIT STATUS", "--link-rate",
                 "--sweep", "--credits"):
        assert word in p.stdout
    p = subprocess.run([sys.executable, SCRIPT, "--link-rate", "9gbit"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "error" in p.stderr


# ------------------------------------------------------------- statistics
def test_percentile() -> None:
    assert stats.percentile([5.0], 99) == 5.0
    assert stats.percentile([1, 2, 3, 4, 5], 50) == 3
    assert stats.percentile([1, 2, 3, 4], 50) == 2.5
    assert stats.percentile(list(range(1, 101)), 99) == pytest.approx(99.01)
    assert stats.percentile([3, 1, 2], 0) == 1
    assert stats.percentile([3, 1, 2], 100) == 3
    with pytest.raises(ValueError):
        stats.percentile([], 50)
    with pytest.raises(ValueError):
        stats.percentile([1], 101)


def test_summary_and_timeouts() -> None:
    times = [0.05, 0.05, 0.2, 0.45, 0.06]
    s = stats.summarize_times(times)
    assert s["mean"] == pytest.approx(0.162)
    assert s["p50"] == 0.06 and s["max"] == 0.45 and s["min"] == 0.05
    assert stats.count_timeouts(times) == 2          # 200 ms counts
    assert stats.count_timeouts(times, 0.5) == 0
    assert stats.count_timeouts([]) == 0


def test_goodput() -> None:
    # 2 events of 1 MB: 10 ms and 90 ms -> 2 MB in 0.1 s.
    b, t = [1_000_000, 1_000_000], [0.01, 0.09]
    assert stats.goodput(b, t) == pytest.approx(160e6)
    assert stats.mean_event_goodput(b, t) == pytest.approx(
        (800e6 + 800e6 / 9) / 2)
    with pytest.raises(ValueError):
        stats.goodput([1], [])
    with pytest.raises(ValueError):
        stats.goodput([1], [0.0])


def test_busy_time_and_goodput_over_it() -> None:
    # Disjoint intervals (one event at a time): the sum of the times.
    assert stats.busy_time([(0, 1), (2, 3.5)]) == pytest.approx(2.5)
    # Overlapping and nested ones (events in flight) count once.
    assert stats.busy_time([(0, 2), (1, 3), (1.5, 2.5), (5, 6)]) == \
        pytest.approx(4)
    assert stats.busy_time([]) == 0
    with pytest.raises(ValueError):
        stats.busy_time([(2, 1)])
    # Three 1 MB events of 30 ms each, in flight together over 50 ms:
    # the link moved 3 MB in 50 ms, not in 90 ms.
    b, t = [1_000_000] * 3, [0.03] * 3
    assert stats.goodput(b, t) == pytest.approx(3e6 * 8 / 0.09)
    assert stats.goodput(b, t, busy=0.05) == pytest.approx(3e6 * 8 / 0.05)
    m = stats.summarize_mode(t, b, 480e6, 0.2, busy=0.05,
                             first_byte=[1e-4, 2e-4, 3e-4])
    assert m["ideal_ratio"] == pytest.approx(1.0)
    assert m["busy_s"] == 0.05
    assert m["first_byte_s"]["p50"] == pytest.approx(2e-4)


def test_link_busy_of_dcms_that_share_a_link() -> None:
    """Two DCMs of one host: their events' transfers overlap on its one
    access link, which is busy for their union (not for their sum: the
    link then looked half idle, "link busy 50%", while it carried both at
    its rate); a DCM on a host of its own has a link of its own."""
    from ovs_daqring.incast.runner import event_figures

    def dcm(start_ns: int, sent_ns: int, last_ns: int) -> Dict[str, Any]:
        return {"t_go_ns": 0, "start_ns": [start_ns], "times_ns": [last_ns],
                "bytes": [1_000_000], "first_byte_ns": [1],
                "ros_sent_ns": [sent_ns], "arrival_last_ns": [last_ns]}
    both = {0: dcm(0, 1, 2 * 10**9), 1: dcm(0, 1, 2 * 10**9)}
    got = event_figures(both, ["hlt0", "hlt0"])
    assert got["link_time"] == pytest.approx(2.0, abs=1e-6)
    # 2 MB at 8 Mbit/s: 2 s of the link, busy all along.
    s = stats.link_split(got["transfer"], got["transfer_bytes"],
                         got["read_lag"], got["link_time"], 8e6)
    assert s["busy_ratio"] == pytest.approx(1.0, abs=1e-6)
    apart = event_figures(both, ["hlt0", "hlt1"])
    assert apart["link_time"] == pytest.approx(4.0, abs=1e-6)
    assert apart["busy"] == pytest.approx(4.0, abs=1e-6)


def test_link_split() -> None:
    """After the request path an event's time splits into its transfer
    (first ROS send to the last frame's arrival at the DCM host) and the
    DCM's read lag.  Two 1 MB events at 8 Mbit/s of ideal goodput need 1 s
    of link each; transfers of 1 s and 1.5 s make the link busy 2 s of
    2.5 s."""
    s = stats.link_split([1.0, 1.5], [1_000_000] * 2, [2e-5, 4e-5], 2.5,
                         8e6)
    assert s["events"] == 2
    assert s["busy_ratio"] == pytest.approx(0.8)
    assert s["transfer_s"]["min"] == pytest.approx(1.0)
    assert s["read_lag_s"]["mean"] == pytest.approx(3e-5)
    assert s["link_time_s"] == 2.5
    # Overlapping events (processing units): the union of their transfers.
    assert stats.link_split([1.0] * 2, [1_000_000] * 2, [0.0] * 2, 2.0,
                            8e6)["busy_ratio"] == pytest.approx(1.0)
    assert stats.link_words({"link": s}) == (
        " link busy 80.0% after the first send,")
    assert stats.link_words({}) == ""
    for bad in (([], [], []), ([1.0], [1, 1], [0, 0]), ([1.0], [1], [])):
        with pytest.raises(ValueError):
            stats.link_split(*bad, 1.0, 8e6)
    with pytest.raises(ValueError):
        stats.link_split([1.0], [1], [0.0], 1.0, 0)


def test_ideal_goodput() -> None:
    mss = 1448
    # Whole segments: MSS / (MSS + 66 header bytes + 24 Ethernet overhead)
    assert stats.payload_efficiency(10 * mss, mss, 24) == pytest.approx(
        1448 / 1538)
    assert stats.payload_efficiency(10 * mss, mss, 0) == pytest.approx(
        1448 / 1514)
    # 32 KiB = 22 full segments + 912 bytes: 23 segments of overhead.
    assert stats.wire_bytes(32768, mss, 24) == 32768 + 23 * 90
    ideal = stats.ideal_goodput(200e6, 32768, mss, 24)
    assert ideal == pytest.approx(200e6 * 32768 / (32768 + 2070))
    assert 187e6 < ideal < 189e6
    t = stats.ideal_collection_time(200e6, 30, 32768, mss, 24)
    assert t == pytest.approx(30 * 34838 * 8 / 200e6)
    assert stats.segments(1, mss) == 1 and stats.segments(1449, mss) == 2


def test_counter_delta() -> None:
    assert stats.counter_delta({"a": 1, "b": 5}, {"a": 4, "b": 5, "c": 2}) \
        == {"a": 3, "b": 0, "c": 2}


def mode_result(label: str = "stock") -> Dict[str, Any]:
    r = {"mode": "stock", "label": label, "status": "ok", "error": None,
         "params": {}, "wall_s": 1.0}
    r.update(stats.summarize_mode([0.05, 0.25], [983040, 983040], 188e6,
                                  0.2))
    r["tcp"] = {"retrans_segs": 3, "rto_timeouts": 1}
    r["drops"] = {"switch_total": 7, "daqring": 0, "qdisc": 2, "ports": {},
                  "qdiscs": {}, "hosts": {}}
    r["samples_s"] = [0.05, 0.25]
    r["pmd_cpu_share"] = 0.99
    return r


def results_doc() -> Dict[str, Any]:
    return {"schema": stats.SCHEMA, "version": "1.0",
            "started": "2024-01-01T00:00:00+00:00", "duration_s": 3.5,
            "host": {}, "config": {}, "topology": {}, "notes": [],
            "ideal": {"efficiency": 0.94, "goodput_bps": 188e6,
                      "collection_time_s": 0.0418, "event_bytes": 983040},
            "modes": [mode_result(),
                      {"mode": "daqring", "label": "daqring",
                       "status": "error", "error": "no daqring support",
                       "params": {}}],
            "sweep": None}


def test_results_schema() -> None:
    doc = results_doc()
    assert stats.validate_results(doc) == []
    assert stats.validate_results(json.loads(json.dumps(doc))) == []
    assert doc["modes"][0]["timeouts"] == 1
    assert doc["modes"][0]["events"] == 2
    del doc["modes"][0]["goodput_bps"]
    assert any("goodput_bps" in e for e in stats.validate_results(doc))
    doc = results_doc()
    doc["modes"][0]["timeouts"] = True                # bool is not a count
    assert stats.validate_results(doc)
    doc = results_doc()
    doc["modes"][0]["collection_time_s"]["p99"] = "slow"
    assert any("p99" in e for e in stats.validate_results(doc))
    doc = results_doc()
    doc["schema"] = "other/2"
    assert stats.validate_results(doc)
    doc = results_doc()
    doc["sweep"] = {"param": "ring-size", "mode": "daqring",
                    "values": [128], "labels": ["daqring ring-size=128"]}
    assert stats.validate_results(doc) == []
    assert stats.validate_results([]) != []


def test_table() -> None:
    doc = results_doc()
    doc["modes"][0]["tcp"]["rto_timeouts"] = 4
    text = stats.format_table(doc["modes"], 188e6)
    assert "stock" in text and "no daqring support" in text
    assert "ideal goodput: 188.0 Mbit/s" in text
    # "slow" counts the events of >= 200 ms (1 of 2), "RTOs" is the
    # kernel's count (4), each under its own heading.
    head = text.splitlines()[0].split()
    row = text.splitlines()[2].split()
    assert row[head.index("slow")] == "1"
    assert row[head.index("RTOs")] == "4"
    assert row[head.index("retrans")] == "3"


def test_failed_mode_run_exits_non_zero(tmp_path: Any, capsys: Any) -> None:
    """A mode run that failed (here daqring) is reported, kept in the
    JSON as status error, and makes daq-incast exit 1; all runs ok: 0."""
    js = tmp_path / "r.json"
    c = cfg("--json", str(js))
    assert report.report(results_doc(), c, 188e6, []) == 1
    err = capsys.readouterr().err
    assert "1 of 2 mode run(s) failed" in err
    assert "daqring: no daqring support" in err
    with open(js) as f:
        assert [m["status"] for m in json.load(f)["modes"]] == ["ok",
                                                                "error"]
    ok = results_doc()
    del ok["modes"][1]
    assert report.report(ok, c, 188e6, []) == 0
    assert "failed" not in capsys.readouterr().err
    # An earlier failure (e.g. a timeout) keeps its own status.
    assert report.report(ok, c, 188e6, [], rc=130) == 130


def test_program_daqrings_refused_is_mode_unavailable(tmp_path: Any
                                                      ) -> None:
    """ovs-daqctl failing (here: no database to talk to) raises
    ModeUnavailable, as program_daqrings documents, not RunError."""
    if subprocess.run([sys.executable, "-c", "import ovs.db.idl"]
                      ).returncode != 0:
        pytest.skip("ovs-daqctl needs python3-openvswitch: run the tests "
                    "with /usr/bin/python3")
    plan = topology.make_plan(4243, 2, 1, 1)

    class NoDatabase:
        """A switch whose database is gone: every ovs-daqctl call fails."""
        dir = str(tmp_path)
        db = "unix:" + str(tmp_path / "no-such-db.sock")
        bridge = "br0"
        bin = argparse.Namespace(ofctl="/bin/false")
        env = None

        def iface_types(self) -> List[str]:
            return ["daqring", "dpdk"]

    with pytest.raises(switch.ModeUnavailable) as e:
        switch.program_daqrings(NoDatabase(), plan,  # type: ignore
                                1024, 32, 500)
    assert "cannot connect" in str(e.value)
    assert "removing them failed" in str(e.value)


# ---------------------------------------------------------------- topology
def test_plan() -> None:
    plan = topology.make_plan(4194303, 40, 2, 2, dcm_frames=512)
    assert len(plan.ros_hosts) == 20 and len(plan.dcms) == 2
    names = [h.veth for h in plan.hosts]
    assert len(set(names)) == len(names)
    assert all(len(n) <= 15 for n in names)
    assert plan.switch_ns == "dqi4194303-sw"
    assert len(plan.ros_ips) == 40 == len(set(plan.ros_ips))
    assert plan.ros_hosts[0].ips == ["10.77.1.1", "10.77.1.2"]
    assert plan.dcms[1].ips == ["10.77.0.2"]
    assert len({h.mac for h in plan.hosts}) == 22
    ports = [h.ofport for h in plan.hosts]
    assert len(set(ports)) == len(ports)
    args = [h.devargs() for h in plan.hosts]
    assert all("qdisc_bypass=0" in a for a in args)
    assert "framecnt=512" in plan.dcms[0].devargs()
    assert "framecnt" not in plan.ros_hosts[0].devargs()
    assert len({a.split(",")[0] for a in args}) == len(args)
    assert topology.ros_ip(249) == "10.77.1.250"
    assert topology.ros_ip(250) == "10.77.2.1"


def test_dcm_port_rx_rings_hold_a_request_burst() -> None:
    """A DCM port's framecnt models its output buffer; DPDK gives the RX
    ring the same size, so the port gets queue pairs whose RX rings hold
    as much as a default port's (512 frames), at most 16 pairs."""
    for frames, qpairs in ((32, 16), (40, 13), (64, 8), (2, 16), (512, 1),
                           (0, 1)):
        plan = topology.make_plan(4194303, 120, 1, 4, dcm_frames=frames)
        dcm = plan.dcms[0]
        assert dcm.qpairs == qpairs, frames
        assert ("qpairs=%d" % qpairs in dcm.devargs()) == (qpairs > 1)
        assert frames * qpairs >= min(topology.RX_FRAMES,
                                      frames * topology.MAX_QPAIRS)
        assert all(h.qpairs == 1 and "qpairs" not in h.devargs()
                   for h in plan.ros_hosts)


def test_tbf_command() -> None:
    cmd = topology.tbf_command("ns", "v0", 200_000_000, 16384, 49152, 24)
    assert cmd[:6] == ["tc", "-n", "ns", "qdisc", "replace", "dev"]
    assert "stab" in cmd and "overhead" in cmd and "24" in cmd
    assert cmd[-7:] == ["tbf", "rate", "200000000bit", "burst", "16384",
                        "limit", "49152"]
    assert "stab" not in topology.tbf_command("ns", "v0", 10**8, 2000,
                                              2000, 0)


def test_rps_mask() -> None:
    assert topology.rps_mask([]) == ""
    assert topology.rps_mask([0]) == "00000001"
    assert topology.rps_mask([0, 2, 3]) == "0000000d"
    assert topology.rps_mask([33, 0]) == "00000002,00000001"


def test_host_rps_option() -> None:
    """--host-rps: the hosts' receive on the CPUs outside --pmd-cpu-mask
    (all hosts, or the ROS only), or (off) wherever the sender runs."""
    assert cfg().host_rps == limits.HOST_RPS_DEFAULT == "off"
    on = cfg("--host-rps", "on")
    assert on.rps_cpus == [0] and on.rps_kinds == ("dcm", "ros")
    assert on.as_dict()["host_rps"] == "on"
    ros = cfg("--host-rps", "ros")
    assert ros.rps_cpus == [0] and ros.rps_kinds == ("ros",)
    off = cfg("--host-rps", "off")
    assert off.rps_cpus == [] and off.rps_kinds == ()
    four = cfg("--host-rps", "on", "--pmd-cpu-mask", "0x4",
               h=host(cpus=[0, 1, 2, 3]))
    assert four.rps_cpus == [0, 1, 3]
    plan = topology.make_plan(4194303, 30, 1, 1)
    assert "hosts' receive: RPS to CPU 0, off the PMD's, for DCM and ROS" \
        in describe.describe(on, plan)
    assert "for ROS (--host-rps ros)" in describe.describe(ros, plan)
    assert "hosts' receive: where the sender runs" in describe.describe(
        off, plan)
    with pytest.raises(SystemExit):
        parse("--host-rps", "maybe")


def _netns_skip_reason() -> Optional[str]:
    if os.geteuid() != 0:
        return "needs root"
    for tool in ("ip", "tc", "ethtool"):
        if shutil.which(tool) is None:
            return "needs " + tool
    return None


@pytest.mark.skipif(_netns_skip_reason() is not None,
                    reason=str(_netns_skip_reason()))
@pytest.mark.parametrize("rps_cpus,kinds,dcm_mask,ros_mask", [
    ([0], ("dcm", "ros"), 1, 1), ([0], ("ros",), 0, 1),
    ([], ("dcm", "ros"), 0, 0)])
def test_topology_steers_host_receive(rps_cpus: List[int], kinds: Any,
                                      dcm_mask: int, ros_mask: int) -> None:
    """Topology.create sets rps_cpus on the e0 of every host of the kinds
    asked for (and leaves the kernel's default, none, elsewhere);
    removing the namespaces leaves nothing behind."""
    plan = topology.make_plan(os.getpid() % 100000, 2, 1, 1)
    cleanup = Cleanup()
    try:
        topology.Topology(plan, cleanup).create(10**8, 16384, 60000, 24,
                                                rps_cpus, kinds)
        for h in plan.hosts:
            text = subprocess.run(
                ["ip", "netns", "exec", h.ns, "cat",
                 "/sys/class/net/e0/queues/rx-0/rps_cpus"],
                capture_output=True, text=True, check=True).stdout
            mask = dcm_mask if h.kind == "dcm" else ros_mask
            assert int(text.strip().replace(",", ""), 16) == mask, h.ns
    finally:
        assert cleanup.run() == []
    left = subprocess.run(["ip", "netns", "list"], capture_output=True,
                          text=True).stdout
    assert plan.tag + "-" not in left


def _kernel_ccs() -> List[str]:
    try:
        return validation.available_congestion_control()
    except ConfigError:
        return []


@pytest.mark.skipif(_netns_skip_reason() is not None,
                    reason=str(_netns_skip_reason()))
@pytest.mark.parametrize("cc", ["cubic", "reno"])
def test_topology_sets_congestion_control(cc: str) -> None:
    """Every host namespace runs the congestion control asked for, read
    back from the namespace itself (not inherited from the machine), and
    the results record it per host."""
    if cc not in _kernel_ccs():
        pytest.skip("this kernel has no %s" % cc)
    allowed = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
    with open(allowed) as f:
        allowed_before = f.read()
    plan = topology.make_plan(os.getpid() % 100000, 3, 1, 1)
    cleanup = Cleanup()
    try:
        topo = topology.Topology(plan, cleanup)
        topo.create(10**8, 16384, 60000, 24, congestion_control=cc)
        # The machine's list of allowed ones is put back at once.
        with open(allowed) as f:
            assert f.read() == allowed_before
        for h in plan.hosts:
            got = subprocess.run(
                ["ip", "netns", "exec", h.ns, "sysctl", "-n",
                 "net.ipv4.tcp_congestion_control"],
                capture_output=True, text=True, check=True).stdout
            assert got.strip() == cc, h.ns
        hosts_cc = topo.congestion_control()
        assert hosts_cc == {h.ns: cc for h in plan.hosts}
        c = cfg("--congestion-control", cc)
        d = runner.topology_dict(c, plan, hosts_cc)
        assert d["congestion_control"] == {"configured": cc,
                                           "hosts": hosts_cc}
        assert report.cc_line({"topology": d}) == (
            "TCP congestion control: %s in all 4 host namespaces" % cc)
    finally:
        assert cleanup.run() == []


def test_congestion_control_option() -> None:
    """--congestion-control: cubic by default, recorded in the config and
    the plan line; a bad name or one the kernel lacks is refused."""
    assert cfg().congestion_control == limits.CONGESTION_CONTROL_DEFAULT \
        == "cubic"
    reno = cfg("--congestion-control", "reno")
    assert reno.as_dict()["congestion_control"] == "reno"
    plan = topology.make_plan(4194303, 30, 1, 1)
    assert "TCP: congestion control reno (--congestion-control)" in \
        describe.describe(reno, plan)
    assert "TCP: congestion control cubic" in describe.describe(cfg(), plan)
    for bad in ("", "Cubic", "cubic;reboot", "x" * 17):
        with pytest.raises(ConfigError, match="not a congestion control"):
            cfg("--congestion-control", bad)
    validation.check_congestion_control("bbr", ["reno", "bbr", "cubic"])
    with pytest.raises(ConfigError) as e:
        validation.check_congestion_control("dctcp", ["reno", "bbr", "cubic"])
    assert str(e.value) == ("--congestion-control dctcp: not available on "
                            "this kernel (it offers: reno, bbr, cubic)")
    assert report.cc_line({"topology": {"congestion_control": {
        "configured": "cubic", "hosts": {"a": "cubic", "b": "bbr"}}}}) == (
        "TCP congestion control: cubic configured; hosts: a cubic, b bbr")


def test_parse_snmp() -> None:
    text = ("Tcp: RtoAlgorithm RetransSegs InErrs\nTcp: 1 42 0\n"
            "TcpExt: TCPTimeouts TCPLossProbes\nTcpExt: 7 3\n")
    assert topology.parse_snmp(text) == {
        "Tcp.RtoAlgorithm": 1, "Tcp.RetransSegs": 42, "Tcp.InErrs": 0,
        "TcpExt.TCPTimeouts": 7, "TcpExt.TCPLossProbes": 3}


def test_loss_probe_repairs_are_counted_apart_from_rtos() -> None:
    """A tail loss that a loss probe repaired is no RTO, but it costs
    its event 200 ms or more: the TCP figures and the mode's summary
    line say how many there were (TcpExt.TCPLossProbeRecovery)."""
    before = {"tcp": {"dcm": {"Tcp.RetransSegs": 1,
                              "TcpExt.TCPLossProbeRecovery": 2}}}
    after = {"tcp": {"dcm": {"Tcp.RetransSegs": 13,
                             "TcpExt.TCPLossProbeRecovery": 14,
                             "TcpExt.TCPLossProbes": 20},
                     "ros": {"Tcp.RetransSegs": 0}}}
    got = counters.tcp_figures(before, after)  # type: ignore[arg-type]
    assert got["probe_recoveries"] == 12 and got["rto_timeouts"] == 0
    assert got["by_namespace"] == {"dcm": {
        "retrans_segs": 12, "rto_timeouts": 0, "probe_recoveries": 12}}
    assert stats.probe_words(got) == (
        " (12 tail losses repaired by loss probes)")
    assert stats.probe_words({"probe_recoveries": 1}) == (
        " (1 tail loss repaired by loss probes)")
    assert stats.probe_words({"rto_timeouts": 3}) == ""


def test_stale_namespaces() -> None:
    assert stale_namespaces(["dqi%d-sw" % os.getpid(), "other",
                             "dqi999999999-ros3"]) == ["dqi999999999-ros3"]


def test_cleanup_runs_once_in_reverse() -> None:
    done: List[str] = []
    c = Cleanup()
    c.push("a", lambda: done.append("a"))
    c.push("b", lambda: 1 / 0)          # a failure does not stop the rest
    c.push("c", lambda: done.append("c"))
    assert len(c.run()) == 1
    assert done == ["c", "a"]
    c.run()
    assert done == ["c", "a"]


# ------------------------------------------------------------------ agents
def _start_ros_agents(port: int, size: int) -> subprocess.Popen:
    """ROS agents on 127.0.0.1 and 127.0.0.2, ready to serve 'size'-byte
    fragments on 'port'."""
    ros = subprocess.Popen([sys.executable, lifecycle.AGENTS, "ros",
                            "127.0.0.1,127.0.0.2", str(port), str(size)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True)
    assert ros.stdout is not None
    if ros.stdout.readline().strip() != "READY":
        ros.kill()
        ros.wait()
        raise AssertionError("ROS agents did not start")
    return ros


def test_agents_on_loopback() -> None:
    """The ROS/DCM protocol, over 127.0.0.x only."""
    agents = lifecycle.AGENTS
    port = 20000 + os.getpid() % 20000
    ros = _start_ros_agents(port, 4096)
    try:
        spec = {"ip": "127.0.0.1",
                "ros": ["127.0.0.1", "127.0.0.2", "127.0.0.1"],
                "port": port, "credits": 2, "seed": 1,
                "fragment_size": 3000, "fragment_dist": "uniform",
                "events": 4, "event_gap_ms": 0, "event_deadline_s": 10}
        p = subprocess.run([sys.executable, agents, "dcm", json.dumps(spec)],
                           input="GO\n", capture_output=True, text=True,
                           timeout=60)
        lines = p.stdout.splitlines()
        assert p.returncode == 0, p.stdout + p.stderr
        assert lines[0] == "READY"
        assert sum(1 for line in lines if line.startswith("EV ")) == 4
        done = json.loads(lines[-1][5:])
        assert len(done["times_ns"]) == 4
        assert all(1500 * 3 <= b <= 4500 * 3 for b in done["bytes"])
    finally:
        assert ros.stdin is not None
        ros.stdin.close()
        ros.wait(10)


def test_dcm_warmup_events_are_collected_not_measured() -> None:
    """--warmup-events: after the 64-byte round, the DCM asks for that
    many full-size events, then for the measured ones, and reports only
    those (with the sizes they have without warm-up)."""
    import socket
    import threading
    agents = load_agents()

    def run_dcm(warmup: int) -> Any:
        srv = socket.socket()
        srv.bind(("127.0.0.3", 0))
        srv.listen(1)
        reqs: List[Any] = []

        def serve() -> None:
            conn, _ = srv.accept()
            buf = b""
            while True:
                data = conn.recv(4096)
                if not data:
                    break
                buf += data
                while len(buf) >= agents.REQ.size:
                    number, size = agents.REQ.unpack_from(buf)
                    buf = buf[agents.REQ.size:]
                    reqs.append((number, size))
                    conn.sendall(bytes(size))
            conn.close()
        t = threading.Thread(target=serve, daemon=True)
        t.start()
        spec = {"ip": "127.0.0.1", "ros": ["127.0.0.3"],
                "port": srv.getsockname()[1], "credits": 1, "seed": 3,
                "fragment_size": 3000, "fragment_dist": "uniform",
                "events": 3, "warmup_events": warmup, "event_gap_ms": 0,
                "event_deadline_s": 10}
        p = subprocess.run([sys.executable, lifecycle.AGENTS, "dcm",
                            json.dumps(spec)], input="GO\n",
                           capture_output=True, text=True, timeout=60)
        t.join(10)
        srv.close()
        assert p.returncode == 0, p.stdout + p.stderr
        lines = p.stdout.splitlines()
        assert sum(1 for line in lines if line.startswith("EV ")) == 3
        return reqs, json.loads(lines[-1][5:])

    reqs0, done0 = run_dcm(0)
    reqs2, done2 = run_dcm(2)
    assert reqs0[0] == reqs2[0] == (0xffffffff, agents.WARMUP_SIZE)
    assert [n for n, _ in reqs0[1:]] == [0, 1, 2]
    assert [n for n, _ in reqs2[1:]] == [0xfffffffe, 0xfffffffd, 0, 1, 2]
    assert all(1500 <= size <= 4500 for _, size in reqs2[1:3])
    # The measured events are the same with and without warm-up.
    assert reqs2[3:] == reqs0[1:]
    assert done2["bytes"] == done0["bytes"]
    assert len(done2["times_ns"]) == 3


def load_agents() -> Any:
    import importlib.util
    spec = importlib.util.spec_from_file_location("incast_agents",
                                                  lifecycle.AGENTS)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)          # type: ignore
    return mod


def _collector_links(agents: Any, n: int) -> Tuple[List[Any], List[Any],
                                                   Callable[[int], List[Any]]]:
    """`n` nonblocking socket pairs standing for a DCM's ROS connections:
    the DCM's ends, the ROS' ends, and a function returning the requests
    (event, size) that ROS i received since it was last called."""
    import socket
    pairs = [socket.socketpair() for _ in range(n)]
    dcm = [a for a, _ in pairs]
    ros = [b for _, b in pairs]
    for sck in dcm + ros:
        sck.setblocking(False)

    def requests(i: int) -> List[Any]:
        try:
            data = ros[i].recv(4096)
        except BlockingIOError:
            return []
        return [agents.REQ.unpack_from(data, k)
                for k in range(0, len(data), agents.REQ.size)]
    return dcm, ros, requests


def test_collector_credits_bound_all_pus_together() -> None:
    """Three PUs' events over two ROS connections with 3 credits: at most
    3 fragment requests are outstanding over all PUs, a completed
    fragment frees a credit for the next request (in order), and bytes
    are attributed to events in request order per connection."""
    agents = load_agents()
    dcm, ros, requests = _collector_links(agents, 2)
    col = agents.Collector(dcm, ["r0", "r1"], 3, 5)
    evs = [agents.Event(k, k, [100 + k, 200 + k], k) for k in range(3)]
    for ev in evs:
        col.start(ev)
    assert requests(0) == [(0, 100), (1, 101)]
    assert requests(1) == [(0, 200)]
    assert col.outstanding == 3 and len(col.waiting) == 3
    # ROS 0 answers event 0's fragment: event 1's request to ROS 1 goes.
    ros[0].send(bytes(100))
    assert col.poll() == []
    assert col.outstanding == 3
    assert requests(1) == [(1, 201)]
    assert evs[0].first and not evs[1].first
    # ROS 1 answers event 0: event 0 is complete, event 2's first request
    # goes to ROS 0.
    ros[1].send(bytes(200))
    assert col.poll() == [evs[0]]
    assert requests(0) == [(2, 102)]
    # Without credits (window = ROS x PUs) every request goes at once.
    col2 = agents.Collector(dcm, ["r0", "r1"], 6, 5)
    for k in range(3):
        col2.start(agents.Event(10 + k, k, [1, 1], k))
    assert col2.outstanding == 6 and not col2.waiting
    for sck in dcm + ros:
        sck.close()


def test_collector_pipeline_one_request_per_connection() -> None:
    """With --pipeline 1 a PU's request to a ROS that still owes an
    answer waits, without a credit, until that answer is complete, and
    then goes before requests still waiting for credits; with 0 all go at
    once.  The default is 1 and the header says it."""
    agents = load_agents()
    dcm, ros, requests = _collector_links(agents, 2)
    try:
        col = agents.Collector(dcm, ["r0", "r1"], 3, 5, 0, 1)
        evs = [agents.Event(k, k, [100 + k, 200 + k], k) for k in range(3)]
        for ev in evs:
            col.start(ev)
        # One request per connection; the held ones hold no credit, so
        # the third credit stays free.
        assert requests(0) == [(0, 100)]
        assert requests(1) == [(0, 200)]
        assert col.outstanding == 2
        assert [len(h) for h in col.held] == [2, 2]
        # ROS 1 answers part of event 0: nothing new goes.
        ros[1].send(bytes(150))
        assert col.poll() == []
        assert requests(1) == []
        # ... and the rest: event 1's request to ROS 1 goes, not event 2's.
        ros[1].send(bytes(50))
        assert col.poll() == []
        assert requests(1) == [(1, 201)]
        assert [len(h) for h in col.held] == [2, 1]
        ros[0].send(bytes(100))
        assert col.poll() == [evs[0]]
        assert requests(0) == [(1, 101)]
        assert col.outstanding == 2
        # Without the limit every request goes at once.
        col0 = agents.Collector(dcm, ["r0", "r1"], 6, 5, 0, 0)
        for k in range(3):
            col0.start(agents.Event(10 + k, k, [1, 1], k))
        assert col0.outstanding == 6 and not any(col0.held)
    finally:
        for sck in dcm + ros:
            sck.close()
    assert cfg().pipeline == 1
    assert cfg("--pipeline", "0").pipeline == 0
    for bad in ("-1", "1025"):
        with pytest.raises(ConfigError, match="--pipeline"):
            cfg("--pipeline", bad)
    plan = topology.make_plan(4194303, 30, 1, 1)
    assert "requests per connection 1;" in describe.describe(cfg(), plan)
    assert "requests per connection unlimited;" in describe.describe(
        cfg("--pipeline", "0"), plan)


def test_agents_pus_on_loopback() -> None:
    """Three processing units: three events in flight at once (their
    intervals overlap), each collected completely, with its first-byte
    time and the ROS agents' stamps."""
    agents = lifecycle.AGENTS
    port = 20000 + (os.getpid() + 7) % 20000
    ros = _start_ros_agents(port, 65536)
    try:
        spec = {"ip": "127.0.0.1", "ros": ["127.0.0.1", "127.0.0.2"],
                "port": port, "credits": 0, "seed": 1, "pus": 3,
                "fragment_size": 65536, "fragment_dist": "fixed",
                "events": 9, "event_gap_ms": 0, "event_deadline_s": 10}
        p = subprocess.run([sys.executable, agents, "dcm", json.dumps(spec)],
                           input="GO\n", capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        done = json.loads(p.stdout.splitlines()[-1][5:])
        assert done["bytes"] == [2 * 65536] * 9
        assert sorted(set(done["pu"])) == [0, 1, 2]
        start, times = done["start_ns"], done["times_ns"]
        # The first three events start together, before the first ends.
        assert max(start[:3]) < start[0] + times[0]
        first = done["first_byte_ns"]
        assert all(0 < f <= t for f, t in zip(first, times))
        # The ROS' stamps split the wait for the first byte: request read
        # by the first ROS, its first send, the first byte read.
        assert all(0 < r <= s <= f for r, s, f in zip(
            done["ros_read_ns"], done["ros_sent_ns"], first))
        # The kernel's receive time of the last frame: after the first
        # ROS sent, no later than the DCM completed the event.
        assert all(0 < s < z <= t for s, z, t in zip(
            done["ros_sent_ns"], done["arrival_last_ns"], times))
        busy = stats.busy_time([(s, s + t) for s, t in zip(start, times)])
        assert busy < sum(times)
    finally:
        assert ros.stdin is not None
        ros.stdin.close()
        ros.wait(10)


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root")
def test_hog_preempts_at_real_time_priority_until_stdin_closes() -> None:
    """agents.py hog (--pmd-preempt) pins itself to its CPU at SCHED_FIFO
    priority (so that it preempts normal threads such as a PMD), runs,
    and exits 0 when stdin closes.  The share of the CPU it takes is a
    timing that a loaded machine changes (it took 0.146 for 0.1 inside a
    full make check): not asserted here."""
    cpu = max(os.sched_getaffinity(0))
    p = subprocess.Popen([sys.executable, lifecycle.AGENTS, "hog", str(cpu),
                          "1000", "10000"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdin is not None
    try:
        assert p.stdout.readline().strip() == "READY"
        assert os.sched_getscheduler(p.pid) == os.SCHED_FIFO
        assert os.sched_getparam(p.pid).sched_priority == 1
        assert os.sched_getaffinity(p.pid) == {cpu}
    finally:
        p.stdin.close()
    assert p.wait(30) == 0


def test_hog_skips_the_periods_it_missed() -> None:
    """The hog's schedule: one busy time per period; after a late
    wake-up it resumes at the next period start instead of running the
    missed busy times back to back."""
    ms = 1000000
    assert agents.hog_next(0, 1 * ms, 10 * ms) == 10 * ms
    assert agents.hog_next(0, 10 * ms, 10 * ms) == 10 * ms
    assert agents.hog_next(0, 10 * ms + 1, 10 * ms) == 20 * ms
    assert agents.hog_next(0, 35 * ms, 10 * ms) == 40 * ms
    assert agents.hog_next(5 * ms, 100 * ms, 10 * ms) == 105 * ms
    # Never in the past, never more than a period ahead.
    for now in range(0, 50 * ms, 333333):
        nxt = agents.hog_next(0, now, 10 * ms)
        assert now <= nxt <= now + 10 * ms, (now, nxt)
        assert nxt % (10 * ms) == 0


def test_pmd_preempt_option() -> None:
    assert cfg().preempt_us == (0, 0)
    assert cfg("--pmd-preempt", "1/20").preempt_us == (1000, 20000)
    assert cfg("--pmd-preempt", "0.5/10").preempt_us == (500, 10000)
    for bad in ("1", "x/2", "2/1", "0/5", "6/10", "1/20000"):
        with pytest.raises(ConfigError):
            cfg("--pmd-preempt", bad)
    with pytest.raises(ConfigError):
        cfg("--pmd-preempt", "1/20", "--pmd-cpu-mask", "0x3",
            h=host(cpus=[0, 1, 2]))


def test_warmup_events_option() -> None:
    assert cfg().warmup_events == 1
    assert cfg("--warmup-events", "0").warmup_events == 0
    for bad in ("-1", "101"):
        with pytest.raises(ConfigError, match="--warmup-events"):
            cfg("--warmup-events", bad)
    assert "after 1 warm-up" in describe.describe(
        cfg(), topology.make_plan(4194303, 30, 1, 1))


def test_pus_option() -> None:
    c = cfg("--pus", "24")
    assert c.pus == 24
    # The automatic ring holds two events per PU, up to MAX_AUTO_RING.
    assert c.ring_size == 65536           # 2 x 24 x 30 x 23 -> 2^16
    assert cfg("--pus", "24", "--ros", "120", "--ros-per-host", "4",
               "--fragment-size", "128KiB").ring_size == \
        limits.MAX_AUTO_RING
    for bad in ("0", "-1", str(limits.MAX_PUS + 1)):
        with pytest.raises(ConfigError):
            cfg("--pus", bad)


# ------------------------------------------------------------- hugepages
class FakeKernel:
    """/proc/sys/vm/nr_hugepages in a file, HugePages_Free derived from it
    (minus pages in use), mounts recorded instead of made (MOUNTED: another
    run's hugetlbfs is mounted)."""

    def __init__(self, tmp_path: Any, monkeypatch: Any, total: int = 0,
                 used: int = 0, mounted: bool = False) -> None:
        self.nr = tmp_path / "nr_hugepages"
        self.nr.write_text("%d\n" % total)
        self.used = used
        self.mounted = mounted
        self.cmds: List[List[str]] = []
        self.mounts: List[str] = []
        monkeypatch.setattr(hugepages, "NR_HUGEPAGES", str(self.nr))
        monkeypatch.setattr(hugepages, "_meminfo", self.meminfo)
        monkeypatch.setattr(hugepages, "hugetlbfs_mounted",
                            lambda: self.mounted or bool(self.mounts))
        monkeypatch.setattr(hugepages, "_is_hugetlbfs_mount",
                            lambda path: path in self.mounts)
        monkeypatch.setattr(hugepages, "run", self.run)
        monkeypatch.setattr(hugepages.os, "geteuid", lambda: 0)

    def total(self) -> int:
        return int(self.nr.read_text())

    def meminfo(self) -> Any:
        return max(0, self.total() - self.used), 2048

    def run(self, cmd: List[str], **kw: Any) -> str:
        self.cmds.append(cmd)
        if cmd[0] == "mount":
            self.mounts.append(cmd[-1])
        elif cmd[0] == "umount":
            self.mounts.remove(cmd[-1])
        return ""


def test_hugepages_reserved_and_given_back(tmp_path: Any,
                                           monkeypatch: Any) -> None:
    k = FakeKernel(tmp_path, monkeypatch)
    c = Cleanup()
    assert hugepages.reserve(1024, str(tmp_path / "mnt"), c) is None
    assert k.total() == 512
    assert k.cmds == [["mount", "-t", "hugetlbfs", "none",
                       str(tmp_path / "mnt")]]
    # Another run reserves 100 more meanwhile: ours go, theirs stay.
    k.nr.write_text("612\n")
    assert c.run() == []
    assert k.total() == 100
    assert k.cmds[-1] == ["umount", str(tmp_path / "mnt")]


def test_hugepages_enough_already(tmp_path: Any, monkeypatch: Any) -> None:
    """Enough pages free and a hugetlbfs mounted, both maybe another
    run's: the run's first reservation adds its own pages all the same
    (hugepages: "A run's first reservation adds its own pages"); a second
    one of the same run counts what is there."""
    k = FakeKernel(tmp_path, monkeypatch, total=1000, used=200,
                   mounted=True)
    c = Cleanup()
    assert hugepages.reserve(1024, str(tmp_path / "mnt"), c) is None
    assert k.total() == 1000 + 512
    # A mount of our own all the same: the other one may go away.
    assert k.cmds == [["mount", "-t", "hugetlbfs", "none",
                       str(tmp_path / "mnt")]]
    assert hugepages.reserve(1024, str(tmp_path / "mnt"), c) is None
    assert k.total() == 1000 + 512 and len(k.cmds) == 1
    c.run()
    assert k.total() == 1000                # ours given back, no more
    assert k.cmds[-1] == ["umount", str(tmp_path / "mnt")]


def test_hugepages_unavailable(tmp_path: Any, monkeypatch: Any) -> None:
    FakeKernel(tmp_path, monkeypatch, total=10, used=10)

    def refuse(path: str, value: int) -> None:
        raise PermissionError("read-only")
    monkeypatch.setattr(hugepages, "_write_int", refuse)
    why = hugepages.reserve(64, str(tmp_path / "mnt"), Cleanup())
    assert why is not None and "cannot reserve hugepages" in why
    monkeypatch.setattr(hugepages.os, "geteuid", lambda: 1000)
    why = hugepages.reserve(64, str(tmp_path / "mnt"), Cleanup())
    assert why is not None and "only root" in why


def test_dpdk_memory_config(tmp_path: Any) -> None:
    c = Cleanup()
    settings, extra = hugepages.dpdk_memory_config(True, "1024", 1024,
                                                   "dqi1", c)
    assert settings == ["other_config:dpdk-socket-mem=1024"]
    assert extra == "--in-memory --file-prefix=dqi1"
    settings, extra = hugepages.dpdk_memory_config(False, "1024", 1024,
                                                   "dqi1", c)
    # DPDK refuses --no-huge with the --in-memory ovs-vswitchd would add.
    assert settings == [] and "--in-memory" not in extra
    assert extra == "--no-huge --legacy-mem -m 1024 --file-prefix=dqi1"


# ------------------------------------------------------------- end to end
def _e2e_skip_reason() -> Optional[str]:
    if os.geteuid() != 0:
        return "needs root"
    h = hosts.probe_host()
    # daq-incast reserves the hugepages it needs (or runs --no-huge).
    if len(h.cpus) < 2:
        return "needs 2 CPUs"
    default = binaries.resolve_binaries(None, None).vswitchd
    if not (os.access(default, os.X_OK) or os.access(STOCK, os.X_OK)):
        return "needs an ovs-vswitchd with DPDK"
    return _netns_skip_reason()


@pytest.mark.skipif(_e2e_skip_reason() is not None,
                    reason=str(_e2e_skip_reason()))
def test_end_to_end_stock(tmp_path: Any) -> None:
    """3 ROS x 8 KiB into one DCM, stock mode, 3 events."""
    default = binaries.resolve_binaries(None, None).vswitchd
    switch = [] if os.access(default, os.X_OK) else ["--vswitchd", STOCK]
    out = tmp_path / "r.json"
    p = subprocess.Popen(
        [sys.executable, SCRIPT, *switch, "--ros", "3", "--events", "3",
         "--fragment-size", "8KiB", "--modes", "stock", "--timeout", "240",
         "--json", str(out), "--socket-mem", "1024", "-q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = p.communicate(timeout=300)
    assert p.returncode == 0, stdout + stderr
    doc = json.loads(out.read_text())
    assert stats.validate_results(doc) == []
    (mode,) = doc["modes"]
    assert mode["status"] == "ok" and mode["events"] == 3
    assert mode["goodput_bps"] > 0
    assert mode["drops"]["ports"]                 # DCM port counters seen
    tag = "dqi%d-" % p.pid
    left = subprocess.run(["ip", "netns", "list"], capture_output=True,
                          text=True).stdout
    assert tag not in left
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True,
                        text=True).stdout
    assert "daq-incast.dqi%d." % p.pid not in ps


class HugepageThief:
    """Another process that maps every free hugepage between daq-incast's
    reservation and its EAL start (the race two DPDK runs can have)."""

    def __init__(self) -> None:
        self.maps: List[Any] = []

    def steal(self, mount_dir: str) -> int:
        free, size_kb = hugepages._meminfo()
        if free:
            path = os.path.join(mount_dir, "thief")
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
            try:
                size = free * size_kb * 1024
                os.ftruncate(fd, size)
                self.maps.append(mmap.mmap(
                    fd, size, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE))
            finally:
                os.close(fd)
                os.unlink(path)
        return free

    def release(self) -> None:
        while self.maps:
            self.maps.pop().close()


@pytest.mark.skipif(_e2e_skip_reason() is not None,
                    reason=str(_e2e_skip_reason()))
@pytest.mark.parametrize("mode", ["auto", "require"])
def test_hugepages_taken_before_eal(tmp_path: Any, monkeypatch: Any,
                                    mode: str) -> None:
    """The hugepages reserved for the run are gone when DPDK starts: with
    --hugepages auto the switch runs with --no-huge and says so, with
    require it fails; either way nothing is left behind."""
    default = binaries.resolve_binaries(None, None).vswitchd
    vswitchd = [] if os.access(default, os.X_OK) else ["--vswitchd", STOCK]
    c = cfg(*vswitchd, "--hugepages", mode, "--socket-mem", "256",
            h=hosts.probe_host(), env=True)
    assert c.use_hugepages
    plan = topology.make_plan(os.getpid(), 1, 1, 1)
    thief = HugepageThief()
    stolen: List[int] = []
    real_reserve = hugepages.reserve

    def reserve_then_steal(want_mb: int, mount_dir: str,
                           cleanup: Cleanup) -> Optional[str]:
        why = real_reserve(want_mb, mount_dir, cleanup)
        assert why is None, why
        # Pushed after the reservation: undone before it.
        cleanup.push("thief", thief.release)
        stolen.append(thief.steal(mount_dir))
        return why
    monkeypatch.setattr(hugepages, "reserve", reserve_then_steal)
    nr_before = hugepages._read_int(hugepages.NR_HUGEPAGES)
    cleanup = Cleanup()
    subprocess.run(["ip", "netns", "add", plan.switch_ns], check=True)
    cleanup.push("netns", lambda: subprocess.run(
        ["ip", "netns", "delete", plan.switch_ns], check=True))
    sw = switch.Switch(c, plan, str(tmp_path / "sw"), cleanup)
    try:
        if mode == "require":
            # An EAL that fails is noticed when ovs-vswitchd exits, not
            # after the 120 s timeout.
            with pytest.raises(switch.RunError,
                               match=r"did not initialise DPDK \(it exited"):
                sw.start()
        else:
            sw.start()
            assert not c.use_hugepages
            assert any("DPDK could not start with the hugepages" in n
                       and "--no-huge -m 256" in n for n in c.notes), c.notes
            sw.alive()
            extra = sw.vsctl("get", "Open_vSwitch", ".",
                             "other_config:dpdk-extra")
            assert "--no-huge" in extra
            assert "br0" in sw.vsctl("list-br")
    finally:
        assert cleanup.run() == []
    assert stolen and stolen[0] > 0
    assert hugepages._read_int(hugepages.NR_HUGEPAGES) == nr_before
    assert plan.switch_ns not in subprocess.run(
        ["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_request_yield(monkeypatch: pytest.MonkeyPatch) -> None:
    """The DCM gives up its CPU after every --request-yield requests it
    sends in a row (default 8), never after the last one, and not at all
    with 0 or when credits let fewer go."""
    import socket
    agents = load_agents()
    yields: List[int] = []
    monkeypatch.setattr(agents.os, "sched_yield",
                        lambda: yields.append(1))
    pairs = [socket.socketpair() for _ in range(5)]
    dcm = [a for a, _ in pairs]
    try:
        for every, window, want in ((2, 5, 2), (1, 5, 4), (0, 5, 0),
                                    (8, 5, 0), (2, 2, 0)):
            yields.clear()
            col = agents.Collector(dcm, ["r"] * 5, window, 5, every)
            col.start(agents.Event(0, 0, [1] * 5, 0))
            assert col.outstanding == window
            assert len(yields) == want, (every, window)
    finally:
        for a, b in pairs:
            a.close()
            b.close()
    assert cfg().request_yield == 8
    assert cfg("--request-yield", "0").request_yield == 0
    with pytest.raises(ConfigError, match="--request-yield"):
        cfg("--request-yield", "-1")
    plan = topology.make_plan(4194303, 30, 1, 1)
    assert "the DCM yields its CPU every 8 requests" in describe.describe(
        cfg(), plan)
    assert "the DCM yields its CPU never while it requests" in \
        describe.describe(cfg("--request-yield", "0"), plan)


def test_tcp_nodelay_option() -> None:
    """--tcp-nodelay off runs with Linux's TCP defaults only (but the
    congestion control)."""
    c = cfg("--tcp-nodelay", "off")
    assert not c.tcp_nodelay
    assert "otherwise Linux defaults;" in describe.describe(
        c, topology.make_plan(4194303, 30, 1, 1))
    assert "otherwise Linux defaults + TCP_NODELAY" in describe.describe(
        cfg(), topology.make_plan(4194303, 30, 1, 1))
