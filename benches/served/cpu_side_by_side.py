#!/usr/bin/env python3
"""Server CPU per create and per listed object, etcd 3.4 and `fieldstore serve` side by side: the
workload of `../shared/oracle/etcd/side_by_side.py` (its own functions, loaded from that file, as
its `watch_side_by_side.py` does), with each server's CPU time (utime + stime of the process, from
/proc/PID/stat) read before and after each phase. side_by_side.py reports throughput only; the
issue's "server CPU per create" comes from this script.

Usage (from a copy of oracle/etcd, after its ./setup.sh):
  PROCS=8 .venv/bin/python /path/to/cpu_side_by_side.py FIELDSTORE_BIN PROTO_DIR [N=20000] [ROUNDS=2]
Fresh servers per round, alternating which goes first; prints one line per server and round and a
JSON summary."""
import json, os, resource, shutil, sys, time

HERE = os.getcwd()  # the oracle/etcd copy: run-etcd.sh, _gen/ and side_by_side.py are there
src = open(os.path.join(HERE, "side_by_side.py")).read().split("res = {")[0]
__file__ = os.path.join(HERE, "side_by_side.py")
exec(src)

TICK = os.sysconf("SC_CLK_TCK")


def cpu(pid):
    return sum(cpu_split(pid))


def cpu_split(pid):
    """(user, system) CPU seconds of the process: what it ran itself, and what the kernel ran for
    it (syscalls, loopback TCP, fsync, context switches)."""
    f = open(f"/proc/{pid}/stat").read().split(")")[1].split()
    return int(f[11]) / TICK, int(f[12]) / TICK


def etcd_pid():
    state = open(os.environ.get("ETCD_ORACLE_STATE", "/tmp/etcd-oracle.current")).read().strip()
    return int(open(state + "/etcd.pid").read())


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def own_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def phase(kind, target, pid):
    (u0, s0), k0 = cpu_split(pid), children_cpu()
    rate = creates(kind, target)
    (u1, s1), k1, o1 = cpu_split(pid), children_cpu(), own_cpu()
    lrate = list_all(kind, target)
    (u2, s2), o2 = cpu_split(pid), own_cpu()
    c0, c1, c2 = u0 + s0, u1 + s1, u2 + s2
    # The clients' CPU too: they share the machine's two cores with the server, which bounds
    # what any server can reach here.
    return {"create/s": rate, "cpu us/create": 1e6 * (c1 - c0) / N,
            "user us/create": 1e6 * (u1 - u0) / N, "system us/create": 1e6 * (s1 - s0) / N, "client cpu us/create": 1e6 * (k1 - k0) / N,
            "list/s": lrate, "cpu us/listed": 1e6 * (c2 - c1) / N,
            "user us/listed": 1e6 * (u2 - u1) / N, "client cpu us/listed": 1e6 * (o2 - o1) / N}


out = {"etcd": [], "fieldstore": []}
for r in range(ROUNDS):
    for kind in (("etcd", "fieldstore") if r % 2 == 0 else ("fieldstore", "etcd")):
        if kind == "etcd":
            t = start_etcd()
            try:
                out[kind].append(phase(kind, t, etcd_pid()))
            finally:
                stop_etcd()
        else:
            p, d, t = start_fs()
            try:
                out[kind].append(phase(kind, t, p.pid))
            finally:
                p.terminate(); p.wait(20); shutil.rmtree(d, ignore_errors=True)
        print(kind, f"round {r + 1}:", {k: round(v, 1) for k, v in out[kind][-1].items()}, flush=True)
print(json.dumps(out))
for k in ("create/s", "cpu us/create", "user us/create", "system us/create", "client cpu us/create",
          "list/s", "cpu us/listed", "user us/listed", "client cpu us/listed"):
    ratios = [f[k] / e[k] for f, e in zip(out["fieldstore"], out["etcd"])]
    print(f"N={N}, {PROCS} client processes: {k} fieldstore/etcd = {', '.join('%.2f' % x for x in ratios)}")
