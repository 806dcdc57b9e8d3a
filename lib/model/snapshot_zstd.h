/*
 * snapshot_zstd.h - snapshot entries compressed with zstd and a dictionary
 * trained on the layout.
 *
 * A snapshot's msgpack (snapshot.h) repeats in every entry what every
 * entry holds: the keys, the metric names, the label keys and values, the
 * shape of each histogram.  zstd with a dictionary that already holds them
 * (scripts/train_dict.sh, from a simulated fleet) stores mostly the
 * values.  Dictionaries go in pairs, one per kind of entry; writers use the
 * newest pair, readers every pair there has been:
 *
 *   id 1, 2   version 1 entries: 1 s snapshots (level 3), rollups (level 9)
 *   id 3, 4   version 2 (snapshot.h: deltas, compact numbers): 1 s
 *             snapshots at level 3 (the probe writes one a second: level 5
 *             would save ~14 % of a real host's bytes for 3x the CPU),
 *             rollups at level 9 (one a minute); trained on simulator
 *             seeds no bench uses
 *
 * An entry is a zstd frame (magic 28 b5 2f fd) naming its dictionary id,
 * or plain msgpack (a map: first byte 0x8N or 0xde/0xdf), as every entry
 * written before this and any entry compression would not make smaller.
 * Readers tell the two apart by the first byte, so old entries stay
 * readable; a frame naming a dictionary this build does not have is an
 * error that says so (a newer writer: upgrade the reader).  A frame
 * naming no dictionary (id 0, snapshot_zstd_pack_level) is read as well.
 *
 * FAULTLINE_WIRE_COMPRESS=0 in the environment writes plain msgpack (for
 * training a dictionary, and for tools that read entries themselves), and
 * keeps every tier's ended spans as entries rather than chunks
 * (store/compaction.h); 1 or unset compresses; any other value is reported
 * on stderr and compresses.
 */
#ifndef FL_SNAPSHOT_ZSTD_H
#define FL_SNAPSHOT_ZSTD_H

#include <stddef.h>
#include <stdint.h>

/* Whether writers compress (FAULTLINE_WIRE_COMPRESS above). */
int snapshot_zstd_enabled(void);

/* Whether buf (len bytes) is a zstd frame. */
int snapshot_zstd_is_frame(const void *buf, size_t len);

/*
 * The msgpack in[0..len) of a tier-`tier` snapshot compressed into *out
 * (malloc'd, *outlen bytes).  Returns 0; -EAGAIN when compression is off
 * or would not make it smaller (keep the input); -ENOMEM.
 */
int snapshot_zstd_pack(const void *in, size_t len, uint32_t tier, void **out, size_t *outlen);

/*
 * in[0..len) compressed at zstd level `level` with no dictionary into *out
 * (malloc'd, *outlen bytes), for blobs no trained dictionary fits (profile
 * windows: their names are the host's own).  Returns 0; -EAGAIN when
 * compression is off or would not make it smaller; -ENOMEM.
 */
int snapshot_zstd_pack_level(const void *in, size_t len, int level, void **out, size_t *outlen);

/*
 * Decompress the frame in[0..len) (untrusted) into *out (malloc'd,
 * *outlen bytes), refusing more than max bytes.  Returns 0, or -EINVAL /
 * -E2BIG / -ENOMEM with the reason in err, which the caller prefixes with
 * what the frame held ("snapshot: ", "profile: ").
 */
int snapshot_zstd_unpack(const void *in, size_t len, size_t max, void **out, size_t *outlen,
			 char *err, size_t errlen);

#endif
