# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ovs-daqring's Python tools (Documentation/internals/python.rst).

Subpackages, one per subject, from the bottom floor up (a module imports
from its own floor and below, never up):
  daqctl   -- a switch's daqrings and DCM steering flows (ovs-daqctl)
  fabric   -- the leaf-spine fabric through its clustered database
              (ovs-daqctl fabric, ovs-daqfabric-agent)
  incast   -- daq-incast: the ATLAS-style incast emulator
  metrics  -- Prometheus metrics of a switch's daqrings and PMD threads
              (ovs-daqring-exporter), on incast's floor
  bench    -- daq-bench: the benchmark suite
  cmd      -- the executables' entry points: one module per executable,
              its argument parser and main(); utilities/ calls them

Modules they all share (the bottom floor):
  process   -- running commands, stopping processes, signals, clean-up
  hugepages -- DPDK memory: reserving hugepages, a hugetlbfs mount
  hosts     -- the machine: CPUs, other ovs-vswitchd processes, reports
  sandbox   -- a private ovsdb-server + ovs-vswitchd (DPDK or dummy)
  options   -- the SSL options of the tools that talk to a remote
"""

import os
import shutil
import sys
from typing import Optional

VERSION = "1.0"

# The top of the source tree when the package is used from it (the
# package is TOP/python/ovs_daqring); installed, TOP means nothing.
TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def tool_path(name: str) -> Optional[str]:
    """Where executable NAME of ours is: next to the running program (a
    source tree's utilities/, or the bin directory it is installed in),
    then TOP/utilities, then PATH."""
    for d in (os.path.dirname(os.path.abspath(sys.argv[0])),
              os.path.join(TOP, "utilities")):
        path = os.path.join(d, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which(name)
