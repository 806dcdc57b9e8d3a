/*
 * remote_write.h - Prometheus remote write (protocol 1.0) out of the probe,
 * for the long history Redis is too dear for (docs/remote-write.md).
 *
 * At each boundary of the chosen tier (60 s by default) the probe offers
 * the snapshot of that second.  Every series becomes the samples
 * Prometheus would have stored had it scraped /metrics then: the same
 * names (prom.h), counters and histograms cumulative (_bucket with the
 * same bounds, _sum, _count), gauges their value; each labelled with
 * host="<the probe's host>" and the host's own labels (rack, switch...).
 * So rate(), increase() and histogram_quantile() over the receiver's copy
 * answer what faultline's tier of the same width holds.
 *
 * An offer is encoded at once into requests of at most
 * max_samples_per_send samples: a prometheus.WriteRequest
 * (proto/remote.proto), snappy-compressed.  Requests wait in a queue of at
 * most queue_samples samples; a sender thread POSTs them in order.  As
 * Prometheus' own queue does it: a 5xx, a 429 or no answer is retried with
 * backoff (min_backoff, doubled up to max_backoff) and holds the queue
 * behind it, so order is kept; any other answer outside 2xx drops that
 * request, logged with the receiver's words (it would never take it).  A
 * full queue drops its oldest requests.  Every sample offered is counted
 * once: sent, failed (refused) or dropped (queue full, or at exit).
 */
#ifndef FL_REMOTE_WRITE_H
#define FL_REMOTE_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "model/labels.h"
#include "model/snapshot.h"
#include "probes/prom.h"

struct remote_write_config {
	char *url;			/* http(s)://.../api/v1/write; "" off */
	uint64_t tier_ns;		/* 1 s, 60 s or 3600 s: one sample per series per tier */
	uint64_t timeout_ns;		/* one request */
	uint64_t queue_samples;		/* held at most, while the receiver is away */
	uint64_t max_samples_per_send;
	uint64_t min_backoff_ns, max_backoff_ns;
	char *bearer_token_file;	/* "": none (core/secret.h rules) */
	char *basic_auth_username;	/* "": none */
	char *basic_auth_password_file;
	char *ca_file;			/* "": the system's CAs */
	/*
	 * Called first in the sender thread (NULL: nothing), as the store's
	 * thread_start: the probe drops every capability there, since the
	 * thread talks to the network and was started before the main
	 * thread dropped its own.
	 */
	void (*thread_start)(void);
};

struct remote_write_stats {
	uint64_t sent, failed, dropped;	/* samples, each counted once */
	uint64_t retries;		/* requests sent again */
	uint64_t pending;		/* samples queued now */
	uint64_t last_sent_ms;		/* wall time of the last accepted request; 0 never */
};

struct remote_write;

/*
 * Check cfg, read its secrets and start the sender; cfg's strings must
 * outlive the sender (the probe's config does).  host and labels (the
 * probe's own, may be NULL/0) go on every series; b sets histogram bounds
 * as on /metrics (NULL: defaults).  Returns NULL with the reason in err.
 */
struct remote_write *remote_write_open(const struct remote_write_config *cfg, const char *host,
				       const struct label *labels, uint32_t nlabels,
				       const struct prom_buckets *b, char *err, size_t errlen);

/*
 * Offer a tier-1 snapshot.  The first one in each tier window (and the
 * very first) is encoded and queued; the others return 0 at once.
 * Returns the samples queued, or -ENOMEM.
 */
int remote_write_offer(struct remote_write *rw, const struct snapshot *s);

void remote_write_get_stats(struct remote_write *rw, struct remote_write_stats *st);

/*
 * Give the sender up to grace_ns to empty the queue, then stop it; what is
 * left counts as dropped (and is logged).  NULL is a no-op.
 */
void remote_write_close(struct remote_write *rw, uint64_t grace_ns);

/*
 * The samples of s as remote write would send them, each series' labels
 * sorted with __name__: calls fn once per sample.  Returns the count.
 * With coarse (scratch the caller owns), histograms as the rollup tiers
 * hold them (hist_coarsen), which remote_write_offer sends for a tier of a
 * minute or more, so that what Prometheus answers is what faultline's own
 * tier does; NULL: as they are.  For tests and the reference;
 * remote_write_offer encodes the same.
 */
typedef void (*remote_write_sample_fn)(const struct label *labels, uint32_t nlabels,
				       double value, int64_t ts_ms, void *arg);
size_t remote_write_samples(const struct snapshot *s, const char *host, const struct label *labels,
			    uint32_t nlabels, const struct prom_buckets *b,
			    struct histogram *coarse, remote_write_sample_fn fn, void *arg);

#endif
