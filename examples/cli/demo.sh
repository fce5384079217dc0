#!/bin/sh
# The main job until `fieldstore serve` exists (`make run`): a store session in an embedded data
# directory — register a type from a CRD, apply an object, let a second manager take a field,
# then ask who owns and who changed what. Safe to run again on the same directory.
# Usage: demo.sh FIELDSTORE_BINARY DATA_DIR
set -eu
fs="$1"
data="$2"
here="$(dirname "$0")"
run() { echo "\$ fieldstore $*"; "$fs" --data "$data" "$@"; echo; }

run types register -f "$here/deployment-crd.yaml"
run apply -f "$here/web.yaml" --manager alice
run patch deployment web --type merge -p '{"spec":{"replicas":5}}' --manager hpa
run blame deployment web
run history deployment web --path .spec.replicas
run owners deployment --path .spec.replicas
run managers
run revision
