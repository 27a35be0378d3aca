#!/usr/bin/env bash
# What `make demo` shows: the bundled default scenario resolved (`check`), one simulated step and
# the whole three-week run with its checkpoints and failures (`run`), and, last, what GPU 37
# failing at hour 16 costs (`whatif`). Each command takes well under a second. Commands this build does not
# have yet are skipped, so the demo works at every stage of the project.
set -euo pipefail
TRAINSIM=${1:-build/trainsim}
DEMO=scenarios/examples/demo.textproto
cd "$(dirname "$0")/.."

has_command() { "$TRAINSIM" --help | grep -qE "^  $1 "; }
show() {
  echo
  echo "\$ trainsim $*"
  "$TRAINSIM" "$@"
}

show check "$DEMO" --quiet
if has_command run; then show run "$DEMO"; fi
if has_command whatif; then show whatif "$DEMO" --fail gpu:37@16h; fi
