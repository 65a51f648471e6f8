#!/usr/bin/env bash
# Per-call overhead of the Go binding against C (EWSUM on 1-element tensors).
#   bindings/go/bench.sh BUILD_DIR [-n CALLS] [-rounds R]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(cd "${1:?usage: bench.sh BUILD_DIR}" && pwd)"
shift || true
export CGO_ENABLED=1 GO111MODULE=on GOPROXY=off
export CGO_CFLAGS="-I$root/include -O2"
export CGO_LDFLAGS="-L$build/lib -lnnc -Wl,-rpath,$build/lib"
cd "$here"
go run ./cmd/overhead "$@"
