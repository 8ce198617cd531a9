#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/real_projects.py — what putting a whole code base into groups costs (issues 13, 33):
the project's own fixed workload (bench/kvbench/, a key-value store driven by a command
language, ~2,000 lines in 8 files) and Lua 5.4 of tests/real/ (running the lpeg and cjson
suites), per compiler, in one group and in fine groups, in these configurations:

    plain          the compiler alone                                          (the baseline)
    finstr         -finstrument-functions, hooks that return at once (a shared library)
    pg             perfgroup, default=<project> (every function in one group), stats in memory,
                   the runtime's default accounting; call-graph elision when the plugin has it
    pg-all         the same plus -fplugin-arg-perfgroup-all-functions: every function hooked
                   (only when the plugin accepts the option)
    pg+rec         the pg binaries with a stats recording (PERFGROUP_OUTPUT, PERFGROUP_MODE=stats)
    pg-weak        kv only: pg plus -fplugin-arg-perfgroup-weak-hooks (every hook call guarded),
                   the runtime linked --no-as-needed: the guard's cost against pg, same rounds
    sub-exact      Lua only: by subsystem (bench/real/lua-subsystems.map: vm, table, string, gc,
                   parser, api, libs; lpeg and cjson their own groups), PERFGROUP_ACCOUNTING=exact
    sub-adaptive   the same binaries, PERFGROUP_ACCOUNTING=adaptive, the default: hot events
                   with lite frames where the plugin emits them (docs/accounting.md, "Hot
                   threads", "Lite frames")
    sub-starts     the same, PERFGROUP_LITE_R=0: hot events estimate their starts, no lite frames
    sub+rec        the same, adaptive, recording stats
    files-exact    one group per source file (kv: bench/kvbench/kv.map, its 8 files = its 8
                   modules; Lua: a map written here, every .c of Lua, lpeg and cjson its own
                   group named after it: 41 files built), exact
    files-adaptive, files+rec, files-starts   as for sub
  A driver whose main is not instrumented (every call into the library an implicit event):
    drv-plain      Lua only: bench/real/luadrive.c linked with the plain Lua objects (its
                   baseline; kv's driver rows compare with plain: it is the same program)
    drv            kv: kvbench with main.c compiled without the plugin, the rest default=kv;
                   Lua: luadrive.c (never instrumented) linked with the pg objects (default=lua)
    drv+rec        the same, recording stats
    drv-files-exact / -adaptive / +rec   kv: the driver build by file (kv.map)
    drv-sub-exact / -adaptive / +rec     Lua: luadrive with the by-subsystem objects

Interleaved rounds (the order of configurations rotates each round) so machine noise hits all
alike; medians per configuration; ratios against the row's baseline (plain, or drv-plain) of
the same rounds. CPU = user+sys of the run's processes (rusage); kvbench and luadrive also
report their thread CPU time of the work (cpu_ns). The 1-minute load average is read before
every run and reported beside each figure.
Hooks executed: one extra, untimed run per build with bench/count_hooks.c preloaded (it takes
the hook calls, counting enters, and passes perfgroup's on to the runtime: calls the plugins'
inline re-entry check skips are not hook calls), reported as a count, per second of the
baseline's CPU time, and as the row's CPU over its baseline divided by that count (ns per
hook). Activations and events: summed over the groups and threads of the +rec row's last
recording (perfgroup-convert --summary --json). Targets of issue 33, printed per row: one
group ≤ 1.15 ×, by subsystem ≤ 1.3 ×, one group per file ≤ 1.5 ×; recording stats ≤ 1.10 ×
that target.

    bench/real_projects.py --build-dir build [--projects kv,lua] [--compilers gcc,clang]
        [--rounds 5] [--kv-rounds 200] [--lua-iterations 50000] [--configs a,b,...]
        [--markdown docs/benchmarks.md] [--quick] [--check]

--quick: one round of small work (kv 20 rounds, luadrive 2,000 iterations, the Lua suites as
they are): every configuration built and run once — 5.5 min (gcc) and 8.5 min (clang) of
wall time at load 7–13 on 2 vCPUs; --check: exit 1 unless every +rec row's recording holds
the groups its grouping must show (ctest bench.real_projects.<cc>, labels bench;slow). A full
run (5 rounds, both projects, one compiler): 34 min of wall time at load 5–14 (kv 25 of them,
beside a ctest run); --configs and --rounds 3 for less.
"""
import argparse
import glob
import json
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

KV_SRC = os.path.join(HERE, "kvbench")
LUA_SUB_MAP = os.path.join(HERE, "real", "lua-subsystems.map")
SECTION = "## Fine groupings on real code (issue 33) — `bench/real_projects.py`"
TARGET = {"one": 1.15, "sub": 1.3, "files": 1.5}
REC_FACTOR = 1.10
# ns/hook only where hooks are what the row pays for (kv's one-group run makes 173)
MIN_HOOKS = 100000


class Config:
    """One row: a build (variant), the program run in it, the environment, the baseline row."""

    def __init__(self, name, variant, label, acc=None, rec=False, program="main", base="plain",
                 target=None, projects=("kv", "lua")):
        self.name, self.variant, self.label, self.acc, self.rec = name, variant, label, acc, rec
        self.program, self.base, self.target, self.projects = program, base, target, projects


def grouped(prefix, variant, what, target, projects, program="main", base="plain"):
    """The exact, adaptive and adaptive+recording rows of a multi-group build."""
    return [Config(f"{prefix}-exact", variant, what, "exact", False, program, base, target,
                   projects),
            Config(f"{prefix}-adaptive", variant, "the same", "adaptive", False, program, base,
                   target, projects),
            Config(f"{prefix}+rec", variant, "the same, stats recording", "adaptive", True, program,
                   base, target, projects),
            Config(f"{prefix}-starts", variant,
                   "the same, estimated starts only (PERFGROUP_LITE_R=0: no lite frames)", "starts",
                   False, program, base, target, projects)]


CONFIGS = [
    Config("plain", "none", "plain"),
    Config("finstr", "finstr", "`-finstrument-functions`, empty hooks"),
    Config("pg", "default", "one group (`default=`), stats", target="one"),
    Config("pg-all", "all", "one group, `all-functions`, stats"),
    Config("pg+rec", "default", "one group, stats recording", rec=True, target="one"),
    Config("pg-weak", "weak", "one group, `weak-hooks`, stats", projects=("kv",)),
    *grouped("sub", "sub", "by subsystem (10 groups), stats", "sub", ("lua",)),
    *grouped("files", "files", "one group per file, stats", "files", ("kv", "lua")),
    Config("drv-plain", "none", "driver: plain", program="drv", base="drv-plain",
           projects=("lua",)),
    Config("drv", "drv", "driver, main plain, library in one group", program="drv", target="one",
           projects=("kv",)),
    Config("drv+rec", "drv", "the same, stats recording", rec=True, program="drv", target="one",
           projects=("kv",)),
    Config("drv", "default", "driver, main plain, library in one group", program="drv",
           base="drv-plain", target="one", projects=("lua",)),
    Config("drv+rec", "default", "the same, stats recording", rec=True, program="drv",
           base="drv-plain", target="one", projects=("lua",)),
    *grouped("drv-files", "drv-files", "driver, library one group per file", "files", ("kv",),
             program="drv"),
    *grouped("drv-sub", "sub", "driver, library by subsystem", "sub", ("lua",), program="drv",
             base="drv-plain"),
]
# Groups a +rec row's recording must hold (--check); lua's by-file list is a sample.
KV_FILES = ["text", "parse", "hash", "index", "sort", "store", "report"]
LUA_SUB = ["vm", "table", "string", "gc", "parser", "api", "libs"]
EXPECT = {
    ("kv", "pg+rec"): ["kv"], ("kv", "files+rec"): KV_FILES + ["driver"],
    ("kv", "drv+rec"): ["kv"], ("kv", "drv-files+rec"): KV_FILES,
    ("lua", "pg+rec"): ["lua", "lpeg", "cjson"], ("lua", "sub+rec"): LUA_SUB + ["lpeg", "cjson"],
    ("lua", "files+rec"): ["lvm", "ltable", "lstring", "lgc", "lparser", "lapi", "lstrlib",
                           "lpvm", "lptree", "lua_cjson", "strbuf"],
    ("lua", "drv+rec"): ["lua"], ("lua", "drv-sub+rec"): LUA_SUB,
}


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


def map_flag(path):
    return f"-fplugin-arg-perfgroup-map={path}"


# ---- kvbench ------------------------------------------------------------------------------------
def build_kv(T, cc, variant, bdir):
    base = {"weak": "default", "files": "default", "drv": "default", "drv-files": "default"}
    cflags, ldflags = rp.variant_flags(T, "kv", cc, base.get(variant, variant), bdir)
    if variant in ("files", "drv-files"):  # one group per source file
        cflags.append(map_flag(os.path.join(KV_SRC, "kv.map")))
    if variant == "weak":
        # weak references alone do not keep an --as-needed library (docs/plugins.md)
        cflags.append("-fplugin-arg-perfgroup-weak-hooks")
        ldflags = ["-Wl,--push-state,--no-as-needed", *ldflags, "-Wl,--pop-state"]
    plain_flags, _ = rp.variant_flags(T, "kv", cc, "none", bdir)
    os.makedirs(bdir, exist_ok=True)
    objs, jobs = [], []
    for c in sorted(glob.glob(os.path.join(KV_SRC, "*.c"))):
        o = os.path.join(bdir, os.path.basename(c) + ".o")
        # the driver builds: main.c without the plugin (its calls into the rest are events)
        fl = plain_flags if variant.startswith("drv") and c.endswith("/main.c") else cflags
        jobs.append([rp.COMPILERS[cc], "-std=c11", "-Wall", "-Wextra", *fl, "-c", c, "-o", o])
        objs.append(o)
    t0 = rp.cpu_children()
    rp.parallel_compile(jobs)
    rp.sh([rp.COMPILERS[cc], *objs, "-o", os.path.join(bdir, "kvbench"), *ldflags])
    return rp.cpu_children() - t0


# ---- Lua ----------------------------------------------------------------------------------------
def lua_files_map(T, path):
    """A map putting every .c of Lua, lpeg and cjson in a group of its own, named after it."""
    names = []
    for pkg in ("lua5.4", "lua-lpeg", "lua-cjson"):
        src = rp.debian_source(pkg, T.cache)
        names += [os.path.basename(c) for c in glob.glob(os.path.join(src, "**", "*.c"),
                                                         recursive=True)]
    with open(path, "w") as f:
        f.write("# bench/real_projects.py: one group per file of Lua 5.4, lpeg and cjson\n")
        for n in sorted(set(names)):
            f.write(f"{n} {n[:-2]}\n")


def build_lua(T, cc, variant, bdir):
    """The interpreter and its modules (rp.build_lua) plus bench/real/luadrive.c, compiled
    without the plugin, linked with the same Lua objects (not lua.c)."""
    extra = []
    if variant == "sub":
        extra = [map_flag(LUA_SUB_MAP)]
    elif variant == "files":
        m = os.path.join(bdir, "lua-files.map")
        os.makedirs(bdir, exist_ok=True)
        lua_files_map(T, m)
        extra = [map_flag(m)]
    pg = "default" if variant in ("sub", "files") else variant
    cpu = rp.build_lua(T, cc, pg, bdir, extra)
    if variant not in ("none", "default", "sub"):
        return cpu
    lua_src = os.path.join(rp.debian_source("lua5.4", T.cache), "src")
    plain_flags, _ = rp.variant_flags(T, "lua", cc, "none", bdir)
    _, ldflags = rp.variant_flags(T, "lua", cc, pg, bdir)
    objs = [os.path.join(bdir, "obj", os.path.basename(c) + ".o")   # Lua's own, not lua.c's
            for c in sorted(glob.glob(os.path.join(lua_src, "*.c")))
            if os.path.basename(c) not in ("lua.c", "luac.c")]
    t0 = rp.cpu_children()
    drv = os.path.join(bdir, "luadrive")
    rp.sh([rp.COMPILERS[cc], "-std=c11", "-Wall", "-Wextra", *plain_flags, f"-I{lua_src}",
           f"-I{bdir}", os.path.join(HERE, "real", "luadrive.c"), *objs, "-o", drv, "-lm", "-ldl",
           *ldflags])
    return cpu + rp.cpu_children() - t0


# ---- one run ------------------------------------------------------------------------------------
def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("PERFGROUP_")}


def run_program(A, cmd, env, what):
    """Runs kvbench or luadrive: (process CPU s, thread CPU s of the work, checksum line)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        raise rp.Fail(f"{what} exited {rc}")
    cpu_ns = int(re.search(r"^cpu_ns=(\d+)$", out, re.M).group(1))
    crc = re.search(r"^(crc32|checksum) \S+$", out, re.M).group(0)
    return ru.ru_utime + ru.ru_stime, cpu_ns / 1e9, crc


def run_config(T, A, project, cfg, bdir, recdir, env_extra=None):
    """One run: (process CPU s, thread CPU s or None)."""
    env = dict(env_extra or {})
    if cfg.acc == "starts":
        env["PERFGROUP_LITE_R"] = "0"
    elif cfg.acc:
        env["PERFGROUP_ACCOUNTING"] = cfg.acc
    rec = recdir if cfg.rec else None
    if rec:
        os.makedirs(rec, exist_ok=True)
        for f in glob.glob(os.path.join(rec, "*")):
            os.unlink(f)
    if project == "lua" and cfg.program == "main":
        # rec: run_suite sets PERFGROUP_OUTPUT; the mode is stats when PERFGROUP_MODE is unset
        # (run_suite records only a variant it knows as instrumented: sub, files are)
        v = cfg.variant if cfg.variant in ("none", "finstr") else "default"
        results, _, cpu, _ = rp.run_suite(T, project, bdir, v, rec, extra_env=env)
        if not all(results.values()) and cfg.name != "plain":
            print(f"warning: {project}/{cfg.name}: {sum(results.values())}/{len(results)} pass")
        return cpu, None
    full = clean_env()
    full.update(env)
    if rec:
        full.update(PERFGROUP_OUTPUT=os.path.join(rec, "rec.%p.pgm"), PERFGROUP_MODE="stats",
                    PERFGROUP_BUFFER="4M")
    if project == "kv":
        cmd, what = [os.path.join(bdir, "kvbench"), str(A.kv_rounds)], "kvbench"
    else:
        cmd, what = [os.path.join(bdir, "luadrive"), str(A.lua_iterations)], "luadrive"
    cpu, tcpu, crc = run_program(A, cmd, full, what)
    if A.crc.setdefault((project, what), crc) != crc:
        raise rp.Fail(f"{what} {cfg.name}: {crc}, the first run gave {A.crc[(project, what)]}")
    return cpu, tcpu


def count_hooks(T, A, project, cfg, bdir, workdir):
    out = os.path.join(workdir, f"count.{cfg.name}")
    if os.path.exists(out):
        os.unlink(out)
    run_config(T, A, project, cfg, bdir, os.path.join(workdir, "count-rec"),
               {"LD_PRELOAD": A.count_lib[A.cur_cc], "PG_COUNT_OUT": out})
    if not os.path.exists(out):
        return None
    return sum(int(l.split()[1]) for l in open(out) if l.startswith("enter "))


def recorded(T, recdir):
    """(activations, events, {group: cpu_ms}) over every thread of the recordings in recdir."""
    files = sorted(f for f in glob.glob(os.path.join(recdir, "rec.*"))
                   if ".tmp" not in os.path.basename(f))
    groups, _ = rp.recorded_groups(T, files)
    events = 0
    for f in files:
        r = subprocess.run([T.convert, f, "--summary", "--json"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, errors="replace")
        for p in json.loads(r.stdout).get("processes", []):
            events += sum(t.get("events", 0) for t in p.get("threads", []))
    return (sum(g["activations"] for g in groups.values()), events,
            {g: v["cpu_ms"] for g, v in groups.items()})


def bench(T, A, project, cc, workdir):
    configs = [c for c in CONFIGS if project in c.projects and (c.name != "pg-all" or A.has_all[cc])
               and (not A.configs or c.name in A.configs or c.name == c.base)]
    build = build_kv if project == "kv" else build_lua
    bcpu = {}
    for v in sorted({c.variant for c in configs}):
        bcpu[v] = build(T, cc, v, os.path.join(workdir, v))
    cpu = {c.name: [] for c in configs}
    tcpu = {c.name: [] for c in configs}
    load = {c.name: [] for c in configs}
    for r in range(A.rounds):
        for c in configs[r % len(configs):] + configs[:r % len(configs)]:
            load[c.name].append(os.getloadavg()[0])
            u, t = run_config(T, A, project, c, os.path.join(workdir, c.variant),
                              os.path.join(workdir, "rec-" + c.name))
            cpu[c.name].append(u)
            if t is not None:
                tcpu[c.name].append(t)
    counted, recs, missing = {}, {}, []
    for c in configs:
        key = (c.variant, c.program)
        # one count per build, program and accounting mode (lite frames make few hook calls)
        ckey = (c.variant, c.program, c.acc)
        if c.variant not in ("none", "weak") and not c.rec and ckey not in counted:
            counted[ckey] = count_hooks(T, A, project, c, os.path.join(workdir, c.variant), workdir)
        if c.rec:
            recs[key] = recorded(T, os.path.join(workdir, "rec-" + c.name))
            lost = [g for g in EXPECT.get((project, c.name), []) if g not in recs[key][2]]
            if lost:
                missing.append(f"{project}/{cc} {c.name}: groups {lost} not in the recording "
                               f"(it has {', '.join(sorted(recs[key][2])) or 'none'})")
    med = statistics.median
    rows = []
    for c in configs:
        u, b = med(cpu[c.name]), med(cpu[c.base])
        t = med(tcpu[c.name]) if tcpu[c.name] else None
        tb = med(tcpu[c.base]) if tcpu[c.base] else None
        stats_row = c.name.replace("+rec", "-adaptive" if c.acc else "") if c.rec else None
        rows.append({"cfg": c, "build": bcpu[c.variant], "cpu": u, "cpu_x": u / b,
                     "base_s": tb if tb is not None else b, "over_base": u - b,
                     "tcpu": t, "tcpu_x": t / tb if t is not None else None,
                     "hooks": counted.get((c.variant, c.program, c.acc),
                                          counted.get((c.variant, c.program, "adaptive"))),
                     "rec": recs.get((c.variant, c.program)),
                     "load": (med(load[c.name]), min(load[c.name]), max(load[c.name])),
                     "stats_row": stats_row})
    by = {r["cfg"].name: r for r in rows}
    for r in rows:
        s = by.get(r["stats_row"]) if r["stats_row"] else None
        r["over_stats"] = r["cpu"] / s["cpu"] if s else None
    return rows, missing


# ---- report ---------------------------------------------------------------------------------------
def target_cell(r):
    c = r["cfg"]
    if not c.target:
        return "—"
    lim = TARGET[c.target] * (REC_FACTOR if c.rec else 1)
    cell = f"≤ {lim:.2f}: " + ("met" if r["cpu_x"] <= lim else "**not met**")
    if r["over_stats"] is not None:
        cell += f" ({r['over_stats']:.2f} × its stats row)"
    return cell


def fmt_m(n):
    return "—" if n is None else f"{n / 1e6:.2f} M" if n >= 10000 else str(n)


def table(rows):
    out = ["| configuration | accounting | CPU s | × base | thread CPU s | × base | target (× base) "
           "| hooks | M hooks/s | ns/hook | activations | events | load | build CPU s |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r["cfg"]
        t = f"{r['tcpu']:.2f} | {r['tcpu_x']:.2f}" if r["tcpu"] is not None else "— | —"
        if r["hooks"] and r["hooks"] >= MIN_HOOKS:
            h = (f"{fmt_m(r['hooks'])} | {r['hooks'] / r['base_s'] / 1e6:.1f} | "
                 f"{r['over_base'] / r['hooks'] * 1e9:.0f}")
        else:
            h = f"{fmt_m(r['hooks'])} | — | —"
        a = f"{fmt_m(r['rec'][0])} | {fmt_m(r['rec'][1])}" if r["rec"] else "— | —"
        ld = r["load"]
        acc = c.acc or ("default" if c.variant not in ("none", "finstr") else "—")
        out.append(f"| {c.label} | {acc} | {r['cpu']:.2f} | {r['cpu_x']:.2f} | {t} | "
                   f"{target_cell(r)} | {h} | {a} | {ld[0]:.1f} ({ld[1]:.1f}–{ld[2]:.1f}) | "
                   f"{r['build']:.1f} |")
    return out


def markdown(results, A, cmd):
    out = [SECTION, "",
           "What a whole code base in groups costs (issues 13 and 33). Projects: **kv** — the",
           "project's own fixed workload (bench/kvbench/: a key-value store driven by a text",
           "command language, hash table, B+tree, sorting, formatting; ~2,000 lines, 8 files, many",
           "small static functions; deterministic, its checksum checked equal in every build);",
           "**lua** — Lua 5.4 running the lua-lpeg and lua-cjson suites, the C modules",
           "instrumented too, in groups of their own, `lpeg` and `cjson` (tests/real/), and",
           "bench/real/luadrive.c, a host program (never instrumented) calling Lua's C API in a",
           "loop. Built -O2 -g. Groupings: one group (`default=<project>`); by subsystem (Lua:",
           "bench/real/lua-subsystems.map); one group per file (kv: bench/kvbench/kv.map, whose",
           "8 files are its 8 modules; Lua: each of the 41 .c files of Lua, lpeg and cjson",
           "built its own group);",
           "driver rows: `main` not instrumented, so every call into the library is an implicit",
           "event. Accounting: `PERFGROUP_ACCOUNTING` as the column says (`default`: unset).", "",
           "CPU = user+sys of the run's processes; thread CPU = the program's own",
           "`CLOCK_THREAD_CPUTIME_ID` around its work (kvbench, luadrive). Medians of "
           f"{A.rounds} interleaved rounds (configuration order rotated each round); × base =",
           "against `plain` of the same rounds (driver rows of Lua: against `driver: plain`).",
           "Target = issue 33's: one group ≤ 1.15 ×, by subsystem ≤ 1.3 ×, one group per file",
           "≤ 1.5 ×, a stats recording ≤ 1.10 × that. Load = the 1-minute load average read",
           "before each run: median (min–max) over that configuration's runs, on a 2-vCPU",
           "machine shared with other work. Hooks = enter hook calls (transitions into a group",
           "not on top, which the inline re-entry check lets through) in one untimed run with",
           "bench/count_hooks.c preloaded; M hooks/s = per second of the baseline's CPU; ns/hook",
           "= (CPU − baseline CPU) / hooks. Activations and events: the build's stats recording",
           "(+rec row), over every group and thread.", "",
           f"CPU: {cpu_model()}. Command: `{cmd}`", "",
           f"Run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}:", ""]
    for (project, cc), (rows, _) in results.items():
        out += [f"**{project}, {cc}**" + ("" if A.has_all[cc] else
                " (plugin without `all-functions`: `pg` hooks every function)"), ""]
        out += table(rows)
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
    ap.add_argument("--kv-rounds", type=int, default=200, help="kvbench's own rounds (work size)")
    ap.add_argument("--lua-iterations", type=int, default=50000, help="luadrive's iterations")
    ap.add_argument("--configs", default=None,
                    help="only these rows (comma-separated names; baselines always run)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 1 round, kv 20 rounds, luadrive 2,000 iterations")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every recording holds its grouping's groups")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--cache", default=None, help="Debian sources (default <build>/real-src)")
    ap.add_argument("--markdown", default=None, help="write/replace this section in the file")
    A = ap.parse_args()
    if A.quick:
        A.rounds, A.kv_rounds, A.lua_iterations = 1, 20, 2000
    A.configs = set(A.configs.split(",")) if A.configs else None
    b = os.path.abspath(A.build_dir)
    A.pgdump = os.path.join(b, "reader", "pgdump")
    A.runtime_dir = os.path.join(b, "runtime")
    A.include = os.path.join(ROOT, "include")
    A.gcc_plugin = A.gcc_plugin or os.path.join(b, "plugin-gcc", "perfgroup.so")
    A.clang_plugin = A.clang_plugin or os.path.join(b, "plugin-clang", "perfgroup-clang.so")
    A.convert = os.path.join(b, "converter", "perfgroup-convert")
    A.cache = A.cache or os.path.join(b, "real-src")
    workdir = os.path.abspath(A.workdir or os.path.join(b, "bench-real"))
    os.makedirs(workdir, exist_ok=True)
    T = rp.Tools(A)
    T.tmp = workdir
    A.has_all, A.count_lib, A.crc = {}, {}, {}
    results, missing = {}, []
    try:
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
                missing += results[(project, cc)][1]
    except rp.Fail as e:
        print(f"FAIL: {e}")
        return 1
    cmd = " ".join(["bench/real_projects.py", *sys.argv[1:]])
    text = markdown(results, A, cmd)
    print(text)
    if A.markdown:
        write_section(A.markdown, text)
    for m in missing:
        print(f"{'FAIL' if A.check else 'warning'}: {m}")
    return 1 if A.check and missing else 0


if __name__ == "__main__":
    sys.exit(main())
