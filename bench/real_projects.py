#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/real_projects.py — what putting a whole code base into groups costs (issue 13):
the project's own fixed workload (bench/kvbench/, a key-value store driven by a command
language, ~2,200 lines in 8 files, about 2 s at -O2) and the real projects of tests/real/
(Lua 5.4 running the lpeg and cjson suites; zlib's `make test`), per compiler, in these
configurations:

    plain       the compiler alone                                          (the baseline)
    finstr      -finstrument-functions, hooks that return at once (a shared library)
    pg          perfgroup, default=<project> (every function in one group), stats in memory;
                with call-graph elision when the plugin has it (it then accepts all-functions)
    pg-all      the same plus -fplugin-arg-perfgroup-all-functions: every function hooked
                (only when the plugin accepts the option)
    pg+rec      the pg binaries with a stats recording (PERFGROUP_OUTPUT, PERFGROUP_MODE=stats)
    pg-weak     kv only: pg plus -fplugin-arg-perfgroup-weak-hooks (every hook call guarded),
                the runtime linked --no-as-needed: the guard's cost against pg, same rounds
    pg-files    kv only: one group per source file (bench/kvbench/kv.map, 8 groups), stats in
                memory, the default (exact) accounting
    pg-files-adaptive   the same binary with PERFGROUP_ACCOUNTING=adaptive (docs/accounting.md, "Hot threads")
    pg-files+rec     the same binary recording stats

Interleaved rounds (the order of configurations rotates each round) so machine noise hits all
alike; medians per configuration; ratios against `plain` of the same rounds. CPU = user+sys of
the run's processes (rusage); kvbench also reports its thread CPU time of the work (cpu_ns).
The 1-minute load average is read before every run and reported beside each figure.
Hooks executed: one extra, untimed run per build with bench/count_hooks.c preloaded (it takes
the hook calls, counting enters, and passes perfgroup's on to the runtime: calls the plugins'
inline re-entry check skips are not hook calls), reported as a count and per second of plain
CPU time.

    bench/real_projects.py --build-dir build [--projects kv,lua] [--compilers gcc,clang]
        [--rounds 5] [--kv-rounds 300] [--markdown docs/benchmarks.md]
"""
import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "real"))
import real_projects as rp  # noqa: E402

CONFIGS = ["plain", "finstr", "pg", "pg-all", "pg+rec", "pg-weak", "pg-files", "pg-files-adaptive",
           "pg-files+rec"]
VARIANT = {"plain": "none", "finstr": "finstr", "pg": "default", "pg-all": "all",
           "pg+rec": "default", "pg-weak": "weak", "pg-files": "files",
           "pg-files-adaptive": "files", "pg-files+rec": "files"}
KV_ONLY = ("pg-weak", "pg-files", "pg-files-adaptive", "pg-files+rec")
SECTION = "## Real projects, fully instrumented — `bench/real_projects.py`"
KV_SRC = os.path.join(HERE, "kvbench")


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def plugin_accepts(T, cc, option):
    """Does cc's plugin take -fplugin-arg-perfgroup-<option>? (compiles an empty unit)"""
    family = cc.split("-")[0]
    so = T.plugin[family]
    src = os.path.join(T.tmp, "empty.c")
    with open(src, "w") as f:
        f.write("int f(void) { return 0; }\n")
    cmd = [rp.COMPILERS[cc], f"-fplugin={so}", f"-fplugin-arg-perfgroup-{option}",
           "-c", src, "-o", os.devnull]
    if family == "clang":
        cmd.insert(2, f"-fpass-plugin={so}")
    return subprocess.run(cmd, capture_output=True).returncode == 0


# ---- kvbench ------------------------------------------------------------------------------------
def build_kv(T, cc, variant, bdir):
    cflags, ldflags = rp.variant_flags(T, "kv", cc, "default" if variant in ("weak", "files")
                                       else variant, bdir)
    if variant == "files":  # one group per source file
        cflags.append(f"-fplugin-arg-perfgroup-map={os.path.join(KV_SRC, 'kv.map')}")
    if variant == "weak":
        # weak references alone do not keep an --as-needed library (docs/plugins.md)
        cflags.append("-fplugin-arg-perfgroup-weak-hooks")
        ldflags = ["-Wl,--push-state,--no-as-needed", *ldflags, "-Wl,--pop-state"]
    os.makedirs(bdir, exist_ok=True)
    objs, jobs = [], []
    for c in sorted(glob.glob(os.path.join(KV_SRC, "*.c"))):
        o = os.path.join(bdir, os.path.basename(c) + ".o")
        jobs.append([rp.COMPILERS[cc], "-std=c11", "-Wall", "-Wextra", *cflags, "-c", c, "-o", o])
        objs.append(o)
    t0 = rp.cpu_children()
    rp.parallel_compile(jobs)
    rp.sh([rp.COMPILERS[cc], *objs, "-o", os.path.join(bdir, "kvbench"), *ldflags])
    return rp.cpu_children() - t0


def run_kv(A, bdir, env):
    """(process CPU s, thread CPU s of the work, checksum line)"""
    p = subprocess.Popen([os.path.join(bdir, "kvbench"), str(A.kv_rounds)], env=env,
                         stdout=subprocess.PIPE, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise rp.Fail(f"kvbench exited {p.returncode}")
    cpu_ns = int(re.search(r"^cpu_ns=(\d+)$", out, re.M).group(1))
    crc = re.search(r"^crc32 \S+$", out, re.M).group(0)
    return ru.ru_utime + ru.ru_stime, cpu_ns / 1e9, crc


# ---- one project, one compiler --------------------------------------------------------------------
def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("PERFGROUP_")}


def run_config(T, A, project, cfg, bdir, workdir, env_extra=None):
    """One run: (process CPU s, thread CPU s or None, files recorded)."""
    variant = VARIANT[cfg]
    rec = os.path.join(workdir, "rec") if cfg.endswith("+rec") else None
    if project == "kv":
        env = clean_env()
        env.update(env_extra or {})
        if cfg == "pg-files-adaptive":
            env["PERFGROUP_ACCOUNTING"] = "adaptive"
        if rec:
            os.makedirs(rec, exist_ok=True)
            for f in glob.glob(os.path.join(rec, "*")):
                os.unlink(f)
            env.update(PERFGROUP_OUTPUT=os.path.join(rec, "rec.%p.pgm"), PERFGROUP_MODE="stats",
                       PERFGROUP_BUFFER="4M")
        cpu, tcpu, crc = run_kv(A, bdir, env)
        if A.kv_crc.setdefault("crc", crc) != crc:
            raise rp.Fail(f"kvbench {cfg}: {crc}, plain gave {A.kv_crc['crc']}")
        return cpu, tcpu
    saved = dict(os.environ)
    try:
        os.environ.update(env_extra or {})
        # rec: run_suite sets PERFGROUP_OUTPUT; the mode is stats when PERFGROUP_MODE is unset
        results, _, cpu, _ = rp.run_suite(T, project, bdir, variant, rec)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    if not all(results.values()) and cfg != "plain":
        print(f"warning: {project}/{cfg}: {sum(results.values())}/{len(results)} tests pass")
    return cpu, None


def count_hooks(T, A, project, cfg, bdir, workdir):
    out = os.path.join(workdir, f"count.{cfg}")
    if os.path.exists(out):
        os.unlink(out)
    run_config(T, A, project, cfg, bdir, workdir,
               {"LD_PRELOAD": A.count_lib[A.cur_cc], "PG_COUNT_OUT": out})
    if not os.path.exists(out):
        return None
    return sum(int(l.split()[1]) for l in open(out) if l.startswith("enter "))


def bench(T, A, project, cc, workdir):
    configs = [c for c in CONFIGS if (c != "pg-all" or A.has_all[cc])
               and (c not in KV_ONLY or project == "kv")]
    build = build_kv if project == "kv" else rp.PROJECTS[project][0]
    bcpu = {}
    for v in sorted({VARIANT[c] for c in configs}):
        bcpu[v] = build(T, cc, v, os.path.join(workdir, v))
    cpu = {c: [] for c in configs}
    tcpu = {c: [] for c in configs}
    load = {c: [] for c in configs}
    for r in range(A.rounds):
        for c in configs[r % len(configs):] + configs[:r % len(configs)]:
            load[c].append(os.getloadavg()[0])
            u, t = run_config(T, A, project, c, os.path.join(workdir, VARIANT[c]), workdir)
            cpu[c].append(u)
            if t is not None:
                tcpu[c].append(t)
    hooks = {}
    for c in ("finstr", "pg", "pg-all", "pg-files"):
        if c in configs:
            hooks[c] = count_hooks(T, A, project, c, os.path.join(workdir, VARIANT[c]), workdir)
    med = statistics.median
    rows = []
    for c in configs:
        u = med(cpu[c])
        t = med(tcpu[c]) if tcpu[c] else None
        rows.append({"cfg": c, "build": bcpu[VARIANT[c]], "cpu": u, "cpu_x": u / med(cpu["plain"]),
                     "tcpu": t, "tcpu_x": t / med(tcpu["plain"]) if t is not None else None,
                     "hooks": hooks.get(c), "load": (med(load[c]), min(load[c]), max(load[c]))})
    plain_s = med(tcpu["plain"]) if tcpu["plain"] else med(cpu["plain"])
    return rows, plain_s


# ---- report ---------------------------------------------------------------------------------------
LABEL = {"plain": "plain", "finstr": "`-finstrument-functions`, empty hooks",
         "pg": "perfgroup `default=`, stats", "pg-all": "perfgroup `default=` `all-functions`, stats",
         "pg+rec": "perfgroup `default=`, stats recording",
         "pg-weak": "perfgroup `default=` `weak-hooks`, stats",
         "pg-files": "perfgroup, one group per file (8), stats",
         "pg-files-adaptive": "the same, `PERFGROUP_ACCOUNTING=adaptive`",
         "pg-files+rec": "the same, stats recording"}


def markdown(results, A, cmd):
    out = [SECTION, "",
           "What a whole code base in one group costs (issue 13). Projects: **kv** — the",
           "project's own fixed workload (bench/kvbench/: a key-value store driven by a text",
           "command language, hash table, B+tree, sorting, formatting; ~2,200 lines, 8 files, many",
           "small static functions; deterministic, its checksum checked equal in every build);",
           "**lua** — Lua 5.4 running the lua-lpeg and lua-cjson suites, the C modules",
           "instrumented too, in groups of their own, `lpeg` and `cjson` (tests/real/). Built -O2 -g;",
           "`default=<project>` puts every function in one group. `pg` is the plugin's default mode: with call-graph elision when the",
           "plugin has it (the build then also has the `all-functions` row, every function",
           "hooked); without that row, `pg` hooks every function. `pg+rec` is the `pg` binary",
           "recording stats to a file (`PERFGROUP_OUTPUT`, `PERFGROUP_MODE=stats`).",
           "",
           f"CPU = user+sys of the run's processes; thread CPU = kvbench's own `CLOCK_THREAD_CPUTIME_ID`",
           f"around its work. Medians of {A.rounds} interleaved rounds (configuration order rotated",
           "each round), ratios (×) against `plain` of the same rounds. Load = the 1-minute load",
           "average read before each run: median (min–max) over that configuration's runs, on a",
           "2-vCPU machine shared with other work: ratios are what to read, and only when the load",
           "is low. Hooks = enter hook calls made in one untimed run with bench/count_hooks.c",
           "preloaded (it passes perfgroup's on to the runtime: a call the inline re-entry check",
           "skips makes none); M/s = that count per second of `plain` CPU time.", "",
           f"CPU: {cpu_model()}. Command: `{cmd}`", "",
           f"Run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}:", ""]
    for (project, cc), (rows, plain_s) in results.items():
        out += [f"**{project}, {cc}**" + ("" if A.has_all[cc] else
                " (plugin without `all-functions`: `pg` hooks every function)"), "",
                "| configuration | CPU s | × plain | thread CPU s | × plain | hooks | M hooks/s | load | build CPU s |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            t = f"{r['tcpu']:.2f} | {r['tcpu_x']:.2f}" if r["tcpu"] is not None else "— | —"
            h = (f"{r['hooks'] / 1e6:.1f} M | {r['hooks'] / plain_s / 1e6:.0f}"
                 if r["hooks"] is not None else "— | —")
            ld = r["load"]
            out.append(f"| {LABEL[r['cfg']]} | {r['cpu']:.2f} | {r['cpu_x']:.2f} | {t} | {h} | "
                       f"{ld[0]:.1f} ({ld[1]:.1f}–{ld[2]:.1f}) | {r['build']:.1f} |")
        out.append("")
    return "\n".join(out)


def write_section(path, text):
    doc = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    start = doc.find(SECTION)
    if start >= 0:
        nxt = doc.find("\n## ", start + len(SECTION))
        doc = doc[:start] + text.rstrip() + "\n" + (doc[nxt:] if nxt >= 0 else "")
    else:
        doc = doc.rstrip() + "\n\n" + text.rstrip() + "\n"
    open(path, "w").write(doc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--projects", default="kv,lua")
    ap.add_argument("--compilers", default="gcc,clang",
                    help="gcc, clang (gcc-12, clang-14), gcc-11, clang-19 (with --gcc-plugin/"
                         "--clang-plugin built for them)")
    ap.add_argument("--gcc-plugin", default=None)
    ap.add_argument("--clang-plugin", default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--kv-rounds", type=int, default=500, help="kvbench's own rounds (work size)")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--markdown", default=None, help="write/replace this section in the file")
    A = ap.parse_args()
    b = os.path.abspath(A.build_dir)
    A.pgdump = os.path.join(b, "reader", "pgdump")
    A.runtime_dir = os.path.join(b, "runtime")
    A.include = os.path.join(ROOT, "include")
    A.gcc_plugin = A.gcc_plugin or os.path.join(b, "plugin-gcc", "perfgroup.so")
    A.clang_plugin = A.clang_plugin or os.path.join(b, "plugin-clang", "perfgroup-clang.so")
    A.convert = os.path.join(b, "converter", "perfgroup-convert")
    A.cache = os.path.join(b, "real-src")
    workdir = os.path.abspath(A.workdir or os.path.join(b, "bench-real"))
    os.makedirs(workdir, exist_ok=True)
    T = rp.Tools(A)
    T.tmp = workdir
    A.has_all, A.count_lib, A.kv_crc = {}, {}, {}
    results = {}
    for cc in A.compilers.split(","):
        A.has_all[cc] = plugin_accepts(T, cc, "all-functions")
        lib = os.path.join(workdir, f"libcount_hooks.{cc}.so")
        rp.sh([rp.COMPILERS[cc], "-O2", "-shared", "-fPIC", f"-I{A.include}",
               os.path.join(HERE, "count_hooks.c"), "-o", lib])
        A.count_lib[cc] = lib
        A.cur_cc = cc
        for project in A.projects.split(","):
            print(f"== {project}/{cc} (all-functions: {A.has_all[cc]})", flush=True)
            results[(project, cc)] = bench(T, A, project, cc,
                                           os.path.join(workdir, f"{project}.{cc}"))
    cmd = " ".join(["bench/real_projects.py", *sys.argv[1:]])
    text = markdown(results, A, cmd)
    print(text)
    if A.markdown:
        write_section(A.markdown, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
