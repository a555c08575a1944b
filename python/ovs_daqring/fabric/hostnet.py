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


"""A host's side of the fabric (ovs-daqfabric-agent --host): the Linux
policy routing that sends each DCM's traffic on the plane the planner
assigned it (thesis §6.3.1: the controller programs the edge hosts too).

host_routes() computes, purely, the routes and rules a host must hold;
parse_kernel() reads what it holds (the JSON of 'ip -j'); batch() is the
difference as 'ip -batch' lines.  The host agent owns, and touches, only
the routes whose protocol is RT_PROTO and the rules whose protocol is
RT_PROTO: the tables TABLE_BASE + plane and the priorities PRIO_PORTS and
PRIO_ADDR are documented (Documentation/topics/fabric.rst) for nobody
else to use.

- A ROS host: for each DCM assigned to plane p, a route DCM_IP/32 dev
  DEV_p in the main table (a DCM given by its address), or per four-tuple
  a rule "[from SRC] to DST ipproto PROTO [sport S] [dport D] lookup
  TABLE_p" and, in TABLE_p, a route to DST dev DEV_p (DCMs of one host
  share its address and differ by port).
- An HLT host: for each of its DCMs assigned to plane p, a rule "from
  DCM_IP lookup TABLE_p", or per four-tuple the rule of what the DCM
  sends ("from DST [to SRC] ipproto PROTO [sport D] [dport S]"); TABLE_p
  holds a route to each ROS host's address or prefix (and each tuple's
  source) dev DEV_p.
- A DCM without an assignment gets nothing (the main table's routes
  stand); one whose plane has no device (--plane-dev) neither, and is
  named in an error."""

import ipaddress
import json
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, FrozenSet, Iterable, List,
                    Optional, Set, Tuple)

from .model import Assignment, FabricState

# The routing protocol number of the host agent's routes and rules
# (/etc/iproute2/rt_protos leaves it unnamed).
RT_PROTO = 174
# The routing table of plane p: TABLE_BASE + p (p <= model.PLANE_MAX).
TABLE_BASE = 5300
TABLE_MAIN = 254
# The rules' priorities: those of four-tuples (ports) before those of
# addresses, all before the main table's (32766).
PRIO_PORTS = 5300
PRIO_ADDR = 5301
# How many DCMs an error names.
NAMED_MAX = 20
_TABLE_NAMES = {"main": TABLE_MAIN, "local": 255, "default": 253}


def plane_table(plane: int) -> int:
    return TABLE_BASE + plane


def _prefix(addr: str) -> str:
    """An address or prefix as "A.B.C.D/LEN" (the network of a host's
    address/prefix)."""
    return str(ipaddress.ip_network(addr, strict=False))


@dataclass(frozen=True, order=True)
class Route:
    """A route of the host agent's: 'dst' (a prefix) dev 'dev' in
    'table'."""
    table: int
    dst: str
    dev: str

    def key(self) -> Tuple[int, str]:
        return (self.table, self.dst)

    def line(self, verb: str) -> str:
        """'ip -batch' text ("replace" or "del")."""
        return "route %s %s%s table %d proto %d" % (
            verb, self.dst, " dev " + self.dev if verb != "del" else "",
            self.table, RT_PROTO)


@dataclass(frozen=True)
class Rule:
    """A rule of the host agent's ('src'/'dst' prefixes, None: all)."""
    priority: int
    src: Optional[str]
    dst: Optional[str]
    ipproto: Optional[str]
    sport: Optional[int]
    dport: Optional[int]
    table: int

    def order(self) -> Tuple[Any, ...]:
        """A sort key (None first)."""
        return (self.priority, self.src or "", self.dst or "",
                self.ipproto or "", self.sport or 0, self.dport or 0,
                self.table)

    def line(self, verb: str) -> str:
        """'ip -batch' text ("add" or "del")."""
        words = ["rule", verb, "pref", str(self.priority)]
        for w, v in (("from", self.src), ("to", self.dst),
                     ("ipproto", self.ipproto), ("sport", self.sport),
                     ("dport", self.dport)):
            if v is not None:
                words += [w, str(v)]
        words += ["lookup", str(self.table), "protocol", str(RT_PROTO)]
        return " ".join(words)


@dataclass
class HostNet:
    """What a host must hold: routes, rules, and why some DCMs are not
    steered (errors); 'planes': DCM -> the plane it is steered to."""
    routes: FrozenSet[Route] = frozenset()
    rules: FrozenSet[Rule] = frozenset()
    errors: List[str] = field(default_factory=list)
    planes: Dict[str, int] = field(default_factory=dict)


def _named(names: List[str]) -> str:
    text = ", ".join(names[:NAMED_MAX])
    if len(names) > NAMED_MAX:
        text += " and %d more" % (len(names) - NAMED_MAX)
    return text


def host_routes(state: FabricState, assignments: Dict[str, Assignment],
                host: str, devs: Dict[int, str]) -> Optional[HostNet]:
    """The routes and rules host 'host' must hold, given the desired
    state, the planner's assignments (by DCM) and the host's device of
    each plane; None if the fabric has no such host (the agent then
    leaves the host as it is)."""
    h = state.host(host)
    if h is None:
        return None
    routes: Set[Route] = set()
    rules: Set[Rule] = set()
    missing: Dict[int, List[str]] = {}
    planes: Dict[str, int] = {}
    ros = h.role == "ros"
    if ros:
        dcms = state.dcms
        back: List[str] = []
    else:
        dcms = [d for d in state.dcms if d.host == host]
        back = sorted({_prefix(r.ip) for r in state.hosts
                       if r.role == "ros" and r.ip})
    used: Dict[int, Set[str]] = {}
    for d in dcms:
        a = assignments.get(d.name)
        if a is None:
            continue
        dev = devs.get(a.plane)
        if dev is None:
            missing.setdefault(a.plane, []).append(d.name)
            continue
        planes[d.name] = a.plane
        table = plane_table(a.plane)
        m = d.dcm
        dsts = used.setdefault(a.plane, set())
        if m.ip:
            if ros:
                routes.add(Route(TABLE_MAIN, _prefix(m.ip), dev))
            else:
                rules.add(Rule(PRIO_ADDR, _prefix(m.ip), None, None, None,
                               None, table))
        for t in m.tuples:
            dst = _prefix(t.dst)
            src = _prefix(t.src) if t.src else None
            if ros:
                rules.add(Rule(PRIO_PORTS, src, dst, t.proto, t.sport,
                               t.dport, table))
                dsts.add(dst)
            else:
                # What the DCM sends: the tuple the other way round.
                rules.add(Rule(PRIO_PORTS, dst, src, t.proto, t.dport,
                               t.sport, table))
                if src is not None:
                    dsts.add(src)
    errors = []
    for plane, names in sorted(missing.items()):
        errors.append("plane %d has no --plane-dev: DCM%s %s not steered "
                      "(the main table's routes stand)"
                      % (plane, "s" if len(names) > 1 else "",
                         _named(sorted(names))))
    for plane, dsts in sorted(used.items()):
        if not ros:
            dsts |= set(back)
            if not dsts:
                errors.append("plane %d: no ROS host has an address (ip): "
                              "the table of its DCMs (%d) routes nothing"
                              % (plane, plane_table(plane)))
        routes.update(Route(plane_table(plane), p, devs[plane])
                      for p in dsts)
    # Two routes to one prefix in one table (the main table: two DCMs of
    # one address on different planes): neither.
    by_key: Dict[Tuple[int, str], List[Route]] = {}
    for r in routes:
        by_key.setdefault(r.key(), []).append(r)
    for key, rs in sorted(by_key.items()):
        if len(rs) > 1:
            errors.append("%s: routed by different planes' DCMs (devices "
                          "%s): not steered" % (key[1], ", ".join(
                              sorted(r.dev for r in rs))))
            routes -= set(rs)
    return HostNet(frozenset(routes), frozenset(rules), errors, planes)


# ==================================================================== kernel
# What one 'ip -N -j -batch -' prints the three arrays of: the agent's
# routes, every rule, every link (-N: protocols and tables as numbers,
# whatever /etc/iproute2 names them).
READ_BATCH = ("route show table all proto %d\nrule show\nlink show\n"
              % RT_PROTO)


@dataclass
class Kernel:
    """What the host holds of the agent's (and its links' states)."""
    routes: List[Route] = field(default_factory=list)
    rules: List[Rule] = field(default_factory=list)
    links: Dict[str, str] = field(default_factory=dict)


def _table(v: Any) -> int:
    if v is None:
        return TABLE_MAIN
    if isinstance(v, int):
        return v
    return _TABLE_NAMES.get(v) or int(v)


def _ours(v: Any) -> bool:
    return str(v) == str(RT_PROTO)


_IPPROTOS = {"ipproto-6": "tcp", "ipproto-17": "udp"}


def _rule_prefix(addr: Optional[str], length: Optional[int]
                 ) -> Optional[str]:
    if addr is None or addr == "all":
        return None
    return _prefix("%s/%d" % (addr, 32 if length is None else length))


def json_arrays(text: str) -> List[Any]:
    """The JSON values one after the other in 'text' ('ip -j -batch'
    prints one per command)."""
    dec = json.JSONDecoder()
    out, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        v, i = dec.raw_decode(text, i)
        out.append(v)


def link_state(link: Dict[str, Any]) -> str:
    """"up" or "down": up while administratively up with a carrier
    (operstate UP, or UNKNOWN for devices that do not say)."""
    flags = link.get("flags", [])
    up = ("UP" in flags and "LOWER_UP" in flags
          and link.get("operstate", "UNKNOWN") in ("UP", "UNKNOWN"))
    return "up" if up else "down"


def parse_kernel(routes: List[Dict[str, Any]], rules: List[Dict[str, Any]],
                 links: List[Dict[str, Any]]) -> Kernel:
    """The agent's routes (of 'ip -j route show table all proto
    RT_PROTO'), its rules (those of 'ip -j rule show' whose protocol is
    RT_PROTO) and every link's state ('ip -j link show')."""
    k = Kernel()
    for r in routes:
        if "protocol" in r and not _ours(r["protocol"]):
            continue
        if r.get("dst") in (None, "default") or "dev" not in r:
            # Not one of the agent's (which have a prefix and a device);
            # deleted by table and prefix all the same.
            dst = "0.0.0.0/0" if r.get("dst") == "default" else r.get("dst")
            if dst is None:
                continue
            k.routes.append(Route(_table(r.get("table")), _prefix(dst), ""))
            continue
        k.routes.append(Route(_table(r.get("table")), _prefix(r["dst"]),
                              r["dev"]))
    for r in rules:
        if not _ours(r.get("protocol")):
            continue
        k.rules.append(Rule(
            int(r.get("priority", 0)),
            _rule_prefix(r.get("src"), r.get("srclen")),
            _rule_prefix(r.get("dst"), r.get("dstlen")),
            _IPPROTOS.get(r.get("ipproto"), r.get("ipproto")),
            r.get("sport"), r.get("dport"),
            _table(r.get("table"))))
    for lk in links:
        if "ifname" in lk:
            k.links[lk["ifname"]] = link_state(lk)
    return k


def batch(current: Kernel, want: HostNet) -> List[str]:
    """The 'ip -batch' lines that bring 'current' to 'want': routes
    replaced (atomic: a route that changes its device never goes), new
    rules added before the old ones go (a DCM that moves is steered by
    one or the other throughout), then the rules and routes no longer
    wanted deleted.  [] when nothing differs."""
    have: Dict[Tuple[int, str], List[Route]] = {}
    for r in current.routes:
        have.setdefault(r.key(), []).append(r)
    wanted = {r.key(): r for r in want.routes}
    lines = [r.line("replace") for k, r in sorted(wanted.items())
             if [x.dev for x in have.get(k, [])] != [r.dev]]
    cur_rules = set(current.rules)
    lines += [r.line("add") for r in sorted(want.rules - cur_rules,
                                            key=Rule.order)]
    lines += [r.line("del") for r in sorted(cur_rules - want.rules,
                                            key=Rule.order)]
    # A duplicate of a wanted rule (someone added it by hand again).
    seen: Set[Rule] = set()
    for r in current.rules:
        if r in seen:
            lines.append(r.line("del"))
        seen.add(r)
    for k, rs in sorted(have.items()):
        extra = rs if k not in wanted else rs[1:] if len(rs) > 1 else []
        lines += [r.line("del") for r in extra]
    return lines


Runner = Callable[[List[str], str], Tuple[int, str, str]]


def read_kernel(run: Runner) -> Kernel:
    """What the host holds now, with one 'ip' (run(argv, stdin) ->
    (status, stdout, stderr)); OSError if it cannot be read."""
    status, out, err = run(["ip", "-N", "-j", "-batch", "-"], READ_BATCH)
    if status != 0:
        raise OSError("ip: %s" % (err.strip() or "exit status %d" % status))
    try:
        arrays = json_arrays(out)
        routes, rules, links = arrays
    except ValueError as e:
        raise OSError("ip: unexpected output (%s)" % e) from None
    return parse_kernel(routes, rules, links)


def apply_batch(run: Runner, lines: Iterable[str]) -> Optional[str]:
    """Runs 'lines' in one 'ip -force -batch -' (each line tried, the
    failures said): None if all succeeded, else ip's messages."""
    text = "".join(line + "\n" for line in lines)
    status, out, err = run(["ip", "-force", "-batch", "-"], text)
    if status == 0:
        return None
    msg = " ".join((err or out).split())
    return "ip -batch: %s" % (msg or "exit status %d" % status)


def host_monitored(host: str, hosts: Iterable[Any], dcms: Iterable[Any],
                   _assigned: Iterable[Assignment]) -> Dict[str, List[Any]]:
    """The conditions on the DCM and Assignment tables of host 'host's
    agent (FabricDb.watch_slice()): a ROS host steers every DCM (all of
    both); an HLT host its own DCMs (by host) and their assignments (by
    DCM).  Nothing until the IDL holds the host."""
    h = next((x for x in hosts if x.name == host), None)
    if h is None:
        return {"DCM": [], "Assignment": []}
    if h.role == "ros":
        return {"DCM": [True], "Assignment": [True]}
    return {"DCM": [["host", "==", host]],
            "Assignment": [["dcm", "==", n] for n in
                           sorted({d.name for d in dcms
                                   if d.host == host})]}
