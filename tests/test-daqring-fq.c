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

/* Unit tests of daqring flow fairness (lib/daqring-fq.c).  The rings are
 * rte_rings in ordinary memory, which need no DPDK EAL, and the packets are
 * malloc()ed: nothing here needs hugepages or a running switch.  Flows are
 * told apart by the RSS hash the tests give their packets. */

#include <config.h>
#undef NDEBUG

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <rte_ring.h>

#include "command-line.h"
#include "daqring-fq.h"
#include "daqring-shaper.h"
#include "dp-packet.h"
#include "hash.h"
#include "ovstest.h"
#include "random.h"
#include "util.h"

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

/* What a test packet carries: its flow and its number within the flow. */
struct tag {
    uint32_t flow;
    uint32_t seq;
};

/* A daqring's ring and its flow fairness, as the provider sets them up. */
struct fixture {
    struct rte_ring *ring;      /* The daqring's ring (the bulk ring). */
    struct daqring_fq *fq;
    struct daqring_shaper *unshaped;
};

static void
fixture_init(struct fixture *f, uint32_t ring_size, uint32_t n_buckets)
{
    struct daqring_shaper_params p = { .max_burst = NETDEV_MAX_BURST };
    ssize_t memsize = rte_ring_get_memsize(rte_align32pow2(ring_size + 1));
    char *error = NULL;

    CHECK(memsize > 0, "ring of %"PRIu32" cannot be sized", ring_size);
    f->ring = xmalloc_cacheline(memsize);
    CHECK(!rte_ring_init(f->ring, "test", ring_size,
                         RING_F_MP_RTS_ENQ | RING_F_SC_DEQ
                         | RING_F_EXACT_SZ),
          "rte_ring_init failed");
    f->fq = daqring_fq_create("test", n_buckets, ring_size, &error);
    CHECK(f->fq, "%s", error);
    f->unshaped = daqring_shaper_create(&p, 0, 1);
}

static void
fixture_destroy(struct fixture *f)
{
    struct dp_packet *pkts[NETDEV_MAX_BURST];
    unsigned int n;

    daqring_fq_destroy(f->fq);
    while ((n = rte_ring_sc_dequeue_burst(f->ring, (void **) pkts,
                                          NETDEV_MAX_BURST, NULL))) {
        for (unsigned int i = 0; i < n; i++) {
            dp_packet_delete(pkts[i]);
        }
    }
    free_cacheline(f->ring);
    free(f->unshaped);
}

/* Returns a packet of 'size' bytes of flow 'flow', numbered 'seq', whose
 * flow hash is 'hash'. */
static struct dp_packet *
make_frame(uint32_t flow, uint32_t seq, uint32_t hash, size_t size)
{
    struct tag tag = { .flow = flow, .seq = seq };
    struct dp_packet *p = dp_packet_new(size);

    ovs_assert(size >= sizeof tag);
    dp_packet_put(p, &tag, sizeof tag);
    dp_packet_put_zeros(p, size - sizeof tag);
    dp_packet_set_rss_hash(p, hash);
    return p;
}

static struct dp_packet *
make_packet(uint32_t flow, uint32_t seq)
{
    /* The flow's hash: distinct flows below the bucket count get distinct
     * buckets, so that the tests measure the scheduler, not the hash. */
    return make_frame(flow, seq, flow, 64);
}

static struct tag
packet_tag(const struct dp_packet *p)
{
    struct tag tag;

    memcpy(&tag, dp_packet_data(p), sizeof tag);
    return tag;
}

/* Enqueues 'n' packets, 'pkts', in batches of at most NETDEV_MAX_BURST, as
 * a sender does.  Returns the number enqueued; frees the others. */
static size_t
send_packets(struct fixture *f, struct dp_packet **pkts, size_t n)
{
    size_t sent = 0;

    for (size_t i = 0; i < n; i += NETDEV_MAX_BURST) {
        size_t cnt = MIN(NETDEV_MAX_BURST, n - i);
        unsigned int k = daqring_fq_enqueue(f->fq, f->ring, &pkts[i], cnt);

        for (size_t j = k; j < cnt; j++) {
            dp_packet_delete(pkts[i + j]);
        }
        sent += k;
    }
    return sent;
}

/* Dequeues up to 'max' packets, NETDEV_MAX_BURST per poll as the
 * provider does, appending their tags to 'tags' (from '*n' on) and
 * freeing them.  Returns the number dequeued. */
static size_t
receive_packets(struct fixture *f, struct tag *tags, size_t *n, size_t max)
{
    size_t start = *n;

    while (*n - start < max) {
        struct dp_packet *pkts[NETDEV_MAX_BURST];
        size_t want = MIN(NETDEV_MAX_BURST, max - (*n - start));
        unsigned int avail;
        int64_t budget = 0;
        size_t got;

        got = daqring_fq_dequeue(f->fq, f->ring, f->unshaped, &budget, pkts,
                                 want, &avail);
        for (size_t i = 0; i < got; i++) {
            tags[(*n)++] = packet_tag(pkts[i]);
            dp_packet_delete(pkts[i]);
        }
        CHECK(avail == daqring_fq_count(f->fq), "avail %u, count %"PRIu32,
              avail, daqring_fq_count(f->fq));
        if (!got) {
            break;
        }
    }
    return *n - start;
}

/* Lets the polling thread pull everything in the ring into the flow
 * queues, as polls that take nothing out (a dequeue pulls at most
 * DAQRING_FQ_PULL_MAX packets). */
static void
pull_all(struct fixture *f)
{
    while (rte_ring_count(f->ring)) {
        struct dp_packet *pkts[1];
        unsigned int avail;
        int64_t budget = 0;

        CHECK(!daqring_fq_dequeue(f->fq, f->ring, f->unshaped, &budget,
                                  pkts, 0, &avail),
              "a dequeue of 0 packets took some");
    }
}

/* Every packet leaves once, and each flow's packets leave in order. */
static void
test_order(void)
{
    enum { N_FLOWS = 50, PER_FLOW = 40 };
    struct dp_packet *pkts[N_FLOWS * PER_FLOW];
    struct tag tags[N_FLOWS * PER_FLOW];
    uint32_t next_seq[N_FLOWS] = { 0 };
    struct fixture f;
    size_t n = 0, k = 0;

    fixture_init(&f, 4096, 1024);
    /* Flows interleaved irregularly: flow i sends its packets in runs of
     * i % 7 + 1. */
    while (k < N_FLOWS * PER_FLOW) {
        for (uint32_t flow = 0; flow < N_FLOWS; flow++) {
            for (uint32_t j = 0; j < flow % 7 + 1; j++) {
                if (next_seq[flow] < PER_FLOW) {
                    pkts[k++] = make_packet(flow, next_seq[flow]++);
                }
            }
        }
    }
    CHECK(k == N_FLOWS * PER_FLOW, "%"PRIuSIZE" packets made", k);
    CHECK(send_packets(&f, pkts, k) == k, "not all enqueued");
    CHECK(daqring_fq_count(f.fq) == k, "count %"PRIu32,
          daqring_fq_count(f.fq));
    receive_packets(&f, tags, &n, k + 1);
    CHECK(n == k, "%"PRIuSIZE" of %"PRIuSIZE" packets left", n, k);
    CHECK(daqring_fq_count(f.fq) == 0, "count %"PRIu32" after all left",
          daqring_fq_count(f.fq));

    memset(next_seq, 0, sizeof next_seq);
    for (size_t i = 0; i < n; i++) {
        CHECK(tags[i].flow < N_FLOWS, "unknown flow %"PRIu32, tags[i].flow);
        CHECK(tags[i].seq == next_seq[tags[i].flow],
              "flow %"PRIu32": packet %"PRIu32" left when %"PRIu32" was due",
              tags[i].flow, tags[i].seq, next_seq[tags[i].flow]);
        next_seq[tags[i].flow]++;
    }
    fixture_destroy(&f);
}

/* Issue 49 item A1: a flow's packets leave in the order they arrived, also
 * while buckets empty and fill again between polls.
 *
 * 'n_flows' flows with random hashes (so that flows collide in buckets)
 * send bursts of 1 to 8 packets in random order, and the receiver polls
 * between bursts, taking fewer packets than arrived on average, so that
 * the backlog grows and buckets empty and fill again, as a daqring paced
 * in by a faster upstream and out by a slower shaper.  Every packet of
 * every flow must leave in the order the flow sent it. */
static void
check_order_interleaved(uint32_t n_flows, uint32_t n_buckets)
{
    enum { TOTAL = 9600, RING = 1024 };
    uint32_t *next_sent = xcalloc(n_flows, sizeof *next_sent);
    uint32_t *next_due = xcalloc(n_flows, sizeof *next_due);
    uint32_t *hashes = xmalloc(n_flows * sizeof *hashes);
    uint32_t first_flow = 0, first_seq = 0, first_due = 0;
    size_t sent = 0, received = 0, bad = 0;
    struct fixture f;

    random_set_seed(n_flows * 65536 + n_buckets);
    for (uint32_t flow = 0; flow < n_flows; flow++) {
        hashes[flow] = hash_int(flow, n_buckets);
    }
    fixture_init(&f, RING, n_buckets);
    while (received < sent || sent < TOTAL) {
        struct dp_packet *pkts[NETDEV_MAX_BURST];
        unsigned int avail;
        int64_t budget = 0;
        size_t got, want;

        if (sent < TOTAL) {
            uint32_t flow = random_range(n_flows);
            size_t burst = 1 + random_range(8);

            burst = MIN(burst, TOTAL - sent);

            for (size_t i = 0; i < burst; i++) {
                pkts[i] = make_frame(flow, next_sent[flow] + i,
                                     hashes[flow], 64);
            }
            burst = send_packets(&f, pkts, burst);
            next_sent[flow] += burst;
            sent += burst;
        }

        /* A poll: about 3 packets out for every 4.5 in, all at the end. */
        want = sent < TOTAL ? random_range(7) : NETDEV_MAX_BURST;
        got = daqring_fq_dequeue(f.fq, f.ring, f.unshaped, &budget, pkts,
                                 want, &avail);
        for (size_t i = 0; i < got; i++) {
            struct tag tag = packet_tag(pkts[i]);

            CHECK(tag.flow < n_flows, "unknown flow %"PRIu32, tag.flow);
            if (tag.seq != next_due[tag.flow] && !bad++) {
                first_flow = tag.flow;
                first_seq = tag.seq;
                first_due = next_due[tag.flow];
            }
            next_due[tag.flow] = MAX(next_due[tag.flow], tag.seq + 1);
            dp_packet_delete(pkts[i]);
        }
        received += got;
        CHECK(got || sent < TOTAL || !daqring_fq_count(f.fq),
              "%"PRIu32" packets queued, none left", daqring_fq_count(f.fq));
    }
    CHECK(!bad, "%"PRIu32" flows in %"PRIu32" buckets: %"PRIuSIZE" of "
          "%"PRIuSIZE" packets out of order, the first packet %"PRIu32" of "
          "flow %"PRIu32" when %"PRIu32" was due", n_flows, n_buckets, bad,
          received, first_seq, first_flow, first_due);
    for (uint32_t flow = 0; flow < n_flows; flow++) {
        CHECK(next_due[flow] == next_sent[flow],
              "flow %"PRIu32": %"PRIu32" packets sent, %"PRIu32" left",
              flow, next_sent[flow], next_due[flow]);
    }
    fixture_destroy(&f);
    free(hashes);
    free(next_due);
    free(next_sent);
}

static void
test_order_interleaved(void)
{
    check_order_interleaved(64, 16);
    check_order_interleaved(64, 64);
    check_order_interleaved(300, 256);
    check_order_interleaved(16, 1024);
}

/* The backlog never exceeds the ring's capacity: what does not fit is
 * refused, exactly. */
static void
test_capacity(void)
{
    enum { SIZE = 1000, N = 1500 };
    struct dp_packet *pkts[N];
    struct tag tags[N];
    struct fixture f;
    size_t sent, n = 0;

    fixture_init(&f, SIZE, 256);
    for (size_t i = 0; i < N; i++) {
        pkts[i] = make_packet(i % 300, i / 300);
    }
    sent = send_packets(&f, pkts, N);
    CHECK(sent == SIZE, "%"PRIuSIZE" enqueued into a ring of %d", sent, SIZE);
    CHECK(daqring_fq_count(f.fq) == SIZE, "count %"PRIu32,
          daqring_fq_count(f.fq));
    receive_packets(&f, tags, &n, N);
    CHECK(n == SIZE, "%"PRIuSIZE" left, %d expected", n, SIZE);
    fixture_destroy(&f);
}

/* A flow that sends while others hold a backlog joins the round being
 * served: its first packet leaves within one quantum of each backlogged
 * flow.  The frames are a quantum long, so that a quantum is a packet. */
static void
test_sparse(void)
{
    enum { N_FLOWS = 100, PER_FLOW = 50 };
    struct dp_packet *pkts[N_FLOWS * PER_FLOW];
    struct tag tags[N_FLOWS * PER_FLOW + 1];
    struct dp_packet *sparse;
    struct fixture f;
    size_t n = 0, k = 0;

    fixture_init(&f, 8192, 1024);
    for (uint32_t flow = 0; flow < N_FLOWS; flow++) {
        for (uint32_t seq = 0; seq < PER_FLOW; seq++) {
            pkts[k++] = make_frame(flow, seq, flow, DAQRING_FQ_QUANTUM);
        }
    }
    send_packets(&f, pkts, k);
    pull_all(&f);
    /* Serve 10 rounds and a half, then the new flow sends. */
    receive_packets(&f, tags, &n, 10 * N_FLOWS + N_FLOWS / 2);
    sparse = make_frame(N_FLOWS, 0, N_FLOWS, DAQRING_FQ_QUANTUM);
    send_packets(&f, &sparse, 1);
    receive_packets(&f, tags, &n, N_FLOWS + 1);
    for (size_t i = 10 * N_FLOWS + N_FLOWS / 2; i < n; i++) {
        if (tags[i].flow == N_FLOWS) {
            goto done;
        }
    }
    CHECK(false, "the new flow's packet did not leave within %d packets",
          N_FLOWS + 1);
done:
    receive_packets(&f, tags, &n, N_FLOWS * PER_FLOW);
    CHECK(n == k + 1, "%"PRIuSIZE" of %"PRIuSIZE" packets left", n, k + 1);
    fixture_destroy(&f);
}

/* Issue 25 item B2: fairness holds for any number of backlogged flows up
 * to the bucket count, not only up to a rank ring's 256 packets.
 *
 * 'n_flows' flows each queue a burst of 'per_flow' packets at once (an
 * incast: every ROS answers with its whole fragment), in 'n_buckets'
 * buckets, frames of one quantum (so that a quantum is a packet), and the
 * polling thread pulls them all into the flow queues.  Then:
 *
 *   - no flow waits more than one round: the k-th packet of every flow
 *     leaves among the k-th 'n_flows' packets served;
 *
 *   - over the first half of the backlog, the flow served most got at most
 *     twice the packets of the flow served least. */
static void
check_fair(uint32_t n_flows, uint32_t per_flow, uint32_t n_buckets)
{
    size_t total = (size_t) n_flows * per_flow;
    struct dp_packet **pkts = xmalloc(total * sizeof *pkts);
    struct tag *tags = xmalloc(total * sizeof *tags);
    uint32_t *served = xcalloc(n_flows, sizeof *served);
    uint32_t min = UINT32_MAX, max = 0;
    struct fixture f;
    size_t n = 0, k = 0;

    fixture_init(&f, total, n_buckets);
    for (uint32_t flow = 0; flow < n_flows; flow++) {
        for (uint32_t seq = 0; seq < per_flow; seq++) {
            pkts[k++] = make_frame(flow, seq, flow, DAQRING_FQ_QUANTUM);
        }
    }
    CHECK(send_packets(&f, pkts, total) == total, "not all enqueued");
    pull_all(&f);
    receive_packets(&f, tags, &n, total + 1);
    CHECK(n == total, "%"PRIuSIZE" of %"PRIuSIZE" packets left", n, total);

    for (size_t i = 0; i < n; i++) {
        size_t round = i / n_flows;

        CHECK(tags[i].seq == round,
              "%"PRIu32" flows x %"PRIu32" in %"PRIu32" buckets: packet "
              "%"PRIu32" of flow %"PRIu32" left in round %"PRIuSIZE,
              n_flows, per_flow, n_buckets, tags[i].seq, tags[i].flow,
              round);
        if (i < total / 2) {
            served[tags[i].flow]++;
        }
    }
    for (uint32_t flow = 0; flow < n_flows; flow++) {
        min = MIN(min, served[flow]);
        max = MAX(max, served[flow]);
    }
    CHECK(min && max <= 2 * min,
          "%"PRIu32" flows: served %"PRIu32" to %"PRIu32" packets each in "
          "the first half", n_flows, min, max);

    fixture_destroy(&f);
    free(served);
    free(tags);
    free(pkts);
}

static void
test_fair_many(void)
{
    check_fair(100, 20, 1024);
    check_fair(1024, 16, 16384);
    check_fair(1024, 16, 1024);
}

/* Issue 49 item A1: deficit round-robin in bytes.  Two backlogged flows,
 * one of 64-byte frames and one of 1500-byte frames, get the same bytes
 * out, within one quantum and one frame at any time, as long as both are
 * backlogged (served packet by packet, the second would get 23 times the
 * bytes of the first). */
static void
test_drr_bytes(void)
{
    enum { N_SMALL = 4000, N_BIG = 200 };
    static const size_t sizes[2] = { 64, 1500 };
    static const uint32_t counts[2] = { N_SMALL, N_BIG };
    struct dp_packet *pkts[N_SMALL + N_BIG];
    uint64_t bytes[2] = { 0, 0 }, both = 0;
    uint32_t left[2] = { N_SMALL, N_BIG };
    uint32_t next_seq[2] = { 0, 0 };
    struct fixture f;
    size_t k = 0;

    fixture_init(&f, 8192, 1024);
    /* Interleaved, so that both flows are in the first pull. */
    for (uint32_t i = 0; k < N_SMALL + N_BIG; i++) {
        for (uint32_t flow = 0; flow < 2; flow++) {
            if (i < counts[flow]) {
                pkts[k++] = make_frame(flow, i, flow + 1, sizes[flow]);
            }
        }
    }
    CHECK(send_packets(&f, pkts, k) == k, "not all enqueued");
    while (left[0] && left[1]) {
        struct dp_packet *out[NETDEV_MAX_BURST];
        unsigned int avail;
        int64_t budget = 0;
        size_t got;

        got = daqring_fq_dequeue(f.fq, f.ring, f.unshaped, &budget, out,
                                 NETDEV_MAX_BURST, &avail);
        CHECK(got, "nothing left with %"PRIu32" and %"PRIu32" queued",
              left[0], left[1]);
        for (size_t i = 0; i < got; i++) {
            struct tag tag = packet_tag(out[i]);
            uint64_t diff;

            CHECK(tag.flow < 2 && tag.seq == next_seq[tag.flow],
                  "flow %"PRIu32": packet %"PRIu32" out of order",
                  tag.flow, tag.seq);
            next_seq[tag.flow]++;
            left[tag.flow]--;
            bytes[tag.flow] += dp_packet_size(out[i]);
            dp_packet_delete(out[i]);
            if (left[0] && left[1]) {
                diff = (bytes[0] > bytes[1] ? bytes[0] - bytes[1]
                        : bytes[1] - bytes[0]);
                CHECK(diff <= DAQRING_FQ_QUANTUM + 1500,
                      "64-byte flow sent %"PRIu64" bytes, 1500-byte flow "
                      "%"PRIu64" bytes", bytes[0], bytes[1]);
                both++;
            }
        }
    }
    /* The 64-byte flow's 256000 bytes ran out first, after as many of the
     * other's. */
    CHECK(!left[0] && left[1] && both > N_SMALL / 2,
          "%"PRIu32" 64-byte and %"PRIu32" 1500-byte frames left",
          left[0], left[1]);
    fixture_destroy(&f);
}

/* Returns a TCP packet of flow 'flow', numbered 'seq', whose flow hash is
 * 'hash', with 'payload' bytes after Ethernet, IPv4 and TCP headers (54
 * bytes), parsed as the datapath leaves it, asking for TSO with segments
 * of 'segsz' bytes. */
static struct dp_packet *
make_tso_frame(uint32_t flow, uint32_t seq, uint32_t hash, size_t payload,
               uint16_t segsz)
{
    struct dp_packet *p = make_frame(flow, seq, hash, 54 + payload);
    struct tcp_header *tcp;

    dp_packet_set_l2_pad_size(p, 0);
    p->l3_ofs = ETH_HEADER_LEN;
    p->l4_ofs = ETH_HEADER_LEN + IP_HEADER_LEN;
    tcp = dp_packet_l4(p);
    tcp->tcp_ctl = TCP_CTL(0, 5);
    daqring_packet_set_tso(p, segsz);
    CHECK(daqring_packet_tso_segsz(p) == segsz, "TSO needs DPDK");
    return p;
}

/* Issue 49 item 6 in the flow buckets: a TSO packet takes from its flow's
 * credit the bytes it leaves the egress as, its segments each with the
 * packet's headers, as a byte shaper charges it.  A flow of TSO packets of
 * 10000 bytes of payload in segments of 200 (50 frames of 254 bytes, 12700
 * bytes where the packet is 10054) and a flow of 1500-byte frames, both
 * backlogged, get the same bytes on the wire, within one quantum and one
 * packet.  (Charged its length, the TSO flow got 26% more.) */
static void
test_drr_tso(void)
{
    enum { N_TSO = 100, N_BIG = 2000, TSO_WIRE = 50 * 254 };
    struct dp_packet *pkts[N_TSO + N_BIG];
    uint32_t left[2] = { N_TSO, N_BIG };
    uint32_t next_seq[2] = { 0, 0 };
    uint64_t bytes[2] = { 0, 0 };
    struct fixture f;
    size_t k = 0;

    fixture_init(&f, 4096, 1024);
    for (uint32_t i = 0; k < N_TSO + N_BIG; i++) {
        if (i < N_TSO) {
            pkts[k++] = make_tso_frame(0, i, 1, 10000, 200);
        }
        if (i < N_BIG) {
            pkts[k++] = make_frame(1, i, 2, 1500);
        }
    }
    CHECK(send_packets(&f, pkts, k) == k, "not all enqueued");
    pull_all(&f);
    while (left[0] && left[1]) {
        struct dp_packet *out[NETDEV_MAX_BURST];
        unsigned int avail;
        int64_t budget = 0;
        size_t got;

        got = daqring_fq_dequeue(f.fq, f.ring, f.unshaped, &budget, out,
                                 NETDEV_MAX_BURST, &avail);
        CHECK(got, "nothing left with %"PRIu32" and %"PRIu32" queued",
              left[0], left[1]);
        for (size_t i = 0; i < got; i++) {
            struct tag tag = packet_tag(out[i]);
            uint64_t diff;

            CHECK(tag.flow < 2 && tag.seq == next_seq[tag.flow],
                  "flow %"PRIu32": packet %"PRIu32" out of order",
                  tag.flow, tag.seq);
            next_seq[tag.flow]++;
            left[tag.flow]--;
            bytes[tag.flow] += tag.flow ? 1500 : TSO_WIRE;
            dp_packet_delete(out[i]);
            if (left[0] && left[1]) {
                diff = (bytes[0] > bytes[1] ? bytes[0] - bytes[1]
                        : bytes[1] - bytes[0]);
                CHECK(diff <= DAQRING_FQ_QUANTUM + TSO_WIRE,
                      "the TSO flow sent %"PRIu64" bytes on the wire, the "
                      "1500-byte flow %"PRIu64, bytes[0], bytes[1]);
            }
        }
    }
    fixture_destroy(&f);
}

/* Issue 49 item A2: a dequeue pulls at most DAQRING_FQ_PULL_MAX packets from
 * the ring into the flow queues, however many wait there (after a sleep, a
 * ring of a million packets must not cost a million cache misses in one
 * poll), and yet the ring empties into the queues, and every packet leaves
 * once, in order. */
static void
test_pull_bound(void)
{
    enum { N = 100 * DAQRING_FQ_PULL_MAX };
    struct dp_packet **pkts = xmalloc(N * sizeof *pkts);
    struct tag *tags = xmalloc(N * sizeof *tags);
    struct dp_packet *out[NETDEV_MAX_BURST];
    uint32_t next_seq[8] = { 0 };
    unsigned int avail;
    int64_t budget = 0;
    struct fixture f;
    size_t got, n = 0;

    fixture_init(&f, N, 1024);
    for (size_t i = 0; i < N; i++) {
        pkts[i] = make_packet(i % 8, i / 8);
    }
    CHECK(send_packets(&f, pkts, N) == N, "not all enqueued");

    got = daqring_fq_dequeue(f.fq, f.ring, f.unshaped, &budget, out,
                             NETDEV_MAX_BURST, &avail);
    CHECK(got == NETDEV_MAX_BURST, "%"PRIuSIZE" packets left", got);
    CHECK(rte_ring_count(f.ring) == N - DAQRING_FQ_PULL_MAX,
          "one dequeue pulled %u packets of %d from the ring, at most %d "
          "expected", N - rte_ring_count(f.ring), N, DAQRING_FQ_PULL_MAX);
    CHECK(avail == N - got, "avail %u, %"PRIuSIZE" expected", avail,
          N - got);
    for (size_t i = 0; i < got; i++) {
        tags[n++] = packet_tag(out[i]);
        dp_packet_delete(out[i]);
    }

    receive_packets(&f, tags, &n, N);
    CHECK(n == N, "%"PRIuSIZE" of %d packets left", n, N);
    for (size_t i = 0; i < n; i++) {
        CHECK(tags[i].seq == next_seq[tags[i].flow],
              "flow %"PRIu32": packet %"PRIu32" left when %"PRIu32" was due",
              tags[i].flow, tags[i].seq, next_seq[tags[i].flow]);
        next_seq[tags[i].flow]++;
    }
    fixture_destroy(&f);
    free(tags);
    free(pkts);
}

static void
run_tests(struct ovs_cmdl_context *ctx)
{
    static const struct {
        const char *name;
        void (*function)(void);
    } tests[] = {
        { "order", test_order },
        { "order-interleaved", test_order_interleaved },
        { "capacity", test_capacity },
        { "sparse", test_sparse },
        { "fair-many", test_fair_many },
        { "drr-bytes", test_drr_bytes },
        { "drr-tso", test_drr_tso },
        { "pull-bound", test_pull_bound },
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
test_daqring_fq_main(int argc, char *argv[])
{
    struct ovs_cmdl_context ctx = {
        .argc = argc - optind,
        .argv = argv + optind,
    };

    set_program_name(argv[0]);
    ovs_cmdl_run_command(&ctx, commands);
}

OVSTEST_REGISTER("test-daqring-fq", test_daqring_fq_main);
