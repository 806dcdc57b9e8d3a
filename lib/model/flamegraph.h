/*
 * flamegraph.h - self-contained interactive SVG flame graphs.
 *
 * One rectangle per (path of frames), width proportional to samples, the
 * root ("all") at the top so the first screen shows where time starts
 * however deep the stacks go (an icicle); the first level below it is the
 * process (comm).  Frames narrower than FLAMEGRAPH_MIN_PX are merged, per
 * parent, into one grey "[N small frames]" frame, so thousands of slivers
 * neither bloat the file nor vanish from the totals.  Every frame has a
 * hover title (name, samples, share).  A click zooms into a frame: it fills
 * the width, its descendants scale with it, its ancestors stay above at
 * full width (click one, or "all", or "Reset zoom" to go back); its
 * details show below the graph.  Search highlights frames matching a
 * regular expression and reports the share of all samples they cover
 * (nested matches counted once, as flamegraph.pl does).  The URL fragment
 * keeps both: #q=REGEX searches and #z=fN zooms on load, so a link shows
 * what its sender saw.  No external scripts or fonts.
 *
 * Differential mode (base given): the shape is the target profile; each
 * frame is coloured by how its share of all samples changed from base to
 * target, red for growth, blue for shrinkage, white for none, so a
 * regression shows up as a red tower.
 */
#ifndef FL_FLAMEGRAPH_H
#define FL_FLAMEGRAPH_H

#include <stdio.h>

#include "model/profile.h"

#define FLAMEGRAPH_MIN_PX 1.0	/* of a 1200 px width: 1/1200 of the samples */

/* Write p (and, for a differential graph, base) as SVG. Returns 0 or -ENOMEM. */
int flamegraph_write(FILE *out, const struct profile *p, const struct profile *base,
		     const char *title);

#endif
