"""As root, with hugepages: daq-incast --topology fabric --failover
--failover-target link:ros-leaf0:up1 (incast/fabric/failover.py and
probe.py): the ROS leaf's uplink to the spine of the probe's DCM goes
down under incast load and comes back.  Asserts outcomes only, never a
loss, a rate or a duration: the probe ran both ways through the failed
spine and counted consistently (sent = received + lost), the DCMs' routes
on the leaves left the failed spine and came back, and every event was
collected.  Run it alone, under the machine's lock:

  flock /tmp/daq-systest.lock /usr/bin/python3 -m pytest -q \\
      tests/incast/test_fabric_failover.py
"""

import json
import os
import subprocess
from typing import Any

import pytest

from incast_helpers import fabric_run_skip_reason

pytestmark = pytest.mark.machine

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(os.path.dirname(HERE), "utilities", "daq-incast")
OVS = os.path.join(os.path.dirname(HERE), "ovs")
PYTHON = "/usr/bin/python3"


def _skip_reason() -> str:
    return fabric_run_skip_reason(OVS)


@pytest.mark.skipif(bool(_skip_reason()), reason=_skip_reason())
def test_a_ros_leafs_uplink_fails_under_the_probe(tmp_path: Any) -> None:
    out = tmp_path / "out.json"
    # (Events enough to outlast the failover: 12 ROS x 32 KiB x 4 DCMs x
    # 100 events, some 10 s at the fabric's 188 Mbit/s.)
    cmd = [PYTHON, SCRIPT, "--topology", "fabric", "--ros", "12",
           "--dcms", "4", "--spines", "2", "--events", "100", "--modes",
           "daqring", "--failover", "1.5/3.5", "--failover-target",
           "link:ros-leaf0:up1",
           "--json", str(out), "-q", "--timeout", "400"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as run:
        stdout, stderr = run.communicate(timeout=500)
    assert run.returncode == 0, stdout[-3000:] + stderr[-3000:]
    doc = json.loads(out.read_text())
    (m,) = doc["modes"]
    assert m["status"] == "ok", m.get("error")
    assert m["events"] == 4 * 100
    fo = m["failover"]
    assert fo.get("error") is None
    assert fo["target"] == "ros-leaf0:up1-spine1:dn0"
    assert fo["kind"] == "link" and fo["spine"] == "spine1"
    assert fo["down_at_s"] is not None and fo["up_at_s"] is not None
    # The DCMs on spine1 before: their routes on the leaves (the ROS
    # leaf's fast_failover groups' first bucket, the HLT leaf's way
    # back) left the failed spine, and came back after the hold-down.
    assert fo["flows_via_failed_spine_before"] > 0
    flows = [s["flows"] for s in fo["routes_via_failed_spine"]]
    assert 0 in flows
    assert fo["rerouted_after_s"] is not None
    assert fo["back_after_s"] is not None
    # The probe: through the failed link (a ROS host of ros-leaf0, a DCM
    # of spine1), both ways, every datagram counted.
    pr = fo["probe"]
    assert pr.get("error") is None, pr.get("error")
    assert pr["path_crosses_target"] is True
    for key in ("ros_to_dcm", "dcm_to_ros"):
        d = pr[key]
        assert d["sent"] > 0
        assert d["sent"] == d["received"] + d["lost"]
        assert d["invalid"] == 0
        assert d["max_gap_ms"] >= 0 and d["longest_loss_run"] <= d["lost"]
    # The summary prints it.
    assert "loss probe %s <-> %s" % (pr["ros"]["ip"], pr["dcm"]["ip"]) \
        in stdout
    # Nothing left behind: this run's namespaces are gone.
    after = subprocess.run(["ip", "netns", "list"], capture_output=True,
                           text=True).stdout.split()
    assert not [n for n in after if n.startswith("dqf%d-" % run.pid)]
