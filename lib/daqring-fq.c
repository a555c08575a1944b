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

#include <rte_ring.h>

#include "daqring-shaper.h"
#include "dp-packet.h"
#include "flow.h"
#include "ovs-atomic.h"
#include "packets.h"
#include "util.h"

/* Flow fairness ("flow-buckets"): the daqring serves the flows that have
 * packets queued in turns, a quantum of bytes per flow per round (deficit
 * round-robin), instead of first come, first served.
 *
 * With a strict FIFO, a flow that sends after others filled the ring waits
 * for the whole backlog: in an incast, where every ROS answers a DCM's
 * request with its whole fragment at once, the first segment of the last
 * ROS, which carries the acknowledgement of the request, waits for the
 * whole event and the DCM's retransmission timer fires, and a ROS whose
 * segments all queued behind the others' waits longer than its own timer.
 * Served in turns, the first segment of every ROS leaves within one
 * quantum per other flow, and every ROS gets an acknowledgement every
 * round.
 *
 * Invariant: per-flow FIFO order.  The packets of a flow (packets with the
 * same flow hash) leave in the order in which they arrived, whatever the
 * other flows do.  The ring is a FIFO and each bucket's queue too, so it
 * suffices that all the packets of a flow that are queued at any time are
 * in one bucket: a flow changes buckets only when it has no packet queued.
 * (Until issue 49, a flow that shared its first bucket with the flow that
 * held it moved to its second one as soon as that emptied, and its new
 * packets overtook those still queued in the first: duplicate ACKs and
 * spurious fast retransmits in exactly the incast flow fairness serves.)
 *
 * Senders only enqueue into the daqring's ring, a multi-producer FIFO, as
 * without flow fairness; the polling thread, its single consumer, does the
 * scheduling, in memory of its own.  At each dequeue it moves at most
 * DAQRING_FQ_PULL_MAX packets (4 batches) from the ring to the queue of
 * their flow's bucket ("pulls"), oldest first: reading a packet's hash
 * costs a cache miss, and a ring that filled while the thread slept (a
 * million packets) must not stall the thread's other receive queues for
 * one poll.  As a dequeue takes at most one batch out, the ring still
 * empties into the queues at 3 batches per poll or more; until then, a
 * packet in the ring waits for those ahead of it in the ring to be pulled
 * (first come, first served), not for the queues.
 *
 * The buckets that have packets queued form a round, served by deficit
 * round-robin in bytes: a bucket joins the back of the round, when it gets
 * a packet while it had nothing queued, with a credit ("deficit") of one
 * quantum, DAQRING_FQ_QUANTUM bytes (a full frame of a 1500-byte MTU).  The
 * bucket at the front sends its packets while their length (at least
 * DAQRING_MIN_FRAME_LEN each; for a TSO packet, the bytes of the segments
 * it leaves as, each with its headers) fits in its credit, taking it from
 * the credit; when the next one does not fit, its turn ends: it gets one more
 * quantum, carried over with what it did not use, and goes to the back.  A
 * bucket leaves the round, and loses its credit, when its queue empties.
 * So every backlogged flow gets the same bytes per round, within one
 * frame, whatever the sizes of its frames (a flow of 64-byte frames sends
 * 23 of them per turn, a flow of 1500-byte frames one), a sparse flow (a
 * bucket that had nothing queued, fq_codel's "new flow") gets its first
 * packet out after at most one quantum of every backlogged flow, however
 * many flows there are, up to the number of buckets, and a frame longer
 * than a quantum (a jumbo frame) leaves after as many turns as it takes
 * quanta.  A turn may span dequeues: the bucket at the front keeps its
 * place and its credit when the batch or the byte budget ends.  (An
 * earlier design let the senders place packets in a calendar of rank rings
 * of 256 packets each; past 256 backlogged flows, the others waited behind
 * all of them, issue 25 item B2.  Until issue 49 the quantum was one
 * packet, which gave a flow of jumbo frames 140 times the bytes of a flow
 * of 64-byte acknowledgements.)
 *
 * Flows are told apart by their RSS hash (the 5-tuple hash that
 * dpif-netdev computes for its flow caches, or the NIC's; the sender
 * computes it for packets without one, while the packet is in its cache),
 * in 'n_buckets' buckets.  A flow has two candidate buckets, from the low
 * and the high half of its 32-bit hash, and each bucket records the flow
 * that holds it ('owner', the first flow that queued a packet in it while
 * it was empty), how many packets it has queued ('n') and how many of
 * those are the owner's ('n_owner'); the others are "guests", flows that
 * share it.  A packet goes to:
 *
 *   1. the candidate its flow holds with packets queued, if any;
 *
 *   2. else the second candidate, if it is empty and the first holds only
 *      its owner's packets (the flow then holds the second);
 *
 *   3. else the first (which the flow holds if it is empty, else shares).
 *
 * A flow is a guest only in its first candidate, so if a flow has packets
 * queued, they are in the bucket it holds (rule 1), or, as a guest, in its
 * first candidate, which then has guests, so rule 2 does not apply and
 * rule 3 keeps the flow there: all its queued packets are in one bucket,
 * and it holds the second only after its packets in the first left.  (The
 * counts are conservative: a flow whose first candidate has guests of
 * other flows queues there too, behind them, although its second one may
 * be free.)  Two flows thus share a bucket (and the second waits behind the
 * first) only if both buckets of one of them are busy with other flows:
 * with F flows in N buckets about F^3 / N^2 instead of F^2 / 2N.
 *
 * Capacity: 'total' counts the packets in the ring and the queues
 * (reserved by senders before they enqueue, released by the polling
 * thread when they leave), at most the capacity of the daqring's ring, so
 * "ring-size" bounds the backlog exactly as for a FIFO, the ring is never
 * full, and the queues need at most that many slots.
 *
 * Memory: the slots of the queues (12 bytes per packet of the ring's
 * capacity) and the buckets (28 bytes each) are ordinary memory, not
 * DPDK's, and only the part in use becomes resident: slots are handed out
 * from the lowest index up and reused before new ones, and the buckets are
 * calloc()ed. */

BUILD_ASSERT_DECL(DAQRING_FQ_PULL_MAX == 4 * NETDEV_MAX_BURST);
BUILD_ASSERT_DECL(DAQRING_FQ_QUANTUM == ETH_TOTAL_MAX);

struct daqring_fq_bucket {
    uint32_t head;              /* First slot of the queue, 0 if empty. */
    uint32_t tail;              /* Last slot of the queue. */
    uint32_t next;              /* Next bucket in the round, plus 1, or 0
                                 * for the last one. */
    uint32_t owner;             /* Hash of the flow that holds it. */
    uint32_t n;                 /* Packets queued. */
    uint32_t n_owner;           /* Those of 'n' whose hash is 'owner'. */
    int32_t deficit;            /* Bytes it may still send in its turn. */
};

struct daqring_fq {
    uint32_t n_buckets;         /* A power of 2. */
    uint32_t mask;              /* 'n_buckets - 1'. */
    atomic_uint32_t total;      /* Packets in the ring and the queues, see
                                 * above. */

    /* Owned by the polling thread (and by the main thread while nothing
     * sends or receives, see daqring_fq_drain()).  Slot 0 is unused, so
     * that 0 means "none". */
    uint32_t n_slots;           /* Slots allocated, plus 1. */
    uint32_t n_used;            /* Slots ever handed out, plus 1. */
    uint32_t free;              /* First free slot of those, or 0. */
    struct dp_packet **packet;  /* Packet of each slot. */
    uint32_t *next;             /* Next slot of its queue (or of the free
                                 * list), or 0. */
    uint32_t first;             /* First bucket of the round, plus 1, or 0
                                 * if no bucket has packets queued. */
    uint32_t last;              /* Last bucket of the round, plus 1. */
    struct daqring_fq_bucket buckets[]; /* 'n_buckets' buckets. */
};

/* Allocates 'fq''s slots for a ring of 'capacity' packets; the queues must
 * be empty. */
static void
daqring_fq_alloc_slots(struct daqring_fq *fq, uint32_t capacity)
{
    free(fq->packet);
    free(fq->next);
    fq->n_slots = capacity + 1;
    fq->n_used = 1;
    fq->free = 0;
    fq->packet = xmalloc(fq->n_slots * sizeof *fq->packet);
    fq->next = xmalloc(fq->n_slots * sizeof *fq->next);
}

/* Allocates flow fairness state for 'n_buckets' flow buckets (a power of
 * 2) of the daqring named 'name', whose ring holds 'capacity' packets.
 * Returns it, or NULL with an error message in '*errp'. */
struct daqring_fq *
daqring_fq_create(const char *name, uint32_t n_buckets, uint32_t capacity,
                  char **errp)
{
    struct daqring_fq *fq;

    if (!is_pow2(n_buckets) || capacity >= UINT32_MAX) {
        *errp = xasprintf("%s: cannot serve %"PRIu32" flow buckets over a "
                          "ring of %"PRIu32" packets", name, n_buckets,
                          capacity);
        return NULL;
    }
    /* Zeroed buckets are empty and out of the round, so that calloc() need
     * not touch their pages. */
    fq = xcalloc(1, sizeof *fq + n_buckets * sizeof fq->buckets[0]);
    fq->n_buckets = n_buckets;
    fq->mask = n_buckets - 1;
    atomic_init(&fq->total, 0);
    daqring_fq_alloc_slots(fq, capacity);
    return fq;
}

/* Returns the bytes that 'packet' takes from its bucket's credit: the
 * bytes of the frames it leaves the egress as, without the frame overhead,
 * as a byte shaper counts them (see daqring_packet_wire_bytes()): its
 * length, at least DAQRING_MIN_FRAME_LEN, or, for a TSO packet, its
 * segments, each with the packet's headers. */
static inline int32_t
daqring_fq_cost(const struct dp_packet *packet)
{
    return daqring_packet_wire_bytes(packet, 0);
}

/* Removes the packet that leaves next, by deficit round-robin, and returns
 * it: the first packet of the bucket at the front of the round, once it
 * fits in that bucket's credit (ending turns until one does).  A bucket
 * that empties leaves the round.  The round must not be empty. */
static inline struct dp_packet *
daqring_fq_pop(struct daqring_fq *fq)
{
    struct daqring_fq_bucket *b;
    struct dp_packet *packet;
    uint32_t idx, slot;
    int32_t cost;

    for (;;) {
        idx = fq->first;
        b = &fq->buckets[idx - 1];
        packet = fq->packet[b->head];
        cost = daqring_fq_cost(packet);
        if (cost <= b->deficit) {
            break;
        }
        /* The bucket's turn ends: one more quantum, and to the back of the
         * round, if others follow. */
        b->deficit += DAQRING_FQ_QUANTUM;
        if (b->next) {
            fq->first = b->next;
            b->next = 0;
            fq->buckets[fq->last - 1].next = idx;
            fq->last = idx;
        }
    }

    b->deficit -= cost;
    slot = b->head;
    b->head = fq->next[slot];
    fq->next[slot] = fq->free;
    fq->free = slot;
    b->n--;
    if (dp_packet_get_rss_hash(packet) == b->owner) {
        b->n_owner--;
    }

    if (!b->head) {
        /* Empty: out of the round. */
        fq->first = b->next;
        b->next = 0;
    }
    return packet;
}

/* Frees 'fq' and every packet in its queues (not those in the ring).
 * Returns the number of packets. */
size_t
daqring_fq_destroy(struct daqring_fq *fq)
{
    size_t total = 0;

    if (!fq) {
        return 0;
    }
    while (fq->first) {
        dp_packet_delete(daqring_fq_pop(fq));
        total++;
    }
    free(fq->packet);
    free(fq->next);
    free(fq);
    return total;
}

/* Returns the flow hash of 'packet': its RSS hash, or, for a packet without
 * a valid one (e.g. a packet-out; dpif-netdev computes the hash of the
 * others for its flow caches), the 5-tuple hash that dpif-netdev would have
 * computed for it, which it then stores in the packet. */
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

/* Returns the index of the bucket of 'fq' for a packet with flow hash
 * 'hash': see "A packet goes to" above. */
static inline uint32_t
daqring_fq_choose(const struct daqring_fq *fq, uint32_t hash)
{
    uint32_t idx0 = hash & fq->mask;
    uint32_t idx1 = ((hash >> 16) | (hash << 16)) & fq->mask;
    const struct daqring_fq_bucket *b0 = &fq->buckets[idx0];
    const struct daqring_fq_bucket *b1 = &fq->buckets[idx1];

    if (b0->n_owner && b0->owner == hash) {
        return idx0;
    }
    if (b1->n_owner && b1->owner == hash) {
        return idx1;
    }
    if (b0->n && b0->n == b0->n_owner && !b1->n) {
        return idx1;
    }
    return idx0;
}

/* Appends 'packet' to the queue of its bucket, and the bucket to the back
 * of the round, with a quantum of credit, if it had nothing queued.  There
 * must be a free slot. */
static inline void
daqring_fq_push(struct daqring_fq *fq, struct dp_packet *packet)
{
    uint32_t hash = dp_packet_get_rss_hash(packet);
    uint32_t idx = daqring_fq_choose(fq, hash);
    struct daqring_fq_bucket *b = &fq->buckets[idx];
    uint32_t slot;

    if (fq->free) {
        slot = fq->free;
        fq->free = fq->next[slot];
    } else {
        ovs_assert(fq->n_used < fq->n_slots);
        slot = fq->n_used++;
    }
    fq->packet[slot] = packet;
    fq->next[slot] = 0;

    if (b->head) {
        fq->next[b->tail] = slot;
    } else {
        b->head = slot;
        b->next = 0;
        b->owner = hash;
        b->deficit = DAQRING_FQ_QUANTUM;
        if (fq->first) {
            fq->buckets[fq->last - 1].next = idx + 1;
        } else {
            fq->first = idx + 1;
        }
        fq->last = idx + 1;
    }
    b->tail = slot;
    b->n++;
    if (b->owner == hash) {
        b->n_owner++;
    }
}

/* Moves up to 'max' packets, the oldest, from daqring ring 'ring' to the
 * queues of 'fq'.  Called only by the ring's consumer. */
static void
daqring_fq_pull(struct daqring_fq *fq, struct rte_ring *ring, size_t max)
{
    struct dp_packet *pkts[NETDEV_MAX_BURST];
    unsigned int n;

    /* 'total' <= the ring's capacity < 'n_slots': never out of slots. */
    while (max && (n = rte_ring_sc_dequeue_burst(ring, (void **) pkts,
                                                 MIN(max, NETDEV_MAX_BURST),
                                                 NULL))) {
        for (unsigned int i = 0; i < n; i++) {
            OVS_PREFETCH(pkts[i]);
        }
        for (unsigned int i = 0; i < n; i++) {
            daqring_fq_push(fq, pkts[i]);
        }
        max -= n;
    }
}

/* Enqueues the 'cnt' packets of 'pkts' into daqring ring 'ring' under
 * flow fairness 'fq', as long as the backlog stays within the capacity of
 * 'ring'.  Returns the number of packets enqueued, the first ones of
 * 'pkts'; the caller still owns the others.  Any thread may call this. */
unsigned int
daqring_fq_enqueue(struct daqring_fq *fq, struct rte_ring *ring,
                   struct dp_packet **pkts, size_t cnt)
{
    uint32_t limit = rte_ring_get_capacity(ring);
    size_t allowed, sent;
    uint32_t orig;

    /* Reserve room in the backlog. */
    atomic_add(&fq->total, cnt, &orig);
    allowed = cnt;
    if (OVS_UNLIKELY(orig + cnt > limit)) {
        allowed = orig < limit ? limit - orig : 0;
        atomic_sub(&fq->total, cnt - allowed, &orig);
    }

    for (size_t i = 0; i < allowed; i++) {
        daqring_fq_hash(pkts[i]);
    }
    sent = 0;
    while (sent < allowed) {
        /* Never full: the reservation above. */
        sent += rte_ring_mp_rts_enqueue_burst(
            ring, (void *const *) &pkts[sent], allowed - sent, NULL);
    }
    return allowed;
}

/* Dequeues up to 'n' packets into 'pkts', by deficit round-robin over the
 * flows that have packets in the queues of 'fq', after pulling up to
 * DAQRING_FQ_PULL_MAX packets from daqring ring 'ring' into them, and
 * returns their number.  With byte shaper 's', only the packets that '*budget'
 * lets leave (see daqring_shaper_take()).  Stores in '*avail' the number
 * of packets left.  Called only by the polling thread. */
size_t
daqring_fq_dequeue(struct daqring_fq *fq, struct rte_ring *ring,
                   const struct daqring_shaper *s, int64_t *budget,
                   struct dp_packet **pkts, size_t n, unsigned int *avail)
{
    size_t got = 0;
    uint32_t orig;

    daqring_fq_pull(fq, ring, DAQRING_FQ_PULL_MAX);
    while (got < n && fq->first && (!s->rate || *budget > 0)) {
        pkts[got] = daqring_fq_pop(fq);
        if (s->rate) {
            *budget -= daqring_shaper_frame_cost(s, pkts[got]);
        }
        got++;
    }

    atomic_sub(&fq->total, got, &orig);
    *avail = orig - got;
    return got;
}

/* Returns the number of packets that 'fq' counts in its queues and the
 * daqring ring.  May be called from any thread; the result is a
 * snapshot. */
uint32_t
daqring_fq_count(const struct daqring_fq *fq)
{
    uint32_t total;

    atomic_read_relaxed(&CONST_CAST(struct daqring_fq *, fq)->total, &total);
    return total;
}

/* Returns the number of flow buckets of 'fq'. */
uint32_t
daqring_fq_n_buckets(const struct daqring_fq *fq)
{
    return fq->n_buckets;
}

/* Dequeues every packet of 'fq' and its daqring ring 'ring' into 'pkts',
 * which has room for them, in the order in which they would have left had
 * all of them been pulled into the queues (each flow's packets in order),
 * and returns their number.  Only while no thread sends or receives. */
size_t
daqring_fq_drain(struct daqring_fq *fq, struct rte_ring *ring,
                 struct dp_packet **pkts)
{
    size_t n = 0;

    daqring_fq_pull(fq, ring, SIZE_MAX);
    while (fq->first) {
        pkts[n++] = daqring_fq_pop(fq);
    }
    return n;
}

/* Makes 'fq', whose queues are empty, serve a daqring ring of 'capacity'
 * packets that holds 'n' packets (which the polling thread pulls into the
 * queues at its next dequeues, in the ring's order, DAQRING_FQ_PULL_MAX at
 * a time).  Only while no thread sends or receives. */
void
daqring_fq_restart(struct daqring_fq *fq, uint32_t capacity, size_t n)
{
    ovs_assert(!fq->first);
    if (capacity + 1 != fq->n_slots) {
        daqring_fq_alloc_slots(fq, capacity);
    }
    atomic_store_relaxed(&fq->total, n);
}
