/*
 * unwind_cache.c - built unwind tables on disk, by GNU build id (see
 * unwind_cache.h), and the file format they are kept in (unwind.h:
 * unwind_table_encode / unwind_table_decode).
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

/* ---- the cache file format (unwind.h) ---------------------------------- */

#define CACHE_MAGIC "FLUNW\0\0\1"
#define CACHE_MAX_LOADS 64

struct cache_header {
	char magic[8];
	uint32_t row_size, load_size;
	uint64_t nrows, nloads, fdes, unsupported;
	uint64_t sum;		/* FNV-1a 64 of what follows the header */
};

int unwind_table_encode(const struct unwind_table *t, void **buf, size_t *len)
{
	size_t rows = t->nrows * sizeof(*t->rows), loads = t->nloads * sizeof(*t->loads);
	struct cache_header h = { .row_size = sizeof(*t->rows), .load_size = sizeof(*t->loads),
				  .nrows = t->nrows, .nloads = t->nloads, .fdes = t->fdes,
				  .unsupported = t->unsupported };
	uint8_t *b = malloc(sizeof(h) + rows + loads);

	if (!b)
		return -ENOMEM;
	memcpy(h.magic, CACHE_MAGIC, 8);
	memcpy(b + sizeof(h), t->rows, rows);
	memcpy(b + sizeof(h) + rows, t->loads, loads);
	h.sum = fnv64_bytes(FNV64_OFFSET, b + sizeof(h), rows + loads);
	memcpy(b, &h, sizeof(h));
	*buf = b;
	*len = sizeof(h) + rows + loads;
	return 0;
}

int unwind_table_decode(const void *buf, size_t len, size_t max_rows, struct unwind_table *t,
			char *err, size_t errlen)
{
	const uint8_t *b = buf;
	struct cache_header h;
	size_t rows, loads;

	memset(t, 0, sizeof(*t));
	if (len < sizeof(h)) {
		snprintf(err, errlen, "shorter than its header");
		return -EINVAL;
	}
	memcpy(&h, b, sizeof(h));
	if (memcmp(h.magic, CACHE_MAGIC, 8) || h.row_size != sizeof(*t->rows) ||
	    h.load_size != sizeof(*t->loads)) {
		snprintf(err, errlen, "not a table of this build of faultline-probe");
		return -EINVAL;
	}
	if (!h.nrows || h.nrows > UINT32_MAX || (max_rows && h.nrows > max_rows) || !h.nloads ||
	    h.nloads > CACHE_MAX_LOADS) {
		snprintf(err, errlen, "%llu rows and %llu loads: out of bounds",
			 (unsigned long long)h.nrows, (unsigned long long)h.nloads);
		return -EINVAL;
	}
	rows = (size_t)h.nrows * sizeof(*t->rows);
	loads = (size_t)h.nloads * sizeof(*t->loads);
	if (len != sizeof(h) + rows + loads || fnv64_bytes(FNV64_OFFSET, b + sizeof(h), rows + loads) != h.sum) {
		snprintf(err, errlen, "truncated or damaged (size or checksum)");
		return -EINVAL;
	}
	t->rows = malloc(rows);
	t->loads = malloc(loads);
	if (!t->rows || !t->loads) {
		unwind_table_free(t);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(t->rows, b + sizeof(h), rows);
	memcpy(t->loads, b + sizeof(h) + rows, loads);
	t->nrows = (size_t)h.nrows;
	t->nloads = (size_t)h.nloads;
	t->fdes = (size_t)h.fdes;
	t->unsupported = (size_t)h.unsupported;
	for (size_t i = 0; i < t->nrows; i++) {
		const struct unwind_row *r = &t->rows[i];

		if ((i && r->pc <= t->rows[i - 1].pc) || r->cfa > UNWIND_CFA_STOP ||
		    r->rbp > UNWIND_RBP_AT) {
			snprintf(err, errlen, "row %zu is out of order or has an unknown rule", i);
			unwind_table_free(t);
			return -EINVAL;
		}
	}
	return 0;
}


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
