/*
 * build_id.c - GNU build ids of the kernel and of ELF files; see build_id.h.
 */
#include "probes/build_id.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/digest.h"
#include "probes/symbolize.h"

/* The running kernel's GNU build id from its notes (ELF note records). */
void build_id_of_kernel(char *out, size_t len)
{
	unsigned char buf[4096];
	size_t n, off = 0;
	FILE *f = fopen("/sys/kernel/notes", "re");

	out[0] = '\0';
	if (!f)
		return;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	while (off + 12 <= n) {
		uint32_t namesz, descsz, type;
		size_t name_at = off + 12, desc_at;

		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		desc_at = name_at + ((namesz + 3) & ~3u);
		if (desc_at + descsz > n)
			return;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(buf + name_at, "GNU", 4) &&
		    descsz * 2 < len) {
			hex_encode(buf + desc_at, descsz, out);
			return;
		}
		off = desc_at + ((descsz + 3) & ~3u);
	}
}

int build_id_of_elf(Elf *e, char *out, size_t len)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t off = 0, noff, name_off, desc_off;
		GElf_Nhdr nh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(d = elf_getdata(scn, NULL)))
			continue;
		while ((noff = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_descsz > 0 &&
			    nh.n_descsz * 2 < len) {
				const unsigned char *b = (const unsigned char *)d->d_buf + desc_off;

				hex_encode(b, nh.n_descsz, out);
				return 0;
			}
			off = noff;
		}
	}
	return -1;
}

int sym_fd_build_id(int fd, char *out, size_t len)
{
	int ret;
	Elf *e;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return -EINVAL;
	ret = build_id_of_elf(e, out, len) ? -ENOENT : 0;
	elf_end(e);
	return ret;
}

int sym_file_build_id(const char *path, char *out, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = sym_fd_build_id(fd, out, len);
	close(fd);
	return ret;
}
