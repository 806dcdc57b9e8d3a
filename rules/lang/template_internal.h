/*
 * template_internal.h - what template.c (actions: arguments, functions,
 * printf, rendering one) and template_control.c (if / else / range, the
 * parsed tree, rules_template and rules_template_check) share, and nobody
 * else.
 */
#ifndef FL_TEMPLATE_INTERNAL_H
#define FL_TEMPLATE_INTERNAL_H

#include <stddef.h>

#include "model/snapshot.h"

enum tmpl_arg { ARG_VALUE, ARG_LABEL, ARG_VAR, ARG_EXTURL, ARG_EXTLABEL };
enum tmpl_fn { TF_NONE, TF_HUMANIZE, TF_HUMANIZE1024, TF_DURATION, TF_PERCENT, TF_TITLE,
	       TF_UPPER, TF_LOWER, TF_PRINTF };

/* One action that prints: {{ ARG }}, {{ ARG | FN }}, {{ FN ARG }}, printf. */
struct tmpl_action {
	enum tmpl_arg arg;
	char label[128];		/* ARG_LABEL: its name; ARG_VAR: $k, $v or "." */
	enum tmpl_fn fn;
	char format[32];		/* printf's, with its conversion */
	char conv;			/* that conversion: f e g d s v */
};

/* Next word of [s, end) (after spaces) into w; a quoted string keeps its quotes.  Returns past it. */
const char *tmpl_word(const char *s, const char *end, char *w, size_t wl);

/* p past spaces, never past e. */
const char *tmpl_skip_spaces(const char *p, const char *e);

/* Word w as an argument into a: 0, or -1 if it is none. */
int tmpl_arg_of(const char *w, struct tmpl_action *a);

/* The function named w, or TF_NONE. */
enum tmpl_fn tmpl_fn_of(const char *w);

/*
 * Parse one action's text [s, end) into a.  0, or -1 with the reason in
 * why and *at the offset (from s) it concerns.
 */
int tmpl_parse_action(const char *s, const char *end, struct tmpl_action *a, char *why,
		      size_t wl, size_t *at);

/*
 * The next action in p: its "{{" at *open, its text [*s, *e) without the
 * trim markers, the text after its "}}" at *close; *trim_left /
 * *trim_right for "{{- " and " -}}".  Returns 1, 0 (no action left) or -1
 * ("{{" without "}}").
 */
int tmpl_next(const char *p, const char **open, const char **s, const char **e,
	      const char **close, int *trim_left, int *trim_right);

/*
 * Render action a for value and labels into out; var is the string an
 * argument other than $value and $labels.NAME stands for.
 */
void tmpl_render(const struct tmpl_action *a, double value, const struct label *labels,
		 int nlabels, const char *var, char *out, size_t len);

#endif
