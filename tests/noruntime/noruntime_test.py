#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Objects compiled with a perfgroup plugin link and run WITHOUT the runtime (hooks doing
nothing), as a build helper linked without LIBS (SQLite's lemon) does; the same objects
linked with the runtime record. With the weak-hooks option the plugins declare the hooks weak
and guard every call; without it the bare link must fail (the test of the test).

For each corpus program given: compile once with the plugin (-c), then
  1. link with no -lperfgroup: must link, run, exit as the program says, write no trace;
  2. link the same object with the runtime: same stdout, and the trace is the corpus's
     expected trace (run_corpus.py's canonical form).
"""
import argparse
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus"))
from run_corpus import COMPILERS, canonical, directives, run  # noqa: E402


def check(a, src):
    d = directives(src)
    lang = "c++" if src.endswith(".cc") else "c"
    cc = COMPILERS[a.cc][lang]
    name = os.path.splitext(os.path.basename(src))[0]
    obj = os.path.join(a.workdir, name + ".o")
    if run([cc, a.opt, "-g", "-pthread", "-Wall", "-Wextra", "-Werror"] + shlex.split(a.plugin)
           + ["-fplugin-arg-perfgroup-" + o for o in d["options"] + ["weak-hooks"]] + d["cflags"]
           + ["-I" + i for i in a.include] + ["-c", src, "-o", obj]).returncode:
        return f"{name}: compile failed"
    nm = subprocess.run(["nm", obj], capture_output=True, text=True).stdout
    if not any(l.split()[-2:] == ["w", "__perfgroup_enter"] for l in nm.splitlines()):
        return f"{name}: __perfgroup_enter is not a weak undefined symbol of the object:\n{nm}"

    strong = os.path.join(a.workdir, name + ".strong.o")
    if run([cc, a.opt, "-pthread"] + shlex.split(a.plugin) + d["cflags"]
           + ["-I" + i for i in a.include] + ["-c", src, "-o", strong]).returncode:
        return f"{name}: compile without weak-hooks failed"
    if run([cc, a.opt, "-pthread", strong, "-o", strong + ".exe"]).returncode == 0:
        return f"{name}: without weak-hooks the object linked without the runtime"

    outs = {}
    rt = os.path.abspath(a.runtime)
    # A library that satisfies only weak references is dropped by --as-needed (Debian's
    # gcc default): the runtime is linked --no-as-needed (docs/plugins.md).
    live = ["-Wl,--push-state,--no-as-needed", rt, "-Wl,--pop-state",
            "-Wl,-rpath," + os.path.dirname(rt)]
    for kind, extra in (("bare", []), ("live", live)):
        exe = os.path.join(a.workdir, f"{name}.{kind}")
        trace = exe + ".trace"
        if os.path.exists(trace):
            os.unlink(trace)
        if run([cc, a.opt, "-pthread", obj, "-o", exe] + extra).returncode:
            return f"{name}: link ({kind}) failed"
        if kind == "bare":
            ldd = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
            if "perfgroup" in ldd:
                return f"{name}: the bare link depends on the runtime:\n{ldd}"
        p = run([exe], env=dict(os.environ, PERFGROUP_TEXT=trace), timeout=60,
                capture_output=True, text=True)
        sys.stdout.write(p.stdout + p.stderr)
        if p.returncode != d["exit"]:
            return f"{name}: {kind} run exited {p.returncode}, expected {d['exit']}"
        outs[kind] = p.stdout
        got = canonical(open(trace, encoding="utf-8").read()) if os.path.exists(trace) else ""
        if kind == "bare" and got:
            return f"{name}: the bare run traced something:\n{got}"
        if kind == "live":
            want = open(os.path.splitext(src)[0] + ".expected", encoding="utf-8").read()
            if got != want:
                return f"{name}: live trace differs from the corpus:\n--- want\n{want}--- got\n{got}"
    if outs["bare"] != outs["live"]:
        return f"{name}: stdout differs between bare and live runs"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cc", required=True, choices=sorted(COMPILERS))
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--opt", required=True)
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--workdir", required=True)
    ap.add_argument("programs", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    bad = [e for e in (check(a, os.path.abspath(s)) for s in a.programs) if e]
    for e in bad:
        print("FAIL: " + e)
    if not bad:
        print(f"PASS: {len(a.programs)} programs link and run without the runtime, record with it")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
