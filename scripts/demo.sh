#!/usr/bin/env bash
# What `make demo` shows: the bundled default scenario, resolved.
set -euo pipefail
TRAINSIM=${1:-build/trainsim}
cd "$(dirname "$0")/.."
echo "\$ trainsim check scenarios/examples/demo.textproto"
"$TRAINSIM" check scenarios/examples/demo.textproto
