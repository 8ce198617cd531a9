#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""recording.totals.<cc> — whole-run totals in the recording (issue 32; format.h, version 3).

totals_test.py CONVERTER PROGRAM (prog/totals_prog.c built with one plugin). The program
prints its in-process snapshot (every group it ran) after its events; `--summary --json` of
its recording must say the same, group by group: CPU within 0.1 %, activations, events and
the jank histogram equal, the top group's CPU and events the process's — although the buffer
recycled at least 100 times:
  one      1 thread, one 40 ms event first, then 200,000 short ones, PERFGROUP_BUFFER=1M
  tiny     the same with PERFGROUP_BUFFER=256K: no room for the thread's definition, no event
           kept, the totals still whole; the warning names the buffer that has room for the
           thread, and it does: no warning, its newest events kept
  tiny16   the same with 16K chunks in a 64K buffer: the definitions take 12 chunks, 3 fit;
           the buffer the warning names counts those that found no room too
  threads  1,000 short-lived threads, PERFGROUP_TOTALS=256: ended threads folded, counted
  many     2,000 groups in every event: a record lists what fits its chunk, the totals all
  kill     the program holds after its events and is SIGKILLed: the file stays RECORDING,
           its totals are those of the last commits; converted live before the kill too
  live     converted again and again while it runs: every conversion whole, its totals
           never ahead of the final ones nor going back
"""
import json, os, re, signal, struct, subprocess, sys, tempfile, time

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


def summary(conv, path):
    s = subprocess.run([conv, path, "--summary", "--json", "--no-progress"], capture_output=True,
                       text=True, timeout=120)
    if s.returncode != 0:
        check(False, f"{path}: summary failed ({s.returncode}): {s.stderr.strip()[:300]}")
        return None
    return json.loads(s.stdout)["processes"][0]


def header(path):
    with open(path, "rb") as f:
        h = f.read(472)
    return {"version": struct.unpack_from("<I", h, 8)[0],
            "recycled": struct.unpack_from("<Q", h, 96)[0],
            "state": struct.unpack_from("<I", h, 48)[0],
            "folded": struct.unpack_from("<I", h, 460)[0],
            "lost": struct.unpack_from("<Q", h, 464)[0]}


def snapshot(lines):
    snap = {}
    for line in lines:
        line = line.strip()
        if line.startswith("{"):
            g = json.loads(line)
            snap[g["group"]] = g
    return snap


def compare(name, snap, proc):
    """The snapshot against the summary's process totals."""
    groups = {g["group"]: g for g in proc["groups"]}
    top = snap.pop("top", None)
    check(top is not None and proc["events"] == top["events"] and
          abs(proc["cpu_ms"] * 1e6 - top["cpu_ns"]) <= max(1e-3 * top["cpu_ns"], 1000),
          f"{name}: process CPU {proc['cpu_ms']} ms in {proc['events']} events = snapshot's top "
          f"{top and top['cpu_ns'] / 1e6} ms in {top and top['events']}")
    missing = [g for g in snap if g not in groups]
    check(not missing and len(groups) == len(snap),
          f"{name}: {len(snap)} groups in the snapshot, {len(groups)} in the summary"
          f"{', missing ' + ', '.join(missing[:5]) if missing else ''}")
    bad = []
    for gname, s in snap.items():
        g = groups.get(gname)
        if g is None:
            continue
        cpu_ok = abs(g["cpu_ms"] * 1e6 - s["cpu_ns"]) <= max(1e-3 * s["cpu_ns"], 1000)
        if not (cpu_ok and g["activations"] == s["activations"] and g["events"] == s["events"]
                and g["jank"] == s["jank"]):
            bad.append(f"{gname}: summary {g['cpu_ms']} ms {g['activations']} act "
                       f"{g['events']} ev {g['jank']} / snapshot {s['cpu_ns'] / 1e6} ms "
                       f"{s['activations']} act {s['events']} ev {s['jank']}")
    check(not bad, f"{name}: every group's CPU (0.1 %), activations, events, jank equal"
          + ("" if not bad else ": " + "; ".join(bad[:3])))


def run(prog, out, args, env_extra, hold=False):
    env = dict(os.environ, PERFGROUP_OUTPUT=out, PERFGROUP_MODE="stats", **env_extra)
    return subprocess.Popen([prog] + args + (["hold"] if hold else []), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(p, name):
    out, err = p.communicate(timeout=600)
    check(p.returncode == 0 and "done" in out, f"{name}: program ran (exit {p.returncode})"
          + ("" if p.returncode == 0 else ": " + err[:300]))
    finished.stderr = err
    return snapshot(out.splitlines())


def main():
    conv, prog = sys.argv[1], sys.argv[2]
    d = tempfile.mkdtemp(prefix="pg-totals-")
    cases = [("one", ["one", "200000"], {"PERFGROUP_BUFFER": "1M"}, 100),
             ("tiny", ["one", "100000"], {"PERFGROUP_BUFFER": "256K"}, 0),
             # the definitions take 12 chunks of 16K; 3 fit: the warning's buffer must
             # count the ones that found no room too
             ("tiny16", ["one", "20000"], {"PERFGROUP_BUFFER": "64K", "PERFGROUP_CHUNK": "16K"}, 0),
             ("threads", ["threads", "1000"],
              {"PERFGROUP_BUFFER": "1M", "PERFGROUP_CHUNK": "16K", "PERFGROUP_TOTALS": "256"}, 100),
             ("many", ["many", "300"], {"PERFGROUP_BUFFER": "1M"}, 100)]
    for name, args, env, recycled in cases:
        out = os.path.join(d, name + ".pgm")
        p = run(prog, out, args, env)
        snap = finished(p, name)
        h = header(out)
        check(h["version"] >= 3 and h["recycled"] >= recycled,
              f"{name}: format version {h['version']}, buffer recycled {h['recycled']} times "
              f"(>= {recycled})")
        proc = summary(conv, out)
        if not proc:
            continue
        check(proc["totals"] == "whole run" and proc["totals_lost"] == 0,
              f"{name}: totals {proc['totals']}, lost {proc['totals_lost']}, "
              f"events kept {proc['events_kept']} of {proc['events']}")
        if name == "one":
            check(proc["events_kept"] < proc["events"], f"{name}: the detail is partial "
                  f"({proc['events_kept']} events kept)")
        if name == "many":
            t = subprocess.run([conv, out, "--summary", "--no-progress"], capture_output=True,
                               text=True, timeout=120).stdout
            check(len(t.splitlines()) < 200 and "(1960 more groups)" in t,
                  f"{name}: the text summary stays readable ({len(t.splitlines())} lines, "
                  "the heaviest 40 groups, the rest one line with their count)")
            gk = os.path.join(d, "many.json")
            subprocess.run([conv, out, "-o", gk, "--no-progress"], check=True, timeout=300)
            prof = json.load(open(gk))
            cats = prof["meta"]["categories"]
            more = [r[5]["groups"] for th in prof["threads"] for r in th["markers"]["data"]
                    if isinstance(r[5], dict) and r[5].get("type") == "PerfgroupEvent"]
            check(len(cats) <= 256 and cats[-1]["name"] == "Other groups",
                  f"{name}: Gecko keeps within 256 categories ({len(cats)}, the last "
                  f"{cats[-1]['name']!r})")
            check(more and all(re.search(r"and \d+ more groups$", g) for g in more),
                  f"{name}: each event marker says how many groups it does not name "
                  f"({more[0][-30:] if more else None})")
            check(proc["events_kept"] > 0, f"{name}: events of 2,000 groups kept "
                  f"({proc['events_kept']}), as much of each as fits its chunk")
        if name.startswith("tiny"):
            check(proc["events_kept"] == 0, f"{name}: no event kept ({proc['events_kept']})")
            # the warning says what was lost and the smallest buffer that holds it: with that
            # buffer, no warning and every event kept
            warn = finished.stderr
            m = re.search(r"totals are kept\); PERFGROUP_BUFFER=(\d+K) would have held", warn)
            check(m is not None, f"{name}: the warning names the buffer that holds it: {warn.strip()}")
            if m:
                out2 = os.path.join(d, "tiny2.pgm")
                snap2 = finished(run(prog, out2, args, dict(env, PERFGROUP_BUFFER=m.group(1))), name)
                p2 = summary(conv, out2)
                check("no room" not in finished.stderr and p2 and p2["events_kept"] > 0 and
                      p2["events"] == snap2["top"]["events"],
                      f"{name}: PERFGROUP_BUFFER={m.group(1)}: no warning, the newest events "
                      f"kept ({p2 and p2['events_kept']})")
        if name == "threads":
            check(h["folded"] > 0 and proc["threads_folded"] == h["folded"],
                  f"{name}: {h['folded']} ended threads folded into one row")
        if name in ("one", "tiny", "tiny16"):
            parse = [g for g in proc["groups"] if g["group"] == "parse"]
            check(parse and parse[0]["jank"][5] == 1,
                  f"{name}: the one janky event (> 32 ms) is in the table")
        compare(name, snap, proc)

    # kill: live conversion while it holds, then SIGKILL; live: conversions while it runs
    out = os.path.join(d, "kill.pgm")
    p = run(prog, out, ["one", "1500000"], {"PERFGROUP_BUFFER": "1M"}, hold=True)
    seen, ok_live, back, short = 0, True, False, 0
    last_events = -1
    lines = []
    os.set_blocking(p.stdout.fileno(), False)
    deadline = time.monotonic() + 600
    buf = ""
    while time.monotonic() < deadline and "done\n" not in buf:
        try:
            chunk = os.read(p.stdout.fileno(), 1 << 20).decode()
        except BlockingIOError:
            chunk = ""
        buf += chunk
        proc = summary(conv, out) if os.path.exists(out) else None
        if proc:
            seen += 1
            # a slot its thread rewrote under every try of the reader is left out and counted
            # (docs/file-format.md, "Totals"): such a conversion says its totals are short, and
            # only the whole ones must never go back
            if proc["totals_lost"]:
                short += 1
            else:
                if proc["events"] < last_events:
                    back = True
                last_events = proc["events"]
        time.sleep(0.05)
    check("done\n" in buf, "kill: the program finished its events")
    check(seen - short >= 3 and short <= seen // 4 and not back,
          f"live: {seen} conversions while it ran, {seen - short} whole (at least 3 and three "
          f"quarters), their totals never going back; {short} said their totals were short")
    snap = snapshot(buf.splitlines())
    check(last_events <= snap.get("top", {}).get("events", 0),
          f"live: never ahead of the final totals ({last_events})")
    proc = summary(conv, out)
    if proc:
        compare("live, holding", dict(snap), proc)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    h = header(out)
    check(h["state"] == 1, "kill: the file stays RECORDING")
    proc = summary(conv, out)
    if proc:
        check(proc["complete"] is False, "kill: the summary says the recording is not complete")
        compare("kill", snap, proc)
    print(f"{failures} failure(s)")
    sys.exit(1 if failures else 0)


main()
