#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""conv_test.py — the converter's test driver (one ctest per call).

    conv_test.py golden SCENARIO    gen_pgm.py SCENARIO -> every output format; each output
                                    must equal tests/converter/golden/SCENARIO.* and each JSON
                                    profile must pass check_profile.py
    conv_test.py bad KIND           a broken file: exit 2, ONE stderr line naming the file and
                                    a byte offset, no output file and no temporary left
    conv_test.py faithful SCENARIO  the Gecko call tree's sample counts match the recording
    conv_test.py cut                a crash-cut recording converts, with a warning and a marker
    conv_test.py fork               a parent and its child become one profile, child offset
    conv_test.py corpus CC PLUGINFLAG RUNTIME INCLUDE SRC
                                    a tests/corpus program recorded (trace) and converted;
                                    golden/corpus/<program>.json holds the deterministic part
    conv_test.py recycled PGM_MAKE  a real recording that recycled chunks shows the drops
    conv_test.py progress           progress line only on a terminal (or --progress)
    conv_test.py stacks CC PLUGINFLAG RUNTIME INCLUDE SRC
                                    stacks_app.c recorded in trace mode: every sample in a
                                    phase carries the phase's call stack (STACKS)
    conv_test.py demo EXE           the event-loop demo: checker, counters, nested stacks
    conv_test.py many               500 inputs: peak RSS bounded, a small constant per file
    conv_test.py pgm FILE...        real recordings: every format converts and checks
    conv_test.py real CXX PLUGINFLAG RUNTIME INCLUDE SRC
                                    build SRC with a real plugin, record it (trace and stats
                                    mode, with a fork), convert parent+child, check the result

Environment: PGC_CONVERT (the program), PGC_WORK (a scratch directory); PGC_UPDATE=1 rewrites
the golden files instead of comparing (review the diff before committing it).
"""
import json
import math
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")
sys.path.insert(0, HERE)
import check_profile  # noqa: E402
import gen_pgm  # noqa: E402

MS = gen_pgm.MS

CONVERT = os.environ.get("PGC_CONVERT", "perfgroup-convert")
WORK = os.environ.get("PGC_WORK", "/tmp/pgc-test")
FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg)


def run(args, **kw):
    p = subprocess.run([CONVERT] + args, capture_output=True, text=True, **kw)
    return p.returncode, p.stdout, p.stderr


def gen(scenario, path):
    recs = gen_pgm.SCENARIOS[scenario]()
    paths = []
    for i, r in enumerate(recs):
        p = path if i == 0 else "%s.%d" % (path, r.pid)
        if p in paths:  # an exec()ed image: the runtime's "<name>.exec<N>"
            p += ".exec1"
        with open(p, "wb") as f:
            f.write(r.build())
        paths.append(p)
    return paths


def check_json(path):
    probs = check_profile.check(path)
    for p in probs:
        fail("checker: " + p)
    return not probs


def convert_all(scenario, test):
    """Every output of one scenario: {suffix: (path, text)}. Each test has its own directory:
    ctest -j runs tests of the same scenario at once."""
    d = os.path.join(WORK, "%s-%s" % (test, scenario))
    os.makedirs(d, exist_ok=True)
    inputs = gen(scenario, os.path.join(d, scenario + ".pgm"))
    rel = [os.path.basename(p) for p in inputs]  # names in outputs stay machine-independent
    outs = {}
    for suffix, args in (("gecko.json", ["-o", "out.gecko.json"]),
                         ("chrome.json", ["--format", "chrome", "-o", "out.chrome.json"]),
                         ("summary.txt", ["--summary"]),
                         ("summary.json", ["--summary", "--json"])):
        rc, out, err = run(rel + args + ["--no-progress"], cwd=d)
        if rc != 0:
            fail("%s %s: exit %d: %s" % (scenario, suffix, rc, err.strip()))
            continue
        path = os.path.join(d, "out." + suffix)
        if suffix.startswith("summary"):
            with open(path, "w") as f:
                f.write(out)
        if suffix == "summary.json":
            json.loads(out)
        elif suffix.endswith(".json"):
            check_json(path)
        with open(path) as f:
            outs[suffix] = (path, f.read(), err)
    return outs


def check_golden(g, text, got):
    """text (of `got`) against golden file g, or g rewritten with PGC_UPDATE=1. True if equal."""
    if os.environ.get("PGC_UPDATE"):
        os.makedirs(os.path.dirname(g), exist_ok=True)
        with open(g, "w") as f:
            f.write(text)
        return False
    if not os.path.exists(g):
        fail("no golden file %s (run with PGC_UPDATE=1 and review it)" % g)
        return False
    with open(g) as f:
        want = f.read()
    if want != text:
        import difflib
        diff = list(difflib.unified_diff(want.splitlines(), text.splitlines(), g, got,
                                         lineterm="", n=1))
        fail("%s differs from %s:\n%s" % (got, g, "\n".join(diff[:40])))
        return False
    return True


def golden(scenario):
    outs = convert_all(scenario, "golden")
    for suffix, (path, text, _) in outs.items():
        check_golden(os.path.join(GOLDEN, "%s.%s" % (scenario, suffix)), text, path)


def bad(kind):
    d = os.path.join(WORK, "bad-" + kind)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    src = os.path.join(d, "in.pgm")
    with open(src, "wb") as f:
        f.write(gen_pgm.bad(kind))
    # a crash-cut recording first (it alone would convert, with warnings), then the bad one:
    # still one line, and only about the bad file
    cutdir = os.path.join(WORK, "bad-%s-cut" % kind)  # per test: ctest -j runs them at once
    os.makedirs(cutdir, exist_ok=True)
    cut = gen("cut", os.path.join(cutdir, "cut.pgm"))[0]
    for inputs, args in (([src], ["-o", os.path.join(d, "out.json")]),
                         ([src], ["--format", "chrome", "-o", os.path.join(d, "out.json")]),
                         ([src], ["--summary"]),
                         ([cut, src], ["-o", os.path.join(d, "out.json")]),
                         ([cut, src], ["--summary", "--json"])):
        rc, stdout, err = run(inputs + args + ["--no-progress"])
        lines = err.splitlines()
        if rc != 2:
            fail("%s %s: exit %d, want 2" % (kind, args, rc))
        if len(lines) != 1:
            fail("%s: want one stderr line, got %d: %r" % (kind, len(lines), err))
        elif not re.match(r"^perfgroup-convert: %s: byte \d+: \S" % re.escape(src), lines[0]):
            fail("%s: stderr line does not name the file and a byte offset: %r" % (kind, lines[0]))
        else:
            print("ok %s: %s" % (kind, lines[0]))
        if stdout:
            fail("%s: wrote to stdout on bad input: %r" % (kind, stdout[:200]))
        left = sorted(set(os.listdir(d)) - {"in.pgm"})
        if left:
            fail("%s: left output behind: %s" % (kind, left))


def gecko_counts(path):
    """Samples per root-to-leaf path of labels, per thread name."""
    p = json.load(open(path))
    res = {}
    for t in p["threads"] + [t for s in p["processes"] for t in s["threads"]]:
        strings = t["stringTable"]
        frames = t["frameTable"]["data"]
        stacks = t["stackTable"]["data"]
        names = {}

        def path_of(s):
            if s in names:
                return names[s]
            pre, fr = stacks[s]
            label = strings[frames[fr][0]]
            names[s] = (path_of(pre) if pre is not None else ()) + (label,)
            return names[s]

        cnt = {}
        for row in t["samples"]["data"]:
            if row[0] is not None:
                k = path_of(row[0])
                cnt[k] = cnt.get(k, 0) + 1
        key = t["processName"] if t["name"] == "GeckoMain" else t["name"]
        res[key] = cnt
    return res


def near(got, want, tol, what):
    if abs(got - want) > tol:
        fail("%s: %s samples, want %s ± %s" % (what, got, want, tol))
    else:
        print("ok %s: %s samples (want %s)" % (what, got, want))


def faithful(scenario):
    outs = convert_all(scenario, "faithful")
    c = gecko_counts(outs["gecko.json"][0])
    if scenario == "stats":
        # 1 ms samples: parser 40 x 2 ms CPU, render 40 x 1 ms + 55 ms, the rest of the
        # main thread's CPU (40 x 1 ms + 5 ms) outside groups; worker: net 10 x 2 ms
        m = c["demo-stats"]
        near(m.get(("tick", "parser"), 0), 80, 1, "stats parser")
        near(m.get(("tick", "render"), 0) + m.get(("frame", "render"), 0), 95, 1, "stats render")
        near(sum(v for k, v in m.items() if k[-1] == "(outside groups)"), 45, 1, "stats outside")
        w = c["worker \u00e9"]
        near(sum(v for k, v in w.items() if k[-1] == 'net "io"'), 20, 1, "stats net")
    elif scenario == "trace":
        # per iteration: parse 3 ms (helper 2 ms inside), render 2 ms (0.3 ms re-entry)
        m = c["demo-trace"]
        parse = sum(v for k, v in m.items() if any("parser::parse" in x for x in k))
        helper = sum(v for k, v in m.items() if k and k[-1].startswith("helper"))
        render = sum(v for k, v in m.items() if any(x.startswith("render_frame") for x in k))
        near(parse, 60, 2, "trace parse (incl. helper)")
        near(helper, 40, 2, "trace helper")
        near(render, 40, 2, "trace render")
        demangled = [x for k in m for x in k if "parser::parse(char const*, unsigned long)" in x]
        if not demangled:
            fail("trace: parser::parse not demangled")
        # --no-interval-markers: the same samples, no interval markers
        d = os.path.dirname(outs["gecko.json"][0])
        slim = os.path.join(d, "slim.json")
        rc, _, err = run([os.path.join(d, "trace.pgm"), "-o", slim, "--no-interval-markers"])
        if rc != 0:
            fail("--no-interval-markers: exit %d: %s" % (rc, err))
            return
        check_json(slim)
        if gecko_counts(slim) != c:
            fail("--no-interval-markers changed the samples")
        p = json.load(open(slim))
        if any((mk[5] or {}).get("type") == "PerfgroupInterval"
               for t in p["threads"] for mk in t["markers"]["data"]):
            fail("--no-interval-markers: interval markers still written")


def cut():
    d = os.path.join(WORK, "cut")
    os.makedirs(d, exist_ok=True)
    src = gen("cut", os.path.join(d, "cut.pgm"))[0]
    rc, out, err = run([src, "-o", os.path.join(d, "cut.json"), "--no-progress"])
    if rc != 0:
        fail("cut: exit %d: %s" % (rc, err))
        return
    if "not closed" not in err or "lost" not in err:
        fail("cut: no warning saying what was lost: %r" % err)
    else:
        print("ok cut warning: " + err.strip().replace("\n", " | "))
    check_json(os.path.join(d, "cut.json"))
    p = json.load(open(os.path.join(d, "cut.json")))
    t = p["threads"][0]
    names = [t["stringTable"][m[0]] for m in t["markers"]["data"]]
    if "Recording cut" not in names:
        fail("cut: no 'Recording cut' marker: %r" % names[:10])
    if len(t["samples"]["data"]) < 25:
        fail("cut: the intervals before the cut are missing (%d samples)" % len(t["samples"]["data"]))


def fork():
    outs = convert_all("fork", "fork")
    p = json.load(open(outs["gecko.json"][0]))
    if len(p["processes"]) != 2:
        fail("fork: want 2 sub-processes (the child, its exec'd image), got %d" % len(p["processes"]))
        return
    sub = p["processes"][0]
    # processes named after their program (the viewers add the pid once); the exec'd image
    # says whose it is
    pn = [[t["processName"] for t in q["threads"] if t["name"] == "GeckoMain"][0]
          for q in [p] + p["processes"]]
    if pn != ["forker", "forker", "helper (exec'd by forker)"]:
        fail("fork: process names %r" % pn)
    off = sub["meta"]["startTime"] - p["meta"]["startTime"]
    if abs(off - 15) > 1e-6:
        fail("fork: child starts %r ms after the parent, want 15" % off)
    pids = {t["pid"] for t in p["threads"]}, {t["pid"] for t in sub["threads"]}
    if pids != ({2000}, {2001}):
        fail("fork: pids %r" % (pids,))
    # the child's main thread is a named thread of pid 2001's track (the exec'd image's
    # GeckoMain takes the track; an empty GeckoMain holds the child's counters)
    names = sorted(t["name"] for t in sub["threads"])
    if names != ["GeckoMain", "child-worker", "forker (until exec)"]:
        fail("fork: child threads %r" % names)
    if not p.get("counters") or not sub.get("counters"):
        fail("fork: per-group CPU counters missing")
    # the Chrome trace puts the child 15 ms (15000 us) after the parent's start, too
    tr = json.load(open(outs["chrome.json"][0]))["traceEvents"]
    cn = sorted(e["args"]["name"] for e in tr if e["name"] == "process_name")
    if cn != ["forker", "forker", "helper (exec'd by forker)"]:
        fail("fork chrome: process names %r" % cn)
    child = [e["ts"] for e in tr if e.get("pid") == 2001 and "ts" in e]
    parent = [e["ts"] for e in tr if e.get("pid") == 2000 and "ts" in e]
    if not child or min(child) < 15000 or min(parent) != 0:
        fail("fork chrome: parent starts at %r us, child at %r us (want 0 and >= 15000)" % (
            min(parent) if parent else None, min(child) if child else None))
    print("ok fork: child offset %r ms, threads %r" % (off, names))


def pgm(files):
    d = os.path.join(WORK, "real")
    os.makedirs(d, exist_ok=True)
    for i, f in enumerate(files):
        for suffix, args in (("gecko.json", []), ("chrome.json", ["--format", "chrome"])):
            out = os.path.join(d, "%d.%s" % (i, suffix))
            rc, _, err = run([f, "-o", out, "--no-progress"] + args)
            if rc != 0:
                fail("%s: exit %d: %s" % (f, rc, err))
            else:
                check_json(out)
        rc, out, err = run([f, "--summary", "--json", "--no-progress"])
        if rc != 0:
            fail("%s --summary: exit %d: %s" % (f, rc, err))


def real(cxx, plugin, runtime, include, src, variant="plain"):
    forked = variant == "fork"
    tag = os.path.basename(cxx) + "-" + variant
    d = os.path.join(WORK, "real-" + tag)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    exe = os.path.join(d, "rt_app")
    cmd = [cxx, "-O1", "-g", plugin, "-I", include, src, "-o", exe, runtime,
           "-Wl,-rpath," + os.path.dirname(runtime), "-pthread"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail("build: %s\n%s" % (" ".join(cmd), p.stderr))
        return
    for mode in ("trace", "stats"):
        env = dict(os.environ, PERFGROUP_OUTPUT=os.path.join(d, mode + ".%p.pgm"), PERFGROUP_MODE=mode)
        p = subprocess.run([exe] + (["fork"] if forked else []), capture_output=True, text=True,
                           env=env, timeout=60)
        if p.returncode != 0:
            fail("%s run: exit %d: %s" % (mode, p.returncode, p.stderr))
            continue
        files = sorted(os.path.join(d, f) for f in os.listdir(d)
                       if f.startswith(mode + ".") and f.endswith(".pgm"))
        if len(files) != (2 if forked else 1):
            fail("%s: want %d recording(s), got %s" % (mode, 2 if forked else 1, files))
            continue
        gecko = os.path.join(d, mode + ".gecko.json")
        rc, _, err = run(files + ["-o", gecko, "--no-progress"])
        if rc != 0:
            fail("%s convert: exit %d: %s" % (mode, rc, err))
            continue
        check_json(gecko)
        chrome = os.path.join(d, mode + ".chrome.json")
        rc, _, err = run(files + ["--format", "chrome", "-o", chrome, "--no-progress"])
        if rc != 0:
            fail("%s chrome: exit %d: %s" % (mode, rc, err))
        else:
            check_json(chrome)
        prof = json.load(open(gecko))
        if prof["meta"]["product"] != "rt_app":
            fail("%s: product %r" % (mode, prof["meta"]["product"]))
        if len(prof["processes"]) != (1 if forked else 0):
            fail("%s: want %d sub-process(es), got %d" % (mode, forked, len(prof["processes"])))
        elif forked:
            off = prof["processes"][0]["meta"]["startTime"] - prof["meta"]["startTime"]
            if not 0 < off < 60000:
                fail("%s: child start offset %r ms" % (mode, off))
        for proc in [prof] + prof["processes"]:
            gm = [t for t in proc["threads"] if t["name"] == "GeckoMain"]
            want = "rt_app"  # the front-end shows the pid beside it
            if not gm or gm[0]["processName"] != want:
                fail("%s: process named %r, want %r" % (mode, gm and gm[0]["processName"], want))
        names = [t["name"] for t in prof["threads"]]
        if "rt-worker" not in names or "GeckoMain" not in names:
            fail("%s: thread names %r" % (mode, names))
        # one track per OS thread: the marker written before the core saw the main thread
        # ("start", a lazy thread index in the file) is on the main thread's track
        tids = [t["tid"] for t in prof["threads"]]
        if len(tids) != len(set(tids)):
            fail("%s: two tracks for one tid: %r" % (mode, tids))
        main = [t for t in prof["threads"] if t["name"] == "GeckoMain"][0]
        if "start" not in [main["stringTable"][m[0]] for m in main["markers"]["data"]]:
            fail("%s: the 'start' marker is not on the main thread" % mode)
        cats = [c["name"] for c in prof["meta"]["categories"]]
        if "parser" not in cats or "render" not in cats:
            fail("%s: categories %r" % (mode, cats))
        labels = set()
        for t in prof["threads"]:
            for fr in t["frameTable"]["data"]:
                labels.add(t["stringTable"][fr[0]])
        if mode == "trace" and not any(l.startswith("app::Parser::parse(char const*, unsigned int)")
                                       for l in labels):
            fail("trace: no demangled app::Parser::parse frame in %r" % sorted(labels)[:20])
        if not any(l == "parser" for l in labels):
            fail("%s: no parser group frame" % mode)
        marks = set()
        for t in prof["threads"]:
            marks.update(t["stringTable"][m[0]] for m in t["markers"]["data"])
        for m in ("start", "tail", "tick", "job"):
            if m not in marks:
                fail("%s: marker %r missing (have %r)" % (mode, m, sorted(marks)[:20]))
        rc, out, err = run(files + ["--summary", "--json", "--no-progress"])
        if rc != 0:
            fail("%s summary: exit %d: %s" % (mode, rc, err))
            continue
        summ = json.loads(out)
        rows = {r["group"]: r for r in summ["overall"]["groups"]}
        if "parser" not in rows or "render" not in rows:
            fail("%s summary: groups %r" % (mode, sorted(rows)))
        else:
            if rows["render"]["blocked_ms"] < 5:
                fail("%s summary: render blocked %r ms, want >= 5 (usleep)" % (mode, rows["render"]["blocked_ms"]))
            want = 30 + 5 + 20 + (10 if forked else 0)  # main loop, tail, worker jobs, child
            if rows["parser"]["events"] != want:
                fail("%s summary: parser in %r events, want %d" % (mode, rows["parser"]["events"], want))
            print("ok %s: parser %.1f ms CPU in %d events; render blocked %.1f ms" % (
                mode, rows["parser"]["cpu_ms"], rows["parser"]["events"], rows["render"]["blocked_ms"]))


# converter.stacks: the call stack the Gecko samples must carry while each phase of
# stacks_app.c runs (labels where the group changes; function frames without " (in file)")
STACKS = {
    "ui": "app > main > ui > ui_handler",
    "recursion": "app > main > math > rec > rec > rec > rec",
    "save-before": "app > main > sync > save",
    "nested-ui": "app > main > sync > save > app > dispatch_nested > ui > ui_handler",
    "save-after": "app > main > sync > save",
    "deep": "app > main > io > jmp_outer > jmp_inner > jmp_deep",
    "after-jump": "app > main > io > after_jump",
    "bg": "app > bg_thread > bg > bg_loop > bg_step",
}


def thread_stacks(t):
    """stack index -> the stack as a tuple of frame names (function frames without their
    " (in file)" part)."""
    strings, frames, stacks = t["stringTable"], t["frameTable"]["data"], t["stackTable"]["data"]
    memo = {}

    def walk(s):
        if s is None:
            return ()
        if s not in memo:
            pre, fr = stacks[s]
            memo[s] = walk(pre) + (strings[frames[fr][0]].split(" (in ")[0],)
        return memo[s]
    return walk


def check_counters(gecko, files):
    """Each process's "CPU ns: <group>" counter adds up to the group's CPU in the summary
    (within 0.1 %); the checker already bounds each row by 100 % of one CPU per thread."""
    rc, out, err = run(files + ["--summary", "--json", "--no-progress"])
    if rc != 0:
        fail("summary: exit %d: %s" % (rc, err))
        return
    cpu = {(pr["pid"], r["group"]): r["cpu_ms"] * 1e6
           for pr in json.loads(out)["processes"] for r in pr["groups"]}
    prof = json.load(open(gecko))
    checked = 0
    for proc in [prof] + prof["processes"]:
        pid = proc["threads"][0]["pid"]
        for c in proc.get("counters", []):
            group = c["name"][len("CPU ns: "):]
            got = sum(row[1] for row in c["samples"]["data"])
            want = cpu.get((pid, group), 0)
            if abs(got - want) > max(want * 0.001, 1000):
                fail("counter %r of pid %s: %d ns in all, the summary says %d" % (c["name"], pid, got, want))
            checked += 1
    if not checked:
        fail("no CPU counters")
    else:
        print("ok %d CPU counters add up to their groups' CPU" % checked)


def compare_chrome(gecko, files):
    """The Chrome trace of the same recording, as a Perfetto user meets it: it passes the
    checker (Trace Event Format rules: X slices nest per thread track, B/E pair, pid/tid
    names, counters of numbers) and shows the same slices as the Gecko profile — every event
    and every acquiring function interval with the same start and duration (to the µs), the
    same user markers — and the same totals: each group's CPU counter integrates to the
    Gecko counter's sum."""
    chrome = gecko[:-len(".json")] + ".chrome.json"
    rc, _, err = run(files + ["--format", "chrome", "-o", chrome, "--no-progress"])
    if rc != 0:
        fail("chrome: exit %d: %s" % (rc, err))
        return
    if not check_json(chrome):
        return
    g, c = json.load(open(gecko)), json.load(open(chrome))
    base = min([g["meta"]["startTime"]] + [sp["meta"]["startTime"] for sp in g["processes"]])
    want = {"event": [], "interval": [], "marker": []}
    cpu_g = {}
    for proc in [g] + g["processes"]:
        off = (proc["meta"]["startTime"] - base) * 1000  # µs
        pid = proc["threads"][0]["pid"]
        for t in proc["threads"]:
            strings = t["stringTable"]
            for m in t["markers"]["data"]:
                typ = (m[5] or {}).get("type")
                kind = {"PerfgroupEvent": "event", "PerfgroupInterval": "interval",
                        "PerfgroupMarker": "marker"}.get(typ)
                if not kind or m[2] is None:
                    continue
                name = strings[m[5]["function"]] if kind == "interval" else strings[m[0]]
                want[kind].append((pid, name, round(m[1] * 1000 + off), round((m[2] - m[1]) * 1000)))
        for ctr in proc.get("counters", []):
            key = (pid, ctr["name"][len("CPU ns: "):])
            cpu_g[key] = sum(r[1] for r in ctr["samples"]["data"])
    got = {"event": [], "interval": [], "marker": []}
    series = {}
    for e in c["traceEvents"]:
        if e["ph"] == "X":
            kind = {"event": "event", "marker": "marker"}.get(e["cat"], "interval")
            if kind == "interval" and not (e.get("args") or {}).get("acquired"):
                continue
            got[kind].append((e["pid"], e["name"], round(e["ts"]), round(e["dur"])))
        elif e["ph"] == "C":
            for k, v in e["args"].items():
                series.setdefault((e["pid"], e["name"][len("CPU "):], k), []).append((e["ts"], v))
    for kind in want:
        a, b = sorted(want[kind]), sorted(got[kind])
        # ±1 µs: the two outputs round ns to µs at different places
        same = len(a) == len(b) and all(x[:2] == y[:2] and abs(x[2] - y[2]) <= 1 and
                                        abs(x[3] - y[3]) <= 1 for x, y in zip(a, b))
        if not same:
            fail("chrome %ss differ from the Gecko markers: %d vs %d, first %r / %r"
                 % (kind, len(b), len(a), b[:2], a[:2]))
        else:
            print("ok chrome: the same %d %ss as the Gecko profile" % (len(a), kind))
    cpu_c = {}
    for (pid, group, _), pts in series.items():
        pts.sort()
        area = sum(v * (pts[i + 1][0] - ts) * 1000 for i, (ts, v) in enumerate(pts[:-1]))
        cpu_c[(pid, group)] = cpu_c.get((pid, group), 0) + area
    for key, ns in cpu_g.items():
        if abs(cpu_c.get(key, 0) - ns) > max(ns * 0.001, 1000):
            fail("chrome CPU counter %r integrates to %d ns, the Gecko counter to %d" % (key, cpu_c.get(key, 0), ns))
    print("ok chrome: %d CPU counters integrate to the Gecko counters' sums" % len(cpu_g))


def record_trace(argv, base, mode="trace"):
    """Runs argv recording in trace mode (or `mode`) to BASE.pgm, converts it to BASE.json and
    checks it. Returns (pgm, json), json None on failure."""
    pgm, gecko = base + ".pgm", base + ".json"
    if os.path.exists(pgm):
        os.unlink(pgm)
    env = dict(os.environ, PERFGROUP_OUTPUT=pgm, PERFGROUP_MODE=mode, PERFGROUP_BUFFER="16M")
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    if p.returncode != 0:
        fail("run %s: exit %d: %s" % (argv[0], p.returncode, p.stderr))
        return pgm, None
    rc, _, err = run([pgm, "-o", gecko, "--no-progress"])
    if rc != 0:
        fail("convert: exit %d: %s" % (rc, err))
        return pgm, None
    check_json(gecko)
    return pgm, gecko


def stacks(cc, plugin, runtime, include, src):
    """stacks_app.c built with a real plugin, recorded in trace mode: every sample inside a
    phase marker carries that phase's stack (STACKS)."""
    d = os.path.join(WORK, "stacks-" + os.path.basename(cc))
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    exe = os.path.join(d, "stacks_app")
    cmd = [cc, "-O0", "-g", plugin, "-fplugin-arg-perfgroup-default=app", "-I", include, src,
           "-o", exe, runtime, "-Wl,-rpath," + os.path.dirname(runtime), "-pthread"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail("build: %s\n%s" % (" ".join(cmd), p.stderr))
        return
    pgm, gecko = record_trace([exe], os.path.join(d, "stacks"))
    if not gecko:
        return
    prof = json.load(open(gecko))
    seen = {}
    for t in prof["threads"]:
        walk = thread_stacks(t)
        strings = t["stringTable"]
        phases = [(m[1], m[2], m[5]["text"]) for m in t["markers"]["data"]
                  if strings[m[0]] == "phase" and m[2] is not None]
        for row in t["samples"]["data"]:
            for a, b, name in phases:
                if a <= row[1] < b:
                    got = " > ".join(walk(row[0]))
                    seen[name] = seen.get(name, 0) + 1
                    if got != STACKS.get(name):
                        fail("%s: sample at %.3f ms in phase %s: stack %s, want %s"
                             % (t["name"], row[1], name, got, STACKS.get(name)))
    check_counters(gecko, [pgm])
    compare_chrome(gecko, [pgm])
    for name in STACKS:
        if seen.get(name, 0) < 4:
            fail("phase %s: %d samples checked, want >= 4" % (name, seen.get(name, 0)))
        else:
            print("ok %s: %d samples, stack %s" % (name, seen[name], STACKS[name]))


def demo(exe):
    """The event-loop demo (examples/eventloop.c) recorded in trace mode as scripts/demo.sh
    does: the Gecko profile passes the checker (every marker and sample inside
    profilingStartTime..EndTime, CPU rows on the grid and <= 100 %), its counters add up to
    the groups' CPU, and every sample inside a nested keypress's dispatch carries the whole
    chain."""
    d = os.path.join(WORK, "demo")
    os.makedirs(d, exist_ok=True)
    pgm, gecko = record_trace([exe, "20"], os.path.join(d, "demo"))
    if not gecko:
        return
    check_counters(gecko, [pgm])
    compare_chrome(gecko, [pgm])
    t = json.load(open(gecko))["threads"][0]
    walk = thread_stacks(t)
    strings = t["stringTable"]
    nested = [(m[1], m[2]) for m in t["markers"]["data"] if strings[m[0]] == "keypress (nested)"]
    # sync_save and spell_lookup are elided (static, called only from their own group: only
    # ever a re-entry, docs/plugins.md), so the chain shows the hooked frames
    chain = ("core", "main", "dispatch", "sync", "sync_on_tick", "core", "dispatch", "spell",
             "spell_on_key")
    # inside a nested keypress's core intervals: the event's own code around dispatch (its
    # begin's and end's few us: 6.1 and 0.6 us in one run) rightly shows the outer chain, and a
    # sample on the 1 ms grid lands there now and then (CI: one at 89.000 ms under load)
    cores = [(m[1], m[2]) for m in t["markers"]["data"]
             if strings[m[0]] == "core" and m[1] is not None and m[2] is not None]
    inside = [(c0, c1) for a, b in nested for c0, c1 in cores if a <= c0 and c1 <= b]
    n = 0
    for row in t["samples"]["data"]:
        if any(a <= row[1] < b for a, b in inside):
            n += 1
            if walk(row[0])[:len(chain)] != chain:
                fail("nested keypress sample at %.3f ms: %s" % (row[1], " > ".join(walk(row[0]))))
    if n < 20:  # the janky nested keypress alone is 40 ms
        fail("only %d samples in nested keypresses" % n)
    else:
        print("ok %d nested-keypress samples: %s > ..." % (n, " > ".join(chain)))
    pgm, gecko = record_trace([exe, "20"], os.path.join(d, "demo-stats"), mode="stats")
    if gecko:
        check_cpu_delta(gecko, pgm)


def check_cpu_delta(gecko, pgm):
    """Stats mode's threadCPUDelta is the CPU each sample stands for, as the front-end reads it
    (CPU since the previous sample, its CPU graph's height): never more than the time since
    the previous sample (the events' CPU spread over their spans), adding up to the thread's
    CPU — not one interval on every sample, which drew a short event as a 260 % spike."""
    rc, out, err = run([pgm, "--summary", "--json", "--no-progress"])
    if rc != 0:
        fail("summary: exit %d: %s" % (rc, err))
        return
    proc = json.loads(out)["processes"][0]
    cpu = {t["tid"]: t["cpu_ms"] * 1e6 for t in proc["threads"]}
    slack = (len(proc["groups"]) + 2) * 1e6  # CPU not yet a whole sample at the end
    for t in json.load(open(gecko))["threads"]:
        schema, rows = t["samples"]["schema"], t["samples"]["data"]
        if "threadCPUDelta" not in schema:
            fail("%s: stats mode has no threadCPUDelta" % t["name"])
            continue
        c, tm = schema["threadCPUDelta"], schema["time"]
        over = [(r[tm], r[c], (r[tm] - p[tm]) * 1e6) for p, r in zip(rows, rows[1:])
                if r[c] > (r[tm] - p[tm]) * 1e6 * 1.02 + 2000]
        total, want = sum(r[c] for r in rows), cpu.get(t["tid"], 0)
        if over:
            fail("%s: %d samples use more CPU than the time since the previous one, first at "
                 "%.3f ms: %d ns in %.0f ns" % (t["name"], len(over), *over[0]))
        elif not want - slack <= total <= want + 1000:
            fail("%s: threadCPUDelta adds up to %d ns, the thread's CPU is %d ns"
                 % (t["name"], total, want))
        else:
            print("ok %s: %d samples' threadCPUDelta <= 100 %%, %.3f of %.3f ms CPU"
                  % (t["name"], len(rows), total / 1e6, want / 1e6))


def many(sanitized=False):
    """Many inputs (a test suite's forks and execs): peak RSS stays bounded (<= 64 MiB for 500
    files, as issue 17 asks) and grows by a small constant per file, not with each file's
    definitions (here 2000 functions each): files wait their turn with only their header facts
    in memory. Under a sanitizer (RSS not checked) 100 files: they only have to convert."""
    nfiles = 100 if sanitized else 500
    d = os.path.join(WORK, "many")
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    r = gen_pgm.Recording(program="suite-test", mode=gen_pgm.STATS, chunk_size=65536)
    for g in range(200):
        r.group(g + 1, "group-%03d-with-a-long-name" % g)
    for s in range(2000):
        r.site(100 + s, "_ZN5suite6module%dE8functionEv" % s, "src/module/file%04d.cc" % s, s,
               [1 + s % 200])
    r.string(1, "test")
    r.thread(0, r.pid, "main")
    for i in range(20):
        r.event(0, 1, i * MS, i * MS + MS // 2, MS // 2, [(1 + i, MS // 2, MS // 2, 1)])
    data = r.build()
    paths = []
    for i in range(nfiles):
        paths.append(os.path.join(d, "t.%d.pgm" % i))
        with open(paths[-1], "wb") as f:
            f.write(data)

    def peak(n, args):
        """Peak RSS in KiB, from GNU time (scripts/deps.sh): a child of this script would
        inherit the script's own peak across exec()."""
        out = os.path.join(d, "rss")
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out, CONVERT] + paths[:n] + args +
                           ["--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode != 0:
            fail("%d files %s: exit status %d" % (n, args, p.returncode))
        return int(open(out).read().split()[-1])
    for args in (["-o", os.devnull], ["--format", "chrome", "-o", os.devnull], ["--summary"]):
        few, lots = peak(20, args), peak(nfiles, args)
        if sanitized:  # ASan's quarantine holds freed memory: peak RSS says nothing here
            print("ok %s: %d files convert (peak RSS not checked under a sanitizer)"
                  % (args[0], nfiles))
            continue
        per_file = (lots - few) / (nfiles - 20.0)
        if lots > 64 * 1024 or per_file > 16:
            fail("%s: peak RSS %d KiB for 20 files, %d KiB for %d (%.1f KiB per file more; "
                 "want <= 64 MiB and <= 16 KiB per file)" % (args[0], few, lots, nfiles, per_file))
        else:
            print("ok %s: peak RSS %d KiB for 20 files, %d KiB for %d (%.1f KiB per file)"
                  % (args[0], few, lots, nfiles, per_file))
    for p in paths:
        os.unlink(p)


def progress():
    """The progress line: on a terminal by default, never on a pipe or with --no-progress."""
    d = os.path.join(WORK, "progress")
    os.makedirs(d, exist_ok=True)
    src = gen("trace", os.path.join(d, "p.pgm"))[0]
    rc, _, err = run([src, "-o", os.devnull])
    if rc != 0 or err:
        fail("progress: stderr is a pipe, want silence, got %r (exit %d)" % (err, rc))
    rc, _, err = run([src, "-o", os.devnull, "--progress"])
    if "100% (" not in err:
        fail("progress: --progress printed %r" % err)
    # a real terminal: util-linux script(1) runs the converter on a pty
    cmd = "%s %s -o %s" % (CONVERT, src, os.devnull)
    p = subprocess.run(["script", "-qec", cmd, os.devnull], capture_output=True, text=True)
    if "perfgroup-convert: 100% (" not in p.stdout:
        fail("progress: nothing on a terminal: %r" % p.stdout)
    else:
        print("ok progress on a terminal: %r" % p.stdout.strip().split("\r")[-1])


def corpus(cc, plugin, runtime, include, src):
    """A corpus program (tests/corpus/) built with a real plugin at -O0 and recorded in trace
    mode; the deterministic projection of the converter's outputs (per group: activations and
    events; per interval marker: name and function, counted; user markers) must equal
    golden/corpus/<program>.json, one file for both compilers."""
    sys.path.insert(0, os.path.join(HERE, "..", "corpus"))
    import run_corpus
    name = os.path.splitext(os.path.basename(src))[0]
    d = os.path.join(WORK, "corpus-%s-%s" % (cc, name))
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    dr = run_corpus.directives(src)
    if dr["only"] and not any(e.split(">=")[0] == cc for e in dr["only"]):  # clang>=14: clang-14
        print("SKIP: %s is for %s only" % (name, dr["only"]))
        sys.exit(77)
    lang = "c++" if src.endswith((".cc", ".cpp", ".cxx")) else "c"
    comp = run_corpus.COMPILERS[cc][lang]
    obj, exe = os.path.join(d, "prog.o"), os.path.join(d, "prog")
    cmd = ([comp, "-O0", "-g", "-pthread", plugin] + ["-fplugin-arg-perfgroup-" + o for o in dr["options"]]
           + dr["cflags"] + ["-I" + include, "-c", src, "-o", obj])
    objs = [obj]
    for k, unit in enumerate([src] + dr["sources"]):   # more units: run_corpus.py's sources
        if k:
            objs.append(os.path.join(d, "unit%d.o" % k))
            cmd = cmd[:cmd.index("-c")] + ["-x", lang, "-c", unit, "-o", objs[-1]]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            fail("compile: %s\n%s" % (" ".join(cmd), p.stderr))
            return
    # the link needs them too (with clang, a libomp: run_corpus.py)
    version = subprocess.run([comp, "-dumpversion"], capture_output=True,
                             text=True).stdout.split(".")[0]
    openmp = run_corpus.openmp_link_flags("clang" if "clang" in os.path.basename(comp) else "gcc",
                                          version, dr["cflags"])
    p = subprocess.run([comp, "-pthread", *openmp, *objs, "-o", exe, runtime, "-Wl,-rpath," + os.path.dirname(runtime)],
                       capture_output=True, text=True)
    if p.returncode:
        fail("link: " + p.stderr)
        return
    pgm = os.path.join(d, "rec.pgm")
    env = dict(os.environ, PERFGROUP_OUTPUT=pgm, PERFGROUP_MODE="trace")
    # The golden counts activations, and a stopwatch that ends on another CPU is discarded
    # by design (docs/accounting.md): on this busy 2-core VM a migration would flake the
    # count, so the program runs on one CPU, as the runtime tests do.
    one_cpu = {min(os.sched_getaffinity(0))}
    p = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=60,
                       preexec_fn=lambda: os.sched_setaffinity(0, one_cpu))
    if p.returncode != dr["exit"]:
        fail("run: exit %d, want %d: %s" % (p.returncode, dr["exit"], p.stderr))
        return
    gecko, chrome = os.path.join(d, "out.json"), os.path.join(d, "out.chrome.json")
    for args in (["-o", gecko], ["--format", "chrome", "-o", chrome]):
        rc, _, err = run([pgm, "--no-progress"] + args)
        if rc:
            fail("convert %s: exit %d: %s" % (args, rc, err))
            return
    check_json(gecko)
    check_json(chrome)
    rc, out, err = run([pgm, "--summary", "--json", "--no-progress"])
    if rc:
        fail("summary: exit %d: %s" % (rc, err))
        return
    summ = json.loads(out)
    proj = {"groups": {r["group"]: {"activations": r["activations"], "events": r["events"]}
                       for r in summ["overall"]["groups"]},
            "intervals": {}, "markers": {}}
    prof = json.load(open(gecko))
    for t in prof["threads"]:
        st = t["stringTable"]
        for m in t["markers"]["data"]:
            data = m[5] or {}
            if data.get("type") == "PerfgroupInterval":
                k = "%s: %s" % (st[m[0]], st[data["function"]])
                proj["intervals"][k] = proj["intervals"].get(k, 0) + 1
            elif data.get("type") == "PerfgroupMarker":
                proj["markers"][st[m[0]]] = proj["markers"].get(st[m[0]], 0) + 1
    text = json.dumps(proj, indent=1, sort_keys=True) + "\n"
    if check_golden(os.path.join(GOLDEN, "corpus", name + ".json"), text, "got"):
        print("ok %s: %d groups, %d interval kinds" % (name, len(proj["groups"]), len(proj["intervals"])))


def recycled(make):
    """A real recording whose buffer (2 MiB) is far smaller than what was written (20 MB):
    the recorder recycled chunks; the profile must say where records were dropped."""
    d = os.path.join(WORK, "recycled")
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "r.pgm")
    if os.path.exists(src):
        os.unlink(src)
    subprocess.run([make, src, "20", "trace", "2"], check=True)
    out = os.path.join(d, "r.json")
    rc, _, err = run([src, "-o", out, "--no-progress"])
    if rc != 0:
        fail("recycled: exit %d: %s" % (rc, err))
        return
    check_json(out)
    p = json.load(open(out))
    drops = [m[5] for t in p["threads"] for m in t["markers"]["data"]
             if t["stringTable"][m[0]] == "Records dropped"]
    if not drops or not all(x["records"] > 0 for x in drops):
        fail("recycled: no 'Records dropped' marker with a count")
    rc, text, err = run([src, "--summary", "--no-progress"])
    if rc != 0 or "records dropped" not in text.splitlines()[0]:
        fail("recycled: the summary does not say records were dropped: %r" % text[:200])
    else:
        print("ok recycled: %d drop markers; %s" % (len(drops), text.splitlines()[0]))


def recycled_trace(cc, plugin, runtime, include, src):
    """recycled_app.c built with a real plugin, recorded in trace mode into a 1 MiB buffer it
    overflows several times: `serve` (group loop) spans the run and its steps' early records
    are recycled. The call tree must not give that stretch to serve as its own time
    (docs/converter.md, "Recycled records"): the samples start where the thread's records
    are complete, serve's interval (begun before) has no self time in the Gecko marker or the
    Chrome slice, the intervals after it do. The same program with a buffer that holds it
    all: serve's self time is there."""
    d = os.path.join(WORK, "recycled-" + os.path.basename(cc))
    os.makedirs(d, exist_ok=True)
    exe = os.path.join(d, "recycled_app")
    cmd = [cc, "-O2", "-g", plugin, "-I", include, src, "-o", exe, runtime,
           "-Wl,-rpath," + os.path.dirname(runtime)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail("build: %s\n%s" % (" ".join(cmd), p.stderr))
        return
    for buf, recycles in (("1M", True), ("64M", False)):
        fails0 = len(FAILS)
        base = os.path.join(d, "r" + buf)
        pgm, gecko = base + ".pgm", base + ".json"
        if os.path.exists(pgm):
            os.unlink(pgm)
        env = dict(os.environ, PERFGROUP_OUTPUT=pgm, PERFGROUP_MODE="trace", PERFGROUP_BUFFER=buf)
        p = subprocess.run([exe, "40000"], capture_output=True, text=True, env=env, timeout=120)
        if p.returncode != 0:
            fail("run: exit %d: %s" % (p.returncode, p.stderr))
            return
        # the program's stalls between steps (recycled_app.c): wall time that is serve's own
        stall_list = [(int(a) / 1e6, int(b) / 1e6)
                      for a, b in re.findall(r"^stall (\d+) (\d+)$", p.stdout, re.M)]
        m = re.search(r"^stalls (\d+)$", p.stdout, re.M)
        if not m or int(m.group(1)) != len(stall_list):
            fail("run: no whole stall list: %r" % p.stdout[-200:])
            return
        rc, text, err = run([pgm, "--summary", "--no-progress"])
        dropped = rc == 0 and "records dropped" in text.splitlines()[0]
        if dropped != recycles:
            fail("buffer %s: records dropped %s, want %s: %r" % (buf, dropped, recycles, text[:200]))
            continue
        rc, _, err = run([pgm, "-o", gecko, "--no-progress"])
        if rc != 0:
            fail("convert: exit %d: %s" % (rc, err))
            continue
        check_json(gecko)
        prof = json.load(open(gecko))
        t = prof["threads"][0]
        strings, walk = t["stringTable"], thread_stacks(t)
        samples = t["samples"]["data"]
        leaves = [walk(row[0])[-1] if walk(row[0]) else None for row in samples]
        own = leaves.count("serve")
        intervals = [(strings[m[0]], m[1], m[5]) for m in t["markers"]["data"]
                     if m[5] and m[5].get("type") == "PerfgroupInterval"]
        loop = [m for m in intervals if m[0] == "loop"]
        work = [m for m in intervals if m[0] == "work"]
        if len(samples) < 20 or len(loop) != 1 or not work:
            fail("buffer %s: %d samples, %d loop and %d work intervals" % (buf, len(samples),
                 len(loop), len(work)))
            continue
        # serve's own wall time is its loop's few instructions and the hooks around each step
        # (the summary: ~0.5 % of the run), and the stalls the program measured there that
        # fall in the samples' stretch (from serve's start, as its marker's; 1 ms of slack
        # for where serve's clock starts), a sample per `interval` ms of them and one more
        # each for the grid (a 9.7 ms stall in a chunk switch made 14 of 134 samples in a CI
        # run); the recycled stretch, counted as its own, was ~90 % of the samples
        interval = prof["meta"]["interval"]
        first = samples[0][1]
        stall_ms = sum(min(dur, at + dur - (first - loop[0][1]) + 1) for at, dur in stall_list
                       if loop[0][1] + at + dur + 1 >= first)
        stalls = sum(1 for at, dur in stall_list if loop[0][1] + at + dur + 1 >= first)
        bound = max(3, len(samples) // 10) + int(math.ceil(stall_ms / interval)) + stalls
        if own > bound:
            fail("buffer %s: %d of %d samples have serve as their leaf (bound %d, with %d "
                 "stalls of %.1f ms there): the stretch whose records were recycled counted "
                 "as its own time" % (buf, own, len(samples), bound, stalls, stall_ms))
        if recycles:
            if "self" in loop[0][2]:
                fail("recycled: serve began before the records are complete, yet its marker "
                     "has a self time %r" % loop[0][2]["self"])
            if first <= loop[0][1] + 1:
                fail("recycled: the samples start at %.3f ms, serve at %.3f ms: before the "
                     "records are complete" % (first, loop[0][1]))
            late = [m for m in work if m[1] >= first]
            if not late or any("self" not in m[2] for m in late):
                fail("recycled: a work interval after the first sample without its self time")
        elif "self" not in loop[0][2]:
            fail("whole run kept: serve's marker has no self time")
        # Chrome: the same rule for args.self_ms
        chrome = base + ".chrome.json"
        rc, _, err = run([pgm, "--format", "chrome", "-o", chrome, "--no-progress"])
        if rc != 0:
            fail("chrome: exit %d: %s" % (rc, err))
            continue
        ev = json.load(open(chrome))["traceEvents"]
        serve = [e for e in ev if e.get("ph") == "X" and e.get("name") == "serve"]
        if len(serve) != 1 or ("self_ms" in serve[0].get("args", {})) == recycles:
            fail("buffer %s: chrome serve slices %r" % (buf, serve))
        if len(FAILS) == fails0:
            print("ok buffer %s: %d samples from %.3f ms, %d with serve as leaf (bound %d: "
                  "%d stalls, %.1f ms); serve self %r" % (buf, len(samples), first, own, bound,
                                                          stalls, stall_ms,
                                                          loop[0][2].get("self")))


def main(argv):
    os.makedirs(WORK, exist_ok=True)
    cmd, rest = argv[0], argv[1:]
    if cmd == "golden":
        golden(rest[0])
    elif cmd == "bad":
        bad(rest[0])
    elif cmd == "faithful":
        faithful(rest[0])
    elif cmd == "cut":
        cut()
    elif cmd == "fork":
        fork()
    elif cmd == "pgm":
        pgm(rest)
    elif cmd == "corpus":
        corpus(*rest)
    elif cmd == "recycled":
        recycled(rest[0])
    elif cmd == "recycled_trace":
        recycled_trace(*rest)
    elif cmd == "progress":
        progress()
    elif cmd == "real":
        real(*rest)
    elif cmd == "stacks":
        stacks(*rest)
    elif cmd == "demo":
        demo(rest[0])
    elif cmd == "many":
        many(bool(rest))
    else:
        sys.stderr.write(__doc__)
        return 2
    print("%d passed, %d failed" % (0 if FAILS else 1, 1 if FAILS else 0))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
