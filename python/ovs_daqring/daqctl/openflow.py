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
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from typing import (Dict, FrozenSet, Iterable, List, Optional, Sequence,
                    Set, Tuple)

from ..process import die_with_parent
from .model import (COOKIE_MASK, COOKIE_PREFIX, DaqctlError, Dcm,
                    EXIT_BAD_INPUT, OFPP_LOCAL, PRIO_FROM_RING, PRIO_TO_RING,
                    SwitchSpec)


# =================================================================== OpenFlow
# A flow as compared: (priority, match fields, actions).
Flow = Tuple[int, FrozenSet[str], str]

# A group as compared: (type, ((watch port, actions) per bucket)).
Group = Tuple[str, Tuple[Tuple[str, str], ...]]

# Our groups (the fabric agent's fast_failover groups): OpenFlow groups
# have no cookie, so ours are those whose id is 0xdac7 in the top 16 bits
# (below OFPG_MAX, 0xffffff00).
GROUP_PREFIX = 0xdac7 << 16
GROUP_MASK = 0xffff << 16

# ovs-ofctl's options for the port-mods of no-flood (OpenFlow.no_flood()).
OF10 = ("-O", "OpenFlow10")

# What ovs-ofctl dump-flows prints before the match that is not the match:
# statistics and a flow's properties ("key=value"), and its flags.
_FLOW_STATS = ("duration", "n_packets", "n_bytes", "idle_age", "hard_age")
_FLOW_PROPS = ("idle_timeout", "hard_timeout", "importance")
_FLOW_FLAGS = ("send_flow_rem", "check_overlap", "reset_counts",
               "no_packet_counts", "no_byte_counts", "allow_hidden_fields",
               "no_readonly_table")


@dataclass
class DumpedFlow:
    """One flow as ovs-ofctl dump-flows prints it."""
    cookie: int
    table: str                # a number (or a name, with --names)
    priority: int
    match: List[str]          # the match fields, as printed
    props: List[str]          # idle_timeout=..., send_flow_rem, ...
    actions: str

    def fields(self) -> Dict[str, str]:
        """The match's FIELD=VALUE pairs (a bare one, e.g. "ip", left
        out)."""
        return dict(m.split("=", 1) for m in self.match if "=" in m)

    def compared(self) -> Flow:
        """The flow as ovs-daqctl compares it with the flows it wants:
        a property (a timeout, a flag) or another table makes it
        differ."""
        extra = self.props + (["table=" + self.table]
                              if self.table != "0" else [])
        return (self.priority, frozenset(self.match + extra),
                canonical_actions(self.actions))


# A set_field of the destination MAC as OpenFlow 1.2 and later print it.
_SET_ETH_DST = re.compile(r"set_field:([0-9a-f]{2}(?::[0-9a-f]{2}){5})"
                          r"->eth_dst")


# What set_dl_dst() puts before the rest of the actions.
_SETS_DL_DST = re.compile(r"^mod_dl_dst:([0-9a-f]{2}(?::[0-9a-f]{2}){5}),"
                          r"(.*)$")


def canonical_actions(actions: str) -> str:
    """'actions' as ovs-daqctl writes them: ovs-ofctl prints the action
    that sets the destination MAC as mod_dl_dst over OpenFlow 1.0 (what
    dump() speaks) but as a set_field over 1.2 and later."""
    if "->eth_dst" not in actions:
        return actions
    return _SET_ETH_DST.sub(r"mod_dl_dst:\1", actions)


def parse_flow(line: str) -> Optional[DumpedFlow]:
    """One line of ovs-ofctl dump-flows (with or without --no-stats and
    --names), or None for a line that is no flow (a reply's header).
    ovs-ofctl leaves out a cookie of 0, table 0 and the default priority
    (32768)."""
    line = line.strip()
    if line.startswith("actions="):
        head, actions = "", line[len("actions="):]
    else:
        head, sep, actions = line.partition(" actions=")
        if not sep:
            return None
    flow = DumpedFlow(0, "0", 32768, [], [], actions.strip())
    # "cookie=C, table=T, idle_timeout=I, send_flow_rem priority=P,MATCH":
    # properties end with ", ", flags with " ", the match has no spaces.
    for t in re.split(r"[,\s]+", head):
        key, _, value = t.partition("=")
        try:
            if not t or key in _FLOW_STATS:
                continue
            if key == "cookie":
                flow.cookie = int(value, 16)
            elif key == "table":
                flow.table = value
            elif key == "priority":
                flow.priority = int(value)
            elif key in _FLOW_PROPS or t in _FLOW_FLAGS:
                flow.props.append(t)
            else:
                flow.match.append(t)
        except ValueError:
            return None
    return flow


def parse_group(line: str) -> Optional[Tuple[int, Group]]:
    """One group of ovs-ofctl dump-groups (any OpenFlow version:
    "group_id=N,type=ff,bucket=bucket_id:0,watch_port:2,actions=output:2,
    bucket=..."), or None for a line that is no group."""
    line = line.strip()
    if not line.startswith("group_id="):
        return None
    head, *buckets = line.split(",bucket=")
    fields = dict(f.split("=", 1) for f in head.split(",") if "=" in f)
    try:
        gid = int(fields["group_id"], 0)
    except (KeyError, ValueError):
        return None
    out = []
    for b in buckets:
        params, _, actions = b.partition("actions=")
        watch = ""
        for f in params.split(","):
            key, _, value = f.replace("=", ":", 1).partition(":")
            if key == "watch_port":
                watch = value
        out.append((watch, actions.strip()))
    return gid, (fields.get("type", ""), tuple(out))


def is_our_group(gid: int) -> bool:
    return gid & GROUP_MASK == GROUP_PREFIX


def group_ids(lists: Iterable[Tuple[str, ...]]) -> Dict[Tuple[str, ...], int]:
    """A group id of ours for each distinct list of ports: from a hash of
    the list, so that it stays the same while the list exists (a
    collision takes the next free id, lists in sorted order)."""
    out: Dict[Tuple[str, ...], int] = {}
    used: Set[int] = set()
    for ports in sorted(set(lists)):
        h = zlib.crc32(",".join(ports).encode()) & 0xffff
        while GROUP_PREFIX | h in used:
            h = (h + 1) & 0xffff
        used.add(GROUP_PREFIX | h)
        out[ports] = GROUP_PREFIX | h
    return out


# The fabric's detours (fabric.rst, "Detours"): a spine whose link
# down to a leaf is dead sends what it routes there to another leaf,
# tagged with BOUNCE_VID (and its in_port cleared: the other leaf is
# often the one the packet came from); that leaf takes the tag off,
# marks the source MAC BOUNCED_MAC and sends it up to another spine,
# which routes it down; a tagged packet that a leaf receives already
# marked was bounced twice and is dropped (counted by its flow).  A
# route's port (Reconciler.routes) prefixed BOUNCE or RESUME outputs to
# the port after those actions; a port name has no ':' (a map names a
# port SWITCH:PORT).
BOUNCE_VID = 4094
BOUNCED_MAC = "02:da:c7:0b:0c:ed"
BOUNCE = "bounce:"
RESUME = "resume:"
_PORT_ACTIONS = {
    BOUNCE: "mod_vlan_vid:%d,load:0->NXM_OF_IN_PORT[]," % BOUNCE_VID,
    RESUME: "strip_vlan,mod_dl_src:%s," % BOUNCED_MAC}


def port_actions(port: str) -> Tuple[str, str]:
    """A route's port: the actions before its output ("" for a plain
    port, else ending with ",") and the port's name."""
    for prefix, actions in _PORT_ACTIONS.items():
        if port.startswith(prefix):
            return actions, port[len(prefix):]
    return "", port


def port_name(port: str) -> str:
    """The name of a route's port (see port_actions())."""
    return port_actions(port)[1]


def failover_group(ofports: List[str],
                   before: Sequence[str] = ()) -> Group:
    """A fast_failover group over 'ofports' (OpenFlow port numbers), in
    order: each bucket watches its port and outputs to it, after the
    actions 'before' gives it, if any (port_actions())."""
    pre = list(before) + [""] * (len(ofports) - len(before))
    return ("ff", tuple((p, "%soutput:%s" % (a, p))
                        for p, a in zip(ofports, pre)))


def group_text(gid: int, g: Group) -> str:
    kind, buckets = g
    return "group_id=%d,type=%s,%s" % (
        gid, kind, ",".join("bucket=watch_port:%s,actions=%s" % b
                            for b in buckets))


class FlowWatch:
    """Whether a bridge's flow table may have changed since the last
    look, without asking the switch each time: a long-lived `ovs-ofctl
    monitor TARGET watch:!initial` (an OpenFlow flow monitor, a Nicira
    extension), which prints each flow added, modified or deleted by
    anyone, and ends when the switch goes away.  The fabric agent looks
    at its switch every interval; with dozens of agents on one core,
    starting an ovs-ofctl for each look cost more than all their other
    work.  Groups are not watched (full checks compare them)."""

    def __init__(self, of: "OpenFlow") -> None:
        self.of = of
        self.proc: Optional["subprocess.Popen[bytes]"] = None
        # Whether the switch has answered the monitor request: from then
        # on, every change is printed.
        self.ready = False
        self.changed = True
        self.started = 0
        self.dir: Optional[str] = None

    def start(self) -> None:
        """Starts the monitor if it is not running (again after it
        ended: the switch restarted, say)."""
        if self.proc is not None:
            return
        if self.dir is None:
            # ovs-ofctl monitor serves unixctl commands: on a socket of
            # its own, not in an OVS run directory that may not exist.
            self.dir = tempfile.mkdtemp(prefix="daqwatch.")
        try:
            self.proc = subprocess.Popen(
                self.of.argv(["monitor", self.of.target, "watch:!initial"],
                             ["--unixctl=" + os.path.join(self.dir, "ctl")],
                             timeout=False),
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        except OSError:
            self.proc = None
            return
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.started += 1
        self.ready = False
        self.changed = True

    def _read(self) -> None:
        if self.proc is None:
            return
        assert self.proc.stdout is not None
        while True:
            try:
                data = self.proc.stdout.read(65536)
            except OSError:
                data = b""
            if data is None:
                # Nothing more for now.
                return
            if not data:
                # The switch went away (or the monitor failed): what
                # happened meanwhile is not known.
                self.close()
                return
            if self.ready:
                self.changed = True
            elif b"NXST_FLOW_MONITOR reply" in data:
                # The answer to the monitor request; whatever changed
                # before it was not watched.
                self.ready = True
                self.changed = True
            else:
                self.changed = True

    def news(self) -> bool:
        """Whether take() would say True now (it consumes nothing)."""
        self._read()
        return self.changed or not self.ready

    def take(self) -> bool:
        """Whether the flows may have changed since the last take():
        True until the monitor is up, and after any output of it (the
        caller's own changes too), which this call consumes."""
        self._read()
        changed = self.changed or not self.ready
        self.changed = False
        return changed

    def fd(self) -> Optional[int]:
        """The file descriptor to wait on for news (None: no monitor)."""
        if self.proc is None or self.proc.stdout is None:
            return None
        return self.proc.stdout.fileno()

    def close(self) -> None:
        p, self.proc = self.proc, None
        self.ready = False
        self.changed = True
        if p is None:
            return
        try:
            p.kill()
        except OSError:
            pass
        p.wait()
        if p.stdout is not None:
            p.stdout.close()

    def stop(self) -> None:
        """close(), and the monitor's directory goes too."""
        self.close()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


class OpenFlow:
    """OpenFlow access through ovs-ofctl: a dump restricted to our cookies
    and one bundle per change.  Every command line ends ovs-ofctl's
    options with "--" before its command (argv()): its target and port
    names (the fabric's agents take them from the fabric database's rows)
    are never read as options."""

    def __init__(self, target: str, ofctl: str, timeout: float,
                 ssl: List[str]) -> None:
        self.target = target
        self.ofctl = ofctl
        self.timeout = timeout
        self.ssl = ssl
        # Whether a change was sent (even one that failed: a bundle whose
        # connection was lost may or may not have been committed).
        self.written = False

    def argv(self, command: List[str], options: Sequence[str] = (),
             timeout: bool = True) -> List[str]:
        """ovs-ofctl's command line: its options (--timeout unless not
        'timeout', the SSL files, 'options'), "--", then 'command' (its
        verb, the target and its arguments).  After "--" nothing is an
        option: a target "-O" is a target ovs-ofctl cannot open, not
        its option -O."""
        return ([self.ofctl]
                + (["--timeout=%d" % max(1, int(self.timeout))]
                   if timeout else [])
                + self.ssl + list(options) + ["--"] + command)

    def run(self, command: List[str], stdin: Optional[str] = None,
            options: Sequence[str] = ()) -> str:
        """ovs-ofctl 'command' (argv()) with 'options': its output."""
        try:
            p = subprocess.run(self.argv(command, options), input=stdin,
                               capture_output=True, text=True,
                               timeout=self.timeout + 10)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise DaqctlError("%s: %s" % (self.ofctl, e))
        if p.returncode != 0:
            raise DaqctlError("%s %s failed: %s"
                              % (os.path.basename(self.ofctl), command[0],
                                 p.stderr.strip() or p.returncode))
        return p.stdout

    def dump(self, names: bool = False, ours: bool = True) -> str:
        """dump-flows of our cookies (or, if not 'ours', of every flow)."""
        return self.run(["dump-flows", self.target]
                        + (["cookie=%#x/%#x" % (COOKIE_PREFIX, COOKIE_MASK)]
                           if ours else []),
                        options=["--names" if names else "--no-names",
                                 "--no-stats"])

    def flows(self, names: bool = False,
              ours: bool = True) -> List[DumpedFlow]:
        """The flows of dump(), parsed."""
        out = []
        for line in self.dump(names, ours).splitlines():
            f = parse_flow(line)
            if f is not None:
                out.append(f)
        return out

    def installed(self, flows: Optional[List[DumpedFlow]] = None
                  ) -> Dict[int, Set[Flow]]:
        """Our flows on the switch (of 'flows', if given), by cookie."""
        out: Dict[int, Set[Flow]] = {}
        for f in self.flows() if flows is None else flows:
            if is_ours(f.cookie):
                out.setdefault(f.cookie, set()).add(f.compared())
        return out

    def flow_count(self) -> int:
        """How many flows the bridge has, of any cookie (dump-aggregate:
        one short reply, where dump() lists every flow)."""
        out = self.run(["dump-aggregate", self.target])
        m = re.search(r"\bflow_count=(\d+)", out)
        if m is None:
            raise DaqctlError("%s dump-aggregate: no flow count in %r"
                              % (os.path.basename(self.ofctl), out[:200]))
        return int(m.group(1))

    def groups(self) -> Dict[int, Group]:
        """Our groups on the switch, by id."""
        out: Dict[int, Group] = {}
        for line in self.run(["dump-groups", self.target],
                             options=["--no-names"]).splitlines():
            g = parse_group(line)
            if g is not None and is_our_group(g[0]):
                out[g[0]] = g[1]
        return out

    def bundle(self, lines: List[str]) -> None:
        """Flow mods ("add ...", "delete ...") and group mods ("group add
        ...") in one bundle, in order."""
        self.written = True
        if any(ln.startswith("group ") for ln in lines):
            self.run(["bundle", self.target, "-"], "\n".join(
                ln if ln.startswith("group ") else "flow " + ln
                for ln in lines) + "\n")
        else:
            self.run(["add-flows", self.target, "-"],
                     "\n".join(lines) + "\n", options=["--bundle"])

    # OpenFlow 1.1 and later have no OFPPC_NO_FLOOD: ovs-ofctl would
    # silently drop "no-flood" from an OpenFlow 1.3 port-mod (OF10).
    def no_flood(self) -> Dict[str, bool]:
        """Each port's name and whether it is no-flood."""
        out: Dict[str, bool] = {}
        port = None
        for line in self.run(["show", self.target],
                             options=OF10).splitlines():
            m = re.match(r"^ (\S+?)\((.*)\): addr:", line)
            if m:
                port = m.group(2)
                out[port] = False
            elif port is not None and line.strip().startswith("config:"):
                out[port] = "NO_FLOOD" in line.split()[1:]
        return out

    def set_no_flood(self, port: str, on: bool) -> None:
        self.written = True
        self.run(["mod-port", self.target, port,
                  "no-flood" if on else "flood"], options=OF10)

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
                cmd = self.argv(["mod-port", self.target, port, "no-flood"],
                                OF10)
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
    'ring' and 'egress' as OpenFlow port numbers or names.  Its flows into
    the ring set its 'dl_dst' first, if it has one."""
    flows: List[FlowSpec] = []
    to_ring = set_dl_dst(d.dl_dst) + "output:%s" % ring
    if d.ip:
        flows.append((PRIO_TO_RING, ["ip", "nw_dst=%s" % d.ip], to_ring))
    for t in d.tuples:
        flows.append((PRIO_TO_RING, t.match(), to_ring))
    if d.steering != "bound":
        flows.append((PRIO_FROM_RING, ["in_port=%s" % ring],
                      "output:%s" % egress))
    return flows


def set_dl_dst(mac: Optional[str]) -> str:
    """The actions that set the destination MAC to 'mac' before an
    output, as ovs-ofctl prints them ("" for None): the fabric's last hop
    (its hosts do no ARP, and send their frames to whatever MAC)."""
    return "mod_dl_dst:%s," % mac if mac else ""


def split_dl_dst(actions: str) -> Tuple[Optional[str], str]:
    """The inverse of set_dl_dst(): the destination MAC that 'actions'
    (as ovs-ofctl prints them, over any OpenFlow version) set first, or
    None, and the actions after it."""
    m = _SETS_DL_DST.match(canonical_actions(actions))
    return (m.group(1), m.group(2)) if m else (None, actions)


def flow_text(cookie: int, flow: FlowSpec) -> str:
    prio, match, actions = flow
    return "cookie=%#x,priority=%d,%s,actions=%s" % (cookie, prio,
                                                     ",".join(match), actions)


def is_ours(cookie: int) -> bool:
    """Whether a flow's cookie is one of ovs-daqctl's (0xdac7...)."""
    return cookie & COOKIE_MASK == COOKIE_PREFIX


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


def find_ofctl() -> str:
    """$OVS_OFCTL, else the ovs-ofctl next to the running program (an OVS
    build tree's utilities/), else PATH's."""
    env = os.environ.get("OVS_OFCTL")
    if env:
        return env
    here = os.path.join(os.path.dirname(os.path.realpath(sys.argv[0])),
                        "ovs-ofctl")
    if os.access(here, os.X_OK):
        return here
    return shutil.which("ovs-ofctl") or "/usr/bin/ovs-ofctl"


def set_ssl(args: argparse.Namespace) -> None:
    """The SSL files of ssl: remotes (--private-key, --certificate,
    --ca-cert), for OVS's Python library (imported only if one is given:
    the commands that need no switch need no library)."""
    if not (args.private_key or args.certificate or args.ca_cert):
        return
    import ovs.stream
    if args.private_key:
        ovs.stream.Stream.ssl_set_private_key_file(args.private_key)
    if args.certificate:
        ovs.stream.Stream.ssl_set_certificate_file(args.certificate)
    if args.ca_cert:
        ovs.stream.Stream.ssl_set_ca_cert_file(args.ca_cert)


def ssl_args(args: argparse.Namespace) -> List[str]:
    out = []
    for opt in ("private_key", "certificate", "ca_cert"):
        v = getattr(args, opt, None)
        if v:
            out.append("--%s=%s" % (opt.replace("_", "-"), v))
    return out
