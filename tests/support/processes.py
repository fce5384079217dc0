"""Helpers the Python tests and benches share for the server processes they start: starting
`fieldstore serve` on ephemeral ports, the resident memory of a process, and stopping one
(SIGTERM, then SIGKILL after 10 s)."""

import os
import select
import subprocess
import threading


def serve(binary, data, flags=(), stderr=subprocess.DEVNULL, who="server"):
    """Starts `BINARY --data DATA/store serve --listen 127.0.0.1:0 --http 127.0.0.1:0 FLAGS`, waits
    up to 60 s for its `fieldstore: serving on …` line and keeps its stdout drained (so that it
    never fills): (process, that line). Exits the caller, naming `who`, when it does not start."""
    proc = subprocess.Popen([binary, "--data", os.path.join(data, "store"), "serve", "--listen", "127.0.0.1:0",
                             "--http", "127.0.0.1:0", *flags], stdout=subprocess.PIPE, stderr=stderr,
                            stdin=subprocess.DEVNULL)
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    line = proc.stdout.readline().decode() if ready else ""
    if not line.startswith("fieldstore: serving on "):
        proc.kill()
        raise SystemExit(f"{who}: the server did not start: {line!r}")
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    return proc, line


def http_port(line):
    """The HTTP API's port in a server's `fieldstore: serving on …` line."""
    return int(line.split("kubernetes API http://", 1)[1].split(",")[0].split(")")[0].strip().rsplit(":", 1)[1])


def rss_mib(pid, field="VmRSS"):
    """The process's resident memory (VmRSS; or another of its status's kB fields, such as
    RssAnon, its own memory without file pages) in MiB; 0.0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def stop(proc):
    """Stops a child process: SIGTERM, then SIGKILL when it has not exited within 10 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
