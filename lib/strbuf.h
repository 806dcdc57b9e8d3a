/*
 * strbuf.h - a growable byte buffer with printf and JSON string helpers.
 *
 * Always NUL-terminated; `len` excludes the NUL.  Allocation failure is
 * sticky: after one, the buffer keeps its content, further appends are
 * ignored, and strbuf_failed() says so, so callers check once at the end.
 */
#ifndef FL_STRBUF_H
#define FL_STRBUF_H

#include <stddef.h>
#include <stdio.h>

struct strbuf {
	char *buf;
	size_t len;
	size_t cap;
	int failed;
};

#define STRBUF_INIT { NULL, 0, 0, 0 }

void strbuf_init(struct strbuf *sb);
void strbuf_release(struct strbuf *sb);
void strbuf_reset(struct strbuf *sb);
void strbuf_add(struct strbuf *sb, const void *data, size_t len);
void strbuf_adds(struct strbuf *sb, const char *s);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * Append s as a JSON string literal, quotes included: quotes, backslashes
 * and control characters escaped, and every byte that is not part of
 * well-formed UTF-8 replaced by U+FFFD, so the output is always valid JSON.
 */
void strbuf_add_json_str(struct strbuf *sb, const char *s);
/* Write s to out with &, <, > and " escaped for XML/HTML. */
void fputs_xml(const char *s, FILE *out);

/* The content (never NULL). */
const char *strbuf_str(const struct strbuf *sb);
int strbuf_failed(const struct strbuf *sb);

#endif
