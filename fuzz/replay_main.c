/*
 * replay_main.c - runs a fuzz target's LLVMFuzzerTestOneInput over files,
 * once each, without libFuzzer: `make test` replays every seed and every
 * input that once crashed (fuzz/seeds/TARGET/) through every target built
 * with gcc from the same objects as the binaries, so a fixed crash stays
 * fixed.  Exit 0 after the last file; a crash is the failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		uint8_t *buf;
		long len;

		if (!f) {
			perror(argv[i]);
			return 2;
		}
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		rewind(f);
		buf = malloc((size_t)len + 1);
		if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
			fprintf(stderr, "%s: cannot read\n", argv[i]);
			fclose(f);
			free(buf);
			return 2;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)len);
		free(buf);
	}
	printf("%d input(s) replayed\n", argc - 1);
	return 0;
}
