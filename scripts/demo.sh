#!/usr/bin/env bash
# perfgroup — the README's first command: install what is missing, build everything, and run
# the main demo (the event-loop example, built with the GCC plugin, then with the Clang one).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
exec scripts/run-demo.sh build
