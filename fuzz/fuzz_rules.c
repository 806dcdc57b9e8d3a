/*
 * fuzz_rules.c - libFuzzer target for rule files, the expression language
 * and annotation templates: the input is tried as a whole rule file, as a
 * bare expression (a rule's and a query's) and as a template (checked, then rendered whatever the
 * check said); each gives a result or a positioned error, never a crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rules/lang/expr.h"
#include "rules/lang/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ruleset rs = { 0 };
	struct node *n;
	char err[512], *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (expr_parse(text, &n, err, sizeof(err)) == 0)
		expr_free(n);
	/* as faultline-web parses a query: `@ <time>` too, and ALERTS */
	{
		static char *const names[] = { "ALERTS", "ALERTS_FOR_STATE" };

		if (expr_parse_query(text, names, 2, &n, err, sizeof(err)) == 0) {
			expr_earliest_at(n);
			expr_result_name(n);
			expr_free(n);
		}
	}
	{
		struct label l[2] = { { "device", "sda" }, { "host", "h1" } };
		char out[256];
		size_t off;

		rules_template_check(text, err, sizeof(err), &off);
		{
			struct rules_template_ctx ctx = { "https://fl.example/", l, 1 };

			rules_template(text, 1.5, l, 2, &ctx, out, sizeof(out));
		}
	}
	rules_parse(&rs, "fuzz.yaml", text, size, err, sizeof(err));
	rules_free(&rs);
	free(text);
	return 0;
}
