/*
 * fleet_fill.c - fill a Redis with a generated fleet's 1 s snapshots, for
 * bench/rules_throughput.py's Redis-backed run of faultline-rules.
 *
 *   fleet_fill URL HOSTS SECONDS
 *
 * Each host hN (rack r<N/20>, switch sw<N/80>) gets SECONDS snapshots,
 * one a second ending now, with the series bench/rules_throughput.py's
 * rules read: tcp.in_csum_errors (every 10th host 2/s), cpu.host_utilization
 * {cpu="all"} (every 7th host 0.97, else 0.35) and drive.wear_used_pct
 * (every 9th host 93, else 40), written through the probe's own store.
 */
#include <stdio.h>
#include <stdlib.h>

#include "model/snapshot.h"
#include "store/store.h"
#include "core/timeutil.h"

int main(int argc, char **argv)
{
	struct store_opts o = { .timeout_ns = 5 * NSEC_PER_SEC, .spool_max_entries = 1 << 20,
				.spool_max_bytes = 1ULL << 31,
				.retention_ms = { 15 * 60 * 1000, 0, 0 } };
	struct store *st;
	char err[256];
	long hosts, secs;
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;

	if (argc != 4 || (hosts = atol(argv[2])) <= 0 || (secs = atol(argv[3])) <= 0) {
		fprintf(stderr, "usage: fleet_fill URL HOSTS SECONDS\n");
		return 2;
	}
	o.url = argv[1];
	st = store_open(&o, err, sizeof(err));
	if (!st) {
		fprintf(stderr, "fleet_fill: %s\n", err);
		return 1;
	}
	for (long h = 0; h < hosts; h++) {
		char name[32], rack[32], sw[32];

		snprintf(name, sizeof(name), "host-%05ld", h);
		snprintf(rack, sizeof(rack), "r%ld", h / 20);
		snprintf(sw, sizeof(sw), "sw%ld", h / 80);
		for (long t = 0; t < secs; t++) {
			struct snapshot s;

			snapshot_init(&s, name, now - (uint64_t)(secs - 1 - t) * 1000, 1000,
				      (uint64_t)t, 1);
			snapshot_set_label(&s, "rack", rack);
			snapshot_set_label(&s, "switch", sw);
			snapshot_add_counter(&s, "tcp.in_csum_errors",
					     h % 10 == 0 ? (uint64_t)t * 2 : 0, NULL);
			snapshot_add_gauge(&s, "cpu.host_utilization", h % 7 == 0 ? 0.97 : 0.35, NULL);
			snapshot_add_gauge(&s, "drive.wear_used_pct", h % 9 == 0 ? 93 : 40,
					   "device", "nvme0n1", "model", "M", NULL);
			store_put_snapshot(st, &s);
			snapshot_free(&s);
		}
	}
	if (store_flush(st, 600 * NSEC_PER_SEC)) {
		fprintf(stderr, "fleet_fill: Redis did not take everything in 10 min\n");
		store_close(st);
		return 1;
	}
	store_close(st);
	printf("%ld hosts x %ld snapshots written\n", hosts, secs);
	return 0;
}
