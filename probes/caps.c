/*
 * caps.c - dropping capabilities per thread; see caps.h.
 */
#include "probes/caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

const int caps_main[] = { CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAPS_END };
const int caps_profiler[] = { CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH,
			      CAPS_END };
const int caps_drive[] = { CAP_SYS_RAWIO, CAP_SYS_ADMIN, CAPS_END };
const int caps_none[] = { CAPS_END };

static int get(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };

	return (int)syscall(SYS_capget, &h, d);
}

unsigned long long caps_effective(void)
{
	struct __user_cap_data_struct d[2];

	if (get(d))
		return 0;
	return (unsigned long long)d[0].effective | (unsigned long long)d[1].effective << 32;
}

int caps_keep(const int *keep, char *err, size_t errlen)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	uint64_t want = 0, have;

	for (const int *k = keep; *k != CAPS_END; k++)
		want |= 1ULL << *k;
	if (get(d)) {
		snprintf(err, errlen, "capget: %s", strerror(errno));
		return -errno;
	}
	have = (uint64_t)d[0].permitted | (uint64_t)d[1].permitted << 32;
	/* the bounding set first: dropping from it needs CAP_SETPCAP, which goes next */
	for (int c = 0; c <= 63; c++) {
		if (want & (1ULL << c))
			continue;
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1 &&
		    prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL) {
			snprintf(err, errlen, "dropping capability %d from the bounding set: %s", c,
				 strerror(errno));
			return -errno;
		}
	}
	want &= have;
	memset(d, 0, sizeof(d));
	d[0].effective = d[0].permitted = (uint32_t)want;
	d[1].effective = d[1].permitted = (uint32_t)(want >> 32);
	if (syscall(SYS_capset, &h, d)) {
		snprintf(err, errlen, "capset: %s", strerror(errno));
		return -errno;
	}
	return 0;
}
