#!/usr/bin/env bash
# Build and test the Go binding against a CMake build of NNC.
#   bindings/go/test.sh BUILD_DIR [go test flags…]
# BUILD_DIR is the CMake build directory (e.g. build/release); its lib/ holds
# libnnc.so. The headers come from the source tree's include/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(cd "${1:?usage: test.sh BUILD_DIR}" && pwd)"
shift || true
export CGO_ENABLED=1
export CGO_CFLAGS="-I$root/include -O2"
export CGO_LDFLAGS="-L$build/lib -lnnc -Wl,-rpath,$build/lib"
export GOFLAGS="${GOFLAGS:-} -mod=mod"
export GO111MODULE=on
export GOPROXY=off
cd "$here"
echo "== gofmt"
unformatted="$(gofmt -l .)"
[ -z "$unformatted" ] || { echo "not gofmt-ed: $unformatted" >&2; exit 1; }
echo "== go vet"
go vet ./...
echo "== go test -race"
go test -race -count=1 "$@" ./...
