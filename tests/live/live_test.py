#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""live_test.py — recordings read while the program writes them (one ctest per call).

    live_test.py convert      a trace recording with a small buffer, recycling its chunks all
                              the time, converted (--summary --json) over and over while it
                              runs: every conversion succeeds; the chunks recycled under the
                              reader are skipped and counted (a warning), never an error

Environment: LIVE_CONVERT, LIVE_PERFGROUP (programs), LIVE_CHURN, LIVE_DEMO (instrumented test
programs), LIVE_WORK (a scratch directory). Exit 77 = skipped (ctest SKIP_RETURN_CODE).
"""
import json
import os
import subprocess
import sys
import time

CONVERT = os.environ.get("LIVE_CONVERT", "perfgroup-convert")
PERFGROUP = os.environ.get("LIVE_PERFGROUP", "perfgroup")
CHURN = os.environ.get("LIVE_CHURN", "")
DEMO = os.environ.get("LIVE_DEMO", "")
WORK = os.environ.get("LIVE_WORK", "/tmp/live-test")
FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg, flush=True)


def workdir(name):
    d = os.path.join(WORK, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    return d


def wait_for(path, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path):
            return True
        time.sleep(0.01)
    return False


def convert():
    d = workdir("convert")
    pgm = os.path.join(d, "churn.pgm")
    env = dict(os.environ, PERFGROUP_OUTPUT=pgm, PERFGROUP_MODE="trace",
               PERFGROUP_BUFFER="1M", PERFGROUP_CHUNK="4K")
    prog = subprocess.Popen([CHURN, "30"], env=env)
    try:
        if not wait_for(pgm):
            fail("no recording appeared at %s" % pgm)
            return
        runs = ok = skipped_runs = with_spell = 0
        end = time.monotonic() + 3.0
        while (runs < 40 or time.monotonic() < end) and runs < 2000 and prog.poll() is None:
            p = subprocess.run([CONVERT, pgm, "--summary", "--json"], capture_output=True,
                               text=True)
            runs += 1
            if p.returncode != 0:
                fail("conversion %d of the live file: exit %d: %s" % (runs, p.returncode,
                                                                       p.stderr.strip()))
                continue
            try:
                js = json.loads(p.stdout)
            except ValueError as e:
                fail("conversion %d: not JSON: %s" % (runs, e))
                continue
            ok += 1
            groups = {g["group"]: g for g in js["overall"]["groups"]}
            if "spell" in groups and groups["spell"]["events"] > 0:
                with_spell += 1
            if "recycled by the writer while being read: skipped" in p.stderr:
                skipped_runs += 1
        print("%d conversions of the live file: %d whole, %d with spell events, %d with "
              "recycled chunks skipped" % (runs, ok, with_spell, skipped_runs))
        # a conversion descheduled for long finds every chunk it scanned recycled: an empty
        # summary is then the truth; most must hold the program's events
        if with_spell < 0.8 * runs:
            fail("only %d of %d conversions show the spell events" % (with_spell, runs))
        if runs < 40:
            fail("only %d conversions before the program ended" % runs)
        # the writer recycled chunks all along (its own count, read from the file)
        p = subprocess.run([CONVERT, pgm, "--summary", "--json"], capture_output=True,
                           text=True)
        js = json.loads(p.stdout) if p.returncode == 0 else None
        if not js or js["processes"][0]["records_dropped"] == 0:
            fail("the recording did not recycle chunks: the test tests nothing")
    finally:
        prog.kill()
        prog.wait()


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 1
    cmd = argv[1]
    if cmd == "convert":
        convert()
    else:
        print("unknown test " + cmd)
        return 1
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
