/*
 * ruletest_input.h - a rule test's input_series: promtool's series notation
 * (values, _, a+bxn, axn, _xn), classic histograms written as their
 * _bucket/_sum/_count series, and the snapshots they become, one per host
 * per step (ruletest_input.c).  ruletest.c runs the tests over them.
 */
#ifndef FL_RULETEST_INPUT_H
#define FL_RULETEST_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/config.h"
#include "model/catalog.h"
#include "model/histogram.h"
#include "model/labels.h"

struct engine;
struct minute_source;

#define MAX_POINTS 100000	/* per series, so a typo like 1+0x1e9 is an error */

struct input {
	const struct metric_info *mi;	/* the catalog's entry for metric */
	char host[128];
	char metric[128];
	struct label labels[16];
	int nlabels;
	struct label hlabels[8];
	int nhlabels;
	double *v;
	unsigned char *have;	/* 0: "_", no sample at this step */
	int n, cap;
	uint64_t count;		/* histograms: observations of the value per step */
	struct histogram *cum;	/* histograms: every step so far (probes send them so) */
	/*
	 * A classic histogram's series, as /metrics shows faultline's: part 1
	 * _bucket (le its bound, INFINITY for +Inf), 2 _sum, 3 _count; mi is
	 * the histogram.  The inputs of one histogram (host, labels) are one
	 * group, whose first input (group) builds its snapshot series.
	 */
	int part;
	double le;
	int le_given;
	int group;
	int line, col;		/* its input_series entry, for messages */
};

/*
 * A test's input_series into in[0..*nin) (room for all of them), sorted by
 * host.  Returns 0, or 1 after printing the error to out.
 */
int read_inputs(const struct cfg *c, const struct cfg_node *inputs, struct input *in, int *nin,
		FILE *out);

/* Free inputs in[0..n). */
void inputs_free(struct input *in, size_t n);

/*
 * Give the engine one snapshot per host for input step (and ms the same,
 * as the 1-minute tier): all of a host's series that have a sample then.
 */
void feed_step(struct engine *e, struct minute_source *ms, struct input *in, int nin,
	       uint64_t step, uint64_t ts_ms, uint64_t interval_ms);

#endif
