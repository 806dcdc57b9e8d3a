/*
 * symbolize.c - addresses to names; see symbolize.h.
 *
 * Everything is looked up by binary search over sorted arrays: kallsyms
 * once, each ELF's function symbols once per build id, each process's
 * executable mappings once per process.
 */
#include "probes/symbolize.h"

#include "probes/build_id.h"
#include "probes/kernel_syms.h"
#include "probes/perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/array.h"
#include "core/strmap.h"

#define MAX_PROCS 4096
#define SYM_DEFAULT_BUDGET (4u << 20)	/* etc/probe.yaml's profile.symbol_bytes */

struct esym {
	uint64_t addr, size;
	const char *name;
};

struct phdr {
	uint64_t offset, vaddr, filesz;
};

/*
 * A file some process maps.  Its symbols are read the first time an
 * address in it is named (most of what a process maps is never sampled),
 * and dropped again, least recently used first, when all files' symbols
 * would hold more than the symbolizer's budget.
 */
struct elf_syms {
	char key[160];		/* the build id, or "ino:DEV:INO:MTIME" without one */
	int used;		/* sym_expire's mark: a process still maps it */
	int state;		/* ELF_UNREAD, ELF_READ, ELF_UNREADABLE */
	uint64_t last_use;	/* symbolizer.use_clock when it last named an address */
	size_t heap;		/* bytes allocated for strings and syms */
	char path[256];		/* as the first process that mapped it names it */
	char *open_path;	/* where it was opened (through /proc/PID/root) */
	char *strings;		/* one buffer for all names */
	struct esym *syms;
	size_t nsyms;
	struct phdr *phdrs;
	size_t nphdrs;
};

enum { ELF_UNREAD, ELF_READ, ELF_UNREADABLE };

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

static void elf_syms_free(struct elf_syms *es)
{
	free(es->strings);
	free(es->syms);
	free(es->phdrs);
	free(es->open_path);
	free(es);
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

static int esym_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct esym *)a)->addr, y = ((const struct esym *)b)->addr;

	return x < y ? -1 : x > y;
}

/* The PT_LOAD headers of an open ELF into es: file offsets to addresses. */
static void read_phdrs(Elf *e, struct elf_syms *es)
{
	size_t nph = 0;

	if (elf_getphdrnum(e, &nph))
		return;
	es->phdrs = calloc(nph + 1, sizeof(*es->phdrs));
	for (size_t i = 0; es->phdrs && i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			es->phdrs[es->nphdrs].offset = ph.p_offset;
			es->phdrs[es->nphdrs].vaddr = ph.p_vaddr;
			es->phdrs[es->nphdrs].filesz = ph.p_filesz;
			es->nphdrs++;
		}
	}
}

/* Function symbols of an open ELF: sorted into *syms, names in *strings. */
static void read_symbols(Elf *e, struct esym **syms, size_t *nsyms, char **strings,
			 size_t *heap)
{
	size_t total = 0, cap = 0, strcap = 0, strlen_total = 0;
	Elf_Scn *scn = NULL;
	struct esym *tmp = NULL;
	char *str = NULL;

	/* names are copied into one buffer: offsets first, pointers after */
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			size_t nl;

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_value || !(name = elf_strptr(e, sh.sh_link, sym.st_name)) ||
			    !*name)
				continue;
			nl = strlen(name) + 1;
			if (ARRAY_GROW(tmp, cap, total + 1, 1024) ||
			    ARRAY_GROW(str, strcap, strlen_total + nl, 16384))
				break;
			memcpy(str + strlen_total, name, nl);
			tmp[total].addr = sym.st_value;
			tmp[total].size = sym.st_size;
			tmp[total].name = (const char *)(uintptr_t)strlen_total;
			strlen_total += nl;
			total++;
		}
	}
	/* held until the file is dropped: no room to spare */
	if (total && total < cap) {
		struct esym *fit = realloc(tmp, total * sizeof(*tmp));

		if (fit) {
			tmp = fit;
			cap = total;
		}
	}
	if (strlen_total && strlen_total < strcap) {
		char *fit = realloc(str, strlen_total);

		if (fit) {
			str = fit;
			strcap = strlen_total;
		}
	}
	for (size_t i = 0; i < total; i++)
		tmp[i].name = str + (uintptr_t)tmp[i].name;
	if (total)
		qsort(tmp, total, sizeof(*tmp), esym_cmp);
	*syms = tmp;
	*nsyms = total;
	*strings = str;
	*heap = strcap + cap * sizeof(*tmp);
}

/* The cache key of an open ELF: its build id, or where and when it was written. */
static void elf_key(Elf *e, const struct stat *st, char *key, size_t len)
{
	if (build_id_of_elf(e, key, len))
		snprintf(key, len, "ino:%llu:%llu:%lld", (unsigned long long)st->st_dev,
			 (unsigned long long)st->st_ino, (long long)st->st_mtime);
}

/*
 * The file at path (as seen from the process), known by its key: its
 * program headers are read now, its symbols when an address in it is
 * first named (elf_read_symbols).
 */
static struct elf_syms *elf_of(struct symbolizer *s, const char *path)
{
	char key[160];
	struct elf_syms *es, **n;
	struct stat st;
	uint32_t idx;
	Elf *e;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e) {
		close(fd);
		return NULL;
	}
	elf_key(e, &st, key, sizeof(key));
	if (strmap_get(&s->elf_index, key, &idx)) {
		elf_end(e);
		close(fd);
		return s->elfs[idx];
	}
	es = calloc(1, sizeof(*es));
	n = realloc(s->elfs, (s->nelfs + 1) * sizeof(*n));
	if (n)
		s->elfs = n;
	if (!es || !n || !(es->open_path = strdup(path))) {
		free(es);
		elf_end(e);
		close(fd);
		return NULL;
	}
	snprintf(es->key, sizeof(es->key), "%s", key);
	{
		/* the path in the process's own mount namespace, not /proc/PID/root/... */
		const char *in = path;

		if (!strncmp(in, "/proc/", 6) && (in = strstr(in + 6, "/root/")))
			in += 5;
		else
			in = path;
		snprintf(es->path, sizeof(es->path), "%s", in);
	}
	read_phdrs(e, es);
	elf_end(e);
	close(fd);
	s->elfs[s->nelfs] = es;
	strmap_put(&s->elf_index, key, (uint32_t)s->nelfs);
	s->nelfs++;
	return es;
}

/*
 * Read the symbols of path into es if it is es's file (the same key): 1
 * if read, 0 if not.
 */
static int read_symbols_at(struct elf_syms *es, const char *path)
{
	char key[160];
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), same;
	Elf *e;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !(e = elf_begin(fd, ELF_C_READ, NULL))) {
		close(fd);
		return 0;
	}
	elf_key(e, &st, key, sizeof(key));
	same = !strcmp(key, es->key);
	if (same)
		read_symbols(e, &es->syms, &es->nsyms, &es->strings, &es->heap);
	elf_end(e);
	close(fd);
	return same;
}

/* Free es's symbols (not its key or headers) and leave it in state. */
static void drop_symbols(struct elf_syms *es, int state)
{
	free(es->syms);
	free(es->strings);
	es->syms = NULL;
	es->strings = NULL;
	es->nsyms = es->heap = 0;
	es->state = state;
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
		drop_symbols(old, ELF_UNREAD);
	}
}

/*
 * Read es's symbols: from where a process mapped it, else the same file
 * in this namespace (the process is gone); separate debug info (a
 * stripped binary's full .symtab) when installed and larger.
 */
static void elf_read_symbols(struct symbolizer *s, struct elf_syms *es)
{
	char dbg[256];
	int fd;

	if (!read_symbols_at(es, es->open_path))
		read_symbols_at(es, es->path);
	if (strncmp(es->key, "ino:", 4) != 0) {
		snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", es->key,
			 es->key + 2);
		fd = open(dbg, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			Elf *e = elf_begin(fd, ELF_C_READ, NULL);

			if (e) {
				struct esym *syms;
				size_t nsyms, heap;
				char *strings;

				read_symbols(e, &syms, &nsyms, &strings, &heap);
				if (nsyms > es->nsyms) {
					free(es->syms);
					free(es->strings);
					es->syms = syms;
					es->strings = strings;
					es->nsyms = nsyms;
					es->heap = heap;
				} else {
					free(syms);
					free(strings);
				}
				elf_end(e);
			}
			close(fd);
		}
	}
	if (!es->nsyms) {
		drop_symbols(es, ELF_UNREADABLE);
		return;
	}
	es->state = ELF_READ;
	s->syms_reads++;
	s->syms_heap += es->heap;
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
		unsigned long long start, end, off;
		char perms[8], file[768] = "";
		struct mapping *m;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %767[^\n]", &start, &end, perms, &off,
			   file) < 4 || perms[2] != 'x')
			continue;
		if (ARRAY_GROW(p->maps, cap, p->nmaps + 1, 32))
			break;
		m = &p->maps[p->nmaps++];
		memset(m, 0, sizeof(*m));
		m->start = start;
		m->end = end;
		m->offset = off;
		{
			char *f2 = file;

			while (*f2 == ' ')
				f2++;
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

static const struct esym *elf_lookup(const struct elf_syms *es, uint64_t vaddr)
{
	size_t lo = 0, hi = es->nsyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (es->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct esym *e = &es->syms[lo - 1];

	if (e->size && vaddr >= e->addr + e->size)
		return NULL;
	return e;
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
		snprintf(buf, len, "[unknown]+0x%llx", (unsigned long long)addr);
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
			if (m->elf->state == ELF_UNREAD)
				elf_read_symbols(s, m->elf);
		}
		if (m->elf && m->elf->state == ELF_READ) {
			for (size_t k = 0; k < m->elf->nphdrs; k++) {
				const struct phdr *ph = &m->elf->phdrs[k];
				const struct esym *e;

				if (file_off < ph->offset || file_off >= ph->offset + ph->filesz)
					continue;
				e = elf_lookup(m->elf, file_off - ph->offset + ph->vaddr);
				if (e) {
					snprintf(buf, len, "%s", e->name);
					return 1;
				}
				break;
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
	snprintf(buf, len, "[unknown]+0x%llx", (unsigned long long)addr);
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
		     s->elfs[i]->nphdrs * sizeof(*s->elfs[i]->phdrs);
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
