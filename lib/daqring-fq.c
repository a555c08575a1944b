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

#include "daqring-fq.h"

#include <inttypes.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_ring.h>

#include "coverage.h"
#include "daqring-shaper.h"
#include "dp-packet.h"
#include "flow.h"
#include "ovs-atomic.h"
#include "util.h"

COVERAGE_DEFINE(daqring_fq_late);

/* Flow fairness ("flow-buckets"): the daqring serves the flows that have
 * packets queued round-robin, packet by packet, instead of first come,
 * first served.
 *
 * With a strict FIFO, a flow that sends after others filled the ring waits
 * for the whole backlog: in an incast, where every ROS answers a DCM's
 * request with its whole fragment at once, the first segment of the last
 * ROS, which carries the acknowledgement of the request, waits for the
 * whole event and the DCM's retransmission timer fires, and a ROS whose
 * segments all queued behind the others' waits longer than its own timer.
 * Served round-robin, the first segment of every ROS leaves within one
 * packet per other flow, and every ROS gets an acknowledgement every round.
 *
 * Flows are told apart by their RSS hash (the 5-tuple hash that
 * dpif-netdev computes for its flow caches, or the NIC's), in 'n_buckets'
 * buckets.  Ranks are rounds of a calendar: 'round' is the rank the polling
 * thread serves now, and a packet's rank is the round in which it leaves.
 * A packet whose bucket has nothing queued (a sparse flow, fq_codel's "new
 * flow") gets the current round; otherwise the rank after its bucket's
 * previous packet, but at least the current round and at most the last
 * round of the calendar's window (DAQRING_FQ_AHEAD rounds from the current
 * one), where a bucket with a deeper backlog queues the rest of it.  Round
 * R's packets go to rank ring R % DAQRING_FQ_RANKS.  The polling thread
 * dequeues from the first nonempty rank ring in round order, and moves
 * 'round' forward to it: the first packets of all backlogged flows, then
 * their second packets, and so on, while a flow that had nothing queued
 * joins the round being served.  So a flow's rank follows the service,
 * not its own history: a flow that stays backlogged for a long time keeps
 * its turn in every round instead of sinking behind flows that came later.
 *
 * The daqring's ring itself is the "bulk" ring, served only when all rank
 * rings are empty: a rank ring holds at most DAQRING_FQ_RANK_SIZE packets,
 * and the packets that do not fit go to the bulk ring, and so do their
 * buckets' next packets until the bucket has nothing queued.
 *
 * Order: a bucket's packets get nondecreasing ranks in the order they come
 * (equal ranks share a ring, which is a FIFO), so they leave in that order.
 * Senders enqueue a batch's packets in order and set the bit of each ring
 * in 'nonempty' right after enqueueing to it, so the polling thread never
 * sees a bucket's later packet in a later ring without its earlier packet's
 * ring marked; it clears a ring's bit when it emptied it and looks again.
 * A sender reads 'round' before it enqueues, so the polling thread may have
 * moved past the round it chose (that ring was empty a moment before): the
 * DAQRING_FQ_BEHIND rounds before the current one are therefore searched
 * first, oldest first, and a sender more than that many rounds late (i.e.
 * preempted while it enqueued) finds its packets served a calendar later,
 * counted by the coverage counter daqring_fq_late.  'queued' counts are
 * incremented by the senders (atomically: PMD threads send concurrently)
 * before they enqueue and decremented by the polling thread after it
 * dequeued.  Flows that share a bucket share its ranks, never their order.
 *
 * Capacity: 'total' counts the packets in all rings (reserved by senders
 * before they enqueue), at most the capacity of the daqring's ring, so
 * "ring-size" bounds the backlog exactly as for a FIFO and the bulk ring is
 * never full.  The stash is served before all rings and is not counted. */
#define DAQRING_FQ_RANKS 127
#define DAQRING_FQ_BEHIND 16
#define DAQRING_FQ_AHEAD (DAQRING_FQ_RANKS - DAQRING_FQ_BEHIND)
#define DAQRING_FQ_RANK_SIZE 256
#define DAQRING_FQ_WORDS ((DAQRING_FQ_RANKS + 64) / 64)
#define DAQRING_FQ_BULK UINT64_MAX  /* The rank of the bulk ring. */

struct daqring_fq_bucket {
    atomic_uint32_t queued;     /* Packets of the bucket in all rings. */
    atomic_uint32_t owner;      /* Hash of the flow that took it last. */
    atomic_uint64_t last_rank;  /* Rank of its last packet enqueued. */
};

struct daqring_fq {
    uint32_t n_buckets;         /* A power of 2. */
    uint32_t mask;              /* 'n_buckets - 1'. */
    atomic_uint32_t total;      /* Packets in all rings, see above. */
    atomic_uint64_t round;      /* Rank served now, at least
                                 * DAQRING_FQ_BEHIND.  Written only by the
                                 * polling thread. */
    atomic_uint64_t nonempty[DAQRING_FQ_WORDS]; /* Bit R: ring of rank R may
                                                 * have packets. */
    struct rte_ring *rank[DAQRING_FQ_RANKS]; /* Rank rings. */
    struct daqring_fq_bucket buckets[];      /* 'n_buckets' buckets. */
};

/* Deletes every packet in 'ring'.  Returns the number of packets. */
static size_t
daqring_fq_purge(struct rte_ring *ring)
{
    struct dp_packet *pkts[NETDEV_MAX_BURST];
    size_t total = 0;
    unsigned int n;

    while ((n = rte_ring_sc_dequeue_burst(ring, (void **) pkts,
                                          NETDEV_MAX_BURST, NULL))) {
        for (unsigned int i = 0; i < n; i++) {
            dp_packet_delete(pkts[i]);
        }
        total += n;
    }
    return total;
}

/* Allocates flow fairness state for 'n_buckets' flow buckets (a power of
 * 2) of the daqring named 'name'.  Returns it, or NULL with an error
 * message in '*errp'.
 *
 * Unlike the daqring's ring, the rank rings and the buckets live in
 * ordinary memory, not DPDK's: they hold only pointers, used by the
 * threads of this process, and a daqring with flow fairness takes about
 * 530 KiB of rank rings and 8 bytes per bucket, of which only the pages in
 * use become resident (calloc() and unwritten ring slots), whereas
 * thousands of DCM rings would exhaust dpdk-socket-mem. */
struct daqring_fq *
daqring_fq_create(const char *name, uint32_t n_buckets, char **errp)
{
    uint32_t size = DAQRING_FQ_RANK_SIZE;
    ssize_t memsize = rte_ring_get_memsize(rte_align32pow2(size + 1));
    struct daqring_fq *fq;

    if (memsize < 0) {
        *errp = xasprintf("%s: cannot size rank rings of %"PRIu32
                          " packets", name, size);
        return NULL;
    }
    /* Zeroed memory is a valid initial state of the atomics (0), so that
     * calloc() need not touch the pages of the buckets. */
    fq = xcalloc(1, sizeof *fq + n_buckets * sizeof fq->buckets[0]);
    fq->n_buckets = n_buckets;
    fq->mask = n_buckets - 1;
    atomic_init(&fq->round, DAQRING_FQ_BEHIND);
    for (int r = 0; r < DAQRING_FQ_RANKS; r++) {
        char ring_name[RTE_RING_NAMESIZE];
        int error;

        snprintf(ring_name, sizeof ring_name, "daqrank%d", r);
        fq->rank[r] = xmalloc_cacheline(memsize);
        error = rte_ring_init(fq->rank[r], ring_name, size,
                              RING_F_MP_RTS_ENQ | RING_F_SC_DEQ
                              | RING_F_EXACT_SZ);
        if (error) {
            *errp = xasprintf("%s: cannot initialize rank rings (%s)",
                              name, rte_strerror(-error));
            free_cacheline(fq->rank[r]);
            fq->rank[r] = NULL;
            daqring_fq_destroy(fq);
            return NULL;
        }
    }
    return fq;
}

/* Frees 'fq' and every packet in its rank rings.  Returns the number of
 * packets. */
size_t
daqring_fq_destroy(struct daqring_fq *fq)
{
    size_t total = 0;

    if (!fq) {
        return 0;
    }
    for (int r = 0; r < DAQRING_FQ_RANKS && fq->rank[r]; r++) {
        total += daqring_fq_purge(fq->rank[r]);
        free_cacheline(fq->rank[r]);
    }
    free(fq);
    return total;
}

/* Returns the flow hash of 'packet': its RSS hash, or, for a packet without
 * a valid one (e.g. a packet-out; dpif-netdev computes the hash of the
 * others for its flow caches), the 5-tuple hash that dpif-netdev would have
 * computed for it. */
static inline uint32_t
daqring_fq_hash(struct dp_packet *packet)
{
    if (OVS_UNLIKELY(!dp_packet_rss_valid(packet))) {
        struct flow flow;

        flow_extract(packet, &flow);
        dp_packet_set_rss_hash(packet, flow_hash_5tuple(&flow, 0));
    }
    return dp_packet_get_rss_hash(packet);
}

/* Chooses the bucket of 'fq' for 'packet', records it in the packet and
 * returns it.  Called by senders, with the packet's bucket counted right
 * after (the caller increments its 'queued').
 *
 * A flow has two candidate buckets, from the low and the high half of its
 * 32-bit hash: the one that it owns and that has packets queued, else one
 * that has nothing queued (which it then owns), else the first, shared with
 * its owner.  Two flows thus share a bucket (and the second waits behind
 * the first) only if both buckets of one of them are busy with other flows:
 * with F flows in N buckets about F^3 / N^2 instead of F^2 / 2N.  A flow that
 * shares a bucket and then finds its other bucket free while it still has
 * packets in the shared one can see its new packets leave first.
 *
 * The bucket is recorded in the packet's flow mark field, unused while the
 * packet waits (netdev_daqring_reenter() clears it, and the datapath does not
 * read it without DP_PACKET_OL_FLOW_MARK), so that the polling thread
 * uncounts the packet from the bucket that counted it. */
static inline struct daqring_fq_bucket *
daqring_fq_choose(struct daqring_fq *fq, struct dp_packet *packet)
{
    uint32_t hash = daqring_fq_hash(packet);
    uint32_t idx[2] = { hash & fq->mask, ((hash >> 16) | (hash << 16))
                                         & fq->mask };
    uint32_t queued[2], owner;
    int i;

    for (i = 0; i < 2; i++) {
        atomic_read_relaxed(&fq->buckets[idx[i]].queued, &queued[i]);
        atomic_read_relaxed(&fq->buckets[idx[i]].owner, &owner);
        if (queued[i] && owner == hash) {
            goto found;
        }
    }
    for (i = 0; i < 2; i++) {
        if (!queued[i]) {
            atomic_store_relaxed(&fq->buckets[idx[i]].owner, hash);
            goto found;
        }
    }
    i = 0;

found:
    *dp_packet_flow_mark_ptr(packet) = idx[i];
    return &fq->buckets[idx[i]];
}

/* Returns the bucket of 'fq' that counted 'packet' (see
 * daqring_fq_choose()). */
static inline struct daqring_fq_bucket *
daqring_fq_bucket(struct daqring_fq *fq, const struct dp_packet *packet)
{
    uint32_t idx = *dp_packet_flow_mark_ptr(packet);

    return &fq->buckets[idx & fq->mask];
}

/* Returns the index of the ring of rank 'rank' (DAQRING_FQ_RANKS for the
 * bulk ring). */
static inline int
daqring_fq_index(uint64_t rank)
{
    return rank == DAQRING_FQ_BULK ? DAQRING_FQ_RANKS
                                   : rank % DAQRING_FQ_RANKS;
}

/* Returns the ring with index 'r' of 'fq' over daqring ring 'ring'. */
static inline struct rte_ring *
daqring_fq_ring(const struct daqring_fq *fq, struct rte_ring *ring, int r)
{
    return r < DAQRING_FQ_RANKS ? fq->rank[r] : ring;
}

/* Marks the ring with index 'r' of 'fq' as possibly nonempty.  Called after
 * enqueueing to it. */
static inline void
daqring_fq_mark(struct daqring_fq *fq, int r)
{
    uint64_t bit = UINT64_C(1) << (r % 64);
    uint64_t bits, orig;

    /* Orders the enqueue before the read: see daqring_fq_unmark(). */
    atomic_thread_fence(memory_order_seq_cst);
    atomic_read_relaxed(&fq->nonempty[r / 64], &bits);
    if (!(bits & bit)) {
        atomic_or(&fq->nonempty[r / 64], bit, &orig);
    }
}

/* Called by the polling thread when it found the ring with index 'r' of
 * 'fq' over daqring ring 'ring' empty: clears its mark, then looks again,
 * so that a packet that a sender enqueued meanwhile, and did not mark
 * because the mark was still set, is not overlooked. */
static inline void
daqring_fq_unmark(struct daqring_fq *fq, struct rte_ring *ring, int r)
{
    uint64_t bit = UINT64_C(1) << (r % 64);
    uint64_t orig;

    atomic_and(&fq->nonempty[r / 64], ~bit, &orig);
    /* The clear and the look that follows are one half of a store-load
     * pattern (Dekker's) whose other half is daqring_fq_mark(): a
     * sender stores to a ring (its tail), then loads the mark; this thread
     * stores the mark (the clear), then loads the ring's tail.  At least
     * one of the two loads must see the other thread's store, or the
     * sender skips the mark (still set) while this thread finds the ring
     * empty (the enqueue not yet visible), and the packet stays unmarked
     * until the next one comes.  That needs a full barrier between the
     * store and the load on both sides.  The sender has its fence.  Here,
     * the read-modify-write is one on x86 (a locked instruction), but on
     * weakly ordered CPUs (Arm, POWER) a sequentially consistent
     * read-modify-write only orders the accesses before it and its own
     * load: the ring's tail, read by rte_ring_empty() with a plain load,
     * may then be read before the clear is visible to the senders. */
    atomic_thread_fence(memory_order_seq_cst);
    if (!rte_ring_empty(daqring_fq_ring(fq, ring, r))) {
        atomic_or(&fq->nonempty[r / 64], bit, &orig);
    }
}

/* Returns the rank a packet of bucket 'b' takes in round 'round', given
 * 'orig', the number of packets of the bucket queued before it. */
static inline uint64_t
daqring_fq_rank(struct daqring_fq_bucket *b, uint32_t orig, uint64_t round)
{
    uint64_t last;

    if (!orig) {
        return round;
    }
    atomic_read_relaxed(&b->last_rank, &last);
    if (last == DAQRING_FQ_BULK) {
        return DAQRING_FQ_BULK;
    }
    /* A bucket that already has a packet in the window's last round (only
     * if another thread's round was behind this one's) keeps it. */
    return MIN(MAX(last + 1, round),
               MAX(round + DAQRING_FQ_AHEAD - 1, last));
}

/* Enqueues the 'n' packets of 'pkts', all of rank 'rank' under 'fq' over
 * daqring ring 'ring', and marks the ring.  A rank ring that is full hands
 * the packets that do not fit to 'ring', the bulk ring, and their buckets'
 * next packets follow them there, so that they stay in order.  Returns
 * true in that case. */
static bool
daqring_fq_enqueue_rank(struct daqring_fq *fq, struct rte_ring *ring,
                        uint64_t rank, struct dp_packet **pkts, size_t n)
{
    int r = daqring_fq_index(rank);
    unsigned int sent;

    sent = rte_ring_mp_rts_enqueue_burst(daqring_fq_ring(fq, ring, r),
                                         (void *const *) pkts, n, NULL);
    daqring_fq_mark(fq, r);
    if (rank != DAQRING_FQ_BULK && sent) {
        uint64_t round;

        atomic_read_relaxed(&fq->round, &round);
        if (OVS_UNLIKELY(rank + DAQRING_FQ_BEHIND < round)) {
            COVERAGE_INC(daqring_fq_late);
        }
    }
    if (OVS_UNLIKELY(sent < n)) {
        for (size_t j = sent; j < n; j++) {
            atomic_store_relaxed(
                &daqring_fq_bucket(fq, pkts[j])->last_rank,
                DAQRING_FQ_BULK);
        }
        while (sent < n) {
            /* Never full: the caller reserved room. */
            sent += rte_ring_mp_rts_enqueue_burst(
                ring, (void *const *) &pkts[sent], n - sent, NULL);
        }
        daqring_fq_mark(fq, DAQRING_FQ_RANKS);
        return true;
    }
    return false;
}

/* Enqueues the 'cnt' (at most NETDEV_MAX_BURST) packets of 'pkts' into
 * daqring ring 'ring' and the rank rings of 'fq', each at its rank (see
 * struct daqring_fq), as long as the backlog stays within the capacity of
 * 'ring'.  Returns the number of packets enqueued, the first ones of
 * 'pkts'; the caller still owns the others. */
unsigned int
daqring_fq_enqueue(struct daqring_fq *fq, struct rte_ring *ring,
                   struct dp_packet **pkts, size_t cnt)
{
    uint32_t limit = rte_ring_get_capacity(ring);
    uint64_t run_rank = 0, round;
    size_t allowed, start = 0;
    uint32_t orig;

    /* Reserve room in the backlog. */
    atomic_add(&fq->total, cnt, &orig);
    allowed = cnt;
    if (OVS_UNLIKELY(orig + cnt > limit)) {
        allowed = orig < limit ? limit - orig : 0;
        atomic_sub(&fq->total, cnt - allowed, &orig);
    }

    /* In order, one burst per run of equal ranks, each enqueued and marked
     * before the next packet's rank is computed. */
    atomic_read_relaxed(&fq->round, &round);
    for (size_t i = 0; i < allowed; i++) {
        struct daqring_fq_bucket *b = daqring_fq_choose(fq, pkts[i]);
        uint64_t rank;

        atomic_add_relaxed(&b->queued, 1, &orig);
        rank = daqring_fq_rank(b, orig, round);
        if (!i || rank != run_rank) {
            if (i > start
                && daqring_fq_enqueue_rank(fq, ring, run_rank,
                                           &pkts[start], i - start)
                && orig) {
                /* The run may have sent this bucket's previous packet to
                 * the bulk ring. */
                rank = daqring_fq_rank(b, orig, round);
            }
            start = i;
            run_rank = rank;
        }
        atomic_store_relaxed(&b->last_rank, rank);
    }
    if (allowed > start) {
        daqring_fq_enqueue_rank(fq, ring, run_rank, &pkts[start],
                                allowed - start);
    }
    return allowed;
}

/* Returns the bits of word 'w' of a ring bitmap for the ring indexes in
 * ['from', 'to'). */
static inline uint64_t
daqring_fq_word_mask(int w, int from, int to)
{
    int lo = MAX(from - w * 64, 0);
    int hi = MIN(to - w * 64, 64);

    if (hi <= lo) {
        return 0;
    }
    return (hi == 64 ? UINT64_MAX : (UINT64_C(1) << hi) - 1)
           & ~((UINT64_C(1) << lo) - 1);
}

/* Returns the lowest index in ['from', 'to') of a rank ring of 'fq' marked
 * nonempty, or -1. */
static inline int
daqring_fq_find(struct daqring_fq *fq, int from, int to)
{
    for (int w = from / 64; w * 64 < to; w++) {
        uint64_t bits;

        atomic_read_relaxed(&fq->nonempty[w], &bits);
        bits &= daqring_fq_word_mask(w, from, to);
        if (bits) {
            return w * 64 + raw_ctz(bits);
        }
    }
    return -1;
}

/* Finds the ring that the polling thread of 'fq' serves next: the first
 * rank ring marked nonempty in round order, from DAQRING_FQ_BEHIND rounds
 * before the current one (see struct daqring_fq), or else the bulk ring if
 * it is marked.  Stores its rank in '*rankp' and moves the current round
 * forward to it, or returns false if no ring is marked.  Called only by the
 * polling thread. */
static inline bool
daqring_fq_next(struct daqring_fq *fq, uint64_t *rankp)
{
    uint64_t round, oldest;
    int start, r;

    atomic_read_relaxed(&fq->round, &round);
    oldest = round - DAQRING_FQ_BEHIND;
    start = oldest % DAQRING_FQ_RANKS;
    r = daqring_fq_find(fq, start, DAQRING_FQ_RANKS);
    if (r >= 0) {
        *rankp = oldest + (r - start);
    } else {
        r = daqring_fq_find(fq, 0, start);
        if (r < 0) {
            *rankp = DAQRING_FQ_BULK;
            return daqring_fq_find(fq, DAQRING_FQ_RANKS,
                                          DAQRING_FQ_RANKS + 1) >= 0;
        }
        *rankp = oldest + (r + DAQRING_FQ_RANKS - start);
    }
    if (*rankp > round) {
        atomic_store_relaxed(&fq->round, *rankp);
    }
    return true;
}

/* Dequeues like daqring_shaper_dequeue() from the lowest nonempty rank
 * ring of 'fq' first (see struct daqring_fq), then from daqring ring
 * 'ring', and uncounts the packets.  Stores in '*avail' the number of
 * packets left.  Called only by the polling thread. */
size_t
daqring_fq_dequeue(struct daqring_fq *fq, struct rte_ring *ring,
                   const struct daqring_shaper *s, int64_t *budget,
                   struct dp_packet **pkts, size_t n, unsigned int *avail)
{
    size_t got = 0;
    uint32_t orig;

    while (got < n && (!s->rate || *budget > 0)) {
        unsigned int left, k;
        uint64_t rank;
        int r;

        if (!daqring_fq_next(fq, &rank)) {
            break;
        }
        r = daqring_fq_index(rank);
        k = daqring_shaper_dequeue(daqring_fq_ring(fq, ring, r),
                                   s, budget, &pkts[got], n - got, &left);
        got += k;
        if (!left) {
            daqring_fq_unmark(fq, ring, r);
        } else if (!k) {
            break;              /* The byte shaper's budget ran out. */
        }
    }

    for (size_t i = 0; i < got; i++) {
        struct daqring_fq_bucket *b = daqring_fq_bucket(fq, pkts[i]);

        atomic_sub_relaxed(&b->queued, 1, &orig);
    }
    atomic_sub(&fq->total, got, &orig);
    *avail = orig - got;
    return got;
}

/* Returns the number of packets that 'fq' counts in its rings and the
 * daqring ring.  May be called from any thread; the result is a
 * snapshot. */
uint32_t
daqring_fq_count(const struct daqring_fq *fq)
{
    uint32_t total;

    atomic_read_relaxed(&CONST_CAST(struct daqring_fq *, fq)->total, &total);
    return total;
}

/* Dequeues every packet from the rank rings of 'fq' into 'pkts', which has
 * room for them, round by round from the oldest one the polling thread
 * would look at, so that each bucket's packets stay in order, and returns
 * their number.  The packets in the daqring ring (the bulk ring) follow
 * them; the caller dequeues those.  Only while no thread sends or
 * receives. */
size_t
daqring_fq_drain(struct daqring_fq *fq, struct dp_packet **pkts)
{
    uint64_t round;
    size_t n = 0;
    int start;

    atomic_read_relaxed(&fq->round, &round);
    start = (round - DAQRING_FQ_BEHIND) % DAQRING_FQ_RANKS;
    for (int i = 0; i < DAQRING_FQ_RANKS; i++) {
        struct rte_ring *ring = fq->rank[(start + i) % DAQRING_FQ_RANKS];
        unsigned int got;

        do {
            got = rte_ring_sc_dequeue_burst(ring, (void **) &pkts[n],
                                            NETDEV_MAX_BURST, NULL);
            n += got;
        } while (got);
    }
    return n;
}

/* Makes 'fq', whose rank rings are empty, count the 'n' packets of 'pkts'
 * as the backlog that the caller puts into the daqring ring (the bulk ring),
 * in that order: their buckets' next packets then follow them there.  Only
 * while no thread sends or receives. */
void
daqring_fq_restart(struct daqring_fq *fq, struct dp_packet **pkts, size_t n)
{
    for (uint32_t i = 0; i < fq->n_buckets; i++) {
        atomic_store_relaxed(&fq->buckets[i].queued, 0);
    }
    for (size_t i = 0; i < n; i++) {
        struct daqring_fq_bucket *b = daqring_fq_choose(fq, pkts[i]);
        uint32_t orig;

        atomic_add_relaxed(&b->queued, 1, &orig);
        atomic_store_relaxed(&b->last_rank, DAQRING_FQ_BULK);
    }
    atomic_store_relaxed(&fq->total, n);
    for (int i = 0; i < DAQRING_FQ_WORDS; i++) {
        atomic_store_relaxed(&fq->nonempty[i], 0);
    }
    if (n) {
        daqring_fq_mark(fq, DAQRING_FQ_RANKS);
    }
}

/* Returns the number of flow buckets of 'fq'. */
uint32_t
daqring_fq_n_buckets(const struct daqring_fq *fq)
{
    return fq->n_buckets;
}
