/*
 * notify.c - sd_notify without libsystemd; see notify.h.
 */
#include "core/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/timeutil.h"

int notify_send(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd, ret = 0;

	if (!path || !*path)
		return 0;
	if ((path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, strlen(path));
	if (path[0] == '@')
		sa.sun_path[0] = '\0';	/* an abstract socket */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

int notify_ready(const char *status)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status ? status : "running");
	return notify_send(msg);
}

int notify_stopping(void)
{
	return notify_send("STOPPING=1");
}

uint64_t notify_watchdog_every(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long us;

	if (!usec || !getenv("NOTIFY_SOCKET"))
		return 0;
	if (pid && strtol(pid, NULL, 10) != (long)getpid())
		return 0;	/* meant for another process */
	us = strtoull(usec, NULL, 10);
	return us ? us * 1000 / 2 : 0;
}

void notify_watchdog(void)
{
	static uint64_t every = UINT64_MAX, last;
	uint64_t now;

	if (every == UINT64_MAX)
		every = notify_watchdog_every();
	if (!every)
		return;
	now = time_mono_ns();
	if (last && now - last < every)
		return;
	last = now;
	notify_send("WATCHDOG=1");
}
