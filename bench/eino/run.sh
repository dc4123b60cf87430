#!/usr/bin/env bash
# bench/eino/run.sh — nika's dispatch.Resolve, Eino's compose.ToolsNode and bare goroutines with a
# sync.WaitGroup, side by side on this machine, in one go (issue 20).
#
# It runs BenchmarkDispatch of this module (its own go.mod: the main module never depends on Eino)
# COUNT times and prints, for each dispatcher and batch size, the median, lowest and highest
# nanoseconds and allocations per call over the runs, with the machine and its load before and
# after (the load matters: on 2 shared cores the figures move with whatever else runs).
#
# Environment:
#   COUNT      runs of each benchmark (default 10; the medians want 5 or more)
#   BENCHTIME  -benchtime of each run (default 2000x: 2,000 batches)
#   OUT        file that keeps go test's raw output (default: a new temporary file)
#
# The first run downloads Eino and its dependencies from the module proxy (go.sum pins them).
set -euo pipefail
cd "$(dirname "$0")"

count=${COUNT:-10}
benchtime=${BENCHTIME:-2000x}
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

# Lines look like: BenchmarkDispatch/N=8/eino-2  2000  14.38 allocs/call  2884 ns/call
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
    if ($(i + 1) == "allocs/call") al[name] = al[name] " " $i
  }
}
END {
  printf "%-16s %12s %20s %14s %16s\n", "case", "ns/call", "(lowest-highest)", "allocs/call", "(lowest-highest)"
  for (j = 1; j <= k; j++) {
    name = order[j]
    m = median(ns[name]); nlo = lo; nhi = hi
    a = median(al[name])
    printf "%-16s %12.0f %20s %14.2f %16s\n", name, m, sprintf("(%.0f-%.0f)", nlo, nhi), a, sprintf("(%.2f-%.2f)", lo, hi)
  }
}' "$out"
