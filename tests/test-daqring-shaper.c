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

/* Unit tests of the daqring shaper (lib/daqring-shaper.c).  Time is
 * simulated: a TSC of TEST_HZ Hz, advanced by the tests, so every result is
 * exact and independent of the machine and its load. */

#include <config.h>
#undef NDEBUG

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "command-line.h"
#include "daqring-shaper.h"
#include "dp-packet.h"
#include "openvswitch/vlog.h"
#include "ovstest.h"
#include "packets.h"
#include "util.h"

/* 1 GHz: one TSC cycle per nanosecond. */
#define TEST_HZ UINT64_C(1000000000)
#define US (TEST_HZ / 1000000)

#define CHECK(COND, ...)                                        \
    do {                                                        \
        if (!(COND)) {                                          \
            fprintf(stderr, "%s:%d: check failed: %s: ",        \
                    __FILE__, __LINE__, #COND);                 \
            fprintf(stderr, __VA_ARGS__);                       \
            fputc('\n', stderr);                                \
            exit(EXIT_FAILURE);                                 \
        }                                                       \
    } while (0)

/* A backlog of 'n' packets of one size waiting in a daqring, as the
 * shaper sees it.  The shaper only reads their sizes, so BACKLOG_POOL
 * packets stand for all of them: packet i is pool[i % BACKLOG_POOL], and
 * 'pool' holds them twice over so that any 2 x NETDEV_MAX_BURST
 * consecutive packets are consecutive in it. */
#define BACKLOG_POOL (2 * NETDEV_MAX_BURST)
struct backlog {
    struct dp_packet *pool[2 * BACKLOG_POOL];
    size_t n;                   /* Number of packets. */
    size_t next;                /* Index of the first one still queued. */
};

static void
backlog_init(struct backlog *b, size_t n, size_t len)
{
    for (size_t i = 0; i < BACKLOG_POOL; i++) {
        b->pool[i] = b->pool[i + BACKLOG_POOL] = dp_packet_new(len);
        dp_packet_put_zeros(b->pool[i], len);
    }
    b->n = n;
    b->next = 0;
}

/* Returns the packets of 'b' from the first one still queued on. */
static struct dp_packet **
backlog_head(struct backlog *b)
{
    return &b->pool[b->next % BACKLOG_POOL];
}

static void
backlog_destroy(struct backlog *b)
{
    for (size_t i = 0; i < BACKLOG_POOL; i++) {
        dp_packet_delete(b->pool[i]);
    }
}

/* Like backlog_init(), with frames of 60 to 1514 bytes, from a
 * deterministic sequence. */
static void
backlog_init_mixed(struct backlog *b, size_t n)
{
    uint32_t x = 12345;

    for (size_t i = 0; i < BACKLOG_POOL; i++) {
        size_t len;

        x = x * 1103515245 + 12345;
        len = 60 + (x >> 8) % (1514 - 60 + 1);
        b->pool[i] = b->pool[i + BACKLOG_POOL] = dp_packet_new(len);
        dp_packet_put_zeros(b->pool[i], len);
    }
    b->n = n;
    b->next = 0;
}

static struct daqring_shaper *
make_shaper_bytes(uint32_t max_burst, uint32_t poll_interval,
                  uint64_t max_rate, uint32_t frame_overhead,
                  uint32_t max_burst_bytes)
{
    struct daqring_shaper_params p = {
        .max_burst = max_burst,
        .poll_interval = poll_interval,
        .max_rate = max_rate,
        .frame_overhead = frame_overhead,
        .max_burst_bytes = max_burst_bytes,
    };

    return daqring_shaper_create(&p, TEST_HZ, 1);
}

static struct daqring_shaper *
make_shaper(uint32_t max_burst, uint32_t poll_interval, uint64_t max_rate,
            uint32_t frame_overhead)
{
    return make_shaper_bytes(max_burst, poll_interval, max_rate,
                             frame_overhead, 0);
}

/* What the daqring's receive path does at one poll at TSC 'now' (see
 * netdev_daqring_rxq_recv()): asks the shaper, takes what it allows from
 * 'b', keeps only the first 'keep' packets taken (the others go back, as
 * netdev_daqring_split_batch() puts back the packets of another buffer
 * source; SIZE_MAX keeps all), and charges the shaper for them.  Returns
 * the number of packets that left, and stores in '*new_interval' whether
 * they started an interval and in '*bytes' their wire bytes. */
static size_t
poll_once(struct daqring_shaper_state *st, const struct daqring_shaper *s,
          struct backlog *b, uint64_t now, size_t keep, bool *new_interval,
          uint64_t *bytes)
{
    size_t avail = b->n - b->next;
    int64_t budget = 0;
    uint32_t burst;
    size_t n;

    *new_interval = false;
    *bytes = 0;
    if (!avail) {
        /* The receive path finds the ring empty. */
        daqring_shaper_idle(st);
        return 0;
    }
    if (!daqring_shaper_admit(st, s, now, &burst, &budget)) {
        return 0;
    }
    n = MIN(avail, burst);
    CHECK(n <= BACKLOG_POOL, "burst %"PRIuSIZE" too large", n);
    if (s->rate) {
        n = daqring_shaper_take(s, &budget, backlog_head(b), n);
    }
    CHECK(n > 0, "admitted but nothing taken");
    if (keep < n) {
        for (size_t i = keep; i < n; i++) {
            if (s->rate) {
                budget += daqring_shaper_frame_cost(s, backlog_head(b)[i]);
            }
        }
        n = keep;
    }
    *new_interval = daqring_shaper_charge(st, s, now, n, budget);
    for (size_t i = 0; i < n; i++) {
        *bytes += MAX(dp_packet_size(backlog_head(b)[i]),
                      DAQRING_MIN_FRAME_LEN);
    }
    b->next += n;
    return n;
}

/* Packet shaping: at most max-burst packets per interval, and exactly
 * max-burst per interval from a backlog, however often the ring is
 * polled. */
static void
test_packet_interval(void)
{
    struct daqring_shaper *s = make_shaper(4, 1000, 0, 0);
    struct daqring_shaper_state st;
    uint64_t interval = 1000 * US;
    struct backlog b;
    int per_interval[64] = { 0 };
    int intervals = 0;

    backlog_init(&b, 200, 1000);
    daqring_shaper_state_init(&st, s, 0);
    CHECK(s->interval == interval, "interval %"PRIu64, s->interval);

    /* Polls every 7 us for 40 intervals. */
    for (uint64_t now = interval; now < 41 * interval; now += 7 * US) {
        bool new_interval;
        uint64_t bytes;
        size_t n = poll_once(&st, s, &b, now, SIZE_MAX, &new_interval,
                             &bytes);

        intervals += new_interval;
        per_interval[now / interval] += n;
    }
    for (int i = 1; i < 41; i++) {
        CHECK(per_interval[i] == 4, "interval %d released %d packets, "
              "expected 4", i, per_interval[i]);
    }
    CHECK(intervals == 40, "%d intervals counted, expected 40", intervals);
    CHECK(b.next == 160, "%"PRIuSIZE" packets left", b.next);

    backlog_destroy(&b);
    free(s);
}

/* Packet shaping after idle time: the grid re-anchors to the first poll,
 * and the first burst is at most max-burst (idle time earns no credit). */
static void
test_packet_idle(void)
{
    struct daqring_shaper *s = make_shaper(8, 100, 0, 0);
    struct daqring_shaper_state st;
    struct backlog b;
    bool new_interval;
    uint64_t bytes;
    size_t n;

    backlog_init(&b, 100, 64);
    daqring_shaper_state_init(&st, s, 0);
    n = poll_once(&st, s, &b, 10 * 1000 * US, SIZE_MAX, &new_interval,
                  &bytes);
    CHECK(n == 8 && new_interval, "first poll after 10 ms idle released "
          "%"PRIuSIZE" packets", n);
    n = poll_once(&st, s, &b, 10 * 1000 * US + 99 * US, SIZE_MAX,
                  &new_interval, &bytes);
    CHECK(n == 0, "released %"PRIuSIZE" packets within the interval", n);
    CHECK(daqring_shaper_deadline(&st, s, 10 * 1000 * US + 99 * US)
          == 10 * 1000 * US + 100 * US, "deadline is not the next interval");
    n = poll_once(&st, s, &b, 10 * 1000 * US + 100 * US, SIZE_MAX,
                  &new_interval, &bytes);
    CHECK(n == 8 && new_interval, "next interval released %"PRIuSIZE, n);

    backlog_destroy(&b);
    free(s);
}

/* Issue 25 item B5: a batch that the receive path trims after the shaper
 * let it go (packets of two buffer sources) is charged for what left, so
 * the rest of the burst leaves within the same interval.  16 packets whose
 * buffer sources alternate leave one per poll, max-burst 4 per 1 s
 * interval, polled every millisecond: 4 intervals.  (Charging a whole
 * interval per poll took 16.) */
static void
test_packet_mixed_sources(void)
{
    struct daqring_shaper *s = make_shaper(4, 1000000, 0, 0);
    struct daqring_shaper_state st;
    uint64_t now = 1000 * US;
    struct backlog b;
    int intervals = 0;

    backlog_init(&b, 16, 100);
    daqring_shaper_state_init(&st, s, 0);
    while (b.next < b.n && now < 100 * TEST_HZ) {
        bool new_interval;
        uint64_t bytes;

        poll_once(&st, s, &b, now, 1, &new_interval, &bytes);
        intervals += new_interval;
        now += 1000 * US;
    }
    CHECK(b.next == 16, "%"PRIuSIZE" of 16 packets left", b.next);
    CHECK(intervals == 4, "16 packets took %d intervals, expected 4",
          intervals);

    backlog_destroy(&b);
    free(s);
}

/* Issue 25 item B5, byte shaping: the packets put back get their cost
 * back, so the bucket is charged exactly for what left. */
static void
test_byte_mixed_sources(void)
{
    struct daqring_shaper *s = make_shaper(32, 0, 100000000, 24);
    struct daqring_shaper_state st;
    struct backlog b;
    bool new_interval;
    uint64_t bytes;
    int64_t before;
    size_t n;

    backlog_init(&b, 64, 1000);
    daqring_shaper_state_init(&st, s, 0);
    before = st.tokens;
    n = poll_once(&st, s, &b, 1, 1, &new_interval, &bytes);
    CHECK(n == 1, "%"PRIuSIZE" packets left, expected 1", n);
    /* One cycle at 100 Mbit/s adds 100000000 bit-ticks; the bucket was
     * full, so it stays at 'depth' before the frame's cost. */
    CHECK(st.tokens == before - daqring_shaper_frame_cost(s, b.pool[0]),
          "bucket at %"PRId64", expected %"PRId64, st.tokens,
          before - daqring_shaper_frame_cost(s, b.pool[0]));

    backlog_destroy(&b);
    free(s);
}

/* Byte shaping is exact: from a backlog, polled often, the wire bits that
 * leave in T seconds are the bucket's depth plus rate x T, to within one
 * frame, for frames of any size. */
static void
test_byte_rate(void)
{
    static const uint64_t rates[] = { 1000, 8000000, 199999999,
                                      10000000000ULL };
    static const size_t lens[] = { 60, 1000, 1514, 9000 };

    for (size_t r = 0; r < ARRAY_SIZE(rates); r++) {
        for (size_t l = 0; l < ARRAY_SIZE(lens); l++) {
            struct daqring_shaper *s = make_shaper(32, 0, rates[r], 24);
            uint64_t frame_bits = (MAX(lens[l], DAQRING_MIN_FRAME_LEN)
                                   + 24) * 8;
            uint64_t duration = TEST_HZ / 10;
            uint64_t step = MIN(MAX(frame_bits * TEST_HZ / rates[r] / 3,
                                    1000),
                                duration / 1024);
            uint64_t want, bits = 0;
            struct daqring_shaper_state st;
            size_t n_pkts;
            struct backlog b;
            uint64_t last = 0;

            /* Enough packets for the whole run plus the initial depth. */
            n_pkts = (rates[r] / 10 + s->depth / TEST_HZ) / frame_bits + 64;
            backlog_init(&b, n_pkts, lens[l]);
            /* The bucket is full from the first poll on. */
            daqring_shaper_state_init(&st, s, step);
            for (uint64_t now = step; now <= duration; now += step) {
                bool new_interval;
                uint64_t bytes;

                poll_once(&st, s, &b, now, SIZE_MAX, &new_interval, &bytes);
                bits += bytes * 8;
                last = now;
            }
            /* 'bytes' counts frames without the overhead: add it. */
            bits += (uint64_t) b.next * 24 * 8;
            want = ((unsigned __int128) rates[r] * (last - step) / TEST_HZ
                    + s->depth / TEST_HZ);
            CHECK(b.next < b.n, "backlog ran dry");
            CHECK(bits + frame_bits >= want && bits <= want + frame_bits,
                  "rate %"PRIu64" frame %"PRIuSIZE": %"PRIu64" bits left "
                  "in 0.1 s, expected %"PRIu64" +- %"PRIu64,
                  rates[r], lens[l], bits, want, frame_bits);
            backlog_destroy(&b);
            free(s);
        }
    }
}

/* Byte shaping: a ring that must wait gets the deadline at which it may
 * send, not earlier and not later. */
static void
test_byte_deadline(void)
{
    struct daqring_shaper *s = make_shaper(2, 0, 1000000, 24);
    struct daqring_shaper_state st;
    uint64_t now = 1, deadline;
    int64_t budget;
    struct backlog b;
    bool new_interval;
    uint32_t burst;
    uint64_t bytes;

    backlog_init(&b, 16, 1514);
    daqring_shaper_state_init(&st, s, 0);
    /* Empty the bucket. */
    while (poll_once(&st, s, &b, now, SIZE_MAX, &new_interval, &bytes)) {
        continue;
    }
    deadline = daqring_shaper_deadline(&st, s, now);
    CHECK(deadline > now, "no wait after the bucket ran dry");
    CHECK(!daqring_shaper_admit(&st, s, deadline - 1, &burst, &budget),
          "admitted one cycle before the deadline");
    CHECK(daqring_shaper_admit(&st, s, deadline, &burst, &budget),
          "not admitted at the deadline");

    backlog_destroy(&b);
    free(s);
}

/* Issue 25 item A: "max-burst-bytes" bounds what a byte-shaped ring
 * releases beyond its rate after an idle or preempted polling thread.  A
 * ring with a full bucket (it was idle) and a backlog of frames of 60 to
 * 1514 bytes is polled every microsecond for 20 ms; in every window of
 * polls, the wire bytes that left are at most the bound plus the rate
 * times the window, and the shaper's own account of its largest burst
 * (daqring_shaper_excess_bytes()) is within the bound too.  Without the
 * option, the burst is max-burst full-size frames, above these bounds. */
static uint64_t
largest_burst(struct daqring_shaper *s, uint64_t *excess_max)
{
    const uint64_t step = US, end = 20 * 1000 * US;
    struct daqring_shaper_state st;
    int64_t best_start = INT64_MIN; /* max over i of rate t_i - S_(i-1). */
    int64_t worst = 0;              /* max over windows, bit-ticks. */
    int64_t sent = 0;               /* S, wire bits x TEST_HZ. */
    struct backlog b;

    backlog_init_mixed(&b, SIZE_MAX);
    daqring_shaper_state_init(&st, s, step);
    *excess_max = 0;
    for (uint64_t now = step; now <= end; now += step) {
        bool new_interval;
        uint64_t bytes;
        size_t n;

        best_start = MAX(best_start, (int64_t) (s->rate * now) - sent);
        n = poll_once(&st, s, &b, now, SIZE_MAX, &new_interval, &bytes);
        sent += (int64_t) (bytes + n * 24) * 8 * TEST_HZ;
        worst = MAX(worst, sent - (int64_t) (s->rate * now) + best_start);
        *excess_max = MAX(*excess_max, daqring_shaper_excess_bytes(&st, s));
    }
    CHECK(b.next > 20 * 1000 * 100 / 8 / 1542, "too few packets left");
    backlog_destroy(&b);
    /* In wire bytes, rounded up. */
    return (worst + 8 * TEST_HZ - 1) / (8 * TEST_HZ);
}

static void
test_byte_burst_bound(void)
{
    /* Below and above the default bound (33 frames of 1542 bytes). */
    static const uint32_t bounds[] = { 3084, 4000, 10000, 30000, 100000,
                                       1000000 };
    struct daqring_shaper *s;
    uint64_t burst, excess;

    for (size_t i = 0; i < ARRAY_SIZE(bounds); i++) {
        s = make_shaper_bytes(32, 0, 100000000, 24, bounds[i]);
        CHECK(daqring_shaper_burst_bytes(s) == bounds[i],
              "bound %"PRIu64" in force, %"PRIu32" configured",
              daqring_shaper_burst_bytes(s), bounds[i]);
        burst = largest_burst(s, &excess);
        CHECK(burst <= bounds[i] && excess <= bounds[i],
              "max-burst-bytes %"PRIu32": a burst of %"PRIu64" bytes "
              "(shaper's account %"PRIu64")", bounds[i], burst, excess);
        /* The bound is what limits: the burst comes within a frame. */
        CHECK(burst + 1542 > bounds[i], "max-burst-bytes %"PRIu32": "
              "largest burst %"PRIu64" bytes", bounds[i], burst);
        free(s);
    }

    /* Without it, max-burst (32) full-size frames and one more frame. */
    s = make_shaper(32, 0, 100000000, 24);
    CHECK(daqring_shaper_burst_bytes(s) == 33 * 1542,
          "default bound %"PRIu64, daqring_shaper_burst_bytes(s));
    burst = largest_burst(s, &excess);
    CHECK(burst > 30000 && burst <= 33 * 1542 && excess <= 33 * 1542,
          "default: a burst of %"PRIu64" bytes (shaper's account "
          "%"PRIu64")", burst, excess);
    free(s);
}

/* A shaper's first state starts from a full bucket and a new interval
 * (a configuration change carries the state over: see test_state_carry()).
 */
static void
test_state_init(void)
{
    struct daqring_shaper *s = make_shaper(32, 0, 5000000, 24);
    struct daqring_shaper_state st;

    daqring_shaper_state_init(&st, s, 12345);
    CHECK(st.seq == s->seq && st.tokens == s->depth && st.last_tsc == 12345,
          "state not initialized from the shaper");
    CHECK(s->depth == (int64_t) 32 * (1518 + 24) * 8 * TEST_HZ,
          "depth %"PRId64, s->depth);
    free(s);
}

/* Polls 'b' at TSC 'now' as a PMD thread does while the ring's deadline
 * is due: again and again, until a poll releases nothing.  Returns the
 * number of packets released. */
static size_t
poll_due(struct daqring_shaper_state *st, const struct daqring_shaper *s,
         struct backlog *b, uint64_t now)
{
    size_t total = 0;

    for (int i = 0; i < 100; i++) {
        bool new_interval;
        uint64_t bytes;
        size_t n = poll_once(st, s, b, now, SIZE_MAX, &new_interval, &bytes);

        if (!n) {
            return total;
        }
        total += n;
    }
    CHECK(false, "still releasing after 100 polls at %"PRIu64, now);
}

/* Issue 49 item 7: a backlogged ring whose poll comes late (its thread
 * woke up late) catches up on the intervals it missed, up to
 * DAQRING_SHAPER_CATCHUP_INTERVALS, instead of re-anchoring the grid and
 * losing them; later than that, it releases at most (1 +
 * DAQRING_SHAPER_CATCHUP_INTERVALS) x max-burst at once; after idle time,
 * max-burst. */
static void
test_packet_catch_up(void)
{
    struct daqring_shaper *s = make_shaper(4, 100, 0, 0);
    uint64_t interval = 100 * US;
    struct daqring_shaper_state st;
    size_t total = 0, n;
    struct backlog b;

    backlog_init(&b, 1000, 64);
    daqring_shaper_state_init(&st, s, 0);

    /* On time for intervals 1 to 10, then a poll 2.5 intervals late, then
     * every 10 us up to interval 30: every interval of the grid from 1 to
     * 29 released its 4 packets. */
    for (uint64_t i = 1; i <= 10; i++) {
        total += poll_due(&st, s, &b, i * interval);
    }
    n = poll_due(&st, s, &b, 12 * interval + interval / 2);
    CHECK(n == 8, "a poll 1.5 intervals after its deadline released "
          "%"PRIuSIZE" packets, expected 2 intervals' 8", n);
    total += n;
    for (uint64_t now = 12 * interval + interval / 2 + 10 * US;
         now < 30 * interval; now += 10 * US) {
        total += poll_due(&st, s, &b, now);
    }
    CHECK(total == 29 * 4, "%"PRIuSIZE" packets in 29 intervals, expected "
          "%d", total, 29 * 4);

    /* 20 intervals late: the catch-up is bounded. */
    n = poll_due(&st, s, &b, 50 * interval + interval / 2);
    CHECK(n == (1 + DAQRING_SHAPER_CATCHUP_INTERVALS) * 4,
          "a poll 20 intervals late released %"PRIuSIZE" packets, expected "
          "%d", n, (1 + DAQRING_SHAPER_CATCHUP_INTERVALS) * 4);
    n = poll_due(&st, s, &b, 50 * interval + interval / 2 + 10 * US);
    CHECK(n == 0, "released %"PRIuSIZE" more within the interval", n);

    /* Drained, idle, then a backlog again: max-burst, then the grid. */
    b.next = b.n;
    CHECK(poll_due(&st, s, &b, 60 * interval) == 0, "an empty ring sent");
    b.n += 100;
    n = poll_due(&st, s, &b, 100 * interval);
    CHECK(n == 4, "first poll after idle released %"PRIuSIZE" packets", n);
    n = poll_due(&st, s, &b, 100 * interval + interval - 1);
    CHECK(n == 0, "released %"PRIuSIZE" within the interval", n);

    backlog_destroy(&b);
    free(s);
}

/* Issue 49 item 9: a TSC behind the one the shaper last saw (an rx queue
 * moved to a thread on a vCPU whose TSC has another offset) neither fills
 * the bucket (the unsigned difference wrapped past the fill time) nor
 * holds a packet-shaped ring until the old TSC's deadline. */
static void
test_backward_tsc(void)
{
    struct daqring_shaper *s = make_shaper(32, 0, 1000000000, 24);
    struct daqring_shaper *p = make_shaper(4, 100, 0, 0);
    uint64_t t = 1000 * 1000 * US, now;
    struct daqring_shaper_state st;
    int64_t budget, level;
    struct backlog b;
    uint32_t burst;

    /* Byte shaping: empty the bucket at 1 s, then look 1 us earlier. */
    backlog_init(&b, 1000, 1500);
    daqring_shaper_state_init(&st, s, t);
    CHECK(poll_due(&st, s, &b, t) > 0, "a full bucket released nothing");
    level = st.tokens;
    CHECK(level <= 0, "bucket left at %"PRId64, level);
    now = t - 1 * US;
    CHECK(!daqring_shaper_admit(&st, s, now, &burst, &budget),
          "a TSC 1 us behind admitted %"PRId64" bit-ticks (the bucket "
          "refilled)", budget);
    CHECK(st.tokens == level, "bucket went from %"PRId64" to %"PRId64,
          level, st.tokens);
    /* Time counts from the earlier TSC on. */
    now += (uint64_t) -level / s->rate + 1;
    CHECK(daqring_shaper_admit(&st, s, now, &burst, &budget)
          && budget <= (int64_t) s->rate,
          "bucket at %"PRId64" after the deficit's time", budget);
    backlog_destroy(&b);

    /* Packet shaping: an interval started at 1 s, then a TSC 1 ms behind:
     * the ring may send an interval from then, not 1.1 ms later. */
    backlog_init(&b, 1000, 64);
    daqring_shaper_state_init(&st, p, t);
    CHECK(poll_due(&st, p, &b, t) == 4, "first interval");
    now = t - 1000 * US;
    CHECK(poll_due(&st, p, &b, now) == 0, "sent within the interval");
    CHECK(daqring_shaper_deadline(&st, p, now) <= now + p->interval,
          "deadline %"PRIu64" cycles away, more than an interval",
          daqring_shaper_deadline(&st, p, now) - now);
    CHECK(poll_due(&st, p, &b, now + p->interval) == 4, "next interval");
    backlog_destroy(&b);

    free(s);
    free(p);
}

/* Issue 49 item 9: a new shaper (a configuration change) takes the state
 * over: the bucket keeps its level (at most the new depth) and a packet
 * shaper's interval goes on with what is left of its burst, so a change
 * releases no new burst.  A ring that starts to be shaped starts full. */
static void
test_state_carry(void)
{
    struct daqring_shaper_params bp = {
        .max_burst = 32, .max_rate = 1000000000, .frame_overhead = 24,
    };
    struct daqring_shaper_params pp = {
        .max_burst = 8, .poll_interval = 100,
    };
    struct daqring_shaper *s1 = daqring_shaper_create(&bp, TEST_HZ, 1);
    struct daqring_shaper *s2, *s3, *p1, *p2;
    uint64_t t = 1000 * US;
    struct daqring_shaper_state st;
    int64_t budget, level;
    struct backlog b;
    uint32_t burst;

    backlog_init(&b, 1000, 1500);
    daqring_shaper_state_init(&st, s1, t);
    CHECK(poll_due(&st, s1, &b, t) > 0, "a full bucket released nothing");
    level = st.tokens;

    /* Another rate, the same depth: the level stays. */
    bp.max_rate = 2000000000;
    s2 = daqring_shaper_create(&bp, TEST_HZ, 2);
    CHECK(!daqring_shaper_admit(&st, s2, t, &burst, &budget),
          "a new shaper admitted %"PRId64" bit-ticks: the bucket refilled",
          budget);
    CHECK(st.seq == s2->seq && st.tokens == level,
          "state of shaper %"PRIu64" at level %"PRId64", expected %"PRIu64
          " at %"PRId64, st.seq, st.tokens, s2->seq, level);

    /* A shallower bucket: at most its depth. */
    daqring_shaper_state_init(&st, s2, t);
    bp.max_burst = 4;
    s3 = daqring_shaper_create(&bp, TEST_HZ, 3);
    CHECK(daqring_shaper_admit(&st, s3, t, &burst, &budget)
          && budget == s3->depth, "level %"PRId64", depth %"PRId64,
          budget, s3->depth);

    /* Packet shaping: 8 left at t, then 16 per interval: nothing more
     * before the interval ends, then 16. */
    p1 = daqring_shaper_create(&pp, TEST_HZ, 4);
    pp.max_burst = 16;
    p2 = daqring_shaper_create(&pp, TEST_HZ, 5);
    daqring_shaper_state_init(&st, p1, t);
    CHECK(poll_due(&st, p1, &b, t) == 8, "first interval");
    CHECK(poll_due(&st, p2, &b, t + 10 * US) == 0,
          "a new shaper released a new burst within the interval");
    CHECK(st.seq == p2->seq, "state of shaper %"PRIu64, st.seq);
    CHECK(poll_due(&st, p2, &b, t + p2->interval) == 16, "next interval");

    /* From packet to byte shaping: the bucket starts full. */
    CHECK(daqring_shaper_admit(&st, s3, t + p2->interval, &burst, &budget)
          && budget == s3->depth, "level %"PRId64" from packet shaping",
          budget);

    backlog_destroy(&b);
    free(s1);
    free(s2);
    free(s3);
    free(p1);
    free(p2);
}

/* Returns a TCP packet of 'payload' bytes after Ethernet, IPv4 and TCP
 * headers (54 bytes), parsed as the datapath leaves it, asking for TSO
 * with segments of 'segsz' bytes (0: no TSO). */
static struct dp_packet *
make_tcp_packet(size_t payload, uint16_t segsz)
{
    struct dp_packet *p = dp_packet_new(54 + payload);
    struct tcp_header *tcp;

    dp_packet_put_zeros(p, 54 + payload);
    dp_packet_set_l2_pad_size(p, 0);
    p->l3_ofs = ETH_HEADER_LEN;
    p->l4_ofs = ETH_HEADER_LEN + IP_HEADER_LEN;
    tcp = dp_packet_l4(p);
    tcp->tcp_ctl = TCP_CTL(0, 5);
    if (segsz) {
        daqring_packet_set_tso(p, segsz);
        CHECK(daqring_packet_tso_segsz(p) == segsz, "TSO needs DPDK");
    }
    return p;
}

/* Issue 49 item 6: a TSO packet costs the frames it leaves as, each with
 * the packet's headers and the frame overhead, not one frame: 64000 bytes
 * of payload in segments of 1448 are 45 segments, 44 full (1502 bytes)
 * and one of 288 + 54 bytes.  (Charged as one frame of 64054 bytes plus
 * 24, it was 5% short of what the egress sends.)  A TSO packet that fits
 * one segment, and a packet without TSO, cost one frame, even with a
 * segment size left in its mbuf: on bases 3.1 and 3.5 only the mbuf's TSO
 * flag makes it one (base 4.0 has no flag: the segment size is the
 * request).  (Until issue 49 D the segment size alone did, which read the
 * mbuf's second cache line for every packet.) */
static void
test_byte_tso(void)
{
    struct daqring_shaper *s = make_shaper(32, 0, 1000000000, 24);
    struct dp_packet *tso = make_tcp_packet(64000, 1448);
    struct dp_packet *small = make_tcp_packet(1000, 1448);
    struct dp_packet *plain = make_tcp_packet(1448, 0);
    int64_t wire = 44 * (1502 + 24) + (288 + 54 + 24);
    int64_t cost = daqring_shaper_frame_cost(s, tso);

    CHECK(cost == wire * (int64_t) s->byte_ticks,
          "a 64054-byte TSO packet costs %"PRId64" bytes, expected "
          "%"PRId64, cost / (int64_t) s->byte_ticks, wire);
    cost = daqring_shaper_frame_cost(s, small);
    CHECK(cost == (1054 + 24) * (int64_t) s->byte_ticks,
          "a TSO packet of one segment costs %"PRId64" bytes",
          cost / (int64_t) s->byte_ticks);
    cost = daqring_shaper_frame_cost(s, plain);
    CHECK(cost == (1502 + 24) * (int64_t) s->byte_ticks,
          "a packet without TSO costs %"PRId64" bytes",
          cost / (int64_t) s->byte_ticks);
#if defined(DPDK_NETDEV) && defined(DEF_OL_FLAG)
    /* A segment size without the TSO flag: not a TSO packet. */
    plain->mbuf.tso_segsz = 100;
    cost = daqring_shaper_frame_cost(s, plain);
    CHECK(cost == (1502 + 24) * (int64_t) s->byte_ticks,
          "a packet with a segment size but no TSO flag costs %"PRId64
          " bytes", cost / (int64_t) s->byte_ticks);
#endif

    dp_packet_delete(tso);
    dp_packet_delete(small);
    dp_packet_delete(plain);
    free(s);
}

/* Egress sharing (issue 27 item 3, issue 28 item 2): daqrings bound to one
 * egress draw from one shared bucket, each through its own shaper (byte
 * shaping as its cap, or none). */
struct sharer {
    struct daqring_shaper *s;       /* The ring's own shaper. */
    struct daqring_shaper_state st;
    struct daqring_share *share;
    unsigned int slot;
    struct backlog b;
    uint64_t bits;                  /* Wire bits that left. */
    unsigned int waits;             /* Polls the share made wait. */
};

static void
sharer_init(struct sharer *r, const char *name, uint64_t own_rate,
            uint64_t egress_rate, size_t n, size_t len)
{
    struct daqring_share_params sp = {
        .max_rate = egress_rate,
        .frame_overhead = 24,
    };
    char *error = NULL;

    memset(r, 0, sizeof *r);
    r->s = make_shaper(32, 0, own_rate, 24);
    daqring_shaper_state_init(&r->st, r->s, 0);
    r->share = daqring_share_join("eth-test", name, &sp, TEST_HZ, 0, NULL,
                                  &r->slot, &error);
    CHECK(r->share && !error, "%s could not join: %s", name, error);
    backlog_init(&r->b, n, len);
}

static void
sharer_destroy(struct sharer *r)
{
    daqring_share_leave(r->share, r->slot);
    daqring_share_unref(r->share);
    backlog_destroy(&r->b);
    free(r->s);
}

/* What netdev_daqring_rxq_recv() does for a ring that shares its egress,
 * at one poll at TSC 'now'.  Returns the wire bits that left. */
static uint64_t
poll_shared(struct sharer *r, uint64_t now)
{
    const struct daqring_shaper *cs = daqring_share_shaper(r->share);
    size_t avail = r->b.n - r->b.next;
    struct daqring_share_grant grant;
    int64_t budget = 0, start;
    uint32_t burst = r->s->max_burst;
    uint64_t bits = 0;
    size_t n;

    if (!avail) {
        daqring_share_idle(r->share, r->slot);
        return 0;
    }
    if (r->s->rate
        && !daqring_shaper_admit(&r->st, r->s, now, &burst, &budget)) {
        /* Held by its own shaper, not by the share. */
        daqring_share_idle(r->share, r->slot);
        return 0;
    }
    if (daqring_share_claim(r->share, r->slot, now, &grant)
        != DAQRING_SHARE_GRANTED) {
        r->waits++;
        return 0;
    }
    CHECK(grant.budget > 0, "granted %"PRId64, grant.budget);
    start = r->s->rate ? MIN(budget, grant.budget) : grant.budget;
    budget = start;
    n = daqring_shaper_take(cs, &budget, backlog_head(&r->b),
                            MIN(avail, burst));
    if (r->s->rate) {
        daqring_shaper_charge(&r->st, r->s, now, n,
                              r->st.tokens - (start - budget));
    }
    daqring_share_charge(r->share, r->slot, &grant, start - budget);
    for (size_t i = 0; i < n; i++) {
        bits += (MAX(dp_packet_size(backlog_head(&r->b)[i]),
                     DAQRING_MIN_FRAME_LEN) + 24) * 8;
    }
    r->b.next += n;
    r->bits += bits;
    return bits;
}

/* Polls 'n' sharing rings in order, always the first one first, every
 * 'step' cycles up to 'end'.  Checks that, in every window of polls, the
 * wire bits that all of them released are at most the share's rate times
 * the window plus its burst (daqring_shaper_burst_bytes()), and returns
 * the bits released in all. */
static uint64_t
run_shared(struct sharer *r, size_t n, uint64_t step, uint64_t end)
{
    const struct daqring_shaper *cs = daqring_share_shaper(r[0].share);
    int64_t limit = daqring_shaper_burst_bytes(cs) * 8 * TEST_HZ;
    int64_t best_start = INT64_MIN, sent = 0;
    uint64_t total = 0;

    for (uint64_t now = step; now <= end; now += step) {
        best_start = MAX(best_start, (int64_t) (cs->rate * now) - sent);
        for (size_t i = 0; i < n; i++) {
            uint64_t bits = poll_shared(&r[i], now);

            total += bits;
            sent += (int64_t) bits * TEST_HZ;
            CHECK(sent - (int64_t) (cs->rate * now) + best_start <= limit,
                  "the rings of one egress released %"PRId64" bit-ticks "
                  "beyond its rate, bound %"PRId64, sent
                  - (int64_t) (cs->rate * now) + best_start, limit);
        }
    }
    return total;
}

/* Two and three backlogged rings, the first always polled first: together
 * they release the egress's rate, never more than rate x time + burst, and
 * each gets an equal share, to within the initial burst (about 4% of the
 * total here): without turns, the first ring polled took all of it. */
static void
test_share_fair(void)
{
    for (size_t n = 2; n <= 3; n++) {
        const uint64_t rate = 100000000, end = TEST_HZ / 10;
        struct sharer r[3];
        uint64_t total, want;

        for (size_t i = 0; i < n; i++) {
            sharer_init(&r[i], i ? "ring-b" : "ring-a", 0, rate, SIZE_MAX,
                        1000);
        }
        total = run_shared(r, n, US, end);
        want = rate / 10 + daqring_shaper_burst_bytes(
            daqring_share_shaper(r[0].share)) * 8;
        CHECK(total <= want && total + 2 * 1024 * 8 >= want,
              "%"PRIuSIZE" rings released %"PRIu64" bits in 0.1 s, "
              "expected %"PRIu64" (work-conserving)", n, total, want);
        for (size_t i = 0; i < n; i++) {
            /* An equal share, give or take the initial burst (which the
             * first ring polled takes) and a frame. */
            uint64_t slack = daqring_shaper_burst_bytes(
                daqring_share_shaper(r[0].share)) * 8 + 1024 * 8;

            CHECK(r[i].bits + slack >= total / n
                  && r[i].bits <= total / n + slack,
                  "ring %"PRIuSIZE" of %"PRIuSIZE" got %"PRIu64" of %"PRIu64
                  " bits", i, n, r[i].bits, total);
            CHECK(r[i].waits > 0, "ring %"PRIuSIZE" never waited", i);
        }
        for (size_t i = 0; i < n; i++) {
            sharer_destroy(&r[i]);
        }
    }
}

/* A ring with nothing to send leaves its share to the other, which gets
 * the whole rate; a ring capped by its own max-rate leaves the rest of the
 * egress's rate to the other. */
static void
test_share_unused(void)
{
    const uint64_t rate = 100000000, end = TEST_HZ / 10;
    uint64_t total, want;
    struct sharer r[2];

    /* Ring b is idle. */
    sharer_init(&r[0], "ring-a", 0, rate, SIZE_MAX, 1000);
    sharer_init(&r[1], "ring-b", 0, rate, 0, 1000);
    total = run_shared(r, 2, US, end);
    want = rate / 10 + daqring_shaper_burst_bytes(
        daqring_share_shaper(r[0].share)) * 8;
    CHECK(r[0].bits == total && total + 2 * 1024 * 8 >= want,
          "busy ring got %"PRIu64" of %"PRIu64" bits, expected %"PRIu64,
          r[0].bits, total, want);
    sharer_destroy(&r[0]);
    sharer_destroy(&r[1]);

    /* Ring a, polled first, is capped at 20 Mbit/s: b gets the other 80. */
    sharer_init(&r[0], "ring-a", rate / 5, rate, SIZE_MAX, 1000);
    sharer_init(&r[1], "ring-b", 0, rate, SIZE_MAX, 1000);
    total = run_shared(r, 2, US, end);
    CHECK(total + 2 * 1024 * 8 >= want && total <= want,
          "released %"PRIu64" bits, expected %"PRIu64, total, want);
    CHECK(r[0].bits <= rate / 5 / 10 + r[0].s->depth / TEST_HZ + 1024 * 8,
          "capped ring got %"PRIu64" bits", r[0].bits);
    CHECK(r[1].bits * 100 >= total * 75, "other ring got %"PRIu64" of "
          "%"PRIu64" bits", r[1].bits, total);
    sharer_destroy(&r[0]);
    sharer_destroy(&r[1]);
}

/* The registry: the rings of one egress share one bucket and must give the
 * same parameters; the last one to leave frees it, and a ring alone in its
 * share may change them (the share stays, with its bucket). */
static void
test_share_join(void)
{
    struct daqring_share_params p = { .max_rate = 1000000,
                                      .frame_overhead = 24 };
    struct daqring_share_params q = p, got;
    struct daqring_share *a, *b, *c, *d;
    unsigned int sa, sb, sc, sd, n;
    char *error = NULL;

    a = daqring_share_join("eth-j", "a", &p, TEST_HZ, 0, NULL, &sa, &error);
    b = daqring_share_join("eth-j", "b", &p, TEST_HZ, 0, NULL, &sb, &error);
    CHECK(a && a == b && sa != sb && !error, "a and b do not share");
    daqring_share_get(a, &got, &n);
    CHECK(n == 2 && got.max_rate == 1000000, "%u rings at %"PRIu64, n,
          got.max_rate);

    q.max_rate = 2000000;
    c = daqring_share_join("eth-j", "c", &q, TEST_HZ, 0, NULL, &sc, &error);
    CHECK(!c && error && strstr(error, "egress-max-rate 2000000")
          && strstr(error, "same egress eth-j"), "mismatch: %s",
          error ? error : "no error");
    free(error);
    error = NULL;
    /* 'a' may not change the rate while 'b' shares it... */
    c = daqring_share_join("eth-j", "a", &q, TEST_HZ, 0, a, &sa, &error);
    CHECK(!c && error, "a changed the rate of a shared egress");
    free(error);
    error = NULL;
    /* ...but may once alone. */
    daqring_share_leave(b, sb);
    daqring_share_unref(b);
    c = daqring_share_join("eth-j", "a", &q, TEST_HZ, 0, a, &sa, &error);
    CHECK(c && c == a && !error, "a alone could not change the rate of "
          "its share: %s", error ? error : "a new share");
    daqring_share_unref(a);
    daqring_share_get(c, &got, &n);
    CHECK(n == 1 && got.max_rate == 2000000, "%u rings at %"PRIu64, n,
          got.max_rate);
    /* Another egress has its own share. */
    d = daqring_share_join("eth-k", "d", &p, TEST_HZ, 0, NULL, &sd, &error);
    CHECK(d && d != c, "eth-k shares eth-j's bucket");
    daqring_share_leave(c, sa);
    daqring_share_unref(c);
    daqring_share_leave(d, sd);
    daqring_share_unref(d);
    /* The last ring left: a new one starts a new share. */
    a = daqring_share_join("eth-j", "e", &p, TEST_HZ, 0, NULL, &sa, &error);
    daqring_share_get(a, &got, &n);
    CHECK(n == 1 && got.max_rate == 1000000, "stale share of eth-j");
    daqring_share_leave(a, sa);
    daqring_share_unref(a);
}

/* Issue 49 item 3: a stale turn must not stall the egress. */

/* Turns (full-size frames at the egress's rate) for which a ring that is
 * no longer polled may hold the others back at most. */
#define FEW_TURNS 6

/* Ring 'r' of 'n' packets of 'len' bytes, joined to the share of 'egress'
 * with parameters 'sp'. */
static void
sharer_init_params(struct sharer *r, const char *egress, const char *name,
                   const struct daqring_share_params *sp, size_t n,
                   size_t len)
{
    char *error = NULL;

    memset(r, 0, sizeof *r);
    r->s = make_shaper(32, 0, 0, 24);
    daqring_shaper_state_init(&r->st, r->s, 0);
    r->share = daqring_share_join(egress, name, sp, TEST_HZ, 0, NULL,
                                  &r->slot, &error);
    CHECK(r->share && !error, "%s could not join: %s", name, error);
    backlog_init(&r->b, n, len);
}

/* Polls ring 'r', bound to the share of 'egress' (not "eth-test"), as
 * poll_shared() does. */
static void
sharer_init_egress(struct sharer *r, const char *egress, const char *name,
                   uint64_t egress_rate, size_t n)
{
    struct daqring_share_params sp = {
        .max_rate = egress_rate,
        .frame_overhead = 24,
    };

    sharer_init_params(r, egress, name, &sp, n, 1000);
}

/* Polls 'r' every microsecond from 'now' on until it sends, and returns
 * the TSC at which it did (CHECKs that it does within 'limit'). */
static uint64_t
poll_until_sent(struct sharer *r, uint64_t now, uint64_t limit)
{
    for (; now <= limit; now += US) {
        if (poll_shared(r, now)) {
            return now;
        }
    }
    CHECK(false, "ring b held back until %"PRIu64" ns at least, by a turn "
          "that nobody will take", limit);
    return 0;
}

/* Ring a is backlogged and waits for its turn (the bucket is empty), with
 * ring b idle.  Then a stops being polled: it was set down (its thread
 * never polls it again), or it left the share while its thread, still on
 * the old shaper, polled it once more.  Ring b then gets a backlog: it
 * must be held back no longer than a few turns, not for the time that
 * fills the bucket (more than 9 ms here, 75 turns). */
static void
test_share_stale_turn(void)
{
    const uint64_t rate = 100000000;

    for (int leave = 0; leave < 2; leave++) {
        const uint64_t turn = (1518 + 24) * 8 * TEST_HZ / rate;
        const struct daqring_shaper *cs;
        struct sharer a, b;
        uint64_t now, sent, bound;

        sharer_init_egress(&a, "eth-stale", "ring-a", rate, SIZE_MAX);
        sharer_init_egress(&b, "eth-stale", "ring-b", rate, 0);
        cs = daqring_share_shaper(a.share);

        /* Ring a drains the bucket until the share makes it wait. */
        for (now = US; !a.waits; now += US) {
            poll_shared(&a, now);
            poll_shared(&b, now);
        }
        CHECK(a.bits > 0, "ring a never sent");
        if (leave) {
            /* Leaves the share, then is polled once more, on the shaper
             * that refers to it: it finds the bucket empty. */
            daqring_share_leave(a.share, a.slot);
            now += US;
            CHECK(!poll_shared(&a, now), "the bucket filled in 1 us");
        }

        /* Ring a is polled no more.  Ring b gets a backlog. */
        b.b.n = SIZE_MAX;
        bound = now + FEW_TURNS * turn;
        sent = poll_until_sent(&b, now + US, now + cs->fill_cycles);
        CHECK(sent <= bound, "%s, ring a kept ring b waiting for %"PRIu64
              " ns (%"PRIu64" turns), more than %d turns",
              leave ? "leaving the share" : "set down", sent - now,
              (sent - now) / turn, FEW_TURNS);

        if (!leave) {
            daqring_share_leave(a.share, a.slot);
        }
        daqring_share_unref(a.share);
        backlog_destroy(&a.b);
        free(a.s);
        sharer_destroy(&b);
    }
}

/* A slot whose ring left is skipped even if its polling thread sets a
 * wait there afterwards, and a ring that joins it later starts without a
 * turn: with two rings bound and a third that left, the two share the
 * egress in turns as if the third had never been. */
static void
test_share_member_slot(void)
{
    const uint64_t rate = 100000000, start = 5 * US, end = TEST_HZ / 20;
    const uint64_t want = (end - start) * rate / TEST_HZ;
    struct sharer r[3];
    uint64_t total;

    sharer_init_egress(&r[0], "eth-slot", "ring-a", rate, SIZE_MAX);
    sharer_init_egress(&r[1], "eth-slot", "ring-b", rate, SIZE_MAX);
    sharer_init_egress(&r[2], "eth-slot", "ring-c", rate, SIZE_MAX);
    /* All three backlogged, then c leaves and its thread polls it once
     * more, on the old shaper, after the others' first turns: the bucket
     * is empty and c waits there. */
    run_shared(r, 3, US, 3 * US);
    daqring_share_leave(r[2].share, r[2].slot);
    CHECK(!poll_shared(&r[2], 4 * US), "the bucket filled");
    total = 0;
    for (uint64_t now = start; now <= end; now += US) {
        total += poll_shared(&r[0], now);
        total += poll_shared(&r[1], now);
    }
    /* To within 3 full-size frames (the deficit at 'start', the frame
     * that overshoots at 'end' and one more): less than the few turns
     * after which a stale wait expires. */
    CHECK(total + 3 * 1542 * 8 >= want, "the two members released "
          "%"PRIu64" bits of %"PRIu64, total, want);
    daqring_share_unref(r[2].share);
    backlog_destroy(&r[2].b);
    free(r[2].s);
    sharer_destroy(&r[0]);
    sharer_destroy(&r[1]);
}

/* Issue 49 item 4: the parameters of a shared egress change when all its
 * rings ask for the same new ones (one OVSDB transaction for all of them,
 * which the bridge applies ring by ring), keeping the bucket's level. */
static void
test_share_retune(void)
{
    struct daqring_share_params p = { .max_rate = 80000000,
                                      .frame_overhead = 24 };
    struct daqring_share_params q = p, got;
    struct daqring_share *a, *b, *x;
    struct daqring_share_grant grant;
    unsigned int sa, sb, sx, n;
    int64_t depth, level;
    char *error = NULL;

    a = daqring_share_join("eth-r", "a", &p, TEST_HZ, 0, NULL, &sa, &error);
    b = daqring_share_join("eth-r", "b", &p, TEST_HZ, 0, NULL, &sb, &error);
    CHECK(a && a == b && !error, "a and b do not share");

    /* Half the bucket goes. */
    depth = daqring_share_shaper(a)->depth;
    CHECK(daqring_share_claim(a, sa, 0, &grant) == DAQRING_SHARE_GRANTED
          && grant.budget == depth, "granted %"PRId64" of %"PRId64,
          grant.budget, depth);
    daqring_share_charge(a, sa, &grant, depth - depth / 2);

    /* a asks for 160 Mbit/s first: b does not yet, the rate stays. */
    q.max_rate = 160000000;
    CHECK(!daqring_share_check("eth-r", "a", &q, a, sa, &error)
          && error && strstr(error, "daqring b"), "a alone changed the "
          "rate: %s", error ? error : "no error");
    free(error);
    error = NULL;
    x = daqring_share_join("eth-r", "a", &q, TEST_HZ, 0, a, &sa, &error);
    CHECK(!x && error, "a alone changed the rate");
    free(error);
    error = NULL;
    daqring_share_get(a, &got, &n);
    CHECK(got.max_rate == 80000000 && n == 2, "rate %"PRIu64" with %u rings",
          got.max_rate, n);

    /* b asks for the same: the rate changes, the level stays. */
    CHECK(daqring_share_check("eth-r", "b", &q, b, sb, &error),
          "b's request, the last, refused: %s", error);
    x = daqring_share_join("eth-r", "b", &q, TEST_HZ, 0, b, &sb, &error);
    CHECK(x == b && !error, "the rate of the share could not change: %s",
          error ? error : "a new share");
    daqring_share_unref(x);
    daqring_share_get(a, &got, &n);
    CHECK(got.max_rate == 160000000 && n == 2, "rate %"PRIu64" with %u rings",
          got.max_rate, n);
    CHECK(daqring_share_shaper(a)->rate == 160000000, "the bucket fills at "
          "%"PRIu64" bit/s", daqring_share_shaper(a)->rate);
    /* a's request now succeeds (the caller retries it). */
    x = daqring_share_join("eth-r", "a", &q, TEST_HZ, 0, a, &sa, &error);
    CHECK(x == a && !error, "a refused once b agreed: %s", error);
    daqring_share_unref(x);
    CHECK(daqring_share_claim(b, sb, 0, &grant) == DAQRING_SHARE_GRANTED
          && grant.budget == depth / 2, "level %"PRId64" after the change, "
          "was %"PRId64, grant.budget, depth / 2);
    daqring_share_charge(b, sb, &grant, 0);

    /* A shallower bucket: the level is at most its depth. */
    q.max_burst_bytes = 4 * 1542;
    CHECK(!daqring_share_join("eth-r", "a", &q, TEST_HZ, 0, a, &sa, &error),
          "a alone changed the burst");
    free(error);
    error = NULL;
    x = daqring_share_join("eth-r", "b", &q, TEST_HZ, 0, b, &sb, &error);
    CHECK(x == b && !error, "the burst could not change: %s", error);
    daqring_share_unref(x);
    level = daqring_share_shaper(a)->depth;
    CHECK(level < depth / 2, "depth %"PRId64, level);
    CHECK(daqring_share_claim(b, sb, 0, &grant) == DAQRING_SHARE_GRANTED
          && grant.budget == level, "level %"PRId64" above the depth "
          "%"PRId64, grant.budget, level);
    daqring_share_charge(b, sb, &grant, 0);
    x = daqring_share_join("eth-r", "a", &q, TEST_HZ, 0, a, &sa, &error);
    CHECK(x == a && !error, "a refused once b agreed: %s", error);
    daqring_share_unref(x);

    /* A partial change: a asks for 320 Mbit/s, b keeps its rate.  a is
     * refused and the rate stays, also when b asks again for it; a's
     * request is withdrawn when it asks for the rate in force. */
    got = q;
    q.max_rate = 320000000;
    CHECK(!daqring_share_join("eth-r", "a", &q, TEST_HZ, 0, a, &sa, &error)
          && error && strstr(error, "egress-max-rate 320000000"),
          "a alone changed the rate: %s", error ? error : "no error");
    free(error);
    error = NULL;
    x = daqring_share_join("eth-r", "b", &got, TEST_HZ, 0, b, &sb, &error);
    CHECK(x == b && !error, "b refused: %s", error);
    daqring_share_unref(x);
    CHECK(!daqring_share_check("eth-r", "a", &q, a, sa, &error),
          "a changed the rate alone");
    free(error);
    error = NULL;
    CHECK(daqring_share_shaper(a)->rate == 160000000, "rate %"PRIu64,
          daqring_share_shaper(a)->rate);
    x = daqring_share_join("eth-r", "a", &got, TEST_HZ, 0, a, &sa, &error);
    CHECK(x == a && !error, "a refused the rate in force: %s", error);
    daqring_share_unref(x);
    /* Now b alone asking for 320 Mbit/s is refused: a no longer asks. */
    CHECK(!daqring_share_check("eth-r", "b", &q, b, sb, &error)
          && strstr(error, "daqring a"), "b changed the rate alone");
    free(error);
    error = NULL;

    /* A ring that is not a member cannot change it either. */
    CHECK(!daqring_share_join("eth-r", "c", &q, TEST_HZ, 0, NULL, &sx,
                              &error), "c changed the rate");
    free(error);
    error = NULL;

    daqring_share_leave(a, sa);
    daqring_share_unref(a);
    daqring_share_leave(b, sb);
    daqring_share_unref(b);
}

/* Issue 49 item 5: fairness and work conservation at high rates. */

/* Like sharer_init_egress(), with frames of 'len' bytes. */
static void
sharer_init_len(struct sharer *r, const char *egress, const char *name,
                uint64_t egress_rate, size_t len)
{
    sharer_init_egress(r, egress, name, egress_rate, SIZE_MAX);
    backlog_destroy(&r->b);
    backlog_init(&r->b, SIZE_MAX, len);
}

/* Polls ring 'r[0]' every 'fast' cycles and ring 'r[1]' whenever the TSC
 * is 'slow_at' modulo 'slow', every 'step' cycles up to 'end', except in
 * the first 'stall' cycles of every 'period' (0: none), when neither
 * thread polls.  Stores in '*a' and '*b' the bits each sent after 'warm'. */
static void
poll_two(struct sharer r[2], uint64_t fast, uint64_t slow, uint64_t slow_at,
         uint64_t step, uint64_t warm, uint64_t end, uint64_t period,
         uint64_t stall, uint64_t *a, uint64_t *b)
{
    uint64_t a0 = 0, b0 = 0;

    for (uint64_t now = step; now <= end; now += step) {
        if (!period || now % period >= stall) {
            if (now % fast == 0) {
                poll_shared(&r[0], now);
            }
            if (now % slow == slow_at) {
                poll_shared(&r[1], now);
            }
        }
        if (now == warm) {
            a0 = r[0].bits;
            b0 = r[1].bits;
        }
    }
    *a = r[0].bits - a0;
    *b = r[1].bits - b0;
}

/* Two backlogged rings of one egress whose threads poll them at very
 * different rates: ring a every 'fast' cycles, ring b every 10 x 'fast'
 * (offset by half a 'fast', as another thread's polls are), at 10 and 100
 * Gbit/s, where the bucket's depth (32 full-size frames, 39 us at 10
 * Gbit/s, 3.9 us at 100 Gbit/s) is less than two of ring b's poll gaps.
 * After a warm-up, over 20 ms: each ring gets half the egress's rate to
 * within 10%, and together they get its rate to within 1%.  (Each ring's
 * half per poll of ring b, 20 frames of 1500 bytes, is within its
 * max-burst.)  With one bucket of tokens claimed whole by whichever ring
 * found it positive, and turns only at an empty bucket, the shares
 * followed the poll rates and ring b's turns idled the egress. */
static void
test_share_poll_rates(void)
{
    static const struct {
        uint64_t rate;          /* Egress rate, bit/s. */
        uint64_t fast;          /* Poll gap of ring a, TSC cycles. */
    } cases[] = {
        { UINT64_C(10000000000), 5 * US },
        { UINT64_C(100000000000), US / 2 },
    };

    for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
        const uint64_t rate = cases[k].rate, fast = cases[k].fast;
        const uint64_t slow = 10 * fast, step = fast / 2;
        const uint64_t warm = 2 * TEST_HZ / 1000, end = warm + TEST_HZ / 50;
        uint64_t a, b, total, want;
        struct sharer r[2];

        sharer_init_len(&r[0], "eth-rates", "ring-a", rate, 1500);
        sharer_init_len(&r[1], "eth-rates", "ring-b", rate, 1500);
        poll_two(r, fast, slow, step, step, warm, end, 0, 0, &a, &b);
        total = a + b;
        want = (end - warm) * rate / TEST_HZ;
        CHECK(a * 100 >= total / 2 * 90 && b * 100 >= total / 2 * 90,
              "at %"PRIu64" bit/s, the ring polled every %"PRIu64" ns got "
              "%"PRIu64" bits, the one polled every %"PRIu64" ns %"PRIu64
              " (not within 10%% of equal)", rate, fast, a, slow, b);
        CHECK(total * 100 >= want * 99 && total * 100 <= want * 101,
              "at %"PRIu64" bit/s, the two rings released %"PRIu64" bits "
              "in 20 ms, %.2f%% of the egress's rate", rate, total,
              100.0 * total / want);
        sharer_destroy(&r[0]);
        sharer_destroy(&r[1]);
    }
}

/* A backlogged ring whose thread stops polling it (with no chance to say
 * so) keeps no more than the bucket's depth from the other: after that,
 * the other gets the whole rate, to within 1%, however often its thread
 * polls it. */
static void
test_share_unpolled(void)
{
    const uint64_t rate = UINT64_C(10000000000);

    for (uint64_t gap = US; gap <= 8 * US; gap *= 8) {
        const uint64_t stop = TEST_HZ / 1000, warm = 2 * stop;
        const uint64_t end = warm + TEST_HZ / 50;
        uint64_t b0 = 0, want;
        struct sharer r[2];

        sharer_init_len(&r[0], "eth-unpolled", "ring-a", rate, 1500);
        sharer_init_len(&r[1], "eth-unpolled", "ring-b", rate, 1500);
        for (uint64_t now = gap; now <= end; now += gap) {
            if (now < stop) {
                poll_shared(&r[0], now);
            }
            poll_shared(&r[1], now);
            if (now == warm) {
                b0 = r[1].bits;
            }
        }
        want = (end - warm) * rate / TEST_HZ;
        CHECK((r[1].bits - b0) * 100 >= want * 99, "polled every %"PRIu64
              " ns, ring b got %"PRIu64" bits of %"PRIu64" while ring a "
              "was not polled", gap, r[1].bits - b0, want);
        sharer_destroy(&r[0]);
        sharer_destroy(&r[1]);
    }
}

/* Two backlogged rings of one 100 Gbit/s egress, polled every 1 and 6.5
 * us, and every 3 ms a stall of 80 us in which neither thread polls (on the
 * two-core VMs ovs-daqring is measured on, both PMD threads stopped
 * together for 50-190 us, hundreds of times a second: daq-bench part
 * share).  A stall shorter than what the shared bucket holds at the rate
 * costs nothing: the rings release the stall's tokens afterwards, each
 * its half.  A longer one costs the egress the part of the stall beyond
 * the bucket's depth and no more (the tokens that overflow a full bucket
 * are lost, as in any token bucket): the egress's rate is kept only by a
 * burst that covers the threads' stalls. */
static void
test_share_stalls(void)
{
    const uint64_t rate = UINT64_C(100000000000);
    const uint64_t period = 3000 * US, stall = 80 * US;
    static const uint64_t depths_us[] = { 20, 200 };

    for (size_t k = 0; k < ARRAY_SIZE(depths_us); k++) {
        const uint64_t depth = depths_us[k] * US;
        struct daqring_share_params sp = {
            .max_rate = rate,
            .frame_overhead = 24,
            .max_burst_bytes = rate / 8 * depths_us[k] / 1000000 + 1542,
        };
        const uint64_t fast = US, slow = 6500, step = 100;
        const uint64_t warm = 2 * TEST_HZ / 1000, end = warm + TEST_HZ / 20;
        uint64_t a, b, want;
        double egress, lost;
        struct sharer r[2];

        sharer_init_params(&r[0], "eth-stalls", "a", &sp, SIZE_MAX, 1500);
        sharer_init_params(&r[1], "eth-stalls", "b", &sp, SIZE_MAX, 1500);
        poll_two(r, fast, slow, 0, step, warm, end, period, stall, &a, &b);
        want = (end - warm) * rate / TEST_HZ;
        egress = (double) (a + b) / want;
        /* What the stalls beyond the depth cost, as a fraction. */
        lost = stall > depth ? (double) (stall - depth) / period : 0;
        CHECK(egress <= 1.001 && egress >= 1 - lost - 0.005,
              "%"PRIu64" us stalls every %"PRIu64" us, a bucket of %"PRIu64
              " us: the egress sent %.4f of its rate, expected %.4f",
              stall / US, period / US, depth / US, egress, 1 - lost);
        if (!lost) {
            CHECK(egress >= 0.999, "the egress sent %.4f of its rate "
                  "through stalls shorter than its bucket", egress);
            CHECK(b * 100 >= a * 99 && a * 100 >= b * 99,
                  "through the stalls, the ring polled every %"PRIu64" ns "
                  "got %"PRIu64" bits, the one polled every %"PRIu64" ns "
                  "%"PRIu64" (not within 1%% of equal)", fast, a, slow, b);
        }
        sharer_destroy(&r[0]);
        sharer_destroy(&r[1]);
    }
}

static void
run_tests(struct ovs_cmdl_context *ctx OVS_UNUSED)
{
    static const struct {
        const char *name;
        void (*function)(void);
    } tests[] = {
        { "packet-interval", test_packet_interval },
        { "packet-idle", test_packet_idle },
        { "packet-mixed-sources", test_packet_mixed_sources },
        { "byte-mixed-sources", test_byte_mixed_sources },
        { "byte-rate", test_byte_rate },
        { "byte-deadline", test_byte_deadline },
        { "byte-burst-bound", test_byte_burst_bound },
        { "state-init", test_state_init },
        { "packet-catch-up", test_packet_catch_up },
        { "backward-tsc", test_backward_tsc },
        { "state-carry", test_state_carry },
        { "byte-tso", test_byte_tso },
        { "share-fair", test_share_fair },
        { "share-unused", test_share_unused },
        { "share-join", test_share_join },
        { "share-stale-turn", test_share_stale_turn },
        { "share-member-slot", test_share_member_slot },
        { "share-retune", test_share_retune },
        { "share-poll-rates", test_share_poll_rates },
        { "share-unpolled", test_share_unpolled },
        { "share-stalls", test_share_stalls },
    };
    const char *only = ctx->argc > 1 ? ctx->argv[1] : NULL;
    bool ran = false;

    for (size_t i = 0; i < ARRAY_SIZE(tests); i++) {
        if (!only || !strcmp(only, tests[i].name)) {
            tests[i].function();
            printf("%s: ok\n", tests[i].name);
            ran = true;
        }
    }
    if (!ran) {
        ovs_fatal(0, "no test named \"%s\"", only);
    }
}

static const struct ovs_cmdl_command commands[] = {
    {"check", "[TEST]", 0, 1, run_tests, OVS_RO},
    {NULL, NULL, 0, 0, NULL, OVS_RO},
};

static void
test_daqring_shaper_main(int argc, char *argv[])
{
    struct ovs_cmdl_context ctx = {
        .argc = argc - optind,
        .argv = argv + optind,
    };

    set_program_name(argv[0]);
    /* Changes of a share's parameters are logged at INFO level. */
    vlog_set_levels_from_string_assert("daqring_shaper:console:warn");
    ovs_cmdl_run_command(&ctx, commands);
}

OVSTEST_REGISTER("test-daqring-shaper", test_daqring_shaper_main);
