/*
 * bpfmap.h - reading BPF_F_MMAPABLE maps without syscalls.
 */
#ifndef FL_BPFMAP_H
#define FL_BPFMAP_H

#include <stddef.h>

#include <bpf/libbpf.h>

/*
 * Map the whole value area of an mmapable array read-only (page-rounded
 * length in *len).  Returns the address, or NULL with errno set.
 */
void *bpfmap_mmap(struct bpf_map *map, size_t *len);

#endif
