#!/usr/bin/env bash
# fuzz/run.sh BUILD SECONDS TARGET...: runs each libFuzzer target for SECONDS on a working copy
# of its seed corpus (fuzz/corpus/TARGET stays as committed; new inputs go to
# BUILD/fuzz-corpus/TARGET). A crash, leak, sanitizer report, timeout (10 s per input) or an
# input over 2 GiB RSS stops the target and fails the script; the input is saved as
# BUILD/fuzz-artifacts/TARGET-crash-<sha1> — turn it into a test in tests/hardening/.
# The seed is fixed (FUZZ_SEED, default 1) so a CI run is reproducible; vary it to explore more.
set -euo pipefail
build=$1
seconds=$2
shift 2
cd "$(dirname "$0")/.."
status=0
for target in "$@"; do
  mkdir -p "$build/fuzz-corpus/$target" "$build/fuzz-artifacts"
  echo "== $target: ${seconds}s"
  if ! UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$build/fuzz/$target" -seed="${FUZZ_SEED:-1}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$build/fuzz-artifacts/$target-" \
      "$build/fuzz-corpus/$target" "fuzz/corpus/$target" 2>"$build/fuzz-artifacts/$target.log"; then
    echo "!! $target found a problem:"
    grep -E "ERROR|SUMMARY|fuzz property|Test unit written" "$build/fuzz-artifacts/$target.log" | head -20
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" "$build/fuzz-artifacts/$target.log" | tail -3
done
exit $status
