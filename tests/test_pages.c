/*
 * test_pages.c - pages you can trust, with real processes: a real Redis,
 * real alerters (two at once, killed with -9, paused with SIGSTOP), a
 * real HTTP receiver on loopback.  Each case paged wrongly, lost a page or
 * reopened an incident before the alert groups' state moved into Redis
 * (store/alert_group.h):
 *
 *   - an alert that resolves while silenced is not re-sent as firing
 *     once the silence expires (a silence mutes notifications, not state);
 *   - a PagerDuty incident stays open while part of its group fires,
 *     across a kill -9 of the alerter that opened it;
 *   - a notification retried after a 429 is not sent once a peer alerter
 *     has delivered a newer state of its group;
 *   - a storm of 150,000 events while no alerter runs: nothing trimmed,
 *     AlertDeliveryBacklog raised, every alert delivered once one runs.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "core/strmap.h"
#include "core/timeutil.h"
#include "model/alert.h"
#include "rules/shard/outbox.h"
#include "store/alert_checkpoint.h"
#include "store/alert_stream.h"
#include "store/conn.h"
#include "store/silence.h"
#include "tests/helpers.h"
#include "tests/receiver.h"

static struct test_redis redis;
static char log_path[300];
static const char *group_interval = "500ms";
static pid_t procs[3];

static void setup(void)
{
	cr_assert_eq(test_redis_start(&redis), 0);
	rx_start();
	snprintf(log_path, sizeof(log_path), "%s/procs.log", redis.dir);
}

static void stop(int i, int sig)
{
	if (procs[i] > 0) {
		kill(procs[i], SIGCONT);
		kill(procs[i], sig);
		waitpid(procs[i], NULL, 0);
	}
	procs[i] = 0;
}

static void teardown(void)
{
	for (int i = 0; i < 3; i++)
		stop(i, SIGKILL);
	rx_stop();
	test_redis_destroy(&redis);
}

/* An alerter config: consumer, receiver format, repeat interval, group_by. */
static void write_cfg(char *path, size_t len, const char *consumer, const char *format,
		      const char *repeat, const char *group_by)
{
	FILE *f;

	snprintf(path, len, "%s/%s.yaml", redis.dir, consumer);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "redis: %s\nconsumer: %s\n"
		"group_wait: 200ms\ngroup_interval: %s\nrepeat_interval: %s\n"
		"receivers:\n  - name: hook\n    url: http://127.0.0.1:%d/hook\n    timeout: 5s\n"
		"    format: %s\n%s"
		"routes:\n  - receiver: hook\n    group_by: [%s]\n"
		"delivery:\n  backoff_initial: 100ms\n  backoff_max: 500ms\n  claim_idle: 30s\n",
		redis.url, consumer, group_interval, repeat, rx.port, format,
		strcmp(format, "pagerduty") ? "" : "    routing_key: test-routing-key\n", group_by);
	fclose(f);
}

/* Start slot i: argv[0] is the binary under the build folder, stderr to the log. */
static void start(int i, const char *const *argv)
{
	char bin[256];

	snprintf(bin, sizeof(bin), "%s/%s", test_out_dir(), argv[0]);
	procs[i] = fork();
	if (procs[i] == 0) {
		int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);

		dup2(fd, 2);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
}

static void start_alerter(int i, const char *cfg)
{
	const char *argv[] = { "faultline-alerter", "--config", cfg, "--log-level", "info", NULL };

	start(i, argv);
}

/* One event for alert fp of alertname name (label fp=fp), starting at starts_ms. */
static void emit(struct conn *c, const char *name, const char *fp, const char *status,
		 uint64_t starts_ms)
{
	char json[1024], t[40], e[40];
	int resolved = !strcmp(status, "resolved");

	snprintf(json, sizeof(json),
		 "{\"status\":\"%s\",\"fingerprint\":\"%s\",\"labels\":{\"alertname\":\"%s\","
		 "\"severity\":\"page\",\"fp\":\"%s\"},\"annotations\":{},\"startsAt\":\"%s\"%s%s%s}",
		 status, fp, name, fp, alert_format_time(starts_ms, t, sizeof(t)),
		 resolved ? ",\"endsAt\":\"" : "",
		 resolved ? alert_format_time(starts_ms + 1000, e, sizeof(e)) : "",
		 resolved ? "\"" : "");
	freeReplyObject(conn_commandf(c, NULL, "XADD fl:alerts * e %s", json));
}

/* Requests answered 200 after mono time since carrying fp with status. */
static int delivered_since(const char *fp, const char *status, uint64_t since)
{
	char want[80];
	int n = 0;

	snprintf(want, sizeof(want), "\"fingerprint\":\"%s\"", fp);
	pthread_mutex_lock(&rx.lock);
	for (int i = 0; i < rx.n; i++) {
		json_object *doc, *alerts;

		if (rx.req[i].status != 200 || rx.req[i].at_ns < since ||
		    !strstr(rx.req[i].body, want) || !(doc = json_tokener_parse(rx.req[i].body)))
			continue;
		if (json_object_object_get_ex(doc, "alerts", &alerts))
			for (size_t k = 0; k < json_object_array_length(alerts); k++) {
				json_object *a = json_object_array_get_idx(alerts, k);
				const char *f = rx_field(a, "fingerprint"), *s = rx_field(a, "status");

				n += f && s && !strcmp(f, fp) && !strcmp(s, status);
			}
		json_object_put(doc);
	}
	pthread_mutex_unlock(&rx.lock);
	return n;
}

static int wait_delivered(const char *fp, const char *status, uint64_t since, int seconds)
{
	for (int i = 0; i < seconds * 10; i++) {
		if (delivered_since(fp, status, since))
			return 1;
		usleep(100000);
	}
	return 0;
}

/*
 * X fires and is delivered; a silence covers it; X resolves under the
 * silence; the silence expires.  With repeat_interval 3s the old alerter
 * went on sending X *firing* every 3 s for ever (the silenced resolution
 * never reached its group).  Now the resolution is the group's state, muted
 * as Alertmanager mutes it: nothing about X follows, firing or resolved.
 */
Test(pages, a_resolve_under_a_silence_is_not_followed_by_stale_firings, .init = setup,
     .fini = teardown, .timeout = 90)
{
	const char *x = "5a1e000000000001";
	struct conn *c = test_redis_connect(&redis);
	struct silence s = { 0 };
	char cfg[300], err[256], m[64];
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC, resolved_at;

	write_cfg(cfg, sizeof(cfg), "solo", "alertmanager", "3s", "alertname");
	start_alerter(0, cfg);
	emit(c, "Quiet", x, "firing", now);
	cr_assert(wait_delivered(x, "firing", 0, 15), "X was never delivered firing");
	snprintf(m, sizeof(m), "fp=%s", x);
	cr_assert_eq(matcher_parse(&s.m[0], m, err, sizeof(err)), 0, "%s", err);
	s.nm = 1;
	s.starts_ms = time_wall_ns() / NSEC_PER_MSEC - 1000;
	s.ends_ms = s.starts_ms + 10000;
	snprintf(s.comment, sizeof(s.comment), "maintenance");
	cr_assert_eq(silence_add(c, &s, err, sizeof(err)), 0, "%s", err);
	matcher_free(&s.m[0]);
	sleep(6);	/* the alerter reloads silences every 5 s */
	resolved_at = time_mono_ns();
	emit(c, "Quiet", x, "resolved", now);
	/* the silence ends ~3 s from here; three repeat intervals after that */
	sleep(13);
	cr_assert_eq(delivered_since(x, "firing", resolved_at), 0,
		     "X was sent firing %d time(s) after it resolved under the silence",
		     delivered_since(x, "firing", resolved_at));
	cr_assert_eq(delivered_since(x, "resolved", resolved_at), 0,
		     "the muted resolution was sent");
	cr_assert_eq(test_alerts_pending(c, NULL), 0, "entries left unacknowledged");
	conn_close(c);
}

/* The PagerDuty event_action of every request answered 200, in order, into acts. */
static int pd_actions(char acts[][16], int max)
{
	int n = 0;

	pthread_mutex_lock(&rx.lock);
	for (int i = 0; i < rx.n && n < max; i++) {
		json_object *doc;
		const char *a;

		if (rx.req[i].status != 200 || !(doc = json_tokener_parse(rx.req[i].body)))
			continue;
		a = rx_field(doc, "event_action");
		snprintf(acts[n++], sizeof(acts[0]), "%s", a ? a : "?");
		json_object_put(doc);
	}
	pthread_mutex_unlock(&rx.lock);
	return n;
}

/*
 * A and B fire in one group: PagerDuty gets one incident (trigger).  The
 * alerter is killed with -9 and another starts; A resolves.  The old
 * alerter rebuilt the group from the new event only and sent "resolve":
 * PagerDuty closed the incident while B still fired.  Now the group is read
 * from Redis: still a trigger, and the incident resolves once B does.
 */
Test(pages, pagerduty_resolves_only_when_the_whole_group_has, .init = setup, .fini = teardown,
     .timeout = 90)
{
	const char *a = "5a1e00000000000a", *b = "5a1e00000000000b";
	struct conn *c = test_redis_connect(&redis);
	char cfg1[300], cfg2[300], acts[64][16];
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	int n;

	write_cfg(cfg1, sizeof(cfg1), "first", "pagerduty", "1h", "alertname");
	write_cfg(cfg2, sizeof(cfg2), "second", "pagerduty", "1h", "alertname");
	start_alerter(0, cfg1);
	emit(c, "Split", a, "firing", now);
	emit(c, "Split", b, "firing", now);
	cr_assert_geq(wait_requests(1, 15), 1);
	usleep(500000);
	stop(0, SIGKILL);
	start_alerter(1, cfg2);
	emit(c, "Split", a, "resolved", now);
	for (int i = 0; i < 50 && pd_actions(acts, 64) < 2; i++)
		usleep(100000);
	sleep(1);
	n = pd_actions(acts, 64);
	cr_assert_geq(n, 2, "nothing was sent after A resolved");
	for (int i = 0; i < n; i++)
		cr_assert_str_eq(acts[i], "trigger", "request %d resolved the incident while B "
				 "still fires", i);
	emit(c, "Split", b, "resolved", now);
	for (int i = 0; i < 50 && strcmp(acts[pd_actions(acts, 64) - 1], "resolve"); i++)
		usleep(100000);
	n = pd_actions(acts, 64);
	cr_assert_str_eq(acts[n - 1], "resolve", "the incident did not resolve with its group");
	cr_assert_eq(test_alerts_pending(c, NULL), 0);
	conn_close(c);
}

/*
 * X is delivered firing; Y joins its group and that notification meets
 * 429s.  The alerter retrying it is paused; X and Y resolve, and a peer
 * alerter delivers the resolution.  The old alerter, woken, retried its
 * stale FIRING and reopened what had resolved.  Now its retry re-reads the
 * group, finds a newer version, and sends nothing stale.
 */
Test(pages, a_retry_never_undoes_a_newer_notification, .init = setup, .fini = teardown,
     .timeout = 90)
{
	const char *x = "5a1e0000000000c1", *y = "5a1e0000000000c2";
	struct conn *c = test_redis_connect(&redis);
	char cfg1[300], cfg2[300];
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC, resolved_at;

	write_cfg(cfg1, sizeof(cfg1), "first", "alertmanager", "1h", "alertname");
	write_cfg(cfg2, sizeof(cfg2), "second", "alertmanager", "1h", "alertname");
	start_alerter(0, cfg1);
	emit(c, "Pair", x, "firing", now);
	cr_assert(wait_delivered(x, "firing", 0, 15));
	pthread_mutex_lock(&rx.lock);
	rx.status = 429;
	rx.status_until_ns = time_mono_ns() + 3600 * NSEC_PER_SEC;
	pthread_mutex_unlock(&rx.lock);
	emit(c, "Pair", y, "firing", now);
	for (int i = 0; i < 100; i++) {
		int refused = 0;

		pthread_mutex_lock(&rx.lock);
		for (int k = 0; k < rx.n; k++)
			refused += rx.req[k].status == 429;
		pthread_mutex_unlock(&rx.lock);
		if (refused >= 2)
			break;
		usleep(100000);
	}
	kill(procs[0], SIGSTOP);
	/*
	 * A read it was blocked in when stopped is still served by Redis: one
	 * event of another group goes to it, so that the resolutions go to the
	 * peer (entries of one group reaching different alerters is the point).
	 */
	usleep(300000);
	emit(c, "Elsewhere", "5a1e0000000000cf", "firing", now);
	usleep(300000);
	pthread_mutex_lock(&rx.lock);
	rx.status_until_ns = time_mono_ns();	/* 200 from now on */
	pthread_mutex_unlock(&rx.lock);
	start_alerter(1, cfg2);
	resolved_at = time_mono_ns();
	emit(c, "Pair", x, "resolved", now);
	emit(c, "Pair", y, "resolved", now);
	if (!wait_delivered(x, "resolved", resolved_at, 15)) {
		pthread_mutex_lock(&rx.lock);
		for (int i = 0; i < rx.n; i++)
			fprintf(stderr, "req %d status %d at %llu (resolved_at %llu): %s\n", i,
				rx.req[i].status, (unsigned long long)rx.req[i].at_ns,
				(unsigned long long)resolved_at, rx.req[i].body);
		pthread_mutex_unlock(&rx.lock);
		cr_assert_fail("the peer did not deliver the resolution");
	}
	kill(procs[0], SIGCONT);
	sleep(4);	/* the woken alerter's retry comes due within its 500 ms backoff */
	cr_assert_eq(delivered_since(x, "firing", resolved_at), 0, "a stale FIRING of X was "
		     "delivered after its resolution");
	cr_assert_eq(delivered_since(y, "firing", resolved_at), 0, "a stale FIRING of Y was "
		     "delivered after its resolution");
	cr_assert_eq(test_alerts_pending(c, NULL), 0, "entries left unacknowledged");
	conn_close(c);
}

/* ---- a storm while no alerter runs ---------------------------------------- */

#define STORM 150000
#define STORM_GROUPS 150

static void count_alert(int req, json_object *a, void *arg)
{
	struct strmap *seen = arg;
	const char *fp = rx_field(a, "fingerprint"), *s = rx_field(a, "status");

	(void)req;
	if (fp && s && !strcmp(s, "firing") && strncmp(fp, "57", 2) == 0)
		strmap_put(seen, fp, 1);
}

static long long xlen(struct conn *c)
{
	redisReply *r = conn_commandf(c, NULL, "XLEN fl:alerts");
	long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

	if (r)
		freeReplyObject(r);
	return n;
}

static int stream_has(struct conn *c, const char *what)
{
	redisReply *r = conn_commandf(c, NULL, "XREVRANGE fl:alerts + - COUNT 50");
	int found = 0;

	for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
		const redisReply *f = r->element[i]->element[1];

		found |= f->elements == 2 && strstr(f->element[1]->str, what) != NULL;
	}
	if (r)
		freeReplyObject(r);
	return found;
}

/*
 * 150,000 alert events arrive while no alerter runs (the old layout capped
 * fl:alerts at ~100,000 and the rules engine's next XADD trimmed the rest
 * away, unseen).  The rules engine raises AlertDeliveryBacklog and trims
 * nothing; an alerter started afterwards delivers every one of them,
 * acknowledges them all, and only then is the stream trimmed.
 */
Test(pages, a_storm_while_the_alerter_is_down_loses_nothing, .init = setup, .fini = teardown,
     .timeout = 300)
{
	struct conn *c = test_redis_connect(&redis), *slow;
	char cfg[300], rules[300], t[40], err[256];
	struct strmap seen;
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	redisReply *r;
	FILE *f;
	int got = 0;

	/* the consumer group exists (an alerter ran before); none runs now */
	freeReplyObject(conn_commandf(c, NULL, "XGROUP CREATE fl:alerts alerter $ MKSTREAM"));
	/* 150,000 XADDs in one script: most of a second, more on a busy machine */
	slow = conn_open(redis.url, 60 * NSEC_PER_SEC, err, sizeof(err));
	cr_assert_not_null(slow, "%s", err);
	r = conn_commandf(slow, NULL, "EVAL %s 1 fl:alerts %d %d %s",
			  "for i = 0, tonumber(ARGV[1]) - 1 do\n"
			  "  local fp = string.format('57%014x', i)\n"
			  "  redis.call('XADD', KEYS[1], '*', 'e', '{\"status\":\"firing\",'\n"
			  "    .. '\"fingerprint\":\"' .. fp .. '\",\"labels\":{\"alertname\":'\n"
			  "    .. '\"Storm\",\"rack\":\"r' .. (i % tonumber(ARGV[2])) .. '\",\"fp\":\"'\n"
			  "    .. fp .. '\"},\"annotations\":{},\"startsAt\":\"' .. ARGV[3] .. '\"}')\n"
			  "end\nreturn 1\n", STORM, STORM_GROUPS, alert_format_time(now, t, sizeof(t)));
	cr_assert(r && r->type == REDIS_REPLY_INTEGER, "the storm was not written: %s",
		  r ? "" : conn_errstr(slow));
	freeReplyObject(r);
	conn_close(slow);
	cr_assert_eq(xlen(c), STORM);
	/* the rules engine, with nothing to evaluate, watches the backlog */
	snprintf(rules, sizeof(rules), "%s/none.yaml", redis.dir);
	f = fopen(rules, "w");
	fputs("groups: []\n", f);
	fclose(f);
	{
		const char *argv[] = { "faultline-rules", "--rules", rules, "--redis", redis.url,
				       "--interval", "500ms", NULL };

		start(2, argv);
	}
	for (int i = 0; i < 200 && !stream_has(c, "AlertDeliveryBacklog"); i++)
		usleep(100000);
	cr_assert(stream_has(c, "AlertDeliveryBacklog"), "no AlertDeliveryBacklog was raised");
	cr_assert_geq(xlen(c), STORM + 1, "fl:alerts was trimmed of undelivered entries");
	/*
	 * An alerter comes: every alert is delivered, in 150 groups of 1,000
	 * (a group's changes at most every 10 s: a few notifications each).
	 */
	group_interval = "10s";
	write_cfg(cfg, sizeof(cfg), "late", "alertmanager", "1h", "rack");
	start_alerter(0, cfg);
	strmap_init(&seen);
	for (int i = 0; i < 240 && got < STORM; i++) {
		sleep(1);
		strmap_free(&seen);
		strmap_init(&seen);
		rx_each_alert(count_alert, &seen);
		got = (int)seen.len;
	}
	cr_log_info("%d of %d storm alerts delivered", got, STORM);
	cr_assert_eq(got, STORM, "only %d of %d alerts of the storm were delivered", got, STORM);
	for (int i = 0; i < 100 && test_alerts_pending(c, NULL) != 0; i++)
		usleep(100000);
	cr_assert_eq(test_alerts_pending(c, NULL), 0, "entries left unacknowledged");
	/* the backlog drained: the built-in alert resolves */
	for (int i = 0; i < 200 && !stream_has(c, "\"status\":\"resolved\""); i++)
		usleep(100000);
	cr_assert(stream_has(c, "\"status\":\"resolved\""), "AlertDeliveryBacklog never resolved");
	strmap_free(&seen);
	conn_close(c);
}

/* ---- the stream's housekeeping ---------------------------------------------- */

static long long consumers(struct conn *c)
{
	redisReply *r = conn_commandf(c, NULL, "XINFO CONSUMERS fl:alerts alerter");
	long long n = r && r->type == REDIS_REPLY_ARRAY ? (long long)r->elements : -1;

	if (r)
		freeReplyObject(r);
	return n;
}

/*
 * fl:alerts is trimmed only of what the group acknowledged: an entry read
 * and not acknowledged, or not read at all, stays whatever the stream's
 * length.  Consumers that are gone go only once nothing is pending for
 * them.
 */
Test(pages, the_stream_is_trimmed_only_of_what_was_delivered, .init = setup, .fini = teardown)
{
	struct conn *c = test_redis_connect(&redis);
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC, trimmed, undelivered, oldest;
	char err[256], first[40] = "";
	redisReply *r;
	int removed;

	freeReplyObject(conn_commandf(c, NULL, "XGROUP CREATE fl:alerts alerter $ MKSTREAM"));
	for (int i = 0; i < 30; i++)
		emit(c, "Trim", "5a1e0000000000d0", "firing", now);
	/* "a" reads 10 and acknowledges 5; "b" reads 10 and dies; 10 stay unread */
	for (int k = 0; k < 2; k++) {
		r = conn_commandf(c, NULL, "XREADGROUP GROUP alerter %s COUNT 10 STREAMS fl:alerts >",
				  k ? "b" : "a");
		cr_assert(r && r->type == REDIS_REPLY_ARRAY);
		if (!k) {
			const redisReply *es = r->element[0]->element[1];

			for (int i = 0; i < 5; i++)
				freeReplyObject(conn_commandf(c, NULL, "XACK fl:alerts alerter %s",
							      es->element[i]->element[0]->str));
			snprintf(first, sizeof(first), "%s", es->element[5]->element[0]->str);
		}
		freeReplyObject(r);
	}
	cr_assert_eq(alert_stream_backlog(c, &undelivered, &oldest, err, sizeof(err)), 0, "%s",
		     err);
	cr_expect_eq(undelivered, 25, "15 pending + 10 unread");
	/* keep nothing acknowledged (keep_ms 0, keep_max 0): only the 5 acknowledged go */
	cr_assert_eq(alert_stream_trim(c, now + 1000, 0, 0, &trimmed, err, sizeof(err)), 0, "%s",
		     err);
	cr_expect_eq(trimmed, 5);
	cr_expect_eq(xlen(c), 25);
	r = conn_commandf(c, NULL, "XRANGE fl:alerts - + COUNT 1");
	cr_expect_str_eq(r->element[0]->element[0]->str, first, "the oldest pending entry went");
	freeReplyObject(r);
	/* acknowledged entries younger than keep_ms stay while the stream is small */
	freeReplyObject(conn_commandf(c, NULL, "XACK fl:alerts alerter %s", first));
	cr_assert_eq(alert_stream_trim(c, now + 1000, 3600000, 1000, &trimmed, err, sizeof(err)),
		     0, "%s", err);
	cr_expect_eq(trimmed, 0);
	/* b has entries pending: it stays; a consumer with nothing pending goes */
	freeReplyObject(conn_commandf(c, NULL, "XGROUP CREATECONSUMER fl:alerts alerter idle"));
	cr_assert_eq(consumers(c), 3);
	cr_assert_eq(alert_stream_prune_consumers(c, "a", 0, &removed, err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_eq(removed, 1);
	cr_expect_eq(consumers(c), 2, "a (me) and b (pending) stay");
	conn_close(c);
}

/* ---- --wait-replicas: an event is kept until a replica has it ---------------- */

static pid_t redis_tcp[2];

static void stop_tcp_redis(void)
{
	for (int i = 0; i < 2; i++)
		if (redis_tcp[i] > 0) {
			kill(redis_tcp[i], SIGCONT);
			kill(redis_tcp[i], SIGKILL);
			waitpid(redis_tcp[i], NULL, 0);
			redis_tcp[i] = 0;
		}
	teardown();
}

/* A redis-server on loopback port (a replica of master_port when not 0). */
static pid_t start_tcp_redis(int port, int master_port)
{
	char p[16], m[16], dir[300];
	pid_t pid;

	snprintf(p, sizeof(p), "%d", port);
	snprintf(m, sizeof(m), "%d", master_port);
	snprintf(dir, sizeof(dir), "%s", redis.dir);
	pid = fork();
	if (pid == 0) {
		int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);

		dup2(fd, 1);
		dup2(fd, 2);
		if (master_port)
			execlp("redis-server", "redis-server", "--port", p, "--bind", "127.0.0.1",
			       "--save", "", "--appendonly", "no", "--dir", dir, "--dbfilename",
			       "replica.rdb", "--replicaof", "127.0.0.1", m, (char *)NULL);
		else
			execlp("redis-server", "redis-server", "--port", p, "--bind", "127.0.0.1",
			       "--save", "", "--appendonly", "no", "--dir", dir, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Events in fl:alerts of the Redis at url. */
static long long xlen_at(struct conn *c)
{
	redisReply *r = conn_commandf(c, "fl:alerts", "XLEN fl:alerts");
	long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

	if (r)
		freeReplyObject(r);
	return n;
}

/*
 * With --wait-replicas 1, an event Redis took stays in the outbox until the
 * replica has it (its replica paused: kept; resumed: confirmed and gone);
 * when the connection changes before that (a failover), it is written
 * again.  Before, the outbox was cleared once the master answered, and a
 * failover forgot what the master had not passed on.
 */
Test(pages, events_wait_for_a_replica_before_they_leave_the_outbox, .init = setup,
     .fini = stop_tcp_redis, .timeout = 60)
{
	int mport = test_free_port(), rport = test_free_port();
	struct outbox ob = { .wait_replicas = 1, .wait_timeout_ms = 300 };
	char url[64], err[256];
	struct conn *c = NULL;
	redisReply *r;

	redis_tcp[0] = start_tcp_redis(mport, 0);
	redis_tcp[1] = start_tcp_redis(rport, mport);
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", mport);
	for (int i = 0; i < 50 && !c; i++) {
		usleep(100000);
		c = conn_open(url, NSEC_PER_SEC, err, sizeof(err));
	}
	cr_assert_not_null(c, "%s", err);
	/* the replica is connected and in sync (a busy machine: give it time) */
	int up = 0;

	for (int i = 0; i < 300 && !up; i++) {
		r = conn_commandf(c, NULL, "INFO replication");
		up = r && r->str && strstr(r->str, "connected_slaves:1") &&
		     strstr(r->str, "state=online");
		if (r)
			freeReplyObject(r);
		if (!up)
			usleep(100000);
	}
	cr_assert(up, "the replica never came online (see the log)");
	ob.rc = c;
	ob.conn_gen = 1;
	outbox_emit("{\"status\":\"firing\",\"fingerprint\":\"5a1e0000000000e1\"}", &ob);
	cr_assert_eq(outbox_flush(&ob, NULL, 0), 0);
	/* WAIT's 300 ms may pass on a busy machine: later flushes wait again */
	for (int i = 0; i < 30 && ob.nunconfirmed; i++)
		cr_assert_eq(outbox_flush(&ob, NULL, 0), 0);
	cr_assert_eq(ob.nunconfirmed, 0, "the replica never confirmed it");
	cr_expect_eq(xlen_at(c), 1);
	/* the replica stops answering: the next event stays in the outbox */
	kill(redis_tcp[1], SIGSTOP);
	outbox_emit("{\"status\":\"firing\",\"fingerprint\":\"5a1e0000000000e2\"}", &ob);
	cr_assert_eq(outbox_flush(&ob, NULL, 0), 0);
	cr_expect_eq(ob.nqueue, 0, "the master took it");
	cr_expect_eq(ob.nunconfirmed, 1, "kept although no replica has it");
	cr_expect_eq(xlen_at(c), 2);
	/* a new connection (a failover, as the engine sees one): written again */
	ob.conn_gen++;
	cr_assert_eq(outbox_flush(&ob, NULL, 0), 0);
	cr_expect_eq(xlen_at(c), 3, "the unconfirmed event was not written again");
	cr_expect_eq(ob.nunconfirmed, 1);
	/* the replica is back: confirmed, gone */
	kill(redis_tcp[1], SIGCONT);
	for (int i = 0; i < 30 && ob.nunconfirmed; i++) {
		cr_assert_eq(outbox_flush(&ob, NULL, 0), 0);
		usleep(100000);
	}
	cr_expect_eq(ob.nunconfirmed, 0, "the resumed replica never confirmed it");
	outbox_free(&ob);
	conn_close(c);
}

/*
 * A checkpoint never runs ahead of its events: when Redis refuses an event
 * (here fl:alerts is of the wrong type), nothing of the checkpoint is
 * written.  The MULTI/EXEC before ran the HSETs of the checkpoint after the
 * refused XADD, so a restarted engine believed it had paged what it never
 * had.
 */
Test(pages, a_refused_event_leaves_the_checkpoint_as_it_was, .init = setup, .fini = teardown)
{
	struct conn *c = test_redis_connect(&redis);
	char *events[2] = { "{\"status\":\"firing\",\"fingerprint\":\"5a1e0000000000f1\"}",
			    "{\"status\":\"firing\",\"fingerprint\":\"5a1e0000000000f2\"}" };
	const char *fps[1] = { "5a1e0000000000f1" }, *states[1] = { "{\"rule\":\"X\"}" };
	char refused[2], err[256];
	redisReply *r;

	freeReplyObject(conn_commandf(c, NULL, "SET fl:alerts not-a-stream"));
	cr_expect_eq(store_alerts_commit(c, events, 2, fps, states, 1, refused, err, sizeof(err)),
		     0, "%s", err);
	cr_expect(refused[0] && refused[1], "the refused events are kept to be sent again");
	cr_expect(strstr(err, "WRONGTYPE"), "the refusal is not named: %s", err);
	r = conn_commandf(c, NULL, "HLEN {fl:alerts}:rules");
	cr_expect_eq(r->integer, 0, "the checkpoint was written although its event was refused");
	freeReplyObject(r);
	/* once Redis takes them, events and checkpoint go together */
	freeReplyObject(conn_commandf(c, NULL, "DEL fl:alerts"));
	cr_expect_eq(store_alerts_commit(c, events, 2, fps, states, 1, refused, err, sizeof(err)),
		     2, "%s", err);
	r = conn_commandf(c, NULL, "HLEN {fl:alerts}:rules");
	cr_expect_eq(r->integer, 1);
	freeReplyObject(r);
	cr_expect_eq(xlen(c), 2);
	conn_close(c);
}
