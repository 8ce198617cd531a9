#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/threads/run.py — thousands of threads (issue 34): bench/threads/threads.c built
plain (no perfgroup at all) and by the GCC plugin against the build's runtime, then run in
interleaved rounds:

    threads N      N threads (64 KiB stacks) started together, 10 events each calling one
                   grouped function, joined together: peak RSS (ru_maxrss) and wall time,
                   plain / instrumented without recording / instrumented recording (stats,
                   the default 256 MiB buffer)
    held N         (--mode held) the same, but each thread waits after its first event
                   until all N have run theirs: all N inside the recording at once, each
                   holding its chunk (the recorder's worst case)
    spawn 3000     threads created and joined one after another: ns per thread

Medians per configuration; per-thread figures are (instrumented - plain) / N. The 1-minute
load average and the CPU model are printed beside the figures.

    bench/threads/run.py --build-dir build [--threads 1000,10000] [--rounds 5] [--mode held]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "?"


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def build(build_dir, out):
    src = os.path.join(HERE, "threads.c")
    inc = os.path.join(ROOT, "include")
    rt = os.path.join(build_dir, "runtime")
    plugin = os.path.join(build_dir, "plugin-gcc", "perfgroup.so")
    plain = os.path.join(out, "threads-plain")
    inst = os.path.join(out, "threads-pg")
    subprocess.run(["gcc", "-O2", "-DPLAIN", "-I" + inc, src, "-o", plain, "-lpthread"], check=True)
    subprocess.run(["gcc", "-O2", "-I" + inc, "-fplugin=" + plugin, src, "-o", inst, "-L" + rt,
                    "-lperfgroup", "-lpthread", "-Wl,-rpath," + rt], check=True)
    return plain, inst


def run(exe, args, rec=None):
    env = dict(os.environ)
    env.pop("PERFGROUP_OUTPUT", None)
    if rec:
        env.update(PERFGROUP_OUTPUT=rec, PERFGROUP_MODE="stats")
    r = subprocess.run([exe] + args, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"{exe} {args}: exit {r.returncode}: {r.stderr[:300]}")
    w = r.stdout.split()
    if rec and os.path.exists(rec):
        os.unlink(rec)
    res = {w[i]: int(w[i + 1]) for i in range(2, len(w) - 1, 2)}
    m = re.search(r"(\d+) threads found no room", r.stderr)
    res["noroom"] = int(m.group(1)) if m else 0  # threads whose events missed the file
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", default="1000,10000")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--mode", choices=["threads", "held"], default="threads")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pg-threads-") as d:
        plain, inst = build(os.path.abspath(a.build_dir), d)
        rec = os.path.join(d, "rec.pgm")
        print(f"model name: {model()}; load before: {load():.2f}; mode {a.mode}")
        print("| threads | config | peak RSS MB | per thread over plain | wall ms | wall / plain | "
              "threads without room (max) | load |")
        print("|---|---|---|---|---|---|---|---|")
        for n in [int(x) for x in a.threads.split(",")]:
            res = {"plain": [], "pg": [], "pg+rec": []}
            loads = []
            for r in range(a.rounds):
                order = list(res)[r % 3:] + list(res)[:r % 3]
                for c in order:
                    loads.append(load())
                    res[c].append(run(plain if c == "plain" else inst, [a.mode, str(n)],
                                      rec if c == "pg+rec" else None))
            med = {c: (statistics.median(x["maxrss_kb"] for x in v),
                       statistics.median(x["wall_ns"] for x in v),
                       max(x["noroom"] for x in v)) for c, v in res.items()}
            for c, (rss, wall, noroom) in med.items():
                over = "" if c == "plain" else f"{(rss - med['plain'][0]) / n:.1f} KiB"
                print(f"| {n} | {c} | {rss / 1024:.1f} | {over} | {wall / 1e6:.0f} | "
                      f"{wall / med['plain'][1]:.2f} | {noroom if c == 'pg+rec' else ''} | "
                      f"{statistics.median(loads):.1f} |")
        sp = {"plain": [], "pg": []}
        for r in range(a.rounds):
            for c in (list(sp) if r % 2 == 0 else list(sp)[::-1]):
                sp[c].append(run(plain if c == "plain" else inst, ["spawn", "3000"])["ns_per_thread"])
        p, g = statistics.median(sp["plain"]), statistics.median(sp["pg"])
        print(f"\nthread create+join, one after another (spawn 3000): plain {p / 1000:.1f} us, "
              f"instrumented {g / 1000:.1f} us per thread (+{(g - p) / 1000:.1f} us); load {load():.2f}")


if __name__ == "__main__":
    main()
