/*
 * test_symbolize.c - names of code a JIT compiled, from perf map files
 * (probes/perfmap.h): a real process with anonymous executable memory and
 * a /tmp/perf-PID.map it writes as it goes; the map's parser on bad input.
 * The kernel's names (probes/kernel_syms.h), compressed, against the
 * running kernel's /proc/kallsyms read here line by line.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probes/kernel_syms.h"
#include "probes/perfmap.h"
#include "probes/proc_maps.h"
#include "probes/symbolize.h"

static pid_t child;
static char map_path[64];

static void cleanup(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = 0;
	}
	if (map_path[0])
		unlink(map_path);
}

/*
 * A stand-in JIT: maps a page of executable memory, names its first 256
 * bytes in its perf map, tells the parent where it is, and later (when the
 * parent writes to it) names the next 256 bytes too.
 */
static uint64_t start_jit(int *to_child)
{
	int up[2], down[2];
	uint64_t addr = 0;

	cr_assert_eq(pipe(up), 0);
	cr_assert_eq(pipe(down), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char path[64], c;
		FILE *f;

		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
		f = fopen(path, "w");
		fprintf(f, "%lx 100 LazyCompile:*fib /app/fib.js:3\n", (unsigned long)code);
		fclose(f);
		addr = (uint64_t)(uintptr_t)code;
		if (write(up[1], &addr, sizeof(addr)) != sizeof(addr))
			_exit(1);
		if (read(down[0], &c, 1) == 1) {
			f = fopen(path, "a");
			fprintf(f, "0x%lx 0x100 py::handler:/srv/app.py\n",
				(unsigned long)code + 0x200);
			fclose(f);
			if (write(up[1], &addr, sizeof(addr)) != sizeof(addr))
				_exit(1);
		}
		pause();
		_exit(0);
	}
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)child);
	cr_assert_eq(read(up[0], &addr, sizeof(addr)), (ssize_t)sizeof(addr));
	*to_child = down[1];
	return addr;
}

Test(symbolize, jit_code_is_named_from_the_perf_map, .fini = cleanup, .timeout = 30)
{
	struct symbolizer *s = sym_new();
	int to_child;
	uint64_t code = start_jit(&to_child);
	char name[256], c = 1;

	cr_assert_not_null(s);
	cr_assert_eq(sym_process(s, (uint32_t)child, NULL), 0);
	cr_expect_eq(sym_user(s, (uint32_t)child, code + 0x10, name, sizeof(name)), 1);
	cr_expect_str_eq(name, "LazyCompile:*fib /app/fib.js:3");
	/* past the named code: the mapping and offset, not a made-up name */
	cr_expect_eq(sym_user(s, (uint32_t)child, code + 0x180, name, sizeof(name)), 0);
	cr_expect(strstr(name, "+0x180"), "%s", name);
	/* compiled later: named once the map has grown (read again at most once a second) */
	cr_assert_eq(write(to_child, &c, 1), 1);
	usleep(1100000);
	cr_expect_eq(sym_user(s, (uint32_t)child, code + 0x210, name, sizeof(name)), 1);
	cr_expect_str_eq(name, "py::handler:/srv/app.py");
	sym_free(s);
}

Test(symbolize, perf_map_lines_are_checked)
{
	static const char text[] =
		"1000 100 first\n"
		"not a line\n"
		"zz 10 bad start\n"
		"2000 0 zero size\n"
		"ffffffffffffff00 1000 wraps\n"
		"1080 10 later overlaps first\n"
		"0x3000 0x20 with prefix\n"
		"4000 10\n"
		"\n";
	struct perfmap *m;
	size_t bad;

	cr_assert_eq(perfmap_parse(text, sizeof(text) - 1, &m, &bad), 3);
	cr_expect_eq(bad, 5, "bad lines: %zu", bad);
	cr_expect_str_eq(perfmap_lookup(m, 0x1010), "first");
	cr_expect_str_eq(perfmap_lookup(m, 0x1085), "later overlaps first");
	cr_expect_str_eq(perfmap_lookup(m, 0x10a0), "first");
	cr_expect_str_eq(perfmap_lookup(m, 0x3010), "with prefix");
	cr_expect_null(perfmap_lookup(m, 0x3020));
	cr_expect_null(perfmap_lookup(m, 0x500));
	perfmap_free(m);
}

/*
 * The symbols of a binary stay only while a remembered process maps it: a
 * sleep(1) sampled long ago is forgotten with its file's symbols, the
 * libraries this process maps too stay, and forgetting every process
 * leaves nothing (a host running new binaries every day stays bounded).
 */
Test(symbolize, files_no_process_maps_are_forgotten, .fini = cleanup, .timeout = 30)
{
	struct symbolizer *s = sym_new(), *self_only = sym_new();
	size_t procs, files_sleep, files_both, files_after, files_self, bytes_both, bytes_after, b;
	char exe[256], name[256];
	ssize_t n = 0;

	cr_assert(s && self_only);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	snprintf(name, sizeof(name), "/proc/%d/exe", (int)child);
	for (int i = 0; i < 500; i++) {	/* until the exec took place */
		n = readlink(name, exe, sizeof(exe) - 1);
		if (n > 0 && (exe[n] = '\0', strstr(exe, "sleep")))
			break;
		usleep(10000);
	}
	cr_assert(n > 0 && strstr(exe, "sleep"), "child never ran sleep");
	sym_set_generation(s, 1);
	cr_assert_eq(sym_process(s, (uint32_t)child, NULL), 0);
	sym_cache_stats(s, &procs, &files_sleep, &b);
	cr_assert_eq(procs, 1);
	cr_assert_geq(files_sleep, 2, "sleep and its libc: %zu files", files_sleep);

	sym_set_generation(s, 100);
	cr_assert_eq(sym_process(s, (uint32_t)getpid(), NULL), 0);
	sym_cache_stats(s, &procs, &files_both, &bytes_both);
	cr_assert_eq(procs, 2);
	cr_assert_gt(files_both, files_sleep);

	cr_assert_eq(sym_process(self_only, (uint32_t)getpid(), NULL), 0);
	sym_cache_stats(self_only, &procs, &files_self, &b);

	sym_expire(s, 50);
	sym_cache_stats(s, &procs, &files_after, &bytes_after);
	cr_expect_eq(procs, 1);
	cr_expect_eq(files_after, files_self, "%zu files kept; this process maps %zu",
		     files_after, files_self);
	cr_expect_lt(bytes_after, bytes_both);
	/* what is kept still names this process's code */
	cr_expect_eq(sym_user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)&start_jit, name,
			      sizeof(name)), 1);
	cr_expect(strstr(name, "start_jit"), "%s", name);

	sym_expire(s, 1000);
	sym_cache_stats(s, &procs, &files_after, &bytes_after);
	cr_expect_eq(procs + files_after + bytes_after, 0, "%zu procs, %zu files, %zu bytes",
		     procs, files_after, bytes_after);
	sym_free(s);
	sym_free(self_only);
}

/*
 * An exited process (the profiler's BPF exit hook tells of it) still
 * names its addresses until its window is drained, then is forgotten with
 * the files only it mapped; a process given its pid again stays.
 */
Test(symbolize, an_exited_process_is_named_until_forgotten, .fini = cleanup, .timeout = 30)
{
	struct symbolizer *s = sym_new();
	size_t procs, files, bytes;
	char name[256];
	int status;

	cr_assert_not_null(s);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	cr_assert_eq(sym_process(s, (uint32_t)child, NULL), 0);
	cr_assert_eq(sym_process(s, (uint32_t)getpid(), NULL), 0);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	sym_process_exited(s, (uint32_t)child);
	/* its samples of this window still get names */
	cr_expect_eq(sym_user(s, (uint32_t)child, (uint64_t)(uintptr_t)&start_jit, name,
			      sizeof(name)), 1);
	cr_expect(strstr(name, "start_jit"), "%s", name);
	sym_forget_exited(s);
	sym_cache_stats(s, &procs, &files, &bytes);
	cr_expect_eq(procs, 1, "the exited process is forgotten, this one stays: %zu", procs);
	cr_expect_eq(sym_user(s, (uint32_t)child, (uint64_t)(uintptr_t)&start_jit, name,
			      sizeof(name)), 0);
	cr_expect_eq(sym_user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)&start_jit, name,
			      sizeof(name)), 1);
	/* a pid marked exited, then announced again: a new process, kept */
	sym_process_exited(s, (uint32_t)getpid());
	cr_assert_eq(sym_process_refresh(s, (uint32_t)getpid(), NULL), 0);
	sym_forget_exited(s);
	sym_cache_stats(s, &procs, &files, &bytes);
	cr_expect_eq(procs, 1);
	cr_expect_gt(files, 0);
	child = 0;
	sym_free(s);
}

/* The text symbols of /proc/kallsyms as this test reads them: address-sorted. */
struct plain_sym {
	uint64_t addr;
	char *name;
};

static int plain_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct plain_sym *)a)->addr, y = ((const struct plain_sym *)b)->addr;

	return x < y ? -1 : x > y;
}

static struct plain_sym *plain_kallsyms(size_t *n)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	struct plain_sym *v = NULL;
	size_t cap = 0;
	char line[1024];

	cr_assert_not_null(f);
	*n = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[512];

		if (sscanf(line, "%llx %c %511s", &a, &type, name) != 3 || !a ||
		    !strchr("tTwW", type))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 65536;
			v = realloc(v, cap * sizeof(*v));
			cr_assert_not_null(v);
		}
		v[*n].addr = a;
		v[*n].name = strdup(name);
		cr_assert_not_null(v[*n].name);
		(*n)++;
	}
	fclose(f);
	qsort(v, *n, sizeof(*v), plain_cmp);
	return v;
}

/* 1 if name is one of the names at plain[i]'s address (aliases share one). */
static int plain_named(const struct plain_sym *v, size_t n, size_t i, const char *name)
{
	size_t j = i;

	while (j > 0 && v[j - 1].addr == v[i].addr)
		j--;
	for (; j < n && v[j].addr == v[i].addr; j++)
		if (!strcmp(v[j].name, name))
			return 1;
	return 0;
}

Test(symbolize, kernel_names_are_the_running_kernels, .timeout = 60)
{
	struct kernel_syms *k = ksyms_load();
	struct plain_sym *v;
	size_t n, checked = 0;

	cr_assert_not_null(k, "/proc/kallsyms: %s", strerror(errno));
	v = plain_kallsyms(&n);
	cr_assert_gt(n, 1000, "this test needs a kernel with symbols (root, kptr_restrict)");
	cr_expect_eq(ksyms_count(k), n, "every text symbol is kept: %zu of %zu",
		     ksyms_count(k), n);
	/* compact: well under the ~40 bytes a symbol its names and pointers took */
	cr_expect_lt(ksyms_bytes(k), n * 16, "%zu bytes for %zu names", ksyms_bytes(k), n);
	cr_expect_null(ksyms_name(k, v[0].addr - 1), "below the first function: no name");
	/*
	 * Every symbol, twice over (the second pass after the name cache has
	 * started over, ~4,000 names at a time): its own address and one byte
	 * into it name it, or an alias at the same address.
	 */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i += 1 + (size_t)pass * 6) {
			const char *at = ksyms_name(k, v[i].addr);

			cr_assert_not_null(at, "%s at %llx", v[i].name, (unsigned long long)v[i].addr);
			cr_assert(plain_named(v, n, i, at), "%llx: %s, not %s",
				  (unsigned long long)v[i].addr, at, v[i].name);
			if (i + 1 < n && v[i + 1].addr > v[i].addr + 1) {
				at = ksyms_name(k, v[i].addr + 1);
				cr_assert(at && plain_named(v, n, i, at), "%llx + 1: %s, not %s",
					  (unsigned long long)v[i].addr, at ? at : "(null)",
					  v[i].name);
			}
			checked++;
		}
	}
	cr_expect_gt(checked, n);
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	ksyms_free(k);
}

Test(symbolize, kallsyms_text_is_read_whatever_its_order_and_noise)
{
	static const char text[] =
		"ffffffffa0000400 t helper_b\t[mod_b]\n"
		"ffffffff81000100 T start_kernel\n"
		"garbage line\n"
		"ffffffff81000000 T _stext\n"
		"ffffffff81000200 D some_data\n"
		"0000000000000000 T hidden_by_kptr_restrict\n"
		"ffffffffa0000000 t helper_a\t[mod_a]\n"
		"ffffffff81000300 W weak_one\n"
		"00000000c0000000 T too_far_below\n"
		"ffffffff81000400 Tx not_a_type\n"
		"ffffffff81000500 t \n";
	FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");
	struct kernel_syms *k;
	const char *name;

	cr_assert_not_null(f);
	k = ksyms_read(f);
	fclose(f);
	cr_assert_not_null(k);
	/* the lowest address is the base: whatever lies 4 GiB above it is dropped */
	cr_expect_eq(ksyms_count(k), 1, "only too_far_below fits below the rest: %zu",
		     ksyms_count(k));
	ksyms_free(k);

	f = fmemopen((void *)(text + 0), strstr(text, "00000000c0") - text, "r");
	k = ksyms_read(f);
	fclose(f);
	cr_assert_not_null(k);
	cr_expect_eq(ksyms_count(k), 5, "%zu", ksyms_count(k));
	cr_expect_null(ksyms_name(k, 0xffffffff80ffffffULL));
	name = ksyms_name(k, 0xffffffff81000000ULL);
	cr_expect(name && !strcmp(name, "_stext"), "%s", name);
	name = ksyms_name(k, 0xffffffff810001ffULL);
	cr_expect(name && !strcmp(name, "start_kernel"), "%s", name);
	name = ksyms_name(k, 0xffffffff81000250ULL);
	cr_expect(name && !strcmp(name, "start_kernel"), "data is not a function: %s", name);
	name = ksyms_name(k, 0xffffffff81000300ULL);
	cr_expect(name && !strcmp(name, "weak_one"), "%s", name);
	name = ksyms_name(k, 0xffffffffa0000410ULL);
	cr_expect(name && !strcmp(name, "helper_b"), "module text: %s", name);
	ksyms_free(k);
}

Test(symbolize, many_kernel_names_span_blocks)
{
	/* 1,000 functions in reverse order: 16 blocks, looked up in every order */
	size_t len = 0, cap = 1000 * 64;
	char *text = malloc(cap);
	struct kernel_syms *k;
	FILE *f;

	cr_assert_not_null(text);
	for (int i = 999; i >= 0; i--)
		len += (size_t)snprintf(text + len, cap - len, "%llx T fn_%d_%s\n",
					0xffffffff81000000ULL + (unsigned long long)i * 0x40, i,
					i % 3 ? "x" : "a_longer_name_for_variety");
	f = fmemopen(text, len, "r");
	k = ksyms_read(f);
	fclose(f);
	cr_assert_not_null(k);
	cr_assert_eq(ksyms_count(k), 1000);
	for (int round = 0; round < 3; round++)
		for (int j = 0; j < 1000; j++) {
			int i = round == 1 ? 999 - j : (j * 7919) % 1000;
			char want[64];
			const char *got = ksyms_name(k, 0xffffffff81000000ULL +
							    (unsigned long long)i * 0x40 + 0x3f);

			snprintf(want, sizeof(want), "fn_%d_%s", i,
				 i % 3 ? "x" : "a_longer_name_for_variety");
			cr_assert(got && !strcmp(got, want), "%d: %s", i, got ? got : "(null)");
		}
	free(text);
	ksyms_free(k);
}

/*
 * A file's symbols are read only once an address in it is named, and past
 * the budget the least recently used files' are dropped between windows
 * (sym_trim), then read again when named again: names stay right.
 */
Test(symbolize, symbols_are_read_when_named_and_held_within_the_budget)
{
	struct symbolizer *s = sym_new();
	uint32_t self = (uint32_t)getpid();
	uint64_t in_self = (uint64_t)(uintptr_t)&start_jit;
	uint64_t in_libc = (uint64_t)(uintptr_t)&fopen;
	size_t bytes, files, procs, all_files, b;
	uint64_t reads;
	char name[256];

	cr_assert_not_null(s);
	cr_assert_eq(sym_process(s, self, NULL), 0);
	sym_cache_stats(s, &procs, &all_files, &b);
	sym_symbol_stats(s, &bytes, &files, &reads);
	cr_assert_geq(all_files, 2, "this test and libc at least: %zu", all_files);
	cr_expect_eq(files + reads + bytes, 0, "nothing read before a name is asked for: %zu "
		     "files, %llu reads", files, (unsigned long long)reads);

	cr_assert_eq(sym_user(s, self, in_libc, name, sizeof(name)), 1);
	cr_expect(strstr(name, "fopen"), "%s", name);
	cr_assert_eq(sym_user(s, self, in_self, name, sizeof(name)), 1);
	cr_expect(strstr(name, "start_jit"), "%s", name);
	sym_symbol_stats(s, &bytes, &files, &reads);
	cr_expect_eq(files, 2, "the two files named, of %zu mapped: %zu", all_files, files);
	cr_expect_eq(reads, 2);

	/* a budget of one byte: the file named last stays, alone */
	sym_set_budget(s, 1);
	sym_symbol_stats(s, &bytes, &files, &reads);
	cr_expect_eq(files, 1, "%zu files held past the budget", files);
	cr_assert_eq(sym_user(s, self, in_self, name, sizeof(name)), 1);
	sym_symbol_stats(s, &b, &files, &reads);
	cr_expect_eq(reads, 2, "the file named last was kept, not read again");
	cr_expect_eq(b, bytes);

	/* libc's were dropped: named again, read again, and right */
	cr_assert_eq(sym_user(s, self, in_libc, name, sizeof(name)), 1);
	cr_expect(strstr(name, "fopen"), "%s", name);
	sym_symbol_stats(s, &bytes, &files, &reads);
	cr_expect_eq(reads, 3);
	cr_expect_eq(files, 2, "within a window both are held");
	sym_trim(s);
	sym_symbol_stats(s, &bytes, &files, &reads);
	cr_expect_eq(files, 1);
	sym_free(s);
}

/*
 * /proc/PID/maps lines as the kernel writes them: executable ones with
 * their addresses, offset and path (spaces and " (deleted)" kept, the
 * newline cut), anonymous ones with an empty path, others passed over at
 * their perms, and lines that are not mappings refused.
 */
Test(symbolize, maps_lines_are_parsed_as_the_kernel_writes_them)
{
	char l1[] = "55d0c1a00000-55d0c1a22000 r-xp 00002000 fd:01 1234                       "
		    "/opt/my app/bin/server (deleted)\n";
	char l2[] = "7ffd5e1f0000-7ffd5e1f2000 r-xp 00000000 00:00 0                  [vdso]\n";
	char l3[] = "7f0000000000-7f0000001000 r-xp 00000000 00:00 0\n";
	char l4[] = "7f0000001000-7f0000002000 rw-p 00001000 fd:01 99   /usr/lib/libc.so.6\n";
	char l5[] = "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]";
	char bad1[] = "not a mapping\n", bad2[] = "1000-2000 r-xp\n", bad3[] = "1000-2000 r-x 0 0 0\n";
	char bad4[] = "11111111111111111-2 r-xp 0 00:00 0\n", bad5[] = "1000-2000 r-xp zz 00:00 0 /x\n";
	struct maps_line m;

	cr_assert_eq(maps_line_parse(l1, &m), 1);
	cr_assert_eq(m.start, 0x55d0c1a00000ULL);
	cr_assert_eq(m.end, 0x55d0c1a22000ULL);
	cr_assert_eq(m.offset, 0x2000);
	cr_assert_str_eq(m.perms, "r-xp");
	cr_assert_str_eq(m.path, "/opt/my app/bin/server (deleted)");
	cr_assert_eq(maps_line_parse(l2, &m), 1);
	cr_assert_str_eq(m.path, "[vdso]");
	cr_assert_eq(maps_line_parse(l3, &m), 1);
	cr_assert_str_eq(m.path, "", "anonymous: %s", m.path);
	cr_assert_eq(maps_line_parse(l4, &m), 0, "not executable");
	cr_assert_str_eq(m.perms, "rw-p");
	cr_assert_eq(maps_line_parse(l5, &m), 1);
	cr_assert_eq(m.start, 0xffffffffff600000ULL);
	cr_assert_str_eq(m.path, "[vsyscall]");
	cr_assert_eq(maps_line_parse(bad1, &m), -1);
	cr_assert_eq(maps_line_parse(bad2, &m), -1, "perms must be followed by the offset");
	cr_assert_eq(maps_line_parse(bad3, &m), -1);
	cr_assert_eq(maps_line_parse(bad4, &m), -1, "an address past 64 bits");
	cr_assert_eq(maps_line_parse(bad5, &m), -1);
}

/* The same parse over this process's own mappings finds its own code. */
Test(symbolize, own_maps_hold_this_function)
{
	char line[1024];
	uint64_t here = (uint64_t)(uintptr_t)&maps_line_parse;
	int found = 0, lines = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		struct maps_line m;

		lines++;
		cr_assert_neq(maps_line_parse(line, &m), -1, "refused: %s", line);
		if (m.perms[2] == 'x' && here >= m.start && here < m.end)
			found = m.path[0] == '/';
	}
	fclose(f);
	cr_assert(lines > 5 && found, "%d lines; maps_line_parse's own mapping not found", lines);
}

/*
 * An address no mapping of its process holds (the process gone before its
 * mappings were read, or an address in none of them) is called [unknown],
 * one name for all of them: not its absolute address, which made every
 * such frame a name and every stack through it a stack of its own.  An
 * address in a mapping keeps its module and offset.
 */
Test(symbolize, frames_in_no_mapping_are_one_unknown_name)
{
	struct symbolizer *s = sym_new();
	char buf[256];

	cr_assert_not_null(s);
	cr_assert_eq(sym_user(s, 0x7ffffff0, 0x7f0012345678ULL, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "[unknown]", "a process never read: %s", buf);
	cr_assert_eq(sym_process(s, (uint32_t)getpid(), "test"), 0);
	cr_assert_eq(sym_user(s, (uint32_t)getpid(), 0x10, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "[unknown]", "an address in no mapping: %s", buf);
	cr_assert_eq(sym_user(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)&sym_new, buf,
			      sizeof(buf)) + 1, 2, "this test's own code is named: %s", buf);
	cr_assert_str_eq(buf, "sym_new");
	sym_free(s);
}
