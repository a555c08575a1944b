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


"""A switch's slice in the switch's own terms, the role of OVN's lflow.c
for ovn-controller: the slice (fabric/slice.py) as JSON, the form an
agent applies, keeps on the disk and compares, and its routes as the
OpenFlow table of the reconcile core (Reconciler.routes: a cookie per
route, its matches, priority, ports and MAC).  The switch agent
(fabric/agent.py) and daq-bench's fabric part use it."""

import functools
from dataclasses import fields
from typing import Any, Dict, List, Tuple

from ..daqctl.mapfile import parse_tuple
from ..daqctl.model import Dcm, dcm_cookie
from ..daqctl.flowsync import Routes
from ..daqctl.openflow import BOUNCE_VID, BOUNCED_MAC, port_name
from .slice import (BOUNCED, FROM, PRIO_ROUTE, REBOUNCED, Slice,
                    route_key)

# Dcm's fields but 'where' (a message's location, not the DCM's).
_DCM_FIELDS = tuple(f.name for f in fields(Dcm) if f.name != "where")


def dcm_json(d: Dcm) -> Dict[str, Any]:
    """A Dcm as JSON: its fields (plain values, but 'tuples'), by hand
    rather than dataclasses.asdict(), which copies each four-tuple deep
    (160 rings of an HLT leaf: a tenth of a second of a shared core at
    every new slice)."""
    j = {k: getattr(d, k) for k in _DCM_FIELDS}
    j["tuples"] = [t.canonical() for t in d.tuples]
    return j


def dcm_of_json(j: Dict[str, Any]) -> Dcm:
    j = dict(j)
    j["tuples"] = tuple(parse_tuple(t) for t in j.get("tuples", []))
    return Dcm(where="fabric slice", **j)


def slice_json(sl: Slice) -> Dict[str, Any]:
    return {"rings": [dcm_json(d) for d in sl.rings],
            "routes": [{"dcm": r.dcm, "match": r.match, "port": r.port,
                        "backups": list(r.backups),
                        "priority": r.priority, "host": r.host,
                        "dl_dst": r.dl_dst}
                       for r in sl.routes]}


def route_ports(r: Dict[str, Any]) -> Tuple[str, ...]:
    """The names of a route's ports, primary first (a slice kept by an
    agent of before the backups has none; a route that drops has
    none)."""
    return tuple(port_name(p) for p in _route_ports(r))


def _route_ports(r: Dict[str, Any]) -> Tuple[str, ...]:
    """A route's ports as the reconcile core takes them (with their
    actions: openflow.port_actions())."""
    return tuple(p for p in (r["port"],) + tuple(r.get("backups", []))
                 if p)


def _reversed(m: List[str]) -> List[str]:
    """A four-tuple's match the other way round (its replies)."""
    swap = {"nw_src": "nw_dst", "nw_dst": "nw_src", "tp_src": "tp_dst",
            "tp_dst": "tp_src"}
    out = [m[0]]
    for f in m[1:]:
        k, _, v = f.partition("=")
        out.append("%s=%s" % (swap.get(k, k), v))
    return out


def route_matches(match: str) -> List[List[str]]:
    """The OpenFlow matches of a route's match text: "ip:ADDR[/LEN]",
    a DCM's (Dcm.match_text()), FROM and a DCM's (what the DCM sends),
    or BOUNCED or REBOUNCED and a port (what a spine bounced to this
    leaf through that port: tagged, and the second time marked)."""
    return [list(m) for m in _route_matches(match)]


@functools.lru_cache(maxsize=1 << 16)
def _route_matches(match: str) -> Tuple[Tuple[str, ...], ...]:
    """route_matches(), kept: a ROS leaf's slice has a route per DCM, and
    every new slice (a DCM added, one moved) would parse every DCM's
    four-tuples again."""
    if match.startswith(BOUNCED):
        return (("in_port=" + match[len(BOUNCED):],
                 "dl_vlan=%d" % BOUNCE_VID),)
    if match.startswith(REBOUNCED):
        return (("in_port=" + match[len(REBOUNCED):],
                 "dl_vlan=%d" % BOUNCE_VID, "dl_src=" + BOUNCED_MAC),)
    if match.startswith(FROM):
        inner = match[len(FROM):]
        if inner.startswith("ip:"):
            return (("ip", "nw_src=%s" % inner[3:]),)
        return tuple(tuple(_reversed(parse_tuple(t).match()))
                     for t in inner.split())
    if match.startswith("ip:"):
        return (("ip", "nw_dst=%s" % match[3:]),)
    return tuple(tuple(parse_tuple(t).match()) for t in match.split())


def route_table(routes: List[Dict[str, Any]]) -> Routes:
    """Reconciler.routes for a slice's routes: one cookie per DCM routed
    (not its ring's cookie) and one per ROS host, its matches at the
    route's priority out of the route's port, or of the first live one of
    its ports (a fast_failover group) if it has backups, after setting
    the route's destination MAC if it has one; no port: a drop.  A
    detour's flows from one uplink share a cookie.  A slice kept by an older
    agent has no priorities (PRIO_ROUTE), no backups and no MACs."""
    out: Routes = {}
    for r in routes:
        key = route_key(r["dcm"], r.get("host", ""), r["match"])
        c = dcm_cookie("route/" + key)
        prio = int(r.get("priority", PRIO_ROUTE))
        ports = _route_ports(r)
        mac = r.get("dl_dst") or ""
        out.setdefault(c, []).extend((prio, m, ports, mac)
                                     for m in route_matches(r["match"]))
    return out
