# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ovs_daqring.metrics.fabric on an agent's state chosen by the test (no
daemons): the delay from a generation's commit to its application, what
a failing node and an agent that does not plan serve, and every family
documented with the names the tests and alerts use."""

from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Tuple

import pytest

pytest.importorskip("prometheus_client",
                    reason="needs python3-prometheus-client")

from prometheus_client import generate_latest  # noqa: E402
from prometheus_client.parser import \
    text_string_to_metric_families  # noqa: E402
from prometheus_client.registry import CollectorRegistry  # noqa: E402

from ovs_daqring.fabric.db import COMMITTED_AT_KEY  # noqa: E402
from ovs_daqring.metrics.fabric import (  # noqa: E402
    FABRIC_METRICS, FabricCollector)


class FakeFabric:
    def __init__(self) -> None:
        self.row: Optional[Any] = None

    def root(self) -> Optional[Any]:
        return self.row


def agent(**kw: Any) -> Any:
    a = SimpleNamespace(
        node="leaf1", fabric=FakeFabric(), applied_gen=None, applied_at=None,
        failed_gen=None, error=None, fabric_note=None, n_applies=0,
        reported_links=None, bfd={}, planner=None, up=True)
    a.fabric_up = lambda: a.up
    a.__dict__.update(kw)
    return a


def commit(a: Any, gen: int, at_ms: Optional[int]) -> None:
    ext = {COMMITTED_AT_KEY: str(at_ms)} if at_ms is not None else {}
    a.fabric.row = SimpleNamespace(generation=gen, planned_generation=gen,
                                   external_ids=ext)


def scrape(c: FabricCollector) -> List[Tuple[str, Dict[str, str], float]]:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(c)
    text = generate_latest(reg).decode()
    return [(s.name, s.labels, s.value)
            for f in text_string_to_metric_families(text)
            for s in f.samples]


def value(samples: List[Any], name: str, **labels: str) -> Optional[float]:
    got = [v for n, lab, v in samples if n == name
           and all(lab.get(k) == w for k, w in labels.items())]
    assert len(got) <= 1, got
    return got[0] if got else None


def test_delay_from_commit_to_application() -> None:
    a = agent()
    c = FabricCollector(a)
    commit(a, 4, 1000000)
    c.observe()
    # The switch takes generation 4 2.5 s after its commit.
    a.applied_gen, a.applied_at, a.n_applies = 4, 1002.5, 1
    c.observe()
    s = scrape(c)
    assert value(s, "daqfabric_node_generation_apply_delay_seconds",
                 node="leaf1") == 2.5
    assert value(s, "daqfabric_node_generation_applied", node="leaf1") == 4
    assert value(s, "daqfabric_fabric_generation", node="leaf1",
                 kind="committed") == 4
    assert value(s, "daqfabric_node_applies_total", node="leaf1") == 1
    # A new plan of the same generation is no new commit: the delay stays.
    a.applied_at, a.n_applies = 1030.0, 2
    c.observe()
    assert value(scrape(c), "daqfabric_node_generation_apply_delay_seconds",
                 node="leaf1") == 2.5
    # A generation whose commit time the agent never saw: no delay.
    commit(a, 6, None)
    c.observe()
    a.applied_gen, a.applied_at = 6, 1040.0
    c.observe()
    s = scrape(c)
    assert value(s, "daqfabric_node_generation_apply_delay_seconds") is None
    assert value(s, "daqfabric_node_generation_applied", node="leaf1") == 6


def test_failing_node_and_no_planner() -> None:
    a = agent(applied_gen=3, applied_at=5.0, failed_gen=4,
              error="switch refused the slice: " + "x" * 500,
              reported_links={"up1": "down", "up2": "up", "h1": "unknown"},
              bfd={"up1": {"state": "init", "forwarding": "false"}})
    commit(a, 4, 1)
    c = FabricCollector(a)
    c.observe()
    s = scrape(c)
    assert value(s, "daqfabric_node_generation_failed", node="leaf1") == 4
    assert value(s, "daqfabric_node_error", node="leaf1") == 1
    (err,) = [lab["error"] for n, lab, _ in s
              if n == "daqfabric_node_error_info"]
    assert err.startswith("switch refused") and len(err) == 200
    for port, state in (("up1", "down"), ("up2", "up"), ("h1", "unknown")):
        for st in ("up", "down", "unknown"):
            assert value(s, "daqfabric_node_link_state", node="leaf1",
                         port=port, state=st) == (1 if st == state else 0)
    assert value(s, "daqfabric_node_bfd_state", port="up1",
                 state="init") == 1
    assert value(s, "daqfabric_node_bfd_state", port="up1",
                 state="up") == 0
    assert value(s, "daqfabric_node_bfd_forwarding", port="up1") == 0
    # Not run with --planner: no planner series at all.
    assert not [n for n, _, _ in s if n.startswith("daqfabric_planner")]
    # The fabric database unreachable: said, no generation of it.
    a.up = False
    s = scrape(c)
    assert value(s, "daqfabric_node_fabric_db_up", node="leaf1") == 0
    assert value(s, "daqfabric_fabric_generation", kind="committed") is None


def test_names() -> None:
    seen = set()
    for m in FABRIC_METRICS:
        assert m.name.startswith("daqfabric_") and m.name not in seen
        seen.add(m.name)
        assert not m.name.endswith("_total")
        assert m.help.endswith(".")
        assert m.kind in ("counter", "gauge")
