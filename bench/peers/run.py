#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/peers/run.py — what instrumenting a tiny leaf costs, perfgroup against its peers.

Every configuration is one run of a peer-* program (bench/peers/peer.c) that calls a tiny
non-inlined leaf N times (after N/10 untimed calls) and prints the thread-CPU ns per call.
Rounds are interleaved (each round runs every configuration once, in a rotated order);
the table has medians. Overheads are over the SAME compiler's plain build ("bare"); ratios
are to that compiler's floor (the call between two inline rdtsc) over bare.

Before its time is used, every tracer's output is checked to hold every call:
perfgroup trace (pgdump: one interval per call, or for the wrapping 16 MiB file: every
record committed, none failed), perfgroup stats (one event record per event), XRay FDR
(xray_count: one enter and one exit record per call), uftrace (uftrace report: calls).

"whole command CPU" is user+sys of everything the run started (wait4 of the children: the
program, uftrace's recorder, start-up, the untimed calls, XRay's flush), per call.

Usage: run.py BUILD_DIR [--n N] [--rounds R] [--out DIR] [--markdown FILE]
"""
import argparse
import datetime
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def tsc_khz():
    try:
        with open("/sys/devices/system/cpu/cpu0/tsc_freq_khz") as f:
            return int(f.read().strip()), "sysfs"
    except OSError:
        pass
    with open("/proc/cpuinfo") as f:  # what a KVM guest shows for its TSC
        for line in f:
            if line.startswith("cpu MHz"):
                return int(float(line.split(":")[1]) * 1000), "/proc/cpuinfo"
    return 0, "none"


class Config:
    def __init__(self, name, cc, exe, mode, env=None, wrap=None, verify=None, row=None, out=None):
        self.name, self.cc, self.exe, self.mode = name, cc, exe, mode
        self.env = env or {}
        self.wrap = wrap or []
        self.verify = verify
        self.row = row or name
        self.out = out  # path (or glob prefix) of what the run writes, removed after it
        self.times = []
        self.proc = []  # CPU of the whole command (tracer processes, start-up, flush) per call


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--n", type=int, default=20000000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default="/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    ap.add_argument("--markdown", help="write the table (markdown) to this file too")
    a = ap.parse_args()

    pdir = os.path.join(a.build, "bench", "peers")
    pgdump = os.path.join(a.build, "reader", "pgdump")
    xcount = os.path.join(pdir, "xray_count")
    work = tempfile.mkdtemp(prefix="perfgroup-peers-", dir=a.out)
    n = a.n
    ncalls = n + n // 10
    nevents = -(-n // 100000) + -(-(n // 10) // 100000)

    def exe(name):
        p = os.path.join(pdir, name)
        return p if os.access(p, os.X_OK) else None

    have_uftrace = shutil.which("uftrace") is not None
    khz, khz_src = tsc_khz()
    # XRay (compiler-rt 14) reads the TSC frequency only from sysfs (tsc_freq_khz or
    # cpufreq/cpuinfo_max_freq); this VM has neither, so FDR falls back to clock_gettime per
    # record. It has no flag for it: give it the file in a private mount namespace.
    can_ns = os.geteuid() == 0 and shutil.which("unshare") is not None and khz > 0
    tsc_wrap = ["unshare", "-m", "sh", "-c",
                "mount -t tmpfs pg-tsc /sys/devices/system/cpu/cpu0 && "
                f"echo {khz} > /sys/devices/system/cpu/cpu0/tsc_freq_khz && exec \"$@\"", "sh"]

    # ---- checks that a tracer recorded every call ------------------------------------
    def check_pg_trace_all(c, path):
        out = subprocess.run([pgdump, path], capture_output=True, text=True, check=True).stdout
        k = sum(1 for l in out.splitlines() if l.startswith("interval "))
        return k == ncalls, f"{k} interval records for {ncalls} calls"

    def check_pg_trace_wrap(c, path):
        out = subprocess.run([pgdump, "-c", path], capture_output=True, text=True, check=True).stdout
        committed, failed = 0, 0
        for l in out.splitlines():
            if l.startswith("chunk ") and " kind=1 " in l:
                f = dict(kv.split("=") for kv in l.split()[1:])
                committed = max(committed, int(f["records_before"]) + int(f["records"]))
                failed += int(f["dropped_before"])
        k = sum(1 for l in out.splitlines() if l.startswith("interval "))
        ok = committed >= ncalls and failed == 0
        return ok, (f"{committed} records committed (>= {ncalls} calls: one interval each, plus "
                    f"clock/dropped/event records), {failed} failed; {k} intervals kept in the 16 MiB ring")

    def check_pg_stats(c, path):
        out = subprocess.run([pgdump, path], capture_output=True, text=True, check=True).stdout
        k = sum(1 for l in out.splitlines() if l.startswith("event "))
        iv = sum(1 for l in out.splitlines() if l.startswith("interval "))
        return k == nevents and iv == 0, f"{k} event records for {nevents} events, {iv} intervals"

    def check_xray(c, path):
        files = [os.path.join(work, f) for f in os.listdir(work) if f.startswith("xray-")]
        if len(files) != 1:
            return False, f"{len(files)} XRay log files"
        out = subprocess.run([xcount, files[0]], capture_output=True, text=True, check=True).stdout
        f = dict(kv.split("=") for kv in out.split())
        ok = int(f["enter"]) == ncalls and int(f["exit"]) + int(f["tail_exit"]) == ncalls
        return ok, f"{f['enter']} enter + {f['exit']} exit records for {ncalls} calls"

    def check_uftrace(c, path):
        out = subprocess.run(["uftrace", "report", "-d", path, "-f", "call"], capture_output=True,
                             text=True, check=True).stdout
        m = re.search(r"^\s*(\d+)\s+peer_leaf\s*$", out, re.M)
        k = int(m.group(1)) if m else 0
        return k == ncalls, f"{k} calls of peer_leaf recorded for {ncalls}"

    # ---- the configurations -------------------------------------------------------------
    cfgs = []
    for cc in ("gcc", "clang"):
        plain, pg, fi = exe(f"peer-plain-{cc}"), exe(f"peer-pg-{cc}"), exe(f"peer-finstr-{cc}")
        if not plain:
            continue
        cfgs += [Config(f"{cc}:bare", cc, plain, "bare", row="plain build (baseline)"),
                 Config(f"{cc}:floor", cc, plain, "floor", row="**floor**: two inline `rdtsc` around the call"),
                 Config(f"{cc}:rdtscp", cc, plain, "rdtscp", row="two `rdtscp` around the call (reference)")]
        if pg:
            tr = os.path.join(work, f"pg-{cc}-trace.pgm")
            tra = os.path.join(work, f"pg-{cc}-trace-all.pgm")
            st = os.path.join(work, f"pg-{cc}-stats.pgm")
            cfgs += [
                Config(f"{cc}:pg-off", cc, pg, "off", row="perfgroup, switched off (`perfgroup_stop`)"),
                Config(f"{cc}:pg-reentry", cc, pg, "reentry", row="perfgroup, re-entry of a running group"),
                Config(f"{cc}:pg-pair", cc, pg, "pair", row="perfgroup, stopwatch pair, not recording"),
                Config(f"{cc}:pg-stats", cc, pg, "pair", out=st, verify=check_pg_stats,
                       env={"PERFGROUP_OUTPUT": st, "PERFGROUP_MODE": "stats"},
                       row="**perfgroup, stats-mode pair** (recording events)"),
                Config(f"{cc}:pg-trace", cc, pg, "pair", out=tr, verify=check_pg_trace_wrap,
                       env={"PERFGROUP_OUTPUT": tr, "PERFGROUP_MODE": "trace", "PERFGROUP_BUFFER": "16M"},
                       row="**perfgroup, trace-mode pair** (16 MiB ring file, steady state)"),
                Config(f"{cc}:pg-trace-all", cc, pg, "pair", out=tra, verify=check_pg_trace_all,
                       env={"PERFGROUP_OUTPUT": tra, "PERFGROUP_MODE": "trace", "PERFGROUP_BUFFER": "1G"},
                       row="perfgroup, trace-mode pair, fresh 1 GiB file keeping every call"),
            ]
        if fi:
            cfgs.append(Config(f"{cc}:finstr", cc, fi, "bare", row="`-finstrument-functions`, empty hooks (own .so)"))
    xr = exe("peer-xray-clang")
    if xr and exe("peer-plain-clang"):
        xenv = {"XRAY_OPTIONS": f"patch_premain=false xray_logfile_base={work}/xray-"}
        cfgs.append(Config("clang:xray-unpatched", "clang", xr, "bare", env=xenv, row="XRay, unpatched sleds"))
        if can_ns:
            cfgs.append(Config("clang:xray-fdr", "clang", xr, "fdr", env=xenv, wrap=tsc_wrap, verify=check_xray,
                               out=work + "/xray-", row=f"**XRay FDR**, every call recorded (TSC at {khz} kHz given)"))
        cfgs.append(Config("clang:xray-fdr-nofreq", "clang", xr, "fdr", env=xenv, verify=check_xray,
                           out=work + "/xray-", row="XRay FDR, every call, TSC frequency not found (clock_gettime)"))
    ut = exe("peer-uftrace-gcc")
    if ut and have_uftrace:
        ud = os.path.join(work, "uftrace.data")
        cfgs.append(Config("gcc:uftrace", "gcc", ut, "bare", out=ud, verify=check_uftrace,
                           wrap=["uftrace", "record", "--no-libcall", "-d", ud],
                           row="**uftrace** record (`-finstrument-functions` build)"))
    elif not have_uftrace:
        print("run.py: uftrace not installed: its row is skipped", file=sys.stderr)

    def clean(c):
        if not c.out:
            return
        for f in os.listdir(work):
            p = os.path.join(work, f)
            if p.startswith(c.out):
                shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)

    verified = {}

    def run(c, check):
        env = dict(os.environ)
        env.update(c.env)
        cmd = c.wrap + [c.exe, c.mode, str(n)]
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        c.proc.append((ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime) * 1e9 / ncalls)
        m = re.search(r"ns_per_call=([\d.]+) calls=(\d+)", r.stdout)
        if r.returncode != 0 or not m:
            clean(c)
            raise SystemExit(f"run.py: {c.name}: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-400:]}")
        if int(m.group(2)) != ncalls:
            raise SystemExit(f"run.py: {c.name}: {m.group(2)} calls, expected {ncalls}")
        if check and c.verify:
            ok, what = c.verify(c, c.out)
            verified[c.name] = (ok, what)
            print(f"  check {c.name}: {'ok' if ok else 'FAILED'}: {what}", file=sys.stderr)
        clean(c)
        return float(m.group(1))

    start = datetime.datetime.now(datetime.timezone.utc)
    load0 = os.getloadavg()
    print(f"run.py: {len(cfgs)} configurations x {a.rounds} rounds, N={n}", file=sys.stderr)
    for r in range(a.rounds):
        k = len(cfgs)
        for j in range(k):
            c = cfgs[(j + r) % k]
            c.times.append(run(c, check=(r == 0)))
        print(f"  round {r + 1}/{a.rounds} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    load1 = os.getloadavg()
    shutil.rmtree(work, ignore_errors=True)

    med = {c.name: statistics.median(c.times) for c in cfgs}
    ov = {c.name: med[c.name] - med[f"{c.cc}:bare"] for c in cfgs}
    fl = {cc: ov.get(f"{cc}:floor") for cc in ("gcc", "clang")}

    lines = []
    def version(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            return "?"
    lines.append(f"Run of {start:%Y-%m-%d %H:%M} UTC, {cpu_model()}, {os.cpu_count()} CPUs, Linux "
                 f"{platform.release()}; {version(['gcc-12', '--version'])}; {version(['clang-14', '--version'])}; "
                 f"{version(['uftrace', '--version']) if have_uftrace else 'no uftrace'}; "
                 f"load average {load0[0]:.2f} at start and {load1[0]:.2f} at end; "
                 f"N = {n} timed calls per run (+{n // 10} untimed), {a.rounds} interleaved rounds, "
                 f"medians of thread CPU time. TSC {khz} kHz ({khz_src}).")
    lines.append("")
    lines.append("| compiler | configuration | ns/call | overhead ns | × floor | min–max ns/call | "
                 "whole command CPU ns/call | every call recorded? |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for c in cfgs:
        f = fl[c.cc]
        ratio = "—" if c.name.endswith(":bare") else f"{ov[c.name] / f:.2f}"
        chk = verified.get(c.name)
        chk_s = "" if chk is None else ("yes: " if chk[0] else "**NO**: ") + chk[1]
        lines.append(f"| {c.cc} | {c.row} | {med[c.name]:.2f} | {ov[c.name]:.2f} | {ratio} | "
                     f"{min(c.times):.2f}–{max(c.times):.2f} | {statistics.median(c.proc):.1f} | {chk_s} |")
    lines.append("")
    lines.append("| target | gcc | clang |")
    lines.append("|---|---|---|")

    def tgt(label, f, fmt):
        vals = []
        for cc in ("gcc", "clang"):
            try:
                vals.append(fmt(f(cc)))
            except (KeyError, TypeError, ZeroDivisionError):
                vals.append("—")
        lines.append(f"| {label} | {vals[0]} | {vals[1]} |")

    tgt("stats-mode pair ≤ 1.15 × floor", lambda cc: ov[f"{cc}:pg-stats"] / fl[cc], lambda v: f"{v:.2f} ×")
    tgt("trace-mode pair ≤ 1.3 × floor", lambda cc: ov[f"{cc}:pg-trace"] / fl[cc], lambda v: f"{v:.2f} ×")
    tgt("XRay FDR overhead / perfgroup trace overhead ≥ 5",
        lambda cc: ov["clang:xray-fdr"] / ov[f"{cc}:pg-trace"] if cc == "clang" else None, lambda v: f"{v:.2f} ×")
    tgt("uftrace overhead / perfgroup trace overhead ≥ 3.5",
        lambda cc: ov["gcc:uftrace"] / ov[f"{cc}:pg-trace"] if cc == "gcc" else None, lambda v: f"{v:.2f} ×")
    pmed = {c.name: statistics.median(c.proc) for c in cfgs}
    pov = {c.name: pmed[c.name] - pmed[f"{c.cc}:bare"] for c in cfgs}
    tgt("(whole command CPU: XRay FDR / perfgroup trace)",
        lambda cc: pov["clang:xray-fdr"] / pov[f"{cc}:pg-trace"] if cc == "clang" else None, lambda v: f"{v:.2f} ×")
    tgt("(whole command CPU: uftrace / perfgroup trace)",
        lambda cc: pov["gcc:uftrace"] / pov[f"{cc}:pg-trace"] if cc == "gcc" else None, lambda v: f"{v:.2f} ×")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)
    bad = [k for k, (ok, _) in verified.items() if not ok]
    if bad:
        print(f"run.py: recording check FAILED for {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
