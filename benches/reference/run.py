#!/usr/bin/env python3
"""fieldstore against the real thing (issue 33): kube-apiserver on etcd (reference/, built from
k8s.io/kubernetes and etcd's server at the versions reference/go.mod names) and `fieldstore
serve`, driven by the same client-go load generator (reference/loadgen).

Per round: start the reference on a fresh run directory (`reference/run.sh start`; its
`ready_ms` is the empty start-to-ready time), start `fieldstore serve` on a fresh data directory
with the same serving certificate and token file (timed to its /readyz answering ok), run every
loadgen workload against both (JSON lines), then stop both and start both again on their data
(the restart-with-data start-to-ready time), and stop them. The results are appended to
benches/REFERENCE_RESULTS.md, one section per invocation with a table per workload and per round,
ending with the line `reference: apply X; create Y; list Z; watch W; rss R; start S` per round.

Usage: python3 benches/reference/run.py [--rounds 2] [--fieldstore BIN] [--results FILE]
       [--loadgen-args '...']   (e.g. '-creates 1000 -informers 10,100' for a quick try)
       [--fieldstore-flags='...'] (more `fieldstore serve` flags, e.g. --fieldstore-flags=--protobuf-storage)
Environment: REFERENCE_BIN (default reference/bin) holds kube-apiserver and etcd; built with
`reference/run.sh build` when missing.
"""
import argparse, datetime, json, os, shlex, shutil, signal, ssl, subprocess, sys, tempfile, time
import http.client

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REF = os.path.join(ROOT, "reference")
RUN_SH = ["bash", os.path.join(REF, "run.sh")]


def log(*a):
    print("run.py:", *a, file=sys.stderr, flush=True)


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def stop_pid(pid, timeout=10):
    """SIGTERM, then SIGKILL after `timeout` seconds; waits for the process to be gone."""
    if not alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    end = time.time() + timeout
    while alive(pid) and time.time() < end:
        try:  # reap our own children so that they do not linger as zombies
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:
            pass
        time.sleep(0.05)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            while alive(pid):
                time.sleep(0.05)


def read(path):
    with open(path) as f:
        return f.read().strip()


def du(path):
    return int(subprocess.check_output(["du", "-sb", path]).split()[0])


class Reference:
    """kube-apiserver + etcd through reference/run.sh, in run directory `dir`."""

    def __init__(self, dir):
        self.dir = dir

    def start(self):
        env = dict(os.environ, REFERENCE_STATE=os.path.join(self.dir, "..", "reference.state"))
        subprocess.run(RUN_SH + ["start", self.dir], check=True, env=env, stdout=subprocess.DEVNULL)
        self.pids = [int(read(os.path.join(self.dir, "apiserver.pid"))), int(read(os.path.join(self.dir, "etcd.pid")))]
        return int(read(os.path.join(self.dir, "ready_ms")))

    def stop(self):
        if not hasattr(self, "pids"):
            return
        # Not `run.sh stop`: that deletes the run directory, and the restart needs etcd's data.
        for pid in self.pids:
            stop_pid(pid)

    kubeconfig = property(lambda self: os.path.join(self.dir, "kubeconfig"))
    data = property(lambda self: os.path.join(self.dir, "etcd"))


class Fieldstore:
    """`fieldstore serve` on data directory `dir`/data with the reference run's certificate and
    token file; timed from spawn to GET /readyz answering 200 ok (polled every 5 ms)."""

    def __init__(self, bin, dir, certs, flags=()):
        self.bin, self.dir, self.certs, self.flags = bin, dir, certs, list(flags)
        os.makedirs(dir, exist_ok=True)

    data = property(lambda self: os.path.join(self.dir, "data"))
    kubeconfig = property(lambda self: os.path.join(self.dir, "kubeconfig"))

    def start(self):
        c = self.certs
        t0 = time.monotonic()
        self.out = open(os.path.join(self.dir, "stdout"), "a")
        self.proc = subprocess.Popen(
            [self.bin, "--data", self.data, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
             "--tls-cert", f"{c}/serving.crt", "--tls-key", f"{c}/serving.key", "--token-file", f"{c}/tokens.csv",
             "--max-watches-per-client", "5000"] + self.flags,
            stdout=subprocess.PIPE, stderr=open(os.path.join(self.dir, "stderr"), "a"), text=True)
        self.pids = [self.proc.pid]
        addr = None
        while addr is None:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"fieldstore exited before naming its listeners (see {self.dir}/stderr)")
            self.out.write(line)
            if "kubernetes API https://" in line:
                addr = line.split("kubernetes API https://")[1].split()[0].rstrip(",)")
        # Keep draining stdout so that the server never blocks on a full pipe.
        subprocess.Popen(["cat"], stdin=self.proc.stdout, stdout=self.out)
        host, port = addr.rsplit(":", 1)
        ctx = ssl.create_default_context(cafile=f"{c}/ca.crt")
        token = read(f"{c}/token")
        while True:
            try:
                conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=2)
                conn.request("GET", "/readyz", headers={"Authorization": f"Bearer {token}"})
                r = conn.getresponse()
                body = r.read()
                conn.close()
                if r.status == 200 and body.startswith(b"ok"):
                    break
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise SystemExit(f"fieldstore exited (see {self.dir}/stderr)")
            time.sleep(0.005)
        ready_ms = (time.monotonic() - t0) * 1000
        kc = read(f"{c}/kubeconfig")
        url = read(f"{c}/url")
        with open(self.kubeconfig, "w") as f:
            f.write(kc.replace(url, f"https://{addr}"))
        return ready_ms

    def stop(self):
        if hasattr(self, "proc"):
            stop_pid(self.proc.pid)
            self.out.close()


def build_loadgen(out):
    log("building reference/loadgen")
    subprocess.run(["go", "build", "-o", out, "./loadgen"], cwd=REF, check=True)


def loadavg():
    return read("/proc/loadavg").split()[:3]


def run_round(n, args, loadgen, work):
    """One round: fresh servers, every workload, restart on data. Returns (results, starts)."""
    rdir = os.path.join(work, f"round{n}")
    ref = Reference(os.path.join(rdir, "ref"))
    starts = {}
    log(f"round {n}: starting the reference")
    starts[("reference", "empty")] = ref.start()
    fs = Fieldstore(args.fieldstore, os.path.join(rdir, "fs"), ref.dir, shlex.split(args.fieldstore_flags))
    try:
        log(f"round {n}: starting fieldstore")
        starts[("fieldstore", "empty")] = fs.start()
        out = os.path.join(rdir, "loadgen.jsonl")
        spec = lambda name, s: f"name={name},kubeconfig={s.kubeconfig},data={s.data},pids={'+'.join(map(str, s.pids))}"
        cmd = [loadgen, "-server", spec("reference", ref), "-server", spec("fieldstore", fs), "-out", out] + shlex.split(args.loadgen_args)
        log(f"round {n}: loadgen", " ".join(shlex.quote(c) for c in cmd[1:]))
        t0 = time.time()
        lg_log = open(os.path.join(rdir, "loadgen.log"), "w")
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        for line in p.stderr:
            lg_log.write(line)
            if not line[:1] in "IWE" or line.startswith("E"):  # client-go's klog lines: log file only
                sys.stderr.write(line)
        p.wait()
        lg_log.close()
        if p.returncode != 0:
            log(f"round {n}: loadgen exited {p.returncode} (see {rdir}/loadgen.log)")
        log(f"round {n}: loadgen took {time.time() - t0:.0f} s")
        results = [json.loads(l) for l in open(out)]
        disk = {"reference": du(ref.data), "fieldstore": du(fs.data)}
        hwm = {"reference": hwm_kib(ref.pids), "fieldstore": hwm_kib(fs.pids)}
        log(f"round {n}: restarting both on their data")
        ref.stop()
        fs.stop()
        starts[("reference", "data")] = ref.start()
        starts[("fieldstore", "data")] = fs.start()
    finally:
        fs.stop()
        ref.stop()
    shutil.rmtree(rdir, ignore_errors=True)
    return results, starts, disk, hwm


def hwm_kib(pids):
    total = 0
    for pid in pids:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                total += int(line.split()[1])
    return total


# ---- report ---------------------------------------------------------------------------------

TARGETS = [  # key, what, target fs/ref (≤)
    ("apply", "server CPU per Deployment SSA apply (4 phases)", 0.2),
    ("apply10k", "server CPU per 10,000-item CR apply (create + re-apply)", 0.1),
    ("create", "server CPU per create (8 and 32 clients)", 0.3),
    ("list", "server CPU per listed object (paged + unpaged)", 0.3),
    ("watch", "server CPU per delivered event (the most informers)", 0.3),
    ("rss", "peak RSS (sum of VmHWM of the processes)", 0.25),
    ("start", "start-to-ready on 20,000+ objects", 1 / 20),
]


def by(results, server):
    return {r["workload"]: r for r in results if r["server"] == server}


def cpu_per(rs, names):
    """Server CPU seconds per op over the named rows (None when a row is missing or failed)."""
    rows = [rs.get(n) for n in names]
    if any(r is None or r["ok"] == 0 for r in rows):
        return None
    return sum(r["cpu_seconds"] for r in rows) / sum(r["ops"] for r in rows)


def headline(results, starts, hwm):
    """Per key: (reference cost, fieldstore cost)."""
    R, F = by(results, "reference"), by(results, "fieldstore")
    ssa = [w for w in R if w.startswith("ssa deploy:")]
    cr10 = [w for w in R if w.startswith("ssa cr 10k")]
    creates = [w for w in R if w.startswith("create 1KiB")]
    lists = [w for w in R if w.startswith("list ") and "setup" not in w]
    watch = sorted((w for w in R if w.startswith("watch:") and "changes" in w and "no informer" not in w),
                   key=lambda w: R[w].get("extra", {}).get("informers", 0))[-1:]
    h = {}
    for key, names in [("apply", ssa), ("apply10k", cr10), ("create", creates), ("list", lists), ("watch", watch)]:
        h[key] = (cpu_per(R, names), cpu_per(F, names))
    h["rss"] = (hwm["reference"], hwm["fieldstore"])
    h["start"] = (starts[("reference", "data")], starts[("fieldstore", "data")])
    return h


def fmt_ratio(ref, fs):
    if not ref or not fs:
        return "n/a"
    return f"{fs / ref:.3f}"


def fmt_adv(ref, fs):
    if not ref or not fs:
        return "n/a"
    return f"{ref / fs:.1f}"


def errors_section(results, heading):
    """The lines listing every workload's client errors, word for word with counts (none: no lines)."""
    errors = [r for r in results if r.get("errors")]
    if not errors:
        return []
    out = [heading, ""]
    for r in errors:
        for msg, c in r["errors"].items():
            out.append(f"- {r['server']}, {r['workload']}: {c} × `{msg}`")
    return out + [""]


def round_section(n, results, starts, disk, hwm):
    R, F = by(results, "reference"), by(results, "fieldstore")
    order = list(dict.fromkeys(r["workload"] for r in results if r["workload"] != "error"))
    groups = [("Creates of 1 KiB ConfigMaps", lambda w: w.startswith("create")),
              ("Server-Side Apply: Deployments", lambda w: w.startswith("ssa deploy")),
              ("Server-Side Apply: custom resource with a map-list of 1,000 / 10,000 items", lambda w: w.startswith("ssa cr")),
              ("LIST of 20,000 ConfigMaps (protobuf, decoded by client-go)", lambda w: w.startswith("list")),
              ("Informers (one watch each; 100 per HTTP/2 connection)", lambda w: w.startswith("watch"))]
    out = [f"### Round {n}", ""]
    for title, pred in groups:
        rows = [w for w in order if pred(w)]
        if not rows:
            continue
        out += [f"#### {title}", "",
                "| workload | unit | ops | ref /s | fs /s | ref p50 / p99 ms | fs p50 / p99 ms | ref CPU µs/unit | fs CPU µs/unit | CPU fs/ref | ref peak RSS MiB | fs peak RSS MiB | ref disk MiB | fs disk MiB | loadgen CPU s (ref / fs) |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for w in rows:
            r, f = R.get(w), F.get(w)
            cell = lambda x, k, fmt: (fmt.format(x[k]) if x else "—")
            rate = lambda x: f"{x['ops'] / x['seconds']:,.0f}" if x and x["seconds"] else "—"
            lat = lambda x: f"{x['p50_ms']:.2f} / {x['p99_ms']:.2f}" if x and x["p99_ms"] else "—"
            per = lambda x: f"{x['cpu_seconds'] / x['ops'] * 1e6:,.1f}" if x and x["ops"] else "—"
            mib = lambda x, k: f"{x[k] / (1 << 20 if k == 'disk_bytes' else 1024):,.0f}" if x else "—"
            client = lambda x: f"{x['client_cpu_seconds']:.1f}" if x and "client_cpu_seconds" in x else "—"
            ratio = fmt_ratio(r["cpu_seconds"] / r["ops"] if r and r["ops"] else None,
                              f["cpu_seconds"] / f["ops"] if f and f["ops"] else None)
            unit = (r or f)["unit"]
            out.append(f"| {w} | {unit} | {(r or f)['ops']:,} | {rate(r)} | {rate(f)} | {lat(r)} | {lat(f)} | {per(r)} | {per(f)} | {ratio} "
                       f"| {mib(r, 'peak_rss_kib')} | {mib(f, 'peak_rss_kib')} | {mib(r, 'disk_bytes')} | {mib(f, 'disk_bytes')} | {client(r)} / {client(f)} |")
        out.append("")
        if title.startswith("Informers"):
            out += ["| informers | expected events | ref delivered | fs delivered | ref writes s / all delivered s | fs writes s / all delivered s | ref CPU µs/event net of the writes | fs CPU µs/event net of the writes | net fs/ref |",
                    "|---|---|---|---|---|---|---|---|---|"]
            base_r, base_f = R.get("watch: changes, no informer"), F.get("watch: changes, no informer")
            for w in rows:
                r, f = R.get(w), F.get(w)
                if not r or "informers" not in r.get("extra", {}):
                    continue
                net = lambda x, b: (x["cpu_seconds"] - b["cpu_seconds"]) / x["ops"] * 1e6 if x and b and x["ops"] else None
                nr, nf = net(r, base_r), net(f, base_f)
                ex = lambda x: f"{x['extra']['writes_seconds']:.1f} / {x['extra']['delivered_seconds']:.1f}" if x else "—"
                out.append(f"| {r['extra']['informers']:,} | {r['extra']['expected_events']:,} | {r['ok']:,} | {f['ok'] if f else 0:,} | {ex(r)} | {ex(f)} "
                           f"| {nr:,.1f} | {nf:,.1f} | {fmt_ratio(nr, nf)} |" if nr is not None and nf is not None else
                           f"| {r['extra']['informers']:,} | {r['extra']['expected_events']:,} | {r['ok']:,} | {f['ok'] if f else 0:,} | {ex(r)} | {ex(f)} | — | — | — |")
            out.append("")
    out += ["#### Start-to-ready, bytes on disk, peak RSS", "",
            "| | reference (kube-apiserver + etcd) | fieldstore | fs/ref |", "|---|---|---|---|",
            f"| start-to-ready, empty data directory | {starts[('reference', 'empty')]:,.0f} ms | {starts[('fieldstore', 'empty')]:,.1f} ms | {fmt_ratio(starts[('reference', 'empty')], starts[('fieldstore', 'empty')])} |",
            f"| start-to-ready, data directory after the workloads (20,000+ objects) | {starts[('reference', 'data')]:,.0f} ms | {starts[('fieldstore', 'data')]:,.1f} ms | {fmt_ratio(starts[('reference', 'data')], starts[('fieldstore', 'data')])} |",
            f"| bytes on disk after the workloads (`du -sb`: etcd's data dir / fieldstore's) | {disk['reference'] / (1 << 20):,.1f} MiB | {disk['fieldstore'] / (1 << 20):,.1f} MiB | {fmt_ratio(disk['reference'], disk['fieldstore'])} |",
            f"| peak RSS over the run (VmHWM; reference: kube-apiserver's + etcd's) | {hwm['reference'] / 1024:,.0f} MiB | {hwm['fieldstore'] / 1024:,.0f} MiB | {fmt_ratio(hwm['reference'], hwm['fieldstore'])} |",
            ""]
    out += errors_section(results, "#### Errors (word for word, with counts)")
    h = headline(results, starts, hwm)
    out += ["#### Against the issue's targets (fieldstore / reference; ≤ target is met)", "",
            "| metric | reference | fieldstore | fs/ref | target | met |", "|---|---|---|---|---|---|"]
    for key, what, target in TARGETS:
        r, f = h[key]
        if key in ("rss",):
            show = lambda x: f"{x / 1024:,.0f} MiB" if x else "n/a"
        elif key == "start":
            show = lambda x: f"{x:,.0f} ms" if x else "n/a"
        else:
            show = lambda x: f"{x * 1e6:,.1f} µs" if x else "n/a"
        met = "n/a" if not r or not f else ("yes" if f / r <= target else "no")
        tgt = "1/20" if key == "start" else f"{target:g}"
        out.append(f"| {what} | {show(r)} | {show(f)} | {fmt_ratio(r, f)} | ≤ {tgt} | {met} |")
    out += ["",
            f"reference: apply {fmt_adv(*h['apply'])}; create {fmt_adv(*h['create'])}; list {fmt_adv(*h['list'])}; "
            f"watch {fmt_adv(*h['watch'])}; rss {fmt_adv(*h['rss'])}; start {fmt_adv(*h['start'])}", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--fieldstore", default=os.path.join(ROOT, "target", "release", "fieldstore"))
    ap.add_argument("--results", default=os.path.join(ROOT, "benches", "REFERENCE_RESULTS.md"))
    ap.add_argument("--loadgen-args", default="")
    ap.add_argument("--fieldstore-flags", default="", help="more `fieldstore serve` flags, e.g. --protobuf-storage")
    args = ap.parse_args()
    args.fieldstore = os.path.abspath(args.fieldstore)
    bin = os.environ.get("REFERENCE_BIN", os.path.join(REF, "bin"))
    if not (os.access(os.path.join(bin, "kube-apiserver"), os.X_OK) and os.access(os.path.join(bin, "etcd"), os.X_OK)):
        log(f"no kube-apiserver/etcd in {bin}: building them")
        subprocess.run(RUN_SH + ["build"], check=True)
    if not os.access(args.fieldstore, os.X_OK):
        raise SystemExit(f"no fieldstore binary at {args.fieldstore} (cargo build --release, or --fieldstore BIN)")
    work = tempfile.mkdtemp(prefix="fieldstore-bench-reference.")
    loadgen = os.path.join(work, "loadgen")
    build_loadgen(loadgen)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    head = [f"## Run of {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} (commit `{commit}`, {args.rounds} round(s))", "",
            f"`{os.path.relpath(args.fieldstore, ROOT) if args.fieldstore.startswith(ROOT) else args.fieldstore}`; "
            f"loadgen arguments: `{args.loadgen_args or '(defaults)'}`; more fieldstore flags: `{args.fieldstore_flags or '(none)'}`; load average at the start {' '.join(loadavg())} "
            f"on {os.cpu_count()} CPUs.", ""]
    sections = []
    for n in range(1, args.rounds + 1):
        t0 = time.time()
        results, starts, disk, hwm = run_round(n, args, loadgen, work)
        sections.append(round_section(n, results, starts, disk, hwm))
        sections[-1] += f"\nRound {n} took {time.time() - t0:.0f} s; load average after it {' '.join(loadavg())}.\n"
        print(sections[-1])
    shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(head + sections) + "\n"
    if not os.path.exists(args.results):
        text = "# fieldstore against kube-apiserver + etcd (issue 33)\n\n" + text
    with open(args.results, "a") as f:
        f.write(text)
    log(f"appended to {args.results}")


if __name__ == "__main__":
    main()
