#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Self time in the recording and every output (docs/accounting.md "Self time").

self_outputs.py PERFGROUP-CONVERT PERFGROUP SELF-PROGRAM GEN_PGM WORKDIR

(PERFGROUP_FF_IMPORT=/work/ff/import.sh, a local Firefox Profiler harness, adds its check.)

The program (tests/self/self.c --record, built with a real plugin) runs A -> B -> C in ten
events, recorded (stats mode), and prints its snapshot's self and charged time per group.
Then, from the recording:
  - the summary's JSON: every group's self_ms and cpu_ms equal the snapshot's (the file's
    whole-run totals are the snapshot's numbers), the text has the self ms column, and
    `--sort self` orders the rows C, A, B (by charged time they are A, B, C);
  - `perfgroup metrics`: perfgroup_group_self_cpu_seconds_total with HELP and TYPE, equal to
    the snapshot's per group;
  - `perfgroup top -n 1`: the self% column, each group's share of the thread's events' CPU;
  - the Gecko profile's stats-mode call tree is the measured nesting, cold > A > B > C, each
    node's self samples its group's self time / 1 ms (+-1 for the carried fraction; less what
    the converter scales away in an event whose self times sum above its CPU), no
    group directly under the event but A; and, given PERFGROUP_FF_IMPORT, the Firefox
    Profiler's own importer takes it without a warning or error;
  - an older writer's file (gen_pgm.py's stats scenario: slots without PGF_TOTALS_F_SELF,
    4-field event groups): self "?" / null in the summary, no self series in the metrics.
Exit 1 on any failure.
"""
import json
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bounds"))
from bounds import FREQ, HOOK_NS, STEP_NS, scaled_away  # noqa: E402 (docs/accounting.md "Error bounds")

fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       timeout=120)
    if p.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return p.stdout


def record(prog, pgm, mode):
    """The program's cold phase recorded into pgm in `mode`: its snapshot's {group: (self ns,
    charged ns)}, and under "off-cpu" the thread's (off-CPU ns, involuntary switches) in it."""
    if os.path.exists(pgm):
        os.unlink(pgm)
    snap = {}
    for line in run([prog, "--record"], dict(os.environ, PERFGROUP_OUTPUT=pgm,
                                             PERFGROUP_MODE=mode)).splitlines():
        name, a, b = line.split()
        snap[name] = (int(a), int(b))
    print("%s mode: snapshot (self, charged ns), off-CPU (ns, switches): %r" % (mode, snap))
    if set(snap) != {"top", "A", "B", "C", "off-cpu"}:
        fail("the program printed %r" % snap)
        return None
    return snap


def top_order(pg, pgm, *opts):
    """The A, B, C rows of `perfgroup top -n 1 [opts] pgm`, in the order shown."""
    out = run([pg, "top", "-n", "1"] + list(opts) + [pgm])
    return [m for m in re.findall(r"^  (\S+)\s+[0-9.]+\s+[0-9.?]+\s", out, re.M) if m in "ABC"]


def slices_self(events):
    """The Chrome trace's acquiring function slices per thread track, each with the self
    time recomputed from the slices alone: its duration less the durations of the acquiring
    slices nested directly in it (a slice that acquired nothing looked through)."""
    out = []
    by_tid = {}
    for e in events:
        if e.get("ph") == "X" and e["tid"] < (1 << 29) and e.get("cat") != "marker":
            by_tid.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in by_tid.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # [slice, nested acquiring durations]
        for e in evs + [None]:
            while stack and (e is None or e["ts"] >= stack[-1][0]["ts"] + stack[-1][0]["dur"]):
                sl, nested = stack.pop()
                acq = sl.get("args", {}).get("acquired")
                if acq:
                    out.append((sl, sl["dur"] - nested))
                # to the slice below: this one's duration, or what this one (a re-entry)
                # had nested in it
                if stack:
                    stack[-1][1] += sl["dur"] if acq else nested
            if e is not None:
                stack.append([e, 0.0])
    return out


def event_self(conv, pgm, snap, work, mode):
    """Per event: Chrome's event slices' `self_ms <group>` and the Gecko PerfgroupEvent
    markers' `self` ("A 3.155 ms, …", to the us) add up over the events to the snapshot's
    self time per group (the event records carry it, in both modes)."""
    chrome = os.path.join(work, "events-%s.chrome.json" % mode)
    run([conv, pgm, "--format", "chrome", "-o", chrome])
    with open(chrome) as f:
        evs = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "event"]
    prof = os.path.join(work, "events-%s.json" % mode)
    run([conv, pgm, "-o", prof])
    with open(prof) as f:
        t = [t for t in json.load(f)["threads"] if t["markers"]["data"]][0]
    sch = t["markers"]["schema"]
    marks = [r[sch["data"]] for r in t["markers"]["data"]
             if r[sch["data"]] and r[sch["data"]].get("type") == "PerfgroupEvent"]
    if len(evs) != 10 or len(marks) != 10:
        fail("%s: %d event slices, %d event markers, want 10" % (mode, len(evs), len(marks)))
        return
    for g in "ABC":
        want = snap[g][0] / 1e6
        got = sum(e["args"].get("self_ms " + g, float("nan")) for e in evs)
        if not abs(got - want) <= 1e-5:
            fail("%s: chrome events' self_ms %s sum %r, the snapshot's %.6f" % (mode, g, got, want))
        got = 0.0
        for d in marks:
            m = re.search(r"(?:^|, )%s ([0-9.]+) ms" % g, d.get("self", ""))
            got += float(m.group(1)) if m else float("nan")
        if not abs(got - want) <= 0.001 * len(marks) + 1e-9:
            fail("%s: Gecko event markers' self for %s sum %r, the snapshot's %.6f (1 us an event)"
                 % (mode, g, got, want))


def trace_mode(conv, pg, prog, work, ff):
    """Self time in a trace-mode recording: the summary's from the totals (the snapshot's),
    and every acquiring interval's own self time (Chrome args.self_ms, Gecko PerfgroupInterval
    self) — its length less its directly nested acquiring intervals' — which add up per group
    to the runtime's own wall-clock figures, and to its self CPU time within the off-CPU time."""
    pgm = os.path.join(work, "self-trace.pgm")
    snap = record(prog, pgm, "trace")
    if snap is None:
        return
    off_ns, nivcsw = snap["off-cpu"]
    event_self(conv, pgm, snap, work, "trace")
    js = json.loads(run([conv, pgm, "--summary", "--json"]))
    if js["processes"][0].get("mode") != "trace":
        fail("trace: the recording's mode is %r" % js["processes"][0].get("mode"))
    rows = {g["group"]: g for g in js["overall"]["groups"]}
    for g in "ABC":
        got = rows.get(g, {}).get("self_ms")
        if got is None or abs(got - snap[g][0] / 1e6) > 1e-6:
            fail("trace: summary %s self_ms = %r, the snapshot's %.6f" % (g, got, snap[g][0] / 1e6))

    chrome = os.path.join(work, "self-trace.chrome.json")
    run([conv, pgm, "--format", "chrome", "-o", chrome])
    with open(chrome) as f:
        events = json.load(f)["traceEvents"]
    wall_self, pieces = {g: 0.0 for g in "ABC"}, {g: 0 for g in "ABC"}
    recomputed = slices_self(events)
    for sl, want in recomputed:
        got = sl["args"].get("self_ms")
        # ts and dur are written to the ns (3 decimals of a us), self_ms too (6 of a ms)
        if got is None or abs(got * 1000 - want) > 0.0015:
            fail("trace: chrome slice %s at %s us: self_ms %r, its duration less its nested "
                 "acquiring slices' %.6f ms" % (sl["name"], sl["ts"], got, want / 1000))
        g = sl.get("cat")
        if g in wall_self and got is not None:
            wall_self[g] += got
            pieces[g] += 1
    if sorted(pieces.values()) != [10, 10, 10]:
        fail("trace: acquiring slices per group %r, want 10 each" % pieces)
        return
    # The intervals are the runtime's own stopwatch spans: per group their self times add up
    # to its wall time less the wall time of the group nested directly in it (A holds B,
    # B holds C), from the totals slot — the same counter readings, so up to the ns
    # conversions (1 us per interval, and 2e-4 of the time for the frequency's refinement,
    # docs/accounting.md "Error bounds": the slot's cycles and the intervals' times are
    # converted through different clock pairs).
    wall = {g: rows[g]["wall_ms"] for g in "ABC"}
    want = {"A": wall["A"] - wall["B"], "B": wall["B"] - wall["C"], "C": wall["C"]}
    for g in "ABC":
        tol = 0.001 * pieces[g] + 2e-4 * wall["A"]
        if abs(wall_self[g] - want[g]) > tol:
            fail("trace: %s's intervals' self %.6f ms, its wall less its nested group's in the "
                 "totals %.6f ms (+-%.6f)" % (g, wall_self[g], want[g], tol))
        # Against the CPU self time (the snapshot's): a wall time is the CPU time in it plus
        # the time off the CPU, which is at most the thread's off-CPU time over the events,
        # measured by the program; plus the error model's terms for each interval (frequency,
        # the hooks at both ends, a reference step per involuntary switch).
        cpu = snap[g][0] / 1e6
        bound = (FREQ * wall_self[g] + 2 * HOOK_NS / 1e6 * pieces[g] + STEP_NS / 1e6 * nivcsw)
        if not (cpu - bound <= wall_self[g] <= cpu + off_ns / 1e6 + bound):
            fail("trace: %s's intervals' self %.6f ms against its self CPU %.6f ms: not within "
                 "[-%.6f, off-CPU %.6f + %.6f]" % (g, wall_self[g], cpu, bound, off_ns / 1e6, bound))
    print("trace: intervals' self per group (wall ms) %r; self CPU (ms) %r; off-CPU %.3f ms"
          % ({g: round(v, 3) for g, v in wall_self.items()},
             {g: snap[g][0] / 1e6 for g in "ABC"}, off_ns / 1e6))

    # Gecko: the interval markers carry the same self times; the call tree's samples whose
    # leaf is the group's function are its self time on the 1 ms grid (a tick per piece of
    # self time: before, between and after its nested intervals)
    prof = os.path.join(work, "self-trace.json")
    run([conv, pgm, "-o", prof])
    with open(prof) as f:
        p = json.load(f)
    t = [t for t in p["threads"] if t["samples"]["data"]][0]
    strings, sch = t["stringTable"], t["markers"]["schema"]
    marks = [(r[sch["startTime"]], r[sch["data"]]) for r in t["markers"]["data"]
             if r[sch["data"]] and r[sch["data"]].get("type") == "PerfgroupInterval"]
    msum = {g: 0.0 for g in "ABC"}
    for start, d in marks:
        if "self" not in d:
            fail("trace: a PerfgroupInterval marker without self: %r" % d)
            continue
        m = re.match(r"cold_([abc])", strings[d["function"]])
        if not m:
            fail("trace: an interval marker of %r" % strings[d["function"]])
            continue
        msum[m.group(1).upper()] += d["self"]
    for g in "ABC":
        if abs(msum[g] - wall_self[g]) > 1e-5 * pieces[g]:
            fail("trace: Gecko markers' self for %s %.6f ms, Chrome's %.6f" % (g, msum[g], wall_self[g]))
    frames, stacks, ssch = t["frameTable"]["data"], t["stackTable"]["data"], t["samples"]["schema"]
    leaf = {}
    for smp in t["samples"]["data"]:
        st = smp[ssch["stack"]]
        name = strings[frames[stacks[st][1]][0]] if st is not None else ""
        leaf[name] = leaf.get(name, 0) + 1
    for g in "ABC":
        fn = "cold_" + g.lower()
        n = sum(v for k, v in leaf.items() if k.startswith(fn))
        # an interval's self time is at most two pieces here (before and after the interval
        # nested in it), each a tick off at most
        tol = 2 * pieces[g] + 1
        if abs(n - wall_self[g]) > tol:
            fail("trace: Gecko call tree: %d samples with %s innermost, its intervals' self "
                 "%.3f ms (+-%d)" % (n, fn, wall_self[g], tol))
    if ff:
        out = run([ff, prof])
        if "importer console.error/warn: none" not in out:
            fail("Firefox Profiler import of the trace-mode profile:\n" + out[-3000:])


def main(argv):
    conv, pg, prog, gen, work = argv[:5]
    ff = os.environ.get("PERFGROUP_FF_IMPORT")
    os.makedirs(work, exist_ok=True)
    pgm = os.path.join(work, "self.pgm")
    if os.path.exists(pgm):
        os.unlink(pgm)
    snap = record(prog, pgm, "stats")
    if snap is None:
        return 1

    # the summary, JSON: the whole-run totals are the snapshot's
    js = json.loads(run([conv, pgm, "--summary", "--json"]))
    rows = {g["group"]: g for g in js["overall"]["groups"]}
    for g in "ABC":
        if g not in rows:
            fail("summary: no row %s" % g)
            continue
        for key, v in (("self_ms", snap[g][0]), ("cpu_ms", snap[g][1])):
            got = rows[g].get(key)
            if got is None or abs(got - v / 1e6) > 1e-6:
                fail("summary %s %s = %r, the snapshot's %.6f" % (g, key, got, v / 1e6))
    # the text: the column, and --sort self puts C (most self) first
    txt = run([conv, pgm, "--summary"])
    if "self ms" not in txt:
        fail("summary text: no self ms column")
    order = {}
    for sort in ("cpu", "self"):
        t = run([conv, pgm, "--summary", "--sort", sort])
        table = t.split("overall")[-1]
        order[sort] = [ln.split()[0] for ln in table.splitlines() if ln[:1] in "ABC" and ln[1:2] == " "]
    if order["cpu"] != ["A", "B", "C"] or order["self"] != ["C", "A", "B"]:
        fail("summary order by cpu %r (want A B C), by self %r (want C A B)" % (order["cpu"], order["self"]))

    # metrics
    met = run([pg, "metrics", pgm])
    name = "perfgroup_group_self_cpu_seconds_total"
    if "# HELP %s " % name not in met or "# TYPE %s counter" % name not in met:
        fail("metrics: no HELP/TYPE for %s" % name)
    for g in "ABC":
        m = re.search(r'^%s\{[^}]*group="%s"[^}]*\} ([0-9.e+-]+)$' % (name, g), met, re.M)
        if not m or abs(float(m.group(1)) - snap[g][0] / 1e9) > 1e-8:
            fail("metrics: %s for %s %r, the snapshot's %.9f" % (name, g, m and m.group(1), snap[g][0] / 1e9))

    # top: self% of the thread's events' CPU (the top group's charged time)
    top = run([pg, "top", "-n", "1", pgm])
    if "self%" not in top:
        fail("top: no self%% column:\n" + top)
    for g in "ABC":
        m = re.search(r"^  %s\s+([0-9.]+)\s+([0-9.?]+)" % g, top, re.M)
        want = 100.0 * snap[g][0] / snap["top"][1]
        if not m or m.group(2) == "?" or abs(float(m.group(2)) - want) > 0.051:
            fail("top: %s self%% %r, want %.2f:\n%s" % (g, m and m.group(2), want, top))

    # top --sort self (-s self): rows by the interval's self time, C A B; by CPU (the default)
    # A B C; a key it does not know is a usage error
    for opts, want in (((), "ABC"), (("--sort", "cpu"), "ABC"), (("--sort", "self"), "CAB"),
                       (("-s", "self"), "CAB")):
        got = "".join(top_order(pg, pgm, *opts))
        if got != want:
            fail("top %s: rows %s, want %s" % (" ".join(opts), got, want))
    p = subprocess.run([pg, "top", "-n", "1", "--sort", "wall", pgm], capture_output=True, text=True)
    if p.returncode != 1 or "wall" not in p.stderr:
        fail("top --sort wall: exit %d, %r (want 1 and the key named)" % (p.returncode, p.stderr[:200]))

    # the Gecko call tree: measured nesting, self samples = self time / 1 ms
    prof = os.path.join(work, "self.json")
    run([conv, pgm, "-o", prof])
    with open(prof) as f:
        p = json.load(f)
    threads = [t for t in p["threads"] if t["samples"]["data"]]
    if len(threads) != 1:
        fail("gecko: %d threads with samples, want 1" % len(threads))
        return 1
    t = threads[0]
    strings, frames, stacks = t["stringTable"], t["frameTable"]["data"], t["stackTable"]["data"]
    sch = t["samples"]["schema"]

    def path(s):
        out = []
        while s is not None:
            out.append(strings[frames[stacks[s][1]][0]])
            s = stacks[s][0]
        return tuple(reversed(out))
    counts = {}
    for smp in t["samples"]["data"]:
        pth = path(smp[sch["stack"]]) if smp[sch["stack"]] is not None else ()
        counts[pth] = counts.get(pth, 0) + 1
    print("gecko paths:", counts)
    want_paths = {"A": ("cold", "A"), "B": ("cold", "A", "B"), "C": ("cold", "A", "B", "C")}
    away = scaled_away(t)  # (events whose self times sum above their CPU: scaled to fit it)
    for g, pth in want_paths.items():
        n, want = counts.get(pth, 0), snap[g][0] / 1e6 - away.get(("cold", g), 0.0)
        if abs(n - want) > 1.0:
            fail("gecko: %s: %d self samples, want %.2f (+-1; %.3f ms scaled away)"
                 % (" > ".join(pth), n, want, away.get(("cold", g), 0.0)))
    for pth in counts:
        if len(pth) >= 2 and pth[1] in "BC" and pth not in want_paths.values():
            fail("gecko: a path not measured: %r" % (pth,))
    if ff:
        out = run([ff, prof])
        if "importer console.error/warn: none" not in out:
            fail("Firefox Profiler import:\n" + out[-3000:])
        else:
            print("Firefox Profiler import: no warning, no error")

    event_self(conv, pgm, snap, work, "stats")
    trace_mode(conv, pg, prog, work, ff)

    # older writers' files: self unknown, never 0. gen_pgm.py's (event records of 4 fields,
    # no totals region), and this recording as a version-3 writer before self time made it
    # (its totals slots without PGF_TOTALS_F_SELF)
    old = os.path.join(work, "old.pgm")
    run([os.environ.get("PGC_PYTHON", sys.executable), gen, "stats", old])
    old3 = os.path.join(work, "old3.pgm")
    with open(pgm, "rb") as f:
        b = bytearray(f.read())
    off, size, used = (struct.unpack_from("<Q", b, 440)[0], struct.unpack_from("<I", b, 448)[0],
                       struct.unpack_from("<I", b, 456)[0])
    for i in range(used):
        struct.pack_into("<I", b, off + i * size + 12,
                         struct.unpack_from("<I", b, off + i * size + 12)[0] & ~8)
    with open(old3, "wb") as f:  # the buffer's never-written pages left holes (272 MB)
        zero = bytes(1 << 16)
        for at in range(0, len(b), len(zero)):
            block = b[at:at + len(zero)]
            if block != zero[:len(block)]:
                f.seek(at)
                f.write(block)
        f.truncate(len(b))
    for o in (old, old3):
        js = json.loads(run([conv, o, "--summary", "--json"]))
        if not js["overall"]["groups"] or any(g.get("self_ms", 0) is not None for g in js["overall"]["groups"]):
            fail("older file %s: self_ms not null: %r" % (o, js["overall"]["groups"]))
        for ln in run([conv, o, "--summary"]).split("overall")[-1].splitlines():
            f = ln.split()
            if len(f) > 20 and re.match(r"^[0-9.]+$", f[1]) and f[3:5] != ["?", "?"]:
                fail("older file %s: a row's self is not '?': %r" % (o, ln))
        if re.search(r"^%s\{" % name, run([pg, "metrics", o]), re.M):
            fail("older file %s: a %s series" % (o, name))
        ev = run([conv, o, "--format", "chrome", "-o", "-"])
        if o == old and ("self_ms " in ev or '"self":' in run([conv, o, "-o", "-"])):
            fail("older file %s: a per-event self time (its event records carry none)" % o)
    top = run([pg, "top", "-n", "1", old3])
    if not re.search(r"^  A\s+[0-9.]+\s+\?", top, re.M):
        fail("older file: top's self%% is not '?':\n" + top)
    if fails:
        print("%d check(s) failed" % len(fails))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
