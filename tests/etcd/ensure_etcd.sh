#!/bin/sh
# Makes an `etcd` binary (3.4, Debian's etcd-server) available for the store suites on etcd and the
# etcd cluster test, only when missing: with apt-get as root, otherwise it says what to install.
# Exit status 0 when etcd is there afterwards, 1 (with the reason printed) when it is not.
command -v etcd >/dev/null 2>&1 && command -v etcdctl >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing etcd-server (apt)"
    apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends etcd-server etcd-client >/dev/null
    # The package may start its own service; the tests start their own members.
    command -v systemctl >/dev/null 2>&1 && systemctl disable --now etcd >/dev/null 2>&1
    command -v etcd >/dev/null 2>&1 && exit 0
fi
echo "skipped: no etcd binary and it cannot be installed here (Debian: apt-get install etcd-server)" >&2
exit 1
