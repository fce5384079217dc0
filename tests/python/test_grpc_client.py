#!/usr/bin/env python3
"""An independent gRPC client against a live `fieldstore serve`: Python grpcio with stubs
generated from proto/ at run time. apply -> conflict -> force -> watch -> blame -> streamed list.

Usage: test_grpc_client.py PATH_TO_FIELDSTORE_BINARY
Exits non-zero on the first failed check (plain asserts; no test framework needed)."""

import json
import os
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def generate_stubs(out_dir):
    from grpc_tools import protoc

    os.makedirs(out_dir, exist_ok=True)
    proto_root = os.path.join(ROOT, "proto")
    rc = protoc.main([
        "protoc",
        f"-I{proto_root}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        os.path.join(proto_root, "fieldstore", "v1", "store.proto"),
    ])
    assert rc == 0, f"protoc failed with {rc}"
    sys.path.insert(0, out_dir)


def start_server(binary, data_dir):
    proc = subprocess.Popen(
        [binary, "--data", data_dir, "serve", "--listen", "127.0.0.1:0", "--no-http"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    assert line.startswith("fieldstore: serving on "), f"unexpected first line {line!r}"
    return proc, line.split()[3]


def body(obj):
    from fieldstore.v1 import store_pb2
    return store_pb2.Body(content_type="application/json", data=json.dumps(obj).encode())


def configmap(data):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "py", "namespace": "ns"}, "data": data}


def main():
    binary = sys.argv[1]
    import grpc

    with tempfile.TemporaryDirectory() as tmp:
        generate_stubs(os.path.join(tmp, "stubs"))
        from fieldstore.v1 import store_pb2, store_pb2_grpc

        proc, addr = start_server(binary, os.path.join(tmp, "data"))
        try:
            channel = grpc.insecure_channel(addr)
            stub = store_pb2_grpc.StoreStub(channel)

            # Apply as alice.
            out = stub.Apply(store_pb2.WriteRequest(body=body(configmap({"a": "1"})), field_manager="alice"))
            created = json.loads(out.object.data)
            rv = int(created["metadata"]["resourceVersion"])
            assert created["metadata"]["managedFields"][0]["manager"] == "alice"

            # Watch from that revision in the background.
            events = []
            got_event = threading.Event()
            stream = stub.Watch(store_pb2.WatchRequest(resource="configmaps", namespace="ns", resource_version=str(rv)))

            def consume():
                try:
                    for ev in stream:
                        events.append(ev)
                        got_event.set()
                except grpc.RpcError:
                    pass

            threading.Thread(target=consume, daemon=True).start()

            # bob conflicts: ABORTED with the Kubernetes Status in the details.
            try:
                stub.Apply(store_pb2.WriteRequest(body=body(configmap({"a": "2"})), field_manager="bob"))
                raise AssertionError("the conflicting apply succeeded")
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.ABORTED, e.code()
                details = dict(e.trailing_metadata() or ()).get("grpc-status-details-bin")
                assert details is not None, "no status details"
                status = json.loads(details)
                assert status["reason"] == "Conflict" and status["code"] == 409, status
                cause = status["details"]["causes"][0]
                assert cause["field"] == ".data.a" and cause["message"] == 'conflict with "alice"', cause

            # Forced, bob takes the field; the watcher sees the change.
            out = stub.Apply(store_pb2.WriteRequest(body=body(configmap({"a": "2"})), field_manager="bob", force=True))
            assert json.loads(out.object.data)["data"]["a"] == "2"
            assert got_event.wait(10), "no watch event within 10 s"
            assert events[0].type == "MODIFIED", events[0].type
            assert events[0].resource_version == rv + 1, events[0].resource_version
            assert json.loads(events[0].object.data)["data"]["a"] == "2"
            stream.cancel()

            # Blame names bob for the field and alice nowhere.
            lines = json.loads(stub.Blame(store_pb2.ObjectRef(resource="configmaps", namespace="ns", name="py")).json)
            a = [l for l in lines if l["path"] == ".data.a"]
            assert a and a[0]["manager"] == "bob" and a[0]["operation"] == "Apply" and a[0]["revision"] == rv + 1, a
            # A streamed list: 300 more ConfigMaps of ~1 KiB come in several messages whose items,
            # in order, are List's; only the last message carries the list (its metadata).
            for i in range(300):
                cm = {"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": f"s{i:03}", "namespace": "ns"}, "data": {"v": "x" * 1000}}
                stub.Create(store_pb2.WriteRequest(resource="configmaps", namespace="ns", body=body(cm)))
            whole = json.loads(stub.List(store_pb2.ListRequest(resource="configmaps", namespace="ns")).list.data)
            messages = list(stub.ListStream(store_pb2.ListRequest(resource="configmaps", namespace="ns")))
            assert len(messages) > 2, len(messages)
            assert all(not m.HasField("list") for m in messages[:-1]) and messages[-1].HasField("list")
            items = [json.loads(i) for m in messages for i in m.items]
            assert items == whole["items"], (len(items), len(whole["items"]))
            last = json.loads(messages[-1].list.data)
            assert last["items"] == [] and last["metadata"] == whole["metadata"], last
            try:
                list(stub.ListStream(store_pb2.ListRequest(resource="configmaps", label_selector="a in (")))
                raise AssertionError("a malformed selector was answered")
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e.code()

            print("python grpcio client: apply, conflict, force, watch, blame, streamed list: ok")
        finally:
            proc.terminate()
            assert proc.wait(timeout=30) == 0, "the server did not stop cleanly"


if __name__ == "__main__":
    main()
