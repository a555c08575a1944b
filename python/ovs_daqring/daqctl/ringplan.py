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

"""The plan of a switch's daqrings: what to create, update, adopt and
remove for it to hold a list of DCMs (Plan, plan_rings()), from its
OVSDB replica, with each ring as it was (RingState: what a rollback
restores), and how a DCM's daqring is configured and described."""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .model import (DaqctlError, Dcm, EXT_DCM, MapError, Problem,
                    RING_OPTIONS, SwitchSpec)
from .idlutil import opt
from .ovsdb import Ovsdb, Ring


@dataclass
class RingState:
    """What a daqring was before a change: what a rollback restores."""
    port_ids: Dict[str, str]
    iface_name: str
    iface_type: str
    options: Dict[str, str]
    ofport_request: List[int]
    managed: bool
    # The OpenFlow port it had (not configuration: ovs-vswitchd's choice).
    ofport: Optional[int] = None

    @staticmethod
    def of(r: Ring) -> "RingState":
        return RingState(dict(r.port.external_ids), r.iface.name,
                         r.iface.type, dict(r.iface.options),
                         list(r.iface.ofport_request), r.dcm is not None,
                         opt(r.iface.ofport))

    @staticmethod
    def of_port(port: Any) -> Optional["RingState"]:
        """A port's state, or None if it has no single interface."""
        ifaces = list(port.interfaces)
        if len(ifaces) != 1:
            return None
        i = ifaces[0]
        return RingState(dict(port.external_ids), i.name, i.type,
                         dict(i.options), list(i.ofport_request),
                         EXT_DCM in port.external_ids, opt(i.ofport))

    def config(self) -> Tuple[Any, ...]:
        """What a client configures (what a rollback compares)."""
        return (self.port_ids, self.iface_name, self.iface_type,
                self.options, self.ofport_request)


@dataclass
class Plan:
    create: List[Dcm] = field(default_factory=list)
    update: List[Tuple[Ring, Dcm]] = field(default_factory=list)
    delete: List[Ring] = field(default_factory=list)
    adopt: List[str] = field(default_factory=list)
    # status:config_error of the updated rings before the change.
    old_errors: Dict[str, Optional[str]] = field(default_factory=dict)
    # Each ring the plan touches, as it was (None: the plan creates it).
    before: Dict[str, Optional[RingState]] = field(default_factory=dict)
    # ... and as the committed transaction made it (None: removed).
    after: Dict[str, Optional[RingState]] = field(default_factory=dict)

    def empty(self) -> bool:
        return not (self.create or self.update or self.delete)

    def summary(self) -> Dict[str, List[str]]:
        return {"create": [d.name for d in self.create],
                "update": [d.name for r, d in self.update
                           if r.dcm is not None],
                "adopt": [d.name for r, d in self.update if r.dcm is None],
                "remove": [r.dcm.name if r.dcm else str(r.port.name)
                           for r in self.delete]}


def plan_rings(db: Ovsdb, spec: SwitchSpec, dcms: List[Dcm]) -> Plan:
    """What to change on switch 'spec' (its OVSDB 'db'), from the IDL's
    current replica.  Rings are matched by port name: a daqring of the
    wanted name is updated (or adopted, if no ovs-daqctl made it), a
    missing one is created, and a managed one that no DCM wants is
    removed.  Raises MapError for what the switch refuses (unknown
    egress ports, names or ofports taken by other ports)."""
    if "daqring" not in db.iface_types():
        raise DaqctlError("switch %s: ovs-vswitchd does not support "
                          "type=daqring (is it the ovs-daqring build, "
                          "with other_config:dpdk-init=true?)"
                          % spec.name)
    br = db.bridge(spec.bridge)
    ports = db.ports(br)
    rings = {r.port.name: r for r in db.rings(br)}
    all_names = db.all_iface_names()
    wanted = {d.ring for d in dcms}
    plan = Plan()
    for r in rings.values():
        if r.dcm is not None and r.port.name not in wanted:
            plan.delete.append(r)
    going = {r.port.name for r in plan.delete}
    ofports: Dict[int, str] = {}
    for p in ports.values():
        for i in p.interfaces:
            for o in (opt(i.ofport), opt(i.ofport_request)):
                if o is not None and o > 0 and p.name not in going:
                    ofports.setdefault(o, p.name)
    problems: List[Problem] = []

    def bad(d: Dcm, reason: str) -> None:
        problems.append(Problem(d.where or spec.where,
                                "DCM %s: %s" % (d.name, reason)))

    for d in dcms:
        eg = ports.get(d.egress)
        if eg is None or d.egress in going:
            bad(d, "egress port %s is not on bridge %s (it has: %s)"
                % (d.egress, spec.bridge,
                   ", ".join(sorted(n for n in ports
                                    if n not in rings)) or "no ports"))
        elif len(eg.interfaces) != 1:
            bad(d, "egress %s is a bond; give one of its interfaces"
                % d.egress)
        if d.ofport is not None and ofports.get(d.ofport) not in (
                None, d.ring):
            bad(d, "ofport %d is taken by %s" % (d.ofport,
                                                 ofports[d.ofport]))
        found = rings.get(d.ring)
        if found is None:
            if d.ring in all_names:
                bad(d, "a port or interface named %s exists and is not "
                    "a daqring of bridge %s" % (d.ring,
                                                spec.bridge))
            else:
                plan.create.append(d)
        elif found.dcm is None:
            plan.update.append((found, d))
            plan.adopt.append(d.ring)
        elif found.dcm.key() != d.key():
            plan.update.append((found, d))
    if problems:
        raise MapError(problems)
    for r, d in plan.update:
        plan.old_errors[d.ring] = r.iface.status.get("config_error")
        plan.before[d.ring] = RingState.of(r)
    for r in plan.delete:
        plan.before[r.port.name] = RingState.of(r)
    for d in plan.create:
        plan.before[d.ring] = None
    return plan


def ring_options(current: Dict[str, str], d: Dcm) -> Dict[str, str]:
    """The Interface options of DCM 'd''s daqring, whose options are
    'current': d's, and those of 'current' that ovs-daqctl does not own
    (RING_OPTIONS); an option that d no longer sets is removed."""
    opts = {k: v for k, v in current.items() if k not in RING_OPTIONS}
    opts.update(d.options())
    return opts


def describe_update(old: Optional[Dcm], new: Dcm) -> str:
    if old is None:
        return "existing daqring %s, %s" % (new.ring, new.shaping_text())
    diffs = []
    for attr, label in (("ring_size", "ring-size"), ("max_burst",
                                                     "max-burst"),
                        ("poll_interval", "poll-interval"),
                        ("max_rate", "max-rate"),
                        ("max_burst_bytes", "max-burst-bytes"),
                        ("egress_max_rate", "egress-max-rate"),
                        ("egress_max_burst_bytes", "egress-max-burst-bytes"),
                        ("frame_overhead", "frame-overhead"),
                        ("numa_id", "numa-id"),
                        ("flow_buckets", "flow-buckets"), ("egress", "egress"),
                        ("ofport", "ofport"), ("rate", "rate"),
                        ("ring", "ring"), ("dl_dst", "dl-dst")):
        a, b = getattr(old, attr), getattr(new, attr)
        if a != b:
            diffs.append("%s %s -> %s" % (label, a, b))
    if old.match_text() != new.match_text():
        diffs.append("match %s -> %s" % (old.match_summary(),
                                         new.match_summary()))
    return ", ".join(diffs) or "marks"
