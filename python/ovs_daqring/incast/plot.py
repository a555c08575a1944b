"""PNG plots of a results document (matplotlib, Agg backend)."""

import os
from typing import Any, Dict, List

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker as ticker  # noqa: E402


def latency_cdf(doc: Dict[str, Any], path: str) -> None:
    """Collection-time CDF, one curve per mode run."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for m in doc["modes"]:
        if m["status"] != "ok" or not m["samples_s"]:
            continue
        xs = sorted(t * 1e3 for t in m["samples_s"])
        ys = [(i + 1) / len(xs) for i in range(len(xs))]
        ax.step(xs, ys, where="post", label="%s (%.0f Mbit/s)"
                % (m["label"], m["goodput_bps"] / 1e6))
    ideal = doc["ideal"]["collection_time_s"] * 1e3
    ax.axvline(ideal, color="grey", linestyle=":", label="ideal %.1f ms"
               % ideal)
    ax.axvline(doc["config"]["rto_threshold_s"] * 1e3, color="red",
               linestyle="--", linewidth=0.8, label="TCP min RTO")
    ax.set_xscale("log")
    ax.set_xlabel("collection time (ms)")
    ax.set_ylabel("fraction of events")
    c = doc["config"]
    ax.set_title("%d ROS x %d B into %d DCM(s), %.0f Mbit/s access link"
                 % (c["ros"], c["fragment_size"], c["dcms"],
                    c["link_rate_bps"] / 1e6))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def sweep(doc: Dict[str, Any], path: str) -> None:
    """Goodput and p99 collection time against the swept parameter, with
    baseline modes as horizontal lines (thesis Fig. 5.8 shape)."""
    sw = doc["sweep"]
    runs = {m["label"]: m for m in doc["modes"]}
    xs: List[float] = []
    gp: List[float] = []
    p99: List[float] = []
    for v, label in zip(sw["values"], sw["labels"]):
        m = runs.get(label)
        if m is None or m["status"] != "ok":
            continue
        xs.append(v)
        gp.append(m["goodput_bps"] / 1e6)
        p99.append(m["collection_time_s"]["p99"] * 1e3)
    fig, (a1, a2) = plt.subplots(2, 1, sharex=True, figsize=(7, 6))
    a1.plot(xs, gp, "o-", label=sw["mode"])
    a2.plot(xs, p99, "o-", label=sw["mode"])
    for m in doc["modes"]:
        if m["label"] in sw["labels"] or m["status"] != "ok":
            continue
        a1.axhline(m["goodput_bps"] / 1e6, linestyle="--", color="grey",
                   linewidth=0.8)
        a1.annotate(m["label"], (xs[0] if xs else 1, m["goodput_bps"] / 1e6),
                    fontsize="small", va="bottom")
        a2.axhline(m["collection_time_s"]["p99"] * 1e3, linestyle="--",
                   color="grey", linewidth=0.8)
        a2.annotate(m["label"], (xs[0] if xs else 1,
                                 m["collection_time_s"]["p99"] * 1e3),
                    fontsize="small", va="bottom")
    a1.axhline(doc["ideal"]["goodput_bps"] / 1e6, color="green",
               linestyle=":", label="ideal")
    a1.set_ylabel("goodput (Mbit/s)")
    a1.set_ylim(bottom=0)
    a2.set_ylabel("p99 collection time (ms)")
    a2.set_yscale("log")
    a2.set_xlabel(sw["param"])
    a2.axhline(doc["config"]["rto_threshold_s"] * 1e3, color="red",
               linestyle="--", linewidth=0.8, label="TCP min RTO")
    if xs and min(xs) > 0 and max(xs) / min(xs) >= 8:
        a2.set_xscale("log", base=2)
        a2.set_xticks(xs)
        a2.xaxis.set_major_formatter(ticker.ScalarFormatter())
        a2.xaxis.set_minor_formatter(ticker.NullFormatter())
    for a in (a1, a2):
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def failover(m: Dict[str, Any], path: str) -> None:
    """--topology fabric --failover: the mode's goodput and retransmitted
    segments over time, the link's down and up, the fabric's limits
    (thesis Figure 6.10)."""
    fo = m["failover"]
    tl = fo["timeline"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ts = [b["t_s"] for b in tl]
    ax.step(ts, [b["goodput_bps"] / 1e6 for b in tl], where="post",
            label="goodput")
    ax.axhline(fo["limit_goodput_bps"] / 1e6, color="grey", linestyle=":",
               label="limit")
    if fo["degraded_limit_goodput_bps"] != fo["limit_goodput_bps"]:
        ax.axhline(fo["degraded_limit_goodput_bps"] / 1e6, color="grey",
                   linestyle="-.", label="limit, link down")
    for key, what in (("down_at_s", "link down"), ("up_at_s", "link up")):
        if fo.get(key) is not None:
            ax.axvline(fo[key], color="red", linestyle="--", linewidth=0.8,
                       label=what)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("goodput (Mbit/s)")
    ax2 = ax.twinx()
    ax2.step(ts, [b["retrans_segs"] for b in tl], where="post",
             color="tab:orange", label="retransmitted segments")
    ax2.set_ylabel("retransmitted segments per bin")
    ax.set_title("%s: %s down and up" % (m["label"], fo["link"]))
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="lower right", fontsize="small")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_plots(doc: Dict[str, Any], plot_dir: str) -> List[str]:
    os.makedirs(plot_dir, exist_ok=True)
    paths = [os.path.join(plot_dir, "latency-cdf.png")]
    latency_cdf(doc, paths[0])
    if doc.get("sweep"):
        paths.append(os.path.join(plot_dir, "sweep-%s.png"
                                  % doc["sweep"]["param"]))
        sweep(doc, paths[1])
    for m in doc["modes"]:
        if m.get("status") == "ok" and m.get("failover"):
            paths.append(os.path.join(plot_dir, "failover-%s.png"
                                      % m["label"].replace(" ", "_")))
            failover(m, paths[-1])
    return paths
