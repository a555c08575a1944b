# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ovs-daqfabric-agent --metrics-address scraped by a real Prometheus
server (Debian's prometheus), asked through its HTTP query API.

The emulated fabric is tests/cmd/test_ovs_daqfabric_agent.py's: a
3-member clustered fabric database, utilities/fabric-map.example.yaml's
spine1, spine2 and ros-leaf1 as switches of their own (ovsdb-server and
the tree's ovs-vswitchd, dummy datapath and ports: no DPDK, no root),
each with its agent (every one a planner candidate) serving metrics;
the HLT leaf, which needs DPDK, is a stand-in report.  One fabric and
one Prometheus for the module.  What Prometheus holds: each node's
generation applied and its commit-to-apply delay, its links, the
planner's DCMs per spine; a link failed on ros-leaf1 is its link down
and the DCMs that crossed it away from home, and once the link is back,
their hold-downs pending.  Outcomes only, bounded waits (60 s), no
duration asserted.

Run: /usr/bin/python3 -m pytest -q tests/metrics/test_fabric_prometheus.py
"""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from test_prometheus import (Prometheus, free_port, http_get, needs,
                             selector, wait_for)

pytestmark = [pytest.mark.machine, pytest.mark.every_base]

TOP = Path(__file__).resolve().parent.parent.parent
NAMES = ["spine1", "spine2", "ros-leaf1"]
N_DCMS = 4


def agent_tests() -> Any:
    """tests/cmd/test_ovs_daqfabric_agent.py, whose emulated fabric this
    test runs (loaded under the name pytest gives it)."""
    name = "test_ovs_daqfabric_agent"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, TOP / "tests" / "cmd" / (name + ".py"))
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


@pytest.fixture(scope="module")
def fabric() -> Iterator[Dict[str, Any]]:
    needs()
    at = agent_tests()
    f = at.Fabric(NAMES)
    prom = None
    try:
        ports = {}
        for name, node in f.nodes.items():
            ports[name] = free_port()
            node.start_agent(more=["--metrics-address",
                                   "127.0.0.1:%d" % ports[name],
                                   "--vswitchd", node.sb.ctl])
        urls = {n: "http://127.0.0.1:%d/metrics" % p
                for n, p in ports.items()}
        for name, url in urls.items():
            def serving(name: str = name, url: str = url) -> bool:
                assert f.nodes[name].agent.poll() is None, \
                    f.nodes[name].agent_out()
                try:
                    return "daqfabric_node_fabric_db_up" in http_get(url)
                except OSError:
                    return False
            wait_for(serving, "%s's metrics" % name)
        prom = Prometheus(["127.0.0.1:%d" % p for p in ports.values()],
                          f.base, job="daqfabric")
        m = at.write_map(f.base, "m.yaml", N_DCMS)
        p = at.daqctl("fabric", "apply", m, "--wait", "--timeout", "60",
                      "--db", f.cluster.remotes())
        assert p.returncode == 0, p.stdout + p.stderr
        yield {"fabric": f, "prom": prom, "urls": urls}
    finally:
        if prom is not None:
            prom.stop()
        f.stop()


def test_nodes_generations_links_and_the_planner(
        fabric: Dict[str, Any]) -> None:
    prom = fabric["prom"]
    prom.wait_value('count(up{job="daqfabric"} == 1)', len(NAMES))
    for name in NAMES:
        prom.wait_value(selector("daqfabric_node_generation_applied",
                                 node=name), 1)
        prom.wait_value(selector("daqfabric_fabric_generation", node=name,
                                 kind="committed"), 1)
        prom.wait_value(selector("daqfabric_node_error", node=name), 0)
        prom.wait_value(selector("daqfabric_node_fabric_db_up", node=name),
                        1)
    # Each switch took generation 1 after its commit, by its agent's
    # clock: a delay for every node (its value is a duration: not
    # asserted).
    prom.wait_value("count(daqfabric_node_generation_apply_delay_seconds"
                    " >= 0)", len(NAMES))
    prom.wait_value("count(daqfabric_node_generation_failed) or vector(0)",
                    0)
    # Every port of every switch up, as the agents report them.
    ports = agent_tests().PORTS
    prom.wait_value('count(daqfabric_node_link_state{state="up"} == 1)',
                    sum(len(ports[n]) for n in NAMES))
    prom.wait_value('count(daqfabric_node_link_state{state!="up"} == 1) '
                    'or vector(0)', 0)
    # One planner of the three candidates, with every DCM at home.
    prom.wait_value("count(daqfabric_planner)", len(NAMES))
    prom.wait_value("sum(daqfabric_planner)", 1)
    prom.wait_value("sum(daqfabric_planner_dcms)", N_DCMS)
    prom.wait_value("daqfabric_planner_dcms_away_from_home", 0)
    prom.wait_value("daqfabric_planner_hold_downs_pending", 0)
    prom.wait_value("daqfabric_planner_dcms_unassigned", 0)
    prom.wait_value("daqfabric_planner_hold_down_seconds", 30)
    assert (prom.value("daqfabric_planner_epoch") or 0) >= 1
    # The switch's own metrics too: its OVSDB read (no daqrings on these
    # switches) and its PMD threads asked of its ovs-vswitchd.
    prom.wait_value("count(daqring_exporter_ovsdb_up == 1)", len(NAMES))
    prom.wait_value("count(daqring_exporter_vswitchd_up == 1)", len(NAMES))
    prom.wait_value('count(daqring_rings) or vector(0)', 0)
    # The alerting rules load and evaluate on these series too.
    rules = [r for g in prom.get("/api/v1/rules")["groups"]
             for r in g["rules"]]
    assert all(r["health"] == "ok" for r in rules), rules


def test_promtool_accepts_the_planners_scrape(
        fabric: Dict[str, Any]) -> None:
    prom = fabric["prom"]
    prom.wait_value("sum(daqfabric_planner)", 1)
    (planner,) = [r["metric"]["node"] for r in
                  prom.query("daqfabric_planner == 1")]
    text = http_get(fabric["urls"][planner])
    assert "daqfabric_planner_dcms{" in text
    p = subprocess.run([shutil.which("promtool") or "promtool", "check",
                        "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and not p.stdout + p.stderr, \
        p.stdout + p.stderr


def test_a_link_failure_is_a_link_down_and_dcms_away_from_home(
        fabric: Dict[str, Any]) -> None:
    """ros-leaf1's uplink to spine1 fails: Prometheus sees its link down
    and the DCMs of spine1 away from home on spine2; back up, they stay
    away for the hold-down (30 s), their hold-downs pending."""
    prom = fabric["prom"]
    leaf = fabric["fabric"].nodes["ros-leaf1"]
    prom.wait_value("sum(daqfabric_planner_dcms)", N_DCMS)
    prom.wait_value("daqfabric_planner_dcms_away_from_home", 0)
    on1 = prom.value('sum(daqfabric_planner_dcms{spine="spine1"})')
    assert on1, "no DCM on spine1"
    up1 = dict(node="ros-leaf1", port="up1")
    leaf.sb.appctl("netdev-dummy/set-admin-state", "up1", "down")
    try:
        prom.wait_value(selector("daqfabric_node_link_state", state="down",
                                 **up1), 1)
        prom.wait_value(selector("daqfabric_node_link_state", state="up",
                                 **up1), 0)
        prom.wait_value("daqfabric_planner_dcms_away_from_home", on1)
        prom.wait_value('sum(daqfabric_planner_dcms{spine="spine2"})',
                        N_DCMS)
        prom.wait_value('sum(daqfabric_planner_dcms{spine="spine1"}) '
                        'or vector(0)', 0)
        # Their home is not usable: no hold-down runs yet.
        prom.wait_value("daqfabric_planner_hold_downs_pending", 0)
        wait_for(lambda: (prom.value(
            "daqfabric_planner_away_longest_seconds") or 0) > 0,
            "the planner to say how long the DCMs have been away")
    finally:
        leaf.sb.appctl("netdev-dummy/set-admin-state", "up1", "up")
    prom.wait_value(selector("daqfabric_node_link_state", state="up",
                             **up1), 1)
    prom.wait_value("daqfabric_planner_hold_downs_pending", on1)
    # (They go home 30 s later: the fabric's hold-down, not waited for.)
    assert prom.value("daqfabric_planner_dcms_away_from_home") == on1


def test_agent_without_the_client_library_says_so(tmp_path: Path) -> None:
    """--metrics-address with no prometheus_client to import: a message
    naming the package, exit status 1, before anything starts."""
    (tmp_path / "prometheus_client").mkdir()
    (tmp_path / "prometheus_client" / "__init__.py").write_text(
        "raise ImportError('hidden by the test')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), str(TOP / "python")]))
    p = subprocess.run(
        ["/usr/bin/python3", str(TOP / "utilities" / "ovs-daqfabric-agent"),
         "--node", "n1", "--db", "unix:%s/none.sock" % tmp_path,
         "--state-file", str(tmp_path / "s.json"),
         "--metrics-address", "9999"], capture_output=True, text=True,
        env=env, timeout=60)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "python3-prometheus-client" in p.stderr
