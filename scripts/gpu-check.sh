#!/usr/bin/env bash
# gpu-check: build the NCCL/cuBLASLt calibration runner on its own and run a short calibration on
# the GPUs of this machine.
#
# Needs only the CUDA toolkit, NCCL (from the toolkit, NCCL_ROOT/NCCL_HOME, or a pip wheel such as
# nvidia-nccl-cu13), CMake and a C++20 compiler (ninja if present). Run from anywhere:
#   scripts/gpu-check.sh            # table on stdout, calibration in build-gpu/calibration.json
#   OUT=/some/dir scripts/gpu-check.sh   # also writes $OUT/calibration.json and $OUT/gpu-check.log
# What it runs (well under 3 minutes on one GPU): every collective (all-reduce with NCCL_ALGO
# Ring and Tree, reduce-scatter, all-gather, broadcast, send/recv) from 8 B to 1 GiB in steps of
# 4x, 2 warm-up calls and the median of 3 timed batches, each size checked on the host; and the
# matrix products of one GPT-3-175B layer under TP 8 (h 12288, 96 heads, ffn 49152, seq 2048,
# micro-batch 1) in BF16 and FP8 (FP8 skipped below compute capability 8.9). On one GPU the
# NCCL part is a one-rank communicator: it still exercises init, launch, timing and the check.
# Exit codes: 0 passed; 77 no usable GPU here (skipped); anything else failed.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD_DIR:-build-gpu}
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
nccl_root=()
if [ -n "${NCCL_ROOT:-${NCCL_HOME:-}}" ]; then nccl_root=(-DNCCL_ROOT="${NCCL_ROOT:-$NCCL_HOME}"); fi

echo "== gpu-check: building the runner (cmake -S comm/nccl -B $BUILD)"
cmake -S comm/nccl -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${nccl_root[@]}" \
  | grep -E "trainsim NCCL runner|Error|error" || true
if ! cmake --build "$BUILD" -j "$(nproc 2>/dev/null || echo 4)" >"$BUILD/build.log" 2>&1; then
  cat "$BUILD/build.log"
  echo "gpu-check: FAILED to build the runner" >&2
  exit 1
fi
runner="$BUILD/trainsim-nccl-calibrate"

echo "== gpu-check: GPUs"
if ! "$runner" --probe; then
  echo "gpu-check: SKIPPED: no usable GPU on this machine (the runner built and linked)"
  exit 77
fi

out_json="$BUILD/calibration.json"
log="$BUILD/gpu-check.log"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  out_json="$OUT/calibration.json"
  log="$OUT/gpu-check.log"
fi

# GPT-3 175B layer under TP 8: forward, backward (dgrad, wgrad) and unfused attention products.
gemm="qkv=2048x4608x12288,proj=2048x12288x1536,fc1=2048x6144x12288,fc2=2048x12288x6144"
gemm+=",qkv.dgrad=2048x12288x4608,qkv.wgrad=4608x12288x2048"
gemm+=",attn.scores=2048x2048x128x12,attn.context=2048x128x2048x12"

echo "== gpu-check: calibrating (log: $log)"
start=$(date +%s)
"$runner" -b 8 -e 1G -f 4 --warmup 2 --repeats 3 --gemm "$gemm" --dtypes bf16,fp8 \
  --timeout-s 30 --deadline-s 170 -o "$out_json" | tee "$log"
elapsed=$(( $(date +%s) - start ))

# Compact table: per collective curve, the smallest size's time (latency) and the best busbw;
# then the GEMM rows.
echo
echo "== gpu-check: summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), ${elapsed} s)"
grep -m1 '^# trainsim-nccl-calibrate' "$log" | sed 's/^# trainsim-nccl-calibrate: /   /'
awk '
  /^   (all_reduce|reduce_scatter|all_gather|broadcast|send_recv) / {
    key = $1 " " $2 " " $3
    if (!(key in first)) { first[key] = $6; order[n++] = key }
    if (!(key in best) || $8 + 0 > best[key] + 0) { best[key] = $8; at[key] = $4 }
    if ($9 != "OK") bad++
  }
  END {
    printf "   %-15s %-6s %6s %14s %12s %14s\n", "collective", "algo", "ranks", "small t(us)",
           "busbw(GB/s)", "at size(B)"
    for (i = 0; i < n; i++) {
      split(order[i], k, " ")
      printf "   %-15s %-6s %6s %14s %12s %14s\n", k[1], k[2], k[3], first[order[i]],
             best[order[i]], at[order[i]]
    }
    if (bad) { printf "   %d rows NOT checked\n", bad; exit 1 }
  }' "$log"
awk '/^#  gemm/ || /^   [a-z.]+ +(bf16|fp16|fp8) / || /skipped/' "$log" | sed 's/^#  /   /'
echo "== gpu-check: PASSED; calibration written to $out_json"
