#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run_corpus.py — build one corpus program with a compiler plugin, run it with the runtime's
text trace on, canonicalise the trace and diff it against the program's expected file.

    run_corpus.py --cc gcc|gcc-N|clang|clang-N --plugin='-fplugin=…/perfgroup.so' --opt=-O2 \
                  --runtime build/runtime/libperfgroup.so --include include \
                  --workdir build/tests/corpus/gcc.O2.basic  tests/corpus/basic.c

Directives, in comments near the top of a program (one per line):
    perfgroup-options: default=x map=%S/f.map   plugin options, each becomes
                                                <plugin-arg-prefix><option>; %S = the program's dir
    perfgroup-cflags: -fexceptions             extra compiler flags
    perfgroup-exit: 3                          expected exit status (default 0)
    perfgroup-only: gcc clang>=14              skip (exit 77) with any other compiler (family, or
                                               family>=major version)
    perfgroup-sources: b.cxx                   more units of the program (in the program's dir;
                                               not .c/.cc, which are programs), compiled alike
    perfgroup-sites: gcc 4 clang 4             with that compiler family, the linked program
                                               holds exactly 4 sites (one site per function per
                                               executable, whatever the units; clang: counted
                                               in its perfgroup_sites section, gcc: by symbol)

Expected verdicts (optional): <program>.verdicts, the elision verdicts the plugin's `verbose`
notes give for the program's main unit (one line per instrumented function, "'name' elided: …"
or "'name' keeps its hooks: <reason>", sorted), compiler-independent: both plugins decide
identically and say why in the same words.

Expected trace: <program>.expected, compiler-independent. Only the known-limit programs, whose
point is that the optimiser changes the trace, may have <program>.O0.expected /
<program>.O2.expected instead.

Canonical form: the trace lines sorted stably by their thread field (so each thread's own
sequence is kept in order, threads in name order), then demangled by c++filt.
Exit status: 0 match, 1 mismatch or failure (with a diff or the reason), 77 skipped.
"""
import argparse
import difflib
import glob
import os
import re
import shlex
import subprocess
import sys

# the bare family names: the compilers the build's plugins were built for (ctest's
# environment, tests/CMakeLists.txt), else the project's default pair
COMPILERS = {
    "gcc": {"c": os.environ.get("PERFGROUP_TEST_GCC", "gcc"),
            "c++": os.environ.get("PERFGROUP_TEST_GXX", "g++")},
    "clang": {"c": os.environ.get("PERFGROUP_TEST_CLANG", "clang-14"),
              "c++": os.environ.get("PERFGROUP_TEST_CLANGXX", "clang++-14")},
}
COMPILER_NAME = re.compile(r"^(gcc|clang)(?:-(\d+))?$")  # gcc, gcc-11, clang (= 14), clang-19


def compiler(name, lang):
    """The driver for one language of --cc NAME: gcc-11 -> gcc-11 / g++-11, clang-19 ->
    clang-19 / clang++-19; the bare family names are the project's default pair."""
    family, version = COMPILER_NAME.match(name).groups()
    if not version:
        return COMPILERS[family][lang]
    return {"gcc": {"c": "gcc", "c++": "g++"}, "clang": {"c": "clang", "c++": "clang++"}}[family][lang] + "-" + version


def openmp_link_flags(family, version, cflags):
    """The OpenMP flags of a program's link: its -fopenmp*, and for clang a libomp. Debian's
    libomp-N-dev packages conflict with one another: link every clang's OpenMP code against
    its own libomp if installed, else against the one that is (libomp keeps its __kmpc_ ABI)."""
    openmp = [f for f in cflags if f.startswith("-fopenmp")]
    if openmp and family == "clang":
        libs = sorted(glob.glob(f"/usr/lib/llvm-{version}/lib/libomp.so")) or \
            sorted(glob.glob("/usr/lib/llvm-*/lib/libomp.so"))
        if libs:
            openmp += ["-L" + os.path.dirname(libs[0]), "-Wl,-rpath," + os.path.dirname(libs[0])]
    return openmp


def compiler_name(name):
    if not COMPILER_NAME.match(name):
        raise argparse.ArgumentTypeError(f"{name!r}: expected gcc, gcc-N, clang or clang-N")
    return name
LINK_ONLY = ("-pie", "-fuse-ld=")  # --cflags that only the link step gets (clang: unused, -Werror)
VERDICT = re.compile(r"perfgroup: (\S+ (?:elided|keeps its hooks): .*)$")
DIRECTIVE = re.compile(r"perfgroup-(options|cflags|exit|only|sources|sites):\s*(.*?)\s*(?:\*/)?\s*$")


def directives(src):
    d = {"options": [], "cflags": [], "exit": 0, "only": None, "sources": [], "sites": None}
    with open(src, encoding="utf-8") as f:
        for line in f:
            m = DIRECTIVE.search(line)
            if not m:
                continue
            key, value = m.group(1), m.group(2)
            if key in ("options", "cflags"):
                d[key] += shlex.split(value.replace("%S", os.path.dirname(os.path.abspath(src))))
            elif key == "sources":
                d["sources"] += [os.path.join(os.path.dirname(os.path.abspath(src)), f)
                                 for f in value.split()]
            elif key == "sites":
                v = value.split()
                d["sites"] = {fam: int(n) for fam, n in zip(v[::2], v[1::2])}
            elif key == "exit":
                d[key] = int(value)
            else:
                d["only"] = value.split()
    return d


def canonical(text):
    lines = [l for l in text.splitlines() if l]
    lines.sort(key=lambda l: l.split("\t", 1)[0])  # stable: per-thread order is kept
    out = subprocess.run(["c++filt"], input="\n".join(lines) + "\n", text=True,
                         capture_output=True, check=True).stdout
    return out if lines else ""


def run(cmd, **kw):
    print("+ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    return subprocess.run(cmd, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cc", required=True, type=compiler_name, help="gcc, gcc-N, clang, clang-N")
    ap.add_argument("--plugin", required=True, help="plugin flag(s), shell-quoted")
    ap.add_argument("--plugin-arg-prefix", help="default -fplugin-arg-perfgroup-; for clang 13, "
                    "which has no -fplugin-arg-, '-Xclang -plugin-arg-perfgroup -Xclang '")
    ap.add_argument("--opt", required=True, help="-O0, -O2, ...")
    ap.add_argument("--runtime", required=True, help="libperfgroup.so or .a")
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--cflags", default="", help="extra compiler flags, shell-quoted (options matrix)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("program")
    a = ap.parse_args()

    src = os.path.abspath(a.program)
    d = directives(src)
    family = COMPILER_NAME.match(a.cc).group(1)
    version = int(COMPILER_NAME.match(a.cc).group(2) or subprocess.run(
        [compiler(a.cc, "c"), "-dumpversion"], capture_output=True, text=True).stdout.split(".")[0])

    def allowed(entry):   # "gcc", "clang" or "clang>=14"
        fam, _, least = entry.partition(">=")
        return fam == family and (not least or version >= int(least))
    if d["only"] and not any(allowed(e) for e in d["only"]):
        print(f"SKIP: {os.path.basename(src)} is for {' '.join(d['only'])} only")
        return 77
    lang = "c++" if src.endswith((".cc", ".cpp", ".cxx")) else "c"
    cc = compiler(a.cc, lang)
    if a.plugin_arg_prefix is None:
        a.plugin_arg_prefix = ("-Xclang -plugin-arg-perfgroup -Xclang " if a.cc == "clang-13"
                               else "-fplugin-arg-perfgroup-")
    os.makedirs(a.workdir, exist_ok=True)
    obj = os.path.join(a.workdir, "prog.o")
    exe = os.path.join(a.workdir, "prog")
    trace = os.path.join(a.workdir, "trace.txt")
    for f in (obj, exe, trace):
        if os.path.exists(f):
            os.unlink(f)

    # Plugin flags at the compile step only (clang warns about -fplugin-arg-* when linking).
    def compile_cmd_of(unit, o, extra=(), k=0):
        return ([cc, a.opt, "-g", "-pthread", "-Wall", "-Wextra", "-Werror"]
                + shlex.split(a.plugin)
                + [t for op in d["options"] for t in shlex.split(a.plugin_arg_prefix + shlex.quote(op))]
                + [t for op in extra for t in shlex.split(op)]
                + d["cflags"] + [f for f in shlex.split(a.cflags) if not f.startswith(LINK_ONLY)]
                + ["-I" + i for i in a.include]
                + (["-x", lang] if k else []) + ["-c", unit, "-o", o])

    objs = []
    for k, unit in enumerate([src] + d["sources"]):
        o = obj if k == 0 else os.path.join(a.workdir, f"unit{k}.o")
        compile_cmd = compile_cmd_of(unit, o, k=k)
        if run(compile_cmd).returncode:
            print(f"FAIL: compile {os.path.basename(unit)}")
            return 1
        objs.append(o)
    verdicts_file = os.path.splitext(src)[0] + ".verdicts"
    if os.path.exists(verdicts_file):
        verbose = compile_cmd_of(src, obj + ".verbose.o", [a.plugin_arg_prefix + "verbose"])
        p = run(verbose, capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
        if p.returncode:
            sys.stdout.write(p.stderr)
            print("FAIL: compile with verbose")
            return 1
        got_v = sorted({VERDICT.search(l).group(1).replace("\u2018", "'").replace("\u2019", "'")
                        for l in p.stderr.splitlines() if VERDICT.search(l)})
        want_v = [l for l in open(verdicts_file, encoding="utf-8").read().splitlines() if l]
        if got_v != want_v:
            sys.stdout.writelines(difflib.unified_diff([l + "\n" for l in want_v],
                                                       [l + "\n" for l in got_v],
                                                       verdicts_file, "verbose verdicts"))
            print("FAIL: elision verdicts differ")
            return 1
    rt = os.path.abspath(a.runtime)
    openmp = openmp_link_flags(family, version, d["cflags"])
    link_cmd = [cc, a.opt, "-pthread"] + openmp + [f for f in shlex.split(a.cflags) if f.startswith(("-flto", "-fPIE", "-fPIC", "-pie", "-fuse-ld="))] \
        + objs + ["-o", exe, rt]
    if ".so" in os.path.basename(rt):  # libperfgroup.so or a versioned libperfgroup.so.0.1.0
        link_cmd.append("-Wl,-rpath," + os.path.dirname(rt))
    if run(link_cmd).returncode:
        print("FAIL: link")
        return 1

    if d["sites"] is not None and family in d["sites"]:
        if family == "clang":
            # Every site is a 40-byte perfgroup_site (include/perfgroup/abi.h) in one section.
            sections = run(["readelf", "-SW", exe], capture_output=True, text=True).stdout
            m = re.search(r"\sperfgroup_sites\s+\S+\s+\S+\s+\S+\s+([0-9a-f]+)", sections)
            n = int(m.group(1), 16) // 40 if m else 0
        else:
            # GCC: a COMDAT function's site lives outside the section, which holds an entry
            # per unit pointing at it (PERFGROUP_SITE_F_INDIRECT): count the sites' symbols,
            # __perfgroup_site_<function>, not the entries' (__perfgroup_isite_...).
            syms = run(["nm", exe], capture_output=True, text=True).stdout.split("\n")
            n = sum(1 for s in syms if s.split()[-1:] and s.split()[-1].startswith("__perfgroup_site_"))
        if n != d["sites"][family]:
            print(f"FAIL: {n} sites in the program, expected {d['sites'][family]}")
            print(run(["nm", exe], capture_output=True, text=True).stdout)
            return 1

    env = dict(os.environ, PERFGROUP_TEXT=trace)
    p = run([exe], env=env, timeout=60, capture_output=True, text=True)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    if p.returncode != d["exit"]:
        print(f"FAIL: exit status {p.returncode}, expected {d['exit']}")
        return 1
    got = canonical(open(trace, encoding="utf-8").read()) if os.path.exists(trace) else ""

    base = os.path.splitext(src)[0]
    expected_file = f"{base}.{a.opt.lstrip('-')}.expected"
    if not os.path.exists(expected_file):
        expected_file = base + ".expected"
    want = open(expected_file, encoding="utf-8").read()
    if got == want:
        print(f"PASS: {os.path.basename(src)} {a.cc} {a.opt} matches {os.path.basename(expected_file)}")
        return 0
    sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                               expected_file, "canonical trace"))
    print("FAIL: trace differs")
    return 1


if __name__ == "__main__":
    sys.exit(main())
