"""Case files about the CRD object itself: its validation, structural schemas, its status."""

from .blocks import CRDS, File, crd, establish_wait, obj_schema, root, unique, version, x_preserve


# --- CRD validation ------------------------------------------------------------------------------

def crd_validation():
    f = File("crdvalidation", "CRD create and update validation: names, group, scope, versions, schema "
                              "presence, subresources, printer columns, selectable fields, conversion.")
    g = f.group
    current = {}

    def mod(fn, **kw):
        b = crd(g, **dict(unique(current["case"]), **kw))
        fn(b)
        return b

    def invalid(case, make):
        current["case"] = case
        f.invalid_crd(case, make())  # noqa

    def spec_set(key, value):
        return lambda b: b["spec"].__setitem__(key, value)

    def names_set(key, value):
        def fn(b):
            if value is None:
                b["spec"]["names"].pop(key, None)
            else:
                b["spec"]["names"][key] = value
        return fn

    schema_sr = root(obj_schema({"replicas": {"type": "integer"}, "color": {"type": "string"},
                                 "obj": obj_schema({"a": {"type": "string"}})}),
                     obj_schema({"replicas": {"type": "integer"}, "selector": {"type": "string"}}))

    invalid("name-not-plural-group", lambda: mod(lambda b: b["metadata"].__setitem__("name", "other." + g)))
    invalid("plural-missing", lambda: mod(names_set("plural", None), name=f"widgets.{g}"))
    invalid("plural-uppercase", lambda: crd(g, plural="Widgets", name=f"Widgets.{g}"))
    invalid("plural-with-dot", lambda: crd(g, plural="wid.gets", name=f"wid.gets.{g}"))
    invalid("kind-missing", lambda: mod(names_set("kind", None)))
    invalid("kind-with-space", lambda: mod(names_set("kind", "Wid get")))
    invalid("listkind-equals-kind", lambda: mod(lambda b: b["spec"]["names"].__setitem__(
        "listKind", b["spec"]["names"]["kind"])))
    invalid("listkind-invalid", lambda: mod(names_set("listKind", "widget list")))
    invalid("singular-uppercase", lambda: mod(names_set("singular", "Widget")))
    invalid("shortname-invalid", lambda: mod(names_set("shortNames", ["w d"])))
    invalid("category-invalid", lambda: mod(names_set("categories", ["All Things"])))
    invalid("group-without-dot", lambda: crd("crdvalidation", name="widgets.crdvalidation"))
    invalid("group-invalid", lambda: crd("Crd_Val.example.com", name="widgets.Crd_Val.example.com"))
    invalid("group-missing", lambda: mod(lambda b: b["spec"].pop("group")))
    invalid("scope-invalid", lambda: mod(spec_set("scope", "Global")))
    invalid("scope-missing", lambda: mod(lambda b: b["spec"].pop("scope")))
    invalid("versions-empty", lambda: mod(spec_set("versions", [])))
    invalid("no-storage-version", lambda: mod(spec_set("versions", [
        version("v1", root(obj_schema(**x_preserve())), storage=False),
        version("v2", root(obj_schema(**x_preserve())), storage=False)])))
    invalid("two-storage-versions", lambda: mod(spec_set("versions", [
        version("v1", root(obj_schema(**x_preserve()))), version("v2", root(obj_schema(**x_preserve())))])))
    invalid("no-served-version", lambda: mod(spec_set("versions", [
        version("v1", root(obj_schema(**x_preserve())), served=False)])))
    invalid("duplicate-version-names", lambda: mod(spec_set("versions", [
        version("v1", root(obj_schema(**x_preserve()))), version("v1", root(obj_schema(**x_preserve())),
                                                                 storage=False)])))
    invalid("version-name-uppercase", lambda: mod(spec_set("versions", [version("V1", root(obj_schema(**x_preserve())))])))
    invalid("version-name-dotted", lambda: mod(spec_set("versions", [version("1.0", root(obj_schema(**x_preserve())))])))
    invalid("schema-missing", lambda: mod(spec_set("versions", [version("v1")])))
    invalid("schema-root-not-object", lambda: mod(spec_set("versions", [version("v1", {"type": "string"})])))
    invalid("preserve-unknown-fields-true", lambda: mod(spec_set("preserveUnknownFields", True)))
    invalid("metadata-schema-extra-property", lambda: mod(spec_set("versions", [version("v1", root(
        obj_schema(**x_preserve()), metadata=obj_schema({"labels": obj_schema()})))])))
    invalid("deprecation-warning-not-deprecated", lambda: mod(spec_set("versions", [
        version("v1", root(obj_schema(**x_preserve())), deprecationWarning="old")])))
    invalid("metadata-name-invalid", lambda: crd(g, name="Widgets_Bad"))
    # subresources
    sub = lambda scale, **kw: mod(spec_set("versions", [version("v1", schema_sr, subresources={"status": {},  # noqa: E731
                                                                                                  "scale": scale})]))
    invalid("scale-spec-path-not-spec", lambda: sub({"specReplicasPath": ".status.replicas",
                                                   "statusReplicasPath": ".status.replicas"}))
    invalid("scale-spec-path-missing", lambda: sub({"statusReplicasPath": ".status.replicas"}))
    invalid("scale-status-path-not-status", lambda: sub({"specReplicasPath": ".spec.replicas",
                                                       "statusReplicasPath": ".spec.replicas"}))
    invalid("scale-path-not-json-path", lambda: sub({"specReplicasPath": "spec.replicas",
                                                   "statusReplicasPath": ".status.replicas"}))
    invalid("scale-path-wrong-type", lambda: sub({"specReplicasPath": ".spec.color",
                                                "statusReplicasPath": ".status.replicas"}))
    invalid("scale-path-unknown-field", lambda: sub({"specReplicasPath": ".spec.nothere",
                                                   "statusReplicasPath": ".status.replicas"}))
    invalid("scale-selector-path-not-status-or-spec", lambda: sub({"specReplicasPath": ".spec.replicas",
                                                                 "statusReplicasPath": ".status.replicas",
                                                                 "labelSelectorPath": ".metadata.labels"}))
    invalid("scale-path-array-index", lambda: sub({"specReplicasPath": ".spec.replicas[0]",
                                                 "statusReplicasPath": ".status.replicas"}))
    # printer columns
    cols = lambda *c: mod(spec_set("versions", [version("v1", schema_sr, additionalPrinterColumns=list(c))]))  # noqa: E731
    invalid("printer-column-bad-jsonpath", lambda: cols({"name": "R", "type": "integer", "jsonPath": ".spec.replicas["}))
    invalid("printer-column-jsonpath-no-dot", lambda: cols({"name": "R", "type": "integer", "jsonPath": "spec.replicas"}))
    invalid("printer-column-bad-type", lambda: cols({"name": "R", "type": "float", "jsonPath": ".spec.replicas"}))
    invalid("printer-column-bad-format", lambda: cols({"name": "R", "type": "integer", "format": "money",
                                                     "jsonPath": ".spec.replicas"}))
    invalid("printer-column-missing-name", lambda: cols({"type": "integer", "jsonPath": ".spec.replicas"}))
    invalid("printer-column-negative-priority", lambda: cols({"name": "R", "type": "integer", "priority": -1,
                                                            "jsonPath": ".spec.replicas"}))
    invalid("printer-column-missing-jsonpath", lambda: cols({"name": "R", "type": "integer"}))
    # selectable fields
    sel = lambda *p: mod(spec_set("versions", [version("v1", schema_sr, selectableFields=[{"jsonPath": x} for x in p])]))  # noqa: E731
    invalid("selectable-field-unknown", lambda: sel(".spec.nothere"))
    invalid("selectable-field-object", lambda: sel(".spec.obj"))
    invalid("selectable-field-no-dot", lambda: sel("spec.color"))
    invalid("selectable-field-duplicate", lambda: sel(".spec.color", ".spec.color"))
    invalid("selectable-field-metadata", lambda: sel(".metadata.name"))
    invalid("selectable-field-too-many", lambda: sel(*[f".spec.f{i}" for i in range(9)]))
    # conversion
    invalid("conversion-webhook-missing-config", lambda: mod(spec_set("conversion", {"strategy": "Webhook"})))
    invalid("conversion-strategy-invalid", lambda: mod(spec_set("conversion", {"strategy": "Magic"})))
    invalid("conversion-none-with-webhook", lambda: mod(spec_set("conversion", {"strategy": "None", "webhook": {
        "conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://127.0.0.1:1/convert"}}})))
    invalid("conversion-webhook-bad-review-version", lambda: mod(spec_set("conversion", {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v9"], "clientConfig": {"url": "https://127.0.0.1:1/convert"}}})))
    invalid("conversion-webhook-http-url", lambda: mod(spec_set("conversion", {"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"], "clientConfig": {"url": "http://127.0.0.1:1/convert"}}})))

    # a valid CRD, then invalid updates
    base = crd(g, names={"listKind": None, "shortNames": ["wv"]}, versions=[version("v1", schema_sr)])
    f.create_crd(base, "create-valid-listkind-defaulted")
    name = base["metadata"]["name"]
    for case, patch in [("update-scope-immutable", {"scope": "Cluster"}),
                        ("update-group-immutable", {"group": "other.crd.example.com"}),
                        ("update-drop-stored-version", {"versions": [version("v2", schema_sr)]}),
                        ("update-plural-changed", {"names": {"plural": "gizmos"}}),
                        ("update-kind-changed", {"names": {"kind": "Gizmo"}}),
                        ("update-two-storage", {"versions": [version("v1", schema_sr), version("v2", schema_sr)]}),
                        ("update-invalid-schema", {"versions": [version("v1", root({"properties": {}}))]})]:
        f.add({"method": "PATCH", "patch": "merge", "path": f"{CRDS}/{name}", "body": {"spec": patch}}, case)
    f.add({"method": "PATCH", "patch": "merge", "path": f"{CRDS}/{name}",
           "body": {"spec": {"names": {"kind": ""}}}}, "update-kind-emptied")
    f.add({"method": "PATCH", "patch": "merge", "path": f"{CRDS}/{name}",
           "body": {"spec": {"names": {"shortNames": ["wv", "other"]}}}}, "update-shortnames-valid")
    f.delete_crd(name)


def crd_structural():
    f = File("structural", "Structural schema rules and schema-level checks of a CRD: types, "
                           "additionalProperties, x-kubernetes-* extensions, defaults, unsupported keywords.")
    g = f.group

    def s(case, spec_schema, **root_extra):
        f.invalid_crd(case, crd(g, versions=[version("v1", root(spec_schema, **root_extra))], **unique(case)))

    s("property-type-missing", {"properties": {"a": {"type": "string"}}})
    s("leaf-type-missing", obj_schema({"a": {"description": "no type"}}))
    s("type-invalid", obj_schema({"a": {"type": "str"}}))
    s("additional-properties-with-properties", obj_schema({"a": {"type": "string"}},
                                                          additionalProperties={"type": "string"}))
    s("preserve-unknown-false", obj_schema({"a": {"type": "string"}}, **{"x-kubernetes-preserve-unknown-fields": False}))
    s("int-or-string-with-type", obj_schema({"a": {"type": "string", "x-kubernetes-int-or-string": True}}))
    s("embedded-resource-not-object", obj_schema({"a": {"type": "string", "x-kubernetes-embedded-resource": True}}))
    s("embedded-resource-no-properties", obj_schema({"a": {"type": "object", "x-kubernetes-embedded-resource": True}}))
    s("array-items-missing", obj_schema({"a": {"type": "array"}}))
    s("ref-forbidden", obj_schema({"a": {"$ref": "#/definitions/x"}}))
    s("unique-items-true", obj_schema({"a": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}))
    s("list-type-map-without-keys", obj_schema({"a": {"type": "array", "x-kubernetes-list-type": "map",
                                                      "items": obj_schema({"k": {"type": "string"}})}}))
    s("list-type-set-object-items", obj_schema({"a": {"type": "array", "x-kubernetes-list-type": "set",
                                                      "items": obj_schema({"k": {"type": "string"}})}}))
    s("list-type-invalid", obj_schema({"a": {"type": "array", "x-kubernetes-list-type": "bag",
                                             "items": {"type": "string"}}}))
    s("list-map-keys-on-set", obj_schema({"a": {"type": "array", "x-kubernetes-list-type": "set",
                                                "x-kubernetes-list-map-keys": ["k"], "items": {"type": "string"}}}))
    s("list-map-key-not-scalar", obj_schema({"a": {"type": "array", "x-kubernetes-list-type": "map",
                                                   "x-kubernetes-list-map-keys": ["k"],
                                                   "items": obj_schema({"k": obj_schema()}, required=["k"])}}))
    s("map-type-on-string", obj_schema({"a": {"type": "string", "x-kubernetes-map-type": "granular"}}))
    s("anyof-with-type", obj_schema({"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}))
    s("anyof-additional-properties", obj_schema({"a": {"type": "object", "anyOf": [
        {"properties": {"b": {"type": "string"}}}]}}))
    s("pattern-invalid", obj_schema({"a": {"type": "string", "pattern": "["}}))
    s("default-wrong-type", obj_schema({"a": {"type": "string", "default": 5}}))
    s("default-fails-minimum", obj_schema({"a": {"type": "integer", "minimum": 5, "default": 1}}))
    s("default-fails-enum", obj_schema({"a": {"type": "string", "enum": ["x", "y"], "default": "z"}}))
    s("default-null-not-nullable", obj_schema({"a": {"type": "string", "default": None}}))
    s("default-object-unknown-field", obj_schema({"a": obj_schema({"b": {"type": "string"}}, default={"c": 1})}))
    s("default-in-metadata", obj_schema(**x_preserve()),
      metadata=obj_schema({"name": {"type": "string", "default": "x"}}))
    s("default-at-root", obj_schema(**x_preserve()), status=obj_schema(**x_preserve()))  # valid control (CRD created)
    s("additional-properties-false", obj_schema(additionalProperties=False))
    s("metadata-name-pattern-allowed", obj_schema(**x_preserve()),
      metadata=obj_schema({"name": {"type": "string", "pattern": "^a"}}))  # valid: name may be restricted
    s("enum-wrong-type", obj_schema({"a": {"type": "string", "enum": [1, 2]}}))
    s("required-unknown-ok", obj_schema({"a": {"type": "string"}}, required=["b"]))  # valid: not checked
    s("nullable-default-null", obj_schema({"a": {"type": "string", "nullable": True, "default": None}}))
    s("format-unknown", obj_schema({"a": {"type": "string", "format": "no-such-format"}}))
    s("minimum-on-string", obj_schema({"a": {"type": "string", "minimum": 1}}))
    s("max-length-negative", obj_schema({"a": {"type": "string", "maxLength": -1}}))
    s("not-forbidden-type", obj_schema({"a": {"type": "string", "not": {"type": "string"}}}))
    s("items-array-form", obj_schema({"a": {"type": "array", "items": [{"type": "string"}]}}))
    def r(case, schema):
        f.invalid_crd(case, crd(g, versions=[version("v1", schema)], **unique(case)))

    r("root-without-properties", {"type": "object"})
    r("root-nullable", dict(root(obj_schema(**x_preserve())), nullable=True))
    r("root-additional-properties", {"type": "object", "additionalProperties": {"type": "string"}})
    r("root-preserve-unknown-fields", {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    r("root-kind-default", root(obj_schema(**x_preserve()), kind={"type": "string", "default": "Widget"}))
    r("root-api-version-pattern", root(obj_schema(**x_preserve()), apiVersion={"type": "string", "pattern": "^x"}))
    s("embedded-metadata-default", obj_schema({"e": obj_schema({"metadata": obj_schema({"name": {
        "type": "string", "default": "n"}})}, **{"x-kubernetes-embedded-resource": True})}))
    f.invalid_crd("deprecation-warning-too-long", crd(g, versions=[version(
        "v1", root(obj_schema(**x_preserve())), deprecated=True, deprecationWarning="x" * 300)],
        **unique("deprecation-warning-too-long")))
    s("default-with-preserve-unknown-fields", obj_schema({"a": obj_schema(default={"x": 1}, **x_preserve())}))

    # objects of the CRDs above that kube-apiserver accepts: what their schemas then do
    def follow(crd_case, case, spec):
        u = unique(crd_case)
        name = f"{u['plural']}.{g}"
        if not any(st.get("wait") == f"{CRDS}/{name}" for st in f.steps):
            establish_wait(f, name, g, u["plural"])
        f.post(case, case, spec, plural=u["plural"], kind=u["kind"])

    follow("root-without-properties", "object-root-without-properties", {"a": 1})
    follow("root-preserve-unknown-fields", "object-root-preserve-unknown-fields", {"a": 1})
    follow("embedded-metadata-default", "object-embedded-metadata-default", {"e": {"apiVersion": "v1",
                                                                                   "kind": "ConfigMap"}})
    follow("nullable-default-null", "object-nullable-default-null", {})
    follow("default-null-not-nullable", "object-default-null-not-nullable", {})
    follow("int-or-string-with-type", "object-int-or-string-with-type-int", {"a": 5})
    follow("int-or-string-with-type", "object-int-or-string-with-type-string", {"a": "x"})
    follow("additional-properties-false", "object-additional-properties-false", {"x": 1})
    follow("minimum-on-string", "object-minimum-on-string", {"a": "x"})
    follow("enum-wrong-type", "object-enum-wrong-type", {"a": "1"})
    follow("default-with-preserve-unknown-fields", "object-default-with-preserve-unknown-fields", {})


def crd_status():
    f = File("status", "A CRD's status: NamesAccepted and Established conditions, acceptedNames, storedVersions; "
                       "name conflicts; discovery documents.")
    g = f.group
    schema = root(obj_schema(**x_preserve()))
    a = crd(g, names={"shortNames": ["wd"], "categories": ["crdsuite"]}, schema=schema)
    f.create_crd(a, "create-answer")
    f.add({"method": "GET", "path": f"{CRDS}/widgets.{g}"}, "get-established")
    f.add({"method": "GET", "path": f"/apis/{g}"}, "discovery-group")
    f.add({"method": "GET", "path": f"/apis/{g}/v1"}, "discovery-resources")
    b = crd(g, plural="gadgets", kind="Gadget", names={"shortNames": ["wd"]}, schema=schema)
    f.create_crd(b, "create-shortname-conflict", establish=False)
    c = crd(g, plural="things", kind="Widget", schema=schema)
    f.create_crd(c, "create-kind-conflict", establish=False)
    d = crd(g, plural="gizmos", kind="Gizmo", names={"singular": "widget"}, schema=schema)
    f.create_crd(d, "create-singular-conflict", establish=False)
    f.steps.append({"sleep": 3})
    f.add({"method": "GET", "path": f"{CRDS}/gadgets.{g}"}, "get-shortname-conflict")
    f.add({"method": "GET", "path": f"{CRDS}/things.{g}"}, "get-kind-conflict")
    f.add({"method": "GET", "path": f"{CRDS}/gizmos.{g}"}, "get-singular-conflict")
    f.add({"method": "GET", "path": f"/apis/{g}/v1/namespaces/{{ns}}/gadgets"}, "list-not-established")
    # cluster-scoped CRD
    e = crd(g, plural="clusterthings", kind="ClusterThing", scope="Cluster", schema=schema)
    f.create_crd(e, "create-cluster-scoped", establish=False)
    establish_wait(f, e["metadata"]["name"], g, "clusterthings", namespaced=False)
    f.add({"method": "POST", "path": f"/apis/{g}/v1/clusterthings",
           "body": {"apiVersion": f"{g}/v1", "kind": "ClusterThing", "metadata": {"name": "crd-status-ct1"}}},
          "create-cluster-object")
    f.add({"method": "GET", "path": f"/apis/{g}/v1/namespaces/{{ns}}/clusterthings"}, "cluster-object-under-namespace")
    f.add({"method": "DELETE", "path": f"/apis/{g}/v1/clusterthings/crd-status-ct1"}, "delete-cluster-object")
    f.add({"method": "GET", "path": f"/apis/{g}/v1/namespaces/{{ns}}/widgets/nothere"}, "get-missing-object")
    f.add({"method": "POST", "path": f.path(), "body": f.obj("w1", {"a": 1}, kind="Gadget")}, "create-wrong-kind")
    f.add({"method": "POST", "path": f.path(), "body": {"apiVersion": f"{g}/v2", "kind": "Widget",
                                                          "metadata": {"name": "w1"}}}, "create-wrong-version")
    for n in ["widgets", "gadgets", "things", "gizmos", "clusterthings"]:
        f.delete_crd(f"{n}.{g}", wait=False)
