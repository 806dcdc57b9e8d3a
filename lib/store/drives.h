/*
 * drives.h - drive records and wear history in Redis.
 *
 *   fl:{H}:drives               hash device -> drive record JSON
 *                               (drive_to_json / drive_from_json)
 *   fl:{H}:drives:wear:SERIAL   hash YYYY-MM-DD -> wear point
 *                               (drive_wear_point_format / _parse)
 *
 * Written by the probe (and the simulator) through the store's spool, read
 * by the wear report.
 */
#ifndef FL_DRIVES_H
#define FL_DRIVES_H

struct conn;	/* a connection from conn_open (store/conn.h) */

#include "model/drive.h"

struct store;

/*
 * Queue r's record and, when day ("YYYY-MM-DD") is given and r is readable
 * with a serial, that day's wear point.  Never waits for Redis.
 */
void drives_put(struct store *st, const char *host, const struct drive_record *r,
		const char *day);

/*
 * Host's record of device as stored (JSON, malloc'd; the caller frees),
 * or NULL if there is none or Redis did not answer.
 */
char *drives_get_json(struct conn *c, const char *host, const char *device);

/*
 * Call cb with each drive record of host; an entry that is not a record
 * is skipped.  Returns the number given to cb, or -EIO (reason in err).
 */
typedef void (*drives_record_cb)(const struct drive_record *r, void *arg);
int drives_load(struct conn *c, const char *host, drives_record_cb cb, void *arg, char *err,
		size_t errlen);

/*
 * Call cb with each day of a drive's wear history (day as written,
 * "YYYY-MM-DD"; -1 for a value the drive does not report); unreadable
 * points are skipped.  Returns the number given to cb, or -EIO.
 */
typedef void (*drives_wear_cb)(const char *day, double wear, double bytes, double hours,
			       void *arg);
int drives_wear_history(struct conn *c, const char *host, const char *serial,
			drives_wear_cb cb, void *arg, char *err, size_t errlen);

#endif
