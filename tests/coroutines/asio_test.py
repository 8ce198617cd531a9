#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""asio_test.py — build tests/coroutines/asio_echo.cc with a plugin (default=app, plus the
given plugin options), run it with the runtime's text trace and check: exit 0 (the program
checks its own echoes and exceptions), every thread's trace balanced (each exit closes the
innermost open pair of the same function, nothing left open), and the coroutines' runs
counted: at least 160 runs of `session` (one per echoed line, plus the reads that end it)
and 8 of `client`'s first run.

    asio_test.py --cxx g++-12 --plugin=-fplugin=… --opt=-O2 --runtime libperfgroup.so \\
                 --include include --workdir DIR [--option all-functions]
"""
import argparse
import collections
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cxx", required=True)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--opt", default="-O2")
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--option", action="append", default=[])
    a = ap.parse_args()
    if not os.path.exists("/usr/include/asio.hpp"):
        print("SKIP: no /usr/include/asio.hpp (libasio-dev)")
        return 77
    os.makedirs(a.workdir, exist_ok=True)
    exe = os.path.join(a.workdir, "asio_echo")
    rt = os.path.abspath(a.runtime)
    # asio 1.22 enables its awaitables for GCC only: clang (with libstdc++) is told
    flags = ["-DASIO_HAS_CO_AWAIT", "-DASIO_HAS_STD_COROUTINE"] if "clang" in a.cxx else []
    cmd = [a.cxx, a.opt, "-std=c++20", "-pthread", "-I" + a.include, *flags,
           *shlex.split(a.plugin), "-fplugin-arg-perfgroup-default=app",
           *["-fplugin-arg-perfgroup-" + o for o in a.option],
           os.path.join(HERE, "asio_echo.cc"), "-o", exe, rt, "-Wl,-rpath," + os.path.dirname(rt)]
    print("+ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    if subprocess.run(cmd).returncode:
        print("FAIL: compile")
        return 1
    trace = exe + ".trace"
    p = subprocess.run([exe], env=dict(os.environ, PERFGROUP_TEXT=trace), timeout=60,
                       capture_output=True, text=True)
    sys.stdout.write(p.stdout + p.stderr)
    if p.returncode != 0:
        print(f"FAIL: exit {p.returncode}")
        return 1
    stacks = collections.defaultdict(list)
    runs = collections.Counter()
    bad = []
    for n, line in enumerate(open(trace, encoding="utf-8"), 1):
        f = line.rstrip("\n").split("\t")
        if len(f) < 2:
            continue
        thread, ev = f[0], f[1]
        if ev.startswith("> "):
            stacks[thread].append(ev[2:])
            runs[ev[2:]] += 1
        elif ev.startswith("< "):
            if not stacks[thread] or stacks[thread][-1] != ev[2:]:
                bad.append(f"line {n}: {ev} closes {stacks[thread][-1:] or 'nothing'}")
            else:
                stacks[thread].pop()
    left = {t: s for t, s in stacks.items() if s}
    session = sum(c for fn, c in runs.items() if fn.startswith("_Z7session"))
    client = sum(c for fn, c in runs.items() if fn.startswith("_Z6client"))
    print(f"{sum(runs.values())} pairs; session runs {session}, client runs {client}; "
          f"{len(bad)} unbalanced, {sum(len(s) for s in left.values())} left open")
    ok = not bad and not left and session >= 160 and client >= 8
    for b in bad[:5]:
        print("FAIL: " + b)
    print("ok" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
