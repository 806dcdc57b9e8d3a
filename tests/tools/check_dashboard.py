#!/usr/bin/env python3
"""tests/tools/check_dashboard.py DASHBOARD.json FAULTLINE - check a Grafana
dashboard the way Grafana's loader and a careful reviewer would, without a
Grafana (Debian has none):

- the dashboard model: title, uid, schemaVersion, templating, panels with
  unique ids, a known type, a datasource, targets with unique refIds, and
  grid positions inside the 24-column grid that do not overlap;
- every metric a query names is one `FAULTLINE metrics` lists (the one
  vocabulary), _bucket only on histograms, counters only under rate() or
  increase(), and a panel of ratios says percentunit, of seconds says s
  (or percentunit for seconds per second);
- with promtool on PATH, every query parses as PromQL.

Prints what is wrong, one line each, and exits 1; exits 0 when it is fine."""
import json
import re
import shutil
import subprocess
import sys
import tempfile

TYPES = {"row", "timeseries", "heatmap", "stat", "gauge", "table", "bargauge"}


def catalog(faultline):
    out = subprocess.run([faultline, "metrics"], capture_output=True, text=True, check=True)
    kinds = {}
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) >= 2:
            kinds[f[0]] = f[1]
    return kinds


def main():
    path, faultline = sys.argv[1], sys.argv[2]
    errs = []
    d = json.load(open(path))
    kinds = catalog(faultline)
    for k in ("title", "uid", "schemaVersion", "panels", "templating"):
        if k not in d:
            errs.append("dashboard: no %s" % k)
    if not isinstance(d.get("schemaVersion"), int):
        errs.append("schemaVersion: not an integer")
    ids, cells, exprs = set(), {}, []
    for p in d.get("panels", []):
        pid, t = p.get("id"), p.get("type")
        where = "panel %s (%s)" % (pid, p.get("title"))
        if not isinstance(pid, int) or pid in ids:
            errs.append("%s: id missing or not unique" % where)
        ids.add(pid)
        if t not in TYPES:
            errs.append("%s: unknown type %r" % (where, t))
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] + g["w"] > 24:
            errs.append("%s: gridPos %r outside the 24-column grid" % (where, g))
            continue
        for yy in range(g["y"], g["y"] + g["h"]):
            for xx in range(g["x"], g["x"] + g["w"]):
                if (xx, yy) in cells:
                    errs.append("%s: overlaps panel %s" % (where, cells[(xx, yy)]))
                    break
                cells[(xx, yy)] = pid
        if t == "row":
            continue
        if "datasource" not in p:
            errs.append("%s: no datasource" % where)
        refs = [q.get("refId") for q in p.get("targets", [])]
        if not refs or len(set(refs)) != len(refs):
            errs.append("%s: no targets, or refIds not unique" % where)
        unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit")
        for q in p.get("targets", []):
            e = q.get("expr", "")
            exprs.append((where, e))
            for m in re.findall(r"\b(faultline_[a-z0-9_]+)", e):
                base = re.sub(r"_(bucket|sum|count)$", "", m)
                if m in kinds:
                    base = m
                if base not in kinds:
                    errs.append("%s: %s is not a faultline metric" % (where, m))
                    continue
                if m != base and kinds[base] != "histogram":
                    errs.append("%s: %s: %s is not a histogram" % (where, m, base))
                if kinds[base] == "counter" and not re.search(
                        r"(rate|increase)\(\s*%s\b" % m, e):
                    errs.append("%s: counter %s outside rate()/increase()" % (where, m))
                if base.endswith("_ratio") and m == base and unit != "percentunit":
                    errs.append("%s: %s is a ratio; unit %r, not percentunit" % (where, m, unit))
                if base.endswith("_seconds") and "histogram_quantile" in e and unit != "s":
                    errs.append("%s: %s quantiles are seconds; unit %r" % (where, m, unit))
                if base.endswith("_seconds_total") and unit not in ("percentunit", "s"):
                    errs.append("%s: rate of %s is seconds per second; unit %r"
                                % (where, m, unit))
    promtool = shutil.which("promtool")
    if promtool and exprs:
        rules = {"groups": [{"name": "dashboard", "rules": [
            {"record": "dashboard:expr%d" % i,
             "expr": e.replace("$__rate_interval", "5m").replace("$instance", ".*")}
            for i, (_, e) in enumerate(exprs)]}]}
        with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
            json.dump(rules, f)
        r = subprocess.run([promtool, "check", "rules", f.name], capture_output=True,
                           text=True)
        if r.returncode:
            errs.append("promtool: %s" % (r.stdout + r.stderr).strip())
    for e in errs:
        print(e)
    print("%s: %d panels, %d queries%s: %s" % (path, len(d.get("panels", [])), len(exprs),
          ", PromQL checked by promtool" if promtool else "", "bad" if errs else "ok"))
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
