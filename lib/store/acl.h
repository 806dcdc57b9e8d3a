/*
 * acl.h - Redis ACL users for faultline's roles: what each part of a fleet
 * may do to the layout in keyspace.h, and nothing more.
 *
 * A compromised host must not be able to mute or forge the fleet's pages,
 * nor touch another host's data.  So each role gets its own Redis user,
 * and every user's key patterns name only the keys that role writes or
 * reads (keyspace.h's table), with only the commands it sends:
 *
 *   fl-probe-H    writes fl:{H}:* (its streams, chunks, profiles, drives,
 *                 its registry record fl:{H}:host), reads fl:{H}:* (its
 *                 burst request, its own tiers when compacting); may add
 *                 deploy markers to fl:deploys (XADD only).  Nothing
 *                 else: not fl:alerts, fl:silences, another host's keys.
 *   fl-rules      reads fl:*; writes fl:alerts and {fl:alerts}:* (events,
 *                 checkpoints, leases, epochs, partials).
 *   fl-alerter    reads fl:*; consumes fl:alerts (its consumer group:
 *                 read, claim, acknowledge, trim; never XADD), writes
 *                 {fl:alerts}:group:*, fl:alerts:dead, fl:notifications.
 *   fl-operator   the faultline CLI: reads fl:* and {fl:alerts}:*; writes
 *                 fl:silences, fl:deploys and fl:{H}:profile:burst.
 *   fl-web        faultline-web: reads fl:* and {fl:alerts}:* (the tiers,
 *                 the registry, profiles, drives, the alert checkpoint and
 *                 index); writes nothing.
 *   default       off: a client that does not authenticate can do nothing.
 *
 * Scripts (EVAL) run with their caller's permissions, so a role's scripts
 * can touch only its keys too.  Dangerous commands (FLUSHALL, KEYS, CONFIG,
 * DEBUG, ACL, ...) are no role's.
 */
#ifndef FL_STORE_ACL_H
#define FL_STORE_ACL_H

#include <stddef.h>

struct strbuf;

enum acl_role { ACL_PROBE, ACL_RULES, ACL_ALERTER, ACL_OPERATOR, ACL_WEB };

/*
 * The Redis user name of role (host: the probe's host, else ignored) into
 * buf.  Returns 0, or -1 when it does not fit or host is not a valid host
 * name (store_host_valid).
 */
int acl_user_name(enum acl_role role, const char *host, char *buf, size_t len);

/*
 * Append the aclfile line ("user NAME on #SHA256 ...", newline-ended) of
 * role to out; password_sha256 is the hex SHA-256 of the user's password
 * (Redis keeps only that).  setuser: an "ACL SETUSER NAME ..." command
 * instead, for redis-cli.  Returns 0 or -1 (an invalid host).
 */
int acl_user_line(enum acl_role role, const char *host, const char *password_sha256, int setuser,
		  struct strbuf *out);

/* The line that turns the default user off. */
void acl_default_off(int setuser, struct strbuf *out);

#endif
