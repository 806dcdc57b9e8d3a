#!/usr/bin/env python3
"""bench/query_latency.py OUT - faultline-web against a real Prometheus on the
same samples: the same PromQL, timed side by side.

The fleet: `faultline sim --hosts N --duration Dm --ends-now --chunked` writes
N simulated hosts' 1 s snapshots into a redis-server of this run's own, laid
out as probes lay them out (ended minutes as chunks, the minute under way as
entries), and faultline-web serves them.  The same samples go to Prometheus: they are read
back through faultline-web's own API (each series' value at every second),
written as OpenMetrics, turned into TSDB blocks by `promtool tsdb
create-blocks-from openmetrics`, and served by `prometheus` (no scrape jobs).
Then each query is asked of both, alternately, --runs times, each server over
one kept-alive connection (as a Grafana data source asks), and the median
wall times are compared (faultline / Prometheus: under 1 is faster):

  range    one host's CPU over the whole duration at 1 s
  fleet    sum by (rack) (rate(...[1m])) over every host, at the end
  switch   histogram_quantile(0.99, ...) of one switch's block latency, at the end
  past     the fleet query 15 minutes before the end (with --minutes 20 or more):
           older than faultline-web's --hot, so every host's chunks are read

The answers are compared too (they must agree, or the timing means nothing).
Only the samples a query reads are exported: the counter of every host over
the last 5 minutes, one host's CPU, one switch's latency buckets over the
last 5 minutes.
"""
import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from benchlib import free_port


_conns = {}


def get(port, path, args):
    """GET path?args on port over a kept-alive connection (as Grafana's data
    source asks: one connection, many queries), timed; (seconds, JSON)."""
    url = "%s?%s" % (path, urllib.parse.urlencode(args))
    for attempt in (0, 1):
        c = _conns.get(port)
        if c is None:
            c = _conns[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        try:
            t0 = time.monotonic()
            c.request("GET", url)
            r = c.getresponse()
            body = r.read()
            return time.monotonic() - t0, json.loads(body)
        except (http.client.HTTPException, ConnectionError, OSError):
            c.close()
            del _conns[port]	# the server closed it: once more on a new one
            if attempt:
                raise


def wait_ready(port, what, proc):
    for _ in range(300):
        if proc.poll() is not None:
            sys.exit("%s exited (%d)" % (what, proc.returncode))
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % port, timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            pass
        time.sleep(0.2)
    sys.exit("%s did not become ready" % what)


def om_value(v):
    return {"NaN": "NaN", "+Inf": "+Inf", "-Inf": "-Inf"}.get(v, v)


def export(port, query, start, end, out):
    """query's matrix over [start, end] at 1 s, as OpenMetrics sample lines."""
    n = 0
    t = start
    while t <= end:	# 11,000 steps a request at most
        stop = min(end, t + 10000)
        _, r = get(port, "/api/v1/query_range",
                   {"query": query, "start": t, "end": stop, "step": 1})
        if r["status"] != "success":
            sys.exit("export %s: %s" % (query, r))
        for s in r["data"]["result"]:
            m = dict(s["metric"])
            name = m.pop("__name__")
            labels = ",".join('%s="%s"' % (k, m[k]) for k in sorted(m))
            for ts, v in s["values"]:
                out.setdefault((name, labels), []).append("%s{%s} %s %s" %
                                                          (name, labels, om_value(v), ts))
                n += 1
        t = stop + 1
    return n


def hot_hosts(port):
    """faultline-web's in-memory tail: (hosts, bytes) from its /metrics."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        m = dict(l.split()[:2] for l in r.read().decode().splitlines()
                 if l.startswith("faultline_web_hot_"))
    return int(float(m.get("faultline_web_hot_hosts", "0"))), float(m.get("faultline_web_hot_bytes", "0"))


def metrics(port, prefix):
    """faultline-web's /metrics samples named prefix...: {rest of the name: value}."""
    time.sleep(1.2)     # /metrics is made once a second
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        return {l.split()[0][len(prefix):]: float(l.split()[1])
                for l in r.read().decode().splitlines() if l.startswith(prefix)}


def served(r, end):
    """How faultline-web answered: from memory, Redis, or Redis up to where the tail begins."""
    f = r.get("faultline", {})
    if f.get("memory"):
        return "memory"
    if "memory_from" in f:
        return "Redis to -%.0f s, then memory" % (end - float(f["memory_from"]))
    return "Redis"


def answer(r):
    d = r["data"]
    if d["resultType"] == "matrix":
        return sorted((json.dumps(s["metric"], sort_keys=True), len(s["values"]),
                       float(s["values"][-1][1])) for s in d["result"])
    return sorted((json.dumps(s["metric"], sort_keys=True), float(s["value"][1]))
                  for s in d["result"])


def agree(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x[:-1] != y[:-1]:
            return False
        if abs(x[-1] - y[-1]) > 0.01 * max(abs(x[-1]), abs(y[-1]), 1e-12):
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", default="build")
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--minutes", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--hot", default="5m",
                    help="faultline-web's --hot (a large fleet takes minutes to set up: a "
                         "longer tail keeps the queries at the end in memory meanwhile)")
    a = ap.parse_args()
    for tool in ("redis-server", "prometheus", "promtool"):
        if not shutil.which(tool):
            sys.exit("query_latency: %s is not installed (make deps)" % tool)
    out = os.path.abspath(a.out)
    tmp = tempfile.mkdtemp(prefix="fl-qlat-")
    procs = []
    try:
        sock = os.path.join(tmp, "redis.sock")
        procs.append(subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock,
                                       "--save", "", "--appendonly", "no", "--dir", tmp],
                                      stdout=subprocess.DEVNULL))
        for _ in range(50):
            if os.path.exists(sock):
                break
            time.sleep(0.1)
        url = "unix://" + sock
        print("query_latency: simulating %d hosts for %d min..." % (a.hosts, a.minutes),
              flush=True)
        t0 = time.monotonic()
        subprocess.run([out + "/faultline", "sim", "--hosts", str(a.hosts), "--duration",
                        "%dm" % a.minutes, "--ends-now", "--no-profiles", "--chunked",
                        "--redis", url],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print("query_latency: written in %.0f s" % (time.monotonic() - t0), flush=True)
        host = subprocess.run(["redis-cli", "-s", sock, "--scan", "--pattern", "fl:{*}:host"],
                              capture_output=True, text=True).stdout.split()[0][4:-6]
        newest = subprocess.run(["redis-cli", "-s", sock, "XREVRANGE", "fl:{%s}:s1" % host,
                                 "+", "-", "COUNT", "1"],
                                capture_output=True).stdout.split()[0].decode()
        end = int(newest.split("-")[0]) // 1000
        start = end - a.minutes * 60 + 60
        switch = host.split("-")[0]
        wport, pport = free_port(), free_port()
        procs.append(subprocess.Popen([out + "/faultline-web", "--redis", url, "--listen",
                                       "127.0.0.1:%d" % wport, "--retention",
                                       "s1=%dm" % (a.minutes + 60), "--log-level", "warn",
                                       "--hot", a.hot]))
        wait_ready(wport, "faultline-web", procs[-1])
        # the same daemon without the chunk cache: what every ask costs cold
        uport = free_port()
        procs.append(subprocess.Popen([out + "/faultline-web", "--redis", url, "--listen",
                                       "127.0.0.1:%d" % uport, "--retention",
                                       "s1=%dm" % (a.minutes + 60), "--log-level", "warn",
                                       "--hot", a.hot, "--query.chunk-cache-mb", "0"]))
        wait_ready(uport, "faultline-web (uncached)", procs[-1])
        # the tail's first read (every host's last --hot) is its start-up, not a query's
        # (a large fleet's first read takes a while: up to a second per 50 hosts)
        deadline = time.monotonic() + max(60, a.hosts / 50)
        while time.monotonic() < deadline:
            if (hot_hosts(wport)[0] >= a.hosts and hot_hosts(uport)[0] >= a.hosts and
                    all(get(p, "/api/v1/query",
                            {"query": "faultline_tcp_in_csum_errors_total{host=\"%s\"}" % host,
                             "time": end})[1]
                        .get("faultline", {}).get("memory") for p in (wport, uport))):
                break
            time.sleep(0.5)
        queries = [
            ("range", "faultline_host_cpu_utilization_ratio{host=\"%s\"}" % host,
             {"start": start, "end": end, "step": 1}),
            ("fleet", "sum by (rack) (rate(faultline_tcp_in_csum_errors_total[1m]))",
             {"time": end}),
            ("switch", "histogram_quantile(0.99, sum by (le) (rate("
             "faultline_block_latency_seconds_bucket{switch=\"%s\"}[1m])))" % switch,
             {"time": end}),
        ]
        past = end - 900 if a.minutes >= 20 else 0
        if past:
            # older than --hot: every host's chunks, read from Redis
            queries.append(("past", "sum by (rack) (rate(faultline_tcp_in_csum_errors_total[1m]))",
                            {"time": past}))
        # the same samples into Prometheus
        t0 = time.monotonic()
        series = {}
        n = 0
        if past:    # first: a series' samples go in time order
            n += export(wport, "faultline_tcp_in_csum_errors_total", past - 300, past, series)
        n += export(wport, "faultline_tcp_in_csum_errors_total", end - 300, end, series)
        n += export(wport, "faultline_host_cpu_utilization_ratio{host=\"%s\"}" % host,
                    start - 60, end, series)
        n += export(wport, "faultline_block_latency_seconds_bucket{switch=\"%s\"}" % switch,
                    end - 300, end, series)

        om = os.path.join(tmp, "fleet.om")
        with open(om, "w") as f:
            for k in sorted(series):
                f.write("\n".join(series[k]) + "\n")
            f.write("# EOF\n")
        tsdb = os.path.join(tmp, "tsdb")
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", om, tsdb],
                       check=True, stdout=subprocess.DEVNULL)
        print("query_latency: %d samples of %d series exported to Prometheus in %.0f s" %
              (n, len(series), time.monotonic() - t0), flush=True)
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global: {scrape_interval: 1s}\nscrape_configs: []\n")
        procs.append(subprocess.Popen(["prometheus", "--config.file=" + cfg,
                                       "--storage.tsdb.path=" + tsdb,
                                       "--storage.tsdb.retention.time=30d",
                                       "--web.listen-address=127.0.0.1:%d" % pport],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_ready(pport, "prometheus", procs[-1])
        print("\n%-7s %10s %10s %10s %8s %8s  %s" % ("query", "faultline", "uncached",
                                                   "prometheus", "ratio", "uncached",
                                                   "answers"))
        for name, q, args in queries:
            path = "/api/v1/query_range" if "step" in args else "/api/v1/query"
            fl, un, pm = [], [], []
            for _ in range(a.runs):
                t, rf = get(wport, path, dict(args, query=q))
                fl.append(t)
                t, ru = get(uport, path, dict(args, query=q))
                un.append(t)
                t, rp = get(pport, path, dict(args, query=q))
                pm.append(t)
            same = agree(answer(rf), answer(rp)) and agree(answer(ru), answer(rp))
            mf, mu, mp = (statistics.median(x) for x in (fl, un, pm))
            print("%-7s %8.1f ms %8.1f ms %8.1f ms %7.2fx %7.2fx  %s (%d series; %s)" %
                  (name, 1000 * mf, 1000 * mu, 1000 * mp, mf / mp, mu / mp,
                   "agree" if same else "DIFFER", len(rf["data"]["result"]),
                   served(rf, end)), flush=True)
        cache = metrics(wport, "faultline_web_chunk_cache_")
        print("\nfaultline-web's chunk cache (--query.chunk-cache-mb 256, the default): "
              "%d hits, %d misses, %.1f MiB" % (cache.get("hits_total", 0),
                                              cache.get("misses_total", 0),
                                              cache.get("bytes", 0) / 2**20))
        hosts, hot_bytes = hot_hosts(wport)
        print("\nfaultline-web's in-memory tail (--hot %s): %d hosts, %.1f MiB, "
              "%.0f KiB a host" % (a.hot, hosts, hot_bytes / 2**20, hot_bytes / 1024 / max(hosts, 1)))
        print("\n(%d hosts, %d min at 1 s; median of %d runs each, alternating; ratio "
              "faultline / Prometheus: under 1 is faster; \"uncached\" is faultline-web "
              "with --query.chunk-cache-mb 0: every ask decodes its chunks, as a first "
              "ask does)" % (a.hosts, a.minutes, a.runs))
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
