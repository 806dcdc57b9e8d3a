/*
 * elf_syms.h - one ELF file's function symbols, for the symbolizer.
 *
 * A file is opened by the path a process maps it at and known by a key:
 * its GNU build id, or its device, inode and mtime when it has none, so
 * the same libc mapped by a thousand processes (or seen through a
 * container's root) is one entry.  Its load headers are read at once
 * (file offsets to addresses); its symbols only when first asked for, as
 * most of what a process maps is never sampled; the symbolizer drops them
 * again when its budget is passed (symbolize.c) and they are read anew
 * when needed.
 */
#ifndef FL_ELF_SYMS_H
#define FL_ELF_SYMS_H

#include <stddef.h>
#include <stdint.h>

enum elf_syms_state { ELF_UNREAD, ELF_READ, ELF_UNREADABLE };

/* A function: its address (as linked), size (0: unknown) and name. */
struct elf_sym {
	uint64_t addr, size;
	const char *name;
};

/* A PT_LOAD header: where file offsets land in the linked addresses. */
struct elf_load {
	uint64_t offset, vaddr, filesz;
};

struct elf_syms {
	char key[160];		/* the build id, or "ino:DEV:INO:MTIME" without one */
	int used;		/* the symbolizer's mark: a process still maps it */
	enum elf_syms_state state;
	uint64_t last_use;	/* the symbolizer's clock when it last named an address */
	size_t heap;		/* bytes held for strings and syms (state ELF_READ) */
	char path[256];		/* in the mapping process's own mount namespace */
	char *open_path;	/* where it was opened (through /proc/PID/root) */
	char *strings;		/* one buffer for all names */
	struct elf_sym *syms;	/* sorted by addr */
	size_t nsyms;
	struct elf_load *loads;
	size_t nloads;
};

/*
 * Open the ELF file at path (as seen from here, e.g. /proc/PID/root/...):
 * its key and load headers, no symbols yet (state ELF_UNREAD).  NULL if it
 * cannot be opened or is not ELF.
 */
struct elf_syms *elf_syms_open(const char *path);

void elf_syms_free(struct elf_syms *es);

/*
 * Read es's function symbols: from where it was opened, else from its
 * path here if the file there has the same key (the process is gone), and
 * from separate debug info (/usr/lib/debug/.build-id) when that has more.
 * Leaves es in ELF_READ (returns 1) or ELF_UNREADABLE (no symbols, 0).
 */
int elf_syms_read(struct elf_syms *es);

/* Free es's symbols (not its key or headers) and leave it in state. */
void elf_syms_drop(struct elf_syms *es, enum elf_syms_state state);

/* The function holding file offset off of es (state ELF_READ), or NULL. */
const struct elf_sym *elf_syms_at(const struct elf_syms *es, uint64_t off);

#endif
