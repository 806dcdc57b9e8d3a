/*
 * test_drive.c - drive health: every real smartctl JSON and libatasmart
 * blob in ../shared/testdata parses and agrees with values read from the
 * same file by a different route; NVMe log pages decode byte for byte;
 * bad input, a missing or hanging smartctl and a vanished device give
 * clear errors while the collector keeps running; the wear report's rows,
 * projection, sorting and formats on a real Redis.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atasmart.h>
#include <json-c/json.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "core/config.h"
#include "model/drive.h"
#include "tests/helpers.h"
#include "probes/probe.h"
#include "store/store.h"
#include "core/timeutil.h"
#include "cli/wear_report.h"

static char testdata[512];

static const char *shared_dir(const char *sub)
{
	const char *s = getenv("FL_SHARED");

	snprintf(testdata, sizeof(testdata), "%s/testdata/%s", s && *s ? s : "../shared", sub);
	if (access(testdata, R_OK))
		cr_skip_test("no test data at %s (set FL_SHARED)", testdata);
	return testdata;
}

static char *slurp(const char *path, size_t *len)
{
	char err[256], *text;

	cr_assert_eq(cfg_read_file(path, &text, len, err, sizeof(err)), 0, "%s", err);
	return text;
}

static json_object *jget(json_object *o, const char *path)
{
	char key[64];

	while (o && *path) {
		size_t n = strcspn(path, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		if (!json_object_object_get_ex(o, key, &o))
			return NULL;
		path += n + (path[n] == '.');
	}
	return o;
}

static json_object *ata_attr(json_object *root, const char *name)
{
	json_object *t = jget(root, "ata_smart_attributes.table");

	for (size_t i = 0; t && i < json_object_array_length(t); i++) {
		json_object *a = json_object_array_get_idx(t, i);

		if (!strcmp(json_object_get_string(jget(a, "name")), name))
			return a;
	}
	return NULL;
}

static struct drive_record parse_file(const char *dir, const char *name)
{
	struct drive_record r;
	char path[1024];
	size_t len;
	char *text;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	text = slurp(path, &len);
	drive_init(&r, NULL);
	cr_assert_eq(drive_from_smartctl_json(&r, text, len), 0, "%s: %s", name, r.error);
	free(text);
	return r;
}

Test(drive, every_smartctl_file_parses_and_agrees_with_the_file)
{
	const char *dir = shared_dir("smartctl");
	DIR *d = opendir(dir);
	struct dirent *de;
	int files = 0, nvme = 0, ata = 0, scsi = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		char path[1024];
		size_t len;
		char *text;
		json_object *root, *x;
		struct drive_record r;

		if (!strstr(de->d_name, ".json"))
			continue;
		files++;
		r = parse_file(dir, de->d_name);
		cr_assert_str_eq(r.status, "ok", "%s: %s", de->d_name, r.error);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		text = slurp(path, &len);
		root = json_tokener_parse(text);
		free(text);
		cr_assert_not_null(root);
		if ((x = jget(root, "power_on_time.hours")))
			cr_assert_eq(r.f[DF_POWER_ON_HOURS].v, json_object_get_double(x), "%s",
				     de->d_name);
		if ((x = jget(root, "temperature.current")))
			cr_assert_eq(r.f[DF_TEMPERATURE_C].v, json_object_get_double(x), "%s",
				     de->d_name);
		if ((x = jget(root, "nvme_smart_health_information_log"))) {
			nvme++;
			cr_assert_str_eq(r.protocol, "nvme");
			cr_assert_eq(r.f[DF_WEAR_USED_PCT].v,
				     json_object_get_double(jget(x, "percentage_used")), "%s", de->d_name);
			cr_assert_eq(r.f[DF_SPARE_PCT].v,
				     json_object_get_double(jget(x, "available_spare")));
			cr_assert_eq(r.f[DF_BYTES_WRITTEN].v,
				     json_object_get_double(jget(x, "data_units_written")) * 512000.0);
			cr_assert(r.has_critical_warning);
		} else if (jget(root, "ata_smart_attributes")) {
			json_object *a;

			ata++;
			cr_assert_str_eq(r.protocol, "ata");
			if ((a = ata_attr(root, "Media_Wearout_Indicator")))
				cr_assert_eq(r.f[DF_WEAR_USED_PCT].v,
					     100 - json_object_get_int(jget(a, "value")), "%s",
					     de->d_name);
			if ((a = ata_attr(root, "Reallocated_Sector_Ct")))
				cr_assert_eq(r.f[DF_REALLOCATED_SECTORS].v,
					     strtod(json_object_get_string(jget(a, "raw.string")), NULL),
					     "%s", de->d_name);
			if ((a = ata_attr(root, "Current_Pending_Sector")))
				cr_assert_eq(r.f[DF_PENDING_SECTORS].v,
					     strtod(json_object_get_string(jget(a, "raw.string")), NULL));
			if (jget(root, "rotation_rate") &&
			    json_object_get_int(jget(root, "rotation_rate")) > 0)
				cr_assert(!r.f[DF_WEAR_USED_PCT].present,
					  "%s: a HDD with a wear value", de->d_name);
		} else {
			scsi++;
			cr_assert_str_eq(r.protocol, "scsi", "%s", de->d_name);
			if ((x = jget(root, "scsi_grown_defect_list")))
				cr_assert_eq(r.f[DF_REALLOCATED_SECTORS].v, json_object_get_double(x));
		}
		json_object_put(root);
	}
	closedir(d);
	cr_log_info("%d smartctl files: %d NVMe, %d ATA, %d SCSI", files, nvme, ata, scsi);
	cr_assert_gt(files, 50);
	cr_assert(nvme && ata && scsi);
}

Test(drive, specific_real_drives)
{
	const char *dir = shared_dir("smartctl");
	struct drive_record r;
	char buf[128];

	/* the ~75 %-used NVMe */
	r = parse_file(dir, "nvme-null-INTEL_SSDPE2KX020T7-nvme6.json");
	cr_assert_eq(r.f[DF_WEAR_USED_PCT].v, 75);
	/* Intel SATA SSD with a low Media_Wearout_Indicator (22 -> 78 % used) */
	r = parse_file(dir, "sat-Intel_730_and_DC_S35x0_3610_3700_Series_SSDs-INTEL_SSDSC2BB240G4-sde.json");
	cr_assert_eq(r.f[DF_WEAR_USED_PCT].v, 78);
	cr_assert(strstr(r.f[DF_WEAR_USED_PCT].src, "Media_Wearout_Indicator normalized 22"),
		  "%s", r.f[DF_WEAR_USED_PCT].src);
	cr_assert_eq(r.f[DF_SPARE_PCT].v, 100);
	cr_assert_eq(r.f[DF_BYTES_WRITTEN].v, 15376617.0 * 32 * 1048576);
	cr_assert_eq(r.rotational, 0);
	/* a HDD with reallocated sectors: no wear indicator */
	r = parse_file(dir, "ST3500418AS_12.json");
	cr_assert_eq(r.f[DF_REALLOCATED_SECTORS].v, 304);
	cr_assert(!r.f[DF_WEAR_USED_PCT].present);
	cr_assert_eq(r.rotational, 1);
	/* SAS with grown defects */
	r = parse_file(dir, "SEAGATE_ST373453LC_26.json");
	cr_assert_str_eq(r.protocol, "scsi");
	cr_assert_eq(r.f[DF_REALLOCATED_SECTORS].v, 260);
	/* Seagate 188 is three packed 16-bit counters: the raw string's last is the total */
	r = parse_file(dir, "sat-Seagate_Constellation_ES.3-ST3000NM0033-9ZM178-sdc.json");
	cr_assert(r.f[DF_COMMAND_TIMEOUTS].present);
	cr_assert_lt(r.f[DF_COMMAND_TIMEOUTS].v, 65536, "decoded from the 48-bit number");
	/* temperature from a packed raw string "16 (Min/Max 14/28)" via the attribute route */
	cr_assert_str_eq(drive_critical_warning_names(0x0a, buf, sizeof(buf)),
			 "temperature,read_only");
}

Test(drive, nvme_critical_warning_in_smartctl_json)
{
	/* The fixtures hold no NVMe drive with a critical warning set; set one in a
	 * copy made in memory (the file itself is untouched). */
	const char *dir = shared_dir("smartctl");
	char path[1024];
	size_t len;
	char *text = NULL;
	json_object *root;
	struct drive_record r;

	snprintf(path, sizeof(path), "%s/nvme-null-INTEL_SSDPE2KX020T7-nvme6.json", dir);
	text = slurp(path, &len);
	root = json_tokener_parse(text);
	free(text);
	json_object_object_add(jget(root, "nvme_smart_health_information_log"),
			       "critical_warning", json_object_new_int(NVME_CW_RELIABILITY));
	const char *copy = json_object_to_json_string(root);

	drive_init(&r, "nvme6");
	cr_assert_eq(drive_from_smartctl_json(&r, copy, strlen(copy)), 0);
	cr_assert_eq(r.critical_warning, NVME_CW_RELIABILITY);
	struct wear_row row = { .rec = r };

	wear_assess(&row, 20000);
	cr_assert_str_eq(row.verdict, "failing", "%s", row.reason);
	cr_assert(strstr(row.reason, "reliability_degraded"), "%s", row.reason);
	json_object_put(root);
}

static void atasmart_cb(SkDisk *d, const SkSmartAttributeParsedData *a, void *u)
{
	(void)d;
	(void)a;
	(*(int *)u)++;
}

Test(drive, every_atasmart_blob_parses_and_agrees_with_libatasmart)
{
	const char *dir = shared_dir("atasmart-blobs");
	DIR *d = opendir(dir);
	struct dirent *de;
	int files = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		char path[1024];
		size_t len;
		char *blob;
		struct drive_record r;
		SkDisk *sk;
		uint64_t v;
		int nattr = 0;

		if (de->d_name[0] == '.' || strstr(de->d_name, "README"))
			continue;
		files++;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		blob = slurp(path, &len);
		drive_init(&r, NULL);
		cr_assert_eq(drive_from_atasmart_blob(&r, blob, len), 0, "%s: %s", de->d_name,
			     r.error);
		cr_assert_str_eq(r.status, "ok");
		cr_assert_str_eq(r.protocol, "ata");
		cr_assert_neq(r.model[0], '\0', "%s: no model", de->d_name);
		/* the other route: libatasmart's own high-level getters */
		cr_assert_eq(sk_disk_open(NULL, &sk), 0);
		cr_assert_eq(sk_disk_set_blob(sk, blob, len), 0);
		if (sk_disk_smart_get_power_on(sk, &v) == 0)
			cr_assert_eq(r.f[DF_POWER_ON_HOURS].v, (double)(v / 3600000ULL), "%s",
				     de->d_name);
		if (sk_disk_smart_get_temperature(sk, &v) == 0)
			cr_assert(fabs(r.f[DF_TEMPERATURE_C].v - ((double)v - 273150) / 1000) < 0.01,
				  "%s: %.1f C vs %llu mK", de->d_name, r.f[DF_TEMPERATURE_C].v,
				  (unsigned long long)v);
		if (sk_disk_smart_get_bad(sk, &v) == 0 && r.f[DF_REALLOCATED_SECTORS].present &&
		    r.f[DF_PENDING_SECTORS].present)
			cr_assert_eq(r.f[DF_REALLOCATED_SECTORS].v + r.f[DF_PENDING_SECTORS].v,
				     (double)v, "%s", de->d_name);
		sk_disk_smart_parse_attributes(sk, atasmart_cb, &nattr);
		cr_assert_gt(nattr, 0);
		sk_disk_free(sk);
		free(blob);
	}
	closedir(d);
	cr_assert_gt(files, 10);
}

Test(drive, nvme_log_page_decodes_every_field_and_warning_bit)
{
	uint8_t page[512] = { 0 };
	struct drive_record r;
	char names[256];

	page[0] = 0x3f;
	page[1] = 310 & 0xff;	/* 310 K */
	page[2] = 310 >> 8;
	page[3] = 4;		/* spare */
	page[4] = 10;		/* threshold */
	page[5] = 101;		/* used: may exceed 100 */
	page[48] = 0xe8;	/* data units written = 1000 */
	page[49] = 0x03;
	page[128] = 0x39;	/* power on hours = 12345 */
	page[129] = 0x30;
	page[160] = 7;		/* media errors */
	drive_init(&r, "nvme0n1");
	cr_assert_eq(drive_from_nvme_log(&r, page, sizeof(page)), 0);
	cr_assert_eq(r.f[DF_TEMPERATURE_C].v, 37);
	cr_assert_eq(r.f[DF_SPARE_PCT].v, 4);
	cr_assert_eq(r.f[DF_SPARE_THRESHOLD_PCT].v, 10);
	cr_assert_eq(r.f[DF_WEAR_USED_PCT].v, 101);
	cr_assert_eq(r.f[DF_BYTES_WRITTEN].v, 512000000.0);
	cr_assert_eq(r.f[DF_POWER_ON_HOURS].v, 12345);
	cr_assert_eq(r.f[DF_MEDIA_ERRORS].v, 7);
	cr_assert_eq(r.critical_warning, 0x3f);
	cr_assert_eq(r.smart_passed, 0);
	cr_assert_str_eq(drive_critical_warning_names(r.critical_warning, names, sizeof(names)),
			 "spare_below_threshold,temperature,reliability_degraded,read_only,"
			 "volatile_memory_backup_failed,pmr_read_only");
	static const char *const one[] = { "spare_below_threshold", "temperature",
					   "reliability_degraded", "read_only",
					   "volatile_memory_backup_failed", "pmr_read_only" };
	for (int b = 0; b < 6; b++)
		cr_assert_str_eq(drive_critical_warning_names(1u << b, names, sizeof(names)), one[b]);
	cr_assert_neq(drive_from_nvme_log(&r, page, 100), 0);
	cr_assert(strstr(r.error, "512 bytes"), "%s", r.error);
}

Test(drive, bad_input_gets_a_clear_error)
{
	const char *dir = shared_dir("smartctl");
	struct drive_record r;
	char path[1024], junk[1572];
	size_t len;
	char *text;

	snprintf(path, sizeof(path), "%s/nvme-null-CT250P2SSD8-nvme0.json", dir);
	text = slurp(path, &len);
	drive_init(&r, NULL);
	cr_assert_neq(drive_from_smartctl_json(&r, text, len / 2), 0);
	cr_assert(strstr(r.error, "not valid JSON"), "%s", r.error);
	free(text);
	drive_init(&r, NULL);
	cr_assert_neq(drive_from_smartctl_json(&r, "garbage", 7), 0);
	drive_init(&r, NULL);
	cr_assert_neq(drive_from_smartctl_json(&r, "{\"a\":1}", 7), 0);
	cr_assert(strstr(r.error, "not smartctl"), "%s", r.error);
	drive_init(&r, NULL);
	cr_assert_neq(drive_from_atasmart_blob(&r, "short", 5), 0);
	cr_assert(strstr(r.error, "5"), "%s", r.error);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 37 + 11);
	drive_init(&r, NULL);
	drive_from_atasmart_blob(&r, junk, sizeof(junk));	/* must not crash */
	/* a device that does not exist */
	drive_init(&r, "sdq");
	cr_assert_neq(drive_from_atasmart_device(&r, "/dev/fl-no-such-disk"), 0);
	cr_assert(strstr(r.error, "/dev/fl-no-such-disk"), "%s", r.error);
	drive_init(&r, "nvme9");
	cr_assert_neq(drive_from_nvme_device(&r, "/dev/fl-no-such-nvme"), 0);
}

/* A fake /sys/block with one SCSI disk, and a smartctl that never answers. */
static char fake[256];

static void make_fake_sysfs(const char *smartctl_body)
{
	char path[512];
	FILE *f;

	snprintf(fake, sizeof(fake), "/tmp/fl-drive.XXXXXX");
	cr_assert_not_null(mkdtemp(fake));
	cr_assert_eq(test_sh("mkdir -p %s/block/sdz/device %s/block/loop7", fake, fake), 0);
	snprintf(path, sizeof(path), "%s/block/sdz/device/vendor", fake);
	f = fopen(path, "w");
	fputs("SEAGATE\n", f);
	fclose(f);
	if (smartctl_body) {
		snprintf(path, sizeof(path), "%s/smartctl", fake);
		f = fopen(path, "w");
		fprintf(f, "#!/bin/sh\n%s\n", smartctl_body);
		fclose(f);
		chmod(path, 0755);
	}
	snprintf(path, sizeof(path), "%s/block", fake);
	setenv("FL_SYS_BLOCK", path, 1);
}

static void run_collector(const char *smartctl, uint64_t timeout_ns, struct snapshot *s,
			  char *status, char *error)
{
	struct probe_config cfg;
	char err[512];
	void *priv;

	probe_config_defaults(&cfg, err, sizeof(err));
	free(cfg.smartctl);
	cfg.smartctl = strdup(smartctl);
	cfg.drive_timeout_ns = timeout_ns;
	cr_assert_eq(drive_collector.open(&priv, &cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(drive_wait_scan(priv, 20 * NSEC_PER_SEC), 0, "no scan finished");
	snapshot_init(s, "h", 1, 1000, 0, 1);
	cr_assert_eq(drive_collector.collect(priv, s), 0, "the collector stopped working");
	/* the record's reason, via its JSON in a real publish would be the same */
	drive_collector.close(priv);
	probe_config_free(&cfg);
	(void)status;
	(void)error;
}

/*
 * Whatever the test's outcome: the hanging smartctl is killed and the fake
 * tree removed.  (The pattern's "[/]" keeps pkill from matching the shell
 * that runs it, which used to die before its rm -rf.)
 */
static void remove_fake_sysfs(void)
{
	if (fake[0])
		test_sh("pkill -f '[/]%s/smartctl' 2>/dev/null; rm -rf %s", fake + 1, fake);
	fake[0] = '\0';
	unsetenv("FL_SYS_BLOCK");
}

Test(drive, missing_smartctl_is_reported_and_the_collector_keeps_running,
     .fini = remove_fake_sysfs, .timeout = 60)
{
	struct snapshot s;
	const struct series *ser;

	make_fake_sysfs(NULL);
	run_collector("/nonexistent/smartctl", 5 * NSEC_PER_SEC, &s, NULL, NULL);
	ser = snapshot_find(&s, "drive.smart_available{device=sdz,model=unknown}");
	cr_assert_not_null(ser, "the fake SCSI disk was not reported");
	cr_assert_eq(ser->gauge.last, 0);
	cr_assert_null(snapshot_find(&s, "drive.smart_available{device=loop7,model=unknown}"),
		       "loop devices must be skipped");
	snapshot_free(&s);
}

Test(drive, hanging_smartctl_times_out, .fini = remove_fake_sysfs, .timeout = 60)
{
	struct snapshot s;
	char smartctl[512];
	uint64_t t0 = time_mono_ns();

	make_fake_sysfs("sleep 30");
	snprintf(smartctl, sizeof(smartctl), "%s/smartctl", fake);
	run_collector(smartctl, NSEC_PER_SEC, &s, NULL, NULL);
	cr_assert_lt(time_mono_ns() - t0, 10 * NSEC_PER_SEC, "the timeout did not fire");
	cr_assert_not_null(snapshot_find(&s, "drive.smart_available{device=sdz,model=unknown}"));
	snapshot_free(&s);
	unsetenv("FL_SYS_BLOCK");
}

Test(drive, this_vm_virtio_disk_reports_no_smart, .timeout = 60)
{
	struct snapshot s;

	if (access("/sys/block/vda", F_OK))
		cr_skip_test("no virtio disk vda on this machine");
	unsetenv("FL_SYS_BLOCK");
	run_collector("/usr/sbin/smartctl", 10 * NSEC_PER_SEC, &s, NULL, NULL);
	const struct series *ser = snapshot_find(&s, "drive.smart_available{device=vda,model=unknown}");

	cr_assert_not_null(ser);
	cr_assert_eq(ser->gauge.last, 0);
	snapshot_free(&s);
}

/* ---- wear report --------------------------------------------------------- */

static void seed_drive(struct conn *c, const char *host, const char *dev, const char *serial,
		       const char *model, double wear, double poh, double hist_wear_30d_ago,
		       int64_t today)
{
	struct strbuf sb = STRBUF_INIT;
	struct drive_record r;
	char day[16];

	drive_init(&r, dev);
	snprintf(r.protocol, sizeof(r.protocol), "nvme");
	snprintf(r.model, sizeof(r.model), "%s", model);
	snprintf(r.serial, sizeof(r.serial), "%s", serial);
	r.smart_passed = 1;
	if (wear >= 0)
		drive_set(&r, DF_WEAR_USED_PCT, wear, "test");
	drive_set(&r, DF_POWER_ON_HOURS, poh, "test");
	drive_set(&r, DF_SPARE_PCT, 100, "test");
	drive_set(&r, DF_SPARE_THRESHOLD_PCT, 10, "test");
	drive_to_json(&r, &sb);
	freeReplyObject(conn_commandf(c, NULL, "HSET fl:{%s}:drives %s %s", host, dev, strbuf_str(&sb)));
	if (hist_wear_30d_ago >= 0) {
		freeReplyObject(conn_commandf(c, NULL, "HSET fl:{%s}:drives:wear:%s %s %f,0,0", host, serial,
					     wear_format_day(today - 30, day, sizeof(day)),
					     hist_wear_30d_ago));
		freeReplyObject(conn_commandf(c, NULL, "HSET fl:{%s}:drives:wear:%s %s %f,0,0", host, serial,
					     wear_format_day(today, day, sizeof(day)), wear));
	}
	strbuf_release(&sb);
}

Test(drive, wear_report_rows_projection_sorting_and_formats, .timeout = 60)
{
	struct test_redis redis;
	struct wear_row *rows;
	struct conn *c;
	size_t n;
	char err[256], day[16];
	int64_t today = wear_parse_day("2026-11-30");

	cr_assert_eq(test_redis_start(&redis), 0);
	c = conn_open(redis.url, NSEC_PER_SEC, err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	freeReplyObject(conn_commandf(c, NULL, "SET fl:{db-1}:host {\"labels\":{\"rack\":\"r1\"}}"));
	freeReplyObject(conn_commandf(c, NULL, "SET fl:{db-2}:host {\"labels\":{\"rack\":\"r2\"}}"));
	freeReplyObject(conn_commandf(c, NULL, "SET fl:{web-1}:host {\"labels\":{}}"));
	/* 60 % now, 50 % 30 days ago: 10 %/30d, 100 % in 120 days -> watch */
	seed_drive(c, "db-1", "nvme0n1", "S1", "MODEL-A", 60, 20000, 50, today);
	/* 95 % used: replace */
	seed_drive(c, "db-2", "nvme0n1", "S2", "MODEL-A", 95, 30000, -1, today);
	/* healthy, no history */
	seed_drive(c, "web-1", "nvme0n1", "S3", "MODEL-B", 3, 1000, -1, today);
	/* 100 %: failing */
	seed_drive(c, "web-1", "nvme1n1", "S4", "MODEL-B", 100, 40000, 99, today);

	cr_assert_eq(wear_load(c, &rows, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 4);
	for (size_t i = 0; i < n; i++)
		wear_assess(&rows[i], today);
	wear_sort(rows, n);
	cr_assert_str_eq(rows[0].verdict, "failing");
	cr_assert_str_eq(rows[0].rec.serial, "S4");
	cr_assert_str_eq(rows[1].verdict, "replace");
	cr_assert_str_eq(rows[2].verdict, "watch", "%s", rows[2].reason);
	cr_assert_str_eq(rows[2].host, "db-1");
	cr_assert_str_eq(rows[2].rack, "r1");
	cr_assert(fabs(rows[2].rate_30d - 10.0) < 1e-6, "rate %f", rows[2].rate_30d);
	cr_assert_str_eq(wear_format_day(rows[2].eol_day, day, sizeof(day)), "2027-03-30");
	cr_assert_str_eq(rows[3].verdict, "ok");
	cr_assert(isnan(rows[3].rate_30d));

	char *buf;
	size_t blen;
	FILE *m = open_memstream(&buf, &blen);

	wear_print_csv(m, rows, n);
	fclose(m);
	int lines = 0;

	for (char *p = buf; *p; p++)
		lines += *p == '\n';
	cr_assert_eq(lines, 5, "CSV: header + 4 rows");
	cr_assert(!strncmp(buf, "host,rack,device,model,serial,", 30));
	cr_assert(strstr(buf, "\"db-1\",\"r1\",\"nvme0n1\",\"MODEL-A\",\"S1\",\"nvme\",60,"), "%s", buf);
	free(buf);

	m = open_memstream(&buf, &blen);
	wear_print_json(m, rows, n);
	fclose(m);
	json_object *j = json_tokener_parse(buf);

	cr_assert_not_null(j, "report JSON does not parse");
	cr_assert_eq(json_object_array_length(j), 4);
	cr_assert_str_eq(json_object_get_string(jget(json_object_array_get_idx(j, 2),
						     "projected_eol")), "2027-03-30");
	json_object_put(j);
	free(buf);

	m = open_memstream(&buf, &blen);
	wear_print_html(m, rows, n, today);
	fclose(m);
	cr_assert(strstr(buf, "<svg id=\"plot\""));
	int circles = 0;

	for (char *p = buf; (p = strstr(p, "<circle cx")); p++)
		circles++;
	cr_assert_eq(circles, 4 + 2, "4 drives + 2 legend entries");
	free(buf);
	wear_free(rows, n);
	conn_close(c);
	test_redis_destroy(&redis);
}
