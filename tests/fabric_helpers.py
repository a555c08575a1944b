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

"""What the fabric tests share: a clustered fabric database of its own
(3 ovsdb-server members on unix sockets in a short directory under /tmp:
sun_path holds 108 bytes; or over SSL on the loopback, with certificates
from ovs-pki), bounded waits, and the OVS programs (from the build in
ovs/, else installed)."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set

import pytest

from ovs_daqring.fabric import schema_path

ROOT = Path(__file__).resolve().parent.parent

# A fabric of two planes, a ROS leaf, an HLT leaf and a spine each (the
# HLT leaves with DPDK, for the tests that run their daqrings), and two
# hosts cabled to both planes: ros1 (10.0.0.1) and hlt1 (10.1.0.1).  A
# map's "fabric:" part: the tests add their defaults and DCMs.
TWO_PLANES_FABRIC = """\
fabric:
  hold-down: 3600
  switches:
    - {name: ros-leaf1, role: leaf, plane: 0}
    - {name: hlt-leaf1, role: leaf, plane: 0, dpdk: true}
    - {name: spine1, role: spine, plane: 0}
    - {name: ros-leaf2, role: leaf, plane: 1}
    - {name: hlt-leaf2, role: leaf, plane: 1, dpdk: true}
    - {name: spine3, role: spine, plane: 1}
  links:
    - {a: "ros-leaf1:up1", b: "spine1:down1"}
    - {a: "hlt-leaf1:up1", b: "spine1:down2"}
    - {a: "ros-leaf2:up1", b: "spine3:down1"}
    - {a: "hlt-leaf2:up1", b: "spine3:down2"}
  hosts:
    - {name: ros1, role: ros, ip: 10.0.0.1,
       ports: {0: "ros-leaf1:h1", 1: "ros-leaf2:h1"}}
    - {name: hlt1, role: hlt, ip: 10.1.0.1,
       ports: {0: "hlt-leaf1:h1", 1: "hlt-leaf2:h1"}}
"""


# A stand-in report's report_interval (ms): a day (report_up()).
STAND_IN_INTERVAL = 86400 * 1000


def map_ports(*texts: str) -> Dict[str, Set[str]]:
    """Each switch's fabric ports (its links' ends and its hosts' ports)
    in the fabric maps 'texts' (YAML; one without DCMs, such as
    TWO_PLANES_FABRIC, is read with none)."""
    from ovs_daqring.fabric.fabmap import FabricMapReader
    from ovs_daqring.fabric.planner import switch_ports
    out: Dict[str, Set[str]] = {}
    for text in texts:
        if "\ndcms:" not in text:
            text += "dcms: []\n"
        for sw, ports in switch_ports(
                FabricMapReader("map").parse(text)).items():
            out.setdefault(sw, set()).update(ports)
    return out


def report_up(remote: str, ports: Dict[str, Iterable[str]]) -> None:
    """Stand-in reports of the switches that run no agent in a test: per
    switch of 'ports' (switch -> fabric ports), a Node row that says
    those ports are up, as its agent would.  The planner uses a port
    only while a fresh report says it is up, and times a report from
    when it received it, by its own clock: these are fresh for three
    days (STAND_IN_INTERVAL).  Their 'updated' is 0, so 'fabric status'
    and 'fabric apply --wait', which compare it with their own clock,
    take these nodes for down and do not wait for them, as nodes without
    an agent.  A row that is there keeps the states of its other
    ports."""
    from ovs_daqring.fabric.db import FabricDb, Txn
    db = FabricDb(remote, 30)
    try:
        def build(txn: Any) -> None:
            rows = {r.name: r for r in db.rows("Node")}
            for sw, names in sorted(ports.items()):
                r = rows.get(sw)
                links = {} if r is None else dict(r.links)
                if r is None:
                    r = txn.insert(db.idl.tables["Node"])
                    r.name = sw
                r.updated = 0
                r.report_interval = STAND_IN_INTERVAL
                links.update({p: "up" for p in names})
                r.links = links
            return None
        status, _ = db.commit(build, "test: stand-in reports of %s"
                              % ", ".join(sorted(ports)))
        assert status in (Txn.SUCCESS, Txn.UNCHANGED), status
    finally:
        db.close()


def _tool(name: str) -> str:
    """An OVS program: from the build in ovs/, else installed."""
    for d in ("ovsdb", "utilities", "vswitchd"):
        p = ROOT / "ovs" / d / name
        if p.is_file() and os.access(str(p), os.X_OK):
            return str(p)
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin")
    if not found:
        pytest.fail("%s not found (build ovs/ or install "
                    "openvswitch-common)" % name)
    return found


def wait_for(cond: Callable[[], Any], what: str,
             timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out (%g s) waiting for %s"
                                 % (timeout, what))
        time.sleep(0.1)


class Pki:
    """A certificate authority made with ovs-pki (its switch CA) in
    'base'/pki, and a private key and certificate it signs per name."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.dir = os.path.join(base, "pki")
        self.tool = _tool("ovs-pki")
        self._run("init")
        self.ca = os.path.join(self.dir, "switchca", "cacert.pem")

    def _run(self, *args: str) -> None:
        p = subprocess.run([self.tool, "--dir=" + self.dir] + list(args),
                           cwd=self.base, capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr

    def files(self, name: str) -> List[str]:
        """[private key, certificate] of 'name', made the first time."""
        key = os.path.join(self.base, name + "-privkey.pem")
        cert = os.path.join(self.base, name + "-cert.pem")
        if not os.path.exists(cert):
            self._run("req+sign", name, "switch")
        return [key, cert]

    def options(self, name: str) -> List[str]:
        """The SSL options of every OVS program, for 'name'."""
        key, cert = self.files(name)
        return ["--private-key=" + key, "--certificate=" + cert,
                "--ca-cert=" + self.ca]


def free_ports(n: int) -> List[int]:
    """'n' TCP ports of the loopback that are free now."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Cluster:
    """A clustered fabric database of 'n' ovsdb-server members: on unix
    sockets, or with 'pki' over SSL on the loopback (Raft and clients)."""

    def __init__(self, n: int = 3, pki: Optional[Pki] = None) -> None:
        self.dir = tempfile.mkdtemp(prefix="dqf.", dir="/tmp")
        self.n = n
        self.pki = pki
        self.procs: Dict[int, "subprocess.Popen[bytes]"] = {}
        self.server = _tool("ovsdb-server")
        self.appctl = _tool("ovs-appctl")
        tool = _tool("ovsdb-tool")
        self.ssl = [] if pki is None else pki.options("fabric-db")
        # Raft and client ports per member, if over SSL.
        self.ports = free_ports(2 * n) if pki is not None else []
        try:
            subprocess.run([tool, "create-cluster", self.path(1, "db"),
                            schema_path(), self.raft(1)],
                           check=True, capture_output=True, timeout=30)
            for i in range(2, n + 1):
                subprocess.run([tool, "join-cluster", self.path(i, "db"),
                                "daqfabric", self.raft(i), self.raft(1)],
                               check=True, capture_output=True, timeout=30)
            for i in range(1, n + 1):
                self.start(i)
            for i in range(1, n + 1):
                wait_for(lambda i=i: "Status: cluster member"
                         in self.status(i), "member %d to join" % i)
            wait_for(self.leader, "a leader")
        except BaseException:
            self.stop()
            raise

    def path(self, i: int, ext: str) -> str:
        return os.path.join(self.dir, "s%d.%s" % (i, ext))

    def raft(self, i: int) -> str:
        """Member i's Raft address."""
        if self.pki is None:
            return "unix:" + self.path(i, "raft")
        return "ssl:127.0.0.1:%d" % self.ports[i - 1]

    def start(self, i: int) -> None:
        remote = ("--remote=punix:" + self.path(i, "sock")
                  if self.pki is None else
                  "--remote=pssl:%d:127.0.0.1" % self.ports[self.n + i - 1])
        log = open(self.path(i, "out"), "ab")
        try:
            self.procs[i] = subprocess.Popen(
                [self.server, "--no-chdir", "-vconsole:off",
                 "--log-file=" + self.path(i, "log"),
                 "--unixctl=" + self.path(i, "ctl"), remote]
                + self.ssl + [self.path(i, "db")], stdout=log, stderr=log)
        finally:
            log.close()

    def status(self, i: int) -> str:
        if i not in self.procs or self.procs[i].poll() is not None:
            return ""
        p = subprocess.run([self.appctl, "-t", self.path(i, "ctl"),
                            "cluster/status", "daqfabric"],
                           capture_output=True, text=True, timeout=10)
        return p.stdout

    def leader(self) -> int:
        for i in sorted(self.procs):
            if "Role: leader" in self.status(i):
                return i
        return 0

    def remote(self, i: int) -> str:
        if self.pki is None:
            return "unix:" + self.path(i, "sock")
        return "ssl:127.0.0.1:%d" % self.ports[self.n + i - 1]

    def remotes(self) -> str:
        """Every member, as clients are told."""
        return ",".join(self.remote(i) for i in range(1, self.n + 1))

    def kill(self, i: int) -> None:
        p = self.procs.pop(i)
        p.kill()
        p.wait(10)

    def stop(self) -> None:
        for i in list(self.procs):
            p = self.procs.pop(i)
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(name="cluster")
def one_member_cluster() -> Iterator[Cluster]:
    """Fixture "cluster": a clustered fabric database of one member,
    stopped after the test, for the test modules that import this."""
    c = Cluster(1)
    try:
        yield c
    finally:
        c.stop()


def example_cluster() -> Iterator[Cluster]:
    """A three-member cluster, and a stand-in report of every switch of
    utilities/fabric-map.example.yaml (for tests that run no agent: the
    planner uses a port only while a fresh report says it is up), stopped
    after (a fixture's body: 'yield from example_cluster()')."""
    c = Cluster(3)
    try:
        report_up(c.remotes(), map_ports(
            (ROOT / "utilities" / "fabric-map.example.yaml").read_text()))
        yield c
    finally:
        c.stop()
