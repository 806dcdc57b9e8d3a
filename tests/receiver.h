/*
 * receiver.h - a webhook receiver for tests: an HTTP server on loopback
 * (ephemeral port) that records every request and answers as the test
 * says (a status, optionally until a deadline, optionally after a delay).
 */
#ifndef FL_TEST_RECEIVER_H
#define FL_TEST_RECEIVER_H

#include <pthread.h>
#include <stdint.h>

#define MAX_REQ 1024

struct request {
	char headers[4096];
	char *body;		/* NUL-terminated, body_len bytes before it */
	size_t body_len;
	int status;		/* what we answered */
	uint64_t at_ns;
};

struct receiver_state {
	pthread_mutex_t lock;
	int fd, port, stop;
	pthread_t thread;
	struct request req[MAX_REQ];
	int n;
	int status;			/* answer with this */
	uint64_t status_until_ns;	/* ...until then, then 200 */
	int delay_ms;
};

extern struct receiver_state rx;

void rx_start(void);
/* The same on a given loopback port (0: any), e.g. one that refused before. */
void rx_start_on(int port);
void rx_stop(void);
int rx_count(void);
/* Wait until n requests arrived or seconds passed; returns the count. */
int wait_requests(int n, int seconds);
/*
 * Of the requests answered 200 (Alertmanager-format bodies): how many
 * carried alert fp with status ("firing"/"resolved"), duplicates counted;
 * *first (may be NULL) gets the index of the first such request, or -1.
 */
int rx_carried(const char *fp, const char *status, int *first);

/*
 * Call cb with every alert (an element of "alerts") of every request
 * answered 200, in arrival order, with the request's index; under the
 * receiver's lock.  rx_field: a string member of a JSON object, or NULL.
 */
struct json_object;
void rx_each_alert(void (*cb)(int req, struct json_object *alert, void *arg), void *arg);
const char *rx_field(struct json_object *o, const char *key);

/* Value of header name in r into out, or NULL. */
const char *header(const struct request *r, const char *name, char *out, size_t len);

#endif
