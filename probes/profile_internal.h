/*
 * profile_internal.h - what probes/profile.c (the collector: BPF object,
 * perf events, its thread, windows to Redis) and probes/profile_drain.c
 * (the kernel maps into symbolized windows) share, and nobody else.
 */
#ifndef FL_PROFILE_INTERNAL_H
#define FL_PROFILE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "model/profile.h"
#include "probes/probe.h"

#define PENDING_MAX 16

struct blob {
	char *data;
	size_t len;
	uint64_t ts_ms;
	int kind;			/* enum profile_kind */
};

struct profiler {
	struct profile_one_filter only;	/* one-shot: only this process or cgroup */
	struct profile_bpf *skel;
	int ncpu;
	int *pfds;
	struct bpf_link **links;
	uint32_t base_hz, hz;
	struct ring_buffer *rb;
	struct bpf_link *exec_link;
	struct bpf_link *exit_link;
	struct symbolizer *sym;
	struct unwinder *unw;		/* NULL: frame pointers only */
	struct python_names *py;	/* Python frames' names (probes/python.h) */
	struct {
		uint32_t pid;
		uint64_t want;		/* unwinder_publish's */
	} unw_todo[256];		/* processes announced or asking for a file's rows */
	uint32_t nunw_todo;
	char unwind_cache[400];		/* profile.unwind_cache */
	uint32_t max_stacks;		/* entries of the count and stack maps (stack_entries) */
	uint32_t unw_rows, unw_files;	/* unwinder_stats, copied under lock for collect */
	uint32_t unwind_rows;		/* profile.unwind_rows */
	uint64_t symbol_bytes;		/* profile.symbol_bytes */
	size_t sym_bytes, sym_files;	/* sym_symbol_stats, copied under lock for collect */
	uint64_t sym_reads;
	char host[200];
	char redis_url[512];
	uint64_t window_ns;
	uint32_t hourly_top;
	uint64_t retention_ms[2];	/* the 10 s windows' (and I/O stacks'), the hours' */
	pthread_t thread;
	pthread_mutex_t lock;
	int stop, started;
	uint64_t generation;
	struct profile window;		/* being filled by the current flush */
	struct profile hour;
	uint64_t io_interval_ns;	/* profile.io_interval; 0: no I/O stacks */
	struct bpf_link *io_start_link, *io_switch_link;
	struct profile io_window, iowait_window;	/* I/O stacks of the window */
	uint64_t io_dropped_said;	/* io_dropped when last logged */
	uint64_t hour_start_ms;
	struct blob pending[PENDING_MAX];
	int npending;
	/* stats, under lock */
	uint64_t samples, dropped;
	double unresolved_ratio, truncated_ratio;
	int have_stats;
};

/*
 * Whether samples of process tgid go in the profile: all of them, or
 * (one-shot --pid / --cgroup) those of one process, or of the processes in
 * a cgroup and the cgroups below it.
 */
int profile_wanted(const struct profiler *pr, uint32_t tgid);
/* unwinder_publish's want for a process announced or read again (profile.c). */
uint64_t profile_unwind_want(const struct profiler *pr);

/*
 * After the unwinder started its rows over, every process announces itself
 * again at its next sample (and gets its tables back): forget who was seen.
 */
void profile_forget_seen(struct profiler *pr);

/*
 * Drain generation g of the kernel maps: its CPU samples into pr->window,
 * and with I/O stacks on its submissions and waits into pr->io_window and
 * pr->iowait_window; then empty it for its next turn.
 */
void profile_drain(struct profiler *pr, int g);

#endif
