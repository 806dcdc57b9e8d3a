/*
 * fuzz_unwind.c - libFuzzer target for unwind_table_build() (probes/unwind.h),
 * which reads the ELF files every sampled process maps, and for
 * unwind_table_decode(), which reads the same tables back from the cache
 * folder: whatever either is given, it must not crash, and a table it
 * returns must be sorted with rules the BPF walker knows and within the
 * row limit it was given.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "probes/unwind.h"

/* What the walker relies on in any table, built or read back. */
static void check(const struct unwind_table *t, size_t limit)
{
	if (limit && t->nrows > limit)
		abort();
	for (size_t i = 0; i < t->nrows; i++)
		if ((i && t->rows[i].pc <= t->rows[i - 1].pc) || t->rows[i].cfa > UNWIND_CFA_STOP ||
		    t->rows[i].rbp > UNWIND_RBP_AT)
			abort();
	if (t->nrows && unwind_table_find(t, t->rows[0].pc) != &t->rows[0])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_table t;
	char err[256];
	int fd = memfd_create("fuzz_unwind", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	/* with and without a row limit (its give-up path frees what it built) */
	size_t limit = size & 1 ? 0 : 16;
	int ret = unwind_table_build(fd, limit, &t, err, sizeof(err));

	if (ret == 0) {
		check(&t, limit);
		unwind_table_free(&t);
	}
	close(fd);
	/* the same bytes as a cache file */
	if (unwind_table_decode(data, size, limit, &t, err, sizeof(err)) == 0) {
		if (!t.nrows || !t.nloads)
			abort();
		check(&t, limit);
		unwind_table_free(&t);
	}
	return 0;
}
