#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A reference model of docs/accounting.md, and the differential test of the real runtime.

    model.py TEST_MODEL [--seed S] [--count N] [--show]

For each seed, generates a random schedule (enter/exit, explicit and implicit events, nested
loops, setjmp/longjmp, signals when the runtime is idle and at every test point inside event
open, commit, resync and the hooks, sleeps, fork), computes what the accounting rules charge
every group (the model below, written from docs/accounting.md, not from runtime/), runs the
schedule with tests/runtime/test_model.c on the real runtime under the virtual clock, and
compares every total exactly. PERFGROUP_MODEL_SCHEDULES (default 3000) is N; a failing
schedule is written to model-fail-<seed>.txt beside the working directory and printed.
"""
import copy
import os
import random
import subprocess
import sys

JANK = 10
# The driver's functions: (attribute group, file group); every one also has its function
# group "name()", inactive unless activated (only f5's is, by the schedule's "A").
FUNCS = {
    "f0": ("A", "F1"), "f1": ("B", "F1"), "f2": ("", "F2"), "f3": ("A", "F2"),
    "f4": ("C", ""), "f5": ("", ""), "h0": ("SIG", ""), "h1": ("SIG", "SIGF"),
}
FIDX = ["f0", "f1", "f2", "f3", "f4", "f5"]
HANDLER_LEVEL = 10 ** 6  # a handler's frames are below every frame of the schedule


class Totals:
    FIELDS = ["cpu", "wall", "blocked", "cycles", "acts", "events", "max", "min"]

    def __init__(self):
        self.v = dict.fromkeys(self.FIELDS, 0)
        self.jank = [0] * JANK
        self.discarded = 0

    def add(self, cycles, cpu, wall, acts, discarded):
        v = self.v
        v["cycles"] += cycles
        v["cpu"] += cpu
        v["wall"] += wall
        v["blocked"] += max(0, wall - cpu)
        v["acts"] += acts
        v["events"] += 1
        self.discarded += discarded
        v["max"] = max(v["max"], cpu)
        if v["events"] == 1 or cpu < v["min"]:
            v["min"] = cpu
        for i in range(JANK):  # "exceeded 2^i ms", strictly
            if cpu > (1000000 << i):
                self.jank[i] += 1

    def row(self):
        v = self.v
        return [v[f] for f in self.FIELDS] + self.jank + [self.discarded]


class Frame:
    def __init__(self, level, groups, tsc, it):
        self.level, self.groups, self.tsc, self.iter = level, groups, tsc, it
        self.cpu_id = 0


class Model:
    """One thread's accounting as docs/accounting.md states it (measured CPU time)."""

    def __init__(self, hz, percpu):
        self.hz = hz
        self.k = hz // 10 ** 9           # ticks per ns
        self.tsc, self.cpu = 1000000 * self.k, 1000  # what the driver starts from
        self.active = {g for a, f in FUNCS.values() for g in (a, f) if g}
        self.stack = []                  # the runtime's shadow stack (with undetected dead)
        self.running = {}                # group -> iteration whose stopwatch holds it
        self.iter = 0
        self.event = None                # None, "explicit", "implicit"
        self.implicit_frame = 0
        self.begin_tsc = self.begin_cpu = 0
        self.off = 0                     # off-CPU ticks settled, for implicit events
        self.pending = 0                 # off-CPU ticks not yet settled (no hook since)
        self.desched = False             # rseq_cs cleared: the next hook settles
        self.percpu = percpu             # the same-CPU check applies (PERFGROUP_TSC=cpu)
        self.cpu_id = 0                  # the CPU the thread runs on
        self.m_cpu_id = 0                # the CPU at the last reading
        self.imp_off = 0
        self.ev = {}                     # group -> [recent, acts, discarded, off]
        self.nest = []
        self.totals = {}
        self.refused = 0

    def ns(self, ticks):
        if self.hz == 10 ** 9:
            return ticks
        return int(float(ticks) * 1e9 / float(self.hz))

    def groups(self, fn):
        a, f = FUNCS[fn]
        gs = [g for g in (a, f if f != a else "") if g] + [fn + "()"]
        return [g for g in gs if g in self.active]

    # ---- time -------------------------------------------------------------------------
    def run(self, ns):
        self.tsc += ns * self.k
        self.cpu += ns

    def sleep(self, ns):
        # descheduled: the next reading settles it
        self.tsc += ns * self.k
        self.pending += ns * self.k
        self.desched = self.desched or ns > 0

    def settle(self):
        """A hook or a cold path that finds the thread descheduled reads the CPU clock."""
        if self.desched:
            self.cpu_read()

    def cpu_read(self):
        """A reading of the CPU clock (re-arms): the off-CPU time since the last one goes to
        the thread's total and to the groups of every stopwatch of the current iteration
        on the shadow stack (those live across it) for the event — nothing to them where
        the same-CPU check applies and the thread is on another CPU than at that reading."""
        self.desched = False
        self.off += self.pending
        moved = self.percpu and self.cpu_id != self.m_cpu_id
        if self.percpu:
            self.m_cpu_id = self.cpu_id
        if self.pending and not moved:
            for f in self.stack:
                if f.groups and f.iter == self.iter:
                    for g in f.groups:
                        self.ev.setdefault(g, [0, 0, 0, 0])[3] += self.pending
        self.pending = 0

    def ok(self, f, delta):
        """A stopwatch is kept unless its counter went backwards or, where the same-CPU
        check applies, it ends on another CPU than it started on."""
        return delta >= 0 and not (self.percpu and f.cpu_id != self.cpu_id)

    # ---- events ---------------------------------------------------------------------------
    def open(self, kind):
        self.iter += 1
        self.ev = {}
        self.event = kind
        if kind == "explicit":
            self.cpu_read()
        self.begin_tsc = self.tsc
        self.begin_cpu = self.cpu
        self.imp_off = self.off

    def charge(self, g, delta, ok, finished):
        s = self.ev.setdefault(g, [0, 0, 0, 0])
        if finished:
            self.running[g] = 0
        if ok:
            s[0] += delta
            s[1] += finished
        else:
            s[2] += 1

    def commit(self, cpu):
        cycles = self.tsc - self.begin_tsc
        ok = cycles > 0
        top = self.totals.setdefault("top", Totals())
        if ok:
            cpu = min(cpu, self.ns(cycles))  # at most the event's wall time (clamped, counted)
            top.add(cycles, cpu, self.ns(cycles), 1, 0)
        else:
            top.discarded += 1
        for g, (recent, acts, disc, off) in self.ev.items():
            if recent == 0 and acts == 0 and disc == 0:
                continue
            tot = self.totals.setdefault(g, Totals())
            if not ok or recent > cycles:
                tot.discarded += max(acts, 1) + disc
                continue
            gwall = self.ns(recent)
            gcpu = self.ns(max(0, recent - off))
            tot.add(recent, min(gcpu, gwall, cpu), gwall, acts, disc)
        self.ev = {}
        self.event = None
        self.iter += 1

    def implicit_commit(self):
        wall = self.tsc - self.begin_tsc
        on = wall - (self.off - self.imp_off)
        self.commit(self.ns(0 if wall <= 0 or on <= 0 else min(on, wall)))

    def explicit_commit(self):
        self.cpu_read()
        self.commit(max(0, self.cpu - self.begin_cpu))

    def close(self):
        if self.event == "explicit":
            self.explicit_commit()
        elif self.event == "implicit":
            self.implicit_commit()

    # ---- the hooks ------------------------------------------------------------------------
    def resync(self, keep):
        """Frames at index >= keep skipped their exits: dropped, never charged."""
        if keep >= len(self.stack):
            return
        for f in self.stack[keep:]:
            for g in f.groups:
                if self.running.get(g) == f.iter:
                    self.running[g] = 0
        del self.stack[keep:]
        if self.event == "implicit" and self.implicit_frame >= keep:
            self.settle()
            self.implicit_commit()

    def enter(self, level, fn):
        """Returns the frame (the token), or None."""
        keep = len(self.stack)
        while keep > 0 and self.stack[keep - 1].level >= level:
            keep -= 1  # deeper or the same call again: cannot be an ancestor
        self.resync(keep)
        act = self.groups(fn)
        if self.event is None and act:
            self.settle()
            self.open("implicit")
            self.implicit_frame = len(self.stack)
        mine = [g for g in act if self.running.get(g) != self.iter]
        if not mine:
            return None  # re-entry: every group already has its stopwatch
        for g in mine:
            self.running[g] = self.iter
        self.settle()
        f = Frame(level, mine, self.tsc, self.iter)
        f.cpu_id = self.cpu_id
        self.stack.append(f)
        return f

    def exit(self, f):
        if f is None or f not in self.stack:
            return  # token 0, or a frame a resync dropped
        idx = self.stack.index(f)
        self.settle()
        self.resync(idx + 1)
        if f.iter == self.iter:
            for g in f.groups:
                self.charge(g, self.tsc - f.tsc, self.ok(f, self.tsc - f.tsc), 1)
        del self.stack[idx:]
        if self.event == "implicit" and idx == self.implicit_frame:
            self.implicit_commit()

    # ---- the event API --------------------------------------------------------------------
    def event_begin(self):
        if self.event == "explicit":
            return
        self.settle()
        if self.event == "implicit":
            self.implicit_commit()
        self.open("explicit")

    def event_end(self):
        if self.event == "explicit":
            # the frames it ends inside are never charged: stale before the end reading, so
            # the off-CPU time it settles is none of their groups'
            for f in self.stack:
                if f.iter == self.iter:
                    f.iter = 0
            self.settle()
            self.explicit_commit()

    def nested_begin(self):
        # one reading ends the outer event's first part and its stopwatches: an explicit
        # event's own (the CPU clock), taken first
        explicit = self.event == "explicit"
        if explicit:
            self.cpu_read()
        else:
            self.settle()
        self.nest.append((self.event, self.implicit_frame, len(self.stack), self.iter))
        if self.event is not None:
            for f in self.stack:  # charged up to here, no activation yet
                if f.groups and f.iter == self.iter:
                    for g in f.groups:
                        self.charge(g, self.tsc - f.tsc, self.ok(f, self.tsc - f.tsc), 0)
            if explicit:
                self.commit(max(0, self.cpu - self.begin_cpu))
            else:
                self.close()
        else:
            self.iter += 1

    def nested_end(self):
        if not self.nest:
            return
        self.settle()
        self.close()
        kind, imp, depth, it = self.nest.pop()
        self.iter += 1
        if kind is not None:
            if kind == "implicit":
                self.cpu_read()  # outside the hooks: a real begin
            self.open(kind)
            if kind == "implicit":
                self.implicit_frame = imp
            for f in self.stack[:depth]:
                if f.groups and f.iter == it:
                    f.iter, f.tsc, f.cpu_id = self.iter, self.tsc, self.cpu_id
                    for g in f.groups:
                        self.running[g] = self.iter

    def fork_child(self, tokens):
        """The child: every total from zero; an open event and its stopwatches start over.
        Returns it and its copy of `tokens` (the frames of the functions it is in)."""
        c, tokens = copy.deepcopy((self, tokens))
        c.totals, c.refused = {}, 0
        for f in c.stack:
            f.tsc, f.cpu_id = c.tsc, c.cpu_id
        c.m_cpu_id = c.cpu_id
        c.desched = False
        c.ev = {}
        c.pending = 0  # the child's CPU clock is read anew at the fork
        if c.event is not None:
            c.begin_tsc, c.begin_cpu, c.imp_off = c.tsc, c.cpu, c.off
        return c, tokens

    def handler(self, a, b):
        """A signal while the runtime is idle: two grouped functions, measured as any code."""
        self.desched = True  # a signal delivery clears rseq_cs
        t0 = self.enter(HANDLER_LEVEL, "h0")
        self.run(a)
        t1 = self.enter(HANDLER_LEVEL + 1, "h1")
        self.run(b)
        self.exit(t1)
        self.exit(t0)

    def snapshot(self):
        return {g: t.row() for g, t in self.totals.items()
                if t.v["events"] or t.discarded or t.v["acts"]}


# ---- schedules ------------------------------------------------------------------------------

def generate(rng):
    """A random schedule the driver can perform (a longjmp only to a live setjmp)."""
    hz = rng.choice([1, 2, 3]) * 10 ** 9
    ops = [("H", hz, rng.choice([0, 1]))]
    if rng.random() < 0.3:
        ops.append(("A",))
    stack = []          # real frames: nest depth at their entry
    nest = []           # real stack depth at each nested loop's begin
    jmps = {}           # level -> nest depth of its live setjmp
    dirty = False       # frames skipped by a longjmp not yet found by the runtime
    forks = 0
    n = rng.randint(5, 120)
    big = rng.random() < 0.2
    for _ in range(n):
        level = len(stack)
        choices = ["E", "E", "R", "R", "S", "B", "N", "J", "G", "P", "D", "C"]
        if stack and stack[-1] == len(nest):
            choices += ["X", "X", "X"]
        if len(nest) < 4:
            choices.append("L")
        if nest and nest[-1] == level:
            choices.append("M")
        targets = [lv for lv, nd in jmps.items() if lv <= level and nd == len(nest)]
        if targets:
            choices.append("K")
        if forks < 2:
            choices.append("F")
        c = rng.choice(choices)
        if c == "P":
            cands = ["E", "B", "N", "L"]
            if "X" in choices:
                cands.append("X")
            if "M" in choices:
                cands.append("M")
            ops.append(("P", rng.choice([0, 0, 1, 2, 3, 4, 6])))
            c = rng.choice(cands)
        if c == "E":
            if level >= 40:
                continue
            ops.append(("E", rng.randrange(len(FIDX))))
            stack.append(len(nest))
            dirty = False
        elif c == "X":
            ops.append(("X",))
            stack.pop()
            jmps = {lv: nd for lv, nd in jmps.items() if lv <= len(stack)}
            dirty = False
        elif c == "R":
            ops.append(("R", rng.choice([1, 3, 10, 100, 1000, 2500000 if big else 50])))
        elif c == "S":
            ops.append(("S", rng.choice([1, 7, 100, 1000])))
        elif c in "BNDL":
            ops.append((c,))
            if c == "L":
                nest.append(level)
        elif c == "M":
            ops.append(("M",))
            nest.pop()
        elif c == "C":
            ops.append(("C", rng.choice([0, 1])))
        elif c == "J":
            ops.append(("J",))
            jmps[level] = len(nest)
        elif c == "K":
            lv = rng.choice(targets)
            ops.append(("K", lv))
            del stack[lv:]
            jmps = {l2: nd for l2, nd in jmps.items() if l2 <= lv}
            dirty = True
        elif c == "G":
            if not dirty:
                ops.append(("G", rng.choice([0, 1, 5, 100]), rng.choice([0, 2, 50])))
        elif c == "F":
            ops.append(("F",))
            forks += 1
    return ops


def simulate(ops, percpu):
    """What the model expects the driver to print: [(path, snapshot, point_refusals)]."""
    out = []

    def go(m, tokens, path, pc):
        while pc < len(ops):
            o = ops[pc]
            pc += 1
            c = o[0]
            if c == "P":
                continue  # a signal inside the runtime: refused (counted from the driver)
            if c == "A":
                m.active.add("f5()")
            elif c == "E":
                tokens.append(m.enter(len(tokens) + 1, FIDX[o[1]]))
            elif c == "X":
                m.exit(tokens.pop())
            elif c == "R":
                m.run(o[1])
            elif c == "S":
                m.sleep(o[1])
            elif c == "B":
                m.event_begin()
            elif c == "N":
                m.event_end()
            elif c == "L":
                m.nested_begin()
            elif c == "M":
                m.nested_end()
            elif c == "C":
                m.cpu_id = o[1]
            elif c == "J":
                pass
            elif c == "K":
                del tokens[o[1]:]  # their exits never run
            elif c == "G":
                m.handler(o[1], o[2])
            elif c == "D":
                out.append((path, m.snapshot()))
            elif c == "F":
                go(*m.fork_child(tokens), path + "c", pc)
                path += "p"
        out.append((path, m.snapshot()))

    go(Model(ops[0][1], percpu), [], "p", 1)
    return out


def read_schedule(path):
    ops = []
    for line in open(path):
        w = line.split("#")[0].split()
        if w:
            ops.append((w[0],) + tuple(int(x) for x in w[1:]))
    return ops


def render(ops):
    return "".join(" ".join(str(x) for x in o) + "\n" for o in ops)


def parse(text):
    """The driver's output: [(path, snapshot, refused, point signals)]."""
    procs = []
    for line in text.splitlines():
        w = line.split()
        if w[0] == "mask":
            procs.append(["mask", int(w[1])])
        elif w[0] == "proc":
            procs.append([w[1], {}, 0, 0])
        elif w[0] == "g":
            procs[-1][1][w[1]] = [int(x) for x in w[2:]]
        elif w[0] == "refused":
            procs[-1][2] = int(w[1])
        elif w[0] == "points":
            procs[-1][3] = int(w[1])
    return procs


COLS = Totals.FIELDS + ["jank%d" % i for i in range(JANK)] + ["discarded"]


def compare(ops, driver):
    """None if the runtime agrees with the model, else a description of the difference."""
    env = dict(os.environ, PERFGROUP_SAMPLE_MS="0")
    env.pop("PERFGROUP_TSC", None)
    if len(ops[0]) > 2 and ops[0][2] == 1:
        env["PERFGROUP_TSC"] = "cpu"  # the same-CPU check
    r = subprocess.run([driver], input=render(ops), capture_output=True, text=True,
                       timeout=60, env=env)
    if r.returncode != 0:
        return "driver failed (%d): %s" % (r.returncode, r.stderr.strip()[-2000:])
    got = parse(r.stdout)
    if not got or got[0][0] != "mask":
        return "driver printed no mask line"
    want = simulate(ops, got.pop(0)[1] == 1)
    if [g[0] for g in got] != [w[0] for w in want]:
        return "processes differ: %s vs model %s" % ([g[0] for g in got], [w[0] for w in want])
    diffs = []
    for (path, snap, refused, points), (_, model) in zip(got, want):
        # a signal at a point inside the runtime: both of its handler's hooks refused
        if refused != 2 * points:
            diffs.append("%s: refused %d, expected %d (%d signals inside the runtime)"
                         % (path, refused, 2 * points, points))
        for g in sorted(set(snap) | set(model)):
            a, b = snap.get(g), model.get(g)
            if a != b:
                if a is None or b is None:
                    diffs.append("%s: group %s runtime %s model %s" % (path, g, a, b))
                    continue
                d = ["%s %d vs %d" % (COLS[i], a[i], b[i]) for i in range(len(a)) if a[i] != b[i]]
                diffs.append("%s: group %s (runtime vs model): %s" % (path, g, ", ".join(d)))
    return "\n".join(diffs) or None


def shrink(ops, driver):
    """The failing schedule with every operation removed that it can fail without."""
    i = 1
    while i < len(ops):
        trial = ops[:i] + ops[i + 1:]
        try:
            err = compare(trial, driver)
        except Exception:  # an invalid schedule (a longjmp without its setjmp)
            err = None
        if err and not err.startswith("driver failed"):
            ops = trial
        else:
            i += 1
    return ops


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    driver = args.pop(0)
    seed0 = int(os.environ.get("PERFGROUP_MODEL_SEED", random.SystemRandom().randrange(1 << 30)))
    count = int(os.environ.get("PERFGROUP_MODEL_SCHEDULES", "3000"))
    show = False
    while args:
        a = args.pop(0)
        if a == "--seed":
            seed0, count = int(args.pop(0)), 1
        elif a == "--count":
            count = int(args.pop(0))
        elif a == "--show":
            show = True
    cases = os.path.join(os.path.dirname(os.path.abspath(__file__)), "model-cases")
    for name in sorted(os.listdir(cases)):  # regression schedules first
        ops = read_schedule(os.path.join(cases, name))
        err = compare(ops, driver)
        if err:
            print("%s: the runtime disagrees with the model:\n%s" % (name, err))
            return 1
    print("model: %d schedules from seed %d" % (count, seed0))
    for i in range(count):
        seed = seed0 + i
        ops = generate(random.Random(seed))
        if show:
            sys.stdout.write(render(ops))
            print(simulate(ops, len(ops[0]) > 2 and ops[0][2] == 1))
        err = compare(ops, driver)
        if err:
            if not err.startswith("driver failed"):
                ops = shrink(ops, driver)
                err = compare(ops, driver)
            name = "model-fail-%d.txt" % seed
            with open(name, "w") as f:
                f.write(render(ops))
            print("seed %d: the runtime disagrees with docs/accounting.md's model "
                  "(schedule in %s; rerun: model.py DRIVER --seed %d --show):\n%s"
                  % (seed, os.path.abspath(name), seed, err))
            return 1
    print("ok model: %d schedules agree" % count)
    return 0


if __name__ == "__main__":
    sys.exit(main())
