#!/usr/bin/env python3
"""probe_overhead.py OUT [--seconds N] [--runs N] - what the probe costs, side by
side with its peers, on the same block I/O load in the same run.

Load: fio 4 KiB random O_DIRECT writes (libaio, iodepth 16) on a loop device
this script creates.  Watched at the same time by

  * faultline-probe at its defaults (1 s snapshots to its own redis-server),
  * biolatency from Debian's libbpf-tools (the same question: block latency
    histograms from BPF),
  * prometheus-node-exporter, scraped once a second like a 1 s Prometheus.

Measured with kernel.bpf_stats_enabled=1 (per-program run time and count)
and /proc/PID/task/*/schedstat (CPU time of each process, ns).  Prints, per run and
as the median of the runs:

  * BPF ns per completed I/O, faultline vs biolatency, and the ratio
  * BPF ns per completed I/O of the I/O stacks (profile.io_interval: who
    submits, where it waits), beside the block path's
  * process CPU per second, faultline-probe vs node_exporter, and the ratio
  * faultline's total (process + BPF) as a share of the host's CPU
  * resident memory, faultline-probe vs node_exporter

Ratios, not absolute times, are the result: the machine is shared and noisy.
Everything the script starts or creates is removed at exit.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

NCPU = os.cpu_count()


def cpu_seconds(pid):
    """CPU time of all of pid's threads, in ns resolution (schedstat)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total / 1e9


def progs():
    """{prog id: (run_time_ns, run_cnt)} of every loaded BPF program."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True,
                         text=True, check=True).stdout
    return {p["id"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0), p.get("name", ""))
            for p in json.loads(out)}


def start_and_claim(argv, ready, **kw):
    """Start argv and return (process, ids of the BPF programs it loaded).

    bpftool does not always know which process holds a program, so the
    programs that appear between start and ready are the ones it loaded."""
    before = set(progs())
    p = subprocess.Popen(argv, **kw)
    ready()
    time.sleep(1)
    return p, set(progs()) - before


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def wait_port(port, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1).read()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"nothing answered on 127.0.0.1:{port}")


def one_run(out, seconds, tmp, loopdev, redis_sock):
    procs = []
    try:
        probe, fl_ids = start_and_claim(
            [f"{out}/faultline-probe", "--redis", f"unix://{redis_sock}", "--host", "bench",
             "--metrics-addr", "127.0.0.1:19464", "--log-level", "warn"],
            lambda: wait_port(19464))
        procs.append(probe)
        bio, bio_ids = start_and_claim(["biolatency"], lambda: time.sleep(1),
                                       stdout=subprocess.DEVNULL)
        procs.append(bio)
        nodex = subprocess.Popen(["prometheus-node-exporter",
                                  "--web.listen-address=127.0.0.1:19100"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(nodex)
        wait_port(19100)
        if not fl_ids or not bio_ids:
            raise SystemExit("probe_overhead: could not find the BPF programs of faultline-probe "
                             f"({len(fl_ids)}) or biolatency ({len(bio_ids)})")

        s0 = progs()
        c0 = {p.pid: cpu_seconds(p.pid) for p in (probe, nodex)}
        t0 = time.time()
        fio = subprocess.Popen(["fio", "--name=bench", f"--filename={loopdev}", "--rw=randwrite",
                                "--bs=4k", "--direct=1", "--ioengine=libaio", "--iodepth=16",
                                "--time_based", f"--runtime={seconds}", "--output-format=json"],
                               stdout=subprocess.PIPE, text=True)
        scrapes = 0
        while fio.poll() is None:
            urllib.request.urlopen("http://127.0.0.1:19100/metrics", timeout=5).read()
            scrapes += 1
            time.sleep(max(0, t0 + scrapes - time.time()))
        elapsed = time.time() - t0
        ios = json.loads(fio.stdout.read())["jobs"][0]["write"]["total_ios"]
        s1 = progs()
        c1 = {p.pid: cpu_seconds(p.pid) for p in (probe, nodex)}
        rss = {p.pid: rss_kib(p.pid) for p in (probe, nodex)}

        def bpf(ids):
            t = sum(s1.get(i, (0, 0))[0] - s0.get(i, (0, 0))[0] for i in ids)
            c = sum(s1.get(i, (0, 0))[1] - s0.get(i, (0, 0))[1] for i in ids)
            return t, c

        fl_block = {i for i in fl_ids if s1.get(i, (0, 0, ""))[2].startswith("block_rq")}
        fl_io = {i for i in fl_ids if s1.get(i, (0, 0, ""))[2].startswith("profile_io")}
        fl_all_ns, _ = bpf(fl_ids)
        io_ns, _ = bpf(fl_io)
        fl_ns, fl_cnt = bpf(fl_block)
        bio_ns, bio_cnt = bpf(bio_ids)
        probe_cpu = (c1[probe.pid] - c0[probe.pid]) / elapsed
        nodex_cpu = (c1[nodex.pid] - c0[nodex.pid]) / elapsed
        return {
            "ios": ios,
            "fl_ns_per_io": fl_ns / ios,
            "bio_ns_per_io": bio_ns / ios,
            "fl_progs_per_io": fl_cnt / ios,
            "io_stacks_ns_per_io": io_ns / ios,
            "bio_progs_per_io": bio_cnt / ios,
            "probe_cpu": probe_cpu,
            "nodex_cpu": nodex_cpu,
            "fl_all_ns_per_io": fl_all_ns / ios,
            "host_share": (probe_cpu + fl_all_ns / 1e9 / elapsed) / NCPU,
            "scrapes": scrapes,
            "probe_rss": rss[probe.pid] / 1024,
            "nodex_rss": rss[nodex.pid] / 1024,
        }
    finally:
        for p in procs:
            p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", default="build")
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("probe_overhead: skipped: needs root (BPF, loop devices)")
        return 0

    tmp = tempfile.mkdtemp(prefix="fl-bench.")
    old_stats = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    loopdev = None
    redis = None
    try:
        open("/proc/sys/kernel/bpf_stats_enabled", "w").write("1")
        img = os.path.join(tmp, "loop.img")
        subprocess.run(["truncate", "-s", "256M", img], check=True)
        loopdev = subprocess.run(["losetup", "-f", "--show", img], capture_output=True,
                                 text=True, check=True).stdout.strip()
        sock = os.path.join(tmp, "redis.sock")
        redis = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock,
                                  "--save", "", "--appendonly", "no", "--dir", tmp],
                                 stdout=subprocess.DEVNULL)
        while not os.path.exists(sock):
            time.sleep(0.05)

        print(f"probe_overhead: fio 4k randwrite O_DIRECT on {loopdev}, {a.seconds} s x {a.runs} runs, "
              f"{NCPU} CPUs")
        print(f"{'run':>4} {'ios':>8} {'fl ns/io':>9} {'bio ns/io':>9} {'ratio':>6} "
              f"{'probe cpu':>9} {'nodex cpu':>9} {'ratio':>6} {'fl host%':>8}")
        results = []
        for i in range(a.runs):
            r = one_run(a.out, a.seconds, tmp, loopdev, sock)
            results.append(r)
            print(f"{i + 1:>4} {r['ios']:>8} {r['fl_ns_per_io']:>9.0f} {r['bio_ns_per_io']:>9.0f} "
                  f"{r['fl_ns_per_io'] / r['bio_ns_per_io']:>6.2f} "
                  f"{100 * r['probe_cpu']:>8.2f}% {100 * r['nodex_cpu']:>8.2f}% "
                  f"{r['probe_cpu'] / r['nodex_cpu']:>6.2f} {100 * r['host_share']:>7.3f}%")

        med = lambda k: statistics.median(r[k] for r in results)
        print()
        print(f"median BPF cost per I/O, block path: faultline {med('fl_ns_per_io'):.0f} ns "
              f"({med('fl_progs_per_io'):.2f} programs/io), biolatency "
              f"{med('bio_ns_per_io'):.0f} ns ({med('bio_progs_per_io'):.2f} programs/io): "
              f"ratio {statistics.median(r['fl_ns_per_io'] / r['bio_ns_per_io'] for r in results):.2f}x "
              f"(target <= 0.5x)")
        print(f"median BPF cost per I/O of the I/O stacks (profile.io_interval: submit stacks, "
              f"waits in io_schedule): {med('io_stacks_ns_per_io'):.0f} ns, "
              f"{med('io_stacks_ns_per_io') / med('fl_ns_per_io'):.2f}x the block path's")
        print(f"median BPF cost per I/O, all faultline programs (block, scheduler, TCP): "
              f"{med('fl_all_ns_per_io'):.0f} ns")
        print(f"median process CPU: faultline-probe {100 * med('probe_cpu'):.2f}% of a CPU, "
              f"node_exporter scraped every 1 s {100 * med('nodex_cpu'):.2f}%: ratio "
              f"{statistics.median(r['probe_cpu'] / r['nodex_cpu'] for r in results):.2f}x")
        print(f"median faultline share of the host (process + BPF): "
              f"{100 * med('host_share'):.3f}% at {med('ios') / a.seconds:.0f} IOPS; "
              f"at 10k IOPS: {100 * (med('probe_cpu') + med('fl_all_ns_per_io') * 1e4 / 1e9) / NCPU:.3f}%"
              f" (target <= 0.5%)")
        print(f"resident memory: faultline-probe {med('probe_rss'):.1f} MiB, node_exporter "
              f"{med('nodex_rss'):.1f} MiB: ratio {med('probe_rss') / med('nodex_rss'):.2f}x")
    finally:
        if redis:
            redis.terminate()
            redis.wait()
        if loopdev:
            subprocess.run(["losetup", "-d", loopdev])
        open("/proc/sys/kernel/bpf_stats_enabled", "w").write(old_stats)
        subprocess.run(["rm", "-rf", tmp])
    return 0


if __name__ == "__main__":
    sys.exit(main())
