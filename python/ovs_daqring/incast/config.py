# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""A validated daq-incast run: the Config that validation.validate()
returns, with what the run derives from it (hosts, ports, rates, the
deep-FIFO limits).  Pure: nothing here looks at the machine."""

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..daqctl.model import auto_flow_buckets
from ..sandbox import Binaries
from .limits import (CONGESTION_CONTROL_DEFAULT, DAQRING_FRAME, FULL_FRAME,
                     HOST_RPS_DEFAULT, HOST_RPS_KINDS, MIN_LINK_BUFFER)
from .units import parse_size


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
    # --topology fabric (incast/fabric/): the leaf-spine's shape, its
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
