/*
 * profile_drain.c - the profiler's kernel maps into profile windows: each
 * generation's CPU samples (pr->window) and I/O stacks (pr->io_window,
 * pr->iowait_window) symbolized, root first; see profile_internal.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "core/array.h"
#include "core/log.h"
#include "probes/probe.h"
#include "probes/profile_internal.h"
#include "probes/python.h"
#include "probes/symbolize.h"
#include "probes/unwind.h"
#include "profile.skel.h"

int profile_wanted(const struct profiler *pr, uint32_t tgid)
{
	if (pr->only.pid && tgid != pr->only.pid)
		return 0;
	return !pr->only.cgroup[0] || profile_cgroup_in(sym_cgroup(pr->sym, tgid), pr->only.cgroup);
}

void profile_forget_seen(struct profiler *pr)
{
	int fd = bpf_map__fd(pr->skel->maps.seen);
	uint32_t next;

	if (!unwinder_take_reset(pr->unw))
		return;
	while (bpf_map_get_next_key(fd, NULL, &next) == 0 && bpf_map_delete_elem(fd, &next) == 0)
		;
}

/*
 * The user stack of key k from generation g's maps into ips (leaf first);
 * returns its depth, 0 if there is none.
 */
static int user_stack(struct profiler *pr, int g, const struct profile_key *k, uint64_t *ips)
{
	int stacks = bpf_map__fd(g ? pr->skel->maps.stacks1 : pr->skel->maps.stacks0);
	int depth = 0;

	if (k->unwound) {
		struct unwind_stack us;
		int dstacks = bpf_map__fd(g ? pr->skel->maps.dwarf_stacks1 :
					  pr->skel->maps.dwarf_stacks0);

		if (bpf_map_lookup_elem(dstacks, &k->user_hash, &us))
			return 0;
		for (; depth < (int)us.n && depth < UNWIND_MAX_FRAMES; depth++)
			ips[depth] = us.ip[depth];
		return depth;
	}
	if (k->user_stack < 0 || bpf_map_lookup_elem(stacks, &k->user_stack, ips))
		return 0;
	while (depth < PROFILE_STACK_DEPTH && ips[depth])
		depth++;
	return depth;
}

/* The frames of one stack, root first, for profile_add_in. */
struct frame_buf {
	char names[2 * PROFILE_STACK_DEPTH + 1][160];
	const char *frames[2 * PROFILE_STACK_DEPTH + 1];
	struct sym_where sw[2 * PROFILE_STACK_DEPTH + 1];
	struct profile_where where[2 * PROFILE_STACK_DEPTH + 1];
	int n, unresolved;
};

/* The one frame buffer: only the profiler's thread drains, one stack at a time. */
static struct frame_buf scratch;

/* Append frame name (where it lives: w, may be NULL) to fb. */
static void frame_add(struct frame_buf *fb, const char *name, const struct profile_where *w)
{
	snprintf(fb->names[fb->n], sizeof(fb->names[0]), "%s", name);
	fb->frames[fb->n] = fb->names[fb->n];
	fb->where[fb->n] = w ? *w : (struct profile_where){ 0 };
	fb->n++;
}

/*
 * What the walker was told of tgid's interpreter: its unwind_procs entry,
 * read once per drain per process (the last one read is kept).
 */
static struct unwind_proc *python_proc(struct profiler *pr, uint32_t tgid)
{
	static struct unwind_proc up;
	static uint32_t last_tgid;
	static uint64_t last_generation = UINT64_MAX;

	if (last_tgid == tgid && last_generation == pr->generation)
		return up.py.eval_end ? &up : NULL;
	last_tgid = tgid;
	last_generation = pr->generation;
	if (!pr->unw || bpf_map_lookup_elem(bpf_map__fd(pr->skel->maps.unwind_procs), &tgid, &up))
		memset(&up, 0, sizeof(up));
	return up.py.eval_end ? &up : NULL;
}

/*
 * Process tgid's user stack uips[0..udepth) (leaf first) then kernel stack
 * kern_stack of generation g, appended to fb root first ("[no stack]" when
 * both are empty).
 */
static void stack_frames(struct profiler *pr, int g, uint32_t tgid, const uint64_t *uips,
			 int udepth, int kern_stack, struct frame_buf *fb)
{
	int stacks = bpf_map__fd(g ? pr->skel->maps.stacks1 : pr->skel->maps.stacks0);
	int start = fb->n;
	static uint64_t kips[PROFILE_STACK_DEPTH];

	struct unwind_proc *up = NULL;

	for (int i = udepth - 1; i >= 0; i--, fb->n++) {
		int named;

		if (uips[i] & PY_FRAME_TAG) {
			/* a Python frame the walker read in place of the interpreter's */
			if (!up)
				up = python_proc(pr, tgid);
			named = python_frame_name(pr->py, tgid, up ? &up->py : NULL, uips[i],
						  fb->names[fb->n], sizeof(fb->names[0]));
			fb->unresolved += !named;
			fb->frames[fb->n] = fb->names[fb->n];
			fb->where[fb->n] = (struct profile_where){ NULL, NULL, 0, named };
			continue;
		}
		named = sym_user_where(pr->sym, tgid, uips[i], fb->names[fb->n],
				       sizeof(fb->names[0]), &fb->sw[fb->n]);

		fb->unresolved += !named;
		fb->frames[fb->n] = fb->names[fb->n];
		fb->where[fb->n] = (struct profile_where){
			fb->sw[fb->n].known ? fb->sw[fb->n].file : NULL, fb->sw[fb->n].build_id,
			fb->sw[fb->n].offset, named };
	}
	if (kern_stack >= 0 && bpf_map_lookup_elem(stacks, &kern_stack, kips) == 0) {
		int depth = 0, skip = 0;
		char leaf[160];

		while (depth < PROFILE_STACK_DEPTH && kips[depth])
			depth++;
		/* a tracepoint's stack ends in the tracing that ran the program: not its story */
		while (skip < depth && sym_kernel(pr->sym, kips[skip], leaf, sizeof(leaf)) &&
		       (!strncmp(leaf, "bpf_prog_", 9) || !strncmp(leaf, "bpf_trace_run", 13) ||
			!strncmp(leaf, "__traceiter_", 12) || !strncmp(leaf, "__bpf_trace_", 12)))
			skip++;
		for (int i = depth - 1; i >= skip; i--, fb->n++) {
			int named = sym_kernel(pr->sym, kips[i], fb->names[fb->n],
					       sizeof(fb->names[0]));

			fb->unresolved += !named;
			fb->frames[fb->n] = fb->names[fb->n];
			fb->where[fb->n] = (struct profile_where){
				"[kernel.kallsyms]", sym_kernel_build_id(pr->sym), kips[i], named };
		}
	}
	if (fb->n == start) {
		frame_add(fb, "[no stack]", NULL);
		fb->unresolved++;
	}
}

/*
 * Drain generation g's I/O stacks into pr->io_window (sampled requests)
 * and pr->iowait_window (microseconds waited), each stack rooted at
 * "[DEVICE OP]".  The stack ids they used go into *ids (for drain to free
 * with its own: CPU samples and I/O may share one).  Returns how many.
 */
static size_t drain_io(struct profiler *pr, int g, int **ids)
{
	int counts = bpf_map__fd(g ? pr->skel->maps.io_counts1 : pr->skel->maps.io_counts0);
	int stacks = bpf_map__fd(g ? pr->skel->maps.stacks1 : pr->skel->maps.stacks0);
	struct io_key key, next, *prev = NULL, *keys = NULL;
	static uint64_t ips[PROFILE_STACK_DEPTH];
	struct frame_buf *fb = &scratch;
	size_t nkeys = 0, cap = 0, nids = 0, cap_ids = 0;
	/* the devices' names, read from sysfs once a drain (a few devices, many keys) */
	struct { uint32_t dev; char name[64]; } names[16];
	int nnames = 0;
	char root[96];

	*ids = NULL;
	while (bpf_map_get_next_key(counts, prev, &next) == 0) {
		struct io_val v;
		uint64_t count;
		int depth = 0, d = 0;

		if (ARRAY_GROW(keys, cap, nkeys + 1, 256) ||
		    ARRAY_GROW(*ids, cap_ids, nids + 2, 512))
			break;
		keys[nkeys++] = next;
		key = next;
		prev = &key;
		if (next.user_stack >= 0)
			(*ids)[nids++] = next.user_stack;
		if (next.kern_stack >= 0)
			(*ids)[nids++] = next.kern_stack;
		if (bpf_map_lookup_elem(counts, &next, &v) || !v.count)
			continue;
		sym_process(pr->sym, next.tgid, NULL);
		if (!profile_wanted(pr, next.tgid))
			continue;
		/* waits count in microseconds (a wait under 1 us counts as one) */
		count = next.kind == IO_WAIT ? (v.amount / 1000 ?: 1) : v.count;
		if (next.user_stack >= 0 && bpf_map_lookup_elem(stacks, &next.user_stack, ips) == 0)
			while (depth < PROFILE_STACK_DEPTH && ips[depth])
				depth++;
		while (d < nnames && names[d].dev != next.dev)
			d++;
		if (d == nnames) {
			d = nnames < 16 ? nnames++ : 15;
			names[d].dev = next.dev;
			block_dev_name(next.dev, names[d].name, sizeof(names[d].name));
		}
		snprintf(root, sizeof(root), "[%s %s]", names[d].name, block_op_name(next.op));
		fb->n = fb->unresolved = 0;
		frame_add(fb, root, NULL);
		stack_frames(pr, g, next.tgid, ips, depth, next.kern_stack, fb);
		{
			struct profile_origin o = { sym_service(pr->sym, next.tgid),
						    sym_comm(pr->sym, next.tgid),
						    sym_cgroup(pr->sym, next.tgid), next.tgid };

			profile_add_in(next.kind == IO_WAIT ? &pr->iowait_window : &pr->io_window,
				       &o, fb->frames, fb->where, (uint32_t)fb->n, count);
		}
	}
	for (size_t i = 0; i < nkeys; i++)
		bpf_map_delete_elem(counts, &keys[i]);
	free(keys);
	if (pr->skel->bss->io_dropped > pr->io_dropped_said) {
		log_warn("profile: %llu I/O stack count(s) lost so far: %d distinct stacks a "
			 "window fill its map; raise profile.io_interval to sample fewer",
			 (unsigned long long)pr->skel->bss->io_dropped, IO_MAX_KEYS);
		pr->io_dropped_said = pr->skel->bss->io_dropped;
	}
	return nids;
}

void profile_drain(struct profiler *pr, int g)
{
	int counts = bpf_map__fd(g ? pr->skel->maps.counts1 : pr->skel->maps.counts0);
	int stacks = bpf_map__fd(g ? pr->skel->maps.stacks1 : pr->skel->maps.stacks0);
	struct profile_key key, next, *prev = NULL;
	static uint64_t ips[PROFILE_STACK_DEPTH];
	struct frame_buf *fb = &scratch;
	struct profile_key *keys = NULL;
	size_t nkeys = 0, cap = 0, nio_ids = 0;
	uint64_t samples = 0, unresolved = 0, nframes = 0, truncated = 0, ustacks = 0;
	int *io_ids = NULL;
	size_t sym_bytes, sym_files;
	uint64_t sym_reads;

	python_names_new_window(pr->py);
	if (pr->io_interval_ns)
		nio_ids = drain_io(pr, g, &io_ids);
	while (bpf_map_get_next_key(counts, prev, &next) == 0) {
		__u64 count = 0;

		if (ARRAY_GROW(keys, cap, nkeys + 1, 1024))
			break;
		keys[nkeys++] = next;
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(counts, &next, &count) || !count)
			continue;
		sym_process(pr->sym, next.tgid, NULL);
		if (!profile_wanted(pr, next.tgid))
			continue;
		samples += count;
		/* user part, root first */
		int depth = user_stack(pr, g, &next, ips);

		if (depth) {
			ustacks += count;
			if (!sym_stack_complete(pr->sym, next.tgid, ips, depth))
				truncated += count;
		}
		fb->n = fb->unresolved = 0;
		stack_frames(pr, g, next.tgid, ips, depth, next.kern_stack, fb);
		unresolved += (uint64_t)fb->unresolved * count;
		nframes += (uint64_t)fb->n * count;
		{
			struct profile_origin o = { sym_service(pr->sym, next.tgid),
						    sym_comm(pr->sym, next.tgid),
						    sym_cgroup(pr->sym, next.tgid), next.tgid };

			profile_add_in(&pr->window, &o, fb->frames, fb->where, (uint32_t)fb->n, count);
		}
	}
	/* empty the generation for its next turn */
	for (size_t i = 0; i < nio_ids; i++)
		bpf_map_delete_elem(stacks, &io_ids[i]);
	free(io_ids);
	for (size_t i = 0; i < nkeys; i++) {
		if (keys[i].unwound)
			bpf_map_delete_elem(bpf_map__fd(g ? pr->skel->maps.dwarf_stacks1 :
							pr->skel->maps.dwarf_stacks0),
					    &keys[i].user_hash);
		else if (keys[i].user_stack >= 0)
			bpf_map_delete_elem(stacks, &keys[i].user_stack);
		if (keys[i].kern_stack >= 0)
			bpf_map_delete_elem(stacks, &keys[i].kern_stack);
		bpf_map_delete_elem(counts, &keys[i]);
	}
	/*
	 * the mappings of every process sampled, read again: what it dlopen'ed
	 * since gets its table (files already loaded are not read again)
	 */
	for (size_t i = 0; pr->unw && i < nkeys; i++) {
		size_t j = 0;

		while (j < i && keys[j].tgid != keys[i].tgid)
			j++;
		if (j == i && profile_wanted(pr, keys[i].tgid))
			unwinder_publish(pr->unw, keys[i].tgid, profile_unwind_want(pr));
	}
	if (pr->unw)
		profile_forget_seen(pr);
	free(keys);
	sym_trim(pr->sym);
	sym_symbol_stats(pr->sym, &sym_bytes, &sym_files, &sym_reads);
	pthread_mutex_lock(&pr->lock);
	pr->sym_bytes = sym_bytes;
	pr->sym_files = sym_files;
	pr->sym_reads = sym_reads;
	pr->samples += samples;
	pr->dropped = pr->skel->bss->dropped;
	if (samples) {
		pr->unresolved_ratio = nframes ? (double)unresolved / (double)nframes : 0;
		pr->truncated_ratio = ustacks ? (double)truncated / (double)ustacks : 0;
		pr->have_stats = 1;
	}
	pthread_mutex_unlock(&pr->lock);
}

