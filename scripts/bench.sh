#!/usr/bin/env bash
# Runs every Google Benchmark program built under BUILD/bench (the *_bench targets that
# bench/<area>.cmake files define) with repetitions, and prints the median of each benchmark.
# `make bench` calls it as `scripts/bench.sh BUILD`.
#
#   scripts/bench.sh [BUILD]          BUILD defaults to build
#   REPS=5 FILTER=regex scripts/bench.sh build
#
# Only BUILD/bench is searched: other *_bench programs (comm/nccl's) drive real GPUs and are run
# by hand. Medians of CPU time are what bench/README.md quotes. Exit status is non-zero if any
# program failed; the others still run.
set -uo pipefail
BUILD=${1:-build}
REPS=${REPS:-5}
FILTER=${FILTER:-.}

if [ ! -d "$BUILD/bench" ]; then
  echo "bench.sh: no $BUILD/bench directory; build first (make build, or cmake --build $BUILD)" >&2
  exit 1
fi
mapfile -t programs < <(find "$BUILD/bench" -maxdepth 1 -type f -perm -u+x -name '*_bench' | sort)
if [ ${#programs[@]} -eq 0 ]; then
  echo "bench.sh: no *_bench programs in $BUILD/bench" >&2
  exit 1
fi

cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
echo "# $(date -u +%Y-%m-%dT%H:%MZ)  cpu: ${cpu:-unknown} x $(nproc)  repetitions: $REPS"
echo "# medians; columns: benchmark, wall time, CPU time, repetitions, counters"
status=0
for p in "${programs[@]}"; do
  echo
  echo "## $(basename "$p")"
  out=$("$p" --benchmark_repetitions="$REPS" --benchmark_report_aggregates_only=true \
          --benchmark_filter="$FILTER" --benchmark_color=false 2>&1)
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "$out" | tail -20
    echo "bench.sh: $(basename "$p") failed with exit status $rc" >&2
    status=1
    continue
  fi
  # Aggregate rows look like "BM_Name/arg_median  61.0 ns  60.9 ns  5 items_per_second=16.4M/s".
  echo "$out" | awk '/_median / { sub(/_median$/, "", $1); printf "%-48s", $1;
                                   for (i = 2; i <= NF; ++i) printf " %s", $i; print "" }'
done
exit $status
