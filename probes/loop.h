/*
 * loop.h - the probe's single-threaded event loop: epoll over file
 * descriptors, timerfd for the sampling tick, signalfd for signals.
 *
 * Everything the probe does on its own thread happens in callbacks run from
 * loop_run(); callbacks must not block.  (Redis I/O is on the store's own
 * writer thread, see lib/store/store.h.)
 */
#ifndef FL_LOOP_H
#define FL_LOOP_H

#include <stdint.h>

struct loop;

/* fd became ready with epoll `events`. */
typedef void (*loop_fd_cb)(struct loop *l, int fd, uint32_t events, void *arg);
/* The timer fired; `expirations` > 1 means ticks were missed. */
typedef void (*loop_timer_cb)(struct loop *l, uint64_t expirations, void *arg);
/* A signal from the set given to loop_watch_signals arrived. */
typedef void (*loop_signal_cb)(struct loop *l, int signo, void *arg);

/* Returns a new loop, or NULL with errno set. */
struct loop *loop_new(void);
void loop_free(struct loop *l);

/* Watch fd for events (EPOLLIN, EPOLLOUT...). Returns 0 or -errno. */
int loop_add_fd(struct loop *l, int fd, uint32_t events, loop_fd_cb cb, void *arg);
/* Change the events watched on fd. */
int loop_mod_fd(struct loop *l, int fd, uint32_t events);
/* Stop watching fd (does not close it). */
void loop_del_fd(struct loop *l, int fd);

/*
 * Fire cb every interval_ns on CLOCK_MONOTONIC, the first time when the
 * wall clock next crosses a multiple of the interval (so 1 s snapshots of
 * every host in a fleet are taken at the same instants).  One timer per
 * loop.  Returns 0 or -errno.
 */
int loop_set_timer(struct loop *l, uint64_t interval_ns, loop_timer_cb cb, void *arg);

/* Block the given signals (0-terminated list) and deliver them to cb. */
int loop_watch_signals(struct loop *l, const int *signals, loop_signal_cb cb, void *arg);

/* Run until loop_stop(). Returns 0 or -errno on an epoll failure. */
int loop_run(struct loop *l);

/*
 * Run callbacks for timeout_ns (or until loop_stop()), for a program whose
 * own work is not driven by the loop (faultline-rules serves /metrics this
 * way between evaluations).  Returns 0 or -errno.
 */
int loop_run_for(struct loop *l, uint64_t timeout_ns);
void loop_stop(struct loop *l);

#endif
