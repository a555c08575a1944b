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


"""The fabric: a parallel leaf-spine of ovs-daqring switches (thesis
ch. 6) programmed from one DCM map through a clustered fabric database
(daqfabric.ovsschema).  See Documentation/topics/fabric.rst.  This
module: the schema's name and path, the database's default remote.

Modules, one subject each (the parsers and main()s of ovs-daqctl
fabric and ovs-daqfabric-agent are in cmd/):
  model      -- switches, links, hosts, DCMs, the planner's assignments
  fabmap     -- the fabric section of a DCM map: reading and checking it
  idl        -- FabricIdl: OVS's IDL with change counts, stale members
  rows       -- the database's rows as the model and back
  db         -- FabricDb: the desired state written and read back
  planner    -- the plan: each DCM's plane and spine (pure)
  plannerd   -- the planner's role: the lock, the epoch, the rounds
  slice      -- a switch's slice: its daqrings and routes (pure)
  flows      -- a slice in the switch's terms: JSON, the route table
  node       -- what the agents of a switch and a host share
  switchhold -- how a switch's agent holds its switch to its slice
  statefile  -- a switch agent's --state-file
  agent      -- the agent of a switch: its slice and rounds
  hostnet    -- a host's policy routing per plane: wanted, held, diff
  hostagent  -- the agent of a ROS or HLT host
  commands   -- ovs-daqctl fabric apply, status, plan
"""

import os

SCHEMA_NAME = "daqfabric"


def schema_path() -> str:
    """The fabric schema shipped with this package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "daqfabric.ovsschema")


def default_fabric_db() -> str:
    """The fabric database's remote when none is given: $OVS_DAQFABRIC_DB,
    else unix:$OVS_RUNDIR/daqfabric.sock (OVS's run directory)."""
    env = os.environ.get("OVS_DAQFABRIC_DB")
    if env:
        return env
    import ovs.dirs
    rundir = os.environ.get("OVS_RUNDIR") or ovs.dirs.RUNDIR
    return "unix:%s/daqfabric.sock" % rundir
