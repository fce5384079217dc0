#!/bin/sh
# Installs kubectl for tests/readme/test_make_run.py when it is missing and this is root with
# apt-get: Debian's `kubernetes-client` package (kubectl 1.20 in bookworm; `kubectl` itself is no
# Debian package). Never fails: without kubectl, the test says that it skipped its kubectl part.
if command -v kubectl >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing kubectl (apt-get install kubernetes-client)"
    log=$(mktemp)
    if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends kubernetes-client; } >"$log" 2>&1; then
        tail -n 3 "$log"
        echo "setup: kubectl could not be installed; the README run test will skip its kubectl part"
    fi
    rm -f "$log"
else
    echo "setup: kubectl is missing and this is not root with apt-get; the README run test will skip its kubectl part"
fi
exit 0
