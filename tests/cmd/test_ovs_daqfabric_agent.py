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

"""Tests of utilities/ovs-daqfabric-agent, the fabric's per-switch agent,
against a real 3-member clustered fabric database and real switches
(ovsdb-server and the ovs-daqring ovs-vswitchd of ovs/, dummy datapath
and ports: no DPDK, no hugepages, no root).

The fabric is utilities/fabric-map.example.yaml: the switches with agents
here are spine1, spine2 and ros-leaf1, whose slices are routes (the HLT
leaf's daqrings need DPDK).  Each test starts its own cluster, switches
and agents in short directories under /tmp and stops every daemon it
started.  Outcomes only; waits are bounded (60 s) and nothing asserts a
duration.

Run: /usr/bin/python3 -m pytest -q tests/cmd/test_ovs_daqfabric_agent.py
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import ovs.stream
import pytest

from ovs_daqring import hugepages
from ovs_daqring.daqctl.openflow import is_ours, parse_flow, parse_group
from ovs_daqring.daqctl.ovsdb import Ovsdb
from ovs_daqring.fabric.db import FabricDb
from ovs_daqring.process import RunError
from ovs_daqring.sandbox import Sandbox, dpdk_settings, tree_binaries

from fabric_helpers import (TWO_PLANES_FABRIC, Cluster, Pki, _tool,
                            map_ports, report_up, wait_for)

pytestmark = [pytest.mark.machine, pytest.mark.every_base]

ROOT = Path(__file__).resolve().parent.parent.parent
AGENT = ROOT / "utilities" / "ovs-daqfabric-agent"
DAQCTL = ROOT / "utilities" / "ovs-daqctl"
EXAMPLE = ROOT / "utilities" / "fabric-map.example.yaml"
OVS = ROOT / "ovs"
PYTHON = "/usr/bin/python3"
WAIT_S = 60
# dpdk-socket-mem of a switch that holds daqrings (tests/conftest.py
# reserves the hugepages when root).
DPDK_MB = 128
INTERVAL = "0.5"
# The fabric ports of the example's switches, and where each one's routes
# go: a spine's to the HLT leaf (down2), the ROS leaf's to the DCM's spine.
PORTS = {"spine1": ["down1", "down2"], "spine2": ["down1", "down2"],
         "ros-leaf1": ["h1", "h2", "up1", "up2"],
         "hlt-leaf1": ["h1", "up1", "up2"],
         # TWO_PLANES' HLT leaf of plane 1.
         "hlt-leaf2": ["h1", "up1"]}
UPLINK = {"spine1": "up1", "spine2": "up2"}
# A spine's detour bucket: tag, clear in_port, then output to another
# leaf (fabric.rst, "Detours"), as ovs-ofctl shows it.
BOUNCE_ACTIONS = ("mod_vlan_vid:4094,load:0->NXM_OF_IN_PORT[],",
                  "mod_vlan_vid:4094,set_field:0->in_port,")
# The example's links, both ways: (switch, port) -> (switch, port).
CABLES = {}
for _a, _b in ((("ros-leaf1", "up1"), ("spine1", "down1")),
               (("ros-leaf1", "up2"), ("spine2", "down1")),
               (("hlt-leaf1", "up1"), ("spine1", "down2")),
               (("hlt-leaf1", "up2"), ("spine2", "down2"))):
    CABLES[_a], CABLES[_b] = _b, _a


def env() -> Dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT / "python"))


def daqctl(*args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([PYTHON, str(DAQCTL)] + list(args),
                          capture_output=True, text=True, timeout=180,
                          env=env())


def write_map(d: str, name: str, n_dcms: int, hold_down: int = 30,
              bfd: str = "") -> str:
    """The example fabric with DCMs dcm0.. on hlt1 (port 10000 + k), its
    hold-down and, if given, its 'bfd'."""
    text = EXAMPLE.read_text().split("defaults:")[0]
    text = text.replace("  hold-down: 30", "%s  hold-down: %d" % (
        "  bfd: %s\n" % bfd if bfd else "", hold_down))
    text += "defaults:\n  rate: 190mbit\ndcms:\n"
    for k in range(n_dcms):
        text += ('  - {name: dcm%d, host: hlt1, tuples: ["*:*->10.1.0.1:%d"]}'
                 "\n" % (k, 10000 + k))
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write(text)
    return p


# ================================================================= the nodes
class Node:
    """A switch (dummy ovs-vswitchd) and its agent."""

    def __init__(self, base: str, name: str, cluster: Cluster) -> None:
        self.name = name
        self.cluster = cluster
        self.dir = os.path.join(base, name)
        os.makedirs(self.dir)
        self.sb = Sandbox(tree_binaries(str(OVS)), self.dir, label=name)
        self.agent: Optional["subprocess.Popen[bytes]"] = None
        self.ctl = os.path.join(self.dir, "agent.ctl")
        self.state = os.path.join(self.dir, "agent.json")
        self.log = os.path.join(self.dir, "agent.log")
        self.dpdk_prefix = ""

    def start_switch(self, cables: Optional[str] = None,
                     dpdk: bool = False) -> None:
        """With 'cables' (a directory), each link port is cabled to its
        peer's through a unix socket there (netdev-dummy's stream
        options: the spine's end listens): packets, BFD's too, cross
        it.  With 'dpdk', DPDK is initialised too (hugepages, one PMD
        thread on CPU 1), so that the switch can hold daqrings; its
        ports and datapath are still dummy ones."""
        # The dummy datapath: several switches in one network namespace
        # (a netdev datapath's internal port is a tap device of the
        # namespace).
        if dpdk:
            # DPDK memory is --in-memory, freed with the process; the
            # runtime directory of its file prefix is removed by stop().
            self.dpdk_prefix = "dqa%d-%s" % (os.getpid(), self.name)
            self.sb.start(dpdk_settings(
                "0x2", ["other_config:dpdk-socket-mem=%d" % DPDK_MB],
                "--no-pci --in-memory --file-prefix=" + self.dpdk_prefix,
                # An idle PMD thread sleeps (3.1: pmd-maxsleep, 3.5:
                # pmd-sleep-max): CPU 1 is shared.
                ["pmd-maxsleep=10000", "pmd-sleep-max=10000"]),
                vswitchd_args=["--enable-dummy", "--disable-system"])
        else:
            self.sb.start([], dummy=True, vswitchd_args=["--disable-system"])
        self.sb.vsctl("add-br", "br0", "--", "set", "Bridge", "br0",
                      "datapath_type=dummy", "fail_mode=secure")
        for p in PORTS[self.name]:
            self.sb.vsctl("add-port", "br0", p, "--", "set", "Interface", p,
                          "type=dummy", *self.cable(p, cables))

    def cable(self, port: str, cables: Optional[str]) -> List[str]:
        """The options that cable 'port' (nothing for a host port)."""
        peer = CABLES.get((self.name, port))
        if cables is None or peer is None:
            return []
        spine_end = (self.name, port) if self.name.startswith("spine") \
            else peer
        sock = os.path.join(cables, "%s.%s" % spine_end)
        if self.name.startswith("spine"):
            return ["options:pstream=punix:" + sock]
        return ["options:stream=unix:" + sock]

    def restart_vswitchd(self) -> None:
        """kill -9 ovs-vswitchd and start it again on the same database:
        its flows are gone, its ports come back from the database."""
        p = self.sb.vswitchd
        assert p is not None
        p.kill()
        p.wait(30)
        os.unlink(self.sb.ctl)
        self.sb.vswitchd = self.sb._spawn("ovs-vswitchd", [
            self.sb.bin.vswitchd, self.sb.db, "--unixctl=" + self.sb.ctl,
            "--log-file=" + os.path.join(self.dir, "ovs-vswitchd.log"),
            "-vconsole:off", "--enable-dummy", "--disable-system"], True)
        self.sb._wait_for(self.sb.ctl, self.sb.vswitchd, "ovs-vswitchd")

    def start_agent(self, planner: bool = True, interval: str = INTERVAL,
                    more: Sequence[str] = ()) -> None:
        assert self.agent is None or self.agent.poll() is not None
        out = open(os.path.join(self.dir, "agent.out"), "ab")
        try:
            self.agent = subprocess.Popen(
                [PYTHON, str(AGENT), "--node", self.name,
                 "--db", self.cluster.remotes(), "--ovsdb", self.sb.db,
                 "--bridge", "br0", "--interval", interval,
                 "--timeout", "20", "--state-file", self.state,
                 "--unixctl", self.ctl, "--log-file=" + self.log,
                 "--ofctl", str(OVS / "utilities" / "ovs-ofctl"),
                 "-vconsole:off", "--no-chdir"]
                + (["--planner"] if planner else []) + list(more)
                + (self.cluster.pki.options(self.name)
                   if self.cluster.pki is not None else []),
                stdout=out, stderr=out, env=env())
        finally:
            out.close()
        wait_for(lambda: os.path.exists(self.ctl)
                 or self.agent.poll() is not None, "the agent to start")
        assert self.agent.poll() is None, self.agent_out()

    def agent_out(self) -> str:
        text = ""
        for f in ("agent.out", "agent.log"):
            try:
                text += Path(self.dir, f).read_text()[-3000:]
            except OSError:
                pass
        return text

    def kill_agent(self) -> None:
        if self.agent is not None and self.agent.poll() is None:
            self.agent.send_signal(signal.SIGKILL)
            self.agent.wait(30)
        if os.path.exists(self.ctl):
            os.unlink(self.ctl)

    def exit_agent(self) -> None:
        """ovs-appctl exit: the agent ends by itself."""
        assert self.agent is not None
        subprocess.run([_tool("ovs-appctl"), "-t", self.ctl, "exit"],
                       check=True, capture_output=True, timeout=30)
        assert self.agent.wait(WAIT_S) == 0

    def agent_status(self) -> Dict[str, Any]:
        p = subprocess.run([_tool("ovs-appctl"), "-t", self.ctl, "status",
                            "--json"], capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    def routes_once_up(self) -> Optional[Dict[int, str]]:
        """routes(), or None while a restarted ovs-vswitchd has not opened
        its bridge's management socket yet (it answers on its unixctl
        socket first)."""
        try:
            return self.routes()
        except RunError:
            return None

    def routes(self) -> Dict[int, str]:
        """Our routes towards the DCMs on the switch: destination port ->
        output port (of a fast_failover group: its first bucket's, the
        primary)."""
        # The flows first: the agent's bundle adds a group before the
        # flows that use it (a group that has gone since: "?").
        actions = self.route_actions()
        groups = self.groups()
        return {dst: (groups.get(int(a[6:])) or ["?"])[0]
                if a.startswith("group:") else a
                for dst, a in actions.items()}

    def route_actions(self) -> Dict[int, str]:
        """Our routes towards the DCMs on the switch: destination port ->
        "output:PORT" or "group:ID"."""
        return {int(f["tp_dst"]): f["action"] for f in self.flows()
                if "tp_dst" in f}

    def ros_routes(self) -> Dict[str, str]:
        """Our routes towards the ROS hosts: address -> output port (of a
        group: the primary)."""
        groups = self.groups()
        return {f["nw_dst"]: groups[int(f["action"][6:])][0]
                if f["action"].startswith("group:") else f["action"]
                for f in self.flows()
                if "tp_dst" not in f and "nw_src" not in f}

    def flows(self) -> List[Dict[str, str]]:
        """Our flows on the switch but the detours' (detour_flows()):
        their match fields, "action": the port they go out of, or
        "group:ID", and "dl_dst": the destination MAC they set first (""
        for none)."""
        out = []
        for fields, actions, line in self._our_flows():
            if "dl_vlan" in fields:
                continue
            fields["dl_dst"] = ""
            if actions.startswith("mod_dl_dst:"):
                fields["dl_dst"], _, actions = actions[11:].partition(",")
            assert actions.startswith(("output:", "group:")), line
            fields["action"] = (actions[len("output:"):]
                                if actions.startswith("output:")
                                else actions)
            out.append(fields)
        return out

    def _our_flows(self) -> List[Tuple[Dict[str, str], str, str]]:
        """Our flows on the switch: (match fields, with "cookie" and
        "priority", actions, the line)."""
        out = []
        for line in self.sb.ofctl("--names", "--no-stats", "dump-flows",
                                  "br0").splitlines():
            f = parse_flow(line)
            if f is None or not is_ours(f.cookie):
                continue
            fields = f.fields()
            fields.update(cookie="%#x" % f.cookie, priority=str(f.priority))
            out.append((fields, f.actions, line.strip()))
        return out

    def detour_flows(self) -> Dict[Tuple[str, bool], str]:
        """A leaf's flows for what spines bounce to it (fabric.rst,
        "Detours"): (uplink, marked) -> actions."""
        out = {}
        for fields, actions, line in self._our_flows():
            if "dl_vlan" not in fields:
                continue
            assert fields["dl_vlan"] == "4094", line
            out[(fields["in_port"], "dl_src" in fields)] = actions
        return out

    def groups(self) -> Dict[int, List[str]]:
        """The switch's groups: id -> the ports of its buckets, in order,
        a detour's (a spine's bucket that bounces the packet to another
        leaf) as "bounce:PORT" (each bucket of a fast_failover group
        watches the port it outputs to: asserted here)."""
        out = {}
        for line in self.sb.ofctl("--names", "dump-groups",
                                  "br0").splitlines():
            g = parse_group(line)
            if g is None:
                continue
            gid, (kind, buckets) = g
            assert kind == "ff", line
            ports = []
            for w, a in buckets:
                if a == "output:" + w:
                    ports.append(w)
                else:
                    assert a in [b + "output:" + w
                                 for b in BOUNCE_ACTIONS], line
                    ports.append("bounce:" + w)
            out[gid] = ports
        return out

    def traced_output(self, dst_port: int) -> str:
        """The port a packet from ros1 to hlt1's 'dst_port' leaves
        through, as ofproto/trace says (the data plane's choice now): a
        fast_failover group translated to the datapath's failover action
        (patch 0028) lists its live buckets in order, and the datapath
        uses the first while its port is up."""
        text = self.sb.appctl(
            "ofproto/trace", "br0", "in_port=h1,tcp,nw_src=10.0.0.1,"
            "nw_dst=10.1.0.1,tp_src=5000,tp_dst=%d" % dst_port)
        outs = [ln.split("output:", 1)[1].split()[0].rstrip(",")
                for ln in text.splitlines()
                if ln.strip().startswith("output:")]
        if "Datapath actions: failover(" in text:
            assert len(outs) > 1, text
            outs = outs[:1]
        assert len(outs) == 1, text
        ofports = {str(v): k for k, v in self.ofports().items()}
        return ofports.get(outs[0], outs[0])

    def ofports(self) -> Dict[str, int]:
        return {name: int(row["ofport"]) for name, row
                in self.sb.interfaces("name,ofport").items()}

    def iface(self, port: str, column: str) -> Any:
        """A column of the port's Interface row, decoded (a map is a
        dict, an empty set a list)."""
        return self.sb.interfaces("name," + column)[port][column]

    def stop(self) -> None:
        self.kill_agent()
        try:
            self.sb.stop(fast=True)
        finally:
            if self.dpdk_prefix:
                shutil.rmtree(os.path.join(hugepages.DPDK_RUNDIR,
                                           self.dpdk_prefix),
                              ignore_errors=True)


class Fabric:
    def __init__(self, names: List[str], cabled: bool = False,
                 ssl: bool = False, dpdk: Sequence[str] = ()) -> None:
        """cabled: the switches' link ports are cabled to each other;
        ssl: the fabric database is reached over SSL only; dpdk: the
        switches that initialise DPDK (Node.start_switch())."""
        self.base = tempfile.mkdtemp(prefix="dqa.", dir="/tmp")
        self.cluster: Optional[Cluster] = None
        self.nodes: Dict[str, Node] = {}
        self.cables = os.path.join(self.base, "cables")
        os.mkdir(self.cables)
        try:
            self.pki = Pki(self.base) if ssl else None
            self.cluster = Cluster(3, self.pki)
            for n in names:
                node = Node(self.base, n, self.cluster)
                self.nodes[n] = node
                node.start_switch(self.cables if cabled else None,
                                  dpdk=n in dpdk)
            # The switches of the tests' maps that are not here: their
            # ports up in stand-in reports (the planner uses a port only
            # while a fresh report says it is up).
            ports = map_ports(EXAMPLE.read_text(), TWO_PLANES)
            _ssl(self.cluster)
            report_up(self.cluster.remotes(),
                      {sw: p for sw, p in ports.items() if sw not in names})
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for n in self.nodes.values():
            n.stop()
        if self.cluster is not None:
            self.cluster.stop()
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture
def fabric(request: Any) -> Iterator[Fabric]:
    names = getattr(request, "param", ["spine1", "spine2", "ros-leaf1"])
    f = Fabric(names)
    try:
        yield f
    finally:
        f.stop()


@pytest.fixture
def cabled() -> Iterator[Fabric]:
    """The whole example fabric, its switches cabled to each other."""
    f = Fabric(["spine1", "spine2", "ros-leaf1", "hlt-leaf1"], cabled=True)
    try:
        yield f
    finally:
        f.stop()


def _ssl(cluster: Cluster) -> None:
    """This process's SSL files for 'cluster', if it is over SSL."""
    if cluster.pki is not None:
        key, cert = cluster.pki.files("pytest")
        ovs.stream.Stream.ssl_set_private_key_file(key)
        ovs.stream.Stream.ssl_set_certificate_file(cert)
        ovs.stream.Stream.ssl_set_ca_cert_file(cluster.pki.ca)


def fabric_db(cluster: Cluster) -> Dict[str, Any]:
    """What the fabric database says: the Fabric row, assignments, the
    Node rows."""
    _ssl(cluster)
    db = FabricDb(cluster.remotes(), 30)
    try:
        fab = db.root()
        return {
            "generation": int(fab.generation) if fab else 0,
            "planner": fab.planner if fab else "",
            "epoch": int(fab.planner_epoch) if fab else 0,
            "assignments": {a.dcm: a.spine
                            for a in db.assignments().values()},
            "nodes": {n.name: {"generation": int(n.generation),
                               "links": dict(n.links),
                               "bfd": dict(n.bfd),
                               "error": n.error[0] if n.error else None,
                               "failed_generation":
                               n.failed_generation[0]
                               if n.failed_generation else None,
                               "agent": n.agent}
                      for n in db.rows("Node")}}
    finally:
        db.close()


def expected_routes(assignments: Dict[str, str], node: str) -> Dict[int, str]:
    """What the example's cabling says 'node' must forward: every spine
    each DCM to the HLT leaf (standing routes, whatever spine the DCM is
    assigned to), the ROS leaf each DCM to its spine."""
    out = {}
    for dcm, spine in assignments.items():
        port = 10000 + int(dcm[3:])
        if node in ("spine1", "spine2"):
            out[port] = "down2"
        elif node == "ros-leaf1":
            out[port] = UPLINK[spine]
    return out


def converged(f: Fabric, names: List[str]) -> bool:
    st = fabric_db(f.cluster)
    asg = st["assignments"]
    return bool(asg) and all(
        f.nodes[n].routes() == expected_routes(asg, n) for n in names)


# ===================================================================== tests
def test_agent_applies_its_slice_and_apply_wait_returns(
        fabric: Fabric, tmp_path: Path) -> None:
    for n in fabric.nodes.values():
        n.start_agent()
    m = write_map(str(tmp_path), "m4.yaml", 4)
    p = daqctl("fabric", "apply", m, "--wait", "--timeout", str(WAIT_S),
               "--db", fabric.cluster.remotes(), "-f", "json")
    assert p.returncode == 0, p.stdout + p.stderr
    rep = json.loads(p.stdout)["fabric"]
    assert rep["generation"] == 1
    assert sorted(rep["applied"]) == ["ros-leaf1", "spine1", "spine2"]
    assert rep["down"] == ["hlt-leaf1"] and rep["lagging"] == []
    # When every agent says generation 1, every switch holds its slice.
    st = fabric_db(fabric.cluster)
    asg = st["assignments"]
    assert sorted(asg) == ["dcm0", "dcm1", "dcm2", "dcm3"]
    assert sorted(set(asg.values())) == ["spine1", "spine2"]
    for name, node in fabric.nodes.items():
        want = expected_routes(asg, name)
        assert want and node.routes() == want, name
        assert st["nodes"][name]["generation"] == 1
        assert st["nodes"][name]["error"] is None
        assert st["nodes"][name]["links"] == {p: "up" for p in PORTS[name]}
        # The slice it applied, kept on the node.
        with open(node.state) as f:
            kept = json.load(f)
        # (A switch whose slice the plan left as it was, a spine with
        # standing routes, keeps the generation it first held it at.)
        assert kept["generation"] <= 1 and kept["node"] == name
        s = node.agent_status()
        assert s["applied_generation"] == 1 and s["error"] == "-"
    # One of them is the planner.
    assert st["planner"] in fabric.nodes and st["epoch"] >= 1
    # A link reported down: the planner moves the DCMs that crossed it,
    # and the ROS leaf's routes follow.
    on1 = sorted(d for d, s in asg.items() if s == "spine1")
    fabric.nodes["ros-leaf1"].sb.appctl("netdev-dummy/set-admin-state",
                                        "up1", "down")
    wait_for(lambda: fabric_db(fabric.cluster)["nodes"]["ros-leaf1"]
             ["links"].get("up1") == "down", "ros-leaf1 to report up1 down",
             WAIT_S)
    wait_for(lambda: all(s == "spine2" for s in fabric_db(fabric.cluster)
                         ["assignments"].values()),
             "the DCMs of spine1 to move to spine2", WAIT_S)
    wait_for(lambda: converged(fabric, list(fabric.nodes)),
             "the switches to follow the move", WAIT_S)
    routes = fabric.nodes["ros-leaf1"].routes()
    assert all(routes[10000 + int(d[3:])] == "up2" for d in on1)
    # spine1 still routes every DCM (standing routes): a ROS leaf's
    # group that falls back on it finds the routes there.
    assert fabric.nodes["spine1"].routes() == expected_routes(
        fabric_db(fabric.cluster)["assignments"], "spine1")
    # Towards the ROS hosts (the DCMs' requests and ACKs): each spine
    # down to the ROS leaf, the ROS leaf out of each host's port, moves
    # or not.
    for sp in ("spine1", "spine2"):
        assert fabric.nodes[sp].ros_routes() == {"10.0.0.1": "down1",
                                                 "10.0.0.2": "down1"}
    assert fabric.nodes["ros-leaf1"].ros_routes() == {"10.0.0.1": "h1",
                                                      "10.0.0.2": "h2"}
    # No ARP: the last hop, the ROS leaf, sets the ROS host's MAC (the
    # map's 'macs'); the other hops leave it.
    macs = {f["nw_dst"]: f["dl_dst"]
            for name, node in fabric.nodes.items() for f in node.flows()
            if f["dl_dst"] or name == "ros-leaf1" and "nw_dst" in f
            and "tp_dst" not in f}
    assert macs == {"10.0.0.1": "02:00:00:00:01:01",
                    "10.0.0.2": "02:00:00:00:01:02"}
    trace = fabric.nodes["ros-leaf1"].sb.appctl(
        "ofproto/trace", "br0", "in_port=up2,tcp,dl_dst=02:00:00:00:00:99,"
        "nw_src=10.1.0.1,nw_dst=10.0.0.2,tp_src=9001,tp_dst=5000")
    assert "Final flow: " in trace, trace
    final = trace.split("Final flow: ", 1)[1].splitlines()[0]
    assert "dl_dst=02:00:00:00:01:02" in final, trace


def test_agent_gives_the_rings_of_a_host_its_shared_egress(
        tmp_path: Path) -> None:
    """A fabric map's egress-max-rate (issues 27 and 28) reaches the HLT
    leaf's daqrings through the fabric database and the leaf's agent:
    the two DCMs of hlt1 are bound to its port h1 and share its rate, as
    the switch's status says."""
    if os.geteuid() != 0:
        pytest.skip("needs root (DPDK)")
    if (hugepages.free_mb() < DPDK_MB
            or not hugepages.hugetlbfs_mounted()):
        pytest.skip("needs %d MB of free huge pages and a hugetlbfs"
                    % DPDK_MB)
    m = write_map(str(tmp_path), "share.yaml", 2)
    text = Path(m).read_text().replace(
        "defaults:\n  rate: 190mbit\n",
        "defaults:\n  rate: 1gbit\n  steering: bound\n"
        "  egress-max-rate: 1gbit\n  egress-max-burst-bytes: 9000\n")
    assert "egress-max-rate" in text
    Path(m).write_text(text)
    f = Fabric(["hlt-leaf1", "spine1"], dpdk=["hlt-leaf1"])
    try:
        for n in f.nodes.values():
            n.start_agent()
        assert f.cluster is not None
        p = daqctl("fabric", "apply", m, "--wait", "--timeout", str(WAIT_S),
                   "--db", f.cluster.remotes(), "-f", "json")
        assert p.returncode == 0, p.stdout + p.stderr
        rep = json.loads(p.stdout)["fabric"]
        assert sorted(rep["applied"]) == ["hlt-leaf1", "spine1"], rep
        leaf = f.nodes["hlt-leaf1"]
        ifaces = leaf.sb.interfaces("name,options,status,error")
        for ring in ("dcm0", "dcm1"):
            i = ifaces[ring]
            assert i["error"] in (None, []), i
            assert (i["options"]["egress"], i["options"]["egress-max-rate"],
                    i["options"]["egress-max-burst-bytes"]) == (
                "h1", "1000000000", "9000"), i
        wait_for(lambda: all(
            leaf.sb.interfaces("name,status")[r]["status"].get(
                "egress_sharing_rings") == "2" for r in ("dcm0", "dcm1")),
            "the two rings to share h1", WAIT_S)
        st = leaf.sb.interfaces("name,status")["dcm0"]["status"]
        assert st["egress_max_rate"] == "1000000000", st
        # No ARP: the flows into hlt1's rings set its MAC (the map's
        # 'macs'), whatever the sender addressed the frame to.
        assert sorted((f["tp_dst"], f["dl_dst"], f["action"])
                      for f in leaf.flows() if "tp_dst" in f) == [
            ("10000", "02:00:00:00:02:01", "dcm0"),
            ("10001", "02:00:00:00:02:01", "dcm1")]
        trace = leaf.sb.appctl(
            "ofproto/trace", "br0", "in_port=up1,tcp,dl_dst=02:00:00:00:00:99,"
            "nw_src=10.0.0.1,nw_dst=10.1.0.1,tp_src=5000,tp_dst=10001")
        assert "set_field:02:00:00:00:02:01->eth_dst" in trace, trace
        assert "output:dcm1" in trace or "output:%d" % leaf.ofports()[
            "dcm1"] in trace, trace
    finally:
        f.stop()


# Two planes of a ROS leaf and one spine, the HLT host cabled to an HLT
# leaf in each: its DCMs' daqrings are on both (standby rings).  dcm0's
# ring is shaped to 4 kbit/s with a burst of 2 frames, so that it holds
# what it is sent for seconds (2 s a frame of 1000 bytes).
TWO_PLANES = TWO_PLANES_FABRIC + """\
defaults: {ring-size: 64, rate: 1gbit, steering: bound}
dcms:
  - {name: dcm0, host: hlt1, tuples: ["*:*->10.1.0.1:10000"],
     rate: 4kbit, max-burst-bytes: 3084}
  - {name: dcm1, host: hlt1, tuples: ["*:*->10.1.0.1:10001"]}
  - {name: dcm2, host: hlt1, tuples: ["*:*->10.1.0.1:10002"]}
  - {name: dcm3, host: hlt1, tuples: ["*:*->10.1.0.1:10003"]}
"""


def ring_counters(node: Node, ring: str) -> Dict[str, str]:
    """netdev-daqring/show's line of 'ring': column -> value (the rate,
    which may hold spaces, between the first nine and the last three)."""
    lines = node.sb.appctl("netdev-daqring/show", ring).splitlines()
    head = lines[0].split()
    row = next(ln.split() for ln in lines[1:] if ln.split()[:1] == [ring])
    out = dict(zip(head[:9], row[:9]))
    out.update(zip(head[-3:], row[-3:]))
    out["rate"] = " ".join(row[9:-3])
    return out


def tx_packets(node: Node, port: str) -> int:
    """What the switch sent out of 'port' (ovs-ofctl dump-ports: now,
    not the statistics column's last refresh)."""
    text = node.sb.ofctl("dump-ports", "br0", port)
    return int(text.split("tx pkts=", 1)[1].split(",", 1)[0])


def test_move_between_planes_changes_flows_only(tmp_path: Path) -> None:
    """Standby rings (issue 26): a DCM's daqring is on its host's leaf in
    both planes, bound to the host's port.  A link failure moves the
    DCMs of plane 0 to plane 1: the receiving leaf's database is not
    written (no port added, its configuration count unchanged), only its
    flows change (the moved DCMs' way back up to its spine); the old
    leaf keeps its rings, bound to the host's port, and what the moved
    DCM's ring there held when it moved still leaves it, through that
    port, none dropped."""
    if os.geteuid() != 0:
        pytest.skip("needs root (DPDK)")
    if (hugepages.free_mb() < 2 * DPDK_MB
            or not hugepages.hugetlbfs_mounted()):
        pytest.skip("needs %d MB of free huge pages and a hugetlbfs"
                    % (2 * DPDK_MB))
    m = tmp_path / "two-planes.yaml"
    m.write_text(TWO_PLANES)
    rings = ["dcm0", "dcm1", "dcm2", "dcm3"]
    f = Fabric(["hlt-leaf1", "hlt-leaf2"],
               dpdk=["hlt-leaf1", "hlt-leaf2"])
    try:
        for n in f.nodes.values():
            n.start_agent()
        assert f.cluster is not None
        p = daqctl("fabric", "apply", str(m), "--wait", "--timeout",
                   str(WAIT_S), "--db", f.cluster.remotes(), "-f", "json")
        assert p.returncode == 0, p.stdout + p.stderr
        rep = json.loads(p.stdout)["fabric"]
        assert sorted(rep["applied"]) == ["hlt-leaf1", "hlt-leaf2"], rep
        asg = fabric_db(f.cluster)["assignments"]
        assert asg == {"dcm0": "spine1", "dcm1": "spine3",
                       "dcm2": "spine1", "dcm3": "spine3"}, asg
        old, new = f.nodes["hlt-leaf1"], f.nodes["hlt-leaf2"]
        cols = "name,type,options,ofport,error"
        before = {}
        for leaf in (old, new):
            ifaces = leaf.sb.interfaces(cols)
            for r in rings:
                assert ifaces[r]["type"] == "daqring", ifaces[r]
                assert ifaces[r]["error"] in (None, []), ifaces[r]
                assert ifaces[r]["options"]["egress"] == "h1", ifaces[r]
                assert ring_counters(leaf, r)["egress"] == "h1"
            before[leaf.name] = ifaces
        # The receiving leaf at rest: once its slice is kept on the disk,
        # its agent sets flow-restore-wait ahead (a transaction of its
        # own, at the check after the first apply: SwitchHold.
        # restore_wait()); what counts is that the move writes nothing.
        wait_for(lambda: frw_keys(new) == ("true", new.name),
                 "flow-restore-wait set ahead on %s" % new.name, WAIT_S)
        new_cfg = new.sb.vsctl("get", "Open_vSwitch", ".", "next_cfg")
        # Standing routes: the way back of every DCM on each plane's
        # leaf, whatever plane it is assigned to.
        ways_back = sorted((fl for fl in new.flows() if "tp_src" in fl),
                           key=lambda fl: sorted(fl.items()))
        assert sorted(int(fl["tp_src"]) for fl in ways_back) == [
            10000, 10001, 10002, 10003]
        assert all(fl["action"] == "up1" for fl in ways_back)

        # Six frames towards dcm0 from the spine of plane 0: its ring
        # (4 kbit/s) holds four of them for about 8 s, the move takes
        # a fraction of a second (0.13 s on a quiet machine).
        frame = ("eth(src=50:54:00:00:00:01,dst=50:54:00:00:00:02),"
                 "eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.1.0.1,proto=6,"
                 "tos=0,ttl=64,frag=no),tcp(src=5000,dst=10000)")
        sent0 = tx_packets(old, "h1")
        old.sb.appctl("netdev-dummy/receive", "up1",
                      *([frame, "--len", "1000"] * 6))
        wait_for(lambda: ring_counters(old, "dcm0")["enqueued"] == "6",
                 "dcm0's ring on hlt-leaf1 to take the 6 frames", WAIT_S)

        # Plane 0's HLT leaf loses its uplink: dcm0 and dcm2 move to
        # plane 1.
        old.sb.appctl("netdev-dummy/set-admin-state", "up1", "down")
        wait_for(lambda: fabric_db(f.cluster)["assignments"] == {
            d: "spine3" for d in rings}, "dcm0 and dcm2 to move", WAIT_S)

        # The receiving leaf routed them already: the move changes none
        # of its flows.
        assert sorted((fl for fl in new.flows() if "tp_src" in fl),
                      key=lambda fl: sorted(fl.items())) == ways_back
        # What the moved ring held is still there (dcm0's ring does not
        # go: it lives on every plane).
        held = ring_counters(old, "dcm0")
        # The receiving leaf: no transaction, the same ports, ofports and
        # options; the old leaf: its rings, bound to h1 as before.
        assert new.sb.vsctl("get", "Open_vSwitch", ".",
                            "next_cfg") == new_cfg
        for leaf in (old, new):
            assert leaf.sb.interfaces(cols) == before[leaf.name], leaf.name
        assert ring_counters(old, "dcm0")["egress"] == "h1"
        assert int(held["occup"]) > 0, held
        # ... and leaves through the host's port of plane 0, none lost.
        wait_for(lambda: ring_counters(old, "dcm0")["dequeued"] == "6",
                 "dcm0's ring on hlt-leaf1 to send what it held",
                 3 * WAIT_S)
        c = ring_counters(old, "dcm0")
        assert (c["full-drops"], c["egr-drops"]) == ("0", "0"), c
        assert tx_packets(old, "h1") - sent0 == 6
    finally:
        f.stop()


@pytest.mark.default_base_in_ci
def test_unknown_node_leaves_its_switch_alone(fabric: Fabric,
                                              tmp_path: Path) -> None:
    node = fabric.nodes["spine1"]
    node.name = "spine9"            # not in the map
    node.start_agent(planner=False)
    m = write_map(str(tmp_path), "m4.yaml", 4)
    assert daqctl("fabric", "apply", m, "--db",
                  fabric.cluster.remotes()).returncode == 0
    wait_for(lambda: "no switch spine9 in the fabric" in (
        fabric_db(fabric.cluster)["nodes"].get("spine9", {}).get("error")
        or ""), "spine9 to report", WAIT_S)
    st = fabric_db(fabric.cluster)["nodes"]["spine9"]
    assert st["generation"] == 0
    assert node.routes() == {}
    assert not os.path.exists(node.state)


@pytest.mark.parametrize("fabric", [["hlt-leaf1", "spine1"]],
                         indirect=True)
def test_switch_that_refuses_its_slice_lags(fabric: Fabric) -> None:
    """The HLT leaf's daqrings need DPDK, which a dummy switch has not:
    its agent says why, keeps reporting its old generation, reports the
    generation it failed to apply, and 'apply --wait' returns on that
    report (not at its --timeout, a safety net here), naming it and
    why.  (The agents report every 2 s here: a node whose report is 3
    intervals old counts as down, and a loaded machine has held the
    refusing agent up for more than 3 x 0.5 s.)"""
    for n in fabric.nodes.values():
        n.start_agent(interval="2")
    p = daqctl("fabric", "apply", str(EXAMPLE), "--wait", "--timeout",
               str(WAIT_S), "--db", fabric.cluster.remotes(), "-f", "json")
    assert p.returncode == 1, p.stdout + p.stderr
    rep = json.loads(p.stdout)["fabric"]
    assert rep["lagging"] == ["hlt-leaf1"] and rep["applied"] == ["spine1"]
    # Ended by the refusal: no node that is up is still waited for.
    assert list(rep["refused"]) == ["hlt-leaf1"], rep
    assert "DPDK" in rep["refused"]["hlt-leaf1"], rep
    st = fabric_db(fabric.cluster)["nodes"]
    assert st["hlt-leaf1"]["generation"] == 0
    assert st["hlt-leaf1"]["failed_generation"] == 1
    assert "DPDK" in st["hlt-leaf1"]["error"], st["hlt-leaf1"]["error"]
    # Rolled back: no ring left behind, no flows.
    leaf = fabric.nodes["hlt-leaf1"]
    assert sorted(leaf.sb.interfaces()) == sorted(PORTS["hlt-leaf1"]
                                                  + ["br0"])
    assert leaf.routes() == {}
    assert st["spine1"]["generation"] == 1 and st["spine1"]["error"] is None
    assert st["spine1"]["failed_generation"] is None


@pytest.mark.parametrize("fabric", [["spine1"]], indirect=True)
def test_switch_that_failed_its_slice_applies_it_later(
        fabric: Fabric) -> None:
    """A spine whose bridge is missing fails its slice: 'apply --wait'
    names it at once, and why.  Its agent tries again every interval:
    once the bridge is there, it applies the generation it failed, and
    its failure is cleared."""
    node = fabric.nodes["spine1"]
    node.sb.vsctl("del-br", "br0")
    node.start_agent()
    p = daqctl("fabric", "apply", str(EXAMPLE), "--wait", "--timeout",
               str(WAIT_S), "--db", fabric.cluster.remotes(), "-f", "json")
    assert p.returncode == 1, p.stdout + p.stderr
    rep = json.loads(p.stdout)["fabric"]
    assert rep["lagging"] == ["spine1"], rep
    assert "no bridge br0" in rep["refused"]["spine1"], rep
    p = daqctl("fabric", "status", "--db", fabric.cluster.remotes())
    assert p.returncode == 0, p.stderr
    assert "generation 0, failed generation 1" in p.stdout, p.stdout
    assert "error: " in p.stdout and "no bridge br0" in p.stdout, p.stdout
    node.sb.vsctl("add-br", "br0", "--", "set", "Bridge", "br0",
                  "datapath_type=dummy", "fail_mode=secure")
    for port in PORTS["spine1"]:
        node.sb.vsctl("add-port", "br0", port, "--", "set", "Interface",
                      port, "type=dummy")
    wait_for(lambda: fabric_db(fabric.cluster)["nodes"]["spine1"][
        "generation"] == 1, "spine1 to apply generation 1", WAIT_S)
    st = fabric_db(fabric.cluster)["nodes"]["spine1"]
    assert st["failed_generation"] is None and st["error"] is None, st
    assert node.agent_status()["failed_generation"] == "-"


@pytest.mark.default_base_in_ci
def test_one_agent_down_others_unaffected_converges_on_restart(
        fabric: Fabric, tmp_path: Path) -> None:
    """An agent that stops: its switch keeps forwarding what it had,
    the other agents go on, and the planner, which no longer hears of
    that switch's ports, moves the DCMs off it (a port carries a path
    only while a fresh report says it is up); the agent back, its
    switch applies the generation it missed."""
    for n in fabric.nodes.values():
        n.start_agent()
    m4 = write_map(str(tmp_path), "m4.yaml", 4)
    assert daqctl("fabric", "apply", m4, "--wait", "--timeout",
                  str(WAIT_S), "--db",
                  fabric.cluster.remotes()).returncode == 0
    assert converged(fabric, list(fabric.nodes))
    down = fabric.nodes["spine2"]
    before = down.routes()
    down.kill_agent()
    wait_for(lambda: set(fabric_db(fabric.cluster)["assignments"].values())
             == {"spine1"}, "the DCMs of spine2, silent, to move", WAIT_S)
    m6 = write_map(str(tmp_path), "m6.yaml", 6)
    p = daqctl("fabric", "apply", m6, "--wait", "--timeout", str(WAIT_S),
               "--db", fabric.cluster.remotes(), "-f", "json")
    assert p.returncode == 0, p.stdout + p.stderr
    rep = json.loads(p.stdout)["fabric"]
    assert rep["generation"] == 2
    assert sorted(rep["applied"]) == ["ros-leaf1", "spine1"]
    assert "spine2" in rep["down"]
    asg = fabric_db(fabric.cluster)["assignments"]
    assert len(asg) == 6
    assert converged(fabric, ["spine1", "ros-leaf1"])
    # spine2's switch kept forwarding what it had.
    assert down.routes() == before
    assert expected_routes(asg, "spine2") != before
    down.start_agent()
    wait_for(lambda: fabric_db(fabric.cluster)["nodes"]["spine2"]
             ["generation"] == 2, "spine2 to apply generation 2", WAIT_S)
    assert converged(fabric, list(fabric.nodes))


def apply_four_dcms(fabric: Fabric, node: Node,
                    tmp_path: Path) -> Dict[int, str]:
    """Applies the example with 4 DCMs (--wait) to a fabric of the ROS
    leaf 'node' alone, and returns its routes once they are there:
    destination port -> uplink."""
    m4 = write_map(str(tmp_path), "m4.yaml", 4)
    p = daqctl("fabric", "apply", m4, "--wait", "--timeout",
               str(WAIT_S), "--db", fabric.cluster.remotes())
    assert p.returncode == 0, p.stdout + p.stderr
    asg = fabric_db(fabric.cluster)["assignments"]
    want = {10000 + int(d[3:]): UPLINK[s] for d, s in asg.items()}
    assert len(want) == 4 and node.routes() == want
    return want


@pytest.mark.parametrize("fabric", [["ros-leaf1"]], indirect=True)
def test_vswitchd_restart_while_cluster_down(
        fabric: Fabric, tmp_path: Path) -> None:
    node = fabric.nodes["ros-leaf1"]
    node.start_agent()
    want = apply_four_dcms(fabric, node, tmp_path)
    # The whole control plane goes.
    for i in list(fabric.cluster.procs):
        fabric.cluster.kill(i)
    # ovs-vswitchd restarts (its flows are gone): the running agent puts
    # its slice back.
    node.restart_vswitchd()
    wait_for(lambda: node.routes_once_up() == want, "the routes to be back",
             WAIT_S)
    assert node.agent_status()["fabric"].startswith(
        "not connected: the fabric database is unreachable")
    # And an agent that starts while the cluster is still down does so
    # from the slice kept on the node.
    node.exit_agent()
    node.restart_vswitchd()
    # (Its bridge's management socket opens after its unixctl socket.)
    wait_for(lambda: node.routes_once_up() is not None,
             "the restarted switch's bridge", WAIT_S)
    assert node.routes() == {}
    node.start_agent()
    wait_for(lambda: node.routes_once_up() == want, "the routes to be back",
             WAIT_S)
    assert "last applied slice of generation 1" in Path(node.log).read_text()


def frw_keys(node: Node) -> Tuple[Optional[str], Optional[str]]:
    """The switch's other_config:flow-restore-wait and the agent's owner
    key (None: unset)."""
    def get(column: str, key: str) -> Optional[str]:
        out = node.sb.vsctl("--if-exists", "get", "Open_vSwitch", ".",
                            "%s:%s" % (column, key)).strip()
        return out.strip('"') or None
    return (get("other_config", "flow-restore-wait"),
            get("external_ids", "daqfabric-flow-restore-wait"))


def link_check_key(node: Node) -> Optional[str]:
    """The switch's other_config:dpdk-link-check-interval (None: unset)."""
    return node.sb.vsctl("--if-exists", "get", "Open_vSwitch", ".",
                         "other_config:dpdk-link-check-interval"
                         ).strip().strip('"') or None


@pytest.mark.parametrize("fabric", [["ros-leaf1"]], indirect=True)
def test_bridge_made_secure_and_restart_waits_for_the_slice(
        fabric: Fabric, tmp_path: Path) -> None:
    """Issue 47 A4.  A fabric bridge left in standalone mode (NORMAL
    floods what no flow matches) is made secure.  Once the slice is in
    and kept on the disk, other_config:flow-restore-wait is set for the
    next start of ovs-vswitchd (the running one, which read it unset,
    keeps forwarding); an ovs-vswitchd that restarts then waits --
    seen by its controller socket, which it does not open while it
    waits although its management socket, configured in the same pass,
    is open -- until the agent has applied the slice and removed the
    key; then the key is set again.  A clean exit removes it.  The
    switch is told to read its link states every 10 ms
    (other_config:dpdk-link-check-interval, unless someone set it)."""
    node = fabric.nodes["ros-leaf1"]
    node.sb.vsctl("clear", "Bridge", "br0", "fail_mode")
    assert "actions=NORMAL" in node.sb.ofctl("dump-flows", "br0")
    node.start_agent()
    want = apply_four_dcms(fabric, node, tmp_path)
    assert node.sb.vsctl("get", "Bridge", "br0",
                         "fail_mode").strip() == "secure"
    assert "actions=NORMAL" not in node.sb.ofctl("dump-flows", "br0")
    assert ("bridge br0 was in fail_mode standalone (unset)"
            in Path(node.log).read_text())
    # The switch reads its DPDK ports' link states every 10 ms (the key
    # was not set); a value set by someone else stays theirs.
    assert link_check_key(node) == "10"
    assert ("other_config:dpdk-link-check-interval=10"
            in Path(node.log).read_text())
    node.sb.vsctl("set", "Open_vSwitch", ".",
                  "other_config:dpdk-link-check-interval=250")
    checks = sum(node.agent_status()["checks"].values())
    wait_for(lambda: sum(node.agent_status()["checks"].values())
             >= checks + 2, "two more checks", WAIT_S)
    assert link_check_key(node) == "250"
    wait_for(lambda: frw_keys(node) == ("true", "ros-leaf1"),
             "flow-restore-wait for the next start", WAIT_S)
    # (A passive controller's socket must be BRIDGE.* in OVS_RUNDIR.)
    ctl = os.path.join(node.dir, "br0.controller")
    node.sb.vsctl("set-controller", "br0", "punix:" + ctl)
    wait_for(lambda: os.path.exists(ctl),
             "the running switch to open its controller socket", WAIT_S)
    # The agent dies (its key stays), then ovs-vswitchd (its socket
    # file stays: removed).
    node.kill_agent()
    assert node.sb.vswitchd is not None
    node.sb.vswitchd.kill()
    node.sb.vswitchd.wait(30)
    os.unlink(ctl)
    node.restart_vswitchd()
    wait_for(lambda: node.routes_once_up() is not None,
             "the restarted switch's bridge", WAIT_S)
    assert not os.path.exists(ctl)
    assert node.routes() == {}
    node.start_agent()
    wait_for(lambda: node.routes_once_up() == want and os.path.exists(ctl),
             "the routes back, then the switch released", WAIT_S)
    wait_for(lambda: frw_keys(node) == ("true", "ros-leaf1"),
             "flow-restore-wait set again", WAIT_S)
    assert node.agent_status()["flow_restore_wait"] == (
        "set for the next start of ovs-vswitchd; released 1 times")
    assert "released from flow-restore-wait" in Path(node.log).read_text()
    node.exit_agent()
    assert frw_keys(node) == (None, None)


@pytest.mark.parametrize("fabric", [["ros-leaf1"]], indirect=True)
def test_agent_puts_right_what_others_change_on_its_switch(
        fabric: Fabric, tmp_path: Path) -> None:
    """Between its full checks (--full-check-every), the agent compares
    only the bridge's flow count and its daqrings: a flow deleted by hand
    is back at the next check, a flow modified in place (the same count)
    at the next full one."""
    node = fabric.nodes["ros-leaf1"]
    # First without full checks after the first one.
    node.start_agent(more=["--full-check-every", "100000"])
    want = apply_four_dcms(fabric, node, tmp_path)
    wait_for(lambda: node.agent_status()["checks"]["quick"] > 0,
             "a check between full ones")
    # A switch whose flows nobody changes: its flow monitor says so, and
    # the checks between full ones ask the switch nothing (three in a row
    # that did not count its flows).
    seen: List[Any] = []

    def quiet_checks() -> bool:
        c = node.agent_status()["checks"]
        seen.append((c["quick"], c["counted"]))
        return any(q - q0 >= 3 and n == n0 for q0, n0 in seen
                   for q, n in seen[-1:])
    wait_for(quiet_checks, "three quick checks without a flow count", WAIT_S)
    assert node.agent_status()["flow_monitor"].startswith("up")
    flow = next(f for f in node.flows() if f.get("tp_dst") == "10000")
    match = "tcp,nw_dst=%s,tp_dst=10000" % flow["nw_dst"]
    full = node.agent_status()["checks"]["full"]
    node.sb.ofctl("--strict", "del-flows", "br0",
                  "priority=%s,%s" % (flow["priority"], match))
    assert 10000 not in node.routes()
    wait_for(lambda: node.routes() == want, "the deleted route to be back",
             WAIT_S)
    # Put right by a full check that the flow count called for.
    assert node.agent_status()["checks"]["full"] == full + 1
    # Then one full check in 3.
    node.exit_agent()
    node.start_agent(more=["--full-check-every", "3"])
    wait_for(lambda: node.agent_status()["checks"]["quick"] > 0,
             "a check between full ones")
    other = "up2" if want[10000] == "up1" else "up1"
    node.sb.ofctl("--strict", "mod-flows", "br0",
                  "cookie=%s/-1,priority=%s,%s,actions=output:%s"
                  % (flow["cookie"], flow["priority"], match, other))
    assert node.routes()[10000] == other
    full = node.agent_status()["checks"]["full"]
    wait_for(lambda: node.routes() == want, "the modified route to be put "
             "right", WAIT_S)
    assert node.agent_status()["checks"]["full"] > full


@pytest.mark.parametrize("fabric", [["ros-leaf1"]], indirect=True)
def test_switch_configuration_count(fabric: Fabric) -> None:
    """Ovsdb.config_seqno, which the agent's checks between full ones
    compare, counts configuration changes, not the columns that
    ovs-vswitchd rewrites by itself (statistics, link_state,
    bfd_status)."""
    node = fabric.nodes["ros-leaf1"]
    db = Ovsdb(node.sb.db, 20)
    try:
        def iface(name: str) -> Any:
            return next(i for i in db.idl.tables["Interface"].rows.values()
                        if i.name == name)

        def seen(name: str, column: str, key: str) -> bool:
            db.idl.run()
            return key in getattr(iface(name), column)

        n = db.config_seqno
        node.sb.vsctl("set", "Interface", "h1", "statistics:pytest=1")
        wait_for(lambda: seen("h1", "statistics", "pytest"),
                 "the statistics change")
        assert db.config_seqno == n
        node.sb.vsctl("set", "Interface", "h1", "external_ids:pytest=1")
        wait_for(lambda: seen("h1", "external_ids", "pytest"),
                 "the external_ids change")
        assert db.config_seqno > n
        n = db.config_seqno
        node.sb.vsctl("add-port", "br0", "pytest0", "--", "set",
                      "Interface", "pytest0", "type=dummy")
        wait_for(lambda: (db.idl.run() or True) and any(
            i.name == "pytest0"
            for i in db.idl.tables["Interface"].rows.values()),
            "the new port")
        assert db.config_seqno > n
    finally:
        db.close()


@pytest.mark.default_base_in_ci
@pytest.mark.parametrize("fabric", [["ros-leaf1"]], indirect=True)
def test_agent_says_when_the_database_is_unreachable(
        fabric: Fabric, tmp_path: Path) -> None:
    """Every member down: the agent's status says that the fabric
    database is unreachable, for its own connection and its planner's
    (which gives up its epoch: its lock went with the connection); the
    members back, both connect again and the planner takes over again."""
    node = fabric.nodes["ros-leaf1"]
    node.start_agent()
    m4 = write_map(str(tmp_path), "m4.yaml", 4)
    p = daqctl("fabric", "apply", m4, "--wait", "--timeout",
               str(WAIT_S), "--db", fabric.cluster.remotes())
    assert p.returncode == 0, p.stdout + p.stderr
    wait_for(lambda: node.agent_status().get("planner") == "epoch 1",
             "the agent's planner to take over", WAIT_S)
    assert node.agent_status()["fabric"].startswith("connected to ")
    for i in list(fabric.cluster.procs):
        fabric.cluster.kill(i)
    gone = "not connected: the fabric database is unreachable"

    def says_gone() -> bool:
        s = node.agent_status()
        return (s["fabric"].startswith(gone)
                and s["planner"].startswith(gone))
    wait_for(says_gone, "the agent to say the database is unreachable",
             WAIT_S)
    for i in range(1, 4):
        fabric.cluster.start(i)
    wait_for(fabric.cluster.leader, "a leader again", WAIT_S)

    last: List[Dict[str, Any]] = []

    def back() -> bool:
        s = node.agent_status()
        last[:] = [s]
        return (s["fabric"].startswith("connected to ")
                and s["planner"].startswith("epoch ")
                and int(s["planner"].split()[1]) >= 2)
    try:
        wait_for(back, "the agent and its planner to be back", WAIT_S)
    except AssertionError as e:
        raise AssertionError("%s: %s\n%s" % (e, last, node.agent_out()))
    # Its reports go on, without an error.
    wait_for(lambda: fabric_db(fabric.cluster)["nodes"]["ros-leaf1"]
             ["error"] is None, "a report without an error", WAIT_S)
    assert "fabric database: connected to" in Path(node.log).read_text()


@pytest.mark.default_base_in_ci
def test_planner_agent_killed_another_takes_over(
        fabric: Fabric, tmp_path: Path) -> None:
    """The planner's agent (a spine's: the ROS leaf's agent is no
    candidate, its ports carry every path) is killed: the other takes
    over, moves the DCMs off the spine whose agent is gone, and plans
    the next generation."""
    for name, n in fabric.nodes.items():
        n.start_agent(planner=name != "ros-leaf1")
    m4 = write_map(str(tmp_path), "m4.yaml", 4)
    assert daqctl("fabric", "apply", m4, "--wait", "--timeout",
                  str(WAIT_S), "--db",
                  fabric.cluster.remotes()).returncode == 0
    st = fabric_db(fabric.cluster)
    first, epoch = st["planner"], st["epoch"]
    assert first in ("spine1", "spine2") and epoch >= 1
    fabric.nodes[first].kill_agent()
    wait_for(lambda: fabric_db(fabric.cluster)["epoch"] > epoch,
             "another agent to take over", WAIT_S)
    st = fabric_db(fabric.cluster)
    assert st["planner"] in fabric.nodes and st["planner"] != first
    wait_for(lambda: first not in fabric_db(fabric.cluster)[
        "assignments"].values(), "the DCMs of %s to move" % first, WAIT_S)
    # The new planner plans the next generation, the others apply it.
    m6 = write_map(str(tmp_path), "m6.yaml", 6)
    p = daqctl("fabric", "apply", m6, "--wait", "--timeout", str(WAIT_S),
               "--db", fabric.cluster.remotes(), "-f", "json")
    assert p.returncode == 0, p.stdout + p.stderr
    alive = [n for n in fabric.nodes if n != first]
    assert sorted(json.loads(p.stdout)["fabric"]["applied"]) == sorted(alive)
    assert len(fabric_db(fabric.cluster)["assignments"]) == 6
    wait_for(lambda: converged(fabric, alive), "the switches to follow",
             WAIT_S)


@pytest.mark.default_base_in_ci
def test_daemon_options_and_bad_arguments(tmp_path: Path) -> None:
    d = tempfile.mkdtemp(prefix="dqa.", dir="/tmp")
    pidfile = os.path.join(d, "agent.pid")
    ctl = os.path.join(d, "agent.ctl")
    appctl = _tool("ovs-appctl")
    try:
        # Bad arguments: a clear error, exit status 2, no daemon.
        for bad, msg in ((["--interval", "0"], "--interval"),
                         (["--link-check-interval", "5001"],
                          "--link-check-interval: 5001 is not between"),
                         (["--link-check-interval", "-1"],
                          "--link-check-interval: -1 is not between"),
                         (["--db", "nosuch:x"], "not an OVSDB remote"),
                         (["--state-file", "/nonexistent/x.json"],
                          "does not exist")):
            p = subprocess.run([PYTHON, str(AGENT), "--node", "n1"] + bad,
                               capture_output=True, text=True, timeout=60,
                               env=env())
            assert p.returncode == 2 and msg in p.stderr, p.stderr
        # A daemon in the background, whose fabric database is nowhere:
        # it runs anyway, and says so.
        p = subprocess.run(
            [PYTHON, str(AGENT), "--node", "n1", "--db",
             "unix:%s/none.sock" % d, "--ovsdb", "unix:%s/db.sock" % d,
             "--state-file", os.path.join(d, "n1.json"), "--detach",
             "--no-chdir", "--pidfile=" + pidfile, "--unixctl=" + ctl,
             "--log-file=" + os.path.join(d, "agent.log"),
             "-vconsole:off"], capture_output=True, text=True,
            timeout=60, env=env())
        assert p.returncode == 0, p.stderr
        pid = int(Path(pidfile).read_text())
        os.kill(pid, 0)
        s = subprocess.run([appctl, "-t", ctl, "status"],
                           capture_output=True, text=True, timeout=30)
        assert s.returncode == 0, s.stderr
        assert "node: n1" in s.stdout and "fabric: not connected" in s.stdout
        s = subprocess.run([appctl, "-t", ctl, "status", "--bad"],
                           capture_output=True, text=True, timeout=30)
        assert s.returncode != 0 and "usage" in s.stderr
        subprocess.run([appctl, "-t", ctl, "exit"], check=True,
                       capture_output=True, timeout=30)
        wait_for(lambda: not os.path.exists("/proc/%d" % pid)
                 or "zombie" in Path("/proc/%d/status" % pid).read_text()
                 .lower(), "the agent to exit", WAIT_S)
        assert not os.path.exists(pidfile)
    finally:
        if os.path.exists(pidfile):
            try:
                os.kill(int(Path(pidfile).read_text()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        shutil.rmtree(d, ignore_errors=True)


def trace_all(node: Node, dcms: List[str]) -> Dict[str, str]:
    """The port each DCM's packets leave 'node' through now."""
    return {d: node.traced_output(10000 + int(d[3:])) for d in dcms}


def test_failover_groups_switch_without_the_control_plane(
        fabric: Fabric, tmp_path: Path) -> None:
    """The ROS leaf routes each DCM through a fast_failover group: its
    spine's uplink, then the other spine's.  With every agent gone, a
    link down makes the data plane take the backup at once, and the
    primary again when it is back."""
    for n in fabric.nodes.values():
        n.start_agent()
    m4 = write_map(str(tmp_path), "m4.yaml", 4)
    p = daqctl("fabric", "apply", m4, "--wait", "--timeout", str(WAIT_S),
               "--db", fabric.cluster.remotes())
    assert p.returncode == 0, p.stdout + p.stderr
    asg = fabric_db(fabric.cluster)["assignments"]
    assert sorted(set(asg.values())) == ["spine1", "spine2"]
    assert converged(fabric, list(fabric.nodes))
    leaf = fabric.nodes["ros-leaf1"]
    # One group per order of the uplinks, shared by the DCMs with it.
    groups = leaf.groups()
    assert sorted(groups.values()) == [["up1", "up2"], ["up2", "up1"]]
    for dcm, spine in asg.items():
        a = leaf.route_actions()[10000 + int(dcm[3:])]
        assert a.startswith("group:"), a
        assert groups[int(a[6:])] == [UPLINK[spine]] + [
            p for p in ("up1", "up2") if p != UPLINK[spine]]
    # A spine has one link to the HLT leaf: its routes down to it share
    # a group, that link and then a detour through the ROS leaf, the
    # other leaf with uplinks to another spine (fabric.rst, "Detours").
    for sp in ("spine1", "spine2"):
        sg = fabric.nodes[sp].groups()
        acts = fabric.nodes[sp].route_actions()
        assert sorted(acts) == sorted(10000 + int(d[3:]) for d in asg)
        assert len(set(acts.values())) == 1, acts
        a = next(iter(acts.values()))
        assert a.startswith("group:"), a
        assert sg[int(a[6:])] == ["down2", "bounce:down1"], sg
    # The ROS leaf sends up over the other spine what a spine bounced to
    # it, from either uplink, and drops what was bounced twice.
    assert sorted(leaf.detour_flows()) == [
        ("up1", False), ("up1", True), ("up2", False), ("up2", True)]
    assert all(a == "drop" for (_, marked), a
               in leaf.detour_flows().items() if marked)
    # Nothing of the control plane runs any more.
    for n in fabric.nodes.values():
        n.exit_agent()
    flows = leaf.route_actions()
    want = {d: UPLINK[s] for d, s in asg.items()}
    assert trace_all(leaf, list(asg)) == want
    # (ovs-vswitchd sees a port's new state in its next round.)
    leaf.sb.appctl("netdev-dummy/set-admin-state", "up1", "down")
    wait_for(lambda: trace_all(leaf, list(asg)) == {d: "up2" for d in asg},
             "the groups to take up2", WAIT_S)
    leaf.sb.appctl("netdev-dummy/set-admin-state", "up1", "up")
    wait_for(lambda: trace_all(leaf, list(asg)) == want,
             "the groups to take the primary again", WAIT_S)
    # Both uplinks down: no bucket is live, nothing goes out.
    for up in ("up1", "up2"):
        leaf.sb.appctl("netdev-dummy/set-admin-state", up, "down")
    wait_for(lambda: "Datapath actions: drop" in leaf.sb.appctl(
        "ofproto/trace", "br0", "in_port=h1,tcp,nw_dst=10.1.0.1,"
        "tp_dst=10000"), "no live bucket to drop", WAIT_S)
    # The data plane did it all: the flows are those of before.
    assert leaf.route_actions() == flows


# Slow enough that a switch's main loop held up on this loaded machine
# does not make a session flap (detection after 2.5 s).
BFD = "{min-rx: 500, min-tx: 500, mult: 5}"
LINK_PORTS = {"spine1": ["down1", "down2"], "spine2": ["down1", "down2"],
              "ros-leaf1": ["up1", "up2"], "hlt-leaf1": ["up1", "up2"]}


def bfd_up(f: Fabric) -> bool:
    """The spines and the ROS leaf report a BFD session up on each of
    their link ports (the HLT leaf's slice fails: its sessions are the
    spines' down2 ones)."""
    nodes = fabric_db(f.cluster)["nodes"]
    return all(nodes.get(n, {}).get("bfd") == {p: "up" for p in ports}
               for n, ports in LINK_PORTS.items() if n != "hlt-leaf1")


def test_bfd_detects_a_silent_link_failure(cabled: Fabric,
                                           tmp_path: Path) -> None:
    """The agents run BFD on the links of the map; a link that stops
    passing packets while its carrier stays up (DPDK's af_packet never
    reports a link down) is taken out by its fast_failover groups, and
    the planner moves the DCMs that crossed it; they go home after the
    hold-down once the link is back."""
    f = cabled
    # The HLT leaf's agent cannot make its daqrings (no DPDK here): it
    # says so and still runs BFD on its links.
    for name, n in f.nodes.items():
        n.start_agent(planner=False)
    m = write_map(str(tmp_path), "m4.yaml", 4, hold_down=1, bfd=BFD)
    p = daqctl("fabric", "apply", m, "--db", f.cluster.remotes())
    assert p.returncode == 0, p.stdout + p.stderr
    wait_for(lambda: bfd_up(f), "BFD up on every link", WAIT_S)
    want = {"enable": "true", "min_rx": "500", "min_tx": "500",
            "mult": "5"}
    for name, n in f.nodes.items():
        for port in PORTS[name]:
            bfd = n.iface(port, "bfd")
            assert bfd == (want if port in LINK_PORTS[name] else {}), (
                name, port, bfd)
    wait_for(lambda: f.nodes["ros-leaf1"].agent_status()["bfd"]
             == {"up1": "up", "up2": "up"}, "the agent's status", WAIT_S)
    # From now on a planner watches (the agent of spine2): with every
    # link up, the DCMs over both spines.  (The apply planned with the
    # links whose BFD sessions were up then; a DCM whose own path was not
    # takes it after the hold-down, 1 s here.)
    f.nodes["spine2"].exit_agent()
    f.nodes["spine2"].start_agent(planner=True)
    wait_for(lambda: sorted(set(fabric_db(f.cluster)["assignments"]
                                .values())) == ["spine1", "spine2"],
             "a plan over both spines", WAIT_S)
    asg = fabric_db(f.cluster)["assignments"]
    routed = ["spine1", "spine2", "ros-leaf1"]
    wait_for(lambda: converged(f, routed), "the routes", WAIT_S)
    leaf = f.nodes["ros-leaf1"]
    on1 = sorted(d for d, s in asg.items() if s == "spine1")
    assert trace_all(leaf, on1) == {d: "up1" for d in on1}
    # The cable of ros-leaf1:up1 goes silent; its carrier stays up.
    leaf.sb.vsctl("remove", "Interface", "up1", "options", "stream")
    wait_for(lambda: leaf.iface("up1", "bfd_status").get("forwarding")
             == "false", "BFD to see up1 fail", WAIT_S)
    assert leaf.iface("up1", "link_state") == "up"
    # The data plane takes spine2's uplink (the planner moves the DCMs
    # there too).
    wait_for(lambda: trace_all(leaf, on1) == {d: "up2" for d in on1},
             "the groups to take up2", WAIT_S)
    wait_for(lambda: fabric_db(f.cluster)["nodes"]["ros-leaf1"]["links"]
             .get("up1") == "down", "ros-leaf1 to report up1 down", WAIT_S)
    wait_for(lambda: set(fabric_db(f.cluster)["assignments"].values())
             == {"spine2"}, "the DCMs of spine1 to move", WAIT_S)
    # 'fabric status -v' says where each moved DCM belongs.
    p = daqctl("fabric", "status", "-v", "--db", f.cluster.remotes())
    assert p.returncode == 0, p.stdout + p.stderr
    for d in on1:
        assert re.search(r"\b%s on \S+: plane 0 spine spine2 \(moved from "
                         r"its home, plane 0 spine spine1: " % d, p.stdout), \
            p.stdout
    wait_for(lambda: converged(f, routed), "the switches to follow",
             WAIT_S)
    assert f.nodes["spine1"].routes() == f.nodes["spine2"].routes()
    assert all(p == "up2" for p in leaf.routes().values())
    # The cable is back: BFD up again, and after the hold-down (1 s) the
    # DCMs go home.
    leaf.sb.vsctl("set", "Interface", "up1", "options:stream=unix:"
                  + os.path.join(f.cables, "spine1.down1"))
    wait_for(lambda: bfd_up(f), "BFD up again", WAIT_S)
    wait_for(lambda: fabric_db(f.cluster)["assignments"] == asg,
             "the DCMs to go home", WAIT_S)
    wait_for(lambda: converged(f, routed), "the switches to follow",
             WAIT_S)
    assert trace_all(leaf, on1) == {d: "up1" for d in on1}


@pytest.fixture
def ssl_fabric() -> Iterator[Fabric]:
    f = Fabric(["spine1", "spine2", "ros-leaf1"], ssl=True)
    try:
        yield f
    finally:
        f.stop()


@pytest.mark.default_base_in_ci
def test_fabric_database_over_ssl(ssl_fabric: Fabric,
                                  tmp_path: Path) -> None:
    """The fabric database over ssl: only (Raft between its members too),
    with certificates from ovs-pki: the agents and ovs-daqctl connect with
    --private-key, --certificate and --ca-cert; without them, or with a
    certificate of another CA, they do not."""
    f = ssl_fabric
    assert f.pki is not None and f.cluster is not None
    remotes = f.cluster.remotes()
    assert remotes.count("ssl:127.0.0.1:") == 3
    for i in range(1, 4):
        st = f.cluster.status(i)
        assert "Address: ssl:127.0.0.1:" in st, st
        assert st.count("ssl:127.0.0.1:") >= 3, st
    for n in f.nodes.values():
        n.start_agent()
    m4 = write_map(str(tmp_path), "m4.yaml", 4)
    # No SSL files: refused at once, with the reason.
    p = daqctl("fabric", "apply", m4, "--db", remotes)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "ssl: remotes need --private-key, --certificate and --ca-cert" \
        in p.stderr, p.stderr
    p = daqctl("fabric", "apply", m4, "--wait", "--timeout", str(WAIT_S),
               "-f", "json", "--db", remotes, *f.pki.options("admin"))
    assert p.returncode == 0, p.stdout + p.stderr
    rep = json.loads(p.stdout)["fabric"]
    assert rep["generation"] == 1
    assert sorted(rep["applied"]) == sorted(f.nodes)
    assert converged(f, list(f.nodes))
    p = daqctl("fabric", "status", "--json", "--db", remotes,
               *f.pki.options("admin"))
    assert p.returncode == 0, p.stdout + p.stderr
    st = json.loads(p.stdout)["fabric"]
    assert st["generation"] == 1 and len(st["dcms"]) == 4
    assert all(n["up"] for n in st["nodes"] if n["switch"] in f.nodes)
    for n in f.nodes.values():
        assert n.agent_status()["fabric"].startswith("connected to ssl:")
    # A certificate that another CA signed: the servers refuse it.
    other = Pki(str(tmp_path))
    key, cert = other.files("intruder")
    p = daqctl("fabric", "status", "--db", remotes, "--timeout", "5",
               "--private-key", key, "--certificate", cert, "--ca-cert",
               f.pki.ca)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "timed out" in p.stderr, p.stderr


def test_holds_compares_the_rings_again_after_a_change() -> None:
    """Reconciler.holds() plans (compares the daqrings with the IDL's)
    again only when the configuration count or the DCMs changed, and
    always compares the flow count."""
    from types import SimpleNamespace
    from ovs_daqring.daqctl.reconcile import Reconciler
    rec = Reconciler.__new__(Reconciler)
    planned: List[Any] = []
    empty = [True]
    rec.db = SimpleNamespace(config_seqno=1)
    rec.of = SimpleNamespace(flow_count=lambda: 7)
    rec.held_config = None
    rec.plan = lambda dcms: (planned.append(dcms)
                             or SimpleNamespace(empty=lambda: empty[0]))
    assert rec.holds(["a"], 7) and planned == [["a"]]
    assert rec.holds(["a"], 7) and planned == [["a"]]
    assert not rec.holds(["a"], 8)              # the flows changed
    rec.db.config_seqno = 2                     # the configuration did
    empty[0] = False
    assert not rec.holds(["a"], 7) and len(planned) == 2
    assert not rec.holds(["a"], 7) and len(planned) == 3
    empty[0] = True
    assert rec.holds(["b"], 7) and planned[-1] == ["b"]
    assert rec.holds(["b"], 7) and len(planned) == 4
