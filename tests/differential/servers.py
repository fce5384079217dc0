"""Starting and stopping the two servers the differential harness compares.

The reference is kube-apiserver on etcd, started by `reference/run.sh start` (which makes the run
directory: CA, serving certificate, token file). fieldstore is started on a fresh data directory
inside that run directory, with the same serving certificate and token file, so that one client
configuration (CA, bearer token) reaches both.
"""

import os
import select
import subprocess
import threading
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
RUN_SH = os.path.join(REPO, "reference", "run.sh")


@dataclass
class Endpoint:
    """One server as the client sees it: its base URL, bearer token and CA file."""
    name: str
    url: str
    token: str
    ca: str
    stop: callable = field(default=lambda: None, repr=False)


def certs(run_dir):
    """Makes a run directory with a CA, serving certificate and token file (`run.sh certs`)."""
    subprocess.run(["bash", RUN_SH, "certs", run_dir], check=True)


def start_reference(reference_bin, run_dir=None):
    """Starts etcd and kube-apiserver with `run.sh start`; returns (Endpoint, run dir)."""
    env = dict(os.environ, REFERENCE_BIN=reference_bin,
               REFERENCE_STATE=os.path.join("/tmp", f"fieldstore-differential.{os.getpid()}.state"))
    args = ["bash", RUN_SH, "start"] + ([run_dir] if run_dir else [])
    out = subprocess.run(args, check=True, env=env, stdout=subprocess.PIPE, text=True).stdout
    run_dir = out.strip().splitlines()[-1]

    def stop():
        subprocess.run(["bash", RUN_SH, "stop", run_dir], env=env, check=False)

    url = read(run_dir, "url")
    return Endpoint("reference", url, read(run_dir, "token"), os.path.join(run_dir, "ca.crt"), stop), run_dir


def start_fieldstore(binary, run_dir):
    """Starts `fieldstore serve` on a fresh data directory with the run dir's certificate and
    tokens; returns its Endpoint (the Kubernetes API's https URL from the first stdout line)."""
    data = os.path.join(run_dir, "fieldstore-data")
    log = open(os.path.join(run_dir, "fieldstore.log"), "wb")
    proc = subprocess.Popen(
        [binary, "--data", data, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
         "--tls-cert", os.path.join(run_dir, "serving.crt"), "--tls-key", os.path.join(run_dir, "serving.key"),
         "--token-file", os.path.join(run_dir, "tokens.csv")],
        stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    line = proc.stdout.readline().decode() if ready else ""
    if "kubernetes API " not in line:
        proc.kill()
        raise SystemExit(f"differential: fieldstore did not start: {line!r}")
    url = line.split("kubernetes API ", 1)[1].split(",")[0].split(")")[0].strip()
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()

    def stop():
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()

    return Endpoint("fieldstore", url, read(run_dir, "token"), os.path.join(run_dir, "ca.crt"), stop)


def read(run_dir, name):
    """One line file of the run directory, stripped."""
    with open(os.path.join(run_dir, name)) as f:
        return f.read().strip()
