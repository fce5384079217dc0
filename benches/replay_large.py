#!/usr/bin/env python3
"""Large applies as whole processes: `fieldstore replay` against structured-merge-diff's
`smd-oracle replay` on one scenario of five SSA operations on an N-item associative list
(issue 36's "5-op 10k scenario"), with each process's wall time, CPU and peak RSS.

    python3 benches/replay_large.py --fieldstore target/release/fieldstore \
        [--fieldstore OTHER_BINARY ...] --oracle /tmp/smdo/smd-oracle [--n 10000] \
        [--shape list|listrand] [--rounds 3]

The oracle is built by `sh ../shared/oracle/smd/build.sh OUT` (copy the folder first). The
scenario mirrors `smd-oracle bench`'s list cells, in one document: (1) A applies N items,
(2) A applies them again (no change), (3) A applies them with one value changed, (4) B applies
one more item, (5) C updates the whole object with one item's image changed. Runs alternate
between the programs (several fieldstore binaries: before and after, side by side); every fieldstore answer is checked against the oracle's with the
oracle's `compare.py` before anything is timed. Peak RSS is the child's `ru_maxrss`.

Peak RSS counts the program's file pages too: the executable's code and read-only data, mapped
from the page cache and shared with every process running it. `fieldstore` maps ~20 MiB of them
in any run (`--help` included): RocksDB's C++ static constructors alone touch ~8 MiB before
`main`, the kernel mapping 64 KiB around each page touched (`benches/STORE_RESULTS.md`,
"Session 33"). A last, untimed run per program samples `/proc/PID/status` every millisecond and
splits the peak into `RssAnon` (the process's own memory: heap, stacks, relocated data) and
`RssFile` (those file pages).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# The schema of `smd-oracle bench` and `benches/support/shapes.rs` (the apply benches' list).
SCHEMA = """types:
- name: root
  map:
    fields:
    - name: spec
      type:
        namedType: spec
- name: spec
  map:
    fields:
    - name: items
      type:
        list:
          elementType:
            namedType: item
          elementRelationship: associative
          keys:
          - name
- name: item
  map:
    fields:
    - name: name
      type:
        scalar: string
    - name: image
      type:
        scalar: string
    - name: value
      type:
        scalar: string
    - name: port
      type:
        scalar: numeric
    - name: flag
      type:
        scalar: boolean
"""


def item_name(i, shuffled):
    return f"item-{(i * 2654435761) & 0xFFFFFFFF:08x}" if shuffled else f"item-{i:06d}"


def item(i, value, shuffled):
    return {"name": item_name(i, shuffled), "image": f"registry.example/img-{i}:v1", "value": value,
            "port": 8000 + i % 1000, "flag": i % 2 == 0}


def items(n, shuffled, changed=-1):
    return [item(i, "CHANGED" if i == changed else f"value-{i}", shuffled) for i in range(n)]


def scenario(n, shuffled):
    """The five operations as one oracle scenario document."""
    a = {"spec": {"items": items(n, shuffled)}}
    a_changed = {"spec": {"items": items(n, shuffled, changed=n // 2)}}
    b = {"spec": {"items": [item(n + 1, "from-B", shuffled)]}}
    # C writes back the whole live object (A's items, A's change, B's item) with one image changed.
    updated = items(n, shuffled, changed=n // 2) + [item(n + 1, "from-B", shuffled)]
    updated[n // 2]["image"] = "registry.example/controller-set:v2"
    ops = [
        {"op": "apply", "manager": "A", "apiVersion": "v1", "object": a},
        {"op": "apply", "manager": "A", "apiVersion": "v1", "object": a},
        {"op": "apply", "manager": "A", "apiVersion": "v1", "object": a_changed},
        {"op": "apply", "manager": "B", "apiVersion": "v1", "object": b},
        {"op": "update", "manager": "C", "apiVersion": "v1", "object": {"spec": {"items": updated}}},
    ]
    return {"schema": SCHEMA, "type": "root", "ops": ops}


def run(cmd, scenario_path, out_path):
    """Runs `cmd replay` on the scenario: (wall s, user+sys CPU s, peak RSS MiB)."""
    with open(scenario_path, "rb") as inp, open(out_path, "wb") as out:
        t0 = time.monotonic()
        proc = subprocess.Popen([cmd, "replay"], stdin=inp, stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd} replay exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def memory(cmd, scenario_path):
    """Runs `cmd replay` once, sampling its status every ms: (peak RssAnon, peak RssFile) MiB."""
    peak = {"RssAnon": 0, "RssFile": 0}
    with open(scenario_path, "rb") as inp:
        proc = subprocess.Popen([cmd, "replay"], stdin=inp, stdout=subprocess.DEVNULL)
        while proc.poll() is None:
            try:
                with open(f"/proc/{proc.pid}/status") as status:
                    for line in status:
                        key = line.split(":")[0]
                        if key in peak:
                            peak[key] = max(peak[key], int(line.split()[1]))
            except (OSError, ValueError):
                pass
            time.sleep(0.001)
    return peak["RssAnon"] / 1024, peak["RssFile"] / 1024


def median(xs):
    return sorted(xs)[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fieldstore", required=True, action="append",
                    help="a fieldstore binary; give several (before, after) to run them side by side")
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--compare", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       "..", "..", "shared", "oracle", "smd", "compare.py"))
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--shape", choices=["list", "listrand"], default="list")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="replay-large-") as tmp:
        path = os.path.join(tmp, "scenario.json")
        with open(path, "w") as f:
            json.dump(scenario(args.n, args.shape == "listrand"), f, separators=(",", ":"))
        size = os.path.getsize(path)
        want, got = os.path.join(tmp, "want.jsonl"), os.path.join(tmp, "got.jsonl")
        run(args.oracle, path, want)
        programs = [("smd", args.oracle, want)]
        for i, binary in enumerate(args.fieldstore):
            run(binary, path, got)
            if subprocess.run([sys.executable, args.compare, want, got]).returncode != 0:
                sys.exit(f"{binary}'s answers differ from the oracle's")
            name = "fieldstore" if len(args.fieldstore) == 1 else f"fieldstore {i + 1}"
            programs.append((name, binary, got))
        print(f"scenario: {args.shape}, {args.n} items, 5 operations, {size / 1e6:.2f} MB; answers agree")
        print("| round | program | wall s | CPU s | peak RSS MiB | peak RSS / scenario |")
        print("|---|---|---|---|---|---|")
        rows = {name: [] for name, _, _ in programs}
        for r in range(1, args.rounds + 1):
            for name, cmd, out in programs:
                wall, cpu, rss = run(cmd, path, out)
                rows[name].append((wall, cpu, rss))
                print(f"| {r} | {name} | {wall:.3f} | {cpu:.3f} | {rss:.1f} | {rss * 1048576 / size:.1f}× |")
        smd_wall, smd_cpu = median([w for w, _, _ in rows["smd"]]), median([c for _, c, _ in rows["smd"]])
        for name, binary, _ in programs[1:]:
            fs_wall, fs_cpu = median([w for w, _, _ in rows[name]]), median([c for _, c, _ in rows[name]])
            fs_rss = max(m for _, _, m in rows[name])
            print(f"{name} ({binary}): median wall smd {smd_wall:.3f} s, fieldstore {fs_wall:.3f} s: "
                  f"{smd_wall / fs_wall:.1f}× faster (CPU {smd_cpu / fs_cpu:.1f}×); "
                  f"peak RSS {fs_rss:.1f} MiB = {fs_rss * 1048576 / size:.1f}× the scenario")
        print("| program | peak RssAnon MiB | RssAnon / scenario | peak RssFile MiB |")
        print("|---|---|---|---|")
        for name, cmd, _ in programs:
            anon, file = memory(cmd, path)
            print(f"| {name} | {anon:.1f} | {anon * 1048576 / size:.1f}× | {file:.1f} |")


if __name__ == "__main__":
    main()
