#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# compilers.sh — the compiler matrix: builds perfgroup.so for each GCC and perfgroup-clang.so
# for each LLVM in COMPILERS (from the same sources, through plugin-gcc/gcc-compat.h and
# plugin-clang/llvm-compat.h), then runs the shared corpus (tests/corpus) at -O0 and -O2 with
# each compiler against the same expected traces. Installs the compilers that are missing.
#
#   scripts/compilers.sh                  # gcc-11 gcc-12 clang-13 clang-14 clang-15 clang-16 clang-19
#   COMPILERS="gcc-11 clang-19" scripts/compilers.sh
#
# Work and plugins go to build-compilers/ (nothing is installed). Exit 0 when every compiler
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
    clang-*) pkgs+=(clang-$v llvm-$v-dev libclang-$v-dev) ;;
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

# The runtime, once (the plugins are built per compiler below).
cmake -S . -B "$OUT/runtime" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERFGROUP_GCC_PLUGIN=OFF \
      -DPERFGROUP_CLANG_PLUGIN=OFF -DPERFGROUP_BENCH=OFF >/dev/null
cmake --build "$OUT/runtime" -j2 --target perfgroup >/dev/null
RUNTIME=$OUT/runtime/runtime/libperfgroup.so

# Same flags as plugin-gcc/CMakeLists.txt and plugin-clang/CMakeLists.txt.
build_plugin() {  # compiler -> path of its plugin
  local c=$1 v=${1#*-} d=$OUT/$1
  mkdir -p "$d"
  case $c in
    gcc-*)
      g++-"$v" -shared -fPIC -O2 -std=gnu++17 -fno-rtti -fno-exceptions -fvisibility=hidden \
        -Wall -Wextra -Wno-unused-parameter -Werror -Iinclude -Iplugin-gcc \
        -I"$(gcc-"$v" -print-file-name=plugin)/include" plugin-gcc/perfgroup.cc -o "$d/perfgroup.so"
      echo "$d/perfgroup.so" ;;
    clang-*)
      local objs=()
      for f in frontend instrument table; do
        g++ -c -fPIC -O2 -std=c++17 -fno-exceptions -fvisibility=hidden -fvisibility-inlines-hidden \
          -Wall -Wextra -Wno-unused-parameter -Wno-nonnull -Werror -Iinclude -Iplugin-clang \
          -isystem "$(llvm-config-"$v" --includedir)" -D_GNU_SOURCE -D__STDC_CONSTANT_MACROS \
          -D__STDC_FORMAT_MACROS -D__STDC_LIMIT_MACROS plugin-clang/$f.cpp -o "$d/$f.o"
        objs+=("$d/$f.o")
      done
      g++ -shared -Wl,--allow-shlib-undefined "${objs[@]}" -o "$d/perfgroup-clang.so"
      echo "$d/perfgroup-clang.so" ;;
  esac
}

fails=(); total=0
for c in $COMPILERS; do
  plugin=$(build_plugin "$c")
  n=0
  for src in tests/corpus/*.c tests/corpus/*.cc; do
    for opt in -O0 -O2; do
      name=$(basename "${src%.*}")
      log=$OUT/$c/$name$opt.log
      rc=0
      python3 tests/corpus/run_corpus.py --cc "$c" --plugin="-fplugin=$plugin" --opt=$opt \
        --runtime "$RUNTIME" --include include --workdir "$OUT/$c/$name$opt" "$src" >"$log" 2>&1 || rc=$?
      total=$((total + 1))
      if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then fails+=("$c $opt $name ($log)"); fi
      n=$((n + 1))
    done
  done
  echo "compilers.sh: $c: $n corpus runs" >&2
done
echo "compilers.sh: $total runs, ${#fails[@]} failed"
for f in "${fails[@]}"; do echo "FAIL: $f"; done
[ ${#fails[@]} -eq 0 ]
