/*
 * inhibit.h - Alertmanager's inhibit_rules: a firing alert that matches a
 * rule's source matchers mutes the notifications of alerts that match its
 * target matchers and carry the same values of its `equal` labels (a label
 * both lack is equal).  A rack's page mutes its hosts' drive warnings; a
 * `severity: page` mutes the same alert's `warning`.
 *
 * The sources are the fleet's firing alerts as every alerter took them
 * (store/alert_index.h), not one alerter's memory, so whichever alerter
 * flushes a group mutes the same alerts.  As in Alertmanager, an alert
 * that matches a rule's source and target is not muted by alerts that
 * match both as well (so a rule never lets an alert mute itself or its
 * peers), and an inhibited alert is muted, never dropped: it is looked at
 * again at its group's interval and sent once its source resolves.
 */
#ifndef FL_ALERTER_INHIBIT_H
#define FL_ALERTER_INHIBIT_H

#include <stddef.h>

#include "core/config.h"
#include "model/alert.h"
#include "model/matcher.h"
#include "store/alert_group.h"

#define INHIBIT_MAX_EQUAL 16
#define INHIBIT_LABEL_MAX 128

struct inhibit_rule {
	struct matcher *src, *tgt;
	int nsrc, ntgt;
	char equal[INHIBIT_MAX_EQUAL][INHIBIT_LABEL_MAX];
	int nequal;
	int line;		/* in the config, for messages */
};

/*
 * The `inhibit_rules:` list n into *rules / *n: source_matchers,
 * source_match, source_match_re, and the target_ ones, equal.  A rule
 * without a target would mute nothing (and without a source, everything):
 * both are refused, as is any unknown key.  Returns 0, -EINVAL (file:line:
 * col in err) or -ENOMEM.
 */
int inhibit_rules_parse(const struct cfg *c, const struct cfg_node *n,
			struct inhibit_rule **rules, int *nrules, char *err, size_t errlen);

void inhibit_rules_free(struct inhibit_rule *rules, int n);

/* 1 when a matches some rule's target (its notifications can be inhibited). */
int inhibit_may_target(const struct inhibit_rule *rules, int n, const struct alert *a);

/*
 * The firing alert of src[0..nsrc) that inhibits a under some rule (its
 * index into src; *rule the rule's), or -1 when none does.
 */
int inhibit_source(const struct inhibit_rule *rules, int n, const struct alert_group_member *src,
		   int nsrc, const struct alert *a, int *rule);

#endif
