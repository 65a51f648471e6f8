#!/usr/bin/env bash
# Build the C# binding and its NUnit tests with Mono's mcs (C# 7) and run them
# with the NUnit 2.6 console runner, against a CMake build of NNC.
#   bindings/csharp/test.sh BUILD_DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(cd "${1:?usage: test.sh BUILD_DIR}" && pwd)"
out="$build/bindings/csharp"
mkdir -p "$out"
cd "$here"
echo "== mcs: Nnc.dll"
mcs -langversion:7 -unsafe -optimize+ -warnaserror+ -nowarn:1591 -target:library -out:"$out/Nnc.dll" -doc:"$out/Nnc.xml" src/*.cs
echo "== cc: libnnc_cref.so (the tests' C reference)"
cc -std=gnu11 -O2 -fPIC -shared -I"$root/include" -o "$out/libnnc_cref.so" tests/cref.c -L"$build/lib" -lnnc -Wl,-rpath,"$build/lib"
echo "== mcs: Nnc.Tests.dll"
mcs -langversion:7 -unsafe -warnaserror+ -target:library -out:"$out/Nnc.Tests.dll" -r:"$out/Nnc.dll" \
  -r:/usr/lib/cli/nunit.framework-2.6.3/nunit.framework.dll tests/*.cs
echo "== nunit-console"
export LD_LIBRARY_PATH="$build/lib:$out${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd "$out"
nunit-console -nologo -noshadow -result="$out/TestResult.xml" "$out/Nnc.Tests.dll"
