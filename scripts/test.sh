#!/usr/bin/env bash
# perfgroup — the README's second command: install what is missing, build everything, run
# the whole test suite: the main build (both plugins, every test), then the runtime,
# recording and converter tests again under ASan+UBSan and under TSan, and Lua and zlib with
# their own test suites fully instrumented (tests/real; libuv is left to `ctest -L real`), the
# compiler matrix (scripts/compilers.sh: the corpus with every GCC and Clang), Lua again with
# gcc-11 and clang-19 (the matrix's oldest GCC, newest Clang). Ends with ctest's
# summary of the main build. Exit status: non-zero if any test failed.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

scripts/deps.sh

san_labels='^(runtime|recording|converter)$'
for san in "address;undefined" thread; do
  dir=build-san-${san%%;*}
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DPERFGROUP_SANITIZE="$san" \
        -DPERFGROUP_GCC_PLUGIN=OFF -DPERFGROUP_CLANG_PLUGIN=OFF -DPERFGROUP_BENCH=OFF >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  echo "== sanitizer build ($san): runtime, recording and converter tests"
  if ! ctest --test-dir "$dir" -L "$san_labels" -j"$jobs" --output-on-failure >"$dir/ctest.log" 2>&1; then
    cat "$dir/ctest.log"
    exit 1
  fi
  grep -E 'tests passed|tests failed' "$dir/ctest.log"
done

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
# The GCC plugin into GCC's plugin directory, as an install does, so that the test of the
# short name `gcc -fplugin=perfgroup` (plugin-gcc.installed_real) runs instead of skipping.
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO cmake --install build --component gcc-plugin >/dev/null
echo "== real projects: Lua (+ lpeg, cjson suites) and zlib, fully instrumented by both plugins"
if ! ctest --test-dir build -L real -R '^real\.(lua|zlib)\.' --output-on-failure >build/ctest-real.log 2>&1; then
  cat build/ctest-real.log
  exit 1
fi
grep -E 'tests passed|tests failed' build/ctest-real.log
echo "== compiler matrix: the corpus at -O0/-O2 with gcc-11, gcc-12, clang-13/14/15/16/19"
if ! scripts/compilers.sh >build/compilers.log 2>&1; then
  cat build/compilers.log
  exit 1
fi
tail -1 build/compilers.log
echo "== compiler releases bookworm lacks: both plugins compiled against GCC 13/14 and LLVM 17/18 headers"
if ! scripts/headers.sh >build/headers.log 2>&1; then
  cat build/headers.log
  exit 1
fi
grep -c ': ok$' build/headers.log | sed 's/$/ compiles ok (scripts\/headers.sh)/'
# Lua with the oldest GCC and the newest Clang of the matrix too, through the plugins
# compilers.sh built (build-compilers/) and this build's runtime and converter.
echo "== real projects: Lua (+ lpeg, cjson suites) with gcc-11 and clang-19"
pc=$PWD/build-compilers/build
for cc in gcc-11 clang-19; do
  case $cc in  # the first compiler of a family has the plain name (scripts/compilers.sh)
    gcc-11)   p=$pc/plugin-gcc/gcc-11/perfgroup.so; [ -f "$p" ] || p=$pc/plugin-gcc/perfgroup.so
              plug=(--gcc-plugin "$p") ;;
    clang-19) p=$pc/plugin-clang/perfgroup-clang-19.so; [ -f "$p" ] || p=$pc/plugin-clang/perfgroup-clang.so
              plug=(--clang-plugin "$p") ;;
  esac
  if ! python3 tests/real/real_projects.py lua --cc "$cc" --workdir "$PWD/build/real-compat/lua.$cc" \
       --cache "$PWD/build/real-src" --runtime-dir "$PWD/build/runtime" --include "$PWD/include" \
       --convert "$PWD/build/converter/perfgroup-convert" --pgdump "$PWD/build/reader/pgdump" \
       "${plug[@]}" >"build/real-lua-$cc.log" 2>&1; then
    cat "build/real-lua-$cc.log"
    exit 1
  fi
  echo "real.lua.$cc: passed"
done
echo "== main build: every test"
ctest --test-dir build -j"$jobs" --output-on-failure -LE '^slow$' "$@"
