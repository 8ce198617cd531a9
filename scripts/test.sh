#!/usr/bin/env bash
# perfgroup — the README's second command: install what is missing, build everything, run
# the whole test suite: the main build (both plugins, every test), then the runtime,
# recording and converter tests again under ASan+UBSan (the runtime and recording ones under
# TSan), and Lua and zlib with their own test suites fully instrumented (tests/real; libuv is
# left to `ctest -L real`), the compiler matrix (scripts/compilers.sh: the corpus with every
# GCC and Clang the main build does not test; clang 19's in the clang-19-only build), Lua
# again with gcc-11 and clang-19 (the matrix's oldest GCC, newest Clang). Ends with the wall
# time of each phase and how busy the CPUs were in it, then ctest's summary of the main build
# (its last lines, repeated). A phase that fails prints its log and the run goes on (one CI run
# shows every failure, not the first); exit status: non-zero if any phase failed, with their
# names before the summary.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# ctest runs one test more than the CPUs: many tests wait (timers, pipes, a child, a server),
# and at -j2 the main ctest kept its 2 CPUs 89 % busy, TSan's 73 % (RUN_SERIAL tests run alone
# whatever -j says)
tjobs=$((jobs + 1))

# phase NAME: the previous phase ends here, NAME begins; phases_done prints them all.
# Beside each phase's wall time, how busy the CPUs were in it (/proc/stat: user, nice, system,
# irq, softirq over all but steal; steal apart): a phase well under 100 % leaves cores idle.
phase_names=() phase_secs=() phase_busy=() phase_t0=$SECONDS failed=()
cpu_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8+$9, $9; exit}' /proc/stat; }
phase_cpu0=$(cpu_ticks)
phase_end() {
  phase_secs+=($((SECONDS - phase_t0)))
  local now; now=$(cpu_ticks)
  phase_busy+=("$(echo "$phase_cpu0 $now" | awk '{b=$4-$1; t=$5-$2; s=$6-$3;
    printf "%3d %% busy, %d %% stolen", (t > 0 ? 100 * b / t : 0), (t > 0 ? 100 * s / t : 0)}')")
  phase_cpu0=$now
}
phase() {
  if [ ${#phase_names[@]} -gt 0 ]; then phase_end; fi
  phase_names+=("$1") phase_t0=$SECONDS
}
phases_done() {
  phase_end
  echo "== wall time per phase ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
  local i
  for i in "${!phase_names[@]}"; do
    printf '  %-44s %4d:%02d  %s\n' "${phase_names[$i]}" $((phase_secs[i] / 60)) $((phase_secs[i] % 60)) \
      "${phase_busy[$i]}"
  done
  printf '  %-44s %4d:%02d\n' "total" $((SECONDS / 60)) $((SECONDS % 60))
  if [ -n "${PERFGROUP_LAUNCHER-}" ]; then
    ccache -s | sed -n 's/^ *\(Hits\|Misses\): */  ccache (runtime and Clang plugin objects): \1 /p' || true
  fi
}

# What the sanitizer builds need (no plugin: a compiler, cmake, msgpack-c) first; the rest
# installs in the background while they run (on a fresh machine, most of deps.sh's ~3 minutes
# of downloads and unpacking: docs/packaging.md), waited for before the main build.
phase "installs (scripts/deps.sh --base)"
scripts/deps.sh --base
# perfgroup's own runtime and Clang plugin objects through ccache (PERFGROUP_LAUNCHER, the
# top-level CMakeLists.txt; never a compile through a plugin): the run builds them in up to ten
# build trees with the same flags (main build, packaging.subdir.gcc and .compilers, the compiler
# matrix). The cache is this run's own, emptied here: each distinct object is compiled for real
# once per run. -g puts the build directory into the object; CCACHE_NOHASHDIR lets another
# tree's identical compile hit (its debug info names the first tree's directory).
# The plugins without -g in every build of the run (the top-level CMakeLists.txt: the same code,
# a quarter less compile time; the run compiles eleven of them and debugs none).
export PERFGROUP_PLUGIN_DEBUG_INFO=OFF
if command -v ccache >/dev/null; then
  export PERFGROUP_LAUNCHER=ccache CCACHE_DIR=$PWD/build-ccache CCACHE_NOHASHDIR=true
  rm -rf "$CCACHE_DIR"
fi
# In the background: the rest of deps.sh (its exit status into deps-install.rc), then the
# compiler matrix's other compilers (downloads and unpacking beside the sanitizer and main
# builds); each waited for before the first phase that needs it.
rm -f deps-install.rc
{ rc=0; scripts/deps.sh >deps-install.log 2>&1 || rc=$?; echo "$rc" >deps-install.rc
  scripts/compilers.sh --install >compilers-install.log 2>&1; } & install_pid=$!
# So do the other releases' headers headers.sh compiles against (~140 MB from trixie: a
# private apt list, no lock shared with the installs).
scripts/headers.sh --download >headers-download.log 2>&1 & headers_pid=$!
deps_installed() {
  while [ ! -s deps-install.rc ]; do sleep 1; done
  if [ "$(cat deps-install.rc)" != 0 ]; then cat deps-install.log; failed+=("installs (scripts/deps.sh)"); fi
}
installed() {
  [ -n "$install_pid" ] || return 0
  if ! wait "$install_pid"; then cat compilers-install.log; failed+=("installs (scripts/compilers.sh)"); fi
  install_pid=""
}

# ASan+UBSan: the runtime, recording and converter tests. TSan: the runtime and recording
# ones, less the reader's (the converter and the reader run in one thread: TSan finds races
# between threads, and their tests under it took 160 s of CPU for nothing it can see; the
# runtime's threads — the program's, the sampler, the ticker — are in the rest).
for san in "address;undefined" thread; do
  dir=build-san-${san%%;*}
  san_labels='^(runtime|recording|converter)$' san_skip='^$'
  [ "$san" = thread ] && san_labels='^(runtime|recording)$' san_skip='^reader\.'
  phase "sanitizer build and tests ($san)"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DPERFGROUP_SANITIZE="$san" \
        -DPERFGROUP_GCC_PLUGIN=OFF -DPERFGROUP_CLANG_PLUGIN=OFF -DPERFGROUP_BENCH=OFF >/dev/null
  if ! cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1; then
    cat "$dir.build.log"; failed+=("sanitizer build ($san)"); continue
  fi
  echo "== sanitizer build ($san): tests labelled $san_labels"
  if ! ctest --test-dir "$dir" -L "$san_labels" -E "$san_skip" -j"$tjobs" --output-on-failure \
       >"$dir/ctest.log" 2>&1; then
    cat "$dir/ctest.log"; failed+=("sanitizer tests ($san)")
  fi
  grep -E 'tests passed|tests failed' "$dir/ctest.log" || true
done

phase "main build"
deps_installed  # the plugins' headers (gcc-12-plugin-dev, llvm-14-dev, libclang-14-dev)
# converter.fuzz for 30 s (docs/converter.md: ~7 inputs a second from the seeds; the seeds and
# every past finding are replayed by converter.fuzz.regress whatever the time)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERFGROUP_FUZZ_SECONDS=30 >/dev/null
cmake --build build -j"$jobs"
# The GCC plugin into GCC's plugin directory, as an install does, so that the test of the
# short name `gcc -fplugin=perfgroup` (plugin-gcc.installed_real) runs instead of skipping.
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO cmake --install build --component gcc-plugin >/dev/null
phase "real projects: Lua and zlib"
installed  # its sources come with apt-get source
echo "== real projects: Lua (+ lpeg, cjson suites) and zlib, fully instrumented by both plugins"
if ! ctest --test-dir build -L real -R '^real\.(lua|zlib)\.' -j"$jobs" --output-on-failure \
     >build/ctest-real.log 2>&1; then
  cat build/ctest-real.log; failed+=("real projects: Lua and zlib")
fi
grep -E 'tests passed|tests failed' build/ctest-real.log || true
phase "compiler matrix (scripts/compilers.sh)"
# gcc-12 and clang-14, the compilers of the main build, are left to its ctest (corpus.*,
# reentry.*, mapfile.*: the same programs with the same compilers), whose phase comes last;
# clang-19 to the clang-19-only build below (its ctest runs them with clang 19).
echo "== compiler matrix: the corpus at -O0/-O2 with gcc-11, clang-13/15/16 (gcc-12, clang-14: main ctest; clang-19: its own build)"
if ! COMPILERS="gcc-11 clang-13 clang-15 clang-16" scripts/compilers.sh >build/compilers.log 2>&1; then
  cat build/compilers.log; failed+=("compiler matrix")
fi
tail -1 build/compilers.log
phase "headers of GCC 13/14, LLVM 17/18"
echo "== compiler releases bookworm lacks: both plugins compiled against GCC 13/14 and LLVM 17/18 headers"
wait "$headers_pid" || true  # (a failed download is tried again and reported by headers.sh)
if ! scripts/headers.sh >build/headers.log 2>&1; then
  cat build/headers.log; failed+=("headers of GCC 13/14, LLVM 17/18")
fi
grep -c ': ok$' build/headers.log | sed 's/$/ compiles ok (scripts\/headers.sh)/'
# A build for one compiler only, as a user with clang 19 alone configures it: the runtime,
# the converter and the Clang plugin all compiled by clang 19 (it once deleted the stores
# that elect one runtime per process, which no other compiler did: runtime/owner.c), then
# the runtime, recording, add-on and plugin tests of that build, and the compiler matrix's
# runs for clang 19 (the corpus at -O0/-O2, the re-entry check, map files: its ctest's
# corpus, reentry and mapfile labels, the options matrix left to the main build).
phase "clang-19-only build: runtime, recording, add-ons, plugin, corpus"
echo "== clang-19-only build (-DCMAKE_C_COMPILER=clang-19, llvm-config-19): its runtime, recording, add-on, plugin and corpus tests"
# Generated for Ninja, as many users build (the other builds: Unix Makefiles); a tree left by
# an older run with the other generator is made again.
grep -qs 'CMAKE_GENERATOR:INTERNAL=Ninja$' build-clang-19/CMakeCache.txt || rm -rf build-clang-19
if ! { cmake -S . -B build-clang-19 -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-19 \
         -DCMAKE_CXX_COMPILER=clang++-19 -DPERFGROUP_LLVM_CONFIG=llvm-config-19 \
         -DPERFGROUP_GCC_PLUGIN=OFF -DPERFGROUP_BENCH=OFF -DPERFGROUP_FUZZ=OFF \
         -DPERFGROUP_MODEL_SCHEDULES=1000 \
         >build-clang-19.build.log 2>&1 &&
       cmake --build build-clang-19 -j"$jobs" >>build-clang-19.build.log 2>&1; }; then
  cat build-clang-19.build.log; failed+=("clang-19-only build")
elif ! ctest --test-dir build-clang-19 -L '^(runtime|recording|addons|plugin-clang|corpus|reentry|mapfile)$' \
       -LE '^(slow|options)$' -j"$tjobs" --output-on-failure >build-clang-19/ctest.log 2>&1; then
  cat build-clang-19/ctest.log; failed+=("clang-19-only build: tests")
else
  grep -E 'tests passed|tests failed' build-clang-19/ctest.log
fi
# Lua with the oldest GCC and the newest Clang of the matrix too, through the plugins
# compilers.sh and the clang-19-only build built, and the main build's runtime and converter:
# the variants by subsystem (map: default=lua plus the map file) and map-all (the elision
# check); the one-group variant alone is left to gcc-12 and clang-14 (the phase before).
phase "real projects: Lua with gcc-11 and clang-19"
echo "== real projects: Lua (+ lpeg, cjson suites) with gcc-11 and clang-19"
pc=$PWD/build-compilers/build
# Both at once (scripts/jobs.sh; each run compiles with -j2, then runs the suites on one core);
# they share the source cache under its lock (real_projects.py).
. scripts/jobs.sh
for cc in gcc-11 clang-19; do
  case $cc in  # the first compiler of a family has the plain name (scripts/compilers.sh)
    gcc-11)   p=$pc/plugin-gcc/gcc-11/perfgroup.so; [ -f "$p" ] || p=$pc/plugin-gcc/perfgroup.so
              plug=(--gcc-plugin "$p") ;;
    clang-19) plug=(--clang-plugin "$PWD/build-clang-19/plugin-clang/perfgroup-clang.so") ;;
  esac
  job "build/real-lua-$cc.log" \
    python3 tests/real/real_projects.py lua --cc "$cc" --variants map,map-all \
    --workdir "$PWD/build/real-compat/lua.$cc" \
    --cache "$PWD/build/real-src" --runtime-dir "$PWD/build/runtime" --include "$PWD/include" \
    --convert "$PWD/build/converter/perfgroup-convert" --pgdump "$PWD/build/reader/pgdump" \
    "${plug[@]}"
done
wait
for cc in gcc-11 clang-19; do
  if [ "$(job_status "build/real-lua-$cc.log")" -ne 0 ]; then
    cat "build/real-lua-$cc.log"; failed+=("real.lua.$cc")
  else
    echo "real.lua.$cc: passed"
  fi
done
phase "main build: every test (ctest)"
echo "== main build: every test"
rc=0
ctest --test-dir build -j"$tjobs" --output-on-failure -LE '^slow$' "$@" 2>&1 | tee build/ctest-main.log ||
  rc=$?
phases_done
if [ ${#failed[@]} -gt 0 ]; then
  echo "== phases that failed (their logs above):"
  printf '  %s\n' "${failed[@]}"
  [ "$rc" -ne 0 ] || rc=1
fi
# ctest's summary last, as the runner's output must end
sed -n '/tests passed, /,$p' build/ctest-main.log
exit "$rc"
