#!/usr/bin/env python3
"""demo_receiver.py PORT - the webhook `make demo` points the alerter at:
prints every notification as it arrives (what paged, where, why, and the
evidence attached), and the seconds since the demo started.

Environment: DEMO_T0 (unix time the faults started) for the elapsed time.
"""
import http.server
import json
import os
import sys
import time

T0 = float(os.environ.get("DEMO_T0", time.time()))
BOLD, RED, GREEN, DIM, OFF = "\033[1m", "\033[31m", "\033[32m", "\033[2m", "\033[0m"
if not sys.stdout.isatty():
    BOLD = RED = GREEN = DIM = OFF = ""


def show_evidence(ev):
    for e in ev:
        cpu = e.get("cpu") or {}
        if cpu.get("top_stacks"):
            print("    %sCPU, top stacks of the affected hosts (%d samples):%s"
                  % (DIM, cpu.get("samples", 0), OFF))
            for s in cpu["top_stacks"][:4]:
                frames = s.get("frames") or s.get("stack") or []
                if isinstance(frames, str):
                    frames = frames.split(";")
                share = s.get("share", s.get("fraction", 0))
                print("      %5.1f%%  %s" % (100 * share, " > ".join(frames[-5:])))
        elif cpu.get("missing"):
            print("    %sCPU: %s%s" % (DIM, cpu["missing"], OFF))
        peers = e.get("checksum_peers")
        if peers:
            print("    %schecksum errors by source peer:%s %s"
                  % (DIM, OFF, json.dumps(peers, separators=(",", ":"))[:300]))
        drive = e.get("drive")
        if drive:
            print("    %sdrive:%s %s" % (DIM, OFF, json.dumps(drive, separators=(",", ":"))[:300]))


class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.end_headers()
        try:
            doc = json.loads(body)
        except ValueError:
            print("demo: a notification that is not JSON (%d bytes)" % len(body))
            return
        fl = doc.get("faultline", {})
        for a in doc.get("alerts", []):
            firing = a.get("status") == "firing"
            lab = a.get("labels", {})
            where = ", ".join("%s=%s" % (k, v) for k, v in sorted(lab.items())
                              if k not in ("alertname", "severity"))
            print("%s[%6.1f s]%s %s%s %s%s  %s" %
                  (BOLD, time.time() - T0, OFF, RED if firing else GREEN,
                   "PAGE" if firing else "resolved", lab.get("alertname", "?"), OFF, where))
            summary = a.get("annotations", {}).get("summary")
            if summary:
                print("    %s" % summary)
        for x in fl.get("alerts", []):
            if x.get("runbook"):
                print("    %srunbook: %s%s" % (DIM, x["runbook"], OFF))
        if doc.get("status") == "firing":
            show_evidence(fl.get("evidence", []))
        sys.stdout.flush()

    def log_message(self, *a):
        pass


def main():
    srv = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
    print("demo: webhook receiver on 127.0.0.1:%s" % sys.argv[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
