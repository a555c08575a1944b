# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ovs_daqring.daqctl.ovsdb without a switch: what a user is told when
nothing listens where the database is looked for."""

import socket
from pathlib import Path

import pytest

ovsdb = pytest.importorskip("ovs_daqring.daqctl.ovsdb",
                            reason="needs python3-openvswitch")


def test_no_socket_says_what_to_do(tmp_path: Path) -> None:
    """The default unix:$OVS_RUNDIR/db.sock does not exist: the error
    says how to name the database and how to start a switch."""
    remote = "unix:%s" % (tmp_path / "db.sock")
    with pytest.raises(ovsdb.DaqctlError) as e:
        ovsdb.Ovsdb(remote, 5)
    msg = str(e.value)
    assert msg.startswith(remote + ": cannot connect: No such file")
    assert "--db" in msg and "OVS_RUNDIR" in msg and "make sandbox" in msg


def test_refused_says_what_to_do(tmp_path: Path) -> None:
    """A socket file nobody listens on (a daemon that died)."""
    path = tmp_path / "db.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()
    with pytest.raises(ovsdb.DaqctlError) as e:
        ovsdb.Ovsdb("unix:%s" % path, 5)
    assert "Connection refused" in str(e.value)
    assert "make sandbox" in str(e.value)
