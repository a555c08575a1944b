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

#include <config.h>

#include "daqring-shaper.h"

#include <inttypes.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_ring.h>
#include <rte_ring_peek.h>

#include "hash.h"
#include "openvswitch/hmap.h"
#include "openvswitch/vlog.h"
#include "ovs-rcu.h"
#include "ovs-thread.h"
#include "timeval.h"

VLOG_DEFINE_THIS_MODULE(daqring_shaper);

/* The TSC frequency the shapers count in, in Hz.
 *
 * Not rte_get_tsc_hz(): DPDK 22.11's Linux EAL measures the TSC against
 * a 1 s sleep and rounds the result to 10 MHz (on a 2,445.43 MHz TSC it
 * reports 2,450 MHz, 0.19% too fast, so every shaped rate was 0.19% slow;
 * where the rounding goes the other way, a ring shaped to its link's rate
 * overruns the link), and DPDK 24.11 rounds to 100 kHz or takes a
 * nominal frequency from CPUID.  The shapers need the rate exact to well
 * under 0.02%.
 *
 * The TSC is timed against CLOCK_MONOTONIC_RAW, over
 * DAQRING_TSC_CALIBRATION_NS: the kernel's clocksource at its own
 * measured rate, which NTP never slews (CLOCK_MONOTONIC is steered by up
 * to 500 ppm while ntpd or chrony corrects an offset, and the calibration
 * would keep whatever correction was in force at that moment).  Each end
 * of the interval is the TSC read between two reads of the clock, the
 * tightest pair of a few tries, so the error is that pair's half-width
 * (tens of nanoseconds) over the interval: below 1 ppm.  The interval
 * starts when the process starts (daqring_tsc_calibrate_start()), not on
 * the configuration path, and ends when a shaper first needs the
 * frequency. */
#define DAQRING_TSC_CALIBRATION_NS (200 * 1000 * 1000)

static uint64_t
daqring_raw_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return ts.tv_sec * UINT64_C(1000000000) + ts.tv_nsec;
}

/* Stores in '*tsc' a TSC reading and in '*ns' the CLOCK_MONOTONIC_RAW time
 * it was taken at, to within the half-width of the tightest of a few
 * clock-TSC-clock sandwiches. */
static void
daqring_tsc_sample(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;

    for (int i = 0; i < 8; i++) {
        uint64_t a = daqring_raw_ns();
        uint64_t t = rte_rdtsc_precise();
        uint64_t b = daqring_raw_ns();

        if (b - a < best) {
            best = b - a;
            *tsc = t;
            *ns = a + (b - a) / 2;
        }
    }
}

/* The first end of the calibration interval, taken by
 * daqring_tsc_calibrate_start(). */
static struct ovsthread_once daqring_tsc_start_once
    = OVSTHREAD_ONCE_INITIALIZER;
static uint64_t daqring_tsc_t0, daqring_tsc_n0;

/* Starts timing the TSC for daqring_tsc_hz(), if not yet done: takes the
 * first end of the interval, which costs a few clock reads.  Called when
 * the daqring provider is registered, at the start of the process, so that
 * the interval has usually passed when the first shaped daqring is
 * configured, and the main thread never waits for it. */
void
daqring_tsc_calibrate_start(void)
{
    if (ovsthread_once_start(&daqring_tsc_start_once)) {
        daqring_tsc_sample(&daqring_tsc_t0, &daqring_tsc_n0);
        ovsthread_once_done(&daqring_tsc_start_once);
    }
}

/* Returns the calibrated TSC frequency in Hz, measuring it the first time,
 * once per process: the TSC over the time since
 * daqring_tsc_calibrate_start(), at least DAQRING_TSC_CALIBRATION_NS (so
 * the first call sleeps for what is left of that, only if it comes that
 * early). */
uint64_t
daqring_tsc_hz(void)
{
    static struct ovsthread_once once = OVSTHREAD_ONCE_INITIALIZER;
    static uint64_t tsc_hz;

    if (ovsthread_once_start(&once)) {
        uint64_t t0, n0, t1, n1;
        uint64_t dpdk_hz = rte_get_tsc_hz();

        daqring_tsc_calibrate_start();
        t0 = daqring_tsc_t0;
        n0 = daqring_tsc_n0;
        n1 = daqring_raw_ns();
        if (n1 - n0 < DAQRING_TSC_CALIBRATION_NS) {
            xnanosleep(DAQRING_TSC_CALIBRATION_NS - (n1 - n0));
        }
        daqring_tsc_sample(&t1, &n1);
        if (n1 > n0 && t1 > t0) {
            tsc_hz = (unsigned __int128) (t1 - t0) * 1000000000 / (n1 - n0);
        }
        if (!tsc_hz) {
            VLOG_WARN("could not time the TSC against CLOCK_MONOTONIC_RAW: "
                      "shaping uses DPDK's %"PRIu64" Hz", dpdk_hz);
            tsc_hz = dpdk_hz;
        } else {
            VLOG_INFO("TSC at %"PRIu64" Hz against CLOCK_MONOTONIC_RAW "
                      "(DPDK reports %"PRIu64" Hz, %+.3f%%), over %.3f s: "
                      "shaping counts in the former", tsc_hz, dpdk_hz,
                      100.0 * ((double) dpdk_hz - tsc_hz) / tsc_hz,
                      (n1 - n0) / 1e9);
        }
        ovsthread_once_done(&once);
    }
    return tsc_hz;
}

/* The most that one packet costs, in bytes on the wire: a TSO packet of at
 * most UINT16_MAX bytes whose headers and overhead, repeated in every
 * segment, at most double it (a segment size below the headers' is no
 * use to anyone).  Bounds the deficit a packet can leave in a bucket. */
#define DAQRING_MAX_PACKET_WIRE_BYTES (2 * UINT16_MAX)

/* Returns a new shaper for 'p', counting in a TSC of 'tsc_hz' Hz (see
 * daqring_tsc_hz(); unused if 'p' does not shape), with sequence number
 * 'seq'.  The caller frees it with free(). */
struct daqring_shaper *
daqring_shaper_create(const struct daqring_shaper_params *p,
                      uint64_t tsc_hz, uint64_t seq)
{
    struct daqring_shaper *s = xzalloc(sizeof *s);

    s->seq = seq;
    s->max_burst = p->max_burst;
    if (p->poll_interval) {
        s->interval = ((unsigned __int128) p->poll_interval * tsc_hz
                       + 500000) / 1000000;
    }
    if (p->max_rate) {
        /* A frame costs at most this many bit-ticks: the deepest the
         * bucket can go below 0. */
        int64_t deficit;
        uint64_t full = DAQRING_RATE_FRAME_LEN + p->frame_overhead;
        uint64_t depth_bytes = p->max_burst * full;

        /* "max-burst-bytes" sets the depth, above 'max_burst' frames too:
         * a deeper bucket lets the ring catch up, at 'max_burst' packets
         * per poll, after its thread was preempted for longer than
         * 'max_burst' frames take at the rate. */
        if (p->max_burst_bytes > full) {
            depth_bytes = p->max_burst_bytes - full;
        }
        s->rate = p->max_rate;
        s->byte_ticks = 8 * tsc_hz;
        s->overhead_ticks = p->frame_overhead * s->byte_ticks;
        s->depth = depth_bytes * s->byte_ticks;
        deficit = DAQRING_MAX_PACKET_WIRE_BYTES * s->byte_ticks;
        s->fill_cycles = (s->depth + deficit) / s->rate + 1;
        s->turn_cycles = (full * s->byte_ticks) / s->rate + 1;
        s->depth_cycles = s->depth / s->rate;
    }
    return s;
}

/* Returns the bytes on the wire of TSO packet 'p', of TCP segment size
 * 'segsz', each frame counted with 'overhead' more bytes: the frames it
 * leaves as, the payload cut into 'segsz' bytes, each segment with the
 * packet's headers up to its TCP payload (at least DAQRING_MIN_FRAME_LEN),
 * at most DAQRING_MAX_PACKET_WIRE_BYTES.  (The frame overhead and headers
 * of the extra segments made a 64 kB TSO packet, charged as one frame,
 * leave about 5% more than a shaper's rate.)  A packet without a TCP
 * payload where its offsets say, or with a payload of one segment, leaves
 * as one frame.  The byte shaper (daqring_shaper_frame_cost()) and the flow
 * buckets' deficit round-robin (lib/daqring-fq.c) both count with this. */
uint32_t
daqring_tso_wire_bytes(const struct dp_packet *p, uint16_t segsz,
                       uint32_t overhead)
{
    const char *payload = dp_packet_get_tcp_payload(p);
    uint32_t len = MAX(dp_packet_size(p), DAQRING_MIN_FRAME_LEN);
    uint32_t hdr, data, n, last;
    uint64_t wire;

    if (!payload) {
        return len + overhead;
    }
    hdr = payload - (const char *) dp_packet_data(p);
    data = dp_packet_size(p) - hdr;
    if (data <= segsz) {
        return len + overhead;
    }
    n = DIV_ROUND_UP(data, segsz);
    last = data - (n - 1) * segsz;
    wire = ((uint64_t) (n - 1) * (hdr + segsz)
            + MAX(hdr + last, DAQRING_MIN_FRAME_LEN));
    return MIN(wire + (uint64_t) n * overhead, DAQRING_MAX_PACKET_WIRE_BYTES);
}

/* Returns what TSO packet 'p', of TCP segment size 'segsz', costs under
 * byte shaper 's', in bit-ticks: the bytes it leaves as, each frame with
 * the frame overhead (see daqring_tso_wire_bytes()). */
int64_t
daqring_shaper_tso_cost(const struct daqring_shaper *s,
                        const struct dp_packet *p, uint16_t segsz)
{
    uint32_t overhead = s->overhead_ticks / s->byte_ticks;

    return daqring_tso_wire_bytes(p, segsz, overhead) * s->byte_ticks;
}

/* Returns how many of the 'n' packets in 'pkts' may leave under byte
 * shaper 's' with '*budget' bit-ticks in the bucket, and takes their cost
 * from '*budget': packets leave while the budget is positive. */
size_t
daqring_shaper_take(const struct daqring_shaper *s, int64_t *budget,
                    struct dp_packet **pkts, size_t n)
{
    size_t i;

    for (i = 0; i < n && *budget > 0; i++) {
        *budget -= daqring_shaper_frame_cost(s, pkts[i]);
    }
    return i;
}

/* Dequeues up to 'n' packets from 'ring' into 'pkts' and returns their
 * number; stores in '*avail' the number of packets left in the ring.  With
 * byte shaper 's', dequeues only the packets that '*budget' lets leave (see
 * daqring_shaper_take()): it looks at them in the ring first and leaves the
 * others there.  Only the ring's single consumer may call this. */
size_t
daqring_shaper_dequeue(struct rte_ring *ring, const struct daqring_shaper *s,
                       int64_t *budget, struct dp_packet **pkts, size_t n,
                       unsigned int *avail)
{
    unsigned int got, keep;

    if (!s->rate) {
        return rte_ring_sc_dequeue_burst(ring, (void **) pkts, n, avail);
    }

    got = rte_ring_dequeue_burst_start(ring, (void **) pkts, n, avail);
    keep = daqring_shaper_take(s, budget, pkts, got);
    rte_ring_dequeue_finish(ring, keep);
    *avail += got - keep;
    return keep;
}

/* Initializes 'st' for shaper 's' at TSC 'now' (only byte shaping reads
 * it): a new interval at the next poll, a full bucket. */
void
daqring_shaper_state_init(struct daqring_shaper_state *st,
                          const struct daqring_shaper *s, uint64_t now)
{
    st->seq = s->seq;
    st->next_tsc = 0;
    st->burst_left = 0;
    st->idle = true;
    st->packet_shaped = s->interval != 0;
    st->byte_shaped = s->rate != 0;
    st->tokens = s->depth;
    st->last_tsc = now;
}

/* Makes 'st', the state of another shaper than 's' (a configuration
 * change) or of none yet, the state of 's' at TSC 'now'.  What the
 * daqring released under the old shaper still counts: a bucket keeps its
 * level (at most the new depth) and its time of update, so that a change
 * (or many) never releases a new burst, and an interval in progress goes
 * on with what is left of its burst (at most the new 'max_burst') until
 * it ends, or for the new interval, whichever comes first.  Only a shaper
 * that starts to shape packets or bytes starts a new interval at the next
 * poll or with a full bucket, as the daqring released at will before. */
static void
daqring_shaper_state_sync(struct daqring_shaper_state *st,
                          const struct daqring_shaper *s, uint64_t now)
{
    bool packet_shaped = st->seq && st->packet_shaped;
    bool byte_shaped = st->seq && st->byte_shaped;
    struct daqring_shaper_state old = *st;

    daqring_shaper_state_init(st, s, now);
    if (s->interval && packet_shaped) {
        st->idle = old.idle;
        st->burst_left = MIN(old.burst_left, s->max_burst);
        st->next_tsc = ((int64_t) (old.next_tsc - (now + s->interval)) > 0
                        ? now + s->interval : old.next_tsc);
    }
    if (s->rate && byte_shaped) {
        st->tokens = MIN(old.tokens, s->depth);
        st->last_tsc = old.last_tsc;
    }
}

/* Tells 'st' that its daqring was found empty: packet shaping re-anchors
 * its grid of intervals at the next poll that sends, rather than catching
 * up (see daqring_shaper_admit()), so that idle time earns no credit. */
void
daqring_shaper_idle(struct daqring_shaper_state *st)
{
    st->idle = true;
}

/* Adds the tokens that accrued since the last update to the bucket of 'st'
 * under byte shaper 's', at TSC 'now'.  Returns true if a frame may leave
 * now.
 *
 * 'now' may be behind the last update: the TSCs of two cores need not
 * agree (a daqring's rx queue moved to a thread on a vCPU whose TSC has
 * another offset), and then nothing accrues, the bucket counting from
 * 'now' on.  (An unsigned difference would wrap and fill the bucket.) */
static bool
daqring_shaper_fill(struct daqring_shaper_state *st,
                    const struct daqring_shaper *s, uint64_t now)
{
    int64_t elapsed = now - st->last_tsc;

    st->last_tsc = now;
    if (elapsed <= 0) {
        /* Nothing accrued, or a TSC behind: see above. */
    } else if (elapsed >= s->fill_cycles) {
        st->tokens = s->depth;
    } else {
        /* No overflow: 'elapsed * rate' is below 'depth' plus the deepest
         * deficit plus 'rate'. */
        st->tokens = MIN(s->depth, st->tokens + (int64_t) (elapsed * s->rate));
    }
    return st->tokens > 0;
}

/* Called by the polling thread of a daqring that has packets, with shaper
 * 's', which shapes, at TSC 'now'.  Returns false if no packet may leave
 * now (see daqring_shaper_deadline() for when one may).  Otherwise stores
 * in '*burst' how many packets may leave at most and, for byte shaping, in
 * '*budget' the level of the bucket, from which daqring_shaper_take() and
 * daqring_shaper_dequeue() then take the cost of each packet they let go;
 * daqring_shaper_charge() must follow with what actually left.
 *
 * Packet shaping is a buffered leaky bucket: at most 'max_burst' packets
 * per interval, in intervals on a TSC grid ('next_tsc' advances by exactly
 * one interval per interval used, so late polls do not lower the rate: a
 * backlogged daqring whose poll comes late catches up on up to
 * DAQRING_SHAPER_CATCHUP_INTERVALS intervals at its next polls), except
 * that a daqring that had nothing to send (daqring_shaper_idle())
 * re-anchors the grid to now: idle time earns no credit, and the first
 * burst after idle is at most 'max_burst'.  What a poll did not use of the
 * burst may leave at later polls within the same interval.
 *
 * 's' may be another shaper than the one 'st' was used with (a
 * configuration change): see daqring_shaper_state_sync(). */
bool
daqring_shaper_admit(struct daqring_shaper_state *st,
                     const struct daqring_shaper *s, uint64_t now,
                     uint32_t *burst, int64_t *budget)
{
    bool ok;

    if (OVS_UNLIKELY(st->seq != s->seq)) {
        daqring_shaper_state_sync(st, s, now);
    }
    *burst = s->max_burst;
    if (s->interval) {
        if (OVS_UNLIKELY((int64_t) (st->next_tsc - now)
                         > (int64_t) s->interval)) {
            /* The current interval ends more than an interval from now:
             * this TSC is behind the one that started it (see
             * daqring_shaper_fill()).  It ends an interval from now. */
            st->next_tsc = now + s->interval;
        }
        /* A new interval, or what is left of the current one's burst. */
        if ((int64_t) (now - st->next_tsc) < 0) {
            *burst = st->burst_left;
        }
        ok = *burst > 0;
    } else {
        ok = daqring_shaper_fill(st, s, now);
    }
    *budget = st->tokens;
    return ok;
}

/* Charges shaper state 'st' of shaper 's', after daqring_shaper_admit() at
 * TSC 'now', for the 'n' packets that actually left, and sets the bucket of
 * a byte shaper to 'budget', what daqring_shaper_take() left of the level
 * that daqring_shaper_admit() reported, plus the cost of any packets taken
 * that did not leave after all (put back).  Returns true if the packets
 * started a new interval of packet shaping. */
bool
daqring_shaper_charge(struct daqring_shaper_state *st,
                      const struct daqring_shaper *s, uint64_t now,
                      size_t n, int64_t budget)
{
    bool new_interval = false;

    if (s->interval) {
        if ((int64_t) (now - st->next_tsc) >= 0) {
            uint64_t catchup = DAQRING_SHAPER_CATCHUP_INTERVALS * s->interval;

            /* The new interval started at 'next_tsc', on the grid, if the
             * daqring was backlogged: its next polls catch up on the
             * intervals it missed, up to 'catchup'.  After idle time, it
             * starts now. */
            if (st->idle) {
                st->next_tsc = now;
            } else if (now - st->next_tsc > catchup) {
                st->next_tsc = now - catchup;
            }
            st->next_tsc += s->interval;
            st->idle = false;
            st->burst_left = s->max_burst;
            new_interval = true;
        }
        st->burst_left -= n;
    }
    if (s->rate) {
        st->tokens = budget;
    }
    return new_interval;
}

/* Returns the TSC at which a daqring that daqring_shaper_admit() at TSC
 * 'now' made wait may send again: the start of its next interval, or when
 * its bucket holds tokens again. */
uint64_t
daqring_shaper_deadline(const struct daqring_shaper_state *st,
                        const struct daqring_shaper *s, uint64_t now)
{
    if (s->interval) {
        return st->next_tsc;
    }
    /* The bucket holds 'tokens' <= 0 and gains 'rate' per cycle. */
    return now + (uint64_t) -st->tokens / s->rate + 1;
}

/* Returns the burst that byte shaper 's' may release beyond its rate, in
 * wire bytes (frame plus overhead), for frames of up to
 * DAQRING_RATE_FRAME_LEN bytes: the bucket's depth plus one such frame. */
uint64_t
daqring_shaper_burst_bytes(const struct daqring_shaper *s)
{
    return s->depth / s->byte_ticks + DAQRING_RATE_FRAME_LEN
           + s->overhead_ticks / s->byte_ticks;
}

/* Returns the wire bytes that byte shaper 's' with state 'st' has released
 * beyond its rate, counted from the last time its bucket was full: the
 * bucket's depth less its level.  Its largest value over time is the
 * largest burst the shaper released. */
uint64_t
daqring_shaper_excess_bytes(const struct daqring_shaper_state *st,
                            const struct daqring_shaper *s)
{
    return st->tokens < s->depth ? (s->depth - st->tokens) / s->byte_ticks
                                 : 0;
}

/* Frees shaper 's' and releases its reference to its share, if any.
 * Suitable for ovsrcu_postpone(). */
void
daqring_shaper_destroy(struct daqring_shaper *s)
{
    if (s) {
        daqring_share_unref(s->share);
        free(s);
    }
}

/* Egress sharing, see daqring-shaper.h. */

/* What a slot of a share holds (see 'state' in struct
 * daqring_share_member). */
enum daqring_share_state {
    DAQRING_SHARE_NONE,         /* No member ring. */
    DAQRING_SHARE_IDLE,         /* A member ring that does not wait for the
                                 * share: nothing to send, set down, or held
                                 * by its own shaper. */
    DAQRING_SHARE_BUSY,         /* A member ring that has packets for the
                                 * share: counted in 'n_busy'. */
};

/* Virtual time, far enough in the past that a ring that just joined starts
 * with the whole catch-up (see daqring_share_claim()). */
#define DAQRING_SHARE_VT_PAST (UINT64_C(1) << 62)

/* The member ring in one slot of a share, in a cache line of its own: only
 * the polling thread of that ring writes it while it is a member (and the
 * registry, under 'daqring_share_mutex', when it joins or leaves), so the
 * polling threads of different rings never write the same line. */
struct daqring_share_member {
    PADDED_MEMBERS(CACHE_LINE_SIZE,
        /* An enum daqring_share_state.  Set to DAQRING_SHARE_IDLE or
         * DAQRING_SHARE_NONE under 'daqring_share_mutex' when a ring joins
         * or leaves; between IDLE and BUSY by the ring's polling thread,
         * with compare-and-swap, so that a polling thread still on the
         * shaper of a ring that left can never make a slot without a member
         * (or another ring's slot) count as busy twice. */
        atomic_uint state;

        /* The ring's virtual time: TSC cycles, in which the ring's service
         * advances by 'n_busy' times the time its frames take at the
         * egress's rate (see daqring_share_claim()). */
        atomic_uint64_t vt;
        atomic_uint64_t last;       /* TSC of the ring's last claim. */
        atomic_uint64_t rem;        /* Bit-ticks sent but not yet charged to
                                     * the share (less than one cycle's). */
    );
};

struct daqring_share {
    /* In 'daqring_shares' while it has members.  Guarded by
     * 'daqring_share_mutex'. */
    struct hmap_node node;
    char *egress;                       /* Name of the egress port. */
    struct daqring_share_params params; /* In force. */
    char *names[DAQRING_SHARE_MAX_RINGS]; /* Member rings, or NULL. */
    unsigned int n_rings;               /* Member rings. */

    /* For each member, whether it asked for parameters other than
     * 'params', and which (see daqring_share_check__()). */
    bool requested[DAQRING_SHARE_MAX_RINGS];
    struct daqring_share_params requests[DAQRING_SHARE_MAX_RINGS];

    struct ovs_refcount ref_cnt;        /* The registry's (while it has
                                         * members) and each shaper's. */

    /* Rate, depth, costs, for 'params': immutable, replaced (through RCU)
     * when 'params' change. */
    OVSRCU_TYPE(struct daqring_shaper *) shaper;

    /* The egress's virtual time (theoretical arrival time, GCRA): the TSC
     * until which the frames already sent keep the egress busy at its
     * rate.  Each batch that leaves advances it by its exact cost with one
     * compare-and-swap. */
    PADDED_MEMBERS(CACHE_LINE_SIZE,
        atomic_uint64_t tat;
    );

    /* Members in state DAQRING_SHARE_BUSY, changed only when a ring starts
     * or stops waiting for the share: read by every claim, apart from
     * 'tat' so that a charge does not take the line from the readers. */
    PADDED_MEMBERS(CACHE_LINE_SIZE,
        atomic_int n_busy;
    );

    struct daqring_share_member members[DAQRING_SHARE_MAX_RINGS];
};

static struct ovs_mutex daqring_share_mutex = OVS_MUTEX_INITIALIZER;
static struct hmap daqring_shares OVS_GUARDED_BY(daqring_share_mutex)
    = HMAP_INITIALIZER(&daqring_shares);

static bool
daqring_share_params_equal(const struct daqring_share_params *a,
                           const struct daqring_share_params *b)
{
    return (a->max_rate == b->max_rate
            && a->max_burst_bytes == b->max_burst_bytes
            && a->frame_overhead == b->frame_overhead);
}

static struct daqring_share *
daqring_share_find(const char *egress)
    OVS_REQUIRES(daqring_share_mutex)
{
    struct daqring_share *sh;

    HMAP_FOR_EACH_WITH_HASH (sh, node, hash_string(egress, 0),
                             &daqring_shares) {
        if (!strcmp(sh->egress, egress)) {
            return sh;
        }
    }
    return NULL;
}

/* Returns the parameters that the member of 'sh' in 'slot' asks for. */
static const struct daqring_share_params *
daqring_share_request(const struct daqring_share *sh, unsigned int slot)
    OVS_REQUIRES(daqring_share_mutex)
{
    return sh->requested[slot] ? &sh->requests[slot] : &sh->params;
}

/* Returns the name of a member of 'sh' other than the one in 'slot', one
 * that does not ask for 'p' if there is one. */
static const char *
daqring_share_other(const struct daqring_share *sh, unsigned int slot,
                    const struct daqring_share_params *p)
    OVS_REQUIRES(daqring_share_mutex)
{
    const char *other = "?";

    for (unsigned int i = 0; i < DAQRING_SHARE_MAX_RINGS; i++) {
        if (i != slot && sh->names[i]) {
            if (!daqring_share_params_equal(daqring_share_request(sh, i),
                                            p)) {
                return sh->names[i];
            }
            other = sh->names[i];
        }
    }
    return other;
}

/* Returns true if every member of 'sh' other than the one in 'slot' asks
 * for 'p'. */
static bool
daqring_share_agree(const struct daqring_share *sh, unsigned int slot,
                    const struct daqring_share_params *p)
    OVS_REQUIRES(daqring_share_mutex)
{
    for (unsigned int i = 0; i < DAQRING_SHARE_MAX_RINGS; i++) {
        if (i != slot && sh->names[i]
            && !daqring_share_params_equal(daqring_share_request(sh, i), p)) {
            return false;
        }
    }
    return true;
}

/* Makes 'slot' of 'sh' a member's, one that starts at TSC 'now' with the
 * whole catch-up and no request. */
static void
daqring_share_set_member(struct daqring_share *sh, unsigned int slot,
                         uint64_t now)
    OVS_REQUIRES(daqring_share_mutex)
{
    struct daqring_share_member *m = &sh->members[slot];

    sh->requested[slot] = false;
    atomic_store_relaxed(&m->vt, now - DAQRING_SHARE_VT_PAST);
    atomic_store_relaxed(&m->last, now);
    atomic_store_relaxed(&m->rem, 0);
    atomic_store(&m->state, DAQRING_SHARE_IDLE);
}

/* Ends the membership of the ring in 'slot' of 'sh'.  A polling thread still
 * on the shaper of the ring that leaves may claim and charge once more: it
 * is charged to the share, but no longer counts as busy (see
 * daqring_share_claim()). */
static void
daqring_share_leave__(struct daqring_share *sh, unsigned int slot)
    OVS_REQUIRES(daqring_share_mutex)
{
    unsigned int state;
    int orig;

    ovs_assert(slot < DAQRING_SHARE_MAX_RINGS && sh->names[slot]);
    free(sh->names[slot]);
    sh->names[slot] = NULL;
    sh->requested[slot] = false;
    state = atomic_exchange(&sh->members[slot].state,
                            (unsigned int) DAQRING_SHARE_NONE);
    if (state == DAQRING_SHARE_BUSY) {
        atomic_sub_relaxed(&sh->n_busy, 1, &orig);
    }
    if (!--sh->n_rings) {
        hmap_remove(&daqring_shares, &sh->node);
        daqring_share_unref(sh);
    }
}

/* Returns a new byte shaper for share parameters 'p'. */
static struct daqring_shaper *
daqring_share_shaper_create(const struct daqring_share_params *p,
                            uint64_t tsc_hz)
{
    struct daqring_shaper_params sp = {
        .max_burst = NETDEV_MAX_BURST,
        .max_rate = p->max_rate,
        .frame_overhead = p->frame_overhead,
        .max_burst_bytes = p->max_burst_bytes,
    };

    return daqring_shaper_create(&sp, tsc_hz, 0);
}

/* Gives 'sh' parameters 'p', in a TSC of 'tsc_hz' Hz, at TSC 'now', keeping
 * the level of its bucket (at most the new depth, a deficit as long at the
 * new rate) and the virtual times of its members. */
static void
daqring_share_set_params(struct daqring_share *sh,
                         const struct daqring_share_params *p,
                         uint64_t tsc_hz, uint64_t now)
    OVS_REQUIRES(daqring_share_mutex)
{
    struct daqring_shaper *old, *new;
    uint64_t tat, new_tat;

    VLOG_INFO("egress %s: egress-max-rate %"PRIu64", egress-max-burst-bytes "
              "%"PRIu32" and frame-overhead %"PRIu32" for its %u daqrings "
              "(were %"PRIu64", %"PRIu32" and %"PRIu32")",
              sh->egress, p->max_rate, p->max_burst_bytes, p->frame_overhead,
              sh->n_rings, sh->params.max_rate, sh->params.max_burst_bytes,
              sh->params.frame_overhead);
    old = ovsrcu_get_protected(struct daqring_shaper *, &sh->shaper);
    new = daqring_share_shaper_create(p, tsc_hz);
    sh->params = *p;
    ovsrcu_set(&sh->shaper, new);

    /* The level in bit-ticks, rate-independent: the old depth less the
     * time the egress is busy for at the old rate.  (A polling thread still
     * on the old shaper may charge once more at the old rate.) */
    atomic_read_relaxed(&sh->tat, &tat);
    do {
        int64_t busy = MAX((int64_t) (tat - now), 0);
        int64_t level = MIN(old->depth - busy * (int64_t) old->rate,
                            new->depth);

        new_tat = now + DIV_ROUND_UP((uint64_t) (new->depth - level),
                                     new->rate);
    } while (!atomic_compare_exchange_weak(&sh->tat, &tat, new_tat));
    ovsrcu_postpone(free, old);
    memset(sh->requested, 0, sizeof sh->requested);
}

/* Checks whether daqring 'ring', bound to egress port 'egress', may join
 * the share of that egress with parameters 'p', as a member of share 'old'
 * (or NULL) in slot 'slot'.  Returns the share of 'egress' it would join
 * if it exists (NULL if a new one would be created), otherwise sets
 * '*errp'.
 *
 * A member of the share of 'egress' may ask for other parameters than
 * those in force: its request is recorded, and granted if all the other
 * members ask for the same (daqring_share_join() then switches to them);
 * otherwise, it fails until they do. */
static struct daqring_share *
daqring_share_check__(const char *egress, const char *ring,
                      const struct daqring_share_params *p,
                      struct daqring_share *old, unsigned int slot,
                      char **errp)
    OVS_REQUIRES(daqring_share_mutex)
{
    struct daqring_share *sh = daqring_share_find(egress);

    if (old) {
        ovs_assert(slot < DAQRING_SHARE_MAX_RINGS && old->names[slot]);
        if (old == sh && !daqring_share_params_equal(&sh->params, p)) {
            old->requested[slot] = true;
            old->requests[slot] = *p;
        } else {
            old->requested[slot] = false;
        }
    }
    if (sh && !daqring_share_params_equal(&sh->params, p)
        && !(sh == old && daqring_share_agree(sh, slot, p))) {
        const struct daqring_share_params *q = &sh->params;

        *errp = xasprintf("%s: egress-max-rate %"PRIu64", egress-max-burst-"
                          "bytes %"PRIu32" and frame-overhead %"PRIu32" "
                          "differ from those of daqring %s bound to the same "
                          "egress %s (%"PRIu64", %"PRIu32" and %"PRIu32"): "
                          "all the daqrings of an egress must give the same",
                          ring, p->max_rate, p->max_burst_bytes,
                          p->frame_overhead,
                          daqring_share_other(sh, sh == old ? slot : UINT_MAX,
                                              p),
                          egress, q->max_rate, q->max_burst_bytes,
                          q->frame_overhead);
        return NULL;
    }
    if (sh && sh != old && sh->n_rings >= DAQRING_SHARE_MAX_RINGS) {
        *errp = xasprintf("%s: egress %s is already shared by %d daqrings, "
                          "the most that may share one", ring, egress,
                          DAQRING_SHARE_MAX_RINGS);
        return NULL;
    }
    return sh;
}

/* Returns true if daqring_share_join() with the same arguments would
 * succeed, otherwise false with an error message in '*errp'. */
bool
daqring_share_check(const char *egress, const char *ring,
                    const struct daqring_share_params *p,
                    struct daqring_share *old, unsigned int slot,
                    char **errp)
{
    ovs_mutex_lock(&daqring_share_mutex);
    daqring_share_check__(egress, ring, p, old, slot, errp);
    ovs_mutex_unlock(&daqring_share_mutex);
    return !*errp;
}

/* Makes daqring 'ring', bound to egress port 'egress', a member of the
 * share of that egress with parameters 'p', creating it with a full bucket
 * at TSC 'now' (in a TSC of 'tsc_hz' Hz) if it has no members, and returns
 * a new reference to it, with the ring's slot in '*slot'.  If 'old' is not
 * NULL, the ring is a member of 'old' in slot '*slot' and remains one if
 * 'old' is the result (its virtual time is kept), otherwise leaves it.  If
 * the ring remains a member and 'p' differs from the share's parameters,
 * which all the other members then ask for (see daqring_share_check__()),
 * the share switches to 'p', keeping its bucket's level.
 *
 * Fails, returning NULL with an error message in '*errp' and leaving the
 * ring's membership of 'old' alone, if the other rings bound to 'egress'
 * gave other parameters, or if it already has DAQRING_SHARE_MAX_RINGS (see
 * daqring_share_check()).  '*errp' must be NULL on entry, as for
 * daqring_share_check(). */
struct daqring_share *
daqring_share_join(const char *egress, const char *ring,
                   const struct daqring_share_params *p, uint64_t tsc_hz,
                   uint64_t now, struct daqring_share *old,
                   unsigned int *slot, char **errp)
{
    struct daqring_share *sh;

    ovs_mutex_lock(&daqring_share_mutex);
    sh = daqring_share_check__(egress, ring, p, old, *slot, errp);
    if (*errp) {
        goto out;
    }
    if (sh && sh == old) {
        /* Still a member: the others agree on 'p', if it is new. */
        if (!daqring_share_params_equal(&sh->params, p)) {
            daqring_share_set_params(sh, p, tsc_hz, now);
        }
        sh = daqring_share_ref(sh);
        goto out;
    }

    if (old) {
        daqring_share_leave__(old, *slot);
    }
    if (!sh) {
        struct daqring_shaper *s = daqring_share_shaper_create(p, tsc_hz);

        sh = xzalloc_cacheline(sizeof *sh);
        sh->egress = xstrdup(egress);
        sh->params = *p;
        ovs_refcount_init(&sh->ref_cnt);
        ovsrcu_init(&sh->shaper, s);
        atomic_init(&sh->tat, now);     /* A full bucket. */
        atomic_init(&sh->n_busy, 0);
        for (int i = 0; i < DAQRING_SHARE_MAX_RINGS; i++) {
            struct daqring_share_member *m = &sh->members[i];

            atomic_init(&m->state, DAQRING_SHARE_NONE);
            atomic_init(&m->vt, 0);
            atomic_init(&m->last, 0);
            atomic_init(&m->rem, 0);
        }
        hmap_insert(&daqring_shares, &sh->node, hash_string(egress, 0));
    }
    for (unsigned int i = 0; i < DAQRING_SHARE_MAX_RINGS; i++) {
        if (!sh->names[i]) {
            sh->names[i] = xstrdup(ring);
            sh->n_rings++;
            daqring_share_set_member(sh, i, now);
            *slot = i;
            break;
        }
    }
    sh = daqring_share_ref(sh);

out:
    ovs_mutex_unlock(&daqring_share_mutex);
    return sh;
}

/* Ends the membership of the ring in 'slot' of 'sh'.  The shaper that
 * refers to 'sh' keeps its reference. */
void
daqring_share_leave(struct daqring_share *sh, unsigned int slot)
{
    if (sh) {
        ovs_mutex_lock(&daqring_share_mutex);
        daqring_share_leave__(sh, slot);
        ovs_mutex_unlock(&daqring_share_mutex);
    }
}

struct daqring_share *
daqring_share_ref(struct daqring_share *sh)
{
    if (sh) {
        ovs_refcount_ref(&sh->ref_cnt);
    }
    return sh;
}

void
daqring_share_unref(struct daqring_share *sh)
{
    if (sh && ovs_refcount_unref(&sh->ref_cnt) == 1) {
        /* No polling thread refers to 'sh' any more. */
        free(ovsrcu_get_protected(struct daqring_shaper *, &sh->shaper));
        free(sh->egress);
        free_cacheline(sh);
    }
}

/* Returns the byte shaper of 'sh': its rate, depth and frame costs.  It
 * remains valid until the calling thread quiesces (see ovs-rcu.h). */
const struct daqring_shaper *
daqring_share_shaper(const struct daqring_share *sh)
{
    return ovsrcu_get(struct daqring_shaper *, &sh->shaper);
}

/* Stores the parameters of 'sh' in '*p' and its number of member rings in
 * '*n_rings'. */
void
daqring_share_get(struct daqring_share *sh, struct daqring_share_params *p,
                  unsigned int *n_rings)
{
    ovs_mutex_lock(&daqring_share_mutex);
    *p = sh->params;
    *n_rings = sh->n_rings;
    ovs_mutex_unlock(&daqring_share_mutex);
}

/* Returns the number of busy members of 'sh' to share among: at least 1 (a
 * ring that leaves while another thread marks it busy can make the count
 * lag for a moment). */
static int
daqring_share_n_busy(struct daqring_share *sh)
{
    int n;

    atomic_read_relaxed(&sh->n_busy, &n);
    return MAX(n, 1);
}

/* Called by the polling thread of the ring in 'slot' of 'sh', which has
 * packets to send, at TSC 'now'.  Returns DAQRING_SHARE_GRANTED if the
 * ring may send, with the bit-ticks it may spend in 'g->budget' (positive):
 * daqring_shaper_take() then takes the cost of each packet that leaves from
 * it, and daqring_share_charge() must follow with what was spent.
 * Otherwise returns why the ring must wait (see daqring_share_deadline()
 * for how long).  Writes nothing shared, except when the ring starts to
 * wait for the share (once per backlog, not per poll).
 *
 * The egress, in 'tat' (see daqring-shaper.h): the bucket holds 'depth'
 * less the time the egress is busy for beyond now ('tat' - 'now'), at the
 * rate, and frames leave while it is positive.
 *
 * The ring, in its virtual time 'vt': with 'n' busy members, each is due
 * 1/n of the egress, so the time of what a ring sends counts n times in
 * its virtual time, which then keeps pace with the TSC while the ring gets
 * exactly its share.  The ring starts at 'start', its virtual time or, if
 * that is further back than the catch-up, 'n' times the bucket's depth,
 * 'now' less that: a ring whose thread polls it late (or that had nothing
 * to send for a while) may catch up on at most one bucket's depth.  It may
 * spend its fair part, what brings its virtual time to 'now' plus a
 * quantum (one full-size frame at its share of the rate): a ring that is
 * ahead leaves the tokens to the busy rings behind it, whose threads may
 * come later (they accumulate in the bucket, up to its depth).  Beyond its
 * fair part, a ring may spend the tokens that would otherwise overflow the
 * bucket before it polls again (assuming it does so after as long as since
 * its last claim, at most half the depth: the lower half is always kept
 * for the rings behind): the egress never idles for a ring that does not
 * come, and what a ring takes that way does not count against it. */
enum daqring_share_claim
daqring_share_claim(struct daqring_share *sh, unsigned int slot,
                    uint64_t now, struct daqring_share_grant *g)
{
    const struct daqring_shaper *s = daqring_share_shaper(sh);
    struct daqring_share_member *m = &sh->members[slot];
    int64_t tau = s->depth_cycles;
    int64_t level, budget;
    unsigned int state;
    uint64_t tat;

    atomic_read_relaxed(&m->state, &state);
    if (OVS_UNLIKELY(state == DAQRING_SHARE_IDLE)) {
        /* Starts to wait for the share.  The swap fails if the ring left
         * meanwhile (or another thread on its old shaper did this). */
        if (atomic_compare_exchange_strong(&m->state, &state,
                                           DAQRING_SHARE_BUSY)) {
            int orig;

            atomic_add_relaxed(&sh->n_busy, 1, &orig);
            state = DAQRING_SHARE_BUSY;
        }
    }

    atomic_read_relaxed(&sh->tat, &tat);
    level = tau - MAX((int64_t) (tat - now), 0);
    g->now = now;
    g->tat = tat;
    g->n = 0;
    if (state != DAQRING_SHARE_BUSY) {
        /* Not a member any more: a thread still on the old shaper of a
         * ring that left, which may send what the bucket holds. */
        budget = level;
    } else {
        int n = daqring_share_n_busy(sh);
        int64_t quantum = n * (int64_t) s->turn_cycles;
        int64_t catchup = n * tau;
        int64_t fair, excess, gap;
        uint64_t vt, last;

        atomic_read_relaxed(&m->vt, &vt);
        atomic_read_relaxed(&m->last, &last);
        atomic_store_relaxed(&m->last, now);
        if ((int64_t) (vt - now) > catchup + quantum) {
            /* Further ahead than a grant leaves a ring: a TSC behind the
             * one that charged it (another core's). */
            vt = now;
        }
        if ((int64_t) (vt - (now - catchup)) < 0) {
            vt = now - catchup;
        }
        fair = ((int64_t) (now - vt) + quantum) / n;
        gap = MIN(MAX((int64_t) (now - last), 0), tau / 2);
        excess = level + gap - tau;
        budget = MIN(level, MAX(fair, excess));

        g->n = n;
        g->start = vt;
        g->fair = excess > fair ? MAX(fair, 0) : INT64_MAX;
        if (level > 0 && budget <= 0) {
            return DAQRING_SHARE_TURN;
        }
    }
    if (level <= 0) {
        return DAQRING_SHARE_EMPTY;
    }
    g->budget = budget * (int64_t) s->rate;
    return DAQRING_SHARE_GRANTED;
}

/* Charges 'sh' for what the ring in 'slot' sent after daqring_share_claim()
 * granted it 'g': 'spent' bit-ticks (0 if nothing left, otherwise at most
 * the grant plus the packet that took it below 0).  One compare-and-swap
 * on the egress's virtual time, which advances by the exact cost (the
 * bit-ticks of less than a cycle carry over to the ring's next charge);
 * the ring's virtual time advances by 'n' times its fair part. */
void
daqring_share_charge(struct daqring_share *sh, unsigned int slot,
                     const struct daqring_share_grant *g, int64_t spent)
{
    const struct daqring_shaper *s;
    struct daqring_share_member *m;
    uint64_t tat, new_tat, cost;

    if (spent <= 0) {
        return;
    }
    s = daqring_share_shaper(sh);
    m = &sh->members[slot];
    if (g->n) {
        uint64_t rem, bits;

        atomic_read_relaxed(&m->rem, &rem);
        bits = spent + rem;
        cost = bits / s->rate;
        atomic_store_relaxed(&m->rem, bits % s->rate);
        atomic_store_relaxed(&m->vt, g->start
                             + g->n * MIN((int64_t) cost, g->fair));
    } else {
        cost = DIV_ROUND_UP((uint64_t) spent, s->rate);
    }

    tat = g->tat;
    do {
        new_tat = ((int64_t) (tat - g->now) > 0 ? tat : g->now) + cost;
    } while (!atomic_compare_exchange_weak(&sh->tat, &tat, new_tat));
}

/* Called by the polling thread of the ring in 'slot' of 'sh' when the ring
 * does not wait for the share: it has nothing to send, it is down, or its
 * own shaper holds it.  It stops counting as busy, so that the others
 * share the egress without it. */
void
daqring_share_idle(struct daqring_share *sh, unsigned int slot)
{
    struct daqring_share_member *m = &sh->members[slot];
    unsigned int state;

    atomic_read_relaxed(&m->state, &state);
    if (state == DAQRING_SHARE_BUSY
        && atomic_compare_exchange_strong(&m->state, &state,
                                          DAQRING_SHARE_IDLE)) {
        int orig;

        atomic_sub_relaxed(&sh->n_busy, 1, &orig);
    }
}

/* Returns the TSC at which a ring that daqring_share_claim() at TSC 'now'
 * made wait, for reason 'why', should try again: when the bucket holds
 * tokens again or, ahead of its share, after the time of one full-size
 * frame or of half the bucket's depth, whichever is shorter (by which a
 * ring behind it has usually had its part, or the bucket fills). */
uint64_t
daqring_share_deadline(struct daqring_share *sh,
                       enum daqring_share_claim why, uint64_t now)
{
    const struct daqring_shaper *s = daqring_share_shaper(sh);
    uint64_t tat;

    if (why == DAQRING_SHARE_TURN) {
        /* Soon enough to take what would overflow the bucket (see
         * daqring_share_claim()), at low rates with a shallow bucket. */
        return now + MAX(MIN(s->turn_cycles, s->depth_cycles / 2), 1);
    }
    atomic_read_relaxed(&sh->tat, &tat);
    tat -= s->depth_cycles;
    return ((int64_t) (tat - now) > 0 ? tat : now) + 1;
}
