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

"""Tests of ovs-daqfabric-agent --host, the fabric's agent on a ROS or
HLT host, in network namespaces of their own (dqh<pid>r, dqh<pid>h: one
per host, cabled to each other by two veth pairs, e0 and e1, one per
plane, and no route but the agents') against a 1-member fabric database
and a planner of the test's; no switch.  TCP connections to the DCMs'
ports go through only if both hosts steer them, on the DCM's plane.

Needs root (network namespaces).  Outcomes only; waits are bounded and
nothing asserts a duration.

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_hostagent.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

from ovs_daqring.fabric.db import FabricDb, Txn
from ovs_daqring.fabric.hostnet import RT_PROTO, plane_table

from fabric_helpers import (TWO_PLANES_FABRIC, Cluster, _tool, map_ports,
                            report_up, wait_for)
from fabric_helpers import one_member_cluster  # noqa: F401

pytestmark = [pytest.mark.machine, pytest.mark.every_base]

ROOT = Path(__file__).resolve().parent.parent.parent
AGENT = ROOT / "utilities" / "ovs-daqfabric-agent"
DAQCTL = ROOT / "utilities" / "ovs-daqctl"
PYTHON = "/usr/bin/python3"
WAIT_S = 60
T0, T1 = plane_table(0), plane_table(1)

# Two planes, a spine each; a ROS host and an HLT host cabled to both.
MAP = TWO_PLANES_FABRIC + """\
defaults: {ring-size: 64, rate: 1gbit}
dcms:
"""

# A planner: one round whenever the database changes.
PLANNER = """\
import sys, time
from ovs_daqring.fabric.plannerd import Planner
p = Planner(sys.argv[1], "test-planner", 30)
while True:
    p.db.run()
    p.step()
    time.sleep(0.2)
"""


def env() -> Dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT / "python"))


def write_map(path: Path, n_dcms: int) -> str:
    text = MAP + "".join(
        '  - {name: dcm%d, host: hlt1, tuples: ["*:*->10.1.0.1:%d"]}\n'
        % (k, 10000 + k) for k in range(n_dcms))
    path.write_text(text)
    return str(path)


def daqctl(*args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([PYTHON, str(DAQCTL)] + list(args),
                          capture_output=True, text=True, timeout=180,
                          env=env())


def ip(ns: str, *args: str) -> str:
    p = subprocess.run(["ip", "-n", ns] + list(args), capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout


class Host:
    """A host's network namespace and its agent."""

    def __init__(self, name: str, ns: str, d: str, addr: str) -> None:
        self.name = name
        self.ns = ns
        self.dir = d
        self.addr = addr
        self.ctl = os.path.join(d, name + ".ctl")
        self.agent: Optional["subprocess.Popen[bytes]"] = None
        subprocess.run(["ip", "netns", "add", ns], check=True, timeout=30)
        # No IPv6 (nothing but the test's packets on the devices), the
        # reverse-path filter off (fabric.rst, "Hosts on several
        # planes"), the host's address on its loopback.
        self.sysctl("net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1",
                    "net.ipv4.conf.all.rp_filter=0",
                    "net.ipv4.conf.default.rp_filter=0")
        ip(ns, "link", "set", "lo", "up")
        ip(ns, "addr", "add", addr + "/32", "dev", "lo")

    def sysctl(self, *settings: str) -> None:
        subprocess.run(["ip", "netns", "exec", self.ns, "sysctl", "-qw"]
                       + list(settings), check=True, timeout=30)

    def cable(self, peer: "Host") -> None:
        """A veth pair per plane between this host and 'peer', eK at
        both ends."""
        for k in (0, 1):
            dev = "e%d" % k
            ip(self.ns, "link", "add", dev, "type", "veth", "peer", "name",
               dev, "netns", peer.ns)
            ip(self.ns, "link", "set", dev, "up")
            ip(peer.ns, "link", "set", dev, "up")
        # The kernel says a device's carrier is up a moment later
        # (linkwatch), and the agents report what it says.
        for h in (self, peer):
            wait_for(lambda h=h: all(
                lk["operstate"] == "UP" for lk in json.loads(
                    ip(h.ns, "-j", "link", "show"))
                if lk["ifname"] in ("e0", "e1")), "the devices to be up")

    def tx(self) -> Dict[str, int]:
        """The packets each plane device sent."""
        return {lk["ifname"]: int(lk["stats64"]["tx"]["packets"])
                for lk in json.loads(ip(self.ns, "-j", "-s", "link", "show"))
                if lk["ifname"] in ("e0", "e1")}

    def start(self, remotes: str) -> None:
        out = open(os.path.join(self.dir, self.name + ".out"), "ab")
        try:
            self.agent = subprocess.Popen(
                ["ip", "netns", "exec", self.ns, PYTHON, str(AGENT),
                 "--host", self.name, "--db", remotes, "--plane-dev",
                 "0=e0", "--plane-dev", "1=e1", "--interval", "0.5",
                 "--timeout", "60", "--unixctl", self.ctl,
                 "--log-file=" + os.path.join(self.dir, self.name + ".log"),
                 "-vconsole:off", "--no-chdir"],
                stdout=out, stderr=out, env=env())
        finally:
            out.close()
        wait_for(lambda: os.path.exists(self.ctl)
                 or self.agent.poll() is not None, "the agent to start")
        assert self.agent.poll() is None, self.log()

    def log(self) -> str:
        p = os.path.join(self.dir, self.name + ".log")
        return Path(p).read_text() if os.path.exists(p) else ""

    def appctl(self, *args: str) -> str:
        p = subprocess.run([_tool("ovs-appctl"), "-t", self.ctl]
                           + list(args), capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 0, p.stderr
        return p.stdout

    def rules(self) -> List[Dict[str, Any]]:
        return [r for r in json.loads(ip(self.ns, "-j", "rule", "show"))
                if r.get("protocol") == str(RT_PROTO)]

    def ports_by_table(self, key: str) -> Dict[int, int]:
        """The agent's rules: their port ('sport' or 'dport') -> table."""
        return {int(r[key]): int(r["table"]) for r in self.rules()}

    def routes(self, table: int) -> List[Dict[str, Any]]:
        return json.loads(ip(self.ns, "-j", "route", "show", "table",
                             str(table), "proto", str(RT_PROTO)))

    def stop(self) -> None:
        if self.agent is not None and self.agent.poll() is None:
            self.agent.kill()
            self.agent.wait(30)
        subprocess.run(["ip", "netns", "del", self.ns], timeout=30)


@pytest.fixture
def hosts(cluster: Cluster) -> Iterator[Dict[str, Any]]:
    """The ROS and HLT hosts' namespaces and a planner (started, not
    their agents); the switches, which run no agent here, reported up in
    stand-in reports (the planner uses a port only while a fresh report
    says it is up)."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    if shutil.which("ip") is None:
        pytest.skip("needs iproute2")
    report_up(cluster.remotes(), map_ports(TWO_PLANES_FABRIC))
    d = tempfile.mkdtemp(prefix="dqh.", dir="/tmp")
    made: Dict[str, Any] = {}
    planner = None
    try:
        base = "dqh%d" % os.getpid()
        made["ros1"] = Host("ros1", base + "r", d, "10.0.0.1")
        made["hlt1"] = Host("hlt1", base + "h", d, "10.1.0.1")
        made["ros1"].cable(made["hlt1"])
        planner = subprocess.Popen([PYTHON, "-c", PLANNER,
                                    cluster.remotes()], env=env(),
                                   stdout=subprocess.DEVNULL,
                                   stderr=open(os.path.join(d, "planner"),
                                               "ab"))
        made["dir"] = d
        yield made
    finally:
        if planner is not None:
            planner.kill()
            planner.wait(30)
        for k in ("ros1", "hlt1"):
            if k in made:
                made[k].stop()
        shutil.rmtree(d, ignore_errors=True)


SERVER = """\
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.1.0.1", int(sys.argv[1])))
s.listen()
print("ready", flush=True)
s.settimeout(60)
c, _ = s.accept()
c.sendall(b"dcm")
c.close()
"""
CLIENT = """\
import socket, sys
s = socket.create_connection(("10.1.0.1", int(sys.argv[1])), timeout=10,
                             source_address=("10.0.0.1", 0))
print(s.recv(10).decode())
"""


def connect(ros: Host, hlt: Host, port: int) -> Dict[str, Dict[str, int]]:
    """A TCP connection from ros1 to a DCM's port on hlt1 (it fails
    unless both steer it: they have no other route to each other).
    Returns the packets each plane device of each host sent for it."""
    before = {"ros1": ros.tx(), "hlt1": hlt.tx()}
    srv = subprocess.Popen(["ip", "netns", "exec", hlt.ns, PYTHON, "-c",
                            SERVER, str(port)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        assert srv.stdout is not None
        if srv.stdout.readline().strip() != "ready":
            srv.kill()
            raise AssertionError("the DCM's server: %s"
                                 % srv.communicate(timeout=30)[1])
        p = subprocess.run(["ip", "netns", "exec", ros.ns, PYTHON, "-c",
                            CLIENT, str(port)], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 0 and p.stdout.strip() == "dcm", p.stderr
        srv.wait(60)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait(30)
    after = {"ros1": ros.tx(), "hlt1": hlt.tx()}
    return {h: {d: after[h][d] - before[h][d] for d in after[h]}
            for h in after}


def set_link_down(cluster: Cluster, switch: str, port: str) -> None:
    """A link of 'switch' reported down in its stand-in report, as its
    agent would (not up itself: 'apply --wait' does not wait for it)."""
    db = FabricDb(cluster.remotes(), 30)
    try:
        def build(txn: Txn) -> None:
            row = next(r for r in db.rows("Node") if r.name == switch)
            links = dict(row.links)
            links[port] = "down"
            row.links = links
            return None
        status, _ = db.commit(build, "test: %s:%s down" % (switch, port))
        assert status == Txn.SUCCESS, status
    finally:
        db.close()


def test_host_agents_steer_each_dcm_on_its_plane(
        cluster: Cluster, hosts: Dict[str, Any], tmp_path: Path) -> None:
    ros, hlt = hosts["ros1"], hosts["hlt1"]
    remotes = cluster.remotes()
    ros.start(remotes)
    hlt.start(remotes)
    m = write_map(tmp_path / "m4.yaml", 4)
    p = daqctl("fabric", "apply", m, "--wait", "--timeout", str(WAIT_S),
               "--db", remotes, "-f", "json")
    assert p.returncode == 0, p.stdout + p.stderr + hlt.log()
    rep = json.loads(p.stdout)["fabric"]
    assert sorted(rep["applied"]) == ["hlt1", "ros1"], rep
    # Round-robin over the planes: dcm0 and dcm2 on plane 0.
    first = {10000: T0, 10001: T1, 10002: T0, 10003: T1}
    assert hlt.ports_by_table("sport") == first
    assert ros.ports_by_table("dport") == first
    assert all(r["src"] == "10.1.0.1" for r in hlt.rules())
    assert all(r["dst"] == "10.1.0.1" for r in ros.rules())
    for host, dst in ((ros, "10.1.0.1"), (hlt, "10.0.0.1")):
        for table, dev in ((T0, "e0"), (T1, "e1")):
            assert [(r["dst"], r["dev"]) for r in host.routes(table)] == [
                (dst, dev)], host.name

    # 'fabric status' lists the hosts, as hosts.
    p = daqctl("fabric", "status", "--json", "--db", remotes)
    assert p.returncode == 0, p.stderr
    nodes = {n["switch"]: n for n in json.loads(p.stdout)["fabric"]["nodes"]}
    for name in ("ros1", "hlt1"):
        n = nodes[name]
        assert (n["kind"], n["up"], n["error"]) == ("host", True, None), n
        assert n["links"] == {"e0": "up", "e1": "up"}, n
    # A connection to dcm0 (plane 0) and one to dcm1 (plane 1): each on
    # its plane's devices, both ways.
    for port, dev, other in ((10000, "e0", "e1"), (10001, "e1", "e0")):
        sent = connect(ros, hlt, port)
        for h in ("ros1", "hlt1"):
            assert sent[h][dev] > 0 and sent[h][other] == 0, (port, sent)
    assert nodes["spine1"]["kind"] == "switch"
    assert not nodes["spine1"]["up"]
    p = daqctl("fabric", "status", "--db", remotes)
    assert p.returncode == 0 and "hlt1" in p.stdout, p.stderr

    st = json.loads(hlt.appctl("status", "--json"))
    assert (st["kind"], st["dcms"], st["error"]) == ("host", 4, "-"), st

    # hlt1's leaf of plane 0 loses its uplink: every DCM moves to plane 1,
    # on both hosts.
    set_link_down(cluster, "hlt-leaf1", "up1")
    every = {10000 + k: T1 for k in range(4)}
    wait_for(lambda: hlt.ports_by_table("sport") == every
             and ros.ports_by_table("dport") == every,
             "the hosts to move the DCMs to plane 1", WAIT_S)
    sent = connect(ros, hlt, 10000)
    for h in ("ros1", "hlt1"):
        assert sent[h]["e1"] > 0 and sent[h]["e0"] == 0, sent

    # A DCM more: 'apply --wait' waits for the hosts too.
    m = write_map(tmp_path / "m5.yaml", 5)
    p = daqctl("fabric", "apply", m, "--wait", "--timeout", str(WAIT_S),
               "--db", remotes, "-f", "json")
    assert p.returncode == 0, p.stdout + p.stderr
    rep = json.loads(p.stdout)["fabric"]
    assert sorted(rep["applied"]) == ["hlt1", "ros1"], rep
    assert len(ros.rules()) == 5 and len(hlt.rules()) == 5

    # A route someone deletes is put back.
    ip(ros.ns, "route", "del", "10.1.0.1/32", "table", str(T1))
    wait_for(lambda: ros.routes(T1), "the route to be put back", WAIT_S)
    # Routes and rules of others are left alone.
    ip(ros.ns, "route", "add", "10.9.0.0/16", "dev", "e0", "table",
       str(T1))
    ip(ros.ns, "rule", "add", "pref", "100", "from", "10.9.0.0/16",
       "lookup", "main")
    checks = json.loads(ros.appctl("status", "--json"))["checks"]
    wait_for(lambda: json.loads(ros.appctl("status", "--json"))["checks"]
             > checks + 1, "two checks of the kernel", WAIT_S)
    assert "10.9.0.0/16" in ip(ros.ns, "route", "show", "table", str(T1))
    assert "10.9.0.0/16" in ip(ros.ns, "rule", "show")

    # The fabric database goes away: the hosts keep steering, and put
    # back what someone deletes.
    cluster.kill(1)
    wait_for(lambda: json.loads(hlt.appctl("status", "--json"))[
        "fabric"].startswith("not connected"), "hlt1 to see it", WAIT_S)
    held = hlt.ports_by_table("sport")
    rule = next(r for r in hlt.rules() if r["sport"] == 10001)
    ip(hlt.ns, "rule", "del", "pref", str(rule["priority"]), "from",
       "10.1.0.1", "ipproto", "tcp", "sport", "10001", "lookup", str(T1),
       "protocol", str(RT_PROTO))
    assert 10001 not in hlt.ports_by_table("sport")
    wait_for(lambda: hlt.ports_by_table("sport") == held,
             "hlt1 to put the rule back", WAIT_S)
    sent = connect(ros, hlt, 10001)
    for h in ("ros1", "hlt1"):
        assert sent[h]["e1"] > 0 and sent[h]["e0"] == 0, sent

    # The agent exits: the routes stay.
    ros.appctl("exit")
    assert ros.agent is not None
    ros.agent.wait(WAIT_S)
    assert len(ros.rules()) == 5
    assert ros.routes(T1) == [{"dst": "10.1.0.1", "dev": "e1",
                               "scope": "link", "flags": []}]


def test_plane_without_a_device_is_an_error(
        cluster: Cluster, hosts: Dict[str, Any], tmp_path: Path) -> None:
    """hlt1's agent has no device for plane 1: the DCMs of plane 1 are
    named in its error, and 'apply --wait' says so; those of plane 0 are
    steered.  Its device of plane 5, which the fabric does not have, does
    not exist: no matter."""
    hlt = hosts["hlt1"]
    remotes = cluster.remotes()
    out = open(os.path.join(hosts["dir"], "hlt1.out"), "ab")
    try:
        hlt.agent = subprocess.Popen(
            ["ip", "netns", "exec", hlt.ns, PYTHON, str(AGENT), "--host",
             "hlt1", "--db", remotes, "--plane-dev", "0=e0",
             "--plane-dev", "5=nosuch", "--interval",
             "0.5", "--unixctl", hlt.ctl, "-vconsole:off", "--no-chdir"],
            stdout=out, stderr=out, env=env())
    finally:
        out.close()
    wait_for(lambda: os.path.exists(hlt.ctl), "the agent to start")
    m = write_map(tmp_path / "m2.yaml", 2)
    p = daqctl("fabric", "apply", m, "--wait", "--timeout", str(WAIT_S),
               "--db", remotes, "-f", "json")
    assert p.returncode == 1, p.stdout + p.stderr
    rep = json.loads(p.stdout)["fabric"]
    assert rep["refused"]["hlt1"] == (
        "plane 1 has no --plane-dev: DCM dcm1 not steered (the main "
        "table's routes stand)"), rep
    assert hlt.ports_by_table("sport") == {10000: T0}


def test_host_options_refused() -> None:
    for bad, msg in ((["--host", "h", "--ovsdb", "unix:/x"], "--ovsdb"),
                     (["--host", "h", "--planner"], "--planner"),
                     (["--host", "h", "--node", "n"], "not allowed"),
                     (["--host", "h", "--plane-dev", "x=e0"], "PLANE=DEV"),
                     (["--node", "n", "--plane-dev", "0=e0"],
                      "only with --host")):
        p = subprocess.run([sys.executable, str(AGENT)] + bad,
                           capture_output=True, text=True, timeout=60,
                           env=env())
        assert p.returncode == 2 and msg in p.stderr, p.stderr


def test_unknown_host_is_left_alone(cluster: Cluster, hosts: Dict[str, Any],
                                    tmp_path: Path) -> None:
    """An agent whose --host is not in the map (a typo) leaves the host's
    routes and rules as they are, and says why."""
    ros = hosts["ros1"]
    ip(ros.ns, "rule", "add", "pref", "5300", "to", "10.1.0.1", "lookup",
       str(T0), "protocol", str(RT_PROTO))
    ros.name = "ros9"
    ros.start(cluster.remotes())
    m = write_map(tmp_path / "m2.yaml", 2)
    p = daqctl("fabric", "apply", m, "--db", cluster.remotes())
    assert p.returncode == 0, p.stdout + p.stderr
    wait_for(lambda: "no host ros9 in the fabric" in json.loads(
        ros.appctl("status", "--json"))["error"], "the agent to say so",
        WAIT_S)
    assert [r.get("dst") for r in ros.rules()] == ["10.1.0.1"]
