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

"""The fabric database's rows are input (issue 47, item 13): every row
is checked as the map reader checks a map (fabric/rows.py) before it
becomes the model, a bad one is left out of FabricDb.state() with an
error naming its row and field (logged once, reported in the agent's
Node row), and nothing raises out of state(), narrow(), the planner or
the slices.  An agent whose own row is bad keeps what its node holds.
The map reader refuses what the agents would leave out.

Pure: the rows are fakes, as OVS's IDL gives them, in a fake IDL.

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_rows.py
"""

import textwrap
import uuid
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List, Optional

import pytest

from ovs_daqring.cmd import ovs_daqfabric_agent as agent_cmd
from ovs_daqring.daqctl.model import MapError
from ovs_daqring.fabric import agent as fa
from ovs_daqring.fabric import db as fdb
from ovs_daqring.fabric.db import FabricDb
from ovs_daqring.fabric.fabmap import FabricMapReader
from ovs_daqring.fabric.hostagent import HostAgent
from ovs_daqring.fabric.model import Assignment, FabricState
from ovs_daqring.fabric.planner import plan
from ovs_daqring.fabric.rows import dcm_columns, optional
from ovs_daqring.fabric.slice import slices

MAP = """\
fabric:
  hold-down: 10
  bfd: {min-rx: 500, min-tx: 500, mult: 5}
  switches:
    - {name: rl0, role: leaf, plane: 0, db: "unix:/run/rl0/db.sock"}
    - {name: hl0, role: leaf, plane: 0, dpdk: true, bridge: br1,
       db: "unix:/run/hl0/db.sock", of: "tcp:192.0.2.1:6653"}
    - {name: sp0, role: spine, plane: 0}
    - {name: sp1, role: spine, plane: 0}
  links:
    - {a: "rl0:u0", b: "sp0:rl0"}
    - {a: "rl0:u1", b: "sp1:rl0"}
    - {a: "hl0:u0", b: "sp0:hl0"}
    - {a: "hl0:u1", b: "sp1:hl0"}
  hosts:
    - {name: ros0, role: ros, ip: 10.0.2.0/24, ports: {0: "rl0:h0"},
       macs: {0: "02:00:00:00:01:01"}}
    - {name: ros1, role: ros, ip: 10.0.3.1, ports: {0: "rl0:h1"}}
    - {name: hlt0, role: hlt, ip: 10.1.0.1, ports: {0: "hl0:h0"},
       macs: {0: "02:00:00:00:02:01"}}
    - {name: hlt1, role: hlt, ip: 10.1.1.1, ports: {0: "hl0:h1"}}
defaults: {ring-size: 1024, rate: 190mbit}
dcms:
  - {name: d0, host: hlt0, ip: 10.1.0.10}
  - {name: d1, host: hlt0, tuples: ["tcp:*:*->10.1.0.1:9001"],
     max-burst-bytes: 9000}
  - {name: d2, host: hlt1, ip: 10.1.1.10, ring: r2, numa-id: 0, ofport: 7,
     steering: bound, egress-max-rate: 1gbit}
  - {name: d3, host: hlt1, tuples: ["udp:10.0.2.5:*->10.1.1.1:9002"],
     steering: bound, egress-max-rate: 1gbit, flow-buckets: 0}
"""

TABLES = ("Fabric", "Switch", "Link", "Host", "DCM", "Assignment", "Node")


def parse(text: str = MAP) -> FabricState:
    return FabricMapReader("m.yaml").parse(textwrap.dedent(text))


def row(**cols: Any) -> Any:
    return SimpleNamespace(uuid=uuid.uuid4(), **cols)


def rows_of(st: FabricState, asg: Dict[str, Assignment]
            ) -> Dict[str, Dict[Any, Any]]:
    """The rows a 'fabric apply' of 'st' and a plan 'asg' write, as the
    IDL gives them (FabricDb.apply()'s columns)."""
    def by_uuid(items: Any) -> Dict[Any, Any]:
        return {r.uuid: r for r in items}

    return {
        "Fabric": by_uuid([row(generation=1, planned_generation=1,
                               planner="", hold_down=st.hold_down,
                               bfd=dict(st.bfd))]),
        "Switch": by_uuid(row(name=s.name, role=s.role, plane=s.plane,
                              pod=s.pod, dpdk=s.dpdk, db=optional(s.db),
                              bridge=s.bridge, of=optional(s.of))
                          for s in st.switches),
        "Link": by_uuid(row(name=lk.name, a_switch=lk.a_switch,
                            a_port=lk.a_port, b_switch=lk.b_switch,
                            b_port=lk.b_port) for lk in st.links),
        "Host": by_uuid(row(name=h.name, role=h.role, ip=optional(h.ip),
                            pod=h.pod,
                            attachments={p: "%s:%s" % (leaf, port)
                                         for p, leaf, port in h.attachments},
                            macs=dict(h.macs)) for h in st.hosts),
        "DCM": by_uuid(row(name=d.name, **dcm_columns(d)) for d in st.dcms),
        "Assignment": by_uuid(row(dcm=a.dcm, plane=a.plane, spine=a.spine,
                                  epoch=1, generation=1, home_plane=[],
                                  home_spine=[], moved_at=a.moved_at,
                                  reason=a.reason) for a in asg.values()),
        "Node": {}}


class FakeIdl:
    """What FabricDb reads of OVS's IDL (FabricIdl): the tables' rows,
    the change counts, the dirty rows, the conditions (acknowledged at
    once)."""

    def __init__(self, rows: Dict[str, Dict[Any, Any]]) -> None:
        self.tables = {t: SimpleNamespace(
            rows=dict(rows.get(t, {})),
            condition_state=SimpleNamespace(new=None, requested=None,
                                            acked=None)) for t in TABLES}
        self.table_changes = {t: 1 for t in TABLES}
        self.desired_changes = 1
        self.row_changes: Dict[Any, int] = {}
        self.dirty: Dict[str, set] = {"DCM": set(), "Assignment": set()}

    def named(self, table: str, name: Optional[str]) -> Any:
        return next(r for r in self.tables[table].rows.values()
                    if name is None or r.name == name)

    def change(self, table: str, name: Optional[str], **cols: Any) -> None:
        """Row 'name' of 'table' (the only one if None) changes."""
        r = self.named(table, name)
        for k, v in cols.items():
            setattr(r, k, v)
        self.table_changes[table] += 1
        self.row_changes[r.uuid] = self.row_changes.get(r.uuid, 0) + 1
        if table != "Assignment":
            self.desired_changes += 1
        if table in self.dirty:
            self.dirty[table].add(r.uuid)

    def cond_change(self, table: str, cond: Any) -> None:
        self.tables[table].condition_state.acked = cond

    def close(self) -> None:
        pass


def fabric_db(idl: FakeIdl) -> FabricDb:
    """A FabricDb that reads 'idl' (its own IDL, never connected, put
    away)."""
    db = FabricDb("unix:/nonexistent/daqfabric.sock", 1.0,
                  leader_only=False, wait=False)
    db.idl.close()
    db.idl = idl  # type: ignore[assignment]
    return db


def fixture(text: str = MAP) -> Any:
    st = parse(text)
    asg, _ = plan(st, {}, set(), {}, 1000)
    idl = FakeIdl(rows_of(st, asg))
    return st, asg, idl, fabric_db(idl)


def model(st: FabricState) -> Dict[str, Any]:
    """What a state holds, 'where' aside (the map's lines, the rows'
    names)."""
    return {
        "switches": sorted((replace(s, where="") for s in st.switches),
                           key=lambda s: s.name),
        "links": sorted((replace(lk, where="") for lk in st.links),
                        key=lambda lk: lk.name),
        "hosts": sorted((replace(h, where="") for h in st.hosts),
                        key=lambda h: h.name),
        "dcms": sorted((d.name, d.host, d.dcm.key()) for d in st.dcms),
        "hold_down": st.hold_down, "bfd": st.bfd}


def without(st: FabricState, table: str, name: Optional[str]
            ) -> Dict[str, Any]:
    m = model(st)
    key = {"Switch": "switches", "Link": "links", "Host": "hosts",
           "DCM": "dcms"}.get(table)
    if key == "dcms":
        m[key] = [d for d in m[key] if d[0] != name]
    elif key is not None:
        m[key] = [x for x in m[key] if x.name != name]
    else:
        m["bfd"] = {}
    return m


def row_errors(db: FabricDb) -> List[str]:
    return db.row_errors()  # type: ignore[attr-defined, no-any-return]


# ================================================================== reading
def test_good_rows_are_the_map() -> None:
    """The rows of a map read back as that map's state, none left out."""
    st, _, _, db = fixture()
    assert model(db.state()) == model(st)
    assert row_errors(db) == []


# (table, row name, column, bad value, what the error says)
BAD_ROWS = [
    ("DCM", "d0", "ip", ["10.1.0.10,output:7"], ["DCM d0", "ip"]),
    ("DCM", "d0", "ip", ["10.1.0.10\nadd priority=65535,actions=output:7"],
     ["DCM d0", "ip"]),
    ("DCM", "d1", "tuples", ["tcp:*:*->10.1.0.1:9001,output:7"],
     ["DCM d1", "tuple"]),
    ("DCM", "d0", "ring", "d0\n", ["DCM d0", "ring"]),
    ("DCM", "d0", "ring", "d0,output:7", ["DCM d0", "ring"]),
    ("DCM", "d0", "ring_size", "4096,output:7", ["DCM d0", "ring-size"]),
    ("DCM", "d3", "flow_buckets", 3, ["DCM d3", "flow-buckets"]),
    ("DCM", "d0", "host", "hlt0 -- x", ["DCM d0", "host"]),
    ("Host", "hlt0", "macs", {0: "02:00:00:00:02:01,output:7"},
     ["host hlt0", "MAC"]),
    ("Host", "hlt0", "macs", {0: "junk"}, ["host hlt0", "MAC"]),
    ("Host", "ros1", "ip", ["10.0.3.1,output:7"], ["host ros1", "ip"]),
    ("Host", "hlt1", "attachments", {"x": "hl0:h1"}, ["host hlt1", "plane"]),
    ("Host", "hlt1", "attachments", {0: "hl0:h1 -- x"},
     ["host hlt1", "port"]),
    ("Host", "hlt1", "attachments", {0: "hl0:h1,output:7"},
     ["host hlt1", "SWITCH:PORT"]),
    ("Switch", "hl0", "of", ["-O"], ["switch hl0", "of"]),
    ("Switch", "hl0", "of", ["--strict"], ["switch hl0", "of"]),
    ("Switch", "rl0", "bridge", "br0 -- del-br", ["switch rl0", "bridge"]),
    ("Switch", "rl0", "db", ["unix:/run/x.sock --monitor"],
     ["switch rl0", "db"]),
    ("Switch", "sp1", "plane", "one", ["switch sp1", "plane"]),
    ("Link", "rl0:u1-sp1:rl0", "a_port", "u1,output:7", ["link", "port"]),
    ("Fabric", None, "bfd", {"enable": "true", "min_rx": "fast",
                             "min_tx": "500", "mult": "5"},
     ["Fabric", "bfd", "min_rx"]),
]


@pytest.mark.parametrize("table,name,column,value,says", BAD_ROWS,
                         ids=["%s.%s=%r" % (t, c, v)
                              for t, _, c, v, _ in BAD_ROWS])
def test_bad_row_is_left_out(table: str, name: Optional[str], column: str,
                             value: Any, says: List[str]) -> None:
    """A bad row is left out of state() (a bad Fabric.bfd: BFD off), with
    one error that names its row and field; nothing raises, the other
    rows come through as they are."""
    st, _, idl, db = fixture()
    idl.change(table, name, **{column: value})
    got = db.state()
    assert model(got) == without(st, table, name)
    errors = row_errors(db)
    assert len(errors) == 1, errors
    assert all(s in errors[0] for s in says), errors
    # Nothing of the value gets through as text: only its repr.
    assert "\n" not in errors[0]
    # A change elsewhere: the same.
    idl.change("DCM", "d2" if name != "d2" else "d0")
    assert model(db.state()) == without(st, table, name)
    assert row_errors(db) == errors


def test_bad_row_fixed_comes_back() -> None:
    st, _, idl, db = fixture()
    idl.change("DCM", "d0", ip=["10.1.0.10,output:7"])
    assert "d0" not in [d.name for d in db.state().dcms]
    idl.change("DCM", "d0", ip=["10.1.0.10"])
    assert model(db.state()) == model(st)
    assert row_errors(db) == []


def test_bad_row_is_logged_once(monkeypatch: Any) -> None:
    """Each distinct error once, however often the state is read again;
    again once the row was good and goes bad again."""
    said: List[str] = []
    monkeypatch.setattr(fdb, "vlog", SimpleNamespace(
        warn=said.append, info=said.append, dbg=lambda _m: None))
    _, _, idl, db = fixture()
    idl.change("DCM", "d0", ip=["10.1.0.10,output:7"])
    idl.change("Switch", "hl0", of=["-O"])
    for k in range(3):
        db.state()
        idl.change("DCM", "d2")
        idl.change("Switch", "sp0")
    assert len(said) == 2 and any("DCM d0" in s for s in said) \
        and any("switch hl0" in s for s in said), said
    idl.change("Switch", "hl0", of=["tcp:192.0.2.1:6653"])
    db.state()
    idl.change("Switch", "hl0", of=["--strict"])
    db.state()
    assert len(said) == 3 and "--strict" in said[-1], said


def test_narrowed_view_with_bad_rows() -> None:
    """watch_slice()/narrow(): the conditions of the rows held, the bad
    ones left out, never an exception."""
    _, _, idl, db = fixture()
    db.watch_slice("hl0")
    idl.change("DCM", "d1", tuples=["tcp:*:*->10.1.0.1:9001\nadd x"])
    idl.change("Host", "hlt1", macs={0: "ff:ff:ff:ff:ff:ff"})
    assert db.narrow()
    assert ["host", "==", "hlt0"] in idl.tables["DCM"].condition_state.acked
    assert [d.name for d in db.state().dcms] == ["d0", "d2", "d3"]
    assert len(row_errors(db)) == 2


def test_plan_and_slices_without_bad_rows() -> None:
    """What is left out is as if the map did not have it: the planner
    plans the DCMs it can, the slices hold nothing of the bad rows, and
    neither raises on what refers to a row left out."""
    st, asg, idl, db = fixture()
    idl.change("Host", "hlt1", macs={0: "junk"})
    idl.change("Link", "rl0:u1-sp1:rl0", b_port="rl0 actions=drop")
    idl.change("DCM", "d0", ip=["10.1.0.10,output:7"])
    got = db.state()
    new, notes = plan(got, asg, set(), {}, 2000)
    # hlt1's DCMs have no path (no host), d0 is gone; d1 keeps its
    # path unless it crossed the link left out.
    assert set(new) <= {"d1", "d2", "d3"}
    assert "d1" in new and new["d1"].spine == "sp0"
    sl = slices(got, new)
    rings = {r.name for s in sl.values() for r in s.rings}
    assert rings == {"d1"}
    texts = repr(sl)
    assert "output:7" not in texts and "drop" not in texts


def test_map_refuses_what_the_rows_would_not_take() -> None:
    """The map reader checks a switch's db, bridge and of, and names, as
    the agents check the rows (fabric apply refuses the map)."""
    for old, new in (
            ('of: "tcp:192.0.2.1:6653"', 'of: "-O"'),
            ('of: "tcp:192.0.2.1:6653"', 'of: "--strict"'),
            ("bridge: br1", 'bridge: "br0 -- del-br"'),
            ('db: "unix:/run/rl0/db.sock"', 'db: "unix:/x -- y"'),
            ("ring: r2", 'ring: "r2\\n"')):
        text = MAP.replace(old, new)
        assert text != MAP, old
        with pytest.raises(MapError) as e:
            parse(text)
        what = new.split(":")[0]
        assert any(what in str(p) for p in e.value.problems), (
            new, [str(p) for p in e.value.problems])


# ==================================================================== agents
def _agent(tmp_path: Path, node: str, idl: FakeIdl) -> Any:
    p = agent_cmd.build_parser()
    args = p.parse_args(["--node", node, "--db",
                         "unix:/nonexistent/daqfabric.sock",
                         "--state-file", str(tmp_path / "state.json")])
    agent_cmd.check_args(p, args)
    agent = fa.Agent(args)
    agent.fabric.idl.close()
    agent.fabric.idl = idl
    return agent


def test_agent_whose_own_row_is_bad_keeps_its_slice(tmp_path: Path) -> None:
    """A switch's agent whose own Switch row goes bad keeps the slice it
    has (it would not know its switch's bridge or OpenFlow target), says
    why in its Node row's error and reports the generation failed;
    once the row is good again, it takes the new slice."""
    _, _, idl, _ = fixture()
    agent = _agent(tmp_path, "hl0", idl)
    try:
        agent.read_fabric()
        want = agent.want
        assert want["target"]["bridge"] == "br1"
        assert want["target"]["of"] == "tcp:192.0.2.1:6653"
        idl.change("Switch", "hl0", bridge="br0 -- del-br")
        idl.change("Fabric", None, generation=2, planned_generation=2)
        agent.read_fabric()
        assert agent.want is want
        cols = agent.node_columns(agent.applied_gen, None, None)
        assert "switch hl0" in cols["error"][0] \
            and "bridge" in cols["error"][0], cols
        assert cols["failed_generation"] == [2]
        idl.change("Switch", "hl0", bridge="br2")
        agent.read_fabric()
        assert agent.want["target"]["bridge"] == "br2"
        cols = agent.node_columns(agent.applied_gen, None, None)
        assert cols["error"] == [] and cols["failed_generation"] == []
    finally:
        agent.close()


def test_agent_reports_the_rows_left_out(tmp_path: Path) -> None:
    """Another row that is bad: the agent's slice is without it, its
    Node row's error names it (no failed generation: it applied what
    it could)."""
    _, _, idl, _ = fixture()
    agent = _agent(tmp_path, "hl0", idl)
    try:
        idl.change("DCM", "d0", ip=["10.1.0.10,output:7"])
        agent.read_fabric()
        rings = [r["name"] for r in agent.want["slice"]["rings"]]
        assert rings == ["d1", "d2", "d3"]
        cols = agent.node_columns(agent.applied_gen, None, None)
        assert "DCM d0" in cols["error"][0], cols
        assert cols["failed_generation"] == []
        # The switch's own error comes first.
        cols = agent.node_columns(1, "bridge br1 missing", 1)
        assert cols["error"][0].startswith("bridge br1 missing"), cols
    finally:
        agent.close()


def _host_agent(host: str, idl: FakeIdl) -> Any:
    p = agent_cmd.build_parser()
    args = p.parse_args(["--host", host, "--db",
                         "unix:/nonexistent/daqfabric.sock",
                         "--plane-dev", "0=eth0"])
    agent_cmd.check_args(p, args)
    agent = HostAgent(args)
    agent.fabric.idl.close()
    agent.fabric.idl = idl
    return agent


def test_host_agent_with_bad_rows() -> None:
    """A host's agent: a bad DCM row is left out of its routes and
    named in its error; its own Host row bad, it keeps its routes."""
    _, _, idl, _ = fixture()
    agent = _host_agent("ros1", idl)
    try:
        idl.change("DCM", "d0", ip=["10.1.0.10/8 dev lo"])
        agent.read_fabric()
        assert sorted(agent.want.planes) == ["d1", "d2", "d3"]
        assert "DCM d0" in agent.node_columns(0, None, None)["error"][0]
        want = agent.want
        idl.change("Host", "ros1", attachments={"x": "rl0:h1"})
        agent.read_fabric()
        assert agent.want is want
        cols = agent.node_columns(0, None, None)
        assert "host ros1" in cols["error"][0], cols
        assert cols["failed_generation"] == [1]
    finally:
        agent.close()
