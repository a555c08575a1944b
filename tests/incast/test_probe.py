"""Tests of --failover's loss probe (python/ovs_daqring/incast/fabric/
probe.py) and of what --failover may fail (--failover-target,
incast/fabric/failover.py): the counting of each direction, the ends'
output checked, the targets resolved against the plan or refused with
what is valid, the probe's ends on a path through the failed element,
and the summary's lines.  Pure: no root.

Run: /usr/bin/python3 -m pytest -q tests/incast/test_probe.py
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any, List

import pytest

from ovs_daqring.hosts import ConfigError, HostInfo
from ovs_daqring.incast import options, validation
from ovs_daqring.incast.fabric.failover import (CarrierWatch, FailTarget,
                                                carrier_down_at, dcms_on,
                                                probe_ends, resolve_target,
                                                watched_leaves)
from ovs_daqring.incast.fabric.plan import make_fabric_plan
from ovs_daqring.incast.fabric.probe import (PROBE, direction, parse_end,
                                             probe_result)
from ovs_daqring.incast.fabric.summary import format_fabric

RATE = 100.0
P = 1.0 / RATE


def sends(seqs: List[int], t0: float = 1000.0, delay: float = 0.002
          ) -> List[List[float]]:
    """[seq, send time, receive time] of datagrams sent on schedule."""
    return [[s, t0 + s * P, t0 + s * P + delay] for s in seqs]


# ============================================================= counting
def test_nothing_lost() -> None:
    d = direction(100, sends(list(range(100))), RATE, since=1000.0)
    assert (d["sent"], d["received"], d["lost"]) == (100, 100, 0)
    assert d["longest_loss_run"] == 0 and d["loss_window_ms"] == 0
    assert d["max_gap_ms"] == pytest.approx(10, abs=0.01)
    assert d["duplicates"] == d["reordered"] == d["invalid"] == 0


def test_a_run_lost_in_the_middle() -> None:
    """Numbers 30..36 lost: 7 lost, the gap between 29 and 37 (80 ms of
    sends and of arrivals), after 29's send/arrival."""
    got = sends([s for s in range(100) if not 30 <= s <= 36])
    d = direction(100, got, RATE, since=1000.0)
    assert (d["received"], d["lost"], d["longest_loss_run"]) == (93, 7, 7)
    assert d["sent"] == d["received"] + d["lost"]
    assert d["loss_window_ms"] == pytest.approx(80, abs=0.01)
    assert d["loss_window_after_s"] == pytest.approx(0.29, abs=0.001)
    assert d["max_gap_ms"] == pytest.approx(80, abs=0.01)
    assert d["max_gap_after_s"] == pytest.approx(0.292, abs=0.001)
    assert d["loss_runs"] == [{"after_s": 0.29, "lost": 7}]


def test_a_delay_without_loss_is_a_gap_not_a_loss() -> None:
    """Datagrams from 50 on held 200 ms longer (a queue on the new
    path): none lost, the arrivals' gap shows it, no loss window."""
    got = sends(list(range(100)))
    for r in got[50:]:
        r[2] += 0.2
    d = direction(100, got, RATE, since=1000.0)
    assert d["lost"] == 0 and d["loss_window_ms"] == 0
    assert d["max_gap_ms"] == pytest.approx(210, abs=0.01)
    assert d["max_gap_after_s"] == pytest.approx(0.492, abs=0.001)


def test_losses_at_the_ends_and_all_lost() -> None:
    d = direction(100, sends(list(range(10, 80))), RATE, since=1000.0)
    assert d["lost"] == 30 and d["longest_loss_run"] == 20
    assert d["loss_runs"] == [{"after_s": None, "lost": 10},
                              {"after_s": 0.79, "lost": 20}]
    # The 20 after the last that arrived: 200 ms of sends.
    assert d["max_gap_ms"] == pytest.approx(200, abs=0.01)
    d = direction(50, [], RATE)
    assert (d["received"], d["lost"], d["longest_loss_run"]) == (0, 50, 50)
    assert d["max_gap_ms"] == pytest.approx(500, abs=0.01)
    assert d["max_gap_after_s"] is None
    d = direction(0, [], RATE)
    assert (d["sent"], d["lost"], d["max_gap_ms"]) == (0, 0, 0)


def test_duplicates_reordering_and_garbage_are_not_received() -> None:
    got: List[Any] = sends([0, 1, 3, 2, 4])
    got += [got[0], None, [7, 1.0, 2.0], ["1", 1.0, 2.0], [True, 1.0, 2.0],
            [-1, 1.0, 1.0], [4, "x", 1.0], [4, 1.0]]
    d = direction(5, got, RATE)
    assert (d["received"], d["lost"]) == (5, 0)
    assert d["duplicates"] == 1 and d["reordered"] == 1
    assert d["invalid"] == 7


def test_a_failed_send_is_numbered_and_lost() -> None:
    """An end that could not send (send_errors) still used the number:
    the other end counts it lost."""
    ros = {"sent": 9, "send_errors": 1,
           "received": sends(list(range(10)))}
    dcm = {"sent": 10, "send_errors": 0,
           "received": sends([s for s in range(10) if s != 4])}
    r = probe_result(ros, dcm, RATE)
    assert r["ros_to_dcm"]["sent"] == 10 and r["ros_to_dcm"]["lost"] == 1
    assert r["ros_to_dcm"]["send_errors"] == 1
    assert r["dcm_to_ros"]["lost"] == 0


@pytest.mark.parametrize("text,words", [
    ("", "no count printed"),
    ("READY\n", "no count printed"),
    ("READY\n{not json", "not JSON"),
    ("READY\n[1]", "not an object"),
    ('{"sent": -1, "send_errors": 0, "received": []}', "sent: -1"),
    ('{"sent": 1, "send_errors": true, "received": []}', "send_errors"),
    ('{"sent": 1, "send_errors": 0, "received": {}}', "received: not"),
])
def test_an_ends_bad_output_is_refused(text: str, words: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_end(text)
    assert words in str(e.value)


def test_the_probe_program_counts_over_loopback() -> None:
    """The end's program itself, sending to its own address and port
    (its socket receives its own datagrams): everything it sent it
    received (loopback loses nothing), numbered from 0, and its count
    is consistent."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    p = subprocess.Popen([sys.executable, "-c", PROBE, "127.0.0.1",
                          "127.0.0.1", str(port), "200"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout is not None and p.stdin is not None
        assert p.stdout.readline().strip() == "READY"
        p.stdin.write("GO\n")
        p.stdin.flush()
        time.sleep(0.3)
        p.send_signal(signal.SIGUSR1)
        time.sleep(0.3)
        p.terminate()
        out, _ = p.communicate(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
    end = parse_end(out)
    assert end["sent"] > 0 and end["send_errors"] == 0
    d = direction(end["sent"], end["received"], 200)
    assert d["received"] == d["sent"] and d["lost"] == 0
    assert d["invalid"] == 0 and d["duplicates"] == 0
    assert json.loads(out.splitlines()[-1])["sent"] == end["sent"]


# ============================================================ targets
def _cfg(*argv: str) -> Any:
    host = HostInfo(is_root=True, cpus=[0, 1], hugepages_free_mb=4096,
                    hugetlbfs_mounted=True)
    return validation.validate(options.parse_args(
        ["--topology", "fabric", "--spines", "2"] + list(argv)), host,
        check_env=False)


def _plan(*argv: str) -> Any:
    return make_fabric_plan(77, _cfg(*argv))


def test_the_default_target_is_the_hlt_leafs_link_to_spine1() -> None:
    t = resolve_target(_plan(), "")
    assert t == FailTarget("link", "spine1",
                           ("hlt-leaf", "up1", "spine1", "dn1"))
    assert t.name == "hlt-leaf:up1-spine1:dn1" and t.leaf == "hlt-leaf"


@pytest.mark.parametrize("text", ["link:ros-leaf0:up1", "link:spine1:dn0"])
def test_a_link_by_either_end(text: str) -> None:
    t = resolve_target(_plan(), text)
    assert t.link == ("ros-leaf0", "up1", "spine1", "dn0")
    assert t.kind == "link" and t.spine == "spine1"


def test_a_spine_and_a_link_of_a_second_plane() -> None:
    p = _plan("--planes", "2", "--ros", "4", "--dcms", "2")
    t = resolve_target(p, "spine:p1-spine0")
    assert (t.kind, t.spine, t.link, t.leaf) == ("spine", "p1-spine0",
                                                 None, None)
    assert t.name == "spine:p1-spine0"
    assert watched_leaves(p, t) == ["p1-ros-leaf0", "p1-hlt-leaf"]
    t = resolve_target(p, "link:p1-hlt-leaf:p1-up0")
    assert t.link == ("p1-hlt-leaf", "p1-up0", "p1-spine0", "dn1")


def _hold_text(plan: Any, target: Any) -> str:
    """daq-incast --hold's hints for PLAN, --failover-target TARGET, its
    switches' ovs-vswitchd running as pid 4242."""
    from types import SimpleNamespace
    from ovs_daqring.incast.fabric.runner import FabricRunner
    proc = SimpleNamespace(pid=4242, poll=lambda: None)
    fake = SimpleNamespace(
        db=SimpleNamespace(remotes=lambda: "unix:/w/db1.sock",
                           path=lambda i, what: "/w/db%d.%s" % (i, what)),
        cfg=SimpleNamespace(binaries=SimpleNamespace(
            appctl="ovs-appctl", vsctl="ovs-vsctl", ofctl="ovs-ofctl"),
            spines=2),
        fplan=plan, workdir="/w", target=target,
        switches={s.name: SimpleNamespace(
            db="unix:/w/%s/db.sock" % s.name, dir="/w/" + s.name,
            ctl="/w/%s/ovs-vswitchd.ctl" % s.name, vswitchd=proc)
            for s in plan.switches})
    return str(FabricRunner.hold_text(fake))   # type: ignore[arg-type]


def test_hold_hints_name_the_ring_view() -> None:
    """daq-incast --hold: the hints name netdev-daqring/show, the one
    command that shows every ring's occupancy and drops live, and
    dump-flows with port names."""
    p = _plan()
    text = _hold_text(p, resolve_target(p, ""))
    assert "ovs-appctl -t /w/spine1/ovs-vswitchd.ctl netdev-daqring/show" \
        in text, text
    br = p.switch("spine1").bridge
    assert "ovs-ofctl --names dump-flows unix:/w/spine1/%s.mgmt" % br \
        in text, text


def test_hold_hints_fail_the_target() -> None:
    """--hold's hint of a failure to inject is --failover-target's, not
    always the default link."""
    p = _plan()
    text = _hold_text(p, resolve_target(p, "link:ros-leaf0:up1"))
    assert "a link failure (ros-leaf0:up1 - spine1:dn0)" in text, text
    ns = p.switch("spine1").ns
    assert "ip -n %s link set dn0 down" % ns in text, text
    text = _hold_text(p, resolve_target(p, ""))
    assert "a link failure (hlt-leaf:up1 - spine1:dn1)" in text, text
    text = _hold_text(p, resolve_target(p, "spine:spine0"))
    assert "spine0's ovs-vswitchd killed" in text, text
    assert "kill -9 4242" in text and "link set" not in text, text


@pytest.mark.parametrize("text,words", [
    ("link:ros-leaf0:up7", "ros-leaf0:up7 is not an end of a leaf-spine "
     "link of this fabric; its links: link:ros-leaf0:up0 "
     "(= link:spine0:dn0), link:ros-leaf0:up1"),
    ("link:ros-leaf0:h0", "is not an end of a leaf-spine link"),
    ("link:ros-leaf0", "link:SWITCH:PORT"),
    ("link::", "link:SWITCH:PORT"),
    ("spine:spine9", "no spine 'spine9' in this fabric; its spines: "
     "spine0, spine1"),
    ("spine:ros-leaf0", "no spine 'ros-leaf0'"),
    ("leaf:ros-leaf0", "link:SWITCH:PORT (a leaf-spine link"),
])
def test_a_bad_target_names_what_is_valid(text: str, words: str) -> None:
    with pytest.raises(ConfigError) as e:
        resolve_target(_plan(), text)
    assert words in str(e.value)


def test_a_target_needs_two_spines() -> None:
    p = make_fabric_plan(77, validation.validate(options.parse_args(
        ["--topology", "fabric"]), HostInfo(
            is_root=True, cpus=[0, 1], hugepages_free_mb=4096,
            hugetlbfs_mounted=True), check_env=False))
    with pytest.raises(ConfigError) as e:
        resolve_target(p, "")
    assert "--spines 2" in str(e.value)


@pytest.mark.parametrize("argv,words", [
    (["--failover-target", "spine:spine1"], "needs --failover DOWN/UP"),
    (["--failover", "2/5", "--failover-target", "switch:spine1"],
     "link:SWITCH:PORT"),
])
def test_the_option_is_checked(argv: List[str], words: str) -> None:
    with pytest.raises(ConfigError) as e:
        _cfg(*argv)
    assert words in str(e.value)


def test_the_option_needs_the_fabric() -> None:
    with pytest.raises(ConfigError) as e:
        validation.validate(options.parse_args(
            ["--failover-target", "spine:spine1"]), HostInfo(
                is_root=True, cpus=[0, 1], hugepages_free_mb=4096,
                hugetlbfs_mounted=True), check_env=False)
    assert "--failover-target needs --topology fabric" in str(e.value)


def test_the_daq_incast_script_refuses_a_bad_target() -> None:
    p = subprocess.run(
        ["/usr/bin/python3", "utilities/daq-incast", "--topology",
         "fabric", "--spines", "2", "--failover", "2/5",
         "--failover-target", "link:hlt-leaf:up5", "--dry-run"],
        capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "link:hlt-leaf:up1 (= link:spine1:dn1)" in p.stderr


# ========================================================== probe ends
def test_the_probe_crosses_the_failed_element() -> None:
    p = _plan("--ros", "4", "--dcms", "4", "--ros-leaves", "2")
    assign = {"dcm0": "0/spine0", "dcm1": "0/spine1", "dcm2": "0/spine0",
              "dcm3": "0/spine1"}
    # A ROS leaf's uplink: a ROS host of that leaf, a DCM of that spine.
    t = resolve_target(p, "link:ros-leaf1:up0")
    ros, dcm, crosses = probe_ends(p, t, assign)
    assert ros == ("dqf77-ros1", "10.77.2.1")
    assert dcm == ("dqf77-hlt0", "10.77.0.1") and crosses
    assert dcms_on(p, t, assign) == ["10.77.0.1", "10.77.0.3"]
    assert watched_leaves(p, t) == ["ros-leaf1", "ros-leaf0", "hlt-leaf"]
    # The HLT leaf's link, a spine: the first ROS host.
    for text in ("", "spine:spine1"):
        ros, dcm, crosses = probe_ends(p, resolve_target(p, text), assign)
        assert ros == ("dqf77-ros0", "10.77.1.1")
        assert dcm == ("dqf77-hlt0", "10.77.0.2") and crosses
    # No DCM on the spine: the first DCM, and it says so.
    _, dcm, crosses = probe_ends(p, t, {})
    assert dcm == ("dqf77-hlt0", "10.77.0.1") and not crosses


def test_the_summary_prints_the_probe() -> None:
    probe = {"ros": {"ns": "r", "ip": "10.77.1.1"},
             "dcm": {"ns": "h", "ip": "10.77.0.2"}, "udp_port": 9100,
             "rate_pps": 100, "path_crosses_target": True}
    probe.update(probe_result(
        {"sent": 100, "send_errors": 0,
         "received": sends([s for s in range(100) if s != 40])},
        {"sent": 100, "send_errors": 0,
         "received": sends([s for s in range(100) if not 50 <= s < 55])},
        RATE))
    doc = {"modes": [{"label": "daqring", "status": "ok", "failover": {
        "target": "spine:spine1", "link": None, "down_at_s": 2.0,
        "up_at_s": 5.0, "rerouted_after_s": 0.4, "back_after_s": 2.9,
        "degraded_limit_goodput_bps": 1e8, "limit_goodput_bps": 2e8,
        "probe": probe}}]}
    text = format_fabric(doc)
    assert "failover of spine:spine1" in text
    assert "loss probe 10.77.1.1 <-> 10.77.0.2 (UDP 9100, 100/s" in text
    assert "ROS -> DCM: sent 100, received 95, lost 5 (longest run 5)" \
        in text
    assert "DCM -> ROS: sent 100, received 99, lost 1 (longest run 1)" \
        in text


def test_a_carrier_loss_read_from_ip_monitor() -> None:
    """`ip -ts -o monitor link` lines: the port's carrier loss (no
    carrier, or no lower layer up) at the line's time, nothing for
    another port or a carrier that is up."""
    line = ("[2026-12-03T15:30:55.478595] 2: up1@if2: <NO-CARRIER,"
            "BROADCAST,MULTICAST,UP> mtu 1500 qdisc noqueue state DOWN "
            "group default \\    link/ether 72:12:dd:e9:eb:a0")
    t = carrier_down_at(line, "up1")
    assert t is not None
    assert time.strftime("%H:%M:%S", time.localtime(t)) == "15:30:55"
    assert abs(t % 1 - 0.478595) < 1e-5
    assert carrier_down_at(line, "up0") is None
    assert carrier_down_at(line.replace("NO-CARRIER,", "").replace(
        "UP>", "UP,LOWER_UP>"), "up1") is None
    assert carrier_down_at("[2026-12-03T15:30:55.478595] 7: up1: "
                           "<BROADCAST,MULTICAST> mtu 1500", "up1") == t
    assert carrier_down_at("Deleted 7: up1: <BROADCAST>", "up1") is None
    # Unreadable times: no answer, no exception.
    assert carrier_down_at(line.replace(".478595", ".4785951"), "up1") \
        is None
    assert carrier_down_at(line.replace("T15:30", "T25:30"), "up1") is None
    assert carrier_down_at("", "up1") is None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_carrier_watch_sees_the_far_end_go_down() -> None:
    """A veth pair across two namespaces, one end set down: the other
    end's carrier loss is seen, at or after the moment it was set down,
    and not before."""
    a, b = "dqbcw%dA" % os.getpid(), "dqbcw%dB" % os.getpid()
    subprocess.run(["ip", "netns", "add", a], check=True)
    try:
        subprocess.run(["ip", "netns", "add", b], check=True)
        subprocess.run(["ip", "link", "add", "cwa", "netns", a, "type",
                        "veth", "peer", "name", "cwb", "netns", b],
                       check=True)
        for ns, port in ((a, "cwa"), (b, "cwb")):
            subprocess.run(["ip", "-n", ns, "link", "set", port, "up"],
                           check=True)
        watch = CarrierWatch(b, "cwb")
        watch.start()
        try:
            time.sleep(0.3)
            since = time.time()
            assert watch.seen(since, 0) is None
            subprocess.run(["ip", "-n", a, "link", "set", "cwa", "down"],
                           check=True)
            t = watch.seen(since, 10)
            assert t is not None and since <= t < since + 10
        finally:
            watch.stop()
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns])
