package fstest

import (
	"os/exec"
	"syscall"
)

// orphanProof has the kernel kill the server when the test process dies (a `go test -timeout`
// panic, a Ctrl-C), so that no server outlives its tests.
func orphanProof(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
