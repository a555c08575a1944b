"""pytest for daq-incast's --max-burst-bytes and daq-bench's lossless
part (issue 25, A: the setup the documentation advises, every run of
many at several points counted).  Pure: no root, no switch."""

import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional

import pytest

from ovs_daqring.bench import analysis, lossless
from ovs_daqring.bench import cli as bench_cli
from ovs_daqring.incast import runner, switch, topology
from ovs_daqring.incast.config import ConfigError
from incast_helpers import cfg

HERE = os.path.dirname(os.path.abspath(__file__))
DAQCTL = os.path.join(os.path.dirname(HERE), "utilities", "ovs-daqctl")


def test_max_burst_bytes_option() -> None:
    assert cfg().max_burst_bytes == 0
    # auto: half the DCM port's 32 frames, full frames with the overhead.
    assert cfg("--max-burst-bytes", "auto").max_burst_bytes == 16 * 1542
    assert cfg("--max-burst-bytes", "auto", "--port-frames", "12",
               "--link-overhead", "38").max_burst_bytes == 6 * 1556
    # At least two frames, whatever the port.
    assert cfg("--max-burst-bytes", "auto", "--port-frames", "2"
               ).max_burst_bytes == 2 * 1542
    assert cfg("--max-burst-bytes", "8KiB").max_burst_bytes == 8192
    for bad, what in ((["--max-burst-bytes", "3000"], "3084..16777216"),
                      (["--max-burst-bytes", "17MiB"], "3084..16777216"),
                      (["--max-burst-bytes", "3100", "--link-overhead",
                        "64"], "less than two frames"),
                      (["--max-burst-bytes", "x"], "bad size"),
                      (["--max-burst-bytes", "auto", "--shaper",
                        "packets"], "excludes --shaper packets"),
                      (["--max-burst-bytes", "auto", "--poll-interval",
                        "100"], "excludes --shaper packets")):
        with pytest.raises(ConfigError, match=what):
            cfg(*bad)


def test_max_burst_bytes_reaches_the_map(tmp_path: Any,
                                         monkeypatch: Any) -> None:
    """The daqring mode writes max-burst-bytes into ovs-daqctl's map
    beside max-rate, and only when it is set."""
    calls: List[List[str]] = []

    class FakeSwitch:
        dir = str(tmp_path)

        def iface_types(self) -> List[str]:
            return ["daqring"]

        def _check_ports(self, names: List[str]) -> None:
            pass

    monkeypatch.setattr(switch, "daqctl",
                        lambda sw, *args, **kw: calls.append(list(args)))
    plan = topology.make_plan(4243, 2, 1, 1, 32)
    for argv, want in ((["--max-burst-bytes", "auto"], 16 * 1542), ([],
                                                                    None)):
        c = cfg("--modes", "daqring", *argv)
        p = runner.mode_runs(c)[0][1]
        switch.program_daqrings(
            FakeSwitch(), plan, p["ring_size"],  # type: ignore
            p["max_burst"], 0, p["max_rate_bps"], 24, p["flow_buckets"],
            max_burst_bytes=p.get("max_burst_bytes", 0))
        with open(calls[-1][1]) as f:
            doc = json.load(f)
        assert doc["defaults"].get("max-burst-bytes") == want
        out = subprocess.run([sys.executable, DAQCTL, "check",
                              calls[-1][1]], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr


def test_points_are_valid_command_lines() -> None:
    assert lossless.parse_points(None, False) == list(lossless.POINTS)
    assert lossless.parse_points(None, True) == lossless.QUICK_POINTS
    for bad in ("nope", "r30-32k-200m,r30-32k-200m", ","):
        with pytest.raises(ValueError, match="--lossless-points"):
            lossless.parse_points(bad, False)
    for name, (_, args) in lossless.POINTS.items():
        c = cfg(*(lossless.SETUP + args))
        assert c.modes == ["daqring"] and c.max_burst_bytes, name
        assert c.max_rate_bps and c.flow_buckets, name
    for argv in (["--lossless-points", "x"], ["--lossless-runs", "0"],
                 ["--lossless-events", "0"]):
        with pytest.raises(SystemExit):
            bench_cli.parse_args(argv)
    assert "lossless" in analysis.PARTS
    assert "lossless" not in analysis.DEFAULT_PARTS


def _doc(ratio: float = 0.995, drops: int = 0, rtos: int = 0,
         share: float = 1.0, status: str = "ok") -> Dict[str, Any]:
    return {"config": {"congestion_control": "cubic"}, "modes": [{
        "label": "daqring", "mode": "daqring", "status": status,
        "error": None if status == "ok" else "it broke",
        "goodput_bps": 2e8 * ratio, "ideal_ratio": ratio,
        "collection_time_s": {"p50": 0.04, "p99": 0.05},
        "tcp": {"rto_timeouts": rtos, "retrans_segs": 0},
        "drops": {"switch_total": drops, "daqring": 0, "qdisc": 0},
        "pmd_cpu_share": share, "params": {"max_burst_bytes": 24672}}]}


def _rows(points: Dict[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}

    def add(key: str, value: str, met: Optional[bool], *a: Any,
            **kw: Any) -> None:
        out[key] = (value, met)
    lossless.lossless_verdicts({"points": points,
                                "congestion_control": "cubic"}, add)
    return out


def _point(*docs: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    runs = [lossless.run_figures(d) for d in docs]
    return dict(lossless.point_summary(runs), runs=runs)


def test_every_run_counts() -> None:
    f = lossless.run_figures(_doc())
    assert f["ideal_ratio"] == 0.995 and f["max_burst_bytes"] == 24672
    assert "error" not in f
    good = _doc()
    r = _rows({"a": _point(good, good), "b": _point(good)})
    assert all(v[1] is True for v in r.values()), r
    assert "a: 2 of 2 runs met, worst 0.9950" in r["lossless_ideal"][0]
    # One run below 99%, one drop, one RTO: each fails its own target.
    r = _rows({"a": _point(good, _doc(ratio=0.98))})
    assert r["lossless_ideal"][1] is False and "1 of 2 runs met" in \
        r["lossless_ideal"][0]
    assert r["lossless_drops"][1] is True
    assert _rows({"a": _point(good, _doc(drops=1))})["lossless_drops"][1] \
        is False
    assert _rows({"a": _point(_doc(rtos=1))})["lossless_rtos"][1] is False
    # A failed, missing or invalid run fails every target.
    for bad in (None, _doc(status="error"), _doc(share=0.5)):
        r = _rows({"a": _point(good, bad), "b": _point(good)})
        assert all(v[1] is False for v in r.values()), (bad, r)
        assert "1 of 2 runs did not count" in r["lossless_rtos"][0]
    assert all(v == ("not run", None) for v in _rows({}).values())


def test_summary_has_the_section() -> None:
    res = {"lossless": {"points": {"r30-32k-200m": _point(_doc(), _doc(
        ratio=0.999))}, "runs": 2, "events": 20,
        "congestion_control": "cubic"}}
    rows = {v["key"]: v for v in analysis.verdicts(res)}
    assert set(rows) == set(analysis.TARGETS)
    assert rows["lossless_ideal"]["met"] is True
    text = "\n".join(lossless.markdown(res["lossless"]))
    assert "| r30-32k-200m | 2 | 99.50 / 99.90 / 99.90 | 0 | 0 | 100% | 0 |" \
        in text
