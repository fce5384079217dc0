#!/usr/bin/env python3
"""The official Kubernetes Python client (`kubernetes` from PyPI) against a live
`fieldstore serve`, on its Kubernetes HTTP API, unchanged: CoreV1Api create/read/list with
limit+continue/patch (strategic, merge, JSON)/replace/delete of ConfigMaps, watch.Watch().stream
seeing ADDED/MODIFIED/DELETED and resuming from a bookmark, a CRD created through
ApiextensionsV1Api and used through CustomObjectsApi, and an expired resourceVersion answered 410.

Usage: test_k8s_client.py PATH_TO_FIELDSTORE_BINARY
Exits non-zero on the first failed check (plain asserts; no test framework needed)."""

import os
import subprocess
import sys
import tempfile
import time

NS = "default"


def start_server(binary, data_dir):
    proc = subprocess.Popen(
        [binary, "--data", data_dir, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    # "fieldstore: serving on 127.0.0.1:PORT (http; data DIR, kubernetes API http://127.0.0.1:PORT)"
    assert line.startswith("fieldstore: serving on "), f"unexpected first line {line!r}"
    grpc_addr = line.split()[3]
    http = line.split("kubernetes API ", 1)[1].strip().rstrip(")").split(",")[0]
    return proc, grpc_addr, http


def cm(name, data, labels=None):
    meta = {"name": name, "namespace": NS}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def api_dict(model):
    from kubernetes import client
    return client.ApiClient().sanitize_for_serialization(model)


def expect_api_error(status, fn, *args, **kwargs):
    from kubernetes.client.rest import ApiException
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        assert e.status == status, f"expected {status}, got {e.status}: {e.body}"
        return e
    raise AssertionError(f"expected HTTP {status}, the call succeeded")


def configmaps(core):
    # Create five, read one.
    for i in range(5):
        created = core.create_namespaced_config_map(NS, cm(f"py-{i}", {"i": str(i)}, {"app": "py"}))
        assert created.metadata.resource_version, "a created object has a resourceVersion"
    got = core.read_namespaced_config_map("py-0", NS)
    assert got.data == {"i": "0"}, got.data
    expect_api_error(409, core.create_namespaced_config_map, NS, cm("py-0", {}))
    expect_api_error(404, core.read_namespaced_config_map, "absent", NS)

    # List with limit + continue: every page, every object once, one resourceVersion.
    names, rvs, token = [], set(), None
    while True:
        page = core.list_namespaced_config_map(NS, limit=2, _continue=token, label_selector="app=py")
        names += [o.metadata.name for o in page.items]
        rvs.add(page.metadata.resource_version)
        token = page.metadata._continue
        if not token:
            break
    assert names == [f"py-{i}" for i in range(5)], names
    assert len(rvs) == 1, f"pages of one list carry one resourceVersion: {rvs}"

    # Patches of all three types (the client picks the content type from the body's shape or
    # from _content_type).
    core.patch_namespaced_config_map("py-1", NS, {"data": {"s": "strategic"}},
                                     _content_type="application/strategic-merge-patch+json")
    core.patch_namespaced_config_map("py-1", NS, {"data": {"m": "merge"}},
                                     _content_type="application/merge-patch+json")
    core.patch_namespaced_config_map("py-1", NS, [{"op": "add", "path": "/data/j", "value": "json"}])
    got = core.read_namespaced_config_map("py-1", NS)
    assert got.data == {"i": "1", "s": "strategic", "m": "merge", "j": "json"}, got.data
    managers = {e.manager for e in got.metadata.managed_fields}
    assert managers, "managedFields are set for a client that sends no fieldManager"

    # Replace, with a stale resourceVersion refused.
    got.data = {"replaced": "yes"}
    replaced = core.replace_namespaced_config_map("py-1", NS, got)
    assert replaced.data == {"replaced": "yes"}
    expect_api_error(409, core.replace_namespaced_config_map, "py-1", NS, got)

    # Delete: a Success Status with the object's details; then gone.
    st = core.delete_namespaced_config_map("py-1", NS)
    st = st if isinstance(st, dict) else api_dict(st)
    assert st["status"] == "Success" and st["details"]["name"] == "py-1", st
    expect_api_error(404, core.read_namespaced_config_map, "py-1", NS)
    print("k8s client: ConfigMaps create/read/list+continue/patch x3/replace/delete ok")


def watching(core):
    from kubernetes import watch

    rv = core.list_namespaced_config_map(NS).metadata.resource_version
    w = watch.Watch()
    seen = []
    core.create_namespaced_config_map(NS, cm("w", {"a": "1"}))
    core.patch_namespaced_config_map("w", NS, {"data": {"a": "2"}})
    core.delete_namespaced_config_map("w", NS)
    for ev in w.stream(core.list_namespaced_config_map, NS, resource_version=rv, timeout_seconds=10):
        if ev["object"].metadata.name == "w":
            seen.append((ev["type"], (ev["object"].data or {}).get("a")))
        if len(seen) == 3:
            w.stop()
    assert seen == [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")], seen

    # Bookmarks: a watch with allowWatchBookmarks gets one (the server sends them each second when
    # idle); a watch resumed from its resourceVersion sees only what came after.
    rv = core.list_namespaced_config_map(NS).metadata.resource_version
    bookmark = None
    w = watch.Watch()
    deadline = time.time() + 15
    for ev in w.stream(core.list_namespaced_config_map, NS, resource_version=rv, allow_watch_bookmarks=True,
                       timeout_seconds=15):
        if ev["type"] == "BOOKMARK":
            bookmark = ev["raw_object"]["metadata"]["resourceVersion"]
            w.stop()
        if time.time() > deadline:
            w.stop()
    assert bookmark is not None, "no BOOKMARK event within 15 s"
    core.create_namespaced_config_map(NS, cm("after-bookmark", {}))
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_config_map, NS, resource_version=bookmark, timeout_seconds=10):
        assert ev["type"] == "ADDED" and ev["object"].metadata.name == "after-bookmark", (ev["type"], ev["object"].metadata.name)
        w.stop()
    print(f"k8s client: watch ADDED/MODIFIED/DELETED, bookmark at {bookmark} and resume ok")


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "shortNames": ["wd"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "color": {"type": "string"}}}}}},
        }],
    },
}


def custom_objects(api_client):
    from kubernetes import client

    ext = client.ApiextensionsV1Api(api_client)
    ext.create_custom_resource_definition(CRD)
    # Established, as kube-apiserver reports it once the type serves.
    for _ in range(50):
        crd = ext.read_custom_resource_definition("widgets.example.com")
        conds = {c.type: c.status for c in (crd.status.conditions or [])} if crd.status else {}
        if conds.get("Established") == "True":
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the CRD never became Established")
    co = client.CustomObjectsApi(api_client)
    w = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3}}
    co.create_namespaced_custom_object("example.com", "v1", NS, "widgets", w)
    got = co.get_namespaced_custom_object("example.com", "v1", NS, "widgets", "w1")
    assert got["spec"] == {"size": 3}, got
    co.patch_namespaced_custom_object("example.com", "v1", NS, "widgets", "w1", {"spec": {"color": "blue"}})
    got = co.get_namespaced_custom_object("example.com", "v1", NS, "widgets", "w1")
    assert got["spec"] == {"size": 3, "color": "blue"}, got
    listed = co.list_namespaced_custom_object("example.com", "v1", NS, "widgets")
    assert [o["metadata"]["name"] for o in listed["items"]] == ["w1"], listed
    co.delete_namespaced_custom_object("example.com", "v1", NS, "widgets", "w1")
    expect_api_error(404, co.get_namespaced_custom_object, "example.com", "v1", NS, "widgets", "w1")
    print("k8s client: CRD through ApiextensionsV1Api, Widget create/get/patch/list/delete through CustomObjectsApi ok")


def expired(core, binary, grpc_addr):
    from kubernetes import watch
    from kubernetes.client.rest import ApiException

    old = core.create_namespaced_config_map(NS, cm("old", {"v": "0"})).metadata.resource_version
    for i in range(3):
        core.patch_namespaced_config_map("old", NS, {"data": {"v": str(i + 1)}})
    subprocess.run([binary, "--server", grpc_addr, "compact"], check=True, stdout=subprocess.DEVNULL)
    try:
        for _ in watch.Watch().stream(core.list_namespaced_config_map, NS, resource_version=old, timeout_seconds=5):
            pass
    except ApiException as e:
        assert e.status == 410, f"watch from a compacted revision: {e.status} {e.reason}"
    else:
        raise AssertionError("a watch from a compacted revision ended without 410")
    e = expect_api_error(410, core.list_namespaced_config_map, NS, resource_version=old, resource_version_match="Exact")
    print(f"k8s client: expired resourceVersion {old} answered 410 ({e.reason}) ok")


def main():
    binary = sys.argv[1]
    from kubernetes import client

    with tempfile.TemporaryDirectory() as tmp:
        proc, grpc_addr, http = start_server(binary, os.path.join(tmp, "data"))
        try:
            cfg = client.Configuration()
            cfg.host = http
            api_client = client.ApiClient(cfg)
            core = client.CoreV1Api(api_client)
            version = client.VersionApi(api_client).get_code()
            assert version.major and version.git_version, version
            configmaps(core)
            watching(core)
            custom_objects(api_client)
            expired(core, binary, grpc_addr)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print("k8s client: all checks passed")


if __name__ == "__main__":
    main()
