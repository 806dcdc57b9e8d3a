/*
 * perfmap.h - names of JIT-compiled and interpreted code from perf's map
 * files, /tmp/perf-PID.map: one line per piece of code, "START SIZE name"
 * (hex), written by the runtime as it compiles (Node --perf-basic-prof,
 * JVMs with perf-map-agent, CPython >= 3.12 -X perf, LuaJIT, .NET).
 *
 * The file is read through /proc/PID/root (a container's /tmp) under the
 * pid the process has in its own namespace (NSpid), and read again when it
 * has grown, at most once a second, while the process lives: code compiled
 * after the first sample is named too.  Where entries overlap (code freed
 * and its memory reused), the later line wins.  Nothing in the file is
 * trusted: lines that do not parse are skipped and counted.
 */
#ifndef FL_PERFMAP_H
#define FL_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

struct perfmap;

/* pid's map, or NULL when the process writes none (or is gone). */
struct perfmap *perfmap_open(uint32_t pid);

/*
 * The name of the code at addr, or NULL.  Reads the file again first when
 * addr is not covered and the file grew (at most once a second).
 */
const char *perfmap_lookup(struct perfmap *m, uint64_t addr);

void perfmap_free(struct perfmap *m);

/*
 * Parse map text (len bytes) into a new map, for tests and the fuzzer:
 * the number of entries, -ENOMEM, with *out set (free with perfmap_free).
 * *bad gets the lines skipped.
 */
int perfmap_parse(const char *text, size_t len, struct perfmap **out, size_t *bad);

#endif
