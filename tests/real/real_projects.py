#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""real_projects.py — real code nobody here wrote, fully instrumented, under its own test suite.

Projects (sources from Debian bookworm's source archive, `apt-get source --download-only` +
`dpkg-source -x`, cached under --cache):
    lua    Lua 5.4 (lua5.4) — the interpreter; its own test suite is not packaged, so the test
           suites of lua-lpeg (test.lua) and lua-cjson (tests/test.lua) run on it, their C
           modules built against it and instrumented too (groups lpeg, cjson)
    zlib   zlib (zlib) — ./configure && make && make test
    libuv  libuv (libuv1) — its CMake build, the static test runner uv_run_tests_a; every loop
           iteration is an event (uvhook.c, linked with --wrap: libuv is not patched)

Variants (the build flags; see variant_flags):
    none     the compiler alone                     (the baseline: which tests pass)
    finstr   -finstrument-functions, empty hooks    (benchmarks only)
    default  the plugin, every function in one group: default=<project>
    map      the plugin, default=<project> plus <project>.map splitting it into subsystems
    all      default plus all-functions (every function hooked; benchmarks only)
    map-all  map plus all-functions: `check` compares its group totals with map's (elision
             only takes re-entries away: every group's activations and events must be the same)

`check` (what ctest runs, one test per project and compiler): builds `none`, runs the suite;
builds each instrumented variant, runs the suite with recording on (PERFGROUP_OUTPUT, one file
per process) and fails if any test that passed uninstrumented does not pass instrumented;
reads the recordings back with perfgroup-convert --summary --json and requires the expected
groups; runs one small program with PERFGROUP_TEXT and requires hook lines of those groups.
"""
import argparse
import fcntl
import glob
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# gcc, clang: the compilers the build's plugins were built for (ctest's environment,
# tests/CMakeLists.txt), else the project's default pair
COMPILERS = {"gcc": os.environ.get("PERFGROUP_TEST_GCC", "gcc-12"),
             "clang": os.environ.get("PERFGROUP_TEST_CLANG", "clang-14"),
             # the oldest and newest of the matrix (scripts/compilers.sh), with --gcc-plugin /
             # --clang-plugin built for them (-DPERFGROUP_GCC=gcc-11, llvm-config-19)
             "gcc-11": "gcc-11", "clang-19": "clang-19"}
# The deb-src apt source the project adds when none is configured: the one of
# bench/compile-time/lua_compile_time.py, so both use one file.
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "compile-time"))
from lua_compile_time import DEB_SRC, DEB_SRC_TEXT  # noqa: E402
# Groups the map variant must show in the recording (a subset: which run depends on the suite).
EXPECT_GROUPS = {
    "lua": {"default": ["lua", "lpeg", "cjson"],
            "map": ["parser", "vm", "gc", "libraries", "objects", "lpeg", "cjson"]},
    "zlib": {"default": ["zlib"], "map": ["deflate", "inflate", "checksum", "gzip-io", "tests"]},
    "libuv": {"default": ["libuv"], "map": ["loop", "timers", "io-poll", "streams", "tests"]},
}
for _g in EXPECT_GROUPS.values():
    _g["map-all"] = _g["map"]
INSTRUMENTED = ("default", "map", "all", "map-all")


class Fail(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def sh(cmd, cwd=None, env=None, check=True, quiet=True, timeout=None):
    """Runs cmd; returns (returncode, output). Output is printed when it fails (check)."""
    log("+ " + (cmd if isinstance(cmd, str) else " ".join(cmd)) + (f"   [in {cwd}]" if cwd else ""))
    r = subprocess.run(cmd, cwd=cwd, env=env, shell=isinstance(cmd, str), text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                       errors="replace")
    if (check and r.returncode != 0) or not quiet:
        log(r.stdout[-6000:])
    if check and r.returncode != 0:
        raise Fail(f"exit status {r.returncode}: {cmd if isinstance(cmd, str) else ' '.join(cmd)}")
    return r.returncode, r.stdout


# ---- Sources -------------------------------------------------------------------------------------
def debian_source(pkg, cache):
    """The unpacked (patched) Debian source tree of pkg, fetched once into cache. Runs at once
    (ctest -j, scripts/test.sh) share the cache: one fetches and unpacks under the cache's
    lock, the others wait for it and find the tree."""
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return debian_source_locked(pkg, cache)


def debian_source_locked(pkg, cache):
    found = [d for d in glob.glob(os.path.join(cache, f"{pkg}-*")) if os.path.isdir(d)]
    if found:
        return found[0]
    if not glob.glob(os.path.join(cache, f"{pkg}_*.dsc")):
        if not os.path.exists(DEB_SRC) and not deb_src_configured():
            with open(DEB_SRC, "w") as f:
                f.write(DEB_SRC_TEXT)
            sh(["apt-get", "update", "-qq"])
        sh(["apt-get", "source", "-qq", "--download-only", pkg], cwd=cache)
    dsc = sorted(glob.glob(os.path.join(cache, f"{pkg}_*.dsc")))[-1]
    sh(["dpkg-source", "-x", os.path.basename(dsc)], cwd=cache)
    return [d for d in glob.glob(os.path.join(cache, f"{pkg}-*")) if os.path.isdir(d)][0]


def deb_src_configured():
    for f in glob.glob("/etc/apt/sources.list") + glob.glob("/etc/apt/sources.list.d/*"):
        try:
            if re.search(r"^\s*(Types:.*\bdeb-src\b|deb-src\s)", open(f).read(), re.M):
                return True
        except OSError:
            pass
    return False


# ---- Variants ------------------------------------------------------------------------------------
class Tools:
    """Paths of the perfgroup pieces the builds use (from CMake)."""

    def __init__(self, A):
        self.runtime_dir = A.runtime_dir
        self.include = A.include
        self.plugin = {"gcc": A.gcc_plugin, "clang": A.clang_plugin}
        self.convert = A.convert
        self.pgdump = A.pgdump
        self.cache = A.cache


def variant_flags(T, project, cc, variant, workdir):
    """(compile flags, link flags) for a variant. Plugin flags are compile flags; where a build
    system also puts CFLAGS on link lines clang only warns about them (silenced)."""
    cflags, ldflags = ["-O2", "-g"], []
    family = cc.split("-")[0]
    if family == "clang":
        cflags.append("-Wno-unused-command-line-argument")
    if variant == "finstr":
        lib = os.path.join(workdir, "cyg", "libcyg_empty.so")
        if not os.path.exists(lib):
            os.makedirs(os.path.dirname(lib), exist_ok=True)
            sh([COMPILERS[cc], "-O2", "-shared", "-fPIC", os.path.join(HERE, "cyg_empty.c"), "-o", lib])
        cflags.append("-finstrument-functions")
        ldflags += [lib, f"-Wl,-rpath,{os.path.dirname(lib)}"]
    elif variant in INSTRUMENTED:
        so = T.plugin[family]
        if not so:
            raise Fail(f"no {cc} plugin built")
        cflags.append(f"-fplugin={so}")
        if family == "clang":
            cflags.append(f"-fpass-plugin={so}")
        cflags.append(f"-fplugin-arg-perfgroup-default={project}")
        if variant in ("map", "map-all"):
            cflags.append(f"-fplugin-arg-perfgroup-map={os.path.join(HERE, project + '.map')}")
        if variant in ("all", "map-all"):   # every function hooked, no elision
            cflags.append("-fplugin-arg-perfgroup-all-functions")
        ldflags += [f"-L{T.runtime_dir}", "-lperfgroup", f"-Wl,-rpath,{T.runtime_dir}"]
    return cflags, ldflags


def with_group(cflags, group):
    """The same flags with another default group (Lua's C modules: lpeg, cjson)."""
    return [re.sub(r"default=.*", f"default={group}", f) if "perfgroup-default=" in f else f
            for f in cflags]


def parallel_compile(jobs):
    """Runs compile commands two at a time (the machine has 2 cores)."""
    running = []
    for cmd in jobs + [None]:
        while running and (cmd is None or len(running) >= 2):
            p, c = running.pop(0)
            out, _ = p.communicate()
            if p.returncode != 0:
                log(out)
                raise Fail("compile failed: " + " ".join(c))
        if cmd is not None:
            running.append((subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                             text=True), cmd))


# ---- Lua 5.4 + lpeg + cjson ----------------------------------------------------------------------
def build_lua(T, cc, variant, bdir, extra_cflags=()):
    """Builds the interpreter and the two modules into bdir (objects in bdir/obj); extra_cflags
    go to every unit (bench/real_projects.py: another map=)."""
    lua_src = os.path.join(debian_source("lua5.4", T.cache), "src")
    lpeg_src = debian_source("lua-lpeg", T.cache)
    cjson_src = debian_source("lua-cjson", T.cache)
    cflags, ldflags = variant_flags(T, "lua", cc, variant, bdir)
    cflags += list(extra_cflags)
    compiler = COMPILERS[cc]
    jobs, objs = [], []
    os.makedirs(os.path.join(bdir, "obj"), exist_ok=True)
    # debian/rules writes this header (DEB_HOST_MULTIARCH, for the module search path).
    with open(os.path.join(bdir, "lua5.4-deb-multiarch.h"), "w") as f:
        f.write('#define DEB_HOST_MULTIARCH "x86_64-linux-gnu"\n')
    # What lua5.4's src/Makefile (target linux) compiles; the interpreter exports its API
    # (-Wl,-E) so C modules resolve against it.
    for c in sorted(glob.glob(os.path.join(lua_src, "*.c"))):
        name = os.path.basename(c)
        if name == "luac.c":
            continue
        o = os.path.join(bdir, "obj", name + ".o")
        jobs.append([compiler, "-std=gnu99", *cflags, "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX",
                     f"-I{bdir}", "-c", c, "-o", o])
        objs.append(o)
    for mod, src, extra in (("lpeg", lpeg_src, []), ("cjson", cjson_src, [])):
        for c in sorted(glob.glob(os.path.join(src, "*.c"))):
            if mod == "cjson" and os.path.basename(c) in ("dtoa.c", "g_fmt.c"):
                continue   # only with USE_INTERNAL_FPCONV
            o = os.path.join(bdir, "obj", f"{mod}-{os.path.basename(c)}.o")
            jobs.append([compiler, "-std=gnu99", *with_group(cflags, mod), "-fPIC", *extra,
                         f"-I{lua_src}", f"-I{bdir}", "-c", c, "-o", o])
    t0 = cpu_children()
    parallel_compile(jobs)
    sh([compiler, *objs, "-o", os.path.join(bdir, "lua"), "-Wl,-E", "-lm", "-ldl", *ldflags])
    for mod in ("lpeg", "cjson"):
        mobjs = sorted(glob.glob(os.path.join(bdir, "obj", f"{mod}-*.o")))
        sh([compiler, "-shared", *mobjs, "-o", os.path.join(bdir, f"{mod}.so"), *ldflags])
    return cpu_children() - t0


def suite_lua(T, bdir, env):
    """Results {test: passed}: lpeg's test.lua (one test), each cjson test."""
    lpeg_src = debian_source("lua-lpeg", T.cache)
    cjson_src = debian_source("lua-cjson", T.cache)
    lua = os.path.join(bdir, "lua")
    e = dict(env, LUA_CPATH=f"{bdir}/?.so", LUA_PATH=f"{lpeg_src}/?.lua;{cjson_src}/lua/?.lua")
    results = {}
    rc, out = sh([lua, "test.lua"], cwd=lpeg_src, env=e, check=False)
    results["lpeg test.lua"] = rc == 0 and out.rstrip().endswith("OK")
    tests = os.path.join(bdir, "cjson-tests")
    if not os.path.isdir(tests):
        shutil.copytree(os.path.join(cjson_src, "tests"), tests)
        sh(["perl", "genutf8.pl"], cwd=tests)    # utf8.dat, as the suite's runtests.sh does
    rc, out = sh([lua, "test.lua"], cwd=tests, env=e, check=False)
    for m in re.finditer(r"^==> Test \[(\d+)\] (.*): (PASS|FAIL)$", out, re.M):
        results[f"cjson {m.group(1)} {m.group(2)}"] = m.group(3) == "PASS"
    results["cjson summary"] = rc == 0 and "==> Summary: all tests succeeded" in out
    return results


def smoke_lua(T, bdir, env):
    return [os.path.join(bdir, "lua"), "-e", "local t = {} for i = 1, 10 do t[i] = i end print(#t)"], None, {}


# ---- zlib ----------------------------------------------------------------------------------------
def build_zlib(T, cc, variant, bdir):
    src = debian_source("zlib", T.cache)
    shutil.rmtree(bdir, ignore_errors=True)
    shutil.copytree(src, bdir, symlinks=True)   # zlib builds in its source tree
    cflags, ldflags = variant_flags(T, "zlib", cc, variant, bdir)
    env = dict(os.environ, CC=COMPILERS[cc], CFLAGS=" ".join(cflags), LDFLAGS=" ".join(ldflags))
    t0 = cpu_children()
    sh(["./configure"], cwd=bdir, env=env)
    sh(["make", "-j2"], cwd=bdir, env=env)
    return cpu_children() - t0


def suite_zlib(T, bdir, env):
    """make test: teststatic, testshared, test64 each print '*** zlib ... test OK ***'."""
    rc, out = sh(["make", "test"], cwd=bdir, env=env, check=False)
    results = {}
    for kind in ("teststatic", "testshared", "test64"):
        results[kind] = False
    names = {"zlib test OK": "teststatic", "zlib shared test OK": "testshared",
             "zlib 64-bit test OK": "test64"}
    for line in out.splitlines():
        for k, v in names.items():
            if f"*** {k} ***" in line:
                results[v] = True
    results["make test"] = rc == 0
    return results


def smoke_zlib(T, bdir, env):
    # One instrumented process: PERFGROUP_TEXT is truncated by each process that opens it.
    return ["sh", "-c", "echo perfgroup | ./minigzip > smoke.gz"], bdir, {}


# ---- libuv ---------------------------------------------------------------------------------------
def build_libuv(T, cc, variant, bdir):
    src = debian_source("libuv1", T.cache)
    cflags, ldflags = variant_flags(T, "libuv", cc, variant, bdir)
    if ldflags:
        # CMake puts linker flags before the objects; Debian's gcc links --as-needed, which
        # would drop the runtime seen before anything needs it.
        ldflags = ["-Wl,--no-as-needed"] + ldflags
    shutil.rmtree(bdir, ignore_errors=True)
    cmd = ["cmake", "-S", src, "-B", bdir, "-DCMAKE_BUILD_TYPE=None", f"-DCMAKE_C_COMPILER={COMPILERS[cc]}",
           f"-DCMAKE_C_FLAGS={' '.join(cflags)}", f"-DCMAKE_EXE_LINKER_FLAGS={' '.join(ldflags)}",
           f"-DCMAKE_SHARED_LINKER_FLAGS={' '.join(ldflags)}", "-DBUILD_TESTING=ON",
           "-DLIBUV_BUILD_TESTS=ON"]
    if variant in INSTRUMENTED:
        cmd += [f"-DCMAKE_PROJECT_libuv_INCLUDE={HERE}/uvhook.cmake",
                f"-DPERFGROUP_UVHOOK_INCLUDE={T.include}"]
    t0 = cpu_children()
    sh(cmd)
    sh(["cmake", "--build", bdir, "-j2", "--target", "uv_run_tests_a"])
    return cpu_children() - t0


def suite_libuv(T, bdir, env):
    """uv_run_tests_a: TAP, one 'ok N - name' / 'not ok N - name' per test; SKIPs are not
    passes. Runs in its own copy of the source tree (the tests write files into the cwd)."""
    src = debian_source("libuv1", T.cache)
    cwd = os.path.join(bdir, "cwd")
    if not os.path.isdir(cwd):
        shutil.copytree(src, cwd, symlinks=True)
    # The runner refuses root unless UV_RUN_AS_ROOT is set; as root some permission tests
    # fail — in every variant alike, which is what the comparison needs.
    e = dict(env, UV_TEST_TIMEOUT_MULTIPLIER="4", UV_RUN_AS_ROOT="1")
    rc, out = sh([os.path.join(bdir, "uv_run_tests_a")], cwd=cwd, env=e, check=False)
    results = {}
    for m in re.finditer(r"^(not ok|ok) \d+ - (\S+)(.*)$", out, re.M):
        results[m.group(2)] = m.group(1) == "ok" and "# SKIP" not in m.group(3)
    if not results:
        log(out[-3000:])
        raise Fail("uv_run_tests_a printed no TAP lines")
    return results


def smoke_libuv(T, bdir, env):
    # One test run in-process (runner syntax: <test> <test>), so one process writes the trace.
    return ([os.path.join(bdir, "uv_run_tests_a"), "timer", "timer"], os.path.join(bdir, "cwd"),
            {"UV_RUN_AS_ROOT": "1"})


PROJECTS = {
    "lua": (build_lua, suite_lua, smoke_lua),
    "zlib": (build_zlib, suite_zlib, smoke_zlib),
    "libuv": (build_libuv, suite_libuv, smoke_libuv),
}


# ---- Measuring and checking ----------------------------------------------------------------------
def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_suite(T, project, bdir, variant, recdir=None, buffer="4M", extra_env=None):
    """Runs the suite; returns (results, wall seconds, CPU seconds, recording files).
    extra_env: variables set after the PERFGROUP_ ones of the caller's environment are taken
    away (bench/real_projects.py: PERFGROUP_ACCOUNTING, a preload)."""
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("PERFGROUP_"):
            del env[k]
    env.update(extra_env or {})
    files = []
    if recdir and variant in INSTRUMENTED:
        shutil.rmtree(recdir, ignore_errors=True)
        os.makedirs(recdir)
        env.update(PERFGROUP_OUTPUT=os.path.join(recdir, "rec.%p.pgm"), PERFGROUP_BUFFER=buffer)
    t0, c0 = time.monotonic(), cpu_children()
    results = PROJECTS[project][1](T, bdir, env)
    wall, cpu = time.monotonic() - t0, cpu_children() - c0
    if recdir and os.path.isdir(recdir):
        # rec.<pid>.pgm, and rec.<pid>.pgm.exec<n> after an exec; not *.tmp* (being created)
        files = sorted(f for f in glob.glob(os.path.join(recdir, "rec.*"))
                       if ".tmp" not in os.path.basename(f))
    return results, wall, cpu, files


def recorded_groups(T, files):
    """Every group in the recordings, read back by perfgroup-convert --summary --json, with its
    totals over every process and thread ({group: {"cpu_ms", "activations", "events"}}), and
    how many files the converter warned about (recordings not closed: processes that were
    killed or left by _exit without the atexit flush)."""
    groups, warned = {}, 0
    for f in files:
        r = subprocess.run([T.convert, f, "--summary", "--json"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, errors="replace")
        if r.returncode != 0:
            raise Fail(f"perfgroup-convert could not read {f}: {r.stderr.strip()}")
        warned += bool(r.stderr.strip())
        for p in json.loads(r.stdout).get("processes", []):
            for t in p.get("threads", []):
                for g in t.get("groups", []):
                    tot = groups.setdefault(g["group"], {"cpu_ms": 0.0, "activations": 0, "events": 0})
                    for k in tot:
                        tot[k] += g[k]
    return groups, warned


def uv_iteration_events(T, files):
    """Event records named 'uv loop iteration' (uvhook.c) in the recordings, by pgdump."""
    n = 0
    for f in files:
        out = subprocess.run([T.pgdump, f], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, errors="replace").stdout
        m = re.search(r'^string .* id=(\d+) text="uv loop iteration"$', out, re.M)
        if m:
            n += len(re.findall(rf"^event .* name={m.group(1)} ", out, re.M))
    return n


def smoke_trace(T, project, bdir, workdir):
    """Runs one small program with PERFGROUP_TEXT; returns {group: hook calls}."""
    cmd, cwd, extra = PROJECTS[project][2](T, bdir, None)
    trace = os.path.join(workdir, f"{project}.trace")
    if os.path.exists(trace):
        os.unlink(trace)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFGROUP_")}
    env.update(extra, PERFGROUP_TEXT=trace)
    sh(cmd, cwd=cwd, env=env)
    counts = {}
    for line in open(trace, errors="replace"):
        parts = line.rstrip("\n").split("\t")
        if len(parts) >= 3 and parts[1].startswith("> "):
            for g in parts[2].split("|"):
                if g:
                    counts[g] = counts.get(g, 0) + 1
    return counts


# How far a group's activations may differ between the elided and the every-hook build.
# zlib: not at all. libuv: its suite is timing-driven (how often a loop iterates depends on
# timers and I/O readiness), so its counts vary from run to run of one build; the tolerance is
# measured (RERUN_VARIATION). Lua raises every error with longjmp (pcall: lpeg's and cjson's
# suites test their errors): frames a longjmp skipped stay on the shadow stack until an enter
# from above them or an exit below them finds them dead (runtime/hooks.c), and until then
# their groups count as running; how soon that is found depends on where hooks are, so the
# two builds differ there (lpeg's suite: libraries 1,487,742 elided vs 1,474,026, 0.9 %,
# the same in every run; run to run, gc and objects differ by ~0.01 % for Lua's hash seed).
ACTIVATIONS_TOLERANCE = {"lua": 0.02}
# Projects whose elision comparison runs both builds once more in exact mode: in the default
# (adaptive) mode a hot event's lite frames count an activation when they start, so a lite
# frame a longjmp skips counts one and a runtime frame none (docs/accounting.md "Lite frames",
# tests/lite's lite.paths.longjmp): which frames are lite depends on the countdown, so the
# two builds' counts differ by a few per error raised, run to run (cjson 109 against 112 once).
# The suites' first runs (pass/fail, groups recorded) stay in the default mode.
EXACT_ELISION = {"lua"}
# Projects whose suite is run a second time with the elided build: the largest relative
# difference of any group's activations or events between the two runs of the same binaries
# is the suite's run-to-run variation, pooled over every group and both counts; the elided
# and the every-hook build may differ by RERUN_FACTOR times that (a missed entry moves a
# group's activations to its caller's group in every run alike: far more than the spread).
RERUN_VARIATION = {"libuv"}
RERUN_FACTOR = 3


def rerun_variation(first, second):
    """Between two runs of the same build ({group: totals} each): the largest relative
    difference of a count of at least 1000 (a smaller one says little of the suite's spread),
    and each group's own absolute differences {(group, count): difference}."""
    worst, own = 0.0, {}
    for g in set(first) | set(second):
        for k in ("activations", "events"):
            a, b = first.get(g, {}).get(k, 0), second.get(g, {}).get(k, 0)
            own[(g, k)] = abs(a - b)
            if max(a, b) >= 1000:
                worst = max(worst, abs(a - b) / max(a, b))
    return worst, own


def compare_elision(elided, full, tolerance=0.0, events_tolerance=0.0, slack=None):
    """Group totals of the map build (elision, the default) against map-all (every function
    hooked), same suite. Elision takes away only hooks that could never start a stopwatch (a
    re-entry of a group already running), so every group's activations and events are the
    same in both (within `tolerance`, relative, for activations, and `events_tolerance` for
    events, or by `slack[(group, count)]`, absolute); a hook elided where a group
    could be entered would move that group's activations (and CPU) to its caller's group. CPU
    is printed, not compared: the every-hook build spends more of it in hooks, charged to the
    groups that run them."""
    out = []
    log("   group totals, map (elided) vs map-all (every function hooked):")
    for g in sorted(set(elided) | set(full)):
        a = elided.get(g, {"cpu_ms": 0.0, "activations": 0, "events": 0})
        b = full.get(g, {"cpu_ms": 0.0, "activations": 0, "events": 0})
        log(f"     {g:12s} activations {a['activations']:>9} vs {b['activations']:>9}   "
            f"events {a['events']:>7} vs {b['events']:>7}   CPU {a['cpu_ms']:9.1f} vs "
            f"{b['cpu_ms']:9.1f} ms")
        for k in ("activations", "events"):
            tol = tolerance if k == "activations" else events_tolerance
            if abs(a[k] - b[k]) > max(tol * max(a[k], b[k]), (slack or {}).get((g, k), 0)):
                out.append(f"group {g}: {k} {a[k]} elided, {b[k]} with every function hooked")
    return out


def check(T, project, cc, variants, workdir, reuse=False):
    build, _, _ = PROJECTS[project]
    base_dir = os.path.join(workdir, "none")
    saved = os.path.join(workdir, "none-results.json")
    if reuse and os.path.exists(saved):
        base = json.load(open(saved))
    else:
        build(T, cc, "none", base_dir)
        base, _, _, _ = run_suite(T, project, base_dir, "none")
        json.dump(base, open(saved, "w"))
    passed = sorted(t for t, ok in base.items() if ok)
    log(f"== {project}/{cc} uninstrumented: {len(passed)}/{len(base)} tests pass")
    if not passed:
        raise Fail("no test passes uninstrumented: nothing to compare with")
    failures = []
    totals = {}
    for v in variants:
        bdir = os.path.join(workdir, v)
        build(T, cc, v, bdir)
        results, wall, _, files = run_suite(T, project, bdir, v, os.path.join(workdir, v + "-rec"),
                                            buffer="1M" if project == "libuv" else "4M")
        lost = [t for t in passed if not results.get(t)]
        log(f"== {project}/{cc} {v}: {sum(results.values())}/{len(results)} tests pass "
            f"({len(passed) - len(lost)}/{len(passed)} of those passing uninstrumented), "
            f"{wall:.1f} s, {len(files)} recording files")
        if lost:
            failures.append(f"{v}: {len(lost)} tests pass uninstrumented but not instrumented: "
                            + ", ".join(lost[:20]))
        want = EXPECT_GROUPS[project][v]
        groups, warned = recorded_groups(T, files)
        totals[v] = groups
        missing = [g for g in want if g not in groups]
        log(f"   recorded groups: {', '.join(sorted(groups))}; {warned} of {len(files)} files "
            "with converter warnings (not closed)")
        if missing:
            failures.append(f"{v}: groups {missing} not in the recordings")
        if project == "libuv":
            n = uv_iteration_events(T, files)
            log(f"   'uv loop iteration' events (pgdump): {n}")
            if n == 0:
                failures.append(f"{v}: no 'uv loop iteration' event in the recordings")
        counts = smoke_trace(T, project, bdir, bdir)
        log(f"   PERFGROUP_TEXT hook calls by group: {counts}")
        top = EXPECT_GROUPS[project][v][0] if project != "lua" else ("lua" if v == "default" else "vm")
        if not counts.get(top):
            failures.append(f"{v}: PERFGROUP_TEXT shows no hook call in group {top}")
    if "map" in totals and "map-all" in totals and project in EXACT_ELISION:
        # both builds again in exact mode: elision's property alone (lite frames a longjmp
        # skips count their activation, runtime frames not: which ones a countdown picks)
        for v in ("map", "map-all"):
            _, _, _, fx = run_suite(T, project, os.path.join(workdir, v), v,
                                    os.path.join(workdir, v + "-exact-rec"),
                                    extra_env={"PERFGROUP_ACCOUNTING": "exact"})
            totals[v], _ = recorded_groups(T, fx)
        log("   map and map-all run again with PERFGROUP_ACCOUNTING=exact for the comparison")
    if "map" in totals and "map-all" in totals:
        tol = ACTIVATIONS_TOLERANCE.get(project, 0.0)
        ev_tol, slack = 0.0, None
        if project in RERUN_VARIATION:
            _, _, _, files2 = run_suite(T, project, os.path.join(workdir, "map"), "map",
                                        os.path.join(workdir, "map-rerun-rec"),
                                        buffer="1M" if project == "libuv" else "4M")
            again, _ = recorded_groups(T, files2)
            v, own = rerun_variation(totals["map"], again)
            log(f"   map run twice: largest relative difference of a count >= 1000 {v:.4%}; "
                f"tolerance map vs map-all {RERUN_FACTOR} x that, or {RERUN_FACTOR} x the "
                "group's own difference")
            tol = max(tol, RERUN_FACTOR * v)
            ev_tol = RERUN_FACTOR * v
            slack = {key: RERUN_FACTOR * d for key, d in own.items()}
        failures += compare_elision(totals["map"], totals["map-all"], tol, ev_tol, slack)
    if failures:
        raise Fail("; ".join(failures))
    log(f"ok: {project}/{cc}: every test passing uninstrumented passes in {', '.join(variants)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("project", choices=sorted(PROJECTS))
    ap.add_argument("--cc", choices=sorted(COMPILERS), required=True)
    ap.add_argument("--variants", default="default,map,map-all")
    ap.add_argument("--reuse-baseline", action="store_true",
                    help="take the uninstrumented results of an earlier run in --workdir")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--cache", required=True, help="where Debian sources are fetched and unpacked")
    ap.add_argument("--runtime-dir", required=True, help="directory of libperfgroup.so")
    ap.add_argument("--include", required=True, help="perfgroup's include directory")
    ap.add_argument("--gcc-plugin", default="")
    ap.add_argument("--clang-plugin", default="")
    ap.add_argument("--convert", required=True, help="perfgroup-convert")
    ap.add_argument("--pgdump", required=True, help="pgdump (reader/)")
    A = ap.parse_args()
    os.makedirs(A.workdir, exist_ok=True)
    try:
        check(Tools(A), A.project, A.cc, A.variants.split(","), A.workdir, A.reuse_baseline)
    except (Fail, subprocess.TimeoutExpired) as e:
        log(f"FAIL: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
