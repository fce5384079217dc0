"""Case files about what a schema does to writes: defaulting, pruning, ratcheting, CEL rules."""

import copy

from .blocks import CRDS, File, crd, obj_schema, root, version, x_preserve


# --- defaulting ----------------------------------------------------------------------------------

def defaulting():
    f = File("defaulting", "Defaults on create, update, merge/JSON patch and server-side apply; in nested "
                           "objects, array items and additionalProperties; on read of objects stored before "
                           "a default was added.")
    g = f.group
    spec = obj_schema({
        "replicas": {"type": "integer", "default": 1}, "mode": {"type": "string", "default": "fast"},
        "nested": obj_schema({"a": {"type": "string", "default": "x"}, "b": {"type": "integer"}}, default={}),
        "nodefault": obj_schema({"a": {"type": "string", "default": "y"}}),
        "items": {"type": "array", "items": obj_schema({"name": {"type": "string"},
                                                         "port": {"type": "integer", "default": 80}})},
        "labels": obj_schema(additionalProperties=obj_schema({"v": {"type": "string", "default": "dv"}})),
        "maybe": {"type": "string", "nullable": True, "default": "nd"},
        "list": {"type": "array", "items": {"type": "string"}, "default": ["a", "b"]},
    })
    status = obj_schema({"phase": {"type": "string", "default": "Pending"}})
    schema = root(spec, status)
    body = crd(g, versions=[version("v1", schema, subresources={"status": {}})])
    f.create_crd(body)
    f.post("create-empty-spec", "d1", {})
    f.post("create-no-spec", "d2")
    f.post("create-explicit-values", "d3", {"replicas": 3, "mode": "slow", "nested": {"a": "z"}, "list": []})
    f.post("create-nested-present-without-field", "d4", {"nodefault": {}, "nested": {"b": 2}})
    f.post("create-array-items", "d5", {"items": [{"name": "a"}, {"name": "b", "port": 8080}]})
    f.post("create-additional-properties", "d6", {"labels": {"k1": {}, "k2": {"v": "set"}}})
    f.post("create-null-nullable", "d7", {"maybe": None})
    f.post("create-null-not-nullable", "d8", {"mode": None, "replicas": None})
    f.post("create-with-status", "d9", {}, status={"phase": "Running"})
    f.post("create-dry-run", "d10", {}, query={"dryRun": "All"})
    p = f.path(name="d3")
    f.add({"method": "GET", "path": p, "id": "d3"}, None)
    f.add({"method": "PUT", "path": p, "body": {"apiVersion": f"{g}/v1", "kind": "Widget",
                                                "metadata": {"name": "d3",
                                                             "resourceVersion": "$(d3.metadata.resourceVersion)"},
                                                "spec": {"mode": "slow"}}}, "update-put-drops-fields")
    f.add({"method": "PATCH", "patch": "merge", "path": p, "body": {"spec": {"replicas": None}}},
          "merge-patch-null-redefaults")
    f.add({"method": "PATCH", "patch": "merge", "path": p, "body": {"spec": {"mode": "slow", "nested": {"b": 7}}}},
          "merge-patch-keeps-values")
    f.add({"method": "PATCH", "patch": "json", "path": p, "body": [{"op": "remove", "path": "/spec/mode"}]},
          "json-patch-remove-redefaults")
    f.add({"method": "PATCH", "patch": "apply", "path": f.path(name="d11"), "query": {"fieldManager": "suite"},
           "body": {"apiVersion": f"{g}/v1", "kind": "Widget", "metadata": {"name": "d11"},
                    "spec": {"items": [{"name": "x"}]}}}, "apply-create")
    f.add({"method": "PATCH", "patch": "apply", "path": f.path(name="d11"), "query": {"fieldManager": "suite"},
           "body": {"apiVersion": f"{g}/v1", "kind": "Widget", "metadata": {"name": "d11"},
                    "spec": {"replicas": 5}}}, "apply-update")
    f.add({"method": "GET", "path": f.path(name="d9"), "id": "d9"}, None)
    f.add({"method": "PUT", "path": f.path(name="d9", sub="status"), "body": {
        "apiVersion": f"{g}/v1", "kind": "Widget",
        "metadata": {"name": "d9", "resourceVersion": "$(d9.metadata.resourceVersion)"}, "status": {}}},
        "status-put-defaults")
    # add a default after objects exist: read defaulting
    schema2 = copy.deepcopy(schema)
    schema2["properties"]["spec"]["properties"]["added"] = {"type": "string", "default": "late"}
    f.add({"method": "GET", "path": f"{CRDS}/widgets.{g}", "id": "crd"}, None)
    body2 = copy.deepcopy(body)
    body2["metadata"]["resourceVersion"] = "$(crd.metadata.resourceVersion)"
    body2["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema2
    f.add({"method": "PUT", "path": f"{CRDS}/widgets.{g}", "body": body2}, "crd-update-add-default")
    f.steps.append({"wait": f.path(), "method": "POST", "query": {"dryRun": "All"}, "body": f.obj("probe", {}),
                    "until": {"status": 201, "path": "spec.added", "value": "late"}})
    f.add({"method": "GET", "path": f.path(name="d1")}, "read-defaults-old-object")
    f.add({"method": "GET", "path": f.path()}, "list-defaults-old-objects")
    f.add({"method": "GET", "path": f.path(name="d2")}, "read-no-spec-old-object")
    f.delete_crd(f"widgets.{g}", wait=False)


# --- pruning and field validation ----------------------------------------------------------------

def pruning():
    f = File("pruning", "Pruning of unknown fields and fieldValidation Strict/Warn/Ignore; preserved subtrees; "
                        "embedded resources' metadata.")
    g = f.group
    spec = obj_schema({
        "a": {"type": "string"}, "nested": obj_schema({"b": {"type": "string"}}),
        "free": obj_schema(**x_preserve()),
        "emb": obj_schema(**{"x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}),
        "half": obj_schema({"k": {"type": "string"}}, **x_preserve()),
        "list": {"type": "array", "items": obj_schema({"n": {"type": "string"}})},
        "dict": obj_schema(additionalProperties=obj_schema({"v": {"type": "string"}})),
        "later": {"type": "string"},
    })
    body = crd(g, versions=[version("v1", root(spec, obj_schema({"s": {"type": "string"}})),
                                    subresources={"status": {}})])
    f.create_crd(body)
    unknown = {"a": "x", "z": 1}
    for mode in ["Strict", "Warn", "Ignore"]:
        f.post(f"unknown-spec-field-{mode.lower()}", f"p-{mode.lower()}", unknown, query={"fieldValidation": mode})
    f.post("unknown-spec-field-default", "p-default", unknown)
    f.post("unknown-nested-field-strict", "p-n1", {"nested": {"b": "x", "c": 2}}, query={"fieldValidation": "Strict"})
    f.post("unknown-nested-field-warn", "p-n2", {"nested": {"b": "x", "c": 2, "d": 3}})
    f.post("unknown-top-level-field-strict", "p-t1", {"a": "x"}, query={"fieldValidation": "Strict"}, extra=1)
    f.post("unknown-top-level-field-warn", "p-t2", {"a": "x"}, extra=1)
    f.add({"method": "POST", "path": f.path(), "query": {"fieldValidation": "Strict"},
           "body": {"apiVersion": f"{g}/v1", "kind": "Widget", "metadata": {"name": "p-m1", "bogus": 1}}},
          "unknown-metadata-field-strict")
    f.post("preserved-subtree-kept", "p-f1", {"free": {"anything": {"x": 1}}, "half": {"k": "v", "other": 2}},
           query={"fieldValidation": "Strict"})
    f.post("embedded-metadata-pruned", "p-e1", {"emb": {"apiVersion": "v1", "kind": "ConfigMap",
                                                         "metadata": {"name": "x", "bogus": 1}, "data": {"k": "v"}}})
    f.post("embedded-metadata-strict", "p-e2", {"emb": {"apiVersion": "v1", "kind": "ConfigMap",
                                                         "metadata": {"name": "x", "bogus": 1}}},
           query={"fieldValidation": "Strict"})
    f.add({"method": "POST", "path": f.path(), "query": {"fieldValidation": "Strict"},
           "raw": '{"apiVersion":"' + g + '/v1","kind":"Widget","metadata":{"name":"p-d1"},"spec":{"a":"x","a":"y"}}'},
          "duplicate-field-strict")
    f.add({"method": "POST", "path": f.path(),
           "raw": '{"apiVersion":"' + g + '/v1","kind":"Widget","metadata":{"name":"p-d2"},"spec":{"a":"x","a":"y"}}'},
          "duplicate-field-warn")
    p = f.path(name="p-f1")
    f.add({"method": "PATCH", "patch": "merge", "path": p, "query": {"fieldValidation": "Strict"},
           "body": {"spec": {"zz": 1}}}, "merge-patch-unknown-strict")
    f.add({"method": "PATCH", "patch": "merge", "path": p, "body": {"spec": {"zz": 1}}}, "merge-patch-unknown-warn")
    f.add({"method": "PATCH", "patch": "apply", "path": f.path(name="p-ap"), "query": {"fieldManager": "suite"},
           "body": {"apiVersion": f"{g}/v1", "kind": "Widget", "metadata": {"name": "p-ap"},
                    "spec": {"a": "x", "zz": 1}}}, "apply-unknown-default")
    f.add({"method": "PATCH", "patch": "apply", "path": f.path(name="p-ap2"),
           "query": {"fieldManager": "suite", "fieldValidation": "Ignore"},
           "body": {"apiVersion": f"{g}/v1", "kind": "Widget", "metadata": {"name": "p-ap2"},
                    "spec": {"a": "x", "zz": 1}}}, "apply-unknown-ignore")
    f.add({"method": "GET", "path": f.path(name="p-f1"), "id": "pf1"}, None)
    f.add({"method": "PUT", "path": f.path(name="p-f1", sub="status"), "query": {"fieldValidation": "Strict"},
           "body": {"apiVersion": f"{g}/v1", "kind": "Widget",
                    "metadata": {"name": "p-f1", "resourceVersion": "$(pf1.metadata.resourceVersion)"},
                    "status": {"s": "ok", "t": 1}}}, "status-unknown-strict")
    f.add({"method": "PUT", "path": f.path(name="p-f1", sub="status"),
           "body": {"apiVersion": f"{g}/v1", "kind": "Widget",
                    "metadata": {"name": "p-f1", "resourceVersion": "$(pf1.metadata.resourceVersion)"},
                    "status": {"s": "ok", "t": 1}}}, "status-unknown-warn")
    f.add({"method": "GET", "path": f.path(name="p-default")}, "read-pruned")
    f.post("unknown-in-list-items-warn", "p-l1", {"list": [{"n": "a", "x": 1}, {"y": 2}]})
    f.post("unknown-in-additional-properties-strict", "p-l2", {"dict": {"k": {"v": "a", "x": 1}}},
           query={"fieldValidation": "Strict"})
    f.post("unknown-in-additional-properties-warn", "p-l3", {"dict": {"k": {"v": "a", "x": 1}}})
    # a field the schema loses later: pruned when read
    f.post("create-before-field-removed", "p-r1", {"a": "x", "later": "kept-for-now"})
    f.add({"method": "GET", "path": f"{CRDS}/widgets.{g}", "id": "crd"}, None)
    b2 = copy.deepcopy(body)
    b2["metadata"]["resourceVersion"] = "$(crd.metadata.resourceVersion)"
    del b2["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["later"]
    f.add({"method": "PUT", "path": f"{CRDS}/widgets.{g}", "body": b2}, "crd-update-remove-field")
    f.steps.append({"wait": f.path(), "method": "POST", "query": {"dryRun": "All", "fieldValidation": "Strict"},
                    "body": f.obj("probe", {"later": "x"}), "until": 400})
    f.add({"method": "GET", "path": f.path(name="p-r1")}, "read-after-field-removed")
    f.add({"method": "GET", "path": f.path(), "query": {"fieldSelector": "metadata.name=p-r1"}},
          "list-after-field-removed")
    f.add({"method": "PATCH", "patch": "merge", "path": f.path(name="p-r1"), "body": {"spec": {"a": "y"}}},
          "update-after-field-removed")
    f.delete_crd(f"widgets.{g}", wait=False)


# --- ratcheting ----------------------------------------------------------------------------------

def ratcheting():
    f = File("ratcheting", "Validation ratcheting: after the schema is tightened, an update that leaves an "
                           "invalid stored value unchanged passes; changing it fails.")
    g = f.group
    loose = obj_schema({"size": {"type": "integer"}, "name": {"type": "string"}, "other": {"type": "string"},
                        "tags": {"type": "array", "items": {"type": "string"}}, "mode": {"type": "string"},
                        "nested": obj_schema({"n": {"type": "integer"}}), "ip": {"type": "string"},
                        "word": {"type": "string", "maxLength": 20},
                        "dupes": {"type": "array", "items": {"type": "string"}},
                        "neg": {"type": "string"}})
    body = crd(g, versions=[version("v1", root(loose))])
    f.create_crd(body)
    f.post("create-before-tightening", "r1", {"size": 50, "name": "toolongname", "tags": ["a", "b", "c"],
                                              "mode": "b", "nested": {"n": 50}, "ip": "not-an-ip",
                                              "word": "UPPER"})
    f.post("create-duplicates-before-set", "r4", {"dupes": ["a", "a"]})
    f.post("create-before-not", "r5", {"neg": "bad-value"})
    f.post(None, "r2", {"size": 50, "name": "toolongname"})
    tight = copy.deepcopy(loose)
    p = tight["properties"]
    p["size"]["maximum"] = 10
    p["name"]["maxLength"] = 4
    p["tags"]["maxItems"] = 2
    p["mode"]["enum"] = ["a"]
    p["nested"]["properties"]["n"]["maximum"] = 10
    p["ip"]["format"] = "ipv4"
    p["word"]["x-kubernetes-validations"] = [{"rule": "self == self.lowerAscii()", "message": "lower case only"}]
    p["dupes"]["x-kubernetes-list-type"] = "set"
    p["neg"]["not"] = {"pattern": "^bad"}
    tight["x-kubernetes-validations"] = [{"rule": "!has(self.other) || self.other != 'forbidden'",
                                          "message": "other is forbidden"}]
    f.add({"method": "GET", "path": f"{CRDS}/widgets.{g}", "id": "crd"}, None)
    body2 = copy.deepcopy(body)
    body2["metadata"]["resourceVersion"] = "$(crd.metadata.resourceVersion)"
    body2["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = root(tight)
    f.add({"method": "PUT", "path": f"{CRDS}/widgets.{g}", "body": body2}, "crd-tighten-schema")
    f.steps.append({"wait": f.path(), "method": "POST", "query": {"dryRun": "All"},
                    "body": f.obj("probe", {"size": 50}), "until": 422})
    r1 = f.path(name="r1")
    m = lambda case, spec: f.add({"method": "PATCH", "patch": "merge", "path": r1, "body": {"spec": spec}}, case)  # noqa: E731
    f.post("create-invalid-after-tightening", "r3", {"size": 50, "name": "toolongname"})
    m("unchanged-invalid-values-other-field-changes", {"other": "x"})
    f.add({"method": "PATCH", "patch": "merge", "path": r1, "body": {"metadata": {"labels": {"a": "b"}}}},
          "metadata-only-change")
    m("change-invalid-size-still-invalid", {"size": 60})
    m("change-invalid-name-still-invalid", {"name": "alsotoolong"})
    m("change-tags-still-too-many", {"tags": ["a", "b", "c", "d"]})
    m("change-mode-still-invalid", {"mode": "c"})
    m("change-nested-still-invalid", {"nested": {"n": 60}})
    m("change-ip-still-invalid", {"ip": "still-not-an-ip"})
    m("cel-rule-newly-failing", {"other": "forbidden"})
    m("change-word-still-invalid-cel", {"word": "STILL"})
    m("change-word-to-valid-cel", {"word": "lower"})
    f.add({"method": "PATCH", "patch": "merge", "path": f.path(name="r4"), "body": {"spec": {"other": "x"}}},
          "list-type-set-added-unchanged")
    f.add({"method": "PATCH", "patch": "merge", "path": f.path(name="r5"), "body": {"spec": {"other": "x"}}},
          "not-added-unchanged")
    m("change-size-to-valid", {"size": 5})
    f.add({"method": "GET", "path": f.path(name="r2"), "id": "r2"}, None)
    f.add({"method": "PUT", "path": f.path(name="r2"), "body": {"apiVersion": f"{g}/v1", "kind": "Widget",
                                                                 "metadata": {"name": "r2", "resourceVersion":
                                                                              "$(r2.metadata.resourceVersion)"},
                                                                 "spec": {"size": 50, "name": "toolongname",
                                                                          "other": "y"}}},
          "put-unchanged-invalid-values")
    f.add({"method": "PATCH", "patch": "json", "path": f.path(name="r2"),
           "body": [{"op": "replace", "path": "/spec/size", "value": 51}]}, "json-patch-changed-invalid")
    f.delete_crd(f"widgets.{g}", wait=False)


# --- CEL -----------------------------------------------------------------------------------------

def cel():
    f = File("cel", "x-kubernetes-validations: rules, message, messageExpression, reason, fieldPath, transition "
                    "rules (oldSelf, optionalOldSelf), compile errors and cost limits at CRD creation, libraries.")
    g = f.group
    spec = obj_schema({
        "minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
        "replicas": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "self < 100", "messageExpression": "self >= 1000 ? 'replicas far above 100' : 'replicas above 100'"}]},
        "name": {"type": "string", "maxLength": 20},
        "immutable": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf",
                                                                      "message": "immutable is immutable"}]},
        "counter": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": True,
             "message": "counter may not decrease"}]},
        "url": {"type": "string", "maxLength": 100, "x-kubernetes-validations": [
            {"rule": "isURL(self) && url(self).getScheme() == 'https'", "message": "https URL required"}]},
        "ip": {"type": "string", "maxLength": 50, "x-kubernetes-validations": [
            {"rule": "isIP(self) && ip(self).family() == 4", "message": "IPv4 required"}]},
        "cidr": {"type": "string", "maxLength": 50, "x-kubernetes-validations": [{"rule": "isCIDR(self)"}]},
        "mem": {"type": "string", "maxLength": 20, "x-kubernetes-validations": [
            {"rule": "isQuantity(self) && quantity(self).isLessThan(quantity('1Gi'))",
             "message": "below 1Gi"}]},
        "word": {"type": "string", "maxLength": 20, "x-kubernetes-validations": [
            {"rule": "self.matches('^[a-z]+$') && self.lowerAscii() == self", "reason": "FieldValueForbidden"}]},
        "dns": {"type": "string", "maxLength": 70, "x-kubernetes-validations": [
            {"rule": "!format.dns1123Label().validate(self).hasValue()", "message": "not a DNS label"}]},
        "ports": {"type": "array", "maxItems": 10, "items": {"type": "integer"}, "x-kubernetes-validations": [
            {"rule": "self.all(p, p > 0 && p < 65536)", "message": "ports out of range"},
            {"rule": "size(self) == 0 || self.exists(p, p == 80)", "message": "port 80 required",
             "reason": "FieldValueRequired"}]},
        "csv": {"type": "string", "maxLength": 50, "x-kubernetes-validations": [
            {"rule": "self.split(',').all(x, x.trim().size() > 0)", "message": "empty item in list"}]},
        "opt": {"type": "string", "maxLength": 10},
        "items": {"type": "array", "maxItems": 10, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": obj_schema({"name": {"type": "string", "maxLength": 10},
                                       "value": {"type": "integer", "x-kubernetes-validations": [
                                           {"rule": "self == oldSelf", "message": "item value is immutable"}]}},
                                      required=["name"])},
        "labels": obj_schema(additionalProperties={"type": "string", "maxLength": 10}, maxProperties=5,
                             **{"x-kubernetes-validations": [{"rule": "'app' in self",
                                                              "message": "app label required"}]}),
    }, **{"x-kubernetes-validations": [
        {"rule": "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",
         "message": "minReplicas must not exceed maxReplicas"},
        {"rule": "!has(self.name) || self.name != 'forbidden'", "fieldPath": ".name", "reason": "FieldValueInvalid",
         "message": "name may not be forbidden"},
        {"rule": "!has(self.minReplicas) || has(self.maxReplicas)", "fieldPath": ".maxReplicas",
         "reason": "FieldValueRequired", "message": "maxReplicas is required with minReplicas"},
        {"rule": "self.?opt.orValue('') != 'bad'", "message": "opt may not be bad"}]})
    top = root(spec)
    top["x-kubernetes-validations"] = [{"rule": "self.metadata.name != 'forbidden-name'",
                                        "message": "this name is reserved"}]
    f.create_crd(crd(g, versions=[version("v1", top)]))
    cases = [
        ("passing-rules", {"minReplicas": 1, "maxReplicas": 3, "replicas": 2, "url": "https://x.example.com/p",
                           "ip": "10.0.0.1", "cidr": "10.0.0.0/8", "mem": "500Mi", "word": "abc",
                           "dns": "abc-1", "ports": [80, 443], "labels": {"app": "x"}}),
        ("object-rule-fails", {"minReplicas": 5, "maxReplicas": 3}),
        ("message-expression", {"replicas": 150}),
        ("field-path-and-reason", {"name": "forbidden"}),
        ("url-library", {"url": "http://x.example.com"}), ("url-not-url", {"url": "::not a url"}),
        ("ip-library-v6", {"ip": "fe80::1"}), ("ip-library-not-ip", {"ip": "abc"}),
        ("cidr-default-message", {"cidr": "10.0.0.0/99"}), ("quantity-library", {"mem": "2Gi"}),
        ("regex-and-reason", {"word": "ABC"}), ("format-library", {"dns": "Not_A_Label"}),
        ("list-all", {"ports": [80, 70000]}), ("list-exists-reason", {"ports": [443]}),
        ("map-rule", {"labels": {"team": "a"}}),
        ("several-rules-fail", {"minReplicas": 5, "maxReplicas": 3, "replicas": 200, "word": "A1"}),
        ("has-macro-field-path-required", {"minReplicas": 1}), ("string-split-trim", {"csv": "a, ,b"}),
        ("optional-field-access", {"opt": "bad"}),
    ]
    for i, (case, s) in enumerate(cases):
        f.post(case, f"c{i}", s)
    f.post("transition-create", "t1", {"immutable": "a", "counter": 5})
    t1 = f.path(name="t1")
    mp = lambda case, spec: f.add({"method": "PATCH", "patch": "merge", "path": t1, "body": {"spec": spec}}, case)  # noqa: E731
    mp("transition-immutable-changed", {"immutable": "b"})
    mp("transition-immutable-unchanged", {"immutable": "a", "replicas": 1})
    mp("optional-old-self-decrease", {"counter": 4})
    mp("optional-old-self-increase", {"counter": 6})
    f.post("transition-rule-on-create-skipped", "t2", {"immutable": "x"})
    mp("transition-field-removed", {"immutable": None})
    f.post("root-rule-metadata-name", "forbidden-name", {})
    f.post("list-map-create", "t3", {"items": [{"name": "a", "value": 1}]})
    t3 = f.path(name="t3")
    f.add({"method": "PATCH", "patch": "merge", "path": t3, "body": {"spec": {"items": [{"name": "a", "value": 2}]}}},
          "list-map-item-transition-changed")
    f.add({"method": "PATCH", "patch": "merge", "path": t3, "body": {"spec": {"items": [
        {"name": "a", "value": 1}, {"name": "b", "value": 9}]}}}, "list-map-item-added")
    f.add({"method": "PATCH", "patch": "json", "path": t3, "body": [
        {"op": "replace", "path": "/spec/items/1/value", "value": 10}]}, "list-map-item-transition-json-patch")

    # CRD-creation errors: each its own CRD name in the same group
    def bad(case, s, plural):
        f.invalid_crd(case, crd(g, plural=plural, kind=plural.capitalize()[:-1],
                                versions=[version("v1", root(s))]))
    rule = lambda r, **kw: {"x-kubernetes-validations": [dict({"rule": r}, **kw)]}  # noqa: E731
    bad("compile-error-syntax", obj_schema({"a": {"type": "string"}}, **rule("self.a ==")), "errsyntaxes")
    bad("compile-error-no-such-field", obj_schema({"a": {"type": "string"}}, **rule("self.nope == 'x'")), "errfields")
    bad("compile-error-not-bool", obj_schema({"a": {"type": "string"}}, **rule("self.a")), "errbools")
    bad("message-expression-compile-error", obj_schema({"a": {"type": "string"}},
                                                      **rule("true", messageExpression="self.a +")), "errmsgs")
    bad("message-expression-not-string", obj_schema({"a": {"type": "string"}},
                                                    **rule("true", messageExpression="1")), "errmsgtypes")
    bad("reason-invalid", obj_schema({"a": {"type": "string"}}, **rule("true", reason="Bogus")), "errreasons")
    bad("field-path-invalid", obj_schema({"a": {"type": "string"}}, **rule("true", fieldPath=".nope")), "errpaths")
    bad("message-with-newline", obj_schema({"a": {"type": "string"}}, **rule("true", message="a\nb")), "errnewlines")
    bad("message-expression-cost", obj_schema({"n": {"type": "integer", **rule(
        "self < 100", messageExpression="'n ' + string(self) + ' must be below 100'")}}), "errmsgcosts")
    bad("rule-empty", obj_schema({"a": {"type": "string"}}, **rule("")), "errempties")
    bad("optional-old-self-without-old-self", obj_schema({"a": {"type": "string"}},
                                                         **rule("true", optionalOldSelf=True)), "erroptionals")
    bad("old-self-in-atomic-list-item", obj_schema({"l": {"type": "array", "maxItems": 5, "items": obj_schema(
        {"a": {"type": "string", "maxLength": 5}}, **rule("self == oldSelf"))}}), "erratomics")
    bad("cost-limit-unbounded-list", obj_schema({"l": {"type": "array", "items": {"type": "string"},
                                                       **rule("self.all(x, self.all(y, x.matches(y)))")}}),
        "errcosts")
    bad("cost-limit-bounded-list-ok", obj_schema({"l": {"type": "array", "maxItems": 5, "items": {
        "type": "string", "maxLength": 5}, **rule("self.all(x, self.all(y, x.matches(y)))")}}), "okcosts")
    for n in ["widgets", "okcosts"]:
        f.delete_crd(f"{n}.{g}", wait=False)
