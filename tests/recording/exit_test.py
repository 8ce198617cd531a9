#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""recording.exit.<runtime> — an event open when the process ends reaches the file (issue 19).

exit_test.py CONVERTER PROGRAM: runs PROGRAM (prog/exit_prog.c, linked with the shared or
the static runtime) ending by a return from main, exit() and quick_exit(), recorded, and
checks with `perfgroup-convert --summary --json` that its main thread has the one event, with
at least the CPU the program measured around its work (less its bound: tests/bounds, from
docs/accounting.md "Error bounds"), and that the file was closed.
"""
import json, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bounds"))
import bounds  # noqa: E402

WORK_MS = 30


def main():
    conv, prog = sys.argv[1], sys.argv[2]
    failures = 0
    with tempfile.TemporaryDirectory(prefix="pg-exit-") as d:
        for how in ("return", "exit", "quick_exit"):
            out = os.path.join(d, how + ".pgm")
            env = dict(os.environ, PERFGROUP_OUTPUT=out, PERFGROUP_BUFFER="1M",
                       PERFGROUP_CHUNK="4K")
            st0 = bounds.steal_ns()
            r = subprocess.run([prog, how[0], str(WORK_MS)], env=env, capture_output=True,
                               text=True, timeout=60)
            st1 = bounds.steal_ns()
            f = r.stdout.split()
            truth_ns = int(f[1]) if r.stdout.startswith("cpu_ns") and len(f) >= 6 else 0
            truth_ms = truth_ns / 1e6
            cfg = bounds.Config.of(env)
            # the program's own reads around the work: o0 at 0, o1 after it
            o0, o1 = bounds.Obs(0, 0, 0, st0), bounds.Obs(int(f[3]) if truth_ns else 0, truth_ns,
                                                         int(f[5]) if truth_ns else 0, st1)
            bound_ns, bwhy = (bounds.measured(truth_ns, o0, o1) if cfg.measured
                              else bounds.sampled(cfg, o1.wall))
            s = subprocess.run([conv, out, "--summary", "--json"], capture_output=True,
                               text=True, timeout=60)
            why = ""
            try:
                p = json.loads(s.stdout)["processes"][0]
                main_t = [t for t in p["threads"] if t["tid"] == p["pid"]]
                ev = main_t[0]["events"] if main_t else 0
                app = [g for g in (main_t[0]["groups"] if main_t else []) if g["group"] == "app"]
                cpu = app[0]["cpu_ms"] if app else 0.0
                if r.returncode != 0:
                    why = f"program exit {r.returncode}"
                elif not p["complete"]:
                    why = "file not closed"
                elif ev != 1 or cpu < (truth_ns - bound_ns) / 1e6:
                    why = (f"main thread: {ev} events, app {cpu:.3f} ms of {truth_ms:.3f} ms "
                           f"- {bound_ns / 1e6:.3f} ({bwhy})")
            except (ValueError, KeyError, IndexError) as e:
                why = f"summary unreadable ({e}): {s.stderr.strip()[:300]}"
            print(f"{'FAIL' if why else 'ok  '} {os.path.basename(prog)} {how}: {why or 'event kept'}")
            failures += bool(why)
    print(f"{3 - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
