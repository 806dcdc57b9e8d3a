/*
 * test_symbolize.c - names of code a JIT compiled, from perf map files
 * (probes/perfmap.h): a real process with anonymous executable memory and
 * a /tmp/perf-PID.map it writes as it goes; the map's parser on bad input.
 */
#include <criterion/criterion.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probes/perfmap.h"
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
