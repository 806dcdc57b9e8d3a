/*
 * drive.h - drive health, normalized across ATA, NVMe and SCSI.
 *
 * One record per device.  Every numeric field is optional (a HDD has no
 * wear indicator; a SCSI disk has no pending-sector count) and remembers
 * where its value came from, so an operator can audit a surprising number
 * against the raw source ("ata attribute 233 Media_Wearout_Indicator
 * normalized 22" rather than just "78").
 *
 * Sources, each also usable on recorded input (for tests and
 * `faultline drive inspect`):
 *   drive_from_smartctl_json()  `smartctl --json -a` output (any protocol)
 *   drive_from_atasmart_blob()  a libatasmart SMART blob (`skdump --save`)
 *   drive_from_nvme_log()       the 512-byte NVMe SMART / Health log page
 *
 * ATA wear is vendor-specific: attributes are matched by name (smartctl's
 * and libatasmart's spellings, compared lower-case without punctuation),
 * using the normalized value or the raw value as each attribute defines;
 * packed raw values (temperature "25 (Min/Max 14/28)", power-on
 * "1234h+05m") are decoded from smartctl's raw string, not the 48-bit raw
 * number.  NVMe data units are 1000 x 512 bytes.
 */
#ifndef FL_DRIVE_H
#define FL_DRIVE_H

#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"

enum drive_field {
	DF_WEAR_USED_PCT,
	DF_SPARE_PCT,
	DF_SPARE_THRESHOLD_PCT,
	DF_MEDIA_ERRORS,
	DF_REALLOCATED_SECTORS,
	DF_PENDING_SECTORS,
	DF_OFFLINE_UNCORRECTABLE,
	DF_CRC_ERRORS,
	DF_POWER_ON_HOURS,
	DF_TEMPERATURE_C,
	DF_BYTES_WRITTEN,
	DF_CAPACITY_BYTES,
	DF_COMMAND_TIMEOUTS,	/* ATA 188 (Seagate packs three counters) */
	DF_COUNT,
};

/* JSON names of the fields, indexed by enum drive_field. */
extern const char *const drive_field_names[DF_COUNT];

/* NVMe critical warning bits (SMART / Health log byte 0). */
#define NVME_CW_SPARE		(1u << 0)
#define NVME_CW_TEMPERATURE	(1u << 1)
#define NVME_CW_RELIABILITY	(1u << 2)
#define NVME_CW_READ_ONLY	(1u << 3)
#define NVME_CW_VOLATILE_BACKUP	(1u << 4)
#define NVME_CW_PMR_READ_ONLY	(1u << 5)

struct drive_value {
	int present;
	double v;
	char src[96];
};

struct drive_record {
	char device[64];		/* "nvme0n1", "sda" */
	char protocol[8];		/* "ata", "nvme", "scsi", "" unknown */
	char model[128];
	char serial[64];
	char firmware[32];
	int rotational;			/* 1 HDD, 0 SSD, -1 unknown */
	int smart_passed;		/* 1, 0, -1 unknown */
	int has_critical_warning;
	uint32_t critical_warning;	/* NVMe bits */
	char status[16];		/* "ok", "no_smart", "error" */
	char error[256];		/* why, for no_smart / error */
	uint64_t read_at_ms;
	struct drive_value f[DF_COUNT];
};

void drive_init(struct drive_record *r, const char *device);

/* Set field f to v, remembering its source (printf-style). */
void drive_set(struct drive_record *r, enum drive_field f, double v, const char *src_fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Names of the set critical-warning bits, comma separated, into buf. */
char *drive_critical_warning_names(uint32_t cw, char *buf, size_t len);

/*
 * Parse smartctl JSON (len bytes) into r.  Returns 0, or -EINVAL with the
 * reason in r->error (status "error") for input that is not smartctl JSON.
 * smartctl's own failure (no SMART on the device) gives status "no_smart".
 */
int drive_from_smartctl_json(struct drive_record *r, const char *json, size_t len);

/* Parse a libatasmart SMART blob. Returns 0 or -EINVAL (reason in r->error). */
int drive_from_atasmart_blob(struct drive_record *r, const void *blob, size_t len);

/* Read SMART from an ATA device through libatasmart. Returns 0 or -errno. */
int drive_from_atasmart_device(struct drive_record *r, const char *devpath);

/* Decode a 512-byte NVMe SMART / Health log page. Returns 0 or -EINVAL. */
int drive_from_nvme_log(struct drive_record *r, const void *page, size_t len);

/* Read the log page of an NVMe device through the admin ioctl. */
int drive_from_nvme_device(struct drive_record *r, const char *devpath);

/*
 * r as a JSON object (json-c; the caller puts it), or NULL on OOM; and the
 * same appended to out as text.
 */
struct json_object;
struct json_object *drive_json(const struct drive_record *r);
void drive_to_json(const struct drive_record *r, struct strbuf *out);

/* Parse a record written by drive_to_json. Returns 0 or -EINVAL. */
int drive_from_json(struct drive_record *r, const char *json, size_t len);

struct snapshot;

/*
 * Add r's series to s as a probe reports them: drive.smart_available, and
 * for a readable drive its gauges (drive.wear_used_pct, ...), all labelled
 * {device, model}.  Returns 0 or -ENOMEM.
 */
int drive_add_series(const struct drive_record *r, struct snapshot *s);

/*
 * The wear history's daily point, "wear_used_pct,bytes_written,
 * power_on_hours" (-1 for a value the drive does not report), which the
 * wear report projects end of life from: formatted from r into buf, and
 * parsed back (0, or -EINVAL for text that is not three finite numbers).
 */
void drive_wear_point_format(const struct drive_record *r, char *buf, size_t len);
int drive_wear_point_parse(const char *text, double *wear, double *bytes, double *hours);

#endif
