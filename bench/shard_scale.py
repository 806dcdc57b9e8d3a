#!/usr/bin/env python3
"""bench/shard_scale.py OUT - what sharding the rules engine costs, and how
many workers and cluster nodes a 100,000-host fleet needs.

The peer is faultline itself unsharded: one `faultline-rules` on one
redis-server, the layout every single-box install runs.  Side by side, on
the same simulated fleet (--hosts, spread over many sites so it can be
shared; the same --seed writes the same history to both):

  single    one unsharded worker on one redis-server (TCP loopback, as the
            cluster's nodes)
  sharded   1, 2 and 4 `faultline-rules --shard` workers on a Redis Cluster of
            3 masters (redis-cli --cluster create on loopback ports)

Every worker replays the same last --intervals seconds in real time
(--replay-speed 1) so the leases settle as they would live; the first
third of the intervals (while partitions move) is left out of the host
count.  Costs are CPU time (user + system of each worker, from a third of
the run to its last sixth: reads and exchanges included, the first read of
the history not) per host-rule evaluation, not wall time:
the workers and Redis share this machine's cores.  Printed: that cost per
worker against the single worker's (the sharding overhead, target <=
1.10x), the fleet each worker covered, and the projection: workers of one
core for 100,000 hosts at 1 s intervals with 20 % headroom (target <= 8),
and cluster masters for the writes and reads (one XADD and one XRANGE per
host per second) from Redis' own CPU per call (INFO commandstats).
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import free_port


LINE = re.compile(r"interval: read (\d+) snapshot\(s\) in ([\d.]+) ms, evaluated (\d+) rule\(s\) "
                  r"over (\d+) host\(s\) in ([\d.]+) ms")



def start_cluster(d, masters=3):
    procs, ports = [], []
    for _ in range(masters):
        port = free_port(also=(10000,))
        procs.append(subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled",
             "yes", "--cluster-config-file", "nodes-%d.conf" % port, "--save", "",
             "--appendonly", "no", "--dir", d],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        ports.append(port)
    for port in ports:
        for _ in range(200):
            if subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True,
                              text=True).stdout.strip() == "PONG":
                break
            time.sleep(0.05)
    subprocess.run(["redis-cli", "--cluster", "create"] +
                   ["127.0.0.1:%d" % p for p in ports] + ["--cluster-yes"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for port in ports:
        for _ in range(300):
            if "cluster_state:ok" in subprocess.run(["redis-cli", "-p", str(port), "CLUSTER",
                                                     "INFO"], capture_output=True,
                                                    text=True).stdout:
                break
            time.sleep(0.1)
    return procs, "redis-cluster://" + ",".join("127.0.0.1:%d" % p for p in ports)


def start_single(d):
    """One redis-server reached over TCP loopback, as the cluster's nodes are
    and as a rules engine on its own machine reaches its Redis (a unix socket
    would make the peer cheaper for a reason sharding has nothing to do with)."""
    port = free_port(also=(10000,))
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save",
                          "", "--appendonly", "no", "--dir", d],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if subprocess.run(["redis-cli", "-p", str(port), "PING"], capture_output=True,
                          text=True).stdout.strip() == "PONG":
            break
        time.sleep(0.05)
    return p, "redis://127.0.0.1:%d" % port


def simulate(out, url, d, args, name):
    tl = os.path.join(d, name + "-timeline.json")
    subprocess.run([os.path.join(out, "faultline"), "sim", "--redis", url, "--hosts",
                    str(args.hosts), "--hosts-per-rack", "20", "--racks-per-switch", "4",
                    "--switches-per-site", "2", "--duration", "%ds" % args.history,
                    "--ends-now", "--no-profiles", "--seed", "7", "--timeline", tl],
                   check=True, stdout=subprocess.DEVNULL,
                   stderr=open(os.path.join(d, name + "-sim.log"), "w"))
    with open(tl) as f:
        return json.load(f)


def run_workers(out, url, d, tl, n, args):
    """n workers (n == 0: one unsharded) replaying the last --intervals s in real time."""
    start = tl["end_ms"] - args.intervals * 1000
    procs = []
    for w in range(max(n, 1)):
        cmd = [os.path.join(out, "faultline-rules"), "--rules", "etc/rules/faultline.yaml",
               "--redis", url, "--replay", "%d,%d" % (start, tl["end_ms"]),
               "--replay-speed", "1", "--stale", "30s", "--log-level", "debug"]
        if n:
            cmd += ["--shard", "--worker-id", "bench-%d" % w]
        log = open(os.path.join(d, "w%d-%d.log" % (n, w)), "w+")
        procs.append((subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log), log))
    # CPU of each worker from a third of the way in (partitions settled, history read)
    # to near the end: the steady state, one interval per second of wall time
    hz = os.sysconf("SC_CLK_TCK")

    def cpu_of(pid):
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / hz

    time.sleep(args.intervals / 3 + 2)
    t1, c1 = time.time(), [cpu_of(p.pid) for p, _ in procs]
    time.sleep(args.intervals / 2)
    t2, c2 = time.time(), [cpu_of(p.pid) for p, _ in procs]
    per_worker = []
    for i, (p, log) in enumerate(procs):
        _, status, usage = os.wait4(p.pid, 0)
        if status != 0:
            log.seek(0)
            sys.exit("shard_scale: faultline-rules failed:\n" + log.read()[-2000:])
        log.seek(0)
        rows = [tuple(float(x) for x in m.groups()) for m in LINE.finditer(log.read())]
        steady = [r for r in rows[len(rows) // 3:] if r[3] > 0]
        if not steady:
            per_worker.append(None)
            continue
        hosts = statistics.median(r[3] for r in steady)
        rules = int(steady[-1][2])
        # CPU, not wall time: workers and Redis share this machine's cores
        per_interval = (c2[i] - c1[i]) / (t2 - t1)
        per_worker.append({"cost_us": per_interval / (hosts * rules) * 1e6, "hosts": hosts,
                           "cpu_ms": per_interval * 1000, "rules": rules})
    return per_worker


def commandstats(url):
    """usec per call of each command, over the cluster's masters."""
    out = {}
    for hp in url[len("redis-cluster://"):].split(","):
        host, port = hp.split(":")
        text = subprocess.run(["redis-cli", "-h", host, "-p", port, "INFO", "commandstats"],
                              capture_output=True, text=True).stdout
        for m in re.finditer(r"cmdstat_(\w+):calls=(\d+),usec=(\d+)", text):
            c, u = out.get(m.group(1), (0, 0))
            out[m.group(1)] = (c + int(m.group(2)), u + int(m.group(3)))
    return {k: u / c for k, (c, u) in out.items() if c}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", default="build")
    ap.add_argument("--hosts", type=int, default=4000)
    ap.add_argument("--history", type=int, default=60, help="seconds of history written")
    ap.add_argument("--intervals", type=int, default=30)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--keep", action="store_true", help="keep the logs (printed where)")
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="fl-shard-bench.")
    procs = []
    try:
        single, single_url = start_single(d)
        procs.append(single)
        cprocs, curl = start_cluster(d)
        procs += cprocs
        tl = simulate(args.out, single_url, d, args, "single")
        tl2 = simulate(args.out, curl, d, args, "cluster")
        base = run_workers(args.out, single_url, d, tl, 0, args)[0]
        if not base:
            sys.exit("shard_scale: the unsharded run evaluated no host (logs: %s)" % d)
        print("shard_scale: %d hosts (%d sites), %d rules, last %d intervals replayed in "
              "real time" % (args.hosts, math.ceil(args.hosts / 160), base["rules"],
                             args.intervals))
        print("  %-30s %10s %17s %13s %7s" % ("", "hosts/wkr", "CPU us/host-rule",
                                               "CPU ms/intvl", "vs 1"))
        print("  %-30s %10d %17.2f %13.1f %7s" % ("1 worker, one redis-server", base["hosts"],
                                                  base["cost_us"], base["cpu_ms"], "1.00x"))
        worst = base["cost_us"]
        for n in [int(x) for x in args.workers.split(",")]:
            res = [r for r in run_workers(args.out, curl, d, tl2, n, args) if r]
            if not res:
                sys.exit("shard_scale: no %d-worker run evaluated a host (logs: %s)" % (n, d))
            cost = statistics.mean(r["cost_us"] for r in res)
            worst = max(worst, max(r["cost_us"] for r in res))
            print("  %-30s %10d %17.2f %13.1f %6.2fx" %
                  ("%d sharded, 3-master cluster" % n, statistics.mean(r["hosts"] for r in res),
                   cost, statistics.mean(r["cpu_ms"] for r in res), cost / base["cost_us"]))
        per_worker = 0.8 / (worst / 1e6 * base["rules"])   # hosts one core evaluates in 0.8 s
        print("  projection, 100,000 hosts at 1 s (80 %% of a core each, worst measured cost): "
              "%d worker(s) of %d hosts (target <= 8)" % (math.ceil(100000 / per_worker),
                                                          int(per_worker)))
        cs = commandstats(curl)
        per_host = cs.get("xadd", 0) + cs.get("xrange", 0)   # one of each per host per second
        print("  Redis CPU per host per second (measured on the cluster): XADD %.1f us + "
              "XRANGE %.1f us; 100,000 hosts: %.1f cores of Redis, %d master(s) at 50 %% load "
              "(plus one replica each)" % (cs.get("xadd", 0), cs.get("xrange", 0),
                                            1e5 * per_host / 1e6,
                                            max(3, math.ceil(1e5 * per_host / 1e6 / 0.5))))
    finally:
        for p in procs:
            p.kill()
            p.wait()
        if args.keep:
            print("  logs kept in " + d)
        else:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
