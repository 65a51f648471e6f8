#!/usr/bin/env bash
# Per-call overhead of the C# binding against C (EWSUM on 1-element tensors).
#   bindings/csharp/bench.sh BUILD_DIR [CALLS [ROUNDS]]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(cd "${1:?usage: bench.sh BUILD_DIR}" && pwd)"
shift || true
out="$build/bindings/csharp"
mkdir -p "$out"
cd "$here"
mcs -langversion:7 -unsafe -optimize+ -target:library -out:"$out/Nnc.dll" src/*.cs
cc -std=gnu11 -O2 -fPIC -shared -I"$root/include" -o "$out/libnnc_cref.so" tests/cref.c -L"$build/lib" -lnnc -Wl,-rpath,"$build/lib"
mcs -langversion:7 -optimize+ -out:"$out/Overhead.exe" -r:"$out/Nnc.dll" bench/Overhead.cs
export LD_LIBRARY_PATH="$build/lib:$out${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mono "$out/Overhead.exe" "$@"
