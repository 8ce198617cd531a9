#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""run.py — perfgroup-convert throughput and memory across input sizes.

    bench/converter/run.py BUILD_DIR [SIZE_MB ...] [--rounds N] [--dir TMPDIR]

For each size and mode (stats, trace): bench_pgm_make writes a recording with the real
recorder; then, interleaved for N rounds (default 3): bench_pgread (the reader alone, the
baseline), perfgroup-convert to Gecko, --summary, --format chrome, all writing to /dev/null.
Reports medians of CPU time (user+sys of the child: the VM is shared and noisy, wall time is
not a measure), records/s and MB/s of committed record bytes, peak RSS (max over rounds), and
the converter's CPU time as a ratio of the baseline's. Prints a Markdown table.
"""
import os
import struct
import subprocess
import sys


def rusage_run(argv):
    """CPU seconds (user+sys, microsecond resolution from wait4: GNU time's own counts in
    10 ms) and peak RSS in KiB (GNU time's %M: the program's own, not this script's)."""
    out = "/tmp/pgbench-time.txt"
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", out] + argv,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = status
    if status != 0:
        raise SystemExit("failed: %s (status %d)" % (" ".join(argv), status))
    return ru.ru_utime + ru.ru_stime, int(open(out).read().split()[-1])


def committed(path):
    """Records and record bytes, from the chunk headers (format.h)."""
    with open(path, "rb") as f:
        hdr = f.read(4096)
        chunk_size, chunk_count = struct.unpack_from("<II", hdr, 16)
        off = struct.unpack_from("<Q", hdr, 24)[0]
        recs = nbytes = 0
        for i in range(chunk_count):
            f.seek(off + i * chunk_size)
            ch = f.read(64)
            if len(ch) < 64:
                break
            magic, kind = struct.unpack_from("<IH", ch, 0)
            if magic == 0x4B434750 and kind == 1:
                nbytes += struct.unpack_from("<I", ch, 24)[0]
                recs += struct.unpack_from("<I", ch, 28)[0]
    return recs, nbytes


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main(argv):
    build = argv[0]
    rounds = 3
    tmp = "/tmp"
    sizes = []
    i = 1
    while i < len(argv):
        if argv[i] == "--rounds":
            rounds = int(argv[i + 1]); i += 2
        elif argv[i] == "--dir":
            tmp = argv[i + 1]; i += 2
        else:
            sizes.append(int(argv[i])); i += 1
    sizes = sizes or [10, 100]
    make = os.path.join(build, "bench/converter/bench_pgm_make")
    read = os.path.join(build, "bench/converter/bench_pgread")
    conv = os.path.join(build, "converter/perfgroup-convert")
    tools = [("reader alone", [read, "{f}"]),
             ("gecko", [conv, "{f}", "-o", "/dev/null", "--no-progress"]),
             ("summary", [conv, "{f}", "--summary", "--no-progress"]),
             ("chrome", [conv, "{f}", "--format", "chrome", "-o", "/dev/null", "--no-progress"])]
    print("| mode | input MB | records | output | CPU s (median) | records/s | MB/s | x reader | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for mb in sizes:
        for mode in ("stats", "trace"):
            f = os.path.join(tmp, "pgbench-%d-%s.pgm" % (mb, mode))
            if os.path.exists(f):
                os.unlink(f)
            subprocess.run([make, f, str(mb), mode], check=True)
            recs, nbytes = committed(f)
            times = {name: [] for name, _ in tools}
            rss = {name: 0 for name, _ in tools}
            for _ in range(rounds):  # interleaved: every tool once per round
                for name, args in tools:
                    t, m = rusage_run([a.replace("{f}", f) for a in args])
                    times[name].append(t)
                    rss[name] = max(rss[name], m)
            base = median(times["reader alone"])
            for name, _ in tools:
                t = median(times[name])
                print("| %s | %.0f | %d | %s | %.3f | %.2f M | %.0f | %.1f | %.1f |" % (
                    mode, nbytes / 1e6, recs, name, t, recs / t / 1e6, nbytes / t / 1e6,
                    t / base if base else 0, rss[name] / 1024))
            sys.stdout.flush()
            os.unlink(f)


if __name__ == "__main__":
    main(sys.argv[1:])
