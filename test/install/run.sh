#!/usr/bin/env bash
# run.sh BUILD_DIR CONSUMER_SRC WORK_DIR CMAKE PKG_CONFIG
set -euo pipefail
build=$1 src=$2 work=$3 cmake=$4 pkgconfig=${5:-}
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
"$cmake" --install "$build" --prefix "$prefix" > "$work/install.log"
test -f "$prefix/include/nnc/ccv_nnc.h" || { echo "headers not installed"; exit 1; }
libdir=$(dirname "$(find "$prefix" -name 'libnnc.so.0' | head -n 1)")
test -n "$libdir" || { echo "libnnc.so.0 not installed"; exit 1; }
# The soname is versioned.
soname=$(objdump -p "$libdir/libnnc.so.0" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = libnnc.so.0 ] || { echo "soname is '$soname', not libnnc.so.0"; exit 1; }

for kind in shared static; do
  "$cmake" -S "$src" -B "$work/$kind" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DNNC_CONSUMER_STATIC=$([ $kind = static ] && echo ON || echo OFF) > "$work/$kind.log"
  "$cmake" --build "$work/$kind" >> "$work/$kind.log"
  LD_LIBRARY_PATH="$libdir" "$work/$kind/consumer" | tee "$work/$kind.out"
  grep '^consumer ok' "$work/$kind.out" > /dev/null || { echo "find_package consumer ($kind) failed"; exit 1; }
done

if [ -n "$pkgconfig" ]; then
  export PKG_CONFIG_PATH="$libdir/pkgconfig"
  flags=$("$pkgconfig" --cflags --libs nnc)
  ${CC:-cc} -std=gnu11 -Wall -Wextra -Werror "$src/consumer.c" $flags -o "$work/pc-consumer"
  LD_LIBRARY_PATH="$libdir" "$work/pc-consumer" | tee "$work/pc.out"
  grep '^consumer ok' "$work/pc.out" > /dev/null || { echo "pkg-config consumer failed"; exit 1; }
else
  echo "pkg-config not found: skipped the pkg-config consumer"
fi
echo "install test passed"
