/*
 * Copyright (c) 2026 The ovs-daqring authors.
 *
 * Licensed under the Apache License, Version 2.0 (the "License");
 * you may not use this file except in compliance with the License.
 * You may obtain a copy of the License at:
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */

#ifndef DAQRING_SHAPER_H
#define DAQRING_SHAPER_H 1

/* The shaper of a daqring: what leaves the ring, and when.
 *
 * Packet shaping ("poll-interval"): a buffered leaky bucket, at most
 * 'max_burst' packets per 'interval' TSC cycles.
 *
 * Byte shaping ("max-rate"): a token bucket that charges each frame its
 * length (at least DAQRING_MIN_FRAME_LEN) plus 'frame-overhead' bytes,
 * like rte_sched.  DPDK's token buckets are not used: rte_sched's are
 * internal to its hierarchical scheduler, and rte_meter's period is a whole
 * number of TSC cycles (at least 100) per byte or group of bytes, which is
 * up to 1% off at rates within the range a data-acquisition network uses
 * (e.g. around 200 Mbit/s with a 2.5 GHz TSC).  Instead, tokens are counted
 * in "bit-ticks", a bit times the TSC frequency: 'rate' bit-ticks accrue
 * per TSC cycle, a frame costs its bits times the frequency, so the
 * arithmetic is exact in 64-bit integers and the long-term rate is exactly
 * 'rate'.  A frame may leave while the bucket holds any positive amount
 * and the bucket may go negative by one frame (a deficit the next frames
 * wait for), so frames of any size pass and the rate stays exact; the
 * bucket holds at most 'depth', 'max_burst' full-size frames.  A TSO
 * packet, which the egress port (or its NIC) sends as several frames, costs
 * those frames, each with the packet's headers and the overhead.
 *
 * The burst of a byte shaper, what it releases beyond its rate (after an
 * idle or preempted polling thread, at once), is the bucket's depth plus
 * the frame that takes it below 0.  "max-burst-bytes" bounds it: the
 * depth becomes that many bytes less one full-size frame (1518 bytes plus
 * the overhead), so that in any window, the wire bytes that leave exceed
 * the rate times the window by at most "max-burst-bytes", for frames up to
 * 1518 bytes; a longer frame can exceed it by its excess over 1518 bytes.
 * A downstream port whose buffer holds that many bytes, draining at least
 * at the shaped rate, is never overrun.
 *
 * A struct daqring_shaper holds the parameters and is immutable once
 * created, so that the provider can publish it through RCU and the polling
 * thread always sees a consistent set.  What changes as packets leave
 * lives in the polling thread's struct daqring_shaper_state.  Times are in
 * TSC cycles and are passed in by the caller, so that the arithmetic can be
 * tested without a clock (tests/test-daqring-shaper.c). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dp-packet.h"
#include "ovs-atomic.h"
#include "packets.h"
#include "util.h"

struct rte_ring;
struct daqring_share;

/* Shortest frame on an Ethernet link, without FCS: shorter frames are
 * padded to it. */
#define DAQRING_MIN_FRAME_LEN ETH_TOTAL_MIN

/* Frame size used to express the shaping rate in bits per second, and the
 * size of the 'max_burst' frames that make the depth of a byte shaper. */
#define DAQRING_RATE_FRAME_LEN 1518

/* What a shaper is made from: the shaping options of a daqring. */
struct daqring_shaper_params {
    uint32_t max_burst;         /* Packets dequeued at most per interval
                                 * (packet shaping) or per poll. */
    uint32_t poll_interval;     /* Packet shaping: microseconds, or 0. */
    uint64_t max_rate;          /* Byte shaping: bits per second, or 0. */
    uint32_t frame_overhead;    /* Bytes charged per frame for
                                 * 'max_rate'. */
    uint32_t max_burst_bytes;   /* Byte shaping: bound of a burst in wire
                                 * bytes (at least two full-size frames),
                                 * or 0 for 'max_burst' full-size frames. */
};

/* Shaping parameters, in TSC cycles, as the polling thread uses them. */
struct daqring_shaper {
    uint64_t seq;               /* Changes with every configuration. */
    uint32_t max_burst;         /* Packets dequeued at most per poll. */
    uint64_t interval;          /* Packet shaping: TSC cycles, or 0. */
    uint64_t rate;              /* Byte shaping: bits per second, or 0. */
    uint64_t byte_ticks;        /* Bit-ticks per byte: 8 x TSC frequency. */
    uint64_t overhead_ticks;    /* Bit-ticks of the per-frame overhead. */
    int64_t depth;              /* Capacity of the bucket, in bit-ticks. */
    uint64_t fill_cycles;       /* TSC cycles that fill the bucket from its
                                 * lowest possible level. */
    uint64_t turn_cycles;       /* TSC cycles of one full-size frame
                                 * (DAQRING_RATE_FRAME_LEN plus the
                                 * overhead) at the rate. */
    uint64_t depth_cycles;      /* TSC cycles of the depth at the rate. */

    /* Egress sharing ("egress-max-rate"): the bucket that the daqring
     * shares with the other daqrings bound to its egress, and its member
     * slot there, or NULL.  The shaper holds a reference to it, which
     * daqring_shaper_destroy() releases. */
    struct daqring_share *share;
    unsigned int share_slot;
};

/* Packet shaping: intervals that a backlogged daqring whose polls come
 * late (a polling thread that woke up late, or was preempted) may still
 * catch up on, each with its own 'max_burst', before the grid of intervals
 * moves on without them.  A poll late by more loses the intervals beyond,
 * so that a daqring never releases more than (1 +
 * DAQRING_SHAPER_CATCHUP_INTERVALS) x 'max_burst' packets at once. */
#define DAQRING_SHAPER_CATCHUP_INTERVALS 4

/* The state of a shaper in the thread that polls its daqring. */
struct daqring_shaper_state {
    uint64_t seq;               /* 'seq' of the shaper that the members
                                 * below refer to, 0 if none yet. */
    uint64_t next_tsc;          /* Packet shaping: TSC at which the current
                                 * interval ends. */
    uint32_t burst_left;        /* Packet shaping: packets that the current
                                 * interval may still release. */
    bool idle;                  /* Packet shaping: the daqring was found
                                 * empty since the current interval
                                 * started (see daqring_shaper_idle()). */
    bool packet_shaped;         /* 'next_tsc' and 'burst_left' are valid. */
    bool byte_shaped;           /* 'tokens' and 'last_tsc' are valid. */
    int64_t tokens;             /* Byte shaping: bucket level, in bit-ticks
                                 * (may be negative). */
    uint64_t last_tsc;          /* Byte shaping: TSC of the last bucket
                                 * update. */
};

void daqring_tsc_calibrate_start(void);
uint64_t daqring_tsc_hz(void);

struct daqring_shaper *daqring_shaper_create(
    const struct daqring_shaper_params *, uint64_t tsc_hz, uint64_t seq);

/* Returns true if 's' shapes at all (packets or bytes). */
static inline bool
daqring_shaper_shapes(const struct daqring_shaper *s)
{
    return s->interval || s->rate || s->share;
}

/* Returns the TCP segment size of 'packet' if it asks for TCP segmentation
 * offload (TSO), otherwise 0.  The segment size is in the mbuf's second
 * cache line, which nothing else on a daqring's way reads for a packet
 * without TSO (and which may hold a stale value for one: a driver's
 * receive need not reset it), so it is read only behind the request, as
 * each base's netdev-dpdk does:
 *
 *   - OVS 3.1 (DPDK 22.11): the mbuf's offload flag RTE_MBUF_F_TX_TCP_SEG,
 *     in its first cache line, read directly.
 *
 *   - OVS 3.5 (DPDK 24.11): the same flag, which dp-packet.h maps to
 *     DP_PACKET_OL_TX_TCP_SEG (dp_packet_hwol_is_tso()), and the segment
 *     size through dp_packet_get_tso_segsz().
 *
 *   - OVS 4.0 (DPDK 25.11): there is no TSO flag; a non-zero segment size
 *     is the request (dp_packet_get_tso_segsz(), which
 *     dp_packet_reset_offload() clears), and netdev-dpdk's send to a port
 *     with Tx offloads reads it for every packet as well.  (A packet that
 *     asks for TSO also asks for its L4 checksum, but 4.0 does not rely on
 *     that, so neither does this.) */
static inline uint16_t
daqring_packet_tso_segsz(const struct dp_packet *packet OVS_UNUSED)
{
#if !defined(DPDK_NETDEV)
    return 0;
#elif !defined(DEF_OL_FLAG)
    return dp_packet_get_tso_segsz(packet);
#elif defined(DP_PACKET_OL_TX_ANY_CKSUM)
    return (dp_packet_hwol_is_tso(packet)
            ? dp_packet_get_tso_segsz(packet) : 0);
#else
    return (packet->mbuf.ol_flags & RTE_MBUF_F_TX_TCP_SEG
            ? packet->mbuf.tso_segsz : 0);
#endif
}

/* Makes 'packet' ask for TSO with TCP segment size 'segsz', the way each
 * base marks a packet that a port received with TSO: the converse of
 * daqring_packet_tso_segsz(), for the unit tests. */
static inline void
daqring_packet_set_tso(struct dp_packet *packet OVS_UNUSED,
                       uint16_t segsz OVS_UNUSED)
{
#if !defined(DPDK_NETDEV)
#elif !defined(DEF_OL_FLAG)
    dp_packet_set_tso_segsz(packet, segsz);
#elif defined(DP_PACKET_OL_TX_ANY_CKSUM)
    dp_packet_hwol_set_tcp_seg(packet);
    dp_packet_set_tso_segsz(packet, segsz);
#else
    packet->mbuf.ol_flags |= RTE_MBUF_F_TX_TCP_SEG;
    packet->mbuf.tso_segsz = segsz;
#endif
}

uint32_t daqring_tso_wire_bytes(const struct dp_packet *, uint16_t segsz,
                                uint32_t overhead);

/* Returns the bytes that 'packet' takes on the wire, each of its frames
 * counted with 'overhead' more bytes: one frame of its length (at least
 * DAQRING_MIN_FRAME_LEN) or, for a TSO packet, the frames it leaves the
 * egress port as (see daqring_tso_wire_bytes()). */
static inline uint32_t
daqring_packet_wire_bytes(const struct dp_packet *packet, uint32_t overhead)
{
    uint32_t len = MAX(dp_packet_size(packet), DAQRING_MIN_FRAME_LEN);
    uint16_t segsz = daqring_packet_tso_segsz(packet);

    if (OVS_UNLIKELY(segsz) && len > segsz) {
        return daqring_tso_wire_bytes(packet, segsz, overhead);
    }
    return len + overhead;
}

int64_t daqring_shaper_tso_cost(const struct daqring_shaper *,
                                const struct dp_packet *, uint16_t segsz);

/* Returns what 'packet' costs under byte shaper 's', in bit-ticks: a frame
 * of its length (at least DAQRING_MIN_FRAME_LEN) plus the overhead or, for
 * a TSO packet, the frames it leaves the egress port as (see
 * daqring_tso_wire_bytes()). */
static inline int64_t
daqring_shaper_frame_cost(const struct daqring_shaper *s,
                          const struct dp_packet *packet)
{
    uint32_t len = MAX(dp_packet_size(packet), DAQRING_MIN_FRAME_LEN);
    uint16_t segsz = daqring_packet_tso_segsz(packet);

    if (OVS_UNLIKELY(segsz) && len > segsz) {
        return daqring_shaper_tso_cost(s, packet, segsz);
    }
    return len * s->byte_ticks + s->overhead_ticks;
}

size_t daqring_shaper_take(const struct daqring_shaper *, int64_t *budget,
                           struct dp_packet **pkts, size_t n);
size_t daqring_shaper_dequeue(struct rte_ring *,
                              const struct daqring_shaper *, int64_t *budget,
                              struct dp_packet **pkts, size_t n,
                              unsigned int *avail);

void daqring_shaper_state_init(struct daqring_shaper_state *,
                               const struct daqring_shaper *, uint64_t now);
void daqring_shaper_idle(struct daqring_shaper_state *);
bool daqring_shaper_admit(struct daqring_shaper_state *,
                          const struct daqring_shaper *, uint64_t now,
                          uint32_t *burst, int64_t *budget);
bool daqring_shaper_charge(struct daqring_shaper_state *,
                           const struct daqring_shaper *, uint64_t now,
                           size_t n, int64_t budget);
uint64_t daqring_shaper_deadline(const struct daqring_shaper_state *,
                                 const struct daqring_shaper *,
                                 uint64_t now);

uint64_t daqring_shaper_burst_bytes(const struct daqring_shaper *);
uint64_t daqring_shaper_excess_bytes(const struct daqring_shaper_state *,
                                     const struct daqring_shaper *);
void daqring_shaper_destroy(struct daqring_shaper *);

/* Egress sharing: one token bucket for all the daqrings bound to one
 * egress port ("egress-max-rate"), so that what they release together
 * never exceeds the egress's rate, a ring may use what the others leave
 * (work-conserving), and backlogged rings get equal shares whatever their
 * polling threads and however often those poll them.
 *
 * The bucket is a byte shaper's (struct daqring_shaper, same bit-tick
 * arithmetic, same depth and burst), kept as one 64-bit virtual time, the
 * egress's theoretical arrival time 'tat' (GCRA): the TSC until which what
 * was sent keeps the egress busy at its rate.  The bucket holds its depth
 * less ('tat' - now) at the rate (all of it once 'tat' is past), frames
 * leave while it holds a positive amount, and each batch that leaves
 * advances 'tat' by its exact cost (bytes x 8 / rate, in TSC cycles; what
 * is left of a cycle carries over to the ring's next batch).  It is
 * lock-free, with ovs-atomic.h: a polling thread must never wait for
 * another (a PMD thread preempted while holding a lock would stop every
 * ring of the egress).  A poll reads 'tat' and the number of busy rings,
 * and a poll that sends does one compare-and-swap on 'tat'; no poll scans
 * the other rings' state.  A ring's batch is taken against the level read
 * when it claimed and charged after, so two threads that claim at the same
 * instant may both spend it: in any window, the rings of one egress
 * release at most its rate times the window plus the share's burst, plus
 * one batch for each other polling thread that claimed at the same
 * instant.  The long-term rate is exact: every byte sent is charged.
 *
 * Fairness is start-time fair queueing over the rings that wait for the
 * share ("busy": they have packets and neither their state nor their own
 * shaper holds them), with the TSC as the share's virtual clock.  Each
 * ring has a virtual time, which advances by n times the time of what it
 * sends at the egress's rate, n being the number of busy rings: a ring
 * that gets exactly 1/n of the egress keeps pace with the clock.  The
 * invariant: a busy ring may claim only while its virtual time is not
 * ahead of the clock by more than a quantum (one full-size frame at its
 * share), and the most it may spend is what brings it there.  A ring that
 * is behind (its thread polls it late, or rarely, or it was idle) starts
 * from its virtual time, but at most n times the bucket's depth behind the
 * clock: its catch-up batch is at most one depth.  What a ring ahead of its
 * share leaves stays in the bucket for the busy rings behind it, up to the
 * depth; tokens that would overflow it before the ring polls again
 * (after as long as since its last poll, at most half the depth) may go to
 * a ring ahead, without counting against it, so that the egress never
 * idles for a ring that does not come.  Frames of different sizes share
 * by bytes.
 *
 * A ring counts as busy from its first claim after it waited for nothing
 * to its daqring_share_idle() (nothing to send, set down, held by its own
 * shaper); the count changes only then, not at every poll.  Membership is
 * explicit: a slot's state is set (idle) and cleared under the registry's
 * mutex, and a polling thread moves it between idle and busy with
 * compare-and-swap only, so a thread still on the shaper of a ring that
 * left (or on a slot that another ring joined since) can neither make a
 * slot busy twice nor make a slot without a member busy: it sends what the
 * bucket holds and is charged for it.  A busy ring whose thread stops
 * polling it, with no chance to call daqring_share_idle(), holds the
 * others back by no more than the bucket's depth: the overflow goes to
 * them.  Nothing stalls: no ring ever waits for another.
 *
 * The shares are kept in a registry by egress name.  A daqring joins one
 * with daqring_share_join(), which checks that all the rings of the egress
 * give the same parameters, and leaves it with daqring_share_leave(); the
 * memory lives until the last shaper that refers to it is destroyed.
 *
 * The parameters belong to the egress: they change when every member ring
 * asks for the same new ones (as when a single OVSDB transaction changes
 * them for all, and the bridge then configures each ring in turn).  Each
 * member's request is recorded when it asks; a request that the other
 * members do not (yet) agree with fails, the share keeping its parameters,
 * and the one that completes the agreement switches the share to them,
 * carrying the bucket's level over (at most the new depth).  The callers
 * then retry the refused requests, which now succeed. */

/* Rings that may share one egress. */
#define DAQRING_SHARE_MAX_RINGS 64

struct daqring_share_params {
    uint64_t max_rate;          /* "egress-max-rate", bits per second. */
    uint32_t max_burst_bytes;   /* "egress-max-burst-bytes", or 0. */
    uint32_t frame_overhead;    /* "frame-overhead" of the rings. */
};

struct daqring_share *daqring_share_join(const char *egress,
                                         const char *ring,
                                         const struct daqring_share_params *,
                                         uint64_t tsc_hz, uint64_t now,
                                         struct daqring_share *old,
                                         unsigned int *slot, char **errp);
bool daqring_share_check(const char *egress, const char *ring,
                         const struct daqring_share_params *,
                         struct daqring_share *old, unsigned int slot,
                         char **errp);
void daqring_share_leave(struct daqring_share *, unsigned int slot);
struct daqring_share *daqring_share_ref(struct daqring_share *);
void daqring_share_unref(struct daqring_share *);

/* Outcome of daqring_share_claim(). */
enum daqring_share_claim {
    DAQRING_SHARE_GRANTED,      /* The ring may send. */
    DAQRING_SHARE_EMPTY,        /* The bucket is empty. */
    DAQRING_SHARE_TURN,         /* The ring is ahead of its share. */
};

/* What daqring_share_claim() granted, for daqring_share_charge(). */
struct daqring_share_grant {
    int64_t budget;             /* Bit-ticks the ring may spend. */
    uint64_t now;               /* TSC of the claim. */
    uint64_t tat;               /* The egress's virtual time it saw. */
    uint64_t start;             /* The ring's virtual start time. */
    int64_t fair;               /* TSC cycles of the grant that count in
                                 * the ring's virtual time. */
    int n;                      /* Busy rings, or 0 if the ring is not a
                                 * member (any more). */
};

enum daqring_share_claim daqring_share_claim(struct daqring_share *,
                                             unsigned int slot, uint64_t now,
                                             struct daqring_share_grant *);
void daqring_share_charge(struct daqring_share *, unsigned int slot,
                          const struct daqring_share_grant *, int64_t spent);
void daqring_share_idle(struct daqring_share *, unsigned int slot);
uint64_t daqring_share_deadline(struct daqring_share *,
                                enum daqring_share_claim, uint64_t now);
const struct daqring_shaper *daqring_share_shaper(
    const struct daqring_share *);
void daqring_share_get(struct daqring_share *,
                       struct daqring_share_params *, unsigned int *n_rings);

#endif /* daqring-shaper.h */
