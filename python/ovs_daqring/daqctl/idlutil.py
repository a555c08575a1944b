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

"""What every client of an OVSDB through OVS's Python IDL here shares (the
switch's database in ovs-daqctl, the fabric database in the fabric's
agents and tools): running the IDL until a condition holds, committing a
transaction with a deadline, and reading an optional column."""

import time
from typing import Any, Callable, Optional
import ovs.db.idl
import ovs.poller

from .model import DaqctlError


def opt(v: Any) -> Any:
    """The value of an optional column ([] or [x]) or of a plain one."""
    if isinstance(v, list):
        return v[0] if v else None
    return v


def run_until(idl: Any, done: Callable[[], Any], remote: str, what: str,
              timeout: float, tick: Optional[Callable[[], None]] = None
              ) -> None:
    """Runs 'idl' until done(), calling tick(), if given, at least every
    100 ms meanwhile; DaqctlError ("REMOTE: timed out (TIMEOUT s) waiting
    to WHAT") after 'timeout' seconds."""
    deadline = time.monotonic() + timeout
    while True:
        idl.run()
        if done():
            return
        if tick is not None:
            tick()
        if time.monotonic() > deadline:
            raise DaqctlError("%s: timed out (%g s) waiting to %s"
                              % (remote, timeout, what))
        poller = ovs.poller.Poller()
        idl.wait(poller)
        poller.timer_wait(100)
        poller.block()


def commit_block(idl: Any, txn: Any, deadline: float, remote: str) -> str:
    """Commits 'txn' and runs 'idl' until the server has answered: the
    transaction's status.  After 'deadline' (time.monotonic()), aborts it
    and raises DaqctlError: it may or may not have been committed."""
    status = txn.commit()
    while status == ovs.db.idl.Transaction.INCOMPLETE:
        if time.monotonic() > deadline:
            txn.abort()
            raise DaqctlError("%s: the transaction timed out; it may or "
                              "may not have been committed" % remote)
        idl.run()
        poller = ovs.poller.Poller()
        idl.wait(poller)
        txn.wait(poller)
        poller.timer_wait(100)
        poller.block()
        status = txn.commit()
    return status
