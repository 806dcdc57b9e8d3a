/*
 * fuzz_rules.c - libFuzzer target for rule files and the expression
 * language: the input is tried both as a whole rule file and as a bare
 * expression; either gives a result or a positioned error, never a crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rules/expr.h"
#include "rules/rules.h"

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
	rules_parse(&rs, "fuzz.yaml", text, size, err, sizeof(err));
	rules_free(&rs);
	free(text);
	return 0;
}
