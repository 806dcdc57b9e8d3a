/*
 * catalog.c - the metric table; see catalog.h.  Keep README.md's metric
 * reference in step with this (`faultline metrics` prints it).
 */
#include "model/catalog.h"

#include <string.h>

const struct metric_info catalog[] = {
	/* block: bpf/block.bpf.c via probes/block.c */
	{ "block.ios", SERIES_COUNTER, UNIT_NONE, "device, op",
	  "Block requests completed (op: read, write, flush, discard, other)." },
	{ "block.bytes", SERIES_COUNTER, UNIT_BYTES, "device, op",
	  "Bytes transferred by completed block requests." },
	{ "block.errors", SERIES_COUNTER, UNIT_NONE, "device, op, class",
	  "Block requests completed with an error status, by class: io, timeout, medium, other." },
	{ "block.inflight", SERIES_GAUGE, UNIT_NONE, "device, op",
	  "Requests in flight on the disk (read, write), from the kernel's own counts." },
	{ "block.untimed", SERIES_COUNTER, UNIT_NONE, "device, op",
	  "Completions whose issue time was unknown (issued before the probe started)." },
	{ "block.latency", SERIES_HISTOGRAM, UNIT_NS, "device, op, model",
	  "Device time of block requests, issue to completion." },
	{ "block.queue_latency", SERIES_HISTOGRAM, UNIT_NS, "device, op, model",
	  "Queue time of block requests, allocation to issue (when the kernel records it)." },
	{ "block.size", SERIES_HISTOGRAM, UNIT_BYTES, "device, op",
	  "Size of completed block requests." },
	{ "block.device_overflow", SERIES_COUNTER, UNIT_NONE, "",
	  "Completions not counted because more devices were seen than block.max_devices." },
	/* tcp / udp: /proc/net/snmp via probes/tcp.c */
	{ "tcp.in_segs", SERIES_COUNTER, UNIT_NONE, "", "TCP segments received." },
	{ "tcp.out_segs", SERIES_COUNTER, UNIT_NONE, "", "TCP segments sent." },
	{ "tcp.retrans_segs", SERIES_COUNTER, UNIT_NONE, "", "TCP segments retransmitted." },
	{ "tcp.in_errs", SERIES_COUNTER, UNIT_NONE, "", "TCP segments received in error." },
	{ "tcp.in_csum_errors", SERIES_COUNTER, UNIT_NONE, "",
	  "TCP segments received with a bad checksum (corruption on the path)." },
	{ "tcp.out_rsts", SERIES_COUNTER, UNIT_NONE, "", "TCP resets sent." },
	{ "tcp.attempt_fails", SERIES_COUNTER, UNIT_NONE, "", "TCP connection attempts failed." },
	{ "tcp.estab_resets", SERIES_COUNTER, UNIT_NONE, "", "TCP established connections reset." },
	{ "tcp.curr_estab", SERIES_GAUGE, UNIT_NONE, "", "TCP connections currently established." },
	{ "tcpext.listen_overflows", SERIES_COUNTER, UNIT_NONE, "",
	  "Connections dropped because a listen queue was full." },
	{ "tcpext.listen_drops", SERIES_COUNTER, UNIT_NONE, "", "SYNs to a listener dropped." },
	{ "tcpext.tcp_timeouts", SERIES_COUNTER, UNIT_NONE, "", "TCP retransmission timeouts." },
	{ "tcpext.tcp_syn_retrans", SERIES_COUNTER, UNIT_NONE, "", "SYN and SYN-ACK retransmits." },
	{ "tcpext.tcp_lost_retransmit", SERIES_COUNTER, UNIT_NONE, "",
	  "Retransmitted segments that were lost again." },
	{ "tcpext.tcp_rcv_q_drop", SERIES_COUNTER, UNIT_NONE, "",
	  "Segments dropped because the receive queue was full." },
	{ "tcp.bad_csum", SERIES_COUNTER, UNIT_NONE, "interface, peer",
	  "TCP segments with a bad checksum by receiving interface and source address (BPF on "
	  "tcp:tcp_bad_csum): which peers, hence which switch, the corruption came from." },
	{ "tcp.retransmits", SERIES_COUNTER, UNIT_NONE, "peer",
	  "TCP retransmissions by destination address (BPF on tcp:tcp_retransmit_skb)." },
	{ "tcp.peer_overflow", SERIES_COUNTER, UNIT_NONE, "",
	  "Bad-checksum or retransmit events not attributed because the peer table was full." },
	{ "link.rx_crc_errors", SERIES_COUNTER, UNIT_NONE, "interface",
	  "Frames received with a CRC error (rtnetlink stats64)." },
	{ "link.rx_frame_errors", SERIES_COUNTER, UNIT_NONE, "interface",
	  "Frames received with an alignment/frame error." },
	{ "link.rx_errors", SERIES_COUNTER, UNIT_NONE, "interface", "Receive errors, all kinds." },
	{ "link.rx_dropped", SERIES_COUNTER, UNIT_NONE, "interface",
	  "Received frames dropped by the kernel." },
	{ "link.rx_missed_errors", SERIES_COUNTER, UNIT_NONE, "interface",
	  "Frames the NIC missed (receive ring full)." },
	{ "udp.in_datagrams", SERIES_COUNTER, UNIT_NONE, "", "UDP datagrams received." },
	{ "udp.out_datagrams", SERIES_COUNTER, UNIT_NONE, "", "UDP datagrams sent." },
	{ "udp.in_errors", SERIES_COUNTER, UNIT_NONE, "", "UDP datagrams received in error." },
	{ "udp.in_csum_errors", SERIES_COUNTER, UNIT_NONE, "",
	  "UDP datagrams received with a bad checksum." },
	{ "udp.rcvbuf_errors", SERIES_COUNTER, UNIT_NONE, "",
	  "UDP datagrams dropped for lack of receive buffer." },
	/* cpu: bpf/sched.bpf.c via probes/cpu.c */
	{ "cpu.busy", SERIES_COUNTER, UNIT_NS, "cpu",
	  "Time the CPU ran anything but its idle task, exact (from sched_switch)." },
	{ "cpu.idle", SERIES_COUNTER, UNIT_NS, "cpu",
	  "Time the CPU ran its idle task since the probe started (each interval minus busy)." },
	{ "cpu.utilization", SERIES_GAUGE, UNIT_RATIO, "cpu",
	  "Busy share of the last interval, 0..1; cpu=\"all\" is the host average." },
	{ "cpu.utilization_max", SERIES_GAUGE, UNIT_RATIO, "cpu",
	  "Highest busy share of any 100 ms sub-window of the interval; cpu=\"all\" is the "
	  "highest of any CPU. Bursts survive averaging and rollups (max)." },
	{ "sched.runq_latency", SERIES_HISTOGRAM, UNIT_NS, "",
	  "Run-queue latency: from wakeup or preemption until the task runs." },
	{ "sched.iowait", SERIES_HISTOGRAM, UNIT_NS, "",
	  "I/O wait: from a task sleeping in iowait until it is woken (includes I/O held "
	  "by blk-throttle, which the block tracepoints cannot see)." },
	/* throttle: cgroup files, /proc/pressure, sysfs via probes/throttle.c */
	{ "cgroup.throttled_time", SERIES_COUNTER, UNIT_NS, "cgroup",
	  "Time the cgroup's tasks were held back by their CPU quota (top 10 cgroups by "
	  "throttled time in the interval)." },
	{ "cgroup.nr_throttled", SERIES_COUNTER, UNIT_NONE, "cgroup",
	  "Quota periods in which the cgroup was throttled." },
	{ "cgroup.nr_periods", SERIES_COUNTER, UNIT_NONE, "cgroup",
	  "Quota periods the cgroup had runnable tasks in." },
	{ "cgroup.throttled_count", SERIES_GAUGE, UNIT_NONE, "",
	  "Cgroups throttled during the interval (all of them, not only the top 10)." },
	{ "psi.some", SERIES_COUNTER, UNIT_US, "resource[, cgroup]",
	  "Pressure stall time: some tasks stalled on cpu, io or memory (host, or a v2 cgroup)." },
	{ "psi.full", SERIES_COUNTER, UNIT_US, "resource[, cgroup]",
	  "Pressure stall time: all non-idle tasks stalled on io or memory." },
	{ "cpu.thermal_throttle", SERIES_COUNTER, UNIT_NONE, "cpu",
	  "Thermal throttling events of the core (absent where the hardware does not expose it)." },
	{ "cpu.frequency", SERIES_GAUGE, UNIT_NONE, "cpu",
	  "Current CPU frequency in Hz (absent without cpufreq)." },
	{ "cpu.frequency_ratio", SERIES_GAUGE, UNIT_RATIO, "cpu",
	  "Current over maximum CPU frequency (absent without cpufreq)." },
	{ "probe.feature_present", SERIES_GAUGE, UNIT_NONE, "feature",
	  "1 if the machine exposes the feature (thermal_throttle, cpufreq), 0 if its series are "
	  "absent because it does not." },
	/* drive: SMART via probes/drive.c (every drive.interval) */
	{ "drive.smart_available", SERIES_GAUGE, UNIT_NONE, "device, model",
	  "1 if the drive's SMART data was read, 0 if not (virtual disk, no smartctl, error: "
	  "the reason is in the drive record and the probe log)." },
	{ "drive.wear_used_pct", SERIES_GAUGE, UNIT_NONE, "device, model",
	  "Rated endurance used, percent (NVMe percentage used, ATA wear attributes, SCSI "
	  "endurance indicator); absent for drives without one (HDDs)." },
	{ "drive.spare_pct", SERIES_GAUGE, UNIT_NONE, "device, model", "Available spare, percent." },
	{ "drive.media_errors", SERIES_GAUGE, UNIT_NONE, "device, model",
	  "Uncorrectable media errors (NVMe media errors, ATA reported uncorrectable, SCSI "
	  "uncorrected)." },
	{ "drive.reallocated_sectors", SERIES_GAUGE, UNIT_NONE, "device, model",
	  "Reallocated sectors (SCSI: grown defects)." },
	{ "drive.pending_sectors", SERIES_GAUGE, UNIT_NONE, "device, model",
	  "Sectors waiting to be reallocated." },
	{ "drive.crc_errors", SERIES_GAUGE, UNIT_NONE, "device, model",
	  "Interface CRC errors (cabling, backplane)." },
	{ "drive.temperature_c", SERIES_GAUGE, UNIT_NONE, "device, model", "Drive temperature, C." },
	{ "drive.power_on_hours", SERIES_GAUGE, UNIT_NONE, "device, model", "Power-on hours." },
	{ "drive.smart_passed", SERIES_GAUGE, UNIT_NONE, "device, model",
	  "1 if the drive's overall SMART assessment passed, 0 if it failed." },
	{ "drive.critical_warning", SERIES_GAUGE, UNIT_NONE, "device, model",
	  "NVMe critical warning bits (0 = none; the record names them)." },
	/* profile: bpf/profile.bpf.c via probes/profile.c */
	{ "profile.samples", SERIES_COUNTER, UNIT_NONE, "", "CPU profile samples taken." },
	{ "profile.dropped", SERIES_COUNTER, UNIT_NONE, "",
	  "Profile samples lost because the kernel-side tables were full." },
	{ "profile.rate_hz", SERIES_GAUGE, UNIT_NONE, "",
	  "Current sampling rate per CPU (higher during a requested burst)." },
	{ "profile.unresolved_frames_ratio", SERIES_GAUGE, UNIT_RATIO, "",
	  "Share of frames in the last window that kept module+offset (no symbol)." },
	{ "profile.truncated_user_stacks_ratio", SERIES_GAUGE, UNIT_RATIO, "",
	  "Share of user stacks in the last window that did not reach a program or thread "
	  "entry point (missing frame pointers)." },
	/* the probe itself */
	{ "probe.collect_duration", SERIES_GAUGE, UNIT_NS, "",
	  "Time the probe spent collecting the last snapshot." },
	{ "probe.store_written", SERIES_COUNTER, UNIT_NONE, "",
	  "Snapshots acknowledged by Redis." },
	{ "probe.store_dropped", SERIES_COUNTER, UNIT_NONE, "",
	  "Snapshots dropped because the spool was full during a Redis outage." },
	{ "probe.store_errors", SERIES_COUNTER, UNIT_NONE, "",
	  "Snapshots Redis refused (logged with the reason)." },
	{ "probe.store_spooled", SERIES_GAUGE, UNIT_NONE, "",
	  "Snapshots waiting to be written to Redis." },
	{ "probe.store_connected", SERIES_GAUGE, UNIT_NONE, "",
	  "1 while the probe has a working Redis connection." },
	{ NULL, 0, 0, NULL, NULL },
};

const struct metric_info *catalog_find(const char *name)
{
	for (const struct metric_info *m = catalog; m->name; m++)
		if (strcmp(m->name, name) == 0)
			return m;
	return NULL;
}
