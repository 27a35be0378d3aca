#!/usr/bin/env bash
# Installs the plotting libraries `--html` embeds in its reports (docs/report.md): Vega, Vega-Lite
# and vega-embed from the npm registry, at pinned versions, into third_party/npm/node_modules
# (git-ignored: no third-party code is committed). Idempotent: when the pinned versions are
# already there it only checks and returns. Offline-tolerant: without npm or a network it says
# what is missing and exits 0, so `make demo`/`make test` go on; `--html` then fails with a clear
# error and the HTML test is skipped with the reason.
#
#   scripts/setup-web.sh [PREFIX]   (default PREFIX: third_party/npm of this repository)
set -uo pipefail
cd "$(dirname "$0")/.."
PREFIX=${1:-third_party/npm}

# Pinned versions (npm registry, December 2026): vega-lite 6.4 requires vega ^6.0, vega-embed 7.x
# takes any vega/vega-lite; each ships the minified UMD bundle build/<name>.min.js we embed.
PINS=(vega@6.2.0 vega-lite@6.4.1 vega-embed@7.1.0)

installed_version() {  # the "version" of PREFIX/node_modules/$1/package.json, or empty
  local f="$PREFIX/node_modules/$1/package.json"
  [ -f "$f" ] || return 0
  sed -n 's/^  "version": "\([^"]*\)".*/\1/p' "$f" | head -n 1
}

missing=()
for pin in "${PINS[@]}"; do
  name=${pin%@*}
  version=${pin#*@}
  if [ "$(installed_version "$name")" != "$version" ] ||
    [ ! -s "$PREFIX/node_modules/$name/build/$name.min.js" ]; then
    missing+=("$pin")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "setup-web: npm is not installed (Debian: apt-get install npm); --html reports are" \
    "unavailable until scripts/setup-web.sh installs ${PINS[*]}" >&2
  exit 0
fi
echo "setup-web: installing ${PINS[*]} into $PREFIX/node_modules"
mkdir -p "$PREFIX"
# --ignore-scripts: no package's install script runs; --no-save/--no-package-lock: nothing is
# written outside node_modules. All three pins together so npm resolves one consistent tree.
if ! timeout 600 npm install --prefix "$PREFIX" --no-save --no-package-lock --no-audit \
  --no-fund --ignore-scripts --loglevel=error "${PINS[@]}"; then
  echo "setup-web: npm install failed (offline?); --html reports are unavailable until" \
    "scripts/setup-web.sh succeeds" >&2
  exit 0
fi
