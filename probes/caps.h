/*
 * caps.h - the probe gives up the root powers it does not need.
 *
 * Loading BPF programs needs CAP_BPF and CAP_PERFMON (and root gives it
 * every other capability too); once they are loaded, each thread of the
 * probe keeps only what its own work needs:
 *
 *   main loop     CAP_BPF, CAP_PERFMON (map reads), CAP_SYS_PTRACE and
 *                 CAP_DAC_READ_SEARCH (/proc of other users' processes)
 *   profiler      the same (perf events, /proc/PID/maps, binaries to symbolize)
 *   drive         CAP_SYS_RAWIO (ATA SMART), CAP_SYS_ADMIN (NVMe admin
 *                 commands), also for the smartctl it runs
 *   store writer  nothing (it only talks to Redis)
 *   /metrics      nothing (libmicrohttpd's thread, started from a thread
 *                 that dropped everything first)
 *
 * Capabilities, and the bounding set that limits what a program it execs
 * can have, are per thread in Linux, so each thread calls caps_keep() for
 * itself.  Raw capget/capset: no libcap needed.
 */
#ifndef FL_CAPS_H
#define FL_CAPS_H

#include <stddef.h>

#define CAPS_END (-1)

/* The sets above, each ending in CAPS_END. */
extern const int caps_main[], caps_profiler[], caps_drive[], caps_none[];

/*
 * Reduce the calling thread's effective, permitted and inheritable sets and
 * its bounding set to keep[] (only what it has already: asking for more is
 * no error).  Returns 0, or -errno with the reason in err (the thread then
 * keeps what it had; the caller logs and goes on).
 */
int caps_keep(const int *keep, char *err, size_t errlen);

/* The calling thread's effective set as a bit mask (bit n = capability n). */
unsigned long long caps_effective(void);

#endif
