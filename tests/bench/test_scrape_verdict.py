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

"""The metrics part's verdict (bench/scrape.py): every scrape counts."""

from typing import Any, Dict, List, Optional

from ovs_daqring.bench.scrape import metrics_verdicts


def _stat(*ms: float) -> Dict[str, Any]:
    vals = [x / 1000.0 for x in ms]
    return {"values": vals, "n": len(vals), "max": max(vals),
            "median": sorted(vals)[len(vals) // 2]}


def _verdict(during: Optional[Dict[str, Any]]) -> Optional[bool]:
    got: List[Any] = []
    m = {"changed_s": _stat(14, 15, 31), "same_s": _stat(10, 11),
         "during_s": during, "series": 40971,
         "update_cpu_s": _stat(200), "render_cpu_s": _stat(120),
         "pmd_processing_cycles": 0}
    metrics_verdicts(m, lambda name, text, ok: got.append((name, ok)))
    assert [n for n, _ in got] == ["scrape_2048"]
    return got[0][1]


def test_a_slow_scrape_during_an_update_misses_the_target() -> None:
    """A scrape that meets the update counts as any other: one of 240 ms
    misses the target, though those after the update were fast."""
    assert _verdict(_stat(30, 36, 240)) is False


def test_every_scrape_in_time_meets_it() -> None:
    assert _verdict(_stat(30, 36, 90)) is True


def test_no_scrape_during_an_update_is_not_a_pass() -> None:
    assert _verdict(None) is False
