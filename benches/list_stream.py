#!/usr/bin/env python3
"""Unpaged LISTs of many ~1 KiB ConfigMaps: server RSS growth, time to first byte and server CPU
per listed object, for one or more `fieldstore` binaries side by side (issue 36, streamed lists).

Usage: benches/list_stream.py [--n N] [--rounds R] [--doors http,grpc] NAME=BINARY [NAME=BINARY ...]

Loads N ConfigMaps (default 100,000; ~1 KiB each, applied by one manager, so each carries one
managedFields entry) once, with the first binary, into a data directory all binaries then serve
in turn (the storage format is the same). For each round, binary and media type (JSON, then
protobuf) a fresh `fieldstore serve` is started on that directory, warmed with a one-item LIST,
and sent one unpaged `GET /api/v1/namespaces/default/configmaps` on a new connection, read as
fast as the client can. Per LIST:

- RSS growth: the server's peak RSS during the request (`VmHWM`, reset just before it through
  `/proc/PID/clear_refs`) minus its RSS before it;
- first byte: from sending the request to the first byte of the response (status line), and to
  the first byte of the body (the same for a streamed answer; for one built whole, both come
  once it is built);
- server CPU per listed object: utime + stime of the server process (`/proc/PID/stat`) around
  the request, divided by N;
- the whole answer's time and size.

With --doors including grpc, the same list is also read over gRPC (Python grpcio, stubs generated
from proto/ into the temporary directory) twice per media: by the unary `List` (one message
holding the whole list) and by `ListStream` (messages of ~64 KiB of items as they are read);
"first byte" is then the first message received, "first body byte" the same.

With --warm, an unpaged LIST of the same collection is sent (and read) before the measured one
on the same server: the growth then left is what the LIST holds, not RocksDB's block cache (64
MiB, shared by every read) filling with the list's blocks.

With CALLGRIND=1 each server runs under `valgrind --tool=callgrind` and reports instructions
per listed object instead of CPU time (counters zeroed before the LIST, dumped after it): exact
counts, unaffected by the machine's other work; use a smaller N (~50x slower).
"""

import argparse
import glob
import http.client
import json
import os
import socket
import subprocess
import tempfile
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")
PATH = "/api/v1/namespaces/default/configmaps"
MEDIA = {"json": "application/json", "protobuf": "application/vnd.kubernetes.protobuf"}


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def start(binary, data, callgrind_out=None):
    """A server on `data`: (process, HTTP host, HTTP port, gRPC address)."""
    wrap = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind_out}"] if callgrind_out else []
    proc = subprocess.Popen(wrap + [binary, "--data", data, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    http_addr = line.split("kubernetes API http://")[1].split(",")[0].split(")")[0].strip()
    host, port = http_addr.rsplit(":", 1)
    return proc, host, int(port), line.split()[3]


def grpc_stubs(out_dir):
    """The gRPC modules of proto/, generated into `out_dir`: (store_pb2, store_pb2_grpc)."""
    import sys
    from grpc_tools import protoc

    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "proto")
    os.makedirs(out_dir, exist_ok=True)
    rc = protoc.main(["protoc", f"-I{root}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}",
                      os.path.join(root, "fieldstore", "v1", "store.proto")])
    assert rc == 0, f"protoc failed with {rc}"
    sys.path.insert(0, out_dir)
    from fieldstore.v1 import store_pb2, store_pb2_grpc
    return store_pb2, store_pb2_grpc


def grpc_list_once(stubs, addr, media, rpc, limit=0):
    """One list over a new gRPC channel, read whole: (time to the first message, the same, total
    time, bytes of items and list)."""
    import grpc
    store_pb2, store_pb2_grpc = stubs
    channel = grpc.insecure_channel(addr, options=[("grpc.max_receive_message_length", -1)])
    stub = store_pb2_grpc.StoreStub(channel)
    grpc.channel_ready_future(channel).result(timeout=10)
    req = store_pb2.ListRequest(resource="configmaps", namespace="default", accept=MEDIA[media], limit=limit)
    t0 = time.perf_counter()
    first, size = None, 0
    if rpc == "List":
        size = len(stub.List(req).list.data)
        first = time.perf_counter() - t0
    else:
        for m in stub.ListStream(req):
            if first is None:
                first = time.perf_counter() - t0
            size += sum(len(i) for i in m.items) + len(m.list.data)
    total = time.perf_counter() - t0
    channel.close()
    return first, first, total, size


def load(binary, data, n):
    proc, host, port, _ = start(binary, data)
    try:
        payload = "x" * 900

        def worker(lo, hi):
            conn = http.client.HTTPConnection(host, port)
            for i in range(lo, hi):
                body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": f"cm-{i:06d}", "namespace": "default", "labels": {"app": "bench"}},
                                   "data": {"payload": payload, "index": str(i)}})
                conn.request("PATCH", f"{PATH}/cm-{i:06d}?fieldManager=loader", body=body,
                             headers={"Content-Type": "application/apply-patch+yaml"})
                r = conn.getresponse()
                r.read()
                assert r.status in (200, 201), (r.status, i)

        threads = [threading.Thread(target=worker, args=(k * n // 4, (k + 1) * n // 4)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        proc.terminate()
        proc.wait()


def list_once(host, port, media, limit=None):
    """Sends one LIST on a new connection and reads the whole answer: (time to the first
    response byte, time to the first body byte, total time, body bytes)."""
    query = f"?limit={limit}" if limit else ""
    req = (f"GET {PATH}{query} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: {MEDIA[media]}\r\n"
           "Connection: close\r\n\r\n").encode()
    s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.perf_counter()
    s.sendall(req)
    buf = bytearray()
    first = first_body = None
    head_end = -1
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        if first is None:
            first = time.perf_counter() - t0
        buf += chunk
        if head_end < 0:
            head_end = buf.find(b"\r\n\r\n")
        if first_body is None and head_end >= 0 and len(buf) > head_end + 4:
            first_body = time.perf_counter() - t0
    total = time.perf_counter() - t0
    s.close()
    head = bytes(buf[:head_end]).decode()
    assert head.startswith("HTTP/1.1 200"), head[:200]
    return first, first_body, total, len(buf) - head_end - 4


def measure(binary, data, media, n, callgrind, warm=False, grpc_rpc=None, stubs=None):
    """One list on a fresh server: over HTTP, or over gRPC by `grpc_rpc` (`List`, `ListStream`)."""
    out = None
    if callgrind:
        out = os.path.join(os.path.dirname(data), f"cg-{os.getpid()}-{time.monotonic_ns()}.out")
    proc, host, port, grpc_addr = start(binary, data, out)

    def list_once_here(limit=None):
        if grpc_rpc:
            return grpc_list_once(stubs, grpc_addr, media, grpc_rpc, limit or 0)
        return list_once(host, port, media, limit)

    try:
        list_once_here(limit=None if warm else 1)
        time.sleep(0.5)
        pid = proc.pid
        if callgrind:
            subprocess.run(["callgrind_control", "-z", str(pid)], check=True, stdout=subprocess.DEVNULL)
        rss_before = status_kib(pid, "VmRSS")
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        cpu_before = cpu(pid)
        first, first_body, total, size = list_once_here()
        time.sleep(0.2)
        cpu_used = cpu(pid) - cpu_before
        peak = status_kib(pid, "VmHWM")
        result = {"rss_before_mib": rss_before / 1024, "growth_mib": (peak - rss_before) / 1024,
                  "first_ms": first * 1e3, "first_body_ms": first_body * 1e3, "total_s": total, "mb": size / 1e6,
                  "cpu_us_per_object": cpu_used / n * 1e6}
        if callgrind:
            subprocess.run(["callgrind_control", "-d", str(pid)], check=True, stdout=subprocess.DEVNULL)
            time.sleep(1)
            dump = max(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
            with open(dump) as d:
                instructions = next(int(line.split()[1]) for line in d if line.startswith("summary:"))
            result["instructions_per_object"] = instructions / n
        return result
    finally:
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warm", action="store_true", help="measure a second unpaged LIST on each server")
    ap.add_argument("--doors", default="http", help="comma-separated: http, grpc")
    ap.add_argument("binaries", nargs="+", help="NAME=BINARY")
    args = ap.parse_args()
    binaries = [b.split("=", 1) for b in args.binaries]
    callgrind = os.environ.get("CALLGRIND") == "1"
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        t0 = time.time()
        load(binaries[0][1], data, args.n)
        print(f"loaded {args.n} ConfigMaps in {time.time() - t0:.1f} s", flush=True)
        cols = ("rss before MiB", "RSS growth MiB", "first byte ms", "first body byte ms", "total s", "answer MB",
                "server CPU µs/object") + (("instructions/object",) if callgrind else ())
        doors = args.doors.split(",")
        ways = ([("HTTP", None)] if "http" in doors else []) + ([("gRPC List", "List"), ("gRPC ListStream", "ListStream")]
                                                                if "grpc" in doors else [])
        stubs = grpc_stubs(os.path.join(tmp, "stubs")) if "grpc" in doors else None
        print("| round | binary | door | media | " + " | ".join(cols) + " |")
        print("|" + "---|" * (len(cols) + 4))
        for r in range(args.rounds):
            for name, binary in binaries:
                for (door, rpc), media in ((w, m) for w in ways for m in ("json", "protobuf")):
                    m = measure(binary, data, media, args.n, callgrind, args.warm, rpc, stubs)
                    vals = [m["rss_before_mib"], m["growth_mib"], m["first_ms"], m["first_body_ms"], m["total_s"], m["mb"],
                            m["cpu_us_per_object"]]
                    if callgrind:
                        vals.append(m["instructions_per_object"])
                    print(f"| {r + 1} | {name} | {door} | {media} | " + " | ".join(f"{v:,.1f}" if v >= 10 else f"{v:.2f}" for v in vals) + " |",
                          flush=True)


if __name__ == "__main__":
    main()
