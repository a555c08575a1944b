"""pytest for the RPM packaging (rhel/, "make rpm").

Checks the EL9 RPMs that "make rpm" built (base 3.5, static DPDK): names
and versions, the file lists (rpm -qpl) and dependencies (rpm -qpR,
provides, conflicts); that every NEEDED soname and symbol version of every
ELF file, every Requires of every binary RPM and every BuildRequires of the
SRPM is in the EL9 lists rhel/el9-sonames.txt and rhel/el9-provides.txt (or
provided by our own RPMs), with no GLIBC_x.y above 2.34; that the Python
code compiles and imports with a Python 3.9 like EL9's; the systemd units
(systemd-analyze verify); then installs the RPMs into a scratch root where
a stand-in package provides exactly the EL9 lists (rpm --root DIR
--noscripts -i, without --nodeps), runs the installed ovs-vswitchd from
there (LD_LIBRARY_PATH to the root's libraries), and, as root, starts it in
a network namespace of its own with DPDK (--no-pci --no-huge), configured
by the installed ovs-daqring-setup, and adds a daqring port.

Skipped, with the reason, unless the RPMs exist: in $DAQ_RPM_DIR (an
rpmbuild top directory; "make check-rpm" sets it) or else in rpmbuild/ at
the top of the tree, where "make rpm" puts them by default.  So "make
check" stays fast: it builds no RPM.
"""

import glob
import gzip
import os
import re
import shutil
import signal
import subprocess
import tarfile
import time
from typing import Dict, List

import pytest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = os.path.dirname(HERE)
RPM_DIR = os.environ.get("DAQ_RPM_DIR") or os.path.join(TOP, "rpmbuild")
NAME = "ovs-daqring"
SUBPACKAGES = ("", "-devel", "-test", "-tools")
ENV = dict(os.environ, LC_ALL="C")
EL9_SONAMES = os.path.join(TOP, "rhel", "el9-sonames.txt")
EL9_PROVIDES = os.path.join(TOP, "rhel", "el9-provides.txt")
GLIBC_MAX = (2, 34)
# A Python 3.9 like EL9's /usr/bin/python3 (rhel/local.mk passes it).
PYTHON39 = os.environ.get("DAQ_PYTHON39",
                          "/root/.pyenv/versions/3.9.18/bin/python3.9")


def fork_version() -> str:
    """VERSION-RELEASE of the RPMs: DAQ_RPM_BASE_VERSION-DAQ_RELEASE from
    config.mk ("make rpm" always builds base 3.5, whatever base the tree
    is configured with)."""
    values = {}
    try:
        with open(os.path.join(TOP, "config.mk"), encoding="utf-8") as f:
            for line in f:
                key, sep, value = line.partition("=")
                if sep:
                    values[key.strip()] = value.strip()
    except OSError:
        pass
    base = values.get("DAQ_RPM_BASE_VERSION")
    rel = values.get("DAQ_RELEASE")
    if not base or not rel:
        return "unconfigured"
    return "%s-%s" % (base, rel)


VERSION = fork_version()


def find_rpms() -> Dict[str, str]:
    """Package name -> path, for the RPMs of this version in RPM_DIR."""
    found = {}
    pats = [os.path.join(RPM_DIR, "RPMS", "*", "*-%s*.rpm" % VERSION),
            os.path.join(RPM_DIR, "SRPMS", "%s-%s*.src.rpm" % (NAME, VERSION))]
    for pat in pats:
        for path in sorted(glob.glob(pat)):
            base = os.path.basename(path)
            if base.endswith(".src.rpm"):
                found["src"] = path
            else:
                found[base.split("-" + VERSION)[0]] = path
    return found


RPMS = find_rpms()

pytestmark = [
    pytest.mark.machine,
    pytest.mark.skipif(shutil.which("rpm") is None,
                       reason="rpm is not installed (Debian package rpm)"),
    pytest.mark.skipif(
        NAME not in RPMS,
        reason="no %s %s RPMs in %s: run 'make rpm' (or 'make check-rpm'), "
        "or point DAQ_RPM_DIR at an rpmbuild top directory"
        % (NAME, VERSION, RPM_DIR)),
]


def run(cmd: List[str], check: bool = True, **kw) -> str:
    kw.setdefault("env", ENV)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, **kw)
    if check and p.returncode != 0:
        raise AssertionError("%s: exit %d\n%s%s" % (" ".join(cmd),
                             p.returncode, p.stdout, p.stderr))
    return p.stdout


def qp(pkg: str, *args: str) -> List[str]:
    """rpm -qp ARGS of package PKG, as lines."""
    return run(["rpm", "-qp"] + list(args) + [RPMS[pkg]]).splitlines()


def deps(pkg: str, what: str) -> List[str]:
    """Requires / provides / conflicts of PKG, blanks squeezed."""
    return [re.sub(r"\s+", " ", line.strip()) for line in qp(pkg, what)]


# ---------------------------------------------------------------- metadata

def test_packages_and_versions():
    names = [NAME + s for s in SUBPACKAGES] + ["python3-" + NAME, "src"]
    missing = [n for n in names if n not in RPMS]
    assert not missing, "missing RPMs in %s: %s" % (RPM_DIR, missing)
    base, release = VERSION.split("-", 1)
    for pkg in names:
        v = qp(pkg, "--qf", "%{VERSION} %{RELEASE}\n")[0].split()
        assert v[0] == base, (pkg, v)
        assert v[1] == release or v[1].startswith(release + "."), (pkg, v)
    assert qp(NAME, "--qf", "%{ARCH}\n") == ["x86_64"]
    for pkg in ("python3-" + NAME, NAME + "-test", NAME + "-tools"):
        assert qp(pkg, "--qf", "%{ARCH}\n") == ["noarch"], pkg


def test_source_rpm_has_both_sources_and_spec():
    files = qp("src", "-l")
    assert "%s.spec" % NAME in files
    assert "%s-%s.tar.gz" % (NAME, VERSION) in files
    # Base 3.5's pinned Debian 13 packages: OVS and DPDK's archives.
    assert [f for f in files if f.startswith("openvswitch-source_3.5")
            and f.endswith("_all.deb")], files
    assert [f for f in files if f.startswith("libdpdk-dev_24.11")
            and f.endswith("_amd64.deb")], files
    text = extract_from_srpm("%s.spec" % NAME).decode()
    # The pins are checked by sha256, and the series applied by prepare-ovs.
    assert re.search(r"^%global ovs_base_sha256 [0-9a-f]{64}$", text, re.M)
    assert re.search(r"^%global dpdk_sha256 [0-9a-f]{64}$", text, re.M)
    assert '"%{SOURCE1} %{ovs_base_sha256}"' in text
    assert '"%{SOURCE2} %{dpdk_sha256}"' in text
    assert "build-aux/prepare-ovs all" in text
    assert "--with-dpdk=static" in text
    assert "build-aux/dpdk-prefix %{SOURCE2}" in text
    assert re.search(r"^%changelog\n\* \w{3} \w{3} \d\d \d{4} .+ - "
                     + re.escape(VERSION) + "$", text, re.M), \
        "no %changelog entry for " + VERSION


def man_suffixless(files) -> set:
    """FILES, with manual pages also under their name without the
    compression suffix that the build host's rpm chose."""
    return set(files) | {re.sub(r"\.(gz|xz|bz2)$", "", f) for f in files
                         if "/man/man" in f}


def test_main_package_files():
    files = man_suffixless(qp(NAME, "-l"))
    want = [
        "/usr/sbin/ovs-vswitchd", "/usr/sbin/ovsdb-server",
        "/usr/bin/ovs-vsctl", "/usr/bin/ovs-ofctl", "/usr/bin/ovs-appctl",
        "/usr/bin/ovsdb-tool", "/usr/bin/ovsdb-client",
        "/usr/share/openvswitch/scripts/ovs-ctl",
        "/usr/share/openvswitch/vswitch.ovsschema",
        "/usr/lib/systemd/system/openvswitch.service",
        "/usr/lib/systemd/system/ovsdb-server.service",
        "/usr/lib/systemd/system/ovs-vswitchd.service",
        "/usr/lib/systemd/system/ovs-daqring-setup.service",
        "/usr/lib/systemd/system/ovs-vswitchd.service.d/50-ovs-daqring.conf",
        "/usr/sbin/ovs-daqring-setup",
        "/etc/sysconfig/ovs-daqring", "/etc/sysconfig/openvswitch",
        "/etc/openvswitch/default.conf",
        "/usr/share/man/man5/ovs-vswitchd.conf.db.5",
        "/usr/share/man/man7/ovs-daqring.7",
        "/usr/share/man/man8/ovs-daqring-setup.8",
        "/usr/share/man/man8/ovs-vswitchd.8",
        "/usr/share/man/man8/ovs-vsctl.8",
        "/usr/share/man/man8/ovs-ctl.8",
        "/usr/share/man/man8/ovs-appctl.8",
        "/usr/lib/udev/rules.d/91-vfio.rules",
        "/var/lib/openvswitch", "/var/log/openvswitch",
    ]
    missing = [f for f in want if f not in files]
    assert not missing, missing
    assert any(re.match(r"/usr/lib64/libopenvswitch-.*\.so\.\d+$", f)
               for f in files)
    assert any(f.endswith("/daqring.rst") for f in files)
    # The split: development files, Python and the test tools elsewhere.
    assert not [f for f in files if f.endswith(".so") or "/include/" in f
                or "site-packages" in f or f.endswith("/ovs-tcpdump")]


def test_subpackage_files():
    devel = qp(NAME + "-devel", "-l")
    assert "/usr/include/openvswitch/version.h" in devel
    assert any(f.endswith("/libopenvswitch.so") for f in devel)
    assert any(f.endswith("/libopenvswitch.pc") for f in devel)
    py = qp("python3-" + NAME, "-l")
    assert any(re.search(r"/site-packages/ovs/db/idl\.py$", f) for f in py)
    test = qp(NAME + "-test", "-l")
    assert "/usr/bin/ovs-tcpdump" in test


# Programs of upstream Open vSwitch that upstream ships without a manual
# page (its own spec packages them the same way).
NO_MAN_PAGE = {
    "ovs-docker": "upstream has no page for it",
}


def test_every_program_has_a_manual_page():
    """Every program in /usr/bin and /usr/sbin of every binary RPM has a
    manual page in one of them (ours: ovs-daqctl(8), daq-incast(1),
    daq-bench(1), ovs-daqring-setup(8))."""
    programs, pages = {}, set()
    for pkg in [n for n in RPMS if n != "src" and "debug" not in n]:
        for f in man_suffixless(qp(pkg, "-l")):
            if re.match(r"/usr/s?bin/[^/]+$", f):
                programs[os.path.basename(f)] = pkg
            m = re.match(r"/usr/share/man/man[1-8]/(.+)\.[1-8]$", f)
            if m:
                pages.add(m.group(1))
    for ours in ("ovs-daqctl", "daq-incast", "daq-bench",
                 "ovs-daqring-setup"):
        assert ours in programs, "%s is not packaged" % ours
    missing = sorted("%s (%s)" % (prog, pkg)
                     for prog, pkg in programs.items()
                     if prog not in pages and prog not in NO_MAN_PAGE)
    assert not missing, "programs without a manual page: %s" % missing


def extract_from_srpm(member: str) -> bytes:
    """The contents of one file of the source RPM (rpm2cpio, then the
    "newc" cpio format read here: cpio itself may not be installed)."""
    data = subprocess.run(["rpm2cpio", RPMS["src"]], env=ENV, check=True,
                          stdout=subprocess.PIPE).stdout
    pos = 0
    while data[pos:pos + 6] == b"070701":
        fields = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16)
                  for i in range(13)]
        size, namesize = fields[6], fields[11]
        name = data[pos + 110:pos + 110 + namesize - 1].decode()
        start = (pos + 110 + namesize + 3) & ~3
        if name.lstrip("./") == member:
            return data[start:start + size]
        if name == "TRAILER!!!":
            break
        pos = (start + size + 3) & ~3
    raise AssertionError("no %s in %s" % (member, RPMS["src"]))


def source0_names(tmp_path) -> List[str]:
    path = tmp_path / "source0.tar.gz"
    path.write_bytes(extract_from_srpm("%s-%s.tar.gz" % (NAME, VERSION)))
    with tarfile.open(path) as t:
        return [n.split("/", 1)[1] for n in t.getnames() if "/" in n]


def test_tools_package_matches_its_source(tmp_path):
    files = set(qp(NAME + "-tools", "-l"))
    source = source0_names(tmp_path)
    tools = ("ovs-daqctl", "daq-incast", "daq-bench")
    for tool in tools:
        assert "utilities/" + tool in source, tool
        assert "/usr/bin/" + tool in files, tool
    # The package, every module of it that Source0 has.
    sitelib = [f for f in files if re.search(
        r"/site-packages/ovs_daqring/__init__\.py$", f)]
    assert len(sitelib) == 1, sitelib
    top = sitelib[0][:-len("ovs_daqring/__init__.py")]
    for name in source:
        if name.startswith("python/ovs_daqring/") and name.endswith(".py"):
            assert top + name[len("python/"):] in files, name
    assert not [f for f in files if "__pycache__" in f]
    assert man_suffixless(files) >= {
        "/usr/share/man/man8/ovs-daqctl.8",
        "/usr/share/man/man1/daq-incast.1",
        "/usr/share/man/man1/daq-bench.1"}
    # The fabric: the agent's unit (a switch's, a host's) and a
    # database member's.
    assert files >= {
        "/usr/lib/systemd/system/ovs-daqfabric-agent.service",
        "/etc/sysconfig/ovs-daqfabric-agent",
        "/usr/lib/systemd/system/ovs-daqfabric-host-agent.service",
        "/etc/sysconfig/ovs-daqfabric-host-agent",
        "/usr/lib/systemd/system/ovs-daqfabric-db.service",
        "/etc/sysconfig/ovs-daqfabric-db",
        "/usr/share/openvswitch/scripts/ovs-daqfabric-db",
        "/usr/share/openvswitch/daqfabric.ovsschema"}, files
    treq = deps(NAME + "-tools", "-R")
    assert "python3-openvswitch" in treq and "python3-pyyaml" in treq


def test_requires_provides_conflicts():
    req = deps(NAME, "-R")
    # DPDK is linked in: no package, no librte_* soname; no libunbound.
    assert not [r for r in req if "dpdk" in r or r.startswith("librte_")
                or "unbound" in r], req
    assert any(r.startswith("libnuma.so") for r in req), req
    for r in ("openssl", "iproute", "kmod", "/bin/sed"):
        assert r in req, (r, req)
    prov = deps(NAME, "--provides")
    assert "openvswitch = %s" % VERSION in prov, prov
    assert "openvswitch-dpdk = %s" % VERSION in prov, prov
    assert "openvswitch" in deps(NAME, "--conflicts")
    assert "driverctl" in deps(NAME, "--recommends")

    assert "python3-openvswitch = %s" % VERSION in \
        deps("python3-" + NAME, "--provides")
    assert "python3-openvswitch" in deps("python3-" + NAME, "--conflicts")
    assert "openvswitch-devel" in deps(NAME + "-devel", "--conflicts")

    treq = deps(NAME + "-tools", "-R")
    assert "%s = %s" % (NAME, VERSION) in treq, treq
    assert "iproute-tc" in treq, treq
    assert "/usr/bin/python3" in treq or "python3" in treq, treq


# ------------------------------------------------------- EL9 requirements

def binary_rpms() -> Dict[str, str]:
    """The binary RPMs that nodes install (not the SRPM, not debug data)."""
    return {k: v for k, v in RPMS.items()
            if k != "src" and not k.endswith(("-debuginfo", "-debugsource"))}


def el9_sonames() -> Dict[str, set]:
    """rhel/el9-sonames.txt: soname -> the symbol versions listed."""
    sonames = {}
    with open(EL9_SONAMES, encoding="utf-8") as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if words:
                assert len(words) >= 3, line
                sonames[words[0]] = set(words[3:])
    return sonames


def el9_provides(build: bool) -> List[str]:
    """rhel/el9-provides.txt: the run-time capabilities, or with BUILD
    the build-time ones too, blanks squeezed."""
    caps = []
    with open(EL9_PROVIDES, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            head, sep, cap = line.partition(":")
            assert sep and cap.strip(), line
            words = head.split()
            if words[0] == "build":
                if not build:
                    continue
                words = words[1:]
            assert len(words) == 2 and words[0] in (
                "BaseOS", "AppStream", "CRB"), line
            caps.append(re.sub(r"\s+", " ", cap.strip()))
    return caps


SONAME_DEP = re.compile(r"^(\S+\.so(?:\.[^(]*)?)\(([^)]*)\)\(64bit\)$")


def glibc_version(node: str):
    m = re.match(r"^GLIBC_(\d+)\.(\d+)", node)
    return (int(m.group(1)), int(m.group(2))) if m else None


def unpack_rpm(path: str, dest: str):
    """Writes the regular files and symbolic links of RPM PATH under DEST
    (rpm2cpio, then the "newc" cpio format read here)."""
    data = subprocess.run(["rpm2cpio", path], env=ENV, check=True,
                          stdout=subprocess.PIPE).stdout
    pos = 0
    while data[pos:pos + 6] == b"070701":
        fields = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16)
                  for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name = data[pos + 110:pos + 110 + namesize - 1].decode()
        start = (pos + 110 + namesize + 3) & ~3
        if name == "TRAILER!!!":
            break
        body = data[start:start + size]
        target = os.path.join(dest, name.lstrip("./"))
        kind = mode & 0o170000
        if kind in (0o100000, 0o120000):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if kind == 0o120000:
                os.symlink(body.decode(), target)
            else:
                with open(target, "wb") as f:
                    f.write(body)
                os.chmod(target, mode & 0o7777)
        pos = (start + size + 3) & ~3


@pytest.fixture(scope="module")
def payload(tmp_path_factory):
    """The files of every binary RPM, unpacked (no scripts, no root)."""
    d = str(tmp_path_factory.mktemp("payload"))
    for path in binary_rpms().values():
        unpack_rpm(path, d)
    return d


def elf_files(top: str) -> List[str]:
    found = []
    for dirpath, _, names in os.walk(top):
        for n in names:
            path = os.path.join(dirpath, n)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    found.append(path)
    return sorted(found)


def elf_needs(path: str):
    """NEEDED sonames, SONAME, and {soname: symbol versions needed}."""
    dyn = run(["readelf", "-dW", path])
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", dyn)
    soname = re.findall(r"\(SONAME\)\s+Library soname: \[([^]]+)\]", dyn)
    versions = {}
    current = None
    for line in run(["readelf", "-VW", path]).splitlines():
        m = re.search(r"File: (\S+)\s+Cnt:", line)
        if m:
            current = m.group(1)
            versions.setdefault(current, set())
            continue
        m = re.search(r"Name: (\S+)\s+Flags:", line)
        if m and current:
            versions[current].add(m.group(1))
    return needed, soname, versions


def test_elf_needs_are_in_the_el9_list(payload):
    """Every NEEDED soname and symbol version of every ELF file in the
    binary RPMs is ours or in rhel/el9-sonames.txt; GLIBC <= 2.34."""
    elves = elf_files(payload)
    assert any(p.endswith("/usr/sbin/ovs-vswitchd") for p in elves), elves
    ours = set()
    infos = {}
    for path in elves:
        infos[path] = elf_needs(path)
        ours.update(infos[path][1])
    assert [s for s in ours if s.startswith("libopenvswitch-3.5.so")], ours
    listed = el9_sonames()
    problems = []
    highest = (0, 0)
    for path, (needed, _, versions) in infos.items():
        rel = os.path.relpath(path, payload)
        for so in needed:
            if so not in ours and so not in listed:
                problems.append("%s: NEEDED %s is not in %s"
                                % (rel, so, EL9_SONAMES))
        for so, nodes in versions.items():
            for node in nodes:
                g = glibc_version(node)
                if g:
                    highest = max(highest, g)
                    if g > GLIBC_MAX:
                        problems.append("%s: %s needs %s > GLIBC_2.34"
                                        % (rel, so, node))
                if so in listed and node not in listed[so]:
                    problems.append("%s: %s(%s) is not in %s"
                                    % (rel, so, node, EL9_SONAMES))
    assert not problems, "\n".join(problems)
    # The static DPDK and OVS do need 2.34 (not a vacuous check).
    assert highest == GLIBC_MAX, highest


def own_provides() -> List[str]:
    provides = []
    for pkg in binary_rpms():
        provides += deps(pkg, "--provides")
    return provides


def requires_problems(reqs: List[str], caps: List[str],
                      ours: List[str]) -> List[str]:
    """The requirements REQS that neither the EL9 lists (CAPS and the
    sonames) nor our own provides OURS satisfy."""
    listed = el9_sonames()
    names = {re.split(r"\s", p)[0] for p in ours}
    problems = []
    for r in reqs:
        if r.startswith("rpmlib("):
            continue  # rpm's own features
        m = SONAME_DEP.match(r)
        if m:
            so, node = m.group(1), m.group(2)
            if r in ours:
                continue
            g = glibc_version(node)
            if g and g > GLIBC_MAX:
                problems.append(r + " (above GLIBC_2.34)")
            elif so not in listed or (node and node not in listed[so]):
                problems.append(r)
            continue
        if r in caps or r in ours:
            continue
        name = r.partition(" ")[0]
        if name in names:
            continue  # "ovs-daqring = V-R" and the like: our own
        problems.append(r)
    return problems


def test_requires_are_met_on_el9():
    """Every Requires of every binary RPM is in an EL9 list or provided by
    our own RPMs."""
    caps = el9_provides(build=False)
    ours = own_provides()
    problems = []
    for pkg in binary_rpms():
        for r in requires_problems(deps(pkg, "-R"), caps, ours):
            problems.append("%s: %s" % (pkg, r))
    assert not problems, "not in %s or %s:\n%s" % (
        EL9_SONAMES, EL9_PROVIDES, "\n".join(problems))


def test_requires_check_can_fail():
    """The check above rejects what EL9 lacks (Debian 12's libpcap
    soname, a glibc 2.35 symbol, DPDK packages), not only accepts."""
    caps = el9_provides(build=False)
    bad = ["libpcap.so.0.8()(64bit)", "libc.so.6(GLIBC_2.35)(64bit)",
           "dpdk >= 22.11", "python(abi) = 3.11", "unbound",
           "python3-openvswitch3.5"]
    assert requires_problems(bad, caps, []) == [
        "libpcap.so.0.8()(64bit)", "libc.so.6(GLIBC_2.35)(64bit) "
        "(above GLIBC_2.34)", "dpdk >= 22.11", "python(abi) = 3.11",
        "unbound", "python3-openvswitch3.5"]


def test_buildrequires_are_in_el9():
    """Every BuildRequires of the SRPM is in the EL9 list (with its
    repository: BaseOS, AppStream or CRB)."""
    caps = el9_provides(build=True)
    breq = deps("src", "-R")
    assert "rdma-core-devel" in breq, breq
    problems = requires_problems(breq, caps, [])
    assert not problems, "BuildRequires not in %s:\n%s" % (
        EL9_PROVIDES, "\n".join(problems))
    # Nothing the build does not use: no DPDK, no unbound.
    assert not [r for r in breq if "dpdk" in r or "unbound" in r], breq


def test_python_is_noarch_for_el9_python39():
    """The Python packages are noarch, for EL9's Python 3.9, and need no
    python3-openvswitch from outside (EL9's base has none)."""
    pypkgs = ["python3-" + NAME, NAME + "-test", NAME + "-tools"]
    for pkg in pypkgs:
        assert qp(pkg, "--qf", "%{ARCH}\n") == ["noarch"], pkg
        for f in qp(pkg, "-l"):
            m = re.match(r"/usr/lib/python(\d\.\d+)/", f)
            assert not m or m.group(1) == "3.9", (pkg, f)
        for r in deps(pkg, "-R"):
            assert not r.startswith("python(abi)") or r == \
                "python(abi) = 3.9", (pkg, r)
    assert "python(abi) = 3.9" in deps("python3-" + NAME, "-R")


# Modules that do not import with EL9's base Python, each only for its
# reason: ovstest's RPC (ovs-vlan-test) needs python3-twisted,
# which EL9 has only in EPEL (rpm.rst); the ovs.flow library is the
# optional "flow" extra of the OVS Python package (netaddr, pyparsing),
# used by no program of the RPMs; two modules are for Windows only.
EXPECTED_IMPORT_ERRORS = {
    "ovstest.tcp": "'twisted'", "ovstest.udp": "'twisted'",
    "ovstest.rpcserver": "'twisted'",
    "ovs.flow": "requires netaddr",
    "ovs.winutils": "only on Windows", "ovs.fcntl_win": "'msvcrt'",
    # The RPM recommends prometheus_client, it does not require it.
    "ovs_daqring.metrics.rings": "'prometheus_client'",
    "ovs_daqring.metrics.pmd": "'prometheus_client'",
    "ovs_daqring.metrics.collector": "'prometheus_client'",
    "ovs_daqring.metrics.server": "'prometheus_client'",
    "ovs_daqring.metrics.fabric": "'prometheus_client'",
}


def unexpected_import_errors(failed: Dict[str, str]) -> Dict[str, str]:
    """FAILED (module -> error) without the EXPECTED_IMPORT_ERRORS."""
    bad = {}
    for mod, error in failed.items():
        for prefix, why in EXPECTED_IMPORT_ERRORS.items():
            if (mod == prefix or mod.startswith(prefix + ".")) \
                    and why in error:
                break
        else:
            bad[mod] = error
    return bad


def test_python_code_runs_with_python39(payload):
    """Every Python file of the RPMs compiles with Python 3.9 (EL9's
    python3), and the modules and tools import and start with it."""
    assert os.access(PYTHON39, os.X_OK), (
        "no Python 3.9 at %s: EL9's /usr/bin/python3 is 3.9, and the "
        "Python code of the RPMs is checked with one (set DAQ_PYTHON39 "
        "to a Python 3.9 interpreter, e.g. 'pyenv install 3.9')" % PYTHON39)
    out = run([PYTHON39, "-c", "import sys; print(sys.version_info[:2])"])
    assert out.strip() == "(3, 9)", out
    sources = []
    for dirpath, _, names in os.walk(payload):
        for n in names:
            path = os.path.join(dirpath, n)
            if os.path.islink(path) or "/usr/lib/debug" in path:
                continue
            with open(path, "rb") as f:
                head = f.read(64)
            if n.endswith(".py") or re.match(rb"#! ?\S*python3", head):
                sources.append(path)
    assert len(sources) > 20, sources
    code = ("import sys\n"
            "bad = []\n"
            "for p in sys.argv[1:]:\n"
            "    try:\n"
            "        compile(open(p, 'rb').read(), p, 'exec')\n"
            "    except SyntaxError as e:\n"
            "        bad.append('%s: %s' % (p, e))\n"
            "print('\\n'.join(bad))\n"
            "sys.exit(1 if bad else 0)\n")
    run([PYTHON39, "-c", code] + sources)

    site = os.path.join(payload, "usr/lib/python3.9/site-packages")
    share = os.path.join(payload, "usr/share", NAME)
    # PyYAML is EL9's python3-pyyaml (rhel/el9-provides.txt): the
    # pure-Python yaml package of the host stands in for it.
    yamldir = os.path.join(payload, "..", "pyyaml")
    os.makedirs(yamldir, exist_ok=True)
    import yaml
    link = os.path.join(yamldir, "yaml")
    if not os.path.lexists(link):
        os.symlink(os.path.dirname(yaml.__file__), link)
    env = dict(ENV, PYTHONPATH=":".join([site, share, yamldir]),
               PYTHONDONTWRITEBYTECODE="1")
    # Every module of every package directory the RPMs install, wherever
    # (site-packages, the tools' own directory), except plot modules,
    # which need matplotlib, only Recommended and loaded on demand.
    modules = []
    for top in (site, share):
        for init in glob.glob(os.path.join(top, "**", "__init__.py"),
                              recursive=True):
            pkgdir = os.path.dirname(init)
            pkg = os.path.relpath(pkgdir, top).replace(os.sep, ".")
            modules.append(pkg)
            for mod in glob.glob(os.path.join(pkgdir, "*.py")):
                name = os.path.basename(mod)[:-3]
                if name not in ("__init__", "plot", "__main__"):
                    modules.append("%s.%s" % (pkg, name))
    assert "ovs.db.idl" in modules, modules
    # Modules that upstream's own packaging leaves out or that need what
    # EL9 lacks too (e.g. ovs.flowviz: click, rich, graphviz modules).
    modules = [m for m in modules if not m.startswith(
        ("ovs.flowviz",))]
    out = run([PYTHON39, "-c", "import importlib, sys\n"
               "for m in sys.argv[1:]:\n"
               "    try:\n"
               "        importlib.import_module(m)\n"
               "    except Exception as e:\n"
               "        print('%s: %r' % (m, e))\n"] + modules, env=env)
    failed = dict(line.split(": ", 1) for line in out.splitlines())
    assert "ovs.db.idl" not in failed, failed
    assert not unexpected_import_errors(failed), failed
    # Every Python program of the RPMs starts with Python 3.9.
    tools = []
    for d in ("usr/bin", "usr/sbin"):
        for path in sorted(glob.glob(os.path.join(payload, d, "*"))):
            with open(path, "rb") as f:
                if re.match(rb"#! ?\S*python3", f.read(64)):
                    tools.append(path)
    names = [os.path.basename(t) for t in tools]
    assert "daq-incast" in names and "ovs-tcpdump" in names, names
    for tool in tools:
        p = subprocess.run([PYTHON39, tool, "--help"], env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert p.returncode == 0 and "usage" in p.stdout.lower(), (
            tool, p.stdout)


def test_debuginfo_packages():
    """-debuginfo has the switch's debug data, -debugsource its sources."""
    dbg = NAME + "-debuginfo"
    src = NAME + "-debugsource"
    assert dbg in RPMS and src in RPMS, sorted(RPMS)
    files = qp(dbg, "-l")
    assert any(re.search(r"/usr/lib/debug/usr/sbin/ovs-vswitchd.*\.debug$",
                         f) for f in files), files
    assert any(re.search(r"/usr/lib/debug/usr/lib64/libopenvswitch.*\.debug$",
                         f) for f in files), files
    assert any(f.endswith("/lib/netdev-daqring.c") for f in qp(src, "-l"))


def test_selinux_module_sources(payload):
    """The main package ships upstream's SELinux module sources with the
    DPDK rules (rpm.rst, "SELinux"), made by the build."""
    files = qp(NAME, "-l")
    te = "/usr/share/openvswitch/selinux/openvswitch-custom.te"
    assert te in files and te.replace(".te", ".fc") in files, files
    text = open(payload + te).read()
    assert "allow openvswitch_t hugetlbfs_t:file" in text, text
    assert "vfio_device_t" in text, text
    assert "@begin_dpdk@" not in text and "@end_dpdk@" not in text, text


def test_unit_files_verify(payload, tmp_path):
    """systemd-analyze verify on our units (with the ovs-vswitchd drop-in),
    in a root made of the unpacked RPMs, EL9's merged /usr, the host's
    systemd targets and the few commands the units run that EL9's
    coreutils has (rhel/el9-provides.txt)."""
    if shutil.which("systemd-analyze") is None:
        pytest.fail("systemd-analyze is missing (Debian package systemd)")
    vroot = str(tmp_path / "verify")
    shutil.copytree(payload, vroot, symlinks=True)
    for d in ("bin", "sbin", "lib", "lib64"):
        os.makedirs(os.path.join(vroot, "usr", d), exist_ok=True)
        os.symlink("usr/" + d, os.path.join(vroot, d))
    unitdir = os.path.join(vroot, "usr/lib/systemd/system")
    units = sorted(glob.glob(os.path.join(unitdir, "*.service")))
    assert len(units) >= 5, units
    for target in glob.glob("/lib/systemd/system/*.target"):
        dest = os.path.join(unitdir, os.path.basename(target))
        if not os.path.exists(dest):
            shutil.copy(target, dest)
    caps = el9_provides(build=False)
    for unit in units:
        for line in open(unit):
            m = re.match(r"^Exec\w+=[-@:+!]*(/\S+)", line)
            if not m or os.path.lexists(vroot + m.group(1)):
                continue
            cmd = m.group(1)
            # Not ours: must be an EL9 file, taken from the host here.
            assert cmd in caps, "%s runs %s, not in %s" % (
                os.path.basename(unit), cmd, EL9_PROVIDES)
            host = shutil.which(os.path.basename(cmd))
            dest = os.path.join(vroot, "usr/bin", os.path.basename(cmd))
            if host and not os.path.exists(dest):
                shutil.copy(host, dest)
    p = subprocess.run(["systemd-analyze", "verify", "--man=no",
                        "--root=" + vroot]
                       + ["/" + os.path.relpath(u, vroot) for u in units],
                       env=ENV, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    assert p.returncode == 0 and not p.stdout.strip(), p.stdout


# ---------------------------------------------------------------- installed

def el9_standin_rpm(tmp_path) -> str:
    """A package that provides exactly what the EL9 lists say an EL9
    install provides: the run-time capabilities of rhel/el9-provides.txt
    and every soname (and symbol version) of rhel/el9-sonames.txt."""
    provides = el9_provides(build=False)
    for so, nodes in el9_sonames().items():
        provides.append("%s()(64bit)" % so)
        provides += ["%s(%s)(64bit)" % (so, n) for n in sorted(nodes)]
    top = tmp_path / "standin"
    (top / "SPECS").mkdir(parents=True)
    spec = top / "SPECS" / "el9-standin.spec"
    spec.write_text(
        "Name: el9-standin\nVersion: 9.4\nRelease: 1\nLicense: none\n"
        "Summary: What rhel/el9-*.txt say an EL9 install provides\n"
        "BuildArch: noarch\n"
        + "".join("Provides: %s\n" % p for p in provides)
        + "%description\nStand-in for EL9 BaseOS and AppStream.\n"
        "%files\n")
    run(["rpmbuild", "-bb", "--define", "_topdir %s" % top, str(spec)])
    (path,) = glob.glob(str(top / "RPMS" / "noarch" / "el9-standin-*.rpm"))
    return path


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A scratch root with every binary RPM installed, without scripts
    (they would run in the root, which has no shell), but with rpm's
    dependency checks: the stand-in package of the EL9 lists is all the
    root has besides our RPMs."""
    if os.geteuid() != 0:
        pytest.fail("installing into a scratch root needs root "
                    "(rpm sets file owners)")
    d = tmp_path_factory.mktemp("rpmroot")
    standin = el9_standin_rpm(tmp_path_factory.mktemp("standin"))
    run(["rpm", "--root", str(d), "--initdb"])
    run(["rpm", "--root", str(d), "--noscripts", "-i", standin])
    pkgs = [RPMS[NAME + s] for s in SUBPACKAGES] + [RPMS["python3-" + NAME]]
    run(["rpm", "--root", str(d), "--noscripts", "-i"] + pkgs)
    return str(d)


def root_env(root: str) -> Dict[str, str]:
    env = dict(ENV, LD_LIBRARY_PATH=os.path.join(root, "usr/lib64"))
    env["PATH"] = "%s/usr/bin:%s/usr/sbin:%s" % (root, root, env["PATH"])
    return env


def test_install_puts_files_where_the_spec_says(root):
    installed = run(["rpm", "--root", root, "-qa", "--qf", "%{NAME}\n"])
    assert sorted(installed.split()) == sorted(
        [NAME + s for s in SUBPACKAGES] + ["python3-" + NAME, "el9-standin"])
    for pkg in [NAME + s for s in SUBPACKAGES]:
        # Every file the package lists, except %ghost files, is there.
        listed = run(["rpm", "--root", root, "-q", "--qf",
                      "[%{FILENAMES} %{FILEFLAGS:fflags}\n]", pkg])
        for line in listed.splitlines():
            path, _, flags = line.partition(" ")
            if "g" in flags:
                continue
            assert os.path.lexists(root + path), (pkg, path)


def test_installed_vswitchd_runs(root):
    env = root_env(root)
    vswitchd = os.path.join(root, "usr/sbin/ovs-vswitchd")
    out = run([vswitchd, "--version"], env=env)
    assert re.search(r"^ovs-vswitchd \(Open vSwitch\) 3\.5\.0", out, re.M), out
    assert re.search(r"^DPDK 24\.11", out, re.M), out
    # The Open vSwitch libraries come from the root; DPDK is linked in.
    ldd = run(["ldd", vswitchd], env=env)
    m = re.search(r"libopenvswitch-\S+ => (\S+)", ldd)
    assert m and m.group(1).startswith(root), ldd
    assert "librte_" not in ldd, ldd
    assert "not found" not in ldd, ldd
    for tool in ("ovs-vsctl", "ovs-ofctl", "ovs-appctl", "ovsdb-server"):
        assert "Open vSwitch) 3.5.0" in run([tool, "--version"], env=env)


def test_installed_switch_has_daqring(root):
    blobs = b""
    for pattern in ("usr/sbin/ovs-vswitchd",
                    "usr/lib64/libopenvswitch-*.so.*"):
        for path in glob.glob(os.path.join(root, pattern)):
            if not os.path.islink(path):
                with open(path, "rb") as f:
                    blobs += f.read()
    for s in (b"netdev_daqring", b"netdev-daqring/show", b"daqring"):
        assert s in blobs, s
    pages = (("man5/ovs-vswitchd.conf.db.5", ("daqring", "ring-size")),
             ("man7/ovs-daqring.7", ("daqring", "max-burst")),
             ("man8/ovs-daqring-setup.8", ("DAQ_HUGEPAGES", "dpdk-init")),
             ("man8/ovs-daqctl.8", ("add-dcm", "EXIT STATUS")),
             ("man1/daq-incast.1", ("--link-rate", "credits")),
             ("man1/daq-bench.1", ("--parts", "fairness")))
    for page, words in pages:
        path = os.path.join(root, "usr/share/man", page + ".gz")
        with gzip.open(path) as f:
            # roff writes "-" as "\-".
            man = f.read().decode("utf-8", "replace").replace("\\-", "-")
        for word in words:
            assert word in man, (page, word)


def test_installed_tools_run(root):
    env = root_env(root)
    env["PYTHONPATH"] = ":".join(glob.glob(os.path.join(
        root, "usr/lib/python3*/site-packages")))
    for tool in ("ovs-daqctl", "daq-incast", "daq-bench"):
        path = os.path.join(root, "usr/bin", tool)
        out = run([path, "--help"], env=env)
        assert "usage:" in out.lower(), (tool, out)


def setup_script(root: str, config: str, *args: str, env=None):
    env = dict(env or root_env(root), DAQ_SYSCONFIG=config,
               OVS_VSCTL=os.path.join(root, "usr/bin/ovs-vsctl"))
    return subprocess.run([os.path.join(root, "usr/sbin/ovs-daqring-setup")]
                          + list(args), env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def fabric_db_script(root: str, config: str, *args: str):
    env = dict(root_env(root), DAQFABRIC_DB_SYSCONFIG=config)
    return subprocess.run(
        [os.path.join(root, "usr/share/openvswitch/scripts/ovs-daqfabric-db")]
        + list(args), env=env, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)


@pytest.mark.parametrize("setting,message", [
    ("DAQFABRIC_DB_LOCAL=", "DAQFABRIC_DB_LOCAL is empty"),
    ("DAQFABRIC_DB_LOCAL=10.0.0.1", "expected ssl:IP:PORT or tcp:IP:PORT"),
    ("DAQFABRIC_DB_JOIN=tcp:10.0.0.1:6644", "this member's own address"),
    ("DAQFABRIC_DB_REMOTE=tcp:6645", "expected pssl:PORT[:IP]"),
    ("DAQFABRIC_DB_REMOTE=pssl:6645", "an ssl: address needs this file"),
])
def test_fabric_db_rejects_bad_settings(root, tmp_path, setting, message):
    sample = os.path.join(root, "etc/sysconfig/ovs-daqfabric-db")
    config = tmp_path / "ovs-daqfabric-db"
    config.write_text(open(sample).read()
                      + "DAQFABRIC_DB_LOCAL=tcp:10.0.0.1:6644\n"
                      "DAQFABRIC_DB_REMOTE=ptcp:6645\n"
                      "DAQFABRIC_DB_SCHEMA=%s\n" % os.path.join(
                          root, "usr/share/openvswitch/daqfabric.ovsschema")
                      + "DAQFABRIC_DB_FILE=%s\n" % (tmp_path / "f.db")
                      + setting + "\n")
    p = fabric_db_script(root, str(config), "init")
    assert p.returncode == 1, p
    assert message in p.stderr, p.stderr
    assert not (tmp_path / "f.db").exists()


def test_fabric_db_creates_and_joins_the_cluster(root, tmp_path):
    """The unit's "init": the first member creates the cluster, the others
    join it (files only: the servers are not started here)."""
    tool = os.path.join(root, "usr/bin/ovsdb-tool")
    sample = os.path.join(root, "etc/sysconfig/ovs-daqfabric-db")
    schema = os.path.join(root, "usr/share/openvswitch/daqfabric.ovsschema")
    for i, join in ((1, ""), (2, "tcp:127.0.0.1:16644")):
        config = tmp_path / ("m%d" % i)
        db = tmp_path / ("m%d.db" % i)
        config.write_text(
            open(sample).read()
            + "DAQFABRIC_DB_LOCAL=tcp:127.0.0.%d:16644\n" % i
            + "DAQFABRIC_DB_JOIN=%s\nDAQFABRIC_DB_REMOTE=ptcp:16645\n" % join
            # No agent remote (pssl:, which needs the SSL files).
            + "DAQFABRIC_DB_AGENT_REMOTE=\n"
            + "DAQFABRIC_DB_FILE=%s\nDAQFABRIC_DB_SCHEMA=%s\n" % (db, schema))
        p = fabric_db_script(root, str(config), "init")
        assert p.returncode == 0, p
        assert ("created the cluster" if i == 1 else "joining") in p.stdout
        assert run([tool, "db-is-clustered", str(db)],
                   env=root_env(root)) == ""
        # A second "init" leaves the file alone.
        before = db.read_bytes()
        assert fabric_db_script(root, str(config), "init").returncode == 0
        assert db.read_bytes() == before
    assert "daqfabric" in run([tool, "db-name", str(tmp_path / "m1.db")],
                              env=root_env(root))


@pytest.mark.parametrize("setting,message", [
    ("DAQ_PMD_CPU_MASK=zz", "expected a hexadecimal CPU mask"),
    ("DAQ_HUGEPAGES=lots", "expected a number of pages"),
    ("DAQ_DPDK_SOCKET_MEM=1G", "expected MB per NUMA node"),
    ("DAQ_DPDK_INIT=yes", "expected true, false or try"),
    ("DAQ_HUGEPAGES_PER_NODE=0=512", "expected NODE:PAGES"),
    ("DAQ_OTHER_CONFIG=novalue", "expected KEY=VALUE"),
])
def test_setup_rejects_bad_settings(root, tmp_path, setting, message):
    sample = os.path.join(root, "etc/sysconfig/ovs-daqring")
    config = tmp_path / "ovs-daqring"
    # DAQ_SETUP=no: should a check ever let the setting through, the
    # script stops there instead of touching the host's hugepages or OVS.
    config.write_text(open(sample).read() + setting + "\nDAQ_SETUP=no\n")
    p = setup_script(root, str(config), "start")
    assert p.returncode == 1, p
    assert message in p.stderr, p.stderr


# ------------------------------------------------ a daqring, sandboxed

def wait_for(what, predicate, timeout=60.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


def kill_pidfile(path: str):
    try:
        pid = int(open(path).read())
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_sandboxed_switch_accepts_daqring(root, tmp_path):
    """The node-setup path on the installed files: ovsdb-server from the
    root, other_config written by ovs-daqring-setup from the sample
    sysconfig (hugepages left alone, DPDK kept off the PCI bus and out
    of hugepages: --no-huge, with which DPDK allows only --legacy-mem,
    so OVS adds no --in-memory; a --file-prefix of its own), ovs-vswitchd
    in a namespace of its own, one daqring."""
    if shutil.which("ip") is None:
        pytest.skip("needs ip (iproute2) for a network namespace")
    work = str(tmp_path)
    env = root_env(root)
    env.update(OVS_RUNDIR=work, OVS_LOGDIR=work, OVS_DBDIR=work,
               OVS_SYSCONFDIR=work,
               OVS_PKGDATADIR=os.path.join(root, "usr/share/openvswitch"))
    ns = "daqrpm%d" % os.getpid()
    tag = "daqrpm%d" % os.getpid()
    cpu = (os.cpu_count() or 1) - 1
    sample = open(os.path.join(root, "etc/sysconfig/ovs-daqring")).read()
    config = tmp_path / "ovs-daqring"
    config.write_text(sample + "\n# test overrides\nDAQ_HUGEPAGES=0\n"
                      "DAQ_DPDK_SOCKET_MEM=\nDAQ_PMD_CPU_MASK=0x%x\n"
                      'DAQ_DPDK_EXTRA="--no-pci --no-huge --legacy-mem -m 512 '
                      '--file-prefix=%s"\n' % (1 << cpu, tag))
    db = os.path.join(work, "conf.db")
    run(["ovsdb-tool", "create", db,
         os.path.join(root, "usr/share/openvswitch/vswitch.ovsschema")],
        env=env)
    try:
        run(["ovsdb-server", "--detach", "--no-chdir", "--pidfile",
             "--log-file", "--remote=punix:%s/db.sock" % work, db], env=env)
        p = setup_script(root, str(config), "start", env=env)
        assert p.returncode == 0, p
        other = run(["ovs-vsctl", "get", "Open_vSwitch", ".",
                     "other_config"], env=env)
        assert 'dpdk-init="true"' in other, other
        assert "--no-pci" in other and "pmd-cpu-mask" in other, other

        run(["ip", "netns", "add", ns])
        run(["ip", "netns", "exec", ns, "ovs-vswitchd", "--detach",
             "--no-chdir", "--pidfile", "--log-file",
             "unix:%s/db.sock" % work], env=env)
        log = os.path.join(work, "ovs-vswitchd.log")
        wait_for("DPDK initialization", lambda: "DPDK Enabled - initialized"
                 in open(log).read())
        run(["ovs-vsctl", "add-br", "br0", "--", "set", "bridge", "br0",
             "datapath_type=netdev"], env=env)
        run(["ovs-vsctl", "add-port", "br0", "dcm0", "--", "set",
             "Interface", "dcm0", "type=daqring", "options:ring-size=1024",
             "options:max-burst=32", "options:poll-interval=500"], env=env)
        error = run(["ovs-vsctl", "get", "Interface", "dcm0", "error"],
                    env=env).strip()
        assert error in ("[]", '""'), error
        ofport = int(run(["ovs-vsctl", "get", "Interface", "dcm0",
                          "ofport"], env=env))
        assert ofport > 0
        show = run(["ovs-appctl", "netdev-daqring/show"], env=env)
        assert "dcm0" in show, show
        run(["ovs-vsctl", "del-br", "br0"], env=env)
    finally:
        try:
            subprocess.run(["ovs-appctl", "-t", "ovs-vswitchd", "exit",
                            "--cleanup"], env=env, timeout=30,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pass
        kill_pidfile(os.path.join(work, "ovs-vswitchd.pid"))
        kill_pidfile(os.path.join(work, "ovsdb-server.pid"))
        subprocess.run(["ip", "netns", "del", ns], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        # DPDK's runtime directory of this --file-prefix.
        shutil.rmtree(os.path.join("/var/run/dpdk", tag), ignore_errors=True)
