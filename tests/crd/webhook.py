"""A CRD conversion webhook for the suite's `conversion` cases: HTTPS on loopback, with a CA and
certificate of its own (made by `reference/run.sh certs`), started once per process on first use.

It converts `conversion.crd.example.com` objects between v1 (`spec.size`) and v2 (`spec.count`):
the field is renamed, `apiVersion` set to the desired version, all else kept. An object whose size
or count is 13 is refused (`result.status: Failure`, message `13 is unlucky`).

Case files refer to it with `$(suite.webhook)` (its URL) and `$(suite.caBundle)` (its CA, base64);
`suite.run` replaces both in the answers by `<webhook-url>` and `<ca-bundle>`.
"""

import base64
import json
import os
import ssl
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_lock = threading.Lock()
_state = {}


def ensure():
    """Starts the webhook (once); returns {"webhook": URL, "caBundle": base64 CA}."""
    with _lock:
        if not _state:
            from suite import servers  # noqa: E402 - the harness's certificate maker
            cert_dir = tempfile.mkdtemp(prefix="fieldstore-crd-webhook.")
            servers.certs(cert_dir)
            server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(os.path.join(cert_dir, "serving.crt"), os.path.join(cert_dir, "serving.key"))
            server.socket = ctx.wrap_socket(server.socket, server_side=True)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            with open(os.path.join(cert_dir, "ca.crt"), "rb") as f:
                ca = base64.b64encode(f.read()).decode()
            _state.update(webhook=f"https://127.0.0.1:{server.server_address[1]}/convert", caBundle=ca)
        return dict(_state)


def convert(obj, desired):
    """One object to the desired apiVersion (v1 `size` <-> v2 `count`); None when refused."""
    out = json.loads(json.dumps(obj))
    spec = out.get("spec") if isinstance(out.get("spec"), dict) else None
    target = desired.rsplit("/", 1)[-1]
    if spec is not None:
        value = spec.get("size", spec.get("count"))
        if value == 13:
            return None
        if target == "v2" and "size" in spec:
            spec["count"] = spec.pop("size")
        elif target == "v1" and "count" in spec:
            spec["size"] = spec.pop("count")
    out["apiVersion"] = desired
    return out


class Handler(BaseHTTPRequestHandler):
    """POST /convert: a ConversionReview in, a ConversionReview out."""

    def do_POST(self):  # noqa: N802 - http.server's name
        review = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        req = review.get("request") or {}
        converted = [convert(o, req.get("desiredAPIVersion", "")) for o in req.get("objects") or []]
        if any(c is None for c in converted):
            response = {"uid": req.get("uid"), "result": {"status": "Failure", "message": "13 is unlucky"}}
        else:
            response = {"uid": req.get("uid"), "result": {"status": "Success"}, "convertedObjects": converted}
        body = json.dumps({"apiVersion": review.get("apiVersion", "apiextensions.k8s.io/v1"),
                           "kind": "ConversionReview", "response": response}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass
