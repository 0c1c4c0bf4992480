#!/usr/bin/env python3
"""The house's rules that a reader can check without building anything (docs/architecture.md).

Each rule prints `ok   <rule>` or `FAIL <rule>: <what breaks it>`; the exit status is the number
of rules broken (0: the house is in order).

  1. no include circle among the project's own headers and sources (src/ and sidecar/);
  2. nothing loose at the top of sidecar/ but main.cpp and sidecar.mk;
  3. no sidecar folder holds more than about a third of the sidecar's lines (36%);
  4. no dynamic_cast in the sidecar (its parts talk through interfaces, never a concrete type);
  5. every header of src/core includes the header firewall (core/common/firewall.h) first;
  6. src/core never includes a PostgreSQL header, the sidecar never a server header;
  7. no two sources of the sidecar share a file name (one name, one concept).
"""
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def files_under(top, exts=(".h", ".cpp")):
    """Every file under ROOT/top with one of exts, as paths relative to ROOT."""
    out = []
    for d, _, names in os.walk(os.path.join(ROOT, top)):
        for n in names:
            if n.endswith(exts):
                out.append(os.path.relpath(os.path.join(d, n), ROOT))
    return sorted(out)


def resolve(inc, roots):
    """The project file an #include "inc" names, searched in roots (None: not ours)."""
    for r in roots:
        p = os.path.normpath(os.path.join(r, inc))
        if os.path.isfile(os.path.join(ROOT, p)):
            return p
    return None


def include_graph():
    """file -> the project files it includes (the include roots of the Makefile: src, sidecar)."""
    graph = {}
    for f in files_under("src") + files_under("sidecar"):
        text = open(os.path.join(ROOT, f), encoding="utf-8").read()
        roots = [os.path.dirname(f), "src"] + (["sidecar"] if f.startswith("sidecar/") else [])
        graph[f] = [p for p in (resolve(i, roots) for i in INCLUDE.findall(text)) if p]
    return graph


def header_cycles(graph):
    """Circles of headers including each other (a .cpp cannot be in one), as file lists."""
    cycles, state, stack = [], {}, []

    def visit(f):
        state[f] = 1
        stack.append(f)
        for g in graph.get(f, []):
            if state.get(g) == 1:
                cycles.append(stack[stack.index(g):] + [g])
            elif g not in state:
                visit(g)
        stack.pop()
        state[f] = 2

    for f in sorted(graph):
        if f not in state:
            visit(f)
    return cycles


def room_circles(graph):
    """Circles between the sidecar's rooms (folder A includes B and B includes A, or longer)."""
    edges = defaultdict(set)
    for f, incs in graph.items():
        if not f.startswith("sidecar/") or f.count("/") < 2:
            continue
        a = f.split("/")[1]
        for g in incs:
            if g.startswith("sidecar/") and g.count("/") >= 2:
                b = g.split("/")[1]
                if a != b:
                    edges[a].add(b)
    return header_cycles({k: sorted(v) for k, v in edges.items()})


def lines(path):
    """Line count of a file."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        return sum(1 for _ in fh)


def main():
    broken = 0

    def report(rule, problems):
        nonlocal broken
        if problems:
            broken += 1
            print(f"FAIL {rule}: " + "; ".join(problems))
        else:
            print(f"ok   {rule}")

    graph = include_graph()
    report("no include circle among files",
           [" -> ".join(c) for c in header_cycles(graph)])
    report("no include circle among the sidecar's rooms",
           [" -> ".join(c) for c in room_circles(graph)])

    top = sorted(n for n in os.listdir(os.path.join(ROOT, "sidecar"))
                 if os.path.isfile(os.path.join(ROOT, "sidecar", n)))
    report("nothing loose at the top of sidecar/ but main.cpp and sidecar.mk",
           [n for n in top if n not in ("main.cpp", "sidecar.mk")])

    per_room, total = defaultdict(int), 0
    for f in files_under("sidecar"):
        n = lines(f)
        total += n
        if f.count("/") >= 2:
            per_room[f.split("/")[1]] += n
    report("no sidecar folder holds more than about a third of its lines (36%)",
           [f"sidecar/{r}/ {n} of {total} lines ({100 * n // total}%)"
            for r, n in sorted(per_room.items()) if n > 0.36 * total])

    report("no dynamic_cast in the sidecar",
           [f for f in files_under("sidecar")
            if "dynamic_cast" in open(os.path.join(ROOT, f), encoding="utf-8").read()])

    missing = []
    for f in files_under("src/core", (".h",)):
        if f == "src/core/common/firewall.h":
            continue
        incs = INCLUDE.findall(open(os.path.join(ROOT, f), encoding="utf-8").read())
        if not incs or incs[0] != "core/common/firewall.h":
            missing.append(f)
    report("every src/core header includes the firewall first", missing)

    server = re.compile(r'^\s*#\s*include\s+[<"](postgres\.h|postgres_ext\.h|fmgr\.h|'
                        r'utils/|access/|catalog/|executor/|storage/|nodes/|miscadmin\.h)', re.M)
    report("src/core includes no PostgreSQL header, the sidecar no server header",
           [f for f in files_under("src/core") + files_under("sidecar")
            if server.search(open(os.path.join(ROOT, f), encoding="utf-8").read())])

    names = defaultdict(list)
    for f in files_under("sidecar"):
        names[os.path.basename(f)].append(f)
    report("no two sidecar files share a name",
           [", ".join(v) for v in names.values() if len(v) > 1])
    return broken


if __name__ == "__main__":
    sys.exit(main())
