//go:build !linux

package fstest

import "os/exec"

// orphanProof does nothing where the kernel has no parent-death signal.
func orphanProof(*exec.Cmd) {}
