#!/usr/bin/env python3
"""Where a large Server-Side Apply's memory goes (issue 36, "large applies"): the server's heap,
not its RSS, under valgrind's massif, with the holders named.

    cargo build --release -p fieldstore-server --features system-allocator
    cp target/release/fieldstore /tmp/fieldstore-system-alloc
    python3 benches/served/large_apply_heap.py /tmp/fieldstore-system-alloc [--items 10000]

The RSS of `large_apply_rss.py` says how much memory the process took from the system, which
mimalloc keeps once taken: after a large create, a re-apply reuses those pages and seems to grow
little, or grows more when the create's peak was lower. massif counts the bytes allocated and
not yet freed, at each moment, by call stack. It sees malloc only, hence the binary on the system
allocator (feature `system-allocator`; the same code otherwise).

The same steps as `large_apply_rss.py` (a custom resource whose `spec.items` is a map-list of
`--items` items, created by an apply of manager `a`, then applied again by `a` with one value
changed), 5 s apart. Reported: the live heap before the create, its peak during each apply and
what stays after it, and, at the end of the create and at the re-apply's peak, the largest
holders (the first frame of ours, or of RocksDB, above the allocation).
"""

import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/support"))
import large_apply_rss as rss  # noqa: E402
from processes import http_port  # noqa: E402

NODE = re.compile(r"^( *)n(\d+): (\d+) (.*)$")
OURS = ("fieldstore", "rocksdb::")
NOT_A_HOLDER = ("alloc::", "core::", "hashbrown", "serde_json::de", "serde::de", "serde_json::read", "std::")


def snapshots(path):
    """(time ms, heap bytes, index of the heap tree's first line or None) per snapshot, and the lines."""
    lines = open(path).read().split("\n")
    out = []
    for i, line in enumerate(lines):
        if line.startswith("snapshot="):
            t = int(lines[i + 2].split("=")[1])
            heap = int(lines[i + 3].split("=")[1])
            tree = i + 7 if lines[i + 6] == "heap_tree=detailed" or lines[i + 6] == "heap_tree=peak" else None
            out.append((t, heap, tree))
    return out, lines


def holders(lines, start):
    """Bytes by holder: the first frame of ours (or RocksDB's) above each allocation."""
    stack, agg = [], collections.Counter()
    for line in lines[start:]:
        m = NODE.match(line)
        if not m:
            break
        depth, kids, size, fn = len(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
        fn = re.sub(r"^0x[0-9A-F]+: ", "", fn).split(" (")[0]
        stack = stack[:depth] + [fn]
        if kids == 0:
            name = next((f for f in stack[1:] if any(o in f for o in OURS) and not f.startswith(NOT_A_HOLDER)), stack[-1])
            agg[name[:120]] += size
    return agg


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()
    data = tempfile.mkdtemp(prefix="large-apply-heap-")
    out = os.path.join(data, "massif.out")
    proc = subprocess.Popen(["valgrind", "--tool=massif", f"--massif-out-file={out}", "--time-unit=ms", "--detailed-freq=1",
                             "--max-snapshots=1000", "--threshold=0.3", args.binary, "--data", os.path.join(data, "store"),
                             "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = http_port(proc.stdout.readline())
    try:
        rss.request(port, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", rss.CRD)
        for _ in range(600):
            crd = rss.request(port, "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/lists.{rss.GROUP}")
            if any(c.get("type") == "Established" and c.get("status") == "True"
                   for c in (crd.get("status") or {}).get("conditions") or []):
                break
            time.sleep(0.1)
        path = f"/apis/{rss.GROUP}/v1/namespaces/default/lists/big"
        phases = []
        for name, body in (("create", rss.widget(args.items)), ("re-apply", rss.widget(args.items, changed=args.items // 2))):
            time.sleep(5)
            rss.request(port, "PATCH", f"{path}?fieldManager=a", body, "application/apply-patch+yaml")
            phases.append((name, len(json.dumps(body, separators=(",", ":")))))
        time.sleep(5)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    snaps, lines = snapshots(out)
    # massif's clock starts with the program, after valgrind's own start: the applies are found
    # as the bursts of snapshots between the 5 s pauses (the last burst is the shutdown).
    bursts = [[snaps[0]]]
    for s in snaps[1:]:
        if s[0] - bursts[-1][-1][0] > 2500:
            bursts.append([])
        bursts[-1].append(s)
    assert len(bursts) >= len(phases) + 2, f"{len(bursts)} bursts of allocations for {len(phases)} applies"
    applied = bursts[-1 - len(phases):-1]
    mib = lambda b: b / 2**20  # noqa: E731

    print("| apply | body MB | heap before MiB | peak MiB | after MiB | peak − before MiB | peak − before / body |")
    print("|---|---|---|---|---|---|---|")
    peaks = []
    for (name, size), burst, previous in zip(phases, applied, bursts[-2 - len(phases):-2]):
        before, after = previous[-1], burst[-1]
        peak = max(burst, key=lambda s: s[1])
        peaks.append((name, peak, after))
        print(f"| {name} | {size / 1e6:.2f} | {mib(before[1]):.1f} | {mib(peak[1]):.1f} | {mib(after[1]):.1f} | "
              f"{mib(peak[1] - before[1]):.1f} | {(peak[1] - before[1]) / size:.1f}× |")
    for name, peak, after in peaks:
        for what, snap in (("at the peak of the " + name, peak), ("after the " + name, after)):
            if snap[2] is None:
                continue
            print(f"\nholders {what} ({mib(snap[1]):.1f} MiB):")
            for holder, size in holders(lines, snap[2]).most_common(args.top):
                print(f"  {mib(size):6.2f} MiB  {holder}")
    shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
