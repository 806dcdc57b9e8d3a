/*
 * block.h - layout shared by bpf/block.bpf.c and probes/block.c.
 *
 * The kernel side keeps, per (device, slot, op), counters and three
 * histograms in one BPF array that user space mmaps and reads without a
 * syscall.  Slots shard the array by CPU (slot = cpu % nslots) so that CPUs
 * rarely touch the same cache line; every block_stats is a whole number of
 * cache lines and starts on one.  A device's entries are contiguous
 * (index (device * nslots + slot) * BLOCK_OPS + op), so user space maps only
 * the devices that have done I/O: a mapped BPF array is resident whole.  Updates are atomic adds, which keep
 * nested completions (hard IRQ over soft IRQ on one CPU) exact.
 *
 * Histogram buckets use the fleet-wide layout (lib/model/hist_layout.h), cut off
 * where values stop making sense for block I/O: latencies at 2^40 ns
 * (~18 min) and sizes at 2^32 bytes; larger values land in the last bucket.
 */
#ifndef FL_BPF_BLOCK_H
#define FL_BPF_BLOCK_H

#include "model/hist_layout.h"

#define BLOCK_OP_READ 0
#define BLOCK_OP_WRITE 1
#define BLOCK_OP_FLUSH 2
#define BLOCK_OP_DISCARD 3
#define BLOCK_OP_OTHER 4
#define BLOCK_OPS 5

/* Issue-time slots for queues without kernel timestamps (power of two). */
#define BLOCK_ISSUE_SLOTS 65536

/* hist_bucket_index(2^40 - 1) + 1 and hist_bucket_index(2^32 - 1) + 1 */
#define BLOCK_LAT_BUCKETS ((40 - HIST_G + 1) * HIST_SUB)
#define BLOCK_SIZE_BUCKETS ((32 - HIST_G + 1) * HIST_SUB)

/* Error classes of blk_status_t, as user space names them. */
#define BLOCK_ERR_IO 0		/* BLK_STS_IOERR */
#define BLOCK_ERR_TIMEOUT 1	/* BLK_STS_TIMEOUT */
#define BLOCK_ERR_MEDIUM 2	/* BLK_STS_MEDIUM */
#define BLOCK_ERR_OTHER 3	/* anything else non-zero */
#define BLOCK_ERR_CLASSES 4

struct block_stats {
	__u64 ios;		/* completions */
	__u64 bytes;		/* bytes completed */
	__u64 untimed;		/* completions with no issue time known */
	__u64 lat_sum_ns;	/* sum of issue -> complete */
	__u64 queue_sum_ns;	/* sum of alloc -> issue */
	__u64 queued;		/* samples in the queue histogram */
	__u64 pad[2];
	__u64 errors[BLOCK_ERR_CLASSES];	/* completions with a non-zero status */
	__u64 pad2[4];
	__u64 lat[BLOCK_LAT_BUCKETS];	/* device time: issue -> complete */
	__u64 queue[BLOCK_LAT_BUCKETS];	/* queue time: request alloc -> issue */
	__u64 size[BLOCK_SIZE_BUCKETS];	/* bytes per completion */
} __attribute__((aligned(64)));

#endif
