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

"""ovs-daqctl's options mean the same for every command, the fabric's
too: "-f json" makes every command print one JSON object
(ovs-daqctl(8), --format), wherever it is given (before the command,
between "fabric" and its command, after it), and "fabric status --json"
is its other spelling.

Against a fabric database of one member of its own (fabric_helpers:
ovsdb-server on a unix socket), and one that is not there; no switch.

Run: /usr/bin/python3 -m pytest -q tests/cmd/test_ovs_daqctl_options.py
"""

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

from fabric_helpers import Cluster
from fabric_helpers import one_member_cluster  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent.parent
DAQCTL = ROOT / "utilities" / "ovs-daqctl"
PYTHON = "/usr/bin/python3"

# Where "-f json" may be given, around "fabric status --db DB".
JSON_SPELLINGS = {
    "before the command": (["-f", "json"], [], []),
    "long, before the command": (["--format=json"], [], []),
    "between fabric and status": ([], ["-f", "json"], []),
    "after the command": ([], [], ["-f", "json"]),
    "--json": ([], [], ["--json"]),
}


def daqctl(args: List[str]) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([PYTHON, str(DAQCTL)] + args, capture_output=True,
                          text=True, timeout=120, env=env)


def status_args(where: str, db: str) -> List[str]:
    before, between, after = JSON_SPELLINGS[where]
    return (before + ["fabric"] + between + ["status"] + after
            + ["--db", db])


def one_json_object(text: str) -> Dict[str, Any]:
    """'text' parsed: it must be one JSON object and nothing else."""
    obj, end = json.JSONDecoder().raw_decode(text)
    assert text[end:].strip() == "", text
    assert isinstance(obj, dict), text
    return obj


@pytest.mark.parametrize("where", sorted(JSON_SPELLINGS))
def test_fabric_status_json_wherever_given(cluster: Cluster,
                                           where: str) -> None:
    p = daqctl(status_args(where, cluster.remotes()))
    assert p.returncode == 0, p.stderr
    out = one_json_object(p.stdout)
    assert out["command"] == "fabric" and out["status"] == 0
    assert out["fabric"]["generation"] == 0
    assert out["fabric"]["nodes"] == [] and out["fabric"]["dcms"] == []


def test_fabric_status_table_by_default(cluster: Cluster) -> None:
    p = daqctl(["fabric", "status", "--db", cluster.remotes()])
    assert p.returncode == 0, p.stderr
    assert p.stdout == "fabric: empty (no map applied yet)\n"
    p = daqctl(["-f", "table", "fabric", "status", "--db",
                cluster.remotes()])
    assert p.returncode == 0, p.stderr
    assert p.stdout == "fabric: empty (no map applied yet)\n"


@pytest.mark.parametrize("where", sorted(JSON_SPELLINGS))
def test_fabric_status_error_in_json_wherever_given(
        tmp_path: Path, where: str) -> None:
    """A failure too is one JSON object (the envelope's "error")."""
    p = daqctl(status_args(where, "unix:%s/none.sock" % tmp_path)
               + ["--timeout", "2"])
    assert p.returncode == 1
    assert "timed out" in p.stderr
    out = one_json_object(p.stdout)
    assert out["command"] == "fabric" and out["status"] == 1
    assert "timed out" in out["error"]
