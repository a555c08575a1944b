"""The thin executables in utilities/: run from the source tree they use
the tree's python/ovs_daqring even when another ovs_daqring is on the
path; installed (no python/ next to their directory) they use the one
Python finds (Documentation/internals/python.rst)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ovs_daqring import VERSION

TOP = Path(__file__).resolve().parent.parent.parent
TOOLS = ["ovs-daqctl", "daq-incast", "daq-bench", "ovs-daqfabric-agent",
         "ovs-daqring-sandbox", "ovs-daqring-exporter"]


def fake_package(tmp_path: Path) -> Path:
    """An ovs_daqring whose tools only print that they are the fake."""
    pkg = tmp_path / "site" / "ovs_daqring"
    for sub, mod in (("cmd", "ovs_daqctl"), ("cmd", "daq_incast"),
                     ("cmd", "daq_bench"), ("cmd", "ovs_daqfabric_agent"),
                     ("cmd", "ovs_daqring_sandbox"),
                     ("cmd", "ovs_daqring_exporter")):
        (pkg / sub).mkdir(parents=True, exist_ok=True)
        (pkg / sub / "__init__.py").write_text("")
        (pkg / sub / (mod + ".py")).write_text(
            "def main():\n    print('fake ovs_daqring')\n    return 0\n"
            "\n\nrun = main\n")
    (pkg / "__init__.py").write_text('VERSION = "fake"\n')
    return pkg.parent


def run(cmd: list, site: Path, cwd: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(site))
    p = subprocess.run([sys.executable] + cmd, capture_output=True,
                       text=True, env=env, cwd=str(cwd), timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


@pytest.mark.parametrize("tool", TOOLS)
def test_tree_executable_uses_the_tree(tool: str, tmp_path: Path) -> None:
    out = run([str(TOP / "utilities" / tool), "--version"],
              fake_package(tmp_path), tmp_path)
    assert VERSION in out and "fake" not in out


@pytest.mark.parametrize("tool", TOOLS)
def test_tree_executable_through_a_link(tool: str, tmp_path: Path) -> None:
    """A symbolic link elsewhere (e.g. in a bin directory) to the tree's
    executable still finds the tree."""
    (tmp_path / "bin").mkdir()
    link = tmp_path / "bin" / tool
    link.symlink_to(TOP / "utilities" / tool)
    out = run([str(link), "--version"], fake_package(tmp_path), tmp_path)
    assert VERSION in out and "fake" not in out


@pytest.mark.parametrize("tool", TOOLS)
def test_installed_executable_uses_the_path(tool: str,
                                            tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    copy = tmp_path / "bin" / tool
    shutil.copy(TOP / "utilities" / tool, copy)
    out = run([str(copy), "--version"], fake_package(tmp_path), tmp_path)
    assert out.strip() == "fake ovs_daqring"
