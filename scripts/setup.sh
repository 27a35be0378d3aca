#!/usr/bin/env bash
# Installs the Debian packages trainsim builds with, when they are missing. Idempotent: when
# everything is present it only checks and returns. Needs root (or sudo) only to install.
set -euo pipefail

PACKAGES=(
  build-essential cmake          # compiler and build system
  libprotobuf-dev protobuf-compiler  # scenario schema (text format and JSON)
  libcli11-dev                   # command line
  nlohmann-json3-dev             # JSON reports and calibration files
  libboost-dev                   # Boost.Asio (header-only): trainsim emulate's processes
  libgtest-dev googletest        # unit tests
  libbenchmark-dev               # bench/
  openmpi-bin libopenmpi-dev     # distributed sweeps (optional at run time)
  clang libclang-rt-14-dev       # make fuzz: libFuzzer with ASan/UBSan
  python3                        # scripts/function_lengths.py (the SourceSizeLimits test)
  python3-dev pybind11-dev       # the Python module (import trainsim)
  chromium                       # headless browser tests of the --html reports
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing missing packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "setup: not root and no sudo; please install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
