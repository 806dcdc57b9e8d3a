/*
 * tcp.c - TCP/UDP and link error counters, and who the bad packets came
 * from.
 *
 *   /proc/net/snmp, /proc/net/netstat  protocol counters.  Each file pairs
 *        a header line with a value line per protocol ("Tcp: Name..." /
 *        "Tcp: 1 2..."); a field becomes proto.snake_case (InCsumErrors ->
 *        tcp.in_csum_errors, TcpExt TCPTimeouts -> tcpext.tcp_timeouts) and is
 *        emitted when lib/model/catalog.c knows the name, which is both the
 *        whitelist and the source of its kind.  Files stay open and are
 *        re-read with pread.
 *   rtnetlink (libnl)  per-interface rx_crc_errors, rx_frame_errors,
 *        rx_errors, rx_dropped, rx_missed_errors from the stats64 the kernel
 *        keeps for every link.
 *   bpf/tcp.bpf.c  bad checksums per (interface, source address) and
 *        retransmits per destination, in the probe's network namespace.
 *        The tables are only walked when their totals moved.
 *
 * All of it reflects the network namespace the probe runs in.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "model/catalog.h"
#include "core/array.h"
#include "core/fnv.h"
#include "core/log.h"
#include "probes/probe.h"
#include "bpf/tcp.h"
#include "tcp.skel.h"

/* One column of a header/value line pair that the catalog knows. */
struct proc_pick {
	uint16_t pair, col;		/* line pair, column in its value line (0: first value) */
	const struct metric_info *mi;
	char metric[80];		/* "tcp.in_csum_errors" */
};

/*
 * A /proc/net file of header/value line pairs, and which of its columns
 * become series.  The header lines are the same at every read (they change
 * only with the kernel), so the columns are named once (snake_case, the
 * catalog lookup) and picked by position after; a read whose header lines
 * differ from the ones the picks were made from makes them again.
 */
struct proc_file {
	const char *path;
	int fd;
	char *heads;			/* the header lines the picks were made from, '\n'-joined */
	size_t heads_len;
	struct proc_pick *picks;	/* by pair, then column */
	size_t npicks;
};

struct peer_count {
	struct tcp_peer_key key;
	uint64_t count;
};

struct tcp_probe {
	struct proc_file files[2];
	char buf[32768];
	struct nl_sock *nl;
	struct nl_cache *links;
	struct tcp_bpf *skel;
	uint64_t last_bad, last_retrans;
	struct peer_count *bad, *retr;	/* cached table contents */
	size_t nbad, nretr;
	int walked;
	/* tcp_moved: the error counters' sum at the last collect */
	int dev_fd;			/* /proc/net/dev */
	uint64_t errors_seen, bad_seen;
	uint64_t links_sig;		/* /proc/net/dev's error fields at the last refill */
	int links_filled;
	unsigned looks;			/* tcp_moved calls since the last collect */
	char wbuf[8192];
};

static const struct {
	rtnl_link_stat_id_t id;
	const char *metric;
} link_stats[] = {
	{ RTNL_LINK_RX_CRC_ERR, "link.rx_crc_errors" },
	{ RTNL_LINK_RX_FRAME_ERR, "link.rx_frame_errors" },
	{ RTNL_LINK_RX_ERRORS, "link.rx_errors" },
	{ RTNL_LINK_RX_DROPPED, "link.rx_dropped" },
	{ RTNL_LINK_RX_MISSED_ERR, "link.rx_missed_errors" },
};

/* "InCsumErrors" -> "in_csum_errors", "TCPTimeouts" -> "tcp_timeouts" */
static void snake_case(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; in[i] && o + 2 < len; i++) {
		int up = isupper((unsigned char)in[i]);

		if (up && i > 0 &&
		    (!isupper((unsigned char)in[i - 1]) ||
		     (in[i + 1] && islower((unsigned char)in[i + 1]))))
			out[o++] = '_';
		out[o++] = (char)tolower((unsigned char)in[i]);
	}
	out[o] = '\0';
}

static int open_bpf(struct tcp_probe *tp, char *err, size_t errlen)
{
	struct stat st;
	int ret;

	tp->skel = tcp_bpf__open();
	if (!tp->skel) {
		snprintf(err, errlen, "cannot open the BPF TCP probe: %s", strerror(errno));
		return -errno;
	}
	if (stat("/proc/self/ns/net", &st) == 0)
		tp->skel->rodata->netns_ino = (__u32)st.st_ino;
	ret = tcp_bpf__load(tp->skel);
	if (!ret)
		ret = tcp_bpf__attach(tp->skel);
	if (ret) {
		snprintf(err, errlen, "cannot load the BPF TCP probe (tcp_bad_csum, "
			 "tcp_retransmit_skb): %s; needs CAP_BPF/CAP_PERFMON and BTF; pass "
			 "--no-bpf to run without it", strerror(-ret));
		return ret;
	}
	return 0;
}

static int tcp_open(void **priv, const struct probe_config *cfg, char *err, size_t errlen)
{
	struct tcp_probe *tp = calloc(1, sizeof(*tp));
	const char *snmp = getenv("FL_PROC_NET_SNMP");
	int ret;

	if (!tp)
		return -ENOMEM;
	tp->files[0].path = snmp && *snmp ? snmp : "/proc/net/snmp";
	tp->files[1].path = "/proc/net/netstat";
	tp->dev_fd = open(getenv("FL_PROC_NET_DEV") && *getenv("FL_PROC_NET_DEV") ?
			  getenv("FL_PROC_NET_DEV") : "/proc/net/dev", O_RDONLY | O_CLOEXEC);
	for (int i = 0; i < 2; i++) {
		tp->files[i].fd = open(tp->files[i].path, O_RDONLY | O_CLOEXEC);
		if (tp->files[i].fd < 0 && i == 0) {
			ret = -errno;
			snprintf(err, errlen, "tcp: cannot open %s: %s", tp->files[i].path,
				 strerror(errno));
			goto fail;
		}
	}
	tp->nl = nl_socket_alloc();
	if (!tp->nl || nl_connect(tp->nl, NETLINK_ROUTE) ||
	    rtnl_link_alloc_cache(tp->nl, AF_UNSPEC, &tp->links)) {
		log_warn("tcp: cannot read link statistics over rtnetlink; link.* series will be "
			 "missing");
		if (tp->nl)
			nl_socket_free(tp->nl);
		tp->nl = NULL;
		tp->links = NULL;
	}
	if (cfg->bpf && (ret = open_bpf(tp, err, errlen)))
		goto fail;
	*priv = tp;
	return 0;
fail:
	tcp_collector.close(tp);
	return ret;
}

/* Whether header lines lines[0], [2], ... (n lines) are those pf's picks were made from. */
static int picks_fit(const struct proc_file *pf, char **lines, int n)
{
	size_t off = 0;

	if (!pf->heads)
		return 0;
	for (int i = 0; i + 1 < n; i += 2) {
		size_t len = strlen(lines[i]);

		if (off + len + 1 > pf->heads_len || memcmp(pf->heads + off, lines[i], len) ||
		    pf->heads[off + len] != '\n')
			return 0;
		off += len + 1;
	}
	return off == pf->heads_len;
}

/*
 * Name every column of the header lines (n lines, header/value pairs) and
 * keep those the catalog knows as pf's picks.  A header field becomes
 * proto.snake_case (InCsumErrors -> tcp.in_csum_errors); a pair whose value
 * line does not start with its header's "Proto:" is skipped.
 */
static int picks_make(struct proc_file *pf, char **lines, int n)
{
	size_t len = 0, off = 0, cap = 0;

	free(pf->heads);
	free(pf->picks);
	pf->heads = NULL;
	pf->picks = NULL;
	pf->npicks = pf->heads_len = 0;
	for (int i = 0; i + 1 < n; i += 2)
		len += strlen(lines[i]) + 1;
	if (!(pf->heads = malloc(len + 1)))
		return -ENOMEM;
	for (int i = 0; i + 1 < n; i += 2) {
		char proto[16], snake[64], *h = lines[i];
		size_t plen = strcspn(h, ":"), hl = strlen(h);
		uint16_t col = 0;

		memcpy(pf->heads + off, h, hl);
		pf->heads[off + hl] = '\n';
		off += hl + 1;
		if (plen >= sizeof(proto) || strncmp(h, lines[i + 1], plen + 1))
			continue;
		for (size_t k = 0; k < plen; k++)
			proto[k] = (char)tolower((unsigned char)h[k]);
		proto[plen] = '\0';
		for (h += plen + 1; *(h += strspn(h, " ")); col++) {
			size_t fl = strcspn(h, " ");
			char field[64], metric[sizeof(pf->picks->metric)];
			const struct metric_info *mi;
			struct proc_pick *pk;

			snprintf(field, sizeof(field), "%.*s", (int)(fl < 63 ? fl : 63), h);
			h += fl;
			snake_case(field, snake, sizeof(snake));
			if (snprintf(metric, sizeof(metric), "%s.%s", proto, snake) >=
			    (int)sizeof(metric) || !(mi = catalog_find_wire(metric)))
				continue;
			if (ARRAY_GROW(pf->picks, cap, pf->npicks + 1, 32))
				return -ENOMEM;
			pk = &pf->picks[pf->npicks++];
			pk->pair = (uint16_t)(i / 2);
			pk->col = col;
			pk->mi = mi;
			memcpy(pk->metric, metric, sizeof(metric));
		}
	}
	pf->heads[off] = '\0';
	pf->heads_len = off;
	return 0;
}

/* The picked columns of value line vals (pair p), from pick *at on, into s. */
static int emit_values(struct snapshot *s, const struct proc_file *pf, size_t *at, uint16_t p,
		       const char *vals)
{
	const char *v = vals + strcspn(vals, ":");
	uint16_t col = 0;

	if (*v)
		v++;
	for (; *at < pf->npicks && pf->picks[*at].pair == p; ++*at) {
		const struct proc_pick *pk = &pf->picks[*at];
		char *end;
		long long x;

		while (col < pk->col && *(v += strspn(v, " "))) {
			v += strcspn(v, " ");
			col++;
		}
		v += strspn(v, " ");
		if (col != pk->col || !*v)
			continue;	/* a value line shorter than its header */
		errno = 0;
		x = strtoll(v, &end, 10);
		if (errno || (*end && *end != ' ') || x < 0)
			continue;
		if (pk->mi->kind == SERIES_COUNTER) {
			if (!snapshot_add_counter(s, pk->metric, (uint64_t)x, NULL))
				return -ENOMEM;
		} else if (!snapshot_add_gauge(s, pk->metric, (double)x, NULL)) {
			return -ENOMEM;
		}
	}
	return 0;
}

static uint64_t snmp_errors(const char *buf);

/* pf's series into s; *errs (may be NULL) gets snmp_errors of what was read. */
static int collect_proc(struct tcp_probe *tp, struct proc_file *pf, struct snapshot *s,
			uint64_t *errs)
{
	char *lines[128], *save, *line;
	size_t at = 0;
	ssize_t n;
	int nl = 0, ret;

	if (pf->fd < 0)
		return 0;
	n = pread(pf->fd, tp->buf, sizeof(tp->buf) - 1, 0);
	if (n < 0) {
		log_warn("tcp: reading %s: %s", pf->path, strerror(errno));
		return 0;
	}
	tp->buf[n] = '\0';
	if (errs)
		*errs = snmp_errors(tp->buf);
	for (line = strtok_r(tp->buf, "\n", &save); line && nl < 128;
	     line = strtok_r(NULL, "\n", &save))
		lines[nl++] = line;
	if (!picks_fit(pf, lines, nl) && (ret = picks_make(pf, lines, nl)))
		return ret;
	for (int i = 0; i + 1 < nl; i += 2)
		if ((ret = emit_values(s, pf, &at, (uint16_t)(i / 2), lines[i + 1])))
			return ret;
	return 0;
}

/*
 * Every link's receive error counters (link_stats) from rtnetlink.  The
 * cache is refilled (a dump of every link) only when /proc/net/dev's
 * errs, drop or frame of some link moved, or the links changed (sig):
 * each counter of link_stats is a part of one of those three sums
 * (frame: crc and frame errors; drop: dropped and missed), so while they
 * hold still the cached values are the kernel's.
 */
static int collect_links(struct tcp_probe *tp, struct snapshot *s, uint64_t sig)
{
	struct nl_object *obj;

	if (!tp->links)
		return 0;
	if (!tp->links_filled || sig != tp->links_sig) {
		if (nl_cache_refill(tp->nl, tp->links)) {
			tp->links_filled = 0;
			return 0;
		}
		tp->links_filled = 1;
		tp->links_sig = sig;
	}
	for (obj = nl_cache_get_first(tp->links); obj; obj = nl_cache_get_next(obj)) {
		struct rtnl_link *link = (struct rtnl_link *)obj;
		const char *name = rtnl_link_get_name(link);

		if (!name)
			continue;
		for (size_t i = 0; i < sizeof(link_stats) / sizeof(link_stats[0]); i++)
			if (!snapshot_add_counter(s, link_stats[i].metric,
						  rtnl_link_get_stat(link, link_stats[i].id),
						  "interface", name, NULL))
				return -ENOMEM;
	}
	return 0;
}

/* Copy a BPF peer table into a malloc'd array. */
static size_t read_table(int fd, struct peer_count **out)
{
	struct tcp_peer_key key, next, *prev = NULL;
	struct peer_count *arr = calloc(TCP_PEERS_MAX, sizeof(*arr));
	size_t n = 0;

	free(*out);
	*out = arr;
	if (!arr)
		return 0;
	while (n < TCP_PEERS_MAX && bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (bpf_map_lookup_elem(fd, &next, &arr[n].count) == 0) {
			arr[n].key = next;
			n++;
		}
		key = next;
		prev = &key;
	}
	return n;
}

static void addr_str(const struct tcp_peer_key *k, char *buf, size_t len)
{
	if (k->family == 2)
		inet_ntop(AF_INET, k->addr, buf, (socklen_t)len);
	else if (k->family == 10)
		inet_ntop(AF_INET6, k->addr, buf, (socklen_t)len);
	else
		snprintf(buf, len, "unknown");
}

static int collect_bpf(struct tcp_probe *tp, struct snapshot *s)
{
	uint64_t bad = tp->skel->bss->bad_csum_total, retr = tp->skel->bss->retrans_total;
	char peer[INET6_ADDRSTRLEN], ifname[IF_NAMESIZE + 16];

	if (!tp->walked || bad != tp->last_bad) {
		tp->nbad = read_table(bpf_map__fd(tp->skel->maps.bad_csum), &tp->bad);
		tp->last_bad = bad;
	}
	if (!tp->walked || retr != tp->last_retrans) {
		tp->nretr = read_table(bpf_map__fd(tp->skel->maps.retrans), &tp->retr);
		tp->last_retrans = retr;
	}
	tp->walked = 1;
	for (size_t i = 0; i < tp->nbad; i++) {
		addr_str(&tp->bad[i].key, peer, sizeof(peer));
		if (!if_indextoname(tp->bad[i].key.ifindex, ifname))
			snprintf(ifname, sizeof(ifname), "ifindex%u", tp->bad[i].key.ifindex);
		if (!snapshot_add_counter(s, "tcp.bad_csum", tp->bad[i].count, "interface", ifname,
					  "peer", peer, NULL))
			return -ENOMEM;
	}
	for (size_t i = 0; i < tp->nretr; i++) {
		addr_str(&tp->retr[i].key, peer, sizeof(peer));
		if (!snapshot_add_counter(s, "tcp.retransmits", tp->retr[i].count, "peer", peer,
					  NULL))
			return -ENOMEM;
	}
	if (!snapshot_add_counter(s, "tcp.peer_overflow", tp->skel->bss->peer_overflow, NULL))
		return -ENOMEM;
	return 0;
}

/* The value on line `vals` under header field `name` of a "Proto: names" / "Proto: values" pair. */
static uint64_t snmp_field(const char *head, const char *vals, const char *name)
{
	size_t nlen = strlen(name);
	int col = -1, i = 0;

	for (const char *h = strchr(head, ' '); h && *h && *h != '\n'; i++) {
		h += strspn(h, " ");
		if (!strncmp(h, name, nlen) && (h[nlen] == ' ' || h[nlen] == '\n' || !h[nlen])) {
			col = i;
			break;
		}
		h += strcspn(h, " \n");
	}
	if (col < 0)
		return 0;
	for (const char *v = strchr(vals, ' '); v && *v && *v != '\n'; col--) {
		v += strspn(v, " ");
		if (!col)
			return strtoull(v, NULL, 10);
		v += strcspn(v, " \n");
	}
	return 0;
}

/* The line after the line that starts with prefix (a header's values), or NULL. */
static const char *values_of(const char *buf, const char *prefix, const char **head)
{
	const char *p = buf;
	size_t n = strlen(prefix);

	while (p && *p) {
		if (!strncmp(p, prefix, n)) {
			const char *v = strchr(p, '\n');

			*head = p;
			return v && !strncmp(v + 1, prefix, n) ? v + 1 : NULL;
		}
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return NULL;
}

/* TCP and UDP checksum and receive errors in /proc/net/snmp's text buf. */
static uint64_t snmp_errors(const char *buf)
{
	const char *head, *vals;
	uint64_t sum = 0;

	if ((vals = values_of(buf, "Tcp:", &head)))
		sum += snmp_field(head, vals, "InCsumErrors") + snmp_field(head, vals, "InErrs");
	if ((vals = values_of(buf, "Udp:", &head)))
		sum += snmp_field(head, vals, "InCsumErrors") + snmp_field(head, vals, "InErrors");
	return sum;
}

/*
 * Every link's receive errors and frame errors (/proc/net/dev; drops move
 * on healthy hosts, so not them): one pread, read by hand.  *sig (may be
 * NULL): a hash of every link's name, errs, drop and frame.
 */
static uint64_t dev_errors(struct tcp_probe *tp, uint64_t *sig)
{
	uint64_t sum = 0, h = FNV64_OFFSET;
	ssize_t n;

	if (tp->dev_fd < 0 || (n = pread(tp->dev_fd, tp->wbuf, sizeof(tp->wbuf) - 1, 0)) <= 0)
		return 0;
	tp->wbuf[n] = '\0';
	/* "  eth0: bytes packets errs drop fifo frame compressed multicast | tx..." */
	for (const char *line = tp->wbuf; line && *line; ) {
		const char *nl = strchr(line, '\n'), *c = memchr(line, ':', nl ? (size_t)(nl - line) :
								    strlen(line));
		const char *p = c ? c + 1 : NULL;
		unsigned long long f[6];
		int k = 0;

		for (; p && k < 6; k++) {
			char *end;

			p += strspn(p, " \t");
			if (*p < '0' || *p > '9')
				break;
			f[k] = strtoull(p, &end, 10);
			p = end;
		}
		if (k == 6) {
			sum += f[2] + f[5];
			h = fnv64_bytes(h, line, (size_t)(c - line));
			h = fnv64_bytes(h, &f[2], 2 * sizeof(f[0]));	/* errs, drop */
			h = fnv64_bytes(h, &f[5], sizeof(f[0]));	/* frame */
		}
		line = nl ? nl + 1 : NULL;
	}
	if (sig)
		*sig = h;
	return sum;
}

/*
 * The sum of the error counters a page hangs on (snmp_errors, dev_errors).
 * Two preads, no allocation.
 */
static uint64_t error_sum(struct tcp_probe *tp)
{
	uint64_t sum = 0;
	ssize_t n;

	if (tp->files[0].fd >= 0 &&
	    (n = pread(tp->files[0].fd, tp->wbuf, sizeof(tp->wbuf) - 1, 0)) > 0) {
		tp->wbuf[n] = '\0';
		sum = snmp_errors(tp->wbuf);
	}
	return sum + dev_errors(tp, NULL);
}

/*
 * The BPF bad-checksum total at every look (a mapped counter: no syscall);
 * the /proc counters at every PROC_LOOK_EVERY-th (500 ms at the default
 * page_watch): the kernel writing /proc/net/snmp out costs ~100 us, which
 * at every look would cost the probe a fifth of its CPU.
 */
#define PROC_LOOK_EVERY 5

static int tcp_moved(void *priv)
{
	struct tcp_probe *tp = priv;

	if (tp->skel && tp->skel->bss->bad_csum_total != tp->bad_seen)
		return 1;
	if (++tp->looks % PROC_LOOK_EVERY)
		return 0;
	return error_sum(tp) != tp->errors_seen;
}

static int tcp_collect(void *priv, struct snapshot *s)
{
	struct tcp_probe *tp = priv;
	int ret;

	uint64_t snmp_err = 0, sig = 0;

	tp->looks = 0;
	if (tp->skel)
		tp->bad_seen = tp->skel->bss->bad_csum_total;
	for (int i = 0; i < 2; i++)
		if ((ret = collect_proc(tp, &tp->files[i], s, i ? NULL : &snmp_err)))
			return ret;
	/* what tcp_moved compares with: what this snapshot read (snmp once a tick, not twice) */
	tp->errors_seen = snmp_err + dev_errors(tp, &sig);
	if ((ret = collect_links(tp, s, sig)))
		return ret;
	if (tp->skel && (ret = collect_bpf(tp, s)))
		return ret;
	return 0;
}

static void tcp_close(void *priv)
{
	struct tcp_probe *tp = priv;

	if (!tp)
		return;
	for (int i = 0; i < 2; i++) {
		if (tp->files[i].fd > 0)
			close(tp->files[i].fd);
		free(tp->files[i].heads);
		free(tp->files[i].picks);
	}
	if (tp->dev_fd > 0)
		close(tp->dev_fd);
	if (tp->links)
		nl_cache_free(tp->links);
	if (tp->nl)
		nl_socket_free(tp->nl);
	tcp_bpf__destroy(tp->skel);
	free(tp->bad);
	free(tp->retr);
	free(tp);
}

const struct collector tcp_collector = {
	.name = "tcp",
	.needs_bpf = 0,
	.open = tcp_open,
	.collect = tcp_collect,
	.moved = tcp_moved,
	.close = tcp_close,
};
