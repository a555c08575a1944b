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


"""The fabric section of a DCM map: reading and checking it.

A fabric map is a YAML DCM map with a top-level 'fabric' mapping
(switches, links, hosts, hold-down); its DCMs name the host they live on
instead of an egress port.  Every problem is reported with its line, and
a map with any problem is refused whole."""

import hashlib
import ipaddress
import json
import re
import sys
from typing import Any, Dict, List, Optional, Set, Tuple

import yaml

from ..daqctl.dcmmap import build_dcm, validate_dcms, with_defaults
from ..daqctl.mapfile import (LineDict, LineLoader, int_value, ipv4,
                              port_name, remote)
from ..daqctl.model import (DCM_KEYS, DEFAULT_KEYS, MapError, NAME_RE,
                            Problem)
from .model import (BFD_KEYS, FabricDcm, FabricHost, FabricLink,
                    FabricState, FabricSwitch, HOLD_DOWN_DEFAULT,
                    HOLD_DOWN_MAX, HOST_ROLES, PLANE_MAX, POD_MAX, ROLES,
                    switch_ring)

TOP_KEYS = ("fabric", "defaults", "dcms")
FABRIC_KEYS = ("hold_down", "bfd", "switches", "links", "hosts")
SWITCH_KEYS = ("name", "role", "plane", "pod", "dpdk", "db", "bridge", "of")
LINK_KEYS = ("a", "b")
HOST_KEYS = ("name", "role", "ip", "pod", "ports", "macs")
MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
FABRIC_DEFAULT_KEYS = tuple(k for k in DEFAULT_KEYS if k != "egress")
FABRIC_DCM_KEYS = tuple(k for k in DCM_KEYS if k != "egress") + ("host",)


def is_fabric_map(text: str) -> bool:
    """Whether 'text' is a YAML map with a top-level 'fabric' key."""
    try:
        doc = yaml.load(text, Loader=LineLoader)
    except yaml.YAMLError:
        return False
    return isinstance(doc, dict) and "fabric" in doc


class FabricMapReader:
    """Reads a fabric map into a FabricState, collecting every problem
    with its file and line."""

    def __init__(self, path: str, tolerance: float = 0.01) -> None:
        self.path = path
        self.fname = "-" if path == "-" else path
        self.tolerance = tolerance
        self.problems: List[Problem] = []
        self.text = ""

    def at(self, line: int) -> str:
        return "%s:%d" % (self.fname, line) if line else self.fname

    def bad(self, line: int, reason: str) -> None:
        self.problems.append(Problem(self.at(line), reason))

    def fail(self) -> MapError:
        return MapError(self.problems)

    def read(self) -> FabricState:
        try:
            if self.path == "-":
                self.text = sys.stdin.read()
            else:
                with open(self.path, encoding="utf-8") as f:
                    self.text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise MapError([Problem(self.fname, "cannot read map: %s" % e)])
        return self.parse(self.text)

    def parse(self, text: str) -> FabricState:
        try:
            doc = yaml.load(text, Loader=LineLoader)
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            self.bad(mark.line + 1 if mark else 0,
                     "malformed YAML: %s" % (e.problem or e.context))
            raise self.fail()
        except yaml.YAMLError as e:
            self.bad(0, "malformed YAML: %s" % e)
            raise self.fail()
        if not isinstance(doc, LineDict) or "fabric" not in doc:
            self.bad(1, "a fabric map is a mapping with a 'fabric' section "
                     "(switches, links, hosts) and 'dcms'")
            raise self.fail()
        self._unknown(doc, TOP_KEYS, "map")
        fab = doc["fabric"]
        if not isinstance(fab, LineDict):
            self.bad(doc.key_lines["fabric"], "'fabric' must be a mapping")
            raise self.fail()
        self._unknown(fab, FABRIC_KEYS, "fabric")
        state = FabricState()
        if "hold_down" in fab:
            try:
                state.hold_down = int_value(fab["hold_down"], "hold-down",
                                            0, HOLD_DOWN_MAX)
            except ValueError as e:
                self.bad(fab.key_lines["hold_down"], str(e))
        else:
            state.hold_down = HOLD_DOWN_DEFAULT
        if "bfd" in fab:
            state.bfd = self._bfd(fab)
        state.switches = self._switches(fab)
        state.links = self._links(fab, state)
        state.hosts = self._hosts(fab, state)
        state.dcms = self._dcms(doc, state)
        self._check_paths(fab, state)
        self._check_addresses(fab, state)
        self._check_shared(fab, state)
        if self.problems:
            raise self.fail()
        return state

    # ----------------------------------------------------------- helpers
    def _unknown(self, m: LineDict, allowed: Tuple[str, ...],
                 what: str) -> None:
        for k in m:
            if k not in allowed:
                self.bad(m.key_lines.get(k, m.line),
                         "unknown %s key '%s' (known: %s)"
                         % (what, k, ", ".join(allowed)))

    def _list(self, m: LineDict, key: str, what: str,
              required: bool = True) -> List[LineDict]:
        items = m.get(key)
        if items is None:
            if required:
                self.bad(m.line, "the fabric has no '%s'" % key)
            return []
        if not isinstance(items, list):
            self.bad(m.key_lines[key], "'%s' must be a list" % key)
            return []
        out = []
        for it in items:
            if isinstance(it, LineDict):
                out.append(it)
            else:
                self.bad(m.key_lines[key], "each %s must be a mapping, not "
                         "%r" % (what, it))
        return out

    def _name(self, m: LineDict, what: str) -> Optional[str]:
        v = m.get("name")
        if v is None:
            self.bad(m.line, "a %s needs a 'name'" % what)
            return None
        try:
            return node_name(v, what)
        except ValueError as e:
            self.bad(m.key_lines["name"], str(e))
            return None

    def _int(self, m: LineDict, key: str, label: str, lo: int, hi: int,
             default: Optional[int]) -> Optional[int]:
        if key not in m:
            if default is None:
                self.bad(m.line, "%s: no '%s'" % (label, key))
            return default
        try:
            return int_value(m[key], key, lo, hi)
        except ValueError as e:
            self.bad(m.key_lines[key], "%s: %s" % (label, e))
            return None

    def _endpoint(self, v: Any, line: int, label: str
                  ) -> Optional[Tuple[str, str]]:
        """'SWITCH:PORT'."""
        try:
            return endpoint(v)
        except ValueError as e:
            self.bad(line, "%s: %s" % (label, e))
            return None

    # --------------------------------------------------------- sections
    def _bfd(self, fab: LineDict) -> Dict[str, str]:
        """'bfd: true' (the defaults), 'false', or a mapping of BFD_KEYS
        (in milliseconds, and the detection multiplier): OVS's
        Interface:bfd for every link port."""
        v = fab["bfd"]
        line = fab.key_lines["bfd"]
        if v is False:
            return {}
        if v is True:
            v = LineDict()
            v.line, v.key_lines = line, {}
        if not isinstance(v, LineDict):
            self.bad(line, "'bfd' must be true, false or a mapping of %s, "
                     "not %r" % (", ".join(k.replace("_", "-")
                                           for k in BFD_KEYS), v))
            return {}
        self._unknown(v, tuple(BFD_KEYS), "bfd")
        out = {"enable": "true"}
        for key, (ovs_key, lo, hi, default) in BFD_KEYS.items():
            try:
                n = (int_value(v[key], "bfd: " + key.replace("_", "-"),
                               lo, hi) if key in v else default)
            except ValueError as e:
                self.bad(v.key_lines[key], str(e))
                continue
            out[ovs_key] = str(n)
        return out

    def _switches(self, fab: LineDict) -> List[FabricSwitch]:
        out: List[FabricSwitch] = []
        seen: Dict[str, str] = {}
        for m in self._list(fab, "switches", "switch"):
            self._unknown(m, SWITCH_KEYS, "switch")
            name = self._name(m, "switch")
            if name is None:
                continue
            label = "switch %s" % name
            role = m.get("role")
            if role not in ROLES:
                self.bad(m.key_lines.get("role", m.line),
                         "%s: role %r: leaf or spine" % (label, role))
            plane = self._int(m, "plane", label, 0, PLANE_MAX, None)
            pod = self._int(m, "pod", label, 0, POD_MAX, 0)
            dpdk = m.get("dpdk", False)
            if not isinstance(dpdk, bool):
                self.bad(m.key_lines["dpdk"], "%s: dpdk must be true or "
                         "false" % label)
            strs: Dict[str, Optional[str]] = {}
            for k in ("db", "bridge", "of"):
                try:
                    strs[k] = switch_target(m.get(k), k)
                except ValueError as e:
                    self.bad(m.key_lines[k], "%s: %s" % (label, e))
                    strs[k] = None
            if name in seen:
                self.bad(m.key_lines["name"], "duplicate switch %s (first "
                         "at %s)" % (name, seen[name]))
                continue
            seen[name] = self.at(m.line)
            if role not in ROLES or plane is None or pod is None:
                continue
            out.append(FabricSwitch(
                name=name, role=role, plane=plane, pod=pod,
                dpdk=bool(dpdk), db=strs["db"],
                bridge=strs["bridge"] or "br0", of=strs["of"],
                where=self.at(m.line)))
        return out

    def _links(self, fab: LineDict, state: FabricState) -> List[FabricLink]:
        out: List[FabricLink] = []
        used: Dict[Tuple[str, str], str] = {}
        for m in self._list(fab, "links", "link"):
            self._unknown(m, LINK_KEYS, "link")
            ends = []
            for k in LINK_KEYS:
                if k not in m:
                    self.bad(m.line, "a link needs 'a' and 'b' "
                             "(SWITCH:PORT each)")
                    break
                e = self._endpoint(m[k], m.key_lines[k], "link end %s" % k)
                if e is None:
                    break
                sw = state.switch(e[0])
                if sw is None:
                    self.bad(m.key_lines[k], "link end %s: no switch %s"
                             % (k, e[0]))
                    break
                if e in used:
                    self.bad(m.key_lines[k], "link end %s: port %s:%s is "
                             "already cabled (%s)" % (k, e[0], e[1],
                                                      used[e]))
                    break
                ends.append((sw, e[1]))
            if len(ends) != 2:
                continue
            (s1, p1), (s2, p2) = ends
            if {s1.role, s2.role} != {"leaf", "spine"}:
                self.bad(m.line, "link %s:%s - %s:%s: a link joins a leaf "
                         "and a spine (leaves are not cabled to each other, "
                         "nor spines)" % (s1.name, p1, s2.name, p2))
                continue
            if s1.plane != s2.plane:
                self.bad(m.line, "link %s:%s - %s:%s joins plane %d and "
                         "plane %d: planes are independent"
                         % (s1.name, p1, s2.name, p2, s1.plane, s2.plane))
                continue
            if s1.role == "spine":
                (s1, p1), (s2, p2) = (s2, p2), (s1, p1)
            for e in ((s1.name, p1), (s2.name, p2)):
                used[e] = self.at(m.line)
            out.append(FabricLink(s1.name, p1, s2.name, p2,
                                  where=self.at(m.line)))
        self._used_ports = used
        return out

    def _hosts(self, fab: LineDict, state: FabricState) -> List[FabricHost]:
        out: List[FabricHost] = []
        seen: Dict[str, str] = {}
        macs_seen: Dict[Tuple[int, str], str] = {}
        used = dict(self._used_ports)
        for m in self._list(fab, "hosts", "host"):
            self._unknown(m, HOST_KEYS, "host")
            name = self._name(m, "host")
            if name is None:
                continue
            label = "host %s" % name
            role = m.get("role")
            if role not in HOST_ROLES:
                self.bad(m.key_lines.get("role", m.line),
                         "%s: role %r: ros or hlt" % (label, role))
            ip = None
            if "ip" in m:
                try:
                    ip = host_address(m["ip"], role)
                except ValueError as e:
                    self.bad(m.key_lines["ip"], "%s: %s" % (label, e))
            pod = self._int(m, "pod", label, 0, POD_MAX, 0)
            ports = m.get("ports")
            atts: List[Tuple[int, str, str]] = []
            if not isinstance(ports, LineDict) or not ports:
                self.bad(m.key_lines.get("ports", m.line),
                         "%s: 'ports' must map each plane to its "
                         "LEAF:PORT, e.g. {0: leaf1:p3}" % label)
                ports = LineDict()
                ports.key_lines = {}
            for k, v in ports.items():
                line = ports.key_lines[k]
                try:
                    plane = int_value(int(k) if k.isdigit() else k,
                                      "plane", 0, PLANE_MAX)
                except ValueError as e:
                    self.bad(line, "%s: %s" % (label, e))
                    continue
                e = self._endpoint(v, line, "%s, plane %d" % (label, plane))
                if e is None:
                    continue
                sw = state.switch(e[0])
                if sw is None or sw.role != "leaf":
                    self.bad(line, "%s, plane %d: %s is not a leaf of the "
                             "fabric" % (label, plane, e[0]))
                    continue
                if sw.plane != plane:
                    self.bad(line, "%s: leaf %s is in plane %d, not %d"
                             % (label, e[0], sw.plane, plane))
                    continue
                if e in used:
                    self.bad(line, "%s: port %s:%s is already cabled (%s)"
                             % (label, e[0], e[1], used[e]))
                    continue
                used[e] = self.at(line)
                atts.append((plane, e[0], e[1]))
            macs = self._macs(m, name, {p for p, _, _ in atts}, macs_seen)
            if name in seen:
                self.bad(m.key_lines["name"], "duplicate host %s (first at "
                         "%s)" % (name, seen[name]))
                continue
            if state.switch(name) is not None:
                # A node's Node row is its name: a host's agent
                # (ovs-daqfabric-agent --host) and the switch's would
                # write one row.
                self.bad(m.key_lines["name"], "host %s: a switch has that "
                         "name (a node's report is by name)" % name)
                continue
            seen[name] = self.at(m.line)
            if role in HOST_ROLES and pod is not None and atts:
                out.append(FabricHost(name=name, role=role,
                                      attachments=tuple(sorted(atts)),
                                      ip=ip, pod=pod, where=self.at(m.line),
                                      macs=macs))
        self._used_ports = used
        return out

    def _macs(self, m: LineDict, name: str, planes: Set[int],
              seen: Dict[Tuple[int, str], str]) -> Tuple[Tuple[int, str],
                                                         ...]:
        """A host's 'macs': plane -> the MAC of its interface there (on
        the leaf port of 'planes' of that plane), unicast and no other
        host's in that plane ('seen': (plane, MAC) -> host)."""
        label = "host %s" % name
        v = m.get("macs")
        if v is None:
            return ()
        line = m.key_lines["macs"]
        if not isinstance(v, LineDict):
            self.bad(line, "%s: 'macs' must map each plane to the MAC of "
                     "the host's interface there, e.g. {0: "
                     "\"02:00:00:00:00:01\"}" % label)
            return ()
        out: List[Tuple[int, str]] = []
        for k, mac in v.items():
            kline = v.key_lines.get(k, line)
            try:
                plane = int_value(int(k) if str(k).isdigit() else k,
                                  "plane", 0, PLANE_MAX)
            except ValueError as e:
                self.bad(kline, "%s: macs: %s" % (label, e))
                continue
            if plane not in planes:
                self.bad(kline, "%s: macs: plane %d is not one of its "
                         "ports' planes" % (label, plane))
                continue
            try:
                mac = unicast_mac(mac)
            except ValueError as e:
                self.bad(kline, "%s, plane %d: %s" % (label, plane, e))
                continue
            other = seen.get((plane, mac))
            if other is not None:
                self.bad(kline, "%s, plane %d: MAC %s is host %s's too"
                         % (label, plane, mac, other))
                continue
            seen[(plane, mac)] = name
            out.append((plane, mac))
        return tuple(sorted(out))

    def _dcms(self, doc: LineDict, state: FabricState) -> List[FabricDcm]:
        defaults: Dict[str, Tuple[Any, int]] = {}
        d = doc.get("defaults")
        if d is not None:
            if not isinstance(d, LineDict):
                self.bad(doc.key_lines["defaults"],
                         "'defaults' must be a mapping")
            else:
                self._unknown(d, FABRIC_DEFAULT_KEYS, "defaults")
                defaults = {k: (v, d.key_lines[k]) for k, v in d.items()
                            if k in FABRIC_DEFAULT_KEYS}
        items = doc.get("dcms")
        if items is None:
            self.bad(doc.line, "the map has no 'dcms' (write 'dcms: []' "
                     "for none)")
            return []
        if not isinstance(items, list):
            self.bad(doc.key_lines["dcms"], "'dcms' must be a list")
            return []
        out: List[FabricDcm] = []
        notes: List[str] = []
        for item in items:
            if not isinstance(item, LineDict):
                self.bad(doc.key_lines["dcms"], "each DCM must be a mapping "
                         "(name, host, ip...)")
                continue
            self._unknown(item, FABRIC_DCM_KEYS, "DCM")
            values, lines = with_defaults(defaults, item, FABRIC_DCM_KEYS)
            host_name = values.pop("host", None)
            host = state.host(host_name) if isinstance(host_name,
                                                       str) else None
            label = "DCM %s" % values.get("name")
            if host_name is None:
                self.bad(item.line, "%s: no 'host' (the HLT host it runs "
                         "on)" % label)
            elif host is None:
                self.bad(item.key_lines["host"], "%s: no host %s in the "
                         "fabric" % (label, host_name))
            elif host.role != "hlt":
                self.bad(item.key_lines["host"], "%s: host %s is a %s "
                         "host; DCMs run on HLT hosts"
                         % (label, host_name, host.role.upper()))
                host = None
            # The egress is the host's leaf port in each plane (a ring
            # on each, slice.py); until then FabricDcm makes it
            # host_egress(host), which build_dcm() would refuse as a
            # port name.
            values["egress"] = "unassigned"
            dcm = build_dcm(values, lines, item.line, self.at,
                            self.problems, self.tolerance, notes)
            if dcm is not None and host is not None:
                out.append(FabricDcm(dcm=dcm, host=host.name))
        # A DCM's rings are on its host's leaf ports (one per plane,
        # slice.py): the DCMs of one host share those ports, whatever
        # the ports are called (other hosts' may have the same names).
        host_of = {d.dcm.name: d.host for d in out}
        self.problems += validate_dcms(
            [d.dcm for d in out], self.fname,
            lambda d: "host %s's port" % host_of.get(d.name, "?"))
        ports = {p for (_, p) in self._used_ports}
        for d in out:
            if d.dcm.ring in ports:
                self.bad(0, "DCM %s: ring %s has the name of a cabled "
                         "port" % (d.name, d.dcm.ring))
        return out

    def _check_addresses(self, fab: LineDict, state: FabricState) -> None:
        """The fabric routes each ROS host's address (or prefix) towards
        it at the priority of the DCMs' routes: it must hold no DCM's
        address and no other ROS host's, or two routes would match the
        same packets."""
        ros = [(h, ipaddress.ip_network(h.ip)) for h in state.hosts
               if h.role == "ros" and h.ip]
        for i, (h, net) in enumerate(ros):
            for h2, net2 in ros[i + 1:]:
                if net.overlaps(net2):
                    self.bad(fab.line, "hosts %s and %s: addresses %s and "
                             "%s overlap (each ROS host is routed by its "
                             "own)" % (h.name, h2.name, h.ip, h2.ip))
            for d in state.dcms:
                dsts = ([d.dcm.ip] if d.dcm.ip
                        else [t.dst for t in d.dcm.tuples])
                for a in dsts:
                    if ipaddress.ip_address(a) in net:
                        self.bad(fab.line, "host %s: its addresses %s hold "
                                 "DCM %s's %s" % (h.name, h.ip, d.name, a))

    def _check_shared(self, fab: LineDict, state: FabricState) -> None:
        """Switches that share an OVSDB are bridges of one ovs-vswitchd:
        each needs a bridge of its own and port names that no other of
        them has, its rings' (switch_ring()) included."""
        sharing = state.sharing_db()
        if not sharing:
            return
        by_db: Dict[str, List[FabricSwitch]] = {}
        for s in state.switches:
            if s.name in sharing and s.db:
                by_db.setdefault(s.db, []).append(s)
        ports: Dict[str, Set[str]] = {}
        for sw, port in self._used_ports:
            ports.setdefault(sw, set()).add(port)
        for db, group in sorted(by_db.items()):
            seen_br: Dict[str, str] = {}
            seen_port: Dict[str, str] = {}
            for s in group:
                if s.bridge in seen_br:
                    self.bad(fab.line, "switches %s and %s share db %s and "
                             "bridge %s (each switch of one OVSDB needs a "
                             "bridge of its own)" % (seen_br[s.bridge],
                                                     s.name, db, s.bridge))
                seen_br.setdefault(s.bridge, s.name)
                on = {h.name for h in state.hosts
                      for _, leaf, _ in h.attachments if leaf == s.name}
                names = set(ports.get(s.name, ())) | {
                    switch_ring(d.dcm.ring, s.bridge) for d in state.dcms
                    if d.host in on}
                for n in sorted(names):
                    if not NAME_RE.match(n):
                        self.bad(fab.line, "switch %s shares db %s: its "
                                 "ring %s is not a port name (at most 64 "
                                 "letters, digits, '_', '.', '-')"
                                 % (s.name, db, n))
                    elif n in seen_port:
                        self.bad(fab.line, "switches %s and %s share db "
                                 "%s and both have a port %s (port names "
                                 "are unique in an ovs-vswitchd)"
                                 % (seen_port[n], s.name, db, n))
                    seen_port.setdefault(n, s.name)

    def _check_paths(self, fab: LineDict, state: FabricState) -> None:
        """Each plane that a host uses has a spine, and each of its leaves
        a link to every spine of the plane (a leaf-spine plane)."""
        spines = state.spines()
        leaves_used: Set[Tuple[int, str]] = set()
        for h in state.hosts:
            for plane, leaf, _ in h.attachments:
                leaves_used.add((plane, leaf))
        for plane, leaf in sorted(leaves_used):
            if plane not in spines:
                self.bad(fab.line, "plane %d has hosts but no spine"
                         % plane)
                continue
            for sp in spines[plane]:
                if not any(lk.joins(leaf, sp) for lk in state.links):
                    self.bad(fab.line, "leaf %s has no link to spine %s of "
                             "plane %d (a leaf is cabled to every spine of "
                             "its plane)" % (leaf, sp, plane))
        if not any(h.role == "ros" for h in state.hosts) and state.hosts:
            self.bad(fab.line, "the fabric has no ROS host")


def node_name(v: Any, what: str) -> str:
    """A switch's or a host's name (their agents' Node rows are by
    name)."""
    if not isinstance(v, str) or not NAME_RE.match(v):
        raise ValueError("%s name %r: letters, digits, '_', '.', '-' (at "
                         "most 64)" % (what, v))
    return v


def endpoint(v: Any) -> Tuple[str, str]:
    """'SWITCH:PORT' (a link's end, a host's attachment): the switch and
    its port, a port name."""
    if not isinstance(v, str) or v.count(":") != 1:
        raise ValueError("%r is not SWITCH:PORT" % (v,))
    sw, port = v.split(":")
    return sw, port_name(port, "port")


def switch_target(v: Any, key: str) -> Optional[str]:
    """A switch's 'db' or 'of' (a remote) or 'bridge' (a port name):
    what its agent puts on ovs-ofctl's command line and connects to.
    None if not given."""
    if v is None:
        return None
    return port_name(v, key) if key == "bridge" else remote(v, key)


def unicast_mac(v: Any) -> str:
    """A host interface's MAC, lower case: six hexadecimal octets
    separated by ':', unicast, not all zero."""
    if isinstance(v, int) and not isinstance(v, bool):
        # Unquoted, YAML reads some MACs as numbers (base 60).
        raise ValueError("MAC read as the number %d (YAML reads some "
                         "unquoted MACs so): give it in quotes, e.g. "
                         "\"12:34:56:00:00:01\"" % v)
    if not isinstance(v, str):
        raise ValueError("MAC %r: give it as a string, e.g. "
                         "\"02:00:00:00:00:01\"" % (v,))
    mac = v.strip().lower()
    if not MAC_RE.match(mac):
        raise ValueError("MAC %r is not six hexadecimal octets separated "
                         "by ':'" % v)
    if int(mac[:2], 16) & 1:
        raise ValueError("MAC %s is a multicast address (a host's "
                         "interface has a unicast one)" % mac)
    if mac == "00:00:00:00:00:00":
        raise ValueError("MAC %s is no interface's" % mac)
    return mac


def host_address(v: Any, role: Any) -> str:
    """A host's 'ip': an address, or for a ROS host holding several
    (aggregated ROS) the prefix that holds them, e.g. 10.0.2.0/24."""
    if not isinstance(v, str) or "/" not in v:
        return ipv4(v, "ip")
    if role != "ros":
        raise ValueError("ip %s: only a ROS host's addresses may be a "
                         "prefix" % v)
    addr, _, length = v.strip().partition("/")
    ipv4(addr, "ip")
    try:
        net = ipaddress.ip_network(v.strip())
    except ValueError:
        raise ValueError("ip %s is not a prefix (ADDRESS/LENGTH with no "
                         "bits set past LENGTH)" % v)
    if net.prefixlen < 8:
        raise ValueError("ip %s: a prefix of a host's addresses is at "
                         "least /8" % v)
    return str(net) if net.prefixlen < 32 else str(net.network_address)


def read_fabric_map(path: str, tolerance: float = 0.01) -> FabricState:
    return FabricMapReader(path, tolerance).read()


def state_digest(state: FabricState) -> str:
    """A digest of the desired state (what 'fabric status' compares)."""
    return hashlib.sha256(json.dumps(state_json(state), sort_keys=True)
                          .encode()).hexdigest()[:16]


def state_json(state: FabricState) -> Dict[str, Any]:
    """The desired state as plain data (for --dry-run -f json and the
    digest)."""
    out: Dict[str, Any] = {
        "hold_down": state.hold_down,
        "switches": [{"name": s.name, "role": s.role, "plane": s.plane,
                      "pod": s.pod, "dpdk": s.dpdk, "db": s.db,
                      "bridge": s.bridge, "of": s.of}
                     for s in sorted(state.switches, key=lambda s: s.name)],
        "links": sorted(lk.name for lk in state.links),
        "hosts": [dict({"name": h.name, "role": h.role, "ip": h.ip,
                        "pod": h.pod,
                        "ports": {str(p): "%s:%s" % (leaf, port)
                                  for p, leaf, port in h.attachments}},
                       **({"macs": {str(p): mac for p, mac in h.macs}}
                          if h.macs else {}))
                  for h in sorted(state.hosts, key=lambda h: h.name)],
        "dcms": [{"name": d.name, "host": d.host,
                  "match": d.dcm.match_text(), "ring": d.dcm.ring,
                  "options": {k: v for k, v in d.dcm.options().items()
                              if k != "egress"}}
                 for d in sorted(state.dcms, key=lambda d: d.name)],
    }
    if state.bfd:
        out["bfd"] = dict(state.bfd)
    return out
