/*
 * strbuf.c - growable buffer; see strbuf.h.
 */
#include "core/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_init(struct strbuf *sb)
{
	memset(sb, 0, sizeof(*sb));
}

void strbuf_release(struct strbuf *sb)
{
	free(sb->buf);
	memset(sb, 0, sizeof(*sb));
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

static int grow(struct strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1, cap;
	char *b;

	if (sb->failed)
		return -1;
	if (need <= sb->cap)
		return 0;
	cap = sb->cap ? sb->cap : 64;
	while (cap < need)
		cap *= 2;
	b = realloc(sb->buf, cap);
	if (!b) {
		sb->failed = 1;
		return -1;
	}
	sb->buf = b;
	sb->cap = cap;
	return 0;
}

void strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	if (grow(sb, len))
		return;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void strbuf_adds(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || grow(sb, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

/*
 * Length of the well-formed UTF-8 sequence at s (1..4), or 0 if it is not
 * one (bad lead byte, missing continuation, overlong form, surrogate, or
 * beyond U+10FFFF).
 */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f))
			return 0;
		return 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80 ||
		    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

void strbuf_add_utf8(struct strbuf *sb, const char *s)
{
	while (*s) {
		size_t n = utf8_len((const unsigned char *)s);

		if (n) {
			strbuf_add(sb, s, n);
			s += n;
		} else {
			strbuf_add(sb, "\xef\xbf\xbd", 3);	/* U+FFFD REPLACEMENT CHARACTER */
			s++;
		}
	}
}

int utf8_valid(const char *s)
{
	size_t n;

	for (; *s; s += n)
		if (!(n = utf8_len((const unsigned char *)s)))
			return 0;
	return 1;
}

const char *strbuf_str(const struct strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

void strbuf_mark_failed(struct strbuf *sb)
{
	sb->failed = 1;
}

int strbuf_failed(const struct strbuf *sb)
{
	return sb->failed;
}

void fputs_xml(const char *s, FILE *out)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc(*s, out);
		}
	}
}
