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

"""The DCMs' steering flows, replaced in one OpenFlow bundle through
ovs-ofctl."""

import argparse
import os
import re
import subprocess
import time
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from .model import (COOKIE_MASK, COOKIE_PREFIX, DaqctlError, Dcm,
                    EXIT_BAD_INPUT, OFPP_LOCAL, PRIO_FROM_RING, PRIO_TO_RING,
                    SwitchSpec)


# =================================================================== OpenFlow
# A flow as compared: (priority, match fields, actions).
Flow = Tuple[int, FrozenSet[str], str]


class OpenFlow:
    """OpenFlow access through ovs-ofctl: a dump restricted to our cookies
    and one bundle per change."""

    def __init__(self, target: str, ofctl: str, timeout: float,
                 ssl: List[str]) -> None:
        self.target = target
        self.ofctl = ofctl
        self.timeout = timeout
        self.ssl = ssl
        # Whether a change was sent (even one that failed: a bundle whose
        # connection was lost may or may not have been committed).
        self.written = False

    def run(self, args: List[str], stdin: Optional[str] = None) -> str:
        cmd = ([self.ofctl, "--timeout=%d" % max(1, int(self.timeout))]
               + self.ssl + args)
        try:
            p = subprocess.run(cmd, input=stdin, capture_output=True,
                               text=True, timeout=self.timeout + 10)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise DaqctlError("%s: %s" % (self.ofctl, e))
        if p.returncode != 0:
            verb = next((a for a in args if not a.startswith("-")
                         and not a.startswith("OpenFlow")), "")
            raise DaqctlError("%s %s failed: %s"
                              % (os.path.basename(self.ofctl), verb,
                                 p.stderr.strip() or p.returncode))
        return p.stdout

    def dump(self, names: bool = False) -> str:
        return self.run(["--names" if names else "--no-names", "--no-stats",
                         "dump-flows", self.target,
                         "cookie=%#x/%#x" % (COOKIE_PREFIX, COOKIE_MASK)])

    def installed(self) -> Dict[int, Set[Flow]]:
        """Our flows on the switch, by cookie."""
        out: Dict[int, Set[Flow]] = {}
        for line in self.dump().splitlines():
            line = line.strip()
            if not line.startswith("cookie="):
                continue
            head, sep, actions = line.partition(" actions=")
            if not sep:
                continue
            tokens = [t for t in head.replace(" ", "").split(",") if t]
            cookie = int(tokens[0].split("=", 1)[1], 16)
            prio = 32768
            match = set()
            for t in tokens[1:]:
                if t.startswith("priority="):
                    prio = int(t.split("=", 1)[1])
                elif t not in ("table=0",):
                    match.add(t)
            out.setdefault(cookie, set()).add(
                (prio, frozenset(match), actions.strip()))
        return out

    def bundle(self, lines: List[str]) -> None:
        self.written = True
        self.run(["--bundle", "add-flows", self.target, "-"],
                 "\n".join(lines) + "\n")

    # OpenFlow 1.1 and later have no OFPPC_NO_FLOOD: ovs-ofctl would
    # silently drop "no-flood" from an OpenFlow 1.3 port-mod.
    def no_flood(self) -> Dict[str, bool]:
        """Each port's name and whether it is no-flood."""
        out: Dict[str, bool] = {}
        port = None
        for line in self.run(["-O", "OpenFlow10", "show",
                              self.target]).splitlines():
            m = re.match(r"^ (\S+?)\((.*)\): addr:", line)
            if m:
                port = m.group(2)
                out[port] = False
            elif port is not None and line.strip().startswith("config:"):
                out[port] = "NO_FLOOD" in line.split()[1:]
        return out

    def set_no_flood(self, port: str, on: bool) -> None:
        self.written = True
        self.run(["-O", "OpenFlow10", "mod-port", self.target, port,
                  "no-flood" if on else "flood"])

    def set_no_flood_all(self, ports: List[str]) -> None:
        """Sets 'ports' no-flood, one port-mod (one ovs-ofctl) each, eight
        at a time: there is no port-mod in a bundle file."""
        self.written = True
        errors: List[str] = []
        todo = list(ports)
        running: List[Tuple[str, "subprocess.Popen[str]"]] = []
        deadline = time.monotonic() + self.timeout + 10
        while todo or running:
            while todo and len(running) < 8:
                port = todo.pop(0)
                cmd = ([self.ofctl, "--timeout=%d" % max(1, int(self.timeout)),
                        "-O", "OpenFlow10"] + self.ssl
                       + ["mod-port", self.target, port, "no-flood"])
                try:
                    running.append((port, subprocess.Popen(
                        cmd, stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, text=True)))
                except OSError as e:
                    raise DaqctlError("%s: %s" % (self.ofctl, e))
            port, p = running.pop(0)
            try:
                _, err = p.communicate(
                    timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                err, p.returncode = "timed out", -1
            if p.returncode != 0:
                errors.append("%s: %s" % (port, err.strip() or p.returncode))
        if errors:
            raise DaqctlError("%s mod-port no-flood failed: %s"
                              % (os.path.basename(self.ofctl),
                                 "; ".join(errors[:3])))


FlowSpec = Tuple[int, List[str], str]


def dcm_flows(d: Dcm, ring: str, egress: str) -> List[FlowSpec]:
    """The steering flows of one DCM: (priority, match, actions), with
    'ring' and 'egress' as OpenFlow port numbers or names."""
    flows: List[FlowSpec] = []
    if d.ip:
        flows.append((PRIO_TO_RING, ["ip", "nw_dst=%s" % d.ip],
                      "output:%s" % ring))
    for t in d.tuples:
        flows.append((PRIO_TO_RING, t.match(), "output:%s" % ring))
    if d.steering != "bound":
        flows.append((PRIO_FROM_RING, ["in_port=%s" % ring],
                      "output:%s" % egress))
    return flows


def flow_text(cookie: int, flow: FlowSpec) -> str:
    prio, match, actions = flow
    return "cookie=%#x,priority=%d,%s,actions=%s" % (cookie, prio,
                                                     ",".join(match), actions)


def ofport_text(n: int) -> str:
    return "LOCAL" if n == OFPP_LOCAL else str(n)


def of_target(args: argparse.Namespace, spec: SwitchSpec) -> str:
    """ovs-ofctl's target: --of / the map's 'of', else the bridge's
    management socket next to a local database socket, else the bridge
    name (which ovs-ofctl resolves in its OVS_RUNDIR)."""
    if spec.of:
        return spec.of
    if spec.db.startswith("unix:"):
        mgmt = os.path.join(os.path.dirname(spec.db[5:]),
                            spec.bridge + ".mgmt")
        if os.path.exists(mgmt):
            return "unix:" + mgmt
        return spec.bridge
    raise DaqctlError("switch %s: the database %s is remote; give its "
                      "OpenFlow target with --of (or 'of:' in the map), "
                      "e.g. tcp:IP:6653" % (spec.name, spec.db),
                      EXIT_BAD_INPUT)


def ssl_args(args: argparse.Namespace) -> List[str]:
    out = []
    for opt in ("private_key", "certificate", "ca_cert"):
        v = getattr(args, opt, None)
        if v:
            out.append("--%s=%s" % (opt.replace("_", "-"), v))
    return out
