/*
 * helpers.c - see helpers.h.
 */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int ping(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[16];
	int fd, ok = 0;

	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return 0;
	if (strlen(sock) >= sizeof(sa.sun_path)) {
		close(fd);
		return 0;
	}
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    write(fd, "PING\r\n", 6) == 6 && read(fd, buf, sizeof(buf)) >= 5)
		ok = strncmp(buf, "+PONG", 5) == 0;
	close(fd);
	return ok;
}

static int spawn(struct test_redis *r)
{
	r->pid = fork();
	if (r->pid < 0)
		return -1;
	if (r->pid == 0) {
		int null = open("/dev/null", 1);

		dup2(null, 1);
		dup2(null, 2);
		execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", r->sock,
		       "--unixsocketperm", "700", "--save", "",
		       "--appendonly", r->persist ? "yes" : "no", "--appendfsync", "always",
		       "--dir", r->dir, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		if (ping(r->sock))
			return 0;
		usleep(10000);
	}
	kill(r->pid, SIGKILL);
	waitpid(r->pid, NULL, 0);
	return -1;
}

int test_redis_start_persistent(struct test_redis *r)
{
	int ret = test_redis_start(r);

	if (ret)
		return ret;
	test_redis_stop(r, 1);
	r->persist = 1;
	return spawn(r);
}

int test_redis_start(struct test_redis *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "/tmp/fl-test-redis.XXXXXX");
	if (!mkdtemp(r->dir))
		return -1;
	snprintf(r->sock, sizeof(r->sock), "%s/redis.sock", r->dir);
	snprintf(r->url, sizeof(r->url), "unix://%s", r->sock);
	return spawn(r);
}

void test_redis_stop(struct test_redis *r, int hard)
{
	if (r->pid <= 0)
		return;
	kill(r->pid, hard ? SIGKILL : SIGTERM);
	waitpid(r->pid, NULL, 0);
	r->pid = 0;
	unlink(r->sock);
}

int test_redis_restart(struct test_redis *r)
{
	return spawn(r);
}

void test_redis_destroy(struct test_redis *r)
{
	test_redis_stop(r, 1);
	if (r->dir[0])
		test_sh("rm -rf '%s'", r->dir);
}

int test_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

int test_is_root(void)
{
	return geteuid() == 0;
}

const char *test_out_dir(void)
{
	const char *o = getenv("FL_OUT");

	return o && *o ? o : "build";
}
