/*
 * secret.h - secrets read from files: a Redis password, a webhook's HMAC
 * key, a bearer token.
 *
 * A secret lives in a file of its own so that configuration files may be
 * world-readable and a unit may hand it over as a systemd credential
 * (LoadCredential=).  The file is taken whole or refused, never cut: it
 * must be a regular file no one but its owner can read or write (mode 0600
 * or stricter), hold one line (a final newline is dropped), no NUL byte,
 * nothing empty, and fit the caller's buffer.
 *
 * Under systemd a relative path names one of the unit's credentials: it is
 * read from $CREDENTIALS_DIRECTORY (LoadCredential=NAME:/etc/faultline/...
 * in the unit, password_file=NAME in the URL), which the service's own
 * user can read while the original stays root's.
 */
#ifndef FL_CORE_SECRET_H
#define FL_CORE_SECRET_H

#include <stddef.h>

/*
 * Read the secret in path into out (outlen bytes, NUL-terminated).
 * Returns 0, or -1 with the reason (naming path, never the content) in err.
 */
int secret_file_read(const char *path, char *out, size_t outlen, char *err, size_t errlen);

#endif
