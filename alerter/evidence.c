/*
 * evidence.c - the evidence attached to a notification (evidence.h): read
 * from Redis at send time, the affected hosts' profile windows over the
 * alert's window merged into their top stacks and hottest services (and,
 * for a post-deploy alert, the functions whose CPU share grew since the
 * deploy), I/O stacks and waits per device, the drive record of a drive
 * alert, the top bad-checksum peers of a checksum alert.  It is added
 * piece by piece while the body stays under max_payload_bytes; whatever
 * does not fit is left out and "truncated" says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "alerter/evidence.h"
#include "core/jsonc.h"
#include "core/timeutil.h"
#include "model/profile.h"
#include "model/snapshot.h"
#include "store/drives.h"
#include "store/profile_store.h"
#include "store/store.h"

/*
 * The hosts' profile windows of a kind (enum profile_kind) over [from, to],
 * the rows in scope (NULL: all), into p.
 */
static size_t load_kind(struct conn *rc, int kind, char **hosts, uint32_t nhosts, uint64_t from,
			uint64_t to, const struct profile_scope *scope, struct profile *p)
{
	char err[128];
	size_t windows = 0;

	profile_init(p, "");
	for (uint32_t i = 0; i < nhosts; i++) {
		int n = profile_read_merge(rc, hosts[i], kind, from, to, scope, p, NULL, err,
					   sizeof(err));

		if (n > 0)
			windows += (size_t)n;
	}
	return windows;
}

/* The hosts an alert is about: its hosts, else its host label (*single holds it). */
static char **alert_hosts(const struct alert *a, char **single, uint32_t *n)
{
	*n = a->nhosts;
	if (!*n && alert_label(a, "host")) {
		single[0] = (char *)alert_label(a, "host");
		*n = 1;
		return single;
	}
	return a->hosts;
}

/* load_kind of CPU profile windows. */
static size_t load_profiles(struct conn *rc, char **hosts, uint32_t nhosts, uint64_t from,
			    uint64_t to, const struct profile_scope *scope, struct profile *p)
{
	return load_kind(rc, PROFILE_CPU, hosts, nhosts, from, to, scope, p);
}

static int row_cmp(const void *a, const void *b)
{
	const struct profile_row *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

static json_object *stacks_json(struct profile *p, uint32_t top)
{
	json_object *arr = json_object_new_array();
	struct strbuf sb = STRBUF_INIT;

	qsort(p->rows, p->nrows, sizeof(*p->rows), row_cmp);
	for (uint32_t r = 0; r < p->nrows && r < top; r++) {
		const uint32_t *st = p->stacks[p->rows[r].stack];
		json_object *o = json_object_new_object();

		strbuf_reset(&sb);
		strbuf_adds(&sb, p->strings[p->rows[r].comm]);
		for (uint32_t i = 0; i < st[0]; i++) {
			strbuf_adds(&sb, ";");
			strbuf_adds(&sb, p->strings[st[1 + i]]);
		}
		json_object_object_add(o, "stack", jsonc_string(strbuf_str(&sb)));
		json_object_object_add(o, "service",
				       jsonc_string(p->strings[p->rows[r].service]));
		if (p->rows[r].cgroup)
			json_object_object_add(o, "cgroup",
					       jsonc_string(p->strings[p->rows[r].cgroup]));
		json_object_object_add(o, "samples", json_object_new_int64((int64_t)p->rows[r].count));
		json_object_object_add(o, "share",
				       json_object_new_double((double)p->rows[r].count / (double)p->total));
		json_object_array_add(arr, o);
	}
	strbuf_release(&sb);
	return arr;
}

static json_object *services_json(const struct profile *p)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();
	uint64_t *per = calloc(p->nstrings + 1, sizeof(*per));

	for (uint32_t r = 0; per && r < p->nrows; r++)
		per[p->rows[r].service] += p->rows[r].count;
	for (int k = 0; per && k < 5; k++) {
		uint32_t best = 0;

		for (uint32_t i = 1; i < p->nstrings; i++)
			if (per[i] > per[best])
				best = i;
		if (!per[best])
			break;
		json_object *s = json_object_new_object();

		json_object_object_add(s, "service", jsonc_string(p->strings[best]));
		json_object_object_add(s, "share", json_object_new_double((double)per[best] /
									  (double)p->total));
		json_object_array_add(arr, s);
		per[best] = 0;
	}
	free(per);
	json_object_put(o);
	return arr;
}

/*
 * What a's CPU evidence is about, from its own labels: a `cgroup` label
 * scopes it to that cgroup (and those below it), else a `service` label
 * (a deploy's) to that service's processes, else it is the hosts' whole
 * CPU.  Its name for people into what ("cgroup /x").
 */
static const struct profile_scope *evidence_scope(const struct alert *a, struct profile_scope *s,
						  char *what, size_t len)
{
	memset(s, 0, sizeof(*s));
	if ((s->cgroup = alert_label(a, "cgroup")) && s->cgroup[0]) {
		snprintf(what, len, "cgroup %s", s->cgroup);
		return s;
	}
	s->cgroup = NULL;
	if ((s->service = alert_label(a, "service")) && s->service[0]) {
		snprintf(what, len, "service %s", s->service);
		return s;
	}
	snprintf(what, len, "the whole CPU of the affected hosts");
	return NULL;
}

/* The time an alert's profile evidence covers: evidence.window up to now. */
struct evidence_span {
	uint64_t from, to;		/* ms */
	char t0[40], t1[40];		/* the same, as RFC 3339 */
};

/* A new evidence object for a, its "window" set from *sp (filled in). */
static json_object *evidence_begin(const struct alerter_config *cfg, const struct alert *a,
				   struct evidence_span *sp)
{
	json_object *o = json_object_new_object(), *w = json_object_new_object();

	sp->to = time_wall_ns() / NSEC_PER_MSEC;
	sp->from = (a->starts_ms ? a->starts_ms : sp->to) - cfg->evidence_window_ns / NSEC_PER_MSEC;
	json_object_object_add(w, "from", jsonc_string(alert_format_time(sp->from, sp->t0,
									sizeof(sp->t0))));
	json_object_object_add(w, "to", jsonc_string(alert_format_time(sp->to, sp->t1,
								      sizeof(sp->t1))));
	json_object_object_add(o, "window", w);
	return o;
}

/* CPU evidence for the affected hosts of a, scoped by evidence_scope. */
static json_object *cpu_evidence(const struct alerter_config *cfg, const struct alert *a,
				 struct conn *rc)
{
	char *single[1], what[300], why[700];
	uint32_t nhosts;
	char **hosts = alert_hosts(a, single, &nhosts);
	struct evidence_span sp;
	json_object *o = evidence_begin(cfg, a, &sp);
	uint64_t from = sp.from, now = sp.to;
	const char *t0 = sp.t0, *t1 = sp.t1;
	struct profile_scope sc;
	const struct profile_scope *scope = evidence_scope(a, &sc, what, sizeof(what));
	struct profile p;
	size_t windows;

	json_object_object_add(o, "scope", jsonc_string(what));
	if (!nhosts) {
		json_object_object_add(o, "missing", jsonc_string("the alert names no hosts"));
		return o;
	}
	windows = load_profiles(rc, hosts, nhosts, from, now, scope, &p);
	if (!p.total) {
		struct profile all;

		/* said, never replaced by the hosts' whole CPU: that is not what paged */
		load_profiles(rc, hosts, nhosts, from, now, NULL, &all);
		if (scope && all.total)
			snprintf(why, sizeof(why), "no CPU samples of %s on the affected hosts from "
				 "%s to %s (%llu samples of other processes there)", what, t0, t1,
				 (unsigned long long)all.total);
		else
			snprintf(why, sizeof(why), "no CPU profile windows for the affected hosts "
				 "from %s to %s (is the probe's profiler on?)", t0, t1);
		json_object_object_add(o, "missing", jsonc_string(why));
		profile_free(&all);
		profile_free(&p);
		return o;
	}
	json_object_object_add(o, "windows", json_object_new_int64((int64_t)windows));
	json_object_object_add(o, "samples", json_object_new_int64((int64_t)p.total));
	json_object_object_add(o, "top_stacks", stacks_json(&p, cfg->top_stacks));
	json_object_object_add(o, "top_services", services_json(&p));
	if (a->deploy_at_ms && a->deploy_base_ms && a->deploy_base_ms < a->deploy_at_ms) {
		struct profile base;
		struct profile_delta *d;
		size_t nd;
		json_object *grew = json_object_new_array();

		load_profiles(rc, hosts, nhosts, a->deploy_base_ms, a->deploy_at_ms, scope, &base);
		nd = profile_diff(&base, &p, &d);
		for (size_t i = 0, shown = 0; i < nd && shown < 5; i++) {
			if (d[i].target <= d[i].base)
				continue;
			json_object *f = json_object_new_object();

			json_object_object_add(f, "function", jsonc_string(d[i].name));
			json_object_object_add(f, "share_before", json_object_new_double(d[i].base));
			json_object_object_add(f, "share_after", json_object_new_double(d[i].target));
			/* its own time: a caller's total moves with its callee's, not this */
			json_object_object_add(f, "self_before", json_object_new_double(d[i].self_base));
			json_object_object_add(f, "self_after", json_object_new_double(d[i].self_target));
			json_object_array_add(grew, f);
			shown++;
		}
		json_object_object_add(o, "grew_since_deploy", grew);
		free(d);
		profile_free(&base);
	}
	profile_free(&p);
	return o;
}

/*
 * I/O evidence for a's device: which processes issue its I/O, through which
 * path (the probe's sampled block requests, fl:{H}:io10), and where they
 * then wait (fl:{H}:iowait10), on the affected hosts over the alert's
 * window.  Never another device's, nor the CPU's.
 */
static json_object *io_evidence(const struct alerter_config *cfg, const struct alert *a,
				struct conn *rc)
{
	const char *device = alert_label(a, "device");
	char *single[1], root[160], what[200], why[600];
	struct evidence_span sp;
	json_object *o = evidence_begin(cfg, a, &sp);
	uint64_t from = sp.from, now = sp.to;
	const char *t0 = sp.t0, *t1 = sp.t1;
	struct profile_scope scope = { 0 };
	struct profile io, wait;
	uint32_t nhosts;
	char **hosts = alert_hosts(a, single, &nhosts);

	if (!device || !device[0] || !nhosts) {
		json_object_object_add(o, "missing", jsonc_string(
			!nhosts ? "the alert names no hosts" : "the alert has no device label: I/O "
			"stacks are per device"));
		return o;
	}
	snprintf(root, sizeof(root), "[%s ", device);
	snprintf(what, sizeof(what), "device %s", device);
	json_object_object_add(o, "scope", jsonc_string(what));
	scope.root = root;
	load_kind(rc, PROFILE_IO, hosts, nhosts, from, now, &scope, &io);
	load_kind(rc, PROFILE_IO_WAIT, hosts, nhosts, from, now, &scope, &wait);
	if (!io.total) {
		snprintf(why, sizeof(why), "no sampled I/O to %s on the affected hosts from %s to %s "
			 "(is the probe's profile.io_interval on?)", device, t0, t1);
		json_object_object_add(o, "missing", jsonc_string(why));
	} else {
		json_object_object_add(o, "sampled_requests", json_object_new_int64((int64_t)io.total));
		/* each stack's share of the device's sampled requests */
		json_object_object_add(o, "writers", stacks_json(&io, cfg->top_stacks));
		json_object_object_add(o, "top_services", services_json(&io));
	}
	if (wait.total) {
		json_object_object_add(o, "waited_us", json_object_new_int64((int64_t)wait.total));
		/* where they wait: each stack's share of the time its submitters waited */
		json_object_object_add(o, "waits", stacks_json(&wait, cfg->top_stacks));
	}
	profile_free(&io);
	profile_free(&wait);
	return o;
}

static json_object *drive_evidence(const struct alert *a, struct conn *rc)
{
	const char *host = a->nhosts ? a->hosts[0] : alert_label(a, "host");
	const char *dev = alert_label(a, "device");
	char *json;
	json_object *o = NULL;

	if (!host || !dev)
		return jsonc_string("the alert names no host and device");
	if ((json = drives_get_json(rc, host, dev))) {
		char why[160];

		o = jsonc_parse(json, strlen(json), why, sizeof(why));
	}
	free(json);
	return o ? o : jsonc_string("no drive record for that device");
}

struct peers_arg {
	json_object *arr;
};

static int peers_cb(struct snapshot *s, void *arg)
{
	struct peers_arg *pa = arg;

	for (uint32_t i = 0; i < s->nseries; i++) {
		const struct series *ser = &s->series[i];
		json_object *o;

		if (strcmp(ser->name, "tcp.bad_csum") || !ser->counter.value)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "host", jsonc_string(s->host));
		json_object_object_add(o, "peer", jsonc_string(series_label(ser, "peer") ?: ""));
		json_object_object_add(o, "interface",
				       jsonc_string(series_label(ser, "interface") ?: ""));
		json_object_object_add(o, "bad_checksums",
				       json_object_new_int64((int64_t)ser->counter.value));
		json_object_array_add(pa->arr, o);
	}
	return 0;
}

static json_object *csum_evidence(const struct alert *a, struct conn *rc)
{
	struct peers_arg pa = { json_object_new_array() };
	char err[128];

	for (uint32_t i = 0; i < a->nhosts && i < 32; i++)
		store_read_latest(rc, a->hosts[i], 1, 1, peers_cb, &pa, NULL, err, sizeof(err));
	if (!a->nhosts && alert_label(a, "host"))
		store_read_latest(rc, alert_label(a, "host"), 1, 1, peers_cb, &pa, NULL, err,
				  sizeof(err));
	return pa.arr;
}

int evidence_add(const struct alerter_config *cfg, json_object *doc, json_object *evs,
			struct group_alert *const *as, int n, struct conn *rc)
{
	int truncated = 0;

	for (int i = 0; i < n && rc; i++) {
		const struct alert *a = &as[i]->a;
		json_object *e;

		if (!a->firing || !a->evidence)
			continue;
		e = json_object_new_object();
		json_object_object_add(e, "fingerprint", jsonc_string(a->fingerprint));
		if (a->evidence & ALERT_EV_CPU_STACKS)
			json_object_object_add(e, "cpu", cpu_evidence(cfg, a, rc));
		if (a->evidence & ALERT_EV_DRIVE)
			json_object_object_add(e, "drive", drive_evidence(a, rc));
		if (a->evidence & ALERT_EV_CSUM_PEERS)
			json_object_object_add(e, "checksum_peers", csum_evidence(a, rc));
		if (a->evidence & ALERT_EV_IO_STACKS)
			json_object_object_add(e, "io", io_evidence(cfg, a, rc));
		json_object_array_add(evs, e);
		if (strlen(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN)) >
		    cfg->max_payload_bytes) {
			json_object_array_del_idx(evs, json_object_array_length(evs) - 1, 1);
			truncated = 1;
		}
	}
	return truncated;
}
