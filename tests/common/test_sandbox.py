"""Tests of ovs_daqring.sandbox, the one private switch of the tools and
the tests (daq-incast, daq-bench and test_ovs_daqctl use it with DPDK).

These start it with OVS's dummy netdevs: no DPDK, no hugepages, and no
root unless a network namespace is asked for.  Skipped without the build
in ovs/.
"""

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ovs_daqring.process import RunError, pid_alive
from ovs_daqring.sandbox import Sandbox, dpdk_settings, tree_binaries

pytestmark = [pytest.mark.machine, pytest.mark.every_base]

OVS = Path(__file__).resolve().parent.parent.parent / "ovs"
BINS = tree_binaries(str(OVS))


@pytest.fixture
def bins() -> Any:
    why = BINS.check()
    if why:
        pytest.skip("the patched OVS is not built (%s): run make" % why)
    return BINS


def test_dpdk_settings() -> None:
    """What daq-incast, daq-bench and test_ovs_daqctl give a DPDK
    sandbox: ovs-vsctl set arguments."""
    assert dpdk_settings("0x2", ["other_config:dpdk-socket-mem=512"],
                         " --no-pci --in-memory ", ["emc-insert-inv-prob=0"]
                         ) == [
        "other_config:dpdk-init=true", "other_config:pmd-cpu-mask=0x2",
        "other_config:dpdk-socket-mem=512",
        'other_config:dpdk-extra="--no-pci --in-memory"',
        "other_config:emc-insert-inv-prob=0"]


def netns_list() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True,
                          text=True).stdout


def test_dummy_sandbox_starts_and_stops(bins: Any, tmp_path: Path) -> None:
    sb = Sandbox(bins, str(tmp_path / "sb"), label="test")
    try:
        sb.start(["other_config:hw-offload=false"], dummy=True)
        assert sb.vswitchd is not None and sb.ovsdb is not None
        pids = [sb.vswitchd.pid, sb.ovsdb.pid]
        assert all(pid_alive(p) for p in pids)
        # Its own database, with the settings given.
        assert sb.vsctl("get", "Open_vSwitch", ".",
                        "other_config:hw-offload").strip() == '"false"'
        sb.add_bridge("br0", "fail_mode=secure")
        sb.vsctl("add-port", "br0", "p1", "--", "set", "Interface", "p1",
                 "type=dummy", "ofport_request=7")
        ifs = sb.interfaces()
        assert ifs["p1"]["ofport"] == 7 and ifs["p1"]["type"] == "dummy"
        assert "fail_mode" in sb.vsctl("list", "Bridge", "br0")
        # No DPDK in a dummy sandbox.
        assert sb.vsctl("get", "Open_vSwitch", ".",
                        "dpdk_initialized").strip() == "false"
        # Its own ovs-vswitchd answers on its own control socket.
        assert "p1" in sb.appctl("dpif/show")
        assert sb.pmd_tids() == []
        assert sb.pmd_schedstat() == (0, 0)
        # OpenFlow through the bridge's own management socket.
        sb.ofctl("add-flow", "unix:%s/br0.mgmt" % sb.dir,
                 "priority=5,actions=drop")
        assert "priority=5" in sb.ofctl("dump-flows",
                                        "unix:%s/br0.mgmt" % sb.dir)
    finally:
        sb.stop(fast=False, grace=10)
    assert sb.stop_s is not None
    assert not any(pid_alive(p) for p in pids)
    assert sb.vswitchd.poll() is not None and sb.ovsdb.poll() is not None
    # stop() may be called again (clean-up stacks do after a failure).
    sb.stop()


def test_stop_before_start(bins: Any, tmp_path: Path) -> None:
    sb = Sandbox(bins, str(tmp_path / "sb"))
    sb.stop()
    assert sb.stop_s is None


def test_failed_start_is_undone(bins: Any, tmp_path: Path) -> None:
    """A vswitchd that dies at once: start() fails with its log, and
    stop() leaves nothing running."""
    bad = tree_binaries(str(OVS), vswitchd="/bin/false")
    sb = Sandbox(bad, str(tmp_path / "sb"), label="broken")
    with pytest.raises(RunError, match="broken: ovs-vswitchd exited"):
        sb.start([], dummy=True)
    assert sb.ovsdb is not None and sb.ovsdb.poll() is None
    sb.stop()
    assert sb.ovsdb.poll() is not None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (ip netns)")
def test_own_namespace(bins: Any, tmp_path: Path) -> None:
    ns = "daq-sandbox-test-%d" % os.getpid()
    sb = Sandbox(bins, str(tmp_path / "sb"), netns=ns, own_netns=True)
    try:
        sb.start([], dummy=True)
        assert ns in netns_list().split()
        # ovs-vswitchd is inside the namespace, ovsdb-server is not.
        assert sb.vswitchd is not None and sb.ovsdb is not None
        own = os.readlink("/proc/self/ns/net")
        assert os.readlink("/proc/%d/ns/net" % sb.vswitchd.pid) != own
        assert os.readlink("/proc/%d/ns/net" % sb.ovsdb.pid) == own
    finally:
        sb.stop(fast=True)
    assert ns not in netns_list().split()
