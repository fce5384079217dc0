# fieldstore developer entry points. `make run` and `make test` install missing system
# prerequisites first (see `setup`); everything else is plain cargo.

CARGO    ?= cargo
DATA     ?= ./fieldstore-data
# Where cargo builds (`CARGO_TARGET_DIR` when set, as cargo itself reads it) and the binary in it.
TARGET   ?= $(or $(CARGO_TARGET_DIR),target)
BIN      := $(TARGET)/release/fieldstore

.PHONY: setup run demo lint test reference on-fieldstore differential crd-check crd-record bench-reference

# Installs a C/C++ toolchain and libclang (needed to build RocksDB's bindings) only when they are
# missing: with apt-get when running as root, otherwise it says what to install and stops.
setup:
	@missing=""; \
	command -v cc  >/dev/null 2>&1 || missing="$$missing build-essential"; \
	command -v c++ >/dev/null 2>&1 || missing="$$missing g++"; \
	command -v protoc >/dev/null 2>&1 || [ -n "$${PROTOC:-}" ] || missing="$$missing protobuf-compiler"; \
	if [ -z "$${LIBCLANG_PATH:-}" ] \
	   && ! ls /usr/lib/llvm-*/lib/libclang*.so* /usr/lib64/libclang*.so* \
	           /usr/lib/*-linux-gnu/libclang*.so* \
	           /Library/Developer/CommandLineTools/usr/lib/libclang.dylib >/dev/null 2>&1 \
	   && ! dpkg -s libclang-dev >/dev/null 2>&1; then \
	  missing="$$missing libclang-dev"; \
	fi; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "setup: installing$$missing"; \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	  else \
	    echo "setup: missing$$missing; install them (e.g. sudo apt-get install -y$$missing) and retry" >&2; \
	    exit 1; \
	  fi; \
	fi; \
	command -v $(CARGO) >/dev/null 2>&1 || { echo "setup: $(CARGO) not found; install Rust from https://rustup.rs" >&2; exit 1; }

# How `run` and `demo` build the `fieldstore` binary: with the workspace's features as
# `cargo test --workspace --release` resolves them, so that neither rebuilds anything after
# `make test` (nor `make test` after them). Cargo resolves features per command: `cargo run -p
# fieldstore-server` leaves out the members' dev-dependencies, which add features to crates the
# server uses too (rustix, regex, zerocopy, getrandom, …), so that half the tree, engine and server
# among it, would be rebuilt. Naming an example (`embed`, which `make test` builds and runs anyway)
# makes cargo resolve with every member's dev-dependencies, as the tests do.
BUILD_BIN = $(CARGO) build --release --workspace --bin fieldstore --example embed

# The main job: the server on the embedded data directory $(DATA) — gRPC on 127.0.0.1:7700, the
# Kubernetes HTTP API (kubectl, client libraries) and the web view (/ui/) on 127.0.0.1:7701 — with
# the built-in Kubernetes kinds (README, "Built-in kinds"). Stop it with Ctrl-C.
# `tests/readme/test_make_run.py` (CI, after `make test`) runs it as the README says.
run: setup
	$(BUILD_BIN)
	$(BIN) --data $(DATA) serve

# A store session without a server: register a CRD, apply, patch, then blame / history / owners.
demo: setup
	$(BUILD_BIN)
	sh examples/cli/demo.sh $(BIN) $(DATA)

# All tests, in the release profile (CI then builds a single profile, the one the binary and the
# benches use); the store suites (`store_*`) a second time on etcd (a single-member etcd each test
# process starts; skipped, with the reason, only when no etcd binary can be installed); the
# embedding examples (built by `cargo test`; `kube_client`, kube-rs in process and the test
# server's start-up figures, needs the `testing` feature, which the workspace's `tests/kube_rs`
# turns on, so it runs as `cargo test` built it), then independent clients against a
# live server: Python grpcio, and the official Kubernetes Python client on the HTTP API (the
# binary is the one `cargo test` built for the server's integration tests; then the Go
# frameworks' tests, tests/go/run.sh: client-go's informers, apply, leader election, discovery;
# controller-runtime's manager, a reconciler and envtest (USE_EXISTING_CLUSTER) on fieldstore;
# Go modules from the module proxy, skipped with the reason without Go >= 1.21; then the HTTP
# bad-input sweep (tests/http_sweep: malformed bodies, bombs, hostile parameters and headers,
# thousands of requests in under a minute); a separate
# `cargo build -p` would resolve features differently and rebuild the engine). Then the web view
# in headless chromium (installed when missing; skipped with the reason when it cannot be), its
# screenshots kept out of the tree (`docs/` holds the committed ones).
test: setup
	sh tests/etcd/ensure_etcd.sh || true
	$(CARGO) test --workspace --release
	if command -v etcd >/dev/null 2>&1; then \
	  FIELDSTORE_TEST_BACKEND=etcd $(CARGO) test --workspace --release --test 'store_*'; \
	else echo "skipped: the store suites on etcd (no etcd binary)"; fi
	$(CARGO) run --release --example embed
	$(TARGET)/release/examples/kube_client
	sh tests/python/ensure_packages.sh
	python3 tests/python/test_grpc_client.py $(BIN)
	python3 tests/python/test_k8s_client.py $(BIN)
	sh tests/go/run.sh $(BIN)
	python3 tests/http_sweep/sweep.py $(BIN)
	sh tests/browser/ensure_browser.sh
	python3 tests/browser/test_web_view.py $(BIN) --screenshots $${TMPDIR:-/tmp}/fieldstore-ui-screenshots

# The guard rails CI runs before the tests: rustfmt (rustfmt.toml), no import circle between
# modules of any crate (tests/layers/import_cycles.py), no Rust file over 800 lines
# (tests/layers/file_sizes.py), clippy with every warning an error, in the release profile
# so that the build scripts (RocksDB's) are the tests' own, and the crate without RocksDB
# (`default-features = false`) still building.
lint: setup
	$(CARGO) fmt --all -- --check
	python3 tests/layers/import_cycles.py
	python3 tests/layers/file_sizes.py
	$(CARGO) clippy --workspace --all-targets --release -- -D warnings
	$(CARGO) check -p fieldstore --no-default-features --release

# The reference fieldstore is measured against (benches/REFERENCE_RESULTS.md, tests/differential):
# kube-apiserver and etcd built from source with Go (reference/go.mod; the first build takes
# minutes, Go caches it), started on loopback on a fresh run directory, asked for /readyz with
# kubectl, stopped. `KEEP=1` leaves it running and prints its run directory (its `kubeconfig`;
# stop it with `reference/run.sh stop`). Not part of `make test`: CI does not build it.
reference:
	bash reference/run.sh build
	dir=$$(bash reference/run.sh start) && \
	kubectl --kubeconfig "$$dir/kubeconfig" get --raw /readyz && echo && \
	if [ -n "$${KEEP:-}" ]; then echo "reference: running, kubeconfig $$dir/kubeconfig"; \
	else bash reference/run.sh stop "$$dir"; fi

# An unmodified kube-apiserver (the reference build; built first when $$REFERENCE_BIN, default
# reference/bin, lacks it) keeping its cluster in fieldstore through `fieldstore serve --etcd-api`
# (TLS, client certificates): kubectl (and kubectl.1.27 when installed) and a client-go informer
# through it, blame and history of what it wrote, watches across its compactions, and a kill -9 of
# fieldstore under its load (server/tests/kube_apiserver_on_etcd_api.rs, output shown). `cargo
# test` runs the same tests when the reference build is there, and skips them otherwise (CI).
on-fieldstore: setup
	[ -x "$${REFERENCE_BIN:-reference/bin}/kube-apiserver" ] || bash reference/run.sh build
	$(CARGO) test --release --workspace --test kube_apiserver_on_etcd_api -- --nocapture --test-threads 1

# The differential harness (issue #33, tests/differential): the same request sequences sent to
# kube-apiserver on etcd (the reference: `make reference` first, or REFERENCE_BIN=DIR with both
# binaries) and to fieldstore, each started fresh; writes tests/differential/REPORT.md
# (agreement per scenario and every difference). A measure, not part of `make test` or CI.
differential: setup
	$(BUILD_BIN)
	python3 tests/differential/run.py --fieldstore $(BIN)

# The CRD conformance suite (issue 35, tests/crd): fieldstore's answers to the CRD cases against
# kube-apiserver's, recorded in tests/crd/expected (no kube-apiserver needed); writes
# tests/crd/REPORT.md and fails on a difference not in tests/crd/known_differences.txt.
# `make crd-record` re-records the expected answers from the reference (after changing cases).
crd-check: setup
	$(BUILD_BIN)
	python3 tests/crd/check.py --fieldstore $(BIN)

crd-record:
	python3 tests/crd/record.py --runs 2

# fieldstore against the reference (issue 33): two rounds of every workload of reference/loadgen
# (client-go creates, Server-Side Apply, LIST, informers; start-to-ready) on kube-apiserver+etcd
# and on `fieldstore serve`, side by side; appends to benches/REFERENCE_RESULTS.md. Builds the
# reference when reference/bin (or $$REFERENCE_BIN) lacks it. Needs Go; takes about 10 minutes.
# Not part of `make test`: CI does not run it.
bench-reference:
	$(BUILD_BIN)
	python3 benches/reference/run.py --rounds 2 --fieldstore $(BIN)

# kube-apiserver on each store (issue 37): the same kube-apiserver (reference/bin, or
# $$REFERENCE_BIN) on etcd (Debian's /usr/bin/etcd 3.4 when present, else reference/bin/etcd) and on
# `fieldstore serve --etcd-api`, fresh data on disk each, two rounds of reference/loadgen's
# creates, SSA applies, LISTs and informers; appends to benches/ETCD_API_RESULTS.md (throughput,
# p99, storage CPU per write, disk bytes). Needs Go; about 5 minutes. Not part of `make test`.
.PHONY: bench-etcd-api
bench-etcd-api:
	$(BUILD_BIN)
	python3 benches/reference/on_stores.py --rounds 2 --fieldstore $(BIN)
