// Package storagetests runs kube-apiserver's own storage conformance tests
// (k8s.io/apiserver/pkg/storage/testing, the exported RunTest* functions) against
// fieldstore's etcd v3 API: each test starts `$FIELDSTORE serve --etcd-api` on a
// fresh data directory, points an etcd clientv3 at it and wraps it in the very
// etcd3 store kube-apiserver uses (k8s.io/apiserver/pkg/storage/etcd3.New).
//
// The setup glue (scheme/codec, testSetup, checkStorageInvariants,
// checkStorageCallsInvariants, compactStorage, increaseRVFunc, testCodec,
// testTransformer, storeWithPrefixTransformer) is adapted from
// k8s.io/apiserver@v0.37.2/pkg/storage/etcd3/store_test.go and watcher_test.go,
// Copyright The Kubernetes Authors, Apache License 2.0. The tests themselves are
// not copied: they are called.
package storagetests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"go.uber.org/zap"
	"google.golang.org/grpc/grpclog"

	"k8s.io/apimachinery/pkg/api/apitesting"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	"k8s.io/apiserver/pkg/storage/value"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/clock"
)

// ---------------------------------------------------------------------------
// fieldstore process

var endpointRE = regexp.MustCompile(`etcd API http://([^ )]+)`)

// startFieldstore starts fieldstore serving the etcd API on a fresh data
// directory and returns the etcd endpoint; it is stopped (SIGTERM) at cleanup.
// With $STORAGETESTS_ETCD set (an etcd binary, e.g. ../bin/etcd) it starts that
// etcd instead, as a baseline for the same tests (extraArgs are then ignored and
// etcd gets upstream's 1s progress-notify interval).
func startFieldstore(t testing.TB, extraArgs ...string) string {
	t.Helper()
	if etcdBin := os.Getenv("STORAGETESTS_ETCD"); etcdBin != "" {
		return startEtcd(t, etcdBin)
	}
	bin := os.Getenv("FIELDSTORE")
	if bin == "" {
		bin = "/tmp/ssbs/fieldstore"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("fieldstore binary %q not available (set $FIELDSTORE): %v", bin, err)
	}
	dir := t.TempDir()
	logf, err := os.Create(dir + "/fieldstore.log")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--data", dir + "/data", "serve", "--listen", "127.0.0.1:0", "--no-http", "--etcd-api", "127.0.0.1:0"}, extraArgs...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(dir + "/fieldstore.log"); err == nil && len(b) > 0 {
				if len(b) > 4000 {
					b = b[len(b)-4000:]
				}
				t.Logf("fieldstore stderr (tail):\n%s", b)
			}
		}
	})
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(logf, r)
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case line := <-lines:
		m := endpointRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("cannot find the etcd endpoint in fieldstore's first line %q", line)
		}
		return m[1]
	case <-time.After(30 * time.Second):
		t.Fatal("fieldstore did not print its address within 30s")
	}
	return ""
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd starts a single-member etcd on a fresh data directory (baseline mode).
func startEtcd(t testing.TB, bin string) string {
	t.Helper()
	dir := t.TempDir()
	client := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	logf, err := os.Create(dir + "/etcd.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--name", "default", "--data-dir", dir+"/data",
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "default="+peer, "--watch-progress-notify-interval", "1s")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
	})
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{client}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Status(ctx, client)
		cancel()
		if err == nil {
			return strings.TrimPrefix(client, "http://")
		}
		if i > 300 {
			t.Fatalf("etcd did not become ready: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ---------------------------------------------------------------------------
// Glue adapted from k8s.io/apiserver@v0.37.2/pkg/storage/etcd3/store_test.go.

var scheme = runtime.NewScheme()
var codecs = serializer.NewCodecFactory(scheme)

const defaultTestPrefix = "test!"

// maxLimit mirrors etcd3.maxLimit (store.go) for checkStorageCallsInvariants.
const maxLimit = 10000

func init() {
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	utilruntime.Must(example.AddToScheme(scheme))
	utilruntime.Must(examplev1.AddToScheme(scheme))

	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, os.Stderr))
}

func newPod() runtime.Object     { return &example.Pod{} }
func newPodList() runtime.Object { return &example.PodList{} }

// fsStore is the exported surface of etcd3's (unexported) *store type we use.
type fsStore interface {
	storage.Interface
	CompactRevision() int64
	EnableResourceSizeEstimation(storage.KeysFunc) error
	Close()
}

// swapTransformer lets tests replace the store's transformer the way upstream
// does by assigning the unexported store.transformer / watcher.transformer.
type swapTransformer struct {
	mu  sync.RWMutex
	cur value.Transformer
}

func (s *swapTransformer) get() value.Transformer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur
}
func (s *swapTransformer) set(t value.Transformer) {
	s.mu.Lock()
	s.cur = t
	s.mu.Unlock()
}
func (s *swapTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	return s.get().TransformFromStorage(ctx, data, dataCtx)
}
func (s *swapTransformer) TransformToStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, error) {
	return s.get().TransformToStorage(ctx, data, dataCtx)
}

type testEnv struct {
	ctx         context.Context
	store       fsStore
	client      *kubernetes.Client
	kv          *storagetesting.KVRecorder
	codec       runtime.Codec
	transformer *swapTransformer
	prefixT     *storagetesting.PrefixTransformer
}

type setupOptions struct {
	serveArgs      []string
	codec          runtime.Codec
	transformer    value.Transformer
	resourcePrefix string
}

type setupOption func(*setupOptions)

func withServeArgs(args ...string) setupOption {
	return func(o *setupOptions) { o.serveArgs = args }
}
func withCodec(c runtime.Codec) setupOption { return func(o *setupOptions) { o.codec = c } }
func withTransformer(tr value.Transformer) setupOption {
	return func(o *setupOptions) { o.transformer = tr }
}

// testSetup mirrors etcd3's testSetup, with testserver.RunEtcd replaced by a
// fieldstore process.
func testSetup(t testing.TB, opts ...setupOption) *testEnv {
	prefixT := storagetesting.NewPrefixTransformer([]byte(defaultTestPrefix), false)
	o := setupOptions{
		codec:          apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion),
		transformer:    prefixT,
		resourcePrefix: "/pods/",
	}
	for _, opt := range opts {
		opt(&o)
	}
	endpoint := startFieldstore(t, o.serveArgs...)
	client, err := kubernetes.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	// As testserver.RunEtcd does: record KV reads and Kubernetes lists.
	kubernetesRecorder := storagetesting.NewKubernetesRecorder(client.Kubernetes)
	kvRecorder := storagetesting.NewKVRecorder(client.KV, kubernetesRecorder)
	client.KV = kvRecorder
	client.Kubernetes = kubernetesRecorder

	swap := &swapTransformer{cur: o.transformer}
	versioner := storage.APIObjectVersioner{}
	compactor := etcd3.NewCompactor(client.Client, 0, clock.RealClock{}, nil)
	t.Cleanup(compactor.Stop)
	leaseCfg := etcd3.NewDefaultLeaseManagerConfig()
	leaseCfg.ReuseDurationSeconds = 1
	s, err := etcd3.New(client, compactor, o.codec, newPod, newPodList, "", o.resourcePrefix,
		schema.GroupResource{Resource: "pods"}, swap, leaseCfg, etcd3.NewDefaultDecoder(o.codec, versioner), versioner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	env := &testEnv{ctx: context.Background(), store: s, client: client, kv: kvRecorder, codec: o.codec, transformer: swap}
	if pt, ok := o.transformer.(*storagetesting.PrefixTransformer); ok {
		env.prefixT = pt
	}
	return env
}

func checkStorageInvariants(etcdClient *clientv3.Client, codec runtime.Codec) storagetesting.KeyValidation {
	return func(ctx context.Context, t *testing.T, key string) {
		getResp, err := etcdClient.KV.Get(ctx, key)
		if err != nil {
			t.Fatalf("etcdClient.KV.Get failed: %v", err)
		}
		if len(getResp.Kvs) == 0 {
			t.Fatalf("expecting non empty result on key: %s", key)
		}
		decoded, err := runtime.Decode(codec, getResp.Kvs[0].Value[len(defaultTestPrefix):])
		if err != nil {
			t.Fatalf("expecting successful decode of object from %v\n%v", err, string(getResp.Kvs[0].Value))
		}
		obj := decoded.(*example.Pod)
		if obj.ResourceVersion != "" {
			t.Errorf("stored object should have empty resource version")
		}
		if obj.SelfLink != "" {
			t.Errorf("stored output should have empty selfLink")
		}
	}
}

func checkStorageCallsInvariants(transformer *storagetesting.PrefixTransformer, recorder *storagetesting.KVRecorder) storagetesting.CallsValidation {
	return func(t *testing.T, pageSize, estimatedProcessedObjects uint64) {
		if reads := transformer.GetReadsAndReset(); reads != estimatedProcessedObjects {
			t.Errorf("unexpected reads: %d, expected: %d", reads, estimatedProcessedObjects)
		}
		estimatedGetCalls := uint64(1)
		if pageSize != 0 {
			currLimit := pageSize
			for sum := uint64(1); sum < estimatedProcessedObjects; {
				currLimit *= 2
				if currLimit > maxLimit {
					currLimit = maxLimit
				}
				sum += currLimit
				estimatedGetCalls++
			}
		}
		if reads := recorder.GetReadsAndReset() + recorder.GetStreamReadsAndReset(); reads != estimatedGetCalls {
			t.Fatalf("unexpected reads: %d, want: %d", reads, estimatedGetCalls)
		}
	}
}

func compactStorage(s fsStore, client *clientv3.Client) storagetesting.Compaction {
	return func(ctx context.Context, t *testing.T, resourceVersion string) {
		versioner := storage.APIObjectVersioner{}
		rv, err := versioner.ParseResourceVersion(resourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		var currentVersion int64
		currentVersion, _, _, err = etcd3.Compact(ctx, client, currentVersion, int64(rv))
		if err != nil {
			_, _, _, err = etcd3.Compact(ctx, client, currentVersion, int64(rv))
		}
		if err != nil {
			t.Fatal(err)
		}
		// Wait for compaction to be observed.
		if utilfeature.DefaultFeatureGate.Enabled(features.ListFromCacheSnapshot) {
			for {
				select {
				case <-ctx.Done():
					t.Fatal(ctx.Err())
				case <-time.After(100 * time.Millisecond):
				}
				if s.CompactRevision() == int64(rv) {
					break
				}
			}
		}
	}
}

// resetFeatureSupportCheckerDuringTest is copied from etcd3/watcher_test.go.
func resetFeatureSupportCheckerDuringTest(t *testing.T) {
	t.Helper()
	orig := etcdfeature.DefaultFeatureSupportChecker
	etcdfeature.DefaultFeatureSupportChecker = etcdfeature.NewDefaultFeatureSupportChecker()
	t.Cleanup(func() { etcdfeature.DefaultFeatureSupportChecker = orig })
}

// logRangeStream reports whether lists were served by etcd 3.7's RangeStream or
// fell back to paginated Range (the store marks RangeStream unsupported on Unimplemented).
func logRangeStream(t *testing.T, rangeStream bool) {
	if rangeStream {
		t.Logf("RangeStream supported by the endpoint after the test: %v (false: Unimplemented, lists fell back to paginated Range)",
			etcdfeature.DefaultFeatureSupportChecker.Supports(storage.RangeStream))
	}
}

// progressNotifyArgs are extra `serve` arguments that make fieldstore send
// progress notifications every second, as upstream configures etcd with
// WatchProgressNotifyInterval = 1s for TestProgressNotify.
func progressNotifyArgs(t *testing.T) []string {
	v := os.Getenv("FIELDSTORE_PROGRESS_NOTIFY_ARGS")
	if v == "" {
		// fieldstore's flag for etcd's --experimental-watch-progress-notify-interval.
		v = "--etcd-progress-notify-seconds 1"
	}
	return strings.Fields(v)
}

func increaseRVFunc(client *clientv3.Client) storagetesting.IncreaseRVFunc {
	return func(ctx context.Context, t *testing.T) int64 {
		resp, err := client.KV.Put(ctx, "increaseRV", "ok")
		if err != nil {
			t.Fatalf("Could not update increaseRV: %v", err)
		}
		return resp.Header.Revision
	}
}

// getKeys mirrors etcd3's store.getKeys (unexported) for EnableResourceSizeEstimation.
func getKeys(client *kubernetes.Client) storage.KeysFunc {
	return func(ctx context.Context) ([]string, error) {
		resp, err := client.KV.Get(ctx, "/pods/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(resp.Kvs))
		for _, kv := range resp.Kvs {
			keys = append(keys, string(kv.Key))
		}
		return keys, nil
	}
}

type storeWithPrefixTransformer struct {
	storage.Interface
	swap *swapTransformer
}

func (s *storeWithPrefixTransformer) UpdatePrefixTransformer(modifier storagetesting.PrefixTransformerModifier) func() {
	orig := s.swap.get()
	transformer := *orig.(*storagetesting.PrefixTransformer)
	s.swap.set(modifier(&transformer))
	return func() { s.swap.set(orig) }
}

func (e *testEnv) withPrefixTransformer() storagetesting.InterfaceWithPrefixTransformer {
	return &storeWithPrefixTransformer{Interface: e.store, swap: e.transformer}
}

// storeWithTransformerOverride mirrors upstream's, swapping our transformer.
type storeWithTransformerOverride struct {
	storage.Interface
	swap *swapTransformer
}

func (s *storeWithTransformerOverride) UpdateTransformer(modifier storagetesting.TransformerModifier) func() {
	orig := s.swap.get()
	s.swap.set(modifier(orig))
	return func() { s.swap.set(orig) }
}

type failingTransformer struct{ err error }

func (f failingTransformer) TransformFromStorage(context.Context, []byte, value.Context) ([]byte, bool, error) {
	return nil, false, f.err
}
func (f failingTransformer) TransformToStorage(context.Context, []byte, value.Context) ([]byte, error) {
	return nil, f.err
}

// newCorruptErr builds what upstream writes as
// &corruptObjectError{err: fmt.Errorf("bits flipped"), errType: untransformable}
// (an unexported type) through the exported decorator that creates it.
func newCorruptErr() error {
	_, _, err := etcd3.WithCorruptObjErrorHandlingTransformer(failingTransformer{err: fmt.Errorf("bits flipped")}).
		TransformFromStorage(context.Background(), nil, nil)
	return err
}

type testTransformer struct {
	value.Transformer
	fail atomic.Bool
}

func (tt *testTransformer) setFailing(c bool) { tt.fail.Store(c) }
func (tt *testTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	if tt.fail.Load() {
		return nil, false, errors.New("synthetic error")
	}
	return tt.Transformer.TransformFromStorage(ctx, data, dataCtx)
}

type testCodec struct {
	runtime.Codec
	fail atomic.Bool
}

func (tc *testCodec) setFailing(c bool) { tc.fail.Store(c) }
func (tc *testCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if tc.fail.Load() {
		return nil, nil, errors.New("synthetic error")
	}
	return tc.Codec.Decode(data, defaults, into)
}

// ---------------------------------------------------------------------------
// store_tests.go

func TestCreate(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestCreate(e.ctx, t, e.store, checkStorageInvariants(e.client.Client, e.codec))
}

func TestCreateWithTTL(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestCreateWithTTL(e.ctx, t, e.store)
}

func TestCreateWithKeyExist(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestCreateWithKeyExist(e.ctx, t, e.store)
}

func TestGet(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestGet(e.ctx, t, e.store)
}

func TestUnconditionalDelete(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestUnconditionalDelete(e.ctx, t, e.store)
}

func TestConditionalDelete(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestConditionalDelete(e.ctx, t, e.store)
}

func TestDeleteWithSuggestion(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestDeleteWithSuggestion(e.ctx, t, e.store)
}

func TestDeleteWithSuggestionAndConflict(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestDeleteWithSuggestionAndConflict(e.ctx, t, e.store)
}

func TestDeleteWithSuggestionOfDeletedObject(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestDeleteWithSuggestionOfDeletedObject(e.ctx, t, e.store)
}

func TestValidateDeletionWithSuggestion(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestValidateDeletionWithSuggestion(e.ctx, t, e.store)
}

func TestValidateDeletionWithOnlySuggestionValid(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestValidateDeletionWithOnlySuggestionValid(e.ctx, t, e.store)
}

func TestDeleteWithConflict(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestDeleteWithConflict(e.ctx, t, e.store)
}

func TestDeleteWithConflictAndMissingExpectedTransformOrDecodeError(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	codec := &testCodec{Codec: apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion)}
	e := testSetup(t, withCodec(codec))
	storagetesting.RunTestDeleteWithConflictAndMissingExpectedTransformOrDecodeError(e.ctx, t, e.store, codec.setFailing)
}

func TestDeleteWithConflictAndExpectedTransformError(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	transformer := &testTransformer{Transformer: storagetesting.NewPrefixTransformer([]byte(defaultTestPrefix), false)}
	e := testSetup(t, withTransformer(transformer))
	storagetesting.RunTestDeleteExpectedTransformOrDecodeError(e.ctx, t, e.store, transformer.setFailing)
}

func TestDeleteWithConflictAndExpectedDecodeError(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	codec := &testCodec{Codec: apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion)}
	e := testSetup(t, withCodec(codec))
	storagetesting.RunTestDeleteExpectedTransformOrDecodeError(e.ctx, t, e.store, codec.setFailing)
}

func TestDeleteWithSuggestionAndMissingExpectedTransformOrDecodeFailure(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	e := testSetup(t)
	storagetesting.RunTestDeleteWithSuggestionAndMissingExpectedTransformOrDecodeError(e.ctx, t, e.store)
}

func TestGetListWithErrorAggregation(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	e := testSetup(t)
	store := etcd3.NewStoreWithUnsafeCorruptObjectDeletion(e.store, schema.GroupResource{Resource: "pods"})
	storagetesting.RunTestGetListWithErrorAggregation(e.ctx, t, &storeWithTransformerOverride{Interface: store, swap: e.transformer}, newCorruptErr())
}

func TestGetListWithoutErrorAggregation(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, false)
	e := testSetup(t)
	storagetesting.RunTestGetListWithoutErrorAggregation(e.ctx, t, &storeWithTransformerOverride{Interface: e.store, swap: e.transformer}, newCorruptErr())
}

func TestPreconditionalDeleteWithSuggestion(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestPreconditionalDeleteWithSuggestion(e.ctx, t, e.store)
}

func TestPreconditionalDeleteWithSuggestionPass(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestPreconditionalDeleteWithOnlySuggestionPass(e.ctx, t, e.store)
}

func TestListPaging(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestListPaging(e.ctx, t, e.store)
}

func TestGetListNonRecursive(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestGetListNonRecursive(e.ctx, t, increaseRVFunc(e.client.Client), e.store)
}

func TestGetListRecursivePrefix(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestGetListRecursivePrefix(e.ctx, t, e.store)
}

func TestKeySchema(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestKeySchema(e.ctx, t, e.store)
}

func TestGuaranteedUpdate(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestGuaranteedUpdate(e.ctx, t, e.withPrefixTransformer(), checkStorageInvariants(e.client.Client, e.codec))
}

func TestGuaranteedUpdateWithTTL(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestGuaranteedUpdateWithTTL(e.ctx, t, e.store)
}

func TestGuaranteedUpdateChecksStoredData(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestGuaranteedUpdateChecksStoredData(e.ctx, t, e.withPrefixTransformer())
}

func TestGuaranteedUpdateWithConflict(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestGuaranteedUpdateWithConflict(e.ctx, t, e.store)
}

func TestGuaranteedUpdateWithSuggestionAndConflict(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestGuaranteedUpdateWithSuggestionAndConflict(e.ctx, t, e.store)
}

func TestTransformationFailure(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestTransformationFailure(e.ctx, t, e.withPrefixTransformer())
}

func TestList(t *testing.T) {
	for _, rangeStream := range []bool{false, true} {
		t.Run(fmt.Sprintf("rangeStream=%v", rangeStream), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.EtcdRangeStream, rangeStream)
			resetFeatureSupportCheckerDuringTest(t)
			e := testSetup(t)
			storagetesting.RunTestList(e.ctx, t, e.store, compactStorage(e.store, e.client.Client), false, e.client.Kubernetes.(*storagetesting.KubernetesRecorder))
			// As upstream's TestList (the recorder counts attempts, so a fallback still counts).
			streamReads := e.kv.GetStreamReadsAndReset()
			if rangeStream && streamReads == 0 {
				t.Error("expected lists to be served by RangeStream")
			}
			if !rangeStream && streamReads > 0 {
				t.Errorf("expected no RangeStream requests with the feature disabled, got %d", streamReads)
			}
			logRangeStream(t, rangeStream)
		})
	}
}

func TestConsistentList(t *testing.T) {
	for _, rangeStream := range []bool{false, true} {
		t.Run(fmt.Sprintf("rangeStream=%v", rangeStream), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.EtcdRangeStream, rangeStream)
			resetFeatureSupportCheckerDuringTest(t)
			e := testSetup(t)
			storagetesting.RunTestConsistentList(e.ctx, t, e.store, increaseRVFunc(e.client.Client), false, true, false)
			logRangeStream(t, rangeStream)
		})
	}
}

func TestCompactRevision(t *testing.T) {
	// As upstream: the store must observe external compactions (watch on the compact key).
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ListFromCacheSnapshot, true)
	e := testSetup(t)
	storagetesting.RunTestCompactRevision(e.ctx, t, e.store, increaseRVFunc(e.client.Client), compactStorage(e.store, e.client.Client))
}

func TestListContinuation(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestListContinuation(e.ctx, t, e.store, checkStorageCallsInvariants(e.prefixT, e.kv))
}

func TestListPaginationRareObject(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ListFromCacheSnapshot, false)
	e := testSetup(t)
	storagetesting.RunTestListPaginationRareObject(e.ctx, t, e.store, checkStorageCallsInvariants(e.prefixT, e.kv))
}

func TestListContinuationWithFilter(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestListContinuationWithFilter(e.ctx, t, e.store, checkStorageCallsInvariants(e.prefixT, e.kv))
}

func TestNamespaceScopedList(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestNamespaceScopedList(e.ctx, t, e.store)
}

func TestListInconsistentContinuation(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestListInconsistentContinuation(e.ctx, t, e.store, compactStorage(e.store, e.client.Client))
}

func TestListResourceVersionMatch(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestListResourceVersionMatch(e.ctx, t, e.withPrefixTransformer())
}

func TestStats(t *testing.T) {
	for _, sizeBasedListCostEstimate := range []bool{true, false} {
		t.Run(fmt.Sprintf("SizeBasedListCostEstimate=%v", sizeBasedListCostEstimate), func(t *testing.T) {
			e := testSetup(t)
			if sizeBasedListCostEstimate {
				if err := e.store.EnableResourceSizeEstimation(getKeys(e.client)); err != nil {
					t.Fatal(err)
				}
			}
			storagetesting.RunTestStats(e.ctx, t, e.store, e.codec, e.transformer, sizeBasedListCostEstimate)
		})
	}
}

// ---------------------------------------------------------------------------
// watcher_tests.go (as etcd3/watcher_test.go's TestWatch subtests)

func TestWatch(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestWatch(e.ctx, t, e.store)
}

func TestClusterScopedWatch(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestClusterScopedWatch(e.ctx, t, e.store)
}

func TestNamespaceScopedWatch(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestNamespaceScopedWatch(e.ctx, t, e.store)
}

func TestDeleteTriggerWatch(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestDeleteTriggerWatch(e.ctx, t, e.store)
}

func TestWatchFromZero(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestWatchFromZero(e.ctx, t, e.store, compactStorage(e.store, e.client.Client))
}

func TestWatchFromNonZero(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestWatchFromNonZero(e.ctx, t, e.store)
}

func TestDelayedWatchDelivery(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestDelayedWatchDelivery(e.ctx, t, e.store)
}

func TestWatchError(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestWatchError(e.ctx, t, e.withPrefixTransformer())
}

func TestWatchWithUnsafeDelete(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	e := testSetup(t)
	storagetesting.RunTestWatchWithUnsafeDelete(e.ctx, t, &storeWithTransformerOverride{Interface: e.store, swap: e.transformer}, newCorruptErr())
}

func TestWatchContextCancel(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestWatchContextCancel(e.ctx, t, e.store)
}

func TestWatcherTimeout(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestWatcherTimeout(e.ctx, t, e.store)
}

func TestWatchDeleteEventObjectHaveLatestRV(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestWatchDeleteEventObjectHaveLatestRV(e.ctx, t, e.store)
}

func TestWatchInitializationSignal(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunTestWatchInitializationSignal(e.ctx, t, e.store)
}

// Upstream runs this against an etcd with WatchProgressNotifyInterval = 1s.
func TestProgressNotify(t *testing.T) {
	e := testSetup(t, withServeArgs(progressNotifyArgs(t)...))
	storagetesting.RunOptionalTestProgressNotify(e.ctx, t, e.store, increaseRVFunc(e.client.Client))
}

// Upstream: expectedWatchBookmarks=false (the etcd3 store, without the watch cache,
// sends none) and WatchProgressNotifyInterval = 1s (optional here: FIELDSTORE_PROGRESS_NOTIFY_ARGS).
func TestWatchDispatchBookmarkEvents(t *testing.T) {
	e := testSetup(t, withServeArgs(strings.Fields(os.Getenv("FIELDSTORE_PROGRESS_NOTIFY_ARGS"))...))
	storagetesting.RunTestWatchDispatchBookmarkEvents(e.ctx, t, e.store, false)
}

func TestSendInitialEventsBackwardCompatibility(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunSendInitialEventsBackwardCompatibility(e.ctx, t, e.store)
}

func TestWatchSemantics(t *testing.T) {
	for _, rangeStream := range []bool{false, true} {
		t.Run(fmt.Sprintf("RangeStream=%v", rangeStream), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.EtcdRangeStream, rangeStream)
			t.Run("WatchSemantics", func(t *testing.T) {
				e := testSetup(t)
				storagetesting.RunWatchSemantics(e.ctx, t, e.store)
			})
			t.Run("WatchSemanticsWithConcurrentDecode", func(t *testing.T) {
				featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ConcurrentWatchObjectDecode, true)
				e := testSetup(t)
				storagetesting.RunWatchSemantics(e.ctx, t, e.store)
			})
			t.Run("WatchSemanticInitialEventsExtended", func(t *testing.T) {
				e := testSetup(t)
				storagetesting.RunWatchSemanticInitialEventsExtended(e.ctx, t, e.store)
			})
			t.Run("WatchListMatchSingle", func(t *testing.T) {
				e := testSetup(t)
				storagetesting.RunWatchListMatchSingle(e.ctx, t, e.store)
			})
		})
	}
}

func TestWatchErrorIsBlockingFurtherEvents(t *testing.T) {
	e := testSetup(t)
	storagetesting.RunWatchErrorIsBlockingFurtherEvents(e.ctx, t, e.withPrefixTransformer())
}
