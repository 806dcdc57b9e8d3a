/*
 * chunk_internal.h - what chunk.c (the encoder) and the decoder
 * (chunk_decode.c, chunk_column.c) share: the format's magic and tags;
 * chunk.h documents the format itself.
 */
#ifndef FL_CHUNK_INTERNAL_H
#define FL_CHUNK_INTERNAL_H

#include "model/chunk.h"

static const char chunk_magic[4] = { 'F', 'L', 'K', CHUNK_VERSION };

#define GAUGE_RAW 255
/* A histogram column's bucket counts (chunk.h); HIST_CHANGED from version 2 on. */
enum { HIST_DELTA = 0, HIST_RAW = 1, HIST_CHANGED = 2 };

#endif
