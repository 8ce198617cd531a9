#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""options_matrix.py — the corpus under one common option combination, with one plugin: every
program compiled, linked, run and its trace compared (run_corpus.py with --cflags), or, for the
combinations that produce no object (-E, -M), compiled without a compiler crash and with output.

    options_matrix.py --combo g3 --cc gcc --plugin='-fplugin=…' --runtime … --include … \\
                      --workdir DIR [--programs basic.c exception.cc …]

Combinations (the issue's list): g, g3, gdwarf-4, gdwarf-5, gsplit-dwarf, save-temps,
debug-prefix-map, fPIC, fPIE, Os, O3-unroll, flto, std (C: -std=gnu99 and -std=c2x; C++:
-std=c++20), E, M, MD. Clang under -save-temps also gets -fpass-plugin=<so> -D__PERFGROUP__=1,
as docs/plugins.md says. Exit 0 when every program passes (77 = skipped by run_corpus counts
as a pass), 1 otherwise with the failures listed.
"""
import argparse
import glob
import os
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_corpus  # noqa: E402  (compiler names)

COMBOS = {  # name -> (flags for C, flags for C++), each a list of cflags sets
    "g": [["-g"]],
    "g3": [["-g3"]],
    "gdwarf-4": [["-gdwarf-4"]],
    "gdwarf-5": [["-gdwarf-5"]],
    "gsplit-dwarf": [["-g", "-gsplit-dwarf"]],
    "save-temps": [["-save-temps"]],
    "debug-prefix-map": [["-g3", f"-fdebug-prefix-map={HERE}=/src"]],
    "fPIC": [["-fPIC"]],
    "fPIE": [["-fPIE", "-pie"]],
    "Os": [["-Os"]],
    "O3-unroll": [["-O3", "-funroll-loops"]],
    "flto": [["-flto"]],
    "std": None,  # per language, below
    "MD": [["-MD"]],
}
PREPROCESS = {"E": ["-E"], "M": ["-M"]}
# Left out, with the reason: failures of the compiler itself, without any plugin.
EXCLUDED = {
    ("clang", "flto", "target_clones"): "clang 14 -flto: ld.lld: undefined symbol sum.default.1 "
                                        "(the ifunc's versions), without any plugin too",
    ("clang", "flto", "target_versions"): "the same clang 14 -flto multiversioning bug",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--combo", required=True, choices=sorted(list(COMBOS) + list(PREPROCESS)))
    ap.add_argument("--cc", required=True)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--runtime", required=True)
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--programs", nargs="*", help="corpus programs (default: all)")
    a = ap.parse_args()
    progs = a.programs or sorted(glob.glob(os.path.join(HERE, "*.c")) +
                                 glob.glob(os.path.join(HERE, "*.cc")))
    progs = [p if os.path.isabs(p) else os.path.join(HERE, p) for p in progs]
    # The known-limit programs' traces depend on the optimisation level by design.
    progs = [p for p in progs if not os.path.basename(p).startswith("limit_")]
    os.makedirs(a.workdir, exist_ok=True)
    family = run_corpus.COMPILER_NAME.match(a.cc).group(1)
    plugin = a.plugin
    fails, ran = [], 0
    for prog in progs:
        name = os.path.splitext(os.path.basename(prog))[0]
        cxx = prog.endswith(".cc")
        why = EXCLUDED.get((family, a.combo, name))
        if why:
            print(f"left out: {name}: {why}")
            continue
        if a.combo in PREPROCESS:
            cc = run_corpus.compiler(a.cc, "c++" if cxx else "c")
            # the program's own flags too (coroutine.cc's -std=c++20: <coroutine> needs it)
            cmd = [cc, *shlex.split(plugin), *PREPROCESS[a.combo], "-I" + a.include[0],
                   *run_corpus.directives(prog)["cflags"], prog]
            if family == "clang":
                cmd.insert(1, "-D__PERFGROUP__=1")
            print("+ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0 or not r.stdout.strip():
                print(r.stderr)
                fails.append(f"{name}: {a.combo}: exit {r.returncode}")
            continue
        sets = COMBOS[a.combo]
        if sets is None:
            sets = [["-std=c++20"]] if cxx else [["-std=gnu99"], ["-std=c2x"]]
        for flags in sets:
            flags = list(flags)
            if family == "clang" and "-save-temps" in flags:
                so = shlex.split(plugin)[0].split("=", 1)[1]
                flags += [f"-fpass-plugin={so}", "-D__PERFGROUP__=1"]
            if family == "clang" and "-flto" in flags:
                # its LTO bitcode needs its own LLVM's lld (`lld` is Debian's default one)
                ver = run_corpus.COMPILER_NAME.match(a.cc).group(2)
                if ver and not shutil.which(f"ld.lld-{ver}"):
                    print(f"left out: {name} {' '.join(flags)}: no ld.lld-{ver} (Debian package "
                          f"lld-{ver}) to link clang {ver}'s LTO objects")
                    continue
                flags += ["-fuse-ld=lld" if not ver else f"-fuse-ld=lld-{ver}"]
            tag = "_".join(f.strip("-").replace("=", "-").replace("/", "_") for f in flags)[:60]
            cmd = [sys.executable, os.path.join(HERE, "run_corpus.py"), "--cc", a.cc,
                   f"--plugin={plugin}", "--opt=-O2",
                   "--runtime", a.runtime, *[f"--include={i}" for i in a.include],
                   "--cflags=" + " ".join(shlex.quote(f) for f in flags),
                   "--workdir", os.path.join(a.workdir, f"{name}.{tag}"), prog]
            ran += 1
            r = subprocess.run(cmd, capture_output=True, text=True,
                               cwd=os.path.join(a.workdir))
            if r.returncode not in (0, 77):
                print(r.stdout[-3000:])
                fails.append(f"{name}: {' '.join(flags)}")
            else:
                print(f"ok: {name} {' '.join(flags)}" + (" (skipped)" if r.returncode == 77 else ""))
    print(f"options_matrix: {a.cc} {a.combo}: {len(progs)} programs, {len(fails)} failed")
    if not fails and not ran and a.combo not in PREPROCESS:
        print("SKIPPED: every program left out")
        return 77
    for f in fails:
        print("FAIL: " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
