#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gen_pgm.py — test-only writer of perfgroup recordings (include/perfgroup/format.h),
byte by byte, with python3-msgpack. It makes small, exactly known recordings for the
converter's golden and bad-input tests, independent of the runtime's own writer.

    gen_pgm.py SCENARIO OUT.pgm        one scenario (see SCENARIOS)
    gen_pgm.py --bad KIND OUT.pgm      a broken file (see BAD)
    gen_pgm.py --big MB OUT.pgm        a large stats/trace mix for benchmarks
"""
import struct
import sys

import msgpack

MAGIC = b"PERFGRP\n"
VERSION = 1
HEADER_SIZE = 4096
CHUNK_MAGIC = 0x4B434750
CH = 64  # chunk header size
DEFS_THREAD = 0xFFFFFFFF
CLOCK_TSC, CLOCK_MONO = 1, 3
STATS, TRACE = 1, 2
RECORDING, CLOSED = 1, 2
DATA, DEFS = 1, 2
WRITING, FULL = 1, 2
(R_PROCESS, R_GROUP, R_SITE, R_THREAD, R_STRING) = (1, 2, 3, 4, 5)
(R_CLOCK, R_EVENT, R_INTERVAL, R_MARKER, R_DROPPED, R_OVERHEAD, R_THREAD_END) = range(16, 23)

T0_REAL = 1_763_700_000_000_000_000  # 2025-11-21, ns since the epoch
T0_MONO = 5_000_000_000


def pack(rec):
    return msgpack.packb(rec, use_bin_type=True)


def interval(fid, mask, depth, start, dur):
    # the one exact encoding of PGF_REC_INTERVAL (PGF_INTERVAL_SIZE = 29 bytes)
    return (bytes([0x96, R_INTERVAL, 0xCE]) + struct.pack(">I", fid) + bytes([0xCC, mask, 0xCC, depth])
            + b"\xcf" + struct.pack(">Q", start) + b"\xcf" + struct.pack(">Q", dur))


class Recording:
    """Collects records per chunk owner, then lays them out in fixed-size chunks."""

    def __init__(self, pid=1000, ppid=1, program="demo", mode=STATS, clock=CLOCK_MONO,
                 hz=1_000_000_000, chunk_size=4096, start_real=T0_REAL, start_mono=T0_MONO):
        self.pid, self.ppid, self.program, self.mode = pid, ppid, program, mode
        self.clock_kind, self.hz, self.chunk_size = clock, hz, chunk_size
        self.start_real, self.start_mono = start_real, start_mono
        self.start_tsc = start_mono if clock == CLOCK_MONO else 1_000_000
        self.defs = []
        self.data = {}  # thread index -> [bytes]
        self.state = CLOSED
        self.writing_last = False  # leave each thread's last chunk WRITING
        self.records_dropped = 0
        self.refused = 0  # header offsets 424, 432: the process's refused calls, clamped events
        self.clamped = 0
        self.open = {}  # thread index -> its open-event slot (format.h PGF_CHUNK_OPEN)
        self.process(["--flag"])

    # -- time: ns since start -> clock ticks
    def tsc(self, ns):
        return self.start_tsc + ns * self.hz // 1_000_000_000

    def process(self, args):
        self.defs.append(pack([R_PROCESS, self.pid, self.ppid, self.program, [self.program] + args,
                               self.start_real, self.start_mono, self.start_tsc, self.hz,
                               self.mode, "test-generator"]))

    def group(self, gid, name, kind=1, active=True):
        self.defs.append(pack([R_GROUP, gid, name, kind, active]))

    def site(self, fid, function, file, line, groups, module=None):
        """module: the object the function is in (format version 3's 7th field)"""
        rec = [R_SITE, fid, function, file, line, groups] + ([module] if module else [])
        self.defs.append(pack(rec))

    def thread(self, index, tid, name):
        self.defs.append(pack([R_THREAD, index, tid, name]))
        self.data.setdefault(index, [])
        self.clock(index, 0, 1)  # thread_cpu_ns 0 would mean "not read"

    def string(self, sid, text):
        self.defs.append(pack([R_STRING, sid, text]))

    def clock(self, t, ns, cpu_ns):
        self.data[t].append(pack([R_CLOCK, self.tsc(ns), self.start_real + ns,
                                  self.start_mono + ns, cpu_ns]))

    def event(self, t, name_id, begin_ns, end_ns, cpu_ns, groups, flags=0):
        """groups: [(group_id, wall_ns, cpu_ns, activations)]"""
        g = [[gid, w * self.hz // 1_000_000_000, c, a] for gid, w, c, a in groups]
        self.data[t].append(pack([R_EVENT, name_id, self.tsc(begin_ns), self.tsc(end_ns), cpu_ns,
                                  flags, g]))

    def interval(self, t, fid, mask, depth, start_ns, dur_ns):
        self.data[t].append(interval(fid, mask, depth, self.tsc(start_ns),
                                     dur_ns * self.hz // 1_000_000_000))

    def marker(self, t, name_id, text, start_ns, end_ns):
        self.data[t].append(pack([R_MARKER, name_id, text, self.tsc(start_ns), self.tsc(end_ns)]))

    def dropped(self, t, records, nbytes, chunks):
        self.data[t].append(pack([R_DROPPED, records, nbytes, chunks]))

    def overhead(self, t, commit_ns, commits, slow, resyncs):
        self.data[t].append(pack([R_OVERHEAD, commit_ns, commits, slow, resyncs]))

    def open_slot(self, t, tid, name_id, begin_ns, now_ns, cpu_ns=None, seq=2, groups=(),
                  running=0, more=False):
        """An event of thread t still open at now_ns (cpu_ns None: not known), its groups so
        far (ids; the first `running` of them running)."""
        flags = (0 if name_id else 1) | (0 if cpu_ns is None else 0x100) | (0x200 if more else 0)
        g = list(groups) + [0] * (12 - len(groups))
        self.open[t] = struct.pack("<IIIIQQQIHH12I", seq, t, name_id, flags, self.tsc(begin_ns),
                                   self.tsc(now_ns), cpu_ns or 0, tid, len(groups), running, *g)

    def thread_end(self, t, ns):
        self.data[t].append(pack([R_THREAD_END, self.tsc(ns)]))

    # -- layout
    def _chunks(self, records, owner, kind):
        room = self.chunk_size - CH
        chunks, cur = [], []
        for r in records:
            if len(r) > room:
                raise ValueError("record larger than a chunk")
            if sum(map(len, cur)) + len(r) > room:
                chunks.append(cur)
                cur = []
            cur.append(r)
        if cur or not chunks:
            chunks.append(cur)
        return [(owner, kind, c) for c in chunks]

    def build(self, extra_free=1):
        layout = self._chunks(self.defs, DEFS_THREAD, DEFS)
        for t in sorted(self.data):
            layout += self._chunks(self.data[t], t, DATA)
        # interleave threads' chunks as a real buffer would: seq in order of take
        body = bytearray()
        before = {}
        last_of = {}
        for i, (owner, kind, recs) in enumerate(layout):
            last_of[owner] = i
        for i, (owner, kind, recs) in enumerate(layout):
            payload = b"".join(recs)
            state = FULL
            if self.writing_last and last_of[owner] == i and kind == DATA:
                state = WRITING
            rb = before.get(owner, 0) if kind == DATA else 0
            hdr = struct.pack("<IHHQIIIIQQQQ", CHUNK_MAGIC, kind, state, i + 1,
                              owner, CH, len(payload), len(recs), 0, 0, 0, rb)
            before[owner] = rb + len(recs)
            chunk = hdr + payload
            body += chunk + b"\0" * (self.chunk_size - len(chunk))
        nopen = 0
        if self.open:  # the open events' chunk: a slot per thread index, WRITING for ever
            slots = bytearray(self.chunk_size - CH)
            for t, b in self.open.items():
                slots[(t - 1) * 96:t * 96] = b
            hdr = struct.pack("<IHHQIIIIQQQQ", CHUNK_MAGIC, 3, WRITING, len(layout) + 1,
                              DEFS_THREAD, 0, 0, 0, 0, 0, 0, 0)
            body += hdr + bytes(slots)
            nopen = 1
        nchunks = len(layout) + nopen + extra_free
        body += b"\0" * (self.chunk_size * extra_free)
        prog = self.program.encode()[:255]
        hdr = struct.pack("<8sIIIIQIIIIIIqqQQQQQQ", MAGIC, VERSION, HEADER_SIZE, self.chunk_size,
                          nchunks, HEADER_SIZE, self.pid, self.ppid, self.clock_kind, self.mode,
                          self.state, 0, self.start_real, self.start_mono, self.start_tsc,
                          self.hz, len(layout) + nopen + 1, 0, self.records_dropped, 0)
        hdr += prog + b"\0" * (256 - len(prog))
        hdr += b"\0" * (424 - len(hdr)) + struct.pack("<QQ", self.refused, self.clamped)
        hdr += b"\0" * (HEADER_SIZE - len(hdr))
        assert len(hdr) == HEADER_SIZE
        return bytes(hdr + body)


MS = 1_000_000


def common_defs(r):
    r.group(1, "main-thread", kind=0)
    r.group(2, "parser")
    r.group(3, "render")
    r.group(4, "net \"io\"")  # a name that needs JSON escaping
    r.string(1, "tick")
    r.string(2, "frame")
    r.string(3, "checkpoint")
    r.site(10, "_ZN6parser5parseEPKcm", "src/parser.cc", 42, [2])
    r.site(11, "render_frame", "src/render.c", 7, [3], module="/opt/demo/plugins/render.so")
    r.site(12, "_ZN3net4pollEv", "src/net.cc", 99, [4])
    r.site(13, "helper", "src/util.c", 3, [2, 3])


def scen_stats(r=None):
    r = r or Recording(program="demo-stats", mode=STATS)
    common_defs(r)
    r.thread(0, 1000, "demo-stats")
    r.thread(1, 1001, "worker \u00e9")
    t = 0
    for i in range(40):  # 40 events of 5 ms; parser 2 ms, render 1 ms CPU each
        b = t
        e = t + 5 * MS
        r.event(0, 1, b, e, 4 * MS, [(1, 5 * MS, 4 * MS, 1), (2, 2 * MS + 100_000, 2 * MS, 3),
                                      (3, 1 * MS + 50_000, 1 * MS, 1)])
        t = e + MS
    r.event(0, 2, t, t + 80 * MS, 60 * MS, [(1, 80 * MS, 60 * MS, 1), (3, 70 * MS, 55 * MS, 2)])
    r.marker(0, 3, "all parsed", t, t)
    r.marker(0, 3, "a span", 2 * MS, 9 * MS)
    r.overhead(0, 12_000, 41, 2, 0)
    r.refused, r.clamped = 3, 1  # a signal handler's hooks refused; an event's CPU clamped
    r.thread_end(0, t + 81 * MS)
    for i in range(10):  # worker: network
        b = i * 10 * MS
        r.event(1, 0, b, b + 3 * MS, 2 * MS, [(4, 3 * MS, 2 * MS, 1)], flags=1)
    r.thread_end(1, 100 * MS)
    return [r]


def scen_trace(r=None):
    r = r or Recording(program="demo-trace", mode=TRACE, clock=CLOCK_TSC, hz=3_000_000_000)
    common_defs(r)
    r.thread(0, 1000, "demo-trace")
    t = 0
    for i in range(20):
        # helper (groups parser, render) 2 ms inside parse (parser) 3 ms; then render 2 ms, a
        # re-entrant render inside it; event covers all
        b = t
        r.interval(0, 13, 0b10, 1, b + 1 * MS, 2 * MS)    # helper acquires render (its bit 1)
        r.interval(0, 10, 0b1, 0, b, 3 * MS)              # parse acquires parser
        r.interval(0, 11, 0, 1, b + 3 * MS + 200_000, 300_000)  # re-entry: no group acquired
        r.interval(0, 11, 0b1, 0, b + 3 * MS, 2 * MS)     # render acquires render
        r.event(0, 1, b, b + 6 * MS, 5 * MS, [(1, 6 * MS, 5 * MS, 1), (2, 3 * MS, 3 * MS, 1),
                                               (3, 2 * MS, 2 * MS, 2)])
        if i == 5:
            r.clock(0, b + 6 * MS, 0)  # CPU clock not read: no CPU rate from it
        if i == 10:
            r.clock(0, b + 6 * MS, 60 * MS)
            r.dropped(0, 7, 203, 1)
        t = b + 8 * MS
    r.marker(0, 3, "done", t, t)
    r.thread_end(0, t)
    return [r]


def scen_fork():
    p = Recording(pid=2000, ppid=1, program="forker", mode=STATS)
    common_defs(p)
    p.thread(0, 2000, "forker")
    for i in range(10):
        p.event(0, 1, i * 4 * MS, i * 4 * MS + 3 * MS, 3 * MS, [(2, 3 * MS, 3 * MS, 1)])
    c = Recording(pid=2001, ppid=2000, program="forker", mode=STATS,
                  start_real=T0_REAL + 15 * MS, start_mono=T0_MONO + 15 * MS)
    common_defs(c)
    c.thread(0, 2001, "forker")
    c.thread(1, 2002, "child-worker")
    for i in range(10):
        c.event(0, 2, i * 2 * MS, i * 2 * MS + MS, MS, [(3, MS, MS, 1)])
        c.event(1, 2, i * 2 * MS, i * 2 * MS + MS, MS // 2, [(4, MS, MS // 2, 1)])
    # the child then exec()s "helper": a recording of its own, the same pid, 40 ms in
    x = Recording(pid=2001, ppid=2000, program="helper", mode=STATS,
                  start_real=T0_REAL + 40 * MS, start_mono=T0_MONO + 40 * MS)
    common_defs(x)
    x.thread(0, 2001, "helper")
    for i in range(5):
        x.event(0, 1, i * 2 * MS, i * 2 * MS + MS, MS, [(2, MS, MS, 1)])
    return [p, c, x]


def scen_cut():
    r = Recording(program="crashed", mode=TRACE)
    common_defs(r)
    r.thread(0, 1000, "crashed")
    for i in range(30):
        r.interval(0, 10, 1, 1, i * 2 * MS, MS)
    # the outermost interval never closed: the program was killed inside it
    # a worker in an event for 900 ms when killed (its slot, refreshed at 890 ms), and one
    # whose event ended after its slot's last refresh (stale: the EVENT record is there)
    r.thread(2, 1002, "stuck worker")
    r.open_slot(2, 1002, 2, 100 * MS, 990 * MS, cpu_ns=850 * MS, groups=(4, 3, 2),
               running=1, more=True)
    r.thread(3, 1003, "finished worker")
    r.event(3, 1, 5 * MS, 40 * MS, 30 * MS, [(2, 35 * MS, 30 * MS, 1)])
    r.open_slot(3, 1003, 1, 5 * MS, 30 * MS, cpu_ns=20 * MS)
    r.thread(4, 1004, "torn")  # its slot was being rewritten when the writer died
    r.open_slot(4, 1004, 0, 10 * MS, 20 * MS, seq=3)
    r.state = RECORDING
    r.writing_last = True
    return [r]


def scen_empty_thread():
    r = Recording(program="idle")
    common_defs(r)
    return [r]


SCENARIOS = {"stats": scen_stats, "trace": scen_trace, "fork": scen_fork, "cut": scen_cut,
             "nodata": scen_empty_thread}


def bad(kind):
    good = scen_stats()[0].build()
    b = bytearray(good)
    if kind == "empty":
        return b""
    if kind == "short-header":
        return bytes(b[:100])
    if kind == "foreign":
        return b"\x7fELF" + bytes(b[4:])
    if kind == "future-version":
        b[8:12] = struct.pack("<I", 99)
        return bytes(b)
    if kind == "bad-chunk-size":
        b[16:20] = struct.pack("<I", 1000)
        return bytes(b)
    if kind == "chunk-magic":
        b[HEADER_SIZE:HEADER_SIZE + 4] = b"XXXX"
        return bytes(b)
    if kind == "chunk-committed":
        off = HEADER_SIZE + 4096 + 24  # second chunk (data)
        b[off:off + 4] = struct.pack("<I", 1 << 20)
        return bytes(b)
    if kind == "record-garbage":
        off = HEADER_SIZE + 4096 + CH  # first record of the first data chunk
        b[off] = 0xC1  # never used msgpack byte, where an array must start
        return bytes(b)
    if kind == "record-type":
        # the first data chunk's first record is a CLOCK: make its tsc a string
        off = HEADER_SIZE + 4096 + CH
        assert b[off] == 0x95 and b[off + 1] == R_CLOCK
        b[off + 2] = 0xA1  # fixstr of 1 byte instead of a uint
        return bytes(b)
    if kind == "truncated-defs":
        return bytes(b[:HEADER_SIZE + 30])
    raise SystemExit("unknown bad kind " + kind)


BAD = ["empty", "short-header", "foreign", "future-version", "bad-chunk-size", "chunk-magic",
       "chunk-committed", "record-garbage", "record-type", "truncated-defs"]


def big(mb, trace):
    """About `mb` MB of events (and intervals in trace mode) on 4 threads."""
    r = Recording(program="big", mode=TRACE if trace else STATS, chunk_size=65536)
    common_defs(r)
    for t in range(4):
        r.thread(t, 3000 + t, "t%d" % t)
    target = mb * 1_000_000
    size = 0
    t_ns = 0
    i = 0
    while size < target:
        th = i % 4
        b = t_ns
        if trace:
            for k in range(8):
                r.interval(th, 10 + (k % 4), 1, 1, b + k * 10_000, 8_000)
            r.interval(th, 11, 1, 0, b, 100_000)
            size += 9 * 29
        r.event(th, 1, b, b + 100_000, 90_000, [(1, 100_000, 90_000, 1), (2, 40_000, 30_000, 4),
                                                (3, 20_000, 20_000, 4)])
        size += 40
        if i % 1000 == 0:
            r.clock(th, b, i * 90_000 // 4)
            size += 30
        t_ns += 25_000
        i += 1
    return r


def main(argv):
    if len(argv) == 3 and argv[0] == "--bad":
        open(argv[2], "wb").write(bad(argv[1]))
        return 0
    if len(argv) == 4 and argv[0] == "--big":
        open(argv[3], "wb").write(big(int(argv[1]), argv[2] == "trace").build())
        return 0
    if len(argv) != 2 or argv[0] not in SCENARIOS:
        sys.stderr.write(__doc__)
        return 1
    recs = SCENARIOS[argv[0]]()
    out = argv[1]
    names = []
    for i, r in enumerate(recs):
        path = out if i == 0 else "%s.%d" % (out, r.pid)
        if path in names:  # an exec()ed image: the runtime's "<name>.exec<N>"
            path += ".exec1"
        names.append(path)
        open(path, "wb").write(r.build())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
