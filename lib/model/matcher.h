/*
 * matcher.h - label matchers as Alertmanager writes them: in routes
 * (`matchers:`), inhibit rules, silences and `faultline silence add`.
 *
 * A matcher is NAME OP VALUE, OP one of =, !=, =~, !~; spaces around the
 * parts are allowed; VALUE is taken as written or, in double quotes, with
 * \" \\ and \n unescaped (Alertmanager's pkg/labels ParseMatcher, so
 * 'rack=~"r1.*"' matches r1, r12...).  Regular expressions are RE2 and fully
 * anchored (core/promregex.h).  A label an alert lacks has the value "".
 * A list ("{a="b", c=~"d"}" with or without the braces, commas between)
 * is parsed by matchers_parse.
 *
 * Nothing is cut: a name or value over its bound is an error, as is any
 * byte left over.
 */
#ifndef FL_MATCHER_H
#define FL_MATCHER_H

#include <stddef.h>

#include "core/promregex.h"
#include "model/alert.h"

#define MATCHER_NAME_MAX 64
#define MATCHER_VALUE_MAX 1024

enum matcher_op {
	MATCH_EQ = '=',
	MATCH_NE = '!',
	MATCH_RE = '~',
	MATCH_NRE = '^',	/* !~ */
};

struct matcher {
	char name[MATCHER_NAME_MAX];
	char value[MATCHER_VALUE_MAX];
	int op;			/* enum matcher_op */
	struct prom_regex re;
	int has_re;
};

/*
 * Parse one matcher, s (NUL-terminated), into m.  Returns 0, or -EINVAL
 * with the reason, quoting s, in err.  m needs matcher_free() after 0.
 */
int matcher_parse(struct matcher *m, const char *s, char *err, size_t errlen);

/*
 * Parse a comma-separated list of matchers, optionally in braces, into
 * out[0..max).  Commas inside quoted values do not split.  Returns the
 * number parsed (at least 1), or -EINVAL (none parsed, more than max, a
 * bad one: err says which).  On error nothing needs freeing.
 */
int matchers_parse(struct matcher *out, int max, const char *s, char *err, size_t errlen);

void matcher_free(struct matcher *m);

/* 1 when the alert's label (or "") satisfies m. */
int matcher_match(const struct matcher *m, const struct alert *a);

/* 1 when value satisfies m (the label's value, or "" when absent). */
int matcher_match_value(const struct matcher *m, const char *value);

/* The operator as written: "=", "!=", "=~", "!~". */
const char *matcher_op_text(int op);

/*
 * m as matcher_parse reads it back: NAME OP "VALUE", the value quoted and
 * escaped.  Returns the length it needed (snprintf's contract).
 */
int matcher_format(const struct matcher *m, char *buf, size_t len);

#endif
