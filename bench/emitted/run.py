#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/emitted/run.py — what the code the plugins emit costs per call (calls.c), same run
(docs/benchmarks.md, "The code the plugins emit"): builds calls.c plain and with each plugin
at -O2 (and with any other plugin builds given by --also, e.g. an older tree's, to compare
two versions of the emitted sequence in one run), runs every build interleaved (order
rotated each round), thread-CPU ns per iteration (each run's best of 9 loops), medians of
the rounds, the 1-minute load average read before every run.

    bench/emitted/run.py --build-dir build [--rounds 9] [--iterations 10000000]
                         [--also NAME=gcc:/path/perfgroup.so] [--also NAME=clang:/path/perfgroup-clang.so]

Per loop and build: ns per iteration, and ns over plain per call (reentry: 2 calls of
re-entries per iteration; lite: 2 lite transitions per iteration, each with its exit).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COMPILER = {"gcc": "gcc-12", "clang": "clang-14"}


def plugin_flags(fam, so):
    if fam == "gcc":
        return [f"-fplugin={so}"]
    return [f"-fplugin={so}", f"-fpass-plugin={so}"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--iterations", type=int, default=10000000)
    ap.add_argument("--also", action="append", default=[],
                    help="NAME=gcc|clang:PLUGIN another plugin build to compare")
    ap.add_argument("--workdir", default=None)
    A = ap.parse_args()
    b = os.path.abspath(A.build_dir)
    wd = A.workdir or os.path.join(b, "bench-emitted")
    os.makedirs(wd, exist_ok=True)
    rt = os.path.join(b, "runtime")
    link = [f"-L{rt}", "-lperfgroup", f"-Wl,-rpath,{rt}"]
    src = os.path.join(HERE, "calls.c")
    builds = {}
    for fam in ("gcc", "clang"):
        builds[f"{fam} plain"] = (fam, [COMPILER[fam], "-O2", f"-I{ROOT}/include",
                                        "-DPERF_GROUP(x)=", src] + link)
    plugins = {"gcc": f"{b}/plugin-gcc/perfgroup.so", "clang": f"{b}/plugin-clang/perfgroup-clang.so"}
    for fam, so in plugins.items():
        builds[fam] = (fam, [COMPILER[fam], "-O2", f"-I{ROOT}/include", *plugin_flags(fam, so),
                             src] + link)
    for a in A.also:
        name, spec = a.split("=", 1)
        fam, so = spec.split(":", 1)
        builds[name] = (fam, [COMPILER[fam], "-O2", f"-I{ROOT}/include", *plugin_flags(fam, so),
                              src] + link)
    exes = {}
    for name, (fam, cmd) in builds.items():
        exe = os.path.join(wd, name.replace(" ", "_"))
        subprocess.run(cmd + ["-o", exe], check=True)
        exes[name] = exe
    names = list(exes)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFGROUP_")}
    res = {(n, w): [] for n in names for w in ("reentry", "lite")}
    load = []
    for r in range(A.rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            for w in ("reentry", "lite"):
                load.append(os.getloadavg()[0])
                out = subprocess.run([exes[n], w, str(A.iterations)], capture_output=True,
                                     text=True, check=True, env=env).stdout
                res[(n, w)].append(float(out.split()[0]))
    med = statistics.median
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                  if l.startswith("model name")), "unknown CPU")
    print(f"CPU: {model}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {A.rounds} "
          f"rounds of {A.iterations} iterations; load {med(load):.1f} ({min(load):.1f}–{max(load):.1f})\n")
    print("| build | reentry ns/iteration | over plain, ns per re-entry call | lite ns/iteration "
          "| over plain, ns per lite transition |")
    print("| --- | --- | --- | --- | --- |")
    for n in names:
        fam = builds[n][0]
        cells = []
        for w in ("reentry", "lite"):
            v = res[(n, w)]
            cells.append(f"{med(v):.2f} ({min(v):.2f}–{max(v):.2f})")
            if n.endswith("plain"):
                cells.append("—")
            else:
                d = [x - p for x, p in zip(v, res[(f"{fam} plain", w)])]
                cells.append(f"{med(d) / 2:+.2f}")
        print(f"| {n} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
