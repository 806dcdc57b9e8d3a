/*
 * codec_cost.c - what reading an entry costs, plain and compressed.
 *
 *   codec_cost FILE...
 *
 * Each FILE is one stream entry's "d" field as Redis holds it (written by
 * `faultline sim`: a zstd frame, snapshot_zstd.h), in the stream's order:
 * a rollup that is a delta (snapshot.h) is decoded on the file before it,
 * as a reader of the stream does.  For every file, the
 * plain msgpack inside it (what every entry was before compression) and the
 * frame are each decoded until about 0.2 s has passed; printed: the bytes
 * and the ns per decode of each, their ratio, and the ns it costs a writer
 * (the probe) to compress one.  CPU time, so a busy
 * machine slows both sides alike.
 *
 *   codec_cost --chunks FILE...
 *
 * Each FILE is a chunk (model/chunk.h: a stream entry's "c" field of
 * fl:{H}:s60:chunks): printed, the points they hold, their bytes per point,
 * and the ns per point of decoding them as the rules engine does
 * (histograms compact).
 *
 *   codec_cost --profile-span FILE...
 *
 * Each FILE is one profile window as Redis holds it (a "d" field of
 * fl:{H}:p10 or p3600), oldest first: the bytes of the first k windows as
 * one span (model/profile_span.h, zstd 19, as the compactor writes it) for
 * every k, beside their bytes as entries, so that what one more window adds
 * to a span (what a day chunk of hours will cost) is measured before a
 * whole span has been waited for.
 *
 *   codec_cost --chunk-span FILE...
 *
 * The same for a tier's entries (a "d" field of fl:{H}:s60 or s3600, in
 * the stream's order, deltas decoded on the entry before): the bytes of
 * the first k points as one chunk (model/chunk.h) for every k.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/chunk.h"
#include "model/profile.h"
#include "model/profile_span.h"
#include "model/snapshot.h"
#include "model/snapshot_zstd.h"

static double cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* ns per decode of buf (on base, when it is a delta), over ~0.2 s of CPU. */
static double decode_ns(const void *buf, size_t len, const struct snapshot *base)
{
	double t0 = cpu_ns(), t;
	long n = 0;

	do {
		struct snapshot s;
		char err[256];

		for (int i = 0; i < 64; i++, n++) {
			if (snapshot_decode_on(buf, len, &s, base, 0, err, sizeof(err))) {
				fprintf(stderr, "codec_cost: %s\n", err);
				exit(1);
			}
			snapshot_free(&s);
		}
		t = cpu_ns();
	} while (t - t0 < 2e8);
	return (t - t0) / (double)n;
}

/* ns per snapshot_zstd_pack of the plain entry buf (what a writer adds), over ~0.2 s. */
static double pack_ns(const void *buf, size_t len, uint32_t tier)
{
	double t0 = cpu_ns(), t;
	long n = 0;

	do {
		for (int i = 0; i < 64; i++, n++) {
			void *z;
			size_t zlen;

			if (snapshot_zstd_pack(buf, len, tier, &z, &zlen) == 0)
				free(z);
		}
		t = cpu_ns();
	} while (t - t0 < 2e8);
	return (t - t0) / (double)n;
}

static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) ||
	    !(buf = malloc((size_t)n)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "codec_cost: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* ns per chunk_decode of buf, over ~0.2 s of CPU; *points: the points it holds. */
static double chunk_ns(const void *buf, size_t len, size_t *points)
{
	double t0 = cpu_ns(), t;
	long n = 0;

	do {
		for (int i = 0; i < 8; i++, n++) {
			struct snapshot *pts;
			char err[256];

			if (chunk_decode(buf, len, 1, &pts, points, err, sizeof(err))) {
				fprintf(stderr, "codec_cost: %s\n", err);
				exit(1);
			}
			chunk_points_free(pts, *points);
		}
		t = cpu_ns();
	} while (t - t0 < 2e8);
	return (t - t0) / (double)n;
}

static int chunks_main(int argc, char **argv)
{
	double bytes = 0, ns = 0;
	size_t points = 0;

	for (int i = 0; i < argc; i++) {
		size_t len, n;
		void *buf = slurp(argv[i], &len);

		ns += chunk_ns(buf, len, &n);
		points += n;
		bytes += (double)len;
		free(buf);
	}
	if (!points)
		return 1;
	printf("%d chunks: %zu points, %.1f bytes a point, decoded in %.0f ns a point\n", argc,
	       points, bytes / (double)points, ns / (double)points);
	return 0;
}

/* The table --profile-span and --chunk-span print: one row per prefix of k items. */
static void prefix_header(const char *items, const char *as)
{
	printf("%8s %14s %12s %12s %16s\n", items, "as entries B", as, "ratio", "last one adds");
}

static void prefix_row(int k, double entries, size_t bytes, double *prev)
{
	printf("%8d %14.0f %12zu %11.2fx %14.0f B\n", k, entries, bytes, entries / (double)bytes,
	       (double)bytes - *prev);
	*prev = (double)bytes;
}

static int profile_span_main(int argc, char **argv)
{
	struct profile *w = calloc((size_t)argc + 1, sizeof(*w));
	double entries = 0, prev = 0;

	if (!w || argc < 1)
		return 1;
	prefix_header("windows", "as a span B");
	for (int i = 0; i < argc; i++) {
		size_t len, slen;
		void *buf = slurp(argv[i], &len);
		char err[256], *span;

		if (profile_decode(buf, len, &w[i], err, sizeof(err))) {
			fprintf(stderr, "codec_cost: %s: %s\n", argv[i], err);
			return 1;
		}
		free(buf);
		entries += (double)len;
		if (profile_span_encode(w, (size_t)i + 1, PROFILE_LEVEL_ARCHIVE, &span, &slen)) {
			fprintf(stderr, "codec_cost: %s: the first %d windows do not make a span\n",
				argv[i], i + 1);
			return 1;
		}
		prefix_row(i + 1, entries, slen, &prev);
		free(span);
	}
	for (int i = 0; i < argc; i++)
		profile_free(&w[i]);
	free(w);
	return 0;
}

static int chunk_span_main(int argc, char **argv)
{
	struct snapshot *pts = calloc((size_t)argc + 1, sizeof(*pts));
	double entries = 0, prev = 0;

	if (!pts || argc < 1)
		return 1;
	prefix_header("points", "as a chunk B");
	for (int i = 0; i < argc; i++) {
		size_t len, clen;
		void *buf = slurp(argv[i], &len);
		char err[256], *chunk;

		if (snapshot_decode_on(buf, len, &pts[i], i ? &pts[i - 1] : NULL, 0, err,
				       sizeof(err))) {
			fprintf(stderr, "codec_cost: %s: %s (give a stream's entries in order)\n",
				argv[i], err);
			return 1;
		}
		free(buf);
		entries += (double)len;
		if (chunk_encode(pts, (size_t)i + 1, &chunk, &clen)) {
			fprintf(stderr, "codec_cost: %s: the first %d points do not make a chunk\n",
				argv[i], i + 1);
			return 1;
		}
		prefix_row(i + 1, entries, clen, &prev);
		free(chunk);
	}
	for (int i = 0; i < argc; i++)
		snapshot_free(&pts[i]);
	free(pts);
	return 0;
}

int main(int argc, char **argv)
{
	double zb = 0, pb = 0, zns = 0, pns = 0, cns = 0;
	struct snapshot prev;
	int n = 0, have_prev = 0;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fprintf(argc < 2 ? stderr : stdout, "usage: codec_cost FILE...\n"
			"  decode cost of stream entries (as Redis holds them), plain and compressed\n"
			"       codec_cost --chunks FILE...\n"
			"  points, bytes and decode cost of chunks (fl:{H}:s60:chunks entries)\n"
			"       codec_cost --profile-span FILE...\n"
			"  bytes of the first k profile windows as one span, for every k\n"
			"       codec_cost --chunk-span FILE...\n"
			"  bytes of the first k entries of a tier as one chunk, for every k\n");
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--chunks"))
		return chunks_main(argc - 2, argv + 2);
	if (!strcmp(argv[1], "--chunk-span"))
		return chunk_span_main(argc - 2, argv + 2);
	if (!strcmp(argv[1], "--profile-span"))
		return profile_span_main(argc - 2, argv + 2);
	for (int i = 1; i < argc; i++) {
		size_t zlen, plen;
		void *z = slurp(argv[i], &zlen), *plain;
		char err[256];

		if (!snapshot_zstd_is_frame(z, zlen)) {
			fprintf(stderr, "codec_cost: %s is not compressed (FAULTLINE_WIRE_COMPRESS=0?)\n",
				argv[i]);
			return 1;
		}
		if (snapshot_zstd_unpack(z, zlen, SNAPSHOT_MAX_BYTES, &plain, &plen, err,
					 sizeof(err))) {
			fprintf(stderr, "codec_cost: %s: %s\n", argv[i], err);
			return 1;
		}
		{
			struct snapshot s;

			if (snapshot_decode_on(plain, plen, &s, have_prev ? &prev : NULL, 0, err,
					       sizeof(err))) {
				fprintf(stderr, "codec_cost: %s: %s (give a stream's entries in order)\n",
					argv[i], err);
				return 1;
			}
			cns += pack_ns(plain, plen, s.tier);
			zb += (double)zlen;
			pb += (double)plen;
			pns += decode_ns(plain, plen, have_prev ? &prev : NULL);
			zns += decode_ns(z, zlen, have_prev ? &prev : NULL);
			if (have_prev)
				snapshot_free(&prev);
			prev = s;
			have_prev = 1;
		}
		n++;
		free(z);
		free(plain);
	}
	printf("%d entries: plain %.0f bytes decoded in %.0f ns, compressed %.0f bytes in %.0f ns "
	       "(%.2fx the bytes, %.2fx the decode time); compressing one costs its writer "
	       "%.0f ns\n", n, pb / n, pns / n, zb / n, zns / n, zb / pb, zns / pns, cns / n);
	if (have_prev)
		snapshot_free(&prev);
	return 0;
}
