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

int pprof_encode(const struct profile *p, uint8_t **out, size_t *outlen)
{
	PbProfile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	PbValueType vt[2] = { PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
			      PERFTOOLS__PROFILES__VALUE_TYPE__INIT };
	PbValueType period = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	PbValueType *vtp[2] = { &vt[0], &vt[1] };
	uint32_t nstr = p->nstrings, extra = 0;
	size_t nloc_total = 0, nfn = 0, nloc = 0;
	char **strs = calloc(nstr + 8, sizeof(*strs));
	PbFunction *fns = calloc(nstr, sizeof(*fns));
	PbFunction **fnp = calloc(nstr, sizeof(*fnp));
	PbSample *samples = calloc(p->nrows + 1, sizeof(*samples));
	PbSample **samplep = calloc(p->nrows + 1, sizeof(*samplep));
	PbLabel *labels = calloc((size_t)p->nrows * 3 + 1, sizeof(*labels));
	PbLabel **labelp = calloc((size_t)p->nrows * 3 + 1, sizeof(*labelp));
	PbMapping *maps = calloc(p->nmaps + 1, sizeof(*maps));
	PbMapping **mapp = calloc(p->nmaps + 1, sizeof(*mapp));
	PbLocation *locs = NULL, **locp = NULL;
	PbLine *lines = NULL, **linep = NULL;
	uint64_t *locids = NULL;
	int64_t *values = calloc((size_t)p->nrows * 2 + 1, sizeof(*values));
	uint32_t *fn_of = calloc(nstr, sizeof(*fn_of));	/* string index -> function id */
	uint32_t *name_loc = calloc(nstr, sizeof(*name_loc));	/* name -> location id */
	struct strmap addr_loc;
	uint8_t *raw = NULL;
	size_t rawlen;
	int ret = -ENOMEM;
	int64_t period_ns = p->rate_hz ? 1000000000LL / p->rate_hz : 1000000000LL / 19;

	strmap_init(&addr_loc);
	for (uint32_t s = 0; s < p->nstacks; s++)
		nloc_total += p->stacks[s][0];
	/* at most one location per frame of every stack */
	locs = calloc(nloc_total + 1, sizeof(*locs));
	locp = calloc(nloc_total + 1, sizeof(*locp));
	lines = calloc(nloc_total + 1, sizeof(*lines));
	linep = calloc(nloc_total + 1, sizeof(*linep));
	{
		size_t nsample_locs = 0;

		for (uint32_t r = 0; r < p->nrows; r++)
			nsample_locs += p->stacks[p->rows[r].stack][0];
		locids = calloc(nsample_locs + 1, sizeof(*locids));
	}
	if (!strs || !fns || !fnp || !locs || !locp || !lines || !linep || !samples || !samplep ||
	    !labels || !labelp || !locids || !values || !fn_of || !name_loc || !maps || !mapp)
		goto out;
	for (uint32_t i = 0; i < nstr; i++)
		strs[i] = p->strings[i];
	/* extra strings after the profile's own; index 0 is already "" */
	const char *add[] = { "samples", "count", "cpu", "nanoseconds", "service", "comm", "pid" };
	uint32_t sid[7];

	for (int i = 0; i < 7; i++) {
		sid[i] = nstr + extra;
		strs[nstr + extra++] = (char *)add[i];
	}
	vt[0].type = sid[0];
	vt[0].unit = sid[1];
	vt[1].type = sid[2];
	vt[1].unit = sid[3];
	period.type = sid[2];
	period.unit = sid[3];
	for (uint32_t k = 0; k < p->nmaps; k++) {
		PbMapping *m = &maps[k];

		perftools__profiles__mapping__init(m);
		m->id = k + 1;
		m->memory_start = map_start(p, k);
		m->memory_limit = m->memory_start == KERNEL_START ? UINT64_MAX :
				  m->memory_start + (1ULL << 40) - 1;
		m->file_offset = 0;
		m->filename = p->maps[k].file;
		m->build_id = p->maps[k].build_id;
		m->has_functions = 1;	/* until a location without a symbol says otherwise */
		mapp[k] = m;
	}
	/*
	 * A function per frame name; a location per (mapping, address) where
	 * the frame's code is known — with the function as its line when the
	 * name is a symbol's, and no line when it is not, so tools symbolize
	 * the address — else one location per name, as the name is all there is.
	 */
	for (uint32_t s = 0; s < p->nstacks; s++) {
		for (uint32_t i = 0; i < p->stacks[s][0]; i++) {
			uint32_t name = p->stacks[s][1 + i];
			char key[64];
			const struct profile_loc *l = frame_loc(p, s, i, key);
			uint32_t id = 0;

			if (!fn_of[name]) {
				fn_of[name] = (uint32_t)++nfn;
				perftools__profiles__function__init(&fns[nfn - 1]);
				fns[nfn - 1].id = nfn;
				fns[nfn - 1].name = name;
				fns[nfn - 1].system_name = name;
				fnp[nfn - 1] = &fns[nfn - 1];
			}
			if (l)
				strmap_get(&addr_loc, key, &id);
			else
				id = name_loc[name];
			if (!id) {
				PbLocation *lc = &locs[nloc];

				id = (uint32_t)++nloc;
				perftools__profiles__location__init(lc);
				lc->id = id;
				if (l) {
					uint64_t base = map_start(p, l->map - 1);

					lc->mapping_id = l->map;
					lc->address = base == KERNEL_START ? l->addr : base + l->addr;
					/* tools symbolize a mapping only if it says it lacks functions */
					if (!l->named)
						maps[l->map - 1].has_functions = 0;
				}
				if (!l || l->named) {
					perftools__profiles__line__init(&lines[nloc - 1]);
					lines[nloc - 1].function_id = fn_of[name];
					linep[nloc - 1] = &lines[nloc - 1];
					lc->n_line = 1;
					lc->line = &linep[nloc - 1];
				}
				locp[nloc - 1] = lc;
				if (l) {
					if (strmap_put(&addr_loc, key, id))
						goto out;
				} else {
					name_loc[name] = id;
				}
			}
		}
	}
	size_t li = 0, lab = 0;

	for (uint32_t r = 0; r < p->nrows; r++) {
		const struct profile_row *row = &p->rows[r];
		const uint32_t *st = p->stacks[row->stack];
		PbSample *smp = &samples[r];

		perftools__profiles__sample__init(smp);
		smp->location_id = &locids[li];
		for (uint32_t i = st[0]; i-- > 0;) {	/* leaf first */
			uint32_t id = 0;
			char key[64];

			if (frame_loc(p, row->stack, i, key))
				strmap_get(&addr_loc, key, &id);
			else
				id = name_loc[st[1 + i]];
			locids[li++] = id;
		}
		smp->n_location_id = st[0];
		smp->value = &values[2 * r];
		values[2 * r] = (int64_t)row->count;
		values[2 * r + 1] = (int64_t)row->count * period_ns;
		smp->n_value = 2;
		smp->label = &labelp[lab];
		for (int k = 0; k < 3; k++) {
			PbLabel *l = &labels[lab];

			perftools__profiles__label__init(l);
			l->key = sid[4 + k];
			if (k == 0)
				l->str = row->service;
			else if (k == 1)
				l->str = row->comm;
			else if (row->pid)
				l->num = row->pid;
			else
				continue;
			labelp[lab++] = l;
			smp->n_label++;
		}
		samplep[r] = smp;
	}
	prof.n_sample_type = 2;
	prof.sample_type = vtp;
	prof.n_sample = p->nrows;
	prof.sample = samplep;
	prof.n_mapping = p->nmaps;
	prof.mapping = mapp;
	prof.n_location = nloc;
	prof.location = locp;
	prof.n_function = nfn;
	prof.function = fnp;
	prof.n_string_table = nstr + extra;
	prof.string_table = strs;
	prof.period_type = &period;
	prof.period = period_ns;
	prof.time_nanos = (int64_t)(p->ts_ms - p->duration_ms) * 1000000LL;
	prof.duration_nanos = (int64_t)p->duration_ms * 1000000LL;
	rawlen = perftools__profiles__profile__get_packed_size(&prof);
	raw = malloc(rawlen + 1);
	if (!raw)
		goto out;
	perftools__profiles__profile__pack(&prof, raw);
	ret = gzip_buf(raw, rawlen, out, outlen);
out:
	strmap_free(&addr_loc);
	free(raw);
	free(strs);
	free(fns);
	free(fnp);
	free(locs);
	free(locp);
	free(lines);
	free(linep);
	free(samples);
	free(samplep);
	free(labels);
	free(labelp);
	free(maps);
	free(mapp);
	free(locids);
	free(values);
	free(fn_of);
	free(name_loc);
	return ret;
}
