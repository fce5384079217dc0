#!/bin/sh
# Installs the Python gRPC client libraries the independent-client test needs, only when missing.
set -e
if python3 -c 'import grpc, grpc_tools' 2>/dev/null; then
    exit 0
fi
echo "setup: installing grpcio and grpcio-tools (pip)"
python3 -m pip install --quiet grpcio grpcio-tools 2>/dev/null \
    || python3 -m pip install --quiet --user grpcio grpcio-tools 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages grpcio grpcio-tools
