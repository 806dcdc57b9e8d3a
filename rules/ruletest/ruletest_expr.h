/*
 * ruletest_expr.h - one promql_expr_test entry of a rule test (ruletest.c
 * runs the test; this checks an expression's samples at its eval_time).
 */
#ifndef FL_RULETEST_EXPR_H
#define FL_RULETEST_EXPR_H

#include <stdint.h>
#include <stdio.h>

#include "core/config.h"
#include "rules/engine/engine.h"

/*
 * Evaluate entry ck's expr on what e holds at now_ms and compare with its
 * exp_samples as promtool does (the same samples, labels exactly, values
 * equal to 1e-9; a bare selector may name its metric).  What differs goes
 * to out, under test's name.  Returns 1 if it failed, else 0.
 */
int ruletest_expr_check(const struct cfg *c, const struct cfg_node *ck, struct engine *e,
			uint64_t now_ms, const char *test, FILE *out);

#endif
