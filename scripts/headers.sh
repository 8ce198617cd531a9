#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# headers.sh — compiles both plugins against the headers of compiler releases Debian bookworm
# does not ship: GCC 13 and 14 (gcc-N-plugin-dev) and LLVM 17 and 18 (llvm-N-dev,
# libclang-N-dev), from Debian trixie. The flags are those of plugin-gcc/ and plugin-clang/
# CMakeLists.txt plus -Werror: "written for" those releases, checked by their own headers.
# Nothing runs (no gcc-13/14 or clang-17/18 here) and nothing is installed: the .deb files are
# downloaded with a private apt list and unpacked under build-compilers/headers/.
#
# The compiles are the front end's (-fsyntax-only: every declaration and template of ours
# against those headers, with the plugins' warnings, at 60 % of a compile's time; what only
# code generation adds, -O2's flow warnings on our own code, the real builds' compiles give).
#
#   scripts/headers.sh                                   # gcc 13 14, llvm 17 18
#   HEADERS_GCC="14" HEADERS_LLVM="" scripts/headers.sh
#   scripts/headers.sh --download                        # only fetch the .deb files (test.sh
#                                                        # does it in the background at start)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$PWD/build-compilers/headers
GCCS=${HEADERS_GCC-"13 14"}
LLVMS=${HEADERS_LLVM-"17 18"}
SUITE=${HEADERS_SUITE:-trixie}
mkdir -p "$OUT/lists/partial" "$OUT/debs" "$OUT/obj"
echo "deb http://deb.debian.org/debian $SUITE main" >"$OUT/sources.list"
apt_opts=(-o Dir::Etc::sourcelist="$OUT/sources.list" -o Dir::Etc::sourceparts=/dev/null
          -o Dir::State::Lists="$OUT/lists" -o APT::Get::List-Cleanup=0
          -o APT::Sandbox::User="$(id -un)")
need=()
for v in $GCCS; do need+=("gcc-$v-plugin-dev"); done
for v in $LLVMS; do need+=("llvm-$v-dev" "libclang-$v-dev"); done
missing=()
for p in "${need[@]}"; do
  ls "$OUT/debs/${p}_"*.deb >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get "${apt_opts[@]}" update -qq
  (cd "$OUT/debs" && apt-get "${apt_opts[@]}" download "${missing[@]}" >/dev/null)
fi
[ "${1-}" = --download ] && exit 0
unpack() { # dir deb... (with UNPACK_ONLY set: only the members matching its tar wildcards)
  local dir=$1; shift
  [ -d "$dir" ] && return 0
  mkdir -p "$dir.tmp"
  for deb in "$@"; do
    if [ -n "${UNPACK_ONLY:-}" ]; then
      # the wildcards one word each, unexpanded (set -f); a package holding none of one is
      # fine (tar says "Not found in archive" and exits 2): any other complaint is shown, and
      # a header missing fails the compiles below by name
      # shellcheck disable=SC2086
      dpkg-deb --fsys-tarfile "$deb" | (set -f; tar -x -C "$dir.tmp" --wildcards $UNPACK_ONLY 2>&1) |
        grep -v -e 'Not found in archive' -e 'Exiting with failure status' >&2 || true
    else
      dpkg-deb -x "$deb" "$dir.tmp"
    fi
  done
  if [ -z "$(ls -A "$dir.tmp")" ]; then  # not kept as unpacked: the next run tries again
    echo "headers.sh: nothing unpacked from $* into $dir" >&2; rmdir "$dir.tmp"; return 1
  fi
  mv "$dir.tmp" "$dir"
}
# The compiles run JOBS at a time (scripts/jobs.sh; the link of a plugin after its objects),
# reported in order once they ended.
. scripts/jobs.sh
labels=()  # the label of each job, in the order of job_logs
check() { # label log command...
  labels+=("$1"); shift
  job "$@"
}
report() {  # the verdict of every job so far, in order
  local i
  for i in "${!job_logs[@]}"; do
    if [ "$(job_status "${job_logs[$i]}")" -eq 0 ]; then
      echo "headers.sh: ${labels[$i]}: ok"
    else
      echo "headers.sh: ${labels[$i]}: FAILED"; cat "${job_logs[$i]}"; fails=$((fails + 1))
    fi
  done
  labels=() job_logs=()
}
fails=0
# The GCC plugin as plugin-gcc/CMakeLists.txt builds it: gcc-compat.h precompiled first (a
# header including it, compiled to <header>.gch with the files' flags), then every file with
# -include of that header; -Winvalid-pch -Werror: a .gch g++ cannot use is an error, not a
# silent parse of the headers.
gcc_plugin() {  # GCC-include-dir version
  local pch=$OUT/obj/gcc-$2-pch/pg_pch.h
  local flags=(-fPIC -O2 -std=gnu++17 -fvisibility=hidden -fno-rtti -fno-exceptions -Wall -Wextra
               -Wno-unused-parameter -Werror -I"$1" -Iplugin-gcc -Iinclude)
  mkdir -p "$(dirname "$pch")"
  echo "#include \"$PWD/plugin-gcc/gcc-compat.h\"" >"$pch"
  g++ -x c++-header "${flags[@]}" "$pch" -o "$pch.gch" &&
    g++ -fsyntax-only "${flags[@]}" -Winvalid-pch -include "$pch" plugin-gcc/*.cc
}
for v in $GCCS; do
  unpack "$OUT/gcc-$v" "$OUT"/debs/gcc-"$v"-plugin-dev_*.deb
  inc=$(echo "$OUT/gcc-$v"/usr/lib/gcc/*/"$v"/plugin/include)
  check "GCC $v plugin headers ($(cd "$OUT/debs" && echo gcc-"$v"-plugin-dev_*.deb))" "$OUT/gcc-$v.log" \
    gcc_plugin "$inc" "$v"
done
# The Clang plugin's compile units as plugin-clang/CMakeLists.txt builds them
# (PERFGROUP_CLANG_UNITY): its two groups, unity_ast.cpp and unity_ir.cpp, and the two files
# alone.
clang_units="plugin version unity_ast unity_ir"
for v in $LLVMS; do
  # the headers only (usr/lib/llvm-N/include, and usr/include/llvm-N where its llvm/ links to):
  # the two packages' static libraries and tools are 1.2 GB unpacked
  UNPACK_ONLY="./usr/lib/llvm-$v/include/* ./usr/include/llvm-$v/* ./usr/include/llvm-c-$v/*" \
    unpack "$OUT/llvm-$v" "$OUT"/debs/llvm-"$v"-dev_*.deb "$OUT"/debs/libclang-"$v"-dev_*.deb
  inc=$OUT/llvm-$v/usr/lib/llvm-$v/include
  for f in $clang_units; do
    check "LLVM $v headers: plugin-clang/$f.cpp" "$OUT/llvm-$v-$f.log" \
      g++ -fsyntax-only -fPIC -O2 -std=c++17 -fvisibility=hidden -fvisibility-inlines-hidden -fno-exceptions \
          -Wall -Wextra -Wno-unused-parameter -Wno-nonnull -Werror -D_GNU_SOURCE \
          -D__STDC_CONSTANT_MACROS -D__STDC_FORMAT_MACROS -D__STDC_LIMIT_MACROS \
          -isystem "$inc" -Iplugin-clang -Iinclude "plugin-clang/$f.cpp"
  done
done
wait
report
[ $fails -eq 0 ]
