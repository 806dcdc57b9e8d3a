/*
 * float_text.h - a double as Prometheus' HTTP API writes a sample value:
 * the shortest decimal that reads back as the same double, in plain
 * notation (Go's strconv.FormatFloat(v, 'f', -1, 64): 1e-07 is
 * "0.0000001"), "NaN", "+Inf" or "-Inf".
 *
 * A value that is an integer below 10^15 or a binary fraction of at most
 * 16 significant digits (counts, bytes, the probe's ratios of 2^-16: most
 * samples) is written exactly, in 64-bit arithmetic, which is then also the
 * shortest text (the proof is in float_text.cc): ~320 instructions a value.
 * Any other goes through libstdc++'s std::to_chars (Ryu, ~600), its
 * shortest digits laid out in plain notation as Go does (1e+21 is a 1 and
 * 21 zeros, not the double's exact expansion), against ~900 ns for
 * printing at 15, 16, then 17 digits until strtod reads the value back.
 * The one C++ file of faultline, behind a C function.
 */
#ifndef FL_WEB_FLOAT_TEXT_H
#define FL_WEB_FLOAT_TEXT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest text float_text writes, with its NUL: 2^-1074 in plain notation. */
#define FLOAT_TEXT_MAX 400

/* v into buf (FLOAT_TEXT_MAX bytes), NUL-terminated; returns its length. */
size_t float_text(double v, char *buf);

/*
 * u in decimal into buf (at least 20 bytes), two digits a division, not
 * terminated; returns its length.  The digits float_text writes, for
 * other numbers in an answer (prom_time_text's seconds).
 */
size_t uint_text(uint64_t u, char *buf);

#ifdef __cplusplus
}
#endif

#endif
