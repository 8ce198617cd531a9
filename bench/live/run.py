#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/live/run.py — what watching a recording costs the recording program (issue 16).

    python3 bench/live/run.py BUILD_DIR [--rounds N]

The same program and work run recorded, in three conditions, interleaved round by round:
alone; watched by `perfgroup top -d 1` (reading the file every second); exported by
`perfgroup metrics --textfile --every 1` (the same reads, plus the exposition written).
Programs: the demo event loop (tests/live/live_eventloop 300: ~2 s, stats mode, what a
production program records) and a fixed amount of churn (tests/live/live_churn 0 100000:
100 M calls, ~3 s, in stats and in trace mode, 16 MiB buffer: the writer at its busiest, its
chunks recycled under the reader). Figure: the CPU time (user + system, from wait4) of the
recording process only, median over the rounds, as a ratio to alone in the same run; the
watcher's own CPU beside it. The load average is printed with every table: on the shared
2-core VM, the watcher competes for the same two CPUs, so rerun before trusting a figure.
Build first: cmake --build BUILD_DIR --target perfgroup-tool live_churn-build live_eventloop-build
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def cpu_of(argv, env):
    """Runs argv; its CPU seconds (user + system)."""
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise RuntimeError("%s: exit %d" % (argv, p.returncode))
    return ru.ru_utime + ru.ru_stime


def one(tool, prog, mode, cond, work):
    d = tempfile.mkdtemp(prefix="pg-bench-live-")
    env = dict(os.environ, PERFGROUP_OUTPUT=os.path.join(d, "app.pgm"), PERFGROUP_MODE=mode,
               PERFGROUP_BUFFER="16M")
    watcher = None
    if cond == "top":
        watcher = subprocess.Popen([tool, "top", "-d", "1", d], stdout=subprocess.DEVNULL)
    elif cond == "metrics":
        watcher = subprocess.Popen([tool, "metrics", "--textfile", os.path.join(d, "m.prom"),
                                    "--every", "1", d])
    try:
        time.sleep(0.2 if watcher else 0)
        cpu = cpu_of(prog, env)
        wcpu = 0.0
        if watcher:
            watcher.terminate()
            _, _, ru = os.wait4(watcher.pid, 0)
            watcher.returncode = 0
            wcpu = ru.ru_utime + ru.ru_stime
        return cpu, wcpu
    finally:
        if watcher and watcher.poll() is None:
            watcher.kill()
            watcher.wait()
        shutil.rmtree(d, ignore_errors=True)


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 1
    build = argv[1]
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 7
    tool = os.path.join(build, "live", "perfgroup")
    live = os.path.join(build, "tests", "live")
    programs = [
        ("demo loop, stats", [os.path.join(live, "live_eventloop"), "300"], "stats"),
        ("churn, stats", [os.path.join(live, "live_churn"), "0", "100000"], "stats"),
        ("churn, trace", [os.path.join(live, "live_churn"), "0", "100000"], "trace"),
    ]
    conds = ["alone", "top", "metrics"]
    print("load average before: " + open("/proc/loadavg").read().strip())
    res = {(p[0], c): [] for p in programs for c in conds}
    wres = {(p[0], c): [] for p in programs for c in conds}
    for r in range(rounds):
        for name, prog, mode in programs:
            order = conds if r % 2 == 0 else list(reversed(conds))
            for c in order:
                cpu, wcpu = one(tool, prog, mode, c, None)
                res[(name, c)].append(cpu)
                wres[(name, c)].append(wcpu)
        print("round %d/%d done, load %s" % (r + 1, rounds,
                                             open("/proc/loadavg").read().split()[0]), flush=True)
    load = open("/proc/loadavg").read().strip()
    print()
    print("| program | alone CPU s | watched by top | exported by metrics | top's own CPU s | "
          "metrics' own CPU s |")
    print("|---|---|---|---|---|---|")
    for name, _, _ in programs:
        a = statistics.median(res[(name, "alone")])
        t = statistics.median(res[(name, "top")])
        m = statistics.median(res[(name, "metrics")])
        print("| %s | %.3f | %.3f (%+.1f %%) | %.3f (%+.1f %%) | %.3f | %.3f |" % (
            name, a, t, 100 * (t / a - 1), m, 100 * (m / a - 1),
            statistics.median(wres[(name, "top")]), statistics.median(wres[(name, "metrics")])))
    print()
    print("medians of %d interleaved rounds; load average after: %s" % (rounds, load))
    print("command: python3 bench/live/run.py %s --rounds %d" % (build, rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
