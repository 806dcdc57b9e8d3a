/*
 * slowfs.c - a one-file FUSE filesystem whose writes are slow, to build a
 * slow block device for tests: a loop device over MOUNT/disk.img sees real
 * block-layer write latency of at least the delay, while reads stay fast.
 *
 *   slowfs MOUNTPOINT [-o fuse options] -- SIZE_MB WRITE_DELAY_MS
 *
 * Runs in the foreground until unmounted (fusermount3 -u MOUNTPOINT) or
 * killed.  The file lives in memory.
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fuse3/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char *disk;
static size_t disk_size;
static long delay_ms;

static int sf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (strcmp(path, "/") == 0) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (strcmp(path, "/disk.img") == 0) {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = (off_t)disk_size;
		return 0;
	}
	return -ENOENT;
}

static int sf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, "disk.img", NULL, 0, 0);
	return 0;
}

static int sf_open(const char *path, struct fuse_file_info *fi)
{
	(void)fi;
	return strcmp(path, "/disk.img") ? -ENOENT : 0;
}

static int sf_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	if ((size_t)off >= disk_size)
		return 0;
	if (size > disk_size - (size_t)off)
		size = disk_size - (size_t)off;
	memcpy(buf, disk + off, size);
	return (int)size;
}

static int sf_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct timespec ts = { .tv_sec = delay_ms / 1000, .tv_nsec = delay_ms % 1000 * 1000000 };

	(void)path;
	(void)fi;
	if ((size_t)off >= disk_size)
		return -ENOSPC;
	if (size > disk_size - (size_t)off)
		size = disk_size - (size_t)off;
	nanosleep(&ts, NULL);
	memcpy(disk + off, buf, size);
	return (int)size;
}

static int sf_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	return (size_t)size == disk_size ? 0 : -EPERM;
}

static int sf_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	(void)datasync;
	(void)fi;
	return 0;
}

static const struct fuse_operations ops = {
	.getattr = sf_getattr,
	.readdir = sf_readdir,
	.open = sf_open,
	.read = sf_read,
	.write = sf_write,
	.truncate = sf_truncate,
	.fsync = sf_fsync,
};

int main(int argc, char **argv)
{
	int sep = 0;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			sep = i;
	if (!sep || sep + 2 >= argc + 0 || argc - sep != 3) {
		fprintf(stderr, "usage: slowfs MOUNTPOINT [fuse options] -- SIZE_MB WRITE_DELAY_MS\n");
		return 2;
	}
	disk_size = (size_t)atol(argv[sep + 1]) << 20;
	delay_ms = atol(argv[sep + 2]);
	disk = calloc(1, disk_size);
	if (!disk)
		return 1;
	argv[sep] = NULL;
	return fuse_main(sep, argv, &ops, NULL);
}
