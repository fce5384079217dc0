#!/bin/sh
# Installs what the browser test of the web view needs, only when missing: Debian's chromium
# (apt-get, as root) and the Python package websocket-client (pip). Never fails: when something
# cannot be installed, the test itself skips with the reason.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing chromium (apt-get)"
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; } >/dev/null 2>&1 \
            || echo "setup: chromium could not be installed; the browser test will skip"
    else
        echo "setup: chromium is missing and this is not root with apt-get; the browser test will skip"
    fi
fi
if ! python3 -c 'import websocket' 2>/dev/null; then
    echo "setup: installing websocket-client (pip)"
    python3 -m pip install --quiet websocket-client 2>/dev/null \
        || python3 -m pip install --quiet --user websocket-client 2>/dev/null \
        || python3 -m pip install --quiet --break-system-packages websocket-client 2>/dev/null \
        || echo "setup: websocket-client could not be installed; the browser test will skip"
fi
exit 0
