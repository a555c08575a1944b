# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-bench (utilities/daq-bench, daq-bench(1)): the benchmarks of "make
bench" (Documentation/topics/bench.rst).  Its parser and main() are
cmd/daq_bench.py.

Modules, one subject each:
  parse         -- parsers of ovs-appctl, ovs-ofctl, perf and configure
  source        -- the source tree a run is measured from
  stats         -- the numbers of windows and repeats
  runlog        -- progress lines, notes, the switches' logs kept
  switch        -- the builds compared; the sandbox with null ports
  runner        -- the Bench: builds, switches, windows, notes, results
  incast_tool   -- daq-incast as the parts run it
  hop, scale, waiting, sleep, shaping, fairness, builds, incast, peers,
  lossless, fabric_incast
                -- one part each: its measurement (measure(bench)), its
                   targets, verdicts and section of the summary
  parts         -- the parts' names, defaults, measurements, targets
  summary       -- the verdicts in order, the Markdown summary
  driver        -- a run from start to end; --render, --cleanup-stale
  fabric_scale/ -- daq-bench --fabric: the fabric's scale
"""
