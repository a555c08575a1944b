# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""daq-bench part "share": its burst, verdict and summary, from made-up
results (no switch)."""

from typing import Any, Dict, List, Optional

from ovs_daqring.bench import parts, share
from ovs_daqring.bench.stats import summarize


def point(rate: int, ratios: List[float],
          egress: List[float]) -> Dict[str, Any]:
    return {"rate_bps": rate, "burst_bytes": share.burst_bytes(rate, 20),
            "ratio": summarize(ratios), "egress": summarize(egress),
            "fast_us_per_it": summarize([1.0]),
            "slow_us_per_it": summarize([6.0]), "shares": [0.99]}


def verdict(res: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    rows: List[Dict[str, Any]] = []
    share.share_verdicts(res, lambda key, value, met, shares=(), note="":
                         rows.append({"key": key, "value": value,
                                      "met": met}))
    assert [r["key"] for r in rows] == ["share"]
    return rows[0]


def test_burst_bytes() -> None:
    # 32 frames of 1542 B last 39 us at 10 Gbit/s: the default.
    assert share.burst_bytes(10 ** 10, 20) == 0
    # 20 us at 100 Gbit/s: 250000 B, and the frame that empties it.
    assert share.burst_bytes(10 ** 11, 20) == 250000 + 1542


def test_verdict_every_repeat() -> None:
    good = {"asked_points": 2, "points": [
        point(10 ** 10, [0.95, 1.05], [0.995, 1.0]),
        point(10 ** 11, [0.92, 0.98], [0.991, 0.999])]}
    assert verdict(good)["met"] is True
    unfair = {"asked_points": 1,
              "points": [point(10 ** 11, [0.28, 0.95], [0.995])]}
    assert verdict(unfair)["met"] is False
    slow = {"asked_points": 1,
            "points": [point(10 ** 10, [1.0], [0.98, 0.995])]}
    assert verdict(slow)["met"] is False
    missing = {"asked_points": 2,
               "points": [point(10 ** 10, [1.0], [1.0])]}
    assert verdict(missing)["met"] is False
    assert verdict(None)["met"] is None
    assert verdict({"error": "boom"})["value"] == "boom"


def test_markdown_and_part() -> None:
    res = {"frame_len": 1518, "frame_overhead": 24, "loaders": 6,
           "burst_us": 20.0, "window_s": 2.0, "asked_points": 1,
           "points": [point(10 ** 11, [0.97], [0.985])]}
    md = "\n".join(share.markdown(res))
    assert "## Shared egress on two PMD threads" in md
    assert "| 100 Gbit/s | 251542 | 0.970 |" in md
    assert share.markdown(None) == []
    assert "share" in parts.PARTS and "share" not in parts.DEFAULT_PARTS
    assert "share" in parts.TARGETS
