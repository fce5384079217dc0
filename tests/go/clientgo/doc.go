// Package clientgo holds tests that run client-go v0.37 — shared informers (typed, dynamic and
// metadata-only, with watch-list streaming on and off), listers, Server-Side Apply through typed
// apply configurations, status updates, leader election on a Lease, discovery and a RESTMapper —
// unchanged against a `fieldstore serve` each test starts on a temporary data directory and
// ephemeral loopback ports. Every test asserts on what client-go itself observed.
//
// The tests build nothing: FIELDSTORE_BIN names the fieldstore binary (tests/go/run.sh sets it);
// without it every test skips, saying so.
package clientgo
