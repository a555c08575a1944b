"""Runs the modes on one topology and writes the report."""

import atexit
import datetime
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from . import VERSION
from .config import Config
from .limits import DEEP_FIFO, SWEEP_PARAMS
from .options import build_parser
from .units import format_rate
from .validation import validate
from .stats import (SCHEMA, busy_time, counter_delta, cpu_per_byte,
                    parse_proc_steal,
                    dcm_figures, format_shared, format_table,
                    ideal_collection_time, ideal_goodput, link_split,
                    link_words, others_latency, parse_proc_stat,
                    payload_efficiency, summarize_mode, summarize_times,
                    validate_results)
from ..daqctl.model import ring_drain_s
from .. import hugepages
from ..hosts import ConfigError, probe_host
from ..process import (Cleanup, Interrupted, RunError, die_with_parent,
                       install_signal_handlers, run, stale_namespaces,
                       stop_process)
from .switch import (STATS_INTERVAL, ModeUnavailable, Switch,
                     program_daqrings, remove_daqrings, set_tx_retry_budget)
from .topology import DEEP_BRIDGE, ROS_PORT, Plan, Topology, make_plan

AGENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "agents.py")
Snapshot = Dict[str, Dict[str, Dict[str, int]]]


class ModeFailed(Exception):
    """A mode started but could not finish (an agent failed)."""


class Progress:
    """One line on stderr, rewritten with a carriage return."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.width = 0

    def show(self, text: str) -> None:
        if self.enabled:
            sys.stderr.write("\r" + text.ljust(self.width))
            sys.stderr.flush()
            self.width = len(text)

    def done(self, text: str) -> None:
        if self.enabled:
            self.show(text)
            sys.stderr.write("\n")
            self.width = 0
        else:
            sys.stderr.write(text + "\n")


def fairness_words(cfg: Config) -> str:
    """The daqrings' flow fairness, for the plan line."""
    rate = cfg.daqring_rate_bps             # infinite: unshaped
    byte_shaping = bool(cfg.max_rate_bps)
    n = cfg.flow_buckets_for(cfg.ring_size, rate, byte_shaping)
    what = "flow-buckets %d" % n if n else "flow-buckets 0, a FIFO"
    if cfg.flow_buckets is not None:
        return what
    if rate == float("inf"):
        return what + " (auto: unshaped)"
    return what + " (auto: a full ring drains in %.0f ms)" % (
        1e3 * ring_drain_s(cfg.ring_size, rate,
                           cfg.ring_frame_bits(byte_shaping)))


def mode_runs(cfg: Config) -> List[Tuple[str, Dict[str, Any], str]]:
    """(mode, parameters, label) of every run, in order."""
    def params(mode: str, **over: int) -> Dict[str, Any]:
        if mode == "credits":
            return {"credits": over.get("credits", cfg.credits)}
        if mode == "daqring":
            p: Dict[str, Any] = {
                "ring_size": over.get("ring-size", cfg.ring_size),
                "max_burst": over.get("max-burst", cfg.max_burst),
                "poll_interval_us": over.get("poll-interval",
                                             cfg.poll_interval_us),
                # A swept poll-interval means packet shaping.
                "max_rate_bps": (0 if "poll-interval" in over
                                 else cfg.max_rate_bps),
                "frame_overhead": cfg.link_overhead}
            if p["max_rate_bps"]:
                p["rate_bps"] = p["max_rate_bps"]
                p["max_burst_bytes"] = cfg.max_burst_bytes
            elif p["poll_interval_us"]:
                p["rate_bps"] = (p["max_burst"] * 1518 * 8
                                 / (p["poll_interval_us"] * 1e-6))
            else:
                p["rate_bps"] = 0
            p["flow_buckets"] = cfg.flow_buckets_for(
                p["ring_size"], p["rate_bps"], bool(p["max_rate_bps"]))
            if cfg.tx_retry_budget_us:
                p["tx_retry_budget_us"] = cfg.tx_retry_budget_us
            return p
        return {}

    runs = []
    swept = SWEEP_PARAMS[cfg.sweep_param][0] if cfg.sweep_param else None
    for mode in cfg.modes:
        if mode == DEEP_FIFO:
            for spec in cfg.deep_limits:
                runs.append((mode, {"deep_limit": spec},
                             deep_label(spec, cfg.deep_limits)))
            continue
        if mode != swept:
            runs.append((mode, params(mode), mode))
            continue
        assert cfg.sweep_param is not None
        for v in cfg.sweep_values:
            runs.append((mode, params(mode, **{cfg.sweep_param: v}),
                         "%s %s=%d" % (mode, cfg.sweep_param, v)))
    # The deep-FIFO peer's runs first: its bridge takes the veths that
    # the DPDK switch's af_packet ports would otherwise read, and the
    # switch starts (once) after them.
    runs.sort(key=lambda r: r[0] != DEEP_FIFO)
    if cfg.dcms_per_host > 1:
        for _, p, _ in runs:
            if "ring_size" in p:
                share_ring(cfg, p)
    if not cfg.hog:
        return runs
    # Every run twice: without the hog, then with it.
    return [(m, dict(p, hog=hog), label + (" +hog" if hog else ""))
            for m, p, label in runs for hog in (False, True)]


def deep_label(spec: str, specs: Sequence[str]) -> str:
    """The label of the deep-FIFO run with queue limit SPEC."""
    if specs == ["auto"]:
        return DEEP_FIFO
    return "%s limit=%s" % (DEEP_FIFO, spec)


def share_ring(cfg: Config, p: Dict[str, Any]) -> None:
    """The daqring parameters P of one of the DCMs that share a link,
    with the fabric's sharing policy (incast/fabric.py, ring_params():
    'static', each of the K rings gets the link's ring rate / K and
    max-burst / K; 'shared', each the whole rate, the K rings bound to
    the link's port sharing it as egress-max-rate)."""
    from .fabric.runner import ring_params
    shared = ring_params(cfg, "daqring")
    for k in ("max_burst", "max_rate_bps", "rate_bps", "flow_buckets",
              "egress_max_rate_bps", "egress_max_burst_bytes", "sharing"):
        p[k] = shared[k]


class Runner:
    def __init__(self, cfg: Config, plan: Plan, cleanup: Cleanup) -> None:
        self.cfg = cfg
        self.plan = plan
        self.cleanup = cleanup
        self.procs: List["subprocess.Popen[bytes]"] = []
        self.agent_ns: Dict[int, str] = {}
        self.modes: List[Dict[str, Any]] = []
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.t0 = time.monotonic()
        self.progress = Progress(cfg.progress)
        self.last_traffic = 0.0
        self.workdir = ""
        self.topo: Optional[Topology] = None
        # Each host namespace's TCP congestion control, as read back.
        self.hosts_cc: Dict[str, str] = {}
        self.switch: Optional[Switch] = None
        # A deep-fifo run's bridge is up (its counters, not the switch's).
        self.bridge = False
        ideal_bps = ideal_goodput(cfg.link_rate_bps, cfg.fragment_size,
                                  cfg.mss, cfg.link_overhead)
        self.ideal = {
            "efficiency": payload_efficiency(cfg.fragment_size, cfg.mss,
                                             cfg.link_overhead),
            "goodput_bps": ideal_bps,
            "collection_time_s": ideal_collection_time(
                cfg.link_rate_bps, cfg.ros, cfg.fragment_size, cfg.mss,
                cfg.link_overhead),
            "event_bytes": cfg.ros * cfg.fragment_size,
        }

    # ------------------------------------------------------------ setup
    def setup(self) -> None:
        cfg = self.cfg
        self.workdir = tempfile.mkdtemp(prefix="daq-incast.%s." %
                                        self.plan.tag)
        self.cleanup.push("remove " + self.workdir,
                          lambda: shutil.rmtree(self.workdir, True))
        if cfg.log_dir:
            self.cleanup.push("save logs", self._save_logs)
        self.progress.show("creating %d namespaces" % len(self.plan.hosts))
        self.topo = Topology(self.plan, self.cleanup)
        self.topo.create(cfg.link_rate_bps, cfg.link_burst, cfg.link_limit,
                         cfg.link_overhead, cfg.rps_cpus, cfg.rps_kinds,
                         cfg.congestion_control)
        self.hosts_cc = self.topo.congestion_control()
        if DEEP_FIFO not in cfg.modes:
            self.start_switch()
        self.cleanup.push("stop agents", self._stop_agents)
        self._start_ros()

    def start_switch(self) -> None:
        """The DPDK switch with every host's port, before the first run of
        a mode other than deep-fifo (whose runs come first)."""
        assert self.topo is not None and not self.bridge
        self.progress.show("starting ovs-vswitchd (DPDK)")
        self.switch = Switch(self.cfg, self.plan, self.workdir, self.cleanup)
        self.switch.start()
        self.progress.show("adding %d DPDK af_packet ports"
                           % len(self.plan.hosts))
        try:
            self.switch.add_ports(self.plan.hosts)
        except ModeUnavailable as e:
            raise RunError("ports failed: %s\n%s"
                           % (e, self.switch.log_tail()))
        self.switch.pin_macs(self.plan.hosts)

    def _save_logs(self) -> None:
        assert self.cfg.log_dir
        if self.switch:
            self.switch.save_logs(self.cfg.log_dir)
        for name in os.listdir(self.workdir):
            if name.startswith("agent-"):
                shutil.copy(os.path.join(self.workdir, name),
                            self.cfg.log_dir)

    def _stop_agents(self) -> None:
        for p in self.procs:
            if p.stdin and not p.stdin.closed:
                try:
                    p.stdin.close()
                except OSError:
                    pass
        for p in self.procs:
            stop_process(p, grace=3)

    def _agent(self, ns: str, args: List[str], log: str
               ) -> "subprocess.Popen[bytes]":
        with open(os.path.join(self.workdir, "agent-%s.log" % log),
                  "ab") as err:
            p = subprocess.Popen(
                ["ip", "netns", "exec", ns, sys.executable, AGENTS] + args,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                start_new_session=True, preexec_fn=die_with_parent)
        self.procs.append(p)
        self.agent_ns[p.pid] = ns
        return p

    def _read_lines(self, procs: Sequence["subprocess.Popen[bytes]"],
                    until: str, timeout: float) -> None:
        """Wait until every process printed a line starting with `until`;
        raise ModeFailed on ERROR or exit."""
        pending: Dict[int, "subprocess.Popen[bytes]"] = {}
        for p in procs:
            assert p.stdout is not None
            pending[p.stdout.fileno()] = p
        bufs = {fd: b"" for fd in pending}
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            for fd in pending:
                sel.register(fd, selectors.EVENT_READ)
            while pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ModeFailed("agents not %s after %g s"
                                     % (until, timeout))
                for key, _ in sel.select(left):
                    fd = key.fd
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        raise ModeFailed("agent in %s exited (see its log)"
                                         % self.agent_ns[pending[fd].pid])
                    bufs[fd] += chunk
                    for line in bufs[fd].split(b"\n")[:-1]:
                        text = line.decode()
                        if text.startswith("ERROR"):
                            raise ModeFailed(text[6:])
                        if text.startswith(until):
                            sel.unregister(fd)
                            del pending[fd]
                            break
                    bufs[fd] = bufs[fd].rsplit(b"\n", 1)[-1]

    def _start_ros(self) -> None:
        cfg = self.cfg
        size = cfg.fragment_size * max(1, cfg.hog)
        biggest = {"fixed": size, "uniform": size * 3 // 2 + 1,
                   "exponential": size * 4}[cfg.fragment_dist]
        cpus = ",".join(map(str, cfg.agent_cpus))
        procs = [self._agent(h.ns, ["ros", ",".join(h.ips), str(ROS_PORT),
                                    str(biggest), cpus,
                                    "1" if cfg.tcp_nodelay else "0"], h.ns)
                 for h in self.plan.ros_hosts]
        self.progress.show("starting %d ROS agents" % len(procs))
        try:
            self._read_lines(procs, "READY", 60)
        except ModeFailed as e:
            raise RunError("ROS agents: %s" % e)

    # ------------------------------------------------------------ TCP
    def host_namespaces(self) -> List[str]:
        """Every emulated host's network namespace."""
        return [h.ns for h in self.plan.hosts]

    def forget_tcp_metrics(self) -> None:
        """Empties every host's TCP metrics cache before a mode's DCMs
        connect.  Linux saves a closed connection's ssthresh, RTT and
        cwnd per destination and starts the next connection to it from
        them: the ROS hosts cached ssthresh 1-3 segments for every DCM
        after a stock run's losses, so the mode after it started
        every fragment in congestion avoidance.  A mode's result must
        not depend on the modes that ran before it; within a mode Linux's
        default (the cache on) holds."""
        for ns in self.host_namespaces():
            run(["ip", "-n", ns, "tcp_metrics", "flush", "all"])

    # ------------------------------------------------------------ counters
    def _snapshot(self) -> Snapshot:
        assert self.topo
        if self.bridge:
            # The kernel's counters are current at once.
            return {"ports": {},
                    "qdisc": self.topo.qdisc_counters(every=True),
                    "tcp": self.topo.tcp_counters(),
                    "links": self.topo.link_counters(every=True)}
        assert self.switch
        wait = self.last_traffic + STATS_INTERVAL - time.monotonic()
        if wait > 0:
            self.progress.show("waiting %.1f s for switch counters" % wait)
            time.sleep(wait)
        return {"ports": self.switch.stats(),
                "qdisc": self.topo.qdisc_counters(),
                "tcp": self.topo.tcp_counters(),
                "links": self.topo.link_counters()}

    def _bridge_drops(self, before: Snapshot, after: Snapshot
                      ) -> Dict[str, Any]:
        """The deep-FIFO peer's drops, counted like the switch's:
        switch_total is what the bridge's ports (the switch-side veths)
        and the bridge itself dropped, qdisc what the egress FIFOs
        dropped; per port and qdisc as for the switch."""
        qdiscs = {v: counter_delta(before["qdisc"].get(v, {}), st)
                  for v, st in after["qdisc"].items()}
        links = {v: counter_delta(before["links"].get(v, {}), st)
                 for v, st in after["links"].items()}
        hosts = {h.port_name for h in self.plan.hosts} | {DEEP_BRIDGE}
        ports: Dict[str, Dict[str, int]] = {}
        total = 0
        for name, d in links.items():
            if name not in hosts:
                continue
            n = d.get("rx_dropped", 0) + d.get("tx_dropped", 0)
            total += n
            keep = {k: v for k, v in d.items() if v and "drop" in k}
            if name in {h.port_name for h in self.plan.dcm_hosts}:
                keep["tx_packets"] = d.get("tx_packets", 0)
            if keep:
                ports[name] = keep
        return {"switch_total": total, "daqring": 0,
                "qdisc": sum(q.get("drops", 0) for q in qdiscs.values()),
                "af_packet_rx": 0, "ros_tx_per_dcm_rx": 0.0,
                "where": "Linux bridge %s and its ports' qdiscs"
                % DEEP_BRIDGE,
                "ports": ports, "qdiscs": qdiscs, "hosts": links}

    def _drops(self, before: Snapshot, after: Snapshot) -> Dict[str, Any]:
        if self.bridge:
            return self._bridge_drops(before, after)
        rings = {self.plan.ring_name(d) for d in self.plan.dcms}
        hosts = {h.port_name for h in self.plan.hosts}
        dcm_ports = {d.port_name for d in self.plan.dcm_hosts}
        ports: Dict[str, Dict[str, int]] = {}
        total = ring_drops = 0
        for name, st in after["ports"].items():
            if name not in rings and name not in hosts:
                continue
            delta = counter_delta(before["ports"].get(name, {}), st)
            if name in rings:
                ring_drops += delta.get("tx_dropped", 0)
            else:
                total += sum(delta.get(k, 0) for k in
                             ("rx_dropped", "tx_dropped", "rx_missed_errors"))
            keep = {k: v for k, v in delta.items()
                    if v and ("drop" in k or "error" in k or "fail" in k)}
            if name in rings or name in dcm_ports:
                for k in ("tx_packets", "rx_packets", "tx_dropped"):
                    keep[k] = delta.get(k, 0)
            if name in dcm_ports:
                # --tx-retry-budget-us: how often and how long the port
                # made the PMD wait instead of dropping.
                for k in ("ovs_tx_retries", "ovs_tx_retry_us"):
                    if k in st:
                        keep[k] = delta.get(k, 0)
            if keep:
                ports[name] = keep
        qdiscs = {v: counter_delta(before["qdisc"].get(v, {}), st)
                  for v, st in after["qdisc"].items()}
        links = {v: counter_delta(before["links"].get(v, {}), st)
                 for v, st in after["links"].items()}
        # Frames the host sent that its switch port never read: the
        # kernel dropped them because the af_packet socket's RX ring was
        # full (no counter shows it).  Counted as switch drops.
        socket = {}
        for h in self.plan.hosts:
            sent = links.get(h.port_name, {}).get("rx_packets")
            read = counter_delta(before["ports"].get(h.port_name, {}),
                                 after["ports"].get(h.port_name, {})
                                 ).get("rx_packets")
            if sent is not None and read is not None and sent > read:
                socket[h.port_name] = sent - read
        total += sum(socket.values())

        # Frames the ROS ports sent per frame the DCM ports received: the
        # DCMs' requests and ACKs go to one ROS each, so 1 unless the
        # bridge floods them.
        def delta(names: Set[str], key: str) -> int:
            return sum(counter_delta(before["ports"].get(n, {}),
                                     after["ports"].get(n, {})).get(key, 0)
                       for n in names)
        dcm_rx = delta(dcm_ports, "rx_packets")
        ros_tx = delta(hosts - dcm_ports, "tx_packets")
        for name, n in socket.items():
            ports.setdefault(name, {})["af_packet_rx_ring_drops"] = n
        return {"switch_total": total, "daqring": ring_drops,
                "qdisc": sum(q["drops"] for q in qdiscs.values()),
                "af_packet_rx": sum(socket.values()),
                "ros_tx_per_dcm_rx": ros_tx / dcm_rx if dcm_rx else 0.0,
                "ports": ports, "qdiscs": qdiscs, "hosts": links}

    def _tcp(self, before: Snapshot, after: Snapshot) -> Dict[str, Any]:
        per = {ns: counter_delta(before["tcp"].get(ns, {}), st)
               for ns, st in after["tcp"].items()}
        by_ns = {ns: {"retrans_segs": d.get("Tcp.RetransSegs", 0),
                      "rto_timeouts": d.get("TcpExt.TCPTimeouts", 0)}
                 for ns, d in per.items()}
        return {
            "retrans_segs": sum(v["retrans_segs"] for v in by_ns.values()),
            "rto_timeouts": sum(v["rto_timeouts"] for v in by_ns.values()),
            "loss_probes": sum(d.get("TcpExt.TCPLossProbes", 0)
                               for d in per.values()),
            "by_namespace": {ns: v for ns, v in by_ns.items()
                             if any(v.values())},
        }

    # ------------------------------------------------------------ modes
    def _collect(self, label: str, credits: int,
                 with_hog: bool = False) -> Dict[str, Any]:
        """Runs every DCM's events (WITH_HOG: DCM 0 is --hog's hog)."""
        cfg = self.cfg
        procs = []
        for d in self.plan.dcms:
            spec = {"ip": d.ips[0], "ros": self.plan.ros_ips,
                    "port": ROS_PORT, "credits": credits,
                    "seed": cfg.seed + d.index,
                    "fragment_size": cfg.fragment_of(d.index, with_hog),
                    "fragment_dist": cfg.fragment_dist,
                    "events": cfg.events, "pus": cfg.pus,
                    "warmup_events": cfg.warmup_events,
                    "event_gap_ms": cfg.event_gap_ms,
                    "event_deadline_s": cfg.event_deadline_s,
                    "nodelay": cfg.tcp_nodelay,
                    "request_yield": cfg.request_yield,
                    "pipeline": cfg.pipeline,
                    "cpus": ",".join(map(str, cfg.agent_cpus))}
            procs.append(self._agent(d.ns, ["dcm", json.dumps(spec)], d.ns))
        hog = None
        try:
            self._read_lines(procs, "READY", 60)
            if cfg.preempt_us[0]:
                hog = self._hog()
            sched0 = self.pmd_schedstat()
            text0 = read_proc_stat_text()
            stat0, steal0 = parse_proc_stat(text0), parse_proc_steal(text0)
            for p in procs:
                assert p.stdin
                p.stdin.write(b"GO\n")
                p.stdin.flush()
            self.collecting(label, True)
            got = self._events(label, procs)
            text1 = read_proc_stat_text()
            stat1, steal1 = parse_proc_stat(text1), parse_proc_steal(text1)
            sched1 = self.pmd_schedstat()
            got["proc_stat"] = (stat0, stat1)
            got["steal"] = {k: v - steal0[k] for k, v in steal1.items()
                            if k in steal0}
            # What the PMD got while events were collected (not while
            # the agents connected and warmed up).
            got["sched"] = (sched1[0] - sched0[0], sched1[1] - sched0[1])
            return got
        finally:
            self.collecting(label, False)
            self.last_traffic = time.monotonic()
            for p in procs + ([hog] if hog else []):
                stop_process(p, grace=3)
                self.procs.remove(p)

    def collecting(self, label: str, started: bool) -> None:
        """Called when the DCMs were told to go (STARTED) and when the
        collection ended, however (a subclass acts during the events)."""

    def _hog(self) -> "subprocess.Popen[bytes]":
        """The --pmd-preempt thread on the PMD's core (root namespace)."""
        busy, period = self.cfg.preempt_us
        with open(os.path.join(self.workdir, "agent-hog.log"), "ab") as err:
            p = subprocess.Popen(
                [sys.executable, AGENTS, "hog", str(self.cfg.pmd_cpus[0]),
                 str(busy), str(period)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                start_new_session=True, preexec_fn=die_with_parent)
        self.procs.append(p)
        self.agent_ns[p.pid] = "(root namespace)"
        self._read_lines([p], "READY", 10)
        return p

    def _events(self, label: str, procs: List["subprocess.Popen[bytes]"]
                ) -> Dict[str, Any]:
        """Per-event collection times, bytes and first-byte times of all
        DCMs, and their busy intervals added up (each DCM has its own
        link)."""
        cfg = self.cfg
        fds = {p.stdout.fileno(): i                 # type: ignore
               for i, p in enumerate(procs)}
        bufs = {fd: b"" for fd in fds}
        results: Dict[int, Dict[str, List[int]]] = {}
        count, slow, t0 = 0, 0, time.monotonic()
        total = cfg.events * len(procs)
        last_ms = 0.0
        with selectors.DefaultSelector() as sel:
            for fd in fds:
                sel.register(fd, selectors.EVENT_READ)
            while len(results) < len(procs):
                ready = sel.select(cfg.event_deadline_s + 10)
                if not ready:
                    raise ModeFailed("no DCM progress for %g s"
                                     % (cfg.event_deadline_s + 10))
                for key, _ in ready:
                    chunk = os.read(key.fd, 1 << 20)
                    if not chunk:
                        sel.unregister(key.fd)
                        if fds[key.fd] not in results:
                            raise ModeFailed("DCM %d exited early"
                                             % fds[key.fd])
                        continue
                    bufs[key.fd] += chunk
                    *lines, bufs[key.fd] = bufs[key.fd].split(b"\n")
                    for raw in lines:
                        text = raw.decode()
                        if text.startswith("EV "):
                            ns = int(text.split()[2])
                            count += 1
                            last_ms = ns / 1e6
                            slow += ns >= cfg.rto_threshold_s * 1e9
                        elif text.startswith("DONE "):
                            results[fds[key.fd]] = json.loads(text[5:])
                        elif text.startswith("ERROR"):
                            raise ModeFailed("DCM %d: %s"
                                             % (fds[key.fd], text[6:]))
                self.progress.show(
                    "[%s] event %d/%d  last %.1f ms  timeouts %d  %.0f s"
                    % (label, count, total, last_ms, slow,
                       time.monotonic() - t0))
        times: List[float] = []
        nbytes: List[int] = []
        first: List[float] = []
        ros_read: List[float] = []
        ros_sent: List[float] = []
        # Per event with the ROS' stamps and the kernel's receive times:
        # its transfer (from the first ROS' send to its last frame's
        # arrival at the DCM host), its bytes, and the DCM process' lag
        # behind its last frame.
        transfer: List[float] = []
        transfer_bytes: List[int] = []
        read_lag: List[float] = []
        # Per DCM (each has its own link) the union of its events'
        # transfers: with several processing units the events overlap.
        link_time = 0.0
        busy = 0.0
        # Every event of every DCM (from its DCM's GO): what the goodput
        # of DCMs that share a link or a fabric is measured over.
        spans_all: List[Tuple[float, float]] = []
        # Per DCM its times, bytes and absolute starts; per DCM host (an
        # access link) the union of its DCMs' events.
        per_dcm: List[Dict[str, Any]] = []
        link_spans: Dict[str, List[Tuple[float, float]]] = {}
        for i in sorted(results):
            r = results[i]
            go = r.get("t_go_ns", 0) / 1e9
            starts = [go + s / 1e9 for s in r["start_ns"]]
            dtimes = [t / 1e9 for t in r["times_ns"]]
            per_dcm.append({"times": dtimes, "bytes": list(r["bytes"]),
                            "starts": starts})
            link_spans.setdefault(self.plan.dcms[i].ns, []).extend(
                (a, a + t) for a, t in zip(starts, dtimes))
            times += [t / 1e9 for t in r["times_ns"]]
            nbytes += r["bytes"]
            first += [t / 1e9 for t in r["first_byte_ns"]]
            # 0: no fragment of the event carried the ROS' stamps.
            ros_read += [t / 1e9 for t in r.get("ros_read_ns", []) if t]
            ros_sent += [t / 1e9 for t in r.get("ros_sent_ns", []) if t]
            spans = []
            for s, a, z, t, b in zip(r["start_ns"],
                                     r.get("ros_sent_ns", []),
                                     r.get("arrival_last_ns", []),
                                     r["times_ns"], r["bytes"]):
                if a and z > a:
                    transfer.append((z - a) / 1e9)
                    transfer_bytes.append(b)
                    read_lag.append(max(0, t - z) / 1e9)
                    spans.append(((s + a) / 1e9, (s + z) / 1e9))
            link_time += busy_time(spans)
            mine = [(s / 1e9, (s + t) / 1e9) for s, t in
                    zip(r["start_ns"], r["times_ns"])]
            busy += busy_time(mine)
            spans_all += mine
        return {"times": times, "bytes": nbytes, "first_byte": first,
                "ros_read": ros_read, "ros_sent": ros_sent, "busy": busy,
                "transfer": transfer, "transfer_bytes": transfer_bytes,
                "read_lag": read_lag, "link_time": link_time,
                "spans_all": spans_all, "per_dcm": per_dcm,
                "link_busy": sum(busy_time(v)
                                 for v in link_spans.values())}

    def pmd_schedstat(self) -> Tuple[int, int]:
        """The PMD threads' schedstat ((0, 0) without a DPDK switch)."""
        return self.switch.pmd_schedstat() if self.switch else (0, 0)

    def run_mode(self, mode: str, params: Dict[str, Any], label: str
                 ) -> Dict[str, Any]:
        result: Dict[str, Any] = {"mode": mode, "label": label,
                                  "status": "ok", "error": None,
                                  "params": params}
        t0 = time.monotonic()
        if self.switch is None and mode != DEEP_FIFO \
                and self.cfg.topology == "switch":
            self.start_switch()
        self.progress.show("[%s] programming the %s" % (
            label, "bridge" if mode == DEEP_FIFO else "switch"))
        try:
            self.program(mode, params)
        except ModeUnavailable as e:
            result.update(status="error", error=str(e))
            return result
        try:
            self.forget_tcp_metrics()
            before = self._snapshot()
            got = self._collect(label, params.get("credits", 0),
                                bool(params.get("hog")))
            after = self._snapshot()
            status = self.ring_status(mode)
            if status is not None:
                result["daqring_status"] = status
        except ModeFailed as e:
            result.update(status="error", error=str(e))
            return result
        finally:
            self.unprogram(mode)
        times, nbytes = got["times"], got["bytes"]
        # DCMs that share a link: goodput of the links, over the time
        # each carried events of any of its DCMs.
        shared = self.cfg.topology == "switch" and self.cfg.dcms_per_host > 1
        result.update(summarize_mode(times, nbytes,
                                     self.ideal["goodput_bps"],
                                     self.cfg.rto_threshold_s,
                                     busy=(got["link_busy"] if shared
                                           else got["busy"]),
                                     first_byte=got["first_byte"]))
        self._shared_figures(result, got, shared, bool(params.get("hog")))
        stat0, stat1 = got["proc_stat"]
        result["cpu"] = cpu_per_byte(stat0, stat1,
                                     os.sysconf("SC_CLK_TCK"), sum(nbytes))
        result["cpu"]["dpdk_switch"] = mode != DEEP_FIFO
        # What the hypervisor took from each virtual CPU while the events
        # were collected: a stall no counter of this machine explains.
        result["cpu"]["steal_s"] = {
            k: v / os.sysconf("SC_CLK_TCK")
            for k, v in sorted(got.get("steal", {}).items()) if k != "cpu"}
        result["tcp"] = self._tcp(before, after)
        result["drops"] = self._drops(before, after)
        run_ns, wait_ns = got["sched"]
        result["pmd_cpu_share"] = (run_ns / (run_ns + wait_ns)
                                   if run_ns + wait_ns else 0.0)
        result["samples_s"] = times
        result["first_byte_samples_s"] = got["first_byte"]
        # The request path of an event: from its first request to the
        # first ROS agent that read it, and to the first ROS agent that
        # started to send its fragment (the way back to the DCM is
        # first_byte_s minus the latter).
        for key in ("ros_read", "ros_sent"):
            if got[key]:
                result[key + "_s"] = summarize_times(got[key])
        # Where an event's time went after its request path (ros_sent_s):
        # the transfer through switch and link to its last frame, and the
        # DCM process' read after that.
        if got["transfer"]:
            result["link"] = link_split(got["transfer"],
                                        got["transfer_bytes"],
                                        got["read_lag"], got["link_time"],
                                        self.ideal["goodput_bps"])
        result["event_bytes"] = nbytes
        result["spans_all"] = got["spans_all"]
        result["wall_s"] = time.monotonic() - t0
        return result

    def _shared_figures(self, result: Dict[str, Any], got: Dict[str, Any],
                        shared: bool, hog: bool) -> None:
        """Per DCM goodput and percentiles; with DCMs that share a link,
        the latency of the DCMs other than DCM 0 (the hog, in a run with
        it), over all their events and over those that overlapped the
        hog's."""
        per = got["per_dcm"]
        result["per_dcm"] = [
            dict(dcm_figures(d["times"], d["bytes"], d["starts"]),
                 dcm=self.plan.dcms[i].index, host=self.plan.dcms[i].ns,
                 hog=hog and i == 0)
            for i, d in enumerate(per)]
        if shared:
            result["others"] = others_latency(per, 0, hog)
            result["hog"] = hog

    # The programming of a mode (a subclass programs another way).
    def program(self, mode: str, params: Dict[str, Any]) -> None:
        """Raises ModeUnavailable if the switch cannot run MODE."""
        if mode == "daqring":
            assert self.switch
            program_daqrings(self.switch, self.plan, params["ring_size"],
                             params["max_burst"],
                             params["poll_interval_us"],
                             params["max_rate_bps"],
                             params["frame_overhead"],
                             params["flow_buckets"],
                             max_burst_bytes=params.get("max_burst_bytes",
                                                        0),
                             egress_max_rate=params.get(
                                 "egress_max_rate_bps", 0),
                             egress_max_burst_bytes=params.get(
                                 "egress_max_burst_bytes", 0),
                             ring_sizes={
                                 d.index: self.cfg.ring_size_of(d.index)
                                 for d in self.plan.dcms}
                             if self.cfg.hog else None)
            if params.get("tx_retry_budget_us"):
                try:
                    set_tx_retry_budget(self.switch, [
                        h.port_name for h in self.plan.dcm_hosts],
                        params["tx_retry_budget_us"])
                except RunError as e:
                    remove_daqrings(self.switch, self.plan)
                    raise ModeUnavailable(str(e))
        elif mode == DEEP_FIFO:
            if self.switch is not None:
                raise ModeUnavailable("internal: a deep-fifo run after the "
                                      "DPDK switch started")
            assert self.topo
            params["limits"] = self.deep_limits(params["deep_limit"])
            self.topo.bridge_up(params["limits"])
            self.bridge = True

    def deep_limits(self, spec: str) -> Dict[str, int]:
        """The queue limit in bytes of every bridge port's egress FIFO."""
        cfg, plan = self.cfg, self.plan
        out = {h.veth: cfg.deep_limit(spec, [d.index for d in
                                             plan.dcms_of(h)])
               for h in plan.dcm_hosts}
        everyone = cfg.deep_limit(spec, [d.index for d in plan.dcms])
        out.update({h.veth: everyone for h in plan.ros_hosts})
        return out

    def ring_status(self, mode: str) -> Optional[Dict[str, object]]:
        if mode != "daqring":
            return None
        assert self.switch
        return self.switch.status([self.plan.ring_name(d)
                                   for d in self.plan.dcms])

    def unprogram(self, mode: str) -> None:
        if mode == "daqring":
            assert self.switch
            remove_daqrings(self.switch, self.plan)
            if self.cfg.tx_retry_budget_us:
                set_tx_retry_budget(self.switch, [h.port_name for h in
                                                  self.plan.dcm_hosts], 0)
        elif mode == DEEP_FIFO and self.bridge:
            assert self.topo
            self.topo.bridge_down()
            self.bridge = False

    def run_all(self) -> Dict[str, Any]:
        self.setup()
        for mode, params, label in mode_runs(self.cfg):
            r = self.run_mode(mode, params, label)
            r.pop("spans_all", None)
            self.modes.append(r)
            if r["status"] != "ok":
                self.progress.done("[%s] not run: %s" % (label, r["error"]))
                continue
            self.progress.done(
                "[%s] %d events, goodput %.1f Mbit/s (%.1f%% of ideal),"
                " p99 %.1f ms, first byte p50 %.0f us,%s %d TCP RTOs, %d "
                "events >= %.0f ms, %s; machine CPU %.1f ns per byte"
                % (label, r["events"], r["goodput_bps"] / 1e6,
                   100 * r["ideal_ratio"],
                   r["collection_time_s"]["p99"] * 1e3,
                   r["first_byte_s"]["p50"] * 1e6, link_words(r),
                   r["tcp"]["rto_timeouts"], r["timeouts"],
                   self.cfg.rto_threshold_s * 1e3,
                   "no PMD (Linux bridge)" if mode == DEEP_FIFO else
                   "PMD had %.0f%% of its core" % (100 * r["pmd_cpu_share"]),
                   r["cpu"]["ns_per_byte"]))
            steal = r["cpu"].get("steal_s") or {}
            if any(steal.values()):
                self.progress.done(
                    "[%s] the hypervisor took %s while the events were "
                    "collected (steal time)" % (label, ", ".join(
                        "%.0f ms of %s" % (1e3 * v, k)
                        for k, v in steal.items() if v)))
            if mode == DEEP_FIFO:
                continue
            if r.get("invalid_reason"):
                self.cfg.notes.append("%s: not a valid result: %s"
                                      % (label, r["invalid_reason"]))
            elif r["pmd_cpu_share"] < 0.9:
                self.cfg.notes.append(
                    "%s: the PMD had only %.0f%% of its core (another busy "
                    "thread shares it): results are skewed"
                    % (label, 100 * r["pmd_cpu_share"]))
        return self.document()

    def document(self) -> Dict[str, Any]:
        """The results so far (all of them after run_all)."""
        sweep = None
        if self.cfg.sweep_param:
            ends = tuple("%s=%d" % (self.cfg.sweep_param, v)
                         for v in self.cfg.sweep_values)
            sweep = {"param": self.cfg.sweep_param,
                     "mode": SWEEP_PARAMS[self.cfg.sweep_param][0],
                     "values": self.cfg.sweep_values,
                     "labels": [m["label"] for m in self.modes
                                if m["label"].endswith(ends)]}
        elif len(self.cfg.deep_limits) > 1 and DEEP_FIFO in self.cfg.modes:
            # The deep-FIFO limits as a sweep (the first DCM host's
            # egress), for the plot; without the hog if there is one.
            first = [d.index for d in self.plan.dcms_of(
                self.plan.dcm_hosts[0])] if hasattr(self.plan,
                                                    "dcm_hosts") else [0]
            sweep = {"param": "deep-limit (bytes)", "mode": DEEP_FIFO,
                     "values": [self.cfg.deep_limit(x, first)
                                for x in self.cfg.deep_limits],
                     "labels": [deep_label(x, self.cfg.deep_limits)
                                for x in self.cfg.deep_limits]}
        host = probe_host()
        return {
            "schema": SCHEMA, "version": VERSION,
            "started": self.started.isoformat(timespec="seconds"),
            "duration_s": time.monotonic() - self.t0,
            "host": {"cpus": host.cpus, "kernel": os.uname().release,
                     "hugepages": self.cfg.use_hugepages,
                     "other_vswitchd": host.other_vswitchd},
            "config": self.cfg.as_dict(),
            "topology": topology_dict(self.cfg, self.plan,
                                      self.hosts_cc),
            "notes": self.cfg.notes,
            "ideal": self.ideal, "modes": list(self.modes), "sweep": sweep,
        }


def read_proc_stat_text() -> str:
    with open("/proc/stat") as f:
        return f.read()


def topology_dict(cfg: Config, plan: Plan,
                  hosts_cc: Optional[Dict[str, str]] = None
                  ) -> Dict[str, Any]:
    """The hosts, and the TCP congestion control each ran (read back from
    its namespace; {} if the run stopped before they were created)."""
    return {
        "congestion_control": {"configured": cfg.congestion_control,
                               "hosts": dict(hosts_cc or {})},
        "ros": cfg.ros, "dcms": cfg.dcms, "ros_per_host": cfg.ros_per_host,
        "ros_hosts": len(plan.ros_hosts), "ethdev_ports": cfg.ethdev_ports,
        "aggregated": cfg.ros_per_host > 1,
        "hosts": [{"kind": h.kind, "ns": h.ns, "port": h.port_name,
                   "ofport": h.ofport, "ips": h.ips} for h in plan.hosts],
    }


def describe(cfg: Config, plan: Plan) -> str:
    eff = payload_efficiency(cfg.fragment_size, cfg.mss, cfg.link_overhead)
    lines = [
        "daq-incast %s: %d ROS x %d B -> %d DCM(s); %d namespaces, %d "
        "ethdev ports%s" % (VERSION, cfg.ros, cfg.fragment_size, cfg.dcms,
                            len(plan.hosts), cfg.ethdev_ports,
                            " (%d ROS per namespace)" % cfg.ros_per_host
                            if cfg.ros_per_host > 1 else ""),
        "access link: tbf %s, burst %d B, limit %d B, +%d B/frame; port "
        "buffer %d frames; ideal goodput %s (%.1f%% payload), "
        "ideal event %.1f ms"
        % (format_rate(cfg.link_rate_bps), cfg.link_burst, cfg.link_limit,
           cfg.link_overhead, cfg.port_frames,
           format_rate(cfg.link_rate_bps * eff),
           100 * eff, 1e3 * ideal_collection_time(
               cfg.link_rate_bps, cfg.ros, cfg.fragment_size, cfg.mss,
               cfg.link_overhead)),
        "modes: %s; %d events per DCM and mode after %d warm-up, %d in "
        "flight (processing units); credits %d%s; requests per connection "
        "%s; TCP: congestion control %s (--congestion-control), "
        "otherwise Linux defaults%s; the DCM yields its CPU %s"
        % (", ".join(cfg.modes), cfg.events, cfg.warmup_events, cfg.pus,
           cfg.credits,
           " (auto)" if cfg.credits_auto else "",
           cfg.pipeline or "unlimited", cfg.congestion_control,
           " + TCP_NODELAY" if cfg.tcp_nodelay else "",
           "every %d requests" % cfg.request_yield if cfg.request_yield
           else "never while it requests"),
    ]
    if "daqring" in cfg.modes:
        if cfg.max_rate_bps:
            lines.append(
                "daqring: ring-size %d, max-rate %s (bytes, +%d B/frame "
                "like the link), max-burst %d%s, %s"
                % (cfg.ring_size, format_rate(cfg.max_rate_bps),
                   cfg.link_overhead, cfg.max_burst,
                   ", max-burst-bytes %d" % cfg.max_burst_bytes
                   if cfg.max_burst_bytes else "", fairness_words(cfg)))
        else:
            lines.append(
                "daqring: ring-size %d, max-burst %d, poll-interval %d us = "
                "%s (max-burst x 1518 x 8 / poll-interval), %s"
                % (cfg.ring_size, cfg.max_burst, cfg.poll_interval_us,
                   format_rate(cfg.daqring_rate_bps), fairness_words(cfg)))
        if cfg.tx_retry_budget_us:
            lines.append(
                "daqring mode: DCM ports wait up to %d us for room when full "
                "(tx-retry-budget-us) instead of dropping"
                % cfg.tx_retry_budget_us)
    if cfg.topology == "switch" and cfg.dcms_per_host > 1:
        from .fabric.runner import ring_params
        lines.append(
            "shared links: %d DCMs per DCM host, %d host(s), one access "
            "link each; events to all DCMs at once; ring sharing %s"
            % (cfg.dcms_per_host, cfg.hlt_hosts,
               ring_params(cfg, "daqring")["sharing"]))
    if cfg.hog:
        lines.append(
            "hog: DCM 0's fragments %d x %d B (its ring-size %d); every "
            "mode runs without the hog, then with it (+hog)"
            % (cfg.hog, cfg.fragment_size, cfg.hog_ring_size))
    if DEEP_FIFO in cfg.modes and hasattr(plan, "dcm_hosts"):
        first = [d.index for d in plan.dcms_of(plan.dcm_hosts[0])]
        lines.append(
            "deep-fifo: Linux bridge %s, no DPDK switch; every egress a "
            "deep FIFO (DCM links: tbf at the link's rate; ROS ports: "
            "bfifo), limit %s (first DCM host's egress: %s)"
            % (DEEP_BRIDGE, ", ".join(cfg.deep_limits), ", ".join(
                "%d B" % cfg.deep_limit(x, first) for x in cfg.deep_limits)))
    lines.append("hosts' receive: %s" % (
        "RPS to CPU %s, off the PMD's, for %s (--host-rps %s)"
        % (",".join(map(str, cfg.rps_cpus)), " and ".join(
            k.upper() for k in cfg.rps_kinds), cfg.host_rps)
        if cfg.rps_cpus else
        "where the sender runs, the PMD's core included (--host-rps off)"))
    if cfg.preempt_us[0]:
        lines.append("PMD preempted: %g ms of every %g ms by a real-time "
                     "thread on core %d (--pmd-preempt)"
                     % (cfg.preempt_us[0] / 1e3, cfg.preempt_us[1] / 1e3,
                        cfg.pmd_cpus[0]))
    lines.append("switch: %s" % (
        cfg.binaries.origin if cfg.topology == "fabric"
        or any(m != DEEP_FIFO for m in cfg.modes)
        else "none (deep-fifo runs only: the Linux bridge)"))
    lines += ["note: " + n for n in cfg.notes]
    return "\n".join(lines)


def cleanup_stale() -> int:
    """Remove the namespaces and run directories of daq-incast runs that
    were killed before they could clean up (their daemons and agents died
    with them: see die_with_parent)."""
    if os.geteuid() != 0:
        sys.stderr.write("daq-incast: error: must run as root\n")
        return 2
    names = [line.split()[0] for line in
             run(["ip", "netns", "list"]).splitlines() if line.strip()]
    # (--topology fabric: dqf<pid>-<switch or host>.)
    stale = stale_namespaces(names) + stale_namespaces(
        names, re.compile(r"^dqf(\d+)-[a-z0-9-]+$"))
    for name in stale:
        run(["ip", "netns", "del", name], check=False)
        print("removed namespace %s" % name)
    # Work directories (with the hugepages reserved and the hugetlbfs
    # mounted there) and DPDK runtime directories (file prefix dqi<pid>,
    # see Switch) of dead runs.
    done, errors = hugepages.remove_stale_runs(
        r"^daq-incast\.dq[if](\d+)\.", r"^dq[if](\d+)$")
    for what in done:
        print(what)
    for e in errors:
        sys.stderr.write("daq-incast: error: %s\n" % e)
    if not stale and not done and not errors:
        print("nothing stale")
    return 1 if errors else 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    ns = build_parser().parse_args(list(argv))
    if ns.version:
        print("daq-incast (ovs-daqring) %s" % VERSION)
        return 0
    if ns.cleanup_stale:
        return cleanup_stale()
    host = probe_host()
    fplan = None
    try:
        cfg = validate(ns, host, check_env=not ns.dry_run)
        if cfg.plot_dir:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise ConfigError("--plot-dir needs matplotlib "
                                  "(apt-get install python3-matplotlib)")
        plan = make_plan(os.getpid(), cfg.ros, cfg.dcms, cfg.ros_per_host,
                         cfg.port_frames, cfg.dcms_per_host
                         if cfg.topology == "switch" else 1)
        if cfg.topology == "fabric":
            from .fabric import runner as fabric
            fplan = fabric.make_fabric_plan(os.getpid(), cfg)
    except (ConfigError, ValueError) as e:
        sys.stderr.write("daq-incast: error: %s\n" % e)
        return 2
    if fplan is not None:
        print(fabric.describe_fabric(cfg, fplan))
        print("\n".join(describe(cfg, plan).splitlines()[2:]))
    else:
        print(describe(cfg, plan))
    early_notes = list(cfg.notes)
    if cfg.dry_run:
        return 0
    sys.stdout.flush()

    cleanup = Cleanup()
    atexit.register(cleanup.run)
    install_signal_handlers(cfg.timeout_s)
    runner = (fabric.FabricRunner(cfg, fplan, cleanup) if fplan is not None
              else Runner(cfg, plan, cleanup))
    rc = 0
    doc: Optional[Dict[str, Any]] = None
    # --hold: the results are reported before the fabric is held, and the
    # signal that ends the hold is its normal end.
    held = False
    try:
        doc = runner.run_all()
        if cfg.hold:
            rc = report(doc, cfg, runner.ideal["goodput_bps"],
                        cfg.notes[len(early_notes):], rc)
            held = True
            runner.hold()       # type: ignore[attr-defined]
    except Interrupted as e:
        if held:
            sys.stderr.write("\ndaq-incast: stopping the fabric (--hold), "
                             "cleaning up\n")
        elif e.signum == signal.SIGALRM:
            sys.stderr.write("\ndaq-incast: --timeout %g s reached, "
                             "cleaning up\n" % cfg.timeout_s)
            rc = 1
        else:
            sys.stderr.write("\ndaq-incast: interrupted, cleaning up\n")
            rc = 128 + e.signum
    except RunError as e:
        sys.stderr.write("\ndaq-incast: %s\n" % e)
        rc = 1
    finally:
        signal.alarm(0)
        if cleanup.run():
            rc = rc or 1
    if doc is None and runner.modes:
        cfg.notes.append("incomplete: the run stopped after %d mode run(s)"
                         % len(runner.modes))
        doc = runner.document()
    if doc is None or held:
        return rc
    return report(doc, cfg, runner.ideal["goodput_bps"],
                  cfg.notes[len(early_notes):], rc)


def cc_line(doc: Dict[str, Any]) -> str:
    """The TCP congestion control the hosts ran, for the summary."""
    cc = doc.get("topology", {}).get("congestion_control")
    if not cc:
        return ""
    hosts = cc.get("hosts", {})
    got = sorted(set(hosts.values()))
    if got == [cc.get("configured")]:
        return ("TCP congestion control: %s in all %d host namespaces"
                % (got[0], len(hosts)))
    return ("TCP congestion control: %s configured; hosts: %s"
            % (cc.get("configured"), ", ".join(
                "%s %s" % kv for kv in sorted(hosts.items())) or "none"))


def failed_runs(doc: Dict[str, Any]) -> List[str]:
    """'label: error' of every mode run of DOC that did not finish."""
    return ["%s: %s" % (m.get("label"), m.get("error") or m.get("status"))
            for m in doc.get("modes", []) if m.get("status") != "ok"]


def report(doc: Dict[str, Any], cfg: Config, ideal_bps: float,
           notes: Sequence[str], rc: int = 0) -> int:
    """Prints the table and the notes, writes the JSON and the plots of
    DOC; the exit status: RC, or 1 if a mode run failed (a failed run is
    never a result) or the results do not match the schema."""
    print()
    print(format_table(doc["modes"], ideal_bps))
    shared = format_shared(doc["modes"])
    if shared:
        print(shared)
    if cc_line(doc):
        print(cc_line(doc))
    if doc.get("topology", {}).get("kind") == "fabric":
        from .fabric.runner import format_fabric
        text = format_fabric(doc)
        if text:
            print(text)
    for note in notes:
        print("note: " + note)
    errors = validate_results(doc)
    if errors:
        sys.stderr.write("daq-incast: internal: results do not match the "
                         "schema: %s\n" % "; ".join(errors))
        rc = 1
    if cfg.json_path:
        with open(cfg.json_path, "w") as f:
            json.dump(doc, f, indent=1)
        print("results: %s" % cfg.json_path)
    if cfg.plot_dir:
        from .plot import write_plots
        for path in write_plots(doc, cfg.plot_dir):
            print("plot: %s" % path)
    failed = failed_runs(doc)
    if failed:
        sys.stderr.write("daq-incast: error: %d of %d mode run(s) failed "
                         "(their results are not counted): %s\n"
                         % (len(failed), len(doc["modes"]),
                            "; ".join(failed)))
        rc = rc or 1
    return rc
