"""The manual pages (Documentation/ref/*.rst): each renders with docutils'
rst2man, strictly, as "make man" does, and documents every option of its
tool's --help."""

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Set

import pytest

from ovs_daqring.cmd import daq_bench as bench_cli
from ovs_daqring.incast import options as incast_options

TOP = Path(__file__).resolve().parent.parent.parent
REF = TOP / "Documentation" / "ref"
PAGES = {"ovs-daqctl": 8, "daq-incast": 1, "daq-bench": 1,
         "ovs-daqring-setup": 8, "ovs-daqring": 7,
         "ovs-daqfabric-agent": 8, "ovs-daqring-exporter": 8}
RST2MAN = shutil.which("rst2man")


def options(text: str) -> Set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", text))


def render(name: str, section: int, tmp_path: Path) -> str:
    if RST2MAN is None:
        pytest.skip("rst2man not installed (python3-docutils)")
    out = tmp_path / ("%s.%d" % (name, section))
    subprocess.run([RST2MAN, "--strict",
                    str(REF / ("%s.%d.rst" % (name, section))), str(out)],
                   check=True, capture_output=True, timeout=60)
    return out.read_text().replace("\\-", "-").replace("\\fB", "") \
        .replace("\\fP", "").replace("\\fI", "")


def test_no_generated_page_is_tracked() -> None:
    """Manual pages are built from their .rst by "make man"
    (Documentation/local.mk) and ignored by git: a rendered page in git
    only goes stale (utilities/ovs-daqctl.8 did)."""
    if not (TOP / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    files = subprocess.run(["git", "ls-files"], cwd=str(TOP), check=True,
                           capture_output=True, text=True).stdout.split()
    pages = [f for f in files if re.search(r"\.[1-8]$", f)]
    assert pages == []


def test_every_page_has_a_source() -> None:
    sources = {p.name for p in REF.glob("*.rst")}
    assert sources == {"%s.%d.rst" % kv for kv in PAGES.items()}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_renders(name: str, tmp_path: Path) -> None:
    man = render(name, PAGES[name], tmp_path)
    th = r'^\.TH "?%s"? "?%d"?' % (re.escape(name.upper()), PAGES[name])
    assert re.search(th, man, re.M | re.I), man[:500]
    assert ".SH NAME" in man and ".SH DESCRIPTION" in man


def test_daqring_page_is_the_topic(tmp_path: Path) -> None:
    """ovs-daqring(7) carries all of Documentation/topics/daqring.rst."""
    man = render("ovs-daqring", 7, tmp_path)
    topic = (TOP / "Documentation" / "topics" / "daqring.rst").read_text()
    for heading in re.findall(r"^(\w[\w ,'()-]*)\n-{3,}$", topic, re.M):
        assert '.SH "%s"' % heading.upper() in man or \
            ".SH %s" % heading.upper() in man, heading


def daqctl_parser() -> Any:
    try:
        from ovs_daqring.cmd import ovs_daqctl as cli
    except SystemExit:
        pytest.skip("ovs-daqctl needs python3-openvswitch and python3-yaml")
    return cli.build_parser()


def agent_parser() -> Any:
    try:
        from ovs_daqring.cmd import ovs_daqfabric_agent as agent
    except SystemExit:
        pytest.skip("ovs-daqfabric-agent needs python3-openvswitch and "
                    "python3-yaml")
    return agent.build_parser()


PARSERS = {"ovs-daqctl": daqctl_parser,
           "ovs-daqfabric-agent": agent_parser,
           "daq-incast": incast_options.build_parser,
           "daq-bench": bench_cli.build_parser}


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_page_has_every_option(tool: str, tmp_path: Path) -> None:
    parser = PARSERS[tool]()
    want = set()
    for action in parser._actions:
        want |= {o for o in action.option_strings if o.startswith("--")}
    for sub in parser._actions:
        for p in getattr(sub, "choices", None) or {}:
            if isinstance(sub.choices, dict):
                for action in sub.choices[p]._actions:
                    want |= {o for o in action.option_strings
                             if o.startswith("--")}
    assert len(want) > 5
    missing = want - options(render(tool, PAGES[tool], tmp_path)) \
        - {"--help"}
    assert not missing, sorted(missing)


def test_setup_page_has_every_command_and_setting(tmp_path: Path) -> None:
    script = (TOP / "rhel" / "usr_sbin_ovs-daqring-setup").read_text()
    man = render("ovs-daqring-setup", 8, tmp_path)
    settings = set(re.findall(r"\bDAQ_[A-Z_]+\b", (
        TOP / "rhel" / "etc_sysconfig_ovs-daqring").read_text()))
    assert settings and not {s for s in settings if s not in man}
    for cmd in re.search(r"usage: \$\{0##\*/\} \[([a-z|]+)\]",
                         script).group(1).split("|"):
        assert cmd in man, cmd
