"""Tests of the fabric agent's bundles through an ovs-ofctl started
ahead (python/ovs_daqring/fabric/warmofctl.py), with a stand-in
ovs-ofctl that records when it starts and what it reads.  Pure: no
switch, no root.

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_warmofctl.py
"""

import stat
from pathlib import Path
from typing import Any, List

import pytest

from ovs_daqring.daqctl.model import DaqctlError
from ovs_daqring.daqctl.openflow import OpenFlow
from ovs_daqring.fabric import warmofctl
from ovs_daqring.fabric.warmofctl import WarmOpenFlow

FAKE = """#!/bin/sh
echo "start $$ $*" >> "%(d)s/log"
cat > "%(d)s/in.$$"
echo "sent $$" >> "%(d)s/log"
exit "$(cat "%(d)s/rc" 2>/dev/null || echo 0)"
"""


@pytest.fixture
def ofctl(tmp_path: Path) -> Path:
    p = tmp_path / "ovs-ofctl"
    p.write_text(FAKE % {"d": tmp_path})
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return p


def log(d: Path) -> List[List[str]]:
    f = d / "log"
    return [ln.split() for ln in f.read_text().splitlines()] \
        if f.exists() else []


def wait_started(d: Path, n: int) -> None:
    import time
    for _ in range(500):
        if sum(1 for e in log(d) if e[0] == "start") >= n:
            return
        time.sleep(0.01)
    raise AssertionError("ovs-ofctl did not start")


def test_a_bundle_goes_to_the_spare_started_ahead(ofctl: Path) -> None:
    """warm() starts 'ovs-ofctl bundle TARGET -' (without --timeout)
    before the bundle; the bundle is written to it, no ovs-ofctl starts
    then; a new spare waits SPARE_DELAY after a bundle."""
    d = ofctl.parent
    key: List[Any] = [1]
    of = WarmOpenFlow(OpenFlow("unix:br0.mgmt", str(ofctl), 5, []),
                      lambda: key[0])
    try:
        assert of.warm(now=100.0)
        wait_started(d, 1)
        started = log(d)
        assert started[0][2:] == ["--", "bundle", "unix:br0.mgmt", "-"]
        of.bundle(["add priority=99,ip,actions=group:1",
                   "group add group_id=3,type=fast_failover"])
        assert of.warm_bundles == 1 and of.cold_bundles == 0
        pid = started[0][1]
        assert (d / ("in." + pid)).read_text() == (
            "flow add priority=99,ip,actions=group:1\n"
            "group add group_id=3,type=fast_failover\n")
        assert [e[0] for e in log(d)] == ["start", "sent"]
        # Right after the bundle: no new spare yet.
        assert not of.warm(now=of.last_bundle + 0.1)
        assert of.warm(now=of.last_bundle + warmofctl.SPARE_DELAY)
        assert not of.warm(now=of.last_bundle + 5)     # one is ready
    finally:
        of.close()


def test_a_spare_of_another_configuration_is_not_used(ofctl: Path) -> None:
    """The switch's configuration changed since the spare started (its
    port names may map to other numbers): the spare is stopped and the
    bundle goes through a new ovs-ofctl, with --timeout."""
    d = ofctl.parent
    key: List[Any] = [1]
    of = WarmOpenFlow(OpenFlow("unix:br0.mgmt", str(ofctl), 5, []),
                      lambda: key[0])
    try:
        assert of.warm(now=100.0)
        wait_started(d, 1)
        key[0] = 2
        of.bundle(["add priority=99,ip,actions=drop"])
        assert of.warm_bundles == 0 and of.cold_bundles == 1
        cold = [e for e in log(d) if e[0] == "start"][-1]
        assert "--timeout=5" in cold and cold[-3:] == [
            "bundle", "unix:br0.mgmt", "-"]
        assert (d / ("in." + cold[1])).read_text() == (
            "flow add priority=99,ip,actions=drop\n")
    finally:
        of.close()


def test_a_spare_that_fails_says_so(ofctl: Path) -> None:
    d = ofctl.parent
    of = WarmOpenFlow(OpenFlow("unix:br0.mgmt", str(ofctl), 5, []),
                      lambda: None)
    try:
        (d / "rc").write_text("1")
        assert of.warm(now=100.0)
        with pytest.raises(DaqctlError, match="bundle failed"):
            of.bundle(["add priority=99,ip,actions=drop"])
    finally:
        of.close()


def test_a_spare_is_kept_until_a_port_changes() -> None:
    """The agent's key for its spare (SwitchHold.spare_key()): the
    bridge's port names and numbers, read again when the switch's
    configuration changes; a change that leaves them (a ring's options,
    say) keeps the spare, a port renumbered does not."""
    from types import SimpleNamespace
    from ovs_daqring.fabric.switchhold import SwitchHold
    iface = SimpleNamespace(ofport=[1])
    ports = {"up0": SimpleNamespace(interfaces=[iface]),
             "up1": SimpleNamespace(interfaces=[SimpleNamespace(
                 ofport=[2])])}
    db = SimpleNamespace(config_seqno=1, bridge=lambda name: name,
                         ports=lambda br: dict(ports))
    h = SwitchHold.__new__(SwitchHold)
    h.rec = SimpleNamespace(db=db, spec=SimpleNamespace(bridge="br0"))
    h.watch = SimpleNamespace(started=1)
    k1 = h.spare_key()
    db.config_seqno = 2
    assert h.spare_key() == k1
    iface.ofport = [7]
    db.config_seqno = 3
    assert h.spare_key() != k1
