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

"""The exporters' --metrics-address [HOST:]PORT, without the Prometheus
client library (a tool's --help and argument checks need none)."""

from typing import Tuple

DEFAULT_HOST = "localhost"
# Not in Prometheus's list of default port allocations
# (github.com/prometheus/prometheus/wiki/Default-port-allocations).
DEFAULT_PORT = 9478
DEFAULT_ADDRESS = "%s:%d" % (DEFAULT_HOST, DEFAULT_PORT)


def parse_address(text: str) -> Tuple[str, int]:
    """--metrics-address [HOST:]PORT: (host, port); HOST may be an IPv6
    address in brackets.  Raises ValueError with the reason."""
    host, port = DEFAULT_HOST, text
    if text.startswith("["):
        close = text.find("]")
        if close < 0 or text[close + 1:close + 2] != ":":
            raise ValueError("%r: expected [IPV6]:PORT" % text)
        host, port = text[1:close], text[close + 2:]
    elif ":" in text:
        host, _, port = text.rpartition(":")
        if ":" in host:
            raise ValueError("%r: put an IPv6 address in brackets, "
                             "[IPV6]:PORT" % text)
    if not host:
        raise ValueError("%r: empty host" % text)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("%r: the port must be a number from 1 to 65535"
                         % text)
    return host, int(port)
