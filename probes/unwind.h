/*
 * unwind.h - DWARF call frame information for the BPF profiler's stack
 * walker (bpf/profile.bpf.c), so binaries built without frame pointers
 * (Debian's libc and most of its programs) unwind to main.
 *
 * Each executable file a sampled process maps has its .eh_frame turned
 * into a sorted table of rows: from this address on, the canonical frame
 * address (CFA) is rsp or rbp plus an offset (or the PLT's rule), the
 * return address is at CFA-8, and the caller's rbp is unchanged or saved
 * at CFA+offset (bpf/profile.h, struct unwind_row).  Tables are built with
 * libdw (dwarf_cfi_addrframe), once per file (by device and inode, and by
 * GNU build id, so the same build in another container's image is one
 * copy too), into one BPF array shared by all;
 * each process gets a list of its executable mappings pointing at their
 * tables (struct unwind_proc, keyed by pid).  When the array is full the
 * rows start over (at most once a minute): every file and process is
 * forgotten and the processes running now are loaded again as they are
 * sampled, so files of processes long gone do not hold the space.
 *
 * Only .eh_frame is read (every Debian binary has it; .debug_frame, in
 * separate debug files or objects built without unwind tables, is not).
 *
 * Supported rules (x86-64): CFA = rsp+N or rbp+N, the PLT expression
 * (rsp+8, +8 more past the push), return address at CFA-8 or undefined
 * (the outermost frame), rbp same value or at CFA+N.  Anything else (DWARF
 * expressions in general, registers other than rsp/rbp as the CFA base)
 * makes a row "no rule here": the walker falls back to frame pointers, as
 * it does in code without CFI (JIT code) and files it has no table for.
 * arm64 is future work.
 */
#ifndef FL_UNWIND_H
#define FL_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "bpf/profile.h"
#include "probes/unwind_table.h"

struct unwinder;

/*
 * An unwinder filling the BPF maps rows_fd (an array of struct
 * unwind_row, max_rows entries, mmap-able) and procs_fd (pid -> struct
 * unwind_proc); a file of more than max_file_rows rows stays on frame
 * pointers.  Returns NULL with a reason in err.
 */
struct unwinder *unwinder_new(int rows_fd, uint32_t max_rows, uint32_t max_file_rows,
			      int procs_fd, char *err, size_t errlen);
void unwinder_free(struct unwinder *u);

/*
 * Keep built tables in dir (created 0700 when missing) as BUILD_ID.unwind,
 * and read a file's from there before building it: a restart reads libc's
 * instead of building it again.  A file without a build id is built every
 * time.  Returns 0, or -errno when dir cannot be made (the unwinder then
 * builds as before).
 */
int unwinder_set_cache(struct unwinder *u, const char *dir);

/* How many tables were read from the cache rather than built. */
uint32_t unwinder_cache_reads(const struct unwinder *u);

/*
 * Read pid's executable mappings (through /proc/PID/root for containers),
 * build the tables of files not seen before, and publish the process's
 * mapping list for the walker.  The walker asks for this again (through
 * the profiler's ring buffer, at most once a second) when a sample's leaf
 * is in none of them: a library dlopen'ed since, or JIT code.  Returns the number of mappings with a
 * table, or -errno (the process is gone).
 */
int unwinder_add_process(struct unwinder *u, uint32_t pid);

/*
 * The same, building only what is wanted: want UNWIND_WANT_ALL every file
 * (unwinder_add_process), 0 none (a file without rows yet is published
 * UNWIND_LAZY: the walker asks for it when a sample goes through it), or
 * an address: the file mapped there.  So only files that are sampled cost
 * rows and the time to build them.
 */
#define UNWIND_WANT_ALL UINT64_MAX
int unwinder_publish(struct unwinder *u, uint32_t pid, uint64_t want);

/*
 * Process pid exited (its unwind_procs entry is gone: the BPF exit hook
 * deletes it): a process given the pid again is published, even with the
 * same mappings.
 */
void unwinder_forget_process(struct unwinder *u, uint32_t pid);

/*
 * 1 once after the unwinder started its rows over (they were full): every
 * published process was forgotten, and the caller should have processes
 * announce themselves again (the profiler clears its "seen" map).
 */
int unwinder_take_reset(struct unwinder *u);

/* Rows used, of how many; files with a table; files without one. */
void unwinder_stats(const struct unwinder *u, uint32_t *rows, uint32_t *max_rows,
		    uint32_t *files, uint32_t *failed);

#endif
