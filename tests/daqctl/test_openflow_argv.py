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

"""daqctl.openflow's ovs-ofctl command lines: every one ends its options
with "--" before its command, so that a target or a port name (which
the fabric's agents take from the fabric database's rows) is never read
as an option (issue 47, item 13).  The command lines are caught, not
run; one test runs the tree's ovs-ofctl on a target that looks like an
option, which needs no switch.

Run: /usr/bin/python3 -m pytest -q tests/daqctl/test_openflow_argv.py
"""

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any, List

import pytest

from ovs_daqring.daqctl import openflow
from ovs_daqring.daqctl.model import DaqctlError
from ovs_daqring.daqctl.openflow import FlowWatch, OpenFlow

ROOT = Path(__file__).resolve().parent.parent.parent
OFCTL = ROOT / "ovs" / "utilities" / "ovs-ofctl"
SSL = ["--private-key=k.pem", "--certificate=c.pem", "--ca-cert=ca.pem"]


def _check(argv: List[str], target: str) -> None:
    """Options, then "--", then the command with the target."""
    assert "--" in argv, argv
    end = argv.index("--")
    assert all(a.startswith("-") or argv[i - 1] == "-O"
               for i, a in enumerate(argv[1:end], 1)), argv
    assert argv[end + 2] == target, argv


class _Popen:
    calls: List[List[str]] = []

    def __init__(self, argv: List[str], **_kw: Any) -> None:
        _Popen.calls.append(list(argv))
        self.returncode = 0
        self.stdout = SimpleNamespace(fileno=lambda: 0, close=lambda: None)

    def communicate(self, timeout: float = 0) -> Any:
        return "", ""


@pytest.mark.parametrize("target", ["-O", "--strict", "br0"])
def test_every_command_ends_its_options(monkeypatch: Any,
                                        target: str) -> None:
    calls: List[List[str]] = []

    def run(argv: List[str], **_kw: Any) -> Any:
        calls.append(list(argv))
        return SimpleNamespace(returncode=0, stderr="",
                               stdout="NXST_AGGREGATE reply: flow_count=0")

    monkeypatch.setattr(openflow.subprocess, "run", run)
    _Popen.calls = []
    monkeypatch.setattr(openflow.subprocess, "Popen", _Popen)
    of = OpenFlow(target, "/bin/ovs-ofctl", 5, SSL)
    of.dump()
    of.dump(names=True, ours=False)
    of.flow_count()
    of.groups()
    of.bundle(["add cookie=0x1,ip,actions=drop"])
    of.bundle(["group add group_id=1,type=fast_failover",
               "add cookie=0x1,ip,actions=group:1"])
    of.no_flood()
    of.set_no_flood("-p1", True)
    of.set_no_flood_all(["-p1", "p2"])
    assert len(calls) == 8 and len(_Popen.calls) == 2
    for argv in calls + _Popen.calls:
        _check(argv, target)
        assert argv[0] == "/bin/ovs-ofctl"
        assert all(s in argv for s in SSL), argv
    # The port too, after "--".
    assert calls[-1][-2:] == ["-p1", "no-flood"]
    # The verbs, as before.
    verbs = [a[a.index("--") + 1] for a in calls + _Popen.calls]
    assert verbs == ["dump-flows", "dump-flows", "dump-aggregate",
                     "dump-groups", "add-flows", "bundle", "show",
                     "mod-port", "mod-port", "mod-port"]


def test_flow_monitor_ends_its_options(monkeypatch: Any) -> None:
    _Popen.calls = []
    monkeypatch.setattr(openflow.subprocess, "Popen", _Popen)
    monkeypatch.setattr(openflow.os, "set_blocking", lambda *_a: None)
    w = FlowWatch(OpenFlow("--strict", "/bin/ovs-ofctl", 5, SSL))
    try:
        w.start()
    finally:
        w.proc = None
        w.stop()
    (argv,) = _Popen.calls
    _check(argv, "--strict")
    assert argv[argv.index("--") + 1] == "monitor"
    assert argv[-1] == "watch:!initial"


@pytest.mark.every_base
def test_ovs_ofctl_takes_an_option_like_target_as_a_target() -> None:
    """The tree's ovs-ofctl, through OpenFlow: "-O" and "--strict" as
    targets are names it cannot connect to, not options."""
    if not os.access(OFCTL, os.X_OK):
        pytest.skip("no %s (make)" % OFCTL)
    for target in ("-O", "--strict"):
        of = OpenFlow(target, str(OFCTL), 1, [])
        with pytest.raises(DaqctlError) as e:
            of.flow_count()
        assert "%s is not a bridge or a socket" % target in str(e.value), \
            str(e.value)
    # Without "--", ovs-ofctl reads it as an option.
    p = subprocess.run([str(OFCTL), "--timeout=1", "dump-aggregate", "-O"],
                       capture_output=True, text=True)
    assert "option requires an argument" in p.stderr, p.stderr
