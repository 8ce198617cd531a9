#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""recording.exit.<runtime> — an event open when the process ends reaches the file (issue 19).

exit_test.py CONVERTER PROGRAM: runs PROGRAM (prog/exit_prog.c, linked with the shared or
the static runtime) ending by a return from main, exit() and quick_exit(), recorded, and
checks with `perfgroup-convert --summary --json` that its main thread has the one event, with
at least 90 % of the CPU the program measured around its work, and that the file was closed.
"""
import json, os, subprocess, sys, tempfile

WORK_MS = 30


def main():
    conv, prog = sys.argv[1], sys.argv[2]
    failures = 0
    with tempfile.TemporaryDirectory(prefix="pg-exit-") as d:
        for how in ("return", "exit", "quick_exit"):
            out = os.path.join(d, how + ".pgm")
            env = dict(os.environ, PERFGROUP_OUTPUT=out, PERFGROUP_BUFFER="1M",
                       PERFGROUP_CHUNK="4K")
            r = subprocess.run([prog, how[0], str(WORK_MS)], env=env, capture_output=True,
                               text=True, timeout=60)
            truth_ms = int(r.stdout.split()[1]) / 1e6 if r.stdout.startswith("cpu_ns") else 0
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
                elif ev != 1 or cpu < 0.9 * truth_ms:
                    why = f"main thread: {ev} events, app {cpu:.3f} ms of {truth_ms:.3f} ms"
            except (ValueError, KeyError, IndexError) as e:
                why = f"summary unreadable ({e}): {s.stderr.strip()[:300]}"
            print(f"{'FAIL' if why else 'ok  '} {os.path.basename(prog)} {how}: {why or 'event kept'}")
            failures += bool(why)
    print(f"{3 - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
