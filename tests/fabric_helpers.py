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

"""What the fabric tests share: a clustered fabric database of its own
(3 ovsdb-server members on unix sockets in a short directory under /tmp:
sun_path holds 108 bytes), bounded waits, and the OVS programs (from the
build in ovs/, else installed)."""

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict

import pytest

from ovs_daqring.fabric import schema_path

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> str:
    """An OVS program: from the build in ovs/, else installed."""
    for d in ("ovsdb", "utilities"):
        p = ROOT / "ovs" / d / name
        if p.is_file() and os.access(str(p), os.X_OK):
            return str(p)
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin")
    if not found:
        pytest.fail("%s not found (build ovs/ or install "
                    "openvswitch-common)" % name)
    return found


def wait_for(cond: Callable[[], Any], what: str,
             timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out (%g s) waiting for %s"
                                 % (timeout, what))
        time.sleep(0.1)


class Cluster:
    """A clustered fabric database of 'n' ovsdb-server members."""

    def __init__(self, n: int = 3) -> None:
        self.dir = tempfile.mkdtemp(prefix="dqf.", dir="/tmp")
        self.n = n
        self.procs: Dict[int, "subprocess.Popen[bytes]"] = {}
        self.server = _tool("ovsdb-server")
        self.appctl = _tool("ovs-appctl")
        tool = _tool("ovsdb-tool")
        try:
            subprocess.run([tool, "create-cluster", self.path(1, "db"),
                            schema_path(), "unix:" + self.path(1, "raft")],
                           check=True, capture_output=True, timeout=30)
            for i in range(2, n + 1):
                subprocess.run([tool, "join-cluster", self.path(i, "db"),
                                "daqfabric", "unix:" + self.path(i, "raft"),
                                "unix:" + self.path(1, "raft")],
                               check=True, capture_output=True, timeout=30)
            for i in range(1, n + 1):
                self.start(i)
            for i in range(1, n + 1):
                wait_for(lambda i=i: "Status: cluster member"
                         in self.status(i), "member %d to join" % i)
            wait_for(self.leader, "a leader")
        except BaseException:
            self.stop()
            raise

    def path(self, i: int, ext: str) -> str:
        return os.path.join(self.dir, "s%d.%s" % (i, ext))

    def start(self, i: int) -> None:
        log = open(self.path(i, "out"), "ab")
        try:
            self.procs[i] = subprocess.Popen(
                [self.server, "--no-chdir", "-vconsole:off",
                 "--log-file=" + self.path(i, "log"),
                 "--unixctl=" + self.path(i, "ctl"),
                 "--remote=punix:" + self.path(i, "sock"),
                 self.path(i, "db")], stdout=log, stderr=log)
        finally:
            log.close()

    def status(self, i: int) -> str:
        if i not in self.procs or self.procs[i].poll() is not None:
            return ""
        p = subprocess.run([self.appctl, "-t", self.path(i, "ctl"),
                            "cluster/status", "daqfabric"],
                           capture_output=True, text=True, timeout=10)
        return p.stdout

    def leader(self) -> int:
        for i in sorted(self.procs):
            if "Role: leader" in self.status(i):
                return i
        return 0

    def remote(self, i: int) -> str:
        return "unix:" + self.path(i, "sock")

    def remotes(self) -> str:
        """Every member, as clients are told."""
        return ",".join(self.remote(i) for i in range(1, self.n + 1))

    def kill(self, i: int) -> None:
        p = self.procs.pop(i)
        p.kill()
        p.wait(10)

    def stop(self) -> None:
        for i in list(self.procs):
            p = self.procs.pop(i)
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)
