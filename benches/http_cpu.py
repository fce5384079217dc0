#!/usr/bin/env python3
"""Server CPU per request of the Kubernetes HTTP API vs gRPC, for create and apply.

Usage: benches/http_cpu.py PATH_TO_FIELDSTORE_BINARY [N]

Starts `fieldstore serve` with both APIs, then sends N sequential creates and N sequential
applies (each changing a field) of ConfigMaps over each API, every client on one kept-alive
connection, and reports the server process's CPU time (utime + stime from /proc/PID/stat) and
context switches (every thread's, from /proc/PID/task/*/status) per request. Needs grpcio and grpcio-tools (tests/python/ensure_packages.sh).

With CALLGRIND=1 the server runs under `valgrind --tool=callgrind` and each phase reports the
server's instructions per request instead (counters zeroed before the phase, dumped after it):
exact counts, unaffected by what else the machine runs (use a smaller N: callgrind is ~50x
slower)."""

import http.client
import json
import os
import subprocess
import sys
import tempfile
import glob
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from test_grpc_client import generate_stubs  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def switches(pid):
    """Context switches (voluntary + involuntary) of every thread of the process so far."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/status") as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
    return total


def cm(name, v):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"a": v, "b": "some value", "c": "another value"}}


def main():
    binary, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    import grpc
    with tempfile.TemporaryDirectory() as tmp:
        generate_stubs(os.path.join(tmp, "stubs"))
        from fieldstore.v1 import store_pb2, store_pb2_grpc
        callgrind = os.environ.get("CALLGRIND") == "1"
        out = os.path.join(tmp, "cg.out")
        wrap = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] if callgrind else []
        proc = subprocess.Popen(wrap + [binary, "--data", os.path.join(tmp, "data"), "serve", "--listen", "127.0.0.1:0",
                                "--http", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = proc.stdout.readline()
        grpc_addr = line.split()[3]
        http_addr = line.split("kubernetes API http://")[1].split(",")[0].split(")")[0].strip()
        try:
            stub = store_pb2_grpc.StoreStub(grpc.insecure_channel(grpc_addr))
            conn = http.client.HTTPConnection(*http_addr.rsplit(":", 1))

            def body(o):
                return store_pb2.Body(content_type="application/json", data=json.dumps(o).encode())

            def g_create(i):
                stub.Create(store_pb2.WriteRequest(body=body(cm(f"g{i}", "0")), field_manager="m"))

            def g_apply(i):
                stub.Apply(store_pb2.WriteRequest(body=body(cm(f"g{i}", "1")), field_manager="a", force=True))

            def h(method, path, ct, o):
                conn.request(method, path, body=json.dumps(o), headers={"Content-Type": ct})
                r = conn.getresponse()
                r.read()
                assert r.status in (200, 201), r.status

            def h_create(i):
                h("POST", "/api/v1/namespaces/default/configmaps?fieldManager=m", "application/json", cm(f"h{i}", "0"))

            def h_apply(i):
                h("PATCH", f"/api/v1/namespaces/default/configmaps/h{i}?fieldManager=a&force=true", "application/apply-patch+yaml", cm(f"h{i}", "1"))

            # Warm both paths (connections, caches) before measuring.
            stub.Create(store_pb2.WriteRequest(body=body(cm("gw", "0")), field_manager="m"))
            h("POST", "/api/v1/namespaces/default/configmaps", "application/json", cm("hw", "0"))
            results, ctx = {}, {}
            for name, f in [("grpc create", g_create), ("http create", h_create), ("grpc apply", g_apply), ("http apply", h_apply)]:
                if callgrind:
                    subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, stdout=subprocess.DEVNULL)
                before, before_ctx = cpu(proc.pid), switches(proc.pid)
                for i in range(n):
                    f(i)
                if callgrind:
                    subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, stdout=subprocess.DEVNULL)
                    time.sleep(1)
                    dump = max(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
                    with open(dump) as d:
                        total = next(int(l.split()[1]) for l in d if l.startswith("summary:"))
                    results[name] = total / n
                else:
                    results[name] = (cpu(proc.pid) - before) / n * 1e6
                    ctx[name] = (switches(proc.pid) - before_ctx) / n
            unit = "instructions" if callgrind else "us server CPU"
            for name, v in results.items():
                extra = f", {ctx[name]:.2f} context switches" if name in ctx else ""
                print(f"{name:12} {v:10.1f} {unit}{extra} per request (N={n})")
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
