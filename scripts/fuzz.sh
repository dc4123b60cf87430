#!/usr/bin/env bash
# scripts/fuzz.sh DURATION [PACKAGE...]
#
# Runs every fuzz target of the module (or of the packages given, as `go list` patterns) for
# DURATION each, one after another:
#
#   go test -run '^$' -fuzz '^Name$' -fuzztime DURATION PACKAGE
#
# A fuzz target is a `func FuzzName(f *testing.F)` in one of the package's _test.go files.
# DURATION is anything -fuzztime takes: 30s, 2m, or 100000x (executions).
#
# It prints one line per target (result, package, target, executions, executions per minute of
# the run, new interesting inputs) and the machine's load before and after, and exits 1 when
# any target fails: FAIL when it failed on an input (go test saves a new one under the
# package's testdata/fuzz/Name/, and plain `go test` runs it from then on; the line gives its
# path, or the name of the seed that fails), ERR when go test failed without one (a build
# error, or an error of the fuzzing engine itself). It exits 2 on a usage error.
#
# Environment:
#   FUZZ_MINIMIZE_TIME  -fuzzminimizetime (default 10000x, executions; go's own default is 60s).
#                       A mutant that reaches new code is minimized before fuzzing goes on, at
#                       up to n²/2 executions for n bytes: a mutant that needs its length to
#                       reach that code (a size limit, a long literal) cannot shrink much, and
#                       minimizing it kept both workers busy for most of a 60 s run. 10,000
#                       executions cut a long input's tail and try removing each of its bytes;
#                       a count, unlike a time, does not shrink under load. A failing input is
#                       saved either way, minimized or not.
#   FUZZ_CACHE_DIR      a directory for the generated corpus instead of $(go env GOCACHE)/fuzz
#                       (use a new empty one to measure a target from its seeds alone).
#   FUZZ_LOG_DIR        where each target's output is kept (default: a new temporary directory).
set -uo pipefail

usage() {
	echo "usage: scripts/fuzz.sh DURATION [PACKAGE...]   (e.g. scripts/fuzz.sh 30s, scripts/fuzz.sh 1m ./tools/)" >&2
	exit 2
}
[ $# -ge 1 ] || usage
duration=$1
shift
case $duration in
'' | -*) usage ;;
esac
[ $# -ge 1 ] || set -- ./...

cd "$(dirname "$0")/.." || exit 2
minimize=${FUZZ_MINIMIZE_TIME:-10000x}
logdir=${FUZZ_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/nika-fuzz.XXXXXX")}
mkdir -p "$logdir" || exit 2

# seconds converts a Go duration (1h2m3.5s, 250ms) to seconds; empty for a count (100x).
seconds() {
	awk -v d="$1" 'BEGIN {
		if (d ~ /x$/) exit
		s = 0
		while (match(d, /^[0-9.]+(h|ms|m|s)/)) {
			tok = substr(d, 1, RLENGTH); d = substr(d, RLENGTH + 1)
			n = tok + 0; u = tok; sub(/^[0-9.]+/, "", u)
			s += (u == "h") ? n * 3600 : (u == "m") ? n * 60 : (u == "ms") ? n / 1000 : n
		}
		if (d != "") exit
		print s
	}'
}

pkgs=$(go list -f '{{.ImportPath}} {{.Dir}}' "$@") || exit 2
targets=()
while read -r imp dir; do
	[ -n "$imp" ] || continue
	for name in $(cat "$dir"/*_test.go 2>/dev/null |
		sed -n -E 's/^func (Fuzz[A-Za-z0-9_]*)\([A-Za-z_][A-Za-z0-9_]* \*testing\.F\).*/\1/p' | sort -u); do
		targets+=("$imp $dir $name")
	done
done <<<"$pkgs"
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no fuzz targets in $*" >&2
	exit 2
fi

echo "fuzz: ${#targets[@]} targets, $duration each, -fuzzminimizetime $minimize; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); logs in $logdir"
failed=0
summary=()
for t in "${targets[@]}"; do
	read -r imp dir name <<<"$t"
	log="$logdir/$(echo "$imp" | tr / _).$name.log"
	args=(-run '^$' -fuzz "^$name\$" -fuzztime "$duration" -fuzzminimizetime "$minimize" "$imp")
	if [ -n "${FUZZ_CACHE_DIR:-}" ]; then
		args+=(-args -test.fuzzcachedir="$FUZZ_CACHE_DIR/$imp")
	fi
	echo "fuzz: $imp $name"
	go test "${args[@]}" >"$log" 2>&1
	rc=$?
	last=$(grep -E '^fuzz: elapsed: .*, execs: [0-9]+' "$log" | tail -n 1)
	execs=$(sed -n -E 's/.*, execs: ([0-9]+) .*/\1/p' <<<"$last")
	elapsed=$(sed -n -E 's/^fuzz: elapsed: ([^,]+),.*/\1/p' <<<"$last")
	interesting=$(sed -n -E 's/.*new interesting: ([0-9]+) .*/\1/p' <<<"$last")
	secs=$(seconds "${elapsed:-}")
	perMin=-
	if [ -n "$execs" ] && [ -n "$secs" ] && awk -v s="$secs" 'BEGIN { exit !(s > 0) }'; then
		perMin=$(awk -v e="$execs" -v s="$secs" 'BEGIN { printf "%d", e * 60 / s }')
	fi
	result=ok
	saved=
	if [ $rc -ne 0 ]; then
		# FAIL: the target failed on an input, saved for plain go test to run from now on.
		# ERR: go test failed without one (a build error, or the fuzzing engine's own).
		result=ERR
		input=$(sed -n -E 's/.*Failing input written to (testdata\/fuzz\/[^ ]+).*/\1/p' "$log" | tail -n 1)
		seed=$(sed -n -E 's/^failure while testing seed corpus entry: (.+)$/\1/p' "$log" | tail -n 1)
		if [ -n "$input" ]; then
			result=FAIL
			saved=" $dir/$input"
		elif [ -n "$seed" ]; then
			result=FAIL
			saved=" seed $seed"
		fi
		failed=$((failed + 1))
		echo "fuzz: $imp $name: $result (exit $rc); the end of $log:"
		tail -n 30 "$log" | sed 's/^/    /'
	fi
	summary+=("$(printf '%-4s %-40s %-24s %10s %12s %6s' "$result" "$imp" "$name" "${execs:--}" "$perMin" "${interesting:--}")$saved")
done

echo
printf '%-4s %-40s %-24s %10s %12s %6s\n' result package target execs execs/min new
printf '%s\n' "${summary[@]}"
echo "fuzz: load $(cut -d' ' -f1-3 /proc/loadavg) at the end; $failed of ${#targets[@]} targets failed"
[ $failed -eq 0 ]
