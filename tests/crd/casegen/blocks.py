"""Building blocks of the case files: schemas, CRD bodies, and `File` (one case file, its steps)."""

import os

import yaml

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(HERE, "cases")
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
FILES = []


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
