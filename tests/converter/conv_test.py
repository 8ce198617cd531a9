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
    conv_test.py pgm FILE...        real recordings: every format converts and checks
    conv_test.py real CXX PLUGINFLAG RUNTIME INCLUDE SRC
                                    build SRC with a real plugin, record it (trace and stats
                                    mode, with a fork), convert parent+child, check the result

Environment: PGC_CONVERT (the program), PGC_WORK (a scratch directory); PGC_UPDATE=1 rewrites
the golden files instead of comparing (review the diff before committing it).
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")
sys.path.insert(0, HERE)
import check_profile  # noqa: E402
import gen_pgm  # noqa: E402

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
        with open(p, "wb") as f:
            f.write(r.build())
        paths.append(p)
    return paths


def check_json(path):
    probs = check_profile.check(path)
    for p in probs:
        fail("checker: " + p)
    return not probs


def convert_all(scenario):
    """Every output of one scenario: {suffix: (path, text)}."""
    d = os.path.join(WORK, scenario)
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


def golden(scenario):
    outs = convert_all(scenario)
    os.makedirs(GOLDEN, exist_ok=True)
    for suffix, (path, text, _) in outs.items():
        g = os.path.join(GOLDEN, "%s.%s" % (scenario, suffix))
        if os.environ.get("PGC_UPDATE"):
            with open(g, "w") as f:
                f.write(text)
            continue
        if not os.path.exists(g):
            fail("no golden file %s (run with PGC_UPDATE=1 and review it)" % g)
            continue
        with open(g) as f:
            want = f.read()
        if want != text:
            import difflib
            diff = list(difflib.unified_diff(want.splitlines(), text.splitlines(), g, path,
                                             lineterm="", n=1))
            fail("%s differs from %s:\n%s" % (path, g, "\n".join(diff[:40])))


def bad(kind):
    d = os.path.join(WORK, "bad-" + kind)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    src = os.path.join(d, "in.pgm")
    with open(src, "wb") as f:
        f.write(gen_pgm.bad(kind))
    for args, out in ((["-o", os.path.join(d, "out.json")], "out.json"),
                      (["--format", "chrome", "-o", os.path.join(d, "out.json")], "out.json"),
                      (["--summary"], None)):
        rc, stdout, err = run([src] + args + ["--no-progress"])
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
    outs = convert_all(scenario)
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
    outs = convert_all("fork")
    p = json.load(open(outs["gecko.json"][0]))
    if len(p["processes"]) != 1:
        fail("fork: want 1 sub-process, got %d" % len(p["processes"]))
        return
    sub = p["processes"][0]
    off = sub["meta"]["startTime"] - p["meta"]["startTime"]
    if abs(off - 15) > 1e-6:
        fail("fork: child starts %r ms after the parent, want 15" % off)
    pids = {t["pid"] for t in p["threads"]}, {t["pid"] for t in sub["threads"]}
    if pids != ({2000}, {2001}):
        fail("fork: pids %r" % (pids,))
    names = sorted(t["name"] for t in sub["threads"])
    if names != ["GeckoMain", "child-worker"]:
        fail("fork: child threads %r" % names)
    if not p.get("counters") or not sub.get("counters"):
        fail("fork: per-group CPU counters missing")
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
        names = [t["name"] for t in prof["threads"]]
        if "rt-worker" not in names or "GeckoMain" not in names:
            fail("%s: thread names %r" % (mode, names))
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
    elif cmd == "real":
        real(*rest)
    else:
        sys.stderr.write(__doc__)
        return 2
    print("%d passed, %d failed" % (0 if FAILS else 1, 1 if FAILS else 0))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
