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
the rows hold to write only the rows that differ."""

from typing import Any, Dict, List, Tuple

from ..daqctl.idlutil import opt
from ..daqctl.mapfile import parse_tuple
from ..daqctl.model import Dcm
from .model import (Assignment, FabricDcm, FabricHost, FabricLink,
                    FabricSwitch, host_egress)


def optional(v: Any) -> List[Any]:
    """'v' as an optional column's value: [] for None, else [v] (the
    reverse of idlutil.opt())."""
    return [] if v is None else [v]


def switch_of_row(s: Any) -> FabricSwitch:
    """A Switch row as the model's switch."""
    return FabricSwitch(
        name=s.name, role=s.role, plane=s.plane, pod=s.pod,
        dpdk=s.dpdk, db=opt(s.db), bridge=s.bridge, of=opt(s.of),
        where="switch %s" % s.name)


def link_of_row(lk: Any) -> FabricLink:
    """A Link row as the model's link."""
    return FabricLink(lk.a_switch, lk.a_port, lk.b_switch, lk.b_port,
                      where="link " + lk.name)


def host_of_row(h: Any) -> FabricHost:
    """A Host row as the model's host."""
    atts = []
    for plane, ep in sorted(h.attachments.items()):
        leaf, _, port = ep.partition(":")
        atts.append((int(plane), leaf, port))
    return FabricHost(name=h.name, role=h.role, attachments=tuple(atts),
                      ip=opt(h.ip), pod=h.pod, where="host %s" % h.name,
                      macs=tuple(sorted((int(p), m) for p, m
                                        in h.macs.items())))


def dcm_of_row(d: Any) -> FabricDcm:
    """A DCM row as the model's DCM, its egress towards its host."""
    return FabricDcm(dcm=dcm_from_fabric_row(d, host_egress(d.host)),
                     host=d.host)


def assignment_of_row(a: Any) -> Assignment:
    """An Assignment row as the planner's assignment."""
    hp, hs = opt(a.home_plane), opt(a.home_spine)
    return Assignment(
        a.dcm, a.plane, a.spine, a.epoch, a.generation,
        (hp, hs) if hp is not None and hs is not None else None,
        a.moved_at, a.reason)


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
    """The Dcm of a DCM row, with 'egress' (the port towards its host)."""
    return Dcm(name=r.name, ring=r.ring, egress=egress, ip=opt(r.ip),
               tuples=tuple(parse_tuple(t) for t in sorted(r.tuples)),
               ring_size=r.ring_size, max_burst=r.max_burst,
               poll_interval=r.poll_interval, max_rate=r.max_rate,
               frame_overhead=opt(r.frame_overhead),
               max_burst_bytes=r.max_burst_bytes,
               egress_max_rate=r.egress_max_rate,
               egress_max_burst_bytes=r.egress_max_burst_bytes,
               numa_id=opt(r.numa_id), flow_buckets=r.flow_buckets,
               ofport=opt(r.ofport), rate=opt(r.rate),
               steering=r.steering, where="DCM %s" % r.name)


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
