#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run the accuracy program recording to a file, then check that its final snapshot and
`perfgroup-convert --summary --json` of the recording agree on every group's CPU time,
jank histogram and longest event (one definition: CPU time per event).

usage: accuracy_summary.py CONVERT ACCURACY WORKDIR [accuracy args...]"""
import json, os, subprocess, sys

conv, prog, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
pgm, snap = os.path.join(work, "acc.pgm"), os.path.join(work, "snap.txt")
for p in (pgm, snap):
    if os.path.exists(p):
        os.unlink(p)
env = dict(os.environ, PERFGROUP_OUTPUT=pgm, PERFGROUP_MODE="stats")
r = subprocess.run([prog, "--snapshot", snap] + sys.argv[4:], env=env, stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT, text=True)
print(r.stdout)
if r.returncode != 0:
    sys.exit(r.returncode)
s = subprocess.run([conv, "--summary", "--json", pgm], stdout=subprocess.PIPE, text=True, check=True)
summary = json.loads(s.stdout)
proc = summary["processes"][0]
print("recording: cpu_time %s, tsc_scope %s" % (proc["cpu_time"], proc["tsc_scope"]))
rows = {g["group"]: g for g in summary["overall"]["groups"]}
bad = 0
for line in open(snap):
    f = line.split()
    name, cpu, longest, jank = f[0], int(f[1]), int(f[2]), [int(x) for x in f[3:]]
    if name == "top" or name not in "A B C N S J".split():
        continue
    g = rows.get(name)
    if g is None:
        print("FAIL: group %s not in the summary" % name)
        bad += 1
        continue
    got = (round(g["cpu_ms"] * 1e6), round(g["longest_ms"] * 1e6), g["jank"])
    want = (cpu, longest, jank)
    ok = got == want
    print("%s %s: snapshot cpu %d ns, longest %d ns, jank %s; summary %d, %d, %s" %
          ("ok" if ok else "FAIL:", name, cpu, longest, jank, got[0], got[1], got[2]))
    bad += not ok
print("%s: snapshot vs summary, %d group(s) differ" % ("FAIL" if bad else "PASS", bad))
sys.exit(1 if bad else 0)
