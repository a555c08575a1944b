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

"""Tests of utilities/ovs-daqctl.

The map checks are pure unit tests; the test of a transaction planned
again needs an ovsdb-server alone (bare_db, no root).  Everything else
runs against a real ovsdb-server and the patched ovs-vswitchd (userspace
datapath, DPDK with --no-pci --in-memory, one PMD on core 1), both in a
network namespace of their own, started once for the module: skipped,
with the reason, when not root, without the build in ovs/, or without
free huge pages.

Run: /usr/bin/python3 -m pytest -q tests/cmd/test_ovs_daqctl.py  (about a
minute, most of it ovs-vswitchd adding 1000 daqrings).
"""

import hashlib
import importlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import re
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import (Any, Dict, Iterator, List, Optional, Set, Tuple,
                    Union)

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ovs_daqring import hugepages
from ovs_daqring.process import die_with_parent, stop_process
# The decoder of ovs-vsctl's JSON output that daq-incast uses.
from ovs_daqring.sandbox import (Sandbox, dpdk_settings, ovs_json_value,
                                 tree_binaries)

pytestmark = pytest.mark.machine

ROOT = Path(__file__).resolve().parent.parent.parent

DAQCTL = ROOT / "utilities" / "ovs-daqctl"
DAQCTL_PKG = ROOT / "python" / "ovs_daqring" / "daqctl"
OVS = ROOT / "ovs"
PYTHON = "/usr/bin/python3"
BIN = {
    "vswitchd": OVS / "vswitchd" / "ovs-vswitchd",
    "ovsdb_server": OVS / "ovsdb" / "ovsdb-server",
    "ovsdb_tool": OVS / "ovsdb" / "ovsdb-tool",
    "vsctl": OVS / "utilities" / "ovs-vsctl",
    "ofctl": OVS / "utilities" / "ovs-ofctl",
    "appctl": OVS / "utilities" / "ovs-appctl",
}
SCHEMA = OVS / "vswitchd" / "vswitch.ovsschema"
OVSDB_TCP = 6640          # inside our own namespace: no collisions
OF_TCP = 6653
HUGEPAGES_NEEDED_MB = 256
# How long a test waits for an outcome the switch reaches by itself (a
# packet leaving a ring, a status or a statistic updated): a bound on a
# hang, not a timing (stats-update-interval alone is 5 s, and a loaded
# machine may take several times that).
WAIT_S = 60


# ====================================================== the tool as a module
def _load_daqctl() -> SimpleNamespace:
    """The names of ovs-daqctl's modules (ovs_daqring.daqctl.*), in one
    namespace."""
    # cli first: it says which library is missing (SystemExit).
    importlib.import_module("ovs_daqring.cmd.ovs_daqctl")
    names: Dict[str, Any] = {}
    for mod in ("model", "dcmmap", "ovsdb", "openflow", "ringplan",
                "flowsync", "rollback", "reconcile"):
        names.update(vars(importlib.import_module("ovs_daqring.daqctl."
                                                  + mod)))
    return SimpleNamespace(**names)


@pytest.fixture(scope="module")
def daqctl() -> SimpleNamespace:
    try:
        return _load_daqctl()
    except SystemExit:
        pytest.skip("ovs-daqctl needs the OVS Python library and PyYAML "
                    "(python3-openvswitch, python3-yaml): run the tests "
                    "with /usr/bin/python3")


def read_map(daqctl: SimpleNamespace, tmp_path: Path, text: str,
             name: str = "map.yaml", tolerance: float = 0.01) -> Any:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return daqctl.MapReader(str(path), None, None, None, set(),
                            tolerance).read()


# ================================================================ unit tests
@pytest.mark.parametrize("text,bps", [
    ("190mbit", 190e6), ("0.78gbit", 0.78e9), ("500kbit", 500e3),
    ("1G", 1e9), ("12e6", 12e6), ("100 Mbit/s", 100e6), ("2bit", 2),
])
def test_parse_rate(daqctl: SimpleNamespace, text: str, bps: float) -> None:
    assert daqctl.parse_rate(text) == pytest.approx(bps)


@pytest.mark.parametrize("text", ["10mbps", "fast", "-5mbit", "0", ""])
def test_parse_rate_refuses(daqctl: SimpleNamespace, text: str) -> None:
    with pytest.raises(ValueError):
        daqctl.parse_rate(text)


def test_rate_conversion(daqctl: SimpleNamespace) -> None:
    # The thesis's setting: 32 packets every 500 us = 777.2 Mbit/s.
    b, t, err = daqctl.shaping_for_rate(32 * 1518 * 8 / 500e-6, None, 0.01)
    assert (b, t) == (32, 500) and abs(err) < 1e-9
    b, t, err = daqctl.shaping_for_rate(190e6, None, 0.01)
    assert (b, t) == (32, 2045) and abs(err) < 0.001
    b, t, err = daqctl.shaping_for_rate(190e6, 10, 0.01)
    assert (b, t) == (10, 639)
    # 100 Gbit/s needs b/t = 8.23: no burst <= 32 gets within 1%.
    with pytest.raises(ValueError, match="not achievable"):
        daqctl.shaping_for_rate(100e9, None, 0.01)
    assert daqctl.shaping_for_rate(100e9, None, 0.02)[:2] == (25, 3)
    with pytest.raises(ValueError, match="above the maximum"):
        daqctl.shaping_for_rate(1e12, None, 0.01)
    with pytest.raises(ValueError, match="below the minimum"):
        daqctl.shaping_for_rate(1000, None, 0.01)


def test_example_maps_agree(daqctl: SimpleNamespace) -> None:
    """The YAML and CSV examples describe the same DCMs."""
    specs = {}
    for ext in ("yaml", "csv"):
        path = ROOT / "utilities" / ("dcm-map.example." + ext)
        specs[ext] = daqctl.MapReader(str(path), None, None, None, set(),
                                      0.01).read()
    y, c = specs["yaml"][0].dcms, specs["csv"][0].dcms
    assert [d.key() for d in y] == [d.key() for d in c]
    assert len(y) == 5


GOOD = """\
dcms:
  - {name: dcm1, ip: 10.0.0.1, egress: p1}
  - {name: dcm2, ip: 10.0.0.2, egress: p2}
"""

# (map text, line of the first problem, words of its reason)
BAD_MAPS = [
    ("", 1, "empty"),
    ("dcms: [\n  {name: a, ip: 10.0.0.1, egress: p1}\n", 3, "malformed YAML"),
    ("dcms:\n  - name: a\n    name: b\n", 3, "duplicate key"),
    ("dcms: 5\n", 1, "'dcms' must be a list"),
    ("dcmz: []\n", 1, "unknown map key 'dcmz'"),
    (GOOD + "  - {name: dcm1, ip: 10.0.0.3, egress: p1}\n", 4,
     "duplicate name"),
    (GOOD + "  - {name: dcm3, ip: 10.0.0.1, egress: p1}\n", 4,
     "duplicate IP 10.0.0.1"),
    (GOOD + "  - {name: dcm3, ring: dcm1, ip: 10.0.0.3, egress: p1}\n", 4,
     "duplicate ring port name dcm1"),
    (GOOD + "  - {name: dcm3, ip: 10.0.0.3, egress: dcm1}\n", 4,
     "is the daqring of DCM dcm1"),
    ("dcms:\n  - name: a\n    ip: 10.0.0.1\n    egress: p1\n"
     "    ring-size: 0\n", 5, "ring-size 0 out of range 1..1048576"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, ring-size: 2000000}\n",
     2, "out of range"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, ring-size: 4k}\n", 2,
     "ring-size must be an integer"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, max-burst: 33}\n", 2,
     "max-burst 33 out of range 1..32"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, poll-interval: -1}\n",
     2, "poll-interval -1 out of range"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, max-burst: true}\n", 2,
     "must be an integer"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, rate: 2tbit}\n", 2,
     "rate 2tbit is out of range"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, rate: 999bit}\n", 2,
     "out of range 1.00 kbit/s..1000.00 Gbit/s"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, rate: 1gbit,\n"
     "       frame-overhead: 256}\n", 3,
     "frame-overhead 256 out of range 0..255"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, rate: 10mbps}\n", 2,
     "ambiguous rate unit"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, rate: 1gbit,\n"
     "     poll-interval: 5}\n", 2, "not both"),
    ("dcms:\n  - {name: a, ip: 10.0.0.300, egress: p1}\n", 2,
     "not an IP address"),
    ("dcms:\n  - {name: a, ip: 'fe80::1', egress: p1}\n", 2, "only IPv4"),
    ("dcms:\n  - {name: a, ip: 224.0.0.1, egress: p1}\n", 2, "unicast"),
    # Addresses no DCM can have (issue 25, item 17).
    ("dcms:\n  - {name: a, ip: 127.0.0.1, egress: p1}\n", 2,
     "ip 127.0.0.1 is not a unicast host address (loopback"),
    ("dcms:\n  - {name: a, ip: 0.1.2.3, egress: p1}\n", 2,
     "ip 0.1.2.3 is not a unicast host address ('this network'"),
    ("dcms:\n  - {name: a, ip: 255.255.255.255, egress: p1}\n", 2,
     "(limited broadcast"),
    ("dcms:\n  - {name: a, ip: 240.0.0.1, egress: p1}\n", 2,
     "ip 240.0.0.1 is not a unicast host address (reserved"),
    ("dcms:\n  - {name: a, tuples: ['*:*->127.0.0.5:80'], egress: p1}\n",
     2, "tuple destination 127.0.0.5 is not a unicast host address"),
    ("dcms:\n  - {name: a, tuples: ['0.0.0.7:*->10.0.0.5:80'],\n"
     "     egress: p1}\n", 2, "tuple source 0.0.0.7 is not a unicast"),
    ("dcms:\n  - {name: a, egress: p1}\n", 2, "no match"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1}\n", 2, "no 'egress'"),
    ("dcms:\n  - {ip: 10.0.0.1, egress: p1}\n", 2, "needs a 'name'"),
    ("dcms:\n  - {name: LOCAL, ip: 10.0.0.1, egress: p1}\n", 2, "reserved"),
    ("dcms:\n  - {name: 'a b', ip: 10.0.0.1, egress: p1}\n", 2,
     "not a valid port name"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, colour: red}\n", 2,
     "unknown DCM key 'colour'"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, steering: one}\n", 2,
     "steering 'one': two-rule or bound"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, flow-buckets: 3}\n", 2,
     "flow-buckets 3 is not 0 (a strict FIFO) or a power of 2"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, flow-buckets: 1}\n", 2,
     "flow-buckets 1 is not 0"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1,\n"
     "     flow-buckets: 131072}\n", 3,
     "flow-buckets 131072 out of range 0..65536"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, tuples: ['*:*->10.0.0.1:80'],\n"
     "     egress: p1}\n", 2, "either 'ip' or 'tuples'"),
    ("dcms:\n  - {name: a, tuples: ['10.0.0.1->10.0.0.2'], egress: p1}\n",
     2, "bad tuple"),
    ("dcms:\n  - {name: a, tuples: ['*:*->*:80'], egress: p1}\n", 2,
     "needs its destination"),
    ("dcms:\n  - {name: a, tuples: ['*:*->10.0.0.4:70000'], egress: p1}\n",
     2, "out of range 1..65535"),
    ("dcms:\n  - {name: a, tuples: ['*:*->10.0.0.4:80'], egress: p1}\n"
     "  - {name: b, tuples: ['10.0.1.1:*->10.0.0.4:*'], egress: p1}\n", 3,
     "overlaps"),
    ("dcms:\n  - {name: a, ip: 10.0.0.4, egress: p1}\n"
     "  - {name: b, tuples: ['*:*->10.0.0.4:80'], egress: p1}\n", 3,
     "overlaps the IP match of DCM a"),
    ("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1, ofport: 7}\n"
     "  - {name: b, ip: 10.0.0.2, egress: p1, ofport: 7}\n", 3,
     "duplicate ofport 7"),
    ("defaults: {ring-size: 0}\ndcms:\n  - {name: a, ip: 10.0.0.1, "
     "egress: p1}\n", 1, "ring-size 0 out of range"),
    ("dcms: []\nswitches: [{bridge: br1, dcms: []}]\n", 1,
     "exclude each other"),
    ("switches:\n  - {name: s, bridge: br1, dcms: []}\n"
     "  - {name: t, bridge: br1, dcms: []}\n", 3, "already listed"),
]


@pytest.mark.parametrize("text,line,words", BAD_MAPS,
                         ids=[w for _, _, w in BAD_MAPS])
def test_bad_map(daqctl: SimpleNamespace, tmp_path: Path, text: str, line: int,
                 words: str) -> None:
    with pytest.raises(daqctl.MapError) as info:
        read_map(daqctl, tmp_path, text)
    first = info.value.problems[0]
    assert first.where == "%s:%d" % (tmp_path / "map.yaml", line), \
        info.value.problems
    assert words in first.reason, info.value.problems
    assert info.value.status == 2


def test_max_burst_bytes_in_maps(daqctl: SimpleNamespace,
                                 tmp_path: Path) -> None:
    """max-burst-bytes (issue 25, A) goes from a map, YAML or CSV, into
    the ring's options beside max-rate; out of range, without 'rate',
    or below two frames with the map's frame overhead, it is refused;
    a change of it alone is an update of the ring."""
    spec, = read_map(daqctl, tmp_path, """\
        defaults: {rate: 200mbit, max-burst-bytes: 24672}
        dcms:
          - {name: d1, ip: 10.0.0.1, egress: p1}
          - {name: d2, ip: 10.0.0.2, egress: p1, max_burst_bytes: 3084}
          - {name: d3, ip: 10.0.0.3, egress: p1, max-burst-bytes: 3164,
             frame-overhead: 64}
        """)
    d1, d2, d3 = spec.dcms
    assert d1.options()["max-burst-bytes"] == "24672"
    assert d1.options()["max-rate"] == "200000000"
    assert d2.options()["max-burst-bytes"] == "3084"
    assert d3.options()["max-burst-bytes"] == "3164"
    assert "24672 bytes" in d1.shaping_text()
    spec, = read_map(daqctl, tmp_path, """\
        name,ip,egress,rate,max_burst_bytes
        d1,10.0.0.1,p1,100mbit,8192
        """, name="map.csv")
    assert spec.dcms[0].max_burst_bytes == 8192
    spec, = read_map(daqctl, tmp_path, """\
        dcms: [{name: d1, ip: 10.0.0.1, egress: p1, rate: 100mbit}]
        """)
    assert "max-burst-bytes" not in spec.dcms[0].options()
    other = daqctl.Dcm(**dict(vars(spec.dcms[0]), max_burst_bytes=9000))
    assert "max-burst-bytes 0 -> 9000" in daqctl.describe_update(
        spec.dcms[0], other)
    # Read back from the switch: the same DCM, no change planned.
    port = SimpleNamespace(name=other.ring,
                           external_ids=other.external_ids())
    iface = SimpleNamespace(options=other.options(), ofport_request=[])
    assert daqctl.dcm_from_row(port, iface).key() == other.key()
    # The map drops it: it is removed from the ring, options that are not
    # ovs-daqctl's stay.
    opts = daqctl.ring_options(dict(other.options(), mine="x"),
                               spec.dcms[0])
    assert opts == dict(spec.dcms[0].options(), mine="x")
    for text, words in (
            ("{name: d, ip: 10.0.0.1, egress: p, rate: 1gbit, "
             "max-burst-bytes: 3083}", "out of range 3084..16777216"),
            ("{name: d, ip: 10.0.0.1, egress: p, rate: 1gbit, "
             "max-burst-bytes: 16777217}", "out of range"),
            ("{name: d, ip: 10.0.0.1, egress: p, rate: 1gbit, "
             "frame-overhead: 64, max-burst-bytes: 3100}",
             "out of range 3164..16777216"),
            ("{name: d, ip: 10.0.0.1, egress: p, "
             "max-burst-bytes: 8192}", "it needs 'rate'"),
            ("{name: d, ip: 10.0.0.1, egress: p, poll-interval: 100, "
             "max-burst-bytes: 8192}", "it needs 'rate'")):
        with pytest.raises(daqctl.MapError) as info:
            read_map(daqctl, tmp_path, "dcms:\n  - %s\n" % text)
        assert words in info.value.problems[0].reason, text


def test_egress_max_rate_in_maps(daqctl: SimpleNamespace,
                                 tmp_path: Path) -> None:
    """egress-max-rate and egress-max-burst-bytes (issues 27 and 28): the
    DCMs bound to one egress port share its rate; from a map, YAML or
    CSV, into the rings' options; read back from the switch as they were
    given; a change of either alone is an update of the ring."""
    spec, = read_map(daqctl, tmp_path, """\
        defaults: {steering: bound, egress-max-rate: 1gbit}
        dcms:
          - {name: d1, ip: 10.0.0.1, egress: p1}
          - {name: d2, ip: 10.0.0.2, egress: p1, rate: 1gbit}
          - {name: d3, ip: 10.0.0.3, egress: p2, egress_max_rate: 400mbit,
             egress-max-burst-bytes: 8192}
        """)
    d1, d2, d3 = spec.dcms
    assert d1.options()["egress"] == "p1"
    assert d1.options()["egress-max-rate"] == "1000000000"
    assert "max-rate" not in d1.options()
    assert "egress-max-burst-bytes" not in d1.options()
    assert d2.options()["max-rate"] == "1000000000"
    assert d2.options()["egress-max-rate"] == "1000000000"
    assert d3.options()["egress-max-rate"] == "400000000"
    assert d3.options()["egress-max-burst-bytes"] == "8192"
    assert "egress p1 shared at 1.00 Gbit/s" in d1.shaping_text()
    spec, = read_map(daqctl, tmp_path, """\
        name,ip,egress,steering,egress_max_rate,egress_max_burst_bytes
        d1,10.0.0.1,p1,bound,10gbit,
        d2,10.0.0.2,p1,bound,10gbit,
        d3,10.0.0.3,p2,bound,2.5gbit,16384
        """, name="map.csv")
    assert [(d.egress_max_rate, d.egress_max_burst_bytes)
            for d in spec.dcms] == [(10**10, 0), (10**10, 0),
                                    (2500000000, 16384)]
    other = daqctl.Dcm(**dict(vars(spec.dcms[0]), egress_max_rate=10**9))
    assert "egress-max-rate 10000000000 -> 1000000000" in \
        daqctl.describe_update(spec.dcms[0], other)
    port = SimpleNamespace(name=d3.ring, external_ids=d3.external_ids())
    iface = SimpleNamespace(options=d3.options(), ofport_request=[])
    assert daqctl.dcm_from_row(port, iface).key() == d3.key()
    # Without them, neither option: and ring_options() removes them.
    spec, = read_map(daqctl, tmp_path, """\
        dcms: [{name: d3, ip: 10.0.0.3, egress: p2, steering: bound}]
        """)
    assert daqctl.ring_options(d3.options(), spec.dcms[0]) == {
        k: v for k, v in d3.options().items() if not k.startswith("egress-")}


BAD_EGRESS_SHARES = [
    ("- {name: d, ip: 10.0.0.1, egress: p, egress-max-rate: 1gbit}",
     1, "it needs 'steering: bound'"),
    ("- {name: d, ip: 10.0.0.1, egress: p, steering: two-rule,\n"
     "   egress-max-rate: 1gbit}", 2, "it needs 'steering: bound'"),
    ("- {name: d, ip: 10.0.0.1, steering: bound, egress-max-rate: 1gbit}",
     1, "no 'egress' port"),
    ("- {name: d, ip: 10.0.0.1, egress: p, steering: bound,\n"
     "   egress-max-rate: fast}", 2, "bad rate 'fast'"),
    ("- {name: d, ip: 10.0.0.1, egress: p, steering: bound,\n"
     "   egress-max-rate: 999}", 2, "egress-max-rate 999 is out of range"),
    ("- {name: d, ip: 10.0.0.1, egress: p, steering: bound,\n"
     "   egress-max-rate: 2tbit}", 2, "out of range"),
    ("- {name: d, ip: 10.0.0.1, egress: p, steering: bound,\n"
     "   poll-interval: 100, egress-max-rate: 1gbit}", 2,
     "exclude each other"),
    ("- {name: d, ip: 10.0.0.1, egress: p, steering: bound,\n"
     "   egress-max-rate: 1gbit, egress-max-burst-bytes: 3083}", 2,
     "egress-max-burst-bytes 3083 out of range 3084..16777216"),
    ("- {name: d, ip: 10.0.0.1, egress: p, steering: bound,\n"
     "   frame-overhead: 64, egress-max-rate: 1gbit,\n"
     "   egress-max-burst-bytes: 3100}", 3, "out of range 3164..16777216"),
    ("- {name: d, ip: 10.0.0.1, egress: p, steering: bound, rate: 1gbit,\n"
     "   egress-max-burst-bytes: 8192}", 2, "it needs 'egress-max-rate'"),
    ("- {name: a, ip: 10.0.0.1, egress: p, steering: bound,\n"
     "   egress-max-rate: 1gbit}\n"
     "- {name: b, ip: 10.0.0.2, egress: p, steering: bound,\n"
     "   egress-max-rate: 500mbit}", 3,
     "DCM b: the DCMs of egress p must share it alike: DCM b gives "
     "egress-max-rate 500000000, DCM a (at "),
    ("- {name: a, ip: 10.0.0.1, egress: p, steering: bound,\n"
     "   egress-max-rate: 1gbit}\n"
     "- {name: b, ip: 10.0.0.2, egress: p}", 3,
     "DCM b gives no egress-max-rate"),
    ("- {name: a, ip: 10.0.0.1, egress: p, steering: bound,\n"
     "   egress-max-rate: 1gbit}\n"
     "- {name: b, ip: 10.0.0.2, egress: p, steering: bound,\n"
     "   egress-max-rate: 1gbit, egress-max-burst-bytes: 8192}", 3,
     "egress-max-burst-bytes 8192"),
    ("- {name: a, ip: 10.0.0.1, egress: p, steering: bound,\n"
     "   egress-max-rate: 1gbit}\n"
     "- {name: b, ip: 10.0.0.2, egress: p, steering: bound,\n"
     "   egress-max-rate: 1gbit, frame-overhead: 0}", 3,
     "frame-overhead 0"),
]


@pytest.mark.parametrize("dcms,line,words", BAD_EGRESS_SHARES,
                         ids=[w for _, _, w in BAD_EGRESS_SHARES])
def test_bad_egress_shares(daqctl: SimpleNamespace, tmp_path: Path,
                           dcms: str, line: int, words: str) -> None:
    """Each refusal of egress-max-rate names the DCM and the line."""
    with pytest.raises(daqctl.MapError) as info:
        read_map(daqctl, tmp_path, "dcms:\n" + textwrap.indent(dcms, "  ")
                 + "\n")
    first = info.value.problems[0]
    assert first.where.endswith("map.yaml:%d" % (line + 1)), \
        info.value.problems
    assert words in first.reason, info.value.problems


def test_egress_share_has_room_for_64(daqctl: SimpleNamespace,
                                      tmp_path: Path) -> None:
    """At most 64 daqrings share one egress port's egress-max-rate
    (DAQRING_SHARE_MAX_RINGS: ovs-vswitchd refuses the 65th); the map is
    refused before, naming the 65th DCM and its line."""
    header = (ROOT / "lib" / "daqring-shaper.h").read_text()
    m = re.search(r"#define DAQRING_SHARE_MAX_RINGS (\d+)", header)
    assert m and int(m.group(1)) == 64

    def text(n: int) -> str:
        return "dcms:\n" + "".join(
            "  - {name: d%d, ip: 10.0.%d.%d, egress: p, steering: bound,\n"
            "     egress-max-rate: 1gbit}\n" % (i, i // 200, i % 200 + 1)
            for i in range(n))

    spec, = read_map(daqctl, tmp_path, text(64))
    assert len(spec.dcms) == 64
    with pytest.raises(daqctl.MapError) as info:
        read_map(daqctl, tmp_path, text(65))
    probs = info.value.problems
    assert len(probs) == 1, probs
    assert probs[0].where.endswith("map.yaml:%d" % (2 + 2 * 64)), probs
    assert ("DCM d64: 65 DCMs share egress p (egress-max-rate), at most 64 "
            "daqrings may share one egress port") in probs[0].reason


BAD_CSV = [
    ("name,ip,egres\ndcm1,10.0.0.1,p1\n", 1, "unknown CSV column 'egres'"),
    ("ip,egress\n10.0.0.1,p1\n", 1, "needs a 'name' column"),
    ("# comment\nname,ip,egress\ndcm1,10.0.0.1,p1,extra\n", 3,
     "4 fields, the header has 3"),
    ("name,ip,egress,ring_size\ndcm1,10.0.0.1,p1,4096\n"
     "dcm2,10.0.0.2,p1,x\n", 3, "ring-size must be an integer"),
    ("name,ip,egress\ndcm1,10.0.0.1,p1\n\ndcm1,10.0.0.2,p1\n", 4,
     "duplicate name"),
]


@pytest.mark.parametrize("text,line,words", BAD_CSV,
                         ids=[w for _, _, w in BAD_CSV])
def test_bad_csv(daqctl: SimpleNamespace, tmp_path: Path, text: str, line: int,
                 words: str) -> None:
    with pytest.raises(daqctl.MapError) as info:
        read_map(daqctl, tmp_path, text, name="map.csv")
    first = info.value.problems[0]
    assert first.where == "%s:%d" % (tmp_path / "map.csv", line), \
        info.value.problems
    assert words in first.reason, info.value.problems


def test_csv_tuples_with_spaces(daqctl: SimpleNamespace,
                                tmp_path: Path) -> None:
    """A CSV tuple may have spaces around its arrow, as in YAML maps;
    tuples are separated by ';' or spaces."""
    spec, = read_map(daqctl, tmp_path, """\
        name,egress,tuples
        a,p1,tcp:*:* -> 10.0.0.4:80; udp:10.0.1.1:5 ->10.0.0.4:81
        b,p1,"10.0.1.2:*  ->  10.0.0.5:80 10.0.1.3:*->10.0.0.5:80"
        """, name="map.csv")
    a, b = spec.dcms
    assert a.match_text() == ("tcp:*:*->10.0.0.4:80 "
                              "udp:10.0.1.1:5->10.0.0.4:81")
    assert b.match_text() == ("tcp:10.0.1.2:*->10.0.0.5:80 "
                              "tcp:10.0.1.3:*->10.0.0.5:80")


@pytest.mark.parametrize("header", [
    "name,ip,egress", "name, ip, egress", "Name , IP,Egress",
    '"name","ip","egress"', "\ufeffname,ip,egress"])
def test_csv_on_stdin(header: str) -> None:
    """A CSV map on standard input is known by its header line (after
    comments), also with spaces, quotes or a byte order mark."""
    text = "%s\n# DCMs\ndcm1, 10.0.0.1, p1\ndcm2,10.0.0.2,p2\n" % header
    p = subprocess.run([PYTHON, str(DAQCTL), "check", "-"], input=text,
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "2 DCMs, map OK" in p.stdout
    # An unknown column is a CSV error, not a YAML one.
    p = subprocess.run([PYTHON, str(DAQCTL), "check", "-"],
                       input=text.replace(header, header.replace(
                           "gress", "gres")),
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert "-:1: unknown CSV column 'egres'" in p.stderr, p.stderr


def test_offline_commands_need_no_ovs_library(tmp_path: Path) -> None:
    """check (without --live), rate and flows --expected read maps only:
    they work without OVS's Python library (python3-openvswitch); a
    command that needs it says so (exit 1)."""
    import yaml
    # A Python without site-packages (-S) that has PyYAML and not 'ovs'.
    lib = tmp_path / "lib"
    lib.mkdir()
    yaml_dir = os.path.dirname(yaml.__file__)
    (lib / "yaml").symlink_to(yaml_dir)
    cyaml = os.path.join(os.path.dirname(yaml_dir), "_yaml")
    if os.path.isdir(cyaml):
        (lib / "_yaml").symlink_to(cyaml)
    env = dict(os.environ, PYTHONPATH=str(lib))

    def run(*argv: str) -> "subprocess.CompletedProcess[str]":
        # Not in the top directory: its ovs/ (the OVS tree) would be
        # imported as a namespace package.
        return subprocess.run([PYTHON, "-S"] + list(argv),
                              capture_output=True, text=True, env=env,
                              cwd=str(tmp_path), timeout=30)

    assert run("-c", "import ovs").returncode != 0
    assert run("-c", "import yaml").returncode == 0
    path = tmp_path / "m.yaml"
    path.write_text(GOOD)
    p = run(str(DAQCTL), "check", str(path))
    assert p.returncode == 0, p.stderr
    assert "2 DCMs, map OK" in p.stdout
    p = run(str(DAQCTL), "rate", "190mbit")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("max-burst=32 poll-interval=2045  #")
    p = run(str(DAQCTL), "flows", "--expected", "--map", str(path))
    assert p.returncode == 0 and "nw_dst=10.0.0.2" in p.stdout, p.stderr
    for cmd in (["show"], ["fabric", "status"], ["check", "--live",
                                                 str(path)]):
        p = run(str(DAQCTL), *cmd)
        assert p.returncode == 1, (cmd, p.stderr)
        assert ("%s needs OVS's Python library: No module named 'ovs' "
                "(Debian: python3-openvswitch" % cmd[0]) in p.stderr, p.stderr


DUMPED = [
    # ovs-ofctl dump-flows with statistics.
    ("cookie=0xdac7000000000001, duration=1.5s, table=0, n_packets=3, "
     "n_bytes=180, idle_age=1, priority=100,ip,nw_dst=10.0.0.1 "
     "actions=output:5",
     (0xdac7000000000001, "0", 100, ["ip", "nw_dst=10.0.0.1"], [],
      "output:5")),
    # --no-stats, a table, properties and flags (separated by spaces).
    (" cookie=0x5, table=3, idle_timeout=60, send_flow_rem check_overlap "
     "importance=7, priority=10,in_port=2 actions=drop",
     (5, "3", 10, ["in_port=2"], ["idle_timeout=60", "send_flow_rem",
                                  "check_overlap", "importance=7"], "drop")),
    # Cookie 0, table 0 and the default priority are left out.
    (" ip,nw_dst=10.0.0.9 actions=output:p1",
     (0, "0", 32768, ["ip", "nw_dst=10.0.0.9"], [], "output:p1")),
    ("priority=1 actions=drop", (0, "0", 1, [], [], "drop")),
    ("actions=NORMAL", (0, "0", 32768, [], [], "NORMAL")),
    ("NXST_FLOW reply (xid=0x4):", None),
]


@pytest.mark.parametrize("line,want", DUMPED)
def test_one_dump_flows_parser(daqctl: SimpleNamespace, line: str,
                               want: Any) -> None:
    """One parser of ovs-ofctl dump-flows (openflow.parse_flow) for what
    apply compares, for the flows command and for the flows of other
    owners."""
    cli = importlib.import_module("ovs_daqring.daqctl.commands")
    assert cli.parse_flow is daqctl.parse_flow
    f = daqctl.parse_flow(line)
    if want is None:
        assert f is None
    else:
        assert (f.cookie, f.table, f.priority, f.match, f.props,
                f.actions) == want


def test_all_problems_reported(daqctl: SimpleNamespace,
                               tmp_path: Path) -> None:
    with pytest.raises(daqctl.MapError) as info:
        read_map(daqctl, tmp_path, """\
            dcms:
              - {name: a, ip: 10.0.0.1, egress: p1, max-burst: 0}
              - {name: b, ip: 10.0.0.2, egress: p1, rate: 2tbit}
              - {name: c, ip: 10.0.0.3, egress: p1}
              - {name: c, ip: 10.0.0.4, egress: p1}
            """)
    assert [p.where.rsplit(":", 1)[1] for p in info.value.problems] == \
        ["2", "3", "5"]


def test_defaults_and_tuples(daqctl: SimpleNamespace, tmp_path: Path) -> None:
    spec, = read_map(daqctl, tmp_path, """\
        bridge: brx
        defaults: {ring-size: 1000, poll-interval: 500, egress: p1}
        dcms:
          - {name: a, ip: 10.0.0.1}
          - {name: b, ip: 10.0.0.2, rate: 190mbit, ring: ringb,
             flow-buckets: 0}
          - name: c
            tuples:
              - "udp:10.0.1.1:5000->10.0.0.3:6000"
              - {dst: 10.0.0.3, dport: 6001}
        """)
    a, b, c = spec.dcms
    assert spec.bridge == "brx"
    assert (a.ring_size, a.max_burst, a.poll_interval) == (1000, 32, 500)
    # A rate is the link's: byte shaping (max-rate), not poll-interval.
    assert (b.ring, b.max_burst, b.poll_interval, b.rate) == \
        ("ringb", 32, 0, "190mbit")
    assert (a.max_rate, b.max_rate) == (0, 190000000)
    # Sparse-flow priority is on by default, 0 turns it off.
    assert a.options() == {"ring-size": "1000", "max-burst": "32",
                           "poll-interval": "500", "flow-buckets": "65536"}
    assert b.options() == {"ring-size": "1000", "max-burst": "32",
                           "poll-interval": "0", "max-rate": "190000000",
                           "flow-buckets": "0"}
    assert c.match_text() == ("udp:10.0.1.1:5000->10.0.0.3:6000 "
                              "tcp:*:*->10.0.0.3:6001")
    assert [(p, m) for p, m, _ in daqctl.dcm_flows(c, "7", "1")] == [
        (100, ["udp", "nw_src=10.0.1.1", "nw_dst=10.0.0.3", "tp_src=5000",
               "tp_dst=6000"]),
        (100, ["tcp", "nw_dst=10.0.0.3", "tp_dst=6001"]),
        (101, ["in_port=7"])]
    assert len({d.cookie() for d in spec.dcms}) == 3
    assert all(d.cookie() >> 48 == 0xdac7 for d in spec.dcms)


def test_cli_refuses_bad_map(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("dcms:\n  - {name: a, ip: 10.0.0.1, egress: p1}\n"
                    "  - {name: a, ip: 10.0.0.2, egress: p1}\n")
    p = subprocess.run([PYTHON, str(DAQCTL), "--db", "unix:/nonexistent",
                        "apply", str(path)], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 2
    assert "%s:3: DCM a: duplicate name" % path in p.stderr
    assert "nothing changed" in p.stderr


def daqctl_json(*argv: str, status: int) -> Dict[str, Any]:
    """Runs ovs-daqctl -f json ARGV (no switch): the one JSON object it
    prints, after checking its exit status and the object's."""
    p = subprocess.run([PYTHON, str(DAQCTL), "-f", "json",
                        "--db", "unix:/nonexistent"] + list(argv),
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == status, p.stderr
    js: Dict[str, Any] = json.loads(p.stdout)
    assert js["status"] == status and isinstance(js["messages"], list)
    return js


@pytest.mark.parametrize("argv,command,why", [
    ([], None, "a command is required"),
    (["add-dcm", "d1", "--ip", "10.0.0.1"], "add-dcm",
     "the following arguments are required: --egress"),
    (["rate", "190mbit", "--max-burst", "many"], "rate",
     "argument --max-burst: invalid int value: 'many'"),
    (["flows", "--expected"], "flows", "flows --expected needs --map MAP"),
    (["frobnicate"], None, "invalid choice: 'frobnicate'"),
])
def test_cli_json_envelope_for_bad_arguments(
        argv: List[str], command: Optional[str], why: str) -> None:
    """-f json: bad arguments give the same envelope as any failure
    (exit 2, command, status, messages, error), on standard output."""
    js = daqctl_json(*argv, status=2)
    assert js["command"] == command
    assert why in js["error"], js


def test_cli_json_envelope_rate_and_errors() -> None:
    """A successful 'rate -f json' has no "error" key (the conversion's
    error is rate_error); a failure has one, with the same envelope."""
    js = daqctl_json("rate", "190mbit", status=0)
    assert "error" not in js
    assert (js["command"], js["max_burst"], js["poll_interval"]) == (
        "rate", 32, 2045)
    assert abs(js["rate_error"]) < 0.01
    js = daqctl_json("rate", "fast", status=2)
    assert js["command"] == "rate" and "fast" in js["error"]
    js = daqctl_json("show", status=1)
    assert (js["command"], js["switches"]) == ("show", [])
    assert "cannot connect" in js["error"]


def test_cli_timeout_bounds_a_silent_server(tmp_path: Path) -> None:
    """A database that accepts connections and never answers (a hung
    ovsdb-server): --timeout ends every request, get_schema first, with
    a clear error and exit 1, instead of waiting for ever."""
    import socket
    path = str(tmp_path / "hung.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
        srv.bind(path)
        srv.listen(8)           # connections complete, nothing is read
        for cmd in (["show"], ["clear"], ["del-dcm", "d1"]):
            # The bound is far above --timeout: it only keeps a
            # regression from hanging the test suite.
            p = subprocess.run([PYTHON, str(DAQCTL), "--db", "unix:" + path,
                                "--timeout", "1"] + cmd,
                               capture_output=True, text=True, timeout=120)
            assert p.returncode == 1, (cmd, p.stderr)
            assert ("unix:%s: timed out (1 s) waiting to read the schema"
                    % path) in p.stderr, p.stderr


def test_cli_help_and_flake8() -> None:
    p = subprocess.run([PYTHON, str(DAQCTL), "--help"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0
    for word in ("apply", "add-dcm", "del-dcm", "show", "flows"):
        assert word in p.stdout
    if shutil.which("flake8") or os.path.exists("/usr/bin/flake8"):
        f = subprocess.run([PYTHON, "-m", "flake8", str(DAQCTL),
                            str(DAQCTL_PKG), __file__],
                           capture_output=True, text=True, timeout=120)
        assert f.returncode == 0, f.stdout


# ============================================================ a real switch
# ========================================== against an ovsdb-server alone
@pytest.fixture
def bare_db() -> Iterator[SimpleNamespace]:
    """An ovsdb-server with the Open_vSwitch schema and no ovs-vswitchd
    (nobody applies next_cfg): its remote ('db') and ovs-vsctl --no-wait
    on it ('vsctl')."""
    for b in (BIN["ovsdb_server"], BIN["ovsdb_tool"], BIN["vsctl"],
              SCHEMA):
        if not b.exists():
            pytest.skip("the patched OVS is not built (%s missing): run "
                        "make" % b)
    # Short: sun_path holds 108 bytes.
    d = tempfile.mkdtemp(prefix="daqctl-db-")
    sock = os.path.join(d, "db.sock")
    subprocess.run([str(BIN["ovsdb_tool"]), "create",
                    os.path.join(d, "conf.db"), str(SCHEMA)], check=True)
    server = subprocess.Popen(
        [str(BIN["ovsdb_server"]), os.path.join(d, "conf.db"),
         "--remote=punix:" + sock,
         "--unixctl=" + os.path.join(d, "ovsdb-server.ctl"),
         "--log-file=" + os.path.join(d, "ovsdb-server.log"),
         "-vconsole:off"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)

    def vsctl(*args: str) -> str:
        return subprocess.run(
            [str(BIN["vsctl"]), "--db=unix:" + sock, "--no-wait",
             "--timeout=%d" % WAIT_S] + list(args),
            check=True, capture_output=True, text=True).stdout.strip()
    try:
        deadline = time.monotonic() + WAIT_S
        while not os.path.exists(sock):
            assert server.poll() is None, "ovsdb-server exited"
            assert time.monotonic() < deadline, "no ovsdb-server socket"
            time.sleep(0.05)
        vsctl("init")
        yield SimpleNamespace(db="unix:" + sock, vsctl=vsctl)
    finally:
        stop_process(server)
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("other", ["del-dcm", "add-dcm"])
def test_replanned_to_nothing_commits_nothing(
        daqctl: SimpleNamespace, bare_db: SimpleNamespace,
        other: str) -> None:
    """A transaction that the server refused (another client changed what
    it verified) is planned again; if another client has made the very
    change meanwhile (the same del-dcm or add-dcm), the plan is empty and
    nothing is committed: the Python IDL sends no transaction without a
    row change (Transaction.commit() adds the next_cfg increment only
    with one, and says UNCHANGED), so next_cfg stays as it is.  commit()
    then waits for ovs-vswitchd to apply that next_cfg (the other
    client's change, whose rings sync() needs with their OpenFlow ports):
    here cur_cfg is next_cfg already, with no ovs-vswitchd."""
    vsctl = bare_db.vsctl
    dcm = daqctl.Dcm("d1", "r1", "p1", ip="10.0.0.1")

    def ring_args() -> List[str]:
        return (["--", "add-port", "br0", "r1", "--", "set", "Interface",
                 "r1", "type=daqring"]
                + ['options:%s="%s"' % kv for kv in dcm.options().items()]
                + ["--", "set", "Port", "r1"]
                + ['external_ids:%s="%s"' % kv
                   for kv in dcm.external_ids().items()])

    # What ovs-vswitchd would say it supports.
    vsctl("set", "Open_vSwitch", ".", "iface_types=daqring", "--",
          "add-br", "br0", "--", "add-port", "br0", "p1",
          *(ring_args() if other == "del-dcm" else []))
    spec = daqctl.SwitchSpec("br0", bare_db.db, None, "br0")
    args = SimpleNamespace(timeout=WAIT_S, ofctl=str(BIN["ofctl"]),
                           format="json")
    rec = daqctl.Reconciler(spec, args, None)
    asked: List[int] = []

    def want(cur: List[Any]) -> List[Any]:
        if not asked:
            # Another client, between our read and our commit.
            if other == "del-dcm":
                vsctl("del-port", "br0", "r1")
            else:
                vsctl(*ring_args()[1:])
            asked.append(int(vsctl("get", "Open_vSwitch", ".",
                                   "next_cfg")))
        else:
            assert [d.name for d in cur] == (
                ["d1"] if other == "add-dcm" else [])
        return [dcm] if other == "add-dcm" else []

    try:
        # What apply() finds: a change to commit.
        assert not rec.plan([dcm] if other == "add-dcm" else []).empty()
        plan, _ = rec.commit(want, "test")
        assert rec.db.attempts == 2
    finally:
        rec.close()
    assert plan.empty()
    assert int(vsctl("get", "Open_vSwitch", ".", "next_cfg")) == asked[0]
    assert rec.result["next_cfg"] == asked[0]
    assert vsctl("list-ports", "br0").split() == (
        ["p1", "r1"] if other == "add-dcm" else ["p1"])


def _skip_reason() -> Optional[str]:
    if os.geteuid() != 0:
        return "needs root (network namespace, DPDK)"
    for b in list(BIN.values()) + [SCHEMA]:
        if not b.exists():
            return "the patched OVS is not built (%s missing): run make" % b
    if not shutil.which("ip"):
        return "needs iproute2 (ip netns)"
    # tests/conftest.py reserves them when root.
    free_mb = hugepages.free_mb()
    if free_mb < HUGEPAGES_NEEDED_MB:
        return ("needs %d MB of free huge pages (%d MB free)"
                % (HUGEPAGES_NEEDED_MB, free_mb))
    if not hugepages.hugetlbfs_mounted():
        return "no hugetlbfs is mounted"
    return None


# The ports each bridge is made with (internal, no external_ids), and the
# flows ovs-daqctl must leave alone (UNRELATED, as dump-flows prints them),
# on every bridge.  reset() gives them back.
BASE_PORTS = {"br0": ["p1", "p2", "p3", "p4"], "br1": ["q1"],
              "br2": ["r1", "r2", "r3", "r4"]}
UNRELATED_FLOWS = ["cookie=0x1,priority=1,actions=drop",
                   "cookie=0xdac8000000000001,priority=50,ip,"
                   "nw_dst=10.9.9.9,actions=drop"]


class Switch(Sandbox):
    """The sandbox (ovs_daqring.sandbox): ovsdb-server and ovs-vswitchd in
    a network namespace of their own, files in a temporary directory."""

    def __init__(self) -> None:
        ns = "daqctl-%d" % os.getpid()
        super().__init__(tree_binaries(str(OVS)),
                         tempfile.mkdtemp(prefix="daqctl-test-"), netns=ns,
                         own_netns=True,
                         env={"OVS_OFCTL": str(BIN["ofctl"])})
        self.ns = ns
        # Bridge -> (the map the last reset() applied, the state it left).
        self._reset: Dict[str, Tuple[str, Any]] = {}

    def run(self, *cmd: str, check: bool = True,
            timeout: float = 120) -> "subprocess.CompletedProcess[str]":
        p = subprocess.run(list(cmd), capture_output=True, text=True,
                           env=self.env, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError("%s failed (%d): %s%s" % (
                " ".join(cmd), p.returncode, p.stdout, p.stderr))
        return p

    def vsctl(self, *args: str, timeout: float = 120) -> str:
        return super().vsctl(*args, timeout=timeout)

    def daqctl(self, *args: str, bridge: str = "br0", in_ns: bool = False,
               check: Optional[int] = 0,
               timeout: float = 240) -> "subprocess.CompletedProcess[str]":
        cmd = [PYTHON, str(DAQCTL)]
        if "--db" not in args:
            cmd += ["--db", self.db]
        if bridge:
            cmd += ["--bridge", bridge]
        if in_ns:
            cmd = ["ip", "netns", "exec", self.ns] + cmd
        p = self.run(*(cmd + list(args)), check=False, timeout=timeout)
        if check is not None:
            assert p.returncode == check, (
                "ovs-daqctl %s: exit %d, expected %d\n%s%s"
                % (" ".join(args), p.returncode, check, p.stdout, p.stderr))
        return p

    def start(self) -> None:   # type: ignore[override]
        super().start(
            dpdk_settings("0x2", ["other_config:dpdk-socket-mem=%d"
                                  % HUGEPAGES_NEEDED_MB],
                          "--no-pci --in-memory --file-prefix=" + self.ns),
            # ovsdb-server in the namespace: its TCP remote is there.
            ovsdb_args=["--remote=ptcp:%d:127.0.0.1" % OVSDB_TCP],
            ovsdb_in_netns=True,
            # dpif-netdev logs every rx queue at every port change: with
            # 1000 daqrings that is 10^6 lines.
            vswitchd_args=["-vdpif_netdev:file:warn"])
        # br0: the main bridge (also reachable by OpenFlow over TCP);
        # br1: a second switch of a multi-switch map; br2: 1000 DCMs.
        self.vsctl(
            "add-br", "br0", "--", "set", "Bridge", "br0",
            "datapath_type=netdev", "fail_mode=secure",
            "--", "set-controller", "br0", "ptcp:%d:127.0.0.1" % OF_TCP,
            *self._ports("br0", BASE_PORTS["br0"]),
            "--", "add-br", "br1", "--", "set", "Bridge", "br1",
            "datapath_type=netdev", "fail_mode=secure",
            *self._ports("br1", BASE_PORTS["br1"]),
            "--", "add-br", "br2", "--", "set", "Bridge", "br2",
            "datapath_type=netdev", "fail_mode=secure",
            *self._ports("br2", BASE_PORTS["br2"]))
        for br in BASE_PORTS:
            for flow in UNRELATED_FLOWS:
                self.ofctl("add-flow", br, flow)

    @staticmethod
    def _ports(br: str, names: List[str]) -> List[str]:
        out: List[str] = []
        for n in names:
            out += ["--", "add-port", br, n, "--", "set", "Interface", n,
                    "type=internal"]
        return out

    # ------------------------------------------------------- test state
    def reset(self, **maps: Union[Path, str, None]) -> None:
        """Give each bridge named (reset(br0=..., br1=...)) the state a
        test starts from, whatever earlier tests left there: its own ports
        only (BASE_PORTS, no external_ids), no other flows than
        UNRELATED_FLOWS, and then the DCMs of the map given (a file, or a
        map's text), applied by ovs-daqctl; None: no DCM.

        A bridge still in the state the last reset() left it with the
        same map (ports, interfaces, flows and flooding compared) is left
        as it is: the 1000 daqrings of br2 take a while to remove."""
        if self.vswitchd is not None:
            # A test that failed while ovs-vswitchd was stopped.
            self.vswitchd.send_signal(signal.SIGCONT)
        for br, m in maps.items():
            key = str(m)
            if self._reset.get(br) == (key, self._state(br)):
                continue
            self._reset.pop(br, None)
            self._clean(br)
            if isinstance(m, str):
                path = os.path.join(self.dir, "reset-%s.yaml" % br)
                Path(path).write_text(textwrap.dedent(m))
                m = Path(path)
            if m is not None:
                self.daqctl("apply", str(m), bridge=br)
            self._reset[br] = (key, self._state(br))

    def _clean(self, br: str) -> None:
        """Bridge 'br' as start() made it: no daqring, no port of a test,
        its own ports back if a test removed them, no external_ids on
        them; only the UNRELATED flows."""
        names = self.vsctl("list-ports", br).split()
        args: List[str] = []
        for n in names:
            if n not in BASE_PORTS[br]:
                args += ["--", "del-port", br, n]
        for n in BASE_PORTS[br]:
            if n in names:
                args += ["--", "clear", "Port", n, "external_ids"]
            else:
                args += self._ports(br, [n])
        self.vsctl(*args[1:], timeout=240)
        self.ofctl("del-flows", br)
        for flow in UNRELATED_FLOWS:
            self.ofctl("add-flow", br, flow)

    def _state(self, br: str) -> Any:
        names = set(self.vsctl("list-ports", br).split())
        ports = [p for p in self.table("Port", "_uuid,name,external_ids")
                 if p["name"] in names]
        ifaces = [i for i in self.table(
            "Interface", "_uuid,name,type,options,ofport,ofport_request")
            if i["name"] in names]
        return (sorted(ports, key=lambda r: r["name"]),
                sorted(ifaces, key=lambda r: r["name"]),
                self.flows(br), no_flood(self, br))

    def stop(self) -> None:   # type: ignore[override]
        # SIGTERM, not "ovs-appctl exit": ovs-vswitchd would remove the
        # 1000 daqrings one by one (about a minute).  DPDK memory is
        # --in-memory, freed with the process; its runtime directory for
        # the file prefix is not.
        try:
            super().stop(fast=True)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
            shutil.rmtree(os.path.join("/var/run/dpdk", self.ns),
                          ignore_errors=True)

    # ---------------------------------------------------------- reading
    def next_cfg(self) -> int:
        return int(self.vsctl("get", "Open_vSwitch", ".", "next_cfg"))

    def table(self, table: str, columns: str) -> List[Dict[str, Any]]:
        out = json.loads(self.vsctl("-f", "json", "-d", "json",
                                    "--columns=" + columns, "list", table))
        return [dict(zip(out["headings"], [ovs_json_value(v) for v in row]))
                for row in out["data"]]

    def rings(self, bridge: str = "br0") -> Dict[str, Dict[str, Any]]:
        """The daqrings of a bridge: name -> uuid, options, external_ids,
        ofport."""
        names = set(self.vsctl("list-ports", bridge).split())
        ports = {p["name"]: p for p in self.table("Port",
                                                  "name,external_ids")}
        out = {}
        for i in self.table("Interface", "_uuid,name,type,options,ofport"):
            if i["type"] == "daqring" and i["name"] in names:
                i["external_ids"] = ports[i["name"]]["external_ids"]
                out[i["name"]] = i
        return out

    def flows(self, bridge: str = "br0") -> Set[str]:
        """All flows of a bridge, without statistics, ports as numbers."""
        return {ln.strip() for ln in self.ofctl(
            "--no-names", "--no-stats", "dump-flows", bridge).splitlines()
            if ln.strip().startswith("cookie=")}

    def flow_packets(self, bridge: str, pattern: str) -> int:
        for ln in self.ofctl("--names", "dump-flows", bridge).splitlines():
            if pattern in ln:
                return int(ln.split("n_packets=")[1].split(",")[0])
        raise AssertionError("no flow with %s" % pattern)


@pytest.fixture(scope="module")
def sw() -> Iterator[Switch]:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    s = Switch()
    try:
        s.start()
        yield s
    finally:
        s.stop()


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def cookie(name: str) -> int:
    """ovs-daqctl's cookie of a DCM: 0xdac7, then 48 bits of SHA-256."""
    digest = hashlib.sha256(name.encode()).digest()
    return 0xdac7 << 48 | int.from_bytes(digest[:6], "big")


def expected_flows(sw: Switch, bridge: str, dcms: List[Tuple[str, str, str]]
                   ) -> Set[str]:
    """The two flows of each (name, ip, egress) DCM, as dump-flows prints
    them, with the ports' current numbers."""
    ofport = {i["name"]: i["ofport"]
              for i in sw.table("Interface", "name,ofport")}
    out = set()
    for name, ip, egress in dcms:
        c = cookie(name)
        out.add("cookie=%#x, priority=100,ip,nw_dst=%s actions=output:%d"
                % (c, ip, ofport[name]))
        out.add("cookie=%#x, priority=101,in_port=%d actions=output:%d"
                % (c, ofport[name], ofport[egress]))
    return out


UNRELATED = {"cookie=0x1, priority=1 actions=drop",
             "cookie=0xdac8000000000001, priority=50,ip,nw_dst=10.9.9.9 "
             "actions=drop"}
EXAMPLE_DCMS = [("dcm1", "10.0.0.1", "p1"), ("dcm2", "10.0.0.2", "p2"),
                ("dcm3", "10.0.0.3", "p3")]
# The example map, and what test_change_update_remove changes it to: the
# two states of br0 the tests start from (Switch.reset).
EXAMPLE_MAP = ROOT / "utilities" / "dcm-map.example.yaml"
CHANGED_DEFAULTS = "{ring-size: 16384, max-burst: 32, poll-interval: 500}"
CHANGED_DCMS = """\
- {name: dcm1, ip: 10.0.0.1, egress: p2}           # egress
- {name: dcm2, ip: 10.0.0.2, egress: p2, ring-size: 4096}
- {name: dcm3, ip: 10.0.0.3, egress: p3, rate: 300mbit}
- name: dcm4b                                      # unchanged
  egress: p4
  tuples:
    - {proto: tcp, dst: 10.0.0.4, dport: 40002}
    - "tcp:10.0.1.9:9000->10.0.0.4:40003"
- {name: dcm5, ip: 10.0.0.5, egress: p1, max-burst: 8}
"""
CHANGED_MAP = "defaults: %s\ndcms:\n%s" % (
    CHANGED_DEFAULTS, textwrap.indent(CHANGED_DCMS, "  "))


# ================================================== tests against a switch
def test_apply_example(sw: Switch) -> None:
    sw.reset(br0=None)
    cfg = sw.next_cfg()
    p = sw.daqctl("apply", str(EXAMPLE_MAP))
    assert "rate 190mbit -> max-rate 190000000 bit/s" in p.stdout
    assert "one OVSDB transaction: 5 created" in p.stdout
    assert "one OpenFlow bundle" in p.stdout
    assert sw.next_cfg() == cfg + 1                 # one transaction
    rings = sw.rings()
    assert sorted(rings) == ["dcm1", "dcm2", "dcm3", "dcm4a", "dcm4b"]
    assert rings["dcm1"]["options"] == {"ring-size": "16384",
                                        "max-burst": "32",
                                        "poll-interval": "500",
                                        "flow-buckets": "65536"}
    assert rings["dcm2"]["options"]["ring-size"] == "2048"
    assert rings["dcm3"]["options"]["poll-interval"] == "0"
    assert rings["dcm3"]["options"]["max-rate"] == "190000000"
    assert rings["dcm3"]["external_ids"]["daqctl-rate"] == "190mbit"
    assert rings["dcm1"]["external_ids"]["daqctl-egress"] == "p1"
    flows = sw.flows()
    assert expected_flows(sw, "br0", EXAMPLE_DCMS) <= flows
    of = {n: r["ofport"] for n, r in rings.items()}
    assert ("cookie=%#x, priority=100,tcp,nw_src=10.0.1.9,nw_dst=10.0.0.4,"
            "tp_src=9000,tp_dst=40003 actions=output:%d"
            % (cookie("dcm4b"), of["dcm4b"])) in flows
    assert UNRELATED <= flows
    assert len(flows) == 11 + len(UNRELATED)


def test_reapply_changes_nothing(sw: Switch) -> None:
    sw.reset(br0=EXAMPLE_MAP)
    cfg, flows, rings = sw.next_cfg(), sw.flows(), sw.rings()
    p = sw.daqctl("apply", str(EXAMPLE_MAP))
    # "no changes" alone: not how the rates of rings it did not write
    # were converted (issue 50).
    assert p.stdout.splitlines() == ["br0 (%s): no changes" % sw.db], \
        p.stdout
    # The same DCMs as CSV: still nothing to do.
    p = sw.daqctl("apply", str(ROOT / "utilities" / "dcm-map.example.csv"))
    assert "no changes" in p.stdout
    assert sw.next_cfg() == cfg             # not even an empty transaction
    assert sw.flows() == flows and sw.rings() == rings


def test_traffic_goes_through_ring(sw: Switch) -> None:
    """A packet to dcm1's address enters its daqring (priority 100), is
    dequeued by the PMD and leaves by the in_port=dcm1 rule (101)."""
    sw.reset(br0=EXAMPLE_MAP)
    pkt = _udp_packet("10.0.1.1", "10.0.0.1")
    before = sw.flow_packets("br0", "priority=101,in_port=dcm1 ")
    for _ in range(3):
        sw.ofctl("packet-out", "br0",
                 "in_port=controller packet=%s actions=table" % pkt)
    deadline = time.monotonic() + WAIT_S
    while sw.flow_packets("br0", "priority=101,in_port=dcm1 ") < before + 3:
        assert time.monotonic() < deadline, "packets did not leave the ring"
        time.sleep(0.1)
    assert sw.flow_packets("br0", "nw_dst=10.0.0.1 ") >= 3


def test_change_update_remove(sw: Switch, tmp_path: Path) -> None:
    sw.reset(br0=EXAMPLE_MAP)
    before = sw.rings()
    cfg = sw.next_cfg()
    path = write(tmp_path, "m.yaml", CHANGED_MAP)
    p = sw.daqctl("apply", path)
    assert ("one OVSDB transaction: 1 created, 3 updated, 1 removed"
            in p.stdout), p.stdout
    assert "update dcm1: egress p1 -> p2" in p.stdout
    assert "update dcm2: ring-size 2048 -> 4096" in p.stdout
    assert "remove dcm4a" in p.stdout
    assert sw.next_cfg() == cfg + 1
    after = sw.rings()
    assert sorted(after) == ["dcm1", "dcm2", "dcm3", "dcm4b", "dcm5"]
    # Updated in place (the rings and their packets stay), not re-created.
    for n in ("dcm1", "dcm2", "dcm3", "dcm4b"):
        assert after[n]["_uuid"] == before[n]["_uuid"]
        assert after[n]["ofport"] == before[n]["ofport"]
    assert after["dcm2"]["options"]["ring-size"] == "4096"
    assert after["dcm3"]["options"]["max-rate"] == "300000000"
    assert after["dcm5"]["options"]["max-burst"] == "8"
    flows = sw.flows()
    want = expected_flows(sw, "br0", [
        ("dcm1", "10.0.0.1", "p2"), ("dcm2", "10.0.0.2", "p2"),
        ("dcm3", "10.0.0.3", "p3"), ("dcm5", "10.0.0.5", "p1")])
    assert want <= flows and UNRELATED <= flows
    assert not any("tp_dst=40001" in f for f in flows)
    assert len(flows) == 8 + 3 + len(UNRELATED)
    # The status of a ring reflects the change.
    deadline = time.monotonic() + WAIT_S
    while True:
        st = sw.table("Interface", "name,status")
        st2 = next(i["status"] for i in st if i["name"] == "dcm2")
        if st2.get("ring_size") == "4096":
            break
        assert time.monotonic() < deadline, st2
        time.sleep(0.2)
    assert "no changes" in sw.daqctl("apply", path).stdout


def test_flows_are_repaired(sw: Switch, tmp_path: Path) -> None:
    """Flows deleted or changed behind ovs-daqctl's back come back, without
    touching OVSDB."""
    sw.reset(br0=CHANGED_MAP)
    flows = sw.flows()
    c = cookie("dcm1")
    sw.ofctl("del-flows", "br0", "cookie=%#x/-1" % c)
    sw.ofctl("add-flow", "br0", "cookie=%#x,priority=100,ip,nw_dst=10.0.0.1,"
             "actions=drop" % c)
    cfg = sw.next_cfg()
    p = sw.daqctl("add-dcm", "dcm2", "--ip", "10.0.0.2", "--egress", "p2",
                  "--ring-size", "4096", "--max-burst", "32",
                  "--poll-interval", "500")
    assert "flows of 1 DCMs changed (1 deleted, 2 added)" in p.stdout
    assert sw.flows() == flows and sw.next_cfg() == cfg


def test_refused_on_switch_changes_nothing(sw: Switch,
                                           tmp_path: Path) -> None:
    sw.reset(br0=CHANGED_MAP)
    cfg, flows, rings = sw.next_cfg(), sw.flows(), sw.rings()
    path = write(tmp_path, "bad.yaml", """\
        dcms:
          - {name: dcm1, ip: 10.0.0.1, egress: p2, ring-size: 100}
          - {name: dcm2, ip: 10.0.0.2, egress: p9}
          - {name: p3, ip: 10.0.0.3, egress: p1}
        """)
    p = sw.daqctl("apply", path, check=2)
    assert ("%s:3: DCM dcm2: egress port p9 is not on bridge br0 (it has: "
            "br0, p1, p2, p3, p4)" % path) in p.stderr
    assert ("%s:4: DCM p3: a port or interface named p3 exists and is not "
            "a daqring" % path) in p.stderr
    assert "nothing changed" in p.stderr
    assert (sw.next_cfg(), sw.flows(), sw.rings()) == (cfg, flows, rings)


def test_failed_transaction_rolls_back(sw: Switch, tmp_path: Path) -> None:
    """ovs-vswitchd refuses a ring (NUMA node 7 does not exist): the other
    changes of the same apply are undone too."""
    sw.reset(br0=CHANGED_MAP)
    flows, rings = sw.flows(), sw.rings()
    # The changed map, with a change and a new DCM that ovs-vswitchd
    # refuses.
    assert "ring-size: 4096}" in CHANGED_MAP
    path = write(tmp_path, "numa.yaml", CHANGED_MAP.replace(
        "ring-size: 4096}", "ring-size: 8192}")
        + "  - {name: dcm6, ip: 10.0.0.6, egress: p1, numa-id: 7}\n")
    p = sw.daqctl("apply", path, check=1)
    assert "refused the change, rolled back" in p.stderr
    assert "dcm6: invalid numa-id 7" in p.stderr
    assert sw.rings() == rings and sw.flows() == flows
    # A ring in use is not deleted by ovs-vswitchd when its new options
    # fail: it keeps its ring and says so in status:config_error.
    text = Path(path).read_text()
    text = text.replace("dcm6, ip: 10.0.0.6, egress: p1, numa-id: 7",
                        "dcm6, ip: 10.0.0.6, egress: p1")
    text = text.replace("max-burst: 8}", "max-burst: 8, numa-id: 7}")
    Path(path).write_text(text)
    p = sw.daqctl("apply", path, check=1)
    assert "dcm5: invalid numa-id 7" in p.stderr
    assert sw.rings() == rings and sw.flows() == flows


def test_add_del_dcm(sw: Switch) -> None:
    sw.reset(br0=CHANGED_MAP)
    cfg = sw.next_cfg()
    args = ["add-dcm", "dcm9", "--ip", "10.0.0.9", "--egress", "p3",
            "--ring-size", "1000", "--rate", "190mbit"]
    p = sw.daqctl(*args)
    assert "rate 190mbit -> max-rate 190000000 bit/s" in p.stdout
    assert "create dcm9" in p.stdout
    assert "no changes" in sw.daqctl(*args).stdout
    assert sw.next_cfg() == cfg + 1
    r = sw.rings()["dcm9"]
    assert r["options"] == {"ring-size": "1000", "max-burst": "32",
                            "poll-interval": "0", "max-rate": "190000000",
                            "flow-buckets": "65536"}
    assert expected_flows(sw, "br0", [("dcm9", "10.0.0.9", "p3")]) <= \
        sw.flows()
    # Options may also follow the command; tuples instead of an address.
    sw.daqctl("add-dcm", "dcm10", "--tuple", "tcp:*:*->10.0.0.10:5001",
              "--egress", "p3", "--bridge", "br0", bridge="")
    sw.daqctl("add-dcm", "dcm11", "--tuple", "tcp:*:*->10.0.0.10:5001",
              "--egress", "p3", check=2)                 # overlaps dcm10
    sw.daqctl("add-dcm", "dcm12", "--ip", "10.0.0.12", "--egress", "p3",
              "--max-burst", "40", check=2)
    p = sw.daqctl("del-dcm", "dcm9", "dcm10")
    assert "remove dcm9" in p.stdout and "remove dcm10" in p.stdout
    assert "dcm9" not in sw.rings()
    assert not any("10.0.0.9" in f for f in sw.flows())
    p = sw.daqctl("del-dcm", "dcm9", check=2)
    assert "no DCM dcm9" in p.stderr
    sw.daqctl("del-dcm", "--if-exists", "dcm9")


def show_steering(sw: Switch, dcm: str) -> Tuple[str, str, Optional[str]]:
    """DCM 'dcm''s steering as "show" prints it (STEERING column), and
    "steering" and "egress_state" of "show -f json"."""
    lines = sw.daqctl("show").stdout.splitlines()
    head = lines[1].split()
    cells = next(ln for ln in lines if ln.startswith(dcm + " ")).split()
    row = {r["dcm"]: r for r in json.loads(
        sw.daqctl("show", "-f", "json").stdout)["switches"][0]["dcms"]}[dcm]
    return cells[head.index("STEERING")], row["steering"], row["egress_state"]


def test_bound_steering(sw: Switch) -> None:
    """--steering bound: the ring is bound to its egress port
    (options:egress) and the DCM has one flow; packets still reach the
    egress port, and the DCM can go back to two rules."""
    sw.reset(br0=CHANGED_MAP)
    args = ["add-dcm", "dcm13", "--ip", "10.0.0.13", "--egress", "p3",
            "--ring-size", "1000"]
    sw.daqctl(*args, "--steering", "bound")
    assert "no changes" in sw.daqctl(*args, "--steering", "bound").stdout
    r = sw.rings()["dcm13"]
    assert r["options"]["egress"] == "p3"
    mine = {f for f in sw.flows() if f.startswith("cookie=%#x,"
                                                  % cookie("dcm13"))}
    two = expected_flows(sw, "br0", [("dcm13", "10.0.0.13", "p3")])
    assert mine == {f for f in two if "priority=100" in f}
    deadline = time.monotonic() + WAIT_S
    while "bound" not in sw.vsctl("get", "Interface", "dcm13",
                                  "status:egress_state"):
        assert time.monotonic() < deadline, "dcm13 is not bound"
        time.sleep(0.1)
    # Packets to the DCM go through the ring (dequeued: rx_packets) and
    # leave it without a rule.

    def stat(port: str, key: str) -> int:
        return int(sw.vsctl("get", "Interface", port, "statistics:" + key))

    pkt = _udp_packet("10.0.1.1", "10.0.0.13")
    for _ in range(3):
        sw.ofctl("packet-out", "br0",
                 "in_port=controller packet=%s actions=table" % pkt)
    assert sw.flow_packets("br0", "nw_dst=10.0.0.13 ") == 3
    deadline = time.monotonic() + WAIT_S
    while stat("dcm13", "rx_packets") < 3:
        assert time.monotonic() < deadline, "packets did not leave the ring"
        time.sleep(0.2)
    assert stat("dcm13", "egress_drops") == 0
    assert show_steering(sw, "dcm13") == ("bound", "bound", "bound")
    # ovs-daqctl reads the mode back from the switch: two-rule again.
    sw.daqctl(*args)
    assert "egress" not in sw.rings()["dcm13"]["options"]
    assert two <= sw.flows()
    assert show_steering(sw, "dcm13") == ("two-rule", "two-rule", None)
    sw.daqctl("del-dcm", "dcm13")


EGRESS_SHARE_MAP = """\
defaults: {steering: bound}
dcms:
  - {name: dcm1, ip: 10.0.0.1, egress: p3, egress-max-rate: 1gbit}
  - {name: dcm2, ip: 10.0.0.2, egress: p3, egress-max-rate: 1gbit,
     rate: 1gbit}
  - {name: dcm3, ip: 10.0.0.3, egress: p4, steering: two-rule}
"""


def test_egress_shared_by_two_dcms(sw: Switch, tmp_path: Path) -> None:
    """Two DCMs bound to p3 with egress-max-rate: their rings get the
    options, the switch makes them share p3 (status), show reports the
    share, a second apply changes nothing, and add-dcm of a third DCM of
    p3 with another egress-max-rate is refused, changing nothing."""
    sw.reset(br0=None)
    p = sw.daqctl("apply", write(tmp_path, "share.yaml",
                                 EGRESS_SHARE_MAP))
    rings = sw.rings()
    for name in ("dcm1", "dcm2"):
        opts = rings[name]["options"]
        assert opts["egress"] == "p3", opts
        assert opts["egress-max-rate"] == "1000000000", opts
    assert rings["dcm2"]["options"]["max-rate"] == "1000000000"
    assert "egress-max-rate" not in rings["dcm3"]["options"]
    for name in ("dcm1", "dcm2"):
        deadline = time.monotonic() + WAIT_S
        while sw.vsctl("--if-exists", "get", "Interface", name,
                       "status:egress_sharing_rings").strip() != '"2"':
            assert time.monotonic() < deadline, sw.vsctl(
                "get", "Interface", name, "status", "error")
            time.sleep(0.1)
        assert sw.vsctl("get", "Interface", name,
                        "status:egress_max_rate").strip() == '"1000000000"'
    js = json.loads(sw.daqctl("show", "-f", "json").stdout)
    rows = {r["dcm"]: r for r in js["switches"][0]["dcms"]}
    assert (rows["dcm1"]["egress_max_rate"],
            rows["dcm1"]["egress_sharing_rings"]) == (10**9, 2)
    assert rows["dcm3"]["egress_sharing_rings"] is None
    p = sw.daqctl("show")
    assert "egress shared at 1.00 Gbit/s by 2 rings" in p.stdout, p.stdout
    p = sw.daqctl("apply", write(tmp_path, "share.yaml",
                                 EGRESS_SHARE_MAP))
    assert "no changes" in p.stdout
    before = sw.rings()
    p = sw.daqctl("add-dcm", "dcm4", "--ip", "10.0.0.4", "--egress", "p3",
                  "--steering", "bound", "--egress-max-rate", "500mbit",
                  check=2)
    assert "DCM dcm4: the DCMs of egress p3 must share it alike" \
        in p.stderr, p.stderr
    assert sw.rings() == before


def test_show(sw: Switch) -> None:
    sw.reset(br0=CHANGED_MAP)
    p = sw.daqctl("show")
    lines = p.stdout.splitlines()
    assert lines[0].startswith("bridge br0 (unix:") and "5 DCMs" in lines[0]
    assert lines[1].split() == ["DCM", "RING", "OFPORT", "MATCH", "EGRESS",
                                "STEERING", "SIZE", "OCCUP", "HIGH-WM",
                                "DROPS", "SHAPING"]
    dcm3 = next(ln for ln in lines if ln.startswith("dcm3 "))
    assert "max-rate 300.00 Mbit/s, burst 32" in dcm3
    print("\n" + p.stdout)
    js = json.loads(sw.daqctl("show", "-f", "json").stdout)
    assert (js["command"], js["status"]) == ("show", 0)
    assert "error" not in js
    row = {r["dcm"]: r for r in js["switches"][0]["dcms"]}["dcm2"]
    assert row["ring_size"] == 4096 and row["egress"] == "p2"
    assert row["steering"] == "two-rule" and row["egress_state"] is None
    assert dcm3.split()[5] == "two-rule"
    for key in ("occupancy", "high_watermark", "tx_dropped",
                "ring_full_drops", "shaping_rate", "poll_interval",
                "max_rate"):
        assert row[key] is not None, key
    assert row["config_error"] is None
    p = sw.daqctl("flows")
    assert "priority=101,in_port=dcm2 actions=output:p2" in p.stdout
    assert "cookie=0x1," not in p.stdout


def test_remote_switch_over_tcp(sw: Switch, tmp_path: Path) -> None:
    sw.reset(br0=CHANGED_MAP)
    remote = ["--db", "tcp:127.0.0.1:%d" % OVSDB_TCP]
    p = sw.daqctl("show", *remote, in_ns=True)
    assert "bridge br0 (tcp:127.0.0.1:%d): 5 DCMs" % OVSDB_TCP in p.stdout
    p = sw.daqctl("add-dcm", "dcm20", "--ip", "10.0.0.20", "--egress", "p1",
                  *remote, in_ns=True, check=2)
    assert "give its OpenFlow target with --of" in p.stderr
    of = ["--of", "tcp:127.0.0.1:%d" % OF_TCP]
    p = sw.daqctl("add-dcm", "dcm20", "--ip", "10.0.0.20", "--egress", "p1",
                  *remote, *of, in_ns=True)
    assert "create dcm20" in p.stdout
    assert expected_flows(sw, "br0", [("dcm20", "10.0.0.20", "p1")]) <= \
        sw.flows()
    sw.daqctl("del-dcm", "dcm20", *remote, *of, in_ns=True)
    assert "dcm20" not in sw.rings()


# Figures of "show" that ovs-vswitchd's statistics updates (every 5 s)
# change on their own, e.g. after an earlier test's traffic.
LIVE_FIELDS = ("occupancy", "high_watermark", "tx_dropped",
               "ring_full_drops")


def show_config(sw: Switch) -> Any:
    """'show -f json' without the live figures: the configuration only."""
    js = json.loads(sw.daqctl("show", "-f", "json").stdout)["switches"][0]
    for row in js["dcms"]:
        for f in LIVE_FIELDS:
            row.pop(f, None)
    return js


def test_several_switches(sw: Switch, tmp_path: Path) -> None:
    sw.reset(br0=CHANGED_MAP, br1=None)
    br0 = show_config(sw)
    try:
        several_switches(sw, tmp_path, br0)
    finally:
        # Leave br1 empty, even after a failure.
        sw.daqctl("clear", bridge="br1", check=None)


def several_switches(sw: Switch, tmp_path: Path, br0: Any) -> None:
    # leaf0 is br0 as it is: the changed map.
    path = write(tmp_path, "two.yaml", textwrap.dedent("""\
        defaults: {max-burst: 16, poll-interval: 250}
        switches:
          - name: leaf0
            db: %s
            bridge: br0
            defaults: %s
            dcms:
        %s
          - name: leaf1
            db: %s
            bridge: br1
            dcms:
              - {name: dcm1, ip: 10.0.0.1, egress: q1, ring: br1dcm1}
              - {name: dcm7, ip: 10.0.0.7, egress: q1}
        """) % (sw.db, CHANGED_DEFAULTS,
                textwrap.indent(CHANGED_DCMS, " " * 6).rstrip("\n"), sw.db))
    p = sw.daqctl("apply", path, bridge="")
    assert "leaf0/br0 (%s): no changes" % sw.db in p.stdout
    assert "leaf1/br1 (%s): one OVSDB transaction: 2 created" % sw.db \
        in p.stdout
    assert sorted(sw.rings("br1")) == ["br1dcm1", "dcm7"]
    assert sw.rings("br1")["dcm7"]["options"] == {
        "ring-size": "4096", "max-burst": "16", "poll-interval": "250",
        "flow-buckets": "65536"}
    assert show_config(sw) == br0
    p = sw.daqctl("apply", "--switch", "leaf1", path, bridge="")
    assert "leaf1/br1 (%s): no changes" % sw.db in p.stdout
    assert "leaf0" not in p.stdout
    # The map's bridge and an explicit, different --bridge: refused.
    p = sw.daqctl("apply", path, bridge="br2", check=2)
    assert "--bridge br2 conflicts with the map's bridge: br0" in p.stderr
    sw.daqctl("clear", bridge="br1")
    assert sw.rings("br1") == {} and UNRELATED <= sw.flows("br1")


def test_dry_run(sw: Switch, tmp_path: Path) -> None:
    sw.reset(br0=CHANGED_MAP)
    cfg, flows = sw.next_cfg(), sw.flows()
    path = write(tmp_path, "m.yaml", """\
        dcms:
          - {name: dcm1, ip: 10.0.0.1, egress: p1}
        """)
    p = sw.daqctl("apply", "--dry-run", path)
    assert ("would update dcm1: ring-size 16384 -> 4096, poll-interval 500 "
            "-> 0, egress p2 -> p1") in p.stdout
    assert "would remove dcm2" in p.stdout
    assert "would change the flows of 5 DCMs (11 deleted, 2 added)" \
        in p.stdout
    assert (sw.next_cfg(), sw.flows()) == (cfg, flows)
    # What the map asks for, in ovs-ofctl's syntax.
    p = sw.daqctl("flows", "--map", path, "--expected")
    assert p.stdout == (
        "cookie=%#x,priority=100,ip,nw_dst=10.0.0.1,actions=output:dcm1\n"
        "cookie=%#x,priority=101,in_port=dcm1,actions=output:p1\n"
        % (cookie("dcm1"), cookie("dcm1")))


# ====================================== rollback, concurrency, flooding, JSON
# These use br1 (one port, q1), empty at their start (Switch.reset), and
# leave it empty.
def no_flood(sw: Switch, bridge: str) -> Dict[str, bool]:
    """Each port of a bridge and whether it is no-flood (OpenFlow 1.0:
    later versions have no such bit)."""
    out: Dict[str, bool] = {}
    port = None
    for line in sw.ofctl("-O", "OpenFlow10", "show", bridge).splitlines():
        if ": addr:" in line:
            port = line.split("(", 1)[1].split(")", 1)[0]
        elif port and line.strip().startswith("config:"):
            out[port] = "NO_FLOOD" in line.split()
    return out


def hand_ring(sw: Switch, name: str, bridge: str = "br1") -> None:
    """A daqring made by hand, floodable, with flows of its own."""
    sw.vsctl("add-port", bridge, name, "--", "set", "Interface", name,
             "type=daqring", "options:ring-size=100", "options:max-burst=4",
             "options:poll-interval=100", "--", "set", "Port", name,
             "external_ids:owner=hand")
    sw.ofctl("add-flow", bridge, "cookie=0x5,priority=10,in_port=%s,"
             "actions=output:q1" % name)
    sw.ofctl("add-flow", bridge, "cookie=0x5,priority=10,ip,"
             "nw_dst=10.5.5.5,actions=output:%s" % name)
    sw.ofctl("-O", "OpenFlow10", "mod-port", bridge, name, "flood")


def test_json_output(sw: Switch, tmp_path: Path) -> None:
    sw.reset(br1=None)
    path = write(tmp_path, "j.yaml", """\
        dcms:
          - {name: j1, ip: 10.0.7.1, egress: q1, rate: 190mbit}
          - {name: j2, ip: 10.0.7.2, egress: q1}
        """)
    js = json.loads(sw.daqctl("apply", "-n", "-f", "json", path,
                              bridge="br1").stdout)
    assert js["status"] == 0 and js["command"] == "apply"
    s, = js["switches"]
    assert (s["bridge"], s["dry_run"], s["changed"]) == ("br1", True, True)
    assert s["create"] == ["j1", "j2"] and s["remove"] == []
    assert s["flows"] == {"dcms": 2, "deleted": 0, "added": 4}
    assert sw.rings("br1") == {}
    js = json.loads(sw.daqctl("apply", path, "-f", "json",
                              bridge="br1").stdout)
    s, = js["switches"]
    assert (s["dry_run"], s["changed"], s["create"]) == (False, True,
                                                         ["j1", "j2"])
    assert s["flows"]["added"] == 4 and s["t_applied"] >= s["t_commit"]
    # A rate is written as byte shaping (max-rate), not as poll-interval.
    assert any("rate 190mbit -> max-rate 190000000 bit/s" in n
               for n in s["notes"]), s["notes"]
    assert sw.rings("br1")["j1"]["options"]["max-rate"] == "190000000"
    assert sorted(sw.rings("br1")) == ["j1", "j2"]
    js = json.loads(sw.daqctl("apply", path, "-f", "json",
                              bridge="br1").stdout)
    assert js["switches"][0]["changed"] is False
    js = json.loads(sw.daqctl("check", path, "-f", "json",
                              bridge="br1").stdout)
    assert js["status"] == 0 and js["switches"][0]["dcms"] == 2
    js = json.loads(sw.daqctl("flows", "--map", path, "-f", "json",
                              bridge="br1").stdout)
    flows = js["switches"][0]["flows"]
    assert {(f["dcm"], f["priority"], f["match"], f["actions"])
            for f in flows} == {
        ("j1", 100, "ip,nw_dst=10.0.7.1", "output:j1"),
        ("j1", 101, "in_port=j1", "output:q1"),
        ("j2", 100, "ip,nw_dst=10.0.7.2", "output:j2"),
        ("j2", 101, "in_port=j2", "output:q1")}
    assert {f["cookie"] for f in flows} == {"%#x" % cookie("j1"),
                                            "%#x" % cookie("j2")}
    js = json.loads(sw.daqctl("del-dcm", "j1", "j2", "-f", "json",
                              bridge="br1").stdout)
    assert js["switches"][0]["remove"] == ["j1", "j2"]
    # Errors: a bad map (2), a switch that cannot be reached (1).
    bad = write(tmp_path, "bad.yaml", "dcms:\n  - {name: a, egress: q1}\n")
    for cmd in (["apply", bad], ["check", bad], ["apply", "-n", bad]):
        p = sw.daqctl(*cmd, "-f", "json", bridge="br1", check=2)
        js = json.loads(p.stdout)
        assert js["status"] == 2 and js["problems"] == [
            {"where": bad + ":2", "reason": "DCM a: no match: give 'ip' "
             "(destination address) or 'tuples'"}], js
    p = sw.daqctl("-f", "json", "--db", "unix:" + str(tmp_path / "none"),
                  "apply", path, check=1)
    js = json.loads(p.stdout)
    assert js["status"] == 1 and "cannot connect" in js["error"]
    js = json.loads(sw.daqctl("rate", "190mbit", "-f", "json").stdout)
    assert (js["max_burst"], js["poll_interval"]) == (32, 2045)
    assert "error" not in js
    assert sw.rings("br1") == {}


def test_rollback_restores_adopted_ring(sw: Switch, tmp_path: Path) -> None:
    """A failed apply that adopted a hand-made daqring gives it back as it
    was: same row, options, marks, OpenFlow port, flows, flooding."""
    sw.reset(br1=None)
    hand_ring(sw, "hand1")
    rings, flows = sw.rings("br1"), sw.flows("br1")
    assert no_flood(sw, "br1")["hand1"] is False
    path = write(tmp_path, "adopt.yaml", """\
        dcms:
          - {name: hand1, ip: 10.0.8.1, egress: q1, numa-id: 7}
          - {name: new1, ip: 10.0.8.2, egress: q1}
        """)
    p = sw.daqctl("apply", path, bridge="br1", check=1)
    assert "refused the change, rolled back" in p.stderr, p.stderr
    assert "invalid numa-id 7" in p.stderr
    assert sw.rings("br1") == rings
    assert rings["hand1"]["external_ids"] == {"owner": "hand"}
    assert rings["hand1"]["options"]["ring-size"] == "100"
    assert sw.flows("br1") == flows
    assert no_flood(sw, "br1")["hand1"] is False
    # Adopted for good: managed, no-flood, its own flows kept.
    Path(path).write_text(Path(path).read_text().replace(", numa-id: 7",
                                                         ""))
    p = sw.daqctl("apply", path, bridge="br1")
    assert "adopt hand1" in p.stdout
    # (new1 too, unless the datapath creates daqrings no-flood.)
    assert "set no-flood on " in p.stdout and "hand1" in p.stdout, p.stdout
    after = sw.rings("br1")
    assert after["hand1"]["_uuid"] == rings["hand1"]["_uuid"]
    assert after["hand1"]["external_ids"]["owner"] == "hand"
    assert after["hand1"]["external_ids"]["daqctl-dcm"] == "hand1"
    assert flows <= sw.flows("br1")
    assert no_flood(sw, "br1") == {"q1": False, "hand1": True,
                                   "new1": True, "br1": False}
    sw.daqctl("clear", bridge="br1")
    sw.ofctl("del-flows", "br1", "cookie=0x5/-1")
    assert sw.rings("br1") == {} and sw.flows("br1") == UNRELATED


def test_failed_rollback_has_its_own_status(sw: Switch,
                                            tmp_path: Path) -> None:
    """The OpenFlow connection is lost at the bundle: the daqrings are
    restored but the flows cannot be: exit 3, ROLLBACK FAILED."""
    sw.reset(br1=None)
    mark = tmp_path / "lost"
    ofctl = tmp_path / "ovs-ofctl"
    ofctl.write_text(textwrap.dedent("""\
        #!/bin/sh
        # ovs-ofctl that loses the switch at the first bundle.
        case " $* " in
        *" --bundle "*) touch %s; echo "connection lost" >&2; exit 1;;
        esac
        [ -e %s ] && { echo "connection refused" >&2; exit 1; }
        exec %s "$@"
        """ % (mark, mark, BIN["ofctl"])))
    ofctl.chmod(0o755)
    path = write(tmp_path, "m.yaml", """\
        dcms:
          - {name: lost1, ip: 10.0.9.1, egress: q1}
        """)
    p = sw.daqctl("apply", path, "--ofctl", str(ofctl), "-f", "json",
                  bridge="br1", check=3)
    assert "ROLLBACK FAILED" in p.stderr and "rolled back" not in p.stderr
    assert "connection lost" in p.stderr
    assert "connection refused" in p.stderr
    js = json.loads(p.stdout)
    assert js["status"] == 3 and js["switches"][0]["rollback"] == "failed"
    assert "ROLLBACK FAILED" in js["error"]
    # The database part of the rollback was done.
    assert sw.rings("br1") == {} and sw.flows("br1") == UNRELATED
    # Lost before any OpenFlow change: the daqrings are rolled back and
    # the flows were never changed, a clean failure (1).
    p = sw.daqctl("apply", path, "--ofctl", str(ofctl), bridge="br1",
                  check=1)
    assert "connection refused; daqrings rolled back" in p.stderr
    assert "ROLLBACK FAILED" not in p.stderr
    assert sw.rings("br1") == {}


def test_no_flood_kept_and_checked(sw: Switch, tmp_path: Path) -> None:
    sw.reset(br1=None)
    path = write(tmp_path, "f.yaml", """\
        dcms:
          - {name: f1, ip: 10.0.10.1, egress: q1}
          - {name: f2, ip: 10.0.10.2, egress: q1}
        """)
    sw.daqctl("apply", path, bridge="br1")
    assert no_flood(sw, "br1")["f1"] and no_flood(sw, "br1")["f2"]
    p = sw.daqctl("check", "--live", path, bridge="br1")
    assert "the switch is as the map says" in p.stdout
    # Flooding turned on behind ovs-daqctl's back, and a hand-made ring.
    sw.ofctl("-O", "OpenFlow10", "mod-port", "br1", "f2", "flood")
    hand_ring(sw, "hand2")
    p = sw.daqctl("check", "--live", path, bridge="br1", check=4)
    assert "daqring f2 is floodable" in p.stdout
    assert ("daqring hand2 is floodable (NORMAL and flooding copy "
            "broadcasts into it): not in the map: ovs-ofctl -O OpenFlow10 "
            "mod-port br1 hand2 no-flood") in p.stdout
    js = json.loads(sw.daqctl("check", "--live", path, "-f", "json",
                              bridge="br1", check=4).stdout)
    assert js["status"] == 4
    assert js["switches"][0]["floodable"] == ["f2", "hand2"]
    assert js["switches"][0]["in_sync"] is False
    p = sw.daqctl("apply", "-n", path, bridge="br1")
    assert "would set no-flood on 1 daqrings: f2" in p.stdout
    assert no_flood(sw, "br1")["f2"] is False
    p = sw.daqctl("apply", path, bridge="br1")
    assert "set no-flood on 1 daqrings: f2" in p.stdout
    assert "OVSDB" not in p.stdout and "bundle" not in p.stdout
    assert no_flood(sw, "br1")["f2"]
    assert "no changes" in sw.daqctl("apply", path, bridge="br1").stdout
    sw.vsctl("del-port", "br1", "hand2")
    sw.ofctl("del-flows", "br1", "cookie=0x5/-1")
    sw.daqctl("check", "--live", path, bridge="br1")
    sw.daqctl("clear", bridge="br1")
    assert sw.rings("br1") == {} and sw.flows("br1") == UNRELATED


def test_try_again_does_not_wait_for_a_change_already_there(
        sw: Switch, daqctl: SimpleNamespace, monkeypatch: Any) -> None:
    """A transaction refused because another client changed what it
    verified is built again at once: the change that made it fail has
    already arrived (ovs/db/idl.py's loop takes the seqno before
    committing).  Only columns that ovs-vswitchd does not refresh on its
    own are monitored, so nothing else would end a wait."""
    sw.reset(br1=None)
    # What ovsdb.Ovsdb monitors.
    ovsdb = importlib.import_module("ovs_daqring.daqctl.ovsdb")
    monkeypatch.setattr(ovsdb, "COLUMNS", {
        "Open_vSwitch": ["bridges", "next_cfg"],
        "Bridge": ["name", "ports"], "Port": ["name", "external_ids"]})
    db = daqctl.Ovsdb(sw.db, 20)
    attempts: List[int] = []

    def build(txn: Any) -> None:
        attempts.append(1)
        p1 = db.ports(db.bridge("br1"))["q1"]
        if len(attempts) == 1:
            # Another client, between our read and our commit.
            sw.vsctl("--no-wait", "set", "Port", "q1",
                     "external_ids:other=%d" % os.getpid())
        p1.verify("external_ids")
        p1.external_ids = dict(p1.external_ids, mine=str(len(attempts)))

    try:
        db.transact(build, "test")
    finally:
        db.close()
    ids = next(p["external_ids"] for p in sw.table("Port", "name,external_ids")
               if p["name"] == "q1")
    sw.vsctl("--no-wait", "remove", "Port", "q1", "external_ids", "other",
             "--", "remove", "Port", "q1", "external_ids", "mine")
    assert ids == {"other": str(os.getpid()), "mine": "2"}
    assert len(attempts) == 2, attempts


def test_concurrent_add_del_dcm(sw: Switch, tmp_path: Path) -> None:
    """Concurrent add-dcm and del-dcm all take effect, daqrings and flows,
    also while another add-dcm fails and rolls back: its rollback undoes
    its own change only."""
    sw.reset(br1=None)
    for i in (1, 2):
        sw.daqctl("add-dcm", "old%d" % i, "--ip", "10.0.11.%d" % i,
                  "--egress", "q1", bridge="br1")
    sw.daqctl("add-dcm", "u1", "--ip", "10.0.11.9", "--egress", "q1",
              bridge="br1")
    u1 = sw.rings("br1")["u1"]

    def start(args: List[str]) -> "subprocess.Popen[str]":
        return subprocess.Popen(
            [PYTHON, str(DAQCTL), "--db", sw.db, "--bridge", "br1",
             "--timeout", "60"] + args, env=sw.env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)

    # ovs-vswitchd is stopped while they all commit: the add-dcm that it
    # then refuses (NUMA node 7) sees the others' DCMs before it rolls
    # back.
    vswitchd = sw.vswitchd
    assert vswitchd is not None
    vswitchd.send_signal(signal.SIGSTOP)
    try:
        bad = start(["add-dcm", "u1", "--ip", "10.0.11.9", "--egress", "q1",
                     "--numa-id", "7"])
        deadline = time.monotonic() + 60
        while "numa-id" not in sw.rings("br1")["u1"]["options"]:
            assert bad.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        n = 8
        cmds = [["add-dcm", "c%d" % i, "--ip", "10.0.12.%d" % i, "--egress",
                 "q1", "--ring-size", str(100 + i)] for i in range(n)]
        cmds += [["del-dcm", "old1"], ["del-dcm", "old2"]]
        procs = [start(c) for c in cmds]
        want = sorted(["u1"] + ["c%d" % i for i in range(n)])
        while sorted(sw.rings("br1")) != want:
            assert time.monotonic() < deadline, sw.rings("br1")
            time.sleep(0.05)
    finally:
        vswitchd.send_signal(signal.SIGCONT)
    for c, p in zip(cmds, procs):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, (c, out, err)
    out, err = bad.communicate(timeout=120)
    assert bad.returncode == 1, (out, err)
    assert "refused the change, rolled back" in err, err
    rings = sw.rings("br1")
    assert sorted(rings) == sorted(["u1"] + ["c%d" % i for i in range(n)])
    assert rings["u1"] == u1
    for i in range(n):
        assert rings["c%d" % i]["options"]["ring-size"] == str(100 + i)
    assert sw.flows("br1") == UNRELATED | expected_flows(
        sw, "br1", [("c%d" % i, "10.0.12.%d" % i, "q1") for i in range(n)]
        + [("u1", "10.0.11.9", "q1")])
    assert all(no_flood(sw, "br1")["c%d" % i] for i in range(n))
    sw.daqctl("clear", bridge="br1")
    assert sw.rings("br1") == {} and sw.flows("br1") == UNRELATED


def test_rollback_recreates_removed_ring_with_its_ofport(
        sw: Switch, tmp_path: Path) -> None:
    """A failed apply that removed a DCM creates its daqring again with
    the OpenFlow port it had (ovs-vswitchd would give it a new one, and
    its flows point at the old one), no-flood, with its flows."""
    sw.reset(br1=None)
    first = write(tmp_path, "g.yaml", """\
        dcms:
          - {name: g1, ip: 10.0.14.1, egress: q1}
          - {name: g2, ip: 10.0.14.2, egress: q1}
        """)
    second = write(tmp_path, "g-bad.yaml", """\
        dcms:
          - {name: g2, ip: 10.0.14.2, egress: q1}
          - {name: g3, ip: 10.0.14.3, egress: q1, numa-id: 7}
        """)
    try:
        sw.daqctl("apply", first, bridge="br1")
        rings, flows = sw.rings("br1"), sw.flows("br1")
        p = sw.daqctl("apply", second, bridge="br1", check=1)
        assert "refused the change, rolled back" in p.stderr, p.stderr
        assert "invalid numa-id 7" in p.stderr
        after = sw.rings("br1")
        assert sorted(after) == ["g1", "g2"]
        for n in ("g1", "g2"):
            if n == "g1":           # a new row, the same port
                del after[n]["_uuid"], rings[n]["_uuid"]
            assert after[n] == rings[n]
        # The number is the old one, its request is given back.
        assert sw.vsctl("get", "Interface", "g1",
                        "ofport_request").strip() == "[]"
        assert sw.flows("br1") == flows
        assert flows == UNRELATED | expected_flows(
            sw, "br1", [("g1", "10.0.14.1", "q1"), ("g2", "10.0.14.2", "q1")])
        assert no_flood(sw, "br1")["g1"] is True
        assert "no changes" in sw.daqctl("apply", first, bridge="br1").stdout
    finally:
        sw.daqctl("clear", bridge="br1", check=None)
    assert sw.rings("br1") == {} and sw.flows("br1") == UNRELATED


def test_rollback_leaves_another_clients_change(sw: Switch,
                                                tmp_path: Path) -> None:
    """A ring that another client changes between ovs-daqctl's commit
    and its rollback is left as that client made it, and the message and
    the JSON result say so."""
    sw.reset(br1=None)
    vswitchd = sw.vswitchd
    assert vswitchd is not None
    try:
        sw.daqctl("add-dcm", "k1", "--ip", "10.0.15.1", "--egress", "q1",
                  bridge="br1")
        # ovs-vswitchd stopped: the add-dcm that it then refuses (NUMA node
        # 7) waits after its commit, while another client changes k1.
        vswitchd.send_signal(signal.SIGSTOP)
        try:
            bad = subprocess.Popen(
                [PYTHON, str(DAQCTL), "--db", sw.db, "--bridge", "br1",
                 "--timeout", "60", "-f", "json", "add-dcm", "k1", "--ip",
                 "10.0.15.1", "--egress", "q1", "--numa-id", "7"],
                env=sw.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True)
            deadline = time.monotonic() + WAIT_S
            while "numa-id" not in sw.rings("br1")["k1"]["options"]:
                assert bad.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            sw.vsctl("--no-wait", "set", "Interface", "k1",
                     "options:max-burst=8")
        finally:
            vswitchd.send_signal(signal.SIGCONT)
        out, err = bad.communicate(timeout=WAIT_S * 2)
        assert bad.returncode == 1, (out, err)
        assert "refused the change, rolled back" in err, err
        assert ("not rolled back: k1, changed by another client since this "
                "change was committed") in err, err
        js = json.loads(out)
        assert js["switches"][0]["left_alone"] == ["k1"]
        assert js["switches"][0]["state"] == "rolled back"
        opts = sw.rings("br1")["k1"]["options"]
        assert (opts["max-burst"], opts["numa-id"]) == ("8", "7")
    finally:
        sw.daqctl("clear", bridge="br1", check=None)
    assert sw.rings("br1") == {} and sw.flows("br1") == UNRELATED


def test_flow_of_another_owner_is_not_replaced(sw: Switch,
                                               tmp_path: Path) -> None:
    """A DCM whose flow has the priority and match of a flow that is not
    ovs-daqctl's is refused: OpenFlow's add would replace that flow, and
    del-dcm would then delete it.  The flows are read after the OVSDB
    transaction (ovs-vswitchd may be busy applying an earlier one), so
    the daqrings are rolled back; --dry-run says so first."""
    sw.reset(br1=None)
    sw.ofctl("add-flow", "br1",
             "cookie=0x77,priority=100,ip,nw_dst=10.0.16.1,actions=drop")
    theirs = "cookie=0x77, priority=100,ip,nw_dst=10.0.16.1 actions=drop"
    path = write(tmp_path, "h.yaml", """\
        dcms:
          - {name: h2, ip: 10.0.16.2, egress: q1}
          - {name: h1, ip: 10.0.16.1, egress: q1}
        """)
    why = ("DCM h1: its flow priority=100,ip,nw_dst=10.0.16.1 would replace "
           "a flow that is not ovs-daqctl's (cookie 0x77, actions=drop)")
    try:
        cfg = sw.next_cfg()
        p = sw.daqctl("apply", "-n", path, bridge="br1", check=2)
        assert "%s:3: %s" % (path, why) in p.stderr, p.stderr
        assert "nothing changed" in p.stderr
        assert sw.next_cfg() == cfg
        for args in (["apply", path], ["add-dcm", "h1", "--ip",
                                       "10.0.16.1", "--egress", "q1"]):
            p = sw.daqctl(*args, bridge="br1", check=1)
            assert "ovs-daqctl: br1 (%s): %s" % (sw.db, why) in p.stderr, \
                p.stderr
            assert "daqrings rolled back" in p.stderr
        assert sw.rings("br1") == {}
        assert sw.flows("br1") == UNRELATED | {theirs}
    finally:
        sw.ofctl("del-flows", "br1", "cookie=0x77/-1")
        sw.daqctl("clear", bridge="br1", check=None)
    assert sw.rings("br1") == {} and sw.flows("br1") == UNRELATED


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_interrupted_apply_says_what_to_do(sw: Switch, tmp_path: Path,
                                           fmt: str) -> None:
    """SIGTERM while ovs-vswitchd applies the change: the wait showed
    progress, and ovs-daqctl says (text and JSON) that OVSDB is committed
    and the flows are not, and what to run; that finishes the job."""
    sw.reset(br1=None)
    path = write(tmp_path, "i.yaml", """\
        dcms:
          - {name: i1, ip: 10.0.17.1, egress: q1}
        """)
    vswitchd = sw.vswitchd
    assert vswitchd is not None
    try:
        vswitchd.send_signal(signal.SIGSTOP)
        try:
            p = subprocess.Popen(
                [PYTHON, str(DAQCTL), "--db", sw.db, "--bridge", "br1",
                 "--timeout", str(WAIT_S), "-f", fmt, "apply", path],
                env=sw.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True)
            assert p.stderr is not None
            # The first progress line (or, if there is none, the end of
            # the command at its --timeout).
            line = p.stderr.readline()
            assert "waiting for ovs-vswitchd to apply the change" in line, \
                line
            p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=WAIT_S)
        finally:
            vswitchd.send_signal(signal.SIGCONT)
        assert p.returncode == 128 + signal.SIGTERM, (out, err)
        rerun = "to finish, run the command again (it changes only what " \
            "differs): ovs-daqctl --db %s --bridge br1 --timeout %d -f %s " \
            "apply %s" % (sw.db, WAIT_S, fmt, path)
        committed = "switch br1: the daqrings are committed in OVSDB " \
            "(next_cfg %d) but ovs-vswitchd had not applied them yet, and " \
            "the flows were not changed" % sw.next_cfg()
        for text in ("interrupted by SIGTERM", committed, rerun):
            assert "ovs-daqctl: " + text in err, err
        if fmt == "json":
            js = json.loads(out)
            assert (js["status"], js["interrupted"]) == (143, "SIGTERM")
            assert js["switches"][0]["state"] == "committed"
            assert committed in js["error"] and rerun in js["error"]
        # As it said: the daqring is in OVSDB, its flows are not there.
        assert sorted(sw.rings("br1")) == ["i1"]
        assert sw.flows("br1") == UNRELATED
        p2 = sw.daqctl("apply", path, bridge="br1")
        assert "one OpenFlow bundle" in p2.stdout
        assert sw.flows("br1") == UNRELATED | expected_flows(
            sw, "br1", [("i1", "10.0.17.1", "q1")])
    finally:
        sw.daqctl("clear", bridge="br1", check=None)
    assert sw.rings("br1") == {} and sw.flows("br1") == UNRELATED


def test_1000_dcms_one_transaction(sw: Switch, tmp_path: Path) -> None:
    sw.reset(br2=None)
    lines = ["defaults: {ring-size: 256, max-burst: 32, poll-interval: 500}",
             "dcms:"]
    for i in range(1000):
        lines.append("  - {name: d%04d, ip: 10.1.%d.%d, egress: r%d}"
                     % (i, i // 250, i % 250 + 1, i % 4 + 1))
    path = write(tmp_path, "m1000.yaml", "\n".join(lines) + "\n")
    cfg = sw.next_cfg()
    t0 = time.monotonic()
    first = sw.daqctl("apply", path, bridge="br2")
    t_apply = time.monotonic() - t0
    assert "one OVSDB transaction: 1000 created" in first.stdout, first.stdout
    assert sw.next_cfg() == cfg + 1                 # ONE transaction
    rings = sw.rings("br2")
    assert len(rings) == 1000
    assert all(isinstance(r["ofport"], int) and r["ofport"] > 0
               for r in rings.values())
    flows = sw.flows("br2")
    assert len(flows) == 2000 + len(UNRELATED)
    t0 = time.monotonic()
    p = sw.daqctl("apply", path, bridge="br2")
    t_again = time.monotonic() - t0
    assert "no changes" in p.stdout
    print("\n1000 DCMs: 'ovs-daqctl apply' took %.1f s; again (no changes) "
          "%.1f s\n%s" % (t_apply, t_again, first.stdout))


# ==================================================================== helpers
def _udp_packet(src: str, dst: str) -> str:
    """An Ethernet/IPv4/UDP frame (scapy), as hex for ovs-ofctl
    packet-out."""
    frame = (Ether(src="02:00:00:00:00:02", dst="02:00:00:00:00:01")
             / IP(src=src, dst=dst, ttl=64, id=0)
             / UDP(sport=1000, dport=2000) / Raw(b"x" * 18))
    return bytes(frame).hex()
