#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""hostile_test.py — the live tools against a hostile neighbour (docs/fleet.md, "Threat
model"); one ctest per call, each a finding of issue 28.

    hostile_test.py slow      `perfgroup metrics --listen` with idle connections, a client
                              sending a byte every 0.5 s, one that never reads its answer and
                              more connections than the cap: every scrape within 100 ms of
                              the slowest undisturbed scrape of the same run; the idle and the
                              slow client closed (408) at the 5 s request deadline
    hostile_test.py http      IPv6 ([::1]:0), HEAD (the GET's headers, no body), 405 with
                              Allow for POST (with a body) and PUT, 404, 400, a bad --listen
    hostile_test.py names     a recording whose program, thread and group names hold bytes
                              that are not UTF-8, escape sequences and a newline: the page is
                              UTF-8 and `promtool check metrics` clean, twin names one series;
                              `perfgroup top` in tmux and to a pipe prints no control character
    hostile_test.py dir       a directory with a symlink to a 0600 recording elsewhere, a FIFO,
                              a device node, a sparse file whose header claims 2^22 chunks and
                              recordings of other users: none opened (strace) but the
                              recordings the owner rule allows, each skip told once, the sparse
                              file read in the time of its real size; as an unprivileged user,
                              permission denied named as such and the file read once readable
    hostile_test.py hangup    `perfgroup top` whose terminal hangs up without a SIGHUP to it
                              (not the session's leader): it exits, no busy loop
    hostile_test.py truncate  a neighbour truncating a live recording (the runtime writing
                              it; then one whose writer was killed, its header counting all
                              16,384 totals slots in use) again and again while the converter
                              (--summary --json and Gecko), `perfgroup metrics`, `perfgroup
                              top` and a sidecar read it: none killed by a signal (SIGBUS),
                              each a valid output or one clear line, within 30 s

Environment: LIVE_PERFGROUP, LIVE_NAMES (tests/live/names.c), LIVE_WORK. Exit 77 = skipped.
"""
import os
import pty
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from live_test import CONVERT, fail, skip, verdict, workdir  # noqa: E402

PERFGROUP = os.environ.get("LIVE_PERFGROUP", "perfgroup")
NAMES = os.environ.get("LIVE_NAMES", "")

# the server's limits (live/http.c): the whole request within REQUEST_S of accept
REQUEST_S = 5.0
MAX_CONNS = 64
# a hostile client may add at most this to a scrape (issue 28), beyond the scrape's own cost
DELAY_S = 0.100


def record_names(d, seconds, argv0=b"names", thread=b"th\xe9\x1b[2Jx\ny", wait=True):
    """tests/live/names.c recording into d/<pid>.pgm, with the given argv[0]."""
    env = dict(os.environ, PERFGROUP_OUTPUT=os.path.join(d, "%p.pgm"))
    p = subprocess.Popen([argv0, thread, str(seconds).encode()], executable=NAMES, env=env)
    if wait:
        if p.wait(60):
            fail("the names program failed: exit %d" % p.returncode)
    return p


class Sidecar:
    """perfgroup metrics --listen on a free port; stderr collected in a thread."""

    def __init__(self, args, listen="127.0.0.1:0", prefix=(), binary=None):
        self.traced = any("strace" in x for x in prefix)
        self.p = subprocess.Popen(list(prefix) + [binary or PERFGROUP, "metrics", "--listen", listen] +
                                  list(args), stderr=subprocess.PIPE)
        self.lines = []
        m = None
        while not m:  # the files skipped at the start are told before
            line = self.p.stderr.readline().decode(errors="replace")
            m = re.search(r"http://(\[[^\]]+\]|[0-9.]+):(\d+)/metrics", line)
            if not line:
                break
            if not m:
                self.lines.append(line.rstrip("\n"))
        if not m:
            self.host, self.port = None, None
            fail("perfgroup metrics did not say where it serves: %r" % line)
            return
        self.host = m.group(1).strip("[]")
        self.port = int(m.group(2))
        self.t = threading.Thread(target=self._drain, daemon=True)
        self.t.start()

    def _drain(self):
        for line in self.p.stderr:
            self.lines.append(line.decode(errors="replace").rstrip("\n"))

    def connect(self):
        fam = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect((self.host, self.port))
        return s

    def request(self, raw):
        """Sends raw, reads the whole answer: (seconds, status line, headers, body)."""
        t0 = time.monotonic()
        s = self.connect()
        s.sendall(raw)
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        s.close()
        dt = time.monotonic() - t0
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode(errors="replace").split("\r\n")
        hdrs = {}
        for h in lines[1:]:
            k, _, v = h.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        return dt, lines[0], hdrs, body

    def scrape(self):
        return self.request(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")

    def stop(self):
        # under strace, the sidecar is strace's child: the signal goes to it
        kids = "/proc/%d/task/%d/children" % (self.p.pid, self.p.pid)
        pids = [int(x) for x in open(kids).read().split()] if os.path.exists(kids) else []
        for pid in pids or [self.p.pid]:
            os.kill(pid, signal.SIGTERM)
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            fail("perfgroup metrics did not end on SIGTERM")
        # 0 after SIGTERM; a sanitizer's report makes it non-zero (LeakSanitizer cannot run
        # under strace: not looked at there)
        if self.p.returncode != 0 and not self.traced:
            fail("perfgroup metrics ended with %d" % self.p.returncode)


RETRIES = 2  # a scrape over the bound is measured again, paired, this many times


def timed_rounds(side, quiet, what, rounds=9):
    """Scrapes of side (the hostile clients at it) interleaved with scrapes of quiet (a
    second sidecar over the same files, nobody else at it): the scrape's own cost under this
    run's load. Each scrape of side must take at most the slowest of quiet's + DELAY_S.
    A scrape over it is taken again (a pair: quiet's, then side's) up to RETRIES times and
    fails only if every one is over: a sidecar that waits on a hostile client waits on it
    at each scrape (the clients stay), while one preemption of the test or the sidecar on a
    loaded machine (seen: 356 ms against 193 under ASan with a spinner per core, load 15)
    happens once."""
    mine, ref = [], []

    def pair():
        dt, status, _, body = quiet.scrape()
        ref.append(dt)
        dt, status, _, body = side.scrape()
        if not status.endswith("200 OK") or b"perfgroup_group_cpu_seconds_total" not in body:
            fail("scrape %s: %s, %d bytes" % (what, status, len(body)))
        return dt

    for _ in range(rounds):
        mine.append(pair())
    over = []
    for i, dt in enumerate(mine):
        tries = [dt]
        while tries[-1] > max(ref) + DELAY_S and len(tries) <= RETRIES:
            tries.append(pair())
        mine[i] = tries[-1]
        if tries[-1] > max(ref) + DELAY_S:
            over.append(tries)
        elif len(tries) > 1:
            print("scrape %s: %s ms, then %.1f ms" % (
                what, ", ".join("%.1f" % (1e3 * x) for x in tries[:-1]), 1e3 * tries[-1]))
    bound = max(ref) + DELAY_S
    print("scrapes %s: median %.1f ms, max %.1f ms; undisturbed, interleaved: median %.1f "
          "ms, max %.1f ms; bound %.1f ms" % (what, 1e3 * statistics.median(mine),
                                              1e3 * max(mine), 1e3 * statistics.median(ref),
                                              1e3 * max(ref), 1e3 * bound))
    if over:
        fail("%d scrape(s) %s over %.1f ms, each %d times in a row: %s" % (
            len(over), what, 1e3 * bound, RETRIES + 1,
            "; ".join(", ".join("%.1f" % (1e3 * x) for x in t) for t in over)))


def slow():
    d = workdir("hostile_slow")
    rec = os.path.join(d, "rec")
    os.makedirs(rec)
    prog = record_names(rec, 60, wait=False)
    side = quiet = None
    held = []
    try:
        time.sleep(0.5)  # the recording is there
        side = Sidecar([rec])
        quiet = Sidecar([rec])
        if side.port is None or quiet.port is None:
            return
        for _ in range(3):
            side.scrape()  # warm: the files read once
            quiet.scrape()
        timed_rounds(side, quiet, "with no hostile client")
        # the hostile clients: idle connections, a byte every 0.5 s, an answer never read
        t_idle = time.monotonic()
        for _ in range(10):
            held.append(side.connect())
        loris = side.connect()
        stop = threading.Event()
        loris_answer = []

        def dribble():
            req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
            try:
                for ch in req:
                    if stop.is_set():
                        return
                    loris.send(bytes([ch]))
                    if stop.wait(0.5):
                        return
            except OSError:
                pass

        def loris_read():
            try:
                data = loris.recv(4096)
                loris_answer.append((time.monotonic(), data))
            except OSError as e:
                loris_answer.append((time.monotonic(), str(e).encode()))

        t_loris = time.monotonic()
        th = threading.Thread(target=dribble, daemon=True)
        th.start()
        tr = threading.Thread(target=loris_read, daemon=True)
        tr.start()
        deaf = side.connect()
        deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        deaf.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")  # never reads the answer
        held.append(deaf)
        timed_rounds(side, quiet, "with 10 idle, 1 slow (a byte / 0.5 s) and 1 deaf client")
        # the slow client: closed at the request deadline, with a 408, though it still sends
        tr.join(REQUEST_S + 5)
        stop.set()
        if not loris_answer:
            fail("the slow client was not answered %.1f s after it connected" % (REQUEST_S + 5))
        else:
            t, data = loris_answer[0]
            waited = t - t_loris
            print("slow client: %r after %.2f s" % (data[:40], waited))
            if not data.startswith(b"HTTP/1.0 408"):
                fail("the slow client got %r, not 408" % data[:60])
            if not REQUEST_S - 0.05 <= waited <= REQUEST_S + 2:
                fail("the slow client was closed after %.2f s (deadline %.1f s)" % (
                    waited, REQUEST_S))
        # the idle connections were closed too (408, or closed for the ones past the cap)
        closed = 0
        for s in held[:10]:
            s.settimeout(max(0.1, t_idle + REQUEST_S + 2 - time.monotonic()))
            try:
                s.recv(4096)
                closed += 1
            except (socket.timeout, OSError):
                pass
        if closed != 10:
            fail("only %d of 10 idle connections closed by the server" % closed)
        # more connections than the cap, idle: the oldest are closed for the new ones
        for _ in range(MAX_CONNS + 8):
            held.append(side.connect())
        timed_rounds(side, quiet, "with %d idle connections (cap %d)" % (MAX_CONNS + 8,
                                                                         MAX_CONNS))
    finally:
        for s in held:
            s.close()
        for sc in (side, quiet):
            if sc:
                sc.stop()
        prog.kill()
        prog.wait()


def http():
    d = workdir("hostile_http")
    record_names(d, 0.2)
    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
        v6 = True
    except OSError as e:
        v6 = False
        print("no IPv6 loopback here (%s): the IPv6 listen address is not checked" % e)
    side = Sidecar([d], listen="[::1]:0" if v6 else "127.0.0.1:0")
    try:
        if side.port is None:
            return
        if v6 and side.host != "::1":
            fail("IPv6 listen: serves on %s" % side.host)
        _, status, hdrs, body = side.scrape()
        if not status.endswith("200 OK") or not body.startswith(b"# HELP"):
            fail("GET /metrics: %s, %r" % (status, body[:40]))
        else:
            print("GET /metrics over %s: %d bytes" % ("IPv6" if v6 else "IPv4", len(body)))
        _, hstatus, hhdrs, hbody = side.request(b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        if not hstatus.endswith("200 OK") or hbody:
            fail("HEAD /metrics: %s with %d body bytes" % (hstatus, len(hbody)))
        if hhdrs.get("content-type") != hdrs.get("content-type") or \
                int(hhdrs.get("content-length", -1)) != len(body):
            fail("HEAD's headers are not the GET's: %s vs %s (GET body %d bytes)" % (
                hhdrs, hdrs, len(body)))
        for raw, want, what in (
                (b"POST /metrics HTTP/1.1\r\nContent-Length: 5000\r\n\r\n" + b"x" * 5000,
                 "405", "POST with a body"),
                (b"PUT /metrics HTTP/1.1\r\n\r\n", "405", "PUT"),
                (b"GET /metricsx HTTP/1.1\r\n\r\n", "404", "GET /metricsx"),
                (b"GET / HTTP/1.1\r\n\r\n", "404", "GET /"),
                (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", "400", "TLS hello"),
                (b"GET /metrics\r\n\r\n", "400", "HTTP/0.9")):
            _, status, hd, _ = side.request(raw)
            ok = status.split(" ")[1:2] == [want]
            if want == "405" and hd.get("allow") != "GET, HEAD":
                ok = False
            print("%s: %s%s" % (what, status, " (Allow: %s)" % hd["allow"] if "allow" in hd
                                else ""))
            if not ok:
                fail("%s: %s %s, want %s" % (what, status, hd, want))
        _, status, _, _ = side.scrape()
        if not status.endswith("200 OK"):
            fail("GET after the bad requests: " + status)
    finally:
        side.stop()
    for bad in ("::1:9477", "[::1]9477", "localhost:9477", "[::1]:99999"):
        p = subprocess.run([PERFGROUP, "metrics", "--listen", bad, d], capture_output=True,
                           text=True, timeout=20)
        if p.returncode != 1 or "--listen" not in p.stderr:  # a usage error
            fail("--listen %s: exit %d: %s" % (bad, p.returncode, p.stderr))


HOSTILE_ARGV0 = b"prog\xe9\x1b[31m\x1b]0;owned\x07\nX"
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def names():
    if not shutil.which("promtool"):
        skip("promtool is not installed (Debian package prometheus; scripts/deps.sh installs it)")
    d = workdir("hostile_names")
    rec = os.path.join(d, "rec")
    os.makedirs(rec)
    record_names(rec, 0.3, argv0=HOSTILE_ARGV0)
    p = subprocess.run([PERFGROUP, "metrics", rec], capture_output=True, timeout=60)
    try:
        page = p.stdout.decode("utf-8")
    except UnicodeDecodeError as e:
        fail("the page is not UTF-8: %s" % e)
        page = p.stdout.decode(errors="replace")
    if p.returncode:
        fail("perfgroup metrics: exit %d %s" % (p.returncode, p.stderr))
    t = subprocess.run(["promtool", "check", "metrics"], input=p.stdout, capture_output=True)
    if t.returncode or t.stdout.strip() or t.stderr.strip():
        fail("promtool check metrics: exit %d\n%s%s" % (t.returncode, t.stdout.decode(),
                                                        t.stderr.decode()))
    else:
        print("promtool check metrics: clean on a page of hostile names")
    # lines end in \n only: a carriage return in a label value is valid (not escaped)
    cpu = [l for l in page.split("\n") if l.startswith("perfgroup_group_cpu_seconds_total{")]
    for l in cpu:
        print("  " + repr(l))
    if not any('group="sp\ufffdll"' in l for l in cpu):
        fail("no series of the Latin-1 group as sp\\ufffdll")
    if len([l for l in cpu if 'group="twin\ufffd"' in l]) != 1:
        fail("the twin groups (twin\\xe9, twin\\xea) are not one series")
    if not any('program="prog\ufffd' in l and 'thread="th\ufffd' in l for l in cpu):
        fail("program and thread names not made valid")
    # top, to a pipe: UTF-8, and no control character but the newlines of its lines
    p = subprocess.run([PERFGROUP, "top", "-d", "0.2", "-n", "1", rec], capture_output=True,
                       timeout=60)
    if p.returncode:
        fail("perfgroup top: exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")))
    try:
        out = p.stdout.decode("utf-8")
    except UnicodeDecodeError as e:
        fail("top's output is not UTF-8: %s" % e)
        out = p.stdout.decode(errors="replace")
    if CONTROL.search(out):
        fail("a control character in top's output: %r" % CONTROL.search(out).group(0))
    rows = [l for l in out.splitlines() if re.match(r"^  (sp|esc|two|twin)", l)]
    print("top to a pipe:\n" + "\n".join(rows))
    if len(rows) != 5:
        fail("5 group rows expected, one line each:\n" + out)
    if not shutil.which("tmux"):
        print("tmux is not installed: top in a terminal not checked")
        return
    # top in a terminal, while the program runs: the screen is not cleared, recoloured or
    # retitled by the names; every row on its line
    live = record_names(rec, 30, argv0=HOSTILE_ARGV0, wait=False)
    sock = "pg-hostile-%d" % os.getpid()
    tm = lambda *a: subprocess.run(["tmux", "-L", sock] + list(a), capture_output=True)
    try:
        time.sleep(0.5)
        # (no LeakSanitizer in an ASan build's top here: once, on a fresh system under load,
        # the top of this pane was left in LSan's exit-time check — its tracer, a clone of it,
        # idle; top spinning at 92 % of a CPU for the rest of the run, deaf to SIGTERM —
        # probably the pane's hang-up (SIGHUP, then SIGCONT) racing the tracer's attach; not
        # reproduced in 12 runs since; top's leaks are checked by the other tests that run it)
        r = tm("new-session", "-d", "-s", "top", "-x", "120", "-y", "40",
               "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" %s top -d 0.5 %s; "
               "sleep 60" % (PERFGROUP, rec))
        if r.returncode:
            fail("tmux: %s" % r.stderr)
            return
        time.sleep(2.5)
        pane = tm("display-message", "-p", "-t", "top", "#{pane_pid}").stdout.decode().strip()
        kids = "/proc/%s/task/%s/children" % (pane, pane)
        tops = [int(x) for x in open(kids).read().split()] if os.path.exists(kids) else []
        scr = tm("capture-pane", "-p", "-e", "-t", "top").stdout.decode(errors="replace")
        title = tm("display-message", "-p", "-t", "top", "#{pane_title}").stdout.decode().strip()
        plain = tm("capture-pane", "-p", "-t", "top").stdout.decode(errors="replace")
        print("top in tmux (pid %s):\n" % tops + plain.rstrip())
        if "owned" in title:
            fail("a name set the terminal's title: %r" % title)
        if "\x1b[31m" in scr:
            fail("a name's escape sequence (red) reached the terminal")
        if "perfgroup top" not in plain:
            fail("top's header is gone (a name cleared the screen?)")
        rows = [l for l in plain.splitlines() if re.match(r"^  (sp|esc|two|twin)", l)]
        if len(rows) != 10:  # two processes: the one recorded before, and the running one
            fail("10 group rows expected in the terminal (5 per process), one line each")
        tm("send-keys", "-t", "top", "q")
    finally:
        tm("kill-server")
        live.kill()
        live.wait()
    # top is gone with its terminal (it ended on q, or on the hang-up): none left running
    t0 = time.monotonic()
    left = tops
    while left and time.monotonic() - t0 < 5:
        time.sleep(0.1)
        left = [pid for pid in left if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
        fail("top (pid %d) still running 5 s after its tmux pane was gone" % pid)


def alive(pid):
    """pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def sparse_copy(src, dst, uid=None):
    """src's header, claiming 2^22 chunks of 4 KiB (16 GiB), pid 1, state RECORDING; the file
    is 16 GiB long and holds one 4 KiB page (sparse)."""
    with open(src, "rb") as f:
        h = bytearray(f.read(4096))
    struct.pack_into("<II", h, 16, 4096, 1 << 22)
    struct.pack_into("<I", h, 32, 1)
    struct.pack_into("<I", h, 48, 1)
    with open(dst, "wb") as f:
        f.write(h)
        f.truncate(4096 + (1 << 22) * 4096)
    if uid is not None:
        os.chown(dst, uid, -1)


def copy_holes(src, dst):
    """src to dst, its holes left holes (a recording is its buffer's size, mostly never
    written: shutil.copy would write every byte of it, 272 MB a copy). Raw descriptors,
    pread/pwrite at the data's offsets (a buffered file would read ahead of an lseek)."""
    fd = os.open(src, os.O_RDONLY)
    try:
        gd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            size = os.fstat(fd).st_size
            pos = 0
            while pos < size:
                try:
                    pos = os.lseek(fd, pos, os.SEEK_DATA)
                except OSError:  # ENXIO: no data after pos
                    break
                end = os.lseek(fd, pos, os.SEEK_HOLE)
                while pos < end:
                    block = os.pread(fd, min(end - pos, 1 << 20), pos)
                    if not block:
                        break
                    os.pwrite(gd, block, pos)
                    pos += len(block)
            os.ftruncate(gd, size)
        finally:
            os.close(gd)
    finally:
        os.close(fd)
    shutil.copymode(src, dst)


def opened_names(trace, d):
    """Names in d the traced process opened (strace -e trace=open,openat)."""
    got = set()
    for line in open(trace, errors="replace"):
        m = re.search(r'open(?:at)?\((?:[^,]*, )?"([^"]*)"', line)
        if m and "= -1" not in line:
            got.add(os.path.basename(m.group(1)))
    return got


def dir_():
    if os.geteuid() != 0:
        skip("the directory test makes files of other users and a device node: run as root "
             "(the CI does)")
    d = workdir("hostile_dir")
    rec = os.path.join(d, "rec")
    elsewhere = os.path.join(d, "private")
    os.makedirs(rec)
    os.makedirs(elsewhere)
    os.chmod(d, 0o755)
    record_names(elsewhere, 0.2)
    private = os.path.join(elsewhere, os.listdir(elsewhere)[0])
    os.chmod(private, 0o600)
    record_names(rec, 0.2)
    mine = os.listdir(rec)[0]
    os.symlink(private, os.path.join(rec, "link.pgm"))
    os.mkfifo(os.path.join(rec, "fifo.pgm"))
    try:
        os.mknod(os.path.join(rec, "zero.pgm"), 0o644 | 0o020000, os.makedev(1, 5))
        have_dev = True
    except OSError as e:
        have_dev = False
        print("no device node made (%s): that part is not checked" % e)
    nobody = 65534
    # a recording owned by nobody naming pid 1 (root's) as its writer: refused as root
    sparse_copy(os.path.join(rec, mine), os.path.join(rec, "claims-pid1.pgm"), uid=nobody)
    # a FIFO a writer waits on: it stays blocked unless the sidecar opens the FIFO
    fifo_opened = []
    threading.Thread(target=lambda: fifo_opened.append(open(os.path.join(rec, "fifo.pgm"),
                                                            "wb")), daemon=True).start()
    strace = shutil.which("strace")
    trace = os.path.join(d, "strace.log")
    prefix = [strace, "-f", "-qq", "-e", "trace=open,openat", "-o", trace] if strace else []
    if not strace:
        print("strace is not installed: what was opened is not checked")
    side = Sidecar([rec], prefix=prefix)
    try:
        if side.port is None:
            return
        base = [side.scrape() for _ in range(5)]
        # the sparse file, root's: read (the owner rule lets root's files in), in the time of
        # the 4 KiB it holds, not of the 16 GiB its header claims
        sparse_copy(os.path.join(rec, mine), os.path.join(rec, "sparse.pgm"))
        with_sparse = [side.scrape() for _ in range(5)]
        b = statistics.median(x[0] for x in base)
        w = statistics.median(x[0] for x in with_sparse)
        print("scrape: median %.1f ms; with the sparse file (2^22 chunks claimed) %.1f ms" % (
            1e3 * b, 1e3 * w))
        if w > b + DELAY_S:
            fail("the sparse file makes a scrape %.1f ms longer (bound %.0f ms)" % (
                1e3 * (w - b), 1e3 * DELAY_S))
        page = with_sparse[-1][3].decode(errors="replace")
        pids = set(re.findall(r'perfgroup_process_running\{[^}]*pid="(\d+)"', page))
        want = {mine.split(".")[0], "1"}
        if pids != want:
            fail("exported pids %s, want %s (the recording and the sparse file)" % (pids, want))
        priv_pid = os.path.basename(private).split(".")[0]
        if 'pid="%s"' % priv_pid in page:
            fail("the symlinked 0600 recording elsewhere is exported")
        if fifo_opened:
            fail("the FIFO was opened")
        time.sleep(0.3)
    finally:
        side.stop()
        if not fifo_opened:  # let the writer go
            os.close(os.open(os.path.join(rec, "fifo.pgm"), os.O_RDONLY | os.O_NONBLOCK))
    told = [l for l in side.lines if "skipped" in l]
    print("told:\n  " + "\n  ".join(told))
    for name, why in (("link.pgm", "symbolic link"), ("fifo.pgm", "FIFO"),
                      ("claims-pid1.pgm", "runs as another user")) + (
                          (("zero.pgm", "device node"),) if have_dev else ()):
        n = len([l for l in told if "/%s: " % name in l and why in l])
        if n != 1:
            fail("%s: told %d times that it is a %s (want once)" % (name, n, why))
    if strace:
        opened = opened_names(trace, rec)
        bad = opened & {"link.pgm", "fifo.pgm", "zero.pgm"}
        if bad:
            fail("opened: %s" % sorted(bad))
        if mine not in opened or "sparse.pgm" not in opened:
            fail("the recordings were not opened? %s" % sorted(opened))
        print("opened in the directory (strace): %s" % sorted(opened))
    unprivileged(d, rec, mine)


def unprivileged(d, rec, mine):
    """As nobody: only nobody's files; permission denied named, and looked at again."""
    if not shutil.which("setpriv"):
        print("setpriv is not installed: the unprivileged sidecar is not checked")
        return
    # nobody's files and a copy of the tool (a static program) where nobody can reach them: the
    # build tree may lie under a directory only root may enter (a clone in /root, mode 0700)
    top = tempfile.mkdtemp(prefix="pg-nobody.")
    try:
        unprivileged_in(top, d, rec, mine)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def unprivileged_in(top, d, rec, mine):
    os.chmod(top, 0o755)
    tool = os.path.join(top, "perfgroup")
    shutil.copy(shutil.which(PERFGROUP) or PERFGROUP, tool)
    os.chmod(tool, 0o755)
    own = os.path.join(top, "own")
    os.makedirs(own)
    os.chmod(own, 0o755)
    copy_holes(os.path.join(rec, mine), os.path.join(own, "readable.pgm"))
    copy_holes(os.path.join(rec, mine), os.path.join(own, "root.pgm"))
    os.chmod(os.path.join(own, "root.pgm"), 0o644)
    other = os.path.join(d, "other")  # another recording (another pid) to be locked.pgm
    os.makedirs(other)
    record_names(other, 0.2)
    copy_holes(os.path.join(other, os.listdir(other)[0]), os.path.join(own, "locked.pgm"))
    os.chown(os.path.join(own, "readable.pgm"), 65534, -1)
    os.chown(os.path.join(own, "locked.pgm"), 65534, -1)
    os.chmod(os.path.join(own, "locked.pgm"), 0)
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    p = subprocess.run(as_nobody + [tool, "metrics", os.path.join(own, "locked.pgm")],
                       capture_output=True, text=True, timeout=30)
    print("an unreadable FILE: exit %d: %s" % (p.returncode, p.stderr.strip()))
    if p.returncode != 1 or "Permission denied" not in p.stderr:
        fail("an unreadable file is not reported as permission denied")
    side = Sidecar([own], prefix=as_nobody, binary=tool)
    try:
        if side.port is None:
            return
        first = [side.scrape()[3].decode(errors="replace") for _ in range(3)][-1]
        n_first = first.count("perfgroup_process_running{")
        os.chmod(os.path.join(own, "locked.pgm"), 0o600)
        second = side.scrape()[3].decode(errors="replace")
        n_second = second.count("perfgroup_process_running{")
        print("as nobody: %d process(es) exported, %d once locked.pgm is readable" % (
            n_first, n_second))
        if n_first != 1:
            fail("as nobody, %d processes exported (want nobody's readable file only)" % n_first)
        if n_second != 2:
            fail("locked.pgm not read once readable (%d processes exported)" % n_second)
        time.sleep(0.2)
    finally:
        side.stop()
    told = [l for l in side.lines if "skipped" in l]
    print("told:\n  " + "\n  ".join(told))
    if len([l for l in told if "/root.pgm: owned by another user" in l]) != 1:
        fail("root's file not told once as another user's")
    if len([l for l in told if "/locked.pgm: permission denied" in l]) != 1:
        fail("the unreadable file not told once as permission denied")
    if any("locked.pgm" in l and "permission denied" not in l for l in told):
        fail("locked.pgm told otherwise than permission denied")


def truncator(path, full, stop, counts):
    """Cuts the file short and gives it back its size, over and over: mostly inside the totals
    region or the chunks (the header kept, so the readers get that far), at times anywhere."""
    import random
    rnd = random.Random(32)
    tot_off = struct.unpack_from("<Q", open(path, "rb").read(472), 440)[0]
    while not stop.is_set():
        r = rnd.random()
        size = (rnd.randrange(tot_off, full) if r < 0.6 else
                rnd.randrange(4096, tot_off) if r < 0.9 else rnd.randrange(0, full))
        try:
            os.truncate(path, size)
            time.sleep(rnd.random() * 0.001)
            os.truncate(path, full)
        except OSError:
            pass
        counts[0] += 1
        time.sleep(rnd.random() * 0.004)


def read_hostile(pgm, d, k):
    """One reading of pgm by one tool in turn (k): never a signal, an answer within 30 s."""
    tools = [
        ("convert --summary --json", [CONVERT, pgm, "--summary", "--json", "--no-progress"]),
        ("convert (Gecko)", [CONVERT, pgm, "-o", os.path.join(d, "g.json"), "--no-progress"]),
        ("metrics", [PERFGROUP, "metrics", pgm]),
        ("top", [PERFGROUP, "top", "-n", "2", "-d", "0.1", pgm]),
    ]
    what, argv = tools[k % len(tools)]
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        fail("%s of a file truncated under it: no answer within 30 s" % what)
        return what, None
    err = p.stderr.decode(errors="replace").strip()
    if p.returncode < 0:
        fail("%s of a file truncated under it: killed by signal %d (%s)"
             % (what, -p.returncode, signal.Signals(-p.returncode).name))
    elif what.startswith("convert") and p.returncode == 2:
        if len(err.splitlines()) != 1 or not err.startswith("perfgroup-convert: "):
            fail("%s: exit 2 without one clear line: %r" % (what, err[:300]))
    elif what.startswith("convert") and p.returncode == 0:
        if what.endswith("--json"):
            try:
                import json
                json.loads(p.stdout)
            except ValueError as e:
                fail("%s: exit 0 with invalid JSON (%s)" % (what, e))
    elif p.returncode not in (0, 1, 2):
        fail("%s of a file truncated under it: exit %d: %r" % (what, p.returncode, err[:300]))
    return what, (p.returncode, time.monotonic() - t0)


def truncate():
    d = workdir("hostile_truncate")
    # 1: the runtime writing it (it may itself take SIGBUS: its mapping shrinks under it too)
    # 2: its writer killed (the file stays RECORDING: read as live), the header counting
    #    every slot in use, so each reading reads the whole 3 MiB region
    seen = {}
    for phase in (1, 2):
        w = record_names(d, 6, wait=False)
        pgm = os.path.join(d, "%d.pgm" % w.pid)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 10:
            if os.path.exists(pgm) and os.path.getsize(pgm) >= 472:
                h = open(pgm, "rb").read(472)
                if struct.unpack_from("<I", h, 456)[0] > 0:  # totals_used
                    break
            time.sleep(0.01)
        else:
            fail("the names program left no recording with totals (%s)" % pgm)
            w.kill(), w.wait()
            return
        full = os.path.getsize(pgm)
        if phase == 2:
            w.kill(), w.wait()
            count = struct.unpack_from("<I", open(pgm, "rb").read(472), 452)[0]
            with open(pgm, "r+b") as f:
                f.seek(456)
                f.write(struct.pack("<I", count))
        side = Sidecar([pgm])
        stop, counts = threading.Event(), [0]
        t = threading.Thread(target=truncator, args=(pgm, full, stop, counts), daemon=True)
        t.start()
        scrapes, k, t_end = 0, 0, time.monotonic() + 5
        while k < 24 or time.monotonic() < t_end:
            what, res = read_hostile(pgm, d, k)
            k += 1
            if res:
                seen.setdefault(what, []).append(res)
            if side.port:
                try:
                    _, status, _, _ = side.scrape()
                    scrapes += 1
                    if " 200 " not in status + " ":
                        fail("the sidecar answered %r" % status)
                except OSError as e:
                    fail("the sidecar did not answer: %s" % e)
                    side.port = None  # told once
        stop.set()
        t.join()
        if side.p.poll() is not None:
            fail("the sidecar ended (%d) while the file was truncated" % side.p.returncode)
        else:
            side.stop()
        if w.poll() is None:
            w.kill()
        w.wait()
        print("phase %d: %d truncations, %d scrapes, the writer ended with %s"
              % (phase, counts[0], scrapes, w.returncode))
        if counts[0] < 100:
            fail("phase %d: only %d truncations while it was read" % (phase, counts[0]))
    for what, res in sorted(seen.items()):
        exits = {}
        for r, _ in res:
            exits[r] = exits.get(r, 0) + 1
        print("%-26s %d readings, exits %s, slowest %.2f s" % (what, len(res), exits,
                                                              max(s for _, s in res)))
        if not exits.get(0):
            fail("%s never read the file whole between the cuts: the race was not run" % what)


def proc_cpu_s(pid):
    """utime + stime of pid, s (its /proc/<pid>/stat); None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hangup():
    """`perfgroup top` on a terminal that hangs up under it, with no SIGHUP to it (its stdin
    and stdout a pty it does not have as controlling terminal: not a session's leader, as in
    a shell's pipeline or a multiplexer's pane that runs `top; sleep`): it exits within
    seconds, instead of polling a hung-up terminal in a busy loop (2 such tops were left
    spinning at 50 % of a CPU each by live.hostile_names runs under load)."""
    d = workdir("hostile_hangup")
    rec = os.path.join(d, "rec")
    os.makedirs(rec, exist_ok=True)
    record_names(rec, 0.2)
    for round_ in range(3):
        master, slave = pty.openpty()
        p = subprocess.Popen([PERFGROUP, "top", "-d", "0.5", rec], stdin=slave, stdout=slave,
                             stderr=slave, start_new_session=True)
        os.close(slave)
        # its first screen, then the hang-up (the terminal's other side closed)
        t0 = time.monotonic()
        got = b""
        while b"perfgroup top" not in got and time.monotonic() - t0 < 10:
            try:
                got += os.read(master, 65536)
            except OSError:
                break
        if b"perfgroup top" not in got:
            p.kill()
            fail("top drew no screen in 10 s: %r" % got[-200:])
            return
        cpu0 = proc_cpu_s(p.pid)
        os.close(master)
        t_hup = time.monotonic()
        try:
            rc = p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            cpu1 = proc_cpu_s(p.pid)
            p.kill()
            p.wait()
            fail("round %d: top still running 5 s after its terminal hung up (CPU %.2f -> "
                 "%.2f s meanwhile)" % (round_, cpu0 or 0, cpu1 or 0))
            return
        print("round %d: top exited %d %.2f s after the hang-up" %
              (round_, rc, time.monotonic() - t_hup))


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 1
    if not NAMES:
        skip("LIVE_NAMES is not set (the names program, tests/live/names.c)")
    tests = {"slow": slow, "http": http, "names": names, "dir": dir_, "truncate": truncate,
             "hangup": hangup}
    if argv[1] not in tests:
        print("unknown test " + argv[1])
        return 1
    tests[argv[1]]()
    return verdict()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
