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
# With the plotting libraries (scripts/setup-web.sh installs them; it cannot offline) the run also
# writes its page with plots next to the binary.
HTML=()
if [ -d third_party/npm/node_modules/vega-embed ] || [ -n "${TRAINSIM_WEB_DIR:-}" ]; then
  HTML=(--html "$(dirname "$(realpath "$TRAINSIM")")/demo-report.html")
fi
if has_command run; then show run "$DEMO" "${HTML[@]}"; fi
if has_command whatif; then show whatif "$DEMO" --fail gpu:37@16h; fi
# Why a job is slow: a 7B model at about 30% MFU, its causes and re-simulated fixes.
if has_command diagnose; then show diagnose scenarios/examples/low_utilisation.textproto; fi
# Real processes: 8 workers, one SIGKILLed at 10 min and a node lost at 25 min (scaled to seconds),
# recovered from real checkpoints; the run simulation's prediction next to the measurement.
if has_command emulate; then
  EMU_DIR=$(mktemp -d)
  show emulate scenarios/examples/emulate.textproto --dir "$EMU_DIR" --steps 200 || true
  rm -rf "$EMU_DIR"
fi
if [ ${#HTML[@]} -gt 0 ]; then echo; echo "report with plots: ${HTML[1]}"; fi
