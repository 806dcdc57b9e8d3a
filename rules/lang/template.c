/*
 * template.c - annotation templates; see rules.h (rules_template).
 *
 * The part of Go's text/template that Prometheus' alerting
 * rules use, checked when the rule file is read.  An action is
 *
 *   {{ ARG }}  {{ ARG | FN }}  {{ FN ARG }}  {{ printf "FORMAT" ARG }}
 *   {{ ARG | printf "FORMAT" }}, with "{{- " and " -}}" trimming the white
 * space on their side as in Go
 *
 * with ARG $value, $labels.NAME or .Value / .Labels.NAME (or a range's
 * variable), FN one of humanize, humanize1024, humanizeDuration,
 * humanizePercentage, title, toUpper, toLower, and FORMAT holding one
 * conversion (%f %e %g %d %s %v, flags, width, precision); and if / else
 * if / else / end and range over $labels (template_control.c).
 * Anything else (with, define, variables outside a range, other
 * functions) is refused at `rules check` with its position, never
 * rendered empty.
 */
#include "rules/lang/rules.h"
#include "rules/lang/template_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	enum tmpl_fn fn;
} tmpl_fns[] = {
	{ "humanize", TF_HUMANIZE }, { "humanize1024", TF_HUMANIZE1024 },
	{ "humanizeDuration", TF_DURATION }, { "humanizePercentage", TF_PERCENT },
	{ "title", TF_TITLE }, { "toUpper", TF_UPPER }, { "toLower", TF_LOWER },
	{ "printf", TF_PRINTF },
};

/* Next word of s (after spaces) into w; a quoted string keeps its quotes.  Returns past it. */
const char *tmpl_word(const char *s, const char *end, char *w, size_t wl)
{
	size_t n = 0;

	while (s < end && *s == ' ')
		s++;
	if (s < end && *s == '"') {
		w[n++] = *s++;
		while (s < end && *s != '"' && n + 2 < wl) {
			if (*s == '\\' && s + 1 < end)
				w[n++] = *s++;
			w[n++] = *s++;
		}
		if (s < end && *s == '"' && n + 1 < wl)
			w[n++] = *s++;
	} else {
		while (s < end && *s != ' ' && *s != '|' && n + 1 < wl)
			w[n++] = *s++;
	}
	w[n] = 0;
	return s;
}

/* p past spaces, never past e. */
const char *tmpl_skip_spaces(const char *p, const char *e)
{
	while (p < e && *p == ' ')
		p++;
	return p;
}

int tmpl_arg_of(const char *w, struct tmpl_action *a)
{
	if (!strcmp(w, "$value") || !strcmp(w, ".Value")) {
		a->arg = ARG_VALUE;
		return 0;
	}
	if ((!strncmp(w, "$labels.", 8) && w[8]) || (!strncmp(w, ".Labels.", 8) && w[8])) {
		a->arg = ARG_LABEL;
		snprintf(a->label, sizeof(a->label), "%s", w + 8);
		return 0;
	}
	if (!strcmp(w, "$externalURL") || !strcmp(w, ".ExternalURL")) {
		a->arg = ARG_EXTURL;
		return 0;
	}
	if ((!strncmp(w, "$externalLabels.", 16) && w[16]) ||
	    (!strncmp(w, ".ExternalLabels.", 16) && w[16])) {
		a->arg = ARG_EXTLABEL;
		snprintf(a->label, sizeof(a->label), "%s", w + 16);
		return 0;
	}
	/* a range's variables ($k, $v) and its dot; whether one is in scope is checked later */
	if ((w[0] == '$' && w[1] && strcmp(w, "$labels") && strcmp(w, "$externalLabels")) ||
	    !strcmp(w, ".")) {
		a->arg = ARG_VAR;
		snprintf(a->label, sizeof(a->label), "%s", w);
		return 0;
	}
	return -1;
}

/* printf's format: one conversion.  0 or -1. */
static int tmpl_format(const char *w, struct tmpl_action *a)
{
	size_t n = strlen(w);
	int conv = 0;

	if (n < 2 || w[0] != '"' || w[n - 1] != '"' || n - 2 >= sizeof(a->format))
		return -1;
	snprintf(a->format, sizeof(a->format), "%.*s", (int)(n - 2), w + 1);
	for (const char *p = a->format; *p; p++) {
		if (*p != '%')
			continue;
		if (p[1] == '%') {
			p++;
			continue;
		}
		p++;
		while (*p && strchr("-+ #0", *p))
			p++;
		while (*p && (isdigit((unsigned char)*p) || *p == '.'))
			p++;
		if (!*p || !strchr("fegdsv", *p) || conv++)
			return -1;
		a->conv = *p;
	}
	return conv == 1 ? 0 : -1;
}

/*
 * Parse one action's text [s, end) into a.  0, or -1 with the reason in
 * why and *at the offset (from s) it concerns.
 */
enum tmpl_fn tmpl_fn_of(const char *w)
{
	for (size_t i = 0; i < sizeof(tmpl_fns) / sizeof(tmpl_fns[0]); i++)
		if (!strcmp(w, tmpl_fns[i].name))
			return tmpl_fns[i].fn;
	return TF_NONE;
}

/* printf's quoted format, the next word after *p (advanced past it).  0 or -1. */
static int tmpl_take_format(const char **p, const char *end, struct tmpl_action *a)
{
	char w[160];

	*p = tmpl_word(*p, end, w, sizeof(w));
	return tmpl_format(w, a);
}

/*
 * Parse one action's text [s, end) into a: ARG [| FN ["FORMAT"]], or FN
 * ["FORMAT"] ARG.  0, or -1 with the reason in why and *at the offset
 * (from s) it concerns.
 */
int tmpl_parse_action(const char *s, const char *end, struct tmpl_action *a,
			     char *why, size_t wl, size_t *at)
{
	const char *s0 = s, *p, *fn_at;
	char w1[160], w2[160];
	int piped;

	memset(a, 0, sizeof(*a));
	s = tmpl_skip_spaces(s, end);
	*at = (size_t)(s - s0);
	p = tmpl_word(s, end, w1, sizeof(w1));
	if (!w1[0]) {
		snprintf(why, wl, "empty action");
		return -1;
	}
	piped = !tmpl_arg_of(w1, a);
	if (piped) {
		p = tmpl_skip_spaces(p, end);
		if (p >= end)
			return 0;
		if (*p != '|') {
			*at = (size_t)(p - s0);
			snprintf(why, wl, "expected '|' or '}}' after %s", w1);
			return -1;
		}
		fn_at = tmpl_skip_spaces(p + 1, end);
		p = tmpl_word(p + 1, end, w2, sizeof(w2));
	} else {
		fn_at = s;
		snprintf(w2, sizeof(w2), "%s", w1);
	}
	a->fn = tmpl_fn_of(w2);
	if (!a->fn) {
		*at = (size_t)(fn_at - s0);
		if (piped)
			snprintf(why, wl, "template function '%s' is not supported (humanize, "
				 "humanize1024, humanizeDuration, humanizePercentage, printf, title, "
				 "toUpper, toLower)", w2);
		else
			snprintf(why, wl, "'%s' is not supported in templates (supported: $value, "
				 "$labels.NAME, .Value, .Labels.NAME, humanize*, printf, title, "
				 "toUpper, toLower)", w2);
		return -1;
	}
	if (a->fn == TF_PRINTF && tmpl_take_format(&p, end, a)) {
		*at = (size_t)(fn_at - s0);
		snprintf(why, wl, "printf needs a quoted format with one conversion such as "
			 "\"%%.2f\"");
		return -1;
	}
	if (!piped) {
		const char *arg_at = p;

		p = tmpl_word(p, end, w2, sizeof(w2));
		if (tmpl_arg_of(w2, a)) {
			*at = (size_t)(arg_at - s0);
			snprintf(why, wl, "%s needs $value or $labels.NAME, found '%s'", w1, w2);
			return -1;
		}
	}
	p = tmpl_skip_spaces(p, end);
	if (p < end) {
		*at = (size_t)(p - s0);
		snprintf(why, wl, "one function per action: unexpected '%.*s'", (int)(end - p), p);
		return -1;
	}
	return 0;
}

/*
 * The next action in p: its "{{" at *open, its text [*s, *e) without the
 * trim markers, the text after its "}}" at *close; *trim_left / *trim_right
 * for "{{- " and " -}}" (Go trims the white space on that side).  Returns
 * 1, 0 (no action left) or -1 ("{{" without "}}").
 */
int tmpl_next(const char *p, const char **open, const char **s, const char **e,
		     const char **close, int *trim_left, int *trim_right)
{
	*open = strstr(p, "{{");
	if (!*open)
		return 0;
	*s = *open + 2;
	*e = strstr(*s, "}}");
	if (!*e)
		return -1;
	*close = *e + 2;
	*trim_left = (*s)[0] == '-' && (*s)[1] == ' ';
	*s += *trim_left;
	*trim_right = *e - *s >= 2 && (*e)[-1] == '-' && (*e)[-2] == ' ';
	*e -= *trim_right;
	return 1;
}

/* v with an SI prefix, as Prometheus' humanize. */
static void humanize(double v, int base1024, char *out, size_t len)
{
	static const char *const big[] = { "", "k", "M", "G", "T", "P", "E", "Z", "Y" };
	static const char *const big2[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi" };
	static const char *const small[] = { "", "m", "u", "n", "p", "f", "a", "z", "y" };
	double step = base1024 ? 1024 : 1000;
	int i = 0;

	if (v == 0 || !isfinite(v)) {
		snprintf(out, len, "%.4g", v);
		return;
	}
	if (fabs(v) >= 1 || base1024) {
		while (fabs(v) >= step && i < 8) {
			v /= step;
			i++;
		}
		snprintf(out, len, "%.4g%s", v, base1024 ? big2[i] : big[i]);
		return;
	}
	while (fabs(v) < 1 && i < 8) {
		v *= 1000;
		i++;
	}
	snprintf(out, len, "%.4g%s", v, small[i]);
}

/* Seconds as Prometheus' humanizeDuration: 1d 2h 3m 4s, or 12.5ms below a second. */
static void humanize_duration(double v, char *out, size_t len)
{
	size_t o = 0;
	long long s;

	if (!isfinite(v) || v == 0 || fabs(v) < 1) {
		humanize(v, 0, out, len);
		if (v != 0 && isfinite(v))
			strncat(out, "s", len - strlen(out) - 1);
		else if (v == 0)
			snprintf(out, len, "0s");
		return;
	}
	if (v < 0) {
		o += (size_t)snprintf(out + o, len - o, "-");
		v = -v;
	}
	s = (long long)v;
	if (s / 86400)
		o += (size_t)snprintf(out + o, len - o, "%lldd ", s / 86400);
	if (s / 3600)
		o += (size_t)snprintf(out + o, len - o, "%lldh ", s / 3600 % 24);
	if (s / 60)
		o += (size_t)snprintf(out + o, len - o, "%lldm ", s / 60 % 60);
	if (o < len)
		snprintf(out + o, len - o, "%llds", s % 60);
}

void tmpl_render(const struct tmpl_action *a, double value, const struct label *labels,
			int nlabels, const char *var, char *out, size_t len)
{
	const char *sv = NULL;
	char num[64];

	if (a->arg == ARG_VAR || a->arg == ARG_EXTURL || a->arg == ARG_EXTLABEL) {
		sv = var ? var : "";
		value = strtod(sv, NULL);
	} else if (a->arg == ARG_LABEL) {
		sv = "";
		for (int i = 0; i < nlabels; i++)
			if (!strcmp(labels[i].key, a->label))
				sv = labels[i].value;
		value = strtod(sv, NULL);
	}
	switch (a->fn) {
	case TF_NONE:
		if (sv)
			snprintf(out, len, "%s", sv);
		else
			snprintf(out, len, "%.4g", value);
		return;
	case TF_HUMANIZE: humanize(value, 0, out, len); return;
	case TF_HUMANIZE1024: humanize(value, 1, out, len); return;
	case TF_DURATION: humanize_duration(value, out, len); return;
	case TF_PERCENT: snprintf(out, len, "%.4g%%", value * 100); return;
	case TF_TITLE:
	case TF_UPPER:
	case TF_LOWER:
		if (!sv) {
			snprintf(num, sizeof(num), "%.4g", value);
			sv = num;
		}
		snprintf(out, len, "%s", sv);
		for (char *p = out, first = 1; *p; p++) {
			if (a->fn == TF_UPPER || (a->fn == TF_TITLE && first))
				*p = (char)toupper((unsigned char)*p);
			else if (a->fn == TF_LOWER)
				*p = (char)tolower((unsigned char)*p);
			first = a->fn == TF_TITLE && !isalnum((unsigned char)*p);
		}
		return;
	case TF_PRINTF: {
		char fmt[40];

		snprintf(fmt, sizeof(fmt), "%s", a->format);
		if (a->conv == 'd') {
			*strrchr(fmt, 'd') = 0;
			strncat(fmt, "lld", sizeof(fmt) - strlen(fmt) - 1);
			snprintf(out, len, fmt, (long long)value);
		} else if (a->conv == 's' || a->conv == 'v') {
			if (!sv) {
				snprintf(num, sizeof(num), "%.4g", value);
				sv = num;
			}
			*strrchr(fmt, a->conv) = 's';
			snprintf(out, len, fmt, sv);
		} else {
			snprintf(out, len, fmt, value);
		}
		return;
	}
	}
}
