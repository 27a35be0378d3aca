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
  at=2h
  case $f in scenarios/validation/*) at=5s ;; esac  # those runs last seconds
  one "$n.whatif" whatif "$f" --json --fail "gpu:3@$at"
  one "$n.whatif-text" whatif "$f" --fail "gpu:3@$at"
done
for f in scenarios/examples/*.textproto scenarios/examples/*.json; do
  n=$(basename "${f%.*}")
  one "$n.sweep" sweep "$f" --json --top 10 --tokens 300e9
  one "$n.sweep-text" sweep "$f" --top 10 --tokens 300e9
  one "$n.trials" run "$f" --json --trials 20
done
demo=scenarios/examples/demo.textproto
one collective-auto collective "$demo" --json
one collective-tree collective "$demo" --json --algo tree --group 64 --sizes 8B:1MiB
one collective-ag collective "$demo" --json --op all_gather --group 0,8,16,24 --sizes 64MiB
one collective-expand collective "$demo" --json --expand --group 16 --sizes 1KiB:64MiB --step-factor 8
one collective-a2a collective "$demo" --op all_to_all --group 32
for f in scenarios/examples/*.textproto scenarios/examples/*.json scenarios/validation/*.textproto; do
  one "$(basename "${f%.*}").check" check "$f" --json
done
one validate validate
exit 0
