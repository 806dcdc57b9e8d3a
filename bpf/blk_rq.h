/*
 * blk_rq.h - what a block request is, for the BPF programs that see
 * requests (block.bpf.c, profile.bpf.c): its whole disk's dev_t in the
 * kernel's encoding (major << 20 | minor), as probes/block.c names it
 * through /sys/dev/block, and its op as a BLOCK_OP_* (bpf/block.h).
 * Kernels before 5.16 keep the disk in the request, later ones in its
 * queue (CO-RE picks).
 */
#ifndef FL_BPF_BLK_RQ_H
#define FL_BPF_BLK_RQ_H

#include "block.h"

#define REQ_OP_MASK 0xff
#define REQ_OP_READ 0
#define REQ_OP_WRITE 1
#define REQ_OP_FLUSH 2
#define REQ_OP_DISCARD 3

struct request___old {
	struct gendisk *rq_disk;
};

static __always_inline struct gendisk *rq_disk(struct request *rq)
{
	struct request___old *old = (void *)rq;

	if (bpf_core_field_exists(old->rq_disk))
		return BPF_CORE_READ(old, rq_disk);
	return rq->q->disk;
}

/* dev_t of the request's whole disk (kernel encoding), 0 if unknown. */
static __always_inline __u32 rq_dev(struct request *rq)
{
	struct gendisk *disk = rq_disk(rq);

	if (!disk)
		return 0;
	return ((__u32)disk->major << 20) | (__u32)disk->first_minor;
}

/* The BLOCK_OP_* of a request's cmd_flags. */
static __always_inline __u32 op_of(__u32 cmd_flags)
{
	switch (cmd_flags & REQ_OP_MASK) {
	case REQ_OP_READ: return BLOCK_OP_READ;
	case REQ_OP_WRITE: return BLOCK_OP_WRITE;
	case REQ_OP_FLUSH: return BLOCK_OP_FLUSH;
	case REQ_OP_DISCARD: return BLOCK_OP_DISCARD;
	default: return BLOCK_OP_OTHER;
	}
}

#endif
