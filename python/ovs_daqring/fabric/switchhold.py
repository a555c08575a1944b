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


"""How a switch's agent holds its switch to the slice it wants: the
reconcile core of 'ovs-daqctl apply' brings the switch to it (one local
OVSDB transaction for the daqrings, one OpenFlow bundle for the flows,
cookie-scoped, and the routes' fast_failover groups); a check every
--interval applies again what differs (a full one compares every flow,
group and port, the quick ones between the daqrings and the flow count);
what the switch holds is kept in the state file (fabric/statefile.py).
It keeps the bridge's fail_mode secure and, with other_config:
flow-restore-wait, a restarted ovs-vswitchd from forwarding before the
slice is in (secure(), restore_wait(): the policy is there).  It also
reads back what the Node row reports of the switch: its fabric
ports' link states, its BFD sessions and its rings' counters.  What the
switch must hold, from the fabric database, is fabric/agent.py's."""

import argparse
import json
import os
import time
from typing import Any, Dict, List, Optional, Tuple

from ..daqctl.idlutil import opt
from ..daqctl.model import DaqctlError, SwitchSpec
from ..daqctl.openflow import FlowWatch
from ..daqctl.reconcile import Reconciler
from .flows import dcm_of_json, route_ports, route_table
from .node import PROG, NodeBase, vlog
from .statefile import load_cache, save_cache
from .warmofctl import WarmOpenFlow

# --full-check-every's default: of the switch's checks every --interval,
# one in this many dumps and compares every flow, group and port; those
# between compare its daqrings (its OVSDB, which the agent monitors) and
# its bridge's flow count (Reconciler.holds()).  A restart of
# ovs-vswitchd or flows added or deleted by someone else are put right at
# the next interval, a flow modified in place or a port's config or a
# group changed by hand within this many (an apply of a new slice dumps
# the flows but takes the daqrings' no-flood and the groups as the last
# full check left them, unless the switch went away since).  (At 2048
# DCMs, 32 agents on one core spent it on their dumps.)
FULL_CHECK_EVERY = 10

# The switch's OVSDB columns the agent monitors besides those ovs-daqctl
# reads: its link ports' BFD, its bridge's fail mode, and the
# Open_vSwitch row's other_config (flow-restore-wait) and external_ids
# (who set it).
SWITCH_COLUMNS = {"Interface": ["bfd", "bfd_status"],
                  "Bridge": ["fail_mode"],
                  "Open_vSwitch": ["other_config", "external_ids"]}

# Open_vSwitch:other_config's key that an ovs-vswitchd reads when it
# starts (vswitch.xml), and the Open_vSwitch:external_ids key that says
# this agent set it (its value: the node), as ovn-controller's
# external_ids:ovn-managed-flow-restore-wait did (restore_wait()).
FRW = "flow-restore-wait"
FRW_OWNER = "daqfabric-flow-restore-wait"
# Open_vSwitch:other_config's key for how often ovs-vswitchd reads its
# DPDK ports' link states (patch 0027, vswitch.xml), what the agent sets
# it to when it is not set (--link-check-interval), and its largest
# value: a leaf's fast_failover groups move off a failed uplink when
# ovs-vswitchd reads that the link is down (link_check()).
LINK_CHECK = "dpdk-link-check-interval"
LINK_CHECK_MS = 10
LINK_CHECK_MAX_MS = 5000
# An ovs-vswitchd that started held by the agent's flow-restore-wait is
# released all the same after this many failed attempts in a row to
# apply the slice (one every --interval): a switch is never held for
# ever by a slice it refuses (restore_wait_failed()).
FRW_MAX_FAILURES = 3


class _Log:
    """The reconciler's messages, to the log ("no changes" only at dbg:
    the switch is checked every interval)."""

    def write(self, text: str) -> None:
        for line in text.splitlines():
            if line.endswith(": no changes"):
                vlog.dbg(line)
            elif line:
                vlog.info(line)

    def flush(self) -> None:
        pass


class SwitchHold(NodeBase):
    """A switch agent's hold on its switch (the module says how): the
    slice it wants (self.want, in the state file's format), applied and
    checked by apply(), kept by keep(); Agent.read_fabric() gives it
    a new one."""

    def __init__(self, args: argparse.Namespace, node: str) -> None:
        super().__init__(args, node)
        self.cache_path: str = args.state_file
        self.rec: Optional[Reconciler] = None
        # The flow monitor on the switch's bridge (with self.rec).
        self.watch: Optional[FlowWatch] = None
        # Its FlowWatch.started at the last full check that succeeded: a
        # monitor started again since means the switch went away (a
        # restart of ovs-vswitchd: its ports' no-flood and its groups are
        # gone too).
        self.watch_since: Optional[int] = None
        # What the switch must hold: the cache's format (target, ports,
        # generation, slice).  From the disk at start: switching never
        # waits for the fabric database.
        self.want = load_cache(self.cache_path, self.node)
        self.saved = json.dumps(self.want, sort_keys=True)
        # The want (the object) that self.saved is.
        self.saved_want: Optional[Dict[str, Any]] = None
        if self.want is not None:
            vlog.info("%s: last applied slice of generation %d: %d rings, "
                      "%d routes" % (self.cache_path,
                                     self.want["generation"],
                                     len(self.want["slice"]["rings"]),
                                     len(self.want["slice"]["routes"])))
        # The slice (JSON text) the switch was last brought to, and its
        # generation: what the Node row reports.
        self.applied: Optional[str] = None
        self.applied_at: Optional[float] = None
        self.n_applies = 0
        # The switch's checks (apply()): full ones, and those between
        # (Reconciler.holds()) since the last full one; the bridge's flow
        # count after the last full one (None: the next is full).
        # "counted": the quick ones that counted the bridge's flows
        # (the flow monitor had news, or was not up).
        self.n_checks = {"full": 0, "quick": 0, "counted": 0}
        self.quick_since_full = 0
        self.flow_count: Optional[int] = None
        # What the last full check brought the switch to (self.want but
        # its generation, as JSON: its slice's, and the rest's).
        self.full_want: Optional[Tuple[str, str]] = None
        # What apply() derives from self.want, kept until it changes: the
        # want, its slice as JSON, its rings as DCMs, its routes, the
        # ports those go through, the want but its generation as JSON
        # (as full_want).
        self.prepared: Optional[Tuple[Any, ...]] = None
        # local_view()'s last ring counters: (the switch IDL's
        # change_seqno, the slice, the counters).
        self.counted: Optional[Tuple[Any, ...]] = None
        # links_now()'s: (the switch IDL's change_seqno, the want, the
        # link states).
        self.linked: Optional[Tuple[Any, ...]] = None
        # The BFD sessions of the link ports, as local_view() last read
        # them: port -> Interface:bfd_status.
        self.bfd: Dict[str, Dict[str, str]] = {}
        # The want held() has to keep on the disk, once reported
        # (keep()).
        self.to_keep: Optional[Dict[str, Any]] = None
        # Why keep() could not write the state file, till it can again.
        self.save_error: Optional[str] = None
        # The link states local_view() read at the last attempt to apply
        # that failed (all unknown if it could not read the switch): what
        # it reports until the next attempt, having no connection to the
        # switch meanwhile.
        self.failed_links: Optional[Dict[str, str]] = None
        # flow-restore-wait (restore_wait()): whether the ovs-vswitchd
        # the agent is connected to has been released (it has read the
        # key unset: it does so until it forwards, at its start) since
        # the agent connected to it or saw it restart; the failed
        # attempts to apply the slice since then; how many times the
        # agent released one that waited for it; why it does not keep
        # the key set for the next start (None: it does), as last said.
        self.frw_released = False
        self.frw_failures = 0
        # Why link_check() last could not set its key (None: it could,
        # or did not need to), as logged.
        self.link_check_error: Optional[str] = None
        self.frw_releases = 0
        self.frw_note: Optional[str] = None
        self.frw_why: Optional[str] = None
        # spare_key()'s bridge ports, and the (connection, config_seqno)
        # they were read at.
        self._spare_ports: Optional[Tuple[Any, Any]] = None

    def slice_text(self, want: Dict[str, Any]) -> str:
        """want's slice as JSON text."""
        return json.dumps(want["slice"], sort_keys=True)

    # -------------------------------------------------------------- apply
    def reconciler(self) -> Reconciler:
        t = self.want["target"]
        spec = SwitchSpec(name=self.node, db=t["db"], of=t["of"],
                          bridge=t["bridge"], where="fabric slice")
        if self.rec is not None and (self.rec.spec.db, self.rec.spec.of,
                                     self.rec.spec.bridge) != (
                spec.db, spec.of, spec.bridge):
            self.close_switch()
        if self.rec is None:
            # Nothing known of this switch yet: the next check is full.
            self.flow_count = self.full_want = None
            self.watch_since = None
            self.failed_links = None
            self.rec = Reconciler(spec, self.args, _Log(), SWITCH_COLUMNS)
            self.rec.manage_groups = True
            # Bundles through an ovs-ofctl started ahead (warmofctl.py).
            self.rec.of = WarmOpenFlow(self.rec.of, self.spare_key)
            self.watch = FlowWatch(self.rec.of)
        return self.rec

    def close_switch(self) -> None:
        """Forgets the connection to the switch (connected again at the
        next check)."""
        if self.watch is not None:
            self.watch.stop()
            self.watch = None
        if self.rec is not None:
            if isinstance(self.rec.of, WarmOpenFlow):
                self.rec.of.close()
            self.rec.close()
            self.rec = None

    def spare_key(self) -> Any:
        """What a spare ovs-ofctl (warmofctl.py) is good for: the
        bridge's port names and numbers (what it asked the switch), on
        this connection to it and this run of ovs-vswitchd (the flow
        monitor's starts).  The names and numbers are read again only
        when the switch's configuration changed (config_seqno)."""
        if self.rec is None:
            return None
        db = self.rec.db
        seqno = db.config_seqno
        cached = getattr(self, "_spare_ports", None)
        if cached is None or cached[0] != (id(db), seqno):
            try:
                ports = db.ports(db.bridge(self.rec.spec.bridge))
                names = tuple(sorted(
                    (name, tuple(tuple(i.ofport) for i in p.interfaces))
                    for name, p in ports.items()))
            except DaqctlError:
                names = None
            cached = self._spare_ports = ((id(db), seqno), names)
        return (id(db), cached[1],
                self.watch.started if self.watch is not None else None)

    def bundle_counts(self) -> Dict[str, int]:
        """The bundles sent through a spare ovs-ofctl ("warm") and a new
        one ("cold") on this connection to the switch."""
        of = self.rec.of if self.rec is not None else None
        if not isinstance(of, WarmOpenFlow):
            return {"warm": 0, "cold": 0}
        return {"warm": of.warm_bundles, "cold": of.cold_bundles}

    def warm(self) -> None:
        """A spare ovs-ofctl for the next bundle, once the switch holds
        its slice (WarmOpenFlow.warm())."""
        if (self.rec is not None and self.error is None
                and isinstance(self.rec.of, WarmOpenFlow)):
            self.rec.of.warm()

    def set_bfd(self, rec: Reconciler) -> None:
        """Makes Interface:bfd of the switch's link ports the fabric's
        (the agent owns it: {} when the fabric has BFD off), in a
        transaction of its own when it differs."""
        want = self.want.get("bfd", {})
        names = self.want.get("bfd_ports", [])

        def todo() -> List[Any]:
            ports = rec.db.ports(rec.db.bridge(rec.spec.bridge))
            out = []
            for n in names:
                p = ports.get(n)
                ifaces = list(p.interfaces) if p is not None else []
                if len(ifaces) == 1 and dict(ifaces[0].bfd) != want:
                    out.append(ifaces[0])
            return out

        if not todo():
            return

        def build(txn: Any) -> None:
            for iface in todo():
                iface.verify("bfd")
                iface.bfd = want
        rec.db.transact(build, "%s: BFD %s on %s" % (
            PROG, "on" if want else "off", ", ".join(names)))
        vlog.info("switch %s: BFD %s on %s" % (
            self.node, " ".join("%s=%s" % kv for kv in sorted(want.items()))
            if want else "off", ", ".join(names)))

    # ------------------------------------------ fail mode, restore wait
    def secure(self, rec: Reconciler) -> bool:
        """Makes the bridge's fail_mode secure if it is not (standalone,
        or unset, which is standalone), in a transaction of its own, and
        waits until ovs-vswitchd has applied it.  In standalone mode
        ovs-vswitchd forwards what no flow matches by NORMAL, flooding
        and learning around the leaf-spine loops; in secure mode it
        drops it, so that the fabric forwards by the slice alone.
        ovs-vswitchd flushes the flows, groups and meters of a bridge
        without controllers whose fail mode changes (connmgr.c): returns
        whether it changed it (the check is then a full one, which puts
        the slice back).  A refusal is raised (DaqctlError): the attempt
        fails, as when the switch refuses the slice, and is made again
        every interval."""
        bridge = rec.spec.bridge
        mode = opt(rec.db.bridge(bridge).fail_mode)
        if mode == "secure":
            return False

        def build(txn: Any) -> None:
            br = rec.db.bridge(bridge)
            br.verify("fail_mode")
            br.fail_mode = ["secure"]
        try:
            cfg = rec.db.transact(build, "%s: fail_mode=secure on bridge %s"
                                  % (PROG, bridge))
            rec.db.wait_applied(cfg)
        except DaqctlError as e:
            raise DaqctlError("bridge %s is in fail_mode %s (what no flow "
                              "matches floods around the fabric's loops) "
                              "and cannot be made secure: %s"
                              % (bridge, mode or "standalone (unset)", e))
        vlog.warn("switch %s: bridge %s was in fail_mode %s, which floods "
                  "what no flow matches around the fabric's loops: set to "
                  "secure (ovs-vswitchd flushes the flows and groups of a "
                  "bridge without controllers whose fail mode changes: the "
                  "slice is applied again)"
                  % (self.node, bridge, mode or "standalone (unset)"))
        return True

    def link_check(self, rec: Reconciler) -> None:
        """Sets other_config:dpdk-link-check-interval of the switch to
        --link-check-interval when the key is not set, in a transaction
        of its own (0: never; a value someone set stays theirs).  A leaf
        moves what it sends up off a failed uplink (its fast_failover
        groups) when ovs-vswitchd reads that the link is down: the main
        loop does when something wakes it, the port watchdog every 5 s
        unless the key says more often (a NIC's link state interrupt
        wakes the watchdog at once).  Until then the leaf sends into the
        dead link.  A database that refuses the write is logged (once
        per reason) and does not fail the attempt: the slice matters
        more, and the write is tried again at the next check."""
        want = self.args.link_check_interval
        if not want or LINK_CHECK in self.ovs_root(rec).other_config:
            return

        def build(txn: Any) -> None:
            root = self.ovs_root(rec)
            root.verify("other_config")
            oc = dict(root.other_config)
            oc[LINK_CHECK] = str(want)
            root.other_config = oc
        try:
            rec.db.transact(build, "%s: %s=%d" % (PROG, LINK_CHECK, want))
        except DaqctlError as e:
            if str(e) != self.link_check_error:
                vlog.warn("switch %s: cannot set other_config:%s=%d (a "
                          "link that goes down may be seen late): %s"
                          % (self.node, LINK_CHECK, want, e))
            self.link_check_error = str(e)
            return
        self.link_check_error = None
        vlog.info("switch %s: other_config:%s=%d (link states read every "
                  "%d ms)" % (self.node, LINK_CHECK, want, want))

    def frw_unsafe(self, rec: Reconciler) -> Optional[str]:
        """Why the agent must not leave flow-restore-wait set for the
        next start of ovs-vswitchd (None: it may).  An ovs-vswitchd that
        starts with it waits for this agent, which must then be able to
        apply the slice without the network: from its state file (not
        the fabric database), through a local database socket and the
        bridge's management socket (ovs-vswitchd opens no controller
        connection while it waits); and the key holds every bridge of
        the process, which another bridge's user would not release
        (OVN's ovn-controller, which held its chassis this way, was
        reverted for holding its own connection to the southbound
        database)."""
        bridge = rec.spec.bridge
        if not rec.spec.db.startswith("unix:"):
            return ("the switch's database %s is not a local socket"
                    % rec.spec.db)
        target = rec.of.target
        if target != bridge and not (
                target.startswith("unix:")
                and os.path.basename(target[5:]) == bridge + ".mgmt"):
            return ("the OpenFlow target %s is not the bridge's management "
                    "socket (ovs-vswitchd connects no controller while it "
                    "waits)" % target)
        names = sorted(str(b.name) for b in self.ovs_root(rec).bridges)
        if names != [bridge]:
            return ("ovs-vswitchd has other bridges than %s (%s), which "
                    "flow-restore-wait would hold too"
                    % (bridge, ", ".join(n for n in names if n != bridge)))
        if self.saved == "null":
            return ("no slice kept in %s yet (a restarted switch would "
                    "wait for the fabric database)" % self.cache_path)
        return None

    @staticmethod
    def ovs_root(rec: Reconciler) -> Any:
        """The switch's Open_vSwitch row (DaqctlError if it has none)."""
        rows = rec.db.idl.tables["Open_vSwitch"].rows
        if not rows:
            raise DaqctlError("%s: the database has no Open_vSwitch record"
                              % rec.spec.db)
        return next(iter(rows.values()))

    def frw_write(self, rec: Reconciler, on: bool, comment: str) -> int:
        """Sets (on) or removes (not on) flow-restore-wait and its owner
        key, in a transaction of its own: its next_cfg."""
        def build(txn: Any) -> None:
            root = self.ovs_root(rec)
            root.verify("other_config")
            root.verify("external_ids")
            oc, ext = dict(root.other_config), dict(root.external_ids)
            if on:
                oc[FRW], ext[FRW_OWNER] = "true", self.node
            else:
                oc.pop(FRW, None)
                if ext.get(FRW_OWNER) == self.node:
                    del ext[FRW_OWNER]
            root.other_config, root.external_ids = oc, ext
        return rec.db.transact(build, "%s: %s" % (PROG, comment))

    def frw_say(self, note: Optional[str]) -> None:
        """Logs 'note' once (not at every check)."""
        if note is not None and note != self.frw_note:
            vlog.info("switch %s: %s" % (self.node, note))
        self.frw_note = note

    def restore_wait(self, rec: Reconciler) -> None:
        """After an attempt that brought the switch to its slice: the
        switch's ovs-vswitchd is released from flow-restore-wait (once
        per start of it), and the key is set again for its next start.

        ovs-vswitchd reads Open_vSwitch:other_config:flow-restore-wait
        from its start until it reads it false or unset, never after
        (bridge.c): one that starts with it "true" keeps the datapath's
        flows, receives no packet from the datapath (a packet that
        misses its flows is dropped: with the userspace datapath, every
        packet of a restarted process, so no BFD session comes up) and
        connects no controller, while its management socket takes
        flows; once it reads it unset, it forwards.  Set while
        ovs-vswitchd runs, the key does nothing until its next start.
        So, as ovs-ctl's
        restart does around its own restore of the flows, and as
        ovn-controller did (OVN 621f85e92, reverted in 30f431174 for the
        deadlock frw_unsafe() rules out): the key is set ahead, while
        the switch holds its slice; a restarted ovs-vswitchd (a crash,
        a kill, a reboot) then forwards nothing and brings no BFD
        session up (its peers' fast_failover buckets stay on other
        links) until the agent has applied its whole slice and removed
        the key, waiting until ovs-vswitchd has read that (cur_cfg);
        then the agent sets it again.  A key set by someone else (no
        owner key: ovs-ctl's restart, which restores the flows it saved
        and removes it) is left to them.  The key stays only while
        frw_unsafe() has nothing to say; a clean exit removes it
        (frw_disarm()), and an ovs-vswitchd that refuses the slice is
        released after FRW_MAX_FAILURES attempts
        (restore_wait_failed())."""
        self.frw_failures = 0
        root = self.ovs_root(rec)
        oc, ext = dict(root.other_config), dict(root.external_ids)
        ours = ext.get(FRW_OWNER) == self.node
        if not self.frw_released:
            if oc.get(FRW) == "true" and not ours:
                self.frw_say("other_config:%s is set by someone else (%s): "
                             "left to them" % (FRW, ext.get(FRW_OWNER)
                                               or "ovs-ctl restart?"))
                return
            if FRW in oc:
                cfg = self.frw_write(rec, False, "the slice is in: "
                                     "flow-restore-wait removed")
                held = True
            else:
                cfg, held = int(root.next_cfg), False
            # Released once ovs-vswitchd has read the key unset.
            rec.db.wait_applied(cfg)
            self.frw_released = True
            if held:
                self.frw_releases += 1
                vlog.info("switch %s: slice applied, ovs-vswitchd released "
                          "from flow-restore-wait (it forwards from now on)"
                          % self.node)
            root = self.ovs_root(rec)
            oc, ext = dict(root.other_config), dict(root.external_ids)
            ours = ext.get(FRW_OWNER) == self.node
        why = self.frw_unsafe(rec)
        self.frw_why = why
        armed = ours and oc.get(FRW) == "true"
        if why is None and not armed:
            if oc.get(FRW) == "true" and not ours:
                self.frw_say("other_config:%s is set by someone else: left "
                             "to them" % FRW)
                return
            self.frw_write(rec, True, "flow-restore-wait for the next "
                           "start of ovs-vswitchd")
            self.frw_say("flow-restore-wait set: a restarted ovs-vswitchd "
                         "forwards only once this agent has applied its "
                         "slice")
        elif why is not None:
            if ours:
                self.frw_write(rec, False, "flow-restore-wait removed")
            self.frw_say("flow-restore-wait not set: %s" % why)

    def restore_wait_failed(self) -> None:
        """After an attempt to apply the slice that failed: an
        ovs-vswitchd that may wait for the agent since it started is
        released after FRW_MAX_FAILURES such attempts in a row, with
        whatever it holds (in secure mode, what no flow matches is
        dropped): never held for ever by a slice it refuses.  The
        key is set again after an attempt that succeeds."""
        if self.frw_released or self.rec is None:
            return
        self.frw_failures += 1
        if self.frw_failures < FRW_MAX_FAILURES:
            return
        rec = self.rec
        try:
            root = self.ovs_root(rec)
            if (FRW in root.other_config
                    and root.external_ids.get(FRW_OWNER) == self.node):
                self.frw_write(rec, False, "released without the slice")
                self.frw_releases += 1
                vlog.warn("switch %s: %d attempts to apply the slice "
                          "failed: ovs-vswitchd released from "
                          "flow-restore-wait without it" % (
                              self.node, self.frw_failures))
        except DaqctlError as e:
            vlog.warn("switch %s: cannot remove flow-restore-wait: %s"
                      % (self.node, e))

    def frw_disarm(self) -> None:
        """At a clean exit: removes the flow-restore-wait this agent set,
        so that a switch whose agent was stopped is not left waiting for
        it at its next start."""
        try:
            if self.rec is None and self.want is not None:
                self.reconciler()
            if self.rec is None:
                return
            root = self.ovs_root(self.rec)
            if root.external_ids.get(FRW_OWNER) == self.node:
                self.frw_write(self.rec, False, "exiting: flow-restore-wait "
                               "removed")
                vlog.info("switch %s: flow-restore-wait removed (the agent "
                          "exits)" % self.node)
        except DaqctlError as e:
            vlog.warn("switch %s: cannot remove flow-restore-wait at exit: "
                      "%s" % (self.node, e))

    def frw_text(self) -> str:
        """flow-restore-wait in a few words (status)."""
        if self.rec is None:
            return "-"
        try:
            root = self.ovs_root(self.rec)
        except DaqctlError:
            return "-"
        oc, ext = dict(root.other_config), dict(root.external_ids)
        if oc.get(FRW) != "true":
            text = "not set"
            if self.frw_why is not None:
                text += ": " + self.frw_why
        elif ext.get(FRW_OWNER) == self.node:
            text = "set for the next start of ovs-vswitchd"
        else:
            text = "set by someone else"
        return "%s; released %d times" % (text, self.frw_releases)

    def apply(self) -> None:
        """Brings the switch to self.want (usually a check that finds
        nothing to do)."""
        want = self.want
        if self.prepared is None or self.prepared[0] is not want:
            # Once per slice, not per check (a ROS leaf's routes are a
            # DCM each); the rings of the last slice if the new one has
            # them (read_fabric() keeps them: a DCM moved changes the
            # routes only).
            old = self.prepared
            text = self.slice_text(want)
            self.prepared = (
                want, text,
                old[2] if (old is not None and old[0]["slice"]["rings"]
                           is want["slice"]["rings"])
                else [dcm_of_json(d) for d in want["slice"]["rings"]],
                route_table(want["slice"]["routes"]),
                {p for r in want["slice"]["routes"] for p in route_ports(r)},
                # The slice (as its text) and the rest but the generation.
                (text, json.dumps({k: v for k, v in want.items()
                                   if k not in ("generation", "slice")},
                                  sort_keys=True)))
        _, text, rings, routes, route_ports_, whole = self.prepared
        try:
            rec = self.reconciler()
            rec.result["messages"] = []
            rec.routes = routes
            self.set_bfd(rec)
            # (A bridge whose fail mode changes loses its flows and
            # groups: the check is a full one.)
            flushed = self.secure(rec)
            self.link_check(rec)
            br = rec.db.bridge(rec.spec.bridge)
            missing = sorted(route_ports_ - set(rec.db.ports(br)))
            # Whether the flows may have changed since the last check
            # (the flow monitor's news, taken before the check: a change
            # during it is news at the next one).
            assert self.watch is not None
            self.watch.start()
            flows_news = self.watch.take()
            # Whether the switch may have gone away since the last full
            # check (then this one is full, and asks the switch about
            # everything).
            restarted = self.watch.started != self.watch_since
            if restarted:
                # Connected to it, or it restarted: released once the
                # slice is in (restore_wait()).
                self.frw_released = False
            restarted = restarted or flushed
            new_slice = text != self.applied or whole != self.full_want
            if (not missing and self.error is None and not new_slice
                    and not restarted and self.flow_count is not None
                    and self.quick_since_full < self.args.full_check_every - 1
                    and rec.holds(rings, self.flow_count, flows_news)):
                self.quick_since_full += 1
                self.n_checks["quick"] += 1
                if flows_news:
                    self.n_checks["counted"] += 1
                self.restore_wait(rec)
                self.held(want, text)
                self.warm()
                return
            if not (new_slice and not restarted and self.error is None
                    and self.flow_count is not None
                    and self.watch.proc is not None):
                # A periodic full check, or one after news of the flows
                # or of a failure: the daqrings' no-flood and our groups
                # are asked from the switch.  A new slice on a switch
                # checked since (the monitor up throughout) takes them
                # as the last apply left them, and the flows too unless
                # the monitor saw them change: a change of routes only
                # (a DCM moved, rings on every plane) then costs a
                # bundle, not a dump of a thousand flows first.
                rec.forget()
            elif flows_news:
                # Flows changed since the check after the last apply
                # (which took that apply's own news): someone else's
                # change, which the flows as that apply left them would
                # not show.  Dumped.
                rec.forget_flows()
            self.flow_count = self.full_want = None
            rec.apply(lambda _cur: rings, "%s: fabric generation %d"
                      % (PROG, want["generation"]), False, False)
            self.n_checks["full"] += 1
            self.quick_since_full = 0
            self.full_want = whole
            # The count the flows the apply left give (one ovs-ofctl less
            # before the report), else the switch's; a flow someone else
            # changed meanwhile makes the next check's count differ.
            count = rec.expected_flow_count()
            self.flow_count = (count if count is not None
                               else rec.of.flow_count())
            self.watch_since = self.watch.started
            self.restore_wait(rec)
        except DaqctlError as e:
            self._failed(str(e), want["generation"])
            self.restore_wait_failed()
            # A switch that refused the slice (rolled back) still says
            # what its ports are; one it could not reach, nothing.
            self.failed_links = self.local_view(False)[0]
            # Connect again next time (ovs-vswitchd's management socket
            # may be back, the database restarted).
            self.close_switch()
            return
        if missing:
            self._failed("ports missing on bridge %s (routes through them "
                         "not installed, or without them as backups): %s"
                         % (want["target"]["bridge"], ", ".join(missing)),
                         want["generation"])
            return
        self.held(want, text)
        self.warm()

    def held(self, want: Dict[str, Any], text: str) -> None:
        """The switch holds slice 'want' ('text': its slice as JSON)."""
        if text != self.applied or want["generation"] != self.applied_gen:
            vlog.info("switch %s holds the slice of generation %d: %d "
                      "rings, %d routes" % (self.node, want["generation"],
                                            len(want["slice"]["rings"]),
                                            len(want["slice"]["routes"])))
            self.n_applies += 1
            # Said at once, not an interval later ('fabric apply --wait'
            # and the other nodes wait for it).
            self.next_report = 0.0
            self.applied_at = time.time()
        if self.error is not None:
            vlog.info("switch %s: recovered" % self.node)
        self.error = None
        self.failed_gen = None
        self.applied = text
        self.applied_gen = want["generation"]
        # Kept on the disk after the round's report (run()): the other
        # nodes and 'fabric apply --wait' wait for the report, not for
        # the file.
        self.to_keep = want

    def keep(self) -> None:
        """Keeps the slice the switch holds (held()) on the disk, for a
        start while the fabric database is unreachable."""
        want, self.to_keep = self.to_keep, None
        if want is None or want is self.saved_want:
            # Kept already (every check of the switch comes here).
            return
        old = self.saved_want
        if (old is not None and old["slice"] is want["slice"]
                and dict(old, generation=0) == dict(want, generation=0)):
            # A new generation that leaves this switch's slice as it was
            # (most switches, when one DCM changes): the file keeps the
            # slice the switch holds, which is what it is for (its
            # generation is reported once the fabric is reachable again).
            self.saved_want = want
            return
        saved = json.dumps(want, sort_keys=True)
        if saved != self.saved:
            try:
                save_cache(self.cache_path, saved)
                self.saved = saved
            except OSError as e:
                # Tried again at every check of the switch, said once:
                # the switch holds the slice all the same, only a
                # restart while the fabric database is unreachable
                # would start from an older one.
                if str(e) != self.save_error:
                    vlog.warn("%s: cannot keep the applied slice (the "
                              "switch holds it; tried again at each "
                              "check): %s" % (self.cache_path, e))
                self.save_error = str(e)
                return
            if self.save_error is not None:
                vlog.info("%s: the applied slice is kept again"
                          % self.cache_path)
                self.save_error = None
        self.saved_want = want

    def _failed(self, why: str, generation: int) -> None:
        """The switch could not be brought to the slice of 'generation'
        (it refused it and was rolled back, or it could not be reached):
        the switch holds what it held, and the agent tries again every
        interval.  A failure of a generation is reported at once, not an
        interval later: 'fabric apply --wait' ends on it."""
        if why != self.error:
            vlog.warn("switch %s: generation %d: %s"
                      % (self.node, generation, why))
        if generation != self.failed_gen:
            self.next_report = 0.0
        self.error = why
        self.failed_gen = generation

    # ------------------------------------------------ the switch's view
    def local_view(self, counters: bool = True
                   ) -> Tuple[Dict[str, str], Dict[str, Dict[str, int]]]:
        """The fabric ports' link states and (if 'counters') the rings'
        counters, as the local database has them.  Every port of the
        slice is there: "up", "down" (missing, or its Interface says so),
        or "unknown" when the agent cannot tell: its Interface has no
        link state (a DPDK port that failed to attach), or the switch's
        database cannot be read (no connection to it, its bridge gone,
        the connection down: the IDL would give what it held before) --
        never left out, which the planner took for up, nor wiped.
        Between a failed attempt to apply (the connection is made again
        at the next) and the next, what it read at that attempt.  No
        ports without a slice.  A port with BFD on is up only while its
        BFD session forwards (what its fast_failover buckets watch);
        self.bfd gets the sessions.  (Each counter read converts the
        Interface's whole statistics column: the rounds between reports,
        which look at the links only, skip them.)"""
        links: Dict[str, str] = {}
        rings: Dict[str, Dict[str, int]] = {}
        self.bfd = {}
        if self.want is None:
            return links, rings
        unknown = {name: "unknown" for name in self.want["ports"]}
        if self.rec is None:
            # Not connected (since its last failed attempt, or at all).
            if self.failed_links is not None:
                return {name: self.failed_links.get(name, "unknown")
                        for name in self.want["ports"]}, rings
            return unknown, rings
        db = self.rec.db
        try:
            db.idl.run()
            br = db.bridge(self.rec.spec.bridge)
        except DaqctlError:
            return unknown, rings
        if not db.idl._session.is_connected():
            return unknown, rings
        ports = db.ports(br)
        for name in self.want["ports"]:
            p = ports.get(name)
            ifaces = list(p.interfaces) if p is not None else []
            if p is None or len(ifaces) != 1:
                links[name] = "down"
                continue
            iface = ifaces[0]
            state = iface.link_state[0] if iface.link_state else None
            links[name] = state if state in ("up", "down") else "unknown"
            if iface.bfd.get("enable") == "true":
                st = dict(iface.bfd_status)
                self.bfd[name] = st
                if st.get("forwarding") != "true":
                    links[name] = "down"
        if not counters:
            return links, rings
        seqno, sl = db.idl.change_seqno, self.want["slice"]["rings"]
        if (self.counted is not None and self.counted[0] == seqno
                and self.counted[1] is sl):
            # Nothing changed in the switch's database since the last
            # read (an idle ring's statistics do not change).
            return links, self.counted[2]
        for d in self.want["slice"]["rings"]:
            p = ports.get(d["ring"])
            if p is None or len(p.interfaces) != 1:
                continue
            st = list(p.interfaces)[0].statistics
            rings[d["ring"]] = {"occupancy": int(st.get("occupancy", 0)),
                                "high_watermark":
                                int(st.get("high_watermark", 0)),
                                "drops": int(st.get("ring_full_drops", 0))}
        self.counted = (seqno, sl, rings)
        return links, rings

    def links_now(self) -> Dict[str, str]:
        """local_view()'s link states, read again only after the
        switch's database changed (every commit to the fabric database
        wakes the agent: most rounds have nothing else to do)."""
        if self.rec is None:
            return self.local_view(False)[0]
        seqno, want = self.rec.db.idl.change_seqno, self.want
        if (self.linked is None or self.linked[0] != seqno
                or self.linked[1] is not want):
            self.linked = (seqno, want, self.local_view(False)[0])
        return dict(self.linked[2])
