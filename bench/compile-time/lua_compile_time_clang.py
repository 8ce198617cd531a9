#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""lua_compile_time_clang.py — the Clang plugin's compile-time cost on Lua 5.4, measured as
lua_compile_time.py measures the GCC plugin's (same sources, same interleaving, same median of
compiler CPU time), with clang-14 -O2:
    none        clang -O2                                        the baseline
    plugin      clang -O2 -fplugin=perfgroup-clang.so            loaded, nothing annotated
    default     ... -fplugin-arg-perfgroup-default=lua           every function instrumented
    finstr      clang -O2 -finstrument-functions                 clang's own entry/exit hooks

    bench/compile-time/lua_compile_time_clang.py --plugin build/plugin-clang/perfgroup-clang.so \
        [--rounds 7] [--workdir /tmp/perfgroup-lua-clang] [--markdown docs/benchmarks.md]
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lua_compile_time as gccbench  # noqa: E402  (the Lua sources, the site count)

CLANG = "clang-14"


def compile_one(c, outdir, flags):
    """lua_compile_time.compile_one with clang: the compiler's CPU seconds for one file."""
    os.makedirs(outdir, exist_ok=True)
    obj = os.path.join(outdir, os.path.basename(c)[:-2] + ".o")
    p = subprocess.Popen([CLANG, "-O2", "-Wall", "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX"] + flags
                         + ["-c", c, "-o", obj])
    _, status, ru = os.wait4(p.pid, 0)
    if status:
        raise SystemExit(f"{CLANG} failed on {c} with {flags}")
    return ru.ru_utime + ru.ru_stime


def one_round(src, workdir, vs, r):
    """Every file compiled once per variant, back to back, the variants' order rotating from
    file to file, so that drifts of the shared machine's load hit all variants alike."""
    names = list(vs)
    total = dict.fromkeys(names, 0.0)
    for i, c in enumerate(sorted(glob.glob(os.path.join(src, "*.c")))):
        k = (r + i) % len(names)
        for n in names[k:] + names[:k]:
            total[n] += compile_one(c, os.path.join(workdir, "obj-" + n), vs[n])
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--workdir", default="/tmp/perfgroup-lua-clang")
    ap.add_argument("--markdown", help="append/replace this benchmark's section in this file")
    a = ap.parse_args()
    plugin = os.path.abspath(a.plugin)
    src = gccbench.fetch_lua(a.workdir)
    files = len(glob.glob(os.path.join(src, "*.c")))
    vs = gccbench.variants(plugin)
    times = {n: [] for n in vs}
    one_round(src, a.workdir, vs, 0)  # warm-up, and proof that every variant builds
    sites = gccbench.count_sites(os.path.join(a.workdir, "obj-default"))
    for r in range(a.rounds):
        t = one_round(src, a.workdir, vs, r)
        for n in vs:
            times[n].append(t[n])
        print(f"round {r + 1}/{a.rounds}: " + "  ".join(f"{n}={times[n][-1]:.2f}s" for n in vs), flush=True)
    med = {n: statistics.median(times[n]) for n in vs}
    version = subprocess.run([CLANG, "-dumpversion"], capture_output=True, text=True).stdout.strip()
    lines = [
        "## Clang plugin: compile time (Lua 5.4)",
        "",
        f"The same {files} Lua C files as the GCC section, each compiled with `clang -O2` (clang "
        f"{version}); CPU time (user+sys) of the compilers, median of {a.rounds} rounds "
        f"interleaved file by file, measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} "
        f"on the shared 2-core VM. With `default=` the plugin emitted {sites} sites.",
        "",
        "| variant | flags | median CPU s | vs none |",
        "| --- | --- | ---: | ---: |",
    ]
    for n in vs:
        flags = " ".join(f.replace(plugin, "perfgroup-clang.so") for f in vs[n]) or "(none)"
        lines.append(f"| {n} | `{flags}` | {med[n]:.2f} | {med[n] / med['none']:.3f} |")
    lines += [
        "",
        f"- plugin loaded, nothing annotated: {100 * (med['plugin'] / med['none'] - 1):+.1f} % (target ≤ +3 %)",
        f"- `default=` on every file vs `-finstrument-functions`: "
        f"{100 * (med['default'] / med['finstr'] - 1):+.1f} % (target ≤ +5 %)",
        "",
        f"Command: `bench/compile-time/lua_compile_time_clang.py --plugin {os.path.relpath(a.plugin)} "
        f"--rounds {a.rounds} --markdown docs/benchmarks.md`",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if a.markdown:
        _replace_section(a.markdown, text)
    return 0


def _replace_section(path, text):
    """Replace this section (by its heading) in path, keeping everyone else's."""
    old = open(path).read() if os.path.exists(path) else "# Benchmarks\n\n"
    head = text.split("\n", 1)[0]
    if head in old:
        start = old.index(head)
        nxt = old.find("\n## ", start + len(head))
        old = old[:start] + (old[nxt + 1:] if nxt >= 0 else "")
    with open(path, "w") as f:
        f.write(old.rstrip("\n") + "\n\n" + text)


if __name__ == "__main__":
    sys.exit(main())
