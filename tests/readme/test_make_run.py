#!/usr/bin/env python3
"""The README's run command, as written, end to end: reads the `make run` line of the README's
"Running" section, runs it (with `DATA=` a fresh temporary directory, a variable the Makefile
takes) from the repository's root, waits until http://127.0.0.1:7701/readyz answers, applies a
ConfigMap with `kubectl apply --server-side` and reads it back with `kubectl get -o json`, then
stops the server with SIGINT (what Ctrl-C sends it) and checks that `make run` exits 0 in time.

Without kubectl (tests/readme/ensure_kubectl.sh installs Debian's `kubernetes-client` as root), the
kubectl part is SKIPPED, said on stdout, and the same apply and get go over plain HTTP instead.

Usage: test_make_run.py [--fresh]
  --fresh  the build `make run` starts must compile nothing: CI runs this after `make test`, which
           has built the binary and every dependency with the same features.
Exits non-zero on the first failed check.
"""

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
URL = "http://127.0.0.1:7701"
PORTS = (7700, 7701)
# Building from scratch takes long on a small machine (RocksDB's C++); after `make test`, seconds.
READY_LIMIT = 2400.0
READY_LIMIT_FRESH = 300.0
STOP_LIMIT = 30.0
NAME = "readme-run-check"


def fail(message, log_path=None):
    print(f"test_make_run: FAILED: {message}")
    if log_path and os.path.exists(log_path):
        with open(log_path, errors="replace") as f:
            tail = f.read()[-4000:]
        print("---- make run output (tail) ----\n" + tail + "\n----")
    sys.exit(1)


def readme_run_command():
    """The `make run` command of the README's "Running" section, as a list of words."""
    with open(os.path.join(REPO, "README.md")) as f:
        text = f.read()
    if "\n## Running\n" not in text:
        fail('README.md has no "## Running" section')
    section = text.split("\n## Running\n", 1)[1].split("\n## ", 1)[0]
    if "```sh\n" not in section:
        fail('README.md\'s "Running" section has no sh block')
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    for line in block.splitlines():
        command = line.split("#", 1)[0].strip()
        if command.split()[:2] == ["make", "run"]:
            if URL.split("//")[1] not in line:
                fail(f"the README's run line does not name {URL}: {line!r}")
            return shlex.split(command)
    fail("no `make run` line in the README's Running section")


def port_in_use(port):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def http(method, path, body=None, content_type="application/json"):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(URL + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", content_type)
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status, r.read()


def ready(proc, limit, log_path):
    """Waits until /readyz answers 200 (or `make run` ends, or `limit` passes)."""
    deadline = time.time() + limit
    while time.time() < deadline:
        if proc.poll() is not None:
            fail(f"`make run` exited with status {proc.returncode} before the server was ready", log_path)
        try:
            status, body = http("GET", "/readyz")
            if status == 200 and body.strip() == b"ok":
                return
        except (urllib.error.URLError, ConnectionError, socket.timeout, OSError):
            pass
        time.sleep(0.5)
    fail(f"the server was not ready within {limit:.0f} s", log_path)


def descendants(pid):
    """Every process below `pid`, from /proc: (pid, command name)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid …; comm may hold spaces and parentheses.
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append((int(entry), comm))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child[0])
    return out


def check_configmap(obj):
    assert obj["metadata"]["name"] == NAME, obj
    assert obj["data"] == {"greeting": "hello", "source": "README"}, obj["data"]


def check_applied_by(manager):
    """The ConfigMap's managedFields (read over HTTP: `kubectl get` hides them) name `manager`'s
    apply."""
    _, out = http("GET", f"/api/v1/namespaces/default/configmaps/{NAME}")
    managers = [(e["manager"], e["operation"]) for e in json.loads(out)["metadata"].get("managedFields", [])]
    assert (manager, "Apply") in managers, managers


def drive_with_kubectl(kubectl, tmp):
    manifest = os.path.join(tmp, "configmap.yaml")
    with open(manifest, "w") as f:
        f.write(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {NAME}\n  namespace: default\ndata:\n  greeting: hello\n  source: README\n")
    # No kubeconfig of the machine's: the server comes from --server alone.
    kubeconfig = os.path.join(tmp, "kubeconfig")
    open(kubeconfig, "w").close()
    env = dict(os.environ, KUBECONFIG=kubeconfig)

    def run(*args):
        r = subprocess.run([kubectl, "--server", URL, *args], env=env, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            fail(f"kubectl {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
        return r.stdout

    out = run("apply", "--server-side", "-f", manifest)
    assert NAME in out and "applied" in out, out
    print(f"  ok: kubectl apply --server-side: {out.strip()}")
    check_configmap(json.loads(run("get", "configmap", NAME, "-o", "json")))
    check_applied_by("kubectl")
    print("  ok: kubectl get configmap -o json: the applied data; managedFields: kubectl's Apply")


def drive_over_http():
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME}, "data": {"greeting": "hello", "source": "README"}}
    path = f"/api/v1/namespaces/default/configmaps/{NAME}"
    status, _ = http("PATCH", path + "?fieldManager=readme-check", body, "application/apply-patch+yaml")
    assert status in (200, 201), status
    status, out = http("GET", path)
    check_configmap(json.loads(out))
    check_applied_by("readme-check")
    print("  ok: server-side apply and get over HTTP")


def main():
    fresh = "--fresh" in sys.argv[1:]
    command = readme_run_command()
    for port in PORTS:
        if port_in_use(port):
            fail(f"127.0.0.1:{port} is in use: `make run` serves there (stop what listens on it)")
    tmp = tempfile.mkdtemp(prefix="fieldstore-make-run-")
    data = os.path.join(tmp, "data")
    log_path = os.path.join(tmp, "make-run.log")
    command = command + [f"DATA={data}"]
    print(f"test_make_run: {' '.join(command)} (in {REPO})")
    log = open(log_path, "w")
    # A session of its own: nothing of it outlives the test (killpg below), and Ctrl-C in the
    # terminal running the test does not reach it twice.
    proc = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        started = time.time()
        ready(proc, READY_LIMIT_FRESH if fresh else READY_LIMIT, log_path)
        print(f"  ok: ready at {URL}/readyz after {time.time() - started:.1f} s")
        if fresh:
            with open(log_path, errors="replace") as f:
                compiled = [line.strip() for line in f if line.lstrip().startswith("Compiling ")]
            if compiled:
                fail(f"`make run` after `make test` compiled {len(compiled)} crates: {compiled[:10]}", log_path)
            print("  ok: nothing compiled (the test build's binary and features)")
        if not os.path.isdir(data):
            fail(f"the server did not create the data directory {data}", log_path)
        kubectl = shutil.which("kubectl")
        if kubectl:
            drive_with_kubectl(kubectl, tmp)
        else:
            print("test_make_run: SKIPPED the kubectl part: kubectl is not installed (tests/readme/ensure_kubectl.sh installs it as root with apt); checking over plain HTTP instead")
            drive_over_http()
        servers = [pid for pid, comm in descendants(proc.pid) if comm == "fieldstore"]
        if len(servers) != 1:
            fail(f"expected one fieldstore process under `make run`, found {descendants(proc.pid)}", log_path)
        os.kill(servers[0], signal.SIGINT)
        try:
            code = proc.wait(STOP_LIMIT)
        except subprocess.TimeoutExpired:
            fail(f"`make run` did not exit within {STOP_LIMIT:.0f} s of SIGINT", log_path)
        if code != 0:
            fail(f"`make run` exited with status {code} after SIGINT", log_path)
        print("  ok: SIGINT stopped the server; `make run` exited 0")
    except AssertionError as e:
        fail(f"check failed: {e}", log_path)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    shutil.rmtree(tmp, ignore_errors=True)
    print("test_make_run: passed")


if __name__ == "__main__":
    main()
