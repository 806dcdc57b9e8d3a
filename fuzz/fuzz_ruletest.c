/*
 * fuzz_ruletest.c - libFuzzer target for rule unit-test files
 * (`faultline rules test`): the input is written to a temporary file and
 * run; it passes, fails or is rejected with a positioned error, never
 * crashes.  Run from the repository root (as `make fuzz` does): the seeds'
 * rule_files name etc/rules/faultline.yaml relative to the input file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rules/ruletest/ruletest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "./.fl-fuzz-ruletest-XXXXXX";	/* seeds name etc/rules/... */
	int fd = mkstemp(path);
	FILE *sink = fopen("/dev/null", "w");

	if (fd < 0 || !sink || write(fd, data, size) != (ssize_t)size) {
		if (fd >= 0)
			close(fd);
		if (sink)
			fclose(sink);
		unlink(path);
		return 0;
	}
	close(fd);
	ruletest_run(path, sink);
	fclose(sink);
	unlink(path);
	return 0;
}
