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

"""Tests of the fabric's scale bench (daq-bench --fabric,
python/ovs_daqring/bench/fabric_scale/), not timed: its map, its verdicts, and
its convergence check, which must find a switch whose daqrings or flows
are not the plan's -- from parsed dumps, and on a real (dummy) switch
whose flows are changed behind the plan's back.

Run: /usr/bin/python3 -m pytest -q tests/bench/test_fabric_scale.py
"""

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, Tuple

import pytest

from ovs_daqring.bench.fabric_scale import check as fc
from ovs_daqring.bench.fabric_scale import cpu as fp
from ovs_daqring.bench.fabric_scale import results as fr
from ovs_daqring.bench.fabric_scale import shape as fs
from ovs_daqring.cmd.daq_bench import parse_args
from ovs_daqring.daqctl.model import dcm_cookie
from ovs_daqring.fabric.fabmap import FabricMapReader
from ovs_daqring.fabric.planner import plan
from ovs_daqring.fabric.slice import PRIO_FROM_DCM, slices
from ovs_daqring.sandbox import Sandbox, tree_binaries

pytestmark = [pytest.mark.machine, pytest.mark.every_base]

ROOT = Path(__file__).resolve().parent.parent.parent
OVS = ROOT / "ovs"
SMALL = fs.Shape(planes=2, spines=2, ros_leaves=1, leaves=2, hosts=2,
                 ros=2, dcms=16, ring_size=256)


def small_plan() -> Tuple[Any, Dict[str, Any], Dict[str, Any]]:
    state = FabricMapReader("m").parse(fs.map_text(SMALL))
    asg, _ = plan(state, {}, set(), {}, 0)
    return state, asg, slices(state, asg)


def ofports_of(sl: Any, ports: Any) -> Dict[str, int]:
    names = sorted(set(ports) | {d.ring for d in sl.rings})
    return {n: i + 1 for i, n in enumerate(names)}


def view_of(sl: Any, ports: Any) -> fc.SwitchView:
    """The switch exactly as the plan wants it."""
    ofports = ofports_of(sl, ports)
    rings, flows, groups, problems = fc.expected(sl, ofports)
    assert problems == []
    return fc.SwitchView(dict(rings), ofports, {}, set(flows), dict(groups))


# =================================================================== the map
def test_default_shape_is_32_switches_and_2048_dcms() -> None:
    s = fs.Shape()
    assert s.n_switches() == 32 and s.dcms == 2048
    state = FabricMapReader("m").parse(fs.map_text(s))
    assert len(state.switches) == 32 and len(state.dcms) == 2048
    assert sum(1 for x in state.switches if x.dpdk) == 26
    # Every DCM gets a daqring on its host's leaf in each of the two
    # planes, and a route on its spine; rings spread evenly over the 26
    # HLT leaves.
    asg, _ = plan(state, {}, set(), {}, 0)
    sls = slices(state, asg)
    assert fc.check_plan(state, asg, sls) == []
    per_leaf = [len(sl.rings) for n, sl in sls.items() if "-leaf" in n]
    assert len(per_leaf) == 26 and sum(per_leaf) == 2 * 2048
    assert max(per_leaf) - min(per_leaf) <= 4
    # A ring missing on the leaf of the plane a DCM is not assigned to
    # is a fault of the plan.
    d = state.dcms[0]
    other = next(leaf for p, leaf, _ in state.host(d.host).attachments
                 if p != asg[d.name].plane)
    sls[other].rings = [r for r in sls[other].rings if r.name != d.name]
    assert [p.split(":")[0] for p in fc.check_plan(state, asg, sls)] == [
        "DCM %s" % d.name]


def test_one_dcm_more_is_one_dcm_more() -> None:
    a = FabricMapReader("m").parse(fs.map_text(SMALL))
    b = FabricMapReader("m").parse(fs.map_text(SMALL, SMALL.dcms + 1))
    assert ({d.name for d in b.dcms} - {d.name for d in a.dcms}
            == {"dcm%04d" % SMALL.dcms})
    assert (a.switches, a.links, a.hosts) == (b.switches, b.links, b.hosts)


@pytest.mark.parametrize("bad,msg", [
    (["--fabric-dcms", "0"], "--fabric-dcms 0"),
    (["--fabric-planes", "9"], "--fabric-planes 9"),
    (["--fabric-leaves", "64", "--fabric-hosts", "8"], "at most 250"),
    (["--fabric-runs", "0"], "--fabric-runs"),
    (["--fabric-interval", "0.01"], "--fabric-interval"),
    (["--fabric-election-timer", "50"], "--fabric-election-timer"),
    (["--fabric-dpdk-mem", "8"], "--fabric-dpdk-mem"),
])
def test_bad_arguments(bad: Any, msg: str,
                       capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        parse_args(["--fabric"] + bad)
    assert e.value.code == 2
    assert msg in capsys.readouterr().err


# ============================================================ the check
def test_check_passes_a_switch_that_holds_its_slice() -> None:
    _, _, sls = small_plan()
    for name in ("p0-ros1", "p0-spine1", "p0-leaf1"):
        sl = sls[name]
        assert sl.rings or sl.routes
        v = view_of(sl, ["up1", "up2", "r1", "r2", "h1", "h2", "d1", "d2",
                         "d3"])
        assert fc.check_switch(sl, v) == [], name


def test_expected_flows_are_those_the_agent_installs() -> None:
    """The check's flows of a route are the agent's (route_table of its
    slice as kept): the way back from a DCM one priority below, a ROS
    host's route under its host's cookie."""
    _, _, sls = small_plan()
    ports = ["up1", "up2", "r1", "r2", "h1", "h2", "d1", "d2", "d3"]
    for name in ("p0-leaf1", "p0-spine1"):
        sl = sls[name]
        _, flows, _, _ = fc.expected(sl, ofports_of(sl, ports))
        want = {(dcm_cookie("route/" + r.key), r.priority)
                for r in sl.routes}
        got = {(f[0], f[1]) for f in flows
               if f[0] in {c for c, _ in want}}
        assert got == want, name
    assert any(r.priority == PRIO_FROM_DCM for r in sls["p0-leaf1"].routes)
    assert any(r.host for r in sls["p0-spine1"].routes)


def test_check_finds_flows_that_differ() -> None:
    _, _, sls = small_plan()
    sl = sls["p0-ros1"]
    v = view_of(sl, ["up1", "up2", "r1", "r2"])
    flows = sorted(v.flows)
    # A route out of the other uplink: one missing, one not planned.
    c, prio, match, actions = flows[0]
    other = "output:%d" % (v.ofports["up2"] if actions != "output:%d"
                           % v.ofports["up2"] else v.ofports["up1"])
    v.flows = set(flows[1:]) | {(c, prio, match, other)}
    p = fc.check_switch(sl, v)
    assert len(p) == 2
    assert p[0].startswith("flows missing 1: ")
    assert p[1].startswith("flows not in the plan 1: ") and other in p[1]
    # A route missing.
    v.flows = set(flows[1:])
    assert [x.split(":")[0] for x in fc.check_switch(sl, v)] == [
        "flows missing 1"]
    # A flow of ours that no DCM of this switch has.
    v.flows = set(flows) | {(c ^ 1, prio, match, actions)}
    assert [x.split(":")[0] for x in fc.check_switch(sl, v)] == [
        "flows not in the plan 1"]
    # And a group that the plan does not have.
    v.flows = set(flows)
    v.groups[0xdac7fffe] = "type=all"
    assert fc.check_switch(sl, v) == [
        "groups not in the plan 1: group_id=%d type=all" % 0xdac7fffe]


def test_check_finds_rings_that_differ() -> None:
    _, _, sls = small_plan()
    sl = sls["p0-leaf1"]
    v = view_of(sl, ["up1", "up2", "h1", "h2"])
    ring = sl.rings[0].ring
    opts = dict(v.rings[ring])
    del v.rings[ring]
    assert fc.check_switch(sl, v)[0].startswith("daqrings missing 1: "
                                                + ring)
    v.rings[ring] = dict(opts, **{"ring-size": "4096"})
    assert fc.check_switch(sl, v)[0].startswith(
        "daqrings with other options 1: " + ring)
    v.rings[ring] = opts
    v.rings["stray"] = opts
    assert fc.check_switch(sl, v) == ["daqrings not in the plan 1: stray"]
    del v.rings["stray"]
    v.errors[ring] = "could not open"
    assert fc.check_switch(sl, v) == ["daqrings in error 1: %s: could not "
                                      "open" % ring]
    # A ring without an OpenFlow port: its flows cannot be right.
    v.errors = {}
    del v.ofports[ring]
    assert fc.check_switch(sl, v)[0] == ("port %s has no OpenFlow port "
                                         "number" % ring)


def test_check_plan_finds_a_dcm_without_its_ring() -> None:
    state, asg, sls = small_plan()
    d = state.dcms[0].name
    leaves = sorted(n for n, sl in sls.items()
                    if any(r.name == d for r in sl.rings))
    assert len(leaves) == 2                     # one per plane
    mine = state.host(state.dcms[0].host).leaf(asg[d].plane)[0]
    for leaf in leaves:
        sls[leaf].rings = [r for r in sls[leaf].rings if r.name != d]
    assert fc.check_plan(state, asg, sls) == [
        "DCM %s: daqring on None, its host's leaves are %s (in plane %d: "
        "%s)" % (d, leaves, asg[d].plane, mine)]
    del asg[state.dcms[1].name]
    assert "DCM %s is not assigned" % state.dcms[1].name in fc.check_plan(
        state, asg, sls)


def test_parsers() -> None:
    dump = (" cookie=0xdac7000000000001, priority=100,tcp,nw_dst=10.1.1.1,"
            "tp_dst=10000 actions=output:3\n"
            " cookie=0x5, priority=1 actions=NORMAL\n")
    assert fc.parse_flows(dump) == {
        (0xdac7000000000001, 100,
         frozenset(["tcp", "nw_dst=10.1.1.1", "tp_dst=10000"]),
         "output:3")}
    vsctl = json.dumps({
        "headings": ["name", "type", "options", "ofport", "error"],
        "data": [["r1", "daqring", ["map", [["ring-size", "256"]]], 5,
                  ["set", []]],
                 ["up1", "dummy", ["map", []], 1, ["set", []]],
                 ["bad", "daqring", ["map", []], -1, "no DPDK"]]})
    rings, ofports, errors = fc.parse_interfaces(vsctl)
    assert rings == {"r1": {"ring-size": "256"}, "bad": {}}
    assert ofports == {"r1": 5, "up1": 1}
    assert errors == {"bad": "no DPDK"}
    groups = fc.parse_groups(
        "OFPST_GROUP_DESC reply (OF1.3):\n"
        " group_id=1,type=ff,bucket=bucket_id:0,watch_port:2,"
        "actions=output:2,bucket=bucket_id:1,watch_port:3,actions=output:3\n"
        " group_id=0x2,type=all\n")
    assert sorted(groups) == [1, 2]


# ============================================================= verdicts
def _run(k: int, **maxes: float) -> Dict[str, Any]:
    return {"run": k, "scenarios": {
        sc: {"stats": {"max": m, "p50": m, "n": 32}}
        for sc, m in maxes.items()}}


def test_verdicts_count_every_run() -> None:
    res = {"config": {"runs": 3}, "runs": [
        _run(1, empty=30.0, one_dcm=1.0, failure=0.5),
        {"run": 2, "error": "ovs-vswitchd exited", "scenarios": {}},
        _run(3, empty=30.0, one_dcm=3.0)]}
    res["runs"][2]["scenarios"]["failure"] = {"error": "not converged"}
    v = {x["key"]: x for x in fr.verdicts(res)}
    assert v["empty"]["met"] is False and v["empty"]["met_text"] == "FAILED"
    assert "1 of 3 runs FAILED" in v["empty"]["value"]
    assert "run 2: not reached (ovs-vswitchd exited)" in v["empty"]["value"]
    assert "2 of 3 runs FAILED" in v["failure"]["value"]
    # Only two runs asked for, both ran: judged on the slowest node.
    res = {"config": {"runs": 2}, "runs": [
        _run(1, empty=30.0, one_dcm=1.0, failure=0.5),
        _run(2, empty=61.0, one_dcm=1.9, failure=0.9)]}
    v = {x["key"]: x for x in fr.verdicts(res)}
    assert (v["empty"]["met"], v["one_dcm"]["met"],
            v["failure"]["met"]) == (False, True, True)
    assert v["empty"]["met_text"] == "NOT"
    # A run that is missing altogether is FAILED too.
    res = {"config": {"runs": 2},
           "runs": [_run(1, empty=1.0, one_dcm=1.0, failure=0.1)]}
    v = fr.verdicts(res)
    assert all(x["met_text"] == "FAILED" and "run 2: not run" in x["value"]
               for x in v)


def test_markdown_says_what_the_fabric_costs_at_rest() -> None:
    cpu = {"wall_s": 10.0, "cores": 0.4,
           "cpu_s": {k: 0.5 for k in fp.CPU_CLASSES}}
    run = {"run": 1, "setup_s": 20.0, "rest_cpu": cpu, "scenarios": {
        "empty": {"commit_s": 1.0, "plan_s": 2.0, "rows": {},
                  "stats": {"max": 30.0, "p50": 20.0, "n": 1}, "cpu": cpu,
                  "nodes": {"p0-leaf1": {"role": "leaf", "report_s": 30.0,
                                         "flows_s": None,
                                         "converged_s": 30.0}}}}}
    res = {"machine": {k: "?" for k in (
        "cpu_model", "hypervisor", "mem_gib", "kernel", "os", "pmd_cpus",
        "other_cpus", "loadavg_start")}, "command": "daq-bench --fabric",
        "started": "now", "duration_s": 1.0, "source": {"commit": "c"},
        "shape_text": "tiny", "config": {
            "runs": 1, "election_timer_ms": 1000, "agent_interval_s": 2.0,
            "planners": 1, "dpdk_mem_mb": 128}, "runs": [run], "notes": []}
    res["machine"]["cpus"] = 2
    res["verdicts"] = fr.verdicts(res)
    md = fr.markdown(res)
    assert ("At rest, once converged from empty: CPU over its 10.0 s: "
            "agents 0.5 s" in md)
    del run["rest_cpu"]
    assert "At rest" not in fr.markdown(res)


# ====================================================== on a real switch
@pytest.fixture
def switch() -> Iterator[Sandbox]:
    if not (OVS / "vswitchd" / "ovs-vswitchd").exists():
        pytest.fail("build ovs/ first (make)")
    d = tempfile.mkdtemp(prefix="dqfb.", dir="/tmp")
    sb = Sandbox(tree_binaries(str(OVS)), d, label="ros-leaf")
    try:
        sb.start([], dummy=True, vswitchd_args=["--disable-system"])
        args = ["add-br", "br0", "--", "set", "Bridge", "br0",
                "datapath_type=dummy", "fail_mode=secure"]
        for p in ("r1", "r2", "up1", "up2"):
            args += ["--", "add-port", "br0", p, "--", "set", "Interface",
                     p, "type=dummy"]
        sb.vsctl(*args)
        yield sb
    finally:
        sb.stop(fast=True)
        shutil.rmtree(d, ignore_errors=True)


def test_check_finds_a_real_switch_whose_flows_differ(
        switch: Sandbox) -> None:
    _, _, sls = small_plan()
    sl = sls["p0-ros1"]
    target = "unix:" + os.path.join(switch.dir, "br0.mgmt")
    v = fc.read_switch(switch, target)
    assert v.flows == set() and v.rings == {} and v.groups == {}
    assert fc.check_switch(sl, v)[0].startswith("flows missing %d: "
                                                % len(sl.routes))
    # The plan's flows (and groups), as an agent installs them.
    _, flows, groups, problems = fc.expected(sl, v.ofports)
    assert problems == [] and len(flows) == len(sl.routes)
    for gid, (kind, buckets) in sorted(groups.items()):
        switch.ofctl("-O", "OpenFlow13", "add-group", target,
                     "group_id=%d,type=%s,%s" % (gid, kind, ",".join(
                         "bucket=watch_port:%s,actions=%s" % b
                         for b in buckets)))
    switch.ofctl("-O", "OpenFlow13", "add-flows", target, "-",
                 input="\n".join(fc._flow_text(f) for f in flows) + "\n")
    assert fc.check_switch(sl, fc.read_switch(switch, target)) == []
    # One route sent out of a host port behind the plan's back.
    c, prio, match, actions = sorted(flows)[0]
    switch.ofctl("mod-flows", target, "cookie=%#x/-1,%s,actions=output:%d"
                 % (c, ",".join(sorted(match)), v.ofports["r1"]))
    p = fc.check_switch(sl, fc.read_switch(switch, target))
    assert len(p) == 2 and p[0].startswith("flows missing 1: ")
    assert p[1].startswith("flows not in the plan 1: ")
    # Deleted: missing; and a flow that is not ours is not compared.
    switch.ofctl("del-flows", target, "cookie=%#x/-1" % c)
    switch.ofctl("add-flow", target, "priority=1,actions=drop")
    p = fc.check_switch(sl, fc.read_switch(switch, target))
    assert [x.split(":")[0] for x in p] == ["flows missing 1"]


def test_cpu_accounting_counts_threads_and_reaped_children() -> None:
    """proc_cpu_s() adds up a process's own CPU and that of the children
    it reaped (an agent's ovs-ofctl runs), which is what the bench's
    per-class CPU figures are made of."""
    import subprocess
    import sys
    burn = ("import time\nt = time.process_time()\n"
            "while time.process_time() - t < 0.3:\n    pass\n"
            "print(time.process_time())")
    before = fp.proc_cpu_s(os.getpid())
    child = float(subprocess.run([sys.executable, "-c", burn], check=True,
                                 capture_output=True,
                                 text=True).stdout)
    after = fp.proc_cpu_s(os.getpid())
    assert child >= 0.3
    # Clock ticks of 10 ms, and the child's start-up on top.
    assert after - before >= child - 0.05, (before, after, child)
    assert fp.proc_cpu_s(2 ** 22 + 1) == 0.0     # above pid_max: gone
    d = fp.cpu_delta({"agents": 1.0, "bench": 2.0},
                     {"agents": 4.0, "bench": 2.5, "ovs-vswitchd": 1.5}, 2.0)
    assert d["cpu_s"]["agents"] == 3.0 and d["cpu_s"]["bench"] == 0.5
    assert d["cpu_s"]["ovs-vswitchd"] == 1.5 and d["cores"] == 2.5
    assert set(d["cpu_s"]) == set(fp.CPU_CLASSES)
    assert "agents 3.0 s" in fp.cpu_text(d)
