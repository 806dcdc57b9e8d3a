/*
 * catalog.c - the metric table; see catalog.h.  docs/metrics.md is what
 * `faultline metrics --markdown` prints from it (a test keeps them equal).
 */
#include "model/catalog.h"

#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

const struct metric_info catalog[] = {
	/* block: bpf/block.bpf.c via probes/block.c */
	{ "faultline_block_ios_total", "block.ios", SERIES_COUNTER, UNIT_NONE, 1, "device, op",
	  "Block requests completed (op: read, write, flush, discard, other)." },
	{ "faultline_block_bytes_total", "block.bytes", SERIES_COUNTER, UNIT_BYTES, 1, "device, op",
	  "Bytes transferred by completed block requests." },
	{ "faultline_block_errors_total", "block.errors", SERIES_COUNTER, UNIT_NONE, 1, "device, op, class",
	  "Block requests completed with an error status, by class: io, timeout, medium, other." },
	{ "faultline_block_inflight", "block.inflight", SERIES_GAUGE, UNIT_NONE, 1, "device, op",
	  "Requests in flight on the disk (read, write), from the kernel's own counts." },
	{ "faultline_block_untimed_total", "block.untimed", SERIES_COUNTER, UNIT_NONE, 1, "device, op",
	  "Completions whose issue time was unknown (issued before the probe started)." },
	{ "faultline_block_latency_seconds", "block.latency", SERIES_HISTOGRAM, UNIT_SECONDS, 1e-9, "device, op, model",
	  "Device time of block requests, issue to completion." },
	{ "faultline_block_queue_latency_seconds", "block.queue_latency", SERIES_HISTOGRAM, UNIT_SECONDS, 1e-9, "device, op, model",
	  "Queue time of block requests, allocation to issue (when the kernel records it)." },
	{ "faultline_block_size_bytes", "block.size", SERIES_HISTOGRAM, UNIT_BYTES, 1, "device, op",
	  "Size of completed block requests." },
	{ "faultline_block_device_overflow_total", "block.device_overflow", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "Completions not counted because more devices were seen than block.max_devices." },
	/* tcp / udp: /proc/net/snmp via probes/tcp.c */
	{ "faultline_tcp_in_segs_total", "tcp.in_segs", SERIES_COUNTER, UNIT_NONE, 1, "", "TCP segments received." },
	{ "faultline_tcp_out_segs_total", "tcp.out_segs", SERIES_COUNTER, UNIT_NONE, 1, "", "TCP segments sent." },
	{ "faultline_tcp_retrans_segs_total", "tcp.retrans_segs", SERIES_COUNTER, UNIT_NONE, 1, "", "TCP segments retransmitted." },
	{ "faultline_tcp_in_errs_total", "tcp.in_errs", SERIES_COUNTER, UNIT_NONE, 1, "", "TCP segments received in error." },
	{ "faultline_tcp_in_csum_errors_total", "tcp.in_csum_errors", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "TCP segments received with a bad checksum (corruption on the path)." },
	{ "faultline_tcp_out_rsts_total", "tcp.out_rsts", SERIES_COUNTER, UNIT_NONE, 1, "", "TCP resets sent." },
	{ "faultline_tcp_attempt_fails_total", "tcp.attempt_fails", SERIES_COUNTER, UNIT_NONE, 1, "", "TCP connection attempts failed." },
	{ "faultline_tcp_estab_resets_total", "tcp.estab_resets", SERIES_COUNTER, UNIT_NONE, 1, "", "TCP established connections reset." },
	{ "faultline_tcp_curr_estab", "tcp.curr_estab", SERIES_GAUGE, UNIT_NONE, 1, "", "TCP connections currently established." },
	{ "faultline_tcpext_listen_overflows_total", "tcpext.listen_overflows", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "Connections dropped because a listen queue was full." },
	{ "faultline_tcpext_listen_drops_total", "tcpext.listen_drops", SERIES_COUNTER, UNIT_NONE, 1, "", "SYNs to a listener dropped." },
	{ "faultline_tcpext_tcp_timeouts_total", "tcpext.tcp_timeouts", SERIES_COUNTER, UNIT_NONE, 1, "", "TCP retransmission timeouts." },
	{ "faultline_tcpext_tcp_syn_retrans_total", "tcpext.tcp_syn_retrans", SERIES_COUNTER, UNIT_NONE, 1, "", "SYN and SYN-ACK retransmits." },
	{ "faultline_tcpext_tcp_lost_retransmit_total", "tcpext.tcp_lost_retransmit", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "Retransmitted segments that were lost again." },
	{ "faultline_tcpext_tcp_rcv_q_drop_total", "tcpext.tcp_rcv_q_drop", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "Segments dropped because the receive queue was full." },
	{ "faultline_tcp_bad_csum_total", "tcp.bad_csum", SERIES_COUNTER, UNIT_NONE, 1, "interface, peer",
	  "TCP segments with a bad checksum by receiving interface and source address (BPF on "
	  "tcp:tcp_bad_csum): which peers, hence which switch, the corruption came from." },
	{ "faultline_tcp_retransmits_total", "tcp.retransmits", SERIES_COUNTER, UNIT_NONE, 1, "peer",
	  "TCP retransmissions by destination address (BPF on tcp:tcp_retransmit_skb)." },
	{ "faultline_tcp_peer_overflow_total", "tcp.peer_overflow", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "Bad-checksum or retransmit events not attributed because the peer table was full." },
	{ "faultline_link_rx_crc_errors_total", "link.rx_crc_errors", SERIES_COUNTER, UNIT_NONE, 1, "interface",
	  "Frames received with a CRC error (rtnetlink stats64)." },
	{ "faultline_link_rx_frame_errors_total", "link.rx_frame_errors", SERIES_COUNTER, UNIT_NONE, 1, "interface",
	  "Frames received with an alignment/frame error." },
	{ "faultline_link_rx_errors_total", "link.rx_errors", SERIES_COUNTER, UNIT_NONE, 1, "interface", "Receive errors, all kinds." },
	{ "faultline_link_rx_dropped_total", "link.rx_dropped", SERIES_COUNTER, UNIT_NONE, 1, "interface",
	  "Received frames dropped by the kernel." },
	{ "faultline_link_rx_missed_errors_total", "link.rx_missed_errors", SERIES_COUNTER, UNIT_NONE, 1, "interface",
	  "Frames the NIC missed (receive ring full)." },
	{ "faultline_udp_in_datagrams_total", "udp.in_datagrams", SERIES_COUNTER, UNIT_NONE, 1, "", "UDP datagrams received." },
	{ "faultline_udp_out_datagrams_total", "udp.out_datagrams", SERIES_COUNTER, UNIT_NONE, 1, "", "UDP datagrams sent." },
	{ "faultline_udp_in_errors_total", "udp.in_errors", SERIES_COUNTER, UNIT_NONE, 1, "", "UDP datagrams received in error." },
	{ "faultline_udp_in_csum_errors_total", "udp.in_csum_errors", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "UDP datagrams received with a bad checksum." },
	{ "faultline_udp_rcvbuf_errors_total", "udp.rcvbuf_errors", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "UDP datagrams dropped for lack of receive buffer." },
	/* cpu: bpf/sched.bpf.c via probes/cpu.c */
	{ "faultline_cpu_busy_seconds_total", "cpu.busy", SERIES_COUNTER, UNIT_SECONDS, 1e-9, "cpu",
	  "Time the CPU ran anything but its idle task, exact (from sched_switch)." },
	{ "faultline_cpu_idle_seconds_total", "cpu.idle", SERIES_COUNTER, UNIT_SECONDS, 1e-9, "cpu",
	  "Time the CPU ran its idle task since the probe started (each interval minus busy)." },
	{ "faultline_cpu_utilization_ratio", "cpu.utilization", SERIES_GAUGE, UNIT_RATIO, 1, "cpu",
	  "Busy share of the last interval, 0..1." },
	{ "faultline_cpu_utilization_max_ratio", "cpu.utilization_max", SERIES_GAUGE, UNIT_RATIO, 1,
	  "cpu", "Highest busy share of any 100 ms sub-window of the interval. Bursts survive "
	  "averaging and rollups (max)." },
	{ "faultline_host_cpu_utilization_ratio", "cpu.host_utilization", SERIES_GAUGE, UNIT_RATIO, 1,
	  "", "Busy share of all the host's CPUs over the last interval (their average; a series "
	  "of its own, so a sum over the per-CPU series counts nothing twice)." },
	{ "faultline_host_cpu_utilization_max_ratio", "cpu.host_utilization_max", SERIES_GAUGE,
	  UNIT_RATIO, 1, "", "Highest 100 ms busy share of any of the host's CPUs in the "
	  "interval." },
	{ "faultline_sched_runq_latency_seconds", "sched.runq_latency", SERIES_HISTOGRAM, UNIT_SECONDS, 1e-9, "",
	  "Run-queue latency: from wakeup or preemption until the task runs." },
	{ "faultline_sched_iowait_seconds", "sched.iowait", SERIES_HISTOGRAM, UNIT_SECONDS, 1e-9, "",
	  "I/O wait: from a task sleeping in iowait until it is woken (includes I/O held "
	  "by blk-throttle, which the block tracepoints cannot see)." },
	/* throttle: cgroup files, /proc/pressure, sysfs via probes/throttle.c */
	{ "faultline_cgroup_throttled_seconds_total", "cgroup.throttled_time", SERIES_COUNTER, UNIT_SECONDS, 1e-9, "cgroup",
	  "Time the cgroup's tasks were held back by their CPU quota (top 10 cgroups by "
	  "throttled time in the interval)." },
	{ "faultline_cgroup_throttled_periods_total", "cgroup.nr_throttled", SERIES_COUNTER, UNIT_NONE, 1, "cgroup",
	  "Quota periods in which the cgroup was throttled." },
	{ "faultline_cgroup_periods_total", "cgroup.nr_periods", SERIES_COUNTER, UNIT_NONE, 1, "cgroup",
	  "Quota periods the cgroup had runnable tasks in." },
	{ "faultline_cgroup_throttled_cgroups", "cgroup.throttled_count", SERIES_GAUGE, UNIT_NONE, 1, "",
	  "Cgroups throttled during the interval (all of them, not only the top 10)." },
	{ "faultline_psi_some_seconds_total", "psi.some", SERIES_COUNTER, UNIT_SECONDS, 1e-6, "resource[, cgroup]",
	  "Pressure stall time: some tasks stalled on cpu, io or memory (host, or a v2 cgroup)." },
	{ "faultline_psi_full_seconds_total", "psi.full", SERIES_COUNTER, UNIT_SECONDS, 1e-6, "resource[, cgroup]",
	  "Pressure stall time: all non-idle tasks stalled on io or memory." },
	{ "faultline_cpu_thermal_throttles_total", "cpu.thermal_throttle", SERIES_COUNTER, UNIT_NONE, 1, "cpu",
	  "Thermal throttling events of the core (absent where the hardware does not expose it)." },
	{ "faultline_cpu_frequency_hertz", "cpu.frequency", SERIES_GAUGE, UNIT_HERTZ, 1, "cpu",
	  "Current CPU frequency (absent without cpufreq)." },
	{ "faultline_cpu_frequency_ratio", "cpu.frequency_ratio", SERIES_GAUGE, UNIT_RATIO, 1, "cpu",
	  "Current over maximum CPU frequency (absent without cpufreq)." },
	{ "faultline_probe_feature_present", "probe.feature_present", SERIES_GAUGE, UNIT_NONE, 1, "feature",
	  "1 if the machine exposes the feature (thermal_throttle, cpufreq), 0 if its series are "
	  "absent because it does not." },
	/* drive: SMART via probes/drive.c (every drive.interval) */
	{ "faultline_drive_smart_available", "drive.smart_available", SERIES_GAUGE, UNIT_NONE, 1, "device, model",
	  "1 if the drive's SMART data was read, 0 if not (virtual disk, no smartctl, error: "
	  "the reason is in the drive record and the probe log)." },
	{ "faultline_drive_wear_used_ratio", "drive.wear_used_pct", SERIES_GAUGE, UNIT_RATIO, 0.01, "device, model",
	  "Rated endurance used, 0..1 (NVMe percentage used, ATA wear attributes, SCSI "
	  "endurance indicator); absent for drives without one (HDDs)." },
	{ "faultline_drive_spare_ratio", "drive.spare_pct", SERIES_GAUGE, UNIT_RATIO, 0.01, "device, model", "Available spare, 0..1." },
	{ "faultline_drive_media_errors", "drive.media_errors", SERIES_GAUGE, UNIT_NONE, 1, "device, model",
	  "Uncorrectable media errors (NVMe media errors, ATA reported uncorrectable, SCSI "
	  "uncorrected)." },
	{ "faultline_drive_reallocated_sectors", "drive.reallocated_sectors", SERIES_GAUGE, UNIT_NONE, 1, "device, model",
	  "Reallocated sectors (SCSI: grown defects)." },
	{ "faultline_drive_pending_sectors", "drive.pending_sectors", SERIES_GAUGE, UNIT_NONE, 1, "device, model",
	  "Sectors waiting to be reallocated." },
	{ "faultline_drive_crc_errors", "drive.crc_errors", SERIES_GAUGE, UNIT_NONE, 1, "device, model",
	  "Interface CRC errors (cabling, backplane)." },
	{ "faultline_drive_temperature_celsius", "drive.temperature_c", SERIES_GAUGE, UNIT_CELSIUS, 1, "device, model", "Drive temperature." },
	{ "faultline_drive_power_on_seconds", "drive.power_on_hours", SERIES_GAUGE, UNIT_SECONDS, 3600, "device, model", "Time the drive has been powered on (SMART power-on hours)." },
	{ "faultline_drive_smart_passed", "drive.smart_passed", SERIES_GAUGE, UNIT_NONE, 1, "device, model",
	  "1 if the drive's overall SMART assessment passed, 0 if it failed." },
	{ "faultline_drive_critical_warning", "drive.critical_warning", SERIES_GAUGE, UNIT_NONE, 1, "device, model",
	  "NVMe critical warning bits (0 = none; the record names them)." },
	/* profile: bpf/profile.bpf.c via probes/profile.c */
	{ "faultline_profile_samples_total", "profile.samples", SERIES_COUNTER, UNIT_NONE, 1, "", "CPU profile samples taken." },
	{ "faultline_profile_dropped_total", "profile.dropped", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "Profile samples lost because the kernel-side tables were full." },
	{ "faultline_profile_rate_hertz", "profile.rate_hz", SERIES_GAUGE, UNIT_HERTZ, 1, "",
	  "Current sampling rate per CPU (higher during a requested burst)." },
	{ "faultline_profile_unwind_rows", "profile.unwind_rows", SERIES_GAUGE, UNIT_NONE, 1, "",
	  "DWARF unwind rows loaded for the BPF stack walker, of profile.unwind_rows (16 bytes each, kernel memory)." },
	{ "faultline_profile_unwind_files", "profile.unwind_files", SERIES_GAUGE, UNIT_NONE, 1, "",
	  "Executable files whose unwind rows are loaded." },
	{ "faultline_profile_symbol_bytes", "profile.symbol_bytes", SERIES_GAUGE, UNIT_BYTES, 1, "",
	  "Bytes of function names (ELF symbols) held for the binaries sampled, of profile.symbol_bytes." },
	{ "faultline_profile_symbol_files", "profile.symbol_files", SERIES_GAUGE, UNIT_NONE, 1, "",
	  "Binaries whose function names are held." },
	{ "faultline_profile_symbol_reads_total", "profile.symbol_reads", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "Times a binary's symbol table was read; rising steadily, the hot binaries do not fit profile.symbol_bytes." },
	{ "faultline_profile_unresolved_frames_ratio", "profile.unresolved_frames_ratio", SERIES_GAUGE, UNIT_RATIO, 1, "",
	  "Share of frames in the last window that kept module+offset (no symbol)." },
	{ "faultline_profile_truncated_user_stacks_ratio", "profile.truncated_user_stacks_ratio", SERIES_GAUGE, UNIT_RATIO, 1, "",
	  "Share of user stacks in the last window that did not reach a program or thread "
	  "entry point (no call frame information and no frame pointers, JIT code, a full "
	  "unwind table)." },
	/* the probe itself */
	{ "faultline_probe_collect_duration_seconds", "probe.collect_duration", SERIES_GAUGE, UNIT_SECONDS, 1e-9, "",
	  "Time the probe spent collecting the last snapshot." },
	{ "faultline_probe_early_flushes_total", "probe.early_flushes", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "Snapshots taken between ticks because a counter a page hangs on moved after a quiet interval; each wakes the rules at once." },
	{ "faultline_probe_store_written_total", "probe.store_written", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "Snapshots acknowledged by Redis." },
	{ "faultline_probe_store_dropped_total", "probe.store_dropped", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "Snapshots dropped because the spool was full during a Redis outage." },
	{ "faultline_probe_store_errors_total", "probe.store_errors", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "Snapshots Redis refused (logged with the reason)." },
	{ "faultline_probe_store_spooled", "probe.store_spooled", SERIES_GAUGE, UNIT_NONE, 1, "",
	  "Snapshots waiting to be written to Redis." },
	{ "faultline_probe_store_connected", "probe.store_connected", SERIES_GAUGE, UNIT_NONE, 1, "",
	  "1 while the probe has a working Redis connection." },
	{ "faultline_probe_remote_write_samples_total", "probe.remote_write_samples", SERIES_COUNTER, UNIT_NONE, 1, "outcome",
	  "Samples offered to remote write, by outcome: sent (the receiver took them), failed "
	  "(refused with a 4xx, logged) or dropped (the queue was full, or the probe exited)." },
	{ "faultline_probe_remote_write_retries_total", "probe.remote_write_retries", SERIES_COUNTER, UNIT_NONE, 1, "",
	  "Remote write requests sent again after a 5xx, a 429 or no answer." },
	{ "faultline_probe_remote_write_pending_samples", "probe.remote_write_pending", SERIES_GAUGE, UNIT_NONE, 1, "",
	  "Samples waiting for the remote write receiver." },
	{ "faultline_probe_remote_write_last_sent_timestamp_seconds", "probe.remote_write_last_sent", SERIES_GAUGE, UNIT_SECONDS, 1e-3, "",
	  "When the receiver last took a request (Unix time; 0: never)." },
	{ NULL, NULL, 0, 0, 0, NULL, NULL },
};

/*
 * The catalog by name and by wire name, sorted once, for binary search:
 * the probe looks every series up each second when it renders /metrics.
 */
static const struct metric_info **by_name, **by_wire;
static size_t ncatalog;
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static int cmp_name(const void *a, const void *b)
{
	return strcmp((*(const struct metric_info *const *)a)->name,
		      (*(const struct metric_info *const *)b)->name);
}

static int cmp_wire(const void *a, const void *b)
{
	return strcmp((*(const struct metric_info *const *)a)->wire,
		      (*(const struct metric_info *const *)b)->wire);
}

static void index_build(void)
{
	for (ncatalog = 0; catalog[ncatalog].name; ncatalog++)
		;
	by_name = malloc((ncatalog + 1) * sizeof(*by_name));
	by_wire = malloc((ncatalog + 1) * sizeof(*by_wire));
	if (!by_name || !by_wire) {
		free(by_name);
		free(by_wire);
		by_name = by_wire = NULL;
		return;		/* lookups fall back to a linear search */
	}
	for (size_t i = 0; i < ncatalog; i++)
		by_name[i] = by_wire[i] = &catalog[i];
	qsort(by_name, ncatalog, sizeof(*by_name), cmp_name);
	qsort(by_wire, ncatalog, sizeof(*by_wire), cmp_wire);
}

static const struct metric_info *lookup(const char *key, int wire)
{
	struct metric_info like = { .name = key, .wire = key };
	const struct metric_info *lp = &like, **hit;

	pthread_once(&index_once, index_build);
	if (!by_name) {
		for (const struct metric_info *m = catalog; m->name; m++)
			if (!strcmp(wire ? m->wire : m->name, key))
				return m;
		return NULL;
	}
	hit = bsearch(&lp, wire ? by_wire : by_name, ncatalog, sizeof(*hit),
		      wire ? cmp_wire : cmp_name);
	return hit ? *hit : NULL;
}

const struct metric_info *catalog_find(const char *name)
{
	return lookup(name, 0);
}

const struct metric_info *catalog_find_wire(const char *wire)
{
	return lookup(wire, 1);
}

static const double seconds_bounds[25] = {
	1e-06, 2e-06, 4e-06, 8e-06, 1.6e-05, 3.2e-05, 6.4e-05, 0.000128, 0.000256, 0.000512,
	0.001024, 0.002048, 0.004096, 0.008192, 0.016384, 0.032768, 0.065536, 0.131072,
	0.262144, 0.524288, 1.048576, 2.097152, 4.194304, 8.388608, 16.777216
};
static const char *const seconds_le[25] = {
	"1e-06", "2e-06", "4e-06", "8e-06", "1.6e-05", "3.2e-05", "6.4e-05", "0.000128",
	"0.000256", "0.000512", "0.001024", "0.002048", "0.004096", "0.008192", "0.016384",
	"0.032768", "0.065536", "0.131072", "0.262144", "0.524288", "1.048576", "2.097152",
	"4.194304", "8.388608", "16.777216"
};
static const double bytes_bounds[15] = {
	512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576,
	2097152, 4194304, 8388608
};
static const char *const bytes_le[15] = {
	"512", "1024", "2048", "4096", "8192", "16384", "32768", "65536", "131072", "262144",
	"524288", "1048576", "2097152", "4194304", "8388608"
};

int catalog_hist_bounds(const struct metric_info *m, const double **bound,
			const char *const **le)
{
	if (m && m->unit == UNIT_BYTES) {
		*bound = bytes_bounds;
		if (le)
			*le = bytes_le;
		return 15;
	}
	*bound = seconds_bounds;
	if (le)
		*le = seconds_le;
	return 25;
}

const struct metric_info *catalog_find_hist_part(const char *name, int *part)
{
	static const char *const suffix[] = { "_bucket", "_sum", "_count" };
	size_t len = strlen(name);

	for (int i = 0; i < 3; i++) {
		size_t sl = strlen(suffix[i]);
		char base[128];
		const struct metric_info *m;

		if (len <= sl || len - sl >= sizeof(base) || strcmp(name + len - sl, suffix[i]))
			continue;
		memcpy(base, name, len - sl);
		base[len - sl] = '\0';
		m = catalog_find(base);
		if (m && m->kind == SERIES_HISTOGRAM) {
			*part = i + 1;
			return m;
		}
	}
	return NULL;
}


const char *catalog_unit_name(enum metric_unit unit)
{
	static const char *const names[] = {
		[UNIT_NONE] = "", [UNIT_SECONDS] = "seconds", [UNIT_BYTES] = "bytes",
		[UNIT_RATIO] = "ratio 0..1", [UNIT_CELSIUS] = "celsius", [UNIT_HERTZ] = "hertz",
	};
	return names[unit];
}

char *catalog_unknown(const char *name, char *buf, size_t len)
{
	const struct metric_info *m = catalog_find_wire(name);

	if (!m)
		snprintf(buf, len, "unknown metric '%s' (`faultline metrics` lists them)", name);
	else if (m->scale != 1)
		snprintf(buf, len, "'%s' is now %s, in %s (the old name counted %s)", name, m->name,
			 catalog_unit_name(m->unit), m->scale == 1e-9 ? "nanoseconds" :
			 m->scale == 1e-6 ? "microseconds" : m->scale == 0.01 ? "percent" :
			 m->scale == 3600 ? "hours" : "another unit");
	else
		snprintf(buf, len, "'%s' is now %s", name, m->name);
	return buf;
}
