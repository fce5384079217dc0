#!/usr/bin/env bash
# The reference: kube-apiserver (bin/kube-apiserver, built from k8s.io/kubernetes at go.mod's
# version) on a fresh etcd (bin/etcd, etcd's server at the version kube-apiserver's go.mod
# requires), on loopback, with the least it needs: a token file with one admin in
# system:masters, AlwaysAllow authorization, generated service-account keys, the default admission
# plugins, a serving certificate from the run's own CA. (`--endpoint-reconciler-type none`: the
# `kubernetes` Service's endpoints may not be a loopback address, and nothing here needs them.)
#
#   run.sh build              build both binaries into bin/ (Go caches the build across runs)
#   run.sh start [DIR]        fresh run directory (default: a new /tmp/fieldstore-reference.XXXXXX),
#                             start etcd and kube-apiserver, wait for /readyz; prints the run dir
#   run.sh stop [DIR]         stop both by PID (SIGTERM, then SIGKILL after 10 s) and delete DIR
#   run.sh certs DIR          only the CA, the serving certificate and the token (the load
#                             generator gives fieldstore the same certificate)
#
# The run directory holds: ca.crt, serving.crt/key, token, kubeconfig (https, the token, ca.crt),
# url, etcd.url, etcd.pid, apiserver.pid, ready_ms (start of etcd to kube-apiserver's /readyz
# answering ok), etcd/ (data), etcd.log, apiserver.log. `REFERENCE_STATE` (default
# /tmp/fieldstore-reference.current) names the last started run dir, for `stop` without DIR.
# `REFERENCE_ETCD` is the etcd binary (default bin/etcd; e.g. /usr/bin/etcd for Debian's 3.4);
# with `REFERENCE_ETCD_SERVERS=URL` no etcd is started and kube-apiserver uses that store (e.g.
# `fieldstore serve --etcd-api`); etcd.pid is then absent.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${REFERENCE_BIN:-$HERE/bin}
ETCD=${REFERENCE_ETCD:-$BIN/etcd}
ETCD_SERVERS=${REFERENCE_ETCD_SERVERS:-}
STATE=${REFERENCE_STATE:-/tmp/fieldstore-reference.current}

die() { echo "reference: $*" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
now_ms() { date +%s%3N; }

build() {
    cd "$HERE"
    mkdir -p "$BIN"
    local t0; t0=$(now_ms)
    go build -o "$BIN/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
    go build -o "$BIN/etcd" ./cmd/etcd
    echo "reference: built bin/kube-apiserver and bin/etcd in $(( ($(now_ms) - t0) / 1000 )) s" >&2
}

certs() {
    local dir=$1
    mkdir -p "$dir"
    (
        cd "$dir"
        openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
        openssl req -x509 -new -key ca.key -subj "/CN=fieldstore-reference-ca" -days 30 -out ca.crt 2>/dev/null
        openssl ecparam -name prime256v1 -genkey -noout -out serving.key.ec 2>/dev/null
        # PKCS#8, which both kube-apiserver and fieldstore's rustls read.
        openssl pkcs8 -topk8 -nocrypt -in serving.key.ec -out serving.key
        rm serving.key.ec
        openssl req -new -key serving.key -subj "/CN=127.0.0.1" -out serving.csr 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' > serving.ext
        openssl x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
            -extfile serving.ext -out serving.crt 2>/dev/null
        rm serving.csr serving.ext
        openssl genrsa -out sa.key 2048 2>/dev/null
        openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
        python3 -c 'import secrets; print(secrets.token_hex(16))' > token
        echo "$(cat token),admin,admin,system:masters" > tokens.csv
    )
}

kubeconfig() {
    local dir=$1 url=$2
    cat > "$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: reference
  cluster: {server: "$url", certificate-authority: "$dir/ca.crt"}
users:
- name: admin
  user: {token: "$(cat "$dir/token")"}
contexts:
- name: reference
  context: {cluster: reference, user: admin}
current-context: reference
EOF
}

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

stop_pid() {
    local pid=$1 i
    alive "$pid" || return 0
    kill "$pid" 2>/dev/null || true
    for i in $(seq 100); do alive "$pid" || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
}

start() {
    [ -x "$BIN/kube-apiserver" ] && { [ -n "$ETCD_SERVERS" ] || [ -x "$ETCD" ]; } || die "no binaries in $BIN; run '$0 build' (or make reference)"
    local dir=${1:-}
    if [ -z "$dir" ]; then dir=$(mktemp -d /tmp/fieldstore-reference.XXXXXX); else mkdir -p "$dir"; fi
    dir=$(cd "$dir" && pwd)
    [ -f "$dir/token" ] || certs "$dir"
    local cport pport sport
    cport=$(free_port); pport=$(free_port); sport=$(free_port)
    local t0; t0=$(now_ms)
    if [ -z "$ETCD_SERVERS" ]; then
        "$ETCD" --name reference --data-dir "$dir/etcd" \
            --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
            --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
            --initial-cluster "reference=http://127.0.0.1:$pport" \
            > "$dir/etcd.log" 2>&1 &
        echo $! > "$dir/etcd.pid"
        echo "http://127.0.0.1:$cport" > "$dir/etcd.url"
    else
        echo "$ETCD_SERVERS" > "$dir/etcd.url"
    fi
    "$BIN/kube-apiserver" \
        --etcd-servers "$(cat "$dir/etcd.url")" \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$sport" \
        --tls-cert-file "$dir/serving.crt" --tls-private-key-file "$dir/serving.key" \
        --token-auth-file "$dir/tokens.csv" --authorization-mode AlwaysAllow \
        --service-account-key-file "$dir/sa.pub" --service-account-signing-key-file "$dir/sa.key" \
        --service-account-issuer https://kubernetes.default.svc \
        --service-cluster-ip-range 10.0.0.0/24 \
        --endpoint-reconciler-type none \
        > "$dir/apiserver.log" 2>&1 &
    echo $! > "$dir/apiserver.pid"
    local url="https://127.0.0.1:$sport"
    echo "$url" > "$dir/url"
    kubeconfig "$dir" "$url"
    echo "$dir" > "$STATE"
    local i
    for i in $(seq 1200); do
        if curl -sf --cacert "$dir/ca.crt" -H "Authorization: Bearer $(cat "$dir/token")" "$url/readyz" 2>/dev/null | grep -q '^ok'; then
            echo $(( $(now_ms) - t0 )) > "$dir/ready_ms"
            echo "reference: kube-apiserver ready at $url in $(cat "$dir/ready_ms") ms (run dir $dir)" >&2
            echo "$dir"
            return 0
        fi
        alive "$(cat "$dir/apiserver.pid")" || { tail -20 "$dir/apiserver.log" >&2; stop_pid "$(cat "$dir/etcd.pid" 2>/dev/null || true)"; die "kube-apiserver exited"; }
        [ -n "$ETCD_SERVERS" ] || alive "$(cat "$dir/etcd.pid")" || { tail -20 "$dir/etcd.log" >&2; stop_pid "$(cat "$dir/apiserver.pid")"; die "etcd exited"; }
        sleep 0.05
    done
    stop_pid "$(cat "$dir/apiserver.pid")"; stop_pid "$(cat "$dir/etcd.pid" 2>/dev/null || true)"
    die "kube-apiserver not ready after 60 s (see $dir/apiserver.log)"
}

stop() {
    local dir=${1:-}
    if [ -z "$dir" ]; then [ -f "$STATE" ] || die "no run recorded in $STATE"; dir=$(cat "$STATE"); fi
    [ -d "$dir" ] || return 0
    stop_pid "$(cat "$dir/apiserver.pid" 2>/dev/null || true)"
    stop_pid "$(cat "$dir/etcd.pid" 2>/dev/null || true)"
    case "$dir" in /tmp/fieldstore-reference.*) rm -rf "$dir" ;; esac
    [ -f "$STATE" ] && [ "$(cat "$STATE")" = "$dir" ] && rm -f "$STATE"
    echo "reference: stopped ($dir)" >&2
}

case "${1:-}" in
    build) build ;;
    start) start "${2:-}" ;;
    stop) stop "${2:-}" ;;
    certs) [ -n "${2:-}" ] || die "certs DIR"; certs "$2" ;;
    *) die "usage: $0 build | start [DIR] | stop [DIR] | certs DIR" ;;
esac
