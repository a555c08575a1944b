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

"""Undoing a committed plan (Rollback, mixed into reconcile.Reconciler):
the rings it created, changed, adopted or removed restored as they
were, unless another client changed them since, and the flows made
those of the DCMs in the database again; and the error that says
whether the switch is as it was.  It uses the reconciler's db, of,
spec, result, set_state(), progress(), forget() and sync()."""

from typing import Any, Dict, List

from .model import DaqctlError, EXIT_ROLLBACK_FAILED
from .ringplan import Plan, RingState


class Rollback:
    """A reconciler's rollback (see the module)."""

    def restore(self, plan: Plan, comment: str,
                flood_before: Dict[str, bool]) -> List[str]:
        """Undoes 'plan' (already committed): the rings it created are
        removed, those it changed or adopted get back their options, marks
        and ofport_request (and an adopted ring its flooding), those it
        removed are created again (empty), with their old OpenFlow port
        numbers.  A ring is restored only if it is still as the plan made
        it: one that another client changed, created or removed meanwhile
        is left as it is.  Then the flows are made those of the DCMs in the
        database.  Returns the names of the rings left alone."""
        left: List[str] = []
        # Created again, and those of them with a borrowed ofport_request.
        again: List[str] = []
        borrowed: List[str] = []

        def build(txn: Any) -> None:
            del left[:], again[:], borrowed[:]
            br = self.db.bridge(self.spec.bridge)
            br.verify("ports")
            ports = self.db.ports(br)
            for name, st in sorted(plan.before.items()):
                port = ports.get(name)
                now = RingState.of_port(port) if port is not None else None
                made = plan.after.get(name)
                if (port is not None and now is None) or (
                        (now.config() if now else None)
                        != (made.config() if made else None)):
                    left.append(name)
                    continue
                if port is not None:
                    iface = list(port.interfaces)[0]
                    for col in ("external_ids", "interfaces"):
                        port.verify(col)
                    for col in ("type", "options", "ofport_request"):
                        iface.verify(col)
                if st is None:
                    # Created by the plan: removed.
                    br.delvalue("ports", port)
                    port.delete()
                    iface.delete()
                elif port is None:
                    # Removed by the plan: created again.  ovs-vswitchd
                    # does not reuse an OpenFlow port number for an hour:
                    # without a request the ring would get a new one, and
                    # its DCM's flows point at the old one.
                    req = st.ofport_request
                    if not req and st.ofport is not None and st.ofport > 0:
                        req = [st.ofport]
                        borrowed.append(name)
                    iface = txn.insert(self.db.idl.tables["Interface"])
                    iface.name = st.iface_name
                    iface.type = st.iface_type
                    iface.options = st.options
                    iface.ofport_request = req
                    port = txn.insert(self.db.idl.tables["Port"])
                    port.name = name
                    port.interfaces = [iface]
                    port.external_ids = st.port_ids
                    br.addvalue("ports", port)
                    again.append(name)
                else:
                    if dict(port.external_ids) != st.port_ids:
                        port.external_ids = st.port_ids
                    if iface.type != st.iface_type:
                        iface.type = st.iface_type
                    if dict(iface.options) != st.options:
                        iface.options = st.options
                    if list(iface.ofport_request) != st.ofport_request:
                        iface.ofport_request = st.ofport_request

        def give_back(txn: Any) -> None:
            """The borrowed ofport_requests, once the ports have their
            numbers (which they keep)."""
            ports = self.db.ports(self.db.bridge(self.spec.bridge))
            for name in borrowed:
                st = plan.before[name]
                port = ports.get(name)
                now = RingState.of_port(port) if port is not None else None
                if (st is not None and now is not None
                        and now.ofport_request == [st.ofport]):
                    iface = list(port.interfaces)[0]
                    iface.verify("ofport_request")
                    iface.ofport_request = st.ofport_request

        if plan.empty():
            return []
        # The rings created again are new ports (flooding).
        self.forget()
        cfg = self.db.transact(build, comment + " (rollback)")
        self.db.wait_applied(cfg, self.progress)
        if borrowed:
            cfg = self.db.transact(give_back, comment + " (rollback)")
            self.db.wait_applied(cfg, self.progress)
        if self.of.written or again:
            # The flows of the restored DCMs, and those of rings created
            # again (if their old number was taken meanwhile).  (If
            # nothing was sent and no ring came back, the flows are still
            # those of before.)
            self.sync()
        # An adopted ring is a hand-made one again: as it was.
        if any(not flood_before.get(n, True) for n in plan.adopt
               if n not in left):
            now_flood = self.of.no_flood()
            for n in plan.adopt:
                if (n not in left and flood_before.get(n) is False
                        and now_flood.get(n)):
                    self.of.set_no_flood(n, False)
        return list(left)

    def roll_back(self, plan: Plan, comment: str,
                  flood_before: Dict[str, bool], failed: str,
                  rolled_back: str, details: List[str]) -> None:
        """Restores what 'plan' changed and raises: EXIT_FAILED if the
        switch is as it was, EXIT_ROLLBACK_FAILED if it is not."""
        more = "".join("\n  " + d for d in details)
        self.set_state("rolling back")
        try:
            left = self.restore(plan, comment, flood_before)
        except DaqctlError as e:
            self.result["rollback"] = "failed"
            self.set_state("rollback failed")
            raise DaqctlError(
                "%s%s\nROLLBACK FAILED: %s\nswitch %s is in neither its "
                "old nor its new state: look at 'ovs-daqctl show' and "
                "'ovs-daqctl flows', then run the command again (or apply "
                "the previous map)" % (failed, ":" + more if more else "",
                                       e, self.spec.name),
                EXIT_ROLLBACK_FAILED)
        self.result["rollback"] = "done"
        self.set_state("rolled back")
        if left:
            # Rings that another client changed after our commit: theirs.
            self.result["left_alone"] = left
            more += ("\n(not rolled back: %s, changed by another client "
                     "since this change was committed; left as they are: "
                     "look at them with 'ovs-daqctl show')"
                     % ", ".join(left))
        raise DaqctlError(rolled_back + (":" + more if more else ""))
