#!/bin/sh
# The Go tests against a live fieldstore: `go test -count=1 ./...` in every Go module under
# tests/go/ (each directory with a go.mod: clientgo/ for client-go, others beside it), with
# FIELDSTORE_BIN set to the binary given, which each test starts on a temporary data directory.
# Go modules come from the Go module proxy on the first run (then from the module cache).
#
# Usage: sh tests/go/run.sh PATH_TO_FIELDSTORE_BINARY
#
# Needs Go >= 1.21, which fetches the toolchain a module's go.mod asks for (go 1.26) through the
# module proxy when it is older. Without it the tests are skipped, saying why: Debian 12's
# golang-go is 1.19, so `.ci/run` does not install Go from Debian.
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 PATH_TO_FIELDSTORE_BINARY" >&2
    exit 2
fi
case "$1" in
    /*) bin="$1" ;;
    *) bin="$(pwd)/$1" ;;
esac
if [ ! -x "$bin" ]; then
    echo "tests/go: $bin is not an executable fieldstore binary" >&2
    exit 2
fi

# Go's own installer puts it in /usr/local/go, which a non-login shell may not have on PATH.
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin
if ! command -v go >/dev/null 2>&1; then
    echo "skipped: the Go tests (client-go, controller-runtime): no go command; install Go >= 1.21 (https://go.dev/dl/)"
    exit 0
fi
version="$(go env GOVERSION 2>/dev/null || true)"
minor="$(echo "$version" | sed -n 's/^go1\.\([0-9][0-9]*\).*/\1/p')"
if [ -z "$minor" ] || [ "$minor" -lt 21 ]; then
    echo "skipped: the Go tests (client-go, controller-runtime): ${version:-this go} cannot fetch the go 1.26 toolchain they need; install Go >= 1.21"
    exit 0
fi

root="$(cd "$(dirname "$0")" && pwd)"
failed=""
for mod in $(find "$root" -name go.mod -not -path '*/testdata/*' -not -path '*/vendor/*' | sort); do
    dir="$(dirname "$mod")"
    name="${dir#"$root"/}"
    echo "tests/go/$name: go test -count=1 ./..."
    start=$(date +%s)
    if (cd "$dir" && FIELDSTORE_BIN="$bin" go test -count=1 ./...); then
        echo "tests/go/$name: passed in $(($(date +%s) - start)) s"
    else
        echo "tests/go/$name: FAILED" >&2
        failed="$failed $name"
    fi
done
if [ -n "$failed" ]; then
    echo "tests/go: failed:$failed" >&2
    exit 1
fi
