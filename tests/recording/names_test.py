#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""recording.names — thread names in the file and the profile (issue 19).

names_test.py CONVERTER CHECKER PROGRAM: runs PROGRAM (prog/names_prog.c: an unnamed thread,
one named with pthread_setname_np before its first hook, one renamed with prctl after it has
recorded) recorded in stats and trace mode, converts each file to a Gecko profile, runs
tests/converter/check_profile.py on it (no thread without a name), and checks every worker's
name in the profile: its own, or "thread <tid>" when it has none.
"""
import json, os, subprocess, sys, tempfile


def main():
    conv, checker, prog = sys.argv[1:4]
    failures = 0
    with tempfile.TemporaryDirectory(prefix="pg-names-") as d:
        for mode in ("stats", "trace"):
            out = os.path.join(d, mode + ".pgm")
            env = dict(os.environ, PERFGROUP_OUTPUT=out, PERFGROUP_MODE=mode,
                       PERFGROUP_BUFFER="4M", PERFGROUP_CHUNK="4K")
            r = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=120)
            want = {}
            for line in r.stdout.split("\n"):
                if line.strip():
                    tid, _, name = line.partition(" ")
                    want[int(tid)] = name or "thread " + tid
            js = os.path.join(d, mode + ".json")
            c = subprocess.run([conv, out, "-o", js], capture_output=True, text=True, timeout=120)
            why = []
            if r.returncode != 0 or len(want) != 3:
                why.append(f"program exit {r.returncode}, {len(want)} workers")
            if c.returncode != 0:
                why.append("convert: " + c.stderr.strip()[:300])
            else:
                k = subprocess.run([sys.executable, checker, js], capture_output=True, text=True)
                if k.returncode != 0:
                    why.append("check_profile: " + (k.stdout + k.stderr).strip()[:500])
                prof = json.load(open(js))
                names = {}
                for t in prof["threads"]:
                    names[int(t["tid"])] = t["name"]
                for tid, name in want.items():
                    if names.get(tid) != name:
                        why.append(f"tid {tid}: {names.get(tid)!r}, expected {name!r}")
            print(f"{'FAIL' if why else 'ok  '} {mode}: {'; '.join(why) or sorted(want.values())}")
            failures += bool(why)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
