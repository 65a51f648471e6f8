#!/usr/bin/env bash
# Build the Swift binding against a CMake build of NNC and run its tests.
#   bindings/swift/test.sh [BUILD_DIR]     (or NNC_BUILD_DIR=...; default <repo>/build/release)
# Needs libnnc.so in BUILD_DIR/lib (cmake --build BUILD_DIR --target nnc) and
# Swift (swift on PATH, or /opt/swift/usr/bin). Extra arguments after the build
# folder go to `swift test` (e.g. --filter TensorTests).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${NNC_BUILD_DIR:-$repo/build/release}"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  build="$1"
  shift
fi
build="$(cd "$build" && pwd)"
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
  export PATH=/opt/swift/usr/bin:$PATH
fi
if ! command -v swift >/dev/null 2>&1; then
  # A machine without Swift skips the binding loudly; NNC_REQUIRE_SWIFT=1 makes that a failure.
  echo "bindings/swift/test.sh: SKIPPED: swift not found"
  [ "${NNC_REQUIRE_SWIFT:-0}" = 1 ] && exit 1
  exit 0
fi
[ -e "$build/lib/libnnc.so" ] || { echo "test.sh: no $build/lib/libnnc.so; build the nnc target first" >&2; exit 1; }
export NNC_BUILD_DIR="$build"
# SwiftPM's own build folder beside the CMake build, so worktrees and presets do not share it.
scratch="$build/swift"
cd "$here"
swift build --scratch-path "$scratch" --build-tests
swift test --scratch-path "$scratch" --skip-build --disable-swift-testing "$@"
