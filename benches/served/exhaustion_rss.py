#!/usr/bin/env python3
"""The server's memory and responsiveness under resource exhaustion, on loopback.

Starts `fieldstore serve` (with --metrics) on a temporary data directory, then runs, in turn,
each phase bounded in count and time:

  1a. 2,000 idle TCP connections to the HTTP port (opened, nothing sent);
  1b. 2,000 connections idle after one complete keep-alive request each;
  2.  50 slowloris connections sending one header byte per second;
  3.  500 stalled watchers (GET …/configmaps?watch=1, never read) during 2,000 writes of
      10 KiB ConfigMaps;
  4.  a label flood: 2,000 requests with distinct 1 KB HTTP methods, then 2,000 gRPC calls to
      distinct paths (HTTP/2 with prior knowledge, framed by hand), with the size of GET /metrics
      before and after;
  5.  2,000 ConfigMaps with 60 distinct labels each.

For each it reports the server's VmRSS (baseline, peak, after), the slowest /healthz answer
(probed every 250 ms on a fresh connection), and whether the server closed the phase's
connections and after how long. Prints a markdown table on stdout.

Usage: exhaustion_rss.py PATH_TO_FIELDSTORE_BINARY [MORE SERVE FLAGS, e.g. --idle-timeout-seconds 5]
Python 3.11 standard library only. Raises RLIMIT_NOFILE to its hard limit (the server inherits
it). The server runs with --max-watches-per-client 1000 so that phase 3's 500 watchers all start
(the default, 100, would refuse 400 of them with 429)."""

import http.client
import json
import os
import random
import resource
import selectors
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../tests/support'))
from processes import http_port, rss_mib, serve, stop  # noqa: E402

HOST = "127.0.0.1"
RSS_ABORT_MIB = 4096  # a phase stops its traffic when the server grows beyond this
TCHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def open_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


class Monitor(threading.Thread):
    """Samples the server's RSS every 50 ms and probes /healthz every 250 ms; per phase: peak
    RSS, slowest probe, failed probes."""

    def __init__(self, pid, http_port):
        super().__init__(daemon=True)
        self.pid, self.port = pid, http_port
        self.lock = threading.Lock()
        self.stop_ = threading.Event()
        self.reset()
        threading.Thread(target=self.probe, daemon=True).start()

    def reset(self):
        with self.lock:
            self.peak = rss_mib(self.pid)
            self.worst = 0.0
            self.fails = []
            self.probes = 0

    def run(self):
        while not self.stop_.is_set():
            r = rss_mib(self.pid)
            with self.lock:
                self.peak = max(self.peak, r)
            self.stop_.wait(0.05)

    def probe(self):
        while not self.stop_.is_set():
            t0 = time.monotonic()
            err = None
            try:
                c = http.client.HTTPConnection(HOST, self.port, timeout=10)
                c.request("GET", "/healthz")
                resp = c.getresponse()
                resp.read()
                if resp.status != 200:
                    err = f"HTTP {resp.status}"
                c.close()
            except Exception as e:  # noqa: BLE001 - any failure is reported
                err = f"{type(e).__name__}: {e}"
            dt = time.monotonic() - t0
            with self.lock:
                self.probes += 1
                self.worst = max(self.worst, dt)
                if err:
                    self.fails.append(err)
            self.stop_.wait(0.25)


def start_server(binary, data, extra=()):
    log = open(os.path.join(data, "server.log"), "wb")
    proc, line = serve(binary, data, ["--metrics", "127.0.0.1:0", "--max-watches-per-client", "1000", *extra],
                       stderr=log, who="exhaustion_rss")
    grpc = line.split()[3]
    metrics = line.split("metrics http://", 1)[1].split("/metrics")[0].strip()
    port = lambda a: int(a.rsplit(":", 1)[1])  # noqa: E731
    return proc, port(grpc), http_port(line), port(metrics), log


def raw_request(port, method, path, body=b"", headers=(), timeout=10):
    """One request on a fresh connection: (status or None, body, error)."""
    hs = f"Host: {HOST}:{port}\r\nConnection: close\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    if body or method in ("POST", "PUT", "PATCH"):
        hs += f"Content-Length: {len(body)}\r\n"
    try:
        s = socket.create_connection((HOST, port), timeout=timeout)
    except OSError as e:
        return None, b"", f"connect: {e}"
    try:
        s.sendall(f"{method} {path} HTTP/1.1\r\n{hs}\r\n".encode("latin-1") + body)
        r = http.client.HTTPResponse(s, method=method)
        r.begin()
        return r.status, r.read(), None
    except Exception as e:  # noqa: BLE001
        return None, b"", f"{type(e).__name__}: {e}"
    finally:
        s.close()


def metrics_size(port):
    code, body, err = raw_request(port, "GET", "/metrics")
    return len(body) if code == 200 else f"? ({code} {err})"


def watch_closures(socks, opened, seconds, stop_early=True):
    """Waits up to `seconds` for the server to close (EOF, reset or an answer) each socket:
    {index: (seconds after open, what)}."""
    sel = selectors.DefaultSelector()
    for i, s in enumerate(socks):
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, i)
    closed = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end and (len(closed) < len(socks) or not stop_early):
        for key, _ in sel.select(timeout=max(0.0, min(0.5, end - time.monotonic()))):
            i = key.data
            try:
                d = key.fileobj.recv(65536)
                what = "EOF" if not d else d.split(b"\r\n", 1)[0].decode("latin-1", "replace")[:40]
            except ConnectionResetError:
                what = "reset"
            except BlockingIOError:
                continue
            if i not in closed:
                closed[i] = (time.monotonic() - opened[i], what)
            if not d or what == "reset":
                sel.unregister(key.fileobj)
            # An answer (408, …) without a close: keep waiting for the EOF, note the first line.
    sel.close()
    return closed


def describe_closures(closed, n, seconds):
    if not closed:
        return f"none of {n} closed within {seconds:g} s"
    ts = sorted(t for t, _ in closed.values())
    whats = {}
    for _, w in closed.values():
        whats[w] = whats.get(w, 0) + 1
    kinds = ", ".join(f"{w} ×{c}" for w, c in sorted(whats.items(), key=lambda x: -x[1])[:3])
    return (f"{len(closed)}/{n} closed after {ts[0]:.1f}–{ts[-1]:.1f} s (median {statistics.median(ts):.1f} s; {kinds})")


def close_all(socks):
    for s in socks:
        try:
            s.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------

class Bench:
    def __init__(self, proc, grpc, http_port, metrics):
        self.proc, self.grpc, self.http, self.metrics = proc, grpc, http_port, metrics
        self.mon = Monitor(proc.pid, http_port)
        self.mon.start()
        self.rows = []
        self.notes = []

    def phase(self, name, fn):
        time.sleep(1.0)  # settle
        base = rss_mib(self.proc.pid)
        self.mon.reset()
        t0 = time.monotonic()
        try:
            closed, note = fn()
        except Exception as e:  # noqa: BLE001 - a failing phase is reported, the others still run
            closed, note = "—", f"phase failed: {type(e).__name__}: {e}"
        dt = time.monotonic() - t0
        time.sleep(2.0)  # the server releases what the phase held
        with self.mon.lock:
            peak, worst, fails, probes = self.mon.peak, self.mon.worst, list(self.mon.fails), self.mon.probes
        after = rss_mib(self.proc.pid)
        alive = self.proc.poll() is None
        hz = f"{worst * 1000:.0f} ms ({probes} probes{', ' + str(len(fails)) + ' failed: ' + fails[0][:60] if fails else ''})"
        self.rows.append((name, f"{base:.0f}", f"{peak:.0f}", f"{after:.0f}" if alive else "server died", hz, closed,
                          f"{note}; {dt:.0f} s"))
        print(f"  {name}: RSS {base:.0f}/{peak:.0f}/{after:.0f} MiB, healthz {hz}, {closed}; {note}", file=sys.stderr)
        if not alive:
            raise SystemExit(f"the server exited during {name} (status {self.proc.returncode})")

    # 1a
    def idle(self, n=2000, hold=15.0):
        socks, opened, failed = self.hold_open(n, lambda s: True)
        fds = open_fds(self.proc.pid)
        closed = watch_closures(socks, opened, hold)
        close_all(socks)
        return describe_closures(closed, len(socks), hold), f"{len(socks)} open ({failed} failed to connect), server fds {fds}"

    # 1b
    def idle_after_request(self, n=2000, hold=15.0):
        req = f"GET /healthz HTTP/1.1\r\nHost: {HOST}:{self.http}\r\n\r\n".encode()

        def one_request(s):
            s.sendall(req)
            buf = b""
            while b"\r\n\r\n" not in buf:
                d = s.recv(4096)
                if not d:
                    break
                buf += d
            head, _, rest = buf.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v.strip())
            while len(rest) < length:
                d = s.recv(4096)
                if not d:
                    break
                rest += d
            return head.startswith(b"HTTP/1.1 200")

        socks, opened, bad = self.hold_open(n, one_request)
        fds = open_fds(self.proc.pid)
        closed = watch_closures(socks, opened, hold)
        close_all(socks)
        return describe_closures(closed, len(socks), hold), f"{len(socks)} kept alive ({bad} failed), server fds {fds}"

    def hold_open(self, n, prepare):
        """Opens n connections to the HTTP port, each made ready by prepare(socket) (False: it
        failed, the socket is kept all the same); returns the sockets, when each was opened, and
        how many failed."""
        socks, opened, failed = [], [], 0
        for _ in range(n):
            try:
                s = socket.create_connection((HOST, self.http), timeout=5)
                if not prepare(s):
                    failed += 1
                socks.append(s)
                opened.append(time.monotonic())
            except OSError:
                failed += 1
        return socks, opened, failed

    # 2
    def slowloris(self, n=50, seconds=20.0):
        socks, opened = [], []
        for _ in range(n):
            s = socket.create_connection((HOST, self.http), timeout=5)
            s.sendall(f"GET /healthz HTTP/1.1\r\nHost: {HOST}:{self.http}\r\nX-Slow: ".encode())
            s.setblocking(False)
            socks.append(s)
            opened.append(time.monotonic())
        closed = {}
        sent = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end and len(closed) < n:
            for i, s in enumerate(socks):
                if i in closed:
                    continue
                try:
                    d = s.recv(4096)
                    closed[i] = (time.monotonic() - opened[i],
                                 "EOF" if not d else d.split(b"\r\n", 1)[0].decode("latin-1", "replace")[:40])
                    continue
                except BlockingIOError:
                    pass
                except OSError:
                    closed[i] = (time.monotonic() - opened[i], "reset")
                    continue
                try:
                    s.send(b"a")
                    sent += 1
                except OSError:
                    closed[i] = (time.monotonic() - opened[i], "send failed")
            time.sleep(max(0.0, 1.0 - (time.monotonic() % 1.0)))
        close_all(socks)
        return describe_closures(closed, n, seconds), f"{sent} header bytes sent"

    # 3
    def stalled_watchers(self, n=500, writes=2000, size=10 << 10):
        socks, opened = [], []
        req = (f"GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\nHost: {HOST}:{self.http}\r\n"
               f"User-Agent: stalled-watcher\r\n\r\n").encode()
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a reader that never reads
            s.settimeout(5)
            s.connect((HOST, self.http))
            s.sendall(req)
            socks.append(s)
            opened.append(time.monotonic())
        time.sleep(1.0)
        codes = {}
        for s in socks:
            try:
                head = s.recv(16, socket.MSG_PEEK | socket.MSG_DONTWAIT)
                code = head[9:12].decode() if head.startswith(b"HTTP/1.1 ") else "?"
            except OSError:
                code = "none"
            codes[code] = codes.get(code, 0) + 1
        # The writes: two writers on keep-alive connections.
        payload = "x" * size
        done, errors, wdt, aborted = self.create_configmaps(
            writes, lambda i: {"metadata": {"name": f"stall-{i}"}, "data": {"d": payload}})
        # Which watchers has the server closed (FIN or reset seen by the kernel)?
        time.sleep(5.0)
        states = {}
        for s in socks:
            try:
                st = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]
            except OSError:
                st = -1
            name = {1: "open", 7: "reset/closed", 8: "closed by server"}.get(st, f"state {st}")
            states[name] = states.get(name, 0) + 1
        fds = open_fds(self.proc.pid)
        m = raw_request(self.metrics, "GET", "/metrics")[1].decode("utf-8", "replace")
        gauge = next((ln.split()[-1] for ln in m.splitlines() if ln.startswith("fieldstore_watches ")), "?")
        close_all(socks)
        closed_n = sum(v for k, v in states.items() if k != "open")
        closed_txt = (f"{closed_n}/{n} closed by {wdt + 5:.0f} s after the writes began ({states})" if closed_n
                      else f"none of {n} closed ({states}) 5 s after the writes")
        note = (f"watch answers {codes}; {done} writes in {wdt:.1f} s ({errors or 'all 201'})"
                f"{'; ABORTED at ' + str(RSS_ABORT_MIB) + ' MiB' if aborted else ''}; fieldstore_watches {gauge}; server fds {fds}")
        return closed_txt, note

    # 4
    def method_flood(self, n=2000):
        rng = random.Random(7)
        before = metrics_size(self.metrics)
        codes = {}
        for _ in range(n):
            m = "".join(rng.choice(TCHARS) for _ in range(1024))
            code, _, err = raw_request(self.http, m, "/healthz")
            k = str(code) if code else (err or "?")[:30]
            codes[k] = codes.get(k, 0) + 1
        after = metrics_size(self.metrics)
        return "—", f"HTTP answers {codes}; GET /metrics {before} → {after} bytes"

    def grpc_flood(self, n=2000):
        before = metrics_size(self.metrics)
        done, err = h2_flood(self.grpc, [f"/fieldstore.flood.v1.S{i}/Method{i:05d}x{random.Random(i).getrandbits(64):016x}"
                                         for i in range(n)])
        after = metrics_size(self.metrics)
        how = "HTTP/2 prior knowledge, hand-framed"
        return "—", f"{how}: {done}/{n} calls answered{' (' + err + ')' if err else ''}; GET /metrics {before} → {after} bytes"

    def create_configmaps(self, n, object_of):
        """POSTs n ConfigMaps (object_of(i) gives metadata and data) from two writers on keep-alive
        connections, stopping when the server's RSS passes RSS_ABORT_MIB. Returns how many were
        sent, the answers other than 201 by code or error, the seconds taken and whether it
        stopped early."""
        done, errors, aborted = [0], {}, [False]
        lock = threading.Lock()

        def writer(k):
            c = http.client.HTTPConnection(HOST, self.http, timeout=30)
            for i in range(k, n, 2):
                if aborted[0]:
                    return
                if rss_mib(self.proc.pid) > RSS_ABORT_MIB:
                    aborted[0] = True
                    return
                body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", **object_of(i)})
                try:
                    c.request("POST", "/api/v1/namespaces/default/configmaps", body, {"Content-Type": "application/json"})
                    r = c.getresponse()
                    r.read()
                    key = str(r.status)
                except Exception as e:  # noqa: BLE001
                    key = type(e).__name__
                    c.close()
                    c = http.client.HTTPConnection(HOST, self.http, timeout=30)
                with lock:
                    done[0] += 1
                    if key != "201":
                        errors[key] = errors.get(key, 0) + 1
            c.close()

        t0 = time.monotonic()
        ws = [threading.Thread(target=writer, args=(k,)) for k in range(2)]
        for w in ws:
            w.start()
        for w in ws:
            w.join()
        return done[0], errors, time.monotonic() - t0, aborted[0]

    # 5
    def label_flood(self, n=2000, labels=60):
        before = metrics_size(self.metrics)
        done, errors, wdt, _ = self.create_configmaps(n, lambda i: {
            "metadata": {"name": f"lab-{i}", "labels": {f"k{i}-{j}.example.com/l{j}": f"v{i}-{j}" for j in range(labels)}},
            "data": {"a": "b"}})
        t1 = time.monotonic()
        code, body, _ = raw_request(self.http, "GET", "/api/v1/namespaces/default/configmaps?labelSelector=k7-3.example.com%2Fl3%3Dv7-3")
        sel = time.monotonic() - t1
        items = len(json.loads(body).get("items", [])) if code == 200 else f"? ({code})"
        after = metrics_size(self.metrics)
        return "—", (f"{done} creates in {wdt:.1f} s ({errors or 'all 201'}); a labelSelector LIST: {items} item in "
                     f"{sel * 1000:.0f} ms; GET /metrics {before} → {after} bytes")


# ---------------------------------------------------------------------------------------------
# HTTP/2 with prior knowledge, enough for gRPC calls that are answered with trailers only.

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def h2_frame(ftype, flags, sid, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + sid.to_bytes(4, "big") + payload


def hpack_int(v, bits, flags=0):
    top = (1 << bits) - 1
    if v < top:
        return bytes([flags | v])
    out = [flags | top]
    v -= top
    while v >= 128:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def hpack_literal(name, value):
    """A literal header field without indexing, new name, no Huffman coding."""
    return b"\x00" + hpack_int(len(name), 7) + name + hpack_int(len(value), 7) + value


def h2_flood(port, paths, batch=100, timeout=10.0):
    """POSTs an empty gRPC message to each path; returns (streams ended by the server, error)."""
    s = socket.create_connection((HOST, port), timeout=timeout)
    wlock = threading.Lock()
    ended = set()
    cv = threading.Condition()
    state = {"err": None, "goaway": False}

    def send(b):
        with wlock:
            s.sendall(b)

    def reader():
        buf = b""
        try:
            while True:
                while len(buf) < 9:
                    d = s.recv(65536)
                    if not d:
                        raise EOFError("connection closed")
                    buf += d
                ln = int.from_bytes(buf[:3], "big")
                while len(buf) < 9 + ln:
                    d = s.recv(65536)
                    if not d:
                        raise EOFError("connection closed")
                    buf += d
                ftype, flags, sid = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
                payload, buf = buf[9:9 + ln], buf[9 + ln:]
                if ftype == 4 and not flags & 1:
                    send(h2_frame(4, 1, 0))
                elif ftype == 6 and not flags & 1:
                    send(h2_frame(6, 1, 0, payload))
                elif ftype == 0 and ln:
                    send(h2_frame(8, 0, 0, ln.to_bytes(4, "big")))
                if (ftype in (0, 1) and flags & 1) or ftype == 3:
                    with cv:
                        ended.add(sid)
                        cv.notify_all()
                if ftype == 7:
                    with cv:
                        state["goaway"] = True
                        state["err"] = f"GOAWAY {payload[4:8].hex()}"
                        cv.notify_all()
        except Exception as e:  # noqa: BLE001
            with cv:
                state["err"] = state["err"] or f"{type(e).__name__}: {e}"
                cv.notify_all()

    send(PREFACE + h2_frame(4, 0, 0))
    threading.Thread(target=reader, daemon=True).start()
    authority = f"{HOST}:{port}".encode()
    sid = 1
    for start in range(0, len(paths), batch):
        sids = []
        out = b""
        for p in paths[start:start + batch]:
            block = (hpack_literal(b":method", b"POST") + hpack_literal(b":scheme", b"http") +
                     hpack_literal(b":path", p.encode()) + hpack_literal(b":authority", authority) +
                     hpack_literal(b"content-type", b"application/grpc") + hpack_literal(b"te", b"trailers"))
            out += h2_frame(1, 0x4, sid, block) + h2_frame(0, 0x1, sid, b"\x00\x00\x00\x00\x00")
            sids.append(sid)
            sid += 2
        try:
            send(out)
        except OSError as e:
            return len(ended), f"send: {e}"
        deadline = time.monotonic() + timeout
        with cv:
            while not all(x in ended for x in sids) and not state["goaway"] and time.monotonic() < deadline:
                if state["err"]:
                    break
                cv.wait(0.2)
        if state["err"] and not all(x in ended for x in sids):
            break
    s.close()
    return len(ended), state["err"] if len(ended) < len(paths) else None


# ---------------------------------------------------------------------------------------------

def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        pass
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    # Connection counts fit the limit: both ends of every loopback connection are in this
    # machine, but only ours count against our limit (the server's against its own, inherited).
    conns = max(100, min(2000, nofile - 500))
    data = tempfile.mkdtemp(prefix="fieldstore-exhaustion-")
    proc, grpc, http_port, metrics, log = start_server(binary, data, sys.argv[2:])
    b = Bench(proc, grpc, http_port, metrics)
    t0 = time.monotonic()
    print(f"  server pid {proc.pid}, RLIMIT_NOFILE {nofile}, baseline RSS {rss_mib(proc.pid):.0f} MiB", file=sys.stderr)
    try:
        b.phase(f"1a. {conns} idle TCP connections (nothing sent), held 15 s", lambda: b.idle(conns))
        b.phase(f"1b. {conns} idle keep-alive connections after one request each, held 15 s",
                lambda: b.idle_after_request(conns))
        b.phase("2. 50 slowloris connections, one header byte per second, 20 s", b.slowloris)
        b.phase("3. 500 stalled watchers during 2,000 writes of 10 KiB ConfigMaps", b.stalled_watchers)
        b.phase("4a. 2,000 requests with distinct 1 KB HTTP methods", b.method_flood)
        b.phase("4b. 2,000 gRPC calls to distinct paths", b.grpc_flood)
        b.phase("5. 2,000 ConfigMaps with 60 distinct labels each", b.label_flood)
    finally:
        b.mon.stop_.set()
        final = rss_mib(proc.pid)
        stop(proc)
        log.close()
        with open(os.path.join(data, "server.log"), "rb") as f:
            panics = [ln for ln in f.read().decode("utf-8", "replace").splitlines() if "panicked at" in ln]
        shutil.rmtree(data, ignore_errors=True)
    print("| phase | RSS baseline MiB | RSS peak MiB | RSS after MiB | slowest /healthz | server closed the connections | notes |")
    print("|---|---|---|---|---|---|---|")
    for row in b.rows:
        print("| " + " | ".join(str(x).replace("|", "\\|") for x in row) + " |")
    print()
    print(f"Final RSS {final:.0f} MiB; {len(panics)} panics in the server log"
          f"{': ' + panics[0][:160] if panics else ''}; total {time.monotonic() - t0:.0f} s. "
          f"Server flags: --metrics, --max-watches-per-client 1000; RLIMIT_NOFILE {nofile}.")


if __name__ == "__main__":
    main()
