# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""ovs-daqring-exporter as a command: its arguments checked before
anything starts, an address it cannot bind refused with a clear error,
and every option of its --help in its manual page."""

import re
import shutil
import socket
import subprocess
from pathlib import Path
from typing import List

import pytest

TOP = Path(__file__).resolve().parent.parent.parent
EXPORTER = TOP / "utilities" / "ovs-daqring-exporter"
PAGE = TOP / "Documentation" / "ref" / "ovs-daqring-exporter.8.rst"
PYTHON = "/usr/bin/python3"


def run(args: List[str]) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([PYTHON, str(EXPORTER)] + args,
                          capture_output=True, text=True, timeout=60)


def needs_libraries() -> None:
    p = run(["--version"])
    if p.returncode != 0:
        pytest.skip(p.stderr.strip())


@pytest.mark.parametrize("args,error", [
    (["--metrics-address", "70000"], "from 1 to 65535"),
    (["--metrics-address", "::1:9478"], "IPv6 address in brackets"),
    (["--metrics-address", ":9478"], "empty host"),
    (["--db", "nowhere"], "is not an OVSDB remote"),
    (["--db", "ssl:127.0.0.1:6640"], "--private-key"),
    (["--timeout", "0"], "must be positive"),
])
def test_bad_arguments(args: List[str], error: str) -> None:
    needs_libraries()
    p = run(args)
    assert p.returncode == 2, p.stdout + p.stderr
    assert error in p.stderr


def test_address_in_use(tmp_path: Path) -> None:
    """Fatal, saying why; nothing is left behind."""
    needs_libraries()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = run(["--metrics-address", "127.0.0.1:%d" % port,
                 "--db", "unix:" + str(tmp_path / "db.sock"),
                 "--unixctl=" + str(tmp_path / "e.ctl"),
                 "-vconsole:err"])
    assert p.returncode == 1, p.stdout + p.stderr
    assert "cannot serve metrics on 127.0.0.1:%d" % port in p.stderr


def test_page_has_every_option(tmp_path: Path) -> None:
    needs_libraries()
    rst2man = shutil.which("rst2man")
    if rst2man is None:
        pytest.skip("rst2man not installed (python3-docutils)")
    out = tmp_path / "ovs-daqring-exporter.8"
    subprocess.run([rst2man, "--strict", str(PAGE), str(out)], check=True,
                   capture_output=True, timeout=60)
    man = out.read_text().replace("\\-", "-").replace("\\fB", "") \
        .replace("\\fP", "").replace("\\fI", "")
    helptext = run(["--help"]).stdout
    want = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", helptext))
    assert len(want) > 10
    have = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", man))
    assert not want - have - {"--help"}, sorted(want - have)
