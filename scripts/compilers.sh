#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# compilers.sh — the compiler matrix: builds perfgroup.so for each GCC and perfgroup-clang.so
# for each LLVM in COMPILERS (from the same sources, through plugin-gcc/gcc-compat.h and
# plugin-clang/llvm-compat.h), then runs the shared corpus (tests/corpus) at -O0 and -O2 with
# each compiler against the same expected traces, and tests/reentry's program (the inline
# re-entry check) at -O0 and -O2, tests/mapfile's spellings (one group for one file however
# a build spells it), and tests/lite's lite.c at -O2 (lite frames, the inline transitions both
# plugins emit: activations exact, most of them in lite frames, each group's share of the CPU
# against exact mode in the same binary). Installs the compilers that are missing.
#
#   scripts/compilers.sh                  # gcc-11 gcc-12 clang-13 clang-14 clang-15 clang-16 clang-19
#   COMPILERS="gcc-11 clang-19" scripts/compilers.sh
#   JOBS=1 scripts/compilers.sh           # one run at a time (default: one per CPU)
#   scripts/compilers.sh --install        # only install the missing compilers (scripts/test.sh
#                                         # does it in the background while it builds)
#
# Work and plugins go to build-compilers/ (nothing is installed); the plugins are built the way
# a user builds them for several compilers at once (-DPERFGROUP_GCC="gcc-11;gcc-12"
# -DPERFGROUP_LLVM_CONFIG="llvm-config-13;..."). Exit 0 when every compiler
# passes every program; the summary lists failures as <compiler> <opt> <program>.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
COMPILERS=${COMPILERS:-"gcc-11 gcc-12 clang-13 clang-14 clang-15 clang-16 clang-19"}
OUT=$ROOT/build-compilers

pkgs=()
for c in $COMPILERS; do
  v=${c#*-}
  case $c in
    gcc-*)   pkgs+=(gcc-$v g++-$v gcc-$v-plugin-dev) ;;
    clang-*) pkgs+=(clang-$v llvm-$v-dev libclang-$v-dev lld-$v) ;;  # lld: its LTO objects
  esac
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "compilers.sh: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi
scripts/deps.sh
[ "${1-}" = --install ] && exit 0

# The runtime and every plugin in one build: the CMake options a user sets to build plugins for
# several compilers side by side (plugin-gcc/ and plugin-clang/CMakeLists.txt).
gccs=(); llvms=()
for c in $COMPILERS; do
  case $c in
    gcc-*)   gccs+=("$c") ;;
    clang-*) llvms+=("llvm-config-${c#*-}") ;;
  esac
done
join() { local IFS=';'; echo "$*"; }
cmake -S . -B "$OUT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
      -DPERFGROUP_CONVERTER=OFF -DPERFGROUP_BENCH=OFF \
      -DPERFGROUP_GCC_PLUGIN="$([ ${#gccs[@]} -gt 0 ] && echo ON || echo OFF)" \
      -DPERFGROUP_GCC="$(join "${gccs[@]}")" \
      -DPERFGROUP_CLANG_PLUGIN="$([ ${#llvms[@]} -gt 0 ] && echo ON || echo OFF)" \
      -DPERFGROUP_LLVM_CONFIG="$(join "${llvms[@]}")" >/dev/null
cmake --build "$OUT/build" -j2 >/dev/null
RUNTIME=$OUT/build/runtime/libperfgroup.so

plugin_of() {  # compiler -> path of its plugin (the first of each family has the plain name)
  local c=$1 v=${1#*-}
  case $c in
    gcc-*)   if [ "$c" = "${gccs[0]}" ]; then echo "$OUT/build/plugin-gcc/perfgroup.so"
             else echo "$OUT/build/plugin-gcc/gcc-$v/perfgroup.so"; fi ;;
    clang-*) if [ "llvm-config-$v" = "${llvms[0]}" ]; then echo "$OUT/build/plugin-clang/perfgroup-clang.so"
             else echo "$OUT/build/plugin-clang/perfgroup-clang-$v.so"; fi ;;
  esac
}

# Every run is a job of its own (its own work directory and log), JOBS at a time (default: the
# CPUs; scripts/jobs.sh): the runs are compiles and short programs, so one at a time left a
# core idle. The verdicts are gathered after all ended, in the order of the runs.
. scripts/jobs.sh
labels=()  # the label of each run, in the order of job_logs
run() {  # label log command...
  labels+=("$1"); shift
  job "$@"
}
lite_build() {  # compiler plugin exe (none left behind if it fails: the run below fails too)
  rm -f "$3"
  "$1" -O2 -Wall -Wextra -Werror -Iinclude "-fplugin=$2" tests/lite/lite.c -o "$3" "$RUNTIME" \
    "-Wl,-rpath,$(dirname "$RUNTIME")" -lm
}
reentry() {  # compiler opt plugin exe
  "$1" "$2" -Wall -Wextra -Werror -Iinclude "-fplugin=$3" tests/reentry/reentry_prog.c \
    -o "$4" "$RUNTIME" "-Wl,-rpath,$(dirname "$RUNTIME")" -ldl && "$4"
}
for c in $COMPILERS; do
  plugin=$(plugin_of "$c")
  mkdir -p "$OUT/$c"
  n=0
  for src in tests/corpus/*.c tests/corpus/*.cc; do
    for opt in -O0 -O2; do
      name=$(basename "${src%.*}")
      run "$c $opt $name corpus" "$OUT/$c/$name$opt.log" \
        python3 tests/corpus/run_corpus.py --cc "$c" --plugin="-fplugin=$plugin" --opt=$opt \
        --runtime "$RUNTIME" --include include --workdir "$OUT/$c/$name$opt" "$src"
      n=$((n + 1))
    done
  done
  # The inline re-entry check (tests/reentry): the corpus runs its programs with the text
  # trace, which has no re-entry keys, so the check skips nothing there; this program counts
  # the hook calls the check saves and the ones it must let through.
  for opt in -O0 -O2; do
    run "$c $opt reentry" "$OUT/$c/reentry$opt.log" reentry "$c" $opt "$plugin" "$OUT/$c/reentry$opt"
    n=$((n + 1))
  done
  # A map file's meaning (tests/mapfile): one file spelled as every build system spells it
  # (from the root, its directory, ../ paths, absolute, through symlinks), one group.
  case $c in gcc-*) fam=gcc ;; *) fam=clang ;; esac
  run "$c mapfile spellings" "$OUT/$c/mapfile.log" \
    python3 tests/mapfile/mapfile_test.py --cc $fam --compiler "$c" --plugin "$plugin" \
    --runtime "$RUNTIME" --workdir "$OUT/$c/mapfile" spellings
  n=$((n + 1))
  # Lite frames (tests/lite/lite.c): built here with the others, run below one at a time.
  run "$c -O2 lite build" "$OUT/$c/lite-build.log" lite_build "$c" "$plugin" "$OUT/$c/lite"
  n=$((n + 2))
  echo "compilers.sh: $c: $n runs (corpus, reentry, mapfile, lite)" >&2
done
wait
# lite.c compares CPU-time shares between three runs of itself: alone, as ctest runs it
# (RUN_SERIAL), not beside the other jobs.
JOBS=1
for c in $COMPILERS; do
  run "$c -O2 lite" "$OUT/$c/lite.log" "$OUT/$c/lite"
done
wait
fails=(); total=0
for i in "${!job_logs[@]}"; do
  label=${labels[$i]} log=${job_logs[$i]}
  rc=$(job_status "$log")
  total=$((total + 1))
  # 77: a corpus program for other compilers only (run_corpus.py's perfgroup-only)
  case "$rc:$label" in 0:*|77:*corpus) ;; *) fails+=("${label% corpus} ($log)") ;; esac
done
echo "compilers.sh: $total runs, ${#fails[@]} failed (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
for f in "${fails[@]}"; do echo "FAIL: $f"; done
[ ${#fails[@]} -eq 0 ]
