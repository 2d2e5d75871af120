#!/usr/bin/env bash
# Installs what graft needs and is missing; quick when everything is there.
#
#   scripts/setup.sh            Debian packages (build, and chromium for a
#                               test) and the Python environment (.venv,
#                               for the interop tests)
#   scripts/setup.sh --no-python   the build's Debian packages only
#   scripts/setup.sh --fuzz        also clang, lld and libFuzzer (scripts/fuzz.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

want_python=1
want_fuzz=0
for arg in "$@"; do
  case "$arg" in
    --no-python) want_python=0 ;;
    --fuzz) want_fuzz=1 ;;
    *) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

APT_PACKAGES=(
  bazel-bootstrap      # Bazel 4 (WORKSPACE); the build is offline
  g++
  tao-pegtl-dev        # rule grammar
  libprotobuf-dev protobuf-compiler
  libyaml-cpp-dev
  libboost-graph-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libeigen3-dev
  libabsl-dev
  libcli11-dev
  libgraphviz-dev      # the diff drawing's layout (Graphviz's `dot`, as a library)
  pybind11-dev python3-dev   # the Python extension (import graft)
  python3 python3-venv
  time                 # peak memory of each case in the bad-input catalog
)
# The test command also opens graft's HTML diff in a headless browser.
TEST_PACKAGES=(chromium)

# The fuzzers: clang with libFuzzer and the sanitizers' runtimes.
FUZZ_PACKAGES=(clang-14 lld libclang-rt-14-dev)

wanted=("${APT_PACKAGES[@]}")
if ((want_python)); then wanted+=("${TEST_PACKAGES[@]}"); fi
if ((want_fuzz)); then wanted+=("${FUZZ_PACKAGES[@]}"); fi
missing=()
for pkg in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ((want_python)); then
  stamp=".venv/.graft-requirements"
  if [[ ! -x .venv/bin/python ]] || ! cmp -s scripts/requirements.txt "$stamp"; then
    echo "setup: preparing .venv (TensorFlow for the interop tests)"
    if [[ ! -x .venv/bin/python || ! -x .venv/bin/pip ]]; then
      rm -rf .venv  # none, or one an interrupted setup left without pip
      python3 -m venv .venv
    fi
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -r scripts/requirements.txt
    cp scripts/requirements.txt "$stamp"
  fi
fi
