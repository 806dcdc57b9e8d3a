/*
 * profile.c - profile windows: interning, rows, merges, scopes and views;
 * the wire form is profile_codec.c's.  See profile.h.
 */
#include "model/profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/strbuf.h"
#include "model/profile_internal.h"


int profile_init(struct profile *p, const char *host)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->host, sizeof(p->host), "%s", host ? host : "");
	strmap_init(&p->string_index);
	strmap_init(&p->stack_index);
	strmap_init(&p->row_index);
	return profile_intern(p, "") == 0 ? 0 : -ENOMEM;
}

void profile_free(struct profile *p)
{
	for (uint32_t i = 0; i < p->nstrings; i++)
		free(p->strings[i]);
	free(p->strings);
	for (uint32_t i = 0; i < p->nstacks; i++)
		free(p->stacks[i]);
	free(p->stacks);
	/* locs covers the stacks up to cap_locs: later ones never had locations */
	for (uint32_t i = 0; i < p->nstacks && i < p->cap_locs; i++)
		free(p->locs[i]);
	free(p->locs);
	free(p->maps);
	free(p->rows);
	strmap_free(&p->string_index);
	strmap_free(&p->stack_index);
	strmap_free(&p->row_index);
	memset(p, 0, sizeof(*p));
}

uint32_t profile_intern(struct profile *p, const char *s)
{
	uint32_t idx;

	if (strmap_get(&p->string_index, s, &idx))
		return idx;
	if (ARRAY_GROW(p->strings, p->cap_strings, p->nstrings + 1, 256))
		return UINT32_MAX;
	p->strings[p->nstrings] = strdup(s);
	if (!p->strings[p->nstrings] || strmap_put(&p->string_index, s, p->nstrings))
		return UINT32_MAX;
	return p->nstrings++;
}

uint32_t profile_intern_stack(struct profile *p, const uint32_t *idx, uint32_t n)
{
	struct strbuf key = STRBUF_INIT;
	uint32_t found;

	for (uint32_t i = 0; i < n; i++)
		strbuf_addf(&key, "%x.", idx[i]);
	if (strmap_get(&p->stack_index, strbuf_str(&key), &found)) {
		strbuf_release(&key);
		return found;
	}
	if (ARRAY_GROW(p->stacks, p->cap_stacks, p->nstacks + 1, 256))
		goto nomem;
	p->stacks[p->nstacks] = malloc((n + 1) * sizeof(uint32_t));
	if (!p->stacks[p->nstacks])
		goto nomem;
	p->stacks[p->nstacks][0] = n;
	memcpy(p->stacks[p->nstacks] + 1, idx, n * sizeof(uint32_t));
	if (strmap_put(&p->stack_index, strbuf_str(&key), p->nstacks))
		goto nomem;
	strbuf_release(&key);
	return p->nstacks++;
nomem:
	strbuf_release(&key);
	return UINT32_MAX;
}

/* 1 + the index of the mapping (file, build_id), added if new; 0 on -ENOMEM. */
uint32_t profile_intern_map(struct profile *p, uint32_t file, uint32_t build_id)
{
	for (uint32_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].file == file && p->maps[i].build_id == build_id)
			return i + 1;
	if (ARRAY_GROW(p->maps, p->cap_maps, p->nmaps + 1, 16))
		return 0;
	p->maps[p->nmaps] = (struct profile_map){ file, build_id };
	return ++p->nmaps;
}

int profile_set_locs(struct profile *p, uint32_t st, const struct profile_loc *loc, uint32_t n)
{
	if (st >= p->cap_locs) {
		uint32_t cap = p->cap_stacks > st ? p->cap_stacks : st + 1;
		struct profile_loc **l = realloc(p->locs, cap * sizeof(*l));

		if (!l)
			return -ENOMEM;
		memset(l + p->cap_locs, 0, (cap - p->cap_locs) * sizeof(*l));
		p->locs = l;
		p->cap_locs = cap;
	}
	if (p->locs[st] || !n)
		return 0;
	p->locs[st] = malloc(n * sizeof(*loc));
	if (!p->locs[st])
		return -ENOMEM;
	memcpy(p->locs[st], loc, n * sizeof(*loc));
	return 0;
}

const struct profile_loc *profile_frame_loc(const struct profile *p, uint32_t st, uint32_t i)
{
	return p->locs && st < p->cap_locs && p->locs[st] && p->locs[st][i].map &&
	       p->locs[st][i].map <= p->nmaps ? &p->locs[st][i] : NULL;
}

/* The row index's key of a row: every field but its count. */
static void row_key(const struct profile_row *r, char *key, size_t len)
{
	snprintf(key, len, "%x.%x.%x.%x.%x", r->service, r->comm, r->pid, r->stack, r->cgroup);
}

static int add_row(struct profile *p, uint32_t service, uint32_t comm, uint32_t pid,
		   uint32_t stack, uint64_t count, uint32_t cgroup)
{
	struct profile_row row = { service, comm, pid, stack, count, cgroup };
	char key[64];
	uint32_t idx;

	row_key(&row, key, sizeof(key));
	if (strmap_get(&p->row_index, key, &idx)) {
		p->rows[idx].count += count;
		p->total += count;
		return 0;
	}
	if (ARRAY_GROW(p->rows, p->cap_rows, p->nrows + 1, 256))
		return -ENOMEM;
	p->rows[p->nrows] = row;
	if (strmap_put(&p->row_index, key, p->nrows))
		return -ENOMEM;
	p->nrows++;
	p->total += count;
	return 0;
}

int profile_add_row(struct profile *p, const struct profile_row *r)
{
	return add_row(p, r->service, r->comm, r->pid, r->stack, r->count, r->cgroup);
}

int profile_add(struct profile *p, const char *service, const char *comm, uint32_t pid,
		const char *const *frames, uint32_t n, uint64_t count)
{
	return profile_add_at(p, service, comm, pid, frames, NULL, n, count);
}

int profile_add_at(struct profile *p, const char *service, const char *comm, uint32_t pid,
		   const char *const *frames, const struct profile_where *where, uint32_t n,
		   uint64_t count)
{
	struct profile_origin o = { service, comm, NULL, pid };

	return profile_add_in(p, &o, frames, where, n, count);
}

int profile_add_in(struct profile *p, const struct profile_origin *o, const char *const *frames,
		   const struct profile_where *where, uint32_t n, uint64_t count)
{
	uint32_t idx[PROFILE_MAX_DEPTH], st, sv, cm, cg;

	if (n > PROFILE_MAX_DEPTH)
		n = PROFILE_MAX_DEPTH;
	for (uint32_t i = 0; i < n; i++)
		if ((idx[i] = profile_intern(p, frames[i])) == UINT32_MAX)
			return -ENOMEM;
	sv = profile_intern(p, o->service ? o->service : "");
	cm = profile_intern(p, o->comm ? o->comm : "");
	cg = profile_intern(p, o->cgroup ? o->cgroup : "");
	st = profile_intern_stack(p, idx, n);
	if (sv == UINT32_MAX || cm == UINT32_MAX || cg == UINT32_MAX || st == UINT32_MAX)
		return -ENOMEM;
	if (where && !(st < p->cap_locs && p->locs[st])) {
		static __thread struct profile_loc loc[PROFILE_MAX_DEPTH];
		int any = 0;

		for (uint32_t i = 0; i < n; i++) {
			uint32_t f, b;

			memset(&loc[i], 0, sizeof(loc[i]));
			if (!where[i].file)
				continue;
			f = profile_intern(p, where[i].file);
			b = profile_intern(p, where[i].build_id ? where[i].build_id : "");
			if (f == UINT32_MAX || b == UINT32_MAX || !(loc[i].map = profile_intern_map(p, f, b)))
				return -ENOMEM;
			loc[i].addr = where[i].addr;
			loc[i].named = where[i].named ? 1 : 0;
			any = 1;
		}
		if (any && profile_set_locs(p, st, loc, n))
			return -ENOMEM;
	}
	return add_row(p, sv, cm, o->pid, st, count, cg);
}

int profile_cgroup_in(const char *cg, const char *tree)
{
	size_t n = strlen(tree);

	while (n > 1 && tree[n - 1] == '/')
		n--;	/* "/a/" is "/a" */
	if (!cg[0] || strncmp(cg, tree, n))
		return 0;
	return !cg[n] || cg[n] == '/' || (n == 1 && tree[0] == '/');
}

int profile_row_in(const struct profile *p, const struct profile_row *r,
		   const struct profile_scope *s)
{
	if (!s)
		return 1;
	if (s->service) {
		const char *sv = p->strings[r->service];
		size_t n = strlen(s->service);

		if (strcmp(sv, s->service) && !(!strncmp(sv, s->service, n) &&
						 !strcmp(sv + n, ".service")))
			return 0;
	}
	if (s->cgroup && !profile_cgroup_in(p->strings[r->cgroup], s->cgroup))
		return 0;
	if (s->root) {
		const uint32_t *st = p->stacks[r->stack];

		if (!st[0] || strncmp(p->strings[st[1]], s->root, strlen(s->root)))
			return 0;
	}
	return 1;
}

/* Frame i of stack st of p as a profile_where into w (file NULL: none). */
static void where_of(const struct profile *p, uint32_t st, uint32_t i, struct profile_where *w)
{
	const struct profile_loc *l = profile_frame_loc(p, st, i);

	memset(w, 0, sizeof(*w));
	if (!l)
		return;
	w->file = p->strings[p->maps[l->map - 1].file];
	w->build_id = p->strings[p->maps[l->map - 1].build_id];
	w->addr = l->addr;
	w->named = (int)l->named;
}

int profile_import_row(struct profile *dst, const struct profile *src,
		       const struct profile_row *row, struct profile_row *out)
{
	const char *frames[PROFILE_MAX_DEPTH];
	static __thread struct profile_where where[PROFILE_MAX_DEPTH];
	static __thread struct profile_loc loc[PROFILE_MAX_DEPTH];
	const uint32_t *st = src->stacks[row->stack];
	uint32_t idx[PROFILE_MAX_DEPTH], n = st[0] < PROFILE_MAX_DEPTH ? st[0] : PROFILE_MAX_DEPTH;
	int any = 0;

	for (uint32_t i = 0; i < n; i++) {
		frames[i] = src->strings[st[1 + i]];
		where_of(src, row->stack, i, &where[i]);
		if ((idx[i] = profile_intern(dst, frames[i])) == UINT32_MAX)
			return -ENOMEM;
	}
	*out = *row;
	out->service = profile_intern(dst, src->strings[row->service]);
	out->comm = profile_intern(dst, src->strings[row->comm]);
	out->cgroup = profile_intern(dst, src->strings[row->cgroup]);
	out->stack = profile_intern_stack(dst, idx, n);
	if (out->service == UINT32_MAX || out->comm == UINT32_MAX || out->cgroup == UINT32_MAX ||
	    out->stack == UINT32_MAX)
		return -ENOMEM;
	/* a stack's location is the first one seen of it, as profile_add_in keeps */
	if (out->stack < dst->cap_locs && dst->locs[out->stack])
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t f, b;

		memset(&loc[i], 0, sizeof(loc[i]));
		if (!where[i].file)
			continue;
		f = profile_intern(dst, where[i].file);
		b = profile_intern(dst, where[i].build_id ? where[i].build_id : "");
		if (f == UINT32_MAX || b == UINT32_MAX || !(loc[i].map = profile_intern_map(dst, f, b)))
			return -ENOMEM;
		loc[i].addr = where[i].addr;
		loc[i].named = (uint32_t)where[i].named;
		any = 1;
	}
	return any ? profile_set_locs(dst, out->stack, loc, n) : 0;
}

int profile_merge(struct profile *dst, const struct profile *src,
		  const struct profile_scope *scope)
{
	for (uint32_t r = 0; r < src->nrows; r++) {
		struct profile_row row;
		int ret;

		if (!profile_row_in(src, &src->rows[r], scope))
			continue;
		ret = profile_import_row(dst, src, &src->rows[r], &row);
		row.pid = 0;	/* a merge is of many processes' windows */
		if (!ret)
			ret = profile_add_row(dst, &row);
		if (ret)
			return ret;
	}
	if (!dst->rate_hz)
		dst->rate_hz = src->rate_hz;
	dst->duration_ms += src->duration_ms;
	if (src->ts_ms > dst->ts_ms)
		dst->ts_ms = src->ts_ms;
	return 0;
}

/* ---- views ------------------------------------------------------------- */

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void profile_write_folded(const struct profile *p, FILE *out)
{
	char **lines = calloc(p->nrows + 1, sizeof(*lines));
	struct strbuf sb = STRBUF_INIT;
	uint32_t n = 0;

	if (!lines)
		return;
	for (uint32_t r = 0; r < p->nrows; r++) {
		const struct profile_row *row = &p->rows[r];
		const uint32_t *st = p->stacks[row->stack];

		strbuf_reset(&sb);
		strbuf_adds(&sb, p->strings[row->comm][0] ? p->strings[row->comm] : "[unknown]");
		for (uint32_t i = 0; i < st[0]; i++) {
			strbuf_adds(&sb, ";");
			strbuf_adds(&sb, p->strings[st[1 + i]]);
		}
		strbuf_addf(&sb, " %llu", (unsigned long long)row->count);
		lines[n++] = strdup(strbuf_str(&sb));
	}
	qsort(lines, n, sizeof(*lines), line_cmp);
	for (uint32_t i = 0; i < n; i++) {
		if (lines[i])
			fprintf(out, "%s\n", lines[i]);
		free(lines[i]);
	}
	free(lines);
	strbuf_release(&sb);
}

static int row_count_cmp(const void *a, const void *b)
{
	const struct profile_row *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

int profile_truncate(struct profile *p, uint32_t n)
{
	uint64_t other = 0;
	uint32_t oth, st, sv;
	struct profile fresh;
	int ret;

	if (p->nrows <= n)
		return 0;
	qsort(p->rows, p->nrows, sizeof(*p->rows), row_count_cmp);
	for (uint32_t i = n; i < p->nrows; i++)
		other += p->rows[i].count;
	p->total -= other;
	p->nrows = n;
	/* the row index is stale after sorting: rebuild */
	strmap_free(&p->row_index);
	strmap_init(&p->row_index);
	for (uint32_t i = 0; i < p->nrows; i++) {
		char key[64];

		row_key(&p->rows[i], key, sizeof(key));
		if (strmap_put(&p->row_index, key, i))
			return -ENOMEM;
	}
	oth = profile_intern(p, "[other]");
	sv = profile_intern(p, "");
	if (oth == UINT32_MAX || sv == UINT32_MAX || (st = profile_intern_stack(p, &oth, 1)) == UINT32_MAX)
		return -ENOMEM;
	ret = add_row(p, sv, sv, 0, st, other, sv);
	if (ret)
		return ret;
	/*
	 * The dropped rows' stacks, names and mappings go as well: the kept
	 * rows are merged into a fresh profile, which interns only what they
	 * name.  Without this an hour's profile on a busy host kept every
	 * stack of the hour (1.5 MB) for its 500 rows.
	 */
	if (profile_init(&fresh, p->host))
		return -ENOMEM;
	ret = profile_merge(&fresh, p, NULL);
	if (ret) {
		profile_free(&fresh);
		return ret;
	}
	fresh.ts_ms = p->ts_ms;
	fresh.duration_ms = p->duration_ms;
	fresh.rate_hz = p->rate_hz;
	profile_free(p);
	*p = fresh;
	return 0;
}
