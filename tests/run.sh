#!/bin/sh
# tests/run.sh OUT - run every test binary in OUT/tests and print one
# closing line "N passed, N failed, N skipped".  Exit 1 if anything failed.
#
# Each Criterion binary runs its tests in parallel (2 jobs; the integration
# tests serialise themselves where they share kernel state).
set -u
out=${1:-build}
export FL_OUT=$out
export FL_SHARED=${FL_SHARED:-$(cd "$(dirname "$0")/../.." && pwd)/shared}
passed=0 failed=0 skipped=0 crashed=0
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
	skipped=$((skipped + ${s:-0}))
	if [ $rc -ne 0 ] && [ "${f:-0}" = 0 ] && [ "${e:-0}" = 0 ]; then
		echo "!! $name exited $rc without reporting a failure; see $log"
		crashed=$((crashed + 1))
		failed=$((failed + 1))
	fi
done
echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
