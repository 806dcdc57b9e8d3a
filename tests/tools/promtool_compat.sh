#!/bin/sh
# promtool_compat.sh FAULTLINE - the same rule and rule-test files through
# faultline and Prometheus' own promtool (Debian's prometheus package):
#
#   - tests/rules/promtool/*.yaml rule files: `rules check` and
#     `promtool check rules` both accept them;
#   - tests/rules/promtool/*.test.yaml: `faultline rules test` and
#     `promtool test rules` both pass them;
#   - each test file with one expected sample value changed: both fail it,
#     so agreeing is not agreeing to pass anything.
#
# Exits 0 when the two agree everywhere, 1 (saying where) when not, 77 when
# promtool is not installed.
set -u
fl=${1:?usage: promtool_compat.sh path/to/faultline}
# absolute: the tests run from the test files' directory
fl=$(cd "$(dirname "$fl")" && pwd)/$(basename "$fl")
dir=$(dirname "$0")/../rules/promtool
command -v promtool >/dev/null || { echo "promtool_compat: no promtool" >&2; exit 77; }
bad=0
tmp=""
trap 'rm -f "$tmp"' EXIT INT TERM

for r in "$dir"/*.yaml; do
	case "$r" in *.test.yaml) continue ;; esac
	"$fl" rules check "$r" >/dev/null 2>&1 || { echo "faultline refuses $r"; bad=1; }
	promtool check rules "$r" >/dev/null 2>&1 || { echo "promtool refuses $r"; bad=1; }
done
for t in "$dir"/*.test.yaml; do
	(cd "$dir" && "$fl" rules test "$(basename "$t")") >/dev/null 2>&1 ||
		{ echo "faultline fails $t:"; (cd "$dir" && "$fl" rules test "$(basename "$t")"); bad=1; }
	(cd "$dir" && promtool test rules "$(basename "$t")") >/dev/null 2>&1 ||
		{ echo "promtool fails $t:"; (cd "$dir" && promtool test rules "$(basename "$t")"); bad=1; }
	# the same file with its first expected value wrong
	tmp="$dir/.mutated.$$.test.yaml"
	awk '!done && /^ *value: / { sub(/value: .*/, "value: 12345.5"); done = 1 } { print }' \
		"$t" > "$tmp"
	cmp -s "$t" "$tmp" && { echo "$t has no exp_samples value to change"; bad=1; }
	(cd "$dir" && "$fl" rules test "$(basename "$tmp")") >/dev/null 2>&1 &&
		{ echo "faultline passes $t with a wrong expected value"; bad=1; }
	(cd "$dir" && promtool test rules "$(basename "$tmp")") >/dev/null 2>&1 &&
		{ echo "promtool passes $t with a wrong expected value"; bad=1; }
	rm -f "$tmp"
done
exit $bad
