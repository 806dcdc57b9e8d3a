/*
 * elf_syms.c - one ELF file's function symbols; see elf_syms.h.
 *
 * Symbols come from .symtab and .dynsym (functions with an address and a
 * name), names copied into one buffer, the table sorted by address and
 * looked up by binary search.
 */
#include "probes/elf_syms.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probes/build_id.h"
#include "core/array.h"

static int esym_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct elf_sym *)a)->addr, y = ((const struct elf_sym *)b)->addr;

	return x < y ? -1 : x > y;
}

/* The PT_LOAD headers of an open ELF into es: file offsets to addresses. */
static void read_phdrs(Elf *e, struct elf_syms *es)
{
	size_t nph = 0;

	if (elf_getphdrnum(e, &nph))
		return;
	es->loads = calloc(nph + 1, sizeof(*es->loads));
	for (size_t i = 0; es->loads && i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			es->loads[es->nloads].offset = ph.p_offset;
			es->loads[es->nloads].vaddr = ph.p_vaddr;
			es->loads[es->nloads].filesz = ph.p_filesz;
			es->nloads++;
		}
	}
}

/* Function symbols of an open ELF: sorted into *syms, names in *strings. */
static void read_symbols(Elf *e, struct elf_sym **syms, size_t *nsyms, char **strings,
			 size_t *heap)
{
	size_t total = 0, cap = 0, strcap = 0, strlen_total = 0;
	Elf_Scn *scn = NULL;
	struct elf_sym *tmp = NULL;
	char *str = NULL;

	/* names are copied into one buffer: offsets first, pointers after */
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			size_t nl;

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_value || !(name = elf_strptr(e, sh.sh_link, sym.st_name)) ||
			    !*name)
				continue;
			nl = strlen(name) + 1;
			if (ARRAY_GROW(tmp, cap, total + 1, 1024) ||
			    ARRAY_GROW(str, strcap, strlen_total + nl, 16384))
				break;
			memcpy(str + strlen_total, name, nl);
			tmp[total].addr = sym.st_value;
			tmp[total].size = sym.st_size;
			tmp[total].name = (const char *)(uintptr_t)strlen_total;
			strlen_total += nl;
			total++;
		}
	}
	/* held until the file is dropped: no room to spare */
	if (total && total < cap) {
		struct elf_sym *fit = realloc(tmp, total * sizeof(*tmp));

		if (fit) {
			tmp = fit;
			cap = total;
		}
	}
	if (strlen_total && strlen_total < strcap) {
		char *fit = realloc(str, strlen_total);

		if (fit) {
			str = fit;
			strcap = strlen_total;
		}
	}
	for (size_t i = 0; i < total; i++)
		tmp[i].name = str + (uintptr_t)tmp[i].name;
	if (total)
		qsort(tmp, total, sizeof(*tmp), esym_cmp);
	*syms = tmp;
	*nsyms = total;
	*strings = str;
	*heap = strcap + cap * sizeof(*tmp);
}

/* The cache key of an open ELF: its build id, or where and when it was written. */
static void elf_key(Elf *e, const struct stat *st, char *key, size_t len)
{
	if (build_id_of_elf(e, key, len))
		snprintf(key, len, "ino:%llu:%llu:%lld", (unsigned long long)st->st_dev,
			 (unsigned long long)st->st_ino, (long long)st->st_mtime);
}

struct elf_syms *elf_syms_open(const char *path)
{
	struct elf_syms *es;
	struct stat st;
	const char *in = path;
	Elf *e;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	es = e ? calloc(1, sizeof(*es)) : NULL;
	if (!es || !(es->open_path = strdup(path))) {
		free(es);
		if (e)
			elf_end(e);
		close(fd);
		return NULL;
	}
	elf_key(e, &st, es->key, sizeof(es->key));
	/* the path in the process's own mount namespace, not /proc/PID/root/... */
	if (!strncmp(in, "/proc/", 6) && (in = strstr(in + 6, "/root/")))
		in += 5;
	else
		in = path;
	snprintf(es->path, sizeof(es->path), "%s", in);
	read_phdrs(e, es);
	elf_end(e);
	close(fd);
	return es;
}

void elf_syms_free(struct elf_syms *es)
{
	if (!es)
		return;
	free(es->strings);
	free(es->syms);
	free(es->loads);
	free(es->open_path);
	free(es);
}

/*
 * Read the symbols of path into es if it is es's file (the same key): 1
 * if read, 0 if not.
 */
static int read_symbols_at(struct elf_syms *es, const char *path)
{
	char key[160];
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), same;
	Elf *e;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !(e = elf_begin(fd, ELF_C_READ, NULL))) {
		close(fd);
		return 0;
	}
	elf_key(e, &st, key, sizeof(key));
	same = !strcmp(key, es->key);
	if (same)
		read_symbols(e, &es->syms, &es->nsyms, &es->strings, &es->heap);
	elf_end(e);
	close(fd);
	return same;
}

void elf_syms_drop(struct elf_syms *es, enum elf_syms_state state)
{
	free(es->syms);
	free(es->strings);
	es->syms = NULL;
	es->strings = NULL;
	es->nsyms = es->heap = 0;
	es->state = state;
}

int elf_syms_read(struct elf_syms *es)
{
	char dbg[256];
	int fd;

	if (!read_symbols_at(es, es->open_path))
		read_symbols_at(es, es->path);
	if (strncmp(es->key, "ino:", 4) != 0) {
		snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", es->key,
			 es->key + 2);
		fd = open(dbg, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			Elf *e = elf_begin(fd, ELF_C_READ, NULL);

			if (e) {
				struct elf_sym *syms;
				size_t nsyms, heap;
				char *strings;

				read_symbols(e, &syms, &nsyms, &strings, &heap);
				if (nsyms > es->nsyms) {
					free(es->syms);
					free(es->strings);
					es->syms = syms;
					es->strings = strings;
					es->nsyms = nsyms;
					es->heap = heap;
				} else {
					free(syms);
					free(strings);
				}
				elf_end(e);
			}
			close(fd);
		}
	}
	if (!es->nsyms) {
		elf_syms_drop(es, ELF_UNREADABLE);
		return 0;
	}
	es->state = ELF_READ;
	return 1;
}

static const struct elf_sym *lookup(const struct elf_syms *es, uint64_t vaddr)
{
	size_t lo = 0, hi = es->nsyms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (es->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct elf_sym *e = &es->syms[lo - 1];

	if (e->size && vaddr >= e->addr + e->size)
		return NULL;
	return e;
}

const struct elf_sym *elf_syms_at(const struct elf_syms *es, uint64_t off)
{
	for (size_t k = 0; k < es->nloads; k++) {
		const struct elf_load *ph = &es->loads[k];

		if (off >= ph->offset && off < ph->offset + ph->filesz)
			return lookup(es, off - ph->offset + ph->vaddr);
	}
	return NULL;
}
