package clientgo

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// The candidate process: the test binary run again with these set (see TestMain).
const (
	candidateEnv   = "CLIENTGO_TEST_CANDIDATE"  // its identity
	kubeconfigEnv  = "CLIENTGO_TEST_KUBECONFIG" // the kubeconfig file of the server
	leaseName      = "controller-lock"
	leaseNamespace = "default"
)

// elector is a leader elector on the test Lease with short durations. Cancelling its context
// stops it without releasing the Lease unless release is set.
func elector(cfg *rest.Config, id string, release bool, cb leaderelection.LeaderCallbacks) (*leaderelection.LeaderElector, error) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: leaseName, Namespace: leaseNamespace},
		Client:     kubernetes.NewForConfigOrDie(cfg).CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	return leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   2 * time.Second,
		RenewDeadline:   1 * time.Second,
		RetryPeriod:     250 * time.Millisecond,
		ReleaseOnCancel: release,
		Name:            id,
		Callbacks:       cb,
	})
}

// runCandidate is the candidate process: it campaigns and prints "leading" once it leads, then
// renews until it is killed.
func runCandidate(id string) int {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(kubeconfigEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	le, err := elector(cfg, id, false, leaderelection.LeaderCallbacks{
		OnStartedLeading: func(context.Context) { fmt.Println("leading") },
		OnStoppedLeading: func() { fmt.Println("stopped") },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	le.Run(context.Background())
	return 1
}

// TestLeaderElection runs two candidates for a coordination.k8s.io/v1 Lease with client-go's
// leader election: "first", a process of its own, leads and renews while "second" (in this
// process) waits; first is killed (SIGKILL, nothing released) and second takes over once the
// lease has expired; second, cancelled with ReleaseOnCancel, gives the Lease up.
func TestLeaderElection(t *testing.T) {
	srv := startServer(t)
	cfg, _ := srv.config(t, "")
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, srv.kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}

	first := exec.Command(os.Args[0], "-test.run=^$")
	first.Env = append(os.Environ(), candidateEnv+"=first", kubeconfigEnv+"="+kubeconfig)
	first.Stderr = os.Stderr
	out, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Process.Kill(); _ = first.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "leading" {
		t.Fatalf("the first candidate did not lead: %q %v", lines.Text(), lines.Err())
	}
	lease, err := client.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if holder(lease) != "first" || *lease.Spec.LeaseDurationSeconds != 2 {
		t.Fatalf("the Lease after the first candidate won: %+v", lease.Spec)
	}

	// The second candidate, in this process.
	var mu sync.Mutex
	var leaders []string
	leading := make(chan struct{})
	stopped := make(chan struct{})
	second, err := elector(cfg, "second", true, leaderelection.LeaderCallbacks{
		OnStartedLeading: func(context.Context) { close(leading) },
		OnStoppedLeading: func() { close(stopped) },
		OnNewLeader: func(id string) {
			mu.Lock()
			defer mu.Unlock()
			leaders = append(leaders, id)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	secondCtx, cancelSecond := context.WithCancel(ctx)
	defer cancelSecond()
	go second.Run(secondCtx)
	seenLeaders := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), leaders...)
	}
	eventually(t, "the second candidate sees the first lead", func() bool {
		l := seenLeaders()
		return len(l) > 0 && l[0] == "first"
	})

	// While the first renews, the second does not lead: wait for two renewals it observed.
	renewed := lease.Spec.RenewTime.Time
	for range 2 {
		eventually(t, "the first candidate renewing", func() bool {
			l, err := client.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseName, metav1.GetOptions{})
			if err != nil || holder(l) != "first" {
				return false
			}
			if l.Spec.RenewTime.After(renewed) {
				renewed = l.Spec.RenewTime.Time
				return true
			}
			return false
		})
	}
	select {
	case <-leading:
		t.Fatal("the second candidate leads while the first renews")
	default:
	}

	// Kill the first: it releases nothing, the second takes over after the lease duration.
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	select {
	case <-leading:
	case <-time.After(waitLimit):
		t.Fatal("the second candidate never took over")
	}
	if !second.IsLeader() || second.GetLeader() != "second" {
		t.Fatalf("the second candidate's view: leader %q", second.GetLeader())
	}
	// client-go reports a new leader from a goroutine of its own (OnNewLeader is not called
	// before OnStartedLeading returns), so the report may follow the takeover by a moment.
	eventually(t, "the second candidate reporting itself the new leader", func() bool {
		l := seenLeaders()
		return l[len(l)-1] == "second"
	})
	lease, err = client.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if holder(lease) != "second" || lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions != 1 {
		t.Fatalf("the Lease after the takeover: holder %q, transitions %v", holder(lease), lease.Spec.LeaseTransitions)
	}

	// Cancelled with ReleaseOnCancel, the second gives the Lease up.
	cancelSecond()
	select {
	case <-stopped:
	case <-time.After(waitLimit):
		t.Fatal("the second candidate never stopped leading")
	}
	eventually(t, "the Lease released", func() bool {
		l, err := client.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseName, metav1.GetOptions{})
		return err == nil && holder(l) == ""
	})
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return strings.TrimSpace(*l.Spec.HolderIdentity)
}
