#!/usr/bin/env bash
# Drives a live `fieldstore serve` with one kubectl binary through the verbs users run. Each step
# asserts on kubectl's output and exit code; the first failing step ends the script with exit 1.
#
#   KUBECONFIG=... kubectl.sh KUBECTL
#
# Steps that need the OpenAPI documents (explain, diff, client-side validation) run when the
# server publishes /openapi/v3 and are reported PENDING otherwise; `kubectl fieldstore` runs when
# the plugin is on PATH.
set -u
K="$1"
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"; jobs -p | xargs -r kill 2>/dev/null' EXIT

fail() { echo "FAIL ($K): $*"; exit 1; }
# run WANT_EXIT CMD...: runs CMD, output (stdout and stderr) in $OUT, fails on another exit code.
run() {
  local want=$1; shift
  OUT="$("$@" 2>&1)"; local rc=$?
  echo "\$ $*"; printf '%s\n' "$OUT" | sed 's/^/    /'
  [ "$rc" = "$want" ] || fail "exit code $rc, want $want: $*"
}
has() { grep -qE -- "$1" <<<"$OUT" || fail "the output lacks /$1/"; }
lacks() { ! grep -qE -- "$1" <<<"$OUT" || fail "the output has /$1/"; }
# wait_for FILE REGEX: until FILE matches (a bound against hangs, not a timing assertion).
wait_for() { for _ in $(seq 1 200); do grep -qE -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; cat "$1"; fail "$1 never matched /$2/"; }

SERVER="$("$K" config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
if curl -sf "$SERVER/openapi/v3" >/dev/null 2>&1; then OPENAPI=1; V=""; else OPENAPI=0; V="--validate=false"; fi
PENDING=()

# Discovery.
run 0 "$K" api-resources
has '^configmaps +cm +v1 +true +ConfigMap'
has '^deployments +deploy +apps/v1 +true +Deployment'
# The groups kube-apiserver serves by default.
has '^events +ev +events.k8s.io/v1 +true +Event'
has '^storageclasses +sc +storage.k8s.io/v1 +false +StorageClass'
has '^validatingwebhookconfigurations +admissionregistration.k8s.io/v1 +false +ValidatingWebhookConfiguration'
has '^priorityclasses +pc +scheduling.k8s.io/v1 +false +PriorityClass'
has '^runtimeclasses +node.k8s.io/v1 +false +RuntimeClass'
has '^certificatesigningrequests +csr +certificates.k8s.io/v1 +false +CertificateSigningRequest'
has '^flowschemas +flowcontrol.apiserver.k8s.io/v1 +false +FlowSchema'
lacks 'error|couldn.t get|E[0-9]{4} '
# Aggregated discovery, when this kubectl asks for apidiscovery.k8s.io/v2 (1.30 and newer).
run 0 "$K" api-resources --cached=false -v=8
if grep -q 'Accept: application/json;g=apidiscovery.k8s.io;v=v2;' <<<"$OUT"; then
  has 'Content-Type: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList'
  lacks 'GET [^ ]*/apis/apps/v1 '
fi
# The self-reviews of `kubectl auth` (no authorization file: everything is allowed).
run 0 "$K" auth can-i create configmaps; has '^yes$'
run 0 "$K" auth can-i --list; has '^\*\.\* +\[\] +\[\] +\[\*\]'
run 0 "$K" version
has 'Server Version: (v1\.33|version\.Info\{Major:"1", Minor:"33")'

# Client-side apply, then a second apply changing a field, then one changing nothing.
cat > "$WORK/cm.yaml" <<'Y'
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  labels: {app: web}
data:
  a: "1"
Y
run 0 "$K" apply $V -f "$WORK/cm.yaml"; has '^configmap/web created'
sed -i 's/"1"/"2"/' "$WORK/cm.yaml"
run 0 "$K" apply $V -f "$WORK/cm.yaml"; has '^configmap/web configured'
run 0 "$K" apply $V -f "$WORK/cm.yaml"; has '^configmap/web unchanged'
run 0 "$K" get cm web -o 'jsonpath={.data.a}'; has '^2$'

# Server-side apply: a conflict, then forced.
cat > "$WORK/ssa.yaml" <<'Y'
apiVersion: v1
kind: ConfigMap
metadata: {name: web}
data: {a: "3"}
Y
run 0 "$K" apply $V --server-side -f "$WORK/cm.yaml"; has '^configmap/web serverside-applied'
run 1 "$K" apply $V --server-side --field-manager=other -f "$WORK/ssa.yaml"; has 'conflict'
run 0 "$K" apply $V --server-side --field-manager=other --force-conflicts -f "$WORK/ssa.yaml"; has 'serverside-applied'
run 0 "$K" get cm web -o 'jsonpath={.data.a}'; has '^3$'

# create, replace, the three patch types and a no-op patch.
for i in 0 1 2 3 4; do run 0 "$K" create configmap "c$i" --from-literal=k="$i"; has "^configmap/c$i created"; done
run 0 "$K" get cm c0 -o yaml; has '^  name: c0$'
sed -e 's/k: "0"/k: replaced/' <<<"$OUT" > "$WORK/c0.yaml"
run 0 "$K" replace $V -f "$WORK/c0.yaml"; has '^configmap/c0 replaced'
run 0 "$K" patch cm c1 -p '{"data":{"s":"1"}}'; has '^configmap/c1 patched'
run 0 "$K" patch cm c1 --type=merge -p '{"data":{"m":"1"}}'; has '^configmap/c1 patched'
run 0 "$K" patch cm c1 --type=json -p '[{"op":"add","path":"/data/j","value":"1"}]'; has '^configmap/c1 patched'
run 0 "$K" patch cm c1 --type=merge -p '{"data":{"m":"1"}}'; has 'patched \(no change\)'
run 0 "$K" get cm c1 -o json; has '"j": "1"'; has '"m": "1"'; has '"s": "1"'; has '"kind": "ConfigMap"'

# get: table, wide, paged, selectors.
run 0 "$K" get cm; has '^NAME '; has '^c0 '; has '^web '
run 0 "$K" get cm -o wide; has '^NAME '; has '^c4 '
run 0 "$K" get cm --chunk-size=2
[ "$(grep -cE '^c[0-4] ' <<<"$OUT")" = 5 ] || fail "--chunk-size=2 should print c0..c4 once each"
run 0 "$K" get cm -l app=web; has '^web '; lacks '^c0 '
run 0 "$K" get cm --field-selector metadata.name=c2; has '^c2 '; lacks '^c1 '
run 0 "$K" get cm -A; has '^default +web '
run 0 "$K" get ns; has '^default '; has '^kube-system '

# get -w sees a change arrive.
"$K" get cm -w > "$WORK/watch.out" 2>&1 &
WATCH=$!
wait_for "$WORK/watch.out" '^web '
run 0 "$K" create configmap arriving --from-literal=x=1
wait_for "$WORK/watch.out" '^arriving '
kill "$WATCH" 2>/dev/null; wait "$WATCH" 2>/dev/null
echo "\$ $K get cm -w  (saw 'arriving' arrive)"

# delete, and wait --for=delete on an object a finalizer holds until it is removed.
run 0 "$K" delete cm c4; has 'configmap "c4" deleted'
run 1 "$K" get cm c4; has 'NotFound|not found'
run 0 "$K" patch cm c3 --type=merge -p '{"metadata":{"finalizers":["example.com/hold"]}}'
run 0 "$K" delete cm c3 --wait=false; has 'configmap "c3" deleted'
( sleep 1; "$K" patch cm c3 --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 ) &
run 0 "$K" wait --for=delete cm/c3 --timeout=30s; has 'condition met|deleted'

# describe a Pod and a ConfigMap (events are listed by involvedObject).
cat > "$WORK/pod.yaml" <<'Y'
apiVersion: v1
kind: Pod
metadata: {name: p1, labels: {app: p}}
spec:
  containers:
  - {name: main, image: nginx:1.27, ports: [{containerPort: 80}]}
Y
run 0 "$K" apply $V -f "$WORK/pod.yaml"; has '^pod/p1 created'
run 0 "$K" describe pod p1; has '^Name: +p1'; has 'Image: +nginx:1\.27'; lacks 'error'
run 0 "$K" describe cm web; has '^Name: +web'; has '^Events: +<none>'; lacks 'error'
run 0 "$K" get pods -o wide; has '^p1 '

# A Deployment scaled through its scale subresource.
run 0 "$K" create deployment dep --image=nginx:1.27; has '^deployment.apps/dep created'
run 0 "$K" scale deployment dep --replicas=3; has '^deployment.apps/dep scaled'
run 0 "$K" get deploy dep -o 'jsonpath={.spec.replicas}'; has '^3$'

# An events.k8s.io Event (what controllers' event recorders write) and a StorageClass.
cat > "$WORK/ev.yaml" <<'Y'
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: e1}
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: example.com/ctl
reportingInstance: ctl-0
action: Reconcile
reason: Synced
type: Normal
regarding: {kind: Pod, name: web-0, namespace: default}
note: hello
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/disk
Y
run 0 "$K" create $V -f "$WORK/ev.yaml"; has '^event.events.k8s.io/e1 created'; has '^storageclass.storage.k8s.io/fast created'
run 0 "$K" get events.events.k8s.io e1 -o 'jsonpath={.note}/{.regarding.name}'; has '^hello/web-0$'
run 0 "$K" get sc; has '^fast '

# A CRD, then its resources.
run 0 "$K" apply $V -f "$HERE/crd.yaml"; has 'customresourcedefinition.apiextensions.k8s.io/widgets.example.com created'
run 0 "$K" api-resources --api-group=example.com; has '^widgets +wd +example.com/v1 +true +Widget'
cat > "$WORK/w.yaml" <<'Y'
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: 3}
Y
run 0 "$K" apply $V -f "$WORK/w.yaml"; has '^widget.example.com/w1 created'
run 0 "$K" get wd; has '^w1 '
run 0 "$K" patch wd w1 --type=merge -p '{"spec":{"size":4}}'; has 'patched'
run 1 "$K" patch wd w1 -p '{"spec":{"size":5}}'; has 'not supported|UnsupportedMediaType|unknown format'
run 0 "$K" get wd w1 -o 'jsonpath={.spec.size}'; has '^4$'
run 1 "$K" apply $V --server-side -f "$WORK/w.yaml"; has 'conflict with "kubectl-patch"'
run 0 "$K" apply $V --server-side --force-conflicts -f "$WORK/w.yaml"; has 'serverside-applied'

# What needs the OpenAPI documents.
if [ "$OPENAPI" = 1 ]; then
  run 0 "$K" explain configmap.data; has 'data'
  sed -i 's/"3"/"9"/' "$WORK/ssa.yaml"
  run 1 "$K" diff -f "$WORK/ssa.yaml"; has '^\+  a: "9"'
else
  PENDING+=("explain" "diff" "client-side validation (--validate=false used)")
fi

# The fieldstore plugin.
if command -v kubectl-fieldstore >/dev/null 2>&1; then
  run 0 "$K" fieldstore blame cm web; has 'other'
else
  PENDING+=("kubectl fieldstore blame (kubectl-fieldstore not on PATH)")
fi

for p in "${PENDING[@]}"; do echo "PENDING ($K): $p"; done
echo "OK ($K)"
