/*
 * bpfmap.c - see bpfmap.h.
 */
#include "probes/bpfmap.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

void *bpfmap_mmap(struct bpf_map *map, size_t *len)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t sz = (size_t)bpf_map__value_size(map) * bpf_map__max_entries(map);
	void *p;

	sz = (sz + (size_t)page - 1) / (size_t)page * (size_t)page;
	p = mmap(NULL, sz, PROT_READ, MAP_SHARED, bpf_map__fd(map), 0);
	if (p == MAP_FAILED)
		return NULL;
	*len = sz;
	return p;
}

void *bpfmap_window_open(int fd, size_t elem_size, size_t first, size_t count, int prot,
			 struct bpfmap_window *w)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t lo = first * elem_size, start = lo / page * page;
	size_t len = lo + count * elem_size - start;
	void *p;

	w->base = NULL;
	w->len = 0;
	if (!count) {
		errno = EINVAL;
		return NULL;
	}
	len = (len + page - 1) / page * page;
	p = mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)start);
	if (p == MAP_FAILED)
		return NULL;
	w->base = p;
	w->len = len;
	return (char *)p + (lo - start);
}

void bpfmap_window_close(struct bpfmap_window *w)
{
	if (w->base)
		munmap(w->base, w->len);
	w->base = NULL;
	w->len = 0;
}
