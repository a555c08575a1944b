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

"""The peers part's deep-FIFO verdicts (bench/peers.py, issue 49 E):
goodput >= 0.99 x and p99 <= 1.05 x the deep FIFO's in every run of
every grid point, strictly better (goodput >= 1.01 x or p99 <= 0.95 x)
where the deep FIFO is below 99% of ideal or 4+ DCMs share a link.
Pure: no machine."""

from typing import Any, Dict, Optional, Tuple

import pytest

from ovs_daqring.bench import peers
from incast_helpers import cfg

LINK = 1e9


def _mode(label: str, mode: str, ideal: float, p99: float,
          share: float = 1.0) -> Dict[str, Any]:
    return {"label": label, "mode": mode, "status": "ok", "error": None,
            "goodput_bps": ideal * LINK, "ideal_ratio": ideal,
            "collection_time_s": {"p50": p99 / 2, "p99": p99},
            "tcp": {"rto_timeouts": 0, "retrans_segs": 0},
            "drops": {"switch_total": 0, "daqring": 0, "qdisc": 0},
            "pmd_cpu_share": share if mode == "daqring" else 0.0,
            "cpu": {"ns_per_byte": 2.0, "steal_s": {}}}


def run(goodput: float, p99: float, deep_ideal: float = 0.999,
        share: float = 1.0) -> Dict[str, Any]:
    """One run's figures: the daqring at GOODPUT and P99 x the deep
    FIFO's, the deep FIFO at DEEP_IDEAL of ideal (p99 0.2 s)."""
    return peers.run_figures({
        "config": {"congestion_control": "cubic"},
        "modes": [_mode("deep-fifo limit=auto", "deep-fifo", deep_ideal,
                        0.2),
                  _mode("deep-fifo limit=auto/4", "deep-fifo", 0.5, 0.9),
                  _mode("daqring", "daqring", deep_ideal * goodput,
                        0.2 * p99, share)]})


def point(*runs: Dict[str, Any]) -> Dict[str, Any]:
    return dict(peers.point_summary(list(runs)), runs=list(runs))


def verdicts(points: Dict[str, Any]) -> Dict[str, Tuple[str,
                                                        Optional[bool]]]:
    out: Dict[str, Tuple[str, Optional[bool]]] = {}

    def add(key: str, value: str, met: Optional[bool], *a: Any,
            **kw: Any) -> None:
        assert key not in out
        out[key] = (value, met)
    peers.peer_verdicts({"points": points, "congestion_control": "cubic"},
                        add)
    assert set(out) == set(peers.TARGETS)
    return out


def grid(**special: Dict[str, Any]) -> Dict[str, Any]:
    """Every point of the grid with three runs that meet every target
    (the shared links' ahead on p99), but those given."""
    pts = {}
    for name in peers.GRID:
        shared = peers.dcms_per_link(name) >= 4
        r = run(1.0, 0.8 if shared else 1.0)
        pts[name] = special.get(name.replace("-", "_"), point(r, r, r))
    return pts


def test_run_figures_keep_the_deep_fifos_ideal() -> None:
    f = run(1.02, 1.07, deep_ideal=0.93)
    assert f["goodput_ratio"] == pytest.approx(1.02)
    assert f["p99_ratio"] == pytest.approx(1.07)
    assert f["deep_ideal_ratio"] == 0.93


def test_dcms_per_link() -> None:
    assert peers.dcms_per_link("r120-128k-1g") == 1
    assert peers.dcms_per_link("k2-r30-32k-200m") == 2
    assert peers.dcms_per_link("k4-r30-32k-200m") == 4
    assert peers.dcms_per_link("k8-r30-32k-200m") == 8
    assert peers.dcms_per_link("hog4-r30-32k-200m") == 4
    assert peers.dcms_per_link("nope") == 1


@pytest.mark.parametrize("goodput,p99,deep,name,want", [
    # Where both carry the link: within the band.
    (1.0, 1.04, 0.999, "r30-32k-200m", (True, True, None)),
    (1.0, 1.05, 0.999, "r30-32k-200m", (True, True, None)),
    (1.0, 1.06, 0.999, "r30-32k-200m", (True, False, None)),
    (0.99, 1.0, 0.999, "r30-32k-200m", (True, True, None)),
    (0.985, 1.0, 0.999, "r30-32k-200m", (False, True, None)),
    # The deep FIFO below 99% of ideal: equal is not enough.
    (1.0, 1.0, 0.97, "r120-128k-1g", (True, True, False)),
    (1.01, 1.0, 0.97, "r120-128k-1g", (True, True, True)),
    (1.0, 0.95, 0.97, "r120-128k-1g", (True, True, True)),
    # Ahead on goodput, a p99 tail 1.07 x: still fails p99.
    (1.09, 1.07, 0.93, "r120-128k-1g", (True, False, True)),
    (1.0, 1.0, 0.99, "r120-128k-1g", (True, True, None)),
    # Four or more DCMs on a link: always asked.
    (1.0, 1.0, 0.999, "k4-r30-32k-200m", (True, True, False)),
    (1.0, 0.8, 0.999, "k8-r30-32k-200m", (True, True, True)),
    (1.0, 0.96, 0.999, "hog4-r30-32k-200m", (True, True, False)),
    (1.0, 1.0, 0.999, "k2-r30-32k-200m", (True, True, None)),
])
def test_judge_run(goodput: float, p99: float, deep: float, name: str,
                   want: Tuple[bool, bool, Optional[bool]]) -> None:
    j = peers.judge_run(name, run(goodput, p99, deep))
    assert (j["peer_goodput"], j["peer_p99"], j["peer_better"]) == want
    assert "why" not in j


def test_a_failed_run_fails_every_target() -> None:
    for f in ({"error": "no results"}, run(1.0, 1.0, share=0.5),
              {"modes": {}}):
        j = peers.judge_run("r30-32k-200m", f)
        assert (j["peer_goodput"], j["peer_p99"], j["peer_better"]) == \
            (False, False, False)
        assert j["why"]


def test_the_whole_grid_met() -> None:
    v = verdicts(grid())
    assert v["peer_goodput"][1] is True and v["peer_p99"][1] is True
    assert v["peer_better"][1] is True
    assert "TCP cubic" in v["peer_goodput"][0]
    assert "not run" not in v["peer_p99"][0]
    # Only the shared links (4+ DCMs) are asked to be better.
    assert "k4-r30-32k-200m" in v["peer_better"][0]
    assert "r12-16k-100m" not in v["peer_better"][0]


def test_one_run_over_the_band_fails() -> None:
    ok = run(1.0, 1.0)
    v = verdicts(grid(r30_32k_200m=point(ok, run(1.0, 1.06), ok)))
    assert v["peer_p99"][1] is False and v["peer_goodput"][1] is True
    assert "r30-32k-200m 1.000 / 1.060! / 1.000" in v["peer_p99"][0]
    v = verdicts(grid(r30_32k_200m=point(ok, run(1.0, 1.04), ok)))
    assert v["peer_p99"][1] is True


def test_equal_where_the_deep_fifo_falls_short_fails() -> None:
    ok = run(1.05, 0.9, deep_ideal=0.97)
    v = verdicts(grid(r120_128k_1g=point(ok, run(1.0, 1.0, 0.97), ok)))
    assert v["peer_goodput"][1] is True and v["peer_p99"][1] is True
    assert v["peer_better"][1] is False
    assert "1.000/1.000! (deep FIFO 97.0%)" in v["peer_better"][0]
    v = verdicts(grid(r120_128k_1g=point(ok, ok, ok)))
    assert v["peer_better"][1] is True


def test_shared_link_only_equal_fails() -> None:
    v = verdicts(grid(k4_r30_32k_200m=point(*[run(1.0, 1.0)] * 3)))
    assert v["peer_better"][1] is False
    assert v["peer_goodput"][1] is True and v["peer_p99"][1] is True


def test_a_failed_or_missing_run_counts_as_failed() -> None:
    ok = run(1.0, 1.0)
    for bad in ({"error": "daq-incast exited 1"},
                run(1.0, 1.0, share=0.8)):
        v = verdicts(grid(r12_16k_100m=point(ok, bad, ok)))
        for key in ("peer_goodput", "peer_p99"):
            assert v[key][1] is False, key
            assert "FAILED" in v[key][0]
    # Asked three runs, two left behind.
    p = point(ok, ok, ok)
    p["runs"] = p["runs"][:2]
    v = verdicts(grid(r12_16k_100m=p))
    assert v["peer_goodput"][1] is False
    assert "FAILED (missing)" in v["peer_goodput"][0]


def test_points_not_run() -> None:
    ok = run(1.0, 1.0)
    v = verdicts({"r30-32k-200m": point(ok)})
    # The targets are over the whole grid: not established.
    assert v["peer_goodput"][1] is None and v["peer_p99"][1] is None
    assert "not run: r12-16k-100m" in v["peer_goodput"][0]
    # ... but one failing run is enough to miss it.
    v = verdicts({"r30-32k-200m": point(run(0.9, 1.0))})
    assert v["peer_goodput"][1] is False and v["peer_p99"][1] is None
    v = verdicts({})
    assert all(x == ("not run", None) for x in v.values())


def test_fast_points_burst_within_the_link() -> None:
    """From 500 Mbit/s the ring's byte burst is the emulated link's burst
    (daq-incast's --link-burst default), so that the link's tbf never
    stays throttled; the other points keep daq-incast's default."""
    fast = {"r60-64k-500m", "r120-128k-1g"}
    for name, (_, args) in peers.GRID.items():
        c = cfg("--modes", "daqring,deep-fifo", *args)
        if name in fast:
            assert c.max_burst_bytes == c.link_burst == 16384, name
        else:
            assert c.max_burst_bytes == 0, name
