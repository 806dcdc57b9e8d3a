/*
 * backoff.h - retry delays: exponential, jittered, capped, as
 * Alertmanager's notifier (and the Go backoff package it uses) does it.
 *
 * The n-th retry waits initial * multiplier^(n-1), capped at max, then
 * spread uniformly over [1 - jitter, 1 + jitter] of that and capped at max
 * again.  Jitter keeps many clients that failed together (a receiver or a
 * Redis that went away for all of them) from retrying in lock step.
 * Alertmanager's defaults: 0.5 s, x1.5, +-50 %, 60 s.
 */
#ifndef FL_BACKOFF_H
#define FL_BACKOFF_H

#include <stdint.h>

#define BACKOFF_INITIAL_NS 500000000ULL		/* 0.5 s */
#define BACKOFF_MULTIPLIER 1.5
#define BACKOFF_JITTER 0.5
#define BACKOFF_MAX_NS 60000000000ULL		/* 60 s */
#define BACKOFF_MIN_INITIAL_NS 100000000ULL	/* what configs may ask for, at least */

struct backoff {
	uint64_t initial_ns, max_ns;
	double multiplier, jitter;
	uint32_t attempts;		/* retries handed out since the last reset */
	uint64_t rng;			/* xorshift state, seeded per instance */
};

/* Alertmanager's schedule, or initial/max_ns where non-zero. */
void backoff_init(struct backoff *b, uint64_t initial_ns, uint64_t max_ns);

/* The delay before the next retry (ns); counts the attempt. */
uint64_t backoff_next(struct backoff *b);

/* The un-jittered delay of retry n (1-based), for logs and tests. */
uint64_t backoff_base(const struct backoff *b, uint32_t n);

/* After a success: the next failure starts from initial again. */
void backoff_reset(struct backoff *b);

#endif
