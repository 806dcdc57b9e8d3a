/*
 * cpu.h - layout shared by bpf/cpu.bpf.c and probes/cpu.c.
 *
 * Per CPU (one cache-line-aligned entry of an mmapable array, written only
 * by that CPU's sched_switch, under the run-queue lock): exact busy time
 * and a ring of 100 ms sub-windows.  A sequence count (odd while writing)
 * lets user space read an entry consistently without a syscall.
 *
 * Busy time up to last_ns is final.  After it, user space adds the open
 * run only while a task whose switch-out the probe will see is on the CPU
 * (CPU_RUNS_TASK), and no more of it than the task has run since it was put
 * there (its /proc/PID/schedstat run time less cur_runtime_ns): a task not
 * yet known to be hidden may have left the CPU unseen; otherwise the time
 * is settled by the next switch seen, which may place busy time in windows
 * that already closed.
 *
 * Per CPU slot (sharded like the block tables): run-queue latency (wakeup
 * or preemption -> running) and I/O wait (switched out in iowait ->
 * woken) histograms in the fleet layout, cut off at 2^40 ns.
 */
#ifndef FL_BPF_CPU_H
#define FL_BPF_CPU_H

#define SCHED_WINDOW_NS 100000000ULL	/* 100 ms sub-windows */
#define SCHED_WINDOWS 64		/* ring: 6.4 s of sub-windows */
#define SCHED_LAT_BUCKETS ((40 - HIST_G + 1) * HIST_SUB)

/* What the last switch seen on a CPU put on it (cpu_busy.running) */
#define CPU_RUNS_TASK 0		/* a task whose switch-out will be seen */
#define CPU_RUNS_IDLE 1		/* the idle task */
#define CPU_RUNS_HIDDEN 2	/* a task whose switch-outs were not seen before */

struct cpu_busy {
	__u64 seq;		/* odd while sched_switch updates the entry */
	__u64 busy_ns;		/* busy time up to last_ns */
	__u64 last_ns;		/* time of the last switch on this CPU, 0 = none yet */
	__u32 running;		/* CPU_RUNS_*: may user space count the open run? */
	__u32 cur_pid;		/* what the last switch seen put on the CPU */
	__u64 cur_runtime_ns;	/* its se.sum_exec_runtime then: what it has run since */
	__u64 win_id[SCHED_WINDOWS];	/* which 100 ms window each ring slot holds */
	__u64 win_busy[SCHED_WINDOWS];	/* busy ns in it, up to last_ns */
} __attribute__((aligned(64)));

struct sched_lat {
	__u64 runq_sum_ns;
	__u64 iowait_sum_ns;
	__u64 pad[6];
	__u64 runq[SCHED_LAT_BUCKETS];
	__u64 iowait[SCHED_LAT_BUCKETS];
} __attribute__((aligned(64)));

#endif
