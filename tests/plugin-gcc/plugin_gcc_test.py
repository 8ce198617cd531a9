#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""plugin_gcc_test.py — behaviour tests of the GCC plugin that the shared corpus cannot
express: -flto, -save-temps, -E, shared libraries, plugin options, skip rules, the site
layout, installation, and misuse diagnostics. Every case compiles real sources with gcc and
the real plugin, and (where it runs anything) links the real runtime and reads its text trace.

    plugin_gcc_test.py --plugin build/plugin-gcc/perfgroup.so --runtime libperfgroup.so \
        --include include --workdir DIR [--opt=-O2] [--build-dir build] CASE [FILE]

Exit status: 0 pass, 1 fail (with the reason), 77 skipped.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "src")
sys.path.insert(0, os.path.join(HERE, "..", "corpus"))
from run_corpus import canonical  # noqa: E402  (one canonical form for every trace)

A = None
ENV = dict(os.environ, LC_ALL="C", LANG="C")  # plain quotes in diagnostics


class Fail(Exception):
    pass


def sh(cmd, check=True, **kw):
    print("+ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    p = subprocess.run(cmd, env=kw.pop("env", ENV), capture_output=True, text=True, **kw)
    sys.stdout.write(p.stdout + p.stderr)
    if check and p.returncode:
        raise Fail(f"{cmd[0]} exited {p.returncode}")
    return p


def w(name):
    return os.path.join(A.workdir, name)


def plugin(*opts):
    return ["-fplugin=" + A.plugin] + ["-fplugin-arg-perfgroup-" + o for o in opts]


# the gcc the plugin was built for (ctest's environment, tests/CMakeLists.txt)
GCC = os.environ.get("PERFGROUP_TEST_GCC", "gcc")
GXX = os.environ.get("PERFGROUP_TEST_GXX", "g++")


def cc(lang="c"):
    return GXX if lang == "c++" else GCC


def compile_(srcs, out, flags=(), link=True, lang="c"):
    cmd = [cc(lang), A.opt, "-g", "-Wall", "-Wextra", "-Werror", "-I" + A.include] + list(flags)
    cmd += [os.path.join(SRC, s) if not (os.path.isabs(s) or s.startswith("-")) else s for s in srcs]
    if link:
        cmd += [A.runtime, "-Wl,-rpath," + os.path.dirname(A.runtime)]
    else:
        cmd += ["-c"]
    sh(cmd + ["-o", out])


def trace_of(exe, expect_exit=0, cwd=None):
    t = w("trace.txt")
    if os.path.exists(t):
        os.unlink(t)
    p = sh([exe], check=False, env=dict(ENV, PERFGROUP_TEXT=t), cwd=cwd)
    if p.returncode != expect_exit:
        raise Fail(f"{exe} exited {p.returncode}, expected {expect_exit}")
    return canonical(open(t).read()) if os.path.exists(t) else ""


def expect_trace(got, want):
    want = "".join(l.strip() + "\n" for l in want.strip().splitlines()).replace(" > ", "\t> ") \
        .replace(" < ", "\t< ").replace(" @", "\t")
    if got != want:
        raise Fail("trace differs:\n--- expected\n" + want + "--- got\n" + got)


# ---- cases ----------------------------------------------------------------------------------

LTO_TRACE = """
main > app_step @app|
main > lib_entry @lib|
main > lib_helper @lib|
main < lib_helper
main > lib_helper @lib|
main < lib_helper
main < lib_entry
main < app_step
"""


def case_lto():
    """-flto: sites and the module constructor survive LTO streaming; calls inlined across
    files keep their pairs. Built twice: plugin only at compile time, and also at the link
    (lto1 then loads the plugin, which must not need C front-end symbols)."""
    for tag, link_plugin in (("compile-only", []), ("compile-and-link", plugin())):
        objs = []
        for s in ("lto_main.c", "lto_lib.c"):
            o = w(f"{tag}.{s}.o")
            compile_([s], o, ["-flto"] + plugin(), link=False)
            objs.append(o)
        exe = w(f"{tag}.exe")
        sh([GCC, A.opt, "-flto"] + link_plugin + objs + [A.runtime, "-Wl,-rpath," + os.path.dirname(A.runtime), "-o", exe])
        expect_trace(trace_of(exe), LTO_TRACE)


def case_save_temps():
    """-save-temps: cc1 runs twice (-E, then -fpreprocessed); the macro is defined in the first
    run, the second must not define it again, and the function is instrumented."""
    d = w("st")
    os.makedirs(d, exist_ok=True)
    exe = os.path.join(d, "macro")
    sh([GCC, A.opt, "-save-temps", "-Wall", "-Werror", "-I" + A.include] + plugin()
       + [os.path.join(SRC, "macro.c"), A.runtime, "-Wl,-rpath," + os.path.dirname(A.runtime), "-o", exe], cwd=d)
    i = open(os.path.join(d, "macro-macro.i") if os.path.exists(os.path.join(d, "macro-macro.i"))
             else os.path.join(d, "macro.i")).read()
    if '__attribute__((perf_group("st")))' not in i:
        raise Fail("the .i file does not have PERF_GROUP expanded to the attribute")
    expect_trace(trace_of(exe), "main > twice @st|\nmain < twice")


def case_preprocess():
    """-E: __PERFGROUP__ is 1 and __has_attribute(perf_group) is true with the plugin, in C and
    C++; without the plugin neither is."""
    probe = os.path.join(SRC, "probe.h")
    for lang in ("c", "c++"):
        with_p = sh([cc(lang), "-E", "-P", "-x", lang] + plugin() + [probe]).stdout
        without = sh([cc(lang), "-E", "-P", "-x", lang, probe]).stdout
        if "PG_MACRO=1 PG_HAS_ATTR=1" not in with_p:
            raise Fail(f"{lang} with plugin: got {with_p!r}")
        if "PG_MACRO=__PERFGROUP__ PG_HAS_ATTR=0" not in without:
            raise Fail(f"{lang} without plugin: got {without!r}")


DEBUG_OPTIONS = (["-g"], ["-g3"], ["-g3", "-O3", "-funroll-loops"], ["-gdwarf-4"], ["-gdwarf-5"],
                 ["-g3", "-gsplit-dwarf"], ["-g3", "-fdebug-prefix-map=" + SRC + "=/src"],
                 ["-g3", "-save-temps"])


def case_debug_info():
    """Debug-info options: each compiles, links and gives the trace (-g3 used to end in an ICE:
    the macro was reported to dwarf2out before its macro table existed). Under -g3 the
    program's DWARF macro table has __PERFGROUP__ among the predefined macros, and -E with
    -g3/-dD still compiles with the macro defined."""
    for i, flags in enumerate(DEBUG_OPTIONS):
        d = w(f"dbg{i}")
        os.makedirs(d, exist_ok=True)
        exe = os.path.join(d, "macro")
        sh([GCC, A.opt] + flags + ["-Wall", "-Werror", "-I" + A.include] + plugin()
           + [os.path.join(SRC, "macro.c"), A.runtime, "-Wl,-rpath," + os.path.dirname(A.runtime),
              "-o", exe], cwd=d)
        expect_trace(trace_of(exe), "main > twice @st|\nmain < twice")
        if "-g3" in flags and not {"-save-temps", "-gsplit-dwarf"} & set(flags):  # macros: in .dwo / not re-read
            macros = sh(["readelf", "--debug-dump=macro", exe]).stdout
            if not re.search(r"lineno : 0 macro : __PERFGROUP__ 1", macros):
                raise Fail(f"{flags}: no predefined __PERFGROUP__ in the DWARF macro table")
    for flags in (["-g3"], ["-dD"], ["-g3", "-dD"]):
        out = sh([GCC, "-E"] + flags + ["-I" + A.include] + plugin() + [os.path.join(SRC, "macro.c")]).stdout
        if 'perf_group("st")' not in out:
            raise Fail(f"-E {flags}: PERF_GROUP not expanded to the attribute")


def case_shared_lib():
    """A shared library with its own sites: its own perfgroup_sites section and module
    constructor (hidden bounds, not exported); the runtime resolved both of its sites before
    main (registered), and its functions are traced with their groups."""
    lib = w("libshlib.so")
    sh([GCC, A.opt, "-g", "-fPIC", "-shared", "-Wall", "-Werror", "-I" + A.include] + plugin()
       + [os.path.join(SRC, "shlib.c"), A.runtime, "-Wl,-rpath," + os.path.dirname(A.runtime), "-o", lib])
    exe = w("shmain")
    compile_(["shmain.c", lib, "-Wl,-rpath," + A.workdir], exe, plugin())
    check_shared_lib(lib, exe, ENV)


def check_shared_lib(lib, exe, env=None):
    """What both plugins' shared-library cases check of libshlib.so and of shmain linked
    with it: a perfgroup_sites section of its own (2 x 40 bytes, aligned 8), hidden bounds,
    its module constructor's registration call, both sites registered before main, and the
    library's functions traced with their groups."""
    sections = sh(["readelf", "-SW", lib]).stdout
    m = re.search(r"perfgroup_sites\s+PROGBITS\s+\S+\s+\S+\s+(\S+)\s+\S+\s+WA\s+\d+\s+\d+\s+(\d+)", sections)
    if not m or int(m.group(1), 16) != 2 * 40 or m.group(2) != "8":
        raise Fail("libshlib.so: expected a perfgroup_sites section of 2 x 40 bytes, aligned 8")
    dyn = sh(["readelf", "--dyn-syms", "-W", lib]).stdout
    for l in dyn.splitlines():  # ld may list them in .dynsym, but only as HIDDEN (unbindable)
        if ("__start_perfgroup_sites" in l or "__stop_perfgroup_sites" in l) and " HIDDEN " not in l:
            raise Fail("libshlib.so exports its section bounds: they must be hidden:\n" + l)
    if "__perfgroup_register_module" not in dyn:
        raise Fail("libshlib.so does not call __perfgroup_register_module")
    out = sh([exe], env=env).stdout
    if "library sites resolved before main: 2" not in out:
        raise Fail("the runtime did not see the library's 2 sites registered before main")
    expect_trace(trace_of(exe), """
main > app_work @app|
main > lib_work @lib|
main > lib_inner @lib|
main < lib_inner
main < lib_work
main < app_work
""")


def case_sites():
    """The descriptors: a dense 40-byte, 8-aligned array with version 3 (lite frames: the lite exit
    referenced weak, so that a runtime of ABI 2 refuses the module at its registration rather
    than the link failing), a zero cache slot and a
    zero re-entry key as emitted; read back by the program through the ABI: flags, line, the two NUL-separated
    string pairs, and a cache slot the runtime filled at registration."""
    obj = w("sites.o")
    compile_(["sites.c"], obj, plugin("default=filegrp"), link=False)
    sections = sh(["readelf", "-SW", obj]).stdout
    m = re.search(r"perfgroup_sites\s+PROGBITS\s+\S+\s+\S+\s+(\S+)\s+\S+\s+WA\s+\d+\s+\d+\s+(\d+)", sections)
    if not m or m.group(2) != "8" or int(m.group(1), 16) % 40:
        raise Fail("perfgroup_sites: not a dense array of 40-byte, 8-aligned sites")
    syms = sh(["nm", obj]).stdout
    if not re.search(r"^\s+w __perfgroup_exit_lite$", syms, re.M):
        raise Fail("__perfgroup_exit_lite: not a weak undefined reference:\n" + syms)
    raw = w("sites.bin")  # the section as emitted: version 3 first, cache slot and key 0 last
    sh(["objcopy", "-O", "binary", "--only-section=perfgroup_sites", obj, raw])
    data = open(raw, "rb").read()
    for off in range(0, len(data), 40):
        if data[off:off + 2] != b"\x03\x00" or data[off + 24:off + 40] != bytes(16):
            raise Fail(f"site at offset {off}: version, cache slot or key wrong as emitted")
    exe = w("sites")
    sh([GCC, A.opt, obj, A.runtime, "-Wl,-rpath," + os.path.dirname(A.runtime), "-o", exe])
    out = sh([exe], env=ENV).stdout
    got = sorted(l for l in out.splitlines() if l.startswith("site "))
    F = {"GCC": 0x1, "INLINE": 0x8, "ATTR": 0x10, "FILE": 0x20}
    src_lines = open(os.path.join(SRC, "sites.c")).read().splitlines()
    line = {fn: 1 + next(i for i, l in enumerate(src_lines) if f" {fn}(int x)" in l)
            for fn in ("with_attr", "file_only", "in_line")}
    want = sorted([
        f"site v=3 flags={hex(F['GCC'] | F['ATTR'] | F['FILE'])} line={line['with_attr']} groups=attrgrp|filegrp where=with_attr|sites.c cache=resolved key=set",
        f"site v=3 flags={hex(F['GCC'] | F['FILE'])} line={line['file_only']} groups=|filegrp where=file_only|sites.c cache=resolved key=set",
        f"site v=3 flags={hex(F['GCC'] | F['INLINE'] | F['FILE'])} line={line['in_line']} groups=|filegrp where=in_line|sites.c cache=resolved key=set",
    ])
    if got != want:
        raise Fail("sites differ:\n--- expected\n" + "\n".join(want) + "\n--- got\n" + "\n".join(got))


def opts_program(opts, sys_dir="-isystem"):
    exe = w("opts")
    compile_(["opts.c"], exe, plugin(*opts) + [sys_dir, os.path.join(SRC, "sys")])
    return trace_of(exe)


def case_option_default():
    """default=GROUP: every function of the file gets the file group, attributed ones keep
    their attribute group too; the system header's function does not."""
    expect_trace(opts_program(["default=core"]), """
main > main @|core
main > beta @|core
main > alpha @attr|core
main < alpha
main < beta
main > skipme @|core
main < skipme
main < main
""")


def case_option_map():
    """map=FILE: first matching glob wins ('/'-less globs match the basename, others the
    path); a file no glob matches falls back to default=."""
    m = w("groups.map")
    with open(m, "w") as f:
        f.write("# comment line\n\n*/no/such/dir/*  never\n*/plugin-gcc/src/opts.c  mapped  # trailing comment\nopts.c  second\n")
    expect_trace(opts_program(["map=" + m, "default=fallback"]), """
main > main @|mapped
main > beta @|mapped
main > alpha @attr|mapped
main < alpha
main < beta
main > skipme @|mapped
main < skipme
main < main
""")
    with open(m, "w") as f:
        f.write("other.c  never\n")
    got = opts_program(["map=" + m, "default=fallback"])
    if "main\t> beta\t|fallback" not in got:
        raise Fail("a file no glob matches should get the default= group:\n" + got)


def case_option_exclude():
    """exclude=GLOB[,GLOB]: by function name, then by file (which excludes even attributed
    functions)."""
    expect_trace(opts_program(["default=core", "exclude=skip*,ma?n"]), """
main > beta @|core
main > alpha @attr|core
main < alpha
main < beta
""")
    expect_trace(opts_program(["default=core", "exclude=*/src/opts.c"]), "")


def case_exclude_cxx():
    """exclude= on C++: a qualified-name glob (net::*) and a mangled-name glob (_Z6helperi)."""
    exe = w("cxx_names")
    compile_(["cxx_names.cc"], exe, plugin("default=core", "exclude=net::*,_Z6helper*"), lang="c++")
    expect_trace(trace_of(exe), "main > main @|core\nmain < main")
    compile_(["cxx_names.cc"], exe, plugin("default=core", "exclude=net::s*"), lang="c++")
    got = trace_of(exe)
    if "net::parse(int)" not in got or "net::send(int)" in got:
        raise Fail("exclude=net::s* should drop net::send only:\n" + got)


def case_c_frame_unwinding():
    """A C++ exception unwinding through an instrumented C frame: with -fexceptions the C
    frame's exit hook runs; without it (the C default) it is skipped — the documented limit."""
    for cflags, c_exit in (("-fexceptions", "main < c_middle\n"), ("-fno-exceptions", "")):
        obj = w("unwind_c.o")
        compile_(["unwind_c.c"], obj, plugin() + [cflags], link=False)
        exe = w("unwind")
        compile_(["unwind_main.cc", obj], exe, plugin(), lang="c++")
        expect_trace(trace_of(exe), "main > c_middle @c|\nmain > thrower() @cxx|\nmain < thrower()\n" + c_exit)


def case_spellings():
    """__attribute__((perf_group)), [[gnu::perf_group]] and [[perfgroup::group]], in C2x and C++."""
    cxx_copy = w("spellings.cc")
    shutil.copyfile(os.path.join(SRC, "spellings.c"), cxx_copy)
    for lang, src, flags in (("c", "spellings.c", ["-std=c2x"]), ("c++", cxx_copy, [])):
        exe = w("spellings-" + lang)
        compile_([src], exe, plugin() + flags, lang=lang)
        n = (lambda f: f"{f}(int)") if lang == "c++" else (lambda f: f)
        expect_trace(trace_of(exe), "".join(
            f"main > {n(f)} @{g}|\nmain < {n(f)}\n"
            for f, g in (("by_gnu", "gnu"), ("by_std_gnu", "std_gnu"), ("by_scoped", "scoped"))))


def case_option_system_headers():
    """system-headers: default= also applies to functions defined in system headers."""
    got = opts_program(["default=core", "system-headers"])
    if "main\t> sys_helper\t|core" not in got:
        raise Fail("sys_helper (from an -isystem header) not instrumented:\n" + got)
    got = opts_program(["default=core"], sys_dir="-I")
    if "main\t> sys_helper\t|core" not in got:
        raise Fail("sys_helper from a normal -I header must be instrumented:\n" + got)


def case_skips():
    """naked, no_instrument_function and runtime-named functions are never instrumented; the
    verbose note says why for each."""
    exe = w("skips")
    compile_(["skips.c"], exe, plugin("verbose"))
    p = sh([GCC, A.opt, "-I" + A.include, "-c", os.path.join(SRC, "skips.c"), "-o", w("skips.o")] + plugin("verbose"))
    for fn, why in (("naked_fn", "naked function"), ("opted_out", "no_instrument_function attribute"),
                    ("perfgroup_lookalike", "perfgroup runtime function"),
                    ("__perfgroup_internal", "perfgroup runtime function")):
        if f"note: perfgroup: '{fn}' not instrumented: {why}" not in p.stderr:
            raise Fail(f"no note saying {fn} is skipped ({why})")
    expect_trace(trace_of(exe), "main > kept @g|\nmain < kept")


def case_twice():
    """The plugin given twice is loaded once: still one pair per call."""
    exe = w("twice")
    compile_(["macro.c"], exe, plugin() + plugin())
    expect_trace(trace_of(exe), "main > twice @st|\nmain < twice")


def case_installed():
    """`cmake --install` into a staging DESTDIR puts perfgroup.so under GCC's plugin dir; gcc
    then finds it by its short name -fplugin=perfgroup (-iplugindir= points gcc at the staged
    copy of that directory)."""
    if not A.build_dir:
        raise Fail("--build-dir is required")
    stage = w("stage")
    shutil.rmtree(stage, ignore_errors=True)
    sh(["cmake", "--install", A.build_dir, "--component", "gcc-plugin"],
       env=dict(ENV, DESTDIR=stage))
    real_dir = sh([GCC, "-print-file-name=plugin"]).stdout.strip()
    staged_dir = stage + real_dir
    if not os.path.exists(os.path.join(staged_dir, "perfgroup.so")):
        raise Fail(f"perfgroup.so not installed into {staged_dir}")
    exe = w("short")
    compile_(["macro.c"], exe, ["-iplugindir=" + staged_dir, "-fplugin=perfgroup"])
    expect_trace(trace_of(exe), "main > twice @st|\nmain < twice")


def case_installed_real():
    """After `cmake --install` (into GCC's real plugin dir), plain `gcc -fplugin=perfgroup`
    works. Skipped when this build's plugin is not the one installed on this machine."""
    real = os.path.join(sh([GCC, "-print-file-name=plugin"]).stdout.strip(), "perfgroup.so")
    if not os.path.exists(real):
        print(f"SKIP: {real} not installed (run cmake --install)")
        return 77
    if open(real, "rb").read() != open(A.plugin, "rb").read():
        print(f"SKIP: {real} is not this build's plugin (run cmake --install to test it)")
        return 77
    exe = w("short-real")
    compile_(["macro.c"], exe, ["-fplugin=perfgroup"])
    expect_trace(trace_of(exe), "main > twice @st|\nmain < twice")


EXPECT = re.compile(r"expect: (-|\d+): (error|warning|note): (.*?)\s*(?:\*/)?$")
FLAGS = re.compile(r"perfgroup-flags: (.*?)\s*(?:\*/)?$")


def case_misuse():
    """One misuse: compile FILE with the plugin; each `expect:` line of FILE must appear as a
    diagnostic (at that line, or without location for '-'); the compile fails iff an error is
    expected."""
    src = os.path.abspath(A.file)
    lang = "c++" if src.endswith(".cc") else "c"
    check_misuse(src, lambda flags: [cc(lang), A.opt, "-c", src, "-o", w("misuse.o")]
                 + plugin() + flags, r"(?:cc1|cc1plus): ", "gcc")


def check_misuse(path, command, bare_prefix, who):
    """Shared by both plugins' drivers. Compile `path` with command(flags from its `flags:`
    lines); every `expect: LINE KIND MESSAGE` line of the file must appear as a diagnostic at
    that line ('-': a diagnostic without location, after `bare_prefix`: the compiler's own
    name and ": " for GCC, nothing for Clang), and the compile
    fails iff an error is expected."""
    d = os.path.dirname(path)
    flags, expects = [], []
    for line in open(path).read().splitlines():
        if m := FLAGS.search(line):
            flags += shlex.split(m.group(1).replace("%S", d))
        elif m := EXPECT.search(line):
            expects.append((m.group(1), m.group(2), m.group(3).replace("%S", d)))
    if not expects:
        raise Fail("no expect: line in " + path)
    p = sh(command(flags), check=False)
    for where, kind, msg in expects:
        pat = (rf"^{bare_prefix}{kind}: " if where == "-"
               else rf"^{re.escape(path)}:{where}:\d+: {kind}: ") + re.escape(msg) + r"(?: \[-W[a-z-]+\])?$"
        if not re.search(pat, p.stderr, re.M):
            raise Fail(f"missing diagnostic: {where}: {kind}: {msg}")
    want_fail = any(k == "error" for _, k, _ in expects)
    if bool(p.returncode) != want_fail:
        raise Fail(f"{who} exited {p.returncode}; expected {'failure' if want_fail else 'success'}")


def main():
    global A
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--opt", default="-O0")
    ap.add_argument("--build-dir")
    ap.add_argument("case")
    ap.add_argument("file", nargs="?")
    A = ap.parse_args()
    A.plugin, A.runtime, A.include = map(os.path.abspath, (A.plugin, A.runtime, A.include))
    os.makedirs(A.workdir, exist_ok=True)
    fn = globals().get("case_" + A.case)
    if not fn:
        print("unknown case " + A.case)
        return 1
    try:
        rc = fn()
    except (Fail, subprocess.TimeoutExpired) as e:
        print(f"FAIL: {A.case}: {e}")
        return 1
    if rc == 77:
        return 77
    print(f"PASS: {A.case} {A.opt}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
