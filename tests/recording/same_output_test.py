#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""recording.same_output — two processes given one PERFGROUP_OUTPUT without %p (issue 32).

same_output_test.py CONVERTER PROGRAM (prog/open_prog.c, mode "kill": a thread inside an
event until the process is killed), recorded in stats mode:
  - A starts recording to OUT; B starts with the same OUT while A runs: A keeps OUT, B records
    to OUT.<B's pid> and says so on stderr, once. Both files read back with their own pid
    and their own unfinished event.
  - A and B killed (their files stay RECORDING, writers dead); C starts with the same OUT:
    C replaces the dead writer's OUT, as a new run always did, and says nothing about it.
"""
import json, os, signal, subprocess, sys, tempfile, time

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


def start(prog, out):
    env = dict(os.environ, PERFGROUP_OUTPUT=out, PERFGROUP_MODE="stats")
    p = subprocess.Popen([prog, "kill"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline().split()
    ok = len(line) == 2 and line[0] == "thread"
    check(ok, f"pid {p.pid} started its event: {line}")
    return p


def kill(p):
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    return p.stderr.read()


def summary(conv, path, quiet=False):
    s = subprocess.run([conv, path, "--summary", "--json", "--no-progress"], capture_output=True,
                       text=True, timeout=60)
    try:
        return json.loads(s.stdout)["processes"][0]
    except (ValueError, KeyError, IndexError) as e:
        if quiet:
            return None
        check(False, f"{path}: summary unreadable ({e}): {s.stderr.strip()[:300]}")
        return None


def wait_published(conv, path, deadline=30.0):
    """Until the file shows its running event (the sampler publishes open events every
    period: under load its first period can be late)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        s = summary(conv, path, quiet=True)
        if s and s.get("unfinished"):
            return
        time.sleep(0.1)


def main():
    conv, prog = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="pg-same-") as d:
        out = os.path.join(d, "app.pgm")
        a = start(prog, out)
        b = start(prog, out)
        other = f"{out}.{b.pid}"
        wait_published(conv, out)
        wait_published(conv, other)
        err_a, err_b = kill(a), kill(b)
        files = sorted(os.listdir(d))
        check(files == sorted(["app.pgm", os.path.basename(other)]),
              f"both recordings kept: {files}")
        note = [l for l in err_b.splitlines() if "another running process" in l]
        check(len(note) == 1 and out in note[0] and other in note[0] and str(b.pid) in note[0],
              f"the second says where it records, once: {err_b.strip()[:300]!r}")
        check("another running process" not in err_a, f"the first says nothing: {err_a.strip()[:200]!r}")
        for path, p in ((out, a), (other, b)):
            if not os.path.exists(path):
                continue
            s = summary(conv, path)
            if s is None:
                continue
            u = s.get("unfinished", [])
            check(s.get("pid") == p.pid and len(u) == 1 and u[0]["event"] == "stuck",
                  f"{os.path.basename(path)}: pid {s.get('pid')} (expected {p.pid}), its own "
                  f"unfinished event: {[e.get('event') for e in u]}")
        c = start(prog, out)
        err_c = kill(c)
        files = sorted(os.listdir(d))
        check(files == sorted(["app.pgm", os.path.basename(other)]) and
              "another running process" not in err_c,
              f"a dead writer's file is replaced, without a word: {files} {err_c.strip()[:200]!r}")
        s = summary(conv, out)
        check(s is not None and s.get("pid") == c.pid,
              f"app.pgm is the new run's (pid {s and s.get('pid')}, expected {c.pid})")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
