/*
 * hotloop.c - burn CPU in a function with a name to find in a profile:
 * `make demo` runs it in a CPU-quota cgroup, and the throttling page's
 * evidence should name demo_hot_function among the top stacks.
 */
#include <stdint.h>

__attribute__((noinline)) uint64_t demo_hot_function(uint64_t x)
{
	for (int i = 0; i < 1000000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

int main(void)
{
	volatile uint64_t x = 1;

	for (;;)
		x = demo_hot_function(x);
}
