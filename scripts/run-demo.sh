#!/usr/bin/env bash
# perfgroup — run event-loop demo executables (examples/eventloop.c, one per compiler):
# record each, print the summary table that names the janky add-on, write Gecko profiles to
# open in profiler.firefox.com.
# Usage: scripts/run-demo.sh PERFGROUP-CONVERT EXE...   (scripts/demo.sh passes the installed
# converter and the demo built against the installed package by gcc and by clang)
set -euo pipefail
conv=$1
shift
out=$(pwd)/build/demo
mkdir -p "$out"
for exe in "$@"; do
  name=$(basename "$(dirname "$exe")")  # demo-gcc, demo-clang
  echo
  echo "=== $name: the event-loop demo ==="
  rm -f "$out/$name.pgm"
  PERFGROUP_OUTPUT="$out/$name.pgm" PERFGROUP_MODE=trace PERFGROUP_BUFFER=16M "$exe" 40
  echo
  "$conv" "$out/$name.pgm" --summary
  "$conv" "$out/$name.pgm" -o "$out/$name.json"
done
echo
echo "Gecko profiles: $out/*.json — open one at https://profiler.firefox.com ('Load a profile from file')."
