#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/threads/convert.py — the converter and `perfgroup top` on recordings of many threads
(issue 34): wall time and maximum RSS (/usr/bin/time) of Gecko, Chrome, --summary,
--summary --json and `perfgroup top -n 1` on each FILE, in rotating order, medians of ROUNDS.
With --old, a second converter's Gecko conversion runs interleaved with the first's (a
baseline from the same run). The CPU model and the load averages are printed beside.

    threads_prog-gcc held 10000 10       # with PERFGROUP_OUTPUT=FILE (tests/recording)
    bench/threads/convert.py --build-dir build [--old OLD-CONVERTER] [--rounds 5] FILE...
"""
import argparse
import os
import statistics
import subprocess
import tempfile

from run import load, model


def timed(cmd):
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, capture_output=True, text=True,
                       timeout=1200)
    if r.returncode != 0:
        raise SystemExit(f"{cmd}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    wall, rss = r.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--old", help="a second converter, timed on Gecko beside the first")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    conv = os.path.join(a.build_dir, "converter", "perfgroup-convert")
    top = os.path.join(a.build_dir, "live", "perfgroup")
    with tempfile.TemporaryDirectory(prefix="pg-convert-") as d:
        out = os.path.join(d, "out.json")
        cfg = {}
        for f in a.files:
            n = os.path.basename(f)
            if a.old:
                cfg[f"{n} gecko, --old"] = [a.old, f, "-o", out, "--no-progress"]
            cfg[f"{n} gecko"] = [conv, f, "-o", out, "--no-progress"]
            cfg[f"{n} chrome"] = [conv, f, "--format", "chrome", "-o", out, "--no-progress"]
            cfg[f"{n} --summary"] = [conv, f, "--summary", "--no-progress"]
            cfg[f"{n} --summary --json"] = [conv, f, "--summary", "--json", "--no-progress"]
            cfg[f"{n} top -n 1"] = [top, "top", "-n", "1", f]
        res = {k: [] for k in cfg}
        loads = []
        keys = list(cfg)
        for r in range(a.rounds):
            for k in keys[r % len(keys):] + keys[:r % len(keys)]:
                loads.append(load())
                res[k].append(timed(cfg[k]))
    print(f"model name: {model()}; load (1-min average at each run) median "
          f"{statistics.median(loads):.2f}, {min(loads):.2f}-{max(loads):.2f}")
    print("| run | wall (median) | max RSS (median) |\n|---|---|---|")
    for k, v in res.items():
        print(f"| {k} | {statistics.median(x[0] for x in v):.2f} s | "
              f"{statistics.median(x[1] for x in v) / 1024:.1f} MB |")


if __name__ == "__main__":
    main()
