/*
 * hist_layout.h - the one histogram bucket layout used fleet-wide.
 *
 * Shared verbatim by the BPF programs (bpf/ *.bpf.c) and user space, so a
 * bucket index computed in the kernel means the same thing in every host's
 * snapshot, in every rollup and in the rules engine: merging histograms
 * across hosts, racks and time is bucket-wise addition.
 *
 * The layout is H2 ("high dynamic range, two-level") log-linear:
 *
 *   v < 2^G          bucket v                    (exact)
 *   v >= 2^G         let e = floor(log2 v)       (e in G..63)
 *                    bucket (e - G + 1) * 2^G + ((v >> (e - G)) & (2^G - 1))
 *
 * i.e. each power of two [2^e, 2^(e+1)) is split into 2^G equal sub-buckets
 * of width 2^(e-G).  With G = 4 there are 16 + 60 * 16 = 976 buckets
 * covering all of u64.  A value's bucket is at most 2^(e-G) wide and starts
 * at or above 2^e, so reporting the bucket midpoint is within
 * 2^-(G+1) = 3.125 % of any value in it (exact below 16).
 *
 * Written without compiler builtins so that it verifies as BPF.
 */
#ifndef FL_HIST_LAYOUT_H
#define FL_HIST_LAYOUT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define HIST_G 4
#define HIST_SUB (1U << HIST_G)
#define HIST_BUCKETS ((64 - HIST_G + 1) * HIST_SUB)

/* floor(log2(v)) for v > 0, branchy binary search (BPF has no clz). */
static inline __u32 hist_log2(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

/* Bucket index of v, in [0, HIST_BUCKETS). */
static inline __u32 hist_bucket_index(__u64 v)
{
	__u32 e;

	if (v < HIST_SUB)
		return (__u32)v;
	e = hist_log2(v);
	return (e - HIST_G + 1) * HIST_SUB + (__u32)((v >> (e - HIST_G)) & (HIST_SUB - 1));
}

#endif
