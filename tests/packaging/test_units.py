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

"""The systemd units of the fabric agents (rhel/*.service): their
ExecStop's "ovs-appctl -t SOCKET exit" reaches the control socket that
their ExecStart makes the agent create, whatever the options of
/etc/sysconfig say, and "exit" is a command the agent has.  The files
as text: nothing is run.

Run: /usr/bin/python3 -m pytest -q tests/packaging/test_units.py
"""

import re
import shlex
from pathlib import Path
from typing import Dict, List

import pytest

TOP = Path(__file__).resolve().parent.parent.parent
UNITS = sorted((TOP / "rhel").glob(
    "usr_lib_systemd_system_ovs-daqfabric-*agent.service"))
AGENT = TOP / "python" / "ovs_daqring" / "cmd" / "ovs_daqfabric_agent.py"


def service(path: Path) -> Dict[str, List[str]]:
    """The [Service] settings of unit 'path', continuation lines joined:
    name -> its command line's words, per line of the setting."""
    text = re.sub(r"\\\n", " ", path.read_text())
    out: Dict[str, List[str]] = {}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line \
                and not line.startswith("#"):
            k, _, v = line.partition("=")
            out.setdefault(k, []).append(v)
    return out


def test_the_units_are_found() -> None:
    assert [u.name for u in UNITS] == [
        "usr_lib_systemd_system_ovs-daqfabric-agent.service",
        "usr_lib_systemd_system_ovs-daqfabric-host-agent.service"]


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_exec_stop_reaches_the_control_socket(unit: Path) -> None:
    s = service(unit)
    [start] = s["ExecStart"]
    [stop] = s["ExecStop"]
    words = shlex.split(start)
    assert words[0] == "/usr/sbin/ovs-daqfabric-agent"
    sockets = [(i, w.partition("=")[2]) for i, w in enumerate(words)
               if w.startswith("--unixctl=")]
    assert sockets, "%s: no --unixctl in ExecStart" % unit.name
    last, socket = sockets[-1]
    # After the options from /etc/sysconfig ($DAQFABRIC_OPTIONS...): the
    # last --unixctl is the one the agent takes.
    expansions = [i for i, w in enumerate(words) if w.startswith("$")]
    assert expansions and last > max(expansions)
    assert socket.startswith("/run/openvswitch/")
    assert shlex.split(stop) == ["/usr/bin/ovs-appctl", "-t", socket, "exit"]


def test_the_agent_has_exit() -> None:
    """ExecStop's command is one the agent's unixctl server registers."""
    assert re.search(r'command_register\(\s*"exit"', AGENT.read_text())
