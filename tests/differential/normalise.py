"""What legitimately differs between two servers, replaced before the comparison.

Each rule is one function, applied by `Normaliser.record` to every record of a scenario, in
step order, on each server separately. What a rule replaces is a value two correct servers may
choose differently (identities, clocks, revision numbers, opaque tokens, build strings); what
they must agree on (which fields exist, their other values, the order of revisions) stays.

- `uid`: `metadata.uid` (and any string equal to a uid seen before, e.g. `details.uid`,
  ownerReferences) becomes `<uid:N>`, N its order of first appearance in the scenario.
- `times`: the values of `creationTimestamp`, `deletionTimestamp`, `time` (managedFields),
  `lastTransitionTime`, `lastUpdateTime` and `lastProbeTime` become `<time>`.
- `resource_versions`: an object's `metadata.resourceVersion` becomes `<rv:N>`, N its order of
  first appearance; the same number anywhere else as a resourceVersion gets the same label. A
  list's own resourceVersion (the store's revision at the read, which kube-apiserver's own
  background writes move) becomes `<list-rv>`, and `<list-rv:stale>` when it is lower than an
  item's: the order is kept, the number is not.
- `continue_tokens`: `metadata.continue` becomes `<continue>` (opaque, each server's encoding).
- `generated_names`: a name made from `generateName` becomes `<generateName><generated>`, and the
  same string anywhere else likewise.
- `version`: the answer to `/version` keeps its keys; their values become `<version>`.
- `server_address`: `serverAddressByClientCIDRs[].serverAddress` (in `/api`) becomes
  `<address>`: each server's own host and port.
- `table_age`: a Table's cells in a column named `Age` become `<age>`.
- `warnings`: a `Warning` header becomes the list of its texts (`299 - "text"` → `text`), split
  whether a server sends one header per warning or several in one.
"""

import re

TIME_KEYS = {"creationTimestamp", "deletionTimestamp", "time", "lastTransitionTime", "lastUpdateTime",
             "lastProbeTime"}
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
WARNING = re.compile(r'\d{3} [^ ]+ "((?:[^"\\]|\\.)*)"')


class Normaliser:
    """The per-server, per-scenario state of the rules (labels given so far)."""

    def __init__(self):
        self.uids = {}
        self.rvs = {}
        self.generated = {}

    def record(self, rec):
        """Normalises one record (a request's answer or a watch) in place; returns it."""
        rec["headers"] = dict(rec.get("headers") or {}, Warning=warnings(rec.get("headers", {}).get("Warning")))
        if rec.get("body") is not None:
            rec["body"] = self.document(rec["body"], rec["label"])
        for ev in rec.get("events") or []:
            if isinstance(ev.get("object"), dict):
                if ev.get("type") == "BOOKMARK":
                    ev["object"] = bookmark(ev["object"])
                else:
                    ev["object"] = self.document(ev["object"], rec["label"])
        return rec

    def document(self, doc, label):
        """Every rule on one JSON document."""
        if not isinstance(doc, (dict, list)):
            return doc
        if label.endswith(" /version"):
            return version(doc)
        self.collect(doc)
        list_rv(doc)
        table_age(doc)
        return self.replace(doc, None)

    def collect(self, doc):
        """Gives labels to the uids, resourceVersions and generated names of the objects in
        `doc` (itself, a list's items, a Table's rows' objects), in document order."""
        for obj in objects(doc):
            meta = obj.get("metadata") or {}
            if isinstance(meta.get("uid"), str) and meta["uid"] not in self.uids:
                self.uids[meta["uid"]] = f"<uid:{len(self.uids) + 1}>"
            rv = meta.get("resourceVersion")
            if isinstance(rv, str) and rv not in self.rvs and not is_list(obj):
                self.rvs[rv] = f"<rv:{len(self.rvs) + 1}>"
            gen, name = meta.get("generateName"), meta.get("name")
            if isinstance(gen, str) and isinstance(name, str) and name.startswith(gen) and name != gen:
                self.generated[name] = gen + "<generated>"

    def replace(self, value, key):
        """Replaces what `collect` labelled, the times and the continue tokens, recursively."""
        if isinstance(value, dict):
            return {k: self.replace(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.replace(v, key) for v in value]
        if not isinstance(value, str):
            return value
        if key in TIME_KEYS and RFC3339.match(value):
            return "<time>"
        if key == "serverAddress":
            return "<address>"
        if key == "continue" and value:
            return "<continue>"
        if value.startswith("<list-rv"):
            return value
        if value in self.uids:
            return self.uids[value]
        if value in self.generated:
            return self.generated[value]
        if key == "resourceVersion" and value in self.rvs:
            return self.rvs[value]
        return value


def objects(doc):
    """The objects of a document: itself, a list's items, a Table's rows' objects."""
    if not isinstance(doc, dict):
        return []
    found = [doc]
    for item in doc.get("items") or []:
        if isinstance(item, dict):
            found.append(item)
    for row in doc.get("rows") or []:
        if isinstance(row, dict) and isinstance(row.get("object"), dict):
            found.append(row["object"])
    return found


def is_list(doc):
    """A list (or Table) answer: has `items` or `rows`, or a kind ending in List."""
    return isinstance(doc, dict) and ("items" in doc or "rows" in doc or str(doc.get("kind", "")).endswith("List"))


def list_rv(doc):
    """Replaces a list's own resourceVersion by `<list-rv>` (or `<list-rv:stale>` when lower
    than one of its items')."""
    if not is_list(doc) or not isinstance(doc.get("metadata"), dict):
        return
    rv = doc["metadata"].get("resourceVersion")
    if not isinstance(rv, str) or not rv.isdigit():
        return
    items = [o for o in objects(doc)[1:]]
    item_rvs = [int(o["metadata"]["resourceVersion"]) for o in items
                if str((o.get("metadata") or {}).get("resourceVersion", "")).isdigit()]
    doc["metadata"]["resourceVersion"] = "<list-rv:stale>" if item_rvs and max(item_rvs) > int(rv) else "<list-rv>"


def bookmark(obj):
    """A BOOKMARK's object: its resourceVersion is the server's revision (`<bookmark-rv>`); its
    kind, apiVersion and annotations stay."""
    meta = dict(obj.get("metadata") or {})
    if "resourceVersion" in meta:
        meta["resourceVersion"] = "<bookmark-rv>"
    return dict(obj, metadata=meta)


def version(doc):
    """`/version`: the keys stay, their values become `<version>`."""
    return {k: "<version>" for k in doc} if isinstance(doc, dict) else doc


def table_age(doc):
    """A Table's `Age` cells become `<age>`."""
    if not isinstance(doc, dict) or doc.get("kind") != "Table":
        return
    cols = [c.get("name") for c in doc.get("columnDefinitions") or []]
    if "Age" not in cols:
        return
    i = cols.index("Age")
    for row in doc.get("rows") or []:
        cells = row.get("cells")
        if isinstance(cells, list) and i < len(cells):
            cells[i] = "<age>"


def warnings(value):
    """The texts of `Warning` headers, whether sent one per header or several in one."""
    texts = []
    for header in value or []:
        found = WARNING.findall(header)
        texts.extend(t.replace('\\"', '"') for t in found) if found else texts.append(header)
    return texts
