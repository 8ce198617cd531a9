#!/usr/bin/env bash
# perfgroup — the README's first command: install what is missing, build everything, install
# it to a prefix (./_install; the GCC plugin goes into GCC's own plugin directory, so that
# `gcc -fplugin=perfgroup` works), build the event-loop demo against the installed package
# with each compiler, run it recorded, and print the summary that names the janky add-on.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO cmake --install build --prefix "$root/_install" >/dev/null
echo "installed to $root/_install (and perfgroup.so into $(gcc -print-file-name=plugin))"
for cc in gcc clang; do
  cmake -S examples/consumer -B "build/demo-$cc" -DCMAKE_C_COMPILER="$cc" \
        -DCMAKE_PREFIX_PATH="$root/_install" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "build/demo-$cc" >/dev/null
done
exec scripts/run-demo.sh "$root/_install/bin/perfgroup-convert" build/demo-gcc/eventloop \
     build/demo-clang/eventloop
