/*
 * tcp.c - TCP and UDP counters from /proc/net/snmp.
 *
 * The file pairs a header line with a value line per protocol ("Tcp: Name
 * Name..." / "Tcp: 1 2...").  Each field becomes `proto.snake_case_name`
 * (InCsumErrors -> tcp.in_csum_errors) and is emitted when lib/catalog.c
 * knows that name, which is both the whitelist and the source of its kind.
 * The file stays open and is re-read with pread from offset 0, one syscall
 * per sample.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "log.h"
#include "probe.h"

struct tcp_probe {
	int fd;
	const char *path;
	char buf[16384];
};

/* "InCsumErrors" -> "in_csum_errors" */
static void snake_case(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; in[i] && o + 2 < len; i++) {
		if (isupper((unsigned char)in[i]) && i > 0 && !isupper((unsigned char)in[i - 1]))
			out[o++] = '_';
		out[o++] = (char)tolower((unsigned char)in[i]);
	}
	out[o] = '\0';
}

static int tcp_open(void **priv, const struct probe_config *cfg, char *err, size_t errlen)
{
	struct tcp_probe *tp = calloc(1, sizeof(*tp));
	const char *path = getenv("FL_PROC_NET_SNMP");

	(void)cfg;
	if (!tp)
		return -ENOMEM;
	tp->path = path && *path ? path : "/proc/net/snmp";
	tp->fd = open(tp->path, O_RDONLY | O_CLOEXEC);
	if (tp->fd < 0) {
		int ret = -errno;

		snprintf(err, errlen, "tcp: cannot open %s: %s", tp->path, strerror(errno));
		free(tp);
		return ret;
	}
	*priv = tp;
	return 0;
}

/* Parse one header/value line pair into s. */
static int emit_pair(struct snapshot *s, char *head, char *vals)
{
	char proto[16], metric[96], snake[64], *hsave, *vsave, *h, *v;
	const struct metric_info *mi;
	size_t plen = strcspn(head, ":");

	if (plen >= sizeof(proto) || strncmp(head, vals, plen + 1) != 0)
		return 0;
	for (size_t i = 0; i < plen; i++)
		proto[i] = (char)tolower((unsigned char)head[i]);
	proto[plen] = '\0';
	h = strtok_r(head + plen + 1, " \n", &hsave);
	v = strtok_r(vals + plen + 1, " \n", &vsave);
	for (; h && v; h = strtok_r(NULL, " \n", &hsave), v = strtok_r(NULL, " \n", &vsave)) {
		char *end;
		long long x;

		snake_case(h, snake, sizeof(snake));
		snprintf(metric, sizeof(metric), "%s.%s", proto, snake);
		mi = catalog_find(metric);
		if (!mi)
			continue;
		errno = 0;
		x = strtoll(v, &end, 10);
		if (errno || *end || x < 0)
			continue;
		if (mi->kind == SERIES_COUNTER) {
			if (!snapshot_add_counter(s, metric, (uint64_t)x, NULL))
				return -ENOMEM;
		} else if (!snapshot_add_gauge(s, metric, (double)x, NULL)) {
			return -ENOMEM;
		}
	}
	return 0;
}

static int tcp_collect(void *priv, struct snapshot *s)
{
	struct tcp_probe *tp = priv;
	char *lines[64], *save, *line;
	ssize_t n;
	int nl = 0, ret;

	n = pread(tp->fd, tp->buf, sizeof(tp->buf) - 1, 0);
	if (n < 0) {
		log_warn("tcp: reading %s: %s", tp->path, strerror(errno));
		return 0;
	}
	tp->buf[n] = '\0';
	for (line = strtok_r(tp->buf, "\n", &save); line && nl < 64;
	     line = strtok_r(NULL, "\n", &save))
		lines[nl++] = line;
	for (int i = 0; i + 1 < nl; i += 2)
		if ((ret = emit_pair(s, lines[i], lines[i + 1])))
			return ret;
	return 0;
}

static void tcp_close(void *priv)
{
	struct tcp_probe *tp = priv;

	if (!tp)
		return;
	close(tp->fd);
	free(tp);
}

const struct collector tcp_collector = {
	.name = "tcp",
	.needs_bpf = 0,
	.open = tcp_open,
	.collect = tcp_collect,
	.close = tcp_close,
};
