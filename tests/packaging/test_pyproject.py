# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""python/pyproject.toml ("pip install python/") gives the same
executables as "make install-tools", each calling what its utilities/
executable calls."""

import re
from pathlib import Path
from typing import Dict, Set

import pytest

tomllib = pytest.importorskip("tomllib", reason="needs Python 3.11")

TOP = Path(__file__).resolve().parent.parent.parent


def installed_tools() -> Set[str]:
    """The executables of utilities/ that "make install-tools" installs
    (utilities/local.mk)."""
    mk = (TOP / "utilities" / "local.mk").read_text()
    m = re.search(r"^PY_TOOLS = (.*)$", mk, re.M)
    assert m
    tools = set(m.group(1).split())
    tools |= set(re.findall(r"install -p -m 0755 utilities/([\w-]+) ", mk))
    return tools


def entry(tool: str) -> str:
    """module:function that utilities/TOOL runs."""
    text = (TOP / "utilities" / tool).read_text()
    m = re.search(r"^from (ovs_daqring\.cmd\.\w+) import (\w+)", text,
                  re.M)
    assert m, tool
    assert "sys.exit(%s())" % m.group(2) in text, tool
    return "%s:%s" % m.groups()


def test_scripts_are_the_installed_tools() -> None:
    with open(TOP / "python" / "pyproject.toml", "rb") as f:
        scripts: Dict[str, str] = tomllib.load(f)["project"]["scripts"]
    tools = installed_tools()
    assert "ovs-daqfabric-agent" in tools and "ovs-daqctl" in tools
    assert set(scripts) == tools
    for tool in tools:
        assert scripts[tool] == entry(tool), tool
