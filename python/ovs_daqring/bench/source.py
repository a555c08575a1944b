# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The source tree a run is measured from."""

import os
from typing import Any, Dict

from .. import TOP
from ..process import RunError, run


def rel(path: str) -> str:
    """path relative to the current directory if it is below it."""
    r = os.path.relpath(path)
    return path if r.startswith("..") else r


def rel_top(path: str) -> str:
    """path relative to the source tree if it is inside it."""
    r = os.path.relpath(os.path.abspath(path), TOP)
    return path if r.startswith("..") else r


def source_state() -> Dict[str, Any]:
    """The git commit of the source tree and whether it has changes."""
    out: Dict[str, Any] = {"commit": None, "dirty": None}
    try:
        out["commit"] = run(["git", "-C", TOP, "rev-parse", "--short=12",
                             "HEAD"]).strip()
        out["dirty"] = bool(run(["git", "-C", TOP, "status", "--porcelain",
                                 "--untracked-files=no"]).strip())
        out["untracked"] = run(["git", "-C", TOP, "ls-files", "--others",
                                "--exclude-standard"]).split()
    except RunError:
        pass
    return out
