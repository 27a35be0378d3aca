#!/usr/bin/env bash
# fuzz/run.sh BUILD SECONDS TARGET...: runs each libFuzzer target for SECONDS on a working copy
# of its seed corpus (fuzz/corpus/TARGET stays as committed; new inputs go to
# BUILD/fuzz-corpus/TARGET). A crash, leak, sanitizer report, timeout (10 s per input) or an
# input over 2 GiB RSS stops the target and fails the script; the input is saved as
# BUILD/fuzz-artifacts/TARGET-crash-<sha1> — turn it into a test in tests/hardening/.
# The seed is fixed (FUZZ_SEED, default 1) so a CI run is reproducible; vary it to explore more.
# FUZZ_JOBS targets run at once (default: the number of cores; each libFuzzer process is
# single-threaded, so one at a time left a core idle). Reports are printed in TARGET order.
set -euo pipefail
build=$1
seconds=$2
shift 2
cd "$(dirname "$0")/.."
jobs=${FUZZ_JOBS:-$(nproc)}
mkdir -p "$build/fuzz-artifacts"

run_one() {
  local target=$1
  mkdir -p "$build/fuzz-corpus/$target"
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/fuzz/$target" -seed="${FUZZ_SEED:-1}" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$build/fuzz-artifacts/$target-" \
    "$build/fuzz-corpus/$target" "fuzz/corpus/$target" 2>"$build/fuzz-artifacts/$target.log"
}

report() {
  local target=$1 rc=$2
  echo "== $target: ${seconds}s"
  if [ "$rc" -ne 0 ]; then
    echo "!! $target found a problem (exit $rc):"
    grep -E "ERROR|SUMMARY|fuzz property|Test unit written" "$build/fuzz-artifacts/$target.log" | head -20
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" "$build/fuzz-artifacts/$target.log" | tail -3
}

# Every child is waited for; an interrupt stops the running targets.
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait; exit 130' INT TERM
status=0
targets=("$@")
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
  batch=("${targets[@]:i:jobs}")
  pids=()
  for target in "${batch[@]}"; do
    run_one "$target" &
    pids+=($!)
  done
  for k in "${!batch[@]}"; do
    rc=0
    wait "${pids[$k]}" || rc=$?
    report "${batch[$k]}" "$rc"
    [ "$rc" -eq 0 ] || status=1
  done
done
exit $status
