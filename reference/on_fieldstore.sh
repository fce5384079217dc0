#!/usr/bin/env bash
# An unmodified kube-apiserver (bin/kube-apiserver, as reference/run.sh builds it) keeping its
# cluster in fieldstore through fieldstore's etcd API (`fieldstore serve --etcd-api`) instead of
# etcd: start both on loopback, wait for /readyz, run a kubectl smoke test (namespaces; a
# ConfigMap created, patched, deleted; a Deployment; a CustomResourceDefinition, and a custom
# resource server-side applied, patched and deleted under `kubectl get -w`), check fieldstore's
# blame of a ConfigMap kube-apiserver wrote (created, patched, server-side applied: each field
# named with its writer, read from fieldstore's own HTTP API), show what etcdctl sees, and stop
# both. Same flags for kube-apiserver as run.sh's reference run.
#
#   on_fieldstore.sh FIELDSTORE_BINARY [DIR]     (DIR kept for inspection when given)
#
# Needs kubectl, etcdctl, openssl, curl; REFERENCE_BIN as run.sh.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${REFERENCE_BIN:-$HERE/bin}
FIELDSTORE=${1:?usage: on_fieldstore.sh FIELDSTORE_BINARY [DIR]}
DIR=${2:-$(mktemp -d /tmp/fieldstore-on-etcd-api.XXXXXX)}
KEEP=${2:+1}
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)

die() { echo "on_fieldstore: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
now_ms() { date +%s%3N; }
[ -x "$BIN/kube-apiserver" ] || die "no $BIN/kube-apiserver; run 'reference/run.sh build' (or make reference)"

bash "$HERE/run.sh" certs "$DIR"
eport=$(free_port); sport=$(free_port); hport=$(free_port)
pids=()
stop() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -n "$KEEP" ] || rm -rf "$DIR"
}
trap stop EXIT
t0=$(now_ms)
"$FIELDSTORE" --data "$DIR/data" serve --listen 127.0.0.1:0 --http "127.0.0.1:$hport" --etcd-api "127.0.0.1:$eport" > "$DIR/fieldstore.log" 2>&1 &
pids+=($!)
"$BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$eport" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$sport" \
    --tls-cert-file "$DIR/serving.crt" --tls-private-key-file "$DIR/serving.key" \
    --token-auth-file "$DIR/tokens.csv" --authorization-mode AlwaysAllow \
    --service-account-key-file "$DIR/sa.pub" --service-account-signing-key-file "$DIR/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --service-cluster-ip-range 10.0.0.0/24 \
    --endpoint-reconciler-type none \
    > "$DIR/apiserver.log" 2>&1 &
pids+=($!)
url="https://127.0.0.1:$sport"
cat > "$DIR/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: fieldstore
  cluster: {server: "$url", certificate-authority: "$DIR/ca.crt"}
users:
- name: admin
  user: {token: "$(cat "$DIR/token")"}
contexts:
- name: fieldstore
  context: {cluster: fieldstore, user: admin}
current-context: fieldstore
KC
export KUBECONFIG=$DIR/kubeconfig
ready=
for _ in $(seq 1200); do
    if curl -sf --cacert "$DIR/ca.crt" -H "Authorization: Bearer $(cat "$DIR/token")" "$url/readyz" 2>/dev/null | grep -q '^ok'; then
        ready=$(( $(now_ms) - t0 )); break
    fi
    kill -0 "${pids[1]}" 2>/dev/null || { tail -20 "$DIR/apiserver.log" >&2; die "kube-apiserver exited"; }
    sleep 0.05
done
[ -n "$ready" ] || { tail -20 "$DIR/apiserver.log" >&2; die "kube-apiserver not ready after 60 s"; }
echo "on_fieldstore: kube-apiserver ready on fieldstore's etcd API in $ready ms"
kubectl get namespaces
kubectl create configmap demo --from-literal=a=1
kubectl patch configmap demo -p '{"data":{"a":"2"}}'
[ "$(kubectl get configmap demo -o jsonpath='{.data.a}')" = 2 ] || die "patch not read back"
kubectl delete configmap demo
# Objects, not blobs: what kube-apiserver put is fieldstore's object, its fields blamed on their
# writers (managedFields' managers: kubectl-create, kubectl-patch, the server-side applier).
kubectl create configmap blamed --from-literal=a=1 --from-literal=b=1
kubectl patch configmap blamed -p '{"data":{"b":"2"}}'
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: blamed}\ndata: {c: "3"}\n' | kubectl apply --server-side --field-manager=applier -f -
curl -sf "http://127.0.0.1:$hport/api/v1/namespaces/default/configmaps/blamed/blame" > "$DIR/blame.json" || die "no blame of configmap blamed"
python3 - "$DIR/blame.json" <<'PY' || die "blame does not name the writers"
import json, sys
lines = {l["path"]: l for l in json.load(open(sys.argv[1]))}
want = {".data.a": ("1", "kubectl-create"), ".data.b": ("2", "kubectl-patch"), ".data.c": ("3", "applier")}
got = {p: (lines.get(p, {}).get("value"), lines.get(p, {}).get("manager")) for p in want}
for p, (value, manager) in got.items():
    print(f"on_fieldstore: blame {p} = {value!r} by {manager}")
sys.exit(0 if got == want else 1)
PY
kubectl create deployment web --image=nginx --replicas=2
kubectl apply -f - <<'CRD'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
CRD
kubectl wait --for condition=established crd/widgets.example.com --timeout=30s
kubectl get widgets -w --output-watch-events > "$DIR/watch.out" 2>&1 &
watcher=$!
sleep 1
printf 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n' | kubectl apply --server-side -f -
kubectl patch widget w1 --type=merge -p '{"spec":{"size":4}}'
kubectl delete widget w1
for _ in $(seq 100); do grep -q DELETED "$DIR/watch.out" && break; sleep 0.1; done
kill "$watcher" 2>/dev/null || true
cat "$DIR/watch.out"
for e in ADDED MODIFIED DELETED; do grep -q "$e" "$DIR/watch.out" || die "the watch missed $e"; done
ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$eport" endpoint status
echo "on_fieldstore: $(ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$eport" get /registry/ --prefix --keys-only | grep -c .) keys under /registry/"
echo "on_fieldstore: ok"
