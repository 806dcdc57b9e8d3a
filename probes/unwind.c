/*
 * unwind.c - the unwinder: files' tables (unwind_table.h) in the BPF rows
 * array, processes' mappings in unwind_procs; see unwind.h.
 */
#include "probes/unwind.h"
#include "probes/proc_maps.h"
#include "probes/python.h"
#include "probes/unwind_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "core/array.h"
#include "core/fnv.h"
#include "core/log.h"
#include "probes/bpfmap.h"
#include "probes/symbolize.h"

/* ---- the unwinder: files, processes, the BPF maps ------------------------ */

struct file_rows {
	dev_t dev;
	ino_t ino;
	int64_t mtime;
	char build_id[80];		/* "" without one */
	uint32_t first, count;		/* count 0: no table */
	int never;			/* no table (none, or too big) whatever the room */
	struct unwind_load *loads;
	size_t nloads;
};

struct unwinder {
	int rows_fd, procs_fd;
	uint32_t max_rows, used;
	uint32_t max_file_rows;		/* a bigger file stays on frame pointers */
	struct file_rows *files;
	size_t nfiles;
	uint32_t failed;
	int said_full;
	uint64_t reset_ms;		/* when the rows were last started over */
	uint64_t said_ms;		/* when the table being full was last logged */
	uint32_t resets_unsaid;		/* start-overs since */
	char cache[512];		/* unwinder_set_cache's folder; "" none */
	uint32_t cache_reads;		/* tables read from it rather than built */
	/* per pid, a hash of its executable mappings as last published */
	struct {
		uint32_t pid, n;
		uint64_t maps;
	} seen[4096];
	int reset_unseen;		/* a reset the caller has not been told of */
};

/* Files without rows remembered across a start-over, at most (a bound, not a cache). */
#define NEVER_KEPT 1024

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Start the rows over: forget every file and every published process (the
 * walker falls back to frame pointers until they are published again), so
 * the files in use now get rows rather than those of processes long gone.
 */
static void unwinder_reset(struct unwinder *u)
{
	uint32_t next;
	size_t kept = 0;

	/* each deletion makes the next first key the one to take */
	while (bpf_map_get_next_key(u->procs_fd, NULL, &next) == 0 &&
	       bpf_map_delete_elem(u->procs_fd, &next) == 0)
		;
	/* files that never get rows are remembered: not read (and logged) again */
	for (size_t i = 0; i < u->nfiles; i++) {
		if (u->files[i].never && kept < NEVER_KEPT)
			u->files[kept++] = u->files[i];
		else
			free(u->files[i].loads);
	}
	u->nfiles = kept;
	u->used = 0;
	u->said_full = 0;
	memset(u->seen, 0, sizeof(u->seen));
	u->reset_ms = mono_ms();
	u->reset_unseen = 1;
}

int unwinder_take_reset(struct unwinder *u)
{
	int r = u->reset_unseen;

	u->reset_unseen = 0;
	return r;
}

struct unwinder *unwinder_new(int rows_fd, uint32_t max_rows, uint32_t max_file_rows,
			      int procs_fd, char *err, size_t errlen)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	struct bpfmap_window w;

	if (!u) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!bpfmap_window_open(rows_fd, sizeof(struct unwind_row), 0, 1, PROT_READ | PROT_WRITE,
				&w)) {
		snprintf(err, errlen, "cannot map the unwind rows: %s", strerror(errno));
		free(u);
		return NULL;
	}
	bpfmap_window_close(&w);
	u->rows_fd = rows_fd;
	u->procs_fd = procs_fd;
	u->max_rows = max_rows;
	u->max_file_rows = max_file_rows;
	return u;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nfiles; i++)
		free(u->files[i].loads);
	free(u->files);
	free(u);
}

uint32_t unwinder_cache_reads(const struct unwinder *u)
{
	return u->cache_reads;
}

int unwinder_set_cache(struct unwinder *u, const char *dir)
{
	int ret;

	u->cache[0] = '\0';
	if (!dir || !*dir)
		return 0;
	if (strlen(dir) >= sizeof(u->cache) - 100)
		return -ENAMETOOLONG;
	ret = unwind_cache_dir(dir);
	if (ret)
		return ret;
	snprintf(u->cache, sizeof(u->cache), "%s", dir);
	return 0;
}

void unwinder_stats(const struct unwinder *u, uint32_t *rows, uint32_t *max_rows,
		    uint32_t *files, uint32_t *failed)
{
	uint32_t n = 0;

	for (size_t i = 0; i < u->nfiles; i++)
		n += u->files[i].count > 0;
	*rows = u->used;
	*max_rows = u->max_rows;
	*files = n;
	*failed = u->failed;
}

/*
 * The rows of the file at path, built and loaded the first time when
 * build says so; NULL if none, with *lazy set when that is only because
 * they are not built yet (!build).  *reset is set when the rows were
 * started over to make room (the caller's earlier results are void).
 */
/*
 * Copy n rows into the BPF array from row first on, through a window
 * mapped for the copy: a mapping of the whole array would be resident
 * whole (bpfmap.h).  Returns 0, or -1 with errno set.
 */
static int write_rows(struct unwinder *u, uint32_t first, const struct unwind_row *rows,
		      size_t n)
{
	struct bpfmap_window w;
	void *p = bpfmap_window_open(u->rows_fd, sizeof(*rows), first, n, PROT_READ | PROT_WRITE,
				     &w);

	if (!p)
		return -1;
	memcpy(p, rows, n * sizeof(*rows));
	bpfmap_window_close(&w);
	return 0;
}

static const struct file_rows *file_rows_of(struct unwinder *u, const char *path, int *reset,
					    int build, int *lazy)
{
	struct unwind_table t;
	struct file_rows *f, *n;
	struct stat st;
	char err[256];
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	for (size_t i = 0; i < u->nfiles; i++) {
		f = &u->files[i];
		if (f->dev == st.st_dev && f->ino == st.st_ino && f->mtime == st.st_mtime) {
			close(fd);
			return f->count ? f : NULL;
		}
	}
	if (!build) {
		char bid[80];

		/* the same build under another inode is known; anything else waits */
		if (sym_fd_build_id(fd, bid, sizeof(bid)) == 0)
			for (size_t i = 0; i < u->nfiles; i++)
				if (u->files[i].build_id[0] && !strcmp(u->files[i].build_id, bid))
					build = 1;
		if (!build) {
			close(fd);
			*lazy = 1;
			return NULL;
		}
	}
	n = realloc(u->files, (u->nfiles + 1) * sizeof(*n));
	if (!n) {
		close(fd);
		return NULL;
	}
	u->files = n;
	f = &u->files[u->nfiles++];
	memset(f, 0, sizeof(*f));
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->mtime = st.st_mtime;
	/* the same build in another container (another inode): its rows again */
	if (sym_fd_build_id(fd, f->build_id, sizeof(f->build_id)))
		f->build_id[0] = '\0';
	for (size_t i = 0; f->build_id[0] && i + 1 < u->nfiles; i++) {
		const struct file_rows *o = &u->files[i];

		if (strcmp(o->build_id, f->build_id))
			continue;
		close(fd);
		f->first = o->first;
		f->count = o->count;
		f->never = o->never;
		f->loads = o->count ? malloc(o->nloads * sizeof(*o->loads)) : NULL;
		if (o->count && !f->loads) {
			f->count = 0;
			return NULL;
		}
		if (f->loads)
			memcpy(f->loads, o->loads, o->nloads * sizeof(*o->loads));
		f->nloads = o->nloads;
		return f->count ? f : NULL;
	}
	/* one giant (node: ~370,000 rows) would leave little for the rest */
	if (u->cache[0] && unwind_cache_load(u->cache, f->build_id, u->max_file_rows, &t) == 0) {
		ret = 0;
		u->cache_reads++;
		log_debug("profile: %s: %zu unwind rows from the cache", path, t.nrows);
	} else {
		ret = unwind_table_build(fd, u->max_file_rows, &t, err, sizeof(err));
		if (!ret && t.nrows)
			unwind_cache_store(u->cache, f->build_id, &t);
	}
	close(fd);
	if (ret == -E2BIG) {
		log_info("profile: %s: %s (half of profile.unwind_rows); it unwinds with "
			 "frame pointers only", path, err);
		u->failed++;
		f->never = 1;
		return NULL;
	}
	if (ret) {
		u->failed++;
		if (ret != -ENOMEM)
			f->never = 1;
		log_debug("profile: %s: no unwind table (%s); frame pointers only", path, err);
		return NULL;
	}
	if (!t.nrows) {
		/* an .eh_frame_hdr without FDEs: nothing to unwind with */
		f->never = 1;
		unwind_table_free(&t);
		return NULL;
	}
	if (t.nrows > u->max_rows - u->used && u->used &&
	    (!u->reset_ms || mono_ms() - u->reset_ms >= 60000)) {
		/* full of files processes mapped over time: start over, at most once a minute */
		char bid[sizeof(f->build_id)];

		/* a build host fills it every minute: say so once an hour */
		u->resets_unsaid++;
		if (!u->said_ms || mono_ms() - u->said_ms >= 3600000) {
			log_info("profile: the unwind table is full (%u rows); starting it over for "
				 "the processes running now (%u time%s since this was last said; "
				 "profile.unwind_rows raises it)", u->max_rows, u->resets_unsaid,
				 u->resets_unsaid == 1 ? "" : "s");
			u->said_ms = mono_ms();
			u->resets_unsaid = 0;
		}
		memcpy(bid, f->build_id, sizeof(bid));
		unwinder_reset(u);
		*reset = 1;
		f = &u->files[u->nfiles++];	/* the array is kept: room for one */
		memset(f, 0, sizeof(*f));
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		f->mtime = st.st_mtime;
		memcpy(f->build_id, bid, sizeof(bid));
	}
	if (t.nrows > u->max_rows - u->used) {
		if (!u->said_full && (!u->said_ms || mono_ms() - u->said_ms >= 3600000)) {
			log_warn("profile: the unwind table is full (%u rows); %s and files loaded "
				 "after it unwind with frame pointers only until it starts over "
				 "(profile.unwind_rows raises it)", u->max_rows, path);
			u->said_ms = mono_ms();
		}
		u->said_full = 1;
		u->failed++;
		unwind_table_free(&t);
		return NULL;
	}
	if (write_rows(u, u->used, t.rows, t.nrows)) {
		log_warn("profile: %s: cannot write its unwind rows: %s", path, strerror(errno));
		u->failed++;
		unwind_table_free(&t);
		return NULL;
	}
	f->first = u->used;
	f->count = (uint32_t)t.nrows;
	u->used += (uint32_t)t.nrows;
	f->loads = t.loads;
	f->nloads = t.nloads;
	t.loads = NULL;
	log_debug("profile: %s: %zu unwind rows from %zu FDEs (%zu rules not supported)", path,
		  t.nrows, t.fdes, t.unsupported);
	unwind_table_free(&t);
	return f;
}

static int map_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct unwind_map *)a)->start, y = ((const struct unwind_map *)b)->start;

	return x < y ? -1 : x > y;
}

int unwinder_add_process(struct unwinder *u, uint32_t pid)
{
	return unwinder_publish(u, pid, UNWIND_WANT_ALL);
}

int unwinder_publish(struct unwinder *u, uint32_t pid, uint64_t want)
{
	struct unwind_proc *up = calloc(1, sizeof(*up));
	char path[64], line[1024];
	FILE *fp;
	int ret;

	if (!up)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	fp = fopen(path, "re");
	if (!fp) {
		ret = -errno;
		free(up);
		return ret;
	}
	int reset = 0, again = 1, lazy;
	uint64_t h = FNV64_OFFSET;
	size_t slot = pid % (sizeof(u->seen) / sizeof(u->seen[0]));

	/*
	 * mappings as they were when last published (every window re-reads
	 * the processes it sampled): nothing to open, build or publish
	 */
	while (fgets(line, sizeof(line), fp)) {
		const char *perms = strchr(line, ' ');

		if (perms && strlen(perms) > 3 && perms[3] == 'x')	/* " r-xp" */
			h = fnv64_str(h, line);
	}
	if (u->seen[slot].pid == pid && u->seen[slot].maps == h && !want) {
		fclose(fp);
		free(up);
		return (int)u->seen[slot].n;
	}
	rewind(fp);
restart:
	while (fgets(line, sizeof(line), fp) && up->n < UNWIND_MAX_MAPS) {
		struct maps_line ml;
		char rooted[1024];
		const struct file_rows *f;
		const char *name;
		uint64_t start, end, off;

		if (maps_line_parse(line, &ml) != 1)
			continue;
		name = ml.path;
		start = ml.start;
		end = ml.end;
		off = ml.offset;
		if (name[0] != '/')
			continue;	/* anonymous (JIT), [vdso]: frame pointers */
		snprintf(rooted, sizeof(rooted), "/proc/%u/root%s", pid, name);
		if (!up->py.eval_end && python_file_name_matches(name)) {
			struct python_interp pi;

			if (python_interp_of(rooted, &pi) == 0)
				python_interp_publish(&pi, start, end, off, &up->py);
		}
		lazy = 0;
		f = file_rows_of(u, rooted, &reset, want == UNWIND_WANT_ALL ||
				 (want >= start && want < end), &lazy);
		if (reset && again) {
			/* the rows the mappings read so far pointed at are gone: read them again */
			again = 0;
			reset = 0;
			memset(up, 0, sizeof(*up));
			rewind(fp);
			goto restart;
		}
		if (!f && lazy) {
			/* the walker asks for it (want) when a sample goes through it */
			struct unwind_map *m = &up->m[up->n++];

			m->start = start;
			m->end = end;
			m->first = UNWIND_LAZY;
			continue;
		}
		if (!f)
			continue;
		for (size_t i = 0; i < f->nloads; i++) {
			const struct unwind_load *l = &f->loads[i];

			if ((l->offset & ~0xfffULL) <= off && off < l->offset + l->filesz) {
				struct unwind_map *m = &up->m[up->n++];

				m->start = start;
				m->end = end;
				m->bias = start - off + l->offset - l->vaddr;
				m->first = f->first;
				m->count = f->count;
				break;
			}
		}
	}
	fclose(fp);
	qsort(up->m, up->n, sizeof(up->m[0]), map_cmp);
	{
		/* read now: the walker asks again no sooner than a second from now */
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		up->asked_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	}
	ret = up->n ? bpf_map_update_elem(u->procs_fd, &pid, up, BPF_ANY) : 0;
	if (ret) {
		ret = -errno;
	} else {
		ret = (int)up->n;
		if (again) {	/* not after a reset mid-read: that pass may be partial */
			u->seen[slot].pid = pid;
			u->seen[slot].n = up->n;
			u->seen[slot].maps = h;
		}
	}
	free(up);
	return ret;
}

void unwinder_forget_process(struct unwinder *u, uint32_t pid)
{
	size_t slot = pid % (sizeof(u->seen) / sizeof(u->seen[0]));

	if (u->seen[slot].pid == pid)
		memset(&u->seen[slot], 0, sizeof(u->seen[slot]));
}
