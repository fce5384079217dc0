#!/usr/bin/env python3
"""The official Kubernetes Python client (`kubernetes` from PyPI) against a live
`fieldstore serve`: CoreV1Api create/read/list with limit+continue/patch/replace/delete of
ConfigMaps, `watch.Watch().stream` seeing ADDED/MODIFIED/DELETED and resuming from a bookmark,
CustomObjectsApi on a CRD, and an expired resourceVersion answered 410.

Usage: test_k8s_client.py PATH_TO_FIELDSTORE_BINARY
Exits non-zero on the first failed check (plain asserts; no test framework needed)."""

import subprocess
import sys
import tempfile

NS = "default"


def start_server(binary, data_dir):
    proc = subprocess.Popen(
        [binary, "--data", data_dir, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    assert "kubernetes API http://" in line, f"unexpected first line {line!r}"
    grpc = line.split()[3]
    http = line.split("kubernetes API ")[1].split(",")[0].split(")")[0].strip()
    return proc, grpc, http


def main():
    binary = sys.argv[1]
    from kubernetes import client, watch
    from kubernetes.client.rest import ApiException

    with tempfile.TemporaryDirectory() as tmp:
        proc, grpc_addr, http = start_server(binary, tmp + "/data")
        try:
            conf = client.Configuration(host=http)
            api = client.ApiClient(conf)
            v1 = client.CoreV1Api(api)

            def cm(name, data):
                return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels={"app": "py"}), data=data)

            # create / read / list with limit+continue / patch / replace / delete.
            start_rv = v1.list_namespaced_config_map(NS).metadata.resource_version
            for i in range(5):
                v1.create_namespaced_config_map(NS, cm(f"c{i}", {"i": str(i)}))
            try:
                v1.create_namespaced_config_map(NS, cm("c0", {}))
                raise AssertionError("a second create of c0 succeeded")
            except ApiException as e:
                assert e.status == 409, e
            assert v1.read_namespaced_config_map("c3", NS).data == {"i": "3"}
            names, token, rvs = [], None, set()
            while True:
                page = v1.list_namespaced_config_map(NS, limit=2, _continue=token)
                names += [o.metadata.name for o in page.items]
                rvs.add(page.metadata.resource_version)
                token = page.metadata._continue
                if not token:
                    break
            assert names == [f"c{i}" for i in range(5)], names
            assert len(rvs) == 1, f"every page carries the list's resourceVersion: {rvs}"
            patched = v1.patch_namespaced_config_map("c1", NS, {"data": {"p": "1"}})
            assert patched.data == {"i": "1", "p": "1"}, patched.data
            obj = v1.read_namespaced_config_map("c1", NS)
            obj.data["r"] = "1"
            assert v1.replace_namespaced_config_map("c1", NS, obj).data["r"] == "1"
            st = v1.delete_namespaced_config_map("c4", NS)
            st = st if isinstance(st, dict) else api.sanitize_for_serialization(st)
            assert st["status"] == "Success" and st["details"]["name"] == "c4", st
            try:
                v1.read_namespaced_config_map("c4", NS)
                raise AssertionError("c4 was not deleted")
            except ApiException as e:
                assert e.status == 404, e

            # watch: ADDED / MODIFIED / DELETED from the first list's resourceVersion.
            w = watch.Watch()
            seen = []
            for ev in w.stream(v1.list_namespaced_config_map, NS, resource_version=start_rv, timeout_seconds=5):
                seen.append((ev["type"], ev["object"].metadata.name))
                if ev["type"] == "DELETED":
                    w.stop()
            assert ("ADDED", "c0") in seen and ("MODIFIED", "c1") in seen and ("DELETED", "c4") in seen, seen

            # A bookmark, then a watch resumed from it sees only what came after.
            w = watch.Watch()
            bookmark = None
            for ev in w.stream(v1.list_namespaced_config_map, NS, allow_watch_bookmarks=True, timeout_seconds=10,
                               resource_version=v1.list_namespaced_config_map(NS).metadata.resource_version):
                if ev["type"] == "BOOKMARK":
                    bookmark = ev["raw_object"]["metadata"]["resourceVersion"]
                    w.stop()
            assert bookmark, "no bookmark"
            v1.patch_namespaced_config_map("c2", NS, {"data": {"after": "bookmark"}})
            w = watch.Watch()
            after = []
            for ev in w.stream(v1.list_namespaced_config_map, NS, resource_version=bookmark, timeout_seconds=5):
                after.append((ev["type"], ev["object"].metadata.name))
                w.stop()
            assert after == [("MODIFIED", "c2")], after

            # CustomObjectsApi on a CRD.
            ext = client.ApiextensionsV1Api(api)
            ext.create_custom_resource_definition({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced",
                         "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
                         "versions": [{"name": "v1", "served": True, "storage": True,
                                       "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                           "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}})
            co = client.CustomObjectsApi(api)
            co.create_namespaced_custom_object("example.com", "v1", NS, "widgets", {
                "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}})
            co.patch_namespaced_custom_object("example.com", "v1", NS, "widgets", "w", {"spec": {"size": 2}})
            got = co.get_namespaced_custom_object("example.com", "v1", NS, "widgets", "w")
            assert got["spec"]["size"] == 2, got
            listed = co.list_namespaced_custom_object("example.com", "v1", NS, "widgets")
            assert [i["metadata"]["name"] for i in listed["items"]] == ["w"], listed
            co.delete_namespaced_custom_object("example.com", "v1", NS, "widgets", "w")

            # After a compaction, the first resourceVersion is expired: 410 for a list and a watch.
            out = subprocess.run([binary, "--server", grpc_addr, "compact"], capture_output=True, text=True)
            assert out.returncode == 0, out.stderr
            try:
                v1.list_namespaced_config_map(NS, resource_version=start_rv, resource_version_match="Exact")
                raise AssertionError("an expired list succeeded")
            except ApiException as e:
                assert e.status == 410, e
            try:
                for _ in watch.Watch().stream(v1.list_namespaced_config_map, NS, resource_version=start_rv, timeout_seconds=5):
                    pass
                raise AssertionError("an expired watch ended without an error")
            except ApiException as e:
                assert e.status == 410, e
            print("ok: the Kubernetes Python client works against fieldstore")
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
