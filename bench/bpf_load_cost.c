/*
 * bpf_load_cost.c - what loading the probe's BPF objects costs, alone.
 *
 *   bpf_load_cost [--runs N] OBJ.bpf.o...
 *
 * The floor under the probe's start-up: before it takes a snapshot, the
 * probe opens and loads every object (the OUT/bpf objects, the bytes its
 * skeletons embed).  Loading is libbpf parsing the kernel's BTF for the
 * object's CO-RE relocations, creating its maps (the kernel allocating and
 * zeroing every array) and the kernel's verifier walking every program.
 * Measured here in this process's CPU time (user + system: the verifier
 * and the map allocations run in the kernel, in the loading thread), twice
 * per run: with every program's autoload off (BTF and maps only), then
 * whole; the verifier's share is the difference.  Nothing is attached.
 *
 * Printed, the median of N runs (default 5) in CPU-s, and one line of
 * key=value for bench/probe_overhead.py:
 *
 *   load_cpu_s=0.0851 maps_btf_cpu_s=0.0449 verifier_cpu_s=0.0402
 *
 * The objects are loaded with their tunables (const volatile rodata) as
 * compiled, not as the probe sets them; the verifier's paths can differ a
 * little with them, its cost not by much.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define MAX_RUNS 101

static double cpu_now(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 +
	       r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level == LIBBPF_WARN)
		return vfprintf(stderr, fmt, ap);
	return 0;
}

/*
 * Open and load every object once; with @programs false no program is
 * loaded (maps and BTF only).  Returns the CPU-s it took, or -1 after
 * saying which object failed.
 */
static double load_all(char **paths, int n, bool programs)
{
	double t0 = cpu_now();

	for (int i = 0; i < n; i++) {
		struct bpf_object *obj = bpf_object__open_file(paths[i], NULL);
		struct bpf_program *prog;
		int err;

		if (!obj) {
			fprintf(stderr, "bpf_load_cost: %s: cannot open it\n",
				paths[i]);
			return -1;
		}
		if (!programs)
			bpf_object__for_each_program(prog, obj)
				bpf_program__set_autoload(prog, false);
		err = bpf_object__load(obj);
		bpf_object__close(obj);
		if (err) {
			fprintf(stderr,
				"bpf_load_cost: %s: load failed (%s); run as root on a kernel with BTF\n",
				paths[i], strerror(-err));
			return -1;
		}
	}
	return cpu_now() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	double whole[MAX_RUNS], maps[MAX_RUNS], verifier[MAX_RUNS];
	int runs = 5, first = 1;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: bpf_load_cost [--runs N] OBJ.bpf.o...\n"
		       "CPU time of loading the objects (libbpf's BTF work, map creation,\n"
		       "the verifier), median of N runs (default 5, at most %d).\n",
		       MAX_RUNS);
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "--runs")) {
		runs = atoi(argv[2]);
		first = 3;
	}
	if (runs < 1 || runs > MAX_RUNS || first >= argc) {
		fprintf(stderr, "bpf_load_cost: usage: bpf_load_cost [--runs N (1..%d)] OBJ.bpf.o...\n",
			MAX_RUNS);
		return 2;
	}
	libbpf_set_print(libbpf_quiet);
	/* A first load warms the page cache and the kernel's BTF: not counted. */
	if (load_all(argv + first, argc - first, true) < 0)
		return 1;
	for (int r = 0; r < runs; r++) {
		maps[r] = load_all(argv + first, argc - first, false);
		whole[r] = load_all(argv + first, argc - first, true);
		if (maps[r] < 0 || whole[r] < 0)
			return 1;
		verifier[r] = whole[r] - maps[r];
	}
	printf("bpf_load_cost: %d objects, median of %d runs: load %.4f CPU-s "
	       "(BTF and maps %.4f, programs' verification %.4f)\n",
	       argc - first, runs, median(whole, runs), median(maps, runs),
	       median(verifier, runs));
	printf("load_cpu_s=%.4f maps_btf_cpu_s=%.4f verifier_cpu_s=%.4f\n",
	       median(whole, runs), median(maps, runs), median(verifier, runs));
	return 0;
}
