package operator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/source"
)

// Options configure a run.
type Options struct {
	// Config reaches the API server; its QPS and Burst are used as given.
	Config *rest.Config
	// PolicyDirs are policy files or directories.
	PolicyDirs []string
	// Workers per policy.
	Workers int
	// MetricsAddr and HealthAddr are listen addresses; "" or "0" serves nothing.
	MetricsAddr, HealthAddr string
	// Registry receives the metrics; nil makes a new one.
	Registry *prometheus.Registry
	// Ready, when set, is closed once every controller's caches have synced.
	Ready chan<- struct{}
}

// Run runs until ctx is done or a server fails.
func Run(ctx context.Context, o Options) error {
	logger := klog.FromContext(ctx)
	clients, err := newClients(o.Config)
	if err != nil {
		return err
	}
	mapper := kinds.NewDiscovery(clients.discovery, clients.dynamic)
	policies, err := loadPolicies(o.PolicyDirs, mapper)
	if err != nil {
		return err
	}
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: clients.kube.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("start events: %w", err)
	}
	defer broadcaster.Shutdown()
	deps := controller.Deps{
		Pool:     controller.NewPool(ctx, clients.dynamic),
		Writer:   apply.NewWriter(clients.dynamic),
		Mapper:   mapper,
		Recorder: broadcaster.NewRecorder(scheme.Scheme, "metacel"),
		Metrics:  controller.NewMetrics(reg),
		Clock:    clock.RealClock{},
	}
	var ready atomic.Bool
	errs := make(chan error, 2)
	serve(ctx, o.MetricsAddr, metricsMux(reg), errs)
	serve(ctx, o.HealthAddr, healthMux(&ready), errs)

	var wg sync.WaitGroup
	synced := make(chan struct{}, len(policies))
	for _, p := range policies {
		ctrl := controller.New(p, deps)
		wg.Go(func() {
			if err := ctrl.Run(ctx, o.Workers, func() { synced <- struct{}{} }); err != nil {
				errs <- err
			}
		})
	}
	logger.Info("Started", "policies", len(policies), "workers", o.Workers)
	go func() {
		for range policies {
			select {
			case <-synced:
			case <-ctx.Done():
				return
			}
		}
		ready.Store(true)
		if o.Ready != nil {
			close(o.Ready)
		}
	}()
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	wg.Wait()
	return err
}

type clients struct {
	dynamic   dynamic.Interface
	discovery discovery.DiscoveryInterface
	kube      kubernetes.Interface
}

func newClients(cfg *rest.Config) (*clients, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return &clients{dynamic: dyn, discovery: kube.Discovery(), kube: kube}, nil
}

// loadPolicies reads and compiles the policies and checks that the cluster serves their resources.
func loadPolicies(dirs []string, m kinds.Mapper) ([]*policy.Compiled, error) {
	files, err := source.Files(dirs)
	if err != nil {
		return nil, err
	}
	policies, err := source.Load(files, m)
	if err != nil {
		return nil, err
	}
	var problems []error
	for _, p := range policies {
		if p.Parent.Guessed {
			problems = append(problems, fmt.Errorf("policy %q: the cluster does not serve parent resource %s (install its CRD)", p.Name(), p.Parent.GVR))
		}
		for gvr, r := range p.ChildResources {
			if r.Guessed {
				problems = append(problems, fmt.Errorf("policy %q: the cluster does not serve child resource %s", p.Name(), gvr))
			}
		}
	}
	return policies, errors.Join(problems...)
}

func metricsMux(reg *prometheus.Registry) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}

func healthMux(ready *atomic.Bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}

// serve serves h on addr until ctx is done; "" or "0" serves nothing.
func serve(ctx context.Context, addr string, h http.Handler, errs chan<- error) {
	if addr == "" || addr == "0" {
		return
	}
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		errs <- fmt.Errorf("listen on %s: %w", addr, err)
		return
	}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs <- err
		}
	}()
}
