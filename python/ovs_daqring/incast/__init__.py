# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-incast (utilities/daq-incast, daq-incast(1)), the ATLAS-style
incast emulator (Documentation/topics/daq-incast.rst).  Its main() is
cmd/daq_incast.py.

Modules, one subject each:
  limits     -- bounds, defaults and choices of the parameters (pure)
  units      -- rates and sizes in tc(8) units (pure)
  values     -- compound option values: --sweep, --pmd-preempt, ...
  binaries   -- the OVS binaries a run uses (--ovs-build, --vswitchd)
  options    -- the argument parser, its help text, parse_args()
  config     -- Config, a validated run, and what it derives (pure)
  sizing     -- ring sizes, shaping, credits, buffers, bursts (pure)
  validation -- validate(): the arguments against the limits and the
                machine, a Config or ConfigError
  stats      -- percentiles, goodput, ideal goodput, results schema (pure)
  topology   -- address plan (pure) and namespaces/veths/qdiscs (root)
  switch     -- the sandbox with the hosts' ports, counters, daqrings
  agents     -- ROS and DCM processes run inside the namespaces (stdlib
                only, executed as a script)
  modes      -- the runs and their parameters, the ring sharing policy
  describe   -- the plan printed before a run (and with --dry-run)
  counters   -- a mode's drops and TCP figures from two snapshots
  lifecycle  -- RunnerBase: work directory, hosts, switch, agents
  runner     -- Runner: the modes on one switch, the results document
  report     -- the summary after a run, the JSON, the exit status
  plot       -- PNG plots (matplotlib)
  fabric/    -- --topology fabric: the emulated leaf-spine fabric
                (FabricRunner, a Runner)
"""

from .. import VERSION  # noqa: F401
