"""The CRD conformance suite's shared part: loading the cases, running one case file against one
server, and classing a case's answer against the expected one.

The cases are scenarios of the differential harness (`tests/differential/scenario.py` documents the
format), one file per topic in `cases/`. A *case* is one compared step: a request (or watch) without
`compare: false`. Its id is `<scenario name>/<step's case>` where the step's `case` key names it
(else its `id`, else its position among the file's steps), so that ids stay stable when steps are
added elsewhere in the file.

Each case's answer is normalised on its own (`normalise.py`, a fresh Normaliser per case): its uids
and resourceVersions are labelled in order of appearance within that answer (`<uid:1>`, `<rv:1>`,
…), so that one case that differs (an object one server created and the other refused) does not
shift the labels of every later case; a `uid` of an object the answer does not hold (a DELETE's
`details.uid`) becomes `<uid>`. An object's `managedFields` entries are sorted (by manager,
operation, subresource): kube-apiserver orders them by time, to the second, and the CRD status
writes of its own controllers fall in the same second as the client's in an order that varies.
Beyond that, a failure's `details.causes` are
sorted (by field, reason, message): kube-apiserver lists schema errors in an order that changes
from one request to the next (Go map iteration), so the order is no contract.

Running a file on a server first deletes the CRDs its `cluster:` key lists (a leftover of an
earlier run on a reused server) and waits until they are gone; the files delete their CRDs at
their end themselves.
"""

import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DIFFERENTIAL = os.path.normpath(os.path.join(HERE, "..", "differential"))
sys.path.insert(0, DIFFERENTIAL)

import compare  # noqa: E402
import scenario  # noqa: E402
import servers  # noqa: E402
from normalise import Normaliser  # noqa: E402

CASES = os.path.join(HERE, "cases")
EXPECTED = os.path.join(HERE, "expected")
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def load(only=None):
    """The case files (scenarios), sorted by file name; `only` keeps the names containing it."""
    return [s for s in scenario.load(CASES) if not only or only in s["name"] or only in s["file"]]


def topic(sc):
    """A file's topic: its `topic` key, else its file name without `.yaml`."""
    return sc.get("topic") or sc["file"][:-5]


def case_ids(sc):
    """The ids of the records Runner.run returns (one per top-level step that is not a wait or a
    sleep), in order; None for setup steps (`compare: false`)."""
    ids, n = [], 0
    for step in sc["steps"]:
        if "wait" in step or "sleep" in step:
            continue
        n += 1
        if step.get("compare", True) is False:
            ids.append(None)
            continue
        ids.append(f"{sc['name']}/{step.get('case') or step.get('id') or f'{n:02d}'}")
    return ids


def prepare(ep, sc, timeout=90):
    """Deletes the CRDs the file lists under `cluster:` and waits for them to be gone."""
    runner = scenario.Runner(ep)
    names = sc.get("cluster") or []
    for name in names:
        runner.session.delete(f"{ep.url}{CRDS}/{name}", timeout=30)
    deadline = time.monotonic() + timeout
    for name in names:
        while time.monotonic() < deadline:
            if runner.session.get(f"{ep.url}{CRDS}/{name}", timeout=30).status_code == 404:
                break
            time.sleep(0.2)


def run(ep, sc, problems=None):
    """Runs one case file on one server; returns its normalised case records (each with `case`).
    A step that fails in the harness (a connection error, twice) becomes that case's record with
    the error as its status; the file goes on. Harness errors and waits that timed out are
    printed, and appended to `problems` when given."""
    problems = problems if problems is not None else []
    ids = case_ids(sc)
    runner = scenario.Runner(ep)
    ns = scenario.namespace_of(sc)
    try:
        prepare(ep, sc)
        runner.request({"method": "POST", "path": "/api/v1/namespaces",
                        "body": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}}, ns, {})
    except Exception as e:  # noqa: BLE001 - a failure is a difference, not a crash
        err = f"harness error: {e!r}"[:300]
        problems.append(f"{ep.name}: {sc['name']}: {err}")
        return [{"case": i, "label": "(harness)", "status": err, "headers": {}, "body": None} for i in ids if i]
    answers, records = {}, []
    env = {}
    if sc.get("webhook"):  # the file uses the suite's conversion webhook (webhook.py)
        import webhook  # noqa: E402
        env = webhook.ensure()
        answers["suite"] = env
    for step in sc["steps"]:
        for attempt in (1, 2):
            try:
                records.extend(runner.step(step, ns, answers))
                break
            except Exception as e:  # noqa: BLE001
                if attempt == 2 or "wait" in step:
                    problems.append(f"{ep.name}: {sc['name']}: harness error: {e!r}"[:300])
                    print(f"  {problems[-1]}", file=sys.stderr)
                    if "wait" not in step and "sleep" not in step:
                        records.append({"label": "(harness)", "status": f"harness error: {e!r}"[:300],
                                        "headers": {}, "body": None, "compare": step.get("compare", True)})
                    break
                time.sleep(1)
    for path in runner.timeouts:
        problems.append(f"{ep.name}: {sc['name']}: wait timed out: {path}")
        print(f"  {problems[-1]}", file=sys.stderr)
    out = []
    for case, rec in zip(ids, records):
        if case is None:
            continue
        rec = Normaliser().record(rec)
        rec["body"] = other_uids(rec.get("body"), None)
        if env:
            rec["body"] = replace_strings(rec["body"], {env["webhook"]: "<webhook-url>",
                                                        env["caBundle"]: "<ca-bundle>"})
        for doc in [rec.get("body")] + [ev.get("object") for ev in rec.get("events") or []]:
            sort_managed_fields(doc)
        rec.pop("compare", None)
        sort_causes(rec.get("body"))
        out.append(dict(case=case, **rec))
    return out


def other_uids(value, key):
    """Replaces the uids `Normaliser` did not label (objects not in the answer) by `<uid>`."""
    if isinstance(value, dict):
        return {k: other_uids(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [other_uids(v, key) for v in value]
    if key == "uid" and isinstance(value, str) and UUID.match(value):
        return "<uid>"
    return value


def replace_strings(value, mapping):
    """Every occurrence of a mapping key in the strings of `value` replaced by its value."""
    if isinstance(value, dict):
        return {k: replace_strings(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_strings(v, mapping) for v in value]
    if isinstance(value, str):
        for old, new in mapping.items():
            value = value.replace(old, new)
    return value


def sort_managed_fields(doc):
    """Sorts the managedFields of an answer's objects (itself, a list's items) in place."""
    if not isinstance(doc, dict):
        return
    for obj in [doc] + [i for i in doc.get("items") or [] if isinstance(i, dict)]:
        mf = (obj.get("metadata") or {}).get("managedFields") if isinstance(obj.get("metadata"), dict) else None
        if isinstance(mf, list):
            mf.sort(key=lambda e: (str(e.get("manager", "")), str(e.get("operation", "")),
                                   str(e.get("subresource", ""))))


def sort_causes(body):
    """Sorts a failure Status's `details.causes` in place (see the module's note)."""
    causes = ((body or {}).get("details") or {}).get("causes") if isinstance(body, dict) else None
    if isinstance(causes, list):
        causes.sort(key=lambda c: (str(c.get("field", "")), str(c.get("reason", "")), str(c.get("message", ""))))


def classify(expected, actual):
    """(`agree` | `message` | `differ`, differences) of one case: `message` when only error
    message texts differ (class `message` of compare.py)."""
    if actual is None:
        return "differ", [("status", expected["label"], "case", "recorded", "not run")]
    diffs = compare.compare_record(expected, actual)
    if not diffs:
        return "agree", diffs
    if all(c == "message" for c, *_ in diffs):
        return "message", diffs
    return "differ", diffs


def endpoint_from(url, token, ca, name):
    """An Endpoint for a running server."""
    return servers.Endpoint(name, url, token, ca)
