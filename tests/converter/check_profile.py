#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_profile.py — structural checker for perfgroup-convert's outputs, run on every
profile the test suite produces. For a Gecko profile it enforces the rules of
shared/GECKO_FORMAT.md (what the Firefox Profiler's importer accepts and what crashes its UI);
for a Chrome trace, what Perfetto and chrome://tracing need.

    check_profile.py FILE.json...      exit 0 if all pass, 1 with one line per problem
"""
import json
import sys

COLORS = {"transparent", "purple", "green", "orange", "yellow", "lightblue", "blue", "brown",
          "magenta", "red", "lightred", "darkgrey", "grey"}
DISPLAY = {"marker-chart", "marker-table", "timeline-overview", "timeline-memory",
           "timeline-ipc", "timeline-fileio", "timeline-network", "stack-chart"}
FORMATS = {"url", "file-path", "sanitized-string", "string", "unique-string", "flow-id",
           "terminating-flow-id", "duration", "time", "seconds", "milliseconds", "microseconds",
           "nanoseconds", "bytes", "percentage", "integer", "decimal", "hexadecimal", "pid",
           "tid", "list", "table"}
SPECIAL = {"JS allocation", "Native allocation", "GCSlice", "GCMajor", "IPC", "Network",
           "CompositorScreenshot"}
FRAME_SCHEMA = {"location": 0, "relevantForJS": 1, "innerWindowID": 2, "implementation": 3,
                "line": 4, "column": 5, "category": 6, "subcategory": 7}
MARKER_SCHEMA = {"name": 0, "startTime": 1, "endTime": 2, "phase": 3, "category": 4, "data": 5}


class Checker:
    def __init__(self, path):
        self.path = path
        self.problems = []
        self.range = None
        self.interval = 1
        self.off = 0

    def err(self, where, what):
        if len(self.problems) < 50:
            self.problems.append("%s: %s: %s" % (self.path, where, what))

    def num(self, v):
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    def idx(self, v, n):
        return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < n

    # ---- Gecko --------------------------------------------------------------------------
    def gecko(self, p):
        for k in ("meta", "threads", "processes", "libs"):
            if k not in p:
                self.err("profile", "missing top-level %r" % k)
                return
        if not isinstance(p["threads"], list) or not p["threads"]:
            self.err("profile", "threads must be a non-empty list")
        meta = p["meta"]
        if meta.get("version") != 36:
            self.err("meta", "version must be 36, is %r" % meta.get("version"))
        if not (self.num(meta.get("interval")) and meta["interval"] > 0):
            self.err("meta", "interval must be a positive number")
        if meta.get("presymbolicated") is not True:
            self.err("meta", "presymbolicated must be true")
        if not self.num(meta.get("startTime")):
            self.err("meta", "startTime must be a number")
        if not isinstance(meta.get("product"), str) or not meta["product"]:
            self.err("meta", "product must be a non-empty string")
        cats = meta.get("categories")
        if not isinstance(cats, list) or not cats:
            self.err("meta", "categories must be a non-empty list")
            cats = []
        for i, c in enumerate(cats):
            if not isinstance(c.get("name"), str):
                self.err("meta.categories[%d]" % i, "name missing")
            if c.get("color") not in COLORS:
                self.err("meta.categories[%d]" % i, "color %r not allowed" % c.get("color"))
            if not isinstance(c.get("subcategories"), list) or not c["subcategories"]:
                self.err("meta.categories[%d]" % i, "subcategories must be a non-empty list")
        if not any(c.get("color") == "grey" for c in cats):
            self.err("meta.categories", "no grey category")
        schemas = self.marker_schemas(meta.get("markerSchema"))
        # Without profilingStartTime/EndTime the front-end starts the range at the first
        # sample: markers before it are in neither the chart nor the table. With them, every
        # time of every process (shifted by its startTime) must lie inside.
        lo, hi = meta.get("profilingStartTime"), meta.get("profilingEndTime")
        if not (self.num(lo) and self.num(hi) and lo <= hi):
            self.err("meta", "profilingStartTime <= profilingEndTime needed, are %r, %r" % (lo, hi))
            self.range = None
        else:
            self.range = (lo, hi)
        self.interval = meta.get("interval")
        self.process(p, cats, schemas, "profile", True)
        for i, sub in enumerate(p["processes"]):
            where = "processes[%d]" % i
            for k in ("meta", "threads", "libs", "processes"):
                if k not in sub:
                    self.err(where, "missing %r" % k)
                    break
            else:
                if not self.num(sub["meta"].get("startTime")):
                    self.err(where + ".meta", "startTime must be a number")
                if sub["meta"].get("version") != 36:
                    self.err(where + ".meta", "version must be 36")
                if sub["processes"]:
                    self.err(where, "nested sub-processes are ignored by the importer")
                self.process(sub, cats, schemas, where, False,
                             sub["meta"]["startTime"] - meta["startTime"])
        self.hidden_main_threads(p)
        return cats

    def hidden_main_threads(self, p):
        """The front-end gives each pid one process track, showing the LAST thread named
        GeckoMain of that pid (src/profile-logic/tracks.ts); other GeckoMain threads are on no
        track at all. So a GeckoMain with samples or markers must be its pid's last (a fork
        child's main thread followed by the image it exec'd: the child's must not be
        GeckoMain)."""
        procs = [p] + [q for q in p["processes"] if isinstance(q, dict)]
        last = {}
        for i, q in enumerate(procs):
            for j, t in enumerate(q.get("threads") or []):
                if isinstance(t, dict) and t.get("name") == "GeckoMain":
                    last[t.get("pid")] = (i, j)
        for i, q in enumerate(procs):
            for j, t in enumerate(q.get("threads") or []):
                if not isinstance(t, dict) or t.get("name") != "GeckoMain":
                    continue
                data = [len((t.get(k) or {}).get("data") or []) for k in ("samples", "markers")]
                if any(data) and last.get(t.get("pid")) != (i, j):
                    self.err("processes[%d]" % (i - 1) if i else "profile",
                             "GeckoMain of pid %r with %d samples, %d markers is not its pid's "
                             "last GeckoMain: the front-end shows it nowhere" % (t.get("pid"), *data))

    def marker_schemas(self, ms):
        out = {}
        if not isinstance(ms, list):
            self.err("meta", "markerSchema must be a list")
            return out
        for s in ms:
            name = s.get("name")
            where = "markerSchema[%r]" % name
            if not isinstance(name, str):
                self.err(where, "name missing")
                continue
            if name in SPECIAL:
                self.err(where, "special payload type name")
            if not isinstance(s.get("display"), list):
                self.err(where, "display missing")
            else:
                for d in s["display"]:
                    if d not in DISPLAY:
                        self.err(where, "display %r unknown" % d)
            if not isinstance(s.get("data"), list):
                self.err(where, "data missing")
                continue
            fields = {}
            for f in s["data"]:
                if "key" in f:
                    if not isinstance(f.get("label"), str) or f.get("format") not in FORMATS:
                        self.err(where, "field %r needs a label and a known format" % f.get("key"))
                    fields[f["key"]] = f.get("format")
            out[name] = fields
        return out

    def table(self, t, name, schema=None):
        tab = t.get(name)
        if not isinstance(tab, dict) or "schema" not in tab or not isinstance(tab.get("data"), list):
            self.err("thread %r" % t.get("name"), "%s needs {schema, data}" % name)
            return None, []
        if schema and tab["schema"] != schema:
            self.err("thread %r" % t.get("name"), "%s schema %r" % (name, tab["schema"]))
        return tab["schema"], tab["data"]

    def inside(self, where, what, t, off):
        if self.range is not None and self.num(t) and not (
                self.range[0] - 1e-6 <= t + off <= self.range[1] + 1e-6):
            self.err(where, "%s at %r ms is outside profilingStartTime..EndTime %r" % (what, t + off, self.range))

    def process(self, p, cats, schemas, where, root, off=0):
        self.off = off
        threads = p.get("threads") or []
        main = [t for t in threads if t.get("name") == "GeckoMain"]
        if p.get("counters") and not main:
            self.err(where, "counters but no GeckoMain thread: the importer drops them")
        for c in p.get("counters") or []:
            w = "%s counter %r" % (where, c.get("name"))
            for k in ("name", "category", "description"):
                if not isinstance(c.get(k), str):
                    self.err(w, "%s missing" % k)
            s = c.get("samples", {})
            if s.get("schema") != {"time": 0, "count": 1, "number": 2}:
                self.err(w, "samples schema")
            last, last_count = None, 0
            cpu = c.get("name", "").startswith("CPU ns: ")  # perfgroup's per-group CPU
            for row in s.get("data", []):
                if len(row) != 3 or not all(self.num(x) for x in row):
                    self.err(w, "bad row %r" % (row,))
                    break
                if last is not None and row[0] <= last:
                    self.err(w, "counter times go back or repeat (a rate over no time)")
                    break
                self.inside(w, "counter row", row[0], off)
                if cpu:
                    # CPU used since the previous row, on the sample grid: the first row has
                    # no previous one (0); no more than one CPU per thread of the process
                    if abs(row[0] / self.interval - round(row[0] / self.interval)) > 1e-6:
                        self.err(w, "row at %r ms is off the %r ms grid" % (row[0], self.interval))
                    if last is None and row[1] != 0:
                        self.err(w, "first row has CPU %r without a previous row" % row[1])
                    # the front-end joins rows with lines: after a row with CPU the next one
                    # comes one interval later, or an idle stretch is drawn as a ramp
                    if last is not None and last_count and abs(row[0] - last - self.interval) > 1e-6:
                        self.err(w, "row at %r ms follows a row with CPU %r ms earlier (a ramp)"
                                 % (row[0], row[0] - last))
                    last_count = row[1]
                    if last is not None and row[1] > (row[0] - last) * 1e6 * len(threads) * (1 + 1e-9):
                        self.err(w, "row at %r ms: %r ns of CPU in %r ms (over 100%% per thread)"
                                 % (row[0], row[1], row[0] - last))
                last = row[0]
        for t in threads:
            self.thread(t, cats, schemas)

    def thread(self, t, cats, schemas):
        w = "thread %r" % t.get("name")
        if not isinstance(t.get("name"), str) or not t["name"]:
            self.err(w, "name missing (crashes the UI)")
        for k in ("processType", "processName"):
            if not isinstance(t.get(k), str):
                self.err(w, "%s missing" % k)
        for k in ("pid", "tid"):
            if not isinstance(t.get(k), (int, str)):
                self.err(w, "%s missing" % k)
        if not self.num(t.get("registerTime")):
            self.err(w, "registerTime must be a number")
        if "unregisterTime" not in t or not (t["unregisterTime"] is None or self.num(t["unregisterTime"])):
            self.err(w, "unregisterTime must be a number or null")
        strings = t.get("stringTable")
        if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
            self.err(w, "stringTable must be a list of strings")
            strings = []
        ns = len(strings)
        _, frames = self.table(t, "frameTable", FRAME_SCHEMA)
        for i, f in enumerate(frames):
            if len(f) != 8:
                self.err(w, "frame %d has %d columns" % (i, len(f)))
                continue
            if not self.idx(f[0], ns):
                self.err(w, "frame %d location %r out of range" % (i, f[0]))
            if f[6] is not None:
                if not self.idx(f[6], len(cats)):
                    self.err(w, "frame %d category %r out of range" % (i, f[6]))
                elif f[7] is not None and not self.idx(f[7], len(cats[f[6]].get("subcategories", []))):
                    self.err(w, "frame %d subcategory %r out of range" % (i, f[7]))
            if f[4] is not None and not isinstance(f[4], int):
                self.err(w, "frame %d line %r" % (i, f[4]))
        _, stacks = self.table(t, "stackTable", {"prefix": 0, "frame": 1})
        for i, s in enumerate(stacks):
            if len(s) != 2:
                self.err(w, "stack %d has %d columns" % (i, len(s)))
                continue
            if s[0] is not None and not (isinstance(s[0], int) and 0 <= s[0] < i):
                self.err(w, "stack %d prefix %r does not point to an earlier row" % (i, s[0]))
            if not self.idx(s[1], len(frames)):
                self.err(w, "stack %d frame %r out of range" % (i, s[1]))
        sschema, samples = self.table(t, "samples")
        if sschema is not None:
            for k in ("stack", "time", "eventDelay"):
                if k not in sschema:
                    self.err(w, "samples schema lacks %s" % k)
                    return
            last = None
            cpu = sschema.get("threadCPUDelta")
            for i, s in enumerate(samples):
                st, tm, ed = s[sschema["stack"]], s[sschema["time"]], s[sschema["eventDelay"]]
                if st is not None and not self.idx(st, len(stacks)):
                    self.err(w, "sample %d stack %r out of range" % (i, st))
                if not self.num(tm):
                    self.err(w, "sample %d time %r" % (i, tm))
                    continue
                if last is not None and tm < last:
                    self.err(w, "sample %d time goes back (%r < %r)" % (i, tm, last))
                last = tm
                self.inside(w, "sample %d" % i, tm, self.off)
                if not self.num(ed):
                    self.err(w, "sample %d eventDelay %r" % (i, ed))
                if cpu is not None and not (s[cpu] is None or (self.num(s[cpu]) and s[cpu] >= 0)):
                    self.err(w, "sample %d threadCPUDelta %r" % (i, s[cpu]))
        _, markers = self.table(t, "markers", MARKER_SCHEMA)
        for i, m in enumerate(markers):
            if len(m) != 6:
                self.err(w, "marker %d has %d columns" % (i, len(m)))
                continue
            name, start, end, phase, cat, data = m
            if not self.idx(name, ns):
                self.err(w, "marker %d name %r out of range" % (i, name))
            if phase not in (0, 1, 2, 3):
                self.err(w, "marker %d phase %r" % (i, phase))
            if start is None and end is None:
                self.err(w, "marker %d has both times null (import fails)" % i)
            if phase == 0 and (not self.num(start) or end is not None):
                self.err(w, "instant marker %d needs a start and a null end" % i)
            if phase == 1:
                if not (self.num(start) and self.num(end)):
                    self.err(w, "interval marker %d needs both times (null end crashes the UI)" % i)
                elif end < start:
                    self.err(w, "interval marker %d ends before it starts" % i)
            if not self.idx(cat, len(cats)):
                self.err(w, "marker %d category %r out of range (crashes the UI)" % (i, cat))
            self.inside(w, "marker %d start" % i, start, self.off)
            self.inside(w, "marker %d end" % i, end, self.off)
            if data is not None:
                typ = data.get("type") if isinstance(data, dict) else None
                if typ is None:
                    self.err(w, "marker %d data without type" % i)
                elif typ in SPECIAL:
                    self.err(w, "marker %d uses special payload type %r" % (i, typ))
                elif typ not in schemas:
                    self.err(w, "marker %d type %r has no markerSchema" % (i, typ))
                else:
                    for k, fmt in schemas[typ].items():
                        if fmt == "unique-string" and k in data and not self.idx(data[k], ns):
                            self.err(w, "marker %d field %s is not a string index" % (i, k))

    # ---- Chrome -------------------------------------------------------------------------
    def chrome(self, p):
        ev = p.get("traceEvents")
        if not isinstance(ev, list):
            self.err("trace", "traceEvents must be a list")
            return
        named = set()
        slices, be = {}, {}
        for i, e in enumerate(ev):
            ph = e.get("ph")
            if ph not in ("X", "M", "i", "B", "E", "C"):
                self.err("event %d" % i, "phase %r" % ph)
                continue
            if not isinstance(e.get("name"), str) or not isinstance(e.get("pid"), int) or \
               not isinstance(e.get("tid"), int):
                self.err("event %d" % i, "name/pid/tid missing")
            if ph == "M":
                if e["name"] not in ("process_name", "thread_name") or \
                   not isinstance(e.get("args", {}).get("name"), str):
                    self.err("event %d" % i, "metadata event needs args.name")
                named.add((e["name"], e.get("pid"), e.get("tid")))
                continue
            if not self.num(e.get("ts")):
                self.err("event %d" % i, "ts missing")
            if ph == "X" and not (self.num(e.get("dur")) and e["dur"] >= 0):
                self.err("event %d" % i, "X event needs dur >= 0")
            if ph == "X" and self.num(e.get("ts")) and self.num(e.get("dur")):
                slices.setdefault((e.get("pid"), e.get("tid")), []).append((e["ts"], e["dur"], i))
            if ph in ("B", "E") and self.num(e.get("ts")):
                be.setdefault((e.get("pid"), e.get("tid")), []).append((e["ts"], ph, e["name"], i))
            if ph == "C" and not (isinstance(e.get("args"), dict) and e["args"] and
                                  all(self.num(v) for v in e["args"].values())):
                self.err("event %d" % i, "counter needs args of numbers")
            if ph == "i" and e.get("s", "t") not in ("t", "p", "g"):
                self.err("event %d" % i, "instant scope %r" % e.get("s"))
            if ("thread_name", e.get("pid"), e.get("tid")) not in named:
                self.err("event %d" % i, "thread %r has no thread_name metadata before it" % e.get("tid"))
            if ("process_name", e.get("pid"), e.get("pid")) not in named:
                self.err("event %d" % i, "process %r has no process_name metadata" % e.get("pid"))
        # slices on one thread track must nest: Perfetto drops or cuts the others
        for key, xs in slices.items():
            xs.sort(key=lambda x: (x[0], -x[1]))
            open_ends = []
            for ts, dur, i in xs:
                while open_ends and open_ends[-1] <= ts + 1e-9:
                    open_ends.pop()
                if open_ends and ts + dur > open_ends[-1] + 1e-9:
                    self.err("event %d" % i, "X slice on pid/tid %r overlaps its parent's end" % (key,))
                open_ends.append(ts + dur)
        for key, xs in be.items():
            xs.sort(key=lambda x: x[0])
            stack = []
            for ts, ph, name, i in xs:
                if ph == "B":
                    stack.append(name)
                elif not stack:
                    self.err("event %d" % i, "E without a B on pid/tid %r" % (key,))
                else:
                    stack.pop()
            if stack:
                self.err("trace", "B without an E on pid/tid %r" % (key,))


def check(path):
    c = Checker(path)
    try:
        with open(path, encoding="utf-8") as f:
            p = json.load(f)
    except (OSError, ValueError) as e:
        return ["%s: not JSON: %s" % (path, e)]
    if isinstance(p, dict) and "traceEvents" in p:
        c.chrome(p)
    elif isinstance(p, dict) and "meta" in p:
        c.gecko(p)
    else:
        c.err("file", "neither a Gecko profile nor a Chrome trace")
    return c.problems


def main(paths):
    if not paths:
        sys.stderr.write(__doc__)
        return 2
    bad = 0
    for p in paths:
        probs = check(p)
        for line in probs:
            print(line)
        bad += bool(probs)
    print("%d passed, %d failed" % (len(paths) - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
