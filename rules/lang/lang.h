/*
 * lang.h - rules/lang, the rules' language: what a rule file says and what
 * an expression computes, and nothing about where the data comes from.
 *
 * Layer contract.  rules/lang is the bottom layer of rules/: it includes
 * lib/ and itself only (the build compiles it with no other path), holds
 * no global state, does no I/O beyond reading the files it is named, and
 * never talks to Redis, keeps time or knows which worker owns a host.
 * Everything it evaluates is handed to it:
 *
 *   rules.h      rule files (YAML groups of alerting and recording rules,
 *                rollups, baselines) parsed, with file:line:col errors
 *   expr.h       PromQL-shaped expressions: lexer (expr_lex.c), parser
 *                (expr.c), the function table and its checks (expr_fns.c)
 *   eval.h       the evaluator over hosts' windows (columns.h): selectors
 *                (eval.c), range functions (range_fns.c), aggregations
 *                and element functions (vector_fns.c), binary operators
 *                and vector matching (vector_match.c), minute rollups
 *                (minute_eval.c).  peer_ratio reaches beyond the hosts it
 *                is given only through the struct eval_peers its caller
 *                passes in (eval_sharded)
 *   columns.h    a host's recent snapshots as columns (hist_pack.h packs
 *                their histograms)
 *   template.c   annotation templates ($labels, $value, humanize, ...) and
 *                their control flow (template_control.c)
 *
 * Above it: rules/engine (alert state over time), then rules/shard and
 * rules/ruletest; the daemon (rules/main.c) uses them all.
 */
#ifndef FL_RULES_LANG_H
#define FL_RULES_LANG_H

#include "rules/lang/eval.h"
#include "rules/lang/expr.h"
#include "rules/lang/rules.h"

#endif
