#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""recording.threads3000 — thousands of threads in one recording (issue 34).

threads_test.py CONVERTER PROGRAM N E: runs PROGRAM (bench/threads/threads.c built with a
plugin, `held N E`: N threads with 64 KiB stacks started together behind a barrier, E events
"step" each, calling one grouped function, all N inside the recording at once after their
first event (a second barrier), joined together) recorded with the DEFAULT buffer and
chunk size (PERFGROUP_OUTPUT alone), and checks that every thread's events are in the file:
the Chrome trace (read from the file's chunks, not from the whole-run totals) has N threads
with exactly E "step" events each; no record was dropped; no "no room" warning at close.

threads_test.py CONVERTER PROGRAM N E OVER: then OVER threads (more than the default buffer
holds a chunk for): the warning at close names a buffer; what was lost is counted
(records_dropped) and the whole-run totals still hold every thread's events; with the named
buffer, no warning and every thread's events are in the file.
"""
import collections
import re
import json
import os
import subprocess
import sys
import tempfile

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


def record(d, prog, n, e, buffer=None):
    """Runs `held n e` recorded (the default buffer unless given): (stderr, summary or None)."""
    out = os.path.join(d, "t.pgm")
    if os.path.exists(out):
        os.unlink(out)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFGROUP_")}
    env["PERFGROUP_OUTPUT"] = out
    if buffer:
        env["PERFGROUP_BUFFER"] = buffer
    r = subprocess.run([prog, "held", str(n), str(e)], env=env, capture_output=True,
                       text=True, timeout=600)
    check(r.returncode == 0, f"{n} threads ran (buffer {buffer or 'default'}): exit "
          f"{r.returncode} {r.stderr.strip()[:300]}")
    s = subprocess.run([sys.argv[1], out, "--summary", "--json", "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    check(s.returncode == 0, f"summary: {s.stderr.strip()[:300]}")
    return r.stderr, json.loads(s.stdout)["processes"][0] if s.returncode == 0 else None


def all_kept(conv, d, err, p, n, e):
    """Every thread's events in the file: no warning, nothing dropped, N threads with E
    "step" events each in the Chrome trace."""
    out = os.path.join(d, "t.pgm")
    check("no room" not in err, f"{n} threads: no warning at close: {err.strip()[:300]!r}")
    if p:
        check(p["records_dropped"] == 0 and p["events_kept"] == n * e,
              f"{n} threads: records dropped {p['records_dropped']} (0), events kept in the "
              f"file's chunks {p['events_kept']} ({n * e})")
    js = os.path.join(d, "t.json")
    c = subprocess.run([conv, out, "--format", "chrome", "-o", js, "--no-progress"],
                       capture_output=True, text=True, timeout=300)
    check(c.returncode == 0, f"chrome: {c.stderr.strip()[:300]}")
    if c.returncode == 0:
        tr = json.load(open(js))
        evs = tr["traceEvents"] if isinstance(tr, dict) else tr
        per = collections.Counter(ev["tid"] for ev in evs
                                  if ev.get("ph") == "X" and ev.get("name") == "step")
        short = [t for t, k in per.items() if k != e]
        check(len(per) == n and not short,
              f"{len(per)} threads with \"step\" events in the trace ({n}), "
              f"{len(short)} of them without exactly {e}")


def main():
    conv, prog, n, e = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    over = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    with tempfile.TemporaryDirectory(prefix="pg-threads-") as d:
        err, p = record(d, prog, n, e)
        all_kept(conv, d, err, p, n, e)
        if over:
            err, p = record(d, prog, over, e)
            m = re.search(r"(\d+) threads found no room.*PERFGROUP_BUFFER=(\d+K) would have held", err)
            check(m is not None, f"{over} threads, the default buffer: the warning names a "
                  f"buffer: {err.strip()[:300]!r}")
            if p:
                check(p["records_dropped"] > 0 and p["events"] == over * e and
                      p["totals"] == "whole run" and p["totals_lost"] == 0,
                      f"{over} threads: {p['records_dropped']} records dropped, counted; the "
                      f"whole-run totals hold every thread's events ({p['events']} of {over * e})")
            if m:
                err, p = record(d, prog, over, e, m.group(2))
                all_kept(conv, d, err, p, over, e)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
