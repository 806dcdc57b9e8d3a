/*
 * log.c - leveled logging to stderr.
 *
 * One write(2) per line so that lines from the probe's threads never
 * interleave mid-line.  Time stamps are UTC wall clock, to the second: logs
 * are read next to alerts, which carry wall-clock times.
 *
 * When stderr is the journal (systemd sets JOURNAL_STREAM to its device and
 * inode), each line starts with its syslog priority, "<3>" for an error to
 * "<7>" for debug, which journald strips and keeps: `journalctl -p err`
 * then shows faultline's errors only.  The time stamp and pid stay out of
 * it there (the journal has both).
 */
#include "core/log.h"

#include "core/jsonc.h"
#include "core/strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *log_progname = "faultline";
static enum log_level log_threshold = LOG_INFO;
static const char *const level_names[] = { "error", "warn", "info", "debug" };

static int log_journal;	/* stderr is the journal: priority prefixes */
static enum log_format log_format = LOG_FORMAT_TEXT;
static const char *const format_names[] = { "text", "json", "logfmt" };
static const int syslog_priority[] = { 3, 4, 6, 7 };	/* err, warning, info, debug */

/* 1 if stderr is the stream JOURNAL_STREAM ("DEV:INO") names. */
static int stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st))
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(const char *progname)
{
	log_progname = progname;
	log_journal = stderr_is_journal();
}

void log_set_level(enum log_level level)
{
	log_threshold = level;
}

enum log_level log_get_level(void)
{
	return log_threshold;
}

int log_parse_level(const char *s, enum log_level *level)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*level = (enum log_level)i;
			return 0;
		}
	}
	if (strcmp(s, "warning") == 0) {
		*level = LOG_WARN;
		return 0;
	}
	return -EINVAL;
}

int log_parse_format(const char *s, enum log_format *format)
{
	for (unsigned i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
		if (strcmp(s, format_names[i]) == 0) {
			*format = (enum log_format)i;
			return 0;
		}
	return -EINVAL;
}

void log_set_format(enum log_format format)
{
	log_format = format;
}

int log_format_option(const char *prog, const char *arg)
{
	enum log_format f;

	if (log_parse_format(arg, &f)) {
		fprintf(stderr, "%s: --log-format: expected text, json or logfmt, found '%s'\n",
			prog, arg);
		return -EINVAL;
	}
	log_set_format(f);
	return 0;
}

/* ts=... level=... prog=... pid=... msg="..." (logfmt quoting: \" \\ \n) */
static void logfmt_line(struct strbuf *sb, const char *ts, enum log_level level,
			const char *msg)
{
	strbuf_addf(sb, "ts=%s level=%s prog=%s pid=%d msg=\"", ts, level_names[level],
		    log_progname, (int)getpid());
	for (const char *p = msg; *p; p++) {
		if (*p == '"' || *p == '\\')
			strbuf_addf(sb, "\\%c", *p);
		else if (*p == '\n')
			strbuf_adds(sb, "\\n");
		else
			strbuf_add(sb, p, 1);
	}
	strbuf_adds(sb, "\"");
}

static void json_line(struct strbuf *sb, const char *ts, enum log_level level, const char *msg)
{
	json_object *o = json_object_new_object();

	if (!o)
		return;
	json_object_object_add(o, "ts", jsonc_string(ts));
	json_object_object_add(o, "level", jsonc_string(level_names[level]));
	json_object_object_add(o, "prog", jsonc_string(log_progname));
	json_object_object_add(o, "pid", json_object_new_int(getpid()));
	json_object_object_add(o, "msg", jsonc_string(msg));
	jsonc_append(sb, o);
	json_object_put(o);
}

/* Write a structured line (json, logfmt) for msg, whole, in one write(2). */
static void structured(enum log_level level, const char *msg)
{
	struct strbuf sb = STRBUF_INIT;
	struct timespec now;
	struct tm tm;
	char ts[40];
	size_t at;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	at = strftime(ts, sizeof(ts) - 8, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + at, sizeof(ts) - at, ".%03dZ", (int)(now.tv_nsec / 1000000) % 1000);
	if (log_journal)
		strbuf_addf(&sb, "<%d>", syslog_priority[level]);
	if (log_format == LOG_FORMAT_JSON)
		json_line(&sb, ts, level, msg);
	else
		logfmt_line(&sb, ts, level, msg);
	strbuf_adds(&sb, "\n");
	if (!strbuf_failed(&sb) && write(STDERR_FILENO, sb.buf, sb.len) < 0)
		(void)errno;
	strbuf_release(&sb);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char line[2048];
	struct tm tm;
	time_t now;
	va_list ap;
	int n, m;

	if (level > log_threshold)
		return;
	if (log_format != LOG_FORMAT_TEXT) {
		char msg[2048];

		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		structured(level, msg);
		return;
	}
	if (log_journal) {
		n = snprintf(line, sizeof(line), "<%d>%s: ", syslog_priority[level],
			     level_names[level]);
	} else {
		now = time(NULL);
		gmtime_r(&now, &tm);
		n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02dZ %s[%d] %s: ",
			     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
			     tm.tm_min, tm.tm_sec, log_progname, (int)getpid(),
			     level_names[level]);
	}
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0)
		(void)errno;
}
