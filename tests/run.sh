#!/bin/sh
# tests/run.sh OUT - run every test binary in OUT/tests and print one
# closing line "N passed, N failed, N skipped".  Exit 1 if anything failed.
#
# Each Criterion binary runs its tests one at a time (the integration
# tests serialise themselves where they share kernel state).
set -u
out=${1:-build}
export FL_OUT=$out
export FL_SHARED=${FL_SHARED:-$(cd "$(dirname "$0")/../.." && pwd)/shared}
passed=0 failed=0 skipped=0 crashed=0
failures=""	# what failed, repeated at the end (a CI log shows its tail)
for t in "$out"/tests/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	log="$out/tests/$name.log"
	echo "== $name"
	"$t" --jobs=1 --verbose=0 --json="$out/tests/$name.json" >"$log" 2>&1
	rc=$?
	grep -vE 'Criterion v|Running [0-9]+ test|Writing json|^\[(RUN |PASS)\]|^\[----\] *$' "$log" | head -n 80
	p=$(sed -n 's/.*"passed": *\([0-9]*\).*/\1/p' "$out/tests/$name.json" | head -n1)
	f=$(sed -n 's/.*"failed": *\([0-9]*\).*/\1/p' "$out/tests/$name.json" | head -n1)
	e=$(sed -n 's/.*"errored": *\([0-9]*\).*/\1/p' "$out/tests/$name.json" | head -n1)
	s=$(sed -n 's/.*"skipped": *\([0-9]*\).*/\1/p' "$out/tests/$name.json" | head -n1)
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0} + ${e:-0}))
	if [ "${f:-0}" != 0 ] || [ "${e:-0}" != 0 ]; then
		failures="$failures$(grep -E '^\[(FAIL|ERR)' "$log" | sed 's/^/  /')
$(grep -B1 -A2 'Assertion Failed' "$log" | head -n 12 | sed 's/^/    /')
"
	fi
	skipped=$((skipped + ${s:-0}))
	if [ $rc -ne 0 ] && [ "${f:-0}" = 0 ] && [ "${e:-0}" = 0 ]; then
		echo "!! $name exited $rc without reporting a failure; see $log"
		failures="$failures  $name exited $rc without reporting a failure
"
		crashed=$((crashed + 1))
		failed=$((failed + 1))
	fi
done
# Every fuzz target over its seeds and the inputs of past crashes (and the
# real drive data the drive parsers are seeded with): one test per target.
for r in "$out"/fuzz-replay/fuzz_*; do
	[ -x "$r" ] || continue
	t=$(basename "$r")
	set -- fuzz/seeds/"$t"/*
	[ -e "$1" ] || set --
	case $t in
	fuzz_smartctl_json) set -- "$@" $(ls "$FL_SHARED"/testdata/smartctl/*.json 2>/dev/null) ;;
	fuzz_atasmart_blob) set -- "$@" $(ls "$FL_SHARED"/testdata/atasmart-blobs/* 2>/dev/null |
		grep -v README) ;;
	esac
	if [ $# -eq 0 ]; then
		echo "!! $t has no seeds in fuzz/seeds/$t"
		failures="$failures  $t has no seeds
"
		failed=$((failed + 1))
		continue
	fi
	if res=$("$r" "$@" 2>&1 >/dev/null) && [ -z "$(printf '%s' "$res" |
		grep -E 'AddressSanitizer|runtime error|LeakSanitizer')" ]; then
		passed=$((passed + 1))
	else
		echo "!! $t crashed replaying its seeds:"
		failures="$failures  $t crashed replaying its seeds
"
		printf '%s\n' "$res" | tail -n 20
		failed=$((failed + 1))
	fi
done
echo "== fuzz seeds replayed through $(ls "$out"/fuzz-replay 2>/dev/null | wc -l) target(s)"

echo
if [ -n "$failures" ]; then
	echo "what failed:"
	printf '%s' "$failures"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
