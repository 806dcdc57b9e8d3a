/*
 * unwind.c - call frame information tables for the BPF stack walker; see
 * unwind.h.
 *
 * A table is built from .eh_frame_hdr's sorted list of FDE start
 * addresses: for each FDE, libdw's dwarf_cfi_addrframe gives the rules at
 * an address and the range they hold for, so the FDE's rows are walked
 * range by range; a gap between FDEs gets a "no rule" row.  Adjacent rows
 * with the same rules are merged.
 */
#include "probes/unwind.h"
#include "probes/python.h"
#include "probes/unwind_cache.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "core/array.h"
#include "core/fnv.h"
#include "core/log.h"
#include "probes/bpfmap.h"
#include "probes/symbolize.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

/* ---- tables ------------------------------------------------------------- */

static int push_row(struct unwind_table *t, size_t *cap, const struct unwind_row *r)
{
	if (t->nrows) {
		struct unwind_row *last = &t->rows[t->nrows - 1];

		if (last->pc == r->pc) {	/* a range of nothing: the newer rule wins */
			*last = *r;
			return 0;
		}
		if (last->cfa == r->cfa && last->cfa_off == r->cfa_off && last->rbp == r->rbp &&
		    last->rbp_off == r->rbp_off)
			return 0;	/* the same rules go on */
	}
	if (ARRAY_GROW(t->rows, *cap, t->nrows + 1, 1024))
		return -ENOMEM;
	t->rows[t->nrows++] = *r;
	return 0;
}

/* A DWARF word operand as the signed offset it encodes. */
static int64_t sword(Dwarf_Word w)
{
	return (int64_t)w;
}

/*
 * The PLT's CFA expression: rsp+8, plus 8 once (rip & 15) >= threshold
 * (DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litN;
 * DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus).  Returns N or -1.
 */
static int plt_threshold(const Dwarf_Op *ops, size_t n)
{
	if (n != 9 || ops[0].atom != DW_OP_breg7 || ops[0].number != 8 ||
	    ops[1].atom != DW_OP_breg16 || ops[2].atom != DW_OP_lit15 ||
	    ops[3].atom != DW_OP_and || ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit31 ||
	    ops[5].atom != DW_OP_ge || ops[6].atom != DW_OP_lit3 || ops[7].atom != DW_OP_shl ||
	    ops[8].atom != DW_OP_plus)
		return -1;
	return ops[4].atom - DW_OP_lit0;
}

/* The row for frame f starting at pc; 0 if supported, -1 if not (row says so). */
static int row_of(Dwarf_Frame *f, uint32_t pc, struct unwind_row *r)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int thr;

	memset(r, 0, sizeof(*r));
	r->pc = pc;
	/* the return address: at CFA-8, or undefined in the outermost frame */
	if (dwarf_frame_register(f, REG_RA, mem, &ops, &n))
		return -1;
	if (n == 0 && ops) {
		r->cfa = UNWIND_CFA_STOP;
		return 0;
	}
	if (!(n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst &&
	      sword(ops[1].number) == -8))
		return -1;
	if (dwarf_frame_cfa(f, &ops, &n) || n == 0)
		return -1;
	if (n == 1 && ops[0].atom == DW_OP_bregx &&
	    (ops[0].number == REG_RSP || ops[0].number == REG_RBP) &&
	    sword(ops[0].number2) >= INT32_MIN && sword(ops[0].number2) <= INT32_MAX) {
		r->cfa = ops[0].number == REG_RSP ? UNWIND_CFA_RSP : UNWIND_CFA_RBP;
		r->cfa_off = (int32_t)sword(ops[0].number2);
	} else if ((thr = plt_threshold(ops, n)) >= 0) {
		r->cfa = UNWIND_CFA_PLT;
		r->cfa_off = thr;
	} else {
		return -1;
	}
	if (dwarf_frame_register(f, REG_RBP, mem, &ops, &n))
		return -1;
	if (n == 0)
		return 0;	/* same value, or undefined: rbp is left as it is */
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return -1;
	if (n == 1) {
		r->rbp = UNWIND_RBP_AT;
	} else if (n == 2 && ops[1].atom == DW_OP_plus_uconst && sword(ops[1].number) >= INT16_MIN &&
		   sword(ops[1].number) <= INT16_MAX) {
		r->rbp = UNWIND_RBP_AT;
		r->rbp_off = (int16_t)sword(ops[1].number);
	} else {
		return -1;
	}
	return 0;
}

/* Read a pointer of encoding enc at *p (as .eh_frame_hdr writes them). */
static int read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t hdr_vaddr,
			const uint8_t *hdr, uint64_t *out)
{
	uint64_t base = 0, v;

	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		base = hdr_vaddr + (uint64_t)(*p - hdr);
		break;
	case DW_EH_PE_datarel:
		base = hdr_vaddr;
		break;
	default:
		return -1;
	}
	switch (enc & 0x0f) {
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4: {
		int32_t x;

		if (end - *p < 4)
			return -1;
		memcpy(&x, *p, 4);
		*p += 4;
		v = (enc & 0x0f) == DW_EH_PE_sdata4 ? (uint64_t)(int64_t)x : (uint32_t)x;
		break;
	}
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		if (end - *p < 8)
			return -1;
		memcpy(&v, *p, 8);
		*p += 8;
		break;
	default:
		return -1;
	}
	*out = base + v;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The sorted FDE start addresses of .eh_frame_hdr. */
static int fde_starts(Elf *e, uint64_t **out, size_t *nout, char *err, size_t errlen)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		goto none;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;
		const uint8_t *p, *end, *hdr;
		uint64_t ignore, count;
		uint8_t enc_ptr, enc_count, enc_table;
		uint64_t *starts;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".eh_frame_hdr"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < 4 || ((const uint8_t *)d->d_buf)[0] != 1) {
			snprintf(err, errlen, ".eh_frame_hdr unreadable or version not 1");
			return -EINVAL;
		}
		hdr = d->d_buf;
		end = hdr + d->d_size;
		enc_ptr = hdr[1];
		enc_count = hdr[2];
		enc_table = hdr[3];
		p = hdr + 4;
		if (read_encoded(&p, end, enc_ptr, sh.sh_addr, hdr, &ignore) ||
		    read_encoded(&p, end, enc_count, sh.sh_addr, hdr, &count) ||
		    count > (uint64_t)(end - p) / 8) {
			snprintf(err, errlen, ".eh_frame_hdr: encodings not supported");
			return -EINVAL;
		}
		starts = malloc((count + 1) * sizeof(*starts));
		if (!starts)
			return -ENOMEM;
		for (uint64_t i = 0; i < count; i++) {
			uint64_t fde;

			if (read_encoded(&p, end, enc_table, sh.sh_addr, hdr, &starts[i]) ||
			    read_encoded(&p, end, enc_table, sh.sh_addr, hdr, &fde)) {
				free(starts);
				snprintf(err, errlen, ".eh_frame_hdr: table truncated");
				return -EINVAL;
			}
		}
		qsort(starts, count, sizeof(*starts), cmp_u64);	/* sorted by spec; be sure */
		*out = starts;
		*nout = count;
		return 0;
	}
none:
	snprintf(err, errlen, "no .eh_frame_hdr");
	return -ENOENT;
}

int unwind_table_build(int fd, size_t max_rows, struct unwind_table *t, char *err,
		       size_t errlen)
{
	uint64_t *starts = NULL;
	size_t nstarts = 0, cap = 0, phnum;
	Dwarf_CFI *cfi = NULL;
	int ret = 0;
	Elf *e;

	memset(t, 0, sizeof(*t));
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || gelf_getclass(e) != ELFCLASS64 ||
	    elf_getphdrnum(e, &phnum)) {
		snprintf(err, errlen, "not a 64-bit ELF file");
		ret = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		struct unwind_load *l;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		l = realloc(t->loads, (t->nloads + 1) * sizeof(*l));
		if (!l) {
			ret = -ENOMEM;
			goto out;
		}
		t->loads = l;
		t->loads[t->nloads++] = (struct unwind_load){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
		if (ph.p_vaddr + ph.p_memsz > UINT32_MAX) {
			snprintf(err, errlen, "code above 4 GiB (0x%llx)",
				 (unsigned long long)(ph.p_vaddr + ph.p_memsz));
			ret = -EINVAL;
			goto out;
		}
	}
	ret = fde_starts(e, &starts, &nstarts, err, errlen);
	if (ret)
		goto out;
	cfi = dwarf_getcfi_elf(e);
	if (!cfi) {
		snprintf(err, errlen, "no call frame information: %s", dwarf_errmsg(-1));
		ret = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < nstarts && !ret; i++) {
		uint64_t pc = starts[i], limit = i + 1 < nstarts ? starts[i + 1] : UINT32_MAX;
		struct unwind_row r;

		if (i && starts[i] == starts[i - 1])
			continue;
		t->fdes++;
		while (pc < limit && !ret) {
			Dwarf_Frame *f = NULL;
			Dwarf_Addr lo, hi;
			bool signalp;

			if (dwarf_cfi_addrframe(cfi, pc, &f) || !f)
				break;	/* past the FDE: a gap */
			if (dwarf_frame_info(f, &lo, &hi, &signalp) < 0 || hi <= pc) {
				free(f);
				break;
			}
			if (row_of(f, (uint32_t)pc, &r)) {
				memset(&r, 0, sizeof(r));
				r.pc = (uint32_t)pc;
				t->unsupported++;
			}
			free(f);
			ret = push_row(t, &cap, &r);
			pc = hi;
			if (!ret && max_rows && t->nrows > max_rows)
				ret = -E2BIG;
		}
		if (!ret && pc < limit) {
			/* code without a rule until the next FDE */
			memset(&r, 0, sizeof(r));
			r.pc = (uint32_t)(pc > UINT32_MAX ? UINT32_MAX : pc);
			ret = push_row(t, &cap, &r);
		}
		if (!ret && max_rows && t->nrows > max_rows)
			ret = -E2BIG;
	}
	if (ret == -E2BIG)
		snprintf(err, errlen, "more than %zu rows", max_rows);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
out:
	if (cfi)
		dwarf_cfi_end(cfi);
	if (e)
		elf_end(e);
	free(starts);
	if (ret)
		unwind_table_free(t);
	return ret;
}

void unwind_table_free(struct unwind_table *t)
{
	free(t->rows);
	free(t->loads);
	memset(t, 0, sizeof(*t));
}

const struct unwind_row *unwind_table_find(const struct unwind_table *t, uint64_t pc)
{
	size_t lo = 0, hi = t->nrows;

	if (!t->nrows || pc < t->rows[0].pc)
		return NULL;
	while (lo + 1 < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return &t->rows[lo];
}

/* ---- the unwinder: files, processes, the BPF maps ------------------------ */

struct file_rows {
	dev_t dev;
	ino_t ino;
	int64_t mtime;
	char build_id[80];		/* "" without one */
	uint32_t first, count;		/* count 0: no table */
	int never;			/* no table (none, or too big) whatever the room */
	struct unwind_load *loads;
	size_t nloads;
};

struct unwinder {
	int rows_fd, procs_fd;
	uint32_t max_rows, used;
	uint32_t max_file_rows;		/* a bigger file stays on frame pointers */
	struct file_rows *files;
	size_t nfiles;
	uint32_t failed;
	int said_full;
	uint64_t reset_ms;		/* when the rows were last started over */
	uint64_t said_ms;		/* when the table being full was last logged */
	uint32_t resets_unsaid;		/* start-overs since */
	char cache[512];		/* unwinder_set_cache's folder; "" none */
	uint32_t cache_reads;		/* tables read from it rather than built */
	/* per pid, a hash of its executable mappings as last published */
	struct {
		uint32_t pid, n;
		uint64_t maps;
	} seen[4096];
	int reset_unseen;		/* a reset the caller has not been told of */
};

/* Files without rows remembered across a start-over, at most (a bound, not a cache). */
#define NEVER_KEPT 1024

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Start the rows over: forget every file and every published process (the
 * walker falls back to frame pointers until they are published again), so
 * the files in use now get rows rather than those of processes long gone.
 */
static void unwinder_reset(struct unwinder *u)
{
	uint32_t next;
	size_t kept = 0;

	/* each deletion makes the next first key the one to take */
	while (bpf_map_get_next_key(u->procs_fd, NULL, &next) == 0 &&
	       bpf_map_delete_elem(u->procs_fd, &next) == 0)
		;
	/* files that never get rows are remembered: not read (and logged) again */
	for (size_t i = 0; i < u->nfiles; i++) {
		if (u->files[i].never && kept < NEVER_KEPT)
			u->files[kept++] = u->files[i];
		else
			free(u->files[i].loads);
	}
	u->nfiles = kept;
	u->used = 0;
	u->said_full = 0;
	memset(u->seen, 0, sizeof(u->seen));
	u->reset_ms = mono_ms();
	u->reset_unseen = 1;
}

int unwinder_take_reset(struct unwinder *u)
{
	int r = u->reset_unseen;

	u->reset_unseen = 0;
	return r;
}

struct unwinder *unwinder_new(int rows_fd, uint32_t max_rows, uint32_t max_file_rows,
			      int procs_fd, char *err, size_t errlen)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	struct bpfmap_window w;

	if (!u) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!bpfmap_window_open(rows_fd, sizeof(struct unwind_row), 0, 1, PROT_READ | PROT_WRITE,
				&w)) {
		snprintf(err, errlen, "cannot map the unwind rows: %s", strerror(errno));
		free(u);
		return NULL;
	}
	bpfmap_window_close(&w);
	u->rows_fd = rows_fd;
	u->procs_fd = procs_fd;
	u->max_rows = max_rows;
	u->max_file_rows = max_file_rows;
	return u;
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nfiles; i++)
		free(u->files[i].loads);
	free(u->files);
	free(u);
}

uint32_t unwinder_cache_reads(const struct unwinder *u)
{
	return u->cache_reads;
}

int unwinder_set_cache(struct unwinder *u, const char *dir)
{
	int ret;

	u->cache[0] = '\0';
	if (!dir || !*dir)
		return 0;
	if (strlen(dir) >= sizeof(u->cache) - 100)
		return -ENAMETOOLONG;
	ret = unwind_cache_dir(dir);
	if (ret)
		return ret;
	snprintf(u->cache, sizeof(u->cache), "%s", dir);
	return 0;
}

void unwinder_stats(const struct unwinder *u, uint32_t *rows, uint32_t *max_rows,
		    uint32_t *files, uint32_t *failed)
{
	uint32_t n = 0;

	for (size_t i = 0; i < u->nfiles; i++)
		n += u->files[i].count > 0;
	*rows = u->used;
	*max_rows = u->max_rows;
	*files = n;
	*failed = u->failed;
}

/*
 * The rows of the file at path, built and loaded the first time when
 * build says so; NULL if none, with *lazy set when that is only because
 * they are not built yet (!build).  *reset is set when the rows were
 * started over to make room (the caller's earlier results are void).
 */
/*
 * Copy n rows into the BPF array from row first on, through a window
 * mapped for the copy: a mapping of the whole array would be resident
 * whole (bpfmap.h).  Returns 0, or -1 with errno set.
 */
static int write_rows(struct unwinder *u, uint32_t first, const struct unwind_row *rows,
		      size_t n)
{
	struct bpfmap_window w;
	void *p = bpfmap_window_open(u->rows_fd, sizeof(*rows), first, n, PROT_READ | PROT_WRITE,
				     &w);

	if (!p)
		return -1;
	memcpy(p, rows, n * sizeof(*rows));
	bpfmap_window_close(&w);
	return 0;
}

static const struct file_rows *file_rows_of(struct unwinder *u, const char *path, int *reset,
					    int build, int *lazy)
{
	struct unwind_table t;
	struct file_rows *f, *n;
	struct stat st;
	char err[256];
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	for (size_t i = 0; i < u->nfiles; i++) {
		f = &u->files[i];
		if (f->dev == st.st_dev && f->ino == st.st_ino && f->mtime == st.st_mtime) {
			close(fd);
			return f->count ? f : NULL;
		}
	}
	if (!build) {
		char bid[80];

		/* the same build under another inode is known; anything else waits */
		if (sym_fd_build_id(fd, bid, sizeof(bid)) == 0)
			for (size_t i = 0; i < u->nfiles; i++)
				if (u->files[i].build_id[0] && !strcmp(u->files[i].build_id, bid))
					build = 1;
		if (!build) {
			close(fd);
			*lazy = 1;
			return NULL;
		}
	}
	n = realloc(u->files, (u->nfiles + 1) * sizeof(*n));
	if (!n) {
		close(fd);
		return NULL;
	}
	u->files = n;
	f = &u->files[u->nfiles++];
	memset(f, 0, sizeof(*f));
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->mtime = st.st_mtime;
	/* the same build in another container (another inode): its rows again */
	if (sym_fd_build_id(fd, f->build_id, sizeof(f->build_id)))
		f->build_id[0] = '\0';
	for (size_t i = 0; f->build_id[0] && i + 1 < u->nfiles; i++) {
		const struct file_rows *o = &u->files[i];

		if (strcmp(o->build_id, f->build_id))
			continue;
		close(fd);
		f->first = o->first;
		f->count = o->count;
		f->never = o->never;
		f->loads = o->count ? malloc(o->nloads * sizeof(*o->loads)) : NULL;
		if (o->count && !f->loads) {
			f->count = 0;
			return NULL;
		}
		if (f->loads)
			memcpy(f->loads, o->loads, o->nloads * sizeof(*o->loads));
		f->nloads = o->nloads;
		return f->count ? f : NULL;
	}
	/* one giant (node: ~370,000 rows) would leave little for the rest */
	if (u->cache[0] && unwind_cache_load(u->cache, f->build_id, u->max_file_rows, &t) == 0) {
		ret = 0;
		u->cache_reads++;
		log_debug("profile: %s: %zu unwind rows from the cache", path, t.nrows);
	} else {
		ret = unwind_table_build(fd, u->max_file_rows, &t, err, sizeof(err));
		if (!ret && t.nrows)
			unwind_cache_store(u->cache, f->build_id, &t);
	}
	close(fd);
	if (ret == -E2BIG) {
		log_info("profile: %s: %s (half of profile.unwind_rows); it unwinds with "
			 "frame pointers only", path, err);
		u->failed++;
		f->never = 1;
		return NULL;
	}
	if (ret) {
		u->failed++;
		if (ret != -ENOMEM)
			f->never = 1;
		log_debug("profile: %s: no unwind table (%s); frame pointers only", path, err);
		return NULL;
	}
	if (!t.nrows) {
		/* an .eh_frame_hdr without FDEs: nothing to unwind with */
		f->never = 1;
		unwind_table_free(&t);
		return NULL;
	}
	if (t.nrows > u->max_rows - u->used && u->used &&
	    (!u->reset_ms || mono_ms() - u->reset_ms >= 60000)) {
		/* full of files processes mapped over time: start over, at most once a minute */
		char bid[sizeof(f->build_id)];

		/* a build host fills it every minute: say so once an hour */
		u->resets_unsaid++;
		if (!u->said_ms || mono_ms() - u->said_ms >= 3600000) {
			log_info("profile: the unwind table is full (%u rows); starting it over for "
				 "the processes running now (%u time%s since this was last said; "
				 "profile.unwind_rows raises it)", u->max_rows, u->resets_unsaid,
				 u->resets_unsaid == 1 ? "" : "s");
			u->said_ms = mono_ms();
			u->resets_unsaid = 0;
		}
		memcpy(bid, f->build_id, sizeof(bid));
		unwinder_reset(u);
		*reset = 1;
		f = &u->files[u->nfiles++];	/* the array is kept: room for one */
		memset(f, 0, sizeof(*f));
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		f->mtime = st.st_mtime;
		memcpy(f->build_id, bid, sizeof(bid));
	}
	if (t.nrows > u->max_rows - u->used) {
		if (!u->said_full && (!u->said_ms || mono_ms() - u->said_ms >= 3600000)) {
			log_warn("profile: the unwind table is full (%u rows); %s and files loaded "
				 "after it unwind with frame pointers only until it starts over "
				 "(profile.unwind_rows raises it)", u->max_rows, path);
			u->said_ms = mono_ms();
		}
		u->said_full = 1;
		u->failed++;
		unwind_table_free(&t);
		return NULL;
	}
	if (write_rows(u, u->used, t.rows, t.nrows)) {
		log_warn("profile: %s: cannot write its unwind rows: %s", path, strerror(errno));
		u->failed++;
		unwind_table_free(&t);
		return NULL;
	}
	f->first = u->used;
	f->count = (uint32_t)t.nrows;
	u->used += (uint32_t)t.nrows;
	f->loads = t.loads;
	f->nloads = t.nloads;
	t.loads = NULL;
	log_debug("profile: %s: %zu unwind rows from %zu FDEs (%zu rules not supported)", path,
		  t.nrows, t.fdes, t.unsupported);
	unwind_table_free(&t);
	return f;
}

static int map_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct unwind_map *)a)->start, y = ((const struct unwind_map *)b)->start;

	return x < y ? -1 : x > y;
}

int unwinder_add_process(struct unwinder *u, uint32_t pid)
{
	return unwinder_publish(u, pid, UNWIND_WANT_ALL);
}

int unwinder_publish(struct unwinder *u, uint32_t pid, uint64_t want)
{
	struct unwind_proc *up = calloc(1, sizeof(*up));
	char path[64], line[1024];
	FILE *fp;
	int ret;

	if (!up)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	fp = fopen(path, "re");
	if (!fp) {
		ret = -errno;
		free(up);
		return ret;
	}
	int reset = 0, again = 1, lazy;
	uint64_t h = FNV64_OFFSET;
	size_t slot = pid % (sizeof(u->seen) / sizeof(u->seen[0]));

	/*
	 * mappings as they were when last published (every window re-reads
	 * the processes it sampled): nothing to open, build or publish
	 */
	while (fgets(line, sizeof(line), fp)) {
		const char *perms = strchr(line, ' ');

		if (perms && strlen(perms) > 3 && perms[3] == 'x')	/* " r-xp" */
			h = fnv64_str(h, line);
	}
	if (u->seen[slot].pid == pid && u->seen[slot].maps == h && !want) {
		fclose(fp);
		free(up);
		return (int)u->seen[slot].n;
	}
	rewind(fp);
restart:
	while (fgets(line, sizeof(line), fp) && up->n < UNWIND_MAX_MAPS) {
		unsigned long long start, end, off;
		char perms[8], file[768] = "", rooted[1024];
		const struct file_rows *f;
		const char *name = file;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %767[^\n]", &start, &end, perms, &off,
			   file) < 5 || perms[2] != 'x')
			continue;
		while (*name == ' ')
			name++;
		if (name[0] != '/')
			continue;	/* anonymous (JIT), [vdso]: frame pointers */
		snprintf(rooted, sizeof(rooted), "/proc/%u/root%s", pid, name);
		if (!up->py.eval_end && python_file_name_matches(name)) {
			struct python_interp pi;

			if (python_interp_of(rooted, &pi) == 0)
				python_interp_publish(&pi, start, end, off, &up->py);
		}
		lazy = 0;
		f = file_rows_of(u, rooted, &reset, want == UNWIND_WANT_ALL ||
				 (want >= start && want < end), &lazy);
		if (reset && again) {
			/* the rows the mappings read so far pointed at are gone: read them again */
			again = 0;
			reset = 0;
			memset(up, 0, sizeof(*up));
			rewind(fp);
			goto restart;
		}
		if (!f && lazy) {
			/* the walker asks for it (want) when a sample goes through it */
			struct unwind_map *m = &up->m[up->n++];

			m->start = start;
			m->end = end;
			m->first = UNWIND_LAZY;
			continue;
		}
		if (!f)
			continue;
		for (size_t i = 0; i < f->nloads; i++) {
			const struct unwind_load *l = &f->loads[i];

			if ((l->offset & ~0xfffULL) <= off && off < l->offset + l->filesz) {
				struct unwind_map *m = &up->m[up->n++];

				m->start = start;
				m->end = end;
				m->bias = start - off + l->offset - l->vaddr;
				m->first = f->first;
				m->count = f->count;
				break;
			}
		}
	}
	fclose(fp);
	qsort(up->m, up->n, sizeof(up->m[0]), map_cmp);
	{
		/* read now: the walker asks again no sooner than a second from now */
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		up->asked_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	}
	ret = up->n ? bpf_map_update_elem(u->procs_fd, &pid, up, BPF_ANY) : 0;
	if (ret) {
		ret = -errno;
	} else {
		ret = (int)up->n;
		if (again) {	/* not after a reset mid-read: that pass may be partial */
			u->seen[slot].pid = pid;
			u->seen[slot].n = up->n;
			u->seen[slot].maps = h;
		}
	}
	free(up);
	return ret;
}

void unwinder_forget_process(struct unwinder *u, uint32_t pid)
{
	size_t slot = pid % (sizeof(u->seen) / sizeof(u->seen[0]));

	if (u->seen[slot].pid == pid)
		memset(&u->seen[slot], 0, sizeof(u->seen[slot]));
}
