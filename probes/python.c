/*
 * python.c - CPython interpreters: found in ELF files, shown to the BPF
 * walker, their frames named from the live process; see python.h.
 */
#include "probes/python.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/log.h"

/*
 * The layout of what is read, per version: from the version's own headers
 * (Include/internal/pycore_{runtime,frame,code}.h, Include/cpython/
 * {pystate,unicodeobject,bytesobject}.h), x86-64.  runtime_size is
 * sizeof(_PyRuntimeState), checked against the _PyRuntime symbol's size:
 * a build whose runtime differs (another patch level that moved it, a
 * debug build) is not walked with offsets that would be wrong for it.
 */
struct python_layout {
	uint64_t runtime_size;
	uint16_t runtime_tstate;	/* in _PyRuntime: the first pointer to the GIL holder */
	/* what the walker reads: the offsets (and version) it is published with */
	struct unwind_python walker;
	/* what naming reads */
	uint16_t code_firstlineno, code_filename, code_qualname, code_linetable;
	uint16_t object_type;
	uint16_t str_length, str_state, ascii_size, compact_size;	/* PyUnicode */
	uint16_t bytes_size, bytes_sval;				/* PyBytes */
};

static const struct python_layout layouts[] = {
	{
		/* _PyRuntime.gilstate.tstate_current */
		.runtime_size = 166688,
		.runtime_tstate = 576,
		.walker = {
			.version = 0x030b,
			.tstate_cframe = 56, .tstate_thread_id = 152, .cframe_current_frame = 8,
			.frame_code = 32, .frame_previous = 48, .frame_prev_instr = 56,
			.frame_is_entry = 68, .frame_owner = PY_NO_FIELD, .code_adaptive = 184,
		},
		.code_firstlineno = 72, .code_filename = 112, .code_qualname = 128,
		.code_linetable = 136,
		.object_type = 8,
		.str_length = 16, .str_state = 32, .ascii_size = 48, .compact_size = 72,
		.bytes_size = 16, .bytes_sval = 32,
	},
	{
		/*
		 * the running thread's state is thread-local now
		 * (_Py_tss_tstate); the GIL's last holder is reached from
		 * _PyRuntime: interpreters.main -> ceval.gil -> last_holder
		 */
		.runtime_size = 459944,
		.runtime_tstate = 48,
		.walker = {
			.version = 0x030c,
			.tstate_chain = { 384, 8 }, .ntstate_chain = 2,
			.tstate_cframe = 56, .tstate_thread_id = 136, .cframe_current_frame = 0,
			.frame_code = 0, .frame_previous = 8, .frame_prev_instr = 56,
			.frame_is_entry = PY_NO_FIELD, .frame_owner = 70, .owner_cstack = 3,
			.code_adaptive = 192,
		},
		.code_firstlineno = 68, .code_filename = 112, .code_qualname = 128,
		.code_linetable = 136,
		.object_type = 8,
		.str_length = 16, .str_state = 32, .ascii_size = 40, .compact_size = 56,
		.bytes_size = 16, .bytes_sval = 32,
	},
};

/* The layout of version (0x030b), or NULL. */
static const struct python_layout *layout_of(uint16_t version)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].walker.version == version)
			return &layouts[i];
	return NULL;
}

int python_file_name_matches(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!strncmp(base, "lib", 3))
		base += 3;
	return !strncmp(base, "python3", 7);
}

/* Read len bytes at linked address vaddr of the ELF file (through its PT_LOADs). */
static int read_vaddr(Elf *e, int fd, uint64_t vaddr, void *out, size_t len)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr + len <= ph.p_vaddr + ph.p_filesz)
			return pread(fd, out, len, (off_t)(ph.p_offset + vaddr - ph.p_vaddr)) ==
			       (ssize_t)len ? 0 : -EIO;
	}
	return -ENOENT;
}

int python_interp_read(int fd, struct python_interp *pi, char *err, size_t errlen)
{
	uint64_t runtime_size = 0, version_vaddr = 0;
	Elf_Scn *scn = NULL;
	uint32_t hex = 0;
	Elf *e;
	int ret = -ENOENT;

	memset(pi, 0, sizeof(*pi));
	snprintf(err, errlen, "no CPython runtime among its dynamic symbols");
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || gelf_getclass(e) != ELFCLASS64) {
		snprintf(err, errlen, "not a 64-bit ELF file");
		if (e)
			elf_end(e);
		return -EINVAL;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name || name[0] == '\0')
				continue;
			if (!strcmp(name, "_PyRuntime")) {
				pi->runtime_vaddr = s.st_value;
				runtime_size = s.st_size;
			} else if (!strcmp(name, "_PyEval_EvalFrameDefault")) {
				pi->eval_vaddr = s.st_value;
				pi->eval_size = s.st_size;
			} else if (!strcmp(name, "PyCode_Type")) {
				pi->code_type_vaddr = s.st_value;
			} else if (!strcmp(name, "Py_Version")) {
				version_vaddr = s.st_value;
			}
		}
	}
	if (!pi->runtime_vaddr || !pi->eval_vaddr || !pi->eval_size)
		goto out;
	ret = -ENOTSUP;
	if (!version_vaddr || read_vaddr(e, fd, version_vaddr, &hex, sizeof(hex))) {
		snprintf(err, errlen, "no Py_Version (CPython before 3.11)");
		goto out;
	}
	if (!pi->code_type_vaddr) {
		snprintf(err, errlen, "no PyCode_Type among its dynamic symbols");
		goto out;
	}
	pi->version = (uint16_t)(hex >> 16);
	{
		size_t n = 0;
		int found = 0;

		elf_getphdrnum(e, &n);
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			/* one R+X segment from offset 0 (no -z separate-code) is at 0, 0 */
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    pi->eval_vaddr >= ph.p_vaddr &&
			    pi->eval_vaddr + pi->eval_size <= ph.p_vaddr + ph.p_filesz) {
				pi->text_offset = ph.p_offset;
				pi->text_vaddr = ph.p_vaddr;
				found = 1;
			}
		}
		if (!found) {
			snprintf(err, errlen, "its evaluation loop is in no loadable segment");
			goto out;
		}
	}
	pi->layout = layout_of(pi->version);
	if (!pi->layout) {
		snprintf(err, errlen, "CPython %u.%u.%u: only 3.11 and 3.12 are walked", hex >> 24,
			 (hex >> 16) & 0xff, (hex >> 8) & 0xff);
	} else if (pi->layout->runtime_size != runtime_size) {
		snprintf(err, errlen, "CPython %u.%u.%u whose _PyRuntime is %llu bytes, not the "
			 "%llu its version's layout has (a debug or patched build)", hex >> 24,
			 (hex >> 16) & 0xff, (hex >> 8) & 0xff, (unsigned long long)runtime_size,
			 (unsigned long long)pi->layout->runtime_size);
		pi->layout = NULL;
	} else {
		ret = 0;
	}
out:
	elf_end(e);
	return ret;
}

/* Files looked at, by identity: a mapping is published again and again. */
static struct {
	dev_t dev;
	ino_t ino;
	int64_t mtime;
	int ret;
	struct python_interp pi;
} known[64];
static unsigned nknown;

int python_interp_of(const char *path, struct python_interp *pi)
{
	struct stat st;
	char err[256];
	unsigned slot;
	int fd, ret;

	memset(pi, 0, sizeof(*pi));
	if (!python_file_name_matches(path))
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	for (unsigned i = 0; i < nknown && i < 64; i++)
		if (known[i].dev == st.st_dev && known[i].ino == st.st_ino &&
		    known[i].mtime == st.st_mtime) {
			close(fd);
			*pi = known[i].pi;
			return known[i].ret;
		}
	ret = python_interp_read(fd, pi, err, sizeof(err));
	close(fd);
	if (ret == -ENOTSUP)
		log_warn("profile: %s: %s; its processes' profiles show the interpreter's own "
			 "frames, not their Python functions", path, err);
	else if (ret == 0)
		log_debug("profile: %s: CPython %x.%x, its Python frames are walked", path,
			  pi->version >> 8, pi->version & 0xff);
	slot = nknown++ % 64;
	known[slot].dev = st.st_dev;
	known[slot].ino = st.st_ino;
	known[slot].mtime = st.st_mtime;
	known[slot].ret = ret;
	known[slot].pi = *pi;
	return ret;
}

int python_interp_publish(const struct python_interp *pi, uint64_t start, uint64_t end,
			  uint64_t off, struct unwind_python *out)
{
	const struct python_layout *l = pi->layout;
	uint64_t bias = start - off + pi->text_offset - pi->text_vaddr;

	if (!l || pi->eval_vaddr + bias < start || pi->eval_vaddr + pi->eval_size + bias > end)
		return 0;
	*out = l->walker;
	out->eval_start = pi->eval_vaddr + bias;
	out->eval_end = pi->eval_vaddr + pi->eval_size + bias;
	out->tstate_at = pi->runtime_vaddr + bias + l->runtime_tstate;
	out->code_type = pi->code_type_vaddr + bias;
	return 1;
}

/* A location table's varint: 6 bits a byte, 0x40 says more follow. */
static int read_varint(const uint8_t **p, const uint8_t *end, uint32_t *out)
{
	uint32_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*p >= end || shift > 30)
			return -1;
		b = *(*p)++;
		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*out = v;
	return 0;
}

static int read_svarint(const uint8_t **p, const uint8_t *end, int32_t *out)
{
	uint32_t u;

	if (read_varint(p, end, &u))
		return -1;
	*out = u & 1 ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
	return 0;
}

/*
 * The 3.11 location table (Objects/locations.md): entries of 1-8 code
 * units, each starting with a byte 1CCCCLLL (code, length - 1) followed
 * by what its code says: 0-9 a short form (one more byte, same line),
 * 10-12 one line form (line + code - 10, two bytes of columns), 13 no
 * columns (a signed line delta), 14 the long form (line delta, end line,
 * two columns), 15 no location.
 */
int python_line_of(const uint8_t *table, size_t len, int firstlineno, uint32_t instr)
{
	const uint8_t *p = table, *end = table + len;
	int64_t line = firstlineno;
	uint64_t at = 0;

	while (p < end) {
		uint8_t first = *p++;
		unsigned code = (first >> 3) & 15, length = (first & 7) + 1;
		int has = 1;
		int32_t delta;
		uint32_t skip;

		if (!(first & 0x80))
			return -1;	/* not the start of an entry: a table we do not read */
		if (code == 15) {
			has = 0;
		} else if (code == 14) {
			if (read_svarint(&p, end, &delta) || read_varint(&p, end, &skip) ||
			    read_varint(&p, end, &skip) || read_varint(&p, end, &skip))
				return -1;
			line += delta;
		} else if (code == 13) {
			if (read_svarint(&p, end, &delta))
				return -1;
			line += delta;
		} else if (code >= 10) {
			line += code - 10;
			if (end - p < 2)
				return -1;
			p += 2;
		} else {
			if (p >= end)
				return -1;
			p++;
		}
		if (instr < at + length)
			return has && line >= 0 && line < 1 << 30 ? (int)line : -1;
		at += length;
	}
	return -1;
}

/* ---- naming frames from the live process ---- */

#define NAMES_SLOTS 4096	/* a power of two */

struct python_code {
	uint32_t pid;
	uint64_t addr;
	uint64_t checked;	/* the window it was last read or checked in */
	int stale;		/* replaced by code that could not be read: no name */
	uint64_t refs[3];	/* its qualname, filename and location table objects */
	char *name;		/* "module.qualname", NULL: slot empty */
	char *file;
	int firstlineno;
	uint8_t *linetable;
	size_t nlinetable;
};

struct python_names {
	struct python_code slot[NAMES_SLOTS];
	unsigned used;
	uint64_t window;	/* python_names_new_window's count */
	/*
	 * pid % 4096 of every process with names: forgetting a process (every
	 * new one announced) costs a bit test unless it may have some
	 */
	uint64_t pids[64];
};

void python_names_new_window(struct python_names *pn)
{
	if (pn)
		pn->window++;
}

struct python_names *python_names_new(void)
{
	return calloc(1, sizeof(struct python_names));
}

static void code_clear(struct python_code *c)
{
	free(c->name);
	free(c->file);
	free(c->linetable);
	memset(c, 0, sizeof(*c));
}

void python_names_free(struct python_names *pn)
{
	if (!pn)
		return;
	for (unsigned i = 0; i < NAMES_SLOTS; i++)
		code_clear(&pn->slot[i]);
	free(pn);
}

void python_names_forget(struct python_names *pn, uint32_t pid)
{
	unsigned kept = 0;

	if (!pn || !pn->used || !(pn->pids[pid % 4096 / 64] >> (pid % 64) & 1))
		return;
	/* slots are rehashed as they are found: clear them all and put the rest back */
	struct python_code *keep = malloc(pn->used * sizeof(*keep));

	for (unsigned i = 0; i < NAMES_SLOTS; i++) {
		struct python_code *c = &pn->slot[i];

		if (!c->name)
			continue;
		if (c->pid == pid || !keep)
			code_clear(c);
		else
			keep[kept++] = *c;
		memset(c, 0, sizeof(*c));
	}
	pn->used = 0;
	for (unsigned i = 0; i < kept; i++) {
		unsigned h = (unsigned)((keep[i].addr >> 4) ^ keep[i].pid * 2654435761u);

		while (pn->slot[h & (NAMES_SLOTS - 1)].name)
			h++;
		pn->slot[h & (NAMES_SLOTS - 1)] = keep[i];
		pn->used++;
	}
	free(keep);
}

static int peek(uint32_t pid, uint64_t addr, void *out, size_t len)
{
	struct iovec local = { out, len }, remote = { (void *)addr, len };

	return process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* A str object of pid at addr as UTF-8 into out (at most 255 characters). */
static int read_str(uint32_t pid, const struct python_layout *l, uint64_t addr, char *out,
		    size_t outlen)
{
	uint8_t head[96], raw[1024];
	uint64_t length;
	uint32_t state;
	unsigned kind, compact, ascii;
	size_t o = 0;

	if (!addr || peek(pid, addr, head, l->compact_size))
		return -1;
	memcpy(&length, head + l->str_length, sizeof(length));
	memcpy(&state, head + l->str_state, sizeof(state));
	kind = (state >> 2) & 7;
	compact = (state >> 5) & 1;
	ascii = (state >> 6) & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4))
		return -1;
	if (length > 255)
		length = 255;
	if (peek(pid, addr + (ascii ? l->ascii_size : l->compact_size), raw, length * kind))
		return -1;
	for (uint64_t i = 0; i < length; i++) {
		uint32_t c = kind == 1 ? raw[i] : kind == 2 ? (uint32_t)raw[2 * i] |
			     (uint32_t)raw[2 * i + 1] << 8 : (uint32_t)raw[4 * i] |
			     (uint32_t)raw[4 * i + 1] << 8 | (uint32_t)raw[4 * i + 2] << 16 |
			     (uint32_t)raw[4 * i + 3] << 24;
		char u[4];
		size_t n;

		if (c < 0x80) {
			u[0] = (char)c;
			n = 1;
		} else if (c < 0x800) {
			u[0] = (char)(0xc0 | c >> 6);
			u[1] = (char)(0x80 | (c & 63));
			n = 2;
		} else if (c < 0x10000) {
			u[0] = (char)(0xe0 | c >> 12);
			u[1] = (char)(0x80 | ((c >> 6) & 63));
			u[2] = (char)(0x80 | (c & 63));
			n = 3;
		} else if (c < 0x110000) {
			u[0] = (char)(0xf0 | c >> 18);
			u[1] = (char)(0x80 | ((c >> 12) & 63));
			u[2] = (char)(0x80 | ((c >> 6) & 63));
			u[3] = (char)(0x80 | (c & 63));
			n = 4;
		} else {
			return -1;
		}
		if (o + n + 1 > outlen)
			break;
		memcpy(out + o, u, n);
		o += n;
	}
	out[o] = '\0';
	return 0;
}

/* Read code object addr of pid into c: its names, first line and location table. */
static int read_code(uint32_t pid, const struct unwind_python *py, const struct python_layout *l,
		     uint64_t addr, struct python_code *c)
{
	uint8_t head[256];
	uint64_t type, filename, qualname, linetable, size;
	int32_t first;
	char qual[512], file[512], module[128];
	const char *base;
	size_t n;

	if (peek(pid, addr, head, l->walker.code_adaptive))
		return -1;
	memcpy(&type, head + l->object_type, 8);
	if (type != py->code_type)
		return -1;	/* not a code object (any more): no name rather than a wrong one */
	memcpy(&first, head + l->code_firstlineno, 4);
	memcpy(&filename, head + l->code_filename, 8);
	memcpy(&qualname, head + l->code_qualname, 8);
	memcpy(&linetable, head + l->code_linetable, 8);
	if (read_str(pid, l, qualname, qual, sizeof(qual)) ||
	    read_str(pid, l, filename, file, sizeof(file)))
		return -1;
	c->linetable = NULL;
	c->nlinetable = 0;
	if (linetable && !peek(pid, linetable + l->bytes_size, &size, 8) && size <= 1 << 20) {
		c->linetable = malloc(size ? size : 1);
		if (c->linetable && !peek(pid, linetable + l->bytes_sval, c->linetable, size))
			c->nlinetable = size;
	}
	/* the module as its file names it: /srv/app/invoice.py is "invoice" */
	base = strrchr(file, '/');
	base = base ? base + 1 : file;
	n = strlen(base);
	if (n > 3 && !strcmp(base + n - 3, ".py"))
		n -= 3;
	if (n >= sizeof(module))
		n = sizeof(module) - 1;
	memcpy(module, base, n);
	module[n] = '\0';
	if (asprintf(&c->name, "%s%s%s", module, module[0] ? "." : "", qual) < 0) {
		c->name = NULL;
		free(c->linetable);
		c->linetable = NULL;
		return -1;
	}
	c->file = strdup(file);
	c->firstlineno = first;
	c->refs[0] = qualname;
	c->refs[1] = filename;
	c->refs[2] = linetable;
	c->pid = pid;
	c->addr = addr;
	if (!c->file) {
		code_clear(c);
		return -1;
	}
	return 0;
}

/*
 * 1 if code object c of a live process is not the one named any more: its
 * name, file or location table is another object now (a code object freed
 * and another made at its address: exec'd or generated code).  A process
 * that cannot be read (it exited) keeps its names: its code did not change.
 */
static int code_replaced(uint32_t pid, const struct unwind_python *py,
			 const struct python_layout *l, const struct python_code *c)
{
	uint8_t head[256];
	uint64_t type, refs[3];

	if (peek(pid, c->addr, head, l->walker.code_adaptive))
		return 0;
	memcpy(&type, head + l->object_type, 8);
	memcpy(&refs[0], head + l->code_qualname, 8);
	memcpy(&refs[1], head + l->code_filename, 8);
	memcpy(&refs[2], head + l->code_linetable, 8);
	return type != py->code_type || memcmp(refs, c->refs, sizeof(refs));
}

int python_frame_name(struct python_names *pn, uint32_t pid, const struct unwind_python *py,
		      uint64_t frame, char *buf, size_t len)
{
	uint64_t addr = frame & PY_FRAME_ADDR_MASK;
	uint32_t instr = (uint32_t)((frame & ~PY_FRAME_TAG) >> PY_FRAME_INSTR_SHIFT);
	const struct python_layout *l = NULL;
	struct python_code *c = NULL, *empty = NULL;
	const char *file;
	unsigned h;
	int line;

	snprintf(buf, len, "[python]");
	if (py)
		l = layout_of(py->version);
	if (!pn || !(frame & PY_FRAME_TAG))
		return 0;
	h = (unsigned)((addr >> 4) ^ pid * 2654435761u);
	for (unsigned probe = 0; probe < NAMES_SLOTS && !c && !empty; probe++, h++) {
		struct python_code *s = &pn->slot[h & (NAMES_SLOTS - 1)];

		if (!s->name)
			empty = s;
		else if (s->pid == pid && s->addr == addr)
			c = s;
	}
	if (c && l && c->checked != pn->window) {
		/*
		 * once a window: still the same code?  A process that exited (no
		 * py: its entry left the kernel) keeps its names, as its code
		 * cannot have changed
		 */
		if (code_replaced(pid, py, l, c)) {
			/* freed, and another code object made at its address */
			struct python_code fresh = { 0 };

			if (read_code(pid, py, l, addr, &fresh) == 0) {
				code_clear(c);
				*c = fresh;
			} else {
				c->stale = 1;
			}
		}
		c->checked = pn->window;
	}
	if (c && c->stale)
		return 0;
	if (!c) {
		if (!l || !empty)
			return 0;
		if (pn->used >= NAMES_SLOTS / 2) {
			/* full of code long run: start over rather than grow */
			for (unsigned i = 0; i < NAMES_SLOTS; i++)
				code_clear(&pn->slot[i]);
			pn->used = 0;
			memset(pn->pids, 0, sizeof(pn->pids));
			empty = &pn->slot[(addr >> 4 ^ pid * 2654435761u) & (NAMES_SLOTS - 1)];
		}
		if (read_code(pid, py, l, addr, empty))
			return 0;
		empty->checked = pn->window;
		pn->used++;
		pn->pids[pid % 4096 / 64] |= 1ULL << (pid % 64);
		c = empty;
	}
	line = instr == 0xffff ? -1 : python_line_of(c->linetable, c->nlinetable,
						       c->firstlineno, instr);
	file = c->file;
	/* a long path keeps its end: the file and its folder say the most */
	if (strlen(file) > 60) {
		const char *cut = file + strlen(file) - 60, *slash = strchr(cut, '/');

		file = slash ? slash + 1 : cut;
	}
	if (line < 0)
		line = c->firstlineno;
	snprintf(buf, len, "%s (%s:%d)", c->name, file, line);
	return 1;
}
