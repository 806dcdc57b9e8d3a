#!/usr/bin/env python3
"""profile_overhead.py OUT - what continuous profiling costs, next to perf.

On a busy host (one CPU-bound spinner per CPU), profile every CPU for
--seconds with faultline's sampler at 19 Hz and at 99 Hz
(`faultline-probe profile`, user stacks unwound with DWARF call frame
information, the default), at 99 Hz by frame pointers only (`--unwind fp`),
and with `perf record -F 99 -g -a` for the same time.  The BPF program's
cost per sample (run time / runs) is printed for both unwinders.  Then, in
the same run, a stock xz (no frame pointers) is profiled by faultline and
by `perf record --call-graph dwarf` at once: the share of samples each
unwinds to main (through libc's start) and the call chain each finds.  For faultline the cost is the process's steady-state CPU time (schedstat)
plus the BPF program's run time (kernel.bpf_stats_enabled); for perf it is perf's
CPU time (its in-kernel sampling work is not attributed to it, which
flatters perf).  Both are measured in steady state, between 1.5 s after
start and 0.5 s before the end.  Prints CPU share of the host, samples/s, and ratios.
With CPython 3.11 on every CPU instead, the BPF cost per sample of walking
Python frames (probes/python.h) is printed beside native unwinding's.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

NCPU = os.cpu_count()


def progs():
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                         check=True).stdout
    return {p["id"]: p.get("run_time_ns", 0) for p in json.loads(out)}


def prog_runs():
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                         check=True).stdout
    return {p["id"]: (p.get("name", ""), p.get("run_time_ns", 0), p.get("run_cnt", 0))
            for p in json.loads(out)}


def schedstat(pid):
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
    except OSError:
        pass
    return total / 1e9


def run_faultline(out, hz, seconds, tmp, unwind="dwarf"):
    """Steady-state cost: process CPU and BPF time between 1.5 s after start
    (symbol and unwind tables loaded) and 0.5 s before the end (before the
    export); and the sampling program's ns per run over the same span."""
    path = os.path.join(tmp, f"cpu-{hz}.pb.gz")
    argv = [f"{out}/faultline-probe", "profile", "--duration", f"{seconds}s", "--rate", str(hz),
            "--unwind", unwind, "-o", path]
    before = progs()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    mine = set(progs()) - set(before)
    r0 = prog_runs()
    c0, b0, t0 = schedstat(p.pid), sum(r0[i][1] for i in mine if i in r0), time.time()
    time.sleep(max(1.0, seconds - 2.0))
    r1 = prog_runs()
    c1, b1, t1 = schedstat(p.pid), sum(r1[i][1] for i in mine if i in r1), time.time()
    p.wait()
    err = p.stderr.read()
    m = re.search(r"(\d+) samples", err)
    share = ((c1 - c0) + (b1 - b0) / 1e9) / (t1 - t0) / NCPU
    sample = [i for i in mine if i in r1 and r1[i][0].startswith("profile_sampl")]
    ns = 0
    if sample and r1[sample[0]][2] > r0.get(sample[0], ("", 0, 0))[2]:
        i = sample[0]
        ns = (r1[i][1] - r0[i][1]) / (r1[i][2] - r0[i][2])
    return share, (int(m.group(1)) if m else 0) / seconds, ns


ENTRY = ("__libc_start_call_main", "start_thread")


def chains_faultline(path):
    """Folded stacks -> [(frames root first, count)]."""
    out = []
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            out.append((stack.split(";")[1:], int(n)))
    return out


def chains_perf(data):
    """perf script of a --call-graph dwarf recording -> [(frames root first, 1)]."""
    text = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"], capture_output=True,
                          text=True).stdout
    out = []
    for block in text.split("\n\n"):
        frames = []
        for line in block.strip().splitlines():
            parts = line.split(None, 1)
            if len(parts) == 2:
                frames.append(parts[1].split("+0x")[0].strip())
        if frames:
            out.append((frames[::-1], 1))
    return out


def named(frame):
    """A frame's function name, or None if the tool could not name it."""
    f = frame.split("@")[0]
    if not f or f.startswith("[") or "+0x" in f or f.endswith("_[k]"):
        return None
    return f


def summary(chains):
    total = sum(n for _, n in chains)
    done = sum(n for c, n in chains if any(x.split("@")[0] in ENTRY for x in c[:-1]))
    # the heaviest chain of named user functions
    weight = {}
    for c, n in chains:
        key = tuple(x for x in (named(f) for f in c) if x)
        weight[key] = weight.get(key, 0) + n
    top = max(weight.items(), key=lambda kv: kv[1])[0] if weight else ()
    return total, done, top


def compare_with_perf(out, tmp, seconds=5):
    """The same xz profiled by faultline (DWARF in BPF) and perf --call-graph dwarf at once."""
    xz = subprocess.Popen(["sh", "-c", "exec xz -9 -T1 -c < /dev/urandom > /dev/null"])
    try:
        time.sleep(0.5)
        folded = os.path.join(tmp, "xz.folded")
        data = os.path.join(tmp, "xz-perf.data")
        fl = subprocess.Popen([f"{out}/faultline-probe", "profile", "--duration", f"{seconds}s",
                               "--rate", "99", "--pid", str(xz.pid), "-o", folded],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        perf = subprocess.run(["perf", "record", "-F", "99", "--call-graph", "dwarf", "-p",
                               str(xz.pid), "-o", data, "--", "sleep", str(seconds)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        fl.wait()
    finally:
        xz.kill()
        xz.wait()
    if fl.returncode or perf.returncode or not os.path.exists(folded):
        print("xz under both unwinders: skipped (faultline %s, perf %s)" %
              (fl.returncode, perf.returncode))
        return
    ft, fd, ftop = summary(chains_faultline(folded))
    pt, pd, ptop = summary(chains_perf(data))
    print(f"stock xz (no frame pointers), {seconds} s at 99 Hz, profiled by both at once:")
    print(f"  faultline (DWARF in BPF):        {ft:5d} samples, {100 * fd / max(ft, 1):5.1f}% "
          f"unwound to main")
    print(f"  perf record --call-graph dwarf:  {pt:5d} samples, {100 * pd / max(pt, 1):5.1f}% "
          f"unwound to main")
    print("  heaviest chain of named functions, root first:")
    print("    faultline: " + " > ".join(ftop))
    print("    perf:      " + " > ".join(ptop))
    common = [f for f in ftop if f in ptop]
    print(f"  {len(common)} of faultline's {len(ftop)} named frames are in perf's chain")


SPIN_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv)
{
	struct timespec a, b;
	double lim = atof(argv[1]);
	unsigned long long n = 0;
	volatile unsigned long x = 0;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 10000; i++)
			x += i;
		n++;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < lim);
	printf("%llu\n", n);
	return 0;
}
"""


PY_SPIN = """
import sys, time
def parse_invoice(text):
    total = 0
    for i, ch in enumerate(text):
        total += (ord(ch) * i) % 7
    return total
def handle(depth):
    return handle(depth - 1) if depth else parse_invoice("invoice-line;" * 500)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    handle(12)
"""


def python_cost(out, seconds, tmp, runs):
    """The BPF program's ns per sample when every CPU runs CPython 3.11
    (Python frames walked in place of the interpreter's, 14 deep), beside
    the same with native spinners; and the share of samples naming
    parse_invoice."""
    python = "/usr/bin/python3.11"
    if not os.access(python, os.X_OK):
        return None
    script = os.path.join(tmp, "spin.py")
    with open(script, "w") as f:
        f.write(PY_SPIN)
    res = []
    for _ in range(runs):
        ps = [subprocess.Popen([python, script, str(seconds + 3)]) for _ in range(NCPU)]
        time.sleep(1.0)
        res.append(run_faultline(out, 99, seconds, tmp))
        for p in ps:
            p.kill()
            p.wait()
    named = total = 0
    folded = os.path.join(tmp, "spin.folded")
    one = subprocess.Popen([python, script, "6"])
    try:
        time.sleep(1.0)
        subprocess.run([f"{out}/faultline-probe", "profile", "--duration", "3s", "--rate", "99",
                        "--pid", str(one.pid), "-o", folded], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    finally:
        one.kill()
        one.wait()
    if os.path.exists(folded):
        for frames, count in chains_faultline(folded):
            total += count
            named += count if any(x.startswith("spin.parse_invoice (") for x in frames) else 0
    return (statistics.median(r[2] for r in res), statistics.median(r[0] for r in res),
            named, total)


def spin_rate(spin, seconds):
    """Work done by one spinner per CPU in `seconds` (total iterations)."""
    ps = [subprocess.Popen([spin, str(seconds)], stdout=subprocess.PIPE, text=True)
          for _ in range(NCPU)]
    return sum(int(p.communicate()[0]) for p in ps)


def slowdown(spin, seconds, sampler_argv):
    """1 - (spinner work with the sampler) / (without), around one run."""
    base1 = spin_rate(spin, seconds)
    s = subprocess.Popen(sampler_argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    with_s = spin_rate(spin, seconds)
    s.wait()
    base2 = spin_rate(spin, seconds)
    return 1 - with_s / ((base1 + base2) / 2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", default="build")
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--runs", type=int, default=2)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("profile_overhead: skipped: needs root")
        return 0
    old = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    tmp = tempfile.mkdtemp(prefix="fl-prof-bench.")
    spinners = []
    rows = {"faultline 19 Hz": [], "faultline 99 Hz": [], "faultline 99 Hz fp": [],
            "perf -F 99 -g -a": []}
    try:
        open("/proc/sys/kernel/bpf_stats_enabled", "w").write("1")
        spinners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(NCPU)]
        print(f"profile_overhead: {NCPU} CPUs busy with spinners, {a.seconds} s x {a.runs} runs")
        for _ in range(a.runs):
            for hz in (19, 99):
                rows[f"faultline {hz} Hz"].append(run_faultline(a.out, hz, a.seconds, tmp))
            rows["faultline 99 Hz fp"].append(run_faultline(a.out, 99, a.seconds, tmp, "fp"))
            perf = subprocess.Popen(["perf", "record", "-F", "99", "-g", "-a", "-o",
                                     os.path.join(tmp, "perf.data"), "--", "sleep",
                                     str(a.seconds)], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            time.sleep(1.5)
            c0, t0 = schedstat(perf.pid), time.time()
            time.sleep(max(1.0, a.seconds - 2.0))
            c1, t1 = schedstat(perf.pid), time.time()
            perf.wait()
            m = re.search(r"\((\d+) samples\)", perf.stderr.read())
            rows["perf -F 99 -g -a"].append(((c1 - c0) / (t1 - t0) / NCPU,
                                              (int(m.group(1)) if m else 0) / a.seconds, 0))
        spin = os.path.join(tmp, "spin")
        with open(spin + ".c", "w") as f:
            f.write(SPIN_C)
        subprocess.run(["gcc", "-O1", "-o", spin, spin + ".c"], check=True)
        for s in spinners:
            s.kill()
        w = max(3, a.seconds // 3)
        fl_slow = statistics.median(slowdown(spin, w, [f"{a.out}/faultline-probe", "profile",
                                                       "--duration", f"{w + 3}s", "--rate", "99",
                                                       "-o", os.path.join(tmp, "x.pb.gz")])
                                    for _ in range(a.runs))
        perf_slow = statistics.median(slowdown(spin, w, ["perf", "record", "-F", "99", "-g", "-a",
                                                         "-o", os.path.join(tmp, "p.data"), "--",
                                                         "sleep", str(w + 3)])
                                      for _ in range(a.runs))
        print(f"{'sampler':<20} {'host CPU':>9} {'samples/s':>10}")
        med = {}
        for k, v in rows.items():
            share = statistics.median(x[0] for x in v)
            rate = statistics.median(x[1] for x in v)
            med[k] = (share, rate)
            print(f"{k:<20} {100 * share:>8.3f}% {rate:>10.0f}")
        f99, p99 = med["faultline 99 Hz"], med["perf -F 99 -g -a"]
        print("(host CPU: process + BPF time for faultline; perf's own process only, its "
              "in-kernel sampling is not attributed to it)")
        print()
        print(f"faultline at 19 Hz: {100 * med['faultline 19 Hz'][0]:.3f}% of the host (target <= 0.5%)")
        ns = {k: statistics.median(x[2] for x in v) for k, v in rows.items()}
        print(f"BPF cost per sample at 99 Hz: DWARF unwinding {ns['faultline 99 Hz']:.0f} ns, "
              f"frame pointers {ns['faultline 99 Hz fp']:.0f} ns "
              f"({ns['faultline 99 Hz'] / max(ns['faultline 99 Hz fp'], 1):.2f}x)")
        print(f"samples/s at 99 Hz, faultline / perf: {f99[1] / max(p99[1], 1):.2f}x")
        print(f"slowdown of CPU-bound work at 99 Hz (everything, kernel included): faultline "
              f"{100 * fl_slow:.2f}%, perf record -g {100 * perf_slow:.2f}% (noise ~0.5%)")
        py = python_cost(a.out, a.seconds, tmp, a.runs)
        if py:
            print(f"BPF cost per sample at 99 Hz with CPython 3.11 on every CPU (Python "
                  f"frames read in BPF, 14 deep): {py[0]:.0f} ns, "
                  f"{py[0] / max(ns['faultline 99 Hz'], 1):.2f}x native DWARF unwinding; "
                  f"faultline's host CPU {100 * py[1]:.3f}%; "
                  f"{py[2]}/{py[3]} samples name parse_invoice")
        print()
        compare_with_perf(a.out, tmp)
    finally:
        for s in spinners:
            s.kill()
            s.wait()
        open("/proc/sys/kernel/bpf_stats_enabled", "w").write(old)
        subprocess.run(["rm", "-rf", tmp])
    return 0


if __name__ == "__main__":
    sys.exit(main())
