# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The sizing maths behind daq-incast's automatic values: daqring sizes
and shaping, credits, the DCM port's buffer, burst bytes and the TX retry
budget (pure)."""

import math
from typing import Optional, Tuple

from ..hosts import ConfigError
from .limits import (DAQRING_FRAME, MAX_AUTO_RING, MAX_BURST_BYTES,
                     MAX_TX_RETRY_US, MIN_BURST_BYTES, TX_BATCH)
from .units import parse_size


def frames_per_fragment(fragment_size: int, mss: int) -> int:
    return max(1, -(-fragment_size // mss))


def auto_ring_size(ros: int, fragment_size: int, mss: int,
                   pus: int = 1) -> int:
    """Two events' worth of full-size packets per DCM and event in flight
    (`pus`), rounded up to a power of 2, at most MAX_AUTO_RING.  One event
    is the least that absorbs the burst (thesis Fig. 5.8), but TCP does
    not always send full-size segments: a ROS whose window the queueing
    delay cut sends shorter ones (seen: 32 frames per 32 KiB fragment
    instead of 23, with 30 ROS), and retransmitted or probe segments come
    on top."""
    need = 2 * pus * ros * frames_per_fragment(fragment_size, mss)
    return min(MAX_AUTO_RING, max(64, 1 << (need - 1).bit_length()))


def auto_credits(fragment_size: int, mss: int, port_frames: int, mtu: int,
                 link_overhead: int) -> int:
    """Outstanding fragments whose frames fit the DCM port's buffer, at
    least 1: the ATLAS rule that the credit window should match the ToR
    port's output buffer."""
    frames = frames_per_fragment(fragment_size, mss)
    return max(1, port_frames // frames)


def auto_byte_burst(port_frames: int) -> int:
    """max-burst of a byte-shaped daqring: half the DCM port's buffer (16
    of 32 frames), at most 32.

    A ring paced at the link's rate gains tokens while its PMD thread is
    preempted and, when the thread runs again, releases up to max-burst
    frames at once; from then on ring and link run at the same rate, so
    those frames stay queued in front of the link and the next preemption
    of up to max-burst frame times (16 x 61.5 us = 1 ms at 200 Mbit/s,
    0.2 ms at 1 Gbit/s) costs no link time.  With 5 frames, the burst
    packet shaping chooses at 200 Mbit/s, every preemption beyond 0.3 ms
    idled the link (1 ms of every 10 ms taken: 92.9% of ideal against
    99.4% with 16 frames).  But what stands in front of the link must also
    fit the port buffer when the link itself stalls (its qdisc runs on the
    busy cores too): with 24 frames and a sustained backlog the port
    dropped frames in 2 of 3 runs, with 16 in 1 of 2.  Half the buffer
    leaves the same margin on both sides."""
    return max(1, min(32, port_frames // 2))


def byte_burst_bytes(spec: Optional[str], port_frames: int,
                     overhead: int) -> int:
    """--max-burst-bytes: 0 when not given; auto: half the DCM port's
    buffer in full frames on the wire (the docs' advice: the downstream
    buffer less what else the port queues, here the frames the link is
    sending), at least two frames."""
    if spec is None:
        return 0
    if spec.strip() == "auto":
        n = (port_frames // 2) * (DAQRING_FRAME + overhead)
        return max(n, 2 * (DAQRING_FRAME + overhead), MIN_BURST_BYTES)
    n = parse_size(spec)
    if not MIN_BURST_BYTES <= n <= MAX_BURST_BYTES:
        raise ConfigError("--max-burst-bytes must be %d..%d bytes, not %d"
                          % (MIN_BURST_BYTES, MAX_BURST_BYTES, n))
    if n < 2 * (DAQRING_FRAME + overhead):
        raise ConfigError("--max-burst-bytes %d is less than two frames "
                          "of %d bytes with --link-overhead %d"
                          % (n, DAQRING_FRAME, overhead))
    return n


def tx_retry_budget(spec: str, overhead: int, rate_bps: int) -> int:
    """--tx-retry-budget-us: a number of microseconds, or auto: the time
    the link takes to send two batches of full frames.  The budget covers
    a whole output batch (up to TX_BATCH packets): one that finds the
    port full waits until the link has sent as many frames, and as much
    again covers a link that stalls meanwhile (the emulated link's qdisc
    runs on the machine's busy cores).  One batch alone was not enough:
    a ring shaped above its link still dropped a frame in one run.  At
    most MAX_TX_RETRY_US."""
    text = spec.strip()
    if text == "auto":
        us = 2 * TX_BATCH * (1514 + overhead) * 8e6 / rate_bps
        return max(1, min(MAX_TX_RETRY_US, int(math.ceil(us))))
    try:
        us = int(text)
    except ValueError:
        us = -1
    if not 0 <= us <= MAX_TX_RETRY_US:
        raise ConfigError("--tx-retry-budget-us must be auto or 0..%d "
                          "microseconds, not %r" % (MAX_TX_RETRY_US, spec))
    return us


def max_port_frames(wmem_default: int) -> int:
    """Frames an af_packet TX ring may hold so that a full ring makes the
    DPDK PMD drop rather than block: in-flight frames (about 2.5 KB of
    socket memory each) must stay under half the send buffer."""
    n = wmem_default // 2 // 2560
    return max(2, n - n % 2)


def auto_shaping(link_rate_bps: int, link_overhead: int, mtu: int,
                 fraction: float, max_bytes: int,
                 min_interval_us: int = 250) -> Tuple[int, int]:
    """Choose (max-burst, poll-interval us) so that the daqring releases
    full-size frames just under the access link's frame rate.

    The link carries a full frame in (mtu + 14 + overhead) * 8 bits; the
    daqring releases max-burst frames per poll-interval, so the target is
    max-burst / poll-interval <= fraction * link frame rate.  Takes the
    smallest burst whose interval is at least min_interval_us (a schedule
    one PMD keeps easily) and whose rate is within 2% of the target;
    bursts never exceed max_bytes (the link's shallow buffer)."""
    frame_bits = (mtu + 14 + link_overhead) * 8
    target = fraction * link_rate_bps / frame_bits       # frames per s
    best: Optional[Tuple[float, int, int]] = None
    for burst in range(1, 33):
        if burst > 1 and burst * (mtu + 14) > max_bytes:
            break
        us = max(1, math.ceil(burst / target * 1e6))
        rate = burst / (us * 1e-6)
        if us >= min_interval_us and rate >= 0.98 * target:
            return burst, us
        if best is None or rate > best[0]:
            best = (rate, burst, us)
    assert best is not None
    return best[1], best[2]
