/*
 * domain_rollup.c - host matches rolled up into failure-domain alerts
 * (rack, switch, ...): a domain with enough of its live hosts matching
 * becomes one alert and inhibits the host alerts it explains.
 */
#include "engine_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "alert.h"
#include "deploy.h"
#include "eval.h"
#include "fnv.h"
#include "log.h"
#include "profile.h"
#include "stats.h"
#include "store.h"
#include "strbuf.h"
#include "timeutil.h"

static const char *host_label(const struct host_state *h, const char *key)
{
	const struct snapshot *s;

	if (!h->n)
		return NULL;	/* nothing readable yet: no labels */
	s = &h->snaps[h->n - 1];

	for (uint32_t i = 0; i < s->nlabels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].value;
	return NULL;
}

/* The index of domain d in map/name[], added as *nd if new.  0 or -ENOMEM. */
static int domain_index(struct strmap *map, const char **name, uint32_t *nd, const char *d,
			uint32_t *idx)
{
	if (strmap_get(map, d, idx))
		return 0;
	*idx = *nd;
	name[(*nd)++] = d;
	return strmap_put(map, d, *idx);
}

/*
 * One domain level: host-level matches of domains that cross the
 * thresholds become domain matches appended to out (*nout grows); the host
 * matches they explain are marked inhibited (host = NULL).
 */
static void rollup_level(struct engine *e, const struct rule *r, const char *label,
			 struct match *m, int nm, const struct host_state **live, size_t nlive,
			 struct match *out, int *nout)
{
	/* domains by name -> index; totals from the live hosts, hits from the matches */
	struct strmap dmap;
	const char **name = calloc(nlive + (size_t)nm + 1, sizeof(char *));
	int *total = calloc(nlive + (size_t)nm + 1, sizeof(int));
	int *hit = calloc(nlive + (size_t)nm + 1, sizeof(int));
	uint32_t *dom = calloc((size_t)nm + 1, sizeof(uint32_t));
	uint32_t nd = 0, *order = calloc(nlive + (size_t)nm + 1, sizeof(uint32_t)), norder = 0;

	strmap_init(&dmap);
	if (!name || !total || !hit || !dom || !order)
		goto out;
	for (size_t h = 0; h < nlive; h++) {
		const char *d = host_label(live[h], label);
		uint32_t idx;

		if (domain_index(&dmap, name, &nd, d ? d : "unplaced", &idx))
			goto out;
		total[idx]++;
	}
	for (int i = 0; i < nm; i++) {
		const char *d = NULL;
		uint32_t hidx, idx;

		if (!m[i].host)
			continue;
		if (strmap_get(&e->host_index, m[i].host, &hidx))
			d = host_label(&e->hosts[hidx], label);
		if (domain_index(&dmap, name, &nd, d ? d : "unplaced", &idx))
			goto out;
		dom[i] = idx;
		if (!hit[idx]++)
			order[norder++] = idx;	/* domains in the order matches name them */
	}
	for (uint32_t k = 0; k < norder; k++) {
		uint32_t idx = order[k];
		struct match *dm;
		double worst = -INFINITY;

		if ((uint64_t)hit[idx] < r->rollup_min_hosts || !total[idx] ||
		    (double)hit[idx] / total[idx] < r->rollup_min_fraction)
			continue;
		dm = &out[(*nout)++];
		memset(dm, 0, sizeof(*dm));
		dm->labels = calloc(1, sizeof(struct label));
		dm->labels[0].key = (char *)label;
		dm->labels[0].value = (char *)name[idx];
		dm->nlabels = 1;
		dm->hosts = calloc((size_t)hit[idx], sizeof(char *));
		dm->total = total[idx];
		dm->dlabel = label;
		dm->dvalue = name[idx];
		for (int i = 0; i < nm; i++) {
			if (!m[i].host || dom[i] != idx)
				continue;
			dm->hosts[dm->nhosts++] = (char *)m[i].host;
			if (m[i].value > worst)
				worst = m[i].value;
			m[i].host = NULL;	/* inhibited by the domain alert */
			e->inhibited++;
		}
		dm->value = worst;
	}
out:
	strmap_free(&dmap);
	free(name);
	free(total);
	free(hit);
	free(dom);
	free(order);
}

/* Every domain level, outermost first, then the host matches left. */
int domain_rollup(struct engine *e, const struct rule *r, struct match *m, int nm,
		  const struct host_state **live, size_t nlive, struct match *out)
{
	int nout = 0;

	for (int l = 0; l < r->nrollup; l++)
		rollup_level(e, r, r->rollup_by[l], m, nm, live, nlive, out, &nout);
	for (int i = 0; i < nm; i++)
		if (m[i].host)
			out[nout++] = m[i];
	return nout;
}
