/*
 * test_python.c - Python frames in CPU profiles (probes/python.h) against
 * the real CPython 3.11 Debian ships (a static python3.11) and, when
 * present, shared-library builds (pyenv's libpython 3.11.7 and 3.12.1):
 *
 *   - the location-table reader gives the line CPython's own
 *     co_positions() gives, for every instruction of every function of a
 *     stdlib module;
 *   - interpreters are found in both builds, by version and layout; other
 *     files are not interpreters, and another version is refused by name;
 *   - a real script whose time goes to parse_invoice() called from
 *     handle() is profiled: >= 90 % of its samples name handle ->
 *     parse_invoice with file and line, in that order;
 *   - with two busy threads, a thread's Python frames are never put under
 *     the other thread's native stack (the GIL holder is checked).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <errno.h>
#include <fcntl.h>

#include "core/timeutil.h"
#include "model/profile.h"
#include <math.h>
#include "probes/probe.h"
#include "probes/python.h"
#include "model/pprof.h"
#include "profile.pb-c.h"
#include "tests/helpers.h"

#define DEBIAN_PYTHON "/usr/bin/python3.11"
#define PYENV "/root/.pyenv/versions"

static char dir[64];

static void setup(void)
{
	if (access(DEBIAN_PYTHON, X_OK))
		cr_skip_test("needs Debian's python3.11 (package python3.11-minimal)");
	snprintf(dir, sizeof(dir), "/tmp/fl-python.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	if (dir[0])
		test_sh("rm -rf %s", dir);
	dir[0] = '\0';
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Counts of line_table_agrees_with_co_positions, over every python run. */
struct line_check {
	uint64_t codes, checked, wrong;
};

/*
 * Run dump.py (in dir) with python: for every code object of a module, its
 * first line, its location table (hex) and the line co_positions() gives
 * each code unit ("-" for none); check the reader against each.
 */
static void check_lines(const char *python, struct line_check *lc)
{
	static char line[1 << 17];
	char cmd[256];
	FILE *out;

	snprintf(cmd, sizeof(cmd), "%s %s/dump.py", python, dir);
	out = popen(cmd, "r");
	cr_assert(out);
	while (fgets(line, sizeof(line), out)) {
		char *hex = strchr(line, ' '), *pos;
		uint8_t *table;
		size_t n = 0;
		int first = atoi(line);
		uint32_t instr = 0;

		cr_assert(hex, "bad dump line");
		*hex++ = '\0';
		pos = strchr(hex, ' ');
		cr_assert(pos);
		*pos++ = '\0';
		table = malloc(strlen(hex) / 2 + 1);
		for (size_t i = 0; hex[i] != '.' && hex[i] && hex[i + 1]; i += 2)
			table[n++] = (uint8_t)(hexval(hex[i]) << 4 | hexval(hex[i + 1]));
		lc->codes++;
		for (char *tok = strtok(pos, ",\n"); tok && *tok != '.'; tok = strtok(NULL, ",\n"),
		     instr++) {
			int want = *tok == '-' ? -1 : atoi(tok), got = python_line_of(table, n, first,
										      instr);

			lc->checked++;
			if (got != want && lc->wrong++ < 5)
				cr_log_error("%s: first line %d, instruction %u: %d, CPython says %d",
					     python, first, instr, got, want);
		}
		/* past the table: no line, not the last one again */
		cr_expect_eq(python_line_of(table, n, first, instr + 100), -1);
		free(table);
	}
	cr_assert_eq(pclose(out), 0, "the dump script failed (%s)", python);
}

/*
 * The location-table reader agrees with CPython's co_positions() on every
 * instruction of three stdlib modules: Debian's 3.11, and 3.12 (the same
 * table format) when this machine has it.
 */
Test(python, line_table_agrees_with_co_positions, .init = setup, .fini = teardown,
     .timeout = 60)
{
	static const char dump[] =
		"import sys, json.decoder, argparse, asyncio.base_events as b\n"
		"def codes(c):\n"
		"    yield c\n"
		"    for k in c.co_consts:\n"
		"        if hasattr(k, 'co_linetable'): yield from codes(k)\n"
		"for m in (json.decoder, argparse, b):\n"
		"    top = compile(open(m.__file__).read(), m.__file__, 'exec')\n"
		"    for c in codes(top):\n"
		"        lines = ['-' if p[0] is None else str(p[0]) for p in c.co_positions()]\n"
		"        print(c.co_firstlineno, c.co_linetable.hex() or '.', ','.join(lines) or '.')\n";
	struct line_check lc = { 0 };
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/dump.py", dir);
	f = fopen(path, "w");
	cr_assert(f);
	fputs(dump, f);
	fclose(f);
	check_lines(DEBIAN_PYTHON, &lc);
	if (access(PYENV "/3.12.1/bin/python3.12", X_OK) == 0)
		check_lines(PYENV "/3.12.1/bin/python3.12", &lc);
	cr_log_info("%llu code objects, %llu instructions: %llu lines differ",
		    (unsigned long long)lc.codes, (unsigned long long)lc.checked,
		    (unsigned long long)lc.wrong);
	cr_assert_gt(lc.codes, 200, "too few code objects dumped (%llu)",
		     (unsigned long long)lc.codes);
	cr_assert_eq(lc.wrong, 0);
}

static int interp_of(const char *path, struct python_interp *pi, char *err, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	ret = python_interp_read(fd, pi, err, len);
	close(fd);
	return ret;
}

Test(python, interpreters_are_found_by_version_and_layout, .init = setup, .fini = teardown)
{
	struct python_interp pi;
	struct unwind_python py;
	char err[256], path[256];
	int ret;

	ret = interp_of(DEBIAN_PYTHON, &pi, err, sizeof(err));
	cr_assert_eq(ret, 0, "%s: %s", DEBIAN_PYTHON, err);
	cr_expect_eq(pi.version, 0x030b);
	cr_expect_gt(pi.eval_size, 4096, "the evaluation loop is a big function");
	cr_expect(pi.runtime_vaddr && pi.code_type_vaddr);
	/* published as mapped: a PIE's text at some base, its loop inside it */
	cr_assert_eq(python_interp_publish(&pi, 0x555555554000ULL + pi.text_vaddr -
					   pi.text_offset + 0x1000, 0x555555554000ULL + 0x1000000,
					   0x1000, &py), 1);
	/* every address moved by the load bias, the offsets the version's */
	cr_expect_eq(py.eval_start, pi.eval_vaddr + 0x555555554000ULL);
	cr_expect_eq(py.eval_end - py.eval_start, pi.eval_size);
	cr_expect_eq(py.tstate_at, pi.runtime_vaddr + 0x555555554000ULL + 576,
		     "3.11: _PyRuntime.gilstate.tstate_current");
	cr_expect_eq(py.code_type, pi.code_type_vaddr + 0x555555554000ULL);
	cr_expect_eq(py.ntstate_chain, 0);
	cr_expect_eq(py.frame_is_entry, 68);
	cr_expect_eq(py.frame_owner, PY_NO_FIELD);
	/* a mapping that does not hold the loop is not published */
	memset(&py, 0, sizeof(py));
	cr_expect_eq(python_interp_publish(&pi, 0x7f0000000000ULL, 0x7f0000001000ULL, 0, &py), 0);
	cr_expect_eq(py.eval_end, 0);
	/* not interpreters */
	cr_expect_eq(interp_of("/usr/lib/x86_64-linux-gnu/libc.so.6", &pi, err, sizeof(err)),
		     -ENOENT);
	cr_expect_eq(interp_of("/bin/sh", &pi, err, sizeof(err)), -ENOENT);
	cr_expect_eq(interp_of("/etc/hostname", &pi, err, sizeof(err)), -EINVAL);
	cr_expect(python_file_name_matches("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"));
	cr_expect(python_file_name_matches("/usr/bin/python3.11"));
	cr_expect(!python_file_name_matches("/usr/bin/perl"));
	/* a shared build, and another version, when this machine has them */
	snprintf(path, sizeof(path), PYENV "/3.11.7/lib/libpython3.11.so.1.0");
	if (access(path, R_OK) == 0) {
		ret = interp_of(path, &pi, err, sizeof(err));
		cr_expect_eq(ret, 0, "%s: %s", path, err);
		cr_expect_eq(pi.version, 0x030b);
	}
	snprintf(path, sizeof(path), PYENV "/3.12.1/lib/libpython3.12.so.1.0");
	if (access(path, R_OK) == 0) {
		ret = interp_of(path, &pi, err, sizeof(err));
		cr_expect_eq(ret, 0, "%s: %s", path, err);
		cr_expect_eq(pi.version, 0x030c);
	}
	snprintf(path, sizeof(path), PYENV "/3.13.0/lib/libpython3.13.so.1.0");
	if (access(path, R_OK) == 0) {
		ret = interp_of(path, &pi, err, sizeof(err));
		cr_expect_eq(ret, -ENOTSUP, "3.13 is not walked: %d", ret);
		cr_expect(strstr(err, "3.13"), "the reason names the version: %s", err);
	}
}

/* Run python on script (written into dir) with args; its pid. */
static pid_t run_python(const char *python, const char *name, const char *script,
			const char *arg)
{
	char path[128];
	FILE *f;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert(f);
	fputs(script, f);
	fclose(f);
	pid = fork();
	if (pid == 0) {
		execl(python, python, path, arg, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void profile_pid(struct profile *p, pid_t pid, uint64_t ns)
{
	struct profile_one_filter only = { .pid = (uint32_t)pid };
	struct probe_config cfg;
	char err[512];
	int ret;

	probe_config_defaults(&cfg, err, sizeof(err));
	free(cfg.host);
	cfg.host = strdup("test");
	ret = profile_oneshot(&cfg, ns, 199, &only, p, err, sizeof(err));
	probe_config_free(&cfg);
	if (ret)
		cr_skip_test("the BPF profiler does not load here: %s", err);
}

/* The index of the first frame of st (root first) from `from` that starts with prefix, or -1. */
static int frame_at(const struct profile *p, const uint32_t *st, int from, const char *prefix)
{
	for (int i = from; i < (int)st[0]; i++)
		if (!strncmp(p->strings[st[1 + i]], prefix, strlen(prefix)))
			return i;
	return -1;
}

static const char invoice_py[] =
	"import sys, time\n"
	"\n"
	"def parse_invoice(text):\n"
	"    total = 0\n"
	"    for i, ch in enumerate(text):\n"
	"        total += (ord(ch) * i) % 7\n"
	"    return total\n"
	"\n"
	"def handle(n):\n"
	"    return parse_invoice('invoice-line;' * n)\n"
	"\n"
	"end = time.time() + float(sys.argv[1])\n"
	"while time.time() < end:\n"
	"    handle(2000)\n";

/*
 * >= 90 % of the script's samples name handle -> parse_invoice, root to
 * leaf, each with its file and a line inside its own body.
 */
static void invoice_named(const char *python)
{
	char want_handle[160], want_parse[160], file[128];
	uint64_t all = 0, hit = 0;
	struct profile p;
	pid_t py = run_python(python, "invoice.py", invoice_py, "6");

	usleep(1500000);	/* past start-up: the loop runs */
	profile_pid(&p, py, 3 * NSEC_PER_SEC);
	kill(py, SIGKILL);
	waitpid(py, NULL, 0);
	snprintf(file, sizeof(file), "%s/invoice.py:", dir);
	snprintf(want_handle, sizeof(want_handle), "invoice.handle (%s10)", file);
	snprintf(want_parse, sizeof(want_parse), "invoice.parse_invoice (%s", file);
	for (uint32_t r = 0; r < p.nrows; r++) {
		const uint32_t *st = p.stacks[p.rows[r].stack];
		int h = frame_at(&p, st, 0, want_handle), q = h < 0 ? -1 :
			frame_at(&p, st, h + 1, want_parse);

		all += p.rows[r].count;
		if (q >= 0) {
			int line = atoi(p.strings[st[1 + q]] + strlen(want_parse));

			/* its def (entering it: RESUME is on the def's line) to its last line */
			cr_expect(line >= 3 && line <= 7, "parse_invoice at line %d: %s", line,
				  p.strings[st[1 + q]]);
			hit += p.rows[r].count;
		}
	}
	cr_log_info("%s: %llu/%llu samples name handle -> parse_invoice with file and line",
		    python, (unsigned long long)hit, (unsigned long long)all);
	if (hit * 100 < all * 90)
		for (uint32_t r = 0; r < p.nrows && r < 8; r++) {
			const uint32_t *st = p.stacks[p.rows[r].stack];

			cr_log_info("row %u (%llu):", r, (unsigned long long)p.rows[r].count);
			for (uint32_t i = 0; i < st[0]; i++)
				cr_log_info("  %s", p.strings[st[1 + i]]);
		}
	cr_assert_gt(all, 100, "too few samples of the script (%llu)", (unsigned long long)all);
	cr_assert_geq(hit * 100, all * 90, "only %llu of %llu samples name handle -> parse_invoice",
		      (unsigned long long)hit, (unsigned long long)all);
	profile_free(&p);
}

Test(python, script_functions_are_named_with_file_and_line, .init = setup, .fini = teardown,
     .timeout = 120)
{
	invoice_named(DEBIAN_PYTHON);
}

Test(python, a_libpython_build_is_walked_too, .init = setup, .fini = teardown, .timeout = 120)
{
	if (access(PYENV "/3.11.7/bin/python3.11", X_OK))
		cr_skip_test("no shared-library CPython 3.11 here (pyenv's 3.11.7)");
	invoice_named(PYENV "/3.11.7/bin/python3.11");
}

/* 3.12: the GIL's last holder found through the interpreter, entry shim frames skipped. */
Test(python, cpython_3_12_is_walked, .init = setup, .fini = teardown, .timeout = 120)
{
	if (access(PYENV "/3.12.1/bin/python3.12", X_OK))
		cr_skip_test("no CPython 3.12 here (pyenv's 3.12.1)");
	invoice_named(PYENV "/3.12.1/bin/python3.12");
}

/*
 * The main thread runs parse_invoice, a second thread other_work; the GIL
 * passes between them every 5 ms, so each is sampled on the CPU while the
 * other holds it.  Every stack naming parse_invoice must be the main
 * thread's (rooted in Py_BytesMain), every one naming other_work the
 * thread's (rooted in start_thread): the walker reads Python frames only
 * for the thread holding the GIL.
 */
static void two_threads(const char *python, const char *threads_py);

Test(python, a_thread_never_gets_another_threads_frames, .init = setup, .fini = teardown,
     .timeout = 120)
{
	static const char threads_py[] =
		"import sys, threading, time\n"
		"def other_work():\n"
		"    x = 0\n"
		"    while True:\n"
		"        for i in range(1000): x += i * i\n"
		"def parse_invoice():\n"
		"    t = 0\n"
		"    for i in range(20000): t += i % 7\n"
		"threading.Thread(target=other_work, daemon=True).start()\n"
		"end = time.time() + float(sys.argv[1])\n"
		"while time.time() < end:\n"
		"    parse_invoice()\n";
	const char *pythons[] = { DEBIAN_PYTHON, PYENV "/3.12.1/bin/python3.12" };

	for (int k = 0; k < 2; k++) {
		if (access(pythons[k], X_OK) == 0)
			two_threads(pythons[k], threads_py);
	}
}

static void two_threads(const char *python, const char *threads_py)
{
	uint64_t main_ok = 0, thread_ok = 0, wrong = 0;
	struct profile p;
	pid_t py = run_python(python, "threads.py", threads_py, "6");

	usleep(1500000);
	profile_pid(&p, py, 3 * NSEC_PER_SEC);
	kill(py, SIGKILL);
	waitpid(py, NULL, 0);
	for (uint32_t r = 0; r < p.nrows; r++) {
		const uint32_t *st = p.stacks[p.rows[r].stack];
		int in_main = frame_at(&p, st, 0, "Py_BytesMain") >= 0;
		int in_thread = frame_at(&p, st, 0, "start_thread") >= 0;
		int parse = frame_at(&p, st, 0, "threads.parse_invoice (") >= 0;
		int other = frame_at(&p, st, 0, "threads.other_work (") >= 0;

		if ((parse && !in_main) || (other && !in_thread) || (parse && other)) {
			wrong += p.rows[r].count;
			for (uint32_t i = 0; i < st[0]; i++)
				cr_log_error("  %s", p.strings[st[1 + i]]);
		}
		main_ok += parse && in_main ? p.rows[r].count : 0;
		thread_ok += other && in_thread ? p.rows[r].count : 0;
	}
	cr_log_info("%s, two threads: %llu samples name parse_invoice under the main thread, "
		    "%llu other_work under its thread, %llu under the wrong one", python,
		    (unsigned long long)main_ok, (unsigned long long)thread_ok,
		    (unsigned long long)wrong);
	cr_assert_eq(wrong, 0, "Python frames were put under another thread's stack");
	cr_assert_gt(main_ok, 20, "the main thread's function was not named");
	cr_assert_gt(thread_ok, 20, "the second thread's function was not named");
	profile_free(&p);
}

/*
 * A Python function's lines are one function: its total counts a sample
 * once whichever line it was at, its self time is what it is the leaf of
 * (pprof's flat: the sum of flat stays the samples), its own time adds the
 * samples whose innermost Python frame it is (the interpreter's native
 * helpers under it keep theirs too), and the hot path finds it by its
 * function name.
 */
Test(python, a_functions_lines_are_one_function)
{
	const char *a[] = { "main", "app.handle (app.py:10)", "app.parse (app.py:4)" };
	const char *b[] = { "main", "app.handle (app.py:10)", "app.parse (app.py:5)",
			    "PyNumber_Remainder" };
	const char *c[] = { "main", "app.handle (app.py:11)" };
	struct profile_func *f;
	struct profile p;
	char path[256];
	size_t n;
	int seen = 0;

	cr_expect_eq(profile_python_function_len("app.parse (app.py:4)"), strlen("app.parse (app.py"));
	cr_expect_eq(profile_python_function_len("app.parse (app.py)"), 0);
	cr_expect_eq(profile_python_function_len("foo(int)"), 0);
	cr_expect_eq(profile_python_function_len("libc.so.6+0x2a1b0"), 0);
	cr_expect_eq(profile_python_function_len("x (:1)"), 0, "no file");
	cr_expect_eq(profile_python_function_len("(a:1)"), 0);
	cr_expect_eq(profile_python_function_len("do_syscall_64_[k]"), 0);
	cr_assert_eq(profile_init(&p, "h"), 0);
	cr_assert_eq(profile_add(&p, "s", "c", 1, a, 3, 30), 0);
	cr_assert_eq(profile_add(&p, "s", "c", 1, b, 4, 50), 0);
	cr_assert_eq(profile_add(&p, "s", "c", 1, c, 2, 20), 0);
	n = profile_functions(&p, &f);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(f[i].name, "app.parse (app.py)")) {
			cr_expect_float_eq(f[i].total, 0.8, 1e-9);
			cr_expect_float_eq(f[i].self, 0.3, 1e-9, "the samples it is the leaf of");
			cr_expect_float_eq(f[i].own, 0.8, 1e-9, "its lines and its helper's time");
			seen |= 1;
		} else if (!strcmp(f[i].name, "app.handle (app.py)")) {
			cr_expect_float_eq(f[i].total, 1.0, 1e-9, "counted once per sample");
			cr_expect_float_eq(f[i].self, 0.2, 1e-9);
			cr_expect_float_eq(f[i].own, 0.2, 1e-9);
			seen |= 2;
		} else if (!strcmp(f[i].name, "PyNumber_Remainder")) {
			cr_expect_float_eq(f[i].self, 0.5, 1e-9);
			cr_expect_float_eq(f[i].own, 0.5, 1e-9);
			seen |= 4;
		} else {
			cr_expect(!strstr(f[i].name, ".py:"), "a line left as a function: %s",
				  f[i].name);
		}
	}
	cr_expect_eq(seen, 7);
	free(f);
	cr_assert_eq(profile_hot_path(&p, "app.parse (app.py)", path, sizeof(path)), 0);
	cr_expect_str_eq(path, "main;app.handle (app.py:10);app.parse (app.py:5)");
	profile_free(&p);
}

/*
 * pprof has Python functions as pprof has them: a Function per function
 * ("app.parse" in app.py), a location per line of it with that line.
 */
Test(python, pprof_names_the_function_its_file_and_its_lines)
{
	const char *a[] = { "main", "app.handle (app.py:10)", "app.parse (app.py:4)" };
	const char *b[] = { "main", "app.handle (app.py:10)", "app.parse (app.py:5)" };
	Perftools__Profiles__Profile *pb;
	uint8_t *gz, *raw;
	size_t gzlen, rawlen;
	struct profile p;
	uint64_t parse_fn = 0;
	int lines = 0;

	cr_assert_eq(profile_init(&p, "h"), 0);
	cr_assert_eq(profile_add(&p, "s", "c", 1, a, 3, 30), 0);
	cr_assert_eq(profile_add(&p, "s", "c", 1, b, 3, 50), 0);
	cr_assert_eq(pprof_encode(&p, &gz, &gzlen), 0);
	cr_assert_eq(pprof_gunzip(gz, gzlen, &raw, &rawlen), 0);
	pb = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	cr_assert_not_null(pb, "pprof does not decode");
	for (size_t i = 0; i < pb->n_function; i++) {
		const Perftools__Profiles__Function *f = pb->function[i];
		const char *name = pb->string_table[f->name];

		cr_expect(!strstr(name, "("), "a function named with its file: %s", name);
		if (!strcmp(name, "app.parse")) {
			cr_expect(!parse_fn, "app.parse is one function");
			parse_fn = f->id;
			cr_expect_str_eq(pb->string_table[f->filename], "app.py");
		}
	}
	cr_assert(parse_fn, "no function app.parse");
	for (size_t i = 0; i < pb->n_location; i++) {
		const Perftools__Profiles__Location *l = pb->location[i];

		cr_assert_eq(l->n_line, 1);
		if (l->line[0]->function_id == parse_fn) {
			cr_expect(l->line[0]->line == 4 || l->line[0]->line == 5);
			lines |= 1 << l->line[0]->line;
		}
	}
	cr_expect_eq(lines, (1 << 4) | (1 << 5), "a location per line of app.parse");
	perftools__profiles__profile__free_unpacked(pb, NULL);
	free(raw);
	free(gz);
	profile_free(&p);
}

/* The walker's view of pid's interpreter, as the unwinder publishes it. */
static int published(pid_t pid, struct unwind_python *py)
{
	char path[64], line[1024];
	FILE *f;
	int ok = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (!ok && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char perms[8], file[512] = "";
		struct python_interp pi;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %511s", &start, &end, perms, &off,
			   file) == 5 && perms[2] == 'x' && python_interp_of(file, &pi) == 0)
			ok = python_interp_publish(&pi, start, end, off, py);
	}
	fclose(f);
	return ok;
}

/*
 * Naming from the live process, without BPF: a code object's address (as
 * the script prints it) is named module.qualname (file:line); an object
 * that is not a code object, or a process that is gone, is "[python]",
 * never a name; a forgotten process is read again.
 */
Test(python, frames_are_named_from_the_live_process_or_not_at_all, .init = setup,
     .fini = teardown, .timeout = 60)
{
	static const char script[] =
		"import sys, time\n"
		"class Invoice:\n"
		"    def total(self):\n"
		"        return 1\n"
		"junk = [1, 2, 3]\n"
		"print(id(Invoice.total.__code__), id(junk), flush=True)\n"
		"time.sleep(30)\n";
	unsigned long long code = 0, junk = 0;
	struct python_names *pn = python_names_new();
	struct unwind_python py;
	char path[128], cmd[256], name[256], want[256];
	FILE *f, *out;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/billing.py", dir);
	f = fopen(path, "w");
	cr_assert(f);
	fputs(script, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "exec %s %s & echo $!", DEBIAN_PYTHON, path);
	out = popen(cmd, "r");
	cr_assert(out);
	cr_assert_eq(fscanf(out, "%d", &pid), 1);
	cr_assert_eq(fscanf(out, "%llu %llu", &code, &junk), 2, "the script printed no addresses");
	pclose(out);
	cr_assert(published(pid, &py), "python3.11 not found in the process's mappings");
	/* instruction 0xffff: no instruction (a frame just made): its def line */
	cr_assert_eq(python_frame_name(pn, (uint32_t)pid, &py, PY_FRAME_TAG |
				       (0xffffULL << PY_FRAME_INSTR_SHIFT) | code, name,
				       sizeof(name)), 1, "not named: %s", name);
	snprintf(want, sizeof(want), "billing.Invoice.total (%s:3)", path);
	cr_expect_str_eq(name, want);
	/* its first instruction (RESUME) is on the def line too, its return on line 4 */
	cr_assert_eq(python_frame_name(pn, (uint32_t)pid, &py, PY_FRAME_TAG |
				       (2ULL << PY_FRAME_INSTR_SHIFT) | code, name,
				       sizeof(name)), 1);
	snprintf(want, sizeof(want), "billing.Invoice.total (%s:4)", path);
	cr_expect_str_eq(name, want);
	/* a list is not a code object: no name */
	cr_expect_eq(python_frame_name(pn, (uint32_t)pid, &py, PY_FRAME_TAG | junk, name,
				       sizeof(name)), 0);
	cr_expect_str_eq(name, "[python]");
	/* an address the process does not map: no name */
	cr_expect_eq(python_frame_name(pn, (uint32_t)pid, &py, PY_FRAME_TAG | 0x10, name,
				       sizeof(name)), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	usleep(100000);
	/*
	 * gone: what was named stays named (its last window is still to be
	 * drained), in a later window too, and with no interpreter to go by
	 * (its entry left the kernel's map when it exited)
	 */
	cr_expect_eq(python_frame_name(pn, (uint32_t)pid, &py, PY_FRAME_TAG |
				       (2ULL << PY_FRAME_INSTR_SHIFT) | code, name,
				       sizeof(name)), 1);
	python_names_new_window(pn);
	cr_expect_eq(python_frame_name(pn, (uint32_t)pid, &py, PY_FRAME_TAG |
				       (2ULL << PY_FRAME_INSTR_SHIFT) | code, name,
				       sizeof(name)), 1);
	cr_expect_eq(python_frame_name(pn, (uint32_t)pid, NULL, PY_FRAME_TAG |
				       (2ULL << PY_FRAME_INSTR_SHIFT) | code, name,
				       sizeof(name)), 1);
	snprintf(want, sizeof(want), "billing.Invoice.total (%s:4)", path);
	cr_expect_str_eq(name, want);
	/* never seen, and nothing to read it with: no name */
	cr_expect_eq(python_frame_name(pn, (uint32_t)pid, NULL, PY_FRAME_TAG | (code + 64),
				       name, sizeof(name)), 0);
	/* forgotten (the pid announced again: a new process): not a guess from before */
	python_names_forget(pn, (uint32_t)pid);
	cr_expect_eq(python_frame_name(pn, (uint32_t)pid, &py, PY_FRAME_TAG | code, name,
				       sizeof(name)), 0);
	python_names_free(pn);
}
