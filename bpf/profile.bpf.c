// SPDX-License-Identifier: GPL-2.0
/*
 * profile.bpf.c - continuous CPU profiler: a perf_event (cpu-clock)
 * program on every CPU counts samples per (process, user stack, kernel
 * stack) in the current generation's maps.  The idle task is not counted.
 * The first sample of a process it has not seen (or not seen since its
 * last exec) sends its pid to user space through a ring buffer, so the
 * mappings of short-lived processes are read while they still exist.
 *
 * User stacks: with unwind_dwarf set, a process whose mappings user space
 * has published (unwind_procs, probes/unwind.h) is walked here with its
 * files' call frame information, one bpf_loop step per frame, falling back
 * to frame pointers where a frame has no rule; the stack is kept by hash
 * in the generation's dwarf_stacks.  Other processes, and every process
 * without unwind_dwarf, use bpf_get_stackid (frame pointers only).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "blk_rq.h"
#include "profile.h"

const volatile bool unwind_dwarf = false;	/* set before load */
const volatile __u64 io_interval_ns = 0;	/* I/O stacks: one request per CPU per interval */

__u32 gen;		/* generation written now; user space flips it */
__u64 dropped;		/* samples lost to full maps */
__u64 io_dropped;	/* I/O stack counts lost to full maps */
__u64 io_late;		/* waits that spanned a flip: their stacks were drained */
__s64 io_waiting;	/* armed waits in progress (a task dying mid-wait leaves one) */

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

struct io_counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, IO_MAX_KEYS);
	__type(key, struct io_key);
	__type(value, struct io_val);
};

struct io_counts_map io_counts0 SEC(".maps");
struct io_counts_map io_counts1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct io_task);
} io_tasks SEC(".maps");

/*
 * This CPU's sampling gate: when it last sampled a request, and how many
 * requests pass between clock reads (skip doubles while requests come
 * faster than the interval, up to 64, and halves when they come slower:
 * a busy device costs a counter per request, a slow one is read each time).
 */
struct io_gate {
	__u64 last_ns;
	__u32 tick, skip;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct io_gate);
} io_gates SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		/* sized by user space before load */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct unwind_row);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, UNWIND_MAX_PROCS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct unwind_proc);
} unwind_procs SEC(".maps");

struct dwarf_stacks_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, UNWIND_MAX_STACKS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct unwind_stack);
};

struct dwarf_stacks_map dwarf_stacks0 SEC(".maps");
struct dwarf_stacks_map dwarf_stacks1 SEC(".maps");

/* The walk in progress on this CPU (too big for the BPF stack). */
struct fl_walk_state {
	__u64 pc, sp, bp;
	__u64 hash;
	__u32 leaf_unmapped;	/* the leaf is in no published mapping (dlopen? JIT?) */
	__u32 pad;
	__u64 want;		/* a UNWIND_LAZY mapping the walk went through (its start) */
	__u64 py_frame;		/* the next Python frame to emit (0: none) */
	__u32 py_state;		/* PY_* below */
	__u32 native;		/* native frames stepped so far (0: at the leaf) */
	struct unwind_stack st;
};

/* Where a walk is with the interpreter's frames (struct unwind_python). */
enum {
	PY_UNREAD = 0,	/* the thread state not read yet */
	PY_NATIVE,	/* not this thread's, or unreadable: native frames only */
	PY_READY,	/* py_frame is the next frame to emit at an evaluation frame */
	PY_EMITTING,	/* emitting Python frames in place of an evaluation frame */
	PY_STEP_OVER,	/* emitted: step over the evaluation frame without recording it */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fl_walk_state);
} unwind_scratch SEC(".maps");

struct fl_walk {
	struct fl_walk_state *st;
	struct unwind_proc *up;
};

/* The row of mapping mp for address pc, or NULL: the last row at or before it. */
static const struct unwind_row *find_row(const struct unwind_map *mp, __u64 pc, int leaf)
{
	__u64 addr = pc - mp->bias - (leaf ? 0 : 1);	/* a return address is past its call */
	__u32 lo = mp->first, hi = mp->first + mp->count;
	const struct unwind_row *r;

	if (addr >> 32 || !mp->count)
		return NULL;
	for (int k = 0; k < UNWIND_BSEARCH_STEPS && lo + 1 < hi; k++) {
		__u32 mid = lo + (hi - lo) / 2;

		r = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!r)
			return NULL;
		if (r->pc <= addr)
			lo = mid;
		else
			hi = mid;
	}
	r = bpf_map_lookup_elem(&unwind_rows, &lo);
	return r && r->pc <= addr ? r : NULL;
}

/* Record frame value v (an address, or a PY_FRAME_TAG'd Python frame). */
static __always_inline void record(struct fl_walk_state *st, __u32 n, __u64 v)
{
	st->st.ip[n & (UNWIND_MAX_FRAMES - 1)] = v;
	st->st.n = n + 1;
	st->hash = (st->hash ^ v) * 0x100000001b3ULL;
}

/*
 * The thread's current Python frame, if the thread state holding the GIL
 * is this thread's: its thread_id is pthread_self(), the fs base.
 */
static __noinline __u64 python_current_frame(const struct unwind_python *py)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 tstate = 0, tid = 0, cframe = 0, frame = 0;

	if (bpf_probe_read_user(&tstate, sizeof(tstate), (void *)py->tstate_at) || !tstate)
		return 0;
	for (int i = 0; i < 2 && i < py->ntstate_chain; i++)
		if (bpf_probe_read_user(&tstate, sizeof(tstate),
					(void *)(tstate + py->tstate_chain[i])) || !tstate)
			return 0;
	if (bpf_probe_read_user(&tid, sizeof(tid), (void *)(tstate + py->tstate_thread_id)) ||
	    tid != BPF_CORE_READ(task, thread.fsbase) ||
	    bpf_probe_read_user(&cframe, sizeof(cframe), (void *)(tstate + py->tstate_cframe)) ||
	    !cframe ||
	    bpf_probe_read_user(&frame, sizeof(frame),
				(void *)(cframe + py->cframe_current_frame)))
		return 0;
	return frame;
}

/*
 * Emit the Python frame st->py_frame and move to its caller.  Returns 1
 * when it was the frame that entered this evaluation (the native frame is
 * then stepped over), 0 when more of this evaluation's frames follow, -1
 * when it cannot be read (the native frames go on from there).
 */
static __noinline int python_emit(struct fl_walk_state *st, const struct unwind_python *py)
{
	__u64 f = st->py_frame, code = 0, prev = 0, instr = 0, idx, v;
	__u8 entry = 0, owner = 0;
	__u32 n = st->st.n;

	if (!f || n >= UNWIND_MAX_FRAMES ||
	    bpf_probe_read_user(&prev, sizeof(prev), (void *)(f + py->frame_previous)))
		return -1;
	if (py->frame_owner != PY_NO_FIELD) {
		if (bpf_probe_read_user(&owner, sizeof(owner), (void *)(f + py->frame_owner)))
			return -1;
		if (owner == py->owner_cstack) {
			/* 3.12: the entry's shim frame: this evaluation's frames are done */
			st->py_frame = prev;
			return 1;
		}
	}
	if ((py->frame_is_entry != PY_NO_FIELD &&
	     bpf_probe_read_user(&entry, sizeof(entry), (void *)(f + py->frame_is_entry))) ||
	    bpf_probe_read_user(&code, sizeof(code), (void *)(f + py->frame_code)) ||
	    bpf_probe_read_user(&instr, sizeof(instr), (void *)(f + py->frame_prev_instr)) ||
	    !code || code & ~PY_FRAME_ADDR_MASK)
		return -1;
	/* the instruction, in code units (2 bytes) from the code's first */
	idx = instr >= code + py->code_adaptive ? (instr - code - py->code_adaptive) / 2 : 0xffff;
	if (idx > 0xffff)
		idx = 0xffff;
	v = PY_FRAME_TAG | idx << PY_FRAME_INSTR_SHIFT | code;
	record(st, n, v);
	st->py_frame = prev;
	return entry || !prev;
}

/* One frame: record pc, then step to the caller. Returns 1 to stop. */
static long unwind_step(__u32 i, void *arg)
{
	struct fl_walk *w = arg;
	struct fl_walk_state *st = w->st;
	struct unwind_proc *up = w->up;
	const struct unwind_row *row = NULL;
	__u64 pc = st->pc, bp = st->bp, cfa, ra = 0;
	__u32 n = st->st.n, nmaps = up->n;

	if (n >= UNWIND_MAX_FRAMES || !pc)
		return 1;
	if (st->py_state == PY_EMITTING) {
		int ret = python_emit(st, &up->py);

		if (ret >= 0) {
			if (ret)
				st->py_state = PY_STEP_OVER;
			return 0;
		}
		/* a frame that cannot be read: the rest stays native, this one too */
		st->py_state = PY_NATIVE;
	}
	if (up->py.eval_end && pc >= up->py.eval_start && pc < up->py.eval_end &&
	    st->py_state != PY_STEP_OVER && st->py_state != PY_NATIVE) {
		if (st->py_state == PY_UNREAD) {
			st->py_frame = python_current_frame(&up->py);
			st->py_state = st->py_frame ? PY_READY : PY_NATIVE;
		}
		if (st->py_state == PY_READY && st->py_frame) {
			st->py_state = PY_EMITTING;
			return 0;	/* the next steps emit its Python frames */
		}
	}
	if (st->py_state == PY_STEP_OVER)	/* this evaluation frame was replaced */
		st->py_state = st->py_frame ? PY_READY : PY_NATIVE;
	else
		record(st, n, pc);
	for (__u32 j = 0; j < UNWIND_MAX_MAPS && j < nmaps; j++) {
		const struct unwind_map *mp = &up->m[j];

		if (pc >= mp->start && pc < mp->end) {
			if (mp->first == UNWIND_LAZY && !st->want)
				st->want = mp->start;
			row = find_row(mp, pc, st->native == 0);
			break;
		}
		if (j + 1 == nmaps && st->native == 0)
			st->leaf_unmapped = 1;
	}
	if (row && row->cfa == UNWIND_CFA_STOP)
		return 1;
	if (row && row->cfa != UNWIND_CFA_NONE) {
		if (row->cfa == UNWIND_CFA_RSP)
			cfa = st->sp + (__s64)row->cfa_off;
		else if (row->cfa == UNWIND_CFA_RBP)
			cfa = bp + (__s64)row->cfa_off;
		else
			cfa = st->sp + 8 + ((pc & 15) >= (__u64)row->cfa_off ? 8 : 0);
		if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8)))
			return 1;
		if (row->rbp == UNWIND_RBP_AT &&
		    bpf_probe_read_user(&bp, sizeof(bp), (void *)(cfa + (__s64)row->rbp_off)))
			return 1;
		st->sp = cfa;
	} else {
		/* no rule: the frame pointer chain, if this frame keeps one */
		__u64 fp = bp;

		if (!fp || fp < st->sp ||
		    bpf_probe_read_user(&ra, sizeof(ra), (void *)(fp + 8)) ||
		    bpf_probe_read_user(&bp, sizeof(bp), (void *)fp))
			return 1;
		st->sp = fp + 16;
	}
	st->bp = bp;
	st->pc = ra;
	st->native++;
	return ra ? 0 : 1;
}

/*
 * Walk the current task's user stack with its published mappings into
 * this CPU's scratch.  Returns the state (st.n frames), or NULL when the
 * process has no published mappings.
 */
static struct fl_walk_state *dwarf_walk(struct bpf_perf_event_data *ctx, __u32 tgid)
{
	struct unwind_proc *up = bpf_map_lookup_elem(&unwind_procs, &tgid);
	__u32 zero = 0;
	struct fl_walk_state *st = bpf_map_lookup_elem(&unwind_scratch, &zero);
	struct fl_walk w;

	if (!up || !st)
		return NULL;
	if (ctx->regs.ip < 0x800000000000ULL) {	/* sampled in user space */
		st->pc = ctx->regs.ip;
		st->sp = ctx->regs.sp;
		st->bp = ctx->regs.bp;
	} else {
		/* sampled in the kernel: the user registers saved on entry */
		struct pt_regs *ur = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

		if (!ur)
			return NULL;
		st->pc = BPF_CORE_READ(ur, ip);
		st->sp = BPF_CORE_READ(ur, sp);
		st->bp = BPF_CORE_READ(ur, bp);
	}
	st->hash = 0xcbf29ce484222325ULL;
	st->st.n = 0;
	st->leaf_unmapped = 0;
	st->want = 0;
	st->py_frame = 0;
	st->py_state = PY_UNREAD;
	st->native = 0;
	w.st = st;
	w.up = up;
	bpf_loop(2 * UNWIND_MAX_FRAMES, unwind_step, &w, 0);
	/*
	 * code in no published mapping: a library loaded since (dlopen), or JIT
	 * code; ask user space to read the mappings again, at most once a second
	 */
	if (st->leaf_unmapped || st->want) {
		__u64 now = bpf_ktime_get_ns();

		/* a lazy file's rows: every 100 ms; the mappings again: every second */
		if (now - up->asked_ns > (st->want ? 100000000ULL : 1000000000ULL)) {
			struct profile_proc_event *e;

			up->asked_ns = now;
			e = bpf_ringbuf_reserve(&procs, sizeof(*e), 0);
			if (e) {
				e->tgid = tgid;
				e->exited = 0;
				e->want = st->want;
				bpf_get_current_comm(e->comm, sizeof(e->comm));
				bpf_ringbuf_submit(e, 0);
			}
		}
	}
	return st->st.n ? st : NULL;
}


/*
 * The first sample (or I/O) of a process not seen since its last exec sends
 * its pid to user space, which reads its mappings while it still exists.
 */
static __always_inline void announce(__u32 tgid)
{
	__u8 yes = 1;

	if (bpf_map_update_elem(&seen, &tgid, &yes, BPF_NOEXIST) == 0) {
		struct profile_proc_event *e = bpf_ringbuf_reserve(&procs, sizeof(*e), 0);

		if (e) {
			e->tgid = tgid;
			e->exited = 0;
			e->want = 0;
			bpf_get_current_comm(e->comm, sizeof(e->comm));
			bpf_ringbuf_submit(e, 0);
		}
	}
}

SEC("perf_event")
int profile_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), one = 1, *v;
	struct profile_key k = {};
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
	if (unwind_dwarf) {
		struct fl_walk_state *st = dwarf_walk(ctx, k.tgid);
		long ret = st ? bpf_map_update_elem(gen & 1 ? (void *)&dwarf_stacks1 :
						    (void *)&dwarf_stacks0, &st->hash, &st->st,
						    BPF_NOEXIST) : -1;

		if (st && (ret == 0 || ret == -17 /* EEXIST: the same stack again */)) {
			k.unwound = 1;
			k.user_hash = st->hash;
		}
	}
	if (!k.unwound)
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
	announce(k.tgid);
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

/*
 * A process that exits (its leader: threads come and go) frees its pid:
 * its published mappings go (else dead pids fill unwind_procs and new
 * processes stop being unwound), a pid used again is announced again (else
 * it kept the old program's names), and user space, told, forgets it after
 * the window that may hold its samples.  Only processes this program
 * announced are told of: not every exit on the host.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(profile_exit, struct task_struct *p)
{
	__u32 tgid = (__u32)p->tgid;
	struct profile_proc_event *e;

	if (p->pid != p->tgid)
		return 0;
	bpf_map_delete_elem(&unwind_procs, &tgid);
	if (bpf_map_delete_elem(&seen, &tgid))
		return 0;	/* never sampled: nothing to forget */
	e = bpf_ringbuf_reserve(&procs, sizeof(*e), 0);
	if (e) {
		e->tgid = tgid;
		e->exited = 1;
		e->want = 0;
		e->comm[0] = '\0';
		bpf_ringbuf_submit(e, 0);
	}
	return 0;
}

/* counts[k] += (1, amount); a full map counts in io_dropped. */
static __always_inline void io_add(void *counts, const struct io_key *k, __u64 amount)
{
	struct io_val one = { 1, amount }, *v = bpf_map_lookup_elem(counts, k);

	if (!v && bpf_map_update_elem(counts, k, &one, BPF_NOEXIST) == 0)
		return;
	if (!v)
		v = bpf_map_lookup_elem(counts, k);	/* raced with another CPU */
	if (!v) {
		__sync_fetch_and_add(&io_dropped, 1);
		return;
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->amount, amount);
}

/*
 * A block request starts, in its submitter's context (blk_account_io_start):
 * at most one per CPU per io_interval_ns counts the submitter's stacks (so
 * the cost is bounded in time whatever the IOPS, and a slow device's few
 * requests are all seen), and arms its next wait in io_schedule.
 */
SEC("tp_btf/block_io_start")
int BPF_PROG(profile_io_start, struct request *rq)
{
	__u32 zero = 0;
	struct io_gate *gate = bpf_map_lookup_elem(&io_gates, &zero);
	__u64 now, id;
	struct io_key k = {};
	struct io_task *it;
	__u32 g = gen & 1;

	if (!gate || ++gate->tick < gate->skip)
		return 0;
	gate->tick = 0;
	now = bpf_ktime_get_ns();
	if (now - gate->last_ns < io_interval_ns) {
		if (gate->skip < 64)
			gate->skip = gate->skip ? gate->skip * 2 : 2;
		return 0;
	}
	gate->skip /= 2;
	gate->last_ns = now;
	id = bpf_get_current_pid_tgid();
	k.tgid = (__u32)(id >> 32);
	k.dev = rq_dev(rq);
	k.op = (__u8)op_of(rq->cmd_flags);
	k.kind = IO_SUBMIT;
	k.user_stack = bpf_get_stackid(ctx, g ? (void *)&stacks1 : (void *)&stacks0,
				       BPF_F_USER_STACK);
	k.kern_stack = bpf_get_stackid(ctx, g ? (void *)&stacks1 : (void *)&stacks0, 0);
	io_add(g ? (void *)&io_counts1 : (void *)&io_counts0, &k, rq->__data_len);
	announce(k.tgid);
	it = bpf_task_storage_get(&io_tasks, bpf_get_current_task_btf(), 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (it) {
		it->dev = k.dev;
		it->op = k.op;
		it->armed = 1;
	}
	return 0;
}

/*
 * A task that submitted a sampled request switches out in io_schedule():
 * where it waits, from now until it runs again.  While no armed wait is in
 * progress a switch costs a bit test and a load.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(profile_io_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct io_task *it;

	if (BPF_CORE_READ_BITFIELD(prev, in_iowait)) {
		it = bpf_task_storage_get(&io_tasks, prev, 0, 0);
		if (it && it->armed && !it->out_ns) {
			__u32 g = gen & 1;

			it->armed = 0;
			it->gen = g;
			it->user_stack = bpf_get_stackid(ctx, g ? (void *)&stacks1 :
							 (void *)&stacks0, BPF_F_USER_STACK);
			it->kern_stack = bpf_get_stackid(ctx, g ? (void *)&stacks1 :
							 (void *)&stacks0, 0);
			it->out_ns = bpf_ktime_get_ns();
			__sync_fetch_and_add(&io_waiting, 1);
		}
	}
	if (io_waiting <= 0)
		return 0;
	it = bpf_task_storage_get(&io_tasks, next, 0, 0);
	if (it && it->out_ns) {
		struct io_key k = { .tgid = (__u32)next->tgid, .user_stack = it->user_stack,
				    .kern_stack = it->kern_stack, .dev = it->dev, .op = it->op,
				    .kind = IO_WAIT };
		__u64 waited = bpf_ktime_get_ns() - it->out_ns;

		it->out_ns = 0;
		__sync_fetch_and_add(&io_waiting, -1);
		if (it->gen != (gen & 1))
			__sync_fetch_and_add(&io_late, 1);	/* its stacks were drained */
		else
			io_add(it->gen ? (void *)&io_counts1 : (void *)&io_counts0, &k, waited);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
