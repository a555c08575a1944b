"""The pinned Debian packages outlive the day Debian moves.

Debian's archive keeps only the current version of a package: a point
release or a new upload removes the version a pin names.  The pin stays
preferred; when it is gone, build-aux/fetch-deb (the packages of bases 3.5
and 4.0, the RPM's) takes the newest version of the same upstream series
from the suite's signed index, and build-aux/deb-pin-check (base 3.1's
installed openvswitch-source) accepts the installed version of the
series.  Both say which version they used.  These tests give them pins
that do not exist.  fetch-deb needs the Debian package registry, as the
build does."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
FETCH_DEB = ROOT / "build-aux" / "fetch-deb"
PIN_CHECK = ROOT / "build-aux" / "deb-pin-check"
ZERO_SHA = "0" * 64

needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="apt runs as root here")


def run(cmd, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, timeout=600,
                          env=dict(os.environ, **env))


def deb_version(path: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", path, "Version"],
                          capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A cache of this module's own: nothing from an earlier run."""
    return str(tmp_path_factory.mktemp("daq-cache"))


@needs_root
def test_fetch_deb_takes_the_series_when_the_pin_is_gone(
        cache: str) -> None:
    p = run([FETCH_DEB, "openvswitch-source", "3.5.0-0missing", ZERO_SHA,
             "trixie"], DAQ_CACHE=cache)
    assert p.returncode == 0, p.stderr
    path = p.stdout.strip()
    assert os.path.isfile(path) and path.startswith(cache), path
    used = deb_version(path)
    assert used.startswith("3.5."), used
    assert ("using openvswitch-source %s instead of the pinned "
            "3.5.0-0missing" % used) in p.stderr, p.stderr
    # The .deb is the one the signed index names.
    assert "from the suite's signed index" in p.stderr
    # Again: from the cache, the same file.
    again = run([FETCH_DEB, "openvswitch-source", "3.5.0-0missing",
                 ZERO_SHA, "trixie"], DAQ_CACHE=cache)
    assert again.returncode == 0 and again.stdout.strip() == path


@needs_root
def test_fetch_deb_refuses_another_series(cache: str) -> None:
    p = run([FETCH_DEB, "openvswitch-source", "9.9.0-1", ZERO_SHA,
             "trixie"], DAQ_CACHE=cache)
    assert p.returncode == 1
    assert p.stdout == ""
    assert ("Debian trixie has no openvswitch-source of the pinned series "
            "9.9") in p.stderr, p.stderr


@needs_root
def test_fetch_deb_strict_refuses_the_fallback(cache: str) -> None:
    p = run([FETCH_DEB, "openvswitch-source", "3.5.0-0missing", ZERO_SHA,
             "trixie"], DAQ_CACHE=cache, DAQ_PIN_STRICT="yes")
    assert p.returncode == 1 and p.stdout == ""
    assert "DAQ_PIN_STRICT=yes" in p.stderr


@needs_root
def test_fetch_deb_checks_the_pinned_sha256(cache: str) -> None:
    """The pinned version, served, with another sha256 than the pin's."""
    ok = run([FETCH_DEB, "openvswitch-source", "3.5.0-0missing", ZERO_SHA,
              "trixie"], DAQ_CACHE=cache)
    assert ok.returncode == 0, ok.stderr
    served = deb_version(ok.stdout.strip())
    p = run([FETCH_DEB, "openvswitch-source", served, ZERO_SHA, "trixie"],
            DAQ_CACHE=cache)
    assert p.returncode == 1 and p.stdout == ""
    assert "expected %s" % ZERO_SHA in p.stderr, p.stderr


@needs_root
def test_fetch_deb_from_unstable(cache: str) -> None:
    """Base 4.0's suite, sid: no keyring of its own, no security archive.
    Its signed index is checked with debian-archive-keyring.gpg, and the
    series fallback works there as in trixie."""
    p = run([FETCH_DEB, "openvswitch-source", "4.0.0-0missing", ZERO_SHA,
             "sid"], DAQ_CACHE=cache)
    assert p.returncode == 0, p.stderr
    used = deb_version(p.stdout.strip())
    assert used.startswith("4.0."), used
    assert "Debian sid" in p.stderr and "signed index" in p.stderr
    sources = (Path(cache) / "apt-sid" / "sources.list").read_text()
    assert sources.split("\n")[0].startswith(
        "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ")
    assert " sid main" in sources and "security" not in sources, sources


def installed(pkg: str) -> str:
    return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg],
                          capture_output=True, text=True).stdout


@pytest.mark.skipif(not installed("openvswitch-source"),
                    reason="base 3.1's openvswitch-source is installed by "
                    "make deps")
def test_pin_check_accepts_the_installed_version_of_the_series() -> None:
    have = installed("openvswitch-source")
    series = ".".join(have.split(".")[:2])
    p = run([PIN_CHECK, "openvswitch-source", series + ".0-0missing"])
    assert p.returncode == 0, p.stdout
    assert p.stdout.startswith("using Debian package openvswitch-source "
                               "%s instead of the pinned" % have), p.stdout
    same = run([PIN_CHECK, "openvswitch-source", have])
    assert same.returncode == 0
    assert "the pinned version" in same.stdout
    strict = run([PIN_CHECK, "openvswitch-source", series + ".0-0missing"],
                 DAQ_PIN_STRICT="yes")
    assert strict.returncode == 1 and "DAQ_PIN_STRICT" in strict.stdout


@pytest.mark.skipif(not installed("openvswitch-source"),
                    reason="base 3.1's openvswitch-source is installed by "
                    "make deps")
def test_pin_check_refuses_another_series() -> None:
    p = run([PIN_CHECK, "openvswitch-source", "9.9.0-1"])
    assert p.returncode == 1
    assert "not of the pinned series 9.9" in p.stdout, p.stdout
    missing = run([PIN_CHECK, "no-such-package-daq", "1.0-1"])
    assert missing.returncode == 1 and "not installed" in missing.stdout
