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

#include "netdev-daqring.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <rte_ring_peek.h>

#include "coverage.h"
#include "daqring-fq.h"
#include "daqring-shaper.h"
#include "dp-packet.h"
#include "dpdk.h"
#include "flow.h"
#include "hash.h"
#include "netdev-provider.h"
#include "openvswitch/dynamic-string.h"
#include "openvswitch/list.h"
#include "openvswitch/poll-loop.h"
#include "openvswitch/vlog.h"
#include "ovs-atomic.h"
#include "ovs-numa.h"
#include "ovs-rcu.h"
#include "ovs-thread.h"
#include "packets.h"
#include "smap.h"
#include "timeval.h"
#include "unixctl.h"
#include "util.h"

VLOG_DEFINE_THIS_MODULE(netdev_daqring);

COVERAGE_DEFINE(daqring_ring_full);
COVERAGE_DEFINE(daqring_mixed_batch);
COVERAGE_DEFINE(daqring_idle_poll);
COVERAGE_DEFINE(daqring_loop_drop);
COVERAGE_DEFINE(daqring_wait_poll);
COVERAGE_DEFINE(daqring_egress_drop);

static struct vlog_rate_limit loop_rl = VLOG_RATE_LIMIT_INIT(1, 5);

/* Limits and defaults of the options.  See
 * Documentation/topics/daqring.rst. */
#define DAQRING_DEFAULT_SIZE 4096
#define DAQRING_MAX_SIZE (1024 * 1024)
#define DAQRING_MAX_POLL_INTERVAL 1000000          /* Microseconds. */
#define DAQRING_MIN_MAX_RATE 1000                  /* Bits per second. */
#define DAQRING_MAX_MAX_RATE 1000000000000LL       /* Bits per second. */
#define DAQRING_MAX_FRAME_OVERHEAD 255             /* Bytes per frame. */
#define DAQRING_MAX_FLOW_BUCKETS 65536             /* "flow-buckets". */
#define DAQRING_MAX_BURST_BYTES (16 * 1024 * 1024) /* "max-burst-bytes". */

/* Bytes that a frame takes on an Ethernet link beyond the frame without its
 * FCS, as DPDK's rte_sched counts them (RTE_SCHED_FRAME_OVERHEAD_DEFAULT):
 * preamble and start delimiter 8, inter-frame gap 12, FCS 4. */
#define DAQRING_DEFAULT_FRAME_OVERHEAD 24

/* A packet that has already passed this many daqrings is not accepted by
 * another one: rings that forward into each other would otherwise keep it
 * looping for ever.  See 'queue_passes' in struct dp_packet. */
#define DAQRING_MAX_PASSES 8

/* How often, in milliseconds, the main thread checks mempool capacity. */
#define DAQRING_CHECK_INTERVAL 1000

/* Name prefix of the mempools that netdev-dpdk creates. */
#define DAQRING_OVS_MEMPOOL_PREFIX "ovs"

/* Configuration of a daqring, as given by its "options". */
struct daqring_config {
    uint32_t ring_size;         /* Capacity of the ring, in packets. */
    uint32_t max_burst;         /* Packets dequeued at most per interval. */
    uint32_t poll_interval;     /* Shaping interval in microseconds, or 0. */
    uint64_t max_rate;          /* Byte shaping rate in bit/s, or 0. */
    uint32_t frame_overhead;    /* Bytes charged per frame for max_rate. */
    uint32_t max_burst_bytes;   /* Bound of a byte-shaped burst, or 0. */
    uint64_t egress_max_rate;   /* Rate of the egress shared with the other
                                 * daqrings bound to it, bit/s, or 0. */
    uint32_t egress_max_burst_bytes; /* Bound of its bursts, or 0. */
    uint32_t flow_buckets;      /* Flow fairness buckets, or 0. */
    int numa_id;                /* NUMA node, or NETDEV_NUMA_UNSPEC. */
};

/* Packets and bytes enqueued through one tx queue by the thread that has
 * the queue to itself (netdev_daqring_send() with 'concurrent_txq' false),
 * which updates them without a locked instruction.  Other threads only read
 * them. */
struct daqring_txq_counters {
    PADDED_MEMBERS(CACHE_LINE_SIZE,
        atomic_uint64_t packets;        /* Packets enqueued. */
        atomic_uint64_t bytes;          /* Bytes enqueued. */
    );
};

struct netdev_daqring {
    /* Read on every send and receive; written only while no thread sends or
     * receives (see netdev_daqring_reconfigure()), except 'shaper' (RCU)
     * and 'admin_up' (atomic). */
    PADDED_MEMBERS(CACHE_LINE_SIZE,
        struct rte_ring *ring;          /* Packet pointers, or NULL. */
        struct daqring_txq_counters *txq_counters; /* One per tx queue. */
        int n_txq_counters;             /* Elements of 'txq_counters'. */
        struct daqring_fq *fq;          /* Flow fairness, or NULL
                                         * for a strict FIFO. */
        OVSRCU_TYPE(struct daqring_shaper *) shaper; /* Shaping in force. */
        atomic_bool admin_up;           /* NETDEV_UP: accept packets. */
        int doorbell;                   /* Of the rx queue, or -1, see
                                         * netdev_daqring_rxq_idle(). */
        atomic_bool other_sources;      /* Set for good by the first sender
                                         * of a packet that is not an mbuf
                                         * of a DPDK mempool: until then
                                         * the receiver need not look at
                                         * the packets' sources (see
                                         * netdev_daqring_rxq_recv()). */
        uint32_t rss_basis;             /* Mixed into the RSS hash of the
                                         * packets dequeued, see
                                         * netdev_daqring_rxq_recv(). */
    );

    /* Written by every thread that sends to the daqring. */
    PADDED_MEMBERS(CACHE_LINE_SIZE,
        atomic_uint64_t tx_packets;     /* Packets enqueued, except those
                                         * in 'txq_counters'. */
        atomic_uint64_t tx_bytes;       /* Bytes enqueued, likewise. */
        atomic_uint64_t ring_full_drops; /* Packets refused, ring full. */
        atomic_uint64_t other_drops;    /* Packets refused, port down or
                                         * unconfigured. */
        atomic_uint64_t loop_drops;     /* Packets refused, they passed
                                         * DAQRING_MAX_PASSES daqrings. */
    );

    /* Written only by the thread that polls the rx queue. */
    PADDED_MEMBERS(CACHE_LINE_SIZE,
        atomic_uint64_t rx_packets;     /* Packets dequeued. */
        atomic_uint64_t rx_bytes;       /* Bytes dequeued. */
        atomic_uint64_t high_watermark; /* Highest occupancy seen. */
        atomic_uint32_t stash_count;    /* Copy of 'stash_n - stash_pos'
                                         * for other threads. */
        atomic_uint64_t egress_drops;   /* Packets dequeued that the
                                         * datapath could not send to the
                                         * egress port (options:egress). */
        atomic_uint64_t shaper_intervals; /* Packet shaping: intervals
                                           * in which packets left. */
        atomic_uint64_t shaper_burst_bytes; /* Byte shaping: largest burst
                                             * beyond the rate, in wire
                                             * bytes, see
                                             * daqring_shaper_excess_bytes().
                                             */
        atomic_uint64_t egress_share_waits; /* Polls at which the share of
                                             * the egress held back packets
                                             * (egress-max-rate). */

        /* Packets held outside the ring and delivered before the packets in
         * the ring: the oldest packets after a resize below the backlog, and
         * packets set aside to keep each received batch from a single
         * buffer source.  Owned by the polling thread while the rx queue is
         * open and by the main thread in netdev_daqring_reconfigure(). */
        struct dp_packet **stash;       /* Array of 'stash_cap' packets. */
        size_t stash_cap;               /* Allocated size of 'stash'. */
        size_t stash_pos;               /* Index of the next packet. */
        size_t stash_n;                 /* Index past the last packet. */
    );

    /* The embedded generic netdev. */
    struct netdev up;

    /* In 'daqring_list'.  Protected by 'daqring_list_mutex'. */
    struct ovs_list list_node;

    /* Protects the members below. */
    struct ovs_mutex mutex;

    /* Configuration in force, i.e. the last valid one. */
    struct daqring_config cfg OVS_GUARDED;

    /* 'seq' of the last 'shaper' published. */
    uint64_t shaper_seq OVS_GUARDED;

    /* Actual capacity and NUMA node of 'ring', 0 and NETDEV_NUMA_UNSPEC
     * without a ring, and the "numa-id" it was allocated for. */
    uint32_t ring_size OVS_GUARDED;
    int ring_numa_id OVS_GUARDED;
    int ring_requested_numa_id OVS_GUARDED;

    /* A ring allocated by netdev_daqring_set_config() for a new size or
     * NUMA node, which netdev_daqring_reconfigure() puts in place of
     * 'ring', and the "numa-id" it was allocated for. */
    struct rte_ring *pending_ring OVS_GUARDED;
    int pending_requested_numa_id OVS_GUARDED;

    /* Flow fairness that netdev_daqring_reconfigure() puts in place
     * of 'fq' if 'fq_pending' (NULL: a strict FIFO), allocated by
     * netdev_daqring_set_config() for a new "flow-buckets". */
    struct daqring_fq *pending_fq OVS_GUARDED;
    bool fq_pending OVS_GUARDED;

    /* Options last passed to netdev_daqring_set_config(). */
    struct smap last_args OVS_GUARDED;

    /* Why the last options were rejected while the previous configuration
     * stayed in force, or NULL. */
    char *config_error OVS_GUARDED;

    /* "egress" in force: the port to which the datapath sends what the ring
     * delivers, without a flow lookup, or NULL.  See "Egress binding" in
     * netdev.h. */
    char *egress OVS_GUARDED;

    /* Why the datapath could not bind the ring to 'egress' (its packets are
     * then dropped and counted in 'egress_drops'), or NULL if it did. */
    char *egress_error OVS_GUARDED;

    /* Why the bridge does not let the datapath send to 'egress' directly
     * (see netdev_set_egress_refusal()), or NULL. */
    char *egress_refusal OVS_GUARDED;

    /* The share of the egress ("egress-max-rate") of which the ring is a
     * member, in slot 'share_slot', or NULL.  The shaper in force refers to
     * it. */
    struct daqring_share *share OVS_GUARDED;
    unsigned int share_slot OVS_GUARDED;

    /* Whether 'last_args' were refused only because the other daqrings of
     * the egress gave other egress-max-rate etc.: they are tried again
     * whenever a daqring leaves a share or a share's parameters change (see
     * netdev_daqring_run()), so that once all the rings of an egress give
     * the same values, which they can only do one at a time, those values
     * take effect. */
    bool share_refused OVS_GUARDED;

    /* Whether the "status" column last reported a mempool warning. */
    bool published_mempool_warning OVS_GUARDED;

    /* The shaper state of the rx queue while it is closed: an rx queue
     * reopened (the datapath reconfiguring the port, or moving it to
     * another thread) goes on with the bucket level and interval of the
     * one closed, rather than with a new burst. */
    struct daqring_shaper_state shaping OVS_GUARDED;

    /* Interface properties. */
    struct eth_addr hwaddr OVS_GUARDED;     /* Ethernet address. */
    int mtu OVS_GUARDED;                    /* Maximum transmission unit. */
    enum netdev_flags flags OVS_GUARDED;    /* NETDEV_UP, NETDEV_PROMISC. */
    int requested_n_txq OVS_GUARDED;        /* Applied by reconfigure. */
};

struct netdev_rxq_daqring {
    struct netdev_rxq up;               /* The embedded generic rx queue. */
    struct netdev_daqring *dev;         /* The daqring of 'up'. */
    struct daqring_shaper_state shaping; /* Of the shaper in force, taken
                                          * from and given back to
                                          * 'dev->shaping' (see
                                          * netdev_daqring_rxq_construct()).
                                          */
};

/* All daqrings. */
static struct ovs_mutex daqring_list_mutex = OVS_MUTEX_INITIALIZER;
static struct ovs_list daqring_list OVS_GUARDED_BY(daqring_list_mutex)
    = OVS_LIST_INITIALIZER(&daqring_list);

/* Sum of the capacities of all rings in place, and whether it changed
 * since the last mempool check.  Atomic, so that they can be updated with a
 * daqring's mutex held without nesting 'daqring_list_mutex' inside it. */
static atomic_uint64_t daqring_total_capacity = ATOMIC_VAR_INIT(0);
static atomic_bool daqring_check_now = ATOMIC_VAR_INIT(false);

/* Whether a packet has passed DAQRING_MAX_PASSES daqrings, set for good by
 * the thread that counted that pass (netdev_daqring_reenter()).  Until it
 * is set no packet can be looping, and netdev_daqring_send() does not look
 * at each packet's count.  Packets only move from one thread to another
 * through something that orders the two threads' memory accesses (a ring,
 * a mutex), so a thread that sends a packet whose pass set this flag sees
 * it set. */
static atomic_bool daqring_max_passes_seen = ATOMIC_VAR_INIT(false);

/* Result of the last mempool check: 'true' if 'daqring_total_capacity'
 * exceeds the number of mbufs in the OVS DPDK mempools, and these two
 * numbers. */
static bool daqring_mempool_short OVS_GUARDED_BY(daqring_list_mutex);
static uint64_t daqring_mempool_mbufs OVS_GUARDED_BY(daqring_list_mutex);
static uint64_t daqring_checked_capacity OVS_GUARDED_BY(daqring_list_mutex);

/* Time of the next periodic check, in msec. */
static long long int daqring_next_check OVS_GUARDED_BY(daqring_list_mutex);

static const struct netdev_class netdev_daqring_class;

static struct netdev_daqring *
netdev_daqring_cast(const struct netdev *netdev)
{
    ovs_assert(netdev_get_class(netdev) == &netdev_daqring_class);
    return CONTAINER_OF(netdev, struct netdev_daqring, up);
}

static struct netdev_rxq_daqring *
netdev_rxq_daqring_cast(const struct netdev_rxq *rxq)
{
    return CONTAINER_OF(rxq, struct netdev_rxq_daqring, up);
}

/* Stores in '*p' the parameters of the egress share of 'cfg'. */
static void
netdev_daqring_share_params(const struct daqring_config *cfg,
                            struct daqring_share_params *p)
{
    p->max_rate = cfg->egress_max_rate;
    p->max_burst_bytes = cfg->egress_max_burst_bytes;
    p->frame_overhead = cfg->frame_overhead;
}

/* Returns a new shaper for 'cfg', with sequence number 'seq', that draws
 * from egress share 'share' (if nonnull) in slot 'slot'.  Requires DPDK to
 * be initialized, unless 'cfg' does not shape. */
static struct daqring_shaper *
netdev_daqring_shaper_create(const struct daqring_config *cfg, uint64_t seq,
                             struct daqring_share *share, unsigned int slot)
{
    struct daqring_shaper *s;

    struct daqring_shaper_params p = {
        .max_burst = cfg->max_burst,
        .poll_interval = cfg->poll_interval,
        .max_rate = cfg->max_rate,
        .frame_overhead = cfg->frame_overhead,
        .max_burst_bytes = cfg->max_burst_bytes,
    };
    bool shapes = cfg->poll_interval || cfg->max_rate || share;

    s = daqring_shaper_create(&p, shapes ? daqring_tsc_hz() : 0, seq);
    s->share = daqring_share_ref(share);
    s->share_slot = slot;
    return s;
}

/* Returns the number of packets in 'dev''s ring and stash.  May be called
 * from any thread; the result is a snapshot. */
static uint64_t
netdev_daqring_occupancy(const struct netdev_daqring *dev)
{
    uint32_t stash;

    atomic_read_relaxed(&CONST_CAST(struct netdev_daqring *, dev)->stash_count,
                        &stash);
    if (dev->fq) {
        return daqring_fq_count(dev->fq) + stash;
    }
    return (dev->ring ? rte_ring_count(dev->ring) : 0) + stash;
}

/* Returns the number of packets in 'dev''s ring, which must exist, and its
 * rank rings. */
static inline unsigned int
netdev_daqring_ring_count(const struct netdev_daqring *dev)
{
    if (OVS_LIKELY(!dev->fq)) {
        return rte_ring_count(dev->ring);
    }
    return daqring_fq_count(dev->fq);
}

/* Returns true if 'dev''s ring, which must exist, and its rank rings are
 * empty. */
static inline bool
netdev_daqring_ring_empty(const struct netdev_daqring *dev)
{
    return !netdev_daqring_ring_count(dev);
}

/* Formats the shaping rate of 'cfg'.  With 'verbose', also how it is
 * counted and the packet rate of 1518-byte frames. */
static void
netdev_daqring_format_rate(struct ds *ds, const struct daqring_config *cfg,
                           bool verbose)
{
    double pps, bps;

    if (cfg->max_rate) {
        bps = cfg->max_rate;
        pps = bps / ((DAQRING_RATE_FRAME_LEN + cfg->frame_overhead) * 8);
    } else if (cfg->poll_interval) {
        pps = cfg->max_burst * 1e6 / cfg->poll_interval;
        bps = pps * DAQRING_RATE_FRAME_LEN * 8;
    } else {
        ds_put_cstr(ds, "unshaped");
        return;
    }

    if (bps >= 1e9) {
        ds_put_format(ds, "%.2f Gbps", bps / 1e9);
    } else if (bps >= 1e6) {
        ds_put_format(ds, "%.2f Mbps", bps / 1e6);
    } else {
        ds_put_format(ds, "%.2f kbps", bps / 1e3);
    }
    if (verbose && cfg->max_rate) {
        ds_put_format(ds, " (max-rate, frame length + %"PRIu32" bytes; "
                      "%d-byte frames: %.0f pps)", cfg->frame_overhead,
                      DAQRING_RATE_FRAME_LEN, pps);
    } else if (verbose) {
        ds_put_format(ds, " (%d-byte frames, %.0f pps)",
                      DAQRING_RATE_FRAME_LEN, pps);
    }
}

/* Ring memory. */

/* Returns the NUMA node of the memory at 'ring'. */
static int
netdev_daqring_ring_numa_id(const struct rte_ring *ring)
{
    const struct rte_memseg_list *msl = rte_mem_virt2memseg_list(ring);

    return msl && msl->socket_id >= 0 ? msl->socket_id : NETDEV_NUMA_UNSPEC;
}

/* Allocates an empty ring for 'size' packet pointers on NUMA node 'numa_id'
 * (or any node if it is NETDEV_NUMA_UNSPEC), with multi-producer enqueue and
 * single-consumer dequeue.  Returns the ring and stores its node in
 * '*actual_numa_id', or returns NULL and stores an error message in
 * '*errp'.
 *
 * The ring lives in rte_malloc() memory instead of coming from
 * rte_ring_create(): that one takes a memzone per ring and DPDK has only
 * RTE_MAX_MEMZONE (2560) memzones for everything, which would cap the number
 * of daqrings well below the thousands a data-acquisition switch needs.
 *
 * Producers use the "relaxed tail sync" (RTS) mode: with the classic
 * multi-producer mode a producer preempted between reserving and committing
 * its slots makes every other producer spin until it runs again, and the
 * main thread (packet-outs, non-PMD ports) and PMD threads sharing cores are
 * preemptible. */
static struct rte_ring *
netdev_daqring_ring_alloc(const char *name, uint32_t size, int numa_id,
                          int *actual_numa_id, char **errp)
{
    static atomic_count next_id = ATOMIC_COUNT_INIT(0);
    char ring_name[RTE_RING_NAMESIZE];
    struct rte_ring *ring;
    ssize_t memsize;
    int socket_id;
    int error;

    snprintf(ring_name, sizeof ring_name, "daqring%u",
             atomic_count_inc(&next_id));
    memsize = rte_ring_get_memsize(rte_align32pow2(size + 1));
    if (memsize < 0) {
        *errp = xasprintf("%s: cannot size a ring of %"PRIu32" packets",
                          name, size);
        return NULL;
    }

    socket_id = numa_id == NETDEV_NUMA_UNSPEC ? SOCKET_ID_ANY : numa_id;
    ring = rte_zmalloc_socket(ring_name, memsize, RTE_CACHE_LINE_SIZE,
                              socket_id);
    if (!ring) {
        char *where = (numa_id == NETDEV_NUMA_UNSPEC
                       ? xstrdup("any NUMA node")
                       : xasprintf("NUMA node %d", numa_id));

        *errp = xasprintf("%s: cannot allocate %"PRIdSIZE" bytes of DPDK "
                          "memory for a ring of %"PRIu32" packets on %s "
                          "(see other_config:dpdk-socket-mem)",
                          name, memsize, size, where);
        free(where);
        return NULL;
    }

    error = rte_ring_init(ring, ring_name, size,
                          RING_F_MP_RTS_ENQ | RING_F_SC_DEQ
                          | RING_F_EXACT_SZ);
    if (error) {
        *errp = xasprintf("%s: cannot initialize a ring of %"PRIu32
                          " packets (%s)", name, size,
                          rte_strerror(-error));
        rte_free(ring);
        return NULL;
    }

    *actual_numa_id = netdev_daqring_ring_numa_id(ring);
    return ring;
}

/* Dequeues all packets from 'ring' into 'pkts', which has room for them,
 * and returns their number. */
static size_t
netdev_daqring_ring_drain(struct rte_ring *ring, struct dp_packet **pkts)
{
    size_t n = 0;
    unsigned int got;

    do {
        got = rte_ring_sc_dequeue_burst(ring, (void **) &pkts[n],
                                        NETDEV_MAX_BURST, NULL);
        n += got;
    } while (got);

    return n;
}

/* Deletes every packet in 'ring'.  Returns the number of packets. */
static size_t
netdev_daqring_ring_purge(struct rte_ring *ring)
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

/* Frees 'ring' and every packet in it.  Returns the number of packets. */
static size_t
netdev_daqring_ring_free(struct rte_ring *ring)
{
    size_t total;

    if (!ring) {
        return 0;
    }
    total = netdev_daqring_ring_purge(ring);
    rte_free(ring);

    return total;
}

/* Adds 'delta' to the total ring capacity and requests a mempool check. */
static void
netdev_daqring_capacity_changed(int64_t delta)
{
    uint64_t orig;

    atomic_add_relaxed(&daqring_total_capacity, (uint64_t) delta, &orig);
    atomic_store_relaxed(&daqring_check_now, true);
}

/* Replaces the per tx queue counters of 'dev' by 'n' new ones, after adding
 * what the old ones counted to the shared counters.  Called only while no
 * thread sends to 'dev'. */
static void
netdev_daqring_set_txq_counters(struct netdev_daqring *dev, int n)
    OVS_REQUIRES(dev->mutex)
{
    uint64_t packets, bytes, orig;

    for (int i = 0; i < dev->n_txq_counters; i++) {
        atomic_read_relaxed(&dev->txq_counters[i].packets, &packets);
        atomic_read_relaxed(&dev->txq_counters[i].bytes, &bytes);
        atomic_add_relaxed(&dev->tx_packets, packets, &orig);
        atomic_add_relaxed(&dev->tx_bytes, bytes, &orig);
    }
    free_cacheline(dev->txq_counters);
    dev->txq_counters = (n > 0
                         ? xzalloc_cacheline(n * sizeof *dev->txq_counters)
                         : NULL);
    dev->n_txq_counters = MAX(n, 0);
}

/* Stores in '*packets' and '*bytes' the packets and bytes that 'dev'
 * enqueued. */
static void
netdev_daqring_tx_counts(struct netdev_daqring *dev, uint64_t *packets,
                         uint64_t *bytes)
    OVS_REQUIRES(dev->mutex)
{
    atomic_read_relaxed(&dev->tx_packets, packets);
    atomic_read_relaxed(&dev->tx_bytes, bytes);
    for (int i = 0; i < dev->n_txq_counters; i++) {
        uint64_t value;

        atomic_read_relaxed(&dev->txq_counters[i].packets, &value);
        *packets += value;
        atomic_read_relaxed(&dev->txq_counters[i].bytes, &value);
        *bytes += value;
    }
}

/* Life cycle. */

static struct netdev *
netdev_daqring_alloc(void)
{
    struct netdev_daqring *dev = xzalloc_cacheline(sizeof *dev);

    return &dev->up;
}

static void
netdev_daqring_dealloc(struct netdev *netdev)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);

    free_cacheline(dev);
}

static int
netdev_daqring_construct(struct netdev *netdev)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);

    /* No DPDK call here: the class is registered even when DPDK is not
     * initialized, and netdev_daqring_set_config() reports that case. */
    ovs_mutex_init(&dev->mutex);
    dev->ring = NULL;
    dev->fq = NULL;
    atomic_init(&dev->admin_up, true);
    atomic_init(&dev->other_sources, false);
    atomic_init(&dev->tx_packets, 0);
    atomic_init(&dev->tx_bytes, 0);
    atomic_init(&dev->ring_full_drops, 0);
    atomic_init(&dev->other_drops, 0);
    atomic_init(&dev->loop_drops, 0);
    atomic_init(&dev->rx_packets, 0);
    atomic_init(&dev->rx_bytes, 0);
    atomic_init(&dev->high_watermark, 0);
    atomic_init(&dev->stash_count, 0);
    atomic_init(&dev->egress_drops, 0);
    atomic_init(&dev->shaper_intervals, 0);
    atomic_init(&dev->shaper_burst_bytes, 0);
    atomic_init(&dev->egress_share_waits, 0);
    dev->rss_basis = hash_string(netdev_get_name(netdev), 0);
    dev->doorbell = netdev_rxq_doorbell_alloc();
    if (dev->doorbell < 0) {
        VLOG_WARN_ONCE("%s: more than %d rx queues with doorbells: this "
                       "daqring and the next ones are polled on every PMD "
                       "iteration, even when idle", netdev_get_name(netdev),
                       NETDEV_RXQ_DOORBELLS);
    }
    dev->stash_cap = NETDEV_MAX_BURST;
    dev->stash = xmalloc(dev->stash_cap * sizeof *dev->stash);
    dev->stash_pos = dev->stash_n = 0;

    ovs_mutex_lock(&dev->mutex);
    dev->cfg.ring_size = DAQRING_DEFAULT_SIZE;
    dev->cfg.max_burst = NETDEV_MAX_BURST;
    dev->cfg.poll_interval = 0;
    dev->cfg.max_rate = 0;
    dev->cfg.frame_overhead = DAQRING_DEFAULT_FRAME_OVERHEAD;
    dev->cfg.max_burst_bytes = 0;
    dev->cfg.flow_buckets = 0;
    dev->cfg.numa_id = NETDEV_NUMA_UNSPEC;
    dev->shaper_seq = 1;
    memset(&dev->shaping, 0, sizeof dev->shaping);
    ovsrcu_init(&dev->shaper,
                netdev_daqring_shaper_create(&dev->cfg, dev->shaper_seq,
                                             NULL, 0));
    dev->ring_size = 0;
    dev->ring_numa_id = NETDEV_NUMA_UNSPEC;
    dev->ring_requested_numa_id = NETDEV_NUMA_UNSPEC;
    dev->pending_ring = NULL;
    dev->pending_requested_numa_id = NETDEV_NUMA_UNSPEC;
    dev->pending_fq = NULL;
    dev->fq_pending = false;
    smap_init(&dev->last_args);
    dev->config_error = NULL;
    dev->egress = NULL;
    dev->egress_error = NULL;
    dev->egress_refusal = NULL;
    dev->share = NULL;
    dev->share_slot = 0;
    dev->share_refused = false;
    eth_addr_random(&dev->hwaddr);
    dev->mtu = ETH_PAYLOAD_MAX;
    dev->flags = NETDEV_UP;
    dev->requested_n_txq = netdev->n_txq;
    dev->txq_counters = NULL;
    dev->n_txq_counters = 0;
    netdev_daqring_set_txq_counters(dev, netdev->n_txq);
    ovs_mutex_unlock(&dev->mutex);

    /* Packets that carry offload requests pass through unchanged; the port
     * that finally transmits them checks its own capabilities.  netdev_send()
     * does not prepare packets for a daqring at all ('queues_for_datapath'
     * in its class); these flags say the same where OVS reports a port's
     * offloads (the Interface's status on base 3.5).  Byte shaping charges a
     * TSO packet for the segments it leaves the egress as (see
     * daqring_shaper_frame_cost()), so advertising TSO costs no accuracy. */
    netdev->ol_flags = (NETDEV_TX_OFFLOAD_IPV4_CKSUM
                        | NETDEV_TX_OFFLOAD_TCP_CKSUM
                        | NETDEV_TX_OFFLOAD_UDP_CKSUM
                        | NETDEV_TX_OFFLOAD_SCTP_CKSUM
                        | NETDEV_TX_OFFLOAD_TCP_TSO);

    ovs_mutex_lock(&daqring_list_mutex);
    ovs_list_push_back(&daqring_list, &dev->list_node);
    ovs_mutex_unlock(&daqring_list_mutex);

    return 0;
}

/* Called when the last reference to the netdev goes away: when the port is
 * deleted, its bridge is deleted, or ovs-vswitchd exits (bridge_exit()
 * destroys the bridges and the datapath closes its ports).  No thread uses
 * the ring any more, so every queued packet is freed here. */
static void
netdev_daqring_destruct(struct netdev *netdev)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);
    size_t freed = 0;

    ovs_mutex_lock(&daqring_list_mutex);
    ovs_list_remove(&dev->list_node);
    ovs_mutex_unlock(&daqring_list_mutex);

    ovs_mutex_lock(&dev->mutex);
    for (size_t i = dev->stash_pos; i < dev->stash_n; i++) {
        dp_packet_delete(dev->stash[i]);
        freed++;
    }
    free(dev->stash);
    freed += daqring_fq_destroy(dev->fq);
    freed += netdev_daqring_ring_free(dev->ring);
    netdev_daqring_ring_free(dev->pending_ring);
    daqring_fq_destroy(dev->pending_fq);
    if (dev->ring) {
        netdev_daqring_capacity_changed(-(int64_t) dev->ring_size);
    }
    dev->ring = NULL;
    dev->fq = NULL;
    smap_destroy(&dev->last_args);
    free(dev->config_error);
    free(dev->egress);
    free(dev->egress_error);
    free(dev->egress_refusal);
    free_cacheline(dev->txq_counters);
    dev->txq_counters = NULL;
    dev->n_txq_counters = 0;
    if (dev->share) {
        daqring_share_leave(dev->share, dev->share_slot);
        atomic_store_relaxed(&daqring_check_now, true);
    }
    ovsrcu_postpone(daqring_shaper_destroy,
                    ovsrcu_get_protected(struct daqring_shaper *,
                                         &dev->shaper));
    ovs_mutex_unlock(&dev->mutex);

    if (freed) {
        VLOG_INFO("%s: freed %"PRIuSIZE" queued packets",
                  netdev_get_name(netdev), freed);
    }
    netdev_rxq_doorbell_free(dev->doorbell);
    ovs_mutex_destroy(&dev->mutex);
}

/* Configuration. */

static int
netdev_daqring_get_config(const struct netdev *netdev, struct smap *args)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    smap_add_format(args, "ring-size", "%"PRIu32, dev->cfg.ring_size);
    smap_add_format(args, "max-burst", "%"PRIu32, dev->cfg.max_burst);
    smap_add_format(args, "poll-interval", "%"PRIu32,
                    dev->cfg.poll_interval);
    if (dev->cfg.max_rate) {
        smap_add_format(args, "max-rate", "%"PRIu64, dev->cfg.max_rate);
    }
    if (dev->cfg.frame_overhead != DAQRING_DEFAULT_FRAME_OVERHEAD) {
        smap_add_format(args, "frame-overhead", "%"PRIu32,
                        dev->cfg.frame_overhead);
    }
    if (dev->cfg.max_burst_bytes) {
        smap_add_format(args, "max-burst-bytes", "%"PRIu32,
                        dev->cfg.max_burst_bytes);
    }
    if (dev->cfg.egress_max_rate) {
        smap_add_format(args, "egress-max-rate", "%"PRIu64,
                        dev->cfg.egress_max_rate);
    }
    if (dev->cfg.egress_max_burst_bytes) {
        smap_add_format(args, "egress-max-burst-bytes", "%"PRIu32,
                        dev->cfg.egress_max_burst_bytes);
    }
    if (dev->cfg.flow_buckets) {
        smap_add_format(args, "flow-buckets", "%"PRIu32,
                        dev->cfg.flow_buckets);
    }
    if (dev->cfg.numa_id != NETDEV_NUMA_UNSPEC) {
        smap_add_format(args, "numa-id", "%d", dev->cfg.numa_id);
    }
    if (dev->egress) {
        smap_add(args, "egress", dev->egress);
    }
    ovs_mutex_unlock(&dev->mutex);

    return 0;
}

/* Parses the optional integer option 'key' of 'args' into '*value', which
 * is left alone if the option is absent.  Returns false and stores an error
 * message in '*errp' if the value is not an integer in [min, max]. */
static bool
netdev_daqring_parse_uint(const char *name, const struct smap *args,
                          const char *key, uint32_t min, uint32_t max,
                          uint32_t *value, char **errp)
{
    const char *s = smap_get(args, key);
    unsigned int u;

    if (!s) {
        return true;
    }
    if (!str_to_uint(s, 10, &u) || u < min || u > max) {
        *errp = xasprintf("%s: invalid %s \"%s\" (expected an integer "
                          "from %"PRIu32" to %"PRIu32")",
                          name, key, s, min, max);
        return false;
    }
    *value = u;
    return true;
}

/* Parses the optional rate option 'key' ("max-rate" or "egress-max-rate")
 * of 'args', in bits per second, into '*max_rate', which is left alone if
 * the option is absent.  Returns false and stores an error message in
 * '*errp' if the value is not 0 or an integer in the allowed range. */
static bool
netdev_daqring_parse_max_rate(const char *name, const struct smap *args,
                              const char *key, uint64_t *max_rate,
                              char **errp)
{
    const char *s = smap_get(args, key);
    long long int ll;

    if (!s) {
        return true;
    }
    if (!str_to_llong(s, 10, &ll)
        || (ll && (ll < DAQRING_MIN_MAX_RATE || ll > DAQRING_MAX_MAX_RATE))) {
        *errp = xasprintf("%s: invalid %s \"%s\" (expected 0, which "
                          "disables byte shaping, or an integer number of "
                          "bits per second from %d to %lld)",
                          name, key, s, DAQRING_MIN_MAX_RATE,
                          DAQRING_MAX_MAX_RATE);
        return false;
    }
    *max_rate = ll;
    return true;
}

/* Parses 'args' into '*cfg'.  Returns false and stores an error message in
 * '*errp' on any invalid value. */
static bool
netdev_daqring_parse_args(const char *name, const struct smap *args,
                          struct daqring_config *cfg, char **errp)
{
    const struct smap_node *node;
    uint32_t numa_id;

    cfg->ring_size = DAQRING_DEFAULT_SIZE;
    cfg->max_burst = NETDEV_MAX_BURST;
    cfg->poll_interval = 0;
    cfg->max_rate = 0;
    cfg->frame_overhead = DAQRING_DEFAULT_FRAME_OVERHEAD;
    cfg->max_burst_bytes = 0;
    cfg->egress_max_rate = 0;
    cfg->egress_max_burst_bytes = 0;
    cfg->flow_buckets = 0;
    cfg->numa_id = NETDEV_NUMA_UNSPEC;

    if (!netdev_daqring_parse_uint(name, args, "ring-size", 1,
                                   DAQRING_MAX_SIZE, &cfg->ring_size, errp)
        || !netdev_daqring_parse_uint(name, args, "max-burst", 1,
                                      NETDEV_MAX_BURST, &cfg->max_burst,
                                      errp)
        || !netdev_daqring_parse_uint(name, args, "poll-interval", 0,
                                      DAQRING_MAX_POLL_INTERVAL,
                                      &cfg->poll_interval, errp)
        || !netdev_daqring_parse_max_rate(name, args, "max-rate",
                                          &cfg->max_rate, errp)
        || !netdev_daqring_parse_max_rate(name, args, "egress-max-rate",
                                          &cfg->egress_max_rate, errp)
        || !netdev_daqring_parse_uint(name, args, "frame-overhead", 0,
                                      DAQRING_MAX_FRAME_OVERHEAD,
                                      &cfg->frame_overhead, errp)) {
        return false;
    }
    if (smap_get(args, "flow-buckets")
        && (!netdev_daqring_parse_uint(name, args, "flow-buckets", 0,
                                       DAQRING_MAX_FLOW_BUCKETS,
                                       &cfg->flow_buckets, errp)
            || cfg->flow_buckets == 1
            || (cfg->flow_buckets && !is_pow2(cfg->flow_buckets)))) {
        if (!*errp) {
            *errp = xasprintf("%s: invalid flow-buckets \"%s\" (expected 0, "
                              "a strict FIFO, or a power of 2 from 2 to %d)",
                              name, smap_get(args, "flow-buckets"),
                              DAQRING_MAX_FLOW_BUCKETS);
        }
        return false;
    }
    if (cfg->max_rate && cfg->poll_interval) {
        *errp = xasprintf("%s: max-rate (byte shaping) and poll-interval "
                          "(packet shaping) exclude each other; set "
                          "poll-interval to 0 or remove it", name);
        return false;
    }
    if (smap_get(args, "max-burst-bytes")) {
        /* At least two full-size frames: the bucket holds the bound less
         * one full-size frame (see lib/daqring-shaper.h). */
        uint32_t min = 2 * (DAQRING_RATE_FRAME_LEN + cfg->frame_overhead);

        if (!netdev_daqring_parse_uint(name, args, "max-burst-bytes", min,
                                       DAQRING_MAX_BURST_BYTES,
                                       &cfg->max_burst_bytes, errp)) {
            free(*errp);
            *errp = xasprintf("%s: invalid max-burst-bytes \"%s\" "
                              "(expected an integer number of bytes from "
                              "%"PRIu32", two frames of %d bytes plus "
                              "frame-overhead, to %d)", name,
                              smap_get(args, "max-burst-bytes"), min,
                              DAQRING_RATE_FRAME_LEN,
                              DAQRING_MAX_BURST_BYTES);
            return false;
        }
        if (!cfg->max_rate) {
            *errp = xasprintf("%s: max-burst-bytes bounds the bursts of "
                              "byte shaping and needs max-rate; set "
                              "max-rate or remove max-burst-bytes", name);
            return false;
        }
    }

    if (cfg->egress_max_rate && cfg->poll_interval) {
        *errp = xasprintf("%s: egress-max-rate (byte shaping shared with "
                          "the egress's other daqrings) and poll-interval "
                          "(packet shaping) exclude each other; set "
                          "poll-interval to 0 or remove it", name);
        return false;
    }
    if (cfg->egress_max_rate && !smap_get(args, "egress")) {
        *errp = xasprintf("%s: egress-max-rate is the rate of the egress "
                          "port that the daqrings bound to it share, and "
                          "needs egress; set egress or remove "
                          "egress-max-rate", name);
        return false;
    }
    if (smap_get(args, "egress-max-burst-bytes")) {
        uint32_t min = 2 * (DAQRING_RATE_FRAME_LEN + cfg->frame_overhead);

        if (!netdev_daqring_parse_uint(name, args, "egress-max-burst-bytes",
                                       min, DAQRING_MAX_BURST_BYTES,
                                       &cfg->egress_max_burst_bytes, errp)) {
            free(*errp);
            *errp = xasprintf("%s: invalid egress-max-burst-bytes \"%s\" "
                              "(expected an integer number of bytes from "
                              "%"PRIu32", two frames of %d bytes plus "
                              "frame-overhead, to %d)", name,
                              smap_get(args, "egress-max-burst-bytes"), min,
                              DAQRING_RATE_FRAME_LEN,
                              DAQRING_MAX_BURST_BYTES);
            return false;
        }
        if (!cfg->egress_max_rate) {
            *errp = xasprintf("%s: egress-max-burst-bytes bounds the bursts "
                              "of a shared egress and needs egress-max-rate; "
                              "set egress-max-rate or remove "
                              "egress-max-burst-bytes", name);
            return false;
        }
    }

    if (smap_get(args, "numa-id")) {
        numa_id = 0;
        if (!netdev_daqring_parse_uint(name, args, "numa-id", 0, INT_MAX,
                                       &numa_id, errp)) {
            return false;
        }
        if (!ovs_numa_numa_id_is_valid(numa_id)) {
            *errp = xasprintf("%s: invalid numa-id %"PRIu32" (no such NUMA "
                              "node; this system has %d)", name, numa_id,
                              ovs_numa_get_n_numas());
            return false;
        }
        cfg->numa_id = numa_id;
    }

    SMAP_FOR_EACH (node, args) {
        if (strcmp(node->key, "ring-size")
            && strcmp(node->key, "max-burst")
            && strcmp(node->key, "poll-interval")
            && strcmp(node->key, "max-rate")
            && strcmp(node->key, "frame-overhead")
            && strcmp(node->key, "max-burst-bytes")
            && strcmp(node->key, "egress-max-rate")
            && strcmp(node->key, "egress-max-burst-bytes")
            && strcmp(node->key, "flow-buckets")
            && strcmp(node->key, "numa-id")
            && strcmp(node->key, "egress")) {
            VLOG_WARN("%s: ignoring unknown option \"%s\"", name, node->key);
        }
    }

    return true;
}

/* Checks option "egress" of 'args' for the daqring named 'name': returns
 * true if it is absent or may name an egress port, otherwise false with an
 * error message in '*errp'.  Whether the port exists in the daqring's
 * datapath is for the datapath to say, when its ports change (see
 * netdev_daqring_set_egress_error()): it may be added later. */
static bool
netdev_daqring_check_egress(const char *name, const struct smap *args,
                            char **errp)
{
    const char *egress = smap_get(args, "egress");
    struct netdev *other;
    bool is_daqring;

    if (!egress) {
        return true;
    }
    if (!egress[0]) {
        *errp = xasprintf("%s: invalid egress \"\" (expected the name of "
                          "the Interface to send to; remove the option for "
                          "two-rule steering)", name);
        return false;
    }
    if (!strcmp(egress, name)) {
        *errp = xasprintf("%s: invalid egress \"%s\": a daqring cannot be "
                          "its own egress", name, egress);
        return false;
    }
    other = netdev_from_name(egress);
    is_daqring = other && netdev_get_class(other) == &netdev_daqring_class;
    netdev_close(other);
    if (is_daqring) {
        *errp = xasprintf("%s: invalid egress \"%s\": it is a daqring, and "
                          "a daqring's egress must be a port that transmits",
                          name, egress);
        return false;
    }
    return true;
}

/* Applies the options in 'args'.
 *
 * The first successful call creates the ring, so that a failure (no DPDK,
 * no memory) lands in the Interface's "error" column.  Later calls for a
 * port that is in use never fail: ovs-vswitchd deletes a port whose
 * set_config fails, which would free the backlog.  Invalid options are
 * logged and reported as "config_error" in the status column instead, and
 * the previous configuration stays in force.
 *
 * Shaping changes apply immediately through 'dev->shaping'.  A new ring
 * size or NUMA node gets a new ring here (allocating can fail, moving
 * packets cannot) which netdev_daqring_reconfigure() puts in place. */
static int
netdev_daqring_set_config(struct netdev *netdev, const struct smap *args,
                          char **errp)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);
    const char *name = netdev_get_name(netdev);
    const char *egress = smap_get(args, "egress");
    struct daqring_config cfg;
    int numa_id = NETDEV_NUMA_UNSPEC;
    struct daqring_fq *fq = NULL;
    uint32_t fq_in_place;
    struct daqring_share_params share_params;
    struct daqring_share *share = NULL;
    unsigned int share_slot = 0;
    bool share_refused = false;
    struct rte_ring *ring;
    char *egress_error = NULL;
    char *error = NULL;
    int retval = 0;

    /* Before taking 'dev->mutex': it looks up other netdevs. */
    netdev_daqring_check_egress(name, args, &egress_error);

    ovs_mutex_lock(&dev->mutex);
    if (dev->ring && !dev->share_refused
        && smap_equal(args, &dev->last_args)) {
        goto out;
    }

    if (!dpdk_available()) {
        *errp = xasprintf("%s: daqring ports require DPDK; set "
                          "other_config:dpdk-init=true", name);
        retval = EINVAL;
        goto out;
    }

    smap_destroy(&dev->last_args);
    smap_clone(&dev->last_args, args);

    if (!netdev_daqring_parse_args(name, args, &cfg, &error)) {
        goto error;
    }
    if (egress_error) {
        error = egress_error;
        egress_error = NULL;
        goto error;
    }
    if (cfg.egress_max_rate) {
        netdev_daqring_share_params(&cfg, &share_params);
        if (!daqring_share_check(egress, name, &share_params, dev->share,
                                 dev->share_slot, &error)) {
            share_refused = true;
            goto error;
        }
    }

    fq_in_place = dev->fq ? daqring_fq_n_buckets(dev->fq) : 0;
    if (cfg.flow_buckets && (!dev->ring
                             || (cfg.flow_buckets != dev->cfg.flow_buckets
                                 && cfg.flow_buckets != fq_in_place))) {
        /* Allocated first: the ring below is committed once allocated. */
        fq = daqring_fq_create(name, cfg.flow_buckets, cfg.ring_size,
                               &error);
        if (!fq) {
            goto error;
        }
    }

    if (!dev->ring) {
        /* First configuration: the port is not in a datapath yet. */
        ring = netdev_daqring_ring_alloc(name, cfg.ring_size, cfg.numa_id,
                                         &numa_id, &error);
        if (!ring) {
            goto error;
        }
        dev->ring = ring;
        dev->fq = fq;
        fq = NULL;
        dev->ring_size = cfg.ring_size;
        dev->ring_numa_id = numa_id;
        dev->ring_requested_numa_id = cfg.numa_id;
        netdev_daqring_capacity_changed(cfg.ring_size);
        VLOG_INFO("%s: ring of %"PRIu32" packets on NUMA node %d",
                  name, cfg.ring_size, numa_id);
    } else if (cfg.ring_size != dev->cfg.ring_size
               || cfg.numa_id != dev->cfg.numa_id) {
        /* The ring in place, or the pending one, was made for 'dev->cfg'.
         * Replace the pending one, if any, by one for 'cfg', unless 'cfg'
         * is what the ring in place was made for. */
        struct rte_ring *pending = NULL;

        if (cfg.ring_size != dev->ring_size
            || cfg.numa_id != dev->ring_requested_numa_id) {
            pending = netdev_daqring_ring_alloc(name, cfg.ring_size,
                                                cfg.numa_id, &numa_id,
                                                &error);
            if (!pending) {
                goto error;
            }
        }
        netdev_daqring_ring_free(dev->pending_ring);
        dev->pending_ring = pending;
        dev->pending_requested_numa_id = cfg.numa_id;
        netdev_request_reconfigure(netdev);
    }
    if (cfg.flow_buckets != dev->cfg.flow_buckets) {
        /* Like the ring: 'fq' is NULL if 'cfg' wants what is in place, or a
         * strict FIFO. */
        uint32_t in_place = dev->fq ? daqring_fq_n_buckets(dev->fq) : 0;

        daqring_fq_destroy(dev->pending_fq);
        dev->pending_fq = fq;
        dev->fq_pending = cfg.flow_buckets != in_place;
        fq = NULL;
        netdev_request_reconfigure(netdev);
    }

    /* Joins, stays in or leaves the share of the egress: checked above, it
     * cannot fail. */
    if (cfg.egress_max_rate) {
        share_slot = dev->share_slot;
        share = daqring_share_join(egress, name, &share_params,
                                   daqring_tsc_hz(), rte_get_tsc_cycles(),
                                   dev->share, &share_slot, &error);
        ovs_assert(share);
        daqring_share_unref(share);     /* 'dev->share' is not a reference:
                                         * the shaper below holds one. */
    } else if (dev->share) {
        daqring_share_leave(dev->share, dev->share_slot);
    }
    if (dev->share && share != dev->share) {
        /* Left a share: its other rings may now agree. */
        atomic_store_relaxed(&daqring_check_now, true);
    } else if (share && share == dev->share) {
        struct daqring_share_params old_params;

        netdev_daqring_share_params(&dev->cfg, &old_params);
        if (old_params.max_rate != share_params.max_rate
            || old_params.max_burst_bytes != share_params.max_burst_bytes
            || old_params.frame_overhead != share_params.frame_overhead) {
            /* The share took the parameters that all its rings asked for:
             * those refused while they did not agree yet are now
             * accepted. */
            atomic_store_relaxed(&daqring_check_now, true);
        }
    }

    if (cfg.max_burst != dev->cfg.max_burst
        || cfg.poll_interval != dev->cfg.poll_interval
        || cfg.max_rate != dev->cfg.max_rate
        || cfg.frame_overhead != dev->cfg.frame_overhead
        || cfg.max_burst_bytes != dev->cfg.max_burst_bytes
        || share != dev->share || share_slot != dev->share_slot) {
        struct daqring_shaper *old;

        old = ovsrcu_get_protected(struct daqring_shaper *, &dev->shaper);
        ovsrcu_set(&dev->shaper,
                   netdev_daqring_shaper_create(&cfg, ++dev->shaper_seq,
                                                share, share_slot));
        ovsrcu_postpone(daqring_shaper_destroy, old);
        /* A waiting ring's doorbell may be deferred to a deadline of the old
         * shaping, up to a whole 'poll-interval' away: ring it now, so that
         * the new shaping applies at once.  The deferred ring later is only
         * one more poll. */
        netdev_rxq_doorbell_ring(dev->doorbell);
    }
    dev->cfg = cfg;
    dev->share = share;
    dev->share_slot = share_slot;
    if (!nullable_string_is_equal(egress, dev->egress)) {
        /* dpif-netdev resolves the name when it reconfigures the port. */
        free(dev->egress);
        dev->egress = nullable_xstrdup(egress);
        free(dev->egress_error);
        dev->egress_error = (egress
                             ? xstrdup("not resolved by the datapath yet")
                             : NULL);
        netdev_request_reconfigure(netdev);
    }
    dev->share_refused = false;
    if (dev->config_error) {
        free(dev->config_error);
        dev->config_error = NULL;
        VLOG_INFO("%s: configuration accepted", name);
    }
    netdev_change_seq_changed(netdev);
    goto out;

error:
    if (!dev->ring) {
        /* Not in use yet: fail, so that the error goes to the Interface's
         * "error" column. */
        *errp = error;
        retval = EINVAL;
        smap_clear(&dev->last_args);
    } else {
        if (!dev->share_refused || !share_refused
            || !nullable_string_is_equal(error, dev->config_error)) {
            VLOG_WARN("%s; keeping the previous configuration", error);
        }
        dev->share_refused = share_refused;
        free(dev->config_error);
        dev->config_error = error;
        netdev_change_seq_changed(netdev);
    }

out:
    ovs_mutex_unlock(&dev->mutex);
    daqring_fq_destroy(fq);
    free(egress_error);
    return retval;
}

/* Egress binding (see "Egress binding" in netdev.h). */

static char *
netdev_daqring_get_egress(const struct netdev *netdev)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);
    char *egress;

    ovs_mutex_lock(&dev->mutex);
    egress = nullable_xstrdup(dev->egress);
    ovs_mutex_unlock(&dev->mutex);

    return egress;
}

static void
netdev_daqring_set_egress_refusal(struct netdev *netdev, const char *reason)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    if (!nullable_string_is_equal(reason, dev->egress_refusal)) {
        /* dpif-netdev resolves the binding again when it reconfigures the
         * port, and reports the refusal through
         * netdev_daqring_set_egress_error(). */
        free(dev->egress_refusal);
        dev->egress_refusal = nullable_xstrdup(reason);
        netdev_request_reconfigure(netdev);
    }
    ovs_mutex_unlock(&dev->mutex);
}

static char *
netdev_daqring_get_egress_refusal(const struct netdev *netdev)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);
    char *reason;

    ovs_mutex_lock(&dev->mutex);
    reason = nullable_xstrdup(dev->egress_refusal);
    ovs_mutex_unlock(&dev->mutex);

    return reason;
}

/* Whether the switch is removing 'netdev': its bridge has let go of it (the
 * name no longer opens it, see netdev_remove()), and only the datapath,
 * which is deleting its ports, still holds it.  "ovs-appctl exit --cleanup"
 * has the datapath delete its ports one at a time, in no particular order,
 * so a bound ring may outlive its egress by a moment. */
static bool
netdev_daqring_is_being_removed(const struct netdev *netdev)
{
    struct netdev *named = netdev_from_name(netdev_get_name(netdev));
    bool removed = named != netdev;

    netdev_close(named);
    return removed;
}

static void
netdev_daqring_set_egress_error(struct netdev *netdev, const char *error)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);
    const char *name = netdev_get_name(netdev);
    bool removed = error && netdev_daqring_is_being_removed(netdev);

    ovs_mutex_lock(&dev->mutex);
    if (!nullable_string_is_equal(error, dev->egress_error)) {
        if (removed) {
            /* Nothing to warn about: the ring goes too. */
            VLOG_INFO("%s: %s: the ring is being removed", name, error);
        } else if (error) {
            VLOG_WARN("%s: %s; the packets that the ring delivers are "
                      "dropped and counted (egress_drops) until it "
                      "resolves", name, error);
        } else if (dev->egress) {
            VLOG_INFO("%s: bound to egress port %s", name, dev->egress);
        }
        free(dev->egress_error);
        dev->egress_error = nullable_xstrdup(error);
        netdev_change_seq_changed(netdev);
    }
    ovs_mutex_unlock(&dev->mutex);
}

/* Called by the thread that polls the daqring. */
static void
netdev_daqring_egress_dropped(struct netdev *netdev, uint64_t n)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);
    static struct vlog_rate_limit rl = VLOG_RATE_LIMIT_INIT(1, 5);
    uint64_t orig;

    COVERAGE_ADD(daqring_egress_drop, n);
    atomic_add_relaxed(&dev->egress_drops, n, &orig);
    VLOG_WARN_RL(&rl, "%s: dropped %"PRIu64" packets that the datapath "
                 "could not send to the egress port", netdev_get_name(netdev),
                 n);
}

static int
netdev_daqring_set_tx_multiq(struct netdev *netdev, unsigned int n_txq)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);

    /* Enqueueing is multi-producer safe and ignores the queue id.  Having as
     * many tx queues as dpif-netdev has threads lets it use static queue ids
     * (no XPS, no locking). */
    ovs_mutex_lock(&dev->mutex);
    if (dev->requested_n_txq != n_txq) {
        dev->requested_n_txq = n_txq;
        netdev_request_reconfigure(netdev);
    }
    ovs_mutex_unlock(&dev->mutex);

    return 0;
}

/* Moves the backlog (stash first, then the flow fairness queues in the
 * order in which they were to leave, then the ring) into
 * 'dev->pending_ring' (or back into 'dev->ring' if there is no pending
 * ring) and puts that in place, with the pending flow fairness if there is
 * one.  If the backlog exceeds the new capacity, the first packets to
 * leave that do not fit go to the stash, which the rx queue serves before
 * the ring, so that a resize never loses or reorders packets; the new
 * capacity applies to new arrivals.  With flow fairness, the polling
 * thread sorts the packets in the ring into its queues again. */
static void
netdev_daqring_swap_ring(struct netdev_daqring *dev)
    OVS_REQUIRES(dev->mutex)
{
    struct rte_ring *new = dev->pending_ring ? dev->pending_ring : dev->ring;
    struct daqring_fq *new_fq = dev->fq_pending ? dev->pending_fq : dev->fq;
    size_t n_stash = dev->stash_n - dev->stash_pos;
    size_t n, excess, enqueued, total;
    struct dp_packet **pkts;
    uint32_t new_size;
    int numa_id;

    new_size = rte_ring_get_capacity(new);
    total = n_stash + netdev_daqring_ring_count(dev);
    pkts = xmalloc(MAX(total, 1) * sizeof *pkts);
    memcpy(pkts, &dev->stash[dev->stash_pos], n_stash * sizeof *pkts);
    n = n_stash;
    if (dev->fq) {
        n += daqring_fq_drain(dev->fq, dev->ring, &pkts[n]);
    }
    n += netdev_daqring_ring_drain(dev->ring, &pkts[n]);
    ovs_assert(n == total);

    excess = n > new_size ? n - new_size : 0;
    if (excess > dev->stash_cap || (excess <= NETDEV_MAX_BURST
                                    && dev->stash_cap > NETDEV_MAX_BURST)) {
        dev->stash_cap = MAX(excess, NETDEV_MAX_BURST);
        free(dev->stash);
        dev->stash = xmalloc(dev->stash_cap * sizeof *dev->stash);
    }
    memcpy(dev->stash, pkts, excess * sizeof *pkts);
    dev->stash_pos = 0;
    dev->stash_n = excess;
    atomic_store_relaxed(&dev->stash_count, excess);

    if (new_fq) {
        daqring_fq_restart(new_fq, new_size, n - excess);
    }

    enqueued = 0;
    while (enqueued < n - excess) {
        enqueued += rte_ring_mp_rts_enqueue_burst(
            new, (void *const *) &pkts[excess + enqueued],
            n - excess - enqueued, NULL);
    }
    free(pkts);

    if (new_fq != dev->fq) {
        VLOG_INFO("%s: %s", netdev_get_name(&dev->up),
                  new_fq ? "flows served round-robin" : "strict FIFO");
        daqring_fq_destroy(dev->fq);
        dev->fq = new_fq;
    }
    dev->pending_fq = NULL;
    dev->fq_pending = false;

    if (new == dev->ring) {
        return;
    }
    netdev_daqring_ring_free(dev->ring);
    netdev_daqring_capacity_changed((int64_t) new_size - dev->ring_size);

    numa_id = netdev_daqring_ring_numa_id(new);
    VLOG_INFO("%s: ring resized from %"PRIu32" to %"PRIu32" packets on "
              "NUMA node %d, %"PRIuSIZE" packets moved%s",
              netdev_get_name(&dev->up), dev->ring_size, new_size, numa_id,
              n, excess ? ", the oldest ones held beyond capacity" : "");

    dev->ring = new;
    dev->ring_size = new_size;
    dev->ring_numa_id = numa_id;
    dev->ring_requested_numa_id = dev->pending_requested_numa_id;
    dev->pending_ring = NULL;
}

/* Applies what set_config() and set_tx_multiq() prepared.
 *
 * dpif-netdev calls this from port_reconfigure() in reconfigure_datapath(),
 * after pmd_remove_stale_ports() took this port out of every thread's poll
 * list and tx port cache, reload_affected_pmds() waited for the PMD threads
 * to pick that up, and port_reconfigure() closed the rx queue; the main
 * thread, which runs this, is also the only non-PMD sender.  Nothing sends
 * to or receives from the ring until the port is back in place, so the
 * ring and the stash can be replaced here without synchronization. */
static int
netdev_daqring_reconfigure(struct netdev *netdev)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    netdev->n_txq = dev->requested_n_txq;
    if (dev->n_txq_counters != netdev->n_txq) {
        netdev_daqring_set_txq_counters(dev, netdev->n_txq);
    }
    if (dev->pending_ring || dev->fq_pending) {
        netdev_daqring_swap_ring(dev);
        netdev_change_seq_changed(netdev);
    }
    ovs_mutex_unlock(&dev->mutex);
    netdev_rxq_doorbell_ring(dev->doorbell);

    return 0;
}

static int
netdev_daqring_get_numa_id(const struct netdev *netdev)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);
    int numa_id;

    ovs_mutex_lock(&dev->mutex);
    numa_id = dev->ring_numa_id;
    ovs_mutex_unlock(&dev->mutex);

    return numa_id;
}

/* Interface properties. */

static int
netdev_daqring_set_etheraddr(struct netdev *netdev, const struct eth_addr mac)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    if (!eth_addr_equals(dev->hwaddr, mac)) {
        dev->hwaddr = mac;
        netdev_change_seq_changed(netdev);
    }
    ovs_mutex_unlock(&dev->mutex);

    return 0;
}

static int
netdev_daqring_get_etheraddr(const struct netdev *netdev, struct eth_addr *mac)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    *mac = dev->hwaddr;
    ovs_mutex_unlock(&dev->mutex);

    return 0;
}

static int
netdev_daqring_get_mtu(const struct netdev *netdev, int *mtup)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);

    ovs_mutex_lock(&dev->mutex);
    *mtup = dev->mtu;
    ovs_mutex_unlock(&dev->mutex);

    return 0;
}

static int
netdev_daqring_set_mtu(struct netdev *netdev, int mtu)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);

    /* A daqring queues packets of any size; the MTU is only recorded. */
    if (mtu < ETH_PAYLOAD_MIN || mtu > UINT16_MAX) {
        return EINVAL;
    }

    ovs_mutex_lock(&dev->mutex);
    if (dev->mtu != mtu) {
        dev->mtu = mtu;
        netdev_change_seq_changed(netdev);
    }
    ovs_mutex_unlock(&dev->mutex);

    return 0;
}

static int
netdev_daqring_update_flags(struct netdev *netdev, enum netdev_flags off,
                            enum netdev_flags on,
                            enum netdev_flags *old_flagsp)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);

    if ((off | on) & ~(NETDEV_UP | NETDEV_PROMISC)) {
        return EINVAL;
    }

    ovs_mutex_lock(&dev->mutex);
    *old_flagsp = dev->flags;
    dev->flags |= on;
    dev->flags &= ~off;
    if (*old_flagsp != dev->flags) {
        atomic_store_relaxed(&dev->admin_up, !!(dev->flags & NETDEV_UP));
        netdev_rxq_doorbell_ring(dev->doorbell);
        netdev_change_seq_changed(netdev);
    }
    ovs_mutex_unlock(&dev->mutex);

    return 0;
}

static int
netdev_daqring_get_carrier(const struct netdev *netdev OVS_UNUSED,
                           bool *carrier)
{
    *carrier = true;
    return 0;
}

/* Statistics and status. */

static int
netdev_daqring_get_stats(const struct netdev *netdev,
                         struct netdev_stats *stats)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);
    uint64_t full, other, loop;

    ovs_mutex_lock(&dev->mutex);
    netdev_daqring_tx_counts(dev, &stats->tx_packets, &stats->tx_bytes);
    ovs_mutex_unlock(&dev->mutex);
    atomic_read_relaxed(&dev->rx_packets, &stats->rx_packets);
    atomic_read_relaxed(&dev->rx_bytes, &stats->rx_bytes);
    atomic_read_relaxed(&dev->ring_full_drops, &full);
    atomic_read_relaxed(&dev->other_drops, &other);
    atomic_read_relaxed(&dev->loop_drops, &loop);
    stats->tx_dropped = full + other + loop;
    stats->rx_dropped = 0;
    stats->rx_errors = 0;
    stats->tx_errors = 0;

    return 0;
}

static int
netdev_daqring_get_custom_stats(const struct netdev *netdev,
                                struct netdev_custom_stats *custom_stats)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);
    uint64_t values[8];
    static const char *const names[] = {
        "ring_full_drops", "occupancy", "high_watermark", "loop_drops",
        "egress_drops", "shaper_intervals", "shaper_burst_bytes",
        "egress_share_waits",
    };

    atomic_read_relaxed(&dev->ring_full_drops, &values[0]);
    values[1] = netdev_daqring_occupancy(dev);
    atomic_read_relaxed(&dev->high_watermark, &values[2]);
    atomic_read_relaxed(&dev->loop_drops, &values[3]);
    atomic_read_relaxed(&dev->egress_drops, &values[4]);
    atomic_read_relaxed(&dev->shaper_intervals, &values[5]);
    atomic_read_relaxed(&dev->shaper_burst_bytes, &values[6]);
    atomic_read_relaxed(&dev->egress_share_waits, &values[7]);

    custom_stats->size = ARRAY_SIZE(names);
    custom_stats->counters = xcalloc(ARRAY_SIZE(names),
                                     sizeof *custom_stats->counters);
    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        ovs_strlcpy(custom_stats->counters[i].name, names[i],
                    NETDEV_CUSTOM_STATS_NAME_SIZE);
        custom_stats->counters[i].value = values[i];
    }

    return 0;
}

static int
netdev_daqring_get_status(const struct netdev *netdev, struct smap *args)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);
    struct ds rate = DS_EMPTY_INITIALIZER;
    uint64_t capacity, mbufs;
    bool short_of_mbufs;

    ovs_mutex_lock(&daqring_list_mutex);
    short_of_mbufs = daqring_mempool_short;
    capacity = daqring_checked_capacity;
    mbufs = daqring_mempool_mbufs;
    ovs_mutex_unlock(&daqring_list_mutex);

    /* Only what changes with the configuration: ovs-vswitchd rewrites the
     * status of every port whenever one signals a change, so figures that
     * change with the traffic (occupancy, high watermark) are custom
     * statistics and in "netdev-daqring/show" instead. */
    ovs_mutex_lock(&dev->mutex);
    dev->published_mempool_warning = short_of_mbufs;

    smap_add_format(args, "ring_size", "%"PRIu32, dev->ring_size);
    smap_add_format(args, "numa_id", "%d", dev->ring_numa_id);
    smap_add_format(args, "max_burst", "%"PRIu32, dev->cfg.max_burst);
    smap_add_format(args, "poll_interval", "%"PRIu32,
                    dev->cfg.poll_interval);
    smap_add_format(args, "max_rate", "%"PRIu64, dev->cfg.max_rate);
    smap_add_format(args, "frame_overhead", "%"PRIu32,
                    dev->cfg.frame_overhead);
    smap_add_format(args, "max_burst_bytes", "%"PRIu32,
                    dev->cfg.max_burst_bytes);
    if (dev->cfg.max_rate) {
        const struct daqring_shaper *s;

        s = ovsrcu_get_protected(struct daqring_shaper *, &dev->shaper);
        smap_add_format(args, "shaping_burst_bytes", "%"PRIu64,
                        daqring_shaper_burst_bytes(s));
    }
    smap_add_format(args, "flow_buckets", "%"PRIu32,
                    dev->fq ? daqring_fq_n_buckets(dev->fq) : 0);
    netdev_daqring_format_rate(&rate, &dev->cfg, true);
    smap_add(args, "shaping_rate", ds_cstr(&rate));
    if (dev->cfg.poll_interval || dev->cfg.max_rate) {
        smap_add_format(args, "shaping_tsc_hz", "%"PRIu64,
                        daqring_tsc_hz());
    }
    if (short_of_mbufs) {
        smap_add_format(args, "mempool_warning",
                        "daqring capacity %"PRIu64" packets exceeds the "
                        "%"PRIu64" mbufs in OVS DPDK mempools",
                        capacity, mbufs);
    }
    if (dev->config_error) {
        smap_add(args, "config_error", dev->config_error);
    }
    if (dev->egress) {
        smap_add(args, "egress", dev->egress);
        smap_add(args, "egress_state",
                 dev->egress_error ? dev->egress_error : "bound");
    }
    if (dev->share) {
        struct daqring_share_params p;
        unsigned int n_rings;

        daqring_share_get(dev->share, &p, &n_rings);
        smap_add_format(args, "egress_max_rate", "%"PRIu64, p.max_rate);
        smap_add_format(args, "egress_max_burst_bytes", "%"PRIu64,
                        daqring_shaper_burst_bytes(
                            daqring_share_shaper(dev->share)));
        smap_add_format(args, "egress_sharing_rings", "%u", n_rings);
    }
    ovs_mutex_unlock(&dev->mutex);

    ds_destroy(&rate);
    return 0;
}

/* Periodic work: mempool check and status refresh, in the main thread. */

static void
netdev_daqring_count_mbufs(struct rte_mempool *mp, void *aux)
{
    uint64_t *mbufs = aux;

    if (!strncmp(mp->name, DAQRING_OVS_MEMPOOL_PREFIX,
                 strlen(DAQRING_OVS_MEMPOOL_PREFIX))) {
        *mbufs += mp->size;
    }
}

/* Applies again the options of the daqrings that were refused because of
 * the other daqrings of their egress (see 'share_refused'). */
static void
netdev_daqring_retry_shares(void)
{
    struct netdev_daqring *dev;
    struct netdev **retry = NULL;
    size_t n = 0, allocated = 0;

    ovs_mutex_lock(&daqring_list_mutex);
    LIST_FOR_EACH (dev, list_node, &daqring_list) {
        ovs_mutex_lock(&dev->mutex);
        if (dev->share_refused) {
            if (n >= allocated) {
                retry = x2nrealloc(retry, &allocated, sizeof *retry);
            }
            retry[n++] = netdev_ref(&dev->up);
        }
        ovs_mutex_unlock(&dev->mutex);
    }
    ovs_mutex_unlock(&daqring_list_mutex);

    for (size_t i = 0; i < n; i++) {
        struct netdev_daqring *d = netdev_daqring_cast(retry[i]);
        struct smap args;
        char *error = NULL;

        ovs_mutex_lock(&d->mutex);
        smap_clone(&args, &d->last_args);
        ovs_mutex_unlock(&d->mutex);
        netdev_daqring_set_config(retry[i], &args, &error);
        free(error);
        smap_destroy(&args);
        netdev_close(retry[i]);
    }
    free(retry);
}

static void
netdev_daqring_run(const struct netdev_class *netdev_class OVS_UNUSED)
{
    struct netdev_daqring *dev;
    long long int now = time_msec();
    uint64_t mbufs = 0, capacity;
    bool was_short, check_now;

    atomic_read_relaxed(&daqring_check_now, &check_now);
    if (check_now) {
        /* Cleared before the retries, which may leave shares and so set it
         * again: what they set is then done at the next call (which
         * netdev_daqring_wait() makes immediate), not lost. */
        atomic_store_relaxed(&daqring_check_now, false);
        netdev_daqring_retry_shares();
    }
    ovs_mutex_lock(&daqring_list_mutex);
    if (!check_now && now < daqring_next_check) {
        ovs_mutex_unlock(&daqring_list_mutex);
        return;
    }
    daqring_next_check = now + DAQRING_CHECK_INTERVAL;
    if (ovs_list_is_empty(&daqring_list) || !dpdk_available()) {
        ovs_mutex_unlock(&daqring_list_mutex);
        return;
    }
    atomic_read_relaxed(&daqring_total_capacity, &capacity);

    /* Packets from DPDK ports hold mbufs of netdev-dpdk's mempools, so rings
     * larger than these mempools can never fill with such packets: the
     * input ports run out of mbufs and drop first. */
    rte_mempool_walk(netdev_daqring_count_mbufs, &mbufs);
    was_short = daqring_mempool_short;
    daqring_mempool_mbufs = mbufs;
    daqring_checked_capacity = capacity;
    daqring_mempool_short = mbufs && capacity > mbufs;
    if (daqring_mempool_short && !was_short) {
        VLOG_WARN("daqring capacity of %"PRIu64" packets exceeds the "
                  "%"PRIu64" mbufs in OVS DPDK mempools: rings fed by DPDK "
                  "ports cannot fill up and those ports will drop on "
                  "reception first (give the mempools more mbufs or "
                  "reduce ring-size)", capacity, mbufs);
    } else if (!daqring_mempool_short && was_short) {
        VLOG_INFO("daqring capacity of %"PRIu64" packets is now backed by "
                  "%"PRIu64" mbufs in OVS DPDK mempools",
                  capacity, mbufs);
    }

    /* The "status" column is only refreshed on a netdev change, so signal
     * one when the mempool warning that it shows came or went.  Nothing
     * else in it changes with the traffic. */
    LIST_FOR_EACH (dev, list_node, &daqring_list) {
        ovs_mutex_lock(&dev->mutex);
        if (dev->published_mempool_warning != daqring_mempool_short) {
            netdev_change_seq_changed(&dev->up);
        }
        ovs_mutex_unlock(&dev->mutex);
    }
    ovs_mutex_unlock(&daqring_list_mutex);
}

static void
netdev_daqring_wait(const struct netdev_class *netdev_class OVS_UNUSED)
{
    bool check_now;

    atomic_read_relaxed(&daqring_check_now, &check_now);
    ovs_mutex_lock(&daqring_list_mutex);
    if (!ovs_list_is_empty(&daqring_list)) {
        if (check_now) {
            poll_immediate_wake();
        } else {
            poll_timer_wait_until(daqring_next_check);
        }
    }
    ovs_mutex_unlock(&daqring_list_mutex);
}

/* Datapath. */

/* Frees the packets of 'batch' that have already passed DAQRING_MAX_PASSES
 * daqrings, counts them, and keeps the others in order.  Returns the number
 * of packets freed. */
static size_t
netdev_daqring_drop_looping(struct netdev_daqring *dev,
                            struct dp_packet_batch *batch)
{
    size_t n = dp_packet_batch_size(batch);
    struct dp_packet *packet;
    uint64_t orig;
    size_t i;

    DP_PACKET_BATCH_REFILL_FOR_EACH (i, n, packet, batch) {
        if (packet->queue_passes >= DAQRING_MAX_PASSES) {
            dp_packet_delete(packet);
        } else {
            dp_packet_batch_add(batch, packet);
        }
    }
    n -= dp_packet_batch_size(batch);

    VLOG_WARN_RL(&loop_rl, "%s: dropped %"PRIuSIZE" packets that already "
                 "passed %d daqrings (do daqrings forward into each "
                 "other?)", netdev_get_name(&dev->up), n, DAQRING_MAX_PASSES);
    COVERAGE_ADD(daqring_loop_drop, n);
    atomic_add_relaxed(&dev->loop_drops, n, &orig);

    return n;
}

/* Enqueues the packets of 'batch'.  Called by any number of threads at
 * once; the queue id only selects the counters of a thread that has its tx
 * queue to itself ('concurrent_txq' false).  Packets that do not fit are
 * freed and counted, so the whole batch is always consumed. */
static int
netdev_daqring_send(struct netdev *netdev, int qid,
                    struct dp_packet_batch *batch, bool concurrent_txq)
{
    struct netdev_daqring *dev = netdev_daqring_cast(netdev);
    struct rte_ring *ring = dev->ring;
    uint64_t bytes = 0, dropped_bytes = 0;
    unsigned int sent = 0;
    struct dp_packet *packet;
    bool looping = false;
    bool check_passes;
    uint64_t orig;
    size_t cnt;
    bool up;

    /* Sizes must be read before enqueueing: from then on the consumer may
     * already have forwarded and freed the packets.  Pass counts only
     * matter once a packet has reached DAQRING_MAX_PASSES. */
    atomic_read_relaxed(&daqring_max_passes_seen, &check_passes);
    if (OVS_LIKELY(!check_passes)) {
        DP_PACKET_BATCH_FOR_EACH (i, packet, batch) {
            bytes += dp_packet_size(packet);
        }
    } else {
        DP_PACKET_BATCH_FOR_EACH (i, packet, batch) {
            bytes += dp_packet_size(packet);
            looping |= packet->queue_passes >= DAQRING_MAX_PASSES;
        }
    }
    if (OVS_UNLIKELY(looping)) {
        netdev_daqring_drop_looping(dev, batch);
        bytes = 0;
        DP_PACKET_BATCH_FOR_EACH (i, packet, batch) {
            bytes += dp_packet_size(packet);
        }
    }
    cnt = dp_packet_batch_size(batch);
    if (OVS_UNLIKELY(!cnt)) {
        return 0;
    }
    /* The packets of a batch all come from one buffer source, which
     * netdev-dpdk's send assumes as well (see dp_execute_output_action()):
     * one look, so that the receiver need not read each packet's (see
     * 'other_sources'), in a cache line of the dp_packet past the mbuf
     * that nothing else on a bound ring's way reads.  Set before the
     * enqueue, whose release the receiver's dequeue acquires. */
    if (OVS_UNLIKELY(batch->packets[0]->source != DPBUF_DPDK)) {
        bool seen;

        atomic_read_relaxed(&dev->other_sources, &seen);
        if (!seen) {
            atomic_store_relaxed(&dev->other_sources, true);
        }
    }

    atomic_read_relaxed(&dev->admin_up, &up);
    if (OVS_LIKELY(ring && up)) {
        sent = (OVS_LIKELY(!dev->fq)
                ? rte_ring_mp_rts_enqueue_burst(ring,
                                                (void *const *) batch->packets,
                                                cnt, NULL)
                : daqring_fq_enqueue(dev->fq, ring, batch->packets, cnt));
    }

    if (OVS_UNLIKELY(sent < cnt)) {
        for (size_t i = sent; i < cnt; i++) {
            dropped_bytes += dp_packet_size(batch->packets[i]);
            dp_packet_delete(batch->packets[i]);
        }
        if (ring && up) {
            COVERAGE_ADD(daqring_ring_full, cnt - sent);
            atomic_add_relaxed(&dev->ring_full_drops, cnt - sent, &orig);
        } else {
            atomic_add_relaxed(&dev->other_drops, cnt - sent, &orig);
        }
    }

    if (OVS_LIKELY(sent)) {
        /* The enqueue's tail update was an atomic read-modify-write. */
        netdev_rxq_doorbell_ring_after_rmw(dev->doorbell);
        if (OVS_LIKELY(!concurrent_txq && qid >= 0
                       && qid < dev->n_txq_counters)) {
            /* This thread is the only writer of these counters. */
            struct daqring_txq_counters *c = &dev->txq_counters[qid];
            uint64_t value;

            atomic_read_relaxed(&c->packets, &value);
            atomic_store_relaxed(&c->packets, value + sent);
            atomic_read_relaxed(&c->bytes, &value);
            atomic_store_relaxed(&c->bytes, value + bytes - dropped_bytes);
        } else {
            atomic_add_relaxed(&dev->tx_packets, sent, &orig);
            atomic_add_relaxed(&dev->tx_bytes, bytes - dropped_bytes,
                               &orig);
        }
    }

    return 0;
}

static struct netdev_rxq *
netdev_daqring_rxq_alloc(void)
{
    struct netdev_rxq_daqring *rx = xzalloc(sizeof *rx);

    return &rx->up;
}

static int
netdev_daqring_rxq_construct(struct netdev_rxq *rxq)
{
    struct netdev_rxq_daqring *rx = netdev_rxq_daqring_cast(rxq);

    rx->dev = netdev_daqring_cast(rxq->netdev);
    ovs_mutex_lock(&rx->dev->mutex);
    rx->shaping = rx->dev->shaping;
    ovs_mutex_unlock(&rx->dev->mutex);
    netdev_rxq_doorbell_ring(rx->dev->doorbell);

    return 0;
}

static int
netdev_daqring_rxq_doorbell(const struct netdev_rxq *rxq)
{
    return netdev_daqring_cast(rxq->netdev)->doorbell;
}

static void
netdev_daqring_rxq_destruct(struct netdev_rxq *rxq)
{
    struct netdev_rxq_daqring *rx = netdev_rxq_daqring_cast(rxq);

    /* No thread polls 'rxq' any more. */
    ovs_mutex_lock(&rx->dev->mutex);
    rx->dev->shaping = rx->shaping;
    ovs_mutex_unlock(&rx->dev->mutex);
}

static void
netdev_daqring_rxq_dealloc(struct netdev_rxq *rxq)
{
    struct netdev_rxq_daqring *rx = netdev_rxq_daqring_cast(rxq);

    free(rx);
}

/* Keeps the first packets of 'batch' that share the buffer source of the
 * first one and puts the others back in front of the stash, to be received
 * next time.  dpif-netdev and netdev-dpdk assume that all packets of a batch
 * come from the same source (see dp_execute_output_action()), which
 * holds for ports that allocate their own packets but not for a daqring fed
 * by both DPDK ports and other ports or packet clones: netdev-dpdk would
 * hand a malloc()ed packet to the NIC as an mbuf.
 *
 * 'from_stash' is the number of packets of 'batch' that came from the
 * stash. */
static void
netdev_daqring_split_batch(struct netdev_daqring *dev,
                           struct dp_packet_batch *batch, size_t from_stash)
{
    size_t n = dp_packet_batch_size(batch);
    enum dp_packet_source source = batch->packets[0]->source;
    size_t keep = 1;

    while (batch->packets[keep]->source == source) {
        keep++;
    }

    COVERAGE_INC(daqring_mixed_batch);
    if (n > from_stash) {
        /* The stash is empty, otherwise nothing would have come from the
         * ring. */
        memcpy(dev->stash, &batch->packets[keep],
               (n - keep) * sizeof *dev->stash);
        dev->stash_pos = 0;
        dev->stash_n = n - keep;
    } else {
        /* All came from the stash and are still in it, just before
         * 'stash_pos'. */
        dev->stash_pos -= n - keep;
    }
    atomic_store_relaxed(&dev->stash_count, dev->stash_n - dev->stash_pos);
    batch->count = keep;
}

/* Called by the thread that polls the daqring when it has nothing to
 * deliver: the ring and the stash are empty, or the port is down or has no
 * ring.  Clears the doorbell, so that the PMD thread stops polling the
 * daqring until a sender enqueues packets (or the port comes up or is
 * reconfigured), then looks again: a sender that enqueued after the look
 * that found nothing rang the doorbell, and the clear may have erased
 * that. */
static void
netdev_daqring_rxq_idle(struct netdev_daqring *dev)
{
    bool up;

    COVERAGE_INC(daqring_idle_poll);
    if (dev->doorbell < 0) {
        return;
    }
    netdev_rxq_doorbell_clear(dev->doorbell);
    atomic_read_relaxed(&dev->admin_up, &up);
    if (up && dev->ring && (dev->stash_n > dev->stash_pos
                            || !netdev_daqring_ring_empty(dev))) {
        netdev_rxq_doorbell_ring(dev->doorbell);
    }
}

/* Prepares 'packet', just dequeued from 'dev', to enter the datapath again,
 * like dp_packet_batch_init_packet_fields() does for a packet received by a
 * port, and:
 *
 *   - Clears its flow mark, as netdev_pop_header() does for a packet that
 *     enters the datapath again after decapsulation.  The mark comes from
 *     hardware offload of the flow that sent the packet to the daqring; with
 *     it, dp_netdev_hw_flow() would find that flow again and send the packet
 *     back into the ring, for ever.  Tx offload requests stay.
 *
 *   - Mixes a value of the daqring into its RSS hash, as dpif-netdev does
 *     with the recirculation depth.  The flow caches (EMC and SMC) place
 *     entries by that hash, and the entries of the packet's flow from its
 *     input port and from the daqring would otherwise take the same places
 *     and evict each other on every packet.
 *
 *   - Counts the pass, see DAQRING_MAX_PASSES. */
static inline void
netdev_daqring_reenter(const struct netdev_daqring *dev,
                       struct dp_packet *packet)
{
#ifdef DEF_OL_FLAG
    /* OVS 3.x: the mark is valid with offload flag DP_PACKET_OL_FLOW_MARK
     * (one of the flags that dp-packet.h defines with DEF_OL_FLAG()). */
    *dp_packet_ol_flags_ptr(packet) &= ~DP_PACKET_OL_FLOW_MARK;
#else
    /* OVS 4.0 and later: with member 'has_mark'. */
    packet->has_mark = false;
#endif
    *dp_packet_flow_mark_ptr(packet) = 0;
    if (dp_packet_rss_valid(packet)) {
        dp_packet_set_rss_hash(packet,
                               hash_finish(dp_packet_get_rss_hash(packet),
                                           dev->rss_basis));
    }
    if (packet->queue_passes < UINT8_MAX) {
        packet->queue_passes++;
        if (OVS_UNLIKELY(packet->queue_passes == DAQRING_MAX_PASSES)) {
            atomic_store_relaxed(&daqring_max_passes_seen, true);
        }
    }
    dp_packet_reset_cutlen(packet);
    packet->packet_type = htonl(PT_ETH);
}

/* Called by the thread that polls the daqring of 'rx' when it has packets
 * but shaper 's' makes it wait, at TSC 'now'.  Clears the doorbell and has
 * this thread ring it again when the daqring may send (its next interval,
 * or when its bucket holds tokens again), so that the thread does not poll
 * a waiting daqring on every iteration.  A sender that enqueues meanwhile
 * rings the doorbell earlier, which costs one more poll and deferral (the
 * thread keeps the earlier deadline).  The packets are no backlog for the
 * thread, which wakes up for the deadline even if it sleeps (pmd-maxsleep),
 * unless the daqring has no doorbell and must be polled on every
 * iteration. */
static void
netdev_daqring_rxq_defer(struct netdev_rxq_daqring *rx, uint64_t deadline)
{
    netdev_rxq_doorbell_defer(rx->dev->doorbell, deadline);
    rx->up.backlog = rx->dev->doorbell < 0;
}

/* Receives up to 'max-burst' packets.  Called by the one PMD thread that
 * polls the daqring.
 *
 * Packet shaping ('poll-interval') is a buffered leaky bucket: at most
 * 'max-burst' packets per 'poll-interval' (see daqring_shaper_admit()).
 * An interval is charged for the packets that left, not for a poll: what a
 * poll did not use of the burst (the ring held fewer packets, or
 * netdev_daqring_split_batch() kept only the packets of one buffer source)
 * may leave at later polls within the same interval.
 *
 * Byte shaping ('max-rate') is a token bucket, see lib/daqring-shaper.h:
 * at most 'max-burst' packets per poll, as long as the bucket holds
 * tokens.  Each packet's cost is computed once, when it is taken.
 *
 * A daqring that shares its egress ('egress-max-rate') also needs the
 * tokens of the egress's shared bucket, and its fair share of them: it
 * claims a budget (see daqring_share_claim()), packets leave while both
 * its own bucket (if it has 'max-rate') and the budget hold tokens, and
 * the share is charged for what left (daqring_share_charge()).
 *
 * The packets are prepared to enter the datapath again (see
 * netdev_daqring_reenter()), unless the datapath sends them straight to
 * the egress port of an egress binding ('rxq->egress_bound'). */
static int
netdev_daqring_rxq_recv(struct netdev_rxq *rxq, struct dp_packet_batch *batch,
                        int *qfill)
{
    struct netdev_rxq_daqring *rx = netdev_rxq_daqring_cast(rxq);
    struct netdev_daqring *dev = rx->dev;
    struct rte_ring *ring = dev->ring;
    size_t from_stash = 0, n_stash, n;
    const struct daqring_shaper *s, *cs;
    struct daqring_share *share;
    unsigned int avail = 0;
    uint64_t bytes = 0, occupancy, value, now = 0;
    struct daqring_share_grant grant = { .budget = 0 };
    int64_t budget = 0, own = 0, start = 0;
    bool other_sources;
    bool mixed = false;
    uint32_t burst;
    bool shaped;
    bool up;

    /* Whether packets stay queued for a later call: a PMD thread with
     * pmd-maxsleep does not sleep while they do (see struct netdev_rxq). */
    rxq->backlog = false;

    s = ovsrcu_get(struct daqring_shaper *, &dev->shaper);
    atomic_read_relaxed(&dev->admin_up, &up);
    if (OVS_UNLIKELY(!ring || !up)) {
        if (s->share) {
            /* Set down: it is not polled again until set up, and no
             * longer counts among the rings that wait for the share. */
            daqring_share_idle(s->share, s->share_slot);
        }
        netdev_daqring_rxq_idle(dev);
        return EAGAIN;
    }

    /* A new shaper takes 'rx->shaping' over in daqring_shaper_admit(),
     * which carries the bucket's level and the interval over. */
    burst = s->max_burst;
    shaped = daqring_shaper_shapes(s);
    share = s->share;
    /* The shaper that costs the packets: the share's, if any, which has the
     * same frame-overhead as 's'. */
    cs = share ? daqring_share_shaper(share) : s;
    n_stash = dev->stash_n - dev->stash_pos;

    if (shaped) {
        if (!n_stash && netdev_daqring_ring_empty(dev)) {
            if (share) {
                daqring_share_idle(share, s->share_slot);
            }
            daqring_shaper_idle(&rx->shaping);
            netdev_daqring_rxq_idle(dev);
            return EAGAIN;
        }
        now = rte_get_tsc_cycles();
        if ((s->interval || s->rate)
            && !daqring_shaper_admit(&rx->shaping, s, now, &burst,
                                     &budget)) {
            /* A poll of a shaped daqring that has packets but must wait:
             * for its own shaper, not for the share. */
            COVERAGE_INC(daqring_wait_poll);
            if (share) {
                daqring_share_idle(share, s->share_slot);
            }
            netdev_daqring_rxq_defer(
                rx, daqring_shaper_deadline(&rx->shaping, s, now));
            return EAGAIN;
        }
        if (share) {
            enum daqring_share_claim claim;

            claim = daqring_share_claim(share, s->share_slot, now, &grant);
            if (claim != DAQRING_SHARE_GRANTED) {
                /* The egress's other daqrings have its rate, or this one
                 * is ahead of its share of it. */
                COVERAGE_INC(daqring_wait_poll);
                atomic_read_relaxed(&dev->egress_share_waits, &value);
                atomic_store_relaxed(&dev->egress_share_waits, value + 1);
                netdev_daqring_rxq_defer(
                    rx, daqring_share_deadline(share, claim, now));
                return EAGAIN;
            }
            /* Packets leave while both buckets hold tokens. */
            own = budget;
            budget = s->rate ? MIN(own, grant.budget) : grant.budget;
            start = budget;
        }
    }

    if (OVS_UNLIKELY(n_stash)) {
        from_stash = MIN(n_stash, burst);
        if (cs->rate) {
            from_stash = daqring_shaper_take(cs, &budget,
                                             &dev->stash[dev->stash_pos],
                                             from_stash);
        }
        memcpy(batch->packets, &dev->stash[dev->stash_pos],
               from_stash * sizeof *batch->packets);
        dev->stash_pos += from_stash;
        n_stash -= from_stash;
        atomic_store_relaxed(&dev->stash_count, n_stash);
    }
    n = from_stash;
    if (OVS_LIKELY(!cs->rate && !dev->fq)) {
        /* Unshaped in bytes, one ring: the dequeue itself, inline. */
        if (n < burst) {
            n += rte_ring_sc_dequeue_burst(ring,
                                           (void **) &batch->packets[n],
                                           burst - n, &avail);
        } else {
            avail = rte_ring_count(ring);
        }
    } else if (n < burst && (!cs->rate || budget > 0)) {
        n += (OVS_LIKELY(!dev->fq)
              ? daqring_shaper_dequeue(ring, cs, &budget, &batch->packets[n],
                                       burst - n, &avail)
              : daqring_fq_dequeue(dev->fq, ring, cs, &budget,
                                   &batch->packets[n], burst - n, &avail));
    } else {
        avail = netdev_daqring_ring_count(dev);
    }
    if (!n) {
        if (share) {
            /* Nothing left: nothing to charge. */
            daqring_share_idle(share, s->share_slot);
        }
        daqring_shaper_idle(&rx->shaping);
        netdev_daqring_rxq_idle(dev);
        return EAGAIN;
    }

    occupancy = n + n_stash + avail;
    atomic_read_relaxed(&dev->high_watermark, &value);
    if (occupancy > value) {
        atomic_store_relaxed(&dev->high_watermark, occupancy);
    }

    batch->count = n;
    /* Read after the dequeue: a sender set it before its enqueue. */
    atomic_read_relaxed(&dev->other_sources, &other_sources);
    if (OVS_LIKELY(!other_sources)) {
        /* Every packet is an mbuf of a DPDK mempool: the sizes are in the
         * mbufs' first cache line, which the egress port's driver reads
         * too, the sources in a line that it does not need. */
        for (size_t i = 0; i < n; i++) {
            bytes += dp_packet_size(batch->packets[i]);
        }
    } else {
        enum dp_packet_source source = batch->packets[0]->source;

        for (size_t i = 0; i < n; i++) {
            const struct dp_packet *packet = batch->packets[i];

            mixed |= packet->source != source;
            bytes += dp_packet_size(packet);
        }
    }
    if (OVS_UNLIKELY(mixed)) {
        netdev_daqring_split_batch(dev, batch, from_stash);
        for (size_t i = batch->count; i < n; i++) {
            const struct dp_packet *packet = batch->packets[i];

            /* Put back: not received now, and not charged. */
            bytes -= dp_packet_size(packet);
            if (cs->rate) {
                budget += daqring_shaper_frame_cost(cs, packet);
            }
        }
        n = batch->count;
    }
    /* Charge what leaves: daqring_shaper_take() took the cost of each
     * packet from 'budget' (a copy of the bucket level), and the packets
     * that netdev_daqring_split_batch() put back got theirs back. */
    if (share) {
        /* 'budget' went down from 'start' by the cost of what left. */
        daqring_share_charge(share, s->share_slot, &grant, start - budget);
        budget = own - (start - budget);
    }
    if ((s->interval || s->rate)
        && daqring_shaper_charge(&rx->shaping, s, now, n, budget)) {
        atomic_read_relaxed(&dev->shaper_intervals, &value);
        atomic_store_relaxed(&dev->shaper_intervals, value + 1);
    }
    if (s->rate) {
        uint64_t excess = daqring_shaper_excess_bytes(&rx->shaping, s);

        atomic_read_relaxed(&dev->shaper_burst_bytes, &value);
        if (excess > value) {
            atomic_store_relaxed(&dev->shaper_burst_bytes, excess);
        }
    }
    if (!rxq->egress_bound) {
        /* The packets enter the datapath's flow tables again.  A bound
         * daqring's packets go straight to its egress port, which is not a
         * daqring, and never meet the tables or a daqring again: the
         * preparation would be wasted on them. */
        for (size_t i = 0; i < n; i++) {
            netdev_daqring_reenter(dev, batch->packets[i]);
        }
    }

    atomic_read_relaxed(&dev->rx_packets, &value);
    atomic_store_relaxed(&dev->rx_packets, value + n);
    atomic_read_relaxed(&dev->rx_bytes, &value);
    atomic_store_relaxed(&dev->rx_bytes, value + bytes);

    if (qfill) {
        *qfill = occupancy - n;
    }
    rxq->backlog = occupancy > n;
    if (rxq->backlog && (s->interval || s->rate)
        && (s->interval ? !rx->shaping.burst_left
                        : rx->shaping.tokens <= 0)) {
        /* The rest waits for the shaper: defer now rather than at the
         * next poll, which would find nothing to do.  (A ring that shares
         * its egress spent its share's budget, unless it was short of
         * packets or of its own tokens: it finds out at its next poll.) */
        netdev_daqring_rxq_defer(
            rx, daqring_shaper_deadline(&rx->shaping, s, now));
    }

    return 0;
}

/* unixctl commands. */

/* Returns the daqring named 'name', or NULL. */
static struct netdev_daqring *
netdev_daqring_lookup(const char *name)
    OVS_REQUIRES(daqring_list_mutex)
{
    struct netdev_daqring *dev;

    LIST_FOR_EACH (dev, list_node, &daqring_list) {
        if (!strcmp(netdev_get_name(&dev->up), name)) {
            return dev;
        }
    }
    return NULL;
}

/* Appends to 'flags' the conditions of 'dev' that "netdev-daqring/show"
 * flags, comma-separated, or "-" if none. */
static void
netdev_daqring_format_flags(struct ds *flags, const struct netdev_daqring *dev)
    OVS_REQUIRES(dev->mutex)
{
    /* "config_error": the switch refused the options in the database and
     * keeps its previous configuration, which the other columns show. */
    if (dev->config_error) {
        ds_put_cstr(flags, "config_error");
    }
    if (!flags->length) {
        ds_put_char(flags, '-');
    }
}

static void
netdev_daqring_unixctl_show(struct unixctl_conn *conn, int argc,
                            const char *argv[], void *aux OVS_UNUSED)
{
    struct ds reply = DS_EMPTY_INITIALIZER;
    struct netdev_daqring *dev;
    int width = strlen("port");
    int egress_width = strlen("egress");

    ovs_mutex_lock(&daqring_list_mutex);
    if (argc > 1 && !netdev_daqring_lookup(argv[1])) {
        char *error = xasprintf("%s: no such daqring port", argv[1]);

        ovs_mutex_unlock(&daqring_list_mutex);
        unixctl_command_reply_error(conn, error);
        free(error);
        return;
    }
    if (ovs_list_is_empty(&daqring_list)) {
        ovs_mutex_unlock(&daqring_list_mutex);
        unixctl_command_reply(conn, "no daqrings\n");
        return;
    }

    LIST_FOR_EACH (dev, list_node, &daqring_list) {
        width = MAX(width, strlen(netdev_get_name(&dev->up)));
        ovs_mutex_lock(&dev->mutex);
        if (dev->egress) {
            egress_width = MAX(egress_width, strlen(dev->egress) + 1);
        }
        ovs_mutex_unlock(&dev->mutex);
    }
    ds_put_format(&reply, "%-*s %8s %8s %8s %12s %12s %10s %5s %8s %10s "
                  "%4s %10s %-*s %s\n", width, "port", "size", "occup",
                  "high-wm", "enqueued", "dequeued", "full-drops", "burst",
                  "interval", "rate", "numa", "egr-drops", egress_width,
                  "egress", "flags");

    LIST_FOR_EACH (dev, list_node, &daqring_list) {
        const char *name = netdev_get_name(&dev->up);
        uint64_t tx, tx_bytes, rx, drops, hwm, egress_drops;
        struct ds flags = DS_EMPTY_INITIALIZER;
        struct ds rate = DS_EMPTY_INITIALIZER;
        char *egress;

        if (argc > 1 && strcmp(name, argv[1])) {
            continue;
        }
        ovs_mutex_lock(&dev->mutex);
        netdev_daqring_tx_counts(dev, &tx, &tx_bytes);
        ovs_mutex_unlock(&dev->mutex);
        atomic_read_relaxed(&dev->rx_packets, &rx);
        atomic_read_relaxed(&dev->ring_full_drops, &drops);
        atomic_read_relaxed(&dev->high_watermark, &hwm);
        atomic_read_relaxed(&dev->egress_drops, &egress_drops);

        /* "egress": the bound egress port, with "!" if the datapath could
         * not bind it (see the status column), or "-" for two-rule
         * steering. */
        ovs_mutex_lock(&dev->mutex);
        netdev_daqring_format_rate(&rate, &dev->cfg, false);
        netdev_daqring_format_flags(&flags, dev);
        egress = xasprintf("%s%s", dev->egress ? dev->egress : "-",
                           dev->egress && dev->egress_error ? "!" : "");
        ds_put_format(&reply, "%-*s %8"PRIu32" %8"PRIu64" %8"PRIu64
                      " %12"PRIu64" %12"PRIu64" %10"PRIu64" %5"PRIu32
                      " %8"PRIu32" %10s %4d %10"PRIu64" %-*s %s\n", width,
                      name, dev->ring_size, netdev_daqring_occupancy(dev),
                      hwm, tx, rx, drops, dev->cfg.max_burst,
                      dev->cfg.poll_interval, ds_cstr(&rate),
                      dev->ring_numa_id, egress_drops, egress_width, egress,
                      ds_cstr(&flags));
        ovs_mutex_unlock(&dev->mutex);
        free(egress);
        ds_destroy(&flags);
        ds_destroy(&rate);
    }
    ovs_mutex_unlock(&daqring_list_mutex);

    unixctl_command_reply(conn, ds_cstr(&reply));
    ds_destroy(&reply);
}

static void
netdev_daqring_unixctl_reset_watermark(struct unixctl_conn *conn, int argc,
                                       const char *argv[],
                                       void *aux OVS_UNUSED)
{
    struct netdev_daqring *dev;
    int n = 0;

    ovs_mutex_lock(&daqring_list_mutex);
    LIST_FOR_EACH (dev, list_node, &daqring_list) {
        if (argc > 1 && strcmp(netdev_get_name(&dev->up), argv[1])) {
            continue;
        }
        /* The polling thread may raise it again right away; it only ever
         * stores occupancies it has just seen.  Likewise the largest burst
         * of byte shaping. */
        atomic_store_relaxed(&dev->high_watermark,
                             netdev_daqring_occupancy(dev));
        atomic_store_relaxed(&dev->shaper_burst_bytes, 0);
        n++;
    }
    ovs_mutex_unlock(&daqring_list_mutex);

    if (argc > 1 && !n) {
        char *error = xasprintf("%s: no such daqring port", argv[1]);

        unixctl_command_reply_error(conn, error);
        free(error);
    } else {
        unixctl_command_reply(conn, NULL);
    }
}

static const struct netdev_class netdev_daqring_class = {
    .type = "daqring",
    .is_pmd = true,
    .queues_for_datapath = true,
    .run = netdev_daqring_run,
    .wait = netdev_daqring_wait,
    .alloc = netdev_daqring_alloc,
    .construct = netdev_daqring_construct,
    .destruct = netdev_daqring_destruct,
    .dealloc = netdev_daqring_dealloc,
    .get_config = netdev_daqring_get_config,
    .set_config = netdev_daqring_set_config,
    .get_numa_id = netdev_daqring_get_numa_id,
    .set_tx_multiq = netdev_daqring_set_tx_multiq,
    .send = netdev_daqring_send,
    .set_etheraddr = netdev_daqring_set_etheraddr,
    .get_etheraddr = netdev_daqring_get_etheraddr,
    .get_mtu = netdev_daqring_get_mtu,
    .set_mtu = netdev_daqring_set_mtu,
    .get_carrier = netdev_daqring_get_carrier,
    .get_stats = netdev_daqring_get_stats,
    .get_custom_stats = netdev_daqring_get_custom_stats,
    .get_status = netdev_daqring_get_status,
    .update_flags = netdev_daqring_update_flags,
    .reconfigure = netdev_daqring_reconfigure,
    .rxq_alloc = netdev_daqring_rxq_alloc,
    .rxq_construct = netdev_daqring_rxq_construct,
    .rxq_destruct = netdev_daqring_rxq_destruct,
    .rxq_dealloc = netdev_daqring_rxq_dealloc,
    .rxq_recv = netdev_daqring_rxq_recv,
    .rxq_doorbell = netdev_daqring_rxq_doorbell,
    .get_egress = netdev_daqring_get_egress,
    .set_egress_error = netdev_daqring_set_egress_error,
    .egress_dropped = netdev_daqring_egress_dropped,
    .set_egress_refusal = netdev_daqring_set_egress_refusal,
    .get_egress_refusal = netdev_daqring_get_egress_refusal,
};

void
netdev_daqring_register(void)
{
    /* The TSC frequency that shaping counts in is measured from now on, so
     * that configuring the first shaped daqring does not wait for it. */
    daqring_tsc_calibrate_start();
    unixctl_command_register("netdev-daqring/show", "[port]", 0, 1,
                             netdev_daqring_unixctl_show, NULL);
    unixctl_command_register("netdev-daqring/reset-watermark", "[port]", 0, 1,
                             netdev_daqring_unixctl_reset_watermark, NULL);
    netdev_register_provider(&netdev_daqring_class);
}
