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

"""Unit tests of how a switch's agent keeps its bridge from flooding and
a restarted ovs-vswitchd from forwarding before the slice is in
(SwitchHold.secure(), restore_wait(), fabric/switchhold.py).  Pure: a
fake switch database, and a fake ovs-vswitchd that reads
other_config:flow-restore-wait as bridge.c does (at its start, and at
each configuration it applies until it reads it unset, never after).
tests/cmd/test_ovs_daqfabric_agent.py runs the same against a real
ovs-vswitchd.

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_failmode.py
"""

from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Sequence

import pytest

from ovs_daqring.daqctl.model import DaqctlError
from ovs_daqring.fabric.switchhold import (FRW, FRW_MAX_FAILURES, FRW_OWNER,
                                           LINK_CHECK, SwitchHold)

NODE = "spine1"


class Row(SimpleNamespace):
    def verify(self, column: str) -> None:
        pass


class FakeSwitch:
    """The switch's database (as Reconciler.db) and its ovs-vswitchd."""

    def __init__(self, frw: Optional[str] = None,
                 owner: Optional[str] = None,
                 bridges: Sequence[str] = ("br0",),
                 fail_mode: Optional[str] = "secure") -> None:
        self.br = {n: Row(name=n, fail_mode=[fail_mode] if fail_mode
                          else []) for n in bridges}
        self.root = Row(other_config={}, external_ids={}, next_cfg=1,
                        cur_cfg=1, bridges=list(self.br.values()))
        if frw is not None:
            self.root.other_config[FRW] = frw
        if owner is not None:
            self.root.external_ids[FRW_OWNER] = owner
        self.idl = SimpleNamespace(tables={"Open_vSwitch": SimpleNamespace(
            rows={1: self.root})})
        # What happened, in order: ("txn", comment), ("wait", cfg).
        self.log: List[Any] = []
        self.refuse: Optional[str] = None
        self.start_vswitchd()

    # ovs-vswitchd (bridge.c: flow_restore_wait starts true, is read
    # from the database while it is, and never again once false).
    def start_vswitchd(self) -> None:
        self.held = True
        self.read_frw()

    def read_frw(self) -> None:
        if self.held:
            self.held = self.root.other_config.get(FRW) == "true"

    # The database, as Ovsdb.
    def bridge(self, name: str) -> Any:
        if name not in self.br:
            raise DaqctlError("no bridge %s" % name)
        return self.br[name]

    def transact(self, build: Any, comment: str) -> int:
        if self.refuse is not None:
            raise DaqctlError(self.refuse)
        build(None)
        self.root.next_cfg += 1
        self.log.append(("txn", comment))
        return int(self.root.next_cfg)

    def wait_applied(self, cfg: int) -> None:
        # ovs-vswitchd reads the key, then applies the configuration.
        self.read_frw()
        self.root.cur_cfg = max(self.root.cur_cfg, self.root.next_cfg)
        self.log.append(("wait", cfg))

    def frw(self) -> Dict[str, Optional[str]]:
        return {"key": self.root.other_config.get(FRW),
                "owner": self.root.external_ids.get(FRW_OWNER)}

    def txns(self) -> List[str]:
        return [c for what, c in self.log if what == "txn"]


def hold(sw: FakeSwitch, kept: bool = True, db: str = "unix:/r/db.sock",
         of: str = "unix:/r/br0.mgmt") -> Any:
    h = SwitchHold.__new__(SwitchHold)
    h.node = NODE
    h.cache_path = "/var/lib/x/%s.json" % NODE
    h.saved = '{"slice": {}}' if kept else "null"
    h.want = {"target": {"db": db, "of": of, "bridge": "br0"}}
    h.rec = SimpleNamespace(db=sw, spec=SimpleNamespace(bridge="br0", db=db),
                            of=SimpleNamespace(target=of))
    h.frw_released = False
    h.frw_failures = 0
    h.frw_releases = 0
    h.frw_note = None
    h.frw_why = None
    h.link_check_error = None
    h.args = SimpleNamespace(link_check_interval=10)
    return h


# ================================================================ fail_mode
@pytest.mark.parametrize("mode", [None, "standalone"])
def test_a_standalone_bridge_is_made_secure(mode: Optional[str]) -> None:
    """Unset (standalone) or standalone: made secure in a transaction of
    its own, applied by ovs-vswitchd (which flushes the bridge) before
    the slice goes in; the check is then a full one."""
    sw = FakeSwitch(fail_mode=mode)
    h = hold(sw)
    assert h.secure(h.rec) is True
    assert sw.br["br0"].fail_mode == ["secure"]
    assert [w for w, _ in sw.log] == ["txn", "wait"]
    assert "fail_mode=secure on bridge br0" in sw.log[0][1]
    # Secure already: nothing to do, nothing flushed.
    assert h.secure(h.rec) is False
    assert len(sw.log) == 2


def test_a_bridge_that_cannot_be_made_secure_is_a_failure() -> None:
    """The refusal fails the attempt (the Node row's error says why)."""
    sw = FakeSwitch(fail_mode="standalone")
    sw.refuse = "transaction failed (constraint violation); nothing changed"
    h = hold(sw)
    with pytest.raises(DaqctlError) as e:
        h.secure(h.rec)
    assert "fail_mode standalone" in str(e.value)
    assert "cannot be made secure" in str(e.value)
    assert "constraint violation" in str(e.value)
    assert sw.br["br0"].fail_mode == ["standalone"]


# ============================================= dpdk-link-check-interval
def test_link_check_key_set_when_unset_and_left_when_set() -> None:
    """link_check(): the key set to --link-check-interval when it is not
    set (one transaction), never written again, someone's value kept,
    and nothing with --link-check-interval 0."""
    sw = FakeSwitch()
    h = hold(sw)
    h.link_check(h.rec)
    h.link_check(h.rec)
    assert sw.root.other_config[LINK_CHECK] == "10"
    assert len(sw.txns()) == 1
    sw.root.other_config[LINK_CHECK] = "250"
    h.link_check(h.rec)
    assert sw.root.other_config[LINK_CHECK] == "250"
    assert len(sw.txns()) == 1
    sw = FakeSwitch()
    h = hold(sw)
    h.args.link_check_interval = 0
    h.link_check(h.rec)
    assert LINK_CHECK not in sw.root.other_config and not sw.txns()


def test_link_check_key_refused_does_not_fail_the_attempt() -> None:
    """A database that refuses the key: no exception (the slice is
    applied all the same), the reason kept (logged once), and the key
    set at a later check once the database takes it."""
    sw = FakeSwitch()
    sw.refuse = "transaction failed (permission denied); nothing changed"
    h = hold(sw)
    h.link_check(h.rec)
    h.link_check(h.rec)
    assert LINK_CHECK not in sw.root.other_config
    assert "permission denied" in (h.link_check_error or "")
    sw.refuse = None
    h.link_check(h.rec)
    assert sw.root.other_config[LINK_CHECK] == "10"
    assert h.link_check_error is None


# ======================================================= flow-restore-wait
def test_restarted_switch_waits_until_the_slice_is_in() -> None:
    """An ovs-vswitchd that started with the agent's key set forwards
    only once the agent has applied the slice and removed the key (and
    seen ovs-vswitchd read it: cur_cfg); then the key is set again for
    the next start, once per start."""
    sw = FakeSwitch(frw="true", owner=NODE)
    assert sw.held
    h = hold(sw)
    h.restore_wait(h.rec)
    assert not sw.held
    # Removed, waited for, set again.
    assert [w for w, _ in sw.log] == ["txn", "wait", "txn"]
    assert "flow-restore-wait removed" in sw.log[0][1]
    assert sw.frw() == {"key": "true", "owner": NODE}
    assert h.frw_releases == 1
    assert h.frw_text() == ("set for the next start of ovs-vswitchd; "
                            "released 1 times")
    # The checks after that change nothing.
    h.restore_wait(h.rec)
    assert len(sw.log) == 3
    # A restart: held again, released again.
    sw.start_vswitchd()
    assert sw.held
    h.frw_released = False
    h.restore_wait(h.rec)
    assert not sw.held and sw.frw() == {"key": "true", "owner": NODE}
    assert h.frw_releases == 2


def test_key_set_while_running_waits_for_the_next_start() -> None:
    """A switch that started without the key is not held; the key is set
    once ovs-vswitchd has applied a configuration without it (cur_cfg),
    for its next start -- and only once a slice is kept on the disk: an
    agent that started with none would need the fabric database."""
    sw = FakeSwitch()
    assert not sw.held
    h = hold(sw, kept=False)
    h.restore_wait(h.rec)
    assert sw.txns() == [] and sw.frw()["key"] is None
    assert "no slice kept" in h.frw_text()
    h.saved = '{"slice": {}}'
    h.restore_wait(h.rec)
    assert sw.frw() == {"key": "true", "owner": NODE}
    assert [w for w, _ in sw.log] == ["wait", "txn"]
    assert not sw.held and h.frw_releases == 0


def test_someone_elses_key_is_left_to_them() -> None:
    """A key without the agent's owner key (ovs-ctl restart's, which
    restores the flows it saved and removes it) is neither removed nor
    taken over; once it is gone, the agent's own is set."""
    sw = FakeSwitch(frw="true")
    h = hold(sw)
    h.restore_wait(h.rec)
    h.restore_wait(h.rec)
    assert sw.log == [] and sw.held and not h.frw_released
    assert h.frw_text().startswith("set by someone else")
    # ovs-ctl's restore completes.
    del sw.root.other_config[FRW]
    sw.read_frw()
    h.restore_wait(h.rec)
    assert sw.frw() == {"key": "true", "owner": NODE}


@pytest.mark.parametrize("why,sw,kw", [
    ("other bridges", FakeSwitch(frw="true", owner=NODE,
                                 bridges=["br0", "br-mgmt"]), {}),
    ("management socket", FakeSwitch(frw="true", owner=NODE),
     {"of": "tcp:127.0.0.1:6653"}),
    ("not a local socket", FakeSwitch(frw="true", owner=NODE),
     {"db": "tcp:10.0.0.5:6640"}),
])
def test_key_never_left_where_it_could_hold_the_switch_for_ever(
        why: str, sw: FakeSwitch, kw: Dict[str, str]) -> None:
    """Not kept for the next start where a restarted switch could wait
    for ever (another bridge's user, a controller connection that
    ovs-vswitchd does not open while it waits, a remote database): the
    running switch is released, and the key not set again."""
    h = hold(sw, **kw)
    h.restore_wait(h.rec)
    assert not sw.held and sw.frw() == {"key": None, "owner": None}
    assert why in h.frw_text()


def test_switch_that_refuses_its_slice_is_released_all_the_same() -> None:
    """An ovs-vswitchd held by the agent's key is released after
    FRW_MAX_FAILURES failed attempts in a row (never held for ever by a
    slice it refuses), and the key is set again after an attempt that
    succeeds."""
    sw = FakeSwitch(frw="true", owner=NODE)
    h = hold(sw)
    for _ in range(FRW_MAX_FAILURES - 1):
        h.restore_wait_failed()
    assert sw.held and sw.txns() == []
    h.restore_wait_failed()
    assert sw.frw() == {"key": None, "owner": None}
    sw.read_frw()
    assert not sw.held and h.frw_releases == 1
    h.restore_wait(h.rec)
    assert sw.frw() == {"key": "true", "owner": NODE}
    assert h.frw_failures == 0


def test_clean_exit_removes_the_agents_key_only() -> None:
    sw = FakeSwitch(frw="true", owner=NODE)
    h = hold(sw)
    h.frw_disarm()
    assert sw.frw() == {"key": None, "owner": None}
    other = FakeSwitch(frw="true", owner="spine2")
    h = hold(other)
    h.frw_disarm()
    assert other.txns() == [] and other.frw()["key"] == "true"
