/*
 * bpfmap.h - reading and writing BPF_F_MMAPABLE arrays without syscalls.
 *
 * The kernel maps every page of an mmap'd BPF array at mmap() time
 * (remap_vmalloc_range), so a mapping is resident whole from the start:
 * it counts in the process's RSS however little of it is read.  Large
 * arrays are therefore mapped a window at a time, over the elements in use.
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

/* A mapped window of an array: what bpfmap_window_close unmaps. */
struct bpfmap_window {
	void *base;
	size_t len;
};

/*
 * Map elements [first, first + count) of the mmapable array behind fd,
 * whose elements are elem_size bytes apart (the value size rounded up to
 * 8), with protection prot (PROT_READ, PROT_READ | PROT_WRITE).  The
 * window covers the pages holding them.  Returns the address of element
 * first, or NULL with errno set.
 */
void *bpfmap_window_open(int fd, size_t elem_size, size_t first, size_t count, int prot,
			 struct bpfmap_window *w);

/* Unmap w (a zeroed or closed window is left alone). */
void bpfmap_window_close(struct bpfmap_window *w);

#endif
