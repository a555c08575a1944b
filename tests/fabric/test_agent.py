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

"""An idle fabric agent sleeps: once its planner has planned and nothing
changes, its poll loop waits for a change or its next deadline instead
of waking at once (a planner tick left in the past made a planner agent
spin).  Asserts the poller's timeout the agent asks for, not a CPU
share: never 0 ms twice in a row.

Run: /usr/bin/python3 -m pytest -q tests/fabric/test_agent.py
"""

from pathlib import Path

import ovs.poller

from ovs_daqring.bench.fabric_scale.shape import Shape, map_text
from ovs_daqring.cmd import ovs_daqfabric_agent as agent_cmd
from ovs_daqring.fabric import agent as fa
from ovs_daqring.fabric.db import FabricDb
from ovs_daqring.fabric.fabmap import FabricMapReader, state_digest

from fabric_helpers import Cluster, wait_for
from fabric_helpers import one_member_cluster  # noqa: F401
import pytest

pytestmark = [pytest.mark.every_base, pytest.mark.ovsdb_only]


def test_idle_planner_agent_sleeps(cluster: Cluster, tmp_path: Path) -> None:
    state = FabricMapReader("m").parse(map_text(Shape(leaves=2, hosts=2,
                                                      dcms=16)))
    db = FabricDb(cluster.remotes(), 30)
    try:
        db.apply(state, state_digest(state), "test", "test")
    finally:
        db.close()
    d = str(tmp_path)
    p = agent_cmd.build_parser()
    # No switch behind --ovsdb: the agent's apply fails and is retried
    # every interval, which is a deadline too.
    args = p.parse_args(["--node", "p0-spine1", "--db", cluster.remotes(),
                         "--planner", "--interval", "2",
                         "--state-file", d + "/state.json",
                         "--ovsdb", "unix:%s/none.sock" % d])
    agent_cmd.check_args(p, args)
    agent = fa.Agent(args)
    try:
        def round_() -> int:
            agent.run()
            poller = ovs.poller.Poller()
            agent.wait(poller)
            timeout: int = poller.timeout
            poller.block()
            return timeout

        # Until the planner has planned and the agent has its slice from
        # acknowledged conditions (each change of its conditions wakes
        # it at once, FabricDb.narrow(): rounds of 0 ms in a row).
        wait_for(lambda: round_() is not None
                 and agent.plan_what in ("planned", "unchanged")
                 and not agent.plan_again and agent.want is not None
                 and agent.fabric.narrowed(),
                 "the planner to plan and the agent to have its slice")
        # Past the planner's tick (PLAN_TICK) with nothing to plan.
        timeouts = []
        wait_for(lambda: timeouts.append(round_()) or len(timeouts) >= 8,
                 "8 rounds", 30)
        assert agent.plan_what in ("planned", "unchanged")
        # A round may find a deadline already due (two deadlines less
        # than a round apart: the report's and the slice check's drift
        # into each other), but that round handles it: a spinning agent
        # asks for 0 ms round after round.
        assert all(a != 0 or b != 0 for a, b in zip(timeouts, timeouts[1:])), \
            timeouts
    finally:
        agent.close()


@pytest.mark.parametrize("exiting", [True, False])
def test_agent_removes_its_flow_restore_wait_only_when_told_to_exit(
        exiting: bool) -> None:
    """'ovs-appctl exit' removes the flow-restore-wait the agent set
    (SwitchHold.frw_disarm()): a switch whose agent was stopped must not
    wait for it at its next start.  A close for any other reason (the
    process dies of an exception, a test ends) leaves it."""
    from types import SimpleNamespace
    calls = []
    agent = fa.Agent.__new__(fa.Agent)
    agent.exiting = exiting
    agent.planner = None
    agent.fabric = SimpleNamespace(close=lambda: calls.append("fabric"))
    agent.frw_disarm = lambda: calls.append("disarm")  # type: ignore
    agent.close_switch = lambda: calls.append("switch")  # type: ignore
    agent.close()
    assert calls == (["disarm"] if exiting else []) + ["switch", "fabric"]
