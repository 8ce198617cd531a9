#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""checker_selftest.py — check_profile.py must accept a minimal valid Gecko profile and reject
each single defect that GECKO_FORMAT.md says breaks the Firefox Profiler's import or UI."""
import copy
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_profile  # noqa: E402

GOOD = {
    "meta": {"version": 36, "interval": 1, "startTime": 1000.5, "product": "p",
             "profilingStartTime": 0, "profilingEndTime": 2,
             "presymbolicated": True,
             "categories": [{"name": "Idle", "color": "transparent", "subcategories": ["Other"]},
                            {"name": "Other", "color": "grey", "subcategories": ["Other"]}],
             "markerSchema": [{"name": "T", "display": ["marker-table"],
                               "data": [{"key": "k", "label": "K", "format": "integer"}]}]},
    "libs": [], "processes": [],
    "threads": [{
        "name": "GeckoMain", "processType": "default", "processName": "p", "pid": 1, "tid": 1,
        "registerTime": 0, "unregisterTime": None,
        "stringTable": ["a", "b", "m"],
        "frameTable": {"schema": check_profile.FRAME_SCHEMA,
                       "data": [[0, False, 0, None, 1, None, 1, 0], [1, False, 0, None, None, None, 0, 0]]},
        "stackTable": {"schema": {"prefix": 0, "frame": 1}, "data": [[None, 0], [0, 1]]},
        "samples": {"schema": {"stack": 0, "time": 1, "eventDelay": 2},
                    "data": [[1, 0.5, 0], [0, 1.5, 0]]},
        "markers": {"schema": check_profile.MARKER_SCHEMA,
                    "data": [[2, 0.1, None, 0, 1, {"type": "T", "k": 1}], [2, 0.1, 0.9, 1, 1, None]]},
    }],
    "counters": [{"name": "c", "category": "x", "description": "d",
                  "samples": {"schema": {"time": 0, "count": 1, "number": 2},
                              "data": [[0, 1, 1], [1, 2, 1]]}},
                 {"name": "CPU ns: g", "category": "x", "description": "d",
                  "samples": {"schema": {"time": 0, "count": 1, "number": 2},
                              "data": [[0, 0, 1], [1, 1000000, 1], [2, 500000, 1]]}}],
}


def th(p):
    return p["threads"][0]


DEFECTS = {
    "version 37": lambda p: p["meta"].update(version=37),
    "no threads": lambda p: p.update(threads=[]),
    "no libs": lambda p: p.pop("libs"),
    "not presymbolicated": lambda p: p["meta"].pop("presymbolicated"),
    "no grey category": lambda p: p["meta"]["categories"][1].update(color="blue"),
    "unknown colour": lambda p: p["meta"]["categories"][0].update(color="pink"),
    "thread without name": lambda p: th(p).pop("name"),
    "forward stack prefix": lambda p: th(p)["stackTable"]["data"].__setitem__(0, [1, 0]),
    "stack frame out of range": lambda p: th(p)["stackTable"]["data"][1].__setitem__(1, 9),
    "frame category out of range": lambda p: th(p)["frameTable"]["data"][0].__setitem__(6, 7),
    "location out of range": lambda p: th(p)["frameTable"]["data"][0].__setitem__(0, 99),
    "sample stack out of range": lambda p: th(p)["samples"]["data"][0].__setitem__(0, 5),
    "no eventDelay": lambda p: th(p)["samples"].update(schema={"stack": 0, "time": 1}),
    "sample time goes back": lambda p: th(p)["samples"]["data"][1].__setitem__(1, 0.1),
    "marker both times null": lambda p: th(p)["markers"]["data"][0].__setitem__(1, None),
    "interval marker null end": lambda p: th(p)["markers"]["data"][1].__setitem__(2, None),
    "marker category out of range": lambda p: th(p)["markers"]["data"][0].__setitem__(4, 2),
    "marker phase 4": lambda p: th(p)["markers"]["data"][0].__setitem__(3, 4),
    "marker type without schema": lambda p: th(p)["markers"]["data"][0][5].update(type="U"),
    "schema without display": lambda p: p["meta"]["markerSchema"][0].pop("display"),
    "schema without data": lambda p: p["meta"]["markerSchema"][0].pop("data"),
    "schema field unknown format": lambda p: p["meta"]["markerSchema"][0]["data"][0].update(format="x"),
    "counters without GeckoMain": lambda p: th(p).update(name="main"),
    "special payload type": lambda p: p["meta"]["markerSchema"][0].update(name="IPC"),
    "no profilingStartTime": lambda p: p["meta"].pop("profilingStartTime"),
    "marker before profilingStartTime": lambda p: th(p)["markers"]["data"][0].__setitem__(1, -0.5),
    "sample after profilingEndTime": lambda p: th(p)["samples"]["data"][1].__setitem__(1, 2.5),
    "CPU counter over 100%": lambda p: p["counters"][1]["samples"]["data"][2].__setitem__(1, 1500000),
    "CPU counter off the grid": lambda p: p["counters"][1]["samples"]["data"][1].__setitem__(0, 1.5),
    "CPU counter ramp after CPU": lambda p: (p["meta"].update(profilingEndTime=9),
                                             p["counters"][1]["samples"]["data"].append([5, 0, 1])),
    "CPU counter first row not 0": lambda p: p["counters"][1]["samples"]["data"][0].__setitem__(1, 5),
    "counter rows at one time": lambda p: p["counters"][0]["samples"]["data"][1].__setitem__(0, 0),
    # a fork child's main thread, then the image it exec'd (same pid) with its own GeckoMain
    "GeckoMain hidden by a later one": lambda p: p["processes"].append(
        dict(copy.deepcopy({k: v for k, v in p.items() if k != "processes"}), processes=[])),
}


CHROME = {"traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 1, "args": {"name": "p"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t"}},
    {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
    {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 8},
    {"ph": "B", "name": "c", "pid": 1, "tid": 1, "ts": 12},
    {"ph": "E", "name": "c", "pid": 1, "tid": 1, "ts": 13},
    {"ph": "C", "name": "n", "pid": 1, "tid": 1, "ts": 1, "args": {"1": 0.5}},
    {"ph": "i", "name": "d", "pid": 1, "tid": 1, "ts": 1, "s": "t"}]}

CHROME_DEFECTS = {
    "chrome X slices overlap": lambda p: p["traceEvents"][3].update(dur=9),
    "chrome E without B": lambda p: p["traceEvents"].pop(4),
    "chrome B without E": lambda p: p["traceEvents"].pop(5),
    "chrome counter without numbers": lambda p: p["traceEvents"][6].update(args={"1": "x"}),
    "chrome thread without name": lambda p: p["traceEvents"].pop(1),
    "chrome X without dur": lambda p: p["traceEvents"][2].pop("dur"),
}


def problems(p):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(p, f)
    try:
        return check_profile.check(f.name)
    finally:
        os.unlink(f.name)


def main():
    bad = 0
    for good, defects, kind in ((GOOD, DEFECTS, "Gecko profile"), (CHROME, CHROME_DEFECTS, "Chrome trace")):
        got = problems(good)
        if got:
            print("FAIL: the valid %s was rejected: %s" % (kind, got))
            bad += 1
        for name, mutate in defects.items():
            p = copy.deepcopy(good)
            mutate(p)
            got = problems(p)
            if got:
                print("ok %s: %s" % (name, got[0]))
            else:
                print("FAIL: %s was not caught" % name)
                bad += 1
    n = len(DEFECTS) + 1 + len(CHROME_DEFECTS) + 1
    print("%d passed, %d failed" % (n - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
