#!/usr/bin/env bash
# perfgroup — run the event-loop demo (examples/eventloop.c) built with each plugin: record it,
# print the summary table that names the janky add-on, and write Gecko profiles to open in
# profiler.firefox.com. Usage: scripts/run-demo.sh [BUILD_DIR]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
conv=$build/converter/perfgroup-convert
out=$build/demo
mkdir -p "$out"
for cc in gcc clang; do
  exe=$build/examples/eventloop-$cc
  if [ ! -x "$exe" ]; then
    echo "demo: $exe was not built (is the $cc plugin enabled?)" >&2
    exit 1
  fi
  echo
  echo "=== the event-loop demo, built with the $cc plugin ==="
  rm -f "$out/eventloop-$cc.pgm"
  PERFGROUP_OUTPUT="$out/eventloop-$cc.pgm" PERFGROUP_MODE=trace PERFGROUP_BUFFER=16M "$exe" 40
  echo
  "$conv" "$out/eventloop-$cc.pgm" --summary
  "$conv" "$out/eventloop-$cc.pgm" -o "$out/eventloop-$cc.json"
done
echo
echo "Gecko profiles: $out/eventloop-gcc.json and $out/eventloop-clang.json"
echo "Open one at https://profiler.firefox.com ('Load a profile from file')."
