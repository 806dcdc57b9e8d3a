/*
 * drive_inspect.c - `faultline drive inspect`: decode recorded SMART data
 * (smartctl JSON, a libatasmart blob, an NVMe log page) into the normalized
 * drive record, as JSON.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "cli/wear_report.h"
#include "cli/cli.h"

/* ---- drive inspect ------------------------------------------------------ */

int cmd_drive(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "smartctl-json", required_argument, NULL, 's' },
		{ "atasmart-blob", required_argument, NULL, 'a' },
		{ "nvme-log", required_argument, NULL, 'n' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *file = NULL, *device = NULL;
	struct strbuf out = STRBUF_INIT;
	struct drive_record r;
	char err[512], *text;
	size_t len;
	int c, kind = 0, ret;

	if (argc < 2 || strcmp(argv[1], "inspect")) {
		int help = help_asked(argc, argv);

		fprintf(help ? stdout : stderr, "Usage: faultline drive inspect (--smartctl-json "
			"FILE | --atasmart-blob FILE | --nvme-log FILE) [--device NAME]\n");
		return help ? 0 : 2;
	}
	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, "s:a:n:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': case 'a': case 'n': kind = c; file = optarg; break;
		case 'd': device = optarg; break;
		case 'h':
			printf("Usage: faultline drive inspect (--smartctl-json FILE | --atasmart-blob "
			       "FILE | --nvme-log FILE) [--device NAME]\n\n"
			       "Decode a recorded SMART source into faultline's normalized drive record\n"
			       "and print it as JSON (with, under \"source\", where each value came "
			       "from).\n  --smartctl-json  output of `smartctl --json -a DEVICE`\n"
			       "  --atasmart-blob  a libatasmart blob (`skdump --save`)\n"
			       "  --nvme-log       the 512-byte NVMe SMART / Health log page (0x02)\n");
			return 0;
		default:
			return 2;
		}
	}
	if (!file) {
		fprintf(stderr, "faultline drive inspect: give one of --smartctl-json, "
			"--atasmart-blob, --nvme-log (try --help)\n");
		return 2;
	}
	if (cfg_read_file(file, &text, &len, err, sizeof(err))) {
		fprintf(stderr, "faultline drive inspect: %s\n", err);
		return 1;
	}
	drive_init(&r, device);
	ret = kind == 's' ? drive_from_smartctl_json(&r, text, len)
	    : kind == 'a' ? drive_from_atasmart_blob(&r, text, len)
			  : drive_from_nvme_log(&r, text, len);
	free(text);
	if (ret) {
		fprintf(stderr, "faultline drive inspect: %s: %s\n", file, r.error);
		return 1;
	}
	drive_to_json(&r, &out);
	puts(strbuf_str(&out));
	strbuf_release(&out);
	return 0;
}
