/*
 * profile_export.h - write a profile to a file in the format its name
 * asks for; shared by `faultline profile` and `faultline-probe profile`.
 *
 *   *.svg               flame graph (differential when base is given)
 *   *.folded, *.txt     folded stacks ("comm;a;b;c 42")
 *   anything else       gzip'd pprof (cpu.pb.gz)
 *   "-"                 folded stacks on stdout
 */
#ifndef FL_PROFILE_EXPORT_H
#define FL_PROFILE_EXPORT_H

#include "model/profile.h"

/* Returns 0 or -errno. */
int profile_export(const struct profile *p, const struct profile *base, const char *path,
		   const char *title);

#endif
