package clientgo

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
)

// TestRetryOnConflict has concurrent writers increment one counter with read-modify-write
// updates under client-go's retry.RetryOnConflict: a stale resourceVersion is a 409 Conflict,
// retried, so no increment is lost — and a RetryWatcher from the first version saw every value.
func TestRetryOnConflict(t *testing.T) {
	srv := startServer(t)
	cfg, _ := srv.config(t, protobuf)
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	cms := client.CoreV1().ConfigMaps("default")
	created, err := cms.Create(ctx, configMap("default", "counter", map[string]string{"n": "0"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// client-go's RetryWatcher: a watch that re-opens itself from the last version it saw.
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, created.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = "metadata.name=counter"
			return cms.Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Stop()

	const writers, each = 4, 25
	var conflicts atomic.Int64
	backoff := wait.Backoff{Steps: 1000, Duration: time.Millisecond, Factor: 1.1, Jitter: 1, Cap: 20 * time.Millisecond}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for range each {
				err := retry.RetryOnConflict(backoff, func() error {
					cm, err := cms.Get(ctx, "counter", metav1.GetOptions{})
					if err != nil {
						return err
					}
					n, _ := strconv.Atoi(cm.Data["n"])
					cm.Data["n"] = strconv.Itoa(n + 1)
					_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
					if apierrors.IsConflict(err) {
						conflicts.Add(1)
					}
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	final, err := cms.Get(ctx, "counter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if final.Data["n"] != fmt.Sprint(writers*each) {
		t.Fatalf("the counter is %s after %d increments (%d conflicts retried)", final.Data["n"], writers*each, conflicts.Load())
	}
	t.Logf("%d conflicts retried", conflicts.Load())

	// Every value once, in order, up to the last.
	next := 1
	for next <= writers*each {
		select {
		case ev, ok := <-rw.ResultChan():
			if !ok {
				t.Fatalf("the RetryWatcher ended at %d", next)
			}
			if ev.Type != watch.Modified {
				t.Fatalf("unexpected %s event: %v", ev.Type, ev.Object)
			}
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				t.Fatalf("a %T in the watch", ev.Object)
			}
			if cm.Data["n"] != strconv.Itoa(next) {
				t.Fatalf("the RetryWatcher saw n=%s, want %d", cm.Data["n"], next)
			}
			next++
		case <-time.After(waitLimit):
			t.Fatalf("the RetryWatcher stopped at %d", next)
		}
	}
}
