#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""recording.cputime_header — the recording says how CPU time was found and whether
stopwatches across CPUs were kept (issue 14), and `perfgroup-convert --summary` says so.

cputime_header_test.py CONVERTER PROGRAM: runs PROGRAM (prog/exit_prog.c: one implicit event
of 20 ms of CPU) recorded by default, with PERFGROUP_CPU=getcpu (no rseq: the estimate) and
with PERFGROUP_TSC=cpu (the same-CPU check forced), and checks the header's `cpu_time` and
`tsc_scope` in `--summary --json` and the text summary's line. The default expectation
follows the machine: `measured` where glibc registers rseq (2.35+), `kernel` where the
kernel's clocksource is tsc.
"""
import json, os, platform, subprocess, sys, tempfile


def clocksource():
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            return f.read().strip()
    except OSError:
        return ""


def glibc_rseq():
    v = os.confstr("CS_GNU_LIBC_VERSION") or ""  # "glibc 2.36"
    try:
        major, minor = (int(x) for x in v.split()[1].split(".")[:2])
    except (IndexError, ValueError):
        return False
    return (major, minor) >= (2, 35) and platform.machine() in ("x86_64", "aarch64")


def main():
    conv, prog = sys.argv[1], sys.argv[2]
    default_cpu = "measured" if glibc_rseq() else "estimated"
    default_scope = "kernel" if clocksource() == "tsc" or platform.machine() == "aarch64" else None
    cases = [
        ("default", {}, default_cpu, default_scope, "measured (rseq)" if default_cpu == "measured" else "estimated"),
        ("PERFGROUP_CPU=getcpu", {"PERFGROUP_CPU": "getcpu"}, "estimated", default_scope, "estimated"),
        ("PERFGROUP_TSC=cpu", {"PERFGROUP_TSC": "cpu"}, default_cpu, "cpu", "discarded (same-CPU check)"),
    ]
    failures = 0
    with tempfile.TemporaryDirectory(prefix="pg-cputime-") as d:
        for i, (name, extra, want_cpu, want_scope, want_text) in enumerate(cases):
            out = os.path.join(d, f"{i}.pgm")
            env = dict(os.environ, PERFGROUP_OUTPUT=out, PERFGROUP_MODE="stats", **extra)
            r = subprocess.run([prog, "r", "20"], env=env, capture_output=True, text=True, timeout=60)
            js = subprocess.run([conv, out, "--summary", "--json"], capture_output=True, text=True, timeout=60)
            tx = subprocess.run([conv, out, "--summary"], capture_output=True, text=True, timeout=60)
            why = ""
            try:
                p = json.loads(js.stdout)["processes"][0]
                if r.returncode != 0:
                    why = f"program exit {r.returncode}"
                elif p["cpu_time"] != want_cpu:
                    why = f"cpu_time {p['cpu_time']!r}, expected {want_cpu!r}"
                elif want_scope and p["tsc_scope"] != want_scope:
                    why = f"tsc_scope {p['tsc_scope']!r}, expected {want_scope!r}"
                elif p["tsc_scope"] not in ("kernel", "reliable", "cpu"):
                    why = f"tsc_scope {p['tsc_scope']!r}"
                elif want_text not in tx.stdout:
                    why = f"text summary lacks {want_text!r}"
            except (ValueError, KeyError, IndexError) as e:
                why = f"summary unreadable ({e}): {js.stderr.strip()[:300]}"
            print(f"{'FAIL' if why else 'ok  '} {name}: "
                  f"{why or 'cpu_time ' + p['cpu_time'] + ', tsc_scope ' + p['tsc_scope']}")
            failures += bool(why)
    print(f"{len(cases) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
