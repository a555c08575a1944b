# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The parts of daq-bench: their names, those run unless named, the
measurement of each (a module of its own: hop.py, scale.py, ...) and the
targets of all of them."""

from typing import Callable, Dict

from . import (builds, fabric_failover, fabric_incast, fairness, hop,
               incast, lossless, peers, scale, scrape, shaping, share,
               sleep, waiting)
from .runner import Bench

PARTS = ["hop", "scale", "waiting", "sleep", "shaping", "fairness",
         "builds", "incast", "peers", "lossless", "fabric-incast",
         "fabric-failover", "metrics", "share"]
# What --parts runs unless told: fabric-incast (two daq-incast runs of an
# emulated leaf-spine per repeat, about 15 minutes), lossless (20 runs
# at each of its points, about 40 minutes), fabric-failover (10 runs
# of each of three failures, about 25 minutes) and share (PMD threads on
# two cores, which the others leave to everything else) only when asked.
DEFAULT_PARTS = [p for p in PARTS
                 if p not in ("fabric-incast", "lossless", "fabric-failover",
                              "share")]

MEASURE: Dict[str, Callable[[Bench], None]] = {
    "hop": hop.measure, "scale": scale.measure, "waiting": waiting.measure,
    "sleep": sleep.measure, "shaping": shaping.measure,
    "fairness": fairness.measure, "builds": builds.measure,
    "incast": incast.measure, "peers": peers.measure,
    "lossless": lossless.measure, "fabric-incast": fabric_incast.measure,
    "fabric-failover": fabric_failover.measure,
    "metrics": scrape.measure, "share": share.measure,
}

# The targets of the issues, every part's: key -> what it asks.
TARGETS: Dict[str, str] = {
    key: text for part in (hop, scale, waiting, sleep, shaping, fairness,
                           share, builds, incast, peers, lossless, scrape)
    for key, text in part.TARGETS.items()}
TARGETS.update(fabric_incast.FABRIC_TARGETS)
TARGETS.update(fabric_failover.FAILOVER_TARGETS)
