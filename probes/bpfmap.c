/*
 * bpfmap.c - see bpfmap.h.
 */
#include "probes/bpfmap.h"

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
