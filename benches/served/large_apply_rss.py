#!/usr/bin/env python3
"""The server's memory around a large Server-Side Apply over HTTP (issue 36, "large applies"):
a custom resource with a 10,000-item associative list, created by an apply, then applied again
by the same manager with one item changed, then by a second manager with one more item.

    python3 benches/served/large_apply_rss.py BIN [BIN ...] [--items 10000] [--rounds 2]

Each binary gets a fresh `fieldstore serve` on a temporary data directory (rounds alternate the
binaries). The server's VmRSS is sampled every 5 ms; per apply it reports the RSS before it, the
peak during it and the RSS after, and the growth (peak − before) as a multiple of the body; then
the same growth of the server's own memory alone (`RssAnon`: heap, stacks), without the file
pages of its binary's code that the apply runs for the first time (`RssFile`, shared with every
process running the binary; `benches/STORE_RESULTS.md`, "Session 33").
Python 3.11 standard library only.
"""

import argparse
import http.client
import json
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tests/support"))
from processes import http_port, rss_mib, serve, stop  # noqa: E402

GROUP = "bench.example.com"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"lists.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "lists", "singular": "list", "kind": "List", "listKind": "ListList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {"type": "object", "properties": {"items": {
                     "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                     "items": {"type": "object", "required": ["name"], "properties": {
                         "name": {"type": "string"}, "image": {"type": "string"},
                         "value": {"type": "string"}, "port": {"type": "integer"}}}}}}}}}}]},
}


def start(binary, data):
    proc, line = serve(binary, data, who="large_apply_rss")
    return proc, http_port(line)


def request(port, method, path, body=None, content_type="application/json"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    data = json.dumps(body, separators=(",", ":")).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": content_type} if data else {})
    resp = conn.getresponse()
    text = resp.read()
    conn.close()
    if resp.status >= 300:
        raise SystemExit(f"{method} {path}: {resp.status} {text[:300]!r}")
    return json.loads(text)


def widget(n, changed=-1, extra=()):
    items = [{"name": f"item-{i:05d}", "image": f"registry.example/img-{i}:v1",
              "value": "CHANGED" if i == changed else f"value-{i}", "port": 8000 + i % 1000} for i in range(n)]
    items.extend(extra)
    return {"apiVersion": f"{GROUP}/v1", "kind": "List", "metadata": {"name": "big", "namespace": "default"},
            "spec": {"items": items}}


def measured(pid, action):
    """Runs `action` while sampling the RSS: (before, peak, after) MiB, and the growth of
    RssAnon (peak − before) MiB."""
    time.sleep(0.5)
    before, anon_before = rss_mib(pid), rss_mib(pid, "RssAnon")
    peak = [before, anon_before]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], rss_mib(pid))
            peak[1] = max(peak[1], rss_mib(pid, "RssAnon"))
            time.sleep(0.005)
    t = threading.Thread(target=sample)
    t.start()
    action()
    done.set()
    t.join()
    time.sleep(0.5)
    after = rss_mib(pid)
    return before, max(peak[0], after), after, max(peak[1], rss_mib(pid, "RssAnon")) - anon_before


def run(binary, n):
    data = tempfile.mkdtemp(prefix="large-apply-rss-")
    proc, port = start(binary, data)
    try:
        request(port, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
        for _ in range(200):
            crd = request(port, "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/lists.{GROUP}")
            if any(c.get("type") == "Established" and c.get("status") == "True"
                   for c in (crd.get("status") or {}).get("conditions") or []):
                break
            time.sleep(0.05)
        path = f"/apis/{GROUP}/v1/namespaces/default/lists/big"
        apply = "application/apply-patch+yaml"
        steps = [
            ("create (apply by a)", "a", widget(n)),
            ("re-apply by a, one value changed", "a", widget(n, changed=n // 2)),
            ("apply by b, one more item", "b", {**widget(0, extra=[{"name": "item-b", "value": "from-b"}])}),
        ]
        rows = []
        for name, manager, body in steps:
            size = len(json.dumps(body, separators=(",", ":")))
            before, peak, after, anon = measured(proc.pid, lambda: request(
                port, "PATCH", f"{path}?fieldManager={manager}", body, apply))
            rows.append((name, size, before, peak, after, anon))
        return rows
    finally:
        stop(proc)
        shutil.rmtree(data, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--items", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    print("| round | binary | apply | body MB | RSS before MiB | peak MiB | after MiB | growth MiB | growth / body "
          "| RssAnon growth MiB | / body |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in range(1, args.rounds + 1):
        for b in args.binaries:
            for name, size, before, peak, after, anon in run(b, args.items):
                growth = peak - before
                ratio = f"{growth * 1048576 / size:.1f}×" if size >= 65536 else "—"
                anon_ratio = f"{anon * 1048576 / size:.1f}×" if size >= 65536 else "—"
                print(f"| {r} | {b} | {name} | {size / 1e6:.2f} | {before:.1f} | {peak:.1f} | {after:.1f} | "
                      f"{growth:.1f} | {ratio} | {anon:.1f} | {anon_ratio} |", flush=True)


if __name__ == "__main__":
    main()
