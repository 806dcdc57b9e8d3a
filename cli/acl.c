/*
 * acl.c - `faultline acl`: the Redis ACL users of a fleet (lib/store/acl.h)
 * and their passwords, one file each.
 *
 * A password is made once (24 random bytes, hex) into SECRETS/USER.pass,
 * mode 0600, and read back on later runs, so the command can be run again
 * as hosts join and prints the same users.  Redis is given only each
 * password's SHA-256; each part of the fleet is given its own file (its
 * Redis URL's password_file=).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/digest.h"
#include "core/secret.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "store/acl.h"
#include "store/store.h"

#define ACL_MAX_HOSTS 100000

/* SECRETS/USER.pass, made when missing; its SHA-256 (hex) into sha. */
static int user_password(const char *dir, const char *user, char *sha, int *made)
{
	char path[600], pw[65], err[700];
	unsigned char raw[24];

	snprintf(path, sizeof(path), "%s/%s.pass", dir, user);
	if (access(path, F_OK)) {
		int fd;

		if (getrandom(raw, sizeof(raw), 0) != sizeof(raw)) {
			fprintf(stderr, "faultline acl: getrandom: %s\n", strerror(errno));
			return -1;
		}
		hex_encode(raw, sizeof(raw), pw);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, pw, strlen(pw)) != (ssize_t)strlen(pw) ||
		    write(fd, "\n", 1) != 1 || fsync(fd)) {
			fprintf(stderr, "faultline acl: %s: %s\n", path, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
		(*made)++;
	} else if (secret_file_read(path, pw, sizeof(pw), err, sizeof(err))) {
		fprintf(stderr, "faultline acl: %s\n", err);
		return -1;
	}
	sha256_hex(pw, strlen(pw), sha);
	explicit_bzero(pw, sizeof(pw));
	return 0;
}

/* Hosts from file, one per line ('#' starts a comment); errors name file:line. */
static int read_hosts(const char *file, char **hosts, int *n)
{
	FILE *f = fopen(file, "r");
	char line[512];
	int lineno = 0;

	if (!f) {
		fprintf(stderr, "faultline acl: %s: %s\n", file, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *e;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			fprintf(stderr, "faultline acl: %s:%d: line too long\n", file, lineno);
			fclose(f);
			return -1;
		}
		line[strcspn(line, "#\r\n")] = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		for (e = p + strlen(p); e > p && (e[-1] == ' ' || e[-1] == '\t'); e--)
			e[-1] = '\0';
		if (!*p)
			continue;
		if (!store_host_valid(p)) {
			fprintf(stderr, "faultline acl: %s:%d:1: '%s' is not a host name (letters, "
				"digits, '.', '_', '-', ':')\n", file, lineno, p);
			fclose(f);
			return -1;
		}
		if (*n == ACL_MAX_HOSTS) {
			fprintf(stderr, "faultline acl: %s:%d: more than %d hosts\n", file, lineno,
				ACL_MAX_HOSTS);
			fclose(f);
			return -1;
		}
		hosts[(*n)++] = strdup(p);
	}
	fclose(f);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: faultline acl --secrets DIR [--host H ...] [--hosts-file FILE]\n"
		"                     [--format aclfile|setuser]\n\n"
		"Print the Redis ACL users of a fleet: fl-probe-HOST for each host (its own\n"
		"keys only), fl-rules, fl-alerter, fl-operator (the CLI), and the default\n"
		"user turned off.  Each user's password is DIR/USER.pass (made, mode 0600,\n"
		"when missing; kept when there); Redis gets only its SHA-256.\n\n"
		"  --format aclfile   lines for redis.conf's aclfile (default); load with\n"
		"                     ACL LOAD.  Keep an admin user of your own in it.\n"
		"  --format setuser   ACL SETUSER commands for redis-cli (a cluster: every node)\n\n"
		"Give each part its file: a probe's redis URL\n"
		"  redis://fl-probe-web-1@redis:6379?password_file=/etc/faultline/redis.pass\n"
		"See docs/security.md.\n");
}

int cmd_acl(int argc, char **argv)
{
	char **hosts = calloc(ACL_MAX_HOSTS, sizeof(*hosts)), sha[65], name[300];
	const char *secrets = NULL;
	struct strbuf out = STRBUF_INIT;
	struct strmap seen;
	int nh = 0, setuser = 0, made = 0, ret = 2;
	static const enum acl_role central[] = { ACL_RULES, ACL_ALERTER, ACL_OPERATOR, ACL_WEB };

	if (help_asked(argc, argv)) {
		usage(stdout);
		free(hosts);
		return 0;
	}
	if (!hosts) {
		fprintf(stderr, "faultline acl: out of memory\n");
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--secrets") && i + 1 < argc) {
			secrets = argv[++i];
		} else if (!strcmp(argv[i], "--host") && i + 1 < argc) {
			if (!store_host_valid(argv[++i])) {
				fprintf(stderr, "faultline acl: --host: '%s' is not a host name\n",
					argv[i]);
				goto out;
			}
			if (nh == ACL_MAX_HOSTS)
				goto out;
			hosts[nh++] = strdup(argv[i]);
		} else if (!strcmp(argv[i], "--hosts-file") && i + 1 < argc) {
			if (read_hosts(argv[++i], hosts, &nh))
				goto out;
		} else if (!strcmp(argv[i], "--format") && i + 1 < argc) {
			i++;
			if (strcmp(argv[i], "aclfile") && strcmp(argv[i], "setuser")) {
				fprintf(stderr, "faultline acl: --format: expected aclfile or setuser, "
					"found '%s'\n", argv[i]);
				goto out;
			}
			setuser = !strcmp(argv[i], "setuser");
		} else {
			fprintf(stderr, "faultline acl: unknown argument '%s'\n", argv[i]);
			usage(stderr);
			goto out;
		}
	}
	if (!secrets) {
		fprintf(stderr, "faultline acl: --secrets DIR is required (where the password "
			"files are)\n");
		goto out;
	}
	if (mkdir(secrets, 0700) && errno != EEXIST) {
		fprintf(stderr, "faultline acl: %s: %s\n", secrets, strerror(errno));
		ret = 1;
		goto out;
	}
	ret = 1;
	/* an aclfile has no comments: Redis refuses any line but "user ..." */
	acl_default_off(setuser, &out);
	for (size_t r = 0; r < sizeof(central) / sizeof(central[0]); r++) {
		acl_user_name(central[r], NULL, name, sizeof(name));
		if (user_password(secrets, name, sha, &made) ||
		    acl_user_line(central[r], NULL, sha, setuser, &out))
			goto out;
	}
	/* a user twice would make Redis refuse the whole file: say which host */
	strmap_init(&seen);
	for (int i = 0; i < nh; i++) {
		uint32_t first;

		if (strmap_get(&seen, hosts[i], &first)) {
			fprintf(stderr, "faultline acl: host '%s' is given twice (as host %u and %d)\n",
				hosts[i], first + 1, i + 1);
			ret = 2;
			strmap_free(&seen);
			goto out;
		}
		strmap_put(&seen, hosts[i], (uint32_t)i);
	}
	strmap_free(&seen);
	for (int i = 0; i < nh; i++) {
		if (acl_user_name(ACL_PROBE, hosts[i], name, sizeof(name)) ||
		    user_password(secrets, name, sha, &made) ||
		    acl_user_line(ACL_PROBE, hosts[i], sha, setuser, &out))
			goto out;
	}
	if (strbuf_failed(&out)) {
		fprintf(stderr, "faultline acl: out of memory\n");
		goto out;
	}
	fputs(strbuf_str(&out), stdout);
	fprintf(stderr, "faultline acl: %d users (%d hosts); %d new password file(s) in %s\n",
		3 + nh, nh, made, secrets);
	ret = 0;
out:
	for (int i = 0; i < nh; i++)
		free(hosts[i]);
	free(hosts);
	strbuf_release(&out);
	return ret;
}
