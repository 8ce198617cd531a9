#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""runtime.setuid — an unprivileged user's PERFGROUP_* settings do not reach a setuid-root
program (issue 15): the attacks that worked with getenv, replayed against a setuid copy of
setuid_prog made at test time. Needs root (to make the copy and to switch to nobody):
skipped (77) otherwise.

Each attack runs the setuid-root copy as `nobody`: the root-owned files stay byte-for-byte,
no file appears. Controls show that each attack would be seen: the same settings reach the
same binary when the process is not AT_SECURE (run by root, or a non-setuid copy run by
nobody), and a recording is then made.
"""
import os, pwd, shutil, stat, subprocess, sys, tempfile

SKIP = 77


def main():
    prog = sys.argv[1]
    if os.geteuid() != 0:
        print("skipped: needs root to make a setuid-root copy and to run it as nobody")
        return SKIP
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        print("skipped: no user nobody")
        return SKIP
    setpriv = shutil.which("setpriv")
    if not setpriv:
        print("skipped: no setpriv (util-linux)")
        return SKIP
    top = tempfile.mkdtemp(prefix="pg-setuid-")
    try:
        return run(prog, top, nobody, setpriv)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def run(prog, top, nobody, setpriv):
    os.chmod(top, 0o755)
    bindir = os.path.join(top, "bin")
    etc = os.path.join(top, "etc")          # root's, 0755: nobody cannot write there
    scratch = os.path.join(top, "scratch")  # nobody's own, for the control
    for d in (bindir, etc, scratch):
        os.mkdir(d, 0o755)
    os.chown(scratch, nobody.pw_uid, nobody.pw_gid)
    suid = os.path.join(bindir, "suid")
    plain = os.path.join(bindir, "plain")
    shutil.copy(prog, suid)
    shutil.copy(prog, plain)
    os.chown(suid, 0, 0)
    os.chmod(suid, 0o4755)
    os.chmod(plain, 0o755)
    if not os.stat(suid).st_mode & stat.S_ISUID:
        print("skipped: the file system does not keep the setuid bit")
        return SKIP

    victim = os.path.join(etc, "victim")
    secret = os.path.join(etc, "secret")
    for path, mode, data in ((victim, 0o644, b"root's config\n"), (secret, 0o600, b"s3cret\n")):
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
    before = snapshot(etc)

    def as_nobody(binary, env):
        full = {"PATH": "/usr/bin:/bin"}
        full.update(env)
        return subprocess.run([setpriv, "--reuid", str(nobody.pw_uid), "--regid",
                               str(nobody.pw_gid), "--clear-groups", binary],
                              env=full, capture_output=True, text=True, timeout=60)

    attacks = [
        ("replace a root-owned file", {"PERFGROUP_OUTPUT": victim, "PERFGROUP_BUFFER": "64K", "PERFGROUP_CHUNK": "4K"}),
        ("allocate 4 GiB in root's directory",
         {"PERFGROUP_OUTPUT": os.path.join(etc, "big"), "PERFGROUP_BUFFER": "4G"}),
        ("truncate a root 0600 file", {"PERFGROUP_TEXT": secret}),
        ("create a file in root's directory", {"PERFGROUP_TEXT": os.path.join(etc, "new")}),
        ("trace mode into root's directory",
         {"PERFGROUP_OUTPUT": os.path.join(etc, "t%p"), "PERFGROUP_MODE": "trace"}),
    ]
    failures = 0
    for what, env in attacks:
        r = as_nobody(suid, env)
        after = snapshot(etc)
        ok = r.returncode == 0 and "recording none" in r.stdout and after == before
        print(f"{'ok  ' if ok else 'FAIL'} setuid: {what}: exit {r.returncode}, "
              f"{r.stdout.strip()!r}, {r.stderr.strip()[:200]!r}"
              + ("" if after == before else f", files now {sorted(after)}"))
        failures += not ok
        restore(etc, before)

    # Controls: the settings work where the process is not AT_SECURE, so the attacks above
    # were refused by the runtime, not by something else.
    out = os.path.join(scratch, "ctl.pgm")
    r = as_nobody(plain, {"PERFGROUP_OUTPUT": out, "PERFGROUP_BUFFER": "64K", "PERFGROUP_CHUNK": "4K"})
    ok = "recording open" in r.stdout and os.path.exists(out)
    print(f"{'ok  ' if ok else 'FAIL'} control: not setuid, run by nobody: {r.stdout.strip()!r}")
    failures += not ok
    out = os.path.join(etc, "root.pgm")
    r = subprocess.run([suid], env={"PERFGROUP_OUTPUT": out, "PERFGROUP_BUFFER": "64K", "PERFGROUP_CHUNK": "4K"},
                       capture_output=True, text=True, timeout=60)
    ok = "recording open" in r.stdout and os.path.exists(out)
    print(f"{'ok  ' if ok else 'FAIL'} control: setuid-root run by root (not AT_SECURE): "
          f"{r.stdout.strip()!r}")
    failures += not ok
    print(f"{len(attacks) + 2 - failures} passed, {failures} failed")
    return 1 if failures else 0


def snapshot(d):
    res = {}
    for name in os.listdir(d):
        p = os.path.join(d, name)
        st = os.lstat(p)
        with open(p, "rb") as f:
            res[name] = (st.st_mode, st.st_uid, st.st_size, f.read(4096))
    return res


def restore(d, before):
    for name in os.listdir(d):
        if name not in before:
            os.unlink(os.path.join(d, name))


if __name__ == "__main__":
    sys.exit(main())
