/*
 * build_id.h - GNU build ids (NT_GNU_BUILD_ID notes, as hex): the running
 * kernel's, an ELF file's.  A build id names a binary's exact build: the
 * symbolizer caches symbols by it, deploy watching notices a new one, and
 * pprof mappings carry it.  (sym_fd_build_id and sym_file_build_id, in
 * symbolize.h, are the file forms.)
 */
#ifndef FL_PROBES_BUILD_ID_H
#define FL_PROBES_BUILD_ID_H

#include <stddef.h>

#include <libelf.h>

/* The running kernel's, from /sys/kernel/notes, into out ("" when unknown). */
void build_id_of_kernel(char *out, size_t len);

/* An open ELF's, into out.  Returns 0, or -1 when it has none (or len is too small). */
int build_id_of_elf(Elf *e, char *out, size_t len);

#endif
