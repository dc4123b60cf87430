#!/usr/bin/env bash
# scripts/bench-dispatch-eino.sh
#
# nika's dispatch.Resolve, Eino's compose.ToolsNode and bare goroutines with a sync.WaitGroup,
# side by side on this machine in one go (issue 20): the same no-op tool, the same ~100-byte
# arguments, batches of 8 and 64 calls.
#
# It runs BenchmarkDispatch of scripts/bench-dispatch-eino/, a Go module of its own (the main
# module never depends on Eino; its go.mod points back at this checkout with a replace), COUNT
# times, and prints for each dispatcher and batch size the median, lowest and highest over the
# runs of: the wall time per call; the CPU time per call (user and system, every thread of the
# process, the runtime's included: on a machine shared with other work it moves less than the
# wall time, which also counts the waits for a core); the allocations per call. The machine and
# its load before and after come first.
#
# Environment:
#   COUNT      runs of each benchmark (default 10; medians want 5 or more)
#   BENCHTIME  -benchtime of each run (default 1s: about 90 s in all at COUNT=10)
#   OUT        file that keeps go test's raw output (default: a new temporary file)
#
# The first run downloads Eino and its dependencies from the module proxy (go.sum pins them).
set -euo pipefail
cd "$(dirname "$0")/bench-dispatch-eino"

count=${COUNT:-10}
benchtime=${BENCHTIME:-1s}
out=${OUT:-$(mktemp "${TMPDIR:-/tmp}/bench-eino.XXXXXX")}

cpu=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
echo "machine: $(nproc) cores, ${cpu:-unknown cpu}, $(go version | cut -d' ' -f3-)"
echo "eino: $(go list -m -f '{{.Version}}' github.com/cloudwego/eino)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "go test -run '^\$' -bench '^BenchmarkDispatch\$' -benchtime $benchtime -count $count (raw output: $out)"
go test -run '^$' -bench '^BenchmarkDispatch$' -benchtime "$benchtime" -count "$count" >"$out" 2>&1 || {
  cat "$out"
  exit 1
}
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# Lines look like: BenchmarkDispatch/N=8/eino-2  2000  14.38 allocs/call  4187 cpu-ns/call  5193 ns/call
awk '
function median(list,   v, n, i, j, t) {
  n = split(list, v, " ")
  for (i = 2; i <= n; i++) {          # insertion sort: a handful of values
    t = v[i] + 0
    for (j = i - 1; j >= 1 && v[j] + 0 > t; j--) v[j + 1] = v[j]
    v[j + 1] = t
  }
  lo = v[1]; hi = v[n]
  return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
/^BenchmarkDispatch\// {
  name = $1; sub(/^BenchmarkDispatch\//, "", name); sub(/-[0-9]+$/, "", name)
  if (!(name in ns)) order[++k] = name
  for (i = 3; i < NF; i++) {
    if ($(i + 1) == "ns/call") ns[name] = ns[name] " " $i
    if ($(i + 1) == "cpu-ns/call") cpu[name] = cpu[name] " " $i
    if ($(i + 1) == "allocs/call") al[name] = al[name] " " $i
  }
}
END {
  printf "%-16s %8s %13s %12s %13s %12s %13s\n", "case", "ns/call", "(range)", "cpu-ns/call", "(range)", "allocs/call", "(range)"
  for (j = 1; j <= k; j++) {
    name = order[j]
    w = median(ns[name]); wr = sprintf("(%.0f-%.0f)", lo, hi)
    c = median(cpu[name]); cr = sprintf("(%.0f-%.0f)", lo, hi)
    a = median(al[name]); ar = sprintf("(%.2f-%.2f)", lo, hi)
    printf "%-16s %8.0f %13s %12.0f %13s %12.2f %13s\n", name, w, wr, c, cr, a, ar
  }
}' "$out"
