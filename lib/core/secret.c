/*
 * secret.c - secrets read from files; see secret.h.
 */
#include "core/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int secret_file_read(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	char *buf = NULL;
	struct stat st;
	ssize_t n;
	size_t len;
	int fd;

	char joined[4096];
	const char *creds = getenv("CREDENTIALS_DIRECTORY");

	if (outlen < 2) {
		snprintf(err, errlen, "%s: no room for a secret", path);
		return -1;
	}
	/* a relative name under systemd is one of the unit's credentials (LoadCredential=) */
	if (path[0] != '/' && creds && creds[0]) {
		snprintf(joined, sizeof(joined), "%s/%s", creds, path);
		path = joined;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto fail;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "%s: mode %04o lets others read or change a secret; "
			 "chmod 600 it", path, (unsigned)(st.st_mode & 07777));
		goto fail;
	}
	/* room for the secret, its line end and one byte more: longer is refused, not cut */
	buf = malloc(outlen + 2);
	if (!buf) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	do
		n = read(fd, buf, outlen + 2);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	len = (size_t)n;
	if (len && buf[len - 1] == '\n')
		len--;
	if (len && buf[len - 1] == '\r')
		len--;
	if (len >= outlen || (size_t)n == outlen + 2) {
		snprintf(err, errlen, "%s: longer than %zu bytes; a secret is taken whole or "
			 "not at all", path, outlen - 1);
		goto fail;
	}
	if (!len || memchr(buf, '\0', len) || memchr(buf, '\n', len)) {
		snprintf(err, errlen, "%s: %s", path, !len ? "empty" :
			 "more than one line, or a NUL byte");
		goto fail;
	}
	memcpy(out, buf, len);
	out[len] = '\0';
	explicit_bzero(buf, outlen + 2);
	free(buf);
	close(fd);
	return 0;
fail:
	if (buf) {
		explicit_bzero(buf, outlen + 2);
		free(buf);
	}
	memset(out, 0, outlen);
	close(fd);
	return -1;
}
