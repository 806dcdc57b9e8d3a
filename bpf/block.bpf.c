// SPDX-License-Identifier: GPL-2.0
/*
 * block.bpf.c - block I/O latency, size and error histograms per device
 * and op, from the block tracepoints (tp_btf: no tracefs, typed args).
 *
 * Typed tp_btf arguments are read with direct loads (CO-RE relocated),
 * not bpf_probe_read_kernel() calls: most of the per-event cost is gone.
 *
 * Timing without a per-request hash where the kernel already keeps time:
 * when the queue has QUEUE_FLAG_STATS set, blk_mq_start_request() stamps
 * rq->io_start_time_ns right after the block_rq_issue tracepoint, and
 * rq->start_time_ns holds the allocation time whenever I/O accounting is
 * on.  Completion then reads both from the request.  Only for queues
 * without the flag does block_rq_issue record its own time in an LRU hash
 * keyed by the request, which completion consumes.  User space finds the
 * flag's bit number in the kernel's BTF (it is an anonymous enum, and its
 * value moved between kernels); if it cannot, stats_bit stays -1 and the
 * slots are used for every request.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "model/hist_layout.h"
#include "block.h"
#include "blk_rq.h"

#define DEV_PROBES 8

const volatile __u32 max_devs = 32;
const volatile __u32 nslots = 1;
const volatile int stats_bit = -1;

__u64 dev_overflow;	/* completions on devices beyond max_devs */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);		/* set by user space */
	__type(key, __u32);
	__type(value, struct block_stats);
} stats SEC(".maps");

/* Device table: slot -> dev_t (kernel encoding), 0 = free. u64 for cmpxchg. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 32);	/* set by user space */
	__type(key, __u32);
	__type(value, __u64);
} devs SEC(".maps");

/*
 * Issue times for queues that do not stamp io_start_time_ns: an array
 * indexed by a hash of the request's identity (device, hardware queue,
 * driver tag: unique while the request is in flight), two ways per hash.
 * An array slot costs a fraction of a hash-map update.  A slot records
 * which request owns it, so a collision (both ways busy) degrades to an
 * untimed completion, counted, never a wrong latency.
 */
struct issue_slot {
	__u64 id;
	__u64 ts;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BLOCK_ISSUE_SLOTS);
	__type(key, __u32);
	__type(value, struct issue_slot);
} issue_ts SEC(".maps");

static __always_inline __u32 issue_hash(__u64 id)
{
	return (__u32)((id * 0x9e3779b97f4a7c15ULL) >> 40) & (BLOCK_ISSUE_SLOTS - 1) & ~1U;
}

/* Identity of an in-flight request; the verifier keeps addresses opaque. */
static __always_inline __u64 rq_ident(struct request *rq, __u32 dev)
{
	__u32 hwq = rq->mq_hctx->queue_num;
	__u32 tag = (__u32)rq->tag;

	return (__u64)dev << 32 | (__u64)(hwq & 0xffff) << 16 | (tag & 0xffff);
}

/* Find or claim the device's slot (open addressing, bounded probes). */
static __always_inline int dev_slot(__u32 dev)
{
	__u32 h = (dev * 2654435761u) % max_devs;

	for (int i = 0; i < DEV_PROBES; i++) {
		__u32 k = (h + i) % max_devs;
		__u64 *v = bpf_map_lookup_elem(&devs, &k);

		if (!v)
			return -1;
		if (*v == dev)
			return k;
		if (*v == 0) {
			__u64 old = __sync_val_compare_and_swap(v, 0, (__u64)dev);

			if (old == 0 || old == dev)
				return k;
		}
	}
	return -1;
}

/* blk_status_t values (include/linux/blk_types.h), stable since 4.13 */
static __always_inline __u32 err_class(blk_status_t st)
{
	switch ((__u8)st) {
	case 10: return BLOCK_ERR_IO;
	case 2: return BLOCK_ERR_TIMEOUT;
	case 7: return BLOCK_ERR_MEDIUM;
	default: return BLOCK_ERR_OTHER;
	}
}

static __always_inline __u32 clamp_bucket(__u64 v, __u32 nbuckets)
{
	__u32 b = hist_bucket_index(v);

	return b < nbuckets ? b : nbuckets - 1;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(block_rq_issue, struct request *rq)
{
	__u64 id, ts;

	if (stats_bit >= 0) {
		unsigned long flags = rq->q->queue_flags;

		if (flags & (1UL << stats_bit))
			return 0;	/* the kernel stamps io_start_time_ns */
	}
	ts = bpf_ktime_get_ns();
	id = rq_ident(rq, rq_dev(rq));
	for (__u32 way = 0; way < 2; way++) {
		__u32 k = issue_hash(id) + way;
		struct issue_slot *sl = bpf_map_lookup_elem(&issue_ts, &k);

		if (!sl)
			return 0;
		/* free, ours from before, or stale (older than 10 s): take it */
		if (!sl->id || sl->id == id || ts - sl->ts > 10000000000ULL) {
			sl->ts = ts;
			sl->id = id;
			return 0;
		}
	}
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_rq_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 issue = rq->io_start_time_ns;
	__u64 alloc = rq->start_time_ns;
	__u32 dev = rq_dev(rq), idx, b;
	struct block_stats *st;
	int slot;

	if (!dev)
		return 0;
	if (!issue) {
		__u64 id = rq_ident(rq, dev);

		for (__u32 way = 0; way < 2; way++) {
			__u32 k = issue_hash(id) + way;
			struct issue_slot *sl = bpf_map_lookup_elem(&issue_ts, &k);

			if (sl && sl->id == id) {
				issue = sl->ts;
				sl->id = 0;
				break;
			}
		}
	}
	slot = dev_slot(dev);
	if (slot < 0) {
		__sync_fetch_and_add(&dev_overflow, 1);
		return 0;
	}
	idx = ((__u32)slot * nslots + bpf_get_smp_processor_id() % nslots) * BLOCK_OPS +
	      op_of(rq->cmd_flags);
	st = bpf_map_lookup_elem(&stats, &idx);
	if (!st)
		return 0;
	__sync_fetch_and_add(&st->ios, 1);
	__sync_fetch_and_add(&st->bytes, nr_bytes);
	if (error) {
		__u32 c = err_class(error);

		if (c < BLOCK_ERR_CLASSES)
			__sync_fetch_and_add(&st->errors[c], 1);
	}
	b = clamp_bucket(nr_bytes, BLOCK_SIZE_BUCKETS);
	__sync_fetch_and_add(&st->size[b], 1);
	if (!issue || issue > now) {
		__sync_fetch_and_add(&st->untimed, 1);
		return 0;
	}
	b = clamp_bucket(now - issue, BLOCK_LAT_BUCKETS);
	__sync_fetch_and_add(&st->lat[b], 1);
	__sync_fetch_and_add(&st->lat_sum_ns, now - issue);
	if (alloc && alloc <= issue) {
		b = clamp_bucket(issue - alloc, BLOCK_LAT_BUCKETS);
		__sync_fetch_and_add(&st->queue[b], 1);
		__sync_fetch_and_add(&st->queue_sum_ns, issue - alloc);
		__sync_fetch_and_add(&st->queued, 1);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
