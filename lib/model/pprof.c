/*
 * pprof.c - pprof export with protobuf-c; see pprof.h.
 */
#include "model/pprof.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/strmap.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Function PbFunction;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;

#define KERNEL_START 0xffff800000000000ULL

/*
 * Where mapping k (0-based) is placed: a file's 1 TiB range of its own at
 * (k + 1) TiB with file offset 0, so address - start is the offset in the
 * file every tool symbolizes by; the kernel at its own addresses.
 */
static uint64_t map_start(const struct profile *p, uint32_t k)
{
	return !strcmp(p->strings[p->maps[k].file], "[kernel.kallsyms]") ? KERNEL_START :
	       (uint64_t)(k + 1) << 40;
}

static int gzip_buf(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen)
{
	z_stream z = { 0 };
	size_t cap = len / 2 + 1024;
	uint8_t *buf = malloc(cap);
	int ret;

	if (!buf || deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	z.next_in = (uint8_t *)in;
	z.avail_in = (uInt)len;
	do {
		if (z.total_out == cap) {
			uint8_t *n = realloc(buf, cap *= 2);

			if (!n) {
				deflateEnd(&z);
				free(buf);
				return -ENOMEM;
			}
			buf = n;
		}
		z.next_out = buf + z.total_out;
		z.avail_out = (uInt)(cap - z.total_out);
		ret = deflate(&z, Z_FINISH);
	} while (ret == Z_OK || ret == Z_BUF_ERROR);
	*outlen = z.total_out;
	deflateEnd(&z);
	if (ret != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	return 0;
}

int pprof_gunzip(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen)
{
	z_stream z = { 0 };
	size_t cap = len * 4 + 1024;
	uint8_t *buf = malloc(cap);
	int ret;

	if (!buf || inflateInit2(&z, 15 + 16) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	z.next_in = (uint8_t *)in;
	z.avail_in = (uInt)len;
	for (;;) {
		if (z.total_out == cap) {
			uint8_t *n = cap > (256u << 20) ? NULL : realloc(buf, cap *= 2);

			if (!n) {
				inflateEnd(&z);
				free(buf);
				return -EINVAL;
			}
			buf = n;
		}
		z.next_out = buf + z.total_out;
		z.avail_out = (uInt)(cap - z.total_out);
		ret = inflate(&z, Z_NO_FLUSH);
		if (ret == Z_STREAM_END)
			break;
		if (ret != Z_OK && ret != Z_BUF_ERROR) {
			inflateEnd(&z);
			free(buf);
			return -EINVAL;
		}
		if (ret == Z_BUF_ERROR && z.avail_in == 0) {
			inflateEnd(&z);
			free(buf);
			return -EINVAL;
		}
	}
	*outlen = z.total_out;
	inflateEnd(&z);
	*out = buf;
	return 0;
}

/* Frame i of stack s's location in p, or NULL; its key in key (len 64). */
static const struct profile_loc *frame_loc(const struct profile *p, uint32_t s, uint32_t i,
					   char *key)
{
	const struct profile_loc *l = profile_frame_loc(p, s, i);

	/* a named frame's location carries its function: one per (address, name) */
	if (l)
		snprintf(key, 64, "%x.%llx.%x.%x", l->map, (unsigned long long)l->addr, l->named,
			 l->named ? p->stacks[s][1 + i] : 0);
	return l;
}

/* A pprof Profile message under construction: its arrays, and the indexes that dedupe it. */
struct pprof_build {
	const struct profile *p;
	char **strs;			/* the profile's strings, then the extra ones */
	uint32_t nstr;
	uint32_t sid[7];		/* the extra strings' indexes (pprof_extra) */
	PbFunction *fns, **fnp;
	size_t nfn;
	PbLocation *locs, **locp;
	PbLine *lines, **linep;
	size_t nloc;
	PbMapping *maps, **mapp;
	PbSample *samples, **samplep;
	PbLabel *labels, **labelp;
	uint64_t *locids;
	int64_t *values;
	uint32_t *fn_of;		/* string index -> function id */
	uint32_t *name_loc;		/* name -> location id (frames with no code address) */
	struct strmap addr_loc;		/* "map:addr" -> location id */
	struct strmap py_fn;		/* a Python function ("mod.fn (file.py)") -> function id */
	char **owned;			/* strings added for Python functions: names, files */
	uint32_t nowned;
	int64_t period_ns;
};

/* Strings pprof needs beyond the profile's own: sample types, units, label keys. */
static const char *const pprof_extra[7] = {
	"samples", "count", "cpu", "nanoseconds", "service", "comm", "pid"
};

static void build_free(struct pprof_build *b)
{
	strmap_free(&b->addr_loc);
	strmap_free(&b->py_fn);
	for (uint32_t i = 0; i < b->nowned; i++)
		free(b->owned[i]);
	free(b->owned);
	free(b->strs);
	free(b->fns);
	free(b->fnp);
	free(b->locs);
	free(b->locp);
	free(b->lines);
	free(b->linep);
	free(b->samples);
	free(b->samplep);
	free(b->labels);
	free(b->labelp);
	free(b->maps);
	free(b->mapp);
	free(b->locids);
	free(b->values);
	free(b->fn_of);
	free(b->name_loc);
}

/* Room for everything p can need, and the string table.  0 or -ENOMEM. */
static int build_alloc(struct pprof_build *b, const struct profile *p)
{
	uint32_t nstr = p->nstrings;
	size_t nframes = 0, nsample_locs = 0, nrows = p->nrows;

	memset(b, 0, sizeof(*b));
	b->p = p;
	strmap_init(&b->addr_loc);
	strmap_init(&b->py_fn);
	b->period_ns = p->rate_hz ? 1000000000LL / p->rate_hz : 1000000000LL / 19;
	for (uint32_t s = 0; s < p->nstacks; s++)
		nframes += p->stacks[s][0];	/* at most one location per frame of every stack */
	for (uint32_t r = 0; r < p->nrows; r++)
		nsample_locs += p->stacks[p->rows[r].stack][0];
	/* a Python frame can add two strings: its function's name and file */
	b->strs = calloc(3 * (size_t)nstr + 8, sizeof(*b->strs));
	b->owned = calloc(2 * (size_t)nstr + 1, sizeof(*b->owned));
	b->fns = calloc(nstr, sizeof(*b->fns));
	b->fnp = calloc(nstr, sizeof(*b->fnp));
	b->fn_of = calloc(nstr, sizeof(*b->fn_of));
	b->name_loc = calloc(nstr, sizeof(*b->name_loc));
	b->locs = calloc(nframes + 1, sizeof(*b->locs));
	b->locp = calloc(nframes + 1, sizeof(*b->locp));
	b->lines = calloc(nframes + 1, sizeof(*b->lines));
	b->linep = calloc(nframes + 1, sizeof(*b->linep));
	b->samples = calloc(nrows + 1, sizeof(*b->samples));
	b->samplep = calloc(nrows + 1, sizeof(*b->samplep));
	b->labels = calloc(nrows * 3 + 1, sizeof(*b->labels));
	b->labelp = calloc(nrows * 3 + 1, sizeof(*b->labelp));
	b->locids = calloc(nsample_locs + 1, sizeof(*b->locids));
	b->values = calloc(nrows * 2 + 1, sizeof(*b->values));
	b->maps = calloc(p->nmaps + 1, sizeof(*b->maps));
	b->mapp = calloc(p->nmaps + 1, sizeof(*b->mapp));
	if (!b->strs || !b->fns || !b->fnp || !b->locs || !b->locp || !b->lines || !b->linep ||
	    !b->samples || !b->samplep || !b->labels || !b->labelp || !b->locids || !b->values ||
	    !b->fn_of || !b->name_loc || !b->maps || !b->mapp || !b->owned)
		return -ENOMEM;
	for (uint32_t i = 0; i < nstr; i++)
		b->strs[i] = p->strings[i];
	/* extra strings after the profile's own; index 0 is already "" */
	b->nstr = nstr;
	for (int i = 0; i < 7; i++) {
		b->sid[i] = b->nstr;
		b->strs[b->nstr++] = (char *)pprof_extra[i];
	}
	return 0;
}

static void add_mappings(struct pprof_build *b)
{
	const struct profile *p = b->p;

	for (uint32_t k = 0; k < p->nmaps; k++) {
		PbMapping *m = &b->maps[k];

		perftools__profiles__mapping__init(m);
		m->id = k + 1;
		m->memory_start = map_start(p, k);
		m->memory_limit = m->memory_start == KERNEL_START ? UINT64_MAX :
				  m->memory_start + (1ULL << 40) - 1;
		m->file_offset = 0;
		m->filename = p->maps[k].file;
		m->build_id = p->maps[k].build_id;
		m->has_functions = 1;	/* until a location without a symbol says otherwise */
		b->mapp[k] = m;
	}
}

/* The function of frame name, made on first use.  Returns its id. */
static uint32_t function_of(struct pprof_build *b, uint32_t name)
{
	if (!b->fn_of[name]) {
		PbFunction *f = &b->fns[b->nfn];

		perftools__profiles__function__init(f);
		f->id = ++b->nfn;
		f->name = name;
		f->system_name = name;
		b->fnp[b->nfn - 1] = f;
		b->fn_of[name] = (uint32_t)b->nfn;
	}
	return b->fn_of[name];
}

/* Add a copy of s[0..len) to the string table.  Its index, or 0 on -ENOMEM. */
static uint32_t add_string(struct pprof_build *b, const char *s, size_t len)
{
	char *c = strndup(s, len);

	if (!c)
		return 0;
	b->owned[b->nowned++] = c;
	b->strs[b->nstr] = c;
	return b->nstr++;
}

/*
 * The function of Python frame name ("mod.fn (file.py:12)", its function
 * part k bytes long): one per function, named "mod.fn" with its file, as
 * pprof has them; the line goes on the location.  Returns its id, 0 on
 * -ENOMEM.
 */
static uint32_t python_function_of(struct pprof_build *b, uint32_t name, size_t k)
{
	const char *s = b->p->strings[name], *open = strstr(s, " (");
	char key[512];
	uint32_t id;
	PbFunction *f;

	snprintf(key, sizeof(key), "%.*s)", (int)k, s);
	if (strmap_get(&b->py_fn, key, &id))
		return id;
	f = &b->fns[b->nfn];
	perftools__profiles__function__init(f);
	f->id = b->nfn + 1;
	f->name = add_string(b, s, (size_t)(open - s));
	f->filename = add_string(b, open + 2, k - (size_t)(open + 2 - s));
	if (!f->name || !f->filename || strmap_put(&b->py_fn, key, (uint32_t)f->id))
		return 0;
	f->system_name = f->name;
	b->fnp[b->nfn++] = f;
	return (uint32_t)f->id;
}

/*
 * A function per frame name; a location per (mapping, address) where the
 * frame's code is known — with the function as its line when the name is
 * a symbol's, and no line when it is not, so tools symbolize the address —
 * else one location per name, as the name is all there is.  0 or -ENOMEM.
 */
static int add_locations(struct pprof_build *b)
{
	const struct profile *p = b->p;

	for (uint32_t s = 0; s < p->nstacks; s++) {
		for (uint32_t i = 0; i < p->stacks[s][0]; i++) {
			uint32_t name = p->stacks[s][1 + i], fn, id = 0;
			size_t py = profile_python_function_len(p->strings[name]);
			char key[64];
			const struct profile_loc *l = frame_loc(p, s, i, key);
			PbLocation *lc;

			fn = py ? python_function_of(b, name, py) : function_of(b, name);
			if (!fn)
				return -ENOMEM;

			if (l)
				strmap_get(&b->addr_loc, key, &id);
			else
				id = b->name_loc[name];
			if (id)
				continue;
			lc = &b->locs[b->nloc];
			id = (uint32_t)++b->nloc;
			perftools__profiles__location__init(lc);
			lc->id = id;
			if (l) {
				uint64_t base = map_start(p, l->map - 1);

				lc->mapping_id = l->map;
				lc->address = base == KERNEL_START ? l->addr : base + l->addr;
				/* tools symbolize a mapping only if it says it lacks functions */
				if (!l->named)
					b->maps[l->map - 1].has_functions = 0;
			}
			if (!l || l->named) {
				PbLine *ln = &b->lines[id - 1];

				perftools__profiles__line__init(ln);
				ln->function_id = fn;
				if (py && !l)	/* a Python frame: its line */
					ln->line = atoll(p->strings[name] + py + 1);
				b->linep[id - 1] = ln;
				lc->n_line = 1;
				lc->line = &b->linep[id - 1];
			}
			b->locp[id - 1] = lc;
			if (!l)
				b->name_loc[name] = id;
			else if (strmap_put(&b->addr_loc, key, id))
				return -ENOMEM;
		}
	}
	return 0;
}

/* A sample per row: its locations leaf first, count and CPU time, service/comm/pid labels. */
static void add_samples(struct pprof_build *b)
{
	const struct profile *p = b->p;
	size_t li = 0, lab = 0;

	for (uint32_t r = 0; r < p->nrows; r++) {
		const struct profile_row *row = &p->rows[r];
		const uint32_t *st = p->stacks[row->stack];
		PbSample *smp = &b->samples[r];

		perftools__profiles__sample__init(smp);
		smp->location_id = &b->locids[li];
		for (uint32_t i = st[0]; i-- > 0;) {	/* leaf first */
			uint32_t id = 0;
			char key[64];

			if (frame_loc(p, row->stack, i, key))
				strmap_get(&b->addr_loc, key, &id);
			else
				id = b->name_loc[st[1 + i]];
			b->locids[li++] = id;
		}
		smp->n_location_id = st[0];
		smp->value = &b->values[2 * r];
		b->values[2 * r] = (int64_t)row->count;
		b->values[2 * r + 1] = (int64_t)row->count * b->period_ns;
		smp->n_value = 2;
		smp->label = &b->labelp[lab];
		for (int k = 0; k < 3; k++) {
			PbLabel *l = &b->labels[lab];

			perftools__profiles__label__init(l);
			l->key = b->sid[4 + k];
			if (k == 0)
				l->str = row->service;
			else if (k == 1)
				l->str = row->comm;
			else if (row->pid)
				l->num = row->pid;
			else
				continue;
			b->labelp[lab++] = l;
			smp->n_label++;
		}
		b->samplep[r] = smp;
	}
}

int pprof_encode(const struct profile *p, uint8_t **out, size_t *outlen)
{
	PbProfile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	PbValueType vt[2] = { PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
			      PERFTOOLS__PROFILES__VALUE_TYPE__INIT };
	PbValueType period = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	PbValueType *vtp[2] = { &vt[0], &vt[1] };
	struct pprof_build b;
	uint8_t *raw = NULL;
	size_t rawlen;
	int ret = -ENOMEM;

	if (build_alloc(&b, p))
		goto out;
	vt[0].type = b.sid[0];
	vt[0].unit = b.sid[1];
	vt[1].type = b.sid[2];
	vt[1].unit = b.sid[3];
	period.type = b.sid[2];
	period.unit = b.sid[3];
	add_mappings(&b);
	if (add_locations(&b))
		goto out;
	add_samples(&b);
	prof.n_sample_type = 2;
	prof.sample_type = vtp;
	prof.n_sample = p->nrows;
	prof.sample = b.samplep;
	prof.n_mapping = p->nmaps;
	prof.mapping = b.mapp;
	prof.n_location = b.nloc;
	prof.location = b.locp;
	prof.n_function = b.nfn;
	prof.function = b.fnp;
	prof.n_string_table = b.nstr;
	prof.string_table = b.strs;
	prof.period_type = &period;
	prof.period = b.period_ns;
	/* unsigned: a window's times are read from Redis, and no product of them is UB */
	prof.time_nanos = (int64_t)((p->ts_ms - p->duration_ms) * 1000000ULL);
	prof.duration_nanos = (int64_t)(p->duration_ms * 1000000ULL);
	rawlen = perftools__profiles__profile__get_packed_size(&prof);
	raw = malloc(rawlen + 1);
	if (!raw)
		goto out;
	perftools__profiles__profile__pack(&prof, raw);
	ret = gzip_buf(raw, rawlen, out, outlen);
out:
	free(raw);
	build_free(&b);
	return ret;
}
