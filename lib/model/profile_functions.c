/*
 * profile_functions.c - what a profile says per function: shares,
 * their change between two profiles, the heaviest path to one; see
 * profile.h.  A Python function's lines count as one function.
 */
#include "model/profile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/strmap.h"

struct fn_acc {
	double self, own, total;
	uint64_t last_row;	/* to count a function once per sample row */
};

size_t profile_python_function_len(const char *frame)
{
	size_t n = strlen(frame), i;
	const char *open;

	/* "mod.fn (file.py:12)": digits, then ':' before the final ')' */
	if (n < 6 || frame[n - 1] != ')')
		return 0;
	for (i = n - 1; i > 0 && frame[i - 1] >= '0' && frame[i - 1] <= '9'; i--)
		;
	if (i == n - 1 || i < 2 || frame[i - 1] != ':')
		return 0;
	open = strstr(frame, " (");
	return open && open + 2 < frame + i - 1 ? i - 1 : 0;
}

/* 1 if frame is function fn: the same name, or a line of Python function fn. */
static int frame_is_function(const char *frame, const char *fn)
{
	size_t k;

	if (!strcmp(frame, fn))
		return 1;
	k = profile_python_function_len(frame);
	return k && !strncmp(frame, fn, k) && fn[k] == ')' && fn[k + 1] == '\0';
}

size_t profile_functions(const struct profile *p, struct profile_func **out)
{
	/* a function per string, and at most one more per string (a Python line's) */
	struct fn_acc *acc = calloc(2 * (size_t)p->nstrings + 1, sizeof(*acc));
	uint32_t *fn_of = calloc(p->nstrings + 1, sizeof(*fn_of));
	char **knames = calloc(p->nstrings + 1, sizeof(*knames));
	struct profile_func *f = NULL;
	struct strmap keys;
	size_t n = 0, key_bytes = 0, nkeys = 0;
	char *tail;

	*out = NULL;
	strmap_init(&keys);
	if (!acc || !fn_of || !knames || !p->total)
		goto out;
	/*
	 * A function is a frame name, except that a Python function's lines
	 * ("mod.fn (file.py:12)", "mod.fn (file.py:14)") are one function,
	 * "mod.fn (file.py)", numbered after the strings (knames).
	 */
	for (uint32_t i = 0; i < p->nstrings; i++) {
		size_t k = profile_python_function_len(p->strings[i]);
		char key[512];
		uint32_t id;

		fn_of[i] = i;
		if (!k || k + 2 > sizeof(key))
			continue;
		memcpy(key, p->strings[i], k);
		memcpy(key + k, ")", 2);
		if (!strmap_get(&keys, key, &id)) {
			id = (uint32_t)(p->nstrings + nkeys);
			knames[nkeys] = strdup(key);
			if (!knames[nkeys++] || strmap_put(&keys, key, id))
				goto out;
			key_bytes += k + 2;
		}
		fn_of[i] = id;
	}
	for (uint32_t r = 0; r < p->nrows; r++) {
		const uint32_t *st = p->stacks[p->rows[r].stack];
		double c = (double)p->rows[r].count;
		uint32_t inner_python = UINT32_MAX, leaf;

		for (uint32_t i = 0; i < st[0]; i++) {
			struct fn_acc *a = &acc[fn_of[st[1 + i]]];

			if (a->last_row != r + 1) {
				a->total += c;
				a->last_row = r + 1;
			}
			if (fn_of[st[1 + i]] >= p->nstrings)
				inner_python = fn_of[st[1 + i]];
		}
		if (!st[0])
			continue;
		leaf = fn_of[st[st[0]]];
		acc[leaf].self += c;
		acc[leaf].own += c;
		/*
		 * a Python function's own time is also what the interpreter did
		 * for it: the samples whose innermost Python frame it is
		 */
		if (inner_python != UINT32_MAX && inner_python != leaf)
			acc[inner_python].own += c;
	}
	f = malloc((p->nstrings + nkeys + 1) * sizeof(*f) + key_bytes + 1);
	if (!f)
		goto out;
	tail = (char *)(f + p->nstrings + nkeys + 1);
	for (uint32_t i = 0; i < p->nstrings + nkeys; i++) {
		if (!acc[i].total)
			continue;
		f[n].name = i < p->nstrings ? p->strings[i] : tail;
		if (i >= p->nstrings) {
			strcpy(tail, knames[i - p->nstrings]);
			tail += strlen(tail) + 1;
		}
		f[n].self = acc[i].self / (double)p->total;
		f[n].own = acc[i].own / (double)p->total;
		f[n].total = acc[i].total / (double)p->total;
		n++;
	}
	for (size_t i = 1; i < n; i++) {
		struct profile_func t = f[i];
		size_t j = i;

		while (j > 0 && f[j - 1].total < t.total) {
			f[j] = f[j - 1];
			j--;
		}
		f[j] = t;
	}
out:
	strmap_free(&keys);
	for (size_t i = 0; i < nkeys; i++)
		free(knames[i]);
	free(knames);
	free(acc);
	free(fn_of);
	*out = f;
	return f ? n : 0;
}

static int delta_cmp(const void *a, const void *b)
{
	const struct profile_delta *x = a, *y = b;
	double dx = fabs(x->target - x->base), dy = fabs(y->target - y->base);

	return dx < dy ? 1 : dx > dy ? -1 : strcmp(x->name, y->name);
}

size_t profile_diff(const struct profile *base, const struct profile *target,
		    struct profile_delta **out)
{
	struct profile_func *bf, *tf;
	size_t nb = profile_functions(base, &bf), nt = profile_functions(target, &tf), n = 0;
	size_t bytes = 1;
	struct profile_delta *d;
	struct strmap idx;
	char *tail;

	/* names are copied after the deltas: a Python function's lives in bf or tf */
	for (size_t i = 0; i < nb; i++)
		bytes += strlen(bf[i].name) + 1;
	for (size_t i = 0; i < nt; i++)
		bytes += strlen(tf[i].name) + 1;
	d = calloc(1, (nb + nt + 1) * sizeof(*d) + bytes);
	tail = (char *)(d + nb + nt + 1);

	*out = d;
	if (!d) {
		free(bf);
		free(tf);
		return 0;
	}
	strmap_init(&idx);
	for (size_t i = 0; i < nb; i++) {
		d[n] = (struct profile_delta){ .name = bf[i].name, .base = bf[i].total,
					       .self_base = bf[i].own };
		strmap_put(&idx, bf[i].name, (uint32_t)n++);
	}
	for (size_t i = 0; i < nt; i++) {
		uint32_t k;

		if (strmap_get(&idx, tf[i].name, &k)) {
			d[k].target = tf[i].total;
			d[k].self_target = tf[i].own;
			d[k].name = tf[i].name;	/* keep a pointer into target */
		} else {
			d[n++] = (struct profile_delta){ .name = tf[i].name, .target = tf[i].total,
							 .self_target = tf[i].own };
		}
	}
	strmap_free(&idx);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(d[i].name) + 1;

		memcpy(tail, d[i].name, len);
		d[i].name = tail;
		tail += len;
	}
	qsort(d, n, sizeof(*d), delta_cmp);
	free(bf);
	free(tf);
	return n;
}

int profile_hot_path(const struct profile *p, const char *fn, char *out, size_t len)
{
	uint64_t *n = calloc((size_t)p->nstacks + 1, sizeof(*n)), best_n = 0;
	uint32_t name, best = UINT32_MAX, cut = 0;
	int best_leaf = 0;
	size_t off = 0;

	if (len)
		out[0] = '\0';
	if (!n)
		return -ENOMEM;
	if (!strmap_get(&p->string_index, fn, &name))
		name = UINT32_MAX;	/* a Python function: any of its lines */
	for (uint32_t r = 0; r < p->nrows; r++)
		n[p->rows[r].stack] += p->rows[r].count;	/* a stack's samples over its rows */
	for (uint32_t s = 0; s < p->nstacks; s++) {
		const uint32_t *st = p->stacks[s];
		uint32_t at = 0;
		int leaf;

		for (uint32_t i = 0; i < st[0] && !at; i++)
			if (st[1 + i] == name ||
			    (name == UINT32_MAX && frame_is_function(p->strings[st[1 + i]], fn)))
				at = i + 1;
		if (!at || !n[s])
			continue;
		leaf = at == st[0];
		/* a Python function "ends" a stack when no Python frame is under it */
		if (name == UINT32_MAX) {
			leaf = 1;
			for (uint32_t i = at; i < st[0]; i++)
				if (profile_python_function_len(p->strings[st[1 + i]]))
					leaf = 0;
		}
		/* a stack that ends in fn beats one that passes through it */
		if (leaf > best_leaf || (leaf == best_leaf && n[s] > best_n)) {
			best = s;
			best_n = n[s];
			best_leaf = leaf;
			cut = at;
		}
	}
	free(n);
	if (best == UINT32_MAX)
		return -ENOENT;
	for (uint32_t i = 0; i < cut && off < len; i++)
		off += (size_t)snprintf(out + off, len - off, "%s%s", i ? ";" : "",
					p->strings[p->stacks[best][1 + i]]);
	return 0;
}
