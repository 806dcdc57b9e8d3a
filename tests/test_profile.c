/*
 * test_profile.c - the continuous profiler against real programs this test
 * builds: a known hot function (with and without frame pointers) named in
 * >= 80 % of its samples, kernel frames of a syscall loop resolved, a
 * process that lives 40 ms still named, Node's JS functions named from its
 * perf map; pprof that decodes strictly (and
 * with protoc), SVG that is well-formed and renders; the diff table; the
 * window codec against bad input.
 */
#include <bpf/bpf.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>
#include <msgpack.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>

#include "tests/helpers.h"
#include "probes/symbolize.h"
#include "probes/unwind.h"
#include "model/pprof.h"
#include "probes/probe.h"
#include "model/profile.h"
#include "model/wire.h"
#include "profile.pb-c.h"
#include "model/profile_export.h"
#include "core/timeutil.h"

static char dir[64];

static const char hot_src[] =
	"#include <stdlib.h>\n#include <time.h>\n#include <unistd.h>\n"
	"static volatile unsigned long sink;\n"
	"__attribute__((noinline)) void hot_function(void)\n"
	"{ for (int i = 0; i < 100000; i++) sink += (unsigned long)i * 2654435761u; }\n"
	"__attribute__((noinline)) void caller_function(void) { hot_function(); }\n"
	"int main(int argc, char **argv)\n"
	"{ struct timespec a, b; double lim = atof(argv[1]);\n"
	"  clock_gettime(CLOCK_MONOTONIC, &a);\n"
	"  do { if (argc > 2) for (int k = 0; k < 256; k++) getppid();\n"
	"       else caller_function();\n"
	"       clock_gettime(CLOCK_MONOTONIC, &b);\n"
	"  } while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < lim);\n"
	"  return 0; }\n";

static void build(const char *name, const char *flags)
{
	cr_assert_eq(test_sh("cd %s && gcc -O1 %s -o %s hot.c", dir, flags, name), 0,
		     "cannot build the test program %s", name);
}

static void setup(void)
{
	FILE *f;
	char path[128];

	if (!test_is_root())
		cr_skip_test("needs root (CAP_BPF, CAP_PERFMON)");
	snprintf(dir, sizeof(dir), "/tmp/fl-prof.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/hot.c", dir);
	f = fopen(path, "w");
	fputs(hot_src, f);
	fclose(f);
	build("flhotfp", "-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer");
	build("flhotnofp", "-fomit-frame-pointer");
	build("flsys", "-fno-omit-frame-pointer");
}

static void teardown(void)
{
	if (dir[0])
		test_sh("rm -rf %s", dir);
	dir[0] = '\0';
}

static pid_t run(const char *name, const char *secs, int syscalls)
{
	char path[128];
	pid_t pid = fork();

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (pid == 0) {
		execl(path, name, secs, syscalls ? "sys" : (char *)NULL, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* One-shot profile; unwind_rows < 0: the configured default (DWARF), 0: frame pointers. */
static void profile_unwinding(struct profile *p, uint64_t ns, uint32_t hz,
			      const struct profile_one_filter *only, long unwind_rows)
{
	struct probe_config cfg;
	char err[512];
	int ret;

	probe_config_defaults(&cfg, err, sizeof(err));
	free(cfg.host);
	cfg.host = strdup("test");
	if (unwind_rows >= 0)
		cfg.profile_unwind_rows = (uint64_t)unwind_rows;
	ret = profile_oneshot(&cfg, ns, hz, only, p, err, sizeof(err));
	probe_config_free(&cfg);
	if (ret)
		cr_skip_test("the BPF profiler does not load here: %s", err);
}

static void profile_only(struct profile *p, uint64_t ns, uint32_t hz,
			 const struct profile_one_filter *only)
{
	profile_unwinding(p, ns, hz, only, -1);
}

/* Samples of comm, and of those the ones with a frame equal to fn (or ending "_[k]" named). */
static void profile_now(struct profile *p, uint64_t ns, uint32_t hz)
{
	profile_only(p, ns, hz, NULL);
}

static void share_of(const struct profile *p, const char *comm, const char *fn, uint64_t *all,
		     uint64_t *hit)
{
	*all = *hit = 0;
	for (uint32_t r = 0; r < p->nrows; r++) {
		const uint32_t *st = p->stacks[p->rows[r].stack];
		int found = 0;

		if (strcmp(p->strings[p->rows[r].comm], comm))
			continue;
		*all += p->rows[r].count;
		for (uint32_t i = 0; i < st[0]; i++) {
			const char *name = p->strings[st[1 + i]];

			if (fn ? !strcmp(name, fn)
			       : (strstr(name, "_[k]") && strncmp(name, "[kernel]", 8)))
				found = 1;
		}
		*hit += found ? p->rows[r].count : 0;
	}
}

/*
 * Of comm's samples that reach into the kernel (any "_[k]" frame), how many
 * name every kernel frame ("sys_getppid_[k]", not "[kernel]+0x..._[k]").
 * How often a busy loop is sampled inside the kernel depends on the load of
 * the machine; whether those frames are named does not.
 */
static void kernel_named(const struct profile *p, const char *comm, uint64_t *in_kernel,
			 uint64_t *named)
{
	*in_kernel = *named = 0;
	for (uint32_t r = 0; r < p->nrows; r++) {
		const uint32_t *st = p->stacks[p->rows[r].stack];
		int kernel = 0, unnamed = 0;

		if (strcmp(p->strings[p->rows[r].comm], comm))
			continue;
		for (uint32_t i = 0; i < st[0]; i++) {
			const char *name = p->strings[st[1 + i]];

			if (!strstr(name, "_[k]"))
				continue;
			kernel = 1;
			unnamed |= !strncmp(name, "[kernel]", 8);
		}
		*in_kernel += kernel ? p->rows[r].count : 0;
		*named += kernel && !unnamed ? p->rows[r].count : 0;
	}
}

Test(profile, hot_function_and_kernel_frames_are_named, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct profile p;
	uint64_t all, hit, kall, khit;
	pid_t a = run("flhotfp", "3", 0), b = run("flhotnofp", "3", 0), c;

	usleep(200000);
	c = run("flsys", "3", 1);	/* the same program looping on getppid() */
	profile_now(&p, 2 * NSEC_PER_SEC, 199);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	waitpid(c, NULL, 0);
	share_of(&p, "flhotnofp", "hot_function", &all, &hit);
	cr_log_info("no frame pointers: %llu/%llu samples name hot_function",
		    (unsigned long long)hit, (unsigned long long)all);
	cr_assert_gt(all, 50, "too few samples of the program (%llu)", (unsigned long long)all);
	cr_assert_geq(hit * 100, all * 80, "only %llu of %llu samples name hot_function",
		      (unsigned long long)hit, (unsigned long long)all);
	/* with frame pointers the whole stack unwinds, up to main */
	uint64_t fall, fhit, mhit;

	share_of(&p, "flhotfp", "hot_function", &fall, &fhit);
	share_of(&p, "flhotfp", "main", &fall, &mhit);
	cr_assert_gt(fall, 50);
	cr_assert_geq(mhit * 100, fall * 80, "main in only %llu of %llu samples",
		      (unsigned long long)mhit, (unsigned long long)fall);
	/* the syscall loop: samples in the kernel, and their kernel frames named */
	share_of(&p, "flsys", NULL, &all, &hit);
	kernel_named(&p, "flsys", &kall, &khit);
	cr_log_info("getppid loop: %llu/%llu samples in the kernel, %llu of them fully named",
		    (unsigned long long)kall, (unsigned long long)all, (unsigned long long)khit);
	cr_assert_geq(kall, 30, "only %llu samples of a getppid() loop in the kernel",
		      (unsigned long long)kall);
	cr_assert_geq(khit * 100, kall * 95, "kernel frames unnamed in %llu of %llu samples",
		      (unsigned long long)(kall - khit), (unsigned long long)kall);
	cr_assert_geq(hit, khit, "a fully named kernel sample is not counted as named");
	profile_free(&p);
}

/*
 * Of the samples of process pid, how many unwound to where the program or
 * the thread began: through libc's entry to the frame it calls (main) or
 * through start_thread to the thread's function.  *named: how many name
 * frame `want` (NULL: not asked).
 */
static int reached_entry(const struct profile *p, const uint32_t *st)
{
	for (uint32_t i = 0; i + 1 < st[0]; i++) {
		const char *name = p->strings[st[1 + i]];

		if (!strcmp(name, "__libc_start_call_main") || !strcmp(name, "start_thread"))
			return 1;
	}
	return 0;
}

static void complete_share(const struct profile *p, uint32_t pid, const char *want,
			   uint64_t *all, uint64_t *complete, uint64_t *named)
{
	*all = *complete = *named = 0;
	for (uint32_t r = 0; r < p->nrows; r++) {
		const uint32_t *st = p->stacks[p->rows[r].stack];
		int done = reached_entry(p, st), has = 0;

		if (p->rows[r].pid != pid)
			continue;
		*all += p->rows[r].count;
		for (uint32_t i = 0; want && i < st[0]; i++)
			has |= !strcmp(p->strings[st[1 + i]], want);
		*complete += done ? p->rows[r].count : 0;
		*named += has ? p->rows[r].count : 0;
	}
}

static pid_t spawn_sh(const char *cmd)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Kill and reap the processes a test spawned (0: none). */
static void stop_spawned(pid_t a, pid_t b)
{
	for (int i = 0; i < 2; i++) {
		pid_t p = i ? b : a;

		if (p > 0) {
			kill(p, SIGKILL);
			waitpid(p, NULL, 0);
		}
	}
}

/*
 * Run cmd (sh -c), let it start for settle_us, profile it alone (--pid)
 * for ns at 99 Hz (unwind_rows as profile_unwinding), kill it.  Returns
 * its pid, which the profile's rows carry.
 */
static uint32_t profile_command(const char *cmd, useconds_t settle_us, uint64_t ns,
				long unwind_rows, struct profile *p)
{
	struct profile_one_filter only = { 0 };
	pid_t pid = spawn_sh(cmd);

	usleep(settle_us);
	only.pid = (uint32_t)pid;
	profile_unwinding(p, ns, 99, &only, unwind_rows);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return (uint32_t)pid;
}

/*
 * Stock Debian binaries, built without frame pointers, unwound in the
 * kernel with their .eh_frame: >= 90 % of each one's samples reach where
 * it began (main called from libc, or a thread's start).  With frame
 * pointers only, the same xz does not: the DWARF walk is what does it.
 */
Test(profile, stock_binaries_unwind_through_libc_to_main, .init = setup, .fini = teardown,
     .timeout = 120)
{
	static const struct {
		const char *name, *cmd, *frame;	/* frame: a function its stacks must name */
	} progs[] = {
		{ "xz", "exec xz -9 -T1 -c < /dev/urandom > /dev/null", NULL },
		{ "gzip", "exec gzip -9 -c < /dev/urandom > /dev/null", NULL },
		{ "python3", "exec python3 -c 'while True: sum(i * i for i in range(1000))'",
		  "Py_BytesMain" },
		{ "openssl", "exec openssl speed -seconds 30 sha256 > /dev/null 2>&1", NULL },
	};
	uint64_t all, complete, named;

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		struct profile p;
		uint32_t pid = profile_command(progs[i].cmd, 300000, 2 * NSEC_PER_SEC, -1, &p);

		complete_share(&p, pid, progs[i].frame, &all, &complete, &named);
		cr_log_info("%s: %llu of %llu samples unwound to where it began", progs[i].name,
			    (unsigned long long)complete, (unsigned long long)all);
		cr_assert_geq(all, 40, "%s: too few samples (%llu)", progs[i].name,
			      (unsigned long long)all);
		cr_expect_geq(complete * 100, all * 90, "%s: only %llu of %llu samples unwound",
			      progs[i].name, (unsigned long long)complete, (unsigned long long)all);
		if (progs[i].frame)
			cr_expect_geq(named * 100, all * 90, "%s: %s in only %llu of %llu samples",
				      progs[i].name, progs[i].frame, (unsigned long long)named,
				      (unsigned long long)all);
		profile_free(&p);
	}
	/* the same xz by frame pointers only */
	{
		struct profile p;
		uint32_t pid = profile_command(progs[0].cmd, 300000, 2 * NSEC_PER_SEC, 0, &p);

		complete_share(&p, pid, NULL, &all, &complete, &named);
		cr_log_info("xz by frame pointers: %llu of %llu samples unwound",
			    (unsigned long long)complete, (unsigned long long)all);
		cr_assert_geq(all, 40);
		cr_expect_lt(complete * 100, all * 50, "xz unwinds without CFI: not a test of it");
		profile_free(&p);
	}
}

/*
 * The probe's way (lazy: a file gets rows when a sample's walk asks for
 * them): a whole-host profile of a running xz, which starts with no rows
 * at all, still unwinds >= 80 % of xz's samples to main within 3 s.
 */
Test(profile, lazily_loaded_rows_unwind_a_running_program, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct profile_one_filter everything = { 0 };
	uint64_t all, complete, named;
	struct profile p;
	pid_t pid = spawn_sh("exec xz -9 -T1 -c < /dev/urandom > /dev/null");

	usleep(300000);
	profile_unwinding(&p, 3 * NSEC_PER_SEC, 99, &everything, -1);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	complete_share(&p, (uint32_t)pid, NULL, &all, &complete, &named);
	cr_log_info("xz, rows built as samples ask: %llu of %llu samples unwound",
		    (unsigned long long)complete, (unsigned long long)all);
	cr_assert_geq(all, 60, "too few samples of xz (%llu)", (unsigned long long)all);
	cr_expect_geq(complete * 100, all * 80, "only %llu of %llu samples unwound",
		      (unsigned long long)complete, (unsigned long long)all);
	profile_free(&p);
}

/*
 * A library loaded after the process was first sampled (python3 spins,
 * then imports bz2 — dlopen of _bz2 and libbz2 — and compresses):
 * the walker notices code outside the mappings it has and asks for them
 * again, so >= 80 % of the samples in libbz2 unwind to where python began.
 */
Test(profile, dlopened_library_unwinds_once_noticed, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct profile p;
	uint64_t all = 0, complete = 0;
	char script[128], cmd[256];
	FILE *f;

	snprintf(script, sizeof(script), "%s/dl.py", dir);
	f = fopen(script, "w");
	cr_assert_not_null(f);
	/* busy before the import: sampled, and its mappings read, without libbz2 */
	fputs("import time\nt = time.time() + 0.7\nwhile time.time() < t:\n    pass\n"
	      "import bz2\nd = bytes(range(256)) * 4000\nwhile True:\n    bz2.compress(d, 9)\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "exec python3 %s", script);
	profile_command(cmd, 100000, 4 * NSEC_PER_SEC, -1, &p);	/* asks at most once a second */
	for (uint32_t r = 0; r < p.nrows; r++) {
		const uint32_t *st = p.stacks[p.rows[r].stack];
		int bz = 0, done = reached_entry(&p, st);

		for (uint32_t i = 0; i < st[0]; i++) {
			const char *name = p.strings[st[1 + i]];

			bz |= !!strstr(name, "libbz2") || !strncmp(name, "BZ2_", 4);
		}
		all += bz ? p.rows[r].count : 0;
		complete += bz && done ? p.rows[r].count : 0;
	}
	cr_log_info("dlopen'ed libbz2: %llu of %llu samples unwound to main",
		    (unsigned long long)complete, (unsigned long long)all);
	cr_assert_geq(all, 40, "too few samples in libbz2 (%llu)", (unsigned long long)all);
	cr_expect_geq(complete * 100, all * 80, "only %llu of %llu libbz2 samples unwound",
		      (unsigned long long)complete, (unsigned long long)all);
	profile_free(&p);
}

/*
 * The unwinder's two BPF maps as the profiler makes them: an mmap-able
 * array of nrows rows and a table of 16 processes' mappings.
 */
static void unwind_maps(uint32_t nrows, int *rows, int *procs)
{
	LIBBPF_OPTS(bpf_map_create_opts, mmapable, .map_flags = BPF_F_MMAPABLE);

	*rows = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_rows", 4, sizeof(struct unwind_row), nrows,
			       &mmapable);
	*procs = bpf_map_create(BPF_MAP_TYPE_HASH, "t_procs", 4, sizeof(struct unwind_proc), 16,
				NULL);
}

/*
 * When its rows are full the unwinder starts them over: a `sleep` and then
 * a perl (each ~30,000 rows with libc) do not fit 40,000 rows together;
 * loading perl forgets sleep (its process entry is gone, the caller is
 * told to have processes announce themselves again), and perl's files get
 * the rows.  Real BPF maps (root).
 */
Test(profile, unwinder_starts_its_rows_over_when_full, .init = setup, .fini = teardown)
{
	int rows, procs;
	pid_t a = spawn_sh("exec sleep 30"), b = spawn_sh("exec perl -e 'sleep 30'");
	uint32_t key, used, max, files, failed;
	struct unwind_proc up;
	struct unwinder *u;
	char err[256];

	unwind_maps(40000, &rows, &procs);
	cr_assert_geq(rows, 0, "cannot create the rows array: %s", strerror(errno));
	cr_assert_geq(procs, 0);
	u = unwinder_new(rows, 40000, 40000, procs, err, sizeof(err));
	cr_assert_not_null(u, "%s", err);
	usleep(300000);		/* both exec'd */
	cr_assert_gt(unwinder_add_process(u, (uint32_t)a), 0);
	cr_assert_eq(unwinder_take_reset(u), 0);
	key = (uint32_t)a;
	cr_assert_eq(bpf_map_lookup_elem(procs, &key, &up), 0, "sleep not published");
	cr_assert_gt(unwinder_add_process(u, (uint32_t)b), 0);
	cr_expect_eq(unwinder_take_reset(u), 1, "full, and not started over");
	cr_expect_eq(unwinder_take_reset(u), 0, "a reset is told once");
	cr_expect_neq(bpf_map_lookup_elem(procs, &key, &up), 0, "sleep still published after the reset");
	key = (uint32_t)b;
	cr_assert_eq(bpf_map_lookup_elem(procs, &key, &up), 0, "perl not published");
	unwinder_stats(u, &used, &max, &files, &failed);
	cr_log_info("after the reset: %u of %u rows, %u files, %u without a table", used, max,
		    files, failed);
	cr_expect_leq(used, max);
	for (uint32_t i = 0; i < up.n; i++)
		cr_expect_leq(up.m[i].first + up.m[i].count, used,
			      "perl's mapping %u points past the rows in use", i);
	stop_spawned(a, b);
	unwinder_free(u);
	close(rows);
	close(procs);
}

/*
 * Two copies of one binary (another inode, as in another container) share
 * their rows by build id: the second adds no rows, and both processes'
 * mappings of it point at the same ones.
 */
Test(profile, copies_of_a_binary_share_rows_by_build_id)
{
	int rows, procs;
	char tmp[] = "/tmp/fl-copies.XXXXXX", cmd[128], err[256];
	uint32_t used1, used2, max, files1, files2, failed, key;
	struct unwind_proc pa, pb;
	int added_a, added_b, found_a, found_b;
	struct unwinder *u;
	pid_t a, b;

	if (!test_is_root())
		cr_skip_test("needs root (CAP_BPF)");
	unwind_maps(200000, &rows, &procs);
	cr_assert_geq(rows, 0, "cannot create the rows array: %s", strerror(errno));
	cr_assert_geq(procs, 0);
	cr_assert_not_null(mkdtemp(tmp));
	cr_assert_eq(test_sh("cp /usr/bin/sleep %s/one && cp /usr/bin/sleep %s/two", tmp, tmp), 0);
	u = unwinder_new(rows, 200000, 50000, procs, err, sizeof(err));
	cr_assert_not_null(u, "%s", err);
	snprintf(cmd, sizeof(cmd), "exec %s/one 30", tmp);
	a = spawn_sh(cmd);
	snprintf(cmd, sizeof(cmd), "exec %s/two 30", tmp);
	b = spawn_sh(cmd);
	usleep(300000);		/* both exec'd */
	/* read everything, clean up, then judge: a failure leaves nothing behind */
	added_a = unwinder_add_process(u, (uint32_t)a);
	unwinder_stats(u, &used1, &max, &files1, &failed);
	added_b = unwinder_add_process(u, (uint32_t)b);
	unwinder_stats(u, &used2, &max, &files2, &failed);
	key = (uint32_t)a;
	found_a = bpf_map_lookup_elem(procs, &key, &pa);
	key = (uint32_t)b;
	found_b = bpf_map_lookup_elem(procs, &key, &pb);
	stop_spawned(a, b);
	unwinder_free(u);
	close(rows);
	close(procs);
	test_sh("rm -rf %s", tmp);
	cr_assert(added_a > 0 && added_b > 0, "not added: %d, %d", added_a, added_b);
	cr_assert(found_a == 0 && found_b == 0, "not published");
	cr_expect_gt(used1, 0, "no rows for sleep and its libraries");
	cr_expect_eq(used2, used1, "the copy's rows were built again (%u rows, then %u)", used1,
		     used2);
	cr_expect_eq(files2, files1 + 1, "the copy is a file of its own with rows");
	cr_assert_eq(pa.n, pb.n, "the two processes map different files");
	for (uint32_t i = 0; i < pa.n; i++)
		cr_expect(pa.m[i].first == pb.m[i].first && pa.m[i].count == pb.m[i].count,
			  "mapping %u: rows %u+%u and %u+%u", i, pa.m[i].first, pa.m[i].count,
			  pb.m[i].first, pb.m[i].count);
}

/*
 * The table of the libc this test runs on: a function's first instruction
 * has the call's rule (CFA = rsp + 8, rbp untouched), almost every rule is
 * one the walker supports, and files that are not ELF are refused.
 */
Test(profile, unwind_table_of_libc)
{
	struct unwind_table t;
	const struct unwind_row *r;
	Dl_info info;
	char err[256];
	int fd;

	cr_assert(dladdr((void *)qsort, &info) && info.dli_fname && info.dli_saddr);
	fd = open(info.dli_fname, O_RDONLY);
	cr_assert_geq(fd, 0, "%s", info.dli_fname);
	cr_assert_eq(unwind_table_build(fd, 0, &t, err, sizeof(err)), 0, "%s", err);
	cr_log_info("%s: %zu rows from %zu FDEs, %zu rules not supported", info.dli_fname,
		    t.nrows, t.fdes, t.unsupported);
	cr_expect_gt(t.fdes, 1000);
	cr_expect_gt(t.nrows, t.fdes, "one row per FDE: the rules inside functions are lost");
	cr_expect_lt(t.unsupported * 100, t.nrows, "%zu of %zu rules not supported", t.unsupported,
		     t.nrows);
	for (size_t i = 1; i < t.nrows; i++)
		cr_assert_gt(t.rows[i].pc, t.rows[i - 1].pc, "rows not sorted at %zu", i);
	r = unwind_table_find(&t, (uint64_t)((char *)info.dli_saddr - (char *)info.dli_fbase));
	cr_assert_not_null(r);
	cr_expect_eq(r->cfa, UNWIND_CFA_RSP);
	cr_expect_eq(r->cfa_off, 8, "at qsort's entry the CFA is rsp+%d", r->cfa_off);
	cr_expect_eq(r->rbp, UNWIND_RBP_SAME);
	cr_assert_eq(t.nloads, 1);
	/* limits under its rows: given up, nothing kept; its own row count: built */
	{
		struct unwind_table small;
		size_t fdes = t.fdes, rows = t.nrows;

		cr_expect_eq(unwind_table_build(fd, fdes / 2, &small, err, sizeof(err)), -E2BIG);
		cr_expect(strstr(err, "more than"), "%s", err);
		cr_expect_eq(small.nrows + small.nloads, 0);
		cr_expect_eq(unwind_table_build(fd, rows - 1, &small, err, sizeof(err)), -E2BIG);
		cr_expect(strstr(err, "more than"), "%s", err);
		cr_expect_null(small.rows);
		cr_expect_eq(unwind_table_build(fd, rows, &small, err, sizeof(err)), 0, "%s", err);
		cr_expect_eq(small.nrows, rows);
		unwind_table_free(&small);
	}
	close(fd);
	unwind_table_free(&t);

	fd = open("/etc/passwd", O_RDONLY);
	cr_expect_eq(unwind_table_build(fd, 0, &t, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "not a 64-bit ELF file");
	close(fd);
}

/*
 * Of comm's samples with a user-space frame, how many name all of them: a
 * frame is unnamed if its mappings were not known ("[unknown]+0x...") or
 * if it lies in the program (which has a symbol table) as "prog+0x...".
 * Of the samples that reach main, how many name hot_function.  What else
 * a 40 ms process spends its samples on (ld.so, exit, page faults) grows
 * with the machine's load; whether its frames are named does not.
 */
static void named_in_user(const struct profile *p, const char *comm, uint64_t *user,
			  uint64_t *named, uint64_t *in_main, uint64_t *hot)
{
	char prog[32];

	snprintf(prog, sizeof(prog), "%s+0x", comm);
	*user = *named = *in_main = *hot = 0;
	for (uint32_t r = 0; r < p->nrows; r++) {
		const uint32_t *st = p->stacks[p->rows[r].stack];
		int has_user = 0, unnamed = 0, has_main = 0, has_hot = 0;

		if (strcmp(p->strings[p->rows[r].comm], comm))
			continue;
		for (uint32_t i = 0; i < st[0]; i++) {
			const char *name = p->strings[st[1 + i]];

			if (strstr(name, "_[k]"))
				continue;
			has_user = 1;
			if (!strncmp(name, "[unknown]", 9) || !strncmp(name, prog, strlen(prog)))
				unnamed = 1;
			has_main |= !strcmp(name, "main");
			has_hot |= !strcmp(name, "hot_function");
		}
		if (!has_user)
			continue;
		*user += p->rows[r].count;
		*named += unnamed ? 0 : p->rows[r].count;
		*in_main += has_main ? p->rows[r].count : 0;
		*hot += has_main && has_hot ? p->rows[r].count : 0;
	}
}

Test(profile, short_lived_process_is_named, .init = setup, .fini = teardown, .timeout = 120)
{
	uint64_t user = 0, named = 0, in_main = 0, hot = 0;
	pid_t kids[16];
	int round;

	/*
	 * a stream of 40 ms processes across the whole profile, however long
	 * the profiler takes to load (longer under sanitizers, or on a busy
	 * machine): it runs until the profile is done
	 */
	pid_t prof = fork();

	if (prof == 0) {
		for (int i = 0;; i = (i + 1) % 16) {
			kids[i] = run("flhotfp", "0.04", 0);
			waitpid(kids[i], NULL, 0);
			usleep(110000);
		}
	}
	/* 3 s profiles until 40 samples: a busy machine gives a 40 ms process few */
	for (round = 0; round < 6 && user < 40; round++) {
		struct profile p;
		uint64_t u, n, m, h;

		profile_now(&p, 3 * NSEC_PER_SEC, 999);
		named_in_user(&p, "flhotfp", &u, &n, &m, &h);
		user += u, named += n, in_main += m, hot += h;
		profile_free(&p);
	}
	kill(prof, SIGKILL);
	waitpid(prof, NULL, 0);
	cr_log_info("40 ms processes, %d profile(s): %llu/%llu samples in user space named, "
		    "%llu/%llu in main name hot_function", round, (unsigned long long)named,
		    (unsigned long long)user, (unsigned long long)hot, (unsigned long long)in_main);
	cr_assert_geq(user, 20, "too few samples of the short-lived processes: %llu",
		      (unsigned long long)user);
	cr_assert_geq(named * 100, user * 75, "short-lived processes' frames were not named");
	cr_assert_geq(hot * 100, in_main * 75, "their hot function was not named under main");
}

/*
 * --pid keeps one process, --cgroup the processes of a cgroup (a real v1
 * cpu cgroup this test makes): the other hot program, sampled as much,
 * is not in the profile.
 */
Test(profile, one_shot_keeps_one_process_or_one_cgroup, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct profile_one_filter only = { 0 };
	struct profile p;
	uint64_t all, hit, other, dummy;
	char cg[128];
	pid_t a = run("flhotfp", "6", 0), b = run("flhotnofp", "6", 0);

	usleep(200000);
	only.pid = (uint32_t)b;
	profile_only(&p, NSEC_PER_SEC, 199, &only);
	share_of(&p, "flhotnofp", "hot_function", &all, &hit);
	share_of(&p, "flhotfp", NULL, &other, &dummy);
	cr_expect_gt(all, 20, "the chosen process was sampled (%llu)", (unsigned long long)all);
	cr_expect_eq(other, 0, "--pid let %llu samples of another process in",
		     (unsigned long long)other);
	cr_expect_eq(p.total, all, "only the chosen process's samples");
	profile_free(&p);

	/* a cgroup of the cpu controller holding only flhotfp */
	snprintf(cg, sizeof(cg), "/fl-prof-test-%d", (int)getpid());
	if (test_sh("mkdir -p /sys/fs/cgroup/cpu%s && echo %d > /sys/fs/cgroup/cpu%s/cgroup.procs",
		    cg, (int)a, cg) == 0) {
		memset(&only, 0, sizeof(only));
		snprintf(only.cgroup, sizeof(only.cgroup), "%s", cg);
		profile_only(&p, NSEC_PER_SEC, 199, &only);
		share_of(&p, "flhotfp", NULL, &all, &dummy);
		share_of(&p, "flhotnofp", NULL, &other, &dummy);
		cr_expect_gt(all, 20, "the cgroup's process was sampled (%llu)",
			     (unsigned long long)all);
		cr_expect_eq(other, 0, "--cgroup let %llu samples of another process in",
			     (unsigned long long)other);
		profile_free(&p);
	} else {
		cr_log_warn("no v1 cpu controller at /sys/fs/cgroup/cpu: --cgroup not checked");
	}
	stop_spawned(a, b);
	test_sh("rmdir /sys/fs/cgroup/cpu%s 2>/dev/null", cg);	/* empty once both are gone */
}

/*
 * A real JIT: Node with --perf-basic-prof, spinning in a JS function.  Its
 * samples are in code V8 compiled into anonymous memory, named only by the
 * perf map Node writes (/tmp/perf-PID.map): >= 80 % of them name fib.
 */
Test(profile, node_js_functions_are_named_from_its_perf_map, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct profile p;
	uint64_t all = 0, hit = 0;
	char js[128];
	FILE *f;
	pid_t node;

	if (test_sh("command -v node >/dev/null") != 0)
		cr_skip_test("needs node (Debian's nodejs)");
	snprintf(js, sizeof(js), "%s/fib.js", dir);
	f = fopen(js, "w");
	cr_assert(f);
	fputs("function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n"
	      "const end = Date.now() + 4000; let x = 0;\n"
	      "while (Date.now() < end) x += fib(24);\n", f);
	fclose(f);
	node = fork();
	if (node == 0) {
		/* V8 writes an isolate log where it runs: the test's directory, not the tree */
		if (chdir(dir))
			_exit(127);
		execlp("node", "node", "--perf-basic-prof", js, (char *)NULL);
		_exit(127);
	}
	usleep(800000);		/* past start-up: V8 has compiled fib */
	profile_now(&p, 2 * NSEC_PER_SEC, 199);
	waitpid(node, NULL, 0);
	{
		char map[64];

		snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)node);
		unlink(map);
	}
	for (uint32_t r = 0; r < p.nrows; r++) {
		const uint32_t *st = p.stacks[p.rows[r].stack];
		int found = 0;

		if (strcmp(p.strings[p.rows[r].comm], "node"))
			continue;
		all += p.rows[r].count;
		for (uint32_t i = 0; i < st[0]; i++)
			found |= strstr(p.strings[st[1 + i]], "fib ") &&
				 strstr(p.strings[st[1 + i]], "fib.js");
		hit += found ? p.rows[r].count : 0;
	}
	cr_log_info("node --perf-basic-prof: %llu/%llu samples name the JS function fib",
		    (unsigned long long)hit, (unsigned long long)all);
	cr_assert_gt(all, 50, "too few samples of node (%llu)", (unsigned long long)all);
	cr_assert_geq(hit * 100, all * 80, "only %llu of %llu samples name fib",
		      (unsigned long long)hit, (unsigned long long)all);
	profile_free(&p);
}

static struct profile synthetic(double f_share)
{
	struct profile p;
	const char *a[] = { "main", "work", "f" };
	const char *b[] = { "main", "work", "g" };
	const char *c[] = { "main", "idle_loop" };

	profile_init(&p, "h");
	p.rate_hz = 99;
	p.duration_ms = 10000;
	p.ts_ms = 1764500000000ULL;
	profile_add(&p, "api.service", "api", 42, a, 3, (uint64_t)(1000 * f_share));
	profile_add(&p, "api.service", "api", 42, b, 3, (uint64_t)(1000 * (0.5 - f_share / 2)));
	profile_add(&p, "db.service", "db", 43, c, 2, (uint64_t)(1000 * (0.5 - f_share / 2)));
	return p;
}

Test(profile, diff_puts_the_grown_function_first)
{
	struct profile base = synthetic(0.10), target = synthetic(0.30);
	struct profile_delta *d;
	size_t n = profile_diff(&base, &target, &d);

	cr_assert_gt(n, 3);
	cr_assert_str_eq(d[0].name, "f");
	cr_assert(d[0].target - d[0].base > 0.15 && d[0].target - d[0].base < 0.25,
		  "f grew by %.3f", d[0].target - d[0].base);
	free(d);
	profile_free(&base);
	profile_free(&target);
}

/*
 * back (p through the codec) has every location p has: the same mapping and
 * kind for every frame, a "module+0xoffset" frame's own address, and a
 * symbol's frame an address p sampled for that name in that mapping (the
 * same function: the codec keeps one per name).  Returns how many symbol
 * frames moved to their name's address.
 */
static uint32_t locations_read_back(const struct profile *p, const struct profile *back)
{
	uint32_t moved = 0;

	cr_assert_eq(back->nstacks, p->nstacks);
	for (uint32_t st = 0; st < p->nstacks; st++) {
		for (uint32_t i = 0; i < p->stacks[st][0]; i++) {
			const struct profile_loc *a = profile_frame_loc(p, st, i);
			const struct profile_loc *b = profile_frame_loc(back, st, i);
			int found = 0;

			if (!a) {
				cr_assert_null(b, "stack %u frame %u: a location from nowhere", st, i);
				continue;
			}
			cr_assert(b && b->map == a->map && b->named == a->named,
				  "stack %u frame %u's location lost in the codec", st, i);
			if (b->addr == a->addr)
				continue;
			cr_assert(a->named, "stack %u frame %u (%s): address 0x%lx, not 0x%lx", st, i,
				  p->strings[p->stacks[st][1 + i]], (unsigned long)b->addr,
				  (unsigned long)a->addr);
			for (uint32_t s2 = 0; s2 < p->nstacks && !found; s2++)
				for (uint32_t k = 0; k < p->stacks[s2][0] && !found; k++) {
					const struct profile_loc *o = profile_frame_loc(p, s2, k);

					found = o && p->stacks[s2][1 + k] == p->stacks[st][1 + i] &&
						o->map == a->map && o->addr == b->addr;
				}
			cr_assert(found, "stack %u frame %u: 0x%lx is no address of %s", st, i,
				  (unsigned long)b->addr, p->strings[p->stacks[st][1 + i]]);
			moved++;
		}
	}
	return moved;
}

/*
 * pprof that tools can symbolize again: a stock xz profiled for real has a
 * mapping per file with its build id, every located frame's address
 * inside its mapping, a symbol-named frame's address naming the same
 * function when addr2line reads the file at that offset, xz's own frames
 * (stripped: no symbol) as addresses without a line, not as names, and
 * kernel frames in a "[kernel.kallsyms]" mapping.  The window codec keeps
 * the locations.
 */
Test(profile, pprof_mappings_and_addresses_symbolize_again, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct profile p, back;
	uint8_t *gz, *raw;
	size_t gzlen, rawlen, lzma_checked = 0, unnamed_xz = 0, kernel = 0;
	Perftools__Profiles__Profile *pb;
	char err[256], *enc;
	size_t enclen;

	profile_command("exec xz -9 -T1 -c < /dev/urandom > /dev/null", 300000, 2 * NSEC_PER_SEC,
			-1, &p);
	cr_assert_gt(p.total, 40);
	cr_assert_gt(p.nmaps, 1, "no mappings recorded");
	cr_assert_eq(profile_encode(&p, &enc, &enclen), 0);
	cr_assert_eq(profile_decode(enc, enclen, &back, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(back.nmaps, p.nmaps, "the window codec lost mappings");
	locations_read_back(&p, &back);
	free(enc);
	profile_free(&back);

	cr_assert_eq(pprof_encode(&p, &gz, &gzlen), 0);
	cr_assert_eq(pprof_gunzip(gz, gzlen, &raw, &rawlen), 0);
	pb = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	cr_assert_not_null(pb);
	cr_assert_eq(pb->n_mapping, p.nmaps);
	for (size_t m = 0; m < pb->n_mapping; m++) {
		const char *file = pb->string_table[pb->mapping[m]->filename];
		char want[160];

		cr_assert_eq(pb->mapping[m]->id, m + 1);
		if (file[0] != '/')
			continue;
		cr_assert_eq(sym_file_build_id(file, want, sizeof(want)), 0, "%s", file);
		cr_expect_str_eq(pb->string_table[pb->mapping[m]->build_id], want,
				 "%s: build id differs from the file's", file);
	}
	for (size_t i = 0; i < pb->n_location; i++) {
		const Perftools__Profiles__Location *l = pb->location[i];
		const Perftools__Profiles__Mapping *m;
		const char *file, *fn;
		uint64_t off;

		if (!l->mapping_id)
			continue;
		cr_assert_leq(l->mapping_id, pb->n_mapping);
		m = pb->mapping[l->mapping_id - 1];
		cr_assert(l->address >= m->memory_start && l->address <= m->memory_limit,
			  "location %llu outside its mapping", (unsigned long long)l->id);
		file = pb->string_table[m->filename];
		off = l->address - m->memory_start + m->file_offset;
		if (!strcmp(file, "[kernel.kallsyms]")) {
			kernel++;
			continue;
		}
		if (strstr(file, "/xz") && !l->n_line)
			unnamed_xz++;
		if (!strstr(file, "liblzma") || l->n_line != 1)
			continue;
		fn = pb->string_table[pb->function[l->line[0]->function_id - 1]->name];
		if (strchr(fn, '+') || lzma_checked >= 5)
			continue;
		/* the file's own symbols at that offset (liblzma's text: offset == address) */
		cr_expect_eq(test_sh("test \"$(addr2line -f -e %s 0x%llx | head -1)\" = '%s'", file,
				     (unsigned long long)off, fn), 0,
			     "%s+0x%llx is not %s by addr2line", file, (unsigned long long)off, fn);
		lzma_checked++;
	}
	cr_log_info("%zu mappings, %zu locations; %zu liblzma addresses re-symbolized, %zu xz "
		    "frames as bare addresses, %zu kernel locations", pb->n_mapping, pb->n_location,
		    lzma_checked, unnamed_xz, kernel);
	cr_expect_gt(lzma_checked, 0, "no named liblzma frame to check");
	cr_expect_gt(unnamed_xz, 0, "xz's stripped frames are not bare addresses");
	perftools__profiles__profile__free_unpacked(pb, NULL);
	/* and pprof itself reads the mappings with their build ids */
	{
		char path[64], want[160];

		snprintf(path, sizeof(path), "/tmp/fl-pprof-map-%d.pb.gz", getpid());
		cr_assert_eq(profile_export(&p, NULL, path, "t"), 0);
		cr_assert_eq(sym_file_build_id("/usr/bin/xz", want, sizeof(want)), 0);
		if (test_sh("command -v go >/dev/null") == 0)
			cr_expect_eq(test_sh("go tool pprof -raw %s 2>&1 | sed -n '/^Mappings/,$p' | "
					     "grep -q '/0x0 /usr/bin/xz %s'", path, want), 0,
				     "go tool pprof does not list xz's mapping with its build id");
		else
			cr_log_warn("go is not installed: go tool pprof not run (make deps installs it)");
		test_sh("rm -f %s", path);
	}
	free(gz);
	free(raw);
	profile_free(&p);
}

Test(profile, pprof_is_strictly_valid_and_totals_match)
{
	struct profile p = synthetic(0.2);
	uint8_t *gz, *raw;
	size_t gzlen, rawlen;
	Perftools__Profiles__Profile *pb;
	uint64_t total = 0;

	cr_assert_eq(pprof_encode(&p, &gz, &gzlen), 0);
	cr_assert_eq(pprof_gunzip(gz, gzlen, &raw, &rawlen), 0);
	pb = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	cr_assert_not_null(pb, "pprof does not decode");
	cr_assert_str_eq(pb->string_table[0], "", "string table must start with \"\"");
	cr_assert_eq(pb->n_sample_type, 2);
	cr_assert_str_eq(pb->string_table[pb->sample_type[1]->type], "cpu");
	cr_assert_str_eq(pb->string_table[pb->sample_type[1]->unit], "nanoseconds");
	cr_assert_eq(pb->period, 1000000000 / 99);
	for (size_t i = 0; i < pb->n_sample; i++) {
		total += (uint64_t)pb->sample[i]->value[0];
		cr_assert_eq(pb->sample[i]->value[1], pb->sample[i]->value[0] * pb->period);
		for (size_t k = 0; k < pb->sample[i]->n_location_id; k++)
			cr_assert(pb->sample[i]->location_id[k] >= 1 &&
				  pb->sample[i]->location_id[k] <= pb->n_location);
	}
	cr_assert_eq(total, p.total, "pprof total %llu != profile total %llu",
		     (unsigned long long)total, (unsigned long long)p.total);
	for (size_t i = 0; i < pb->n_location; i++)
		cr_assert_eq(pb->location[i]->id, i + 1, "location ids must be unique, non-zero");
	for (size_t i = 0; i < pb->n_function; i++) {
		cr_assert_eq(pb->function[i]->id, i + 1);
		cr_assert_lt((size_t)pb->function[i]->name, pb->n_string_table);
	}
	perftools__profiles__profile__free_unpacked(pb, NULL);

	/* and protoc agrees (it knows nothing of faultline) */
	char path[64] = "/tmp/fl-pprof.XXXXXX";
	int fd = mkstemp(path);

	cr_assert_eq(write(fd, raw, rawlen), (ssize_t)rawlen);
	close(fd);
	if (test_sh("command -v protoc >/dev/null") == 0)
		cr_assert_eq(test_sh("protoc --proto_path=proto --decode=perftools.profiles.Profile "
				     "proto/profile.proto < %s > %s.txt", path, path), 0,
			     "protoc cannot decode the profile");
	/* folded totals match */
	char folded[80];

	snprintf(folded, sizeof(folded), "%s.folded", path);
	cr_assert_eq(profile_export(&p, NULL, folded, "t"), 0);
	cr_assert_eq(test_sh("test \"$(awk '{s+=$NF} END {print s}' %s)\" = %llu", folded,
			     (unsigned long long)p.total), 0, "folded total differs");
	test_sh("rm -f %s %s.txt %s", path, path, folded);
	free(gz);
	free(raw);
	profile_free(&p);
}

/* The id ("fN") of the first frame named name in svg, from its data-n attribute. */
static int frame_id(const char *svg, const char *name, char *id, size_t len)
{
	char want[128], buf[1 << 16];
	const char *at;
	size_t n;
	FILE *f = fopen(svg, "r");

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	snprintf(want, sizeof(want), "data-n=\"%s\"", name);
	at = strstr(buf, want);
	while (at && at > buf && strncmp(at, "id=\"f", 5))
		at--;
	if (!at || at == buf || sscanf(at, "id=\"%31[^\"]\"", id) != 1 || strlen(id) >= len)
		return -1;
	return 0;
}

Test(profile, svg_is_well_formed_and_renders, .timeout = 90)
{
	struct profile base = synthetic(0.1), p = synthetic(0.3), many;
	const char *svg = "/tmp/fl-flame.svg", *png = "/tmp/fl-flame.png";
	char id[32], dom[64];
	int nframes;

	cr_assert_eq(profile_export(&p, NULL, svg, "test <flame> & graph"), 0);
	cr_assert_eq(test_sh("xmllint --noout %s", svg), 0, "flame graph SVG is not well-formed");
	cr_assert_eq(test_sh("grep -q '<title>f (300 samples' %s", svg), 0, "no hover title");
	cr_assert_eq(test_sh("grep -q 'function search' %s", svg), 0, "no search");
	/* the root at the top: "all" above the processes, the processes above main */
	cr_assert_eq(test_sh("grep -q 'data-n=\"all\"><title>all[^<]*</title><rect x=\"0.0\" "
			     "y=\"60\"' %s", svg), 0, "\"all\" is not the top row");
	cr_assert_eq(test_sh("grep -q 'data-d=\"3\"[^>]*data-n=\"work\"><title>[^<]*</title>"
			     "<rect x=\"[0-9.]*\" y=\"108\"' %s", svg), 0,
		     "work (all > api > main > work) is not on the fourth row");
	cr_assert_eq(profile_export(&p, &base, "/tmp/fl-flame-diff.svg", "diff"), 0);
	cr_assert_eq(test_sh("xmllint --noout /tmp/fl-flame-diff.svg"), 0);
	cr_assert_eq(test_sh("grep -q 'was 10.00%%' /tmp/fl-flame-diff.svg"), 0,
		     "the differential graph does not carry the base share");
	/* 3,000 one-sample stacks beside one of 100,000: merged, and their samples kept */
	profile_init(&many, "h");
	many.rate_hz = 99;
	for (int i = 0; i < 3000; i++) {
		char name[32];
		const char *st[2] = { "main", name };

		snprintf(name, sizeof(name), "sliver_%d", i);
		profile_add(&many, "s", "many", 7, st, 2, 1);
	}
	{
		const char *st[2] = { "main", "big" };

		profile_add(&many, "s", "many", 7, st, 2, 100000);
	}
	cr_assert_eq(profile_export(&many, NULL, "/tmp/fl-flame-many.svg", "many"), 0);
	cr_assert_eq(test_sh("xmllint --noout /tmp/fl-flame-many.svg"), 0);
	cr_assert_eq(test_sh("grep -q 'data-s=\"3000\" data-n=\"\\[3000 small frames\\]\"' "
			     "/tmp/fl-flame-many.svg"), 0, "the slivers are not merged into one frame");
	nframes = test_sh("test $(grep -c 'class=\"f\"' /tmp/fl-flame-many.svg) -lt 10");
	cr_assert_eq(nframes, 0, "slivers drawn one by one");
	profile_free(&many);
	if (test_sh("command -v chromium >/dev/null") != 0)
		cr_skip_test("chromium is not installed: rendering, zoom and search not checked");
	test_sh("rm -f %s", png);
	cr_assert_eq(test_sh("timeout 60 chromium --headless --no-sandbox --disable-gpu "
			     "--disable-quic --no-first-run --disable-background-networking "
			     "--disable-component-update --disable-sync --user-data-dir=/tmp/fl-chr-%d "
			     "--window-size=1200,300 --screenshot=%s file://%s >/dev/null 2>&1",
			     getpid(), png, svg), 0, "chromium failed");
	/* a blank 1200x300 PNG is ~2 KB; frames and text make it much larger */
	cr_assert_eq(test_sh("test $(stat -c %%s %s) -gt 8000", png), 0,
		     "the rendered flame graph looks blank");
	/*
	 * The script, run by a browser: a link zoomed into api's "work" (650 of
	 * 1,000 samples) and searching "^(f|g)$" (300 + 350) shows work at full
	 * width, f at 300/650 of it, db's idle_loop hidden, and 65 % matched.
	 */
	cr_assert_eq(frame_id(svg, "work", id, sizeof(id)), 0);
	snprintf(dom, sizeof(dom), "/tmp/fl-flame-dom-%d.txt", getpid());
	cr_assert_eq(test_sh("timeout 60 chromium --headless --no-sandbox --disable-gpu "
			     "--disable-quic --no-first-run --disable-background-networking "
			     "--disable-component-update --disable-sync --user-data-dir=/tmp/fl-chr-%d "
			     "--dump-dom 'file://%s#z=%s&q=%%5E(f%%7Cg)%%24' > %s 2>/dev/null",
			     getpid(), svg, id, dom), 0, "chromium failed");
	cr_assert_eq(test_sh("grep -q 'Matched: 65.0%% of samples (2 frames)' %s", dom), 0,
		     "search did not report 65.0%% matched");
	cr_assert_eq(test_sh("grep -q 'data-n=\"work\"><title>[^<]*</title><rect x=\"0.0\" "
			     "y=\"108\" width=\"1200.0\"' %s", dom), 0, "work not zoomed to the width");
	cr_assert_eq(test_sh("grep -q 'data-n=\"f\"><title>[^<]*</title><rect x=\"0.0\" "
			     "y=\"124\" width=\"553.8\"' %s", dom), 0, "f not scaled with work");
	cr_assert_eq(test_sh("grep -q 'data-n=\"idle_loop\" style=\"display: none;\"' %s", dom),
		     0, "db's idle_loop still shown while zoomed into api's work");
	test_sh("rm -rf %s %s %s /tmp/fl-flame-diff.svg /tmp/fl-flame-many.svg /tmp/fl-chr-%d", svg,
		png, dom, getpid());
	profile_free(&base);
	profile_free(&p);
}

/*
 * A window whose first stack has locations and whose next 400 have none
 * (a process that was gone, "[no stack]"): its locations array covers
 * only the first stacks, and freeing it must not read past it (it read
 * the next heap chunk's header and freed that: the probe's segfault in
 * free(), found by ASan under a busy host's load), nor a copy of it.
 */
Test(profile, stacks_without_locations_after_ones_with_free_cleanly)
{
	static const char *const leaf[] = { "main", "work" };
	struct profile p, d;
	struct profile_where w[2] = { { "/usr/bin/app", "abcd", 0x1000, 1 },
				      { "/usr/bin/app", "abcd", 0x1100, 1 } };
	char name[32], *buf, err[256];
	const char *frames[2];
	size_t len;

	cr_assert_eq(profile_init(&p, "h"), 0);
	cr_assert_eq(profile_add_at(&p, "svc", "app", 1, leaf, w, 2, 1), 0);
	for (int i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "fn%d", i);
		frames[0] = "[unknown]";
		frames[1] = name;
		cr_assert_eq(profile_add_at(&p, "svc", "app", 2, frames, NULL, 2, 1), 0);
	}
	cr_assert_eq(p.nstacks, 401);
	cr_assert_lt(p.cap_locs, p.nstacks, "the case under test: locations for fewer stacks");
	cr_assert_eq(profile_encode(&p, &buf, &len), 0);
	cr_assert_eq(profile_decode(buf, len, &d, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(d.nstacks, 401);
	free(buf);
	profile_free(&d);
	profile_free(&p);
}

/*
 * Every prefix of the encoded window buf[0..len) is refused, and `flips`
 * copies with one byte flipped each decode or fail without a crash.
 */
static void decode_refuses_cuts_survives_flips(const char *buf, size_t len, int flips)
{
	struct profile d;
	char err[256];

	for (size_t cut = 0; cut < len; cut++)
		cr_assert_neq(profile_decode(buf, cut, &d, err, sizeof(err)), 0, "cut %zu", cut);
	for (int i = 0; i < flips; i++) {
		char *m = malloc(len);

		memcpy(m, buf, len);
		m[(size_t)(i * 7919) % len] ^= (char)(i | 1);
		if (profile_decode(m, len, &d, err, sizeof(err)) == 0)
			profile_free(&d);
		free(m);
	}
}

Test(profile, window_codec_round_trip_and_bad_input)
{
	struct profile p = synthetic(0.2), d;
	char *buf, err[256];
	size_t len;

	cr_assert_eq(profile_encode(&p, &buf, &len), 0);
	cr_assert_eq(profile_decode(buf, len, &d, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(d.total, p.total);
	cr_assert_eq(d.nstacks, p.nstacks);
	cr_assert_eq(d.rate_hz, 99);
	profile_free(&d);
	decode_refuses_cuts_survives_flips(buf, len, 5000);
	free(buf);
	profile_free(&p);
}

/*
 * Rows know their process's cgroup: it survives the wire and a merge, a
 * scope picks one service (its unit too) or one cgroup subtree, and a
 * window written before cgroups ("cg" absent) still decodes.
 */
/* The folded lines of p, for comparing two profiles whole. */
static char *folded(const struct profile *p)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	profile_write_folded(p, f);
	fclose(f);
	return text;
}

/*
 * A window is stored as a zstd frame of its msgpack, smaller than the
 * msgpack and decoding to the same rows; a window written before that
 * (plain msgpack) still decodes; a frame that would decompress past the
 * limit, a frame of a frame and any cut or flipped byte of one are errors,
 * never a crash.
 */
Test(profile, window_is_a_zstd_frame_and_old_windows_still_decode)
{
	static const unsigned char magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	struct profile p, d;
	char *plain, *packed, *text, *back, err[256], fn[64];
	size_t plen, zlen;

	cr_assert_eq(profile_init(&p, "db-7"), 0);
	p.rate_hz = 99;
	p.duration_ms = 10000;
	p.ts_ms = 1764500000000ULL;
	for (int i = 0; i < 300; i++) {
		const char *frames[] = { "__libc_start_main", "main", "event_loop", fn,
					 "entry_SYSCALL_64_after_hwframe", "do_syscall_64" };

		snprintf(fn, sizeof(fn), "handle_request_kind_%d", i % 37);
		frames[5] = i % 2 ? "do_syscall_64" : "__x64_sys_pwrite64";
		cr_assert_eq(profile_add(&p, "db.service", "db", 4000 + i % 5, frames, 6,
					 1 + i % 13), 0);
	}
	cr_assert_eq(profile_encode_level(&p, 0, &plain, &plen), 0);
	cr_assert_eq(profile_encode(&p, &packed, &zlen), 0);
	cr_assert_eq(memcmp(packed, magic, 4), 0, "a window is not stored as a zstd frame");
	cr_assert_lt(zlen * 2, plen, "zstd made %zu bytes of msgpack only %zu", plen, zlen);
	text = folded(&p);
	cr_assert_eq(profile_decode(packed, zlen, &d, err, sizeof(err)), 0, "%s", err);
	back = folded(&d);
	cr_expect_str_eq(back, text);
	cr_expect_eq(d.total, p.total);
	cr_expect_str_eq(d.host, "db-7");
	free(back);
	profile_free(&d);
	cr_assert_eq(profile_decode(plain, plen, &d, err, sizeof(err)), 0, "%s", err);
	back = folded(&d);
	cr_expect_str_eq(back, text, "a plain msgpack window (before compression) changed");
	free(back);
	profile_free(&d);

	decode_refuses_cuts_survives_flips(packed, zlen, 3000);

	{
		/* a frame of a frame, made without the "only if smaller" rule */
		size_t cap = ZSTD_compressBound(zlen), n;
		char *twice = malloc(cap);

		n = ZSTD_compress(twice, cap, packed, zlen, 1);
		cr_assert(!ZSTD_isError(n));
		cr_assert_neq(profile_decode(twice, n, &d, err, sizeof(err)), 0);
		cr_expect(strstr(err, "inside a zstd frame"), "%s", err);
		free(twice);
	}
	{
		/* 65 MiB of zeros packs into a few KB; the reader refuses it */
		size_t big = (65u << 20), cap = ZSTD_compressBound(big), n;
		char *zeros = calloc(1, big), *bomb = malloc(cap);

		cr_assert(zeros && bomb);
		n = ZSTD_compress(bomb, cap, zeros, big, 1);
		cr_assert(!ZSTD_isError(n));
		cr_assert_lt(n, 1 << 20);
		cr_assert_neq(profile_decode(bomb, n, &d, err, sizeof(err)), 0);
		cr_expect(strstr(err, "at most"), "%s", err);
		cr_expect(!strncmp(err, "profile: zstd frame of", 22), "%s", err);
		free(zeros);
		free(bomb);
	}
	free(text);
	free(plain);
	free(packed);
	profile_free(&p);
}

/* p as a probe before "floc" wrote it: every stack's locations in full. */
static void pack_before_floc(const struct profile *p, msgpack_sbuffer *sb)
{
	msgpack_packer pk;

	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 10);
	wire_pack_str(&pk, "v");
	msgpack_pack_uint32(&pk, 1);
	wire_pack_str(&pk, "host");
	wire_pack_str(&pk, p->host);
	wire_pack_str(&pk, "ts");
	msgpack_pack_uint64(&pk, p->ts_ms);
	wire_pack_str(&pk, "dur");
	msgpack_pack_uint64(&pk, p->duration_ms);
	wire_pack_str(&pk, "hz");
	msgpack_pack_uint32(&pk, p->rate_hz);
	wire_pack_str(&pk, "str");
	msgpack_pack_array(&pk, p->nstrings);
	for (uint32_t i = 0; i < p->nstrings; i++)
		wire_pack_str(&pk, p->strings[i]);
	wire_pack_str(&pk, "stk");
	msgpack_pack_array(&pk, p->nstacks);
	for (uint32_t i = 0; i < p->nstacks; i++) {
		msgpack_pack_array(&pk, p->stacks[i][0]);
		for (uint32_t k = 0; k < p->stacks[i][0]; k++)
			msgpack_pack_uint32(&pk, p->stacks[i][1 + k]);
	}
	wire_pack_str(&pk, "rows");
	msgpack_pack_array(&pk, p->nrows);
	for (uint32_t i = 0; i < p->nrows; i++) {
		msgpack_pack_array(&pk, 5);
		msgpack_pack_uint32(&pk, p->rows[i].service);
		msgpack_pack_uint32(&pk, p->rows[i].comm);
		msgpack_pack_uint32(&pk, p->rows[i].pid);
		msgpack_pack_uint32(&pk, p->rows[i].stack);
		msgpack_pack_uint64(&pk, p->rows[i].count);
	}
	wire_pack_str(&pk, "map");
	msgpack_pack_array(&pk, p->nmaps);
	for (uint32_t i = 0; i < p->nmaps; i++) {
		msgpack_pack_array(&pk, 2);
		msgpack_pack_uint32(&pk, p->maps[i].file);
		msgpack_pack_uint32(&pk, p->maps[i].build_id);
	}
	wire_pack_str(&pk, "loc");
	msgpack_pack_array(&pk, p->nstacks);
	for (uint32_t i = 0; i < p->nstacks; i++) {
		uint32_t n = p->locs && i < p->cap_locs && p->locs[i] ? p->stacks[i][0] : 0;

		msgpack_pack_array(&pk, 3 * n);
		for (uint32_t k = 0; k < n; k++) {
			msgpack_pack_uint32(&pk, p->locs[i][k].map);
			msgpack_pack_uint64(&pk, p->locs[i][k].addr);
			msgpack_pack_uint32(&pk, p->locs[i][k].named);
		}
	}
}

/*
 * A frame's location is written once per name: a symbol's frame is at
 * another return address in every stack it is in, and any of them names
 * the function.  What must not blur does not: the same name in two
 * binaries keeps each binary, a "module+0xoffset" frame its own address,
 * a frame in no mapping none, a stack added without locations none.  The
 * window is smaller for it; one written before (every stack in full)
 * still reads back exactly; a hostile "floc" or "xloc" is refused by name.
 */
Test(profile, locations_are_written_once_per_name)
{
	struct profile p, bare, d;
	msgpack_sbuffer old;
	char *buf, *oldz, *barez, err[256], fn[64], raw[64];
	size_t len, oldzlen, barelen;
	uint32_t moved;

	cr_assert_eq(profile_init(&p, "api-3"), 0);
	cr_assert_eq(profile_init(&bare, "api-3"), 0);
	p.rate_hz = bare.rate_hz = 19;
	p.duration_ms = bare.duration_ms = 10000;
	p.ts_ms = bare.ts_ms = 1764500000000ULL;
	for (int i = 0; i < 400; i++) {
		int other = i % 10 == 0;	/* "main" of another binary */
		const char *frames[] = { "__libc_start_main", "main", fn, raw, "[unknown]" };
		struct profile_where w[5] = {
			{ "/usr/lib/x86_64-linux-gnu/libc.so.6", "aa11", 0x27000 + i % 7, 1 },
			{ other ? "/usr/bin/worker" : "/usr/bin/api", other ? "cc33" : "bb22",
			  0x1100 + (uint64_t)(i % 50) * 4, 1 },
			{ "/usr/bin/api", "bb22", 0x2000 + (uint64_t)i * 16, 1 },
			{ "/usr/lib/x86_64-linux-gnu/libz.so.1", "dd44", 0x3000 + (uint64_t)i * 8,
			  0 },
			{ NULL, NULL, 0, 0 },
		};

		snprintf(fn, sizeof(fn), "handler_%d", i % 60);
		snprintf(raw, sizeof(raw), "libz.so.1+0x%x", 0x3000 + i * 8);
		cr_assert_eq(profile_add_at(&p, "api.service", "api", 100, frames, w, 5, 1), 0);
		cr_assert_eq(profile_add(&bare, "api.service", "api", 100, frames, 5, 1), 0);
	}
	{
		const char *frames[] = { "main", "handler_1", "never_located" };

		cr_assert_eq(profile_add(&p, "api.service", "api", 101, frames, 3, 2), 0);
	}
	cr_assert_eq(p.nstacks, 401);

	cr_assert_eq(profile_encode(&p, &buf, &len), 0);
	cr_assert_eq(profile_decode(buf, len, &d, err, sizeof(err)), 0, "%s", err);
	moved = locations_read_back(&p, &d);
	cr_expect_gt(moved, 400, "the case under test: symbols at many addresses");
	cr_expect_null(profile_frame_loc(&d, 400, 0), "a stack added without locations got one");
	profile_free(&d);
	decode_refuses_cuts_survives_flips(buf, len, 2000);

	pack_before_floc(&p, &old);
	oldzlen = ZSTD_compressBound(old.size);
	oldz = malloc(oldzlen);
	oldzlen = ZSTD_compress(oldz, oldzlen, old.data, old.size, PROFILE_LEVEL_WINDOW);
	cr_assert(!ZSTD_isError(oldzlen));
	cr_assert_eq(profile_encode(&bare, &barez, &barelen), 0);
	cr_log_info("400 stacks: %zu bytes without locations, %zu with one per name, %zu with "
		    "one per frame", barelen, len, oldzlen);
	cr_expect_lt((len - barelen) * 2, oldzlen - barelen,
		     "locations cost %zu bytes, before %zu", len - barelen, oldzlen - barelen);
	free(barez);
	profile_free(&bare);
	cr_assert_eq(profile_decode(old.data, old.size, &d, err, sizeof(err)), 0, "%s", err);
	for (uint32_t st = 0; st < p.nstacks; st++)
		for (uint32_t i = 0; i < p.stacks[st][0]; i++) {
			const struct profile_loc *a = profile_frame_loc(&p, st, i);
			const struct profile_loc *b = profile_frame_loc(&d, st, i);

			cr_assert(a ? b && b->addr == a->addr && b->map == a->map : !b,
				  "a window written before 'floc': stack %u frame %u moved", st, i);
		}
	profile_free(&d);
	free(oldz);
	msgpack_sbuffer_destroy(&old);
	free(buf);

	{
		/*
		 * hostile "floc" and "xloc": a map past the table, a name twice,
		 * ragged columns, a nil address with no offset in the name, an
		 * exception past the stacks or past its stack's frames
		 */
#define BAD(key, bytes, why) { key, bytes, sizeof(bytes) - 1, why }
		static const struct {
			const char *key, *bytes;
			size_t len;
			const char *why;
		} bad[] = {
			BAD("floc", "\x94\x91\x01\x91\x09\x91\x01\x91\x10", "is not [name, map, named"),
			BAD("floc", "\x94\x92\x01\x01\x92\x01\x01\x92\x01\x01\x92\x10\x20",
			    "names string 1 again"),
			BAD("floc", "\x94\x91\x01\x91\x01\x91\x01\x90", "4 columns of one length"),
			BAD("floc", "\x93\x91\x01\x91\x01\x91\x01", "must be 4 columns"),
			BAD("floc", "\x94\x91\x01\x91\x01\x91\x00\x91\xc0", "has no +0x offset"),
			BAD("xloc", "\x95\x91\x01\x91\x00\x91\x01\x91\x01\x91\x10",
			    "is not [stack, frame, map"),
			BAD("xloc", "\x95\x91\x00\x91\x01\x91\x01\x91\x01\x91\x10",
			    "is not [stack, frame, map"),
			BAD("xloc", "\x95\x91\x00\x91\x00\x91\x02\x91\x01\x91\x10",
			    "is not [stack, frame, map"),
			BAD("xloc", "\x95\x91\x00\x91\x00\x91\x01\x91\x00\x91\xc0", "has no +0x offset"),
			BAD("xloc", "\x95\x91\x00\x91\x00\x91\x01\x91\x01\x90", "5 columns of one length"),
			BAD("xloc", "\x95\x91\x00\x91\x00\x91\x01\x91\x01\x91\xa1x", "not a number"),
		};
#undef BAD

		for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
			int xloc = !strcmp(bad[b].key, "xloc");
			msgpack_sbuffer sb;
			msgpack_packer pk;

			msgpack_sbuffer_init(&sb);
			msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
			msgpack_pack_map(&pk, 9);
			wire_pack_str(&pk, "v");
			msgpack_pack_uint32(&pk, 1);
			wire_pack_str(&pk, "host");
			wire_pack_str(&pk, "h");
			wire_pack_str(&pk, "str");
			msgpack_pack_array(&pk, 3);
			wire_pack_str(&pk, "");
			wire_pack_str(&pk, "main");
			wire_pack_str(&pk, "/bin/x");
			wire_pack_str(&pk, "stk");
			msgpack_pack_array(&pk, 1);
			msgpack_pack_array(&pk, 1);
			msgpack_pack_uint32(&pk, 1);
			wire_pack_str(&pk, "rows");
			msgpack_pack_array(&pk, 0);
			wire_pack_str(&pk, "map");
			msgpack_pack_array(&pk, 1);
			msgpack_pack_array(&pk, 2);
			msgpack_pack_uint32(&pk, 2);
			msgpack_pack_uint32(&pk, 0);
			wire_pack_str(&pk, "floc");
			if (xloc)
				msgpack_sbuffer_write(&sb, "\x94\x90\x90\x90\x90", 5);
			else
				msgpack_sbuffer_write(&sb, bad[b].bytes, bad[b].len);
			wire_pack_str(&pk, "xloc");
			if (xloc)
				msgpack_sbuffer_write(&sb, bad[b].bytes, bad[b].len);
			else
				msgpack_sbuffer_write(&sb, "\x95\x90\x90\x90\x90\x90", 6);
			wire_pack_str(&pk, "loc");
			msgpack_pack_array(&pk, 1);
			msgpack_pack_array(&pk, 0);
			cr_assert_neq(profile_decode(sb.data, sb.size, &d, err, sizeof(err)), 0,
				      "case %zu", b);
			cr_expect(strstr(err, bad[b].why), "case %zu: %s", b, err);
			msgpack_sbuffer_destroy(&sb);
		}
	}
	profile_free(&p);
}

Test(profile, scope_picks_a_service_or_a_cgroup_subtree)
{
	static const struct {
		const char *service, *comm, *cgroup, *leaf;
		uint64_t n;
	} rows[] = {
		{ "api.service", "api", "/system.slice/api.service", "json_parse", 30 },
		{ "batch", "batch", "/batch", "crunch", 50 },
		{ "batch", "batch", "/batch/low", "crunch_low", 7 },
		{ "batchy", "batchy", "/batchy", "lookalike", 11 },
		{ "kworker", "kworker", NULL, "idle", 2 },
	};
	struct profile p, d, m;
	char *buf, err[256];
	size_t len;

	cr_assert_eq(profile_init(&p, "h"), 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		const char *frames[] = { "main", rows[i].leaf };
		struct profile_origin o = { rows[i].service, rows[i].comm, rows[i].cgroup, 100 + i };

		cr_assert_eq(profile_add_in(&p, &o, frames, NULL, 2, rows[i].n), 0);
	}
	cr_assert_eq(profile_encode(&p, &buf, &len), 0);
	cr_assert_eq(profile_decode(buf, len, &d, err, sizeof(err)), 0, "%s", err);
	free(buf);
	cr_assert_eq(d.nrows, 5);
	for (uint32_t r = 0; r < d.nrows; r++) {
		const char *leaf = d.strings[d.stacks[d.rows[r].stack][2]];

		for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++)
			if (!strcmp(leaf, rows[i].leaf))
				cr_expect_str_eq(d.strings[d.rows[r].cgroup],
						 rows[i].cgroup ? rows[i].cgroup : "",
						 "%s's cgroup after the wire", leaf);
	}

	/* a cgroup's subtree: /batch holds /batch/low, not /batchy */
	struct profile_scope batch = { NULL, "/batch" }, batch_slash = { NULL, "/batch/" },
			     root = { NULL, "/" }, api = { "api", NULL }, none = { NULL, "/nope" };
	const struct {
		const struct profile_scope *s;
		uint64_t want;
	} cases[] = { { &batch, 57 }, { &batch_slash, 57 }, { &root, 98 }, { &api, 30 },
		      { &none, 0 }, { NULL, 100 } };

	for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
		cr_assert_eq(profile_init(&m, ""), 0);
		cr_assert_eq(profile_merge(&m, &d, cases[c].s), 0);
		cr_expect_eq(m.total, cases[c].want, "scope %zu (%s %s): %llu samples, want %llu",
			     c, cases[c].s && cases[c].s->service ? cases[c].s->service : "-",
			     cases[c].s && cases[c].s->cgroup ? cases[c].s->cgroup : "-",
			     (unsigned long long)m.total, (unsigned long long)cases[c].want);
		/* merged rows keep their cgroup: a merge of merges scopes the same */
		if (cases[c].s && cases[c].s->cgroup && m.total) {
			struct profile again;

			cr_assert_eq(profile_init(&again, ""), 0);
			cr_assert_eq(profile_merge(&again, &m, cases[c].s), 0);
			cr_expect_eq(again.total, m.total);
			profile_free(&again);
		}
		profile_free(&m);
	}
	profile_free(&d);
	profile_free(&p);

	/* I/O profiles root their stacks at "[DEVICE OP]": a device's prefix picks them */
	cr_assert_eq(profile_init(&p, "h"), 0);
	{
		const char *w0[] = { "[loop0 write]", "write", "vfs_write" },
			   *w1[] = { "[loop10 write]", "write", "vfs_write" },
			   *w2[] = { "[sda read]", "pread64" };

		cr_assert_eq(profile_add(&p, "dd", "dd", 1, w0, 3, 40), 0);
		cr_assert_eq(profile_add(&p, "dd", "dd", 2, w1, 3, 7), 0);
		cr_assert_eq(profile_add(&p, "db", "db", 3, w2, 2, 5), 0);
	}
	{
		struct profile_scope loop0 = { .root = "[loop0 " }, sda = { .root = "[sda " };

		cr_assert_eq(profile_init(&m, ""), 0);
		cr_assert_eq(profile_merge(&m, &p, &loop0), 0);
		cr_expect_eq(m.total, 40, "[loop0 picked %llu, want 40 (not loop10's)",
			     (unsigned long long)m.total);
		profile_free(&m);
		cr_assert_eq(profile_init(&m, ""), 0);
		cr_assert_eq(profile_merge(&m, &p, &sda), 0);
		cr_expect_eq(m.total, 5);
		profile_free(&m);
	}
	profile_free(&p);

	/* a window from before "cg": the same rows, no cgroups */
	cr_assert_eq(profile_init(&p, "h"), 0);
	{
		const char *frames[] = { "main", "old" };

		cr_assert_eq(profile_add(&p, "svc", "svc", 1, frames, 2, 5), 0);
	}
	cr_assert_eq(profile_encode_level(&p, 0, &buf, &len), 0);	/* msgpack, to look into */
	cr_expect_null(memmem(buf, len, "\xa2" "cg", 3), "a window without cgroups wrote \"cg\"");
	cr_assert_eq(profile_decode(buf, len, &d, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(d.total, 5);
	cr_expect_eq(d.rows[0].cgroup, 0);
	free(buf);
	profile_free(&d);
	profile_free(&p);
}

/*
 * Lazy publishing (the probe's): a process is published with every file
 * that has no rows yet marked UNWIND_LAZY and no rows used; asked for the
 * address of its libc mapping (as the walker asks), libc's rows are built
 * and that mapping points at them, while the others stay lazy.
 */
Test(profile, files_get_rows_only_when_a_sample_asks, .init = setup, .fini = teardown)
{
	int rows, procs;
	pid_t a = spawn_sh("exec sleep 30");
	uint32_t key = 0, used0, used1, max, files, failed, lazy0 = 0, lazy1 = 0, nlibc = 0;
	unsigned long long libc = 0;
	struct unwind_proc up0, up1;
	struct unwinder *u;
	char err[256], path[64], line[512];
	int got0, got1;
	FILE *f;

	unwind_maps(200000, &rows, &procs);
	cr_assert_geq(rows, 0, "cannot create the rows array: %s", strerror(errno));
	cr_assert_geq(procs, 0);
	u = unwinder_new(rows, 200000, 100000, procs, err, sizeof(err));
	cr_assert_not_null(u, "%s", err);
	usleep(300000);		/* exec'd */
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)a);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "r-xp") && strstr(line, "/libc.so"))
			sscanf(line, "%llx-", &libc);
	if (f)
		fclose(f);
	key = (uint32_t)a;
	cr_assert_gt(unwinder_publish(u, key, 0), 0);
	unwinder_stats(u, &used0, &max, &files, &failed);
	got0 = bpf_map_lookup_elem(procs, &key, &up0);
	cr_assert_gt(unwinder_publish(u, key, libc + 16), 0);
	unwinder_stats(u, &used1, &max, &files, &failed);
	got1 = bpf_map_lookup_elem(procs, &key, &up1);
	stop_spawned(a, 0);
	unwinder_free(u);
	close(rows);
	close(procs);
	cr_assert_neq(libc, 0, "no libc mapping in sleep's maps");
	cr_assert_eq(got0, 0, "not published lazily");
	cr_assert_eq(got1, 0, "not published again when asked");
	cr_expect_eq(used0, 0, "rows were built before any sample asked: %u", used0);
	for (uint32_t i = 0; i < up0.n; i++)
		lazy0 += up0.m[i].first == UNWIND_LAZY;
	cr_expect_eq(lazy0, up0.n, "%u of %u mappings lazy at first", lazy0, up0.n);
	cr_expect_gt(used1, 20000, "libc's rows were not built when asked (%u rows)", used1);
	for (uint32_t i = 0; i < up1.n; i++) {
		lazy1 += up1.m[i].first == UNWIND_LAZY;
		if (up1.m[i].start <= libc + 16 && libc + 16 < up1.m[i].end) {
			nlibc++;
			cr_expect_neq(up1.m[i].first, UNWIND_LAZY, "libc's mapping is still lazy");
			cr_expect_gt(up1.m[i].count, 20000);
		}
	}
	cr_expect_eq(nlibc, 1);
	cr_expect_eq(lazy1, up1.n - 1, "%u of %u mappings lazy after libc's were built", lazy1,
		     up1.n);
}

/*
 * The table cache: libc's table encodes and decodes to the same rows; a
 * flipped byte, a cut, a row limit under its size or an unsorted row is
 * refused.  An unwinder with a cache keeps the tables it builds, by build
 * id, and a second one (a restart) reads them instead of building: the
 * same rows; a damaged file is removed and built again.
 */
Test(profile, unwind_tables_are_kept_by_build_id_and_checked_when_read, .init = setup,
     .fini = teardown)
{
	struct unwind_table t, back;
	Dl_info info;
	char err[256], cache[64] = "/tmp/fl-unwcache.XXXXXX";
	void *buf;
	size_t len;
	int fd;

	cr_assert(dladdr((void *)qsort, &info) && info.dli_fname);
	fd = open(info.dli_fname, O_RDONLY);
	cr_assert_eq(unwind_table_build(fd, 0, &t, err, sizeof(err)), 0, "%s", err);
	close(fd);
	cr_assert_eq(unwind_table_encode(&t, &buf, &len), 0);
	cr_assert_eq(unwind_table_decode(buf, len, 0, &back, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(back.nrows, t.nrows);
	cr_expect_eq(back.nloads, t.nloads);
	cr_expect_eq(memcmp(back.rows, t.rows, t.nrows * sizeof(*t.rows)), 0);
	unwind_table_free(&back);
	cr_expect_eq(unwind_table_decode(buf, len - 1, 0, &back, err, sizeof(err)), -EINVAL);
	cr_expect_eq(unwind_table_decode(buf, len, t.nrows - 1, &back, err, sizeof(err)), -EINVAL);
	((uint8_t *)buf)[len / 2] ^= 0x40;
	cr_expect_eq(unwind_table_decode(buf, len, 0, &back, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "checksum"), "%s", err);
	free(buf);
	unwind_table_free(&t);

	/* through the unwinder: kept, read back by a second one, a damaged one rebuilt */
	cr_assert_not_null(mkdtemp(cache));
	{
		int rows, procs;
		pid_t a = spawn_sh("exec sleep 30");
		uint32_t used[3], reads[3], max, files, failed, key = (uint32_t)a;
		struct unwind_proc up[3];
		char sub[128];
		int kept;

		unwind_maps(200000, &rows, &procs);
		cr_assert_geq(rows, 0);
		cr_assert_geq(procs, 0);
		snprintf(sub, sizeof(sub), "%s/deeper/unwind", cache);
		usleep(300000);
		for (int round = 0; round < 3; round++) {
			struct unwinder *u = unwinder_new(rows, 200000, 100000, procs, err,
							  sizeof(err));

			cr_assert_not_null(u, "%s", err);
			cr_assert_eq(unwinder_set_cache(u, sub), 0);
			if (round == 2)	/* damage every kept table */
				test_sh("for f in %s/*.unwind; do printf x | dd of=$f bs=1 seek=100 "
					"conv=notrunc 2>/dev/null; done", sub);
			cr_assert_gt(unwinder_add_process(u, key), 0);
			unwinder_stats(u, &used[round], &max, &files, &failed);
			reads[round] = unwinder_cache_reads(u);
			cr_assert_eq(bpf_map_lookup_elem(procs, &key, &up[round]), 0);
			unwinder_free(u);
			bpf_map_delete_elem(procs, &key);
			if (round == 0) {
				kept = test_sh("test $(ls %s/*.unwind | wc -l) -ge 2", sub);
				cr_expect_eq(kept, 0, "the tables were not kept in %s", sub);
			}
		}
		stop_spawned(a, 0);
		close(rows);
		close(procs);
		cr_expect_gt(used[0], 20000);
		cr_expect_eq(reads[0], 0);
		cr_expect_geq(reads[1], 2, "a restart built again instead of reading the cache");
		cr_expect_eq(reads[2], 0, "damaged tables were read");
		cr_expect_eq(used[1], used[0], "read back: %u rows, built: %u", used[1], used[0]);
		cr_expect_eq(used[2], used[0], "rebuilt after damage: %u rows", used[2]);
		cr_expect_eq(up[1].n, up[0].n);
		for (uint32_t i = 0; i < up[0].n && i < up[1].n; i++)
			cr_expect(up[1].m[i].count == up[0].m[i].count &&
				  up[1].m[i].bias == up[0].m[i].bias, "mapping %u differs", i);
		cr_expect_eq(test_sh("test $(ls %s/*.unwind | wc -l) -ge 2", sub), 0,
			     "the damaged tables were not kept again");
	}
	test_sh("rm -rf %s", cache);
}
