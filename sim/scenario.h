/*
 * scenario.h - what the fleet simulator injects, and what should page.
 *
 * A scenario file (YAML, scenarios/NAME.yaml) describes a generated fleet and
 * a timeline of conditions injected on chosen parts of it:
 *
 *   scenario: sad-switch
 *   description: one switch corrupts packets; its hosts' errors roll up
 *   fleet: {hosts: 64, hosts_per_rack: 8, racks_per_switch: 2, switches_per_site: 2}
 *   # optional: rack_sizes: [8, 4, 12] (racks cycle through these sizes,
 *   # instead of hosts_per_rack); switches_per_agg: 4 (an aggregation
 *   # layer: label agg over every 4 switches, which are then ToRs when
 *   # racks_per_switch is 1; switches_per_site must be a multiple)
 *   duration: 6m
 *   events:
 *     - name: checksum storm behind sw001
 *       inject: csum_errors         # what (see below)
 *       on: {switch: sw001}         # where: host (glob), rack, switch, agg, site
 *       fraction: 0.75              # of the hosts selected (default all)
 *       at: 1m                      # from the scenario's start
 *       for: 2m                     # how long (default: to the end)
 *       rate: 20                    # the condition's own parameters
 *       expect:                     # the pages it should cause
 *         - {alertname: TcpChecksumErrors, switch: sw001}
 *
 * Kinds and their parameters (defaults in brackets):
 *
 *   csum_errors     rate: bad segments/s per host [20]
 *   write_latency   factor: write latency multiplier [40]
 *   drive_wear      value: wear used % [95]
 *   drive_failing   value: pending sectors [8] (and SMART says failed)
 *   throttle        value: fraction of each second throttled [0.5]
 *   cpu_bursts      value: seconds of each minute one core is saturated [10]
 *   cpu_saturation  value: CPU utilisation [0.98]
 *   deploy          service, version [sim-1], cpu: CPU growth [0], function:
 *                   where the growth goes: a leaf of the simulated profile
 *                   (json_parse, send, render_template, mark, tcp_sendmsg)
 *                   or a new function with its callers, root first
 *                   ("main;serve;handle_request;gzip_body"); anything else
 *                   is refused; on: {host: GLOB} only, since a deploy marker
 *                   names its hosts by glob
 *   rollback        service, version [rollback]: a rollback mark; the
 *                   service's deploys before it stop regressing
 *   load_rise       factor: CPU multiplier [1.3] (no deploy, no regression)
 *   load_ramp       factor: the multiplier grows linearly from 1 at `at` to
 *                   factor at the event's end [2]
 *   base_load       value: the hosts' own CPU level instead of their
 *                   generated 25-45 % [0.6]
 *   silence         (the hosts stop reporting)
 *
 * An `expect` entry is an alertname plus labels a delivered notification
 * must carry, and names the page's domain: the labels must include the
 * alert's domain (host, rack, switch, site or service), so a host page
 * never satisfies a switch expectation.  `resolves: false` says the page
 * stays firing at least until its event ends (e.g. a deploy's: to the
 * scenario's end); otherwise it must resolve after its fault ends.  Optional
 * bounds:
 *
 *   within: 2m                        pages at most 2m after the event starts
 *   evidence: {function: json_parse}  its CPU evidence names the function
 *   evidence: {peer: "10.2.*"}        a checksum peer it names (glob)
 *   evidence: {device: sda}           its drive evidence is that drive's
 *   wear: {row: 1, verdict: failing}  the host's row in `faultline report wear`
 *
 * An event without `expect` must page nothing.  Every error names the file,
 * line and column.
 */
#ifndef FL_SCENARIO_H
#define FL_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

enum sim_kind {
	SIM_CSUM_ERRORS,
	SIM_WRITE_LATENCY,
	SIM_DRIVE_WEAR,
	SIM_DRIVE_FAILING,
	SIM_THROTTLE,
	SIM_CPU_BURSTS,
	SIM_CPU_SATURATION,
	SIM_DEPLOY,
	SIM_LOAD_RISE,
	SIM_SILENCE,
	SIM_ROLLBACK,
	SIM_LOAD_RAMP,
	SIM_BASE_LOAD,
	SIM_KINDS,
};

extern const char *const sim_kind_names[SIM_KINDS];

#define SIM_MAX_EXPECT 8
#define SIM_MAX_EXPECT_LABELS 6

struct sim_expect {
	char alertname[128];
	char key[SIM_MAX_EXPECT_LABELS][64];
	char value[SIM_MAX_EXPECT_LABELS][256];
	int nlabels;
	int resolves;			/* a resolved notification must follow */
	uint64_t within_ms;		/* 0, or: pages at most this long after the start */
	/* evidence the page must carry (empty: not checked) */
	char ev_function[128];		/* a function in its top stacks or grown ones */
	char ev_peer[64];		/* glob: a checksum peer */
	char ev_device[64];		/* its drive record's device */
	uint32_t wear_row;		/* 0, or: the host's row in `faultline report wear` */
	char wear_verdict[16];		/* and that row's verdict */
};

struct sim_event {
	char name[160];
	enum sim_kind kind;
	uint64_t at_ms, for_ms;		/* for_ms 0: until the scenario ends */
	/* where: every given field must match (globs) */
	char host[256], rack[64], sw[64], agg[64], site[64];
	double fraction;		/* of the matching hosts, spread evenly */
	/* what */
	double value;			/* rate, factor, value or cpu, by kind */
	char service[128], version[128];
	char function[256];		/* a leaf, or a new stack "main;...;f" */
	struct sim_expect expect[SIM_MAX_EXPECT];
	int nexpect;
	int line;			/* in the scenario file, for messages */
};

#define SIM_MAX_RACK_SIZES 16

struct sim_shape {
	uint32_t hosts, hosts_per_rack, racks_per_switch, switches_per_site;
	uint32_t switches_per_agg;	/* 0: no aggregation layer */
	uint32_t rack_sizes[SIM_MAX_RACK_SIZES];	/* cycled; none: hosts_per_rack */
	int nrack_sizes;
};

/* The simulated application's CPU profile: stacks, root first, and their shares. */
#define SIM_MAX_FRAMES 8
struct sim_stack {
	const char *frames[SIM_MAX_FRAMES];
	double share;
};
extern const struct sim_stack sim_stacks[];
extern const size_t sim_nstacks;

struct scenario {
	char name[128];
	char description[512];
	struct sim_shape fleet;
	uint64_t duration_ms;
	struct sim_event *ev;
	int nev;
};

/*
 * Parse scenario text (name is used in messages).  Returns 0, or -EINVAL
 * with "name:line:col: reason" in err.  Free with scenario_free().
 */
int scenario_parse(struct scenario *sc, const char *name, const char *text, size_t len,
		   char *err, size_t errlen);

/* Read and parse a file; -errno if it cannot be read. */
int scenario_load(struct scenario *sc, const char *path, char *err, size_t errlen);

void scenario_free(struct scenario *sc);

#endif
