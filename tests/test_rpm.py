"""pytest for the RPM packaging (rhel/, "make rpm").

Checks the RPMs that "make rpm" built: names and versions, the file lists
(rpm -qpl) and dependencies (rpm -qpR, provides, conflicts), then installs
them into a scratch root (rpm --root DIR --nodeps --noscripts -i), runs
the installed ovs-vswitchd from there (LD_LIBRARY_PATH to the root's
libraries; DPDK comes from the host), and, as root, starts it in a
network namespace of its own with DPDK (--no-pci --in-memory --no-huge),
configured by the installed ovs-daqring-setup, and adds a daqring port.

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

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
RPM_DIR = os.environ.get("DAQ_RPM_DIR") or os.path.join(TOP, "rpmbuild")
NAME = "ovs-daqring"
SUBPACKAGES = ("", "-devel", "-test", "-tools")
ENV = dict(os.environ, LC_ALL="C")


def fork_version() -> str:
    """VERSION-RELEASE of the configured tree: DAQ_BASE_VERSION-DAQ_RELEASE
    from config.mk (configure takes the base version from the pin of the
    chosen base, so configure.ac no longer holds it literally)."""
    values = {}
    try:
        with open(os.path.join(TOP, "config.mk"), encoding="utf-8") as f:
            for line in f:
                key, sep, value = line.partition("=")
                if sep:
                    values[key.strip()] = value.strip()
    except OSError:
        pass
    base = values.get("DAQ_BASE_VERSION")
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
    base = [f for f in files if f.startswith("openvswitch-source-")]
    assert base, files
    text = extract_from_srpm("%s.spec" % NAME).decode()
    # The pin is checked by sha256, and the series applied by prepare-ovs.
    assert re.search(r"^%global ovs_base_sha256 [0-9a-f]{64}$", text, re.M)
    assert "sha256sum %{SOURCE1}" in text
    assert "build-aux/prepare-ovs all" in text
    assert "--with-dpdk=shared" in text
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
    treq = deps(NAME + "-tools", "-R")
    assert "python3-openvswitch" in treq and "python3-pyyaml" in treq


def test_requires_provides_conflicts():
    req = deps(NAME, "-R")
    assert "dpdk >= 22.11" in req, req
    # DPDK 22.11's ABI, found by rpm's ELF dependency generator.
    assert any(re.match(r"librte_eal\.so\.23\(\)", r) for r in req), req
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


# ---------------------------------------------------------------- installed

@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A scratch root with every binary RPM installed, without scripts."""
    if os.geteuid() != 0:
        pytest.skip("installing into a scratch root needs root "
                    "(rpm sets file owners)")
    d = tmp_path_factory.mktemp("rpmroot")
    run(["rpm", "--root", str(d), "--initdb"])
    pkgs = [RPMS[NAME + s] for s in SUBPACKAGES] + [RPMS["python3-" + NAME]]
    run(["rpm", "--root", str(d), "--nodeps", "--noscripts", "-i"] + pkgs)
    return str(d)


def root_env(root: str) -> Dict[str, str]:
    env = dict(ENV, LD_LIBRARY_PATH=os.path.join(root, "usr/lib64"))
    env["PATH"] = "%s/usr/bin:%s/usr/sbin:%s" % (root, root, env["PATH"])
    return env


def test_install_puts_files_where_the_spec_says(root):
    installed = run(["rpm", "--root", root, "-qa", "--qf", "%{NAME}\n"])
    assert sorted(installed.split()) == sorted(
        [NAME + s for s in SUBPACKAGES] + ["python3-" + NAME])
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
    assert re.search(r"^ovs-vswitchd \(Open vSwitch\) 3\.1\.0", out, re.M), out
    assert re.search(r"^DPDK 22\.11", out, re.M), out
    # The Open vSwitch libraries come from the root, DPDK from the host.
    ldd = run(["ldd", vswitchd], env=env)
    m = re.search(r"libopenvswitch-\S+ => (\S+)", ldd)
    assert m and m.group(1).startswith(root), ldd
    assert "librte_eal.so.23 => /" in ldd, ldd
    assert "not found" not in ldd, ldd
    for tool in ("ovs-vsctl", "ovs-ofctl", "ovs-appctl", "ovsdb-server"):
        assert "Open vSwitch) 3.1.0" in run([tool, "--version"], env=env)


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
