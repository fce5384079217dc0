// Package fstest starts `fieldstore serve` for controller tests: a fresh store on an ephemeral
// data directory, gRPC and the Kubernetes HTTP API on ephemeral loopback ports, ready (its
// `/readyz` answers ok) before Start returns, removed again by Stop.
//
//	srv := fstest.ForTest(t, fstest.Options{})   // skips the test when FIELDSTORE_BIN is unset
//	c, _ := client.New(srv.Config, client.Options{})
//
// The binary is Options.Binary, or $FIELDSTORE_BIN. The server prints its addresses as the
// first line on stdout (`fieldstore: serving on ADDR (http; data DIR, kubernetes API URL, …)`);
// Start reads the Kubernetes API's URL from it, so that any number of servers run side by side.
//
// For an envtest suite, write a kubeconfig (WriteKubeconfig, which runs `fieldstore kubeconfig
// --server URL`) and run the suite with KUBECONFIG pointing at it and USE_EXISTING_CLUSTER=true.
package fstest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// BinaryEnv names the environment variable that gives the fieldstore binary.
const BinaryEnv = "FIELDSTORE_BIN"

// Options say how to start the server.
type Options struct {
	// Binary is the fieldstore executable; empty means $FIELDSTORE_BIN.
	Binary string
	// DataDir is the store's data directory; empty means a new temporary directory, removed by
	// Stop. A given directory is kept (start a second server on it to see a store reopened).
	DataDir string
	// Template is the data directory of a prepared store (stopped): the new server starts on a
	// copy of it, in a new temporary directory (a fork per test of a store holding CRDs and
	// fixtures). Ignored when DataDir is given.
	Template string
	// Args are more arguments of `serve` (e.g. "--types", "crds.yaml").
	Args []string
	// ReadyTimeout bounds the wait for readiness; zero means 30 s.
	ReadyTimeout time.Duration
}

// Server is a running `fieldstore serve`.
type Server struct {
	// URL is the Kubernetes HTTP API's base URL (http://127.0.0.1:PORT).
	URL string
	// GRPC is the gRPC listener's address (127.0.0.1:PORT).
	GRPC string
	// DataDir is the store's data directory.
	DataDir string
	// Config reaches the Kubernetes HTTP API.
	Config *rest.Config

	binary   string
	ownsData bool
	cmd      *exec.Cmd
	exited   chan struct{}
	stderr   *tailBuffer
	stopOnce sync.Once
	stopErr  error
}

// Binary is the fieldstore binary from $FIELDSTORE_BIN ("" when unset).
func Binary() string { return os.Getenv(BinaryEnv) }

// ForTest starts a server for t and stops it when t ends. It skips t, saying why, when no
// binary is given (Options.Binary or $FIELDSTORE_BIN), and fails t when the server does not
// start.
func ForTest(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Binary == "" && Binary() == "" {
		t.Skip(SkipMessage)
	}
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("fstest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("fstest: stop: %v", err)
		}
	})
	return s
}

// SkipMessage says why tests that need the server were skipped.
const SkipMessage = "skipped: set FIELDSTORE_BIN to a fieldstore binary's absolute path (e.g. $PWD/target/release/fieldstore) to run the controller tests on `fieldstore serve`"

// The first stdout line's Kubernetes API URL.
var apiURL = regexp.MustCompile(`kubernetes API (https?://[^,)\s]+)`)

// The first stdout line's gRPC address.
var grpcAddr = regexp.MustCompile(`serving on (\S+)`)

// Start starts `fieldstore serve` and waits until its Kubernetes API is ready.
func Start(opts Options) (*Server, error) {
	bin := opts.Binary
	if bin == "" {
		bin = Binary()
	}
	if bin == "" {
		return nil, errors.New(SkipMessage)
	}
	timeout := opts.ReadyTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	s := &Server{binary: bin, DataDir: opts.DataDir, exited: make(chan struct{}), stderr: &tailBuffer{max: 8 << 10}}
	if s.DataDir == "" {
		dir, err := os.MkdirTemp("", "fstest-")
		if err != nil {
			return nil, err
		}
		s.DataDir, s.ownsData = dir, true
		if opts.Template != "" {
			if err := os.CopyFS(dir, os.DirFS(opts.Template)); err != nil {
				s.cleanData()
				return nil, fmt.Errorf("copying the template %s: %w", opts.Template, err)
			}
		}
	}
	args := append([]string{"--data", s.DataDir, "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--ui=false"}, opts.Args...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stderr = s.stderr
	orphanProof(s.cmd)
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		s.cleanData()
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		s.cleanData()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		// Keep draining, so that the server never blocks on a full pipe.
		_, _ = io.Copy(io.Discard, r)
	}()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	select {
	case line := <-lines:
		m := apiURL.FindStringSubmatch(line)
		if m == nil {
			s.kill()
			return nil, fmt.Errorf("fieldstore serve printed no Kubernetes API address: %q; stderr: %s", line, s.stderr)
		}
		s.URL = m[1]
		if g := grpcAddr.FindStringSubmatch(line); g != nil {
			s.GRPC = g[1]
		}
	case <-s.exited:
		s.cleanData()
		return nil, fmt.Errorf("fieldstore serve exited before serving: %s; stderr: %s", s.cmd.ProcessState, s.stderr)
	case <-deadline.C:
		s.kill()
		return nil, fmt.Errorf("fieldstore serve printed no address within %s; stderr: %s", timeout, s.stderr)
	}
	if err := s.waitReady(deadline.C); err != nil {
		s.kill()
		return nil, err
	}
	s.Config = &rest.Config{Host: s.URL, QPS: -1}
	return s, nil
}

// waitReady polls /readyz until it answers 200 "ok".
func (s *Server) waitReady(deadline <-chan time.Time) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	var last string
	for {
		resp, err := hc.Get(s.URL + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == "ok" {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		select {
		case <-s.exited:
			return fmt.Errorf("fieldstore serve exited before ready: %s; stderr: %s", s.cmd.ProcessState, s.stderr)
		case <-deadline:
			return fmt.Errorf("%s/readyz not ready: %s", s.URL, last)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// KubeconfigEnv names the environment variable that points the package's tests at another
// cluster (e.g. the reference kube-apiserver) in place of a fieldstore they start.
const KubeconfigEnv = "FSTEST_KUBECONFIG"

// Existing is a Server for the cluster a kubeconfig reaches, started by someone else: Stop
// leaves it alone. Tests use it to run against kube-apiserver side by side.
func Existing(kubeconfig string) (*Server, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1
	return &Server{URL: cfg.Host, Config: cfg}, nil
}

// Kubeconfig is the server's kubeconfig, as `fieldstore kubeconfig --server URL` prints it.
func (s *Server) Kubeconfig() ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(s.binary, "kubeconfig", "--server", s.URL)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("fieldstore kubeconfig: %w: %s", err, stderr.String())
	}
	return out, nil
}

// WriteKubeconfig writes the server's kubeconfig (Kubeconfig) to path.
func (s *Server) WriteKubeconfig(path string) error {
	text, err := s.Kubeconfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, text, 0o600)
}

// Stop ends the server (SIGTERM, as Ctrl-C; SIGKILL after 10 s) and removes its data directory
// when Start made it. Calling it again returns the first call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		if s.cmd == nil {
			return
		}
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
			s.stopErr = fmt.Errorf("fieldstore serve did not stop within 10 s of SIGTERM; killed")
		}
		if st := s.cmd.ProcessState; s.stopErr == nil && st != nil && !st.Success() {
			s.stopErr = fmt.Errorf("fieldstore serve ended with %s; stderr: %s", st, s.stderr)
		}
		s.cleanData()
	})
	return s.stopErr
}

// Wait blocks until the server exits or ctx ends.
func (s *Server) Wait(ctx context.Context) error {
	select {
	case <-s.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cleanData()
}

func (s *Server) cleanData() {
	if s.ownsData {
		_ = os.RemoveAll(s.DataDir)
	}
}

// tailBuffer keeps the last max bytes written to it (the server's stderr, for error messages).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = b.buf[over:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(string(b.buf))
}
