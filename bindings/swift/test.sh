#!/usr/bin/env bash
# Build the Swift binding against a CMake build of NNC and run its tests.
#   bindings/swift/test.sh [BUILD_DIR]     (or NNC_BUILD_DIR=...; default <repo>/build/release)
# Needs libnnc.so in BUILD_DIR/lib (cmake --build BUILD_DIR --target nnc) and
# Swift (swift on PATH, or /opt/swift/usr/bin). Extra arguments after the build
# folder go to `swift test` (e.g. --filter TensorTests).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${1:-${NNC_BUILD_DIR:-$repo/build/release}}"
[ $# -gt 0 ] && shift
build="$(cd "$build" && pwd)"
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
  export PATH=/opt/swift/usr/bin:$PATH
fi
command -v swift >/dev/null 2>&1 || { echo "test.sh: swift not found (skipping the Swift binding)"; exit 77; }
[ -e "$build/lib/libnnc.so" ] || { echo "test.sh: no $build/lib/libnnc.so; build the nnc target first" >&2; exit 1; }
export NNC_BUILD_DIR="$build"
# SwiftPM's own build folder beside the CMake build, so worktrees and presets do not share it.
scratch="$build/swift"
cd "$here"
swift build --scratch-path "$scratch" --build-tests
swift test --scratch-path "$scratch" --skip-build "$@"
