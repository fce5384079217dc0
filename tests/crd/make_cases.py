#!/usr/bin/env python3
"""Writes `cases/*.yaml`, the CRD conformance suite's case files, from the tables below.

The case files are data (the differential harness's scenario format); this script is how they are
authored: a CRD written once per file and a case per line instead of a hundred hand-copied CRDs.
Edit the tables here and run `python3 tests/crd/make_cases.py`, then `record.py` to record the
reference's answers of the changed files. Each function below is one file (one topic, one API
group `<topic>.crd.example.com`).
"""

import copy
import os

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
FILES = []


# --- building blocks ------------------------------------------------------------------------------

def obj_schema(props=None, **kw):
    s = {"type": "object"}
    if props is not None:
        s["properties"] = props
    s.update(kw)
    return s


def root(spec=None, status=None, **extra):
    """A top-level schema with `spec` (and `status`) schemas."""
    props = {}
    if spec is not None:
        props["spec"] = spec
    if status is not None:
        props["status"] = status
    props.update(extra)
    return obj_schema(props)


def version(name="v1", schema=None, served=True, storage=True, **extra):
    v = {"name": name, "served": served, "storage": storage}
    if schema is not None:
        v["schema"] = {"openAPIV3Schema": schema}
    v.update(extra)
    return v


def crd(group, plural="widgets", kind="Widget", schema=None, versions=None, scope="Namespaced", names=None,
        name=None, **spec_extra):
    """A CustomResourceDefinition body."""
    n = {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": kind + "List"}
    n.update(names or {})
    n = {k: v for k, v in n.items() if v is not None}
    if versions is None:
        versions = [version(schema=schema if schema is not None else root(obj_schema(
            **x_preserve())))]
    spec = {"group": group, "scope": scope, "names": n, "versions": versions}
    spec.update(spec_extra)
    spec = {k: v for k, v in spec.items() if v is not None}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name or f"{plural}.{group}"}, "spec": spec}


def unique(case):
    """Names of a CRD of its own for one case: plural `<case without dashes>s`, a matching kind."""
    words = case.split("-")
    return {"plural": "".join(words) + "s", "kind": "".join(w.capitalize() for w in words)}


def x_preserve():
    return {"x-kubernetes-preserve-unknown-fields": True}


class File:
    """One case file: a topic, its API group, its steps."""

    def __init__(self, topic, description):
        self.topic = topic
        self.group = f"{topic}.crd.example.com"
        self.description = description
        self.steps = []
        self.cluster = []
        self.deleted = set()
        FILES.append(self)

    # CRDs
    def create_crd(self, body, case=None, establish=True, ver="v1"):
        """POSTs a CRD (a case when `case` is given) and, when it should exist, waits for it."""
        name = body["metadata"]["name"]
        if name not in self.cluster:
            self.cluster.append(name)
        step = {"method": "POST", "path": CRDS, "body": body}
        self.add(step, case)
        if establish:
            self.establish(name, body, ver)

    def establish(self, name, body, ver="v1"):
        spec = body["spec"]
        self.steps.append({"wait": f"{CRDS}/{name}", "until": "Established"})
        ns = "namespaces/{ns}/" if spec.get("scope", "Namespaced") == "Namespaced" else ""
        self.steps.append({"wait": f"/apis/{spec['group']}/{ver}/{ns}{spec['names']['plural']}", "until": 200})

    def invalid_crd(self, case, body):
        """A CRD create expected to be refused (the reference's answer is recorded whatever it is)."""
        self.create_crd(body, case, establish=False)

    def delete_crd(self, name, case=None, wait=True):
        self.deleted.add(name)
        self.add({"method": "DELETE", "path": f"{CRDS}/{name}"}, case)
        if wait:
            self.steps.append({"wait": f"{CRDS}/{name}", "until": 404, "timeout": 60})

    # custom resources
    def path(self, plural="widgets", ver="v1", name=None, sub=None, namespaced=True):
        p = f"/apis/{self.group}/{ver}/" + ("namespaces/{ns}/" if namespaced else "") + plural
        if name:
            p += "/" + name
        if sub:
            p += "/" + sub
        return p

    def obj(self, name, spec=None, kind="Widget", ver="v1", **top):
        o = {"apiVersion": f"{self.group}/{ver}", "kind": kind, "metadata": {"name": name}}
        if spec is not None:
            o["spec"] = spec
        o.update(top)
        return o

    def post(self, case, name, spec=None, plural="widgets", kind="Widget", ver="v1", query=None, **top):
        body = self.obj(name, spec, kind, ver, **top)
        self.add({"method": "POST", "path": self.path(plural, ver), "body": body, **({"query": query} if query else {})},
                 case)

    def add(self, step, case=None, **kw):
        step = dict(step, **kw)
        if case is None:
            step["compare"] = False
        else:
            step = {"case": case, **step}
        self.steps.append(step)

    def write(self):
        extra = {"webhook": True} if getattr(self, "webhook", False) else {}
        for name in self.cluster:  # CRDs a case created that the file does not delete itself
            if name not in self.deleted:
                self.delete_crd(name, wait=False)
        doc = {"name": f"crd-{self.topic}", "topic": self.topic, "description": self.description,
               "cluster": self.cluster, **extra, "steps": self.steps}
        with open(os.path.join(CASES, f"{self.topic}.yaml"), "w") as f:
            f.write(f"# Generated by tests/crd/make_cases.py ({self.topic}); edit there, not here.\n")
            yaml.safe_dump(doc, f, sort_keys=False, width=120, default_flow_style=None)


def establish_wait(f, name, group, plural, ver="v1", namespaced=True):
    f.steps.append({"wait": f"{CRDS}/{name}", "until": "Established"})
    ns = "namespaces/{ns}/" if namespaced else ""
    f.steps.append({"wait": f"/apis/{group}/{ver}/{ns}{plural}", "until": 200})


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


# --- keyword validation of objects ---------------------------------------------------------------

def keywords_numeric():
    f = File("numeric", "Numeric keywords: minimum, maximum, exclusiveMinimum/Maximum, multipleOf, integer "
                        "versus number, int32/int64 formats.")
    spec = obj_schema({
        "min": {"type": "integer", "minimum": 1}, "max": {"type": "integer", "maximum": 10},
        "exmin": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        "exmax": {"type": "number", "maximum": 1, "exclusiveMaximum": True},
        "mult": {"type": "integer", "multipleOf": 5}, "multf": {"type": "number", "multipleOf": 0.5},
        "int": {"type": "integer"}, "num": {"type": "number"},
        "i32": {"type": "integer", "format": "int32"}, "i64": {"type": "integer", "format": "int64"},
        "both": {"type": "integer", "minimum": 2, "maximum": 4, "multipleOf": 2},
    })
    f.create_crd(crd(f.group, schema=root(spec)))
    cases = [
        ("minimum-ok", {"min": 1}), ("minimum-below", {"min": 0}), ("minimum-negative", {"min": -5}),
        ("maximum-ok", {"max": 10}), ("maximum-above", {"max": 11}),
        ("exclusive-minimum-equal", {"exmin": 0}), ("exclusive-minimum-above", {"exmin": 0.1}),
        ("exclusive-maximum-equal", {"exmax": 1}), ("exclusive-maximum-below", {"exmax": 0.99}),
        ("multiple-of-ok", {"mult": 15}), ("multiple-of-bad", {"mult": 7}),
        ("multiple-of-float-ok", {"multf": 2.5}), ("multiple-of-float-bad", {"multf": 2.25}),
        ("integer-given-float", {"int": 1.5}), ("integer-given-whole-float", {"int": 2.0}),
        ("integer-given-string", {"int": "1"}), ("number-given-integer", {"num": 3}),
        ("number-given-bool", {"num": True}), ("int32-overflow", {"i32": 3000000000}),
        ("int64-large", {"i64": 9007199254740993}), ("combined-all-bad", {"both": 5}),
        ("several-fields-bad", {"min": 0, "max": 20, "mult": 3}),
    ]
    for i, (case, s) in enumerate(cases):
        f.post(case, f"n{i}", s)
    f.delete_crd(f"widgets.{f.group}", wait=False)


def keywords_string():
    f = File("string", "String keywords: minLength, maxLength, pattern, enum; type mismatches.")
    spec = obj_schema({
        "short": {"type": "string", "maxLength": 3}, "long": {"type": "string", "minLength": 2},
        "pat": {"type": "string", "pattern": "^[a-z]+-[0-9]+$"}, "color": {"type": "string", "enum": ["red", "green"]},
        "num": {"type": "integer", "enum": [1, 2, 3]}, "str": {"type": "string"}, "bool": {"type": "boolean"},
        "unicode": {"type": "string", "maxLength": 2},
    })
    f.create_crd(crd(f.group, schema=root(spec)))
    cases = [
        ("max-length-ok", {"short": "abc"}), ("max-length-over", {"short": "abcd"}),
        ("min-length-under", {"long": "a"}), ("min-length-empty", {"long": ""}),
        ("pattern-ok", {"pat": "abc-12"}), ("pattern-bad", {"pat": "ABC-12"}),
        ("enum-ok", {"color": "red"}), ("enum-bad", {"color": "blue"}), ("enum-case", {"color": "Red"}),
        ("enum-integer-bad", {"num": 4}), ("enum-integer-ok", {"num": 2}),
        ("string-given-number", {"str": 5}), ("string-given-object", {"str": {"a": 1}}),
        ("string-given-array", {"str": ["a"]}), ("bool-given-string", {"bool": "true"}),
        ("unicode-length-runes", {"unicode": "éé"}), ("unicode-length-over", {"unicode": "ééé"}),
        ("spec-given-string", "text"),
    ]
    for i, (case, s) in enumerate(cases):
        f.post(case, f"s{i}", s)
    f.delete_crd(f"widgets.{f.group}", wait=False)


def keywords_format():
    f = File("format", "String formats checked on custom resources (date-time, date, byte, uuid, hostname, "
                       "ipv4, ipv6, cidr, mac, uri, email, duration, k8s-short-name, ...).")
    fmts = ["date-time", "date", "byte", "uuid", "hostname", "ipv4", "ipv6", "cidr", "mac", "uri", "email",
            "duration", "k8s-short-name", "k8s-long-name", "int32", "bogus"]
    spec = obj_schema({fm.replace("-", "_"): {"type": "string", "format": fm} for fm in fmts})
    f.create_crd(crd(f.group, schema=root(spec)))
    cases = [
        ("date-time", "2024-01-02T03:04:05Z", "2024-01-02 03:04"),
        ("date", "2024-01-02", "2024-13-40"),
        ("byte", "aGVsbG8=", "not base64!"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
        ("hostname", "example.com", "-bad-.com"),
        ("ipv4", "10.0.0.1", "10.0.0.256"),
        ("ipv6", "fe80::1", "fe80:::1"),
        ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
        ("mac", "01:23:45:67:89:ab", "01:23:45"),
        ("uri", "https://example.com/x", "not a uri"),
        ("email", "a@example.com", "a.example.com"),
        ("duration", "1h30m", "ninety"),
        ("k8s-short-name", "abc-1", "Abc"),
        ("k8s-long-name", "a.b-c", "a..b"),
        ("int32", "12", "x"),
        ("bogus", "anything", None),
    ]
    i = 0
    for fm, good, bad in cases:
        key = fm.replace("-", "_")
        f.post(f"{fm}-valid", f"f{i}", {key: good})
        i += 1
        if bad is not None:
            f.post(f"{fm}-invalid", f"f{i}", {key: bad})
            i += 1
    f.post("several-invalid", f"f{i}", {"ipv4": "x", "uuid": "y", "date": "z"})
    f.delete_crd(f"widgets.{f.group}", wait=False)


def keywords_array():
    f = File("array", "Array keywords: minItems, maxItems, item schemas, x-kubernetes-list-type set/map "
                      "uniqueness, list-map-keys.")
    spec = obj_schema({
        "few": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
        "many": {"type": "array", "minItems": 2, "items": {"type": "string"}},
        "ints": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "intset": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}},
        "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": obj_schema({"name": {"type": "string"}, "v": {"type": "integer"}}, required=["name"])},
        "map2": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
                 "items": obj_schema({"a": {"type": "string"}, "b": {"type": "integer", "default": 0}},
                                     required=["a"])},
        "atomic": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}},
        "nested": {"type": "array", "items": {"type": "array", "items": {"type": "string", "maxLength": 1}}},
    })
    f.create_crd(crd(f.group, schema=root(spec)))
    cases = [
        ("max-items-ok", {"few": ["a", "b"]}), ("max-items-over", {"few": ["a", "b", "c"]}),
        ("min-items-under", {"many": ["a"]}), ("min-items-empty", {"many": []}),
        ("item-minimum-bad", {"ints": [1, -1, 2, -3]}), ("item-type-bad", {"ints": [1, "two"]}),
        ("set-unique-ok", {"set": ["a", "b"]}), ("set-duplicate", {"set": ["a", "b", "a"]}),
        ("int-set-duplicate", {"intset": [1, 1]}),
        ("map-ok", {"map": [{"name": "a", "v": 1}, {"name": "b", "v": 1}]}),
        ("map-duplicate-key", {"map": [{"name": "a", "v": 1}, {"name": "a", "v": 2}]}),
        ("map-missing-key", {"map": [{"v": 1}]}),
        ("map-two-keys-ok", {"map2": [{"a": "x", "b": 1}, {"a": "x", "b": 2}]}),
        ("map-two-keys-duplicate-by-default", {"map2": [{"a": "x"}, {"a": "x", "b": 0}]}),
        ("atomic-duplicates-allowed", {"atomic": ["a", "a"]}),
        ("nested-item-too-long", {"nested": [["a", "bb"], ["c"]]}),
        ("array-given-object", {"few": {"a": 1}}), ("array-given-string", {"set": "a"}),
    ]
    for i, (case, s) in enumerate(cases):
        f.post(case, f"a{i}", s)
    g = f.group
    ap = lambda case, mgr, spec: f.add({"method": "PATCH", "patch": "apply", "path": f.path(name="ap"),  # noqa: E731
                                        "query": {"fieldManager": mgr},
                                        "body": {"apiVersion": f"{g}/v1", "kind": "Widget", "metadata": {"name": "ap"},
                                                 "spec": spec}}, case)
    ap("apply-list-map-first-manager", "one", {"map": [{"name": "a", "v": 1}], "set": ["x"], "atomic": ["p"]})
    ap("apply-list-map-second-manager-merges", "two", {"map": [{"name": "b", "v": 2}], "set": ["y"]})
    ap("apply-atomic-list-conflict", "two", {"atomic": ["q"]})
    ap("apply-list-map-conflict", "two", {"map": [{"name": "a", "v": 5}]})
    ap("apply-list-map-first-manager-drops-item", "one", {"set": ["x"]})
    f.delete_crd(f"widgets.{f.group}", wait=False)


def keywords_object():
    f = File("object", "Object keywords: required, minProperties/maxProperties, additionalProperties (schema and "
                       "false), nullable, x-kubernetes-int-or-string, x-kubernetes-embedded-resource, "
                       "x-kubernetes-preserve-unknown-fields, type mismatches.")
    spec = obj_schema({
        "req": obj_schema({"a": {"type": "string"}, "b": {"type": "string"}}, required=["a", "b"]),
        "props": obj_schema(additionalProperties={"type": "string"}, minProperties=1, maxProperties=2),
        "typed": obj_schema(additionalProperties={"type": "integer", "minimum": 0}),
        "nullable": {"type": "string", "nullable": True},
        "notnull": {"type": "string"},
        "nullobj": obj_schema({"a": {"type": "string"}}, nullable=True),
        "ios": {"x-kubernetes-int-or-string": True},
        "iosp": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}],
                 "pattern": "^[0-9]+%$", "minimum": 0},
        "emb": obj_schema(**{"x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}),
        "free": obj_schema(**x_preserve()),
    }, required=["req"])
    f.create_crd(crd(f.group, schema=root(spec)))
    ok = {"req": {"a": "x", "b": "y"}}
    cases = [
        ("required-ok", ok), ("required-missing-one", {"req": {"a": "x"}}),
        ("required-missing-all", {"req": {}}), ("required-missing-parent", {}),
        ("spec-missing", None),
        ("min-properties-under", dict(ok, props={})), ("max-properties-over", dict(ok, props={"a": "1", "b": "2",
                                                                                              "c": "3"})),
        ("additional-properties-typed-ok", dict(ok, typed={"x": 1})),
        ("additional-properties-typed-bad", dict(ok, typed={"x": -1, "y": "s"})),
        ("nullable-null", dict(ok, nullable=None)), ("not-nullable-null", dict(ok, notnull=None)),
        ("nullable-object-null", dict(ok, nullobj=None)),
        ("int-or-string-int", dict(ok, ios=5)), ("int-or-string-string", dict(ok, ios="5%")),
        ("int-or-string-bool", dict(ok, ios=True)), ("int-or-string-anyof-bad", dict(ok, iosp="5")),
        ("int-or-string-anyof-negative", dict(ok, iosp=-1)), ("int-or-string-anyof-ok", dict(ok, iosp="50%")),
        ("embedded-ok", dict(ok, emb={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                                      "data": {"k": "v"}})),
        ("embedded-missing-kind", dict(ok, emb={"apiVersion": "v1", "metadata": {"name": "x"}})),
        ("embedded-missing-apiversion", dict(ok, emb={"kind": "ConfigMap"})),
        ("embedded-empty", dict(ok, emb={})),
        ("embedded-bad-metadata-name", dict(ok, emb={"apiVersion": "v1", "kind": "ConfigMap",
                                                     "metadata": {"name": "Bad_Name"}})),
        ("preserve-unknown-kept", dict(ok, free={"anything": {"deep": [1, "x", None]}})),
        ("object-given-array", dict(ok, req=["a"])), ("object-given-number", dict(ok, props=3)),
    ]
    for i, (case, s) in enumerate(cases):
        f.post(case, f"o{i}", s)
    f.add({"method": "POST", "path": f.path(), "body": {"apiVersion": f"{f.group}/v1", "kind": "Widget",
                                                         "metadata": {"name": "o-bad-name_"}, "spec": ok}},
          "object-name-invalid")
    f.add({"method": "POST", "path": f.path(), "body": {"apiVersion": f"{f.group}/v1", "kind": "Widget",
                                                         "metadata": {"name": "o-labels", "labels": {"a b": "c"}},
                                                         "spec": ok}}, "object-label-invalid")
    f.delete_crd(f"widgets.{f.group}", wait=False)


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


# --- versions ------------------------------------------------------------------------------------

def versions():
    f = File("versions", "Several versions with conversion None: apiVersion rewritten on read, list and watch per "
                         "version, unserved versions, storage version switch and storedVersions, deprecation "
                         "warnings; Webhook conversion to an unreachable webhook.")
    g = f.group
    sch = root(obj_schema({"size": {"type": "integer"}, "color": {"type": "string"}}))
    vers = [version("v1", sch, deprecated=True, deprecationWarning="v1 is old; use v2"),
            version("v2", sch, storage=False), version("v3", sch, served=False, storage=False)]
    body = crd(g, versions=vers, conversion={"strategy": "None"})
    f.create_crd(body, "create-three-versions")
    f.steps.append({"wait": f.path(ver="v2"), "until": 200})
    f.post("create-in-v1-deprecated", "v-a", {"size": 1}, ver="v1")
    f.add({"method": "GET", "path": f.path(ver="v2", name="v-a")}, "read-v1-object-in-v2")
    f.post("create-in-v2", "v-b", {"size": 2}, ver="v2")
    f.add({"method": "GET", "path": f.path(ver="v1", name="v-b")}, "read-v2-object-in-v1")
    f.add({"method": "GET", "path": f.path(ver="v3", name="v-a")}, "read-unserved-version")
    f.add({"method": "POST", "path": f.path(ver="v3"), "body": f.obj("v-c", {}, ver="v3")}, "create-unserved-version")
    f.add({"method": "POST", "path": f.path(ver="v2"), "body": f.obj("v-d", {}, ver="v1")},
          "create-apiversion-mismatch")
    f.add({"method": "GET", "path": f.path(ver="v1")}, "list-v1")
    f.add({"method": "GET", "path": f.path(ver="v2")}, "list-v2")
    f.add({"method": "GET", "path": f.path(ver="v2"), "id": "lv"}, None)
    f.steps.append({"case": "watch-v2-sees-v1-create", "watch": f.path(ver="v2"),
                    "query": {"resourceVersion": "$(lv.metadata.resourceVersion)"}, "events": 1,
                    "during": [{"method": "POST", "path": f.path(ver="v1"), "body": f.obj("v-w", {"size": 9})}]})
    f.add({"method": "GET", "path": f.path(ver="v1"), "id": "lv1"}, None)
    f.steps.append({"case": "watch-v1-sees-v2-create", "watch": f.path(ver="v1"),
                    "query": {"resourceVersion": "$(lv1.metadata.resourceVersion)"}, "events": 1,
                    "during": [{"method": "POST", "path": f.path(ver="v2"), "body": f.obj("v-w2", {"size": 8},
                                                                                           ver="v2")}]})
    f.add({"method": "PATCH", "patch": "merge", "path": f.path(ver="v2", name="v-a"), "body": {"spec": {"size": 5}}},
          "patch-in-v2")
    f.add({"method": "GET", "path": f"/apis/{g}"}, "discovery-preferred-version")
    # switch the storage version to v2
    f.add({"method": "GET", "path": f"{CRDS}/widgets.{g}", "id": "crd"}, None)
    b2 = copy.deepcopy(body)
    b2["metadata"]["resourceVersion"] = "$(crd.metadata.resourceVersion)"
    b2["spec"]["versions"][0]["storage"] = False
    b2["spec"]["versions"][1]["storage"] = True
    f.add({"method": "PUT", "path": f"{CRDS}/widgets.{g}", "body": b2}, "switch-storage-to-v2")
    f.add({"method": "GET", "path": f"{CRDS}/widgets.{g}", "id": "crd2"}, "stored-versions-after-switch")
    f.steps.append({"sleep": 2})
    f.post("create-after-switch", "v-e", {"size": 3}, ver="v2")
    f.add({"method": "GET", "path": f.path(ver="v1", name="v-e")}, "read-after-switch-in-v1")
    b3 = copy.deepcopy(b2)
    b3["metadata"]["resourceVersion"] = "$(crd2.metadata.resourceVersion)"
    b3["spec"]["versions"] = [v for v in b3["spec"]["versions"] if v["name"] != "v1"]
    f.add({"method": "PUT", "path": f"{CRDS}/widgets.{g}", "body": b3}, "remove-stored-version")
    f.add({"method": "PATCH", "patch": "merge", "path": f"{CRDS}/widgets.{g}/status",
           "body": {"status": {"storedVersions": ["v2"]}}}, "status-stored-versions-trimmed")
    f.add({"method": "GET", "path": f"{CRDS}/widgets.{g}", "id": "crd3"}, None)
    b4 = copy.deepcopy(b2)
    b4["metadata"]["resourceVersion"] = "$(crd3.metadata.resourceVersion)"
    b4["spec"]["versions"][0]["served"] = False
    f.add({"method": "PUT", "path": f"{CRDS}/widgets.{g}", "body": b4}, "stop-serving-v1")
    f.steps.append({"wait": f.path(ver="v1"), "until": 404})
    f.add({"method": "GET", "path": f.path(ver="v1", name="v-a")}, "read-unserved-v1")
    f.add({"method": "GET", "path": f.path(ver="v2", name="v-a")}, "read-v1-stored-object-in-v2")
    # (v1 stays in spec.versions: objects stored as v1 would not be readable without it)
    # webhook conversion
    wh = crd(g, plural="gadgets", kind="Gadget", versions=[version("v1", sch), version("v2", sch, storage=False)],
             conversion={"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                                                            "clientConfig": {"url": "https://127.0.0.1:1/convert"}}})
    f.create_crd(wh, "create-webhook-conversion")
    f.post("webhook-create-storage-version", "g-a", {"size": 1}, plural="gadgets", kind="Gadget")
    f.add({"method": "GET", "path": f.path("gadgets", ver="v1", name="g-a")}, "webhook-read-storage-version")
    f.add({"method": "GET", "path": f.path("gadgets", ver="v2", name="g-a")}, "webhook-read-other-version-fails")
    # per-version schemas (conversion None): each version prunes, defaults and validates by its own
    s1 = root(obj_schema({"a": {"type": "string"}, "common": {"type": "string", "maxLength": 3}}))
    s2 = root(obj_schema({"b": {"type": "string"}, "common": {"type": "string", "default": "dv2"}}))
    dd = crd(g, plural="doodads", kind="Doodad", versions=[version("v1", s1), version("v2", s2, storage=False)])
    f.create_crd(dd, "create-per-version-schemas")
    f.steps.append({"wait": f.path("doodads", ver="v2"), "until": 200})
    f.post("per-version-create-v1", "dd1", {"a": "x"}, plural="doodads", kind="Doodad")
    f.add({"method": "GET", "path": f.path("doodads", ver="v2", name="dd1")}, "per-version-read-in-v2")
    f.post("per-version-create-v2-unknown-a", "dd2", {"a": "x", "b": "y"}, plural="doodads", kind="Doodad", ver="v2")
    f.add({"method": "GET", "path": f.path("doodads", ver="v1", name="dd2")}, "per-version-read-v2-object-in-v1")
    f.post("per-version-v2-skips-v1-max-length", "dd3", {"common": "toolong"}, plural="doodads", kind="Doodad",
           ver="v2")
    f.post("per-version-v1-max-length", "dd4", {"common": "toolong"}, plural="doodads", kind="Doodad")
    for n in ["widgets", "gadgets", "doodads"]:
        f.delete_crd(f"{n}.{g}", wait=False)


def conversion():
    f = File("conversion", "Webhook conversion with a working webhook (tests/crd/webhook.py: v1 spec.size <-> "
                           "v2 spec.count): reads, writes and lists in the version that is not stored; "
                           "a conversion the webhook refuses.")
    f.webhook = True
    g = f.group
    s1 = root(obj_schema({"size": {"type": "integer"}, "color": {"type": "string"}}))
    s2 = root(obj_schema({"count": {"type": "integer"}, "color": {"type": "string"}}))
    body = crd(g, versions=[version("v1", s1), version("v2", s2, storage=False)],
               conversion={"strategy": "Webhook", "webhook": {
                   "conversionReviewVersions": ["v1"],
                   "clientConfig": {"url": "$(suite.webhook)", "caBundle": "$(suite.caBundle)"}}})
    f.create_crd(body, "create-webhook-crd")
    f.steps.append({"wait": f.path(ver="v2"), "until": 200})
    f.post("create-in-storage-version", "c1", {"size": 3, "color": "red"})
    f.add({"method": "GET", "path": f.path(ver="v2", name="c1")}, "read-converted")
    f.post("create-in-other-version", "c2", {"count": 5}, ver="v2")
    f.add({"method": "GET", "path": f.path(ver="v1", name="c2")}, "read-stored-form")
    f.add({"method": "GET", "path": f.path(ver="v2")}, "list-converted")
    f.add({"method": "PATCH", "patch": "merge", "path": f.path(ver="v2", name="c1"),
           "body": {"spec": {"count": 7}}}, "merge-patch-in-other-version")
    f.add({"method": "GET", "path": f.path(ver="v1", name="c1")}, "read-after-patch")
    f.add({"method": "PATCH", "patch": "apply", "path": f.path(ver="v2", name="c3"), "query": {"fieldManager": "suite"},
           "body": {"apiVersion": f"{g}/v2", "kind": "Widget", "metadata": {"name": "c3"}, "spec": {"count": 1}}},
          "apply-in-other-version")
    f.add({"method": "GET", "path": f.path(ver="v1", name="c3")}, "read-applied")
    f.post("webhook-refuses-create", "c4", {"count": 13}, ver="v2")
    f.post("webhook-refuses-create-storage-version", "c5", {"size": 13})
    # (no watch case: in our tries kube-apiserver's watches in the webhook-converted version missed
    # events or answered "Too large resource version" from one run to the next; cause not found)
    f.add({"method": "DELETE", "path": f.path(ver="v2", name="c2")}, "delete-in-other-version")
    f.delete_crd(f"widgets.{g}", wait=False)


# --- subresources --------------------------------------------------------------------------------

def subresources():
    f = File("subresources", "The status and scale subresources: status reset on create and main-resource updates, "
                             "/status updates, /scale GET/PUT/PATCH with spec/status replicas and label selector "
                             "paths, generation.")
    g = f.group
    sch = root(obj_schema({"replicas": {"type": "integer", "minimum": 0}, "color": {"type": "string"}}),
               obj_schema({"replicas": {"type": "integer"}, "selector": {"type": "string"},
                           "phase": {"type": "string", "enum": ["A", "B"]}}))
    f.create_crd(crd(g, versions=[version("v1", sch, subresources={"status": {}, "scale": {
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector"}})]))
    f.create_crd(crd(g, plural="plains", kind="Plain", versions=[version("v1", sch)]))
    f.post("create-drops-status", "s1", {"replicas": 1, "color": "red"}, status={"replicas": 7, "phase": "A"})
    s1 = f.path(name="s1")
    f.add({"method": "GET", "path": s1, "id": "s1"}, None)
    f.add({"method": "PUT", "path": f.path(name="s1", sub="status"), "body": {
        "apiVersion": f"{g}/v1", "kind": "Widget",
        "metadata": {"name": "s1", "resourceVersion": "$(s1.metadata.resourceVersion)"}, "spec": {"replicas": 9},
        "status": {"replicas": 1, "selector": "app=x", "phase": "A"}}}, "status-put-ignores-spec")
    f.add({"method": "PATCH", "patch": "merge", "path": f.path(name="s1", sub="status"),
           "body": {"status": {"phase": "B"}}}, "status-merge-patch")
    f.add({"method": "PATCH", "patch": "merge", "path": f.path(name="s1", sub="status"),
           "body": {"status": {"phase": "C"}}}, "status-invalid-value")
    f.add({"method": "PATCH", "patch": "merge", "path": s1, "body": {"spec": {"color": "blue"},
                                                                     "status": {"phase": "A"}}},
          "main-update-ignores-status")
    f.add({"method": "GET", "path": f.path(name="s1", sub="status")}, "status-get")
    f.add({"method": "GET", "path": f.path(name="s1", sub="scale")}, "scale-get")
    f.add({"method": "GET", "path": f.path(name="s1", sub="scale"), "id": "sc"}, None)
    f.add({"method": "PUT", "path": f.path(name="s1", sub="scale"), "body": {
        "apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "s1", "namespace": "{ns}", "resourceVersion": "$(sc.metadata.resourceVersion)"},
        "spec": {"replicas": 5}}}, "scale-put")
    f.add({"method": "PATCH", "patch": "merge", "path": f.path(name="s1", sub="scale"),
           "body": {"spec": {"replicas": 3}}}, "scale-merge-patch-kubectl")
    f.add({"method": "PATCH", "patch": "json", "path": f.path(name="s1", sub="scale"),
           "body": [{"op": "replace", "path": "/spec/replicas", "value": 4}]}, "scale-json-patch")
    f.add({"method": "GET", "path": s1}, "object-after-scale")
    f.add({"method": "PUT", "path": f.path(name="s1", sub="scale"), "body": {
        "apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "s1", "namespace": "{ns}", "resourceVersion": "$(sc.metadata.resourceVersion)"},
        "spec": {"replicas": 6}}}, "scale-put-stale-resource-version")
    f.add({"method": "PATCH", "patch": "merge", "path": f.path(name="s1", sub="scale"),
           "body": {"spec": {"replicas": -1}}}, "scale-negative-replicas")
    f.post(None, "s2", {"color": "red"})
    f.add({"method": "GET", "path": f.path(name="s2", sub="scale")}, "scale-get-without-replicas")
    f.add({"method": "GET", "path": f.path(name="nothere", sub="scale")}, "scale-get-missing-object")
    f.add({"method": "POST", "path": f.path("plains"), "body": f.obj("p1", {"replicas": 1}, kind="Plain",
                                                                      status={"phase": "A"})},
          "no-status-subresource-keeps-status")
    f.add({"method": "GET", "path": f.path("plains", name="p1", sub="status")}, "no-status-subresource-404")
    f.add({"method": "GET", "path": f.path("plains", name="p1", sub="scale")}, "no-scale-subresource-404")
    f.add({"method": "PATCH", "patch": "apply", "path": f.path(name="s1", sub="status"),
           "query": {"fieldManager": "ctl", "force": "true"},
           "body": {"apiVersion": f"{g}/v1", "kind": "Widget", "metadata": {"name": "s1"},
                    "status": {"phase": "B"}}}, "status-apply")
    for n in ["widgets", "plains"]:
        f.delete_crd(f"{n}.{g}", wait=False)


# --- selectable fields and printer columns -------------------------------------------------------

def selectable():
    f = File("selectable", "selectableFields: field selectors on custom resource lists and watches.")
    g = f.group
    sch = root(obj_schema({"color": {"type": "string"}, "size": {"type": "integer"}, "on": {"type": "boolean"},
                           "other": {"type": "string"}}))
    f.create_crd(crd(g, versions=[version("v1", sch, selectableFields=[
        {"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}, {"jsonPath": ".spec.on"}])]))
    for n, s in [("red1", {"color": "red", "size": 1, "on": True}), ("red2", {"color": "red", "size": 2}),
                 ("blue", {"color": "blue", "size": 1, "on": False}), ("none", {})]:
        f.post(None, n, s)
    for case, sel in [("color-equals", "spec.color=red"), ("color-not-equals", "spec.color!=red"),
                      ("color-double-equals", "spec.color==blue"), ("integer-field", "spec.size=1"),
                      ("boolean-field", "spec.on=true"), ("two-fields", "spec.color=red,spec.size=2"),
                      ("metadata-name", "metadata.name=blue"), ("metadata-namespace", "metadata.namespace={ns}"),
                      ("unknown-field", "spec.other=x"), ("not-selectable-status", "status.phase=x"),
                      ("missing-field-empty-value", "spec.color=")]:
        f.add({"method": "GET", "path": f.path(), "query": {"fieldSelector": sel}}, f"list-{case}")
    f.add({"method": "GET", "path": f"/apis/{g}/v1/widgets", "query": {"fieldSelector": "spec.color=blue"}},
          "list-all-namespaces-color")
    f.add({"method": "GET", "path": f.path(), "id": "l"}, None)
    f.steps.append({"case": "watch-with-field-selector", "watch": f.path(),
                    "query": {"resourceVersion": "$(l.metadata.resourceVersion)", "fieldSelector": "spec.color=green"},
                    "events": 1, "during": [{"method": "POST", "path": f.path(), "body": f.obj("w-blue", {"color": "blue"})},
                                            {"method": "POST", "path": f.path(), "body": f.obj("w-green",
                                                                                               {"color": "green"})}]})
    f.delete_crd(f"widgets.{g}", wait=False)


def printer():
    f = File("printer", "additionalPrinterColumns: the Table answer of GET and LIST.")
    g = f.group
    sch = root(obj_schema({"replicas": {"type": "integer"}, "mode": {"type": "string"}, "ratio": {"type": "number"},
                           "tags": {"type": "array", "items": {"type": "string"}}}),
               obj_schema({"ready": {"type": "boolean"}}))
    cols = [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "description": "desired"},
            {"name": "Mode", "type": "string", "jsonPath": ".spec.mode", "priority": 1},
            {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "format": "float"},
            {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"},
            {"name": "Tags", "type": "string", "jsonPath": ".spec.tags"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    f.create_crd(crd(g, versions=[version("v1", sch, additionalPrinterColumns=cols)]))
    f.create_crd(crd(g, plural="plains", kind="Plain", versions=[version("v1", sch)]))
    f.post(None, "t1", {"replicas": 2, "mode": "fast", "ratio": 0.5, "tags": ["a", "b"]}, status={"ready": True})
    f.post(None, "t2", {"mode": "slow"})
    table = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    f.add({"method": "GET", "path": f.path(), "headers": table}, "table-list")
    f.add({"method": "GET", "path": f.path(name="t1"), "headers": table}, "table-get")
    f.add({"method": "GET", "path": f.path(), "headers": table, "query": {"includeObject": "None"}},
          "table-include-object-none")
    f.add({"method": "GET", "path": f.path(), "headers": table, "query": {"includeObject": "Object"}},
          "table-include-object")
    f.add({"method": "GET", "path": f.path(name="t2"), "headers": table, "query": {"includeObject": "Metadata"}},
          "table-get-include-metadata")
    f.add({"method": "GET", "path": f.path(), "headers": table, "query": {"fieldSelector": "metadata.name=t2"}},
          "table-list-field-selector")
    f.add({"method": "GET", "path": f.path(),
           "headers": {"Accept": "application/json;as=Table;v=v1beta1;g=meta.k8s.io"}}, "table-v1beta1")
    f.add({"method": "GET", "path": f.path(),
           "headers": {"Accept": "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"}},
          "partial-object-metadata-list")
    f.post(None, "p1", {"replicas": 1}, plural="plains", kind="Plain")
    f.add({"method": "GET", "path": f.path("plains"), "headers": table}, "table-default-columns")
    for n in ["widgets", "plains"]:
        f.delete_crd(f"{n}.{g}", wait=False)


# --- deletion ------------------------------------------------------------------------------------

def deletion():
    f = File("deletion", "Deleting a CRD with objects: the Terminating condition, creates refused, the objects "
                         "deleted, the CRD gone, discovery without the resource; a new CRD of the same name empty.")
    g = f.group
    body = crd(g, schema=root(obj_schema(**x_preserve())))
    f.create_crd(body)
    f.post(None, "d1", {"a": 1})
    f.add({"method": "POST", "path": f.path(), "body": dict(f.obj("d2", {"a": 2}),
                                                             metadata={"name": "d2", "finalizers": ["crdsuite/hold"]})},
          "create-object-with-finalizer")
    f.add({"method": "DELETE", "path": f"{CRDS}/widgets.{g}"}, "delete-crd")
    f.steps.append({"wait": f.path(name="d1"), "until": 404, "timeout": 30})
    f.steps.append({"sleep": 1})
    f.add({"method": "GET", "path": f"{CRDS}/widgets.{g}"}, "crd-terminating")
    f.add({"method": "POST", "path": f.path(), "body": f.obj("d3", {})}, "create-while-terminating")
    f.add({"method": "GET", "path": f.path()}, "list-while-terminating")
    f.add({"method": "GET", "path": f.path(name="d1")}, "deleted-object-gone")
    f.add({"method": "PATCH", "patch": "merge", "path": f.path(name="d2"), "body": {"metadata": {"finalizers": None}}},
          "remove-finalizer")
    f.steps.append({"wait": f"{CRDS}/widgets.{g}", "until": 404, "timeout": 60})
    f.add({"method": "GET", "path": f"{CRDS}/widgets.{g}"}, "crd-gone")
    f.add({"method": "GET", "path": f.path()}, "resource-gone")
    f.add({"method": "GET", "path": f"/apis/{g}/v1"}, "discovery-version-gone")
    f.add({"method": "GET", "path": f"/apis/{g}"}, "discovery-group-gone")
    f.create_crd(body, "recreate")
    f.add({"method": "GET", "path": f.path()}, "recreated-empty")
    f.add({"method": "DELETE", "path": f"{CRDS}/widgets.{g}"}, "delete-empty-crd")
    f.steps.append({"wait": f"{CRDS}/widgets.{g}", "until": 404, "timeout": 60})
    f.add({"method": "DELETE", "path": f"{CRDS}/widgets.{g}"}, "delete-missing-crd")


def main():
    os.makedirs(CASES, exist_ok=True)
    for fn in [crd_validation, crd_structural, crd_status, keywords_numeric, keywords_string, keywords_format,
               keywords_array, keywords_object, defaulting, pruning, ratcheting, cel, versions, subresources,
               selectable, printer, deletion, conversion]:
        fn()
    total = 0
    for f in FILES:
        f.write()
        n = sum(1 for s in f.steps if "case" in s)
        total += n
        print(f"{f.topic}: {n} cases")
    print(f"{len(FILES)} files, {total} cases")


if __name__ == "__main__":
    main()
