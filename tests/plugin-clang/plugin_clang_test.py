#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""plugin_clang_test.py — behaviour tests of the Clang plugin beyond the shared corpus:
-flto and -flto=thin, -save-temps and .ll input (with and without the documented extra flag
-fpass-plugin=), opt idempotence and opt -verify, musttail, C frames unwound by C++
exceptions, a shared library, the options, the skip rules, the site layout, and misuse
diagnostics. Every case compiles real sources with clang 14 and the real plugin, and (where
it runs anything) links the real runtime and reads its text trace (PERFGROUP_TEXT).

The GCC plugin's tests share their sources and expectations where the behaviour is the same
(../plugin-gcc/src, ../plugin-gcc/misuse): the two plugins must agree.

    plugin_clang_test.py --plugin build/plugin-clang/perfgroup-clang.so \
        --runtime libperfgroup.so --include include --workdir DIR [--opt=-O2] CASE [FILE]

Exit status: 0 pass, 1 fail (with the reason), 77 skipped.
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "src")
GCC_SRC = os.path.join(HERE, "..", "plugin-gcc", "src")
sys.path.insert(0, os.path.join(HERE, "..", "corpus"))
from run_corpus import canonical  # noqa: E402  (one canonical form for every trace)

sys.path.insert(0, os.path.join(HERE, "..", "plugin-gcc"))
import plugin_gcc_test as shared  # noqa: E402  (helpers and expectations both plugins share)
from plugin_gcc_test import Fail, sh, expect_trace, trace_of, w  # noqa: E402

# the clang the plugin was built for (ctest's environment, tests/CMakeLists.txt)
CC = os.environ.get("PERFGROUP_TEST_CLANG", "clang-14")
CXX = os.environ.get("PERFGROUP_TEST_CLANGXX", "clang++-14")
OPT = os.environ.get("PERFGROUP_TEST_OPT", "opt-14")
A = None
HOOK = "__perfgroup_enter"


def src(name):
    return name if os.path.isabs(name) else os.path.join(SRC, name)


def gsrc(name):
    return os.path.join(GCC_SRC, name)


def plugin(*opts):
    return ["-fplugin=" + A.plugin] + ["-fplugin-arg-perfgroup-" + o for o in opts]


def cc_for(path):
    return CXX if path.endswith((".cc", ".cpp", ".ll")) else CC


def obj(source, out, flags=()):
    """Compile one file (C, C++ or IR) to an object with -c."""
    sh([cc_for(source), A.opt, "-g", "-Wall", "-Wextra", "-Werror", "-I" + A.include]
       + list(flags) + ["-c", source, "-o", out])
    return out


def link(objs, out, flags=(), cxx=False):
    sh([CXX if cxx else CC, A.opt, "-pthread"] + list(objs) + list(flags)
       + [A.runtime, "-Wl,-rpath," + os.path.dirname(A.runtime), "-o", out])
    return out


def build(sources, out, flags=()):
    objs = [obj(s, w(os.path.basename(s) + ".o"), flags) for s in sources]
    return link(objs, out, cxx=any(s.endswith(".cc") for s in sources))


def hook_calls(ll_text):
    return len(re.findall(r"call i64 @" + HOOK, ll_text))


ST_TRACE = """
main > twice(int) @st|
main > Box::Box(int) @box|
main < Box::Box(int)
main < twice(int)
"""
LTO_TRACE = shared.LTO_TRACE
BASIC = os.path.join(HERE, "..", "corpus", "basic.c")
BASIC_TRACE = open(os.path.join(HERE, "..", "corpus", "basic.expected")).read()


# ---- Cases ------------------------------------------------------------------------------

def case_lto():
    """-flto and -flto=thin: the pass runs in the pre-link pipeline (one -fplugin= flag, at the
    compile step only); calls inlined across files at link time keep their pairs."""
    for mode in ("-flto", "-flto=thin"):
        tag = mode.lstrip("-").replace("=", "_")
        objs = [obj(gsrc(s), w(f"{tag}.{s}.o"), [mode] + plugin()) for s in ("lto_main.c", "lto_lib.c")]
        kind = sh(["file", objs[0]]).stdout
        if "LLVM IR bitcode" not in kind:
            raise Fail(f"{mode}: {objs[0]} is not bitcode: {kind}")
        # the lld of the plugin's LLVM: its bitcode is not an older lld's to read
        major = sh([CC, "-dumpversion"]).stdout.strip().split(".")[0]
        lld = f"lld-{major}"  # (the unversioned ld.lld is Debian's package lld, not installed)
        if not shutil.which("ld." + lld):
            print(f"SKIP: no ld.{lld} (Debian package lld-{major}) to link clang {major}'s LTO objects")
            return 77
        exe = link(objs, w(f"{tag}.exe"), [mode, "-fuse-ld=" + lld])
        expect_trace(trace_of(exe), LTO_TRACE)


def case_save_temps():
    """-save-temps splits cc1 into -E, AST -> .bc (with -disable-llvm-passes) and .bc -> .s:
    the AST step runs no pass, the pass step has no AST and the -E step defines no
    __PERFGROUP__. Documented: without extra flags nothing is instrumented (proved here); with
    -fpass-plugin=<the same .so> and -D__PERFGROUP__=1 everything is, the constructor too (its
    group travels inside the .bc in the plugin's table)."""
    d = w("st")
    os.makedirs(d, exist_ok=True)
    plain = os.path.join(d, "plain")
    sh([CXX, A.opt, "-save-temps", "-I" + A.include] + plugin()
       + [src("st.cc"), A.runtime, "-Wl,-rpath," + os.path.dirname(A.runtime), "-o", plain], cwd=d)
    got = trace_of(plain)
    if got:
        raise Fail("-save-temps without -fpass-plugin= is documented to instrument nothing, got:\n" + got)
    full = os.path.join(d, "full")
    sh([CXX, A.opt, "-save-temps", "-I" + A.include] + plugin()
       + ["-fpass-plugin=" + A.plugin, "-D__PERFGROUP__=1"]
       + [src("st.cc"), A.runtime, "-Wl,-rpath," + os.path.dirname(A.runtime), "-o", full], cwd=d)
    # the -E step loads the plugin too: clang 19 answers __has_attribute(perf_group) for a
    # plugin's attribute (perfgroup.h then uses it), older clangs do not (annotate)
    ii = open(os.path.join(d, "st.ii")).read()
    if 'annotate("perfgroup:" "st")' not in ii and 'perf_group("st")' not in ii:
        raise Fail("st.ii: PERF_GROUP expanded to neither perf_group(...) nor annotate(\"perfgroup:\" ...)")
    expect_trace(trace_of(full), ST_TRACE)


def case_ll_input():
    """.ll input: IR written before the pass ran (-Xclang -disable-llvm-passes) carries the
    plugin's table but no hooks. `clang -c x.ll` (even with -fplugin=) instruments nothing;
    with -fpass-plugin=<the same .so> it does, constructors included."""
    ll = w("st.ll")
    sh([CXX, A.opt, "-g", "-I" + A.include] + plugin()
       + ["-S", "-emit-llvm", "-Xclang", "-disable-llvm-passes", src("st.cc"), "-o", ll])
    text = open(ll).read()
    if hook_calls(text) or "perfgroup-table 1" not in text:
        raise Fail("st.ll should carry the plugin's table and no hook call yet")
    plain = sh([CXX, A.opt] + plugin() + ["-c", ll, "-o", w("plain.o")])
    if plain.returncode or HOOK in sh(["nm", w("plain.o")]).stdout:
        raise Fail(".ll without -fpass-plugin= is documented to instrument nothing")
    sh([CXX, A.opt, "-fpass-plugin=" + A.plugin, "-c", ll, "-o", w("full.o")])
    expect_trace(trace_of(link([w("full.o")], w("full"), cxx=True)), ST_TRACE)


def case_cmake_helper():
    """perfgroup_instrument() in a user's CMake project built by clang with -save-temps: the
    helper passes -fpass-plugin= and -D__PERFGROUP__=1, so the constructor and the macro-spelled
    group are instrumented although cc1 runs three times."""
    b = w("helper-build")
    sh(["cmake", "-S", os.path.join(HERE, "helper"), "-B", b, "-DCMAKE_C_COMPILER=" + CC,
        "-DCMAKE_CXX_COMPILER=" + CXX, "-DCMAKE_CXX_FLAGS=-save-temps " + A.opt,
        "-DPERFGROUP_SOURCE_DIR=" + os.path.join(HERE, "..", ".."),
        "-DPERFGROUP_CLANG_PLUGIN_FILE=" + A.plugin, "-DPERFGROUP_RUNTIME_FILE=" + A.runtime,
        "-DCMAKE_BUILD_RPATH=" + os.path.dirname(A.runtime)])
    sh(["cmake", "--build", b, "--verbose"])
    expect_trace(trace_of(os.path.join(b, "st")), ST_TRACE)


def case_mixed_gcc_clang():
    """One executable from a GCC-plugin object and a Clang-plugin object: both constructors
    (GCC's local one, clang's COMDAT one) register the same module, every site is found, and
    the calls across the two objects are traced. Skipped without the GCC plugin."""
    if not A.gcc_plugin:
        print("SKIP: no GCC plugin built")
        return 77
    lib = w("mix_lib.o")
    sh([shared.GCC, A.opt, "-g", "-Wall", "-Werror", "-I" + A.include, "-fplugin=" + A.gcc_plugin,
        "-c", gsrc("lto_lib.c"), "-o", lib])
    app = obj(gsrc("lto_main.c"), w("mix_main.o"), plugin())
    expect_trace(trace_of(link([app, lib], w("mix"))), LTO_TRACE)


def opt_cmd(*args):
    # opt links libLLVM only; the plugin's front-end half needs libclang-cpp's symbols loaded
    # first (the plugin links no clang/LLVM library itself). See docs/plugins.md.
    # the llvm-config of OPT's LLVM (its bin directory, else Debian's versioned name)
    bindir = os.path.dirname(shutil.which(OPT) or OPT)
    config = os.path.join(bindir, "llvm-config")
    libdir = sh([config if os.path.exists(config) else "llvm-config-14", "--libdir"]).stdout.strip()
    major = sh([CC, "-dumpversion"]).stdout.strip().split(".")[0]
    # libclang-cpp.so.14, .so.19.1: the soname has the minor version from LLVM 18 on
    cpp = sorted(glob.glob(os.path.join(libdir, f"libclang-cpp.so.{major}*")))
    return [OPT, "-load=" + (cpp[0] if cpp else os.path.join(libdir, f"libclang-cpp.so.{major}")),
            "-load-pass-plugin=" + A.plugin] + list(args)


def opt_hosts_plugin():
    """Whether opt can load libclang-cpp, which the plugin needs at load time: LLVM 19's opt
    defines a command-line option of libclang-cpp's own (pgo-cold-func-opt), and the second
    registration aborts it ("registered more than once") — a limit of that release, in
    docs/plugins.md."""
    return subprocess.run(opt_cmd("-version"), capture_output=True).returncode == 0


def pass_cmd(runs, *args):
    """The plugin's pass run `runs` times in one pipeline over an .ll: by opt where opt can
    host the plugin, else by clang itself at -O0 (which runs no other transforming pass over
    IR input), the plugin loaded once per run (each load registers the pass again)."""
    if opt_hosts_plugin():
        return opt_cmd("-passes=" + ",".join(["perfgroup"] * runs), *args)
    return [CC, "-O0", "-Wno-unused-command-line-argument"] + ["-fpass-plugin=" + A.plugin] * runs \
        + ["-S", "-emit-llvm"] + list(args)


def case_opt_twice():
    """Idempotence: the pass run twice (two runs, and twice in one pipeline) adds nothing the
    first run did not; every output passes opt -verify. By opt, or by clang where this LLVM's
    opt cannot host the plugin (pass_cmd)."""
    for source, lang in ((src("st.cc"), "c++"), (gsrc("unwind_c.c"), "c")):
        base = w(os.path.basename(source))
        flags = ["-fexceptions"] if lang == "c" else []
        sh([CXX if lang == "c++" else CC, A.opt, "-g", "-I" + A.include] + plugin("default=file")
           + flags + ["-S", "-emit-llvm", "-Xclang", "-disable-llvm-passes", source, "-o", base + ".raw.ll"])
        sh(pass_cmd(1, "-S", base + ".raw.ll", "-o", base + ".once.ll"))
        sh(pass_cmd(1, "-S", base + ".once.ll", "-o", base + ".twice.ll"))
        sh(pass_cmd(2, "-S", base + ".raw.ll", "-o", base + ".double.ll"))
        # without the ModuleID line and the "; preds = " comments, whose order is the use
        # lists' (a module read back from .ll may list a block's predecessors in another order)
        body = lambda f: re.sub(r"\s*; preds = .*", "", open(f).read().split("\n", 1)[1])
        once = body(base + ".once.ll")
        if hook_calls(once) == 0:
            raise Fail(f"{source}: the first run instrumented nothing")
        if body(base + ".twice.ll") != once:
            raise Fail(f"{source}: a second opt run changed the module")
        if body(base + ".double.ll") != once:
            raise Fail(f"{source}: -passes=perfgroup,perfgroup differs from one run")
        if "perfgroup-table" in once or '"perfgroup:' in once:
            raise Fail(f"{source}: the table or an annotation was not consumed")
        for f in (".once.ll", ".twice.ll"):
            sh([OPT, "-passes=verify", "-disable-output", base + f])


def case_verify():
    """clang's own compiles run with -disable-llvm-verifier: check the instrumented IR of the
    hardest cases (C++ exceptions and constructors, musttail, C with -fexceptions, the shared
    corpus's exception program) with opt -verify."""
    corpus = os.path.join(HERE, "..", "corpus")
    for source, extra in ((src("st.cc"), []), (src("musttail.c"), []), (gsrc("unwind_c.c"), ["-fexceptions"]),
                          (gsrc("unwind_main.cc"), []), (os.path.join(corpus, "exception.cc"), []),
                          (os.path.join(corpus, "cxx_members.cc"), [])):
        ll = w(os.path.basename(source) + ".ll")
        sh([cc_for(source), A.opt, "-g", "-I" + A.include] + plugin() + extra
           + ["-S", "-emit-llvm", source, "-o", ll])
        text = open(ll).read()
        if hook_calls(text) == 0 and A.opt == "-O0":
            raise Fail(f"{ll}: no enter hook at -O0")
        for line in text.splitlines():  # -g: every inserted call has a debug location
            if re.search(r"call .*@__perfgroup_(enter|exit)\(", line) and "!dbg" not in line:
                raise Fail(f"{ll}: hook call without a debug location: {line.strip()}")
        sh([OPT, "-passes=verify", "-disable-output", ll])


def case_available_externally():
    """A gnu_inline body (available_externally in the IR) is instrumented: at -O2 the call is
    inlined from it and still has its pair (always_inline: src/ae_main.c says why; at -O0 too,
    by clang's always-inliner)."""
    ll = w("ae_main.ll")
    sh([CC, A.opt, "-I" + A.include] + plugin() + ["-S", "-emit-llvm", src("ae_main.c"), "-o", ll])
    text = open(ll).read()
    # main's body: `define dso_local i32 @main(`, with `noundef` before the type since clang 19
    body = re.search(r"^define [^\n]*@main\(.*?^}", text, re.M | re.S)
    if body is None:
        raise Fail("ae_main.ll: no definition of main")
    if A.opt == "-O2" and ("@twice(" in body.group(0) or hook_calls(text) != 1):
        raise Fail("ae_main.ll: at -O2 the call should be inlined from the available_externally "
                   "body, with its one enter hook")
    expect_trace(trace_of(build([src("ae_main.c"), src("ae_lib.c")], w("ae"), plugin())),
                 "main > twice @ae|\nmain < twice")


def case_lambdas():
    """Lambda names in sites are g++'s: the trace below is the GCC plugin's at -O0 (at -O2 g++
    folds these implicitly constexpr lambdas away, the corpus's limit_constexpr). The nested
    lambda, called only from its enclosing lambda in its group, is elided (no hooks); with
    all-functions it is there, named within its enclosing lambda."""
    expect_trace(trace_of(build([src("lambdas.cc")], w("lambdas"), plugin())), """
main > main::{lambda(int)#1}::operator()(int) const @l|
main < main::{lambda(int)#1}::operator()(int) const
main > main::{lambda(double)#2}::operator()(double) const @l|
main < main::{lambda(double)#2}::operator()(double) const
main > main::{lambda(int)#3}::operator()(int) const @l|
main < main::{lambda(int)#3}::operator()(int) const
""")
    expect_trace(trace_of(build([src("lambdas.cc")], w("lambdas-all"), plugin("all-functions"))), """
main > main::{lambda(int)#1}::operator()(int) const @l|
main < main::{lambda(int)#1}::operator()(int) const
main > main::{lambda(double)#2}::operator()(double) const @l|
main < main::{lambda(double)#2}::operator()(double) const
main > main::{lambda(int)#3}::operator()(int) const @l|
main > main::{lambda(int)#3}::operator()(int) const::{lambda(int)#1}::operator()(int) const @l|
main < main::{lambda(int)#3}::operator()(int) const::{lambda(int)#1}::operator()(int) const
main < main::{lambda(int)#3}::operator()(int) const
""")


def case_musttail():
    """The exit hook of a function ending in a musttail call runs before the callee."""
    expect_trace(trace_of(build([src("musttail.c")], w("musttail"), plugin())), """
main > caller @mt|
main < caller
main > callee @mt|
main < callee
""")


def case_c_unwind():
    """A C++ exception unwinding through an instrumented C frame (the GCC plugin's programs and
    expectation): with -fexceptions the plugin gives the C function a personality
    (__gcc_personality_v0) and a cleanup pad, so its exit hook runs; without it (the C default,
    nounwind) it is skipped — the documented limit, the same with both compilers."""
    for cflags, c_exit in (("-fexceptions", "main < c_middle\n"), ("-fno-exceptions", "")):
        o1 = obj(gsrc("unwind_c.c"), w("unwind_c.o"), [cflags] + plugin())
        o2 = obj(gsrc("unwind_main.cc"), w("unwind_main.o"), plugin())
        expect_trace(trace_of(link([o1, o2], w("unwind"), cxx=True)),
                     "main > c_middle @c|\nmain > thrower() @cxx|\nmain < thrower()\n" + c_exit)
        has_personality = "__gcc_personality_v0" in sh(["nm", o1]).stdout
        if has_personality != (cflags == "-fexceptions"):
            raise Fail(f"unwind_c.o {cflags}: __gcc_personality_v0 referenced: {has_personality}")


def case_shared_lib():
    """A shared library with its own sites and its own (hidden, COMDAT) module constructor,
    registered before main (the library counts its resolved sites), hidden bounds even though
    its source declares them."""
    lib = w("libshlib.so")
    sh([CC, A.opt, "-g", "-fPIC", "-shared", "-Wall", "-Werror", "-I" + A.include] + plugin()
       + [gsrc("shlib.c"), A.runtime, "-Wl,-rpath," + os.path.dirname(A.runtime), "-o", lib])
    o = obj(gsrc("shmain.c"), w("shmain.o"), plugin())
    exe = link([o, lib, "-Wl,-rpath," + A.workdir], w("shmain"))
    shared.check_shared_lib(lib, exe)


def gcc_case(name):
    """The GCC plugin's test case `name`, run with clang and this plugin: the option cases
    build through plugin_gcc_test.compile_(), whose compiler is chosen by its cc()."""
    def run():
        shared.cc = lambda lang="c": CXX if lang == "c++" else CC
        return getattr(shared, "case_" + name)()
    run.__doc__ = "plugin_gcc_test.case_%s with clang (same program, same expected trace)" % name
    return run


# default=, map= (first match wins, '/'-less globs match the basename, unmatched -> default=),
# exclude= (names, then files; on C++ qualified and mangled names), system-headers: the GCC
# plugin's programs and expected traces, unchanged — the two plugins' options must agree.
case_option_default = gcc_case("option_default")
case_option_map = gcc_case("option_map")
case_option_exclude = gcc_case("option_exclude")
case_option_exclude_cxx = gcc_case("exclude_cxx")


def case_option_system_headers():
    """system-headers: the GCC plugin's case, plus: off by default for -isystem headers."""
    gcc_case("option_system_headers")()
    exe = w("opts")
    shared.compile_(["opts.c"], exe, plugin("default=core") + ["-isystem", gsrc("sys")])
    if "main\t> sys_helper\t|core" in trace_of(exe):
        raise Fail("sys_helper (from an -isystem header) instrumented without system-headers")


def case_skips():
    """naked, no_instrument_function and runtime-named functions are never instrumented; the
    verbose note says why, in the GCC plugin's words."""
    p = sh([CC, A.opt, "-I" + A.include, "-c", gsrc("skips.c"), "-o", w("skips.o")] + plugin("verbose"))
    for fn, why in (("naked_fn", "naked function"), ("opted_out", "no_instrument_function attribute"),
                    ("perfgroup_lookalike", "perfgroup runtime function"),
                    ("__perfgroup_internal", "perfgroup runtime function")):
        if f"note: perfgroup: '{fn}' not instrumented: {why}" not in p.stderr:
            raise Fail(f"no note saying {fn} is skipped ({why})")
    if "note: perfgroup: instrumenting 'kept' (group 'g', file group '')" not in p.stderr:
        raise Fail("no note saying kept is instrumented")
    expect_trace(trace_of(link([w("skips.o")], w("skips"))), "main > kept @g|\nmain < kept")


def site_versions(o):
    """The version field of every site in object O's perfgroup_sites section."""
    raw = w(os.path.basename(o) + ".bin")
    sh(["objcopy", "-O", "binary", "--only-section=perfgroup_sites", o, raw])
    data = open(raw, "rb").read()
    return {int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 40)}


def case_sites():
    """The descriptors read back through the ABI by the GCC plugin's sites.c: same fields,
    flag CLANG instead of GCC, version 3 (lite frames: the lite exit referenced weak, so that a
    runtime of ABI 2 refuses the module at its registration rather than the link failing), as
    the GCC plugin's; with weak-hooks version 2 and no reference to the lite exit (ABI 2's
    sequence). The cache slot and the key: 0 in the object file as emitted, filled by the
    runtime once the module constructor registered the sites."""
    exe = build([gsrc("sites.c")], w("sites"), plugin("default=filegrp"))
    o = w("sites.c.o")
    syms = sh(["nm", o]).stdout
    if not re.search(r"^\s+w __perfgroup_exit_lite$", syms, re.M):
        raise Fail("__perfgroup_exit_lite: not a weak undefined reference:\n" + syms)
    weak = obj(gsrc("sites.c"), w("sites.weak.o"), plugin("default=filegrp", "weak-hooks"))
    if "__perfgroup_exit_lite" in sh(["nm", weak]).stdout:
        raise Fail("weak-hooks: the object references __perfgroup_exit_lite (ABI 2's sequence has no lite exit)")
    if site_versions(weak) != {2}:
        raise Fail(f"weak-hooks: site versions {sorted(site_versions(weak))}, want 2")
    for opts, v in ((["default=filegrp"], 3), (["default=filegrp", "weak-hooks"], 2)):
        ll = w(f"sites.{v}.ll")
        sh([CC, A.opt, "-I" + A.include] + plugin(*opts) + ["-S", "-emit-llvm", gsrc("sites.c"), "-o", ll])
        if not re.search(rf"call void @__perfgroup_register_module\(i32 {v},", open(ll).read()):
            raise Fail(f"{' '.join(opts)}: the module constructor does not register version {v}")
    sections = sh(["readelf", "-SW", o]).stdout
    m = re.search(r"perfgroup_sites\s+PROGBITS\s+\S+\s+\S+\s+(\S+)\s+\S+\s+WA\s+\d+\s+\d+\s+(\d+)", sections)
    if not m or m.group(2) != "8" or int(m.group(1), 16) != 3 * 40:
        raise Fail("perfgroup_sites: not a dense array of three 40-byte, 8-aligned sites")
    sh(["objcopy", "-O", "binary", "--only-section=perfgroup_sites", o, w("sites.bin")])
    raw = open(w("sites.bin"), "rb").read()
    relocs = sh(["readelf", "-rW", o]).stdout.split("Relocation section '.relaperfgroup_sites'")[1]
    relocs = relocs.split("Relocation section")[0]
    offsets = {int(l.split()[0], 16) for l in relocs.splitlines() if re.match(r"^[0-9a-f]{16} ", l)}
    for i in range(3):
        if raw[i * 40 + 24:i * 40 + 40] != bytes(16) or {i * 40 + 24, i * 40 + 32} & offsets:
            raise Fail(f"site {i}: cache slot or re-entry key not emitted as 0")
        if raw[i * 40:i * 40 + 2] != b"\x03\x00":
            raise Fail(f"site {i}: not ABI version 3")
        if {i * 40 + 8, i * 40 + 16} - offsets:
            raise Fail(f"site {i}: groups/where are not relocated pointers")
    out = sh([exe]).stdout
    got = sorted(l for l in out.splitlines() if l.startswith("site "))
    src_lines = open(gsrc("sites.c")).read().splitlines()
    line = {fn: 1 + next(i for i, l in enumerate(src_lines) if f" {fn}(int x)" in l)
            for fn in ("with_attr", "file_only", "in_line")}
    F = {"CLANG": 0x2, "INLINE": 0x8, "ATTR": 0x10, "FILE": 0x20}
    want = sorted([  # cache: filled by the runtime when the module constructor registered
        f"site v=3 flags={hex(F['CLANG'] | F['ATTR'] | F['FILE'])} line={line['with_attr']} groups=attrgrp|filegrp where=with_attr|sites.c cache=resolved key=set",
        f"site v=3 flags={hex(F['CLANG'] | F['FILE'])} line={line['file_only']} groups=|filegrp where=file_only|sites.c cache=resolved key=set",
        f"site v=3 flags={hex(F['CLANG'] | F['INLINE'] | F['FILE'])} line={line['in_line']} groups=|filegrp where=in_line|sites.c cache=resolved key=set",
    ])
    if got != want:
        raise Fail("sites differ:\n--- expected\n" + "\n".join(want) + "\n--- got\n" + "\n".join(got))


def case_twice():
    """-fplugin= given twice (and -fpass-plugin= as well): still one pair per call."""
    exe = build([BASIC], w("twice"), plugin() + plugin() + ["-fpass-plugin=" + A.plugin])
    if trace_of(exe) != BASIC_TRACE:
        raise Fail("not one pair per call")


def case_macro():
    """__PERFGROUP__ is defined by -fplugin= alone in -c compiles (basic.c's PERF_GROUP is
    empty otherwise, and nothing is traced). Under -E clang 14 runs no plugin action, so it is NOT defined there — the documented
    reason -save-temps needs -D__PERFGROUP__=1; this checks that the documentation is true."""
    if trace_of(build([BASIC], w("macro"), plugin())) != BASIC_TRACE:
        raise Fail("PERF_GROUP did not expand to the annotation: __PERFGROUP__ undefined?")
    probe = gsrc("probe.h")
    pre = sh([CC, "-E", "-P", "-x", "c"] + plugin() + [probe]).stdout
    if "PG_MACRO=__PERFGROUP__" not in pre:
        raise Fail("__PERFGROUP__ is now defined under -E: update docs/plugins.md and this test")


def case_misuse():
    """One misuse file (shared with the GCC plugin's tests where the behaviour is the same):
    each `expect:` line must appear as a diagnostic at that line ('-': no location), and the
    compile fails iff an error is expected."""
    path = os.path.abspath(A.file)
    shared.check_misuse(path, lambda flags: [cc_for(path), A.opt, "-c", path, "-o", w("misuse.o")]
                        + plugin() + flags, "", "clang")


def main():
    global A
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--opt", default="-O0")
    ap.add_argument("--gcc-plugin", default="", help="perfgroup.so, for the mixed case")
    ap.add_argument("case")
    ap.add_argument("file", nargs="?")
    A = shared.A = ap.parse_args()
    A.plugin, A.runtime, A.include = map(os.path.abspath, (A.plugin, A.runtime, A.include))
    os.makedirs(A.workdir, exist_ok=True)
    fn = globals().get("case_" + A.case)
    if not fn:
        print("unknown case " + A.case)
        return 1
    try:
        if fn() == 77:
            return 77
    except Fail as e:
        print("FAIL: " + str(e))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
