#!/usr/bin/env bash
# Writes every bundled scenario's machine-readable output into one folder, so that a refactor can
# prove it changed nothing: run this with the binary before and after, then `diff -r` the two.
#   scripts/golden.sh BINARY OUTDIR
# Covers `run --json` (with --trace and --events), `whatif --json`, `sweep --json --top 10`
# (examples only: the validation rows' full sweeps are covered by tests) and `collective --json`.
set -uo pipefail
TRAINSIM=$(realpath "${1:?usage: golden.sh BINARY OUTDIR}")
OUT=$(realpath -m "${2:?usage: golden.sh BINARY OUTDIR}")
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
one() {  # name, then the command's arguments; records stdout, stderr and the exit code
  local name=$1
  shift
  "$TRAINSIM" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
  echo $? >"$OUT/$name.rc"
}
for f in scenarios/examples/*.textproto scenarios/examples/*.json scenarios/validation/*.textproto; do
  n=$(basename "${f%.*}")
  # The trace path is printed, so it is relative and the same in every checkout.
  one "$n.run" run "$f" --json --events --trace "golden-$n.trace.json"
  mv golden-"$n".trace.json "$OUT/$n.trace.json" 2>/dev/null
  mv golden-"$n".trace.run.json "$OUT/$n.trace.run.json" 2>/dev/null
  one "$n.run-text" run "$f"
  one "$n.whatif" whatif "$f" --json --fail gpu:3@2h
  one "$n.whatif-text" whatif "$f" --fail gpu:3@2h
done
for f in scenarios/examples/*.textproto scenarios/examples/*.json; do
  n=$(basename "${f%.*}")
  one "$n.sweep" sweep "$f" --json --top 10
  one "$n.sweep-text" sweep "$f" --top 10
  one "$n.trials" run "$f" --json --trials 20
done
one collective-ring collective --json --op all_reduce --gpus 128 --bytes 1GiB
one collective-tree collective --json --op all_reduce --gpus 64 --bytes 8KiB --algo tree
one collective-ag collective --json --op all_gather --gpus 16 --bytes 64MiB
one validate validate
exit 0
