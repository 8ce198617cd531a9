#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""lite.tree: the recording's call tree and self times of hot events with lite frames.

tree_outputs.py PERFGROUP-CONVERT PERFGROUP TREE-PROGRAM WORKDIR

The program (tests/lite/tree.c, GCC plugin, -O2) runs three times, recorded in stats mode:
PERFGROUP_ACCOUNTING=exact, unset (the default: adaptive, lite frames in hot events), =exact.
Its "tree" events call warm WARM times (the event goes hot and switches to lite frames
there), then outer -> middle -> inner: middle and inner first start after the switch, in lite
frames, so their parents are the ones the runtime learns at the transitions it sees
(docs/accounting.md "Lite frames", the call tree). Checks (exit 1 on any failure):
  - activations as called in every run; the default run estimated every tree event (but
    those slow enough to stay exact), the exact runs none;
  - self times partition each run's event CPU: top's self + every group's = top's charged
    (docs/accounting.md "Self time": up to rounding and clamps), in the lite run as in exact;
  - the default run's charged and self shares of top (warm, outer, middle, inner; top's self)
    against the exact runs' less the hooks' cost, within lite.gcc's bound (docs/accounting.md,
    "Lite frames", Test: 2 % of the share (0.5 points under 5 %) + the corrected exact runs'
    spread + 20 % of the correction + 8 ns a pair around the figure + the time stolen);
  - per run, the summary's self_ms and cpu_ms per group, `perfgroup metrics`' self seconds
    and `perfgroup top`'s self% equal the snapshot's (the recording's totals), and the Gecko stats-mode call tree has the nesting E > warm, E > outer > middle >
    inner (E: tree, sparse) and no other path holding these groups, in the exact runs and the
    lite run alike (a node with no sample may be absent: one of less than 2 ms of self time),
    each node's self samples its group's self time in those events / 1 ms (+-2: the converter
    carries a group's fraction across events; less what it scales away in an event whose self
    times sum above its CPU: bounds.scaled_away), the "(outside groups)" nodes top's self time
    (+-2: its carry is shared with the hooks events').
The sparse events make middle's few transitions rarely seen by the runtime: its parent there
is mostly the one its thread learnt in the tree events (perfgroup__lite_fold's fallback).
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bounds"))
from bounds import scaled_away, steal_ns  # noqa: E402

GROUPS = ["top", "W", "E", "warm", "outer", "middle", "inner"]
LITE_NS = 8.0  # a lite pair's own cost, at most (docs/accounting.md, lite.gcc's LITE_NS)
fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       timeout=200)
    if p.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return p.stdout


def record(prog, pgm, mode):
    """The program run in `mode` ("exact" or "" for the default), recorded into pgm: per phase
    {group: (charged ns, self ns, activations)}, and "slow", "estimated", "plain", "shape"."""
    if os.path.exists(pgm):
        os.unlink(pgm)
    env = dict(os.environ, PERFGROUP_OUTPUT=pgm, PERFGROUP_MODE="stats")
    env.pop("PERFGROUP_ACCOUNTING", None)
    env.pop("PERFGROUP_LITE_R", None)
    if mode:
        env["PERFGROUP_ACCOUNTING"] = mode
    r = {"hooks": {}, "tree": {}, "sparse": {}}
    for line in run([prog], env).splitlines():
        f = line.split()
        if f[0] in ("plain", "shape"):
            r[f[0]] = [int(x) for x in f[1:]]
        elif f[1] in ("slow", "estimated"):
            r[f[0]][f[1]] = int(f[2])
        elif f[1] in GROUPS:
            r[f[0]][f[1]] = tuple(int(x) for x in f[2:5])
    print("%s: %r" % (mode or "default", r))
    return r


def gecko_tree(conv, pgm, out):
    """The Gecko profile's one thread with samples: every stack path (names from the root)
    in its stack table, the samples per path, and the self time scaled away per event name
    and group (bounds.scaled_away)."""
    run([conv, pgm, "-o", out])
    with open(out) as f:
        p = json.load(f)
    threads = [t for t in p["threads"] if t["samples"]["data"]]
    if len(threads) != 1:
        fail("%s: %d threads with samples, want 1" % (out, len(threads)))
        return set(), {}, {}
    t = threads[0]
    strings, frames, stacks = t["stringTable"], t["frameTable"]["data"], t["stackTable"]["data"]

    def path(s):
        out = []
        while s is not None:
            out.append(strings[frames[stacks[s][1]][0]])
            s = stacks[s][0]
        return tuple(reversed(out))
    paths = {path(i) for i in range(len(stacks))}
    sch = t["samples"]["schema"]
    counts = {}
    for smp in t["samples"]["data"]:
        if smp[sch["stack"]] is not None:
            pth = path(smp[sch["stack"]])
            counts[pth] = counts.get(pth, 0) + 1
    return paths, counts, scaled_away(t)


def outputs(conv, pg, pgm, r, work, name):
    """The recording's summary and Gecko call tree against the run's own snapshot; returns the
    tree's paths that hold a group of the tree and sparse phases."""
    js = json.loads(run([conv, pgm, "--summary", "--json"]))
    rows = {g["group"]: g for g in js["overall"]["groups"]}
    for g in ("warm", "outer", "middle", "inner"):
        for key, i in (("cpu_ms", 0), ("self_ms", 1)):
            v = r["tree"][g][i] + r["sparse"][g][i]
            got = rows.get(g, {}).get(key)
            if got is None or abs(got - v / 1e6) > 1e-6:
                fail("%s: summary %s %s = %r, the snapshot's %.6f" % (name, g, key, got, v / 1e6))
    if "self ms" not in run([conv, pgm, "--summary"]):
        fail("%s: the summary's text has no self ms column" % name)
    # metrics and top read the same totals: self seconds per group, self% of the thread's
    # events' CPU (top's charged time over every phase)
    met = run([pg, "metrics", pgm])
    top = run([pg, "top", "-n", "1", pgm])
    events_cpu = sum(r[ph]["top"][0] for ph in ("hooks", "tree", "sparse"))
    for g in ("warm", "outer", "middle", "inner"):
        self_ns = r["tree"][g][1] + r["sparse"][g][1]
        m = re.search(r'^perfgroup_group_self_cpu_seconds_total\{[^}]*group="%s"[^}]*\} ([0-9.e+-]+)$'
                      % g, met, re.M)
        if not m or abs(float(m.group(1)) - self_ns / 1e9) > 1e-8:
            fail("%s: metrics: %s's self seconds %r, the snapshot's %.9f"
                 % (name, g, m and m.group(1), self_ns / 1e9))
        m = re.search(r"^  %s\s+([0-9.]+)\s+([0-9.?]+)" % g, top, re.M)
        want = 100.0 * self_ns / events_cpu
        if not m or m.group(2) == "?" or abs(float(m.group(2)) - want) > 0.051:
            fail("%s: top: %s self%% %r, want %.2f" % (name, g, m and m.group(2), want))
    paths, counts, away = gecko_tree(conv, pgm, os.path.join(work, "tree-%s.json" % name))
    print("%s: gecko paths: %r" % (name, {p: n for p, n in counts.items() if p[0] != "hooks"}))
    mine = {p for p in paths if set(p) & {"warm", "outer", "middle", "inner"}}
    want = {(ev, g): (ev,) + pth for ev in ("tree", "sparse")
            for g, pth in (("warm", ("warm",)), ("outer", ("outer",)), ("middle", ("outer", "middle")),
                           ("inner", ("outer", "middle", "inner")))}
    # a node is there when it or a node under it has samples: every path measured, none else
    if mine - set(want.values()):
        fail("%s: the call tree has paths not measured: %r" % (name, sorted(mine - set(want.values()))))
    for (ev, g), pth in want.items():
        if r[ev][g][1] >= 2e6 and pth not in mine:
            fail("%s: the call tree has no %s (%s's self time %.3f ms)"
                 % (name, " > ".join(pth), g, r[ev][g][1] / 1e6))
        # the converter carries each group's fraction of a sample from event to event, across
        # the event names: +-1 over the run, +-2 for one name's node; less what it scaled away
        # in events whose self times sum above their CPU (107 samples for inner's 109.450 ms
        # once, in an exact run)
        n, ms, cut = counts.get(pth, 0), r[ev][g][1] / 1e6, away.get((ev, g), 0.0)
        if abs(n - (ms - cut)) > 2.0:
            fail("%s: %s: %d self samples, its self time %.3f ms less %.3f ms scaled away (+-2)"
                 % (name, " > ".join(pth), n, ms, cut))
    n = sum(counts.get((ev, "(outside groups)"), 0) for ev in ("tree", "sparse"))
    ms = (r["tree"]["top"][1] + r["sparse"]["top"][1]) / 1e6
    if abs(n - ms) > 2.0:
        fail("%s: tree and sparse > (outside groups): %d samples, top's self time in those "
             "events %.3f ms (+-2: its carry is shared with the hooks events')" % (name, n, ms))
    return mine


def main(argv):
    conv, pg, prog, work = argv[:4]
    os.makedirs(work, exist_ok=True)
    modes = ["exact", "", "exact"]
    stolen0 = steal_ns()
    runs = [record(prog, os.path.join(work, "tree-%d.pgm" % k), m) for k, m in enumerate(modes)]
    stolen = steal_ns() - stolen0 + 1e7
    names = ["exact #1", "default", "exact #2"]
    cal_events, cal_calls, events, warm, iters, inner, sp_events, sp_middle, sp_inner = runs[0]["shape"]
    want = {"W": cal_events, "E": cal_events * cal_calls, "warm": events * warm, "outer": events,
            "middle": events * iters, "inner": events * iters * inner}
    want_sp = {"warm": sp_events * warm, "outer": sp_events, "middle": sp_events * sp_middle,
               "inner": sp_events * sp_middle * sp_inner}
    for r, name in zip(runs, names):
        for phase, w in (("tree", want), ("sparse", want_sp)):
            for g, n in w.items():
                got = r["hooks" if g in "WE" else phase].get(g, (0, 0, 0))[2]
                if got != n:
                    fail("%s: %s phase: %s activations %d, called %d" % (name, phase, g, got, n))
        est = r["tree"]["estimated"]
        if name == "default":
            if est + r["tree"]["slow"] < events:
                fail("default: %d tree events estimated, want %d but the %d slow enough to "
                     "stay exact" % (est, events, r["tree"]["slow"]))
        elif est or r["hooks"]["estimated"]:
            fail("%s: events estimated in exact mode" % name)
        # self times partition the events' CPU (one group per site; runtime.self's bound:
        # 2 %, + the time stolen meanwhile above: the stopwatches count it, the event's CPU
        # clock does not); top's self is ~8 % of the tree events: a lost one shows
        for phase, n in (("tree", events), ("sparse", sp_events)):
            t = r[phase]
            parts = t["top"][1] + sum(t[g][1] for g in ("warm", "outer", "middle", "inner"))
            if not (-0.02 * t["top"][0] <= parts - t["top"][0] <= 0.02 * t["top"][0] + stolen):
                fail("%s: %s phase: self times sum to %d ns, the events' CPU %d ns"
                     % (name, phase, parts, t["top"][0]))
            print("%s: %s phase: self times sum to %d ns, the events' CPU %d ns"
                  % (name, phase, parts, t["top"][0]))

    # the hooks' cost per call pair in exact mode (lite.c's model, from the exact runs only)
    calls = cal_events * cal_calls
    ex = [runs[0], runs[2]]
    dh = sum(r["hooks"]["W"][0] - r["plain"][0] for r in ex) / 2 / calls
    dx = sum(r["hooks"]["E"][0] - r["plain"][1] for r in ex) / 2 / calls
    print("hooks: a call pair costs %.1f ns in exact mode, %.1f ns of it inside the callee" % (dh, dx))
    if not (dh < 1000 and dx < 1000):
        fail("hooks: %.1f / %.1f ns a pair: not a hook's" % (dh, dx))
    dh = max(dh, 0.0)
    dx = min(max(dx, 0.0), dh)
    acts = {"top": 0, "warm": want["warm"], "outer": want["outer"], "middle": want["middle"],
            "inner": want["inner"]}
    children = {"top": want["warm"] + want["outer"], "warm": 0, "outer": want["middle"],
                "middle": want["inner"], "inner": 0}
    nested = {"warm": 0, "outer": want["middle"] + want["inner"], "middle": want["inner"], "inner": 0}
    corr_top = dh * (want["warm"] + want["outer"] + want["middle"] + want["inner"])
    print("| figure | exact #1 %% | exact #2 %% | default %% | hooks' correction (points) | "
          "default - (exact - correction) | bound |\n|---|---|---|---|---|---|---|")
    for what in ("charged", "self"):
        for g in ("top", "warm", "outer", "middle", "inner"):
            if what == "charged" and g == "top":
                continue  # the event's CPU: two exact readings
            i = 0 if what == "charged" else 1
            v = [r["tree"][g][i] for r in runs]
            top = [r["tree"]["top"][0] for r in runs]
            e1, a, e2 = (100.0 * v[k] / top[k] for k in range(3))
            corr = (dx * acts[g] + (dh - dx) * children[g] if what == "self"
                    else dh * nested[g] + dx * acts[g])
            c1 = 100.0 * (v[0] - corr) / (top[0] - corr_top)
            c2 = 100.0 * (v[2] - corr) / (top[2] - corr_top)
            ref = (c1 + c2) / 2
            pairs = acts[g] + (children[g] if what == "self" else nested[g])
            bound = ((0.02 * ref if ref >= 5 else 0.5) + abs(c1 - c2) +
                     0.2 * abs((e1 + e2) / 2 - ref) + 100.0 * (LITE_NS * pairs + stolen) / min(top[0], top[1]))
            print("| %s %s | %.2f | %.2f | %.2f | %.2f | %+.2f | %.2f |"
                  % (g, what, e1, e2, a, (e1 + e2) / 2 - ref, a - ref, bound))
            if abs(a - ref) > bound:
                fail("%s %s: default %.2f %% of top against exact %.2f %% less the hooks' cost: "
                     "%.2f %% (bound %.2f)" % (g, what, a, (e1 + e2) / 2, ref, bound))

    for k, r in enumerate(runs):
        outputs(conv, pg, os.path.join(work, "tree-%d.pgm" % k), r, work, names[k].replace(" #", ""))
    print("stolen %.1f ms" % (stolen / 1e6))
    if fails:
        print("%d check(s) failed" % len(fails))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
