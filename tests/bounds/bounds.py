# SPDX-License-Identifier: MIT
"""tests/bounds/bounds.py — the bound of every CPU/time assertion of the Python tests, from the
error model of docs/accounting.md ("Error bounds: what a test may assume"). The same formulas
and constants as bounds.h (the C tests'); a change here is a change there and in the page.

    cfg = Config.of(env)                      # measured (rseq) or estimated, sampler period
    o0 = Obs.of(pid); ...; o1 = Obs.of(pid)   # a process's CPU, wall, involuntary switches
    bound = measured(truth_ns, o0, o1)        # or shared(...), sampled(cfg, wall_ns), ...
    within(value, truth, bound, what)         # None, or the failure text with the terms
"""
import os
import time

MS = 1_000_000
# the counter's frequency before its first refinement (a process's first 50 ms), relative
FREQ = 0.02
# the hooks' own work between the reference reads and the hook's counter read, per end (ns)
HOOK_NS = 50_000
# the reference's step at a preemption on a VM, per involuntary context switch (ns)
STEP_NS = 100_000


def rseq_available():
    """glibc >= 2.35 registers rseq for every thread: the runtime measures CPU time."""
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        return ctypes.c_uint.in_dll(libc, "__rseq_size").value >= 16
    except (OSError, ValueError, AttributeError):
        return False


class Config:
    def __init__(self, measured, period_ns):
        self.measured = measured
        self.period_ns = period_ns

    @classmethod
    def of(cls, env=None):
        """The configuration a program run with `env` (default: ours) gets."""
        env = os.environ if env is None else env
        cpu = env.get("PERFGROUP_CPU", "")
        ms = env.get("PERFGROUP_SAMPLE_MS", "")
        return cls(rseq_available() and cpu not in ("getcpu", "none"),
                   (int(ms) if ms else 10) * MS)


def steal_ns():
    """Time the hypervisor stole from the machine's vCPUs (/proc/stat, every CPU), ns; 0 if
    unknown: a stopwatch counts it, the thread's CPU clock does not (bounds.h's pg_steal_ns)."""
    try:
        with open("/proc/stat") as f:
            v = f.readline().split()
        return int(v[8]) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0


class Obs:
    """A process's (or thread's) wall time, CPU time and involuntary context switches, read
    from /proc/<pid>[/task/<tid>]/stat and status (the thread's CPU clock, in clock ticks:
    ns here, at USER_HZ resolution)."""
    def __init__(self, wall, cpu, nivcsw, steal=0):
        self.wall, self.cpu, self.nivcsw, self.steal = wall, cpu, nivcsw, steal

    @classmethod
    def of(cls, pid="self"):
        wall = time.monotonic_ns()
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        hz = os.sysconf("SC_CLK_TCK")
        cpu = (int(fields[11]) + int(fields[12])) * 1_000_000_000 // hz
        nivcsw = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("nonvoluntary_ctxt_switches:"):
                    nivcsw = int(line.split()[1])
        return cls(wall, cpu, nivcsw, steal_ns())


def off_cpu(a, b):
    return max(0, (b.wall - a.wall) - (b.cpu - a.cpu))


def measured(truth, a, b):
    """Measured CPU time (rseq) of a stretch whose truth is `truth` between a and b."""
    iv = b.nivcsw - a.nivcsw
    st = b.steal - a.steal + 1_000_000_000 // os.sysconf("SC_CLK_TCK") if b.steal > a.steal else 0
    return (int(truth * FREQ) + 2 * HOOK_NS + iv * STEP_NS + st,
            f"measured: freq {int(truth * FREQ)} + hooks 2 x {HOOK_NS} + {iv} preemptions x {STEP_NS}"
            f" + stolen {st} ns")


def shared(truth, a, b):
    """A group's estimated share of an explicit event (no rseq): + the off-CPU time in it."""
    m, why = measured(truth, a, b)
    off = off_cpu(a, b)
    return off + m, f"shared out: off-CPU {off} + {why}"


def sampled(cfg, wall):
    """An implicit event of wall time W estimated by the sampler (no rseq), with the sampler
    on time (G = P: readings P apart). bounds.h's pg_bound_sampled bounds G from the sampler
    thread's own CPU time and run-queue waits (pg_sampler_gap), which a program sees of
    itself; a caller here observes another process after the fact and cannot."""
    b = wall
    if cfg.period_ns > 0:
        b = min(b, cfg.period_ns // 4 + cfg.period_ns)
    return (b + int(wall * FREQ),
            f"sampled: min(W {wall}, P/4 + P at P {cfg.period_ns})")


def sampled_run(cfg, a, b):
    """A run of back-to-back sampled implicit events shorter than P between a and b."""
    off, w = off_cpu(a, b), b.wall - a.wall
    r = cfg.period_ns + 2 * off if cfg.period_ns > 0 else w
    return (r + int(w * FREQ), f"sampled run: P {cfg.period_ns} + 2 x off-CPU {off}")


def within(value, truth, bound, what):
    """None if |value - truth| <= bound, else the failure text with the bound's terms."""
    b, why = bound
    if truth - b <= value <= truth + b:
        return None
    return f"{what}: {value} vs {truth} +- {b} ({why})"


def scaled_away(t):
    """A Gecko stats-mode thread `t`: per (event name, group), the self time (ms) that the
    converter's samples leave out by design (docs/converter.md "Samples, stats mode"): where
    an event's groups' self times add up to more than its CPU clock (the stopwatches count time stolen from the
    VM, the CPU clock does not: docs/accounting.md "Error bounds", stolen), each group's is
    scaled to fit, self x (1 - cpu / sum). From the event markers (self to the microsecond).
    (Python only: it reads the converter's output, which no C test does.)"""
    strings, sch = t["stringTable"], t["markers"]["schema"]
    away = {}
    for m in t["markers"]["data"]:
        d = m[sch["data"]]
        if not isinstance(d, dict) or d.get("type") != "PerfgroupEvent" or "self" not in d:
            continue
        selfs = {}
        for item in d["self"].split(", "):
            g, v, unit = item.rsplit(" ", 2)
            if g != "top" and unit == "ms":
                selfs[g] = float(v)
        total = sum(selfs.values())
        if total > d["cpu"] > 0:
            ev = strings[m[sch["name"]]]
            for g, v in selfs.items():
                away[(ev, g)] = away.get((ev, g), 0.0) + v * (1 - d["cpu"] / total)
    return away
