#!/usr/bin/env bash
# Runs every Go test module under tests/go/ (each directory with a go.mod) against a fieldstore
# binary: `go test -count=1 ./...` in each, with FIELDSTORE_BIN set to the binary's absolute path.
# Go modules come from the module proxy on first use.
#   bash tests/go/run.sh BIN
set -euo pipefail
BIN=${1:?usage: run.sh FIELDSTORE_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
# Go's own installer puts it in /usr/local/go, which a non-login shell may not have on PATH.
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null 2>&1 || { echo "skipped: the Go test modules under tests/go (no go toolchain: install Go 1.26 from go.dev)"; exit 0; }
export FIELDSTORE_BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
status=0
for mod in $(find "$HERE" -name go.mod -not -path '*/testdata/*' | sort); do
    dir=$(dirname "$mod")
    echo "== go test ${dir#$HERE/}"
    (cd "$dir" && go test -count=1 ./...) || status=1
done
exit $status
