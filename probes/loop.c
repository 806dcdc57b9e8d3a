/*
 * loop.c - epoll event loop; see loop.h.
 */
#include "probes/loop.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define LOOP_MAX_FDS 64

struct watch {
	int fd;
	loop_fd_cb cb;
	void *arg;
};

struct loop {
	int epfd;
	int timerfd;
	int sigfd;
	int stop;
	loop_timer_cb timer_cb;
	void *timer_arg;
	loop_signal_cb sig_cb;
	void *sig_arg;
	struct watch watches[LOOP_MAX_FDS];
};

struct loop *loop_new(void)
{
	struct loop *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->timerfd = l->sigfd = -1;
	for (int i = 0; i < LOOP_MAX_FDS; i++)
		l->watches[i].fd = -1;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		free(l);
		return NULL;
	}
	return l;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	if (l->timerfd >= 0)
		close(l->timerfd);
	if (l->sigfd >= 0)
		close(l->sigfd);
	close(l->epfd);
	free(l);
}

int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_cb cb, void *arg)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	for (int i = 0; i < LOOP_MAX_FDS; i++) {
		if (l->watches[i].fd >= 0)
			continue;
		if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev))
			return -errno;
		l->watches[i] = (struct watch){ fd, cb, arg };
		return 0;
	}
	return -EMFILE;
}

int loop_mod_fd(struct loop *l, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) ? -errno : 0;
}

void loop_del_fd(struct loop *l, int fd)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	for (int i = 0; i < LOOP_MAX_FDS; i++)
		if (l->watches[i].fd == fd)
			l->watches[i].fd = -1;
}

static void on_timer(struct loop *l, int fd, uint32_t events, void *arg)
{
	uint64_t n;

	(void)events;
	(void)arg;
	if (read(fd, &n, sizeof(n)) == sizeof(n) && l->timer_cb)
		l->timer_cb(l, n, l->timer_arg);
}

int loop_set_timer(struct loop *l, uint64_t interval_ns, loop_timer_cb cb, void *arg)
{
	struct itimerspec its = { 0 };
	struct timespec now, mono;
	uint64_t wall, delay;
	int ret;

	l->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (l->timerfd < 0)
		return -errno;
	clock_gettime(CLOCK_REALTIME, &now);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	wall = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
	delay = interval_ns - wall % interval_ns;
	its.it_interval.tv_sec = (time_t)(interval_ns / 1000000000ULL);
	its.it_interval.tv_nsec = (long)(interval_ns % 1000000000ULL);
	its.it_value.tv_sec = (time_t)(delay / 1000000000ULL);
	its.it_value.tv_nsec = (long)(delay % 1000000000ULL);
	if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
		its.it_value.tv_nsec = 1;
	if (timerfd_settime(l->timerfd, 0, &its, NULL))
		return -errno;
	l->timer_cb = cb;
	l->timer_arg = arg;
	ret = loop_add_fd(l, l->timerfd, EPOLLIN, on_timer, NULL);
	return ret;
}

static void on_signal(struct loop *l, int fd, uint32_t events, void *arg)
{
	struct signalfd_siginfo si;

	(void)events;
	(void)arg;
	while (read(fd, &si, sizeof(si)) == sizeof(si))
		if (l->sig_cb)
			l->sig_cb(l, (int)si.ssi_signo, l->sig_arg);
}

int loop_watch_signals(struct loop *l, const int *signals, loop_signal_cb cb, void *arg)
{
	sigset_t set;

	sigemptyset(&set);
	for (const int *s = signals; *s; s++)
		sigaddset(&set, *s);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	l->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (l->sigfd < 0)
		return -errno;
	l->sig_cb = cb;
	l->sig_arg = arg;
	return loop_add_fd(l, l->sigfd, EPOLLIN, on_signal, NULL);
}

/* Wait up to timeout_ms (-1: forever) and run the ready callbacks. */
static int run_once(struct loop *l, int timeout_ms)
{
	struct epoll_event evs[16];
	int n = epoll_wait(l->epfd, evs, 16, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n && !l->stop; i++) {
		for (int w = 0; w < LOOP_MAX_FDS; w++) {
			if (l->watches[w].fd == evs[i].data.fd) {
				l->watches[w].cb(l, evs[i].data.fd, evs[i].events,
						 l->watches[w].arg);
				break;
			}
		}
	}
	return 0;
}

int loop_run(struct loop *l)
{
	while (!l->stop) {
		int ret = run_once(l, -1);

		if (ret)
			return ret;
	}
	return 0;
}

int loop_run_for(struct loop *l, uint64_t timeout_ns)
{
	struct timespec now;
	uint64_t start, end;

	clock_gettime(CLOCK_MONOTONIC, &now);
	start = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
	end = start + timeout_ns;
	while (!l->stop) {
		uint64_t t;
		int ret;

		clock_gettime(CLOCK_MONOTONIC, &now);
		t = (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
		if (t >= end)
			break;
		ret = run_once(l, (int)((end - t + 999999) / 1000000));
		if (ret)
			return ret;
	}
	return 0;
}

void loop_stop(struct loop *l)
{
	l->stop = 1;
}
