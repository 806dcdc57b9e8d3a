/*
 * deploy_watch.c - mark deploys by watching executables' build-ids.
 *
 * etc/probe.yaml `deploy_watch: {api: /usr/local/bin/api-server}`: every
 * interval the probe stat()s each executable; when the file changed
 * (inode, size or mtime) it reads the ELF build-id, and when that differs
 * from the one seen before, it queues a deploy marker of the service for
 * this host (fl:deploys; version = the first 16 hex digits of the new
 * build-id, by = "faultline-probe").  Post-deploy baseline rules then
 * compare this host with its past and with hosts that did not change.
 *
 * The first build-id seen after the probe starts is only remembered: a
 * probe restart is not a deploy.  A file caught half-written (no readable
 * build-id yet) is looked at again next interval.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/deploy.h"
#include "core/log.h"
#include "probes/probe.h"
#include "probes/symbolize.h"

struct watched {
	char service[128];
	char path[512];
	char build_id[96];	/* "" until first read */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int missing_logged;
};

struct deploy_watch {
	struct watched *w;
	uint32_t n;
};

static int dw_open(void **priv, const struct probe_config *cfg, char *err, size_t errlen)
{
	struct deploy_watch *dw = calloc(1, sizeof(*dw));

	(void)err;
	(void)errlen;
	if (!dw)
		return -ENOMEM;
	dw->w = calloc(cfg->ndeploy_watch + 1, sizeof(*dw->w));
	if (!dw->w) {
		free(dw);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < cfg->ndeploy_watch; i++) {
		snprintf(dw->w[i].service, sizeof(dw->w[i].service), "%s",
			 cfg->deploy_watch[i].key);
		snprintf(dw->w[i].path, sizeof(dw->w[i].path), "%s", cfg->deploy_watch[i].value);
		log_info("deploy_watch: marking deploys of %s when %s gets a new build-id",
			 dw->w[i].service, dw->w[i].path);
	}
	dw->n = cfg->ndeploy_watch;
	*priv = dw;
	return 0;
}

static int dw_collect(void *priv, struct snapshot *s)
{
	(void)priv;
	(void)s;
	return 0;
}

/* Look at one executable; queue a marker if its build-id changed. */
static void check(struct watched *w, struct store *st, const char *host)
{
	struct stat sb;
	char id[96], err[256];
	struct deploy d = { 0 };

	if (stat(w->path, &sb)) {
		if (!w->missing_logged)
			log_warn("deploy_watch: %s: %s; marking %s deploys once it is there",
				 w->path, strerror(errno), w->service);
		w->missing_logged = 1;
		return;
	}
	w->missing_logged = 0;
	if (w->build_id[0] && sb.st_dev == w->dev && sb.st_ino == w->ino &&
	    sb.st_size == w->size && sb.st_mtim.tv_sec == w->mtime.tv_sec &&
	    sb.st_mtim.tv_nsec == w->mtime.tv_nsec)
		return;
	if (sym_file_build_id(w->path, id, sizeof(id)))
		return;		/* not (yet) a complete ELF with a build-id: retry */
	w->dev = sb.st_dev;
	w->ino = sb.st_ino;
	w->size = sb.st_size;
	w->mtime = sb.st_mtim;
	if (!w->build_id[0] || !strcmp(w->build_id, id)) {
		snprintf(w->build_id, sizeof(w->build_id), "%s", id);
		return;
	}
	snprintf(d.service, sizeof(d.service), "%s", w->service);
	snprintf(d.version, sizeof(d.version), "%.16s", id);
	snprintf(d.hosts, sizeof(d.hosts), "%s", host);
	snprintf(d.by, sizeof(d.by), "faultline-probe");
	if (!st || deploy_queue(st, &d, err, sizeof(err))) {
		log_warn("deploy_watch: %s changed build-id but the marker could not be queued%s%s",
			 w->path, st ? ": " : "", st ? err : "");
		return;		/* keep the old id: try again next interval */
	}
	log_info("deploy_watch: %s changed build-id %.16s -> %.16s: marked a deploy of %s on %s",
		 w->path, w->build_id, id, w->service, host);
	snprintf(w->build_id, sizeof(w->build_id), "%s", id);
}

static int dw_publish(void *priv, struct store *st, const char *host)
{
	struct deploy_watch *dw = priv;

	for (uint32_t i = 0; i < dw->n; i++)
		check(&dw->w[i], st, host);
	return 0;
}

static void dw_close(void *priv)
{
	struct deploy_watch *dw = priv;

	if (dw) {
		free(dw->w);
		free(dw);
	}
}

static int deploy_watch_enabled(const struct probe_config *cfg, int once, const char **why)
{
	(void)once;
	*why = "deploy_watch is empty";
	return cfg->ndeploy_watch > 0;
}

const struct collector deploy_watch_collector = {
	.name = "deploy_watch",
	.enabled = deploy_watch_enabled,
	.needs_bpf = 0,
	.open = dw_open,
	.collect = dw_collect,
	.publish = dw_publish,
	.close = dw_close,
};
