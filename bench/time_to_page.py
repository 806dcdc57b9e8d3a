#!/usr/bin/env python3
"""bench/time_to_page.py OUT - seconds from the first bad packet to the page,
faultline against Prometheus + node_exporter + Alertmanager, side by side.

One real fault, watched by every system at once: TCP segments with a
corrupted checksum, sent at a fixed rate (--rate per second) from network
namespace A to namespace B, which this script creates (192.0.2.1 ->
192.0.2.2, TEST-NET addresses, nothing outside the namespaces is touched).
Everything that watches runs inside B, on B's loopback:

  faultline     faultline-probe, faultline-rules and faultline-alerter at
                their defaults (1 s snapshots with a 100 ms watch of the
                counters pages hang on, 1 s evaluation woken by fl:wake,
                1 s group_wait, 0 s for a page), its own redis-server on
                a unix socket
  prometheus    Debian's prometheus-node-exporter (netstat collector, whose
                default field list leaves Tcp_InCsumErrors out, so it is
                added), prometheus and prometheus-alertmanager in three
                set-ups: their defaults (1 m scrape and evaluation, 30 s
                group_wait); 1 s scrape and evaluation; and 1 s scrape and
                evaluation with a 1 s group_wait (as tuned as faultline)

The rule is the same everywhere: page as soon as any segment with a bad
checksum arrived in the recent window (faultline: increase over 10 s > 0;
Prometheus: increase over two scrape intervals > 0, the shortest window
`increase` works with), no `for`.  Every webhook lands on one receiver
(also in B) that records arrival times.  Each trial builds everything from
scratch, waits until every system has a clean baseline (a full default
scrape interval), starts the fault, and stops when every system paged or
--timeout passed.  Prints each system's seconds to page per trial, the
median, and the ratios against faultline.  Needs root.
"""
import argparse
import json
import os
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

NS_A, NS_B = "fl-ttp-a", "fl-ttp-b"

SENDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts",
                      "csum_sender.py")

RECEIVER = r"""
import http.server, json, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        firing = b'"status":"firing"' in body or b'"status": "firing"' in body
        print(json.dumps({"t": time.time(), "path": self.path, "firing": firing}), flush=True)
        self.send_response(200)
        self.end_headers()
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
print("ready", flush=True)
srv.serve_forever()
"""

SYSTEMS = ["faultline", "prometheus (defaults)", "prometheus (1 s scrape/eval)",
           "prometheus (1 s scrape/eval, 1 s group_wait)"]
PATHS = {"/faultline": SYSTEMS[0], "/prom-default": SYSTEMS[1], "/prom-1s": SYSTEMS[2],
         "/prom-1s-gw1s": SYSTEMS[3]}


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def in_b(*cmd):
    return ["ip", "netns", "exec", NS_B] + list(cmd)


def netns_up():
    netns_down()
    sh("ip", "netns", "add", NS_A)
    sh("ip", "netns", "add", NS_B)
    sh("ip", "link", "add", "flttpa", "netns", NS_A, "type", "veth", "peer", "name", "flttpb",
       "netns", NS_B)
    for ns, dev, addr in ((NS_A, "flttpa", "192.0.2.1/24"), (NS_B, "flttpb", "192.0.2.2/24")):
        sh("ip", "-n", ns, "addr", "add", addr, "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")


def netns_down():
    for ns in (NS_A, NS_B):
        sh("ip", "netns", "del", ns, check=False)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def prom_config(d, name, scrape, am_ports, ne_port):
    rules = os.path.join(d, name + "-rules.yml")
    window = "2m" if scrape == "1m" else "2s"
    write(rules, "groups:\n- name: ttp\n  rules:\n  - alert: TcpChecksumErrors\n"
          "    expr: increase(node_netstat_Tcp_InCsumErrors[%s]) > 0\n"
          "    labels: {severity: page}\n" % window)
    cfg = os.path.join(d, name + ".yml")
    targets = ", ".join("'127.0.0.1:%d'" % p for p in am_ports)
    write(cfg, "global: {scrape_interval: %s, evaluation_interval: %s}\n"
          "rule_files: ['%s']\n"
          "alerting: {alertmanagers: [{static_configs: [{targets: [%s]}]}]}\n"
          "scrape_configs:\n- job_name: node\n  static_configs: [{targets: ['127.0.0.1:%d']}]\n"
          % (scrape, scrape, rules, targets, ne_port))
    return cfg


def am_config(d, name, group_wait, rx_port, path):
    cfg = os.path.join(d, name + ".yml")
    gw = "" if group_wait is None else "  group_wait: %s\n" % group_wait
    write(cfg, "route:\n  receiver: rx\n  group_by: [alertname]\n%s"
          "receivers:\n- name: rx\n  webhook_configs: [{url: 'http://127.0.0.1:%d%s'}]\n"
          % (gw, rx_port, path))
    return cfg


class Trial:
    def __init__(self, out, d, rate):
        self.out, self.d, self.rate = out, d, rate
        self.procs = []

    def spawn(self, cmd, name, stdout=None):
        log = open(os.path.join(self.d, name + ".log"), "w")
        p = subprocess.Popen(cmd, stdout=stdout or log, stderr=log, text=True,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def stop(self):
        for p in reversed(self.procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)

    def start(self):
        d, out = self.d, self.out
        rx = self.spawn(in_b("python3", "-c", RECEIVER, "18080"), "receiver",
                        stdout=subprocess.PIPE)
        if rx.stdout.readline().strip() != "ready":
            sys.exit("time_to_page: the webhook receiver did not start")
        self.rx = rx
        # faultline, at its defaults
        sock = os.path.join(d, "redis.sock")
        self.spawn(in_b("redis-server", "--port", "0", "--unixsocket", sock, "--save", "",
                        "--appendonly", "no", "--dir", d), "redis")
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        url = "unix://" + sock
        rules = os.path.join(d, "fl-rules.yaml")
        write(rules, "groups:\n  - name: ttp\n    rules:\n      - alert: TcpChecksumErrors\n"
              "        expr: increase(faultline_tcp_in_csum_errors_total[10s]) > 0\n"
              "        severity: page\n")
        acfg = os.path.join(d, "fl-alerter.yaml")
        write(acfg, "redis: %s\nreceivers:\n  - name: rx\n    url: http://127.0.0.1:18080/faultline\n"
              % url)
        self.spawn(in_b(os.path.join(out, "faultline-probe"), "--redis", url, "--host", "ttp",
                        "--metrics-addr", "", "--log-level", "warn"), "fl-probe")
        self.spawn(in_b(os.path.join(out, "faultline-rules"), "--rules", rules, "--redis", url,
                        "--log-level", "warn"), "fl-rules")
        self.spawn(in_b(os.path.join(out, "faultline-alerter"), "--config", acfg,
                        "--log-level", "warn"), "fl-alerter")
        # Prometheus + node_exporter + Alertmanager
        self.spawn(in_b(shutil.which("prometheus-node-exporter"),
                        "--web.listen-address=127.0.0.1:19100", "--collector.disable-defaults",
                        "--collector.netstat",
                        "--collector.netstat.fields=^(Tcp_InCsumErrors|Tcp_InSegs)$"), "node-exporter")
        ams = [("am-default", None, 19093, "/prom-default"),
               ("am-1s", None, 19094, "/prom-1s"),
               ("am-1s-gw1s", "1s", 19095, "/prom-1s-gw1s")]
        for name, gw, port, path in ams:
            os.makedirs(os.path.join(d, name), exist_ok=True)
            self.spawn(in_b(shutil.which("prometheus-alertmanager"),
                            "--config.file=" + am_config(d, name, gw, 18080, path),
                            "--storage.path=" + os.path.join(d, name),
                            "--web.listen-address=127.0.0.1:%d" % port,
                            "--cluster.listen-address="), name)
        for name, scrape, am_ports, port in (("prom-default", "1m", [19093], 19090),
                                             ("prom-1s", "1s", [19094, 19095], 19091)):
            os.makedirs(os.path.join(d, name), exist_ok=True)
            self.spawn(in_b(shutil.which("prometheus"),
                            "--config.file=" + prom_config(d, name, scrape, am_ports, 19100),
                            "--storage.tsdb.path=" + os.path.join(d, name),
                            "--web.listen-address=127.0.0.1:%d" % port), name)

    def fault(self):
        p = self.spawn(["ip", "netns", "exec", NS_A, "python3", SENDER, str(self.rate)],
                       "sender", stdout=subprocess.PIPE)
        first = p.stdout.readline().split()
        return float(first[1])

    def pages(self, t0, timeout):
        """Seconds from t0 to each system's first firing webhook."""
        got, lines = {}, queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in self.rx.stdout],
                         daemon=True).start()
        deadline = time.time() + timeout
        while time.time() < deadline and len(got) < len(SYSTEMS):
            try:
                ev = json.loads(lines.get(timeout=0.2))
            except queue.Empty:
                continue
            sysname = PATHS.get(ev["path"])
            if sysname and ev["firing"] and sysname not in got:
                got[sysname] = ev["t"] - t0
                print("  %-46s paged after %6.2f s" % (sysname, got[sysname]), flush=True)
        return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", default="build")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--rate", type=float, default=20, help="bad segments per second")
    ap.add_argument("--warmup", type=float, default=65,
                    help="seconds every system watches before the fault (a default scrape)")
    ap.add_argument("--timeout", type=float, default=240)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("time_to_page: needs root (network namespaces, BPF)")
    for tool in ("prometheus", "prometheus-alertmanager", "prometheus-node-exporter",
                 "redis-server"):
        if not shutil.which(tool):
            sys.exit("time_to_page: %s not found (scripts/deps.sh --bench)" % tool)
    out = os.path.abspath(a.out)
    results = {s: [] for s in SYSTEMS}
    print("time_to_page: %g bad-checksum segments/s from netns A to B, %d trial(s), "
          "everything rebuilt per trial" % (a.rate, a.runs), flush=True)
    for run in range(a.runs):
        d = tempfile.mkdtemp(prefix="fl-ttp-")
        t = Trial(out, d, a.rate)
        try:
            netns_up()
            t.start()
            time.sleep(a.warmup)
            print("trial %d: fault starts" % (run + 1), flush=True)
            t0 = t.fault()
            got = t.pages(t0, a.timeout)
            for s in SYSTEMS:
                results[s].append(got.get(s))
                if s not in got:
                    print("  %-46s no page within %.0f s (logs in %s)" % (s, a.timeout, d))
        finally:
            t.stop()
            netns_down()
        if all(results[s][-1] is not None for s in SYSTEMS):
            shutil.rmtree(d, ignore_errors=True)
    print("\ntime_to_page: seconds from the first bad segment to the webhook "
          "(median of %d; lower is better)" % a.runs)
    fl = [x for x in results[SYSTEMS[0]] if x is not None]
    fl_med = statistics.median(fl) if fl else None
    for s in SYSTEMS:
        vals = [x for x in results[s] if x is not None]
        if not vals:
            print("  %-46s  no page" % s)
            continue
        med = statistics.median(vals)
        ratio = " %6.1fx faultline's" % (med / fl_med) if fl_med and s != SYSTEMS[0] else ""
        print("  %-46s %7.2f s  (%s)%s" % (s, med, ", ".join("%.2f" % v for v in vals), ratio))
    if fl_med is not None:
        tuned = [x for x in results[SYSTEMS[3]] if x is not None]
        tuned_med = statistics.median(tuned) if tuned else None
        print("  target: faultline <= 1.0 s at defaults: %s" % ("met" if fl_med <= 1.0 else "NOT met"))
        if tuned_med:
            print("  target: <= 0.5x the tuned Prometheus (1 s scrape/eval, 1 s group_wait): "
                  "%.3fx, %s" % (fl_med / tuned_med, "met" if fl_med <= 0.5 * tuned_med else "NOT met"))


if __name__ == "__main__":
    main()
