/*
 * drive_record.c - a drive record as faultline stores and reads it back:
 * its JSON (fl:{H}:drives), its series in a snapshot, and a day's wear
 * point (fl:{H}:drives:wear:SERIAL); see drive.h.
 */
#include "model/drive.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/jsonc.h"
#include "model/snapshot.h"

json_object *drive_json(const struct drive_record *r)
{
	json_object *o = json_object_new_object(), *names, *src;
	char cw[256];

	if (!o)
		return NULL;
	json_object_object_add(o, "device", jsonc_string(r->device));
	json_object_object_add(o, "protocol", jsonc_string(r->protocol));
	json_object_object_add(o, "model", jsonc_string(r->model));
	json_object_object_add(o, "serial", jsonc_string(r->serial));
	json_object_object_add(o, "firmware", jsonc_string(r->firmware));
	json_object_object_add(o, "status", jsonc_string(r->status));
	if (r->error[0])
		json_object_object_add(o, "error", jsonc_string(r->error));
	json_object_object_add(o, "read_at_ms", json_object_new_int64((int64_t)r->read_at_ms));
	json_object_object_add(o, "rotational", r->rotational < 0 ? NULL :
			       json_object_new_boolean(r->rotational));
	json_object_object_add(o, "smart_passed", r->smart_passed < 0 ? NULL :
			       json_object_new_boolean(r->smart_passed));
	names = json_object_new_array();
	if (r->has_critical_warning) {
		json_object_object_add(o, "critical_warning",
				       json_object_new_int64(r->critical_warning));
		drive_critical_warning_names(r->critical_warning, cw, sizeof(cw));
		for (char *save, *t = strtok_r(cw, ",", &save); t; t = strtok_r(NULL, ",", &save))
			json_object_array_add(names, jsonc_string(t));
	} else {
		json_object_object_add(o, "critical_warning", NULL);
	}
	json_object_object_add(o, "critical_warning_names", names);
	src = json_object_new_object();
	for (int f = 0; f < DF_COUNT; f++) {
		json_object_object_add(o, drive_field_names[f], r->f[f].present ?
				       json_object_new_double(r->f[f].v) : NULL);
		if (r->f[f].present)
			json_object_object_add(src, drive_field_names[f],
					       jsonc_string(r->f[f].src));
	}
	json_object_object_add(o, "source", src);
	return o;
}

void drive_to_json(const struct drive_record *r, struct strbuf *out)
{
	json_object *o = drive_json(r);

	if (!o) {
		strbuf_mark_failed(out);
		return;
	}
	jsonc_append(out, o);
	json_object_put(o);
}

int drive_from_json(struct drive_record *r, const char *json, size_t len)
{
	json_object *root, *x;
	const char *s;
	char why[160];
	double v;

	drive_init(r, "");
	root = jsonc_parse_depth(json, len, 16, why, sizeof(why));
	if (!root || !json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return -EINVAL;
	}
#define CP(field, key) do { if ((s = jsonc_str(root, key))) \
		snprintf(r->field, sizeof(r->field), "%s", s); } while (0)
	CP(device, "device");
	CP(protocol, "protocol");
	CP(model, "model");
	CP(serial, "serial");
	CP(firmware, "firmware");
	CP(status, "status");
	CP(error, "error");
#undef CP
	if (jsonc_number(root, "read_at_ms", &v) == 0)
		r->read_at_ms = (uint64_t)v;
	if ((x = jsonc_path(root, "rotational")) && json_object_is_type(x, json_type_boolean))
		r->rotational = json_object_get_boolean(x);
	if ((x = jsonc_path(root, "smart_passed")) && json_object_is_type(x, json_type_boolean))
		r->smart_passed = json_object_get_boolean(x);
	if (jsonc_number(root, "critical_warning", &v) == 0) {
		r->has_critical_warning = 1;
		r->critical_warning = (uint32_t)v;
	}
	for (int f = 0; f < DF_COUNT; f++) {
		char path[64];

		if (jsonc_number(root, drive_field_names[f], &v))
			continue;
		snprintf(path, sizeof(path), "source.%s", drive_field_names[f]);
		drive_set(r, (enum drive_field)f, v, "%s", jsonc_str(root, path) ?: "");
	}
	json_object_put(root);
	return 0;
}

int drive_add_series(const struct drive_record *r, struct snapshot *s)
{
	static const struct {
		enum drive_field f;
		const char *metric;
	} gauges[] = {
		{ DF_WEAR_USED_PCT, "drive.wear_used_pct" },
		{ DF_SPARE_PCT, "drive.spare_pct" },
		{ DF_MEDIA_ERRORS, "drive.media_errors" },
		{ DF_REALLOCATED_SECTORS, "drive.reallocated_sectors" },
		{ DF_PENDING_SECTORS, "drive.pending_sectors" },
		{ DF_CRC_ERRORS, "drive.crc_errors" },
		{ DF_TEMPERATURE_C, "drive.temperature_c" },
		{ DF_POWER_ON_HOURS, "drive.power_on_hours" },
	};
	const char *model = r->model[0] ? r->model : "unknown";

	if (!snapshot_add_gauge(s, "drive.smart_available", !strcmp(r->status, "ok"), "device",
				r->device, "model", model, NULL))
		return -ENOMEM;
	if (strcmp(r->status, "ok"))
		return 0;
	for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++)
		if (r->f[gauges[g].f].present &&
		    !snapshot_add_gauge(s, gauges[g].metric, r->f[gauges[g].f].v, "device",
					r->device, "model", model, NULL))
			return -ENOMEM;
	if (r->smart_passed >= 0 &&
	    !snapshot_add_gauge(s, "drive.smart_passed", r->smart_passed, "device", r->device,
				"model", model, NULL))
		return -ENOMEM;
	if (r->has_critical_warning &&
	    !snapshot_add_gauge(s, "drive.critical_warning", r->critical_warning, "device",
				r->device, "model", model, NULL))
		return -ENOMEM;
	return 0;
}

void drive_wear_point_format(const struct drive_record *r, char *buf, size_t len)
{
	snprintf(buf, len, "%.17g,%.17g,%.17g",
		 r->f[DF_WEAR_USED_PCT].present ? r->f[DF_WEAR_USED_PCT].v : -1,
		 r->f[DF_BYTES_WRITTEN].present ? r->f[DF_BYTES_WRITTEN].v : -1,
		 r->f[DF_POWER_ON_HOURS].present ? r->f[DF_POWER_ON_HOURS].v : -1);
}

int drive_wear_point_parse(const char *text, double *wear, double *bytes, double *hours)
{
	char tail;

	if (!text || sscanf(text, "%lf,%lf,%lf%c", wear, bytes, hours, &tail) != 3 ||
	    !isfinite(*wear) || !isfinite(*bytes) || !isfinite(*hours))
		return -EINVAL;
	return 0;
}
