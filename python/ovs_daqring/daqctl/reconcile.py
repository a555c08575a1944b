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

"""Reconciling a switch to its DCMs (Reconciler): the plan
(ringplan.py) applied in one OVSDB transaction, waited for and judged
(what ovs-vswitchd refused), then the flows (flowsync.py), with the
rollback of a failure (rollback.py) and the report of what changed."""

import argparse
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from .model import (DaqctlError, Dcm, MapError, STATES, SwitchSpec,
                    grouped_notes as _grouped)
from .idlutil import opt
from .ovsdb import Ovsdb
from .openflow import OpenFlow, of_target, ssl_args
from .ringplan import (Plan, RingState, describe_update, plan_rings,
                       ring_options)
from .flowsync import FlowSync
from .rollback import Rollback


class Reconciler(FlowSync, Rollback):
    """Brings one switch to a list of DCMs."""

    def __init__(self, spec: SwitchSpec, args: argparse.Namespace,
                 out: Any, columns: Optional[Dict[str, List[str]]] = None
                 ) -> None:
        """columns: Open_vSwitch columns to monitor besides those
        ovs-daqctl reads (the fabric agent's BFD columns)."""
        self.spec = spec
        self.args = args
        self.out = out
        self.json = getattr(args, "format", "table") == "json"
        # What happened, for -f json.
        self.result: Dict[str, Any] = {
            "switch": spec.name, "db": spec.db, "bridge": spec.bridge,
            "dry_run": False, "changed": False, "messages": []}
        self.db = Ovsdb(spec.db, args.timeout, columns)
        self.of = OpenFlow(of_target(args, spec), args.ofctl, args.timeout,
                           ssl_args(args))
        self.t_commit = 0.0
        self.t_bundle = 0.0
        # Where the change is, for a report if it is interrupted (see
        # STATES): in the result, so that -f json has it too.
        self.result["state"] = "unchanged"
        self._next_progress = 0.0
        FlowSync.__init__(self)
        # plan_unless_held(): the configuration count and 'want' with
        # which the switch's daqrings were found as wanted last.
        self.held_config: Any = None

    def close(self) -> None:
        self.db.close()

    def set_state(self, state: str) -> None:
        assert state in STATES, state
        self.result["state"] = state

    def progress(self, waited: float) -> None:
        """While ovs-vswitchd applies a change (tens of seconds for 1000
        daqrings): a line on standard error after 2 s, then every 5 s."""
        if waited < 2:
            self._next_progress = 2
            return
        if waited < self._next_progress:
            return
        self._next_progress = waited + 5
        sys.stderr.write("ovs-daqctl: %s: waiting for ovs-vswitchd to apply "
                         "the change (next_cfg %s): %.0f s so far (it needs "
                         "about 20 s to add 1000 daqrings, 40 s to remove "
                         "them)\n" % (self.spec.label(),
                                      self.result.get("next_cfg", "?"),
                                      waited))
        sys.stderr.flush()

    def say(self, msg: str) -> None:
        self.result["messages"].append(msg)
        if not self.json:
            self.out.write(msg + "\n")
            self.out.flush()

    def current(self) -> List[Dcm]:
        br = self.db.bridge(self.spec.bridge)
        return [r.dcm for r in self.db.rings(br) if r.dcm is not None]

    # --------------------------------------------------------------- plan
    def plan(self, dcms: List[Dcm]) -> Plan:
        """plan_rings() of this switch (ringplan.py): what to change, or
        MapError for what the switch refuses."""
        return plan_rings(self.db, self.spec, dcms)

    # -------------------------------------------------------------- ovsdb
    def commit(self, want: Callable[[List[Dcm]], List[Dcm]],
               comment: str) -> Tuple[Plan, float]:
        """One transaction for the whole plan: the DCMs are want(the DCMs
        on the switch), planned again if the database changed meanwhile,
        so that another ovs-daqctl's change made meanwhile is kept.  Waits
        until ovs-vswitchd has applied it.  Returns the plan and the
        duration."""
        t0 = time.monotonic()
        plans: List[Plan] = []

        def build(txn: Any) -> None:
            plan = self.plan(want(self.current()))
            plans.append(plan)
            br = self.db.bridge(self.spec.bridge)
            # What the plan rests on: which ports the bridge has (the
            # managed rings, the names taken) and each ring it changes or
            # removes.  If another client changed any of it meanwhile, the
            # server refuses the transaction and it is planned again.
            br.verify("ports")
            for r in [r for r, _ in plan.update] + plan.delete:
                for col in ("external_ids", "interfaces"):
                    r.port.verify(col)
                for col in ("type", "options", "ofport_request"):
                    r.iface.verify(col)
            for r in plan.delete:
                plan.after[r.port.name] = None
                br.delvalue("ports", r.port)
                r.port.delete()
                r.iface.delete()
            for r, d in plan.update:
                opts = ring_options(r.iface.options, d)
                if opts != dict(r.iface.options):
                    r.iface.options = opts
                if r.iface.type != "daqring":
                    r.iface.type = "daqring"
                ext = {k: v for k, v in r.port.external_ids.items()
                       if not k.startswith("daqctl-")}
                ext.update(d.external_ids())
                if ext != dict(r.port.external_ids):
                    r.port.external_ids = ext
                req = [d.ofport] if d.ofport is not None else []
                if list(r.iface.ofport_request) != req:
                    r.iface.ofport_request = req
                plan.after[d.ring] = RingState(ext, r.iface.name, "daqring",
                                               opts, req, True)
            for d in plan.create:
                iface = txn.insert(self.db.idl.tables["Interface"])
                iface.name = d.ring
                iface.type = "daqring"
                iface.options = d.options()
                if d.ofport is not None:
                    iface.ofport_request = [d.ofport]
                port = txn.insert(self.db.idl.tables["Port"])
                port.name = d.ring
                port.interfaces = [iface]
                port.external_ids = d.external_ids()
                br.addvalue("ports", port)
                plan.after[d.ring] = RingState(
                    d.external_ids(), d.ring, "daqring", d.options(),
                    [d.ofport] if d.ofport is not None else [], True)

        self.set_state("committing")
        # A ring created, changed (a new type may make ovs-vswitchd add
        # its port again, flooding) or removed (it may come back under
        # its name) is asked about again.
        self.known_flood = None
        cfg = self.db.transact(build, comment)
        self.result["next_cfg"] = cfg
        self.set_state("committed")
        self.t_commit = time.monotonic() - t0
        self.db.wait_applied(cfg, self.progress)
        self.set_state("applied")
        return plans[-1], time.monotonic() - t0

    def failures(self, plan: Plan) -> List[str]:
        """Rings that ovs-vswitchd refused (error column, no ofport, or a
        config_error in status after a resize)."""
        br = self.db.bridge(self.spec.bridge)
        by_name = {r.port.name: r for r in self.db.rings(br)}
        errs = []
        changed = [d for d in plan.create] + [d for _, d in plan.update]
        for d in changed:
            r = by_name.get(d.ring)
            if r is None:
                errs.append("%s: ring %s vanished" % (d.name, d.ring))
                continue
            err = opt(r.iface.error)
            of = opt(r.iface.ofport)
            if err:
                errs.append(err if err.startswith(d.ring + ":")
                            else "%s: %s" % (d.ring, err))
            elif of is None or of <= 0:
                errs.append("%s: ring %s got no OpenFlow port" % (d.name,
                                                                  d.ring))
        if errs:
            return errs
        # A ring in use keeps its old ring when a resize fails, and says
        # so in status:config_error (refreshed about once a second).
        resized = [d for r, d in plan.update
                   if r.dcm is None or (r.dcm.ring_size, r.dcm.numa_id)
                   != (d.ring_size, d.numa_id)]
        if not resized:
            return []

        def verdict(d: Dcm) -> Optional[bool]:
            """True: in place; False: refused; None: not known yet."""
            st = by_name[d.ring].iface.status
            err = st.get("config_error")
            if err and err != plan.old_errors.get(d.ring):
                return False
            if (not err and st.get("ring_size") == str(d.ring_size)
                    and (d.numa_id is None
                         or st.get("numa_id") == str(d.numa_id))):
                return True
            return None

        deadline = time.monotonic() + 3
        while (any(verdict(d) is None for d in resized)
               and time.monotonic() < deadline):
            time.sleep(0.1)
            self.db._run_until(lambda: True, "refresh")
            by_name = {r.port.name: r for r in self.db.rings(br)}
        for d in resized:
            v = verdict(d)
            err = by_name[d.ring].iface.status.get("config_error")
            if v is False or (v is None and err):
                errs.append(err if err.startswith(d.ring + ":")
                            else "%s: %s" % (d.ring, err))
        return errs

    # -------------------------------------------------------------- apply
    def holds(self, dcms: List[Dcm], flow_count: int,
              count_flows: bool = True) -> bool:
        """Whether the switch's daqrings are those of 'dcms', as
        its database says (the IDL has it: nothing to dump), and its
        bridge holds 'flow_count' flows (one short OpenFlow request): the
        check between two apply()s of the fabric agent, which dump every
        flow, group and port.  A restarted ovs-vswitchd, or flows added
        or deleted by someone else, change the count.  The daqrings are
        compared again only when the switch's configuration changed
        (Ovsdb.config_seqno) or 'dcms' are not the last ones: they are
        the same from one full check to the next.  Without
        'count_flows' (the caller knows that no flow changed since it
        counted them: openflow.FlowWatch), the daqrings alone."""
        if not self.plan_unless_held(dcms).empty():
            return False
        return not count_flows or self.of.flow_count() == flow_count

    def plan_unless_held(self, dcms: List[Dcm]) -> Plan:
        """plan(dcms), or an empty plan without reading the rings again
        if a plan found the switch holding 'dcms' at this configuration
        (Ovsdb.config_seqno): a new slice of the fabric agent that
        changes routes only does not read every ring's row (160 on an
        HLT leaf, on a shared core)."""
        seqno = self.db.config_seqno
        if (seqno, dcms) == self.held_config:
            return Plan()
        plan = self.plan(dcms)
        if plan.empty():
            self.held_config = (seqno, dcms)
        return plan

    def apply(self, want: Callable[[List[Dcm]], List[Dcm]], comment: str,
              dry_run: bool, verbose: bool) -> bool:
        """Makes the switch's DCMs want(its current DCMs).  Returns True if
        something changed (would change, with 'dry_run')."""
        dcms = want(self.current())
        plan = self.plan(dcms) if dry_run else self.plan_unless_held(dcms)
        label = self.spec.label()
        res = self.result
        res["dry_run"] = dry_run
        res["notes"] = _grouped(self.spec.rate_notes)
        if plan.create or plan.update:
            # How the rates of the daqrings it writes were converted: not
            # when nothing is written ("no changes" alone).
            for note in res["notes"]:
                self.say("%s: %s" % (self.spec.name, note))
        if dry_run:
            dumped = self.of.flows(ours=False)
            problems = self.conflicts(dcms, dumped)
            if problems:
                raise MapError(problems)
            self._report_plan(plan, verbose, "would ")
            _, (n, n_del, n_add) = self.flow_changes(
                dcms, True, self.of.installed(dumped))
            flood = self.floodable([d.ring for d in dcms])
            res.update(plan.summary())
            res.update(no_flood=flood, flows={"dcms": n, "deleted": n_del,
                                              "added": n_add})
            if flood:
                self.say("%s: would set no-flood on %d daqrings%s"
                         % (label, len(flood), _names(flood, verbose)))
            if n:
                self.say("%s: would change the flows of %d DCMs (%d "
                         "deleted, %d added)" % (label, n, n_del, n_add))
            res["changed"] = not plan.empty() or bool(n) or bool(flood)
            if not res["changed"]:
                self.say("%s: no changes" % label)
            return res["changed"]
        flood_before: Dict[str, bool] = {}
        if plan.adopt:
            # What a rollback gives back to a hand-made daqring.
            flood_before = self.of.no_flood()
        if not plan.empty():
            plan, t_db = self.commit(want, comment)
            res.update(plan.summary())
            res.update(t_commit=round(self.t_commit, 6),
                       t_applied=round(t_db, 6))
            res["changed"] = not plan.empty()
            errs = self.failures(plan)
            if errs:
                res["refused"] = errs
                self.roll_back(plan, comment, flood_before,
                               "switch %s refused the change"
                               % self.spec.name,
                               "switch %s refused the change, rolled back"
                               % self.spec.name, errs)
            self._report_plan(plan, verbose, "")
            if not plan.empty():
                # (Planned again to nothing, after another client made
                # the change meanwhile: no transaction was sent.)
                self.say("%s: one OVSDB transaction: %d created, %d "
                         "updated, %d removed (committed in %.3f s, "
                         "applied by ovs-vswitchd in %.3f s)"
                         % (label, len(plan.create), len(plan.update),
                            len(plan.delete), self.t_commit, t_db))
        self.set_state("flows")
        try:
            n, n_del, n_add, flood = self.sync()
        except DaqctlError as e:
            if not plan.empty():
                self.roll_back(plan, comment, flood_before, str(e),
                               "%s; daqrings rolled back" % e, [])
            raise
        res.update(no_flood=flood, flows={"dcms": n, "deleted": n_del,
                                          "added": n_add})
        if flood:
            self.say("%s: set no-flood on %d daqrings%s"
                     % (label, len(flood), _names(flood, verbose)))
        if n:
            self.say("%s: one OpenFlow bundle: flows of %d DCMs changed "
                     "(%d deleted, %d added) in %.3f s"
                     % (label, n, n_del, n_add, self.t_bundle))
        res["changed"] = res["changed"] or bool(n) or bool(flood)
        self.set_state("done" if res["changed"] else "unchanged")
        if not res["changed"]:
            self.say("%s: no changes" % label)
        return res["changed"]

    def _report_plan(self, plan: Plan, verbose: bool, prefix: str) -> None:
        lines = []
        for d in plan.create:
            lines.append("%screate %s: ring %s of %d, %s, %s -> %s"
                         % (prefix, d.name, d.ring, d.ring_size,
                            d.shaping_text(), d.match_summary(), d.egress))
        for r, d in plan.update:
            what = ("adopt" if r.dcm is None else "update")
            lines.append("%s%s %s: %s" % (prefix, what, d.name,
                                          describe_update(r.dcm, d)))
        for r in plan.delete:
            lines.append("%sremove %s (ring %s)" % (
                prefix, r.dcm.name if r.dcm else "?", r.port.name))
        if verbose or len(lines) <= 20:
            for ln in lines:
                self.say("%s: %s" % (self.spec.name, ln))
        elif lines:
            self.say("%s: %s%d changes (-v lists them)"
                     % (self.spec.name, prefix, len(lines)))


def _names(names: List[str], verbose: bool) -> str:
    """': a, b, c' (at most 20 names unless 'verbose')."""
    if len(names) > 20 and not verbose:
        return " (-v lists them)"
    return ": " + ", ".join(names)
