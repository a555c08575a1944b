# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The convergence check of daq-bench --fabric: what a switch holds (its
daqrings in its OVSDB, its flows and groups as ovs-ofctl dumps them)
against what its slice of the plan in the fabric database says it must
(fabric/slice.py, in the agent's terms: fabric/flows.py), and the
problems of the plan itself."""

import json
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

from ...sandbox import Sandbox, ovs_json_value

# Our flows' cookies (ovs-daqctl's and the agents'): 0xdac7 on top.
COOKIE_MATCH = "cookie=0xdac7000000000000/0xffff000000000000"


# A flow as compared: (cookie, priority, match fields, actions).
CFlow = Tuple[int, int, FrozenSet[str], str]


@dataclass
class SwitchView:
    """What a switch holds, read from its OVSDB and with ovs-ofctl."""
    rings: Dict[str, Dict[str, str]]    # daqring interface -> options
    ofports: Dict[str, int]             # interface -> OpenFlow port
    errors: Dict[str, str]              # interface -> its error column
    flows: Set[CFlow]                   # our flows (cookie 0xdac7...)
    groups: Dict[int, Any]              # groups on the bridge


def parse_interfaces(text: str) -> Tuple[Dict[str, Dict[str, str]],
                                         Dict[str, int], Dict[str, str]]:
    """ovs-vsctl -f json -d json --columns=name,type,options,ofport,error
    list Interface: (daqrings' options, ofports, errors)."""
    out = json.loads(text)
    cols = out["headings"]
    rings: Dict[str, Dict[str, str]] = {}
    ofports: Dict[str, int] = {}
    errors: Dict[str, str] = {}
    for row in out["data"]:
        r = {c: ovs_json_value(v) for c, v in zip(cols, row)}
        name = str(r["name"])
        of = r.get("ofport")
        if isinstance(of, int) and of > 0:
            ofports[name] = of
        err = r.get("error")
        if isinstance(err, str) and err:
            errors[name] = err
        if r.get("type") == "daqring":
            opts = r.get("options")
            rings[name] = dict(opts) if isinstance(opts, dict) else {}
    return rings, ofports, errors


def parse_flows(text: str) -> Set[CFlow]:
    """ovs-ofctl --no-names --no-stats dump-flows: our flows."""
    from ...daqctl.openflow import is_ours, parse_flow
    out: Set[CFlow] = set()
    for line in text.splitlines():
        f = parse_flow(line)
        if f is not None and is_ours(f.cookie):
            prio, match, actions = f.compared()
            out.add((f.cookie, prio, match, actions))
    return out


def parse_groups(text: str) -> Dict[int, Any]:
    """ovs-ofctl --no-names dump-groups: every group by id, as the
    reconcile core compares them (fast_failover routes), else as
    printed."""
    from ...daqctl import openflow
    out: Dict[int, Any] = {}
    parse = getattr(openflow, "parse_group", None)
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("group_id="):
            continue
        g = parse(line) if parse is not None else None
        if g is not None:
            out[g[0]] = g[1]
        else:
            head, _, rest = line.partition(",")
            out[int(head.split("=", 1)[1], 0)] = rest
    return out


def read_switch(sb: Sandbox, target: str) -> SwitchView:
    """What switch 'sb' holds: its interfaces from its OVSDB, our flows and
    its groups from bridge 'target' (ovs-ofctl)."""
    rings, ofports, errors = parse_interfaces(sb.vsctl(
        "-f", "json", "-d", "json",
        "--columns=name,type,options,ofport,error", "list", "Interface"))
    flows = parse_flows(sb.ofctl("--no-names", "--no-stats", "dump-flows",
                                 target, COOKIE_MATCH))
    groups = parse_groups(sb.ofctl("-O", "OpenFlow13", "--no-names",
                                   "dump-groups", target))
    return SwitchView(rings, ofports, errors, flows, groups)


def expected(sl: Any, ofports: Dict[str, int]
             ) -> Tuple[Dict[str, Dict[str, str]], Set[CFlow],
                        Dict[int, Any], List[str]]:
    """What a switch must hold for slice 'sl' (fabric/slice.py): its
    daqrings' options, its flows and groups (with the switch's OpenFlow
    port numbers), and the problems that keep flows from being known (a
    port missing).  The routes' flows and groups are those of the agent's
    reconcile core: an output, or a fast_failover group over the route's
    ports that are on the bridge."""
    from ...daqctl import openflow
    from ...daqctl.flowsync import (FlowSync, route_group, route_groups,
                                    route_match)
    from ...fabric.flows import route_table, slice_json
    rings = {d.ring: d.options() for d in sl.rings}
    flows: Set[CFlow] = set()
    groups: Dict[int, Any] = {}
    problems: List[str] = []

    def port(name: str) -> Optional[str]:
        if name not in ofports:
            problems.append("port %s has no OpenFlow port number" % name)
            return None
        return openflow.ofport_text(ofports[name])

    for d in sl.rings:
        ring, egress = port(d.ring), port(d.egress)
        if ring is None or egress is None:
            continue
        for prio, match, actions in openflow.dcm_flows(d, ring, egress):
            flows.add((d.cookie(), prio, frozenset(match), actions))
    # The routes as the agent keeps them (their priorities, hosts and
    # backups: a route back from a DCM is one priority below the others).
    table: Dict[int, List[Any]] = route_table(slice_json(sl)["routes"])
    ids, _ = route_groups(table, ofports, None)
    for ports, gid in ids.items():
        groups[gid] = route_group(ports, ofports)
    for cookie, specs in table.items():
        for prio, match, out, mac in specs:
            ports = (out,) if isinstance(out, str) else tuple(out)
            if ports and port(openflow.port_name(ports[0])) is None:
                continue
            m = route_match(match, ofports)
            if m is None:
                continue
            action = FlowSync.route_action(ports, ofports, ids, mac)
            flows.add((cookie, prio, frozenset(m), action))
    return rings, flows, groups, problems


def _flow_text(f: CFlow) -> str:
    return "cookie=%#x,priority=%d,%s,actions=%s" % (
        f[0], f[1], ",".join(sorted(f[2])), f[3])


def check_switch(sl: Any, view: SwitchView, limit: int = 3) -> List[str]:
    """Why switch 'view' does not hold slice 'sl' (empty: it does): each
    difference in its daqrings (missing, extra, other options, in error),
    its flows (missing, extra) and its groups, the first 'limit' of each
    kind."""
    want_rings, want_flows, want_groups, problems = expected(
        sl, view.ofports)
    out = list(problems[:limit])

    def some(what: str, items: List[str]) -> None:
        if items:
            out.append("%s %d: %s%s" % (what, len(items),
                                        "; ".join(items[:limit]),
                                        " ..." if len(items) > limit
                                        else ""))

    some("daqrings missing", sorted(n for n in want_rings
                                    if n not in view.rings))
    some("daqrings not in the plan", sorted(n for n in view.rings
                                            if n not in want_rings))
    some("daqrings with other options", sorted(
        "%s (%s, want %s)" % (n, view.rings[n], o)
        for n, o in want_rings.items()
        if n in view.rings and _options_differ(view.rings[n], o)))
    some("daqrings in error", sorted("%s: %s" % (n, e)
                                     for n, e in view.errors.items()
                                     if n in want_rings))
    some("flows missing", sorted(_flow_text(f)
                                 for f in want_flows - view.flows))
    some("flows not in the plan", sorted(_flow_text(f)
                                         for f in view.flows - want_flows))
    some("groups missing or different", sorted(
        "group_id=%d %s" % (g, v) for g, v in want_groups.items()
        if view.groups.get(g) != v))
    some("groups not in the plan", sorted(
        "group_id=%d %s" % (g, v) for g, v in view.groups.items()
        if g not in want_groups))
    return out


def _options_differ(have: Dict[str, str], want: Dict[str, str]) -> bool:
    """The ring's options the plan sets differ (an option the plan does
    not set, such as one another tool added, is not compared)."""
    return any(have.get(k) != v for k, v in want.items())


def check_plan(state: Any, assignments: Dict[str, Any],
               sls: Dict[str, Any]) -> List[str]:
    """What is wrong with the plan itself, from the assignments alone:
    every DCM assigned, its daqring on the leaf of its host in each plane
    (its own plane's among them) and nowhere else, a route on its
    spine."""
    problems = []
    ring_at: Dict[str, List[str]] = {}
    routed: Dict[str, Set[str]] = {}
    for name, sl in sls.items():
        for d in sl.rings:
            ring_at.setdefault(d.name, []).append(name)
        for r in sl.routes:
            routed.setdefault(r.dcm, set()).add(name)
    hosts = {h.name: h for h in state.hosts}
    for d in state.dcms:
        a = assignments.get(d.name)
        if a is None:
            problems.append("DCM %s is not assigned" % d.name)
            continue
        att = hosts[d.host].leaf(a.plane)
        want = sorted(leaf for _, leaf, _ in hosts[d.host].attachments)
        if att is None or sorted(ring_at.get(d.name, [])) != want:
            problems.append("DCM %s: daqring on %s, its host's leaves are "
                            "%s (in plane %d: %s)"
                            % (d.name, ring_at.get(d.name), want, a.plane,
                               att[0] if att else None))
        if a.spine not in routed.get(d.name, set()):
            problems.append("DCM %s: no route on its spine %s"
                            % (d.name, a.spine))
    return problems
