#!/usr/bin/env python3
"""bench/fleet_scale.py OUT - how faultline's central parts grow with the fleet.

For each fleet size (--sizes, default 1,000 and 10,000 simulated hosts),
in a redis-server of its own:

  rules     `faultline sim --ends-now` writes --history seconds of the fleet,
            then `faultline-rules --replay` evaluates the shipped rules over
            the last --intervals seconds on its own clock: every replayed
            interval reads one new snapshot per host and evaluates, a live
            daemon's steady state (the simulator does not have to keep up
            with the wall clock).  Each interval's log line gives the time
            spent reading and evaluating: median and worst, and the
            engine's peak resident memory.
  redis     bytes per entry of each tier: what Redis frees when each
            stream of 20 simulated hosts with 3 hours of history (sim seed
            7, one the zstd dictionaries were not trained on) is deleted
            (used_memory before and after), and the projection
            to a full retention window per host (the probe's defaults: s1 15 min, s60
            1 day, s3600 7 days, p10 1 hour; an hourly rollup holds the
            same series as a minute one, so its entries are sized like
            those); and Redis's used_memory per host at each fleet size.
  real      a real faultline-probe (BPF, defaults) on this host for
            --real-seconds, into a Redis of its own, remote-writing its
            1 s tier to a real Prometheus (--web.enable-remote-write-
            receiver): each tier's bytes per entry as the probe wrote them
            beside the simulator's, projected to the default retention, and
            the same seconds of the same host in Prometheus' TSDB (its head
            written out as a block by the snapshot API; meta.json's sample
            count, the block's bytes): bytes per host-second and per sample
            side by side.  Skipped without root or with --real-seconds 0.
  alerter   --alerts host alerts (with cpu_stacks evidence, so the alerter
            reads each host's profiles) appended to fl:alerts at once, then
            `faultline-alerter` delivers them, one notification per host, to
            a local webhook receiver; events/s and notifications/s.

Prints one table row per size and how each figure grew from the smallest
size to the largest (x, against the growth in hosts).  No peer runs this
workload side by side; rules_throughput and time_to_page hold the peer
comparisons.
"""
import argparse
import http.server
import socket
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from benchlib import free_port

RETENTION = {"s1": 15 * 60, "s60": 24 * 60, "s3600": 7 * 24, "p10": 360}
SERIES_PER_ENTRY = 30   # a simulated host's series per entry (faultline sim)
# wave 1 (a chain of decoded snapshots per host, README history): what the
# rules engine held per host per kept snapshot, and how many it kept under
# the shipped rules (their 15-minute baselines' two windows, every second)
WAVE1_BYTES_PER_SNAPSHOT = 3900
WAVE1_POINTS = 2 * 15 * 60 + 5
# the rules-history measurement: longer than any window the shipped rules keep
HISTORY_SECONDS = 400
# wave 1's Redis per host at that retention (plain msgpack entries, MEMORY USAGE)
WAVE1_REDIS_PER_HOST = 39.9e6
# the simulator seed of the Redis figures: never one scripts/train_dict.sh trains on
MEASURE_SEED = "7"
LINE = re.compile(r"interval: read (\d+) snapshot\(s\) in ([\d.]+) ms, evaluated (\d+) rule\(s\) "
                  r"over (\d+) host\(s\) in ([\d.]+) ms")


class Receiver(http.server.BaseHTTPRequestHandler):
    count = 0
    lock = threading.Lock()
    last = 0.0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with Receiver.lock:
            Receiver.count += 1
            Receiver.last = time.time()
        self.send_response(200)
        self.end_headers()

    def log_message(self, *a):
        pass


def redis_cmd(sock, *args):
    p = subprocess.run(["redis-cli", "-s", sock, "--raw"] + [str(a) for a in args],
                       capture_output=True, text=True, check=True)
    return p.stdout.strip()


def start_redis(d):
    sock = os.path.join(d, "redis.sock")
    p = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock, "--save", "",
                          "--appendonly", "no", "--dir", d],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    return p, sock


def host_name(i, per_rack=20, racks_per_switch=4):
    rack = i // per_rack
    return "sw%03d-r%04d-h%02d" % (rack // racks_per_switch, rack, i % per_rack)


def measure_rules(out, sock, d, hosts, history, intervals):
    """The shipped rules over `history` seconds of the fleet, written at once
    (faultline sim --ends-now), then replayed on the engine's own clock
    over the last `intervals` seconds: each replayed interval reads exactly
    one new snapshot per host and evaluates every rule, which is a live
    daemon's steady state without depending on the simulator keeping up
    with the wall clock.  Returns per-interval timings and the engine's
    peak memory."""
    url = "unix://" + sock
    tl = os.path.join(d, "timeline.json")
    subprocess.run([os.path.join(out, "faultline"), "sim", "--redis", url, "--hosts", str(hosts),
                    "--hosts-per-rack", "20", "--racks-per-switch", "4", "--duration",
                    "%ds" % history, "--ends-now", "--no-profiles", "--timeline", tl],
                   check=True, stdout=subprocess.DEVNULL,
                   stderr=open(os.path.join(d, "sim.log"), "w"))
    with open(tl) as f:
        t = json.load(f)
    start = t["end_ms"] - intervals * 1000
    p = subprocess.Popen([os.path.join(out, "faultline-rules"), "--rules",
                          "etc/rules/faultline.yaml", "--redis", url, "--replay",
                          "%d,%d" % (start, t["end_ms"]), "--stale", "30s", "--log-level",
                          "debug"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit("fleet_scale: faultline-rules failed:\n" + err[-2000:])
    rows = [tuple(float(x) for x in m.groups()) for m in LINE.finditer(err)]
    if len(rows) < 4:
        sys.exit("fleet_scale: faultline-rules logged no intervals:\n" + err[-2000:])
    steady = rows[2:]   # the first reads the history before the replay's start
    ev = [r[4] for r in steady]
    rd = [r[1] for r in steady]
    return {"eval_ms": statistics.median(ev), "eval_max_ms": max(ev),
            "read_ms": statistics.median(rd), "rules": int(rows[-1][2]),
            "fresh": statistics.mean([r[0] for r in steady]) / hosts,
            "rules_rss_mb": usage.ru_maxrss / 1024}


def raw_entries(sock, key, count, field=b"d"):
    """The field (d: a snapshot) of a stream's first count entries, as Redis holds them."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    f = s.makefile("rb")

    def parse():
        line = f.readline()
        t, rest = line[:1], line[1:-2]
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [parse() for _ in range(n)]
        if t == b"$":
            n = int(rest)
            return None if n < 0 else f.read(n + 2)[:-2]
        return rest
    args = [b"XRANGE", key.encode(), b"-", b"+", b"COUNT", str(count).encode()]
    s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in args))
    res = parse() or []
    s.close()
    return [dict(zip(fl[::2], fl[1::2]))[field] for _, fl in res]


def key_bytes(sock, key):
    """What Redis holds for key: used_memory before and after deleting it.
    (MEMORY USAGE estimates a stream from its nodes' listpacks; this is the
    allocator's own count, node slack and all.)"""
    before = int(re.search(r"used_memory:(\d+)", redis_cmd(sock, "INFO", "memory")).group(1))
    redis_cmd(sock, "DEL", key)
    after = int(re.search(r"used_memory:(\d+)", redis_cmd(sock, "INFO", "memory")).group(1))
    return before - after


CHUNK_LINE = re.compile(r"(\d+) chunks: (\d+) points, ([\d.]+) bytes a point, decoded in (\d+) ns")


def measure_chunks(out, sock, d, hosts, tier, overhead=None):
    """A rollup tier's chunks (model/chunk.h) for hosts: their points, blob
    bytes and decode ns per point (bench/codec_cost --chunks), Redis's bytes
    per chunk beyond its blob (what deleting the chunk streams frees, less
    the blobs; given as overhead where the streams are too small for that
    difference to stand above the allocator's noise), and so Redis bytes
    per point; and the tier's entries (the current span's): bytes each."""
    files = []
    for i in hosts:
        key = "fl:{%s}:%s:chunks" % (host_name(i), tier)
        for k, blob in enumerate(raw_entries(sock, key, 1000, b"c")):
            files.append(os.path.join(d, "%s-%d-%d" % (tier, i, k)))
            with open(files[-1], "wb") as f:
                f.write(blob)
    blobs = sum(os.path.getsize(f) for f in files)
    r = subprocess.run([os.path.join(out, "bench", "codec_cost"), "--chunks"] + files,
                       capture_output=True, text=True, check=True)
    m = CHUNK_LINE.search(r.stdout)
    nchunks, points = int(m.group(1)), int(m.group(2))
    if overhead is None:
        redis = sum(key_bytes(sock, "fl:{%s}:%s:chunks" % (host_name(i), tier)) for i in hosts)
        overhead = (redis - blobs) / nchunks
    entries = sum(int(redis_cmd(sock, "XLEN", "fl:{%s}:%s" % (host_name(i), tier)) or 0)
                  for i in hosts)
    ebytes = sum(key_bytes(sock, "fl:{%s}:%s" % (host_name(i), tier)) for i in hosts)
    return {"per_point": (blobs + overhead * nchunks) / points, "overhead": overhead,
            "blob_per_point": blobs / points, "decode_ns": int(m.group(4)), "chunks": nchunks,
            "points": points, "per_entry": ebytes / entries if entries > 100 else 0}


def measure_memory(out, d, compressed):
    """Bytes per entry of each tier, from 20 simulated hosts with 3 h of history
    (enough entries that a stream's fixed overhead is amortised), projected to
    a full retention window per host; compressed False writes the entries
    plain (FAULTLINE_WIRE_COMPRESS=0; still version 2: deltas and compact
    numbers).  With compressed, also the cost of decoding an entry
    (bench/codec_cost)."""
    srv, sock = start_redis(d)
    env = dict(os.environ)
    if not compressed:
        env["FAULTLINE_WIRE_COMPRESS"] = "0"
    try:
        subprocess.run([os.path.join(out, "faultline"), "sim", "--redis", "unix://" + sock,
                        "--hosts", "20", "--hosts-per-rack", "20", "--racks-per-switch", "4",
                        "--duration", "3h", "--ends-now", "--seed", MEASURE_SEED], check=True,
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        costs = {}
        if compressed:
            for tier in ("s1", "s60"):
                files = []
                for k, blob in enumerate(raw_entries(sock, "fl:{%s}:%s" % (host_name(0), tier),
                                                     20)):
                    files.append(os.path.join(d, "%s-%d" % (tier, k)))
                    with open(files[-1], "wb") as f:
                        f.write(blob)
                r = subprocess.run([os.path.join(out, "bench", "codec_cost")] + files,
                                   capture_output=True, text=True, check=True)
                costs[tier] = r.stdout.strip()
        per_entry = {}
        chunks = {}
        if compressed:
            # ended hours are chunks (store/compaction.h): bytes per minute in them
            chunks["s60"] = measure_chunks(out, sock, d, range(20), "s60")
        for tier in ("s1", "s60", "p10"):
            sizes, entries = 0, 0
            for i in range(20):
                key = "fl:{%s}:%s" % (host_name(i), tier)
                entries += int(redis_cmd(sock, "XLEN", key) or 0)
                sizes += key_bytes(sock, key)
            per_entry[tier] = sizes / entries if entries else 0
        # (the simulator keeps its 1 s snapshots as entries, for replays:
        # a real probe's minute chunks are measured in measure_real_probe)
        # an hourly rollup holds the same series as a minute one
        per_entry["s3600"] = per_entry["s60"]
        drives = statistics.mean(key_bytes(sock, "fl:{%s}:drives" % host_name(i))
                                 for i in range(20))
    finally:
        srv.terminate()
        srv.wait()
    if compressed:
        # hours become a chunk a day: two hosts over two days and more
        srv, sock = start_redis(d)
        try:
            subprocess.run([os.path.join(out, "faultline"), "sim", "--redis", "unix://" + sock,
                            "--hosts", "2", "--duration", "50h", "--ends-now",
                            "--seed", MEASURE_SEED], check=True, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            chunks["s3600"] = measure_chunks(out, sock, d, range(2), "s3600",
                                             chunks["s60"]["overhead"])
        finally:
            srv.terminate()
            srv.wait()
    proj = {t: per_entry[t] * RETENTION[t] for t in RETENTION}
    for t, span in (("s1", 60), ("s60", 60), ("s3600", 24)):
        if t in chunks:
            # at most a span of entries waits to become a chunk; the rest are chunks
            # (the hour tier's few entries: sized like a minute's, as above)
            per_entry[t] = chunks[t]["per_entry"] or per_entry["s60" if t == "s3600" else t]
            proj[t] = per_entry[t] * span + chunks[t]["per_point"] * (RETENTION[t] - span)
    proj["drives"] = drives
    return {"per_entry": per_entry, "projected": proj, "costs": costs, "chunks": chunks}


def prom_query(port, q):
    import urllib.parse
    import urllib.request
    url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (port, urllib.parse.quote(q))
    with urllib.request.urlopen(url, timeout=10) as r:
        res = json.load(r)["data"]["result"]
    return float(res[0]["value"][1]) if res else 0.0


def measure_real_probe(out, d, seconds):
    """A real probe for `seconds` into its own Redis, its 1 s tier remote-
    written to a real Prometheus: Redis bytes per entry of each tier (what
    deleting the stream frees) and Prometheus' bytes for the same seconds
    (its head written out as a block by the admin snapshot API)."""
    import urllib.request
    srv, sock = start_redis(d)
    pport = free_port()
    pdir = os.path.join(d, "prom")
    os.makedirs(pdir)
    with open(os.path.join(pdir, "prometheus.yml"), "w") as f:
        f.write("global: {scrape_interval: 1m}\n")
    prom = subprocess.Popen(["prometheus", "--config.file=" + os.path.join(pdir, "prometheus.yml"),
                             "--storage.tsdb.path=" + os.path.join(pdir, "data"),
                             "--web.listen-address=127.0.0.1:%d" % pport,
                             "--web.enable-remote-write-receiver", "--web.enable-admin-api"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cfg = os.path.join(d, "probe.yaml")
    with open(cfg, "w") as f:
        f.write("remote_write:\n  url: http://127.0.0.1:%d/api/v1/write\n  tier: 1s\n" % pport)
    probe = None
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % pport, timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        probe = subprocess.Popen([os.path.join(out, "faultline-probe"), "--config", cfg,
                                  "--redis", "unix://" + sock, "--host", "real-1",
                                  "--metrics-addr", "", "--log-level", "error"])
        time.sleep(seconds)
        probe.terminate()
        probe.wait(timeout=30)
        sent = prom_query(pport, 'faultline_probe_remote_write_samples_total{outcome="sent"}')
        failed = prom_query(pport, 'sum(faultline_probe_remote_write_samples_total'
                                   '{outcome=~"failed|dropped"})')
        req = urllib.request.Request("http://127.0.0.1:%d/api/v1/admin/tsdb/snapshot" % pport,
                                     method="POST")
        with urllib.request.urlopen(req, timeout=60) as r:
            snap = json.load(r)["data"]["name"]
        sdir = os.path.join(pdir, "data", "snapshots", snap)
        pbytes, psamples, pseries = 0, 0, 0
        for block in os.listdir(sdir):
            bdir = os.path.join(sdir, block)
            for root, _, names in os.walk(bdir):
                pbytes += sum(os.path.getsize(os.path.join(root, n)) for n in names)
            with open(os.path.join(bdir, "meta.json")) as f:
                st = json.load(f)["stats"]
            psamples += st.get("numSamples", 0)
            pseries += st.get("numSeries", 0)
        tiers = {}
        for tier in ("s1", "s60", "p10"):
            key = "fl:{real-1}:%s" % tier
            n = int(redis_cmd(sock, "XLEN", key) or 0)
            blobs = sum(len(b) for b in raw_entries(sock, key, n + 1, b"d")) if n else 0
            # too few entries for used_memory's difference to stand above the
            # allocator's noise: Redis's own count of the stream, every node sampled
            used = int(redis_cmd(sock, "MEMORY", "USAGE", key, "SAMPLES", "0") or 0)
            tiers[tier] = (n, used / n if n else 0, blobs / n if n else 0)
        # the 1 s tier's ended minutes, as chunks: Redis bytes per point in them
        ckey = "fl:{real-1}:s1:chunks"
        files = []
        for k, blob in enumerate(raw_entries(sock, ckey, 1000, b"c")):
            files.append(os.path.join(d, "real-s1-%d" % k))
            with open(files[-1], "wb") as f:
                f.write(blob)
        if files:
            r = subprocess.run([os.path.join(out, "bench", "codec_cost"), "--chunks"] + files,
                               capture_output=True, text=True, check=True)
            m = CHUNK_LINE.search(r.stdout)
            used = int(redis_cmd(sock, "MEMORY", "USAGE", ckey, "SAMPLES", "0") or 0)
            tiers["s1 chunks"] = (int(m.group(2)), used / int(m.group(2)), 0)
        # what faultline usage measures and projects for this host at the defaults
        r = subprocess.run([os.path.join(out, "faultline"), "usage", "--json", "--redis",
                            "unix://" + sock, "real-1"], capture_output=True, text=True,
                           check=True)
        usage = json.loads(r.stdout)[0]
    finally:
        if probe and probe.poll() is None:
            probe.kill()
        prom.terminate()
        prom.wait()
        srv.terminate()
        srv.wait()
    return {"seconds": seconds, "tiers": tiers, "usage": usage, "sent": sent, "failed": failed,
            "prom_bytes": pbytes, "prom_samples": psamples, "prom_series": pseries}


def measure_history(out, d, hosts, intervals):
    """The rules engine's history with the shipped rules' full window (keep_ms:
    the longest range they read, 5 min; baselines read the 1-minute tier when
    they judge): `hosts` hosts written for HISTORY_SECONDS, the last
    `intervals` replayed; the engine's own count of what its history holds
    (columns_bytes) and its peak resident memory."""
    srv, sock = start_redis(d)
    try:
        seconds = HISTORY_SECONDS
        tl = os.path.join(d, "timeline.json")
        subprocess.run([os.path.join(out, "faultline"), "sim", "--redis", "unix://" + sock,
                        "--hosts", str(hosts), "--hosts-per-rack", "20", "--racks-per-switch",
                        "4", "--duration", "%ds" % seconds, "--ends-now", "--no-profiles",
                        "--timeline", tl], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        with open(tl) as f:
            end = json.load(f)["end_ms"]
        p = subprocess.Popen([os.path.join(out, "faultline-rules"), "--rules",
                              "etc/rules/faultline.yaml", "--redis", "unix://" + sock,
                              "--replay", "%d,%d" % (end - intervals * 1000, end), "--stale",
                              "30s"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
        err = p.stderr.read()
        _, status, usage = os.wait4(p.pid, 0)
        m = re.search(r"history held: (\d+) point\(s\) of (\d+) host\(s\) in ([\d.]+) MB, "
                      r"([\d.]+) KB per host", err)
        if status != 0 or not m:
            sys.exit("fleet_scale: faultline-rules (history) failed:\n" + err[-2000:])
        return {"hosts": hosts, "points": int(m.group(1)) / max(int(m.group(2)), 1),
                "kb_per_host": float(m.group(4)), "rss_kb_per_host": usage.ru_maxrss / hosts}
    finally:
        srv.terminate()
        srv.wait()


def used_per_host(sock, hosts):
    used = int(re.search(r"used_memory:(\d+)", redis_cmd(sock, "INFO", "memory")).group(1))
    return used / hosts


def measure_alerter(out, sock, d, hosts, alerts):
    url = "unix://" + sock
    n = min(alerts, hosts)
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(now - 60))
    with open(os.path.join(d, "alerts.txt"), "w") as f:
        for i in range(n):
            h = host_name(i)
            ev = {"status": "firing", "fingerprint": "%016x" % (i + 1),
                  "labels": {"alertname": "FleetScale", "severity": "page", "host": h},
                  "annotations": {"summary": "bench"}, "startsAt": stamp, "generatorURL": "",
                  "faultline": {"hosts": [h], "total_hosts": 1, "value": 1,
                                "runbook": "", "evidence": ["cpu_stacks"]}}
            f.write("XADD fl:alerts * e %s\n" % json.dumps(json.dumps(ev)))
    subprocess.run("redis-cli -s %s < %s > /dev/null" % (sock, os.path.join(d, "alerts.txt")),
                   shell=True, check=True)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    Receiver.count = 0
    cfg = os.path.join(d, "alerter.yaml")
    with open(cfg, "w") as f:
        f.write("redis: %s\nconsumer: bench\ngroup_wait: 0s\ngroup_interval: 1s\n"
                "receivers:\n  - name: rx\n    url: http://127.0.0.1:%d/\n    max_concurrency: 8\n"
                "routes:\n  - receiver: rx\n    group_by: [alertname, host]\n"
                % (url, srv.server_address[1]))
    t0 = time.time()
    p = subprocess.Popen([os.path.join(out, "faultline-alerter"), "--config", cfg,
                          "--log-level", "warn"], stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(d, "alerter.log"), "w"))
    while Receiver.count < n and time.time() - t0 < 600:
        time.sleep(0.05)
    dt = (Receiver.last or time.time()) - t0
    p.terminate()
    p.wait()
    srv.shutdown()
    if Receiver.count < n:
        sys.exit("fleet_scale: the alerter delivered %d of %d notifications in 600 s"
                 % (Receiver.count, n))
    return {"alerts": n, "per_s": n / dt, "seconds": dt}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", default="build")
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--history", type=int, default=150, help="seconds of history written")
    ap.add_argument("--intervals", type=int, default=30, help="intervals replayed and timed")
    ap.add_argument("--alerts", type=int, default=2000)
    ap.add_argument("--real-seconds", type=int, default=300,
                    help="seconds a real probe runs for the real-host step (0: skip)")
    ap.add_argument("--history-hosts", type=int, default=500,
                    help="hosts for the rules-history measurement (%d s each)" % HISTORY_SECONDS)
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    if not shutil.which("redis-server"):
        sys.exit("fleet_scale: redis-server not found")
    res = []
    print("fleet_scale: Redis bytes per entry (20 hosts, 3 h of history), plain and "
          "compressed ...", flush=True)
    mems = []
    for compressed in (False, True):
        d = tempfile.mkdtemp(prefix="fl-scale-mem-")
        mems.append(measure_memory(out, d, compressed))
        shutil.rmtree(d, ignore_errors=True)
    plain, mem = mems
    real = None
    if a.real_seconds and os.geteuid() == 0 and shutil.which("prometheus"):
        print("fleet_scale: a real probe on this host for %d s, remote-writing its 1 s tier "
              "to Prometheus ..." % a.real_seconds, flush=True)
        d = tempfile.mkdtemp(prefix="fl-scale-real-")
        real = measure_real_probe(out, d, a.real_seconds)
        shutil.rmtree(d, ignore_errors=True)
    print("fleet_scale: rules history at the shipped rules' window (%d hosts, %d s) ..."
          % (a.history_hosts, HISTORY_SECONDS), flush=True)
    d = tempfile.mkdtemp(prefix="fl-scale-hist-")
    hist = measure_history(out, d, a.history_hosts, 20)
    shutil.rmtree(d, ignore_errors=True)
    for hosts in (int(x) for x in a.sizes.split(",")):
        d = tempfile.mkdtemp(prefix="fl-scale-")
        srv, sock = start_redis(d)
        try:
            print("fleet_scale: %d hosts ..." % hosts, flush=True)
            r = {"hosts": hosts}
            r.update(measure_rules(out, sock, d, hosts, a.history, a.intervals))
            r["used_per_host"] = used_per_host(sock, hosts)
            r["alerter"] = measure_alerter(out, sock, d, hosts, a.alerts)
            res.append(r)
        finally:
            srv.terminate()
            srv.wait()
            shutil.rmtree(d, ignore_errors=True)
    p, pp = mem["projected"], plain["projected"]
    print("\nfleet_scale: Redis per host at full retention (DESIGN.md tiers), measured per entry;"
          " (seed %s, bytes Redis frees per key); plain = FAULTLINE_WIRE_COMPRESS=0" % MEASURE_SEED)
    print("  %-6s %9s %11s %9s %9s %10s %13s %7s" % ("tier", "entries", "plain B/e", "B/entry",
                                                     "B/chunked", "plain MB", "MB per host",
                                                     "ratio"))
    for t in ("s1", "s60", "s3600", "p10"):
        ch = mem["chunks"].get(t)
        print("  %-6s %9d %11.0f %9.0f %9s %10.2f %13.2f %6.2fx" %
              (t, RETENTION[t], plain["per_entry"][t], mem["per_entry"][t],
               "%.0f" % ch["per_point"] if ch else "-", pp[t] / 1e6, p[t] / 1e6,
               p[t] / pp[t] if pp[t] else 0))
    print("  %-6s %9s %11s %9s %10.3f %13.3f" % ("drives", "", "", "", pp["drives"] / 1e6,
                                                p["drives"] / 1e6))
    total, ptotal = sum(p.values()), sum(pp.values())
    print("  total %.1f MB per host (plain %.1f MB: %.2fx; wave 1's layout %.1f MB: %.1fx "
          "smaller; target <= 4 MB); x10,000 hosts = %.0f GB" %
          (total / 1e6, ptotal / 1e6, total / ptotal, WAVE1_REDIS_PER_HOST / 1e6,
           WAVE1_REDIS_PER_HOST / total, total * 1e4 / 1e9))
    print("  (B/chunked: Redis bytes per point of an ended span, held in chunks, %.0f bytes a"
          " chunk beside its blob; at most a span's points wait as entries, B/entry each)"
          % mem["chunks"]["s60"]["overhead"])
    s60c = mem["chunks"]["s60"]
    print("  s60: %.1f bytes per series per minute in chunks (%d series; a gauge keeps last, min,"
          " max, sum, n) beside Prometheus' ~1.3 bytes per sample; as entries %.1f" %
          (s60c["per_point"] / SERIES_PER_ENTRY, SERIES_PER_ENTRY,
           mem["per_entry"]["s60"] / SERIES_PER_ENTRY))
    for t, c in sorted(mem["chunks"].items()):
        print("  decode %s chunks: %d chunks, %d points, %.0f bytes a point, %d ns a point" %
              (t, c["chunks"], c["points"], c["blob_per_point"], c["decode_ns"]))
    for t, line in sorted(mem["costs"].items()):
        print("  decode %s: %s" % (t, line))
    if real:
        t = real["tiers"]
        n1 = t["s1"][0]
        per_s = real["sent"] / n1 if n1 else 0
        print("\nfleet_scale: a real probe (this host, %d s, defaults), Redis bytes per entry "
              "as written, beside the simulator's" % real["seconds"])
        print("  %-6s %9s %12s %12s %14s %14s" % ("tier", "entries", "real B/e", "sim B/e",
                                                 "real MB/host", "sim MB/host"))
        for tier in ("s1", "s60", "p10"):
            n, b, blob = t[tier]
            print("  %-6s %9d %12.0f %12.0f %14.2f %14.2f   (blob %.0f B)" %
                  (tier, n, b, mem["per_entry"][tier], b * RETENTION[tier] / 1e6,
                   p[tier] / 1e6, blob))
        print("  (real B/e: MEMORY USAGE of the stream per entry; real MB/host: all of it as "
              "entries at the default retention, s1 %d, s60 %d, p10 %d; with chunks, as "
              "faultline usage projects it below)" % (RETENTION["s1"], RETENTION["s60"],
                                                      RETENTION["p10"]))
        if real["prom_samples"] and n1:
            pb_s = real["prom_bytes"] / real["seconds"]
            print("  the same host's 1 s tier in Prometheus' TSDB (remote write, %d series, %d "
                  "samples, %d failed or dropped): %.0f bytes a host-second (%.2f a sample) "
                  "against faultline's s1 %.0f (%.2f a sample of the %.0f a second it sent): "
                  "%.2fx" %
                  (real["prom_series"], real["prom_samples"], real["failed"], pb_s,
                   real["prom_bytes"] / real["prom_samples"], t["s1"][1],
                   t["s1"][1] / per_s if per_s else 0, per_s, t["s1"][1] / pb_s))
            if "s1 chunks" in t:
                print("  an ended minute of it in a chunk: %.0f bytes a host-second, %.2fx "
                      "Prometheus'" % (t["s1 chunks"][1], t["s1 chunks"][1] / pb_s))
        u = real["usage"]
        print("\nfleet_scale: the real host at the default retention, as `faultline usage` "
              "projects it (the span under way as entries, the rest as chunks; basis e: no "
              "chunk yet, all as entries, an upper bound)")
        for st in u["streams"]:
            print("  %-9s %8.3f MB  (%d entries, %d chunks of %d points; basis %s)" %
                  (st["stream"], st["bytes_at_retention"] / 1e6, st["entries"], st["chunks"],
                   st["chunk_points"], st["basis"]))
        print("  %-9s %8.3f MB at the retention (%.3f MB in Redis after %d s)" %
              ("total", u["bytes_at_retention"] / 1e6, u["bytes_now"] / 1e6, real["seconds"]))
        print("  (Prometheus holds each histogram as its %d classic buckets; faultline's s1 "
              "keeps the fleet layout's, 16 per power of two.  A block of %d s carries its "
              "index whole, which a 2 h block spreads over 24x the samples)" %
              (26, real["seconds"]))
    w1 = WAVE1_BYTES_PER_SNAPSHOT * WAVE1_POINTS
    print("\nfleet_scale: rules history, shipped rules, %d hosts x %d s (the engine keeps "
          "%.0f points per host: every second of 5 min; baselines read the 1-minute tier)" %
          (hist["hosts"], HISTORY_SECONDS, hist["points"]))
    print("  history held %.1f KB per host (columns), peak RSS %.1f KB per host; wave 1's "
          "snapshot chain: %.0f KB per host (%d points for its baselines: %.0fx smaller; "
          "the same %.0f points %.0f KB: %.1fx; target <= 100 KB)" %
          (hist["kb_per_host"], hist["rss_kb_per_host"], w1 / 1e3, WAVE1_POINTS,
           w1 / 1e3 / hist["kb_per_host"], hist["points"],
           WAVE1_BYTES_PER_SNAPSHOT * hist["points"] / 1e3,
           WAVE1_BYTES_PER_SNAPSHOT * hist["points"] / 1e3 / hist["kb_per_host"]))
    print("\nfleet_scale: shipped rules every 1 s over a live simulated fleet; alerter delivery")
    print("  %7s %5s %12s %12s %10s %10s %12s %12s %12s" %
          ("hosts", "rules", "eval p50 ms", "eval max ms", "read ms", "new/host",
           "rules MB", "redis KB/h", "alerts/s"))
    for r in res:
        print("  %7d %5d %12.1f %12.1f %10.1f %10.2f %12.0f %12.1f %12.0f" %
              (r["hosts"], r["rules"], r["eval_ms"], r["eval_max_ms"], r["read_ms"], r["fresh"],
               r["rules_rss_mb"], r["used_per_host"] / 1e3, r["alerter"]["per_s"]))
    print("  (new/host: snapshots read per host per interval; rules MB: faultline-rules' peak "
          "resident memory holding %d s of history; redis KB/h: used_memory per host)" %
          a.history)
    if len(res) > 1:
        lo, hi = res[0], res[-1]
        g = hi["hosts"] / lo["hosts"]
        print("  growth %dx hosts: rules evaluation %.1fx, read %.1fx, Redis per host %.2fx, "
              "alerter rate %.2fx" %
              (g, hi["eval_ms"] / lo["eval_ms"], hi["read_ms"] / max(lo["read_ms"], 1e-9),
               hi["used_per_host"] / lo["used_per_host"],
               hi["alerter"]["per_s"] / lo["alerter"]["per_s"]))
    hi = res[-1]
    print("  at %d hosts an interval (read + evaluate) takes %.0f%% of the 1 s budget on one core"
          % (hi["hosts"], (hi["eval_ms"] + hi["read_ms"]) / 10))


if __name__ == "__main__":
    main()
