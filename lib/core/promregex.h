/*
 * promregex.h - regular expressions with Prometheus' semantics, for label
 * matchers (=~, !~) in rules and silences.
 *
 * Prometheus uses RE2, fully anchored: `=~"nvme\\d+n1"` must match the
 * whole value.  POSIX regcomp knows neither \d, \w, \s nor (?i), so
 * faultline uses PCRE2 (Debian's libpcre2-8), whose syntax is a superset of
 * RE2's, anchored at both ends, in UTF-8 mode.  Differences from RE2:
 * PCRE2 also accepts backreferences and lookaround, which RE2 refuses; a
 * pattern RE2 accepts means the same here.
 */
#ifndef FL_PROMREGEX_H
#define FL_PROMREGEX_H

#include <stddef.h>

struct prom_regex {
	void *code;		/* pcre2_code_8 */
	void *md;		/* pcre2_match_data_8 */
};

/*
 * Compile pattern, anchored at both ends, into re.  Returns 0, or -EINVAL
 * with PCRE2's reason and the offset in the pattern in err.
 */
int promregex_compile(struct prom_regex *re, const char *pattern, char *err, size_t errlen);

/* 1 if the whole of s matches, else 0. */
int promregex_match(const struct prom_regex *re, const char *s);

/*
 * If re matches the whole of s, write replacement with $1, ${1}, $name,
 * ${name} expanded (unset or unknown groups empty; $$ is a $) to out and
 * return 1; return 0 if it does not match; -ENOSPC if out is too small,
 * -EINVAL for a bad reference in replacement.  (Go's Expand, which
 * Prometheus' label_replace uses, reads "$1x" as group "1x"; here it is
 * group 1 then "x": write "${1}x" for both.)
 */
int promregex_expand(const struct prom_regex *re, const char *s, const char *replacement,
		     char *out, size_t outlen);

/* Free re (a zeroed re is fine). */
void promregex_free(struct prom_regex *re);

#endif
