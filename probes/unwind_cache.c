/*
 * unwind_cache.c - built unwind tables on disk, by GNU build id (see
 * unwind_cache.h), in unwind_table_encode's format (unwind_table.h).
 */
#include "probes/unwind_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fnv.h"
#include "core/log.h"

/* mkdir -p path (0700). 0 or -errno. */
static int make_dirs(const char *path)
{
	char p[512];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return mkdir(p, 0700) && errno != EEXIST ? -errno : 0;
}

int unwind_cache_dir(const char *dir)
{
	return make_dirs(dir);
}

/* The cache file of build id bid into path; 0, or -1 when bid is not plain hex. */
static int cache_path(const char *dir, const char *bid, char *path, size_t len)
{
	if (!dir[0] || !bid[0] || strspn(bid, "0123456789abcdef") != strlen(bid))
		return -1;
	snprintf(path, len, "%s/%s.unwind", dir, bid);
	return 0;
}

int unwind_cache_load(const char *dir, const char *bid, size_t max_rows, struct unwind_table *t)
{
	char path[700], err[200];
	struct stat st;
	void *buf;
	int fd, ret = -ENOENT;

	if (cache_path(dir, bid, path, sizeof(path)))
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > (64 << 20)) {
		close(fd);
		return -EINVAL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf && read(fd, buf, (size_t)st.st_size) == st.st_size)
		ret = unwind_table_decode(buf, (size_t)st.st_size, max_rows, t, err, sizeof(err));
	else
		snprintf(err, sizeof(err), "cannot be read");
	close(fd);
	free(buf);
	if (ret && ret != -ENOMEM) {
		log_warn("profile: %s: %s; building the table again", path, err);
		unlink(path);
	}
	return ret;
}

void unwind_cache_store(const char *dir, const char *bid, const struct unwind_table *t)
{
	char path[700], tmp[720];
	void *buf;
	size_t len;
	int fd, ok;

	if (cache_path(dir, bid, path, sizeof(path)) || unwind_table_encode(t, &buf, &len))
		return;
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	ok = fd >= 0 && write(fd, buf, len) == (ssize_t)len;
	if (fd >= 0)
		close(fd);
	free(buf);
	if (!ok || rename(tmp, path)) {
		log_debug("profile: cannot keep the unwind table in %s: %s", path, strerror(errno));
		unlink(tmp);
	}
}
