#!/bin/sh
# Installs the official Kubernetes Python client the HTTP API test needs, only when missing.
set -e
if python3 -c 'import kubernetes' 2>/dev/null; then
    exit 0
fi
echo "setup: installing the kubernetes Python client (pip)"
python3 -m pip install --quiet kubernetes 2>/dev/null \
    || python3 -m pip install --quiet --user kubernetes 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages kubernetes
