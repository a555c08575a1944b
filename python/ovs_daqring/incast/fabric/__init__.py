# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-incast --topology fabric: the incast through an emulated leaf-spine
fabric of ovs-daqring switches (thesis Figure 6.7a, scaled to one
machine), programmed only through the fabric database and its agents.

Shape: the ROS hosts on R ROS leaves, H HLT hosts on one HLT leaf (each
HLT host a namespace holding its DCMs' addresses, behind one access
link), S spines in one plane.  Every switch is its own ovsdb-server and
ovs-vswitchd in a namespace of its own; inter-switch links and host links
are veth pairs.  The fabric database is a Raft cluster of 1 or 3
ovsdb-servers; each switch has an ovs-daqfabric-agent (the HLT leaf's
also plans), and every mode is programmed by `ovs-daqctl fabric apply
--wait` of a generated fabric map, never by hand.

CPU plan (2 cores): the HLT leaf, where the incast fans in and the rings
are, runs DPDK with its one PMD on the PMD core (--pmd-cpu-mask, 0x2);
every other switch runs the userspace datapath without DPDK, its system
(veth) ports polled by its main thread, pinned with everything else (the
database, the agents, the hosts) to the other core(s).

Modules:
  plan     -- the fabric's switches, ports, links, hosts and addresses
              (pure)
  maps     -- the fabric map of a mode (pure)
  routes   -- the switches' flows, read and checked against the cabling
              (pure)
  limit    -- the fabric's theoretical limit, thesis 6.2.2 (pure)
  summary  -- the fabric's lines of the plan and of the summary (pure)
  failover -- --failover: a link down and up during the events, the
              goodput's timeline and recovery
  netns    -- namespaces, veths, hosts and access links (root)
  procs    -- the fabric database, the switches and their agents (root)
  counters -- the kernel's counters, and the account of every frame
  runner   -- FabricRunner: runner.Runner's modes on the fabric

The pure parts are tested without root in
tests/incast/test_fabric.py."""
