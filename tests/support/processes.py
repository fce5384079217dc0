"""Helpers the Python tests and benches share for the server processes they start: the resident
memory of a process, and stopping one (SIGTERM, then SIGKILL after 10 s)."""

import subprocess


def rss_mib(pid):
    """The process's resident memory (VmRSS) in MiB; 0.0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
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
