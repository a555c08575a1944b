"""Hosts as network namespaces: the address plan (pure) and the commands
that build, measure and remove it (root)."""

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Sequence

from ..process import Cleanup, RunError, run

NET = "10.77"
PREFIX = 16
ROS_PORT = 9000
RING_OFPORT_BASE = 1000
# DPDK's af_packet PMD gives each queue pair one socket with an RX and a
# TX ring of the same `framecnt` frames, and at most this many pairs
# (RTE_PMD_AF_PACKET_MAX_RINGS, DPDK 22.11 and 24.11).
MAX_QPAIRS = 16
# Frames a host port's RX side must hold: DPDK's default af_packet ring.
RX_FRAMES = 512
# The congestion controls a namespace may make its default.
ALLOWED_CC = "net.ipv4.tcp_allowed_congestion_control"
# Held while a run changes ALLOWED_CC and sets up its hosts.
CC_LOCK = "/run/lock/ovs-daqring-cc.lock"
# No IPv6 (router solicitations, MLD) on our links: only the emulated
# traffic crosses the switch.
NO_IPV6 = ("set -e\n"
           "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6\n"
           "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6\n")


@dataclass
class Host:
    kind: str                 # "dcm" or "ros"
    index: int                # per kind
    ns: str                   # namespace
    veth: str                 # switch side of the veth pair (root ns)
    mac: str                  # of e0 inside the namespace
    ips: List[str]
    ofport: int
    ros_ids: List[int] = field(default_factory=list)
    frames: int = 0           # af_packet ring frames, 0 = DPDK default

    @property
    def port_name(self) -> str:
        return self.veth

    @property
    def qpairs(self) -> int:
        """af_packet queue pairs of the switch port.  A DCM port's
        `frames` model the ToR port's shallow output buffer, but DPDK
        sizes a socket's RX ring with the same framecnt: one 32-frame RX
        ring cannot hold the DCM's request burst (one request per ROS),
        and the kernel drops what does not fit without any counter (60
        ROS: 279 requests and ACKs lost in 10 events, 123 RTOs, all in
        the DCM).  So a DCM port gets enough queue pairs that their RX
        rings together hold RX_FRAMES like any other port: the kernel
        spreads the frames over the sockets by flow hash and rolls over
        to another socket when one is full (PACKET_FANOUT_HASH | ROLLOVER,
        which DPDK sets), and OVS polls every RX queue.  The PMD still
        sends through one TX queue (its static one), so the output
        buffer stays `frames` deep."""
        if not self.frames or self.frames >= RX_FRAMES:
            return 1
        return min(MAX_QPAIRS, -(-RX_FRAMES // self.frames))

    def devargs(self) -> str:
        """DPDK's af_packet PMD on the switch-side veth; qdisc_bypass=0
        so that what OVS sends passes the veth's qdisc (the tbf)."""
        args = "net_af_packet%d,iface=%s,qdisc_bypass=0" % (self.ofport,
                                                            self.veth)
        if self.frames:
            args += ",framecnt=%d" % self.frames
        if self.qpairs > 1:
            args += ",qpairs=%d" % self.qpairs
        return args


@dataclass
class Plan:
    tag: str
    dcms: List[Host]
    ros_hosts: List[Host]
    # The DCMs' hosts, one namespace and access link each: the DCMs
    # themselves unless several share a host (--dcms-per-host), whose
    # DCM entries then name the host's namespace, veth and MAC with one
    # address each.
    dcm_hosts: List[Host] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.dcm_hosts:
            self.dcm_hosts = list(self.dcms)

    @property
    def switch_ns(self) -> str:
        """The switch's own namespace: ovs-vswitchd runs there with the
        switch-side veths, so its tap devices (ovs-netdev, the bridge)
        never clash with another ovs-vswitchd on the machine."""
        return "%s-sw" % self.tag

    @property
    def hosts(self) -> List[Host]:
        return self.dcm_hosts + self.ros_hosts

    @property
    def ros_ips(self) -> List[str]:
        return [ip for h in self.ros_hosts for ip in h.ips]

    def ring_name(self, dcm: Host) -> str:
        return "dcm%d-ring" % dcm.index

    def ring_ofport(self, dcm: Host) -> int:
        return RING_OFPORT_BASE + dcm.index

    def dcms_of(self, host: Host) -> List[Host]:
        """The DCMs on a DCM host (behind its access link)."""
        return [d for d in self.dcms if d.veth == host.veth]


def ros_ip(i: int) -> str:
    return "%s.%d.%d" % (NET, 1 + i // 250, 1 + i % 250)


def make_plan(pid: int, ros: int, dcms: int, per_host: int,
              dcm_frames: int = 0, dcms_per_host: int = 1) -> Plan:
    """Names, addresses and port numbers; nothing is created.  Namespaces
    are dqi<pid>-sw (the switch), dqi<pid>-dcmN (or, with several DCMs
    per host, dqi<pid>-hltN holding DCMs N*K .. N*K+K-1) and
    dqi<pid>-rosN; switch-side veths dq<pid>dN / dq<pid>rN (at most 15
    characters), host side e0; DCMs 10.77.0.N, ROS 10.77.1.N..."""
    if len("dq%dr%d" % (pid, ros)) > 15:
        raise ValueError("pid %d too long for interface names" % pid)
    if dcms_per_host < 1 or dcms % dcms_per_host:
        raise ValueError("%d DCMs do not fill hosts of %d"
                         % (dcms, dcms_per_host))
    tag = "dqi%d" % pid
    d_hosts, hlt, r_hosts = [], [], []
    n_hosts = dcms // dcms_per_host
    for k in range(n_hosts):
        ids = range(k * dcms_per_host, (k + 1) * dcms_per_host)
        host = Host(
            kind="dcm", index=k,
            ns="%s-%s%d" % (tag, "dcm" if dcms_per_host == 1 else "hlt", k),
            veth="dq%dd%d" % (pid, k), mac="02:77:00:00:00:%02x" % (k + 1),
            ips=["%s.0.%d" % (NET, d + 1) for d in ids], ofport=k + 1,
            frames=dcm_frames)
        hlt.append(host)
        if dcms_per_host == 1:
            d_hosts.append(host)
            continue
        for d in ids:
            d_hosts.append(Host(
                kind="dcm", index=d, ns=host.ns, veth=host.veth,
                mac=host.mac, ips=["%s.0.%d" % (NET, d + 1)],
                ofport=host.ofport, frames=dcm_frames))
    for j, first in enumerate(range(0, ros, per_host)):
        ids = list(range(first, min(ros, first + per_host)))
        r_hosts.append(Host(
            kind="ros", index=j, ns="%s-ros%d" % (tag, j),
            veth="dq%dr%d" % (pid, j),
            mac="02:77:00:00:%02x:%02x" % (1 + j // 256, j % 256),
            ips=[ros_ip(i) for i in ids], ofport=n_hosts + j + 1,
            ros_ids=ids))
    return Plan(tag=tag, dcms=d_hosts, ros_hosts=r_hosts, dcm_hosts=hlt)


def rps_mask(cpus: Sequence[int]) -> str:
    """A CPU list as the kernel's rps_cpus bitmap: hex, 32-bit groups
    separated by commas, most significant first ("" for none)."""
    if not cpus:
        return ""
    bits = sum(1 << c for c in set(cpus))
    groups = []
    while True:
        groups.append("%08x" % (bits & 0xffffffff))
        bits >>= 32
        if not bits:
            break
    return ",".join(reversed(groups))


def tbf_command(ns: str, veth: str, rate_bps: int, burst: int, limit: int,
                overhead: int) -> List[str]:
    """The access link: tbf on the switch-side veth of a DCM.  With an
    overhead, a size table makes tbf charge each frame its Ethernet
    overhead too (FCS, preamble, inter-frame gap)."""
    cmd = ["tc", "-n", ns, "qdisc", "replace", "dev", veth, "root"]
    if overhead:
        cmd += ["stab", "overhead", str(overhead), "linklayer", "ethernet"]
    return cmd + ["tbf", "rate", "%dbit" % rate_bps, "burst", str(burst),
                  "limit", str(limit)]


# The deep-FIFO peer's Linux bridge, in the run's switch namespace.
DEEP_BRIDGE = "dqbr0"


def bridge_batch(plan: Plan, name: str) -> str:
    """`ip -batch` input that creates bridge NAME (no STP, so ports
    forward at once; no multicast snooping; addresses never age out: the
    hosts' are static entries) and makes every host veth its port."""
    lines = ["link add %s type bridge stp_state 0 forward_delay 0 "
             "ageing_time 100000 mcast_snooping 0" % name]
    lines += ["link set %s master %s" % (h.veth, name) for h in plan.hosts]
    lines.append("link set %s up" % name)
    return "".join(line + "\n" for line in lines)


def deep_fifo_command(ns: str, host: Host, limit: int, rate_bps: int,
                      burst: int, overhead: int) -> List[str]:
    """The deep FIFO on a bridge port's egress: a DCM host's access link
    keeps its rate (tbf, counting frames as the shallow link does) with
    LIMIT bytes of queue; a ROS port has no rate of its own here (nor on
    the DPDK switch) and gets a bfifo of LIMIT bytes."""
    if host.kind == "dcm":
        return tbf_command(ns, host.veth, rate_bps, burst, limit, overhead)
    return ["tc", "-n", ns, "qdisc", "replace", "dev", host.veth, "root",
            "bfifo", "limit", str(limit)]


def qdisc_row(data: List[Dict[str, object]]) -> Dict[str, int]:
    """The counters of the root qdisc in `tc -s -j qdisc show dev X`
    output (zeros for a device without one)."""
    root = next((q for q in data if q.get("root")), data[0] if data else {})
    return {k: int(root.get(k, 0)) for k in       # type: ignore
            ("packets", "bytes", "drops", "overlimits", "requeues")}


def allow_congestion_control(cc: str,
                             cleanup: Cleanup) -> Callable[[], None]:
    """A namespace other than the machine's may make its default only a
    congestion control of net.ipv4.tcp_allowed_congestion_control (else
    EPERM), a list of the whole machine (those unprivileged sockets may
    choose) that holds the machine's default and reno.  Adds `cc` to it
    while the hosts are set up; returns what puts the list back (at once,
    or by `cleanup` if the run dies first).  Call it holding CC_LOCK (see
    cc_lock()), so that runs do not put the list back under each other's
    feet."""
    allowed = run(["sysctl", "-n", ALLOWED_CC]).split()
    if cc in allowed:
        return lambda: None
    done = []

    def restore() -> None:
        if not done:
            done.append(True)
            run(["sysctl", "-q", "-w", "%s=%s"
                 % (ALLOWED_CC, " ".join(allowed))])
    cleanup.push("restore " + ALLOWED_CC, restore)
    run(["sysctl", "-q", "-w", "%s=%s"
         % (ALLOWED_CC, " ".join(allowed + [cc]))])
    return restore


@contextlib.contextmanager
def cc_lock() -> Iterator[None]:
    """Held while a run changes ALLOWED_CC and sets up its hosts: the
    allowed list is the whole machine's, and runs of the single switch
    and of the fabric may overlap."""
    with open(CC_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


class Topology:
    """Creates the plan's namespaces, veths and qdiscs; registers their
    removal with the Cleanup before creating anything."""

    def __init__(self, plan: Plan, cleanup: Cleanup) -> None:
        self.plan = plan
        self.cleanup = cleanup

    def namespaces(self) -> List[str]:
        return [self.plan.switch_ns] + [h.ns for h in self.plan.hosts]

    def _remove(self) -> None:
        """Deleting the namespaces deletes the veths and qdiscs in them."""
        run(["ip", "-force", "-batch", "-"], check=False, timeout=120,
            input="".join("netns del %s\n" % ns
                          for ns in self.namespaces()))
        left = [ns for ns in self.namespaces()
                if os.path.exists("/run/netns/" + ns)]
        if left:
            raise RunError("namespaces left behind: %s" % " ".join(left))

    def create(self, rate_bps: int, burst: int, limit: int,
               overhead: int, rps_cpus: Sequence[int] = (),
               rps_kinds: Sequence[str] = ("dcm", "ros"),
               congestion_control: str = "cubic") -> None:
        """`rps_cpus`: CPUs that do the receive processing of the hosts of
        `rps_kinds` (RPS on their e0), empty = where the sender runs (see
        _setup_inside).  `congestion_control`: the TCP congestion control
        of every host, checked after it is set (a new namespace inherits
        the machine's default, which is not always cubic)."""
        sw = self.plan.switch_ns
        existing = set(run(["ip", "netns", "list"]).split())
        clash = [ns for ns in self.namespaces() if ns in existing]
        if clash:
            raise RunError("already exist (a stale run?): %s"
                           % " ".join(clash))
        self.cleanup.push("remove namespaces", self._remove)
        run(["ip", "-batch", "-"], timeout=120, input="".join(
            "netns add %s\n" % ns for ns in self.namespaces()))
        run(["ip", "netns", "exec", sw, "sh", "-c", NO_IPV6 +
             "ip link set lo up"])
        run(["ip", "-n", sw, "-batch", "-"], timeout=120, input="".join(
            "link add %s type veth peer name e0 netns %s\n"
            % (h.veth, h.ns) for h in self.plan.hosts))
        run(["ip", "-n", sw, "-batch", "-"], timeout=120, input="".join(
            "link set %s up\n" % h.veth for h in self.plan.hosts))
        # The allowed list is the whole machine's: runs of daq-incast set
        # up their hosts one at a time (CC_LOCK), and a run of an older
        # version that puts the list back under our feet is answered by
        # allowing again, once per host.
        with cc_lock():
            restore = self._allow(congestion_control)
            try:
                for h in self.plan.hosts:
                    rps = (rps_mask(rps_cpus) if h.kind in rps_kinds
                           else "")
                    try:
                        self._setup_inside(h, rps, congestion_control)
                    except RunError as e:
                        if "Operation not permitted" not in str(e):
                            raise
                        restore()
                        restore = self._allow(congestion_control)
                        self._setup_inside(h, rps, congestion_control)
            finally:
                restore()
        wrong = {ns: cc for ns, cc in self.congestion_control().items()
                 if cc != congestion_control}
        if wrong:
            raise RunError("TCP congestion control is not %s in %s"
                           % (congestion_control, ", ".join(
                               "%s (%s)" % kv for kv in wrong.items())))
        self.link = (rate_bps, burst, limit, overhead)
        self.shallow_links()

    def shallow_links(self) -> None:
        """The DCM hosts' access links as a ToR port has them: the link's
        rate and a shallow buffer (a tbf on each DCM host's veth)."""
        rate_bps, burst, limit, overhead = self.link
        for d in self.plan.dcm_hosts:
            run(tbf_command(self.plan.switch_ns, d.veth, rate_bps, burst,
                            limit, overhead))

    # ------------------------------------------------------------ bridge
    def bridge_up(self, limits: Dict[str, int]) -> None:
        """The deep-buffer peer: every host veth a port of a Linux bridge
        (DEEP_BRIDGE, in the switch's namespace) with static MAC entries,
        and a deep FIFO on every egress: the DCM hosts' links keep their
        rate (tbf) with LIMITS[veth] bytes of queue, the ROS' ports get a
        bfifo of LIMITS[veth] bytes.  The veths must not be ports of the
        DPDK switch meanwhile (its af_packet sockets would see every frame
        too)."""
        sw = self.plan.switch_ns
        self.cleanup.push("remove the deep-FIFO bridge",
                          lambda: self.bridge_down(restore=False))
        run(["ip", "-n", sw, "-batch", "-"], input=bridge_batch(
            self.plan, DEEP_BRIDGE))
        run(["bridge", "-n", sw, "-batch", "-"], input="".join(
            "fdb replace %s dev %s master static\n" % (h.mac, h.veth)
            for h in self.plan.hosts))
        rate_bps, burst, _, overhead = self.link
        for h in self.plan.hosts:
            run(deep_fifo_command(sw, h, limits[h.veth], rate_bps, burst,
                                  overhead))

    def bridge_down(self, restore: bool = True) -> None:
        """Removes the bridge (if any) and the ROS ports' FIFOs; with
        RESTORE the DCM hosts' links get their shallow buffer back."""
        sw = self.plan.switch_ns
        if not os.path.exists("/run/netns/" + sw):
            return
        run(["ip", "-n", sw, "link", "del", DEEP_BRIDGE], check=False)
        for h in self.plan.ros_hosts:
            run(["tc", "-n", sw, "qdisc", "del", "dev", h.veth, "root"],
                check=False)
        if restore:
            self.shallow_links()

    def _allow(self, cc: str) -> Callable[[], None]:
        """See allow_congestion_control()."""
        return allow_congestion_control(cc, self.cleanup)

    def _setup_inside(self, h: Host, rps: str = "",
                      congestion_control: str = "cubic") -> None:
        """Addresses, MAC, offloads, TCP congestion control and static ARP
        of a host.

        `rps` (an rps_cpus bitmap) steers the host's receive processing
        to those CPUs.  A veth delivers a frame to its peer in the
        sender's context: what the switch's PMD sends (through af_packet,
        the link's tbf and the veth) would otherwise be received, and the
        host's TCP would process it and answer (ACKs, the next segments),
        in the PMD's own sendto() or the tbf's timer softirq, on the PMD's
        core.  On a real network DCMs and ROS are other machines; with RPS
        the PMD's core only queues the frame to another CPU's backlog."""
        script = [
            NO_IPV6 + "ip link set lo up",
            "ip link set e0 address %s" % h.mac,
            # Per namespace (Linux >= 4.15): this host's TCP only.
            "sysctl -q -w net.ipv4.tcp_congestion_control=%s"
            % congestion_control,
        ]
        script += ["ip addr add %s/%d dev e0" % (ip, PREFIX) for ip in h.ips]
        # Without this, frames captured by af_packet carry partial
        # checksums and TCP never comes up (tx off also turns off TSO).
        script += ["ethtool -K e0 tx off >/dev/null", "ip link set e0 up"]
        if rps:
            script.append("echo %s > /sys/class/net/e0/queues/rx-0/rps_cpus"
                          % rps)
        run(["ip", "netns", "exec", h.ns, "sh", "-c", "\n".join(script)])
        # Static ARP: no ARP traffic, no ARP-induced delays.
        peers = self.plan.ros_hosts if h.kind == "dcm" else self.plan.dcms
        neigh = ["neigh replace %s lladdr %s dev e0 nud permanent"
                 % (ip, p.mac) for p in peers for ip in p.ips]
        run(["ip", "-n", h.ns, "-batch", "-"], input="\n".join(neigh) + "\n")

    def congestion_control(self) -> Dict[str, str]:
        """Per host namespace: its net.ipv4.tcp_congestion_control."""
        return {h.ns: run(["ip", "netns", "exec", h.ns, "sysctl", "-n",
                           "net.ipv4.tcp_congestion_control"]).strip()
                for h in self.plan.hosts}

    # ------------------------------------------------------------ counters
    def tcp_counters(self) -> Dict[str, Dict[str, int]]:
        """Per namespace: Tcp.RetransSegs, TcpExt.TCPTimeouts, ..."""
        out = {}
        for h in self.plan.hosts:
            text = run(["ip", "netns", "exec", h.ns, "cat", "/proc/net/snmp",
                        "/proc/net/netstat"])
            out[h.ns] = parse_snmp(text)
        return out

    def qdisc_counters(self, every: bool = False
                       ) -> Dict[str, Dict[str, int]]:
        """The root qdisc's counters of every DCM host's veth (EVERY: of
        every host's veth, the ROS' too, as the deep-FIFO peer has a
        FIFO on each; a veth without a qdisc counts zeros)."""
        out = {}
        hosts = self.plan.hosts if every else self.plan.dcm_hosts
        for d in hosts:
            data = json.loads(run(["tc", "-n", self.plan.switch_ns, "-s",
                                   "-j", "qdisc", "show", "dev", d.veth])
                              or "[]")
            out[d.veth] = qdisc_row(data)
        return out

    def link_counters(self, every: bool = False
                      ) -> Dict[str, Dict[str, int]]:
        """Kernel counters of the veths: drops at both ends of the DCMs'
        links, and for every host the packets its switch-side veth
        received from the host (rx_packets).  The DPDK af_packet port
        reads them from a socket ring; what does not fit that ring the
        kernel drops without any interface or ethdev counter (DPDK 22.11
        reports no imissed for af_packet), so counters.py's unread()
        compares this count with the port's rx_packets in ovs-vswitchd.
        EVERY (the deep-FIFO peer): drops and packets sent of every veth,
        and of the bridge while it exists."""
        out: Dict[str, Dict[str, int]] = {}
        veths = {h.veth for h in self.plan.hosts}
        dcm_veths = {d.veth for d in self.plan.dcm_hosts}
        for link in json.loads(run(["ip", "-n", self.plan.switch_ns, "-s",
                                    "-j", "link", "show"])):
            name = link.get("ifname")
            if name not in veths and name != DEEP_BRIDGE:
                continue
            st = link.get("stats64", {})
            row = {"rx_packets": int(st["rx"]["packets"])}
            if name in dcm_veths or name == DEEP_BRIDGE or every:
                row.update(rx_dropped=int(st["rx"]["dropped"]),
                           tx_dropped=int(st["tx"]["dropped"]),
                           tx_packets=int(st["tx"]["packets"]))
            out[name] = row
        for d in self.plan.dcm_hosts:
            st = json.loads(run(["ip", "-n", d.ns, "-s", "-j", "link",
                                 "show", "dev", "e0"]))[0].get("stats64", {})
            out[d.ns + ":e0"] = {"rx_dropped": int(st["rx"]["dropped"]),
                                 "tx_dropped": int(st["tx"]["dropped"]),
                                 "rx_packets": int(st["rx"]["packets"])}
        return out


def parse_snmp(text: str) -> Dict[str, int]:
    """/proc/net/snmp and /proc/net/netstat (header line, value line) as
    {"Tcp.RetransSegs": n, "TcpExt.TCPTimeouts": n, ...}."""
    out: Dict[str, int] = {}
    lines = text.splitlines()
    for head, vals in zip(lines[0::2], lines[1::2]):
        hk, _, hrest = head.partition(":")
        vk, _, vrest = vals.partition(":")
        if hk != vk:
            continue
        for k, v in zip(hrest.split(), vrest.split()):
            try:
                out["%s.%s" % (hk, k)] = int(v)
            except ValueError:
                pass
    return out
