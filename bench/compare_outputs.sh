#!/usr/bin/env bash
# The outputs a speed change must leave unchanged (issue 20: "every validation number and
# bundled example output unchanged"): writes each into OUTDIR, one file per command. Run it
# with the binary before and after a change, then `diff -r BEFORE_DIR AFTER_DIR`.
#   bash bench/compare_outputs.sh path/to/trainsim OUTDIR
# validate --json; run --json of every bundled example and both limits scenarios; the 1,024-GPU
# and Mixtral sweeps; the CP-8 and ZeRO-2-with-PP layouts of bench/README.md; `collective
# --expand` of every op and algorithm on the demo's cluster. About 2 minutes on the 2-core VM.
set -uo pipefail
bin=${1:?usage: compare_outputs.sh TRAINSIM OUTDIR}
out=${2:?usage: compare_outputs.sh TRAINSIM OUTDIR}
mkdir -p "$out"
demo=scenarios/examples/demo.textproto
common=(--set cluster.nodes=128 --set parallelism.micro_batch=1 --set parallelism.recompute=NONE
  --set parallelism.sequence_parallel=false --set parallelism.overlap_param_gather=true
  --set parallelism.overlap_p2p_comm=true)
cp8=("${common[@]}" --set parallelism.dp=8 --set parallelism.tp=1 --set parallelism.cp=8
  --set parallelism.pp=16 --set parallelism.virtual_stages=6)
zero2=("${common[@]}" --set parallelism.dp=16 --set parallelism.tp=2 --set parallelism.cp=8
  --set parallelism.pp=4 --set parallelism.zero_stage=2)
"$bin" validate --json >"$out/validate.json" 2>&1
for f in scenarios/examples/*.textproto scenarios/examples/*.json; do
  [[ -e $f ]] && "$bin" run "$f" --json >"$out/run_$(basename "$f").json" 2>&1
done
for f in gpus_16k gpus_128k; do
  "$bin" run "tests/hardening/limits/$f.textproto" --json >"$out/limits_$f.json" 2>&1
done
"$bin" sweep "$demo" --set cluster.nodes=128 --set parallelism.dp=16 --top 20 --tokens 3e11 \
  --json >"$out/sweep_1024.json" 2>&1
"$bin" sweep scenarios/examples/mixtral_8x22b_h100.textproto --top 5 --tokens 3e11 --json \
  >"$out/sweep_mixtral.json" 2>&1
"$bin" run "$demo" "${cp8[@]}" --json >"$out/cp8.json" 2>&1
"$bin" run "$demo" "${zero2[@]}" --json >"$out/zero2_pp.json" 2>&1
for op in all_reduce reduce_scatter all_gather broadcast all_to_all; do
  for algo in ring tree direct nvls pat; do
    "$bin" collective "$demo" --op $op --algo $algo --expand --json \
      >"$out/collective_${op}_$algo.json" 2>&1
  done
done
echo "$(ls "$out" | wc -l) outputs in $out"
