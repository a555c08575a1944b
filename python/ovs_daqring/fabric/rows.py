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


"""The fabric database's rows as the fabric model (fabric/model.py)
and back: a row of each table as its model object, a DCM's columns from
its model, and column values in one canonical form, in which
FabricDb.apply() (fabric/db.py) compares what the model wants with what
the rows hold to write only the rows that differ.

Rows are input: whoever can write to the fabric database writes them,
and their values end up in the switches' flows, in ovs-ofctl's command
lines and in the hosts' routes.  Each row is checked as the map reader
checks a map (daqctl/mapfile.py, fabric/fabmap.py, daqctl/dcmmap.py's
build_dcm()), and its model holds the values those checks give (an
address as ipaddress writes it, a MAC in lower case); a row that fails
raises ValueError naming its table, its row and the field, which
FabricDb leaves out of the state."""

from dataclasses import replace
from typing import Any, Callable, Dict, List, Tuple

from ..daqctl.dcmmap import build_dcm
from ..daqctl.idlutil import opt
from ..daqctl.mapfile import int_value, port_name
from ..daqctl.model import Dcm, Problem
from .fabmap import (endpoint, host_address, node_name, switch_target,
                     unicast_mac)
from .model import (BFD_KEYS, HOST_ROLES, PLANE_MAX, POD_MAX, ROLES,
                    Assignment, FabricDcm, FabricHost, FabricLink,
                    FabricSwitch, host_egress)

# A DCM row's columns that a map may leave out: build_dcm() takes them
# when they are not "none" (an optional column's [], an integer's 0).
_DCM_OPTIONAL = ("frame_overhead", "numa_id", "ofport")
_DCM_NONZERO = ("max_burst_bytes", "egress_max_rate",
                "egress_max_burst_bytes")


def optional(v: Any) -> List[Any]:
    """'v' as an optional column's value: [] for None, else [v] (the
    reverse of idlutil.opt())."""
    return [] if v is None else [v]


def _checked(label: str, check: Callable[..., Any], *args: Any) -> Any:
    """check(*args), its ValueError prefixed with 'label' (the row)."""
    try:
        return check(*args)
    except ValueError as e:
        raise ValueError("%s: %s" % (label, e)) from None


def _label(table: str, name: Any) -> str:
    """A row in messages: "switch sw1"; a name that is not one as its
    repr (nothing of a row's value reaches a log line as it is)."""
    try:
        return "%s %s" % (table, node_name(name, table))
    except ValueError:
        return "%s %r" % (table, name)


def _one_of(v: Any, choices: Tuple[str, ...], what: str) -> str:
    if v not in choices:
        raise ValueError("%s %r: %s" % (what, v, " or ".join(choices)))
    return str(v)


def _plane(v: Any) -> int:
    return int_value(v, "plane", 0, PLANE_MAX)


def switch_of_row(s: Any) -> FabricSwitch:
    """A Switch row as the model's switch (ValueError if it is bad)."""
    label = _label("switch", s.name)
    name = _checked(label, node_name, s.name, "switch")
    if not isinstance(s.dpdk, bool):
        raise ValueError("%s: dpdk %r is not true or false" % (label,
                                                               s.dpdk))
    return FabricSwitch(
        name=name, role=_checked(label, _one_of, s.role, ROLES, "role"),
        plane=_checked(label, _plane, s.plane),
        pod=_checked(label, int_value, s.pod, "pod", 0, POD_MAX),
        dpdk=s.dpdk, db=_checked(label, switch_target, opt(s.db), "db"),
        # (An empty one is the agents' default, as the map's.)
        bridge=_checked(label, switch_target, s.bridge or "br0", "bridge"),
        of=_checked(label, switch_target, opt(s.of), "of"),
        where="switch %s" % name)


def link_of_row(lk: Any) -> FabricLink:
    """A Link row as the model's link (ValueError if it is bad)."""
    label = "link %r" % (lk.name,)
    ends = []
    for sw, port, end in ((lk.a_switch, lk.a_port, "a"),
                          (lk.b_switch, lk.b_port, "b")):
        ends.append(_checked(label, node_name, sw, "%s_switch" % end))
        ends.append(_checked(label, port_name, port, "%s_port" % end))
    link = FabricLink(*ends)
    return replace(link, where="link " + link.name)


def host_of_row(h: Any) -> FabricHost:
    """A Host row as the model's host (ValueError if it is bad)."""
    label = _label("host", h.name)
    name = _checked(label, node_name, h.name, "host")
    role = _checked(label, _one_of, h.role, HOST_ROLES, "role")
    ip = opt(h.ip)
    atts = []
    for plane, ep in sorted(h.attachments.items(), key=str):
        p = _checked("%s: attachments" % label, _plane, plane)
        leaf, port = _checked("%s: plane %d" % (label, p), endpoint, ep)
        _checked("%s: plane %d" % (label, p), node_name, leaf, "leaf")
        atts.append((p, leaf, port))
    macs = []
    for plane, mac in sorted(h.macs.items(), key=str):
        p = _checked("%s: macs" % label, _plane, plane)
        macs.append((p, _checked("%s, plane %d" % (label, p), unicast_mac,
                                 mac)))
    return FabricHost(
        name=name, role=role, attachments=tuple(sorted(atts)),
        ip=None if ip is None else _checked(label, host_address, ip, role),
        pod=_checked(label, int_value, h.pod, "pod", 0, POD_MAX),
        where="host %s" % name, macs=tuple(sorted(macs)))


def dcm_of_row(d: Any) -> FabricDcm:
    """A DCM row as the model's DCM, its egress towards its host
    (ValueError if it is bad)."""
    host = _checked(_label("DCM", d.name), node_name, d.host, "host")
    return FabricDcm(dcm=dcm_from_fabric_row(d, host_egress(host)),
                     host=host)


def assignment_of_row(a: Any) -> Assignment:
    """An Assignment row as the planner's assignment.  The planner's own:
    its strings are only compared with switches' names (a spine that is
    none makes the DCM's path one that is not in the fabric, which the
    planner replaces)."""
    hp, hs = opt(a.home_plane), opt(a.home_spine)
    return Assignment(
        a.dcm, a.plane, a.spine, a.epoch, a.generation,
        (hp, hs) if hp is not None and hs is not None else None,
        a.moved_at, a.reason)


def fabric_bfd(bfd: Dict[Any, Any]) -> Dict[str, str]:
    """The Fabric row's bfd (Interface:bfd of every link port): "enable"
    and BFD_KEYS' keys, with integers in their ranges, as the map gives
    them (ValueError naming the key otherwise)."""
    if not bfd:
        return {}
    limits = {ovs_key: (lo, hi) for ovs_key, lo, hi, _ in BFD_KEYS.values()}
    out = {}
    for k, v in sorted(bfd.items(), key=str):
        if k == "enable" and v == "true":
            out[k] = v
        elif k not in limits:
            raise ValueError("Fabric: bfd: %r=%r is not one of enable=true, "
                             "%s" % (k, v, ", ".join(sorted(limits))))
        else:
            out[k] = str(_checked("Fabric: bfd", int_value, v, k,
                                  *limits[k]))
    if out.get("enable") != "true":
        raise ValueError("Fabric: bfd %r has no enable=true" % (bfd,))
    return out


def dcm_columns(d: FabricDcm) -> Dict[str, Any]:
    """A DCM row's columns (but its name) from the model's DCM."""
    m = d.dcm
    return {"host": d.host, "ring": m.ring, "ip": optional(m.ip),
            "tuples": sorted(t.canonical() for t in m.tuples),
            "ring_size": m.ring_size, "max_burst": m.max_burst,
            "poll_interval": m.poll_interval, "max_rate": m.max_rate,
            "rate": optional(m.rate),
            "frame_overhead": optional(m.frame_overhead),
            "max_burst_bytes": m.max_burst_bytes,
            "egress_max_rate": m.egress_max_rate,
            "egress_max_burst_bytes": m.egress_max_burst_bytes,
            "numa_id": optional(m.numa_id), "flow_buckets": m.flow_buckets,
            "ofport": optional(m.ofport), "steering": m.steering}


def dcm_from_fabric_row(r: Any, egress: str) -> Dcm:
    """The Dcm of a DCM row, with 'egress' (the port towards its host),
    checked as build_dcm() checks a map's DCM: ValueError (the row's
    problems) if it is bad."""
    values: Dict[str, Any] = {
        "name": r.name, "ring": r.ring, "ring_size": r.ring_size,
        "max_burst": r.max_burst, "flow_buckets": r.flow_buckets,
        "steering": r.steering, "egress": "unassigned"}
    for k in _DCM_OPTIONAL:
        v = opt(getattr(r, k))
        if v is not None:
            values[k] = v
    for k in _DCM_NONZERO:
        if getattr(r, k):
            values[k] = getattr(r, k)
    if opt(r.ip) is not None:
        values["ip"] = opt(r.ip)
    if r.tuples:
        values["tuples"] = sorted(r.tuples)
    rate = opt(r.rate)
    if rate is not None:
        values["rate"] = rate
    if rate is None or r.poll_interval:
        # (A rate's shaping has none: a row with both is refused.)
        values["poll_interval"] = r.poll_interval
    problems: List[Problem] = []
    where = "DCM %s" % r.name
    dcm = build_dcm(values, {}, 0, lambda _line: where, problems, 0.01, [])
    if dcm is None or r.max_rate != dcm.max_rate:
        raise ValueError("; ".join(
            [p.reason if p.reason.startswith("DCM ")
             else "%s: %s" % (_label("DCM", r.name), p.reason)
             for p in problems]
            or ["%s: max_rate %r is not what its rate %r gives (%d)"
                % (_label("DCM", r.name), r.max_rate, rate,
                   dcm.max_rate if dcm else 0)]))
    return replace(dcm, egress=egress)


# The types of the values canon_value() takes as one atom (most
# columns): the first test, a fresh 'fabric apply' compares every column
# of thousands of DCMs.
_SCALARS = (str, int, float, bool)


def canon_value(v: Any) -> Tuple[Any, ...]:
    """A column's value as FabricDb._sync() writes it, canonical: a
    tuple of its atoms, sorted (a map's (key, value) pairs)."""
    if type(v) in _SCALARS:
        return (v,)
    if isinstance(v, dict):
        return tuple(sorted(v.items()))
    if isinstance(v, (list, tuple, set, frozenset)):
        return tuple(sorted(v))
    return (v,)


def canon_datum(d: Any) -> Tuple[Any, ...]:
    """An IDL datum as canon_value() gives the value it holds (no sort
    for one atom, most columns)."""
    vals = d.values
    if d.type.is_map():
        if len(vals) == 1:
            k, v = next(iter(vals.items()))
            return ((k.value, v.value),)
        return tuple(sorted((k.value, v.value) for k, v in vals.items()))
    if len(vals) == 1:
        return (next(iter(vals)).value,)
    return tuple(sorted(k.value for k in vals))
