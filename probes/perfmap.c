/*
 * perfmap.c - perf map files of JIT runtimes; see perfmap.h.
 */
#include "probes/perfmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/array.h"
#include "core/timeutil.h"

#define MAX_FILE (64u << 20)	/* a runtime's map beyond this is not read further */
#define OVERLAP_SCAN 16		/* earlier entries looked at for one that covers addr */

struct pm_entry {
	uint64_t start, size;
	uint32_t line;		/* later lines win over earlier ones */
	char *name;
};

struct perfmap {
	char path[300];
	struct pm_entry *e;
	size_t n;
	off_t size_read;	/* file size when last read */
	uint64_t read_ns;	/* mono time of the last read */
};

static int entry_cmp(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static void clear(struct perfmap *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].name);
	free(m->e);
	m->e = NULL;
	m->n = 0;
}

/* One "START SIZE name" line (no newline, n bytes) into *e; -1 if it is not one. */
static int parse_line(const char *p, size_t n, struct pm_entry *e)
{
	char num[2][24];
	const char *end = p + n, *q = p;

	for (int k = 0; k < 2; k++) {
		size_t len = 0;
		char *stop;

		while (q < end && *q == ' ')
			q++;
		if (q + 2 <= end && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
			q += 2;
		while (q < end && *q != ' ' && len < sizeof(num[k]) - 1)
			num[k][len++] = *q++;
		num[k][len] = '\0';
		if (!len || (q < end && *q != ' '))
			return -1;
		errno = 0;
		(k ? &e->size : &e->start)[0] = strtoull(num[k], &stop, 16);
		if (*stop || errno)
			return -1;
	}
	while (q < end && *q == ' ')
		q++;
	if (q == end || !e->size || e->start + e->size < e->start)
		return -1;
	e->name = strndup(q, (size_t)(end - q));
	return e->name ? 0 : -1;
}

int perfmap_parse(const char *text, size_t len, struct perfmap **out, size_t *bad)
{
	struct perfmap *m = calloc(1, sizeof(*m));
	size_t cap = 0;
	uint32_t line = 0;

	*bad = 0;
	*out = NULL;
	if (!m)
		return -ENOMEM;
	for (const char *p = text, *end = text + len; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct pm_entry e = { .line = line };

		if (n && parse_line(p, n, &e) == 0) {
			if (ARRAY_GROW(m->e, cap, m->n + 1, 256)) {
				free(e.name);
				perfmap_free(m);
				return -ENOMEM;
			}
			m->e[m->n++] = e;
		} else if (n) {
			(*bad)++;
		}
		p += n + 1;
	}
	qsort(m->e, m->n, sizeof(*m->e), entry_cmp);
	*out = m;
	return (int)(m->n > 0x7fffffff ? 0x7fffffff : m->n);
}

/* Read m->path again (whole); keeps the old entries when it cannot. */
static void reload(struct perfmap *m)
{
	struct perfmap *fresh;
	struct stat st;
	char *buf;
	size_t bad, got;
	FILE *f = fopen(m->path, "r");

	m->read_ns = time_mono_ns();
	if (!f)
		return;
	if (fstat(fileno(f), &st) || st.st_size <= 0 || (size_t)st.st_size > MAX_FILE ||
	    !(buf = malloc((size_t)st.st_size))) {
		fclose(f);
		return;
	}
	got = fread(buf, 1, (size_t)st.st_size, f);
	fclose(f);
	if (perfmap_parse(buf, got, &fresh, &bad) >= 0) {
		clear(m);
		m->e = fresh->e;
		m->n = fresh->n;
		m->size_read = st.st_size;
		free(fresh);
	}
	free(buf);
}

/* The pid of pid in its own namespace (the last NSpid), or pid. */
static uint32_t ns_pid(uint32_t pid)
{
	char path[64], line[256];
	uint32_t ns = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "r");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "NSpid:", 6)) {
			char *p = line + 6, *tok, *save;

			for (tok = strtok_r(p, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n",
										  &save))
				ns = (uint32_t)strtoul(tok, NULL, 10);
			break;
		}
	fclose(f);
	return ns ? ns : pid;
}

struct perfmap *perfmap_open(uint32_t pid)
{
	struct perfmap *m = calloc(1, sizeof(*m));
	struct stat st;

	if (!m)
		return NULL;
	snprintf(m->path, sizeof(m->path), "/proc/%u/root/tmp/perf-%u.map", pid, ns_pid(pid));
	if (stat(m->path, &st)) {
		free(m);
		return NULL;
	}
	reload(m);
	return m;
}

static const char *find(const struct perfmap *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;
	const struct pm_entry *best = NULL;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->e[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: first entry starting after addr; earlier ones may cover it */
	for (size_t i = lo, k = 0; i > 0 && k < OVERLAP_SCAN; i--, k++) {
		const struct pm_entry *e = &m->e[i - 1];

		if (addr < e->start + e->size && (!best || e->line > best->line))
			best = e;
	}
	return best ? best->name : NULL;
}

const char *perfmap_lookup(struct perfmap *m, uint64_t addr)
{
	const char *name = find(m, addr);
	struct stat st;

	if (name || time_mono_ns() - m->read_ns < NSEC_PER_SEC)
		return name;
	if (stat(m->path, &st) || st.st_size == m->size_read) {
		m->read_ns = time_mono_ns();
		return NULL;
	}
	reload(m);
	return find(m, addr);
}

void perfmap_free(struct perfmap *m)
{
	if (!m)
		return;
	clear(m);
	free(m);
}
