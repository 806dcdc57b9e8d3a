/*
 * fuzz_config.c - libFuzzer target for the YAML config loader: any input
 * gives a config or a positioned error, never a crash or a leak, and a
 * position inside any scalar (cfg_value_pos) lies at or after its start.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"

static void walk(const struct cfg *c, const struct cfg_node *n)
{
	char err[256];
	uint64_t u;
	char *s = NULL;
	int b;

	if (!n || n->type != CFG_MAP)
		return;
	for (size_t i = 0; i < n->nchild; i++) {
		const struct cfg_node *ch = &n->child[i];
		const struct cfg_node *m;

		if (ch->type == CFG_SCALAR && ch->value) {
			/* a position inside the value: inside the file, never past it */
			size_t len = strlen(ch->value);
			int line, col;

			for (size_t off = 0; off <= len; off += len / 3 + 1) {
				cfg_value_pos(c, ch, off, &line, &col);
				if (line < ch->line || col < 1)
					abort();
			}
		}
		cfg_string(c, n, ch->key, &s, err, sizeof(err));
		cfg_duration(c, n, ch->key, &u, err, sizeof(err));
		cfg_uint(c, n, ch->key, 0, 100, &u, err, sizeof(err));
		cfg_bool(c, n, ch->key, &b, err, sizeof(err));
		if (cfg_map(c, n, ch->key, &m, err, sizeof(err)) == 0)
			walk(c, m);
	}
	free(s);
	cfg_check_unknown(c, n, "x", err, sizeof(err));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfg c;
	char err[512];

	if (cfg_parse(&c, "fuzz.yaml", (const char *)data, size, err, sizeof(err)) == 0) {
		walk(&c, c.root);
		cfg_free(&c);
	}
	return 0;
}
