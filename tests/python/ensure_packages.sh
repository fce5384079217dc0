#!/bin/sh
# Installs the Python packages the independent-client tests need, only when missing: grpcio and
# grpcio-tools (test_grpc_client.py) and the official Kubernetes client (test_k8s_client.py).
set -e
if python3 -c 'import grpc, grpc_tools, kubernetes' 2>/dev/null; then
    exit 0
fi
packages="grpcio grpcio-tools kubernetes"
echo "setup: installing $packages (pip)"
python3 -m pip install --quiet $packages 2>/dev/null \
    || python3 -m pip install --quiet --user $packages 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages $packages
