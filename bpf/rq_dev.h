/*
 * rq_dev.h - which disk a block request is for, shared by the BPF programs
 * that see requests (block.bpf.c, profile.bpf.c): its whole disk's dev_t
 * in the kernel's encoding (major << 20 | minor), as probes/block.c names
 * it through /sys/dev/block.  Kernels before 5.16 keep the disk in the
 * request, later ones in its queue (CO-RE picks).
 */
#ifndef FL_BPF_RQ_DEV_H
#define FL_BPF_RQ_DEV_H

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

#endif
