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

#include "openvswitch/vlog.h"
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
 * (tens of nanoseconds) over the interval: below 1 ppm. */
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

/* Returns the calibrated TSC frequency in Hz, measuring it the first time
 * (which takes DAQRING_TSC_CALIBRATION_NS, once per process). */
uint64_t
daqring_tsc_hz(void)
{
    static struct ovsthread_once once = OVSTHREAD_ONCE_INITIALIZER;
    static uint64_t tsc_hz;

    if (ovsthread_once_start(&once)) {
        uint64_t t0, n0, t1, n1;
        uint64_t dpdk_hz = rte_get_tsc_hz();

        daqring_tsc_sample(&t0, &n0);
        xnanosleep(DAQRING_TSC_CALIBRATION_NS);
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
                      "(DPDK reports %"PRIu64" Hz, %+.3f%%): shaping counts "
                      "in the former", tsc_hz, dpdk_hz,
                      100.0 * ((double) dpdk_hz - tsc_hz) / tsc_hz);
        }
        ovsthread_once_done(&once);
    }
    return tsc_hz;
}

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

        if (p->max_burst_bytes > full) {
            depth_bytes = MIN(depth_bytes, p->max_burst_bytes - full);
        }
        s->rate = p->max_rate;
        s->byte_ticks = 8 * tsc_hz;
        s->overhead_ticks = p->frame_overhead * s->byte_ticks;
        s->depth = depth_bytes * s->byte_ticks;
        deficit = UINT16_MAX * s->byte_ticks + s->overhead_ticks;
        s->fill_cycles = (s->depth + deficit) / s->rate + 1;
    }
    return s;
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
    st->tokens = s->depth;
    st->last_tsc = now;
}

/* Adds the tokens that accrued since the last update to the bucket of 'st'
 * under byte shaper 's', at TSC 'now'.  Returns true if a frame may leave
 * now. */
static bool
daqring_shaper_fill(struct daqring_shaper_state *st,
                    const struct daqring_shaper *s, uint64_t now)
{
    uint64_t elapsed = now - st->last_tsc;

    st->last_tsc = now;
    if (elapsed >= s->fill_cycles) {
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
 * one interval per interval used, so late polls do not lower the rate),
 * except that a daqring that had nothing to send re-anchors the grid to
 * now: idle time earns no credit, and the first burst after idle is at most
 * 'max_burst'.  What a poll did not use of the burst may leave at later
 * polls within the same interval. */
bool
daqring_shaper_admit(struct daqring_shaper_state *st,
                     const struct daqring_shaper *s, uint64_t now,
                     uint32_t *burst, int64_t *budget)
{
    bool ok;

    *burst = s->max_burst;
    if (s->interval) {
        /* A new interval, or what is left of the current one's burst. */
        if (now < st->next_tsc) {
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
        if (now >= st->next_tsc) {
            st->next_tsc += s->interval;
            if (st->next_tsc <= now) {
                st->next_tsc = now + s->interval;
            }
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
