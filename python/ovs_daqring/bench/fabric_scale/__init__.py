# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-bench --fabric: the fabric's scale ("make bench-fabric").

A parallel leaf-spine of N switches (default 32: 2 planes of 2 spines,
1 ROS leaf and 13 HLT leaves) with 2048 DCMs, run on one machine: a
3-member clustered fabric database, one ovs-vswitchd and ovsdb-server per
switch, one ovs-daqfabric-agent per switch.  Switches without daqrings
(spines, ROS leaves) run without DPDK (OVS's dummy datapath and ports);
HLT leaves, which hold the DCMs' daqrings, run DPDK with a small
--no-huge memory and their PMD thread on the PMD core.  Everything else
runs on the other core(s).

Converged: every agent reports the generation (its Node row), and every
switch's daqrings (its own OVSDB) and flows and groups (ovs-ofctl
dump-flows / dump-groups) are what the plan in the fabric database says
(fabric/slice.py over the planner's assignments).  A node's time is when
the last of these became true, measured from the trigger: its agent's
report as the bench's IDL received it, and the last change of its flows
as an OpenFlow flow monitor (ovs-ofctl monitor) on the switch delivered
it; the switches are read after the fact to check that they match.

Scenarios, in one run: from an empty fabric database to the whole map; a
one-DCM change (a DCM added); a leaf-spine link failure written into the
fabric database as the two agents at its ends would report it (and the
two ports set down on the switches, so that their agents agree), until
the last switch is reprogrammed.  See Documentation/topics/bench.rst,
"The fabric's scale".

The modules: shape.py (the fabric's shape and map), check.py (what a
switch holds against the plan), nodes.py (a switch, its agent and flow
monitor; the thread that times the monitors), cpu.py (the CPU the
fabric's processes use), runner.py (the run: set-up, scenarios,
tear-down) and results.py (targets, verdicts, fabric.md).
"""
