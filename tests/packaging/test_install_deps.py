# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""build-aux/install-deps ("make deps") keeps Debian's stock Open vSwitch
service disabled: the baseline package (openvswitch-switch-dpdk) brings
openvswitch-switch, whose service would own /var/run/openvswitch/db.sock
after a reboot.  Run against stub dpkg-query, id, systemctl and
update-rc.d and a scratch root: nothing of the machine is read or
changed."""

import subprocess
from pathlib import Path
from typing import List, Tuple

import pytest

TOP = Path(__file__).resolve().parent.parent.parent
SCRIPT = TOP / "build-aux" / "install-deps"
UNITS = ["openvswitch-switch.service", "ovs-record-hostname.service"]

STUBS = {
    # Every package installed; the caller is root.
    "dpkg-query": "echo installed\n",
    "id": "echo 0\n",
    "systemctl": """\
echo "systemctl $*" >> "$STUB_LOG"
case $1 in
is-enabled) cat "$STUB_STATE/$2" 2>/dev/null || echo enabled ;;
disable) shift; [ "$1" != --now ] || shift
         for u; do echo disabled > "$STUB_STATE/$u"; done ;;
esac
""",
    "update-rc.d": """\
echo "update-rc.d $*" >> "$STUB_LOG"
[ "$2" = disable ] || exit 0
for l in "$INSTALL_DEPS_ROOT"/etc/rc[2345].d/S01openvswitch-switch; do
    [ ! -e "$l" ] || mv "$l" "${l%/*}/K01openvswitch-switch"
done
""",
}


def make_stubs(tmp_path: Path, enabled: List[str], systemd: bool,
               sysv_links: bool = False) -> Tuple[Path, dict]:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, body in STUBS.items():
        (bin_ / name).write_text("#!/bin/sh\n" + body)
        (bin_ / name).chmod(0o755)
    state = tmp_path / "state"
    state.mkdir()
    for u in UNITS:
        (state / u).write_text("enabled\n" if u in enabled
                               else "disabled\n")
    root = tmp_path / "root"
    (root / "etc" / "init.d").mkdir(parents=True)
    init = root / "etc" / "init.d" / "openvswitch-switch"
    init.write_text("#!/bin/sh\n")
    init.chmod(0o755)
    for n in (2, 3, 4, 5):
        d = root / "etc" / ("rc%d.d" % n)
        d.mkdir()
        if sysv_links:
            (d / "S01openvswitch-switch").symlink_to(init)
    if systemd:
        (root / "run" / "systemd" / "system").mkdir(parents=True)
    log = tmp_path / "log"
    log.write_text("")
    env = {"PATH": "%s:/usr/bin:/bin" % bin_, "STUB_LOG": str(log),
           "STUB_STATE": str(state), "INSTALL_DEPS_ROOT": str(root)}
    return log, env


def install_deps(env: dict, *args: str
                 ) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([str(SCRIPT)] + list(args), env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("systemd,disable", [
    (True, "systemctl disable --now " + " ".join(UNITS)),
    (False, "systemctl disable " + " ".join(UNITS)),
])
def test_enabled_service_is_disabled(tmp_path: Path, systemd: bool,
                                     disable: str) -> None:
    """Stopped too where systemd runs; only the links in a container."""
    log, env = make_stubs(tmp_path, ["openvswitch-switch.service"], systemd)
    p = install_deps(env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "disabling Debian's stock Open vSwitch service" in p.stdout
    assert disable in log.read_text().splitlines()
    # Again: nothing more to do.
    log.write_text("")
    p = install_deps(env)
    assert p.returncode == 0
    assert "disabling" not in p.stdout
    assert "disable" not in log.read_text()


def test_sysv_links_are_disabled(tmp_path: Path) -> None:
    """A machine whose rc links start the SysV script."""
    log, env = make_stubs(tmp_path, [], systemd=False, sysv_links=True)
    p = install_deps(env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "update-rc.d openvswitch-switch disable" in log.read_text()
    assert not list((tmp_path / "root" / "etc").glob(
        "rc*.d/S*openvswitch-switch"))


def test_disabled_service_is_left_alone(tmp_path: Path) -> None:
    log, env = make_stubs(tmp_path, [], systemd=True)
    p = install_deps(env)
    assert p.returncode == 0
    assert "all build and test dependencies are installed" in p.stdout
    assert "disable" not in log.read_text()


def test_check_reports_an_enabled_service(tmp_path: Path) -> None:
    log, env = make_stubs(tmp_path, UNITS, systemd=True)
    p = install_deps(env, "--check")
    assert p.returncode == 1
    assert "stock openvswitch-switch service is enabled" in p.stdout
    assert "disable" not in log.read_text()
