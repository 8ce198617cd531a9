#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""live_test.py — recordings read while the program writes them (one ctest per call).

    live_test.py convert      a trace recording with a small buffer, recycling its chunks all
                              the time, converted (--summary --json) over and over while it
                              runs: every conversion succeeds; the chunks recycled under the
                              reader are skipped and counted (a warning), never an error

    live_test.py top          `perfgroup top PID` in a real terminal (tmux) against the running
                              demo: the first screen at once (before the first interval:
                              with -d 60 the spell row shows, then q quits); live CPU %
                              rows; after SIGKILL of the demo, top keeps the last state,
                              says the process is gone and its spell total equals the final
                              summary's (the same file, read whole); the keys s and c sort
                              its rows by self time and by CPU; q quits
    live_test.py top_fork     `perfgroup top -d 0.5 FILE` with stdout not a terminal against a
                              program that forks: plain text blocks (no escape sequence), the
                              child's recording appears as a second process, top ends with
                              both (exited)
    live_test.py prometheus   a real Prometheus on 127.0.0.1 (temporary config, free port)
                              scrapes `perfgroup metrics --listen` while the demo runs;
                              perfgroup_group_cpu_seconds_total{group="spell"} from its HTTP
                              API is within 5 % of perfgroup-convert --summary --json;
                              `promtool check metrics` is clean on /metrics and the textfile
    live_test.py prometheus_totals  the sidecar started late and restarted mid-run: its
                              counters are the program's whole-run totals (no gap, no reset),
                              at the end its snapshot's (tests/recording/prog/totals_prog.c)

Environment: LIVE_CONVERT, LIVE_PERFGROUP (programs), LIVE_CHURN, LIVE_DEMO, LIVE_TOTALS (instrumented test
programs), LIVE_WORK (a scratch directory). Exit 77 = skipped (ctest SKIP_RETURN_CODE).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

CONVERT = os.environ.get("LIVE_CONVERT", "perfgroup-convert")
PERFGROUP = os.environ.get("LIVE_PERFGROUP", "perfgroup")
CHURN = os.environ.get("LIVE_CHURN", "")
DEMO = os.environ.get("LIVE_DEMO", "")
TOTALS = os.environ.get("LIVE_TOTALS", "")
WORK = os.environ.get("LIVE_WORK", "/tmp/live-test")
FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg, flush=True)


def workdir(name):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
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
    # the program outlives the conversions (killed below): how many fit in a given time
    # depends on the machine's load, not on the runtime or the converter
    prog = subprocess.Popen([CHURN, "600"], env=env)
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
        # summary is then the truth; half at least must hold the program's events
        if with_spell < 0.5 * runs:
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


def skip(msg):
    print("SKIPPED: " + msg, flush=True)
    sys.exit(77)


def summary_spell(pgm):
    """The final summary of the recording: spell's CPU % and CPU ms (overall)."""
    p = subprocess.run([CONVERT, pgm, "--summary", "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        fail("summary of %s: exit %d: %s" % (pgm, p.returncode, p.stderr.strip()))
        return None
    for g in json.loads(p.stdout)["overall"]["groups"]:
        if g["group"] == "spell":
            return g
    fail("no spell group in the summary of %s" % pgm)
    return None


class Tmux:
    def __init__(self, name):
        self.sock = "%s-%d" % (name, os.getpid())

    def __call__(self, *args):
        return subprocess.run(["tmux", "-L", self.sock] + list(args), capture_output=True,
                              text=True)

    def screen(self):
        return self("capture-pane", "-p", "-t", "top").stdout

    def new_session(self, *args):
        """tmux new-session; when the server is still shutting down after its last session
        was killed ("server exited unexpectedly"), again, up to 10 times 0.2 s apart."""
        for _ in range(10):
            r = self("new-session", *args)
            if r.returncode == 0 or "server exited unexpectedly" not in r.stderr:
                return r
            time.sleep(0.2)
        return r

    def close(self):
        self("kill-server")

    def quit_top(self, what):
        """Press q: top must end with status 0 (a bounded wait: LIVENESS_S)."""
        self("send-keys", "-t", "top", "q")
        t0 = time.monotonic()
        while time.monotonic() - t0 < LIVENESS_S and "top ended: " not in self.screen():
            time.sleep(0.1)
        if "top ended: 0" not in self.screen():
            fail("q did not quit %s (with status 0):\n%s" % (what, self.screen()))
            return False
        return True


# How long to wait for something top must do (redraw after a key, notice a dead process): a
# liveness limit, not a measurement — the checks are that it happens, and a loaded machine
# (a CPU spinner beside the test, time stolen by the hypervisor) only delays it; a top that
# never does it fails all the same.
LIVENESS_S = 30

SPELL_ROW = re.compile(r"^\s+spell\s+(\d+\.\d)\s", re.M)
# the spell row's last two columns: total CPU s since the start, jank > 16 ms
SPELL_TOTAL = re.compile(r"^\s+spell\s.*\s(\d+\.\d{3})\s+\d+\s*$", re.M)


ROW_NAMES = re.compile(r"^  (\S+)\s+[0-9.]+\s+[0-9.?]+\s", re.M)


def sort_keys(tm, shown):
    """The keys s and c on top's frozen last state (the demo killed): s redraws at once with
    the rows by self time — spell (its own code) above core (the loop's file group holds
    everything: CPU 100 %, self ~0) — and c by CPU again, core first."""
    by_cpu = ROW_NAMES.findall(shown)
    if not by_cpu or by_cpu[0] != "core" or "spell" not in by_cpu:
        fail("top's rows by CPU: %r, want core first and a spell row:\n%s" % (by_cpu, shown))
        return
    for key, header, check in (("s", "sorted by self", lambda r: r.index("spell") < r.index("core")),
                               ("c", "sorted by CPU", lambda r: r == by_cpu)):
        tm("send-keys", "-t", "top", key)

        def sorted_(scr):  # a capture can catch the redraw half done: wait for a whole one
            rows = ROW_NAMES.findall(scr)
            return header in scr and "spell" in rows and "core" in rows and check(rows), rows
        t0 = time.monotonic()
        ok, rows = sorted_(scr := tm.screen())
        while not ok and time.monotonic() - t0 < LIVENESS_S:
            time.sleep(0.1)
            ok, rows = sorted_(scr := tm.screen())
        print("after key %s: %r" % (key, rows))
        if not ok:
            fail("key %s: not %s within %d s:\n%s" % (key, header, LIVENESS_S, scr))


def top():
    if not shutil.which("tmux"):
        skip("tmux is not installed (scripts/deps.sh installs it)")
    d = workdir("top")
    pgm = os.path.join(d, "demo.pgm")
    demo = subprocess.Popen([DEMO, "100000"], env=dict(os.environ, PERFGROUP_OUTPUT=pgm),
                            stdout=subprocess.DEVNULL)
    tm = Tmux("pg-live-top")
    try:
        if not wait_for(pgm):
            fail("the demo made no recording")
            return
        time.sleep(0.3)  # some events to show
        # The first screen comes at once, before the first interval's sleep: with a 60 s
        # interval the spell row can only show within the 30 s waited here if it does (a
        # deterministic check: how fast the first read is depends on the machine's load,
        # printed, not bounded).
        t0 = time.monotonic()
        r = tm("new-session", "-d", "-s", "top", "-x", "100", "-y", "30",
               "%s top -d 60 %d; echo top ended: $?; sleep 60" % (PERFGROUP, demo.pid))
        if r.returncode:
            fail("tmux new-session: " + r.stderr)
            return
        first = None
        while time.monotonic() - t0 < 30 and first is None:
            if SPELL_ROW.search(tm.screen()):
                first = time.monotonic() - t0
            else:
                time.sleep(0.05)
        if first is None:
            fail("no spell row 30 s after `top -d 60` started: the first screen waits for an "
                 "interval:\n%s" % tm.screen())
            return
        print("spell row on screen %.2f s after tmux started top -d 60" % first)
        if not tm.quit_top("top -d 60"):
            return
        tm("kill-session", "-t", "top")
        r = tm.new_session("-d", "-s", "top", "-x", "100", "-y", "30",
                           "%s top %d; echo top ended: $?; sleep 60" % (PERFGROUP, demo.pid))
        if r.returncode:
            fail("tmux new-session: " + r.stderr)
            return
        # let it show whole one-second intervals, then read the live CPU % just before the kill
        time.sleep(3.5)
        before = tm.screen()
        live = [float(x) for x in SPELL_ROW.findall(before)]
        demo.send_signal(signal.SIGKILL)
        demo.wait()
        gone = None
        t1 = time.monotonic()
        while time.monotonic() - t1 < LIVENESS_S:
            scr = tm.screen()
            if "PROCESS GONE" in scr:
                gone = scr
                break
            time.sleep(0.1)
        if not gone:
            fail("top does not say the process is gone %d s after SIGKILL:\n%s"
                 % (LIVENESS_S, tm.screen()))
            return
        if " gone " not in gone or not SPELL_ROW.search(gone):
            fail("after SIGKILL, top lost the last state:\n" + gone)
        print("after SIGKILL:\n" + gone.strip())
        final = summary_spell(pgm)
        if final is None or not live:
            fail("no live spell row:\n" + before)
            return
        # One interval's CPU % against the run's average would compare two different things
        # (the demo's own variation, the machine's load); the totals are one thing read twice:
        # top's last read of the dead process's file is the whole file, as the summary's.
        m = SPELL_TOTAL.search(gone)
        print("spell CPU %%: live %.1f (last interval), final summary %.1f (the run); total "
              "CPU s: top %s, summary %.3f" % (live[-1], final["cpu_percent"],
                                              m.group(1) if m else "?", final["cpu_ms"] / 1000))
        if not m or abs(float(m.group(1)) - final["cpu_ms"] / 1000) > 0.0005 + 1e-9:
            fail("spell total after SIGKILL: top %s s vs summary %.4f s (same file)"
                 % (m.group(1) if m else "(no total)", final["cpu_ms"] / 1000))
        sort_keys(tm, gone)
        tm.quit_top("top")
    finally:
        tm.close()
        if demo.poll() is None:
            demo.kill()
            demo.wait()


def top_fork():
    d = workdir("top_fork")
    pgm = os.path.join(d, "churn.pgm")
    # 4 s of wall time: top (-d 0.5) must print 3 refreshes while it runs, however late a
    # loaded machine starts it (a liveness margin, not a measurement)
    prog = subprocess.Popen([CHURN, "4", "fork"], env=dict(os.environ, PERFGROUP_OUTPUT=pgm))
    try:
        if not wait_for(pgm):
            fail("no recording appeared")
            return
        p = subprocess.run([PERFGROUP, "top", "-d", "0.5", pgm], capture_output=True,
                           text=True, timeout=60)
        prog.wait()
        out = p.stdout
        if p.returncode:
            fail("perfgroup top: exit %d: %s" % (p.returncode, p.stderr))
        if "\033" in out:
            fail("escape sequences in top's output to a pipe")
        blocks = out.count("perfgroup top — ")
        last = out[out.rfind("perfgroup top — "):]
        pids = re.findall(r"^live_churn pid (\d+) \(parent (\d+)\) — (\w+) — ", last, re.M)
        print("%d blocks; last:\n%s" % (blocks, last))
        if blocks < 3:
            fail("only %d refreshes printed" % blocks)
        if len(pids) != 2 or pids[1][1] != pids[0][0]:
            fail("the forked child's recording is not shown as a second process: %s" % pids)
        if any(state != "exited" for _, _, state in pids):
            fail("top did not end with both processes exited: %s" % pids)
        if len(SPELL_ROW.findall(last)) != 2:
            fail("a spell row per process expected")
    finally:
        if prog.poll() is None:
            prog.kill()
            prog.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def promql(base, query):
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": query})
    js = json.loads(http_get(url))
    if js.get("status") != "success":
        raise RuntimeError("query %s: %s" % (query, js))
    return js["data"]["result"]


def promtool_check(text, what):
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True)
    if p.returncode != 0 or p.stdout.strip() or p.stderr.strip():
        fail("promtool check metrics on %s: exit %d\n%s%s" % (what, p.returncode, p.stdout,
                                                              p.stderr))
    else:
        print("promtool check metrics: %s clean" % what)


def textfile_node_exporter(tdir, want, procs):
    """The textfile route: node_exporter's textfile collector serves the same totals."""
    ne = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if not ne:
        print("node_exporter not installed: its textfile collector is not checked "
              "(Debian package prometheus-node-exporter; scripts/deps.sh installs it)")
        return
    port = free_port()
    node = subprocess.Popen([ne, "--collector.disable-defaults", "--collector.textfile",
                             "--collector.textfile.directory=" + tdir,
                             "--web.listen-address=127.0.0.1:%d" % port],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(node)
    body = None
    end = time.monotonic() + 20
    while time.monotonic() < end and body is None:
        try:
            body = http_get("http://127.0.0.1:%d/metrics" % port, timeout=2)
        except Exception:
            if node.poll() is not None:
                fail("node_exporter exited: %d" % node.returncode)
                return
            time.sleep(0.2)
    m = re.search(r'^perfgroup_group_cpu_seconds_total\{[^}]*group="spell"[^}]*\} (\S+)$',
                  body or "", re.M)
    if not m:
        fail("node_exporter's textfile collector does not serve the spell series")
    elif abs(float(m.group(1)) - want) > 0.05 * want:
        fail("node_exporter serves %s s, the summary says %.4f s" % (m.group(1), want))
    elif "node_textfile_scrape_error 0" not in body:
        fail("node_exporter reports a textfile scrape error")
    else:
        print("node_exporter textfile collector: spell %s s" % m.group(1))


def start_prometheus(d, target, procs):
    """A real Prometheus on 127.0.0.1 (free port, temporary config and storage in d) scraping
    `target` every second; its base URL, or None (failed)."""
    port = free_port()
    cfg = os.path.join(d, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: perfgroup\n"
                "    static_configs:\n      - targets: ['%s']\n" % target)
    base = "http://127.0.0.1:%d" % port
    prom = subprocess.Popen(["prometheus", "--config.file=" + cfg,
                             "--storage.tsdb.path=" + os.path.join(d, "tsdb"),
                             "--web.listen-address=127.0.0.1:%d" % port,
                             "--log.level=warn"],
                            stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(d, "prom.log"), "w"))
    procs.append(prom)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        try:
            http_get(base + "/-/ready", timeout=1)
            return base
        except Exception:
            if prom.poll() is not None:
                fail("prometheus exited: " + open(os.path.join(d, "prom.log")).read())
                return None
            time.sleep(0.2)
    fail("prometheus not ready in 30 s")
    return None


def stop_all(procs):
    for p in reversed(procs):
        if p.poll() is None:
            p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def sidecar(port, path):
    """perfgroup metrics serving 127.0.0.1:port for the recording at path."""
    side = subprocess.Popen([PERFGROUP, "metrics", "--listen", "127.0.0.1:%d" % port, path],
                            stderr=subprocess.PIPE, text=True)
    side.stderr.readline()  # "serving http://…": it listens
    return side


def scraped_events(port):
    """The sidecar's perfgroup_thread_events_total, summed over its series (scraped here)."""
    text = http_get("http://127.0.0.1:%d/metrics" % port, timeout=30)
    return sum(int(float(l.rsplit(" ", 1)[1])) for l in text.splitlines()
               if l.startswith("perfgroup_thread_events_total{"))


def prom_samples_since(base, t):
    """Prometheus's samples of the events counter taken after the wall-clock time t."""
    res = promql(base, 'perfgroup_thread_events_total')
    return [r for r in res if float(r["value"][0]) > t]


def prometheus_totals():
    """The sidecar started late and restarted mid-run: Prometheus's counters are the
    program's whole-run totals (the file's, format version 3), with no gap for chunks recycled
    before the sidecar read them and no reset at the restart; at the end they equal the
    program's own snapshot. The restart is checked step by step, not left to timing:
    Prometheus has scraped the first sidecar twice, the first sidecar's last answer (a1) is
    below the program's final count (mid-run), the restarted one's first answer is not below
    it (the same counter, continued), Prometheus then scrapes the restarted one, and no
    series ever reset."""
    for tool in ("prometheus", "promtool"):
        if not shutil.which(tool):
            skip("%s is not installed (Debian package prometheus; scripts/deps.sh installs "
                 "it)" % tool)
    if not TOTALS:
        skip("no totals program (the GCC plugin is not built)")
    d = workdir("prometheus_totals")
    pgm = os.path.join(d, "totals.pgm")
    stop = os.path.join(d, "stop")  # the program's events go on until it exists
    procs = []
    try:
        prog = subprocess.Popen([TOTALS, "one", "300000", "hold"], stdout=subprocess.PIPE,
                                text=True, env=dict(os.environ, PERFGROUP_OUTPUT=pgm,
                                                    PERFGROUP_BUFFER="1M", TOTALS_UNTIL=stop))
        procs.append(prog)
        wait_for(pgm)
        time.sleep(1.0)  # late: its first chunks are recycled already
        port = free_port()
        procs.append(sidecar(port, pgm))
        first = scraped_events(port)
        summ = json.loads(subprocess.run([CONVERT, pgm, "--summary", "--json", "--no-progress"],
                                         capture_output=True, text=True, timeout=120).stdout)
        kept = summ["processes"][0]["events_kept"]
        print("late start: the sidecar's first answer %d events; the buffer then kept %d"
              % (first, kept))
        if not first > kept:
            fail("the late sidecar counted only what the buffer kept (%d, kept %d)"
                 % (first, kept))
        base = start_prometheus(d, "127.0.0.1:%d" % port, procs)
        if not base:
            return
        end = time.monotonic() + 30
        n = []
        while time.monotonic() < end:
            n = promql(base, 'count_over_time(perfgroup_thread_events_total[10m])')
            if n and min(float(r["value"][1]) for r in n) >= 2:
                break
            time.sleep(0.25)
        else:
            fail("Prometheus did not scrape the first sidecar twice in 30 s: %s" % n)
            return
        a1 = scraped_events(port)
        procs[1].terminate()  # restarted mid-run
        procs[1].wait(10)
        t_restart = time.time()
        procs[1] = sidecar(port, pgm)
        b1 = scraped_events(port)
        print("restart: the first sidecar's last answer %d events, the restarted one's first %d"
              % (a1, b1))
        if b1 < a1:
            fail("the restarted sidecar went back: %d events after %d" % (b1, a1))
        end = time.monotonic() + 30
        while time.monotonic() < end and not prom_samples_since(base, t_restart + 0.1):
            time.sleep(0.25)
        if not prom_samples_since(base, t_restart + 0.1):
            fail("Prometheus did not scrape the restarted sidecar in 30 s")
        time.sleep(1.5)  # a scrape or two of the restarted sidecar while the events go on
        open(stop, "w").close()
        out = ""
        for line in prog.stdout:
            out += line
            if line.strip() == "done":
                break
        snap = {}
        for line in out.splitlines():
            if line.startswith("{"):
                g = json.loads(line)
                snap[g["group"]] = g
        want_events = snap["top"]["events"]
        want_parse = snap["parse"]["cpu_ns"] / 1e9
        if not a1 < want_events:
            fail("the restart was not mid-run: the first sidecar already had all %d events "
                 "(a longer run is needed on this machine)" % want_events)
        got = None
        end = time.monotonic() + 30
        while time.monotonic() < end:
            ev = promql(base, 'sum(perfgroup_thread_events_total)')
            if ev and int(float(ev[0]["value"][1])) == want_events:
                got = ev
                break
            time.sleep(0.5)
        if got is None:
            fail("Prometheus never had the program's %d events (last %s)" % (want_events, ev))
            return
        res = promql(base, 'perfgroup_group_cpu_seconds_total{group="parse"}')
        cpu = float(res[0]["value"][1]) if res else -1
        print("events: Prometheus %s, snapshot %d; parse CPU: Prometheus %.6f s, snapshot %.6f s"
              % (got[0]["value"][1], want_events, cpu, want_parse))
        if abs(cpu - want_parse) > 1e-3 * want_parse + 1e-6:
            fail("parse CPU: Prometheus %.6f s, snapshot %.6f s" % (cpu, want_parse))
        resets = promql(base, 'resets(perfgroup_thread_events_total[10m])')
        if not resets or any(float(r["value"][1]) != 0 for r in resets):
            fail("a counter went back (the sidecar's restart or a late start): %s" % resets)
        first = promql(base, 'min_over_time(perfgroup_thread_events_total[10m])')
        print("first scraped events: %s (the program had run for a second before the sidecar)"
              % (first[0]["value"][1] if first else None))
        if not first or float(first[0]["value"][1]) <= 0:
            fail("the late sidecar's first scrape had no events: %s" % first)
    finally:
        stop_all(procs)


def prometheus():
    for tool in ("prometheus", "promtool"):
        if not shutil.which(tool):
            skip("%s is not installed (Debian package prometheus; scripts/deps.sh installs "
                 "it)" % tool)
    d = workdir("prometheus")
    rec = os.path.join(d, "rec")
    os.makedirs(rec, exist_ok=True)
    procs = []
    try:
        # the sidecar follows the directory: the demo's file appears in it later
        side = subprocess.Popen([PERFGROUP, "metrics", "--listen", "127.0.0.1:0", rec],
                                stderr=subprocess.PIPE, text=True)
        procs.append(side)
        line = side.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", line)
        if not m:
            fail("perfgroup metrics did not say where it serves: %r" % line)
            return
        target = "127.0.0.1:" + m.group(1)
        base = start_prometheus(d, target, procs)
        if not base:
            return
        pgm = os.path.join(rec, "demo.pgm")
        demo = subprocess.run([DEMO, "500"], env=dict(os.environ, PERFGROUP_OUTPUT=pgm),
                              stdout=subprocess.DEVNULL, timeout=60)
        if demo.returncode:
            fail("the demo failed: exit %d" % demo.returncode)
            return
        final = summary_spell(pgm)
        if final is None:
            return
        want = final["cpu_ms"] / 1000.0
        # the scrapes after the exit carry the final totals (process_running 0)
        got = None
        end = time.monotonic() + 20
        while time.monotonic() < end:
            run = promql(base, 'perfgroup_process_running{program="live_eventloop"}')
            res = promql(base, 'perfgroup_group_cpu_seconds_total{group="spell"}')
            if run and run[0]["value"][1] == "0" and res:
                got = float(res[0]["value"][1])
                break
            time.sleep(0.5)
        if got is None:
            fail("Prometheus has no final perfgroup_group_cpu_seconds_total{group=\"spell\"}"
                 " 20 s after the demo ended")
            return
        print("spell CPU: Prometheus %.4f s, summary %.4f s (%s)" % (got, want, res[0]["metric"]))
        if abs(got - want) > 0.05 * want:
            fail("Prometheus says %.4f s, the summary %.4f s: more than 5 %% apart"
                 % (got, want))
        body = http_get("http://%s/metrics" % target)
        promtool_check(body, "/metrics")
        tdir = os.path.join(d, "textfile")
        os.makedirs(tdir)
        tf = os.path.join(tdir, "perfgroup.prom")
        p = subprocess.run([PERFGROUP, "metrics", "--textfile", tf, "--once", rec],
                           capture_output=True, text=True)
        if p.returncode or not os.path.exists(tf):
            fail("perfgroup metrics --textfile: exit %d %s" % (p.returncode, p.stderr))
            return
        promtool_check(open(tf).read(), "the textfile")
        textfile_node_exporter(tdir, want, procs)
    finally:
        stop_all(procs)


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 1
    cmd = argv[1]
    if cmd == "convert":
        convert()
    elif cmd == "top":
        top()
    elif cmd == "top_fork":
        top_fork()
    elif cmd == "prometheus":
        prometheus()
    elif cmd == "prometheus_totals":
        prometheus_totals()
    else:
        print("unknown test " + cmd)
        return 1
    return verdict()


def verdict():
    """The exit status of a test: 1 after a failure, else 0 ("ok")."""
    if FAILS:
        print("%d failure(s)" % len(FAILS))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
