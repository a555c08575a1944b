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


"""A fabric agent's OpenFlow bundles through an ovs-ofctl started ahead.

python-ovs has no OpenFlow client, so the agents send their flows with
ovs-ofctl (daqctl/openflow.py): one process per bundle.  On a failover
the bundle is on the critical path (fabric.rst, "Where a failover's time
goes"), and a good part of it is ovs-ofctl's start before it sends
anything: the program's start (a DPDK build loads its libraries), its
connection to the switch for the bridge's port and table names, which
'ovs-ofctl bundle' asks before it reads its file.  So the agent keeps
one 'ovs-ofctl bundle TARGET -' started ahead, past those steps and
blocked on its standard input; a bundle is written to it and its input
closed, and it only connects and sends.  A spare is used only for the
switch configuration it was started on (the port names it holds map to
the port numbers of then: the agent's key, SwitchHold.spare_key()),
else it is stopped and the bundle goes through a new ovs-ofctl as
before; a new spare is started at a check of the switch at least
SPARE_DELAY after the last bundle (not at once: after a failover, the
other switches' bundles need the CPU)."""

import subprocess
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

from ..daqctl.model import DaqctlError
from ..daqctl.openflow import OpenFlow
from ..process import die_with_parent

# Seconds after a bundle before a new spare is started.
SPARE_DELAY = 0.5


class WarmOpenFlow(OpenFlow):
    """OpenFlow (daqctl/openflow.py) whose bundles go through a spare
    ovs-ofctl when one is ready for the switch as it is ('key()': the
    switch's configuration as the agent knows it)."""

    def __init__(self, of: OpenFlow, key: Callable[[], Any]) -> None:
        super().__init__(of.target, of.ofctl, of.timeout, of.ssl)
        self.key = key
        self.spare: Optional[Tuple[Any, "subprocess.Popen[str]"]] = None
        self.last_bundle = 0.0
        # Bundles sent through a spare, and through a new ovs-ofctl.
        self.warm_bundles = 0
        self.cold_bundles = 0

    def bundle(self, lines: List[str]) -> None:
        """As OpenFlow.bundle(), always as 'ovs-ofctl bundle' (flows and
        groups alike: the spare's command)."""
        self.written = True
        self.run(["bundle", self.target, "-"], "\n".join(
            ln if ln.startswith("group ") else "flow " + ln
            for ln in lines) + "\n")

    def run(self, command: List[str], stdin: Optional[str] = None,
            options: Sequence[str] = ()) -> str:
        if stdin is None or command[:1] != ["bundle"] or options:
            return super().run(command, stdin, options)
        self.last_bundle = time.monotonic()
        spare, self.spare = self.spare, None
        if (spare is None or spare[0] != (tuple(command), self.key())
                or spare[1].poll() is not None):
            self._stop(spare)
            self.cold_bundles += 1
            return super().run(command, stdin, options)
        p = spare[1]
        self.warm_bundles += 1
        try:
            out, err = p.communicate(stdin, timeout=self.timeout + 10)
        except (OSError, subprocess.TimeoutExpired) as e:
            self._stop(spare)
            raise DaqctlError("%s: %s" % (self.ofctl, e))
        if p.returncode != 0:
            raise DaqctlError("%s %s failed: %s"
                              % (self.ofctl.rsplit("/", 1)[-1], command[0],
                                 err.strip() or p.returncode))
        return out

    def warm(self, now: Optional[float] = None) -> bool:
        """Starts a spare for the switch as it is now, unless one is
        ready or a bundle was sent less than SPARE_DELAY ago.  Whether
        one was started."""
        now = time.monotonic() if now is None else now
        command = ["bundle", self.target, "-"]
        key = (tuple(command), self.key())
        if self.spare is not None:
            if self.spare[0] == key and self.spare[1].poll() is None:
                return False
            self._stop(self.spare)
            self.spare = None
        if now < self.last_bundle + SPARE_DELAY:
            return False
        try:
            # No --timeout: ovs-ofctl's alarm would end a spare that
            # waits longer; run() bounds what it waits for.
            p = subprocess.Popen(
                self.argv(command, timeout=False), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                preexec_fn=die_with_parent)
        except OSError:
            return False
        self.spare = (key, p)
        return True

    def close(self) -> None:
        """Stops the spare, if any."""
        self._stop(self.spare)
        self.spare = None

    @staticmethod
    def _stop(spare: Optional[Tuple[Any, "subprocess.Popen[str]"]]
              ) -> None:
        if spare is None:
            return
        p = spare[1]
        if p.poll() is None:
            p.kill()
        try:
            p.communicate(timeout=5)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
