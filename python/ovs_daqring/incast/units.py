# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""Rates and sizes in tc(8) units: parsing them from the command line,
and formatting a rate for a report."""

import re

from ..hosts import ConfigError


_RATE_UNITS = {
    "": 1, "bit": 1, "k": 10**3, "kbit": 10**3, "m": 10**6, "mbit": 10**6,
    "g": 10**9, "gbit": 10**9, "tbit": 10**12,
    "kibit": 2**10, "mibit": 2**20, "gibit": 2**30,
    "bps": 8, "kbps": 8 * 10**3, "mbps": 8 * 10**6, "gbps": 8 * 10**9,
}
_SIZE_UNITS = {
    "": 1, "b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10,
    "m": 2**20, "mb": 2**20, "mib": 2**20, "g": 2**30, "gb": 2**30,
    "gib": 2**30,
}
_NUM_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*$")


def parse_rate(text: str) -> int:
    """Parse a rate with tc(8) units ("200mbit", "1gbit", "25mbps" is
    bytes/s, a bare number is bit/s) into bit/s."""
    m = _NUM_RE.match(text)
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _RATE_UNITS:
        raise ConfigError("bad rate %r (use e.g. 200mbit, 1gbit)" % text)
    return int(round(float(m.group(1)) * _RATE_UNITS[unit]))


def parse_size(text: str) -> int:
    """Parse a size in bytes ("32KiB", "16kb", "1m", "1500")."""
    m = _NUM_RE.match(text)
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _SIZE_UNITS:
        raise ConfigError("bad size %r (use e.g. 32KiB, 16kb, 1500)" % text)
    return int(round(float(m.group(1)) * _SIZE_UNITS[unit]))


def format_rate(bps: float) -> str:
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return "%.4g %s" % (bps / scale, unit)
    return "%.4g bit/s" % bps
