// SPDX-License-Identifier: GPL-2.0
/*
 * profile.bpf.c - continuous CPU profiler: a perf_event (cpu-clock)
 * program on every CPU counts samples per (process, user stack, kernel
 * stack) in the current generation's maps.  The idle task is not counted.
 * The first sample of a process it has not seen (or not seen since its
 * last exec) sends its pid to user space through a ring buffer, so the
 * mappings of short-lived processes are read while they still exist.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "profile.h"

__u32 gen;		/* generation written now; user space flips it */
__u64 dropped;		/* samples lost to full maps */

struct stacks_map {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, PROFILE_MAX_STACKS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROFILE_STACK_DEPTH * sizeof(__u64));
};

struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROFILE_MAX_KEYS);
	__type(key, struct profile_key);
	__type(value, __u64);
};

struct stacks_map stacks0 SEC(".maps");
struct stacks_map stacks1 SEC(".maps");
struct counts_map counts0 SEC(".maps");
struct counts_map counts1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} procs SEC(".maps");

SEC("perf_event")
int profile_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), one = 1, *v;
	struct profile_key k = {};
	__u8 yes = 1;
	void *counts, *stacks;

	k.tgid = (__u32)(id >> 32);
	if ((__u32)id == 0)
		return 0;	/* the idle task */
	if (gen & 1) {
		counts = &counts1;
		stacks = &stacks1;
	} else {
		counts = &counts0;
		stacks = &stacks0;
	}
	k.user_stack = bpf_get_stackid(ctx, stacks, BPF_F_USER_STACK);
	k.kern_stack = bpf_get_stackid(ctx, stacks, 0);
	v = bpf_map_lookup_elem(counts, &k);
	if (v) {
		__sync_fetch_and_add(v, 1);
	} else if (bpf_map_update_elem(counts, &k, &one, BPF_NOEXIST)) {
		v = bpf_map_lookup_elem(counts, &k);	/* raced with another CPU */
		if (v)
			__sync_fetch_and_add(v, 1);
		else
			__sync_fetch_and_add(&dropped, 1);
	}
	if (bpf_map_update_elem(&seen, &k.tgid, &yes, BPF_NOEXIST) == 0) {
		struct profile_proc_event *e = bpf_ringbuf_reserve(&procs, sizeof(*e), 0);

		if (e) {
			e->tgid = k.tgid;
			bpf_get_current_comm(e->comm, sizeof(e->comm));
			bpf_ringbuf_submit(e, 0);
		}
	}
	return 0;
}

/*
 * After exec a process is a different program: forget that it was seen,
 * so its next sample asks user space to read its (new) mappings again.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(profile_exec, struct task_struct *p)
{
	__u32 tgid = (__u32)p->tgid;

	bpf_map_delete_elem(&seen, &tgid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
