/*
 * timeline.h - the simulator's timeline: what a run injected, where and
 * when, and what should page (a JSON file tests and `faultline sim
 * --timeline` readers compare alerts with).
 */
#ifndef FL_SIM_TIMELINE_H
#define FL_SIM_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "sim/scenario.h"

struct sim_timeline {
	const struct scenario *sc;
	const struct sim_shape *sh;
	uint64_t start_ms, end_ms;
	uint32_t n;			/* hosts */
	uint32_t **sel;			/* per event: the host indexes it chose */
	const uint32_t *nsel;
	const char *(*name)(uint32_t host, void *arg);
	void *arg;
};

/* Write the timeline of t to path.  Returns 0, or -errno with the reason in err. */
int sim_timeline_write(const struct sim_timeline *t, const char *path, char *err, size_t errlen);

#endif
