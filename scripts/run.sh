#!/bin/sh
# run.sh OUT - `make run`: the main job on this host with the embedded
# default config.  Starts a private redis-server on a unix socket under
# ./run/, the probe on this host, and `faultline top` showing a live
# summary once per second, until Ctrl-C; then stops everything it started.
set -eu
out=${1:-build}
here=$(pwd)
run="$here/run"
mkdir -p "$run"
sock="$run/redis.sock"
url="unix://$sock"
host=$(hostname)
redis_pid="" probe_pid=""

cleanup() {
	trap - INT TERM EXIT
	[ -n "$probe_pid" ] && kill "$probe_pid" 2>/dev/null && wait "$probe_pid" 2>/dev/null
	[ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
	echo "run: stopped the probe and redis-server (data and logs kept in $run/)"
}
trap cleanup INT TERM EXIT

if [ "$(id -u)" != 0 ]; then
	echo "run: not root: the BPF block probe needs CAP_BPF/CAP_PERFMON; running with --no-bpf" >&2
	nobpf=--no-bpf
else
	nobpf=
fi

redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --dir "$run" \
	--save "" --appendonly no --logfile "$run/redis.log" &
redis_pid=$!
i=0
until redis-cli -s "$sock" ping >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		echo "run: redis-server did not start; see $run/redis.log" >&2
		exit 1
	fi
	sleep 0.05
done

"$out/faultline-probe" --redis "$url" --host "$host" $nobpf 2>"$run/probe.log" &
probe_pid=$!
sleep 0.5
if ! kill -0 "$probe_pid" 2>/dev/null; then
	echo "run: faultline-probe exited at start-up:" >&2
	cat "$run/probe.log" >&2
	exit 1
fi
echo "run: redis on $sock, probe pid $probe_pid (log: $run/probe.log), /metrics on 127.0.0.1:9464"
echo "run: live summary follows; Ctrl-C stops everything"
"$out/faultline" top --redis "$url" --host "$host" || true
