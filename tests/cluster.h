/*
 * cluster.h - a real Redis Cluster for tests: masters and replicas as
 * redis-server processes on free loopback ports in a temporary directory,
 * joined with `redis-cli --cluster create`, torn down (SIGKILL, directory
 * removed) by test_cluster_destroy even when the test failed.
 */
#ifndef FL_TEST_CLUSTER_H
#define FL_TEST_CLUSTER_H

#include <sys/types.h>

#define TEST_CLUSTER_MAX 8

struct test_cluster {
	int n;				/* nodes */
	pid_t pid[TEST_CLUSTER_MAX];
	int port[TEST_CLUSTER_MAX];
	char dir[256];
	char tls[256];			/* certificates (test_tls_certs) of a TLS cluster */
	char url[1024];			/* redis[s]-cluster://127.0.0.1:P1,... */
};

/*
 * Start masters + masters * replicas nodes and create the cluster; waits
 * until every node reports cluster_state:ok.  Returns 0, or -1 (what
 * failed is printed on stderr; everything started is stopped).
 */
int test_cluster_start(struct test_cluster *c, int masters, int replicas);

/*
 * The same over TLS only (no plain port; the cluster bus and replication
 * too), with the certificates test_tls_certs made in certdir: url is
 * rediss-cluster://... with its tls_ca, tls_cert and tls_key.
 */
int test_cluster_start_tls(struct test_cluster *c, int masters, int replicas,
			   const char *certdir);

/* Run redis-cli against node i with args ("CLUSTER KEYSLOT foo"); its output in out. */
int test_cluster_cli(const struct test_cluster *c, int i, char *out, size_t len,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Index of the node serving slot as master (asking node 0 first), or -1. */
int test_cluster_master_of(const struct test_cluster *c, int slot);

/* SIGKILL node i (a master failing). */
void test_cluster_kill(struct test_cluster *c, int i);

/*
 * Wait (up to timeout_s) until every slot is served by a live master, as
 * node `asker` sees it (cluster_state:ok).  Returns 0 or -1.
 */
int test_cluster_wait_ok(const struct test_cluster *c, int asker, int timeout_s);

void test_cluster_destroy(struct test_cluster *c);

#endif
