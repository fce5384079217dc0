#!/usr/bin/env python3
"""kube-apiserver on each store (issue 37): the same kube-apiserver binary (REFERENCE_BIN, started by
reference/run.sh with its flags) once on etcd and once on `fieldstore serve --etcd-api`, each on a
fresh data directory on disk (fsync on: etcd's defaults, fieldstore's defaults; fieldstore keeps
field history, always), driven by the same client-go load generator (reference/loadgen: creates,
SSA applies of Deployments, LISTs, informer fan-out). Both stacks run side by side; the load
generator runs every workload against one and then the other before the next workload, and the
order of the two alternates between rounds.

Per workload and store: throughput, p50/p99 latency (as client-go sees it through kube-apiserver),
the storage process's CPU (user+system from /proc: etcd's, or fieldstore's) per unit, and
kube-apiserver's, for context; the storage data directory's bytes at the end of the round. The
results are appended to benches/ETCD_API_RESULTS.md, one section per invocation.

Usage: python3 benches/reference/on_stores.py [--rounds 2] [--fieldstore BIN] [--etcd BIN]
       [--compare BIN] [--results FILE] [--loadgen-args '...'] [--fieldstore-flags '...'] [--perf FILE]
Environment: REFERENCE_BIN (default reference/bin) holds kube-apiserver (`reference/run.sh build`).
--etcd defaults to /usr/bin/etcd (Debian's etcd 3.4) when present, else REFERENCE_BIN/etcd.
--compare BIN: a third stack, kube-apiserver on that other fieldstore binary (e.g. before a
change), in the same rounds; its storage CPU per unit is shown beside this one's.
--perf FILE: record fieldstore's CPU with `perf record --call-graph dwarf` during the last round's load.
"""
import argparse, datetime, json, os, shlex, shutil, socket, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as base  # noqa: E402  (benches/reference/run.py: process helpers, loadgen build)

ROOT, REF, RUN_SH, log = base.ROOT, base.REF, base.RUN_SH, base.log

# Loadgen arguments by default: every workload but the custom resources' (kube-apiserver keeps
# CustomResourceDefinitions at apiextensions.k8s.io/v1beta1, which fieldstore does not mirror yet),
# sized so that a round takes minutes on 2 cores, not tens of minutes.
DEFAULT_LOADGEN = "-workloads creates,apply,list,informers -creates 2000 -deployments 300 -list 10000 -list-repeats 2 -informers 10,100 -changes 1000"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def version(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    return (out.stdout + out.stderr).strip().splitlines()[0]


class Stack:
    """kube-apiserver (reference/run.sh start) on a storage process; `kind` is etcd or fieldstore."""

    def __init__(self, kind, dir, args, bin=None):
        self.kind, self.dir, self.args, self.bin = kind, dir, args, bin
        self.rundir = os.path.join(dir, "run")
        os.makedirs(dir, exist_ok=True)

    def start(self):
        env = dict(os.environ, REFERENCE_STATE=os.path.join(self.dir, "reference.state"))
        if self.kind == "etcd":
            env["REFERENCE_ETCD"] = self.args.etcd
            self.data = os.path.join(self.rundir, "etcd")
        else:
            port = free_port()
            self.data = os.path.join(self.dir, "data")
            self.fs = subprocess.Popen(
                [self.bin, "--data", self.data, "serve", "--listen", "127.0.0.1:0", "--no-http",
                 "--etcd-api", f"127.0.0.1:{port}"] + shlex.split(self.args.fieldstore_flags),
                stdout=open(os.path.join(self.dir, "fieldstore.log"), "w"), stderr=subprocess.STDOUT)
            self.store = self.fs.pid  # stopped by stop() even if kube-apiserver fails to start
            for _ in range(2000):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if self.fs.poll() is not None:
                        raise SystemExit(f"fieldstore exited (see {self.dir}/fieldstore.log)")
                    time.sleep(0.005)
            env["REFERENCE_ETCD_SERVERS"] = f"http://127.0.0.1:{port}"
        subprocess.run(RUN_SH + ["start", self.rundir], check=True, env=env, stdout=subprocess.DEVNULL)
        self.apiserver = int(base.read(os.path.join(self.rundir, "apiserver.pid")))
        if self.kind == "etcd":
            self.store = int(base.read(os.path.join(self.rundir, "etcd.pid")))

    def spec(self):
        return (f"name={self.kind},kubeconfig={self.rundir}/kubeconfig,data={self.data},"
                f"pids={self.apiserver}+{self.store},store={self.store}")

    def stop(self):
        for pid in [getattr(self, "apiserver", None), getattr(self, "store", None)]:
            if pid:
                base.stop_pid(pid)


def run_round(n, args, loadgen, work, perf):
    rdir = os.path.join(work, f"round{n}")
    kinds = ["etcd", "fieldstore"] + (["base"] if args.compare else [])
    if n % 2 == 0:
        kinds.reverse()
    bins = {"fieldstore": args.fieldstore, "base": args.compare}
    stacks = [Stack(k, os.path.join(rdir, k), args, bins.get(k)) for k in kinds]
    perf_proc = None
    try:
        for s in stacks:
            log(f"round {n}: starting kube-apiserver on {s.kind}")
            s.start()
        out = os.path.join(rdir, "loadgen.jsonl")
        cmd = [loadgen] + sum((["-server", s.spec()] for s in stacks), []) + ["-out", out] + shlex.split(args.loadgen_args)
        log(f"round {n}: loadgen", " ".join(shlex.quote(c) for c in cmd[1:]))
        if perf:
            fs = next(s for s in stacks if s.kind == "fieldstore")
            perf_proc = subprocess.Popen(["perf", "record", "--call-graph", "dwarf,32768", "-F", "997", "-p", str(fs.store), "-o", perf],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.time()
        with open(os.path.join(rdir, "loadgen.log"), "w") as lg_log:
            p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
            for line in p.stderr:
                lg_log.write(line)
                if not line[:1] in "IWE" or line.startswith("E"):
                    sys.stderr.write(line)
            p.wait()
        if p.returncode != 0:
            log(f"round {n}: loadgen exited {p.returncode} (see {rdir}/loadgen.log)")
        log(f"round {n}: loadgen took {time.time() - t0:.0f} s")
        if perf_proc:
            perf_proc.send_signal(2)
            perf_proc.wait()
        results = [json.loads(l) for l in open(out)]
        disk = {s.kind: base.du(s.data) for s in stacks}
    finally:
        if perf_proc and perf_proc.poll() is None:
            perf_proc.kill()
        for s in stacks:
            s.stop()
    if args.keep:
        log(f"round {n}: kept {rdir}")
    else:
        shutil.rmtree(rdir, ignore_errors=True)
    return results, disk, kinds


# ---- report ---------------------------------------------------------------------------------

WRITES = lambda w: w.startswith("create") or w.startswith("ssa deploy") or w == "watch: changes, no informer" or w.startswith("list setup")


def per_unit(r, key):
    return r[key] / r["ops"] * 1e6 if r and r["ops"] else None


def f1(x):
    return "—" if x is None else f"{x:,.1f}"


def ratio(a, b):
    return "n/a" if not a or not b else f"{b / a:.2f}"


def round_section(n, results, disk, kinds):
    E = {r["workload"]: r for r in results if r["server"] == "etcd"}
    F = {r["workload"]: r for r in results if r["server"] == "fieldstore"}
    B = {r["workload"]: r for r in results if r["server"] == "base"}
    order = list(dict.fromkeys(r["workload"] for r in results if r["workload"] != "error"))
    out = [f"### Round {n} (order: {' then '.join(kinds)} per workload)", "",
           "| workload | unit | ops | etcd /s | fs /s | etcd p99 ms | fs p99 ms | etcd CPU µs/unit | fs CPU µs/unit | store CPU fs/etcd | kube-apiserver µs/unit (on etcd / on fs) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for w in order:
        e, f = E.get(w), F.get(w)
        rate = lambda x: f"{x['ops'] / x['seconds']:,.0f}" if x and x["seconds"] else "—"
        p99 = lambda x: f"{x['p99_ms']:.1f}" if x and x["p99_ms"] else "—"
        api = lambda x: f1((x["cpu_seconds"] - x["store_cpu_seconds"]) / x["ops"] * 1e6) if x and x["ops"] else "—"
        se, sf = per_unit(e, "store_cpu_seconds"), per_unit(f, "store_cpu_seconds")
        out.append(f"| {w} | {(e or f)['unit']} | {(e or f)['ops']:,} | {rate(e)} | {rate(f)} | {p99(e)} | {p99(f)} "
                   f"| {f1(se)} | {f1(sf)} | {ratio(se, sf)} | {api(e)} / {api(f)} |")
    # The headline: storage CPU per write over every write workload.
    wr = [w for w in order if WRITES(w)]
    tot = lambda R, k: sum(R[w][k] for w in wr if w in R)
    ops = lambda R: sum(R[w]["ops"] for w in wr if w in R)
    we = tot(E, "store_cpu_seconds") / ops(E) * 1e6 if ops(E) else None
    wf = tot(F, "store_cpu_seconds") / ops(F) * 1e6 if ops(F) else None
    out += ["", "| | etcd | fieldstore | fs/etcd |", "|---|---|---|---|",
            f"| storage CPU per write (all write workloads: {ops(E):,} writes) | {f1(we)} µs | {f1(wf)} µs | {ratio(we, wf)} |",
            f"| bytes on disk at the end (`du -sb` of the data directory) | {disk['etcd'] / (1 << 20):,.1f} MiB | {disk['fieldstore'] / (1 << 20):,.1f} MiB | {ratio(disk['etcd'], disk['fieldstore'])} |",
            ""]
    out += base.errors_section(results, "Errors (word for word, with counts):")
    if B:
        wb = tot(B, "store_cpu_seconds") / ops(B) * 1e6 if ops(B) else None
        out += ["Against the `--compare` binary (base), same round — storage CPU µs per unit:", "",
                "| workload | base | fieldstore | fieldstore/base |", "|---|---|---|---|"]
        for w in order:
            b, f = per_unit(B.get(w), "store_cpu_seconds"), per_unit(F.get(w), "store_cpu_seconds")
            out.append(f"| {w} | {f1(b)} | {f1(f)} | {ratio(b, f)} |")
        out += [f"| **storage CPU per write** | {f1(wb)} | {f1(wf)} | {ratio(wb, wf)} |", ""]
        out.append(f"storage CPU per write, base/etcd: {ratio(we, wb)}")
    out.append(f"storage CPU per write, fs/etcd: {ratio(we, wf)}")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--fieldstore", default=os.path.join(ROOT, "target", "release", "fieldstore"))
    ap.add_argument("--etcd", default="/usr/bin/etcd" if os.access("/usr/bin/etcd", os.X_OK) else None)
    ap.add_argument("--compare", help="another fieldstore binary, run as a third stack (base)")
    ap.add_argument("--results", default=os.path.join(ROOT, "benches", "ETCD_API_RESULTS.md"))
    ap.add_argument("--loadgen-args", default=DEFAULT_LOADGEN)
    ap.add_argument("--fieldstore-flags", default="")
    ap.add_argument("--perf", help="perf.data file: fieldstore's CPU profile during the last round")
    ap.add_argument("--keep", action="store_true", help="keep the rounds' directories (logs, data)")
    args = ap.parse_args()
    args.fieldstore = os.path.abspath(args.fieldstore)
    bin = os.environ.get("REFERENCE_BIN", os.path.join(REF, "bin"))
    if not os.access(os.path.join(bin, "kube-apiserver"), os.X_OK):
        log(f"no kube-apiserver in {bin}: building it")
        subprocess.run(RUN_SH + ["build"], check=True)
    args.etcd = os.path.abspath(args.etcd or os.path.join(bin, "etcd"))
    if args.compare:
        args.compare = os.path.abspath(args.compare)
    if not os.access(args.fieldstore, os.X_OK):
        raise SystemExit(f"no fieldstore binary at {args.fieldstore} (cargo build --release, or --fieldstore BIN)")
    work = tempfile.mkdtemp(prefix="fieldstore-bench-stores.")
    loadgen = os.path.join(work, "loadgen")
    base.build_loadgen(loadgen)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    shown = os.path.relpath(args.fieldstore, ROOT) if args.fieldstore.startswith(ROOT) else args.fieldstore
    head = [f"### Run of {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} (commit `{commit}`, {args.rounds} round(s))", "",
            f"`{shown}`{f' (base: `{args.compare}`)' if args.compare else ''}; {version([args.etcd, '--version'])} (`{args.etcd}`); kube-apiserver `{bin}/kube-apiserver`; "
            f"loadgen arguments: `{args.loadgen_args}`; more fieldstore flags: `{args.fieldstore_flags or '(none)'}`; "
            f"load average at the start {' '.join(base.loadavg())} on {os.cpu_count()} CPUs.", ""]
    sections = []
    for n in range(1, args.rounds + 1):
        t0 = time.time()
        results, disk, kinds = run_round(n, args, loadgen, work, args.perf if n == args.rounds else None)
        sections.append(round_section(n, results, disk, kinds)
                        + f"\nRound {n} took {time.time() - t0:.0f} s; load average after it {' '.join(base.loadavg())}.\n")
        print(sections[-1])
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    with open(args.results, "a") as f:
        f.write("\n" + "\n".join(head + sections))
    log(f"appended to {args.results}")


if __name__ == "__main__":
    main()
