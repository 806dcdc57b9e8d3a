/*
 * strbuf.h - a growable byte buffer with printf and UTF-8 helpers.
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
 * Append s with every byte that is not part of well-formed UTF-8 (bad lead
 * byte, missing continuation, overlong form, surrogate, beyond U+10FFFF)
 * replaced by U+FFFD.  JSON is written with json-c (core/jsonc.h), which
 * uses this for its strings.
 */
void strbuf_add_utf8(struct strbuf *sb, const char *s);
/* 1 if s (NUL-terminated) is well-formed UTF-8. */
int utf8_valid(const char *s);
/* Write s to out with &, <, > and " escaped for XML/HTML. */
void fputs_xml(const char *s, FILE *out);

/* The content (never NULL). */
const char *strbuf_str(const struct strbuf *sb);
int strbuf_failed(const struct strbuf *sb);

/*
 * Mark sb failed from outside (what a caller could not render, such as a
 * JSON object json-c would not serialize), so strbuf_failed() reports it
 * like an allocation failure.
 */
void strbuf_mark_failed(struct strbuf *sb);

#endif
