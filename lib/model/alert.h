/*
 * alert.h - alert events: what the rules engine appends to fl:alerts and
 * the alerter consumes.  This header is the contract between the two.
 *
 * An fl:alerts stream entry has one field "e" holding a JSON object:
 *
 *   { "status": "firing" | "resolved",
 *     "fingerprint": "<16 hex>",                 stable per alert identity
 *     "labels": { "alertname": ..., "severity": ..., ... },
 *     "annotations": { "summary": ..., "description": ..., ... },
 *     "startsAt": "RFC 3339", "endsAt": "RFC 3339" (resolved only),
 *     "generatorURL": "...",
 *     "faultline": {                              optional
 *        "domain": { "label": "switch", "value": "sw3",
 *                    "same_as": "site=s1",         optional: outer levels
 *                                                 holding exactly the same hosts
 *                                                 (label=value, comma-separated,
 *                                                 outermost first); the alert's
 *                                                 labels carry all of them
 *                    "p": 0.0004 },                optional: the chance of hits
 *                                                 like these landing in the
 *                                                 domain at random (domain_rollup.c)
 *        "hosts": [ "db-1", ... ], "total_hosts": 8,
 *        "value": 12.5, "runbook": "runbooks/x.md",
 *        "firedAt": "RFC 3339",                   when it fired (startsAt is when
 *                                                 its condition began: `for` earlier)
 *        "evidence": [ "cpu_stacks", "drive", "csum_peers" ],
 *        "deploy": { "service": ..., "at_ms": ..., "base_ms": ... } } }
 *
 * Labels are kept sorted so that matching and fingerprints are stable.
 */
#ifndef FL_ALERT_H
#define FL_ALERT_H

#include <stdint.h>

#include "model/snapshot.h"	/* struct label */

#define ALERT_MAX_HOSTS 256

struct alert {
	int firing;			/* 1 firing, 0 resolved */
	char fingerprint[33];
	struct label *labels;
	uint32_t nlabels;
	struct label *annotations;
	uint32_t nannotations;
	uint64_t starts_ms, ends_ms;
	uint64_t fired_ms;		/* when `for` had passed and it fired; 0: not known */
	char generator_url[256];
	char domain_label[64], domain_value[128];
	char domain_same[192];		/* "site=s1,agg=a2": the same hosts, outer names */
	double domain_p;		/* the domain's p-value, when has_domain_p */
	int has_domain_p;
	char **hosts;
	uint32_t nhosts;
	uint32_t total_hosts;
	double value;
	int has_value;
	char runbook[256];
	uint32_t evidence;		/* ALERT_EV_* bits */
	char deploy_service[128];
	uint64_t deploy_at_ms, deploy_base_ms;
};

#define ALERT_EV_CPU_STACKS (1u << 0)
#define ALERT_EV_DRIVE (1u << 1)
#define ALERT_EV_CSUM_PEERS (1u << 2)
#define ALERT_EV_IO_STACKS (1u << 3)	/* who issues I/O to the alert's device, where it waits */
#define ALERT_EV_NAMES "cpu_stacks, drive, csum_peers, io_stacks"

/*
 * Parse an event (len bytes of JSON) into a (uninitialised).  Returns 0 or
 * -EINVAL with the reason in err.
 */
int alert_parse(struct alert *a, const char *json, size_t len, char *err, size_t errlen);
void alert_free(struct alert *a);

/*
 * The other direction, the one encoder of the contract (json-c, so every
 * string is escaped and valid UTF-8 is kept): a as an event into out, with
 * labels and annotations in a's order, "endsAt" only when resolved, and the
 * faultline section (hosts; domain, deploy, runbook only when set).
 * Returns 0 or -ENOMEM.  alert_parse(alert_encode(a)) gives a back.
 */
struct strbuf;
int alert_encode(const struct alert *a, struct strbuf *out);

/*
 * The alert's fingerprint as Alertmanager (Prometheus' model.LabelSet)
 * computes it, so one alert has one id in faultline and in Alertmanager:
 * FNV-1a 64 over the label names sorted, each name and value followed by a
 * 0xff byte; 16 lower-case hex digits into out.  l[0..n) in any order, keys
 * unique.
 */
void alert_fingerprint(const struct label *l, uint32_t n, char out[17]);

/* ALERT_EV_* bit of an evidence name (one of ALERT_EV_NAMES), or 0. */
uint32_t alert_evidence_bit(const char *name);

/* Value of label key, or NULL. */
const char *alert_label(const struct alert *a, const char *key);
const char *alert_annotation(const struct alert *a, const char *key);

/* Milliseconds since the epoch of an RFC 3339 UTC time, 0 if unparsable. */
uint64_t alert_parse_time(const char *s);
/* Format ms as RFC 3339 UTC (Alertmanager's form). */
char *alert_format_time(uint64_t ms, char *buf, size_t len);

#endif
