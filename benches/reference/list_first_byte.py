#!/usr/bin/env python3
"""Time to the first byte of an unpaged LIST of many 1 KiB ConfigMaps: kube-apiserver + etcd (the
reference, reference/) against `fieldstore serve`, the same data, the same client, the same TLS
(issue 36, streamed lists: "first byte in <= 10 ms", JSON and protobuf).

    python3 benches/reference/list_first_byte.py FIELDSTORE_BIN [--n 100000] [--rounds 3]

Starts the reference (`reference/run.sh start`, REFERENCE_BIN as in run.py) and `fieldstore serve`
with the reference's serving certificate and token file, fills namespace `load` of both with N
ConfigMaps through reference/loadgen (its LIST workload's fill: 32 clients, client-go), then per
round, server and media type (protobuf, then JSON) sends one unpaged
`GET /api/v1/namespaces/load/configmaps` on a new HTTPS connection (Python's http.client, no
compression asked) and measures:

- first byte: from sending the request to the response's status line, and to its first body byte;
- total: to the body's last byte, and the body's size;
- server CPU: utime + stime of the server's processes (kube-apiserver and etcd; fieldstore's one)
  around the request (`/proc/PID/stat`, 10 ms resolution).

kube-apiserver (since 1.34) writes a protobuf list as it encodes it but sizes every item first
(`runtime.Unknown.raw` is length-prefixed); it serves the list from its watch cache, every object
decoded in memory. fieldstore reads the list from its store at the list's revision as it writes it.
"""

import argparse
import http.client
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from list_stream import cpu  # noqa: E402
from run import Fieldstore, Reference, build_loadgen, log, read  # noqa: E402

PATH = "/api/v1/namespaces/load/configmaps"
MEDIA = {"protobuf": "application/vnd.kubernetes.protobuf", "json": "application/json"}


def address(server):
    """host, port of a server's Kubernetes API, from its kubeconfig."""
    found = re.search(r"https://([^:/\"\s]+):(\d+)", read(server.kubeconfig))
    if not found:
        raise SystemExit(f"no server in {server.kubeconfig}")
    return found.group(1), int(found.group(2))


def list_once(server, certs, media):
    host, port = address(server)
    ctx = ssl.create_default_context(cafile=os.path.join(certs, "ca.crt"))
    token = read(os.path.join(certs, "token"))
    conn = http.client.HTTPSConnection(host, port, context=ctx, timeout=600)
    conn.connect()
    c0 = sum(map(cpu, server.pids))
    t0 = time.perf_counter()
    conn.request("GET", PATH, headers={"Authorization": f"Bearer {token}", "Accept": MEDIA[media]})
    resp = conn.getresponse()
    t_status = time.perf_counter()
    first = resp.read(1)
    t_body = time.perf_counter()
    size = len(first)
    while chunk := resp.read(1 << 20):
        size += len(chunk)
    t_end = time.perf_counter()
    c1 = sum(map(cpu, server.pids))
    conn.close()
    if resp.status != 200:
        raise SystemExit(f"{server.__class__.__name__}: LIST answered {resp.status}")
    return (t_status - t0) * 1e3, (t_body - t0) * 1e3, t_end - t0, size, c1 - c0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fieldstore")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="list-first-byte-")
    loadgen = os.path.join(work, "loadgen")
    build_loadgen(loadgen)
    ref = Reference(os.path.join(work, "ref"))
    fs = Fieldstore(os.path.abspath(args.fieldstore), os.path.join(work, "fs"), ref.dir)
    try:
        log("starting the reference and fieldstore")
        ref.start()
        fs.start()
        spec = lambda name, s: f"name={name},kubeconfig={s.kubeconfig},data={s.data},pids={'+'.join(map(str, s.pids))}"
        log(f"filling namespace load of both with {args.n} ConfigMaps")
        subprocess.run([loadgen, "-server", spec("reference", ref), "-server", spec("fieldstore", fs),
                        "-workloads", "list", "-list", str(args.n), "-list-repeats", "1",
                        "-out", os.path.join(work, "fill.jsonl")],
                       check=True, stderr=open(os.path.join(work, "loadgen.log"), "w"))
        print(f"Unpaged LIST of {args.n} ConfigMaps over HTTPS (load average before: "
              f"{' '.join(read('/proc/loadavg').split()[:3])})\n")
        print("| round | server | media | status line ms | first body byte ms | total s | MB | server CPU s |")
        print("|---|---|---|---|---|---|---|---|")
        for r in range(1, args.rounds + 1):
            for name, server in (("kube-apiserver + etcd", ref), ("fieldstore", fs)):
                for media in MEDIA:
                    status, body, total, size, used = list_once(server, ref.dir, media)
                    print(f"| {r} | {name} | {media} | {status:.1f} | {body:.1f} | {total:.2f} | "
                          f"{size / 1e6:.1f} | {used:.2f} |", flush=True)
    finally:
        fs.stop()
        ref.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
