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
    node's self samples its group's self time / 1 ms (+-1 for the carried fraction), no
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


def main(argv):
    conv, pg, prog, gen, work = argv[:5]
    ff = os.environ.get("PERFGROUP_FF_IMPORT")
    os.makedirs(work, exist_ok=True)
    pgm = os.path.join(work, "self.pgm")
    if os.path.exists(pgm):
        os.unlink(pgm)
    env = dict(os.environ, PERFGROUP_OUTPUT=pgm)
    snap = {}
    for line in run([prog, "--record"], env).splitlines():
        name, self_ns, cpu_ns = line.split()
        snap[name] = (int(self_ns), int(cpu_ns))
    print("snapshot (self, charged ns):", snap)
    if set(snap) != {"top", "A", "B", "C"}:
        fail("the program printed %r" % snap)
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
    for g, pth in want_paths.items():
        n, want = counts.get(pth, 0), snap[g][0] / 1e6
        if abs(n - want) > 1.0:
            fail("gecko: %s: %d self samples, want %.2f (+-1)" % (" > ".join(pth), n, want))
    for pth in counts:
        if len(pth) >= 2 and pth[1] in "BC" and pth not in want_paths.values():
            fail("gecko: a path not measured: %r" % (pth,))
    if ff:
        out = run([ff, prof])
        if "importer console.error/warn: none" not in out:
            fail("Firefox Profiler import:\n" + out[-3000:])
        else:
            print("Firefox Profiler import: no warning, no error")

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
    with open(old3, "wb") as f:
        f.write(b)
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
