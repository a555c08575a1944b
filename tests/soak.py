#!/usr/bin/python3
# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at:
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""soak: a bounded incast run with configuration churn ("make check-soak").

daq-incast runs in daqring mode (one DCM, 12 ROS) for about SOAK_SECONDS
(default and cap 600).  While its traffic flows, this driver changes the
switch through the tools' command lines only (ovs-vsctl, ovs-appctl,
ovs-daqctl; never their Python internals):

  resize    ovs-vsctl set Interface RING options:ring-size=...
  reshape   max-rate / max-burst, or packet shaping (poll-interval)
  other     ovs-vsctl add-port / del-port of daqrings of OTHER DCMs
  apply     ovs-daqctl apply of changed maps (the run's own map with
            other ring sizes and rates, plus or minus other DCMs)

and samples ovs-vswitchd's RSS and the DPDK mempools' in-use counts
(size - common_pool_count - total_cache_count of each mempool that
netdev-dpdk/get-mempool-info dumps).  It fails unless, between a quiet
moment after warm-up and the quiet moment after the last event:

  - every packet the switch received left it or was dropped where a
    counter says so (port rx = port tx + daqring backlog change + daqring
    drops + port tx drops + datapath drop coverage counters + upcalls
    lost), and each daqring enqueued = dequeued + backlog change;
  - the mempools' in-use count at the end is not above the one at the
    start (plus a small per-lcore cache allowance), and its floor does not
    rise during the run;
  - ovs-vswitchd's RSS grew by less than 5% after warm-up;
  - every churn command succeeded, every event completed; TCP timeouts
    and retransmissions are counted and reported.

Results: tests/check-logs/soak.json (--json) and a summary on stdout.
Needs root, the build in ovs/ and the DPDK test lock, e.g.:

  flock /tmp/daqring-systest.lock make check-soak SOAK_SECONDS=120
"""

import argparse
import glob
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
# This tree's package (python/), as utilities/ovs-daqctl finds it.
sys.path.insert(0, os.path.join(TOP, "python"))

from ovs_daqring.process import RunError, run  # noqa: E402
from ovs_daqring.sandbox import Sandbox, tree_binaries  # noqa: E402

MAX_SECONDS = 600
ROS = 12
FRAGMENT = 32 * 1024
LINK_BPS = 200_000_000
EVENT_GAP_MS = 150        # quiet gaps between events, for snapshots
WARMUP_FRACTION = 0.1
RSS_GROWTH_MAX = 0.05
# Mbufs a PMD and the main thread may keep in their mempool caches.
MEMPOOL_SLACK = 1024
CHURN_PERIOD_S = 1.0
QUIET_S = 2.0


class SoakError(RunError):
    """The soak failed; RunError (a command that failed or timed out,
    ovs_daqring.process.run) is the other error it expects."""


def log(msg: str) -> None:
    sys.stderr.write("soak: %s\n" % msg)
    sys.stderr.flush()


class Switch(Sandbox):
    """The switch daq-incast started (a Sandbox in WORKDIR), through the
    tools' command lines.  Its daemons are daq-incast's: this object never
    starts or stops them."""

    def __init__(self, build: str, workdir: str) -> None:
        super().__init__(tree_binaries(build), workdir, label="soak")
        # ovs-vswitchd's pid, found by find_pid().
        self.vswitchd_pid = 0

    def vsctl(self, *args: str, timeout: float = 30) -> str:
        return super().vsctl(*args, timeout=timeout)

    def appctl(self, *args: str, timeout: float = 30) -> str:
        return super().appctl(*args, timeout=timeout)

    def daqctl(self, *args: str) -> str:
        return run(["/usr/bin/python3",
                    os.path.join(TOP, "utilities", "ovs-daqctl"),
                    "--db", self.db, "--bridge", "br0",
                    "--ofctl", self.bin.ofctl, "--timeout", "60"]
                   + list(args), timeout=120)

    def pin_macs(self) -> int:
        """Static MAC entries (fdb/add) for the ROS hosts' ports.  The ROS
        send only into the daqring flows, never through NORMAL, so the
        bridge would never learn their addresses and would flood every
        request and ACK of the DCM: one packet in, thirteen out, which
        no counter relates.  Names as daq-incast documents them:
        switch-side veth dq<pid>rN of namespace dqi<pid>-rosN, e0
        inside.  Returns how many were added."""
        names = self.vsctl("--bare", "--columns=name", "list",
                           "Interface").split()
        n = 0
        for name in names:
            m = re.match(r"^dq(\d+)r(\d+)$", name)
            if not m:
                continue
            ns = "dqi%s-ros%s" % m.groups()
            link = json.loads(run(["ip", "-n", ns, "-j", "link", "show",
                                   "dev", "e0"]))
            self.appctl("fdb/add", "br0", name, "0", link[0]["address"])
            n += 1
        return n

    def find_pid(self) -> int:
        """ovs-vswitchd's pid (0 if it is not running): daq-incast
        started it, so it is found by its --unixctl argument."""
        want = ("--unixctl=" + self.ctl).encode()
        for d in glob.glob("/proc/[0-9]*"):
            try:
                with open(d + "/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
                with open(d + "/comm") as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if want in args and comm.startswith("ovs-vswitchd"):
                self.vswitchd_pid = int(os.path.basename(d))
        return self.vswitchd_pid

    def rss_kb(self) -> int:
        with open("/proc/%d/status" % self.vswitchd_pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise SoakError("no VmRSS for pid %d" % self.vswitchd_pid)

    # ------------------------------------------------------------ readings
    def ports(self) -> Dict[str, Dict[str, int]]:
        """Live counters per datapath port (dpctl/show -s), plus the
        datapath's "lost" upcalls under the key ''."""
        text = self.appctl("dpctl/show", "-s", "netdev@ovs-netdev")
        out: Dict[str, Dict[str, int]] = {}
        cur: Optional[Dict[str, int]] = None
        for line in text.splitlines():
            m = re.match(r"\s*lookups: hit:(\d+) missed:(\d+) lost:(\d+)",
                         line)
            if m:
                out[""] = {"lost": int(m.group(3))}
                continue
            m = re.match(r"\s*port \d+: (\S+)", line)
            if m:
                cur = out.setdefault(m.group(1), {})
                continue
            m = re.match(r"\s*(RX|TX) packets:", line)
            if m and cur is not None:
                # "?" where a netdev does not have the counter.
                d = m.group(1).lower()
                for k, v in re.findall(r"(\w+):(\d+)", line):
                    cur[d + "_" + k] = int(v)
        return out

    def rings(self) -> Dict[str, Dict[str, int]]:
        """netdev-daqring/show: per ring size, occup, enqueued, dequeued,
        full-drops."""
        text = self.appctl("netdev-daqring/show")
        out = {}
        for line in text.splitlines()[1:]:
            f = line.split()
            if len(f) >= 7:
                out[f[0]] = {"size": int(f[1]), "occup": int(f[2]),
                             "enqueued": int(f[4]), "dequeued": int(f[5]),
                             "full_drops": int(f[6])}
        return out

    def coverage_drops(self) -> Dict[str, int]:
        """Totals of the coverage counters that count dropped packets."""
        text = self.appctl("coverage/show")
        out = {}
        for line in text.splitlines():
            m = re.match(r"(\S+)\s.*total:\s*(\d+)", line)
            if m and re.match(r"(datapath_drop_|drop_action_|"
                              r"daqring_(ring_full|loop_drop))",
                              m.group(1)):
                out[m.group(1)] = int(m.group(2))
        return out

    def mempool_in_use(self) -> Dict[str, int]:
        """Mbufs in use per DPDK mempool: size - common_pool_count -
        total_cache_count of rte_mempool_dump's output, which
        netdev-dpdk/get-mempool-info prints for every mempool (the same
        on DPDK 22.11 and 24.11)."""
        text = self.appctl("netdev-dpdk/get-mempool-info")
        pools: Dict[str, Dict[str, int]] = {}
        cur: Dict[str, int] = {}
        for line in text.splitlines():
            m = re.match(r"mempool <([^>]+)>", line)
            if m:
                cur = pools.setdefault(m.group(1), {})
                continue
            m = re.match(r"\s*(size|common_pool_count|total_cache_count)"
                         r"=(\d+)$", line)
            if m:
                cur[m.group(1)] = int(m.group(2))
        return {name: p["size"] - p.get("common_pool_count", 0)
                - p.get("total_cache_count", 0)
                for name, p in pools.items() if "size" in p}

    def snapshot(self, deadline: float) -> Optional[Dict[str, Any]]:
        """Counters read while nothing moved: the port counters read the
        same before and after the rings and the coverage counters, and
        the rings are empty.  The mempools and the RSS are read right
        after.  None if there was no such moment before 'deadline'."""
        while time.monotonic() < deadline:
            try:
                a = self.ports()
                rings = self.rings()
                cov = self.coverage_drops()
                b = self.ports()
            except RunError:
                time.sleep(0.1)
                continue
            if a == b and all(r["occup"] == 0 for r in rings.values()):
                return {"time": time.time(), "ports": a, "rings": rings,
                        "coverage": cov, "mempools": self.mempool_in_use(),
                        "rss_kb": self.rss_kb()}
            time.sleep(0.01)
        return None


def counters_delta(a: Dict[str, Any], b: Dict[str, Any]) -> Dict[str, Any]:
    """The accounting between snapshots a and b (see the module doc)."""
    ports_in = ports_out = port_drops = 0
    per_port = {}
    for name, st in b["ports"].items():
        if not name:
            continue
        st0 = a["ports"].get(name, {})
        d = {k: v - st0.get(k, 0) for k, v in st.items()
             if v - st0.get(k, 0)}
        if d:
            per_port[name] = d
        ports_in += d.get("rx_packets", 0)
        ports_out += d.get("tx_packets", 0)
        port_drops += d.get("tx_dropped", 0)
    lost = b["ports"].get("", {}).get("lost", 0) - \
        a["ports"].get("", {}).get("lost", 0)
    cov = {k: v - a["coverage"].get(k, 0) for k, v in b["coverage"].items()
           if v - a["coverage"].get(k, 0)}
    dp_drops = sum(v for k, v in cov.items() if not k.startswith("daqring"))
    rings = {}
    ring_ok = True
    for name in set(a["rings"]) | set(b["rings"]):
        r0 = a["rings"].get(name, {})
        r1 = b["rings"].get(name, {})
        d = {k: r1.get(k, 0) - r0.get(k, 0)
             for k in ("enqueued", "dequeued", "full_drops", "occup")}
        d["balanced"] = d["enqueued"] == d["dequeued"] + d["occup"]
        # A ring created or deleted between the snapshots has no
        # counters on one side; only rings present in both are checked.
        d["in_both"] = name in a["rings"] and name in b["rings"]
        ring_ok &= d["balanced"] or not d["in_both"]
        rings[name] = d
    # Daqrings are ports too: what a ring enqueued is its port's tx, what
    # it dequeued its port's rx, so the backlog change closes the sum.
    backlog = sum(d["occup"] for d in rings.values())
    explained = ports_out + backlog + port_drops + dp_drops + lost
    return {"received": ports_in, "transmitted": ports_out,
            "backlog_change": backlog, "port_tx_drops": port_drops,
            "datapath_drops": dp_drops, "upcalls_lost": lost,
            "coverage": cov, "unexplained": ports_in - explained,
            "rings": rings, "rings_balanced": ring_ok, "ports": per_port}


class Churn:
    """Configuration changes while traffic flows, in a fixed cycle."""

    def __init__(self, sw: Switch, ring: str, egress: str,
                 base_map: Dict[str, Any], workdir: str) -> None:
        self.sw = sw
        self.ring = ring
        self.egress = egress
        self.map = base_map
        self.dir = workdir
        self.rng = random.Random(1)
        base = int(base_map.get("defaults", {}).get("ring-size", 1024))
        self.sizes = [base * 2, base * 4, base]
        self.counts: Dict[str, int] = {}
        self.failures: List[str] = []
        self.step = 0
        self.others: List[str] = []
        self.applied_others = False

    def _do(self, kind: str, fn: Any) -> None:
        try:
            fn()
            self.counts[kind] = self.counts.get(kind, 0) + 1
        except RunError as e:
            self.failures.append("%s: %s" % (kind, e))

    def resize(self) -> None:
        size = self.sizes[self.step % len(self.sizes)]
        self.sw.vsctl("set", "Interface", self.ring,
                      "options:ring-size=%d" % size)

    def reshape(self) -> None:
        # Byte shaping at 60..99% of the link, or packet shaping just
        # under it (16 or 8 full frames per interval); never above it.
        if self.step % 4 == 3:
            burst, interval = self.rng.choice([(16, 1000), (8, 600)])
            self.sw.vsctl("remove", "Interface", self.ring, "options",
                          "max-rate", "--", "set", "Interface", self.ring,
                          "options:max-burst=%d" % burst,
                          "options:poll-interval=%d" % interval)
        else:
            rate = int(LINK_BPS * self.rng.choice([0.6, 0.8, 0.9, 0.99]))
            burst = self.rng.choice([4, 8, 16])
            self.sw.vsctl("set", "Interface", self.ring,
                          "options:poll-interval=0",
                          "options:max-rate=%d" % rate,
                          "options:max-burst=%d" % burst)

    def other(self) -> None:
        # A daqring of another DCM that nobody sends to, added or deleted.
        if self.others:
            self.sw.vsctl("del-port", "br0", self.others.pop())
        else:
            name = "soak-o%d" % self.step
            self.sw.vsctl("add-port", "br0", name, "--", "set",
                          "Interface", name, "type=daqring",
                          "options:ring-size=%d"
                          % self.rng.choice([64, 1024, 65536]))
            self.others.append(name)

    def apply(self) -> None:
        # The run's map with the DCM's ring changed, and three other DCMs
        # every second time (so the next apply deletes them).
        doc = json.loads(json.dumps(self.map))
        dcm = doc["dcms"][0]
        dcm["ring-size"] = self.sizes[(self.step // 2) % len(self.sizes)]
        dcm["rate"] = "%dbit" % int(LINK_BPS * self.rng.choice(
            [0.7, 0.9, 0.99]))
        self.applied_others = not self.applied_others
        if self.applied_others:
            for i in range(3):
                doc["dcms"].append({"name": "soak-dcm%d" % i,
                                    "ip": "10.250.0.%d" % (i + 1),
                                    "egress": self.egress,
                                    "ring-size": 512 * (i + 1)})
        path = os.path.join(self.dir, "map-%d.json" % self.step)
        with open(path, "w") as f:
            json.dump(doc, f)
        self.sw.daqctl("apply", path)

    def tick(self) -> None:
        kind = ("resize", "reshape", "other", "apply")[self.step % 4]
        self._do(kind, getattr(self, kind))
        self.step += 1

    def undo(self) -> None:
        for name in self.others:
            self._do("other", lambda: self.sw.vsctl("del-port", "br0", name))
        self.others = []


def incast_cmd(args: argparse.Namespace, events: int, json_path: str,
               log_dir: str, timeout: int) -> List[str]:
    return ["/usr/bin/python3", os.path.join(TOP, "utilities", "daq-incast"),
            "--ovs-build", args.ovs_build, "--ros", str(ROS),
            "--fragment-size", str(FRAGMENT), "--link-rate",
            "%dbit" % LINK_BPS, "--events", str(events),
            "--event-gap", str(EVENT_GAP_MS), "--modes", "daqring",
            "--json", json_path, "--log-dir", log_dir, "--quiet",
            "--timeout", str(timeout)]


def calibrate(args: argparse.Namespace, tmp: str) -> float:
    """Seconds per event (collection plus gap) of a short run, to size
    the soak to its time budget."""
    path = os.path.join(tmp, "calibrate.json")
    env = dict(os.environ, TMPDIR=tmp)
    p = subprocess.run(incast_cmd(args, 40, path, os.path.join(
        tmp, "calibrate-logs"), 300), env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, universal_newlines=True, timeout=400)
    if p.returncode:
        raise SoakError("calibration run failed:\n" + p.stdout[-2000:])
    with open(path) as f:
        mode = json.load(f)["modes"][0]
    if mode["status"] != "ok":
        raise SoakError("calibration run: %s" % mode.get("error"))
    per_event = statistics.mean(mode["samples_s"]) + EVENT_GAP_MS / 1e3
    # Churn makes some events slower (shaping at 60% of the link).
    return per_event * 1.15


def soak(args: argparse.Namespace) -> Dict[str, Any]:
    result: Dict[str, Any] = {"seconds_budget": args.seconds,
                              "failures": []}
    tmp = tempfile.mkdtemp(prefix="daq-soak.")
    proc: Optional["subprocess.Popen[str]"] = None
    try:
        per_event = calibrate(args, tmp)
        warmup = max(10.0, WARMUP_FRACTION * args.seconds)
        events = max(50, int((args.seconds - warmup) / per_event))
        result.update(events_planned=events, seconds_per_event=per_event)
        log("%.1f ms per event: %d events for %d s" %
            (per_event * 1e3, events, args.seconds))
        json_path = os.path.join(tmp, "incast.json")
        env = dict(os.environ, TMPDIR=tmp)
        for d in glob.glob(os.path.join(tmp, "daq-incast.*")):
            shutil.rmtree(d, ignore_errors=True)
        cap = int(args.seconds * 1.5 + 120)
        out = open(os.path.join(tmp, "incast.out"), "w")
        proc = subprocess.Popen(
            incast_cmd(args, events, json_path, args.log_dir, cap),
            env=env, stdout=out, stderr=subprocess.STDOUT,
            universal_newlines=True)
        t_start = time.monotonic()
        sw, ring, egress, base_map = wait_for_rings(args, tmp, proc)
        result["ring"] = ring
        result["static_macs"] = sw.pin_macs()
        log("switch pid %d, ring %s, egress %s"
            % (sw.vswitchd_pid, ring, egress))
        churn = Churn(sw, ring, egress, base_map, tmp)
        samples: List[Dict[str, Any]] = []
        start: Optional[Dict[str, Any]] = None
        end: Optional[Dict[str, Any]] = None
        last_enq, last_change = -1, time.monotonic()
        t_traffic = 0.0
        next_sample = 0.0
        while proc.poll() is None:
            now = time.monotonic()
            if time.monotonic() - t_start > cap:
                raise SoakError("daq-incast ran over %d s" % cap)
            try:
                rings = sw.rings()
            except RunError:
                time.sleep(0.2)        # the switch is going away
                continue
            if ring not in rings:
                time.sleep(0.2)
                continue
            enq = rings[ring]["enqueued"]
            if enq != last_enq:
                if enq and not t_traffic:
                    t_traffic = now
                last_enq, last_change = enq, now
                end = None
            if start is None and t_traffic and now - t_traffic >= warmup:
                start = sw.snapshot(now + 30)
                if start is None:
                    raise SoakError("no quiet moment after warm-up")
                log("start snapshot: RSS %d kB, mempools in use %s"
                    % (start["rss_kb"], start["mempools"]))
            if now >= next_sample:
                try:
                    samples.append({"t": round(now - t_start, 1),
                                    "rss_kb": sw.rss_kb(),
                                    "mempools": sw.mempool_in_use(),
                                    "occupancy": sum(
                                        r["occup"] for r in rings.values())})
                except (RunError, OSError):
                    pass
                next_sample = now + 5
            if now - last_change >= QUIET_S and start is not None:
                if end is None:
                    churn.undo()
                    end = sw.snapshot(now + 3)
                    if end is not None:
                        log("end snapshot (traffic stopped)")
                time.sleep(0.2)
                continue
            if now - last_change < QUIET_S:
                churn.tick()
            time.sleep(CHURN_PERIOD_S)
        rc = proc.wait()
        result["wall_s"] = round(time.monotonic() - t_start, 1)
        result["daq_incast_exit"] = rc
        with open(os.path.join(tmp, "incast.out")) as f:
            result["daq_incast_output"] = f.read()[-3000:]
        failures = result["failures"]
        if rc:
            failures.append("daq-incast exited with %d" % rc)
        result["churn"] = churn.counts
        failures += ["churn %s" % f for f in churn.failures]
        if start is None or end is None:
            failures.append("no %s snapshot"
                            % ("start" if start is None else "end"))
        else:
            judge(result, start, end, samples, warmup)
        if os.path.exists(json_path):
            with open(json_path) as f:
                mode = json.load(f)["modes"][0]
            judge_incast(result, mode, events)
        else:
            failures.append("daq-incast wrote no JSON")
        result["samples"] = samples
        return result
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def wait_for_rings(args: argparse.Namespace, tmp: str,
                   proc: "subprocess.Popen[str]"
                   ) -> Tuple[Switch, str, str, Dict[str, Any]]:
    """The running daq-incast's switch, once ovs-daqctl applied its map."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        for d in glob.glob(os.path.join(tmp, "daq-incast.*")):
            path = os.path.join(d, "dcm-map.json")
            if not os.path.exists(path):
                continue
            sw = Switch(args.ovs_build, d)
            try:
                rings = sw.rings()
                with open(path) as f:
                    base_map = json.load(f)
            except (RunError, ValueError):
                continue
            dcm = base_map["dcms"][0]
            if dcm["name"] in rings and sw.find_pid():
                return sw, dcm["name"], dcm["egress"], base_map
        time.sleep(0.2)
    raise SoakError("daq-incast's daqrings did not appear")


def judge(result: Dict[str, Any], start: Dict[str, Any],
          end: Dict[str, Any], samples: List[Dict[str, Any]],
          warmup: float) -> None:
    failures = result["failures"]
    acct = counters_delta(start, end)
    result["accounting"] = acct
    if acct["unexplained"]:
        failures.append("%d packets received but neither sent nor counted "
                        "as dropped" % acct["unexplained"])
    if not acct["rings_balanced"]:
        failures.append("a daqring's enqueued != dequeued + backlog: %s"
                        % acct["rings"])
    if acct["received"] <= 0:
        failures.append("no traffic between the snapshots")
    # Mbufs: back to where they were once the rings are empty again, and
    # the floor of the samples (rings drained between events) flat.
    m0 = sum(start["mempools"].values())
    m1 = sum(end["mempools"].values())
    result["mempool_in_use"] = {"start": m0, "end": m1,
                                "start_by_pool": start["mempools"],
                                "end_by_pool": end["mempools"]}
    if m1 > m0 + MEMPOOL_SLACK:
        failures.append("mempools: %d mbufs in use at the end, %d at the "
                        "start" % (m1, m0))
    later = [s for s in samples if s["t"] >= warmup]
    if len(later) >= 4:
        half = len(later) // 2
        floor = [min(sum(s["mempools"].values()) - s["occupancy"]
                     for s in part) for part in (later[:half], later[half:])]
        result["mempool_in_use"]["floor_first_second_half"] = floor
        if floor[1] > floor[0] + MEMPOOL_SLACK:
            failures.append("mempool in-use floor rose: %s" % floor)
    r0, r1 = start["rss_kb"], end["rss_kb"]
    rss = [s["rss_kb"] for s in later] + [r1]
    growth = (max(rss) - r0) / r0
    result["rss_kb"] = {"start": r0, "end": r1, "max": max(rss),
                        "growth": round(growth, 4)}
    if growth >= RSS_GROWTH_MAX:
        failures.append("ovs-vswitchd RSS grew by %.1f%% (%d -> %d kB)"
                        % (growth * 100, r0, max(rss)))


def judge_incast(result: Dict[str, Any], mode: Dict[str, Any],
                 events: int) -> None:
    failures = result["failures"]
    tcp = mode.get("tcp", {})
    result["incast"] = {
        "status": mode.get("status"), "error": mode.get("error"),
        "events": mode.get("events"), "timeouts": mode.get("timeouts"),
        "goodput_bps": mode.get("goodput_bps"),
        "ideal_ratio": mode.get("ideal_ratio"),
        "collection_ms": {k: round(v * 1e3, 2) for k, v in
                          mode.get("collection_time_s", {}).items()
                          if k in ("mean", "p50", "p99", "max")},
        "tcp_retrans_segs": tcp.get("retrans_segs"),
        "tcp_rto_timeouts": tcp.get("rto_timeouts"),
        "tcp_loss_probes": tcp.get("loss_probes"),
        "drops": {k: mode.get("drops", {}).get(k)
                  for k in ("switch_total", "daqring", "qdisc")},
    }
    if mode.get("status") != "ok":
        failures.append("daq-incast: %s" % mode.get("error"))
    elif mode.get("events") != events:
        failures.append("%s of %d events completed"
                        % (mode.get("events"), events))


def summary(r: Dict[str, Any]) -> str:
    lines = ["soak: %s in %s s (budget %d s), %s events planned" % (
        "FAILED" if r["failures"] else "passed", r.get("wall_s"),
        r["seconds_budget"], r.get("events_planned"))]
    inc = r.get("incast")
    if inc:
        lines.append(
            "  events %s, TCP timeouts (>= 200 ms) %s, RTOs %s, "
            "retransmitted segments %s (loss probes %s)" % (
                inc["events"], inc["timeouts"], inc["tcp_rto_timeouts"],
                inc["tcp_retrans_segs"], inc["tcp_loss_probes"]))
        lines.append("  collection ms %s, goodput %.1f Mbit/s (%.2f of "
                     "ideal), drops %s" % (
                         inc["collection_ms"],
                         (inc["goodput_bps"] or 0) / 1e6,
                         inc["ideal_ratio"] or 0, inc["drops"]))
    if r.get("churn"):
        lines.append("  churn: %s" % ", ".join(
            "%s %d" % kv for kv in sorted(r["churn"].items())))
    a = r.get("accounting")
    if a:
        lines.append(
            "  packets: received %d = transmitted %d + backlog %d + tx "
            "drops %d + datapath drops %d + lost upcalls %d; unexplained "
            "%d" % (a["received"], a["transmitted"], a["backlog_change"],
                    a["port_tx_drops"], a["datapath_drops"],
                    a["upcalls_lost"], a["unexplained"]))
        for name, d in sorted(a["rings"].items()):
            if d["in_both"]:
                lines.append("  ring %s: enqueued %d, dequeued %d, "
                             "full drops %d" % (name, d["enqueued"],
                                                d["dequeued"],
                                                d["full_drops"]))
    m = r.get("mempool_in_use")
    if m:
        lines.append("  mbufs in use: start %d, end %d, floor %s" % (
            m["start"], m["end"], m.get("floor_first_second_half")))
    rss = r.get("rss_kb")
    if rss:
        lines.append("  RSS kB: start %d, end %d, max %d (%+.2f%%)" % (
            rss["start"], rss["end"], rss["max"], rss["growth"] * 100))
    for f in r["failures"]:
        lines.append("  FAIL: %s" % f)
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(
        description="Bounded incast soak with configuration churn "
        "(make check-soak).")
    p.add_argument("--seconds", type=int,
                   default=int(os.environ.get("SOAK_SECONDS") or
                               MAX_SECONDS),
                   help="time budget, at most %d (default: $SOAK_SECONDS "
                   "or %d)" % (MAX_SECONDS, MAX_SECONDS))
    p.add_argument("--ovs-build", default=os.path.join(TOP, "ovs"))
    p.add_argument("--json", default=os.path.join(HERE, "check-logs",
                                                  "soak.json"))
    p.add_argument("--log-dir", default=os.path.join(HERE, "check-logs",
                                                     "soak-logs"))
    args = p.parse_args()
    if not 30 <= args.seconds <= MAX_SECONDS:
        p.error("--seconds must be within 30..%d" % MAX_SECONDS)
    if os.geteuid() != 0:
        sys.stderr.write("soak: needs root\n")
        return 77
    args.ovs_build = os.path.abspath(args.ovs_build)
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    try:
        result = soak(args)
    except (RunError, subprocess.TimeoutExpired) as e:
        result = {"seconds_budget": args.seconds, "failures": [str(e)]}
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)
    print(summary(result))
    print("soak: results in %s" % args.json)
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
