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


def test_unit_stops_through_its_socket() -> None:
    """The RPM's unit: ExecStop's "ovs-appctl -t SOCKET exit" reaches the
    control socket ExecStart gives, after the options of /etc/sysconfig
    (the last --unixctl counts); "exit" is a command of the exporter."""
    unit = TOP / "rhel" / "usr_lib_systemd_system_ovs-daqring-exporter" \
        ".service"
    text = re.sub(r"\\\n", " ", unit.read_text())
    start = re.search(r"^ExecStart=(.*)$", text, re.M).group(1).split()
    stop = re.search(r"^ExecStop=(.*)$", text, re.M).group(1).split()
    assert start[0] == "/usr/sbin/ovs-daqring-exporter"
    sockets = [(i, w.partition("=")[2]) for i, w in enumerate(start)
               if w.startswith("--unixctl=")]
    expansions = [i for i, w in enumerate(start) if w.startswith("$")]
    assert sockets and expansions and sockets[-1][0] > max(expansions)
    assert stop == ["/usr/bin/ovs-appctl", "-t", sockets[-1][1], "exit"]
    code = (TOP / "python" / "ovs_daqring" / "cmd" /
            "ovs_daqring_exporter.py").read_text()
    assert re.search(r'command_register\(\s*"exit"', code)
    settings = (TOP / "rhel" / "etc_sysconfig_ovs-daqring-exporter") \
        .read_text()
    assert "DAQRING_EXPORTER_OPTIONS=" in settings


def test_without_the_client_library(tmp_path: Path) -> None:
    """The RPM only Recommends the Prometheus client library: without it
    --help works (the RPM's checks start every tool so) and a start
    fails saying which package is missing, with no traceback."""
    needs_libraries()
    hide = ("import sys; sys.modules['prometheus_client'] = None; "
            "sys.argv = [%r] + sys.argv[1:]; "
            "exec(compile(open(%r).read(), %r, 'exec'), "
            "{'__file__': %r, '__name__': '__main__'})"
            % ((str(EXPORTER),) * 4))

    def run_hidden(*args: str) -> "subprocess.CompletedProcess[str]":
        return subprocess.run([PYTHON, "-c", hide] + list(args),
                              capture_output=True, text=True, timeout=60)
    p = run_hidden("--help")
    assert p.returncode == 0 and "--metrics-address" in p.stdout, p.stderr
    p = run_hidden("--db", "unix:" + str(tmp_path / "db.sock"),
                   "--unixctl=" + str(tmp_path / "e.ctl"))
    assert p.returncode == 1, p.stdout + p.stderr
    assert "python3-prometheus-client" in p.stderr
    assert "Traceback" not in p.stderr
