# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-incast's command line: the argument parser (build_parser(), which
the executable's main() calls, one function per option group), its help
text, and parse_args()."""

import argparse
from typing import Sequence

from .binaries import DEFAULT_OVS_BUILD
from .limits import (AVAILABLE_CC, BYTES_RATE_FRACTION,
                     CONGESTION_CONTROL_DEFAULT, FABRIC_DB_MEMBERS, HOST_ARP,
                     HOST_RPS_DEFAULT, MAX_ETHDEV_PORTS, MAX_HOG,
                     MAX_TX_RETRY_US, MIN_BURST_BYTES, PACKETS_RATE_FRACTION,
                     PIPELINE, REQUEST_YIELD, RING_SHARING, TOPOLOGIES)


def build_parser() -> argparse.ArgumentParser:
    """daq-incast's argument parser (its main() parses with it)."""
    p = argparse.ArgumentParser(
        prog="daq-incast",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="daq-incast [OPTIONS]",
        description=DESCRIPTION, epilog=EPILOG, add_help=False)
    for add in (_topology_options, _fabric_options, _traffic_options,
                _link_options, _mode_options, _switch_options,
                _output_options, _other_options):
        add(p)
    return p


def _topology_options(p: argparse.ArgumentParser) -> None:
    """The group "Topology Options" of the command line."""
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


def _fabric_options(p: argparse.ArgumentParser) -> None:
    """The group "Fabric Options (--topology fabric)" of the command line."""
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
                   "time, and a loss probe's count, in the results")
    g.add_argument("--failover-target", default="", metavar="WHAT",
                   help="what --failover fails: link:SWITCH:PORT, any "
                   "leaf-spine link named by either end (its spine end "
                   "is set down), or spine:NAME, a whole spine (its "
                   "ovs-vswitchd killed at DOWN and started again at UP; "
                   "BFD on the links) (default: the HLT leaf's link to "
                   "the second spine, link:hlt-leaf:up1)")
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


def _traffic_options(p: argparse.ArgumentParser) -> None:
    """The group "Traffic Options" of the command line."""
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


def _link_options(p: argparse.ArgumentParser) -> None:
    """The group "Access-Link Options" of the command line."""
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


def _mode_options(p: argparse.ArgumentParser) -> None:
    """The group "Mode Options" of the command line."""
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


def _switch_options(p: argparse.ArgumentParser) -> None:
    """The group "Switch Options" of the command line."""
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


def _output_options(p: argparse.ArgumentParser) -> None:
    """The group "Output Options" of the command line."""
    g = p.add_argument_group("Output Options")
    g.add_argument("--json", metavar="PATH", help="write results as JSON")
    g.add_argument("--plot-dir", metavar="DIR",
                   help="write PNG plots (latency CDF, sweep) here")
    g.add_argument("--log-dir", metavar="DIR",
                   help="keep the switch and agent logs here")
    g.add_argument("-q", "--quiet", action="store_true",
                   help="no progress line on stderr")


def _other_options(p: argparse.ArgumentParser) -> None:
    """The group "Other Options" of the command line."""
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


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))
