"""Tests of daq-bench's fabric-failover part (python/ovs_daqring/bench/
fabric_failover.py): a run's JSON read into a row, the losses split
between the failure and the return home, the direction each failure's
own leaf reroutes, and the verdicts over every run of every failure
(a failed run fails them).  Pure: no root.

Run: /usr/bin/python3 -m pytest -q tests/bench/test_failover_part.py
"""

from typing import Any, Dict, List, Optional

import pytest

from ovs_daqring.bench import fabric_failover as ff
from ovs_daqring.bench.summary import markdown, verdicts


def direction(runs: List[Any], lost: Optional[int] = None,
              window: float = 0.0) -> Dict[str, Any]:
    """A probe direction with these loss runs ([after_s, lost])."""
    return {"sent": 1000, "lost": (sum(n for _, n in runs) if lost is None
                                   else lost),
            "loss_runs": [{"after_s": a, "lost": n} for a, n in runs],
            "loss_window_ms": window,
            "longest_loss_run": max([n for _, n in runs] or [0])}


def doc(target: str = "hlt-leaf:up1-spine1:dn1", kind: str = "link",
        up: List[Any] = (), down: List[Any] = (), up_ms: float = 0.0,
        down_ms: float = 0.0, rtos: int = 0, slowest: float = 0.1,
        balanced: bool = True, events: int = 600,
        role: Optional[str] = "",
        told: Optional[float] = None) -> Dict[str, Any]:
    """daq-incast's JSON of a failover run: the failure at 2 s, its
    repair at 5 s; UP / DOWN: the probe's ROS->DCM / DCM->ROS loss
    runs; ROLE: the failed link's leaf's ("": as its name says);
    TOLD: when the kernel told the leaf, from the failure."""
    leaf = target.split(":", 1)[0] if kind == "link" else None
    if role == "" and leaf is not None:
        role = "hlt" if "hlt" in leaf else "ros"
    return {
        "config": {"dcms": 4, "events": 150},
        "ideal": {"collection_time_s": 0.1},
        "modes": [{
            "mode": "daqring", "status": "ok", "valid": True,
            "pmd_cpu_share": 0.97, "events": events,
            "collection_time_s": {"max": slowest},
            "tcp": {"rto_timeouts": rtos},
            "drops": {"unaccounted": 0,
                      "balance": {"balanced": balanced}},
            "failover": {
                "target": target, "kind": kind, "down_at_s": 2.0,
                "leaf": leaf, "leaf_role": role if leaf else None,
                "down_wall": 1000.0, "leaf_notified_after_s": told,
                "up_at_s": 5.0, "rerouted_after_s": 0.1,
                "back_after_s": 2.2,
                "probe": {"ros_to_dcm": direction(list(up), window=up_ms),
                          "dcm_to_ros": direction(list(down),
                                                  window=down_ms)}}}]}


def judge(*rows_by_target: Any) -> Dict[str, Dict[str, Any]]:
    """The fabric-failover verdicts of these (target, [doc...])."""
    res = {"runs": 1, "failures": [
        {"target": t, "command": "daq-incast", "rows": [
            ff.failover_row(d, i + 1) for i, d in enumerate(docs)]}
        for t, docs in rows_by_target]}
    got: Dict[str, Dict[str, Any]] = {}

    def add(key: str, value: str, met: Optional[bool],
            shares: Any = (), note: str = "") -> None:
        got[key] = {"value": value, "met": met}
    ff.failover_verdicts(res, add)
    return got


def test_losses_split_at_the_repair() -> None:
    row = ff.failover_row(doc(up=[(2.01, 3), (5.2, 2)], up_ms=40), 1)
    a = row["ros_to_dcm"]
    assert (a["lost"], a["failure"], a["home"]) == (5, 3, 2)
    assert row["leaf"] == "hlt-leaf" and row["kind"] == "link"
    assert row["slowest_ratio"] == pytest.approx(1.0)


def test_unlisted_losses_count_against_the_failure() -> None:
    """The probe lists its first loss runs only: the rest are taken as
    lost during the failure, never as nothing."""
    d = doc(up=[(2.01, 3)])
    d["modes"][0]["failover"]["probe"]["ros_to_dcm"]["lost"] = 9
    a = ff.failover_row(d, 1)["ros_to_dcm"]
    assert (a["failure"], a["unlisted"], a["home"]) == (9, 6, 0)


def test_the_leaf_that_sees_the_failure_reroutes_what_it_sends_up() -> None:
    ros = ff.failover_row(doc("ros-leaf0:up1-spine1:dn0"), 1)
    hlt = ff.failover_row(doc("p1-hlt-leaf:p1-up0-p1-spine0:dn1"), 1)
    spine = ff.failover_row(doc("spine:spine1", kind="spine"), 1)
    assert ff.local_direction(ros) == "ros_to_dcm"
    assert ff.local_direction(hlt) == "dcm_to_ros"
    assert ff.local_direction(spine) is None


def test_the_leafs_role_comes_from_the_run_not_its_name() -> None:
    """An HLT leaf named anything (a real fabric's "leaf-h0") reroutes
    what its DCMs send up; a run that does not say the role cannot be
    judged."""
    hlt = ff.failover_row(doc("leaf-h0:up1-spine1:dn1", role="hlt"), 1)
    assert hlt["leaf_role"] == "hlt"
    assert ff.local_direction(hlt) == "dcm_to_ros"
    ros = ff.failover_row(doc("hlt-leafy:up1-spine1:dn1", role="ros"), 1)
    assert ff.local_direction(ros) == "ros_to_dcm"
    none = ff.failover_row(doc("leaf-h0:up1-spine1:dn1", role=None), 1)
    assert "role" in none["error"]


def test_the_critical_path_from_the_agents_logs() -> None:
    """The agents' "fabric path:" lines from the failure on, in time
    order, by the wall clock their logs have."""
    down = 1764689000.0         # 2025-12-02T15:23:20Z
    logs = {
        "ros-leaf0": "2025-12-02T15:23:19.990Z|00041|ovs-daqfabric-agent|"
                     "INFO|fabric path: links reported: up1 down (old)\n"
                     "2025-12-02T15:23:20.012Z|00042|ovs-daqfabric-agent|"
                     "INFO|fabric path: links reported: up1 down (seen "
                     "now)\n"
                     "2025-12-02T15:23:20.020Z|00043|ovs-daqfabric-agent|"
                     "INFO|something else\n",
        # (The format the emulator's agents log with.)
        "hlt-leaf": "2025-12-02T15:23:20.045Z | 101 | ovs-daqfabric-agent "
                    "| INFO | fabric path: planner: plan sent: 2 "
                    "assignments changed (round 3.0 ms)\n"
                    "2025-12-02T15:23:25.000Z|00102|ovs-daqfabric-agent|"
                    "INFO|fabric path: much later\n"}
    got = ff.critical_path(logs, down)
    assert [(e["ms"], e["node"]) for e in got] == [
        (12.0, "ros-leaf0"), (45.0, "hlt-leaf")]
    assert got[1]["step"].startswith("planner: plan sent")
    assert ff.critical_path(logs, None) == []


def test_every_target_met() -> None:
    got = judge(("link:ros-leaf0:up1",
                 [doc("ros-leaf0:up1-spine1:dn0", up=[(2.0, 1)],
                      down=[(2.0, 6)], down_ms=70)]))
    assert all(v["met"] is True for v in got.values()), got
    assert "70 ms" in got["failover_planner"]["value"]


@pytest.mark.parametrize("kw,key", [
    ({"up": [(2.0, 2)]}, "failover_local"),
    ({"down": [(2.0, 12)], "down_ms": 120}, "failover_planner"),
    ({"down": [(5.3, 1)]}, "failover_home"),
    ({"rtos": 1}, "failover_tcp"),
    ({"slowest": 0.25}, "failover_tcp"),
    ({"balanced": False}, "failover_counted"),
    ({"events": 599}, "failover_counted"),
])
def test_one_run_misses_one_target(kw: Dict[str, Any], key: str) -> None:
    good = doc("ros-leaf0:up1-spine1:dn0")
    bad = doc("ros-leaf0:up1-spine1:dn0", **kw)
    got = judge(("link:ros-leaf0:up1", [good, bad]))
    assert got[key]["met"] is False, got[key]
    assert all(v["met"] is True for k, v in got.items() if k != key), got


def test_a_spine_is_judged_by_the_planner_both_ways() -> None:
    got = judge(("spine:spine1", [doc("spine:spine1", kind="spine",
                                      up=[(2.0, 50)], up_ms=500)]))
    assert got["failover_planner"]["met"] is False
    assert "ros to dcm 500 ms (50 lost)" in got["failover_planner"]["value"]
    assert got["failover_local"]["met"] is None


def test_a_failed_run_fails_every_target() -> None:
    got = judge(("link:hlt-leaf:up1", [doc(), None]))
    assert all(v["met"] is False for v in got.values()), got
    assert "FAILED (no results)" in got["failover_home"]["value"]
    d = doc()
    d["modes"][0]["failover"]["probe"]["error"] = "probe did not start"
    got = judge(("link:hlt-leaf:up1", [d]))
    assert got["failover_counted"]["met"] is False
    assert "probe did not start" in got["failover_counted"]["value"]


def test_not_run_is_not_judged() -> None:
    got: Dict[str, Any] = {}
    ff.failover_verdicts(None, lambda k, v, met, *a: got.update(
        {k: met}))
    assert set(got) == set(ff.FAILOVER_TARGETS)
    assert set(got.values()) == {None}


@pytest.mark.parametrize("text,words", [
    ("", "at least one"), ("leaf:x", "link:SWITCH:PORT or spine:NAME"),
    ("spine:spine1,spine:spine1", "spine:spine1 twice"),
])
def test_bad_targets(text: str, words: str) -> None:
    with pytest.raises(ValueError) as e:
        ff.parse_targets(text)
    assert words in str(e.value)


def test_in_the_summary() -> None:
    """The part's verdicts and section are in daq-bench's summary."""
    res: Dict[str, Any] = {"fabric-failover": {
        "runs": 1, "failures": [{"target": "spine:spine1",
                                 "command": "utilities/daq-incast ...",
                                 "rows": [ff.failover_row(
                                     doc("spine:spine1", kind="spine"), 1),
                                     ff.failover_row(None, 2)]}]}}
    rows = verdicts(res)
    keys = [r["key"] for r in rows]
    assert all(k in keys for k in ff.FAILOVER_TARGETS)
    res.update(verdicts=rows, command="daq-bench", quick=False,
               started="now", duration_s=60, machine={
                   k: "?" for k in ("cpu_model", "hypervisor", "mem_gib",
                                    "kernel", "os", "dpdk", "hugepages",
                                    "pmd_cpus", "other_cpus",
                                    "loadavg_start")})
    res["machine"]["cpus"] = 2
    md = markdown(res)
    assert "## Fabric failover" in md and "### spine:spine1" in md
    assert "| 2 | FAILED: no results |" in md


def test_what_a_leaf_loses_before_its_kernel_tells_it_is_apart() -> None:
    """The failure at 2.0 s, the leaf told at 2.05 s, the probe at 100/s:
    datagrams sent at 2.02-2.04 s are lost before the notice (not
    judged), those from 2.05 s on count; without a notice, all do."""
    before = doc("ros-leaf0:up1-spine1:dn0", up=[(2.01, 3)], told=0.05)
    row = ff.failover_row(before, 1)
    assert row["ros_to_dcm"]["failure"] == 3
    assert row["ros_to_dcm"]["after_notice"] == 0
    assert judge(("link:ros-leaf0:up1", [before]))["failover_local"][
        "met"] is True
    after = doc("ros-leaf0:up1-spine1:dn0", up=[(2.03, 3)], told=0.05)
    assert ff.failover_row(after, 1)["ros_to_dcm"]["after_notice"] == 2
    got = judge(("link:ros-leaf0:up1", [after]))["failover_local"]
    assert got["met"] is False
    assert "2 after the leaf was told (50 ms after the failure)" in got[
        "value"]
    unseen = doc("ros-leaf0:up1-spine1:dn0", up=[(2.01, 3)])
    assert ff.failover_row(unseen, 1)["ros_to_dcm"]["after_notice"] is None
    got = judge(("link:ros-leaf0:up1", [unseen]))["failover_local"]
    assert got["met"] is False and "notice not seen" in got["value"]


def test_a_slow_event_repaired_by_loss_probes_says_so() -> None:
    """A failure that loses a DCM's whole batch of requests (one segment
    each) costs no RTO, but TCP's loss probes repair them at least 200
    ms later: the verdict and the run's row name those repairs."""
    d = doc("ros-leaf0:up1-spine1:dn0", slowest=0.41)
    d["modes"][0]["tcp"]["probe_recoveries"] = 12
    row = ff.failover_row(d, 1)
    assert row["probe_recoveries"] == 12
    got = judge(("link:ros-leaf0:up1", [d]))["failover_tcp"]
    assert got["met"] is False
    assert "0 RTOs, 12 loss-probe repairs, slowest event 4.1x" in got[
        "value"]
    plain = judge(("link:ros-leaf0:up1", [doc()]))["failover_tcp"]
    assert "0 RTOs, slowest event 1.0x" in plain["value"]
    md = "\n".join(ff.failover_markdown({
        "runs": 1, "failures": [{"target": "link:ros-leaf0:up1",
                                 "command": "daq-incast", "rows": [row]}]}))
    assert "| probe repairs |" in md and "| 0 | 12 | 4.1x |" in md
