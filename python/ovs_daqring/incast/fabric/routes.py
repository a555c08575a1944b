# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The fabric's routes on its switches: the flows each switch holds
(fabric_flows(), read from ovs-ofctl), those the cabling says it must
hold for the DCMs' assignments (expected_flows()) and the difference
(check_routes()); NORMAL's packets and its flood tree."""

from typing import Any, Dict, List

from ...daqctl.openflow import (BOUNCE_VID, is_ours, parse_flow, parse_group,
                                split_dl_dst)
from ...fabric.slice import spine_order
from .plan import FabricPlan, FabricSwitch, plane_name, ros_host_prefix


def no_flood_ports(plan: FabricPlan) -> Dict[str, List[str]]:
    """Per switch, its ports towards (or of) a spine other than the
    first: NORMAL's tree is the first spine (see basic_connectivity)."""
    out: Dict[str, List[str]] = {}
    first = {plane_name(p, "spine0") for p in range(plan.planes)}
    for leaf, up, spine, down in plan.links:
        if spine not in first:
            out.setdefault(leaf, []).append(up)
            out.setdefault(spine, []).append(down)
    return out


def normal_packets(dump: str) -> int:
    """Packets of the flows with action NORMAL in ovs-ofctl dump-flows
    output DUMP (the switch's default forwarding, not the fabric's)."""
    n = 0
    for line in dump.splitlines():
        if line.rstrip().endswith("actions=NORMAL"):
            for f in line.replace(" ", "").split(","):
                if f.startswith("n_packets="):
                    n += int(f[len("n_packets="):])
    return n


def detour_counts(dump: str) -> Dict[str, int]:
    """The packets of the detours' flows (fabric/slice.py) in ovs-ofctl
    dump-flows output DUMP of a leaf: "bounced" (what the spines bounced
    to it and it sent up again), "rebounced" (bounced a second time:
    dropped)."""
    out = {"bounced": 0, "rebounced": 0}
    for line in dump.splitlines():
        if "dl_vlan=%d" % BOUNCE_VID not in line:
            continue
        n = 0
        for f in line.replace(" ", "").split(","):
            if f.startswith("n_packets="):
                n = int(f[len("n_packets="):])
        out["rebounced" if "dl_src=" in line else "bounced"] += n
    return out


def fabric_flows(fsw: FabricSwitch, dump: str,
                 groups: str = "") -> List[List[str]]:
    """The fabric's flows (cookie 0xdac7...) in ovs-ofctl dump-flows
    --names output DUMP of switch FSW, each as [direction, address,
    port]: "to" ADDRESS (nw_dst) or "from" ADDRESS (nw_src), out of the
    port named PORT (a fabric port, or a daqring; for a fast_failover
    group of GROUPS, dump-groups --names output, its first bucket's
    port: the primary, its backups aside), or "ring" RING for the flow
    that drains a ring into its egress.  A flow that sets the
    destination MAC first (the last hop towards a host: mod_dl_dst, or
    a set_field of eth_dst over OpenFlow 1.2 and later) has that MAC as
    a fourth element."""
    names = {str(p.ofport): p.name for p in fsw.ports}
    primary = {}
    for line in groups.splitlines():
        g = parse_group(line)
        if g is not None and g[1][1]:
            primary["group:%d" % g[0]] = g[1][1][0][0]
    out = []
    for line in dump.splitlines():
        flow = parse_flow(line)
        if flow is None or not is_ours(flow.cookie):
            continue
        fields = flow.fields()
        if fields.get("dl_vlan") == str(BOUNCE_VID):
            # A detour's (fabric/slice.py): no route of a DCM or host.
            continue
        dl_dst, actions = split_dl_dst(flow.actions)
        mac = [dl_dst] if dl_dst else []
        port = primary.get(actions, actions)
        port = (port[len("output:"):] if port.startswith("output:")
                else port).strip('"')
        if "in_port" in fields:
            # A ring's drain (two-rule mode): out of its host's port.
            out.append(["ring", fields["in_port"].strip('"'),
                        names.get(port, port)] + mac)
        elif "nw_src" in fields and "nw_dst" not in fields:
            out.append(["from", fields["nw_src"], names.get(port, port)]
                       + mac)
        else:
            out.append(["to", fields.get("nw_dst", "?"),
                        names.get(port, port)] + mac)
    return sorted(out)


def bound_drains(ifaces: Dict[str, Dict[str, Any]]) -> List[List[str]]:
    """The way out of each daqring bound to its egress (options:egress,
    --ring-sharing shared), as fabric_flows gives a ring's drain flow in
    two-rule mode: ["ring", ring, egress port].  A bound ring needs no
    drain flow, the binding is its route."""
    out = []
    for name, row in sorted(ifaces.items()):
        opts = row.get("options")
        if row.get("type") == "daqring" and isinstance(opts, dict) \
                and opts.get("egress"):
            out.append(["ring", name, str(opts["egress"])])
    return out


def expected_flows(plan: FabricPlan, assignments: Dict[str, str]
                   ) -> Dict[str, List[List[str]]]:
    """What the fabric's cabling says each switch of PLAN must hold, as
    fabric_flows gives it, with the DCMs ASSIGNMENTS (DCM -> "plane/
    spine"; none in the modes without rings).  Towards each ROS host, in
    every plane: its leaf out of its port, every spine down to its leaf.
    Towards each DCM, in every plane (standing routes): every ROS leaf
    up to the DCM's spine (in another plane than the DCM's, the first
    of slice.spine_order()), every spine down to the plane's HLT leaf,
    there into its ring; from the DCM: that HLT leaf up to the same
    spine as the ROS leaves.  Its ring, on the HLT
    leaf of every plane (standby rings), drains out of its host's
    port.  The last hop towards a host sets its MAC (fabric_map() gives
    every host its MACs): the ROS leaf's route out of the ROS host's
    port and the HLT leaf's flow into the DCM's ring."""
    out: Dict[str, List[List[str]]] = {s.name: [] for s in plan.switches}

    def port(a: str, b: str) -> str:
        return next(lk[1] if lk[0] == a else lk[3] for lk in plan.links
                    if (lk[0], lk[2]) in ((a, b), (b, a)))
    for p in range(plan.planes):
        spines = [s.name for s in plan.switches
                  if s.role == "spine" and s.plane == p]
        for h in plan.ros_hosts:
            leaf = plan.ros_leaf(h.ns, p)
            pfx = ros_host_prefix(h.index)
            out[leaf].append(["to", pfx, h.veth, h.mac])
            for sp in spines:
                out[sp].append(["to", pfx, port(sp, leaf)])
    for d in plan.dcms:
        a = assignments.get(plan.dcm_name(d))
        if a is None:
            continue
        plane_s, assigned = a.split("/", 1)
        ip = d.ips[0]
        # Standing routes (fabric/slice.py): in every plane, every spine
        # down to the plane's HLT leaf, the ROS leaves and the way back up
        # over every spine, the assigned one first in the assigned plane.
        for p, hlt in enumerate(plan.hlt_leaves):
            spines = sorted(s.name for s in plan.switches
                            if s.role == "spine" and s.plane == p)
            first = spine_order(
                spines, assigned if p == int(plane_s) else None,
                plan.dcm_name(d))[0]
            for leaf in sorted({plan.ros_leaf(h.ns, p)
                                for h in plan.ros_hosts}):
                out[leaf].append(["to", ip, port(leaf, first)])
            for sp in spines:
                out[sp].append(["to", ip, port(sp, hlt)])
            out[hlt].append(["from", ip, port(hlt, first)])
        for p, leaf in enumerate(plan.hlt_leaves):
            out[leaf].append(["to", ip, plan.ring_on(d, leaf), d.mac])
            out[leaf].append(["ring", plan.ring_on(d, leaf),
                              plane_name(p, d.veth)])
    return {k: sorted(v) for k, v in out.items()}


def check_routes(plan: FabricPlan, flows: Dict[str, List[List[str]]],
                 assignments: Dict[str, str]) -> List[str]:
    """Where FLOWS (per switch, fabric_flows) differ from expected_flows:
    one message per switch, [] when they are the same."""
    want = expected_flows(plan, assignments)
    wrong = []
    for sw in sorted(want):
        have = flows.get(sw, [])
        if have != want[sw]:
            extra = [f for f in have if f not in want[sw]]
            missing = [f for f in want[sw] if f not in have]
            wrong.append("%s: missing %s, unexpected %s"
                         % (sw, [" ".join(f) for f in missing],
                            [" ".join(f) for f in extra]))
    return wrong
