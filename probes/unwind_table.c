/*
 * unwind_table.c - call frame information tables for the BPF stack walker;
 * see unwind_table.h.
 *
 * A table is built from .eh_frame_hdr's sorted list of FDE start
 * addresses: for each FDE, libdw's dwarf_cfi_addrframe gives the rules at
 * an address and the range they hold for, so the FDE's rows are walked
 * range by range; a gap between FDEs gets a "no rule" row.  Adjacent rows
 * with the same rules are merged.
 */
#include "probes/unwind_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/fnv.h"

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
