/*
 * daemon_metrics.h - faultline-rules' own /metrics: what it watches, what
 * it could not read (per host), what it sent, and its rule groups under
 * the names Prometheus uses for its own.
 */
#ifndef FL_RULES_DAEMON_METRICS_H
#define FL_RULES_DAEMON_METRICS_H

#include <stdint.h>

struct engine;
struct outbox;
struct strbuf;
struct worker;

/* What the daemon knows that the engine does not. */
struct rules_daemon_stats {
	uint64_t backlog;	/* fl:alerts entries waiting for the alerters, last read */
	int reload_ok;		/* the last rule (re)load succeeded */
	double reload_ok_s;	/* when the rules last loaded (unix seconds) */
	int redis_up;
	long events;		/* alert events emitted */
	double eval_s;		/* the last evaluation round */
	uint64_t wakes;		/* evaluations a wake (fl:wake) made before the tick */
};

/* Replace sb's content with the metrics, Prometheus text format. */
void rules_metrics_render(const struct engine *e, const struct worker *w,
			  const struct outbox *ob, const struct rules_daemon_stats *st,
			  struct strbuf *sb);

#endif
