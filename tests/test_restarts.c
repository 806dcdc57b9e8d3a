/*
 * test_restarts.c - never lose a page: the alerter killed (-9) and
 * restarted, Redis restarted under it, a second alerter taking over a dead
 * one's events, a wrong-type fl:alerts, faultline-rules killed while an
 * alert fires and reloaded with a hostile rule file, the probe stopped
 * with SIGTERM and restarted during an outage; real processes, a real Redis, a
 * real HTTP receiver on loopback.  Every case here lost or doubled pages
 * before the alerter kept its entries by id (see alerter/alerter.h).
 *
 * "Receiver down" is a loopback port nothing listens on (connection
 * refused, so the refused attempts are not recorded); "up" is the test's
 * receiver.  Both configs name the receiver "hook", so a notification's
 * group and idempotency key are the same whichever one is in use.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "model/alert.h"
#include "tests/helpers.h"
#include "tests/receiver.h"
#include "model/snapshot.h"
#include "store/keyspace.h"
#include "store/store.h"
#include "core/timeutil.h"

static struct test_redis redis;
static char cfg_up[300], cfg_down[300], alerter_log[300];
static pid_t alerters[2];

static void write_cfg(char *path, size_t len, const char *name, int port, const char *consumer,
		      const char *group_by)
{
	FILE *f;

	snprintf(path, len, "%s/%s.yaml", redis.dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "redis: %s\nconsumer: %s\n"
		"group_wait: 200ms\ngroup_interval: 500ms\nrepeat_interval: 1h\n"
		"receivers:\n  - name: hook\n    url: http://127.0.0.1:%d/hook\n    timeout: 5s\n"
		"routes:\n  - receiver: hook\n    group_by: [%s]\n"
		"delivery:\n  backoff_initial: 100ms\n  backoff_max: 1s\n  claim_idle: 3s\n",
		redis.url, consumer, port, group_by);
	fclose(f);
}

static const char *cfgpath_up(void)
{
	return cfg_up;
}

static void setup(void)
{
	cr_assert_eq(test_redis_start_persistent(&redis), 0);
	rx_start();
	write_cfg(cfg_up, sizeof(cfg_up), "up", rx.port, "test", "rack");
	write_cfg(cfg_down, sizeof(cfg_down), "down", test_free_port(), "test", "rack");
	snprintf(alerter_log, sizeof(alerter_log), "%s/alerter.log", redis.dir);
}

/* Start alerter slot i with config path, stderr appended to alerter_log. */
static void start_alerter(int i, const char *cfg)
{
	char bin[256];

	snprintf(bin, sizeof(bin), "%s/faultline-alerter", test_out_dir());
	alerters[i] = fork();
	if (alerters[i] == 0) {
		int fd = open(alerter_log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		dup2(fd, 2);
		execl(bin, bin, "--config", cfg, "--log-level", "info", (char *)NULL);
		_exit(127);
	}
}

static void stop_alerter(int i, int sig)
{
	if (alerters[i] > 0) {
		kill(alerters[i], sig);
		waitpid(alerters[i], NULL, 0);
	}
	alerters[i] = 0;
}

static void teardown(void)
{
	stop_alerter(0, SIGKILL);
	stop_alerter(1, SIGKILL);
	rx_stop();
	test_redis_destroy(&redis);
}

static struct conn *conn(void)
{
	return test_redis_connect(&redis);
}

/* Append one event for alert `fp` (rack label `rack`), starting at starts_ms. */
static void emit(struct conn *c, const char *fp, const char *rack, const char *status,
		 uint64_t starts_ms)
{
	char json[1024], t[40], e[40];

	snprintf(json, sizeof(json),
		 "{\"status\":\"%s\",\"fingerprint\":\"%s\",\"labels\":{\"alertname\":\"Disk\","
		 "\"severity\":\"page\",\"rack\":\"%s\",\"fp\":\"%s\"},\"annotations\":{},"
		 "\"startsAt\":\"%s\"%s%s%s}", status, fp, rack, fp,
		 alert_format_time(starts_ms, t, sizeof(t)),
		 strcmp(status, "resolved") ? "" : ",\"endsAt\":\"",
		 strcmp(status, "resolved") ? "" : alert_format_time(starts_ms + 1000, e, sizeof(e)),
		 strcmp(status, "resolved") ? "" : "\"");
	freeReplyObject(conn_commandf(c, NULL, "XADD fl:alerts * e %s", json));
}

/* Wait until the group has `n` pending entries (read, not settled). */
static int wait_pending(struct conn *c, long long n, int seconds)
{
	for (int i = 0; i < seconds * 10; i++) {
		if (test_alerts_pending(c, NULL) == n)
			return 1;
		usleep(100000);
	}
	return 0;
}

/*
 * Of the requests answered 200: how many carried alert fp with status
 * (firing/resolved), over all of them (duplicates counted).
 */
static int delivered(const char *fp, const char *status)
{
	return rx_carried(fp, status, NULL);
}

static void fp_of(int i, char out[17])
{
	snprintf(out, 17, "%016x", 0xa1e70000 + i);
}

/* Wait until every one of n alerts was delivered firing at least once. */
static int wait_all_delivered(int n, int seconds)
{
	int got = 0;

	for (int t = 0; t < seconds * 4; t++) {
		got = 0;
		for (int i = 0; i < n; i++) {
			char fp[17];

			fp_of(i, fp);
			got += delivered(fp, "firing") > 0;
		}
		if (got == n)
			break;
		usleep(250000);
	}
	return got;
}

Test(restarts, alerter_reads_back_its_whole_pending_list, .init = setup, .fini = teardown,
     .timeout = 120)
{
	struct conn *c = conn();
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	int got;

	/* 150 alerts in 15 racks, read while the receiver is down */
	start_alerter(0, cfg_down);
	for (int i = 0; i < 150; i++) {
		char fp[17], rack[16];

		fp_of(i, fp);
		snprintf(rack, sizeof(rack), "r%d", i % 15);
		emit(c, fp, rack, "firing", now);
	}
	cr_assert(wait_pending(c, 150, 20), "the alerter did not read the 150 events");
	stop_alerter(0, SIGKILL);
	start_alerter(0, cfg_up);
	got = wait_all_delivered(150, 40);
	cr_log_info("%d of 150 alerts delivered after kill -9 and restart", got);
	cr_assert_eq(got, 150, "only %d of 150 pending alerts were delivered after a restart", got);
	cr_assert(wait_pending(c, 0, 10), "entries left pending after delivery");
	conn_close(c);
}

Test(restarts, kill_9_twice_during_an_outage_loses_nothing, .init = setup, .fini = teardown,
     .timeout = 90)
{
	struct conn *c = conn();
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	char a[17], b[17];

	fp_of(0, a);
	fp_of(1, b);
	start_alerter(0, cfg_down);
	emit(c, a, "r1", "firing", now);
	emit(c, b, "r2", "firing", now);
	cr_assert(wait_pending(c, 2, 15));
	stop_alerter(0, SIGKILL);
	start_alerter(0, cfg_down);
	sleep(3);	/* it reads its pending list back, retries, fails */
	cr_assert_eq(test_alerts_pending(c, NULL), 2, "entries acknowledged without delivery");
	stop_alerter(0, SIGKILL);
	start_alerter(0, cfg_up);
	cr_assert_eq(wait_all_delivered(2, 30), 2, "a page was lost across two crashes");
	cr_assert(wait_pending(c, 0, 10));
	conn_close(c);
}

Test(restarts, redis_restart_then_alerter_restart_loses_nothing, .init = setup, .fini = teardown,
     .timeout = 90)
{
	struct conn *c = conn();
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	char a[17], b[17];

	fp_of(0, a);
	fp_of(1, b);
	start_alerter(0, cfg_down);
	emit(c, a, "r1", "firing", now);
	emit(c, b, "r2", "firing", now);
	cr_assert(wait_pending(c, 2, 15));
	conn_close(c);
	/* Redis restarts (its append-only file keeps the stream) under the alerter */
	test_redis_stop(&redis, 0);
	cr_assert_eq(test_redis_restart(&redis), 0);
	sleep(4);	/* the alerter reconnects and reads its pending list again */
	c = conn();
	cr_assert_eq(test_alerts_pending(c, NULL), 2, "entries acknowledged without delivery after the "
		     "reconnect");
	stop_alerter(0, SIGTERM);
	start_alerter(0, cfg_up);
	cr_assert_eq(wait_all_delivered(2, 30), 2, "a page was lost across a Redis restart");
	cr_assert(wait_pending(c, 0, 10));
	conn_close(c);
}

Test(restarts, running_alerter_takes_over_a_dead_alerters_events, .init = setup,
     .fini = teardown, .timeout = 90)
{
	struct conn *c = conn();
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	char a[17], b[17], other[300];
	redisReply *r;

	fp_of(0, a);
	fp_of(1, b);
	/* "ghost" reads two events and dies without settling them */
	emit(c, a, "r1", "firing", now);
	emit(c, b, "r2", "firing", now);
	r = conn_commandf(c, NULL, "XGROUP CREATE fl:alerts alerter 0 MKSTREAM");
	freeReplyObject(r);
	r = conn_commandf(c, NULL, "XREADGROUP GROUP alerter ghost COUNT 10 STREAMS fl:alerts >");
	cr_assert(r && r->type == REDIS_REPLY_ARRAY, "the ghost read nothing");
	freeReplyObject(r);
	cr_assert_eq(test_alerts_pending(c, "ghost"), 2);
	/* a live alerter, started after the ghost died */
	write_cfg(other, sizeof(other), "other", rx.port, "survivor", "rack");
	start_alerter(1, other);
	/* claim_idle is 3 s: the survivor takes them over within ~3 s + its timer */
	cr_assert_eq(wait_all_delivered(2, 20), 2, "a dead alerter's events were never delivered");
	cr_assert(wait_pending(c, 0, 10));
	cr_assert_eq(test_alerts_pending(c, "ghost"), 0);
	conn_close(c);
}

Test(restarts, held_events_are_not_taken_from_a_live_alerter, .init = setup, .fini = teardown,
     .timeout = 90)
{
	struct conn *c = conn();
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	char a[17], other[300];

	fp_of(0, a);
	/* the first alerter holds an event its receiver refuses for 10 s */
	start_alerter(0, cfg_down);
	emit(c, a, "r1", "firing", now);
	cr_assert(wait_pending(c, 1, 15));
	write_cfg(other, sizeof(other), "other", rx.port, "survivor", "rack");
	start_alerter(1, other);
	sleep(10);	/* > 3 x claim_idle: the holder refreshes what it holds */
	cr_assert_eq(delivered(a, "firing"), 0, "a live alerter's event was taken over");
	cr_assert_eq(test_alerts_pending(c, "test"), 1);
	/* the holder dies: now the survivor takes it over */
	stop_alerter(0, SIGKILL);
	cr_assert_eq(wait_all_delivered(1, 20), 1);
	conn_close(c);
}

/* The idempotency key of the first 200 that carried fp, into key. */
static int key_of(const char *fp, char *key, size_t len, int nth)
{
	int seen = 0;

	pthread_mutex_lock(&rx.lock);
	for (int i = 0; i < rx.n; i++)
		if (strstr(rx.req[i].body, fp) && seen++ == nth) {
			header(&rx.req[i], "X-Faultline-Idempotency-Key", key, len);
			pthread_mutex_unlock(&rx.lock);
			return 0;
		}
	pthread_mutex_unlock(&rx.lock);
	return -1;
}

Test(restarts, idempotency_key_survives_a_restart, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct conn *c = conn();
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	char a[17], b[17], k1[80] = "", k2[80] = "";

	fp_of(0, a);
	fp_of(1, b);
	start_alerter(0, cfg_up);
	emit(c, a, "r1", "firing", now);	/* delivered: the alerter has sent one */
	cr_assert_eq(wait_all_delivered(1, 15), 1);
	pthread_mutex_lock(&rx.lock);
	rx.delay_ms = 3000;
	pthread_mutex_unlock(&rx.lock);
	emit(c, b, "r2", "firing", now);
	cr_assert_geq(wait_requests(2, 15), 2);
	stop_alerter(0, SIGKILL);	/* while the receiver still answers */
	pthread_mutex_lock(&rx.lock);
	rx.delay_ms = 0;
	pthread_mutex_unlock(&rx.lock);
	start_alerter(0, cfg_up);
	cr_assert_geq(wait_requests(3, 20), 3, "the notification was not delivered again");
	cr_assert_eq(key_of(b, k1, sizeof(k1), 0), 0);
	cr_assert_eq(key_of(b, k2, sizeof(k2), 1), 0);
	cr_assert(k1[0], "no idempotency key");
	cr_assert_str_eq(k1, k2, "the redelivery after a restart carries another key");
	conn_close(c);
}

Test(restarts, a_new_incident_is_never_a_duplicate, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct conn *c = conn();
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	char a[17], k1[80] = "", k2[80] = "";

	fp_of(0, a);
	start_alerter(0, cfg_up);
	emit(c, a, "r1", "firing", now - 60000);
	cr_assert_eq(wait_all_delivered(1, 15), 1);
	/* the same firing again (a re-emission): nothing to tell */
	emit(c, a, "r1", "firing", now - 60000);
	sleep(2);
	cr_assert_eq(delivered(a, "firing"), 1, "a repeat of a delivered state was sent again");
	/* its resolution was lost; the next incident fires with a new startsAt */
	emit(c, a, "r1", "firing", now);
	for (int i = 0; i < 60 && delivered(a, "firing") < 2; i++)
		usleep(250000);
	cr_assert_eq(delivered(a, "firing"), 2, "the second incident was dropped as a duplicate");
	cr_assert_eq(key_of(a, k1, sizeof(k1), 0), 0);
	cr_assert_eq(key_of(a, k2, sizeof(k2), 1), 0);
	cr_assert_str_neq(k1, k2, "two incidents share an idempotency key");
	cr_assert(wait_pending(c, 0, 10));
	conn_close(c);
}

Test(restarts, wrong_type_alert_stream_backs_off_and_recovers, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct conn *c = conn();
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	char a[17], line[1024];
	int lines = 0, named = 0;
	FILE *f;

	fp_of(0, a);
	freeReplyObject(conn_commandf(c, NULL, "SET fl:alerts not-a-stream"));
	start_alerter(0, cfg_up);
	sleep(4);
	f = fopen(alerter_log, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		lines++;
		named |= strstr(line, "not a stream") != NULL;
	}
	fclose(f);
	cr_log_info("%d log lines in 4 s with a wrong-type fl:alerts", lines);
	cr_assert_lt(lines, 20, "%d log lines in 4 s: a busy loop", lines);
	cr_assert(named, "the log does not say fl:alerts is not a stream");
	/* the operator fixes it: alerts flow without a restart */
	freeReplyObject(conn_commandf(c, NULL, "DEL fl:alerts"));
	freeReplyObject(conn_commandf(c, NULL, "XGROUP CREATE fl:alerts alerter 0 MKSTREAM"));
	emit(c, a, "r1", "firing", now);
	cr_assert_eq(wait_all_delivered(1, 30), 1, "no delivery after the key was fixed");
	conn_close(c);
}

Test(restarts, group_destroyed_under_a_running_alerter_is_recreated, .init = setup,
     .fini = teardown, .timeout = 60)
{
	struct conn *c = conn();
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	char a[17];

	fp_of(0, a);
	start_alerter(0, cfg_up);
	sleep(1);
	freeReplyObject(conn_commandf(c, NULL, "XGROUP DESTROY fl:alerts alerter"));
	sleep(1);
	emit(c, a, "r1", "firing", now);
	cr_assert_eq(wait_all_delivered(1, 30), 1, "no delivery after NOGROUP");
	conn_close(c);
}

Test(restarts, redis_password_never_reaches_the_log, .init = setup, .fini = teardown,
     .timeout = 30)
{
	char url[400], cfg[300], line[1024];
	int leaked = 0, lines = 0;
	FILE *f;

	snprintf(url, sizeof(url), "%s?password=hunter2secret", redis.url);
	snprintf(cfg, sizeof(cfg), "%s/pw.yaml", redis.dir);
	f = fopen(cfg, "w");
	fprintf(f, "redis: \"%s\"\nreceivers:\n  - name: hook\n    url: http://127.0.0.1:%d/\n",
		url, rx.port);
	fclose(f);
	start_alerter(0, cfg);
	sleep(2);
	stop_alerter(0, SIGTERM);
	f = fopen(alerter_log, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		lines++;
		leaked |= strstr(line, "hunter2secret") != NULL;
	}
	fclose(f);
	cr_assert_gt(lines, 0, "the alerter logged nothing");
	cr_assert_not(leaked, "the Redis password is in the log");
}

/* ---- the rules engine ----------------------------------------------------- */

/*
 * A feeder thread writes a snapshot of hosts hot-1 and cool-1 every 250 ms
 * through the probe's store; hot-1's drive is at 70 C while `hot` is set.
 */
static volatile int hot, feeding, holding;	/* holding: a probe that drains late */
static pthread_t feeder;
static pid_t rules;
/* --shard workers a test starts; killed (after a SIGCONT) by rules_teardown. */
static pid_t workers[2];
static char rules_yaml[300];

static void *feed(void *arg)
{
	struct store_opts o = { .url = redis.url, .timeout_ns = NSEC_PER_SEC };
	char err[256];
	struct store *st = store_open(&o, err, sizeof(err));
	uint64_t seq = 0;

	struct snapshot held[400];
	int nheld = 0;

	(void)arg;
	while (st && feeding) {
		uint64_t now = time_wall_ns() / NSEC_PER_MSEC;

		for (int h = 0; h < 2; h++) {
			struct snapshot s;

			snapshot_init(&s, h ? "cool-1" : "hot-1", now, 250, seq, 1);
			snapshot_add_gauge(&s, "drive.temperature_c", !h && hot ? 70 : 30,
					   "device", "sda", NULL);
			if (holding && nheld < 400) {
				held[nheld++] = s;	/* spooled, not yet sent */
				continue;
			}
			for (int i = 0; i < nheld; i++) {
				store_put_snapshot(st, &held[i]);
				snapshot_free(&held[i]);
			}
			nheld = 0;
			store_put_snapshot(st, &s);
			snapshot_free(&s);
		}
		seq++;
		usleep(250000);
	}
	for (int i = 0; i < nheld; i++)
		snapshot_free(&held[i]);
	if (st)
		store_close(st);
	return NULL;
}

/*
 * A faultline-rules process on the test's Redis and rules, stderr to the
 * log; with id, a --shard worker of that name.  Returns its pid.
 */
static pid_t spawn_rules(const char *id)
{
	char bin[256];
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/faultline-rules", test_out_dir());
	pid = fork();
	if (pid == 0) {
		int fd = open(alerter_log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		dup2(fd, 2);
		if (id)
			execl(bin, bin, "--rules", rules_yaml, "--redis", redis.url, "--interval",
			      "250ms", "--stale", "30s", "--topology", "/dev/null", "--shard",
			      "--worker-id", id, (char *)NULL);
		else
			execl(bin, bin, "--rules", rules_yaml, "--redis", redis.url, "--interval",
			      "250ms", "--stale", "30s", "--topology", "/dev/null", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void start_rules(void)
{
	rules = spawn_rules(NULL);
}

static void stop_rules(int sig)
{
	if (rules > 0) {
		kill(rules, sig);
		waitpid(rules, NULL, 0);
	}
	rules = 0;
}

static void rules_setup(void)
{
	FILE *f;

	setup();
	snprintf(rules_yaml, sizeof(rules_yaml), "%s/rules.yaml", redis.dir);
	f = fopen(rules_yaml, "w");
	fputs("groups:\n  - name: t\n    rules:\n      - alert: DriveHot\n"
	      "        expr: faultline_drive_temperature_celsius > 60\n        severity: page\n", f);
	fclose(f);
	hot = 0;
	holding = 0;
	feeding = 1;
	pthread_create(&feeder, NULL, feed, NULL);
}

static void rules_teardown(void)
{
	stop_rules(SIGKILL);
	for (int i = 0; i < 2; i++)
		if (workers[i] > 0) {
			kill(workers[i], SIGCONT);
			kill(workers[i], SIGKILL);
			waitpid(workers[i], NULL, 0);
			workers[i] = 0;
		}
	feeding = 0;
	pthread_join(feeder, NULL);
	teardown();
}

struct drive_hot_arg {
	const char *status;
	char (*starts)[40];
	int max, n;
};

static void drive_hot_cb(int req, json_object *a, void *arg)
{
	struct drive_hot_arg *d = arg;
	json_object *l;
	const char *st = rx_field(a, "status"), *name;

	(void)req;
	if (!json_object_object_get_ex(a, "labels", &l) || !(name = rx_field(l, "alertname")) ||
	    strcmp(name, "DriveHot") || !st || strcmp(st, d->status))
		return;
	if (d->starts && d->n < d->max && rx_field(a, "startsAt"))
		snprintf(d->starts[d->n], 40, "%s", rx_field(a, "startsAt"));
	d->n++;
}

/* Notifications answered 200 that carried DriveHot with status, and their startsAt. */
static int drive_hot(const char *status, char starts[][40], int max)
{
	struct drive_hot_arg d = { status, starts, max, 0 };

	rx_each_alert(drive_hot_cb, &d);
	return d.n;
}

static int wait_drive_hot(const char *status, int n, int seconds)
{
	for (int i = 0; i < seconds * 4 && drive_hot(status, NULL, 0) < n; i++)
		usleep(250000);
	return drive_hot(status, NULL, 0);
}

static long long checkpointed(struct conn *c)
{
	redisReply *r = conn_commandf(c, NULL, "HLEN {fl:alerts}:rules");
	long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

	if (r)
		freeReplyObject(r);
	return n;
}

Test(restarts, rules_killed_while_firing_resolve_and_fire_again_after_restart,
     .init = rules_setup, .fini = rules_teardown, .timeout = 120)
{
	struct conn *c = conn();
	char starts[4][40];

	start_alerter(0, cfg_up);
	start_rules();
	hot = 1;
	cr_assert_eq(wait_drive_hot("firing", 1, 20), 1, "the first incident was not paged");
	stop_rules(SIGKILL);
	hot = 0;	/* the fault ends while the engine is down */
	sleep(2);
	start_rules();
	cr_assert_eq(wait_drive_hot("resolved", 1, 20), 1, "the resolution was never sent");
	cr_assert_eq(drive_hot("firing", NULL, 0), 1, "the ended incident was paged again");
	for (int i = 0; i < 20 && checkpointed(c) != 0; i++)
		usleep(250000);
	cr_assert_eq(checkpointed(c), 0, "a resolved alert stays in the checkpoint");
	hot = 1;	/* the next incident */
	cr_assert_eq(wait_drive_hot("firing", 2, 20), 2, "the second incident was not paged");
	drive_hot("firing", starts, 4);
	cr_assert_str_neq(starts[0], starts[1], "two incidents with one startsAt");
	conn_close(c);
}

/*
 * faultline-rules killed with -9 8 s into a 12 s `for` and started again
 * 3 s later: the alert keeps the 8 s it had spent pending (the checkpoint
 * holds pending alerts) and fires about 4 s after the restart, ~15 s after
 * the fault, not 12 s after the restart (~23 s: the timer started again).
 */
Test(restarts, rules_killed_inside_a_for_keep_its_timer, .init = rules_setup,
     .fini = rules_teardown, .timeout = 90)
{
	uint64_t t0;
	double took;
	FILE *f = fopen(rules_yaml, "w");

	fputs("groups:\n  - name: t\n    rules:\n      - alert: DriveHot\n"
	      "        expr: faultline_drive_temperature_celsius > 60\n        for: 12s\n"
	      "        severity: page\n", f);
	fclose(f);
	start_alerter(0, cfg_up);
	start_rules();
	sleep(2);	/* running, and the hosts known */
	t0 = time_mono_ns();
	hot = 1;
	while (time_mono_ns() - t0 < 8 * NSEC_PER_SEC)
		usleep(100000);
	cr_assert_eq(drive_hot("firing", NULL, 0), 0, "fired inside its for");
	stop_rules(SIGKILL);
	sleep(3);
	start_rules();
	cr_assert_eq(wait_drive_hot("firing", 1, 30), 1, "never fired after the restart");
	took = (double)(time_mono_ns() - t0) / 1e9;
	cr_log_info("fired %.1f s after the fault (12 s for, 3 s down)", took);
	cr_assert_lt(took, 19.5, "fired %.1f s after the fault: the restart reset its `for` timer",
		     took);
	cr_assert_gt(took, 14.0, "fired %.1f s after the fault: the 3 s down counted as pending",
		     took);
}

static pid_t start_worker(int slot, const char *id)
{
	return workers[slot] = spawn_rules(id);
}

/* The worker holding partition p's lease ("" when none). */
static void lease_holder(struct conn *c, int p, char *out, size_t len)
{
	redisReply *r = conn_commandf(c, NULL, "GET {fl:alerts}:lease:%d", p);

	snprintf(out, len, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "");
	if (r)
		freeReplyObject(r);
}

/* Whether worker id holds any partition lease. */
static int holds_any(struct conn *c, const char *id)
{
	char who[160], want[80];

	snprintf(want, sizeof(want), "%s|", id);
	for (int p = 0; p <= 64; p++) {
		lease_holder(c, p, who, sizeof(who));
		if (!strncmp(who, want, strlen(want)))
			return 1;
	}
	return 0;
}

/*
 * A sharded worker paused past its lease (SIGSTOP) while another takes its
 * partitions, pages DriveHot and leaves; when the first wakes its leases
 * are free and it takes them again.  Before epochs it did not notice it had
 * lost them: it kept its stale state (no DriveHot), paged the same fault a
 * second time with a new startsAt and overwrote the other's checkpoint, so
 * DriveHot's resolution was never sent.  Now the new epoch makes it read
 * the checkpoint the other left: one page, one resolution.
 */
Test(restarts, a_worker_paused_past_its_lease_does_not_overwrite_its_successor,
     .init = rules_setup, .fini = rules_teardown, .timeout = 120)
{
	struct conn *c = conn();
	pid_t a, b;

	start_alerter(0, cfg_up);
	a = start_worker(0, "wa");
	for (int i = 0; i < 100 && !holds_any(c, "wa"); i++)
		usleep(100000);
	cr_assert(holds_any(c, "wa"), "worker wa never took its partitions");
	sleep(1);
	kill(a, SIGSTOP);
	b = start_worker(1, "wb");
	for (int i = 0; i < 150 && !holds_any(c, "wb"); i++)
		usleep(100000);
	cr_assert(holds_any(c, "wb"), "worker wb never took over the paused one's partitions");
	sleep(1);
	hot = 1;
	cr_assert_eq(wait_drive_hot("firing", 1, 20), 1, "the successor did not page");
	sleep(1);	/* its checkpoint committed */
	kill(b, SIGTERM);	/* it leaves: its leases are free */
	waitpid(b, NULL, 0);
	workers[1] = 0;
	kill(a, SIGCONT);
	for (int i = 0; i < 100 && !holds_any(c, "wa"); i++)
		usleep(100000);
	sleep(3);	/* the woken worker evaluates the fault that still holds */
	cr_assert_eq(drive_hot("firing", NULL, 0), 1, "the woken worker paged the same fault "
		     "again (it kept its stale state)");
	hot = 0;
	cr_assert_eq(wait_drive_hot("resolved", 1, 20), 1, "the fault's resolution was never "
		     "sent (the successor's checkpoint was overwritten)");
	kill(a, SIGTERM);
	waitpid(a, NULL, 0);
	workers[0] = 0;
	conn_close(c);
}

Test(restarts, rules_restarted_while_firing_do_not_page_twice, .init = rules_setup,
     .fini = rules_teardown, .timeout = 90)
{
	struct conn *c = conn();
	char starts[4][40];

	start_alerter(0, cfg_up);
	start_rules();
	hot = 1;
	cr_assert_eq(wait_drive_hot("firing", 1, 20), 1);
	stop_rules(SIGKILL);
	sleep(1);
	start_rules();
	sleep(6);	/* still hot: the restarted engine knows it already fired */
	cr_assert_eq(drive_hot("firing", starts, 4), 1, "a restart paged the same incident again");
	cr_assert_eq(checkpointed(c), 1, "the firing alert is not checkpointed");
	cr_assert_eq(drive_hot("resolved", NULL, 0), 0);
	/* a clean stop and start, and a reload, keep it too */
	stop_rules(SIGTERM);
	start_rules();
	sleep(2);
	kill(rules, SIGHUP);
	sleep(4);
	cr_assert_eq(drive_hot("firing", NULL, 0), 1);
	hot = 0;
	cr_assert_eq(wait_drive_hot("resolved", 1, 20), 1);
	conn_close(c);
}

Test(restarts, a_bad_reload_keeps_the_engine_and_its_alerts, .init = rules_setup,
     .fini = rules_teardown, .timeout = 90)
{
	struct conn *c = conn();
	FILE *f;
	int status;

	start_alerter(0, cfg_up);
	start_rules();
	hot = 1;
	cr_assert_eq(wait_drive_hot("firing", 1, 20), 1);
	/* 20,000 unary minuses: used to overflow the parser's stack on SIGHUP */
	f = fopen(rules_yaml, "w");
	fputs("groups:\n  - name: t\n    rules:\n      - alert: DriveHot\n        expr: ", f);
	for (int i = 0; i < 20000; i++)
		fputc('-', f);
	fputs("faultline_drive_temperature_celsius > 60\n", f);
	fclose(f);
	kill(rules, SIGHUP);
	sleep(2);
	cr_assert_eq(waitpid(rules, &status, WNOHANG), 0, "faultline-rules died on a bad reload");
	hot = 0;
	cr_assert_eq(wait_drive_hot("resolved", 1, 20), 1, "the old rules stopped working");
	conn_close(c);
}

/* ---- the probe ------------------------------------------------------------ */

static pid_t probe;
static char probe_yaml[300], spool_file[300];

/* The probe's config; metrics_port 0: no /metrics. */
static void write_probe_cfg_metrics(int bpf, int metrics_port)
{
	char metrics[32] = "\"\"";
	FILE *f;

	if (metrics_port)
		snprintf(metrics, sizeof(metrics), "127.0.0.1:%d", metrics_port);

	snprintf(probe_yaml, sizeof(probe_yaml), "%s/probe.yaml", redis.dir);
	snprintf(spool_file, sizeof(spool_file), "%s/probe.spool", redis.dir);
	f = fopen(probe_yaml, "w");
	fprintf(f, "host: spool-1\ninterval: 250ms\nredis: \"%s\"\nmetrics_addr: %s\n"
		"bpf: %s\nspool:\n  path: %s\nblock: {enabled: false}\n"
		"profile: {enabled: %s}\n", redis.url, metrics, bpf ? "true" : "false",
		spool_file, bpf ? "true" : "false");
	fclose(f);
}

static void write_probe_cfg(int bpf)
{
	write_probe_cfg_metrics(bpf, 0);
}

static void start_probe(void)
{
	char bin[256];

	snprintf(bin, sizeof(bin), "%s/faultline-probe", test_out_dir());
	probe = fork();
	if (probe == 0) {
		int fd = open(alerter_log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		dup2(fd, 2);
		execl(bin, bin, "--config", probe_yaml, "--log-level", "info", (char *)NULL);
		_exit(127);
	}
}

/* Stop the probe with sig; its exit status as waitpid gives it. */
static int stop_probe(int sig)
{
	int status = -1;

	if (probe > 0) {
		kill(probe, sig);
		waitpid(probe, &status, 0);
	}
	probe = 0;
	return status;
}

static void probe_teardown(void)
{
	stop_probe(SIGKILL);
	teardown();
}

static long long stream_len(struct conn *c, uint64_t from_ms, uint64_t to_ms)
{
	return test_s1_count(c, "spool-1", from_ms, to_ms);
}

/* A probe with its BPF collectors (and so its profiler and drive threads). */
static int probe_with_threads(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s/faultline-probe --once --metrics-addr '' --interval 10ms "
		 ">/dev/null 2>&1", test_out_dir());
	return test_is_root() && test_sh("%s", cmd) == 0;
}

Test(restarts, probe_stops_cleanly_on_sigterm, .init = setup, .fini = probe_teardown,
     .timeout = 60)
{
	int bpf = probe_with_threads(), status;

	write_probe_cfg(bpf);
	for (int round = 0; round < 3; round++) {
		start_probe();
		sleep(3);	/* the drive, profile and store threads exist by now */
		status = stop_probe(SIGTERM);
		cr_assert(WIFEXITED(status), "round %d: killed by signal %d instead of stopping "
			  "(exit 128+%d)", round, WIFSIGNALED(status) ? WTERMSIG(status) : 0,
			  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		cr_assert_eq(WEXITSTATUS(status), 0, "round %d: exit %d", round,
			     WEXITSTATUS(status));
	}
	if (!bpf)
		cr_log_warn("BPF does not load here: tested without the profiler thread");
}

/* The last n bytes of the probe's (and alerters') log, for a failure message. */
static const char *log_tail(long n)
{
	static char buf[8192];
	FILE *f = fopen(alerter_log, "r");
	size_t got = 0;

	buf[0] = 0;
	if (!f)
		return "(no log)";
	if (n >= (long)sizeof(buf))
		n = sizeof(buf) - 1;
	if (fseek(f, -n, SEEK_END))
		rewind(f);
	got = fread(buf, 1, sizeof(buf) - 1, f);
	buf[got] = 0;
	fclose(f);
	return buf;
}

/*
 * Wait up to secs for the probe's first snapshot (its /metrics answers with
 * one).  0, or -1 if none came.
 */
static int wait_first_snapshot(int port, int secs)
{
	static char buf[1 << 16];

	for (int i = 0; i < secs * 20; i++) {
		if (test_scrape(port, buf, sizeof(buf)) > 0 &&
		    strstr(buf, "\nfaultline_probe_store_spooled "))
			return 0;
		usleep(50000);
	}
	return -1;
}

Test(restarts, probe_restarted_during_an_outage_loses_nothing, .init = setup,
     .fini = probe_teardown, .timeout = 90)
{
	struct conn *c;
	uint64_t down_from, down_to, stopped, asked;
	struct stat st;
	long long during, before;
	long count, missing;
	int port = test_free_port();

	write_probe_cfg_metrics(0, port);
	start_probe();
	cr_assert_eq(wait_first_snapshot(port, 30), 0, "the probe took no snapshot in 30 s; its "
		     "log:\n%s", log_tail(4000));
	sleep(1);
	test_redis_stop(&redis, 0);	/* Redis away (its data kept) */
	down_from = time_wall_ns() / NSEC_PER_MSEC;
	sleep(3);
	asked = time_wall_ns() / NSEC_PER_MSEC;
	cr_assert_eq(WEXITSTATUS(stop_probe(SIGTERM)), 0);	/* waits 3 s for Redis */
	stopped = time_wall_ns() / NSEC_PER_MSEC;
	cr_assert_eq(stat(spool_file, &st), 0, "nothing was saved to the spool file");
	cr_assert_eq(st.st_mode & 0777, 0600, "the spool file is mode %o", st.st_mode & 0777);
	start_probe();			/* a restart while Redis is still away */
	/* 2 s from its first snapshot (a busy machine may take seconds to start it) */
	cr_assert_eq(wait_first_snapshot(port, 30), 0, "the restarted probe took no snapshot in "
		     "30 s; its log:\n%s", log_tail(4000));
	sleep(2);
	down_to = time_wall_ns() / NSEC_PER_MSEC;
	cr_assert_eq(test_redis_restart(&redis), 0);
	sleep(4);
	cr_assert_eq(WEXITSTATUS(stop_probe(SIGTERM)), 0);
	c = conn();
	/* what the first run took during the outage, and the second */
	before = stream_len(c, down_from, stopped);
	during = stream_len(c, stopped, down_to);
	cr_assert_eq(test_snapshot_gaps(redis.url, "spool-1", down_from - 1000, asked, &count,
					&missing), 0);
	cr_log_info("%lld snapshots before the restart (%ld missing in sequence), %lld after it, "
		    "of a %.1f s outage", before, missing, during,
		    (double)(down_to - down_from) / 1000);
	/* nothing the first run took is missing, and it took some (250 ms interval) */
	cr_assert_eq(missing, 0, "%ld snapshots taken before the restart were lost", missing);
	cr_assert_geq(before, (long long)((asked - down_from) / 250) / 2,
		      "only %lld snapshots taken before the restart survived it", before);
	/* what the restarted probe took while Redis was away: all of it, in sequence */
	cr_assert_eq(test_snapshot_gaps(redis.url, "spool-1", stopped, down_to, &count,
					&missing), 0);
	cr_assert_eq(missing, 0, "%ld snapshots the restarted probe took were lost; its log:\n%s",
		     missing, log_tail(4000));
	cr_assert_geq(during, 4, "the restarted probe's own spool was lost (%lld in Redis); "
		      "its log:\n%s", during, log_tail(4000));
	cr_assert_neq(stat(spool_file, &st), 0, "the spool file was not removed once sent");
	conn_close(c);
}

/* Append an entry with id ms (field f, a placeholder value) to key. */
static void xadd_at(struct conn *c, const char *key, uint64_t ms, const char *f)
{
	redisReply *r = conn_commandf(c, key, "XADD %s %llu-0 %s x", key, (unsigned long long)ms,
				      f);

	cr_assert(r && r->type == REDIS_REPLY_STRING, "XADD %s: %s", key,
		  r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
	freeReplyObject(r);
}

/* Start the probe, wait for its start-up line, stop it; its log is in alerter_log. */
static void probe_until_started(void)
{
	FILE *f = fopen(alerter_log, "w");	/* a log of this start alone */
	int started = 0;

	cr_assert(f, "%s", alerter_log);
	fclose(f);
	start_probe();
	for (int i = 0; i < 200 && !started; i++) {
		usleep(50000);
		started = strstr(log_tail(8000), "probing host spool-1") != NULL;
	}
	stop_probe(SIGTERM);
	cr_assert(started, "the probe did not start: %s", log_tail(2000));
}

/*
 * A probe that starts with a shorter retention than the history its host
 * holds (an upgrade: retention.s3600's default went from 90 days to 7)
 * says which streams it is about to trim, and how to keep them; streams
 * within their retention, and a retention raised to cover the history, are
 * not named.
 */
Test(restarts, a_shorter_retention_says_what_it_will_trim, .init = setup,
     .fini = probe_teardown, .timeout = 60)
{
	struct conn *c = conn();
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC, day = 86400000;
	char key[200];
	const char *log;

	key_chunks(key, sizeof(key), "spool-1", 3600);
	xadd_at(c, key, (now - 90 * day) - (now - 90 * day) % day, "c");	/* 90 days of hours */
	key_profile(key, sizeof(key), "spool-1", 0);
	xadd_at(c, key, now - 3 * 3600000, "d");		/* p10: 3 h, kept 1 h */
	key_profile(key, sizeof(key), "spool-1", 1);
	xadd_at(c, key, now - 2 * day, "d");			/* p3600: 2 d, kept 7 d */
	conn_close(c);

	write_probe_cfg(0);
	probe_until_started();
	log = log_tail(8000);
	cr_assert(strstr(log, "spool-1's s3600 holds 90d of history") &&
		  strstr(log, "retention.s3600 is 7d") && strstr(log, "raise retention.s3600") &&
		  strstr(log, "was 90d in earlier releases"), "%s", log);
	cr_assert(strstr(log, "spool-1's p10 holds") && strstr(log, "retention.p10 is 1h"),
		  "%s", log);
	cr_assert_null(strstr(log, "p3600 holds"), "p3600 is within its 7 days: %s", log);
	cr_assert_null(strstr(log, "s1 holds"), "%s", log);

	/*
	 * history the retention covers is not named; 10 days of hourly profiles
	 * (kept 7) are, which shows the look was taken this time too
	 */
	{
		FILE *f = fopen(probe_yaml, "a");

		fprintf(f, "retention: {s3600: 120d, p10: 4h}\n");
		fclose(f);
	}
	c = conn();
	key_profile_chunks(key, sizeof(key), "spool-1", 1);	/* an ended day's span */
	xadd_at(c, key, (now - 10 * day) - (now - 10 * day) % day, "c");
	conn_close(c);
	probe_until_started();
	log = log_tail(8000);
	cr_assert(strstr(log, "spool-1's p3600 holds") && strstr(log, "retention.p3600 is 7d"),
		  "the second look was not taken: %s", log);
	cr_assert_null(strstr(log, "spool-1's s3600 holds"), "s3600 is within 120 days: %s", log);
	cr_assert_null(strstr(log, "spool-1's p10 holds"), "p10 is within 4 hours: %s", log);
}

Test(restarts, probe_threads_keep_only_the_capabilities_they_need, .init = setup,
     .fini = probe_teardown, .timeout = 60)
{
	char path[512], line[256];
	int threads = 0, powerless = 0, port = test_free_port();
	FILE *f;
	DIR *d;
	struct dirent *de;

	if (!probe_with_threads())
		cr_skip_test("needs root and BPF (the capabilities to drop)");
	/*
	 * with /metrics on and remote write to a port nothing listens on: both
	 * threads face the network and must hold nothing
	 */
	write_probe_cfg_metrics(1, port);
	f = fopen(probe_yaml, "a");
	cr_assert_not_null(f);
	fprintf(f, "remote_write: {url: \"http://127.0.0.1:%d/api/v1/write\", tier: 1s}\n",
		test_free_port());
	fclose(f);
	start_probe();
	/* its threads exist once it has taken a snapshot (a busy machine may take seconds) */
	cr_assert_eq(wait_first_snapshot(port, 30), 0, "the probe took no snapshot in 30 s; its "
		     "log:\n%s", log_tail(4000));
	sleep(1);
	snprintf(path, sizeof(path), "/proc/%d/task", probe);
	d = opendir(path);
	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		unsigned long long eff = 0, bnd = 0;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", probe, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "CapEff: %llx", &eff);
			sscanf(line, "CapBnd: %llx", &bnd);
		}
		fclose(f);
		threads++;
		/* CAP_KILL 5, CAP_SETUID 7, CAP_NET_ADMIN 12, CAP_NET_RAW 13, CAP_SYS_MODULE 16 */
		static const int never[] = { 5, 7, 12, 13, 16 };

		for (int i = 0; i < 5; i++) {
			cr_assert_eq(eff & (1ULL << never[i]), 0, "thread %s has capability %d",
				     de->d_name, never[i]);
			cr_assert_eq(bnd & (1ULL << never[i]), 0, "thread %s could regain %d",
				     de->d_name, never[i]);
		}
		if (atoi(de->d_name) == probe)
			cr_assert(eff & (1ULL << 39), "the main thread lost CAP_BPF");
		powerless += eff == 0;
	}
	closedir(d);
	cr_assert_geq(threads, 5, "expected the main, store, /metrics, remote write and "
		      "collector threads");
	/* the store writer, its compactor, /metrics and remote write hold no capability at all */
	cr_assert_geq(powerless, 3, "%d thread(s) without capabilities; the store writer, "
		      "/metrics and remote write should be", powerless);
	cr_assert_eq(WEXITSTATUS(stop_probe(SIGTERM)), 0);
}

Test(restarts, rules_count_unreadable_entries_on_metrics, .init = rules_setup,
     .fini = rules_teardown, .timeout = 60)
{
	struct conn *c = conn();
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	char bin[256], addr[64], *buf = malloc(1 << 16);
	int port = test_free_port(), found = 0;

	freeReplyObject(conn_commandf(c, NULL, "SET fl:{bad-1}:host {}"));
	for (int i = 0; i < 4; i++)
		freeReplyObject(conn_commandf(c, NULL, "XADD fl:{bad-1}:s1 %llu-0 d garbage",
					     (unsigned long long)(now + (uint64_t)i)));
	snprintf(bin, sizeof(bin), "%s/faultline-rules", test_out_dir());
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	rules = fork();
	if (rules == 0) {
		int fd = open(alerter_log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		dup2(fd, 2);
		execl(bin, bin, "--rules", rules_yaml, "--redis", redis.url, "--interval", "250ms",
		      "--topology", "/dev/null", "--metrics-addr", addr, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 40 && !found; i++) {
		usleep(250000);
		found = test_scrape(port, buf, 1 << 16) > 0 &&
			strstr(buf, "faultline_rules_host_undecodable_entries_total{host=\"bad-1\"} 4\n");
	}
	cr_assert(found, "no count of bad-1's unreadable entries on /metrics: %.2000s", buf);
	cr_assert(strstr(buf, "faultline_rules_undecodable_entries_total 4\n"), "%.2000s", buf);
	cr_assert(strstr(buf, "faultline_rules_redis_up 1\n"));
	/* its rule groups, under Prometheus' names for its own */
	{
		char want[512];
		const char *at;

		snprintf(want, sizeof(want), "prometheus_rule_evaluations_total{rule_group=\"%s;",
			 rules_yaml);
		at = strstr(buf, want);
		cr_assert(at, "no %s in %.3000s", want, buf);
		cr_assert(atoi(strchr(at, '}') + 2) > 0, "no evaluations counted: %.200s", at);
		cr_assert(strstr(buf, "prometheus_rule_evaluation_failures_total{rule_group="));
		cr_assert(strstr(buf, "prometheus_rule_group_last_duration_seconds{rule_group="));
		cr_assert(strstr(buf, "prometheus_config_last_reload_successful 1\n"), "%.3000s", buf);
		cr_assert(strstr(buf, "prometheus_notifications_queue_length "));
	}
	free(buf);
	conn_close(c);
}

/* Notifications answered 200 that carried HostSilent (any status). */
static int host_silent_pages(void)
{
	int n = 0;

	pthread_mutex_lock(&rx.lock);
	for (int i = 0; i < rx.n; i++)
		n += rx.req[i].status == 200 && strstr(rx.req[i].body, "\"HostSilent\"") != NULL;
	pthread_mutex_unlock(&rx.lock);
	return n;
}

Test(restarts, no_host_silent_while_spools_drain_after_an_outage, .init = rules_setup,
     .fini = rules_teardown, .timeout = 90)
{
	char bin[256];

	start_alerter(0, cfg_up);
	snprintf(bin, sizeof(bin), "%s/faultline-rules", test_out_dir());
	rules = fork();
	if (rules == 0) {
		int fd = open(alerter_log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		dup2(fd, 2);
		execl(bin, bin, "--rules", rules_yaml, "--redis", redis.url, "--interval", "250ms",
		      "--stale", "2s", "--topology", "/dev/null", (char *)NULL);
		_exit(127);
	}
	sleep(3);
	/*
	 * Redis away for 8 s; the probes spool, and drain 5 s after it is back
	 * (a probe at the end of its reconnect backoff, a big spool)
	 */
	holding = 1;
	test_redis_stop(&redis, 0);
	sleep(8);
	cr_assert_eq(test_redis_restart(&redis), 0);
	sleep(5);
	holding = 0;
	sleep(7);
	cr_assert_eq(host_silent_pages(), 0, "HostSilent paged for hosts whose spools were "
		     "still draining");
	/* and a host that really stops is still paged once the grace is over */
	feeding = 0;
	pthread_join(feeder, NULL);
	for (int i = 0; i < 60 && host_silent_pages() == 0; i++)
		usleep(500000);
	cr_assert_gt(host_silent_pages(), 0, "a host that stopped was never paged");
	feeding = 1;	/* rules_teardown joins the feeder again: give it one to join */
	pthread_create(&feeder, NULL, feed, NULL);
}

/* ---- systemd notification ------------------------------------------------- */

/* A fake systemd: a datagram socket; collects what arrives for `ms`. */
static int notify_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { 0, 200000 };

	cr_assert_lt(strlen(path), sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	unlink(path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void notify_collect(int fd, int ms, char *out, size_t len)
{
	uint64_t until = time_mono_ns() + (uint64_t)ms * NSEC_PER_MSEC;
	size_t off = strlen(out);

	while (time_mono_ns() < until && off + 64 < len) {
		ssize_t n = recv(fd, out + off, len - off - 2, 0);

		if (n > 0) {
			off += (size_t)n;
			out[off++] = '|';
			out[off] = '\0';
		}
	}
}

static int count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

Test(restarts, every_daemon_tells_systemd_ready_watchdog_and_stopping, .init = rules_setup,
     .fini = rules_teardown, .timeout = 90)
{
	char sock[300], got[8192], bin[256], cfg[300];
	static const char *const names[] = { "faultline-alerter", "faultline-rules",
					     "faultline-probe" };

	snprintf(sock, sizeof(sock), "%s/notify.sock", redis.dir);
	write_probe_cfg(0);
	for (int i = 0; i < 3; i++) {
		int fd = notify_listen(sock);
		pid_t pid;

		snprintf(bin, sizeof(bin), "%s/%s", test_out_dir(), names[i]);
		snprintf(cfg, sizeof(cfg), "%s", i == 0 ? cfgpath_up() : i == 1 ? rules_yaml :
			 probe_yaml);
		pid = fork();
		if (pid == 0) {
			int lf = open(alerter_log, O_WRONLY | O_CREAT | O_APPEND, 0600);

			dup2(lf, 2);
			setenv("NOTIFY_SOCKET", sock, 1);
			setenv("WATCHDOG_USEC", "400000", 1);
			if (i == 1)
				execl(bin, bin, "--rules", cfg, "--redis", redis.url, "--interval",
				      "250ms", "--topology", "/dev/null", (char *)NULL);
			else
				execl(bin, bin, "--config", cfg, (char *)NULL);
			_exit(127);
		}
		got[0] = '\0';
		notify_collect(fd, 3000, got, sizeof(got));
		kill(pid, SIGTERM);
		notify_collect(fd, 1500, got, sizeof(got));
		waitpid(pid, NULL, 0);
		close(fd);
		cr_log_info("%s told systemd: %.300s", names[i], got);
		cr_assert(strstr(got, "READY=1"), "%s never said READY=1: %s", names[i], got);
		cr_assert_geq(count_of(got, "WATCHDOG=1"), 3, "%s fed the watchdog %d times in 3 s "
			      "(every 0.2 s wanted)", names[i], count_of(got, "WATCHDOG=1"));
		cr_assert(strstr(got, "STOPPING=1"), "%s did not say STOPPING=1 on SIGTERM",
			  names[i]);
	}
}

Test(restarts, events_redis_refuses_are_sent_again_not_dropped, .init = rules_setup,
     .fini = rules_teardown, .timeout = 60)
{
	struct conn *c = conn();

	freeReplyObject(conn_commandf(c, NULL, "SET fl:alerts not-a-stream"));
	start_rules();
	hot = 1;
	sleep(3);	/* the firing event is refused (WRONGTYPE) every interval */
	freeReplyObject(conn_commandf(c, NULL, "DEL fl:alerts"));
	start_alerter(0, cfg_up);
	cr_assert_eq(wait_drive_hot("firing", 1, 20), 1,
		     "a firing event Redis refused once was dropped, never paged");
	conn_close(c);
}
