/*
 * scenario.h - what the fleet simulator injects, and what should page.
 *
 * A scenario file (YAML, scenarios/NAME.yaml) describes a generated fleet and
 * a timeline of conditions injected on chosen parts of it:
 *
 *   scenario: sad-switch
 *   description: one switch corrupts packets; its hosts' errors roll up
 *   fleet: {hosts: 64, hosts_per_rack: 8, racks_per_switch: 2, switches_per_site: 2}
 *   duration: 6m
 *   events:
 *     - name: checksum storm behind sw001
 *       inject: csum_errors         # what (see below)
 *       on: {switch: sw001}         # where: host (glob), rack, switch, site
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
 *                   the function the growth goes to; on: {host: GLOB} only,
 *                   since a deploy marker names its hosts by glob
 *   load_rise       factor: CPU multiplier [1.3] (no deploy, no regression)
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
	char host[256], rack[64], sw[64], site[64];
	double fraction;		/* of the matching hosts, spread evenly */
	/* what */
	double value;			/* rate, factor, value or cpu, by kind */
	char service[128], version[128], function[128];
	struct sim_expect expect[SIM_MAX_EXPECT];
	int nexpect;
	int line;			/* in the scenario file, for messages */
};

struct sim_shape {
	uint32_t hosts, hosts_per_rack, racks_per_switch, switches_per_site;
};

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
