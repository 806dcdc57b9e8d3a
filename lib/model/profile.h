/*
 * profile.h - CPU profile windows: interned frames, stacks and sample rows.
 *
 * A profile holds a string table (frame names, comms, services, cgroups;
 * index 0 is ""), a stack table (each stack a list of string indexes, root
 * first) and rows (service, comm, pid, stack, count, cgroup).  One 10 s
 * window of one host is a profile; so is the merge of many windows (rows
 * with the same service, comm, cgroup and stack are added; pid is dropped
 * to 0 when merging).  A scope (struct profile_scope) picks the rows of one
 * service or one cgroup subtree: what an alert's evidence is about.
 *
 * Where each frame's code lives, when the profiler knew it: a mapping (a
 * file by path and build id, or "[kernel.kallsyms]") and an address in it
 * (the file offset; for the kernel the address itself), and whether the
 * frame's name came from a symbol (else the name is "module+0xoffset",
 * for people, and tools should symbolize the address).  Stacks merge by
 * frame names, so a frame's location is the first one sampled for that
 * stack: an address inside the named function.  On the wire one location
 * of a name stands for every frame of that name in the same mapping (its
 * other addresses are return addresses inside the same function), so a
 * location is written once per name, not once per frame of every stack.
 *
 * Wire form (msgpack, version 1; stored as a zstd frame of it, see
 * profile_encode_level):
 *   { "v": 1, "host": str, "ts": ms (end), "dur": ms, "hz": rate,
 *     "str": [ str... ], "stk": [ [ idx... ]... ],
 *     "rows": [ [ service, comm, pid, stack, count ]... ],
 *     "cg": [ cgroup... ],              (optional: a string index per row, "" none)
 *     "map": [ [ file, build_id ]... ],               (optional: string indexes)
 *     "floc": [ [ name... ], [ map... ], [ named... ], [ addr... ] ],
 *                       (with "map": a location per frame name, in columns)
 *     "xloc": [ [ stack... ], [ frame... ], [ map... ], [ named... ], [ addr... ] ],
 *                       (the frames not where "floc" puts their names)
 *     "loc": [ [ map, addr, named, map, addr, named... ]... ] }  (per stack, per
 *                       frame; map 0: unknown; [] for none)
 * A frame is where "floc" puts its name (nowhere if it does not), unless
 * "xloc" names it: the same name in another binary ("floc" holds the one
 * most frames agree on), a "module+0xoffset" frame at another address, a
 * frame with no location.  "floc" is sorted by map and address; its addr
 * is the step from the entry before when that has the same map (the
 * address otherwise).  In "xloc" a stack is the step from the one before;
 * an addr in either is nil when it is the offset the frame's name ends
 * with ("libz.so.1+0x3f10").  This version writes every "loc" [].
 * profile_decode() treats input as hostile (bounds on every index); windows
 * written before "map"/"loc" or "cg" existed decode without locations or
 * cgroups (and readers before "cg" ignore it).  Before "floc" every stack's
 * "loc" was written in full (read as it is); a reader before "floc", which
 * skips it and "xloc", reads the windows written since without locations.
 */
#ifndef FL_PROFILE_H
#define FL_PROFILE_H

#include <stdint.h>
#include <stdio.h>

#include "core/strmap.h"

#define PROFILE_VERSION 1

struct profile_row {
	uint32_t service, comm, pid, stack;
	uint64_t count;
	uint32_t cgroup;		/* string index: the process's cgroup path, 0 none */
};

/*
 * Which rows count: service (NULL: any) equal to the row's service or to it
 * without ".service" (a deploy's "api" is the unit "api.service"); cgroup
 * (NULL: any) the row's cgroup or an ancestor of it ("/a" holds "/a/b");
 * root (NULL: any) a prefix of the stack's root frame (I/O profiles root
 * their stacks at "[DEVICE OP]": "[loop0 " picks a device).
 */
struct profile_scope {
	const char *service, *cgroup, *root;
};


struct profile_map {
	uint32_t file, build_id;	/* string indexes */
};

struct profile_loc {
	uint32_t map;		/* 1 + index into maps; 0: not known */
	uint32_t named;		/* the frame's name is a symbol's */
	uint64_t addr;
};

/* Where a frame added by profile_add_at lives (file NULL: not known). */
struct profile_where {
	const char *file, *build_id;
	uint64_t addr;
	int named;
};

struct profile {
	char host[200];
	uint64_t ts_ms, duration_ms;
	uint32_t rate_hz;
	char **strings;
	uint32_t nstrings, cap_strings;
	struct strmap string_index;
	uint32_t **stacks;		/* stacks[i][0] = depth, then frames root first */
	uint32_t nstacks, cap_stacks;
	struct strmap stack_index;
	struct profile_row *rows;
	uint32_t nrows, cap_rows;
	struct strmap row_index;
	uint64_t total;
	struct profile_map *maps;
	uint32_t nmaps, cap_maps;
	struct profile_loc **locs;	/* per stack: a location per frame, or NULL */
	uint32_t cap_locs;
};

/*
 * Whether cgroup path cg is tree or below it ("/a" holds "/a" and "/a/b",
 * not "/ab"; "/" holds every path; a trailing "/" on tree is ignored).
 * An empty cg (not known) is in no tree.
 */
int profile_cgroup_in(const char *cg, const char *tree);

/* Whether row r of p is in scope s (NULL: every row is). */
int profile_row_in(const struct profile *p, const struct profile_row *r,
		   const struct profile_scope *s);

int profile_init(struct profile *p, const char *host);
void profile_free(struct profile *p);

/* Index of s in the string table, added if new; UINT32_MAX on -ENOMEM. */
uint32_t profile_intern(struct profile *p, const char *s);

/*
 * Add count samples of the stack frames[0..n) (root first) for a process.
 * Rows with identical (service, comm, pid, stack) are merged.
 * Returns 0 or -ENOMEM.
 */
int profile_add(struct profile *p, const char *service, const char *comm, uint32_t pid,
		const char *const *frames, uint32_t n, uint64_t count);

/* Where frame i of stack st lives (a mapping that exists), or NULL. */
const struct profile_loc *profile_frame_loc(const struct profile *p, uint32_t st, uint32_t i);

/* The same with where each frame's code lives (where may be NULL). */
int profile_add_at(struct profile *p, const char *service, const char *comm, uint32_t pid,
		   const char *const *frames, const struct profile_where *where, uint32_t n,
		   uint64_t count);

/* Who a row's samples are of: profile_add_in's process. */
struct profile_origin {
	const char *service, *comm, *cgroup;	/* NULL: "" */
	uint32_t pid;
};

/* profile_add_at for a process with its cgroup. */
int profile_add_in(struct profile *p, const struct profile_origin *o, const char *const *frames,
		   const struct profile_where *where, uint32_t n, uint64_t count);

/*
 * dst += src's rows in scope (NULL: all); pids are dropped.  Returns 0 or
 * -ENOMEM.
 */
int profile_merge(struct profile *dst, const struct profile *src,
		  const struct profile_scope *scope);

/*
 * The wire form of p into *out (malloc'd, *outlen bytes): a zstd frame of
 * the msgpack at `level` (1-22, no dictionary: the names are the host's
 * own), or the msgpack itself when level is 0, compression is off
 * (FAULTLINE_WIRE_COMPRESS=0, snapshot_zstd.h) or would not make it
 * smaller.  profile_encode packs at PROFILE_LEVEL_WINDOW.  Returns 0 or
 * -ENOMEM.
 */
#define PROFILE_LEVEL_WINDOW 3		/* a 10 s window: ~0.3 ms for ~2.5x */
#define PROFILE_LEVEL_ARCHIVE 19	/* an hour kept for days: ~12 % smaller again */
int profile_encode(const struct profile *p, char **out, size_t *outlen);
int profile_encode_level(const struct profile *p, int level, char **out, size_t *outlen);

/*
 * The profile in buf[0..len) (untrusted: a zstd frame or plain msgpack,
 * told apart by the first bytes) into p (initialised here).  Returns 0, or
 * -EINVAL / -E2BIG / -ENOMEM with "profile: why" in err and p left as
 * profile_free leaves it.
 */
int profile_decode(const void *buf, size_t len, struct profile *p, char *err, size_t errlen);

/* "comm;root;...;leaf count" lines, one per row, sorted. */
void profile_write_folded(const struct profile *p, FILE *out);

/*
 * Keep the top n rows by count and fold the rest into one "[other]" row;
 * the stacks, names and mappings only dropped rows used are dropped too.
 */
int profile_truncate(struct profile *p, uint32_t n);

/*
 * Per-function CPU share: self (leaf) and total (anywhere on the stack,
 * counted once per sample).  Sorted by total descending.
 */
struct profile_func {
	const char *name;
	double self, total;	/* fractions of all samples */
	double own;		/* self, and for a Python function its innermost samples (below) */
};
size_t profile_functions(const struct profile *p, struct profile_func **out);

/*
 * A Python frame names a line: "mod.fn (file.py:12)".  Its function is
 * "mod.fn (file.py)": profile_functions and profile_diff count a Python
 * function's lines as one function, and profile_hot_path finds it by that
 * name.  Its self time is the samples it is the leaf of (pprof's flat);
 * its own time (profile_func.own, profile_delta's self shares) adds the
 * samples whose innermost Python frame it is: what the interpreter did for
 * it, in whatever native helper.  Returns the length of
 * "mod.fn (file.py" in frame, or 0 when frame is not a Python frame.
 */
size_t profile_python_function_len(const char *frame);

/*
 * Functions whose total share changed most from base to target, with their
 * own shares (profile_func.own: the leaf's, and a Python function's
 * innermost samples) beside: a caller's total share moves with its
 * callee's, its self share does not, so self says which frame grew.
 * One allocation: free(*out) frees the names too.
 */
struct profile_delta {
	const char *name;
	double base, target;		/* total shares */
	double self_base, self_target;	/* self shares */
};
size_t profile_diff(const struct profile *base, const struct profile *target,
		    struct profile_delta **out);

/*
 * The heaviest call path to fn in p, root first, "main;gc;mark" into out:
 * of the stacks whose leaf is fn, the one with the most samples (else of
 * those holding fn, cut after it).  Returns 0, or -ENOENT when no stack
 * holds fn (out "").
 */
int profile_hot_path(const struct profile *p, const char *fn, char *out, size_t len);

#endif
