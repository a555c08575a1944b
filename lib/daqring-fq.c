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
#include "util.h"

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
 * Senders only enqueue into the daqring's ring, a multi-producer FIFO, as
 * without flow fairness; the polling thread, its single consumer, does the
 * scheduling, in memory of its own: it moves every packet that arrived
 * from the ring to the queue of its flow's bucket ("pulls"), and serves the
 * buckets that have packets queued in rounds, one packet per bucket per
 * visit (deficit round-robin with a quantum of one packet): the bucket just
 * served goes to the back of the round if it still has packets queued.  A
 * bucket that had nothing queued (a sparse flow, fq_codel's "new flow")
 * joins the back of the round being served, so its first packet leaves
 * after at most one packet of every backlogged flow, and every backlogged
 * flow gets one packet out per round, however many flows there are, up to
 * the number of buckets.  (An earlier design let the senders place packets
 * in a calendar of rank rings of 256 packets each; past 256 backlogged
 * flows, the others waited behind all of them, issue 25 item B2.)
 *
 * Flows are told apart by their RSS hash (the 5-tuple hash that
 * dpif-netdev computes for its flow caches, or the NIC's; the sender
 * computes it for packets without one, while the packet is in its cache),
 * in 'n_buckets' buckets.  A flow has two candidate buckets, from the low
 * and the high half of its 32-bit hash: the one that it owns and that has
 * packets queued, else one that has nothing queued (which it then owns),
 * else the first, shared with its owner.  Two flows thus share a bucket
 * (and the second waits behind the first) only if both buckets of one of
 * them are busy with other flows: with F flows in N buckets about F^3 / N^2
 * instead of F^2 / 2N.  A flow that shares a bucket and then finds its
 * other bucket free while it still has packets in the shared one can see
 * its new packets leave first.
 *
 * Order: the ring is a FIFO, and each bucket's queue too, so a flow's
 * packets leave in the order the flow sent them.
 *
 * Capacity: 'total' counts the packets in the ring and the queues
 * (reserved by senders before they enqueue, released by the polling
 * thread when they leave), at most the capacity of the daqring's ring, so
 * "ring-size" bounds the backlog exactly as for a FIFO, the ring is never
 * full, and the queues need at most that many slots.
 *
 * Memory: the slots of the queues (12 bytes per packet of the ring's
 * capacity) and the buckets (16 bytes each) are ordinary memory, not
 * DPDK's, and only the part in use becomes resident: slots are handed out
 * from the lowest index up and reused before new ones, and the buckets are
 * calloc()ed. */

struct daqring_fq_bucket {
    uint32_t head;              /* First slot of the queue, 0 if empty. */
    uint32_t tail;              /* Last slot of the queue. */
    uint32_t next;              /* Next bucket in the round, plus 1, or 0
                                 * for the last one. */
    uint32_t owner;             /* Hash of the flow that took it last. */
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

/* Removes the first packet of the round's first bucket and returns it, and
 * moves the bucket to the back of the round, or out of it if it has no
 * more packets.  The round must not be empty. */
static inline struct dp_packet *
daqring_fq_pop(struct daqring_fq *fq)
{
    uint32_t idx = fq->first;
    struct daqring_fq_bucket *b = &fq->buckets[idx - 1];
    uint32_t slot = b->head;
    struct dp_packet *packet = fq->packet[slot];

    b->head = fq->next[slot];
    fq->next[slot] = fq->free;
    fq->free = slot;

    if (b->next) {
        /* Others follow: the bucket goes to the back, or out. */
        fq->first = b->next;
        b->next = 0;
        if (b->head) {
            fq->buckets[fq->last - 1].next = idx;
            fq->last = idx;
        }
    } else if (!b->head) {
        /* It was the only one and it is empty now. */
        fq->first = 0;
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
 * 'hash', which then owns it (see struct daqring_fq). */
static inline uint32_t
daqring_fq_choose(struct daqring_fq *fq, uint32_t hash)
{
    uint32_t idx[2] = { hash & fq->mask,
                        ((hash >> 16) | (hash << 16)) & fq->mask };

    for (int i = 0; i < 2; i++) {
        struct daqring_fq_bucket *b = &fq->buckets[idx[i]];

        if (b->head && b->owner == hash) {
            return idx[i];
        }
    }
    for (int i = 0; i < 2; i++) {
        struct daqring_fq_bucket *b = &fq->buckets[idx[i]];

        if (!b->head) {
            b->owner = hash;
            return idx[i];
        }
    }
    return idx[0];
}

/* Appends 'packet' to the queue of its bucket, and the bucket to the back
 * of the round if it had nothing queued.  There must be a free slot. */
static inline void
daqring_fq_push(struct daqring_fq *fq, struct dp_packet *packet)
{
    uint32_t idx = daqring_fq_choose(fq, dp_packet_get_rss_hash(packet));
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
        if (fq->first) {
            fq->buckets[fq->last - 1].next = idx + 1;
        } else {
            fq->first = idx + 1;
        }
        fq->last = idx + 1;
    }
    b->tail = slot;
}

/* Moves every packet that arrived in daqring ring 'ring' to the queues of
 * 'fq'.  Called only by the ring's consumer. */
static void
daqring_fq_pull(struct daqring_fq *fq, struct rte_ring *ring)
{
    struct dp_packet *pkts[NETDEV_MAX_BURST];
    unsigned int n;

    /* 'total' <= the ring's capacity < 'n_slots': never out of slots. */
    while ((n = rte_ring_sc_dequeue_burst(ring, (void **) pkts,
                                          NETDEV_MAX_BURST, NULL))) {
        for (unsigned int i = 0; i < n; i++) {
            daqring_fq_push(fq, pkts[i]);
        }
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

/* Dequeues up to 'n' packets into 'pkts', round-robin over the flows that
 * have packets in daqring ring 'ring' or the queues of 'fq', and returns
 * their number.  With byte shaper 's', only the packets that '*budget'
 * lets leave (see daqring_shaper_take()).  Stores in '*avail' the number
 * of packets left.  Called only by the polling thread. */
size_t
daqring_fq_dequeue(struct daqring_fq *fq, struct rte_ring *ring,
                   const struct daqring_shaper *s, int64_t *budget,
                   struct dp_packet **pkts, size_t n, unsigned int *avail)
{
    size_t got = 0;
    uint32_t orig;

    daqring_fq_pull(fq, ring);
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
 * which has room for them, in the order in which they would have left, so
 * that each flow's packets stay in order, and returns their number.  Only
 * while no thread sends or receives. */
size_t
daqring_fq_drain(struct daqring_fq *fq, struct rte_ring *ring,
                 struct dp_packet **pkts)
{
    size_t n = 0;

    daqring_fq_pull(fq, ring);
    while (fq->first) {
        pkts[n++] = daqring_fq_pop(fq);
    }
    return n;
}

/* Makes 'fq', whose queues are empty, serve a daqring ring of 'capacity'
 * packets that holds 'n' packets (which the polling thread pulls into the
 * queues at its next dequeue, in the ring's order).  Only while no thread
 * sends or receives. */
void
daqring_fq_restart(struct daqring_fq *fq, uint32_t capacity, size_t n)
{
    ovs_assert(!fq->first);
    if (capacity + 1 != fq->n_slots) {
        daqring_fq_alloc_slots(fq, capacity);
    }
    atomic_store_relaxed(&fq->total, n);
}
