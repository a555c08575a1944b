# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The fabric map of a mode, as daq-incast applies it through the fabric
database (ovs-daqctl fabric apply): the switches, links and hosts of the
plan, and the DCMs with their ring options in the modes with rings."""

from typing import Any, Dict, Optional

from .plan import FabricPlan, ros_host_prefix

# The fabric map's hold-down: seconds before a moved DCM goes back home.
HOLD_DOWN = 2


def fabric_map(plan: FabricPlan, params: Optional[Dict[str, Any]],
               hold_down: int = HOLD_DOWN, db: str = "") -> Dict[str, Any]:
    """The fabric map of a mode: the switches, links and hosts (with
    their MACs) always; the DCMs (matched by their address) with PARAMS'
    ring options, none when PARAMS is None (stock, credits: the
    switches' NORMAL forwarding alone).  DB: with several planes, the
    OVSDB remote of the ovs-vswitchd whose bridges the HLT leaves are
    (make_fabric_plan())."""
    if plan.shared_hlt and not db:
        raise ValueError("%d planes: the map needs the OVSDB the HLT "
                         "leaves share" % plan.planes)
    switches = [{"name": s.name, "role": s.role, "plane": s.plane,
                 "dpdk": s.dpdk, "bridge": s.bridge} for s in plan.switches]
    if db:
        # The HLT leaves that share an ovs-vswitchd name its OVSDB: the
        # fabric names their rings apart (fabric.model.switch_ring()).
        for sw in switches:
            if sw["name"] in plan.hlt_leaves:
                sw["db"] = db
    links = [{"a": "%s:%s" % (lf, lp), "b": "%s:%s" % (sp, spp)}
             for lf, lp, sp, spp in plan.links]
    # Each host's MAC in every plane (the same on all its interfaces:
    # netns.host_scripts()): the last hop sets it (--host-arp off needs it).
    hosts = [{"name": plan.ros_name(h), "role": "ros",
              "ip": ros_host_prefix(h.index),
              "ports": {p: "%s:%s" % (plan.ros_leaf(h.ns, p), h.veth)
                        for p in range(plan.planes)},
              "macs": {p: h.mac for p in range(plan.planes)}}
             for h in plan.ros_hosts]
    hosts += [{"name": h.name, "role": "hlt", "ip": h.ips[0],
               "ports": {p: "%s:%s" % (leaf, h.port_in(p))
                         for p, leaf in enumerate(plan.hlt_leaves)},
               "macs": {p: h.mac for p in range(plan.planes)}}
              for h in plan.hlt_hosts]
    doc: Dict[str, Any] = {"fabric": {"hold-down": hold_down,
                                      "switches": switches, "links": links,
                                      "hosts": hosts}}
    if params is None:
        doc["dcms"] = []
        return doc
    defaults: Dict[str, Any] = {"ring-size": params["ring_size"],
                                "max-burst": params["max_burst"],
                                "flow-buckets": params["flow_buckets"]}
    if params["max_rate_bps"]:
        defaults.update({"rate": "%dbit" % params["max_rate_bps"],
                         "frame-overhead": params["frame_overhead"]})
    else:
        defaults["poll-interval"] = 0
    if params.get("egress_max_rate_bps"):
        # Each ring bound to its HLT host's port (the DCM's egress on the
        # HLT leaf), the rings of one host sharing its rate.
        defaults.update({"steering": "bound",
                         "egress-max-rate": "%dbit"
                         % params["egress_max_rate_bps"]})
        if params.get("egress_max_burst_bytes"):
            defaults["egress-max-burst-bytes"] = params[
                "egress_max_burst_bytes"]
    doc["defaults"] = defaults
    doc["dcms"] = [{"name": plan.dcm_name(d), "ring": plan.ring_name(d),
                    "host": plan.dcm_host[d.index], "ip": d.ips[0]}
                   for d in plan.dcms]
    return doc
