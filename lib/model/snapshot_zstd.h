/*
 * snapshot_zstd.h - snapshot entries compressed with zstd and a dictionary
 * trained on the layout.
 *
 * A snapshot's msgpack (snapshot.h) repeats in every entry what every
 * entry holds: the keys, the metric names, the label keys and values, the
 * shape of each histogram.  zstd with a dictionary that already holds them
 * (scripts/train_dict.sh, from a simulated fleet) stores mostly the
 * values: a 1 s snapshot of ~1.7 KB becomes ~270 bytes, a minute rollup of
 * ~2.2 KB ~500 bytes.  Two dictionaries, one per kind of entry:
 *
 *   id 1   1 s snapshots (tier 1), level 3 (the probe writes one a second)
 *   id 2   rollups (tiers 60 and 3600), level 9 (one a minute)
 *
 * An entry is a zstd frame (magic 28 b5 2f fd) naming its dictionary id,
 * or plain msgpack (a map: first byte 0x8N or 0xde/0xdf), as every entry
 * written before this and any entry compression would not make smaller.
 * Readers tell the two apart by the first byte, so old entries stay
 * readable; a frame naming a dictionary this build does not have is an
 * error that says so (a newer writer: upgrade the reader).
 *
 * FAULTLINE_WIRE_COMPRESS=0 in the environment writes plain msgpack (for
 * training a dictionary, and for tools that read entries themselves); 1 or
 * unset compresses; any other value is reported on stderr and compresses.
 */
#ifndef FL_SNAPSHOT_ZSTD_H
#define FL_SNAPSHOT_ZSTD_H

#include <stddef.h>
#include <stdint.h>

/* Whether buf (len bytes) is a zstd frame. */
int snapshot_zstd_is_frame(const void *buf, size_t len);

/*
 * The msgpack in[0..len) of a tier-`tier` snapshot compressed into *out
 * (malloc'd, *outlen bytes).  Returns 0; -EAGAIN when compression is off
 * or would not make it smaller (keep the input); -ENOMEM.
 */
int snapshot_zstd_pack(const void *in, size_t len, uint32_t tier, void **out, size_t *outlen);

/*
 * Decompress the frame in[0..len) (untrusted) into *out (malloc'd,
 * *outlen bytes), refusing more than max bytes.  Returns 0, or -EINVAL /
 * -E2BIG / -ENOMEM with the reason in err.
 */
int snapshot_zstd_unpack(const void *in, size_t len, size_t max, void **out, size_t *outlen,
			 char *err, size_t errlen);

#endif
