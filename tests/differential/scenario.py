"""Scenarios as data, and running one against one server.

A scenario file (`scenarios/*.yaml`) is a mapping:

    name: configmap-create            # unique; its namespace is `d-<name>` (cut to 63 characters)
    description: what it shows
    cluster: [crd-name, ...]          # optional: cluster-scoped objects it creates (for the report)
    steps: [...]

A step is one of:

- a request: `method`, `path`, optional `query` (mapping), `headers` (mapping), `body` (any YAML
  value: sent as YAML when the Content-Type names yaml, else as JSON), `raw` (a string sent as is),
  `patch` (json | merge | strategic | apply: a PATCH with that Content-Type), `id` (to refer to
  its answer later), `compare: false` (run it, do not compare it: setup);
- `watch: PATH` with `query`, `during` (steps run once the watch is open), `events` (how many to
  collect), `timeout` (seconds, default 3), `bookmarks` (keep BOOKMARK events; default false);
- `wait: PATH` with `until` (`Established`: the CRD condition; an HTTP code such as 200; or a
  mapping `{status: CODE, path: a.b, value: V}`: that code, and when `path` is given the answer's
  value there equal to V) and `timeout` (default 30): polls every 0.1 s; never compared. With
  `method`/`body`/`query`/`patch`/`headers` the poll is that request (e.g. a `dryRun=All` create
  that shows a CRD update has reached the custom resource handler) instead of a GET;
- `sleep: SECONDS`: pauses; never compared.

Strings in paths, queries, headers and bodies are templates: `{ns}` is the scenario's namespace,
`$(id.a.b)` the value at `a.b` of the answer of step `id` (on the same server; list indexes are
numbers: `$(l.items.0.metadata.name)`); a string that is only `$(...)` takes the value's type.
"""

import json
import os
import re
import threading
import time

import requests
import yaml

PATCH_TYPES = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}
REF = re.compile(r"\$\(([^)]+)\)")


def load(directory):
    """Every scenario in `directory`, sorted by file name; checks the names are unique."""
    scenarios, seen = [], set()
    for fname in sorted(os.listdir(directory)):
        if not fname.endswith(".yaml"):
            continue
        with open(os.path.join(directory, fname)) as f:
            sc = yaml.safe_load(f)
        sc["file"] = fname
        if sc["name"] in seen:
            raise SystemExit(f"differential: scenario name {sc['name']!r} twice ({fname})")
        seen.add(sc["name"])
        scenarios.append(sc)
    return scenarios


def namespace_of(scenario):
    """The scenario's own namespace: `d-` and its name, a valid DNS label."""
    slug = re.sub(r"[^a-z0-9-]", "-", scenario["name"].lower())
    return ("d-" + slug)[:63].rstrip("-")


class Runner:
    """Runs scenarios against one server, with one HTTP session."""

    def __init__(self, endpoint):
        self.endpoint = endpoint
        self.session = requests.Session()
        self.session.trust_env = False  # no proxy, no CA bundle from the environment: the run's CA
        self.session.verify = endpoint.ca
        self.session.headers["Authorization"] = f"Bearer {endpoint.token}"
        self.timeouts = []  # the waits that timed out (their paths)

    def run(self, scenario):
        """Creates the scenario's namespace, runs its steps; returns one record per step."""
        ns = namespace_of(scenario)
        self.request({"method": "POST", "path": "/api/v1/namespaces",
                      "body": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}}, ns, {})
        answers, records = {}, []
        for step in scenario["steps"]:
            records.extend(self.step(step, ns, answers))
        return records

    def step(self, step, ns, answers):
        """Runs one step; returns its records (none for waits; `compare` False for setup steps,
        which are normalised, so that their uids and resourceVersions get labels, not compared)."""
        if "wait" in step:
            self.wait(step, ns, answers)
            return []
        if "sleep" in step:
            time.sleep(float(step["sleep"]))
            return []
        if "watch" in step:
            return [self.watch(step, ns, answers)]
        rec = self.request(step, ns, answers)
        if step.get("id"):
            answers[step["id"]] = rec["body"]
        rec["compare"] = step.get("compare", True) is not False
        return [rec]

    def request(self, step, ns, answers):
        """Sends one request step; returns {label, status, headers, body}."""
        method = step.get("method", "PATCH" if "patch" in step else "GET")
        path = subst(step["path"], ns, answers)
        query = subst(step.get("query") or {}, ns, answers)
        headers = {k: str(v) for k, v in subst(step.get("headers") or {}, ns, answers).items()}
        if "patch" in step:
            headers.setdefault("Content-Type", PATCH_TYPES[step["patch"]])
        data = None
        if "raw" in step:
            data = subst(step["raw"], ns, answers).encode()
            headers.setdefault("Content-Type", "application/json")
        elif "body" in step:
            body = subst(step["body"], ns, answers)
            headers.setdefault("Content-Type", "application/json")
            data = encode(body, headers["Content-Type"]).encode()
        headers.setdefault("Accept", "application/json")
        r = self.session.request(method, self.endpoint.url + path, params=query, headers=headers, data=data,
                                 timeout=30)
        return {"label": f"{method} {step['path']}" + (f" ({step['patch']})" if "patch" in step else ""),
                "status": r.status_code, "headers": client_headers(r), "body": decode(r)}

    def watch(self, step, ns, answers):
        """Opens a watch, runs the `during` steps, collects events; returns one record."""
        path = subst(step["watch"], ns, answers)
        query = dict(subst(step.get("query") or {}, ns, answers), watch="true")
        want, timeout = step.get("events", 1), step.get("timeout", 3)
        keep_bookmarks = step.get("bookmarks", False)
        events, status, opened = [], {}, threading.Event()
        resp_box = {}

        def read():
            try:
                r = self.session.get(self.endpoint.url + path, params=query, stream=True, timeout=timeout + 5,
                                     headers={"Accept": "application/json"})
                resp_box["r"] = r
                status["code"] = r.status_code
                status["headers"] = client_headers(r)
                opened.set()
                if r.status_code != 200:
                    status["body"] = decode(r)
                    return
                for line in r.iter_lines():
                    if not line:
                        continue
                    ev = json.loads(line)
                    if ev.get("type") == "BOOKMARK" and not keep_bookmarks:
                        continue
                    events.append(ev)
                    if len(events) >= want:
                        return
            except (requests.RequestException, ValueError, AttributeError):
                pass
            finally:
                opened.set()

        t = threading.Thread(target=read, daemon=True)
        t.start()
        opened.wait(timeout + 5)
        time.sleep(0.1)  # the watch is registered on the server before the writes
        for sub in step.get("during", []):
            self.step(sub, ns, answers)
        t.join(timeout)
        if "r" in resp_box:
            resp_box["r"].close()
        return {"label": f"WATCH {step['watch']}", "status": status.get("code"), "headers": status.get("headers", {}),
                "body": status.get("body"), "events": events, "want": want}

    def wait(self, step, ns, answers):
        """Polls a path until the condition holds (or the timeout passes)."""
        path = subst(step["wait"], ns, answers)
        until, deadline = step.get("until", 200), time.monotonic() + step.get("timeout", 30)
        probe = any(k in step for k in ("method", "body", "patch", "query", "headers"))
        while time.monotonic() < deadline:
            if probe:
                rec = self.request(dict(step, path=step["wait"]), ns, answers)
                if isinstance(until, dict) and rec["status"] == until.get("status", 200) and (
                        "path" not in until or lookup({"a": rec["body"]}, "a." + until["path"]) == until.get("value")):
                    return
                if rec["status"] == until:
                    return
                time.sleep(0.1)
                continue
            r = self.session.get(self.endpoint.url + path, timeout=10, headers={"Accept": "application/json"})
            if isinstance(until, dict):
                if r.status_code == until.get("status", 200) and ("path" not in until or lookup(
                        {"a": decode(r)}, "a." + until["path"]) == until.get("value")):
                    return
            elif until == "Established":
                conds = ((decode(r) or {}).get("status") or {}).get("conditions") or [] if r.status_code == 200 else []
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                    return
            elif r.status_code == until:
                return
            time.sleep(0.1)
        self.timeouts.append(path)


def subst(value, ns, answers):
    """Fills `{ns}` and `$(id.path)` in every string of `value` (recursively)."""
    if isinstance(value, dict):
        return {subst(k, ns, answers): subst(v, ns, answers) for k, v in value.items()}
    if isinstance(value, list):
        return [subst(v, ns, answers) for v in value]
    if not isinstance(value, str):
        return value
    value = value.replace("{ns}", ns)
    whole = REF.fullmatch(value)
    if whole:
        return lookup(answers, whole.group(1))
    return REF.sub(lambda m: str(lookup(answers, m.group(1))), value)


def lookup(answers, ref):
    """The value at `id.a.b.0.c` in the recorded answers (None when missing)."""
    head, *rest = ref.split(".")
    cur = answers.get(head)
    for part in rest:
        if isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        elif isinstance(cur, dict):
            cur = cur.get(part)
        else:
            return None
    return cur


def encode(body, content_type):
    """A body as YAML when the Content-Type says yaml, else JSON (strings are sent as they are)."""
    if isinstance(body, str):
        return body
    if "yaml" in content_type:
        return yaml.dump(body, Dumper=QuotingDumper, sort_keys=False)
    return json.dumps(body)


YAML11_WORDS = {"y", "yes", "n", "no", "on", "off", "true", "false"}


class QuotingDumper(yaml.SafeDumper):
    """A YAML dumper that quotes the strings YAML 1.1 reads as booleans (`y`, `on`, …), which
    PyYAML leaves bare: kube-apiserver reads YAML as 1.1 and would see a boolean."""


def _str(dumper, value):
    style = "'" if value.lower() in YAML11_WORDS else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


QuotingDumper.add_representer(str, _str)


def decode(r):
    """A response body: JSON, YAML or text by its Content-Type; None when empty."""
    if not r.content:
        return None
    ct = r.headers.get("Content-Type", "")
    try:
        if "json" in ct:
            return r.json()
        if "yaml" in ct:
            return yaml.safe_load(r.text)
    except ValueError:
        pass
    return r.text[:500]


def client_headers(r):
    """The response headers clients read: Content-Type and the Warning values (in order)."""
    warnings = r.raw.headers.getlist("Warning") if hasattr(r.raw, "headers") and r.raw.headers else []
    return {"Content-Type": r.headers.get("Content-Type"), "Warning": warnings}
