/*
 * log.h - leveled logging to stderr.
 *
 * Every faultline binary logs through here so that one flag (--log-level) and
 * one format ("2026-11-30T13:41:23Z faultline-probe[123] warn: ...") hold
 * across the fleet.  Messages should say what happened and, for warnings and
 * errors, what the operator can do about it.
 *
 * --log-format picks the line format for log shippers: text (the default,
 * above), json (one object per line: ts with milliseconds, level, prog, pid,
 * msg) or logfmt (ts=... level=warn prog=... pid=... msg="...").  Under
 * systemd every format is prefixed with the syslog priority ("<4>").
 */
#ifndef FL_LOG_H
#define FL_LOG_H

#include <stdarg.h>

enum log_level {
	LOG_ERROR = 0,
	LOG_WARN,
	LOG_INFO,
	LOG_DEBUG,
};

enum log_format {
	LOG_FORMAT_TEXT = 0,
	LOG_FORMAT_JSON,
	LOG_FORMAT_LOGFMT,
};

/* Parse "text", "json" or "logfmt". Returns 0, or -EINVAL for anything else. */
int log_parse_format(const char *s, enum log_format *format);
void log_set_format(enum log_format format);

/*
 * The --log-format option of every daemon: set it from arg, or say on
 * stderr what was expected ("PROG: --log-format: expected text, json or
 * logfmt, found 'x'") and return -EINVAL (the caller exits 2).
 */
int log_format_option(const char *prog, const char *arg);

/* Set the program name shown in each line (no copy is made). */
void log_init(const char *progname);

/* Set the threshold; messages above it are dropped. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/*
 * Parse "error", "warn", "info" or "debug" into *level.
 * Returns 0, or -EINVAL for anything else.
 */
int log_parse_level(const char *s, enum log_level *level);

void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
