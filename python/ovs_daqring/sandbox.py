# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The one switch sandbox: a private ovsdb-server and ovs-vswitchd.

daq-incast, daq-bench and the pytest integration tests all start their
switch with Sandbox: its database, sockets, logs and DPDK runtime files
live in a directory of its own, its daemons are ours (stopped by pid),
ovs-vswitchd may run in a network namespace (given, or made and deleted by
the sandbox), and DPDK (other_config:dpdk-init) or only dummy ports.
What a tool adds (ports, flows, counters) lives in its own subclass.
"""

import json
import os
import subprocess
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .process import (RunError, die_with_parent, read_text, run,
                      stop_process)


@dataclass
class Binaries:
    """One ovs-vswitchd and the tools and schema used with it."""
    vswitchd: str
    ovsdb_server: str
    ovsdb_tool: str
    vsctl: str
    ofctl: str
    appctl: str
    schema: str
    origin: str = ""

    def check(self) -> Optional[str]:
        """Why these cannot be used (a missing file), or None."""
        for p in (self.vswitchd, self.ovsdb_server, self.ovsdb_tool,
                  self.vsctl, self.ofctl, self.appctl):
            if not os.access(p, os.X_OK):
                return "%s: not found or not executable" % p
        if not os.path.isfile(self.schema):
            return "%s: schema not found" % self.schema
        return None


def tree_binaries(tools: str, vswitchd: Optional[str] = None,
                  schema: Optional[str] = None) -> Binaries:
    """The daemons and tools of the built OVS tree TOOLS (ovs/ of this
    repository after "make"); VSWITCHD and SCHEMA replace its own."""
    return Binaries(
        vswitchd=vswitchd or os.path.join(tools, "vswitchd", "ovs-vswitchd"),
        ovsdb_server=os.path.join(tools, "ovsdb", "ovsdb-server"),
        ovsdb_tool=os.path.join(tools, "ovsdb", "ovsdb-tool"),
        vsctl=os.path.join(tools, "utilities", "ovs-vsctl"),
        ofctl=os.path.join(tools, "utilities", "ovs-ofctl"),
        appctl=os.path.join(tools, "utilities", "ovs-appctl"),
        schema=schema or os.path.join(tools, "vswitchd",
                                      "vswitch.ovsschema"),
        origin="OVS build %s" % tools)


def ovs_json_value(v: object) -> object:
    """Decode one value of ovs-vsctl's `-f json -d json` output."""
    if isinstance(v, list) and len(v) == 2 and v[0] == "map":
        return {k: ovs_json_value(x) for k, x in v[1]}
    if isinstance(v, list) and len(v) == 2 and v[0] == "set":
        return [ovs_json_value(x) for x in v[1]]
    if isinstance(v, list) and len(v) == 2 and v[0] == "uuid":
        return v[1]
    return v


def dpdk_settings(pmd_cpu_mask: str, memory: Sequence[str], extra: str,
                  other_config: Sequence[str] = ()) -> List[str]:
    """The Open_vSwitch settings of a DPDK sandbox: DPDK on, the PMD
    cores, MEMORY (hugepages.dpdk_memory_config()'s settings), EXTRA EAL
    arguments, and more KEY=VALUE other_config pairs."""
    return (["other_config:dpdk-init=true",
             "other_config:pmd-cpu-mask=%s" % pmd_cpu_mask]
            + list(memory)
            + ['other_config:dpdk-extra="%s"' % extra.strip()]
            + ["other_config:%s" % kv for kv in other_config])


class Sandbox:
    """ovsdb-server and ovs-vswitchd with every file under `workdir`.

    netns: the network namespace ovs-vswitchd runs in (None: the caller's);
    own_netns: the sandbox creates it (loopback up) and deletes it at
    stop().  ofctl_args go before every ovs-ofctl command; env adds to the
    daemons' and tools' environment."""

    def __init__(self, bins: Binaries, workdir: str,
                 netns: Optional[str] = None, own_netns: bool = False,
                 label: str = "ovs-vswitchd",
                 ofctl_args: Sequence[str] = (),
                 env: Optional[Dict[str, str]] = None) -> None:
        self.bin = bins
        self.dir = workdir
        self.netns = netns
        self.own_netns = own_netns
        self.netns_created = False
        self.label = label
        self.ofctl_args = list(ofctl_args)
        self.sock = os.path.join(workdir, "db.sock")
        self.db = "unix:" + self.sock
        self.ctl = os.path.join(workdir, "ovs-vswitchd.ctl")
        self.env = dict(os.environ, OVS_RUNDIR=workdir, OVS_LOGDIR=workdir,
                        OVS_DBDIR=workdir, OVS_SYSCONFDIR=workdir,
                        OVS_PKGDATADIR=os.path.dirname(bins.schema))
        self.env.update(env or {})
        self.ovsdb: Optional["subprocess.Popen[bytes]"] = None
        self.vswitchd: Optional["subprocess.Popen[bytes]"] = None
        # Seconds the last stop() took to stop ovs-vswitchd.
        self.stop_s: Optional[float] = None
        self._pmd_tids: Optional[List[int]] = None

    # ------------------------------------------------------------ tools
    def vsctl(self, *args: str, timeout: float = 60) -> str:
        return run([self.bin.vsctl, "--db=" + self.db,
                    "--timeout=%d" % timeout] + list(args), env=self.env,
                   timeout=timeout + 10)

    def ofctl(self, *args: str, input: Optional[str] = None,
              timeout: float = 60) -> str:
        return run([self.bin.ofctl] + self.ofctl_args + list(args),
                   env=self.env, input=input, timeout=timeout)

    def appctl(self, *args: str, timeout: float = 60) -> str:
        return run([self.bin.appctl, "-t", self.ctl,
                    "--timeout=%d" % timeout] + list(args), env=self.env,
                   timeout=timeout + 10)

    def log_tail(self, n: int = 15) -> str:
        lines = read_text(os.path.join(self.dir, "ovs-vswitchd.log"))
        return "\n".join(lines.rstrip("\n").split("\n")[-n:])

    def interfaces(self, columns: str = "name,ofport,error,statistics,"
                   "status,type") -> Dict[str, Dict[str, object]]:
        """The Interface table by name, columns decoded."""
        out = json.loads(self.vsctl(
            "-f", "json", "-d", "json", "--columns=" + columns, "list",
            "Interface"))
        cols = out["headings"]
        return {row[0]: {c: ovs_json_value(v) for c, v in zip(cols, row)}
                for row in out["data"]}

    def pmd_tids(self) -> List[int]:
        """Thread ids of ovs-vswitchd's PMD threads, read once (again
        after reset_pmd_tids())."""
        if self._pmd_tids is None:
            self._pmd_tids = []
            if self.vswitchd is None:
                return []
            task = "/proc/%d/task" % self.vswitchd.pid
            try:
                tids = os.listdir(task)
            except OSError:
                return []
            for tid in tids:
                if read_text("%s/%s/comm" % (task, tid)).startswith("pmd"):
                    self._pmd_tids.append(int(tid))
        return self._pmd_tids

    def reset_pmd_tids(self) -> None:
        self._pmd_tids = None

    def pmd_schedstat(self) -> Tuple[int, int]:
        """(ns on CPU, ns runnable but waiting) summed over the PMD
        threads: a busy-polling PMD alone on its core never waits."""
        run_ns = wait_ns = 0
        if self.vswitchd is None:
            return 0, 0
        for tid in self.pmd_tids():
            f = read_text("/proc/%d/task/%d/schedstat"
                          % (self.vswitchd.pid, tid)).split()
            if len(f) >= 2:
                run_ns += int(f[0])
                wait_ns += int(f[1])
        return run_ns, wait_ns

    # ------------------------------------------------------------ life
    def _spawn(self, name: str, cmd: List[str], in_netns: bool
               ) -> "subprocess.Popen[bytes]":
        if in_netns and self.netns:
            # "ip netns exec" execs the daemon: the pid is the daemon's.
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        with open(os.path.join(self.dir, name + ".out"), "w") as out:
            return subprocess.Popen(cmd, env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT,
                                    start_new_session=True,
                                    preexec_fn=die_with_parent)

    def start(self, settings: Sequence[str], dummy: bool = False,
              ovsdb_args: Sequence[str] = (),
              vswitchd_args: Sequence[str] = (),
              ovsdb_in_netns: bool = False) -> None:
        """Starts both daemons: a new database whose Open_vSwitch record
        gets SETTINGS ("other_config:pmd-cpu-mask=0x2", ...), then
        ovs-vswitchd.  A DPDK switch (SETTINGS say dpdk-init=true) is
        waited for until DPDK is initialised; a DUMMY one has OVS's dummy
        netdevs and datapath (--enable-dummy) and no DPDK, and needs
        neither root nor hugepages.  After a failure stop() undoes what
        was done.  A switch that is neither (SETTINGS without
        dpdk-init=true) has the system's ports only (the userspace
        datapath polls them from its main thread) and is not waited
        for."""
        os.makedirs(self.dir, exist_ok=True)
        if self.own_netns and self.netns and not self.netns_created:
            run(["ip", "netns", "add", self.netns])
            self.netns_created = True
            run(["ip", "netns", "exec", self.netns, "ip", "link", "set",
                 "lo", "up"])
        db = os.path.join(self.dir, "conf.db")
        if os.path.exists(db):          # a start again after a failed one
            os.unlink(db)
        run([self.bin.ovsdb_tool, "create", db, self.bin.schema])
        self.ovsdb = self._spawn("ovsdb-server", [
            self.bin.ovsdb_server, db, "--remote=punix:" + self.sock,
            "--unixctl=" + os.path.join(self.dir, "ovsdb-server.ctl"),
            "--log-file=" + os.path.join(self.dir, "ovsdb-server.log"),
            "-vconsole:off"] + list(ovsdb_args), ovsdb_in_netns)
        self._wait_for(self.sock, self.ovsdb, "ovsdb-server")
        self.vsctl("--no-wait", "init",
                   *(["--", "set", "Open_vSwitch", "."] + list(settings)
                     if settings else []))
        self.vswitchd = self._spawn("ovs-vswitchd", [
            self.bin.vswitchd, self.db, "--unixctl=" + self.ctl,
            "--log-file=" + os.path.join(self.dir, "ovs-vswitchd.log"),
            "-vconsole:off"] + (["--enable-dummy"] if dummy else [])
            + list(vswitchd_args), True)
        self._wait_for(self.ctl, self.vswitchd, "ovs-vswitchd")
        if not dummy and "other_config:dpdk-init=true" in settings:
            # In short waits: an EAL that fails aborts ovs-vswitchd, and
            # that should not cost the whole timeout.
            deadline = time.monotonic() + 120
            while True:
                try:
                    self.vsctl("wait-until", "Open_vSwitch", ".",
                               "dpdk_initialized=true", timeout=2)
                    break
                except RunError:
                    rc = self.vswitchd.poll()
                    if rc is not None:
                        why = "it exited with status %d" % rc
                    elif time.monotonic() > deadline:
                        why = "not within 120 s"
                    else:
                        continue
                    raise RunError(
                        "%s: ovs-vswitchd did not initialise DPDK (%s):\n%s"
                        % (self.label, why, self.log_tail()))
        self.alive()

    def _wait_for(self, path: str, p: "subprocess.Popen[bytes]",
                  what: str, timeout: float = 20) -> None:
        """Until daemon P has made its socket PATH."""
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            if p.poll() is not None:
                raise RunError("%s: %s exited:\n%s" % (
                    self.label, what, read_text(os.path.join(
                        self.dir, what + ".out"))[-2000:] or self.log_tail()))
            if time.monotonic() > deadline:
                raise RunError("%s: %s did not start (see %s)"
                               % (self.label, what, self.dir))
            time.sleep(0.05)

    def add_bridge(self, name: str, *settings: str) -> None:
        """A userspace (netdev) bridge; SETTINGS such as fail_mode=secure
        go to its Bridge record."""
        self.vsctl("add-br", name, "--", "set", "Bridge", name,
                   "datapath_type=netdev", *settings)

    def alive(self) -> None:
        if self.vswitchd is None or self.vswitchd.poll() is not None:
            raise RunError("%s: ovs-vswitchd exited:\n%s"
                           % (self.label, self.log_tail()))

    def pid(self) -> int:
        assert self.vswitchd is not None
        return self.vswitchd.pid

    def stop(self, fast: bool = False, grace: float = 30) -> None:
        """Stops both daemons (ours, by pid) and deletes the namespace it
        made.  fast: SIGTERM ovs-vswitchd at once instead of 'exit
        --cleanup' (which deletes the ports one datapath reconfiguration
        at a time), waiting up to GRACE seconds for that.  Raises
        subprocess.TimeoutExpired if ovs-vswitchd survives SIGKILL, after
        stopping the rest."""
        stuck = None
        p = self.vswitchd
        if p is not None and p.poll() is None:
            t0 = time.monotonic()
            if not fast:
                try:
                    self.appctl("exit", "--cleanup", timeout=grace)
                    p.wait(grace)
                except (RunError, subprocess.TimeoutExpired):
                    pass
            try:
                stop_process(p, grace=10)
            except subprocess.TimeoutExpired as e:
                stuck = e
            self.stop_s = time.monotonic() - t0
        if self.ovsdb is not None:
            stop_process(self.ovsdb)
        if self.netns_created:
            self.netns_created = False
            run(["ip", "netns", "delete", str(self.netns)])
        if stuck is not None:
            raise stuck
