#!/bin/sh
# bench/run.sh OUT - every benchmark; each prints ratios against a peer
# measured in the same run on the same machine.
set -eu
out=${1:-build}
dir=$(dirname "$0")
python3 "$dir/probe_overhead.py" "$out" --seconds "${BENCH_SECONDS:-20}" --runs "${BENCH_RUNS:-3}"
python3 "$dir/profile_overhead.py" "$out" --seconds "${BENCH_SECONDS:-20}" --runs "${BENCH_RUNS:-2}"
python3 "$dir/rules_throughput.py" "$out" --hosts "${BENCH_RULE_HOSTS:-2000}" --runs "${BENCH_RUNS:-3}"
python3 "$dir/time_to_page.py" "$out" --runs "${BENCH_TTP_RUNS:-2}"
python3 "$dir/fleet_scale.py" "$out" --sizes "${BENCH_SCALE_SIZES:-1000,10000}"
python3 "$dir/shard_scale.py" "$out" --hosts "${BENCH_SHARD_HOSTS:-4000}"
python3 "$dir/query_latency.py" "$out" --hosts "${BENCH_QUERY_HOSTS:-1000}" --runs "${BENCH_RUNS:-3}"
