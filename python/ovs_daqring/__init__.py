# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ovs-daqring's Python tools (Documentation/internals/python.rst).

Subpackages, one per tool:
  daqctl   -- ovs-daqctl: daqring ports and DCM steering flows
  incast   -- daq-incast: the ATLAS-style incast emulator
  bench    -- daq-bench: the benchmark suite

Modules they share:
  sandbox   -- a private ovsdb-server + ovs-vswitchd (DPDK or dummy)
  hugepages -- DPDK memory: reserving hugepages, a hugetlbfs mount
  hosts     -- the machine: CPUs, other ovs-vswitchd processes, reports
  process   -- running commands, stopping processes, signals, clean-up
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
