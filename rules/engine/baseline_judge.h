/*
 * baseline_judge.h - judging a deploy from the merged parts every worker
 * published (rules/engine/fleet.h's fleet_bpart): the value verdict (the deployed
 * hosts against themselves before and against the undeployed peers, with
 * a significance test) and the CPU-profile verdict (the function whose
 * share grew).  Pure functions of their inputs; baseline.c gathers them.
 */
#ifndef FL_RULES_BASELINE_JUDGE_H
#define FL_RULES_BASELINE_JUDGE_H

#include "rules/engine/engine_internal.h"
#include "rules/engine/fleet.h"

struct deploy;

#define BASELINE_POINTS 30		/* values per window compared */
/* A deploy train's sides: the fewest minutes no other deploy touched that are judged. */
#define BASELINE_MIN_TRAIN_POINTS 3

/*
 * Judge deploy d for baseline rule r from the merged partial bp into v:
 * BASELINE_POINTS slots before the deploy and as many after, each side
 * relative to its own pre-deploy median, so a load shift that moves
 * everybody cancels out.
 */
void baseline_judge(const struct rule *r, const struct deploy *d, const struct fleet_bpart *bp,
		    struct verdict *v);

/*
 * The profile verdict: the function whose share of the deployed hosts'
 * CPU grew most beyond the peers' growth, if by at least profile_share
 * points and significantly (two-proportion z-test on sample counts).
 */
void baseline_judge_profile(const struct rule *r, const struct deploy *d,
			    const struct fleet_bpart *bp, struct verdict *v);

#endif
