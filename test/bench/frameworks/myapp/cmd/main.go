// Command myapp is the MyApp operator with controller-runtime, as Kubebuilder scaffolds
// cmd/main.go: the manager with its defaults (its cache over every namespace, one reconcile at a
// time, the client with no client-side rate limit, metrics and health probes), the reconciler
// set up with it. Beside the scaffold's flags, the benchmark's two: --sync-period (the cache's
// resync, the bench's -resync; controller-runtime's default is 10 hours) and --child-labels (the
// benchmark's policy change, see internal/relabel).
package main

import (
	"flag"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"metacel.dev/metacel/test/bench/frameworks/internal/relabel"
	demov1 "metacel.dev/metacel/test/bench/frameworks/myapp/api/v1"
	"metacel.dev/metacel/test/bench/frameworks/myapp/internal/controller"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(demov1.AddToScheme(scheme))
	// +kubebuilder:scaffold:scheme
}

func main() {
	var metricsAddr, probeAddr, childLabels string
	var enableLeaderElection, secureMetrics bool
	var syncPeriod time.Duration
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to. Use :8443 for HTTPS or :8080 for HTTP, or leave as 0 to disable the metrics service.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false, "Enable leader election for controller manager.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true, "If set, the metrics endpoint is served securely via HTTPS. Use --metrics-secure=false to use HTTP instead.")
	flag.DurationVar(&syncPeriod, "sync-period", 10*time.Hour, "The cache's resync period (the benchmark's -resync).")
	flag.StringVar(&childLabels, "child-labels", "", "A file of labels every Pod carries beside its own, read again on SIGHUP (the benchmark's policy change).")
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	relabeler, err := relabel.New(childLabels)
	if err != nil {
		setupLog.Error(err, "unable to read the child labels")
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr, SecureServing: secureMetrics},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         enableLeaderElection,
		LeaderElectionID:       "myapp.demo.rtfm.co.ua",
		Cache:                  cache.Options{SyncPeriod: &syncPeriod},
	})
	if err != nil {
		setupLog.Error(err, "unable to start manager")
		os.Exit(1)
	}
	if err := (&controller.MyAppReconciler{
		Client:    mgr.GetClient(),
		Scheme:    mgr.GetScheme(),
		Relabeler: relabeler,
	}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "unable to create controller", "controller", "MyApp")
		os.Exit(1)
	}
	// +kubebuilder:scaffold:builder

	if err := mgr.Add(relabeler); err != nil {
		setupLog.Error(err, "unable to set up the child labels")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		setupLog.Error(err, "unable to set up ready check")
		os.Exit(1)
	}

	setupLog.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}
