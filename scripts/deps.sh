#!/bin/sh
# deps.sh - install every build, run and test dependency of faultline on
# Debian 12, idempotently.
#
# Usage: scripts/deps.sh [--check] [--bench]
#   --check  only report whether something is missing (exit 1 if so)
#   --bench  also install the peers that `make bench` measures against
#
# The Makefile calls this with --check first and runs the install only when
# something is missing, so `make run` / `make test` on a prepared machine do
# not touch apt at all.
set -eu

PKGS="build-essential pkg-config clang llvm libbpf-dev bpftool \
libelf-dev libdw-dev zlib1g-dev \
libhiredis-dev redis-server libmsgpack-dev libyaml-dev libzstd-dev zstd \
libcurl4-openssl-dev libssl-dev libprotobuf-c-dev protobuf-c-compiler \
libnl-3-dev libnl-route-3-dev libpcre2-dev libatasmart-dev smartmontools libjson-c-dev \
libcriterion-dev libfuse3-dev fuse3 fio iproute2 util-linux kmod \
protobuf-compiler libxml2-utils chromium python3 prometheus-alertmanager prometheus curl \
bash-completion groff-base lintian libmicrohttpd-dev libcrypt-dev libsnappy-dev nodejs \
xz-utils openssl golang-go"
BENCH_PKGS="prometheus-node-exporter libbpf-tools valgrind python3 linux-perf"

check=0
for arg in "$@"; do
	case "$arg" in
	--check) check=1 ;;
	--bench) PKGS="$PKGS $BENCH_PKGS" ;;
	-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
	*) echo "deps.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
	esac
done

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	exit 0
fi
if [ "$check" = 1 ]; then
	echo "deps.sh: missing packages:$missing" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: need root to apt-get install:$missing" >&2
	echo "deps.sh: run 'sudo scripts/deps.sh' or install them yourself" >&2
	exit 1
fi
echo "deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# Packages installed here must not start their daemons (redis-server,
# prometheus, alertmanager would listen on the machine's addresses):
# faultline's tests start their own, on temporary sockets and loopback.  A
# policy-rc.d that refuses is Debian's way; an admin's own one is kept.
policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
	policy=/usr/sbin/policy-rc.d
	printf '#!/bin/sh\nexit 101\n' > "$policy"
	chmod 755 "$policy"
	trap 'rm -f "$policy"' EXIT
fi
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null
echo "deps.sh: done"
