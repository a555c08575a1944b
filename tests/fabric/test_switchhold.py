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

"""Unit tests of what a switch's agent reports of its switch's fabric
ports (SwitchHold.local_view(), fabric/switchhold.py): up, down, or
unknown when it cannot tell -- never left out, never wiped.  Pure: a
fake switch database.

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_switchhold.py
"""

import json
from types import SimpleNamespace
from typing import Any, Dict, List, Optional

from ovs_daqring.daqctl.model import DaqctlError
from ovs_daqring.fabric import schema_path
from ovs_daqring.fabric.switchhold import SwitchHold


def iface(link_state: Optional[str], bfd: bool = False,
          forwarding: bool = True) -> Any:
    return SimpleNamespace(
        link_state=[link_state] if link_state else [],
        bfd={"enable": "true"} if bfd else {},
        bfd_status={"state": "up" if forwarding else "down",
                    "forwarding": "true" if forwarding else "false"}
        if bfd else {})


class FakeOvsdb:
    """The switch's database as SwitchHold reads it."""

    def __init__(self, ports: Dict[str, Any], connected: bool = True,
                 bridge: bool = True) -> None:
        self._ports = {n: SimpleNamespace(interfaces=[i])
                       for n, i in ports.items()}
        self._bridge = bridge
        self.idl = SimpleNamespace(
            run=lambda: None, change_seqno=1,
            _session=SimpleNamespace(is_connected=lambda: connected))

    def bridge(self, name: str) -> Any:
        if not self._bridge:
            raise DaqctlError("unix:db.sock: no bridge %s" % name)
        return name

    def ports(self, br: Any) -> Dict[str, Any]:
        return dict(self._ports)


def hold(want_ports: Optional[List[str]], db: Optional[FakeOvsdb]) -> Any:
    h = SwitchHold.__new__(SwitchHold)
    h.want = (None if want_ports is None else
              {"ports": want_ports, "slice": {"rings": []}})
    h.rec = (None if db is None else
             SimpleNamespace(db=db, spec=SimpleNamespace(bridge="br0")))
    h.counted = None
    h.bfd = {}
    h.failed_links = None
    return h


PORTS = ["u0", "u1", "u2", "u3", "u4"]


def test_every_fabric_port_is_reported_and_unknown_is_said() -> None:
    """Each port of the slice: up or down as its Interface says (down
    when missing, or while its BFD session does not forward), and
    unknown when its Interface has no link state (a DPDK port that
    failed to attach: ofport -1) -- not left out, which the planner
    would have taken for up."""
    db = FakeOvsdb({"u0": iface("up"), "u1": iface("down"),
                    "u2": iface(None),
                    "u4": iface("up", bfd=True, forwarding=False)})
    links, _ = hold(PORTS, db).local_view(False)
    assert links == {"u0": "up", "u1": "down", "u2": "unknown",
                     "u3": "down", "u4": "down"}


def test_a_switch_the_agent_cannot_read_has_its_ports_unknown() -> None:
    """An agent that cannot read its switch (no connection since a
    failed apply, the bridge gone, its database not connected: the IDL
    would give what it held before) reports its ports unknown rather
    than wiping them (an empty report hid the ports it had reported
    down)."""
    unknown = {p: "unknown" for p in PORTS}
    assert hold(PORTS, None).local_view(False)[0] == unknown
    up = {p: iface("up") for p in PORTS}
    assert hold(PORTS, FakeOvsdb(up, bridge=False)).local_view(
        False)[0] == unknown
    assert hold(PORTS, FakeOvsdb(up, connected=False)).local_view(
        False)[0] == unknown
    # Without a slice it has no fabric ports to speak of.
    assert hold(None, None).local_view(False)[0] == {}
    # Between a failed attempt to apply (a slice the switch refused)
    # and the next, what it read of the switch at that attempt.
    h = hold(PORTS, None)
    h.failed_links = {"u0": "up", "u1": "down"}
    assert h.local_view(False)[0] == dict(unknown, u0="up", u1="down")


def test_the_schema_takes_unknown_link_states() -> None:
    with open(schema_path()) as f:
        schema = json.load(f)
    links = schema["tables"]["Node"]["columns"]["links"]["type"]
    assert links["value"]["enum"] == ["set", ["down", "unknown", "up"]]
