#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""layering.py OBJECT... — the files of one part call each other without a cycle.

An edge A -> B when A's object leaves undefined (weak references included) a symbol B's
object defines; a strongly connected component of more than one file is a cycle, printed
with the symbols of its edges. Exit 0 when there is none, 1 when there is, 2 on bad use.
docs/architecture.md: "a file calls only the files that come before it and the layers below".
"""
import collections
import os
import subprocess
import sys


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] in ("U", "w"):
            undefined.add(f[1])
        elif len(f) == 3 and f[1] in ("w", "v"):
            undefined.add(f[2]) if f[0].strip("0") == "" else defined.add(f[2])
        elif len(f) == 3 and f[1] != "U":
            defined.add(f[2])
    return defined, undefined


def sccs(nodes, edges):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    # a target with a precompiled header lists it among its objects (GCC's .gch): not code
    objs = [a for a in sys.argv[1:] if a and not a.endswith(".gch")]
    if not objs:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    name = {o: os.path.basename(o).rsplit(".o", 1)[0].rsplit(".obj", 1)[0] for o in objs}
    table = {o: symbols(o) for o in objs}
    owner = {}
    for o, (d, _) in table.items():
        for s in d:
            owner.setdefault(s, o)
    edges, why = collections.defaultdict(set), collections.defaultdict(set)
    for o, (_, u) in table.items():
        for s in u:
            t = owner.get(s)
            if t and t != o:
                edges[o].add(t)
                why[(o, t)].add(s)
    cycles = sccs(objs, edges)
    for comp in cycles:
        print("cycle: " + ", ".join(name[o] for o in comp))
        for a in comp:
            for b in comp:
                if b in edges[a]:
                    print(f"  {name[a]} -> {name[b]}: {' '.join(sorted(why[(a, b)])[:6])}")
    if not cycles:
        print(f"{len(objs)} files, {sum(len(e) for e in edges.values())} calls between them, "
              "no cycle")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
