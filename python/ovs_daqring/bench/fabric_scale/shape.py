# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The fabric that daq-bench --fabric builds: its shape (Shape: planes,
spines, ROS and HLT leaves, hosts, DCMs) and its fabric map (YAML)."""

from dataclasses import dataclass
from typing import Dict, List, Optional


@dataclass
class Shape:
    """The fabric: per plane 'spines' spines, 'ros_leaves' ROS leaves (each
    with 'ros' ROS hosts) and 'leaves' HLT leaves (each with 'hosts' HLT
    hosts); every host is cabled to its leaf in every plane; 'dcms' DCMs
    spread round-robin over the HLT hosts."""
    planes: int = 2
    spines: int = 2
    ros_leaves: int = 1
    leaves: int = 13
    hosts: int = 4
    ros: int = 4
    dcms: int = 2048
    ring_size: int = 1024

    def n_switches(self) -> int:
        return self.planes * (self.spines + self.ros_leaves + self.leaves)

    def text(self) -> str:
        return ("%d planes x (%d spines + %d ROS leaves + %d HLT leaves) = "
                "%d switches, %d HLT hosts x %d planes, %d ROS hosts, "
                "%d DCMs (ring-size %d)"
                % (self.planes, self.spines, self.ros_leaves, self.leaves,
                   self.n_switches(), self.leaves * self.hosts, self.planes,
                   self.ros_leaves * self.ros, self.dcms, self.ring_size))


def check_shape(s: Shape) -> Optional[str]:
    """Why the shape cannot be built, or None."""
    for k, lo, hi in (("planes", 1, 8), ("spines", 1, 16),
                      ("ros_leaves", 1, 16), ("leaves", 1, 64),
                      ("hosts", 1, 64), ("ros", 1, 64),
                      ("dcms", 1, 65000), ("ring_size", 1, 1048576)):
        v = getattr(s, k)
        if not lo <= v <= hi:
            return "--fabric-%s %d: must be within %d..%d" % (
                k.replace("_", "-"), v, lo, hi)
    if s.leaves * s.hosts > 250:
        return ("--fabric-leaves x --fabric-hosts: at most 250 HLT hosts "
                "(one address each in 10.1.0.0/16, 250 per leaf)")
    return None


def leaf_names(s: Shape, plane: int) -> List[str]:
    return (["p%d-ros%d" % (plane, r) for r in range(1, s.ros_leaves + 1)]
            + ["p%d-leaf%d" % (plane, k) for k in range(1, s.leaves + 1)])


def _macs(s: Shape, kind: int, leaf: int, i: int) -> str:
    """A host's 'macs' (the last hop sets them, as on real nodes): a
    locally administered MAC per plane, unique in the fabric."""
    return ", ".join('%d: "02:%02x:%02x:%02x:%02x:%02x"'
                     % (p, kind << 6 | p, leaf >> 8 & 0xff, leaf & 0xff,
                        i >> 8 & 0xff, i & 0xff)
                     for p in range(s.planes))


def map_text(s: Shape, dcms: Optional[int] = None,
             db: Optional[Dict[str, str]] = None) -> str:
    """The fabric map (YAML) of shape 's' with 'dcms' DCMs (default
    s.dcms); 'db' gives switches their own OVSDB remotes."""
    n_dcms = s.dcms if dcms is None else dcms
    out = ["# daq-bench --fabric: %s" % s.text(), "fabric:",
           "  hold_down: 30", "  switches:"]
    links = []
    for p in range(s.planes):
        for k in range(1, s.spines + 1):
            out.append(_switch("p%d-spine%d" % (p, k), "spine", p, False,
                               db))
        for i, leaf in enumerate(leaf_names(s, p)):
            out.append(_switch(leaf, "leaf", p, "-leaf" in leaf, db))
            for k in range(1, s.spines + 1):
                links.append('    - {a: "%s:up%d", b: "p%d-spine%d:d%d"}'
                             % (leaf, k, p, k, i + 1))
    out += ["  links:"] + links + ["  hosts:"]
    for r in range(1, s.ros_leaves + 1):
        for i in range(1, s.ros + 1):
            ports = ", ".join('%d: "p%d-ros%d:r%d"' % (p, p, r, i)
                              for p in range(s.planes))
            out.append("    - {name: ros%d-%d, role: ros, ip: 10.0.%d.%d, "
                       "ports: {%s}, macs: {%s}}"
                       % (r, i, r, i, ports, _macs(s, 0, r, i)))
    hlt = []
    for k in range(1, s.leaves + 1):
        for i in range(1, s.hosts + 1):
            name, ip = "hlt%d-%d" % (k, i), "10.1.%d.%d" % (k, i)
            ports = ", ".join('%d: "p%d-leaf%d:h%d"' % (p, p, k, i)
                              for p in range(s.planes))
            out.append("    - {name: %s, role: hlt, ip: %s, ports: {%s}, "
                       "macs: {%s}}" % (name, ip, ports, _macs(s, 1, k, i)))
            hlt.append((name, ip))
    out += ["defaults:", "  ring-size: %d" % s.ring_size, "  rate: 1gbit",
            "  steering: bound", "dcms:"]
    for n in range(n_dcms):
        host, ip = hlt[n % len(hlt)]
        out.append('  - {name: dcm%04d, host: %s, tuples: ["*:*->%s:%d"]}'
                   % (n, host, ip, 10000 + n))
    return "\n".join(out) + "\n"


def _switch(name: str, role: str, plane: int, dpdk: bool,
            db: Optional[Dict[str, str]]) -> str:
    extra = ", dpdk: true" if dpdk else ""
    if db and name in db:
        extra += ', db: "%s"' % db[name]
    return "    - {name: %s, role: %s, plane: %d%s}" % (
        name, role, plane, extra)
