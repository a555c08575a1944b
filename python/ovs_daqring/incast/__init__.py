"""daq-incast (utilities/daq-incast), the ATLAS-style incast emulator.

Modules:
  config   -- command line, units, validation (pure, no side effects)
  stats    -- percentiles, goodput, ideal goodput, results schema (pure)
  topology -- address plan (pure) and namespaces/veths/qdiscs (root)
  agents   -- ROS and DCM processes run inside the namespaces (stdlib
              only, executed as a script)
  switch   -- the sandbox with the hosts' ports, counters, daqrings
  runner   -- runs the modes, collects counters, prints the report
  plot     -- PNG plots (matplotlib)
"""

from .. import VERSION  # noqa: F401
