/*
 * kernel_syms.h - the running kernel's function names, kept small.
 *
 * /proc/kallsyms lists ~120,000 functions with ~3 MB of names.  Held as
 * pointers and strings they were the probe's largest allocation (5-6 MB
 * resident), though a profile names a few hundred of them.  Here:
 *
 *   - addresses are 32-bit offsets from the lowest one (the kernel, its
 *     modules and BPF programs lie within 4 GiB of each other), sorted,
 *     each with its line's ordinal in the file;
 *   - names are kept in file order, 64 to a block, each block compressed
 *     with zstd (~4x smaller); a block is decompressed when one of its
 *     names is asked for;
 *   - names asked for are cached (bounded), since a profile names the same
 *     functions window after window.
 *
 * About 1.7 MB in all on a 6.1 kernel.  The table is read once: modules
 * loaded later are named "[kernel]+0x..." by the symbolizer, as before.
 */
#ifndef FL_KERNEL_SYMS_H
#define FL_KERNEL_SYMS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct kernel_syms;

/*
 * Read kallsyms text from f (the "ADDR TYPE NAME [module]" lines of
 * /proc/kallsyms): its text symbols (t, T, w, W) with a non-zero address.
 * Lines that do not parse are skipped.  Returns the table (possibly
 * empty), or NULL with errno set (out of memory).
 */
struct kernel_syms *ksyms_read(FILE *f);

/* ksyms_read of /proc/kallsyms; NULL with errno set if it cannot be read. */
struct kernel_syms *ksyms_load(void);

void ksyms_free(struct kernel_syms *k);

/* How many functions it holds, and the bytes it holds them in. */
size_t ksyms_count(const struct kernel_syms *k);
size_t ksyms_bytes(const struct kernel_syms *k);

/*
 * The name of the function addr is in (the last one at or below it), or
 * NULL if addr is below the first or outside the table's 4 GiB.  The
 * string stays valid until the next call.
 */
const char *ksyms_name(struct kernel_syms *k, uint64_t addr);

#endif
