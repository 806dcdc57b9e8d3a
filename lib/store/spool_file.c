/*
 * spool_file.c - the spool's file across a probe restart; see spool_file.h
 * for the format and its guarantees.
 */
#include "store/spool_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"

#define SPOOL_MAGIC "FLSPOOL1"

void spool_item_free(struct spool_item *it)
{
	if (it) {
		free(it->blob);
		free(it->delta);
		free(it);
	}
}

static int put_bytes(FILE *f, const void *p, size_t n)
{
	return fwrite(p, 1, n, f) == n ? 0 : -1;
}

static int put_str(FILE *f, const char *s)
{
	uint32_t n = (uint32_t)strlen(s);

	return put_bytes(f, &n, sizeof(n)) || put_bytes(f, s, n);
}

/* fsync the directory of path: the rename itself survives a power cut. */
static void sync_dir(const char *path)
{
	char dir[600];
	char *slash;
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd))
		log_warn("cannot fsync %s: %s; the spool may not survive a power cut", dir,
			 strerror(errno));
	if (fd >= 0)
		close(fd);
}

int spool_file_save(const char *path, const struct spool_item *(*at)(void *arg, size_t i),
		    void *arg, size_t n)
{
	char tmp[600];
	size_t saved = 0;
	FILE *f;
	int fd, bad;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/*
	 * O_NOFOLLOW: a symlink planted at the temporary name (the spool's
	 * directory is the probe's, but be sure) is refused, not written through.
	 */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		log_error("cannot write the spool to %s: %s; %zu snapshot(s) are lost", tmp,
			  strerror(errno), n);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	bad = put_bytes(f, SPOOL_MAGIC, 8);
	for (size_t i = 0; i < n && !bad; i++) {
		const struct spool_item *it = at(arg, i);
		uint32_t kind = it->kind, star = (uint32_t)it->star, reg = (uint32_t)it->host_registry;
		uint32_t nf = (uint32_t)it->nfields;
		uint64_t bl = it->bloblen;

		if (it->done || it->kind == ITEM_COMPACT || it->maxlen)
			continue;
		bad = put_bytes(f, &kind, 4) || put_str(f, it->key) || put_str(f, it->field) ||
		      put_bytes(f, &it->ts_ms, 8) || put_bytes(f, &it->minid, 8) ||
		      put_bytes(f, &star, 4) || put_bytes(f, &reg, 4) || put_bytes(f, &nf, 4) ||
		      put_bytes(f, &bl, 8) || put_bytes(f, it->blob, it->bloblen);
		saved++;
	}
	if (bad || fflush(f) || fsync(fileno(f))) {
		log_error("cannot write the spool to %s: %s; %zu snapshot(s) are lost", tmp,
			  strerror(errno), n);
		fclose(f);
		unlink(tmp);
		return -1;
	}
	fclose(f);
	if (rename(tmp, path)) {
		log_error("cannot rename %s: %s", tmp, strerror(errno));
		unlink(tmp);
		return -1;
	}
	sync_dir(path);
	log_warn("Redis is unreachable: %zu entr%s kept in %s for the next start", saved,
		 saved == 1 ? "y" : "ies", path);
	return 0;
}

static int get_bytes(FILE *f, void *p, size_t n)
{
	return fread(p, 1, n, f) == n ? 0 : -1;
}

static int get_str(FILE *f, char *buf, size_t len)
{
	uint32_t n;

	if (get_bytes(f, &n, 4) || n >= len || get_bytes(f, buf, n))
		return -1;
	buf[n] = '\0';
	return 0;
}

/*
 * Read spool entries from f (after the magic) and hand each to push
 * (which takes ownership).  Returns how many, and sets *damaged when an
 * entry did not fit (the rest is ignored).
 */
static size_t spool_read(FILE *f, size_t max_bytes, void (*push)(void *, struct spool_item *),
			 void *arg, int *damaged)
{
	size_t loaded = 0;

	*damaged = 0;
	for (;;) {
		struct spool_item *it;
		uint32_t kind, star, reg, nf;
		uint64_t bl;
		int c = fgetc(f);

		if (c == EOF)
			break;
		ungetc(c, f);
		it = calloc(1, sizeof(*it));
		if (!it || get_bytes(f, &kind, 4) || kind > ITEM_HSET ||
		    get_str(f, it->key, sizeof(it->key)) ||
		    get_str(f, it->field, sizeof(it->field)) || get_bytes(f, &it->ts_ms, 8) ||
		    get_bytes(f, &it->minid, 8) || get_bytes(f, &star, 4) ||
		    get_bytes(f, &reg, 4) || get_bytes(f, &nf, 4) || nf > SPOOL_MAX_FIELDS ||
		    get_bytes(f, &bl, 8) || bl > max_bytes || !(it->blob = malloc(bl + 1)) ||
		    get_bytes(f, it->blob, bl)) {
			spool_item_free(it);
			*damaged = 1;
			break;
		}
		it->kind = (enum item_kind)kind;
		it->star = star != 0;
		it->host_registry = reg != 0;
		it->nfields = (int)nf;
		it->bloblen = bl;
		push(arg, it);
		loaded++;
	}
	return loaded;
}

static void push_to_free(void *arg, struct spool_item *it)
{
	(void)arg;
	spool_item_free(it);
}

int store_spool_check(const void *buf, size_t len, size_t max_bytes)
{
	FILE *f = fmemopen((void *)buf, len, "r");
	char magic[8];
	int damaged = 0;
	size_t n = 0;

	if (!f)
		return -ENOMEM;
	if (get_bytes(f, magic, 8) || memcmp(magic, SPOOL_MAGIC, 8))
		damaged = 1;
	else
		n = spool_read(f, max_bytes, push_to_free, NULL, &damaged);
	fclose(f);
	return damaged ? -EINVAL : (int)n;
}

size_t spool_file_load(const char *path, size_t max_bytes,
		       void (*push)(void *arg, struct spool_item *it), void *arg)
{
	char magic[8];
	size_t loaded = 0;
	int damaged = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	if (get_bytes(f, magic, 8) || memcmp(magic, SPOOL_MAGIC, 8)) {
		log_warn("%s is not a faultline spool file; ignored and removed", path);
		goto out;
	}
	loaded = spool_read(f, max_bytes, push, arg, &damaged);
	if (damaged)
		log_warn("%s: damaged after %zu entries; the rest is ignored", path, loaded);
out:
	fclose(f);
	unlink(path);
	return loaded;
}
