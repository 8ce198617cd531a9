#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""runtime.threads_mem — resident memory per thread near plain (issue 34).

threads_mem_test.py PROGRAM (test_threads_mem.c): 1,000 threads alive at once, each having
run 10 events in two groups; the growth of the resident set (the larger of: all alive, all
exited and joined), minus the same with threads that make no perfgroup call (the same
binary, "plain": threads, stacks and libc alike), per thread, must stay within docs/architecture.md's 16 KiB (the entry's first two pages and
one page of its totals: 12 KiB; one page of slack for the entry slabs' and the kernel's
rounding). Page counts, not timings: the same on a busy machine.
With a stats recording (the default buffer), the same threads each hold a chunk at once: a
thread's first chunk is faulted in as it fills and the file's mapping has no readahead
(docs/file-format.md "Chunks"), so a thread that writes its 10 events adds a page or two, not
its 64 KiB chunk: bound 24 KiB (16 + 8: the chunk's first page, the slow path's stack, its
writer and totals slots) against the same plain threads with the recording open.
"""
import tempfile
import os, subprocess, sys

N = 1000
BOUND_KB = 16
BOUND_REC_KB = 24


def growth(prog, mode, rec=None):
    env = dict(os.environ)
    env.pop("PERFGROUP_OUTPUT", None)
    if rec:
        env.update(PERFGROUP_OUTPUT=rec, PERFGROUP_MODE="stats")
        env.pop("PERFGROUP_BUFFER", None)
        env.pop("PERFGROUP_CHUNK", None)
    r = subprocess.run([prog, str(N), mode], env=env, capture_output=True, text=True, timeout=120)
    w = r.stdout.split()
    if r.returncode != 0 or len(w) != 6:
        print(f"FAIL {prog} {mode}: exit {r.returncode} {r.stdout!r} {r.stderr[:300]!r}")
        sys.exit(1)
    return max(int(w[3]), int(w[5])) - int(w[1])


def main():
    prog = sys.argv[1]
    on = [growth(prog, "grouped") for _ in range(3)]
    off = [growth(prog, "plain") for _ in range(3)]
    per = (min(on) - min(off)) / N
    ok = per <= BOUND_KB
    print(("ok   " if ok else "FAIL ") +
          f"{N} threads: resident growth {min(on)} KiB with the runtime, {min(off)} KiB without "
          f"(runs {on} / {off}): {per:.1f} KiB per thread (bound {BOUND_KB})")
    with tempfile.TemporaryDirectory(prefix="pg-mem-") as d:
        rec = os.path.join(d, "mem.pgm")
        ron = [growth(prog, "grouped", rec) for _ in range(3)]
        roff = [growth(prog, "plain", rec) for _ in range(3)]
    rper = (min(ron) - min(roff)) / N
    rok = rper <= BOUND_REC_KB
    print(("ok   " if rok else "FAIL ") +
          f"{N} threads recording (stats, default buffer): resident growth {min(ron)} KiB, "
          f"{min(roff)} KiB without perfgroup calls (runs {ron} / {roff}): {rper:.1f} KiB per "
          f"thread (bound {BOUND_REC_KB})")
    return 0 if ok and rok else 1


if __name__ == "__main__":
    sys.exit(main())
