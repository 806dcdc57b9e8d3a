/*
 * host_registry.h - the host registry: each probe keeps its host's record
 * (last seen, labels; lib/model/host_entry.h) in its own key, fl:{H}:host
 * (keyspace.h), written through its spool (store.c).  Readers find the
 * hosts by scanning for those keys on every master.
 *
 * No key is shared between hosts, so a probe's Redis user (acl.h) writes
 * only its own record: a compromised host cannot register, rename or
 * relabel another, nor flood a shared index with fake names.
 *
 * Reads are bounded: at most STORE_HOSTS_MAX hosts (more is logged as an
 * error, the rest left out, never a stall) and STORE_HOST_RECORD_MAX bytes
 * of a record (GETRANGE: a longer one is not read, and left out).
 */
#ifndef FL_STORE_HOST_REGISTRY_H
#define FL_STORE_HOST_REGISTRY_H

#include <stddef.h>

#define STORE_HOSTS_MAX 100000
#define STORE_HOST_RECORD_MAX 65536

struct conn;

/*
 * The names of the registered hosts, sorted, into *names (an array of n
 * strings; free with store_host_names_free).  Returns 0, or -EIO / -ENOMEM
 * with the reason in err.
 */
int store_host_names(struct conn *c, char ***names, size_t *n, char *err, size_t errlen);
void store_host_names_free(char **names, size_t n);

/*
 * Call cb with every host's registry record (model/host_entry.h), in name
 * order; a record that cannot be decoded (or is over
 * STORE_HOST_RECORD_MAX) is logged and left out.  Returns the number of
 * records, or -EIO (reason in err).
 */
struct host_entry;
typedef void (*store_host_entry_cb)(const char *host, const struct host_entry *e, void *arg);
int store_host_entries(struct conn *c, store_host_entry_cb cb, void *arg, char *err,
		       size_t errlen);

/*
 * The same for the hosts names[0..n) only, in that order (a reader that
 * knows its hosts: no scan): a name with no record (not registered, or
 * not a host name at all) is left out.  Returns the records read, or -EIO.
 */
int store_host_entries_of(struct conn *c, char *const *names, size_t n, store_host_entry_cb cb,
			  void *arg, char *err, size_t errlen);

#endif
