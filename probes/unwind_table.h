/*
 * unwind_table.h - one ELF file's call frame information as the BPF stack
 * walker reads it: rows sorted by address, each the rule from that address
 * on (bpf/profile.h, struct unwind_row), built from .eh_frame with libdw;
 * and the file format a built table is kept on disk in (unwind_cache.h).
 * How the rows are used: unwind.h.
 */
#ifndef FL_UNWIND_TABLE_H
#define FL_UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "bpf/profile.h"

/* A loadable segment of an ELF file: maps a file offset to an address. */
struct unwind_load {
	uint64_t offset, vaddr, filesz;
};

/* The rows of one file, sorted by pc (ELF virtual addresses). */
struct unwind_table {
	struct unwind_row *rows;
	size_t nrows;
	struct unwind_load *loads;	/* executable PT_LOAD segments */
	size_t nloads;
	size_t fdes, unsupported;	/* FDEs read; rows with a rule not supported */
};

/*
 * Build the table of the ELF file open on fd from its .eh_frame (through
 * .eh_frame_hdr's sorted index), of at most max_rows rows (0: no limit).
 * Returns 0, -ENOENT (no .eh_frame_hdr: nothing to unwind with), -EINVAL
 * (not a 64-bit ELF, or addresses past 4 GiB), -E2BIG (more rows than
 * max_rows: given up at row max_rows + 1, so a giant such as libLLVM
 * costs neither the time nor the memory of its million rows) or -ENOMEM,
 * with a reason in err.
 */
int unwind_table_build(int fd, size_t max_rows, struct unwind_table *t, char *err,
		       size_t errlen);
void unwind_table_free(struct unwind_table *t);

/*
 * The row for ELF address pc in t (the last row at or before it), or
 * NULL: what the BPF walker looks up, for tests.
 */
const struct unwind_row *unwind_table_find(const struct unwind_table *t, uint64_t pc);

/*
 * A built table as a cache file holds it (unwinder_set_cache): a header
 * (magic, the row and load sizes of this build, the counts, an FNV-1a
 * checksum of the rest), then the rows and the loads.  encode: into a
 * malloc'd buffer (*buf, *len); returns 0 or -ENOMEM.  decode: checks all
 * of it — sizes, checksum, at most max_rows rows (0: no limit), rows
 * sorted with rules the walker knows, at most 64 loads — and fills t, or
 * returns -EINVAL with the reason in err.  Any bytes are survived
 * (fuzz/fuzz_unwind.c).
 */
int unwind_table_encode(const struct unwind_table *t, void **buf, size_t *len);
int unwind_table_decode(const void *buf, size_t len, size_t max_rows, struct unwind_table *t,
			char *err, size_t errlen);

#endif
