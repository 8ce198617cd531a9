#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""packaging_test.py — perfgroup as another project sees it. One case per run:

    install                 `cmake --install` of the build into a DESTDIR staging root; every
                            file of the installed layout is where cmake/PerfGroupPackage.cmake says
    package  --cc gcc|clang the consumer project (consumer/) with find_package(PerfGroup) against
                            the staged prefix
    subdir   --cc gcc|clang the consumer project with add_subdirectory(<perfgroup sources>)
    misuse                  perfgroup_instrument() called wrongly: configuring fails with a
                            message naming the argument
    pkgconfig --cc gcc|clang the consumer's sources compiled by hand with
                            `pkg-config --cflags --libs perfgroup` and the plugin path it names
    ninja                   perfgroup's whole build (tests, benchmarks, fuzzer included)
                            generated for Ninja and checked by `ninja -n`: a build graph Ninja
                            refuses (two rules for one output) fails here, not on a user's machine
    compilers               perfgroup built for several compilers at once
                            (-DPERFGROUP_GCC="gcc-12;gcc-11" -DPERFGROUP_LLVM_CONFIG=
                            "llvm-config-14;llvm-config-13"), installed into a staging root: each
                            GCC's plugin in that GCC's plugin directory, perfgroup-clang-<N>.so per
                            LLVM; the consumer with find_package() under each of the four compilers
                            (perfgroup_instrument() picks the matching plugin; clang-13 takes its
                            options as -Xclang -plugin-arg-perfgroup), by hand with the pkg-config
                            variables gcc_plugin_11 / clang_plugin_13; a compiler without its plugin
                            (gcc-11, clang-13 against the main build's install) is a configure
                            error naming the -D option that builds it; a
                            plugin of another release stops the compile with a clear error

The consumer's targets compile and link with -Werror: a plugin flag leaking to a link step
(clang warns about -fplugin-arg-*) fails the build. Every
program is run with PERFGROUP_TEXT and its trace compared with consumer/expected.trace (the
same for both compilers); `package` also records (PERFGROUP_OUTPUT) and reads the recording
back with the installed perfgroup-convert --summary.
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONSUMER = os.path.join(HERE, "consumer")
# the compilers the build's plugins were built for (ctest's environment, tests/CMakeLists.txt),
# else the project's default pair
COMPILERS = {"gcc": (os.environ.get("PERFGROUP_TEST_GCC", "gcc-12"),
                     os.environ.get("PERFGROUP_TEST_GXX", "g++-12")),
             "clang": (os.environ.get("PERFGROUP_TEST_CLANG", "clang-14"),
                       os.environ.get("PERFGROUP_TEST_CLANGXX", "clang++-14"))}
GROUPS = ("app", "parser", "addon", "util")


class Fail(Exception):
    pass


def sh(cmd, env=None, cwd=None):
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode != 0:
        print(r.stdout)
        raise Fail(f"exit status {r.returncode}: {' '.join(cmd)}")
    return r.stdout


def env_with(**kv):
    e = dict(os.environ)
    e.update(kv)
    return e


def stage_prefix(A):
    """The staged prefix: <stage>/<the build's CMAKE_INSTALL_PREFIX>."""
    return os.path.join(A.workdir, "..", "stage") + A.prefix


def check_trace(program, workdir, args=("7",)):
    trace = os.path.join(workdir, os.path.basename(program) + ".trace")
    if os.path.exists(trace):
        os.unlink(trace)
    out = sh([program, *args], env=env_with(PERFGROUP_TEXT=trace)).strip()
    if out != "15":
        raise Fail(f"{program} printed {out!r}, expected 15")
    got = open(trace).read()
    want = open(os.path.join(CONSUMER, "expected.trace")).read()
    if got != want:
        raise Fail(f"{program}: trace differs from consumer/expected.trace:\n--- got\n{got}"
                   f"--- want\n{want}")
    print(f"ok: {program}: {len(got.splitlines())} hook calls as expected")


def case_install(A):
    stage = os.path.join(A.workdir, "..", "stage")
    shutil.rmtree(stage, ignore_errors=True)
    sh(["cmake", "--install", A.build_dir], env=env_with(DESTDIR=stage))
    p = stage + A.prefix
    gcc_dir = subprocess.run([COMPILERS["gcc"][0], "-print-file-name=plugin"], stdout=subprocess.PIPE,
                             text=True, check=True).stdout.strip()
    want = [f"{p}/{A.libdir}/libperfgroup.so", f"{p}/{A.libdir}/libperfgroup.so.0",
            f"{p}/{A.libdir}/libperfgroup.a", f"{p}/include/perfgroup.h",
            f"{p}/include/perfgroup/abi.h", f"{p}/include/perfgroup/format.h",
            f"{p}/{A.libdir}/cmake/PerfGroup/PerfGroupConfig.cmake",
            f"{p}/{A.libdir}/cmake/PerfGroup/PerfGroupConfigVersion.cmake",
            f"{p}/{A.libdir}/cmake/PerfGroup/PerfGroupTargets.cmake",
            f"{p}/{A.libdir}/cmake/PerfGroup/PerfGroupInstrument.cmake",
            f"{p}/{A.libdir}/pkgconfig/perfgroup.pc"]
    if A.with_gcc:
        want.append(f"{stage}{gcc_dir}/perfgroup.so")
    if A.with_clang:
        want.append(f"{p}/{A.libdir}/perfgroup-clang.so")
        major = sh([COMPILERS["clang"][0], "-dumpversion"]).strip().split(".")[0]
        want.append(f"{p}/{A.libdir}/perfgroup-clang-{major}.so")   # the same, by version
    if A.with_convert:
        want.append(f"{p}/bin/perfgroup-convert")
        want.append(f"{p}/bin/perfgroup")  # perfgroup top / metrics (docs/fleet.md)
    missing = [w for w in want if not os.path.exists(w)]
    if missing:
        raise Fail("not installed: " + ", ".join(missing))
    print(f"ok: {len(want)} installed files where expected")


def configure_build(A, bdir, extra):
    cc, cxx = COMPILERS[A.cc]
    shutil.rmtree(bdir, ignore_errors=True)
    sh(["cmake", "-S", CONSUMER, "-B", bdir,
        f"-DCMAKE_C_COMPILER={cc}", f"-DCMAKE_CXX_COMPILER={cxx}", *extra])
    sh(["cmake", "--build", bdir, "-j2"])


def case_package(A):
    prefix = stage_prefix(A)
    bdir = os.path.join(A.workdir, "build")
    configure_build(A, bdir, [f"-DCMAKE_PREFIX_PATH={prefix}"])
    for prog in ("app", "app_static"):
        check_trace(os.path.join(bdir, prog), A.workdir)
    if A.with_convert:
        rec = os.path.join(A.workdir, "app.pgm")
        if os.path.exists(rec):
            os.unlink(rec)
        sh([os.path.join(bdir, "app")], env=env_with(PERFGROUP_OUTPUT=rec, PERFGROUP_BUFFER="1M"))
        summary = sh([f"{prefix}/bin/perfgroup-convert", rec, "--summary"])
        rows = {line.split()[0] for line in summary.splitlines() if line.strip()}
        missing = [g for g in GROUPS if g not in rows]
        if missing:
            raise Fail(f"installed perfgroup-convert --summary lacks groups {missing}:\n{summary}")
        print(f"ok: recording read back by the installed perfgroup-convert: groups {GROUPS}")


def case_subdir(A):
    bdir = os.path.join(A.workdir, "build")
    # Only the plugin this compiler needs; the converter is not needed to instrument.
    other = "CLANG" if A.cc == "gcc" else "GCC"
    # and for this compiler's release, as a user of it configures (docs/plugins.md)
    cc = COMPILERS[A.cc][0]
    llvm_config = os.path.join(os.path.dirname(os.path.realpath(shutil.which(cc) or cc)), "llvm-config")
    which = ([f"-DPERFGROUP_GCC={cc}"] if A.cc == "gcc" else
             [f"-DPERFGROUP_LLVM_CONFIG={llvm_config}"] if os.path.exists(llvm_config) else [])
    # With gcc: RelWithDebInfo, the main build's type and compiler, so perfgroup's runtime
    # objects are the main build's, which scripts/test.sh's compiler cache (PERFGROUP_LAUNCHER)
    # serves. With clang: the consumer's default (no build type) — clang and clang++ compile
    # the runtime and plugin, which no other build of the run does.
    build_type = ["-DCMAKE_BUILD_TYPE=RelWithDebInfo"] if A.cc == "gcc" else []
    configure_build(A, bdir, [f"-DPERFGROUP_SOURCE_DIR={A.source_dir}", *which,
                              f"-DPERFGROUP_{other}_PLUGIN=OFF", "-DPERFGROUP_CONVERTER=OFF",
                              *build_type])
    # perfgroup's own tests, benchmarks and examples stay out of a parent project's build, and
    # so does the runtime its tests link (perfgroup_testing).
    for d in ("tests", "bench", "examples", "runtime/CMakeFiles/perfgroup_testing.dir"):
        if os.path.isdir(os.path.join(bdir, "perfgroup", d)):
            raise Fail(f"add_subdirectory(perfgroup) configured perfgroup's {d}/")
    for prog in ("app", "app_static"):
        check_trace(os.path.join(bdir, prog), A.workdir)


def case_pkgconfig(A):
    prefix = stage_prefix(A)
    stage = os.path.join(A.workdir, "..", "stage")
    e = env_with(PKG_CONFIG_PATH=f"{prefix}/{A.libdir}/pkgconfig")

    def pc(*args):
        return sh(["pkg-config", *args, "perfgroup"], env=e).split()
    if A.cc == "gcc":
        plugin = pc("--variable=gcc_plugin")[0]
        gcc_dir = sh([COMPILERS["gcc"][0], "-print-file-name=plugin"]).strip()
        if plugin != f"{gcc_dir}/perfgroup.so":
            raise Fail(f"gcc_plugin={plugin}, expected {gcc_dir}/perfgroup.so")
        plugin = stage + plugin      # staged, not (necessarily) installed on this machine
    else:
        plugin = os.path.realpath(pc("--variable=clang_plugin")[0])
    if not os.path.exists(plugin):
        raise Fail(f"the plugin pkg-config names does not exist: {plugin}")
    libdir = pc("--variable=libdir")[0]
    cc = COMPILERS[A.cc][0]
    prog = os.path.join(A.workdir, "app")
    arg = "-fplugin-arg-perfgroup-"
    objs = []
    for src, opts in (("util.c", ["default=util"]),
                      ("main.c", ["default=app", f"map={CONSUMER}/groups.map"]),
                      ("parser.c", ["default=app", f"map={CONSUMER}/groups.map"])):
        obj = os.path.join(A.workdir, src + ".o")
        sh([cc, "-O2", "-Werror", *pc("--cflags"), f"-fplugin={plugin}",
            *[arg + o for o in opts], "-c", os.path.join(CONSUMER, src), "-o", obj])
        objs.append(obj)
    sh([cc, "-Werror", *objs, "-o", prog, *pc("--libs"), f"-Wl,-rpath,{libdir}"])
    check_trace(prog, A.workdir)


MULTI_GCC = ("gcc-12", "gcc-11")
MULTI_LLVM = ("14", "13")
MULTI_CONSUMERS = [("gcc-11", "g++-11"), ("gcc-12", "g++-12"), ("clang-13", "clang++-13"),
                   ("clang-14", "clang++-14")]


def run(cmd, **kw):
    """A command that may fail: (exit status, stdout+stderr)."""
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    return r.returncode, r.stdout


def case_compilers(A):
    w = os.path.abspath(A.workdir)
    build, stage, prefix = f"{w}/perfgroup", f"{w}/stage", "/opt/perfgroup"
    shutil.rmtree(build, ignore_errors=True)
    shutil.rmtree(stage, ignore_errors=True)
    sh(["cmake", "-S", A.source_dir, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
        f"-DCMAKE_INSTALL_PREFIX={prefix}", "-DBUILD_TESTING=OFF", "-DPERFGROUP_CONVERTER=OFF",
        "-DPERFGROUP_BENCH=OFF", "-DPERFGROUP_GCC=" + ";".join(MULTI_GCC),
        "-DPERFGROUP_LLVM_CONFIG=" + ";".join(f"llvm-config-{v}" for v in MULTI_LLVM)])
    sh(["cmake", "--build", build, "-j2"])
    sh(["cmake", "--install", build], env=env_with(DESTDIR=stage))
    p = stage + prefix
    want = [f"{p}/{A.libdir}/perfgroup-clang.so"]
    want += [f"{p}/{A.libdir}/perfgroup-clang-{v}.so" for v in MULTI_LLVM]
    for gcc in MULTI_GCC:
        d = sh([gcc, "-print-file-name=plugin"]).strip()
        want.append(stage + d + "/perfgroup.so")
    missing = [f for f in want if not os.path.exists(f)]
    if missing:
        raise Fail("not installed: " + ", ".join(missing))
    print(f"ok: one plugin per compiler where it finds it: {want}")

    # find_package(): perfgroup_instrument() picks the plugin of the compiler in use.
    for cc, cxx in MULTI_CONSUMERS:
        bdir = f"{w}/consumer-{cc}"
        shutil.rmtree(bdir, ignore_errors=True)
        sh(["cmake", "-S", CONSUMER, "-B", bdir, f"-DCMAKE_C_COMPILER={cc}",
            f"-DCMAKE_PREFIX_PATH={p}"])
        flags = open(f"{bdir}/CMakeFiles/app.dir/flags.make").read()
        v = cc.split("-")[1]
        plugin = (f"{p}/{A.libdir}/perfgroup-clang-{v}.so" if cc.startswith("clang")
                  else os.path.realpath(stage + sh([cc, "-print-file-name=plugin"]).strip()
                                        + "/perfgroup.so"))
        if f"-fplugin={plugin}" not in flags:
            raise Fail(f"{cc}: the consumer's flags do not load {plugin}:\n{flags}")
        if cc == "clang-13" and "-Xclang -plugin-arg-perfgroup -Xclang default=app" not in flags:
            raise Fail(f"clang-13: options not passed as -Xclang -plugin-arg-perfgroup:\n{flags}")
        sh(["cmake", "--build", bdir, "-j2"])
        for prog in ("app", "app_static"):
            check_trace(os.path.join(bdir, prog), A.workdir)

    # pkg-config: the variable of the compiler's major version.
    e = env_with(PKG_CONFIG_PATH=f"{p}/{A.libdir}/pkgconfig")
    for cc in ("gcc-11", "clang-13"):
        fam = "gcc" if cc.startswith("gcc") else "clang"
        major = sh([cc, "-dumpversion"]).strip().split(".")[0]
        plugin = sh(["pkg-config", f"--variable={fam}_plugin_{major}", "perfgroup"], env=e).strip()
        if fam == "gcc":
            plugin = stage + plugin
        if not os.path.exists(plugin):
            raise Fail(f"pkg-config {fam}_plugin_{major}={plugin!r}: no such file")
        cflags = sh(["pkg-config", "--cflags", "perfgroup"], env=e).split()
        libs = sh(["pkg-config", "--libs", "perfgroup"], env=e).split()

        def plugin_arg(o):   # clang 13 has no -fplugin-arg-
            return (["-Xclang", "-plugin-arg-perfgroup", "-Xclang", o] if cc == "clang-13"
                    else ["-fplugin-arg-perfgroup-" + o])
        objs = []
        for src, opts in (("util.c", ["default=util"]),
                          ("main.c", ["default=app", f"map={CONSUMER}/groups.map"]),
                          ("parser.c", ["default=app", f"map={CONSUMER}/groups.map"])):
            obj = f"{w}/{cc}-{src}.o"
            plugin_args = [a for o in opts for a in plugin_arg(o)]
            sh([cc, "-O2", "-Werror", *cflags, f"-fplugin={plugin}", *plugin_args, "-c",
                os.path.join(CONSUMER, src), "-o", obj])
            objs.append(obj)
        prog = f"{w}/pc-{cc}"
        sh([cc, *objs, "-o", prog, *libs, f"-Wl,-rpath,{p}/{A.libdir}"])
        check_trace(prog, A.workdir)
    if sh(["pkg-config", "--variable=clang_plugin_15", "perfgroup"], env=e).strip():
        raise Fail("pkg-config names a plugin for clang 15, which was not built")

    # A compiler without its plugin: a configure-time error that says what to do. The main
    # build's staged install (packaging.install) has the plugins of the build's GCC and Clang
    # only (12 and 14 by default; a one-compiler build's otherwise): a release next to them.
    def major(cc):
        return sh([cc, "-dumpversion"]).strip().split(".")[0]
    have = {fam: major(COMPILERS[fam][0]) for fam in ("gcc", "clang")}
    gcc_other = next(c for c in ("gcc-11", "gcc-12") if major(c) != have["gcc"])
    clang_other = next(c for c in ("clang-13", "clang-14") if major(c) != have["clang"])
    for cc, texts in ((gcc_other, (f"the C compiler is GCC {major(gcc_other)}.",
                                   f"only for GCC {have['gcc']}", f"-DPERFGROUP_GCC={gcc_other}")),
                      (clang_other, (f"the C compiler is Clang {major(clang_other)}.",
                                     f"only for Clang {have['clang']}",
                                     f"-DPERFGROUP_LLVM_CONFIG=llvm-config-{major(clang_other)}"))):
        rc, out = run(["cmake", "-S", CONSUMER, "-B", f"{w}/mismatch-{cc}",
                       f"-DCMAKE_C_COMPILER={cc}", f"-DCMAKE_PREFIX_PATH={stage_prefix(A)}"])
        flat = " ".join(out.split())
        for text in texts:
            if rc == 0 or text not in flat:
                raise Fail(f"{cc} against GCC {have['gcc']}/Clang {have['clang']} plugins: "
                           f"expected a configure error "
                           f"with {text!r}, got exit {rc}:\n{out}")
        print(f"ok: {cc} without its plugin: configure error naming {texts[-1]}")

    # A plugin of another release, given by hand: a clear error, never a compiler crash.
    src = os.path.join(CONSUMER, "util.c")
    for cc, plugin, text in (
            ("clang-14", f"{p}/{A.libdir}/perfgroup-clang-13.so",
             "is perfgroup's plugin for clang 13 and cannot run in clang 14"),
            ("clang-13", f"{p}/{A.libdir}/perfgroup-clang-14.so",
             "is perfgroup's plugin for clang 14 and cannot run in clang 13"),
            ("gcc-11", stage + sh(["gcc-12", "-print-file-name=plugin"]).strip() + "/perfgroup.so",
             "cannot load plugin")):
        rc, out = run([cc, f"-I{p}/include", f"-fplugin={plugin}", "-c", src, "-o", f"{w}/x.o"])
        if rc == 0 or text not in out or "PLEASE submit a bug report" in out or \
                "internal compiler error" in out:
            raise Fail(f"{cc} -fplugin={plugin}: expected a clean error {text!r}, got exit "
                       f"{rc}:\n{out}")
        print(f"ok: {cc} with another release's plugin: {text}")


MISUSE = [  # (arguments after the target, text the configure error must contain)
    ("MAP no-such.map", "MAP file"),
    ("GROUP app RUNTIME DYNAMIC", "RUNTIME must be SHARED or STATIC, not 'DYNAMIC'"),
    ("GROUP app COLOR red", "unknown argument(s): COLOR;red"),
    ('GROUP "two words"', "GROUP 'two words' must be one word"),
]


def case_ninja(A):
    ninja = shutil.which("ninja")
    if not ninja:
        print("skipped: no ninja (Debian: ninja-build)")
        sys.exit(77)
    bdir = os.path.join(A.workdir, "build")
    shutil.rmtree(bdir, ignore_errors=True)
    # the main build's options as CMake's defaults give them: every target it generates
    sh(["cmake", "-G", "Ninja", "-S", A.source_dir, "-B", bdir, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"])
    rc, out = run([ninja, "-C", bdir, "-n", "-w", "phonycycle=err"])
    if rc != 0 or "warning:" in out:
        raise Fail(f"ninja -n (exit {rc}): the generated build is not one Ninja runs:\n"
                   + "\n".join(l for l in out.splitlines() if not l.startswith("[")))
    steps = sum(1 for l in out.splitlines() if l.startswith("["))
    print(f"ok: Ninja accepts the build: {steps} steps")


def case_misuse(A):
    prefix = stage_prefix(A)
    for i, (args, want) in enumerate(MISUSE):
        src = os.path.join(A.workdir, f"src{i}")
        os.makedirs(src, exist_ok=True)
        with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.25)\nproject(misuse C)\n"
                    "find_package(PerfGroup REQUIRED)\n"
                    f"add_executable(app {CONSUMER}/parser.c)\n"
                    f"perfgroup_instrument(app {args})\n")
        r = subprocess.run(["cmake", "-S", src, "-B", os.path.join(A.workdir, f"build{i}"),
                            f"-DCMAKE_PREFIX_PATH={prefix}"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        flat = " ".join(r.stdout.split())
        if r.returncode == 0 or f"perfgroup_instrument(app): {want}" not in flat:
            raise Fail(f"perfgroup_instrument(app {args}): expected a configure error containing "
                       f"{want!r}, got exit {r.returncode}:\n{r.stdout}")
        print(f"ok: perfgroup_instrument(app {args}) -> {want}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["install", "package", "subdir", "pkgconfig", "misuse",
                                       "compilers", "ninja"])
    ap.add_argument("--cc", choices=sorted(COMPILERS), default="gcc")
    ap.add_argument("--build-dir", required=True, help="perfgroup's build directory")
    ap.add_argument("--source-dir", required=True, help="perfgroup's source directory")
    ap.add_argument("--prefix", required=True, help="the build's CMAKE_INSTALL_PREFIX")
    ap.add_argument("--libdir", required=True, help="the build's CMAKE_INSTALL_LIBDIR")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--with-gcc", action="store_true")
    ap.add_argument("--with-clang", action="store_true")
    ap.add_argument("--with-convert", action="store_true")
    A = ap.parse_args()
    os.makedirs(A.workdir, exist_ok=True)
    try:
        globals()["case_" + A.case](A)
    except Fail as e:
        print(f"FAIL: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
