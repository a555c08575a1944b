# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The bounds, defaults and choices of daq-incast's parameters: what
this machine can emulate, and why each default is what it is (pure
constants; validation.py holds the checks)."""

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
# fabric/): the HLT leaf's DPDK ports (one per HLT host and spine)
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
