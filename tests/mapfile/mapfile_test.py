#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""mapfile_test.py — a map file means the same thing in every build system (issue 29).

One project tree (written into the work directory by this script), a map file at its root:
    proj/perfgroup.map   net/*.h net-headers · net/* net · */net/* net2 · include/ util · * other
    proj/main.c          main, app_run                                   -> other
    proj/net/sock.c      sock_send            (#include "sock.h", <util.h>) -> net
    proj/net/sock.h      sock_frame (static inline)                     -> net-headers
    proj/include/util.h  util_twice (static inline)                     -> util

Cases (every one compiles real code with the real plugin, links the real runtime, runs the
program with PERFGROUP_TEXT and reads each function's file group from the trace):
  spellings       net/sock.c compiled the ways build systems spell it — from the project root
                  (plain make), from net/ (recursive make, autotools), from a build directory
                  with ../ paths (meson), absolute (CMake), through a symlink to the project and
                  through a symlinked source directory, with the map named relatively or
                  absolutely: every spelling gives every function the same group; `verbose`
                  says which glob gave it, naming the absolute path. Then a map whose glob
                  starts with '*' (Redis's `*deps/lua/*`): .c file and header alike, every
                  spelling
  recursive_make  a small recursive-make tree (make -C into each directory, which compiles
                  `x.c` from there, the map named as $(TOP)/perfgroup.map) and the same tree
                  built by CMake (absolute paths): grouped by directories, both alike; then
                  `perfgroup map` on CMake's compile_commands.json predicts exactly the groups
                  both builds gave, and lists the one glob that matched nothing
  notes           (needs both plugins) the verbose map notes of gcc and clang, word for word
  tool            `perfgroup map` on a meson-style database (relative "directory"/"file",
                  "arguments"), --default, and bad input: one stderr line with the byte offset,
                  exit 2, nothing on stdout

    mapfile_test.py --cc gcc|clang --compiler gcc-12 --plugin P --runtime libperfgroup.so \
        --include include --tool build/live/perfgroup --workdir DIR CASE
Exit status: 0 pass, 1 fail, 77 skipped.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

A = None
ENV = dict(os.environ, LC_ALL="C", LANG="C")
PFX = "-fplugin-arg-perfgroup-"


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def clang13_args(cmd):
    """clang 13 has no -fplugin-arg-: its plugin options go through -Xclang (as
    tests/corpus/run_corpus.py passes them)."""
    if not re.search(r"clang-13$", os.path.basename(cmd[0])):
        return cmd
    out = []
    for c in cmd:
        out += (["-Xclang", "-plugin-arg-perfgroup", "-Xclang", c[len(PFX):]]
                if c.startswith(PFX) else [c])
    return out


def sh(cmd, cwd=None, check=True, env=None):
    cmd = clang13_args(cmd)
    print("+ " + (" ".join(shlex.quote(c) for c in cmd)) + (f"   [in {cwd}]" if cwd else ""),
          flush=True)
    p = subprocess.run(cmd, cwd=cwd, env=env or ENV, capture_output=True, text=True)
    sys.stdout.write(p.stdout + p.stderr)
    if check and p.returncode:
        raise Fail(f"{cmd[0]} exited {p.returncode}")
    return p


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


MAP = """# the issue's map, and one for headers
net/*.h     net-headers
net/*       net
*/net/*     net2
include/    util
*           other
"""
SOCK_H = """#ifndef SOCK_H
#define SOCK_H
static inline int sock_frame(int x) { return x * 3 + 1; }
#endif
"""
UTIL_H = """#ifndef UTIL_H
#define UTIL_H
static inline int util_twice(int x) { return x * 2; }
#endif
"""
SOCK_C = """#include "sock.h"
#include <util.h>
int sock_send(int x) { return sock_frame(util_twice(x)); }
"""
MAIN_C = """#include <stdio.h>
int sock_send(int x);
int app_run(int x) { return sock_send(x) + 1; }
int main(void) { volatile int v = 2; printf("%d\\n", app_run(v)); return 0; }
"""
WANT = {"main": "other", "app_run": "other", "sock_send": "net", "sock_frame": "net-headers",
        "util_twice": "util"}


def make_tree(root):
    write(os.path.join(root, "perfgroup.map"), MAP)
    write(os.path.join(root, "main.c"), MAIN_C)
    write(os.path.join(root, "net", "sock.c"), SOCK_C)
    write(os.path.join(root, "net", "sock.h"), SOCK_H)
    write(os.path.join(root, "include", "util.h"), UTIL_H)


def plugin(*opts):
    return ["-fplugin=" + A.plugin] + [PFX + o for o in opts]


def groups_of(exe):
    """{function: file group} from the program's text trace (every '>' line)."""
    t = os.path.join(A.workdir, "trace.txt")
    if os.path.exists(t):
        os.unlink(t)
    p = sh([exe], env=dict(ENV, PERFGROUP_TEXT=t), check=False)
    if p.returncode:
        raise Fail(f"{exe} exited {p.returncode}")
    got = {}
    for line in open(t).read().splitlines():
        m = re.match(r"[^\t]*\t> ([^\t]+)\t([^|]*)\|(.*)$", line)
        if m:
            got[m.group(1)] = m.group(3)
    return got


def link(objs, exe):
    sh([A.compiler, "-o", exe] + objs + [A.runtime, "-Wl,-rpath," + os.path.dirname(A.runtime)])


MAP_NOTE = re.compile(r"note: (perfgroup: '[^']*' matches .*)$")


def map_notes(stderr):
    return [MAP_NOTE.search(l).group(1).replace("\u2018", "'").replace("\u2019", "'")
            for l in stderr.splitlines() if MAP_NOTE.search(l)]


def spellings(compiler, plugin_):
    """[(label, cwd, compile args of net/sock.c)] over the tree in <workdir>/t: the table of
    issue 29 and the symlinked spellings. Returns the tree's real root too."""
    t = os.path.join(A.workdir, "t")
    shutil.rmtree(t, ignore_errors=True)
    proj = os.path.join(t, "proj")
    make_tree(proj)
    os.makedirs(os.path.join(proj, "build"))
    os.makedirs(os.path.join(t, "builddir"))
    os.symlink("proj", os.path.join(t, "link"))                  # the project through a symlink
    os.makedirs(os.path.join(t, "vendor"))
    os.symlink("../proj/net", os.path.join(t, "vendor", "net"))  # a symlinked source directory
    ab = os.path.join(proj, "perfgroup.map")
    return proj, [
        ("plain make from the root", proj, ["-Iinclude", "net/sock.c", PFX + "map=perfgroup.map"]),
        ("recursive make: from net/", os.path.join(proj, "net"),
         ["-I../include", "sock.c", PFX + "map=../perfgroup.map"]),
        ("meson: from a build directory beside it, ../ paths", os.path.join(t, "builddir"),
         ["-I../proj/include", "../proj/net/sock.c", PFX + "map=../proj/perfgroup.map"]),
        ("meson: from proj/build", os.path.join(proj, "build"),
         ["-I../include", "../net/sock.c", PFX + "map=../perfgroup.map"]),
        ("CMake: absolute paths", "/", ["-I" + proj + "/include", proj + "/net/sock.c", PFX + "map=" + ab]),
        ("absolute source, map relative", os.path.join(proj, "net"),
         ["-I" + proj + "/include", proj + "/net/sock.c", PFX + "map=../perfgroup.map"]),
        ("the project through a symlink", os.path.join(t, "link"),
         ["-Iinclude", "net/sock.c", PFX + "map=" + os.path.join(t, "link", "perfgroup.map")]),
        ("a symlinked source directory", t,
         ["-Iproj/include", "vendor/net/sock.c", PFX + "map=proj/perfgroup.map"]),
        ("a symlinked source directory, absolute", "/",
         ["-I" + t + "/link/include", t + "/vendor/net/sock.c", PFX + "map=" + t + "/link/perfgroup.map"]),
    ]


def case_spellings():
    proj, table = spellings(A.compiler, A.plugin)
    if A.cc == "clang":  # clang's -working-directory: relative paths are that directory's
        table.append(("clang -working-directory", "/", ["-working-directory=" + proj, "-Iinclude",
                                                         "net/sock.c", PFX + "map=perfgroup.map"]))
    main_o = os.path.join(A.workdir, "main.o")
    sh([A.compiler, "-O2", "-c", "main.c", "-o", main_o] + plugin("map=perfgroup.map"), cwd=proj)
    real = os.path.realpath(proj)
    want_notes = [f"perfgroup: '{real}/net/sock.c' matches 'net/*' (MAP:3): file group 'net'",
                  f"perfgroup: '{real}/net/sock.h' matches 'net/*.h' (MAP:2): file group 'net-headers'",
                  f"perfgroup: '{real}/include/util.h' matches 'include/' (MAP:5): file group 'util'"]
    failures = []
    for k, (label, cwd, args) in enumerate(table):
        obj = os.path.join(A.workdir, f"sock{k}.o")
        p = sh([A.compiler, "-O2", "-c", "-o", obj] + plugin("verbose") + args, cwd=cwd)
        exe = os.path.join(A.workdir, f"app{k}")
        link([main_o, obj], exe)
        got = groups_of(exe)
        if got != WANT:
            failures.append(f"{label}: groups {got}, want {WANT}")
        mapname = [a[len(PFX) + 4:] for a in args if a.startswith(PFX + "map=")][0]
        notes = sorted(n.replace(f"({mapname}:", "(MAP:") for n in map_notes(p.stderr))
        if notes != sorted(want_notes):
            failures.append(f"{label}: verbose map notes\n  " + "\n  ".join(notes)
                            + "\nwant\n  " + "\n  ".join(sorted(want_notes)))
        print(f"{label}: {got}", flush=True)
    # Redis's case: a glob starting with '*' (before: only the headers of a directory built
    # from inside itself matched it) matches .c files and headers in every spelling
    write(os.path.join(proj, "star.map"), "*proj/net/* deps\ninclude/* util\n")
    for k, (label, cwd, args) in enumerate(table):
        args = [a if not a.startswith(PFX + "map=") else a[:-len("perfgroup.map")] + "star.map"
                for a in args]
        obj = os.path.join(A.workdir, f"star{k}.o")
        # all-functions: sock_frame, now in its only caller's group, would be elided
        sh([A.compiler, "-O2", "-c", "-o", obj] + plugin("all-functions") + args, cwd=cwd)
        exe = os.path.join(A.workdir, f"star{k}")
        link([main_o, obj], exe)
        got = groups_of(exe)
        want = dict(WANT, sock_send="deps", sock_frame="deps")
        if got != want:
            failures.append(f"{label}, star.map: groups {got}, want {want}")
    if failures:
        raise Fail("\n".join(failures))


# ---- a small recursive-make tree, and the same tree built by CMake --------------------------

RTREE = {
    "perfgroup.map": "# grouped by directories\nnet/      net\ncore/     core\nlib/*/    lib\n"
                     "include/  headers\nold/*     legacy\nmain.c    app\n",
    "Makefile": "SUBDIRS = net core lib/zip\n"
                "all: app\n"
                "app: main.o subdirs\n"
                "\t$(CC) -o $@ main.o net/net.o core/core.o lib/zip/zip.o $(LDLIBS)\n"
                "subdirs:\n"
                "\tfor d in $(SUBDIRS); do $(MAKE) -C $$d TOP=$$(echo $$d | sed 's|[^/]*|..|g') || exit 1; done\n"
                "main.o: main.c\n\t$(CC) $(CFLAGS) -Iinclude -fplugin-arg-perfgroup-map=perfgroup.map -c main.c\n"
                ".PHONY: subdirs\n",
    "sub.mk": "%.o: %.c\n\t$(CC) $(CFLAGS) -I$(TOP)/include -fplugin-arg-perfgroup-map=$(TOP)/perfgroup.map -c $<\n",
    "net/Makefile": "all: net.o\ninclude $(TOP)/sub.mk\n",
    "core/Makefile": "all: core.o\ninclude $(TOP)/sub.mk\n",
    "lib/zip/Makefile": "all: zip.o\ninclude $(TOP)/sub.mk\n",
    "include/common.h": "static inline int common_mix(int x) { return x ^ 5; }\n",
    "net/net.c": "#include <common.h>\nint net_io(int x) { return common_mix(x) + 1; }\n",
    "core/core.c": "int net_io(int);\nint core_step(int x) { return net_io(x) * 2; }\n",
    "lib/zip/zip.c": "int zip_pack(int x) { return x + 7; }\n",
    "main.c": "#include <stdio.h>\nint core_step(int);\nint zip_pack(int);\n"
              "int main(void) { volatile int v = 1; printf(\"%d\\n\", core_step(v) + zip_pack(v)); return 0; }\n",
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.13)\nproject(rtree C)\n"
                      "include_directories(include)\n"
                      "add_compile_options(-fplugin-arg-perfgroup-map=${CMAKE_SOURCE_DIR}/perfgroup.map)\n"
                      "add_executable(app main.c net/net.c core/core.c lib/zip/zip.c)\n"
                      "target_link_libraries(app ${RUNTIME})\n",
}
RWANT = {"main": "app", "core_step": "core", "net_io": "net", "common_mix": "headers",
         "zip_pack": "lib"}
RSOURCES = {"main.c": "app", "net/net.c": "net", "core/core.c": "core", "lib/zip/zip.c": "lib"}


def case_recursive_make():
    if not shutil.which("make") or not shutil.which("cmake"):
        raise Skip("make or cmake missing")
    r = os.path.join(A.workdir, "rtree")
    shutil.rmtree(r, ignore_errors=True)
    for name, text in RTREE.items():
        write(os.path.join(r, name), text)
    cflags = " ".join(["-O2"] + [shlex.quote(f) for f in plugin()])
    rt = A.runtime + " -Wl,-rpath," + os.path.dirname(A.runtime)
    sh(["make", "CC=" + A.compiler, "CFLAGS=" + cflags, "LDLIBS=" + rt], cwd=r)
    got_make = groups_of(os.path.join(r, "app"))
    b = os.path.join(A.workdir, "rtree-cmake")
    shutil.rmtree(b, ignore_errors=True)
    sh(["cmake", "-S", r, "-B", b, "-DCMAKE_C_COMPILER=" + shutil.which(A.compiler),
        "-DCMAKE_C_FLAGS=" + cflags, "-DRUNTIME=" + A.runtime,
        "-DCMAKE_BUILD_RPATH=" + os.path.dirname(A.runtime), "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"])
    sh(["cmake", "--build", b])
    got_cmake = groups_of(os.path.join(b, "app"))
    if got_make != RWANT or got_cmake != RWANT:
        raise Fail(f"recursive make: {got_make}\nCMake: {got_cmake}\nwant {RWANT}")
    # perfgroup map predicts it from CMake's database, and names the glob nothing matched
    p = sh([A.tool, "map", os.path.join(r, "perfgroup.map"), os.path.join(b, "compile_commands.json")])
    predicted = {}
    for line in p.stdout.split("# globs that matched nothing")[0].splitlines():
        if not line.startswith("#") and line.strip():
            group, path = line.split()[:2]
            predicted[path] = group
    if predicted != RSOURCES:
        raise Fail(f"perfgroup map predicted {predicted}, the builds gave {RSOURCES}")
    if "# globs that matched nothing (2 of 6):" not in p.stdout or \
            os.path.join(r, "perfgroup.map") + ":6: old/* legacy" not in p.stdout or \
            ":5: include/ headers" not in p.stdout:
        raise Fail("perfgroup map should list old/* (and include/: headers are not in the "
                   "database) as matching nothing")


def case_notes():
    """The map notes of both plugins, word for word, for every spelling."""
    if not A.gcc_plugin or not A.clang_plugin:
        raise Skip("needs both plugins")
    out = {}
    for fam, comp, plug in (("gcc", A.gcc, A.gcc_plugin), ("clang", A.clang, A.clang_plugin)):
        A.plugin = plug
        proj, table = spellings(comp, plug)
        notes = []
        for label, cwd, args in table:
            p = sh([comp, "-O2", "-c", "-o", os.path.join(A.workdir, "x.o"), "-fplugin=" + plug,
                    PFX + "verbose", PFX + "default=fallback"] + args, cwd=cwd)
            notes.append(sorted(map_notes(p.stderr)))
        # a file no glob matches (default=), and no default
        write(os.path.join(proj, "lone.map"), "zzz/* never\n")
        for extra in ([PFX + "default=fallback"], []):
            p = sh([comp, "-c", "-o", os.path.join(A.workdir, "x.o"), "-fplugin=" + plug,
                    PFX + "verbose", PFX + "map=lone.map", "main.c"] + extra, cwd=proj)
            notes.append(map_notes(p.stderr))
        out[fam] = notes
    if out["gcc"] != out["clang"]:
        raise Fail("the plugins' map notes differ:\n" + json.dumps(out, indent=1))
    real = os.path.realpath(os.path.join(A.workdir, "t", "proj"))
    if out["gcc"][-2] != [f"perfgroup: '{real}/main.c' matches no glob of 'lone.map': file group "
                          "'fallback' (default=)"] or \
            out["gcc"][-1] != [f"perfgroup: '{real}/main.c' matches no glob of 'lone.map': no file group"]:
        raise Fail("unexpected no-match notes: " + json.dumps(out["gcc"][-2:]))
    print(json.dumps(out["gcc"], indent=1))


def case_tool():
    """perfgroup map on a meson-style database; --default; bad input."""
    proj, _ = spellings(A.compiler, A.plugin)
    b = os.path.join(proj, "build")
    db = os.path.join(b, "compile_commands.json")
    write(db, json.dumps([
        {"directory": b, "arguments": ["cc", "-I../include", "-c", "../net/sock.c"],
         "file": "../net/sock.c", "output": "sock.o"},
        {"directory": b, "command": "cc -c ../main.c", "file": "../main.c", "extra": [1, -2.5e3, True, None, {"a": "\u00e9"}]},
        {"directory": os.path.join(proj, "net"), "command": "cc -c sock.c", "file": "sock.c"},
        {"directory": ".", "command": "cc -c x", "file": "net/../gen/parse.c"},
    ], indent=1))
    p = sh([A.tool, "map", "perfgroup.map", "build/compile_commands.json"], cwd=proj)
    lines = [l.split() for l in p.stdout.split("# globs that matched nothing")[0].splitlines()
             if not l.startswith("#")]
    want = [["net", "net/sock.c", "(perfgroup.map:3", "net/*)"],
            ["other", "main.c", "(perfgroup.map:6", "*)"],
            ["other", "gen/parse.c", "(perfgroup.map:6", "*)"]]
    if lines != want:
        raise Fail(f"perfgroup map printed {lines}, want {want}")
    for unused in ("perfgroup.map:2: net/*.h net-headers", "perfgroup.map:4: */net/* net2",
                   "perfgroup.map:5: include/ util"):
        if unused not in p.stdout:
            raise Fail(f"unused glob not listed: {unused}")
    write(os.path.join(proj, "few.map"), "net/ net\n")
    p = sh([A.tool, "map", "--default", "core", "few.map", db], cwd=proj)
    if not re.search(r"^core +main\.c +\(no glob: --default\)$", p.stdout, re.M) or \
            "# every glob matched a file" not in p.stdout:
        raise Fail("--default: " + p.stdout)
    # bad input: one line naming the file and the byte offset, exit 2, no stdout
    for text, where in (('[{"directory": "/", "file": 3}]', "byte 28: expected a string"),
                        ('[{"directory": "/"}]', "byte 1: compile command without a \"file\" string"),
                        ('{"directory": "/"}', "byte 0: expected '['"),
                        ('[{"directory": "/", "file": "a\\x"}]', "byte 31: bad escape"),
                        ('[{"directory": "/", "file": "a"} x]', "byte 33: expected ',' or ']'"),
                        ('[{"directory": "/", "file": "a", "k": [' + "[" * 100, "nested too deeply"),
                        ('[{"directory": "/", "file": "a"}', "expected ',' or ']'"),
                        ('[] []', "byte 3: data after the array")):
        write(db, text)
        p = sh([A.tool, "map", "perfgroup.map", db], cwd=proj, check=False)
        err = p.stderr.strip().splitlines()
        if p.returncode != 2 or p.stdout or len(err) != 1 or not err[0].startswith(
                f"perfgroup map: {db}: ") or where not in err[0]:
            raise Fail(f"bad input {text!r}: exit {p.returncode}, stdout {p.stdout!r}, "
                       f"stderr {p.stderr!r}; want exit 2 and one line with {where!r}")
    write(os.path.join(proj, "bad.map"), "net/*\n")
    p = sh([A.tool, "map", "bad.map", db], cwd=proj, check=False)
    if p.returncode != 2 or p.stdout or p.stderr.strip() != "perfgroup map: bad.map:1: expected 'GLOB GROUP'":
        raise Fail("a malformed map line: " + repr(p.stderr))


def main():
    global A
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cc", choices=["gcc", "clang"])
    ap.add_argument("--compiler", help="the compiler driver (gcc-12, clang-14, ...)")
    ap.add_argument("--plugin")
    ap.add_argument("--gcc", default="gcc")
    ap.add_argument("--gcc-plugin", default="")
    ap.add_argument("--clang", default="clang")
    ap.add_argument("--clang-plugin", default="")
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--tool", help="perfgroup (the live tool): recursive_make and tool only")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("case")
    A = ap.parse_args()
    A.workdir = os.path.abspath(A.workdir)
    shutil.rmtree(A.workdir, ignore_errors=True)
    os.makedirs(A.workdir)
    if not A.compiler:
        A.compiler = A.gcc if A.cc != "clang" else A.clang
    if not A.plugin:
        A.plugin = A.gcc_plugin if A.cc != "clang" else A.clang_plugin
    try:
        globals()["case_" + A.case]()
    except Skip as e:
        print(f"SKIP: {e}")
        return 77
    except Fail as e:
        print(f"FAIL: {e}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
