#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""lua_compile_time.py — compile-time cost of a perfgroup plugin (GCC's or Clang's) on a real C
code base: the C sources of Lua 5.4 from Debian's lua5.4 source package, compiled file by file
with gcc -O2 (or clang-14 -O2 with --compiler clang).

Variants, interleaved file by file (each file is compiled by every variant back to back, in
an order that rotates) so that the shared machine's changing load hits all of them alike:
    none        gcc -O2                                         the baseline
    plugin      gcc -O2 -fplugin=perfgroup.so                   loaded, nothing annotated
    default     gcc -O2 -fplugin=... -fplugin-arg-perfgroup-default=lua   every function instrumented
    finstr      gcc -O2 -finstrument-functions                  the compiler's own entry/exit hooks
Measured: CPU time (user + system) of each compiler process tree (wait4 rusage), summed over
the files of a round; reported: the median per variant over the rounds, and ratios to `none` (and default/finstr).

    bench/compile-time/lua_compile_time.py --plugin build/plugin-gcc/perfgroup.so \
        [--rounds 7] [--workdir /tmp/perfgroup-lua] [--markdown docs/benchmarks.md]
    bench/compile-time/lua_compile_time.py --compiler clang \
        --plugin build/plugin-clang/perfgroup-clang.so [--rounds 7] [...]

Getting the sources needs deb-src: the script adds its own apt source file
(/etc/apt/sources.list.d/perfgroup-deb-src.sources) if none is configured, then runs
`apt-get source --download-only lua5.4` (root, as on the project's machines).
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import tarfile
import time

DEB_SRC = "/etc/apt/sources.list.d/perfgroup-deb-src.sources"
DEB_SRC_TEXT = """Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def fetch_lua(workdir):
    """The src/ directory of Lua from Debian's lua5.4 source package."""
    found = glob.glob(os.path.join(workdir, "lua-5.4*", "src", "lapi.c"))
    if found:
        return os.path.dirname(found[0])
    os.makedirs(workdir, exist_ok=True)
    if not glob.glob(os.path.join(workdir, "lua5.4_*.orig.tar.*")):
        if not os.path.exists(DEB_SRC):
            with open(DEB_SRC, "w") as f:
                f.write(DEB_SRC_TEXT)
            subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "source", "-qq", "--download-only", "lua5.4"], cwd=workdir, check=True)
    orig = glob.glob(os.path.join(workdir, "lua5.4_*.orig.tar.*"))[0]
    with tarfile.open(orig) as t:
        t.extractall(workdir)
    return os.path.dirname(glob.glob(os.path.join(workdir, "lua-5.4*", "src", "lapi.c"))[0])


def variants(plugin):
    return {
        "none": [],
        "plugin": ["-fplugin=" + plugin],
        "default": ["-fplugin=" + plugin, "-fplugin-arg-perfgroup-default=lua"],
        "finstr": ["-finstrument-functions"],
    }


COMPILERS = {  # --compiler: driver, section heading, the plugin's name in the table
    "gcc": ("gcc", "GCC plugin", "perfgroup.so"),
    "clang": ("clang-14", "Clang plugin", "perfgroup-clang.so"),
}
CC = "gcc"


def compile_one(c, outdir, flags):
    """Compile one file; return the compiler's CPU seconds (user + system, all its children)."""
    os.makedirs(outdir, exist_ok=True)
    obj = os.path.join(outdir, os.path.basename(c)[:-2] + ".o")
    p = subprocess.Popen([CC, "-O2", "-Wall", "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX"] + flags
                         + ["-c", c, "-o", obj])
    _, status, ru = os.wait4(p.pid, 0)
    if status:
        raise SystemExit(f"{CC} failed on {c} with {flags}")
    return ru.ru_utime + ru.ru_stime


def round_(src, workdir, vs, r):
    """One round: every file compiled once per variant, the variants back to back per file
    (rotating their order), so slow drifts of the shared machine's load hit all alike."""
    names = list(vs)
    total = dict.fromkeys(names, 0.0)
    for i, c in enumerate(sorted(glob.glob(os.path.join(src, "*.c")))):
        k = (r + i) % len(names)
        for n in names[k:] + names[:k]:
            total[n] += compile_one(c, os.path.join(workdir, "obj-" + n), vs[n])
    return total


def count_sites(outdir):
    n = 0
    for o in glob.glob(os.path.join(outdir, "*.o")):
        out = subprocess.run(["readelf", "-SW", o], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if "] perfgroup_sites " in line and "PROGBITS" in line:
                n += int(line.split("PROGBITS")[1].split()[2], 16) // 32
    return n


def main():
    global CC
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compiler", choices=sorted(COMPILERS), default="gcc")
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--workdir", default="/tmp/perfgroup-lua")
    ap.add_argument("--markdown", help="append/replace this benchmark's section in this file")
    a = ap.parse_args()
    CC, title, plugin_name = COMPILERS[a.compiler]
    plugin = os.path.abspath(a.plugin)
    src = fetch_lua(a.workdir)
    files = len(glob.glob(os.path.join(src, "*.c")))
    vs = variants(plugin)
    names = list(vs)
    times = {n: [] for n in names}
    round_(src, a.workdir, vs, 0)  # warm-up: page cache, and proof that every variant builds
    sites = count_sites(os.path.join(a.workdir, "obj-default"))
    for r in range(a.rounds):
        t = round_(src, a.workdir, vs, r)
        for n in names:
            times[n].append(t[n])
        print(f"round {r + 1}/{a.rounds}: " + "  ".join(f"{n}={times[n][-1]:.2f}s" for n in names), flush=True)
    med = {n: statistics.median(times[n]) for n in names}
    base = med["none"]
    rows = [(n, med[n], med[n] / base) for n in names]
    cmd = (f"bench/compile-time/lua_compile_time.py --compiler {a.compiler} "
           f"--plugin {os.path.relpath(a.plugin)} --rounds {a.rounds}")
    version = subprocess.run([CC, "-dumpversion"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"## {title}: compile time (Lua 5.4)",
        "",
        f"Lua {os.path.basename(os.path.dirname(src))} from Debian's `lua5.4` source package: {files} C files, "
        f"each compiled with `{CC} -O2` ({CC} {version}). "
        f"CPU time (user+sys) of the compilers, median of {a.rounds} rounds interleaved file by file, "
        f"measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on the shared 2-core VM. "
        f"With `default=` the plugin emitted {sites} sites (every Lua function).",
        "",
        "| variant | flags | median CPU s | vs none |",
        "| --- | --- | ---: | ---: |",
    ]
    for n, m, ratio in rows:
        flags = " ".join(f.replace(plugin, plugin_name) for f in vs[n]) or "(none)"
        lines.append(f"| {n} | `{flags}` | {m:.2f} | {ratio:.3f} |")
    lines += [
        "",
        f"- plugin loaded, nothing annotated: {100 * (med['plugin'] / base - 1):+.1f} % (target ≤ +3 %)",
        f"- `default=` on every file vs `-finstrument-functions`: "
        f"{100 * (med['default'] / med['finstr'] - 1):+.1f} % (target ≤ +5 %)",
        "",
        f"Command: `{cmd}`",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if a.markdown:
        old = open(a.markdown).read() if os.path.exists(a.markdown) else "# Benchmarks\n\n"
        head = lines[0]
        if head in old:  # replace our section, keep everyone else's
            start = old.index(head)
            nxt = old.find("\n## ", start + len(head))
            old = old[:start] + (old[nxt + 1:] if nxt >= 0 else "")
        with open(a.markdown, "w") as f:
            f.write(old.rstrip("\n") + "\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
