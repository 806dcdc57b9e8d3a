/*
 * test_chaos.c - the fault suite: real processes, real outages, and the
 * figures an operator would ask for.  `make test` runs it in a short form
 * (each fault lasts FL_CHAOS_SECONDS, default 6 s); `make chaos` runs it
 * with minute-long faults.
 *
 *   - Redis stopped under a running probe, then back with its data: how
 *     many snapshots of the outage were lost (0 within the spool's bound);
 *     then Redis restarted empty: the probe registers its host again and
 *     keeps writing.
 *   - A webhook receiver that refuses connections, then answers 500, then
 *     hangs past the alerter's timeout, while alerts fire and resolve:
 *     every notification delivered afterwards, firing before resolution in
 *     each group, duplicates counted, the retry gaps printed (Alertmanager's
 *     0.5 s x 1.5, jittered, at most 60 s).
 *   - kill -9 of the probe: after its restart it writes again, and only
 *     the seconds it was dead are missing.
 * (kill -9 of the alerter and of faultline-rules: test_restarts.c.)
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "model/alert.h"
#include "tests/helpers.h"
#include "tests/receiver.h"
#include "store/store.h"
#include "core/timeutil.h"

static struct test_redis redis;
static char logpath[300];
static pid_t child;

/* How long each fault lasts (s). */
static int fault_seconds(void)
{
	const char *s = getenv("FL_CHAOS_SECONDS");
	int n = s ? atoi(s) : 0;

	return n > 0 ? n : 6;
}

static void setup(void)
{
	cr_assert_eq(test_redis_start_persistent(&redis), 0);
	snprintf(logpath, sizeof(logpath), "%s/chaos.log", redis.dir);
}

static void teardown(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	child = 0;
	test_redis_destroy(&redis);
}

static pid_t spawn(const char *bin, const char *cfg_flag, const char *cfg)
{
	char path[256];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s", test_out_dir(), bin);
	pid = fork();
	if (pid == 0) {
		int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0600);

		dup2(fd, 2);
		execl(path, path, cfg_flag, cfg, "--log-level", "info", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static struct conn *conn(void)
{
	return test_redis_connect(&redis);
}


/* ---- probe and Redis ------------------------------------------------------ */

static void probe_config(char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/probe.yaml", redis.dir);
	f = fopen(path, "w");
	fprintf(f, "host: chaos-1\ninterval: 250ms\nredis: \"%s\"\nmetrics_addr: \"\"\n"
		"bpf: false\n", redis.url);
	fclose(f);
}

Test(chaos, redis_away_under_a_probe_loses_nothing_and_an_empty_redis_is_refilled,
     .init = setup, .fini = teardown, .timeout = 600)
{
	int secs = fault_seconds();
	char cfg[300];
	uint64_t from, to;
	long long got, want;
	long count, missing;
	struct conn *c;
	redisReply *r;

	probe_config(cfg, sizeof(cfg));
	child = spawn("faultline-probe", "--config", cfg);
	sleep(2);
	test_redis_stop(&redis, 0);		/* away, data kept */
	from = time_wall_ns() / NSEC_PER_MSEC;
	sleep((unsigned)secs);
	to = time_wall_ns() / NSEC_PER_MSEC;
	cr_assert_eq(test_redis_restart(&redis), 0);
	sleep(4);				/* the spool drains */
	/* lost = sequence numbers missing among what arrived (the probe numbers
	 * every snapshot it takes, so a busy machine's skipped ticks are not loss) */
	cr_assert_eq(test_snapshot_gaps(redis.url, "chaos-1", from - 1000, to + 1000, &count,
					&missing), 0);
	want = (long long)((to - from) / 250);
	cr_log_info("Redis away %d s under the probe: %ld snapshots from 1 s before to 1 s after "
		    "it arrived, %ld lost (bound: spool.max_snapshots 3600 = 15 min at 250 ms, "
		    "256 MiB)", secs, count, missing);
	cr_assert_eq(missing, 0, "%ld snapshots of the outage were lost", missing);
	cr_assert_geq(count, want / 2, "the probe hardly ran during the outage (%ld)", count);
	/* Redis restarted empty: its data is gone, the probe carries on */
	test_redis_stop(&redis, 1);
	test_sh("rm -rf '%s'/appendonly* '%s'/*.aof '%s'/*.rdb", redis.dir, redis.dir, redis.dir);
	cr_assert_eq(test_redis_restart(&redis), 0);
	from = time_wall_ns() / NSEC_PER_MSEC;
	sleep(4);
	c = conn();
	r = conn_commandf(c, NULL, "EXISTS fl:{chaos-1}:host");
	cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1,
		  "the host is not registered again in an empty Redis");
	freeReplyObject(r);
	got = test_s1_count(c, "chaos-1", from, time_wall_ns() / NSEC_PER_MSEC);
	cr_log_info("after Redis came back empty: %lld snapshots in 4 s", got);
	cr_assert_geq(got, 8, "the probe stopped writing to an empty Redis");
	conn_close(c);
}

Test(chaos, kill_9_of_the_probe_loses_only_its_dead_time, .init = setup, .fini = teardown,
     .timeout = 120)
{
	char cfg[300];
	uint64_t killed, back;
	long long before, after;
	struct conn *c;

	probe_config(cfg, sizeof(cfg));
	child = spawn("faultline-probe", "--config", cfg);
	sleep(2);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	killed = time_wall_ns() / NSEC_PER_MSEC;
	sleep(2);
	back = time_wall_ns() / NSEC_PER_MSEC;
	child = spawn("faultline-probe", "--config", cfg);
	sleep(3);
	c = conn();
	before = test_s1_count(c, "chaos-1", killed - 1500, killed);
	after = test_s1_count(c, "chaos-1", back + 1000, back + 2500);
	cr_log_info("probe killed with -9: %lld snapshots in the 1.5 s before, %lld in 1.5 s "
		    "after its restart", before, after);
	cr_assert_geq(before, 4, "what was written before the kill is gone");
	cr_assert_geq(after, 4, "the restarted probe does not write");
	conn_close(c);
}

/* ---- webhook receiver ----------------------------------------------------- */

static void emit(struct conn *c, const char *fp, const char *group, int firing,
		 uint64_t starts)
{
	char json[1024], t[40], e[40];

	snprintf(json, sizeof(json),
		 "{\"status\":\"%s\",\"fingerprint\":\"%s\",\"labels\":{\"alertname\":\"Chaos\","
		 "\"rack\":\"%s\"},\"annotations\":{},\"startsAt\":\"%s\"%s%s%s}",
		 firing ? "firing" : "resolved", fp, group, alert_format_time(starts, t, sizeof(t)),
		 firing ? "" : ",\"endsAt\":\"",
		 firing ? "" : alert_format_time(starts + 1000, e, sizeof(e)), firing ? "" : "\"");
	freeReplyObject(conn_commandf(c, NULL, "XADD fl:alerts * e %s", json));
}

/* Index of the first request answered 200 carrying fp with status, or -1. */
static int first_delivery(const char *fp, const char *status, int *copies)
{
	int first;

	*copies = rx_carried(fp, status, &first);
	return first;
}

Test(chaos, a_receiver_refusing_failing_and_hanging_gets_every_page_in_order, .init = setup,
     .fini = teardown, .timeout = 900)
{
	int secs = fault_seconds(), port, copies, dup = 0;
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	static const char *const fps[] = { "c0c0000000000001", "c0c0000000000002",
					   "c0c0000000000003" };
	char cfg[300];
	struct conn *c = conn();
	FILE *f;

	/* a port that refuses now and will be the receiver's later */
	{
		struct sockaddr_in sa = { .sin_family = AF_INET };
		socklen_t len = sizeof(sa);
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
		bind(fd, (struct sockaddr *)&sa, sizeof(sa));
		getsockname(fd, (struct sockaddr *)&sa, &len);
		port = ntohs(sa.sin_port);
		close(fd);
	}
	snprintf(cfg, sizeof(cfg), "%s/alerter.yaml", redis.dir);
	f = fopen(cfg, "w");
	fprintf(f, "redis: %s\nconsumer: chaos\ngroup_wait: 200ms\ngroup_interval: 500ms\n"
		"repeat_interval: 1h\nreceivers:\n  - name: hook\n    url: http://127.0.0.1:%d/\n"
		"    timeout: 2s\nroutes:\n  - receiver: hook\n    group_by: [rack]\n",
		redis.url, port);
	fclose(f);
	child = spawn("faultline-alerter", "--config", cfg);
	/* phase 1: connection refused; two groups fire */
	emit(c, fps[0], "r1", 1, now);
	emit(c, fps[1], "r2", 1, now);
	sleep((unsigned)secs);
	/* phase 2: 500; the first resolves, a third fires */
	pthread_mutex_lock(&rx.lock);
	rx.status = 500;
	pthread_mutex_unlock(&rx.lock);
	rx_start_on(port);
	emit(c, fps[0], "r1", 0, now);
	emit(c, fps[2], "r3", 1, now);
	sleep((unsigned)secs);
	/* phase 3: hanging past the alerter's 2 s timeout (answered 202, too late) */
	pthread_mutex_lock(&rx.lock);
	rx.status = 202;
	rx.delay_ms = 2500;
	pthread_mutex_unlock(&rx.lock);
	sleep((unsigned)secs);
	/* the receiver recovers */
	pthread_mutex_lock(&rx.lock);
	rx.status = 200;
	rx.delay_ms = 0;
	pthread_mutex_unlock(&rx.lock);
	for (int i = 0; i < 240; i++) {
		int d, e;

		d = first_delivery(fps[1], "firing", &e) >= 0 && first_delivery(fps[2], "firing", &e) >= 0;
		if (d)
			break;
		usleep(250000);
	}
	sleep(2);	/* room for anything stale to arrive */
	/*
	 * Every page that still stands.  The first group fired and resolved
	 * while nothing got through: its pending FIRING was superseded by the
	 * resolution (a retry re-reads its group), and as the receiver never
	 * heard of it, nothing is said, as Alertmanager does; before, the stale
	 * FIRING was delivered after the fault had ended, then its resolution.
	 */
	cr_assert_lt(first_delivery(fps[0], "firing", &copies), 0, "the first group's stale "
		     "FIRING was delivered after it resolved");
	cr_assert_lt(first_delivery(fps[0], "resolved", &copies), 0, "the resolution of an alert "
		     "the receiver never heard of was sent");
	for (int k = 1; k < 3; k++) {
		cr_assert_geq(first_delivery(fps[k], "firing", &copies), 0, "group %d lost", k + 1);
		dup += copies > 1 ? copies - 1 : 0;
	}
	/* the retry gaps of the 500 phase, as the receiver saw them */
	{
		char gaps[512] = "";
		size_t off = 0;
		uint64_t prev = 0;
		int n = 0, bad = 0;

		pthread_mutex_lock(&rx.lock);
		for (int i = 0; i < rx.n; i++) {
			if (rx.req[i].status != 500 || !strstr(rx.req[i].body, "\"r2\""))
				continue;
			if (prev) {
				double g = (double)(rx.req[i].at_ns - prev) / 1e9;

				bad |= g > 61 || g < 0.2;
				if (off < sizeof(gaps) - 16)
					off += (size_t)snprintf(gaps + off, sizeof(gaps) - off,
								"%s%.2f", n ? " " : "", g);
				n++;
			}
			prev = rx.req[i].at_ns;
		}
		pthread_mutex_unlock(&rx.lock);
		cr_log_info("refused %d s, 500 for %d s, hanging %d s: both standing pages "
			    "delivered, the superseded one not, %d duplicate(s); group r2's retry gaps while answered 500 "
			    "(s): %s", secs, secs, secs, dup, gaps);
		cr_assert_not(bad, "a retry gap outside 0.2..61 s: %s", gaps);
	}
	conn_close(c);
	rx_stop();
}
