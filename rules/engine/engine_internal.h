/*
 * engine_internal.h - what the rules engine's modules share, and nobody
 * else: the host history, alert instances, verdicts, matches, and the
 * functions one module offers another.
 *
 *   history.c        hosts' snapshot history, reading it from Redis,
 *                    unreadable and future-dated entries
 *   alert_state.c    alert instances (for, keep_firing_for, resolution),
 *                    the events they emit, the checkpoint
 *   domain_rollup.c  host matches -> failure-domain alerts
 *   baseline.c       post-deploy verdicts: when to judge, gathering, holding
 *   baseline_part.c  this worker's part of a verdict: sides, train windows, reads
 *   engine.c         setup, reload, one evaluation of every rule
 */
#ifndef FL_ENGINE_INTERNAL_H
#define FL_ENGINE_INTERNAL_H

#include "rules/engine/engine.h"
#include "rules/lang/eval.h"

/* Undecodable entries of a host within this window raise HostUndecodable. */
#define BAD_WINDOW_MS 60000
#define BAD_BOUND 3
/*
 * A host whose entries are larger than the read bound (STORE_READ_PAGE_MAX)
 * is not read for this long, and pages HostUndecodable meanwhile; then it is
 * tried again (once per quarantine: the fleet's interval never waits on it).
 */
#define QUARANTINE_MS (10 * 60000ULL)
/* Entries dated further ahead than this wait until their time comes. */
#define FUTURE_SLACK_MS 10000

/* The engine (opaque outside the rules engine's modules). */
struct engine {
	struct ruleset rules;
	struct host_state *hosts;
	size_t nhosts, cap;
	struct strmap host_index;	/* host name -> index in hosts */
	uint64_t keep_ms;		/* history kept per host */
	struct engine_opts opts;	/* what the daemon set; a reload keeps it */
	struct rule_inst *state;	/* per rule, flattened over groups */
	int nstate;
	struct rule silent_rule;
	struct rule undecodable_rule;
	struct rule backlog_rule;	/* AlertDeliveryBacklog */
	struct rule dead_rule;		/* AlertsDeadLettered */
	uint64_t dead_letters;		/* written to fl:alerts:dead in the last hour */
	uint64_t backlog, backlog_oldest_ms;	/* fl:alerts entries not yet delivered */
	uint64_t undecodable;		/* entries that could not be read, ever */
	uint64_t oversize;		/* hosts' reads refused over the read bound, ever */
	uint64_t eval_errors;		/* rule evaluations that failed, ever */
	struct engine_group_stats *gstats;	/* per group of rules */
	int cur_group;			/* the group being evaluated; -1: none */
	int domains_default;		/* opts.domains are the built-in levels */
	struct strmap said_levels;	/* "rule/level" skipped levels already logged */
	uint64_t silent_grace_until_ms;	/* no new HostSilent before (spools draining) */
	uint64_t bad_name_said_ms;
	uint64_t inhibited;		/* host alerts explained by a domain alert */
	struct deploy *deploys;		/* markers baseline rules judge, oldest first */
	int ndeploys;
	/*
	 * The series names the rules read back in time (expr_history_names):
	 * only they keep history; history_all: every series does.
	 */
	struct strmap history_names;
	int history_all;
	struct columns_policy keep_policy;	/* arg set at use: the engine moves on reload */
	uint64_t evaluated_ms;		/* the last evaluation's time (checkpoint records' at_ms) */
	uint64_t state_gen;		/* bumped when an alert starts, fires or ends */
};

struct host_state {
	char name[200];			/* store_host_valid: shorter than 200 */
	struct columns hist;		/* its history; the newest point decoded */
	uint64_t first_seen_ms;		/* when the registry first named it */
	uint64_t read_ms;		/* newest entry id read, decodable or not */
	uint64_t bad_ms[8];		/* ids (or read times) of the last undecodable entries */
	uint32_t nbad;			/* undecodable entries ever */
	uint64_t said_ms;		/* last warning about this host */
	uint64_t quarantine_until_ms;	/* its entries are over the read bound: not read */
	uint64_t watched_ms;		/* first evaluation this engine held it live in */
};

struct instance {
	char fp[17];
	struct label *labels;
	int nlabels;
	double value;
	int firing;
	uint64_t since_ms, last_true_ms;
	uint64_t fired_ms;		/* when it went firing (after `for`) */
	char **hosts;			/* domain alerts: affected hosts */
	int nhosts, total_hosts;
	char domain_label[64], domain_value[128];
	char domain_same[192];		/* outer levels of the same hosts (alert.h) */
	double domain_p;		/* its p-value (alert.h); NAN: not known */
	char deploy_service[128];	/* baseline alerts: the deploy judged */
	uint64_t deploy_at_ms, deploy_base_ms;
	int seen;
};

/* A baseline rule's verdict on one deploy, computed once per deploy. */
struct verdict {
	char service[128];		/* one verdict per service: its newest deploy's */
	char key[300];			/* service@version@ts of the deploy judged */
	int fires;
	double value;			/* after / before, relative to peers if any */
	char **hosts;			/* deployed hosts with data */
	int nhosts, total;
	char function[256];		/* profile baselines: the frame whose own time grew */
	char path[512];			/* ... and the heaviest call path to it, root first */
	char train[256];		/* other deploys on its hosts inside its windows */
	int confounded;			/* too little of its windows was theirs alone */
	char status[24];		/* "regression", "no regression", "confounded", ... */
	struct baseline_part *part;	/* this engine's part while it is read (baseline.c) */
	/* sharded workers */
	char pending[300];		/* the deploy being judged (key), not judged yet */
	char published[300];		/* the deploy whose part this worker published */
	int waited;			/* evaluations the judge waited for parts */
	uint64_t waiting_since_ns;	/* monotonic: when it began to (0: not yet) */
};

/*
 * A rolled-up rule's current hits and when each began (domain_rollup.c):
 * the onsets that make hits beginning together evidence of a common cause.
 */
struct hit_onsets {
	struct strmap index;		/* hit host -> slot */
	uint64_t *ms;			/* per slot: its onset (ms), 0 not known */
	size_t n;
	uint64_t prev_eval_ms;		/* the rule's previous evaluation, 0 none */
};

void hit_onsets_free(struct hit_onsets *o);

struct rule_inst {
	char name[128];
	uint64_t err_said_ms;		/* last evaluation error logged (once a minute) */
	struct instance *inst;
	int n, cap;
	struct verdict **verdicts;	/* baseline rules: per service */
	int nverdicts;
	struct hit_onsets *onsets;	/* rolled-up rules, once evaluated */
};

/* One matching element: labels and the hosts it stands for. */
struct match {
	struct label *labels;
	int nlabels;
	double value;
	const char *host;		/* for host-level matches */
	char **hosts;			/* for domain matches */
	int nhosts, total;
	const char *dlabel, *dvalue;	/* domain matches: the innermost level's name */
	char dsame[192];		/* ... and the outer levels with the same hosts: "switch=sw1" */
	double dp;			/* domain matches: its p-value (domain_rollup.c, page) */
	const struct deploy *deploy;	/* baseline matches */
	uint64_t base_ms;
};

/* What annotation templates see of the engine ($externalURL, $externalLabels). */
static inline struct rules_template_ctx engine_template_ctx(const struct engine *e)
{
	return (struct rules_template_ctx){ .external_url = e->opts.generator_url,
					    .external_labels = e->opts.external_labels,
					    .nexternal = e->opts.nexternal_labels };
}

/* history.c */
/* Drop the history of the hosts opts.fleet no longer gives this engine. */
void history_forget_hosts(struct engine *e);

/* Undecodable entries of h within BAD_WINDOW_MS before now. */
int history_recent_bad(const struct host_state *h, uint64_t now);

/*
 * Keep element x of recording rule r's result in host h's newest snapshot:
 * a gauge named r->name with x's labels but host and h's own (rack,
 * switch...), r's labels over them; updated if that snapshot has it
 * already.  Returns 0 or -ENOMEM.
 */
int history_record(struct engine *e, struct host_state *h, const struct rule *r,
		   const struct velem *x);

/* alert_state.c */
void alert_state_free_instance(struct instance *in);
/* Update rule r's instances with this evaluation's matches, emitting changes. */
void alert_state_track(struct engine *e, const struct rule *r, struct rule_inst *ri,
		       struct match *m, int nm, uint64_t now, engine_event_cb cb, void *arg);
/* An evaluation of r failed: counted, logged once a minute, state kept. */
void alert_state_eval_failed(struct engine *e, const struct rule *r, struct rule_inst *ri,
			     uint64_t now, const char *err);

/*
 * The alert's labels as sent, into out (room for n + r->nlabels + 2):
 * alertname, severity, the match's labels, then the rule's labels, which
 * override a match label of the same name.  Returns how many.
 */
uint32_t alert_state_labels(const struct rule *r, const struct label *l, int n, struct label *out);

/* domain_rollup.c */
/*
 * Roll the host matches m[0..nm) of r up along r's domains over the hosts
 * live[0..nlive) at time now; domain matches and the host matches left go
 * to out.  onsets (NULL: none kept) holds when each hit began, updated
 * here (made on first use).  Returns how many, or -ENOMEM.
 */
int domain_rollup(struct engine *e, const struct rule *r, struct hit_onsets **onsets,
		  uint64_t now, struct match *m, int nm,
		  const struct host_state **live, size_t nlive, struct match *out);

/* baseline.c */
void baseline_verdict_free(struct verdict *v);
/* Free every verdict of ri. */
void baseline_verdicts_free(struct rule_inst *ri);
void baseline_run(struct engine *e, const struct rule *r, struct rule_inst *ri,
		  const struct host_window *win, size_t nwin, uint64_t now, engine_event_cb cb,
		  void *arg);

#endif
