# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The Prometheus files in utilities/prometheus/ against the metrics the
exporter serves: the alerting rules pass "promtool check rules" and fire
as they should on synthetic series ("promtool test rules"); the Grafana
dashboard's queries name only exported metrics, and every metric is
documented in Documentation/topics/monitoring.rst."""

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import List, Set

import pytest

pytest.importorskip("prometheus_client",
                    reason="needs python3-prometheus-client")

from ovs_daqring.metrics.fabric import FABRIC_METRICS  # noqa: E402
from ovs_daqring.metrics.pmd import PMD_METRICS  # noqa: E402
from ovs_daqring.metrics.rings import METRICS  # noqa: E402

TOP = Path(__file__).resolve().parent.parent.parent
ALERTS = TOP / "utilities" / "prometheus" / "daqring-alerts.yml"
DASHBOARD = TOP / "utilities" / "prometheus" / "daqring-dashboard.json"
MONITORING = TOP / "Documentation" / "topics" / "monitoring.rst"
EXPOSED = {m.exposed() for m in METRICS + PMD_METRICS + FABRIC_METRICS}


def names_in(expr: str) -> Set[str]:
    return set(re.findall(r"\b(?:daqring|daqfabric)_[a-z0-9_]+", expr))


def promtool() -> str:
    p = shutil.which("promtool")
    if p is None:
        pytest.skip("promtool not installed (Debian: prometheus)")
    return p


def dashboard_exprs() -> List[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    exprs += [v["query"]["query"] for v in dash["templating"]["list"]
              if isinstance(v.get("query"), dict)]
    return exprs


def test_dashboard_uses_exported_names() -> None:
    exprs = dashboard_exprs()
    assert len(exprs) >= 10
    used: Set[str] = set()
    for e in exprs:
        names = names_in(e)
        assert names, e
        assert names <= EXPOSED, (e, sorted(names - EXPOSED))
        used |= names
    # The counters are shown as rates, every drop reason at once.
    assert "daqring_dropped_packets_total" in used
    assert "daqring_occupancy_packets" in used
    dash = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    assert dash["uid"] and dash["title"]


def test_alert_rules_use_exported_names() -> None:
    text = ALERTS.read_text()
    exprs = re.findall(r"expr: >-\n((?:\s{10}.*\n)+)|expr: (.*)\n", text)
    flat = [a or b for a, b in exprs]
    assert len(flat) >= 6
    for e in flat:
        assert names_in(e) <= EXPOSED, (e, sorted(names_in(e) - EXPOSED))


def test_check_rules() -> None:
    p = subprocess.run([promtool(), "check", "rules", str(ALERTS)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS: 8 rules found" in p.stdout


RULE_TESTS = Path(__file__).resolve().parent / "daqring-alerts-test.yml"


def test_alerts_fire() -> None:
    """A ring that drops pages; one above 80% of its capacity for a
    minute warns, one at 80% does not; an unbound ring pages after a
    minute."""
    p = subprocess.run([promtool(), "test", "rules", str(RULE_TESTS)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_every_metric_documented() -> None:
    if not MONITORING.exists():
        pytest.skip("no Documentation/topics/monitoring.rst")
    text = MONITORING.read_text()
    missing = [m.exposed() for m in METRICS + PMD_METRICS + FABRIC_METRICS
               if m.exposed() not in text]
    assert not missing, missing


def test_monitoring_page_renders() -> None:
    """Strictly, as Sphinx or rst2man would read it (a name ending in
    "_" is a reference in reStructuredText)."""
    docutils_core = pytest.importorskip("docutils.core")
    if not MONITORING.exists():
        pytest.skip("no Documentation/topics/monitoring.rst")
    docutils_core.publish_string(
        MONITORING.read_text(), writer_name="null",
        settings_overrides={"halt_level": 2, "report_level": 5})
