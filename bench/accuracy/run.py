#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/accuracy/run.py — the accuracy figures: tests/accuracy's programs (built with the
GCC and Clang plugins at -O2) run with the tight targets: with no extra load (±2 points),
with the other core loaded by a spinning process (--load, ±5 points) and with every core
contended by a spinning process each (--contend, ±2 points); each group's CPU time within
±2 % of its truth in every mode (--cpu-bound). R runs each; prints every run's summary and a
markdown table of the worst error over the runs.

Usage: run.py BUILD_DIR [--runs R] [--markdown FILE] [--full DIR]
"""
import argparse
import datetime
import os
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--markdown")
    ap.add_argument("--full", help="keep each run's full tables in this directory")
    a = ap.parse_args()
    rows, fails = [], 0
    start = datetime.datetime.now(datetime.timezone.utc)
    load0 = os.getloadavg()[0]
    for cc in ("gcc", "clang"):
        exe = os.path.join(a.build, "tests", "accuracy", f"accuracy-{cc}")
        if not os.access(exe, os.X_OK):
            print(f"run.py: {exe} not built: skipped", file=sys.stderr)
            continue
        for load, bound in (("idle", 2.0), ("spinning", 5.0), ("contended", 2.0)):
            runs = []
            for r in range(a.runs):
                cmd = [exe, "--bound", str(bound), "--cpu-bound", "2"] + (
                    {"idle": [], "spinning": ["--load"], "contended": ["--contend"]}[load])
                p = subprocess.run(cmd, capture_output=True, text=True)
                m = re.search(r"^summary: (.*)$", p.stdout, re.M)
                if not m:
                    raise SystemExit(f"run.py: {' '.join(cmd)}: no summary ({p.returncode}): {p.stderr[-300:]}")
                s = {k: float(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
                runs.append(s)
                fails += p.returncode != 0
                tag = f"{cc}-{load}-{r + 1}"
                print(f"{tag}: {m.group(1)}" + ("" if p.returncode == 0 else "  <- " + "; ".join(
                    l[6:] for l in p.stdout.splitlines() if l.startswith("FAIL: ") and "check(s)" not in l)))
                if a.full:
                    os.makedirs(a.full, exist_ok=True)
                    with open(os.path.join(a.full, tag + ".md"), "w") as f:
                        f.write(p.stdout)
            worst = lambda k: max((s[k] for s in runs), key=abs)
            rows.append((cc, load, bound, worst("cpuA"), worst("cpuB"), worst("cpuC"), worst("mixed_ms"),
                         sorted(s["reads_s"] for s in runs)[len(runs) // 2],
                         worst("A"), worst("B"), worst("C"),
                         max((abs(s[k] - s["d" + k]) for s in runs for k in "ABC")), worst("top"),
                         worst("nested_pct"), worst("nested_us"), worst("blocked"),
                         sum(int(s["jank_exact"]) for s in runs), len(runs),
                         int(sum(s["discarded"] for s in runs)), sum(int(s["failures"]) == 0 for s in runs)))
    out = [f"Run of {start:%Y-%m-%d %H:%M} UTC, load average {load0:.2f} at start; {a.runs} runs per row, "
           "worst error over the runs (signed).", "",
           "| compiler | other cores | target | CPU error A / B / C (% of truth) | sleeping group charged over its CPU (ms/event) | hook CPU-clock reads/s (median) | share error A / B / C (points) | measured − the estimate's rule applied to true clocks (max, points: what the wall-share estimate would be off by) | top − thread CPU (%) | "
           "nested loop charged to A (% of it; µs/event) | blocked error (% of wall) | jank exact | "
           "discarded | runs within target |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (cc, load, bound, ca, cb, cc_, mx, rd, ea, eb, ec, dmax, top, npct, nus, blk, jex, nr, disc, ok) in rows:
        out.append(f"| {cc} | {load} | ±{bound:g} | {ca:+.2f} / {cb:+.2f} / {cc_:+.2f} | {mx:+.3f} | {rd:.0f} | "
                   f"{ea:+.2f} / {eb:+.2f} / {ec:+.2f} | {dmax:.2f} | "
                   f"{top:+.2f} | {npct:+.2f} %; {nus:+.1f} µs | {blk:+.2f} | {jex}/{nr} | {disc} | {ok}/{nr} |")
    text = "\n".join(out) + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
