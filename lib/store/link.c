/*
 * link.c - a socket (plain or TLS) to one Redis node; see link.h.
 *
 * Sending: commands are appended to an output buffer and written whole
 * before a reply is read, as hiredis does, so a pipeline costs one write.
 * Receiving: bytes go from the socket (or SSL_read) into a redisReader
 * whose object functions are this file's: they build hiredis-compatible
 * redisReply objects (freeReplyObject frees them) after charging each to
 * the current reply's budget.
 *
 * Timeouts are the socket's own (SO_SNDTIMEO, SO_RCVTIMEO): a blocking
 * read that waits longer fails with EAGAIN, which OpenSSL reports as
 * WANT_READ; either way the link is failed and the caller reconnects.
 */
#include "store/link.h"

#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/timeutil.h"

#define LINK_READ_CHUNK (16 * 1024)
/* what one reply item costs beyond its payload: the redisReply itself */
#define ITEM_COST sizeof(redisReply)

struct link_tls {
	SSL_CTX *ctx;
};

struct link {
	int fd;
	SSL *ssl;
	redisReader *reader;
	char *obuf;
	size_t olen, ocap;
	size_t limit;		/* bound of one reply */
	size_t charged;		/* of the reply being read */
	size_t received;	/* bytes received since the last reply was returned */
	int over;		/* the reply went over its bound */
	int timed_out;		/* a send or receive waited longer than the timeout */
	int failed;
	char errstr[256];
};

static void link_fail(struct link *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void link_fail(struct link *l, const char *fmt, ...)
{
	va_list ap;

	if (l->failed)
		return;		/* the first reason is the one that matters */
	va_start(ap, fmt);
	vsnprintf(l->errstr, sizeof(l->errstr), fmt, ap);
	va_end(ap);
	l->failed = 1;
}

/* OpenSSL's newest queued error, or what errno says. */
static void ssl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_get_error();

	if (e)
		ERR_error_string_n(e, buf, len);
	else
		snprintf(buf, len, "%s", errno ? strerror(errno) : "connection closed");
	ERR_clear_error();
}

/* ---- bounded reply objects ------------------------------------------------ */

/* Charge n bytes to the reply being read; 0, or -1 over its bound. */
static int charge(struct link *l, size_t n)
{
	if (n > l->limit || l->charged > l->limit - n) {
		l->over = 1;
		return -1;
	}
	l->charged += n;
	return 0;
}

static void *attach(const redisReadTask *task, redisReply *r)
{
	if (task->parent) {
		redisReply *parent = task->parent->obj;

		parent->element[task->idx] = r;
	}
	return r;
}

static redisReply *new_item(const redisReadTask *task, size_t payload)
{
	struct link *l = task->privdata;
	redisReply *r;

	if (charge(l, ITEM_COST) || charge(l, payload))
		return NULL;
	r = calloc(1, sizeof(*r));
	if (r)
		r->type = task->type;
	return r;
}

static void *create_string(const redisReadTask *task, char *str, size_t len)
{
	redisReply *r = new_item(task, len + 1);

	if (!r)
		return NULL;
	r->str = malloc(len + 1);
	if (!r->str) {
		free(r);
		return NULL;
	}
	memcpy(r->str, str, len);
	r->str[len] = '\0';
	r->len = len;
	return attach(task, r);
}

static void *create_array(const redisReadTask *task, int elements)
{
	redisReply *r;

	if (elements < 0)
		return NULL;
	r = new_item(task, (size_t)elements * sizeof(redisReply *));
	if (!r)
		return NULL;
	if (elements > 0) {
		r->element = calloc((size_t)elements, sizeof(redisReply *));
		if (!r->element) {
			free(r);
			return NULL;
		}
	}
	r->elements = (size_t)elements;
	return attach(task, r);
}

static void *create_integer(const redisReadTask *task, long long value)
{
	redisReply *r = new_item(task, 0);

	if (!r)
		return NULL;
	r->integer = value;
	return attach(task, r);
}

static void *create_nil(const redisReadTask *task)
{
	redisReply *r = new_item(task, 0);

	if (!r)
		return NULL;
	r->type = REDIS_REPLY_NIL;	/* "$-1" and "*-1" alike */
	return attach(task, r);
}

static redisReplyObjectFunctions bounded_functions = {
	create_string, create_array, create_integer, create_nil, freeReplyObject,
};

/* ---- TLS ------------------------------------------------------------------ */

struct link_tls *link_tls_new(const char *ca_file, const char *cert_file, const char *key_file,
			      char *err, size_t errlen)
{
	struct link_tls *t = calloc(1, sizeof(*t));
	char why[256];

	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->ctx = SSL_CTX_new(TLS_client_method());
	if (!t->ctx) {
		ssl_reason(why, sizeof(why));
		snprintf(err, errlen, "TLS: %s", why);
		goto fail;
	}
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(t->ctx, SSL_MODE_AUTO_RETRY);
	if (ca_file && ca_file[0] ? SSL_CTX_load_verify_locations(t->ctx, ca_file, NULL) != 1
				  : SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
		ssl_reason(why, sizeof(why));
		snprintf(err, errlen, "TLS CA %s: %s", ca_file && ca_file[0] ? ca_file :
			 "(the system's)", why);
		goto fail;
	}
	if (!cert_file != !key_file || (cert_file && !cert_file[0] != !key_file[0])) {
		snprintf(err, errlen, "TLS: a client certificate needs its key and a key its "
			 "certificate (tls_cert and tls_key)");
		goto fail;
	}
	if (cert_file && cert_file[0]) {
		if (SSL_CTX_use_certificate_chain_file(t->ctx, cert_file) != 1) {
			ssl_reason(why, sizeof(why));
			snprintf(err, errlen, "TLS certificate %s: %s", cert_file, why);
			goto fail;
		}
		if (SSL_CTX_use_PrivateKey_file(t->ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
		    SSL_CTX_check_private_key(t->ctx) != 1) {
			ssl_reason(why, sizeof(why));
			snprintf(err, errlen, "TLS key %s: %s", key_file, why);
			goto fail;
		}
	}
	return t;
fail:
	link_tls_free(t);
	return NULL;
}

void link_tls_free(struct link_tls *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}

/* Handshake over l->fd, verifying the server's certificate names name. */
static int tls_start(struct link *l, struct link_tls *t, const char *name, char *err,
		     size_t errlen)
{
	struct in6_addr a6;
	struct in_addr a4;
	int is_ip = inet_pton(AF_INET, name, &a4) == 1 || inet_pton(AF_INET6, name, &a6) == 1;
	char why[256];
	long vr;

	l->ssl = SSL_new(t->ctx);
	if (!l->ssl || SSL_set_fd(l->ssl, l->fd) != 1) {
		ssl_reason(why, sizeof(why));
		snprintf(err, errlen, "TLS: %s", why);
		return -1;
	}
	if (is_ip) {
		X509_VERIFY_PARAM *vp = SSL_get0_param(l->ssl);

		if (X509_VERIFY_PARAM_set1_ip_asc(vp, name) != 1) {
			snprintf(err, errlen, "TLS: cannot verify against address %s", name);
			return -1;
		}
	} else if (SSL_set_tlsext_host_name(l->ssl, name) != 1 || SSL_set1_host(l->ssl, name) != 1) {
		snprintf(err, errlen, "TLS: cannot verify against name %s", name);
		return -1;
	}
	ERR_clear_error();
	errno = 0;
	if (SSL_connect(l->ssl) == 1)
		return 0;
	vr = SSL_get_verify_result(l->ssl);
	if (vr != X509_V_OK)
		snprintf(err, errlen, "TLS handshake: the server's certificate is not trusted "
			 "for %s: %s", name, X509_verify_cert_error_string(vr));
	else {
		ssl_reason(why, sizeof(why));
		snprintf(err, errlen, "TLS handshake: %s", why);
	}
	return -1;
}

/* ---- sockets -------------------------------------------------------------- */

/* Connect fd (non-blocking) to sa within timeout; then make it blocking. */
static int connect_within(int fd, const struct sockaddr *sa, socklen_t salen, uint64_t timeout_ns)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int soerr = 0, ms = (int)(timeout_ns / 1000000);
	socklen_t sl = sizeof(soerr);

	if (connect(fd, sa, salen) && errno != EINPROGRESS && errno != EAGAIN)
		return -errno;
	if (poll(&p, 1, ms > 0 ? ms : 1) <= 0)
		return -ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr)
		return -(soerr ? soerr : errno);
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) ? -errno : 0;
}

static void set_timeouts(int fd, uint64_t timeout_ns)
{
	struct timeval tv = { .tv_sec = (time_t)(timeout_ns / NSEC_PER_SEC),
			      .tv_usec = (suseconds_t)(timeout_ns % NSEC_PER_SEC / 1000) };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static struct link *link_new(int fd, uint64_t timeout_ns)
{
	struct link *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->fd = fd;
	l->limit = LINK_REPLY_LIMIT;
	l->reader = redisReaderCreateWithFunctions(&bounded_functions);
	if (!l->reader) {
		free(l);
		return NULL;
	}
	redisReaderSetPrivdata(l->reader, l);
	set_timeouts(fd, timeout_ns);
	return l;
}

struct link *link_open_tcp(const char *host, int port, struct link_tls *tls,
			   const char *server_name, uint64_t timeout_ns, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	char service[8];
	struct link *l;
	int fd = -1, rc = -ECONNREFUSED;

	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc) {
		snprintf(err, errlen, "%s", gai_strerror(rc));
		return NULL;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		rc = connect_within(fd, ai->ai_addr, ai->ai_addrlen, timeout_ns);
		if (!rc)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errlen, "%s", rc == -ETIMEDOUT ? "Connection timed out" : strerror(-rc));
		return NULL;
	}
	{
		int on = 1, idle = 15;

		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	}
	l = link_new(fd, timeout_ns);
	if (!l) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (tls && tls_start(l, tls, server_name && server_name[0] ? server_name : host, err,
			     errlen)) {
		link_close(l);
		return NULL;
	}
	return l;
}

struct link *link_open_unix(const char *path, uint64_t timeout_ns, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct link *l;
	int fd, rc;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path longer than %zu bytes", sizeof(sa.sun_path) - 1);
		return NULL;
	}
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	rc = connect_within(fd, (struct sockaddr *)&sa, sizeof(sa), timeout_ns);
	if (rc) {
		close(fd);
		snprintf(err, errlen, "%s", rc == -ETIMEDOUT ? "Connection timed out" : strerror(-rc));
		return NULL;
	}
	l = link_new(fd, timeout_ns);
	if (!l) {
		close(fd);
		snprintf(err, errlen, "out of memory");
	}
	return l;
}

void link_close(struct link *l)
{
	if (!l)
		return;
	if (l->ssl) {
		if (!l->failed)
			SSL_shutdown(l->ssl);	/* close_notify; no wait for the peer's */
		SSL_free(l->ssl);
		ERR_clear_error();
	}
	if (l->fd >= 0)
		close(l->fd);
	if (l->reader)
		redisReaderFree(l->reader);
	free(l->obuf);
	free(l);
}

/* ---- commands and replies -------------------------------------------------- */

int link_append(struct link *l, const char *cmd, size_t len)
{
	if (l->olen + len > l->ocap) {
		size_t cap = l->ocap ? l->ocap : 4096;
		char *nb;

		while (cap < l->olen + len)
			cap *= 2;
		nb = realloc(l->obuf, cap);
		if (!nb)
			return -ENOMEM;
		l->obuf = nb;
		l->ocap = cap;
	}
	memcpy(l->obuf + l->olen, cmd, len);
	l->olen += len;
	return 0;
}

static int is_timeout(int e)
{
	return e == EAGAIN || e == EWOULDBLOCK;
}

/*
 * Say why a send (is_send) or a receive failed: ret is what SSL_write or
 * SSL_read returned on a TLS link, send's or recv's on a plain one.  A
 * wait past the socket's timeout marks the link timed_out.
 */
static void io_failed(struct link *l, int ret, int is_send)
{
	int err = errno, timeout = is_timeout(err);
	char why[256];

	if (l->ssl) {
		int e = SSL_get_error(l->ssl, ret);

		if (e == SSL_ERROR_ZERO_RETURN) {
			link_fail(l, "the server closed the connection");
			return;
		}
		timeout |= e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
		if (!timeout) {
			errno = err;
			ssl_reason(why, sizeof(why));
			link_fail(l, "TLS %s: %s", is_send ? "send" : "receive", why);
			return;
		}
	} else if (ret == 0) {
		link_fail(l, "the server closed the connection");
		return;
	}
	if (timeout) {
		l->timed_out = 1;
		link_fail(l, "%s", is_send ? "send timed out" : "no reply within the timeout");
		return;
	}
	link_fail(l, "%s", strerror(err));
}

/* Write the output buffer whole. */
static int flush_out(struct link *l)
{
	size_t off = 0;

	while (off < l->olen) {
		size_t want = l->olen - off;
		ssize_t n;

		errno = 0;
		if (l->ssl)
			n = SSL_write(l->ssl, l->obuf + off, (int)(want > INT32_MAX ? INT32_MAX : want));
		else
			do
				n = send(l->fd, l->obuf + off, want, MSG_NOSIGNAL);
			while (n < 0 && errno == EINTR);
		if (n <= 0) {
			io_failed(l, (int)n, 1);
			return -1;
		}
		off += (size_t)n;
	}
	l->olen = 0;
	if (l->ocap > 1 << 20) {	/* a big pipeline's buffer is not kept */
		free(l->obuf);
		l->obuf = NULL;
		l->ocap = 0;
	}
	return 0;
}

/* Receive some bytes into the reader. */
static int fill(struct link *l)
{
	char buf[LINK_READ_CHUNK];
	ssize_t n;

	errno = 0;
	if (l->ssl)
		n = SSL_read(l->ssl, buf, sizeof(buf));
	else
		do
			n = recv(l->fd, buf, sizeof(buf), 0);
		while (n < 0 && errno == EINTR);
	if (n <= 0) {
		io_failed(l, (int)n, 0);
		return -1;
	}
	l->received += (size_t)n;
	/* a bulk string is buffered whole before the reader builds it: bound the bytes too */
	if (l->received - (size_t)n > l->limit) {
		l->over = 1;
		return -1;
	}
	if (redisReaderFeed(l->reader, buf, (size_t)n) != REDIS_OK) {
		link_fail(l, "protocol: %s", l->reader->errstr);
		return -1;
	}
	return 0;
}

/*
 * The reader builds a bulk string only once all of it has arrived: while
 * it waits for one, its task is a string and its cursor is at the length
 * after '$' (hiredis re-reads it on every attempt).  A length over what
 * the reply may still cost is refused there, before it is received.
 */
static int announced_too_big(struct link *l)
{
	redisReader *r = l->reader;
	long long n;
	char *end;

	if (r->ridx < 0 || r->rstack[r->ridx].type != REDIS_REPLY_STRING || r->pos >= r->len ||
	    !memchr(r->buf + r->pos, '\r', r->len - r->pos))
		return 0;
	n = strtoll(r->buf + r->pos, &end, 10);
	if (end == r->buf + r->pos || *end != '\r' || n < 0)
		return 0;
	if ((unsigned long long)n > l->limit - l->charged) {
		l->over = 1;
		return 1;
	}
	return 0;
}

struct redisReply *link_reply(struct link *l)
{
	void *r = NULL;

	if (l->failed)
		return NULL;
	if (l->olen && flush_out(l))
		return NULL;
	for (;;) {
		if (redisReaderGetReply(l->reader, &r) != REDIS_OK) {
			if (l->over)
				break;
			link_fail(l, "protocol: %s", l->reader->errstr);
			return NULL;
		}
		if (r) {
			/* what the reader holds beyond this reply belongs to the next one */
			l->received = l->reader->len - l->reader->pos;
			l->charged = 0;
			return r;
		}
		if (announced_too_big(l) || fill(l))
			break;
	}
	if (l->over)
		link_fail(l, "a reply larger than %zu bytes (the read bound); not read", l->limit);
	return NULL;
}

int link_too_large(const struct link *l)
{
	return l->over;
}

int link_timed_out(const struct link *l)
{
	return l->timed_out;
}

const char *link_errstr(const struct link *l)
{
	return l->errstr;
}

void link_set_reply_limit(struct link *l, size_t bytes)
{
	l->limit = bytes ? bytes : LINK_REPLY_LIMIT;
}

struct redisReply *link_call(struct link *l, int argc, const char **argv)
{
	char *cmd = NULL;
	int len = redisFormatCommandArgv(&cmd, argc, argv, NULL);
	redisReply *r = NULL;

	if (len >= 0 && !link_append(l, cmd, (size_t)len))
		r = link_reply(l);
	redisFreeCommand(cmd);
	return r;
}

int link_call_ok(struct link *l, int argc, const char **argv, char *why, size_t len)
{
	redisReply *r = link_call(l, argc, argv);
	int ret = 0;

	if (!r) {
		snprintf(why, len, "%s: %s", argv[0], link_errstr(l));
		return -EIO;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(why, len, "%s: %s", argv[0], r->str);
		ret = -EACCES;
	}
	freeReplyObject(r);
	return ret;
}

int link_parse_reply(const char *buf, size_t len, size_t limit, struct redisReply **out)
{
	struct link l = { .fd = -1, .limit = limit ? limit : LINK_REPLY_LIMIT };
	void *r = NULL;
	int ret = -1;

	*out = NULL;
	l.reader = redisReaderCreateWithFunctions(&bounded_functions);
	if (!l.reader)
		return -1;
	redisReaderSetPrivdata(l.reader, &l);
	l.received = len;
	if (len > l.limit) {
		l.over = 1;
	} else if (redisReaderFeed(l.reader, buf, len) == REDIS_OK &&
		   !announced_too_big(&l) && redisReaderGetReply(l.reader, &r) == REDIS_OK) {
		*out = r;
		ret = r ? 1 : 0;
	}
	redisReaderFree(l.reader);
	return ret;
}
