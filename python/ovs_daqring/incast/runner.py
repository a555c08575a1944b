# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Runs daq-incast's modes on one topology: each mode programmed on the
switch (or the deep-FIFO bridge), its events collected by the DCM agents,
its counters and figures measured, and the results document of the run
(the set-up and tear-down are lifecycle.py's; main() is
cmd/daq_incast.py's)."""

import json
import os
import selectors
import subprocess
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import VERSION
from ..hosts import probe_host
from ..process import RunError, run, stop_process
from .config import Config
from .counters import Snapshot, bridge_drops, switch_drops, tcp_figures
from .lifecycle import ModeFailed, RunnerBase
from .limits import DEEP_FIFO, SWEEP_PARAMS
from .modes import deep_label, mode_runs
from .stats import (SCHEMA, busy_time, cpu_per_byte, dcm_figures,
                    link_split, link_words, others_latency, probe_words,
                    parse_proc_stat, parse_proc_steal, summarize_mode,
                    summarize_times)
from .switch import (STATS_INTERVAL, ModeUnavailable, program_daqrings,
                     remove_daqrings, set_tx_retry_budget)
from .topology import ROS_PORT, Plan


class Runner(RunnerBase):
    """The modes, one run after the other, on the topology that
    RunnerBase set up: each programmed, its events collected, its
    counters read before and after; the results document."""

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

    def _drops(self, before: Snapshot, after: Snapshot) -> Dict[str, Any]:
        """The mode's drops (counters.py): the deep-FIFO peer's while its
        bridge is up, else the switch's."""
        if self.bridge:
            return bridge_drops(self.plan, before, after)
        return switch_drops(self.plan, before, after)

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
        return event_figures(results, [d.ns for d in self.plan.dcms])

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
        result["tcp"] = tcp_figures(before, after)
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
                                        self.link_goodput_bps)
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
                " p99 %.1f ms, first byte p50 %.0f us,%s %d TCP RTOs%s, %d "
                "events >= %.0f ms, %s; machine CPU %.1f ns per byte"
                % (label, r["events"], r["goodput_bps"] / 1e6,
                   100 * r["ideal_ratio"],
                   r["collection_time_s"]["p99"] * 1e3,
                   r["first_byte_s"]["p50"] * 1e6, link_words(r),
                   r["tcp"]["rto_timeouts"], probe_words(r["tcp"]),
                   r["timeouts"],
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


def event_figures(results: Dict[int, Dict[str, Any]],
                  dcm_ns: Sequence[str]) -> Dict[str, Any]:
    """What the DCMs reported at the end of a mode (RESULTS: per DCM
    index, its DONE document), gathered: every event's time, bytes and
    first-byte time, the request path's times, the transfers (from the
    first ROS' send to the last frame's arrival) with their bytes and
    the DCM's read lag, and the busy times: "busy" summed per DCM,
    "link_busy" and "link_time" (the transfers only) per access link
    (DCM_NS: each DCM's host namespace; the DCMs of one host share its
    link)."""
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
    # Per access link (a DCM host's) the union of its DCMs' events'
    # transfers: with several processing units, or several DCMs on
    # one host, the transfers overlap on the link.
    transfer_spans: Dict[str, List[Tuple[float, float]]] = {}
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
        link_spans.setdefault(dcm_ns[i], []).extend(
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
        transfer_spans.setdefault(dcm_ns[i], []).extend(spans)
        mine = [(s / 1e9, (s + t) / 1e9) for s, t in
                zip(r["start_ns"], r["times_ns"])]
        busy += busy_time(mine)
        spans_all += mine
    return {"times": times, "bytes": nbytes, "first_byte": first,
            "ros_read": ros_read, "ros_sent": ros_sent, "busy": busy,
            "transfer": transfer, "transfer_bytes": transfer_bytes,
            "read_lag": read_lag,
            "link_time": sum(busy_time(v)
                             for v in transfer_spans.values() if v),
            "spans_all": spans_all, "per_dcm": per_dcm,
            "link_busy": sum(busy_time(v)
                             for v in link_spans.values())}
