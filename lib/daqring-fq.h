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

#ifndef DAQRING_FQ_H
#define DAQRING_FQ_H 1

/* Flow fairness of a daqring ("flow-buckets"): the flows that have packets
 * queued are served in turns, DAQRING_FQ_QUANTUM bytes per flow per round
 * (deficit round-robin), instead of first come, first served, for any
 * number of flows up to the number of buckets.  A flow's packets always
 * leave in the order in which they arrived.  Any number of threads
 * enqueue, one thread (the daqring's polling thread) dequeues.  See
 * lib/daqring-fq.c for how. */

#include <stddef.h>
#include <stdint.h>

/* Bytes that a flow may send per turn: a full frame of a 1500-byte MTU
 * (ETH_TOTAL_MAX). */
#define DAQRING_FQ_QUANTUM 1514

/* Packets that one daqring_fq_dequeue() moves from the ring into the flow
 * queues at most: 4 batches (4 x NETDEV_MAX_BURST). */
#define DAQRING_FQ_PULL_MAX 128

struct daqring_fq;
struct daqring_shaper;
struct dp_packet;
struct rte_ring;

struct daqring_fq *daqring_fq_create(const char *name, uint32_t n_buckets,
                                     uint32_t capacity, char **errp);
size_t daqring_fq_destroy(struct daqring_fq *);

unsigned int daqring_fq_enqueue(struct daqring_fq *, struct rte_ring *,
                                struct dp_packet **, size_t cnt);
size_t daqring_fq_dequeue(struct daqring_fq *, struct rte_ring *,
                          const struct daqring_shaper *, int64_t *budget,
                          struct dp_packet **, size_t n,
                          unsigned int *avail);
uint32_t daqring_fq_count(const struct daqring_fq *);
uint32_t daqring_fq_n_buckets(const struct daqring_fq *);

size_t daqring_fq_drain(struct daqring_fq *, struct rte_ring *,
                        struct dp_packet **);
void daqring_fq_restart(struct daqring_fq *, uint32_t capacity, size_t n);

#endif /* daqring-fq.h */
