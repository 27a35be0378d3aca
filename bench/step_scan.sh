#!/usr/bin/env bash
# Issue 20's "one step of any valid layout of GPT-3 175B on 1,024 H100 in <= 0.2 s", checked on
# every layout rather than a chosen few: TP 1/2/4/8 x CP 1/2/4/8/16 x PP 1..32 x virtual stages
# (PP x v divides the 96 layers) x ZeRO 1/2 x recompute NONE/FULL, at one micro-batch size
# (MB, default 1: the most micro-batches, so the slowest to simulate), with the demo's 2025
# overlaps on. Layouts that do not fit in memory or are invalid are skipped (step_cpu rejects
# them with the same message as `trainsim run`). One simulation per layout (step_cpu --reps 1:
# thread CPU of the step alone); prints one line per simulated layout, then a summary by ZeRO
# stage (how many exceed 0.2 s and 1 s, median, worst).
#   bash bench/step_scan.sh [path/to/step_cpu] > scan.txt
#   ZERO=1 bash bench/step_scan.sh ...   # one ZeRO stage only (ZeRO-1's 537 layouts take minutes)
#   GPUS=16384 ZERO=1 bash bench/step_scan.sh ...   # the same space on 2,048 nodes (the 1 s target)
#   GPUS=131072 GBS=32768 ZERO=1 bash bench/step_scan.sh ...   # 16,384 nodes, a larger batch
# Takes ~30 min on the 2-core VM of bench/README.md, most of it in the slowest ZeRO-2 layouts.
set -uo pipefail
bin=${1:-build/bench/step_cpu}
mb=${MB:-1}
gpus=${GPUS:-1024}
gbs=${GBS:-1536}  # the demo's global batch (GPT-3's 1,536 samples of 2,048 tokens)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for tp in 1 2 4 8; do for cp in 1 2 4 8 16; do for pp in 1 2 4 8 16 32; do
  n=$((tp * cp * pp))
  ((gpus % n != 0)) && continue
  dp=$((gpus / n))
  ((gbs % (dp * mb) != 0)) && continue
  for v in 1 2 3 4 6 12; do
    ((pp == 1 && v > 1)) && continue
    ((96 % (pp * v) != 0)) && continue
    for z in ${ZERO:-1 2}; do for rc in NONE FULL; do
      sp=false
      ((tp > 1)) && sp=true
      args=(--set cluster.nodes=$((gpus / 8)) --set parallelism.dp=$dp --set parallelism.tp=$tp
        --set parallelism.cp=$cp --set parallelism.pp=$pp --set parallelism.micro_batch=$mb
        --set parallelism.recompute=$rc --set parallelism.sequence_parallel=$sp
        --set parallelism.overlap_param_gather=true --set parallelism.overlap_p2p_comm=true
        --set parallelism.zero_stage=$z --set parallelism.global_batch=$gbs)
      ((v > 1)) && args+=(--set parallelism.virtual_stages=$v)
      # A 2-level fat tree of 64-port switches holds 2,048 NICs: larger clusters take a third.
      ((gpus > 2048)) && args+=(--set cluster.topology.levels=3)
      line=$("$bin" scenarios/examples/demo.textproto "${args[@]}" --reps 1 2>&1 | grep '^rep 0')
      [[ -n $line ]] && echo "tp$tp cp$cp pp$pp dp$dp v$v z$z $rc: $line" | tee -a "$out"
    done; done
  done
done; done; done
echo
for z in 1 2; do
  grep " z$z " "$out" | sed 's/.*rep 0: \([0-9.]*\) s CPU.*/\1/' | sort -g | awk -v z=$z '
    { c[NR] = $1; if ($1 > 0.2) a++; if ($1 > 1) b++ }
    END { if (NR) printf "ZeRO-%s: %d layouts, %d over 0.2 s, %d over 1 s, median %.3f s, worst %.3f s\n",
            z, NR, a, b, c[int((NR + 1) / 2)], c[NR] }'
done
