/*
 * backoff.c - retry delays; see backoff.h.
 *
 * The jitter needs no quality beyond "not in lock step with other
 * processes", so each instance has its own xorshift64 seeded from the
 * clock, its address and the pid: no shared rand() state, thread-safe.
 */
#include "core/backoff.h"

#include <unistd.h>

#include "core/timeutil.h"

void backoff_init(struct backoff *b, uint64_t initial_ns, uint64_t max_ns)
{
	b->initial_ns = initial_ns ? initial_ns : BACKOFF_INITIAL_NS;
	b->max_ns = max_ns ? max_ns : BACKOFF_MAX_NS;
	if (b->max_ns < b->initial_ns)
		b->max_ns = b->initial_ns;
	b->multiplier = BACKOFF_MULTIPLIER;
	b->jitter = BACKOFF_JITTER;
	b->attempts = 0;
	b->rng = time_mono_ns() ^ ((uint64_t)(uintptr_t)b << 17) ^ ((uint64_t)getpid() << 40);
	if (!b->rng)
		b->rng = 0x9e3779b97f4a7c15ULL;
}

uint64_t backoff_base(const struct backoff *b, uint32_t n)
{
	double d = (double)b->initial_ns;

	for (uint32_t i = 1; i < n && d < (double)b->max_ns; i++)
		d *= b->multiplier;
	return d > (double)b->max_ns ? b->max_ns : (uint64_t)d;
}

static double uniform01(struct backoff *b)
{
	b->rng ^= b->rng << 13;
	b->rng ^= b->rng >> 7;
	b->rng ^= b->rng << 17;
	return (double)(b->rng >> 11) / (double)(1ULL << 53);
}

uint64_t backoff_next(struct backoff *b)
{
	double base = (double)backoff_base(b, ++b->attempts);
	double d = base * (1.0 - b->jitter + 2.0 * b->jitter * uniform01(b));

	return d > (double)b->max_ns ? b->max_ns : (uint64_t)d;
}

void backoff_reset(struct backoff *b)
{
	b->attempts = 0;
}
