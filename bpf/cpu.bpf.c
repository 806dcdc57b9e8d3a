// SPDX-License-Identifier: GPL-2.0
/*
 * cpu.bpf.c - exact CPU busy time and scheduling latencies from the
 * scheduler's tracepoints (tp_btf).
 *
 * Busy time: every sched_switch closes the run of the task leaving the CPU
 * (prev); unless it is the idle task (pid 0), its duration is busy time,
 * added to the CPU's total and split across the 100 ms windows it spans.
 * No sampling, so a 300 ms burst is seen as exactly 300 ms.  A CPU that
 * runs one task without switching has an open run; user space adds it up
 * to "now".
 *
 * Some kernels never run tracepoints in the context of some tasks.
 * Firecracker's PVM guests are one: no event fires while the idle task or
 * the guest agent is current, so the switch *out of* idle is never seen,
 * and "idle since the last switch" would lose every run that follows idle,
 * while "busy since the last switch" would count the idle stretch after a
 * hidden task.  So a run is "since the last switch" only if that switch put
 * prev on the CPU; otherwise its length is the scheduler's own count.  A
 * task whose switch-out was missed is remembered as hidden, and user space
 * does not count its open run (CPU_RUNS_HIDDEN); what it ran is not known
 * and not counted.
 *
 * Latencies use one array indexed by pid (pid_max entries, set by user
 * space), not a hash: the entry holds when the task became runnable (woken
 * or preempted), or, with IOWAIT_BIT, when it went to sleep waiting for
 * I/O.  Run-queue latency = runnable -> switched in; I/O wait = switched
 * out in iowait -> woken.  Bios held by blk-throttle never reach the block
 * tracepoints until released, so throttled I/O shows up here, as I/O
 * wait, while the device's own latency stays low.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "model/hist_layout.h"
#include "cpu.h"

#define IOWAIT_BIT (1ULL << 63)
#define TASK_RUNNING 0

/* Compiler barrier; the writer is the only one on its CPU (rq lock held) */
#define barrier() asm volatile("" ::: "memory")

const volatile __u32 nslots = 1;
const volatile __u32 pid_max = 32768;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);		/* number of possible CPUs, set by user space */
	__type(key, __u32);
	__type(value, struct cpu_busy);
} busy SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);		/* nslots */
	__type(key, __u32);
	__type(value, struct sched_lat);
} lat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 32768);	/* pid_max */
	__type(key, __u32);
	__type(value, __u64);
} task_ts SEC(".maps");

/* 1 for a pid whose switch-out a CPU missed (see the top of the file) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 32768);	/* pid_max */
	__type(key, __u32);
	__type(value, __u8);
} hidden SEC(".maps");

#define SCHED_NORMAL 0
#define SCHED_BATCH 3
#define SCHED_IDLE 5

static __always_inline __u32 bucket(__u64 v)
{
	__u32 b = hist_bucket_index(v);

	return b < SCHED_LAT_BUCKETS ? b : SCHED_LAT_BUCKETS - 1;
}

static __always_inline struct sched_lat *lat_slot(void)
{
	__u32 k = bpf_get_smp_processor_id() % nslots;

	return bpf_map_lookup_elem(&lat, &k);
}

/* Add busy time [from, to) to the windows it spans (the ring holds the last SCHED_WINDOWS). */
static __always_inline void add_busy(struct cpu_busy *b, __u64 from, __u64 to)
{
	if (to - from > SCHED_WINDOWS * SCHED_WINDOW_NS)
		from = to - SCHED_WINDOWS * SCHED_WINDOW_NS;
	for (int i = 0; i < SCHED_WINDOWS && from < to; i++) {
		__u64 w = from / SCHED_WINDOW_NS;
		__u64 end = (w + 1) * SCHED_WINDOW_NS;
		__u64 chunk = (to < end ? to : end) - from;
		__u32 r = (__u32)(w % SCHED_WINDOWS);

		if (b->win_id[r] != w) {
			b->win_id[r] = w;
			b->win_busy[r] = 0;
		}
		b->win_busy[r] += chunk;
		from += chunk;
	}
}

static __always_inline void became_runnable(__u32 pid, __u64 now)
{
	__u64 *ts;

	if (!pid || pid >= pid_max)
		return;
	ts = bpf_map_lookup_elem(&task_ts, &pid);
	if (!ts)
		return;
	if (*ts & IOWAIT_BIT) {
		__u64 start = *ts & ~IOWAIT_BIT;
		struct sched_lat *l = lat_slot();

		if (l && now > start) {
			__sync_fetch_and_add(&l->iowait[bucket(now - start)], 1);
			__sync_fetch_and_add(&l->iowait_sum_ns, now - start);
		}
	}
	*ts = now;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup, struct task_struct *p)
{
	became_runnable((__u32)p->pid, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new, struct task_struct *p)
{
	became_runnable((__u32)p->pid, bpf_ktime_get_ns());
	return 0;
}

static __always_inline void set_hidden(__u32 pid, __u8 v)
{
	__u8 *h;

	if (!pid || pid >= pid_max)
		return;
	h = bpf_map_lookup_elem(&hidden, &pid);
	if (h && *h != v)
		*h = v;
}

/*
 * How long prev ran up to now: "since" (the last switch seen here) if that
 * switch put prev on the CPU; else, for a task of the fair class, its run
 * time since it was picked (sum_exec_runtime - prev_sum_exec_runtime, which
 * the scheduler updates before the tracepoint), at most "since"; else 0: a
 * real-time task that followed a run we could not see is not counted.
 */
static __always_inline __u64 prev_run_ns(struct cpu_busy *b, struct task_struct *prev,
					 __u32 prev_pid, __u64 since)
{
	__u32 policy = prev->policy;
	__u64 ran;

	if (prev_pid == b->cur_pid)
		return since;
	if (policy != SCHED_NORMAL && policy != SCHED_BATCH && policy != SCHED_IDLE)
		return 0;
	ran = prev->se.sum_exec_runtime - prev->se.prev_sum_exec_runtime;
	return ran < since ? ran : since;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 prev_pid = (__u32)prev->pid, next_pid = (__u32)next->pid;
	struct cpu_busy *b = bpf_map_lookup_elem(&busy, &cpu);
	__u64 *ts;

	if (b) {
		b->seq++;
		barrier();
		if (b->last_ns && prev_pid && now > b->last_ns) {
			__u64 ran = prev_run_ns(b, prev, prev_pid, now - b->last_ns);

			b->busy_ns += ran;
			add_busy(b, now - ran, now);
		}
		/* what was put on the CPU last did not leave it in sight */
		if (b->last_ns && prev_pid != b->cur_pid)
			set_hidden(b->cur_pid, 1);
		set_hidden(prev_pid, 0);
		b->last_ns = now;
		b->cur_pid = next_pid;
		b->cur_runtime_ns = next_pid ? next->se.sum_exec_runtime : 0;
		if (!next_pid) {
			b->running = CPU_RUNS_IDLE;
		} else {
			__u8 *h = next_pid < pid_max ? bpf_map_lookup_elem(&hidden, &next_pid) : 0;

			b->running = h && *h ? CPU_RUNS_HIDDEN : CPU_RUNS_TASK;
		}
		barrier();
		b->seq++;
	}

	/* prev: preempted (still runnable) or going to sleep in iowait */
	if (prev_pid && prev_pid < pid_max) {
		ts = bpf_map_lookup_elem(&task_ts, &prev_pid);
		if (ts) {
			if (prev_state == TASK_RUNNING)
				*ts = now;
			else if (BPF_CORE_READ_BITFIELD(prev, in_iowait))
				*ts = now | IOWAIT_BIT;
			else
				*ts = 0;
		}
	}
	/* next: its wait on the run queue ends */
	if (next_pid && next_pid < pid_max) {
		ts = bpf_map_lookup_elem(&task_ts, &next_pid);
		if (ts && *ts && !(*ts & IOWAIT_BIT)) {
			struct sched_lat *l = lat_slot();

			if (l && now > *ts) {
				__sync_fetch_and_add(&l->runq[bucket(now - *ts)], 1);
				__sync_fetch_and_add(&l->runq_sum_ns, now - *ts);
			}
			*ts = 0;
		}
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
