#!/usr/bin/env python3
"""Prints criterion results as ratios: every benchmark of a group divided by its baseline.

    python3 benches/ratios.py GROUP_PREFIX BASELINE_NAME   e.g.  ratios.py apply parse

Reads target/criterion/<group>/<bench>/<param>/new/estimates.json (median point estimates).
"""
import json, os, sys

root = os.environ.get("CRITERION_DIR", os.path.join(os.path.dirname(__file__), "..", "target", "criterion"))
prefix, base = sys.argv[1], sys.argv[2]
rows = {}
for g in sorted(os.listdir(root)):
    if not g.startswith(prefix.replace("/", "_")):
        continue
    for b in sorted(os.listdir(os.path.join(root, g))):
        bd = os.path.join(root, g, b)
        if not os.path.isdir(bd) or b == "report":
            continue
        for p in os.listdir(bd):
            f = os.path.join(bd, p, "new", "estimates.json")
            if os.path.exists(f):
                rows.setdefault((g, int(p) if p.isdigit() else p), {})[b] = json.load(open(f))["median"]["point_estimate"]
def fmt(ns):
    return f"{ns/1e6:.2f} ms" if ns >= 1e5 else f"{ns/1e3:.1f} µs"
for (g, n), r in sorted(rows.items()):
    if base not in r:
        continue
    parts = [f"{b} {fmt(t)} ({t / r[base]:.2f}x)" for b, t in sorted(r.items()) if b != base]
    print(f"{g} N={n}: {base} {fmt(r[base])} | " + " | ".join(parts))
