/*
 * symbolize.c - addresses to names; see symbolize.h.
 *
 * Everything is looked up by binary search over sorted arrays: the
 * kernel's names (kernel_syms.h), each ELF file's function symbols once
 * per build id (elf_syms.h; read when first named, dropped past the
 * budget), each process's executable mappings once per process.
 */
#include "probes/symbolize.h"
#include "probes/proc_maps.h"

#include "probes/build_id.h"
#include "probes/elf_syms.h"
#include "probes/kernel_syms.h"
#include "probes/perfmap.h"

#include <errno.h>
#include <libelf.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/array.h"
#include "core/strmap.h"

#define MAX_PROCS 4096
#define SYM_DEFAULT_BUDGET (4u << 20)	/* etc/probe.yaml's profile.symbol_bytes */

struct mapping {
	uint64_t start, end, offset;
	char module[64];	/* basename, for module+offset */
	struct elf_syms *elf;	/* NULL if unreadable */
};

struct proc {
	uint32_t pid;
	uint64_t generation;
	char comm[16];
	char service[128];
	char cgroup[256];	/* its cgroup path (v2, else the cpu controller's) */
	struct mapping *maps;
	size_t nmaps;
	struct perfmap *pm;	/* JIT names (/tmp/perf-PID.map), once looked for */
	int pm_tried;
	uint64_t reread;	/* 1 + the generation its mappings were last read again in */
	int exited;		/* sym_process_exited: forget at sym_forget_exited */
};

struct symbolizer {
	char kernel_build_id[64];	/* from /sys/kernel/notes, "" if unknown */
	struct kernel_syms *kernel;	/* NULL until sym_load_kernel */
	struct elf_syms **elfs;
	size_t nelfs;
	struct strmap elf_index;
	size_t budget;			/* bytes of ELF symbols held at most (sym_set_budget) */
	size_t syms_heap;		/* bytes held now, of files in ELF_READ */
	uint64_t use_clock;		/* ticks once per name looked up */
	uint64_t syms_reads;		/* files whose symbols were read (again) */
	struct proc *procs;
	size_t nprocs;
	uint64_t generation;
};

struct symbolizer *sym_new(void)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	elf_version(EV_CURRENT);
	strmap_init(&s->elf_index);
	s->budget = SYM_DEFAULT_BUDGET;
	s->procs = calloc(MAX_PROCS, sizeof(*s->procs));
	if (!s->procs) {
		free(s);
		return NULL;
	}
	return s;
}

static void proc_clear(struct proc *p)
{
	free(p->maps);
	perfmap_free(p->pm);
	memset(p, 0, sizeof(*p));
}

/* Forget the process at procs[i]: the last one takes its place. */
static void proc_remove(struct symbolizer *s, size_t i)
{
	proc_clear(&s->procs[i]);
	s->procs[i] = s->procs[--s->nprocs];
	memset(&s->procs[s->nprocs], 0, sizeof(s->procs[0]));
}

void sym_free(struct symbolizer *s)
{
	if (!s)
		return;
	ksyms_free(s->kernel);
	for (size_t i = 0; i < s->nelfs; i++)
		elf_syms_free(s->elfs[i]);
	free(s->elfs);
	strmap_free(&s->elf_index);
	for (size_t i = 0; i < s->nprocs; i++)
		proc_clear(&s->procs[i]);
	free(s->procs);
	free(s);
}

/* ---- kernel ------------------------------------------------------------ */

const char *sym_kernel_build_id(const struct symbolizer *s)
{
	return s->kernel_build_id;
}

int sym_load_kernel(struct symbolizer *s)
{
	struct kernel_syms *k;

	build_id_of_kernel(s->kernel_build_id, sizeof(s->kernel_build_id));
	k = ksyms_load();
	if (!k)
		return -errno;
	ksyms_free(s->kernel);
	s->kernel = k;
	return (int)ksyms_count(k);
}

int sym_kernel(struct symbolizer *s, uint64_t addr, char *buf, size_t len)
{
	const char *name = ksyms_name(s->kernel, addr);

	if (!name) {
		snprintf(buf, len, "[kernel]+0x%llx_[k]", (unsigned long long)addr);
		return 0;
	}
	snprintf(buf, len, "%s_[k]", name);
	return 1;
}

/* ---- ELF --------------------------------------------------------------- */

/*
 * The file at path (as seen from the process), one entry per key however
 * many processes map it; its symbols are read when first named.
 */
static struct elf_syms *elf_of(struct symbolizer *s, const char *path)
{
	struct elf_syms *es = elf_syms_open(path), **n;
	uint32_t idx;

	if (!es)
		return NULL;
	if (strmap_get(&s->elf_index, es->key, &idx)) {
		elf_syms_free(es);
		return s->elfs[idx];
	}
	n = realloc(s->elfs, (s->nelfs + 1) * sizeof(*n));
	if (!n) {
		elf_syms_free(es);
		return NULL;
	}
	s->elfs = n;
	s->elfs[s->nelfs] = es;
	strmap_put(&s->elf_index, es->key, (uint32_t)s->nelfs);
	s->nelfs++;
	return es;
}

/*
 * Drop the symbols of the least recently used files, all but keep, until
 * under the budget.  Only between windows (sym_trim): within one, every
 * file it names is held, or two files that take turns in one stack would
 * read each other out frame by frame.
 */
static void make_room(struct symbolizer *s, const struct elf_syms *keep)
{
	while (s->syms_heap > s->budget) {
		struct elf_syms *old = NULL;

		for (size_t i = 0; i < s->nelfs; i++) {
			struct elf_syms *es = s->elfs[i];

			if (es != keep && es->state == ELF_READ && (!old || es->last_use < old->last_use))
				old = es;
		}
		if (!old)
			return;
		s->syms_heap -= old->heap;
		elf_syms_drop(old, ELF_UNREAD);
	}
}

/* ---- processes --------------------------------------------------------- */

void sym_service_of(const char *cg, const char *comm, char *out, size_t len)
{
	const char *last = cg ? strrchr(cg, '/') : NULL, *p;

	if (cg) {
		/* the innermost systemd unit or container scope on the path */
		char copy[512], *tok, *save, *best = NULL;

		snprintf(copy, sizeof(copy), "%s", cg);
		for (tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
			if ((p = strstr(tok, "docker-")) || (p = strstr(tok, "cri-containerd-")) ||
			    (p = strstr(tok, "crio-"))) {
				const char *id = strchr(p, '-') + 1;

				if (!strncmp(p, "cri-containerd-", 15))
					id = p + 15;
				snprintf(out, len, "container:%.12s", id);
				return;
			}
			if (strlen(tok) > 8 && !strcmp(tok + strlen(tok) - 8, ".service"))
				best = tok;
		}
		if (best) {
			snprintf(out, len, "%s", best);
			return;
		}
	}
	(void)last;
	snprintf(out, len, "%s", comm && *comm ? comm : "unknown");
}

static struct proc *find_proc(struct symbolizer *s, uint32_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

static void read_cgroup(uint32_t pid, char *out, size_t len)
{
	char path[64], line[512];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');

		p = p ? strchr(p + 1, ':') : NULL;
		if (!p)
			continue;
		p[strcspn(p, "\n")] = '\0';
		/*
		 * prefer the v2 line ("0::/..."), else the cpu controller's; a
		 * hybrid host's v2 root ("0::/") says nothing over a v1 path
		 */
		if ((!strncmp(line, "0::", 3) && (strcmp(p + 1, "/") || !out[0])) ||
		    strstr(line, ":cpu,") || strstr(line, ":cpu:") || !out[0])
			snprintf(out, len, "%s", p + 1);
		if (!strncmp(line, "0::", 3) && strcmp(p + 1, "/"))
			break;
	}
	fclose(f);
}

int sym_process(struct symbolizer *s, uint32_t pid, const char *comm)
{
	char path[128], line[1024], cg[512];
	struct proc *p = find_proc(s, pid);
	size_t cap = 0;
	FILE *f;

	if (p) {
		p->generation = s->generation;
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (s->nprocs == MAX_PROCS) {
		/* full: evict the least recently sampled */
		size_t old = 0;

		for (size_t i = 1; i < s->nprocs; i++)
			if (s->procs[i].generation < s->procs[old].generation)
				old = i;
		proc_remove(s, old);
	}
	p = &s->procs[s->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->generation = s->generation;
	while (fgets(line, sizeof(line), f)) {
		struct maps_line ml;
		struct mapping *m;
		const char *f2;

		if (maps_line_parse(line, &ml) != 1)
			continue;
		if (ARRAY_GROW(p->maps, cap, p->nmaps + 1, 32))
			break;
		m = &p->maps[p->nmaps++];
		memset(m, 0, sizeof(*m));
		m->start = ml.start;
		m->end = ml.end;
		m->offset = ml.offset;
		f2 = ml.path;
		snprintf(m->module, sizeof(m->module), "%s",
			 strrchr(f2, '/') ? strrchr(f2, '/') + 1 : (*f2 ? f2 : "[anon]"));
		if (f2[0] == '/') {
			char rooted[1024];

			snprintf(rooted, sizeof(rooted), "/proc/%u/root%s", pid, f2);
			m->elf = elf_of(s, rooted);
			if (!m->elf)
				m->elf = elf_of(s, f2);
		}
	}
	fclose(f);
	if (comm)
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	else {
		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
		f = fopen(path, "r");
		if (f) {
			if (fgets(p->comm, sizeof(p->comm), f))
				p->comm[strcspn(p->comm, "\n")] = '\0';
			fclose(f);
		}
	}
	read_cgroup(pid, cg, sizeof(cg));
	snprintf(p->cgroup, sizeof(p->cgroup), "%s", cg);
	sym_service_of(cg, p->comm, p->service, sizeof(p->service));
	return 0;
}

const char *sym_cgroup(struct symbolizer *s, uint32_t pid)
{
	struct proc *p = find_proc(s, pid);

	return p ? p->cgroup : "";
}

int sym_process_refresh(struct symbolizer *s, uint32_t pid, const char *comm)
{
	struct proc *p = find_proc(s, pid);

	if (p)
		proc_remove(s, (size_t)(p - s->procs));
	return sym_process(s, pid, comm);
}

/*
 * A name for addr from p's perf map (code a JIT made), looked for the
 * first time one is needed.
 */
static const char *jit_name(struct proc *p, uint64_t addr)
{
	if (!p->pm_tried) {
		p->pm = perfmap_open(p->pid);
		p->pm_tried = 1;
	}
	return p->pm ? perfmap_lookup(p->pm, addr) : NULL;
}

int sym_user(struct symbolizer *s, uint32_t pid, uint64_t addr, char *buf, size_t len)
{
	return sym_user_where(s, pid, addr, buf, len, NULL);
}

int sym_user_where(struct symbolizer *s, uint32_t pid, uint64_t addr, char *buf, size_t len,
		   struct sym_where *w)
{
	struct proc *p = find_proc(s, pid);
	const char *jit;

	if (w)
		memset(w, 0, sizeof(*w));
	if (!p) {
		snprintf(buf, len, "%s", SYM_UNKNOWN);
		return 0;
	}
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct mapping *m = &p->maps[i];
		uint64_t file_off;

		if (addr < m->start || addr >= m->end)
			continue;
		file_off = addr - m->start + m->offset;
		if (w) {
			snprintf(w->file, sizeof(w->file), "%s", m->elf ? m->elf->path : m->module);
			if (m->elf && strncmp(m->elf->key, "ino:", 4))
				snprintf(w->build_id, sizeof(w->build_id), "%s", m->elf->key);
			w->offset = file_off;
			w->known = 1;
		}
		if (m->elf) {
			m->elf->last_use = ++s->use_clock;
			if (m->elf->state == ELF_UNREAD && elf_syms_read(m->elf)) {
				s->syms_reads++;
				s->syms_heap += m->elf->heap;
			}
		}
		if (m->elf && m->elf->state == ELF_READ) {
			const struct elf_sym *e = elf_syms_at(m->elf, file_off);

			if (e) {
				snprintf(buf, len, "%s", e->name);
				return 1;
			}
		}
		/* anonymous executable memory: what a JIT compiled, if it says */
		if (!m->elf && (jit = jit_name(p, addr))) {
			snprintf(buf, len, "%s", jit);
			return 1;
		}
		snprintf(buf, len, "%s+0x%llx", m->module, (unsigned long long)file_off);
		return 0;
	}
	/* mapped after the process was first seen: JIT code, if it says */
	if ((jit = jit_name(p, addr))) {
		snprintf(buf, len, "%s", jit);
		return 1;
	}
	/* or a library loaded since (dlopen): read its mappings again, once a window */
	if (p->reread != s->generation + 1) {
		char comm[sizeof(p->comm)];

		memcpy(comm, p->comm, sizeof(comm));
		if (sym_process_refresh(s, pid, comm) == 0 && (p = find_proc(s, pid))) {
			p->reread = s->generation + 1;
			return sym_user_where(s, pid, addr, buf, len, w);
		}
	}
	snprintf(buf, len, "%s", SYM_UNKNOWN);
	return 0;
}

const char *sym_comm(struct symbolizer *s, uint32_t pid)
{
	struct proc *p = find_proc(s, pid);

	return p ? p->comm : "";
}

const char *sym_service(struct symbolizer *s, uint32_t pid)
{
	struct proc *p = find_proc(s, pid);

	return p ? p->service : "";
}

int sym_stack_complete(struct symbolizer *s, uint32_t pid, const uint64_t *ips, int n)
{
	static const char *const roots[] = { "_start", "__libc_start_main", "__libc_start_call_main",
					     "start_thread", "clone", "clone3", "thread_start" };
	char name[256];

	if (n <= 0)
		return 0;
	sym_user(s, pid, ips[n - 1], name, sizeof(name));
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (!strcmp(name, roots[i]))
			return 1;
	return 0;
}

void sym_set_generation(struct symbolizer *s, uint64_t generation)
{
	s->generation = generation;
}

/*
 * Free the files no remembered process maps any more (mark and sweep).
 * Without this every binary ever sampled kept its symbols: a host that
 * runs builds, cron jobs or a new release every day grew without bound.
 */
static void sweep_elfs(struct symbolizer *s)
{
	size_t kept = 0, freed = 0;

	for (size_t i = 0; i < s->nelfs; i++)
		s->elfs[i]->used = 0;
	for (size_t i = 0; i < s->nprocs; i++)
		for (size_t k = 0; k < s->procs[i].nmaps; k++)
			if (s->procs[i].maps[k].elf)
				s->procs[i].maps[k].elf->used = 1;
	for (size_t i = 0; i < s->nelfs; i++) {
		if (s->elfs[i]->used) {
			s->elfs[kept++] = s->elfs[i];
		} else {
			freed += s->elfs[i]->heap;
			if (s->elfs[i]->state == ELF_READ)
				s->syms_heap -= s->elfs[i]->heap;
			elf_syms_free(s->elfs[i]);
		}
	}
	if (kept == s->nelfs)
		return;
	s->nelfs = kept;
	strmap_free(&s->elf_index);
	strmap_init(&s->elf_index);
	for (size_t i = 0; i < s->nelfs; i++)
		strmap_put(&s->elf_index, s->elfs[i]->key, (uint32_t)i);
	/*
	 * A giant's symbols (libLLVM: ~20 MB) stay in the thread's arena once
	 * freed; give them back, as a compiler comes and goes all day.
	 */
	if (freed >= (1u << 20))
		malloc_trim(0);
}

/*
 * Forget the processes that exited (exited) or were not sampled since
 * keep_since, then the files only they mapped.
 */
static void forget_procs(struct symbolizer *s, int exited, uint64_t keep_since)
{
	size_t before = s->nprocs;

	for (size_t i = 0; i < s->nprocs;) {
		if (exited ? s->procs[i].exited : s->procs[i].generation < keep_since)
			proc_remove(s, i);
		else
			i++;
	}
	if (s->nprocs != before)
		sweep_elfs(s);
}

void sym_expire(struct symbolizer *s, uint64_t keep_since)
{
	forget_procs(s, 0, keep_since);
}

void sym_process_exited(struct symbolizer *s, uint32_t pid)
{
	struct proc *p = find_proc(s, pid);

	if (p)
		p->exited = 1;
}

void sym_forget_exited(struct symbolizer *s)
{
	forget_procs(s, 1, 0);
}

void sym_cache_stats(const struct symbolizer *s, size_t *procs, size_t *files, size_t *bytes)
{
	size_t b = 0;

	for (size_t i = 0; i < s->nelfs; i++)
		b += sizeof(*s->elfs[i]) + s->elfs[i]->heap +
		     s->elfs[i]->nloads * sizeof(*s->elfs[i]->loads);
	*procs = s->nprocs;
	*files = s->nelfs;
	*bytes = b;
}

size_t sym_kernel_bytes(const struct symbolizer *s)
{
	return ksyms_bytes(s->kernel);
}

void sym_set_budget(struct symbolizer *s, size_t bytes)
{
	s->budget = bytes;
	sym_trim(s);
}

void sym_trim(struct symbolizer *s)
{
	struct elf_syms *last = NULL;

	for (size_t i = 0; i < s->nelfs; i++)
		if (s->elfs[i]->state == ELF_READ && (!last || s->elfs[i]->last_use > last->last_use))
			last = s->elfs[i];
	make_room(s, last);
}

void sym_symbol_stats(const struct symbolizer *s, size_t *bytes, size_t *files_read,
		      uint64_t *reads)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nelfs; i++)
		n += s->elfs[i]->state == ELF_READ;
	*bytes = s->syms_heap;
	*files_read = n;
	*reads = s->syms_reads;
}
