#!/usr/bin/env python3
"""No import circle between modules, in any crate of the workspace (`make lint` runs this).

Each crate's modules are read from its `src/` tree (`a/b.rs` or `a/b/mod.rs` is `crate::a::b`).
A module depends on another when its code names it (`crate::x::y`, `super::x`, `self::x`, in a
`use` or inline). Naming an ancestor (`super::Store`, a facade's own items) or a descendant (a
parent's `pub use child::…`) is how Rust nests modules and is not counted; a dependency on any
other module is, at the level of the two siblings under their nearest common ancestor (a
`store::verbs` naming `store::commit::Plan` makes `verbs` depend on `commit`). A circle of such
dependencies is reported with the references that make it, and the script exits 1.

Usage: import_cycles.py [CRATE_SRC_DIR ...]   (default: codec/src engine/src server/src src)
"""

import os
import re
import sys

REF = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\};", re.S)


def modules(src):
    """Module path (tuple) -> file, for a crate's src directory."""
    out = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)[:-3].split(os.sep)
            if rel[-1] == "mod" or (len(rel) == 1 and rel[0] in ("lib", "main")):
                rel = rel[:-1]
            if rel and rel[0] == "bin":
                continue
            out[tuple(rel)] = os.path.join(root, f)
    return out


def strip_comments_and_strings(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def references(text):
    """Every `crate::`/`super::`/`self::` path the code names, `use` groups expanded."""
    refs = []
    for m in USE_GROUP.finditer(text):
        prefix = m.group(1)
        for item in re.split(r"[,\s]+", m.group(2)):
            name = re.match(r"[A-Za-z_][A-Za-z0-9_]*", item)
            if name:
                refs.append(f"{prefix}::{name.group(0)}")
    refs.extend(m.group(1) for m in REF.finditer(text))
    return refs


def resolve(module, path, known):
    """The known module a path names (its longest prefix that is a module), or None."""
    parts = path.split("::")
    if parts[0] == "crate":
        base, rest = (), parts[1:]
    else:
        base = module
        while parts and parts[0] in ("self", "super"):
            if parts[0] == "super":
                base = base[:-1]
            parts = parts[1:]
        rest = parts
    target = None
    for i in range(len(rest) + 1):
        cand = base + tuple(rest[:i])
        if cand in known:
            target = cand
    return target


def check(src):
    known = modules(src)
    edges = {}
    for module, path in known.items():
        with open(path, encoding="utf-8") as f:
            text = strip_comments_and_strings(f.read())
        for ref in references(text):
            target = resolve(module, ref, known)
            if target is None or target == module:
                continue
            n = 0
            while n < min(len(module), len(target)) and module[n] == target[n]:
                n += 1
            if n == len(module) or n == len(target):
                continue  # an ancestor or a descendant
            a, b = module[: n + 1], target[: n + 1]
            edges.setdefault(a, {}).setdefault(b, set()).add(f"{'::'.join(module)} -> {ref}")
    return find_cycles(edges)


def find_cycles(edges):
    cycles, state, stack = [], {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, {})):
            if state.get(m) == 1:
                cycles.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(edges):
        if n not in state:
            visit(n)
    return [(c, [sorted(edges[c[i]][c[i + 1]])[0] for i in range(len(c) - 1)]) for c in cycles]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    dirs = sys.argv[1:] or [os.path.join(root, d) for d in ("codec/src", "engine/src", "server/src", "src")]
    failed = False
    for src in dirs:
        for cycle, why in check(src):
            failed = True
            names = " -> ".join("::".join(m) or "crate" for m in cycle)
            print(f"import circle in {os.path.relpath(src, root)}: {names}")
            for w in why:
                print(f"    {w}")
    if failed:
        sys.exit(1)
    print(f"import_cycles: no circle in {len(dirs)} crates")


if __name__ == "__main__":
    main()
