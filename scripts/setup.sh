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

# current DIR: DIR holds a venv made from this requirements file.
current() { [[ -x "$1/bin/python" ]] && cmp -s scripts/requirements.txt "$1/.graft-requirements"; }
# fill DIR: makes it current (a venv, kept where it has python and pip).
fill() {
  if [[ ! -x "$1/bin/python" || ! -x "$1/bin/pip" ]]; then
    rm -rf "$1"  # none, or one an interrupted setup left without them
    python3 -m venv "$1"
  fi
  "$1/bin/pip" install -q --upgrade pip
  "$1/bin/pip" install -q -r scripts/requirements.txt
  cp scripts/requirements.txt "$1/.graft-requirements"
}

if ((want_python)); then
  # One environment per requirements file and Python, shared by every
  # checkout of the machine as Bazel's disk cache is (8 GB, most of it
  # torch's CUDA libraries): a clean clone links it, .venv -> it. A .venv
  # of the checkout's own (a folder, or a link elsewhere) is kept and
  # brought up to the requirements in place.
  cache="${GRAFT_VENV_CACHE:-$HOME/.cache/graft-venv}"
  if [[ -e .venv && "$(readlink .venv)" != "$cache"/* ]]; then
    if ! current .venv; then
      echo "setup: preparing .venv (TensorFlow for the interop tests)"
      fill .venv
    fi
  else
    shared="$cache/$( (python3 --version; cat scripts/requirements.txt) | sha256sum | cut -c1-16)"
    if ! current "$shared"; then
      mkdir -p "$cache"
      exec 9>"$shared.lock"
      flock 9  # another checkout's setup may be filling it
      if ! current "$shared"; then
        echo "setup: preparing $shared (TensorFlow for the interop tests; .venv links it)"
        fill "$shared"
      fi
      exec 9>&-
    fi
    ln -sfn "$shared" .venv
  fi
fi
