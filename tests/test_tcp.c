/*
 * test_tcp.c - the "sad switch" signal with a real fault: two network
 * namespaces joined by a veth pair; a sender in one writes TCP segments with
 * a wrong checksum (raw socket, IP_HDRINCL) to a listener in the other.
 * The collector, running in the receiving namespace, counts exactly those
 * and attributes them to the sender's address and the veth interface; good
 * segments count zero.  Addresses are from TEST-NET-1 (192.0.2.0/24) and
 * exist only inside the namespaces this test creates and deletes.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/helpers.h"
#include "probes/probe.h"

static char ns_a[32], ns_b[32];
static char snmp_dir[32];	/* a test's /proc/net/snmp stand-in */
static void *priv;

static void teardown(void)
{
	if (priv)
		tcp_collector.close(priv);
	priv = NULL;
	if (ns_a[0])
		test_sh("ip netns del %s 2>/dev/null", ns_a);
	if (ns_b[0])
		test_sh("ip netns del %s 2>/dev/null", ns_b);
	ns_a[0] = ns_b[0] = '\0';
	if (snmp_dir[0])
		test_sh("rm -rf %s", snmp_dir);
	snmp_dir[0] = '\0';
}

static void enter(const char *ns)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "open %s", path);
	cr_assert_eq(setns(fd, CLONE_NEWNET), 0, "setns %s", ns);
	close(fd);
}

static void setup(void)
{
	if (!test_is_root())
		cr_skip_test("needs root (network namespaces, raw sockets, BPF)");
	if (test_sh("ip -V >/dev/null 2>&1") != 0)
		cr_skip_test("iproute2 is not installed");
	snprintf(ns_a, sizeof(ns_a), "fl-a-%d", getpid());
	snprintf(ns_b, sizeof(ns_b), "fl-b-%d", getpid());
	cr_assert_eq(test_netns_pair(ns_a, ns_b, getpid()), 0, "could not build the namespaces");
}

static uint64_t counter(const struct snapshot *s, const char *key)
{
	const struct series *ser = snapshot_find(s, key);

	return ser ? ser->counter.value : 0;
}

Test(tcp, bad_checksums_counted_and_attributed_to_peer_and_interface, .init = setup,
     .fini = teardown, .timeout = 60)
{
	struct probe_config cfg;
	struct snapshot s0, s1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(8471) };
	char err[512], key[128];
	const int BAD = 25, GOOD = 7;
	int lfd, one = 1, status;
	pid_t sender;

	enter(ns_b);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	inet_pton(AF_INET, "192.0.2.2", &sa.sin_addr);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(lfd, 64), 0);

	probe_config_defaults(&cfg, err, sizeof(err));
	if (tcp_collector.open(&priv, &cfg, err, sizeof(err))) {
		probe_config_free(&cfg);
		cr_skip_test("the TCP collector's BPF probe does not load here: %s", err);
	}
	probe_config_free(&cfg);
	snapshot_init(&s0, "b", 1, 1000, 0, 1);
	cr_assert_eq(tcp_collector.collect(priv, &s0), 0);

	sender = fork();
	if (sender == 0) {
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/var/run/netns/%s", ns_a);
		fd = open(path, O_RDONLY);
		if (fd < 0 || setns(fd, CLONE_NEWNET))
			_exit(2);
		test_send_syns(GOOD, 8471, 0, 2000);
		test_send_syns(BAD, 8471, 1, 2000);
		_exit(0);
	}
	waitpid(sender, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "sender failed");
	usleep(300000);
	snapshot_init(&s1, "b", 2, 1000, 1, 1);
	cr_assert_eq(tcp_collector.collect(priv, &s1), 0);

	cr_assert_eq(counter(&s1, "tcp.in_csum_errors{}") - counter(&s0, "tcp.in_csum_errors{}"),
		     (uint64_t)BAD, "InCsumErrors in the receiving namespace");
	snprintf(key, sizeof(key), "tcp.bad_csum{interface=flvb%d,peer=192.0.2.1}", getpid());
	cr_assert_eq(counter(&s1, key) - counter(&s0, key), (uint64_t)BAD,
		     "%s: %llu", key, (unsigned long long)counter(&s1, key));
	/* nothing else was attributed: good segments count zero */
	uint64_t attributed = 0;

	for (uint32_t i = 0; i < s1.nseries; i++)
		if (!strcmp(s1.series[i].name, "tcp.bad_csum"))
			attributed += s1.series[i].counter.value;
	cr_assert_eq(attributed, (uint64_t)BAD);
	cr_assert_eq(counter(&s1, "tcp.peer_overflow{}"), 0);
	snprintf(key, sizeof(key), "link.rx_errors{interface=flvb%d}", getpid());
	cr_assert_not_null(snapshot_find(&s1, key), "no link statistics for the veth");
	close(lfd);
	snapshot_free(&s0);
	snapshot_free(&s1);
}

/* Write text over path in place (the collector keeps the file open). */
static void rewrite(const char *path, const char *text)
{
	FILE *f = fopen(path, "r+");

	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(ftruncate(fileno(f), 0), 0);
	fputs(text, f);
	fclose(f);
}

/* One snapshot of priv's collector; its series by key in *s (snapshot_free it). */
static void collect_once(struct snapshot *s, uint64_t seq)
{
	snapshot_init(s, "h", seq, 1000, seq, 1);
	cr_assert_eq(tcp_collector.collect(priv, s), 0);
}

/*
 * /proc/net/snmp's columns are named once and then read by position, so a
 * header that changes between reads (another kernel's file, a new field)
 * must be named again: every value follows its name, never its old place.
 * Negative values, values past a short line and words are left out.
 */
Test(tcp, proc_columns_follow_their_names_when_the_header_changes, .fini = teardown)
{
	char path[64], err[256];
	struct probe_config cfg = { .bpf = 0 };
	struct snapshot s;

	strcpy(snmp_dir, "/tmp/fl-snmp-XXXXXX");
	cr_assert_not_null(mkdtemp(snmp_dir));
	snprintf(path, sizeof(path), "%s/snmp", snmp_dir);
	cr_assert_eq(test_sh("printf 'x' > %s", path), 0);
	rewrite(path, "Tcp: RtoAlgorithm InErrs InCsumErrors MaxConn\nTcp: 1 5 7 -1\n"
		      "Udp: InDatagrams InErrors InCsumErrors\nUdp: 10 2 3\n");
	setenv("FL_PROC_NET_SNMP", path, 1);
	cr_assert_eq(tcp_collector.open(&priv, &cfg, err, sizeof(err)), 0, "%s", err);
	unsetenv("FL_PROC_NET_SNMP");

	collect_once(&s, 1);
	cr_expect_eq(counter(&s, "tcp.in_errs{}"), 5);
	cr_expect_eq(counter(&s, "tcp.in_csum_errors{}"), 7);
	cr_expect_eq(counter(&s, "udp.in_datagrams{}"), 10);
	cr_expect_eq(counter(&s, "udp.in_errors{}"), 2);
	cr_expect_eq(counter(&s, "udp.in_csum_errors{}"), 3);
	snapshot_free(&s);

	/* the same file, new values: read by position */
	rewrite(path, "Tcp: RtoAlgorithm InErrs InCsumErrors MaxConn\nTcp: 1 6 8 -1\n"
		      "Udp: InDatagrams InErrors InCsumErrors\nUdp: 11 2 4\n");
	collect_once(&s, 2);
	cr_expect_eq(counter(&s, "tcp.in_errs{}"), 6);
	cr_expect_eq(counter(&s, "tcp.in_csum_errors{}"), 8);
	cr_expect_eq(counter(&s, "udp.in_csum_errors{}"), 4);
	snapshot_free(&s);

	/* columns reordered, one gone: named again */
	rewrite(path, "Tcp: InCsumErrors RtoAlgorithm InErrs\nTcp: 9 1 6\n"
		      "Udp: InErrors InDatagrams\nUdp: 4 12\n");
	collect_once(&s, 3);
	cr_expect_eq(counter(&s, "tcp.in_csum_errors{}"), 9);
	cr_expect_eq(counter(&s, "tcp.in_errs{}"), 6);
	cr_expect_eq(counter(&s, "udp.in_errors{}"), 4);
	cr_expect_eq(counter(&s, "udp.in_datagrams{}"), 12);
	cr_expect_null(snapshot_find(&s, "udp.in_csum_errors{}"), "a column no longer there");
	snapshot_free(&s);

	/* a value line shorter than its header, and words for numbers */
	rewrite(path, "Tcp: InCsumErrors RtoAlgorithm InErrs\nTcp: 9\n"
		      "Udp: InErrors InDatagrams\nUdp: x 13\n");
	collect_once(&s, 4);
	cr_expect_eq(counter(&s, "tcp.in_csum_errors{}"), 9);
	cr_expect_null(snapshot_find(&s, "tcp.in_errs{}"), "past the end of its line");
	cr_expect_null(snapshot_find(&s, "udp.in_errors{}"), "not a number");
	cr_expect_eq(counter(&s, "udp.in_datagrams{}"), 13);
	snapshot_free(&s);
}

/* How many of n looks (tcp_collector.moved, as page_watch calls it) say a counter moved. */
static int moved_in(int n)
{
	int m = 0;

	for (int i = 0; i < n; i++)
		m += tcp_collector.moved(priv) != 0;
	return m;
}

/*
 * page_watch's look at the counters a page hangs on: nothing moved since
 * the snapshot, nothing said; a TCP checksum error in /proc/net/snmp or a
 * link's receive or frame error in /proc/net/dev, said within the five
 * looks (500 ms) it takes to read the files again; drops, which move on
 * healthy hosts, never; and a snapshot takes what it read as the new
 * baseline.
 */
Test(tcp, page_watch_sees_error_counters_move_and_nothing_else, .fini = teardown)
{
	char snmp[64], dev[64], err[256];
	struct probe_config cfg = { .bpf = 0 };
	struct snapshot s;
	const char *snmp_text = "Tcp: RtoAlgorithm InErrs InCsumErrors\nTcp: 1 5 %d\n"
				"Udp: InDatagrams InErrors InCsumErrors\nUdp: 10 2 3\n";
	const char *dev_text = "Inter-|   Receive                            |  Transmit\n"
			       " face |bytes    packets errs drop fifo frame compressed multicast|bytes\n"
			       "    lo: 100 2 0 %d 0 0 0 0 100\n  eth0: 5000 40 %d 0 0 %d 0 0 700\n";
	char text[512];

	strcpy(snmp_dir, "/tmp/fl-snmp-XXXXXX");
	cr_assert_not_null(mkdtemp(snmp_dir));
	snprintf(snmp, sizeof(snmp), "%s/snmp", snmp_dir);
	snprintf(dev, sizeof(dev), "%s/dev", snmp_dir);
	cr_assert_eq(test_sh("touch %s %s", snmp, dev), 0);
	snprintf(text, sizeof(text), snmp_text, 7);
	rewrite(snmp, text);
	snprintf(text, sizeof(text), dev_text, 0, 1, 2);
	rewrite(dev, text);
	setenv("FL_PROC_NET_SNMP", snmp, 1);
	setenv("FL_PROC_NET_DEV", dev, 1);
	cr_assert_eq(tcp_collector.open(&priv, &cfg, err, sizeof(err)), 0, "%s", err);
	unsetenv("FL_PROC_NET_SNMP");
	unsetenv("FL_PROC_NET_DEV");

	collect_once(&s, 1);
	snapshot_free(&s);
	cr_assert_eq(moved_in(10), 0, "nothing moved");

	snprintf(text, sizeof(text), dev_text, 9, 1, 2);	/* lo drops: not a page's */
	rewrite(dev, text);
	cr_assert_eq(moved_in(10), 0, "drops moved");

	snprintf(text, sizeof(text), snmp_text, 8);		/* a TCP checksum error */
	rewrite(snmp, text);
	cr_assert_geq(moved_in(5), 1, "a checksum error not seen within 5 looks");
	collect_once(&s, 2);					/* the new baseline */
	snapshot_free(&s);
	cr_assert_eq(moved_in(10), 0, "seen again after the snapshot took it");

	snprintf(text, sizeof(text), dev_text, 9, 1, 3);	/* a frame error on eth0 */
	rewrite(dev, text);
	cr_assert_geq(moved_in(5), 1, "a frame error not seen");
	collect_once(&s, 3);
	snapshot_free(&s);
	snprintf(text, sizeof(text), dev_text, 9, 2, 3);	/* a receive error on eth0 */
	rewrite(dev, text);
	cr_assert_geq(moved_in(5), 1, "a receive error not seen");
}

/*
 * The links' error counters come from an rtnetlink dump, made again only
 * when /proc/net/dev's errs, drop or frame of some link moved (each of
 * them sums some of those counters): a link added while they hold still
 * is not dumped; once they move it is.
 */
Test(tcp, links_are_dumped_again_when_their_error_sums_move, .fini = teardown)
{
	char dev[64], err[256], key[96], text[512];
	struct probe_config cfg = { .bpf = 0 };
	struct snapshot s;
	const char *dev_text = "Inter-|   Receive                            |  Transmit\n"
			       " face |bytes    packets errs drop fifo frame compressed multicast|bytes\n"
			       "    lo: 100 2 0 %d 0 0 0 0 100\n";

	if (!test_is_root())
		cr_skip_test("needs root (a network namespace)");
	snprintf(ns_a, sizeof(ns_a), "fl-l-%d", getpid());
	cr_assert_eq(test_sh("ip netns add %s", ns_a), 0);
	enter(ns_a);
	strcpy(snmp_dir, "/tmp/fl-dev-XXXXXX");
	cr_assert_not_null(mkdtemp(snmp_dir));
	snprintf(dev, sizeof(dev), "%s/dev", snmp_dir);
	cr_assert_eq(test_sh("touch %s", dev), 0);
	snprintf(text, sizeof(text), dev_text, 0);
	rewrite(dev, text);
	setenv("FL_PROC_NET_DEV", dev, 1);
	cr_assert_eq(tcp_collector.open(&priv, &cfg, err, sizeof(err)), 0, "%s", err);
	unsetenv("FL_PROC_NET_DEV");
	snprintf(key, sizeof(key), "link.rx_errors{interface=fld%d}", getpid());

	collect_once(&s, 1);
	cr_assert_not_null(snapshot_find(&s, "link.rx_errors{interface=lo}"));
	snapshot_free(&s);
	cr_assert_eq(test_sh("ip -n %s link add fld%d type veth peer name fle%d", ns_a, getpid(),
			     getpid()), 0);
	collect_once(&s, 2);
	cr_assert_not_null(snapshot_find(&s, "link.rx_errors{interface=lo}"));
	cr_assert_null(snapshot_find(&s, key), "dumped again though nothing moved");
	snapshot_free(&s);
	snprintf(text, sizeof(text), dev_text, 1);	/* a drop on lo */
	rewrite(dev, text);
	collect_once(&s, 3);
	cr_assert_not_null(snapshot_find(&s, key), "not dumped again after a drop");
	snapshot_free(&s);
}
