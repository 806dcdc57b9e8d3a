/*
 * daemon_metrics.c - faultline-rules' own /metrics; see daemon_metrics.h.
 */
#include "rules/daemon_metrics.h"

#include <stdio.h>

#include "core/promtext.h"
#include "core/strbuf.h"
#include "rules/engine/engine.h"
#include "rules/shard/outbox.h"
#include "rules/shard/worker.h"

/*
 * One line per rule group of what (0 evaluations, 1 failures, 2 last
 * duration, 3 rules, 4 interval), labelled rule_group="FILE;GROUP" as
 * Prometheus labels its groups.
 */
static void render_groups(const struct engine *e, struct strbuf *sb, const char *name, int what)
{
	const struct ruleset *rs = engine_rules(e);
	char id[512];

	for (int g = 0; g < rs->ngroups; g++) {
		struct engine_group_stats st;

		engine_group_stats(e, g, &st);
		snprintf(id, sizeof(id), "%s;%s", rs->groups[g].file, rs->groups[g].name);
		strbuf_addf(sb, "%s{", name);
		promtext_label(sb, "rule_group", id, 1);
		switch (what) {
		case 0: strbuf_addf(sb, "} %llu\n", (unsigned long long)st.evaluations); break;
		case 1: strbuf_addf(sb, "} %llu\n", (unsigned long long)st.failures); break;
		case 2: strbuf_addf(sb, "} %.6f\n", st.last_duration_s); break;
		case 3: strbuf_addf(sb, "} %d\n", rs->groups[g].nrules); break;
		default: strbuf_addf(sb, "} %.3f\n", (double)rs->groups[g].interval_ns / 1e9); break;
		}
	}
}

static void render_host_bad(const char *host, uint64_t n, void *arg)
{
	strbuf_adds(arg, "faultline_rules_host_undecodable_entries_total{");
	promtext_label(arg, "host", host, 1);
	strbuf_addf(arg, "} %llu\n", (unsigned long long)n);
}

void rules_metrics_render(const struct engine *e, const struct worker *w,
			  const struct outbox *ob, const struct rules_daemon_stats *st,
			  struct strbuf *sb)
{
	int queued = ob->nqueue;

	struct engine_counts n;

	engine_counts(e, &n);
	strbuf_reset(sb);
	strbuf_addf(sb, "# HELP faultline_rules_alert_backlog fl:alerts entries waiting for the "
		    "alerters (unread or unacknowledged).\n"
		    "# TYPE faultline_rules_alert_backlog gauge\n"
		    "faultline_rules_alert_backlog %llu\n", (unsigned long long)st->backlog);
	strbuf_addf(sb, "# HELP faultline_rules_events_dropped_total Alert events dropped because "
		    "more than 100000 alerts waited for Redis (each logged).\n"
		    "# TYPE faultline_rules_events_dropped_total counter\n"
		    "faultline_rules_events_dropped_total %llu\n"
		    "# HELP faultline_rules_events_unreplicated Alert events Redis took that "
		    "--wait-replicas replicas have not confirmed yet.\n"
		    "# TYPE faultline_rules_events_unreplicated gauge\n"
		    "faultline_rules_events_unreplicated %d\n",
		    (unsigned long long)ob->dropped, ob->nunconfirmed);
	if (w)
		strbuf_addf(sb, "# HELP faultline_rules_worker_partitions Partitions of the fleet "
			    "this --shard worker holds (of 65).\n"
			    "# TYPE faultline_rules_worker_partitions gauge\n"
			    "faultline_rules_worker_partitions %zu\n"
			    "# HELP faultline_rules_workers_live Live --shard workers this one sees.\n"
			    "# TYPE faultline_rules_workers_live gauge\n"
			    "faultline_rules_workers_live %zu\n", worker_partitions(w), worker_peers(w));
	strbuf_addf(sb, "# HELP faultline_rules_hosts Hosts the engine knows (the registry).\n"
		    "# TYPE faultline_rules_hosts gauge\nfaultline_rules_hosts %zu\n", n.hosts);
	strbuf_addf(sb, "# HELP faultline_rules_undecodable_entries_total Stream entries that "
		    "could not be read (all hosts).\n"
		    "# TYPE faultline_rules_undecodable_entries_total counter\n"
		    "faultline_rules_undecodable_entries_total %llu\n",
		    (unsigned long long)n.undecodable);
	strbuf_addf(sb, "# HELP faultline_rules_oversize_reads_total Host reads refused unread "
		    "because a page of the host's entries was over the read bound.\n"
		    "# TYPE faultline_rules_oversize_reads_total counter\n"
		    "faultline_rules_oversize_reads_total %llu\n"
		    "# HELP faultline_rules_quarantined_hosts Hosts not read now: their entries are "
		    "over the read bound (paged as HostUndecodable).\n"
		    "# TYPE faultline_rules_quarantined_hosts gauge\n"
		    "faultline_rules_quarantined_hosts %zu\n",
		    (unsigned long long)n.oversize, n.quarantined);
	strbuf_addf(sb, "# HELP faultline_rules_host_undecodable_entries_total Stream entries of "
		    "the host that could not be read.\n"
		    "# TYPE faultline_rules_host_undecodable_entries_total counter\n");
	engine_undecodable(e, render_host_bad, sb);
	/* per group, under the names Prometheus uses for its own rule groups */
	strbuf_adds(sb, "# HELP prometheus_rule_evaluations_total Rule evaluations, per group.\n"
		    "# TYPE prometheus_rule_evaluations_total counter\n");
	render_groups(e, sb, "prometheus_rule_evaluations_total", 0);
	strbuf_adds(sb, "# HELP prometheus_rule_evaluation_failures_total Rule evaluations that "
		    "failed (logged), per group.\n"
		    "# TYPE prometheus_rule_evaluation_failures_total counter\n");
	render_groups(e, sb, "prometheus_rule_evaluation_failures_total", 1);
	strbuf_adds(sb, "# HELP prometheus_rule_group_last_duration_seconds How long the group's "
		    "last evaluation took.\n"
		    "# TYPE prometheus_rule_group_last_duration_seconds gauge\n");
	render_groups(e, sb, "prometheus_rule_group_last_duration_seconds", 2);
	strbuf_adds(sb, "# HELP prometheus_rule_group_rules The number of rules in the group.\n"
		    "# TYPE prometheus_rule_group_rules gauge\n");
	render_groups(e, sb, "prometheus_rule_group_rules", 3);
	strbuf_adds(sb, "# HELP prometheus_rule_group_interval_seconds The group's interval.\n"
		    "# TYPE prometheus_rule_group_interval_seconds gauge\n");
	render_groups(e, sb, "prometheus_rule_group_interval_seconds", 4);
	strbuf_addf(sb, "# HELP prometheus_config_last_reload_successful Whether the last rule "
		    "(re)load succeeded.\n# TYPE prometheus_config_last_reload_successful gauge\n"
		    "prometheus_config_last_reload_successful %d\n"
		    "# HELP prometheus_config_last_reload_success_timestamp_seconds When the rules "
		    "last (re)loaded successfully.\n"
		    "# TYPE prometheus_config_last_reload_success_timestamp_seconds gauge\n"
		    "prometheus_config_last_reload_success_timestamp_seconds %.3f\n",
		    st->reload_ok, st->reload_ok_s);
	strbuf_addf(sb, "# HELP faultline_rules_events_total Alert events emitted.\n"
		    "# TYPE faultline_rules_events_total counter\nfaultline_rules_events_total %ld\n",
		    st->events);
	strbuf_addf(sb, "# HELP prometheus_notifications_queue_length Alert events not yet in "
		    "fl:alerts.\n# TYPE prometheus_notifications_queue_length gauge\n"
		    "prometheus_notifications_queue_length %d\n", queued);
	strbuf_addf(sb, "# HELP faultline_rules_evaluation_seconds The last evaluation round, "
		    "every group.\n"
		    "# TYPE faultline_rules_evaluation_seconds gauge\n"
		    "faultline_rules_evaluation_seconds %.6f\n", st->eval_s);
	strbuf_addf(sb, "# HELP faultline_rules_wake_evaluations_total Evaluations made before "
		    "the tick because a probe named its host in fl:wake.\n"
		    "# TYPE faultline_rules_wake_evaluations_total counter\n"
		    "faultline_rules_wake_evaluations_total %llu\n", (unsigned long long)st->wakes);
	strbuf_addf(sb, "# HELP faultline_rules_redis_up 1 while the engine's Redis answers.\n"
		    "# TYPE faultline_rules_redis_up gauge\nfaultline_rules_redis_up %d\n", st->redis_up);
}
