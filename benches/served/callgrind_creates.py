#!/usr/bin/env python3
"""Drives N gRPC creates (or applies) of 1 KiB ConfigMaps at a running `fieldstore serve`, one
client, one channel: the load for counting the server's instructions per request under callgrind
(benches/SERVED_RESULTS.md says how).

Usage: callgrind_creates.py ADDR N create|apply [OFFSET]   (STUBS: a directory with fieldstore/v1/store_pb2*.py)"""
import json, os, sys, tempfile, time
sys.path.insert(0, os.environ.get("STUBS", "/tmp/prof/stubs"))
import grpc
from fieldstore.v1 import store_pb2 as fpb, store_pb2_grpc as fpbg
target, n, verb = sys.argv[1], int(sys.argv[2]), sys.argv[3]
off = int(sys.argv[4]) if len(sys.argv) > 4 else 0
ch = grpc.insecure_channel(target)
st = fpbg.StoreStub(ch)
def cm(i):
    ns, name = "ns-%d" % (i % 100), "name-%d" % i
    o = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {"payload": ""}}
    o["data"]["payload"] = "x" * max(1024 - len(json.dumps(o)), 0)
    return ns, json.dumps(o).encode()
t0 = time.time()
for i in range(n):
    ns, v = cm(i + off)
    req = fpb.WriteRequest(resource="configmaps", namespace=ns, body=fpb.Body(content_type="application/json", data=v), field_manager="m")
    (st.Create if verb == "create" else st.Apply)(req, timeout=120)
print("done", n, time.time() - t0)
