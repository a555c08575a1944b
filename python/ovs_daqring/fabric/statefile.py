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


"""A switch agent's state file (--state-file): the last slice the agent
brought its switch to, kept on the disk so that a restarted agent holds
its switch to it before, or without, the fabric database."""

import json
import os
from typing import Any, Dict, Optional

from .flows import dcm_of_json, route_table
from .node import vlog

CACHE_VERSION = 1


def load_cache(path: str, node: str) -> Optional[Dict[str, Any]]:
    """The last slice applied, or None (no file, or one that is not this
    node's or not readable: said in the log)."""
    try:
        with open(path) as f:
            c = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        vlog.warn("%s: cannot read the last applied slice: %s" % (path, e))
        return None
    try:
        if c.get("version") != CACHE_VERSION or c.get("node") != node:
            raise ValueError("it is not node %s's (version %d)"
                             % (node, CACHE_VERSION))
        for d in c["slice"]["rings"]:
            dcm_of_json(d)
        route_table(c["slice"]["routes"])
        int(c["generation"])
        c["target"]["bridge"]
    except (KeyError, TypeError, ValueError) as e:
        vlog.warn("%s: ignoring the last applied slice: %s" % (path, e))
        return None
    return c


def save_cache(path: str, text: str) -> None:
    """Writes 'text' (a want as JSON) to 'path' atomically: a crash
    leaves the old file or the new one."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
