#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/tasks/tasks_test.py PROG CONVERT PERFGROUP WORKDIR — issue 27's acceptance.

Runs tasks_prog (which checks the snapshot itself: add-on A's 150 ms and B's 50 ms of tasks
on a 2-thread pool, against the workers' thread CPU clocks around each task) while recording,
then checks the same figures in the recording: `perfgroup-convert --summary --json` (the two
pool-worker threads' groups: cpu_ms + task_cpu_ms) and `perfgroup metrics FILE` (the
pool-worker series of perfgroup_group_cpu_seconds_total +
perfgroup_group_task_cpu_seconds_total; main's own queueing is on its own thread), each within
the bound the program computed from tests/bounds/bounds.h (docs/accounting.md, "Error
bounds") and within 3 % (the issue's acceptance; above the truth by the time stolen in the
tasks too, which the program measured: a stopwatch counts it, the workers' CPU clocks do not).
The summary's own rounding (µs) and the metrics' (ns) are below the bound's hook terms.
"""
import json
import os
import re
import subprocess
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def within(what, got_ns, want_ns, bound_ns, stolen_ns):
    rel = (got_ns - want_ns) / want_ns if want_ns else 0.0
    print("%-40s %14.0f ns, truth %12d ns (%+.3f %%), bound %d ns, %d ns stolen"
          % (what, got_ns, want_ns, 100 * rel, bound_ns, stolen_ns))
    if abs(got_ns - want_ns) > bound_ns:
        fail("%s: %.0f vs truth %d, off by more than the bound %d" % (what, got_ns, want_ns,
                                                                      bound_ns))
    # tasks_prog.c's within(): 3 %, above the truth by the time stolen in the tasks too
    if got_ns - want_ns > 0.03 * want_ns + stolen_ns or rel < -0.03:
        fail("%s: %+.3f %% from the truth, over 3 %% (+ %d ns stolen)" % (what, 100 * rel,
                                                                         stolen_ns))


def main():
    prog, convert, tool, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    pgm = os.path.join(work, "tasks.pgm")
    figures = os.path.join(work, "figures.json")
    for p in (pgm, figures):
        if os.path.exists(p):
            os.unlink(p)
    env = dict(os.environ, PERFGROUP_OUTPUT=pgm)
    r = subprocess.run([prog, figures], env=env, capture_output=True, text=True, timeout=150)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        fail("%s exited %d" % (prog, r.returncode))
    fig = json.load(open(figures))
    a, b = fig["addon_a"], fig["addon_b"]

    # --summary --json: the workers' groups (whole-run totals; main's own queueing apart)
    r = subprocess.run([convert, pgm, "--summary", "--json"], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        fail("perfgroup-convert: %s" % r.stderr)
    summ = json.loads(r.stdout)
    workers = [t for t in summ["processes"][0]["threads"] if t["name"] == "pool-worker"]
    if len(workers) != 2:
        fail("summary: %d pool-worker threads" % len(workers))
    groups = {}
    for t in workers:
        for g in t["groups"]:
            d = groups.setdefault(g["group"], {"cpu_ms": 0, "task_cpu_ms": 0, "tasks": 0})
            for k in d:
                d[k] += g.get(k, 0)
    ga, gb = groups.get("addon_a"), groups.get("addon_b")
    if not ga or not gb:
        fail("summary: addon_a or addon_b missing on the workers: %s" % sorted(groups))
    if ga.get("tasks") != a["tasks"] or gb.get("tasks") != b["tasks"]:
        fail("summary: tasks A %s of %d, B %s of %d" % (ga.get("tasks"), a["tasks"],
                                                       gb.get("tasks"), b["tasks"]))
    within("summary addon_a cpu_ms + task_cpu_ms", (ga["cpu_ms"] + ga["task_cpu_ms"]) * 1e6,
           a["total_ns"], a["bound_ns"], a["stolen_ns"])
    within("summary addon_b task_cpu_ms", gb["task_cpu_ms"] * 1e6, b["task_ns"], b["bound_ns"],
           b["stolen_ns"])
    if groups.get("pool", {}).get("tasks"):
        fail("summary: the pool charged on its own behalf")
    r = subprocess.run([convert, pgm, "--summary"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or "on behalf ms" not in r.stdout:
        fail("text summary without the on-behalf column:\n" + r.stdout)

    # perfgroup metrics FILE (printed once)
    r = subprocess.run([tool, "metrics", pgm], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("perfgroup metrics: %s" % r.stderr)
    sums = {}
    for line in r.stdout.splitlines():
        m = re.match(r'(perfgroup_group_(?:task_)?cpu_seconds_total|perfgroup_group_tasks_total)'
                     r'\{.*thread="pool-worker".*group="([^"]*)"[^}]*\} (\S+)$', line)
        if m:
            k = (m.group(1), m.group(2))
            sums[k] = sums.get(k, 0.0) + float(m.group(3))
    cpu = lambda g: sums.get(("perfgroup_group_cpu_seconds_total", g), 0.0)
    task = lambda g: sums.get(("perfgroup_group_task_cpu_seconds_total", g), 0.0)
    if (sums.get(("perfgroup_group_tasks_total", "addon_a")) != a["tasks"] or
            sums.get(("perfgroup_group_tasks_total", "addon_b")) != b["tasks"]):
        fail("metrics: tasks %s" % {k: v for k, v in sums.items() if "tasks" in k[0]})
    within("metrics addon_a cpu + task cpu", (cpu("addon_a") + task("addon_a")) * 1e9,
           a["total_ns"], a["bound_ns"], a["stolen_ns"])
    within("metrics addon_b task cpu", task("addon_b") * 1e9, b["task_ns"], b["bound_ns"],
           b["stolen_ns"])

    # Gecko: each task a marker on the worker naming the groups it was charged to
    gk = os.path.join(work, "tasks.gecko.json")
    r = subprocess.run([convert, pgm, "-o", gk], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("perfgroup-convert (gecko): %s" % r.stderr)
    prof = json.load(open(gk))
    threads = [t for p in [prof] + prof.get("processes", []) for t in p.get("threads", [])]
    gworkers = [json.dumps(t) for t in threads if t.get("name") == "pool-worker"]
    if len(gworkers) != 2:
        fail("gecko: %d pool-worker threads" % len(gworkers))
    for who in ("addon_a", "addon_b"):
        n = sum(w.count("job for %s; queued on thread" % who) for w in gworkers)
        if n < fig[who]["tasks"]:
            fail("gecko: %d task markers on the workers name %s, %d tasks" % (n, who,
                                                                         fig[who]["tasks"]))

    # Chrome: a flow event pair per task, from the thread that captured it (main)
    ch = os.path.join(work, "tasks.chrome.json")
    r = subprocess.run([convert, pgm, "--format", "chrome", "-o", ch], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        fail("perfgroup-convert (chrome): %s" % r.stderr)
    ev = json.load(open(ch))["traceEvents"]
    starts = {e["id"]: e for e in ev if e.get("ph") == "s" and e.get("cat") == "task"}
    ends = {e["id"]: e for e in ev if e.get("ph") == "f" and e.get("cat") == "task"}
    want = a["tasks"] + b["tasks"] + fig["unowned"]["tasks"]
    if len(starts) != want or set(starts) != set(ends):
        fail("chrome: %d flow starts, %d ends, %d tasks" % (len(starts), len(ends), want))
    if any(starts[i]["tid"] == ends[i]["tid"] for i in starts):
        fail("chrome: a task's flow starts on its own worker's track")
    print("ok")


if __name__ == "__main__":
    main()
