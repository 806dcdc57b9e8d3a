/*
 * sim.c - the fleet simulator; see sim.h.
 *
 * One pass per simulated second: the scenario's active events set each
 * selected host's conditions for that second (struct cond, cleared every
 * second), then every host that is not silent turns its state plus its
 * conditions into a snapshot like a probe's (the same metric names,
 * labels and kinds; counters cumulative, latency as cumulative
 * histograms), which goes to Redis through the store's spool and into the
 * host's minute/hour rollups.  Every 10 s a host also writes a CPU profile
 * window whose stacks follow its CPU use, so a deploy's regression shows
 * up in a named function.  The spool is drained whenever it holds more
 * than SPOOL_HIGH entries, so backfill never drops data.
 */
#include "sim/sim.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "store/deploy.h"
#include "model/catalog.h"
#include "model/drive.h"
#include "store/drives.h"
#include "model/histogram.h"
#include "core/log.h"
#include "model/profile.h"
#include "model/rollup.h"
#include "model/snapshot.h"
#include "store/profile_store.h"
#include "store/store.h"
#include "core/timeutil.h"
#include "sim/timeline.h"

#define NCPUS 4
#define PROFILE_EVERY_MS 10000
#define PROFILE_HZ 49
#define SPOOL_HIGH 50000
#define WEAR_HISTORY_DAYS 30
#define DRIVE_EVERY_MS (10 * 60 * 1000)

/* Drive models of the fleet: every third host has each. */
static const struct model {
	const char *name, *device, *protocol;
	double read_ms, write_ms;	/* typical device latency */
} models[] = {
	{ "SAMSUNG MZ7LH960HAJR-00005", "sda", "ata", 0.4, 1.2 },
	{ "INTEL SSDPE2KX040T8", "nvme0n1", "nvme", 0.1, 0.25 },
	{ "Micron_5300_MTFDDAK1T9TDS", "sdb", "ata", 0.5, 1.5 },
};
#define NMODELS (sizeof(models) / sizeof(models[0]))

#define MAX_REGRESS 4		/* deploys regressing one host at once */

/* One second's injected conditions on a host; cleared every second. */
struct cond {
	double csum_rate, lat_factor, throttle, burst_s, saturation, load;
	double base;			/* > 0: the host's CPU level instead of its own */
	double regress[MAX_REGRESS];	/* CPU growth, per deploy regressing it */
	const char *regress_fn[MAX_REGRESS];	/* where each goes (leaf or path) */
	const char *regress_svc[MAX_REGRESS];	/* whose process spends it: the deploy's */
	int nregress;
	double wear;			/* > 0: wear used % reported */
	double pending;			/* > 0: failing, with these pending sectors */
	int silent;
};

struct host {
	char name[40], rack[16], sw[16], agg[16], site[16], peer[20];
	unsigned rng;
	double cpu_base, wear_base, wear_per_day;
	const struct model *model;
	uint64_t seq;
	uint64_t in_segs, out_segs, retrans, csum;
	uint64_t ios[2], bytes[2];
	struct histogram *lat;		/* [0] read, [1] write: cumulative */
	uint64_t throttled_ns, nr_throttled, nr_periods;
	struct drive_record drive;
	double drive_said[2];		/* wear, pending last written to Redis */
	struct rollup tiers[2];
	struct cond c;
	double cpu_acc;			/* CPU-seconds since the last profile */
	double regress_acc[MAX_REGRESS];	/* of them, each regression's */
	const char *regress_fn[MAX_REGRESS];
	const char *regress_svc[MAX_REGRESS];
	int nregress;
};

struct sim {
	const struct scenario *sc;
	const struct sim_opts *o;
	struct sim_shape sh;
	struct host *h;
	uint32_t n;
	uint32_t **sel;			/* per event: selected host indexes */
	uint32_t *nsel;
	struct store *st;
	struct sim_stats *stats;
	uint64_t start_ms, end_ms;
};

/* xorshift32: each host's own deterministic stream. */
static double uniform(unsigned *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return (double)(*s >> 8) / (double)(1u << 24);
}

static double noise(unsigned *s)
{
	return 2 * uniform(s) - 1;
}

static double clamp01(double x)
{
	return x < 0 ? 0 : x > 1 ? 1 : x;
}

/* Host i's rack and place in it: racks of hosts_per_rack, or cycling through rack_sizes. */
static void place(const struct sim_shape *sh, uint32_t i, uint32_t *rack, uint32_t *pos)
{
	uint32_t cycle = 0, k, rem;

	if (!sh->nrack_sizes) {
		*rack = i / sh->hosts_per_rack;
		*pos = i % sh->hosts_per_rack;
		return;
	}
	for (int j = 0; j < sh->nrack_sizes; j++)
		cycle += sh->rack_sizes[j];
	k = i / cycle;
	rem = i % cycle;
	for (int j = 0;; j++) {
		if (rem < sh->rack_sizes[j]) {
			*rack = k * (uint32_t)sh->nrack_sizes + (uint32_t)j;
			*pos = rem;
			return;
		}
		rem -= sh->rack_sizes[j];
	}
}

char *sim_host_name(const struct sim_shape *sh, uint32_t i, char *buf, size_t len)
{
	uint32_t rack, pos;

	place(sh, i, &rack, &pos);
	snprintf(buf, len, "sw%03u-r%04u-h%02u", rack / sh->racks_per_switch, rack, pos);
	return buf;
}

static int host_init(struct sim *sm, struct host *h, uint32_t i)
{
	uint32_t rack, pos, sw;

	place(&sm->sh, i, &rack, &pos);
	sw = rack / sm->sh.racks_per_switch;
	sim_host_name(&sm->sh, i, h->name, sizeof(h->name));
	snprintf(h->rack, sizeof(h->rack), "r%04u", rack);
	snprintf(h->sw, sizeof(h->sw), "sw%03u", sw);
	if (sm->sh.switches_per_agg)
		snprintf(h->agg, sizeof(h->agg), "agg%02u", sw / sm->sh.switches_per_agg);
	snprintf(h->site, sizeof(h->site), "site%u", sw / sm->sh.switches_per_site);
	/* the upstream peer bad segments come from: a host of another rack */
	snprintf(h->peer, sizeof(h->peer), "10.%u.%u.%u", (sw + 1) % 250, (rack + 7) % 250,
		 1 + i % 250);
	h->rng = (sm->o->seed * 2654435761u) ^ (i * 40503u + 1);
	if (!h->rng)
		h->rng = 1;
	h->cpu_base = 0.25 + 0.2 * uniform(&h->rng);
	h->model = &models[i % NMODELS];
	h->wear_base = 5 + 55 * uniform(&h->rng);
	h->wear_per_day = 0.02 + 0.08 * uniform(&h->rng);
	h->lat = calloc(2, sizeof(*h->lat));
	if (!h->lat)
		return -ENOMEM;
	drive_init(&h->drive, h->model->device);
	snprintf(h->drive.protocol, sizeof(h->drive.protocol), "%s", h->model->protocol);
	snprintf(h->drive.model, sizeof(h->drive.model), "%s", h->model->name);
	snprintf(h->drive.serial, sizeof(h->drive.serial), "SIM%08X", i * 2654435761u);
	snprintf(h->drive.status, sizeof(h->drive.status), "ok");
	h->drive.rotational = 0;
	h->drive.smart_passed = 1;
	h->drive_said[0] = h->drive_said[1] = -1;
	if (rollup_init(&h->tiers[0], h->name, 60) || rollup_init(&h->tiers[1], h->name, 3600))
		return -ENOMEM;
	return 0;
}

static void host_free(struct host *h)
{
	free(h->lat);
	if (h->tiers[0].acc.host)
		rollup_free(&h->tiers[0]);
	if (h->tiers[1].acc.host)
		rollup_free(&h->tiers[1]);
}

/* Does host h match event ev's where: (globs; empty matches all)? */
static int selects(const struct sim_event *ev, const struct host *h)
{
	return (!ev->host[0] || !fnmatch(ev->host, h->name, 0)) &&
	       (!ev->rack[0] || !fnmatch(ev->rack, h->rack, 0)) &&
	       (!ev->sw[0] || !fnmatch(ev->sw, h->sw, 0)) &&
	       (!ev->agg[0] || !fnmatch(ev->agg, h->agg, 0)) &&
	       (!ev->site[0] || !fnmatch(ev->site, h->site, 0));
}

/* Each event's hosts: those it selects, thinned evenly to its fraction. */
static int select_hosts(struct sim *sm, char *err, size_t errlen)
{
	sm->sel = calloc((size_t)sm->sc->nev + 1, sizeof(*sm->sel));
	sm->nsel = calloc((size_t)sm->sc->nev + 1, sizeof(*sm->nsel));
	if (!sm->sel || !sm->nsel)
		return -ENOMEM;
	for (int e = 0; e < sm->sc->nev; e++) {
		const struct sim_event *ev = &sm->sc->ev[e];
		uint32_t matched = 0;

		sm->sel[e] = calloc((size_t)sm->n + 1, sizeof(uint32_t));
		if (!sm->sel[e])
			return -ENOMEM;
		for (uint32_t i = 0; i < sm->n; i++) {
			if (!selects(ev, &sm->h[i]))
				continue;
			/* keep the k-th match when floor(k * fraction) steps up */
			if (floor((matched + 1) * ev->fraction + 1e-9) >
			    floor(matched * ev->fraction + 1e-9))
				sm->sel[e][sm->nsel[e]++] = i;
			matched++;
		}
		if (!sm->nsel[e]) {
			snprintf(err, errlen, "%s: event \"%s\" (line %d) selects no host of the %u "
				 "simulated", sm->sc->name, ev->name, ev->line, sm->n);
			return -EINVAL;
		}
	}
	return 0;
}

/* Host index i's name (sim_timeline's callback). */
static const char *sim_name_of(uint32_t i, void *arg)
{
	const struct sim *sm = arg;

	return sm->h[i].name;
}

/* Was deploy event e's service rolled back on host index i by scenario time t? */
static int rolled_back(const struct sim *sm, int e, uint32_t i, uint64_t t)
{
	const struct sim_event *d = &sm->sc->ev[e];

	for (int k = 0; k < sm->sc->nev; k++) {
		const struct sim_event *r = &sm->sc->ev[k];

		if (r->kind != SIM_ROLLBACK || strcmp(r->service, d->service) ||
		    r->at_ms <= d->at_ms || r->at_ms > t)
			continue;
		for (uint32_t j = 0; j < sm->nsel[k]; j++)
			if (sm->sel[k][j] == i)
				return 1;
	}
	return 0;
}

/* Apply the events active at scenario time t (ms) to their hosts' conditions. */
static void apply_events(struct sim *sm, uint64_t t)
{
	for (uint32_t i = 0; i < sm->n; i++) {
		memset(&sm->h[i].c, 0, sizeof(sm->h[i].c));
		sm->h[i].c.load = 1;
		sm->h[i].c.lat_factor = 1;
	}
	for (int e = 0; e < sm->sc->nev; e++) {
		const struct sim_event *ev = &sm->sc->ev[e];

		if (t < ev->at_ms || (ev->for_ms && t >= ev->at_ms + ev->for_ms))
			continue;
		for (uint32_t k = 0; k < sm->nsel[e]; k++) {
			struct cond *c = &sm->h[sm->sel[e][k]].c;
			uint64_t span = ev->for_ms ? ev->for_ms : sm->end_ms - sm->start_ms - ev->at_ms;

			switch (ev->kind) {
			case SIM_CSUM_ERRORS: c->csum_rate += ev->value; break;
			case SIM_WRITE_LATENCY: c->lat_factor *= ev->value; break;
			case SIM_DRIVE_WEAR: c->wear = ev->value; break;
			case SIM_DRIVE_FAILING: c->pending = ev->value; break;
			case SIM_THROTTLE: c->throttle = ev->value; break;
			case SIM_CPU_BURSTS: c->burst_s = ev->value; break;
			case SIM_CPU_SATURATION: c->saturation = ev->value; break;
			case SIM_DEPLOY:
				if (ev->value > 0 && c->nregress < MAX_REGRESS &&
				    !rolled_back(sm, e, sm->sel[e][k], t)) {
					c->regress[c->nregress] = ev->value;
					c->regress_svc[c->nregress] = ev->service;
					c->regress_fn[c->nregress++] = ev->function;
				}
				break;
			case SIM_LOAD_RISE: c->load *= ev->value; break;
			case SIM_LOAD_RAMP:
				c->load *= 1 + (ev->value - 1) * (double)(t - ev->at_ms) /
					       (double)(span ? span : 1);
				break;
			case SIM_BASE_LOAD: c->base = ev->value; break;
			case SIM_SILENCE: c->silent = 1; break;
			case SIM_ROLLBACK:
			case SIM_KINDS: break;
			}
		}
	}
}

/* Deploy markers for the events that start at scenario time t. */
static void mark_deploys(struct sim *sm, uint64_t t)
{
	for (int e = 0; e < sm->sc->nev; e++) {
		const struct sim_event *ev = &sm->sc->ev[e];
		struct deploy d = { .ts_ms = sm->start_ms + ev->at_ms };
		char err[256];


		if ((ev->kind != SIM_DEPLOY && ev->kind != SIM_ROLLBACK) || ev->at_ms < t ||
		    ev->at_ms >= t + 1000)
			continue;
		d.rollback = ev->kind == SIM_ROLLBACK;
		snprintf(d.service, sizeof(d.service), "%s", ev->service);
		snprintf(d.version, sizeof(d.version), "%s", ev->version);
		snprintf(d.hosts, sizeof(d.hosts), "%s", ev->host[0] ? ev->host : "*");
		snprintf(d.by, sizeof(d.by), "sim:%.100s", sm->sc->name);
		if (deploy_queue(sm->st, &d, err, sizeof(err)))
			log_warn("sim: deploy marker for %s %s: %s", d.service, d.version, err);
		else
			sm->stats->deploys++;
	}
}

/* Record one second of an op's latencies: a body around base, a 2 % tail at 2.5x. */
static void record_latency(struct host *h, int op, uint64_t ios, double base_ms)
{
	uint64_t tail = ios / 50, each = (ios - tail) / 8;

	for (int i = 0; i < 8; i++)
		hist_record_n(&h->lat[op], (uint64_t)(base_ms * 1e6 * exp(0.2 * noise(&h->rng))),
			      each);
	hist_record_n(&h->lat[op], (uint64_t)(base_ms * 2.5e6 * exp(0.1 * noise(&h->rng))),
		      ios - 8 * each);
}

static void put_rollup(const struct snapshot *out, const struct snapshot *base, void *arg)
{
	struct sim *sm = arg;

	store_put_rollup(sm->st, out, base);
	sm->stats->rollups++;
}

/*
 * Read the host's drive as a probe does: when its condition changes, else
 * every DRIVE_EVERY_MS (a probe's default drive interval), and keep the
 * record in Redis in step with the injected wear or failure.
 */
static void update_drive(struct sim *sm, struct host *h, uint64_t now_ms)
{
	double wear = h->c.wear > 0 ? h->c.wear : h->wear_base;
	struct drive_record *r = &h->drive;
	char day[16];
	time_t secs;
	struct tm tm;

	if (h->drive_said[0] == wear && h->drive_said[1] == h->c.pending &&
	    now_ms - r->read_at_ms < DRIVE_EVERY_MS)
		return;
	drive_set(r, DF_WEAR_USED_PCT, wear, "sim");
	drive_set(r, DF_PENDING_SECTORS, h->c.pending, "sim");
	drive_set(r, DF_SPARE_PCT, 100 - wear / 2, "sim");
	drive_set(r, DF_TEMPERATURE_C, 35 + 5 * uniform(&h->rng), "sim");
	drive_set(r, DF_POWER_ON_HOURS, 20000 + (double)(now_ms / 3600000 % 10000), "sim");
	drive_set(r, DF_BYTES_WRITTEN, wear * 1e13, "sim");
	r->smart_passed = h->c.pending > 0 ? 0 : 1;
	r->read_at_ms = now_ms;
	if (h->drive_said[0] == wear && h->drive_said[1] == h->c.pending)
		return;
	secs = (time_t)(now_ms / 1000);
	gmtime_r(&secs, &tm);
	strftime(day, sizeof(day), "%Y-%m-%d", &tm);
	if (h->drive_said[0] < 0) {
		/* first write: a month of daily wear points for the end-of-life projection */
		for (int d = WEAR_HISTORY_DAYS; d > 0; d--) {
			struct drive_record past = *r;
			char pday[16];
			time_t ps = secs - (time_t)d * 86400;

			drive_set(&past, DF_WEAR_USED_PCT, fmax(0, wear - d * h->wear_per_day),
				  "sim");
			drive_set(&past, DF_BYTES_WRITTEN, fmax(0, wear - d * h->wear_per_day) * 1e13,
				  "sim");
			gmtime_r(&ps, &tm);
			strftime(pday, sizeof(pday), "%Y-%m-%d", &tm);
			drives_put(sm->st, h->name, &past, pday);
		}
	}
	drives_put(sm->st, h->name, r, day);
	h->drive_said[0] = wear;
	h->drive_said[1] = h->c.pending;
	sm->stats->drive_records++;
}

/* The CPU multiplier of the deploys regressing the host this second (1: none). */
static double regress_growth(const struct cond *c)
{
	double growth = 1;

	for (int r = 0; r < c->nregress; r++)
		growth += c->regress[r];
	return growth;
}

/* The host's CPU use this second, per CPU and overall, and its maxima. */
static double cpu_series(struct host *h, struct snapshot *s, uint64_t t_s)
{
	double u[NCPUS], all = 0, all_max = 0, want;
	char cpu[8];

	want = (h->c.base > 0 ? h->c.base : h->cpu_base) * h->c.load * regress_growth(&h->c);
	for (int k = 0; k < NCPUS; k++) {
		u[k] = clamp01(want + 0.04 * noise(&h->rng));
		if (h->c.saturation > 0)
			u[k] = clamp01(h->c.saturation + 0.01 * noise(&h->rng));
	}
	/* the lying average: core 0 saturated burst_s seconds of every minute */
	if (h->c.burst_s > 0 && (double)(t_s % 60) < h->c.burst_s)
		u[0] = 1.0;
	for (int k = 0; k < NCPUS; k++) {
		double mx = u[k] >= 1.0 ? 1.0 : clamp01(u[k] + 0.05 + 0.02 * noise(&h->rng));

		/* at the probe's resolution, as the probe reports them */
		u[k] = catalog_ratio(u[k]);
		mx = catalog_ratio(mx);
		snprintf(cpu, sizeof(cpu), "%d", k);
		snapshot_add_gauge(s, "cpu.utilization", u[k], "cpu", cpu, NULL);
		snapshot_add_gauge(s, "cpu.utilization_max", mx, "cpu", cpu, NULL);
		all += u[k] / NCPUS;
		if (mx > all_max)
			all_max = mx;
	}
	/* the host aggregates are their own series, not a cpu="all" among the CPUs */
	snapshot_add_gauge(s, "cpu.host_utilization", catalog_ratio(all), NULL);
	snapshot_add_gauge(s, "cpu.host_utilization_max", all_max, NULL);
	return all;
}

/* Snapshot of host h for the second ending at ts_ms; t_s is scenario seconds. */
static int host_snapshot(struct sim *sm, struct host *h, uint64_t ts_ms, uint64_t t_s,
			 struct snapshot *s)
{
	static const char *const ops[2] = { "read", "write" };
	const struct model *m = h->model;
	uint64_t csum, ios[2] = { 180, 90 };
	struct series *x;
	double all;

	if (snapshot_init(s, h->name, ts_ms, 1000, h->seq++, 1))
		return -ENOMEM;
	snapshot_set_label(s, "rack", h->rack);
	snapshot_set_label(s, "switch", h->sw);
	snapshot_set_label(s, "site", h->site);
	if (h->agg[0])
		snapshot_set_label(s, "agg", h->agg);
	all = cpu_series(h, s, t_s);
	h->cpu_acc += all * NCPUS;
	{
		double growth = regress_growth(&h->c);

		/* each regression's share of this second, kept per function */
		for (int r = 0; r < h->c.nregress; r++) {
			int slot;

			for (slot = 0; slot < h->nregress &&
			     (strcmp(h->regress_fn[slot], h->c.regress_fn[r]) ||
			      strcmp(h->regress_svc[slot], h->c.regress_svc[r])); slot++)
				;
			if (slot == h->nregress) {
				if (h->nregress == MAX_REGRESS)
					continue;
				h->regress_svc[h->nregress] = h->c.regress_svc[r];
				h->regress_fn[h->nregress++] = h->c.regress_fn[r];
			}
			h->regress_acc[slot] += all * NCPUS * h->c.regress[r] / growth;
		}
	}

	h->in_segs += 5000 + (uint64_t)(500 * uniform(&h->rng));
	h->out_segs += 4800 + (uint64_t)(500 * uniform(&h->rng));
	h->retrans += uniform(&h->rng) < 0.05;
	csum = (uint64_t)(h->c.csum_rate + uniform(&h->rng));
	h->csum += h->c.csum_rate > 0 ? csum : 0;
	snapshot_add_counter(s, "tcp.in_segs", h->in_segs, NULL);
	snapshot_add_counter(s, "tcp.out_segs", h->out_segs, NULL);
	snapshot_add_counter(s, "tcp.retrans_segs", h->retrans, NULL);
	snapshot_add_counter(s, "tcp.in_csum_errors", h->csum, NULL);
	if (h->csum)
		snapshot_add_counter(s, "tcp.bad_csum", h->csum, "interface", "eth0", "peer",
				     h->peer, NULL);

	for (int op = 0; op < 2; op++) {
		uint64_t n = ios[op] + (uint64_t)(20 * uniform(&h->rng));

		h->ios[op] += n;
		h->bytes[op] += n * 16384;
		record_latency(h, op, n, (op ? m->write_ms * h->c.lat_factor : m->read_ms));
		snapshot_add_counter(s, "block.ios", h->ios[op], "device", m->device, "op", ops[op],
				     NULL);
		snapshot_add_counter(s, "block.bytes", h->bytes[op], "device", m->device, "op",
				     ops[op], NULL);
		x = snapshot_add(s, "block.latency", SERIES_HISTOGRAM, "device", m->device, "op",
				 ops[op], "model", m->name, NULL);
		if (!x)
			return -ENOMEM;
		*x->hist = h->lat[op];
	}

	h->nr_periods += 10;
	if (h->c.throttle > 0) {
		h->throttled_ns += (uint64_t)(h->c.throttle * 1e9);
		h->nr_throttled += (uint64_t)ceil(10 * h->c.throttle);
	}
	snapshot_add_counter(s, "cgroup.throttled_time", h->throttled_ns, "cgroup",
			     "/sim.slice/api.service", NULL);
	snapshot_add_counter(s, "cgroup.nr_throttled", h->nr_throttled, "cgroup",
			     "/sim.slice/api.service", NULL);
	snapshot_add_counter(s, "cgroup.nr_periods", h->nr_periods, "cgroup",
			     "/sim.slice/api.service", NULL);

	update_drive(sm, h, ts_ms);
	return drive_add_series(&h->drive, s);
}

/* Split "a;b;c" (root first) into frames[], pointing into buf; returns the depth. */
static uint32_t split_path(const char *path, char *buf, size_t len, const char **frames)
{
	uint32_t depth = 0;
	char *save, *f;

	snprintf(buf, len, "%s", path);
	for (f = strtok_r(buf, ";", &save); f && depth < SIM_MAX_FRAMES;
	     f = strtok_r(NULL, ";", &save))
		frames[depth++] = f;
	return depth;
}

/*
 * A 10 s profile window of host h ending at ts_ms, its stacks following its
 * CPU use; each regression's time goes to its function: the built-in leaf
 * it names, or its own new stack (a function with its callers).
 */
/* The share of a host's baseline CPU its neighbour process (logshipper) uses. */
#define SIM_NEIGHBOUR_SHARE 0.1

static void host_profile(struct sim *sm, struct host *h, uint64_t ts_ms)
{
	double base = h->cpu_acc * PROFILE_HZ, extra = 0;
	char *blob;
	size_t len;
	struct profile p;

	for (int r = 0; r < h->nregress; r++)
		extra += h->regress_acc[r];
	base -= extra * PROFILE_HZ;
	if (profile_init(&p, h->name))
		return;
	p.ts_ms = ts_ms;
	p.duration_ms = PROFILE_EVERY_MS;
	p.rate_hz = PROFILE_HZ;
	for (size_t k = 0; k < sim_nstacks; k++) {
		const struct sim_stack *st = &sim_stacks[k];
		uint32_t depth = 0;
		double n = base * st->share;

		while (depth < SIM_MAX_FRAMES && st->frames[depth])
			depth++;
		n *= 1 - SIM_NEIGHBOUR_SHARE;
		if (n >= 1)
			profile_add(&p, "api", "api-server", 4242, st->frames, depth, (uint64_t)n);
		/* a regressed leaf: the deployed service's process spends the growth there */
		for (int r = 0; r < h->nregress; r++)
			if (!strcmp(st->frames[depth - 1], h->regress_fn[r]) &&
			    h->regress_acc[r] * PROFILE_HZ >= 1)
				profile_add(&p, h->regress_svc[r], h->regress_svc[r], 5000 + (uint32_t)r,
					    st->frames, depth,
					    (uint64_t)(h->regress_acc[r] * PROFILE_HZ));
	}
	/* a neighbour on every host: evidence about api must leave it out */
	if (base * SIM_NEIGHBOUR_SHARE >= 1) {
		static const char *const ship[] = { "main", "ship_logs", "compress_block" };

		profile_add(&p, "logshipper.service", "logshipper", 777, ship, 3,
			    (uint64_t)(base * SIM_NEIGHBOUR_SHARE));
	}
	for (int r = 0; r < h->nregress; r++) {
		const char *frames[SIM_MAX_FRAMES];
		char buf[256];
		uint32_t depth;
		double n = h->regress_acc[r] * PROFILE_HZ;

		if (!strchr(h->regress_fn[r], ';') || n < 1)
			continue;	/* a leaf's time went to its stack above */
		depth = split_path(h->regress_fn[r], buf, sizeof(buf), frames);
		profile_add(&p, h->regress_svc[r], h->regress_svc[r], 5000 + (uint32_t)r, frames,
			    depth, (uint64_t)n);
	}
	if (profile_encode(&p, &blob, &len) == 0) {
		profile_store_put(sm->st, h->name, 0, ts_ms, 0, blob, len);
		sm->stats->profiles++;
		free(blob);
	}
	profile_free(&p);
	h->cpu_acc = 0;
	memset(h->regress_acc, 0, sizeof(h->regress_acc));
}

/* Wait for the writer when the spool is deep, so backfill never drops. */
static void drain_if_deep(struct sim *sm)
{
	struct store_stats ss;

	store_get_stats(sm->st, &ss);
	if (ss.spooled > SPOOL_HIGH && store_flush(sm->st, 120 * NSEC_PER_SEC))
		log_warn("sim: Redis is not keeping up (%llu entries waiting)",
			 (unsigned long long)ss.spooled);
}

static void progress(struct sim *sm, uint64_t t, uint64_t t0_ns, int last)
{
	double wall = (double)(time_mono_ns() - t0_ns) / 1e9;

	log_info("sim: %s%llu:%02llu of %llu:%02llu simulated, %u hosts, %llu snapshots, "
		 "%.1fx real time", last ? "done, " : "", (unsigned long long)(t / 60000),
		 (unsigned long long)(t / 1000 % 60),
		 (unsigned long long)((sm->end_ms - sm->start_ms) / 60000),
		 (unsigned long long)((sm->end_ms - sm->start_ms) / 1000 % 60), sm->n,
		 (unsigned long long)sm->stats->snapshots, wall > 0 ? (double)t / 1000 / wall : 0);
}

int sim_run(const struct scenario *sc, const struct sim_opts *o, struct sim_stats *stats,
	    char *err, size_t errlen)
{
	struct store_opts so = { .url = o->url, .timeout_ns = 5 * NSEC_PER_SEC,
				 .spool_max_entries = 4 * SPOOL_HIGH,
				 .spool_max_bytes = 1ULL << 31 };
	struct sim sm = { .sc = sc, .o = o, .stats = stats };
	uint64_t t0_ns = time_mono_ns(), last_progress = t0_ns, duration;
	int ret = 0;

	memset(stats, 0, sizeof(*stats));
	sm.sh = sc->fleet;
	if (o->shape.hosts)
		sm.sh.hosts = o->shape.hosts;
	if (o->shape.hosts_per_rack)
		sm.sh.hosts_per_rack = o->shape.hosts_per_rack;
	if (o->shape.racks_per_switch)
		sm.sh.racks_per_switch = o->shape.racks_per_switch;
	if (o->shape.switches_per_site)
		sm.sh.switches_per_site = o->shape.switches_per_site;
	duration = o->duration_ms ? o->duration_ms : sc->duration_ms;
	sm.n = sm.sh.hosts;
	sm.start_ms = o->start_ms / 1000 * 1000;
	sm.end_ms = sm.start_ms + duration;
	/* the 1 s tier must still hold the scenario's start when it ends */
	so.retention_ms[0] = duration + 15 * 60 * 1000;
	/*
	 * Replays read all of it second by second: entries, not minute
	 * chunks, unless asked for a probe's layout (a query bench: what a
	 * reader of a real fleet's ended minutes meets).  Profile windows stay
	 * entries: the sim's tests read them as the probe wrote them.
	 */
	so.s1_entries_only = !o->chunked;
	so.profiles_entries_only = 1;
	so.retention_ms[1] = 7ULL * 86400 * 1000;
	so.retention_ms[2] = 90ULL * 86400 * 1000;
	sm.h = calloc(sm.n, sizeof(*sm.h));
	if (!sm.h) {
		snprintf(err, errlen, "out of memory for %u hosts", sm.n);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < sm.n && !ret; i++)
		ret = host_init(&sm, &sm.h[i], i);
	if (!ret)
		ret = select_hosts(&sm, err, errlen);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (!ret && o->timeline)
		ret = sim_timeline_write(&(struct sim_timeline){ sc, &sm.sh, sm.start_ms, sm.end_ms,
								  sm.n, sm.sel, sm.nsel, sim_name_of,
								  &sm }, o->timeline, err, errlen);
	if (!ret) {
		sm.st = store_open(&so, err, errlen);
		if (!sm.st)
			ret = -EINVAL;
	}
	stats->hosts = sm.n;
	log_info("sim: scenario %s, %u hosts (%u per rack, %u racks per switch), %llu s from "
		 "%llu, %d event(s)%s", sc->name, sm.n, sm.sh.hosts_per_rack,
		 sm.sh.racks_per_switch, (unsigned long long)(duration / 1000),
		 (unsigned long long)sm.start_ms, sc->nev,
		 o->pace ? ", following the wall clock once caught up" : "");
	for (uint64_t t = 1000; !ret && t <= duration && !(o->stop && *o->stop); t += 1000) {
		uint64_t ts = sm.start_ms + t;

		if (o->pace) {
			uint64_t now = time_wall_ns() / NSEC_PER_MSEC;

			if (ts > now)
				usleep((useconds_t)((ts - now) * 1000));
		}
		apply_events(&sm, t - 1000);
		mark_deploys(&sm, t - 1000);
		for (uint32_t i = 0; i < sm.n; i++) {
			struct host *h = &sm.h[i];
			struct snapshot s;

			if (h->c.silent)
				continue;
			if (host_snapshot(&sm, h, ts, t / 1000, &s)) {
				snapshot_free(&s);
				ret = -ENOMEM;
				snprintf(err, errlen, "out of memory");
				break;
			}
			store_put_snapshot(sm.st, &s);
			stats->snapshots++;
			if (rollup_cascade(h->tiers, 2, &s, put_rollup, &sm))
				log_warn("sim: rollups of %s: out of memory", h->name);
			snapshot_free(&s);
			if (o->profiles && ts % PROFILE_EVERY_MS == 0)
				host_profile(&sm, h, ts);
		}
		drain_if_deep(&sm);
		if (time_mono_ns() - last_progress > 10 * NSEC_PER_SEC) {
			progress(&sm, t, t0_ns, 0);
			last_progress = time_mono_ns();
		}
	}
	if (sm.st) {
		struct store_stats ss;

		if (store_flush(sm.st, 300 * NSEC_PER_SEC))
			log_warn("sim: Redis did not take everything within 5 min");
		store_get_stats(sm.st, &ss);
		if (ss.dropped)
			log_warn("sim: %llu entries dropped (Redis too slow?)",
				 (unsigned long long)ss.dropped);
		store_close(sm.st);
	}
	stats->wall_s = (double)(time_mono_ns() - t0_ns) / 1e9;
	if (!ret)
		progress(&sm, duration, t0_ns, 1);
	for (uint32_t i = 0; i < sm.n; i++)
		host_free(&sm.h[i]);
	for (int e = 0; sm.sel && e < sc->nev; e++)
		free(sm.sel[e]);
	free(sm.sel);
	free(sm.nsel);
	free(sm.h);
	return ret;
}
