/*
 * profile.c - continuous CPU profiler: loads bpf/profile.bpf.c on a
 * cpu-clock perf event per CPU, drains the kernel's counts every window
 * (10 s), symbolizes them (probes/symbolize.c) and keeps the windows for
 * Redis (fl:{H}:p10) and an hourly merge of the top stacks (fl:{H}:p3600).
 *
 * A thread of its own does all of it, so symbolization never delays a 1 s
 * snapshot.  At each flush it flips the BPF program's map generation and
 * drains the previous one: no increment is lost while it reads.  New
 * processes arrive through a ring buffer at their first sample, and their
 * mappings are read right then, so processes that live for milliseconds
 * still resolve.  CPUs that come online later get their perf event at the
 * next flush; there is no fixed CPU limit.
 *
 * Burst: `faultline profile burst` sets fl:{H}:profile:burst to a rate
 * with an expiry; the probe samples at that rate until the key expires.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "store/conn.h"
#include "probes/caps.h"
#include "core/array.h"
#include "core/log.h"
#include "probes/probe.h"
#include "model/catalog.h"
#include "model/profile.h"
#include "profile.skel.h"
#include "bpf/profile.h"
#include "store/profile_store.h"
#include "store/store.h"
#include "probes/profile_internal.h"
#include "probes/python.h"
#include "probes/symbolize.h"
#include "probes/unwind.h"
#include "core/timeutil.h"

static int open_events(struct profiler *pr, uint32_t hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = hz,
	};
	int opened = 0;

	for (int c = 0; c < pr->ncpu; c++) {
		if (pr->links[c])
			continue;
		int fd = (int)syscall(__NR_perf_event_open, &attr, -1, c, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0)
			continue;	/* offline CPU: retried at the next flush */
		pr->links[c] = bpf_program__attach_perf_event(pr->skel->progs.profile_sample, fd);
		if (!pr->links[c]) {
			close(fd);
			continue;
		}
		pr->pfds[c] = fd;
		opened++;
	}
	pr->hz = hz;
	return opened;
}

static void close_events(struct profiler *pr)
{
	for (int c = 0; c < pr->ncpu; c++) {
		if (pr->links[c])
			bpf_link__destroy(pr->links[c]);
		if (pr->pfds[c] >= 0)
			close(pr->pfds[c]);
		pr->links[c] = NULL;
		pr->pfds[c] = -1;
	}
}

/*
 * What a process's tables are built for when it is announced: a one-shot
 * profile of one process builds all of its files at once (before its first
 * sample); the probe builds a file only once a sample goes through it, so
 * only what is sampled costs rows and time (unwind.h, UNWIND_LAZY).
 */
uint64_t profile_unwind_want(const struct profiler *pr)
{
	return pr->only.pid ? UNWIND_WANT_ALL : 0;
}

static int on_proc(void *ctx, void *data, size_t len)
{
	struct profiler *pr = ctx;
	const struct profile_proc_event *e = data;
	char comm[17];

	if (len < sizeof(*e))
		return 0;
	if (e->exited) {
		/* named until the window that may hold its samples is drained */
		sym_process_exited(pr->sym, e->tgid);
		if (pr->unw)
			unwinder_forget_process(pr->unw, e->tgid);
		return 0;
	}
	memcpy(comm, e->comm, 16);
	comm[16] = '\0';
	/* a known pid arriving again has exec'd: its mappings changed (not when it asks for rows) */
	if (!e->want) {
		sym_process_refresh(pr->sym, e->tgid, comm);
		/* names of code objects are per process: a new program (or pid) starts over */
		python_names_forget(pr->py, e->tgid);
	}
	/*
	 * tables only for what the profile keeps (a one-shot --pid needs one
	 * process's), built after the ring buffer is read: every announced
	 * process's mappings are snapshotted first, as a 40 ms one cannot wait
	 */
	if (pr->unw && profile_wanted(pr, e->tgid) &&
	    pr->nunw_todo < sizeof(pr->unw_todo) / sizeof(pr->unw_todo[0])) {
		pr->unw_todo[pr->nunw_todo].pid = e->tgid;
		pr->unw_todo[pr->nunw_todo].want = e->want ? e->want : profile_unwind_want(pr);
		pr->nunw_todo++;
	}
	return 0;
}

/*
 * Read the ring buffer for up to timeout_ms, then build the announced
 * processes' tables for at most 10 ms, the rest next time round: a host's
 * first second announces every process, and building their tables must not
 * keep a 40 ms process waiting to have its mappings read.
 */
static void poll_processes(struct profiler *pr, int timeout_ms)
{
	uint64_t start;
	uint32_t done = 0;

	ring_buffer__poll(pr->rb, pr->nunw_todo ? 0 : timeout_ms);
	start = time_mono_ns();
	while (done < pr->nunw_todo && time_mono_ns() - start < 10 * NSEC_PER_MSEC) {
		uint32_t j = 0;

		while (j < done && (pr->unw_todo[j].pid != pr->unw_todo[done].pid ||
				    pr->unw_todo[j].want != pr->unw_todo[done].want))
			j++;
		if (j == done)
			unwinder_publish(pr->unw, pr->unw_todo[done].pid, pr->unw_todo[done].want);
		done++;
	}
	memmove(pr->unw_todo, pr->unw_todo + done, (pr->nunw_todo - done) * sizeof(pr->unw_todo[0]));
	pr->nunw_todo -= done;
	if (pr->unw && done) {
		uint32_t rows, max, files, failed;

		unwinder_stats(pr->unw, &rows, &max, &files, &failed);
		pthread_mutex_lock(&pr->lock);
		pr->unw_rows = rows;
		pr->unw_files = files;
		pthread_mutex_unlock(&pr->lock);
	}
	if (pr->unw)
		profile_forget_seen(pr);
}

static void queue_blob(struct profiler *pr, const struct profile *p, int kind)
{
	struct blob b = { .ts_ms = p->ts_ms, .kind = kind };
	int level = kind == PROFILE_CPU_HOURLY ? PROFILE_LEVEL_ARCHIVE : PROFILE_LEVEL_WINDOW;

	if (profile_encode_level(p, level, &b.data, &b.len))
		return;
	pthread_mutex_lock(&pr->lock);
	if (pr->npending == PENDING_MAX) {
		free(pr->pending[0].data);
		memmove(&pr->pending[0], &pr->pending[1], (PENDING_MAX - 1) * sizeof(b));
		pr->npending--;
	}
	pr->pending[pr->npending++] = b;
	pthread_mutex_unlock(&pr->lock);
}

/* End a window: flip generations, drain, hand the window on. */
static void flush(struct profiler *pr, uint64_t duration_ns)
{
	int g = (int)(pr->skel->bss->gen & 1);
	uint64_t now_ms = time_wall_ns() / NSEC_PER_MSEC;

	__atomic_store_n(&pr->skel->bss->gen, pr->skel->bss->gen + 1, __ATOMIC_SEQ_CST);
	usleep(2000);	/* samples that read the old generation finish within µs */
	ring_buffer__consume(pr->rb);
	sym_set_generation(pr->sym, ++pr->generation);
	profile_free(&pr->window);
	profile_init(&pr->window, pr->host);
	for (int k = 0; pr->io_interval_ns && k < 2; k++) {
		profile_free(k ? &pr->iowait_window : &pr->io_window);
		profile_init(k ? &pr->iowait_window : &pr->io_window, pr->host);
	}
	profile_drain(pr, g);
	pr->window.ts_ms = now_ms;
	pr->window.duration_ms = duration_ns / NSEC_PER_MSEC;
	pr->window.rate_hz = pr->hz;
	if (pr->window.total)
		queue_blob(pr, &pr->window, PROFILE_CPU);
	for (int k = 0; pr->io_interval_ns && k < 2; k++) {
		struct profile *io = k ? &pr->iowait_window : &pr->io_window;

		io->ts_ms = now_ms;
		io->duration_ms = duration_ns / NSEC_PER_MSEC;
		if (io->total)
			queue_blob(pr, io, k ? PROFILE_IO_WAIT : PROFILE_IO);
	}
	if (!pr->hour_start_ms)
		pr->hour_start_ms = now_ms / 3600000 * 3600000;
	if (now_ms >= pr->hour_start_ms + 3600000) {
		pr->hour.ts_ms = pr->hour_start_ms + 3600000;
		if (pr->hour.total && profile_truncate(&pr->hour, pr->hourly_top) == 0)
			queue_blob(pr, &pr->hour, PROFILE_CPU_HOURLY);
		profile_free(&pr->hour);
		profile_init(&pr->hour, pr->host);
		pr->hour_start_ms = now_ms / 3600000 * 3600000;
	}
	profile_merge(&pr->hour, &pr->window, NULL);
	/* exited processes, drained now, are forgotten; the others after 60 idle windows */
	sym_forget_exited(pr->sym);
	if (pr->generation > 60)
		sym_expire(pr->sym, pr->generation - 60);
	open_events(pr, pr->hz);	/* CPUs that came online */
}

/* The burst rate requested for this host, or 0. */
static uint32_t burst_requested(struct profiler *pr, struct conn **rc)
{
	char err[256];
	uint32_t hz;
	long got;

	if (!pr->redis_url[0])
		return 0;
	if (!*rc) {
		*rc = conn_open(pr->redis_url, NSEC_PER_SEC, err, sizeof(err));
		if (!*rc)
			return 0;
	}
	got = profile_burst_get(*rc, pr->host);
	if (got < 0) {
		conn_close(*rc);
		*rc = NULL;
		return 0;
	}
	hz = (uint32_t)got;
	return hz > 999 ? 999 : hz;
}

static void *profiler_thread(void *arg)
{
	struct profiler *pr = arg;
	uint64_t window_start = time_mono_ns(), last_burst_check = 0;
	struct conn *rc = NULL;
	char cerr[256];

	if (caps_keep(caps_profiler, cerr, sizeof(cerr)))
		log_warn("profile: keeping every capability: %s", cerr);

	for (;;) {
		uint64_t now;

		pthread_mutex_lock(&pr->lock);
		if (pr->stop) {
			pthread_mutex_unlock(&pr->lock);
			break;
		}
		pthread_mutex_unlock(&pr->lock);
		poll_processes(pr, 100);
		now = time_mono_ns();
		if (now - last_burst_check >= NSEC_PER_SEC) {
			uint32_t want = burst_requested(pr, &rc);
			uint32_t hz = want ? want : pr->base_hz;

			last_burst_check = now;
			if (hz != pr->hz) {
				log_info("profile: sampling at %u Hz (%s)", hz,
					 want ? "burst requested" : "burst over");
				close_events(pr);
				open_events(pr, hz);
			}
		}
		if (now - window_start >= pr->window_ns) {
			flush(pr, now - window_start);
			window_start = now;
		}
	}
	if (rc)
		conn_close(rc);
	return NULL;
}

/*
 * Entries of the count and stack maps: one window's distinct stacks are at
 * most its samples, so this host's CPUs x the rate (99 Hz at least, for a
 * burst) x the window, twice over, as a power of two from 1024 up to the
 * compiled maximum.  A stack map preallocates ~1 KiB an entry: sized for
 * the largest host, the two generations held 34 MB of kernel memory on a
 * 2-CPU one.  A burst beyond this loses what does not fit, counted in
 * faultline_profile_dropped_total.
 */
static uint32_t stack_entries(int ncpu, uint32_t hz, uint64_t window_ns)
{
	uint64_t want = (uint64_t)(ncpu > 0 ? ncpu : 1) * (hz > 99 ? hz : 99) *
			((window_ns + NSEC_PER_SEC - 1) / NSEC_PER_SEC) * 2;
	uint32_t n = 1024;

	while (n < want && n < PROFILE_MAX_STACKS)
		n *= 2;
	return n;
}

/* Load the sampler and open its events; no thread. */
static int profiler_start(struct profiler *pr, uint32_t hz, char *err, size_t errlen)
{
	int ret, n;

	pr->ncpu = libbpf_num_possible_cpus();
	pr->pfds = calloc((size_t)pr->ncpu, sizeof(*pr->pfds));
	pr->links = calloc((size_t)pr->ncpu, sizeof(*pr->links));
	pr->sym = sym_new();
	pr->py = python_names_new();
	if (!pr->pfds || !pr->links || !pr->sym || !pr->py) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int c = 0; c < pr->ncpu; c++)
		pr->pfds[c] = -1;
	if (pr->symbol_bytes)
		sym_set_budget(pr->sym, pr->symbol_bytes);
	profile_init(&pr->window, pr->host);
	profile_init(&pr->hour, pr->host);
	pthread_mutex_init(&pr->lock, NULL);
	/* block_io_start came in Linux 6.5: without it, no I/O stacks (rather than no profiler) */
	if (pr->io_interval_ns &&
	    libbpf_find_vmlinux_btf_id("block_io_start", BPF_TRACE_RAW_TP) < 0) {
		log_warn("profile: this kernel has no block_io_start tracepoint (Linux 6.5 added "
			 "it): no I/O stacks; profile.io_interval: 0 says so quietly");
		pr->io_interval_ns = 0;
	}
	pr->skel = profile_bpf__open();
	if (pr->skel) {
		pr->skel->rodata->unwind_dwarf = pr->unwind_rows > 0;
		pr->skel->rodata->io_interval_ns = pr->io_interval_ns;
		bpf_program__set_autoload(pr->skel->progs.profile_io_start, pr->io_interval_ns > 0);
		bpf_program__set_autoload(pr->skel->progs.profile_io_switch, pr->io_interval_ns > 0);
		bpf_map__set_max_entries(pr->skel->maps.unwind_rows,
					 pr->unwind_rows ? pr->unwind_rows : 1);
		pr->max_stacks = stack_entries(pr->ncpu, hz, pr->window_ns);
		bpf_map__set_max_entries(pr->skel->maps.stacks0, pr->max_stacks);
		bpf_map__set_max_entries(pr->skel->maps.stacks1, pr->max_stacks);
		bpf_map__set_max_entries(pr->skel->maps.counts0, pr->max_stacks);
		bpf_map__set_max_entries(pr->skel->maps.counts1, pr->max_stacks);
	}
	if (!pr->skel || profile_bpf__load(pr->skel)) {
		ret = -errno;
		snprintf(err, errlen, "cannot load the BPF profiler: %s; needs CAP_BPF and "
			 "CAP_PERFMON and BTF; pass --no-bpf to run without it", strerror(errno));
		return ret;
	}
	/* after the load: libbpf's copy of the kernel's BTF (11 MB) is freed by then */
	if (sym_load_kernel(pr->sym) <= 0)
		log_warn("profile: /proc/kallsyms gave no addresses (kptr_restrict?); kernel frames "
			 "stay unresolved");
	else
		log_debug("profile: the kernel's function names in %zu KiB",
			  sym_kernel_bytes(pr->sym) / 1024);
	if (pr->unwind_rows) {
		char uerr[256];

		pr->unw = unwinder_new(bpf_map__fd(pr->skel->maps.unwind_rows), pr->unwind_rows,
				       pr->unwind_rows / 2, bpf_map__fd(pr->skel->maps.unwind_procs),
				       uerr, sizeof(uerr));
		if (!pr->unw)
			log_warn("profile: %s; user stacks unwind with frame pointers only", uerr);
		else if (pr->unwind_cache[0] &&
			 (ret = unwinder_set_cache(pr->unw, pr->unwind_cache)))
			log_warn("profile: profile.unwind_cache %s: %s; unwind tables are built at "
				 "every start", pr->unwind_cache, strerror(-ret));
		else if (pr->only.pid)
			unwinder_add_process(pr->unw, pr->only.pid);	/* before its first sample */
	}
	pr->exec_link = bpf_program__attach(pr->skel->progs.profile_exec);
	if (!pr->exec_link)
		log_warn("profile: cannot attach to sched_process_exec (%s); processes that exec "
			 "right after fork may keep their parent's name", strerror(errno));
	pr->exit_link = bpf_program__attach(pr->skel->progs.profile_exit);
	if (!pr->exit_link)
		log_warn("profile: cannot attach to sched_process_exit (%s); exited processes are "
			 "forgotten after 10 minutes, and a pid used again may keep the old "
			 "program's names", strerror(errno));
	if (pr->io_interval_ns) {
		pr->io_start_link = bpf_program__attach(pr->skel->progs.profile_io_start);
		pr->io_switch_link = pr->io_start_link ?
			bpf_program__attach(pr->skel->progs.profile_io_switch) : NULL;
		if (!pr->io_switch_link) {
			log_warn("profile: cannot attach to block_io_start and sched_switch (%s); no "
				 "I/O stacks (profile.io_interval)", strerror(errno));
			bpf_link__destroy(pr->io_start_link);
			pr->io_start_link = NULL;
			pr->io_interval_ns = 0;
		} else {
			profile_init(&pr->io_window, pr->host);
			profile_init(&pr->iowait_window, pr->host);
		}
	}
	pr->rb = ring_buffer__new(bpf_map__fd(pr->skel->maps.procs), on_proc, pr, NULL);
	if (!pr->rb) {
		snprintf(err, errlen, "profile: cannot open the ring buffer: %s", strerror(errno));
		return -errno;
	}
	pr->base_hz = hz;
	n = open_events(pr, hz);
	if (n == 0) {
		snprintf(err, errlen, "profile: cannot open a cpu-clock perf event on any CPU (%s); "
			 "needs CAP_PERFMON (perf_event_paranoid?)", strerror(errno));
		return -EPERM;
	}
	log_info("profile: sampling %d CPUs at %u Hz, %llu s windows", n, hz,
		 (unsigned long long)(pr->window_ns / NSEC_PER_SEC));
	return 0;
}

static void profiler_stop(struct profiler *pr)
{
	if (pr->started) {
		pthread_mutex_lock(&pr->lock);
		pr->stop = 1;
		pthread_mutex_unlock(&pr->lock);
		pthread_join(pr->thread, NULL);
	}
	if (pr->pfds)
		close_events(pr);
	ring_buffer__free(pr->rb);
	bpf_link__destroy(pr->exec_link);
	bpf_link__destroy(pr->exit_link);
	bpf_link__destroy(pr->io_start_link);
	bpf_link__destroy(pr->io_switch_link);
	if (pr->io_interval_ns) {
		profile_free(&pr->io_window);
		profile_free(&pr->iowait_window);
	}
	unwinder_free(pr->unw);
	profile_bpf__destroy(pr->skel);
	sym_free(pr->sym);
	python_names_free(pr->py);
	profile_free(&pr->window);
	profile_free(&pr->hour);
	for (int i = 0; i < pr->npending; i++)
		free(pr->pending[i].data);
	free(pr->pfds);
	free(pr->links);
}

static int profile_open(void **priv, const struct probe_config *cfg, char *err, size_t errlen)
{
	struct profiler *pr = calloc(1, sizeof(*pr));
	int ret;

	if (!pr)
		return -ENOMEM;
	snprintf(pr->host, sizeof(pr->host), "%s", cfg->host);
	snprintf(pr->redis_url, sizeof(pr->redis_url), "%s", cfg->redis_url);
	pr->window_ns = cfg->profile_window_ns;
	pr->hourly_top = (uint32_t)cfg->profile_hourly_top;
	pr->retention_ms[0] = cfg->retention_p10_ns / NSEC_PER_MSEC;
	pr->retention_ms[1] = cfg->retention_p3600_ns / NSEC_PER_MSEC;
	pr->unwind_rows = (uint32_t)cfg->profile_unwind_rows;
	pr->symbol_bytes = cfg->profile_symbol_bytes;
	snprintf(pr->unwind_cache, sizeof(pr->unwind_cache), "%s", cfg->profile_unwind_cache);
	pr->io_interval_ns = cfg->profile_io_interval_ns;
	ret = profiler_start(pr, (uint32_t)cfg->profile_rate_hz, err, errlen);
	if (ret) {
		profiler_stop(pr);
		free(pr);
		return ret;
	}
	if (pthread_create(&pr->thread, NULL, profiler_thread, pr)) {
		snprintf(err, errlen, "profile: cannot start its thread");
		profiler_stop(pr);
		free(pr);
		return -EAGAIN;
	}
	pthread_setname_np(pr->thread, "fl-profile");	/* for top -H and crash reports */
	pr->started = 1;
	*priv = pr;
	return 0;
}

static int profile_collect(void *priv, struct snapshot *s)
{
	struct profiler *pr = priv;
	int ok = 1;

	pthread_mutex_lock(&pr->lock);
	ok &= !!snapshot_add_counter(s, "profile.samples", pr->samples, NULL);
	ok &= !!snapshot_add_counter(s, "profile.dropped", pr->dropped, NULL);
	ok &= !!snapshot_add_gauge(s, "profile.rate_hz", pr->hz, NULL);
	if (pr->unw) {
		ok &= !!snapshot_add_gauge(s, "profile.unwind_rows", pr->unw_rows, NULL);
		ok &= !!snapshot_add_gauge(s, "profile.unwind_files", pr->unw_files, NULL);
	}
	ok &= !!snapshot_add_gauge(s, "profile.symbol_bytes", pr->sym_bytes, NULL);
	ok &= !!snapshot_add_gauge(s, "profile.symbol_files", pr->sym_files, NULL);
	ok &= !!snapshot_add_counter(s, "profile.symbol_reads", pr->sym_reads, NULL);
	if (pr->have_stats) {
		ok &= !!snapshot_add_gauge(s, "profile.unresolved_frames_ratio",
					   catalog_ratio(pr->unresolved_ratio), NULL);
		ok &= !!snapshot_add_gauge(s, "profile.truncated_user_stacks_ratio",
					   catalog_ratio(pr->truncated_ratio), NULL);
	}
	pthread_mutex_unlock(&pr->lock);
	return ok ? 0 : -ENOMEM;
}

static int profile_publish(void *priv, struct store *st, const char *host)
{
	struct profiler *pr = priv;

	pthread_mutex_lock(&pr->lock);
	for (int i = 0; i < pr->npending; i++) {
		struct blob *b = &pr->pending[i];

		profile_store_put(st, host, b->kind, b->ts_ms,
				  b->kind == PROFILE_CPU_HOURLY ? pr->retention_ms[1] :
				  pr->retention_ms[0], b->data, b->len);
		free(b->data);
	}
	pr->npending = 0;
	pthread_mutex_unlock(&pr->lock);
	return 0;
}

static void profile_close(void *priv)
{
	struct profiler *pr = priv;

	if (!pr)
		return;
	profiler_stop(pr);
	free(pr);
}

int profile_oneshot(const struct probe_config *cfg, uint64_t duration_ns, uint32_t hz,
		    const struct profile_one_filter *only, struct profile *out, char *err,
		    size_t errlen)
{
	struct profiler pr = { 0 };

	if (only)
		pr.only = *only;
	uint64_t start, now;
	int ret;

	snprintf(pr.host, sizeof(pr.host), "%s", cfg->host);
	pr.window_ns = duration_ns;
	pr.unwind_rows = (uint32_t)cfg->profile_unwind_rows;
	pr.symbol_bytes = cfg->profile_symbol_bytes;
	snprintf(pr.unwind_cache, sizeof(pr.unwind_cache), "%s", cfg->profile_unwind_cache);
	ret = profiler_start(&pr, hz, err, errlen);
	if (ret) {
		profiler_stop(&pr);
		return ret;
	}
	start = time_mono_ns();
	while ((now = time_mono_ns()) - start < duration_ns)
		poll_processes(&pr, 100);
	flush(&pr, now - start);
	*out = pr.window;
	profile_init(&pr.window, pr.host);	/* ownership moved to *out */
	profiler_stop(&pr);
	return 0;
}

static int profile_enabled(const struct probe_config *cfg, int once, const char **why)
{
	*why = once ? "--once publishes no profiles" : "profile.enabled: false";
	return cfg->profile_enabled && !once;
}

const struct collector profile_collector = {
	.name = "profile",
	.enabled = profile_enabled,
	.needs_bpf = 1,
	.open = profile_open,
	.collect = profile_collect,
	.publish = profile_publish,
	.close = profile_close,
};
