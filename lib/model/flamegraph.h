/*
 * flamegraph.h - self-contained interactive SVG flame graphs.
 *
 * One rectangle per (path of frames), width proportional to samples, root
 * at the bottom; the first level is the process (comm).  Every frame has a
 * hover title (name, samples, share); a Search button highlights frames
 * matching a regular expression and reports the share they cover; a click
 * shows a frame's details below the graph.  No external scripts or fonts.
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

/* Write p (and, for a differential graph, base) as SVG. Returns 0 or -ENOMEM. */
int flamegraph_write(FILE *out, const struct profile *p, const struct profile *base,
		     const char *title);

#endif
