/*
 * sim.h - the fleet simulator: a generated fleet's probes, in Redis.
 *
 * sim_run() writes what N probes would write — 1 s snapshots and their
 * minute/hour rollups, 10 s CPU profile windows, drive records with a
 * month of daily wear points, deploy markers — through the same store
 * code the probe uses (store.h), for a scenario's duration, with the
 * scenario's conditions injected (scenario.h).
 *
 * Topology is generated: host i sits in rack i / hosts_per_rack, rack r
 * under switch r / racks_per_switch, switch s in site s /
 * switches_per_site.  Hosts are named after where they are,
 * "sw003-r0012-h05", and report rack/switch/site as their own labels, as
 * a probe does with `labels:` in its config, so no topology file is
 * needed.
 *
 * Time: the scenario starts at start_ms (wall clock).  Everything up to
 * now is written as fast as Redis takes it (backfill); with pace set, the
 * rest follows the wall clock, one snapshot per host per second, as a
 * live fleet would.  Without pace the whole scenario is written at once
 * (then start_ms + duration should not lie in the future).
 *
 * Each host's behaviour is its own deterministic random walk (seeded), so
 * two runs of one scenario write the same fleet.
 */
#ifndef FL_SIM_H
#define FL_SIM_H

#include <stdint.h>
#include <stdio.h>

#include "sim/scenario.h"

struct sim_opts {
	const char *url;		/* Redis */
	struct sim_shape shape;		/* non-zero fields override the scenario's */
	uint64_t start_ms;		/* wall-clock time of the scenario's t = 0 */
	uint64_t duration_ms;		/* 0: the scenario's */
	int pace;			/* follow the wall clock once caught up */
	unsigned seed;
	const char *timeline;		/* write the timeline JSON here, or NULL */
	int profiles;			/* write 10 s profile windows */
	int chunked;			/* ended minutes of 1 s as chunks, as a probe stores them */
	volatile int *stop;		/* set asynchronously to end early, or NULL */
};

struct sim_stats {
	uint64_t snapshots, rollups, profiles, drive_records, deploys;
	uint64_t hosts;
	double wall_s;
};

/*
 * Run scenario sc as o says.  The timeline (what was injected where and
 * when, and the pages each event should cause) is written before the first
 * snapshot.  Returns 0, or -errno with the reason in err (Redis URL,
 * a deploy glob that selects nothing...).
 */
int sim_run(const struct scenario *sc, const struct sim_opts *o, struct sim_stats *stats,
	    char *err, size_t errlen);

/* Name of host i of a fleet of shape sh into buf; returns buf. */
char *sim_host_name(const struct sim_shape *sh, uint32_t i, char *buf, size_t len);

#endif
