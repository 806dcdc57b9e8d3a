/*
 * fleet.h - partial aggregates of fleet-wide comparisons, as sharded rules
 * workers publish and merge them (fleet.c says the formats).
 */
#ifndef FL_RULES_FLEET_H
#define FL_RULES_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "model/histogram.h"
#include "model/profile.h"

/*
 * Sharded workers (rules/shard/shard.h): which hosts this engine evaluates, and
 * how it merges the comparisons that span the fleet with the other
 * workers' partial aggregates.  Not set: one engine sees the whole fleet.
 */
struct engine_fleet {
	void *arg;
	/* whether this worker evaluates host */
	int (*owns_host)(void *arg, const char *host);
	/* whether this worker judges the fleet-wide alerts (deploy verdicts) */
	int (*owns_fleet)(void *arg);
	/* publish this worker's partial aggregate of topic (replacing its previous one) */
	int (*publish)(void *arg, const char *topic, const void *blob, size_t len);
	/*
	 * Call cb with every other live worker's latest partial of topic.
	 * Returns 1 when every live worker has published one, 0 when some
	 * have not yet, < 0 when they cannot be read.
	 */
	int (*gather)(void *arg, const char *topic,
		      void (*cb)(const void *blob, size_t len, void *cbarg), void *cbarg);
};

/* ---- peer_ratio ---- */

/*
 * Publish this worker's peer groups (groups[i] -> hists[i]) under topic
 * and add every other worker's histograms of the same groups into hists.
 * Returns 0, or < 0 when the exchange failed (hists then hold this
 * worker's part only).
 */
int fleet_peer_merge(const struct engine_fleet *f, const char *topic, char *const *groups,
		     struct histogram *hists, size_t n);

/* ---- rollups ---- */

/*
 * A rollup's concentration test draws from the whole fleet: add the other
 * workers' live hosts and hits for rule (their previous interval's) to
 * this worker's *n and *k, after publishing these.  Returns 0, or < 0
 * (then *n and *k are this worker's alone).
 */
int fleet_population(const struct engine_fleet *f, const char *rule, uint64_t *n, uint64_t *k);

/* ---- deploy baselines ---- */

#define FLEET_SLOTS 60		/* 2 x BASELINE_POINTS: before, then after */

/* A deploy verdict's inputs over some hosts; sums of per-host parts. */
struct fleet_bpart {
	int quantile;			/* percentile rule: the slots are histograms */
	double dsum[FLEET_SLOTS], psum[FLEET_SLOTS];	/* deployed / peers: sum of values */
	uint64_t dn[FLEET_SLOTS], pn[FLEET_SLOTS];	/* ... and how many */
	struct histogram *dh, *ph;	/* percentile rules: [FLEET_SLOTS] each */
	struct histogram wd[2], wp[2];	/* whole windows, before [0] and after [1] */
	struct profile prof[4];		/* profile rules: deployed before, after; peers */
	int has_prof;
	char **hosts;			/* deployed hosts with data */
	int nhosts;
	int total;			/* hosts looked at */
};

int fleet_bpart_init(struct fleet_bpart *b, int quantile);
void fleet_bpart_free(struct fleet_bpart *b);
int fleet_bpart_add_host(struct fleet_bpart *b, const char *host);

/* Add partial src (of dst's kind) into dst.  Returns 0 or -ENOMEM. */
int fleet_bpart_add(struct fleet_bpart *dst, const struct fleet_bpart *src);

/* Encode b into *out (malloc'd, *outlen bytes).  Returns 0 or -ENOMEM. */
int fleet_bpart_encode(const struct fleet_bpart *b, char **out, size_t *outlen);

/*
 * Add the partial in blob (another worker's fleet_bpart_encode) into b.
 * Returns 0, or -EINVAL when blob is not one of b's kind (b unchanged), or
 * -ENOMEM.
 */
int fleet_bpart_merge_blob(struct fleet_bpart *b, const void *blob, size_t len);

#endif
