/*
 * receiver.c - see receiver.h.
 */
#include "tests/receiver.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/timeutil.h"


struct receiver_state rx = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *rx_main(void *arg)
{
	(void)arg;
	while (!rx.stop) {
		int c = accept(rx.fd, NULL, NULL);
		/* room for a storm's notifications (1,000 alerts each) */
		static char buf[8 << 20];
		size_t got = 0;
		char *hend = NULL;
		long clen = 0;
		int status;

		if (c < 0)
			continue;
		/* a client that stops mid-request (SIGSTOP) must not stop the receiver */
		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ .tv_sec = 2 },
			   sizeof(struct timeval));
		while (got < sizeof(buf) - 1) {
			ssize_t n = read(c, buf + got, sizeof(buf) - 1 - got);

			if (n <= 0)
				break;
			got += (size_t)n;
			buf[got] = '\0';
			if (!hend && (hend = strstr(buf, "\r\n\r\n"))) {
				char *cl = strcasestr(buf, "Content-Length:");

				clen = cl ? atol(cl + 15) : 0;
			}
			if (hend && got >= (size_t)(hend + 4 - buf) + (size_t)clen)
				break;
		}
		pthread_mutex_lock(&rx.lock);
		status = rx.status_until_ns && time_mono_ns() < rx.status_until_ns ? rx.status :
			 rx.status_until_ns ? 200 : rx.status;
		if (rx.n < MAX_REQ && hend) {
			struct request *r = &rx.req[rx.n++];

			snprintf(r->headers, sizeof(r->headers), "%.*s", (int)(hend - buf), buf);
			/* bodies may be binary (remote write): kept whole, with their length */
			r->body = malloc((size_t)clen + 1);
			if (r->body) {
				memcpy(r->body, hend + 4, (size_t)clen);
				r->body[clen] = '\0';
			}
			r->body_len = (size_t)clen;
			r->status = status;
			r->at_ns = time_mono_ns();
		}
		int delay = rx.delay_ms;

		pthread_mutex_unlock(&rx.lock);
		if (delay)
			usleep((useconds_t)delay * 1000);
		if (status >= 400) {
			/* a refusal says why, as Alertmanager's API does */
			static const char why[] = "{\"code\":400,\"message\":\"refused by the test "
						  "receiver\"}";

			dprintf(c, "HTTP/1.1 %d X\r\nContent-Length: %zu\r\nConnection: close\r\n"
				"\r\n%s", status, sizeof(why) - 1, why);
		} else {
			dprintf(c, "HTTP/1.1 %d X\r\nContent-Length: 2\r\nConnection: close\r\n"
				"\r\nok", status);
		}
		close(c);
	}
	return NULL;
}

void rx_start_on(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t len = sizeof(sa);
	int one = 1;

	rx.fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(rx.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	cr_assert_eq(bind(rx.fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	listen(rx.fd, 64);
	getsockname(rx.fd, (struct sockaddr *)&sa, &len);
	rx.port = ntohs(sa.sin_port);
	if (!rx.status)
		rx.status = 200;	/* unless the test said otherwise first */
	pthread_create(&rx.thread, NULL, rx_main, NULL);
}

void rx_start(void)
{
	rx_start_on(0);
}

void rx_stop(void)
{
	rx.stop = 1;
	shutdown(rx.fd, SHUT_RDWR);
	close(rx.fd);
	pthread_join(rx.thread, NULL);
	for (int i = 0; i < rx.n; i++)
		free(rx.req[i].body);
	rx.n = 0;
	rx.stop = 0;
	rx.status = 0;
}

int rx_count(void)
{
	int n;

	pthread_mutex_lock(&rx.lock);
	n = rx.n;
	pthread_mutex_unlock(&rx.lock);
	return n;
}

int wait_requests(int n, int seconds)
{
	for (int i = 0; i < seconds * 20 && rx_count() < n; i++)
		usleep(50000);
	return rx_count();
}

const char *header(const struct request *r, const char *name, char *out, size_t len)
{
	const char *h = strcasestr(r->headers, name);

	if (!h)
		return NULL;
	h += strlen(name) + 2;
	snprintf(out, len, "%.*s", (int)strcspn(h, "\r\n"), h);
	return out;
}


void rx_each_alert(void (*cb)(int req, json_object *alert, void *arg), void *arg)
{
	pthread_mutex_lock(&rx.lock);
	for (int i = 0; i < rx.n; i++) {
		json_object *doc, *alerts;

		if (rx.req[i].status != 200 || !(doc = json_tokener_parse(rx.req[i].body)))
			continue;
		if (json_object_object_get_ex(doc, "alerts", &alerts))
			for (size_t k = 0; k < json_object_array_length(alerts); k++)
				cb(i, json_object_array_get_idx(alerts, k), arg);
		json_object_put(doc);
	}
	pthread_mutex_unlock(&rx.lock);
}

const char *rx_field(json_object *o, const char *key)
{
	json_object *x;

	return json_object_object_get_ex(o, key, &x) ? json_object_get_string(x) : NULL;
}

struct carried_arg {
	const char *fp, *status;
	int n, first;
};

static void carried_cb(int req, json_object *a, void *arg)
{
	struct carried_arg *c = arg;
	const char *fp = rx_field(a, "fingerprint"), *st = rx_field(a, "status");

	if (fp && st && !strcmp(fp, c->fp) && !strcmp(st, c->status)) {
		if (c->first < 0)
			c->first = req;
		c->n++;
	}
}

int rx_carried(const char *fp, const char *status, int *first)
{
	struct carried_arg c = { fp, status, 0, -1 };

	rx_each_alert(carried_cb, &c);
	if (first)
		*first = c.first;
	return c.n;
}
