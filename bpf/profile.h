/*
 * profile.h - layout shared by bpf/profile.bpf.c and probes/profile.c.
 *
 * Samples are counted in the kernel per (process, user stack, kernel
 * stack), so a window costs a few thousand map entries however many
 * samples it holds.  Two generations of the count and stack maps exist;
 * user space flips `gen` at every flush and drains the other one, so no
 * increment is lost while it reads.
 */
#ifndef FL_BPF_PROFILE_H
#define FL_BPF_PROFILE_H

#define PROFILE_STACK_DEPTH 127
#define PROFILE_MAX_KEYS 65536
#define PROFILE_MAX_STACKS 16384

struct profile_key {
	__u32 tgid;
	__s32 user_stack;	/* stack map id, or negative errno */
	__s32 kern_stack;
	__u32 pad;
};

/* Sent once per new process, so user space can snapshot its mappings. */
struct profile_proc_event {
	__u32 tgid;
	char comm[16];
};

#endif
