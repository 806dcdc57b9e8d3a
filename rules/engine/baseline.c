/*
 * baseline.c - post-deploy baselines: the deployed hosts after a deploy
 * against themselves before it and against the undeployed peers, with a
 * significance test; CPU-profile baselines name the function that grew.
 */
#include "rules/engine/engine_internal.h"
#include "rules/engine/baseline_judge.h"
#include "rules/engine/baseline_part.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/alert.h"
#include "store/deploy.h"
#include "rules/lang/eval.h"
#include "rules/engine/fleet.h"
#include "core/array.h"
#include "core/fnv.h"
#include "core/log.h"
#include "model/profile.h"
#include "rules/engine/stats.h"
#include "store/store.h"
#include "core/strbuf.h"
#include "core/timeutil.h"

/* ---- post-deploy baselines -------------------------------------------- */

#define BASELINE_HOLD_MS (24ULL * 3600 * 1000)	/* a verdict stands this long at most */


void baseline_verdict_free(struct verdict *v)
{
	for (int k = 0; k < v->nhosts; k++)
		free(v->hosts[k]);
	free(v->hosts);
	baseline_part_free(v->part);
	memset(v, 0, sizeof(*v));
}

int engine_set_deploys(struct engine *e, const struct deploy *d, int n)
{
	struct deploy *copy = n ? malloc((size_t)n * sizeof(*copy)) : NULL;

	if (n && !copy)
		return -ENOMEM;
	if (n)
		memcpy(copy, d, (size_t)n * sizeof(*copy));
	free(e->deploys);
	e->deploys = copy;
	e->ndeploys = n;
	return 0;
}

void baseline_verdicts_free(struct rule_inst *ri)
{
	for (int i = 0; i < ri->nverdicts; i++) {
		baseline_verdict_free(ri->verdicts[i]);
		free(ri->verdicts[i]);
	}
	free(ri->verdicts);
	ri->verdicts = NULL;
	ri->nverdicts = 0;
}

/* The newest marker (deploy or rollback) of service at or before now, or NULL. */
static const struct deploy *latest_of(const struct engine *e, const char *service, uint64_t now)
{
	const struct deploy *best = NULL;

	for (int i = 0; i < e->ndeploys; i++) {
		const struct deploy *d = &e->deploys[i];

		if (d->ts_ms <= now && !strcmp(d->service, service) &&
		    (!best || d->ts_ms >= best->ts_ms))
			best = d;
	}
	return best;
}

/* Collects the other workers' partials of one verdict. */
struct gather_arg {
	struct fleet_bpart *b;
	size_t bad;
};

static void gather_part(const void *blob, size_t len, void *arg)
{
	struct gather_arg *g = arg;

	if (fleet_bpart_merge_blob(g->b, blob, len))
		g->bad++;
}

/*
 * A judge waits for the partial of every *live* worker: a worker that died
 * leaves the membership within its lease (3 s) and is then not waited for,
 * and a live one heartbeats from the loop that evaluates, so it is making
 * progress and its part comes.  Judging on a clock instead (60 evaluations
 * and 60 s, before) judged without parts that were seconds away whenever a
 * worker's reads of its hosts' minutes were slow (a busy machine, a replay
 * running far faster than wall time): a verdict then missed deployed hosts
 * and, about once in five cluster scenario runs, paged nothing.  The wait
 * is bounded only against a worker that heartbeats without ever publishing
 * (rule files that differ between workers): after GATHER_MAX_NS it judges
 * without it, loudly; meanwhile it says every minute whom it waits for.
 */
#define GATHER_MAX_NS (10 * 60 * NSEC_PER_SEC)
#define GATHER_SAY_NS (60 * NSEC_PER_SEC)

/*
 * The verdict on deploy d (key) for r into v: judged from this engine's
 * hosts alone, or, sharded, from every worker's partial (this one's
 * published first), by the worker that judges the fleet.  This engine's
 * part is read over as many evaluations as it takes (baseline_part_step).  Returns
 * 1 when v holds a verdict, 0 when it must wait (the part is not read yet,
 * some worker has not published yet, or this worker does not judge).
 */
/* Hand verdict v on deploy d of rule r to engine_opts.verdict_cb (store/deploy.h's shape). */
static void verdict_emit(const struct engine *e, const struct rule *r, const struct deploy *d,
			 const struct verdict *v)
{
	struct deploy_verdict dv = { .value = v->fires ? v->value : 0,
				     .judged_ms = time_wall_ns() / NSEC_PER_MSEC };

	if (!e->opts.verdict_cb || !d->id[0] || !v->status[0])
		return;
	snprintf(dv.id, sizeof(dv.id), "%s", d->id);
	snprintf(dv.rule, sizeof(dv.rule), "%s", r->name);
	snprintf(dv.verdict, sizeof(dv.verdict), "%s", v->status);
	snprintf(dv.service, sizeof(dv.service), "%s", d->service);
	snprintf(dv.version, sizeof(dv.version), "%s", d->version);
	snprintf(dv.by, sizeof(dv.by), "%s", v->train);
	if (v->fires)
		snprintf(dv.function, sizeof(dv.function), "%s", v->function);
	e->opts.verdict_cb(&dv, e->opts.verdict_arg);
}

static int verdict_for(struct engine *e, const struct rule *r, const struct deploy *d,
		       const char *key, const struct host_window *win, size_t nwin,
		       struct verdict *v)
{
	const struct engine_fleet *f = e->opts.fleet;
	struct fleet_bpart b;
	char topic[400];
	struct gather_arg g = { &b, 0 };
	int ready;

	if (!v->part && !(v->part = baseline_part_begin(e, r, d, win, nwin)))
		return 0;
	if (!v->part->done && !baseline_part_step(e, r, d, v->part))
		return 0;	/* more hosts at the next evaluation */
	if (!f) {
		baseline_train_of(e, d, r->baseline.window_ns / NSEC_PER_MSEC, v->part->hosts,
			 v->part->nhosts, v->train, sizeof(v->train));
		if (r->baseline.profile_share)
			baseline_judge_profile(r, d, &v->part->b, v);
		else
			baseline_judge(r, d, &v->part->b, v);
		verdict_emit(e, r, d, v);
		baseline_part_free(v->part);
		v->part = NULL;
		return 1;
	}
	snprintf(topic, sizeof(topic), "baseline/%s/%s", r->name, key);
	if (strcmp(v->published, key)) {
		char *blob;
		size_t len;

		if (fleet_bpart_encode(&v->part->b, &blob, &len) == 0) {
			if (f->publish(f->arg, topic, blob, len) == 0)
				snprintf(v->published, sizeof(v->published), "%s", key);
			free(blob);
		}
	}
	if (!f->owns_fleet(f->arg) || strcmp(v->published, key))
		return 0;
	/* the judge counts its own part from what it computed, once */
	if (fleet_bpart_init(&b, v->part->b.quantile))
		return 0;
	if (fleet_bpart_add(&b, &v->part->b)) {
		fleet_bpart_free(&b);
		return 0;
	}
	ready = f->gather(f->arg, topic, gather_part, &g);
	if (!v->waiting_since_ns)
		v->waiting_since_ns = time_mono_ns();
	if (ready <= 0 && time_mono_ns() - v->waiting_since_ns < GATHER_MAX_NS) {
		uint64_t waited = time_mono_ns() - v->waiting_since_ns;

		if (waited / GATHER_SAY_NS > (uint64_t)v->waited) {
			v->waited = (int)(waited / GATHER_SAY_NS);
			log_info("%s: deploy %s: waiting %.0f s for %s live worker(s)' part%s", r->name,
				 key, (double)waited / 1e9, ready < 0 ? "the other" : "some",
				 ready < 0 ? "s (Redis did not answer)" : "s");
		}
		fleet_bpart_free(&b);
		return 0;
	}
	if (ready <= 0)
		log_warn("%s: deploy %s: judged without %s: live workers did not publish their "
			 "parts within %.0f s (do they run the same rule files?)", r->name, key,
			 ready < 0 ? "the other workers' parts" : "some workers' parts",
			 (double)GATHER_MAX_NS / 1e9);
	if (g.bad)
		log_warn("%s: deploy %s: %zu worker part(s) could not be read", r->name, key,
			 g.bad);
	log_info("%s: deploy %s: judged from this worker's part (%d host(s)) and those "
		 "of the other workers (%d host(s) in all, %d deployed with data)",
		 r->name, key, v->part->b.total, b.total, b.nhosts);
	/* the deployed hosts that reported, whichever worker holds them */
	baseline_train_of(e, d, r->baseline.window_ns / NSEC_PER_MSEC, b.hosts, (size_t)b.nhosts,
		 v->train, sizeof(v->train));
	if (r->baseline.profile_share)
		baseline_judge_profile(r, d, &b, v);
	else
		baseline_judge(r, d, &b, v);
	verdict_emit(e, r, d, v);
	fleet_bpart_free(&b);
	baseline_part_free(v->part);
	v->part = NULL;
	return 1;
}

/*
 * ri's verdict for service, created empty if new (each allocated on its
 * own, so pointers into one stay valid as others are added); NULL on
 * -ENOMEM.
 */
static struct verdict *verdict_of(struct rule_inst *ri, const char *service)
{
	struct verdict **vs, *v;

	for (int i = 0; i < ri->nverdicts; i++)
		if (!strcmp(ri->verdicts[i]->service, service))
			return ri->verdicts[i];
	v = calloc(1, sizeof(*v));
	vs = v ? realloc(ri->verdicts, (size_t)(ri->nverdicts + 1) * sizeof(*vs)) : NULL;
	if (!vs) {
		free(v);
		return NULL;
	}
	ri->verdicts = vs;
	ri->verdicts[ri->nverdicts++] = v;
	snprintf(v->service, sizeof(v->service), "%s", service);
	return v;
}

/*
 * A baseline rule: judge each service's newest deploy once its after-window
 * has passed, on its own hosts and windows, and keep that verdict (one
 * alert per service and deploy) until the service's next deploy or
 * rollback mark, or BASELINE_HOLD_MS.  A rule with baseline.service judges
 * that service only.  Deploys of other services, at once or minutes apart,
 * neither trigger nor end a service's verdict.
 */
void baseline_run(struct engine *e, const struct rule *r, struct rule_inst *ri,
		  const struct host_window *win, size_t nwin, uint64_t now, engine_event_cb cb,
		  void *arg)
{
	uint64_t w = r->baseline.window_ns / NSEC_PER_MSEC;
	struct label *l = calloc((size_t)e->ndeploys * 4 + 1, sizeof(*l));
	struct match *m = calloc((size_t)e->ndeploys + 1, sizeof(*m));
	int nm = 0;

	if (!l || !m) {
		free(l);
		free(m);
		alert_state_eval_failed(e, r, ri, now, "out of memory for the deploy verdicts");
		return;
	}
	for (int i = 0; i < e->ndeploys; i++) {
		const struct deploy *d = &e->deploys[i];
		struct verdict *v;
		struct label *ml = &l[4 * nm];
		char key[300];

		/* each service once: at its newest marker, unless that is a rollback */
		if (d->ts_ms > now || latest_of(e, d->service, now) != d ||
		    (r->baseline.service[0] && strcmp(d->service, r->baseline.service)))
			continue;
		if (d->rollback || now < d->ts_ms + w || now >= d->ts_ms + w + BASELINE_HOLD_MS)
			continue;
		if (!r->baseline.profile_share) {
			/* the last slot's minute must be in the tier: written when it ends */
			if (now < baseline_minutes_ready(d->ts_ms, w, e->opts.rollups_delay_ms))
				continue;
		}
		v = verdict_of(ri, d->service);
		if (!v) {
			alert_state_eval_failed(e, r, ri, now, "out of memory for a deploy verdict");
			continue;
		}
		snprintf(key, sizeof(key), "%s@%s@%" PRIu64, d->service, d->version, d->ts_ms);
		if (strcmp(v->key, key)) {
			if (strcmp(v->pending, key)) {
				/* a new deploy to judge: forget the last one's verdict */
				char service[sizeof(v->service)];

				memcpy(service, v->service, sizeof(service));
				baseline_verdict_free(v);
				memcpy(v->service, service, sizeof(service));
				snprintf(v->pending, sizeof(v->pending), "%s", key);
			}
			if (!verdict_for(e, r, d, key, win, nwin, v))
				continue;
			snprintf(v->key, sizeof(v->key), "%s", key);
		}
		if (!v->fires)
			continue;
		/* sorted by key, as every alert's labels are */
		m[nm].nlabels = 0;
		if (v->path[0])
			ml[m[nm].nlabels++] = (struct label){ "call_path", v->path };
		if (v->function[0])
			ml[m[nm].nlabels++] = (struct label){ "function", v->function };
		ml[m[nm].nlabels++] = (struct label){ "service", (char *)d->service };
		ml[m[nm].nlabels++] = (struct label){ "version", (char *)d->version };
		m[nm].labels = ml;
		m[nm].value = v->value;
		m[nm].hosts = v->hosts;
		m[nm].nhosts = v->nhosts;
		m[nm].total = v->total;
		m[nm].dlabel = "service";
		m[nm].dvalue = d->service;
		m[nm].deploy = d;
		m[nm].base_ms = d->ts_ms - w;
		nm++;
	}
	alert_state_track(e, r, ri, m, nm, now, cb, arg);
	free(l);
	free(m);
}
