# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The Open vSwitch binaries daq-incast runs: a built tree's (--ovs-build)
or a given ovs-vswitchd with the system's tools (--vswitchd)."""

import os
import shutil
from typing import Optional

from .. import TOP
from ..sandbox import Binaries, tree_binaries


DEFAULT_OVS_BUILD = os.path.join(TOP, "ovs")


def _system_tool(name: str) -> str:
    for d in ("/usr/bin", "/usr/sbin"):
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return shutil.which(name) or os.path.join("/usr/bin", name)


def resolve_binaries(ovs_build: Optional[str],
                     vswitchd: Optional[str]) -> Binaries:
    """--ovs-build DIR uses a built OVS tree; --vswitchd PATH uses that
    binary with the system's tools and schema (unless --ovs-build is also
    given)."""
    if vswitchd is not None and ovs_build is None:
        return Binaries(
            vswitchd=vswitchd, ovsdb_server=_system_tool("ovsdb-server"),
            ovsdb_tool=_system_tool("ovsdb-tool"),
            vsctl=_system_tool("ovs-vsctl"), ofctl=_system_tool("ovs-ofctl"),
            appctl=_system_tool("ovs-appctl"),
            schema="/usr/share/openvswitch/vswitch.ovsschema",
            origin="system tools, vswitchd %s" % vswitchd)
    return tree_binaries(ovs_build or DEFAULT_OVS_BUILD, vswitchd)
