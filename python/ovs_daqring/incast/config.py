"""Command line, units and validation for daq-incast.

Everything here is pure: validate() looks at the parsed arguments and at
a HostInfo snapshot (which hosts.probe_host() fills in from the machine) and
either returns a Config or raises ConfigError.  Nothing is created before
validation has passed.
"""

import argparse
import math
import os
import re
import shutil
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .. import TOP
from ..daqctl.model import auto_flow_buckets
from ..hosts import ConfigError, HostInfo, parse_cpu_mask
from ..sandbox import Binaries, tree_binaries

# Debian's DPDK 22.11 is built with RTE_MAX_ETHPORTS=32: one ovs-vswitchd
# can open at most 32 ethdev ports (each host namespace needs one).
MAX_ETHDEV_PORTS = 32
# At most this many ROS share one namespace (and one Python agent) when
# hosts are aggregated; beyond it the agent, not the switch, is measured.
MAX_ROS_PER_HOST = 8
MAX_DCMS = 8
# What two cores can drive through af_packet ports (2.9 Gbit/s of TCP was
# measured for plain forwarding): more would measure the CPU.
MAX_TOTAL_RATE_BPS = 5_000_000_000
MIN_RATE_BPS = 1_000_000
MAX_FRAGMENT = 16 * 1024 * 1024
MAX_EVENTS = 100_000
# Processing units per DCM node (events in flight): the ATLAS HLT nodes
# of the thesis' test bed ran 24 each.
MAX_PUS = 64
# The automatic ring size grows with the events in flight but stops here
# (half of Open vSwitch's largest shared mempool, 262144 mbufs): beyond
# one event the ROS' TCP windows, not the requests, bound what arrives.
MAX_AUTO_RING = 131072
MIN_LINK_BUFFER = 1600          # a full frame must fit in tbf burst/limit
DAQRING_FRAME = 1518            # frame size in the daqring rate formula
# options:max-burst-bytes is at least two full frames with the default
# frame-overhead (vswitch.xml); daq-incast asks for two with its own.
MIN_BURST_BYTES = 3084
MAX_BURST_BYTES = 16 * 1024 * 1024
# options:tx-retry-budget-us of a DPDK port (patch 0005): 0..10000.
MAX_TX_RETRY_US = 10000
# Packets an output batch holds at most (NETDEV_MAX_BURST).
TX_BATCH = 32
# Default --ring-rate-fraction.  Byte shaping counts every frame with the
# link's overhead, the way the link's tbf (stab overhead) does, so the
# daqring can release at the link's own rate: its bucket (max-burst
# frames) bounds what queues in front of the link, and a lower rate only
# idles the link (at 0.99 no event could be collected faster than
# 1/0.99 of the ideal time; at 1.0 undisturbed events take the ideal
# time, 41.8 ms for 30 x 32 KiB at 200 Mbit/s, with no tbf overlimit).
# 0.999, not 1.0: the daqring's second is rte_get_tsc_hz() TSC cycles, an
# estimate, the link's is the kernel's clock (a NIC's, on real links: the
# 802.3 clock tolerance is +-100 ppm), and with a backlog that lasts
# seconds (several processing units at 100 Mbit/s) a ring at exactly the
# link's rate gained on it and overflowed the DCM port's 32 frames (2-33
# drops in each of four runs; none at 0.999, which cost no measurable
# goodput in four 1-PU pairs: bench-results.md, "Processing units").
# Packet shaping paces full-size frames only, so it keeps a margin.
BYTES_RATE_FRACTION = 0.999
PACKETS_RATE_FRACTION = 0.99
# --congestion-control: what every host namespace's TCP runs.  Cubic is
# Linux's usual default, EL9's and the thesis's baseline; a namespace
# inherits the machine's default otherwise (BBR on some kernels).
CONGESTION_CONTROL_DEFAULT = "cubic"
AVAILABLE_CC = "/proc/sys/net/ipv4/tcp_available_congestion_control"
# --host-rps: RPS moves a host's TCP receive off the PMD's core, where a
# veth would otherwise run it (in the PMD's sendto() or the tbf's timer
# softirq); on a real network DCMs and ROS are other machines.  "ros"
# removed the idle link of the first, slow-start event of 128 KiB runs at
# 1 Gbit/s (daqring 95.4-95.5% of ideal without RPS, 99.0-99.6% with it
# at 60 ROS); RPS on the DCM as well ("on") let the DCM port's buffer fill
# and drop frames in 3 of 5 runs on this 2-core VM (bench-results.md,
# "Hosts' receive off the PMD's core").  Default "off": the full-size
# warm-up event (--warmup-events) removes that first-event stall without
# changing where the hosts' work runs.
HOST_RPS_DEFAULT = "off"
# --request-yield: the DCM agent and every ROS agent share core 0, and
# Linux's scheduler (EEVDF: a waking task does not preempt one that has
# not used its slice) let a DCM send all its requests before any ROS agent
# ran.  With 120 ROS the first ROS started to send 0.41-0.47 ms after the
# first request; yielding every 8 requests, 0.17-0.22 ms (bench-results.md,
# "Where an event's time goes").
REQUEST_YIELD = 8
# --pipeline: a request's acknowledgement rides on the ROS's answer, behind
# everything that ROS sent before on the connection.  With several PUs a
# DCM that asks a ROS for the next event while it still owes the previous
# answer makes the request wait for that answer in the switch: behind a
# daqring backlog longer than TCP's minimum RTO (two events of 60 x 128
# KiB at 100 Mbit/s: 1.3 s) the DCM's timer fired for 60-87 requests per
# run.  One request per connection at a time: none (bench-results.md,
# "Requests one at a time per connection").
PIPELINE = 1
MAX_PIPELINE = 1024
HOST_RPS_KINDS = {"off": (), "on": ("dcm", "ros"), "ros": ("ros",)}
# deep-fifo: the deep-buffer peer, a Linux bridge with a deep FIFO on
# every egress (incast/topology.py, bridge_up()); its runs go first,
# before the DPDK switch takes the veths.
DEEP_FIFO = "deep-fifo"
MODES = ("stock", "credits", "daqring", DEEP_FIFO)
# --topology fabric adds unshaped daqrings (Figure 6.9's "unlimited"),
# and has no deep-FIFO peer.
FABRIC_MODES = ("stock", "credits", "daqring", "daqring-unshaped")
# --hog F: one DCM's fragments are F times larger (the shared-link
# scenario: it needs DCMs that share its link, --dcms-per-host >= 2).
MAX_HOG = 100
# The bytes a daqring's packet takes for the deep-FIFO peer's limit
# ("the memory the daqrings get"): a full-size frame (MTU 1500 + 14).
FULL_FRAME = 1514
TOPOLOGIES = ("switch", "fabric")
# The fabric as this machine can emulate it (python/ovs_daqring/incast/
# fabric.py): the HLT leaf's DPDK ports (one per HLT host and spine)
# count against MAX_ETHDEV_PORTS; other switches have system ports.
MAX_FABRIC_SPINES = 2
MAX_FABRIC_PLANES = 2
MAX_ROS_LEAVES = 4
MAX_HLT_HOSTS = 8
MAX_FABRIC_DCMS = 32
MAX_FABRIC_ROS_PER_HOST = 254
FABRIC_DB_MEMBERS = (1, 3)
RING_SHARING = ("static", "shared")
# --host-arp: static = permanent neighbour entries for every peer; off =
# the hosts' fabric interfaces with ARP off (IFF_NOARP) and no neighbour
# entries: every frame leaves addressed to its sender's own MAC and only
# the fabric's last hop (its flows' mod_dl_dst) gets it to its host, so
# only the modes that route everything by the fabric's flows run.
HOST_ARP = ("static", "off")
HOST_ARP_MODES = ("daqring", "daqring-unshaped")
SWEEP_PARAMS = {
    # parameter -> (mode it applies to, minimum value)
    "ring-size": ("daqring", 1),
    "max-burst": ("daqring", 1),
    "poll-interval": ("daqring", 0),
    "credits": ("credits", 1),
}
DEFAULT_OVS_BUILD = os.path.join(TOP, "ovs")


# ---------------------------------------------------------------- units
_RATE_UNITS = {
    "": 1, "bit": 1, "k": 10**3, "kbit": 10**3, "m": 10**6, "mbit": 10**6,
    "g": 10**9, "gbit": 10**9, "tbit": 10**12,
    "kibit": 2**10, "mibit": 2**20, "gibit": 2**30,
    "bps": 8, "kbps": 8 * 10**3, "mbps": 8 * 10**6, "gbps": 8 * 10**9,
}
_SIZE_UNITS = {
    "": 1, "b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10,
    "m": 2**20, "mb": 2**20, "mib": 2**20, "g": 2**30, "gb": 2**30,
    "gib": 2**30,
}
_NUM_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*$")


def parse_rate(text: str) -> int:
    """Parse a rate with tc(8) units ("200mbit", "1gbit", "25mbps" is
    bytes/s, a bare number is bit/s) into bit/s."""
    m = _NUM_RE.match(text)
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _RATE_UNITS:
        raise ConfigError("bad rate %r (use e.g. 200mbit, 1gbit)" % text)
    return int(round(float(m.group(1)) * _RATE_UNITS[unit]))


def parse_size(text: str) -> int:
    """Parse a size in bytes ("32KiB", "16kb", "1m", "1500")."""
    m = _NUM_RE.match(text)
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _SIZE_UNITS:
        raise ConfigError("bad size %r (use e.g. 32KiB, 16kb, 1500)" % text)
    return int(round(float(m.group(1)) * _SIZE_UNITS[unit]))


def format_rate(bps: float) -> str:
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return "%.4g %s" % (bps / scale, unit)
    return "%.4g bit/s" % bps


def parse_sweep(text: str) -> Tuple[str, List[int]]:
    """"ring-size=128,512" -> ("ring-size", [128, 512])."""
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or name not in SWEEP_PARAMS:
        raise ConfigError("bad --sweep %r: expected PARAM=V1,V2,... with "
                          "PARAM one of %s"
                          % (text, ", ".join(sorted(SWEEP_PARAMS))))
    out = []
    for v in values.split(","):
        try:
            n = int(v.strip(), 0)
        except ValueError:
            raise ConfigError("bad --sweep value %r for %s" % (v, name))
        if n < SWEEP_PARAMS[name][1]:
            raise ConfigError("--sweep %s values must be >= %d, not %d"
                              % (name, SWEEP_PARAMS[name][1], n))
        out.append(n)
    if not out or len(set(out)) != len(out):
        raise ConfigError("--sweep %s needs distinct values" % name)
    return name, out


def parse_preempt(text: str) -> Tuple[int, int]:
    """"1/20" (ms) -> (1000, 20000) microseconds; "" -> (0, 0)."""
    if not text.strip():
        return 0, 0
    busy, sep, period = text.partition("/")
    try:
        b, p = float(busy), float(period)
    except ValueError:
        raise ConfigError("bad --pmd-preempt %r: expected BUSY/PERIOD in "
                          "ms, e.g. 1/20" % text)
    if not sep or not 0 < b < p or p > 10_000 or b < 0.01:
        raise ConfigError("bad --pmd-preempt %r: need 0.01 <= BUSY < "
                          "PERIOD <= 10000 (ms)" % text)
    if b / p > 0.5:
        raise ConfigError("--pmd-preempt %r takes more than half of the "
                          "PMD's core" % text)
    return int(round(b * 1000)), int(round(p * 1000))


# ---------------------------------------------------------------- binaries
def _system_tool(name: str) -> str:
    for d in ("/usr/bin", "/usr/sbin"):
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return shutil.which(name) or os.path.join("/usr/bin", name)


def resolve_binaries(ovs_build: Optional[str],
                     vswitchd: Optional[str]) -> Binaries:
    """--ovs-build DIR uses a built OVS tree; --vswitchd PATH uses that
    binary with the system's tools and schema (unless --ovs-build is also
    given)."""
    if vswitchd is not None and ovs_build is None:
        return Binaries(
            vswitchd=vswitchd, ovsdb_server=_system_tool("ovsdb-server"),
            ovsdb_tool=_system_tool("ovsdb-tool"),
            vsctl=_system_tool("ovs-vsctl"), ofctl=_system_tool("ovs-ofctl"),
            appctl=_system_tool("ovs-appctl"),
            schema="/usr/share/openvswitch/vswitch.ovsschema",
            origin="system tools, vswitchd %s" % vswitchd)
    return tree_binaries(ovs_build or DEFAULT_OVS_BUILD, vswitchd)


# ---------------------------------------------------------------- config
@dataclass
class Config:
    ros: int
    dcms: int
    ros_per_host: int
    fragment_size: int
    fragment_dist: str
    events: int
    pus: int
    warmup_events: int
    event_gap_ms: float
    credits: int
    credits_auto: bool
    seed: int
    tcp_nodelay: bool
    request_yield: int              # DCM yields core 0 every N requests
    pipeline: int                   # requests outstanding per connection
    link_rate_bps: int
    link_burst: int
    link_limit: int
    link_overhead: int
    port_frames: int
    mtu: int
    modes: List[str]
    ring_size: int
    max_burst: int
    poll_interval_us: int
    max_rate_bps: int               # byte shaping (max-rate), 0 = packets
    ring_rate_fraction: float
    sweep_param: Optional[str]
    sweep_values: List[int]
    binaries: Binaries
    socket_mem_mb: int
    use_hugepages: bool
    hugepages_mode: str
    pmd_cpus: List[int]
    agent_cpus: List[int]
    preempt_us: Tuple[int, int]     # busy, period; (0, 0) = none
    timeout_s: float
    event_deadline_s: float
    rto_threshold_s: float
    json_path: Optional[str]
    plot_dir: Optional[str]
    log_dir: Optional[str]
    progress: bool
    dry_run: bool
    notes: List[str] = field(default_factory=list)
    # daqring options:max-burst-bytes (byte shaping), 0 = not set.
    max_burst_bytes: int = 0
    # --tx-retry-budget-us: the DCM ports' options:tx-retry-budget-us in
    # the daqring mode, 0 = not set (stock OVS: a full port drops).
    tx_retry_budget_us: int = 0
    # daqring options:flow-buckets, 0 = FIFO; None: by the ring's drain
    # time (flow_buckets_for()).
    flow_buckets: Optional[int] = None
    host_rps: str = HOST_RPS_DEFAULT    # off, on (all hosts), ros
    # net.ipv4.tcp_congestion_control of every host namespace.
    congestion_control: str = CONGESTION_CONTROL_DEFAULT
    # --topology fabric (incast/fabric.py): the leaf-spine's shape, its
    # fabric database, how the rings of one HLT host share its link, and
    # whether the HLT leaf runs DPDK (off: stock and credits only).
    topology: str = "switch"
    hlt_hosts: int = 1
    spines: int = 1
    planes: int = 1
    ros_leaves: int = 1
    fabric_db_members: int = 3
    ring_sharing: str = "static"
    fabric_dpdk: bool = True
    # --host-arp (HOST_ARP): how the fabric's hosts find each other's MAC.
    host_arp: str = "static"
    # --failover DOWN/UP: seconds into each mode's events when the HLT
    # leaf's link to the second spine goes down and comes back; (0, 0):
    # never.
    failover: Tuple[float, float] = (0.0, 0.0)
    # --hold: the fabric stays up after the modes until a signal.
    hold: bool = False
    # --deep-limit: the deep-FIFO runs' queue limits, each "auto" (the
    # bytes of full-size frames the daqrings of that egress hold),
    # "auto/N" or a size in bytes; one deep-fifo run each.
    deep_limits: List[str] = field(default_factory=lambda: ["auto"])
    # --hog F (0: none): DCM 0's fragments are F times larger, and every
    # mode runs twice, without and with it.
    hog: int = 0
    # The ring size of the hog's daqring (its events are larger).
    hog_ring_size: int = 0

    @property
    def dcms_per_host(self) -> int:
        """DCMs per HLT host (fabric, or --dcms-per-host on one switch):
        they share its access link."""
        return self.dcms // self.hlt_hosts

    def fragment_of(self, dcm: int, hog: bool) -> int:
        """Bytes each ROS sends DCM per event (HOG: in a run with the
        hog, whose events are --hog times larger)."""
        if hog and self.hog and dcm == 0:
            return self.fragment_size * self.hog
        return self.fragment_size

    def ring_size_of(self, dcm: int) -> int:
        """The daqring size of a DCM (the hog's holds its larger
        events)."""
        if self.hog and dcm == 0 and self.hog_ring_size:
            return self.hog_ring_size
        return self.ring_size

    def deep_limit(self, spec: str, dcms: Sequence[int]) -> int:
        """The deep-FIFO queue limit in bytes of an egress towards DCMS
        (the ROS' ports: all DCMs): SPEC is a size, "auto" (the memory
        the daqrings of those DCMs get in this run: their ring sizes in
        full-size frames, each with the link's frame overhead as the
        link's tbf counts it) or "auto/N"."""
        if not spec.startswith("auto"):
            return parse_size(spec)
        frame = FULL_FRAME + self.link_overhead
        auto = sum(self.ring_size_of(d) for d in dcms) * frame
        div = int(spec[5:]) if spec.startswith("auto/") else 1
        return max(MIN_LINK_BUFFER, auto // div)

    @property
    def rps_cpus(self) -> List[int]:
        """CPUs the hosts' receive processing is steered to, [] = none."""
        return list(self.agent_cpus) if self.rps_kinds else []

    @property
    def rps_kinds(self) -> Tuple[str, ...]:
        """Kinds of host ("dcm", "ros") whose receive is steered."""
        return HOST_RPS_KINDS[self.host_rps]

    @property
    def ros_hosts(self) -> int:
        return -(-self.ros // self.ros_per_host)

    @property
    def ethdev_ports(self) -> int:
        if self.topology == "switch":
            return self.ros_hosts + self.hlt_hosts
        return self.ros_hosts + self.dcms

    @property
    def mss(self) -> int:
        return self.mtu - 20 - 20 - 12      # IPv4, TCP, timestamps

    @property
    def daqring_rate_bps(self) -> float:
        if self.max_rate_bps:
            return float(self.max_rate_bps)
        if self.poll_interval_us == 0:
            return float("inf")
        return self.max_burst * DAQRING_FRAME * 8 / (
            self.poll_interval_us * 1e-6)

    def flow_buckets_for(self, ring_size: int, rate_bps: float,
                         byte_shaping: bool) -> int:
        """options:flow-buckets of a daqring of `ring_size` packets shaped
        to `rate_bps` (0: unshaped; the rate of 1518-byte frames unless
        `byte_shaping`): --flow-buckets, or by default flow fairness where
        a full ring of full-size frames takes half of TCP's minimum RTO to
        drain (auto_flow_buckets), a FIFO where it takes less."""
        if self.flow_buckets is not None:
            return self.flow_buckets
        return auto_flow_buckets(ring_size, rate_bps,
                                 self.ring_frame_bits(byte_shaping))

    def ring_frame_bits(self, byte_shaping: bool) -> int:
        """Bits a full-size frame takes of a daqring's rate: counted like
        the link with byte shaping, 1518 bytes with packet shaping."""
        if byte_shaping:
            return (self.mtu + 14 + self.link_overhead) * 8
        return DAQRING_FRAME * 8

    def as_dict(self) -> Dict[str, object]:
        d = dict(self.__dict__)
        d["binaries"] = dict(self.binaries.__dict__)
        d["ros_hosts"] = self.ros_hosts
        d["ethdev_ports"] = self.ethdev_ports
        d["mss"] = self.mss
        d["daqring_rate_bps"] = self.daqring_rate_bps
        d["dcms_per_host"] = self.dcms_per_host
        return d


def frames_per_fragment(fragment_size: int, mss: int) -> int:
    return max(1, -(-fragment_size // mss))


def auto_ring_size(ros: int, fragment_size: int, mss: int,
                   pus: int = 1) -> int:
    """Two events' worth of full-size packets per DCM and event in flight
    (`pus`), rounded up to a power of 2, at most MAX_AUTO_RING.  One event
    is the least that absorbs the burst (thesis Fig. 5.8), but TCP does
    not always send full-size segments: a ROS whose window the queueing
    delay cut sends shorter ones (seen: 32 frames per 32 KiB fragment
    instead of 23, with 30 ROS), and retransmitted or probe segments come
    on top."""
    need = 2 * pus * ros * frames_per_fragment(fragment_size, mss)
    return min(MAX_AUTO_RING, max(64, 1 << (need - 1).bit_length()))


def auto_credits(fragment_size: int, mss: int, port_frames: int, mtu: int,
                 link_overhead: int) -> int:
    """Outstanding fragments whose frames fit the DCM port's buffer, at
    least 1: the ATLAS rule that the credit window should match the ToR
    port's output buffer."""
    frames = frames_per_fragment(fragment_size, mss)
    return max(1, port_frames // frames)


def auto_byte_burst(port_frames: int) -> int:
    """max-burst of a byte-shaped daqring: half the DCM port's buffer (16
    of 32 frames), at most 32.

    A ring paced at the link's rate gains tokens while its PMD thread is
    preempted and, when the thread runs again, releases up to max-burst
    frames at once; from then on ring and link run at the same rate, so
    those frames stay queued in front of the link and the next preemption
    of up to max-burst frame times (16 x 61.5 us = 1 ms at 200 Mbit/s,
    0.2 ms at 1 Gbit/s) costs no link time.  With 5 frames, the burst
    packet shaping chooses at 200 Mbit/s, every preemption beyond 0.3 ms
    idled the link (1 ms of every 10 ms taken: 92.9% of ideal against
    99.4% with 16 frames).  But what stands in front of the link must also
    fit the port buffer when the link itself stalls (its qdisc runs on the
    busy cores too): with 24 frames and a sustained backlog the port
    dropped frames in 2 of 3 runs, with 16 in 1 of 2.  Half the buffer
    leaves the same margin on both sides."""
    return max(1, min(32, port_frames // 2))


def byte_burst_bytes(spec: Optional[str], port_frames: int,
                     overhead: int) -> int:
    """--max-burst-bytes: 0 when not given; auto: half the DCM port's
    buffer in full frames on the wire (the docs' advice: the downstream
    buffer less what else the port queues, here the frames the link is
    sending), at least two frames."""
    if spec is None:
        return 0
    if spec.strip() == "auto":
        n = (port_frames // 2) * (DAQRING_FRAME + overhead)
        return max(n, 2 * (DAQRING_FRAME + overhead), MIN_BURST_BYTES)
    n = parse_size(spec)
    if not MIN_BURST_BYTES <= n <= MAX_BURST_BYTES:
        raise ConfigError("--max-burst-bytes must be %d..%d bytes, not %d"
                          % (MIN_BURST_BYTES, MAX_BURST_BYTES, n))
    if n < 2 * (DAQRING_FRAME + overhead):
        raise ConfigError("--max-burst-bytes %d is less than two frames "
                          "of %d bytes with --link-overhead %d"
                          % (n, DAQRING_FRAME, overhead))
    return n


def tx_retry_budget(spec: str, overhead: int, rate_bps: int) -> int:
    """--tx-retry-budget-us: a number of microseconds, or auto: the time
    the link takes to send two batches of full frames.  The budget covers
    a whole output batch (up to TX_BATCH packets): one that finds the
    port full waits until the link has sent as many frames, and as much
    again covers a link that stalls meanwhile (the emulated link's qdisc
    runs on the machine's busy cores).  One batch alone was not enough:
    a ring shaped above its link still dropped a frame in one run.  At
    most MAX_TX_RETRY_US."""
    text = spec.strip()
    if text == "auto":
        us = 2 * TX_BATCH * (1514 + overhead) * 8e6 / rate_bps
        return max(1, min(MAX_TX_RETRY_US, int(math.ceil(us))))
    try:
        us = int(text)
    except ValueError:
        us = -1
    if not 0 <= us <= MAX_TX_RETRY_US:
        raise ConfigError("--tx-retry-budget-us must be auto or 0..%d "
                          "microseconds, not %r" % (MAX_TX_RETRY_US, spec))
    return us


def max_port_frames(wmem_default: int) -> int:
    """Frames an af_packet TX ring may hold so that a full ring makes the
    DPDK PMD drop rather than block: in-flight frames (about 2.5 KB of
    socket memory each) must stay under half the send buffer."""
    n = wmem_default // 2 // 2560
    return max(2, n - n % 2)


def auto_shaping(link_rate_bps: int, link_overhead: int, mtu: int,
                 fraction: float, max_bytes: int,
                 min_interval_us: int = 250) -> Tuple[int, int]:
    """Choose (max-burst, poll-interval us) so that the daqring releases
    full-size frames just under the access link's frame rate.

    The link carries a full frame in (mtu + 14 + overhead) * 8 bits; the
    daqring releases max-burst frames per poll-interval, so the target is
    max-burst / poll-interval <= fraction * link frame rate.  Takes the
    smallest burst whose interval is at least min_interval_us (a schedule
    one PMD keeps easily) and whose rate is within 2% of the target;
    bursts never exceed max_bytes (the link's shallow buffer)."""
    frame_bits = (mtu + 14 + link_overhead) * 8
    target = fraction * link_rate_bps / frame_bits       # frames per s
    best: Optional[Tuple[float, int, int]] = None
    for burst in range(1, 33):
        if burst > 1 and burst * (mtu + 14) > max_bytes:
            break
        us = max(1, math.ceil(burst / target * 1e6))
        rate = burst / (us * 1e-6)
        if us >= min_interval_us and rate >= 0.98 * target:
            return burst, us
        if best is None or rate > best[0]:
            best = (rate, burst, us)
    assert best is not None
    return best[1], best[2]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="daq-incast",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="daq-incast [OPTIONS]",
        description=DESCRIPTION, epilog=EPILOG, add_help=False)
    g = p.add_argument_group("Topology Options")
    g.add_argument("--ros", type=int, default=30, metavar="R",
                   help="number of Readout Systems (default: %(default)s)")
    g.add_argument("--dcms", type=int, default=1, metavar="D",
                   help="number of Data-Collection Managers, each behind "
                   "its own access link (default: %(default)s)")
    g.add_argument("--ros-per-host", type=int, default=0, metavar="K",
                   help="ROS per namespace (default: 1, or the smallest K "
                   "that fits %d ethdev ports)" % MAX_ETHDEV_PORTS)
    g.add_argument("--dcms-per-host", type=int, default=1, metavar="K",
                   help="DCMs per DCM host (an HLT node): the --dcms DCMs "
                   "are spread K per namespace and share its one access "
                   "link; their daqrings share its rate with the fabric's "
                   "static policy (each gets the link's rate / K) "
                   "(default: %(default)s)")
    g.add_argument("--topology", choices=TOPOLOGIES, default="switch",
                   help="switch: every host on one switch; fabric: a "
                   "leaf-spine of switches programmed through a fabric "
                   "database (default: %(default)s)")
    g = p.add_argument_group("Fabric Options (--topology fabric)")
    g.add_argument("--hlt-hosts", type=int, default=1, metavar="H",
                   help="HLT hosts on the HLT leaf; the --dcms DCMs are "
                   "spread evenly over them and share their host's "
                   "access link (default: %(default)s)")
    g.add_argument("--ros-leaves", type=int, default=1, metavar="L",
                   help="ROS leaves, the ROS hosts spread over them "
                   "(default: %(default)s)")
    g.add_argument("--spines", type=int, default=1, metavar="S",
                   help="spines per plane (default: %(default)s)")
    g.add_argument("--planes", type=int, default=1, metavar="P",
                   help="parallel planes (default: %(default)s)")
    g.add_argument("--fabric-db-members", type=int, default=3,
                   choices=FABRIC_DB_MEMBERS, metavar="N",
                   help="members of the fabric database's Raft cluster: "
                   "3 or 1 (default: %(default)s)")
    g.add_argument("--ring-sharing", choices=RING_SHARING, default="static",
                   help="how the daqrings of one HLT host (or DCM host, "
                   "--dcms-per-host) share its link: static = each gets "
                   "the link's rate / its DCMs; shared = each may use the "
                   "whole rate, all bound to the link's port with it as "
                   "egress-max-rate (work-conserving) (default: "
                   "%(default)s)")
    g.add_argument("--failover", default="", metavar="DOWN/UP",
                   help="in every mode, take the HLT leaf's link to the "
                   "second spine down DOWN seconds into the events and up "
                   "again at UP (e.g. 2/5; needs --spines 2 and enough "
                   "--events to last); goodput and retransmissions over "
                   "time in the results")
    g.add_argument("--hold", action="store_true",
                   help="after the modes, keep the fabric up with the map "
                   "of the last mode and print how to reach it (its "
                   "database, each switch and agent, the hosts, a link "
                   "to fail); Ctrl-C or SIGTERM stops and removes it "
                   "(--timeout does not apply while it waits)")
    g.add_argument("--fabric-dpdk", choices=("on", "off"), default="on",
                   help="off: the HLT leaf runs without DPDK too (no "
                   "daqrings, no PMD: stock and credits only, for trying "
                   "a topology; no result is valid) (default: "
                   "%(default)s)")
    g.add_argument("--host-arp", choices=HOST_ARP, default="static",
                   help="static: every host has a permanent neighbour "
                   "entry for each peer on each of its interfaces; off: "
                   "the hosts' interfaces do no ARP (ip link set DEV arp "
                   "off) and have no neighbour entries, so every frame "
                   "leaves addressed to its sender's own MAC and reaches "
                   "its host only because the fabric's last hop sets the "
                   "destination MAC (thesis 6.2.3); daqring and "
                   "daqring-unshaped only (default: %(default)s)")
    g = p.add_argument_group("Traffic Options")
    g.add_argument("--fragment-size", default="32KiB", metavar="SIZE",
                   help="bytes each ROS sends per event (default: "
                   "%(default)s)")
    g.add_argument("--fragment-dist", default="fixed",
                   choices=("fixed", "uniform", "exponential"),
                   help="fragment sizes: fixed, uniform in [S/2, 3S/2], "
                   "or exponential with mean S clipped to [64, 4S]")
    g.add_argument("--events", type=int, default=50, metavar="N",
                   help="events collected per DCM and mode (default: "
                   "%(default)s)")
    g.add_argument("--warmup-events", type=int, default=1, metavar="N",
                   help="full-size events each DCM collects before the "
                   "measured ones, one at a time with the mode's credits "
                   "(default: %(default)s): the ROS' TCP connections leave "
                   "slow start, as in a run that has been taking data for "
                   "a while; 0: only a 64-byte round that opens the "
                   "connections.  Counters include them, times do not")
    g.add_argument("--pus", type=int, default=1, metavar="N",
                   help="processing units per DCM, each collecting its own "
                   "event from every ROS: N events in flight (default: "
                   "%(default)s, one event at a time; the ATLAS HLT nodes "
                   "of the thesis ran 24)")
    g.add_argument("--event-gap", type=float, default=0.0, metavar="MS",
                   help="pause of a processing unit between its events, "
                   "e.g. its processing time (default: 0)")
    g.add_argument("--request-yield", type=int, default=REQUEST_YIELD,
                   metavar="N",
                   help="the DCM agent gives up its CPU after every N "
                   "requests it sends in a row, so that the ROS agents, "
                   "which share that CPU, answer while it requests, as "
                   "other machines would (default: %(default)s; 0: it "
                   "sends all of them first)")
    g.add_argument("--pipeline", type=int, default=PIPELINE, metavar="N",
                   help="fragment requests a DCM keeps outstanding on one "
                   "ROS connection, its processing units together; the "
                   "next waits until the ROS answered one (default: "
                   "%(default)s; 0: no limit)")
    g.add_argument("--credits", type=int, default=0, metavar="N",
                   help="credits mode: outstanding fragment requests per "
                   "DCM, all its processing units together (default: the "
                   "fragments that fit the port buffer, >= 1)")
    g.add_argument("--tcp-nodelay", choices=("on", "off"), default="on",
                   help="set TCP_NODELAY on every connection, the only "
                   "socket option daq-incast changes from Linux's defaults "
                   "(default: %(default)s; off: Nagle's algorithm holds "
                   "a fragment's last partial segment until the previous "
                   "ones are acknowledged)")
    g.add_argument("--congestion-control", default=CONGESTION_CONTROL_DEFAULT,
                   metavar="NAME",
                   help="TCP congestion control of every host namespace "
                   "(net.ipv4.tcp_congestion_control): cubic (the "
                   "default, as on EL9 and in the thesis), reno, bbr, or "
                   "any the kernel lists in %s; set explicitly because new "
                   "namespaces inherit the machine's default, which may "
                   "differ (BBR on some kernels)" % AVAILABLE_CC)
    g.add_argument("--hog", type=int, default=0, metavar="F",
                   help="the shared-link scenario's hog: DCM 0's fragments "
                   "are F times larger (2..%d; needs --dcms-per-host >= "
                   "2), and every mode runs twice, without and with the "
                   "hog, to compare the other DCMs' latency (default: "
                   "0, no hog)" % MAX_HOG)
    g.add_argument("--seed", type=int, default=1, metavar="N",
                   help="seed for fragment sizes (default: %(default)s)")
    g = p.add_argument_group("Access-Link Options")
    g.add_argument("--link-rate", default="200mbit", metavar="RATE",
                   help="DCM access-link rate, tc units (default: "
                   "%(default)s)")
    g.add_argument("--link-burst", default="16kb", metavar="SIZE",
                   help="tbf burst (default: %(default)s)")
    g.add_argument("--link-limit", default="auto", metavar="SIZE",
                   help="tbf queue limit (default: room for the port's "
                   "frames, so that tbf never refuses one: af_packet would "
                   "strand a refused frame until the port's next packet)")
    g.add_argument("--port-frames", type=int, default=32, metavar="N",
                   help="the DCM port's buffer: frames in the af_packet TX "
                   "ring of its switch port; when it is full OVS drops and "
                   "counts ovs_tx_failure_drops (default: %(default)s, "
                   "about 48 KB; at most what the socket's send buffer "
                   "keeps in flight, about 40)")
    g.add_argument("--link-overhead", type=int, default=24, metavar="BYTES",
                   help="bytes charged per frame beyond the Ethernet "
                   "header: FCS 4 + preamble 8 + gap 12 (default: "
                   "%(default)s; 0 = count frames as the kernel sees them)")
    g = p.add_argument_group("Mode Options")
    g.add_argument("--modes", default="stock,credits,daqring",
                   metavar="LIST", help="comma-separated, run in this "
                   "order: stock, credits, daqring, deep-fifo (the Linux "
                   "bridge with deep FIFOs, whose runs go first) "
                   "(default: %(default)s)")
    g.add_argument("--ring-size", type=int, default=0, metavar="N",
                   help="daqring capacity in packets (default: two "
                   "events of full-size packets per DCM, rounded up to a "
                   "power of 2)")
    g.add_argument("--shaper", choices=("bytes", "packets"),
                   default="bytes", help="daqring shaping: 'bytes' sets "
                   "max-rate (a token bucket in bytes, frames counted with "
                   "--link-overhead bytes, like the link), 'packets' sets "
                   "max-burst per poll-interval (default: %(default)s, "
                   "packets if --poll-interval is given)")
    g.add_argument("--max-rate", metavar="RATE",
                   help="daqring max-rate with --shaper bytes (default: "
                   "--ring-rate-fraction x --link-rate)")
    g.add_argument("--max-burst", type=int, default=0, metavar="B",
                   help="daqring max-burst, 1..32 (default: bytes: half "
                   "of --port-frames, the frames the ring keeps in front "
                   "of the link to ride out a preempted PMD; packets: "
                   "chosen with --poll-interval to just under the link "
                   "rate)")
    g.add_argument("--max-burst-bytes", metavar="SIZE",
                   help="byte shaping: the largest burst a daqring "
                   "releases beyond its max-rate, in bytes on the wire "
                   "(%d..16MiB), or auto: half the DCM port's buffer "
                   "(--port-frames / 2 full frames with --link-overhead); "
                   "default: not set, max-burst full frames bound it"
                   % MIN_BURST_BYTES)
    g.add_argument("--tx-retry-budget-us", default="0", metavar="US",
                   help="daqring mode: the DCM ports' options:tx-retry-"
                   "budget-us, how long the PMD waits for room in a full "
                   "port instead of dropping (0..%d), or auto: the time "
                   "the link takes to send two output batches (64 full "
                   "frames with --link-overhead), at most %d; the other "
                   "modes keep stock OVS's drop "
                   "(default: %%(default)s, off)"
                   % (MAX_TX_RETRY_US, MAX_TX_RETRY_US))
    g.add_argument("--poll-interval", type=int, default=-1, metavar="US",
                   help="daqring poll-interval in microseconds, 0 = "
                   "unshaped; implies --shaper packets (default: chosen "
                   "with --max-burst)")
    g.add_argument("--flow-buckets", default="auto", metavar="N",
                   help="daqring flow fairness: flows served round-robin, "
                   "a flow with nothing queued first, in N flow buckets (a "
                   "power of 2); 0 = a strict FIFO (default: auto: 65536 "
                   "where a full ring drains in 100 ms or more, half of "
                   "TCP's minimum RTO, at the ring's rate; 0 where it "
                   "drains faster)")
    g.add_argument("--ring-rate-fraction", type=float, default=None,
                   metavar="F", help="automatic daqring shaping targets F "
                   "x the link's rate (default: %s with --shaper bytes, "
                   "which counts frames exactly like the link; %s with "
                   "packets)" % (BYTES_RATE_FRACTION, PACKETS_RATE_FRACTION))
    g.add_argument("--deep-limit", metavar="LIST",
                   help="deep-fifo mode: the queue limit of every egress "
                   "FIFO, one run per comma-separated value: auto (the "
                   "memory this run's daqrings of that egress get: their "
                   "ring sizes in full-size frames), auto/N, or a size "
                   "(e.g. 4MiB); giving it adds deep-fifo to --modes "
                   "(default: auto)")
    g.add_argument("--sweep", metavar="PARAM=V1,V2,...",
                   help="run the mode PARAM belongs to once per value and "
                   "plot goodput and p99 against it; PARAM is ring-size, "
                   "max-burst, poll-interval (daqring) or credits")
    g = p.add_argument_group("Switch Options")
    g.add_argument("--ovs-build", metavar="DIR",
                   help="OVS build tree to use (default: %s)"
                   % DEFAULT_OVS_BUILD)
    g.add_argument("--vswitchd", metavar="PATH",
                   help="use this ovs-vswitchd, with the system's "
                   "ovsdb-server, ovs-vsctl, ovs-ofctl, ovs-appctl and "
                   "schema, e.g. /usr/lib/openvswitch-switch-dpdk/"
                   "ovs-vswitchd-dpdk")
    g.add_argument("--socket-mem", type=int, default=1024, metavar="MB",
                   help="DPDK memory (default: %(default)s)")
    g.add_argument("--hugepages", default="auto",
                   choices=("auto", "require", "off"),
                   help="auto: hugepages (as root, the missing ones are "
                   "reserved for the run and given back), else --no-huge; "
                   "require: fail without them; off: --no-huge")
    g.add_argument("--pmd-cpu-mask", default="0x2", metavar="MASK",
                   help="PMD cores (default: %(default)s); agents run on "
                   "the other cores")
    g.add_argument("--host-rps", choices=("off", "on", "ros"),
                   default=HOST_RPS_DEFAULT,
                   help="steer the hosts' receive processing (their TCP) "
                   "off the PMD cores with RPS on every host's veth, as "
                   "if they were other machines; off: it runs wherever "
                   "the sender runs, often in the PMD's own sendto(); "
                   "ros: the ROS hosts only (default: %(default)s)")
    g.add_argument("--pmd-preempt", default="", metavar="BUSY/PERIOD",
                   help="while events are collected, a real-time thread on "
                   "the PMD's core takes BUSY of every PERIOD ms (e.g. "
                   "1/20: the PMD keeps 95%% of its core), to measure how "
                   "a mode rides out a PMD that shares its core "
                   "(default: none)")
    g = p.add_argument_group("Output Options")
    g.add_argument("--json", metavar="PATH", help="write results as JSON")
    g.add_argument("--plot-dir", metavar="DIR",
                   help="write PNG plots (latency CDF, sweep) here")
    g.add_argument("--log-dir", metavar="DIR",
                   help="keep the switch and agent logs here")
    g.add_argument("-q", "--quiet", action="store_true",
                   help="no progress line on stderr")
    g = p.add_argument_group("Other Options")
    g.add_argument("--timeout", type=float, default=900, metavar="SECS",
                   help="bound on the whole run (default: %(default)s)")
    g.add_argument("--event-deadline", type=float, default=30,
                   metavar="SECS", help="give up a mode when one event "
                   "takes longer (default: %(default)s)")
    g.add_argument("--rto-threshold", type=float, default=200,
                   metavar="MS", help="collection times at or above this "
                   "count as TCP timeouts (default: %(default)s)")
    g.add_argument("--dry-run", action="store_true",
                   help="validate, print the plan, create nothing")
    g.add_argument("--cleanup-stale", action="store_true",
                   help="remove what runs that were killed left behind "
                   "(namespaces, work directories with their hugetlbfs "
                   "mount and the hugepages they reserved, DPDK runtime "
                   "directories) and exit")
    g.add_argument("-h", "--help", action="help",
                   help="show this help and exit")
    g.add_argument("-V", "--version", action="store_true",
                   help="print the version and exit")
    return p


DESCRIPTION = """\
NAME
  daq-incast - ATLAS-style incast emulator and benchmark for ovs-daqring

DESCRIPTION
  Builds R Readout System (ROS) and D Data-Collection Manager (DCM) hosts
  as network namespaces, attaches them through veth pairs and net_af_packet
  DPDK ports to a private userspace-datapath bridge of a private
  ovs-vswitchd, and emulates each DCM's access link with a tbf qdisc
  (finite rate, shallow buffer).  Every DCM keeps one TCP connection per
  ROS and, per event, requests a fragment from every ROS at once (or at
  most --credits at a time); each ROS answers at once.  The collection
  time runs from the first request to the last byte.

  Modes, run one after the other on the same topology and traffic:
    stock      plain forwarding (NORMAL)
    credits    stock switch, DCM limits outstanding requests (ATLAS
               shaping)
    daqring    one daqring port per DCM queues and paces the DCM's traffic
    deep-fifo  the deep-buffer peer: no DPDK switch, a Linux bridge with
               a deep FIFO on every egress (--deep-limit); run first

  Reports per mode goodput and its ratio to the ideal, collection time
  mean/p50/p99/max, events at or above the TCP timeout, TCP
  retransmissions and drops at every point (switch ports, daqrings,
  qdiscs).  Needs root, ip, tc, ethtool and an ovs-vswitchd with DPDK.
"""

EPILOG = """\
EXIT STATUS
  0 success (a mode the switch cannot run is reported, not fatal),
  1 a run-time failure, 2 bad parameters or an unusable machine (nothing
  was created), 130/143 interrupted (everything was cleaned up).

EXAMPLES
  daq-incast --vswitchd /usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk \\
      --modes stock,credits --json out.json --plot-dir plots
  daq-incast --modes stock,daqring --sweep ring-size=128,512,1024,4096

SEE ALSO
  Documentation/topics/daq-incast.rst, ovs-vswitchd(8), tc-tbf(8)
"""


def validate(ns: argparse.Namespace, host: HostInfo,
             check_env: bool = True) -> Config:
    """Turn parsed arguments into a Config; raise ConfigError on any bad
    parameter.  With check_env=False (--dry-run) the machine checks (root,
    hugepages, binaries) are skipped."""
    def positive(name: str, value: float) -> None:
        if value <= 0:
            raise ConfigError("%s must be positive, not %s" % (name, value))

    positive("--ros", ns.ros)
    positive("--dcms", ns.dcms)
    fabric = getattr(ns, "topology", "switch") == "fabric"
    if fabric:
        check_fabric(ns)
        if getattr(ns, "dcms_per_host", 1) != 1:
            raise ConfigError("--dcms-per-host is for --topology switch; "
                              "a fabric spreads --dcms over --hlt-hosts")
    else:
        per = getattr(ns, "dcms_per_host", 1)
        if not 1 <= per <= MAX_DCMS or ns.dcms % per:
            raise ConfigError("--dcms-per-host %d: must be 1..%d and divide "
                              "--dcms %d" % (per, MAX_DCMS, ns.dcms))
        for opt, default in (("hlt_hosts", 1), ("ros_leaves", 1),
                             ("spines", 1), ("planes", 1),
                             ("fabric_db_members", 3),
                             ("fabric_dpdk", "on"), ("failover", ""),
                             ("hold", False), ("host_arp", "static")):
            if getattr(ns, opt, default) != default:
                raise ConfigError("--%s needs --topology fabric"
                                  % opt.replace("_", "-"))
        if (getattr(ns, "ring_sharing", "static") != "static"
                and per == 1):
            raise ConfigError("--ring-sharing %s: the DCMs of a host share "
                              "its link with --topology fabric or "
                              "--dcms-per-host >= 2" % ns.ring_sharing)
    # Hosts with their own access link (and ethdev port): each DCM host
    # on one switch, each HLT host in a fabric.
    dcms_per_host = 1 if fabric else getattr(ns, "dcms_per_host", 1)
    links = ns.hlt_hosts if fabric else ns.dcms // dcms_per_host
    hog = getattr(ns, "hog", 0)
    if hog and (fabric or not 2 <= hog <= MAX_HOG or dcms_per_host < 2):
        raise ConfigError("--hog %d: F must be 2..%d, on --topology switch "
                          "with --dcms-per-host >= 2 (the hog shares its "
                          "link with other DCMs)" % (hog, MAX_HOG))
    positive("--events", ns.events)
    positive("--pus", ns.pus)
    if not 0 <= ns.pipeline <= MAX_PIPELINE:
        raise ConfigError("--pipeline must be 0..%d, not %d"
                          % (MAX_PIPELINE, ns.pipeline))
    if not 0 <= ns.request_yield <= 100_000:
        raise ConfigError("--request-yield must be 0..100000, not %d"
                          % ns.request_yield)
    if not 0 <= ns.warmup_events <= 100:
        raise ConfigError("--warmup-events must be 0..100, not %d"
                          % ns.warmup_events)
    if ns.pus > MAX_PUS:
        raise ConfigError("--pus %d is more than %d" % (ns.pus, MAX_PUS))
    if ns.events > MAX_EVENTS:
        raise ConfigError("--events %d is more than %d"
                          % (ns.events, MAX_EVENTS))
    if ns.dcms > MAX_DCMS and not fabric:
        raise ConfigError("--dcms %d: at most %d DCMs (each needs its own "
                          "namespace, access link and port)"
                          % (ns.dcms, MAX_DCMS))
    fragment = parse_size(ns.fragment_size)
    positive("--fragment-size", fragment)
    if fragment > MAX_FRAGMENT:
        raise ConfigError("--fragment-size %d is more than %d bytes"
                          % (fragment, MAX_FRAGMENT))
    if ns.event_gap < 0:
        raise ConfigError("--event-gap must not be negative")
    if ns.credits < 0:
        raise ConfigError("--credits must be positive")
    rate = parse_rate(ns.link_rate)
    if rate < MIN_RATE_BPS:
        raise ConfigError("--link-rate %s is below %s" % (
            ns.link_rate, format_rate(MIN_RATE_BPS)))
    if rate * links > MAX_TOTAL_RATE_BPS:
        raise ConfigError(
            "--link-rate %s x %d %s is more than the %s two cores can "
            "drive through af_packet ports; the run would measure the CPU"
            % (ns.link_rate, links, "HLT hosts" if fabric else "DCMs",
               format_rate(MAX_TOTAL_RATE_BPS)))
    if not 0 <= ns.link_overhead <= 64:
        raise ConfigError("--link-overhead must be 0..64")
    max_frames = max_port_frames(host.wmem_default)
    if not 2 <= ns.port_frames <= max_frames or ns.port_frames % 2:
        raise ConfigError(
            "--port-frames must be an even number in 2..%d, not %d (beyond "
            "half the af_packet socket's send buffer, net.core.wmem_default"
            " = %d, a full TX ring blocks the PMD instead of dropping)"
            % (max_frames, ns.port_frames, host.wmem_default))
    tx_retry_us = tx_retry_budget(getattr(ns, "tx_retry_budget_us", "0"),
                                  ns.link_overhead, rate)
    if tx_retry_us and fabric:
        raise ConfigError("--tx-retry-budget-us: the single switch's DCM "
                          "ports only (--topology switch)")
    notes = []
    burst = parse_size(ns.link_burst)
    ring_bytes = ns.port_frames * (1514 + ns.link_overhead)
    if ns.link_limit == "auto":
        limit = ring_bytes + 2 * (1514 + ns.link_overhead)
    else:
        limit = parse_size(ns.link_limit)
        if limit < ring_bytes:
            notes.append("--link-limit %d is less than the port's %d "
                         "frames: tbf will refuse frames, which af_packet "
                         "retries only when the port sends again (delays "
                         "without loss)" % (limit, ns.port_frames))
    for name, v in (("--link-burst", burst), ("--link-limit", limit)):
        if v < MIN_LINK_BUFFER:
            raise ConfigError("%s %d: must hold a full frame (>= %d bytes)"
                              % (name, v, MIN_LINK_BUFFER))

    # Hosts: one ethdev port per namespace (in a fabric, the HLT leaf's
    # ports: its HLT hosts' and its uplinks; the ROS are on system ports
    # of the ROS leaves, and aggregated the same way).
    # (The HLT leaves of every plane are bridges of one ovs-vswitchd.)
    dcm_ports = ((ns.hlt_hosts + ns.spines) * ns.planes if fabric
                 else links)
    if ns.ros_per_host < 0:
        raise ConfigError("--ros-per-host must be positive")
    k = ns.ros_per_host or 1
    if not ns.ros_per_host and ns.ros + dcm_ports > MAX_ETHDEV_PORTS:
        k = -(-ns.ros // (MAX_ETHDEV_PORTS - dcm_ports))
    if k > MAX_ROS_PER_HOST:
        raise ConfigError(
            "--ros %d with %d DCM hosts needs %d ROS per namespace: at most "
            "%d (and %d DPDK ethdev ports), i.e. at most %d ROS"
            % (ns.ros, links, k, MAX_ROS_PER_HOST, MAX_ETHDEV_PORTS,
               MAX_ROS_PER_HOST * (MAX_ETHDEV_PORTS - dcm_ports)))
    ports = -(-ns.ros // k) + dcm_ports
    if ports > MAX_ETHDEV_PORTS:
        raise ConfigError(
            "%d ROS at %d per namespace plus %d DCM hosts need %d ethdev "
            "ports; this DPDK allows %d"
            % (ns.ros, k, links, ports, MAX_ETHDEV_PORTS))
    if k > 1:
        notes.append("hosts aggregated: %d ROS per namespace (%d ethdev "
                     "ports for %d ROS + %d DCM hosts)"
                     % (k, ports, ns.ros, links))

    modes = [m.strip() for m in ns.modes.split(",") if m.strip()]
    known = FABRIC_MODES if fabric else MODES
    for m in modes:
        if m not in known:
            raise ConfigError("unknown mode %r (modes: %s)"
                              % (m, ", ".join(known)))
    if fabric and not ns.fabric_dpdk == "on":
        rings = [m for m in modes if m.startswith("daqring")]
        if rings:
            raise ConfigError("--fabric-dpdk off: no daqrings without "
                              "DPDK; drop %s from --modes" % ", ".join(rings))
    host_arp = getattr(ns, "host_arp", "static")
    if host_arp != "static":
        normal = [m for m in modes if m not in HOST_ARP_MODES]
        if normal:
            raise ConfigError(
                "--host-arp %s: %s switch by MAC through the NORMAL action, "
                "which cannot reach hosts that do no ARP; only %s route "
                "everything through the fabric's flows (drop %s from "
                "--modes)" % (host_arp, ", ".join(normal),
                              " and ".join(HOST_ARP_MODES),
                              ", ".join(normal)))
    deep_limits = parse_deep_limits(getattr(ns, "deep_limit", None))
    if getattr(ns, "deep_limit", None) and DEEP_FIFO not in modes:
        modes.append(DEEP_FIFO)
    if not modes or len(set(modes)) != len(modes):
        raise ConfigError("--modes needs distinct modes")
    sweep_param: Optional[str] = None
    sweep_values: List[int] = []
    if ns.sweep and fabric:
        raise ConfigError("--sweep is not supported with --topology "
                          "fabric yet")
    if ns.sweep:
        sweep_param, sweep_values = parse_sweep(ns.sweep)
        mode = SWEEP_PARAMS[sweep_param][0]
        if mode not in modes:
            modes.append(mode)

    mtu = 1500
    mss = mtu - 52
    credits_auto = ns.credits == 0
    credits = ns.credits or auto_credits(fragment, mss, ns.port_frames,
                                         mtu, ns.link_overhead)
    if ns.ring_size < 0:
        raise ConfigError("--ring-size must be positive")
    ring = ns.ring_size or auto_ring_size(ns.ros, fragment, mss, ns.pus)
    hog_ring = (ns.ring_size or auto_ring_size(ns.ros, fragment * hog, mss,
                                               ns.pus)) if hog else 0
    byte_shaping = ns.shaper == "bytes" and ns.poll_interval < 0
    if fabric and not byte_shaping:
        raise ConfigError("--topology fabric shapes daqrings by bytes "
                          "(each ring gets its share of the HLT host's "
                          "link as max-rate): --shaper packets and "
                          "--poll-interval are not supported")
    if dcms_per_host > 1 and not byte_shaping:
        raise ConfigError("--dcms-per-host %d: the daqrings of a shared "
                          "link share its rate by bytes (max-rate): "
                          "--shaper packets and --poll-interval are not "
                          "supported" % dcms_per_host)
    if ns.ring_rate_fraction is None:
        ns.ring_rate_fraction = (BYTES_RATE_FRACTION if byte_shaping
                                 else PACKETS_RATE_FRACTION)
    if not 0 < ns.ring_rate_fraction <= 1:
        raise ConfigError("--ring-rate-fraction must be in (0, 1]")
    if ns.max_burst and not 1 <= ns.max_burst <= 32:
        raise ConfigError("--max-burst must be 1..32, not %d" % ns.max_burst)
    if ns.poll_interval < -1:
        raise ConfigError("--poll-interval must not be negative")
    frame_bits = (mtu + 14 + ns.link_overhead) * 8
    max_rate = 0
    burst_bytes = 0
    if ns.max_burst_bytes is not None and not byte_shaping:
        raise ConfigError("--max-burst-bytes bounds a byte shaper: it "
                          "excludes --shaper packets and --poll-interval")
    if ns.max_rate is not None and (ns.shaper == "packets"
                                    or ns.poll_interval >= 0):
        raise ConfigError("--max-rate shapes by bytes: it excludes "
                          "--shaper packets and --poll-interval")
    if byte_shaping:
        # The daqring counts each frame's overhead like the link's tbf
        # (frame-overhead = --link-overhead), so it can run at the link's
        # rate for any frame size.  Its bucket (max-burst full frames) is
        # what keeps frames in front of the link when the PMD thread is
        # preempted: see auto_byte_burst().
        max_rate = (parse_rate(ns.max_rate) if ns.max_rate is not None
                    else int(round(ns.ring_rate_fraction * rate)))
        if not 1000 <= max_rate <= 10**12:
            raise ConfigError("--max-rate must be 1kbit..1000gbit")
        max_burst = ns.max_burst or auto_byte_burst(ns.port_frames)
        poll = 0
        burst_bytes = byte_burst_bytes(ns.max_burst_bytes, ns.port_frames,
                                       ns.link_overhead)
    elif ns.max_burst and ns.poll_interval >= 0:
        max_burst, poll = ns.max_burst, ns.poll_interval
    elif ns.max_burst:
        max_burst = ns.max_burst
        poll = math.ceil(max_burst * frame_bits
                         / (ns.ring_rate_fraction * rate) * 1e6)
    elif ns.poll_interval >= 0:
        poll = ns.poll_interval
        max_burst = max(1, min(32, int(ns.ring_rate_fraction * rate
                                       * poll * 1e-6 / frame_bits)))
    else:
        max_burst, poll = auto_shaping(rate, ns.link_overhead, mtu,
                                       ns.ring_rate_fraction,
                                       ns.port_frames // 2 * (mtu + 14))
    for name, v in (("--timeout", ns.timeout),
                    ("--event-deadline", ns.event_deadline),
                    ("--rto-threshold", ns.rto_threshold),
                    ("--socket-mem", ns.socket_mem)):
        positive(name, v)

    preempt = parse_preempt(ns.pmd_preempt)
    pmd_cpus = parse_cpu_mask(ns.pmd_cpu_mask)
    if preempt[0] and len(pmd_cpus) != 1:
        raise ConfigError("--pmd-preempt needs exactly one PMD core")
    bad = [c for c in pmd_cpus if c not in host.cpus]
    if bad:
        raise ConfigError("--pmd-cpu-mask %s names CPUs %s that this "
                          "process cannot use (it has %s)"
                          % (ns.pmd_cpu_mask, bad, host.cpus))
    agent_cpus = [c for c in host.cpus if c not in pmd_cpus]
    if not agent_cpus:
        raise ConfigError("the PMD would take every CPU (%s); need at least "
                          "one more for the hosts" % host.cpus)

    binaries = resolve_binaries(ns.ovs_build, ns.vswitchd)
    # A run of deep-fifo modes alone starts no DPDK switch.
    dpdk = fabric or any(m != DEEP_FIFO for m in modes)
    use_huge = dpdk and ns.hugepages != "off" and (
        not fabric or ns.fabric_dpdk == "on")
    check_congestion_control(ns.congestion_control,
                             available_congestion_control()
                             if check_env else None)
    if check_env:
        if not host.is_root:
            raise ConfigError("must run as root (namespaces, veths, qdiscs, "
                              "DPDK)")
        tools = (binaries.vswitchd, binaries.ovsdb_server,
                 binaries.ovsdb_tool, binaries.vsctl, binaries.ofctl,
                 binaries.appctl)
        for path in tools if dpdk else ():
            if not os.access(path, os.X_OK):
                hint = ""
                if ns.vswitchd is None and ns.ovs_build is None:
                    hint = (" (the repository's build is missing: build it, "
                            "or use --vswitchd /usr/lib/openvswitch-switch-"
                            "dpdk/ovs-vswitchd-dpdk)")
                raise ConfigError("%s: not an executable%s" % (path, hint))
        if dpdk and not os.path.isfile(binaries.schema):
            raise ConfigError("%s: schema not found" % binaries.schema)
        for tool in ("ip", "tc", "ethtool", "bridge"):
            if shutil.which(tool) is None and not os.access(
                    "/usr/sbin/" + tool, os.X_OK):
                raise ConfigError("%s not found (install iproute2, ethtool)"
                                  % tool)
        if use_huge and host.hugepages_free_mb < ns.socket_mem:
            notes.append("%d MB of hugepages free, --socket-mem %d: the "
                         "missing ones are reserved for the run and given "
                         "back after it%s"
                         % (host.hugepages_free_mb, ns.socket_mem,
                            "" if ns.hugepages == "require" else
                            " (--no-huge if that fails)"))
    if host.other_vswitchd and dpdk:
        notes.append("another ovs-vswitchd is running (%s): it may share "
                     "the PMD core and skew the results"
                     % ", ".join(host.other_vswitchd))

    return Config(
        ros=ns.ros, dcms=ns.dcms, ros_per_host=k, fragment_size=fragment,
        fragment_dist=ns.fragment_dist, events=ns.events, pus=ns.pus,
        warmup_events=ns.warmup_events,
        event_gap_ms=ns.event_gap, credits=credits,
        credits_auto=credits_auto, seed=ns.seed,
        tcp_nodelay=ns.tcp_nodelay == "on", link_rate_bps=rate,
        request_yield=ns.request_yield, pipeline=ns.pipeline,
        link_burst=burst, link_limit=limit, link_overhead=ns.link_overhead,
        port_frames=ns.port_frames,
        mtu=mtu, modes=modes, ring_size=ring, max_burst=max_burst,
        poll_interval_us=poll, max_rate_bps=max_rate,
        max_burst_bytes=burst_bytes,
        tx_retry_budget_us=tx_retry_us,
        ring_rate_fraction=ns.ring_rate_fraction,
        sweep_param=sweep_param, sweep_values=sweep_values,
        binaries=binaries, socket_mem_mb=ns.socket_mem,
        use_hugepages=use_huge, hugepages_mode=ns.hugepages,
        pmd_cpus=pmd_cpus, agent_cpus=agent_cpus, preempt_us=preempt,
        timeout_s=ns.timeout, event_deadline_s=ns.event_deadline,
        rto_threshold_s=ns.rto_threshold / 1000.0, json_path=ns.json,
        plot_dir=ns.plot_dir, log_dir=ns.log_dir, progress=not ns.quiet,
        dry_run=ns.dry_run, notes=notes,
        flow_buckets=_flow_buckets(ns.flow_buckets),
        host_rps=ns.host_rps, congestion_control=ns.congestion_control,
        topology=ns.topology,
        hlt_hosts=ns.hlt_hosts if fabric else links, spines=ns.spines,
        planes=ns.planes, ros_leaves=ns.ros_leaves,
        fabric_db_members=ns.fabric_db_members,
        ring_sharing=ns.ring_sharing, fabric_dpdk=ns.fabric_dpdk == "on",
        host_arp=host_arp,
        failover=parse_failover(ns.failover, ns.spines) if fabric
        else (0.0, 0.0), hold=bool(getattr(ns, "hold", False)),
        deep_limits=deep_limits, hog=hog,
        hog_ring_size=hog_ring)


def parse_deep_limits(text: Optional[str]) -> List[str]:
    """--deep-limit LIST: each value "auto", "auto/N" (N >= 1) or a size
    of at least a full frame; ["auto"] when not given."""
    if text is None:
        return ["auto"]
    out = []
    for v in (x.strip() for x in text.split(",")):
        if v == "auto" or re.fullmatch(r"auto/[1-9][0-9]{0,5}", v):
            out.append(v)
            continue
        try:
            n = parse_size(v)
        except ConfigError:
            n = -1
        if n < MIN_LINK_BUFFER:
            raise ConfigError("bad --deep-limit value %r: auto, auto/N or "
                              "a size of at least %d bytes (e.g. 4MiB)"
                              % (v, MIN_LINK_BUFFER))
        out.append(str(n))
    if len(set(out)) != len(out):
        raise ConfigError("--deep-limit needs distinct values")
    return out


def parse_failover(text: str, spines: int) -> Tuple[float, float]:
    """--failover DOWN/UP: (down, up) seconds, (0, 0) for none."""
    if not text:
        return 0.0, 0.0
    try:
        down, up = (float(x) for x in text.split("/"))
    except ValueError:
        raise ConfigError("--failover %r: DOWN/UP in seconds, e.g. 2/5"
                          % text)
    if not 0 < down < up <= 600:
        raise ConfigError("--failover %s: need 0 < DOWN < UP <= 600"
                          % text)
    if spines < 2:
        raise ConfigError("--failover needs --spines 2 (a path to move "
                          "the DCMs to)")
    return down, up


def check_fabric(ns: argparse.Namespace) -> None:
    """The fabric's shape (--topology fabric): what this machine can
    emulate, or ConfigError saying why not."""
    if not 1 <= ns.hlt_hosts <= MAX_HLT_HOSTS:
        raise ConfigError("--hlt-hosts must be 1..%d, not %d"
                          % (MAX_HLT_HOSTS, ns.hlt_hosts))
    if not 1 <= ns.ros_leaves <= MAX_ROS_LEAVES:
        raise ConfigError("--ros-leaves must be 1..%d, not %d"
                          % (MAX_ROS_LEAVES, ns.ros_leaves))
    if ns.planes < 1 or ns.spines < 1:
        raise ConfigError("--planes and --spines must be positive")
    if ns.planes > MAX_FABRIC_PLANES or ns.spines > MAX_FABRIC_SPINES:
        raise ConfigError(
            "--planes %d --spines %d: at most %d planes of %d spines on "
            "this machine (one PMD core for every plane's HLT leaf)"
            % (ns.planes, ns.spines, MAX_FABRIC_PLANES, MAX_FABRIC_SPINES))
    if ns.dcms > MAX_FABRIC_DCMS:
        raise ConfigError("--dcms %d: at most %d in a fabric"
                          % (ns.dcms, MAX_FABRIC_DCMS))
    if ns.dcms % ns.hlt_hosts:
        raise ConfigError("--dcms %d is not a multiple of --hlt-hosts %d "
                          "(every HLT host runs as many DCMs)"
                          % (ns.dcms, ns.hlt_hosts))
    if ns.ros < ns.ros_leaves:
        raise ConfigError("--ros %d: fewer ROS than --ros-leaves %d"
                          % (ns.ros, ns.ros_leaves))
    if ns.ros_per_host > MAX_FABRIC_ROS_PER_HOST:
        raise ConfigError("--ros-per-host %d: at most %d in a fabric (a "
                          "ROS host's addresses are one /24)"
                          % (ns.ros_per_host, MAX_FABRIC_ROS_PER_HOST))


def available_congestion_control(path: str = AVAILABLE_CC) -> List[str]:
    """The TCP congestion controls this kernel offers (every namespace
    can choose among them)."""
    try:
        with open(path) as f:
            return f.read().split()
    except OSError as e:
        raise ConfigError("cannot read the kernel's TCP congestion "
                          "controls: %s" % e)


def check_congestion_control(name: str,
                             available: Optional[Sequence[str]]) -> None:
    """Raise ConfigError unless NAME is a congestion control's name and,
    when AVAILABLE is given, one of them."""
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,15}", name):
        raise ConfigError("--congestion-control: %r is not a congestion "
                          "control's name (e.g. cubic, reno, bbr)" % name)
    if available is not None and name not in available:
        raise ConfigError("--congestion-control %s: not available on this "
                          "kernel (it offers: %s)"
                          % (name, ", ".join(available) or "none"))


def _flow_buckets(text: str) -> Optional[int]:
    if text == "auto":
        return None
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n != 0 and (n < 2 or n > 65536 or n & (n - 1)):
        raise ConfigError("--flow-buckets must be auto, 0 or a power of 2 "
                          "from 2 to 65536")
    return n


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))
