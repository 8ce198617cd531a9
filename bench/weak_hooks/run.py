#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/weak_hooks/run.py — the guard of -fplugin-arg-perfgroup-weak-hooks against strong
hooks, same run (docs/benchmarks.md): builds w.c (one group transition per call of f: a
stopwatch pair) plain, with each plugin with and without weak-hooks (runtime linked
--no-as-needed), and the weak build linked without the runtime; runs them interleaved
(order rotated each round), thread-CPU ns per call, medians, the 1-minute load average read
before every run.

    bench/weak_hooks/run.py --build-dir build [--rounds 9] [--calls 20000000]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--calls", type=int, default=20000000)
    ap.add_argument("--workdir", default=None)
    A = ap.parse_args()
    b = os.path.abspath(A.build_dir)
    wd = A.workdir or os.path.join(b, "bench-weak")
    os.makedirs(wd, exist_ok=True)
    rt = os.path.join(b, "runtime")
    plugins = {"gcc": ("gcc-12", [f"-fplugin={b}/plugin-gcc/perfgroup.so"]),
               "clang": ("clang-14", [f"-fplugin={b}/plugin-clang/perfgroup-clang.so"])}
    live = ["-Wl,--push-state,--no-as-needed", f"-L{rt}", "-lperfgroup", "-Wl,--pop-state",
            f"-Wl,-rpath,{rt}"]
    src = os.path.join(HERE, "w.c")
    builds = {"plain": ["gcc-12", "-O2", f"-I{ROOT}/include", "-DPERF_GROUP(x)=", src]}
    for fam, (cc, pl) in plugins.items():
        base = [cc, "-O2", f"-I{ROOT}/include", *pl, src]
        builds[f"{fam} strong"] = base + live
        builds[f"{fam} weak-hooks"] = base + ["-fplugin-arg-perfgroup-weak-hooks"] + live
        builds[f"{fam} weak-hooks, no runtime"] = base + ["-fplugin-arg-perfgroup-weak-hooks"]
    exes = {}
    for name, cmd in builds.items():
        exe = os.path.join(wd, name.replace(" ", "_").replace(",", ""))
        subprocess.run(cmd + ["-o", exe], check=True)
        exes[name] = exe
    names = list(exes)
    ns = {n: [] for n in names}
    load = {n: [] for n in names}
    for r in range(A.rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            load[n].append(os.getloadavg()[0])
            out = subprocess.run([exes[n], str(A.calls)], capture_output=True, text=True,
                                 check=True, env={k: v for k, v in os.environ.items()
                                                  if not k.startswith("PERFGROUP_")}).stdout
            ns[n].append(float(out.split()[0]))
    med = statistics.median
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                  if l.startswith("model name")), "unknown CPU")
    print(f"CPU: {model}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"{A.rounds} rounds of {A.calls} calls\n")
    print("| build | ns/call (median) | range | × strong (same compiler) | load |")
    print("| --- | --- | --- | --- | --- |")
    for n in names:
        fam = n.split()[0]
        ref = med(ns[f"{fam} strong"]) if fam in plugins else None
        x = f"{med(ns[n]) / ref:.3f}" if ref and "no runtime" not in n else "—"
        print(f"| {n} | {med(ns[n]):.2f} | {min(ns[n]):.2f}–{max(ns[n]):.2f} | {x} | "
              f"{med(load[n]):.1f} ({min(load[n]):.1f}–{max(load[n]):.1f}) |")
    for fam in plugins:
        d = [w - s for w, s in zip(ns[f"{fam} weak-hooks"], ns[f"{fam} strong"])]
        print(f"\n{fam}: weak − strong per round (ns/call): median {med(d):+.2f}, "
              f"range {min(d):+.2f}…{max(d):+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
