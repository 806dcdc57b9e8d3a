/*
 * scenario.c - scenario files for the fleet simulator; see scenario.h.
 *
 * Parsed through lib/config (libyaml with positions), so every mistake is
 * reported where it is; unknown keys are errors, as in every faultline
 * file.
 */
#include "sim/scenario.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/timeutil.h"

const char *const sim_kind_names[SIM_KINDS] = {
	[SIM_CSUM_ERRORS] = "csum_errors",	 [SIM_WRITE_LATENCY] = "write_latency",
	[SIM_DRIVE_WEAR] = "drive_wear",	 [SIM_DRIVE_FAILING] = "drive_failing",
	[SIM_THROTTLE] = "throttle",		 [SIM_CPU_BURSTS] = "cpu_bursts",
	[SIM_CPU_SATURATION] = "cpu_saturation", [SIM_DEPLOY] = "deploy",
	[SIM_LOAD_RISE] = "load_rise",		 [SIM_SILENCE] = "silence",
	[SIM_ROLLBACK] = "rollback",		 [SIM_LOAD_RAMP] = "load_ramp",
	[SIM_BASE_LOAD] = "base_load",
};

const struct sim_stack sim_stacks[] = {
	{ { "main", "serve", "handle_request", "json_parse", NULL }, 0.25 },
	{ { "main", "serve", "handle_request", "db_query", "send", NULL }, 0.20 },
	{ { "main", "serve", "handle_request", "render_template", NULL }, 0.25 },
	{ { "main", "gc", "mark", NULL }, 0.10 },
	{ { "main", "serve", "write", "entry_SYSCALL_64", "tcp_sendmsg", NULL }, 0.20 },
};
const size_t sim_nstacks = sizeof(sim_stacks) / sizeof(sim_stacks[0]);

/* Is f a leaf of the simulated profile? */
static int known_leaf(const char *f)
{
	for (size_t k = 0; k < sim_nstacks; k++) {
		int d = 0;

		while (d < SIM_MAX_FRAMES && sim_stacks[k].frames[d])
			d++;
		if (!strcmp(sim_stacks[k].frames[d - 1], f))
			return 1;
	}
	return 0;
}

/*
 * A deploy's function: a leaf of the profile, or a path "a;b;f" of at most
 * SIM_MAX_FRAMES non-empty frames.  0, or -EINVAL with the reason.
 */
static int check_function(const struct cfg *c, const struct cfg_node *n, const char *f,
			  char *err, size_t errlen)
{
	const char *p = f;
	int frames = 0;

	if (!strchr(f, ';')) {
		if (known_leaf(f))
			return 0;
		return cfg_error(c, n, err, errlen, "function: %s is not a leaf of the simulated "
				 "profile (json_parse, send, render_template, mark, tcp_sendmsg); "
				 "give a new function with its callers, root first, such as "
				 "\"main;serve;handle_request;%s\"", f, f);
	}
	while (*p) {
		size_t len = strcspn(p, ";");

		if (!len || ++frames > SIM_MAX_FRAMES)
			return cfg_error(c, n, err, errlen, "function: \"%s\": expected 1 to %d "
					 "non-empty frames separated by ';', root first", f,
					 SIM_MAX_FRAMES);
		p += len + (p[len] == ';');
		if (!p[0] && p[-1] == ';')
			return cfg_error(c, n, err, errlen, "function: \"%s\" ends in ';'", f);
	}
	return 0;
}

/* Default parameter and its bounds per kind; the key it is given under. */
static const struct {
	const char *key;
	double def, min, max;
} params[SIM_KINDS] = {
	[SIM_CSUM_ERRORS] = { "rate", 20, 0, 1e6 },
	[SIM_WRITE_LATENCY] = { "factor", 40, 0.01, 1e4 },
	[SIM_DRIVE_WEAR] = { "value", 95, 0, 255 },
	[SIM_DRIVE_FAILING] = { "value", 8, 1, 1e9 },
	[SIM_THROTTLE] = { "value", 0.5, 0, 1 },
	[SIM_CPU_BURSTS] = { "value", 10, 1, 59 },
	[SIM_CPU_SATURATION] = { "value", 0.98, 0, 1 },
	[SIM_DEPLOY] = { "cpu", 0, 0, 10 },
	[SIM_LOAD_RISE] = { "factor", 1.3, 0.01, 100 },
	[SIM_SILENCE] = { NULL, 0, 0, 0 },
	[SIM_ROLLBACK] = { NULL, 0, 0, 0 },
	[SIM_LOAD_RAMP] = { "factor", 2, 0.01, 100 },
	[SIM_BASE_LOAD] = { "value", 0.6, 0, 1 },
};

/* Copy an optional string key into buf (len); absent leaves buf alone. */
static int get_str(const struct cfg *c, const struct cfg_node *map, const char *key, char *buf,
		   size_t len, char *err, size_t errlen)
{
	char *s = NULL;
	int ret = cfg_string(c, map, key, &s, err, errlen);

	if (!ret && s) {
		if (strlen(s) >= len)
			ret = cfg_error(c, cfg_get(map, key), err, errlen,
					"%s: longer than %zu characters", key, len - 1);
		else
			snprintf(buf, len, "%s", s);
	}
	free(s);
	return ret;
}

/* expect.evidence: {function: F, peer: GLOB, device: D} */
static int parse_evidence(const struct cfg *c, const struct cfg_node *n, struct sim_expect *x,
			  char *err, size_t errlen)
{
	if (n->type != CFG_MAP)
		return cfg_error(c, n, err, errlen, "expect.evidence: expected a map such as "
				 "{function: json_parse}");
	if (get_str(c, n, "function", x->ev_function, sizeof(x->ev_function), err, errlen) ||
	    get_str(c, n, "peer", x->ev_peer, sizeof(x->ev_peer), err, errlen) ||
	    get_str(c, n, "device", x->ev_device, sizeof(x->ev_device), err, errlen))
		return -EINVAL;
	return cfg_check_unknown(c, n, "function, peer, device", err, errlen);
}

/* expect.wear: {row: N, verdict: V} */
static int parse_wear(const struct cfg *c, const struct cfg_node *n, struct sim_expect *x,
		      char *err, size_t errlen)
{
	uint64_t row = 0;

	if (n->type != CFG_MAP)
		return cfg_error(c, n, err, errlen, "expect.wear: expected a map such as "
				 "{row: 1, verdict: failing}");
	if (cfg_uint(c, n, "row", 1, 1000000, &row, err, errlen) ||
	    get_str(c, n, "verdict", x->wear_verdict, sizeof(x->wear_verdict), err, errlen))
		return -EINVAL;
	if (!row)
		return cfg_error(c, n, err, errlen, "expect.wear: needs row:");
	x->wear_row = (uint32_t)row;
	return cfg_check_unknown(c, n, "row, verdict", err, errlen);
}

static int parse_expect(const struct cfg *c, const struct cfg_node *n, struct sim_expect *x,
			int resolves_default, char *err, size_t errlen)
{
	int has_host = 0;

	if (n->type != CFG_MAP)
		return cfg_error(c, n, err, errlen, "expect: each entry is a map such as "
				 "{alertname: TcpChecksumErrors, switch: sw001}");
	x->resolves = resolves_default;
	for (size_t i = 0; i < n->nchild; i++) {
		const struct cfg_node *kv = &n->child[i];
		uint64_t within = 0;

		if (!strcmp(kv->key, "resolves")) {
			if (cfg_bool(c, n, "resolves", &x->resolves, err, errlen))
				return -EINVAL;
			continue;
		}
		if (!strcmp(kv->key, "within")) {
			if (cfg_duration(c, n, "within", &within, err, errlen))
				return -EINVAL;
			if (within < NSEC_PER_SEC)
				return cfg_error(c, kv, err, errlen, "expect.within: at least 1s");
			x->within_ms = within / NSEC_PER_MSEC;
			continue;
		}
		((struct cfg_node *)kv)->used = 1;
		if (!strcmp(kv->key, "evidence")) {
			if (parse_evidence(c, kv, x, err, errlen))
				return -EINVAL;
			continue;
		}
		if (!strcmp(kv->key, "wear")) {
			if (parse_wear(c, kv, x, err, errlen))
				return -EINVAL;
			continue;
		}
		if (kv->type != CFG_SCALAR || !kv->value || !*kv->value)
			return cfg_error(c, kv, err, errlen, "expect.%s: expected a label value",
					 kv->key);
		if (!strcmp(kv->key, "alertname")) {
			snprintf(x->alertname, sizeof(x->alertname), "%s", kv->value);
			continue;
		}
		if (x->nlabels == SIM_MAX_EXPECT_LABELS)
			return cfg_error(c, kv, err, errlen, "expect: at most %d labels",
					 SIM_MAX_EXPECT_LABELS);
		if (strlen(kv->key) >= sizeof(x->key[0]) || strlen(kv->value) >= sizeof(x->value[0]))
			return cfg_error(c, kv, err, errlen, "expect.%s: too long", kv->key);
		has_host |= !strcmp(kv->key, "host");
		snprintf(x->key[x->nlabels], sizeof(x->key[0]), "%s", kv->key);
		snprintf(x->value[x->nlabels], sizeof(x->value[0]), "%s", kv->value);
		x->nlabels++;
	}
	if (!x->alertname[0])
		return cfg_error(c, n, err, errlen, "expect: needs alertname:");
	if (x->wear_row && !has_host)
		return cfg_error(c, n, err, errlen, "expect.wear: needs the host: label (whose "
				 "drive the row is)");
	return 0;
}

static int parse_event(const struct cfg *c, const struct cfg_node *n, uint64_t duration_ms,
		       struct sim_event *ev, char *err, size_t errlen)
{
	const struct cfg_node *on = NULL, *ex;
	char *kind = NULL;
	uint64_t at = 0, dur = 0;
	int k;

	if (n->type != CFG_MAP)
		return cfg_error(c, n, err, errlen, "events: each event is a map");
	memset(ev, 0, sizeof(*ev));
	ev->line = n->line;
	ev->fraction = 1;
	if (cfg_string(c, n, "inject", &kind, err, errlen))
		return -EINVAL;
	for (k = 0; kind && k < SIM_KINDS; k++)
		if (!strcmp(kind, sim_kind_names[k]))
			break;
	if (!kind || k == SIM_KINDS) {
		free(kind);
		return cfg_error(c, cfg_get(n, "inject") ? cfg_get(n, "inject") : n, err, errlen,
				 "inject: expected one of csum_errors, write_latency, drive_wear, "
				 "drive_failing, throttle, cpu_bursts, cpu_saturation, deploy, "
				 "rollback, load_rise, load_ramp, base_load, silence");
	}
	free(kind);
	ev->kind = (enum sim_kind)k;
	ev->value = params[k].def;
	snprintf(ev->name, sizeof(ev->name), "%s", sim_kind_names[k]);
	snprintf(ev->version, sizeof(ev->version), k == SIM_ROLLBACK ? "rollback" : "sim-1");
	if (get_str(c, n, "name", ev->name, sizeof(ev->name), err, errlen) ||
	    cfg_duration(c, n, "at", &at, err, errlen) ||
	    cfg_duration(c, n, "for", &dur, err, errlen) ||
	    cfg_number(c, n, "fraction", 0, 1, &ev->fraction, err, errlen) ||
	    cfg_map(c, n, "on", &on, err, errlen))
		return -EINVAL;
	ev->at_ms = at / NSEC_PER_MSEC;
	ev->for_ms = dur / NSEC_PER_MSEC;
	if (ev->at_ms >= duration_ms)
		return cfg_error(c, cfg_get(n, "at"), err, errlen,
				 "at: %.0f s is not inside the scenario's duration (%.0f s)",
				 (double)ev->at_ms / 1000, (double)duration_ms / 1000);
	if (params[k].key &&
	    cfg_number(c, n, params[k].key, params[k].min, params[k].max, &ev->value, err, errlen))
		return -EINVAL;
	if (on && (get_str(c, on, "host", ev->host, sizeof(ev->host), err, errlen) ||
		   get_str(c, on, "rack", ev->rack, sizeof(ev->rack), err, errlen) ||
		   get_str(c, on, "switch", ev->sw, sizeof(ev->sw), err, errlen) ||
		   get_str(c, on, "agg", ev->agg, sizeof(ev->agg), err, errlen) ||
		   get_str(c, on, "site", ev->site, sizeof(ev->site), err, errlen) ||
		   cfg_check_unknown(c, on, "host, rack, switch, agg, site", err, errlen)))
		return -EINVAL;
	if (ev->kind == SIM_DEPLOY || ev->kind == SIM_ROLLBACK) {
		const char *what = sim_kind_names[k];

		if (get_str(c, n, "service", ev->service, sizeof(ev->service), err, errlen) ||
		    get_str(c, n, "version", ev->version, sizeof(ev->version), err, errlen))
			return -EINVAL;
		if (ev->kind == SIM_DEPLOY &&
		    get_str(c, n, "function", ev->function, sizeof(ev->function), err, errlen))
			return -EINVAL;
		if (!ev->service[0])
			return cfg_error(c, n, err, errlen, "%s: needs service:", what);
		if (ev->rack[0] || ev->sw[0] || ev->agg[0] || ev->site[0] || ev->fraction != 1)
			return cfg_error(c, on ? on : n, err, errlen,
					 "%s: select hosts with on: {host: GLOB} only (a deploy "
					 "marker names its hosts by glob)", what);
		if (ev->value > 0 && !ev->function[0])
			return cfg_error(c, n, err, errlen, "deploy: cpu: needs function: (where "
					 "the regression spends its time)");
		if (ev->function[0] &&
		    check_function(c, cfg_get(n, "function"), ev->function, err, errlen))
			return -EINVAL;
		if (ev->function[0] && !(ev->value > 0))
			return cfg_error(c, cfg_get(n, "function"), err, errlen, "function: needs "
					 "cpu: (how much the function grows)");
	}
	ex = cfg_get(n, "expect");
	if (ex && ex->type != CFG_SEQ)
		return cfg_error(c, ex, err, errlen, "expect: expected a list of "
				 "{alertname: ..., label: value}");
	for (size_t i = 0; ex && i < ex->nchild; i++) {
		if (ev->nexpect == SIM_MAX_EXPECT)
			return cfg_error(c, &ex->child[i], err, errlen, "expect: at most %d entries",
					 SIM_MAX_EXPECT);
		if (parse_expect(c, &ex->child[i], &ev->expect[ev->nexpect++],
				 ev->kind != SIM_DEPLOY && ev->kind != SIM_ROLLBACK &&
				 ev->for_ms > 0, err, errlen))
			return -EINVAL;
	}
	if (ev->kind == SIM_ROLLBACK)
		return cfg_check_unknown(c, n, "name, inject, on, at, service, version, expect",
					 err, errlen);
	return cfg_check_unknown(c, n, ev->kind == SIM_DEPLOY ?
				 "name, inject, on, at, for, fraction, service, version, cpu, "
				 "function, expect" :
				 "name, inject, on, at, for, fraction, expect and the kind's "
				 "parameter (rate, factor or value)", err, errlen);
}

static int scenario_from_cfg(struct scenario *sc, const struct cfg *c, char *err, size_t errlen)
{
	const struct cfg_node *root = c->root, *fleet = NULL, *evs;
	uint64_t v, dur = 10ULL * 60 * NSEC_PER_SEC;

	memset(sc, 0, sizeof(*sc));
	sc->fleet = (struct sim_shape){ 64, 8, 2, 2 };
	if (!root) {
		snprintf(err, errlen, "%s: empty scenario", c->file);
		return -EINVAL;
	}
	if (get_str(c, root, "scenario", sc->name, sizeof(sc->name), err, errlen) ||
	    get_str(c, root, "description", sc->description, sizeof(sc->description), err,
		    errlen) ||
	    cfg_duration(c, root, "duration", &dur, err, errlen) ||
	    cfg_map(c, root, "fleet", &fleet, err, errlen))
		return -EINVAL;
	if (dur < NSEC_PER_SEC)
		return cfg_error(c, cfg_get(root, "duration"), err, errlen,
				 "duration: at least 1s");
	sc->duration_ms = dur / NSEC_PER_MSEC;
#define SHAPE(key, field, max)                                                        \
	do {                                                                          \
		v = sc->fleet.field;                                                  \
		if (cfg_uint(c, fleet, key, 1, max, &v, err, errlen))                 \
			return -EINVAL;                                               \
		sc->fleet.field = (uint32_t)v;                                        \
	} while (0)
	SHAPE("hosts", hosts, 1000000);
	SHAPE("hosts_per_rack", hosts_per_rack, 1000);
	SHAPE("racks_per_switch", racks_per_switch, 1000);
	SHAPE("switches_per_site", switches_per_site, 1000);
#undef SHAPE
	v = 0;
	if (cfg_uint(c, fleet, "switches_per_agg", 1, 1000, &v, err, errlen))
		return -EINVAL;
	sc->fleet.switches_per_agg = (uint32_t)v;
	if (v && sc->fleet.switches_per_site % v)
		return cfg_error(c, cfg_get(fleet, "switches_per_agg"), err, errlen,
				 "switches_per_agg: %u does not divide switches_per_site (%u): "
				 "an aggregation switch would span two sites", (unsigned)v,
				 sc->fleet.switches_per_site);
	if (fleet && cfg_get(fleet, "rack_sizes")) {
		const struct cfg_node *rs = cfg_get(fleet, "rack_sizes");

		((struct cfg_node *)rs)->used = 1;
		if (rs->type != CFG_SEQ || !rs->nchild || rs->nchild > SIM_MAX_RACK_SIZES)
			return cfg_error(c, rs, err, errlen, "rack_sizes: expected a list of 1 to "
					 "%d sizes, such as [8, 4, 12]", SIM_MAX_RACK_SIZES);
		if (cfg_get(fleet, "hosts_per_rack"))
			return cfg_error(c, rs, err, errlen, "rack_sizes: give it or "
					 "hosts_per_rack, not both");
		for (size_t i = 0; i < rs->nchild; i++) {
			const struct cfg_node *x = &rs->child[i];
			char *end = NULL;
			unsigned long n = x->type == CFG_SCALAR && x->value ?
					  strtoul(x->value, &end, 10) : 0;

			if (!end || *end || !x->value[0] || n < 1 || n > 1000)
				return cfg_error(c, x, err, errlen, "rack_sizes: expected a number of "
						 "hosts from 1 to 1000");
			sc->fleet.rack_sizes[sc->fleet.nrack_sizes++] = (uint32_t)n;
		}
	}
	if (fleet && cfg_check_unknown(c, fleet, "hosts, hosts_per_rack, rack_sizes, "
				       "racks_per_switch, switches_per_agg, switches_per_site",
				       err, errlen))
		return -EINVAL;
	evs = cfg_get(root, "events");
	if (evs && evs->type != CFG_SEQ)
		return cfg_error(c, evs, err, errlen, "events: expected a list");
	if (evs && evs->nchild) {
		sc->ev = calloc(evs->nchild, sizeof(*sc->ev));
		if (!sc->ev) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		for (size_t i = 0; i < evs->nchild; i++) {
			if (parse_event(c, &evs->child[i], sc->duration_ms, &sc->ev[sc->nev], err,
					errlen))
				return -EINVAL;
			sc->nev++;
		}
	}
	if (!sc->name[0])
		snprintf(sc->name, sizeof(sc->name), "%s", c->file);
	return cfg_check_unknown(c, root, "scenario, description, fleet, duration, events", err,
				 errlen);
}

int scenario_parse(struct scenario *sc, const char *name, const char *text, size_t len,
		   char *err, size_t errlen)
{
	struct cfg c;
	int ret;

	memset(sc, 0, sizeof(*sc));
	ret = cfg_parse(&c, name, text, len, err, errlen);
	if (ret)
		return ret;
	ret = scenario_from_cfg(sc, &c, err, errlen);
	cfg_free(&c);
	if (ret)
		scenario_free(sc);
	return ret;
}

int scenario_load(struct scenario *sc, const char *path, char *err, size_t errlen)
{
	char *text;
	size_t len;
	int ret;

	memset(sc, 0, sizeof(*sc));
	ret = cfg_read_file(path, &text, &len, err, errlen);
	if (ret)
		return ret;
	ret = scenario_parse(sc, path, text, len, err, errlen);
	free(text);
	return ret;
}

void scenario_free(struct scenario *sc)
{
	free(sc->ev);
	memset(sc, 0, sizeof(*sc));
}
