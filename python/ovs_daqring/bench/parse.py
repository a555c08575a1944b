# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Parsers of what ovs-appctl, ovs-ofctl, perf and configure print."""

import re
import shlex
from typing import Any, Dict, List, Optional


# ================================================================ parsing
def _num(text: str) -> Optional[int]:
    return None if text == "?" else int(text)


def parse_pmd_stats(text: str) -> Dict[str, Dict[str, float]]:
    """PMD counters per thread ("pmd NUMA/CORE" or "main") {rx, recirc,
    emc, smc, simple, megaflow, miss, idle, proc}, from `ovs-appctl
    dpif-netdev/pmd-stats-show` of OVS 3.x or from `pmd-perf-show` (what
    OVS 4.0 has instead; its `pmd-stats-show` is an undocumented alias that
    prints the same).  Missing counters are 0.

    pmd-perf-show gives no cycle counts of their own for idle and busy
    iterations, only their shares of the used TSC cycles, to 0.1 %: idle
    and proc are those shares of the used cycles (so exact to 0.05 % of
    the used cycles), and recirc is datapath passes less packets
    received.  It lists PMD threads only."""
    out: Dict[str, Dict[str, float]] = {}
    cur: Optional[Dict[str, float]] = None
    keys = {"packets received": "rx", "packet recirculations": "recirc",
            "emc hits": "emc", "smc hits": "smc",
            "simple match hits": "simple",
            "megaflow hits": "megaflow",
            "miss with success upcall": "miss",
            "idle cycles": "idle", "processing cycles": "proc"}
    # pmd-perf-show's lines (stripped) -> counter.
    perf_keys = {"Rx packets": "rx", "Datapath passes": "passes",
                 "- EMC hits": "emc", "- SMC hits": "smc",
                 "- Simple Match hits": "simple",
                 "- Megaflow hits": "megaflow", "- Upcalls": "miss"}
    perf: Dict[str, Dict[str, float]] = {}
    name = ""
    for line in text.splitlines():
        m = re.match(r"pmd thread numa_id (\d+) core_id (\d+):", line)
        if m:
            name = "pmd %s/%s" % m.groups()
        elif line.startswith("main thread:"):
            name = "main"
        if m or line.startswith("main thread:"):
            cur = out.setdefault(name, dict.fromkeys(keys.values(), 0))
            continue
        if cur is None:
            continue
        m = re.match(r"\s+([a-z .]+): (\d+)", line)
        if m and m.group(1) in keys:
            cur[keys[m.group(1)]] = int(m.group(2))
            continue
        # pmd-perf-show.
        p = perf.setdefault(name, {})
        m = re.match(r"([-A-Za-z ]+?):\s*(\d+)", line.strip())
        if m and m.group(1) in perf_keys:
            p[perf_keys[m.group(1)]] = int(m.group(2))
        elif m and m.group(1) == "- Used TSC cycles":
            p["used"] = int(m.group(2))
        m = re.match(r"- (idle|busy) iterations:\s+\d+\s+"
                     r"\(\s*([\d.]+) % of used cycles\)", line.strip())
        if m:
            p[m.group(1)] = float(m.group(2))
    for name, p in perf.items():
        cur = out[name]
        for k in ("rx", "emc", "smc", "simple", "megaflow", "miss"):
            cur[k] = p.get(k, cur[k])
        if "passes" in p:
            cur["recirc"] = max(0, p["passes"] - p.get("rx", 0))
        if "used" in p:
            cur["proc"] = round(p["used"] * p.get("busy", 0.0) / 100)
            cur["idle"] = round(p["used"] * p.get("idle", 0.0) / 100)
    return out


def pmd_totals(stats: Dict[str, Dict[str, float]]) -> Dict[str, float]:
    """Sums the PMD threads of parse_pmd_stats() (not the main thread)."""
    tot: Dict[str, float] = {}
    for name, d in stats.items():
        if name.startswith("pmd"):
            for k, v in d.items():
                tot[k] = tot.get(k, 0) + v
    return tot


def parse_pmd_perf(text: str) -> Dict[str, Any]:
    """`ovs-appctl dpif-netdev/pmd-perf-show` -> {duration_s, pmds: {name:
    {iterations, us_per_it, used_cycles, used_pct, idle_iterations,
    busy_iterations, sleep_iterations, rx, kpps, cycles_per_pkt,
    passes_per_pkt, emc_hits, megaflow_hits, upcalls}}}."""
    out: Dict[str, Any] = {"duration_s": None, "pmds": {}}
    cur: Optional[Dict[str, Any]] = None
    pats = [
        ("iterations", r"Iterations:\s+(\d+)\s+\(([\d.]+) us/it\)",
         ("iterations", "us_per_it")),
        ("used", r"- Used TSC cycles:\s+(\d+)\s+\(\s*([\d.]+) %",
         ("used_cycles", "used_pct")),
        ("idle", r"- idle iterations:\s+(\d+)", ("idle_iterations",)),
        ("busy", r"- busy iterations:\s+(\d+)", ("busy_iterations",)),
        ("sleep", r"- sleep iterations:\s+(\d+)", ("sleep_iterations",)),
        ("rx", r"Rx packets:\s+(\d+)(?:\s+\(([\d.]+) Kpps, ([\d.]+) "
         r"cycles/pkt\))?", ("rx", "kpps", "cycles_per_pkt")),
        ("passes", r"Datapath passes:\s+(\d+)\s+\(([\d.]+) passes/pkt\)",
         ("passes", "passes_per_pkt")),
        ("emc", r"- EMC hits:\s+(\d+)", ("emc_hits",)),
        ("mf", r"- Megaflow hits:\s+(\d+)", ("megaflow_hits",)),
        ("up", r"- Upcalls:\s+(\d+)", ("upcalls",)),
    ]
    for line in text.splitlines():
        m = re.match(r"Measurement duration:\s+([\d.]+) s", line.strip())
        if m:
            out["duration_s"] = float(m.group(1))
            continue
        m = re.match(r"pmd thread numa_id (\d+) core_id (\d+):", line)
        if m:
            cur = out["pmds"].setdefault("pmd %s/%s" % m.groups(), {})
            continue
        if cur is None:
            continue
        for _, pat, names in pats:
            m = re.match(pat, line.strip())
            if m:
                for name, val in zip(names, m.groups()):
                    if val is not None:
                        cur[name] = float(val) if "." in val else int(val)
                break
    return out


PORT_RX_RE = re.compile(r"^\s*port\s+(\S+?):\s+rx pkts=(\d+|\?), "
                        r"bytes=(\d+|\?), drop=(\d+|\?)")
PORT_TX_RE = re.compile(r"^\s*tx pkts=(\d+|\?), bytes=(\d+|\?), "
                        r"drop=(\d+|\?)")


def parse_dump_ports(text: str) -> Dict[str, Dict[str, Optional[int]]]:
    """`ovs-ofctl --no-names dump-ports BR` -> {port: {rx, rx_bytes,
    rx_drop, tx, tx_bytes, tx_drop}}; port is the OpenFlow number as a
    string, or LOCAL.  Counters a port does not have are None."""
    out: Dict[str, Dict[str, Optional[int]]] = {}
    cur: Optional[Dict[str, Optional[int]]] = None
    for line in text.splitlines():
        m = PORT_RX_RE.match(line)
        if m:
            cur = out.setdefault(m.group(1).strip('"'), {})
            cur.update(rx=_num(m.group(2)), rx_bytes=_num(m.group(3)),
                       rx_drop=_num(m.group(4)))
            continue
        m = PORT_TX_RE.match(line)
        if m and cur is not None:
            cur.update(tx=_num(m.group(1)), tx_bytes=_num(m.group(2)),
                       tx_drop=_num(m.group(3)))
            cur = None
    return out


def parse_rxq_show(text: str) -> Dict[str, List[str]]:
    """`ovs-appctl dpif-netdev/pmd-rxq-show` -> {pmd: [port names]}."""
    out: Dict[str, List[str]] = {}
    cur: List[str] = []
    for line in text.splitlines():
        m = re.match(r"pmd thread numa_id (\d+) core_id (\d+):", line)
        if m:
            cur = out.setdefault("pmd %s/%s" % m.groups(), [])
            continue
        m = re.match(r"\s+port:\s+(\S+)\s+queue-id:", line)
        if m:
            cur.append(m.group(1))
    return out


PERF_RE = re.compile(r"^\s*([\d.]+)%\s+\[(.)\]\s+(\S+)")


def parse_perf_report(text: str, n: int = 10) -> List[List[Any]]:
    """`perf report --stdio --no-children --sort symbol` -> the top n
    [percent, symbol] (kernel symbols marked '[k] ')."""
    out: List[List[Any]] = []
    for line in text.splitlines():
        m = PERF_RE.match(line)
        if m:
            sym = m.group(3) if m.group(2) != "k" else "[k] " + m.group(3)
            out.append([float(m.group(1)), sym])
    return out[:n]


def profile_text(top: Optional[List[List[Any]]], n: int = 5) -> str:
    if not top:
        return "n/a"
    return ", ".join("%s %.0f%%" % (sym, pct) for pct, sym in top[:n])


def parse_task_stat(text: str) -> int:
    """/proc/PID/task/TID/stat -> the thread's CPU time (utime + stime),
    in clock ticks (os.sysconf("SC_CLK_TCK") per second).  The name in
    parentheses may hold spaces: the fields are counted after its ")"."""
    fields = text[text.rindex(")") + 1:].split()
    # Fields 14 and 15 of proc(5); fields[0] is field 3 (state).
    return int(fields[11]) + int(fields[12])


def parse_malloc_stats(text: str) -> int:
    """`ovs-appctl dpdk/get-malloc-stats` -> bytes allocated, all heaps."""
    return sum(int(x) for x in re.findall(r"Alloc_size:(\d+)", text))


def parse_configure_cflags(config_log: str) -> Optional[str]:
    """The CFLAGS given to an OVS tree's ./configure (from config.log)."""
    for line in config_log.splitlines():
        if line.strip().startswith("$ ./configure"):
            for word in shlex.split(line.strip()[2:]):
                if word.startswith("CFLAGS="):
                    return word[len("CFLAGS="):]
            return ""
    return None
