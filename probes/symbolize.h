/*
 * symbolize.h - turn sampled addresses into function names.
 *
 * Kernel addresses resolve against /proc/kallsyms.  User addresses resolve
 * through the process's mappings (/proc/PID/maps, snapshotted the first
 * time the process is sampled, so short-lived processes still resolve) and
 * the ELF symbol tables of the mapped files, read through /proc/PID/root so
 * containers work; separate debug info (/usr/lib/debug/.build-id/..) is
 * used when installed.  Symbol tables are cached by build id (or path and
 * inode without one), read only for files an address is named in, within a
 * budget of bytes (sym_set_budget).  A frame that cannot be named keeps module+offset;
 * nothing is dropped.
 */
#ifndef FL_SYMBOLIZE_H
#define FL_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct symbolizer;

struct symbolizer *sym_new(void);
void sym_free(struct symbolizer *s);

/* Load /proc/kallsyms. Returns the number of symbols, or -errno. */
int sym_load_kernel(struct symbolizer *s);

/* The running kernel's build id (hex, from /sys/kernel/notes), "" if unknown. */
const char *sym_kernel_build_id(const struct symbolizer *s);

/*
 * Name of kernel address addr ("do_syscall_64_[k]") into buf.  Returns 1
 * if resolved, 0 if only an address could be given.
 */
int sym_kernel(struct symbolizer *s, uint64_t addr, char *buf, size_t len);

/*
 * Snapshot pid's mappings, executable, comm and cgroup now (idempotent
 * for a pid already known).  comm may be NULL.  Returns 0 or -errno (the
 * process is gone).
 */
int sym_process(struct symbolizer *s, uint32_t pid, const char *comm);

/* The same, but read again even if pid is known (it has exec'd). */
int sym_process_refresh(struct symbolizer *s, uint32_t pid, const char *comm);

/*
 * What an address in no mapping of its process is called: the process was
 * gone before its mappings were read, or the address is in none of them.
 * Its absolute address would say nothing without those mappings (every
 * process's are randomized), and as a name it made every such frame a new
 * string and every stack through it a new stack: on a host that starts
 * processes all the time, two thirds of a profile's names (as perf,
 * faultline says [unknown]).
 */
#define SYM_UNKNOWN "[unknown]"

/*
 * Name of user address addr in pid into buf ("main", "libc.so.6+0x2a1b0",
 * SYM_UNKNOWN).  Returns 1 if resolved to a symbol, 0 otherwise.
 */
int sym_user(struct symbolizer *s, uint32_t pid, uint64_t addr, char *buf, size_t len);

/* Where a user address's code lives, for tools that symbolize again (pprof). */
struct sym_where {
	char file[256];		/* the mapped file's path in the process, or "[anon]" etc. */
	char build_id[160];	/* hex GNU build id, "" if it has none */
	uint64_t offset;	/* the address's offset in the file */
	int known;		/* 0: in no mapping the process had when read */
};

/* sym_user, and where addr's code lives into *w (may be NULL). */
int sym_user_where(struct symbolizer *s, uint32_t pid, uint64_t addr, char *buf, size_t len,
		   struct sym_where *w);

/* pid's cgroup path, v2 or the cpu controller's ("" if unknown). */
const char *sym_cgroup(struct symbolizer *s, uint32_t pid);

/* comm and service of pid ("" if unknown). */
const char *sym_comm(struct symbolizer *s, uint32_t pid);
const char *sym_service(struct symbolizer *s, uint32_t pid);

/*
 * 1 if a user stack (root last, as the kernel gives it) looks complete:
 * its outermost frame is a known thread or program entry point.
 */
int sym_stack_complete(struct symbolizer *s, uint32_t pid, const uint64_t *ips, int n);

/*
 * Forget processes not sampled since `generation`, and the symbols of
 * every file no remembered process maps any more (bounded memory).
 */
void sym_expire(struct symbolizer *s, uint64_t keep_since_generation);
void sym_set_generation(struct symbolizer *s, uint64_t generation);

/*
 * Process pid exited: it keeps naming its addresses (its last samples are
 * still to be drained) until sym_forget_exited forgets it, and every file
 * only it mapped.  A pid announced again before that (sym_process_refresh)
 * is a new process and stays.
 */
void sym_process_exited(struct symbolizer *s, uint32_t pid);
void sym_forget_exited(struct symbolizer *s);

/* What the symbolizer holds: processes, files with symbols, their bytes. */
void sym_cache_stats(const struct symbolizer *s, size_t *procs, size_t *files, size_t *bytes);

/*
 * The most bytes of ELF symbols held between windows (4 MiB unless set).
 * A file's symbols are read when an address in it is first named, and
 * held at least until the next sym_trim; that drops the least recently
 * used files' until under the budget, to be read again if named again.
 * The file named last is kept even if it alone is larger.
 */
void sym_set_budget(struct symbolizer *s, size_t bytes);

/* Drop symbols past the budget: once a window, after it is named. */
void sym_trim(struct symbolizer *s);

/*
 * The bytes of ELF symbols held now, the files they are of, and how many
 * times a file's symbols have been read (a count that keeps rising fast
 * says the budget is too small for what is sampled).
 */
void sym_symbol_stats(const struct symbolizer *s, size_t *bytes, size_t *files_read,
		      uint64_t *reads);

/* Bytes the kernel's names are held in (probes/kernel_syms.h). */
size_t sym_kernel_bytes(const struct symbolizer *s);

/*
 * The service a process belongs to, from its cgroup path: a systemd unit
 * ("nginx.service"), a container ("docker:0123456789ab"), or, if neither,
 * its comm.
 */
void sym_service_of(const char *cgroup_path, const char *comm, char *out, size_t len);

/*
 * The GNU build-id of the ELF file at path as hex into out.  Returns 0,
 * -ENOENT (no build-id note), -EINVAL (not ELF) or -errno.
 */
int sym_file_build_id(const char *path, char *out, size_t len);

/* The same for an open ELF file (read with pread: its offset is kept). */
int sym_fd_build_id(int fd, char *out, size_t len);

#endif
