/*
 * promregex.c - anchored PCRE2 regular expressions; see promregex.h.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "core/promregex.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <pcre2.h>

int promregex_compile(struct prom_regex *re, const char *pattern, char *err, size_t errlen)
{
	int code;
	PCRE2_SIZE off;
	PCRE2_UCHAR msg[160];

	memset(re, 0, sizeof(*re));
	re->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
				 PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_UTF, &code, &off, NULL);
	if (!re->code) {
		pcre2_get_error_message(code, msg, sizeof(msg));
		snprintf(err, errlen, "%s at offset %zu", (const char *)msg, (size_t)off);
		return -EINVAL;
	}
	re->md = pcre2_match_data_create_from_pattern(re->code, NULL);
	if (!re->md) {
		pcre2_code_free(re->code);
		re->code = NULL;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

int promregex_match(const struct prom_regex *re, const char *s)
{
	if (!re->code)
		return 0;
	return pcre2_match(re->code, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0, 0, re->md, NULL) >= 0;
}

void promregex_free(struct prom_regex *re)
{
	if (re->md)
		pcre2_match_data_free(re->md);
	if (re->code)
		pcre2_code_free(re->code);
	re->md = re->code = NULL;
}

int promregex_expand(const struct prom_regex *re, const char *s, const char *replacement,
		     char *out, size_t outlen)
{
	PCRE2_SIZE len = outlen;
	int rc;

	if (!re->code || !outlen)
		return -EINVAL;
	rc = pcre2_substitute(re->code, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0,
			      PCRE2_SUBSTITUTE_REPLACEMENT_ONLY | PCRE2_SUBSTITUTE_UNSET_EMPTY |
			      PCRE2_SUBSTITUTE_UNKNOWN_UNSET,
			      re->md, NULL, (PCRE2_SPTR)replacement, PCRE2_ZERO_TERMINATED,
			      (PCRE2_UCHAR *)out, &len);
	if (rc == 0)
		return 0;	/* no match */
	if (rc < 0)
		return rc == PCRE2_ERROR_NOMEMORY ? -ENOSPC : -EINVAL;
	return 1;
}
