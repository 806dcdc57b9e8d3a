/*
 * drive.c - drive health records from their sources: smartctl JSON,
 * libatasmart (a device or a blob), the NVMe SMART log; see drive.h.  The
 * record as it is stored (JSON, series, the wear point) is drive_record.c.
 *
 * ATA attributes from either source (smartctl JSON, libatasmart) are first
 * put in one shape (struct ata_attr) and interpreted by one table
 * (ata_rules), so a vendor quirk is fixed once for both.
 */
#include "model/drive.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atasmart.h>

#include "core/jsonc.h"

const char *const drive_field_names[DF_COUNT] = {
	"wear_used_pct", "spare_pct", "spare_threshold_pct", "media_errors",
	"reallocated_sectors", "pending_sectors", "offline_uncorrectable", "crc_errors",
	"power_on_hours", "temperature_c", "bytes_written", "capacity_bytes", "command_timeouts",
};

static const char *const cw_names[] = {
	"spare_below_threshold", "temperature", "reliability_degraded", "read_only",
	"volatile_memory_backup_failed", "pmr_read_only",
};

void drive_init(struct drive_record *r, const char *device)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->device, sizeof(r->device), "%s", device ? device : "");
	r->rotational = -1;
	r->smart_passed = -1;
	snprintf(r->status, sizeof(r->status), "ok");
}

void drive_set(struct drive_record *r, enum drive_field f, double v, const char *src_fmt, ...)
{
	va_list ap;

	r->f[f].present = 1;
	r->f[f].v = v;
	va_start(ap, src_fmt);
	vsnprintf(r->f[f].src, sizeof(r->f[f].src), src_fmt, ap);
	va_end(ap);
}

static int drive_fail(struct drive_record *r, const char *status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int drive_fail(struct drive_record *r, const char *status, const char *fmt, ...)
{
	va_list ap;

	snprintf(r->status, sizeof(r->status), "%s", status);
	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	return strcmp(status, "error") == 0 ? -EINVAL : 0;
}

char *drive_critical_warning_names(uint32_t cw, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < 8 && off < len; i++) {
		if (!(cw & (1u << i)))
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "",
					i < sizeof(cw_names) / sizeof(cw_names[0]) ? cw_names[i]
										    : "reserved");
	}
	return buf;
}

/* ---- ATA attributes ---------------------------------------------------- */

struct ata_attr {
	unsigned id;
	char name[64];		/* as the source spells it */
	char canon[64];		/* lower-case alphanumerics only */
	int norm;		/* normalized value, -1 unknown */
	int thresh;
	uint64_t raw;		/* 48-bit raw */
	const char *raw_str;	/* smartctl's decoded raw string, or NULL */
	int has_pretty;		/* libatasmart's decoded value */
	uint64_t pretty;
	SkSmartAttributeUnit unit;
};

enum ata_how {
	NORM_REMAINING,		/* used = 100 - normalized */
	RAW_USED,		/* raw is percent used */
	RAW_COUNT,		/* leading integer of the raw string / pretty count */
	RAW_PACKED16,		/* three 16-bit counters: the raw string's last, or the
				 * low word when smartctl printed the 48-bit number */
	RAW_TEMP,		/* leading integer (smartctl) / mK (libatasmart) */
	RAW_HOURS,		/* leading integer / scale (smartctl) / ms (libatasmart) */
	RAW_BYTES,		/* raw times scale (smartctl) / MB (libatasmart) */
	NORM_SPARE,		/* spare % = normalized, threshold = thresh */
};

struct ata_rule {
	const char *canon;
	enum drive_field field;
	enum ata_how how;
	double scale;		/* RAW_BYTES: bytes per unit, 0 = logical block size;
				 * RAW_HOURS: units per hour, 0 = 1 */
};

/* In priority order: the first rule that matches a field wins. */
static const struct ata_rule ata_rules[] = {
	{ "mediawearoutindicator", DF_WEAR_USED_PCT, NORM_REMAINING, 0 },
	{ "wearlevelingcount", DF_WEAR_USED_PCT, NORM_REMAINING, 0 },
	{ "ssdlifeleft", DF_WEAR_USED_PCT, NORM_REMAINING, 0 },
	{ "percentlifetimeremain", DF_WEAR_USED_PCT, NORM_REMAINING, 0 },
	{ "remaininglifetimeperc", DF_WEAR_USED_PCT, NORM_REMAINING, 0 },
	{ "enduranceremaining", DF_WEAR_USED_PCT, NORM_REMAINING, 0 },
	{ "lifetimeremaining", DF_WEAR_USED_PCT, NORM_REMAINING, 0 },
	{ "percentlifetimeused", DF_WEAR_USED_PCT, RAW_USED, 0 },
	{ "percentlifeused", DF_WEAR_USED_PCT, RAW_USED, 0 },
	{ "availablereservdspace", DF_SPARE_PCT, NORM_SPARE, 0 },
	{ "availablereservedspace", DF_SPARE_PCT, NORM_SPARE, 0 },
	{ "reallocatedsectorct", DF_REALLOCATED_SECTORS, RAW_COUNT, 0 },
	{ "reallocatedsectorcount", DF_REALLOCATED_SECTORS, RAW_COUNT, 0 },
	{ "currentpendingsector", DF_PENDING_SECTORS, RAW_COUNT, 0 },
	{ "currentpendingsectorct", DF_PENDING_SECTORS, RAW_COUNT, 0 },
	{ "offlineuncorrectable", DF_OFFLINE_UNCORRECTABLE, RAW_COUNT, 0 },
	{ "udmacrcerrorcount", DF_CRC_ERRORS, RAW_COUNT, 0 },
	{ "crcerrorcount", DF_CRC_ERRORS, RAW_COUNT, 0 },
	{ "reporteduncorrect", DF_MEDIA_ERRORS, RAW_COUNT, 0 },
	{ "uncorrectableerrorcnt", DF_MEDIA_ERRORS, RAW_COUNT, 0 },
	{ "commandtimeout", DF_COMMAND_TIMEOUTS, RAW_PACKED16, 0 },
	{ "poweronhours", DF_POWER_ON_HOURS, RAW_HOURS, 0 },
	{ "poweronhoursandmsec", DF_POWER_ON_HOURS, RAW_HOURS, 0 },
	{ "poweronminutes", DF_POWER_ON_HOURS, RAW_HOURS, 60 },
	{ "poweronseconds", DF_POWER_ON_HOURS, RAW_HOURS, 3600 },
	{ "temperaturecelsius", DF_TEMPERATURE_C, RAW_TEMP, 0 },
	{ "temperaturecelsius2", DF_TEMPERATURE_C, RAW_TEMP, 0 },
	{ "temperatureinternal", DF_TEMPERATURE_C, RAW_TEMP, 0 },
	{ "airflowtemperaturecel", DF_TEMPERATURE_C, RAW_TEMP, 0 },
	{ "airflowtemperaturecelsius", DF_TEMPERATURE_C, RAW_TEMP, 0 },
	{ "temperaturecase", DF_TEMPERATURE_C, RAW_TEMP, 0 },
	{ "hostwrites32mib", DF_BYTES_WRITTEN, RAW_BYTES, 32.0 * 1048576 },
	{ "hostwritesgib", DF_BYTES_WRITTEN, RAW_BYTES, 1073741824.0 },
	{ "lifetimewritesgib", DF_BYTES_WRITTEN, RAW_BYTES, 1073741824.0 },
	{ "totalwritesgib", DF_BYTES_WRITTEN, RAW_BYTES, 1073741824.0 },
	{ "hostwritesmib", DF_BYTES_WRITTEN, RAW_BYTES, 1048576.0 },
	{ "totallbaswritten", DF_BYTES_WRITTEN, RAW_BYTES, 0 },
};

static void canonical(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (; *in && o + 1 < len; in++)
		if (isalnum((unsigned char)*in))
			out[o++] = (char)tolower((unsigned char)*in);
	out[o] = '\0';
}

/* Leading (or last) unsigned integer of s; -1 if none. */
static int raw_int(const char *s, int last, uint64_t *v)
{
	const char *p = s, *start = NULL;

	for (; *p; p++) {
		if (isdigit((unsigned char)*p) && (p == s || !isdigit((unsigned char)p[-1]))) {
			start = p;
			if (!last)
				break;
		}
	}
	if (!start)
		return -1;
	*v = strtoull(start, NULL, 10);
	return 0;
}

static void ata_apply(struct drive_record *r, const struct ata_attr *a, const struct ata_rule *rule,
		      double block_size)
{
	const char *via = a->raw_str ? "raw string" : a->has_pretty ? "decoded" : "raw";
	uint64_t v;

	switch (rule->how) {
	case NORM_REMAINING:
		if (a->norm < 0 || a->norm > 100)
			return;
		drive_set(r, rule->field, 100.0 - a->norm, "ata attribute %u %s normalized %d", a->id,
			  a->name, a->norm);
		return;
	case RAW_USED:
		v = a->raw_str && raw_int(a->raw_str, 0, &v) == 0 ? v : (a->raw & 0xffff);
		drive_set(r, rule->field, (double)v, "ata attribute %u %s raw %llu", a->id, a->name,
			  (unsigned long long)v);
		return;
	case NORM_SPARE:
		if (a->norm < 0)
			return;
		drive_set(r, DF_SPARE_PCT, a->norm, "ata attribute %u %s normalized %d", a->id,
			  a->name, a->norm);
		drive_set(r, DF_SPARE_THRESHOLD_PCT, a->thresh, "ata attribute %u %s threshold %d",
			  a->id, a->name, a->thresh);
		return;
	case RAW_PACKED16:
		if (a->raw_str) {
			if (raw_int(a->raw_str, 1, &v))
				return;
			if (v > 0xffff)		/* printed as the 48-bit number */
				v &= 0xffff;
		} else {
			v = a->raw & 0xffff;
		}
		drive_set(r, rule->field, (double)v, "ata attribute %u %s %s, low 16-bit counter %llu",
			  a->id, a->name, via, (unsigned long long)v);
		return;
	case RAW_COUNT:
		if (a->raw_str) {
			if (raw_int(a->raw_str, 0, &v))
				return;
		} else if (a->has_pretty && (a->unit == SK_SMART_ATTRIBUTE_UNIT_SECTORS ||
					     a->unit == SK_SMART_ATTRIBUTE_UNIT_NONE)) {
			v = a->pretty;
		} else {
			v = a->raw & 0xffffffffu;
		}
		drive_set(r, rule->field, (double)v, "ata attribute %u %s %s %llu", a->id, a->name,
			  via, (unsigned long long)v);
		return;
	case RAW_TEMP:
		if (a->raw_str) {
			if (raw_int(a->raw_str, 0, &v))
				return;
			drive_set(r, rule->field, (double)v, "ata attribute %u %s raw string \"%.40s\"",
				  a->id, a->name, a->raw_str);
		} else if (a->has_pretty && a->unit == SK_SMART_ATTRIBUTE_UNIT_MKELVIN) {
			drive_set(r, rule->field, ((double)a->pretty - 273150.0) / 1000.0,
				  "ata attribute %u %s decoded %llu mK", a->id, a->name,
				  (unsigned long long)a->pretty);
		}
		return;
	case RAW_HOURS:
		if (a->raw_str) {
			double per_hour = rule->scale ? rule->scale : 1;

			if (raw_int(a->raw_str, 0, &v))
				return;
			drive_set(r, rule->field, floor((double)v / per_hour),
				  "ata attribute %u %s raw string \"%.40s\"", a->id, a->name,
				  a->raw_str);
		} else if (a->has_pretty && a->unit == SK_SMART_ATTRIBUTE_UNIT_MSECONDS) {
			drive_set(r, rule->field, (double)(a->pretty / 3600000ULL),
				  "ata attribute %u %s decoded %llu ms", a->id, a->name,
				  (unsigned long long)a->pretty);
		}
		return;
	case RAW_BYTES:
		if (a->raw_str) {
			double scale = rule->scale ? rule->scale : block_size;

			if (raw_int(a->raw_str, 0, &v))
				return;
			drive_set(r, rule->field, (double)v * scale, "ata attribute %u %s raw %llu x %.0f",
				  a->id, a->name, (unsigned long long)v, scale);
		} else if (a->has_pretty && a->unit == SK_SMART_ATTRIBUTE_UNIT_MB) {
			drive_set(r, rule->field, (double)a->pretty * 1e6,
				  "ata attribute %u %s decoded %llu MB", a->id, a->name,
				  (unsigned long long)a->pretty);
		}
		return;
	}
}

static void ata_interpret(struct drive_record *r, const struct ata_attr *attrs, size_t n,
			  double block_size)
{
	for (size_t k = 0; k < sizeof(ata_rules) / sizeof(ata_rules[0]); k++) {
		const struct ata_rule *rule = &ata_rules[k];

		if (r->f[rule->field].present)
			continue;	/* an earlier rule (or the top-level JSON) won */
		for (size_t i = 0; i < n; i++)
			if (strcmp(attrs[i].canon, rule->canon) == 0) {
				ata_apply(r, &attrs[i], rule, block_size);
				break;
			}
	}
}

/* ---- smartctl JSON ----------------------------------------------------- */

static void set_num(struct drive_record *r, json_object *root, enum drive_field f,
		    const char *path, double scale)
{
	double v;

	if (!r->f[f].present && jsonc_number(root, path, &v) == 0)
		drive_set(r, f, v * scale, "smartctl %s%s", path, scale != 1.0 ? " (scaled)" : "");
}

static void smartctl_nvme(struct drive_record *r, json_object *root)
{
	const char *log = "nvme_smart_health_information_log";
	char path[128];
	double v;

#define NV(field, name, scale) do { \
		snprintf(path, sizeof(path), "%s.%s", log, name); \
		set_num(r, root, field, path, scale); \
	} while (0)
	NV(DF_WEAR_USED_PCT, "percentage_used", 1.0);
	NV(DF_SPARE_PCT, "available_spare", 1.0);
	NV(DF_SPARE_THRESHOLD_PCT, "available_spare_threshold", 1.0);
	NV(DF_MEDIA_ERRORS, "media_errors", 1.0);
	NV(DF_POWER_ON_HOURS, "power_on_hours", 1.0);
	NV(DF_TEMPERATURE_C, "temperature", 1.0);
	NV(DF_BYTES_WRITTEN, "data_units_written", 512000.0);
#undef NV
	snprintf(path, sizeof(path), "%s.critical_warning", log);
	if (jsonc_number(root, path, &v) == 0) {
		r->has_critical_warning = 1;
		r->critical_warning = (uint32_t)v;
	}
	r->rotational = 0;
}

static void smartctl_ata(struct drive_record *r, json_object *root)
{
	json_object *table = jsonc_path(root, "ata_smart_attributes.table");
	struct ata_attr *attrs;
	double bs = 512;
	size_t n;

	if (!table || !json_object_is_type(table, json_type_array))
		return;
	jsonc_number(root, "logical_block_size", &bs);
	n = json_object_array_length(table);
	if (n > 256)
		n = 256;
	attrs = calloc(n + 1, sizeof(*attrs));
	if (!attrs)
		return;
	for (size_t i = 0; i < n; i++) {
		json_object *a = json_object_array_get_idx(table, i);
		const char *name = jsonc_str(a, "name");
		double id = 0, val = -1, th = 0, raw = 0;

		if (!name)
			continue;
		jsonc_number(a, "id", &id);
		jsonc_number(a, "value", &val);
		jsonc_number(a, "thresh", &th);
		jsonc_number(a, "raw.value", &raw);
		attrs[i].id = (unsigned)id;
		snprintf(attrs[i].name, sizeof(attrs[i].name), "%s", name);
		canonical(name, attrs[i].canon, sizeof(attrs[i].canon));
		attrs[i].norm = (int)val;
		attrs[i].thresh = (int)th;
		attrs[i].raw = (uint64_t)raw;
		attrs[i].raw_str = jsonc_str(a, "raw.string");
	}
	ata_interpret(r, attrs, n, bs);
	free(attrs);
}

static void smartctl_scsi(struct drive_record *r, json_object *root)
{
	static const char *const dirs[] = { "read", "write", "verify" };
	double total = 0, v;
	int have = 0;
	char path[96];

	set_num(r, root, DF_WEAR_USED_PCT, "scsi_percentage_used_endurance_indicator", 1.0);
	set_num(r, root, DF_REALLOCATED_SECTORS, "scsi_grown_defect_list", 1.0);
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "scsi_error_counter_log.%s.total_uncorrected_errors",
			 dirs[i]);
		if (jsonc_number(root, path, &v) == 0) {
			total += v;
			have = 1;
		}
	}
	if (have)
		drive_set(r, DF_MEDIA_ERRORS, total, "smartctl scsi_error_counter_log "
			  "total_uncorrected_errors (read+write+verify)");
	{
		const char *gb = jsonc_str(root, "scsi_error_counter_log.write.gigabytes_processed");

		if (gb)
			drive_set(r, DF_BYTES_WRITTEN, strtod(gb, NULL) * 1e9,
				  "smartctl scsi_error_counter_log.write.gigabytes_processed %s", gb);
	}
}

int drive_from_smartctl_json(struct drive_record *r, const char *json, size_t len)
{
	json_object *root, *msgs;
	const char *proto, *s;
	char why[160];
	double v;
	int ret = 0;

	root = jsonc_parse_depth(json, len, 32, why, sizeof(why));
	if (!root)
		return drive_fail(r, "error", "smartctl output is not valid JSON: %s", why);
	if (!json_object_is_type(root, json_type_object) || !jsonc_path(root, "smartctl")) {
		json_object_put(root);
		return drive_fail(r, "error", "JSON is not smartctl --json output (no 'smartctl' "
				  "object)");
	}
	proto = jsonc_str(root, "device.protocol");
	if (proto)
		snprintf(r->protocol, sizeof(r->protocol), "%s",
			 !strcasecmp(proto, "NVMe") ? "nvme" : !strcasecmp(proto, "ATA") ? "ata" :
			 !strcasecmp(proto, "SCSI") ? "scsi" : "");
	if (!r->device[0] && (s = jsonc_str(root, "device.name")))
		snprintf(r->device, sizeof(r->device), "%s",
			 strrchr(s, '/') ? strrchr(s, '/') + 1 : s);
	if ((s = jsonc_str(root, "model_name")) || (s = jsonc_str(root, "scsi_model_name")))
		snprintf(r->model, sizeof(r->model), "%s", s);
	else if ((s = jsonc_str(root, "scsi_product")))
		snprintf(r->model, sizeof(r->model), "%s %s",
			 jsonc_str(root, "scsi_vendor") ? jsonc_str(root, "scsi_vendor") : "", s);
	if ((s = jsonc_str(root, "serial_number")))
		snprintf(r->serial, sizeof(r->serial), "%s", s);
	if ((s = jsonc_str(root, "firmware_version")) || (s = jsonc_str(root, "scsi_revision")))
		snprintf(r->firmware, sizeof(r->firmware), "%s", s);
	if (jsonc_number(root, "rotation_rate", &v) == 0)
		r->rotational = v > 0;
	{
		json_object *p = jsonc_path(root, "smart_status.passed");

		if (p && json_object_is_type(p, json_type_boolean))
			r->smart_passed = json_object_get_boolean(p);
	}
	set_num(r, root, DF_CAPACITY_BYTES, "user_capacity.bytes", 1.0);
	set_num(r, root, DF_TEMPERATURE_C, "temperature.current", 1.0);
	set_num(r, root, DF_POWER_ON_HOURS, "power_on_time.hours", 1.0);

	if (jsonc_path(root, "nvme_smart_health_information_log"))
		smartctl_nvme(r, root);
	else if (jsonc_path(root, "ata_smart_attributes"))
		smartctl_ata(r, root);
	else if (!strcmp(r->protocol, "scsi"))
		smartctl_scsi(r, root);

	if (r->smart_passed < 0 && !jsonc_path(root, "ata_smart_attributes") &&
	    !jsonc_path(root, "nvme_smart_health_information_log") && strcmp(r->protocol, "scsi")) {
		/* smartctl ran but found no SMART: say why, from its own messages */
		const char *why = "smartctl found no SMART data";

		msgs = jsonc_path(root, "smartctl.messages");
		if (msgs && json_object_is_type(msgs, json_type_array) &&
		    json_object_array_length(msgs) > 0)
			why = jsonc_str(json_object_array_get_idx(msgs, 0), "string") ?: why;
		drive_fail(r, "no_smart", "%s", why);
	}
	json_object_put(root);
	return ret;
}

/* ---- libatasmart ------------------------------------------------------- */

struct sk_collect {
	struct ata_attr attrs[256];
	size_t n;
};

static void sk_attr_cb(SkDisk *d, const SkSmartAttributeParsedData *a, void *arg)
{
	struct sk_collect *c = arg;
	struct ata_attr *x;

	(void)d;
	if (c->n >= 256)
		return;
	x = &c->attrs[c->n++];
	memset(x, 0, sizeof(*x));
	x->id = a->id;
	snprintf(x->name, sizeof(x->name), "%s", a->name ? a->name : "");
	canonical(x->name, x->canon, sizeof(x->canon));
	x->norm = a->current_value_valid ? a->current_value : -1;
	x->thresh = a->threshold_valid ? a->threshold : 0;
	for (int i = 5; i >= 0; i--)
		x->raw = x->raw << 8 | a->raw[i];
	x->has_pretty = 1;
	x->pretty = a->pretty_value;
	x->unit = a->pretty_unit;
}

static int from_skdisk(struct drive_record *r, SkDisk *d)
{
	const SkIdentifyParsedData *id;
	struct sk_collect *c;
	SkBool good;
	uint64_t size;

	snprintf(r->protocol, sizeof(r->protocol), "ata");
	if (sk_disk_identify_parse(d, &id) == 0) {
		snprintf(r->model, sizeof(r->model), "%s", id->model);
		snprintf(r->serial, sizeof(r->serial), "%s", id->serial);
		snprintf(r->firmware, sizeof(r->firmware), "%s", id->firmware);
	}
	if (sk_disk_get_size(d, &size) == 0 && size)
		drive_set(r, DF_CAPACITY_BYTES, (double)size, "libatasmart identify");
	if (sk_disk_smart_status(d, &good) == 0)
		r->smart_passed = good ? 1 : 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return drive_fail(r, "error", "out of memory");
	if (sk_disk_smart_parse_attributes(d, sk_attr_cb, c) < 0) {
		free(c);
		return drive_fail(r, "error", "libatasmart cannot parse the SMART attributes: %s",
				  strerror(errno));
	}
	ata_interpret(r, c->attrs, c->n, 512);
	/* attributes only spinning disks have: a HDD */
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->attrs[i].canon, "seekerrorrate") ||
		    !strcmp(c->attrs[i].canon, "spinretrycount") ||
		    !strcmp(c->attrs[i].canon, "loadcyclecount") ||
		    (!strcmp(c->attrs[i].canon, "spinuptime") && c->attrs[i].raw))
			r->rotational = 1;
	if (r->rotational < 0 && r->f[DF_WEAR_USED_PCT].present)
		r->rotational = 0;
	free(c);
	return 0;
}

int drive_from_atasmart_blob(struct drive_record *r, const void *blob, size_t len)
{
	SkDisk *d;
	int ret;

	/* libatasmart's blob is IDENTIFY + SMART data + thresholds, tagged */
	if (len < 16 || len > 65536)
		return drive_fail(r, "error", "a libatasmart SMART blob is 16..65536 bytes, "
				  "this is %zu", len);
	if (sk_disk_open(NULL, &d) < 0)
		return drive_fail(r, "error", "libatasmart: %s", strerror(errno));
	if (sk_disk_set_blob(d, blob, len) < 0) {
		sk_disk_free(d);
		return drive_fail(r, "error", "not a libatasmart SMART blob (%s)", strerror(errno));
	}
	ret = from_skdisk(r, d);
	sk_disk_free(d);
	return ret;
}

int drive_from_atasmart_device(struct drive_record *r, const char *devpath)
{
	SkBool avail = 0;
	SkDisk *d;
	int ret;

	if (sk_disk_open(devpath, &d) < 0)
		return drive_fail(r, "error", "libatasmart cannot open %s: %s", devpath,
				  strerror(errno));
	if (sk_disk_smart_is_available(d, &avail) < 0 || !avail) {
		sk_disk_free(d);
		return drive_fail(r, "no_smart", "%s does not support ATA SMART", devpath);
	}
	if (sk_disk_smart_read_data(d) < 0) {
		ret = errno;
		sk_disk_free(d);
		return drive_fail(r, "error", "reading SMART from %s: %s", devpath, strerror(ret));
	}
	ret = from_skdisk(r, d);
	sk_disk_free(d);
	return ret;
}

/* ---- NVMe -------------------------------------------------------------- */

static double le_u128_as_double(const uint8_t *p)
{
	double v = 0;

	for (int i = 15; i >= 0; i--)
		v = v * 256.0 + p[i];
	return v;
}

int drive_from_nvme_log(struct drive_record *r, const void *page, size_t len)
{
	const uint8_t *p = page;
	unsigned temp_k;

	if (len != 512)
		return drive_fail(r, "error", "an NVMe SMART / Health log page is 512 bytes, this is "
				  "%zu", len);
	snprintf(r->protocol, sizeof(r->protocol), "nvme");
	r->rotational = 0;
	r->has_critical_warning = 1;
	r->critical_warning = p[0];
	temp_k = (unsigned)p[1] | (unsigned)p[2] << 8;
	if (temp_k)
		drive_set(r, DF_TEMPERATURE_C, (double)temp_k - 273.0,
			  "nvme log composite temperature %u K", temp_k);
	drive_set(r, DF_SPARE_PCT, p[3], "nvme log available spare (byte 3)");
	drive_set(r, DF_SPARE_THRESHOLD_PCT, p[4], "nvme log available spare threshold (byte 4)");
	drive_set(r, DF_WEAR_USED_PCT, p[5], "nvme log percentage used (byte 5)");
	drive_set(r, DF_BYTES_WRITTEN, le_u128_as_double(p + 48) * 512000.0,
		  "nvme log data units written x 512000");
	drive_set(r, DF_POWER_ON_HOURS, le_u128_as_double(p + 128), "nvme log power on hours");
	drive_set(r, DF_MEDIA_ERRORS, le_u128_as_double(p + 160), "nvme log media errors");
	r->smart_passed = (p[0] & (NVME_CW_SPARE | NVME_CW_RELIABILITY | NVME_CW_READ_ONLY |
				   NVME_CW_VOLATILE_BACKUP)) ? 0 : 1;
	return 0;
}

int drive_from_nvme_device(struct drive_record *r, const char *devpath)
{
	uint8_t page[512] __attribute__((aligned(8)));
	struct nvme_admin_cmd cmd = {
		.opcode = 0x02,			/* Get Log Page */
		.nsid = 0xffffffff,
		.addr = (uint64_t)(uintptr_t)page,
		.data_len = sizeof(page),
		.cdw10 = ((sizeof(page) / 4 - 1) << 16) | 0x02,	/* NUMDL, LID 2 */
	};
	int fd, ret;

	fd = open(devpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return drive_fail(r, "error", "cannot open %s: %s", devpath, strerror(errno));
	ret = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd);
	close(fd);
	if (ret < 0)
		return drive_fail(r, "error", "NVMe Get Log Page on %s: %s", devpath, strerror(errno));
	if (ret > 0)
		return drive_fail(r, "error", "NVMe Get Log Page on %s: status 0x%x", devpath, ret);
	return drive_from_nvme_log(r, page, sizeof(page));
}
