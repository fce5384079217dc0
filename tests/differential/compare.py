"""Comparing two servers' normalised records of one scenario, step by step.

A difference is (category, step label, path, reference value, fieldstore value). Categories:

- `status`: the HTTP code (when it differs, the bodies are not compared further: one side's
  object against the other's Status says nothing more; both reasons are shown);
- `reason`: an error `Status`'s reason, code and details (name, group, kind, causes' type and
  field);
- `message`: an error's message text and its causes' messages (lower severity: kube-apiserver's
  wording is not an API contract, though clients show it);
- `body`: a successful answer's body, managedFields aside;
- `managedFields`: `metadata.managedFields` of an answer (or of a list's items);
- `headers`: `Content-Type`, the `Warning` texts;
- `watch`: a watch's events (count, types, normalised objects).
"""

CATEGORIES = ["status", "reason", "message", "body", "managedFields", "headers", "watch"]
MISSING = "<absent>"


def compare(ref_records, fs_records):
    """The differences between two record lists of the same scenario."""
    diffs = []
    for ref, fs in zip(ref_records, fs_records):
        diffs.extend(compare_record(ref, fs))
    if len(ref_records) != len(fs_records):
        diffs.append(("status", "(scenario)", "steps", len(ref_records), len(fs_records)))
    return diffs


def compare_record(ref, fs):
    """The differences of one step."""
    label = ref["label"]
    out = []
    if ref["status"] != fs["status"]:
        return [("status", label, "code", f"{ref['status']} {summary(ref['body'])}",
                 f"{fs['status']} {summary(fs['body'])}")]
    out.extend(headers(label, ref["headers"], fs["headers"]))
    if "events" in ref:
        if ref.get("body") is not None or fs.get("body") is not None:
            out.extend(body(label, ref.get("body"), fs.get("body")))
        out.extend(events(label, ref["events"], fs["events"]))
        return out
    out.extend(body(label, ref["body"], fs["body"]))
    return out


def summary(doc):
    """A short text for an answer: a Status's reason, else its kind."""
    if isinstance(doc, dict):
        if doc.get("kind") == "Status":
            return f"{doc.get('reason', '')}: {str(doc.get('message', ''))[:160]}"
        return doc.get("kind", "")
    return str(doc)[:80] if doc is not None else ""


def headers(label, ref, fs):
    """Content-Type and Warning differences."""
    out = []
    for name in ("Content-Type", "Warning"):
        if ref.get(name) != fs.get(name):
            out.append(("headers", label, name, ref.get(name), fs.get(name)))
    return out


def body(label, ref, fs):
    """Differences of two bodies: Status fields by class, managedFields apart, the rest body."""
    out = []
    if is_status(ref) and is_status(fs):
        for path, a, b in diff(ref, fs, ""):
            out.append((status_class(path), label, path, a, b))
        return out
    for path, a, b in diff(ref, fs, ""):
        out.append(("managedFields" if ".managedFields" in path else "body", label, path, a, b))
    return out


def is_status(doc):
    """A failure `Status` (kind Status, status Failure)."""
    return isinstance(doc, dict) and doc.get("kind") == "Status" and doc.get("status") == "Failure"


def status_class(path):
    """`message` for a message text, `reason` for the rest of a Status."""
    return "message" if path.endswith(".message") else "reason"


def events(label, ref, fs):
    """Differences of two event sequences: count, then each event's type and object."""
    out = []
    if len(ref) != len(fs):
        out.append(("watch", label, "events", f"{len(ref)} events: {types(ref)}", f"{len(fs)} events: {types(fs)}"))
    for i, (a, b) in enumerate(zip(ref, fs)):
        for path, x, y in diff(a, b, f"[{i}]"):
            out.append(("watch", label, path, x, y))
    return out


def types(evs):
    """The event types of a sequence, as one short string."""
    return " ".join(str(e.get("type")) for e in evs)


def diff(a, b, path):
    """(path, a's value, b's value) for every place where two JSON values differ. Objects by key
    (a key one side lacks shows `<absent>`), lists by index, the rest by equality."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(a) + [k for k in b if k not in a]:
            out.extend(diff(a.get(k, MISSING), b.get(k, MISSING), f"{path}.{k}"))
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = []
        for i in range(max(len(a), len(b))):
            out.extend(diff(a[i] if i < len(a) else MISSING, b[i] if i < len(b) else MISSING, f"{path}[{i}]"))
        return out
    if a == b:
        return []
    return [(path or ".", a, b)]
