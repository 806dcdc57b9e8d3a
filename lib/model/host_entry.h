/*
 * host_entry.h - a host's entry in the host registry (fl:{H}:host, one JSON
 * object per host, written by the probe with every snapshot):
 *
 *   {"last_seen_ms":1764590400000,"interval_ms":1000,
 *    "labels":{"rack":"r12","switch":"sw3"}}
 *
 * The encoder and the decoder of that contract, side by side.
 */
#ifndef FL_HOST_ENTRY_H
#define FL_HOST_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "model/snapshot.h"

struct host_entry {
	uint64_t last_seen_ms;
	uint64_t interval_ms;
	struct label *labels;	/* malloc'd, sorted as written */
	uint32_t nlabels;
};

/* Append s's registry entry (its time, interval and host labels) to out. Returns 0 or -ENOMEM. */
int host_entry_encode(const struct snapshot *s, struct strbuf *out);

/*
 * Decode an entry.  Returns 0, or -EINVAL with the reason in err (not an
 * object, a field of the wrong type), or -ENOMEM.  Unknown fields are
 * ignored: newer probes may add some.
 */
int host_entry_decode(const char *json, size_t len, struct host_entry *e, char *err,
		      size_t errlen);

/* The value of label key, or NULL. */
const char *host_entry_label(const struct host_entry *e, const char *key);

void host_entry_free(struct host_entry *e);

#endif
