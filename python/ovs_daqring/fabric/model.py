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


"""The fabric model: switches, links, hosts, DCMs, and the planner's
assignments of DCMs to paths (a plane and a spine)."""

from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Set, Tuple

from ..daqctl.model import Dcm

ROLES = ("leaf", "spine")
HOST_ROLES = ("ros", "hlt")
PLANE_MAX = 63
POD_MAX = 4095
HOLD_DOWN_DEFAULT = 30          # seconds before a DCM moves back home
HOLD_DOWN_MAX = 86400
# BFD on the fabric's links (Interface:bfd of every link port, set by the
# agents): the keys a map may give, their OVS names, range and default.
BFD_KEYS = {"min_rx": ("min_rx", 1, 60000, 100),
            "min_tx": ("min_tx", 1, 60000, 100),
            "mult": ("mult", 1, 255, 3)}

# A path through the fabric: (plane, spine switch name).
Path = Tuple[int, str]


@dataclass(frozen=True)
class FabricSwitch:
    name: str
    role: str                   # "leaf" or "spine"
    plane: int
    pod: int = 0
    dpdk: bool = False
    db: Optional[str] = None    # its own OVSDB remote (for its agent)
    bridge: str = "br0"
    of: Optional[str] = None
    where: str = ""


@dataclass(frozen=True)
class FabricLink:
    """A cable between two switch ports (a leaf and a spine)."""
    a_switch: str
    a_port: str
    b_switch: str
    b_port: str
    where: str = ""

    @property
    def name(self) -> str:
        return "%s:%s-%s:%s" % (self.a_switch, self.a_port, self.b_switch,
                                self.b_port)

    def port_of(self, switch: str) -> Optional[str]:
        if switch == self.a_switch:
            return self.a_port
        if switch == self.b_switch:
            return self.b_port
        return None

    def joins(self, s1: str, s2: str) -> bool:
        return {self.a_switch, self.b_switch} == {s1, s2}


@dataclass(frozen=True)
class FabricHost:
    """A ROS or HLT host and, per plane, the leaf port it is cabled to
    and the MAC of its interface there: the leaf, the last hop, sets it
    as the destination of what it sends the host (the hosts do no ARP,
    thesis section 6.2.3)."""
    name: str
    role: str                             # "ros" or "hlt"
    attachments: Tuple[Tuple[int, str, str], ...]   # (plane, leaf, port)
    ip: Optional[str] = None
    pod: int = 0
    where: str = ""
    macs: Tuple[Tuple[int, str], ...] = ()          # (plane, MAC)

    def leaf(self, plane: int) -> Optional[Tuple[str, str]]:
        for p, leaf, port in self.attachments:
            if p == plane:
                return leaf, port
        return None

    def mac(self, plane: int) -> Optional[str]:
        """Its interface's MAC in 'plane', None if the map gives none
        (the destination MAC is then left as the sender set it)."""
        for p, m in self.macs:
            if p == plane:
                return m
        return None

    def planes(self) -> List[int]:
        return sorted(p for p, _, _ in self.attachments)


def switch_ring(ring: str, bridge: str) -> str:
    """The name of a DCM's ring RING on a switch that shares its OVSDB
    with other switches of the fabric (FabricState.sharing_db()): they
    are bridges of one ovs-vswitchd, where port names are unique, and a
    DCM has a ring on its host's leaf in every plane.  RING.BRIDGE, the
    switch's bridge (unique in its ovs-vswitchd, and short: OpenFlow
    shows 15 characters of a port's name).  The map refuses a name that
    collides or is not a port name."""
    return "%s.%s" % (ring, bridge)


def host_egress(host: str) -> str:
    """The egress of the DCMs of 'host' until slice.py binds each of
    their rings to the host's port on its leaf: one per host, and no
    port's name (a port name has no ':')."""
    return "host:" + host


@dataclass(frozen=True)
class FabricDcm:
    """A DCM on a host.  Its egress is the host's port on the leaf of
    each plane (it has a ring on each, slice.py), whose name another
    host's port on another leaf may have: its Dcm's 'egress' is only
    host_egress(host), whatever it was given, so that whatever groups
    DCMs by egress before slice.py groups them by host."""
    dcm: Dcm
    host: str

    def __post_init__(self) -> None:
        egress = host_egress(self.host)
        if self.dcm.egress != egress:
            # A copy: a Dcm is not frozen, and may be the caller's.
            object.__setattr__(self, "dcm", replace(self.dcm,
                                                    egress=egress))

    @property
    def name(self) -> str:
        return self.dcm.name


@dataclass
class FabricState:
    """The desired state of the whole fabric, as a map gives it."""
    switches: List[FabricSwitch] = field(default_factory=list)
    links: List[FabricLink] = field(default_factory=list)
    hosts: List[FabricHost] = field(default_factory=list)
    dcms: List[FabricDcm] = field(default_factory=list)
    hold_down: int = HOLD_DOWN_DEFAULT
    # Interface:bfd of every link port ({} = BFD off), OVS's keys.
    bfd: Dict[str, str] = field(default_factory=dict)

    def switch(self, name: str) -> Optional[FabricSwitch]:
        return next((s for s in self.switches if s.name == name), None)

    def host(self, name: str) -> Optional[FabricHost]:
        return next((h for h in self.hosts if h.name == name), None)

    def sharing_db(self) -> Set[str]:
        """The switches whose OVSDB (the map's 'db') another switch
        names too: bridges of one ovs-vswitchd (one server as the leaf
        of several planes, or the emulator's one PMD core), whose rings
        are named by switch_ring()."""
        by: Dict[str, List[str]] = {}
        for s in self.switches:
            if s.db:
                by.setdefault(s.db, []).append(s.name)
        return {n for v in by.values() if len(v) > 1 for n in v}

    def spines(self) -> Dict[int, List[str]]:
        """Spine names per plane, sorted."""
        out: Dict[int, List[str]] = {}
        for s in self.switches:
            if s.role == "spine":
                out.setdefault(s.plane, []).append(s.name)
        return {p: sorted(v) for p, v in sorted(out.items())}


@dataclass(frozen=True)
class Assignment:
    """Where the planner put a DCM: all its flows take 'plane' and
    'spine'.  'home' is the path it was moved away from on a failure (it
    moves back there after the hold-down), None if it is at home."""
    dcm: str
    plane: int
    spine: str
    epoch: int = 0
    generation: int = 0
    home: Optional[Path] = None
    moved_at: int = 0               # ms, when it last moved
    reason: str = ""

    @property
    def path(self) -> Path:
        return (self.plane, self.spine)

    def key(self) -> Tuple[object, ...]:
        """What the database must hold for this assignment (the epoch and
        generation of the planner that wrote it aside)."""
        return (self.dcm, self.plane, self.spine, self.home, self.moved_at,
                self.reason)
