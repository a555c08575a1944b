# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The syntaxes of daq-incast's compound option values (--sweep,
--pmd-preempt, --deep-limit, --failover, --flow-buckets): each parser
returns the value or raises ConfigError."""

import re
from typing import List, Optional, Tuple

from ..hosts import ConfigError
from .limits import MIN_LINK_BUFFER, SWEEP_PARAMS
from .units import parse_size


def parse_sweep(text: str) -> Tuple[str, List[int]]:
    """"ring-size=128,512" -> ("ring-size", [128, 512])."""
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or name not in SWEEP_PARAMS:
        raise ConfigError("bad --sweep %r: expected PARAM=V1,V2,... with "
                          "PARAM one of %s"
                          % (text, ", ".join(sorted(SWEEP_PARAMS))))
    out = []
    for v in values.split(","):
        try:
            n = int(v.strip(), 0)
        except ValueError:
            raise ConfigError("bad --sweep value %r for %s" % (v, name))
        if n < SWEEP_PARAMS[name][1]:
            raise ConfigError("--sweep %s values must be >= %d, not %d"
                              % (name, SWEEP_PARAMS[name][1], n))
        out.append(n)
    if not out or len(set(out)) != len(out):
        raise ConfigError("--sweep %s needs distinct values" % name)
    return name, out


def parse_preempt(text: str) -> Tuple[int, int]:
    """"1/20" (ms) -> (1000, 20000) microseconds; "" -> (0, 0)."""
    if not text.strip():
        return 0, 0
    busy, sep, period = text.partition("/")
    try:
        b, p = float(busy), float(period)
    except ValueError:
        raise ConfigError("bad --pmd-preempt %r: expected BUSY/PERIOD in "
                          "ms, e.g. 1/20" % text)
    if not sep or not 0 < b < p or p > 10_000 or b < 0.01:
        raise ConfigError("bad --pmd-preempt %r: need 0.01 <= BUSY < "
                          "PERIOD <= 10000 (ms)" % text)
    if b / p > 0.5:
        raise ConfigError("--pmd-preempt %r takes more than half of the "
                          "PMD's core" % text)
    return int(round(b * 1000)), int(round(p * 1000))


def parse_deep_limits(text: Optional[str]) -> List[str]:
    """--deep-limit LIST: each value "auto", "auto/N" (N >= 1) or a size
    of at least a full frame; ["auto"] when not given."""
    if text is None:
        return ["auto"]
    out = []
    for v in (x.strip() for x in text.split(",")):
        if v == "auto" or re.fullmatch(r"auto/[1-9][0-9]{0,5}", v):
            out.append(v)
            continue
        try:
            n = parse_size(v)
        except ConfigError:
            n = -1
        if n < MIN_LINK_BUFFER:
            raise ConfigError("bad --deep-limit value %r: auto, auto/N or "
                              "a size of at least %d bytes (e.g. 4MiB)"
                              % (v, MIN_LINK_BUFFER))
        out.append(str(n))
    if len(set(out)) != len(out):
        raise ConfigError("--deep-limit needs distinct values")
    return out


def parse_failover(text: str, spines: int) -> Tuple[float, float]:
    """--failover DOWN/UP: (down, up) seconds, (0, 0) for none."""
    if not text:
        return 0.0, 0.0
    try:
        down, up = (float(x) for x in text.split("/"))
    except ValueError:
        raise ConfigError("--failover %r: DOWN/UP in seconds, e.g. 2/5"
                          % text)
    if not 0 < down < up <= 600:
        raise ConfigError("--failover %s: need 0 < DOWN < UP <= 600"
                          % text)
    if spines < 2:
        raise ConfigError("--failover needs --spines 2 (a path to move "
                          "the DCMs to)")
    return down, up


def parse_flow_buckets(text: str) -> Optional[int]:
    """--flow-buckets: None for auto, 0 (a FIFO) or a power of 2."""
    if text == "auto":
        return None
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n != 0 and (n < 2 or n > 65536 or n & (n - 1)):
        raise ConfigError("--flow-buckets must be auto, 0 or a power of 2 "
                          "from 2 to 65536")
    return n
