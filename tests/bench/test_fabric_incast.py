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

"""daq-bench --parts fabric-incast: its summary and verdicts from
daq-incast --topology fabric results (python/ovs_daqring/bench/
fabric_incast.py).  Only valid runs give figures, an invalid run is
listed with its PMD share, a failed run makes its targets FAILED.  No
root, no daemons.

Run: /usr/bin/python3 -m pytest -q tests/bench/test_fabric_incast.py
"""

from typing import Any, Dict, List, Optional

from ovs_daqring.bench import summary
from ovs_daqring.bench.fabric_incast import (FABRIC_TARGETS,
                                             fabric_markdown,
                                             fabric_summary)


def mode(name: str, ratio: float, share: float, lost: int = 0,
         rtos: int = 0, status: str = "ok",
         steal: float = 0.0) -> Dict[str, Any]:
    return {"mode": name, "status": status,
            "cpu": {"steal_s": {"cpu0": steal / 2, "cpu1": steal}},
            "error": None if status == "ok" else "boom",
            "limit_ratio": ratio, "ideal_ratio": ratio,
            "pmd_cpu_share": share, "valid": share >= 0.9,
            "invalid_reason": "the PMD had %.0f%% of its core"
            % (100 * share),
            "tcp": {"rto_timeouts": rtos},
            "collection_time_s": {"p50": 0.05, "p99": 0.1},
            "drops": {"switch_total": lost, "daqring": 0,
                      "kernel_links": 0, "unaccounted": 0, "qdisc": 5}}


def steady(share: float, ratio: float = 0.96, lost: int = 0,
           steal: float = 0.0) -> Dict[str, Any]:
    return {"config": {"congestion_control": "cubic", "dcms": 4,
                       "events": 150},
            "fabric": {"limit": {"formula": "B = ...", "inputs": {
                "N_P": 1, "N_S": 2, "N_H": 1, "N_R": 12,
                "b_H_bps": 2e8}, "goodput_bps": 1.88e8,
                "bound_by": "hlt_link"}},
            "modes": [mode("stock", 0.44, share, lost=900, rtos=30),
                      mode("daqring", ratio, share, lost=lost,
                           steal=steal)]}


def failover(share: float, rec: Optional[float] = 0.8,
             res: Optional[float] = 0.3, events: int = 600
             ) -> Dict[str, Any]:
    m = mode("daqring", 0.9, share)
    m["events"] = events
    m["failover"] = {"recovered_after_s": rec, "restored_after_s": res,
                     "rerouted_after_s": 0.2, "back_after_s": 2.4}
    return {"config": {"dcms": 4, "events": 150}, "modes": [m]}


def rows(fab: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    out: List[Dict[str, Any]] = []

    def add(key: str, value: str, met: Optional[bool],
            shares: Any = (), note: str = "") -> None:
        out.append({"key": key, "value": value, "met": met})
    from ovs_daqring.bench.fabric_incast import fabric_verdicts
    fabric_verdicts(fab, add)
    got = {r["key"]: r for r in out}
    assert set(got) == set(FABRIC_TARGETS)
    return got


def test_valid_runs_meet_the_targets() -> None:
    fab = fabric_summary([steady(0.97), steady(0.95, 0.955, steal=0.43),
                          steady(0.99)],
                         [failover(0.96), failover(0.97, 1.9),
                          failover(0.93)])
    r = rows(fab)
    assert all(v["met"] is True for v in r.values()), r
    assert fab["modes"]["daqring"]["limit_ratio"]["min"] == 0.955
    assert "valid runs 3 of 3" in r["fabric_limit"]["value"]
    assert fab["modes"]["stock"]["lost"]["median"] == 900
    text = "\n".join(fabric_markdown(fab))
    assert "97%, 95%, 99%" in text and "hlt_link" in text
    # The steal time of each run, the most of one CPU (ms).
    line = next(ln for ln in text.splitlines()
                if ln.startswith("| daqring |"))
    assert line.rstrip(" |").endswith("0, 430, 0"), line


def test_invalid_runs_give_no_figures() -> None:
    # Run 2's PMD had 60% of its core: its 50% is no result.
    fab = fabric_summary([steady(0.97), steady(0.6, 0.5), steady(0.99)],
                         [failover(0.96), failover(0.5, None),
                          failover(0.93)])
    r = rows(fab)
    assert r["fabric_limit"]["met"] is True
    assert "valid runs 2 of 3" in r["fabric_limit"]["value"]
    assert fab["invalid"] == ["run 2 stock: the PMD had 60% of its core",
                              "run 2 daqring: the PMD had 60% of its core"]
    assert r["failover_recovered"]["met"] is True
    text = "\n".join(fabric_markdown(fab))
    assert "60%" in text and "INVALID" in text
    # Nothing valid: not judged, and said why.
    none = fabric_summary([steady(0.5)], [failover(0.4)])
    r = rows(none)
    assert all(v["met"] is None for v in r.values()), r
    assert "no valid run of 1" in r["fabric_limit"]["value"]


def test_failed_or_missing_runs_are_failed() -> None:
    bad = steady(0.97)
    bad["modes"][1] = mode("daqring", 0, 0.97, status="error")
    r = rows(fabric_summary([steady(0.97), bad, None],
                            [failover(0.96), None, failover(0.95)]))
    for k in ("fabric_limit", "fabric_drops", "fabric_rtos"):
        assert r[k]["met"] is False and r[k]["value"].startswith(
            "FAILED: run 2 daqring: boom; run 3: no results"), r[k]
    for k in ("failover_recovered", "failover_restored",
              "failover_complete"):
        assert r[k]["met"] is False and "run 2: no results" in r[k][
            "value"]


def test_targets_missed() -> None:
    r = rows(fabric_summary([steady(0.97, 0.93, lost=4)],
                            [failover(0.97, 2.6, None, events=590)]))
    assert r["fabric_limit"]["met"] is False
    assert r["fabric_drops"]["met"] is False
    assert r["fabric_rtos"]["met"] is True
    assert r["failover_recovered"]["met"] is False
    assert r["failover_restored"]["met"] is False
    assert "never" in r["failover_restored"]["value"]
    assert r["failover_complete"]["met"] is False


def test_an_unbalanced_failover_is_not_complete() -> None:
    """Every event, nothing unaccounted, but more counted than the hosts
    lost: the account does not balance, so not every frame is known."""
    fo = failover(0.97)
    fo["modes"][0]["drops"]["balance"] = {
        "sent": 1000, "delivered": 990, "counted_drops": 12,
        "balanced": False}
    r = rows(fabric_summary([steady(0.97)], [fo]))
    assert r["failover_complete"]["met"] is False
    assert "NOT BALANCED" in r["failover_complete"]["value"]
    fo["modes"][0]["drops"]["balance"].update(counted_drops=10,
                                              balanced=True)
    r = rows(fabric_summary([steady(0.97)], [fo]))
    assert r["failover_complete"]["met"] is True


def test_daq_bench_verdicts_have_the_fabric_rows() -> None:
    got = {v["key"]: v for v in summary.verdicts({})}
    for k in FABRIC_TARGETS:
        assert got[k]["met"] is None and got[k]["value"] == "not run"
    res = {"fabric-incast": dict(fabric_summary([steady(0.97)],
                                                [failover(0.97)]),
                                 command="c", failover_command="f",
                                 dir="d")}
    got = {v["key"]: v for v in summary.verdicts(res)}
    assert got["fabric_limit"]["met"] is True


def point(rate: str, fab: Dict[str, Any]) -> Dict[str, Any]:
    return dict(fab, link_rate=rate, command="c --link-rate " + rate,
                failover_command="f", dir="d/" + rate)


def test_rate_points_are_judged_each_and_together() -> None:
    """A target is met only if it is at every rate: met at 100 Mbit/s
    and missed at 200 Mbit/s is missed, and the value names both."""
    good = fabric_summary([steady(0.97, 0.99), steady(0.99, 0.97)],
                          [failover(0.96), failover(0.97)])
    slow = fabric_summary([steady(0.97, 0.93), steady(0.97, 0.92)],
                          [failover(0.96, res=3.9), failover(0.97)])
    fab = {"dir": "d", "points": [point("100mbit", good),
                                  point("200mbit", slow)]}
    r = rows(fab)
    assert r["fabric_limit"]["met"] is False
    v = r["fabric_limit"]["value"]
    assert v.startswith("at 100mbit: 98.0% [97.0-99.0]") and \
        "; at 200mbit: 92.5% [92.0-93.0]" in v, v
    assert r["failover_restored"]["met"] is False
    assert r["fabric_drops"]["met"] is True
    assert r["fabric_rtos"]["met"] is True
    assert r["failover_complete"]["met"] is True
    text = "\n".join(fabric_markdown(fab))
    assert "### At 100mbit" in text and "### At 200mbit" in text
    assert "c --link-rate 200mbit" in text
    # Both met: met.
    r = rows({"points": [point("100mbit", good), point("50mbit", good)]})
    assert all(x["met"] is True for x in r.values()), r
    # A point of two planes is judged alike, and named with its planes.
    fab = {"points": [point("100mbit", good),
                      dict(point("50mbit", slow), planes=2)]}
    r = rows(fab)
    assert r["fabric_limit"]["met"] is False
    assert "; at 2 planes x 50mbit: 92.5%" in r["fabric_limit"]["value"]
    assert "### At 2 planes x 50mbit" in "\n".join(fabric_markdown(fab))


def test_a_rate_point_without_results_is_never_met() -> None:
    good = fabric_summary([steady(0.97)], [failover(0.96)])
    # No valid run at one point (the PMD had too little of its core): not
    # judged, even though the other point met everything.
    starved = fabric_summary([steady(0.5)], [failover(0.4)])
    r = rows({"points": [point("100mbit", good),
                         point("200mbit", starved)]})
    assert all(x["met"] is None for x in r.values()), r
    assert "at 200mbit: not judged" in r["fabric_limit"]["value"]
    # A point that failed (its runs did not finish, or it never ran)
    # fails every target, whatever the others did.
    failed = fabric_summary([None], [None])
    r = rows({"points": [point("100mbit", good), point("200mbit", failed),
                         point("50mbit", starved)]})
    assert all(x["met"] is False for x in r.values()), r
    r = rows({"points": [point("100mbit", good),
                         {"link_rate": "200mbit", "error": "boom"}]})
    assert all(x["met"] is False for x in r.values()), r
    assert "at 200mbit: FAILED: boom" in r["fabric_limit"]["value"]
    r = rows({"points": []})
    assert all(x["met"] is False for x in r.values()), r


def test_daq_bench_takes_the_rates_apart_from_the_other_arguments(
        capsys: Any) -> None:
    import pytest
    from ovs_daqring.cmd.daq_bench import parse_args
    ns = parse_args(["--parts", "fabric-incast"])
    assert ns.fabric_incast_rates == ["100mbit", "200mbit"]
    ns = parse_args(["--parts", "fabric-incast", "--fabric-incast-rates",
                     "1gbit", "--fabric-incast-args", "--events 10"])
    assert ns.fabric_incast_rates == ["1gbit"]
    # Two planes at half the rates by default (the same fabric limits);
    # none with ''.
    assert ns.fabric_incast_two_planes == ["50mbit", "100mbit"]
    ns = parse_args(["--parts", "fabric-incast",
                     "--fabric-incast-two-planes", ""])
    assert ns.fabric_incast_two_planes == []
    for bad, why in ((["--fabric-incast-rates", ""], "at least one rate"),
                     (["--fabric-incast-two-planes", "50mbit,50mbit"],
                      "--fabric-incast-two-planes: 50mbit and 50mbit"),
                     (["--fabric-incast-args", "--planes 2"],
                      "not --planes"),
                     (["--fabric-incast-rates", "100mbit,fast"],
                      "bad rate 'fast'"),
                     (["--fabric-incast-rates", "100mbit,0.1gbit"],
                      "100mbit and 0.1gbit are the same rate"),
                     (["--fabric-incast-args", "--link-rate 1gbit"],
                      "not --link-rate"),
                     (["--fabric-incast-args=--link-rat=1gbit"],
                      "not --link-rate"),
                     (["--fabric-incast-args=--events '10"],
                      "--fabric-incast-args: No closing quotation")):
        with pytest.raises(SystemExit) as e:
            parse_args(["--parts", "fabric-incast"] + bad)
        assert e.value.code == 2
        assert why in capsys.readouterr().err, bad
