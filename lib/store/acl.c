/*
 * acl.c - Redis ACL users for faultline's roles; see acl.h.
 *
 * The key patterns come from keyspace.h's layout; a host name holds no
 * glob character (store_host_valid: letters, digits, '.', '_', '-', ':'),
 * so "fl:{H}:*" matches that host's keys only.
 */
#include "store/acl.h"

#include <stdio.h>
#include <string.h>

#include "core/strbuf.h"
#include "store/keyspace.h"
#include "store/store.h"

/* What every role may send to talk to a server or a cluster at all. */
#define ACL_BASE "resetkeys resetchannels -@all +ping +hello +select +cluster|slots +readonly " \
	"+multi +exec +discard +watch +unwatch "

/*
 * The central roles: the data commands, scripts, WAIT and TIME; nothing
 * @dangerous (FLUSHALL, KEYS, CONFIG, ACL, DEBUG, CLIENT KILL, ...) and no
 * function or script management beyond loading.
 */
#define ACL_CENTRAL ACL_BASE "+@read +@write +@stream +@hash +@string +@keyspace " \
	"-@dangerous -@admin +eval +evalsha +script|load +script|exists +wait +time "

int acl_user_name(enum acl_role role, const char *host, char *buf, size_t len)
{
	int n;

	switch (role) {
	case ACL_PROBE:
		if (!store_host_valid(host))
			return -1;
		n = snprintf(buf, len, "fl-probe-%s", host);
		break;
	case ACL_RULES:
		n = snprintf(buf, len, "fl-rules");
		break;
	case ACL_ALERTER:
		n = snprintf(buf, len, "fl-alerter");
		break;
	case ACL_WEB:
		n = snprintf(buf, len, "fl-web");
		break;
	default:
		n = snprintf(buf, len, "fl-operator");
		break;
	}
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int acl_user_line(enum acl_role role, const char *host, const char *password_sha256, int setuser,
		  struct strbuf *out)
{
	char name[300];

	if (acl_user_name(role, host, name, sizeof(name)))
		return -1;
	strbuf_addf(out, "%s %s on #%s ", setuser ? "ACL SETUSER" : "user", name, password_sha256);
	switch (role) {
	case ACL_PROBE:
		/* its own keys (its registry record too); deploy markers and wakes by XADD alone */
		strbuf_addf(out, ACL_BASE "+xadd +xrange +xrevrange +xdel +xlen +xtrim +hset +hget "
			    "+hgetall +set +get +eval ~fl:{%s}:* (+xadd ~" KEY_DEPLOYS " ~" KEY_WAKE
			    ")", host);
		break;
	case ACL_RULES:
		/* its events and checkpoints; the deploy verdicts it judges */
		strbuf_addf(out, ACL_CENTRAL "%%R~fl:* ~" KEY_ALERTS " ~{" KEY_ALERTS "}:* ~"
			    KEY_ALERTS_STATE_LEGACY " ~" KEY_DEPLOY_VERDICTS);
		break;
	case ACL_ALERTER:
		/*
		 * fl:alerts as a consumer: it reads, claims, acknowledges, trims;
		 * never adds.  Silences: its API takes and expires them.
		 */
		strbuf_addf(out, ACL_CENTRAL "%%R~fl:* ~{" KEY_ALERTS "}:group:* ~" KEY_ALERTS_ACTIVE
			    " ~" KEY_ALERTS_DEAD " ~" KEY_NOTIFICATIONS " ~" KEY_SILENCES
			    " (+xreadgroup +xack +xautoclaim +xclaim +xpending "
			    "+xgroup|create +xgroup|delconsumer +xinfo|groups +xinfo|consumers +xlen "
			    "+xrange +xtrim +eval +evalsha ~" KEY_ALERTS ")");
		break;
	case ACL_OPERATOR:
		strbuf_addf(out, ACL_CENTRAL "%%R~fl:* %%R~{" KEY_ALERTS "}:* ~" KEY_SILENCES " ~"
			    KEY_DEPLOYS " ~fl:{*}:profile:burst");
		break;
	case ACL_WEB:
		/* reads only: no write command at all, and read access to its keys */
		strbuf_addf(out, ACL_BASE "+@read -@dangerous -@admin -@write %%R~fl:* %%R~{"
			    KEY_ALERTS "}:*");
		break;
	}
	strbuf_adds(out, "\n");
	return 0;
}

void acl_default_off(int setuser, struct strbuf *out)
{
	strbuf_addf(out, "%s default off resetpass resetkeys resetchannels -@all\n",
		    setuser ? "ACL SETUSER" : "user");
}
