/*
 * host_registry.h - reading fl:hosts, where every probe registers its
 * host (last seen, labels; lib/model/host_entry.h).  The probe writes its
 * entry through its spool (store_put_hash, store.h).
 */
#ifndef FL_STORE_HOST_REGISTRY_H
#define FL_STORE_HOST_REGISTRY_H

#include <stddef.h>

struct conn;

/*
 * The host names fl:hosts registers, into *names (an array of n strings;
 * free with store_host_names_free).  Entries that are not strings are
 * skipped.  Returns 0, or -EIO / -ENOMEM with the reason in err.
 */
int store_host_names(struct conn *c, char ***names, size_t *n, char *err, size_t errlen);
void store_host_names_free(char **names, size_t n);

/*
 * Call cb with every host's registry entry (model/host_entry.h); an entry
 * that cannot be decoded is logged and left out.  Returns the number of
 * entries, or -EIO (reason in err).
 */
struct host_entry;
typedef void (*store_host_entry_cb)(const char *host, const struct host_entry *e, void *arg);
int store_host_entries(struct conn *c, store_host_entry_cb cb, void *arg, char *err,
		       size_t errlen);

#endif
