/*
 * float_text.h - a double as Prometheus' HTTP API writes a sample value:
 * the shortest decimal that reads back as the same double, in plain
 * notation (Go's strconv.FormatFloat(v, 'f', -1, 64): 1e-07 is
 * "0.0000001"), "NaN", "+Inf" or "-Inf".
 *
 * libstdc++'s std::to_chars (Ryu) does the digits: ~40 ns a value against
 * ~900 for printing at 15, 16, then 17 digits until strtod reads the
 * value back, which was a seventh of a range query's time.  The one C++
 * file of faultline, behind a C function.
 */
#ifndef FL_WEB_FLOAT_TEXT_H
#define FL_WEB_FLOAT_TEXT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest text float_text writes, with its NUL: 2^-1074 in plain notation. */
#define FLOAT_TEXT_MAX 400

/* v into buf (FLOAT_TEXT_MAX bytes), NUL-terminated; returns its length. */
size_t float_text(double v, char *buf);

#ifdef __cplusplus
}
#endif

#endif
