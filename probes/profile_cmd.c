/*
 * profile_cmd.c - `faultline-probe profile`, the one-shot profiler's
 * command line; see profile_cmd.h.
 */
#include "probes/profile_cmd.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "model/profile.h"
#include "model/profile_export.h"
#include "probes/probe.h"

/* pid as text, for one message */
static const char *optarg_pid(uint32_t pid)
{
	static char buf[16];

	snprintf(buf, sizeof(buf), "%u", pid);
	return buf;
}

int profile_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "rate", required_argument, NULL, 'F' },
		{ "pid", required_argument, NULL, 'p' },
		{ "cgroup", required_argument, NULL, 'g' },
		{ "unwind", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct profile_one_filter only = { 0 };
	int frame_pointers = 0;
	char *end;
	uint64_t duration = 30 * NSEC_PER_SEC;
	const char *outpath = "cpu.pb.gz";
	unsigned long hz = 99;
	struct probe_config cfg;
	struct profile p;
	char err[512], host[256] = "";
	int c, ret;

	while ((c = getopt_long(argc, argv, "d:o:F:p:g:u:h", opts, NULL)) != -1) {
		switch (c) {
		case 'u':
			if (strcmp(optarg, "dwarf") && strcmp(optarg, "fp")) {
				fprintf(stderr, "faultline-probe profile: --unwind '%s': expected dwarf "
					"or fp\n", optarg);
				return 2;
			}
			frame_pointers = !strcmp(optarg, "fp");
			break;
		case 'd':
			if (duration_parse(optarg, &duration) || duration < 100 * NSEC_PER_MSEC) {
				fprintf(stderr, "faultline-probe profile: --duration '%s': expected a "
					"duration such as 30s\n", optarg);
				return 2;
			}
			break;
		case 'o': outpath = optarg; break;
		case 'F':
			hz = strtoul(optarg, NULL, 10);
			if (hz < 1 || hz > 999) {
				fprintf(stderr, "faultline-probe profile: --rate: 1..999 Hz\n");
				return 2;
			}
			break;
		case 'p':
			only.pid = (uint32_t)strtoul(optarg, &end, 10);
			if (*end || !only.pid || kill((pid_t)only.pid, 0)) {
				fprintf(stderr, "faultline-probe profile: --pid '%s': no such process\n",
					optarg);
				return 2;
			}
			break;
		case 'g':
			if (optarg[0] != '/' || strlen(optarg) >= sizeof(only.cgroup)) {
				fprintf(stderr, "faultline-probe profile: --cgroup '%s': expected a cgroup "
					"path such as /system.slice/nginx.service (as in "
					"/proc/PID/cgroup)\n", optarg);
				return 2;
			}
			snprintf(only.cgroup, sizeof(only.cgroup), "%s", optarg);
			break;
		case 'h':
			printf("Usage: faultline-probe profile [--duration 30s] [-o FILE] [--rate 99]\n"
			       "                               [--pid PID | --cgroup PATH]\n"
			       "                               [--unwind dwarf|fp]\n\n"
			       "Profile every CPU of this host once, without Redis, like a one-shot\n"
			       "profiler, and write FILE: .svg a flame graph, .folded folded stacks,\n"
			       "anything else gzip'd pprof (default cpu.pb.gz; `go tool pprof` reads it).\n"
			       "--pid keeps one process (its threads included), --cgroup the processes\n"
			       "of a cgroup and those below it (the path /proc/PID/cgroup shows: v2, or\n"
			       "the cpu controller's under v1).  User stacks unwind with each binary's\n"
			       "call frame information (--unwind dwarf, the default), or with frame\n"
			       "pointers only (--unwind fp: programs built without them show their\n"
			       "hot function and little else).\n");
			return 0;
		default:
			return 2;
		}
	}
	if (probe_config_defaults(&cfg, err, sizeof(err)))
		return 1;
	gethostname(host, sizeof(host) - 1);
	free(cfg.host);
	cfg.host = strdup(host);
	if (frame_pointers)
		cfg.profile_unwind_rows = 0;
	fprintf(stderr, "faultline-probe: profiling all CPUs at %lu Hz for %.1f s%s%s%s...\n", hz,
		(double)duration / 1e9, only.pid ? ", pid " : only.cgroup[0] ? ", cgroup " : "",
		only.pid ? optarg_pid(only.pid) : "", only.cgroup);
	if (only.pid && only.cgroup[0]) {
		fprintf(stderr, "faultline-probe profile: --pid or --cgroup, not both\n");
		probe_config_free(&cfg);
		return 2;
	}
	ret = profile_oneshot(&cfg, duration, (uint32_t)hz, &only, &p, err, sizeof(err));
	probe_config_free(&cfg);
	if (ret) {
		log_error("%s", err);
		return 1;
	}
	ret = profile_export(&p, NULL, outpath, "faultline-probe profile");
	if (ret)
		log_error("cannot write %s: %s", outpath, strerror(-ret));
	else
		fprintf(stderr, "faultline-probe: %llu samples, %u stacks -> %s\n",
			(unsigned long long)p.total, p.nstacks, outpath);
	profile_free(&p);
	return ret ? 1 : 0;
}
