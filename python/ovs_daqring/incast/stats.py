"""Statistics, the ideal-goodput model and the results schema (pure)."""

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

SCHEMA = "daq-incast/1"

# Bytes on the wire per TCP segment besides its payload, as the access
# link sees them: Ethernet header 14, IPv4 20, TCP 20, TCP timestamps 12;
# plus the per-frame overhead the link is told to charge (FCS 4,
# preamble 8, inter-frame gap 12 = 24 by default).
L2_L4_HEADERS = 14 + 20 + 20 + 12


def percentile(values: Sequence[float], q: float) -> float:
    """q-th percentile (0..100) with linear interpolation between closest
    ranks (numpy's default method)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError("percentile %r outside 0..100" % q)
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize_times(times: Sequence[float]) -> Dict[str, float]:
    """Collection-time summary in seconds."""
    if not times:
        raise ValueError("no collection times")
    return {"mean": sum(times) / len(times), "p50": percentile(times, 50),
            "p99": percentile(times, 99), "max": max(times),
            "min": min(times)}


def count_timeouts(times: Sequence[float], threshold: float = 0.2) -> int:
    """Events whose collection took at least one TCP minimum RTO."""
    return sum(1 for t in times if t >= threshold)


def goodput(event_bytes: Sequence[int], times: Sequence[float],
            busy: Optional[float] = None) -> float:
    """Event bytes over collection time, in bit/s, averaged over events
    as total bytes / total time: what a DCM collecting events back to back
    gets (the mean of per-event ratios would let a few fast events hide
    the slow ones).  With several events in flight (processing units),
    `busy` is the time at least one event was being collected (the union
    of the events' intervals, see busy_time()); with one event at a time
    it equals the sum of the collection times."""
    if len(event_bytes) != len(times) or not times:
        raise ValueError("need one byte count per collection time")
    total_t = sum(times) if busy is None else busy
    if total_t <= 0:
        raise ValueError("collection times must be positive")
    return sum(event_bytes) * 8 / total_t


def busy_time(intervals: Sequence[Sequence[float]]) -> float:
    """Length of the union of (start, end) intervals: the time during
    which at least one event was being collected."""
    total, end = 0.0, None
    for a, b in sorted((float(a), float(b)) for a, b in intervals):
        if b < a:
            raise ValueError("interval ends before it starts")
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def mean_event_goodput(event_bytes: Sequence[int],
                       times: Sequence[float]) -> float:
    """Mean over events of each event's bytes / collection time (bit/s)."""
    if len(event_bytes) != len(times) or not times:
        raise ValueError("need one byte count per collection time")
    return sum(b * 8 / t for b, t in zip(event_bytes, times)) / len(times)


def segments(payload: int, mss: int) -> int:
    return max(1, -(-payload // mss))


def wire_bytes(payload: int, mss: int, overhead: int) -> int:
    """Bytes the access link carries for one fragment of `payload` bytes
    sent as MSS-sized TCP segments."""
    return payload + segments(payload, mss) * (L2_L4_HEADERS + overhead)


def payload_efficiency(fragment: int, mss: int, overhead: int) -> float:
    """Fraction of the link's bytes that are fragment payload.  For a
    fragment of whole segments this is MSS / (MSS + 66 + overhead), e.g.
    1448 / 1538 = 94.1% for MTU 1500 on real Ethernet."""
    return fragment / wire_bytes(fragment, mss, overhead)


def ideal_goodput(link_bps: float, fragment: int, mss: int,
                  overhead: int) -> float:
    """Link rate x payload efficiency (bit/s of fragment payload)."""
    return link_bps * payload_efficiency(fragment, mss, overhead)


def ideal_collection_time(link_bps: float, ros: int, fragment: int,
                          mss: int, overhead: int) -> float:
    """Seconds to carry one event over the access link, nothing else
    (no round trip, no request time)."""
    return ros * wire_bytes(fragment, mss, overhead) * 8 / link_bps


def link_split(transfer: Sequence[float], event_bytes: Sequence[int],
               read_lag: Sequence[float], link_time: float,
               ideal_bps: float) -> Dict[str, Any]:
    """Where the events' time went after their request path: per event the
    `transfer`, from the first ROS' send (its stamp) to the arrival of the
    event's last frame at the DCM host (the kernel's receive time), which
    is the switch's and the access link's part, and the DCM process' time
    from that arrival to its read (`read_lag`).  `link_time` is the time
    during which transfers ran: per access link the union of its DCMs'
    events' transfers (they overlap with several processing units or
    several DCMs on one host), summed over the links.  `busy_ratio` is
    the time the links need for the events' bytes at `ideal_bps` (one
    access link's ideal goodput) over `link_time`: 1.0 when the link
    carried every event
    at its rate from the first send on (a little above 1.0 where the
    link's burst let the first frames through at once; below it by the
    first frame's way through the switch, tens of microseconds)."""
    n = len(transfer)
    if not n or {len(event_bytes), len(read_lag)} != {n}:
        raise ValueError("need transfer, bytes and read lag per event")
    if ideal_bps <= 0:
        raise ValueError("ideal goodput must be positive")
    need = sum(b * 8 / ideal_bps for b in event_bytes)
    return {"events": n,
            "transfer_s": summarize_times(transfer),
            "read_lag_s": summarize_times(read_lag),
            "link_time_s": link_time,
            "busy_ratio": need / link_time if link_time > 0 else 0.0}


def link_words(mode: Mapping[str, Any]) -> str:
    """' link busy X% after the first send,' for a mode's summary line, or
    '' without the ROS' stamps and kernel receive times."""
    link = mode.get("link")
    if not link:
        return ""
    return (" link busy %.1f%% after the first send,"
            % (100 * link["busy_ratio"]))


def probe_words(tcp: Mapping[str, Any]) -> str:
    """' (N tail losses repaired by loss probes)' after a mode's RTO
    count, or '' when none was: a loss probe is no RTO, but it repairs
    a lost message of one segment only after 2 x SRTT plus the minimum
    RTO (200 ms), so an event that took that long with no RTO had one
    (see counters.tcp_figures())."""
    n = tcp.get("probe_recoveries") or 0
    if not n:
        return ""
    return " (%d tail loss%s repaired by loss probes)" % (
        n, "" if n == 1 else "es")


def counter_delta(before: Mapping[str, int],
                  after: Mapping[str, int]) -> Dict[str, int]:
    """after - before per key; keys missing before count from 0."""
    return {k: int(v) - int(before.get(k, 0)) for k, v in after.items()}


def summarize_mode(times: Sequence[float], event_bytes: Sequence[int],
                   ideal_bps: float, rto_threshold: float,
                   busy: Optional[float] = None,
                   first_byte: Optional[Sequence[float]] = None
                   ) -> Dict[str, Any]:
    """The per-mode figures from per-event collection times and bytes;
    `busy`: the collection's busy interval (seconds, see goodput());
    `first_byte`: per event, the time from its request to its first
    byte at the DCM."""
    gp = goodput(event_bytes, times, busy)
    out: Dict[str, Any] = {}
    if busy is not None:
        out["busy_s"] = busy
    if first_byte:
        out["first_byte_s"] = summarize_times(first_byte)
    return dict(out, **{
        "events": len(times),
        "collection_time_s": summarize_times(times),
        "goodput_bps": gp,
        "goodput_mean_of_events_bps": mean_event_goodput(event_bytes,
                                                         times),
        "ideal_ratio": gp / ideal_bps if ideal_bps > 0 else 0.0,
        "timeouts": count_timeouts(times, rto_threshold),
    })


# ------------------------------------------------- shared links, CPU
def overlapping(spans: Sequence[Sequence[float]],
                intervals: Sequence[Sequence[float]]) -> List[int]:
    """Indices of the (start, end) SPANS that overlap at least one of the
    INTERVALS (touching ends count)."""
    ivs = sorted((float(a), float(b)) for a, b in intervals)
    out = []
    for i, (a, b) in enumerate(spans):
        if any(x <= b and a <= y for x, y in ivs):
            out.append(i)
    return out


def dcm_figures(times: Sequence[float], event_bytes: Sequence[int],
                starts: Sequence[float]) -> Dict[str, Any]:
    """One DCM's events (collection times, bytes, absolute starts in
    seconds): its goodput over the time it was collecting (the union of
    its events) and its collection-time percentiles."""
    spans = [(s, s + t) for s, t in zip(starts, times)]
    return {"events": len(times), "bytes": sum(event_bytes),
            "goodput_bps": goodput(event_bytes, times, busy_time(spans)),
            "collection_time_s": summarize_times(times)}


def others_latency(per_dcm: Sequence[Mapping[str, Any]], hog: int,
                   hog_active: bool) -> Dict[str, Any]:
    """The collection times of every DCM but HOG (per_dcm[i]: "times",
    "starts", absolute seconds), and, when HOG_ACTIVE, those of their
    events that overlapped one of the hog's (the other DCMs' latency
    while the hog's events pass)."""
    times: List[float] = []
    spans: List[Tuple[float, float]] = []
    for i, d in enumerate(per_dcm):
        if i != hog:
            times += list(d["times"])
            spans += [(s, s + t) for s, t in zip(d["starts"], d["times"])]
    if not times:
        raise ValueError("no DCM besides the hog")
    out: Dict[str, Any] = {"dcms": len(per_dcm) - 1,
                           "all": summarize_times(times)}
    if hog_active:
        h = per_dcm[hog]
        during = overlapping(spans, [(s, s + t) for s, t in
                                     zip(h["starts"], h["times"])])
        if during:
            out["during_hog"] = summarize_times([times[i] for i in during])
            out["during_hog"]["events"] = len(during)
    return out


# The states of a CPU line in /proc/stat, in order; guest time is part of
# user (and guest_nice of nice) already.
PROC_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq",
                    "softirq", "steal")
PROC_STAT_IDLE = ("idle", "iowait")


def parse_proc_stat(text: str) -> Dict[str, Tuple[int, int]]:
    """/proc/stat's cpu lines as {"cpu": (busy, total), "cpu0": ...} in
    clock ticks (USER_HZ); busy is everything but idle and iowait."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or not parts[0].startswith("cpu"):
            continue
        vals = dict(zip(PROC_STAT_FIELDS, (int(x) for x in parts[1:9])))
        if len(vals) < 4:
            raise ValueError("short /proc/stat line: %r" % line)
        total = sum(vals.values())
        idle = sum(vals.get(k, 0) for k in PROC_STAT_IDLE)
        out[parts[0]] = (total - idle, total)
    if "cpu" not in out:
        raise ValueError("no cpu line in /proc/stat")
    return out


def parse_proc_steal(text: str) -> Dict[str, int]:
    """Steal time of each cpu line of /proc/stat ({"cpu": ticks, "cpu0":
    ...}, USER_HZ): the time the hypervisor ran something else while the
    virtual CPU had work, which no process of this machine sees (0 on
    bare metal and on kernels that do not count it)."""
    i = PROC_STAT_FIELDS.index("steal") + 1
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0].startswith("cpu"):
            out[parts[0]] = int(parts[i]) if len(parts) > i else 0
    return out


def cpu_per_byte(before: Mapping[str, Tuple[int, int]],
                 after: Mapping[str, Tuple[int, int]], ticks_per_s: float,
                 delivered: int) -> Dict[str, Any]:
    """The whole machine's CPU time between two parse_proc_stat() reads,
    per byte of event data DELIVERED: busy CPU seconds of every CPU
    together (the PMD's busy polling, the bridge's forwarding in the
    senders' system calls and softirqs, the agents, and whatever else
    ran), the share of the CPUs' time that was busy, per CPU, and
    nanoseconds of CPU per delivered byte."""
    if delivered <= 0:
        raise ValueError("no bytes delivered")
    if ticks_per_s <= 0:
        raise ValueError("clock ticks per second must be positive")
    busy = after["cpu"][0] - before["cpu"][0]
    total = after["cpu"][1] - before["cpu"][1]
    per = {}
    for k in sorted(after):
        if k != "cpu" and k in before:
            t = after[k][1] - before[k][1]
            per[k] = (after[k][0] - before[k][0]) / t if t > 0 else 0.0
    return {"busy_s": busy / ticks_per_s, "cpus_s": total / ticks_per_s,
            "busy_share": busy / total if total > 0 else 0.0,
            "per_cpu_busy_share": per, "delivered_bytes": delivered,
            "ns_per_byte": busy / ticks_per_s * 1e9 / delivered}


# ---------------------------------------------------------------- schema
# A deliberately small schema checker (stdlib only): key -> type, nested
# dicts describe sub-objects.  Lists of modes are checked element-wise.
_NUM = (int, float)
MODE_SCHEMA: Dict[str, Any] = {
    "mode": str, "label": str, "status": str, "error": (str, type(None)),
    "params": dict, "wall_s": _NUM,
    "events": int, "goodput_bps": _NUM, "goodput_mean_of_events_bps": _NUM,
    "ideal_ratio": _NUM, "timeouts": int,
    "collection_time_s": {"mean": _NUM, "p50": _NUM, "p99": _NUM,
                          "max": _NUM, "min": _NUM},
    "tcp": {"retrans_segs": int, "rto_timeouts": int},
    "drops": {"switch_total": int, "daqring": int, "qdisc": int,
              "ports": dict, "qdiscs": dict, "hosts": dict},
    "samples_s": list, "pmd_cpu_share": _NUM,
}
RESULTS_SCHEMA: Dict[str, Any] = {
    "schema": str, "version": str, "started": str, "duration_s": _NUM,
    "host": dict, "config": dict, "topology": dict, "notes": list,
    "ideal": {"efficiency": _NUM, "goodput_bps": _NUM,
              "collection_time_s": _NUM, "event_bytes": int},
    "modes": list, "sweep": (dict, type(None)),
}


def _check(obj: Any, schema: Mapping[str, Any], where: str,
           errors: List[str]) -> None:
    if not isinstance(obj, dict):
        errors.append("%s: not an object" % where)
        return
    for key, typ in schema.items():
        path = "%s.%s" % (where, key)
        if key not in obj:
            errors.append("%s: missing" % path)
        elif isinstance(typ, dict):
            _check(obj[key], typ, path, errors)
        elif isinstance(obj[key], bool) or not isinstance(obj[key], typ):
            errors.append("%s: %s has the wrong type"
                          % (path, type(obj[key]).__name__))


def validate_results(doc: Any) -> List[str]:
    """Errors in a results document (empty list: valid).  Modes that did
    not run (status "error") need only mode, label, status, error and
    params."""
    errors: List[str] = []
    _check(doc, RESULTS_SCHEMA, "$", errors)
    if errors:
        return errors
    if doc["schema"] != SCHEMA:
        errors.append("$.schema: %r is not %r" % (doc["schema"], SCHEMA))
    for i, mode in enumerate(doc["modes"]):
        where = "$.modes[%d]" % i
        if isinstance(mode, dict) and mode.get("status") == "error":
            short = {k: MODE_SCHEMA[k] for k in
                     ("mode", "label", "status", "error", "params")}
            _check(mode, short, where, errors)
        else:
            _check(mode, MODE_SCHEMA, where, errors)
            if isinstance(mode, dict) and mode.get("status") != "ok":
                errors.append("%s.status: %r" % (where, mode.get("status")))
    sweep = doc["sweep"]
    if sweep is not None:
        _check(sweep, {"param": str, "mode": str, "values": list,
                       "labels": list}, "$.sweep", errors)
    return errors


# ---------------------------------------------------------------- table
def format_table(modes: Sequence[Mapping[str, Any]],
                 ideal_bps: Optional[float] = None) -> str:
    """Fixed-width table, one row per mode run."""
    w = max([16] + [len(m["label"]) for m in modes])
    fmt = "%-*s %6s %9s %6s %8s %8s %8s %8s %5s %5s %7s %7s %7s %7s"
    lines = [fmt % (w, "mode", "events", "goodput", "ideal", "mean", "p50",
                    "p99", "max", "slow", "RTOs", "retrans", "sw-drop",
                    "ring-dr", "qdisc"),
             fmt % (w, "", "", "Mbit/s", "%", "ms", "ms", "ms", "ms", "",
                    "", "segs", "pkts", "pkts", "pkts")]
    for m in modes:
        if m.get("status") != "ok":
            lines.append("%-*s error: %s" % (w, m["label"], m.get("error")))
            continue
        ct = m["collection_time_s"]
        lines.append(
            "%-*s %6d %9.1f %6.1f %8.1f %8.1f %8.1f %8.1f %5d %5d %7d %7d "
            "%7d %7d" % (w, m["label"], m["events"], m["goodput_bps"] / 1e6,
                         100 * m["ideal_ratio"], ct["mean"] * 1e3,
                         ct["p50"] * 1e3, ct["p99"] * 1e3, ct["max"] * 1e3,
                         m["timeouts"], m["tcp"]["rto_timeouts"],
                         m["tcp"]["retrans_segs"],
                         m["drops"]["switch_total"], m["drops"]["daqring"],
                         m["drops"]["qdisc"]))
    if ideal_bps:
        lines.append("ideal goodput: %.1f Mbit/s" % (ideal_bps / 1e6))
    lines.append("slow: events that took >= --rto-threshold (one TCP "
                 "minimum RTO; says nothing when an event alone takes that "
                 "long); RTOs: the kernel's TCP retransmission timeouts in "
                 "all namespaces (TcpExt.TCPTimeouts); sw-drop: rx+tx dropped "
                 "on the hosts' switch ports, including frames their "
                 "af_packet RX rings had no room for (deep-fifo: the "
                 "bridge's ports); ring-dr: daqring full; qdisc: tbf "
                 "drops (refusals af_packet retries; deep-fifo: every "
                 "egress FIFO's drops, real losses)")
    return "\n".join(lines)


def format_shared(modes: Sequence[Mapping[str, Any]]) -> str:
    """The whole machine's CPU per delivered byte of every mode run, and
    with several DCMs each DCM's goodput and percentiles and the other
    DCMs' latency next to the hog's events ("" if nothing to show)."""
    ok = [m for m in modes if m.get("status") == "ok"]
    lines = []
    cpu = [m for m in ok if m.get("cpu")]
    if cpu:
        w = max(len(m["label"]) for m in cpu)
        lines.append("CPU of the whole machine per delivered byte "
                     "(/proc/stat, every process; a PMD polls its core "
                     "all the time):")
        for m in cpu:
            c = m["cpu"]
            lines.append("  %-*s %7.2f ns/B  (%.0f%% of %.1f CPU-seconds "
                         "busy)" % (w, m["label"], c["ns_per_byte"],
                                    100 * c["busy_share"], c["cpus_s"]))
    per = [m for m in ok if len(m.get("per_dcm", [])) > 1]
    if per:
        lines.append("per DCM: goodput Mbit/s, collection time p50/p99 "
                     "ms (others: every DCM but DCM 0; during hog: their "
                     "events that overlapped one of the hog's)")
        for m in per:
            cells = ["dcm%d%s %.1f %.1f/%.1f"
                     % (d["dcm"], "(hog)" if d.get("hog") else "",
                        d["goodput_bps"] / 1e6,
                        d["collection_time_s"]["p50"] * 1e3,
                        d["collection_time_s"]["p99"] * 1e3)
                     for d in m["per_dcm"]]
            lines.append("  %s: %s" % (m["label"], "; ".join(cells)))
            o = m.get("others")
            if o:
                text = "    others p99 %.1f ms" % (o["all"]["p99"] * 1e3)
                if "during_hog" in o:
                    text += ", during hog %.1f ms (%d events)" % (
                        o["during_hog"]["p99"] * 1e3,
                        o["during_hog"]["events"])
                lines.append(text)
    return "\n".join(lines)
