"""A private ovsdb-server + ovs-vswitchd (DPDK) in its own run directory,
its ports, its counters, and the daqring programming of one mode."""

import json
import os
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional, Set, Tuple

from . import hugepages, tool_path
from .incast.config import Config
from .process import Cleanup, RunError, die_with_parent, run, stop_process
from .incast.topology import Host, Plan


class ModeUnavailable(Exception):
    """The switch cannot run a mode (e.g. no daqring support)."""


def ovs_json_value(v: object) -> object:
    """Decode one value of ovs-vsctl's `-f json -d json` output."""
    if isinstance(v, list) and len(v) == 2 and v[0] == "map":
        return {k: ovs_json_value(x) for k, x in v[1]}
    if isinstance(v, list) and len(v) == 2 and v[0] == "set":
        return [ovs_json_value(x) for x in v[1]]
    if isinstance(v, list) and len(v) == 2 and v[0] == "uuid":
        return v[1]
    return v


class Switch:
    """Everything lives under `workdir`; ovs-vswitchd runs in the plan's
    switch namespace (its tap devices stay there) and its DPDK memory is
    --in-memory with a --file-prefix of its own, so another ovs-vswitchd
    on the machine is never touched."""

    def __init__(self, cfg: Config, plan: Plan, workdir: str,
                 cleanup: Cleanup) -> None:
        self.cfg = cfg
        self.bin = cfg.binaries
        self.plan = plan
        self.bridge = "br0"              # in our own namespace
        self.dir = workdir
        self.cleanup = cleanup
        self.sock = os.path.join(workdir, "db.sock")
        self.ctl = os.path.join(workdir, "ovs-vswitchd.ctl")
        self.env = dict(os.environ, OVS_RUNDIR=workdir, OVS_LOGDIR=workdir,
                        OVS_DBDIR=workdir, OVS_SYSCONFDIR=workdir,
                        OVS_PKGDATADIR=os.path.dirname(self.bin.schema))
        self.ovsdb: Optional["subprocess.Popen[bytes]"] = None
        self.vswitchd: Optional["subprocess.Popen[bytes]"] = None
        self.hugepages_note = ""

    # ------------------------------------------------------------ tools
    def vsctl(self, *args: str, timeout: float = 60) -> str:
        return run([self.bin.vsctl, "--db=unix:" + self.sock,
                    "--timeout=%d" % timeout] + list(args), env=self.env,
                   timeout=timeout + 10)

    def ofctl(self, *args: str) -> str:
        return run([self.bin.ofctl] + list(args), env=self.env)

    def appctl(self, *args: str, timeout: float = 30) -> str:
        return run([self.bin.appctl, "-t", self.ctl,
                    "--timeout=%d" % timeout] + list(args), env=self.env,
                   timeout=timeout + 10)

    def log_tail(self, n: int = 15) -> str:
        try:
            with open(os.path.join(self.dir, "ovs-vswitchd.log")) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    # ------------------------------------------------------------ life
    def start(self) -> None:
        db = os.path.join(self.dir, "conf.db")
        run([self.bin.ovsdb_tool, "create", db, self.bin.schema])
        self.cleanup.push("stop ovsdb-server", self._stop_ovsdb)
        with open(os.path.join(self.dir, "ovsdb-server.out"), "w") as out:
            self.ovsdb = subprocess.Popen(
                [self.bin.ovsdb_server, db, "--remote=punix:" + self.sock,
                 "--unixctl=" + os.path.join(self.dir, "ovsdb-server.ctl"),
                 "--log-file=" + os.path.join(self.dir, "ovsdb-server.log"),
                 "-vconsole:off"], env=self.env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=die_with_parent)
        deadline = time.monotonic() + 20
        while not os.path.exists(self.sock):
            if (self.ovsdb.poll() is not None
                    or time.monotonic() > deadline):
                raise RunError("ovsdb-server did not start (see %s)"
                               % self.dir)
            time.sleep(0.05)
        self._dpdk_memory()
        settings = ["other_config:dpdk-init=true",
                    "other_config:pmd-cpu-mask=0x%x"
                    % sum(1 << c for c in self.cfg.pmd_cpus)]
        memory, extra = hugepages.dpdk_memory_config(
            self.cfg.use_hugepages, str(self.cfg.socket_mem_mb),
            self.cfg.socket_mem_mb, self.plan.tag, self.cleanup)
        settings += memory
        settings.append('other_config:dpdk-extra="--no-pci %s"' % extra)
        self.vsctl("--no-wait", "init", "--", "set", "Open_vSwitch", ".",
                   *settings)
        self.cleanup.push("stop ovs-vswitchd", self._stop_vswitchd)
        with open(os.path.join(self.dir, "ovs-vswitchd.out"), "w") as out:
            self.vswitchd = subprocess.Popen(
                ["ip", "netns", "exec", self.plan.switch_ns,
                 self.bin.vswitchd, "unix:" + self.sock,
                 "--unixctl=" + self.ctl,
                 "--log-file=" + os.path.join(self.dir, "ovs-vswitchd.log"),
                 "-vconsole:off"], env=self.env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=die_with_parent)
        try:
            self.vsctl("wait-until", "Open_vSwitch", ".",
                       "dpdk_initialized=true", timeout=120)
        except RunError:
            raise RunError("ovs-vswitchd did not initialise DPDK:\n%s"
                           % self.log_tail())
        self._alive()
        self.vsctl("add-br", self.bridge, "--", "set", "Bridge",
                   self.bridge, "datapath_type=netdev")

    def _dpdk_memory(self) -> None:
        """Hugepages for the run (reserved if missing, given back after
        it), or the --no-huge fallback, said in the notes."""
        cfg = self.cfg
        if not cfg.use_hugepages:
            cfg.notes.append("--hugepages off: DPDK runs with --no-huge "
                             "-m %d (slower)" % cfg.socket_mem_mb)
            return
        why = hugepages.reserve(cfg.socket_mem_mb,
                                os.path.join(self.dir, "hugepages"),
                                self.cleanup)
        if why is None:
            return
        if cfg.hugepages_mode == "require":
            raise RunError("hugepages unavailable (--hugepages require): "
                           "%s" % why)
        cfg.use_hugepages = False
        cfg.notes.append("%s: DPDK runs with --no-huge -m %d (slower)"
                         % (why, cfg.socket_mem_mb))

    def _alive(self) -> None:
        if self.vswitchd is None or self.vswitchd.poll() is not None:
            raise RunError("ovs-vswitchd exited:\n%s" % self.log_tail())

    def _stop_vswitchd(self) -> None:
        p = self.vswitchd
        if p is not None and p.poll() is None:
            try:
                self.appctl("exit", "--cleanup", timeout=20)
                p.wait(20)
            except (RunError, subprocess.TimeoutExpired):
                pass
            stop_process(p, grace=10)

    def _stop_ovsdb(self) -> None:
        if self.ovsdb is not None:
            stop_process(self.ovsdb)

    # ------------------------------------------------------------ ports
    def add_ports(self, hosts: List[Host]) -> None:
        args: List[str] = []
        for h in hosts:
            args += ["--", "add-port", self.bridge, h.port_name, "--", "set",
                     "Interface", h.port_name, "type=dpdk",
                     "options:dpdk-devargs=%s" % h.devargs(),
                     "ofport_request=%d" % h.ofport]
        self.vsctl(*args, timeout=120)
        self._check_ports([h.port_name for h in hosts])

    def interfaces(self) -> Dict[str, Dict[str, object]]:
        out = json.loads(self.vsctl("-f", "json", "-d", "json",
                                    "--columns=name,ofport,error,"
                                    "statistics,status,type", "list",
                                    "Interface"))
        cols = out["headings"]
        return {row[0]: {c: ovs_json_value(v) for c, v in zip(cols, row)}
                for row in out["data"]}

    def _check_ports(self, names: List[str]) -> None:
        deadline = time.monotonic() + 30
        while True:
            ifs = self.interfaces()
            bad = {n: ifs.get(n, {}) for n in names
                   if not isinstance(ifs.get(n, {}).get("ofport"), int)
                   or ifs[n]["ofport"] <= 0}   # type: ignore
            errors = {n: i.get("error") for n, i in bad.items()
                      if i.get("error") not in (None, [], "")}
            if errors:
                raise ModeUnavailable("; ".join(
                    "%s: %s" % kv for kv in errors.items()))
            if not bad:
                return
            if time.monotonic() > deadline:
                raise RunError("ports without an OpenFlow number: %s"
                               % " ".join(bad))
            time.sleep(0.2)

    def status(self, names: List[str]) -> Dict[str, object]:
        """The status column of some interfaces (daqring: ring size,
        shaping rate), plus the occupancy and high watermark of daqrings,
        which are statistics (refreshed every 5 s), not status."""
        ifs = self.interfaces()
        out: Dict[str, object] = {}
        for n in names:
            row = ifs.get(n, {})
            st = row.get("status")
            stats = row.get("statistics")
            if isinstance(st, dict) and isinstance(stats, dict):
                st = dict(st)
                for key in ("occupancy", "high_watermark"):
                    if key in stats:
                        st[key] = stats[key]
            out[n] = st
        return out

    def iface_types(self) -> Set[str]:
        out = self.vsctl("get", "Open_vSwitch", ".", "iface_types")
        return {t.strip(' "') for t in out.strip().strip("[]").split(",")}

    def stats(self) -> Dict[str, Dict[str, int]]:
        """Interface statistics as ovsdb shows them (refreshed by
        ovs-vswitchd every 5 s, see STATS_INTERVAL)."""
        out = {}
        for name, row in self.interfaces().items():
            st = row.get("statistics")
            if isinstance(st, dict):
                out[name] = {k: int(v) for k, v in st.items()
                             if isinstance(v, int)}
        return out

    def pmd_schedstat(self) -> Tuple[int, int]:
        """(ns on CPU, ns runnable but waiting) summed over the PMD
        threads: a busy-polling PMD alone on its core never waits."""
        run_ns = wait_ns = 0
        if self.vswitchd is None:
            return 0, 0
        task = "/proc/%d/task" % self.vswitchd.pid
        try:
            tids = os.listdir(task)
        except OSError:
            return 0, 0
        for tid in tids:
            try:
                with open("%s/%s/comm" % (task, tid)) as f:
                    if not f.read().startswith("pmd"):
                        continue
                with open("%s/%s/schedstat" % (task, tid)) as f:
                    fields = f.read().split()
            except OSError:
                continue
            run_ns += int(fields[0])
            wait_ns += int(fields[1])
        return run_ns, wait_ns

    def tail(self) -> str:
        return self.log_tail()

    def save_logs(self, dest: str) -> None:
        os.makedirs(dest, exist_ok=True)
        for name in os.listdir(self.dir):
            if name.endswith((".log", ".out")):
                shutil.copy(os.path.join(self.dir, name), dest)


# Seconds between ovs-vswitchd's writes of Interface statistics (its
# minimum stats-update-interval), plus a margin for the commit.
STATS_INTERVAL = 5.0 + 0.7


# ---------------------------------------------------------------- daqrings
# One small pair of functions programs the daqrings and their flows, so
# that utilities/ovs-daqctl can replace it later.
def daqctl_path() -> str:
    """ovs-daqctl next to daq-incast (the repository's utilities/, or the
    same bin directory when installed), else the one on PATH."""
    path = tool_path("ovs-daqctl")
    if not path:
        raise ModeUnavailable("ovs-daqctl not found next to daq-incast or "
                              "on PATH")
    return path


def daqctl(sw: Switch, *args: str, timeout: float = 120) -> str:
    """Runs ovs-daqctl against 'sw' (its database, bridge and tools)."""
    return run([sys.executable, daqctl_path(), "--db", "unix:" + sw.sock,
                "--bridge", sw.bridge, "--ofctl", sw.bin.ofctl,
                "--timeout", "%d" % timeout] + list(args),
               env=sw.env, timeout=timeout + 30)


def program_daqrings(sw: Switch, plan: Plan, ring_size: int, max_burst: int,
                     poll_us: int, max_rate: int = 0,
                     frame_overhead: int = 24) -> Dict[str, int]:
    """Per DCM a daqring, priority=100 ip,nw_dst=DCM -> ring and
    priority=101 in_port=ring -> DCM port, through ovs-daqctl (one OVSDB
    transaction, one OpenFlow bundle); NORMAL (priority 0) stays for
    everything else.  Raises ModeUnavailable if the switch has no daqring
    support or refuses the map."""
    types = sw.iface_types()
    if "daqring" not in types:
        raise ModeUnavailable(
            "this ovs-vswitchd does not support type=daqring (it offers: "
            "%s); build the patched tree or pass --ovs-build"
            % ", ".join(sorted(t for t in types if t)))
    dcms = [{"name": plan.ring_name(d), "ip": d.ips[0],
             "egress": d.port_name, "ofport": plan.ring_ofport(d)}
            for d in plan.dcms]
    defaults: Dict[str, object] = {"ring-size": ring_size,
                                   "max-burst": max_burst}
    if max_rate:
        # Byte shaping: ovs-daqctl writes a rate as the ring's max-rate.
        defaults.update({"rate": "%dbit" % max_rate,
                         "frame-overhead": frame_overhead})
    else:
        defaults["poll-interval"] = poll_us
    doc = {"defaults": defaults, "dcms": dcms}
    path = os.path.join(sw.dir, "dcm-map.json")
    with open(path, "w") as f:
        # JSON is YAML: ovs-daqctl reads it as a map.
        json.dump(doc, f, indent=1)
    try:
        daqctl(sw, "apply", path)
        sw._check_ports([plan.ring_name(d) for d in plan.dcms])
    except (ModeUnavailable, RunError):
        remove_daqrings(sw, plan)
        raise
    return {plan.ring_name(d): plan.ring_ofport(d) for d in plan.dcms}


def remove_daqrings(sw: Switch, plan: Plan) -> None:
    """Removes every daqring and DCM flow that ovs-daqctl installed."""
    daqctl(sw, "clear")
