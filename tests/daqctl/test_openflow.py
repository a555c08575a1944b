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

"""Tests of daqctl.openflow.FlowWatch, the flow monitor that tells the
fabric agent whether its switch's flows may have changed, against a real
ovs-vswitchd (dummy datapath, no DPDK, no root).  Outcomes only; waits
are bounded.

Run: /usr/bin/python3 -m pytest -q tests/daqctl/test_openflow.py
"""

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from ovs_daqring.daqctl.openflow import FlowWatch, OpenFlow
from ovs_daqring.sandbox import Sandbox, tree_binaries

from fabric_helpers import wait_for

pytestmark = [pytest.mark.machine, pytest.mark.every_base]

ROOT = Path(__file__).resolve().parent.parent.parent
WAIT_S = 30


@pytest.fixture(name="switch")
def dummy_switch() -> Iterator[Sandbox]:
    d = tempfile.mkdtemp(prefix="dqw.", dir="/tmp")
    sb = Sandbox(tree_binaries(str(ROOT / "ovs")), d, label="watch")
    try:
        sb.start([], dummy=True, vswitchd_args=["--disable-system"])
        sb.vsctl("add-br", "br0", "--", "set", "Bridge", "br0",
                 "datapath_type=dummy", "fail_mode=secure")
        yield sb
    finally:
        sb.stop(fast=True)
        shutil.rmtree(d, ignore_errors=True)


def watch_of(sb: Sandbox) -> FlowWatch:
    of = OpenFlow("unix:" + os.path.join(sb.dir, "br0.mgmt"), sb.bin.ofctl,
                  10, [])
    return FlowWatch(of)


def test_flow_watch_tells_changes_by_anyone(switch: Sandbox) -> None:
    w = watch_of(switch)
    # Not started: anything may have changed.
    assert w.take() and w.news()
    w.start()
    wait_for(lambda: w.news() and w.ready, "the flow monitor to be up",
             WAIT_S)
    # Up: once for what changed before it was; then nothing.
    assert w.take()
    assert not w.take()
    assert not w.news()
    for cmd in (["add-flow", "br0", "cookie=0x5,priority=5,ip,actions=drop"],
                ["mod-flows", "br0", "cookie=0x5,ip,actions=normal"],
                ["del-flows", "br0", "cookie=0x5/-1"]):
        switch.ofctl(*cmd)
        wait_for(w.news, "news of %s" % cmd[0], WAIT_S)
        assert w.take()
        assert not w.take()
    # A switch that goes away: its flows are gone, the monitor ends,
    # and what happens next is not known until it is up again.
    proc = w.proc
    assert proc is not None
    switch.appctl("exit")
    wait_for(lambda: w.news() and w.proc is None, "the monitor to end",
             WAIT_S)
    assert proc.poll() is not None
    assert w.take() and w.take()
    d = w.dir
    assert d is not None and os.path.isdir(d)
    w.stop()
    assert not os.path.exists(d)


def test_flow_watch_close_stops_the_monitor(switch: Sandbox) -> None:
    w = watch_of(switch)
    w.start()
    wait_for(lambda: w.news() and w.ready, "the flow monitor to be up",
             WAIT_S)
    proc = w.proc
    assert proc is not None and w.fd() is not None
    w.close()
    assert proc.poll() is not None
    assert w.fd() is None and w.take()
    # Started again, it is up again.
    w.start()
    wait_for(lambda: w.news() and w.ready, "the flow monitor to be up",
             WAIT_S)
    assert w.started == 2
    w.stop()
