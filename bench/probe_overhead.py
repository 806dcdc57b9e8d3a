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
  * process CPU per second, faultline-probe vs node_exporter, and the ratio,
    twice: in the probe's start-up (it is started inside that window, and
    the first seconds are when it loads BPF and builds unwind tables) and
    in steady state; each with the profiler's share of the probe's cost
  * faultline's total (process + BPF) as a share of the host's CPU
  * resident memory, faultline-probe vs node_exporter
  * the floor under the start-up: the CPU time of loading the probe's BPF
    objects alone (bench/bpf_load_cost: libbpf's BTF work, the maps, the
    verifier; nothing attached), against node_exporter's whole start-up window

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


def maps():
    """{map id: bytes_memlock} of every BPF map (kernel memory, not in any RSS
    unless mmap'd)."""
    out = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True,
                         text=True, check=True).stdout
    return {m["id"]: m.get("bytes_memlock", 0) for m in json.loads(out)}


def start_and_claim(argv, ready, **kw):
    """Start argv and return (process, ids of the BPF programs it loaded).

    bpftool does not always know which process holds a program, so the
    programs that appear between start and ready are the ones it loaded."""
    before = set(progs())
    p = subprocess.Popen(argv, **kw)
    ready()
    time.sleep(1)
    return p, set(progs()) - before


def wait_port(port, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1).read()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"nothing answered on 127.0.0.1:{port}")


def block_writes(loopdev):
    """Writes the block layer completed on loopdev (/sys/block/X/stat, field 5)."""
    with open(f"/sys/block/{os.path.basename(loopdev)}/stat") as f:
        return int(f.read().split()[4])


def thread_cpu(pid, comm):
    """CPU seconds of pid's threads named comm (fl-profile: the profiler's)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() != comm:
                    continue
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total / 1e9


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def bpf_load_floor(out):
    """{load_cpu_s, maps_btf_cpu_s, verifier_cpu_s} of loading the probe's BPF
    objects alone (bench/bpf_load_cost), or None when the tool is not built."""
    tool = f"{out}/bench/bpf_load_cost"
    objs = sorted(f"{out}/bpf/{f}" for f in os.listdir(f"{out}/bpf") if f.endswith(".bpf.o"))
    if not os.path.exists(tool) or not objs:
        return None
    res = subprocess.run([tool, "--runs", "9"] + objs, capture_output=True, text=True)
    if res.returncode != 0:
        print("the floor under the start-up: not measured: " + res.stderr.strip())
        return None
    kv = res.stdout.strip().splitlines()[-1].split()
    return {k: float(v) for k, v in (x.split("=") for x in kv)} | {"objects": len(objs)}


def one_run(out, seconds, startup, settle, tmp, loopdev, redis_sock):
    """One run: fio all along; the probe starts inside the measured start-up
    window (its first `startup` s), then, after `settle` s more, the steady
    window of `seconds` s.  node_exporter is scraped every second throughout
    and measured over the same windows."""
    procs = []
    fio = None
    try:
        bio, bio_ids = start_and_claim(["biolatency"], lambda: time.sleep(1),
                                       stdout=subprocess.DEVNULL)
        procs.append(bio)
        nodex = subprocess.Popen(["prometheus-node-exporter",
                                  "--web.listen-address=127.0.0.1:19100"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(nodex)
        wait_port(19100)
        total = startup + settle + seconds + 5
        fio = subprocess.Popen(["fio", "--name=bench", f"--filename={loopdev}", "--rw=randwrite",
                                "--bs=4k", "--direct=1", "--ioengine=libaio", "--iodepth=16",
                                "--time_based", f"--runtime={total}", "--output-format=json"],
                               stdout=subprocess.DEVNULL)
        time.sleep(1)
        before = set(progs())
        maps_before = set(maps())
        n0 = cpu_seconds(nodex.pid)
        t0 = time.time()
        probe = subprocess.Popen(
            [f"{out}/faultline-probe", "--redis", f"unix://{redis_sock}", "--host", "bench",
             "--metrics-addr", "127.0.0.1:19464", "--log-level", "warn"])
        procs.append(probe)
        scrapes = 0

        def scrape_until(t_end):
            nonlocal scrapes
            while time.time() < t_end:
                urllib.request.urlopen("http://127.0.0.1:19100/metrics", timeout=5).read()
                scrapes += 1
                time.sleep(max(0, min(t_end, t0 + scrapes) - time.time()))

        # start-up: from exec, the probe's own CPU (it had none before)
        scrape_until(t0 + startup)
        up = {"probe_cpu": cpu_seconds(probe.pid), "profiler_cpu": thread_cpu(probe.pid, "fl-profile"),
              "nodex_cpu": cpu_seconds(nodex.pid) - n0, "elapsed": time.time() - t0,
              "probe_hwm": status_kib(probe.pid, "VmHWM") / 1024}
        fl_ids = set(progs()) - before - bio_ids
        now_maps = maps()
        fl_map_bytes = sum(b for i, b in now_maps.items() if i not in maps_before)
        if not fl_ids or not bio_ids:
            raise SystemExit("probe_overhead: could not find the BPF programs of faultline-probe "
                             f"({len(fl_ids)}) or biolatency ({len(bio_ids)})")
        scrape_until(t0 + startup + settle)

        # steady state
        s0 = progs()
        c0 = {p.pid: cpu_seconds(p.pid) for p in (probe, nodex)}
        pr0 = thread_cpu(probe.pid, "fl-profile")
        w0 = block_writes(loopdev)
        t1 = time.time()
        scrape_until(t1 + seconds)
        elapsed = time.time() - t1
        ios = block_writes(loopdev) - w0
        s1 = progs()
        c1 = {p.pid: cpu_seconds(p.pid) for p in (probe, nodex)}
        pr1 = thread_cpu(probe.pid, "fl-profile")
        rss = {p.pid: status_kib(p.pid, "VmRSS") for p in (probe, nodex)}

        def bpf(ids):
            t = sum(s1.get(i, (0, 0))[0] - s0.get(i, (0, 0))[0] for i in ids)
            c = sum(s1.get(i, (0, 0))[1] - s0.get(i, (0, 0))[1] for i in ids)
            return t, c

        fl_block = {i for i in fl_ids if s1.get(i, (0, 0, ""))[2].startswith("block_rq")}
        fl_io = {i for i in fl_ids if s1.get(i, (0, 0, ""))[2].startswith("profile_io")}
        fl_prof = {i for i in fl_ids if s1.get(i, (0, 0, ""))[2].startswith("profile")}
        fl_all_ns, _ = bpf(fl_ids)
        io_ns, _ = bpf(fl_io)
        prof_ns, _ = bpf(fl_prof)
        fl_ns, fl_cnt = bpf(fl_block)
        bio_ns, bio_cnt = bpf(bio_ids)
        # each faultline program alone (docs/benchmarks.md, "Where the BPF time per I/O goes")
        per_prog = {}
        for i in fl_ids:
            name = s1.get(i, (0, 0, ""))[2] or f"prog{i}"
            t, c = bpf({i})
            pt, pc = per_prog.get(name, (0, 0))
            per_prog[name] = (pt + t, pc + c)
        probe_cpu = (c1[probe.pid] - c0[probe.pid]) / elapsed
        nodex_cpu = (c1[nodex.pid] - c0[nodex.pid]) / elapsed
        return {
            "ios": ios,
            "iops": ios / elapsed,
            "fl_ns_per_io": fl_ns / ios,
            "bio_ns_per_io": bio_ns / ios,
            "fl_progs_per_io": fl_cnt / ios,
            "io_stacks_ns_per_io": io_ns / ios,
            "bio_progs_per_io": bio_cnt / ios,
            "probe_cpu": probe_cpu,
            "nodex_cpu": nodex_cpu,
            "profiler_share": ((pr1 - pr0) / elapsed + prof_ns / 1e9 / elapsed) /
                              max(probe_cpu + fl_all_ns / 1e9 / elapsed, 1e-9),
            "fl_all_ns_per_io": fl_all_ns / ios,
            "host_share": (probe_cpu + fl_all_ns / 1e9 / elapsed) / NCPU,
            "scrapes": scrapes,
            "probe_rss": rss[probe.pid] / 1024,
            "probe_bpf_maps": fl_map_bytes / 1048576,
            "nodex_rss": rss[nodex.pid] / 1024,
            "up_probe_cpu": up["probe_cpu"] / up["elapsed"],
            "up_probe_cpu_s": up["probe_cpu"],
            "up_profiler_share": up["profiler_cpu"] / max(up["probe_cpu"], 1e-9),
            "up_nodex_cpu": up["nodex_cpu"] / up["elapsed"],
            "up_nodex_cpu_s": up["nodex_cpu"],
            "up_probe_hwm": up["probe_hwm"],
            "per_prog": {n: (c / ios, t / max(c, 1), t / ios) for n, (t, c) in per_prog.items()},
        }
    finally:
        for p in procs:
            p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        if fio:
            fio.kill()
            fio.wait()


# What the same bench measured before (docs/benchmarks.md), kept beside today's.
HISTORY = [
    ("wave 1", "process CPU 0.16x node_exporter, RSS 0.72x, 10k-IOPS host share 0.26 %"),
    ("wave 2", "process CPU 0.38x, RSS 1.32x, 10k-IOPS host share 0.55 %"),
    ("issue 39 filed", "process CPU 2.21x (start-up inside the window), RSS 2.0x, 1.25 %"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", default="build")
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--startup", type=int, default=10,
                    help="seconds from the probe's exec measured as its start-up")
    ap.add_argument("--settle", type=int, default=20,
                    help="seconds after the start-up window before the steady one")
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

        print(f"probe_overhead: fio 4k randwrite O_DIRECT on {loopdev}; per run the probe "
              f"starts inside a {a.startup} s start-up window, then {a.seconds} s of steady state "
              f"after {a.settle} s more; {a.runs} runs, {NCPU} CPUs")
        print(f"{'run':>4} {'iops':>7} {'fl ns/io':>9} {'bio ns/io':>9} {'ratio':>6} "
              f"{'up cpu':>7} {'nodex':>7} {'ratio':>6} {'steady':>7} {'nodex':>7} {'ratio':>6} "
              f"{'fl host%':>8} {'prof%':>6}")
        results = []
        for i in range(a.runs):
            r = one_run(a.out, a.seconds, a.startup, a.settle, tmp, loopdev, sock)
            results.append(r)
            print(f"{i + 1:>4} {r['iops']:>7.0f} {r['fl_ns_per_io']:>9.0f} {r['bio_ns_per_io']:>9.0f} "
                  f"{r['fl_ns_per_io'] / r['bio_ns_per_io']:>6.2f} "
                  f"{100 * r['up_probe_cpu']:>6.2f}% {100 * r['up_nodex_cpu']:>6.2f}% "
                  f"{r['up_probe_cpu'] / r['up_nodex_cpu']:>6.2f} "
                  f"{100 * r['probe_cpu']:>6.2f}% {100 * r['nodex_cpu']:>6.2f}% "
                  f"{r['probe_cpu'] / r['nodex_cpu']:>6.2f} {100 * r['host_share']:>7.3f}% "
                  f"{100 * r['profiler_share']:>5.0f}%")

        med = lambda k: statistics.median(r[k] for r in results)
        ratio = lambda k, n: statistics.median(r[k] / r[n] for r in results)
        print()
        print(f"median BPF cost per I/O, block path: faultline {med('fl_ns_per_io'):.0f} ns "
              f"({med('fl_progs_per_io'):.2f} programs/io), biolatency "
              f"{med('bio_ns_per_io'):.0f} ns ({med('bio_progs_per_io'):.2f} programs/io): "
              f"ratio {ratio('fl_ns_per_io', 'bio_ns_per_io'):.2f}x (target <= 0.5x)")
        print(f"median BPF cost per I/O of the I/O stacks (profile.io_interval: submit stacks, "
              f"waits in io_schedule): {med('io_stacks_ns_per_io'):.0f} ns, "
              f"{med('io_stacks_ns_per_io') / med('fl_ns_per_io'):.2f}x the block path's")
        print(f"median BPF cost per I/O, all faultline programs (block, scheduler, TCP, "
              f"profiler): {med('fl_all_ns_per_io'):.0f} ns")
        names = sorted({n for r in results for n in r["per_prog"]},
                       key=lambda n: -statistics.median(r["per_prog"].get(n, (0, 0, 0))[2]
                                                        for r in results))
        print("  per program (median): runs per I/O, ns a run, ns per I/O")
        for n in names:
            col = lambda k: statistics.median(r["per_prog"].get(n, (0, 0, 0))[k] for r in results)
            print(f"    {n:<24} {col(0):>6.2f} {col(1):>9.0f} {col(2):>7.0f}")
        print(f"start-up (the first {a.startup} s from exec): faultline-probe "
              f"{100 * med('up_probe_cpu'):.2f}% of a CPU ({med('up_probe_cpu_s'):.2f} CPU-s, "
              f"{100 * med('up_profiler_share'):.0f}% of it the profiler thread), node_exporter "
              f"{100 * med('up_nodex_cpu'):.2f}%: ratio {ratio('up_probe_cpu', 'up_nodex_cpu'):.2f}x "
              f"(target <= 0.5x); peak resident {med('up_probe_hwm'):.1f} MiB")
        print(f"steady state: faultline-probe {100 * med('probe_cpu'):.2f}% of a CPU "
              f"({100 * med('profiler_share'):.0f}% of it, BPF included, the profiler), "
              f"node_exporter scraped every 1 s {100 * med('nodex_cpu'):.2f}%: ratio "
              f"{ratio('probe_cpu', 'nodex_cpu'):.2f}x (target <= 0.5x)")
        print(f"median faultline share of the host (process + BPF): "
              f"{100 * med('host_share'):.3f}% at {med('iops'):.0f} IOPS; "
              f"at 10k IOPS: {100 * (med('probe_cpu') + med('fl_all_ns_per_io') * 1e4 / 1e9) / NCPU:.3f}%"
              f" (target <= 0.5%)")
        print(f"resident memory: faultline-probe {med('probe_rss'):.1f} MiB, node_exporter "
              f"{med('nodex_rss'):.1f} MiB: ratio {med('probe_rss') / med('nodex_rss'):.2f}x "
              f"(target <= 1x); besides, its BPF maps hold {med('probe_bpf_maps'):.1f} MiB of "
              f"kernel memory (what of it is mmap'd is in the RSS too)")
        floor = bpf_load_floor(a.out)
        if floor:
            nodex_up = med("up_nodex_cpu_s")
            print(f"the floor under the start-up: loading the probe's {floor['objects']} BPF objects "
                  f"alone (bench/bpf_load_cost, median of 9) costs {floor['load_cpu_s']:.3f} CPU-s "
                  f"(BTF and maps {floor['maps_btf_cpu_s']:.3f}, the verifier "
                  f"{floor['verifier_cpu_s']:.3f}): {floor['load_cpu_s'] / nodex_up:.2f}x "
                  f"node_exporter's whole first {a.startup} s ({nodex_up:.3f} CPU-s); the 0.5x "
                  f"target allows {0.5 * nodex_up:.3f} CPU-s for everything")
        elif not os.path.exists(f"{a.out}/bench/bpf_load_cost"):
            print("the floor under the start-up: not measured (make bench builds bench/bpf_load_cost)")
        print("before (the same bench):")
        for when, what in HISTORY:
            print(f"  {when:<15} {what}")
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
