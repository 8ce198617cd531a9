#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""recording.open — events that never end reach the file, unfinished (issue 19).

open_test.py CONVERTER PROGRAM (prog/open_prog.c), recorded in stats mode:
  fork  a child forked inside an explicit event works 500 ms of CPU and leaves with _exit:
        its own file holds the event, unfinished, with >= 90 % of the CPU the child measured
        (its part of the inherited event is its own: the event starts over at the fork);
        the parent's file has the event committed and nothing unfinished
  forkimp  a child forked with no event open begins an implicit one and leaves with _exit
        500 ms into it: the same (the child's runtime thread starts at the fork)
  kill  a thread 2 s into an event is SIGKILLed with its process: the file (state RECORDING)
        holds the event, unfinished, with >= 90 % of the thread's CPU time read from
        /proc/<pid>/task/<tid>/schedstat just before the kill; killimp: the same for an
        implicit event (a group entered and never left)
Each event's groups so far are exact: the running ones innermost first, then the ones that
ran and stopped. Each through `perfgroup-convert --summary --json` (the "unfinished" list),
the text summary's "unfinished:" line, the Gecko profile's PerfgroupEvent marker flagged
"unfinished" (on a thread of its own when the thread had no record) and the Chrome trace's
event with args.unfinished.
"""
import glob, json, os, signal, subprocess, sys, tempfile, time

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


def summary(conv, path):
    s = subprocess.run([conv, path, "--summary", "--json", "--no-progress"], capture_output=True,
                       text=True, timeout=60)
    t = subprocess.run([conv, path, "--summary", "--no-progress"], capture_output=True,
                       text=True, timeout=60)
    try:
        return json.loads(s.stdout)["processes"][0], t.stdout
    except (ValueError, KeyError, IndexError) as e:
        check(False, f"{path}: summary unreadable ({e}): {s.stderr.strip()[:300]}")
        return None, ""


def groups_json(u):
    """The summary JSON's groups of an unfinished event as "a (running), b"."""
    return ", ".join(g["group"] + (" (running)" if g["running"] else "") for g in u.get("groups", []))


def check_outputs(conv, path, d, what, event, truth_ms, groups, text):
    """The text summary, the Gecko marker and the Chrome event of the one unfinished event."""
    check(f'unfinished: event "{event}"' in text and f"groups: {groups} (not in the tables)" in text,
          f"{what}: the text summary says so, groups {groups}: "
          f"{[l for l in text.splitlines() if l.startswith('unfinished')]}")
    g = gecko_unfinished(conv, path, d)
    check(len(g) == 1 and g[0][0] >= 0.9 * truth_ms and g[0][1] == groups,
          f"{what}: the Gecko profile's unfinished marker: {g}")
    c = chrome_unfinished(conv, path, d)
    check(len(c) == 1 and c[0]["name"] == event and c[0]["args"]["cpu_ms"] >= 0.9 * truth_ms and
          c[0]["args"]["groups"] == groups and c[0]["dur"] >= c[0]["args"]["cpu_ms"] * 1000 - 1,
          f"{what}: the Chrome trace's unfinished event: {c}")


def chrome_unfinished(conv, path, d):
    """The Chrome trace's events with args.unfinished."""
    out = os.path.join(d, os.path.basename(path) + ".chrome.json")
    g = subprocess.run([conv, path, "--format", "chrome", "-o", out, "--no-progress"],
                       capture_output=True, text=True, timeout=60)
    if g.returncode != 0:
        check(False, f"{path}: chrome conversion exit {g.returncode}: {g.stderr.strip()[:300]}")
        return []
    with open(out) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("args", {}).get("unfinished")]


def gecko_unfinished(conv, path, d):
    """The PerfgroupEvent markers flagged unfinished in the Gecko profile of path:
    [(cpu ms, groups)]."""
    out = os.path.join(d, os.path.basename(path) + ".json")
    g = subprocess.run([conv, path, "-o", out, "--no-progress"], capture_output=True, text=True,
                       timeout=60)
    if g.returncode != 0:
        check(False, f"{path}: gecko conversion exit {g.returncode}: {g.stderr.strip()[:300]}")
        return []
    found = []

    def walk(x):
        if isinstance(x, dict):
            if x.get("type") == "PerfgroupEvent" and x.get("flags") == "unfinished":
                found.append((x.get("cpu"), x.get("groups")))
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    with open(out) as f:
        walk(json.load(f))
    return found


def case_fork(conv, prog, d, mode="fork", event="frame", groups="app (running), io"):
    env = dict(os.environ, PERFGROUP_OUTPUT=os.path.join(d, mode + ".%p.pgm"),
               PERFGROUP_MODE="stats")
    r = subprocess.run([prog, mode, "500"], env=env, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"{mode}: program exit {r.returncode} {r.stderr.strip()[:200]}")
    words = r.stdout.split()
    if len(words) < 4 or words[0] != "child":
        check(False, f"{mode}: child said {r.stdout!r}")
        return
    child, truth_ms = int(words[1]), int(words[3]) / 1e6
    cfile = os.path.join(d, f"{mode}.{child}.pgm")
    check(os.path.exists(cfile), f"{mode}: the child's file {os.path.basename(cfile)} exists")
    if not os.path.exists(cfile):
        return
    p, text = summary(conv, cfile)
    if p is None:
        return
    u = p.get("unfinished", [])
    ok = len(u) == 1 and u[0]["event"] == event and u[0]["tid"] == child and \
        u[0]["cpu_ms"] is not None and u[0]["cpu_ms"] >= 0.9 * truth_ms and \
        u[0]["cpu_ms"] <= u[0]["wall_ms"] + 0.001 and groups_json(u[0]) == groups
    check(ok, f"{mode}: the child's event unfinished, CPU {u[0]['cpu_ms'] if u else None} ms of "
              f"{truth_ms:.3f} ms (>= 90 %), groups {groups}: {u}")
    check_outputs(conv, cfile, d, mode, event, truth_ms, groups, text)
    parents = [f for f in glob.glob(os.path.join(d, mode + ".*.pgm")) if f != cfile]
    if mode == "fork":
        check(len(parents) == 1, f"{mode}: one parent file ({parents})")
    for pf in parents:
        pp, _ = summary(conv, pf)
        if pp is not None:
            check(pp.get("unfinished") == [] and pp["complete"],
                  f"{mode}: the parent's events committed, nothing unfinished: {pp.get('unfinished')}")


def case_kill(conv, prog, d, mode="kill", event="stuck", groups="addon (running), io"):
    out = os.path.join(d, mode + ".pgm")
    env = dict(os.environ, PERFGROUP_OUTPUT=out, PERFGROUP_MODE="stats")
    p = subprocess.Popen([prog, mode], env=env, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().split()
    if len(line) != 2 or line[0] != "thread":
        p.kill()
        p.wait()
        check(False, f"{mode}: program said {line}")
        return
    tid = int(line[1])
    time.sleep(2.0)
    with open(f"/proc/{p.pid}/task/{tid}/schedstat") as f:
        truth_ms = int(f.read().split()[0]) / 1e6
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    s, text = summary(conv, out)
    if s is None:
        return
    u = [e for e in s.get("unfinished", []) if e["tid"] == tid]
    ok = len(u) == 1 and u[0]["event"] == event and u[0]["cpu_ms"] is not None and \
        u[0]["cpu_ms"] >= 0.9 * truth_ms and not s["complete"] and groups_json(u[0]) == groups
    check(ok, f"{mode}: the thread's event unfinished, CPU {u[0]['cpu_ms'] if u else None} ms of "
              f"{truth_ms:.3f} ms (>= 90 %), groups {groups}: {s.get('unfinished')}")
    check_outputs(conv, out, d, mode, event, truth_ms, groups, text)


def main():
    conv, prog = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="pg-open-") as d:
        case_fork(conv, prog, d)
        case_fork(conv, prog, d, "forkimp", "(implicit)", "app (running)")
        case_kill(conv, prog, d)
        case_kill(conv, prog, d, "killimp", "(implicit)", "addon (running), app (running), io")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
