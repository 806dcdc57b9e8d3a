/*
 * pprof.h - write a profile in pprof's format (protobuf, gzip'd), which
 * `go tool pprof`, Grafana Pyroscope, Speedscope and friends read.
 *
 * Sample types: samples/count and cpu/nanoseconds (count x period, the
 * period being 1 s / rate).  One Function and one Location per distinct
 * frame name (faultline symbolizes before storing, so addresses are not
 * kept); ids start at 1; the string table starts with "".  Each sample
 * carries labels service, comm and (when known) pid.
 */
#ifndef FL_PPROF_H
#define FL_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "model/profile.h"

/*
 * Encode p as a gzip'd pprof into a malloc'd buffer.  Returns 0 or
 * -ENOMEM / -EIO.
 */
int pprof_encode(const struct profile *p, uint8_t **out, size_t *outlen);

/* Gunzip (for tests and the CLI's checks). Returns 0 or -EINVAL. */
int pprof_gunzip(const uint8_t *in, size_t len, uint8_t **out, size_t *outlen);

#endif
