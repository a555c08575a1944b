# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at:
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""Prometheus metrics of a switch's daqrings (Documentation/topics/
monitoring.rst), served by ovs-daqring-exporter(8):
  rings     -- what one scrape reads of the switch's OVSDB (RingReading,
               read_rings()) and the metric families made of it
               (ring_families()); METRICS documents every name
  pmd       -- the PMD threads, from what ovs-vswitchd's pmd-stats-show
               and pmd-rxq-show print (parse_pmd_stats(), pmd_families())
  collector -- the Collector that renders the rings once per change of
               the replica, off the scrape path (DaqringCollector)
  server    -- the scrape process: the HTTP endpoint, a process of its
               own that serves the last whole exposition (serve())
  fabric    -- a fabric node's and its planner's metrics
  address   -- --metrics-address [HOST:]PORT (no prometheus_client
               needed: the tools' --help and argument checks work
               without it)
"""
