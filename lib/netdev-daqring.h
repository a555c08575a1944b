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

#ifndef NETDEV_DAQRING_H
#define NETDEV_DAQRING_H 1

/* "daqring" network devices.
 *
 * A daqring is a logical port of the userspace datapath backed by a DPDK
 * rte_ring of packet pointers.  Packets sent to it are queued (without a
 * copy) and re-enter the datapath, with the daqring as input port, when the
 * PMD thread that polls its single rx queue dequeues them.  Dequeueing can be
 * shaped by a buffered leaky bucket ("max-burst" packets per
 * "poll-interval" microseconds), so a daqring acts as a deep, shaped buffer
 * in front of an egress port.  See Documentation/topics/daqring.rst. */

/* Registers the "daqring" netdev class and its unixctl commands.  Only
 * available in builds with DPDK support; the class is registered even if
 * DPDK is not initialized, so that configuring such a port reports a clear
 * error. */
void netdev_daqring_register(void);

#endif /* netdev-daqring.h */
