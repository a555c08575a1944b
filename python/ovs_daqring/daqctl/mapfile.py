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

"""What every map reader of the project shares (the DCM map's and the
fabric map's): a YAML loader whose mappings know their lines, and the
checks of a map's scalar values (integers in a range, IPv4 host
addresses, port names, remotes, four-tuples), which the fabric's
agents also run on the fabric database's rows (fabric/rows.py).  Each
check raises ValueError with a message that names WHAT; the readers add
the file and line."""

import ipaddress
import re
from typing import Any, Dict, Optional
import yaml

from .model import FourTuple, NAME_RE, RESERVED_PORT_NAMES


class LineLoader(yaml.SafeLoader):
    """A safe YAML loader whose mappings know their lines."""


class LineDict(dict):  # type: ignore[type-arg]
    """A YAML mapping that remembers its line and the line of each key."""
    line: int = 0
    key_lines: Dict[str, int]


def construct_mapping(loader: Any, node: Any) -> LineDict:
    loader.flatten_mapping(node)
    m = LineDict()
    m.line = node.start_mark.line + 1
    m.key_lines = {}
    for knode, vnode in node.value:
        key = loader.construct_object(knode, deep=True)
        if not isinstance(key, str):
            key = str(key)
        norm = key.replace("-", "_")
        if norm in m:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                "duplicate key %r" % key, knode.start_mark)
        m[norm] = loader.construct_object(vnode, deep=True)
        m.key_lines[norm] = knode.start_mark.line + 1
    return m


LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)


def int_value(v: Any, what: str, lo: int, hi: int) -> int:
    if isinstance(v, bool):
        raise ValueError("%s must be an integer, not %r" % (what, v))
    if isinstance(v, int):
        n = v
    elif isinstance(v, str) and re.match(r"^\s*[0-9]+\s*$", v):
        n = int(v)
    else:
        raise ValueError("%s must be an integer, not %r" % (what, v))
    if not lo <= n <= hi:
        raise ValueError("%s %d out of range %d..%d" % (what, n, lo, hi))
    return n


def ipv4(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise ValueError("%s must be an IPv4 address, not %r" % (what, v))
    try:
        a = ipaddress.ip_address(v.strip())
    except ValueError:
        raise ValueError("%s %r is not an IP address" % (what, v))
    if a.version != 4:
        raise ValueError("%s %s: only IPv4 is supported" % (what, v))
    # What no host of the network can have: the switch would steer to a
    # DCM packets that are no DCM's (or none at all).
    for net, kind in _NOT_HOSTS:
        if a in net:
            raise ValueError("%s %s is not a unicast host address (%s, %s)"
                             % (what, v, kind, net))
    return str(a)


_NOT_HOSTS = [(ipaddress.ip_network(n), kind) for n, kind in (
    ("0.0.0.0/8", "'this network'"),
    ("127.0.0.0/8", "loopback"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "limited broadcast"),
    ("240.0.0.0/4", "reserved"))]


def port_name(v: Any, what: str) -> str:
    if not isinstance(v, str) or not NAME_RE.match(v) or v.isdigit():
        raise ValueError("%s %r is not a valid port name (letters, digits, "
                         "'_', '.', '-'; not all digits; at most 64)"
                         % (what, v))
    if v.upper() in RESERVED_PORT_NAMES:
        raise ValueError("%s %r is a reserved OpenFlow port name"
                         % (what, v))
    return v


# One active remote of OVS's stream library (the forms
# ovs.stream.Stream.is_valid_name() takes; reading a map needs no OVS
# library): no space, control character or comma after the method.
_REMOTE_RE = re.compile(r"^(unix|tcp|ssl):[^\s,\x00-\x1f\x7f]+\Z")


def remote(v: Any, what: str) -> str:
    """An OVSDB or OpenFlow remote: unix:FILE, tcp:HOST[:PORT] or
    ssl:HOST[:PORT], one of them (never a word a command line would read
    as an option, nor as more than one argument or remote)."""
    if not isinstance(v, str) or not _REMOTE_RE.match(v):
        raise ValueError("%s %r is not a remote (unix:FILE, tcp:HOST[:PORT] "
                         "or ssl:HOST[:PORT])" % (what, v))
    return v


_TUPLE_RE = re.compile(r"^(?:(tcp|udp):)?([^:>\s]+):([^:>\s]+)\s*->\s*"
                       r"([^:>\s]+):([^:>\s]+)$", re.IGNORECASE)


def parse_tuple(v: Any) -> FourTuple:
    """'[tcp:|udp:]SRC:SPORT->DST:DPORT' ('*' is a wildcard, DST is
    required) or a mapping {proto, src, sport, dst, dport}."""
    def port(p: Any, what: str) -> Optional[int]:
        if p is None or p == "*":
            return None
        return int_value(p, what, 1, 65535)

    def ip(a: Any, what: str) -> Optional[str]:
        if a is None or a == "*":
            return None
        return ipv4(a, what)

    if isinstance(v, dict):
        extra = set(v) - {"proto", "src", "sport", "dst", "dport"}
        if extra:
            raise ValueError("unknown tuple key(s) %s (known: proto, src, "
                             "sport, dst, dport)" % ", ".join(sorted(extra)))
        proto, src, sport, dst, dport = (v.get("proto", "tcp"), v.get("src"),
                                         v.get("sport"), v.get("dst"),
                                         v.get("dport"))
    elif isinstance(v, str):
        m = _TUPLE_RE.match(v.strip())
        if not m:
            raise ValueError("bad tuple %r (write [tcp:|udp:]SRC:SPORT->"
                             "DST:DPORT, '*' for any)" % v)
        proto, src, sport, dst, dport = (m.group(1) or "tcp", m.group(2),
                                         m.group(3), m.group(4), m.group(5))
    else:
        raise ValueError("bad tuple %r" % (v,))
    if not isinstance(proto, str) or proto.lower() not in ("tcp", "udp"):
        raise ValueError("tuple proto %r: tcp or udp" % (proto,))
    if dst is None or dst == "*":
        raise ValueError("a tuple needs its destination address")
    return FourTuple(proto.lower(), ip(src, "tuple source"),
                     port(sport, "tuple source port"),
                     str(ipv4(dst, "tuple destination")),
                     port(dport, "tuple destination port"))
