#!/usr/bin/env python3
"""The web view (`/ui/`) in a real browser: Debian's chromium, headless, driven over the DevTools
protocol (websocket-client).

Starts `fieldstore serve` on free ports, makes a Deployment changed by three managers through the
HTTP API, and checks in the browser: the object list, the blame gutter naming the right manager on
the right lines, the `.spec.replicas` timeline, the object at older revisions (slider and keyboard),
the diff, the owners page, a live update through the watch, the token prompt of a server that
requires one, and a 10k-item object's page (its render time is printed, not asserted). Saves
1280x800 screenshots under docs/ (with --screenshots DIR, elsewhere).

Usage: test_web_view.py path/to/fieldstore [--screenshots DIR]
Skips (exit 0, with the reason printed) when chromium or websocket-client is missing and cannot be
installed.
"""

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '../support'))
from processes import stop  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TIMEOUT = 20.0


def skip(reason):
    print(f"test_web_view: SKIPPED: {reason}")
    sys.exit(0)


def end_process(proc, directory):
    """Stops a child process (SIGTERM, then SIGKILL after 10 s) and removes its directory."""
    stop(proc)
    shutil.rmtree(directory, ignore_errors=True)


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


# ---- the server ----


class Server:
    """`fieldstore serve` on free ports in a fresh data directory."""

    def __init__(self, binary, extra=()):
        self.dir = tempfile.mkdtemp(prefix="fieldstore-ui-")
        self.proc = subprocess.Popen(
            [binary, "--data", os.path.join(self.dir, "data"), "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", *extra],
            stdout=subprocess.PIPE,
            stderr=open(os.path.join(self.dir, "stderr"), "w"),
            text=True,
        )
        line = self.proc.stdout.readline()
        marker = "kubernetes API "
        if marker not in line:
            self.stop()
            raise SystemExit(f"test_web_view: unexpected first line {line!r}")
        self.url = line.split(marker, 1)[1].split(",")[0].split(")")[0].strip()
        self.token = None

    def request(self, method, path, body=None, content_type="application/json"):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{method} {path}: {e.code} {e.read()[:500]!r}") from None

    def apply(self, path, obj, manager, force=False):
        q = f"?fieldManager={manager}" + ("&force=true" if force else "")
        return self.request("PATCH", path + q, obj, "application/apply-patch+yaml")

    def strategic_patch(self, path, patch, manager):
        return self.request("PATCH", path + f"?fieldManager={manager}", patch, "application/strategic-merge-patch+json")

    def stop(self):
        end_process(self.proc, self.dir)


# ---- the browser ----


class Browser:
    """Headless chromium with one page, driven over the DevTools protocol."""

    def __init__(self, chromium):
        import websocket  # websocket-client

        self.profile = tempfile.mkdtemp(prefix="fieldstore-chromium-")
        self.proc = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--window-size=1280,800",
                "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + TIMEOUT
        while not (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1):
            if time.time() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port = open(port_file).read().split("\n")[0].strip()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            pages = [t for t in json.load(r) if t.get("type") == "page"]
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=TIMEOUT, suppress_origin=True)
        self.next_id = 0
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Emulation.setDeviceMetricsOverride", width=1280, height=800, deviceScaleFactor=1, mobile=False)
        self.console = []

    def send(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("method") == "Runtime.exceptionThrown":
                self.console.append(msg["params"]["exceptionDetails"].get("exception", {}).get("description", "exception"))
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def eval(self, expr):
        r = self.send("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise AssertionError(f"{expr}: {r['exceptionDetails'].get('exception', {}).get('description')}")
        return r.get("result", {}).get("value")

    def wait(self, expr, what, timeout=TIMEOUT):
        deadline = time.time() + timeout
        while True:
            v = self.eval(expr)
            if v:
                return v
            if time.time() > deadline:
                state = self.eval("document.body ? document.body.dataset.state + ' (status: ' + document.getElementById('status').textContent + '): ' + document.getElementById('main').innerText.slice(0, 300) : ''")
                raise AssertionError(f"timed out waiting for {what}; page: {state}; errors: {self.console}")
            time.sleep(0.05)

    def goto(self, url):
        self.send("Page.navigate", url=url)
        self.wait("document.readyState === 'complete' && document.body && document.body.dataset.state === 'ready'", f"{url} to load")

    def hash(self, h):
        """Moves to another page of the app (no reload) and waits until it has rendered."""
        self.eval(f"document.body.dataset.state = 'moving'; location.hash = {json.dumps(h)}; true")
        self.wait("document.body.dataset.state === 'ready'", f"page {h}")

    def key(self, key, code=None):
        text = {"Enter": "\r"}.get(key)
        for t in ("keyDown", "keyUp"):
            extra = {"text": text} if text and t == "keyDown" else {}
            self.send("Input.dispatchKeyEvent", type=t, key=key, code=code or key, windowsVirtualKeyCode=KEYS.get(key, 0), **extra)

    def type_text(self, text):
        self.send("Input.insertText", text=text)

    def screenshot(self, path):
        self.eval("document.activeElement && document.activeElement.blur && document.activeElement.blur(); true")
        data = self.send("Page.captureScreenshot", format="png", clip={"x": 0, "y": 0, "width": 1280, "height": 800, "scale": 1})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        end_process(self.proc, self.profile)


KEYS = {"ArrowLeft": 37, "ArrowUp": 38, "ArrowRight": 39, "ArrowDown": 40, "Enter": 13, "Tab": 9}

DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
CMS = "/api/v1/namespaces/default/configmaps"


def deployment(name, replicas, image="nginx:1.25", env=None):
    container = {"name": "nginx", "image": image, "ports": [{"containerPort": 80}]}
    if env is not None:
        container["env"] = env
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
        },
    }


def line(b, pointer, part):
    """The text of one part (`.g-m` manager, `.g-op`, `.y` YAML) of the line showing `pointer`."""
    return b.eval(f"(() => {{ const l = document.querySelector('.ln[data-pointer={json.dumps(pointer)}] {part}'); return l ? l.textContent.trim() : null; }})()")


def check(cond, message):
    if not cond:
        raise AssertionError(message)
    print(f"  ok: {message}")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    shots = os.path.join(REPO, "docs")
    if "--screenshots" in sys.argv:
        shots = sys.argv[sys.argv.index("--screenshots") + 1]
    os.makedirs(shots, exist_ok=True)
    chromium = find_chromium()
    if not chromium:
        skip("chromium is not installed (tests/browser/ensure_chromium.sh installs it as root on Debian)")
    try:
        import websocket  # noqa: F401
    except ImportError:
        skip("the Python package websocket-client is not installed")

    server = Server(binary)
    browser = None
    try:
        # A Deployment changed by three managers: deployer creates it, autoscaler takes
        # .spec.replicas, kubectl-edit updates the image; then autoscaler scales again.
        r1 = int(server.apply(f"{DEPLOY}/web", deployment("web", 1), "deployer")["metadata"]["resourceVersion"])
        r2 = int(server.apply(f"{DEPLOY}/web", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 3}}, "autoscaler", force=True)["metadata"]["resourceVersion"])
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}}
        r3 = int(server.strategic_patch(f"{DEPLOY}/web", patch, "kubectl-edit")["metadata"]["resourceVersion"])
        r4 = int(server.apply(f"{DEPLOY}/web", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 4}}, "autoscaler", force=True)["metadata"]["resourceVersion"])
        server.apply(f"{DEPLOY}/api", deployment("api", 2, "example/api:2"), "deployer")
        ui = server.url + "/ui/"
        browser = Browser(chromium)
        b = browser

        print("objects page")
        b.goto(ui + "#/objects?type=apps/v1/deployments&ns=default")
        rows = b.eval("[...document.querySelectorAll('#rows tr')].map(r => r.innerText.replace(/\\s+/g, ' ').trim())")
        check(len(rows) == 2 and rows[1].startswith("web") and "autoscaler" in rows[1], f"the list shows web with its last writer: {rows}")
        b.screenshot(os.path.join(shots, "ui-objects.png"))

        # The last writer is the manager of the object's last write: here an update by another
        # manager after an apply, named even when managedFields times do not order the writes
        # (whole seconds; another server's clock, or an import: here the applier's entry, which
        # keeps `team`, is dated later than the update of `mode`).
        server.apply(f"{CMS}/settings", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "safe", "team": "web"}}, "deployer")
        settings = server.request("GET", f"{CMS}/settings")
        for entry in settings["metadata"]["managedFields"]:
            entry["time"] = "2099-01-01T00:00:00Z"
        settings["data"]["mode"] = "fast"
        server.request("PUT", f"{CMS}/settings?fieldManager=kubectl-edit", settings)
        b.hash("#/objects?type=v1/configmaps&ns=default")
        rows = b.eval("[...document.querySelectorAll('#rows tr')].map(r => r.innerText.replace(/\\s+/g, ' ').trim())")
        check(len(rows) == 1 and rows[0].startswith("settings") and "kubectl-edit" in rows[0] and "Update" in rows[0], f"the last writer is the last write's manager: {rows}")

        print("object page: blame")
        b.hash("#/object?type=apps/v1/deployments&ns=default&name=web")
        for pointer, manager, text in [
            ("/spec/replicas", "autoscaler", "replicas: 4"),
            ("/spec/template/spec/containers/0/image", "kubectl-edit", "- image: nginx:1.27"),
            ("/spec/selector/matchLabels/app", "deployer", "app: web"),
            ("/spec/template/spec/containers/0/ports/0/containerPort", "deployer", "- containerPort: 80"),
        ]:
            got = (line(b, pointer, ".g-m"), line(b, pointer, ".y"))
            check(got == (manager, text), f"blame of {pointer}: {got}")
        check(line(b, "/spec/replicas", ".g-op") == "Apply" and line(b, "/spec/template/spec/containers/0/image", ".g-op") == "Update", "blame shows the operations")
        check(line(b, "/spec/replicas", ".g-own") == "autoscaler", "owners of .spec.replicas: autoscaler alone")
        check(line(b, "/spec", ".g-m") == "", "structure lines have no writer")

        print("field timeline")
        b.eval("document.querySelector('.ln[data-pointer=\"/spec/replicas\"]').click(); true")
        b.wait("document.querySelectorAll('#events tr[data-revision]').length === 3", "three events of .spec.replicas")
        events = b.eval("[...document.querySelectorAll('#events tr[data-revision]')].map(r => [Number(r.dataset.revision), r.dataset.manager, r.cells[4].textContent.trim()])")
        check(events == [[r4, "autoscaler", "3 → 4"], [r2, "autoscaler", "1 → 3"], [r1, "deployer", "added 1"]], f"timeline of .spec.replicas, newest first: {events}")
        check(b.eval("!!document.querySelector('#chart svg circle')") and b.eval("document.querySelectorAll('#chart svg circle').length") == 3, "a chart of the numeric field")
        check("field=.spec.replicas" in b.eval("location.hash"), "the URL names the open field")
        b.screenshot(os.path.join(shots, "ui-blame-timeline.png"))

        print("keyboard")
        b.eval("document.querySelector('.ln[data-pointer=\"/spec/selector\"]').focus(); true")
        b.key("ArrowDown")
        b.key("ArrowDown")
        focused = b.eval("document.activeElement.dataset.pointer")
        check(focused == "/spec/selector/matchLabels/app", f"arrow keys move between lines: {focused}")
        b.key("Enter")
        # .spec.selector is an atomic map: its lines open the timeline of the whole selector.
        b.wait("document.querySelector('#field h2') && document.querySelector('#field h2').textContent === '.spec.selector'", "Enter opens the focused field")

        print("time travel")
        b.hash(f"#/object?type=apps/v1/deployments&ns=default&name=web&view=at&rev={r4}")
        b.wait(f"document.querySelector('#at-code').dataset.revision === '{r4}'", "the object at the newest revision")
        b.eval(f"(() => {{ const s = document.querySelector('#slider'); s.value = '1'; s.dispatchEvent(new Event('input')); return true; }})()")
        b.wait(f"document.querySelector('#at-code').dataset.revision === '{r2}'", f"the object at revision {r2}")
        check(line(b, "/spec/replicas", ".y") == "replicas: 3", f"at revision {r2} replicas was 3")
        check(line(b, "/spec/template/spec/containers/0/image", ".y") == "- image: nginx:1.25", f"at revision {r2} the image was nginx:1.25")
        b.eval("document.querySelector('#slider').focus(); true")
        b.key("ArrowLeft")
        b.wait(f"document.querySelector('#at-code').dataset.revision === '{r1}'", f"the keyboard moves to revision {r1}")
        check(line(b, "/spec/replicas", ".y") == "replicas: 1", f"at revision {r1} replicas was 1")
        b.key("ArrowRight")
        b.key("ArrowRight")
        b.wait(f"document.querySelector('#at-code').dataset.revision === '{r3}'", f"the object at revision {r3}")
        b.screenshot(os.path.join(shots, "ui-time-travel.png"))

        print("diff")
        b.hash(f"#/object?type=apps/v1/deployments&ns=default&name=web&view=diff&a={r1}&b=current")
        dels = b.eval("[...document.querySelectorAll('.difft td.del code')].map(c => c.textContent.trim())")
        adds = b.eval("[...document.querySelectorAll('.difft td.add code')].map(c => c.textContent.trim())")
        check("replicas: 1" in dels and "replicas: 4" in adds, f"the diff of revision {r1} and now: - {dels} + {adds}")
        check("- image: nginx:1.25" in dels and "- image: nginx:1.27" in adds, "the diff shows the image change")
        b.screenshot(os.path.join(shots, "ui-diff.png"))

        print("owners page")
        b.hash("#/owners?type=apps/v1/deployments&manager=autoscaler")
        managers = b.eval("[...document.querySelectorAll('section[aria-labelledby=mgr-h] tbody tr td:first-child')].map(c => c.textContent.trim())")
        check(managers == ["autoscaler", "deployer", "kubectl-edit"], f"managers of deployments: {managers}")
        owned = b.eval("[...document.querySelectorAll('#owned-rows tr')].map(r => r.cells[0].textContent.trim())")
        check(owned == ["default/web"], f"autoscaler owns fields of: {owned}")
        check(b.eval("document.querySelectorAll('button[data-act=rename]').length") == 3, "rename and release are offered (no authorization rules)")
        b.eval("document.querySelector('#who input').value = '.spec.replicas'; document.querySelector('#who').requestSubmit(); true")
        b.wait("document.querySelectorAll('#who-out tbody tr').length === 2", "owners of .spec.replicas")
        who = b.eval("[...document.querySelectorAll('#who-out tbody tr')].map(r => r.cells[0].textContent.trim() + ' ' + r.cells[2].textContent.trim())")
        check(sorted(who) == ["default/api deployer", "default/web autoscaler"], f"who owns .spec.replicas: {who}")
        b.screenshot(os.path.join(shots, "ui-owners.png"))
        # Rename behind its confirmation: cancelling changes nothing, confirming renames.
        b.eval("document.querySelector('button[data-act=rename][data-manager=kubectl-edit]').click(); true")
        b.wait("document.getElementById('confirm-dialog').open", "the rename confirmation")
        b.eval("document.querySelector('#confirm-dialog button[value=cancel]').click(); true")
        b.wait("!document.getElementById('confirm-dialog').open", "the dialog to close")
        check(b.eval("document.querySelectorAll('button[data-act=rename]').length") == 3, "cancelling renames nothing")
        b.eval("document.querySelector('button[data-act=rename][data-manager=kubectl-edit]').click(); true")
        b.wait("document.getElementById('confirm-dialog').open", "the rename confirmation")
        b.type_text("editor")
        b.eval("document.body.dataset.state = 'moving'; document.querySelector('#confirm-dialog button[value=ok]').click(); true")
        b.wait("document.body.dataset.state === 'ready' && document.getElementById('status').textContent.includes('Renamed')", "the rename")
        managers = b.eval("[...document.querySelectorAll('section[aria-labelledby=mgr-h] tbody tr td:first-child')].map(c => c.textContent.trim())")
        check(managers == ["autoscaler", "deployer", "editor"], f"kubectl-edit renamed to editor: {managers}")

        print("live updates")
        b.hash("#/object?type=apps/v1/deployments&ns=default&name=web")
        b.wait("document.getElementById('live').textContent.startsWith('live')", "the watch to start")
        r6 = server.apply(f"{DEPLOY}/web", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 7}}, "autoscaler", force=True)["metadata"]["resourceVersion"]
        b.wait("(document.querySelector('.ln[data-pointer=\"/spec/replicas\"] .y') || {textContent: ''}).textContent.trim() === 'replicas: 7'", "the page to follow the write")
        check(b.eval("document.body.dataset.state") == "ready" and b.eval("document.body.dataset.liveRevision") == r6, f"updated in place to revision {r6}")

        print("timeline paging")
        server.apply(f"{DEPLOY}/scaled", deployment("scaled", 1), "deployer")
        for n in range(2, 27):
            server.apply(f"{DEPLOY}/scaled", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "scaled"}, "spec": {"replicas": n}}, "autoscaler", force=True)
        b.hash("#/object?type=apps/v1/deployments&ns=default&name=scaled&field=.spec.replicas")
        b.wait("document.querySelectorAll('#events tr[data-revision]').length === 20 && !document.getElementById('older').hidden", "the first page of 20 changes")
        b.eval("document.getElementById('older').click(); true")
        b.wait("document.querySelectorAll('#events tr[data-revision]').length === 26", "the second page")
        last = b.eval("[...document.querySelectorAll('#events tr[data-revision]')].slice(-1)[0].cells[4].textContent.trim()")
        check(last == "added 1" and b.eval("document.getElementById('older').hidden"), f"26 changes over two pages, the oldest last: {last}")
        check(b.eval("document.querySelectorAll('#chart svg circle').length") == 26, "the chart covers every loaded change")

        print("large object")
        env = [{"name": f"VAR_{i:05d}", "value": f"value-{i}"} for i in range(10000)]
        server.apply(f"{DEPLOY}/big", deployment("big", 1, env=env), "deployer")
        t0 = time.time()
        b.hash("#/object?type=apps/v1/deployments&ns=default&name=big")
        wall = (time.time() - t0) * 1000
        first = b.eval("document.querySelectorAll('.ln').length")
        b.wait("document.getElementById('code').dataset.complete === 'true'", "every line of the large object")
        lines = b.eval("document.querySelectorAll('.ln').length")
        check(lines > 20000, f"the 10k-item object renders all its {lines} lines")
        check(line(b, "/spec/template/spec/containers/0/env/9999/name", ".g-m") == "deployer", "the last item has its blame")
        ms = b.eval("({fetch: document.body.dataset.fetchMs, first: document.body.dataset.renderMs, all: document.body.dataset.renderAllMs})")
        print(
            f"  render: 10k-item Deployment, {lines} lines: usable (first {first} lines drawn) {ms['first']} ms after the page asked"
            f" (of which {ms['fetch']} ms fetching object and blame), every line {ms['all']} ms; the driver saw the page ready in {wall:.0f} ms"
        )
        b.screenshot(os.path.join(shots, "ui-large.png"))
        browser.close()
        browser = None
    finally:
        if browser:
            browser.close()
        server.stop()

    print("token prompt")
    tokens = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    tokens.write("s3cret,alice,1\n")
    tokens.close()
    server = Server(binary, ["--token-file", tokens.name])
    browser = Browser(chromium)
    try:
        b = browser
        b.send("Page.navigate", url=server.url + "/ui/")
        b.wait("document.getElementById('token-dialog') && document.getElementById('token-dialog').open", "the token prompt after a 401")
        b.eval("document.querySelector('#token-dialog button[value=cancel]').click(); true")
        b.wait("!!document.getElementById('sign-in')", "a sign-in button after the prompt was cancelled")
        b.eval("document.getElementById('sign-in').click(); true")
        b.wait("document.getElementById('token-dialog').open", "the token prompt again")
        b.eval("document.getElementById('token-input').focus(); true")
        b.type_text("s3cret")
        b.key("Enter")
        b.wait("document.body.dataset.state === 'ready' && !!document.querySelector('#rows')", "the objects page with the token")
        check(b.eval("sessionStorage.getItem('fieldstore.token')") == "s3cret" and b.eval("localStorage.length") == 0, "the token is kept in this tab only")
    finally:
        browser.close()
        server.stop()
        os.unlink(tokens.name)
    print(f"test_web_view: passed (screenshots in {shots})")


if __name__ == "__main__":
    main()
