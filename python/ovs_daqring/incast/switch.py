"""daq-incast's switch: the sandbox (ovs_daqring.sandbox) with the hosts'
ports, its counters, and the daqring programming of one mode."""

import json
import os
import re
import shutil
import sys
import time
from typing import Dict, List, Optional, Set

from .. import hugepages, tool_path
from ..daqctl.model import FLOW_BUCKETS_DEFAULT
from ..process import Cleanup, RunError, run
from ..sandbox import Sandbox, dpdk_settings
from .config import Config
from .topology import Host, Plan


class ModeUnavailable(Exception):
    """The switch cannot run a mode (e.g. no daqring support)."""


class Switch(Sandbox):
    """Everything lives under `workdir`; ovs-vswitchd runs in the plan's
    switch namespace (its tap devices stay there) and its DPDK memory is
    --in-memory with a --file-prefix of its own, so another ovs-vswitchd
    on the machine is never touched."""

    def __init__(self, cfg: Config, plan: Plan, workdir: str,
                 cleanup: Cleanup) -> None:
        super().__init__(cfg.binaries, workdir, netns=plan.switch_ns)
        self.cfg = cfg
        self.plan = plan
        self.bridge = "br0"              # in our own namespace
        self.cleanup = cleanup
        self.hugepages_note = ""

    # ------------------------------------------------------------ life
    def start(self) -> None:   # type: ignore[override]
        os.makedirs(self.dir, exist_ok=True)
        self._dpdk_memory()
        self.cleanup.push("stop ovs-vswitchd and ovsdb-server",
                          lambda: self.stop(grace=20))
        try:
            self._start_dpdk()
        except RunError as e:
            # The hugepages were free when reserve() looked, but another
            # DPDK process can take them before our EAL maps them (EAL:
            # "Not enough memory available").  Unless they were required,
            # fall back to --no-huge, as when there were none to begin
            # with, and say so.
            cfg = self.cfg
            if not cfg.use_hugepages or cfg.hugepages_mode == "require":
                raise
            self.stop(fast=True)
            first = str(e).strip().splitlines()
            cfg.use_hugepages = False
            cfg.notes.append(
                "DPDK could not start with the hugepages reserved for the "
                "run (taken by another process?): %s; DPDK runs with "
                "--no-huge -m %d (slower)"
                % (first[-1] if first else "no reason given",
                   cfg.socket_mem_mb))
            try:
                self._start_dpdk()
            except RunError as e2:
                raise RunError("%s\nand with --no-huge: %s" % (e, e2))
        self.add_bridge(self.bridge)

    def _start_dpdk(self) -> None:
        memory, extra = hugepages.dpdk_memory_config(
            self.cfg.use_hugepages, str(self.cfg.socket_mem_mb),
            self.cfg.socket_mem_mb, self.plan.tag, self.cleanup)
        settings = dpdk_settings(
            "0x%x" % sum(1 << c for c in self.cfg.pmd_cpus), memory,
            "--no-pci " + extra)
        super().start(settings)

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

    # ------------------------------------------------------------ ports
    def add_ports(self, hosts: List[Host],
                  bridge: Optional[str] = None) -> None:
        """The hosts' ports, on BRIDGE (default: the switch's)."""
        args: List[str] = []
        for h in hosts:
            args += ["--", "add-port", bridge or self.bridge, h.port_name,
                     "--", "set",
                     "Interface", h.port_name, "type=dpdk",
                     "options:dpdk-devargs=%s" % h.devargs(),
                     "ofport_request=%d" % h.ofport]
            if h.qpairs > 1:
                # Every socket of the fanout group must be polled.
                args.append("options:n_rxq=%d" % h.qpairs)
        self.vsctl(*args, timeout=120)
        self._check_ports([h.port_name for h in hosts])

    def pin_macs(self, hosts: List[Host]) -> None:
        """Static MAC entries (fdb/add) for every host's port.  A switch
        learns a host's address from what the host sends through NORMAL,
        ARP above all; here ARP entries are static and, in daqring mode,
        the ROS send only into the daqring flows, so the bridge never
        learned them (a daqring-only run: fdb/show listed the DCM alone)
        and flooded every request and ACK of the DCM to all ROS ports,
        one sendto() per port on the PMD.  tests/soak.py pins them for the
        same reason."""
        for h in hosts:
            self.appctl("fdb/add", self.bridge, h.port_name, "0", h.mac)

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
    return run([sys.executable, daqctl_path(), "--db", sw.db,
                "--bridge", sw.bridge, "--ofctl", sw.bin.ofctl,
                "--timeout", "%d" % timeout] + list(args),
               env=sw.env, timeout=timeout + 30)


def program_daqrings(sw: Switch, plan: Plan, ring_size: int, max_burst: int,
                     poll_us: int, max_rate: int = 0,
                     frame_overhead: int = 24,
                     flow_buckets: int = FLOW_BUCKETS_DEFAULT,
                     max_burst_bytes: int = 0,
                     ring_sizes: Optional[Dict[int, int]] = None,
                     egress_max_rate: int = 0,
                     egress_max_burst_bytes: int = 0
                     ) -> Dict[str, int]:
    """Per DCM a daqring, priority=100 ip,nw_dst=DCM -> ring and
    priority=101 in_port=ring -> DCM port, through ovs-daqctl (one OVSDB
    transaction, one OpenFlow bundle); NORMAL (priority 0) stays for
    everything else.  RING_SIZES: per DCM index a ring size other than
    RING_SIZE.  EGRESS_MAX_RATE: the rings are bound to their DCM's port
    (no priority=101 flow) and the rings of one port share that rate
    (egress-max-rate, bounded by EGRESS_MAX_BURST_BYTES if not 0).
    Raises ModeUnavailable if the switch has no daqring support or
    refuses the map."""
    types = sw.iface_types()
    if "daqring" not in types:
        raise ModeUnavailable(
            "this ovs-vswitchd does not support type=daqring (it offers: "
            "%s); build the patched tree or pass --ovs-build"
            % ", ".join(sorted(t for t in types if t)))
    dcms: List[Dict[str, object]] = [
        {"name": plan.ring_name(d), "ip": d.ips[0], "egress": d.port_name,
         "ofport": plan.ring_ofport(d)} for d in plan.dcms]
    for d, entry in zip(plan.dcms, dcms):
        if ring_sizes and ring_sizes.get(d.index, ring_size) != ring_size:
            entry["ring-size"] = ring_sizes[d.index]
    defaults: Dict[str, object] = {"ring-size": ring_size,
                                   "max-burst": max_burst,
                                   "flow-buckets": flow_buckets}
    if max_rate:
        # Byte shaping: ovs-daqctl writes a rate as the ring's max-rate.
        defaults.update({"rate": "%dbit" % max_rate,
                         "frame-overhead": frame_overhead})
        if max_burst_bytes:
            defaults["max-burst-bytes"] = max_burst_bytes
    else:
        defaults["poll-interval"] = poll_us
    if egress_max_rate:
        defaults.update({"steering": "bound",
                         "egress-max-rate": "%dbit" % egress_max_rate})
        if egress_max_burst_bytes:
            defaults["egress-max-burst-bytes"] = egress_max_burst_bytes
    doc = {"defaults": defaults, "dcms": dcms}
    path = os.path.join(sw.dir, "dcm-map.json")
    with open(path, "w") as f:
        # JSON is YAML: ovs-daqctl reads it as a map.
        json.dump(doc, f, indent=1)
    try:
        daqctl(sw, "apply", path)
        sw._check_ports([plan.ring_name(d) for d in plan.dcms])
    except (ModeUnavailable, RunError) as e:
        why = str(e)
        try:
            remove_daqrings(sw, plan)
        except RunError as e2:
            why += "; and removing them failed: %s" % e2
        raise ModeUnavailable(why)
    return {plan.ring_name(d): plan.ring_ofport(d) for d in plan.dcms}


def set_tx_retry_budget(sw: Switch, ports: List[str], us: int) -> None:
    """options:tx-retry-budget-us=US on PORTS (0: removed, stock OVS's
    drop when a port is full).  A port in use takes a new budget at once;
    one the switch refuses keeps its old one and logs a warning, so the
    value in force is read back from dpctl/show and checked."""
    args: List[str] = []
    for port in ports:
        if us:
            args += ["--", "set", "Interface", port,
                     "options:tx-retry-budget-us=%d" % us]
        else:
            args += ["--", "remove", "Interface", port, "options",
                     "tx-retry-budget-us"]
    sw.vsctl(*args)
    shown = sw.appctl("dpctl/show")
    for port in ports:
        line = next((x for x in shown.splitlines()
                     if re.search(r": %s( |$)" % re.escape(port), x)), "")
        got = re.search(r"tx_retry_budget_us=(\d+)", line)
        if (int(got.group(1)) if got else 0) != us:
            raise RunError("%s: tx-retry-budget-us %d not in force (%s)"
                           % (port, us, line.strip() or "no such port"))


def remove_daqrings(sw: Switch, plan: Plan) -> None:
    """Removes every daqring and DCM flow that ovs-daqctl installed."""
    daqctl(sw, "clear")
