#!/usr/bin/env bash
# Scale limits: wall time and peak RSS of the trainsim commands on the limit
# scenarios in tests/hardening/limits/, each run REPS times (default 3); prints the median wall
# time and the largest peak RSS as Markdown rows for bench/README.md ("## limits").
#   bash bench/limits.sh [path/to/trainsim]
set -euo pipefail
bin=${1:-build/trainsim}
reps=${REPS:-3}
dir=tests/hardening/limits
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

measure() {  # label, then the trainsim arguments
  local label=$1
  shift
  local walls=() rss=0
  for ((i = 0; i < reps; i++)); do
    /usr/bin/time -f "%e %M" -o "$tmp/t" "$bin" "$@" >/dev/null 2>"$tmp/err" || {
      echo "| $label | failed: $(head -c 200 "$tmp/err") | |"
      return
    }
    read -r wall kb <"$tmp/t"
    walls+=("$wall")
    ((kb > rss)) && rss=$kb
  done
  local median
  median=$(printf '%s\n' "${walls[@]}" | sort -g | sed -n "$(((reps + 1) / 2))p")
  printf '| %s | %s s | %.1f MiB |\n' "$label" "$median" "$(echo "$rss / 1024" | bc -l)"
}

echo "| command | wall (median of $reps) | peak RSS |"
echo "| --- | ---: | ---: |"
measure "check, 16,384 GPUs" check $dir/gpus_16k.textproto
measure "check, 131,072 GPUs" check $dir/gpus_128k.textproto
for nodes in 128 512 2048 16384; do
  dp=$((nodes / 8))
  measure "run (step + 30 d run), $((nodes * 8)) GPUs, DP $dp" run $dir/gpus_128k.textproto \
    --set cluster.nodes=$nodes --set cluster.spare_nodes=$((nodes / 64)) \
    --set parallelism.dp=$dp --set parallelism.global_batch=$((16 * dp))
done
measure "whatif --fail gpu:37@2h, 131,072 GPUs" whatif $dir/gpus_128k.textproto --fail gpu:37@2h
measure "sweep --top 3, 16,384 GPUs" sweep $dir/gpus_16k.textproto --top 3 --tokens 3e11
measure "sweep --top 3, 131,072 GPUs" sweep $dir/gpus_128k.textproto --top 3 --tokens 3e11
measure "run, 10,000 micro-batches per pipeline" run $dir/microbatches_10k.textproto
measure "whatif, 365 days on 1,024 GPUs" whatif $dir/days_365.textproto --fail gpu:3@100d
