#!/usr/bin/env bash
# The architecture's size limits, run by ctest: no source file outside tests/ and comm/nccl/ over
# 800 lines, no function over 150 (scripts/function_lengths.py). Reads the files git tracks, or,
# outside a git checkout, every .cc and .h below the source folders.
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h' | grep -v '^tests/\|^comm/nccl/')
else
  mapfile -t files < <(find cli scenarios sweep run checkpoint step parallelism comm sim \
    bench fuzz \( -name '*.cc' -o -name '*.h' \) -not -path 'comm/nccl/*')
fi
exec python3 scripts/function_lengths.py --max-function 150 --max-file 800 "${files[@]}"
