/*
 * sim.c - `faultline sim`: the fleet simulator (sim/sim.h) on the command
 * line.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timeutil.h"
#include "sim/sim.h"
#include "cli/cli.h"

/* ---- sim ---------------------------------------------------------------- */

static volatile int sim_stop;

static void on_sim_signal(int sig)
{
	(void)sig;
	sim_stop = 1;
}

static void sim_usage(FILE *out)
{
	fprintf(out,
"Usage: faultline sim [--scenario FILE] [--hosts N] [--duration D]\n"
"                     [--start -30m | --ends-now] [--no-wait] [--timeline FILE]\n"
"                     [--redis URL] [--seed N] [--no-profiles] [--chunked]\n"
"\n"
"Write what a fleet's probes would write (1 s snapshots and rollups, 10 s CPU\n"
"profiles, drive records with a month of wear history, deploy markers) into\n"
"Redis through the probe's own store, for hosts named after where they sit\n"
"(sw003-r0012-h05: switch, rack, host) and reporting rack/switch/site labels.\n"
"A scenario (scenarios/*.yaml) injects faults on chosen domains over time and\n"
"says which pages each should cause; --timeline writes what was injected, where\n"
"and when, as JSON, so a test can score what the alerter delivered.\n"
"\n"
"Without a scenario the fleet is healthy (64 hosts, 10 min).  The scenario\n"
"starts at --start (default now; -30m: 30 min ago, written at once, then the\n"
"rest follows the clock).  --ends-now starts it one duration ago and writes it\n"
"all at once (what replaying tests want).  --no-wait never follows the clock.\n"
"\n"
"  -s, --scenario FILE   the scenario (YAML; see scenarios/README.md)\n"
"  -n, --hosts N         fleet size (overrides the scenario's)\n"
"      --hosts-per-rack N, --racks-per-switch N, --switches-per-site N\n"
"  -d, --duration D      how long (overrides the scenario's)\n"
"      --start T         -DURATION (before now), or epoch milliseconds\n"
"      --ends-now        start one duration ago, write everything at once\n"
"      --no-wait         do not follow the wall clock\n"
"  -t, --timeline FILE   write the injected timeline here (JSON)\n"
"      --no-profiles     skip the 10 s CPU profile windows\n"
"      --chunked         store ended minutes of 1 s snapshots as chunks, as a\n"
"                        probe does (default: entries, which replays read)\n"
"      --seed N          per-host randomness (default 1)\n"
"  -r, --redis URL       default unix:///run/faultline/redis.sock\n"
"  -h, --help            this text\n");
}

int cmd_sim(int argc, char **argv)
{
	enum { O_HPR = 256, O_RPS, O_SPS, O_START, O_ENDS, O_NOWAIT, O_NOPROF, O_SEED,
	       O_CHUNKED };
	static const struct option opts[] = {
		{ "scenario", required_argument, NULL, 's' },
		{ "hosts", required_argument, NULL, 'n' },
		{ "hosts-per-rack", required_argument, NULL, O_HPR },
		{ "racks-per-switch", required_argument, NULL, O_RPS },
		{ "switches-per-site", required_argument, NULL, O_SPS },
		{ "duration", required_argument, NULL, 'd' },
		{ "start", required_argument, NULL, O_START },
		{ "ends-now", no_argument, NULL, O_ENDS },
		{ "no-wait", no_argument, NULL, O_NOWAIT },
		{ "timeline", required_argument, NULL, 't' },
		{ "no-profiles", no_argument, NULL, O_NOPROF },
		{ "seed", required_argument, NULL, O_SEED },
		{ "chunked", no_argument, NULL, O_CHUNKED },
		{ "redis", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sim_opts o = { .url = "unix:///run/faultline/redis.sock", .pace = 1, .seed = 1,
			      .profiles = 1, .stop = &sim_stop };
	const char *path = NULL, *start = NULL;
	struct scenario sc;
	struct sim_stats st;
	uint64_t dur = 0, now = time_wall_ns() / NSEC_PER_MSEC;
	int c, ends_now = 0, ret;
	char err[512], *end;

	while ((c = getopt_long(argc, argv, "s:n:d:t:r:h", opts, NULL)) != -1) {
		unsigned long v = 0;

		if (c == 'n' || c == O_HPR || c == O_RPS || c == O_SPS || c == O_SEED) {
			v = strtoul(optarg, &end, 10);
			if (*end || !*optarg || (c != O_SEED && (v == 0 || v > 1000000))) {
				fprintf(stderr, "faultline sim: --%s '%s': expected a positive count\n",
					opts[c == 'n' ? 1 : c == O_HPR ? 2 : c == O_RPS ? 3 :
					     c == O_SPS ? 4 : 11].name, optarg);
				return 2;
			}
		}
		switch (c) {
		case 's': path = optarg; break;
		case 'n': o.shape.hosts = (uint32_t)v; break;
		case O_HPR: o.shape.hosts_per_rack = (uint32_t)v; break;
		case O_RPS: o.shape.racks_per_switch = (uint32_t)v; break;
		case O_SPS: o.shape.switches_per_site = (uint32_t)v; break;
		case O_SEED: o.seed = (unsigned)v; break;
		case 'd':
			if (duration_parse(optarg, &dur) || dur < NSEC_PER_SEC) {
				fprintf(stderr, "faultline sim: --duration '%s': expected a duration "
					"of at least 1s\n", optarg);
				return 2;
			}
			break;
		case O_START: start = optarg; break;
		case O_ENDS: ends_now = 1; break;
		case O_NOWAIT: o.pace = 0; break;
		case O_NOPROF: o.profiles = 0; break;
		case O_CHUNKED: o.chunked = 1; break;
		case 't': o.timeline = optarg; break;
		case 'r': o.url = optarg; break;
		case 'h': sim_usage(stdout); return 0;
		default: sim_usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "faultline sim: unexpected '%s' (try --help)\n", argv[optind]);
		return 2;
	}
	if (path) {
		if (scenario_load(&sc, path, err, sizeof(err))) {
			fprintf(stderr, "faultline sim: %s\n", err);
			return 1;
		}
	} else {
		memset(&sc, 0, sizeof(sc));
		snprintf(sc.name, sizeof(sc.name), "healthy");
		sc.fleet = (struct sim_shape){ 64, 8, 2, 2 };
		sc.duration_ms = 10 * 60 * 1000;
	}
	o.duration_ms = dur / NSEC_PER_MSEC;
	uint64_t length = o.duration_ms ? o.duration_ms : sc.duration_ms;

	o.start_ms = now;
	if (ends_now) {
		o.start_ms = now - length;
		o.pace = 0;
	} else if (start) {
		uint64_t back;

		if (start[0] == '-' && !duration_parse(start + 1, &back)) {
			o.start_ms = now - back / NSEC_PER_MSEC;
		} else {
			o.start_ms = strtoull(start, &end, 10);
			if (*end || !o.start_ms) {
				fprintf(stderr, "faultline sim: --start '%s': expected -DURATION "
					"(e.g. -30m) or epoch milliseconds\n", start);
				scenario_free(&sc);
				return 2;
			}
		}
	}
	signal(SIGINT, on_sim_signal);
	signal(SIGTERM, on_sim_signal);
	ret = sim_run(&sc, &o, &st, err, sizeof(err));
	if (ret)
		fprintf(stderr, "faultline sim: %s\n", err);
	else
		printf("simulated %llu hosts for %llu s in %.1f s: %llu snapshots, %llu rollups, "
		       "%llu profile windows, %llu drive records, %llu deploy markers%s%s\n",
		       (unsigned long long)st.hosts, (unsigned long long)(length / 1000),
		       st.wall_s, (unsigned long long)st.snapshots, (unsigned long long)st.rollups,
		       (unsigned long long)st.profiles, (unsigned long long)st.drive_records,
		       (unsigned long long)st.deploys, o.timeline ? "; timeline in " : "",
		       o.timeline ? o.timeline : "");
	scenario_free(&sc);
	return ret ? 1 : 0;
}
