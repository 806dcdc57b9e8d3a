/*
 * helpers.h - what integration tests share: their own redis-server on a
 * temporary unix socket, and skipping (never passing) tests that need root
 * or BPF on a machine that lacks them.
 */
#ifndef FL_TEST_HELPERS_H
#define FL_TEST_HELPERS_H

#include <stdint.h>
#include <sys/types.h>

struct test_redis {
	pid_t pid;
	char dir[256];
	char sock[300];
	char url[320];
	int persist;
	char opt[64], optval[512];	/* one more redis-server option */
};

/*
 * Start redis-server (no persistence, no TCP port) on a socket in a fresh
 * temporary directory and wait until it answers PING.  Returns 0 or -1.
 */
int test_redis_start(struct test_redis *r);

/* The same with one more redis-server option ("--aclfile", path). */
int test_redis_start_with(struct test_redis *r, const char *opt, const char *value);

/* The same with an append-only file, so data survives a restart. */
int test_redis_start_persistent(struct test_redis *r);

/*
 * A connection to r (conn_open); the test fails if there is none.  Tests
 * inspect the layout through it with conn_commandf(c, NULL, ...), as
 * redis-cli would.
 */
struct conn;
struct conn *test_redis_connect(const struct test_redis *r);

/*
 * Entries of fl:alerts the alerters' consumer group has read and not
 * acknowledged: all of them (consumer NULL) or one consumer's; -1 when
 * Redis does not say.
 */
long long test_alerts_pending(struct conn *c, const char *consumer);

/*
 * Put an alert event on fl:alerts as the rules engine writes one: status
 * "firing" or "resolved", fingerprint fp, labels the inside of a JSON
 * object ("\"alertname\":\"X\",\"rack\":\"r1\""), startsAt now.
 */
void test_emit_alert(struct conn *c, const char *fp, const char *status, const char *labels);

/* Stop it (SIGKILL when stop_hard, else SIGTERM) and wait; keeps the dir. */
void test_redis_stop(struct test_redis *r, int hard);

/* Start again on the same socket after test_redis_stop. */
int test_redis_restart(struct test_redis *r);

/* Stop and remove the directory. */
void test_redis_destroy(struct test_redis *r);

/*
 * Remove a test's temporary directory (and the logs in it), unless
 * FL_KEEP_TEST_DIRS is set in the environment: then it is kept, and named
 * on stderr, for a look at a failure's logs.
 */
void test_remove_dir(const char *dir);

/*
 * The next of a xorshift64 sequence in *state (never 0): the same inputs
 * every run, so a property test that fails fails again.
 */
uint64_t test_rand(uint64_t *state);

/* Run a shell command; returns its exit status, or -1. */
int test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Fail the test unless the source tree's file rel (e.g. "docs/probe.md")
 * holds text, saying which command regenerates it.
 */
void test_doc_holds(const char *rel, const char *text, const char *regenerate);

/* Non-zero if running as root. */
int test_is_root(void);

/* Path of the build output folder the tests were built into. */
const char *test_out_dir(void);

/*
 * Two network namespaces a and b joined by a veth pair flva<id> (a,
 * 192.0.2.1/24) and flvb<id> (b, 192.0.2.2/24), all links up.  Returns 0
 * or non-zero; the caller deletes the namespaces (`ip netns del`).
 */
int test_netns_pair(const char *a, const char *b, int id);

/*
 * From the current network namespace, send n TCP SYNs from 192.0.2.1 to
 * 192.0.2.2:port through a raw socket (IP_HDRINCL), gap_us apart; with a
 * corrupted TCP checksum when bad.  For the namespaces tests build.
 */
void test_send_syns(int n, uint16_t port, int bad, int gap_us);

/*
 * The 1 s snapshots of host stored with from_ms <= ts <= to_ms, read from
 * Redis at url: how many (*count) and how many sequence numbers are
 * missing between them (*missing; a probe restart, where the sequence
 * starts again, is not a gap).  Counts what was lost, not what a busy
 * machine never got round to sampling.  Returns 0 or -1.
 */
int test_snapshot_gaps(const char *url, const char *host, uint64_t from_ms, uint64_t to_ms,
		       long *count, long *missing);

/*
 * How many 1 s snapshots of host Redis holds with from_ms <= ts <= to_ms
 * (0: open), as entries or in the chunks of ended minutes (store.h): what
 * XLEN or a raw XRANGE of fl:{H}:s1 no longer tells.  -1 if the read
 * failed.
 */
struct conn;
long long test_s1_count(struct conn *c, const char *host, uint64_t from_ms, uint64_t to_ms);

/*
 * Alert events an in-process engine emitted (engine_eval's callback):
 * test_events_collect keeps a copy of each (the first TEST_MAX_EVENTS).
 */
#define TEST_MAX_EVENTS 64

struct test_events {
	char *json[TEST_MAX_EVENTS];
	int n;
};

void test_events_collect(const char *json, void *arg);
void test_events_free(struct test_events *ev);

/* A loopback TCP port nothing listens on (bound, then released). */
int test_free_port(void);

/*
 * Debian's prometheus on 127.0.0.1:port: its config dir/prometheus.yml
 * (the caller writes it), its TSDB in dir/data, its output in
 * dir/prometheus.log, and one more flag (NULL: none).  Returns its pid;
 * skips the test when prometheus is not installed (make deps installs it).
 */
pid_t test_prometheus_start(const char *dir, int port, const char *flag);

/*
 * A Python service (a script for python3.11 ROUNDS SECONDS): handle()
 * renders a page, then parse_invoice() does ROUNDS times its work (1:
 * version 1, most time in render_page; 3: a version 2 whose parse_invoice
 * got 3x slower), for SECONDS (0: until killed).  handle is at line 12.
 */
extern const char test_python_service[];

/*
 * Certificates for TLS tests, made with openssl(1) in dir: ca.crt (a CA),
 * server.crt/server.key (signed by it, for 127.0.0.1, ::1 and localhost),
 * client.crt/client.key (signed by it) and other-ca.crt (a CA that signed
 * none of them).  Returns 0 or -1.
 */
int test_tls_certs(const char *dir);

/* GET http://127.0.0.1:port/metrics into buf (NUL-terminated); the bytes read or -1. */
int test_scrape(int port, char *buf, size_t len);

#endif
