#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""hostile_test.py — perfgroup-convert against hostile files and environments (issue 15).

    hostile_test.py utf8        names with invalid UTF-8, control characters and an escape
                                sequence: every JSON output loads with python3's strict
                                json.load, the text summary prints no control character raw
    hostile_test.py self-output -o naming the input (same inode, also through a link):
                                refused (exit 1), the recording intact
    hostile_test.py enospc      -o on a full disk (/dev/full, and a file whose directory is
                                read-only): exit 3 with strerror, the old output intact
    hostile_test.py fifo        a FIFO as input: refused at once (exit 2), never blocks
    hostile_test.py sigint      SIGINT / SIGTERM while writing: no OUT.tmp* left, old output intact
    hostile_test.py umask       the output's mode is 0666 & ~umask
    hostile_test.py dropped     the header's dropped-record total in Gecko meta.misc, Chrome
                                otherData, the summary (text and JSON)
    hostile_test.py flips       >= 1000 single-bit flips of a real recording (PGC_FLIPS), each
                                to every output: bounded time and size, sealed chunks detected
    hostile_test.py clip        a believed 2^62-tick interval: clipped to its chunk's clock
    hostile_test.py bound       a file with no clocks and 2^62-tick intervals: the output bound
    hostile_test.py overhead    the runtime's overhead totals in every output's metadata
    hostile_test.py overhead-real  the same from a real recording's header (PGC_APP)
    hostile_test.py stdin       '-' reads stdin: same outputs, bounded by the header, bad input

Environment: PGC_CONVERT (the program), PGC_WORK (a scratch directory), PGC_APP (the demo
event loop built with the GCC plugin: flips, clip), PGC_FLIP_SEED (replay a campaign).
"""
import glob
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_pgm  # noqa: E402

CONVERT = os.environ.get("PGC_CONVERT", "perfgroup-convert")
WORK = os.path.join(os.environ.get("PGC_WORK", "/tmp/pgc-test"), "hostile")
FAILS = []
SANITIZED = os.environ.get("PGC_SANITIZED", "")  # the build's PERFGROUP_SANITIZE, if any


def check(ok, msg):
    print(("ok   " if ok else "FAIL ") + msg)
    if not ok:
        FAILS.append(msg)


def run(args, timeout=60):
    return subprocess.run([CONVERT] + args, capture_output=True, timeout=timeout)


def stats_file(name="in.pgm"):
    path = os.path.join(WORK, name)
    with open(path, "wb") as f:
        f.write(gen_pgm.scen_stats()[0].build())
    return path


def case_utf8():
    # names as raw msgpack str bytes: not UTF-8, C0/C1 controls, an escape sequence
    bad = [b"bad\xff\xfe", b"\xc0\xafoverlong", b"surrogate\xed\xa0\x80", b"cut\xe2\x82",
           b"esc\x1b[2J\x1b]0;owned\x07", b"c1\xc2\x9b31m", b"nl\nq\"\\"]
    pack = gen_pgm.pack
    gen_pgm.pack = lambda rec: __import__("msgpack").packb(rec, use_bin_type=False)
    try:
        r = gen_pgm.Recording(program="demo", mode=gen_pgm.TRACE)
        for i, n in enumerate(bad):
            r.group(10 + i, n)
        r.string(1, bad[4])
        r.site(20, bad[0], bad[1], 1, [10, 14])
        r.site(21, bad[5], bad[6], 2, [11, 15])
        r.thread(0, 1000, bad[4])
        r.event(0, 1, 0, 5 * gen_pgm.MS, 4 * gen_pgm.MS, [(10, 5 * gen_pgm.MS, 4 * gen_pgm.MS, 1),
                                                          (14, gen_pgm.MS, gen_pgm.MS, 1)])
        r.interval(0, 20, 1, 0, 100_000, 2 * gen_pgm.MS)
        r.interval(0, 21, 1, 1, 200_000, gen_pgm.MS)
        r.marker(0, 1, bad[6].decode("latin-1"), gen_pgm.MS, 2 * gen_pgm.MS)
        r.thread_end(0, 6 * gen_pgm.MS)
        data = r.build()
    finally:
        gen_pgm.pack = pack
    src = os.path.join(WORK, "utf8.pgm")
    with open(src, "wb") as f:
        f.write(data)
    for name, args in [("gecko", ["-o"]), ("chrome", ["--format", "chrome", "-o"])]:
        out = os.path.join(WORK, "utf8." + name + ".json")
        p = run([src] + args + [out])
        check(p.returncode == 0, "%s: exit %d %s" % (name, p.returncode, p.stderr[:200]))
        try:
            with open(out, encoding="utf-8", errors="strict") as f:
                json.load(f)
            check(True, "%s: strict json.load accepts it" % name)
        except (ValueError, OSError) as e:
            check(False, "%s: %s" % (name, e))
    p = run([src, "--summary", "--json"])
    try:
        doc = json.loads(p.stdout.decode("utf-8", errors="strict"))
        check(p.returncode == 0 and doc["processes"][0]["program"] == "demo",
              "summary --json: strict json.loads accepts it")
    except (ValueError, KeyError) as e:
        check(False, "summary --json: %s" % e)
    p = run([src, "--summary"])
    raw = p.stdout
    text = raw.decode("utf-8", errors="strict")  # raises if not UTF-8
    ctrl = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) < 0xa0]
    check(p.returncode == 0 and not ctrl and "\\x1b[2J" in text,
          "summary text: no raw control character (%r), escape shown as \\x1b" % ctrl[:5])


def case_self_output():
    src = stats_file()
    before = open(src, "rb").read()
    link = os.path.join(WORK, "link.pgm")
    if os.path.lexists(link):
        os.unlink(link)
    os.link(src, link)
    for out in (src, link, os.path.join(WORK, ".", "in.pgm")):
        p = run([src, "-o", out])
        check(p.returncode == 1 and b"refused" in p.stderr and open(src, "rb").read() == before,
              "-o %s: exit %d, recording intact (%s)" % (out, p.returncode, p.stderr.strip()[:120]))
    check(not glob.glob(os.path.join(WORK, "*.tmp*")), "no temporary file left")


def case_enospc():
    src = stats_file()
    p = run([src, "-o", "/dev/full"])
    err = p.stderr.decode()
    check(p.returncode == 3 and "No space left on device" in err and err.count("\n") == 1,
          "/dev/full: exit %d, %r" % (p.returncode, err.strip()))
    # a full file system: a small tmpfs when root can mount one
    if os.geteuid() == 0:
        mnt = os.path.join(WORK, "small")
        os.makedirs(mnt, exist_ok=True)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt]).returncode == 0:
            try:
                out = os.path.join(mnt, "out.json")
                with open(out, "w") as f:
                    f.write("old")
                big = os.path.join(WORK, "big.pgm")
                with open(big, "wb") as f:
                    f.write(gen_pgm.big(1, True).build())
                p = run([big, "-o", out])
                err = p.stderr.decode()
                check(p.returncode == 3 and "No space left on device" in err
                      and open(out).read() == "old" and os.listdir(mnt) == ["out.json"],
                      "64k tmpfs: exit %d, %r, old output intact, no temporary" % (p.returncode, err.strip()))
            finally:
                subprocess.run(["umount", mnt])
    # cannot create: exit 3 too, not "bad input"
    ro = os.path.join(WORK, "nodir", "x", "out.json")
    p = run([src, "-o", ro])
    check(p.returncode == 3, "-o in a missing directory: exit %d" % p.returncode)


def case_fifo():
    fifo = os.path.join(WORK, "fifo.pgm")
    if os.path.lexists(fifo):
        os.unlink(fifo)
    os.mkfifo(fifo)
    t0 = time.monotonic()
    p = run([fifo, "--summary"], timeout=20)
    err = p.stderr.decode()
    check(p.returncode == 2 and "not a regular file" in err and "byte 0" in err,
          "FIFO input: exit %d in %.1f s, %r" % (p.returncode, time.monotonic() - t0, err.strip()))
    p = run(["/dev/zero", "--summary"], timeout=20)
    check(p.returncode == 2 and b"not a regular file" in p.stderr, "/dev/zero input: exit %d" % p.returncode)


def case_sigint():
    big = os.path.join(WORK, "sig.pgm")
    with open(big, "wb") as f:
        f.write(gen_pgm.big(3, True).build())
    for sig in (signal.SIGINT, signal.SIGTERM):
        out = os.path.join(WORK, "sig.json")
        with open(out, "w") as f:
            f.write("old")
        p = subprocess.Popen([CONVERT, big, "-o", out], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not glob.glob(out + ".tmp*") and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        seen = bool(glob.glob(out + ".tmp*"))
        p.send_signal(sig)
        p.wait(timeout=30)
        left = glob.glob(out + ".tmp*")
        if not seen:
            print("note: conversion ended before the signal; case not exercised")
        text = open(out).read()
        # the old output, or (the signal came after the rename) the whole new one
        whole = text == "old" or p.returncode == 0 or complete_json(text)
        check(not left and whole, "%s: exit %d, temporary left: %s, old or whole output"
              % (sig.name, p.returncode, left))


def complete_json(text):
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


def case_umask():
    src = stats_file()
    out = os.path.join(WORK, "mode.json")
    for mask, want in ((0o022, 0o644), (0o077, 0o600), (0o002, 0o664)):
        if os.path.exists(out):
            os.unlink(out)
        old = os.umask(mask)
        try:
            p = run([src, "--format", "chrome", "-o", out])
        finally:
            os.umask(old)
        mode = stat.S_IMODE(os.stat(out).st_mode) if os.path.exists(out) else None
        check(p.returncode == 0 and mode == want, "umask %03o: mode %s (want %03o)" %
              (mask, oct(mode) if mode is not None else None, want))


def case_corrupt():
    """A real recording (format v2) with a flipped bit in a sealed chunk: skipped, and the
    count is in Gecko's meta.misc and a Chrome instant, with the reader's warning."""
    src = os.path.join(WORK, "corrupt.pgm")
    subprocess.run([os.environ["PGC_TEST_READER"], "corrupt", src], check=True)
    out = os.path.join(WORK, "corrupt.json")
    p = run([src, "-o", out])
    misc = json.load(open(out))["meta"]["misc"] if p.returncode == 0 else ""
    check("1 chunks failed their CRC-32C (skipped)" in misc, "gecko meta.misc: %r" % misc)
    check(b"CRC-32C mismatch" in p.stderr, "gecko stderr: %r" % p.stderr[-300:])
    p = run([src, "--format", "chrome", "-o", out])
    ev = json.load(open(out))["traceEvents"] if p.returncode == 0 else []
    said = [e for e in ev if e.get("name") == "Chunks corrupt"]
    check(len(said) == 1 and said[0]["args"]["chunks"] == 1, "chrome: %r" % said)
    p = run([src, "--summary", "--json"])
    pr = json.loads(p.stdout)["processes"][0] if p.returncode == 0 else {}
    check(pr.get("chunks_corrupt") == 1, "summary JSON chunks_corrupt: %r" % pr.get("chunks_corrupt"))
    p = run([src, "--summary"])
    check(b"damaged: 1 sealed chunk(s) failed their CRC-32C" in p.stdout, "text summary: %r" % p.stdout[-300:])


def case_threads():
    """5000 threads convert with 256 file descriptors: the converter's spill files do not
    grow with the number of threads (Gecko, Chrome, summary)."""
    import resource
    r = gen_pgm.Recording(program="many-threads", mode=gen_pgm.STATS)
    gen_pgm.common_defs(r)
    n = 5000
    for i in range(n):
        r.thread(i, 10000 + i, "w%d" % i)
        b = i * 1000
        r.event(i, 1, b, b + 3 * gen_pgm.MS, 2 * gen_pgm.MS, [(2 + i % 3, 3 * gen_pgm.MS, 2 * gen_pgm.MS, 1)])
        r.thread_end(i, b + 4 * gen_pgm.MS)
    src = os.path.join(WORK, "threads.pgm")
    with open(src, "wb") as f:
        f.write(r.build())

    def low_fds():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    out = os.path.join(WORK, "threads.json")
    for fmt, count in (("gecko", lambda d: len(d["threads"])),
                       ("chrome", lambda d: len({e["tid"] for e in d["traceEvents"]
                                                 if e.get("name") == "thread_name"})),
                       ("summary", None)):
        args = [CONVERT, src, "-o", out] + {"gecko": [], "chrome": ["--format", "chrome"],
                                            "summary": ["--summary", "--json"]}[fmt]
        p = subprocess.run(args, capture_output=True, timeout=120, preexec_fn=low_fds)
        got = None
        if p.returncode == 0:
            d = json.load(open(out))
            got = count(d) if count else len(d["processes"][0]["threads"])
        check(p.returncode == 0 and got is not None and got >= n,
              "%s at ulimit -n 256: exit %d, %s threads, %s" % (fmt, p.returncode, got,
                                                              p.stderr[-200:]))


def case_dropped():
    r = gen_pgm.scen_stats()[0]
    r.records_dropped = 4_385_870
    src = os.path.join(WORK, "dropped.pgm")
    with open(src, "wb") as f:
        f.write(r.build())
    out = os.path.join(WORK, "dropped.json")
    p = run([src, "-o", out])
    prof = json.load(open(out)) if p.returncode == 0 else {"meta": {"misc": ""}, "threads": []}
    misc = prof["meta"]["misc"]
    check("4385870 records dropped" in misc, "gecko meta.misc: %r" % misc)
    # and a process-level marker on GeckoMain with the header's totals
    found = []
    for th in prof["threads"]:
        m = th.get("markers", {})
        names = th.get("stringTable") or th.get("stringArray") or []
        for row in m.get("data", []):
            d = row[-1] if row else None
            if isinstance(d, dict) and d.get("type") == "PerfgroupDropped" and \
                    d.get("records") == 4_385_870:
                found.append((th.get("name"), names[row[0]] if isinstance(row[0], int)
                              and row[0] < len(names) else row[0]))
    check(len(found) == 1 and found[0][0] == "GeckoMain",
          "gecko process-level dropped marker: %r" % found)
    p = run([src, "--format", "chrome", "-o", out])
    other = json.load(open(out))["otherData"] if p.returncode == 0 else {}
    check(other.get("recordsDropped") == 4_385_870, "chrome otherData: %r" % other)
    p = run([src, "--summary", "--json"])
    doc = json.loads(p.stdout) if p.returncode == 0 else {}
    check(doc.get("processes", [{}])[0].get("records_dropped") == 4_385_870, "summary JSON records_dropped")
    p = run([src, "--summary"])
    check(b"4385870 records dropped" in p.stdout, "text summary")


# ---- Files damaged or crafted against the output bound --------------------------------
CHUNK_MAGIC = 0x4B434750
FULL = 2
HEADER = 4096


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli, reflected), as perfgroup/crc32c.h"""
    if not hasattr(crc32c, "table"):
        t = []
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            t.append(c)
        crc32c.table = t
    t = crc32c.table
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def chunks_of(img):
    """(offset, state, committed) of every used chunk of a recording image"""
    import struct
    csize, count = struct.unpack_from("<II", img, 16)
    out = []
    for i in range(count):
        off = HEADER + i * csize
        if off + 64 > len(img):
            break
        magic, kind, state, seq, thread, crc, committed = struct.unpack_from("<IHHQIII", img, off)
        if magic == CHUNK_MAGIC:
            out.append((off, state, committed))
    return out


def chunk_crc(img, off, committed):
    import struct
    h = bytearray(img[off:off + 64])
    struct.pack_into("<I", h, 20, 0)
    return crc32c(bytes(h) + bytes(img[off + 64:off + 64 + committed]))


def real_recording(name, mode="trace"):
    """The demo event loop (built with the GCC plugin) recorded into a small buffer: sealed
    chunks, recycled ones, every record kind the runtime writes in that mode."""
    app = os.environ.get("PGC_APP")
    if not app:
        print("SKIPPED: no PGC_APP (a build without the GCC plugin)")
        sys.exit(77)
    path = os.path.join(WORK, name)
    env = dict(os.environ, PERFGROUP_OUTPUT=path, PERFGROUP_MODE=mode,
               PERFGROUP_BUFFER="128K", PERFGROUP_CHUNK="4K")
    # 100 ticks: elision leaves fewer frames to record than 40 ticks once filled 8 chunks with
    subprocess.run([app, "100"], env=env, check=True, stdout=subprocess.DEVNULL, timeout=120)
    return path


FORMATS = (("gecko", []), ("chrome", ["--format", "chrome"]), ("summary", ["--summary", "--json"]))


def child_cpu():
    import resource
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def case_flips():
    """The bit-flip campaign: >= 1000 single-bit flips of a real recording (format v2), each
    converted to Gecko, Chrome and the JSON summary. Every run ends (exit 0, or 2 with one
    line naming the file and a byte offset), within 5 s, with no output over 10x the input
    + 1 MiB; every flip inside a sealed chunk (its header or committed records) is detected:
    the chunk skipped for its CRC-32C (warning) or the file refused (exit 2)."""
    import random
    import concurrent.futures as cf
    src = real_recording("flips-src.pgm")
    img = open(src, "rb").read()
    sealed = [(o, c) for o, st, c in chunks_of(img) if st == FULL]
    check(len(sealed) >= 8, "the recording has %d sealed chunks" % len(sealed))
    # the Python CRC agrees with the writer's: the campaign's notion of 'sealed' is right
    bad = [o for o, c in sealed if chunk_crc(img, o, c) != int.from_bytes(img[o + 20:o + 24], "little")]
    check(not bad, "CRC-32C of every sealed chunk as written: mismatches at %r" % bad[:4])
    seed = int(os.environ.get("PGC_FLIP_SEED", str(int(time.time()))))
    print("seed %d (PGC_FLIP_SEED to replay); input %d bytes, %d sealed chunks" %
          (seed, len(img), len(sealed)))
    rng = random.Random(seed)
    n = int(os.environ.get("PGC_FLIPS", "1000"))
    limit = 10 * len(img) + (1 << 20)
    # half the flips in sealed chunks' checked bytes, half anywhere in the file
    flips = []
    for i in range(n):
        if i % 2 == 0:
            o, c = rng.choice(sealed)
            pos = o + rng.randrange(64 + c)
        else:
            pos = rng.randrange(len(img))
        flips.append((pos, rng.randrange(8)))

    def one(i):
        pos, bit = flips[i]
        # a directory per worker thread: flip i and flip i + 4 may run at the same time (the
        # pool hands i + 4 to whichever worker is free first), and a shared in.pgm made one
        # flip's conversions read the other's file (CI once: a flip in a sealed chunk "not
        # detected")
        d = os.path.join(WORK, "f%d" % threading.get_ident())
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "in.pgm")
        b = bytearray(img)
        b[pos] ^= 1 << bit
        with open(path, "wb") as f:
            f.write(b)
        in_sealed = any(o <= pos < o + 64 + c for o, c in sealed)
        res = []
        for fmt, args in FORMATS:
            out = os.path.join(d, "out." + fmt)
            t0 = time.monotonic()
            try:
                p = subprocess.run([CONVERT, path, "-o", out] + args, capture_output=True,
                                   timeout=5)
            except subprocess.TimeoutExpired:
                res.append((fmt, "timeout", 0, b""))
                continue
            size = os.path.getsize(out) if p.returncode == 0 and os.path.exists(out) else 0
            res.append((fmt, p.returncode, size, p.stderr, time.monotonic() - t0))
        return pos, bit, in_sealed, res

    worst = [0, 0.0]
    undetected = []
    problems = []
    with cf.ThreadPoolExecutor(max_workers=4) as ex:
        for pos, bit, in_sealed, res in ex.map(one, range(n)):
            detected = False
            for r in res:
                fmt, rc = r[0], r[1]
                if rc == "timeout":
                    problems.append("flip %d.%d %s: over 5 s" % (pos, bit, fmt))
                    continue
                size, err, secs = r[2], r[3], r[4]
                worst[0] = max(worst[0], size)
                worst[1] = max(worst[1], secs)
                if rc not in (0, 2):
                    problems.append("flip %d.%d %s: exit %d %r" % (pos, bit, fmt, rc, err[-200:]))
                if rc == 2 and not (err.count(b"\n") == 1 and b": byte " in err):
                    problems.append("flip %d.%d %s: bad input not one line: %r" % (pos, bit, fmt, err[-300:]))
                if size > limit:
                    problems.append("flip %d.%d %s: %d bytes of output (limit %d)" %
                                    (pos, bit, fmt, size, limit))
                if rc == 2 or b"CRC-32C mismatch" in err:
                    detected = True
            if in_sealed and not detected:
                undetected.append("%d.%d" % (pos, bit))
    print("largest output %d bytes (limit %d), slowest conversion %.2f s" % (worst[0], limit, worst[1]))
    check(not problems, "%d flips x 3 outputs: %d problems %r" % (n, len(problems), problems[:5]))
    check(not undetected, "flips in sealed chunks not detected: %d %r" % (len(undetected), undetected[:8]))


def craft_huge_interval(img):
    """The first interval record of the first sealed data chunk with a 2^62-tick duration,
    the chunk's CRC-32C recomputed: a file that passes every check the reader has."""
    import struct
    b = bytearray(img)
    for off, st, committed in chunks_of(img):
        if st != FULL or struct.unpack_from("<H", img, off + 4)[0] != 1:  # DATA
            continue
        recs = img[off + 64:off + 64 + committed]
        i = 0
        while True:
            i = recs.find(b"\x96\x12\xce", i)
            if i < 0 or i + 29 > len(recs):
                break
            if recs[i + 7] == 0xCC and recs[i + 9] == 0xCC and recs[i + 11] == 0xCF and recs[i + 20] == 0xCF:
                struct.pack_into(">Q", b, off + 64 + i + 21, 1 << 62)
                struct.pack_into("<I", b, off + 20, chunk_crc(b, off, committed))
                return bytes(b), off + 64 + i
            i += 1
    return None, None


def case_clip():
    """A real recording in which one interval lasts 2^62 ticks, CRC-32C recomputed so the
    reader believes it: clipped to its chunk's clock (counted, with its byte offset, in the
    warning, Gecko meta.misc, a Chrome instant), converted in under 1 s of CPU, to about the
    size of the undamaged file's output."""
    src = real_recording("clip-src.pgm")
    img = open(src, "rb").read()
    bad, at = craft_huge_interval(img)
    check(bad is not None, "an interval record in a sealed chunk to damage")
    if bad is None:
        return
    path = os.path.join(WORK, "clip.pgm")
    with open(path, "wb") as f:
        f.write(bad)
    for fmt, args in FORMATS:
        good_out, out = os.path.join(WORK, "good." + fmt), os.path.join(WORK, "clip." + fmt)
        run([src, "-o", good_out] + args)
        c0 = child_cpu()
        p = run([path, "-o", out] + args, timeout=60)
        cpu = child_cpu() - c0
        size, good = os.path.getsize(out) if p.returncode == 0 else -1, os.path.getsize(good_out)
        print("%s: %d bytes (undamaged %d), %.3f s CPU" % (fmt, size, good, cpu))
        check(p.returncode == 0 and size <= 2 * good + 65536, "%s: exit %d, output %d bytes vs %d" %
              (fmt, p.returncode, size, good))
        check(cpu < 1.0, "%s: %.2f s of CPU for a 2^62-tick interval (want < 1 s)" % (fmt, cpu))
        want = (": byte %d: 1 record time(s) beyond the file's own clocks clipped" % at).encode()
        check(want in p.stderr, "%s: the warning names the record: %r" % (fmt, p.stderr[-400:]))
        if fmt == "gecko" and p.returncode == 0:
            misc = json.load(open(out))["meta"]["misc"]
            check("1 record times beyond the file's clocks clipped (first at byte %d)" % at in misc,
                  "gecko meta.misc: %r" % misc)
        if fmt == "chrome" and p.returncode == 0:
            ev = [e for e in json.load(open(out))["traceEvents"] if e.get("name") == "Records clipped"]
            check(len(ev) == 1 and ev[0]["args"]["records"] == 1 and ev[0]["args"]["first_offset"] == at,
                  "chrome instant: %r" % ev)
        if fmt == "summary" and p.returncode == 0:
            pr = json.load(open(out))["processes"][0]
            check(pr["records_clipped"] == 1 and pr["records_clipped_first_offset"] == at,
                  "summary JSON: %r" % {k: v for k, v in pr.items() if k != "threads"})
    p = run([path, "--summary"])
    want = "damaged: 1 record time(s) beyond the file's clocks clipped (first at byte %d)" % at
    check(want.encode() in p.stdout, "text summary: %r" % p.stdout[-300:])


def case_bound():
    """A crafted file with no clock to clip against (header and chunk clocks zero: a format-v1
    file made by hand) and a 2^62-tick interval on each of 8 threads: the outputs that grow
    with time stop at the documented bound — samples and counter rows at most 2^20 + 8 per
    input byte each — with a warning and a marker, in under 1 s of CPU."""
    r = gen_pgm.Recording(program="crafted", mode=gen_pgm.TRACE)
    gen_pgm.common_defs(r)
    for t in range(8):
        r.thread(t, 100 + t, "t%d" % t)
        r.data[t].append(gen_pgm.interval(10, 1, 0, r.tsc(0), 1 << 62))
    path = os.path.join(WORK, "bound.pgm")
    with open(path, "wb") as f:
        f.write(r.build())
    n = os.path.getsize(path)
    rows = (1 << 20) + 8 * n
    for fmt, args in FORMATS:
        out = os.path.join(WORK, "bound." + fmt)
        c0 = child_cpu()
        p = run([path, "-o", out] + args, timeout=60)
        cpu = child_cpu() - c0
        size = os.path.getsize(out) if p.returncode == 0 else -1
        print("%s: %d bytes from %d, %.3f s CPU" % (fmt, size, n, cpu))
        check(p.returncode == 0, "%s: exit %d %r" % (fmt, p.returncode, p.stderr[-300:]))
        if SANITIZED:  # ASan/TSan make every memory access several to 30 times dearer
            print("(%s build: %.2f s of CPU not checked)" % (SANITIZED, cpu))
        else:
            check(cpu < 1.0, "%s: %.2f s of CPU (want < 1 s)" % (fmt, cpu))
        # c.N + k: a row is at most ~64 bytes of JSON
        check(size <= 2 * 64 * rows + 1024 * n + (1 << 20), "%s: %d bytes over c.N + k" % (fmt, size))
        if fmt == "gecko" and p.returncode == 0:
            d = json.load(open(out))
            samples = sum(len(th["samples"]["data"]) for th in d["threads"])
            crows = sum(len(c["samples"]["data"]) for c in d.get("counters", []))
            check(samples <= rows and crows <= rows, "samples %d, counter rows %d (bound %d)" %
                  (samples, crows, rows))
            check(samples >= rows // 2, "the bound is what stopped it: %d samples" % samples)
            check(b"the output's bound" in p.stderr, "gecko warns: %r" % p.stderr[-300:])


def case_overhead():
    """The runtime's own cost (PGF_REC_OVERHEAD records of two threads) summed per process in
    every output's metadata: Gecko meta.misc, a Chrome process instant, the summary (text line
    and JSON 'overhead'); with the header's refused calls and clamped events."""
    r = gen_pgm.Recording(program="ovh", mode=gen_pgm.STATS)
    gen_pgm.common_defs(r)
    for t in range(2):
        r.thread(t, 300 + t, "o%d" % t)
        r.event(t, 1, 0, 3 * gen_pgm.MS, 2 * gen_pgm.MS, [(2, 3 * gen_pgm.MS, 2 * gen_pgm.MS, 1)])
        r.overhead(t, 1_500_000, 100, 7, 2)
        r.overhead(t, 500_000, 50, 3, 1)
    r.refused, r.clamped = 5, 2
    src = os.path.join(WORK, "ovh.pgm")
    with open(src, "wb") as f:
        f.write(r.build())
    out = os.path.join(WORK, "ovh.json")
    p = run([src, "-o", out])
    misc = json.load(open(out))["meta"]["misc"] if p.returncode == 0 else ""
    check("runtime overhead: 300 commits in 4.000 ms, 20 slow paths, 6 resyncs, 0 pairs not "
          "counted, 5 calls refused, 2 events clamped" in misc, "gecko meta.misc: %r" % misc)
    p = run([src, "--format", "chrome", "-o", out])
    ev = [e for e in json.load(open(out))["traceEvents"] if e.get("name") == "Runtime overhead (process total)"] \
        if p.returncode == 0 else []
    check(len(ev) == 1 and ev[0]["args"]["commits"] == 300 and ev[0]["args"]["commit_ms"] == 4
          and ev[0]["args"]["calls_refused"] == 5 and ev[0]["args"]["events_clamped"] == 2,
          "chrome instant: %r" % ev)
    p = run([src, "--summary", "--json"])
    o = json.loads(p.stdout)["processes"][0].get("overhead") if p.returncode == 0 else None
    check(o == {"commit_ms": 4, "commits": 300, "slow_paths": 20, "resyncs": 6, "pairs_not_counted": 0,
                "calls_refused": 5, "events_clamped": 2}, "summary JSON: %r" % o)
    p = run([src, "--summary"])
    check(b"runtime overhead: 300 commits in 4.000 ms, 20 slow paths, 6 resyncs, 0 pairs not counted, "
          b"5 calls refused, 2 events clamped" in p.stdout, "text summary: %r" % p.stdout[-300:])


def gecko_markers(prof, name):
    """(thread name, payload) of every marker called `name` in a Gecko profile"""
    out = []
    for th in prof["threads"]:
        strings = th.get("stringTable") or th.get("stringArray") or []
        for row in th.get("markers", {}).get("data", []):
            if isinstance(row[0], int) and row[0] < len(strings) and strings[row[0]] == name:
                out.append((th.get("name"), row[-1]))
    return out


def case_overhead_real():
    """A real recording's header carries the runtime's overhead totals (format.h, offset 384):
    with a buffer that recycles nothing they equal the sum of its PGF_REC_OVERHEAD records (the
    per-record Gecko markers), and every output shows the header's totals: a process-level
    Gecko marker on GeckoMain and meta.misc, Chrome otherData.runtimeOverhead, the summary."""
    import struct
    app = os.environ.get("PGC_APP")
    if not app:
        print("SKIPPED: no PGC_APP (a build without the GCC plugin)")
        sys.exit(77)
    src = os.path.join(WORK, "ovh-real.pgm")
    subprocess.run([app], env=dict(os.environ, PERFGROUP_OUTPUT=src, PERFGROUP_MODE="stats",
                                   PERFGROUP_BUFFER="16M"), check=True, stdout=subprocess.DEVNULL)
    hdr = struct.unpack_from("<5Q", open(src, "rb").read(), 384)
    print("header overhead totals: %r" % (hdr,))
    check(hdr[1] > 0, "the header counts commits: %d" % hdr[1])
    out = os.path.join(WORK, "ovh-real.json")
    p = run([src, "-o", out])
    prof = json.load(open(out)) if p.returncode == 0 else {"threads": [], "meta": {"misc": ""}}
    per = gecko_markers(prof, "Runtime overhead")
    total = gecko_markers(prof, "Runtime overhead (process total)")
    check(sum(d["commits"] for _, d in per) == hdr[1] and sum(d["slowPaths"] for _, d in per) == hdr[2],
          "records' sums = the header's: %d commits in %d records vs %d" %
          (sum(d["commits"] for _, d in per), len(per), hdr[1]))
    check(len(total) == 1 and total[0][0] == "GeckoMain" and total[0][1]["commits"] == hdr[1],
          "gecko process-level marker: %r" % total)
    check("runtime overhead: %d commits" % hdr[1] in prof["meta"]["misc"], "gecko meta.misc: %r" % prof["meta"]["misc"])
    p = run([src, "--format", "chrome", "-o", out])
    other = json.load(open(out))["otherData"] if p.returncode == 0 else {}
    check(other.get("runtimeOverhead", {}).get("commits") == hdr[1], "chrome otherData: %r" % other)
    p = run([src, "--summary", "--json"])
    o = json.loads(p.stdout)["processes"][0]["overhead"] if p.returncode == 0 else {}
    check(o.get("commits") == hdr[1] and o.get("slow_paths") == hdr[2], "summary JSON: %r" % o)


def case_stdin():
    """'-' reads the recording from stdin: the same outputs as from the file; an endless
    stream after a recording stops at the size its header declares; garbage is bad input
    ('-: byte 0: ...', exit 2); '-' twice is a usage error."""
    src = stats_file("stdin.pgm")
    data = open(src, "rb").read()
    for args in (["--summary", "--json"], ["-o", "-"], ["--format", "chrome", "-o", "-"]):
        a = subprocess.run([CONVERT, src] + args, capture_output=True, timeout=60)
        b = subprocess.run([CONVERT, "-"] + args, input=data, capture_output=True, timeout=60)
        same = a.stdout.replace(src.encode(), b"-") == b.stdout
        check(a.returncode == 0 and b.returncode == 0 and same,
              "%s from stdin: exit %d, same output as from the file: %s" % (args, b.returncode, same))
    # a recording followed by an endless stream: bounded by the header
    with open(src, "rb") as f_in:
        cat = subprocess.Popen(["sh", "-c", "cat \"$0\"; exec cat /dev/zero", src], stdout=subprocess.PIPE)
        try:
            p = subprocess.run([CONVERT, "-", "--summary"], stdin=cat.stdout, capture_output=True, timeout=30)
            check(p.returncode == 0 and b"overall" in p.stdout, "endless stdin after a recording: exit %d" % p.returncode)
        except subprocess.TimeoutExpired:
            check(False, "endless stdin after a recording: still reading after 30 s")
        finally:
            cat.kill()
            cat.wait()
    p = subprocess.run([CONVERT, "-", "--summary"], input=os.urandom(5000), capture_output=True, timeout=30)
    check(p.returncode == 2 and p.stderr.startswith(b"perfgroup-convert: -: byte ") and p.stderr.count(b"\n") == 1,
          "garbage on stdin: exit %d %r" % (p.returncode, p.stderr))
    p = subprocess.run([CONVERT, "-", "-", "--summary"], input=data, capture_output=True, timeout=30)
    check(p.returncode == 1, "'-' twice: exit %d" % p.returncode)


CASES = {"overhead": case_overhead, "overhead-real": case_overhead_real, "stdin": case_stdin, "flips": case_flips, "clip": case_clip, "bound": case_bound,
         "dropped": case_dropped, "corrupt": case_corrupt, "threads": case_threads, "utf8": case_utf8, "self-output": case_self_output, "enospc": case_enospc,
         "fifo": case_fifo, "sigint": case_sigint, "umask": case_umask}


def main(argv):
    if len(argv) != 1 or argv[0] not in CASES:
        sys.stderr.write(__doc__)
        return 1
    global WORK
    WORK = os.path.join(WORK, argv[0])  # one directory per case: ctest runs them in parallel
    os.makedirs(WORK, exist_ok=True)
    CASES[argv[0]]()
    print("%d failure(s)" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
