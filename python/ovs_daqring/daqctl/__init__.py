# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ovs-daqctl (utilities/ovs-daqctl, ovs-daqctl(8)): daqring ports and the
DCM steering flows of a switch, from a DCM map.  Its parser and main()
are cmd/ovs_daqctl.py; the fabric (ovs_daqring.fabric) builds on it.

Modules, one subject each:
  model     -- the DCM model: limits, exit statuses, errors, DCMs, rates
  mapfile   -- what every map reader shares: the YAML loader with lines,
               the checks of scalar values
  dcmmap    -- reading DCM maps (YAML, CSV) and checking their DCMs
  idlutil   -- what every client of an OVSDB through OVS's Python IDL
               shares
  ovsdb     -- the switch's database: its daqrings, one transaction
  openflow  -- the steering flows through ovs-ofctl, in one bundle
  ringplan  -- the plan of a switch's daqrings (Plan, plan_rings())
  flowsync  -- the OpenFlow side of a reconcile (FlowSync)
  rollback  -- undoing a committed plan (Rollback)
  reconcile -- Reconciler: a switch brought to its DCMs, the reconcile
               core the fabric's agents use too
  commands  -- ovs-daqctl's commands on a switch, cmd_X(args)
"""
