#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/addons/addons_test.py — add-ons loaded as shared objects are each charged their own
(issue 31), built the way a plugin author builds them: every add-on a `plugin.c` compiled in a
directory of its own, with the same entry point `addon_run`, by the real compiler and plugin.
An uninstrumented host (host.c) dlopens them, runs them in events, dlcloses them, round after
round; each add-on times its own body by the thread's CPU clock (the ground truth, read at the
body's first and last statement: what the group's stopwatch spans, less the hooks' part inside
it). Each group's CPU time in the snapshot, in `perfgroup-convert --summary --json` and in the
Gecko profile (the samples of the frame `addon_run (in <its object>)`) must be within 5 % of
that truth (+ the time stolen, + STEP_NS for each descheduled body: within()) — the error
model of docs/accounting.md allows far less per call (the hooks' part of the span,
sub-microsecond) than 5 % of 0.2 ms. Not around the call from the host: that holds
the work the hooks do outside every stopwatch, charged to no group by design — a new add-on's
first call resolves its site (registry, and in trace mode its definition records): 176 us more
over plugin-0's 15 calls, 5.5 %, once at load average 5.

  addons_test.py SCENARIO --cc CC --plugin PLUGIN.so --include DIR --runtime LIBPERFGROUP.so
                 --static LIBPERFGROUP.a --convert PERFGROUP-CONVERT --host-src host.c --work DIR

Scenarios:
  twenty    20 add-ons plugin-i/plugin.so (one file name), PERF_GROUP("plugin-i"), plugin-i
            burns 0.2*(i+1) ms; 5 events each, 3 rounds (the issue's scenario)
  churn     the same as plugin-i.so, 4 rounds in a new order each, while a second thread runs
            events in another add-on all the while: loads land where unloaded ones were
  twice     one add-on built once, loaded under two names (a copy) at the same time
  default   the add-ons' groups from -fplugin-arg-perfgroup-default= instead of an attribute
  static-shared, static-bare
            add-ons that carry the runtime (libperfgroup.a linked into each), loaded by a host
            linked with libperfgroup.so / without any runtime
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bounds"))
from bounds import STEP_NS  # noqa: E402 (docs/accounting.md "Error bounds")

PLUGIN_C = r'''#include <perfgroup.h>
#include <stdint.h>
#include <time.h>

static int64_t cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* the CPU and wall time of the bodies so far, and the bodies descheduled (more than 20 us
 * off the CPU: a preemption), read by the host before it unloads the add-on */
uint64_t addon_cpu_ns, addon_wall_ns, addon_desched;

%(attr)s void addon_run(double ms)
{
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    int64_t c0 = cpu_now(), end = c0 + (int64_t)(ms * 1e6), c1;
    while ((c1 = cpu_now()) < end)
        ;
    addon_cpu_ns += (uint64_t)(c1 - c0);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    int64_t wall = (w1.tv_sec - w0.tv_sec) * 1000000000 + (w1.tv_nsec - w0.tv_nsec);
    addon_wall_ns += (uint64_t)wall;
    addon_desched += wall - (c1 - c0) > 20000;
}
'''

TOL = 0.05


def steal_ns():
    """Time the hypervisor stole from the vCPUs so far (/proc/stat, every CPU), ns: a
    stopwatch counts it, the thread CPU clock does not (docs/accounting.md, "Error bounds")."""
    try:
        with open("/proc/stat") as f:
            return int(f.readline().split()[8]) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0


STEAL0 = steal_ns()  # the scenario's start: what was stolen since bounds every group's error


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, cwd=None, env=None):
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        fail("%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p


def build_addon(A, d, group, so, attr=True, static=False):
    """plugin.c in directory d, compiled there (its file name is plugin.c), linked into so."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "plugin.c"), "w") as f:
        f.write(PLUGIN_C % {"attr": 'PERF_GROUP("%s")' % group if attr else ""})
    flags = ["-O2", "-fPIC", "-Wall", "-Wextra", "-Werror", "-I" + A.include,
             "-fplugin=" + A.plugin]
    if not attr:
        flags.append("-fplugin-arg-perfgroup-default=" + group)
    run([A.cc] + flags + ["-c", "plugin.c", "-o", "plugin.o"], cwd=d)
    if static:
        link = [A.static, "-lmsgpackc", "-lpthread", "-ldl"]
    else:
        rdir = os.path.dirname(A.runtime)
        link = ["-L" + rdir, "-lperfgroup", "-Wl,-rpath," + rdir]
    run([A.cc, "-shared", "-o", so, os.path.join(d, "plugin.o")] + link, cwd=d)


def build_host(A, exe, linked):
    flags = ["-O2", "-Wall", "-Wextra", "-Werror", "-I" + A.include, A.host_src, "-o", exe,
             "-ldl", "-lpthread"]
    if linked:
        rdir = os.path.dirname(A.runtime)
        flags = ["-DHOST_RUNTIME"] + flags + ["-L" + rdir, "-lperfgroup", "-Wl,-rpath," + rdir]
    run([A.cc] + flags)


def within(what, got, truth, by="the thread CPU clock around the bodies", desched=0):
    """|got - truth| <= 5 % + the time stolen from the vCPUs + STEP_NS for each of the group's
    bodies that was descheduled (the thread's CPU clock steps at a preemption on a VM, and a
    settling pairs the counter with it there: docs/accounting.md "Error bounds", the
    reference's step; CI read plugin-0 3.288 ms against its bodies' 3.002 ms, +9.6 %, no
    steal shown, before this term)."""
    if os.environ.get("ADDONS_VERBOSE"):
        print("%-48s %10.3f %10.3f %+6.2f %%" % (what, got / 1e6, truth / 1e6,
                                               (got - truth) * 100.0 / truth if truth else 0))
        return
    stolen = steal_ns() - STEAL0
    stolen = stolen + 1_000_000_000 // os.sysconf("SC_CLK_TCK") if stolen > 0 else 0
    if truth <= 0 or abs(got - truth) > TOL * truth + stolen + desched * STEP_NS:
        fail("%s: %.3f ms, %s says %.3f ms (more than %d %% apart, + %.3f ms stolen from the "
             "vCPUs meanwhile, + %d descheduled bodies x %.1f ms)"
             % (what, got / 1e6, by, truth / 1e6, TOL * 100, stolen / 1e6, desched,
                STEP_NS / 1e6))


def summary_groups(A, pgm):
    p = run([A.convert, pgm, "--summary", "--json"])
    doc = json.loads(p.stdout)
    out = {}
    for proc in doc["processes"]:
        for g in proc["groups"]:
            out[g["group"]] = out.get(g["group"], 0) + g["cpu_ms"] * 1e6
    return out


def gecko_samples(A, pgm, work, interval_ms, prefix):
    """ns per leaf frame whose name starts with prefix (the rest of the name the key): its
    samples times the interval. Trace mode: `addon_run (in LIB)` frames, samples on a wall
    clock grid; stats mode: group labels, one sample per interval of the group's CPU."""
    out = os.path.join(work, "profile.json")
    run([A.convert, pgm, "--interval", str(interval_ms), "-o", out])
    with open(out) as f:
        prof = json.load(f)
    libs = {}
    threads = list(prof["threads"])
    for sub in prof.get("processes", []):
        threads += sub["threads"]
    for t in threads:
        strings = t["stringTable"]
        frames = t["frameTable"]["data"]
        stacks = t["stackTable"]["data"]
        loc = t["frameTable"]["schema"]["location"]
        sfr = t["stackTable"]["schema"]["frame"]
        sst = t["samples"]["schema"]["stack"]
        for s in t["samples"]["data"]:
            st = s[sst]
            if st is None:
                continue
            name = strings[frames[stacks[st][sfr]][loc]]
            if name.startswith(prefix):
                key = name[len(prefix):]
                if prefix.endswith("(in "):
                    key = key[:-1]
                libs[key] = libs.get(key, 0) + interval_ms * 1e6
    return libs


def interval_wall_by_module(A, pgm):
    """{module path: ns of its functions' trace intervals}, read back with pgdump"""
    pgdump = os.path.join(os.path.dirname(os.path.dirname(A.convert)), "reader", "pgdump")
    p = run([pgdump, pgm])
    mods, hz, out = {}, 0, {}
    for line in p.stdout.splitlines():
        w = line.split()
        if w[0] == "header":
            hz = int([x for x in w if x.startswith("hz=")][0][3:])
        elif w[0] == "site":
            fid = [x for x in w if x.startswith("id=")][0][3:]
            mods[fid] = line[line.index(" module=") + 8:].strip('"')
        elif w[0] == "interval":
            kv = dict(x.split("=", 1) for x in w[1:] if "=" in x)
            m = mods.get(kv["function"], "?")
            out[m] = out.get(m, 0) + int(kv["duration"]) * 1e9 / hz
    return out


def read_host(path):
    """{group: (truth_ns, snapshot_ns, calls, descheduled bodies)}, {add-on path: (cpu_ns,
    wall_ns)}, reused"""
    groups, addons, reused = {}, {}, 0
    with open(path) as f:
        for line in f:
            w = line.rstrip("\n").split("\t")
            if w[0].startswith("reused "):
                reused = int(w[0].split()[1])
            elif w[0] == "A":
                addons[w[1]] = (int(w[2]), int(w[3]))
            elif w[0] == "G":
                groups[w[1]] = (int(w[2]), int(w[3]), int(w[4]), int(w[5]))
    return groups, addons, reused


def check_run(A, work, host, mode, rounds, events, hostargs, addons, sc, static):
    """One run of the host, recorded in `mode`, checked against its own ground truth."""
    pgm = os.path.join(work, "rec-%s.pgm" % mode)
    env = dict(os.environ, PERFGROUP_OUTPUT=pgm, PERFGROUP_MODE=mode)
    out = os.path.join(work, "host-%s.tsv" % mode)
    p = run([host, out, str(rounds), str(events)] + hostargs +
            ["%s:%s:%g" % (so, g, ms) for so, g, ms, _ in addons], env=env)
    groups, truths, reused = read_host(out)
    if sc == "churn" and reused == 0:
        fail("no add-on was loaded where an unloaded one had been: the scenario did not happen")
    stray = sorted(glob.glob(pgm + ".*"))
    if stray:
        fail("recordings other than %s: %s" % (pgm, stray))
    if not os.path.exists(pgm):
        fail("no recording " + pgm)
    # one runtime per process (runtime/owner.c): with libperfgroup.so the add-ons' copies
    # defer to it silently; without, the first copy runs the process's and says so once
    lines = [l for l in p.stderr.splitlines() if l.startswith("perfgroup:")]
    want = 1 if sc == "static-bare" else 0
    if len(lines) != want or (want and "carries its own runtime" not in lines[0]):
        fail("expected %d line(s) from the runtime, got:\n%s" % (want, p.stderr))
    summ = summary_groups(A, pgm)
    for g, (truth, snap, calls, desched) in sorted(groups.items()):
        if calls == 0:
            fail("group %s: never called" % g)
        if snap >= 0:
            within("%s: group %s, snapshot" % (mode, g), snap, truth, desched=desched)
        within("%s: group %s, --summary --json" % (mode, g), summ.get(g, 0), truth,
               desched=desched)
    if mode == "stats":
        # the Gecko profile's group samples: one per 10 us of the group's CPU
        got = gecko_samples(A, pgm, work, 0.01, "")
        for g, (truth, _, _, desched) in sorted(groups.items()):
            within("stats: Gecko samples of group %s" % g, got.get(g, 0), truth, desched=desched)
    else:
        # each object's addon_run a frame of its own, its samples on a 10 us wall-clock grid:
        # as long as the recorded intervals of that object's function (the recording's SITE
        # names the object), and never shorter than the add-on's bodies by their own clock
        got = gecko_samples(A, pgm, work, 0.01, "addon_run (in ")
        rec = interval_wall_by_module(A, pgm)
        want = {lib: (truths[so][1], rec.get(so, 0)) for so, _, _, lib in addons}
        for lib, (body, recorded) in sorted(want.items()):
            within("trace: Gecko frame addon_run (in %s)" % lib, got.get(lib, 0), recorded,
                   "the recording's intervals of its function")
            if got.get(lib, 0) < (1 - TOL) * body:
                fail("trace: Gecko frame addon_run (in %s): %.3f ms, shorter than its bodies' "
                     "%.3f ms of wall time" % (lib, got.get(lib, 0) / 1e6, body / 1e6))
        extra = set(got) - set(want) - {"bg.so", "warm.so"}
        if extra:
            fail("Gecko frames addon_run in objects that were not loaded: %s" % sorted(extra))
    print("ok %s %s: %d groups, %d loads where an unloaded add-on had been, %d descheduled "
          "bodies" % (sc, mode, len(groups), reused, sum(v[3] for v in groups.values())))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    for o in ("cc", "plugin", "include", "runtime", "static", "convert", "host_src", "work"):
        ap.add_argument("--" + o.replace("_", "-"), dest=o, required=True)
    A = ap.parse_args()
    work = os.path.join(A.work, A.scenario)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sc = A.scenario
    static = sc.startswith("static")
    linked = sc != "static-bare"
    host = os.path.join(work, "host")
    build_host(A, host, linked)

    addons = []   # (so path, group, ms, the lib name the profile shows)
    hostargs = []
    rounds, events = 3, 5
    if sc in ("twenty", "default", "static-shared", "static-bare"):
        for i in range(20):
            d = os.path.join(work, "plugin-%d" % i)
            so = os.path.join(d, "plugin.so")
            build_addon(A, d, "plugin-%d" % i, so, attr=sc != "default", static=static)
            addons.append((so, "plugin-%d" % i, 0.2 * (i + 1), "plugin-%d/plugin.so" % i))
    elif sc == "churn":
        for i in range(20):
            d = os.path.join(work, "src-%d" % i)
            so = os.path.join(work, "plugin-%d.so" % i)
            build_addon(A, d, "plugin-%d" % i, so)
            addons.append((so, "plugin-%d" % i, 0.2 * (i + 1), "plugin-%d.so" % i))
        d = os.path.join(work, "src-bg")
        build_addon(A, d, "bg", os.path.join(work, "bg.so"))
        hostargs += ["--bg", os.path.join(work, "bg.so"), "--shuffle"]
        rounds = 4
    elif sc == "twice":
        d = os.path.join(work, "src")
        build_addon(A, d, "plugin-x", os.path.join(work, "a.so"))
        shutil.copy(os.path.join(work, "a.so"), os.path.join(work, "b.so"))
        addons.append((os.path.join(work, "a.so"), "plugin-x", 1.0, "a.so"))
        addons.append((os.path.join(work, "b.so"), "plugin-x", 3.0, "b.so"))
        hostargs += ["--together"]
    else:
        fail("unknown scenario " + sc)

    d = os.path.join(work, "src-warm")
    build_addon(A, d, "warmup", os.path.join(work, "warm.so"), static=static)
    hostargs += ["--warm", os.path.join(work, "warm.so")]
    for mode in ("trace", "stats"):
        check_run(A, work, host, mode, rounds, events, hostargs, addons, sc, static)


if __name__ == "__main__":
    main()
