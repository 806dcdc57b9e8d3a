/*
 * baseline_part.h - this worker's part of a post-deploy verdict
 * (baseline_part.c): which hosts are on which side of a deploy, the minutes
 * and profiles of each side no other deploy touched, read a batch of hosts
 * per evaluation into a struct fleet_bpart that baseline.c judges alone or
 * merges with the other workers'.
 */
#ifndef FL_BASELINE_PART_H
#define FL_BASELINE_PART_H

#include <stddef.h>
#include <stdint.h>

#include "rules/engine/engine_internal.h"
#include "rules/engine/fleet.h"
#include "core/strmap.h"

/*
 * This worker's part of a verdict, computed a batch of hosts per
 * evaluation: reading a big fleet's minutes (or profiles) at once would
 * stall the evaluation loop for seconds (10,000 hosts x ~60 rollups, a
 * delta chain from each hour's start included).  The hosts are those live
 * when it began, less the ones another deploy touched.
 */
struct baseline_part {
	struct fleet_bpart b;
	char **hosts;
	size_t nhosts, next;
	struct strmap seen;		/* deployed hosts that reported, in b once */
	int done;
};

/*
 * Begin this engine's part of the verdict on deploy d for baseline rule r
 * (win: its live hosts); NULL on -ENOMEM.
 */
struct baseline_part *baseline_part_begin(const struct engine *e, const struct rule *r,
					  const struct deploy *d, const struct host_window *win,
					  size_t nwin);

/*
 * Read on for part p: batches of its hosts (their minutes over both of d's
 * windows, or their profiles) for a bounded time.  Returns 1 when every
 * host has been read (p->b complete), else 0.
 */
int baseline_part_step(const struct engine *e, const struct rule *r, const struct deploy *d,
		       struct baseline_part *p);

void baseline_part_free(struct baseline_part *p);

/*
 * The other markers that touched d's deployed hosts hosts[0..n) inside its
 * windows (w ms each side), "service version, ..." into out ("" when none):
 * what a train's verdict is confounded by.
 */
void baseline_train_of(const struct engine *e, const struct deploy *d, uint64_t w,
		       char *const *hosts, size_t n, char *out, size_t len);

/*
 * When deploy d_ts's last after-window minute slot (windows of w ms) is in
 * the 1-minute tier, delay_ms (engine_opts.rollups_delay_ms) after it ends.
 */
uint64_t baseline_minutes_ready(uint64_t d_ts, uint64_t w, uint64_t delay_ms);

#endif
