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

"""Property tests (Hypothesis) of ovs-daqctl's DCM map parser.

Whatever a map file holds (any text, any YAML document built from the map's
keys and odd values, any CSV), reading it either gives a valid map or
raises the tool's own MapError, whose problems each name the file (and
line) and say what is wrong: never a traceback or another exception.
Valid maps round-trip: written as YAML and as CSV they read back to the
same DCMs, and a map written from what was read reads back the same again.
The command line refuses generated bad maps with exit status 2 and a
message, without a traceback.

The parser is imported in one place, daqctl_parser() below.  Examples per
property are bounded (a few seconds in all); HYPOTHESIS_EXAMPLES=N runs
more.  Run: /usr/bin/python3 -m pytest -q tests/daqctl/test_dcmmap.py
"""

import csv
import io
import ipaddress
import json
import os
import subprocess
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Tuple

import pytest

hypothesis = pytest.importorskip(
    "hypothesis", reason="needs Hypothesis (Debian: python3-hypothesis)")
yaml = pytest.importorskip("yaml", reason="needs PyYAML (python3-yaml)")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
DAQCTL = ROOT / "utilities" / "ovs-daqctl"
EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "100"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                database=None,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.filter_too_much])


# ================================================== the one import of the tool
def daqctl_parser() -> ModuleType:
    """ovs-daqctl's map parser (MapReader, MapError and the limits): the
    only place that knows where it lives."""
    try:
        from ovs_daqring.daqctl import dcmmap, model
    except ImportError as e:
        pytest.skip("ovs-daqctl's map parser cannot be imported (%s): run "
                    "the tests with /usr/bin/python3" % e)
    # The reader and the limits it checks (daqctl/model.py) as one.
    tool = ModuleType("daqctl_map")
    tool.__dict__.update(vars(model))
    tool.__dict__.update(vars(dcmmap))
    return tool


_PARSER: List[ModuleType] = []


def parser() -> ModuleType:
    if not _PARSER:
        _PARSER.append(daqctl_parser())
    return _PARSER[0]


def read(text: str, suffix: str) -> Any:
    """Reads 'text' as a map file ending in 'suffix'; returns the specs or
    the MapError, after checking the error is the tool's own and clear."""
    p = parser()
    fd, path = tempfile.mkstemp(suffix=suffix, prefix="fuzz-map.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        try:
            specs = p.MapReader(path, None, None, None, set(), 0.01).read()
        except p.MapError as e:
            check_error(e, path)
            return e
        for spec in specs:
            check_valid(spec)
        return specs
    finally:
        os.unlink(path)


def check_error(e: Any, path: str) -> None:
    assert e.status == 2
    assert e.problems, "a MapError without problems"
    for prob in e.problems:
        assert prob.where == path or prob.where.startswith(path + ":"), \
            prob.where
        assert prob.reason.strip(), "a problem without a reason"
        assert "Traceback" not in prob.reason


def check_valid(spec: Any) -> None:
    p = parser()
    names, rings = set(), set()
    for d in spec.dcms:
        assert p.NAME_RE.match(d.name) and p.NAME_RE.match(d.ring)
        assert d.name not in names and d.ring not in rings
        names.add(d.name)
        rings.add(d.ring)
        assert isinstance(d.egress, str) and d.egress
        assert bool(d.ip) != bool(d.tuples)
        if d.ip:
            ipaddress.IPv4Address(d.ip)
        assert p.RING_SIZE_MIN <= d.ring_size <= p.RING_SIZE_MAX
        assert p.MAX_BURST_MIN <= d.max_burst <= p.MAX_BURST_MAX
        assert 0 <= d.poll_interval <= p.POLL_INTERVAL_MAX
        assert not (d.max_rate and d.poll_interval)
        if d.max_rate:
            assert p.MAX_RATE_MIN <= d.max_rate <= p.MAX_RATE_MAX
        if d.frame_overhead is not None:
            assert 0 <= d.frame_overhead <= p.FRAME_OVERHEAD_MAX
        if d.max_burst_bytes:
            assert d.max_rate
            assert (p.min_burst_bytes(d.frame_overhead)
                    <= d.max_burst_bytes <= p.MAX_BURST_BYTES_MAX)
        if d.ofport is not None:
            assert 1 <= d.ofport <= p.OFPORT_MAX


# ================================================================ strategies
KEYS = ["name", "ring", "ip", "tuples", "egress", "ring-size", "ring_size",
        "max-burst", "poll-interval", "rate", "frame-overhead", "numa-id",
        "max-burst-bytes", "ofport", "defaults", "dcms", "switches", "db",
        "of", "bridge", "bogus"]
scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-2, max_value=40),
    st.sampled_from([0, 1, 32, 33, 4096, 1048576, 1048577, 1000000,
                     1000001, 65279, 65280, 2**63, -(2**31)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["10.0.0.1", "10.0.0.256", "::1", "p1", "p 1", "",
                     "190mbit", "0.78gbit", "10mbps", "1e99bit", "-5mbit",
                     "tcp:*:*->10.0.0.4:40001", "udp:1.2.3.4:99999->x:1",
                     "*:*->*:*", "NORMAL", "dcm1", "a" * 70, "16kb", "0x10",
                     " 12 ", "unix:/tmp/x", "\u00e9", "1,2"]),
    st.text(max_size=12))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)),
    max_leaves=12)
dcm_dicts = st.dictionaries(
    st.sampled_from(KEYS[:13] + ["bogus"]), values, max_size=7)
documents = st.one_of(
    st.fixed_dictionaries({"dcms": st.lists(dcm_dicts, max_size=4)},
                          optional={"defaults": dcm_dicts,
                                    "bridge": values, "db": values}),
    st.fixed_dictionaries({"switches": st.lists(
        st.fixed_dictionaries({"dcms": st.lists(dcm_dicts, max_size=3)},
                              optional={"name": values, "db": values,
                                        "bridge": values,
                                        "defaults": dcm_dicts}),
        max_size=3)}),
    st.lists(dcm_dicts, max_size=4),
    values)


# ================================================================ properties
@FUZZ
@given(text=st.text(max_size=300), suffix=st.sampled_from([".yaml",
                                                           ".csv"]))
def test_any_text(text: str, suffix: str) -> None:
    read(text, suffix)


@FUZZ
@given(doc=documents)
def test_any_yaml_document(doc: Any) -> None:
    try:
        text = yaml.safe_dump(doc, allow_unicode=True)
    except (yaml.YAMLError, ValueError, OverflowError):
        hypothesis.assume(False)
    read(text, ".yaml")


csv_cells = st.one_of(scalars.map(lambda v: "" if v is None else str(v)),
                      st.text(max_size=8))


@FUZZ
@given(header=st.lists(st.sampled_from(
    ["name", "ring", "ip", "tuples", "egress", "ring_size", "ring-size",
     "max_burst", "poll_interval", "rate", "numa_id", "ofport",
     "frame_overhead", "max_burst_bytes", "bogus", ""]), min_size=1,
                           max_size=6),
       rows=st.lists(st.lists(csv_cells, max_size=7), max_size=4))
def test_any_csv(header: List[str], rows: List[List[str]]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    read(buf.getvalue(), ".csv")


# Valid DCMs: unique names and addresses, options within their limits,
# either packet shaping (poll-interval) or a rate.
@st.composite
def valid_dcms(draw: Any) -> List[Dict[str, Any]]:
    n = draw(st.integers(min_value=0, max_value=5))
    out = []
    for i in range(n):
        d: Dict[str, Any] = {
            "name": "dcm%d" % i,
            "ip": "10.%d.0.%d" % (draw(st.integers(0, 255)), i + 1),
            "egress": draw(st.sampled_from(["p1", "p2", "dcm-port.3"])),
            "ring_size": draw(st.integers(1, 1048576)),
            "max_burst": draw(st.integers(1, 32)),
        }
        if draw(st.booleans()):
            d["poll_interval"] = draw(st.integers(0, 1000000))
        else:
            # Rates of whole Mbit/s: "NNNmbit" reads back exactly.
            d["rate"] = "%dmbit" % draw(st.integers(1, 100000))
            d["frame_overhead"] = draw(st.integers(0, 255))
            if draw(st.booleans()):
                d["max_burst_bytes"] = draw(st.integers(
                    2 * (1518 + d["frame_overhead"]), 16777216))
        if draw(st.booleans()):
            d["ofport"] = draw(st.integers(1, 65279))
        out.append(d)
    return out


def dcm_fields(d: Any) -> Dict[str, Any]:
    return {"name": d.name, "ip": d.ip, "egress": d.egress,
            "ring_size": d.ring_size, "max_burst": d.max_burst,
            "poll_interval": d.poll_interval, "max_rate": d.max_rate,
            "frame_overhead": d.frame_overhead,
            "max_burst_bytes": d.max_burst_bytes, "ofport": d.ofport}


def expected(d: Dict[str, Any]) -> Dict[str, Any]:
    return {"name": d["name"], "ip": d["ip"], "egress": d["egress"],
            "ring_size": d["ring_size"], "max_burst": d["max_burst"],
            "poll_interval": d.get("poll_interval", 0),
            "max_rate": (int(d["rate"][:-4]) * 10**6 if "rate" in d
                         else 0),
            "frame_overhead": d.get("frame_overhead"),
            "max_burst_bytes": d.get("max_burst_bytes", 0),
            "ofport": d.get("ofport")}


def as_csv(dcms: List[Dict[str, Any]]) -> str:
    cols = ["name", "ip", "egress", "ring_size", "max_burst",
            "poll_interval", "rate", "frame_overhead", "max_burst_bytes",
            "ofport"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for d in dcms:
        w.writerow(["" if d.get(c) is None else d[c] for c in cols])
    return buf.getvalue()


@FUZZ
@given(dcms=valid_dcms(), dashes=st.booleans())
def test_valid_maps_round_trip(dcms: List[Dict[str, Any]],
                               dashes: bool) -> None:
    def key(k: str) -> str:
        return k.replace("_", "-") if dashes else k

    doc = {"dcms": [{key(k): v for k, v in d.items()} for d in dcms]}
    from_yaml = read(yaml.safe_dump(doc), ".yaml")
    from_csv = read(as_csv(dcms), ".csv")
    assert isinstance(from_yaml, list), str(from_yaml)
    assert isinstance(from_csv, list), str(from_csv)
    want = [expected(d) for d in dcms]
    assert [dcm_fields(d) for d in from_yaml[0].dcms] == want
    assert [dcm_fields(d) for d in from_csv[0].dcms] == want
    # What was read, written back as a map, reads back the same.
    again = []
    for d in from_yaml[0].dcms:
        m: Dict[str, Any] = {"name": d.name, "ring": d.ring, "ip": d.ip,
                             "egress": d.egress, "ring-size": d.ring_size,
                             "max-burst": d.max_burst}
        if d.max_rate:
            m["rate"] = d.rate or "%dbit" % d.max_rate
            m["frame-overhead"] = d.frame_overhead
            if d.max_burst_bytes:
                m["max-burst-bytes"] = d.max_burst_bytes
        else:
            m["poll-interval"] = d.poll_interval
        if d.ofport is not None:
            m["ofport"] = d.ofport
        again.append(m)
    reread = read(json.dumps({"dcms": again}), ".yaml")
    assert isinstance(reread, list), str(reread)
    assert ([d.key() for d in reread[0].dcms]
            == [d.key() for d in from_yaml[0].dcms])


def test_example_maps_parse() -> None:
    for ext in ("yaml", "csv"):
        path = ROOT / "utilities" / ("dcm-map.example." + ext)
        specs = read(path.read_text(), "." + ext)
        assert isinstance(specs, list) and specs[0].dcms, str(specs)


# One bad map per kind, as the command line sees it: exit status 2, the
# file named in the message, no traceback, nothing contacted (the database
# named does not exist).
@settings(max_examples=min(EXAMPLES, 12), deadline=None, derandomize=True,
          database=None)
@given(doc=documents)
def test_cli_refuses_without_traceback(doc: Any) -> None:
    try:
        text = yaml.safe_dump(doc, allow_unicode=True)
    except (yaml.YAMLError, ValueError, OverflowError):
        hypothesis.assume(False)
    hypothesis.assume(isinstance(read(text, ".yaml"), Exception))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "map.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        p = subprocess.run(
            ["/usr/bin/python3", str(DAQCTL), "--db",
             "unix:%s/no.sock" % tmp, "apply", "--dry-run", path],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr
    assert path in p.stderr


@pytest.mark.parametrize("broken", [
    ("ring_size", "0"), ("max_burst", "33"), ("poll_interval", "-1"),
    ("rate", "fast"), ("ip", "10.0.0.300"), ("ofport", "65280"),
])
def test_parser_catches_each_limit(broken: Tuple[str, str]) -> None:
    """The properties above would not notice a parser that accepted
    anything: each limit is refused on its own, with the line."""
    d = {"name": "dcm1", "ip": "10.0.0.1", "egress": "p1", broken[0]:
         broken[1]}
    e = read(as_csv([d]).replace("\n\n", "\n"), ".csv")
    assert isinstance(e, Exception), "accepted %s=%s" % broken
    assert any(prob.where.endswith(":2") for prob in e.problems), str(e)


def test_rate_and_poll_interval_name_their_dcm() -> None:
    """A DCM with both 'rate' and 'poll_interval' is named in the
    problem, and its other problems are reported too."""
    e = read("dcms:\n"
             "  - {name: dcm1, ip: 10.0.0.1, egress: p1}\n"
             "  - {name: dcm3, ip: 10.0.0.3, egress: p3, rate: 190mbit,\n"
             "     poll-interval: 5, max-burst: 99}\n", ".yaml")
    assert isinstance(e, Exception)
    reasons = [(prob.where.rsplit(":", 1)[1], prob.reason)
               for prob in e.problems]
    assert ("3", "DCM dcm3: give either 'rate' or 'poll-interval', not "
            "both") in reasons, reasons
    assert any("DCM dcm3: max-burst" in r for _, r in reasons), reasons


def test_reader_keeps_what_it_could_read() -> None:
    """After a refused map, the reader still has the switches and the
    DCMs it could read: "apply" checks the switch against them in the
    same pass (ovs-daqctl.rst, "Bad Maps")."""
    p = parser()
    fd, path = tempfile.mkstemp(suffix=".yaml", prefix="map.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write("dcms:\n"
                    "  - {name: dcm1, ip: 10.0.0.1, egress: p1, "
                    "ring-size: 0}\n"
                    "  - {name: dcm2, ip: 10.0.0.2, egress: p9}\n")
        reader = p.MapReader(path, None, None, None, set(), 0.01)
        with pytest.raises(p.MapError):
            reader.read()
        assert [[d.name for d in s.dcms] for s in reader.specs] == [["dcm2"]]
    finally:
        os.unlink(path)
