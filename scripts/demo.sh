#!/bin/bash
# demo.sh OUT - `make demo`: the whole chain on this machine, with real
# faults, and each page printed as it arrives with its evidence.
#
# Starts a private redis-server (under ./demo/), faultline-probe on this
# host and a second probe in a network namespace of its own, faultline-rules
# with the shipped rules (etc/rules/faultline.yaml) and faultline-alerter
# pointed at a local webhook receiver that prints each notification.  Then
# injects three real faults:
#
#   1. TCP segments with corrupted checksums, 20/s, from namespace A into
#      namespace B (TEST-NET addresses; nothing outside the namespaces is
#      touched): TcpChecksumErrors for the namespace's host, with the
#      sending peer as evidence; the sender stops after the page, so the
#      alert resolves a few minutes later;
#   2. a cgroup with a 20 % CPU quota running a busy loop
#      (demo_hot_function): CpuThrottled, with that function among the top
#      CPU stacks;
#   3. a loop device over a FUSE file whose writes take 60 ms, next to two
#      fast loop devices of the same kind, all written continuously:
#      SlowWritesVsModelPeers for the slow one.
#
# The shipped rules wait before paging (for: 30s, 2m and 5m), so the pages
# arrive over about six minutes.  Stops when all three paged and the first
# resolved, or on Ctrl-C; everything it created is removed on the way out.
set -u
out=${1:-build}
here=$(pwd)
demo="$here/demo"
host=$(hostname)
ns_a=fl-demo-a ns_b=fl-demo-b
cg=/sys/fs/cgroup/cpu/faultline-demo
port=18099
pids=() loops=() mnt="$demo/mnt"

say() { printf '\033[1mdemo:\033[0m %s\n' "$*"; }

cleanup() {
	trap - INT TERM EXIT
	say "cleaning up"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	if [ -d "$cg" ]; then
		for t in $(cat "$cg/tasks" 2>/dev/null); do kill -9 "$t" 2>/dev/null; done
		sleep 0.2
		rmdir "$cg" 2>/dev/null
	fi
	for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null; done
	fusermount3 -u "$mnt" 2>/dev/null
	ip netns del "$ns_a" 2>/dev/null
	ip netns del "$ns_b" 2>/dev/null
	wait 2>/dev/null
	say "stopped everything (logs kept in $demo/)"
}
trap cleanup INT TERM EXIT

if [ "$(id -u)" != 0 ]; then
	echo "demo: needs root (BPF, network namespaces, cgroups, loop devices)" >&2
	exit 1
fi
mkdir -p "$demo" "$mnt"
rm -f "$demo"/*.log
sock="$demo/redis.sock"
url="unix://$sock"

redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --dir "$demo" \
	--save "" --appendonly no --logfile "$demo/redis.log" &
pids+=($!)
for _ in $(seq 100); do redis-cli -s "$sock" ping >/dev/null 2>&1 && break; sleep 0.05; done
redis-cli -s "$sock" ping >/dev/null || { echo "demo: redis-server did not start" >&2; exit 1; }

# the namespaces the bad packets travel between
ip netns del "$ns_a" 2>/dev/null; ip netns del "$ns_b" 2>/dev/null
ip netns add "$ns_a" && ip netns add "$ns_b" &&
ip link add fldemoa netns "$ns_a" type veth peer name fldemob netns "$ns_b" &&
ip -n "$ns_a" addr add 192.0.2.1/24 dev fldemoa && ip -n "$ns_b" addr add 192.0.2.2/24 dev fldemob &&
ip -n "$ns_a" link set fldemoa up && ip -n "$ns_b" link set fldemob up &&
ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up ||
	{ echo "demo: could not build the network namespaces" >&2; exit 1; }

DEMO_T0=$(date +%s.%N) python3 scripts/demo_receiver.py "$port" &
pids+=($!)
cat >"$demo/alerter.yaml" <<EOF
redis: $url
receivers:
  - name: demo
    url: http://127.0.0.1:$port/
EOF
"$out/faultline-probe" --redis "$url" --host "$host" --metrics-addr "" 2>"$demo/probe.log" &
pids+=($!)
# the namespace's probe counts its TCP; this machine's disks and CPU profile
# are the other probe's (block I/O and profiles are machine-wide)
printf 'block: {enabled: false}\nprofile: {enabled: false}\n' >"$demo/probe-netns-b.yaml"
ip netns exec "$ns_b" "$out/faultline-probe" --config "$demo/probe-netns-b.yaml" --redis "$url" \
	--host "$host-netns-b" --metrics-addr "" 2>"$demo/probe-netns-b.log" &
pids+=($!)
"$out/faultline-rules" --rules etc/rules/faultline.yaml --redis "$url" --stale 10s \
	2>"$demo/rules.log" &
pids+=($!)
"$out/faultline-alerter" --config "$demo/alerter.yaml" 2>"$demo/alerter.log" &
pids+=($!)
sleep 3
for p in "${pids[@]}"; do
	kill -0 "$p" 2>/dev/null || { echo "demo: a part exited at start-up; see $demo/*.log" >&2; exit 1; }
done
say "redis, two probes ($host, $host-netns-b), rules and alerter are up; logs in $demo/"

# fault 1: corrupted segments into namespace B
ip netns exec "$ns_a" python3 scripts/csum_sender.py 20 >/dev/null &
sender=$!
pids+=($sender)
say "fault 1: 20 TCP segments/s with bad checksums, 192.0.2.1 -> $host-netns-b (page after ~35 s)"

# fault 2: a CPU quota and a busy loop under it
if [ -w /sys/fs/cgroup/cpu ]; then
	mkdir -p "$cg" && echo 100000 >"$cg/cpu.cfs_period_us" && echo 20000 >"$cg/cpu.cfs_quota_us"
	"$out/tests/tools/hotloop" &
	hot=$!
	pids+=($hot)
	echo "$hot" >"$cg/tasks"
	say "fault 2: demo_hot_function in cgroup faultline-demo capped at 20 % of a CPU (page after ~2.5 min)"
else
	say "fault 2 skipped: no cgroup v1 cpu controller here"
fi

# fault 3: one slow and two fast loop devices, written all the time
"$out/tests/tools/slowfs" "$mnt" -f -- 32 60 2>"$demo/slowfs.log" &
pids+=($!)
for _ in $(seq 100); do [ -e "$mnt/disk.img" ] && break; sleep 0.05; done
if [ -e "$mnt/disk.img" ]; then
	loops+=("$(losetup -f --show --direct-io=off "$mnt/disk.img")")
	for i in 1 2; do
		truncate -s 32M "$demo/fast$i.img"
		loops+=("$(losetup -f --show --direct-io=on "$demo/fast$i.img")")
	done
	(
		while :; do
			for l in "${loops[@]}"; do
				dd if=/dev/zero of="$l" bs=4k count=8 oflag=direct conv=notrunc \
					status=none seek=$((RANDOM % 4000)) 2>/dev/null
			done
			sleep 0.2
		done
	) &
	pids+=($!)
	say "fault 3: ${loops[0]} writes take 60 ms, ${loops[1]} and ${loops[2]} are fast (page after ~5.5 min)"
else
	say "fault 3 skipped: slowfs did not mount (no FUSE here?)"
fi

say "waiting for the pages (Ctrl-C to stop)"
start=$(date +%s)
while :; do
	sleep 2
	log=$(redis-cli -s "$sock" --raw XRANGE fl:alerts - + 2>/dev/null)
	csum=$(grep -c '"status":"firing".*TcpChecksumErrors' <<<"$log")
	if [ "$csum" -gt 0 ] && kill -0 "$sender" 2>/dev/null; then
		kill "$sender"
		say "fault 1 stopped: the checksum alert resolves once the rate is gone and keep_firing_for (2m) ran out"
	fi
	firing=$(grep -o '"status":"firing"[^}]*"alertname":"[A-Za-z]*' <<<"$log" |
		 sed 's/.*"alertname":"//' | sort -u | tr '\n' ' ')
	resolved=$(grep -c '"status":"resolved".*TcpChecksumErrors' <<<"$log")
	if [[ "$firing" == *CpuThrottled* && "$firing" == *SlowWritesVsModelPeers* &&
	      "$firing" == *TcpChecksumErrors* && "$resolved" -gt 0 ]]; then
		sleep 3
		say "all three faults paged and the checksum alert resolved in $(( $(date +%s) - start )) s"
		break
	fi
	if [ $(( $(date +%s) - start )) -gt 600 ]; then
		say "10 minutes passed; paged so far: ${firing:-nothing} (see $demo/rules.log)"
		break
	fi
done
