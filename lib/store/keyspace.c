/*
 * keyspace.c - key names of faultline's Redis layout; see keyspace.h.
 */
#include "store/keyspace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

static int name(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int name(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		if (len)
			buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	return n;
}

int key_tier(char *buf, size_t len, const char *host, uint32_t tier)
{
	return name(buf, len, "fl:{%s}:s%u", host, tier);
}

int key_chunks(char *buf, size_t len, const char *host, uint32_t tier)
{
	return name(buf, len, "fl:{%s}:s%u:chunks", host, tier);
}

static const char *const profile_suffix[] = { "p10", "p3600", "io10", "iowait10" };

int key_profile(char *buf, size_t len, const char *host, int kind)
{
	if (kind < 0 || kind > 3) {
		buf[0] = '\0';
		return -EINVAL;
	}
	return name(buf, len, "fl:{%s}:%s", host, profile_suffix[kind]);
}

int key_profile_chunks(char *buf, size_t len, const char *host, int kind)
{
	if (kind < 0 || kind > 3) {
		buf[0] = '\0';
		return -EINVAL;
	}
	return name(buf, len, "fl:{%s}:%s:chunks", host, profile_suffix[kind]);
}

int key_profile_burst(char *buf, size_t len, const char *host)
{
	return name(buf, len, "fl:{%s}:profile:burst", host);
}

int key_drives(char *buf, size_t len, const char *host)
{
	return name(buf, len, "fl:{%s}:drives", host);
}

int key_host_record(char *buf, size_t len, const char *host)
{
	return name(buf, len, "fl:{%s}:host", host);
}

int key_wear(char *buf, size_t len, const char *host, const char *serial)
{
	return name(buf, len, "fl:{%s}:drives:wear:%s", host, serial);
}

int key_lease(char *buf, size_t len, int part)
{
	return name(buf, len, "{fl:alerts}:lease:%d", part);
}

int key_lease_epoch(char *buf, size_t len, int part)
{
	return name(buf, len, "{fl:alerts}:epoch:%d", part);
}

int key_alert_group(char *buf, size_t len, const char *gid)
{
	return name(buf, len, "{fl:alerts}:group:%s", gid);
}

int key_part_state(char *buf, size_t len, int part)
{
	return name(buf, len, "{fl:alerts}:rules:%d", part);
}

int key_partial(char *buf, size_t len, const char *topic)
{
	return name(buf, len, "{fl:alerts}:partial:%s", topic);
}

int key_alert_latest(char *buf, size_t len, const char *fingerprint)
{
	return name(buf, len, "{fl:alerts}:latest:%s", fingerprint);
}
